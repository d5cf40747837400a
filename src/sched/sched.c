/* The local scheduler thread and its configuration. See sched.h for the wake-up model.
 *
 * Locks, outermost first:
 *   xs__ctl    serializes configuration: start/stop of the thread, scheduler kind, policy
 *              choice (XHintSetScheduler, XSchedShutdown, first XQueueCreate);
 *   xs__lock   guards the registered XQueue list, the policy (and its own state), the
 *              process-wide hints, the statistics and the scratch entries; a scheduling
 *              pass runs under it;
 *   xq->lock   of each XQueue, taken briefly inside a pass;
 *   xs__ev     a leaf: guards the dirty/stop flags the thread sleeps on.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>

#include "core/log.h"
#include "core/xqueue.h"
#include "sched/policy.h"
#include "sched/sched.h"

static xs_mutex xs__ctl = PTHREAD_MUTEX_INITIALIZER;
/* Under xs__ctl: */
static bool xs__configured; /* kind and policy chosen (by a call or the env) */
static bool xs__thread_running;
static pthread_t xs__thread;

static xs_mutex xs__lock = PTHREAD_MUTEX_INITIALIZER;
/* Under xs__lock: */
static xs_xqueue *xs__queues; /* linked by sched_next */
static const xs_policy_ops *xs__policy = &xs_policy_hpf;
static bool xs__active; /* a local scheduler decides (else app-managed) */
static xs_sched_entry *xs__entries;
static xs_xqueue **xs__entry_q;
static size_t xs__entries_cap;
static Timeslice xs__timeslice_us = TIMESLICE_DEFAULT; /* XHintTimeslice */
static bool xs__timeslice_given;
static size_t xs__k = 1; /* XHintKDeadline */
static xs_sched_stats xs__stats;

static xs_mutex xs__ev = PTHREAD_MUTEX_INITIALIZER;
static xs_cond xs__ev_cv;
static pthread_once_t xs__ev_once = PTHREAD_ONCE_INIT;
/* Under xs__ev: */
static bool xs__dirty, xs__stop;

static void xs__ev_init(void)
{
	xs_cond_init(&xs__ev_cv);
}

void xs_sched_notify(struct xs_xqueue *xq)
{
	(void)xq;
	pthread_once(&xs__ev_once, xs__ev_init);
	xs_mutex_lock(&xs__ev);
	if (!xs__dirty) {
		xs__dirty = true;
		xs_cond_signal(&xs__ev_cv);
	}
	xs_mutex_unlock(&xs__ev);
}

static bool xs__grow(size_t n)
{
	if (n <= xs__entries_cap)
		return true;
	size_t cap = xs__entries_cap ? xs__entries_cap * 2 : 16;
	while (cap < n)
		cap *= 2;
	xs_sched_entry *e = realloc(xs__entries, cap * sizeof(*e));
	if (!e)
		return false;
	xs__entries = e;
	xs_xqueue **q = realloc(xs__entry_q, cap * sizeof(*q));
	if (!q)
		return false;
	xs__entry_q = q;
	xs__entries_cap = cap;
	return true;
}

/* Set @xq's scheduler suspension to @suspend. Caller holds xs__lock. */
static void xs__set_suspended(xs_xqueue *xq, bool suspend)
{
	xs_mutex_lock(&xq->lock);
	if (xq->sched_suspended != suspend) {
		xq->sched_suspended = suspend;
		xs_preempt_apply(xq);
	}
	xs_mutex_unlock(&xq->lock);
}

/* One scheduling pass. Caller holds xs__lock. Returns the policy's timer (0 = none). */
static int64_t xs__pass(void)
{
	if (!xs__active)
		return 0;
	size_t n = 0;
	for (xs_xqueue *xq = xs__queues; xq; xq = xq->sched_next)
		n++;
	if (!xs__grow(n)) {
		XS_ERROR("sched", "out of memory for %zu queue entries; pass skipped", n);
		return xs_now_ns() + 1000000; /* try again in 1 ms */
	}
	size_t i = 0;
	for (xs_xqueue *xq = xs__queues; xq; xq = xq->sched_next, i++) {
		xs_sched_entry *e = &xs__entries[i];
		xs__entry_q[i] = xq;
		xs_mutex_lock(&xq->lock);
		e->id = xq->obj.handle;
		e->ready = !xs_xqueue_idle(xq) && !xq->blocked;
		e->prio = xq->prio;
		e->ready_since_ns = xq->ready_since_ns;
		e->util = xq->has_util ? xq->util : UTILIZATION_DEFAULT;
		e->deadline_us = xq->has_deadline ? xq->deadline_us : NO_DEADLINE;
		e->laxity_us = xq->has_laxity ? xq->laxity_us : NO_LAXITY;
		e->lax_prio = xq->lax_prio;
		e->crit_prio = xq->crit_prio;
		e->suspend = xq->sched_suspended;
		xs_mutex_unlock(&xq->lock);
		e->slot = &xq->policy_slot;
	}
	xs_sched_params params = {
	    .now_ns = xs_now_ns(),
	    .timeslice_us = xs__timeslice_us,
	    .timeslice_given = xs__timeslice_given,
	    .k = xs__k,
	};
	xs__stats.passes++;
	int64_t timer = xs__policy->schedule(xs__entries, n, &params);
	/* Suspend first, then resume: a moment with both running would defeat the policy. */
	for (i = 0; i < n; i++)
		if (xs__entries[i].suspend)
			xs__set_suspended(xs__entry_q[i], true);
	for (i = 0; i < n; i++)
		if (!xs__entries[i].suspend)
			xs__set_suspended(xs__entry_q[i], false);
	return timer;
}

