/* Latency objectives: pacing slices and the co-run budget sized at run time to hold a
 * stated tail latency.
 *
 * An XQueue given an objective (XHintLatencyObjective: the p99 of its units' latency at
 * most G x their latency alone) is *protected*. Per protected queue:
 *
 * - Units. Where the queue has explicit units (XQueueBeginUnit .. XQueueEndUnit, engine.c),
 *   those alone: from the unit's arrival (the begin call) to the completion of the
 *   boundary its end submitted, a FIFO of those in flight (xs_objective_xunit_*: the next
 *   may begin before the last one's end was seen). Otherwise a command, measured by its
 *   device time (engine.c, xs__complete_upto: from its commit, or the previous completion
 *   if later, to its completion); or, for commands inside a scope (XQueueBeginScope/
 *   EndScope, the Python running() forms), the scope as a whole: from the first enqueue
 *   after the scope opened to the completion of the last command enqueued before it
 *   closed (engine.c, xs__unit_*), so that a request in a scope counts as the one request
 *   it is. Commands inside a scope are not units of their own.
 * - Alone. A command unit ran *alone* when no lower-priority work was charged on the
 *   device at any moment of it (budget.c: charged_cmds is 0 at its completion and fell to
 *   0, lower_end_ns, before it started; nor in another process on the device's board,
 *   remote.c); a scope or explicit unit when lower work was charged for at most a
 *   sixteenth of it (the lower-work clock, xs_budget_lower_clock, which counts the other
 *   processes' lower work too),
 *   an explicit unit counted from its release (after a slice it waited out) and only if it
 *   did not queue behind the unit before it. The *alone estimate* of each kind is an EWMA
 *   (1/8) of its alone units; a unit's *slowdown* is its latency over that estimate.
 * - Tail. The controller keeps the slowdowns of the units since its last move (a ring of
 *   the last XS_OBJ_RING, 256) and which of them are above G. A *violation* is more of
 *   those above G than 0.5% of max(kept, 200): the second in 200 to 256 units. That is
 *   half of what a p99 allows, on purpose: slow units come in a cluster far above the goal
 *   (a lower command or a host stall beside a unit: 2.3x against an objective of 1.5,
 *   H100, 2026-11-28), so the p99 sits wherever 1% of them falls, and a controller that
 *   allows 1% holds it half the time. It is judged at every unit: the controller backs off
 *   at once. The p99 it reports and steps on is read the same way: the second largest.
 *   A look that moves nothing keeps the units counted (window by window, 1 slow unit in
 *   64 went through: a p98).
 * - Control. What lower queues may do while the protected queue works moves over levels:
 *   0 (nothing new co-runs: HPF suspends the lower queues, the default behaviour of engine
 *   v3); 1..8, *pacing* (pace.h): each explicit unit hands lower queues a slice of k/8 of
 *   its slack, (G - 1) x its alone estimate, and nothing else co-runs; then, with whole
 *   slices, a co-run budget in half octaves from 25 us (25, 35, 50, 71, 100 us ... 51.2
 *   ms, passing through the commitment budget; the cap may exceed it); then *not limited*
 *   (XS__TOP: lower queues are charged but never capped, held or not; only hardware
 *   stream priority favours the protected queue). A queue without explicit units steps
 *   over the pacing levels (they change nothing for it), and with XSCHED_PACE=0 every
 *   queue does and no level opens slices. With u = (p99 slowdown - 1) /
 *   (G - 1), the part of the allowed excess used at the tail (G = 1.0 is taken as 1.01):
 *     violation  down 1 level (u <= 1.5), 2 (u <= 3), else 4; the level that failed is
 *                remembered and not tried again for a wait of XS__BACKOFF0 (4) looks,
 *                doubled at each violation whichever level failed, up to XS__BACKOFF_MAX
 *                (64), and halved when a probe of the remembered level holds;
 *     at a look, after XS__WINDOW (64) units or 50 ms of units over at least 8 (the
 *     floor on samples), without a violation:
 *       u < 0.75  up 4 levels (u < 0.4) or 1, never past a level that failed while its
 *                 wait runs, and into one only a level at a time;
 *       else      dead band: stay.
 * - The cost of probing, bounded: a step up that breaks the objective is seen at its
 *   second unit above G (the violation rule), so a failed probe lets at most 2 units plus
 *   those already in flight exceed G; the failed level is then barred for 4, 8 .. 64
 *   looks. The wait doubles at every failure, not only at a second failure of the same
 *   level: where every co-run level fails (lower work in another process, which the GPU
 *   time-slices with the protected one: one committed lower command holds the protected
 *   unit for a time slice), the controller otherwise failed at 43 us, 149 us, 1.1 ms ...
 *   in turn, each a first failure with a wait of 4 looks, and the failed probes alone put
 *   7% of the tokens above the goal (NVIDIA H200, 2026-11-28, two processes: time per
 *   token p99 2.12x under an objective of 1.5). At 64 looks of 50 ms a failed probe costs
 *   its few units in about 1,600 units of 2 ms.
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
 * 0.5 held the mean of windows of 16 commands against a per-command alone estimate and
 * counted a request in a scope as many commands: on LLM decode beside training its
 * objective 1.5 gave a time-per-token p99 of 5.8x alone while the mean it held read 2.1
 * (H100, 2026-11-27, doc/RESULTS.md).
 *
 * A leaf: this file calls no other file of the engine but budget.c's clock, the settings
 * (settings.c) and the signals (signal.c: the progress thread hands budget on); it
 * returns whether the budget in force crossed 0 and the engine asks the scheduler for a
 * pass (xs_signal_notify).
 *
 * State and locks: the per-queue state (xs_xqueue.objective) and the device's level
 * (xs_device.obj_level) are under dev->lock, taken here under xq->lock (the lock map's
 * xq->lock -> dev->lock); goal_pm is written under both, so the completion path reads it
 * under xq->lock alone; the unit fields are the engine's, under xq->lock.
 * xs_device.obj_corun_ns is the level's budget as a relaxed atomic for the scheduler's and
 * the statistics' lock-free look.
 */
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/trace.h"
#include "preempt/engine_int.h"

