/* The engine's XQueue state machine: submit, enqueue, commit, complete, wait, suspend.
 * engine.h describes the model; budget.c the commitment budget; device.c the threads;
 * deps.c the event dependencies. The device threads call this file (device.c is above
 * it); what it needs of them it raises as signals (signal.c: kick the launch thread, wake
 * the progress thread, an XQueue active or not), and it calls the accountants below it
 * (objective.c, budget.c, deps.c, lv3.c), which answer and leave the acting to it.
 *
 * Per XQueue, with seq the 1-based submit number (= the number on the HwQueue):
 *   completed <= committed (in effect) <= enqueued <= submitted
 * - enqueue (the launch token's holder, in seq order, no lock held around the backend):
 *   Lv1 (and Lv2 on an oversubscribed device or for the sole top queue: "gated" below
 *   means neither) while running,
 *   the window has space and the budget allows (enqueuing commits);
 *   Lv2+ while the window has space, also while the scheduler suspends the queue (the
 *   work waits behind the counter, and a resume starts it with one store); never while
 *   the application suspends it (XQueueSuspend: nothing new reaches the HwQueue);
 * - commit (any thread with xq->lock, a single store): Lv2+ while running, every
 *   enqueued command at once, or for a limited XQueue one by one as the budget allows;
 * - decommit (suspension at Lv2+): the counter goes back to what completed, and the
 *   charges of commands that cannot have started are returned;
 * - complete (whoever reads the done number: the progress thread, a waiter): never past
 *   `enqueued`, which counts only enqueue calls that have returned, so a launch result is
 *   always written before its command completes.
 */
#include <sched.h>
#include <stdlib.h>

#include "core/config.h"
#include "core/log.h"
#include "core/trace.h"
#include "preempt/engine_int.h"
#include "preempt/lv3.h"

/* The XQueue whose command the calling thread is enqueuing (a launch callback runs inside
 * the enqueue): calls that would wait for that XQueue from there would never return. */
static _Thread_local const xs_xqueue *xs__in_enqueue;

/* ---- what the XQueue has ---- */

/* Whether @xq has work: submitted, incomplete commands, or an open scope. Caller holds
 * xq->lock. */
static bool xs__has_work(const xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	return xq->completed != xq->submitted || xq->scopes || xq->unit_open;
}

/* Whether @xq has work and is not blocked. Caller holds xq->lock. */
static bool xs__ready(const xs_xqueue *xq)
{
	return xs__has_work(xq) && !xq->blocked && !xq->waiting;
}

/* The XQueue whose event record the head command of @xq waits for while @xq is blocked
 * (deps.c), else NULL. An address to compare, not to follow: that XQueue may be destroyed
 * at any moment. Caller holds xq->lock. */
static const xs_xqueue *xs__blocked_on(const xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	if (!xq->blocked || xs_list_empty(&xq->pending))
		return NULL;
	const xs_cmd *c = xs_container_of(xq->pending.next, xs_cmd, link);
	if (c->kind != XS_CMD_EVENT_WAIT)
		return NULL;
	return atomic_load_explicit(&c->u.wait.record->xq, memory_order_acquire);
}

/* ---- HwQueue binding ---- */

/* Guards xs_hwq.xq, xs_hwq.dead and xs_xqueue.published. A leaf. */
static xs_mutex xs__bind_lock = XS_MUTEX_INITIALIZER;

/* Whether @q may be bound or destroyed: kXSchedErrorNotFound once it is being destroyed,
 * kXSchedErrorNotAllowed while an XQueue is bound. Caller holds xs__bind_lock. */
static XResult xs__hwq_unused(const xs_hwq *q)
{
	XS_ASSERT_HELD(&xs__bind_lock);
	return q->dead ? kXSchedErrorNotFound : q->xq ? kXSchedErrorNotAllowed : kXSchedSuccess;
}

XResult xs_hwq_bind(xs_hwq *q, xs_xqueue *xq)
{
	xs_mutex_lock(&xs__bind_lock);
	XResult res = xs__hwq_unused(q);
	if (res == kXSchedSuccess)
		q->xq = xq;
	xs_mutex_unlock(&xs__bind_lock);
	if (res != kXSchedSuccess)
		return res; /* the XQueue bound to @q, if any, keeps its numbering */
	/* @xq numbers its commands from 1 again: counter and done number back to 0 (an
	 * earlier XQueue of the HwQueue was drained before it went). A thread of that XQueue
	 * may still be inside wait_done for one of its (done) numbers: the new generation
	 * ends that wait, which no longer means anything. */
	atomic_fetch_add_explicit(&q->generation, 1, memory_order_relaxed);
	q->ops->reset(q);
	return kXSchedSuccess;
}

void xs_hwq_publish_xqueue(xs_xqueue *xq)
{
	xs_mutex_lock(&xs__bind_lock);
	xq->published = true;
	xs_mutex_unlock(&xs__bind_lock);
}

void xs_engine_forked(void)
{
	xs__in_enqueue = NULL; /* a launch callback's fork: the child enqueues nothing */
	xs_mutex_init(&xs__bind_lock);
	xs_dep_forked();
}

void xs_hwq_unbind(xs_hwq *q)
{
	xs_mutex_lock(&xs__bind_lock);
	q->xq = NULL;
	xs_mutex_unlock(&xs__bind_lock);
}

XResult xs_hwq_kill(xs_hwq *q)
{
	xs_mutex_lock(&xs__bind_lock);
	XResult res = xs__hwq_unused(q);
	if (res == kXSchedSuccess)
		q->dead = true;
	xs_mutex_unlock(&xs__bind_lock);
	return res;
}

xs_xqueue *xs_hwq_xqueue(xs_hwq *q)
{
	xs_mutex_lock(&xs__bind_lock);
	xs_xqueue *xq = q->xq;
	if (xq && xq->published)
		xs_obj_ref(&xq->obj);
	else
		xq = NULL;
	xs_mutex_unlock(&xs__bind_lock);
	return xq;
}

/* ---- create and free ---- */

static void xs__xq_free(xs_obj *obj)
{
	xs_xqueue *xq = xs_xqueue_of(obj);
	xs_cond_destroy(&xq->cv);
	xs_cond_destroy(&xq->done_cv);
	xs_mutex_destroy(&xq->lock);
	xs_obj_unref(&xq->hwq->obj);
	free(xq->pos_us);
	free(xq);
}

XResult xs_engine_create(xs_hwq *q, int level, xs_xqueue **out)
{
	xs_xqueue *xq = calloc(1, sizeof(*xq));
	if (!xq)
		return kXSchedErrorUnknown;
	xs_obj_init(&xq->obj, XS_KIND_XQUEUE, xs__xq_free);
	xs_obj_ref(&q->obj);
	xq->hwq = q;
	xs_mutex_init(&xq->lock);
	xs_cond_init(&xq->cv);
	xs_cond_init(&xq->done_cv);
	xq->sleep_seq = UINT64_MAX;
	atomic_init(&xq->seen_done, 0);
	atomic_init(&xq->expect_ns, INT64_MAX);
	atomic_init(&xq->tail_due_ns, INT64_MAX);
	atomic_init(&xq->reaper_ns, 0);
	atomic_init(&xq->tail_unmarked, false);
	xq->gate_after = UINT64_MAX;
	xs_list_init(&xq->pending);
	xs_list_init(&xq->inflight);
	xs_list_init(&xq->lenders);
	xs_list_init(&xq->wait_alls);
	xs_link_init(&xq->dev_link);
	xs_link_init(&xq->act_link);
	xs_link_init(&xq->kick_link);
	xs_link_init(&xq->wait_link);
	xs_link_init(&xq->dep_link);
	xq->threshold = XSCHED_DEFAULT_THRESHOLD;
	xq->batch_size = XSCHED_DEFAULT_BATCH_SIZE;
	xq->level = level;
	xq->running = true;
	xq->err_pending = kXSchedSuccess;
	xq->hw_top = -1;
	atomic_init(&xq->hw_set, 0);
	*out = xq;
	return kXSchedSuccess;
}

/* Sleep on done_cv until @deadline_ns (0 = none) or until number @seq may have been
 * enqueued, committed or completed. Caller holds xq->lock. */
static bool xs__expect(xs_xqueue *xq);

static void xs__sleep(xs_xqueue *xq, uint64_t seq, int64_t deadline_ns)
{
	if (seq < xq->sleep_seq)
		xq->sleep_seq = seq;
	xq->sleepers++;
	atomic_store_explicit(&xq->reaper_ns, 0, memory_order_relaxed); /* the progress thread's */
	/* The progress thread may be asleep past the completion this thread waits for. */
	if (xs__expect(xq) && !xq->hwq->ops->pushes_done)
		xs_signal_look(xq);
	if (deadline_ns)
		xs_cond_timedwait(&xq->done_cv, &xq->lock, deadline_ns);
	else
		xs_cond_wait(&xq->done_cv, &xq->lock);
	xq->sleepers--;
}

/* Number @reached was enqueued, committed or completed: wake the sleepers if one waits
 * for it (all wake and register again). Caller holds xq->lock. */
static void xs__wake_sleepers(xs_xqueue *xq, uint64_t reached)
{
	XS_ASSERT_HELD(&xq->lock);
	if (xq->sleepers && reached >= xq->sleep_seq) {
		xq->sleep_seq = UINT64_MAX;
		xs_cond_broadcast(&xq->done_cv);
	}
}

enum {
	/* Commands at least this long (estimated) are looked at when they are expected to
	 * complete; shorter ones at the progress thread's pace, whose shortest sleep is as
	 * long (device.c, XS__POLL_MIN_NS). */
	XS__EXPECT_MIN_NS = 50000,
};

/* How many in-flight commands of @xq, from the head, end before the first completion
 * that can be seen: up to the first one with a done mark, that one included; 0 = none has
 * one (an unmarked tail, asked about through idle(): xs__tail_enqueued). Caller holds
 * xq->lock. */
static int64_t xs__to_mark(const xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	int64_t n = 0;
	xs_list_for_each(l, &xq->inflight)
	{
		n++;
		if (xs_container_of(l, xs_cmd, link)->has_mark)
			return n;
	}
	return 0;
}

/* Keep the expected end of @xq's first command whose completion can be seen (busy_since
 * + est per command up to the first done mark; with left-out marks the ends before it are
 * not seen) for the progress thread where it should look then: where something waits for
 * the completion (the budget, for a limited queue: its waiters, and no bubble before the
 * next commit; commands pending behind a full window; a thread asleep in XQueueWait*,
 * which the completion wakes sooner than its own estimate would), or where commands are
 * long enough that the thread's polling pace would see the end late (the queues this one
 * holds wait for it). Elsewhere, a stream of short commands, it keeps its pace, 50 us
 * after a completion: looking at each expected end made it wake once per microsecond
 * kernel and take the XQueue's lock each time against the submitting thread (half a
 * core, and 1-2 us per kernel, on an H100, doc/RESULTS.md). Looking at the head's end
 * where the head had no mark found nothing, and the thread's pace, grown over a quiet
 * spell, then saw the mark up to 1 ms late (H100, doc/RESULTS.md). Returns whether the
 * moment was not kept before. Caller holds xq->lock. */
static bool xs__expect(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	int64_t since = xq->busy_since_ns;
	bool wanted = xq->limited || !xs_list_empty(&xq->pending) || xq->sleepers ||
		      xq->est_ns >= XS__EXPECT_MIN_NS;
	int64_t n = wanted && since && xq->est_ns > 0 ? xs__to_mark(xq) : 0;
	int64_t e = n ? since + n * xq->est_ns : INT64_MAX;
	int64_t was = atomic_exchange_explicit(&xq->expect_ns, e, memory_order_relaxed);
	return was == INT64_MAX && e != INT64_MAX;
}

