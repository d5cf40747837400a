/* Stress of the board: P processes (fork and exec) x Q XQueues on host queues, all on one
 * board (XSCHED_BOARD=DIR), for S seconds, with priorities changing all the time:
 * - each queue has a thread that submits host functions of 10-400 us in batches of 1-8
 *   and waits for them (XQueueWaitAll, or XQueueWait on the last), at Lv1 or Lv2;
 * - each process has a thread that gives one of its queues a new priority (0..20) every
 *   2-30 ms, and now and then opens a scope on one for a while;
 * - the parent kills one process with SIGKILL every few seconds and starts another in its
 *   place (its slot is found dead; the board is shared by the others all along).
 * Checks: in every process that was not killed, every command submitted ran exactly once
 * and every wait returned (nothing lost); every process ends within a deadline after the
 * run (no hang: one that does not is killed and the test fails).
 * The environment sets the size: XS_STRESS_PROCS (16), XS_STRESS_QUEUES (8),
 * XS_STRESS_S (60), XS_STRESS_KILL_S (10, 0 = no kills). meson runs it as the test
 * board_stress (suite board-stress, not in the unit suite: about S seconds plus the
 * teardown); the unit suite runs board_stress_short (4 processes x 4 queues, 6 s). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "board_util.h"

enum { MAXQ = 16, MAXP = 64 };

struct lane {
	XQueueHandle xq;
	HwQueueHandle hq;
	atomic_long submitted, ran;
	unsigned seed;
};

static struct lane g_lanes[MAXQ];
static int g_nq;
static atomic_bool g_stop;
static atomic_long g_changes;

static int env_int(const char *name, int def)
{
	const char *s = getenv(name);
	return s && *s ? atoi(s) : def;
}

static XResult run_fn(void *data)
{
	struct lane *l = data;
	atomic_fetch_add(&l->ran, 1);
	t_sleep_us(10 + rand_r(&l->seed) % 390);
	return kXSchedSuccess;
}

static void *lane_main(void *arg)
{
	struct lane *l = arg;
	while (!atomic_load(&g_stop)) {
		int n = 1 + rand_r(&l->seed) % 8;
		HwCommandHandle last = 0;
		for (int i = 0; i < n; i++) {
			HwCommandHandle c;
			CHECK_OK(HwCommandCreateHostFunc(&c, run_fn, l));
			CHECK_OK(XQueueSubmit(l->xq, c));
			atomic_fetch_add(&l->submitted, 1);
			if (last)
				CHECK_OK(HwCommandDestroy(last));
			last = c;
		}
		if (rand_r(&l->seed) % 2)
			CHECK_OK(XQueueWait(l->xq, last));
		else
			CHECK_OK(XQueueWaitAll(l->xq));
		CHECK_OK(HwCommandDestroy(last));
	}
	return NULL;
}

/* New priorities all the time, and scopes now and then. */
static void *chaos_main(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	int scoped = -1;
	while (!atomic_load(&g_stop)) {
		t_sleep_us(2000 + rand_r(&seed) % 28000);
		int q = rand_r(&seed) % g_nq;
		CHECK_OK(XHintPriority(g_lanes[q].xq, (Priority)(rand_r(&seed) % 21)));
		atomic_fetch_add(&g_changes, 1);
		if (scoped >= 0) {
			CHECK_OK(XQueueEndScope(g_lanes[scoped].xq));
			scoped = -1;
		} else if (rand_r(&seed) % 8 == 0) {
			scoped = q;
			CHECK_OK(XQueueBeginScope(g_lanes[q].xq));
		}
	}
	if (scoped >= 0)
		CHECK_OK(XQueueEndScope(g_lanes[scoped].xq));
	return NULL;
}

