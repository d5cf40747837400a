/* board_reaction: how fast low-priority processes stop committing when a high-priority
 * process on the same device gets work (the board, doc/architecture.md "Several
 * processes on one GPU: the board"), on the host backend.
 *
 * Processes (fork and exec, each a fresh library; XSCHED_BOARD names a temporary
 * directory, so every process shares the board of host queues):
 * - one high process: one XQueue of priority 10 at Lv1, made before the run (so the lows
 *   are limited by it); R activations, each after a random idle spell of 5-15 ms: the
 *   time of its first submit (t0), a burst of 4 host functions of 300 us, the last of
 *   which records when it ends (t1: the high process's work is done), and a wait;
 * - N low processes, each with Q XQueues of priority 0 at level L, one thread per queue
 *   submitting host functions of U us back to back (8 at a time); each records the
 *   library's timeline (XSchedTraceStart), whose "commit" events are the moments the
 *   library let a command reach the device (Lv1: its enqueue; Lv2: the counter store).
 * Reaction of one activation: the last commit of any low process in [t0, t1] minus t0
 * (0 when none); both sides' timestamps are CLOCK_MONOTONIC, which the processes share.
 * Prints p50, p99 and max over the activations, and the target (p99 <= 100 us) MET or
 * MISSED. Commits counted are first commits: at Lv2 a command committed again after a
 * resume is not a new event (core/trace.h), and resumes come after t1.
 *
 * Usage: board_reaction [--lows N (3)] [--queues Q (4)] [--level 1|2 (1)]
 *        [--activations R (200)] [--low-us U (100)] [--quick]
 */
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "xsched.h"

enum { MAXR = 4096, MAXQ = 16 };

struct shared {
	atomic_int lows_ready, stop, high_done;
	int nact;
	int64_t t0[MAXR], t1[MAXR];
	int64_t ts[MAXR]; /* the first submit returned (the high process published its work) */
};

static struct shared *g_sh;
static int g_lows = 3, g_queues = 4, g_level = 1, g_acts = 200, g_low_us = 100;

#define OK(expr)                                                                                   \
	do {                                                                                       \
		XResult r_ = (expr);                                                               \
		if (r_ != kXSchedSuccess) {                                                        \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,              \
				XResultName(r_));                                                  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
	while (nanosleep(&ts, &ts))
		;
}

static XResult sleep_fn(void *data)
{
	sleep_ns((int64_t)(intptr_t)data * 1000);
	return kXSchedSuccess;
}

/* The high burst's last command: its work ends here (t1). */
static XResult last_fn(void *data)
{
	sleep_ns(300000);
	*(int64_t *)data = now_ns();
	return kXSchedSuccess;
}

static void submit(XQueueHandle xq, int64_t us)
{
	HwCommandHandle c;
	OK(HwCommandCreateHostFunc(&c, sleep_fn, (void *)(intptr_t)us));
	OK(XQueueSubmit(xq, c));
	OK(HwCommandDestroy(c));
}

/* ---- the low processes ---- */

static void *low_lane(void *arg)
{
	XQueueHandle xq = (XQueueHandle)(uintptr_t)arg;
	while (!atomic_load(&g_sh->stop)) {
		for (int i = 0; i < 8; i++)
			submit(xq, g_low_us);
		OK(XQueueWaitAll(xq));
	}
	return NULL;
}

static int run_low(const char *trace)
{
	OK(XSchedTraceStart(trace));
	HwQueueHandle hq[MAXQ];
	XQueueHandle xq[MAXQ];
	pthread_t th[MAXQ];
	for (int i = 0; i < g_queues; i++) {
		OK(HostQueueCreate(&hq[i]));
		OK(XQueueCreate(&xq[i], hq[i], g_level, kQueueCreateFlagNone));
	}
	for (int tries = 0; tries < 20000; tries++) { /* limited by the high process's queue */
		XBoardInfo b;
		OK(XQueueGetBoard(xq[0], &b));
		if (b.limited)
			break;
		if (tries == 19999) {
			fprintf(stderr, "board_reaction: the low queues never became limited (is "
					"the board joined? XSCHED_LOG=info says)\n");
			return 1;
		}
		sleep_ns(1000000);
	}
	for (int i = 0; i < g_queues; i++)
		pthread_create(&th[i], NULL, low_lane, (void *)(uintptr_t)xq[i]);
	atomic_fetch_add(&g_sh->lows_ready, 1);
	for (int i = 0; i < g_queues; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < g_queues; i++) {
		OK(XQueueDestroy(xq[i]));
		OK(HwQueueDestroy(hq[i]));
	}
	return XSchedTraceStop() == kXSchedSuccess ? 0 : 1;
}