enum {
	XS__WINDOW = 64,          /* units per look upward: the floor on samples */
	XS__WINDOW_NS = 50000000, /* or this much protected time (units' latency summed) */
	XS__WINDOW_MIN = 8,       /* ... over at least this many units */
	XS__PACE = 8,             /* levels 1..8: pacing slices of level/8 of the slack */
	/* The share of units that may exceed the goal: 0.5%, half the p99's 1%. Slow units
	 * come in a cluster far above the goal (a co-running lower command, a host stall: 2.3x
	 * against an objective of 1.5 on an H100), so a p99 sits wherever 1% of them fall: a
	 * controller that allows 1% holds the p99 half the time. */
	XS__TAIL_PM = 5,
	XS__TAIL_MIN = 200,     /* ... of at least this many units (so 1 of the first 200) */
	XS__TOP = 32,           /* the level that does not limit: above 31 (51.2 ms) */
	XS__MIN_NS = 25000,     /* level 1's budget */
	XS__BAND_PM = 750,      /* the dead band: [0.75, 1] of the allowed excess used */
	XS__FAST_PM = 400,      /* less used than this: two levels up */
	XS__BACKOFF0 = 4,       /* windows before a failed level is tried again */
	XS__BACKOFF_MAX = 64,   /* at most */
	XS__MIN_EXCESS_PM = 10, /* an objective of 1.0 is taken as 1.01 */
	XS__ALONE_SHARE = 16,   /* a scope unit is alone with lower work for <= 1/16 of it */
};

/* The co-run budget of @level in ns: 0 = nothing new co-runs, INT64_MAX = not limited.
 * Levels 1..XS__PACE pace and co-run nothing; the co-run budgets start above them. */
static int64_t xs__level_ns(int level)
{
	if (level <= XS__PACE)
		return 0;
	if (level >= XS__TOP)
		return INT64_MAX;
	int k = level - XS__PACE;
	int64_t ns = (int64_t)XS__MIN_NS << ((k - 1) / 2);
	return (k - 1) % 2 ? ns * 1414 / 1000 : ns;
}

/* Whether the pacing levels are in use (XSCHED_PACE, default 1): without them the
 * controller goes from 0 to the co-run budgets and no level opens slices. */
static bool xs__pacing(void)
{
	return xs_config_get()->pace;
}

