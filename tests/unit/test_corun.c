/* Engine v3 on the host backend (counted, not timed; a watchdog turns a hang into a
 * failure):
 * - co-run: under HPF with a co-run (and commitment) budget C, while the high queue
 *   works, the low commands that run at once never exceed what C admits (C over the low
 *   command time, plus one credited, one in the lead and one for estimate error: the
 *   budget counts estimated device time), and some do run (the GPU is not left to the
 *   high queue alone), for 7, 31 and 127 low queues;
 * - fairness: equal-priority queues whose commands are host functions and launch
 *   callbacks, of two lengths, share a tight budget: each gets device time within
 *   [0.5, 2] x the mean; queues of inline launches beside them do not starve (on a host
 *   queue an inline launch runs its work at enqueue, on its own thread, outside the
 *   budget, so only its progress is asserted);
 * - no bubble: a limited queue of commands longer than the budget has its next command
 *   committed before the running one completes (for at least a quarter of them);
 * - sleeping: while one long command runs with a thread waiting for it, the progress
 *   thread wakes a handful of times, and the process uses a few per cent of a core;
 * - more XQueues than hardware queues (XSCHED_HOST_HW_QUEUES): no command is enqueued
 *   behind a counter, and three priority tiers of Lv2 queues under HPF run to the end
 *   (a charge held by a suspended queue's pending command once stopped them all).
 * The co-run bound (the budget counts estimated time), the shares, how early the next
 * command is committed and the oversubscribed queues' progress are each a timing bound:
 * met, it passes; missed, it fails where the host gave the test's threads a CPU when they
 * were ready during its window, and is skipped, saying what was measured and what the host
 * gave, where it did not (check.h, CHECK_TIMED; exit 77 once every other check passed). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "check.h"
#include "core/object.h"
#include "preempt/engine.h"
#include "preempt/testing.h"

#define MAXQ 130

static atomic_bool g_stop, g_high_busy;
static atomic_int g_low_running, g_low_max_held, g_low_ran_held;

struct lane {
	HwQueueHandle hwq;
	XQueueHandle xq;
	pthread_t th;
	int64_t us;        /* command length */
	int kind;          /* 0 host function, 1 launch callback, 2 inline */
	int64_t gap_us;    /* pause after each task */
	atomic_llong done; /* commands run */
};

static struct lane g_l[MAXQ];

static void *watchdog(void *arg)
{
	int64_t until = t_now_us() + *(int64_t *)arg;
	while (t_now_us() < until) {
		if (atomic_load(&g_stop))
			return NULL;
		t_sleep_us(10000);
	}
	fprintf(stderr, "test_corun: a hang (watchdog)\n");
	abort();
}

static XResult low_fn(void *data)
{
	struct lane *l = data;
	int r = atomic_fetch_add(&g_low_running, 1) + 1;
	if (atomic_load(&g_high_busy)) {
		atomic_fetch_add(&g_low_ran_held, 1);
		int m = atomic_load(&g_low_max_held);
		while (r > m && !atomic_compare_exchange_weak(&g_low_max_held, &m, r))
			;
	}
	t_sleep_us(l->us);
	atomic_fetch_sub(&g_low_running, 1);
	atomic_fetch_add(&l->done, 1);
	return kXSchedSuccess;
}

static XResult low_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	return low_fn(data);
}

/* Back to back: two commands, then a wait for the second. */
static void *lane_main(void *arg)
{
	struct lane *l = arg;
	while (!atomic_load(&g_stop)) {
		if (l->kind == 2) {
			CHECK_OK(XQueueLaunchInline(l->xq, low_cb, l));
			continue;
		}
		HwCommandHandle c[2];
		for (int k = 0; k < 2; k++) {
			if (l->kind == 0)
				CHECK_OK(HwCommandCreateHostFunc(&c[k], low_fn, l));
			else
				CHECK_OK(HwCommandCreateCallback(&c[k], low_cb, l));
			CHECK_OK(XQueueSubmit(l->xq, c[k]));
		}
		CHECK_OK(XQueueWait(l->xq, c[1]));
		for (int k = 0; k < 2; k++)
			CHECK_OK(HwCommandDestroy(c[k]));
		if (l->gap_us)
			t_sleep_us(l->gap_us);
	}
	return NULL;
}

