/* The commitment budget: how much lower-priority work a device may hold committed.
 *
 * Per device, the XQueues the scheduler marks *limited* (below the top priority present on
 * the device) commit a command only when it is *charged*: its estimated device time (the
 * XQueue's moving average, xs_xqueue.est_ns; while a top queue holds the device, what its
 * scope position held before under a co-run budget, and the larger of its prediction and
 * the mean where the device paces: enum xs_est_kind) is added to the device's charged
 * work and returned when the command completes (or is decommitted before it started). The
 * cap on the charged work is
 *   - the co-run budget (XSCHED_CORUN_US, XHintCorunBudget; at most the commitment
 *     budget) while an XQueue that is not limited has work and the hold is on (HPF):
 *     lower work keeps running beside the top queue's, bounded, and the top queue's
 *     hardware priority lets its blocks dispatch first; a co-run budget of 0 commits
 *     nothing new meanwhile (and HPF then suspends the lower queues, sched/sched.c);
 *   - the commitment budget (XSCHED_BUDGET_US, XHintCommitBudget) otherwise: what a
 *     top-priority arrival finds on the device.
 * While an XQueue of the device has a latency objective, objective.c sizes the co-run
 * budget instead (xs_device.obj_level): from 0 up past the commitment budget, to not
 * limited at all (no cap, held or not: only hardware stream priority acts).
 * Outside the co-run, one command may always be charged when nothing is (a command longer
 * than the budget still runs, one at a time). In the co-run only commands that fit are
 * charged: a lower command longer than the co-run budget waits until the top queues are
 * idle (measured on an H100: one SGEMM 2048 co-running with a chain of SGEMM 1024 made
 * each high kernel wait for its long blocks, 4x the chain's alone time). The bound is
 * device-wide, whatever the number of XQueues.
 *
 * No bubbles: the charged work counts device time still to run, not whole commands. The
 * charged set has run since the last completion (since_ns), so up to that much of it, but
 * never more than one command's worth, is taken as done; when what remains plus the next
 * command fits the cap, or what remains is within the lead (100 us or an eighth of a
 * command), the next command is
 * committed before the running one completes and the device does not wait for the host
 * between two lower commands. The progress thread wakes at that moment
 * (xs_budget_next_ns). So the charged work exceeds the cap by at most one command, and
 * only in the last part of another's run. A budget of 0 keeps strictly one command.
 *
 * Order, in two steps, both start-time fair queuing by estimated device time:
 *   - Tiers: the priorities (xs_xqueue.prio, from the scheduler) of the waiters share the
 *     budget by weight, however many there are (a tier per priority: xs_budget_reserve
 *     keeps one per XQueue of the device). Each tier has a virtual time, advanced at each
 *     charge by the charge times 4^k, k = the number of waiting tiers above it, but at
 *     most 8n, n = the number of waiting tiers (xs__tier_weight): with two tiers waiting,
 *     the higher gets 4/5 of the device time the budget hands out, the lower 1/5; a tier
 *     waiting alone gets everything; up to three tiers the weights are 4^-k, and deeper
 *     ones keep a floor, 1/(12n) of the device time at least (eight tiers: the lowest
 *     gets 1/89 instead of 4^-7). The waiting tier of least virtual time goes first
 *     (ties: the higher priority). So a busy queue of middle priority
 *     keeps the lower ones served, at a fifth, instead of taking the whole budget (with
 *     15 or 127 low queues under one middle one, 0.5.3 let 30 low commands through in
 *     4 s). The weight 4 is a choice, not a measurement: what a middle priority should
 *     get over a lower one, short of all of it. XHintStrictPriority() (or
 *     XSCHED_STRICT_PRIORITY=1) restores strict order: highest priority first.
 *   - Within a tier, by least virtual time of the queue: the device time it was charged
 *     so far, so equal-priority queues share the budget in device time whatever their
 *     number and command kinds.
 * A queue (a tier) that starts waiting is brought up to the device's virtual floor (the
 * tier's floor), so idle spells bank no credit; a queue whose priority changes starts at
 * its new tier's floor (xs_budget_set_prio), as a task joining a run queue starts at its
 * min_vruntime in CFS: the credit or debt of its old tier's order would count in the new
 * one (a busy queue moved down waited seconds for the new tier's queues to catch up with
 * the device time it had been charged). A queue that arrives with room in the
 * budget is admitted only if no waiter ranks before it. The tier chosen may have no room
 * for its command while a higher one would fit: the grant then stops until completions
 * make room (the higher tier waits too), which is what keeps a lower tier's long
 * commands from starving behind a stream of short higher ones.
 *
 * lower_end_ns (when the charged work last fell to none) tells objective.c which commands
 * of a protected queue ran alone.
 *
 * Locks: everything here is under dev->lock (a leaf for this file); charge and uncharge
 * are called with xq->lock held (xq->lock -> dev->lock). The process-wide budgets are
 * atomics read on the hot path.
 *
 * A leaf of the state machine: this file calls only the leaves below it, pacing (pace.c),
 * other processes (remote.c), the settings (settings.c) and the signals (signal.c: the
 * progress thread hands budget on). It answers (the queue to grant next, whether a grant
 * found the budget full) and device.c and engine.c act (the grant itself).
 */
