/* Issue 22, a hang the randomized stress found: XQueueDestroy of an XQueue whose running
 * host function waits for a lower XQueue that the scheduler holds.
 *
 * high (priority 10) has a scope open: HPF holds mid (5) and low (0). mid's host function
 * H, once released, launches inline on (or waits for) low. Another thread destroys mid
 * meanwhile: the destroy drains mid whatever the scheduler says, so H runs, but low ranked
 * only as its lender mid, and mid counted as suspended by HPF although its drain runs:
 * low stayed held, H never returned, nor did XQueueDestroy. Now a lender being destroyed
 * counts as running, and low runs with it.
 *
 * Cases: XQueueLaunchInline and XQueueWait, co-run budget 0 and 500 us. Fails (not hangs)
 * when XQueueDestroy has not returned 3 s after H's release. */
#include "hang_util.h"

static XQueueHandle g_low, g_mid;
static atomic_bool g_release;
static atomic_int g_calls;
static XResult g_res = kXSchedErrorUnknown;
static XResult g_destroy = kXSchedErrorUnknown;

static XResult inline_fn(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	atomic_fetch_add(&g_calls, 1);
	return kXSchedSuccess;
}

static XResult mid_inline_fn(void *data)
{
	(void)data;
	h_block_fn(&g_release);
	g_res = XQueueLaunchInline(g_low, inline_fn, NULL);
	return kXSchedSuccess;
}

static XResult mid_wait_fn(void *data)
{
	(void)data;
	h_block_fn(&g_release);
	HwCommandHandle c = h_submit(g_low, h_nop_fn, NULL);
	g_res = XQueueWait(g_low, c);
	CHECK_OK(HwCommandDestroy(c));
	atomic_fetch_add(&g_calls, 1);
	return kXSchedSuccess;
}

static void *destroy_mid(void *arg)
{
	(void)arg;
	g_destroy = XQueueDestroy(g_mid);
	return NULL;
}

static void run_case(bool wait, int64_t corun_us)
{
	char what[160];
	snprintf(what, sizeof(what),
		 "XQueueDestroy of mid while its host function %s low, co-run budget %lld us",
		 wait ? "waits for" : "launches inline on", (long long)corun_us);
	CHECK_OK(XHintCorunBudget(corun_us));
	h_tiers t;
	h_tiers_open(&t);
	g_low = t.low;
	g_mid = t.mid;
	atomic_store(&g_calls, 0);
	atomic_store(&g_release, false);
	g_res = g_destroy = kXSchedErrorUnknown;

	HwCommandHandle h = h_submit(t.mid, wait ? mid_wait_fn : mid_inline_fn, NULL);
	h_wait_field(t.mid, H_RUNNING, true); /* H runs (nothing above mid has work yet) */
	CHECK_OK(XQueueBeginScope(t.high));   /* high has work from now on */
	h_wait_field(t.mid, H_LIMITED, true);
	h_call call;
	h_start(&call, destroy_mid, NULL);
	t_sleep_us(20000); /* the destroy drains: it waits for H */
	CHECK(!atomic_load(&call.done));
	atomic_store(&g_release, true);
	h_finish(&call, 3000, what);
	CHECK_OK(g_destroy);
	CHECK_OK(g_res);
	CHECK(atomic_load(&g_calls) == 1);
	CHECK_OK(HwCommandDestroy(h));
	CHECK_OK(XQueueEndScope(t.high));
	CHECK_OK(XQueueWaitAll(t.low));
	t.mid = 0; /* destroyed above */
	h_tiers_close(&t);
	printf("ok: %s\n", what);
}

int main(void)
{
	h_watchdog(60, "XQueueDestroy of a queue whose host function waits for a held queue");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	for (int wait = 0; wait < 2; wait++) {
		run_case(wait, 0);
		run_case(wait, 500);
	}
	CHECK_OK(XSchedShutdown());
	return 0;
}
