/* Latency objectives: the co-run budget sized at run time to meet a stated slowdown.
 *
 * An XQueue given an objective (XHintLatencyObjective: its commands may take at most G x
 * their time alone) is *protected*. Per protected queue:
 *
 * - Measure. Each completed command's device time is the engine's own per-command figure
 *   (engine.c, xs__complete_upto: from its commit, or the previous completion if later,
 *   to its completion). A command ran *alone* when no lower-priority work was charged on
 *   the device at any moment of it (budget.c: charged_cmds is 0 at its completion and
 *   fell to 0, lower_end_ns, before it started). The *alone estimate* is an EWMA (gain
 *   1/8) of alone commands: the same statistic, a mean, as the observed side, so that
 *   their ratio is 1 on an unloaded device (a windowed minimum is biased low by every
 *   fast outlier and would make an idle device look slowed by its own jitter). When a
 *   whole window's mean is more than 1/8 below the estimate, the estimate takes it: work
 *   that co-ran cannot be faster than alone, so the queue's commands became shorter.
 * - Slowdown = the mean device time of a window of XS__WINDOW (16) commands over the
 *   alone estimate (a ratio of means: a chain of unlike kernels gives the ratio of its
 *   mean). Windows do not overlap; one controller step per window.
 * - Control. The co-run budget moves over levels: 0 (nothing new co-runs: HPF suspends
 *   the lower queues, the default behaviour of engine v3), then half octaves from 25 us
 *   (25, 35, 50, 71, 100 us ... 51.2 ms, passing through the commitment budget; the cap
 *   may exceed it), then *not limited* (XS__TOP: lower queues are charged but never
 *   capped, held or not; only hardware stream priority favours the protected queue). Let
 *   u = (slowdown - 1) / (G - 1), the part of the allowed excess used (G = 1.0 is taken
 *   as 1.01):
 *     u > 1     violation: down 1 level (u <= 1.5), 2 (u <= 3), else 4: multiplicative
 *               decrease, x0.71 to x0.25 of the budget; the level that failed is
 *               remembered and not tried again for XS__BACKOFF0 (4) windows, doubled each
 *               time that level fails again, up to XS__BACKOFF_MAX (64);
 *     u < 0.75  slack: up 2 levels (u < 0.4) or 1 (x2 or x1.41), never past a level
 *               that failed while its wait runs, and into one only a level at a time;
 *     else      dead band: stay.
 *   The gain is thus one to four half octaves per window, in log(budget): the slowdown
 *   of bounded co-running grows with the budget roughly in proportion, so equal steps in
 *   log space move it by similar fractions at every scale. Reaction time: one window (16
 *   commands of the protected queue) to a violation; 0 to not limited in 12 windows of
 *   large slack. On a steady load the level settles in the dead band, or, where no level
 *   lands in it, below the lowest failing level, which is probed again after 4, 8, ...
 *   64 windows (one window in 65 at most, once settled): no oscillation.
 * - Several protected queues on a device: each steps from the level in force (so none
 *   runs ahead of it), and the device takes the least (the tightest objective wins). A
 *   protected queue the scheduler limits (not top priority) measures but asks for
 *   nothing (level -1): the co-run budget is not what slows it, and it must not lift the
 *   co-run budget that protects the queues above it (0.5.3 asked for not limited, and
 *   the top queue lost its protection). It starts again from 0 when it stops being
 *   limited (xs_objective_limited). With no protected queue asking, the device uses the
 *   process's co-run budget (XHintCorunBudget), exactly as without this file.
 * - A move between 0 and more asks the scheduler for a pass (its HPF/MLFQ pass suspends
 *   the lower queues only while the budget in force is 0); every move asks the progress
 *   thread to hand budget on (waiters may fit).
 *
 * State and locks: the per-queue state (xs_xqueue.objective) and the device's level
 * (xs_device.obj_level) are under dev->lock, taken here under xq->lock (the lock map's
 * xq->lock -> dev->lock); goal_pm is written under both, so the completion path reads it
 * under xq->lock alone. xs_device.obj_corun_ns is the level's budget as a relaxed atomic
 * for the scheduler's and the statistics' lock-free look.
 */
