/* HPF, highest priority first (XSched's kPolicyHighestPriorityFirst,
 * sched/src/policy/hpf.cpp).
 *
 * While any XQueue of priority p is ready, every XQueue of priority below p is suspended,
 * idle ones included (so that work submitted to them does not slip out before the next
 * pass); queues of the highest ready priority share the device. With nothing ready,
 * everything runs.
 *
 * Linger (this library's addition): XSCHED_HPF_LINGER_US=t keeps a queue's priority in
 * force for t microseconds after it goes idle, so that a high-priority thread that submits
 * its next task right after waiting for the last one does not find the device refilled
 * with lower-priority work it must drain first. Default 0 since 0.2: the commitment budget
 * (preempt/budget.c) already bounds what such a thread finds; 0.1 used 1000 us, measured
 * then on an H200 (doc/RESULTS.md, History, "HPF linger"). Read when HPF becomes the
 * policy or at its first pass. The only HPF state, and the only reason for a timer.
 */
#include "core/config.h"
#include "core/log.h"
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

/* Per queue, while lingering is on. */
struct xs__hpf_q {
	bool was_ready;
	int64_t idle_since_ns; /* 0 = not lingering */
};

/* HPF's own state, guarded by the scheduler lock like all policy state; set back by
 * xs__hpf_reset() when HPF becomes the policy. */
static struct xs__hpf_state {
	int64_t linger_ns; /* XSCHED_HPF_LINGER_US in ns; -1 = not read yet */
} xs__hpf = {.linger_ns = -1};

static void xs__hpf_reset(void)
{
	xs__hpf.linger_ns = -1;
}

/* From XSCHED_HPF_LINGER_US (core/config.c), read when HPF becomes the policy. */
static int64_t xs__read_linger(void)
{
	int64_t ns = xs_config_get()->hpf_linger_ns;
	XS_INFO("sched", "HPF keeps an idle queue's priority for %lld us", (long long)(ns / 1000));
	return ns;
}

static int64_t xs__hpf_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	if (xs__hpf.linger_ns < 0)
		xs__hpf.linger_ns = xs__read_linger();
	if (!xs__hpf.linger_ns) {
		xs_policy_hpf_decide(e, n);
		return 0;
	}
	int64_t top = INT64_MIN, timer = 0;
	for (size_t i = 0; i < n; i++) {
		struct xs__hpf_q *st = xs_policy_slot(&e[i], sizeof(*st));
		bool counts = e[i].ready;
		if (st) {
			if (e[i].ready) {
				st->was_ready = true;
				st->idle_since_ns = 0;
			} else if (st->was_ready) {
				st->was_ready = false;
				st->idle_since_ns = p->now_ns;
			}
			int64_t until = st->idle_since_ns + xs__hpf.linger_ns;
			if (st->idle_since_ns && until > p->now_ns) {
				counts = true;
				if (!timer || until < timer)
					timer = until;
			} else {
				st->idle_since_ns = 0;
			}
		}
		e[i].holds = counts;
		if (counts && e[i].prio > top)
			top = e[i].prio;
	}
	for (size_t i = 0; i < n; i++)
		e[i].suspend = e[i].prio < top;
	return timer;
}

const xs_policy_ops xs_policy_hpf = {
    .type = kPolicyHighestPriorityFirst,
    .name = "HPF",
    .hold = true,
    .hint_ranks = true,
    .schedule = xs__hpf_schedule,
    .forget = xs_policy_slot_free,
    .reset = xs__hpf_reset,
};
