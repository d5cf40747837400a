/* The GPU backend: one source, built once per runtime (-DXS_GPU_CUDA with gpu_cuda.h,
 * -DXS_GPU_HIP with gpu_hip.h), which map the runtime calls to xs_gpu_* names.
 *
 * A HwQueue wraps an application-owned stream; its handle is the stream pointer. The
 * library never creates or destroys a context and never synchronizes a whole device: its
 * own threads bind the stream's context (CUDA) or device (HIP) in thread_init, and any
 * other thread that must call the runtime here (creation, destroy, freeing an event)
 * binds it for the call and then restores what the thread had.
 *
 * Commands: kernels (cudaLaunchKernel/hipLaunchKernel on the copied arguments), module
 * kernels (cuLaunchKernel/hipModuleLaunchKernel), copies and fills, launch callbacks
 * (called on the launcher thread with the stream), host functions (the runtime's
 * launch-host-func, through a trampoline that stores their result), event records (an
 * event of the library's, made at the first launch, without timing) and event waits
 * (cudaStreamWaitEvent; a record of another backend has already completed when the core
 * launches the wait, so nothing is enqueued then).
 *
 * Completion points: an event from a per-queue pool recorded on the stream;
 * sync_wait synchronizes on it. By default the events are made with BlockingSync, so the
 * completer thread sleeps in the driver instead of spinning a core per busy XQueue;
 * XSCHED_GPU_SYNC=spin (read when the HwQueue is created) leaves the wait to the
 * context's scheduling flags (by default a spin). On an H200 the spin saved about 1% of
 * a 10 ms task for a whole core, and polling 100 us before sleeping gained nothing
 * measurable (doc/RESULTS.md).
 *
 * Lv2 gate: one 32-bit word per HwQueue in pinned host memory mapped into the device
 * (a 64-byte slot of a page shared by the queues of one context, so that no queue's
 * destroy frees pinned memory: that would synchronize the device). Before each gated
 * command the launcher enqueues a stream wait-value "gate >= OPEN"; the stream stops
 * there while the gate reads CLOSED. Closing and opening are single stores (see
 * xs__gate_store). XSCHED_GATE_EVERY=k (read at creation, default 1) puts a check
 * before every k-th gated command only: a suspension then stops the stream up to k - 1
 * commands later, for less cost per command (doc/RESULTS.md). Event records are enqueued
 * without a gate check (a marker runs no work; the check before the next command stops
 * the stream anyway), and the core treats a record with gated work before it as a
 * dependency to wait for completely.
 *
 * A closed gate blocks the hardware queue (CUDA connection, HSA queue) its stream is
 * mapped to; streams beyond CUDA_DEVICE_MAX_CONNECTIONS / GPU_MAX_HW_QUEUES share them,
 * so a suspended stream can hold back another (documented at CudaQueueCreate).
 *
 * Capability probe at creation, per stream: Lv1 always; Lv2 when the device reports
 * stream wait-value support and one wait-value on the stream against the open gate
 * completes. HIP builds with hipcc (XS_GPU_HIP_LV3) then try Lv3: the stream's hardware
 * queue is found by hip_ring.c and attached through preempt/lv3.c, whose trial
 * suspend/resume is the probe.
 *
 * Errors: every runtime status is mapped to an XResult here and logged (topic "hal") with
 * the runtime's own name and text for it. A failed launch is reported on its command and
 * leaves the stream usable (the runtime's last error is cleared); a gate check enqueued
 * before a launch that then failed stays in the stream, which only adds a command
 * boundary.
 *
 * Locks: xs__gpu_q.pool_lock guards the event pool (launcher takes, completer returns);
 * xs__gate_lock guards the gate pages. Both are leaves, and neither is held across a
 * runtime call that waits for the device.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/thread.h"
#include "hal/hal.h"
#if defined(XS_GPU_HIP_LV3)
#include <stdio.h>

#include "hal/hip_ring.h"
#include "preempt/lv3.h"
#endif

#if defined(XS_GPU_CUDA)
#include "hal/gpu_cuda.h"
#elif defined(XS_GPU_HIP)
#include "hal/gpu_hip.h"
#else
#error "build gpu.c with -DXS_GPU_CUDA or -DXS_GPU_HIP"
#endif

enum {
	XS__GATE_CLOSED = 0,
	XS__GATE_OPEN = 1,
	XS__GATE_SLOT = 64,   /* bytes per gate: one cache line */
	XS__GATE_PAGE = 4096, /* bytes per page of gates */
	XS__GATES_PER_PAGE = XS__GATE_PAGE / XS__GATE_SLOT,
};

