/* Other processes on a device: the engine's side of the board (core/board.h).
 *
 * Each process that uses a device holds a slot on the device's board and publishes there
 * what the others need to treat its queues like their own:
 *   - top: its top rank on the device (the scheduler's pass, xs_remote_pass; idle
 *     queues count, as they do within a process: what is below is limited);
 *   - busy: that rank while one of its queues of that rank, not limited, has work
 *     (d->top_busy crossed 0: xs_remote_busy_edge, called by the budget at the moment it
 *     counts it), and with it the co-run budget that queue allows lower work (ask: a
 *     latency objective's level in force, else the process's co-run budget);
 *   - its lower work: the limited queues' charged work and commands, and since when its
 *     budget waiters wait for a device-wide turn (xs_remote_lower), with its lower-work
 *     clock (budget.c: how long it had lower work charged).
 * And it reads the others':
 *   - the budget's hold (budget.c, xs__held) counts another process's busy top of the
 *     device's top rank like a local one, read from the board at each decision, so that
 *     this process commits nothing new (beyond the holder's co-run budget) from the
 *     moment the other's busy is published, without waiting for any thread of its own;
 *   - the scheduler's pass takes the others' top into the device's top rank (queues
 *     below it are limited) and suspends queues below another's busy top as HPF does
 *     below a local one (sched.c);
 *   - a latency objective's units ran alone only if no other process had lower work
 *     charged beside them either (objective.c, through the lower-work clocks summed:
 *     xs_remote_lower_clock, xs_remote_lower_quiet); without that, a protected unit slowed
 *     by another process's work (which the GPU time-slices with it) read as alone, the
 *     alone estimate grew with it and the controller lifted every limit (NVIDIA H200,
 *     2026-11-28: time per token p99 2.10x alone under an objective of 1.5, the controller
 *     reading 1.02);
 *   - the commitment budget (and a holder's co-run budget) is device-wide: each
 *     process's cap is its share, the budget divided among the processes that have
 *     lower work charged or waiting; and the one command that may always be charged
 *     when nothing is (a command longer than the budget) may be charged only when no
 *     other process has lower work charged and none waits longer (first come, first
 *     served, by the time each started waiting; a process that charged goes to the back).
 *     A process whose charged work falls to none wakes the one that waits longest.
 *
 * The board's watcher thread calls xs__on_board after each wake-up (another process
 * published top or busy) and each heartbeat: it reads the others' slots, stores what the
 * pass and the shares need, asks the progress thread to hand budget on (a hold ended, a
 * share grew, a turn came; at each heartbeat too, which bounds what a lost wake-up costs)
 * and, when another process's top or busy changed, asks the scheduler for a pass.
 *
 * Locks: what this file keeps is under dev->lock or atomic (engine_int.h, xs_remote); it
 * calls the board, whose own lock is a leaf, and never holds dev->lock while the watcher
 * stops (the hook takes it). A leaf of the engine: it calls the signals (signal.c: the
 * progress thread hands budget on, the scheduler's hook) and the settings (settings.c),
 * nothing else; the budget (budget.c) and the scheduler's pass call it.
 */
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "preempt/engine_int.h"

/* Whether a waiter of @b may be served (one that is not paused). Caller holds d->lock. */
static bool xs__waits(const xs_budget *b)
{
	xs_list_for_each(l, &b->waiters)
	{
		if (!xs_container_of(l, xs_xqueue, wait_link)->wait_paused)
			return true;
	}
	return false;
}

/* The co-run budget this process's busy top allows the other processes' lower work: the
 * latency objective's level in force, else the process's setting (ns; INT64_MAX = not
 * limited). On a device that time-slices processes an objective allows them none: a
 * command of another process committed beside a unit holds the GPU for its turn rather
 * than sharing it, so every co-run level failed there and gave that work nothing (NVIDIA
 * H200, 2026-11-28, doc/RESULTS.md: two processes, objective 1.5 and 2.0, time per token
 * p99 1.51x and 2.06x alone against the defaults' 0.89x, the other process's lanes kept
 * 0.25 and 0.34 in all three). Caller holds d->lock. */
static int64_t xs__ask(const xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
	if (d->obj_level >= 0)
		return d->remote.timesliced
			   ? 0
			   : atomic_load_explicit(&d->obj_corun_ns, memory_order_relaxed);
	return xs_settings_corun_ns();
}

/* Publish whether this process's top queues have work. Caller holds d->lock. */
static void xs__publish_busy(xs_device *d, xs_board *b)
{
	XS_ASSERT_HELD(&d->lock);
	int64_t top = atomic_load_explicit(&d->remote.local_top, memory_order_relaxed);
	int64_t busy = d->top_busy && top != XS_BOARD_NONE ? top : XS_BOARD_NONE;
	xs_board_set_busy(b, busy, xs__ask(d));
}

void xs_remote_busy_edge(xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
	xs_board *b = atomic_load_explicit(&d->remote.board, memory_order_relaxed);
	if (b)
		xs__publish_busy(d, b);
}

