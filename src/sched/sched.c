/* The local scheduler thread and its configuration. See sched.h for the wake-up model.
 *
 * State: one struct (xs__s), re-initialised in a fork child. Locks, outermost first:
 *   xs__s.ctl  serializes configuration: start/stop of the thread, scheduler kind, policy
 *              choice (XHintSetScheduler, XSchedShutdown, first XQueueCreate);
 *   xs__s.lock guards the registered queues (xs__sq: hints, policy state), the policy
 *              (and its own state), the process-wide hints, the statistics and the
 *              scratch entries; a scheduling pass runs under it;
 *   xq->lock   of each XQueue, taken inside a pass through the engine's calls;
 *   xs__s.ev   a leaf: guards the dirty/stop flags the thread sleeps on.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>

#include "core/config.h"
#include "core/list.h"
#include "core/log.h"
#include "core/thread.h"
#include "core/trace.h"
#include "sched/policy.h"
#include "sched/sched.h"

/* The scheduler's state of one registered XQueue (xs_engine_sched_priv). */
typedef struct xs__sq {
	xs_xqueue *xq; /* holds a reference while registered */
	xs_link link;  /* xs__queues */
	uint64_t id;   /* registration order, from 1: the policies' tie-breaker */
	/* Under xs__s.lock: */
	xs_sched_hints h;
	void *policy_slot; /* per-queue state of the current policy */
	int limited;       /* applied with xs_engine_set_limited: 1, 0, -1 = not yet */
	bool sole;         /* applied with it: ranked above every other queue of the process */
	Priority applied;  /* the rank applied with it */
	size_t pass;       /* its index in xs__entries during a pass */
	bool lent;    /* during a pass: threads of other XQueues wait for it (xs_engine_lenders) */
	bool closing; /* during a pass: XQueueDestroy drains it, whatever the policy says */
	bool serves_closing; /* during a pass: a queue being destroyed waits for it, directly or
			      * along a chain (xs__lend_to): it is not limited either */
	/* During a pass: the XQueue whose event record its head command waits for (it is
	 * blocked), compared by address only; then that queue's index, or SIZE_MAX. */
	const xs_xqueue *dep_xq;
	size_t dep;
} xs__sq;

/* The scheduler's process-wide state, one struct, made anew in a fork child by one
 * re-initialisation (xs_sched_forked). The locks, outermost first, and what each guards: */
struct xs__sched {
	xs_mutex ctl;    /* configuration: the fields below it, up to `lock` */
	bool configured; /* kind and policy chosen (by a call or the env) */
	bool thread_running;
	pthread_t thread;

	xs_mutex lock;  /* the registered queues and a pass: the fields below it, up to `ev` */
	xs_link queues; /* xs__sq.link */
	const xs_policy_ops *policy;
	bool active;            /* a local scheduler decides (else app-managed) */
	uint64_t next_id;       /* the last registration's id */
	Timeslice timeslice_us; /* XHintTimeslice */
	bool timeslice_given;
	size_t k; /* XHintKDeadline */
	xs_sched_stats stats;

	xs_mutex ev; /* the thread's wake-up: the fields below it */
	bool dirty, stop;
};

#define XS__SCHED_INIT                                                                             \
	{                                                                                          \
		.ctl = XS_MUTEX_INITIALIZER, .lock = XS_MUTEX_INITIALIZER,                         \
		.queues = {&xs__s.queues, &xs__s.queues}, .policy = &xs_policy_hpf,                \
		.timeslice_us = TIMESLICE_DEFAULT, .k = 1, .ev = XS_MUTEX_INITIALIZER,             \
	}

static struct xs__sched xs__s = XS__SCHED_INIT;

/* Kept across a fork, not state: the pass's scratch arrays (under xs__s.lock; grown, never
 * freed), the condition variable the thread sleeps on (made once, CLOCK_MONOTONIC), and
 * in a child the parent's queue list, reachable for leak checkers (volatile: only ever
 * written, the store must stay). */
static struct xs__scratch {
	xs_sched_entry *entries;
	xs__sq **entry_q;
	Priority *top;       /* per entry during a pass: the top rank of its device */
	xs_remote_view *rem; /* per entry: other processes on its device (xs__remote_tops) */
	size_t cap;
} xs__x;
static xs_cond xs__ev_cv;
static pthread_once_t xs__ev_once = PTHREAD_ONCE_INIT;
static xs_link *volatile xs__parent_queues;