/* The eighths of a protected unit's slack its pacing slice takes at @level (pace.h): one
 * more per level up to XS__PACE, where the whole slack goes to slices. */
static int xs__level_pace(int level)
{
	if (!xs__pacing())
		return 0;
	return level <= 0 ? 0 : level < XS__PACE ? level : XS__PACE;
}

/* The least level asked for by the protected queues of @d (a limited one asks for
 * none), -1 when there is none.
 * Caller holds d->lock. */
static int xs__dev_level(const xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
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
	return level < 0 ? xs_settings_corun_ns() : xs__level_ns(level);
}

/* Whether lower queues may commit anything while a top queue of a device at @level works:
 * a co-run budget above 0, or pacing slices. */
static bool xs__lets_lower(int level)
{
	return xs__in_force(level) > 0 || (level > 0 && xs__level_pace(level) > 0);
}

/* Put @level in force on @d (@by: the queue whose step or hint moved it, for the trace);
 * returns whether lower queues went from committing nothing beside a busy top queue to
 * something (a co-run budget, or slices) or back. Caller holds d->lock. */
static bool xs__publish(xs_device *d, int level, const xs_xqueue *by)
{
	XS_ASSERT_HELD(&d->lock);
	int old = d->obj_level;
	if (level == old)
		return false;
	d->obj_level = level;
	atomic_store_explicit(&d->obj_corun_ns, level < 0 ? -1 : xs__level_ns(level),
			      memory_order_relaxed);
	atomic_store_explicit(&d->obj_pace, level < 0 ? 0 : xs__level_pace(level),
			      memory_order_relaxed);
	int64_t now = xs__in_force(level);
	XS_TRACE(XS_TR_CORUN, by->obj.handle, (uint64_t)by->objective.slow_pm,
		 now ? now : -(int64_t)xs__level_pace(level));
	xs_signal_grant(d); /* waiters may fit (a narrower cap admits nobody new) */
	return xs__lets_lower(old) != xs__lets_lower(level);
}

static int xs__cmp_u16(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* The slowdowns kept for the units since the last look, sorted into @v; returns how many
 * (the ring holds the last min(n, XS_OBJ_RING), in its first entries until it is full). */
static uint32_t xs__sorted(const xs_objective *o, uint16_t *v)
{
	uint32_t k = o->n < XS_OBJ_RING ? o->n : XS_OBJ_RING;
	memcpy(v, o->ring, k * sizeof(*v));
	qsort(v, k, sizeof(*v), xs__cmp_u16);
	return k;
}

/* Whether the units kept (the last min(n, XS_OBJ_RING) since the last move) break the
 * objective at the tail: more above the goal than 0.5% of max(kept, 200), so two. */
static bool xs__violated(const xs_objective *o)
{
	uint64_t k = o->n < XS_OBJ_RING ? o->n : XS_OBJ_RING;
	uint64_t base = k > XS__TAIL_MIN ? k : XS__TAIL_MIN;
	return (uint64_t)o->over * 1000 > base * XS__TAIL_PM;
}

/* Keep a unit's slowdown @pm (per mille) in the ring: at most 65.5x there, and whether it
 * was above the goal by the real figure (a goal above 65.5x is judged by it); the one it
 * replaces leaves the count. */
static void xs__keep(xs_objective *o, int64_t pm)
{
	unsigned slot = o->n % XS_OBJ_RING;
	uint64_t bit = 1ull << (slot % 64);
	if (o->n >= XS_OBJ_RING && (o->over_bits[slot / 64] & bit))
		o->over--;
	o->over_bits[slot / 64] &= ~bit;
	if (pm > o->goal_pm) {
		o->over_bits[slot / 64] |= bit;
		o->over++;
	}
	o->ring[slot] = (uint16_t)(pm > UINT16_MAX ? UINT16_MAX : pm);
	o->n = o->n < UINT32_MAX - XS_OBJ_RING ? o->n + 1 : o->n + 1 - XS_OBJ_RING;
}

/* One controller step of @o from the level in force @in_force (-1: none), on a violation
 * or at the end of a window (the p99 is in o->slow_pm); @paces: its queue has explicit
 * units, which the pacing levels serve (without, it steps over them, from 0 to the co-run
 * levels and back). Caller holds d->lock. */
static void xs__step(xs_objective *o, int in_force, bool violated, bool paces)
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
	if (violated) {
		int drop = used > 3000 ? 4 : used > 1500 ? 2 : 1;
		o->fail_level = cur;
		o->wait = o->backoff;
		/* Whichever level failed: probes grow rarer until what they cost is small. */
		o->backoff = o->backoff * 2 > XS__BACKOFF_MAX ? XS__BACKOFF_MAX : o->backoff * 2;
		o->level = cur > drop ? cur - drop : 0;
		if (!paces && o->level <= XS__PACE)
			o->level = 0; /* the pacing levels would change nothing for it */
		return;
	}
	if (cur >= o->fail_level) { /* a probe that held: the ceiling is gone */
		o->fail_level = XS__TOP + 1;
		o->backoff = o->backoff / 2 < XS__BACKOFF0 ? XS__BACKOFF0 : o->backoff / 2;
	}
	int next = cur;
	if (used < XS__BAND_PM)
		next = cur + (used < XS__FAST_PM ? 4 : 1);
	if (!paces && cur <= XS__PACE && next > cur)
		next += XS__PACE - cur; /* no explicit units: past the pacing levels */
	if (next > XS__TOP)
		next = XS__TOP;
	if (next >= o->fail_level)
		next = o->wait ? o->fail_level - 1 : o->fail_level;
	o->level = next > cur ? next : cur;
	if (!paces && o->level <= XS__PACE)
		o->level = 0; /* held below a failed co-run level: not at a pacing one */
}

