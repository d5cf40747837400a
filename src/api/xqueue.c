/* The XQueue API: create, submit, wait, suspend/resume, configuration, statistics.
 * Arguments are checked here; the engine (preempt/engine.h) does the work. */
#include "api/api.h"
#include "core/trace.h"
#include "sched/sched.h"

static bool xs__valid_level(int64_t level)
{
	return level >= kPreemptLevelBlock && level < kPreemptLevelMax;
}

/* The engine's XQueue on @q at @level, attached to its device (preempt/device.c, whose
 * threads drive the engine: they start with the device's first XQueue). */
static XResult xs__build(xs_hwq *q, int level, xs_xqueue **out)
{
	XResult res = xs_engine_create(q, level, out);
	if (res == kXSchedSuccess && (res = xs_dev_attach(*out)) != kXSchedSuccess)
		xs_obj_unref(xs_xqueue_obj(*out));
	return res;
}

/* The reverse of xs__build: drain @x (every submitted command runs), then detach it; the
 * caller drops its reference. */
static void xs__teardown(xs_xqueue *x)
{
	xs_engine_destroy(x);
	xs_dev_detach(x);
}

/* @x's state now: its counters and settings, read at once under its lock. */
static xs_xqueue_snap xs__now(xs_xqueue *x)
{
	xs_xqueue_snap s;
	xs_engine_snapshot(x, &s);
	return s;
}

/* Build, register with the scheduler, bind, publish: the handle is the last step, so no
 * other thread can reach a half-built XQueue. */
XResult XQueueCreate(XQueueHandle *xq, HwQueueHandle hwq, int64_t level, int64_t flags)
{
	xs_api_init();
	XS_CHECK(xq, kXSchedErrorInvalidValue, "api", "XQueueCreate: xq is null");
	XS_CHECK(xs__valid_level(level), kXSchedErrorInvalidValue, "api",
		 "XQueueCreate: %lld is not a preemption level (1..3)", (long long)level);
	XS_CHECK(flags == kQueueCreateFlagNone, kXSchedErrorNotSupported, "api",
		 "XQueueCreate: flags 0x%llx are not supported (only 0)",
		 (unsigned long long)flags);
	xs_obj *qobj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	XS_CHECK(qobj, kXSchedErrorNotFound, "api", "XQueueCreate: 0x%llx %s",
		 (unsigned long long)hwq, xs_handle_describe(hwq, XS_KIND_HWQUEUE));
	xs_hwq *q = xs_hwq_of(qobj);
	XResult res = kXSchedSuccess;
	xs_xqueue *x = NULL;
	if (level > q->max_level) {
		XS_FAIL(
		    "api",
		    "XQueueCreate: the %s HwQueue supports preemption levels up to %d, not %lld",
		    q->ops->name, q->max_level, (long long)level);
		res = kXSchedErrorNotSupported;
	}
	if (res == kXSchedSuccess && (res = xs__build(q, (int)level, &x)) != kXSchedSuccess)
		x = NULL;
	if (res == kXSchedSuccess) {
		res = xs_hwq_bind(q, x);
		if (res != kXSchedSuccess)
			XS_FAIL("api", "XQueueCreate: HwQueue 0x%llx %s", (unsigned long long)hwq,
				res == kXSchedErrorNotAllowed ? "already has an XQueue"
							      : "is being destroyed");
		else if ((res = xs_sched_add(x)) != kXSchedSuccess)
			xs_hwq_unbind(q);
	}
	if (res == kXSchedSuccess &&
	    (res = xs_handle_register(xs_xqueue_obj(x), 0)) != kXSchedSuccess) {
		xs_sched_remove(x);
		xs_hwq_unbind(q);
	}
	if (res != kXSchedSuccess) {
		if (x) {
			xs__teardown(x);
			xs_obj_unref(xs_xqueue_obj(x));
		}
		xs_obj_unref(qobj);
		return res;
	}
	xs_hwq_publish_xqueue(x);
	*xq = xs_xqueue_obj(x)->handle;
	xs_trace_name(*xq, (uint64_t)(uintptr_t)q->native, PRIORITY_DEFAULT, true);
	xs_obj_unref(xs_xqueue_obj(x)); /* the table holds it */
	XS_DEBUG("api", "XQueue 0x%llx created on %s HwQueue 0x%llx at level %lld",
		 (unsigned long long)*xq, q->ops->name, (unsigned long long)hwq, (long long)level);
	xs_obj_unref(qobj);
	return kXSchedSuccess;
}

