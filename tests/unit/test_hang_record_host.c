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

static XQueueHandle g_low;
static atomic_bool g_release;
static atomic_int g_calls;
static XResult g_res = kXSchedErrorUnknown;

static XResult inline_fn(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	atomic_fetch_add(&g_calls, 1);
	return kXSchedSuccess;
}

/* H: blocks until released, then launches inline on low. */
static XResult mid_inline_fn(void *data)
{
	(void)data;
	h_block_fn(&g_release);
	g_res = XQueueLaunchInline(g_low, inline_fn, NULL);
	return kXSchedSuccess;
}

/* H: blocks until released, then submits a command to low and waits for it. */
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

static void run_case(bool wait, int64_t corun_us)
{
	char what[160];
	snprintf(what, sizeof(what),
		 "an event record behind a host function that %s low, co-run budget %lld us",
		 wait ? "waits for" : "launches inline on", (long long)corun_us);
	CHECK_OK(XHintCorunBudget(corun_us));
	h_tiers t;
	h_tiers_open(&t);
	g_low = t.low;
	atomic_store(&g_calls, 0);
	atomic_store(&g_release, false);
	g_res = kXSchedErrorUnknown;

	HwCommandHandle h = h_submit(t.mid, wait ? mid_wait_fn : mid_inline_fn, NULL);
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
	atomic_store(&g_release, true);

	end = t_now_us() + 3000000;
	while (t_stats(t.high).completed < 2)
		if (t_now_us() > end)
			h_hang(what);
		else
			t_sleep_us(1000);
	CHECK_OK(XQueueWait(t.high, last));
	CHECK_OK(XQueueWait(t.mid, h));
	CHECK_OK(g_res);
	CHECK(atomic_load(&g_calls) == 1);
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