/* A page of gate slots, pinned and mapped, for one context (CUDA) or device (HIP). Pages
 * are never freed: they live until the process exits. */
typedef struct xs__gate_page {
	struct xs__gate_page *next;
	xs_gpu_binding bind;
	char *host;    /* host address of slot 0 */
	uint64_t used; /* bit i: slot i is taken */
} xs__gate_page;

/* Guards xs__gate_pages and each page's used bits. A leaf. */
static xs_mutex xs__gate_lock = PTHREAD_MUTEX_INITIALIZER;
static xs__gate_page *xs__gate_pages;

typedef struct xs__gpu_q {
	xs_hwq base;
	xs_gpu_stream stream;
	xs_gpu_binding bind;
	unsigned event_flags;
	unsigned gate_every; /* XSCHED_GATE_EVERY: one gate check per this many gated commands */
	unsigned since_gate; /* gated commands since the last check; launcher thread only */
	/* Lv2, when max_level >= 2: */
	xs__gate_page *gate_page;
	_Atomic uint32_t *gate; /* host address of the gate word */
	void *gate_dev;         /* the same word's device address */
#if defined(XS_GPU_HIP_LV3)
	xs_lv3
	    *lv3; /* Lv3: set before publish; used under the XQueue's lock; detached in destroy */
#endif

	xs_mutex pool_lock; /* guards pool and pool_n */
	xs_gpu_event *pool;
	size_t pool_n, pool_cap;
} xs__gpu_q;

/* An event record's native event, with what is needed to destroy it from any thread. */
typedef struct xs__rec_event {
	xs_gpu_event ev;
	xs_gpu_binding bind;
} xs__rec_event;

static const xs_hal_ops xs__gpu_ops;

static xs__gpu_q *xs__gq(xs_hwq *q)
{
	return (xs__gpu_q *)q;
}

/* Log a failed runtime call and map it to an XResult. */
static XResult xs__fail(const char *what, xs_gpu_stream s, xs_gpu_err err)
{
	XS_WARN("hal", "%s on %s stream %p failed: %s (%s)", what, XS_GPU_NAME, (void *)s,
		xs_gpu_err_name(err), xs_gpu_err_string(err));
	return kXSchedErrorHardware;
}

/* ---- binding a thread that is not a library thread of the queue ---- */

/* Bind @b on the calling thread, saving what it had in @saved. */
static xs_gpu_err xs__bind_save(const xs_gpu_binding *b, xs_gpu_binding *saved)
{
	xs_gpu_err err = xs_gpu_current_binding(saved);
	if (err == XS_GPU_OK)
		err = xs_gpu_bind(b);
	return err;
}

static void xs__restore(const xs_gpu_binding *saved)
{
	xs_gpu_err err = xs_gpu_bind(saved);
	if (err != XS_GPU_OK)
		XS_WARN("hal", "cannot restore the calling thread's %s binding: %s", XS_GPU_NAME,
			xs_gpu_err_string(err));
}

/* ---- gates ---- */

/* Take a gate slot in a page of the bound context @b (the caller has bound it). */
static XResult xs__gate_take(xs__gpu_q *g)
{
	xs_mutex_lock(&xs__gate_lock);
	xs__gate_page *p = xs__gate_pages;
	for (; p; p = p->next)
		if (xs_gpu_same_binding(&p->bind, &g->bind) && p->used != UINT64_MAX)
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		void *host = NULL;
		xs_gpu_err err = p ? xs_gpu_host_alloc_mapped(&host, XS__GATE_PAGE) : XS_GPU_OK;
		if (!p || err != XS_GPU_OK) {
			xs_mutex_unlock(&xs__gate_lock);
			free(p);
			if (err != XS_GPU_OK)
				xs__fail("pinned mapped allocation of the gate page", g->stream,
					 err);
			return kXSchedErrorUnknown;
		}
		p->bind = g->bind;
		p->host = host;
		p->next = xs__gate_pages;
		xs__gate_pages = p;
	}
	int slot = 0;
	while (p->used & (UINT64_C(1) << slot))
		slot++;
	p->used |= UINT64_C(1) << slot;
	xs_mutex_unlock(&xs__gate_lock);

	g->gate_page = p;
	g->gate = (_Atomic uint32_t *)(void *)(p->host + slot * XS__GATE_SLOT);
	atomic_init(g->gate, XS__GATE_OPEN);
	xs_gpu_err err = xs_gpu_host_get_device_pointer(&g->gate_dev, (void *)g->gate);
	if (err != XS_GPU_OK)
		return xs__fail("device address of the gate", g->stream, err);
	return kXSchedSuccess;
}

