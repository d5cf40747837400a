/* Lv3 glue over the CWSR backend: probe at attach, degrade on failure, never leave a
 * queue suspended. See lv3.h for who calls what, the locking and the costs. */
#include "preempt/lv3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/thread.h"
#include "hal/hal.h"
#include "preempt/cwsr.h"
#include "preempt/testing.h"

#define TOPIC "lv3"

/* Room for the backend's reasons, folded into one line. */
#define WHY_LEN 400

/* Up to this many queues per batch without a heap allocation. */
#define STACK_BATCH 16

struct xs_lv3 {
	/* Guarded by xs__lv3_lock: */
	xs_cwsr_queue *q; /* the attachment; NULL once a degraded queue was released */
	bool degraded;    /* a suspend or resume failed: Lv3 acts as Lv2 */
	/* Read-only after attach: */
	uint32_t queue_id;
	int fallback_level;
	char name[64];
};

/* Guards q and degraded of every xs_lv3, and is held across the cwsr calls made for
 * them, so that a queue's KFD state and its flags change together. Every cwsr call is
 * serialised by the cwsr lock anyway, so one lock for all queues costs no concurrency.
 * Taken inside xq->lock; takes the cwsr lock inside. Kept loose: it is the module's only
 * state (what it guards lives in each xs_lv3), so no state struct holds it. */
static xs_mutex xs__lv3_lock = XS_MUTEX_INITIALIZER;

static const char *xs__result_name(XResult r)
{
	switch (r) {
	case kXSchedErrorInvalidValue:
		return "invalid value";
	case kXSchedErrorNotFound:
		return "queue not found";
	case kXSchedErrorNotAllowed:
		return "queue already in use";
	case kXSchedErrorNotSupported:
		return "not supported";
	case kXSchedErrorHardware:
		return "KFD error";
	default:
		return "error";
	}
}

/* @why without cwsr.c's "Lv3 unavailable: " prefix (the line says so already), or a
 * description of @r when the backend gave no reason. */
static const char *xs__reason(const char *why, XResult r)
{
	static const char prefix[] = "Lv3 unavailable: ";

	if (!why[0])
		return xs__result_name(r);
	if (!strncmp(why, prefix, sizeof(prefix) - 1))
		return why + sizeof(prefix) - 1;
	return why;
}

/* Retry the resume that a failure left behind, and release the KFD queue once nothing
 * of it is suspended. Quiet: the one line about the failure was logged already.
 * Caller holds xs__lv3_lock; @l is degraded. */
static void xs__settle_locked(xs_lv3 *l)
{
	XS_ASSERT_HELD(&xs__lv3_lock);
	char why[WHY_LEN];
	XResult r = kXSchedSuccess;

	if (!l->q)
		return;
	xs_cwsr_log_capture(why, sizeof(why));
	if (xs_cwsr_is_suspended(l->q))
		r = xs_cwsr_resume(l->q);
	if (r == kXSchedSuccess) {
		xs_cwsr_detach(l->q);
		l->q = NULL;
	}
	xs_cwsr_log_capture(NULL, 0);
	if (r == kXSchedSuccess)
		XS_DEBUG(TOPIC, "%s: released KFD queue %u (Lv3 off)%s%s", l->name, l->queue_id,
			 why[0] ? ": " : "", why);
	else
		XS_DEBUG(TOPIC, "%s: KFD queue %u is still suspended: %s", l->name, l->queue_id,
			 why);
}

/* Mark @l degraded after @what failed for @why, undo what can be undone, and log the
 * one line. Caller holds xs__lv3_lock. */
static void xs__degrade_locked(xs_lv3 *l, const char *what, const char *why)
{
	XS_ASSERT_HELD(&xs__lv3_lock);
	l->degraded = true;
	xs__settle_locked(l);
	if (!l->q)
		XS_WARN(TOPIC,
			"%s: Lv3 %s failed (%s); the queue falls back to Lv%d from now on, "
			"nothing of it is left suspended",
			l->name, what, why, l->fallback_level);
	else
		XS_ERROR(TOPIC,
			 "%s: Lv3 %s failed (%s); the queue falls back to Lv%d from now on; "
			 "KFD queue %u stays suspended until a retry succeeds (at the next "
			 "suspend or resume, at the latest before the queue is destroyed)",
			 l->name, what, why, l->fallback_level, l->queue_id);
}

