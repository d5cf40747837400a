/* Priority inheritance through event dependencies (issue 22's randomized stress, and
 * XSched's "deadlocks from per-stream suspension when streams depend on each other").
 *
 * high (priority 10) waits for an event that low (priority 0) records behind a command of
 * its own; mid (priority 5) has a scope open. high is blocked, so HPF counts it out, and
 * mid's work held low for as long as mid stayed ready: high waited on mid although it
 * ranks above it. Now the queue whose record a blocked queue waits for ranks as that
 * queue (sched.c, xs__inherit): low runs, records, high goes on, mid's scope still open.
 *
 * Cases: co-run budget 0 (HPF suspends low) and 500 us (the budget's hold). Fails (not
 * hangs) when high's last command has not completed 3 s after its submission. */
#include "hang_util.h"

static void run_case(int64_t corun_us)
{
	char what[160];
	snprintf(what, sizeof(what),
		 "high waits for low's event while mid is ready, co-run budget %lld us",
		 (long long)corun_us);
	CHECK_OK(XHintCorunBudget(corun_us));
	h_tiers t;
	h_tiers_open(&t);
	CHECK_OK(XQueueBeginScope(t.mid)); /* mid is ready from now on */
	h_wait_field(t.low, H_LIMITED, true);
	t_sleep_us(20000);

	atomic_bool release = false;
	HwCommandHandle work = h_submit(t.low, h_block_fn, &release);
	HwCommandHandle rec, w;
	h_event_dep(t.low, t.high, &rec, &w);
	HwCommandHandle last = h_submit(t.high, h_nop_fn, NULL);
	atomic_store(&release, true);

	h_wait_completed(t.high, 2, what);
	CHECK_OK(XQueueWait(t.high, last));
	CHECK_OK(XQueueWait(t.low, rec));
	HwCommandHandle cmds[] = {work, rec, w, last};
	for (int i = 0; i < 4; i++)
		CHECK_OK(HwCommandDestroy(cmds[i]));
	CHECK_OK(XQueueEndScope(t.mid));
	h_tiers_close(&t);
	printf("ok: %s\n", what);
}

int main(void)
{
	h_watchdog(60, "priority inheritance through an event dependency");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	run_case(0);
	run_case(500);
	CHECK_OK(XSchedShutdown());
	return 0;
}
