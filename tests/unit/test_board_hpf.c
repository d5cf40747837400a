/* HPF across processes on one device, through the board (XSCHED_BOARD=DIR, host queues:
 * every host-backend process shares the board "host"). Two processes, made with fork and
 * exec: a low one (priority 0) keeps 1 ms host functions coming; a high one (priority 10)
 * makes its XQueue, waits until the low one sees itself limited by it (XQueueGetBoard),
 * then runs 60 commands of 2 ms back to back.
 * - While the high process has work, the low one starts only what it had committed when
 *   the high one's work arrived: at most 3 commands (the commitment budget of 1 ms of
 *   1 ms commands and the lead; at Lv2 the suspension also takes back what had not
 *   started); without the board it would start about 100 in that time.
 * - The low process starts commands again once the high one is idle.
 * - Equal priorities in two processes do not hold each other.
 * Each case at Lv1 and Lv2 (the low queue's level). The low process records the start
 * time of each command (CLOCK_MONOTONIC, which both processes share). */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "board_util.h"

enum { MAXL = 4096, HIGH_N = 60 };

struct shared {
	atomic_int low_ready; /* the low queue runs and is limited (or equal: sees the other) */
	atomic_int stop;
	atomic_int n_low;
	_Atomic int64_t t_sub, t_end; /* the high process's first submit, last completion (us) */
	_Atomic int64_t low_start[MAXL];
};

static struct shared *g_sh;

static XResult low_fn(void *data)
{
	(void)data;
	int i = atomic_fetch_add(&g_sh->n_low, 1);
	if (i < MAXL)
		atomic_store(&g_sh->low_start[i], t_now_us());
	t_sleep_us(1000);
	return kXSchedSuccess;
}

static bool sees_top(const XBoardInfo *b)
{
	return b->joined && b->others_top != XBOARD_NONE && b->limited;
}

static bool sees_other(const XBoardInfo *b)
{
	return b->joined && b->others_top != XBOARD_NONE;
}

/* The low process: priority @prio at @level, 1 ms commands four at a time until told. */
static int run_low(int level, int prio)
{
	HwQueueHandle hq;
	XQueueHandle xq;
	xq = bu_queue_open(&hq, level, prio);
	CHECK(bu_board_until(xq, prio ? sees_other : sees_top, 20000));
	atomic_store(&g_sh->low_ready, 1);
	while (!atomic_load(&g_sh->stop)) {
		for (int i = 0; i < 4; i++)
			t_submit_fn(xq, low_fn, NULL);
		CHECK_OK(XQueueWaitAll(xq));
	}
	bu_queue_close(xq, hq);
	return 0;
}

/* The high process: priority @prio; 60 commands of 2 ms once the low one is ready. */
static int run_high(int prio)
{
	HwQueueHandle hq;
	XQueueHandle xq;
	xq = bu_queue_open(&hq, kPreemptLevelBlock, prio);
	CHECK(bu_wait_flag(&g_sh->low_ready, 20000));
	t_sleep_us(50000); /* the low process runs meanwhile */
	static int64_t two_ms = 2000;
	atomic_store(&g_sh->t_sub, t_now_us());
	for (int i = 0; i < HIGH_N; i++)
		t_submit_fn(xq, t_sleep_fn, &two_ms);
	CHECK_OK(XQueueWaitAll(xq));
	atomic_store(&g_sh->t_end, t_now_us());
	bu_queue_close(xq, hq);
	return 0;
}

/* Low commands started in [from, to) (us). */
static int starts(int64_t from, int64_t to)
{
	int n = atomic_load(&g_sh->n_low), k = 0;
	for (int i = 0; i < n && i < MAXL; i++) {
		int64_t t = atomic_load(&g_sh->low_start[i]);
		k += t >= from && t < to;
	}
	return k;
}

/* One case: a low process at @level and priority @low_prio beside a high one of priority
 * @high_prio. */
static void run_case(const char *dir, int level, int low_prio, int high_prio)
{
	char shp[4200], lv[8], lp[8], hp[8];
	snprintf(shp, sizeof(shp), "%s/shared", dir);
	unlink(shp);
	g_sh = bu_map(shp, sizeof(struct shared));
	snprintf(lv, sizeof(lv), "%d", level);
	snprintf(lp, sizeof(lp), "%d", low_prio);
	snprintf(hp, sizeof(hp), "%d", high_prio);
	const char *low_argv[] = {"low", shp, lv, lp, NULL};
	const char *high_argv[] = {"high", shp, hp, NULL};
	pid_t low = bu_spawn(low_argv);
	pid_t high = bu_spawn(high_argv);
	CHECK(bu_wait(high, 60000) == 0);
	int64_t t_sub = atomic_load(&g_sh->t_sub), t_end = atomic_load(&g_sh->t_end);
	int64_t after_end = t_end;
	for (int i = 0; i < 2000 && !starts(t_end, INT64_MAX); i++)
		t_sleep_us(1000);
	int n_after = starts(t_end, INT64_MAX);
	if (n_after) /* the first start after the high process's last completion */
		for (int i = 0; i < atomic_load(&g_sh->n_low) && i < MAXL; i++) {
			int64_t t = atomic_load(&g_sh->low_start[i]);
			if (t >= t_end && (after_end == t_end || t < after_end))
				after_end = t;
		}
	atomic_store(&g_sh->stop, 1);
	CHECK(bu_wait(low, 60000) == 0);
	int before = starts(t_sub - 50000, t_sub), during = starts(t_sub, t_end);
	printf("Lv%d, low prio %d, high prio %d: high busy %.1f ms; low starts: %d in the 50 ms "
	       "before, %d while the high one had work (expected %s), first after it %+.1f ms\n",
	       level, low_prio, high_prio, (t_end - t_sub) / 1000.0, before, during,
	       low_prio < high_prio ? "at most 3" : "more than 20",
	       n_after ? (after_end - t_end) / 1000.0 : -1.0);
	CHECK(before > 0);
	if (low_prio < high_prio)
		CHECK(during <= 3);
	else
		CHECK(during > 20);
	CHECK(n_after > 0);
	munmap(g_sh, sizeof(struct shared));
}

int main(int argc, char **argv)
{
	if (argc > 2) { /* a child: its role, the shared file, the role's arguments */
		g_sh = bu_map(argv[1], sizeof(struct shared));
		if (!strcmp(argv[0], "low"))
			return run_low(atoi(argv[2]), atoi(argv[3]));
		return run_high(atoi(argv[2]));
	}
	char dir[4096];
	bu_tmpdir(dir, sizeof(dir));
	setenv("XSCHED_BOARD", dir, 1);
	run_case(dir, kPreemptLevelBlock, 0, 10);
	run_case(dir, kPreemptLevelDeactivate, 0, 10);
	run_case(dir, kPreemptLevelDeactivate, 5, 5);
	bu_rmdir(dir);
	return 0;
}
