/* Commands: the unit of work submitted to an XQueue.
 *
 * A command is created by HwCommandCreate*() with its payload, submitted at most once,
 * and freed when the last reference goes (the caller's handle, the table's, the XQueue's
 * while it is pending or in flight, a waiter's).
 *
 * Ownership of the mutable fields:
 * - kind and payload: written at creation, read-only after;
 * - xq: set once by XQueueSubmit (compare-and-swap from NULL), never cleared;
 * - owner: written before submission, read-only after;
 * - link, seq, state, charge_ns, ready_ns, gated: written under the owning XQueue's lock (engine);
 * - result: written by whoever finishes the command (the thread that enqueued it, on a
 *   failed launch; a host function trampoline; the engine at completion), each step
 *   ordered by the XQueue's lock or the done number that follows it; read under the
 *   XQueue's lock once state is DONE;
 * - u.record.dep*: the dependency state of an event record, guarded by the engine's
 *   dependency lock (preempt/deps.c);
 * - u.record.native: written once inside the backend's enqueue, before the dependency
 *   state says ENQUEUED; read by waiters after they saw that state under the dependency
 *   lock, and by the free function.
 */
#ifndef XS_CORE_COMMAND_H
#define XS_CORE_COMMAND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/list.h"
#include "core/object.h"
#include "xsched.h"

struct xs_xqueue;
struct xs_hal_ops;

enum xs_cmd_kind {
	XS_CMD_HOST_FUNC,       /* HostFunction on the HwQueue's executor */
	XS_CMD_CALLBACK,        /* LaunchCallback at launch time; none: a boundary, the done
				 * mark alone (XQueueEndUnit) */
	XS_CMD_KERNEL,          /* GPU: runtime launch of a __global__ function */
	XS_CMD_MODULE_KERNEL,   /* GPU: launch of a module function (CUfunction/hipFunction_t) */
	XS_CMD_RESOLVED_KERNEL, /* CUDA: a __global__ function, its CUfunction asked of the
				 * command's resolver (cached per context) at launch */
	XS_CMD_MEMCPY,          /* GPU: asynchronous copy, direction from the pointers */
	XS_CMD_MEMSET,          /* GPU: asynchronous byte fill */
	XS_CMD_EVENT_RECORD,    /* a marker that waits of other XQueues depend on */
	XS_CMD_EVENT_WAIT,      /* nothing after it runs before its record has run */
	XS_CMD_INLINE,          /* LaunchCallback (u.callback) run inside its enqueue by the one
				 * thread that may enqueue it, its submitter (XQueueLaunchInline) */
	XS_CMD_KIND_COUNT,
};

/* How far a wait may go on an event record (u.record.dep), under the dependency lock. */
enum xs_dep_state {
	XS_DEP_NONE,     /* not enqueued yet */
	XS_DEP_LAUNCHED, /* enqueued and committed: a wait on a queue of the same backend may
			  * be enqueued natively behind it, unless u.record.needs_done */
	XS_DEP_DONE,     /* completed: any wait may go */
	XS_DEP_FAILED,   /* failed or can never run: waits fail with u.record.dep_result */
};

enum xs_cmd_state {
	XS_CMD_CREATED,
	XS_CMD_PENDING,   /* in the XQueue, not enqueued */
	XS_CMD_IN_FLIGHT, /* enqueued on the HwQueue (at Lv2 possibly not committed yet) */
	XS_CMD_DONE,      /* completion observed; result final */
};

typedef struct xs_cmd {
	xs_obj obj;
	enum xs_cmd_kind kind;
	union {
		struct {
			HostFunction fn;
			void *data;
		} host;
		struct {
			LaunchCallback fn;
			void *data;
		} callback;
		struct {                  /* KERNEL, MODULE_KERNEL and RESOLVED_KERNEL */
			const void *func; /* host-side kernel handle, or the module function */
			/* RESOLVED_KERNEL's resolver (cudaGetFuncBySymbol's shape); else NULL */
			int (*resolve)(void **fn, const void *func);
			XDim3 grid, block;
			size_t shared_mem_bytes;
			void **args; /* num_args pointers into owned, as cudaLaunchKernel wants */
			size_t num_args;
		} kernel;
		struct {
			void *dst;
			const void *src;
			size_t bytes;
		} memcpy;
		struct {
			void *dst;
			uint8_t value;
			size_t bytes;
		} memset;
		struct {
			/* The backend's event, made at launch; freed by native_free. */
			void *native;
			void (*native_free)(void *native);
			/* The producer's backend, set before launch: waits on another backend
			 * need XS_DEP_DONE. */
			const struct xs_hal_ops *ops;
			atomic_bool ran; /* set once the marker has been passed (host executor,
					  * or the completer at completion) */
			/* Under the dependency lock: */
			enum xs_dep_state dep;
			bool needs_done;    /* gated work before it may stall it after launch */
			XResult dep_result; /* with XS_DEP_FAILED */
		} record;
		struct {
			struct xs_cmd *record; /* holds a reference */
		} wait;
	} u;
	/* The memory the payload points into (copied kernel arguments): behind the command,
	 * in its allocation (xs_cmd_new's @extra), 16-byte aligned; NULL if none. */
	void *owned;

	_Atomic(struct xs_xqueue *) xq;
	xs_link link; /* the XQueue's pending or in-flight list */
	uint64_t seq; /* 1-based position in the XQueue = its number on the HwQueue */
	enum xs_cmd_state state;
	bool gated;           /* enqueued behind a counter wait (Lv2 and up) */
	bool has_mark;        /* a done mark of its number follows it on the HwQueue (hal.h) */
	int64_t charge_ns;    /* budget charged for it while committed (0 = not charged) */
	int64_t ready_ns;     /* when the charged work ahead of it was expected done (0 = none) */
	int64_t slice_end_ns; /* charged in a pacing slice ending then (0 = not) */
	int32_t pos;          /* its position in its XQueue's scope (0-based), -1 outside */
	pthread_t owner;      /* XS_CMD_INLINE: its submitter; written before it is submitted */
	XResult result;
} xs_cmd;

/* Allocate a command of @kind with one reference (the caller's), and @extra bytes (not
 * zeroed) behind it for its payload, at `owned` (NULL when @extra is 0); one allocation
 * for both. NULL if out of memory. */
xs_cmd *xs_cmd_new(enum xs_cmd_kind kind, size_t extra);

static inline xs_cmd *xs_cmd_of(xs_obj *obj)
{
	return (xs_cmd *)obj;
}

#endif