/* A done mark of number @seq was enqueued: `marked` moves to it, and its command, if in
 * flight, is flagged (xs__to_mark). Caller holds xq->lock. */
static void xs__note_mark(xs_xqueue *xq, uint64_t seq)
{
	XS_ASSERT_HELD(&xq->lock);
	xq->marked = seq;
	for (xs_link *l = xq->inflight.prev; l != &xq->inflight; l = l->prev) {
		xs_cmd *c = xs_container_of(l, xs_cmd, link);
		if (c->seq <= seq) {
			c->has_mark = c->has_mark || c->seq == seq;
			return;
		}
	}
}

/* Committed work of @xq started at @now (0: none runs). Caller holds xq->lock. */
static void xs__busy(xs_xqueue *xq, int64_t now)
{
	XS_ASSERT_HELD(&xq->lock);
	if (now && !xq->busy_since_ns) /* from idle: the progress thread's pace restarts */
		atomic_store_explicit(&xq->dev->busy_from_ns, now, memory_order_relaxed);
	xq->busy_since_ns = now;
	xs__expect(xq);
}

/* Recount @xq in its device's top_busy after its work, its limit, its blocking or its
 * closing changed. A queue blocked on another's event does not hold the others: that one
 * may be the producer. Nor does a queue being destroyed: it only drains. Caller holds
 * xq->lock. */
static void xs__top_update(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_budget_top_set(xq, !xq->limited && !xq->closing && xs__ready(xq));
}

/* ---- commit ---- */

/* Whether command @c (enqueued @gated or not) may stop its queue for as long as the
 * scheduler holds some XQueue: a gated command (closed while its XQueue is suspended), a
 * host function or a callback run on the queue (either may wait for another XQueue).
 * xs__held_in_flight: whether a command enqueued now would sit behind such work. An
 * event record behind it is not sure to complete on its own, so its waiters wait for its
 * completion (deps.c). Caller holds xq->lock. */
static bool xs__may_hold(const xs_xqueue *xq, const xs_cmd *c, bool gated)
{
	XS_ASSERT_HELD(&xq->lock);
	return gated || c->kind == XS_CMD_HOST_FUNC ||
	       (c->kind == XS_CMD_CALLBACK && xq->hwq->ops->callbacks_on_queue);
}

static bool xs__held_in_flight(const xs_xqueue *xq)
{
	xs_list_for_each(l, &xq->inflight)
	{
		const xs_cmd *c = xs_container_of(l, xs_cmd, link);
		if (xs__may_hold(xq, c, c->gated))
			return true;
	}
	return false;
}

/* The one place the counter is written: `committed` is always the value the device sees
 * (never set apart from a store, so the two cannot disagree). Caller holds xq->lock. */
static void xs__store_commit(xs_xqueue *xq, uint64_t c)
{
	XS_ASSERT_HELD(&xq->lock);
	if (c > xq->committed_max) { /* first commits of these commands (not recommits) */
		if (atomic_load_explicit(&xs_trace_on, memory_order_relaxed))
			for (uint64_t s = xq->committed_max + 1; s <= c; s++)
				xs_trace_emit(XS_TR_COMMIT, xq->obj.handle, s, 0);
		xq->committed_max = c;
	}
	xq->committed = c;
	if (xq->hwq->ops->commit)
		xq->hwq->ops->commit(xq->hwq, c);
	xs__wake_sleepers(xq, c); /* waiters sleep until their command is committed */
}

/* Whether @xq's commands wait at a counter: Lv2 or above on a device that is not
 * oversubscribed, unless it is the sole top queue (xs_engine_set_limited). Caller holds
 * xq->lock. */
static bool xs__gated(const xs_xqueue *xq)
{
	return xq->level >= kPreemptLevelDeactivate && !xq->sole_top &&
	       !atomic_load_explicit(&xq->dev->oversubscribed, memory_order_relaxed);
}

/* The last command on the HwQueue, the one inside its enqueue call included. */
static uint64_t xs__last_enqueued(const xs_xqueue *xq)
{
	return xq->issuing > xq->enqueued ? xq->issuing : xq->enqueued;
}

/* Commit enqueued commands while the XQueue runs (Lv2+: one counter store at the end).
 * The command inside its enqueue call (issuing) counts as enqueued here: committing it
 * before the backend call means the stream does not stall on its own wait while the
 * call runs, which matters when the runtime itself waits for the stream (CUDA loads a
 * module lazily at a kernel's first launch). Caller holds xq->lock. */
static void xs__commit(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	uint64_t top = xs__last_enqueued(xq);
	/* At Lv1 enqueued means committed, suspended or not: a command enqueued behind the
	 * counter before the level went down runs as Lv1 work does. */
	bool lv1 = !xs__gated(xq);
	if ((!xq->running && !lv1) || xq->committed >= top)
		return;
	uint64_t c = top;
	int64_t now = 0; /* xs_now_lazy */
	if (xq->limited && !lv1) {
		c = xq->committed;
		xs_list_for_each(l, &xq->inflight)
		{
			xs_cmd *cmd = xs_container_of(l, xs_cmd, link);
			if (cmd->seq <= c)
				continue;
			if (cmd->seq > top || !xs_budget_charge(xq, cmd, &now))
				break;
			c = cmd->seq;
		}
		if (c == xq->committed)
			return;
	}
	if (!xq->busy_since_ns)
		xs__busy(xq, xs_now_lazy(&now));
	xs__store_commit(xq, c);
}

/* Suspension at Lv2+: stop the queue at its next command boundary. The counter goes back
 * to what completed (or what a synchronous XQueueSuspend waits for, which runs: a level
 * raised during that wait must not hold it for ever); then the charges of the commands that have
 * not started are returned. Where the backend says which command passed its wait last (host), that
 * is exact; where it cannot (GPU), every charge beyond what completed is returned: a command that
 * had passed its wait then runs uncharged, and the budget counts one command too few until it
 * completes. Keeping that charge instead could deadlock: a command that had not started would hold
 * budget that a queue of higher priority waits for, while that queue keeps this one suspended (seen
 * in test_chaos). Caller holds xq->lock. */
static void xs__decommit(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_hwq *q = xq->hwq;
	/* What a synchronous XQueueSuspend waits for stays committed (it runs). */
	uint64_t keep = xq->sync_target < xq->committed ? xq->sync_target : xq->committed;
	if (keep < xq->completed)
		keep = xq->completed;
	if (keep < xq->ungated_upto && xq->ungated_upto <= xq->committed)
		keep = xq->ungated_upto; /* enqueued as the sole top queue: they run on */
	if (!q->ops->commit || !xs__gated(xq) || xq->committed <= keep)
		return;
	xs__store_commit(xq, keep);
	uint64_t started = q->ops->started ? q->ops->started(q) : keep;
	if (started < keep)
		started = keep;
	int64_t now = xs_now_ns();
	xs_list_for_each(l, &xq->inflight)
	{
		xs_cmd *cmd = xs_container_of(l, xs_cmd, link);
		if (cmd->seq > started && cmd->gated)
			xs_budget_uncharge(xq, cmd, now);
	}
}

bool xs_engine_holds(const xs_xqueue *xq)
{
	return xs__gated(xq) && !xq->app_suspended && xq->hwq->ops->commit &&
	       xq->committed < xs__last_enqueued(xq);
}

bool xs_engine_release(xs_xqueue *xq)
{
	if (!xs_engine_holds(xq))
		return false;
	uint64_t top = xs__last_enqueued(xq);
	XS_TRACE(XS_TR_RELEASE, xq->obj.handle, xq->committed + 1, (int64_t)top);
	if (!xq->busy_since_ns)
		xs__busy(xq, xs_now_ns());
	xs__store_commit(xq, top); /* uncharged: the budget counts them as free */
	return true;
}

/* Whether @xq may put commands on its HwQueue as far as its suspension goes: when it runs,
 * or behind its counter (Lv2+) when the scheduler suspends it, unless its device drains
 * after a stall release (device.c: then its stream must be able to go idle). */
static bool xs__may_launch(const xs_xqueue *xq)
{
	return xq->running || (xs__gated(xq) && !xq->app_suspended &&
			       !atomic_load_explicit(&xq->dev->draining, memory_order_relaxed));
}

/* ---- event dependencies (deps.c answers, this file acts) ---- */

/* Kick every XQueue blocked on an event record now (no lock of theirs is taken: the
 * launch thread re-checks each): one at a time, at most the number listed now, so that a
 * queue that re-enlists after its kick goes to the back, behind them. Caller holds no
 * lock but at most one XQueue's. */
static void xs__kick_blocked(void)
{
	for (size_t n = xs_dep_blocked_count(); n; n--) {
		xs_xqueue *xq = xs_dep_pop_blocked();
		if (!xq)
			break;
		xs_signal_kick(xq);
		xs_obj_unref(&xq->obj);
	}
}

void xs_engine_record_advance(xs_cmd *record, enum xs_dep_state state, XResult res)
{
	if (xs_dep_advance(record, state, res))
		xs__kick_blocked();
}

/* ---- enqueue ---- */

enum {
	/* The device time of the commands a budget grant admits for one Lv1 queue at once
	 * (at least one command): fewer hand-offs to the launch thread for short commands,
	 * fair turns by device time all the same. */
	XS__QUANTUM_NS = 200000,
};

static void xs__complete_upto(xs_xqueue *xq, uint64_t done, XResult fail, bool timed, int64_t *now);

/* Whether the in-flight window is full. First complete what the device has marked done
 * (one read of the done word, a cache hit unless the device wrote it): the submitting
 * thread, which holds the lock anyway, sees each mark at its next submit, so that through
 * a burst the progress thread leaves the queue alone (xs_engine_reaper_until; it took
 * the lock against each submit of a burst of microsecond kernels, and the commands it
 * freed went back to the allocator from a thread that allocates none: about 0.5 of the
 * 1.1 us the library added to the submitting thread per tiny kernel on an H200, and the
 * progress thread spent 0.46 us more, doc/RESULTS.md), and a window found full
 * does not send the rest of a burst through the launch thread (a hand-off and a lock taken
 * in turn per command). A failure (UINT64_MAX) is left to the progress thread. Caller
 * holds xq->lock. */
static bool xs__window_full(xs_xqueue *xq, int64_t *now)
{
	if (xq->enqueued == xq->completed)
		return false;
	uint64_t done = xq->hwq->ops->done(xq->hwq);
	if (done != UINT64_MAX && done > xq->completed) {
		if (done > xq->enqueued)
			done = xq->enqueued;
		xs__complete_upto(xq, done, kXSchedSuccess, true, now);
	}
	return (int64_t)(xq->enqueued - xq->completed) >= xq->threshold;
}

/* Whether the head command @cmd may be enqueued now (*@now: xs_now_lazy); *skip is a result
 * that replaces its launch (a failed dependency). Caller holds xq->lock. */
static bool xs__may_enqueue(xs_xqueue *xq, xs_cmd *cmd, XResult *skip, int64_t *now)
{
	XS_ASSERT_HELD(&xq->lock);
	*skip = kXSchedSuccess;
	/* The dependency first, whatever else holds the queue: `blocked` must clear once the
	 * record may be depended on even while the queue is suspended, or a policy that
	 * suspends queues that are not ready (CFS, UP, FIFO, EDF, k-EDF) would keep it
	 * suspended, and so not ready, for as long as another queue is ready. */
	if (cmd->kind == XS_CMD_EVENT_WAIT) {
		bool go = xs_dep_check(xq, cmd, skip);
		if (go == xq->blocked) {
			xq->blocked = !go;
			xs__top_update(xq);
			xs_signal_notify(xq);
		}
		if (!go)
			return false;
	}
	if (xs__window_full(xq, now))
		return false;
	if (!xs__may_launch(xq))
		return false;
	return xs__gated(xq) || xs_budget_charge(xq, cmd, now);
}

