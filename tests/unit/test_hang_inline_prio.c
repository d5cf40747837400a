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
	h_reach_set(t.low, wait, NULL);
	if (mid_ready)
		CHECK_OK(XQueueBeginScope(t.mid)); /* mid is ready from now on */
	h_wait_field(t.low, H_LIMITED, true);
	HwCommandHandle c = h_submit(t.high, h_reach_fn, NULL);
	h_wait_completed(t.high, 1, what);
	CHECK_OK(XQueueWait(t.high, c));
	CHECK_OK(h_reach()->res);
	CHECK(atomic_load(&h_reach()->calls) == 1);
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
