/* The host backend: a HwQueue executed in order by one CPU thread ("xs-host").
 *
 * It is the reference implementation of hal.h, and stands for a device in the unit
 * tests: its executor thread is the hardware, not a library thread. enqueue appends an
 * entry to a FIFO; the executor takes the head entry once it may start (a gated entry
 * waits until the counter >= its number; nothing starts while held), runs it, then
 * publishes its number as done and pushes it to the engine (on_done).
 * Lv3 (for tests): preempt/lv3.c attaches a host queue to a KFD queue, in tests the fake
 * KFD's; while the engine holds the queue (hold), the executor starts no entry, as an
 * unmapped hardware queue runs nothing; what an entry already running does is the test's
 * to model (it can watch the fake KFD).
 * Events: a record entry is a marker: running it sets u.record.ran. A wait entry does not
 * let the executor pass until its record has been passed (by another host executor; a
 * record of another backend is already complete when the engine enqueues the wait). The
 * engine enqueues a wait only once its record was enqueued, so every wait ends.
 * All host queues are one device (one budget, one progress thread).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/config.h"
#include "core/log.h"
#include "core/thread.h"
#include "hal/hal.h"

struct xs__entry {
	xs_cmd *cmd;  /* holds a reference; NULL for a done mark alone */
	uint64_t seq; /* 0: a run gate check (no number, nothing published) */
	bool gated;
	bool mark;      /* publish seq once run (XS_ENQ_MARK) */
	bool mark_prev; /* publish seq - 1 on reaching this entry (XS_ENQ_MARK_PREV) */
	struct xs__entry *next;
};

typedef struct xs__host_q {
	xs_hwq base;
	/* The counter (hal.h). Written by commit with release order, read by the executor
	 * with acquire order before each gated entry. */
	_Atomic uint64_t counter;
	/* The last number done; written by the executor (release) after the entry's work,
	 * read by done() (acquire), so what the entry did is visible to whoever sees it. */
	_Atomic uint64_t done_seq;
	/* The last number taken by the executor (it passed its counter check), written under
	 * lock: commit takes the lock after its store, so a read after commit is exact. */
	_Atomic uint64_t started_seq;
	/* The run gate (hal.h): stored by set_run_gate (release) and broadcast under the
	 * lock after the store, like the counter; read by the executor at a gate check. */
	atomic_bool gate_open;
	pthread_t thread;
	xs_mutex lock; /* guards everything below */
	xs_cond cv;    /* the executor waits for work, the counter or release; waiters for done */
	struct xs__entry *head, *tail;
	bool held;    /* Lv3 holds the queue: no entry starts */
	bool running; /* the executor runs an entry (idle: none runs, none is queued) */
	bool stop;
	atomic_bool abort_waits; /* destroy: leave wait entries (never needed by the contract) */
} xs__host_q;

/* The host event lock and its condition, the module's only state. The lock guards nothing
 * but the sleep of executors at wait entries: the flag they test (u.record.ran,
 * xs__host_q.abort_waits) is atomic, and every change of it is followed by a broadcast on
 * cv under the lock, so a sleeper cannot miss it. A leaf lock. */
static struct xs__host_events {
	xs_mutex lock;
	xs_cond cv; /* no timed waits: any clock */
} xs__hev = {XS_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};

void xs_host_forked(void)
{
	xs_mutex_init(&xs__hev.lock);
	xs_cond_init(&xs__hev.cv);
}

static void xs__ev_broadcast(void)
{
	xs_mutex_lock(&xs__hev.lock);
	xs_cond_broadcast(&xs__hev.cv);
	xs_mutex_unlock(&xs__hev.lock);
}

static xs__host_q *xs__hq(xs_hwq *q)
{
	return (xs__host_q *)q;
}

/* Whether the head entry may start. Caller holds h->lock. */
static bool xs__may_start(xs__host_q *h)
{
	XS_ASSERT_HELD(&h->lock);
	const struct xs__entry *e = h->head;
	if (!e || h->held)
		return false;
	if (e->seq == 0) /* a gate check */
		return atomic_load_explicit(&h->gate_open, memory_order_acquire);
	return !e->gated || atomic_load_explicit(&h->counter, memory_order_acquire) >= e->seq;
}