enum {
	/* An unmarked tail is asked about (idle(), a stream query) only this long after the
	 * last enqueue at the soonest: a query takes the driver's locks against the launches
	 * of a burst still coming, whose next mark will tell instead. */
	XS__TAIL_QUIET_NS = 20000,
};

/* Number @seq was enqueued (at @now): keep the expected end of the last command and, for a tail
 * left without a mark, when the progress thread should ask whether the queue is idle:
 * at that expected end, and not before XS__TAIL_QUIET_NS after this enqueue. Asking at
 * the head's expected end instead sent a stream query from every look of the progress
 * thread through a burst of microsecond kernels (H100, doc/RESULTS.md). Caller holds
 * xq->lock. */
static void xs__tail_enqueued(xs_xqueue *xq, uint64_t seq, int64_t now)
{
	XS_ASSERT_HELD(&xq->lock);
	int64_t est = xq->est_ns > 0 ? xq->est_ns : 0;
	/* The commands still in flight run first; the end kept for them counts only as far
	 * as they can reach from now (an end kept for commands that completed, unseen, would
	 * push the tail later with each enqueue: a round trip of one command at a time then
	 * went unasked until its waiter woke, late, and the estimate grew with each). */
	int64_t reach = now + est * (int64_t)(seq - 1 - xq->completed);
	int64_t base = xq->tail_end_ns < reach ? xq->tail_end_ns : reach;
	if (base < now)
		base = now;
	xq->tail_end_ns = base + est;
	bool unmarked = xq->marked < seq;
	if (unmarked) {
		int64_t due = xq->tail_end_ns;
		if (due < now + XS__TAIL_QUIET_NS)
			due = now + XS__TAIL_QUIET_NS;
		atomic_store_explicit(&xq->tail_due_ns, due, memory_order_relaxed);
	}
	atomic_store_explicit(&xq->tail_unmarked, unmarked, memory_order_relaxed);
	/* A device thread (the launch thread) does not come back to reap: not a reaper. */
	bool reaps = !xq->sleepers && !xs_signal_is_own_thread(xq->dev);
	atomic_store_explicit(&xq->reaper_ns, reaps ? now : 0, memory_order_relaxed);
}

/* Whether a limited Lv1 queue's commands are short enough to leave marks out: the
 * commands between two marks, at its estimate (known: after its first completion), fit
 * XS_BUDGET_LEAD_NS. The budget then counts them charged a little longer, which keeps
 * less lower work committed, never more; a mark per command cost 1.1 us of a 3-4 us
 * kernel (H100, doc/RESULTS.md). Caller holds xq->lock. */
static bool xs__budget_sees_late(const xs_xqueue *xq, int64_t k)
{
	XS_ASSERT_HELD(&xq->lock);
	return xq->est_ns > 0 && xq->est_ns * k <= XS_BUDGET_LEAD_NS;
}

/* Whether number @seq (@cmd) may go without a done mark of its own (hal.h, "Left-out
 * marks"): its completion is then seen with a later mark, or by asking the backend whether
 * the queue is idle (xs_engine_reap). That saves a driver call per command (a stream
 * write-value: 1.1-1.2 us of a 4 us launch on an H100, doc/RESULTS.md). At most every
 * batch_size-th command (and at least one in half the in-flight window, so that the
 * window keeps moving) carries a mark, and so does every command of a queue that needs
 * each completion at once: a limited queue at Lv1 whose commands are long (the budget's
 * accounting: xs__budget_sees_late), one with a latency objective (each command's time is a
 * sample), one being destroyed, one above Lv2 (a suspended Lv3 queue cannot say it is idle) or
 * whose stream got run gate checks (a stream stopped at one is not idle either); and every event
 * record (dependencies follow it) and inline command, and a command that a sleeping waiter needs
 * marked (below). A limited queue's command enqueued behind a counter wait (@gated) leaves its mark
 * to the next command, whose counter wait puts it in front (XS_ENQ_MARK_PREV): one batched memory
 * operation for both where the runtime has them (cuStreamBatchMemOp), at the same moment on the
 * device, so each completion is still seen as it happens but for the last command enqueued, which
 * is asked about at its due time (idle(), xs__tail_enqueued). Caller holds xq->lock. */
static bool xs__may_leave_mark(const xs_xqueue *xq, const xs_cmd *cmd, uint64_t seq, bool gated)
{
	XS_ASSERT_HELD(&xq->lock);
	int64_t k = xq->batch_size < xq->threshold / 2 ? xq->batch_size : xq->threshold / 2;
	if (!xq->hwq->lazy_marks || (xq->limited && !gated && !xs__budget_sees_late(xq, k)) ||
	    xq->closing || xq->objective.goal_pm || xq->level >= kPreemptLevelInterrupt ||
	    xq->gate_after != UINT64_MAX)
		return false;
	switch (cmd->kind) {
	case XS_CMD_KERNEL:
	case XS_CMD_MODULE_KERNEL:
	case XS_CMD_RESOLVED_KERNEL:
	case XS_CMD_MEMCPY:
	case XS_CMD_MEMSET:
	case XS_CMD_CALLBACK:
	case XS_CMD_HOST_FUNC:
		break;
	default:
		return false;
	}
	/* A sleeper for this number, or for an earlier one that no mark covers yet (its own
	 * is put behind the tail when it starts waiting, xs__mark_for_waiter): marked. Not
	 * every command enqueued while somebody sleeps: XQueueWaitAll waits for the last
	 * enqueued command, which it marked, while the rest of a backlog is enqueued. */
	if (xq->sleepers && xq->sleep_seq <= seq && xq->marked < xq->sleep_seq)
		return false;
	if (xq->marked < xq->mark_want)
		return false; /* a waiter asked the token's holder for one (xs__mark_for_waiter) */
	if (xq->limited && gated)
		return true; /* the next command's wait brings the mark (above) */
	return (int64_t)(seq - xq->marked) < k;
}

/* The backend's flags for enqueuing @cmd as number @seq (hal.h). A command that may stop
 * the queue before it completes (a counter wait, an event wait, a host function, which
 * may block or wait for an earlier command of its own queue, and a callback where it runs
 * on the queue) gets the previous number's
 * left-out mark in front of it, so that what ran before is seen done meanwhile. Caller
 * holds xq->lock. */
static unsigned xs__enqueue_flags(const xs_xqueue *xq, const xs_cmd *cmd, uint64_t seq, bool gated,
				  XResult skip)
{
	unsigned flags = gated ? XS_ENQ_GATED : 0;
	if (skip != kXSchedSuccess || !xs__may_leave_mark(xq, cmd, seq, gated))
		flags |= XS_ENQ_MARK;
	bool may_block = cmd->kind == XS_CMD_EVENT_WAIT || xs__may_hold(xq, cmd, gated);
	if (may_block && xq->marked < seq - 1)
		flags |= XS_ENQ_MARK_PREV;
	return flags;
}

/* The launch token outside xs__drain: one thread enqueues at a time, in order, and done
 * numbers only grow. Take waits for it; give hands on what was submitted meanwhile to
 * the launch thread (the giver may be capturing its stream). Caller holds xq->lock. */
static void xs__token_take(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	while (xq->launching)
		xs_cond_wait(&xq->cv, &xq->lock);
	xq->launching = true;
}

static void xs__token_give(xs_xqueue *xq)
{
	xq->launching = false;
	xs_cond_broadcast(&xq->cv);
	xs_engine_progress(xq, false);
}

/* One command's enqueue, carried across the backend call (xs__drain). */
typedef struct xs__issue {
	xs_cmd *cmd;
	uint64_t seq;
	XResult skip;    /* a result to give it instead of launching it */
	bool broken;     /* the HwQueue failed: not launched */
	bool gated;      /* behind a counter wait */
	bool record;     /* an event record */
	bool needs_done; /* its waiters must wait for its completion */
	unsigned flags;  /* XS_ENQ_* */
	bool pushes;     /* the backend pushes completions */
	uint64_t pushed; /* its push count before the call */
} xs__issue;

/* The head pending command if it may be enqueued now, else NULL (@it filled). Caller holds
 * xq->lock. */
static xs_cmd *xs__issue_next(xs_xqueue *xq, xs__issue *it, int64_t *now)
{
	xs_link *l = xs_list_first(&xq->pending);
	if (!l)
		return NULL;
	xs_cmd *cmd = xs_container_of(l, xs_cmd, link);
	if (cmd->kind == XS_CMD_INLINE && !pthread_equal(cmd->owner, pthread_self())) {
		xs_cond_broadcast(&xq->cv); /* its owner enqueues it */
		return NULL;
	}
	*it = (xs__issue){.cmd = cmd, .skip = kXSchedSuccess};
	it->broken = atomic_load_explicit(&xq->hwq->broken, memory_order_relaxed);
	if (!it->broken && !xs__may_enqueue(xq, cmd, &it->skip, now))
		return NULL;
	return cmd;
}

/* Before the backend call: the command moves to in flight, its number, gate, marks and
 * commit (at Lv1 enqueuing commits: counted, and traced, before). Caller holds xq->lock. */
static void xs__issue_begin(xs_xqueue *xq, xs__issue *it)
{
	xs_cmd *cmd = it->cmd;
	xs_hwq *q = xq->hwq;
	xs_list_remove(&cmd->link);
	xs_list_push_back(&xq->inflight, &cmd->link);
	cmd->state = XS_CMD_IN_FLIGHT;
	it->seq = xq->enqueued + 1;
	it->gated = xs__gated(xq);
	cmd->gated = it->gated;
	if (!it->gated && xq->level >= kPreemptLevelDeactivate)
		xq->ungated_upto = it->seq;
	it->record = cmd->kind == XS_CMD_EVENT_RECORD;
	it->needs_done = it->record && (it->gated || xs__held_in_flight(xq));
	if (it->record)
		cmd->u.record.ops = q->ops;
	it->flags = xs__enqueue_flags(xq, cmd, it->seq, it->gated, it->skip);
	cmd->has_mark = it->flags & XS_ENQ_MARK;
	xs_signal_activate(xq);
	xs_obj_ref(&cmd->obj);
	xq->issuing = it->seq;
	xs__commit(xq);
	/* A pushing backend may run the command and push its end before its number is
	 * stored (xs__issue_end); the progress thread then found nothing to complete. */
	it->pushes = q->ops->pushes_done;
	it->pushed = it->pushes ? atomic_load(&q->pushes) : 0;
}

/* The backend call, with no lock held. Returns its result. */
static XResult xs__issue_call(xs_xqueue *xq, const xs__issue *it)
{
	xs_hwq *q = xq->hwq;
	XResult res = kXSchedErrorHardware;
	if (!it->broken) {
		const xs_xqueue *outer = xs__in_enqueue; /* an inline callback's, or NULL */
		xs__in_enqueue = xq;
		res = q->ops->enqueue(q, it->skip == kXSchedSuccess ? it->cmd : NULL, it->seq,
				      it->flags);
		xs__in_enqueue = outer;
	}
	if (it->skip != kXSchedSuccess)
		res = it->skip;
	else if (res != kXSchedSuccess)
		XS_WARN("engine", "command %llu on the %s HwQueue failed to launch (%s)",
			(unsigned long long)it->seq, q->ops->name, xs_result_name(res));
	return res;
}

/* After the backend call: its number stored, marks noted, a scope unit started, waiters
 * woken. Caller holds xq->lock. */
