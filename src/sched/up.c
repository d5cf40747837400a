/* UP, utilization partition (XSched's kPolicyUtilizationPartition,
 * sched/src/policy/up.cpp; the bandwidth partition of the XSched paper, OSDI '25).
 *
 * One XQueue holds the device at a time; the others are suspended, idle ones included.
 * The ready queues with a positive utilization take turns in round-robin order (the one
 * whose last turn began longest ago goes next; a new queue goes first). A turn lasts
 *
 *     slice = timeslice * util / (sum of util over the ready queues),
 *
 * at least TIMESLICE_MIN; it is recomputed at every pass, so a queue that becomes ready,
 * goes idle or changes its utilization shortens or lengthens the running turn at once.
 * A queue that goes idle (or blocks on another queue) ends its turn early, and idle
 * queues get no turn, so their share goes to the ready ones: the device is never left
 * to an idle queue while another has work. Queues with util 0 run only while no queue
 * with a positive util is ready (then all of them, like everything when nothing is
 * ready).
 *
 * Timer: the end of the running turn, while another queue waits for one. A queue alone
 * keeps the device with no timer; when another becomes ready, the turn ends at once if
 * it is already over.
 *
 * Differences from XSched: the sum runs over ready queues, so the round keeps its length
 * (XSched sums over every queue with a hint and skips idle ones, which shortens the
 * round); queues without XHintUtilization() take part with the default 100 (XSched
 * leaves them suspended).
 */
#include "sched/policy.h"

typedef struct xs__up_q {
	bool current;          /* holds the device */
	int64_t turn_start_ns; /* when its current or last turn began (0: never) */
} xs__up_q;

static xs__up_q *xs__up(const xs_sched_entry *e)
{
	return *e->slot;
}

static int64_t xs__up_slice(const xs_sched_entry *e, int64_t sum, const xs_sched_params *p)
{
	int64_t slice = p->timeslice_us * 1000 * e->util / sum;
	return slice < TIMESLICE_MIN * 1000 ? TIMESLICE_MIN * 1000 : slice;
}

static int64_t xs__up_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	int64_t now = p->now_ns;
	int64_t sum = 0;
	size_t nready = 0;
	xs_sched_entry *cur = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!xs_policy_slot(&e[i], sizeof(xs__up_q)))
			continue; /* no memory: left alone below */
		if (xs__up(&e[i])->current)
			cur = &e[i];
		if (e[i].ready && e[i].util > 0) {
			sum += e[i].util;
			nready++;
		}
	}
	if (!nready) {
		/* Nothing with a share is ready: no one holds the device, everything runs. */
		if (cur)
			xs__up(cur)->current = false;
		for (size_t i = 0; i < n; i++)
			e[i].suspend = false;
		return 0;
	}
	bool keep = false;
	if (cur) {
		xs__up_q *q = xs__up(cur);
		if (cur->ready && cur->util > 0) {
			if (now < q->turn_start_ns + xs__up_slice(cur, sum, p)) {
				keep = true;
			} else if (nready == 1) {
				q->turn_start_ns = now; /* alone: a new turn, without a timer */
				keep = true;
			}
		}
		if (!keep)
			q->current = false;
	}
	if (!keep) {
		/* Next turn: the other ready queue whose last turn began longest ago. There is
		 * one: cur, if ready with a share, was kept unless another queue is ready. */
		xs_sched_entry *next = NULL;
		for (size_t i = 0; i < n; i++) {
			if (!e[i].ready || e[i].util <= 0 || !*e[i].slot || &e[i] == cur)
				continue;
			int64_t t = xs__up(&e[i])->turn_start_ns;
			if (!next || t < xs__up(next)->turn_start_ns ||
			    (t == xs__up(next)->turn_start_ns && e[i].id < next->id))
				next = &e[i];
		}
		xs__up(next)->current = true;
		xs__up(next)->turn_start_ns = now;
		cur = next;
	}
	for (size_t i = 0; i < n; i++)
		e[i].suspend = &e[i] != cur && *e[i].slot;
	return nready > 1 ? xs__up(cur)->turn_start_ns + xs__up_slice(cur, sum, p) : 0;
}

const xs_policy_ops xs_policy_up = {
    .type = kPolicyUtilizationPartition,
    .name = "UP",
    .schedule = xs__up_schedule,
    .forget = xs_policy_slot_free,
};