#include "core/trace.h"
#include "preempt/engine_int.h"

enum {
	XS__WINDOW = 16,        /* commands per measurement window */
	XS__TOP = 24,           /* the level that does not limit: above 23 (51.2 ms) */
	XS__MIN_NS = 25000,     /* level 1's budget */
	XS__BAND_PM = 750,      /* the dead band: [0.75, 1] of the allowed excess used */
	XS__FAST_PM = 400,      /* less used than this: two levels up */
	XS__BACKOFF0 = 4,       /* windows before a failed level is tried again */
	XS__BACKOFF_MAX = 64,   /* at most */
	XS__MIN_EXCESS_PM = 10, /* an objective of 1.0 is taken as 1.01 */
};

/* The co-run budget of @level in ns: 0 = nothing new co-runs, INT64_MAX = not limited. */
static int64_t xs__level_ns(int level)
{
	if (level <= 0)
		return 0;
	if (level >= XS__TOP)
		return INT64_MAX;
	int64_t ns = (int64_t)XS__MIN_NS << ((level - 1) / 2);
	return (level - 1) % 2 ? ns * 1414 / 1000 : ns;
}

/* The least level asked for by the protected queues of @d (a limited one asks for
 * none), -1 when there is none.
 * Caller holds d->lock. */
static int xs__dev_level(const xs_device *d)
{
	int level = -1;
	xs_list_for_each(l, &d->queues)
	{
		const xs_xqueue *q = xs_container_of(l, xs_xqueue, dev_link);
		if (q->objective.goal_pm && q->objective.level >= 0 &&
		    (level < 0 || q->objective.level < level))
			level = q->objective.level;
	}
	return level;
}

/* The co-run budget in force on @d for a level (-1: the process setting). */
static int64_t xs__in_force(int level)
{
	return level < 0 ? xs_engine_corun_ns() : xs__level_ns(level);
}

/* Put @level in force on @d (@by: the queue whose step or hint moved it, for the trace);
 * returns whether the budget went from 0 to more or back. Caller holds d->lock. */
static bool xs__publish(xs_device *d, int level, const xs_xqueue *by)
{
	int old = d->obj_level;
	if (level == old)
		return false;
	d->obj_level = level;
	atomic_store_explicit(&d->obj_corun_ns, level < 0 ? -1 : xs__level_ns(level),
			      memory_order_relaxed);
	int64_t was = xs__in_force(old), now = xs__in_force(level);
	XS_TRACE(XS_TR_CORUN, by->obj.handle, (uint64_t)by->objective.slow_pm, now);
	xs_budget_widened(d); /* waiters may fit (a narrower cap admits nobody new) */
	return (was > 0) != (now > 0);
}

/* One controller step of @o at the end of a window, from the level in force @in_force
 * (-1: none). Caller holds d->lock. */
static void xs__step(xs_objective *o, int in_force)
{
	int64_t excess = o->goal_pm - 1000;
	if (excess < XS__MIN_EXCESS_PM)
		excess = XS__MIN_EXCESS_PM;
	int64_t used = (o->slow_pm - 1000) * 1000 / excess;
	if (o->level < 0)
		o->level = 0; /* it stopped being limited: from the safe end */
	int cur = in_force >= 0 && in_force < o->level ? in_force : o->level;
	if (o->wait)
		o->wait--;
	if (used > 1000) {
		int drop = used > 3000 ? 4 : used > 1500 ? 2 : 1;
		o->backoff = cur == o->fail_level ? o->backoff * 2 : XS__BACKOFF0;
		if (o->backoff > XS__BACKOFF_MAX)
			o->backoff = XS__BACKOFF_MAX;
		o->fail_level = cur;
		o->wait = o->backoff;
		o->level = cur > drop ? cur - drop : 0;
		return;
	}
	if (cur >= o->fail_level) { /* a probe that held: the ceiling is gone */
		o->fail_level = XS__TOP + 1;
		o->backoff = XS__BACKOFF0;
	}
	int next = cur;
	if (used < XS__BAND_PM)
		next = cur + (used < XS__FAST_PM ? 2 : 1);
	if (next > XS__TOP)
		next = XS__TOP;
	if (next >= o->fail_level)
		next = o->wait ? o->fail_level - 1 : o->fail_level;
	o->level = next > cur ? next : cur;
}

