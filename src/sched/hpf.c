/* HPF, highest priority first (XSched's kPolicyHighestPriorityFirst,
 * sched/src/policy/hpf.cpp).
 *
 * While any XQueue of priority p is ready, every XQueue of priority below p is suspended,
 * idle ones included (so that work submitted to them does not slip out before the next
 * pass); queues of the highest ready priority share the device. With nothing ready,
 * everything runs. No timer.
 */
#include "sched/policy.h"

void xs_policy_hpf_decide(xs_sched_entry *e, size_t n)
{
	int64_t top = INT64_MIN;
	for (size_t i = 0; i < n; i++)
		if (e[i].ready && e[i].prio > top)
			top = e[i].prio;
	for (size_t i = 0; i < n; i++)
		e[i].suspend = e[i].prio < top;
}

static int64_t xs__hpf_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	(void)p;
	xs_policy_hpf_decide(e, n);
	return 0;
}

const xs_policy_ops xs_policy_hpf = {
    .type = kPolicyHighestPriorityFirst,
    .name = "HPF",
    .schedule = xs__hpf_schedule,
};