/* At a look: the longest lower command charged in the window (the device's, taken and
 * cleared). Where it exceeds what the objective allows over the alone time @alone_ns, no
 * co-run budget above 0 can hold the objective while such commands run (what a committed
 * command holds it holds until it ends): said in the statistics and the trace rather than
 * hidden. Caller holds d->lock. */
static void xs__long_lower(xs_xqueue *xq, int64_t alone_ns)
{
	xs_device *d = xq->dev;
	XS_ASSERT_HELD(&d->lock);
	xs_objective *o = &xq->objective;
	o->lower_longest_ns = d->budget.lower_longest_ns;
	d->budget.lower_longest_ns = 0;
	int64_t excess = alone_ns * (o->goal_pm - 1000) / 1000;
	if (o->lower_longest_ns > excess)
		XS_TRACE(XS_TR_LONG_LOWER, xq->obj.handle, (uint64_t)o->lower_longest_ns, excess);
}

/* Whether the units since the last look make a window: XS__WINDOW of them, or
 * XS__WINDOW_NS of protected time over at least XS__WINDOW_MIN (a server's requests come a
 * few a second: counting units alone, a look took seconds). */
static bool xs__window_end(const xs_objective *o)
{
	return o->win_n >= XS__WINDOW || (o->win_n >= XS__WINDOW_MIN && o->win_ns >= XS__WINDOW_NS);
}

/* @n units of @xq took @ns each from their arrival, @exec_ns of it from their release (a
 * paced unit waits out its slice first; otherwise the same), @scope: scope or explicit
 * units; @alone: they ran alone once released: their slowdowns join the tail, and the
 * controller looks at a violation or at a window's end. Returns whether the budget in
 * force crossed 0. Caller holds xq->lock and d->lock. */