static void xs__issue_end(xs_xqueue *xq, const xs__issue *it, XResult res)
{
	xs_cmd *cmd = it->cmd;
	uint64_t seq = it->seq;
	if (res != kXSchedSuccess)
		cmd->result = res;
	xq->enqueued = seq;
	xq->issuing = 0;
	if (it->flags & XS_ENQ_MARK)
		xq->marked = seq;
	else if ((it->flags & XS_ENQ_MARK_PREV) && xq->marked < seq - 1)
		xs__note_mark(xq, seq - 1);
	if ((it->flags & (XS_ENQ_MARK | XS_ENQ_MARK_PREV)) &&
	    atomic_load_explicit(&xq->expect_ns, memory_order_relaxed) == INT64_MAX)
		xs__expect(xq); /* kept none: none of its commands had a mark */
	int64_t now = xs_now_ns();
	if (xq->objective.unit_armed)
		xs_objective_unit_begin(xq, now); /* a scope unit starts */
	xs__tail_enqueued(xq, seq, now);
	if (it->pushes && atomic_load(&xq->hwq->pushes) != it->pushed)
		xs_signal_look(xq); /* look again, now that the number is stored */
	if (!it->gated && !xq->busy_since_ns)
		xs__busy(xq, now);
	XS_TRACE(XS_TR_ENQUEUE, xq->obj.handle, seq, 0);
	if (it->record && xs_dep_enqueued(cmd, res == kXSchedSuccess, it->needs_done, res))
		xs__kick_blocked();
	xs_obj_unref(&cmd->obj);
	xs_cond_broadcast(&xq->cv);
	xs__wake_sleepers(xq, seq);
}

/* Enqueue pending commands in order while they may go, on the calling thread. Caller
 * holds xq->lock, which is dropped around each backend call. */
static void xs__drain(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	if (xq->launching)
		return; /* the holder of the token sees our commands */
	xq->launching = true;
	for (;;) {
		xs__commit(xq);
		/* xs_now_lazy: read at most once before the enqueue (a reap, a budget charge),
		 * after this pass's commit, so that a completion is never seen before the
		 * commit's start; and once after it. */
		int64_t now = 0;
		xs__issue it;
		if (!xs__issue_next(xq, &it, &now))
			break;
		xs__issue_begin(xq, &it);
		xs_mutex_unlock(&xq->lock);
		XResult res = xs__issue_call(xq, &it);
		xs_mutex_lock(&xq->lock);
		xs__issue_end(xq, &it, res);
	}
	xq->launching = false;
	xs_cond_broadcast(&xq->cv);
}

void xs_engine_grant(xs_xqueue *xq)
{
	if (!xs__gated(xq) && !xq->launching && xs__may_launch(xq)) {
		/* Lv1: charge pending commands here, where the grant has its turn, up to a
		 * quantum of device time, so that exactly the queues the budget admits are
		 * kicked, once per quantum (else every waiter was kicked and all but one
		 * found the budget full again: work per completion grew with the queues). */
		int64_t room = (int64_t)xq->threshold - (int64_t)(xq->enqueued - xq->completed);
		int64_t took = 0, now = 0;
		xs_list_for_each(l, &xq->pending)
		{
			xs_cmd *cmd = xs_container_of(l, xs_cmd, link);
			if (room-- <= 0 || cmd->kind == XS_CMD_EVENT_WAIT ||
			    cmd->kind == XS_CMD_INLINE || (took && took >= XS__QUANTUM_NS))
				break;
			if (!cmd->charge_ns && !xs_budget_charge(xq, cmd, &now)) {
				if (!took)
					return; /* refused: it waits for budget again */
				break;
			}
			took += cmd->charge_ns;
		}
	}
	xs_engine_progress(xq, false);
}

/* Whether the head pending command is an inline one (only its owner enqueues it). */
static bool xs__inline_head(const xs_xqueue *xq)
{
	xs_link *l = xs_list_first(&xq->pending);
	return l && xs_container_of(l, xs_cmd, link)->kind == XS_CMD_INLINE;
}

void xs_engine_progress(xs_xqueue *xq, bool may_launch)
{
	xs__commit(xq);
	if (xs_list_empty(&xq->pending) || xq->launching)
		return;
	if (xs__inline_head(xq) && !may_launch) {
		xs_cond_broadcast(&xq->cv); /* its owner waits there and checks */
		return;
	}
	if (may_launch) {
		xs__drain(xq);
		return;
	}
	/* Worth a kick only if the head could go now; the launch thread checks it fully. */
	bool space = (int64_t)(xq->enqueued - xq->completed) < xq->threshold;
	if (space && xs__may_launch(xq))
		xs_signal_kick(xq);
}

/* ---- complete ---- */

/* Whether @xq's commands belong to a scope unit of its latency objective (objective.c):
 * they are then not units of their own. Caller holds xq->lock. */
static bool xs__in_unit(const xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	const xs_objective *o = &xq->objective;
	return xq->units_explicit || xq->scopes || o->unit_armed || o->unit_start_ns;
}

/* Pacing's prediction (pace.h) learns a command of the limited @xq that held the device
 * @ns at position @pos of a scope (-1: none, or several commands seen done at once). The
 * table of positions is made at the first one. Caller holds xq->lock. */
static void xs__learn(xs_xqueue *xq, int pos, int64_t ns)
{
	XS_ASSERT_HELD(&xq->lock);
	if (pos >= 0 && pos < XS_PACE_POS && !xq->pos_us)
		xq->pos_us = calloc(XS_PACE_POS, sizeof(*xq->pos_us)); /* NULL: none kept */
	xs_pace_learn(xq->pos_us, pos, ns, &xq->long_ns);
}

/* The estimate's sample for @n commands of @xq seen done at @now: the moving average
 * (1/8) of the device time per command: the time since work was committed, less the
 * charged work of other queues that was expected to run before it (else a queue of short
 * commands behind long ones would be taken for a queue of long commands, and charged, and
 * served, as one). What a commit of this queue costs the device. A command unit of a
 * latency objective is sampled with it. Caller holds xq->lock. */
static void xs__sample(xs_xqueue *xq, uint64_t n, int64_t now)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_cmd *head = xs_container_of(xq->inflight.next, xs_cmd, link);
	int64_t start = xq->busy_since_ns;
	if (head->ready_ns > start && head->ready_ns < now)
		start = head->ready_ns;
	int64_t per = (now - start) / (int64_t)n;
	if (per < 1000)
		per = 1000; /* 1 us: no command is free */
	xq->est_ns = xq->est_ns ? xq->est_ns + (per - xq->est_ns) / 8 : per;
	xq->last_per_ns = per;
	if (xq->limited)
		xs__learn(xq, n == 1 ? head->pos : -1, per);
	xq->busy_ns += per * (int64_t)n;
	if (xq->objective.goal_pm && !xs__in_unit(xq) &&
	    xs_objective_sample(xq, start, per, n, now))
		xs_signal_notify(xq); /* the co-run budget went from 0 or to 0 */
}

/* An XQueueWaitAll in progress (on its thread's stack, on xq->wait_alls). It covers the
 * commands up to `target` after those covered by the calls that had returned when it was
 * made (xq->reported_upto then): it reports the first failure among them, whoever else
 * waits, and keeps the first failure after them for the queue's record (xq->err_seq) when
 * it returns. Guarded by xq->lock. */
typedef struct xs__wait_all {
	xs_link link;
	uint64_t target;
	XResult first;      /* the first failure it covers */
	XResult after;      /* the first failure after target, numbered after_seq */
	uint64_t after_seq; /* 0 = none yet */
} xs__wait_all;

/* Command @seq failed with @res: the queue's record and each XQueueWaitAll in progress
 * learn of it (failures come in number order). Caller holds xq->lock. */
static void xs__report_failure(xs_xqueue *xq, uint64_t seq, XResult res)
{
	XS_ASSERT_HELD(&xq->lock);
	if (!xq->err_seq) {
		xq->err_seq = seq;
		xq->err_pending = res;
	}
	xs_list_for_each(l, &xq->wait_alls)
	{
		xs__wait_all *w = xs_container_of(l, xs__wait_all, link);
		if (seq <= w->target && w->first == kXSchedSuccess) {
			w->first = res;
		} else if (seq > w->target && !w->after_seq) {
			w->after_seq = seq;
			w->after = res;
		}
	}
}

/* An XQueueWaitAll that covers the commands up to @target begins: what completed of them
 * has failed already is the queue's record (the first failure after reported_upto, and no
 * command after @target exists yet). Caller holds xq->lock. */
static void xs__report_begin(xs_xqueue *xq, xs__wait_all *w, uint64_t target)
{
	XS_ASSERT_HELD(&xq->lock);
	w->target = target;
	w->first = xq->err_seq && xq->err_seq <= target ? xq->err_pending : kXSchedSuccess;
	w->after = kXSchedSuccess;
	w->after_seq = 0;
	xs_list_push_back(&xq->wait_alls, &w->link);
}

/* The XQueueWaitAll of @w returns: its result. The commands it covered are reported: the
 * queue's record moves past them, to the first failure after them. Caller holds
 * xq->lock. */
static XResult xs__report_end(xs_xqueue *xq, xs__wait_all *w)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_list_remove(&w->link);
	if (w->target > xq->reported_upto) {
		xq->reported_upto = w->target;
		if (xq->err_seq && xq->err_seq <= w->target) {
			xq->err_seq = w->after_seq;
			xq->err_pending = w->after;
		}
	}
	return w->first;
}

/* Complete every in-flight command with seq <= @done, with @fail for those that have no
 * failure of their own. @timed: *@now (xs_now_lazy) is when they were seen to end, a sample
 * of the estimate; else they count with the estimate. Caller holds xq->lock. */
static void xs__complete_upto(xs_xqueue *xq, uint64_t done, XResult fail, bool timed,
			      int64_t *now_lazy)
{
	XS_ASSERT_HELD(&xq->lock);
	int64_t now = xs_now_lazy(now_lazy);
	uint64_t n = done - xq->completed;
	if (!timed && n)
		xq->busy_ns += xq->est_ns * (int64_t)n;
	if (timed && xq->busy_since_ns && n)
		xs__sample(xq, n, now);
	while (!xs_list_empty(&xq->inflight)) {
		xs_cmd *cmd = xs_container_of(xq->inflight.next, xs_cmd, link);
		if (cmd->seq > done)
			break;
		xs_list_remove(&cmd->link);
		if (fail != kXSchedSuccess && cmd->result == kXSchedSuccess)
			cmd->result = fail;
		if (cmd->result != kXSchedSuccess) {
			xq->failed++;
			xs__report_failure(xq, cmd->seq, cmd->result);
		}
		cmd->state = XS_CMD_DONE;
		XS_TRACE(XS_TR_COMPLETE, xq->obj.handle, cmd->seq, cmd->result);
		xs_budget_uncharge(xq, cmd, now);
		if (cmd->kind == XS_CMD_EVENT_RECORD) {
			atomic_store_explicit(&cmd->u.record.ran, true, memory_order_release);
			xs_engine_record_advance(
			    cmd, cmd->result == kXSchedSuccess ? XS_DEP_DONE : XS_DEP_FAILED,
			    cmd->result);
		}
		xs_obj_unref(&cmd->obj); /* the XQueue's reference */
	}
	xq->completed = done;
	if (xq->objective.unit_end_seq && done >= xq->objective.unit_end_seq &&
	    xs_objective_unit_end(xq, now))
		xs_signal_notify(xq); /* a scope unit ended: as above */
	if (xq->objective.unit_count && xs_objective_xunits_done(xq, done, now))
		xs_signal_notify(xq);                 /* explicit units ended: as above */
	xs__busy(xq, xq->committed > done ? now : 0); /* else set at the next commit */
	atomic_store_explicit(&xq->seen_done, done, memory_order_relaxed);
	xs_cond_broadcast(&xq->cv);
	xs__wake_sleepers(xq, done);
	xs_engine_progress(xq, false);
	xs__top_update(xq);
	if (!xs__has_work(xq))
		xs_signal_notify(xq); /* idle now */
}