void xs_remote_lower(xs_device *d, int64_t now)
{
	XS_ASSERT_HELD(&d->lock);
	xs_remote *r = &d->remote;
	xs_board *b = atomic_load_explicit(&r->board, memory_order_relaxed);
	if (!b)
		return;
	const xs_budget *bu = &d->budget;
	if (!xs__waits(bu))
		r->wait_ns = 0;
	else if (!r->wait_ns || bu->charged_cmds > r->cmds)
		r->wait_ns = now ? now : xs_now_ns(); /* waits from now, or charged: to the back */
	bool emptied = r->cmds && !bu->charged_cmds;
	r->cmds = bu->charged_cmds;
	int64_t free_ns = bu->charged_cmds ? bu->since_ns + bu->charged_ns : 0;
	xs_board_set_lower(b, &(xs_board_lower){.charged_ns = bu->charged_ns,
						.charged_cmds = bu->charged_cmds,
						.wait_ns = r->wait_ns,
						.free_ns = free_ns,
						.busy_ns = bu->lower_busy_ns,
						.from_ns = bu->charged_cmds ? bu->lower_from_ns : 0,
						.end_ns = bu->lower_end_ns});
	if (emptied)
		xs_board_wake_waiter(b);
}

int64_t xs_remote_lower_clock(const xs_device *d, int64_t now)
{
	xs_board *b = atomic_load_explicit(&d->remote.board, memory_order_relaxed);
	return b ? xs_board_lower_clock(b, now) : 0;
}

bool xs_remote_lower_quiet(const xs_device *d, int64_t since)
{
	xs_board *b = atomic_load_explicit(&d->remote.board, memory_order_relaxed);
	return !b || xs_board_lower_quiet(b, since);
}

bool xs_remote_may_start(const xs_device *d, int64_t now)
{
	XS_ASSERT_HELD(&d->lock);
	const xs_remote *r = &d->remote;
	xs_board *b = atomic_load_explicit(&r->board, memory_order_relaxed);
	return !b || xs_board_first(b, r->wait_ns ? r->wait_ns : now, now);
}

int64_t xs_remote_next_ns(const xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
	xs_board *b = atomic_load_explicit(&d->remote.board, memory_order_relaxed);
	if (!b || !d->remote.wait_ns || d->budget.charged_cmds)
		return 0; /* not waiting for another process's work to end */
	int64_t at = xs_board_free_at(b);
	/* Past: that work overran its estimate and holds nobody back any more (what waits
	 * now is a turn, which a wake-up or the heartbeat brings): no look to spin on. */
	return at > xs_now_ns() ? at : 0;
}

/* The others' busy rank that holds this process, else XS_BOARD_NONE; *@ask: the least
 * co-run budget among its holders. Lock-free. */
static int64_t xs__holder(const xs_device *d, int64_t *ask)
{
	const xs_remote *r = &d->remote;
	*ask = INT64_MAX;
	xs_board *b = atomic_load_explicit(&r->board, memory_order_acquire);
	if (!b)
		return XS_BOARD_NONE;
	int64_t top = atomic_load_explicit(&r->local_top, memory_order_relaxed);
	if (top == XS_BOARD_NONE)
		return XS_BOARD_NONE; /* takes no part */
	int64_t busy = xs_board_busy(b, ask);
	int64_t rtop = atomic_load_explicit(&r->remote_top, memory_order_relaxed);
	/* At the device's top rank: a busy queue that is itself limited holds nobody (every
	 * tier served), as within a process. */
	return busy != XS_BOARD_NONE && busy >= top && busy >= rtop ? busy : XS_BOARD_NONE;
}

bool xs_remote_held(const xs_device *d)
{
	int64_t ask;
	return xs__holder(d, &ask) != XS_BOARD_NONE;
}

int64_t xs_remote_share(const xs_device *d, int64_t budget)
{
	unsigned n = atomic_load_explicit(&d->remote.share, memory_order_relaxed);
	return n > 1 ? budget / (int64_t)n : budget;
}

/* A holder's @ask as this process's cap: -1 = nothing new, INT64_MAX = not limited. */
static int64_t xs__ask_cap(const xs_device *d, int64_t ask)
{
	if (ask == INT64_MAX)
		return INT64_MAX;
	int64_t share = ask > 0 ? xs_remote_share(d, ask) : 0;
	return share > 0 ? share : -1;
}

int64_t xs_remote_corun(const xs_device *d)
{
	int64_t ask;
	if (xs__holder(d, &ask) == XS_BOARD_NONE)
		return INT64_MAX;
	return xs__ask_cap(d, ask);
}

bool xs_remote_revokes(const xs_device *d)
{
	return xs_remote_corun(d) < 0;
}

