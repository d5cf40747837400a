/* Stall release on the host backend (preempt/device.c).
 *
 * A host function of the high-priority XQueue waits for something that only a command of
 * the low-priority XQueue provides, without telling the library (as a CUDA module load
 * waits for every stream): under HPF at Lv2 the low command sits enqueued behind its
 * counter while the high queue is busy, so nothing would ever end the wait.
 * 1. With XSCHED_STALL_RELEASE_US=50000 the progress thread commits the held command
 *    after about 50 ms without progress: the high function sees it run, no earlier than
 *    the limit (so it was held), and both queues complete.
 * 2. With a limit of 2 s, a high function that gives up after 30 ms finishes first: the
 *    low command runs only after it (no release within the limit; HPF order kept).
 * 3. The release is a trace event ("stall release") on the low queue's track.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static atomic_bool g_low_ran;
static atomic_llong g_low_at_us, g_high_end_us;
static int64_t g_give_up_us; /* how long the high function waits for the low command */
static bool g_seen;          /* the high function saw the low command run */
static int64_t g_waited_us;

static XResult low_fn(void *data)
{
	(void)data;
	atomic_store(&g_low_at_us, t_now_us());
	atomic_store(&g_low_ran, true);
	return kXSchedSuccess;
}

static XResult high_fn(void *data)
{
	(void)data;
	int64_t t0 = t_now_us();
	while (!atomic_load(&g_low_ran) && t_now_us() - t0 < g_give_up_us)
		t_sleep_us(500);
	g_seen = atomic_load(&g_low_ran);
	g_waited_us = t_now_us() - t0;
	atomic_store(&g_high_end_us, t_now_us());
	return kXSchedSuccess;
}

/* Run the pair once; the limit is read from the environment at the first XQueue. */
static void run_pair(const char *limit_us, int64_t give_up_us)
{
	setenv("XSCHED_STALL_RELEASE_US", limit_us, 1);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	atomic_store(&g_low_ran, false);
	g_give_up_us = give_up_us;
	g_seen = false;
	HwQueueHandle hl, hh;
	XQueueHandle low, high;
	CHECK_OK(HostQueueCreate(&hl));
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(XQueueCreate(&low, hl, kPreemptLevelDeactivate, 0));
	CHECK_OK(XQueueCreate(&high, hh, kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(low, 0));
	CHECK_OK(XHintPriority(high, 10));
	t_sleep_us(10000);
	t_submit_fn(high, high_fn, NULL);
	t_sleep_us(5000); /* high is busy: low is suspended, its commits held */
	t_submit_fn(low, low_fn, NULL);
	CHECK_OK(XQueueWaitAll(high));
	CHECK_OK(XQueueWaitAll(low));
	CHECK(atomic_load(&g_low_ran));
	CHECK_OK(XQueueDestroy(low));
	CHECK_OK(XQueueDestroy(high));
	CHECK_OK(HwQueueDestroy(hl));
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(XSchedShutdown()); /* writes the trace; the next run reads the environment */
}

static bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

int main(void)
{
	char trace[] = "/tmp/xs_test_stall_XXXXXX";
	int fd = mkstemp(trace);
	CHECK(fd >= 0);
	CHECK_OK(XSchedTraceStart(trace));

	/* 1. Released after the limit. */
	run_pair("50000", 5000000);
	CHECK(g_seen);
	CHECK(g_waited_us >= 40000); /* held until the limit (less the 5 ms before submit) */
	CHECK(g_waited_us < 4000000);
	CHECK(file_has(trace, "\"stall release\""));

	/* 2. Within the limit nothing is released: the low command runs after the high one. */
	CHECK_OK(XSchedTraceStart(trace));
	run_pair("2000000", 30000);
	CHECK(!g_seen);
	CHECK(atomic_load(&g_low_at_us) >= atomic_load(&g_high_end_us));
	CHECK(!file_has(trace, "\"stall release\""));

	unlink(trace);
	return 0;
}
