/* The host backend: a HwQueue executed in order by one CPU thread ("xs-host").
 *
 * It is the reference implementation of hal.h. Launch appends to a FIFO; the executor
 * runs each entry and then advances done_seq; a completion point is a sequence number.
 * Lv2: each gated entry waits at the gate word before it runs, as a GPU stream waits on
 * its gate before each gated command.
 * Lv3 (for tests): xs_host_queue_enable_lv3() attaches the queue to a KFD queue, in tests
 * the fake KFD's, through preempt/lv3.c. Interrupt suspends that KFD queue and, as an
 * unmapped hardware queue runs nothing, keeps the executor from starting any entry, gated
 * or not, until restore; what an entry already running does is the test's to model (it
 * can watch the fake KFD). A failed interrupt leaves the queue to its gate (Lv2).
 * Events: a record entry is a marker: running it sets u.record.ran. A wait entry does not
 * let the executor pass until its record has been passed (by another host executor; a
 * record of another backend is already complete when the core launches the wait). The
 * core launches a wait only once its record has been launched, so every wait ends.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/thread.h"
#include "hal/hal.h"
#include "preempt/lv3.h"

struct xs__entry {
	xs_cmd *cmd; /* holds a reference */
	bool gated;
	struct xs__entry *next;
};

typedef struct xs__host_q {
	xs_hwq base;
	/* 1 = open, 0 = closed. Written by gate_open/gate_close with release order, read by
	 * the executor with acquire order before each gated entry. */
	atomic_uint gate;
	/* Lv3 attachment or NULL. Written by xs_host_queue_enable_lv3() before any XQueue
	 * exists and by destroy after the last one; read by interrupt/restore, which the
	 * core calls with the XQueue's lock held. */
	xs_lv3 *lv3;
	pthread_t thread;
	xs_mutex lock; /* guards everything below */
	xs_cond cv;    /* executor waits for work or the gate; sync_wait waits for done_seq */
	struct xs__entry *head, *tail;
	uint64_t enq_seq;  /* entries launched so far */
	uint64_t done_seq; /* entries finished so far */
	bool interrupted;  /* Lv3 holds the queue: no entry starts until restore */
	bool stop;
	atomic_bool abort_waits; /* destroy: leave wait entries (never needed by the contract) */
} xs__host_q;

/* Guards nothing but the sleep of executors at wait entries: the flag they test
 * (u.record.ran, xs__host_q.abort_waits) is atomic, and every change of it is followed by
 * a broadcast on xs__ev_cv under xs__ev_lock, so a sleeper cannot miss it. A leaf lock. */
static xs_mutex xs__ev_lock = PTHREAD_MUTEX_INITIALIZER;
static xs_cond xs__ev_cv = PTHREAD_COND_INITIALIZER; /* no timed waits: any clock */

static void xs__ev_broadcast(void)
{
	xs_mutex_lock(&xs__ev_lock);
	xs_cond_broadcast(&xs__ev_cv);
	xs_mutex_unlock(&xs__ev_lock);
}

static xs__host_q *xs__hq(xs_hwq *q)
{
	return (xs__host_q *)q;
}

static bool xs__gate_is_open(xs__host_q *h)
{
	return atomic_load_explicit(&h->gate, memory_order_acquire) != 0;
}

static void xs__pass_record(xs_cmd *rec)
{
	atomic_store_explicit(&rec->u.record.ran, true, memory_order_release);
	xs__ev_broadcast();
}

static XResult xs__wait_record(xs__host_q *h, xs_cmd *rec)
{
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__ev_lock);
	while (!atomic_load_explicit(&rec->u.record.ran, memory_order_acquire)) {
		if (atomic_load_explicit(&h->abort_waits, memory_order_relaxed)) {
			res = kXSchedErrorNotAllowed;
			break;
		}
		xs_cond_wait(&xs__ev_cv, &xs__ev_lock);
	}
	xs_mutex_unlock(&xs__ev_lock);
	return res;
}

