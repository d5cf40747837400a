/* XQueueLaunchInline, scopes and run gate checks on host queues: inline work runs on the
 * calling thread, in order with the XQueue's other commands; the caller blocks while the
 * XQueue is suspended or its window is full, and goes on after; errors; an open scope
 * keeps a lower-priority XQueue suspended under HPF while nothing is in flight; a gate
 * check holds the queue while the XQueue is suspended. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"

#define N_ORDER 200

static HwQueueHandle new_hwq(void)
{
	HwQueueHandle h;
	CHECK_OK(HostQueueCreate(&h));
	return h;
}

static XQueueHandle new_xq(HwQueueHandle h, XPreemptLevel level)
{
	XQueueHandle xq;
	CHECK_OK(XQueueCreate(&xq, h, level, kQueueCreateFlagNone));
	return xq;
}

/* ---- order and thread ---- */

static int g_log[2 * N_ORDER + 4];
static atomic_int g_nlog;

static void log_value(int v)
{
	int i = atomic_fetch_add(&g_nlog, 1);
	CHECK(i < (int)(sizeof(g_log) / sizeof(g_log[0])));
	g_log[i] = v;
}

struct inline_arg {
	pthread_t want;
	int value;
	XResult ret;
};

static XResult inline_fn(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	struct inline_arg *a = data;
	CHECK(pthread_equal(a->want, pthread_self()));
	log_value(a->value);
	return a->ret;
}

static XResult logged_fn(void *data)
{
	log_value((int)(intptr_t)data);
	return kXSchedSuccess;
}

/* Inline work and host functions alternate on one XQueue: both run in submission order,
 * the inline part on the caller, and its result is returned. */
static void test_order(void)
{
	HwQueueHandle h = new_hwq();
	XQueueHandle xq = new_xq(h, kPreemptLevelDeactivate);
	atomic_store(&g_nlog, 0);
	for (int i = 0; i < N_ORDER; i++) {
		t_submit_fn(xq, logged_fn, (void *)(intptr_t)(2 * i));
		struct inline_arg a = {pthread_self(), 2 * i + 1, kXSchedSuccess};
		CHECK_OK(XQueueLaunchInline(xq, inline_fn, &a));
	}
	CHECK_OK(XQueueWaitAll(xq));
	CHECK(atomic_load(&g_nlog) == 2 * N_ORDER);
	/* The host executor logs a host function when it runs; an inline part logs at its
	 * launch, which comes after the host function before it was enqueued but may come
	 * before that one ran. Each kind alone is in order, and each inline part i comes
	 * after inline part i-1. */
	int next_even = 0, next_odd = 1;
	for (int i = 0; i < 2 * N_ORDER; i++) {
		if (g_log[i] % 2 == 0) {
			CHECK(g_log[i] == next_even);
			next_even += 2;
		} else {
			CHECK(g_log[i] == next_odd);
			next_odd += 2;
		}
	}
	/* The callback's result is the call's, and the command counts as failed. */
	struct inline_arg bad = {pthread_self(), -1, kXSchedErrorHardware};
	CHECK_RES(XQueueLaunchInline(xq, inline_fn, &bad), kXSchedErrorHardware);
	CHECK_RES(XQueueWaitAll(xq), kXSchedErrorHardware);
	XQueueStats st = t_stats(xq);
	CHECK(st.submitted == 2 * N_ORDER + 1 && st.completed == st.submitted && st.failed == 1);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(h));
}

/* ---- blocking ---- */

struct blocked {
	XQueueHandle xq;
	bool boundary; /* launch null: a boundary */
	atomic_bool ran, returned;
	XResult res;
};

static XResult mark_ran(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	atomic_store(&((struct blocked *)data)->ran, true);
	return kXSchedSuccess;
}

static void *launch_thread(void *arg)
{
	struct blocked *b = arg;
	b->res = XQueueLaunchInline(b->xq, b->boundary ? NULL : mark_ran, b);
	if (b->boundary)
		atomic_store(&b->ran, true); /* work the caller puts behind the boundary */
	atomic_store(&b->returned, true);
	return NULL;
}

static bool has_returned(void *arg)
{
	return atomic_load(&((struct blocked *)arg)->returned);
}

static atomic_bool g_latch;

static XResult latch_fn(void *data)
{
	(void)data;
	while (!atomic_load(&g_latch))
		t_sleep_us(100);
	return kXSchedSuccess;
}

/* Suspended (XQueueSuspend, at each level): the caller blocks and its work does not run;
 * after XQueueResume it runs on that caller and the call returns. A boundary (null launch)
 * blocks the same way. */