static void xs__gate_give(xs__gpu_q *g)
{
	if (!g->gate_page)
		return;
	size_t slot = (size_t)((char *)(void *)g->gate - g->gate_page->host) / XS__GATE_SLOT;
	xs_mutex_lock(&xs__gate_lock);
	g->gate_page->used &= ~(UINT64_C(1) << slot);
	xs_mutex_unlock(&xs__gate_lock);
	g->gate_page = NULL;
	g->gate = NULL;
}

/* One store to the gate. Release orders the caller's earlier writes before it (a kernel
 * gated behind it may read what the host wrote before opening). The memory is ordinary
 * cached host memory that the device reads coherently over the bus, so no cache flush is
 * needed; the full fence then drains the store buffer at once rather than whenever the
 * core gets to it, so the device sees the new value within the bus latency. On AArch64
 * the fence must reach the outer-shareable domain, where the device sits. */
static void xs__gate_store(xs__gpu_q *g, uint32_t v)
{
	atomic_store_explicit(g->gate, v, memory_order_release);
#if defined(__aarch64__)
	__asm__ volatile("dmb osh" ::: "memory");
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
}

static void xs__gate_close(xs_hwq *q)
{
	xs__gate_store(xs__gq(q), XS__GATE_CLOSED);
}

static void xs__gate_open(xs_hwq *q)
{
	xs__gate_store(xs__gq(q), XS__GATE_OPEN);
}

/* ---- the event pool (completion points) ---- */

static XResult xs__pool_get(xs__gpu_q *g, xs_gpu_event *ev)
{
	xs_mutex_lock(&g->pool_lock);
	if (g->pool_n) {
		*ev = g->pool[--g->pool_n];
		xs_mutex_unlock(&g->pool_lock);
		return kXSchedSuccess;
	}
	xs_mutex_unlock(&g->pool_lock);
	xs_gpu_err err = xs_gpu_event_create(ev, g->event_flags);
	if (err != XS_GPU_OK)
		return xs__fail("event creation", g->stream, err);
	return kXSchedSuccess;
}

static void xs__pool_put(xs__gpu_q *g, xs_gpu_event ev)
{
	xs_mutex_lock(&g->pool_lock);
	if (g->pool_n == g->pool_cap) {
		size_t cap = g->pool_cap ? g->pool_cap * 2 : 8;
		xs_gpu_event *p = realloc(g->pool, cap * sizeof(*p));
		if (!p) {
			xs_mutex_unlock(&g->pool_lock);
			xs_gpu_event_destroy(ev);
			return;
		}
		g->pool = p;
		g->pool_cap = cap;
	}
	g->pool[g->pool_n++] = ev;
	xs_mutex_unlock(&g->pool_lock);
}

/* ---- the vtable ---- */

static XResult xs__thread_init(xs_hwq *q)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_err err = xs_gpu_bind(&g->bind);
	if (err != XS_GPU_OK)
		return xs__fail("binding a library thread to the stream's context", g->stream, err);
	return kXSchedSuccess;
}

static bool xs__supports(xs_hwq *q, enum xs_cmd_kind kind)
{
	(void)q;
	return kind < XS_CMD_KIND_COUNT;
}

/* Runs on a runtime thread when the stream reaches a host-function command. The XQueue
 * holds the command until a completion point after it, which the stream passes only
 * after this returns, so the completer reads the result after it is written. */
