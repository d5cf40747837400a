/* Scheduler configuration from the environment, read at the first XQueueCreate after
 * start-up or XSchedShutdown: XSCHED_SCHEDULER=APP runs no scheduler (nothing is suspended
 * for priority), XSCHED_POLICY=hpf selects HPF (case-insensitive). */
#include <stdlib.h>

#include "check.h"

static XQueueHandle g_lo;

static bool lo_suspended(void *arg)
{
	(void)arg;
	return t_stats(g_lo).suspensions > 0;
}

/* Runs a high-priority command while the low queue is busy; returns whether the low
 * queue was suspended by the time the high command ran. */
static bool run_pair(void)
{
	HwQueueHandle hl, hh;
	XQueueHandle hi;
	CHECK_OK(HostQueueCreate(&hl));
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(XQueueCreate(&g_lo, hl, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&hi, hh, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(hi, 10));
	int64_t us = 1000;
	for (int i = 0; i < 50; i++)
		t_submit_fn(g_lo, t_sleep_fn, &us);
	int64_t long_us = 300000;
	t_submit_fn(hi, t_sleep_fn, &long_us);
	bool suspended = t_wait_for(lo_suspended, NULL, 250);
	CHECK_OK(XQueueWaitAll(hi));
	CHECK_OK(XQueueWaitAll(g_lo));
	CHECK_OK(XQueueDestroy(hi));
	CHECK_OK(XQueueDestroy(g_lo));
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(HwQueueDestroy(hl));
	CHECK_OK(XSchedShutdown());
	return suspended;
}

int main(void)
{
	/* HPF suspends lower XQueues only with a co-run budget of 0 (else they co-run within
	 * it, test_corun.c): this test checks the suspensions. */
	CHECK(setenv("XSCHED_CORUN_US", "0", 1) == 0);
	CHECK(setenv("XSCHED_SCHEDULER", "APP", 1) == 0);
	CHECK(!run_pair());
	CHECK(unsetenv("XSCHED_SCHEDULER") == 0);
	CHECK(setenv("XSCHED_POLICY", "hpf", 1) == 0);
	CHECK(run_pair());
	CHECK(unsetenv("XSCHED_POLICY") == 0);
	/* The default is the local scheduler with HPF as well. */
	CHECK(run_pair());
	return 0;
}