bool xs_engine_reap(xs_xqueue *xq, bool check_health, bool ask_idle)
{
	xs_hwq *q = xq->hwq;
	if (xq->completed == xq->enqueued) {
		if (!xq->launching)
			xs_signal_deactivate(xq);
		return false;
	}
	uint64_t done = q->ops->done(q), marked_done = done;
	XResult fail = kXSchedSuccess;
	if (ask_idle && done != UINT64_MAX && done >= xq->marked && xq->marked < xq->enqueued &&
	    xq->committed_max >= xq->enqueued && q->ops->idle) {
		/* Every mark was seen; the commands after the last one have none: done if the
		 * queue is idle. Read first: what was enqueued before the query. Not while the
		 * last one was never committed (a limited or suspended queue at Lv2): it has
		 * not started, and a query per look of the progress thread would be wasted. (A
		 * decommit lowers `committed` below a command that may have passed its wait.) */
		uint64_t upto = xq->enqueued;
		if (q->ops->idle(q)) {
			done = upto; /* `marked` stays: the done word is still the last mark's */
			atomic_store_explicit(&xq->tail_unmarked, false, memory_order_relaxed);
		}
	}
	if (done == UINT64_MAX) {
		done = xq->enqueued;
		fail = kXSchedErrorHardware;
	} else if (check_health && done <= xq->completed && q->ops->check(q) != kXSchedSuccess) {
		XS_ERROR("engine",
			 "the %s HwQueue reported a failure: its %llu incomplete "
			 "commands fail",
			 q->ops->name, (unsigned long long)(xq->enqueued - xq->completed));
		atomic_store_explicit(&q->broken, true, memory_order_relaxed);
		done = xq->enqueued;
		fail = kXSchedErrorHardware;
	}
	if (done > xq->enqueued)
		done = xq->enqueued; /* an enqueue call still running: its result comes first */
	if (done <= xq->completed)
		return false;
	/* A tail found complete by asking whether a GPU queue is idle was seen done as late as
	 * the progress thread asked (its due time, at least the estimate): timed, it could
	 * only lengthen the estimate. Complete what the marks cover with its time, the rest
	 * with the estimate. A backend that pushes (host) says when it went idle. */
	bool untimed = fail == kXSchedSuccess && done > marked_done && !q->ops->pushes_done;
	int64_t now = 0;
	if (untimed && marked_done > xq->completed)
		xs__complete_upto(xq, marked_done, fail, true, &now);
	xs__complete_upto(xq, done, fail, !untimed, &now);
	return true;
}

/* ---- wait ---- */

/* A thread's wait for the device (xs__wait_device), across its steps. */
typedef struct xs__waiting {
	int64_t check_ns; /* the last health check */
	int64_t over_ns;  /* when the command was first found overdue, 0 = not yet */
	int64_t slack_ns; /* the thread's timer slack, -1 = not read yet */
} xs__waiting;

#define XS__WAITING_INIT                                                                           \
	{                                                                                          \
		0, 0, -1                                                                           \
	}

enum {
	XS__WAIT_EARLY_NS = 20000,     /* wake at least this (+ timer slack) before the end */
	XS__WAIT_SPIN_NS = 20000,      /* then yield-poll this long */
	XS__WAIT_NAP_MAX_NS = 200000,  /* then sleep at most this long between polls */
	XS__WAIT_IDLE_NS = 20000000,   /* the longest sleep while the command is not committed */
	XS__WAIT_LIMITED_NS = 1000000, /* a limited queue's waiter: the longest sleep */
};

/* When a waiter for @seq of @xq looks again, or 0 to yield-poll now. A command not yet
 * committed is not polled for: its commit wakes the waiter (xs__store_commit). The waiter
 * of a limited queue (throughput work, often many) does not poll either while other
 * commands run before its own: the progress thread's completion wakes it. A top queue's
 * waiter (latency), and one whose command is the next to complete, expects the command's end
 * at busy_since + (seq - completed) x per, per the smaller of the estimate and its last
 * sample: it sleeps until shortly before it, yield-polls for XS__WAIT_SPIN_NS from its
 * first look that does not sleep, then sleeps in steps that grow with the delay (a tenth
 * of the time since that look, within XS__WAIT_NAP_MAX_NS), woken early by the progress
 * thread's completion (it looks at the expected end of a command a thread sleeps on,
 * xs__expect). The last sample because one long command raises the moving average for
 * many samples, and commands after it that are short were waited for at 30-55 us for
 * 6-12 waits (1-3 with the last sample; H100, doc/RESULTS.md); the estimate itself, which
 * the commitment budget charges, is left as it is.
 *
 * "Shortly before" is an eighth of the time left, and at least XS__WAIT_EARLY_NS plus the
 * thread's timer slack, which a sleep may overrun: so a waiter wakes before the expected
 * end (unless the host delays it), and a completion it sees after its sleep makes a sample
 * no longer than the estimate. A longer one would raise the estimate that the next sleep
 * is taken on, and the next sample would be late by as much again: with the 50 us
 * default slack and the 20 us margin alone, after one 1 ms command the round trips of an
 * Lv1 XQueue of tiny kernels stayed at 54 us (the progress thread's look) instead of 10 us
 * (H100, doc/RESULTS.md). Caller holds xq->lock. */
static int64_t xs__wake_at(const xs_xqueue *xq, uint64_t seq, int64_t now, xs__waiting *w)
{
	XS_ASSERT_HELD(&xq->lock);
	if (seq > xq->committed)
		return now + XS__WAIT_IDLE_NS;
	if (xq->limited && seq - xq->completed > 1)
		return now + XS__WAIT_LIMITED_NS; /* the progress thread's completion wakes it */
	if (xq->busy_since_ns && xq->est_ns > 0) {
		int64_t per = xq->est_ns;
		if (xq->last_per_ns && xq->last_per_ns < per)
			per = xq->last_per_ns;
		int64_t expect = xq->busy_since_ns + (int64_t)(seq - xq->completed) * per;
		int64_t left = expect - now;
		if (left > XS__WAIT_EARLY_NS) { /* it may sleep: only then is the slack read */
			if (w->slack_ns < 0)
				w->slack_ns = xs_thread_timer_slack_ns();
			int64_t early = left / 8;
			if (early < XS__WAIT_EARLY_NS + w->slack_ns)
				early = XS__WAIT_EARLY_NS + w->slack_ns;
			if (left > early)
				return expect - early;
		}
	}
	if (!w->over_ns)
		w->over_ns = now;
	int64_t over = now - w->over_ns;
	if (over < XS__WAIT_SPIN_NS)
		return 0;
	int64_t nap = over / 10 < XS__WAIT_NAP_MAX_NS ? over / 10 : XS__WAIT_NAP_MAX_NS;
	return now + nap;
}

/* A waiter for number @seq, enqueued without a done mark of its own, puts a mark behind
 * the tail (number `enqueued`, under the launch token, as a run gate check does: done
 * numbers only grow), so that the completion is found by a done word (the progress
 * thread's look, this thread's next read) and not only by asking whether the queue is
 * idle. Without it only the waiter found such a command done, after a timed sleep that
 * overshoots by the thread's timer slack, and each such sample lengthened the estimate it
 * sleeps on (H100, doc/RESULTS.md). Backends that wait for a number themselves
 * (wait_done) need none. Caller holds xq->lock; it is dropped around the enqueue. */
static void xs__mark_for_waiter(xs_xqueue *xq, uint64_t seq)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_hwq *q = xq->hwq;
	bool own = xs__in_enqueue == xq; /* a callback inside our enqueue: the token is ours */
	if (q->ops->wait_done || own || seq > xq->enqueued)
		return; /* not enqueued yet: a later step of the wait marks it if need be */
	/* While another thread holds the token, its next enqueue carries the mark (a mark
	 * covers every number before it): wait for that, the completion, or the token. */
	while (xq->launching) {
		if (xq->marked >= seq || xq->completed >= seq)
			return;
		if (xq->mark_want < seq)
			xq->mark_want = seq;
		xs_cond_wait(&xq->cv, &xq->lock);
	}
	xs__token_take(xq);
	if (xq->marked < seq && xq->completed < seq && seq <= xq->enqueued) {
		uint64_t mark = xq->enqueued;
		xs__note_mark(xq, mark);
		atomic_store_explicit(&xq->tail_unmarked, false, memory_order_relaxed);
		xs_mutex_unlock(&xq->lock);
		q->ops->enqueue(q, NULL, mark, XS_ENQ_MARK); /* a failure marks it broken */
		xs_mutex_lock(&xq->lock);
	}
	xs__token_give(xq);
}

/* One step of a wait for seq @seq of @xq: complete what is done, or sleep a while (woken
 * early by completions and commits). A backend that pushes done numbers (host) blocks in
 * its own wait_done instead. Caller holds xq->lock; it is dropped meanwhile. */
static void xs__wait_device(xs_xqueue *xq, uint64_t seq, xs__waiting *w)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_hwq *q = xq->hwq;
	if (xq->marked < seq)
		xs__mark_for_waiter(xq, seq);
	if (q->ops->wait_done) {
		/* Read while @seq is incomplete, hence before any later XQueue of the HwQueue
		 * exists (a destroy drains first). */
		uint64_t gen = atomic_load_explicit(&q->generation, memory_order_relaxed);
		xs_mutex_unlock(&xq->lock);
		XResult res = q->ops->wait_done(q, seq, gen);
		xs_mutex_lock(&xq->lock);
		xs_engine_reap(xq, res != kXSchedSuccess, true);
		return;
	}
	xs_engine_reap(xq, false, true);
	if (xq->completed >= seq)
		return;
	int64_t now = xs_now_ns();
	if (!w->check_ns)
		w->check_ns = now;
	if (now - w->check_ns >= XS_HEALTH_CHECK_NS) {
		/* Outside the lock: the runtime may block in it under another thread's call. */
		w->check_ns = now;
		xs_mutex_unlock(&xq->lock);
		XResult res = q->ops->check(q);
		xs_mutex_lock(&xq->lock);
		if (res != kXSchedSuccess) {
			atomic_store_explicit(&q->broken, true, memory_order_relaxed);
			xs_engine_reap(xq, false, true); /* fails what is incomplete */
			return;
		}
	}
	int64_t at = xs__wake_at(xq, seq, now, w);
	if (!at) {
		xs_mutex_unlock(&xq->lock);
		sched_yield();
		xs_mutex_lock(&xq->lock);
		return;
	}
	xs__sleep(xq, seq, at);
}

int64_t xs_engine_expect_ns(const xs_xqueue *xq, int64_t now)
{
	int64_t e = atomic_load_explicit(&xq->expect_ns, memory_order_relaxed);
	if (e <= now)
		e = INT64_MAX; /* passed: looked at already */
	if (atomic_load_explicit(&xq->tail_unmarked, memory_order_relaxed)) {
		int64_t t = atomic_load_explicit(&xq->tail_due_ns, memory_order_relaxed);
		if (t > now && t < e)
			e = t;
	}
	return e;
}

bool xs_engine_tail_due(const xs_xqueue *xq, int64_t now)
{
	return atomic_load_explicit(&xq->tail_unmarked, memory_order_relaxed) &&
	       atomic_load_explicit(&xq->tail_due_ns, memory_order_relaxed) <= now;
}

int64_t xs_engine_reaper_until(const xs_xqueue *xq)
{
	int64_t t = atomic_load_explicit(&xq->reaper_ns, memory_order_relaxed);
	return t ? t + XS__TAIL_QUIET_NS : 0;
}

bool xs_engine_done_moved(xs_xqueue *xq)
{
	uint64_t done = xq->hwq->ops->done(xq->hwq);
	return done > atomic_load_explicit(&xq->seen_done, memory_order_relaxed);
}

