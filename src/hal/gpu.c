/* The GPU backend: one source, built once per runtime (-DXS_GPU_CUDA with gpu_cuda.h,
 * -DXS_GPU_HIP with gpu_hip.h), which map the runtime calls to xs_gpu_* names.
 *
 * A HwQueue wraps an application-owned stream; its handle is the stream pointer. The
 * library never creates or destroys a context and never synchronizes a whole device: its
 * own threads bind the stream's context (CUDA) or device (HIP) in thread_init, and any
 * other thread that must call the runtime here (creation, destroy, hardware priority)
 * binds it for the call and then restores what the thread had.
 *
 * Runtimes: CUDA is the driver API (libcuda.so.1), HIP is libamdhip64, each opened at the
 * first queue of its kind (gpu_cuda.h, hip_api.h); the library links neither.
 *
 * Commands: kernels (HIP: hipLaunchKernel on the copied arguments; CUDA: the runtime
 * function pointer resolved to a CUfunction by the process's shared libcudart, then
 * cuLaunchKernel), module kernels (cuLaunchKernel/hipModuleLaunchKernel), copies and
 * fills, launch callbacks
 * (called on the enqueuing thread with the stream), host functions (the runtime's
 * launch-host-func, through a trampoline that stores their result), event records (an
 * event of the library's, made at the first launch, without timing) and event waits
 * (cuStreamWaitEvent; a record of another backend has already completed when the
 * engine enqueues the wait, so nothing is enqueued then).
 *
 * Counter and done number (hal.h): two words of a 128-byte slot (one cache line each) in
 * pinned host memory mapped into the device, from a page shared by the queues of one
 * context, so that no queue's destroy frees pinned memory (that would synchronize the
 * device). Before each gated command the stream waits until counter >= seq
 * (cuStreamWaitValue32 GEQ, which compares wrap-safe in 32 bits, per the CUDA driver API
 * reference; HIP: hipStreamWaitValue64, unsigned, below 2^63); after each command it
 * writes seq into the done word (cuStreamWriteValue32 / hipStreamWriteValue64, with the
 * default memory barrier, so the command's writes are visible first). CUDA's 32-bit
 * done word is widened here to the engine's 64-bit numbers (xs__done). A stream without
 * stream memory operations (Lv1 only) gets its done marks from a host function instead.
 *
 * Waiting: there is no wait_done; the engine reads the done word (done) on the waiting
 * thread, sleeping until the command is expected to end, and asks the stream for faults
 * (check) while it waits (a fault stops the stream, so the number would never come).
 *
 * Hardware priority (CUDA): set_priority gives the stream the device's greatest or least
 * priority with cuStreamSetAttribute(CU_STREAM_ATTRIBUTE_PRIORITY), which takes effect on
 * an existing stream (measured on an H100, doc/RESULTS.md); the stream's own priority is
 * read at creation and restored at destroy. HIP (ROCm 5.2-6.x) has no call that changes
 * an existing stream's priority: there the application creates its streams with
 * hipStreamCreateWithPriority.
 *
 * A wait-value blocks the hardware queue (CUDA connection, HSA queue) its stream is
 * mapped to; streams beyond CUDA_DEVICE_MAX_CONNECTIONS / GPU_MAX_HW_QUEUES share them,
 * so a decommitted stream could hold back another. Each queue says how many there are
 * (xs_hwq.hw_queues); the engine enqueues no gated command on a device with more XQueues
 * than that (preempt/device.c).
 *
 * Capability probe at creation, per stream: Lv1 always; Lv2 when the device reports
 * stream wait-value support and one wait-value and one write-value on the stream
 * complete. Lv3 (HIP builds with hipcc, XS_GPU_HIP_LV3): ring_base finds the stream's
 * hardware queue (hip_ring.c); preempt/lv3.c attaches and probes it.
 *
 * Errors: every runtime status is mapped to an XResult here and logged (topic "hal") with
 * the runtime's own name and text for it. A failed launch is reported on its command and
 * leaves the stream usable (the runtime's last error is cleared).
 *
 * Locks: xs__g.slot_lock guards the slot pages; xs__fc.lock (CUDA, gpu_cuda.h) the resolved
 * kernels. Leaves, never held across a runtime call that waits for the device.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/log.h"
#include "core/thread.h"
#include "hal/hal.h"
#if defined(XS_GPU_HIP_LV3)
#include "hal/hip_ring.h"
#endif

#if defined(XS_GPU_CUDA)
#include "hal/gpu_cuda.h"
#elif defined(XS_GPU_HIP)
#include "hal/gpu_hip.h"
#else
#error "build gpu.c with -DXS_GPU_CUDA or -DXS_GPU_HIP"
#endif

enum {
	XS__SLOT = 128,    /* bytes per queue: the counter and run gate, then the done word */
	XS__GATE_OFF = 8,  /* the run gate's offset in its slot (host-written, as the counter) */
	XS__DONE_OFF = 64, /* the done word's offset in its slot */
	XS__PAGE = 4096,   /* bytes per page of slots */
	XS__SLOTS_PER_PAGE = XS__PAGE / XS__SLOT,
};