static void test_blocks_while_suspended(XPreemptLevel level, bool boundary)
{
	HwQueueHandle h = new_hwq();
	XQueueHandle xq = new_xq(h, level);
	CHECK_OK(XQueueSuspend(xq, kQueueSuspendFlagNone));
	struct blocked b = {.xq = xq, .boundary = boundary};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, launch_thread, &b) == 0);
	t_sleep_us(50000);
	CHECK(!atomic_load(&b.ran) && !atomic_load(&b.returned));
	CHECK(t_stats(xq).pending == 1);
	CHECK_OK(XQueueResume(xq, kQueueResumeFlagNone));
	CHECK(t_wait_for(has_returned, &b, 10000));
	CHECK(atomic_load(&b.ran));
	CHECK_OK(b.res);
	pthread_join(t, NULL);
	CHECK_OK(XQueueWaitAll(xq));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(h));
}

/* A full window (threshold 2: a held host function and one inline command): the third
 * caller blocks until the window has room, then goes on. */
static void test_blocks_on_window(void)
{
	HwQueueHandle h = new_hwq();
	XQueueHandle xq = new_xq(h, kPreemptLevelDeactivate);
	CHECK_OK(XQueueSetLaunchConfig(xq, 2, 1));
	atomic_store(&g_latch, false);
	t_submit_fn(xq, latch_fn, NULL);
	struct blocked first = {.xq = xq};
	launch_thread(&first);
	CHECK(atomic_load(&first.ran));
	struct blocked b = {.xq = xq};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, launch_thread, &b) == 0);
	t_sleep_us(50000);
	CHECK(!atomic_load(&b.ran) && !atomic_load(&b.returned));
	atomic_store(&g_latch, true);
	CHECK(t_wait_for(has_returned, &b, 10000));
	CHECK(atomic_load(&b.ran));
	pthread_join(t, NULL);
	CHECK_OK(XQueueWaitAll(xq));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(h));
}

static bool one_pending(void *arg)
{
	return t_stats(*(XQueueHandle *)arg).pending == 1;
}

/* Destroy while a caller waits: the caller's command still runs (nothing submitted is
 * lost), on the caller, and the destroy returns after it. */
static void test_destroy_while_waiting(void)
{
	HwQueueHandle h = new_hwq();
	XQueueHandle xq = new_xq(h, kPreemptLevelBlock);
	CHECK_OK(XQueueSuspend(xq, kQueueSuspendFlagNone));
	struct blocked b = {.xq = xq};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, launch_thread, &b) == 0);
	CHECK(t_wait_for(one_pending, &xq, 10000));
	CHECK_OK(XQueueDestroy(xq));
	CHECK(t_wait_for(has_returned, &b, 10000));
	CHECK(atomic_load(&b.ran));
	CHECK_OK(b.res);
	pthread_join(t, NULL);
	CHECK_OK(HwQueueDestroy(h));
}

/* ---- errors and nesting ---- */

struct nest {
	XQueueHandle self, other;
	XResult self_res, other_res;
	atomic_bool inner_ran;
};

static XResult inner_fn(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	atomic_store(&((struct nest *)data)->inner_ran, true);
	return kXSchedSuccess;
}

static XResult outer_fn(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	struct nest *n = data;
	n->self_res = XQueueLaunchInline(n->self, inner_fn, n);
	n->other_res = XQueueLaunchInline(n->other, inner_fn, n);
	return kXSchedSuccess;
}

static XResult host_self_fn(void *data)
{
	struct nest *n = data;
	n->self_res = XQueueLaunchInline(n->self, inner_fn, n);
	return kXSchedSuccess;
}

static void test_errors_and_nesting(void)
{
	HwQueueHandle h1 = new_hwq(), h2 = new_hwq();
	XQueueHandle a = new_xq(h1, kPreemptLevelDeactivate);
	XQueueHandle b = new_xq(h2, kPreemptLevelBlock);
	CHECK_OK(XQueueLaunchInline(a, NULL, NULL)); /* a boundary */
	CHECK_RES(XQueueLaunchInline(0x1234, inner_fn, NULL), kXSchedErrorNotFound);
	CHECK_RES(XQueueBeginScope(0x1234), kXSchedErrorNotFound);
	CHECK_RES(XQueueEndScope(a), kXSchedErrorNotAllowed);
	CHECK_RES(XQueueEnqueueGateCheck(0x1234), kXSchedErrorNotFound);
	/* From inside its own inline work: refused; another XQueue's: nested, runs. */
	struct nest n = {.self = a, .other = b};
	CHECK_OK(XQueueLaunchInline(a, outer_fn, &n));
	CHECK_RES(n.self_res, kXSchedErrorNotAllowed);
	CHECK_OK(n.other_res);
	CHECK(atomic_load(&n.inner_ran));
	/* From a host function of the XQueue (its executor): refused. */
	n.self_res = kXSchedSuccess;
	t_submit_fn(a, host_self_fn, &n);
	CHECK_OK(XQueueWaitAll(a));
	CHECK_RES(n.self_res, kXSchedErrorNotAllowed);
	CHECK_OK(XQueueWaitAll(b));
	XQueueStats st = t_stats(a);
	CHECK(st.submitted == 3 && st.completed == 3 && st.failed == 0); /* with the boundary */
	CHECK_OK(XQueueDestroy(a));
	CHECK_OK(XQueueDestroy(b));
	CHECK_OK(HwQueueDestroy(h1));
	CHECK_OK(HwQueueDestroy(h2));
}