/* Count a timer wake-up @late_ns after its deadline. Caller holds xs__lock. */
static void xs__count_timer(int64_t late_ns)
{
	static const int64_t bounds_us[XS_SCHED_LATE_BUCKETS - 1] = {
	    10, 50, 100, 200, 500, 1000, 2000,
	};
	size_t b = 0;
	while (b < XS_SCHED_LATE_BUCKETS - 1 && late_ns >= bounds_us[b] * 1000)
		b++;
	xs__stats.timer_wakeups++;
	xs__stats.late_hist[b]++;
	xs__stats.late_sum_ns += late_ns;
	if (late_ns > xs__stats.late_max_ns)
		xs__stats.late_max_ns = late_ns;
}

static void *xs__main(void *arg)
{
	(void)arg;
#ifdef PR_SET_TIMERSLACK
	/* Wake at the deadline, not up to 50 us after it (the default slack of a thread). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
	int64_t timer = 0;
	for (;;) {
		int64_t late_ns = -1;
		xs_mutex_lock(&xs__ev);
		while (!xs__dirty && !xs__stop) {
			if (!timer) {
				xs_cond_wait(&xs__ev_cv, &xs__ev);
			} else if (!xs_cond_timedwait(&xs__ev_cv, &xs__ev, timer)) {
				late_ns = xs_now_ns() - timer;
				break;
			}
		}
		bool stop = xs__stop;
		xs__dirty = false;
		xs_mutex_unlock(&xs__ev);
		if (stop)
			break;
		xs_mutex_lock(&xs__lock);
		if (late_ns >= 0)
			xs__count_timer(late_ns);
		timer = xs__pass();
		xs_mutex_unlock(&xs__lock);
	}
	return NULL;
}

/* Stop the thread and lift every scheduler suspension. Caller holds xs__ctl. */
static void xs__stop_locked(void)
{
	xs_mutex_lock(&xs__lock);
	xs__active = false;
	xs_mutex_unlock(&xs__lock);
	if (xs__thread_running) {
		xs_mutex_lock(&xs__ev);
		xs__stop = true;
		xs_cond_signal(&xs__ev_cv);
		xs_mutex_unlock(&xs__ev);
		xs_thread_join(xs__thread);
		xs__thread_running = false;
		xs_mutex_lock(&xs__ev);
		xs__stop = false;
		xs_mutex_unlock(&xs__ev);
		XS_INFO("sched", "scheduler thread stopped");
	}
	xs_mutex_lock(&xs__lock);
	for (xs_xqueue *xq = xs__queues; xq; xq = xq->sched_next)
		xs__set_suspended(xq, false);
	xs_mutex_unlock(&xs__lock);
}

/* At exit (or dlclose of the shared library) the scheduler thread is stopped and
 * joined, so it never runs while the process tears down. */
__attribute__((destructor)) static void xs__fini(void)
{
	XSchedShutdown();
}

/* Make the local scheduler run @policy. Caller holds xs__ctl. */
static XResult xs__start_locked(const xs_policy_ops *policy)
{
	pthread_once(&xs__ev_once, xs__ev_init);
	xs_mutex_lock(&xs__lock);
	if (xs__policy != policy) {
		if (xs__policy->forget)
			for (xs_xqueue *xq = xs__queues; xq; xq = xq->sched_next)
				xs__policy->forget(&xq->policy_slot);
		for (xs_xqueue *xq = xs__queues; xq; xq = xq->sched_next)
			xq->policy_slot = NULL;
		xs__policy = policy;
		if (policy->reset)
			policy->reset();
		XS_INFO("sched", "policy %s", policy->name);
	}
	xs__active = true;
	xs_mutex_unlock(&xs__lock);
	if (!xs__thread_running) {
		int err = xs_thread_start(&xs__thread, "xsched-sched", xs__main, NULL);
		if (err) {
			XS_ERROR("sched", "cannot start the scheduler thread (errno %d)", err);
			xs_mutex_lock(&xs__lock);
			xs__active = false;
			xs_mutex_unlock(&xs__lock);
			return kXSchedErrorUnknown;
		}
		xs__thread_running = true;
		XS_INFO("sched", "scheduler thread started with policy %s", policy->name);
	}
	xs__configured = true;
	xs_sched_notify(NULL);
	return kXSchedSuccess;
}

/* Configure from XSCHED_SCHEDULER / XSCHED_POLICY. Caller holds xs__ctl. */
static XResult xs__configure_from_env(void)
{
	const char *kind = getenv("XSCHED_SCHEDULER");
	const char *name = getenv("XSCHED_POLICY");
	const xs_policy_ops *policy = &xs_policy_hpf;
	if (name && *name) {
		policy = xs_policy_find_name(name);
		if (!policy) {
			XS_WARN("sched",
				"XSCHED_POLICY=%s is not a policy of this library; using HPF",
				name);
			policy = &xs_policy_hpf;
		}
	} else if (kind && !strcasecmp(kind, "APP")) {
		xs__configured = true;
		XS_INFO("sched", "application-managed scheduling (XSCHED_SCHEDULER=APP)");
		return kXSchedSuccess;
	} else if (kind && *kind && strcasecmp(kind, "LCL")) {
		XS_WARN("sched", "XSCHED_SCHEDULER=%s is not supported; using the local scheduler",
			kind);
	}
	return xs__start_locked(policy);
}

XResult xs_sched_add(struct xs_xqueue *xq)
{
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__ctl);
	if (!xs__configured)
		res = xs__configure_from_env();
	if (res == kXSchedSuccess) {
		xs_mutex_lock(&xs__lock);
		xq->sched_next = xs__queues;
		xs__queues = xq;
		xs_mutex_unlock(&xs__lock);
	}
	xs_mutex_unlock(&xs__ctl);
	if (res == kXSchedSuccess)
		xs_sched_notify(xq);
	return res;
}

