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
 */
#include "core/log.h"
#include "core/xqueue.h"
#include "sched/sched.h"

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
		XS_WARN("lv1", "completion point after command %llu failed (%d); the completer "
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
		XS_ERROR("lv1", "launcher cannot use the %s HwQueue (%d); its commands will "
				"fail", q->ops->name, init);
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
		xq->pend_head = cmd->next;
		if (!xq->pend_head)
			xq->pend_tail = NULL;
		cmd->next = NULL;
		cmd->state = XS_CMD_IN_FLIGHT;
		if (xq->flight_tail)
			xq->flight_tail->next = cmd;
		else
			xq->flight_head = cmd;
		xq->flight_tail = cmd;
		xq->launched++;
		bool gated = xq->level >= kPreemptLevelDeactivate;
		bool batch_end = (int64_t)(xq->launched - xq->synced) >= xq->batch_size;
		xs_mutex_unlock(&xq->lock);

		XResult res = init != kXSchedSuccess ? init : q->ops->launch(q, cmd, gated);
		if (res != kXSchedSuccess) {
			XS_WARN("lv1", "launch of command %llu on the %s HwQueue failed (%d)",
				(unsigned long long)cmd->seq, q->ops->name, res);
			cmd->result = res; /* published to the completer by the lock below */
		}

		xs_mutex_lock(&xq->lock);
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

/* Level actions on suspend (@on) or resume (!@on) at @level. Caller holds xq->lock. */
static void xs__level_actions(xs_xqueue *xq, int level, bool suspend)
{
	xs_hwq *q = xq->hwq;
	if (suspend) {
		if (level >= kPreemptLevelDeactivate)
			q->ops->gate_close(q);
		if (level >= kPreemptLevelInterrupt && q->ops->interrupt(q) != kXSchedSuccess)
			XS_WARN("lv3", "interrupt failed; the queue stays deactivated (Lv2)");
	} else {
		if (level >= kPreemptLevelInterrupt && q->ops->restore(q) != kXSchedSuccess)
			XS_ERROR("lv3", "restore failed");
		if (level >= kPreemptLevelDeactivate)
			q->ops->gate_open(q);
	}
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
		xs__level_actions(xq, xq->level, true);
	} else {
		xq->suspended_ns += now - xq->suspended_since_ns;
		xs__level_actions(xq, xq->level, false);
		xs_cond_signal(&xq->launch_cv);
	}
}

void xs_preempt_relevel(xs_xqueue *xq, int old_level)
{
	if (xq->running || old_level == xq->level)
		return;
	xs__level_actions(xq, old_level, false);
	xs__level_actions(xq, xq->level, true);
}
