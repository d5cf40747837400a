/* HPF with the local scheduler thread: a low-priority queue stops launching once a
 * higher-priority queue has work (what it already launched drains, bounded by its
 * in-flight window) and resumes after; an idle low-priority queue cannot slip work out;
 * equal priorities share; a priority change takes effect while queues run. */
#include <stdlib.h>

#include "check.h"

#define LOW_N 200

static XQueueHandle g_low, g_high;
static atomic_int g_low_ran;
static atomic_uint_fast64_t g_base; /* low's launched count once it was suspended */
static atomic_int g_violations;

static XResult low_fn(void *data)
{
	(void)data;
	atomic_fetch_add(&g_low_ran, 1);
	t_sleep_us(1000);
	return kXSchedSuccess;
}

static bool low_suspended(void *arg)
{
	(void)arg;
	return t_stats(g_low).suspensions > 0;
}

/* First high command: wait until the scheduler has suspended low, then note low's launch
 * count and check that its window bounds what is still in flight. */
static XResult high_first(void *data)
{
	(void)data;
	CHECK(t_wait_for(low_suspended, NULL, 10000));
	XQueueStats st = t_stats(g_low);
	CHECK(st.in_flight <= 4);
	atomic_store(&g_base, st.launched);
	t_sleep_us(2000);
	return kXSchedSuccess;
}

/* Later high commands: low launched nothing since it was suspended. */
static XResult high_next(void *data)
{
	(void)data;
	if (t_stats(g_low).launched != atomic_load(&g_base))
		atomic_fetch_add(&g_violations, 1);
	t_sleep_us(2000);
	return kXSchedSuccess;
}

static bool low_running(void *arg)
{
	(void)arg;
	XQueueStats st = t_stats(g_low);
	return st.in_flight == 4;
}

struct pair {
	XQueueHandle a, b;
};

static atomic_int g_a_ran, g_b_ran;

static XResult a_fn(void *d)
{
	(void)d;
	atomic_fetch_add(&g_a_ran, 1);
	t_sleep_us(1000);
	return kXSchedSuccess;
}

static XResult b_fn(void *d)
{
	(void)d;
	atomic_fetch_add(&g_b_ran, 1);
	t_sleep_us(1000);
	return kXSchedSuccess;
}

static bool high_suspended(void *arg)
{
	(void)arg;
	return t_stats(g_high).suspensions > 0;
}

int main(void)
{
	/* HPF suspends lower XQueues only with a co-run budget of 0 (else they co-run within
	 * it, test_corun.c): this test checks the suspensions. */
	CHECK(setenv("XSCHED_CORUN_US", "0", 1) == 0);
	/* Plain HPF: the linger (tested in test_hpf_linger.c) would let a queue that just went
	 * idle at its old priority suspend the others for 1 ms after the priority changes of
	 * part 4, whenever the scheduler's pass lands after the baseline is read. */
	CHECK(setenv("XSCHED_HPF_LINGER_US", "0", 1) == 0);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	/* The window, not the commitment budget (test_budget.c), bounds low's work here. */
	CHECK_OK(XHintCommitBudget(TIMESLICE_MAX));
	HwQueueHandle hl, hh;
	CHECK_OK(HostQueueCreate(&hl));
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(XQueueCreate(&g_low, hl, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&g_high, hh, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(g_low, 0));
	CHECK_OK(XHintPriority(g_high, 10));
	CHECK_OK(XQueueSetLaunchConfig(g_low, 4, 2));

	/* 1. Preemption of a busy low-priority queue. */
	for (int i = 0; i < LOW_N; i++)
		t_submit_fn(g_low, low_fn, NULL);
	CHECK(t_wait_for(low_running, NULL, 10000));
	CHECK(t_stats(g_low).suspensions == 0);
	t_submit_fn(g_high, high_first, NULL);
	for (int i = 0; i < 10; i++)
		t_submit_fn(g_high, high_next, NULL);
	CHECK_OK(XQueueWaitAll(g_high));
	CHECK(atomic_load(&g_violations) == 0);
	/* Low resumes and loses nothing. */
	CHECK_OK(XQueueWaitAll(g_low));
	CHECK(atomic_load(&g_low_ran) == LOW_N);
	XQueueStats ls = t_stats(g_low);
	CHECK(ls.completed == LOW_N && ls.suspended_ns > 0);
	CHECK(t_stats(g_high).suspensions == 0);

	/* 2. An idle low-priority queue cannot launch while a higher one has work. */
	int64_t long_us = 100000;
	uint64_t susp = t_stats(g_low).suspensions;
	t_submit_fn(g_high, t_sleep_fn, &long_us);
	/* Wait until the scheduler has seen high's new work (low is suspended again). */
	XQueueStats st;
	int64_t until = t_now_us() + 10000000;
	do {
		st = t_stats(g_low);
		if (st.suspensions > susp)
			break;
		t_sleep_us(100);
	} while (t_now_us() < until);
	CHECK(st.suspensions > susp);
	uint64_t launched = st.launched;
	t_submit_fn(g_low, low_fn, NULL);
	t_sleep_us(20000);
	XQueueState hs;
	CHECK_OK(XQueueQuery(g_high, &hs));
	if (hs == kQueueStateReady)
		CHECK(t_stats(g_low).launched == launched);
	CHECK_OK(XQueueWaitAll(g_high));
	CHECK_OK(XQueueWaitAll(g_low));
	CHECK(atomic_load(&g_low_ran) == LOW_N + 1);

	/* 3. A priority change while both run: raising low above high suspends high. */
	for (int i = 0; i < 100; i++) {
		t_submit_fn(g_low, low_fn, NULL);
		t_submit_fn(g_high, low_fn, NULL);
	}
	CHECK_OK(XHintPriority(g_low, 20));
	CHECK(t_wait_for(high_suspended, NULL, 10000));
	CHECK_OK(XQueueWaitAll(g_low));
	CHECK_OK(XQueueWaitAll(g_high));
	CHECK(atomic_load(&g_low_ran) == LOW_N + 1 + 200);

	/* 4. Equal priorities share: neither is suspended, both make progress. */
	CHECK_OK(XHintPriority(g_low, 7));
	CHECK_OK(XHintPriority(g_high, 7));
	XQueueStats a0 = t_stats(g_low), b0 = t_stats(g_high);
	for (int i = 0; i < 50; i++) {
		t_submit_fn(g_low, a_fn, NULL);
		t_submit_fn(g_high, b_fn, NULL);
	}
	CHECK_OK(XQueueWaitAll(g_low));
	CHECK_OK(XQueueWaitAll(g_high));
	CHECK(atomic_load(&g_a_ran) == 50 && atomic_load(&g_b_ran) == 50);
	CHECK(t_stats(g_low).suspensions == a0.suspensions);
	CHECK(t_stats(g_high).suspensions == b0.suspensions);

	/* 5. Switching to application-managed scheduling lifts scheduler suspensions. */
	CHECK_OK(XHintPriority(g_high, 100));
	for (int i = 0; i < 20; i++)
		t_submit_fn(g_high, low_fn, NULL);
	t_submit_fn(g_low, low_fn, NULL);
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	CHECK_OK(XQueueWaitAll(g_low)); /* would hang if low stayed suspended */
	CHECK_OK(XQueueWaitAll(g_high));

	CHECK_OK(XQueueDestroy(g_low));
	CHECK_OK(XQueueDestroy(g_high));
	CHECK_OK(HwQueueDestroy(hl));
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(XSchedShutdown());
	return 0;
}
