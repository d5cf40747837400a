/* Progressive launching (Lv1): the in-flight window bounds what reaches the HwQueue,
 * suspension stops launching and resumption continues in order, and SyncHwQueue waits
 * for the in-flight commands. Application-managed scheduling, so only this test
 * suspends. */
#include "check.h"

static XQueueHandle g_xq;
static int64_t g_threshold;
static atomic_int g_ran;
static atomic_int g_max_window;

/* Runs on the executor: nothing beyond the window can have been launched. */
static XResult probe(void *data)
{
	(void)data;
	XQueueStats st = t_stats(g_xq);
	CHECK(st.in_flight >= 1);
	CHECK((int64_t)st.in_flight <= g_threshold);
	int w = (int)st.in_flight, m = atomic_load(&g_max_window);
	while (w > m && !atomic_compare_exchange_weak(&g_max_window, &m, w))
		;
	atomic_fetch_add(&g_ran, 1);
	t_sleep_us(200);
	return kXSchedSuccess;
}

static bool all_launched_or_done(void *arg)
{
	(void)arg;
	XQueueStats st = t_stats(g_xq);
	return st.pending == 0 || st.in_flight == (uint64_t)g_threshold;
}

static bool window_full(void *arg)
{
	(void)arg;
	return t_stats(g_xq).in_flight == (uint64_t)g_threshold;
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelBlock, 0));

	/* The window bound holds for several configurations. */
	int64_t configs[][2] = {{1, 1}, {4, 2}, {8, 8}, {5, 3}};
	int total = 0;
	for (size_t c = 0; c < sizeof(configs) / sizeof(configs[0]); c++) {
		g_threshold = configs[c][0];
		CHECK_OK(XQueueSetLaunchConfig(g_xq, configs[c][0], configs[c][1]));
		atomic_store(&g_max_window, 0);
		for (int i = 0; i < 40; i++)
			t_submit_fn(g_xq, probe, NULL);
		total += 40;
		/* While the queue is busy, the window fills up to the threshold and no more. */
		CHECK(t_wait_for(all_launched_or_done, NULL, 10000));
		CHECK((int64_t)t_stats(g_xq).in_flight <= g_threshold);
		CHECK_OK(XQueueWaitAll(g_xq));
		CHECK(atomic_load(&g_ran) == total);
		CHECK(atomic_load(&g_max_window) <= g_threshold);
	}

	/* Suspend: launching stops at once; what was in flight completes; nothing more runs
	 * until resume; then everything runs once, in order. */
	g_threshold = 4;
	CHECK_OK(XQueueSetLaunchConfig(g_xq, 4, 2));
	int64_t slow = 20000; /* 20 ms per command */
	for (int i = 0; i < 4; i++)
		t_submit_fn(g_xq, t_sleep_fn, &slow);
	CHECK(t_wait_for(window_full, NULL, 10000));
	CHECK_OK(XQueueSuspend(g_xq, 0));
	XQueueStats before = t_stats(g_xq);
	for (int i = 0; i < 20; i++)
		t_submit_fn(g_xq, probe, NULL);
	CHECK_OK(XQueueSuspend(g_xq, kQueueSuspendFlagSyncHwQueue)); /* re-entrant; waits */
	XQueueStats mid = t_stats(g_xq);
	CHECK(mid.in_flight == 0);
	CHECK(mid.launched == before.launched);
	CHECK(mid.pending == 20);
	CHECK(mid.suspensions == 1);
	t_sleep_us(30000);
	XQueueStats later = t_stats(g_xq);
	CHECK(later.launched == before.launched); /* still nothing launched while suspended */
	CHECK(later.suspended_ns >= 30000000ull);
	CHECK(atomic_load(&g_ran) == total);
	CHECK_OK(XQueueResume(g_xq, 0));
	CHECK_OK(XQueueResume(g_xq, 0)); /* re-entrant */
	CHECK_OK(XQueueWaitAll(g_xq));
	CHECK(atomic_load(&g_ran) == total + 20);
	XQueueStats end = t_stats(g_xq);
	CHECK(end.submitted == end.completed && end.failed == 0);

	/* Growing the window while commands wait lets them launch. */
	CHECK_OK(XQueueSetLaunchConfig(g_xq, 1, 1));
	for (int i = 0; i < 8; i++)
		t_submit_fn(g_xq, t_sleep_fn, &slow);
	CHECK_OK(XQueueSetLaunchConfig(g_xq, 16, 8));
	CHECK_OK(XQueueWaitAll(g_xq));

	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_OK(XSchedShutdown());
	return 0;
}
