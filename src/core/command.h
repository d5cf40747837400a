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
 *   the host executor, the completer), each step ordered by the XQueue's lock or the
 *   backend's completion point; read under the XQueue's lock once state is DONE.
 */
#ifndef XS_CORE_COMMAND_H
#define XS_CORE_COMMAND_H

#include <stdbool.h>
#include <stdint.h>

#include "core/object.h"
#include "xsched.h"

struct xs_xqueue;

/* A completion point: a marker after the commands launched so far. Filled by the
 * backend's sync_create, waited by its sync_wait; the backend picks the field it uses. */
typedef struct xs_sync {
	uint64_t seq; /* host: the executor's sequence number */
	void *native; /* GPU: an event */
} xs_sync;

enum xs_cmd_kind {
	XS_CMD_HOST_FUNC, /* HostFunction on the HwQueue's executor */
	XS_CMD_CALLBACK,  /* LaunchCallback at launch time */
	XS_CMD_KIND_COUNT,
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
	} u;
	void *owned; /* heap memory the payload points into (copied arguments); freed with it */

	_Atomic(struct xs_xqueue *) xq;
	uint64_t seq; /* 1-based position in the XQueue */
	enum xs_cmd_state state;
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

#endif
