/* Issue 22, the hang the randomized stress found last (seed 4005261666): an event record
 * enqueued behind a host function that waits for a lower XQueue.
 *
 * mid (priority 5) runs a host function H, then records event R. high (priority 10)
 * waits for R, then runs a command. H, once released, launches inline on (or waits for)
 * low (priority 0).
 * Before the fix, R counted as sure to complete once enqueued, so high's wait went to
 * the HwQueue at once: high was running (waiting on its HwQueue for R) and HPF kept low
 * suspended, though low ranked as mid (its lender) only; H never returned, R never ran.
 * Now a record behind a host function is depended on only once it has completed: high
 * is blocked (not ready) meanwhile and low runs.
 *
 * Each case runs with a co-run budget of 0 and of 500 us, and with XQueueLaunchInline
 * and XQueueWait. Fails (not hangs) when high's last command has not completed 3 s after
 * H's release. */
#include "hang_util.h"

static void run_case(bool wait, int64_t corun_us)
{
	char what[160];
	snprintf(what, sizeof(what),
		 "an event record behind a host function that %s low, co-run budget %lld us",
		 wait ? "waits for" : "launches inline on", (long long)corun_us);
	CHECK_OK(XHintCorunBudget(corun_us));
	h_tiers t;
	h_tiers_open(&t);
	atomic_bool release = false;
	h_reach_set(t.low, wait, &release); /* H: once released, reaches low */

	HwCommandHandle h = h_submit(t.mid, h_reach_fn, NULL);
	HwCommandHandle rec, w;
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	CHECK_OK(XQueueSubmit(t.mid, rec));
	/* mid is the only queue with work: both are enqueued, H running. */
	int64_t end = t_now_us() + 3000000;
	while (t_stats(t.mid).launched < 2)
		if (t_now_us() > end)
			h_hang("mid's record enqueued behind its host function");
		else
			t_sleep_us(1000);
	CHECK_OK(HwCommandCreateEventWait(&w, rec));
	CHECK_OK(XQueueSubmit(t.high, w));
	HwCommandHandle last = h_submit(t.high, h_nop_fn, NULL);
	h_wait_field(t.low, H_LIMITED, true); /* mid's (and high's) work holds low */
	t_sleep_us(20000);                    /* the launch thread has seen high's wait */
	atomic_store(&release, true);

	h_wait_completed(t.high, 2, what);
	CHECK_OK(XQueueWait(t.high, last));
	CHECK_OK(XQueueWait(t.mid, h));
	CHECK_OK(h_reach()->res);
	CHECK(atomic_load(&h_reach()->calls) == 1);
	HwCommandHandle cmds[] = {h, rec, w, last};
	for (int i = 0; i < 4; i++)
		CHECK_OK(HwCommandDestroy(cmds[i]));
	CHECK_OK(XQueueWaitAll(t.low));
	h_tiers_close(&t);
	printf("ok: %s\n", what);
}

int main(void)
{
	h_watchdog(60, "an event record behind a host function that waits for a lower queue");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	for (int wait = 0; wait < 2; wait++) {
		run_case(wait, 0);
		run_case(wait, 500);
	}
	CHECK_OK(XSchedShutdown());
	return 0;
}