/* Whether the calling thread runs a command of @xq: a launch callback inside its enqueue,
 * or a host function (or a host queue's launch callback) on the backend. *seq is that
 * command's number: what it waits for must come before it. */
static bool xs__running_own(const xs_xqueue *xq, uint64_t *seq)
{
	if (xs__in_enqueue == xq) {
		*seq = xq->issuing;
		return true;
	}
	return xs_hal_running(seq) == xq->hwq && xq->hwq;
}

bool xs_engine_in_callback(const xs_xqueue *xq)
{
	uint64_t seq;
	return xs__running_own(xq, &seq);
}

/* Whether waiting for number @seq of @xq from this thread would wait for itself; logs. */
static bool xs__waits_for_itself(const xs_xqueue *xq, uint64_t seq, const char *fn)
{
	uint64_t own;
	if (!xs__running_own(xq, &own) || seq < own)
		return false;
	XS_WARN("engine",
		"%s on XQueue 0x%llx from its own command %llu would wait for itself; refused", fn,
		(unsigned long long)xq->obj.handle, (unsigned long long)own);
	return true;
}

/* While a command of @xq waits for another XQueue (xq->waiting, priority inheritance),
 * @xq holds no budget: the waiting command, those behind it in the HwQueue and charged
 * pending ones give their charges back (@again false), and xs_budget_charge charges none
 * of its commands (budget.c), or they would hold budget that the queue it waits for may
 * need, directly or through a third queue that keeps that one suspended (a host
 * function's XQueueWait, test_hang_wait_charge). When the wait ends (@again true), the
 * committed ones still incomplete are charged again, whatever the room: they run now.
 * Caller holds xq->lock. */
static void xs__wait_charges(xs_xqueue *xq, bool again)
{
	XS_ASSERT_HELD(&xq->lock);
	int64_t now = xs_now_ns();
	xs_list_for_each(l, &xq->inflight)
	{
		xs_cmd *cmd = xs_container_of(l, xs_cmd, link);
		if (!again)
			xs_budget_uncharge(xq, cmd, now);
		else if (cmd->seq <= xq->committed)
			xs_budget_force(xq, cmd);
	}
	if (!again) {
		xs_list_for_each(l, &xq->pending)
		    xs_budget_uncharge(xq, xs_container_of(l, xs_cmd, link), now);
		xs_budget_leave(xq);
	}
}

/* Priority inheritance: while a thread that runs a command of XQueue B (a host function,
 * a launch callback) waits for XQueue T, B counts as blocked (so the budget's hold and HPF
 * do not keep the device for it) and T is on loan B's rank (T.lenders, read by the
 * scheduler's pass: a queue of middle priority must not hold T back either). @lend is the
 * caller's, passed on to xs__waiter_end. No lock held. */
static void xs__waiter_begin(xs_xqueue *target, xs_lend *lend)
{
	uint64_t seq;
	xs_hwq *q = xs_hal_running(&seq);
	xs_xqueue *b = xs__in_enqueue ? (xs_xqueue *)xs__in_enqueue : NULL;
	if (b)
		xs_obj_ref(&b->obj);
	else if (q)
		b = xs_hwq_xqueue(q);
	lend->from = NULL;
	if (b == target) {
		xs_obj_unref(b ? &b->obj : NULL);
		return;
	}
	if (!b)
		return;
	lend->from = b;
	xs_mutex_lock(&b->lock);
	if (b->waiting++ == 0) {
		xs__top_update(b);
		xs_signal_notify(b);
		xs__wait_charges(b, false);
	}
	xs_mutex_unlock(&b->lock);
	xs_mutex_lock(&target->lock);
	xs_list_push_back(&target->lenders, &lend->link);
	xs_signal_notify(target);          /* the scheduler ranks it anew */
	xs_engine_progress(target, false); /* and the budget no longer holds it */
	xs_mutex_unlock(&target->lock);
}

static void xs__waiter_end(xs_xqueue *target, xs_lend *lend)
{
	xs_xqueue *b = lend->from;
	if (!b)
		return;
	xs_mutex_lock(&target->lock);
	xs_list_remove(&lend->link);
	xs_signal_notify(target);
	xs_mutex_unlock(&target->lock);
	xs_mutex_lock(&b->lock);
	if (--b->waiting == 0) {
		xs__top_update(b);
		xs_signal_notify(b);
		xs__wait_charges(b, true);
	}
	xs_mutex_unlock(&b->lock);
	xs_obj_unref(&b->obj);
}

XResult xs_engine_wait(xs_xqueue *xq, xs_cmd *cmd)
{
	xs_lend lend;
	xs__waiter_begin(xq, &lend);
	xs_mutex_lock(&xq->lock);
	XResult res = kXSchedSuccess;
	if (cmd->state != XS_CMD_DONE && xs__waits_for_itself(xq, cmd->seq, "XQueueWait"))
		res = kXSchedErrorNotAllowed;
	xs__waiting w = XS__WAITING_INIT;
	while (res == kXSchedSuccess && cmd->state != XS_CMD_DONE) {
		if (cmd->state == XS_CMD_IN_FLIGHT && cmd->seq <= xq->enqueued)
			xs__wait_device(xq, cmd->seq, &w);
		else
			xs__sleep(xq, cmd->seq, 0); /* until it is enqueued */
	}
	if (res == kXSchedSuccess)
		res = cmd->result;
	xs_mutex_unlock(&xq->lock);
	xs__waiter_end(xq, &lend);
	return res;
}

/* The number a waiter for every command up to @target waits for next: the last one
 * enqueued, or an earlier one whose done mark is in flight (its completion is seen
 * without a mark of the waiter's own, xs__mark_for_waiter, while a backlog is enqueued
 * behind it). Caller holds xq->lock. */
static uint64_t xs__next_step(const xs_xqueue *xq, uint64_t target)
{
	XS_ASSERT_HELD(&xq->lock);
	uint64_t step = xq->enqueued < target ? xq->enqueued : target;
	if (xq->marked > xq->completed && xq->marked < step)
		step = xq->marked;
	return step;
}

/* XQueueWaitAll while another thread holds the launch token and more than a window
 * (threshold) of its commands is not yet enqueued (a backlog: commands submitted faster
 * than they launch, which the launch thread then enqueues) sleeps until all but the last
 * window is enqueued (xs__drain wakes it), and steps through the last window's completions
 * only then. Stepping through a backlog asked the token's holder for a mark at each
 * enqueue (xs__mark_for_waiter), was woken by each, and asked whether the stream was idle
 * (a stream query, under the XQueue's lock, against the launches): a 1 M kernel backlog on
 * an H200 took 9.9 us per kernel instead of 5.0 (hotpath_profile, lv2, 2026-11-26). The
 * completions meanwhile are seen without this thread: the token's holder reaps at each
 * enqueue (xs__window_full) and the progress thread at its pace. Sleeping through the last
 * window as well made a task of 30 SGEMMs of 0.35 ms on the top queue about 1% slower
 * (H200, overhead_cuda, 7 of 10 rounds); why was not pinned down (its last completions are
 * then marked only every batch_size-th, which may be it). */
XResult xs_engine_wait_all(xs_xqueue *xq)
{
	xs_lend lend;
	xs__waiter_begin(xq, &lend);
	xs_mutex_lock(&xq->lock);
	uint64_t target = xq->submitted;
	XResult res = kXSchedSuccess;
	if (xq->completed < target && xs__waits_for_itself(xq, target, "XQueueWaitAll"))
		res = kXSchedErrorNotAllowed;
	xs__wait_all report;
	if (res == kXSchedSuccess)
		xs__report_begin(xq, &report, target);
	xs__waiting w = XS__WAITING_INIT;
	while (res == kXSchedSuccess && xq->completed < target) {
		if (xq->launching && xs__in_enqueue != xq &&
		    xq->enqueued + (uint64_t)xq->threshold < target)
			xs__sleep(xq, target - (uint64_t)xq->threshold, 0); /* a backlog (above) */
		else if (xq->enqueued > xq->completed)
			xs__wait_device(xq, xs__next_step(xq, target), &w);
		else
			xs__sleep(xq, xq->completed + 1, 0); /* until the next is enqueued */
	}
	if (res == kXSchedSuccess)
		res = xs__report_end(xq, &report);
	xs_mutex_unlock(&xq->lock);
	xs__waiter_end(xq, &lend);
	return res;
}

/* ---- submit ---- */

/* Check @cmd and append it to the pending list (taking over the caller's reference).
 * Caller holds xq->lock. */
static XResult xs__accept(xs_xqueue *xq, xs_cmd *cmd)
{
	XS_ASSERT_HELD(&xq->lock);
	struct xs_xqueue *none = NULL;
	if (xq->closing) {
		XS_FAIL("engine", "XQueueSubmit: XQueue 0x%llx is being destroyed",
			(unsigned long long)xq->obj.handle);
		return kXSchedErrorNotFound;
	}
	if (cmd->kind != XS_CMD_INLINE && !xq->hwq->ops->supports(xq->hwq, cmd->kind)) {
		XS_FAIL("engine", "XQueueSubmit: the %s HwQueue cannot run this kind of command",
			xq->hwq->ops->name);
		return kXSchedErrorNotSupported;
	}
	if (!atomic_compare_exchange_strong_explicit(&cmd->xq, &none, xq, memory_order_acq_rel,
						     memory_order_acquire)) {
		XS_FAIL("engine", "XQueueSubmit: command 0x%llx was already submitted",
			(unsigned long long)cmd->obj.handle);
		return kXSchedErrorNotAllowed;
	}
	bool was_idle = !xs__has_work(xq);
	cmd->seq = ++xq->submitted;
	cmd->pos = xq->scopes ? xq->scope_pos : -1;
	if (xq->scopes && xq->scope_pos < XS_PACE_POS)
		xq->scope_pos++; /* past the table: no position (pace.h) */
	XS_TRACE(XS_TR_SUBMIT, xq->obj.handle, cmd->seq, cmd->kind);
	xs__top_update(xq); /* a top queue's arrival holds the others at once */
	cmd->state = XS_CMD_PENDING;
	xs_list_push_back(&xq->pending, &cmd->link); /* takes over the caller's reference */
	if (cmd->kind == XS_CMD_EVENT_RECORD)
		xs__kick_blocked(); /* a wait on it may be blocked in this XQueue */
	if (was_idle) {
		xq->ready_since_ns = xs_now_ns();
		xs_signal_notify(xq);
	}
	return kXSchedSuccess;
}

XResult xs_engine_submit(xs_xqueue *xq, xs_cmd *cmd)
{
	xs_mutex_lock(&xq->lock);
	XResult res = xs__accept(xq, cmd);
	if (res == kXSchedSuccess)
		xs_engine_progress(xq, true);
	xs_mutex_unlock(&xq->lock);
	return res;
}

XResult xs_engine_launch_inline(xs_xqueue *xq, xs_cmd *cmd)
{
	if (xs_engine_in_callback(xq)) {
		XS_FAIL("engine",
			"XQueueLaunchInline on XQueue 0x%llx from its own command would wait for "
			"itself; refused",
			(unsigned long long)xq->obj.handle);
		xs_obj_unref(&cmd->obj);
		return kXSchedErrorNotAllowed;
	}
	/* It may wait for @xq as XQueueWait does: the same priority inheritance. */
	xs_lend lend;
	xs__waiter_begin(xq, &lend);
	xs_mutex_lock(&xq->lock);
	XResult res = xs__accept(xq, cmd);
	if (res != kXSchedSuccess) {
		xs_mutex_unlock(&xq->lock);
		xs__waiter_end(xq, &lend);
		xs_obj_unref(&cmd->obj); /* refused: the caller's reference ends here */
		return res;
	}
	xs_obj_ref(&cmd->obj); /* ours, to read its result */
	/* Only this thread enqueues it (xs__drain stops in front of it on other threads and
	 * wakes us; xs_engine_progress wakes us wherever it would kick the launch thread). */
	while (cmd->state == XS_CMD_PENDING) {
		if (!xq->launching && xs_list_first(&xq->pending) == &cmd->link) {
			xs__drain(xq);
			if (cmd->state != XS_CMD_PENDING)
				break;
		}
		xs_cond_wait(&xq->cv, &xq->lock);
	}
	res = cmd->result;
	xs_mutex_unlock(&xq->lock);
	xs__waiter_end(xq, &lend);
	xs_obj_unref(&cmd->obj);
	return res;
}