static void *xs__executor(void *arg)
{
	xs__host_q *h = arg;
	xs_mutex_lock(&h->lock);
	for (;;) {
		while (!h->stop &&
		       (!h->head || h->interrupted || (h->head->gated && !xs__gate_is_open(h))))
			xs_cond_wait(&h->cv, &h->lock);
		if (!h->head) /* stop, and nothing left */
			break;
		if (h->head->gated && !xs__gate_is_open(h)) {
			if (h->stop) /* stopping with a closed gate */
				break;
			/* The gate closed after the check above (its store takes no lock): wait
			 * again, or the queue would never run another entry. */
			continue;
		}
		struct xs__entry *e = h->head;
		h->head = e->next;
		if (!h->head)
			h->tail = NULL;
		xs_mutex_unlock(&h->lock);

		xs_cmd *cmd = e->cmd;
		XResult res = kXSchedSuccess;
		if (cmd->kind == XS_CMD_HOST_FUNC)
			res = cmd->u.host.fn(cmd->u.host.data);
		else if (cmd->kind == XS_CMD_CALLBACK)
			res = cmd->u.callback.fn(h->base.obj.handle, cmd->u.callback.data);
		else if (cmd->kind == XS_CMD_EVENT_RECORD)
			xs__pass_record(cmd);
		else if (cmd->kind == XS_CMD_EVENT_WAIT)
			res = xs__wait_record(h, cmd->u.wait.record);
		/* The completer reads result after sync_wait, which takes h->lock after us. */
		if (res != kXSchedSuccess)
			cmd->result = res;
		xs_obj_unref(&cmd->obj);
		free(e);

		xs_mutex_lock(&h->lock);
		h->done_seq++;
		xs_cond_broadcast(&h->cv);
	}
	xs_mutex_unlock(&h->lock);
	return NULL;
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

static XResult xs__launch(xs_hwq *q, xs_cmd *cmd, bool gated)
{
	xs__host_q *h = xs__hq(q);
	struct xs__entry *e = malloc(sizeof(*e));
	if (!e)
		return kXSchedErrorUnknown;
	xs_obj_ref(&cmd->obj);
	e->cmd = cmd;
	e->gated = gated;
	e->next = NULL;
	xs_mutex_lock(&h->lock);
	if (h->tail)
		h->tail->next = e;
	else
		h->head = e;
	h->tail = e;
	h->enq_seq++;
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
	return kXSchedSuccess;
}

static XResult xs__sync_create(xs_hwq *q, xs_sync *s)
{
	xs__host_q *h = xs__hq(q);
	xs_mutex_lock(&h->lock);
	s->seq = h->enq_seq;
	xs_mutex_unlock(&h->lock);
	return kXSchedSuccess;
}

static XResult xs__sync_wait(xs_hwq *q, xs_sync *s)
{
	xs__host_q *h = xs__hq(q);
	xs_mutex_lock(&h->lock);
	while (h->done_seq < s->seq)
		xs_cond_wait(&h->cv, &h->lock);
	xs_mutex_unlock(&h->lock);
	return kXSchedSuccess;
}

static void xs__sync_destroy(xs_hwq *q, xs_sync *s)
{
	(void)q;
	(void)s;
}

static XResult xs__sync_all(xs_hwq *q)
{
	xs_sync s;
	xs__sync_create(q, &s);
	return xs__sync_wait(q, &s);
}

static void xs__gate_close(xs_hwq *q)
{
	atomic_store_explicit(&xs__hq(q)->gate, 0, memory_order_release);
}

static void xs__gate_open(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	atomic_store_explicit(&h->gate, 1, memory_order_release);
	/* The store is the reactivation; the broadcast only wakes an executor parked on a
	 * closed gate (taking the lock orders it after the executor's check). */
	xs_mutex_lock(&h->lock);
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
}

/* Lv3: suspend the KFD queue and stop the executor before its next entry. Called with
 * the XQueue's lock held, after gate_close; blocks for one KFD call. A failure (logged
 * once by lv3.c) leaves the queue to its closed gate, which is this level's fallback, so
 * it still returns kXSchedSuccess. */
static XResult xs__interrupt(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	if (!h->lv3)
		return kXSchedErrorNotSupported;
	if (xs_lv3_interrupt(h->lv3)) {
		xs_mutex_lock(&h->lock);
		h->interrupted = true;
		xs_mutex_unlock(&h->lock);
	}
	return kXSchedSuccess;
}

/* Lv3: resume the KFD queue and let the executor go on. Called with the XQueue's lock
 * held, before gate_open. A failed resume is logged and retried by lv3.c; the executor
 * goes on regardless (what a KFD queue left suspended does is the fake's to model). */
static XResult xs__restore(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	if (!h->lv3)
		return kXSchedErrorNotSupported;
	xs_lv3_restore(h->lv3);
	xs_mutex_lock(&h->lock);
	h->interrupted = false;
	xs_cond_broadcast(&h->cv);
	xs_mutex_unlock(&h->lock);
	return kXSchedSuccess;
}

static void xs__destroy(xs_hwq *q)
{
	xs__host_q *h = xs__hq(q);
	/* Resume before anything else: a suspended KFD queue cannot be destroyed. */
	xs_lv3_detach(h->lv3);
	h->lv3 = NULL;
	xs_mutex_lock(&h->lock);
	h->interrupted = false;
	xs_mutex_unlock(&h->lock);
	xs__gate_open(q); /* nothing may stay parked behind a closed gate */
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
    .thread_init = xs__thread_init,
    .supports = xs__supports,
    .launch = xs__launch,
    .sync_create = xs__sync_create,
    .sync_wait = xs__sync_wait,
    .sync_destroy = xs__sync_destroy,
    .sync_all = xs__sync_all,
    .gate_close = xs__gate_close,
    .gate_open = xs__gate_open,
    /* Set on every host queue; they act only once xs_host_queue_enable_lv3() has raised
     * the max level to 3, since the core calls them only at that level. */
    .interrupt = xs__interrupt,
    .restore = xs__restore,
    .destroy = xs__destroy,
};

XResult xs_host_queue_create(xs_hwq **out)
{
	xs__host_q *h = calloc(1, sizeof(*h));
	if (!h)
		return kXSchedErrorUnknown;
	xs_hwq_init(&h->base, &xs__host_ops, kPreemptLevelDeactivate, NULL, xs__free);
	atomic_init(&h->gate, 1);
	atomic_init(&h->abort_waits, false);
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

XResult xs_host_queue_enable_lv3(HwQueueHandle hwq, uint64_t ring_base_address)
{
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	if (!obj) {
		XS_WARN("hal", "enable Lv3: 0x%llx is not a live HwQueue", (unsigned long long)hwq);
		return kXSchedErrorNotFound;
	}
	xs_hwq *q = xs_hwq_of(obj);
	XResult res = kXSchedSuccess;
	if (q->ops != &xs__host_ops) {
		XS_WARN("hal", "enable Lv3: HwQueue 0x%llx is a %s queue, not a host queue",
			(unsigned long long)hwq, q->ops->name);
		res = kXSchedErrorInvalidValue;
	} else if (xs__hq(q)->lv3) {
		XS_WARN("hal", "enable Lv3: host HwQueue 0x%llx already has Lv3",
			(unsigned long long)hwq);
		res = kXSchedErrorNotAllowed;
	} else {
		char name[48];
		snprintf(name, sizeof(name), "host HwQueue 0x%llx", (unsigned long long)hwq);
		res = xs_lv3_attach(&xs__hq(q)->lv3, ring_base_address, q->max_level, name);
		if (res == kXSchedSuccess) {
			q->max_level = kPreemptLevelInterrupt;
			XS_INFO("hal", "host HwQueue 0x%llx: max preemption level 3 (KFD queue %u)",
				(unsigned long long)hwq, xs_lv3_queue_id(xs__hq(q)->lv3));
		}
	}
	xs_obj_unref(obj);
	return res;
}
