/* The XQueue API: create, submit, wait, suspend/resume, configuration, statistics. */
#include <stdlib.h>

#include "core/log.h"
#include "core/xqueue.h"
#include "sched/sched.h"

static void xs__xqueue_free(xs_obj *obj)
{
	xs_xqueue *xq = xs_xqueue_of(obj);
	xs_cond_destroy(&xq->done_cv);
	xs_cond_destroy(&xq->complete_cv);
	xs_cond_destroy(&xq->launch_cv);
	xs_mutex_destroy(&xq->lock);
	xs_obj_unref(&xq->hwq->obj);
	free(xq);
}

/* Look up a live XQueue for API call @fn; logs and returns NULL if there is none. */
static xs_xqueue *xs__get(XQueueHandle h, const char *fn)
{
	xs_obj *obj = xs_handle_get(h, XS_KIND_XQUEUE);
	if (!obj) {
		XS_WARN("core", "%s: 0x%llx is not a live XQueue", fn, (unsigned long long)h);
		return NULL;
	}
	return xs_xqueue_of(obj);
}

static bool xs__valid_level(int64_t level)
{
	return level >= kPreemptLevelBlock && level < kPreemptLevelMax;
}

XResult XQueueCreate(XQueueHandle *xq, HwQueueHandle hwq, int64_t level, int64_t flags)
{
	if (!xq) {
		XS_WARN("core", "XQueueCreate: xq is null");
		return kXSchedErrorInvalidValue;
	}
	if (!xs__valid_level(level)) {
		XS_WARN("core", "XQueueCreate: %lld is not a preemption level (1..3)",
			(long long)level);
		return kXSchedErrorInvalidValue;
	}
	if (flags != kQueueCreateFlagNone) {
		XS_WARN("core", "XQueueCreate: flags 0x%llx are not supported (only 0)",
			(unsigned long long)flags);
		return kXSchedErrorNotSupported;
	}
	xs_obj *qobj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	if (!qobj) {
		XS_WARN("core", "XQueueCreate: 0x%llx is not a live HwQueue",
			(unsigned long long)hwq);
		return kXSchedErrorNotFound;
	}
	xs_hwq *q = xs_hwq_of(qobj);
	if (level > q->max_level) {
		XS_WARN("core",
			"XQueueCreate: the %s HwQueue supports preemption levels up to %d, "
			"not %lld",
			q->ops->name, q->max_level, (long long)level);
		xs_obj_unref(qobj);
		return kXSchedErrorNotSupported;
	}
	xs_xqueue *x = calloc(1, sizeof(*x));
	if (!x) {
		xs_obj_unref(qobj);
		return kXSchedErrorUnknown;
	}
	xs_obj_init(&x->obj, XS_KIND_XQUEUE, xs__xqueue_free);
	x->hwq = q; /* takes over the lookup's reference */
	xs_mutex_init(&x->lock);
	xs_cond_init(&x->launch_cv);
	xs_cond_init(&x->complete_cv);
	xs_cond_init(&x->done_cv);
	x->threshold = XSCHED_DEFAULT_THRESHOLD;
	x->batch_size = XSCHED_DEFAULT_BATCH_SIZE;
	x->level = (int)level;
	x->running = true;
	x->prio = PRIORITY_DEFAULT;
	x->err_pending = kXSchedSuccess;

	XResult res = xs_hwq_bind(q, x);
	if (res != kXSchedSuccess) {
		XS_WARN("core", "XQueueCreate: HwQueue 0x%llx %s", (unsigned long long)hwq,
			res == kXSchedErrorNotAllowed ? "already has an XQueue"
						      : "is being destroyed");
		xs_obj_unref(&x->obj);
		return res;
	}
	int err = xs_launch_start(x);
	if (err) {
		XS_ERROR("core", "XQueueCreate: cannot start the XQueue's threads (errno %d)", err);
		xs_hwq_unbind(q);
		xs_obj_unref(&x->obj);
		return kXSchedErrorUnknown;
	}
	res = xs_handle_register(&x->obj, 0);
	if (res == kXSchedSuccess)
		res = xs_sched_add(x);
	if (res != kXSchedSuccess) {
		xs_obj_unref(xs_handle_unregister(x->obj.handle, XS_KIND_XQUEUE));
		xs_launch_stop(x);
		xs_hwq_unbind(q);
		xs_obj_unref(&x->obj);
		return res;
	}
	*xq = x->obj.handle;
	xs_obj_unref(&x->obj); /* the table holds it */
	XS_DEBUG("core", "XQueue 0x%llx created on %s HwQueue 0x%llx at level %lld",
		 (unsigned long long)*xq, q->ops->name, (unsigned long long)hwq, (long long)level);
	return kXSchedSuccess;
}

