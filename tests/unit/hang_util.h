/* Helpers for the tests of calls that hang when broken (issue 22's items): a call made on
 * a thread of its own and waited for with a time limit, so that a hang fails the test
 * with a line naming the item instead of blocking the test run; a process-wide watchdog
 * as the last resort; host functions that block until the test releases them; the
 * engine's view of an XQueue (read under its lock).
 *
 * A test that finds a hang leaves with _exit(1): the hung thread cannot be joined. */
#ifndef XS_TEST_HANG_UTIL_H
#define XS_TEST_HANG_UTIL_H

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/object.h"
#include "preempt/engine_int.h" /* the XQueue's fields */

static const char *h_what = "the test";

static void h_alarm(int sig)
{
	(void)sig;
	static const char head[] = "watchdog: no end in time: ";
	ssize_t r = write(2, head, sizeof(head) - 1);
	r = write(2, h_what, strlen(h_what));
	r = write(2, "\n", 1);
	(void)r;
	_exit(1);
}

/* Fail the process (exit 1, naming @what) unless it ends within @seconds. */
static inline void h_watchdog(unsigned seconds, const char *what)
{
	h_what = what;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h_alarm;
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

/* Report a hang of @what and leave. */
static inline void h_hang(const char *what)
{
	fflush(stdout);
	fprintf(stderr, "HANG: %s\n", what);
	fflush(stderr);
	_exit(1);
}

/* A call on a thread of its own. */
typedef struct h_call {
	pthread_t thread;
	void *(*fn)(void *arg);
	void *arg;
	atomic_bool done;
} h_call;

static inline void *h_call_main(void *arg)
{
	h_call *c = arg;
	c->fn(c->arg);
	atomic_store(&c->done, true);
	return NULL;
}

static inline void h_start(h_call *c, void *(*fn)(void *arg), void *arg)
{
	c->fn = fn;
	c->arg = arg;
	atomic_store(&c->done, false);
	CHECK(pthread_create(&c->thread, NULL, h_call_main, c) == 0);
}

static inline bool h_done_pred(void *arg)
{
	return atomic_load(&((h_call *)arg)->done);
}

/* Wait up to @timeout_ms for the call to return, then join it; on a timeout report @what
 * as a hang and leave. */
static inline void h_finish(h_call *c, int timeout_ms, const char *what)
{
	if (!t_wait_for(h_done_pred, c, timeout_ms))
		h_hang(what);
	CHECK(pthread_join(c->thread, NULL) == 0);
}

/* Wait (up to 3 s) until @n commands of @xq have completed; on a timeout report @what as
 * a hang and leave. */
static inline void h_wait_completed(XQueueHandle xq, uint64_t n, const char *what)
{
	int64_t end = t_now_us() + 3000000;
	while (t_stats(xq).completed < n)
		if (t_now_us() > end)
			h_hang(what);
		else
			t_sleep_us(1000);
}

/* A host function that blocks until its flag is set. */
static inline XResult h_block_fn(void *data)
{
	atomic_bool *release = data;
	while (!atomic_load(release))
		t_sleep_us(100);
	return kXSchedSuccess;
}

static inline XResult h_nop_fn(void *data)
{
	(void)data;
	return kXSchedSuccess;
}

/* Submit a host function and keep its handle (the caller destroys it). */
static inline HwCommandHandle h_submit(XQueueHandle xq, HostFunction fn, void *data)
{
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, fn, data));
	CHECK_OK(XQueueSubmit(xq, c));
	return c;
}

/* An event record submitted to @producer, and a wait for it submitted to @consumer. The
 * caller destroys both commands. */
static inline void h_event_dep(XQueueHandle producer, XQueueHandle consumer, HwCommandHandle *rec,
			       HwCommandHandle *wait)
{
	CHECK_OK(HwCommandCreateEventRecord(rec));
	CHECK_OK(XQueueSubmit(producer, *rec));
	CHECK_OK(HwCommandCreateEventWait(wait, *rec));
	CHECK_OK(XQueueSubmit(consumer, *wait));
}