/* ---- the high process ---- */

static int run_high(void)
{
	HwQueueHandle hq;
	XQueueHandle xq;
	OK(HostQueueCreate(&hq));
	OK(XQueueCreate(&xq, hq, kPreemptLevelBlock, kQueueCreateFlagNone));
	OK(XHintPriority(xq, 10));
	while (atomic_load(&g_sh->lows_ready) < g_lows)
		sleep_ns(1000000);
	sleep_ns(200000000); /* the lows run a while */
	unsigned seed = 12345;
	for (int k = 0; k < g_acts; k++) {
		sleep_ns(5000000 + (int64_t)(rand_r(&seed) % 10000) * 1000);
		g_sh->t0[k] = now_ns();
		for (int i = 0; i < 3; i++) {
			submit(xq, 300);
			if (!i)
				g_sh->ts[k] = now_ns();
		}
		HwCommandHandle c;
		OK(HwCommandCreateHostFunc(&c, last_fn, &g_sh->t1[k]));
		OK(XQueueSubmit(xq, c));
		OK(HwCommandDestroy(c));
		OK(XQueueWaitAll(xq));
		g_sh->nact = k + 1;
	}
	atomic_store(&g_sh->high_done, 1);
	OK(XQueueDestroy(xq));
	OK(HwQueueDestroy(hq));
	return 0;
}

/* ---- the parent ---- */

/* The first commits in @path (a trace), as CLOCK_MONOTONIC ns, into *@out (sorted by the
 * trace); returns their number, -1 if the file cannot be read. */
static long read_commits(const char *path, int64_t **out)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	long long t0 = 0;
	long n = 0, cap = 1 << 16;
	int64_t *v = malloc((size_t)cap * sizeof(*v));
	while (v && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "\"t0_ns\":");
		if (p)
			t0 = strtoll(p + 8, NULL, 10);
		if (!strstr(line, "\"ph\":\"b\"") || !(p = strstr(line, "\"ts\":")))
			continue;
		if (n == cap && !(v = realloc(v, (size_t)(cap *= 2) * sizeof(*v))))
			break;
		v[n++] = t0 + (int64_t)(strtod(p + 5, NULL) * 1000.0 + 0.5);
	}
	fclose(f);
	*out = v;
	return v ? n : -1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static pid_t spawn(char *const *argv)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return pid;
}

static void options(int argc, char **argv)
{
	static const struct option lo[] = {{"lows", required_argument, NULL, 'n'},
					   {"queues", required_argument, NULL, 'q'},
					   {"level", required_argument, NULL, 'l'},
					   {"activations", required_argument, NULL, 'r'},
					   {"low-us", required_argument, NULL, 'u'},
					   {"quick", no_argument, NULL, 'k'},
					   {NULL, 0, NULL, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			g_lows = atoi(optarg);
			break;
		case 'q':
			g_queues = atoi(optarg);
			break;
		case 'l':
			g_level = atoi(optarg);
			break;
		case 'r':
			g_acts = atoi(optarg);
			break;
		case 'u':
			g_low_us = atoi(optarg);
			break;
		case 'k':
			g_acts = 50;
			break;
		default:
			exit(2);
		}
	}
	if (g_lows < 1 || g_lows > 63 || g_queues < 1 || g_queues > MAXQ || g_level < 1 ||
	    g_level > 2 || g_acts < 1 || g_acts > MAXR || g_low_us < 1) {
		fprintf(stderr, "board_reaction: --lows 1..63, --queues 1..16, --level 1|2, "
				"--activations 1..4096, --low-us >= 1\n");
		exit(2);
	}
}

/* Each activation's reaction (ns) from the low processes' commits @c (sorted, @n), from
 * @from[k] (the first submit's call, or its return) to t1[k]. */
static void reactions(const int64_t *c, long n, const int64_t *from, int64_t *r, int *late)
{
	*late = 0;
	for (int k = 0; k < g_sh->nact; k++) {
		int64_t last = 0;
		for (long i = 0; i < n; i++)
			if (c[i] >= from[k] && c[i] <= g_sh->t1[k])
				last = c[i] - from[k];
		r[k] = last;
		*late += last > 0;
	}
	qsort(r, (size_t)g_sh->nact, sizeof(*r), cmp_i64);
}