static void open_lanes(int n, int level, int64_t us)
{
	for (int i = 0; i < n; i++) {
		struct lane *l = &g_l[i];
		memset(l, 0, sizeof(*l));
		l->us = us;
		CHECK_OK(HostQueueCreate(&l->hwq));
		CHECK_OK(XQueueCreate(&l->xq, l->hwq, level, 0));
	}
}

static void start_lanes(int from, int n)
{
	for (int i = from; i < n; i++)
		CHECK(pthread_create(&g_l[i].th, NULL, lane_main, &g_l[i]) == 0);
}

static void close_lanes(int from, int n)
{
	atomic_store(&g_stop, true);
	for (int i = from; i < n; i++)
		CHECK(pthread_join(g_l[i].th, NULL) == 0);
	for (int i = 0; i < n; i++) {
		CHECK_OK(XQueueWaitAll(g_l[i].xq));
		CHECK_OK(XQueueDestroy(g_l[i].xq));
		CHECK_OK(HwQueueDestroy(g_l[i].hwq));
	}
}

static XResult high_fn(void *data)
{
	(void)data;
	atomic_store(&g_high_busy, true);
	t_sleep_us(2000);
	atomic_store(&g_high_busy, false);
	return kXSchedSuccess;
}

/* Queue 0 high (priority 2), the others low (1). */
static void corun(int nlow, int64_t corun_us)
{
	enum { LOW_US = 500 };
	printf("co-run: %d low queues, co-run budget %lld us\n", nlow, (long long)corun_us);
	CHECK_OK(XHintCorunBudget(corun_us));
	CHECK_OK(XHintCommitBudget(corun_us)); /* also what a high arrival finds */
	atomic_store(&g_stop, false);
	atomic_store(&g_low_max_held, 0);
	atomic_store(&g_low_ran_held, 0);
	open_lanes(nlow + 1, kPreemptLevelDeactivate, LOW_US);
	CHECK_OK(XHintPriority(g_l[0].xq, 2));
	for (int i = 1; i <= nlow; i++)
		CHECK_OK(XHintPriority(g_l[i].xq, 1));
	t_sleep_us(20000); /* the scheduler's pass marks the low queues limited */
	start_lanes(1, nlow + 1);
	t_host_reset();
	t_sleep_us(100000); /* estimates settle */
	for (int r = 0; r < 40; r++) {
		t_submit_fn(g_l[0].xq, high_fn, NULL);
		t_submit_fn(g_l[0].xq, high_fn, NULL);
		CHECK_OK(XQueueWaitAll(g_l[0].xq));
		t_sleep_us(1000);
	}
	t_host host = t_host_get();
	close_lanes(1, nlow + 1);
	CHECK_OK(XHintCommitBudget(1000));
	/* C over the command time; one command credited as done before its completion is
	 * seen; one more in the lead; one for an estimate that late wake-ups on a loaded
	 * machine make short (the budget counts estimated device time, not commands). */
	int bound = (int)(corun_us / LOW_US) + 3;
	printf("  low commands run at once while the high queue worked: at most %d (bound %d), "
	       "%d started then\n",
	       atomic_load(&g_low_max_held), bound, atomic_load(&g_low_ran_held));
	CHECK_TIMED(&host, atomic_load(&g_low_max_held) <= bound,
		    "%d lows, co-run budget %lld us: at most %d "
		    "low commands at once while the high queue works; measured %d",
		    nlow, (long long)corun_us, bound, atomic_load(&g_low_max_held));
	CHECK_TIMED(&host, atomic_load(&g_low_ran_held) > 0,
		    "%d lows: some low commands co-run with the high "
		    "queue; measured none",
		    nlow);
}

