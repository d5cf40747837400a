/* Issue 22, item 3: XQueueDestroy of a top-priority XQueue with a scope still open. The
 * destroy succeeds; the queue must stop counting as busy, so that lower-priority Lv1
 * XQueues (held by HPF's budget hold while a top queue has work) run again. A mid queue
 * (priority 5, idle) keeps low limited after high is gone. Fails (not hangs) when low's
 * command has not completed 3 s later. */
#include "hang_util.h"

int main(void)
{
	h_watchdog(20, "item 3 (XQueueDestroy with a scope open)");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	h_tiers t;
	h_tiers_open(&t);
	XQueueHandle high = t.high, low = t.low;
	h_wait_field(low, H_LIMITED, true);
	CHECK_OK(XQueueBeginScope(high));
	CHECK_OK(XQueueDestroy(high)); /* the scope is never closed */
	t.high = 0;
	HwCommandHandle c = h_submit(low, h_nop_fn, NULL);
	int64_t end = t_now_us() + 3000000;
	while (t_stats(low).completed < 1)
		if (t_now_us() > end)
			h_hang("item 3: the destroyed top-priority XQueue's open scope still holds "
			       "the lower-priority queue");
		else
			t_sleep_us(1000);
	CHECK_OK(XQueueWait(low, c));
	CHECK_OK(HwCommandDestroy(c));
	h_tiers_close(&t);
	CHECK_OK(XSchedShutdown());
	printf("item 3: low ran after high was destroyed with a scope open\n");
	return 0;
}
