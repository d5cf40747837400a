/* Issue 22, a hang the randomized stress found under ASan: XQueueDestroy of an XQueue whose
 * head command waits for an event that a held XQueue has yet to record.
 *
 * high (priority 10) has a scope open: HPF holds mid (5) and low (0). low has a record R
 * pending; mid waits for R, then has one more command. Another thread destroys mid. Its
 * drain overrides suspensions, but R's queue is not mid: low inherited mid's rank (below
 * high's), so it stayed limited, and with the co-run budget at 0 the budget's hold let it
 * commit nothing: R never ran and XQueueDestroy never returned. Now the queue a queue
 * being destroyed waits for (directly or along a chain) is neither suspended nor limited.
 *
 * Cases: co-run budget 0 and 500 us. Fails (not hangs) when XQueueDestroy has not returned
 * 3 s after it was called. */
#include "hang_util.h"

static XQueueHandle g_mid;
static XResult g_destroy = kXSchedErrorUnknown;

static void *destroy_mid(void *arg)
{
	(void)arg;
	g_destroy = XQueueDestroy(g_mid);
	return NULL;
}

static void run_case(int64_t corun_us)
{
	char what[160];
	snprintf(what, sizeof(what),
		 "XQueueDestroy of mid, whose head waits for a record of held low, co-run budget "
		 "%lld us",
		 (long long)corun_us);
	CHECK_OK(XHintCorunBudget(corun_us));
	h_tiers t;
	h_tiers_open(&t);
	g_mid = t.mid;
	g_destroy = kXSchedErrorUnknown;
	CHECK_OK(XQueueBeginScope(t.high)); /* high has work from now on */
	h_wait_field(t.low, H_LIMITED, true);
	h_wait_field(t.mid, H_LIMITED, true);
	t_sleep_us(20000);

	atomic_bool release = false;
	HwCommandHandle hold = h_submit(t.low, h_block_fn, &release);
	HwCommandHandle rec, w;
	h_event_dep(t.low, t.mid, &rec, &w);
	HwCommandHandle after = h_submit(t.mid, h_nop_fn, NULL);
	atomic_store(&release, true);

	h_call call;
	h_start(&call, destroy_mid, NULL);
	h_finish(&call, 3000, what);
	CHECK_OK(g_destroy);
	CHECK_OK(HwCommandDestroy(w));
	CHECK_OK(HwCommandDestroy(after));
	CHECK_OK(XQueueEndScope(t.high));
	CHECK_OK(XQueueWait(t.low, rec));
	CHECK_OK(HwCommandDestroy(rec));
	CHECK_OK(HwCommandDestroy(hold));
	t.mid = 0; /* destroyed above */
	h_tiers_close(&t);
	printf("ok: %s\n", what);
}

int main(void)
{
	h_watchdog(60, "XQueueDestroy of a queue that waits for a held queue's event");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	run_case(0);
	run_case(500);
	CHECK_OK(XSchedShutdown());
	return 0;
}
