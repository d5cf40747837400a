/* FIFO, first in first out across XQueues (this library's kPolicyFirstInFirstOut; XSched
 * has no such policy: without a scheduler it leaves the order to the hardware).
 *
 * The ready XQueue that went from idle to ready first (smallest ready_since_ns; ties by
 * handle) runs alone until it is idle, then the next in arrival order. Every other queue
 * is suspended, idle ones included, so that a queue that gets work later waits behind
 * the ones already waiting. A queue blocked on another queue's event is not ready and
 * lets the others run, but keeps its place. With nothing ready, everything runs.
 *
 * A queue that stays ready for longer than one timeslice (XHintTimeslice, 5 ms by
 * default) while others wait goes to the back of the line: a queue that never goes idle
 * would otherwise keep the device for ever (issue 22). Timer: the end of the running
 * turn, while another queue waits (xs_policy_line_decide in policy.c).
 *
 * It is the baseline to compare other policies with: one queue's work at a time, in the
 * order it arrived, as a single shared stream would run it, but without interleaving.
 */
#include "sched/policy.h"

static int64_t xs__fifo_key(const xs_sched_entry *e)
{
	(void)e;
	return 0; /* all equal: the order is the line's */
}

static int64_t xs__fifo_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	return xs_policy_line_decide(e, n, 1, xs__fifo_key, p);
}

const xs_policy_ops xs_policy_fifo = {
    .type = kPolicyFirstInFirstOut,
    .name = "FIFO",
    .schedule = xs__fifo_schedule,
    .forget = xs_policy_slot_free,
};
