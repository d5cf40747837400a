/* A run gate check (XQueueEnqueueGateCheck) and XQueueSuspend(SyncHwQueue) on one Lv1
 * XQueue. A synchronous suspension closes the run gate and waits for what was enqueued;
 * a command behind a check stops there and never completes while the gate is closed, so
 * the call must not wait for it: it refuses (NotSupported, the XQueue not suspended)
 * while commands enqueued behind a check are in flight, and suspends as usual when none
 * is. Fails (not hangs) when the call has not returned 3 s later. */
#include "hang_util.h"

static XQueueHandle g_xq;
static atomic_bool g_release;
static XResult g_res;

static void *sync_suspend(void *arg)
{
	(void)arg;
	g_res = XQueueSuspend(g_xq, kQueueSuspendFlagSyncHwQueue);
	return NULL;
}

int main(void)
{
	h_watchdog(30, "XQueueSuspend(SyncHwQueue) with a run gate check");
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelBlock, 0));

	/* Nothing behind a check yet: a synchronous suspension waits for the running
	 * command and succeeds. */
	atomic_store(&g_release, false);
	HwCommandHandle c0 = h_submit(g_xq, h_block_fn, &g_release);
	h_wait_field(g_xq, H_RUNNING, true);
	h_call call;
	h_start(&call, sync_suspend, NULL);
	t_sleep_us(20000);
	CHECK(!atomic_load(&call.done)); /* it waits for c0 */
	atomic_store(&g_release, true);
	h_finish(&call, 3000, "SyncHwQueue with no gate check in the way");
	CHECK_OK(g_res);
	CHECK(t_stats(g_xq).completed == 1);
	CHECK_OK(XQueueResume(g_xq, 0));

	/* A command running, a check behind it, two commands behind the check. */
	atomic_store(&g_release, false);
	HwCommandHandle c1 = h_submit(g_xq, h_block_fn, &g_release);
	CHECK_OK(XQueueEnqueueGateCheck(g_xq));
	HwCommandHandle c2 = h_submit(g_xq, h_nop_fn, NULL);
	HwCommandHandle c3 = h_submit(g_xq, h_nop_fn, NULL);
	h_start(&call, sync_suspend, NULL);
	h_finish(&call, 3000,
		 "XQueueSuspend(SyncHwQueue) waits for commands stopped at a closed run gate "
		 "check");
	CHECK(g_res == kXSchedErrorNotSupported);
	atomic_store(&g_release, true);
	CHECK_OK(XQueueWait(g_xq, c3)); /* not suspended: everything runs */
	CHECK(t_stats(g_xq).completed == 4);

	/* Everything behind the check has completed: nothing can stop there any more. */
	h_start(&call, sync_suspend, NULL);
	h_finish(&call, 3000, "SyncHwQueue once the commands behind the check completed");
	CHECK_OK(g_res);
	HwCommandHandle c4 = h_submit(g_xq, h_nop_fn, NULL);
	t_sleep_us(20000);
	CHECK(t_stats(g_xq).completed == 4); /* suspended */
	CHECK_OK(XQueueResume(g_xq, 0));
	CHECK_OK(XQueueWait(g_xq, c4));

	HwCommandHandle cmds[] = {c0, c1, c2, c3, c4};
	for (int i = 0; i < 5; i++)
		CHECK_OK(HwCommandDestroy(cmds[i]));
	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_OK(XSchedShutdown());
	printf("SyncHwQueue: waits with no check in the way, refuses with commands behind one\n");
	return 0;
}