/* A page of slots, pinned and mapped, for one context (CUDA) or device (HIP). Pages are
 * never freed: they live until the process exits. */
typedef struct xs__page {
	struct xs__page *next;
	xs_gpu_binding bind;
	char *host;    /* host address of slot 0 */
	uint64_t used; /* bit i: slot i is taken */
} xs__page;

/* The backend's process-wide state, one struct (xs__g). */
static struct xs__gpu {
	xs_mutex slot_lock; /* guards pages and each page's used bits. A leaf. */
	xs__page *pages;
	atomic_bool told_lazy, told_hwq; /* advice logged once per process, not per stream */
} xs__g = {.slot_lock = XS_MUTEX_INITIALIZER};

typedef struct xs__gpu_q {
	xs_hwq base;
	xs_gpu_stream stream;
	xs_gpu_binding bind;
	bool memops;    /* stream wait/write-value work: counter and done word on the device */
	int own_prio;   /* the stream's priority at creation, restored at destroy */
	xs__page *page; /* the slot's page */
	_Atomic uint64_t *counter; /* host address of the counter */
	_Atomic uint64_t *done;    /* host address of the done word */
	_Atomic uint64_t *gate;    /* host address of the run gate: 1 open, 0 closed */
	void *counter_dev, *done_dev, *gate_dev; /* their device addresses */
	_Atomic uint64_t done64;      /* the widest done number seen (XS_GPU_COUNTER_BITS 32) */
	int pool;                     /* xs_gpu_stream_pool at creation (Lv2 queues) */
	void *sig_counter, *sig_gate; /* signal memory holding them instead (HIP CP wait) */
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
	XS_FAIL("hal", "%s on %s stream %p failed: %s (%s)", what, XS_GPU_NAME, (void *)s,
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

/* ---- slots: counter and done word ---- */

/* Move the counter and the run gate to signal memory, where the command processor can
 * wait on them (gpu_hip.h). On failure they stay in the page: the probe then finds out
 * whether the runtime accepts them. */
static void xs__signal_words(xs__gpu_q *g)
{
	xs_gpu_err err = xs_gpu_signal_alloc(&g->sig_counter);
	if (err == XS_GPU_OK)
		err = xs_gpu_signal_alloc(&g->sig_gate);
	if (err != XS_GPU_OK) {
		xs__fail("signal memory for the counter (GPU_STREAMOPS_CP_WAIT=1)", g->stream, err);
		xs_gpu_signal_free(g->sig_counter);
		g->sig_counter = NULL;
		return;
	}
	g->counter = g->sig_counter;
	g->gate = g->sig_gate;
	atomic_init(g->counter, 0);
	atomic_init(g->gate, 1);
	g->counter_dev = g->sig_counter;
	g->gate_dev = g->sig_gate;
}

/* Take a slot in a page of the bound context (the caller has bound g->bind). */
static XResult xs__slot_take(xs__gpu_q *g)
{
	xs_mutex_lock(&xs__g.slot_lock);
	xs__page *p = xs__g.pages;
	const uint64_t full = (UINT64_C(1) << XS__SLOTS_PER_PAGE) - 1;
	for (; p; p = p->next)
		if (xs_gpu_same_binding(&p->bind, &g->bind) && p->used != full)
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		void *host = NULL;
		xs_gpu_err err = p ? xs_gpu_host_alloc_mapped(&host, XS__PAGE) : XS_GPU_OK;
		if (!p || err != XS_GPU_OK) {
			xs_mutex_unlock(&xs__g.slot_lock);
			free(p);
			if (err != XS_GPU_OK)
				xs__fail("pinned mapped allocation of the slot page", g->stream,
					 err);
			return kXSchedErrorUnknown;
		}
		p->bind = g->bind;
		p->host = host;
		p->next = xs__g.pages;
		xs__g.pages = p;
	}
	int slot = 0;
	while (p->used & (UINT64_C(1) << slot))
		slot++;
	p->used |= UINT64_C(1) << slot;
	xs_mutex_unlock(&xs__g.slot_lock);

	g->page = p;
	char *base = p->host + slot * XS__SLOT;
	g->counter = (_Atomic uint64_t *)(void *)base;
	g->done = (_Atomic uint64_t *)(void *)(base + XS__DONE_OFF);
	g->gate = (_Atomic uint64_t *)(void *)(base + XS__GATE_OFF);
	atomic_init(g->counter, 0);
	atomic_init(g->done, 0);
	atomic_init(g->gate, 1);
	xs_gpu_err err = xs_gpu_host_get_device_pointer(&g->counter_dev, (void *)g->counter);
	if (err == XS_GPU_OK)
		err = xs_gpu_host_get_device_pointer(&g->done_dev, (void *)g->done);
	if (err == XS_GPU_OK)
		err = xs_gpu_host_get_device_pointer(&g->gate_dev, (void *)g->gate);
	if (err != XS_GPU_OK)
		return xs__fail("device address of the counter", g->stream, err);
	if (XS_GPU_WANTS_SIGNAL_MEMORY(xs_config_get()))
		xs__signal_words(g);
	return kXSchedSuccess;
}

static void xs__slot_give(xs__gpu_q *g)
{
	if (!g->page)
		return;
	xs_gpu_signal_free(g->sig_counter);
	xs_gpu_signal_free(g->sig_gate);
	size_t slot = (size_t)((char *)(void *)g->done - XS__DONE_OFF - g->page->host) / XS__SLOT;
	xs_mutex_lock(&xs__g.slot_lock);
	g->page->used &= ~(UINT64_C(1) << slot);
	xs_mutex_unlock(&xs__g.slot_lock);
	g->page = NULL;
}

/* One store to a word the device reads. Release orders the caller's earlier writes before
 * it (a kernel behind the counter may read what the host wrote before committing). The
 * memory is ordinary cached host memory that the device reads coherently over the bus,
 * so no cache flush is needed; the full fence then drains the store buffer at once
 * rather than whenever the core gets to it, so the device sees the new value within the
 * bus latency. On AArch64 the fence must reach the outer-shareable domain, where the
 * device sits. */
static void xs__store(_Atomic uint64_t *w, uint64_t v)
{
	atomic_store_explicit(w, v, memory_order_release);
#if defined(__aarch64__)
	__asm__ volatile("dmb osh" ::: "memory");
#else
	atomic_thread_fence(memory_order_seq_cst);
#endif
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
#ifndef XS_GPU_CUDA
	if (kind == XS_CMD_RESOLVED_KERNEL)
		return false; /* a CUDA kernel's resolver */
#endif
	return kind < XS_CMD_KIND_COUNT;
}

/* A host function's call on the runtime's thread: the queue (to say which queue's command
 * runs there) and the command. Freed by the trampoline. */
typedef struct xs__host_call {
	xs__gpu_q *g;
	xs_cmd *cmd;
} xs__host_call;

/* Runs on a runtime thread when the stream reaches a host-function command. The engine
 * holds the command until the done mark after it, which the stream passes only after this
 * returns, so the result is written before the command completes. */
static void xs__host_tramp(XS_GPU_HOST_FN_PARAMS)
{
	XS_GPU_HOST_FN_UNUSED();
	xs__host_call *c = data;
	xs_hal_set_running(&c->g->base, c->cmd->seq);
	XResult res = c->cmd->u.host.fn(c->cmd->u.host.data);
	xs_hal_set_running(NULL, 0);
	if (res != kXSchedSuccess)
		c->cmd->result = res;
	free(c);
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

/* Clear a failed launch's error (not sticky: the stream stays usable) and log it. */
static XResult xs__launch_failed(const char *what, xs__gpu_q *g, xs_gpu_err err)
{
	xs_gpu_clear_error();
	return xs__fail(what, g->stream, err);
}

/* A host function: its trampoline on the stream. */
static XResult xs__launch_host_func(xs__gpu_q *g, xs_cmd *cmd)
{
	xs__host_call *c = malloc(sizeof(*c));
	if (!c)
		return kXSchedErrorUnknown;
	c->g = g;
	c->cmd = cmd;
	xs_gpu_err err = xs_gpu_launch_host_func(g->stream, xs__host_tramp, c);
	if (err == XS_GPU_OK)
		return kXSchedSuccess;
	free(c);
	return xs__launch_failed("host function launch", g, err);
}

/* A kernel: by function (XS_CMD_KERNEL), resolved (CUDA) or from a module. */
static XResult xs__launch_kernel(xs__gpu_q *g, xs_cmd *cmd)
{
	const char *what = "kernel launch";
	xs_gpu_err err;
	switch (cmd->kind) {
	case XS_CMD_KERNEL:
		err = xs_gpu_launch_kernel(cmd->u.kernel.func, cmd->u.kernel.grid,
					   cmd->u.kernel.block, cmd->u.kernel.args,
					   cmd->u.kernel.shared_mem_bytes, g->stream, &g->bind);
#if defined(XS_GPU_KERNEL_UNRESOLVED)
		if (err == XS_GPU_KERNEL_UNRESOLVED)
			return kXSchedErrorNotSupported; /* logged with its remedy */
#endif
		break;
#ifdef XS_GPU_CUDA
	case XS_CMD_RESOLVED_KERNEL:
		err = xs_gpu_launch_resolved(cmd->u.kernel.func, cmd->u.kernel.resolve,
					     cmd->u.kernel.grid, cmd->u.kernel.block,
					     cmd->u.kernel.args, cmd->u.kernel.shared_mem_bytes,
					     g->stream, &g->bind);
		if (err == XS_GPU_KERNEL_UNRESOLVED)
			return kXSchedErrorInvalidValue; /* logged */
		break;
#endif
	default: /* XS_CMD_MODULE_KERNEL */
		what = "module kernel launch";
		err = xs_gpu_module_launch(cmd->u.kernel.func, cmd->u.kernel.grid,
					   cmd->u.kernel.block, cmd->u.kernel.shared_mem_bytes,
					   g->stream, cmd->u.kernel.args);
		break;
	}
	return err == XS_GPU_OK ? kXSchedSuccess : xs__launch_failed(what, g, err);
}

/* An event wait: on the record's event where the record went to a GPU stream. */
static XResult xs__launch_wait(xs__gpu_q *g, xs_cmd *cmd)
{
	const xs_cmd *rec = cmd->u.wait.record;
	const xs__rec_event *r = rec->u.record.native;
	if (rec->u.record.ops != &xs__gpu_ops || !r)
		return kXSchedSuccess; /* the core waited for its completion */
	xs_gpu_err err = xs_gpu_stream_wait_event(g->stream, r->ev);
	return err == XS_GPU_OK ? kXSchedSuccess : xs__launch_failed("event wait", g, err);
}

/* Launch @cmd itself on the stream. */
static XResult xs__launch(xs__gpu_q *g, xs_cmd *cmd)
{
	xs_gpu_err err;
	const char *what;
	switch (cmd->kind) {
	case XS_CMD_CALLBACK:
	case XS_CMD_INLINE:
		if (!cmd->u.callback.fn)
			return kXSchedSuccess; /* a boundary: the gate and the done mark alone */
		return cmd->u.callback.fn((HwQueueHandle)(uintptr_t)g->stream,
					  cmd->u.callback.data);
	case XS_CMD_HOST_FUNC:
		return xs__launch_host_func(g, cmd);
	case XS_CMD_KERNEL:
#ifdef XS_GPU_CUDA
	case XS_CMD_RESOLVED_KERNEL:
#endif
	case XS_CMD_MODULE_KERNEL:
		return xs__launch_kernel(g, cmd);
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
	case XS_CMD_EVENT_WAIT:
		return xs__launch_wait(g, cmd);
	default:
		return kXSchedErrorNotSupported;
	}
	return err == XS_GPU_OK ? kXSchedSuccess : xs__launch_failed(what, g, err);
}

/* The done mark of a stream without memory operations: a host function. */
typedef struct xs__mark_arg {
	xs__gpu_q *g;
	uint64_t seq;
} xs__mark_arg;

static void xs__mark_tramp(XS_GPU_HOST_FN_PARAMS)
{
	XS_GPU_HOST_FN_UNUSED();
	xs__mark_arg *m = data;
	xs__store(m->g->done, m->seq);
	free(m);
}

/* Enqueue the done mark of @seq (a stream write-value, or a host function where the
 * stream has no memory operations). */
static xs_gpu_err xs__mark(xs__gpu_q *g, uint64_t seq)
{
	if (g->memops)
		return xs_gpu_write_done(g->stream, g->done_dev, seq);
	xs__mark_arg *m = malloc(sizeof(*m));
	if (!m)
		return (xs_gpu_err)1;
	m->g = g;
	m->seq = seq;
	xs_gpu_err err = xs_gpu_launch_host_func(g->stream, xs__mark_tramp, m);
	if (err != XS_GPU_OK)
		free(m);
	return err;
}

/* A done mark could not be enqueued: numbers would stall, so the queue is broken (hal.h,
 * "Failure"). */
static XResult xs__mark_failed(xs_hwq *q, xs_gpu_err err)
{
	xs_gpu_clear_error();
	atomic_store_explicit(&q->broken, true, memory_order_relaxed);
	return xs__fail("done mark (stream write-value)", xs__gq(q)->stream, err);
}

static XResult xs__enqueue(xs_hwq *q, xs_cmd *cmd, uint64_t seq, unsigned flags)
{
	xs__gpu_q *g = xs__gq(q);
	XResult res = kXSchedSuccess;
	xs_gpu_err err = XS_GPU_OK;
	bool gated = (flags & XS_ENQ_GATED) && cmd;
	bool mark = (flags & XS_ENQ_MARK) || !cmd || !g->memops;
	if ((flags & XS_ENQ_MARK_PREV) && g->memops) {
		/* The previous command's mark and this one's counter wait: one call where the
		 * runtime batches memory operations. */
		err = gated ? xs_gpu_write_then_wait(g->stream, g->done_dev, seq - 1,
						     g->counter_dev, seq)
			    : xs_gpu_write_done(g->stream, g->done_dev, seq - 1);
		if (err != XS_GPU_OK)
			return xs__mark_failed(q, err);
		gated = false; /* done */
	}
	if (gated) {
		err = xs_gpu_wait_counter(g->stream, g->counter_dev, seq);
		if (err != XS_GPU_OK)
			res = xs__fail("counter wait (stream wait-value)", g->stream, err);
	}
	if (cmd && res == kXSchedSuccess)
		res = xs__launch(g, cmd);
	if (!mark)
		return res;
	err = xs__mark(g, seq);
	if (err != XS_GPU_OK)
		return xs__mark_failed(q, err);
	return res;
}

/* Whether the stream has nothing incomplete: what was enqueued before the call is done. */
static bool xs__idle(xs_hwq *q)
{
	return xs_gpu_stream_query(xs__gq(q)->stream) == XS_GPU_OK;
}

static void xs__set_run_gate(xs_hwq *q, bool open)
{
	xs__store(xs__gq(q)->gate, open ? 1 : 0);
}

/* A wait for the run gate (>= 1) where the stream is now: captured into a graph when the
 * stream captures. On the application's thread, with its context current. */
static XResult xs__gate_check(xs_hwq *q, uint64_t mark_prev)
{
	xs__gpu_q *g = xs__gq(q);
	if (mark_prev) {
		xs_gpu_err err = xs__mark(g, mark_prev);
		if (err != XS_GPU_OK)
			return xs__mark_failed(q, err);
	}
	xs_gpu_err err = xs_gpu_wait_counter(g->stream, g->gate_dev, 1);
	if (err != XS_GPU_OK) {
		xs_gpu_clear_error();
		return xs__fail("run gate check (stream wait-value)", g->stream, err);
	}
	return kXSchedSuccess;
}

static void xs__commit(xs_hwq *q, uint64_t seq)
{
	xs__store(xs__gq(q)->counter, seq);
}

static void xs__reset(xs_hwq *q)
{
	xs__gpu_q *g = xs__gq(q);
	xs__store(g->counter, 0);
	xs__store(g->done, 0);
	atomic_store_explicit(&g->done64, 0, memory_order_relaxed);
}

static uint64_t xs__done(xs_hwq *q)
{
	xs__gpu_q *g = xs__gq(q);
	if (atomic_load_explicit(&q->broken, memory_order_relaxed))
		return UINT64_MAX;
	uint64_t w = atomic_load_explicit(g->done, memory_order_acquire);
#if XS_GPU_COUNTER_BITS == 32
	return xs_hal_widen32(&g->done64, (uint32_t)w);
#else
	return w;
#endif
}

static XResult xs__check(xs_hwq *q)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_err err = xs_gpu_stream_query(g->stream);
	if (err == XS_GPU_OK || err == XS_GPU_NOT_READY)
		return kXSchedSuccess;
	return xs__fail("stream query", g->stream, err);
}

static uint64_t xs__device_key(xs_hwq *q)
{
	return xs_gpu_binding_key(&xs__gq(q)->bind);
}

static XResult xs__device_name(xs_hwq *q, char *buf, size_t n)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_binding saved;
	xs_gpu_err err = xs__bind_save(&g->bind, &saved);
	if (err != XS_GPU_OK)
		return xs__fail("binding the stream's context for its device's UUID", g->stream,
				err);
	err = xs_gpu_device_uuid(&g->bind, buf, n);
	xs__restore(&saved);
	if (err != XS_GPU_OK) {
		XS_INFO("hal", "%s stream %p: no device UUID (%s): no board for its device",
			XS_GPU_NAME, (void *)g->stream, xs_gpu_err_string(err));
		return kXSchedErrorNotSupported;
	}
	return kXSchedSuccess;
}

