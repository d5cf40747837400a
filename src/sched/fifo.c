/* FIFO, first in first out across XQueues (this library's kPolicyFirstInFirstOut; XSched
 * has no such policy: without a scheduler it leaves the order to the hardware).
 *
 * The ready XQueue that went from idle to ready first (smallest ready_since_ns; ties by
 * handle) runs alone until it is idle, then the next in arrival order. Every other queue
 * is suspended, idle ones included, so that a queue that gets work later waits behind
 * the ones already waiting. A queue blocked on another queue's event is not ready and
 * lets the others run, but keeps its place (its ready time does not change). With
 * nothing ready, everything runs. No timer.
 *
 * It is the baseline to compare other policies with: one queue's work at a time, in the
 * order it arrived, as a single shared stream would run it, but without interleaving.
 */
#include "sched/policy.h"

static bool xs__fifo_before(const xs_sched_entry *a, const xs_sched_entry *b)
{
	if (a->ready_since_ns != b->ready_since_ns)
		return a->ready_since_ns < b->ready_since_ns;
	return a->id < b->id;
}

static int64_t xs__fifo_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	(void)p;
	const xs_sched_entry *head = NULL;
	for (size_t i = 0; i < n; i++)
		if (e[i].ready && (!head || xs__fifo_before(&e[i], head)))
			head = &e[i];
	for (size_t i = 0; i < n; i++)
		e[i].suspend = head && &e[i] != head;
	return 0;
}

const xs_policy_ops xs_policy_fifo = {
    .type = kPolicyFirstInFirstOut,
    .name = "FIFO",
    .schedule = xs__fifo_schedule,
};