static void xs__host_tramp(XS_GPU_HOST_FN_PARAMS)
{
	XS_GPU_HOST_FN_UNUSED();
	xs_cmd *cmd = data;
	XResult res = cmd->u.host.fn(cmd->u.host.data);
	if (res != kXSchedSuccess)
		cmd->result = res;
}

static void xs__rec_event_free(void *native)
{
	xs__rec_event *r = native;
	xs_gpu_binding saved;
	xs_gpu_err err = xs__bind_save(&r->bind, &saved);
	if (err == XS_GPU_OK) {
		xs_gpu_event_destroy(r->ev);
		xs__restore(&saved);
	} else {
		XS_WARN("hal", "cannot bind the context of an event record to free it: %s",
			xs_gpu_err_string(err));
	}
	free(r);
}

static XResult xs__launch_record(xs__gpu_q *g, xs_cmd *cmd)
{
	xs__rec_event *r = cmd->u.record.native;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return kXSchedErrorUnknown;
		xs_gpu_err err = xs_gpu_event_create(&r->ev, XS_GPU_EVENT_DISABLE_TIMING);
		if (err != XS_GPU_OK) {
			free(r);
			return xs__fail("event creation for an event record", g->stream, err);
		}
		r->bind = g->bind;
		cmd->u.record.native_free = xs__rec_event_free;
		cmd->u.record.native = r;
	}
	xs_gpu_err err = xs_gpu_event_record(r->ev, g->stream);
	if (err != XS_GPU_OK)
		return xs__fail("event record", g->stream, err);
	return kXSchedSuccess;
}

static XResult xs__launch(xs_hwq *q, xs_cmd *cmd, bool gated)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_err err = XS_GPU_OK;
	const char *what = NULL;
	if (!gated || !g->gate) {
		g->since_gate = 0; /* the first gated command after Lv1 gets a check */
	} else if (cmd->kind != XS_CMD_EVENT_RECORD) {
		if (g->since_gate == 0) {
			err = xs_gpu_wait_value_geq(g->stream, g->gate_dev, XS__GATE_OPEN);
			if (err != XS_GPU_OK)
				return xs__fail("gate check (stream wait-value)", g->stream, err);
		}
		if (++g->since_gate >= g->gate_every)
			g->since_gate = 0;
	}
	switch (cmd->kind) {
	case XS_CMD_CALLBACK:
		return cmd->u.callback.fn((HwQueueHandle)(uintptr_t)g->stream,
					  cmd->u.callback.data);
	case XS_CMD_HOST_FUNC:
		what = "host function launch";
		err = xs_gpu_launch_host_func(g->stream, xs__host_tramp, cmd);
		break;
	case XS_CMD_KERNEL:
		what = "kernel launch";
		err = xs_gpu_launch_kernel(cmd->u.kernel.func, cmd->u.kernel.grid,
					   cmd->u.kernel.block, cmd->u.kernel.args,
					   cmd->u.kernel.shared_mem_bytes, g->stream);
		break;
	case XS_CMD_MODULE_KERNEL:
		what = "module kernel launch";
		err = xs_gpu_module_launch(cmd->u.kernel.func, cmd->u.kernel.grid,
					   cmd->u.kernel.block, cmd->u.kernel.shared_mem_bytes,
					   g->stream, cmd->u.kernel.args);
		break;
	case XS_CMD_MEMCPY:
		what = "asynchronous copy";
		err = xs_gpu_memcpy_async(cmd->u.memcpy.dst, cmd->u.memcpy.src, cmd->u.memcpy.bytes,
					  g->stream);
		break;
	case XS_CMD_MEMSET:
		what = "asynchronous fill";
		err = xs_gpu_memset_async(cmd->u.memset.dst, cmd->u.memset.value,
					  cmd->u.memset.bytes, g->stream);
		break;
	case XS_CMD_EVENT_RECORD:
		return xs__launch_record(g, cmd);
	case XS_CMD_EVENT_WAIT: {
		const xs_cmd *rec = cmd->u.wait.record;
		const xs__rec_event *r = rec->u.record.native;
		if (rec->u.record.ops != &xs__gpu_ops || !r)
			return kXSchedSuccess; /* the core waited for its completion */
		what = "event wait";
		err = xs_gpu_stream_wait_event(g->stream, r->ev);
		break;
	}
	default:
		return kXSchedErrorNotSupported;
	}
	if (err != XS_GPU_OK) {
		xs_gpu_clear_error(); /* a launch error is not sticky: keep the stream usable */
		return xs__fail(what, g->stream, err);
	}
	return kXSchedSuccess;
}

