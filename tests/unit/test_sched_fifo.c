/* FIFO: queues run one at a time, each until it is idle, in the order in which they
 * became ready, whatever their priorities; a queue that gets work while another runs
 * waits behind every queue already waiting. Strict orders (Lv1, one command in flight).
 */
#include "sched_util.h"

enum { A, B, C, D };

/* Queue @q's commands all ended before queue @r's first started. */
static bool all_before(int q, int r)
{
	return su_last_end(q) <= su_first_start(r);
}

static bool b_submitted(void *arg)
{
	(void)arg;
	return t_stats(su_q[B].xq).submitted == 4;
}

/* First command of A: once B has its work, submits to D, which must then wait for B. */
static XResult a_first(void *data)
{
	(void)data;
	CHECK(t_wait_for(b_submitted, NULL, 10000));
	su_submit(D, 3);
	return su_fn(&su_q[A]);
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyFirstInFirstOut));
	/* Every queue here goes idle within the turn (1 s): FIFO's order, with no queue sent
	 * to the back for staying ready too long (test_hang_policies checks that). */
	CHECK_OK(XHintTimeslice(1000000));
	for (int i = A; i <= D; i++)
		su_create(i, 2000);
	/* Priorities mean nothing to FIFO. */
	CHECK_OK(XHintPriority(su_q[B].xq, 100));
	CHECK_OK(XHintPriority(su_q[A].xq, -100));

	/* The gate runs first; then C, A, B in the order they got work; D gets work while A
	 * runs and comes last. */
	HwQueueHandle gh;
	XQueueHandle g;
	CHECK_OK(HostQueueCreate(&gh));
	CHECK_OK(XQueueCreate(&g, gh, kPreemptLevelBlock, 0));
	int64_t gate_us = 60000;
	t_submit_fn(g, t_sleep_fn, &gate_us);
	for (int i = A; i <= D; i++)
		su_wait_suspended(i);
	su_submit(C, 4);
	t_submit_fn(su_q[A].xq, a_first, NULL);
	su_submit(A, 3);
	su_submit(B, 4);
	for (int i = A; i <= D; i++)
		CHECK_OK(XQueueWaitAll(su_q[i].xq));
	CHECK_OK(XQueueWaitAll(g));

	CHECK(atomic_load(&su_nlog) == 15);
	CHECK(atomic_load(&su_max_running) == 1); /* one queue at a time */
	CHECK(all_before(C, A));
	CHECK(all_before(A, B));
	CHECK(all_before(B, D));

	/* With nothing ready, nothing is held back. */
	for (int i = A; i <= D; i++)
		su_wait_running(i);

	CHECK_OK(XQueueDestroy(g));
	CHECK_OK(HwQueueDestroy(gh));
	for (int i = A; i <= D; i++)
		su_destroy(i);
	CHECK_OK(XSchedShutdown());
	return 0;
}
