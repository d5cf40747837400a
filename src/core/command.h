/* Commands: the unit of work submitted to an XQueue.
 *
 * A command is created by HwCommandCreate*() with its payload, submitted at most once,
 * and freed when the last reference goes (the caller's handle, the table's, the XQueue's
 * while it is pending or in flight, a waiter's).
 *
 * Ownership of the mutable fields:
 * - kind and payload: written at creation, read-only after;
 * - xq: set once by XQueueSubmit (compare-and-swap from NULL), never cleared;
 * - seq, state, next: written under the owning XQueue's lock;
 * - result: written by whoever finishes the command (the launcher on a failed launch,
 *   the host executor or a GPU host-function trampoline, the completer), each step
 *   ordered by the XQueue's lock or the backend's completion point; read under the
 *   XQueue's lock once state is DONE;
 * - u.record.dep*: the dependency state of an event record, guarded by the process-wide
 *   dependency lock of preempt/launch.c (see xs_dep_*() below);
 * - u.record.native: written once by the producer's launcher inside the backend's launch,
 *   before the dependency state says LAUNCHED; read by waiters after they saw that state
 *   under the dependency lock, and by the free function.
 */
#ifndef XS_CORE_COMMAND_H
#define XS_CORE_COMMAND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/object.h"
#include "xsched.h"

struct xs_xqueue;
struct xs_hal_ops;

/* A completion point: a marker after the commands launched so far. Filled by the
 * backend's sync_create, waited by its sync_wait; the backend picks the field it uses. */
typedef struct xs_sync {
	uint64_t seq; /* host: the executor's sequence number */
	void *native; /* GPU: an event */
} xs_sync;

enum xs_cmd_kind {
	XS_CMD_HOST_FUNC,     /* HostFunction on the HwQueue's executor */
	XS_CMD_CALLBACK,      /* LaunchCallback at launch time */
	XS_CMD_KERNEL,        /* GPU: runtime launch of a __global__ function */
	XS_CMD_MODULE_KERNEL, /* GPU: launch of a module function (CUfunction/hipFunction_t) */
	XS_CMD_MEMCPY,        /* GPU: asynchronous copy, direction from the pointers */
	XS_CMD_MEMSET,        /* GPU: asynchronous byte fill */
	XS_CMD_EVENT_RECORD,  /* a marker that waits of other XQueues depend on */
	XS_CMD_EVENT_WAIT,    /* nothing after it runs before its record has run */
	XS_CMD_KIND_COUNT,
};

/* How far a wait may go on an event record (u.record.dep), under the dependency lock. */
enum xs_dep_state {
	XS_DEP_NONE,     /* not launched yet */
	XS_DEP_LAUNCHED, /* launched: a wait on a queue of the same backend may be enqueued
			  * natively behind it, unless u.record.needs_done */
	XS_DEP_DONE,     /* completed: any wait may go */
	XS_DEP_FAILED,   /* failed or can never run: waits fail with u.record.dep_result */
};

enum xs_cmd_state {
	XS_CMD_CREATED,
	XS_CMD_PENDING,   /* in the XQueue, not launched */
	XS_CMD_IN_FLIGHT, /* handed to the HwQueue */
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
		struct {                  /* KERNEL and MODULE_KERNEL */
			const void *func; /* host-side kernel handle, or the module function */
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
	void *owned; /* heap memory the payload points into (copied arguments); freed with it */

	_Atomic(struct xs_xqueue *) xq;
	uint64_t seq; /* 1-based position in the XQueue */
	enum xs_cmd_state state;
	bool gated;          /* launched behind a gate check (Lv2); set with state IN_FLIGHT */
	struct xs_cmd *next; /* pending or in-flight list link */
	XResult result;

	/* A completion point after this command, marked by the launcher (hal.h). */
	bool has_sync;
	bool sync_valid; /* sync_create succeeded; otherwise the completer drains the queue */
	xs_sync sync;
	struct xs_cmd *sync_next; /* the XQueue's list of completion points */
} xs_cmd;

/* Allocate a command of @kind with one reference (the caller's); NULL if out of memory. */
xs_cmd *xs_cmd_new(enum xs_cmd_kind kind);

static inline xs_cmd *xs_cmd_of(xs_obj *obj)
{
	return (xs_cmd *)obj;
}

/* Whether @kind needs a GPU backend (the host backend refuses it). */
static inline bool xs_cmd_kind_is_gpu(enum xs_cmd_kind kind)
{
	return kind == XS_CMD_KERNEL || kind == XS_CMD_MODULE_KERNEL || kind == XS_CMD_MEMCPY ||
	       kind == XS_CMD_MEMSET;
}

/* Event dependencies (preempt/launch.c). The dependency lock is a leaf: it may be taken
 * with one XQueue lock held, and nothing is taken under it. */

/* Move @record's dependency state forward to @state (never back) and wake every launcher
 * waiting on a record. @res is kept with XS_DEP_FAILED. Any thread. */
void xs_dep_advance(xs_cmd *record, enum xs_dep_state state, XResult res);
/* An event record was just submitted: wake blocked launchers (a wait on it may sit in the
 * same XQueue, behind which it can never run). Any thread. */
void xs_dep_submitted(void);

#endif