bool xs_objective_sample(xs_xqueue *xq, int64_t start, int64_t per, uint64_t n, int64_t now)
{
	(void)now;
	xs_device *d = xq->dev;
	xs_objective *o = &xq->objective;
	bool limited = xq->limited, crossed = false;
	xs_mutex_lock(&d->lock);
	const xs_budget *b = &d->budget;
	if (b->charged_cmds == 0 && b->lower_end_ns <= start)
		o->alone_ns = o->alone_ns ? o->alone_ns + (per - o->alone_ns) / 8 : per;
	o->win_ns += per * (int64_t)n;
	o->win_n += (uint32_t)n;
	if (o->win_n >= XS__WINDOW) {
		int64_t mean = o->win_ns / o->win_n;
		o->win_ns = 0;
		o->win_n = 0;
		if (o->alone_ns > 0) { /* else no estimate yet: the level stays */
			if (mean < o->alone_ns - o->alone_ns / 8)
				o->alone_ns = mean; /* the commands became shorter */
			o->slow_pm = mean * 1000 / o->alone_ns;
			if (limited)
				o->level = -1; /* asks for nothing */
			else
				xs__step(o, d->obj_level);
			crossed = xs__publish(d, xs__dev_level(d), xq);
		}
	}
	xs_mutex_unlock(&d->lock);
	return crossed;
}

void xs_objective_forget(xs_xqueue *xq)
{
	xs_device *d = xq->dev;
	if (xq->objective.goal_pm && xs__publish(d, xs__dev_level(d), xq))
		xs_engine_notify(xq);
}

void xs_engine_set_objective(xs_xqueue *xq, int64_t goal_pm)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&xq->lock);
	xs_mutex_lock(&d->lock);
	xs_objective *o = &xq->objective;
	if (!goal_pm || !o->goal_pm) { /* a new objective starts from the safe end */
		*o = (xs_objective){
		    .level = xq->limited ? -1 : 0,
		    .fail_level = XS__TOP + 1,
		    .backoff = XS__BACKOFF0,
		};
	}
	o->goal_pm = goal_pm;
	bool crossed = xs__publish(d, xs__dev_level(d), xq);
	xs_mutex_unlock(&d->lock);
	if (crossed)
		xs_engine_notify(xq);
	xs_mutex_unlock(&xq->lock);
}

bool xs_objective_limited(xs_xqueue *xq, bool limited)
{
	xs_device *d = xq->dev;
	xs_objective *o = &xq->objective;
	xs_mutex_lock(&d->lock);
	bool crossed = false;
	if (o->goal_pm && (limited ? o->level >= 0 : o->level < 0)) {
		o->level = limited ? -1 : 0;
		crossed = xs__publish(d, xs__dev_level(d), xq);
	}
	xs_mutex_unlock(&d->lock);
	return crossed;
}

int64_t xs_engine_corun_of(const xs_xqueue *xq)
{
	int64_t ns = atomic_load_explicit(&xq->dev->obj_corun_ns, memory_order_relaxed);
	return ns >= 0 ? ns : xs_engine_corun_ns();
}

void xs_engine_objective_state(xs_xqueue *xq, int64_t *slow_pm, int64_t *alone_ns)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	*slow_pm = xq->objective.goal_pm ? xq->objective.slow_pm : 0;
	*alone_ns = xq->objective.alone_ns;
	xs_mutex_unlock(&d->lock);
}
