/* A latency objective and another process's lower work on a device that time-slices
 * processes (CUDA without MPS), through the board (XSCHED_BOARD=DIR, host queues;
 * XSCHED_HOST_TIMESLICED models such a device). Two processes, made with fork and exec, in
 * two runs (the device time-sliced, then not):
 * - high (priority 10, objective 3.0): 1 ms commands, alone, until its controller lets
 *   lower work co-run without a limit (XQueueStats.corun_budget_ns = UINT64_MAX; a timing
 *   bound: skipped where the host did not give the units their time); then a command that
 *   holds its queue busy until the low process is done;
 * - low (priority 0): reads the board while the high process is busy, then submits one
 *   command.
 * Time-sliced: the high process asks the others for no co-run (XBoardInfo.others_corun_ns
 * 0, timesliced 1) whatever its controller allows its own lower queues, and the low
 * command does not run while the high queue is busy (100 ms); it runs once it is idle.
 * Not time-sliced: the ask is the controller's (not limited, INT64_MAX) and the low
 * command runs beside the busy high queue. Before the rule, the second run's outcome was
 * also the first's: on an NVIDIA H200 each co-run level of an objective then let another
 * process's commands hold the GPU beside its units for their time slice, and the time
 * per token's p99 went from 0.89x alone (defaults) to 1.51x and 2.06x (objectives 1.5
 * and 2.0) with nothing more for the other process (doc/RESULTS.md, 2026-11-28). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "board_util.h"

struct shared {
	atomic_int low_ready;      /* the low queue sees the high process on the board */
	atomic_int busy;           /* the high queue's holding command runs */
	atomic_int release;        /* the holding command may end */
	atomic_int skip;           /* the high controller did not climb: the host had no time */
	atomic_int low_ran;        /* the low command ran */
	atomic_int low_ran_beside; /* ... while the high queue was busy */
};

static struct shared *g_sh;

static XResult work_fn(void *data)
{
	t_work_us(*(const int64_t *)data);
	return kXSchedSuccess;
}

/* The high queue's holding command: busy until released (30 s at most). */
static XResult hold_fn(void *data)
{
	(void)data;
	atomic_store(&g_sh->busy, 1);
	bu_wait_flag(&g_sh->release, 30000);
	atomic_store(&g_sh->busy, 0);
	return kXSchedSuccess;
}

static XResult low_fn(void *data)
{
	(void)data;
	atomic_store(&g_sh->low_ran_beside, atomic_load(&g_sh->busy));
	atomic_store(&g_sh->low_ran, 1);
	return kXSchedSuccess;
}

static bool sees_other(const XBoardInfo *b)
{
	return b->joined && b->others_top != XBOARD_NONE;
}

static bool held_by_high(const XBoardInfo *b)
{
	return b->others_busy == 10;
}

static int run_high(void)
{
	HwQueueHandle hq;
	XQueueHandle xq;
	static int64_t unit_us = 1000;
	xq = bu_queue_open(&hq, kPreemptLevelBlock, 10);
	CHECK_OK(XHintLatencyObjective(xq, 3.0));
	CHECK(bu_wait_flag(&g_sh->low_ready, 20000));
	/* Alone, each look finds the units well within 3x: the controller climbs through
	 * its co-run levels to "not limited" (about 8 looks of 50 ms). */
	XQueueStats s = {0};
	int64_t t0 = t_now_us();
	t_host_reset();
	while (t_now_us() - t0 < 20000000) {
		for (int i = 0; i < 16; i++)
			t_submit_fn(xq, work_fn, &unit_us);
		CHECK_OK(XQueueWaitAll(xq));
		CHECK_OK(XQueueGetStats(xq, &s));
		if (s.corun_budget_ns == UINT64_MAX)
			break;
	}
	t_host h = t_host_get();
	CHECK_TIMED(&h, s.corun_budget_ns == UINT64_MAX,
		    "the controller at \"not limited\" within 20 s of units alone; measured: "
		    "co-run budget %llu ns, slowdown %llu per mille",
		    (unsigned long long)s.corun_budget_ns, (unsigned long long)s.slowdown_permille);
	if (s.corun_budget_ns != UINT64_MAX) { /* skipped (else failed above) */
		atomic_store(&g_sh->skip, 1);
		bu_queue_close(xq, hq);
		return t_exit();
	}
	t_submit_fn(xq, hold_fn, NULL);
	CHECK_OK(XQueueWaitAll(xq));
	bu_queue_close(xq, hq);
	return t_exit();
}