#if XS_GPU_HAS_MPS_QUERY
/* Time-sliced unless the driver says MPS shares the device. */
static XResult xs__timeslices_processes(xs_hwq *q, bool *out)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_binding saved;
	int mps = 0;
	xs_gpu_err err = xs__bind_save(&g->bind, &saved);
	if (err != XS_GPU_OK)
		return xs__fail("binding the stream's context to ask whether MPS shares its device",
				g->stream, err);
	err = xs_gpu_mps_enabled(&mps);
	xs__restore(&saved);
	if (err != XS_GPU_OK)
		return xs__fail("asking whether MPS shares the device", g->stream, err);
	*out = !mps;
	return kXSchedSuccess;
}
#endif

#if XS_GPU_HAS_SET_PRIORITY
static void xs__set_priority(xs_hwq *q, bool top)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_binding saved;
	xs_gpu_err err = xs__bind_save(&g->bind, &saved);
	int least = 0, greatest = 0;
	if (err == XS_GPU_OK)
		err = xs_gpu_priority_range(&least, &greatest);
	if (err == XS_GPU_OK)
		err = xs_gpu_stream_set_priority(g->stream, top ? greatest : least);
	if (err != XS_GPU_OK && !xs_gpu_err_is_shutdown(err))
		xs__fail("setting the stream's hardware priority", g->stream, err);
	else if (err == XS_GPU_OK)
		XS_DEBUG("hal", "%s stream %p: hardware priority %d", XS_GPU_NAME,
			 (void *)g->stream, top ? greatest : least);
	xs__restore(&saved);
}
#endif