#include <stdlib.h>

#include "core/log.h"
#include "core/trace.h"
#include "preempt/engine_int.h"

/* Whether the top-priority queues of @d have work and hold the others to the co-run
 * budget: this process's, or another process's on the device's board (remote.c). Caller
 * holds d->lock. */
static bool xs__held(const xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
	return (d->top_busy || xs_remote_held(d)) && xs_settings_hold();
}

/* The cap in force on @d with this process's settings, in ns, given the commitment
 * @budget; -1 = nothing new may be committed. The co-run budget is never more than the
 * commitment budget. Caller holds d->lock. */
static int64_t xs__cap_own(const xs_device *d, int64_t budget)
{
	XS_ASSERT_HELD(&d->lock);
	if (d->obj_level >= 0) { /* a latency objective's controller sizes it (objective.c) */
		int64_t corun = atomic_load_explicit(&d->obj_corun_ns, memory_order_relaxed);
		if (corun == INT64_MAX)
			return INT64_MAX; /* not limited, held or not */
		if (!xs__held(d))
			return budget;
		return corun <= 0 ? -1 : corun; /* may exceed the commitment budget */
	}
	if (!xs__held(d))
		return budget;
	int64_t corun = xs_settings_corun_ns();
	return corun <= 0 ? -1 : corun < budget ? corun : budget;
}

/* The cap in force on @d, in ns; -1 = nothing new may be committed. Other processes on
 * the device (remote.c): the commitment budget is shared among those with lower work; a
 * top of another process that holds this one sets the co-run budget (the tightest holder
 * wins, this process's own included). Caller holds d->lock. */
static int64_t xs__cap(const xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
	int64_t budget = xs_remote_share(d, xs_settings_budget_ns());
	if (!xs_remote_held(d))
		return xs__cap_own(d, budget);
	int64_t remote = xs_remote_corun(d);
	if (!d->top_busy)
		return remote; /* held by another process's top alone */
	int64_t own = xs__cap_own(d, budget);
	return own < remote ? own : remote;
}

/* How much of the charged work may be taken as done, at most: one command's worth (the
 * mean), so that a device that runs slower than estimated, or not at all, is never
 * credited with more than one command it has not finished. Caller holds d->lock. */
static int64_t xs__credit_max(const xs_budget *b)
{
	return b->charged_cmds ? b->charged_ns / (int64_t)b->charged_cmds : 0;
}

/* How long before the charged work's expected end the next command may be committed. */
static int64_t xs__lead(const xs_budget *b)
{
	int64_t eighth = xs__credit_max(b) / 8;
	return eighth > XS_BUDGET_LEAD_NS ? eighth : XS_BUDGET_LEAD_NS;
}

/* Charged device time still to run at @now. Caller holds d->lock. */
static int64_t xs__remaining(const xs_budget *b, int64_t now)
{
	int64_t ran = now - b->since_ns, max = xs__credit_max(b);
	if (ran < 0)
		ran = 0;
	return b->charged_ns - (ran < max ? ran : max);
}

/* Whether a command of @est ns fits on @d at @now. While held, a pacing slice that is open
 * (pace.h) admits what is predicted to end within it, beside the co-run budget. Caller
 * holds d->lock. */