/* A command that reaches another XQueue from inside it (priority inheritance): h_reach_fn
 * first blocks until `release` is set (when given), then launches inline on `target`
 * (XQueueLaunchInline) or, with `wait`, submits a command to it and waits for it
 * (XQueueWait); it counts in `calls` and keeps the call's result in `res`. One at a time;
 * h_reach_set prepares the next. */
typedef struct h_reach_state {
	XQueueHandle target;
	bool wait;
	atomic_bool *release;
	atomic_int calls;
	XResult res;
} h_reach_state;

static inline h_reach_state *h_reach(void)
{
	static h_reach_state r;
	return &r;
}

static inline void h_reach_set(XQueueHandle target, bool wait, atomic_bool *release)
{
	h_reach_state *r = h_reach();
	r->target = target;
	r->wait = wait;
	r->release = release;
	atomic_store(&r->calls, 0);
	r->res = kXSchedErrorUnknown;
}

static inline XResult h_reach_inline_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	atomic_fetch_add(&h_reach()->calls, 1);
	return kXSchedSuccess;
}

static inline XResult h_reach_fn(void *data)
{
	(void)data;
	h_reach_state *r = h_reach();
	if (r->release)
		h_block_fn(r->release);
	if (!r->wait) {
		r->res = XQueueLaunchInline(r->target, h_reach_inline_cb, NULL);
		return kXSchedSuccess;
	}
	HwCommandHandle c = h_submit(r->target, h_nop_fn, NULL);
	r->res = XQueueWait(r->target, c);
	CHECK_OK(HwCommandDestroy(c));
	atomic_fetch_add(&r->calls, 1);
	return kXSchedSuccess;
}

/* The engine's view of @xq: one field, read under the XQueue's lock. */
enum h_field { H_LIMITED, H_SCHED_SUSPENDED, H_RUNNING, H_SOLE_TOP };

static inline bool h_get(XQueueHandle xq, enum h_field f)
{
	xs_obj *obj = xs_handle_get(xq, XS_KIND_XQUEUE);
	CHECK(obj);
	xs_xqueue *x = xs_xqueue_of(obj);
	xs_mutex_lock(&x->lock);
	bool v = f == H_LIMITED           ? x->limited
		 : f == H_SCHED_SUSPENDED ? x->sched_suspended
		 : f == H_SOLE_TOP        ? x->sole_top
					  : x->running;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(obj);
	return v;
}

typedef struct h_cond {
	XQueueHandle xq;
	enum h_field f;
	bool want;
} h_cond;

static inline bool h_cond_pred(void *arg)
{
	const h_cond *c = arg;
	return h_get(c->xq, c->f) == c->want;
}

/* Wait (up to 5 s) until the field of @xq has the value @want: the scheduler's pass has
 * been applied. */
static inline void h_wait_field(XQueueHandle xq, enum h_field f, bool want)
{
	h_cond c = {xq, f, want};
	CHECK(t_wait_for(h_cond_pred, &c, 5000));
}

/* Three Lv1 XQueues on host queues at priorities 10, 5 and 0 (high, mid, low);
 * h_tiers_close destroys them (an XQueue the test destroyed itself is set to 0: the
 * destroy calls accept 0). */
typedef struct h_tiers {
	HwQueueHandle hh, hm, hl;
	XQueueHandle high, mid, low;
} h_tiers;

static inline void h_tiers_open(h_tiers *t)
{
	HwQueueHandle *hw[3] = {&t->hh, &t->hm, &t->hl};
	XQueueHandle *xq[3] = {&t->high, &t->mid, &t->low};
	static const Priority prio[3] = {10, 5, 0};
	for (int i = 0; i < 3; i++) {
		CHECK_OK(HostQueueCreate(hw[i]));
		CHECK_OK(XQueueCreate(xq[i], *hw[i], kPreemptLevelBlock, 0));
		CHECK_OK(XHintPriority(*xq[i], prio[i]));
	}
}

static inline void h_tiers_close(h_tiers *t)
{
	CHECK_OK(XQueueDestroy(t->high));
	CHECK_OK(XQueueDestroy(t->mid));
	CHECK_OK(XQueueDestroy(t->low));
	CHECK_OK(HwQueueDestroy(t->hh));
	CHECK_OK(HwQueueDestroy(t->hm));
	CHECK_OK(HwQueueDestroy(t->hl));
}

#endif
