/* Issue 22, item 4 and its three-tier form: a host function of a high-priority XQueue
 * launches inline on (or waits for) a lower-priority Lv1 XQueue.
 *
 * Two tiers: the host function keeps high busy, so HPF suspends low (and the budget's hold
 * stops its commits) while the inline command waits to be enqueued.
 * Three tiers: besides, a middle XQueue stays ready (an open scope) and would hold low for
 * as long as it does. Not counting the waiting high queue is not enough here: low must run
 * with the priority of the queue that waits for it (priority inheritance).
 *
 * Each case runs with a co-run budget of 0 (HPF suspends low) and of 500 us (the budget's
 * hold), and with XQueueLaunchInline and XQueueWait. Fails (not hangs) when the host
 * function has not returned 3 s later. */
#include "hang_util.h"

static XQueueHandle g_low;
static atomic_int g_calls;
static XResult g_res = kXSchedErrorUnknown;

static XResult inline_fn(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	atomic_fetch_add(&g_calls, 1);
	return kXSchedSuccess;
}

static XResult high_inline_fn(void *data)
{
	(void)data;
	g_res = XQueueLaunchInline(g_low, inline_fn, NULL);
	return kXSchedSuccess;
}

/* Submit a command to low and wait for it, from high's host function. */
static XResult high_wait_fn(void *data)
{
	(void)data;
	HwCommandHandle c = h_submit(g_low, h_nop_fn, NULL);
	g_res = XQueueWait(g_low, c);
	CHECK_OK(HwCommandDestroy(c));
	atomic_fetch_add(&g_calls, 1);
	return kXSchedSuccess;
}

static void run_case(bool mid_ready, bool wait, int64_t corun_us)
{
	char what[160];
	snprintf(what, sizeof(what),
		 "%s from a high-priority host function onto low, %s, co-run "
		 "budget %lld us",
		 wait ? "XQueueWait" : "XQueueLaunchInline",
		 mid_ready ? "a middle queue ready" : "two tiers", (long long)corun_us);
	CHECK_OK(XHintCorunBudget(corun_us));
	h_tiers t;
	h_tiers_open(&t);
	g_low = t.low;
	atomic_store(&g_calls, 0);
	g_res = kXSchedErrorUnknown;
	if (mid_ready)
		CHECK_OK(XQueueBeginScope(t.mid)); /* mid is ready from now on */
	h_wait_field(t.low, H_LIMITED, true);
	HwCommandHandle c = h_submit(t.high, wait ? high_wait_fn : high_inline_fn, NULL);
	int64_t end = t_now_us() + 3000000;
	while (t_stats(t.high).completed < 1)
		if (t_now_us() > end)
			h_hang(what);
		else
			t_sleep_us(1000);
	CHECK_OK(XQueueWait(t.high, c));
	CHECK_OK(g_res);
	CHECK(atomic_load(&g_calls) == 1);
	CHECK_OK(HwCommandDestroy(c));
	if (mid_ready)
		CHECK_OK(XQueueEndScope(t.mid));
	CHECK_OK(XQueueWaitAll(t.low));
	h_tiers_close(&t);
	printf("ok: %s\n", what);
}

int main(void)
{
	h_watchdog(60, "item 4 (waits of a high-priority host function on a lower queue)");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	for (int mid = 0; mid < 2; mid++)
		for (int wait = 0; wait < 2; wait++) {
			run_case(mid, wait, 0);
			run_case(mid, wait, 500);
		}
	CHECK_OK(XSchedShutdown());
	return 0;
}
