/* HPF linger (XSCHED_HPF_LINGER_US, default 0): a high-priority queue that goes idle
 * keeps lower queues suspended for the linger time, so a task submitted right after the
 * previous one finds them still held; after the linger they run again. With a linger
 * shorter than the gap between tasks (the default, or 0) they are resumed between the
 * tasks. */
#include <stdlib.h>

#include "check.h"

static XQueueHandle g_lo, g_hi;

static bool lo_suspended(void *arg)
{
	(void)arg;
	return t_stats(g_lo).suspensions > 0;
}

static bool lo_running(void *arg)
{
	(void)arg;
	return t_stats(g_lo).suspended_ns > 0 && t_stats(g_lo).in_flight > 0;
}

/* Two high tasks 20 ms apart while the low queue is busy; returns how many times the low
 * queue was suspended in all. */
static uint64_t two_tasks(void)
{
	HwQueueHandle hl, hh;
	CHECK_OK(HostQueueCreate(&hl));
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(XQueueCreate(&g_lo, hl, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&g_hi, hh, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(g_hi, 10));
	CHECK_OK(XQueueSetLaunchConfig(g_lo, 1, 1));
	int64_t us = 1000;
	for (int i = 0; i < 400; i++)
		t_submit_fn(g_lo, t_sleep_fn, &us);
	int64_t task_us = 5000;
	t_submit_fn(g_hi, t_sleep_fn, &task_us);
	CHECK(t_wait_for(lo_suspended, NULL, 10000));
	CHECK_OK(XQueueWaitAll(g_hi));
	t_sleep_us(20000);
	t_submit_fn(g_hi, t_sleep_fn, &task_us);
	CHECK_OK(XQueueWaitAll(g_hi));
	/* Either way the low queue runs again afterwards and loses nothing. */
	CHECK(t_wait_for(lo_running, NULL, 10000));
	CHECK_OK(XQueueWaitAll(g_lo));
	XQueueStats st = t_stats(g_lo);
	CHECK(st.completed == 400 && st.failed == 0);
	CHECK_OK(XQueueDestroy(g_hi));
	CHECK_OK(XQueueDestroy(g_lo));
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(HwQueueDestroy(hl));
	CHECK_OK(XSchedShutdown());
	return st.suspensions;
}

int main(void)
{
	/* HPF suspends lower XQueues only with a co-run budget of 0 (else they co-run within
	 * it, test_corun.c): this test checks the suspensions. */
	CHECK(setenv("XSCHED_CORUN_US", "0", 1) == 0);
	CHECK(setenv("XSCHED_HPF_LINGER_US", "0", 1) == 0);
	CHECK(two_tasks() >= 2); /* resumed between the tasks, suspended again */
	CHECK(unsetenv("XSCHED_HPF_LINGER_US") == 0);
	CHECK(two_tasks() >= 2); /* the default (none) holds nothing across the 20 ms gap */
	CHECK(setenv("XSCHED_HPF_LINGER_US", "2000000", 1) == 0); /* 2 s >> the 20 ms gap */
	CHECK(two_tasks() == 1);                                  /* held across the gap */
	return 0;
}
