/* Issue 22, item 8: XQueueSuspend(SyncHwQueue) and a level change. An Lv2 XQueue has a
 * blocking command and 5 more enqueued (committed); it goes to Lv1; another thread calls
 * XQueueSuspend(SyncHwQueue), which waits for what was enqueued; the level goes back to Lv2
 * (the counter is lowered: the 5 stop behind it); the blocking command is released. The
 * suspend must return (Success once what it waits for is done, or an error), without a
 * resume. Application-managed scheduling. Fails (not hangs) after 3 s. */
#include "hang_util.h"

static atomic_bool g_release;
static XQueueHandle g_xq;
static XResult g_res = kXSchedErrorUnknown;

static void *suspend_sync(void *arg)
{
	(void)arg;
	g_res = XQueueSuspend(g_xq, kQueueSuspendFlagSyncHwQueue);
	return NULL;
}

int main(void)
{
	h_watchdog(20, "item 8 (XQueueSuspend(SyncHwQueue) and a level change)");
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelDeactivate, 0));
	HwCommandHandle b = h_submit(g_xq, h_block_fn, &g_release);
	for (int i = 0; i < 5; i++)
		t_submit_fn(g_xq, h_nop_fn, NULL);
	CHECK(t_stats(g_xq).launched == 6);
	CHECK_OK(XQueueSetPreemptLevel(g_xq, kPreemptLevelBlock));
	h_call s;
	h_start(&s, suspend_sync, NULL);
	t_sleep_us(50000); /* the suspend waits for the 6 enqueued commands */
	CHECK_OK(XQueueSetPreemptLevel(g_xq, kPreemptLevelDeactivate));
	atomic_store(&g_release, true);
	if (!t_wait_for(h_done_pred, &s, 3000))
		h_hang("item 8: XQueueSuspend(SyncHwQueue) waits for commands a level change put "
		       "back behind the counter");
	CHECK(pthread_join(s.thread, NULL) == 0);
	CHECK(g_res == kXSchedSuccess || g_res == kXSchedErrorNotAllowed ||
	      g_res == kXSchedErrorNotSupported);
	CHECK_OK(XQueueResume(g_xq, 0));
	CHECK_OK(XQueueWaitAll(g_xq));
	CHECK(t_stats(g_xq).completed == 6);
	CHECK_OK(HwCommandDestroy(b));
	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(hwq));
	printf("item 8: the synchronous suspend returned (%d)\n", (int)g_res);
	return 0;
}