static XResult xs__sync_create(xs_hwq *q, xs_sync *s)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_event ev;
	XResult res = xs__pool_get(g, &ev);
	if (res != kXSchedSuccess)
		return res;
	xs_gpu_err err = xs_gpu_event_record(ev, g->stream);
	if (err != XS_GPU_OK) {
		xs__pool_put(g, ev);
		return xs__fail("event record for a completion point", g->stream, err);
	}
	s->native = (void *)ev;
	return kXSchedSuccess;
}

static XResult xs__sync_wait(xs_hwq *q, xs_sync *s)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_err err = xs_gpu_event_sync((xs_gpu_event)s->native);
	if (err != XS_GPU_OK)
		return xs__fail("wait for a completion point", g->stream, err);
	return kXSchedSuccess;
}

static void xs__sync_destroy(xs_hwq *q, xs_sync *s)
{
	xs__pool_put(xs__gq(q), (xs_gpu_event)s->native);
	s->native = NULL;
}

static XResult xs__sync_all(xs_hwq *q)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_err err = xs_gpu_stream_sync(g->stream);
	if (err != XS_GPU_OK)
		return xs__fail("stream synchronization", g->stream, err);
	return kXSchedSuccess;
}

/* Free the backend's state on the calling thread, binding the stream's context for it. */
static void xs__release(xs__gpu_q *g)
{
	xs_gpu_binding saved;
	xs_gpu_err err = xs__bind_save(&g->bind, &saved);
	if (err != XS_GPU_OK)
		XS_WARN("hal", "cannot bind the context of %s stream %p to free its events: %s",
			XS_GPU_NAME, (void *)g->stream, xs_gpu_err_string(err));
	for (size_t i = 0; i < g->pool_n; i++)
		if (err == XS_GPU_OK)
			xs_gpu_event_destroy(g->pool[i]);
	g->pool_n = 0;
	if (err == XS_GPU_OK)
		xs__restore(&saved);
	if (g->gate)
		xs__gate_store(g, XS__GATE_OPEN);
	xs__gate_give(g);
}

/* Live HwQueues of this runtime with an Lv2 gate, to warn when there are more than the
 * hardware queues their streams are spread over (see xs__count_gated). */
static atomic_uint xs__gated_live;

/* Count a new gated HwQueue; warn once it makes more of them than hardware queues
 * (XS_GPU_HWQ_ENV, default XS_GPU_HWQ_DEFAULT): then two gated streams may share a
 * hardware queue, and a closed gate would also stall the other one. */
static void xs__count_gated(void *stream)
{
	unsigned n = atomic_fetch_add_explicit(&xs__gated_live, 1, memory_order_relaxed) + 1;
	const char *env = getenv(XS_GPU_HWQ_ENV);
	long limit = env && *env ? strtol(env, NULL, 10) : XS_GPU_HWQ_DEFAULT;
	if (limit > 0 && n > (unsigned long)limit)
		XS_WARN("hal",
			"%s stream %p is HwQueue %u with an Lv2 gate, but streams are spread over "
			"%ld hardware queues (" XS_GPU_HWQ_ENV "): a suspended queue may stall "
			"another that shares its hardware queue; raise " XS_GPU_HWQ_ENV
			" before the first runtime call, or use Lv1 for some queues",
			XS_GPU_NAME, stream, n, limit);
}

static void xs__destroy(xs_hwq *q)
{
	if (q->max_level >= kPreemptLevelDeactivate)
		atomic_fetch_sub_explicit(&xs__gated_live, 1, memory_order_relaxed);
#if defined(XS_GPU_HIP_LV3)
	xs_lv3_detach(xs__gq(q)->lv3); /* KFD blocks destroying a suspended queue */
	xs__gq(q)->lv3 = NULL;
#endif
	xs__release(xs__gq(q));
}

#if defined(XS_GPU_HIP_LV3)
/* Lv3 (CWSR through KFD). lv3.c logs a failure once and falls back to the closed gate, so
 * both report success. */