static int run_low(bool timesliced)
{
	HwQueueHandle hq;
	XQueueHandle xq;
	xq = bu_queue_open(&hq, kPreemptLevelBlock, 0);
	CHECK(bu_board_until(xq, sees_other, 20000));
	atomic_store(&g_sh->low_ready, 1);
	for (int i = 0; i < 60000 && !atomic_load(&g_sh->busy) && !atomic_load(&g_sh->skip); i++)
		t_sleep_us(500);
	if (atomic_load(&g_sh->skip)) {
		bu_queue_close(xq, hq);
		return 0;
	}
	CHECK(atomic_load(&g_sh->busy));
	CHECK(bu_board_until(xq, held_by_high, 10000));
	XBoardInfo b;
	CHECK_OK(XQueueGetBoard(xq, &b));
	int64_t want = timesliced ? 0 : INT64_MAX;
	printf("%s: timesliced %d, the high process asks co-run %lld ns (expected %lld)\n",
	       timesliced ? "time-sliced" : "shared", b.timesliced, (long long)b.others_corun_ns,
	       (long long)want);
	CHECK_CMP(b.timesliced, ==, (int)timesliced);
	CHECK_CMP(b.others_corun_ns, ==, want);
	t_submit_fn(xq, low_fn, NULL);
	if (timesliced) {
		t_sleep_us(100000);
		XQueueStats s;
		CHECK_OK(XQueueGetStats(xq, &s));
		CHECKF(!atomic_load(&g_sh->low_ran) && s.pending == 1,
		       "expected: the low command held (pending) while the high queue is busy; "
		       "measured: ran %d, pending %llu",
		       atomic_load(&g_sh->low_ran), (unsigned long long)s.pending);
	} else {
		bu_wait_flag(&g_sh->low_ran, 10000);
		CHECKF(atomic_load(&g_sh->low_ran_beside),
		       "expected: the low command ran beside the busy high queue within 10 s; "
		       "measured: ran %d, beside it %d",
		       atomic_load(&g_sh->low_ran), atomic_load(&g_sh->low_ran_beside));
	}
	atomic_store(&g_sh->release, 1);
	CHECK_OK(XQueueWaitAll(xq));
	CHECK(atomic_load(&g_sh->low_ran));
	bu_queue_close(xq, hq);
	return t_exit();
}

/* One run of the two processes; returns the high process's status (77: skipped). */
static int run_pair(const char *dir, bool timesliced)
{
	char shp[4200];
	snprintf(shp, sizeof(shp), "%s/shared-%d", dir, (int)timesliced);
	g_sh = bu_map(shp, sizeof(struct shared));
	setenv("XSCHED_HOST_TIMESLICED", timesliced ? "1" : "0", 1);
	const char *low_argv[] = {timesliced ? "low1" : "low0", shp, NULL};
	const char *high_argv[] = {"high", shp, NULL};
	pid_t low = bu_spawn(low_argv);
	pid_t high = bu_spawn(high_argv);
	int st = bu_wait(high, 90000);
	atomic_store(&g_sh->release, 1);
	atomic_store(&g_sh->skip, st != 0);
	CHECK_CMP(bu_wait(low, 60000), ==, 0);
	CHECK(st == 0 || st == 77);
	return st;
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* a child: its role, the shared file */
		g_sh = bu_map(argv[1], sizeof(struct shared));
		if (!strcmp(argv[0], "high"))
			return run_high();
		return run_low(!strcmp(argv[0], "low1"));
	}
	char dir[4096];
	bu_tmpdir(dir, sizeof(dir));
	setenv("XSCHED_BOARD", dir, 1);
	int a = run_pair(dir, true);
	int b = run_pair(dir, false);
	bu_rmdir(dir);
	return a == 77 || b == 77 ? 77 : t_exit();
}
