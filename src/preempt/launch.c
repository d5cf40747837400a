/* Progressive launching (Lv1) and the preemption actions of Lv2/Lv3.
 *
 * Each XQueue has two threads:
 * - the launcher moves commands from the pending list to the HwQueue, in order, while the
 *   XQueue runs and fewer than `threshold` commands are in flight; after every
 *   `batch_size` launches, and whenever it stops launching with uncovered commands in
 *   flight, it marks a completion point;
 * - the completer waits for completion points in order and completes every command up to
 *   each, which frees window space for the launcher and wakes waiters.
 * Neither holds xq->lock while it calls the backend or user code.
 *
 * Suspension at Lv1 is "stop launching": what is in flight finishes (at most `threshold`
 * commands). At Lv2 the HwQueue's gate is closed as well, so it stops at its next gated
 * command; at Lv3 running work is interrupted. Source of the mechanism: XSched (OSDI '25),
 * section 4 (progressive command launching, levels of preemption).
 *
 * Event dependencies. A wait command at the head of an XQueue is launched only once its
 * record may be depended on (xs__dep_may_go):
 * - the record is DONE (completed), or
 * - it is LAUNCHED on a queue of the same backend and nothing can hold it back after
 *   launch, so the backend orders the wait behind it natively (cudaStreamWaitEvent; the
 *   host executor waits for the marker). A record launched gated, or with gated commands
 *   still in flight before it, can be stopped behind a closed gate (Lv2) for as long as
 *   its XQueue stays suspended; a wait launched behind it would then stall the waiting
 *   queue while it counts as running, and HPF would keep the producer suspended for
 *   ever. Such a record is marked needs_done, gets a completion point right after it,
 *   and its waiters go only once it has completed.
 * While the head wait cannot go, the launcher marks a completion point after what it has
 * launched, sets xq->blocked (the scheduler then treats the XQueue as not ready, so HPF
 * lets the producer run) and sleeps on xs__dep_cv.
 *
 * Locks: xs__dep_lock guards the dependency state (u.record.dep, needs_done, dep_result)
 * of every event record, and xs__dep_cv is broadcast on every change of it. It is a leaf:
 * the producer's launcher and completer and HwCommandDestroy take it inside the one
 * XQueue lock they hold; a blocked launcher takes it with no lock held. No thread ever
 * holds two XQueue locks. Wake-ups coalesce: every waiter re-checks its own record.
 * Limit: a record launched at Lv1 behind ungated work can still be stopped if its
 * XQueue is raised to Lv3 and interrupted while that work runs.
 */
#include "core/log.h"
#include "core/xqueue.h"
#include "sched/sched.h"

static xs_mutex xs__dep_lock = PTHREAD_MUTEX_INITIALIZER;
/* Never waited on with a time-out, so the default (realtime) clock does not matter. */
static xs_cond xs__dep_cv = PTHREAD_COND_INITIALIZER;

void xs_dep_advance(xs_cmd *record, enum xs_dep_state state, XResult res)
{
	xs_mutex_lock(&xs__dep_lock);
	if (state > record->u.record.dep) {
		record->u.record.dep = state;
		if (state == XS_DEP_FAILED)
			record->u.record.dep_result = res;
		xs_cond_broadcast(&xs__dep_cv);
	}
	xs_mutex_unlock(&xs__dep_lock);
}

void xs_dep_submitted(void)
{
	xs_mutex_lock(&xs__dep_lock);
	xs_cond_broadcast(&xs__dep_cv);
	xs_mutex_unlock(&xs__dep_lock);
}

/* Whether a wait on @rec may be launched on a queue of backend @ops now; on a failed
 * record, also its result in *res. Caller holds xs__dep_lock. */
static bool xs__dep_may_go(const xs_cmd *rec, const xs_hal_ops *ops, XResult *res)
{
	switch (rec->u.record.dep) {
	case XS_DEP_FAILED:
		*res = rec->u.record.dep_result;
		return true;
	case XS_DEP_DONE:
		return true;
	case XS_DEP_LAUNCHED:
		return !rec->u.record.needs_done && rec->u.record.ops == ops;
	default:
		return false;
	}
}

/* Decide whether the wait @cmd at the head of @xq can be launched. Returns false if it
 * must wait; true if it can go, with *res the result to give it instead of launching
 * (kXSchedSuccess = launch it). Caller holds xq->lock. */