static void xs__ev_init(void)
{
	xs_cond_init(&xs__ev_cv);
}

/* Ask for a pass soon. Any thread, any lock (the engine calls it with xq->lock held). */
static void xs__wake(void)
{
	pthread_once(&xs__ev_once, xs__ev_init);
	xs_mutex_lock(&xs__s.ev);
	if (!xs__s.dirty) {
		xs__s.dirty = true;
		xs_cond_signal(&xs__ev_cv);
	}
	xs_mutex_unlock(&xs__s.ev);
}

static bool xs__grow(size_t n)
{
	if (n <= xs__x.cap)
		return true;
	size_t cap = xs__x.cap ? xs__x.cap * 2 : 16;
	while (cap < n)
		cap *= 2;
	xs_sched_entry *e = realloc(xs__x.entries, cap * sizeof(*e));
	if (!e)
		return false;
	xs__x.entries = e;
	xs__sq **q = realloc(xs__x.entry_q, cap * sizeof(*q));
	if (!q)
		return false;
	xs__x.entry_q = q;
	Priority *t = realloc(xs__x.top, cap * sizeof(*t));
	if (!t)
		return false;
	xs__x.top = t;
	xs_remote_view *r = realloc(xs__x.rem, cap * sizeof(*r));
	if (!r)
		return false;
	xs__x.rem = r;
	xs__x.cap = cap;
	return true;
}

static void xs__on_engine(xs_xqueue *xq)
{
	(void)xq;
	xs__wake();
}

/* The index of @dev in @devs[0..nd), or nd. */
static size_t xs__dev_index(const void *const *devs, size_t nd, const void *dev)
{
	size_t d = 0;
	while (d < nd && devs[d] != dev)
		d++;
	return d;
}

/* The top rank present on each entry's device (idle queues count: a queue of higher rank
 * may submit at any moment), into xs__x.top[i]: one pass for the devices' top ranks (a
 * process has few devices; past XS__MAX_DEVS the rest are looked up queue by queue).
 * Caller holds xs__s.lock; xs__x.entries[i].rank is set for each i. */
static void xs__find_tops(size_t n)
{
	XS_ASSERT_HELD(&xs__s.lock);
	enum { XS__MAX_DEVS = 16 };
	const void *devs[XS__MAX_DEVS];
	Priority tops[XS__MAX_DEVS];
	size_t nd = 0;
	for (size_t i = 0; i < n; i++) {
		const void *dev = xs_engine_device(xs__x.entry_q[i]->xq);
		Priority p = xs__x.entries[i].rank;
		size_t d = xs__dev_index(devs, nd, dev);
		if (d == nd && nd < XS__MAX_DEVS) {
			devs[nd] = dev;
			tops[nd++] = p;
		} else if (d < nd && p > tops[d]) {
			tops[d] = p;
		}
	}
	for (size_t i = 0; i < n; i++) {
		const void *dev = xs_engine_device(xs__x.entry_q[i]->xq);
		size_t d = xs__dev_index(devs, nd, dev);
		Priority top = xs__x.entries[i].rank;
		if (d < nd)
			top = tops[d];
		else
			for (size_t j = 0; j < n; j++)
				if (xs_engine_device(xs__x.entry_q[j]->xq) == dev &&
				    xs__x.entries[j].rank > top)
					top = xs__x.entries[j].rank;
		xs__x.top[i] = top;
	}
}

/* Other processes on each entry's device (preempt/remote.c, the device's board): publish
 * this process's top rank there (@part: under HPF, whose ranks are priorities; otherwise
 * none, and the process takes no part), take theirs into the device's top rank (idle
 * queues count, as local ones do: a queue below another process's top is limited), and
 * note in xs__x.rem whether one of their busy tops holds the device. One call per device
 * (past XS__MAX_DEVS devices, per entry). Caller holds xs__s.lock; xs__x.top[] is set. */
