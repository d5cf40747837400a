/* Issue 22, item 7: HPF priority inversion. A host function of XQueue A (priority 10)
 * calls XQueueWait on a command of XQueue B (priority 0) that was submitted after the host
 * function started. A counts as blocked while its command waits (priority inheritance),
 * so B runs. Both levels; fails (not hangs) when the wait has not returned 3 s later. */
#include "hang_util.h"

static XQueueHandle g_b;
static atomic_bool g_started;
static _Atomic HwCommandHandle g_bcmd;
static XResult g_wait_res = kXSchedErrorUnknown;

static XResult a_fn(void *data)
{
	(void)data;
	atomic_store(&g_started, true);
	HwCommandHandle c;
	while (!(c = atomic_load(&g_bcmd)))
		t_sleep_us(100);
	g_wait_res = XQueueWait(g_b, c);
	return kXSchedSuccess;
}

static void run(XPreemptLevel level)
{
	struct t_pair p;
	t_pair_open(&p, level);
	g_b = p.low;
	atomic_store(&g_started, false);
	atomic_store(&g_bcmd, 0);
	g_wait_res = kXSchedErrorUnknown;
	h_wait_field(p.low, H_LIMITED, true);
	HwCommandHandle a = h_submit(p.high, a_fn, NULL);
	while (!atomic_load(&g_started))
		t_sleep_us(100);
	h_wait_field(p.low, H_SCHED_SUSPENDED, true); /* HPF holds B behind A's work */
	HwCommandHandle b = h_submit(p.low, h_nop_fn, NULL);
	atomic_store(&g_bcmd, b);
	int64_t end = t_now_us() + 3000000;
	while (t_stats(p.high).completed < 1)
		if (t_now_us() > end) {
			fprintf(stderr, "at Lv%d:\n", (int)level);
			h_hang("item 7: a high-priority host function waits for ever for a "
			       "low-priority command submitted after it started");
		} else {
			t_sleep_us(1000);
		}
	CHECK_OK(XQueueWait(p.high, a));
	CHECK_OK(g_wait_res);
	CHECK_OK(HwCommandDestroy(a));
	CHECK_OK(HwCommandDestroy(b));
	t_pair_close(&p);
}

int main(void)
{
	h_watchdog(30, "item 7 (priority inheritance of a host function's wait)");
	/* HPF suspends B only with a co-run budget of 0 (else B co-runs): the case to test. */
	CHECK_OK(XHintCorunBudget(0));
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	run(kPreemptLevelBlock);
	run(kPreemptLevelDeactivate);
	CHECK_OK(XSchedShutdown());
	printf("item 7: the host function's wait returned at Lv1 and Lv2\n");
	return 0;
}