static bool xs__dep_check(xs_xqueue *xq, xs_cmd *cmd, XResult *res)
{
	xs_cmd *rec = cmd->u.wait.record;
	*res = kXSchedSuccess;
	if (atomic_load_explicit(&rec->xq, memory_order_acquire) == xq) {
		/* Same XQueue: its state is ours to read. Launched before us, the stream order
		 * is enough; still pending, it is behind us and can never run first. */
		if (rec->state == XS_CMD_PENDING) {
			XS_WARN("lv1",
				"command %llu waits for an event recorded later in the same "
				"XQueue; it fails",
				(unsigned long long)cmd->seq);
			*res = kXSchedErrorInvalidValue;
			return true;
		}
		xs_mutex_lock(&xs__dep_lock);
		if (rec->u.record.dep == XS_DEP_FAILED)
			*res = rec->u.record.dep_result;
		xs_mutex_unlock(&xs__dep_lock);
		return true;
	}
	xs_mutex_lock(&xs__dep_lock);
	bool go = xs__dep_may_go(rec, xq->hwq->ops, res);
	xs_mutex_unlock(&xs__dep_lock);
	return go;
}

/* Sleep until the record of the head wait may be depended on, counting as blocked to the
 * scheduler meanwhile. Caller holds xq->lock; it is dropped while sleeping. */
static void xs__dep_block(xs_xqueue *xq, xs_cmd *rec)
{
	xq->blocked = true;
	xs_sched_notify(xq);
	xs_mutex_unlock(&xq->lock);
	XS_DEBUG("lv1", "XQueue 0x%llx waits for an event of another XQueue",
		 (unsigned long long)xq->obj.handle);
	XResult ignored;
	xs_mutex_lock(&xs__dep_lock);
	/* Submitted to this very XQueue, the record is behind the wait: xs__dep_check fails
	 * the wait. */
	while (!xs__dep_may_go(rec, xq->hwq->ops, &ignored) &&
	       atomic_load_explicit(&rec->xq, memory_order_acquire) != xq)
		xs_cond_wait(&xs__dep_cv, &xs__dep_lock);
	xs_mutex_unlock(&xs__dep_lock);
	xs_mutex_lock(&xq->lock);
	xq->blocked = false;
	xs_sched_notify(xq);
}

/* Whether a record launched now at the tail of @xq may be held back by a closed gate.
 * Caller holds xq->lock. */
static bool xs__gated_in_flight(const xs_xqueue *xq)
{
	for (const xs_cmd *c = xq->flight_head; c; c = c->next)
		if (c->gated)
			return true;
	return false;
}

static bool xs__can_launch(const xs_xqueue *xq)
{
	return xq->pend_head && xq->running &&
	       (int64_t)(xq->launched - xq->completed) < xq->threshold;
}

/* Mark a completion point after the last launched command (xq->flight_tail). Called
 * by the launcher with xq->lock held; drops it around the backend call. */
static void xs__mark_sync(xs_xqueue *xq)
{
	xs_cmd *cmd = xq->flight_tail;
	xq->synced = cmd->seq;
	xs_mutex_unlock(&xq->lock);
	XResult res = xq->hwq->ops->sync_create(xq->hwq, &cmd->sync);
	if (res != kXSchedSuccess)
		XS_WARN("lv1",
			"completion point after command %llu failed (%d); the completer "
			"will drain the HwQueue instead",
			(unsigned long long)cmd->seq, res);
	xs_mutex_lock(&xq->lock);
	cmd->has_sync = true;
	cmd->sync_valid = res == kXSchedSuccess;
	if (xq->sp_tail)
		xq->sp_tail->sync_next = cmd;
	else
		xq->sp_head = cmd;
	xq->sp_tail = cmd;
	xs_cond_signal(&xq->complete_cv);
}