/* ---- scopes ---- */

static atomic_int g_low_ran;

static XResult low_fn(void *data)
{
	(void)data;
	atomic_fetch_add(&g_low_ran, 1);
	return kXSchedSuccess;
}

static bool low_done(void *arg)
{
	return atomic_load(&g_low_ran) == *(int *)arg;
}

static bool suspended(void *arg)
{
	return t_stats(*(XQueueHandle *)arg).suspensions > 0;
}

/* HPF: while the high XQueue has an open scope, an idle moment of it does not let the
 * low one run; closing the scope does. */
static void test_scope_holds_lower(void)
{
	HwQueueHandle hh = new_hwq(), hl = new_hwq();
	XQueueHandle high = new_xq(hh, kPreemptLevelDeactivate);
	XQueueHandle low = new_xq(hl, kPreemptLevelDeactivate);
	CHECK_OK(XHintPriority(high, 10));
	CHECK_OK(XHintPriority(low, 1));
	CHECK_OK(XQueueBeginScope(high));
	CHECK_OK(XQueueBeginScope(high));          /* nested: counted */
	CHECK(t_wait_for(suspended, &low, 10000)); /* the scheduler saw the scope */
	atomic_store(&g_low_ran, 0);
	t_submit_fn(low, low_fn, NULL);
	t_sleep_us(50000);
	CHECK(atomic_load(&g_low_ran) == 0);
	CHECK_OK(XQueueEndScope(high));
	t_sleep_us(50000);
	CHECK(atomic_load(&g_low_ran) == 0); /* one scope is still open */
	CHECK_OK(XQueueEndScope(high));
	int want = 1;
	CHECK(t_wait_for(low_done, &want, 10000));
	CHECK_RES(XQueueEndScope(high), kXSchedErrorNotAllowed);
	CHECK_OK(XQueueWaitAll(low));
	CHECK_OK(XQueueDestroy(high));
	CHECK_OK(XQueueDestroy(low));
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(HwQueueDestroy(hl));
}

/* ---- run gate checks ---- */

static atomic_bool g_after_ran;

static XResult after_fn(void *data)
{
	(void)data;
	atomic_store(&g_after_ran, true);
	return kXSchedSuccess;
}

static bool after_ran(void *arg)
{
	(void)arg;
	return atomic_load(&g_after_ran);
}

static bool first_done(void *arg)
{
	return t_stats(*(XQueueHandle *)arg).completed >= 1;
}

/* At Lv1 a command already enqueued runs even while its XQueue is suspended; with a gate
 * check in front of it, it waits for the resume. */
static void test_gate_check(void)
{
	HwQueueHandle h = new_hwq();
	XQueueHandle xq = new_xq(h, kPreemptLevelBlock);
	atomic_store(&g_latch, false);
	atomic_store(&g_after_ran, false);
	t_submit_fn(xq, latch_fn, NULL);
	CHECK_OK(XQueueEnqueueGateCheck(xq));
	t_submit_fn(xq, after_fn, NULL);
	CHECK(t_stats(xq).in_flight == 2); /* both enqueued (Lv1) */
	CHECK_OK(XQueueSuspend(xq, kQueueSuspendFlagNone));
	atomic_store(&g_latch, true);
	CHECK(t_wait_for(first_done, &xq, 10000));
	t_sleep_us(50000);
	CHECK(!atomic_load(&g_after_ran));
	CHECK_OK(XQueueResume(xq, kQueueResumeFlagNone));
	CHECK(t_wait_for(after_ran, NULL, 10000));
	CHECK_OK(XQueueWaitAll(xq));
	/* A check while running passes at once. */
	atomic_store(&g_after_ran, false);
	CHECK_OK(XQueueEnqueueGateCheck(xq));
	t_submit_fn(xq, after_fn, NULL);
	CHECK_OK(XQueueWaitAll(xq));
	CHECK(atomic_load(&g_after_ran));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(h));
}

int main(void)
{
	/* HPF suspends lower XQueues only with a co-run budget of 0 (else they co-run within
	 * it, test_corun.c): this test checks the suspensions. */
	CHECK(setenv("XSCHED_CORUN_US", "0", 1) == 0);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	test_order();
	test_blocks_while_suspended(kPreemptLevelBlock, false);
	test_blocks_while_suspended(kPreemptLevelDeactivate, false);
	test_blocks_while_suspended(kPreemptLevelBlock, true);
	test_blocks_while_suspended(kPreemptLevelDeactivate, true);
	test_blocks_on_window();
	test_destroy_while_waiting();
	test_errors_and_nesting();
	test_scope_holds_lower();
	test_gate_check();
	return 0;
}