static bool xs__units(xs_xqueue *xq, bool scope, int64_t ns, int64_t exec_ns, bool alone,
		      uint64_t n)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_device *d = xq->dev;
	xs_objective *o = &xq->objective;
	int64_t *base = scope ? &o->alone_scope_ns : &o->alone_ns;
	if (alone)
		*base = *base ? *base + (exec_ns - *base) / 8 : exec_ns;
	if (*base <= 0)
		return false; /* no alone estimate yet: the level stays */
	int64_t pm = ns * 1000 / *base;
	for (uint64_t i = 0; i < n && i < XS_OBJ_RING; i++)
		xs__keep(o, pm);
	o->win_ns += ns * (int64_t)n;
	o->win_n += (uint32_t)n;
	bool violated = xs__violated(o);
	if (!violated && !xs__window_end(o))
		return false;
	uint16_t v[XS_OBJ_RING];
	uint32_t k = xs__sorted(o, v);
	/* The p99 as the violation rule counts it: past the units it allows above the goal
	 * (1 in max(kept, 200)), so that one slow unit does not read as the tail. */
	uint32_t allowed = (k > XS__TAIL_MIN ? k : XS__TAIL_MIN) * XS__TAIL_PM / 1000;
	o->slow_pm = v[k > allowed ? k - 1 - allowed : 0];
	/* Units faster than alone by an eighth at the median: the work became shorter (what
	 * co-ran cannot make it faster), so the estimate follows. */
	if (v[k / 2] < 1000 - 125)
		*base = *base * v[k / 2] / 1000;
	xs__long_lower(xq, *base);
	int was = o->level;
	if (xq->limited)
		o->level = -1; /* measured, asks for nothing */
	else
		xs__step(o, d->obj_level, violated, xq->units_explicit && xs__pacing());
	/* The units count from the last move: a look that moves nothing keeps them, so the
	 * tail is judged over the last 256 units at a level (two above the goal is too many),
	 * not window by window (resetting at each window of 64 let 1 in 64 through: a p98). */
	if (violated || o->level != was) {
		o->n = 0;
		o->over = 0;
		memset(o->over_bits, 0, sizeof(o->over_bits));
	}
	o->win_ns = 0;
	o->win_n = 0;
	o->looks++;
	return xs__publish(d, xs__dev_level(d), xq);
}

bool xs_objective_sample(xs_xqueue *xq, int64_t start, int64_t per, uint64_t n, int64_t now)
{
	(void)now;
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	const xs_budget *b = &d->budget;
	bool alone =
	    b->charged_cmds == 0 && b->lower_end_ns <= start && xs_remote_lower_quiet(d, start);
	bool crossed = xs__units(xq, false, per, per, alone, n);
	xs_mutex_unlock(&d->lock);
	return crossed;
}

void xs_objective_unit_begin(xs_xqueue *xq, int64_t now)
{
	xs_device *d = xq->dev;
	xs_objective *o = &xq->objective;
	o->unit_armed = false;
	o->unit_start_ns = now;
	o->unit_end_seq = 0;
	xs_mutex_lock(&d->lock);
	o->unit_lower_ns = xs_budget_lower_clock(d, now);
	xs_mutex_unlock(&d->lock);
}

bool xs_objective_unit_end(xs_xqueue *xq, int64_t now)
{
	xs_device *d = xq->dev;
	xs_objective *o = &xq->objective;
	int64_t ns = now - o->unit_start_ns;
	o->unit_start_ns = 0;
	o->unit_end_seq = 0;
	if (ns <= 0 || !o->goal_pm)
		return false;
	xs_mutex_lock(&d->lock);
	int64_t co = xs_budget_lower_clock(d, now) - o->unit_lower_ns;
	bool crossed = xs__units(xq, true, ns, ns, co * XS__ALONE_SHARE <= ns, 1);
	xs_mutex_unlock(&d->lock);
	return crossed;
}

void xs_objective_xunit_begin(xs_xqueue *xq, int64_t arrive, int64_t start)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_objective *o = &xq->objective;
	if (!o->goal_pm || o->unit_count == XS_OBJ_UNITS)
		return; /* not measured */
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	int64_t lower = xs_budget_lower_clock(d, start);
	xs_mutex_unlock(&d->lock);
	o->units[(o->unit_head + o->unit_count++) % XS_OBJ_UNITS] =
	    (xs_unit){.arrive_ns = arrive, .start_ns = start, .lower_ns = lower};
}

bool xs_objective_xunit_open(const xs_xqueue *xq)
{
	const xs_objective *o = &xq->objective;
	return o->unit_count &&
	       !o->units[(o->unit_head + o->unit_count - 1) % XS_OBJ_UNITS].end_seq;
}

void xs_objective_xunit_close(xs_xqueue *xq, uint64_t end_seq)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_objective *o = &xq->objective;
	if (xs_objective_xunit_open(xq))
		o->units[(o->unit_head + o->unit_count - 1) % XS_OBJ_UNITS].end_seq = end_seq;
}

void xs_objective_xunit_drop(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	if (xs_objective_xunit_open(xq))
		xq->objective.unit_count--;
}