static bool xs__room(const xs_device *d, int64_t est, int64_t now)
{
	XS_ASSERT_HELD(&d->lock);
	const xs_budget *b = &d->budget;
	int64_t cap = xs__cap(d);
	/* A pacing slice admits what ends within it, unless another process's top holds the
	 * device with nothing allowed beside it (the board: its hold wins over our slice). */
	if (xs__held(d) && xs_pace_fits(&d->pace, now, xs__remaining(b, now), est) &&
	    !xs_remote_revokes(d))
		return true;
	if (cap < 0)
		return false;
	if (xs__held(d))
		return xs__remaining(b, now) + est <= cap; /* co-run: only what fits */
	if (b->charged_cmds == 0) /* other processes: none has work charged or waits longer */
		return xs_remote_may_start(d, now) || est <= cap;
	if (cap == 0)
		return false; /* a budget of 0: strictly one command at a time */
	int64_t rem = xs__remaining(b, now);
	return rem + est <= cap || rem <= xs__lead(b);
}

/* Whether waiter @w ranks before a queue of its tier with virtual time @vt. */
static bool xs__before(const xs_xqueue *w, int64_t vt)
{
	return w->vtime_ns < vt;
}

/* Which charge a lower command makes on @d now (enum xs_est_kind). Caller holds d->lock. */
static int xs__kind(const xs_device *d)
{
	if (!xs__held(d))
		return XS_EST_IDLE;
	return atomic_load_explicit(&d->obj_pace, memory_order_relaxed) > 0 ? XS_EST_PACE
									    : XS_EST_CORUN;
}

/* The space left for one more command while held (co-run), else INT64_MAX: waiters
 * whose command does not fit then give way to those whose command does. Caller holds
 * d->lock. */
static int64_t xs__space(const xs_device *d, int64_t now)
{
	XS_ASSERT_HELD(&d->lock);
	if (!xs__held(d))
		return INT64_MAX;
	int64_t rem = xs__remaining(&d->budget, now), space = xs__cap(d) - rem;
	if (xs_pace_open_at(&d->pace, now) && d->pace.end_ns - now - rem > space)
		space = d->pace.end_ns - now - rem; /* a pacing slice's room (pace.h) */
	return space;
}

/* The tier of priority @prio, or NULL (none yet). Caller holds d->lock. */
static const xs_tier *xs__tier_of(const xs_budget *b, int64_t prio)
{
	for (unsigned i = 0; i < b->ntiers; i++)
		if (b->tiers[i].prio == prio)
			return &b->tiers[i];
	return NULL;
}

/* The virtual floor of the queues of priority @prio: their tier's (a queue's virtual time
 * counts its device time within its tier: a busy higher tier must not set the floor a
 * lower one's queues are raised to), or the device's where the priority has no tier
 * (strict priority). Caller holds d->lock. */
static int64_t *xs__qfloor(xs_budget *b, int64_t prio)
{
	xs_tier *t = (xs_tier *)xs__tier_of(b, prio);
	return t ? &t->qfloor_ns : &b->vfloor_ns;
}

/* Whether a waiter of priority @prio (other than @skip) waits and may be served. Caller
 * holds d->lock. */
static bool xs__tier_waits(const xs_budget *b, int64_t prio, const xs_xqueue *skip)
{
	xs_list_for_each(l, &b->waiters)
	{
		const xs_xqueue *w = xs_container_of(l, xs_xqueue, wait_link);
		if (w != skip && w->prio == prio && !w->wait_paused)
			return true;
	}
	return false;
}

/* The tier without a waiter that is furthest behind, or NULL. Caller holds d->lock. */
static xs_tier *xs__tier_idle(xs_budget *b)
{
	xs_tier *t = NULL;
	for (unsigned i = 0; i < b->ntiers; i++)
		if ((!t || b->tiers[i].vtime_ns < t->vtime_ns) &&
		    !xs__tier_waits(b, b->tiers[i].prio, NULL))
			t = &b->tiers[i];
	return t;
}

/* The tier of @prio, made (at the floor) if there is none: a new one while there is room
 * (xs_budget_reserve), else the one without a waiter that is furthest behind (whose debt
 * is the least to forget; with a tier per XQueue of the device there is always one). A
 * tier with no waiter is brought up to the floor: idle spells bank no credit. NULL only
 * if the device's queues outnumber its tiers (never: attach reserves). Caller holds
 * d->lock. */