static double pct(const int64_t *r, int a, int p)
{
	int i = (a * p) / 100;
	return r[i < a ? i : a - 1] / 1000.0;
}

static int report(const char *dir)
{
	int64_t *all = NULL;
	long n = 0;
	for (int i = 0; i < g_lows; i++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/low%d.json", dir, i);
		int64_t *v;
		long m = read_commits(path, &v);
		if (m < 0) {
			fprintf(stderr, "board_reaction: cannot read %s\n", path);
			return 1;
		}
		all = realloc(all, (size_t)(n + m + 1) * sizeof(*all));
		memcpy(all + n, v, (size_t)m * sizeof(*v));
		n += m;
		free(v);
	}
	qsort(all, (size_t)n, sizeof(*all), cmp_i64);
	int64_t r[MAXR], rs[MAXR], pub[MAXR];
	int late, late_s, a = g_sh->nact;
	reactions(all, n, g_sh->t0, r, &late);
	reactions(all, n, g_sh->ts, rs, &late_s);
	for (int k = 0; k < a; k++)
		pub[k] = g_sh->ts[k] - g_sh->t0[k];
	qsort(pub, (size_t)a, sizeof(*pub), cmp_i64);
	printf("board_reaction: %d low processes x %d queues (Lv%d, %d us commands), %d "
	       "activations of the high process, %ld low commits traced\n",
	       g_lows, g_queues, g_level, g_low_us, a, n);
	printf("reaction (first high submit to the last low commit): p50 %.1f us, p99 %.1f us, "
	       "max %.1f us; activations with a low commit after the first submit: %d\n",
	       pct(r, a, 50), pct(r, a, 99), r[a - 1] / 1000.0, late);
	printf("  of which the high process's own first submit call (it publishes inside): p50 "
	       "%.1f us, p99 %.1f us; from its return: p99 %.1f us, %d activations\n",
	       pct(pub, a, 50), pct(pub, a, 99), pct(rs, a, 99), late_s);
	printf("target: p99 <= 100 us on the host backend: %s (%.1f us)\n",
	       pct(r, a, 99) <= 100.0 ? "MET" : "MISSED", pct(r, a, 99));
	free(all);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && (!strcmp(argv[1], "--role-low") || !strcmp(argv[1], "--role-high"))) {
		int fd = open(argv[2], O_RDWR);
		g_sh = mmap(NULL, sizeof(*g_sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		g_lows = atoi(argv[4]), g_queues = atoi(argv[5]), g_level = atoi(argv[6]);
		g_acts = atoi(argv[7]), g_low_us = atoi(argv[8]);
		return !strcmp(argv[1], "--role-low") ? run_low(argv[3]) : run_high();
	}
	options(argc, argv);
	char dir[] = "/tmp/xs-reaction-XXXXXX", shp[64], args[5][16];
	if (!mkdtemp(dir))
		return 1;
	setenv("XSCHED_BOARD", dir, 1);
	setenv("XSCHED_TRACE_EVENTS", "1048576", 1);
	snprintf(shp, sizeof(shp), "%s/shared", dir);
	int fd = open(shp, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, sizeof(*g_sh)))
		return 1;
	g_sh = mmap(NULL, sizeof(*g_sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	int vals[5] = {g_lows, g_queues, g_level, g_acts, g_low_us};
	for (int i = 0; i < 5; i++)
		snprintf(args[i], sizeof(args[i]), "%d", vals[i]);
	pid_t pids[64];
	char traces[64][80];
	for (int i = 0; i < g_lows; i++) {
		snprintf(traces[i], sizeof(traces[i]), "%s/low%d.json", dir, i);
		char *av[] = {argv[0], "--role-low", shp,     traces[i], args[0],
			      args[1], args[2],      args[3], args[4],   NULL};
		pids[i] = spawn(av);
	}
	char *av[] = {argv[0], "--role-high", shp,     "-",     args[0],
		      args[1], args[2],       args[3], args[4], NULL};
	pid_t high = spawn(av);
	int st, bad = 0;
	waitpid(high, &st, 0);
	bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	atomic_store(&g_sh->stop, 1);
	for (int i = 0; i < g_lows; i++) {
		waitpid(pids[i], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	int ret = bad ? 1 : report(dir);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "board_reaction: could not remove %s\n", dir);
	return ret;
}