XResult xs_lv3_attach(xs_lv3 **out, uint64_t ring_base_address, int fallback_level,
		      const char *name)
{
	char why[WHY_LEN];
	xs_cwsr_queue *q = NULL;
	xs_lv3 *l;
	XResult res;

	if (!name)
		name = "HwQueue";
	if (!out) {
		XS_WARN(TOPIC, "%s: Lv3 attach: out is null", name);
		return kXSchedErrorInvalidValue;
	}
	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l) {
		XS_ERROR(TOPIC, "%s: out of memory; the queue falls back to Lv%d", name,
			 fallback_level);
		return kXSchedErrorUnknown;
	}
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->fallback_level = fallback_level;

	xs_cwsr_log_capture(why, sizeof(why));
	res = xs_cwsr_attach(&q, ring_base_address);
	if (res == kXSchedSuccess) {
		/* The trial: -EPERM, firmware refusals and hardware errors show only here. */
		res = xs_cwsr_suspend(q);
		if (res == kXSchedSuccess)
			res = xs_cwsr_resume(q);
		if (res != kXSchedSuccess) {
			xs_cwsr_detach(q); /* resumes it first if the resume failed */
			q = NULL;
		}
	}
	xs_cwsr_log_capture(NULL, 0);
	if (res != kXSchedSuccess) {
		XS_WARN(TOPIC, "%s: Lv3 unavailable (%s); the queue falls back to Lv%d", l->name,
			xs__reason(why, res), fallback_level);
		free(l);
		return res;
	}
	l->q = q;
	l->queue_id = xs_cwsr_queue_id(q);
	XS_INFO(TOPIC, "%s: Lv3 ready on KFD queue %u (ring 0x%llx)", l->name, l->queue_id,
		(unsigned long long)ring_base_address);
	*out = l;
	return kXSchedSuccess;
}

/* Suspend one queue, degrading it on failure. Caller holds xs__lv3_lock. */
static bool xs__interrupt_locked(xs_lv3 *l)
{
	XS_ASSERT_HELD(&xs__lv3_lock);
	char why[WHY_LEN];
	XResult r;

	if (l->degraded) {
		xs__settle_locked(l);
		return false;
	}
	xs_cwsr_log_capture(why, sizeof(why));
	r = xs_cwsr_suspend(l->q);
	xs_cwsr_log_capture(NULL, 0);
	if (r == kXSchedSuccess)
		return true;
	xs__degrade_locked(l, "interrupt", xs__reason(why, r));
	return false;
}

bool xs_lv3_interrupt(xs_lv3 *l)
{
	bool ok;

	if (!l)
		return false;
	xs_mutex_lock(&xs__lv3_lock);
	ok = xs__interrupt_locked(l);
	xs_mutex_unlock(&xs__lv3_lock);
	return ok;
}

size_t xs_lv3_interrupt_many(xs_lv3 *const *ls, size_t n, bool *suspended)
{
	xs_cwsr_queue *stack_qs[STACK_BATCH], **qs = stack_qs;
	char why[WHY_LEN];
	size_t i, j, k = 0, done = 0;
	XResult r = kXSchedErrorUnknown;

	if (!ls || n == 0)
		return 0;
	if (n > STACK_BATCH)
		qs = malloc(n * sizeof(*qs)); /* NULL: every queue is tried alone below */
	xs_mutex_lock(&xs__lv3_lock);
	for (i = 0; i < n; i++) {
		if (suspended)
			suspended[i] = false;
		if (!ls[i] || ls[i]->degraded)
			continue;
		for (j = 0; j < i && ls[j] != ls[i]; j++)
			;
		if (j == i && qs)
			qs[k++] = ls[i]->q;
	}
	if (k > 0) {
		xs_cwsr_log_capture(why, sizeof(why));
		r = xs_cwsr_suspend_many(qs, k);
		xs_cwsr_log_capture(NULL, 0);
		if (r != kXSchedSuccess)
			XS_DEBUG(TOPIC,
				 "batch suspend of %zu queue(s) failed (%s); trying each alone", k,
				 why);
	}
	for (i = 0; i < n; i++) {
		bool s;

		if (!ls[i])
			continue;
		if (r == kXSchedSuccess && !ls[i]->degraded)
			s = true; /* in the batch (duplicates included) */
		else
			s = xs__interrupt_locked(ls[i]);
		if (suspended)
			suspended[i] = s;
		done += s;
	}
	xs_mutex_unlock(&xs__lv3_lock);
	if (qs != stack_qs)
		free(qs);
	return done;
}

