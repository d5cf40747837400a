/* EDF and k-EDF.
 *
 * EDF: four queues that got work while a gate queue with the earliest deadline ran
 * complete in deadline order, one queue at a time, the one without a deadline last;
 * EDF ignores k. KEDF with k = 2: the two earliest run at once, never three, and the
 * third starts only once one of them is idle. Errors: k = 0, negative deadlines.
 *
 * Queues run at Lv1 with one command in flight, so a queue the scheduler suspends
 * launches nothing more: the orders checked are strict, not statistical. Deadlines are
 * 1 s apart, so a stall of the test thread between two submissions (which shifts a
 * queue's ready time) cannot reorder them.
 */
#include "sched_util.h"

enum { A, B, C, D };

#define CMD_US 2000

static XQueueHandle gate_create(HwQueueHandle *hwq)
{
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(hwq));
	CHECK_OK(XQueueCreate(&xq, *hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XHintDeadline(xq, 0));
	return xq;
}

/* Queue @q's commands all ended before queue @r's first started. */
static bool all_before(int q, int r)
{
	return su_last_end(q) <= su_first_start(r);
}

static void edf(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyEarliestDeadlineFirst));
	CHECK_OK(XHintKDeadline(3)); /* EDF runs one queue whatever k says */
	CHECK_OK(XHintDeadline(su_q[A].xq, 3000000));
	CHECK_OK(XHintDeadline(su_q[B].xq, 1000000));
	CHECK_OK(XHintDeadline(su_q[C].xq, 2000000));
	CHECK_OK(XHintDeadline(su_q[D].xq, NO_DEADLINE));

	/* The gate runs (deadline 0 us after it became ready); once the scheduler has seen
	 * it, every idle queue is suspended, so the queues below start only when it ends. */
	HwQueueHandle gh;
	XQueueHandle g = gate_create(&gh);
	int64_t gate_us = 100000;
	t_submit_fn(g, t_sleep_fn, &gate_us);
	for (int i = A; i <= D; i++)
		su_wait_suspended(i);
	/* Submitted in an order unlike the deadlines'. */
	su_submit(D, 4);
	su_submit(A, 4);
	su_submit(C, 4);
	su_submit(B, 4);
	for (int i = A; i <= D; i++)
		CHECK_OK(XQueueWaitAll(su_q[i].xq));
	CHECK_OK(XQueueWaitAll(g));

	CHECK(atomic_load(&su_nlog) == 16);
	CHECK(atomic_load(&su_max_running) == 1);
	CHECK(all_before(B, C));
	CHECK(all_before(C, A));
	CHECK(all_before(A, D));
	CHECK_OK(XQueueDestroy(g));
	CHECK_OK(HwQueueDestroy(gh));
}

static bool overlap(int q, int r)
{
	int n = atomic_load(&su_nlog);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (su_log[i].q == q && su_log[j].q == r &&
			    su_log[i].start_us < su_log[j].end_us &&
			    su_log[j].start_us < su_log[i].end_us)
				return true;
	return false;
}

static void kedf(void)
{
	su_reset_log();
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyKEarliestDeadlineFirst));
	CHECK_RES(XHintKDeadline(0), kXSchedErrorInvalidValue);
	CHECK_OK(XHintKDeadline(2));
	CHECK_OK(XHintDeadline(su_q[A].xq, 1000000));
	CHECK_OK(XHintDeadline(su_q[B].xq, 2000000));
	CHECK_OK(XHintDeadline(su_q[C].xq, 3000000));

	/* Two gates take both places; A, B and C wait behind them. */
	for (int i = A; i <= D; i++)
		su_wait_running(i); /* nothing is ready */
	HwQueueHandle gh1, gh2;
	XQueueHandle g1 = gate_create(&gh1), g2 = gate_create(&gh2);
	int64_t gate_us = 100000;
	t_submit_fn(g1, t_sleep_fn, &gate_us);
	t_submit_fn(g2, t_sleep_fn, &gate_us);
	for (int i = A; i <= C; i++)
		su_wait_suspended(i);
	su_submit(C, 20);
	su_submit(B, 20);
	su_submit(A, 10);
	for (int i = A; i <= C; i++)
		CHECK_OK(XQueueWaitAll(su_q[i].xq));

	printf("k-EDF: at most %d queues ran at once\n", atomic_load(&su_max_running));
	CHECK(atomic_load(&su_nlog) == 50);
	CHECK(atomic_load(&su_max_running) == 2); /* k at once, never more */
	CHECK(overlap(A, B));                     /* the two earliest together */
	CHECK(all_before(A, C));                  /* the third waits for a free place */
	CHECK(overlap(B, C));                     /* and takes the one A left */
	CHECK_OK(XQueueDestroy(g1));
	CHECK_OK(XQueueDestroy(g2));
	CHECK_OK(HwQueueDestroy(gh1));
	CHECK_OK(HwQueueDestroy(gh2));
}

int main(void)
{
	for (int i = A; i <= D; i++)
		su_create(i, CMD_US);
	edf();
	kedf();

	CHECK_RES(XHintDeadline(su_q[A].xq, -2), kXSchedErrorInvalidValue);
	CHECK_RES(XHintDeadline(0, 1000), kXSchedErrorNotFound);
	CHECK_OK(XHintDeadline(su_q[A].xq, NO_DEADLINE));
	for (int i = A; i <= D; i++)
		su_destroy(i);
	CHECK_OK(XSchedShutdown());
	return 0;
}