XResult XQueueDestroy(XQueueHandle xq)
{
	if (!xq)
		return kXSchedSuccess;
	xs_obj *obj = xs_handle_unregister(xq, XS_KIND_XQUEUE);
	if (!obj) {
		XS_WARN("core", "XQueueDestroy: 0x%llx is not a live XQueue",
			(unsigned long long)xq);
		return kXSchedErrorNotFound;
	}
	xs_xqueue *x = xs_xqueue_of(obj);
	/* Drain: from here on nothing new is accepted and suspensions are ignored. */
	xs_mutex_lock(&x->lock);
	x->closing = true;
	xs_preempt_apply(x);
	xs_cond_signal(&x->launch_cv);
	while (!xs_xqueue_idle(x))
		xs_cond_wait(&x->done_cv, &x->lock);
	xs_mutex_unlock(&x->lock);
	xs_launch_stop(x);
	xs_sched_remove(x);
	xs_hwq_unbind(x->hwq);
	XS_DEBUG("core", "XQueue 0x%llx destroyed after %llu commands", (unsigned long long)xq,
		 (unsigned long long)x->completed);
	xs_obj_unref(obj);
	return kXSchedSuccess;
}

XResult XQueueSetPreemptLevel(XQueueHandle xq, int64_t level)
{
	xs_xqueue *x = xs__get(xq, "XQueueSetPreemptLevel");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedSuccess;
	if (!xs__valid_level(level)) {
		XS_WARN("core", "XQueueSetPreemptLevel: %lld is not a preemption level (1..3)",
			(long long)level);
		res = kXSchedErrorInvalidValue;
	} else if (level > x->hwq->max_level) {
		XS_WARN("core",
			"XQueueSetPreemptLevel: the %s HwQueue supports levels up to %d, "
			"not %lld",
			x->hwq->ops->name, x->hwq->max_level, (long long)level);
		res = kXSchedErrorNotSupported;
	} else {
		xs_mutex_lock(&x->lock);
		int old = x->level;
		x->level = (int)level;
		xs_preempt_relevel(x, old);
		xs_mutex_unlock(&x->lock);
	}
	xs_obj_unref(&x->obj);
	return res;
}

XResult XQueueGetPreemptLevel(XQueueHandle xq, int64_t *level)
{
	if (!level) {
		XS_WARN("core", "XQueueGetPreemptLevel: level is null");
		return kXSchedErrorInvalidValue;
	}
	xs_xqueue *x = xs__get(xq, "XQueueGetPreemptLevel");
	if (!x)
		return kXSchedErrorNotFound;
	xs_mutex_lock(&x->lock);
	*level = x->level;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return kXSchedSuccess;
}

XResult XQueueSetLaunchConfig(XQueueHandle xq, int64_t threshold, int64_t batch_size)
{
	xs_xqueue *x = xs__get(xq, "XQueueSetLaunchConfig");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&x->lock);
	int64_t t = threshold > 0 ? threshold : x->threshold;
	int64_t b = batch_size > 0 ? batch_size : x->batch_size;
	if (t < b) {
		XS_WARN("core", "XQueueSetLaunchConfig: threshold %lld is below batch size %lld",
			(long long)t, (long long)b);
		res = kXSchedErrorInvalidValue;
	} else {
		x->threshold = t;
		x->batch_size = b;
		xs_cond_signal(&x->launch_cv); /* a larger window may allow launches now */
	}
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return res;
}