bool xs_remote_pass(const void *dev, int64_t top, xs_remote_view *out)
{
	xs_device *d = (xs_device *)dev;
	xs_remote *r = &d->remote;
	xs_mutex_lock(&d->lock);
	xs_board *b = atomic_load_explicit(&r->board, memory_order_relaxed);
	if (b) {
		if (atomic_exchange_explicit(&r->local_top, top, memory_order_relaxed) != top)
			xs_board_set_top(b, top);
		xs__publish_busy(d, b); /* its rank or its co-run budget may have moved */
	}
	xs_mutex_unlock(&d->lock);
	if (!b)
		return false;
	int64_t ask;
	out->top = atomic_load_explicit(&r->remote_top, memory_order_relaxed);
	out->busy = xs__holder(d, &ask);
	out->ask = xs__ask_cap(d, ask);
	return true;
}

static int32_t xs__prio32(int64_t p)
{
	return p == XS_BOARD_NONE ? XBOARD_NONE : (int32_t)p;
}

void xs_remote_board_info(xs_xqueue *xq, XBoardInfo *out)
{
	xs_device *d = xq->dev;
	const xs_remote *r = &d->remote;
	memset(out, 0, sizeof(*out));
	xs_mutex_lock(&xq->lock);
	out->limited = xq->limited;
	xs_mutex_unlock(&xq->lock);
	xs_board *b = atomic_load_explicit(&r->board, memory_order_acquire);
	int64_t ask;
	out->joined = b != NULL;
	out->others_top = xs__prio32(atomic_load_explicit(&r->remote_top, memory_order_relaxed));
	int64_t holder = xs__holder(d, &ask);
	out->others_busy = xs__prio32(holder);
	out->others_corun_ns = holder == XS_BOARD_NONE ? 0 : ask;
	out->share = (int32_t)atomic_load_explicit(&r->share, memory_order_relaxed);
	if (!b)
		return;
	out->timesliced = r->timesliced;
	xs_board_view v;
	xs_board_look(b, &v);
	out->processes = (int32_t)v.live;
}

/* The board's watcher, after a wake-up or a heartbeat: see the file's comment. */
static void xs__on_board(void *arg)
{
	xs_device *d = arg;
	xs_remote *r = &d->remote;
	xs_mutex_lock(&d->lock);
	xs_board *b = atomic_load_explicit(&r->board, memory_order_relaxed);
	xs_board_view v = {XS_BOARD_NONE, XS_BOARD_NONE, INT64_MAX, 0, 0};
	if (b)
		xs_board_look(b, &v);
	int64_t top = atomic_exchange_explicit(&r->remote_top, v.top, memory_order_relaxed);
	int64_t busy = atomic_exchange_explicit(&r->remote_busy, v.busy, memory_order_relaxed);
	atomic_store_explicit(&r->share, 1 + v.lower, memory_order_relaxed);
	if (b)
		xs_signal_grant(d); /* a hold ended, a share grew, a turn came: look again */
	xs_mutex_unlock(&d->lock);
	if (b && (top != v.top || busy != v.busy))
		xs_signal_notify(NULL); /* a pass: limits and suspensions move */
}

void xs_remote_start(xs_device *d, xs_hwq *q)
{
	const xs_config *c = xs_config_get();
	xs_remote *r = &d->remote;
	atomic_store_explicit(&r->local_top, XS_BOARD_NONE, memory_order_relaxed);
	atomic_store_explicit(&r->remote_top, XS_BOARD_NONE, memory_order_relaxed);
	atomic_store_explicit(&r->remote_busy, XS_BOARD_NONE, memory_order_relaxed);
	atomic_store_explicit(&r->share, 1, memory_order_relaxed);
	r->wait_ns = 0;
	r->cmds = 0;
	r->timesliced = false;
	if (c->board_dir ? !*c->board_dir : xs_hwq_is_host(q))
		return; /* XSCHED_BOARD=off; auto: GPU devices only */
	char name[XS_BOARD_NAME_MAX];
	if (!q->ops->device_name || q->ops->device_name(q, name, sizeof(name)) != kXSchedSuccess)
		return;
	bool ts = false;
	if (q->ops->timeslices_processes &&
	    q->ops->timeslices_processes(q, &ts) != kXSchedSuccess) {
		ts = true; /* an objective then asks the others what the defaults ask: no co-run */
		XS_INFO("engine", "%s device %s: taken as time-sliced between processes",
			d->ops->name, name);
	}
	r->timesliced = ts;
	xs_board *b = xs_board_open(c->board_dir ? c->board_dir : "/dev/shm", name, c->board_group);
	if (!b || !xs_board_join(b, xs__on_board, d))
		return;
	xs_mutex_lock(&d->lock);
	atomic_store_explicit(&r->board, b, memory_order_release);
	xs_mutex_unlock(&d->lock);
	xs__on_board(d); /* the others' tops now, not at the watcher's next look */
	XS_INFO("engine", "%s device %s: on the board %s with other processes%s", d->ops->name,
		name, xs_board_path(b),
		r->timesliced ? " (it time-slices them: objectives let them no co-run)" : "");
}

void xs_remote_stop(xs_device *d)
{
	xs_mutex_lock(&d->lock);
	xs_board *b = atomic_exchange_explicit(&d->remote.board, NULL, memory_order_acq_rel);
	xs_mutex_unlock(&d->lock);
	if (b)
		xs_board_leave(b); /* joins the watcher, whose hook takes d->lock */
}