static void xs__destroy(xs_hwq *q)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_binding saved;
	xs_gpu_err err = xs__bind_save(&g->bind, &saved);
	if (err != XS_GPU_OK) {
		if (!xs_gpu_err_is_shutdown(err))
			xs__fail("binding the stream's context at destroy", g->stream, err);
	} else {
#if XS_GPU_HAS_SET_PRIORITY
		err = xs_gpu_stream_set_priority(g->stream, g->own_prio);
		if (err != XS_GPU_OK && !xs_gpu_err_is_shutdown(err))
			xs__fail("restoring the stream's own priority", g->stream, err);
#endif
		xs__restore(&saved);
	}
	if (g->page) {
		xs__store(g->counter, UINT64_MAX >> 1);
		xs__store(g->gate, 1);
	}
	xs__slot_give(g);
}

#if defined(XS_GPU_HIP_LV3)
static XResult xs__ring_base(xs_hwq *q, uint64_t *addr)
{
	xs__gpu_q *g = xs__gq(q);
	xs_gpu_binding saved;
	xs_gpu_err err = xs__bind_save(&g->bind, &saved);
	if (err != XS_GPU_OK)
		return xs__fail("binding the stream's device to find its queue", g->stream, err);
	XResult res = xs_hip_stream_ring_base(g->stream, addr);
	xs__restore(&saved);
	return res;
}
#endif