void xs_sched_remove(struct xs_xqueue *xq)
{
	xs_mutex_lock(&xs__lock);
	for (xs_xqueue **p = &xs__queues; *p; p = &(*p)->sched_next) {
		if (*p == xq) {
			*p = xq->sched_next;
			break;
		}
	}
	if (xs__policy->forget)
		xs__policy->forget(&xq->policy_slot);
	xq->policy_slot = NULL;
	xs_mutex_unlock(&xs__lock);
	xs_sched_notify(xq); /* others may run now */
}

XResult XHintSetScheduler(XSchedulerType scheduler, XPolicyType policy)
{
	if (scheduler == kSchedulerGlobal) {
		XS_WARN("sched", "XHintSetScheduler: the global (cross-process) scheduler is not "
				 "supported");
		return kXSchedErrorNotSupported;
	}
	if (scheduler != kSchedulerLocal && scheduler != kSchedulerAppManaged) {
		XS_WARN("sched", "XHintSetScheduler: %d is not a scheduler type", (int)scheduler);
		return kXSchedErrorInvalidValue;
	}
	const xs_policy_ops *ops = NULL;
	if (scheduler == kSchedulerLocal) {
		if (!xs_policy_valid(policy)) {
			XS_WARN("sched",
				"XHintSetScheduler: %d is not a policy (valid: 1..%d, %d..%d)",
				(int)policy, kPolicyMax - 1, kPolicyFirstInFirstOut,
				kPolicyExtendedMax - 1);
			return kXSchedErrorInvalidValue;
		}
		ops = xs_policy_find(policy);
		if (!ops) {
			XS_WARN("sched",
				"XHintSetScheduler: policy %d is not built in this library",
				(int)policy);
			return kXSchedErrorNotSupported;
		}
	}
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__ctl);
	if (ops) {
		res = xs__start_locked(ops);
	} else {
		xs__stop_locked();
		xs__configured = true;
	}
	xs_mutex_unlock(&xs__ctl);
	return res;
}

XResult XSchedShutdown(void)
{
	xs_mutex_lock(&xs__ctl);
	xs__stop_locked();
	xs__configured = false;
	xs_mutex_lock(&xs__lock);
	if (xs__policy->reset)
		xs__policy->reset(); /* policies re-read their environment on the next start */
	xs__timeslice_us = TIMESLICE_DEFAULT;
	xs__timeslice_given = false;
	xs__k = 1;
	xs_mutex_unlock(&xs__lock);
	xs_mutex_unlock(&xs__ctl);
	return kXSchedSuccess;
}

void xs_sched_set_timeslice(Timeslice ts_us)
{
	xs_mutex_lock(&xs__lock);
	xs__timeslice_us = ts_us;
	xs__timeslice_given = true;
	xs_mutex_unlock(&xs__lock);
	xs_sched_notify(NULL);
}

void xs_sched_set_k(size_t k)
{
	xs_mutex_lock(&xs__lock);
	xs__k = k;
	xs_mutex_unlock(&xs__lock);
	xs_sched_notify(NULL);
}

void xs_sched_get_stats(xs_sched_stats *out)
{
	xs_mutex_lock(&xs__lock);
	*out = xs__stats;
	xs_mutex_unlock(&xs__lock);
}

XPolicyType xs_sched_current_policy(void)
{
	xs_mutex_lock(&xs__lock);
	XPolicyType t = xs__active ? xs__policy->type : kPolicyUnknown;
	xs_mutex_unlock(&xs__lock);
	return t;
}
