/* CFS, completely fair scheduling (XSched's kPolicyCompletelyFairScheduler,
 * sched/src/policy/cfs.cpp, after Linux's CFS).
 *
 * One XQueue holds the device at a time; the others are suspended, idle ones included.
 * Each queue has a virtual runtime that grows while it holds the device:
 *
 *     vruntime += dt * 1024 / weight,   weight = 1024 * 1.2^prio   (XHintPriority)
 *
 * so a queue of priority p + 1 gets 1.2 times the device time of one of priority p, and
 * p + 6 about 3 times (1.2^6 = 2.99). The ready queue with the least vruntime runs; the
 * running queue keeps the device for one slice (XHintTimeslice(), or 1 ms, XSched's CFS
 * period, while that hint was never given) unless it goes idle first, then the least
 * vruntime runs (ties: the queue that did not just run). A queue that becomes ready (new,
 * or back from idle) starts at max(its vruntime, min_vruntime), where min_vruntime is
 * the least vruntime of the queues already ready, kept monotonic across passes (as in
 * Linux): so neither a newcomer nor a queue that slept can take more than its share to
 * "catch up". With nothing ready, everything runs.
 *
 * Timer: the end of the running slice, while another queue is ready.
 *
 * Differences from XSched: XSched re-decides on a fixed 1 ms timer (time_slice_ in
 * sched/include/xsched/sched/policy/cfs.h) and switches to the least vruntime at every
 * pass, and it places only new queues at the minimum. Here the running queue keeps a
 * whole slice (so that a switch, which costs an in-flight window at Lv1, happens at most
 * once per slice, and the slice can be tuned), and queues back from idle are placed
 * too (XSched lets them run until they have caught up).
 */
#include "sched/policy.h"

#define XS__CFS_SLICE_DEFAULT_US 1000

typedef struct xs__cfs_q {
	double vruntime;      /* weighted ns */
	bool current;         /* holds the device */
	bool was_ready;       /* ready at the previous pass */
	int64_t run_start_ns; /* when its current slice began */
	int64_t charged_ns;   /* time up to which vruntime has been charged */
} xs__cfs_q;

/* CFS's own state, guarded by the scheduler lock like all policy state; set back by
 * xs__cfs_reset() when CFS becomes the policy. */
static struct xs__cfs_state {
	double min_vruntime; /* where a queue back from idle starts at least; monotonic */
} xs__cfs_s;

static xs__cfs_q *xs__cfs(const xs_sched_entry *e)
{
	return *e->slot;
}

/* 1.2^prio without libm: square-and-multiply, |prio| <= 255. */
static double xs__cfs_pow12(int prio)
{
	double r = 1.0, b = 1.2;
	unsigned m = (unsigned)(prio < 0 ? -prio : prio);
	for (; m; m >>= 1, b *= b)
		if (m & 1)
			r *= b;
	return prio < 0 ? 1.0 / r : r;
}

static void xs__cfs_reset(void)
{
	xs__cfs_s.min_vruntime = 0.0;
}

/* Charge the running queue up to @now, place the queues that just became ready at the
 * least vruntime of those that were ready, and return the running queue (NULL: none);
 * *@nready is the number of ready queues. */
static xs_sched_entry *xs__cfs_account(xs_sched_entry *e, size_t n, int64_t now, size_t *nready)
{
	xs_sched_entry *cur = NULL;
	bool have_min = false;
	double min = 0.0;
	*nready = 0;
	for (size_t i = 0; i < n; i++) {
		xs__cfs_q *q = xs_policy_slot(&e[i], sizeof(*q));
		if (!q)
			continue;
		if (q->current) {
			cur = &e[i];
			q->vruntime += (double)(now - q->charged_ns) / xs__cfs_pow12(e[i].prio);
			q->charged_ns = now;
		}
		if (e[i].ready) {
			(*nready)++;
			if (q->was_ready && (!have_min || q->vruntime < min)) {
				min = q->vruntime;
				have_min = true;
			}
		}
	}
	if (have_min && min > xs__cfs_s.min_vruntime)
		xs__cfs_s.min_vruntime = min;
	for (size_t i = 0; i < n; i++) {
		if (!*e[i].slot)
			continue;
		xs__cfs_q *q = xs__cfs(&e[i]);
		if (e[i].ready && !q->was_ready && q->vruntime < xs__cfs_s.min_vruntime)
			q->vruntime = xs__cfs_s.min_vruntime;
		q->was_ready = e[i].ready;
	}
	return cur;
}

/* The ready queue of least vruntime (the running one @cur on a tie) becomes the running
 * one from @now. */
static xs_sched_entry *xs__cfs_pick(xs_sched_entry *e, size_t n, xs_sched_entry *cur, int64_t now)
{
	xs_sched_entry *next = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].ready || !*e[i].slot)
			continue;
		double v = xs__cfs(&e[i])->vruntime;
		if (!next || v < xs__cfs(next)->vruntime ||
		    (v == xs__cfs(next)->vruntime && next == cur))
			next = &e[i];
	}
	if (cur)
		xs__cfs(cur)->current = false;
	xs__cfs_q *q = xs__cfs(next);
	q->current = true;
	q->run_start_ns = now;
	q->charged_ns = now;
	return next;
}

static int64_t xs__cfs_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	int64_t now = p->now_ns;
	int64_t slice = (p->timeslice_given ? p->timeslice_us : XS__CFS_SLICE_DEFAULT_US) * 1000;
	size_t nready;
	xs_sched_entry *cur = xs__cfs_account(e, n, now, &nready);
	if (!nready) {
		if (cur)
			xs__cfs(cur)->current = false;
		for (size_t i = 0; i < n; i++)
			e[i].suspend = false;
		return 0;
	}
	bool keep = cur && cur->ready && now - xs__cfs(cur)->run_start_ns < slice;
	if (!keep)
		cur = xs__cfs_pick(e, n, cur, now);
	for (size_t i = 0; i < n; i++)
		e[i].suspend = &e[i] != cur && *e[i].slot;
	return nready > 1 ? xs__cfs(cur)->run_start_ns + slice : 0;
}

const xs_policy_ops xs_policy_cfs = {
    .type = kPolicyCompletelyFairScheduler,
    .name = "CFS",
    .schedule = xs__cfs_schedule,
    .forget = xs_policy_slot_free,
    .reset = xs__cfs_reset,
};
