/* The hardware abstraction layer: one vtable that every backend implements.
 *
 * A backend (host.c, gpu.c for CUDA and HIP) wraps one native queue in an xs_hwq and
 * fills an xs_hal_ops. The core calls it from exactly three places:
 * - the XQueue's launcher thread: thread_init, launch, sync_create (in launch order);
 * - the XQueue's completer thread: thread_init, sync_wait, sync_all, sync_destroy;
 * - any thread holding the XQueue's lock: gate_close, gate_open, interrupt, restore.
 * Backends never include each other; host.c is the reference for this contract.
 */
#ifndef XS_HAL_HAL_H
#define XS_HAL_HAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/command.h"
#include "core/object.h"
#include "xsched.h"

struct xs_xqueue;
typedef struct xs_hwq xs_hwq;

typedef struct xs_hal_ops {
	const char *name;
	/* Prepare the calling library thread to use the queue (make the stream's context
	 * current). Called once per thread before any other call from it. */
	XResult (*thread_init)(xs_hwq *q);
	/* Whether commands of @kind can run on this queue. Any thread, no lock needed. */
	bool (*supports)(xs_hwq *q, enum xs_cmd_kind kind);
	/* Enqueue @cmd behind everything launched before; must not wait for the device.
	 * With @gated, the queue checks its gate (Lv2) before running it. An error means
	 * nothing was enqueued. Launcher thread only. */
	XResult (*launch)(xs_hwq *q, xs_cmd *cmd, bool gated);
	/* Mark the point after everything launched so far. Launcher thread only. */
	XResult (*sync_create)(xs_hwq *q, xs_sync *s);
	/* Block until @s is reached. Returns kXSchedSuccess, or kXSchedErrorHardware if the
	 * device reported a failure of the work before it. Completer thread only. */
	XResult (*sync_wait)(xs_hwq *q, xs_sync *s);
	void (*sync_destroy)(xs_hwq *q, xs_sync *s);
	/* Block until everything launched has completed (fallback when sync_create failed). */
	XResult (*sync_all)(xs_hwq *q);
	/* Lv2: close or open the queue's gate. A single store; never blocks. NULL below Lv2. */
	void (*gate_close)(xs_hwq *q);
	void (*gate_open)(xs_hwq *q);
	/* Lv3: stop running work and save it / restore it. NULL below Lv3. */
	XResult (*interrupt)(xs_hwq *q);
	XResult (*restore)(xs_hwq *q);
	/* Free the backend's state. Nothing is in flight and no XQueue uses the queue. */
	void (*destroy)(xs_hwq *q);
} xs_hal_ops;

struct xs_hwq {
	xs_obj obj;
	const xs_hal_ops *ops;
	int max_level; /* XPreemptLevel, probed at creation; read-only after */
	void *native;  /* the stream for GPU queues, NULL for host queues */
	/* Guarded by the HwQueue binding lock in hwqueue.c. */
	struct xs_xqueue *xq; /* the XQueue in front of it, or NULL */
	bool dead;            /* HwQueueDestroy has begun */
};

static inline xs_hwq *xs_hwq_of(xs_obj *obj)
{
	return (xs_hwq *)obj;
}

/* Common set-up for backends: fill the generic part (one reference, the caller's). */
void xs_hwq_init(xs_hwq *q, const xs_hal_ops *ops, int max_level, void *native,
		 void (*free_fn)(xs_obj *obj));

/* Register a backend's new queue and return its handle (key 0 = library-issued). On
 * failure the queue is destroyed. */
XResult xs_hwq_publish(xs_hwq *q, uint64_t key, HwQueueHandle *out);

/* Bind @xq to @q: kXSchedErrorNotFound if @q is being destroyed, kXSchedErrorNotAllowed
 * if it already has an XQueue. */
XResult xs_hwq_bind(xs_hwq *q, struct xs_xqueue *xq);
void xs_hwq_unbind(xs_hwq *q);

/* Backends. */
XResult xs_host_queue_create(xs_hwq **out);
/* Tests: attach the host queue @hwq to the KFD queue whose ring buffer starts at
 * @ring_base_address (the fake KFD's, installed with xs_cwsr_set_sys()) through
 * preempt/lv3.c, and raise its max level to kPreemptLevelInterrupt only when the whole
 * probe and attach passed; on failure it stays at 2 and one line is logged. Its
 * HwQueueDestroy then detaches it, resuming it first.
 * Returns kXSchedSuccess; kXSchedErrorNotFound (not a live HwQueue);
 * kXSchedErrorInvalidValue (not a host queue, or a zero address); kXSchedErrorNotAllowed
 * (already enabled, or another HwQueue uses that KFD queue); otherwise as xs_lv3_attach().
 * Thread-safety: right after HostQueueCreate(), before any XQueue exists on @hwq and while
 * no other thread uses it (the core reads the max level without a lock). */
XResult xs_host_queue_enable_lv3(HwQueueHandle hwq, uint64_t ring_base_address);

#endif
