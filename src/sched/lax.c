/* LAX, laxity-based priorities (XSched's kPolicyLaxity, sched/src/policy/lax.cpp).
 *
 * A queue with a laxity (XHintLaxity) has priority lax_prio while idle and from the time
 * it goes from idle to ready until ready_since_ns + laxity, then crit_prio until it is
 * idle again. A queue without one has its XHintPriority(). HPF then decides on those
 * priorities. The timer is the earliest promotion still to come among ready queues
 * (while at least two are ready), so a promotion takes effect within the scheduler's
 * wake-up latency, with no event.
 *
 * Differences from XSched: the laxity belongs to an XQueue, not to a process; queues
 * without a laxity keep their own priority instead of PRIORITY_DEFAULT.
 */
#include "sched/policy.h"

static int64_t xs__lax_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	int64_t timer = 0;
	size_t nready = 0;
	for (size_t i = 0; i < n; i++) {
		nready += e[i].ready;
		if (e[i].laxity_us == NO_LAXITY)
			continue;
		if (!e[i].ready) {
			e[i].prio = e[i].lax_prio;
			continue;
		}
		int64_t expiry = e[i].laxity_us > (INT64_MAX - e[i].ready_since_ns) / 1000
				     ? INT64_MAX
				     : e[i].ready_since_ns + e[i].laxity_us * 1000;
		if (p->now_ns < expiry) {
			e[i].prio = e[i].lax_prio;
			if (expiry != INT64_MAX && (!timer || expiry < timer))
				timer = expiry;
		} else {
			e[i].prio = e[i].crit_prio;
		}
	}
	xs_policy_hpf_decide(e, n);
	/* Alone, a promotion changes nothing; another queue's readiness brings a pass. */
	return nready > 1 ? timer : 0;
}

const xs_policy_ops xs_policy_lax = {
    .type = kPolicyLaxity,
    .name = "LAX",
    .schedule = xs__lax_schedule,
};
