/* A waiting command's budget charge must not hold the queue that would release it.
 *
 * A host function of XQueue A waits (XQueueWait) for a command of XQueue B, of the same
 * priority; a third XQueue M, of higher priority but below an idle top queue (so limited
 * by the commitment budget, with no estimate yet: charged the whole budget), gets work.
 * A's waiting host function and the command behind it are charged; were they still
 * charged while A waits, M could not commit, M would keep B suspended under strict HPF,
 * and B's command, which A waits for, would never run: nothing in the application waits
 * in a cycle. Checked under strict priority (where HPF suspends B for M) and by default
 * (where M, itself limited, suspends nobody), at Lv1 and Lv2, with the budget at its
 * default and at 0; a hang fails within 3 s. */
#include "hang_util.h"

static XQueueHandle g_b;
static atomic_bool g_started, g_go;
static _Atomic HwCommandHandle g_bcmd;
static XResult g_wait_res = kXSchedErrorUnknown;

/* A's host function: waits until M has work, then for B's command. */
static XResult a_fn(void *data)
{
	(void)data;
	atomic_store(&g_started, true);
	while (!atomic_load(&g_go))
		t_sleep_us(100);
	g_wait_res = XQueueWait(g_b, atomic_load(&g_bcmd));
	return kXSchedSuccess;
}

static void run(XPreemptLevel level, int strict, int64_t budget_us)
{
	HwQueueHandle ht, ha, hb, hm;
	XQueueHandle t, a, m;
	CHECK_OK(XHintStrictPriority(strict));
	CHECK_OK(XHintCommitBudget(budget_us));
	CHECK_OK(HostQueueCreate(&ht));
	CHECK_OK(HostQueueCreate(&ha));
	CHECK_OK(HostQueueCreate(&hb));
	CHECK_OK(HostQueueCreate(&hm));
	CHECK_OK(XQueueCreate(&t, ht, level, 0));
	CHECK_OK(XQueueCreate(&a, ha, level, 0));
	CHECK_OK(XQueueCreate(&g_b, hb, level, 0));
	CHECK_OK(XQueueCreate(&m, hm, level, 0));
	CHECK_OK(XHintPriority(t, 10)); /* idle: A, B and M are limited */
	CHECK_OK(XHintPriority(m, 5));
	h_wait_field(a, H_LIMITED, true);
	h_wait_field(m, H_LIMITED, true);
	atomic_store(&g_started, false);
	atomic_store(&g_go, false);
	g_wait_res = kXSchedErrorUnknown;
	/* A: the waiting host function and a command behind it, both charged. */
	HwCommandHandle ac = h_submit(a, a_fn, NULL);
	int64_t us = 1000;
	t_submit_fn(a, t_sleep_fn, &us);
	while (!atomic_load(&g_started))
		t_sleep_us(100);
	/* M gets work, then B the command A waits for. */
	for (int i = 0; i < 5; i++)
		t_submit_fn(m, t_sleep_fn, &us);
	atomic_store(&g_bcmd, h_submit(g_b, h_nop_fn, NULL));
	atomic_store(&g_go, true);
	char what[160];
	snprintf(what, sizeof(what),
		 "at Lv%d, strict %d, budget %lld us: A's host function waits for B, held "
		 "behind M, which waits for the budget A's waiting command holds",
		 (int)level, strict, (long long)budget_us);
	h_wait_completed(a, 2, what);
	h_wait_completed(m, 5, what);
	CHECK_OK(XQueueWait(a, ac));
	CHECK_OK(g_wait_res);
	CHECK_OK(HwCommandDestroy(ac));
	CHECK_OK(HwCommandDestroy(atomic_load(&g_bcmd)));
	CHECK_OK(XQueueDestroy(m));
	CHECK_OK(XQueueDestroy(g_b));
	CHECK_OK(XQueueDestroy(a));
	CHECK_OK(XQueueDestroy(t));
	CHECK_OK(HwQueueDestroy(hm));
	CHECK_OK(HwQueueDestroy(hb));
	CHECK_OK(HwQueueDestroy(ha));
	CHECK_OK(HwQueueDestroy(ht));
}

int main(void)
{
	h_watchdog(60, "a waiting command's charge (test_hang_wait_charge)");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	for (int strict = 1; strict >= 0; strict--)
		for (int lv = kPreemptLevelBlock; lv <= kPreemptLevelDeactivate; lv++) {
			run((XPreemptLevel)lv, strict, 1000);
			run((XPreemptLevel)lv, strict, 0);
		}
	CHECK_OK(XSchedShutdown());
	printf("the waiting host function's charge held nobody (Lv1, Lv2; strict and not; "
	       "budget 1000 us and 0)\n");
	return 0;
}