/* A scope opened on the protected @xq: a unit of its objective starts at the next enqueue
 * (objective.c), unless the last one has not ended yet (units do not overlap: that scope
 * is not measured). Caller holds xq->lock. */
static void xs__unit_open(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_objective *o = &xq->objective;
	if (o->goal_pm && !o->unit_start_ns && !xq->units_explicit)
		o->unit_armed = true; /* explicit units (XQueueBeginUnit) are measured instead */
}

/* The scope closed: its unit ends with the last command enqueued in it, or now when that
 * one has completed (none enqueued: no unit). Caller holds xq->lock. */
static void xs__unit_close(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_objective *o = &xq->objective;
	o->unit_armed = false;
	if (!o->unit_start_ns || o->unit_end_seq)
		return;
	if (xq->enqueued > xq->completed)
		o->unit_end_seq = xq->enqueued;
	else if (xs_objective_unit_end(xq, xs_now_ns()))
		xs_signal_notify(xq);
}

/* After @xq's work, scopes or unit changed (@had: it had work before): the scheduler and
 * the budget's hold learn it. Caller holds xq->lock. */
static void xs__work_changed(xs_xqueue *xq, bool had)
{
	XS_ASSERT_HELD(&xq->lock);
	bool has = xs__has_work(xq);
	if (has == had)
		return;
	if (has)
		xq->ready_since_ns = xs_now_ns();
	xs__top_update(xq);
	xs_signal_notify(xq);
}

XResult xs_engine_scope(xs_xqueue *xq, bool open)
{
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xq->lock);
	if (xq->closing) { /* XQueueDestroy ends every scope, open or opened meanwhile */
		xs_mutex_unlock(&xq->lock);
		XS_FAIL("engine", "%s: XQueue 0x%llx is being destroyed",
			open ? "XQueueBeginScope" : "XQueueEndScope",
			(unsigned long long)xq->obj.handle);
		return kXSchedErrorNotFound;
	}
	bool had = xs__has_work(xq);
	if (open) {
		if (xq->scopes++ == 0) {
			xq->scope_pos = 0; /* positions count from each outermost scope */
			xs__unit_open(xq);
		}
	} else if (xq->scopes == 0) {
		XS_FAIL("engine", "XQueueEndScope: XQueue 0x%llx has no open scope",
			(unsigned long long)xq->obj.handle);
		res = kXSchedErrorNotAllowed;
	} else if (--xq->scopes == 0) {
		xs__unit_close(xq);
	}
	XS_TRACE(XS_TR_SCOPE, xq->obj.handle, open, xq->scopes);
	xs__work_changed(xq, had);
	xs_mutex_unlock(&xq->lock);
	return res;
}

/* Whether a unit call on @xq may go on: not while it closes, nor from its own command (a
 * slice waits for lower queues; the queue's own command would hold its device meanwhile);
 * @open: whether a unit must be open (end) or not (begin). Logs a refusal. Caller holds
 * xq->lock. */
static XResult xs__unit_check(const xs_xqueue *xq, bool open, const char *fn)
{
	XS_ASSERT_HELD(&xq->lock);
	if (xq->closing) {
		XS_FAIL("engine", "%s: XQueue 0x%llx is being destroyed", fn,
			(unsigned long long)xq->obj.handle);
		return kXSchedErrorNotFound;
	}
	if (xq->unit_open != open) {
		XS_FAIL("engine", "%s: XQueue 0x%llx %s", fn, (unsigned long long)xq->obj.handle,
			open ? "has no open unit" : "has a unit open already (units do not nest)");
		return kXSchedErrorNotAllowed;
	}
	return kXSchedSuccess;
}

/* XQueueBeginUnit: the unit arrives now; it has work from here on. A protected queue
 * with nothing of its own in flight opens its pacing slice (budget.c, pace.h); with
 * XSCHED_PACE_WAIT=1 it waits the slice out, no lock held, before the unit is released.
 * The unit is measured from its arrival, unless another begin and end came meanwhile (the
 * generation) or the queue is being destroyed. Caller holds xq->lock (dropped meanwhile). */
static XResult xs__unit_begin(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	XResult res = kXSchedSuccess;
	bool had = xs__has_work(xq);
	xq->unit_open = true;
	xq->units_explicit = true;
	uint32_t gen = ++xq->unit_gen;
	xs_engine_reap(xq, false, false); /* the last unit's end, if the device passed it */
	int64_t arrive = xs_now_ns();
	xs__work_changed(xq, had);
	/* A slice only between units: lower work beside our own would slow it. */
	int64_t allow = xq->completed == xq->submitted ? xs_objective_allowance(xq) : 0;
	xs_mutex_unlock(&xq->lock);
	int64_t end = allow ? xs_budget_slice_open(xq, allow, arrive) : 0;
	if (end && xs_config_get()->pace_wait)
		xs_budget_slice_wait(xq->dev, end); /* serial: the slice before the unit */
	xs_mutex_lock(&xq->lock);
	if (xq->closing)
		res = xs__unit_check(xq, false, "XQueueBeginUnit"); /* destroyed meanwhile */
	else if (xq->unit_open && xq->unit_gen == gen)
		xs_objective_xunit_begin(xq, arrive, xs_now_ns());
	XS_TRACE(XS_TR_UNIT, xq->obj.handle, 1, end ? xs_now_ns() - arrive : 0);
	return res;
}

/* XQueueEndUnit: a measured unit ends with a boundary (a launch callback without a
 * launch: its done mark follows the unit's work on the HwQueue), submitted while the unit
 * still counts as work, so that the queue does not look idle in between. The call does
 * not wait for it: the boundary goes behind the queue's window, a suspension or the
 * budget as any command does, and the unit ends when it completes. Caller holds
 * xq->lock. */
static XResult xs__unit_end(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	XResult res = kXSchedSuccess;
	bool had = xs__has_work(xq);
	bool measured = xs_objective_xunit_open(xq), sent = false;
	xs_cmd *mark = measured ? xs_cmd_new(XS_CMD_CALLBACK, 0) : NULL; /* fn NULL: a boundary */
	if (mark && (res = xs__accept(xq, mark)) == kXSchedSuccess) {    /* takes our reference */
		xs_objective_xunit_close(xq, mark->seq);
		sent = true;
	} else if (mark) {
		xs_obj_unref(&mark->obj);
	} else if (measured) {
		res = kXSchedErrorUnknown; /* out of memory */
	}
	if (measured && !sent)
		xs_objective_xunit_drop(xq); /* no boundary: never measured */
	xq->unit_open = false;
	XS_TRACE(XS_TR_UNIT, xq->obj.handle, 0, 0);
	xs__work_changed(xq, had);
	if (sent)
		xs_engine_progress(xq, true); /* enqueued here when it may go */
	return res;
}

XResult xs_engine_unit(xs_xqueue *xq, bool begin)
{
	if (begin && xs_engine_in_callback(xq)) {
		XS_FAIL("engine",
			"XQueueBeginUnit on XQueue 0x%llx from its own command would hold its "
			"device while lower queues run its slice; refused",
			(unsigned long long)xq->obj.handle);
		return kXSchedErrorNotAllowed;
	}
	xs_mutex_lock(&xq->lock);
	XResult res = xs__unit_check(xq, !begin, begin ? "XQueueBeginUnit" : "XQueueEndUnit");
	if (res == kXSchedSuccess)
		res = begin ? xs__unit_begin(xq) : xs__unit_end(xq);
	xs_mutex_unlock(&xq->lock);
	return res;
}

XResult xs_engine_gate_check(xs_xqueue *xq)
{
	xs_hwq *q = xq->hwq;
	if (!q->ops->gate_check || q->max_level < kPreemptLevelDeactivate) {
		XS_FAIL("engine", "XQueueEnqueueGateCheck: the %s HwQueue has no run gate",
			q->ops->name);
		return kXSchedErrorNotSupported;
	}
	/* The launch token for the call: the check goes between two commands, and the mark
	 * in front of it (below) must not overtake one being enqueued (done numbers only
	 * grow). */
	bool own = xs__in_enqueue == xq; /* from a callback inside our enqueue: ours already */
	xs_mutex_lock(&xq->lock);
	if (!own)
		xs__token_take(xq);
	if (xq->gate_after == UINT64_MAX)
		xq->gate_after = xq->enqueued; /* what is enqueued from now on is behind it */
	/* A closed check would hide the completion of a last command left without a mark
	 * (a stopped stream is not idle): its mark goes in front of the check. */
	uint64_t mark = xq->marked < xq->enqueued ? xq->enqueued : 0;
	if (mark) {
		xs__note_mark(xq, mark);
	}
	xs_mutex_unlock(&xq->lock);
	XResult res = q->ops->gate_check(q, mark);
	if (!own) {
		xs_mutex_lock(&xq->lock);
		xs__token_give(xq);
		xs_mutex_unlock(&xq->lock);
	}
	return res;
}

/* ---- suspension and levels ---- */

/* Apply the suspension actions of the levels above @from up to @to. Caller holds
 * xq->lock. */
static void xs__suspend_levels(xs_xqueue *xq, int from, int to)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_hwq *q = xq->hwq;
	if (from < kPreemptLevelDeactivate && to >= kPreemptLevelDeactivate)
		xs__decommit(xq);
	if (from < kPreemptLevelInterrupt && to >= kPreemptLevelInterrupt && q->lv3 &&
	    xs_lv3_interrupt(q->lv3) && q->ops->hold)
		q->ops->hold(q, true);
}

/* Undo the suspension actions of the levels above @to up to @from, innermost first; the
 * caller then commits (xs_engine_progress). Caller holds xq->lock. */
static void xs__resume_levels(xs_xqueue *xq, int from, int to)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_hwq *q = xq->hwq;
	if (from >= kPreemptLevelInterrupt && to < kPreemptLevelInterrupt && q->lv3) {
		xs_lv3_restore(q->lv3); /* a failure is logged once there; retried later */
		if (q->ops->hold)
			q->ops->hold(q, false);
	}
}

/* The run gate closed (@open false) or opened again. Commands enqueued after a run gate
 * check (XQueueEnqueueGateCheck) may wait at it while it is closed, also at Lv1, where
 * they were committed and charged: they must not hold budget meanwhile (the queue that
 * keeps this one suspended may wait for it; issue 22). So at the close their charges go
 * back, but for those that started (where the backend cannot tell, all of them go back,
 * as in xs__decommit); at the opening the committed ones (not gated) are charged again,
 * without waiting for room: they run now. Gated ones are charged again at their next
 * commit. Caller holds xq->lock. */
static void xs__gate_charges(xs_xqueue *xq, bool open)
{
	XS_ASSERT_HELD(&xq->lock);
	xs_hwq *q = xq->hwq;
	if (xq->gate_after == UINT64_MAX)
		return;
	uint64_t from = xq->gate_after;
	uint64_t started = !open && q->ops->started ? q->ops->started(q) : 0;
	if (started > from)
		from = started;
	int64_t now = xs_now_ns();
	xs_list_for_each(l, &xq->inflight)
	{
		xs_cmd *cmd = xs_container_of(l, xs_cmd, link);
		if (cmd->seq <= from)
			continue;
		if (!open)
			xs_budget_uncharge(xq, cmd, now);
		else if (!cmd->gated)
			xs_budget_force(xq, cmd);
	}
}

