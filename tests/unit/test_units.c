/* Explicit units (XQueueBeginUnit/XQueueEndUnit) on the host backend: what the calls do,
 * counted, not timed.
 * - XQueueEndUnit does not wait for the device: a unit of 48 commands of 1 ms on a window
 *   of 16 ends its call with most of them still incomplete; and it returns while the
 *   XQueue is suspended by the application (XQueueSuspend), the unit ending once the queue
 *   runs again (a thread that suspends, runs a unit and then resumes would wait for itself
 *   if it waited).
 * - A unit ended from the queue's own host function is measured like any other, and the
 *   units after it too (a unit left open in the measured units' FIFO stopped every later
 *   measurement).
 * - Units in flight together (the next begun before the last one completed, up to the
 *   FIFO's 8) are each measured: the controller looks after 64 of them.
 * - Misuse: an end without a begin, a second begin: kXSchedErrorNotAllowed; a unit on a
 *   closed XQueue: kXSchedErrorNotFound. A watchdog turns a hang into a failure. */
#include "hang_util.h"

enum { CMD_US = 1000 };

static XResult sleep_fn(void *data)
{
	t_sleep_us((int64_t)(intptr_t)data);
	return kXSchedSuccess;
}

static XQueueHandle g_xq;

/* A host function of the queue itself that ends the unit its submitter began. */
static XResult end_unit_fn(void *data)
{
	(void)data;
	CHECK_OK(XQueueEndUnit(g_xq));
	return kXSchedSuccess;
}

static void submit(XQueueHandle xq, HostFunction fn, int64_t us)
{
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, fn, (void *)(intptr_t)us));
	CHECK_OK(XQueueSubmit(xq, c));
	CHECK_OK(HwCommandDestroy(c));
}

static void open_queue(HwQueueHandle *hwq, XQueueHandle *xq)
{
	CHECK_OK(HostQueueCreate(hwq));
	CHECK_OK(XQueueCreate(xq, *hwq, kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(*xq, 2));
	CHECK_OK(XHintLatencyObjective(*xq, 2.0));
}

static void end_does_not_wait(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	open_queue(&hwq, &xq);
	CHECK_OK(XQueueSetLaunchConfig(xq, 16, 8));
	CHECK_OK(XQueueBeginUnit(xq));
	for (int i = 0; i < 48; i++)
		submit(xq, sleep_fn, CMD_US);
	CHECK_OK(XQueueEndUnit(xq));
	uint64_t done = t_stats(xq).completed;
	printf("a unit of 48 x 1 ms, window 16: %llu complete when XQueueEndUnit returned\n",
	       (unsigned long long)done);
	CHECKF(done < 48, "XQueueEndUnit returns before the unit's work completes; measured "
			  "all 48 complete at its return");
	CHECK_OK(XQueueWaitAll(xq));

	/* Suspended by the application: the end returns, the unit ends after the resume. */
	uint64_t before = t_stats(xq).completed; /* the 48 and the first unit's boundary */
	CHECK_OK(XQueueSuspend(xq, 0));
	CHECK_OK(XQueueBeginUnit(xq));
	submit(xq, sleep_fn, CMD_US);
	CHECK_OK(XQueueEndUnit(xq));
	CHECK_CMP(t_stats(xq).completed, ==, before);
	CHECK_OK(XQueueResume(xq, 0));
	CHECK_OK(XQueueWaitAll(xq));
	printf("suspended: XQueueEndUnit returned, the unit ended after the resume\n");
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

static void ended_from_own_command(void)
{
	HwQueueHandle hwq;
	open_queue(&hwq, &g_xq);
	/* One unit ended by its own host function... */
	CHECK_OK(XQueueBeginUnit(g_xq));
	submit(g_xq, sleep_fn, 200);
	submit(g_xq, end_unit_fn, 0);
	CHECK_OK(XQueueWaitAll(g_xq));
	uint64_t looks0 = t_stats(g_xq).objective_looks;
	/* ... and 200 ordinary ones after it: measured (64-unit windows: looks). */
	for (int i = 0; i < 200; i++) {
		CHECK_OK(XQueueBeginUnit(g_xq));
		submit(g_xq, sleep_fn, 100);
		CHECK_OK(XQueueEndUnit(g_xq));
		CHECK_OK(XQueueWaitAll(g_xq));
	}
	XQueueStats st = t_stats(g_xq);
	printf("a unit ended from its own host function, then 200: looks %llu -> %llu, alone "
	       "%llu ns\n",
	       (unsigned long long)looks0, (unsigned long long)st.objective_looks,
	       (unsigned long long)st.alone_unit_ns);
	CHECKF(st.objective_looks >= looks0 + 2,
	       "the units after it measured: at least 2 more looks in 200 units; measured %llu "
	       "-> %llu",
	       (unsigned long long)looks0, (unsigned long long)st.objective_looks);
	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

static void units_in_flight(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	open_queue(&hwq, &xq);
	for (int i = 0; i < 200; i++) {
		CHECK_OK(XQueueBeginUnit(xq));
		submit(xq, sleep_fn, 100);
		CHECK_OK(XQueueEndUnit(xq));
		if (i % 4 == 3)
			CHECK_OK(XQueueWaitAll(xq)); /* four units in flight at a time */
	}
	CHECK_OK(XQueueWaitAll(xq));
	XQueueStats st = t_stats(xq);
	printf("200 units, four in flight at a time: %llu looks\n",
	       (unsigned long long)st.objective_looks);
	CHECKF(st.objective_looks >= 2,
	       "units in flight measured: at least 2 looks in 200 "
	       "units; measured %llu",
	       (unsigned long long)st.objective_looks);
	/* Misuse. */
	CHECK_RES(XQueueEndUnit(xq), kXSchedErrorNotAllowed);
	CHECK_OK(XQueueBeginUnit(xq));
	CHECK_RES(XQueueBeginUnit(xq), kXSchedErrorNotAllowed);
	CHECK_OK(XQueueEndUnit(xq));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_RES(XQueueBeginUnit(xq), kXSchedErrorNotFound);
	CHECK_RES(XQueueEndUnit(xq), kXSchedErrorNotFound);
	CHECK_OK(HwQueueDestroy(hwq));
}

int main(void)
{
	h_watchdog(120, "explicit units (test_units)");
	end_does_not_wait();
	ended_from_own_command();
	units_in_flight();
	printf("ok\n");
	return 0;
}