static void xs__free(xs_obj *obj)
{
	free((xs__gpu_q *)obj);
}

static const xs_hal_ops xs__gpu_ops = {
    .name = XS_GPU_NAME,
    .pushes_done = false,
    .thread_init = xs__thread_init,
    .supports = xs__supports,
    .device_key = xs__device_key,
    .device_name = xs__device_name,
#if XS_GPU_HAS_MPS_QUERY
    .timeslices_processes = xs__timeslices_processes,
#endif
    .enqueue = xs__enqueue,
    .idle = xs__idle,
    .reset = xs__reset,
    .commit = xs__commit,
    .done = xs__done,
    .check = xs__check,
    .set_run_gate = xs__set_run_gate,
    .gate_check = xs__gate_check,
#if XS_GPU_HAS_SET_PRIORITY
    .set_priority = xs__set_priority,
#endif
#if defined(XS_GPU_HIP_LV3)
    .ring_base = xs__ring_base,
#endif
    .destroy = xs__destroy,
};

/* The Lv2 probe, with the stream's context bound: the device's attribute, a slot, and one
 * wait-value and one write-value on the stream that complete. Without them the done marks
 * come from host functions (Lv1). */
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
	const char *what = "stream wait-value";
	xs__store(g->counter, 1);
	err = xs_gpu_wait_counter(g->stream, g->counter_dev, 1);
	if (err == XS_GPU_OK) {
		what = "stream write-value";
		err = xs_gpu_write_done(g->stream, g->done_dev, 1);
	}
	if (err == XS_GPU_OK) {
		/* Also waits for what the application queued on the stream before. */
		what = "synchronizing the stream";
		err = xs_gpu_stream_sync(g->stream);
	}
	if (err == XS_GPU_OK && atomic_load_explicit(g->done, memory_order_acquire) != 1) {
		what = "reading the written value";
		err = (xs_gpu_err)1;
	}
	xs__store(g->counter, 0);
	xs__store(g->done, 0);
	if (err != XS_GPU_OK) {
		xs_gpu_clear_error();
		XS_INFO("hal", "%s stream %p: Lv2 probe failed at %s: %s (%s): Lv1 only",
			XS_GPU_NAME, (void *)g->stream, what, xs_gpu_err_name(err),
			xs_gpu_err_string(err));
		return kPreemptLevelBlock;
	}
	g->memops = true;
	/* Left-out marks (hal.h): opt-in until they have run on a GPU. */
	g->base.lazy_marks = xs_config_get()->gpu_lazy_marks;
	return kPreemptLevelDeactivate;
}