/* Whether @xq enqueues without counter waits, as the sole top queue (xs_engine_set_limited).
 * Going sole, what waits behind the counter is committed (at Lv1 enqueuing commits).
 * Caller holds xq->lock. */
static void xs__set_sole(xs_xqueue *xq, bool sole)
{
	XS_ASSERT_HELD(&xq->lock);
	if (sole == xq->sole_top)
		return;
	xq->sole_top = sole;
	XS_TRACE(XS_TR_SOLE, xq->obj.handle, sole, 0);
	if (sole)
		xs__commit(xq);
}

/* Recompute xq->running and apply the level's actions on a change. A queue that stops
 * running is not the sole top queue (whoever suspended it: from here on its commands wait
 * at the counter, so that the decommit below stops it at its next boundary; those already
 * enqueued without run on). Caller holds xq->lock. */
static void xs__apply(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	bool run = xq->closing || !(xq->app_suspended || xq->sched_suspended);
	if (run == xq->running)
		return;
	xq->running = run;
	xs_budget_pause(xq, !run);
	xs_hwq *q = xq->hwq;
	if (q->ops->set_run_gate && q->max_level >= kPreemptLevelDeactivate) {
		q->ops->set_run_gate(q, run);
		xs__gate_charges(xq, run);
	}
	int64_t now = xs_now_ns();
	XS_TRACE(run ? XS_TR_RESUME : XS_TR_SUSPEND, xq->obj.handle, xq->app_suspended,
		 xq->sched_suspended);
	if (!run) {
		xs__set_sole(xq, false);
		xq->suspensions++;
		xq->suspended_since_ns = now;
		/* A pending command charged by the budget's grant (Lv1) will not be enqueued
		 * while suspended: its charge goes back, or it would hold budget that the
		 * queue keeping this one suspended may wait for (seen on an H100: every queue
		 * stopped). */
		xs_list_for_each(l, &xq->pending)
		    xs_budget_uncharge(xq, xs_container_of(l, xs_cmd, link), now);
		xs__suspend_levels(xq, kPreemptLevelBlock, xq->level);
	} else {
		xq->suspended_ns += now - xq->suspended_since_ns;
		xs__resume_levels(xq, xq->level, kPreemptLevelBlock);
		xs_engine_progress(xq, false);
	}
}

XResult xs_engine_app_suspend(xs_xqueue *xq, bool suspend, bool sync)
{
	xs_mutex_lock(&xq->lock);
	/* Lv1: what was enqueued (and an enqueue in progress) completes; nothing enqueued
	 * later is waited for, and a level raised meanwhile does not decommit it
	 * (xs__decommit), so neither can hold this call. */
	uint64_t target = xs__last_enqueued(xq);
	if (suspend && sync && xq->gate_after != UINT64_MAX && target > xq->gate_after &&
	    xq->completed < target) {
		xs_mutex_unlock(&xq->lock);
		XS_FAIL(
		    "engine",
		    "XQueueSuspend: SyncHwQueue on XQueue 0x%llx, whose stream got run gate "
		    "checks, with commands behind one in flight: stopped at a closed check, they "
		    "would never complete; not suspended",
		    (unsigned long long)xq->obj.handle);
		return kXSchedErrorNotSupported;
	}
	if (suspend && sync && target > xq->sync_target)
		xq->sync_target = target;
	if (suspend)
		xq->app_suspended_once = true; /* never sole again (xs_engine_set_limited) */
	xq->app_suspended = suspend;
	xs__apply(xq);
	if (suspend && sync) {
		xs__waiting w = XS__WAITING_INIT;
		while (xq->completed < target && !xq->closing) {
			if (xq->enqueued > xq->completed)
				xs__wait_device(xq, xs__next_step(xq, target), &w);
			else
				xs_cond_wait(&xq->cv, &xq->lock);
		}
	}
	xs_mutex_unlock(&xq->lock);
	return kXSchedSuccess;
}

void xs_engine_sched_suspend(xs_xqueue *xq, bool suspend)
{
	xs_mutex_lock(&xq->lock);
	if (xq->sched_suspended != suspend) {
		xq->sched_suspended = suspend;
		xs__apply(xq);
	}
	xs_mutex_unlock(&xq->lock);
}

void xs_engine_set_limited(xs_xqueue *xq, bool limited, bool sole, int64_t prio)
{
	xs_hwq *q = xq->hwq;
	xs_mutex_lock(&xq->lock);
	xs_budget_set_prio(xq, prio);
	if (limited != xq->limited && xq->objective.goal_pm && xs_objective_limited(xq, limited))
		xs_signal_notify(xq); /* the co-run budget went from 0 or to 0 */
	xq->limited = limited;
	/* The counter wait is what lets a suspension stop the queue at its next command
	 * boundary (Lv2); a queue no pass suspends does not need it, and it is a driver call
	 * per command (a stream wait-value: about 1.2 us of a tiny kernel's 4-5 us on an
	 * H100, doc/RESULTS.md). When the queue stops being sole, the commands it enqueued
	 * without one (at most the window) run on: the cost of the change, once. */
	xs__set_sole(xq,
		     sole && !xq->app_suspended_once && xq->running && !xs_config_get()->top_gates);
	xs__top_update(xq);
	xs_engine_progress(xq, false);
	int top = !limited;
	bool apply = top != xq->hw_top && q->ops->set_priority && xs_config_get()->hw_priority;
	if (apply)
		xq->hw_top = top;
	xs_mutex_unlock(&xq->lock);
	/* Outside the lock: the runtime may wait for the stream, which may wait for a commit
	 * that needs the lock. */
	if (apply) {
		q->ops->set_priority(q, top);
		atomic_store_explicit(&xq->hw_set, top ? 2 : 1, memory_order_release);
	}
}

void xs_engine_set_objective(xs_xqueue *xq, int64_t goal_pm)
{
	xs_mutex_lock(&xq->lock);
	if (xs_objective_set(xq, goal_pm))
		xs_signal_notify(xq); /* the co-run budget went from 0 or to 0 */
	xs_mutex_unlock(&xq->lock);
}

void xs_engine_set_level(xs_xqueue *xq, int level)
{
	xs_mutex_lock(&xq->lock);
	int old = xq->level;
	xq->level = level;
	/* At Lv1 enqueued means committed: open the counter for what waits behind it. */
	if (old >= kPreemptLevelDeactivate && level < kPreemptLevelDeactivate)
		xs__commit(xq);
	if (!xq->running && level > old)
		xs__suspend_levels(xq, old, level);
	else if (!xq->running && level < old)
		xs__resume_levels(xq, old, level);
	xs_engine_progress(xq, false);
	xs_mutex_unlock(&xq->lock);
}

XResult xs_engine_set_launch_config(xs_xqueue *xq, int64_t threshold, int64_t batch_size)
{
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xq->lock);
	int64_t t = threshold > 0 ? threshold : xq->threshold;
	int64_t b = batch_size > 0 ? batch_size : xq->batch_size;
	if (t < b) {
		XS_FAIL("engine", "XQueueSetLaunchConfig: threshold %lld is below batch size %lld",
			(long long)t, (long long)b);
		res = kXSchedErrorInvalidValue;
	} else {
		xq->threshold = t;
		xq->batch_size = b;
		xs_engine_progress(xq, false); /* a larger window may allow enqueues now */
	}
	xs_mutex_unlock(&xq->lock);
	return res;
}

/* ---- what the layers above read ---- */

/* @xq's state now, into @out. Caller holds xq->lock. */
static void xs__snap(xs_xqueue *xq, xs_xqueue_snap *out)
{
	XS_ASSERT_HELD(&xq->lock);
	*out = (xs_xqueue_snap){
	    .submitted = xq->submitted,
	    /* A command inside its enqueue call counts as launched: the device may run it. */
	    .launched = xq->issuing > xq->enqueued ? xq->issuing : xq->enqueued,
	    .completed = xq->completed,
	    .failed = xq->failed,
	    .committed = xq->committed,
	    .level = xq->level,
	    .threshold = xq->threshold,
	    .batch_size = xq->batch_size,
	    .ready = xs__ready(xq),
	    .sched_suspended = xq->sched_suspended,
	    .closing = xq->closing,
	    .lent = !xs_list_empty(&xq->lenders),
	    .ready_since_ns = xq->ready_since_ns,
	    .busy_ns = xq->busy_ns,
	    .blocked_on = xs__blocked_on(xq),
	};
}

void xs_engine_snapshot(xs_xqueue *xq, xs_xqueue_snap *out)
{
	xs_mutex_lock(&xq->lock);
	xs__snap(xq, out);
	xs_mutex_unlock(&xq->lock);
}

void xs_engine_stats(xs_xqueue *xq, xs_xqueue_stats *out)
{
	xs_mutex_lock(&xq->lock);
	xs__snap(xq, &out->now);
	out->suspensions = xq->suspensions;
	out->suspended_ns = xq->suspended_ns;
	if (!xq->running)
		out->suspended_ns += xs_now_ns() - xq->suspended_since_ns;
	out->est_ns = xq->est_ns;
	xs_objective_state(xq, &out->objective);
	out->hw_priority = atomic_load_explicit(&xq->hw_set, memory_order_acquire);
	out->corun_ns = xs_objective_corun_of(xq);
	xs_mutex_unlock(&xq->lock);
}

void xs_engine_lenders(xs_xqueue *xq, void (*fn)(void *arg, const xs_xqueue *from), void *arg)
{
	xs_mutex_lock(&xq->lock);
	xs_list_for_each(l, &xq->lenders) fn(arg, xs_container_of(l, xs_lend, link)->from);
	xs_mutex_unlock(&xq->lock);
}

void *xs_engine_sched_priv(const xs_xqueue *xq)
{
	return xq->sched_priv;
}

void xs_engine_set_sched_priv(xs_xqueue *xq, void *priv)
{
	xq->sched_priv = priv;
}

xs_hwq *xs_engine_hwq(const xs_xqueue *xq)
{
	return xq->hwq;
}

const void *xs_engine_device(const xs_xqueue *xq)
{
	return xq->dev;
}

void xs_engine_exit(void)
{
	xs_lv3_release_all();
}

/* ---- destroy ---- */

void xs_engine_destroy(xs_xqueue *xq)
{
	xs_mutex_lock(&xq->lock);
	/* Drain: from here on nothing new is accepted and suspensions are ignored; what is
	 * left is enqueued on this thread unless another holds the token. */
	xq->closing = true;
	xs__top_update(xq);
	xs__apply(xq);
	xs_signal_notify(xq); /* a pass: queues it lends to run now too (sched.c) */
	xs__waiting w = XS__WAITING_INIT;
	while (xq->completed != xq->submitted) {
		xs_engine_progress(xq, true);
		if (xq->enqueued > xq->completed)
			xs__wait_device(xq, xq->enqueued, &w);
		else if (xq->completed != xq->submitted)
			xs_cond_wait(&xq->cv, &xq->lock);
	}
	if (xq->scopes || xq->unit_open) { /* scopes and a unit left open end with it */
		xq->scopes = 0;
		xq->unit_open = false;
		xs_signal_notify(xq);
	}
	xs_dep_unblock(xq);
	/* A waiter's mark or a run gate check may still be inside its backend call: after
	 * the return the HwQueue may get a new XQueue and be reset, and a mark landing then
	 * would complete that XQueue's commands. */
	while (xq->launching)
		xs_cond_wait(&xq->cv, &xq->lock);
	xs_signal_deactivate(xq);
	xs_mutex_unlock(&xq->lock);
}
