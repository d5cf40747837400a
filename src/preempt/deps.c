/* Event dependencies between XQueues.
 *
 * A wait command at the head of an XQueue is enqueued only once its record may be
 * depended on:
 * - the record is DONE (completed), or FAILED (the wait then fails with its result), or
 * - it is LAUNCHED (enqueued and committed) on a queue of the same backend and nothing
 *   can hold it back any more, so the backend orders the wait behind it natively
 *   (cudaStreamWaitEvent; the host executor waits for the marker). A record enqueued
 *   behind a counter gate (Lv2+), or with gated commands before it, can be held back for
 *   as long as its XQueue stays suspended; one behind a host function (or a callback run
 *   on the queue) for as long as that function waits for another XQueue, which the
 *   scheduler may keep suspended. A wait enqueued behind it would then stall the waiting
 *   queue while it counts as running, and HPF would keep the producer (or the queue the
 *   producer waits for) suspended for ever. Such a record is marked needs_done, and its
 *   waiters go only once it has completed.
 * While the head wait cannot go, its XQueue is *blocked*: it is on the blocked list, the
 * scheduler treats it as not ready (so HPF lets the producer run), and at every change of
 * a record's state (and every new submitted record, which may sit behind the wait in the
 * same XQueue) the engine kicks all blocked XQueues to look again: this file says when
 * (xs_dep_advance's result) and hands them out (xs_dep_pop_blocked); it calls nobody.
 * Wake-ups coalesce; each XQueue re-checks its own head.
 *
 * Lock: xs__d.lock guards u.record.dep/needs_done/dep_result of every record and the
 * blocked list. It is a leaf: taken with at most one XQueue lock held, nothing under it.
 */
#include "core/log.h"
#include "preempt/engine_int.h"

/* The file's state, made anew in a fork child (xs_dep_forked). */
static struct xs__deps {
	xs_mutex lock;   /* the dependency lock: every record's dep fields, the blocked list */
	xs_link blocked; /* xs_xqueue.dep_link */
} xs__d = {XS_MUTEX_INITIALIZER, {&xs__d.blocked, &xs__d.blocked}};

size_t xs_dep_blocked_count(void)
{
	xs_mutex_lock(&xs__d.lock);
	size_t n = 0;
	xs_list_for_each(l, &xs__d.blocked) n++;
	xs_mutex_unlock(&xs__d.lock);
	return n;
}

xs_xqueue *xs_dep_pop_blocked(void)
{
	xs_mutex_lock(&xs__d.lock);
	xs_link *l = xs_list_pop_front(&xs__d.blocked);
	xs_xqueue *xq = l ? xs_container_of(l, xs_xqueue, dep_link) : NULL;
	if (xq)
		xs_obj_ref(&xq->obj);
	xs_mutex_unlock(&xs__d.lock);
	return xq;
}

bool xs_dep_advance(xs_cmd *record, enum xs_dep_state state, XResult res)
{
	bool changed = false;
	xs_mutex_lock(&xs__d.lock);
	if (state > record->u.record.dep) {
		record->u.record.dep = state;
		if (state == XS_DEP_FAILED)
			record->u.record.dep_result = res;
		changed = true;
	}
	xs_mutex_unlock(&xs__d.lock);
	return changed;
}

bool xs_dep_enqueued(xs_cmd *rec, bool ok, bool needs_done, XResult res)
{
	if (!ok)
		return xs_dep_advance(rec, XS_DEP_FAILED, res);
	xs_mutex_lock(&xs__d.lock);
	rec->u.record.needs_done = needs_done;
	xs_mutex_unlock(&xs__d.lock);
	return xs_dep_advance(rec, XS_DEP_LAUNCHED, kXSchedSuccess);
}

/* Whether a wait on @rec may be enqueued on a queue of backend @ops now; on a failed
 * record, also its result in *res. Caller holds xs__d.lock. */
static bool xs__may_go(const xs_cmd *rec, const xs_hal_ops *ops, XResult *res)
{
	XS_ASSERT_HELD(&xs__d.lock);
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

bool xs_dep_check(xs_xqueue *xq, xs_cmd *cmd, XResult *res)
{
	xs_cmd *rec = cmd->u.wait.record;
	*res = kXSchedSuccess;
	if (atomic_load_explicit(&rec->xq, memory_order_acquire) == xq) {
		/* Same XQueue: its state is ours to read. Enqueued before us, the queue's order
		 * is enough; still pending, it is behind us and can never run first. */
		if (rec->state == XS_CMD_PENDING) {
			XS_WARN("engine",
				"command %llu waits for an event recorded later in the same "
				"XQueue; it fails",
				(unsigned long long)cmd->seq);
			*res = kXSchedErrorInvalidValue;
			return true;
		}
		xs_mutex_lock(&xs__d.lock);
		if (rec->u.record.dep == XS_DEP_FAILED)
			*res = rec->u.record.dep_result;
		xs_mutex_unlock(&xs__d.lock);
		return true;
	}
	xs_mutex_lock(&xs__d.lock);
	bool go = xs__may_go(rec, xq->hwq->ops, res);
	/* Enlist under the same lock as the check: a change after it finds us listed. */
	if (!go && !xs_linked(&xq->dep_link))
		xs_list_push_back(&xs__d.blocked, &xq->dep_link);
	xs_mutex_unlock(&xs__d.lock);
	return go;
}

void xs_dep_unblock(xs_xqueue *xq)
{
	xs_mutex_lock(&xs__d.lock);
	if (xs_linked(&xq->dep_link))
		xs_list_remove(&xq->dep_link);
	xs_mutex_unlock(&xs__d.lock);
}

void xs_dep_forked(void)
{
	xs__d = (struct xs__deps){XS_MUTEX_INITIALIZER, {&xs__d.blocked, &xs__d.blocked}};
}