XResult XQueueDestroy(XQueueHandle xq)
{
	if (!xq)
		return kXSchedSuccess;
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueDestroy");
	if (!x)
		return kXSchedErrorNotFound;
	bool own = xs_engine_in_callback(x);
	xs_obj_unref(xs_xqueue_obj(x));
	XS_CHECK(!own, kXSchedErrorNotAllowed, "api",
		 "XQueueDestroy: XQueue 0x%llx from its own launch callback would never return",
		 (unsigned long long)xq);
	xs_obj *obj = xs_handle_unregister(xq, XS_KIND_XQUEUE);
	XS_CHECK(obj, kXSchedErrorNotFound, "api", "XQueueDestroy: 0x%llx %s",
		 (unsigned long long)xq, xs_handle_describe(xq, XS_KIND_XQUEUE));
	x = xs_xqueue_of(obj);
	xs_trace_unname(xq);
	xs__teardown(x);
	xs_sched_remove(x);
	xs_hwq_unbind(xs_engine_hwq(x));
	XS_DEBUG("api", "XQueue 0x%llx destroyed after %llu commands", (unsigned long long)xq,
		 (unsigned long long)xs__now(x).completed);
	xs_obj_unref(obj);
	return kXSchedSuccess;
}

XResult XQueueSetPreemptLevel(XQueueHandle xq, int64_t level)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueSetPreemptLevel");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedSuccess;
	const xs_hwq *q = xs_engine_hwq(x);
	if (!xs__valid_level(level)) {
		XS_FAIL("api", "XQueueSetPreemptLevel: %lld is not a preemption level (1..3)",
			(long long)level);
		res = kXSchedErrorInvalidValue;
	} else if (level > q->max_level) {
		XS_FAIL("api",
			"XQueueSetPreemptLevel: the %s HwQueue supports levels up to %d, not %lld",
			q->ops->name, q->max_level, (long long)level);
		res = kXSchedErrorNotSupported;
	} else {
		xs_engine_set_level(x, (int)level);
	}
	return xs_api_done(x, res);
}

XResult XQueueGetPreemptLevel(XQueueHandle xq, int64_t *level)
{
	XS_CHECK(level, kXSchedErrorInvalidValue, "api", "XQueueGetPreemptLevel: level is null");
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueGetPreemptLevel");
	if (!x)
		return kXSchedErrorNotFound;
	*level = xs__now(x).level;
	return xs_api_done(x, kXSchedSuccess);
}

XResult XQueueSetLaunchConfig(XQueueHandle xq, int64_t threshold, int64_t batch_size)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueSetLaunchConfig");
	if (!x)
		return kXSchedErrorNotFound;
	return xs_api_done(x, xs_engine_set_launch_config(x, threshold, batch_size));
}

XResult XQueueGetLaunchConfig(XQueueHandle xq, int64_t *threshold, int64_t *batch_size)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueGetLaunchConfig");
	if (!x)
		return kXSchedErrorNotFound;
	xs_xqueue_snap s = xs__now(x);
	if (threshold)
		*threshold = s.threshold;
	if (batch_size)
		*batch_size = s.batch_size;
	return xs_api_done(x, kXSchedSuccess);
}

XResult XQueueSubmit(XQueueHandle xq, HwCommandHandle hw_cmd)
{
	xs_xqueue *x = xs_api_xqueue_borrow(xq, "XQueueSubmit");
	if (!x)
		return kXSchedErrorNotFound;
	xs_obj *cobj = xs_handle_get(hw_cmd, XS_KIND_COMMAND);
	XResult res = kXSchedErrorNotFound;
	if (!cobj)
		XS_FAIL("api", "XQueueSubmit: 0x%llx %s", (unsigned long long)hw_cmd,
			xs_handle_describe(hw_cmd, XS_KIND_COMMAND));
	else if ((res = xs_engine_submit(x, xs_cmd_of(cobj))) != kXSchedSuccess)
		xs_obj_unref(cobj); /* on success the XQueue took the lookup's reference */
	xs_api_xqueue_return(x);
	return res;
}

