/* The XHint* calls: check the value, store it with the scheduler (sched/sched.c, under its
 * lock) and ask for a pass. Policies read the values from the snapshot of their next
 * pass; XHintPriority runs that pass itself, so that the priority is in force when it
 * returns (a command submitted next is held as it says). */
#include "api/api.h"
#include "core/thread.h"
#include "core/trace.h"
#include "sched/sched.h"

/* Serializes the read-modify-write of one queue's hints between concurrent XHint* calls.
 * Outermost: under it, xs_sched_get_hints() and xs_sched_set_hints() each take and
 * release the scheduler's lock (sched/sched.c); no other lock is held when it is taken.
 * Kept loose: the module's only state (the hints it guards are the scheduler's). */
static xs_mutex xs__hint_lock = XS_MUTEX_INITIALIZER;

static bool xs__prio_ok(Priority prio)
{
	return prio >= PRIORITY_MIN && prio <= PRIORITY_MAX;
}

void xs_api_hints_forked(void)
{
	xs_mutex_init(&xs__hint_lock);
}

/* A change to @x's hints begins: *@h holds them, under xs__hint_lock until xs__hint_end. */
static void xs__hint_begin(xs_xqueue *x, xs_sched_hints *h)
{
	xs_mutex_lock(&xs__hint_lock);
	xs_sched_get_hints(x, h);
}

/* ... and ends: @h stored (in force when this returns where @now, else at the next pass)
 * and the lock released. */
static void xs__hint_end(xs_xqueue *x, const xs_sched_hints *h, bool now)
{
	xs_sched_set_hints(x, h, now);
	xs_mutex_unlock(&xs__hint_lock);
}

XResult XHintPriority(XQueueHandle xq, Priority prio)
{
	XS_CHECK(xs__prio_ok(prio) || prio == PRIORITY_NO_EXECUTE, kXSchedErrorInvalidValue, "api",
		 "XHintPriority: %d is outside [%d, %d] and not PRIORITY_NO_EXECUTE", (int)prio,
		 PRIORITY_MIN, PRIORITY_MAX);
	xs_xqueue *x = xs_api_xqueue(xq, "XHintPriority");
	if (!x)
		return kXSchedErrorNotFound;
	xs_sched_hints h;
	xs__hint_begin(x, &h);
	h.prio = prio;
	xs__hint_end(x, &h, true); /* in force when the call returns */
	XS_TRACE(XS_TR_PRIORITY, xq, 0, prio);
	xs_trace_name(xq, (uint64_t)(uintptr_t)xs_engine_hwq(x)->native, prio,
		      false); /* renames it */
	return xs_api_done(x, kXSchedSuccess);
}

XResult XHintUtilization(XQueueHandle xq, Utilization util)
{
	XS_CHECK(util >= UTILIZATION_MIN && util <= UTILIZATION_MAX, kXSchedErrorInvalidValue,
		 "api", "XHintUtilization: %d is outside [%d, %d] (percent)", (int)util,
		 UTILIZATION_MIN, UTILIZATION_MAX);
	xs_xqueue *x = xs_api_xqueue(xq, "XHintUtilization");
	if (!x)
		return kXSchedErrorNotFound;
	xs_sched_hints h;
	xs__hint_begin(x, &h);
	h.util = util;
	h.has_util = true;
	xs__hint_end(x, &h, false);
	return xs_api_done(x, kXSchedSuccess);
}

XResult XHintTimeslice(Timeslice ts_us)
{
	XS_CHECK(ts_us >= TIMESLICE_MIN && ts_us <= TIMESLICE_MAX, kXSchedErrorInvalidValue, "api",
		 "XHintTimeslice: %lld us is outside [%d, %d] us", (long long)ts_us, TIMESLICE_MIN,
		 TIMESLICE_MAX);
	xs_sched_set_timeslice(ts_us);
	return kXSchedSuccess;
}

XResult XHintLaxity(XQueueHandle xq, Laxity lax_us, Priority lax_prio, Priority crit_prio)
{
	XS_CHECK(lax_us >= 0 || lax_us == NO_LAXITY, kXSchedErrorInvalidValue, "api",
		 "XHintLaxity: laxity %lld us is negative (NO_LAXITY is %d)", (long long)lax_us,
		 NO_LAXITY);
	XS_CHECK(xs__prio_ok(lax_prio) && xs__prio_ok(crit_prio), kXSchedErrorInvalidValue, "api",
		 "XHintLaxity: priorities %d and %d must lie in [%d, %d]", (int)lax_prio,
		 (int)crit_prio, PRIORITY_MIN, PRIORITY_MAX);
	xs_xqueue *x = xs_api_xqueue(xq, "XHintLaxity");
	if (!x)
		return kXSchedErrorNotFound;
	xs_sched_hints h;
	xs__hint_begin(x, &h);
	h.has_laxity = lax_us != NO_LAXITY;
	h.laxity_us = h.has_laxity ? lax_us : 0;
	h.lax_prio = lax_prio;
	h.crit_prio = crit_prio;
	xs__hint_end(x, &h, false);
	return xs_api_done(x, kXSchedSuccess);
}

XResult XHintDeadline(XQueueHandle xq, Deadline ddl_us)
{
	XS_CHECK(ddl_us >= 0 || ddl_us == NO_DEADLINE, kXSchedErrorInvalidValue, "api",
		 "XHintDeadline: deadline %lld us is negative (NO_DEADLINE is %d)",
		 (long long)ddl_us, NO_DEADLINE);
	xs_xqueue *x = xs_api_xqueue(xq, "XHintDeadline");
	if (!x)
		return kXSchedErrorNotFound;
	xs_sched_hints h;
	xs__hint_begin(x, &h);
	h.has_deadline = ddl_us != NO_DEADLINE;
	h.deadline_us = h.has_deadline ? ddl_us : 0;
	xs__hint_end(x, &h, false);
	return xs_api_done(x, kXSchedSuccess);
}

XResult XHintKDeadline(size_t k)
{
	XS_CHECK(k >= 1, kXSchedErrorInvalidValue, "api", "XHintKDeadline: k must be at least 1");
	xs_sched_set_k(k);
	return kXSchedSuccess;
}

XResult XHintLatencyObjective(XQueueHandle xq, double max_slowdown)
{
	/* Written so that NaN fails the check. */
	XS_CHECK(max_slowdown == 0.0 || (max_slowdown >= 1.0 && max_slowdown <= 1000.0),
		 kXSchedErrorInvalidValue, "api",
		 "XHintLatencyObjective: %g is not a slowdown in [1.0, 1000.0] nor 0 (clear)",
		 max_slowdown);
	xs_xqueue *x = xs_api_xqueue(xq, "XHintLatencyObjective");
	if (!x)
		return kXSchedErrorNotFound;
	xs_engine_set_objective(x, (int64_t)(max_slowdown * 1000.0 + 0.5));
	return xs_api_done(x, kXSchedSuccess);
}
