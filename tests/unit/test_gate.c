/* Lv2 on the host backend: a closed gate stops the HwQueue at a command boundary even with
 * a deep in-flight window; reopening resumes in order and every command runs exactly
 * once; changing the level while suspended opens or closes the gate; destroying a
 * deactivated XQueue drains it. Application-managed scheduling, so only this test
 * suspends. */
#include "check.h"

#define N 240

static atomic_int g_next;    /* position in g_log of the next command to run */
static atomic_int g_runs[N]; /* times each command ran */
static int g_log[N];         /* command indices in the order they ran */
static int g_idx[N];
static uint64_t g_base; /* commands the XQueue completed before the current stream */

static XResult step(void *data)
{
	int i = *(int *)data;
	int pos = atomic_fetch_add(&g_next, 1);
	CHECK(pos < N);
	g_log[pos] = i;
	atomic_fetch_add(&g_runs[i], 1);
	t_sleep_us(500);
	return kXSchedSuccess;
}

static int ran(void)
{
	return atomic_load(&g_next);
}

/* The count of commands run stays put for @us microseconds. */
static bool still(int64_t us)
{
	int before = ran();
	t_sleep_us(us);
	return ran() == before;
}

/* Wait until the count stops moving for 3 ms (longer than a command); false after
 * @timeout_ms. */
static bool settle(int timeout_ms)
{
	int64_t end = t_now_us() + (int64_t)timeout_ms * 1000;
	while (t_now_us() < end)
		if (still(3000))
			return true;
	return false;
}

static void check_all_once_in_order(int n)
{
	CHECK(ran() == n);
	for (int i = 0; i < n; i++) {
		CHECK(g_log[i] == i);
		CHECK(atomic_load(&g_runs[i]) == 1);
	}
}

static void reset(void)
{
	atomic_store(&g_next, 0);
	for (int i = 0; i < N; i++) {
		atomic_store(&g_runs[i], 0);
		g_log[i] = -1;
	}
}

static bool ran_20(void *arg)
{
	(void)arg;
	return ran() >= 20;
}

static bool window_deep(void *arg)
{
	return t_stats(*(XQueueHandle *)arg).in_flight >= 32;
}

/* Suspend the Lv2 XQueue @xq while it runs; return the commands run by then. */
static int suspend_at_boundary(XQueueHandle xq)
{
	CHECK_OK(XQueueSuspend(xq, 0));
	int at = ran();
	/* At most the command running at the moment of the store finishes. */
	CHECK(settle(5000));
	int stopped = ran();
	CHECK(stopped >= at && stopped <= at + 1);
	XQueueStats st = t_stats(xq);
	CHECK(st.in_flight > 1); /* commands sit launched behind the gate, not run */
	CHECK(still(20000));
	CHECK(t_stats(xq).completed - g_base <= (uint64_t)stopped);
	return stopped;
}

int main(void)
{
	for (int i = 0; i < N; i++)
		g_idx[i] = i;
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	int64_t max;
	CHECK_OK(HwQueueGetMaxPreemptLevel(hwq, &max));
	CHECK(max == kPreemptLevelDeactivate);
	CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelInterrupt, 0), kXSchedErrorNotSupported);
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelDeactivate, 0));
	CHECK_RES(XQueueSetPreemptLevel(xq, kPreemptLevelInterrupt), kXSchedErrorNotSupported);
	int64_t level;
	CHECK_OK(XQueueGetPreemptLevel(xq, &level));
	CHECK(level == kPreemptLevelDeactivate);
	/* A deep window: at Lv2 the gate, not the window, bounds the suspension. */
	CHECK_OK(XQueueSetLaunchConfig(xq, 64, 8));

	/* Several suspend/resume cycles over one stream of commands. */
	reset();
	for (int i = 0; i < N; i++)
		t_submit_fn(xq, step, &g_idx[i]);
	CHECK(t_wait_for(ran_20, NULL, 10000));
	for (int cycle = 0; cycle < 3; cycle++) {
		CHECK(t_wait_for(window_deep, &xq, 10000));
		int stopped = suspend_at_boundary(xq);
		CHECK(stopped < N);
		CHECK_OK(XQueueResume(xq, 0));
		int64_t until = t_now_us() + 10000000;
		while (ran() < stopped + 10 && t_now_us() < until)
			t_sleep_us(100);
		CHECK(ran() >= stopped + 10);
	}
	CHECK_OK(XQueueWaitAll(xq));
	check_all_once_in_order(N);

	/* Suspended at Lv2, then lowered to Lv1: the gate opens, so what is in flight runs,
	 * but nothing new is launched. Raised again to Lv2 while suspended: the gate closes. */
	reset();
	g_base = t_stats(xq).completed;
	for (int i = 0; i < N; i++)
		t_submit_fn(xq, step, &g_idx[i]);
	CHECK(t_wait_for(ran_20, NULL, 10000));
	CHECK(t_wait_for(window_deep, &xq, 10000));
	suspend_at_boundary(xq);
	XQueueStats st = t_stats(xq);
	CHECK_OK(XQueueSetPreemptLevel(xq, kPreemptLevelBlock));
	CHECK_OK(XQueueSuspend(xq, kQueueSuspendFlagSyncHwQueue)); /* Lv1 now: waits */
	XQueueStats lv1 = t_stats(xq);
	CHECK(lv1.in_flight == 0);
	CHECK(lv1.launched == st.launched); /* nothing new launched while suspended */
	CHECK(ran() == (int)(st.launched - g_base));
	CHECK_OK(XQueueSetPreemptLevel(xq, kPreemptLevelDeactivate));
	CHECK_OK(XQueueResume(xq, 0));
	CHECK(t_wait_for(window_deep, &xq, 10000));
	suspend_at_boundary(xq);

	/* Destroying the deactivated XQueue drains it with the gate open: every command runs
	 * exactly once, in order. */
	CHECK_OK(XQueueDestroy(xq));
	check_all_once_in_order(N);

	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_OK(XSchedShutdown());
	return 0;
}