static xs_tier *xs__tier_get(xs_budget *b, int64_t prio, const xs_xqueue *self)
{
	xs_tier *t = (xs_tier *)xs__tier_of(b, prio);
	if (!t) {
		t = b->ntiers < b->tiers_cap ? &b->tiers[b->ntiers++] : xs__tier_idle(b);
		if (!t)
			return NULL;
		t->prio = prio;
		t->vtime_ns = b->tier_floor_ns;
		t->qfloor_ns = b->vfloor_ns; /* its queues start level with the last grant */
	} else if (t->vtime_ns < b->tier_floor_ns && !xs__tier_waits(b, prio, self)) {
		t->vtime_ns = b->tier_floor_ns;
	}
	return t;
}

/* The virtual time of the tier of @prio. A priority without a tier (its queues came to
 * wait under strict priority, or its only waiter is suspended and its tier went to
 * another priority) counts as one at the floor, where a new tier starts: served by its
 * place, never after every other. Caller holds d->lock. */
static int64_t xs__tier_vt(const xs_budget *b, int64_t prio)
{
	const xs_tier *t = xs__tier_of(b, prio);
	return t ? t->vtime_ns : b->tier_floor_ns;
}

/* Whether a queue of priority @p ranks before one of priority @q in the budget's order
 * (tier first; strict: priority first). Returns 1 before, -1 after, 0 same tier. Caller
 * holds d->lock. */
static int xs__cmp_tier(const xs_budget *b, int64_t p, int64_t q, bool strict)
{
	if (p == q)
		return 0;
	if (strict)
		return p > q ? 1 : -1;
	int64_t t = xs__tier_vt(b, p), u = xs__tier_vt(b, q); /* least, then the higher */
	return t < u || (t == u && p > q) ? 1 : -1;
}

/* The waiter served next: the tier that goes first, then least virtual time, then the
 * earliest to wait, among those whose command, charged as in the device's state @kind
 * (xs__kind), fits @space. Caller holds d->lock. */
static xs_xqueue *xs__best(const xs_budget *b, int kind, int64_t space)
{
	bool strict = xs_settings_strict();
	xs_xqueue *best = NULL;
	xs_list_for_each(l, &b->waiters)
	{
		xs_xqueue *w = xs_container_of(l, xs_xqueue, wait_link);
		if (w->wait_est_ns[kind] > space || w->wait_paused)
			continue;
		int c = best ? xs__cmp_tier(b, w->prio, best->prio, strict) : 1;
		if (c > 0 || (c == 0 && xs__before(w, best->vtime_ns)))
			best = w;
	}
	return best;
}

/* Whether @xq may take budget now as far as the order goes (a waiter that ranks before
 * it and fits @space, charged as in state @kind, goes first). Caller holds d->lock. */
static bool xs__turn(xs_budget *b, int kind, const xs_xqueue *xq, int64_t space)
{
	if (b->granting)
		return b->granting == xq;
	bool strict = xs_settings_strict();
	if (!strict)
		xs__tier_get(b, xq->prio, xq); /* at the floor if its tier is new or idle */
	int64_t floor = *xs__qfloor(b, xq->prio);
	int64_t vt = xq->vtime_ns > floor ? xq->vtime_ns : floor;
	xs_list_for_each(l, &b->waiters)
	{
		const xs_xqueue *w = xs_container_of(l, xs_xqueue, wait_link);
		if (w == xq || w->wait_est_ns[kind] > space || w->wait_paused)
			continue;
		int c = xs__cmp_tier(b, w->prio, xq->prio, strict);
		if (c > 0 || (c == 0 && xs__before(w, vt)))
			return false;
	}
	return true;
}

/* The weight of a charge to the tier of @prio: 4^k for the k waiting tiers above it, but
 * at most 8n for the n waiting tiers, its own counted. So every waiting tier's weight is
 * at least 1/(8n) of the top one's, and its share of what the budget hands out at least
 * 1/(12n) (the weights sum to less than 4/3 + 1/8): deep tiers are served too, and up to
 * three tiers the weights are 4^-k. Caller holds d->lock. */
static int64_t xs__tier_weight(const xs_budget *b, int64_t prio)
{
	int64_t w = 1, n = 1;
	for (unsigned i = 0; i < b->ntiers; i++) {
		int64_t p = b->tiers[i].prio;
		if (p == prio || !xs__tier_waits(b, p, NULL))
			continue;
		n++;
		if (p > prio && w < (int64_t)1 << 40)
			w *= 4;
	}
	return w < 8 * n ? w : 8 * n;
}