/* The hardware queues that streams of @g's pool are spread over, less the null stream's
 * where it takes one (the engine stops gating beyond them, preempt/device.c). */
static unsigned xs__hw_queues(xs__gpu_q *g)
{
	int pool = xs_gpu_stream_pool(g->stream);
	g->pool = pool;
	long limit = XS_GPU_HWQ_CONFIG(xs_config_get());
	if (!limit)
		limit = XS_GPU_HWQ_DEFAULT;
	limit -= xs_gpu_pool_shared_with_null(pool);
	return limit > 0 ? (unsigned)limit : 1;
}

/* Build the queue with the stream's context bound by the caller. */
static XResult xs__create_bound(xs__gpu_q *g)
{
	unsigned int flags = 0;
	xs_gpu_err err = xs_gpu_stream_get_flags(g->stream, &flags);
	if (err != XS_GPU_OK)
		return xs__fail(XS_GPU_CREATE_NAME ": reading the stream's flags", g->stream, err);
	if (!(flags & XS_GPU_STREAM_NON_BLOCKING))
		XS_INFO("hal",
			"%s stream %p is a blocking stream: work on the legacy default stream "
			"still serializes with it",
			XS_GPU_NAME, (void *)g->stream);
#if XS_GPU_HAS_SET_PRIORITY
	err = xs_gpu_stream_get_priority(g->stream, &g->own_prio);
	if (err != XS_GPU_OK)
		return xs__fail(XS_GPU_CREATE_NAME ": reading the stream's priority", g->stream,
				err);
#endif
	XResult res = xs__slot_take(g);
	if (res != kXSchedSuccess)
		return res;
	int level = xs__probe_level(g);
	unsigned hw_queues = xs__hw_queues(g);
	if (level >= kPreemptLevelDeactivate) {
		if (xs_gpu_lazy_loading() && !atomic_exchange(&xs__g.told_lazy, true))
			XS_WARN(
			    "hal",
			    "%s stream %p has Lv2, but kernels load lazily "
			    "(CUDA_MODULE_LOADING=LAZY): a kernel's first launch then waits "
			    "for every stream, also one stopped at a suspended XQueue's "
			    "counter, which can hang the launching thread until that XQueue "
			    "resumes; set CUDA_MODULE_LOADING=EAGER before the first CUDA call, "
			    "or warm every kernel up before suspensions begin",
			    XS_GPU_NAME, (void *)g->stream);
		if (!XS_GPU_HWQ_CONFIG(xs_config_get()) && !atomic_exchange(&xs__g.told_hwq, true))
			XS_INFO(
			    "hal",
			    "%s stream %p has Lv2, but " XS_GPU_HWQ_ENV " is not set: streams "
			    "share a few hardware queues, and a closed counter holds back every "
			    "stream of its queue; set it (CUDA: 32) before the first runtime call",
			    XS_GPU_NAME, (void *)g->stream);
	}
	xs_hwq_init(&g->base, &xs__gpu_ops, level, g->stream, xs__free);
	g->base.hw_queues = hw_queues;
	return kXSchedSuccess;
}

