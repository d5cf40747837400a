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
 * queue was suspended in all, *@host what the host gave the gap between them. */
static uint64_t two_tasks(t_host *host)
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
	CHECKF(t_wait_for(lo_suspended, NULL, 10000), "the low queue suspended within 10 s of the "
						      "high task; measured: not suspended");
	CHECK_OK(XQueueWaitAll(g_hi));
	t_host_reset();
	t_sleep_us(20000);
	*host = t_host_get();
	t_submit_fn(g_hi, t_sleep_fn, &task_us);
	CHECK_OK(XQueueWaitAll(g_hi));
	/* Either way the low queue runs again afterwards and loses nothing. */
	CHECKF(t_wait_for(lo_running, NULL, 10000), "the low queue running again within 10 s; "
						    "measured: not running");
	CHECK_OK(XQueueWaitAll(g_lo));
	XQueueStats st = t_stats(g_lo);
	CHECKF(st.completed == 400 && st.failed == 0,
	       "all 400 low commands completed, none "
	       "failed; measured %llu completed, %llu failed",
	       (unsigned long long)st.completed, (unsigned long long)st.failed);
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
	/* Resumed between the tasks and suspended again: the scheduler's pass must run within
	 * the 20 ms gap: a timing bound (check.h, CHECK_TIMED). */
	t_host host;
	CHECK(setenv("XSCHED_HPF_LINGER_US", "0", 1) == 0);
	uint64_t n = two_tasks(&host);
	CHECK_TIMED(&host, n >= 2,
		    "linger 0: the low queue suspended again at the second task (at "
		    "least 2 suspensions); measured %llu",
		    (unsigned long long)n);
	CHECK(unsetenv("XSCHED_HPF_LINGER_US") == 0);
	n = two_tasks(&host); /* the default (none) holds nothing across the 20 ms gap */
	CHECK_TIMED(&host, n >= 2,
		    "the default linger (none): at least 2 suspensions; measured %llu",
		    (unsigned long long)n);
	/* Held across the gap, whatever the host: 2 s >> the 20 ms gap. */
	CHECK(setenv("XSCHED_HPF_LINGER_US", "2000000", 1) == 0);
	n = two_tasks(&host);
	CHECKF(n == 1,
	       "a 2 s linger holds the low queue across the 20 ms gap: 1 suspension; "
	       "measured %llu",
	       (unsigned long long)n);
	return t_exit();
}