XResult xs_lv3_restore(xs_lv3 *l)
{
	char why[WHY_LEN];
	XResult r;

	if (!l)
		return kXSchedSuccess;
	xs_mutex_lock(&xs__lv3_lock);
	if (l->degraded) {
		xs__settle_locked(l);
		r = l->q ? kXSchedErrorHardware : kXSchedSuccess;
		xs_mutex_unlock(&xs__lv3_lock);
		return r;
	}
	xs_cwsr_log_capture(why, sizeof(why));
	r = xs_cwsr_resume(l->q);
	xs_cwsr_log_capture(NULL, 0);
	if (r != kXSchedSuccess) {
		xs__degrade_locked(l, "restore", xs__reason(why, r));
		r = l->q ? kXSchedErrorHardware : kXSchedSuccess;
	}
	xs_mutex_unlock(&xs__lv3_lock);
	return r;
}

void xs_lv3_detach(xs_lv3 *l)
{
	char why[WHY_LEN];

	if (!l)
		return;
	xs_mutex_lock(&xs__lv3_lock);
	if (l->q) {
		xs_cwsr_log_capture(why, sizeof(why));
		xs_cwsr_detach(l->q);
		xs_cwsr_log_capture(NULL, 0);
		l->q = NULL;
		if (why[0])
			XS_ERROR(TOPIC, "%s: detach from KFD queue %u: %s", l->name, l->queue_id,
				 why);
		else
			XS_DEBUG(TOPIC, "%s: detached from KFD queue %u", l->name, l->queue_id);
	}
	xs_mutex_unlock(&xs__lv3_lock);
	free(l);
}

bool xs_lv3_degraded(const xs_lv3 *l)
{
	bool d;

	if (!l)
		return false;
	xs_mutex_lock(&xs__lv3_lock);
	d = l->degraded;
	xs_mutex_unlock(&xs__lv3_lock);
	return d;
}

uint32_t xs_lv3_queue_id(const xs_lv3 *l)
{
	return l ? l->queue_id : 0;
}

/* ---- HwQueues ---- */

void xs_lv3_probe_hwq(xs_hwq *q)
{
	uint64_t ring = 0;
	if (q->max_level != kPreemptLevelDeactivate || !q->ops->ring_base || q->lv3 ||
	    q->ops->ring_base(q, &ring) != kXSchedSuccess)
		return;
	char name[48];
	snprintf(name, sizeof(name), "%s stream %p", q->ops->name, q->native);
	if (xs_lv3_attach(&q->lv3, ring, q->max_level, name) == kXSchedSuccess)
		q->max_level = kPreemptLevelInterrupt;
}

XResult xs_host_queue_enable_lv3(HwQueueHandle hwq, uint64_t ring_base_address)
{
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	XS_CHECK(obj, kXSchedErrorNotFound, TOPIC, "enable Lv3: 0x%llx %s", (unsigned long long)hwq,
		 xs_handle_describe(hwq, XS_KIND_HWQUEUE));
	xs_hwq *q = xs_hwq_of(obj);
	XResult res = kXSchedSuccess;
	if (!xs_hwq_is_host(q)) {
		XS_WARN(TOPIC, "enable Lv3: HwQueue 0x%llx is a %s queue, not a host queue",
			(unsigned long long)hwq, q->ops->name);
		res = kXSchedErrorInvalidValue;
	} else if (q->lv3) {
		XS_WARN(TOPIC, "enable Lv3: host HwQueue 0x%llx already has Lv3",
			(unsigned long long)hwq);
		res = kXSchedErrorNotAllowed;
	} else {
		char name[48];
		snprintf(name, sizeof(name), "host HwQueue 0x%llx", (unsigned long long)hwq);
		res = xs_lv3_attach(&q->lv3, ring_base_address, q->max_level, name);
		if (res == kXSchedSuccess) {
			q->max_level = kPreemptLevelInterrupt;
			XS_INFO(TOPIC, "host HwQueue 0x%llx: max preemption level 3 (KFD queue %u)",
				(unsigned long long)hwq, xs_lv3_queue_id(q->lv3));
		}
	}
	xs_obj_unref(obj);
	return res;
}

void xs_lv3_release_all(void)
{
	xs_cwsr_release_all();
}