static void xs__remote_tops(size_t n, bool part)
{
	XS_ASSERT_HELD(&xs__s.lock);
	enum { XS__MAX_DEVS = 16 };
	const void *devs[XS__MAX_DEVS];
	xs_remote_view rs[XS__MAX_DEVS];
	const xs_remote_view none = {INT64_MIN, INT64_MIN, -1};
	size_t nd = 0;
	for (size_t i = 0; i < n; i++) {
		const void *dev = xs_engine_device(xs__x.entry_q[i]->xq);
		size_t d = xs__dev_index(devs, nd, dev);
		xs_remote_view r = none;
		if (d < nd) {
			r = rs[d];
		} else {
			if (!xs_remote_pass(dev, part ? xs__x.top[i] : INT64_MIN, &r))
				r = none;
			if (nd < XS__MAX_DEVS) {
				devs[nd] = dev;
				rs[nd++] = r;
			}
		}
		xs__x.rem[i] = r;
		if (r.top > xs__x.top[i])
			xs__x.top[i] = (Priority)r.top;
	}
}

/* Whether another process's busy top holds entry @i suspended, as a local top of the
 * device's top rank would under HPF: the queue ranks below it, the holders' co-run budget
 * lets nothing new run beside it (with one above 0 the engine's hold bounds it instead,
 * below Lv3), and no queue being destroyed waits for it. Caller holds xs__s.lock. */
static bool xs__remote_holds(size_t i)
{
	XS_ASSERT_HELD(&xs__s.lock);
	const xs_remote_view *r = &xs__x.rem[i];
	const xs_sched_entry *e = &xs__x.entries[i];
	return r->busy != INT64_MIN && e->rank < r->busy && !xs__x.entry_q[i]->serves_closing &&
	       (r->ask <= 0 || e->level >= kPreemptLevelInterrupt);
}

/* Every tier served (HPF, MLFQ): a ready (or lingering) queue keeps the queues below it
 * suspended only
 * if it is of its device's top rank (not limited). Below a busy queue that is itself
 * limited, the others are not suspended: the commitment budget holds them all, and shares
 * itself among their priorities by weight (preempt/budget.c, "Tiers"), so that a busy
 * middle priority does not take the whole device from the lower ones. Under strict
 * priority (XHintStrictPriority) the policy's suspensions stand. Caller holds xs__s.lock;
 * xs__x.top[] is set. */
static void xs__serve_tiers(size_t n)
{
	XS_ASSERT_HELD(&xs__s.lock);
	bool any = false;
	Priority hold = 0;
	for (size_t i = 0; i < n; i++)
		if (xs__x.entries[i].holds && xs__x.entries[i].rank >= xs__x.top[i] &&
		    (!any || xs__x.entries[i].rank > hold)) {
			hold = xs__x.entries[i].rank;
			any = true;
		}
	for (size_t i = 0; i < n; i++)
		if (xs__x.entries[i].suspend && (!any || xs__x.entries[i].rank >= hold))
			xs__x.entries[i].suspend = false;
}

/* Mark as limited every queue below the top rank present on its device (xs__x.top). The
 * rank is the policy's output (xs_sched_entry.rank): the priority hint, or MLFQ's level.
 * Under a policy whose ranks are the hints (HPF), a queue whose rank is above every other
 * queue's of the process (HPF compares priorities across devices; inheritance gives a lent
 * queue its lender's rank, so neither is alone), not suspended, is also marked *sole*: no
 * pass suspends it until a hint changes or a queue is created, so its commands need no
 * counter wait (xs_engine_set_limited). Caller holds xs__s.lock; xs__x.entries[i].rank and
 * .suspend and xs__x.top[i] are set for each i. */
static void xs__apply_limits(size_t n, bool lift)
{
	XS_ASSERT_HELD(&xs__s.lock);
	size_t ntop = 0; /* queues of the process's top rank */
	Priority gtop = 0;
	for (size_t i = 0; i < n; i++) {
		Priority p = xs__x.entries[i].rank;
		if (!ntop || p > gtop) {
			gtop = p;
			ntop = 1;
		} else if (p == gtop) {
			ntop++;
		}
	}
	for (size_t i = 0; i < n; i++) {
		xs__sq *sq = xs__x.entry_q[i];
		Priority rank = xs__x.entries[i].rank;
		int limited = !lift && !sq->serves_closing && rank < xs__x.top[i];
		bool sole = !lift && xs__s.policy->hint_ranks && rank == gtop && ntop == 1 &&
			    rank >= xs__x.top[i] && !xs__x.entries[i].suspend;
		if (limited != sq->limited || rank != sq->applied || sole != sq->sole) {
			sq->limited = limited;
			sq->applied = rank;
			sq->sole = sole;
			xs_engine_set_limited(sq->xq, limited, sole, rank);
		}
	}
}