static XResult xs__lv3_interrupt(xs_hwq *q)
{
	xs_lv3_interrupt(xs__gq(q)->lv3);
	return kXSchedSuccess;
}

static XResult xs__lv3_restore(xs_hwq *q)
{
	xs_lv3_restore(xs__gq(q)->lv3);
	return kXSchedSuccess;
}
#endif

static void xs__free(xs_obj *obj)
{
	xs__gpu_q *g = (xs__gpu_q *)obj;
	xs_mutex_destroy(&g->pool_lock);
	free(g->pool);
	free(g);
}

static const xs_hal_ops xs__gpu_ops = {
    .name = XS_GPU_NAME,
    .thread_init = xs__thread_init,
    .supports = xs__supports,
    .launch = xs__launch,
    .sync_create = xs__sync_create,
    .sync_wait = xs__sync_wait,
    .sync_destroy = xs__sync_destroy,
    .sync_all = xs__sync_all,
    .gate_close = xs__gate_close,
    .gate_open = xs__gate_open,
#if defined(XS_GPU_HIP_LV3)
    .interrupt = xs__lv3_interrupt,
    .restore = xs__lv3_restore,
#endif
    .destroy = xs__destroy,
};

/* The Lv2 probe, with the stream's context bound: the device's attribute, a gate, and
 * one wait-value on the stream against the open gate that completes. */
static int xs__probe_level(xs__gpu_q *g)
{
	int ok = 0;
	xs_gpu_err err = xs_gpu_wait_value_supported(&ok);
	if (err != XS_GPU_OK || !ok) {
		XS_INFO("hal", "%s stream %p: no stream wait-value on this device (%s): Lv1 only",
			XS_GPU_NAME, (void *)g->stream,
			err != XS_GPU_OK ? xs_gpu_err_string(err) : "attribute is 0");
		return kPreemptLevelBlock;
	}
	if (xs__gate_take(g) != kXSchedSuccess) {
		xs__gate_give(g);
		return kPreemptLevelBlock;
	}
	xs_gpu_event ev;
	if (xs__pool_get(g, &ev) != kXSchedSuccess) {
		xs__gate_give(g);
		return kPreemptLevelBlock;
	}
	const char *what = "stream wait-value";
	err = xs_gpu_wait_value_geq(g->stream, g->gate_dev, XS__GATE_OPEN);
	if (err == XS_GPU_OK) {
		what = "event record after the wait-value";
		err = xs_gpu_event_record(ev, g->stream);
	}
	if (err == XS_GPU_OK) {
		/* Also waits for what the application queued on the stream before. */
		what = "wait for the wait-value";
		err = xs_gpu_event_sync(ev);
	}
	xs__pool_put(g, ev);
	if (err != XS_GPU_OK) {
		xs_gpu_clear_error();
		XS_INFO("hal", "%s stream %p: Lv2 probe failed at %s: %s (%s): Lv1 only",
			XS_GPU_NAME, (void *)g->stream, what, xs_gpu_err_name(err),
			xs_gpu_err_string(err));
		xs__gate_give(g);
		return kPreemptLevelBlock;
	}
	return kPreemptLevelDeactivate;
}

