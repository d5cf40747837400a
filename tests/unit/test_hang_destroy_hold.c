/* Issue 22, item 5: XQueueDestroy overrides any suspension (the header says so), also the
 * scheduler's hold at Lv1: destroying a low-priority Lv1 XQueue with pending commands while
 * a high-priority XQueue keeps a scope open must drain and return, not wait until the high
 * queue goes idle. Fails (not hangs) when the destroy has not returned 3 s later; the
 * scope then closes, so a late return is also reported. */
#include "hang_util.h"

static XQueueHandle g_low;

static void *destroy_low(void *arg)
{
	(void)arg;
	CHECK_OK(XQueueDestroy(g_low));
	return NULL;
}

int main(void)
{
	h_watchdog(20, "item 5 (XQueueDestroy at Lv1 under the scheduler's hold)");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	struct t_pair p;
	t_pair_open(&p, kPreemptLevelBlock);
	g_low = p.low;
	h_wait_field(p.low, H_LIMITED, true);
	CHECK_OK(XQueueBeginScope(p.high)); /* high has work for as long as the scope is open */
	h_wait_field(p.low, H_SCHED_SUSPENDED, true);
	for (int i = 0; i < 3; i++)
		t_submit_fn(p.low, h_nop_fn, NULL);
	h_call d;
	h_start(&d, destroy_low, NULL);
	if (!t_wait_for(h_done_pred, &d, 3000)) {
		CHECK_OK(XQueueEndScope(p.high));
		h_hang("item 5: XQueueDestroy of a held Lv1 XQueue waits until the higher "
		       "queue goes idle");
	}
	CHECK(pthread_join(d.thread, NULL) == 0);
	CHECK_OK(XQueueEndScope(p.high));
	CHECK_OK(XQueueDestroy(p.high));
	CHECK_OK(HwQueueDestroy(p.hl));
	CHECK_OK(HwQueueDestroy(p.hh));
	CHECK_OK(XSchedShutdown());
	printf("item 5: the destroy drained while the high queue was busy\n");
	return 0;
}