/* Priority inheritance from the queue of entry @from to entry @to_i (which serves
 * @from): before the policy decides (@pre), its priority and rank become at least
 * @from's; after it, its rank, and it is not suspended while @from is not. A queue being
 * destroyed (its drain overrides suspensions, and what it drains waits for the one it
 * lends to) passes on more: the queue it waits for, and any that one waits for, is
 * neither suspended nor limited (serves_closing; the budget's hold would keep it as
 * surely). Returns whether @to_i changed. */
static bool xs__lend_to(size_t to_i, size_t from, bool pre)
{
	xs_sched_entry *to = &xs__x.entries[to_i];
	const xs_sched_entry *b = &xs__x.entries[from];
	const xs__sq *f = xs__x.entry_q[from];
	xs__sq *t = xs__x.entry_q[to_i];
	bool changed = false;
	if ((f->closing || f->serves_closing) && !t->serves_closing) {
		t->serves_closing = true; /* the budget's hold must not keep it either */
		changed = true;
	}
	if (pre && b->prio > to->prio) {
		to->prio = to->rank = b->prio;
		changed = true;
	}
	if (!pre && b->rank > to->rank) {
		to->rank = b->rank;
		changed = true;
	}
	if (!pre && (!b->suspend || f->closing || f->serves_closing) && to->suspend) {
		to->suspend = false;
		changed = true;
	}
	return changed;
}

/* One lending of xs__inherit: the entry lent to, the pass's size and half, and whether a
 * lender changed its rank. */
typedef struct xs__lending {
	size_t to, n;
	bool pre, changed;
} xs__lending;

/* xs_engine_lenders' call for each XQueue @from whose thread waits for the entry @arg
 * names (under that queue's lock). Caller holds xs__s.lock (xs__inherit). */
static void xs__lender(void *arg, const xs_xqueue *from)
{
	XS_ASSERT_HELD(&xs__s.lock);
	xs__lending *l = arg;
	const xs__sq *f = xs_engine_sched_priv(from);
	if (!f || f->pass >= l->n || xs__x.entry_q[f->pass] != f)
		return; /* not registered, or since this pass began */
	l->changed |= xs__lend_to(l->to, f->pass, l->pre);
}

/* Priority inheritance, over two relations. A queue that threads of other queues'
 * commands wait for (xs_engine_lenders: a host function's XQueueWait or
 * XQueueLaunchInline) serves each of them; so does the queue whose event record a
 * blocked queue's head command waits for (preempt/deps.c). The served queue ranks as
 * the most important of those it serves (xs__lend_to). Chains pass it on (repeated until
 * nothing changes). Both are rare: only queues found lent or blocked while the entries
 * were built are looked at. Caller holds xs__s.lock (which guards the scheduler's state of
 * each queue, xs_engine_sched_priv). */
static void xs__inherit(size_t n, bool pre)
{
	XS_ASSERT_HELD(&xs__s.lock);
	bool changed = true;
	for (size_t round = 0; changed && round < n; round++) {
		changed = false;
		for (size_t i = 0; i < n; i++) {
			xs__sq *sq = xs__x.entry_q[i];
			if (sq->dep < n)
				changed |= xs__lend_to(sq->dep, i, pre);
			if (!sq->lent)
				continue;
			xs__lending l = {.to = i, .n = n, .pre = pre};
			xs_engine_lenders(sq->xq, xs__lender, &l);
			changed |= l.changed;
		}
	}
}

/* Link each blocked queue of this pass to the entry of the queue it waits for (by
 * address: that queue may be gone, and is then not among the entries). Returns whether
 * any is linked. Caller holds xs__s.lock. */
static bool xs__link_deps(size_t n)
{
	XS_ASSERT_HELD(&xs__s.lock);
	bool any = false;
	for (size_t i = 0; i < n; i++) {
		xs__sq *sq = xs__x.entry_q[i];
		if (!sq->dep_xq)
			continue;
		for (size_t j = 0; j < n; j++)
			if (j != i && xs__x.entry_q[j]->xq == sq->dep_xq) {
				sq->dep = j;
				any = true;
				break;
			}
	}
	return any;
}

/* Phase 1: the policy's snapshot of queue @sq as entry @i (its engine state read under
 * its lock, its hints under xs__s.lock). Sets *@lent and *@deps when it is lent to or
 * blocked on a record (inheritance to do). Caller holds xs__s.lock. */
