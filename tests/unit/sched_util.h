/* Helpers for the policy tests (test_sched_*.c): host queues whose commands sleep and
 * record which queue ran when.
 *
 * Each queue i has one su_queue; every command submitted with su_submit(i, n) runs
 * su_fn, which sleeps for the queue's command time and logs its start and end, adds the
 * time to the queue's busy counter and tracks how many recorded commands run at once.
 * Setting a queue's stop flag makes its remaining commands return at once (unrecorded),
 * so a test can end a phase without waiting for the work it queued.
 * Read the log only while no recorded command runs (after XQueueWaitAll on every queue):
 * an entry is written after its index is taken. The busy counters may be read any time.
 */
#ifndef XS_TEST_SCHED_UTIL_H
#define XS_TEST_SCHED_UTIL_H

#include <string.h>

#include "check.h"
#include "core/object.h"
#include "preempt/engine.h"

#define SU_MAXQ   8
#define SU_MAXLOG 20000

typedef struct su_queue {
	int idx;
	int64_t cmd_us; /* sleep of each command */
	HwQueueHandle hwq;
	XQueueHandle xq;
	atomic_bool stop;     /* remaining commands return at once */
	atomic_llong busy_us; /* recorded command time so far */
	atomic_int ran;       /* recorded commands so far */
} su_queue;

typedef struct su_event {
	int q;
	int64_t start_us, end_us;
} su_event;

static su_queue su_q[SU_MAXQ];
static su_event su_log[SU_MAXLOG];
static atomic_int su_nlog;
static atomic_int su_running, su_max_running;

static inline XResult su_fn(void *data)
{
	su_queue *q = data;
	if (atomic_load(&q->stop))
		return kXSchedSuccess;
	int64_t start = t_now_us();
	int r = atomic_fetch_add(&su_running, 1) + 1;
	int m = atomic_load(&su_max_running);
	while (r > m && !atomic_compare_exchange_weak(&su_max_running, &m, r))
		;
	t_sleep_us(q->cmd_us);
	atomic_fetch_sub(&su_running, 1);
	int64_t end = t_now_us();
	atomic_fetch_add(&q->busy_us, end - start);
	atomic_fetch_add(&q->ran, 1);
	int i = atomic_fetch_add(&su_nlog, 1);
	CHECKF(i < SU_MAXLOG, "at most %d logged commands; measured %d", SU_MAXLOG, i + 1);
	su_log[i] = (su_event){.q = q->idx, .start_us = start, .end_us = end};
	return kXSchedSuccess;
}

/* Create queue @i at Lv1 with one command in flight: a suspension takes effect after
 * at most the running command, so orders are strict and shares are not blurred by a
 * deep in-flight window. */
static inline void su_create(int i, int64_t cmd_us)
{
	su_queue *q = &su_q[i];
	q->idx = i;
	q->cmd_us = cmd_us;
	atomic_store(&q->stop, false);
	CHECK_OK(HostQueueCreate(&q->hwq));
	CHECK_OK(XQueueCreate(&q->xq, q->hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueSetLaunchConfig(q->xq, 1, 1));
}

/* Recorded command time of queue @i so far, in us (any time). */
static inline int64_t su_busy(int i)
{
	return atomic_load(&su_q[i].busy_us);
}

static inline void su_destroy(int i)
{
	CHECK_OK(XQueueDestroy(su_q[i].xq));
	CHECK_OK(HwQueueDestroy(su_q[i].hwq));
}

static inline void su_submit(int i, int n)
{
	for (int k = 0; k < n; k++)
		t_submit_fn(su_q[i].xq, su_fn, &su_q[i]);
}

/* Forget the log and the concurrency maximum (call while nothing recorded runs). */
static inline void su_reset_log(void)
{
	atomic_store(&su_nlog, 0);
	atomic_store(&su_max_running, 0);
}

/* Start of the first and end of the last logged command of queue @q (-1 if none). */
static inline int64_t su_first_start(int q)
{
	int64_t t = -1;
	for (int i = 0; i < atomic_load(&su_nlog); i++)
		if (su_log[i].q == q && (t < 0 || su_log[i].start_us < t))
			t = su_log[i].start_us;
	return t;
}

static inline int64_t su_last_end(int q)
{
	int64_t t = -1;
	for (int i = 0; i < atomic_load(&su_nlog); i++)
		if (su_log[i].q == q && su_log[i].end_us > t)
			t = su_log[i].end_us;
	return t;
}

/* Logged commands of queue @q that started in [from_us, to_us). */
static inline int su_starts_between(int q, int64_t from_us, int64_t to_us)
{
	int c = 0;
	for (int i = 0; i < atomic_load(&su_nlog); i++)
		if (su_log[i].q == q && su_log[i].start_us >= from_us && su_log[i].start_us < to_us)
			c++;
	return c;
}

/* Whether the scheduler holds queue @i suspended now (read under its lock). */
static inline bool su_sched_suspended(int i)
{
	xs_obj *obj = xs_handle_get(su_q[i].xq, XS_KIND_XQUEUE);
	CHECKF(obj, "queue %d's XQueue alive; measured: its handle is gone", i);
	xs_xqueue_snap s;
	xs_engine_snapshot(xs_xqueue_of(obj), &s);
	xs_obj_unref(obj);
	return s.sched_suspended;
}

static inline bool su_susp_pred(void *arg)
{
	return su_sched_suspended(*(int *)arg);
}

/* Wait (up to 10 s) until the scheduler has suspended queue @i: a test uses it to know
 * that the scheduler has seen the work submitted before, not to time anything. */
static inline void su_wait_suspended(int i)
{
	CHECKF(t_wait_for(su_susp_pred, &i, 10000),
	       "queue %d suspended by the scheduler within "
	       "10 s; measured: still running",
	       i);
}

static inline bool su_run_pred(void *arg)
{
	return !su_sched_suspended(*(int *)arg);
}

/* Wait (up to 10 s) until the scheduler no longer suspends queue @i (to start a phase
 * from a settled state). */
static inline void su_wait_running(int i)
{
	CHECKF(t_wait_for(su_run_pred, &i, 10000),
	       "queue %d no longer suspended within 10 s; "
	       "measured: still suspended",
	       i);
}

static inline bool su_ran_pred(void *arg)
{
	return atomic_load(&su_q[*(int *)arg].ran) > 0;
}

/* Wait (up to 10 s) until queue @i has run a recorded command. */
static inline void su_wait_ran(int i)
{
	CHECKF(t_wait_for(su_ran_pred, &i, 10000),
	       "queue %d runs a command within 10 s; "
	       "measured: none ran",
	       i);
}

/* Stop queue @i's remaining commands and wait until it is idle. */
static inline void su_drain(int i)
{
	atomic_store(&su_q[i].stop, true);
	CHECK_OK(XQueueWaitAll(su_q[i].xq));
}

#endif