XResult XQueueGetLaunchConfig(XQueueHandle xq, int64_t *threshold, int64_t *batch_size)
{
	xs_xqueue *x = xs__get(xq, "XQueueGetLaunchConfig");
	if (!x)
		return kXSchedErrorNotFound;
	xs_mutex_lock(&x->lock);
	if (threshold)
		*threshold = x->threshold;
	if (batch_size)
		*batch_size = x->batch_size;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return kXSchedSuccess;
}

XResult XQueueSubmit(XQueueHandle xq, HwCommandHandle hw_cmd)
{
	xs_xqueue *x = xs__get(xq, "XQueueSubmit");
	if (!x)
		return kXSchedErrorNotFound;
	xs_obj *cobj = xs_handle_get(hw_cmd, XS_KIND_COMMAND);
	if (!cobj) {
		XS_WARN("core", "XQueueSubmit: 0x%llx is not a live command",
			(unsigned long long)hw_cmd);
		xs_obj_unref(&x->obj);
		return kXSchedErrorNotFound;
	}
	xs_cmd *cmd = xs_cmd_of(cobj);
	XResult res = kXSchedSuccess;
	struct xs_xqueue *none = NULL;
	xs_mutex_lock(&x->lock);
	if (x->closing) {
		XS_WARN("core", "XQueueSubmit: XQueue 0x%llx is being destroyed",
			(unsigned long long)xq);
		res = kXSchedErrorNotFound;
	} else if (!x->hwq->ops->supports(x->hwq, cmd->kind)) {
		XS_WARN("core", "XQueueSubmit: the %s HwQueue cannot run this kind of command",
			x->hwq->ops->name);
		res = kXSchedErrorNotSupported;
	} else if (!atomic_compare_exchange_strong_explicit(
		       &cmd->xq, &none, x, memory_order_acq_rel, memory_order_acquire)) {
		XS_WARN("core", "XQueueSubmit: command 0x%llx was already submitted",
			(unsigned long long)hw_cmd);
		res = kXSchedErrorNotAllowed;
	}
	if (res != kXSchedSuccess) {
		xs_mutex_unlock(&x->lock);
		xs_obj_unref(cobj);
		xs_obj_unref(&x->obj);
		return res;
	}
	bool was_idle = xs_xqueue_idle(x);
	cmd->seq = ++x->submitted;
	cmd->state = XS_CMD_PENDING;
	if (x->pend_tail)
		x->pend_tail->next = cmd;
	else
		x->pend_head = cmd;
	x->pend_tail = cmd; /* the lookup's reference becomes the XQueue's */
	if (cmd->kind == XS_CMD_EVENT_RECORD)
		xs_dep_submitted(); /* a wait on it may be blocked in this XQueue */
	if (x->running)
		xs_cond_signal(&x->launch_cv);
	if (was_idle) {
		x->ready_since_ns = xs_now_ns();
		xs_sched_notify(x);
	}
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return kXSchedSuccess;
}

XResult XQueueWait(XQueueHandle xq, HwCommandHandle hw_cmd)
{
	xs_xqueue *x = xs__get(xq, "XQueueWait");
	if (!x)
		return kXSchedErrorNotFound;
	xs_obj *cobj = xs_handle_get(hw_cmd, XS_KIND_COMMAND);
	if (!cobj) {
		XS_WARN("core", "XQueueWait: 0x%llx is not a live command",
			(unsigned long long)hw_cmd);
		xs_obj_unref(&x->obj);
		return kXSchedErrorNotFound;
	}
	xs_cmd *cmd = xs_cmd_of(cobj);
	XResult res;
	if (atomic_load_explicit(&cmd->xq, memory_order_acquire) != x) {
		XS_WARN("core", "XQueueWait: command 0x%llx was not submitted to XQueue 0x%llx",
			(unsigned long long)hw_cmd, (unsigned long long)xq);
		res = kXSchedErrorInvalidValue;
	} else {
		xs_mutex_lock(&x->lock);
		while (cmd->state != XS_CMD_DONE)
			xs_cond_wait(&x->done_cv, &x->lock);
		res = cmd->result;
		xs_mutex_unlock(&x->lock);
	}
	xs_obj_unref(cobj);
	xs_obj_unref(&x->obj);
	return res;
}