static void xs__snapshot_one(xs__sq *sq, size_t i, bool *lent, bool *deps)
{
	XS_ASSERT_HELD(&xs__s.lock);
	xs_sched_entry *e = &xs__x.entries[i];
	const xs_sched_hints *h = &sq->h;
	sq->pass = i;
	xs__x.entry_q[i] = sq;
	xs_xqueue_snap s;
	xs_engine_snapshot(sq->xq, &s);
	e->ready = s.ready;
	e->ready_since_ns = s.ready_since_ns;
	e->suspend = s.sched_suspended;
	e->level = s.level;
	e->busy_ns = s.busy_ns;
	sq->lent = s.lent;
	sq->closing = s.closing;
	sq->serves_closing = false;
	sq->dep_xq = s.blocked_on;
	sq->dep = SIZE_MAX;
	*deps |= sq->dep_xq != NULL;
	*lent |= sq->lent;
	e->id = sq->id;
	e->prio = e->rank = h->prio;
	if (h->prio == PRIORITY_NO_EXECUTE)
		e->ready = false; /* out of the policy's sight: suspended below */
	e->holds = e->ready;
	e->util = h->has_util ? h->util : UTILIZATION_DEFAULT;
	e->deadline_us = h->has_deadline ? h->deadline_us : NO_DEADLINE;
	e->laxity_us = h->has_laxity ? h->laxity_us : NO_LAXITY;
	e->lax_prio = h->lax_prio;
	e->crit_prio = h->crit_prio;
	e->slot = &sq->policy_slot;
}

/* Phase 2: the policy decides, between the two halves of priority inheritance (@inherit:
 * some queue is lent to or blocked on another). Returns the policy's timer. Caller holds
 * xs__s.lock. */
static int64_t xs__decide(size_t n, bool inherit)
{
	XS_ASSERT_HELD(&xs__s.lock);
	xs_sched_params params = {
	    .now_ns = xs_now_ns(),
	    .timeslice_us = xs__s.timeslice_us,
	    .timeslice_given = xs__s.timeslice_given,
	    .k = xs__s.k,
	};
	if (inherit)
		xs__inherit(n, true);
	int64_t timer = xs__s.policy->schedule(xs__x.entries, n, &params);
	if (inherit)
		xs__inherit(n, false);
	return timer;
}

/* Phase 3: the engine's rules over the policy's suspensions. Every tier served (below a
 * busy queue that is itself limited, the budget holds the others: xs__serve_tiers). Under
 * HPF and MLFQ with a co-run budget on the queue's device (the process's, or a latency
 * objective's: preempt/objective.c, which asks for a pass when it moves between 0 and
 * more), or pacing slices (a latency objective's, preempt/pace.h), the engine's hold
 * carries out the suspensions of queues below Lv3: they co-run within that budget, or run
 * in the slices, instead of stopping (preempt/budget.c). Lv3 stops its queues
 * outright, as it exists to, and so does every level with a co-run budget of 0. Other
 * processes on a device count as its queues (xs__remote_tops, xs__remote_holds). And
 * PRIORITY_NO_EXECUTE suspends. Caller holds xs__s.lock. */
static void xs__engine_rules(size_t n)
{
	XS_ASSERT_HELD(&xs__s.lock);
	xs__find_tops(n);
	xs__remote_tops(n, xs__s.policy->hint_ranks && xs__s.policy->hold);
	if (xs__s.policy->hold && !xs_settings_strict())
		xs__serve_tiers(n);
	for (size_t i = 0; i < n; i++) {
		xs_sched_entry *e = &xs__x.entries[i];
		const xs_xqueue *xq = xs__x.entry_q[i]->xq;
		if (xs__s.policy->hold && e->level < kPreemptLevelInterrupt &&
		    (xs_objective_corun_of(xq) > 0 || xs_objective_paced(xq)))
			e->suspend = false;
		if (xs__remote_holds(i))
			e->suspend = true; /* another process's top (HPF across processes) */
		if (xs__x.entry_q[i]->h.prio == PRIORITY_NO_EXECUTE)
			e->suspend = true; /* XSched: "the XQueue will not be executed" */
	}
}

/* Phase 4: apply: suspend first, then resume (a moment with both running would defeat the
 * policy), then the limits and hardware priorities; trace the pass. Caller holds
 * xs__s.lock. */