static void fairness(void)
{
	enum { N = 9 };
	printf("fairness: %d equal-priority queues of host functions, callbacks (200 and 600 "
	       "us) and inline launches\n",
	       N);
	CHECK_OK(XHintCommitBudget(400));
	atomic_store(&g_stop, false);
	open_lanes(N + 1, kPreemptLevelDeactivate, 200);
	CHECK_OK(XHintPriority(g_l[0].xq, 2)); /* idle: makes the others limited */
	for (int i = 1; i <= N; i++) {
		g_l[i].kind = i > 7 ? 2 : (i - 1) % 2;
		g_l[i].us = i <= 4 ? 200 : 600;
		CHECK_OK(XHintPriority(g_l[i].xq, 1));
	}
	t_sleep_us(20000);
	start_lanes(1, N + 1);
	t_host_reset();
	t_sleep_us(1500000);
	t_host host = t_host_get();
	atomic_store(&g_stop, true);
	enum { NB = 7 }; /* queues 1..7 run their work on the host queue */
	double share[N + 1], mean = 0;
	for (int i = 1; i <= N; i++) {
		share[i] = (double)atomic_load(&g_l[i].done) * (double)g_l[i].us;
		if (i <= NB)
			mean += share[i] / NB;
	}
	close_lanes(1, N + 1);
	for (int i = 1; i <= N; i++)
		printf("  queue %d (kind %d, %lld us): %.2f x the mean device time\n", i,
		       g_l[i].kind, (long long)g_l[i].us, share[i] / mean);
	for (int i = 1; i <= N; i++) {
		if (i <= NB)
			CHECK_TIMED(
			    &host, share[i] >= 0.5 * mean && share[i] <= 2.0 * mean,
			    "queue %d: device time within [0.5, 2] x the mean; measured %.2f", i,
			    share[i] / mean);
		else /* inline: progress */
			CHECK_TIMED(&host, share[i] >= 0.05 * mean,
				    "queue %d (inline launches): at least 0.05 "
				    "x the mean device time; measured %.2f",
				    i, share[i] / mean);
	}
	CHECK_OK(XHintCommitBudget(1000));
}

static uint64_t g_bubble_early, g_bubble_n;
static XQueueHandle g_bubble_xq;

static XResult bubble_fn(void *data)
{
	uint64_t seq = (uint64_t)(uintptr_t)data;
	t_sleep_us(2300);
	/* At the end of this command: is the next one committed already? */
	XQueueStats st = t_stats(g_bubble_xq);
	if (st.submitted > seq) {
		g_bubble_n++;
		g_bubble_early += st.committed > seq;
		if (getenv("DBG"))
			printf("seq %llu committed %llu est %llu\n", (unsigned long long)seq,
			       (unsigned long long)st.committed,
			       (unsigned long long)st.est_command_ns);
	}
	return kXSchedSuccess;
}

static void no_bubble(void)
{
	printf("no bubble: a limited Lv2 queue of 2.3 ms commands, budget 1000 us\n");
	struct t_pair p;
	t_pair_open(&p, kPreemptLevelDeactivate); /* high idle: low is limited */
	g_bubble_xq = p.low;
	t_sleep_us(20000);
	t_host_reset();
	for (uintptr_t i = 1; i <= 30; i++)
		t_submit_fn(p.low, bubble_fn, (void *)i);
	CHECK_OK(XQueueWaitAll(p.low));
	t_host host = t_host_get();
	printf("  next committed before the previous completed: %llu of %llu\n",
	       (unsigned long long)g_bubble_early, (unsigned long long)g_bubble_n);
	CHECKF(g_bubble_n >= 25,
	       "at least 25 of the 30 commands see the next one submitted; "
	       "measured %llu",
	       (unsigned long long)g_bubble_n);
	/* Most runs: 24-29 of 29 (the first ones have no estimate). A progress thread that
	 * wakes late commits late: 17-21 of 29 in 4 of about 30 runs under ThreadSanitizer on a
	 * loaded host, fewer than 14 once. A quarter still fails an engine that commits only at
	 * completions (none would be early); how early is the co-run benchmark's to measure. */
	CHECK_TIMED(&host, g_bubble_early >= g_bubble_n / 4,
		    "at least a quarter (%llu) committed "
		    "before the previous one completed; measured %llu",
		    (unsigned long long)(g_bubble_n / 4), (unsigned long long)g_bubble_early);
	t_pair_close(&p);
}