/* Advance the tier of @xq by a charge of @est ns, weighted by xs__tier_weight; the floor
 * becomes the tier's virtual time before the charge (start-time fair queuing). Caller
 * holds d->lock. */
static void xs__tier_charge(xs_budget *b, const xs_xqueue *xq, int64_t est)
{
	xs_tier *t = xs__tier_get(b, xq->prio, xq);
	if (!t)
		return;
	if (t->vtime_ns > b->tier_floor_ns)
		b->tier_floor_ns = t->vtime_ns;
	t->vtime_ns += est * xs__tier_weight(b, xq->prio);
}

/* The charge of a command of @xq: its estimated device time; before the first
 * completion the estimate is unknown: the whole cap (at most the commitment budget).
 * Caller holds d->lock. */
static int64_t xs__est(const xs_device *d, const xs_xqueue *xq)
{
	XS_ASSERT_HELD(&d->lock);
	int64_t cap = xs__cap(d), budget = xs_settings_budget_ns();
	/* Unknown (no completion yet): the whole cap, or the commitment budget where the cap
	 * is none (held at 0: a pacing slice must not take an unknown command for a free one,
	 * which a charge of min(cap, budget) = -1, clamped to 1 ns, did). */
	int64_t est = xq->est_ns > 0 ? xq->est_ns : cap > 0 && cap < budget ? cap : budget;
	return est < 1 ? 1 : est;
}

/* Add @cmd's charge @est to @b at @now. Caller holds d->lock. */
static void xs__add(xs_budget *b, xs_cmd *cmd, int64_t est, int64_t now)
{
	if (b->charged_cmds == 0) {
		b->since_ns = now;
		b->lower_from_ns = now; /* the lower-work clock runs */
	}
	b->charged_ns += est;
	b->charged_cmds++;
	if (est > b->lower_longest_ns)
		b->lower_longest_ns = est; /* objective.c: a command too long for an objective */
	if (b->charged_cmds > b->max_cmds)
		b->max_cmds = b->charged_cmds;
	cmd->charge_ns = est;
	cmd->ready_ns = now + xs__remaining(b, now) - est; /* before it: the rest */
}

/* @xq's command, whose charge in each state is @ests (enum xs_est_kind) and in the state
 * now (@kind) did not fit or was not its turn (@room: the budget had room, but not @xq's
 * turn), was not charged: @xq waits, at its place in the order. A grant blocks the
 * grant loop only where the charge it was granted on still did not fit: one that grew
 * since the waiter was ranked (its estimate learned meanwhile) lets the loop go on to
 * the next waiter, which may fit. Caller holds d->lock. */
static void xs__wait(xs_device *d, xs_xqueue *xq, const int64_t *ests, int kind, bool room)
{
	XS_ASSERT_HELD(&d->lock);
	xs_budget *b = &d->budget;
	bool grew = b->granting == xq && ests[kind] > xq->wait_est_ns[kind]; /* ranked on */
	for (int k = 0; k < XS_EST_KINDS; k++)
		xq->wait_est_ns[k] = ests[k];
	if (!xs_linked(&xq->wait_link)) {
		int64_t floor = *xs__qfloor(b, xq->prio);
		if (xq->vtime_ns < floor)
			xq->vtime_ns = floor; /* idle spells bank no credit */
		if (!xs_settings_strict())
			xs__tier_get(b, xq->prio, xq); /* its tier's too */
		xs_list_push_back(&b->waiters, &xq->wait_link);
	}
	if (b->granting == xq)
		b->grant_blocked = !room && !grew;
	else if (room)
		xs_signal_grant(d); /* the waiter that ranks first must get its turn now */
}

/* What @cmd of @xq is charged in each state of @d (enum xs_est_kind), into @ests: its
 * mean; held under a co-run budget, what its scope position held before (pace.h), which
 * lets a training step's short modules co-run and keeps its long ones (a backward module
 * of milliseconds beside a decode step of 2) for the time the top leaves idle; held where
 * the device paces, the larger of its prediction and the mean, which must fit a slice.
 * A waiter keeps all three: the grant ranks it in the state of its time. Caller holds
 * xq->lock (the positions) and d->lock. */