static void *xs__launcher(void *arg)
{
	xs_xqueue *xq = arg;
	xs_hwq *q = xq->hwq;
	XResult init = q->ops->thread_init(q);
	if (init != kXSchedSuccess)
		XS_ERROR("lv1",
			 "launcher cannot use the %s HwQueue (%d); its commands will "
			 "fail",
			 q->ops->name, init);
	xs_mutex_lock(&xq->lock);
	for (;;) {
		if (!xs__can_launch(xq)) {
			if (xq->launched > xq->synced) {
				xs__mark_sync(xq);
				continue;
			}
			if (xq->stop)
				break;
			xs_cond_wait(&xq->launch_cv, &xq->lock);
			continue;
		}
		xs_cmd *cmd = xq->pend_head;
		XResult skip = kXSchedSuccess; /* a result that replaces the launch */
		if (cmd->kind == XS_CMD_EVENT_WAIT && !xs__dep_check(xq, cmd, &skip)) {
			if (xq->launched > xq->synced) /* let what is in flight complete */
				xs__mark_sync(xq);
			else
				xs__dep_block(xq, cmd->u.wait.record);
			continue; /* suspension or the window may have changed meanwhile */
		}
		xq->pend_head = cmd->next;
		if (!xq->pend_head)
			xq->pend_tail = NULL;
		cmd->next = NULL;
		bool gated = xq->level >= kPreemptLevelDeactivate;
		bool batch_end = (int64_t)(xq->launched - xq->synced) >= xq->batch_size;
		bool record = cmd->kind == XS_CMD_EVENT_RECORD;
		bool needs_done = false;
		if (record) {
			cmd->u.record.ops = q->ops;
			/* Checked before cmd joins the in-flight list below. */
			needs_done = gated || xs__gated_in_flight(xq);
			batch_end = batch_end || needs_done; /* waiters need its completion */
		}
		cmd->gated = gated;
		cmd->state = XS_CMD_IN_FLIGHT;
		if (xq->flight_tail)
			xq->flight_tail->next = cmd;
		else
			xq->flight_head = cmd;
		xq->flight_tail = cmd;
		xq->launched++;
		xs_mutex_unlock(&xq->lock);

		XResult res = init;
		if (res == kXSchedSuccess)
			res = skip != kXSchedSuccess ? skip : q->ops->launch(q, cmd, gated);
		if (res != kXSchedSuccess) {
			XS_WARN("lv1", "launch of command %llu on the %s HwQueue failed (%d)",
				(unsigned long long)cmd->seq, q->ops->name, res);
			cmd->result = res; /* published to the completer by the lock below */
		}

		xs_mutex_lock(&xq->lock);
		if (record) {
			if (res == kXSchedSuccess) {
				xs_mutex_lock(&xs__dep_lock);
				cmd->u.record.needs_done = needs_done;
				xs_mutex_unlock(&xs__dep_lock);
				xs_dep_advance(cmd, XS_DEP_LAUNCHED, kXSchedSuccess);
			} else {
				xs_dep_advance(cmd, XS_DEP_FAILED, res);
			}
		}
		if (batch_end)
			xs__mark_sync(xq);
	}
	xs_mutex_unlock(&xq->lock);
	return NULL;
}

/* Complete every in-flight command with seq <= @seq. Caller holds xq->lock. */
static void xs__complete_upto(xs_xqueue *xq, uint64_t seq, XResult res)
{
	while (xq->flight_head && xq->flight_head->seq <= seq) {
		xs_cmd *cmd = xq->flight_head;
		xq->flight_head = cmd->next;
		if (!xq->flight_head)
			xq->flight_tail = NULL;
		cmd->next = NULL;
		if (res != kXSchedSuccess && cmd->result == kXSchedSuccess)
			cmd->result = res;
		if (cmd->result != kXSchedSuccess) {
			xq->failed++;
			if (xq->err_pending == kXSchedSuccess)
				xq->err_pending = cmd->result;
		}
		cmd->state = XS_CMD_DONE;
		xq->completed++;
		if (cmd->kind == XS_CMD_EVENT_RECORD) {
			atomic_store_explicit(&cmd->u.record.ran, true, memory_order_release);
			xs_dep_advance(cmd,
				       cmd->result == kXSchedSuccess ? XS_DEP_DONE : XS_DEP_FAILED,
				       cmd->result);
		}
		xs_obj_unref(&cmd->obj); /* the XQueue's reference */
	}
}

