/* The policy interface: one file per policy under src/sched.
 *
 * A policy is a pure decision function over a snapshot of the registered XQueues. It runs
 * on the scheduler thread with the scheduler lock held, must not block, and must not take
 * any XQueue's lock (the snapshot is all it may read).
 */
#ifndef XS_SCHED_POLICY_H
#define XS_SCHED_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "xsched.h"

/* One XQueue as the policy sees it. */
typedef struct xs_sched_entry {
	uint64_t id;            /* the XQueue handle: stable while registered */
	bool ready;             /* it has pending or in-flight commands and is not blocked
				 * on another XQueue */
	Priority prio;          /* XHintPriority */
	int64_t ready_since_ns; /* when it last went from idle to ready (monotonic ns) */
	void **slot;            /* per-queue state owned by the policy; starts NULL */
	bool suspend;           /* output: true to suspend it; preset to its current state */
} xs_sched_entry;

typedef struct xs_policy_ops {
	XPolicyType type;
	const char *name; /* as in XSCHED_POLICY */
	/* Decide: set e[i].suspend for all @n entries. Return the monotonic time in ns at
	 * which to be called again even without an event, or 0 for no timer. */
	int64_t (*schedule)(xs_sched_entry *e, size_t n, int64_t now_ns);
	/* Free the per-queue state in *slot (when the queue leaves or the policy changes).
	 * NULL if the policy keeps none. */
	void (*forget)(void **slot);
} xs_policy_ops;

extern const xs_policy_ops xs_policy_hpf;

/* The policy of @type, or NULL if this library has none. */
const xs_policy_ops *xs_policy_find(XPolicyType type);
/* The policy named @name (case-insensitive, XSched's names), or NULL. */
const xs_policy_ops *xs_policy_find_name(const char *name);

#endif