static void xs__pass_record(xs_cmd *rec)
{
	atomic_store_explicit(&rec->u.record.ran, true, memory_order_release);
	xs__ev_broadcast();
}

static XResult xs__wait_record(xs__host_q *h, xs_cmd *rec)
{
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__hev.lock);
	while (!atomic_load_explicit(&rec->u.record.ran, memory_order_acquire)) {
		if (atomic_load_explicit(&h->abort_waits, memory_order_relaxed)) {
			res = kXSchedErrorNotAllowed;
			break;
		}
		xs_cond_wait(&xs__hev.cv, &xs__hev.lock);
	}
	xs_mutex_unlock(&xs__hev.lock);
	return res;
}

/* Publish @seq as done: what its entries did is visible to whoever sees it. Caller holds
 * h->lock. */
static void xs__publish(xs__host_q *h, uint64_t seq)
{
	XS_ASSERT_HELD(&h->lock);
	atomic_store_explicit(&h->done_seq, seq, memory_order_release);
	xs_cond_broadcast(&h->cv);
	xs_hwq_push_done(&h->base);
}

/* Publish the number before the head entry when the engine asked for it
 * (XS_ENQ_MARK_PREV) and it is not published yet: as a stream reaches the write in front
 * of a command, the executor reaches the head entry, whether or not it may start. Caller
 * holds h->lock. */
static void xs__mark_prev(xs__host_q *h, uint64_t *ran)
{
	XS_ASSERT_HELD(&h->lock);
	if (*ran && h->head && h->head->mark_prev) {
		xs__publish(h, *ran);
		*ran = 0;
	}
}

/* Run @e's command (none: a done mark alone) and drop the entry's reference to it. Called
 * with no lock held: user code runs here. */
static void xs__run(xs__host_q *h, struct xs__entry *e)
{
	xs_cmd *cmd = e->cmd;
	XResult res = kXSchedSuccess;
	xs_hal_set_running(&h->base, e->seq);
	if (!cmd)
		; /* a done mark alone */
	else if (cmd->kind == XS_CMD_HOST_FUNC)
		res = cmd->u.host.fn(cmd->u.host.data);
	else if (cmd->kind == XS_CMD_CALLBACK && cmd->u.callback.fn) /* null: a boundary */
		res = cmd->u.callback.fn(h->base.obj.handle, cmd->u.callback.data);
	else if (cmd->kind == XS_CMD_EVENT_RECORD)
		xs__pass_record(cmd);
	else if (cmd->kind == XS_CMD_EVENT_WAIT)
		res = xs__wait_record(h, cmd->u.wait.record);
	xs_hal_set_running(NULL, 0);
	/* The engine reads result once it saw the done number stored after this, or the
	 * queue idle (under the lock). */
	if (res != kXSchedSuccess)
		cmd->result = res;
	xs_obj_unref(cmd ? &cmd->obj : NULL);
}

/* The executor thread of one host queue: runs its entries in order, honouring the counter
 * and the run gate, and publishes their numbers. */
static void *xs__executor(void *arg)
{
	xs__host_q *h = arg;
	uint64_t ran = 0; /* the last number run, not yet published (a left-out mark) */
	xs_mutex_lock(&h->lock);
	for (;;) {
		/* The counter is stored without the lock; commit broadcasts under it after the
		 * store, so a check that saw the old value is followed by a wake-up. */
		xs__mark_prev(h, &ran);
		while (!xs__may_start(h) && !(h->stop && !h->head)) {
			xs_cond_wait(&h->cv, &h->lock);
			xs__mark_prev(h, &ran);
		}
		if (!h->head) /* stop, and nothing left */
			break;
		struct xs__entry *e = h->head;
		h->head = e->next;
		if (!h->head)
			h->tail = NULL;
		if (e->seq == 0) { /* a gate check that passed */
			free(e);
			continue;
		}
		atomic_store_explicit(&h->started_seq, e->seq, memory_order_relaxed);
		h->running = true;
		xs_mutex_unlock(&h->lock);

		xs__run(h, e);
		xs_mutex_lock(&h->lock);
		h->running = false;
		ran = e->seq;
		if (e->mark) {
			xs__publish(h, ran);
			ran = 0;
		} else if (!h->head) {
			/* Idle with a left-out mark: nothing is published (as a stream's done word
			 * stays); waiters and the engine look again and ask idle(). */
			xs_cond_broadcast(&h->cv);
			xs_hwq_push_done(&h->base);
		}
		free(e);
	}
	xs_mutex_unlock(&h->lock);
	return NULL;
}