static void xs__apply_pass(size_t n)
{
	XS_ASSERT_HELD(&xs__s.lock);
	for (size_t i = 0; i < n; i++)
		if (xs__x.entries[i].suspend)
			xs_engine_sched_suspend(xs__x.entry_q[i]->xq, true);
	for (size_t i = 0; i < n; i++)
		if (!xs__x.entries[i].suspend)
			xs_engine_sched_suspend(xs__x.entry_q[i]->xq, false);
	xs__apply_limits(n, false);
	if (atomic_load_explicit(&xs_trace_on, memory_order_relaxed)) {
		uint64_t held = 0;
		for (size_t q = 0; q < n; q++)
			held += xs__x.entries[q].suspend;
		xs_trace_emit(XS_TR_PASS, 0, n, (int64_t)held);
	}
}

/* One scheduling pass, as its phases. Caller holds xs__s.lock. Returns the policy's timer
 * (0 = none). */
static int64_t xs__pass(void)
{
	XS_ASSERT_HELD(&xs__s.lock);
	if (!xs__s.active)
		return 0;
	size_t n = 0;
	xs_list_for_each(l, &xs__s.queues) n++;
	if (!xs__grow(n)) {
		XS_ERROR("sched", "out of memory for %zu queue entries; pass skipped", n);
		return xs_now_ns() + 1000000; /* try again in 1 ms */
	}
	size_t i = 0;
	bool lent = false, deps = false;
	xs_list_for_each(l, &xs__s.queues)
	    xs__snapshot_one(xs_container_of(l, xs__sq, link), i++, &lent, &deps);
	xs__s.stats.passes++;
	int64_t timer = xs__decide(n, lent | (deps && xs__link_deps(n)));
	xs__engine_rules(n);
	xs__apply_pass(n);
	return timer;
}

/* Count a timer wake-up @late_ns after its deadline. Caller holds xs__s.lock. */
static void xs__count_timer(int64_t late_ns)
{
	XS_ASSERT_HELD(&xs__s.lock);
	static const int64_t bounds_us[XS_SCHED_LATE_BUCKETS - 1] = {
	    10, 50, 100, 200, 500, 1000, 2000,
	};
	size_t b = 0;
	while (b < XS_SCHED_LATE_BUCKETS - 1 && late_ns >= bounds_us[b] * 1000)
		b++;
	xs__s.stats.timer_wakeups++;
	xs__s.stats.late_hist[b]++;
	xs__s.stats.late_sum_ns += late_ns;
	if (late_ns > xs__s.stats.late_max_ns)
		xs__s.stats.late_max_ns = late_ns;
}