#ifdef XS_GPU_CUDA
/* Kernels the calling thread's resolvers knew at an earlier create: a direct-mapped memo of
 * (stub, resolver) pairs, so that a command of a kernel made before asks neither the driver
 * nor the resolver (each launch finds the CUfunction in its stream's context). Only
 * successes are kept. */
enum { XS__KNOWN_SLOTS = 64 };
static _Thread_local struct {
	const void *stub;
	int (*resolve)(void **, const void *);
} xs__known[XS__KNOWN_SLOTS];

XResult xs_cuda_check_kernel(const void *func, int (*resolve)(void **, const void *))
{
	size_t slot = xs__fn_bucket(func, 0) % XS__KNOWN_SLOTS; /* the kernel cache's hash */
	if (xs__known[slot].stub == func && xs__known[slot].resolve == resolve)
		return kXSchedSuccess;
	const char *why;
	xs_gpu_err err = xs_gpu_runtime_init(&why);
	if (err != XS_GPU_OK) {
		XS_FAIL("hal", "HwCommandCreateResolvedKernel: no usable cuda runtime: %s", why);
		return xs_gpu_err_is_no_driver(err) ? kXSchedErrorNotSupported
						    : kXSchedErrorHardware;
	}
	int rt_err = 0;
	if (xs__fn_resolve_current(func, resolve, &rt_err) != XS_GPU_OK) {
		XS_FAIL("hal",
			"HwCommandCreateResolvedKernel: the runtime does not know kernel %p "
			"(its resolver returned %d)",
			func, rt_err);
		return kXSchedErrorInvalidValue;
	}
	xs__known[slot].stub = func;
	xs__known[slot].resolve = resolve;
	return kXSchedSuccess;
}