static void xs__charges(const xs_device *d, const xs_xqueue *xq, const xs_cmd *cmd, int64_t *ests)
{
	int64_t mean = xs__est(d, xq);
	int64_t known = xs_pace_known(xq->pos_us, cmd->pos);
	int64_t pred = known ? known : xs_pace_predict(NULL, -1, xq->est_ns, xq->long_ns);
	ests[XS_EST_IDLE] = mean;
	ests[XS_EST_CORUN] = known ? known : mean;
	ests[XS_EST_PACE] = pred > mean ? pred : mean;
}

bool xs_budget_charge(xs_xqueue *xq, xs_cmd *cmd, int64_t *now_lazy)
{
	if (!xq->limited)
		return true;
	if (cmd->charge_ns) {
		if (!xs_remote_revokes(xq->dev))
			return true;
		/* Charged (Lv1: by a grant, for the launch thread) before another process's
		 * top got work that allows nothing beside it: not committed yet, so it waits
		 * again (remote.c). */
		xs_budget_uncharge(xq, cmd, xs_now_lazy(now_lazy));
	}
	/* A closing XQueue drains whatever holds it (XQueueDestroy overrides suspensions);
	 * one that a running command waits for (it has lenders: priority inheritance) must
	 * not wait for budget that this very command may hold; and one whose command waits
	 * for another queue (waiting) must not hold budget that queue may need (engine.c,
	 * xs__wait_charges): their commands go uncharged. */
	bool exempt = xq->closing || !xs_list_empty(&xq->lenders) || xq->waiting;
	xs_device *d = xq->dev;
	xs_budget *b = &d->budget;
	int64_t now = xs_now_lazy(now_lazy);
	xs_mutex_lock(&d->lock);
	if (exempt) {
		if (xs_linked(&xq->wait_link))
			xs_list_remove(&xq->wait_link);
		xs_mutex_unlock(&d->lock);
		return true;
	}
	int64_t ests[XS_EST_KINDS];
	xs__charges(d, xq, cmd, ests);
	int kind = xs__kind(d);
	bool held = kind != XS_EST_IDLE;
	int64_t est = ests[kind];
	bool room = xs__room(d, est, now);
	bool ok = room && xs__turn(b, kind, xq, xs__space(d, now));
	if (ok) {
		if (held && xs_pace_open_at(&d->pace, now)) {
			cmd->slice_end_ns = d->pace.end_ns; /* its overrun is measured (done) */
			xs_cond_broadcast(&d->pace_cv);     /* the slice is in use: not spent */
		}
		xs__add(b, cmd, est, now);
		xs__tier_charge(b, xq, est);
		int64_t floor = *xs__qfloor(b, xq->prio);
		if (xq->vtime_ns < floor)
			xq->vtime_ns = floor;
		xq->vtime_ns += est;
		if (xs_linked(&xq->wait_link))
			xs_list_remove(&xq->wait_link);
	} else {
		xs__wait(d, xq, ests, kind, room);
	}
	xs_remote_lower(d, now); /* other processes on the device see it (remote.c) */
	xs_mutex_unlock(&d->lock);
	return ok;
}

void xs_budget_force(xs_xqueue *xq, xs_cmd *cmd)
{
	if (!xq->limited || cmd->charge_ns)
		return;
	xs_device *d = xq->dev;
	int64_t now = xs_now_ns();
	xs_mutex_lock(&d->lock);
	xs__add(&d->budget, cmd, xs__est(d, xq), now);
	xs_remote_lower(d, now);
	xs_mutex_unlock(&d->lock);
}

void xs_budget_uncharge(xs_xqueue *xq, xs_cmd *cmd, int64_t now)
{
	if (!cmd->charge_ns)
		return;
	xs_device *d = xq->dev;
	xs_budget *b = &d->budget;
	xs_mutex_lock(&d->lock);
	b->charged_ns -= cmd->charge_ns;
	b->charged_cmds--;
	b->since_ns = now; /* what remains has run since now */
	if (b->charged_cmds == 0) {
		b->lower_end_ns = b->since_ns; /* objective.c: work after it runs alone */
		b->lower_busy_ns += now > b->lower_from_ns ? now - b->lower_from_ns : 0;
	}
	/* What it held past its slice delayed the unit: owed (a command taken back, by a
	 * decommit, held nothing). */
	if (cmd->slice_end_ns && cmd->state == XS_CMD_DONE)
		xs_pace_done(&d->pace, now, cmd->slice_end_ns);
	cmd->slice_end_ns = 0;
	if (d->pace.end_ns)
		xs_cond_broadcast(&d->pace_cv); /* the slice may be spent now */
	xs_signal_grant(d);
	xs_remote_lower(d, now);
	xs_mutex_unlock(&d->lock);
	cmd->charge_ns = 0;
	cmd->ready_ns = 0;
}