static void *xs__main(void *arg)
{
	(void)arg;
#ifdef PR_SET_TIMERSLACK
	/* Wake at the deadline, not up to 50 us after it (the default slack of a thread). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
	int64_t timer = 0;
	for (;;) {
		int64_t late_ns = -1;
		xs_mutex_lock(&xs__s.ev);
		while (!xs__s.dirty && !xs__s.stop) {
			if (!timer) {
				xs_cond_wait(&xs__ev_cv, &xs__s.ev);
			} else if (!xs_cond_timedwait(&xs__ev_cv, &xs__s.ev, timer)) {
				late_ns = xs_now_ns() - timer;
				break;
			}
		}
		bool stop = xs__s.stop;
		xs__s.dirty = false;
		xs_mutex_unlock(&xs__s.ev);
		if (stop)
			break;
		xs_mutex_lock(&xs__s.lock);
		if (late_ns >= 0)
			xs__count_timer(late_ns);
		timer = xs__pass();
		xs_mutex_unlock(&xs__s.lock);
	}
	return NULL;
}

/* Stop the thread and lift every scheduler suspension. Caller holds xs__s.ctl. */
static void xs__stop_locked(void)
{
	XS_ASSERT_HELD(&xs__s.ctl);
	xs_mutex_lock(&xs__s.lock);
	xs__s.active = false;
	xs_dev_set_hold(false);
	xs_mutex_unlock(&xs__s.lock);
	if (xs__s.thread_running) {
		xs_mutex_lock(&xs__s.ev);
		xs__s.stop = true;
		xs_cond_signal(&xs__ev_cv);
		xs_mutex_unlock(&xs__s.ev);
		xs_thread_join(xs__s.thread);
		xs__s.thread_running = false;
		xs_mutex_lock(&xs__s.ev);
		xs__s.stop = false;
		xs_mutex_unlock(&xs__s.ev);
		XS_INFO("sched", "scheduler thread stopped");
	}
	xs_mutex_lock(&xs__s.lock);
	size_t n = 0;
	xs_list_for_each(l, &xs__s.queues)
	{
		xs__sq *sq = xs_container_of(l, xs__sq, link);
		xs_engine_sched_suspend(sq->xq, false);
		if (xs__grow(n + 1)) {
			xs__x.entries[n].rank = sq->h.prio;
			xs__x.entry_q[n++] = sq;
		}
	}
	xs__find_tops(n);
	xs__remote_tops(n, false); /* other processes: this one takes no part any more */
	xs__apply_limits(n, true);
	xs_mutex_unlock(&xs__s.lock);
}

/* Make the local scheduler run @policy. Caller holds xs__s.ctl. */
static XResult xs__start_locked(const xs_policy_ops *policy)
{
	XS_ASSERT_HELD(&xs__s.ctl);
	pthread_once(&xs__ev_once, xs__ev_init);
	xs_mutex_lock(&xs__s.lock);
	if (xs__s.policy != policy) {
		if (xs__s.policy->forget)
			xs_list_for_each(l, &xs__s.queues)
			    xs__s.policy->forget(&xs_container_of(l, xs__sq, link)->policy_slot);
		xs_list_for_each(l, &xs__s.queues) xs_container_of(l, xs__sq, link)->policy_slot =
		    NULL;
		xs__s.policy = policy;
		if (policy->reset)
			policy->reset();
		XS_INFO("sched", "policy %s", policy->name);
	}
	xs__s.active = true;
	xs_dev_set_hold(policy->hold);
	xs_mutex_unlock(&xs__s.lock);
	if (!xs__s.thread_running) {
		int err = xs_thread_start(&xs__s.thread, "xsched-sched", xs__main, NULL);
		if (err) {
			XS_ERROR("sched", "cannot start the scheduler thread (errno %d)", err);
			xs_mutex_lock(&xs__s.lock);
			xs__s.active = false;
			xs_mutex_unlock(&xs__s.lock);
			return kXSchedErrorUnknown;
		}
		xs__s.thread_running = true;
		XS_INFO("sched", "scheduler thread started with policy %s", policy->name);
	}
	xs__s.configured = true;
	xs__wake();
	return kXSchedSuccess;
}

/* Configure from XSCHED_SCHEDULER / XSCHED_POLICY. Caller holds xs__s.ctl. */
static XResult xs__configure_from_env(void)
{
	XS_ASSERT_HELD(&xs__s.ctl);
	const xs_config *cfg = xs_config_get();
	const xs_policy_ops *policy = &xs_policy_hpf;
	xs_signal_set_notify(xs__on_engine);
	if (cfg->policy) {
		policy = xs_policy_find_name(cfg->policy);
		if (!policy) {
			char names[128];
			xs_policy_names(names, sizeof(names));
			xs_log_setting("XSCHED_POLICY=%.64s is not a policy of this library (%s); "
				       "using HPF (the default)",
				       cfg->policy, names);
			policy = &xs_policy_hpf;
		}
	} else if (cfg->app_managed) {
		xs__s.configured = true;
		XS_INFO("sched", "application-managed scheduling (XSCHED_SCHEDULER=APP)");
		return kXSchedSuccess;
	}
	return xs__start_locked(policy);
}

XResult xs_sched_add(xs_xqueue *xq)
{
	xs__sq *sq = calloc(1, sizeof(*sq));
	if (!sq)
		return kXSchedErrorUnknown;
	sq->h.prio = PRIORITY_DEFAULT;
	sq->limited = -1;
	xs_obj_ref(xs_xqueue_obj(xq));
	sq->xq = xq;
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__s.ctl);
	if (!xs__s.configured)
		res = xs__configure_from_env();
	if (res == kXSchedSuccess) {
		xs_mutex_lock(&xs__s.lock);
		sq->id = ++xs__s.next_id;
		xs_engine_set_sched_priv(xq, sq);
		xs_list_push_back(&xs__s.queues, &sq->link);
		xs_mutex_unlock(&xs__s.lock);
	}
	xs_mutex_unlock(&xs__s.ctl);
	if (res != kXSchedSuccess) {
		xs_obj_unref(xs_xqueue_obj(xq));
		free(sq);
		return res;
	}
	xs__wake();
	return res;
}

