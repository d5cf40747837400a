/* The XQueue object, shared by the API (core/xqueue.c), progressive launching
 * (preempt/launch.c) and the scheduler (sched/).
 *
 * Locking: xq->lock guards every mutable field below unless a field says otherwise.
 * Lock order: scheduler lock -> xq->lock -> (scheduler event lock | backend locks).
 * Library threads of one XQueue: the launcher ("xs-launch") and the completer
 * ("xs-complete"); see preempt/launch.c.
 */
#ifndef XS_CORE_XQUEUE_H
#define XS_CORE_XQUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/command.h"
#include "core/object.h"
#include "core/thread.h"
#include "hal/hal.h"
#include "xsched.h"

typedef struct xs_xqueue {
	xs_obj obj;
	xs_hwq *hwq; /* holds a reference; read-only after create */

	xs_mutex lock;
	xs_cond launch_cv;   /* launcher: work, window space, resume, stop */
	xs_cond complete_cv; /* completer: a completion point, stop */
	xs_cond done_cv;     /* XQueueWait/WaitAll/Destroy: completions */

	xs_cmd *pend_head, *pend_tail;     /* submitted, not launched (FIFO) */
	xs_cmd *flight_head, *flight_tail; /* launched, not complete (FIFO) */
	xs_cmd *sp_head, *sp_tail; /* in-flight commands carrying a completion point (FIFO) */

	uint64_t submitted, launched, completed, failed;
	uint64_t synced;     /* seq of the last launched command covered by a completion point */
	XResult err_pending; /* first failure since the last XQueueWaitAll reported one */

	int64_t threshold, batch_size; /* progressive launching (Lv1) */
	int level;                     /* XPreemptLevel in force */

	bool app_suspended;   /* XQueueSuspend/Resume */
	bool sched_suspended; /* the scheduler's decision */
	bool running;         /* = closing || !(app_suspended || sched_suspended), as applied */
	bool closing;         /* XQueueDestroy has begun: drain, accept nothing new */
	bool stop;            /* threads exit once idle */
	bool blocked;         /* the launcher waits for another XQueue (an event wait); the
			       * scheduler then treats the XQueue as not ready */

	uint64_t suspensions;
	int64_t suspended_ns;       /* finished spells */
	int64_t suspended_since_ns; /* start of the current spell (valid while !running) */

	/* Scheduling inputs, written by hints under xq->lock, read by the scheduler. */
	Priority prio;
	/* --- Hints beyond the priority (sched/hint.c). All zero (calloc) = no hint given. */
	bool has_util;        /* else UTILIZATION_DEFAULT */
	bool has_deadline;    /* else NO_DEADLINE */
	bool has_laxity;      /* else NO_LAXITY */
	Utilization util;     /* XHintUtilization, 0..100 */
	Deadline deadline_us; /* XHintDeadline, us >= 0 */
	Laxity laxity_us;     /* XHintLaxity, us >= 0 */
	Priority lax_prio;    /* XHintLaxity: before the laxity runs out */
	Priority crit_prio;   /* XHintLaxity: after it */
	/* --- end of hints */
	int64_t ready_since_ns; /* when the queue last went from idle to ready */

	/* Owned by the scheduler thread, guarded by the scheduler lock. */
	struct xs_xqueue *sched_next;
	void *policy_slot; /* per-queue state of the current policy */

	pthread_t launcher, completer;
} xs_xqueue;

static inline xs_xqueue *xs_xqueue_of(xs_obj *obj)
{
	return (xs_xqueue *)obj;
}

static inline bool xs_xqueue_idle(const xs_xqueue *xq)
{
	return xq->completed == xq->submitted;
}

/* Lv1 machinery (preempt/launch.c). */
int xs_launch_start(xs_xqueue *xq); /* start both threads; 0 or errno */
void xs_launch_stop(xs_xqueue *xq); /* xq->stop must be set; joins both threads */

/* Recompute xq->running from the suspension flags and apply the preemption level's
 * actions on a change (close/open the gate, interrupt/restore). Caller holds xq->lock. */
void xs_preempt_apply(xs_xqueue *xq);
/* Undo the actions of @old_level and apply those of xq->level while suspended.
 * Caller holds xq->lock. */
void xs_preempt_relevel(xs_xqueue *xq, int old_level);

#endif