int64_t xs_budget_lower_clock(const xs_device *d, int64_t now)
{
	const xs_budget *b = &d->budget;
	int64_t own = b->lower_busy_ns + (b->charged_cmds ? now - b->lower_from_ns : 0);
	return own + xs_remote_lower_clock(d, now);
}

/* When the first waiter fits by the passing of time alone, as far as this process's own
 * charged work goes; 0 if none. Caller holds d->lock. */
static int64_t xs__next_own(const xs_device *d)
{
	const xs_budget *b = &d->budget;
	if (xs_list_empty(&b->waiters) || b->charged_cmds == 0)
		return 0;
	int64_t cap = xs__cap(d);
	if (cap <= 0)
		return 0; /* nothing to wait for but a completion */
	int kind = xs__kind(d);
	bool held = kind != XS_EST_IDLE;
	const xs_xqueue *w = xs__best(b, kind, held ? cap : INT64_MAX);
	if (!w)
		return 0; /* no waiter's command fits the co-run budget at all */
	int64_t fit = b->charged_ns + w->wait_est_ns[kind] - cap; /* remaining + est <= cap */
	int64_t lead = b->charged_ns - xs__lead(b);               /* remaining <= lead */
	int64_t ran = held || fit < lead ? fit : lead;            /* no lead rule in the co-run */
	if (ran > xs__credit_max(b))
		return 0; /* only a completion makes room */
	return b->since_ns + (ran > 0 ? ran : 0);
}

int64_t xs_budget_next_ns(const xs_device *d)
{
	int64_t own = xs__next_own(d);
	int64_t remote = xs_remote_next_ns(d); /* other processes' charged work (remote.c) */
	return !own ? remote : !remote || own < remote ? own : remote;
}

xs_xqueue *xs_budget_grant_next(xs_device *d)
{
	xs_mutex_lock(&d->lock);
	xs_budget *b = &d->budget;
	int64_t now = xs_now_ns();
	int kind = xs__kind(d);
	xs_xqueue *xq = xs__best(b, kind, xs__space(d, now));
	if (xq && !xs__room(d, xq->wait_est_ns[kind], now))
		xq = NULL;
	if (xq) {
		xs_list_remove(&xq->wait_link);
		int64_t *floor = xs__qfloor(b, xq->prio);
		if (xq->vtime_ns > *floor)
			*floor = xq->vtime_ns;
		if (xq->vtime_ns > b->vfloor_ns)
			b->vfloor_ns = xq->vtime_ns;
		xs_obj_ref(&xq->obj);
		b->granting = xq;
		b->grant_blocked = false;
	}
	xs_mutex_unlock(&d->lock);
	return xq;
}

bool xs_budget_grant_done(xs_device *d)
{
	xs_mutex_lock(&d->lock);
	xs_budget *b = &d->budget;
	b->granting = NULL;
	bool blocked = b->grant_blocked;
	xs_mutex_unlock(&d->lock);
	return !blocked;
}

void xs_budget_top_set(xs_xqueue *xq, bool busy)
{
	if (busy == xq->top_busy)
		return;
	xq->top_busy = busy;
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	if (busy && d->top_busy++ == 0)
		xs_remote_busy_edge(d); /* other processes hold from now on (remote.c) */
	else if (!busy && --d->top_busy == 0) {
		xs_signal_grant(d); /* the budget's cap grows back */
		xs_remote_busy_edge(d);
	}
	xs_mutex_unlock(&d->lock);
}

void xs_budget_pause(xs_xqueue *xq, bool paused)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	xq->wait_paused = paused;
	if (xs_linked(&xq->wait_link)) {
		xs_signal_grant(d); /* its turn came meanwhile, or the next waiter's now */
		xs_remote_lower(d, 0);
	}
	xs_mutex_unlock(&d->lock);
}

void xs_budget_leave(xs_xqueue *xq)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	if (xs_linked(&xq->wait_link)) {
		xs_list_remove(&xq->wait_link);
		d->budget.grant = true; /* the next waiter's turn */
		xs_cond_signal(&d->progress_cv);
		xs_remote_lower(d, 0);
	}
	xs_mutex_unlock(&d->lock);
}