XResult XS_GPU_QUEUE_CREATE(HwQueueHandle *hwq, void *stream)
{
	if (!hwq) {
		XS_WARN("hal", XS_GPU_CREATE_NAME ": hwq is null");
		return kXSchedErrorInvalidValue;
	}
	xs_gpu_stream s = (xs_gpu_stream)stream;
	if (xs_gpu_is_default_stream(s)) {
		XS_WARN("hal",
			XS_GPU_CREATE_NAME ": %p is a default stream (null, legacy or "
					   "per-thread); its implicit synchronization with "
					   "other streams would defeat preemption",
			stream);
		return kXSchedErrorInvalidValue;
	}
	xs_obj *dup = xs_handle_get((uint64_t)(uintptr_t)stream, XS_KIND_HWQUEUE);
	if (dup) {
		xs_obj_unref(dup);
		XS_WARN("hal", XS_GPU_CREATE_NAME ": stream %p is already a HwQueue", stream);
		return kXSchedErrorNotAllowed;
	}
	const char *missing;
	xs_gpu_err err = xs_gpu_runtime_init(&missing);
	if (err != XS_GPU_OK) {
		XS_WARN("hal", XS_GPU_CREATE_NAME ": no usable %s driver%s%s: %s (%s)", XS_GPU_NAME,
			missing ? " entry point " : "", missing ? missing : "",
			xs_gpu_err_name(err), xs_gpu_err_string(err));
		return xs_gpu_err_is_no_driver(err) ? kXSchedErrorNotSupported
						    : kXSchedErrorHardware;
	}

	xs__gpu_q *g = calloc(1, sizeof(*g));
	if (!g)
		return kXSchedErrorUnknown;
	g->stream = s;
	xs_mutex_init(&g->pool_lock);
	const char *mode = getenv("XSCHED_GPU_SYNC");
	if (!mode || !*mode)
		mode = "block";
	bool spin = !strcmp(mode, "spin");
	if (!spin && strcmp(mode, "block")) {
		XS_WARN("hal", "XSCHED_GPU_SYNC=%s is not block or spin; using block", mode);
		mode = "block";
	}
	g->event_flags = XS_GPU_EVENT_DISABLE_TIMING | (spin ? 0 : XS_GPU_EVENT_BLOCKING_SYNC);
	const char *every = getenv("XSCHED_GATE_EVERY");
	long n = every ? strtol(every, NULL, 10) : 1;
	g->gate_every = n >= 1 && n <= 1024 ? (unsigned)n : 1;

	err = xs_gpu_stream_binding(s, &g->bind);
	if (err != XS_GPU_OK) {
		xs_mutex_destroy(&g->pool_lock);
		free(g);
		return xs__fail(XS_GPU_CREATE_NAME ": looking up the stream's context", s, err);
	}
	xs_gpu_binding saved;
	err = xs__bind_save(&g->bind, &saved);
	if (err != XS_GPU_OK) {
		xs_mutex_destroy(&g->pool_lock);
		free(g);
		return xs__fail(XS_GPU_CREATE_NAME ": binding the stream's context", s, err);
	}
	unsigned int flags = 0;
	err = xs_gpu_stream_get_flags(s, &flags);
	if (err != XS_GPU_OK) {
		xs__restore(&saved);
		xs_mutex_destroy(&g->pool_lock);
		free(g);
		return xs__fail(XS_GPU_CREATE_NAME ": reading the stream's flags", s, err);
	}
	if (!(flags & XS_GPU_STREAM_NON_BLOCKING))
		XS_INFO("hal",
			"%s stream %p is a blocking stream: work on the legacy default "
			"stream still serializes with it",
			XS_GPU_NAME, stream);
	int level = xs__probe_level(g);
#if defined(XS_GPU_HIP_LV3)
	/* Lv3 needs Lv2 (the gate holds what the interrupt let through) and the stream's
	 * own hardware queue; hip_ring and lv3 each log their own failure line. */
	if (level == kPreemptLevelDeactivate) {
		uint64_t ring = 0;
		char name[48];
		snprintf(name, sizeof(name), "HIP stream %p", stream);
		if (xs_hip_stream_ring_base(stream, &ring) == kXSchedSuccess &&
		    xs_lv3_attach(&g->lv3, ring, level, name) == kXSchedSuccess)
			level = kPreemptLevelInterrupt;
	}
#endif
	xs__restore(&saved);
	if (level >= kPreemptLevelDeactivate)
		xs__count_gated(stream);
	if (level >= kPreemptLevelDeactivate && !getenv(XS_GPU_HWQ_ENV))
		XS_INFO("hal",
			"%s stream %p has Lv2, but " XS_GPU_HWQ_ENV " is not set: streams "
			"share a few hardware queues, and a closed gate holds back every "
			"stream of its queue; set it (CUDA: 32) before the first runtime call",
			XS_GPU_NAME, stream);

	xs_hwq_init(&g->base, &xs__gpu_ops, level, stream, xs__free);
	XS_DEBUG("hal",
		 "%s stream %p: completion waits %s, a gate check every %u gated "
		 "commands",
		 XS_GPU_NAME, stream, mode, g->gate_every);
	return xs_hwq_publish(&g->base, (uint64_t)(uintptr_t)stream, hwq);
}
