/* Issue 22, item 2: a gate check (XQueueEnqueueGateCheck) on a low-priority XQueue with the
 * commitment budget. Three Lv1 XQueues under HPF (high 10, mid 5, low 0; low and mid
 * limited). On low: a running command, a gate check behind it, then two commands that
 * are committed and charged to the budget. High gets work: low is suspended and its run gate
 * closes, so the charged commands stay behind the gate check. When high goes idle, mid
 * (ready, above low) keeps low suspended and waits for budget that only low's stuck
 * commands hold. Mid's command must still complete. Fails (not hangs) after 3 s. */
#include "hang_util.h"

static atomic_bool g_release_low, g_release_high;

int main(void)
{
	h_watchdog(20, "item 2 (a gate check with the commitment budget)");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	h_tiers t;
	h_tiers_open(&t);
	XQueueHandle high = t.high, mid = t.mid, low = t.low;
	h_wait_field(low, H_LIMITED, true);
	h_wait_field(mid, H_LIMITED, true);
	/* Low learns a time per command (0.15 ms and more), so that three of its commands
	 * fit the budget (10 ms) and two of them, charged, leave more than the budget's lead
	 * (0.1 ms) of work to run once the time they were credited with has passed. Mid's
	 * first command is charged the whole budget. */
	CHECK_OK(XHintCommitBudget(10000));
	int64_t us = 150;
	for (int i = 0; i < 20; i++)
		t_submit_fn(low, t_sleep_fn, &us);
	CHECK_OK(XQueueWaitAll(low));

	HwCommandHandle l0 = h_submit(low, h_block_fn, &g_release_low);
	CHECK_OK(XQueueEnqueueGateCheck(low));
	HwCommandHandle l1 = h_submit(low, h_nop_fn, NULL); /* charged, behind the check */
	HwCommandHandle l2 = h_submit(low, h_nop_fn, NULL); /* also */
	CHECK(t_stats(low).launched == 23);
	HwCommandHandle h0 = h_submit(high, h_block_fn, &g_release_high);
	h_wait_field(low, H_SCHED_SUSPENDED, true); /* its run gate is closed */
	atomic_store(&g_release_low, true);         /* low's executor stops at the gate */
	HwCommandHandle m0 = h_submit(mid, h_nop_fn, NULL);
	atomic_store(&g_release_high, true); /* high goes idle: mid is the top ready queue */
	CHECK_OK(XQueueWait(high, h0));
	int64_t end = t_now_us() + 3000000;
	while (t_stats(mid).completed < 1)
		if (t_now_us() > end)
			h_hang(
			    "item 2: mid's command waits for budget held by low's command behind "
			    "its closed run gate");
		else
			t_sleep_us(1000);
	CHECK_OK(XQueueWait(mid, m0));
	CHECK_OK(XQueueWaitAll(low));
	HwCommandHandle cmds[] = {l0, l1, l2, h0, m0};
	for (int i = 0; i < 5; i++)
		CHECK_OK(HwCommandDestroy(cmds[i]));
	h_tiers_close(&t);
	CHECK_OK(XSchedShutdown());
	printf("item 2: mid ran although low's charged command sat behind a gate check\n");
	return 0;
}
