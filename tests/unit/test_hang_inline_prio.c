/* Issue 22, item 4: XQueueLaunchInline from a host function of a high-priority XQueue on a
 * lower-priority Lv1 XQueue. The host function keeps high busy, so HPF suspends low (and
 * the budget's hold stops its commits) while the inline command waits to be enqueued:
 * priority inheritance must cover this wait as it covers XQueueWait. Fails (not hangs)
 * when the host function has not returned 3 s later. */
#include "hang_util.h"

static XQueueHandle g_low;
static atomic_int g_calls;
static XResult g_inline_res = kXSchedErrorUnknown;

static XResult inline_fn(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	atomic_fetch_add(&g_calls, 1);
	return kXSchedSuccess;
}

static XResult high_fn(void *data)
{
	(void)data;
	g_inline_res = XQueueLaunchInline(g_low, inline_fn, NULL);
	return kXSchedSuccess;
}

int main(void)
{
	h_watchdog(20, "item 4 (XQueueLaunchInline from a high-priority host function)");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	struct t_pair p;
	t_pair_open(&p, kPreemptLevelBlock);
	g_low = p.low;
	h_wait_field(p.low, H_LIMITED, true);
	HwCommandHandle c = h_submit(p.high, high_fn, NULL);
	int64_t end = t_now_us() + 3000000;
	while (t_stats(p.high).completed < 1)
		if (t_now_us() > end)
			h_hang("item 4: XQueueLaunchInline on a lower-priority Lv1 XQueue from a "
			       "high-priority host function blocks for ever");
		else
			t_sleep_us(1000);
	CHECK_OK(XQueueWait(p.high, c));
	CHECK_OK(g_inline_res);
	CHECK(atomic_load(&g_calls) == 1);
	CHECK_OK(HwCommandDestroy(c));
	CHECK_OK(XQueueWaitAll(p.low));
	t_pair_close(&p);
	CHECK_OK(XSchedShutdown());
	printf("item 4: the inline launch returned\n");
	return 0;
}