XResult XQueueWait(XQueueHandle xq, HwCommandHandle hw_cmd)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueWait");
	if (!x)
		return kXSchedErrorNotFound;
	xs_obj *cobj = xs_handle_get(hw_cmd, XS_KIND_COMMAND);
	XResult res = kXSchedErrorNotFound;
	if (!cobj) {
		XS_FAIL("api", "XQueueWait: 0x%llx %s", (unsigned long long)hw_cmd,
			xs_handle_describe(hw_cmd, XS_KIND_COMMAND));
	} else if (atomic_load_explicit(&xs_cmd_of(cobj)->xq, memory_order_acquire) != x) {
		XS_FAIL("api", "XQueueWait: command 0x%llx was not submitted to XQueue 0x%llx",
			(unsigned long long)hw_cmd, (unsigned long long)xq);
		res = kXSchedErrorInvalidValue;
	} else {
		res = xs_engine_wait(x, xs_cmd_of(cobj));
	}
	xs_obj_unref(cobj);
	return xs_api_done(x, res);
}

XResult XQueueWaitAll(XQueueHandle xq)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueWaitAll");
	if (!x)
		return kXSchedErrorNotFound;
	return xs_api_done(x, xs_engine_wait_all(x));
}

XResult XQueueLaunchInline(XQueueHandle xq, LaunchCallback launch, void *data)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueLaunchInline");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedErrorUnknown;
	xs_cmd *cmd = xs_cmd_new(XS_CMD_INLINE, 0);
	if (cmd) {
		cmd->u.callback.fn = launch;
		cmd->u.callback.data = data;
		cmd->owner = pthread_self();
		res = xs_engine_launch_inline(x, cmd); /* takes the creation's reference */
	}
	return xs_api_done(x, res);
}

/* A scope's or a unit's begin (@open) or end on @xq: @op is the engine's call, @fn the
 * API's name. */
static XResult xs__mark(XQueueHandle xq, XResult (*op)(xs_xqueue *, bool), bool open,
			const char *fn)
{
	xs_xqueue *x = xs_api_xqueue(xq, fn);
	if (!x)
		return kXSchedErrorNotFound;
	return xs_api_done(x, op(x, open));
}

XResult XQueueBeginScope(XQueueHandle xq)
{
	return xs__mark(xq, xs_engine_scope, true, "XQueueBeginScope");
}

XResult XQueueEndScope(XQueueHandle xq)
{
	return xs__mark(xq, xs_engine_scope, false, "XQueueEndScope");
}

XResult XQueueBeginUnit(XQueueHandle xq)
{
	return xs__mark(xq, xs_engine_unit, true, "XQueueBeginUnit");
}

XResult XQueueEndUnit(XQueueHandle xq)
{
	return xs__mark(xq, xs_engine_unit, false, "XQueueEndUnit");
}

XResult XQueueEnqueueGateCheck(XQueueHandle xq)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueEnqueueGateCheck");
	if (!x)
		return kXSchedErrorNotFound;
	return xs_api_done(x, xs_engine_gate_check(x));
}

XResult XQueueQuery(XQueueHandle xq, XQueueState *state)
{
	XS_CHECK(state, kXSchedErrorInvalidValue, "api", "XQueueQuery: state is null");
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueQuery");
	if (!x)
		return kXSchedErrorNotFound;
	xs_xqueue_snap s = xs__now(x);
	*state = s.completed == s.submitted ? kQueueStateIdle : kQueueStateReady;
	return xs_api_done(x, kXSchedSuccess);
}

