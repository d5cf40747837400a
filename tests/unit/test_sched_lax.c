/* LAX: a queue with laxity 100 ms, lax_prio 0 and crit_prio 10 waits behind a busy
 * queue of priority 5 until its laxity runs out (never before), then preempts it
 * while that queue still has work: the promotion comes from the scheduler's timer, as
 * no queue event happens at that moment. While idle, it has lax_prio (suspended). A
 * laxity can be removed; bad laxities and priorities are refused.
 */
#include "sched_util.h"

enum { A, B };

#define LAX_US 100000

static int g_b_target;

static bool b_ran_pred(void *arg)
{
	(void)arg;
	return atomic_load(&su_q[B].ran) >= g_b_target;
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyLaxity));
	su_create(A, 2000);
	su_create(B, 2000);
	CHECK_OK(XHintPriority(su_q[B].xq, 5));
	CHECK_OK(XHintLaxity(su_q[A].xq, LAX_US, 0, 10));

	/* B is busy for 2 s if nothing preempts it. */
	su_submit(B, 1000);
	su_wait_ran(B);
	su_wait_suspended(A); /* idle A has lax_prio 0 < 5 */

	int64_t submit_us = t_now_us();
	su_submit(A, 10);
	CHECK_OK(XQueueWaitAll(su_q[A].xq));
	int64_t a_done_us = t_now_us();
	/* Let B run again after A, then end it. */
	g_b_target = atomic_load(&su_q[B].ran) + 2;
	CHECK(t_wait_for(b_ran_pred, NULL, 10000));
	su_drain(B);

	int64_t a_start = su_first_start(A), a_end = su_last_end(A);
	printf("A started %.1f ms after its submission (laxity %.1f ms)\n",
	       (double)(a_start - submit_us) / 1000, LAX_US / 1000.0);
	/* Not before the laxity ran out (the queue's ready time is after submit_us). */
	CHECKF(a_start >= submit_us + LAX_US,
	       "A starts no earlier than its laxity (%.1f ms) after "
	       "its submission; measured %.1f ms",
	       LAX_US / 1000.0, (double)(a_start - submit_us) / 1000);
	/* Promoted while B still had work: B ran again after A, so A did not merely get the
	 * device when B went idle. */
	CHECKF(su_starts_between(B, a_end, INT64_MAX) >= 1,
	       "B runs again after A (A promoted "
	       "while B still had work); measured no start of B after A's end");
	CHECK_CMP(a_end, <=, a_done_us);
	/* While A ran at crit_prio, B launched nothing new (its one in-flight command may
	 * start late on a loaded machine). */
	CHECKF(su_starts_between(B, a_start, a_end) <= 1,
	       "at most B's one in-flight command "
	       "starts while A runs at crit_prio; measured %d starts",
	       su_starts_between(B, a_start, a_end));

	/* Without the laxity A has its own priority again (0 < 5): with B busy, A waits
	 * until B is idle. */
	su_reset_log();
	atomic_store(&su_q[B].stop, false);
	CHECK_OK(XHintLaxity(su_q[A].xq, NO_LAXITY, 0, 0));
	su_wait_running(A); /* nothing is ready */
	su_submit(B, 30);
	su_wait_suspended(A);
	su_submit(A, 2);
	CHECK_OK(XQueueWaitAll(su_q[A].xq));
	CHECK_OK(XQueueWaitAll(su_q[B].xq));
	CHECK_CMP(atomic_load(&su_nlog), ==, 32);
	CHECKF(su_last_end(B) <= su_first_start(A),
	       "without its laxity A waits until B is idle; "
	       "measured A's first start %.1f ms before B's last end",
	       (double)(su_last_end(B) - su_first_start(A)) / 1000);

	CHECK_RES(XHintLaxity(su_q[A].xq, -2, 0, 10), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLaxity(su_q[A].xq, 1000, PRIORITY_MAX + 1, 10), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLaxity(su_q[A].xq, 1000, 0, PRIORITY_MIN - 1), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLaxity(0, 1000, 0, 10), kXSchedErrorNotFound);

	su_destroy(A);
	su_destroy(B);
	CHECK_OK(XSchedShutdown());
	return 0;
}