static int64_t cpu_us(void)
{
	struct rusage ru;
	CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static void sleeping(void)
{
	printf("sleeping: one 300 ms command, waited for\n");
	struct t_pair p;
	t_pair_open(&p, kPreemptLevelDeactivate);
	int64_t us = 300000;
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, t_sleep_fn, &us));
	xs_obj *o = xs_handle_get(p.low, XS_KIND_XQUEUE);
	CHECK(o);
	uint64_t w0 = xs_dev_wakeups(xs_xqueue_of(o));
	int64_t c0 = cpu_us();
	CHECK_OK(XQueueSubmit(p.low, c));
	CHECK_OK(XQueueWait(p.low, c));
	int64_t cpu = cpu_us() - c0;
	uint64_t w = xs_dev_wakeups(xs_xqueue_of(o)) - w0;
	printf("  progress thread wake-ups: %llu; CPU time: %lld us\n", (unsigned long long)w,
	       (long long)cpu);
	CHECKF(w <= 20,
	       "at most 20 progress-thread wake-ups during one 300 ms command; measured "
	       "%llu",
	       (unsigned long long)w);
	/* 10% of the command's time, for every thread together: CPU time, which a busy host
	 * does not add to. */
	CHECKF(cpu <= 30000,
	       "at most 30 ms of CPU time while a 300 ms command runs; measured "
	       "%lld us",
	       (long long)cpu);
	xs_obj_unref(o);
	CHECK_OK(HwCommandDestroy(c));
	t_pair_close(&p);
}

static bool g_gated_seen;

static void oversubscribed(void)
{
	enum { N = 12 };
	printf("oversubscribed: %d Lv2 XQueues on 4 hardware queues, three tiers under HPF\n", N);
	atomic_store(&g_stop, false);
	open_lanes(N, kPreemptLevelDeactivate, 150);
	for (int i = 0; i < N; i++)
		CHECK_OK(XHintPriority(g_l[i].xq, i == 0 ? 3 : i == 1 ? 2 : 1));
	g_l[0].gap_us = 3000; /* high and mid come and go */
	g_l[1].gap_us = 2000;
	start_lanes(0, N);
	int64_t end = t_now_us() + 1000000;
	while (t_now_us() < end) {
		for (int i = 0; i < N; i++) {
			XQueueStats st = t_stats(g_l[i].xq);
			g_gated_seen |= st.committed < st.launched; /* waiting behind a counter */
		}
		t_sleep_us(500);
	}
	long long before[N];
	for (int i = 0; i < N; i++)
		before[i] = atomic_load(&g_l[i].done);
	t_host_reset();
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer's slowdown with 12 lanes' threads on a 2-core host: one lane did
	 * not complete a command within 200 ms once in CI (not reproduced in 20 runs). */
	enum { WINDOW_MS = 1000 };
#else
	enum { WINDOW_MS = 200 };
#endif
	t_sleep_us(WINDOW_MS * 1000);
	t_host host = t_host_get();
	for (int i = 0; i < N; i++) /* every queue still moves */
		CHECK_TIMED(&host, atomic_load(&g_l[i].done) > before[i],
			    "queue %d completes a command within "
			    "%d ms; measured none (%lld before and after)",
			    i, WINDOW_MS, (long long)before[i]);
	close_lanes(0, N);
	CHECKF(!g_gated_seen, "no command enqueued behind a counter with more XQueues than "
			      "hardware queues; measured one");
}

int main(void)
{
	int64_t wd_us = 120000000;
	pthread_t wd;
	CHECK(pthread_create(&wd, NULL, watchdog, &wd_us) == 0);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	CHECK_RES(XHintCorunBudget(-1), kXSchedErrorInvalidValue);
	CHECK_RES(XHintCorunBudget(TIMESLICE_MAX + 1), kXSchedErrorInvalidValue);
	corun(7, 1500);
	corun(31, 1000);
	corun(127, 2000);
	CHECK_OK(XHintCorunBudget(0));
	fairness();
	no_bubble();
	sleeping();
	CHECK_OK(XSchedShutdown());
	CHECK(setenv("XSCHED_HOST_HW_QUEUES", "4", 1) == 0);
	oversubscribed();
	CHECK_OK(XSchedShutdown());
	atomic_store(&g_stop, true);
	CHECK(pthread_join(wd, NULL) == 0);
	return t_exit();
}
