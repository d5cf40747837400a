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

static XQueueHandle g_mid;
static XResult g_destroy = kXSchedErrorUnknown;

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
	g_mid = t.mid;
	g_destroy = kXSchedErrorUnknown;
	atomic_bool release = false;
	h_reach_set(t.low, wait, &release); /* H: once released, reaches low */

	HwCommandHandle h = h_submit(t.mid, h_reach_fn, NULL);
	h_wait_field(t.mid, H_RUNNING, true); /* H runs (nothing above mid has work yet) */
	CHECK_OK(XQueueBeginScope(t.high));   /* high has work from now on */
	h_wait_field(t.mid, H_LIMITED, true);
	h_call call;
	h_start(&call, destroy_mid, NULL);
	t_sleep_us(20000); /* the destroy drains: it waits for H */
	CHECK(!atomic_load(&call.done));
	atomic_store(&release, true);
	h_finish(&call, 3000, what);
	CHECK_OK(g_destroy);
	CHECK_OK(h_reach()->res);
	CHECK(atomic_load(&h_reach()->calls) == 1);
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