/* Whether nothing enqueued is incomplete (hal.h): no entry runs or waits. */
static bool xs__idle(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	xs_mutex_lock(&h->lock);
	bool idle = !h->head && !h->running;
	xs_mutex_unlock(&h->lock);
	return idle;
}

static XResult xs__thread_init(xs_hwq *q)
{
	(void)q;
	return kXSchedSuccess;
}

static bool xs__supports(xs_hwq *q, enum xs_cmd_kind kind)
{
	(void)q;
	return kind == XS_CMD_HOST_FUNC || kind == XS_CMD_CALLBACK || kind == XS_CMD_EVENT_RECORD ||
	       kind == XS_CMD_EVENT_WAIT;
}

static uint64_t xs__device_key(xs_hwq *q)
{
	(void)q;
	return 0;
}

static XResult xs__device_name(xs_hwq *q, char *buf, size_t n)
{
	(void)q;
	snprintf(buf, n, "host");
	return kXSchedSuccess;
}

static XResult xs__timeslices_processes(xs_hwq *q, bool *out)
{
	(void)q;
	*out = xs_config_get()->host_timesliced; /* a model, for tests */
	return kXSchedSuccess;
}

static void xs__append(xs__host_q *h, struct xs__entry *e)
{
	e->next = NULL;
	xs_mutex_lock(&h->lock);
	if (h->tail)
		h->tail->next = e;
	else
		h->head = e;
	h->tail = e;
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
}

static XResult xs__enqueue(xs_hwq *q, xs_cmd *cmd, uint64_t seq, unsigned flags)
{
	xs__host_q *h = xs__hq(q);
	XResult res = kXSchedSuccess;
	if (cmd && cmd->kind == XS_CMD_INLINE) {
		/* No stream to put work on: the work runs here, the entry is its done mark. */
		if (cmd->u.callback.fn) /* null: a boundary, the done mark alone */
			res = cmd->u.callback.fn(q->obj.handle, cmd->u.callback.data);
		cmd = NULL;
	}
	struct xs__entry *e = malloc(sizeof(*e));
	if (!e) {
		atomic_store_explicit(&q->broken, true, memory_order_relaxed);
		return kXSchedErrorUnknown;
	}
	if (cmd)
		xs_obj_ref(&cmd->obj);
	e->cmd = cmd;
	e->seq = seq;
	e->gated = flags & XS_ENQ_GATED;
	e->mark = flags & XS_ENQ_MARK;
	e->mark_prev = flags & XS_ENQ_MARK_PREV;
	xs__append(h, e);
	return res;
}

static void xs__set_run_gate(xs_hwq *q, bool open)
{
	xs__host_q *h = xs__hq(q);
	atomic_store_explicit(&h->gate_open, open, memory_order_release);
	xs_mutex_lock(&h->lock);
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
}

static XResult xs__gate_check(xs_hwq *q, uint64_t mark_prev)
{
	struct xs__entry *e = calloc(1, sizeof(*e)); /* seq 0: a gate check */
	if (!e)
		return kXSchedErrorUnknown;
	e->mark_prev = mark_prev != 0;
	xs__append(xs__hq(q), e);
	return kXSchedSuccess;
}

static void xs__commit(xs_hwq *q, uint64_t seq)
{
	xs__host_q *h = xs__hq(q);
	atomic_store_explicit(&h->counter, seq, memory_order_release);
	/* The store is the commit; the broadcast only wakes an executor parked on the
	 * counter (taking the lock orders it after the executor's check). */
	xs_mutex_lock(&h->lock);
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
}

static void xs__reset(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	atomic_store_explicit(&h->counter, 0, memory_order_release);
	atomic_store_explicit(&h->done_seq, 0, memory_order_release);
	atomic_store_explicit(&h->started_seq, 0, memory_order_relaxed);
	/* Waiters of the earlier XQueue see the new generation (raised before the call). */
	xs_mutex_lock(&h->lock);
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
}