void xs_cuda_forked(void)
{
	memset(xs__known, 0, sizeof(xs__known));
}
#endif

XResult XS_GPU_CREATE_FN(void *stream, xs_hwq **out)
{
	xs_gpu_stream s = (xs_gpu_stream)stream;
	XS_CHECK(!xs_gpu_is_default_stream(s), kXSchedErrorInvalidValue, "hal",
		 XS_GPU_CREATE_NAME ": %p is a default stream (null, legacy or per-thread); its "
				    "implicit synchronization with other streams would defeat "
				    "preemption",
		 stream);
	const char *why;
	xs_gpu_err err = xs_gpu_runtime_init(&why);
	if (err != XS_GPU_OK) {
		XS_FAIL("hal", XS_GPU_CREATE_NAME ": no usable %s runtime: %s", XS_GPU_NAME, why);
		return xs_gpu_err_is_no_driver(err) ? kXSchedErrorNotSupported
						    : kXSchedErrorHardware;
	}
	xs__gpu_q *g = calloc(1, sizeof(*g));
	if (!g)
		return kXSchedErrorUnknown;
	g->stream = s;
	atomic_init(&g->done64, 0);
	err = xs_gpu_stream_binding(s, &g->bind);
	if (err != XS_GPU_OK) {
		free(g);
		return xs__fail(XS_GPU_CREATE_NAME ": looking up the stream's context", s, err);
	}
	xs_gpu_binding saved;
	err = xs__bind_save(&g->bind, &saved);
	if (err != XS_GPU_OK) {
		free(g);
		return xs__fail(XS_GPU_CREATE_NAME ": binding the stream's context", s, err);
	}
	XResult res = xs__create_bound(g);
	xs__restore(&saved);
	if (res != kXSchedSuccess) {
		xs__slot_give(g);
		free(g);
		return res;
	}
	*out = &g->base;
	return kXSchedSuccess;
}