void xs_sched_remove(xs_xqueue *xq)
{
	xs_mutex_lock(&xs__s.lock);
	xs__sq *sq = xs_engine_sched_priv(xq);
	xs_engine_set_sched_priv(xq, NULL);
	if (sq) {
		xs_list_remove(&sq->link);
		if (xs__s.policy->forget)
			xs__s.policy->forget(&sq->policy_slot);
	}
	xs_mutex_unlock(&xs__s.lock);
	if (sq) {
		xs_obj_unref(xs_xqueue_obj(sq->xq));
		free(sq);
	}
	xs__wake(); /* others may run now */
}

void xs_sched_get_hints(xs_xqueue *xq, xs_sched_hints *out)
{
	xs_mutex_lock(&xs__s.lock);
	const xs__sq *sq = xs_engine_sched_priv(xq);
	if (sq)
		*out = sq->h;
	else
		memset(out, 0, sizeof(*out));
	xs_mutex_unlock(&xs__s.lock);
}

void xs_sched_set_hints(xs_xqueue *xq, const xs_sched_hints *h, bool apply)
{
	xs_mutex_lock(&xs__s.lock);
	xs__sq *sq = xs_engine_sched_priv(xq);
	if (sq)
		sq->h = *h;
	/* The pass that applies the hints runs here, under the same lock: no pass that saw
	 * the old ones can come after it. Its timer is the thread's business: the thread
	 * passes again (below) and sets it. */
	if (sq && apply)
		xs__pass();
	xs_mutex_unlock(&xs__s.lock);
	xs__wake();
}

XResult xs_sched_configure(XSchedulerType scheduler, XPolicyType policy)
{
	XS_TRACE(XS_TR_POLICY, 0, scheduler, policy);
	const xs_policy_ops *ops = NULL;
	if (scheduler == kSchedulerLocal) {
		ops = xs_policy_find(policy);
		if (!ops) {
			XS_FAIL("sched",
				"XHintSetScheduler: policy %d is not built in this library",
				(int)policy);
			return kXSchedErrorNotSupported;
		}
	}
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__s.ctl);
	xs_signal_set_notify(xs__on_engine);
	if (ops) {
		res = xs__start_locked(ops);
	} else {
		xs__stop_locked();
		xs__s.configured = true;
	}
	xs_mutex_unlock(&xs__s.ctl);
	return res;
}

void xs_sched_shutdown(void)
{
	xs_mutex_lock(&xs__s.ctl);
	xs__stop_locked();
	xs__s.configured = false;
	xs_mutex_lock(&xs__s.lock);
	if (xs__s.policy->reset)
		xs__s.policy->reset(); /* policies re-read their settings on the next start */
	xs__s.timeslice_us = TIMESLICE_DEFAULT;
	xs__s.timeslice_given = false;
	xs__s.k = 1;
	xs_mutex_unlock(&xs__s.lock);
	xs_mutex_unlock(&xs__s.ctl);
}

void xs_sched_set_strict(bool strict)
{
	xs_dev_set_strict(strict);
	xs__wake();
}

void xs_sched_set_timeslice(Timeslice ts_us)
{
	xs_mutex_lock(&xs__s.lock);
	xs__s.timeslice_us = ts_us;
	xs__s.timeslice_given = true;
	xs_mutex_unlock(&xs__s.lock);
	xs__wake();
}

void xs_sched_set_k(size_t k)
{
	xs_mutex_lock(&xs__s.lock);
	xs__s.k = k;
	xs_mutex_unlock(&xs__s.lock);
	xs__wake();
}

void xs_sched_get_stats(xs_sched_stats *out)
{
	xs_mutex_lock(&xs__s.lock);
	*out = xs__s.stats;
	xs_mutex_unlock(&xs__s.lock);
}

void xs_sched_forked(void)
{
	/* The parent's threads do not exist here: no thread to join, no queue registered
	 * (the parent's XQueues are unreachable, kept reachable for leak checkers); the
	 * scheduler starts again on first use, from its initial state. */
	if (xs__s.policy->reset)
		xs__s.policy->reset();
	xs__parent_queues = xs_list_first(&xs__s.queues);
	xs__s = (struct xs__sched)XS__SCHED_INIT;
	xs__ev_once = (pthread_once_t)PTHREAD_ONCE_INIT; /* the condition variable anew */
}

XPolicyType xs_sched_current_policy(void)
{
	xs_mutex_lock(&xs__s.lock);
	XPolicyType t = xs__s.active ? xs__s.policy->type : kPolicyUnknown;
	xs_mutex_unlock(&xs__s.lock);
	return t;
}