/* The explicit unit @u ended at @now: measured from its arrival; alone if no lower work was
 * charged for more than a sixteenth of its run, from its release (a unit released before
 * the one ahead of it ended queued behind it: its run is not known, so it is not alone).
 * Caller holds xq->lock and d->lock. */
static bool xs__xunit_end(xs_xqueue *xq, const xs_unit *u, int64_t now)
{
	xs_objective *o = &xq->objective;
	bool queued = u->start_ns < o->unit_last_end_ns;
	int64_t ns = now - u->arrive_ns, exec = now - u->start_ns;
	o->unit_last_end_ns = now;
	if (ns <= 0 || exec <= 0)
		return false;
	int64_t co = xs_budget_lower_clock(xq->dev, now) - u->lower_ns;
	return xs__units(xq, true, ns, exec, !queued && co * XS__ALONE_SHARE <= exec, 1);
}

bool xs_objective_xunits_done(xs_xqueue *xq, uint64_t done, int64_t now)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_objective *o = &xq->objective;
	bool crossed = false;
	while (o->unit_count) {
		xs_unit u = o->units[o->unit_head];
		if (!u.end_seq || u.end_seq > done)
			break;
		o->unit_head = (o->unit_head + 1) % XS_OBJ_UNITS;
		o->unit_count--;
		if (!o->goal_pm)
			continue;
		xs_mutex_lock(&xq->dev->lock);
		crossed |= xs__xunit_end(xq, &u, now);
		xs_mutex_unlock(&xq->dev->lock);
	}
	return crossed;
}

int64_t xs_objective_allowance(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_device *d = xq->dev;
	const xs_objective *o = &xq->objective;
	if (!o->goal_pm || xq->limited)
		return 0;
	xs_mutex_lock(&d->lock);
	int pace = d->obj_level < 0 ? 0 : xs__level_pace(d->obj_level);
	int64_t excess = o->goal_pm - 1000;
	int64_t allow = o->alone_scope_ns * excess / 1000 * pace / XS__PACE;
	xs_mutex_unlock(&d->lock);
	return allow > 0 ? allow : 0;
}

bool xs_objective_forget(xs_xqueue *xq)
{
	xs_device *d = xq->dev;
	return xq->objective.goal_pm && xs__publish(d, xs__dev_level(d), xq);
}

bool xs_objective_set(xs_xqueue *xq, int64_t goal_pm)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	xs_objective *o = &xq->objective;
	if (!goal_pm || !o->goal_pm) { /* a new objective starts from the safe end */
		*o = (xs_objective){
		    .level = xq->limited ? -1 : 0,
		    .fail_level = XS__TOP + 1,
		    .backoff = XS__BACKOFF0,
		    /* a scope open now: from its enqueue (explicit units: from the next) */
		    .unit_armed = goal_pm && xq->scopes && !xq->units_explicit,
		};
	}
	o->goal_pm = goal_pm;
	bool crossed = xs__publish(d, xs__dev_level(d), xq);
	xs_mutex_unlock(&d->lock);
	return crossed;
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

int64_t xs_objective_corun_of(const xs_xqueue *xq)
{
	int64_t ns = atomic_load_explicit(&xq->dev->obj_corun_ns, memory_order_relaxed);
	return ns >= 0 ? ns : xs_settings_corun_ns();
}

void xs_objective_state(xs_xqueue *xq, xs_objective_view *out)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_device *d = xq->dev;
	const xs_objective *o = &xq->objective;
	xs_mutex_lock(&d->lock);
	*out = (xs_objective_view){
	    .slow_pm = o->goal_pm ? o->slow_pm : 0,
	    .alone_ns = o->alone_ns,
	    .alone_unit_ns = o->alone_scope_ns,
	    .lower_longest_ns = o->goal_pm ? o->lower_longest_ns : 0,
	    .looks = o->looks,
	    .pace = d->obj_level < 0 ? 0 : xs__level_pace(d->obj_level),
	    .slices = d->pace.slices,
	    .slice_ns = d->pace.given_ns,
	    .slice_over_ns = d->pace.over_ns,
	};
	xs_mutex_unlock(&d->lock);
}

bool xs_objective_paced(const xs_xqueue *xq)
{
	return atomic_load_explicit(&xq->dev->obj_pace, memory_order_relaxed) > 0;
}