/* A child: Q queues until told to stop (the shared file's first int), then the checks. */
static int run_child(const char *shared, int id)
{
	atomic_int *stop = bu_map(shared, sizeof(atomic_int));
	g_nq = env_int("XS_STRESS_QUEUES", 8);
	CHECK(g_nq >= 1 && g_nq <= MAXQ);
	pthread_t th[MAXQ], chaos;
	for (int i = 0; i < g_nq; i++) {
		struct lane *l = &g_lanes[i];
		l->seed = (unsigned)(id * 1000 + i + 1);
		CHECK_OK(HostQueueCreate(&l->hq));
		CHECK_OK(XQueueCreate(&l->xq, l->hq, 1 + (int)(l->seed % 2), kQueueCreateFlagNone));
		CHECK(pthread_create(&th[i], NULL, lane_main, l) == 0);
	}
	CHECK(pthread_create(&chaos, NULL, chaos_main, (void *)(uintptr_t)(id + 77)) == 0);
	while (!atomic_load(stop))
		t_sleep_us(10000);
	atomic_store(&g_stop, true);
	CHECK(pthread_join(chaos, NULL) == 0);
	long sub = 0, ran = 0;
	for (int i = 0; i < g_nq; i++) {
		CHECK(pthread_join(th[i], NULL) == 0);
		CHECK_OK(XQueueWaitAll(g_lanes[i].xq));
		sub += atomic_load(&g_lanes[i].submitted);
		ran += atomic_load(&g_lanes[i].ran);
		if (atomic_load(&g_lanes[i].ran) != atomic_load(&g_lanes[i].submitted))
			fprintf(stderr, "process %d queue %d: %ld submitted, %ld ran\n", id, i,
				atomic_load(&g_lanes[i].submitted), atomic_load(&g_lanes[i].ran));
		CHECK(atomic_load(&g_lanes[i].ran) == atomic_load(&g_lanes[i].submitted));
		CHECK_OK(XQueueDestroy(g_lanes[i].xq));
		CHECK_OK(HwQueueDestroy(g_lanes[i].hq));
	}
	printf("process %d: %ld commands submitted, %ld ran (expected all), %ld priority "
	       "changes\n",
	       id, sub, ran, atomic_load(&g_changes));
	return 0;
}

static pid_t start_child(const char *shared, int id)
{
	char ids[16];
	snprintf(ids, sizeof(ids), "%d", id);
	const char *argv[] = {"child", shared, ids, NULL};
	return bu_spawn(argv);
}

int main(int argc, char **argv)
{
	if (argc > 2)
		return run_child(argv[1], atoi(argv[2]));
	int np = env_int("XS_STRESS_PROCS", 16), secs = env_int("XS_STRESS_S", 60);
	int kill_s = env_int("XS_STRESS_KILL_S", 10);
	CHECK(np >= 1 && np <= MAXP && secs >= 1);
	char dir[4096], shared[4200];
	bu_tmpdir(dir, sizeof(dir));
	setenv("XSCHED_BOARD", dir, 1);
	snprintf(shared, sizeof(shared), "%s/stop", dir);
	atomic_int *stop = bu_map(shared, sizeof(atomic_int));
	pid_t pids[MAXP];
	int next_id = 0, killed = 0;
	for (int i = 0; i < np; i++)
		pids[i] = start_child(shared, next_id++);
	int64_t end = t_now_us() + (int64_t)secs * 1000000, next_kill = t_now_us();
	next_kill += (int64_t)kill_s * 1000000;
	while (t_now_us() < end) {
		t_sleep_us(100000);
		if (kill_s > 0 && t_now_us() >= next_kill) {
			int v = killed % np;
			kill(pids[v], SIGKILL);
			CHECK(bu_wait(pids[v], 10000) == -2);
			pids[v] = start_child(shared, next_id++);
			killed++;
			next_kill += (int64_t)kill_s * 1000000;
		}
	}
	atomic_store(stop, 1);
	int bad = 0;
	for (int i = 0; i < np; i++) {
		int st = bu_wait(pids[i], 180000); /* a loaded host under a sanitizer is slow */
		if (st != 0) {
			fprintf(stderr, "process %d: exit status %d (-1: hung, -2: a signal)\n", i,
				st);
			bad++;
		}
	}
	printf("%d processes x %d queues for %d s, %d killed and replaced: %d failed or hung "
	       "(expected 0)\n",
	       np, env_int("XS_STRESS_QUEUES", 8), secs, killed, bad);
	bu_rmdir(dir);
	return bad ? 1 : 0;
}