XResult XQueueSuspend(XQueueHandle xq, int64_t flags)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueSuspend");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedSuccess;
	bool sync = flags & kQueueSuspendFlagSyncHwQueue;
	int level = xs__now(x).level;
	if (flags & ~(int64_t)kQueueSuspendFlagSyncHwQueue) {
		XS_FAIL("api", "XQueueSuspend: flags 0x%llx are not supported",
			(unsigned long long)flags);
		res = kXSchedErrorNotSupported;
	} else if (sync && level > kPreemptLevelBlock) {
		XS_FAIL(
		    "api",
		    "XQueueSuspend: SyncHwQueue is supported at Lv1 only (the queue is at Lv%d: "
		    "commands behind its gate would never complete)",
		    level);
		res = kXSchedErrorNotSupported;
	} else if (sync && xs_engine_in_callback(x)) {
		XS_FAIL("api", "XQueueSuspend: SyncHwQueue from the XQueue's own launch callback "
			       "would never return");
		res = kXSchedErrorNotAllowed;
	} else {
		res = xs_engine_app_suspend(x, true, sync);
	}
	return xs_api_done(x, res);
}

XResult XQueueResume(XQueueHandle xq, int64_t flags)
{
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueResume");
	if (!x)
		return kXSchedErrorNotFound;
	XResult res = kXSchedSuccess;
	if (flags != kQueueResumeFlagNone) {
		XS_FAIL("api",
			"XQueueResume: flags 0x%llx are not supported (DropCommands would lose "
			"submitted commands)",
			(unsigned long long)flags);
		res = kXSchedErrorNotSupported;
	} else {
		xs_engine_app_suspend(x, false, false);
	}
	return xs_api_done(x, res);
}

XResult XQueueGetBoard(XQueueHandle xq, XBoardInfo *info)
{
	XS_CHECK(info, kXSchedErrorInvalidValue, "api", "XQueueGetBoard: info is null");
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueGetBoard");
	if (!x)
		return kXSchedErrorNotFound;
	xs_remote_board_info(x, info);
	return xs_api_done(x, kXSchedSuccess);
}

XResult XQueueGetStats(XQueueHandle xq, XQueueStats *stats)
{
	XS_CHECK(stats, kXSchedErrorInvalidValue, "api", "XQueueGetStats: stats is null");
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueGetStats");
	if (!x)
		return kXSchedErrorNotFound;
	xs_xqueue_stats s;
	xs_engine_stats(x, &s);
	stats->submitted = s.now.submitted;
	stats->launched = s.now.launched;
	stats->completed = s.now.completed;
	stats->failed = s.now.failed;
	stats->pending = s.now.submitted - s.now.launched;
	stats->in_flight = s.now.launched - s.now.completed;
	stats->suspensions = s.suspensions;
	stats->suspended_ns = (uint64_t)s.suspended_ns;
	stats->committed = s.now.committed;
	stats->est_command_ns = (uint64_t)s.est_ns;
	const xs_objective_view *o = &s.objective;
	stats->slowdown_permille = (uint64_t)o->slow_pm;
	stats->alone_command_ns = (uint64_t)o->alone_ns;
	stats->lower_longest_ns = (uint64_t)o->lower_longest_ns;
	stats->alone_unit_ns = (uint64_t)o->alone_unit_ns;
	stats->objective_looks = o->looks;
	stats->pace_eighths = (uint64_t)o->pace;
	stats->slices = o->slices;
	stats->slice_ns = (uint64_t)o->slice_ns;
	stats->slice_over_ns = (uint64_t)o->slice_over_ns;
	stats->hw_priority = (uint64_t)s.hw_priority;
	stats->corun_budget_ns = s.corun_ns == INT64_MAX ? UINT64_MAX : (uint64_t)s.corun_ns;
	return xs_api_done(x, kXSchedSuccess);
}

XResult XQueueProfileHwCommandCount(XQueueHandle xq, int64_t *count)
{
	XS_CHECK(count, kXSchedErrorInvalidValue, "api",
		 "XQueueProfileHwCommandCount: count is null");
	xs_xqueue *x = xs_api_xqueue(xq, "XQueueProfileHwCommandCount");
	if (!x)
		return kXSchedErrorNotFound;
	*count = (int64_t)xs__now(x).submitted;
	return xs_api_done(x, kXSchedSuccess);
}
