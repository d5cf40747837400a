/* KEDF, k earliest deadlines first (XSched's kPolicyKEarliestDeadlineFirst,
 * sched/src/policy/kedf.cpp), and EDF (this library's kPolicyEarliestDeadlineFirst: KEDF
 * with k fixed at 1, so that choosing EDF by name cannot be undone by a stray
 * XHintKDeadline()).
 *
 * A ready queue's absolute deadline is ready_since_ns + XHintDeadline(); queues without
 * a deadline come after all queues with one; ties go to the earlier ready time, then to
 * the smaller handle. The k ready queues with the earliest deadlines run and every other
 * queue is suspended, idle ones included. While fewer than k queues are ready, idle
 * queues are not suspended (the free places may take their work; the next pass orders
 * it). With nothing ready, everything runs.
 *
 * Ties (equal deadlines, or none) take turns: a running queue that stays ready for one
 * timeslice (XHintTimeslice, 5 ms by default) while a queue of the same deadline waits
 * goes behind it, as in FIFO (xs_policy_line_decide in policy.c); else a queue that never
 * goes idle would keep its place for ever among equals (issue 22). The timer is the end
 * of such a turn.
 *
 * Differences from XSched: XSched resumes exactly k queues, idle ones among them when
 * fewer than k are ready; here every idle queue runs then, which lets new work start
 * without waiting for a pass. Deadlines only order queues (nothing is dropped or demoted
 * when a deadline passes).
 */
#include "sched/policy.h"

static int64_t xs__edf_key(const xs_sched_entry *e)
{
	if (e->deadline_us == NO_DEADLINE)
		return INT64_MAX;
	int64_t ddl_ns = e->deadline_us > (INT64_MAX - e->ready_since_ns) / 1000
			     ? INT64_MAX - 1
			     : e->ready_since_ns + e->deadline_us * 1000;
	return ddl_ns;
}

static int64_t xs__kedf_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	return xs_policy_line_decide(e, n, p->k, xs__edf_key, p);
}

static int64_t xs__edf_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	return xs_policy_line_decide(e, n, 1, xs__edf_key, p);
}

const xs_policy_ops xs_policy_kedf = {
    .type = kPolicyKEarliestDeadlineFirst,
    .name = "KEDF",
    .schedule = xs__kedf_schedule,
    .forget = xs_policy_slot_free,
};

const xs_policy_ops xs_policy_edf = {
    .type = kPolicyEarliestDeadlineFirst,
    .name = "EDF",
    .schedule = xs__edf_schedule,
    .forget = xs_policy_slot_free,
};
