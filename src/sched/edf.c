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
 * Differences from XSched: XSched resumes exactly k queues, idle ones among them when
 * fewer than k are ready; here every idle queue runs then, which lets new work start
 * without waiting for a pass. No timer: deadlines only order queues (nothing is dropped
 * or demoted when a deadline passes).
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

static bool xs__edf_before(const xs_sched_entry *a, const xs_sched_entry *b)
{
	int64_t ka = xs__edf_key(a), kb = xs__edf_key(b);
	if (ka != kb)
		return ka < kb;
	if (a->ready_since_ns != b->ready_since_ns)
		return a->ready_since_ns < b->ready_since_ns;
	return a->id < b->id;
}

static void xs__edf_decide(xs_sched_entry *e, size_t n, size_t k)
{
	size_t ready = 0;
	for (size_t i = 0; i < n; i++) {
		e[i].suspend = true; /* below: false = chosen */
		ready += e[i].ready;
	}
	if (ready < k) {
		/* Free places: every ready queue runs, and so do the idle ones. */
		for (size_t i = 0; i < n; i++)
			e[i].suspend = false;
		return;
	}
	/* Choose the k earliest, one at a time: O(k n), with n the number of queues. */
	for (size_t j = 0; j < k; j++) {
		xs_sched_entry *best = NULL;
		for (size_t i = 0; i < n; i++)
			if (e[i].ready && e[i].suspend && (!best || xs__edf_before(&e[i], best)))
				best = &e[i];
		best->suspend = false;
	}
}

static int64_t xs__kedf_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	xs__edf_decide(e, n, p->k);
	return 0;
}

static int64_t xs__edf_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	(void)p;
	xs__edf_decide(e, n, 1);
	return 0;
}

const xs_policy_ops xs_policy_kedf = {
    .type = kPolicyKEarliestDeadlineFirst,
    .name = "KEDF",
    .schedule = xs__kedf_schedule,
};

const xs_policy_ops xs_policy_edf = {
    .type = kPolicyEarliestDeadlineFirst,
    .name = "EDF",
    .schedule = xs__edf_schedule,
};