void xs_budget_set_prio(xs_xqueue *xq, int64_t prio)
{
	xs_device *d = xq->dev;
	xs_budget *b = &d->budget;
	xs_mutex_lock(&d->lock);
	if (prio != xq->prio) {
		xq->prio = prio;
		/* It enters its new tier at the floor (the top comment): neither the credit nor
		 * the debt of its old tier's order counts there. */
		if (!xs_settings_strict())
			xs__tier_get(b, prio, xq);
		xq->vtime_ns = *xs__qfloor(b, prio);
		if (xs_linked(&xq->wait_link))
			xs_signal_grant(d); /* its rank changed: the next waiter may be another */
	}
	xs_mutex_unlock(&d->lock);
}

bool xs_budget_reserve(xs_device *d, unsigned nqueues)
{
	XS_ASSERT_HELD(&d->lock);
	xs_budget *b = &d->budget;
	if (nqueues <= b->tiers_cap)
		return true;
	unsigned cap = b->tiers_cap ? b->tiers_cap * 2 : 8;
	cap = cap < nqueues ? nqueues : cap;
	xs_tier *t = realloc(b->tiers, cap * sizeof(*t));
	if (!t)
		return false;
	b->tiers = t;
	b->tiers_cap = cap;
	return true;
}

void xs_budget_forget(xs_xqueue *xq)
{
	xs_device *d = xq->dev;
	if (xs_linked(&xq->wait_link)) {
		xs_list_remove(&xq->wait_link);
		d->budget.grant = true; /* the next waiter's turn */
		xs_cond_signal(&d->progress_cv);
		xs_remote_lower(d, 0);
	}
}

int64_t xs_budget_slice_open(xs_xqueue *xq, int64_t allow_ns, int64_t now)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	int64_t len = xs_pace_open(&d->pace, now, allow_ns, xs__remaining(&d->budget, now));
	int64_t end = len ? d->pace.end_ns : 0;
	if (len) {
		XS_TRACE(XS_TR_SLICE, xq->obj.handle, (uint64_t)len, d->pace.debt_ns);
		xs_signal_grant(d); /* the waiters whose commands fit it */
	}
	xs_mutex_unlock(&d->lock);
	return end;
}

/* Whether the open slice of @d has nothing more to give at @now: no lower work runs in it
 * and no waiter's command fits what is left. Caller holds d->lock. */
static bool xs__slice_spent(const xs_device *d, int64_t now)
{
	XS_ASSERT_HELD(&d->lock);
	const xs_budget *b = &d->budget;
	if (b->charged_cmds)
		return false;
	xs_list_for_each(l, &b->waiters)
	{
		const xs_xqueue *w = xs_container_of(l, xs_xqueue, wait_link);
		if (!w->wait_paused && xs_pace_fits(&d->pace, now, 0, w->wait_est_ns[XS_EST_PACE]))
			return false;
	}
	return true;
}

void xs_budget_slice_wait(xs_device *d, int64_t end_ns)
{
	xs_mutex_lock(&d->lock);
	int64_t spent_at = 0; /* when the slice was first found spent, 0 = not */
	for (;;) {
		int64_t now = xs_now_ns(), until = end_ns;
		if (now >= end_ns || d->pace.end_ns != end_ns)
			break;
		if (!xs__slice_spent(d, now)) {
			spent_at = 0;
		} else if (!spent_at) {
			spent_at = now; /* a lower queue that waits for each command comes back */
		} else if (now - spent_at >= XS_PACE_GRACE_NS) {
			break;
		}
		if (spent_at && spent_at + XS_PACE_GRACE_NS < until)
			until = spent_at + XS_PACE_GRACE_NS;
		xs_cond_timedwait(&d->pace_cv, &d->lock, until);
	}
	if (d->pace.end_ns == end_ns)
		xs_pace_close(&d->pace, xs_now_ns());
	xs_mutex_unlock(&d->lock);
}

void xs_budget_state(const xs_xqueue *xq, int64_t *charged_ns, uint64_t *charged_cmds,
		     uint64_t *max_cmds)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	*charged_ns = d->budget.charged_ns;
	*charged_cmds = d->budget.charged_cmds;
	*max_cmds = d->budget.max_cmds;
	d->budget.max_cmds = d->budget.charged_cmds;
	xs_mutex_unlock(&d->lock);
}