static uint64_t xs__started(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	xs_mutex_lock(&h->lock);
	uint64_t s = atomic_load_explicit(&h->started_seq, memory_order_relaxed);
	xs_mutex_unlock(&h->lock);
	return s;
}

static uint64_t xs__done(xs_hwq *q)
{
	return atomic_load_explicit(&xs__hq(q)->done_seq, memory_order_acquire);
}

static XResult xs__wait_done(xs_hwq *q, uint64_t seq, uint64_t gen)
{
	xs__host_q *h = xs__hq(q);
	xs_mutex_lock(&h->lock);
	/* Also ends when the queue is idle with @seq unpublished (a left-out mark): the
	 * engine then asks idle(). */
	while (atomic_load_explicit(&h->done_seq, memory_order_acquire) < seq &&
	       atomic_load_explicit(&q->generation, memory_order_relaxed) == gen &&
	       (h->head || h->running))
		xs_cond_wait(&h->cv, &h->lock);
	xs_mutex_unlock(&h->lock);
	return kXSchedSuccess;
}

static XResult xs__check(xs_hwq *q)
{
	(void)q;
	return kXSchedSuccess;
}

/* Lv3 model: no entry starts while held (the engine holds the queue after a successful
 * KFD suspend, and releases it after the resume). */
static void xs__hold(xs_hwq *q, bool on)
{
	xs__host_q *h = xs__hq(q);
	xs_mutex_lock(&h->lock);
	h->held = on;
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
}

static void xs__destroy(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	xs__hold(q, false);
	xs__set_run_gate(q, true);
	xs__commit(q, UINT64_MAX); /* nothing may stay parked behind the counter */
	atomic_store_explicit(&h->abort_waits, true, memory_order_relaxed);
	xs__ev_broadcast();
	xs_mutex_lock(&h->lock);
	h->stop = true;
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
	xs_thread_join(h->thread);
}

static void xs__free(xs_obj *obj)
{
	xs__host_q *h = (xs__host_q *)obj;
	xs_cond_destroy(&h->cv);
	xs_mutex_destroy(&h->lock);
	free(h);
}

static const xs_hal_ops xs__host_ops = {
    .name = "host",
    .pushes_done = true,
    .thread_init = xs__thread_init,
    .supports = xs__supports,
    .device_key = xs__device_key,
    .device_name = xs__device_name,
    .timeslices_processes = xs__timeslices_processes,
    .callbacks_on_queue = true,
    .enqueue = xs__enqueue,
    .idle = xs__idle,
    .reset = xs__reset,
    .commit = xs__commit,
    .started = xs__started,
    .done = xs__done,
    .wait_done = xs__wait_done,
    .check = xs__check,
    .set_run_gate = xs__set_run_gate,
    .gate_check = xs__gate_check,
    .hold = xs__hold,
    .destroy = xs__destroy,
};

bool xs_hwq_is_host(const xs_hwq *q)
{
	return q->ops == &xs__host_ops;
}

XResult xs_host_queue_create(xs_hwq **out)
{
	xs__host_q *h = calloc(1, sizeof(*h));
	if (!h)
		return kXSchedErrorUnknown;
	xs_hwq_init(&h->base, &xs__host_ops, kPreemptLevelDeactivate, NULL, xs__free);
	h->base.hw_queues = xs_config_get()->host_hw_queues; /* a model, for tests */
	h->base.lazy_marks = true;
	atomic_init(&h->counter, 0);
	atomic_init(&h->done_seq, 0);
	atomic_init(&h->started_seq, 0);
	atomic_init(&h->abort_waits, false);
	atomic_init(&h->gate_open, true);
	xs_mutex_init(&h->lock);
	xs_cond_init(&h->cv);
	int err = xs_thread_start(&h->thread, "xs-host", xs__executor, h);
	if (err) {
		XS_ERROR("hal", "cannot start a host queue thread (errno %d)", err);
		xs_cond_destroy(&h->cv);
		xs_mutex_destroy(&h->lock);
		free(h);
		return kXSchedErrorUnknown;
	}
	*out = &h->base;
	return kXSchedSuccess;
}