static void *xs__completer(void *arg)
{
	xs_xqueue *xq = arg;
	xs_hwq *q = xq->hwq;
	XResult init = q->ops->thread_init(q);
	if (init != kXSchedSuccess)
		XS_ERROR("lv1", "completer cannot use the %s HwQueue (%d)", q->ops->name, init);
	xs_mutex_lock(&xq->lock);
	for (;;) {
		if (!xq->sp_head) {
			if (xq->stop)
				break;
			xs_cond_wait(&xq->complete_cv, &xq->lock);
			continue;
		}
		/* The point's command stays in flight, so alive, until completed below. */
		xs_cmd *sp = xq->sp_head;
		xs_mutex_unlock(&xq->lock);
		XResult res;
		if (sp->sync_valid) {
			res = q->ops->sync_wait(q, &sp->sync);
			q->ops->sync_destroy(q, &sp->sync);
		} else {
			res = q->ops->sync_all(q);
		}
		xs_mutex_lock(&xq->lock);
		xq->sp_head = sp->sync_next;
		if (!xq->sp_head)
			xq->sp_tail = NULL;
		xs__complete_upto(xq, sp->seq, res);
		xs_cond_broadcast(&xq->done_cv);
		xs_cond_signal(&xq->launch_cv);
		if (xs_xqueue_idle(xq))
			xs_sched_notify(xq);
	}
	xs_mutex_unlock(&xq->lock);
	return NULL;
}

int xs_launch_start(xs_xqueue *xq)
{
	int err = xs_thread_start(&xq->launcher, "xs-launch", xs__launcher, xq);
	if (err)
		return err;
	err = xs_thread_start(&xq->completer, "xs-complete", xs__completer, xq);
	if (err) {
		xs_mutex_lock(&xq->lock);
		xq->stop = true;
		xs_cond_signal(&xq->launch_cv);
		xs_mutex_unlock(&xq->lock);
		xs_thread_join(xq->launcher);
	}
	return err;
}

void xs_launch_stop(xs_xqueue *xq)
{
	xs_mutex_lock(&xq->lock);
	xq->stop = true;
	xs_cond_signal(&xq->launch_cv);
	xs_cond_signal(&xq->complete_cv);
	xs_mutex_unlock(&xq->lock);
	xs_thread_join(xq->launcher);
	xs_thread_join(xq->completer);
}

/* Apply the suspension actions of the levels above @from up to @to (close the gate for
 * Lv2, interrupt for Lv3). Caller holds xq->lock. */
static void xs__suspend_levels(xs_xqueue *xq, int from, int to)
{
	xs_hwq *q = xq->hwq;
	if (from < kPreemptLevelDeactivate && to >= kPreemptLevelDeactivate)
		q->ops->gate_close(q);
	if (from < kPreemptLevelInterrupt && to >= kPreemptLevelInterrupt &&
	    q->ops->interrupt(q) != kXSchedSuccess)
		XS_WARN("lv3", "interrupt failed; the queue stays deactivated (Lv2)");
}

/* Undo the suspension actions of the levels above @to up to @from, innermost first.
 * Caller holds xq->lock. */
static void xs__resume_levels(xs_xqueue *xq, int from, int to)
{
	xs_hwq *q = xq->hwq;
	if (from >= kPreemptLevelInterrupt && to < kPreemptLevelInterrupt &&
	    q->ops->restore(q) != kXSchedSuccess)
		XS_ERROR("lv3", "restore failed");
	if (from >= kPreemptLevelDeactivate && to < kPreemptLevelDeactivate)
		q->ops->gate_open(q);
}

void xs_preempt_apply(xs_xqueue *xq)
{
	bool run = xq->closing || !(xq->app_suspended || xq->sched_suspended);
	if (run == xq->running)
		return;
	xq->running = run;
	int64_t now = xs_now_ns();
	if (!run) {
		xq->suspensions++;
		xq->suspended_since_ns = now;
		xs__suspend_levels(xq, kPreemptLevelBlock, xq->level);
	} else {
		xq->suspended_ns += now - xq->suspended_since_ns;
		xs__resume_levels(xq, xq->level, kPreemptLevelBlock);
		xs_cond_signal(&xq->launch_cv);
	}
}

void xs_preempt_relevel(xs_xqueue *xq, int old_level)
{
	if (xq->running || old_level == xq->level)
		return;
	/* Only the difference: a gate that stays closed is never reopened in between. */
	if (xq->level > old_level)
		xs__suspend_levels(xq, old_level, xq->level);
	else
		xs__resume_levels(xq, old_level, xq->level);
}