XResult XQueueWaitAll(XQueueHandle xq)
{
	xs_xqueue *x = xs__get(xq, "XQueueWaitAll");
	if (!x)
		return kXSchedErrorNotFound;
	xs_mutex_lock(&x->lock);
	uint64_t target = x->submitted;
	while (x->completed < target)
		xs_cond_wait(&x->done_cv, &x->lock);
	XResult res = x->err_pending;
	x->err_pending = kXSchedSuccess;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return res;
}

XResult XQueueQuery(XQueueHandle xq, XQueueState *state)
{
	if (!state) {
		XS_WARN("core", "XQueueQuery: state is null");
		return kXSchedErrorInvalidValue;
	}
	xs_xqueue *x = xs__get(xq, "XQueueQuery");
	if (!x)
		return kXSchedErrorNotFound;
	xs_mutex_lock(&x->lock);
	*state = xs_xqueue_idle(x) ? kQueueStateIdle : kQueueStateReady;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return kXSchedSuccess;
}

XResult XQueueSuspend(XQueueHandle xq, int64_t flags)
{
	xs_xqueue *x = xs__get(xq, "XQueueSuspend");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&x->lock);
	if (flags & ~(int64_t)kQueueSuspendFlagSyncHwQueue) {
		XS_WARN("core", "XQueueSuspend: flags 0x%llx are not supported",
			(unsigned long long)flags);
		res = kXSchedErrorNotSupported;
	} else if ((flags & kQueueSuspendFlagSyncHwQueue) && x->level > kPreemptLevelBlock) {
		XS_WARN("core",
			"XQueueSuspend: SyncHwQueue is supported at Lv1 only (the queue "
			"is at Lv%d: commands behind its gate would never complete)",
			x->level);
		res = kXSchedErrorNotSupported;
	} else {
		x->app_suspended = true;
		xs_preempt_apply(x);
		if (flags & kQueueSuspendFlagSyncHwQueue)
			while (x->launched != x->completed && !x->closing)
				xs_cond_wait(&x->done_cv, &x->lock);
	}
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return res;
}

XResult XQueueResume(XQueueHandle xq, int64_t flags)
{
	xs_xqueue *x = xs__get(xq, "XQueueResume");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedSuccess;
	if (flags != kQueueResumeFlagNone) {
		XS_WARN("core",
			"XQueueResume: flags 0x%llx are not supported (DropCommands would "
			"lose submitted commands)",
			(unsigned long long)flags);
		res = kXSchedErrorNotSupported;
	} else {
		xs_mutex_lock(&x->lock);
		x->app_suspended = false;
		xs_preempt_apply(x);
		xs_mutex_unlock(&x->lock);
	}
	xs_obj_unref(&x->obj);
	return res;
}

XResult XQueueGetStats(XQueueHandle xq, XQueueStats *stats)
{
	if (!stats) {
		XS_WARN("core", "XQueueGetStats: stats is null");
		return kXSchedErrorInvalidValue;
	}
	xs_xqueue *x = xs__get(xq, "XQueueGetStats");
	if (!x)
		return kXSchedErrorNotFound;
	xs_mutex_lock(&x->lock);
	stats->submitted = x->submitted;
	stats->launched = x->launched;
	stats->completed = x->completed;
	stats->failed = x->failed;
	stats->pending = x->submitted - x->launched;
	stats->in_flight = x->launched - x->completed;
	stats->suspensions = x->suspensions;
	int64_t ns = x->suspended_ns;
	if (!x->running)
		ns += xs_now_ns() - x->suspended_since_ns;
	stats->suspended_ns = (uint64_t)ns;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return kXSchedSuccess;
}

XResult XQueueProfileHwCommandCount(XQueueHandle xq, int64_t *count)
{
	if (!count) {
		XS_WARN("core", "XQueueProfileHwCommandCount: count is null");
		return kXSchedErrorInvalidValue;
	}
	xs_xqueue *x = xs__get(xq, "XQueueProfileHwCommandCount");
	if (!x)
		return kXSchedErrorNotFound;
	xs_mutex_lock(&x->lock);
	*count = (int64_t)x->submitted;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(&x->obj);
	return kXSchedSuccess;
}
