/* The policy interface: one file per policy under src/sched.
 *
 * A policy is a decision function over a snapshot of the registered XQueues. It runs on
 * the scheduler thread with the scheduler lock held, must not block, and must not take
 * any XQueue's lock (the snapshot is all it may read). It may keep state per XQueue in
 * *slot (allocated by it, freed by its forget()), and state of its own in one static
 * struct, which is guarded by the scheduler lock and set back by its reset().
 *
 * Built in: HPF (hpf.c), UP (up.c), KEDF and EDF (edf.c), LAX (lax.c), CFS (cfs.c),
 * FIFO (fifo.c), MLFQ (mlfq.c). doc/policies.md describes them.
 */
#ifndef XS_SCHED_POLICY_H
#define XS_SCHED_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xsched.h"

/* One XQueue as the policy sees it. Rebuilt before every pass: a policy may overwrite
 * the inputs (LAX rewrites prio) without effect on the next pass. */
typedef struct xs_sched_entry {
	uint64_t id;            /* registration order (earlier = smaller), stable */
	bool ready;             /* it has pending or in-flight commands and is not blocked
				 * on another XQueue */
	Priority prio;          /* XHintPriority */
	int64_t ready_since_ns; /* when it last went from idle to ready (monotonic ns) */
	Utilization util;       /* XHintUtilization, or UTILIZATION_DEFAULT */
	Deadline deadline_us;   /* XHintDeadline (relative to ready_since_ns), or NO_DEADLINE */
	Laxity laxity_us;       /* XHintLaxity (relative to ready_since_ns), or NO_LAXITY */
	Priority lax_prio;      /* XHintLaxity, valid when laxity_us != NO_LAXITY */
	Priority crit_prio;
	int level;       /* its XPreemptLevel in force */
	int64_t busy_ns; /* device time its completed commands took so far (the engine's
			  * measurement, xs_xqueue.busy_ns): never decreases */
	void **slot;     /* per-queue state owned by the policy; starts NULL */
	bool suspend;    /* output: true to suspend it; preset to its current state */
	Priority rank;   /* output: the priority the engine ranks it by (below the top rank
			  * of its device: subject to the commitment budget, least hardware
			  * priority; its place among the budget's waiters); preset to prio */
	bool holds;      /* output: it keeps lower-ranked queues suspended (ready, or HPF's
			  * linger); preset to ready. Of a queue below its device's top rank it
			  * is overridden unless priorities are strict (sched.c, tiers) */
} xs_sched_entry;

/* Process-wide inputs of a pass. */
typedef struct xs_sched_params {
	int64_t now_ns;         /* monotonic time of the pass */
	Timeslice timeslice_us; /* XHintTimeslice, or TIMESLICE_DEFAULT */
	bool timeslice_given;   /* XHintTimeslice was called (CFS keeps 1 ms otherwise) */
	size_t k;               /* XHintKDeadline, or 1 */
} xs_sched_params;

typedef struct xs_policy_ops {
	XPolicyType type;
	const char *name; /* as in XSCHED_POLICY (matched case-insensitively) */
	/* The engine's hold carries out its suspensions (HPF, MLFQ): while a queue of the top
	 * rank has work, lower-ranked ones keep only the co-run budget, from the moment that
	 * queue gets work (without waiting for a pass), and with a co-run budget above 0 the
	 * scheduler leaves them running within it instead of suspending them (sched.c). */
	bool hold;
	/* A queue's rank is its priority hint and changes only with the hints (HPF): a queue
	 * ranked above every other of the process is suspended by no pass until a hint
	 * changes or a queue is created, so the engine enqueues its commands without counter
	 * waits (sched.c, xs_engine_set_limited). */
	bool hint_ranks;
	/* Decide: set e[i].suspend for all @n entries. Return the monotonic time in ns at
	 * which to be called again even without an event (later than p->now_ns), or 0 for
	 * no timer. A policy asks for a timer only while a decision depends on time, so an
	 * idle process costs no wake-ups. */
	int64_t (*schedule)(xs_sched_entry *e, size_t n, const xs_sched_params *p);
	/* Free the per-queue state in *slot (when the queue leaves or the policy changes).
	 * NULL if the policy keeps none. */
	void (*forget)(void **slot);
	/* Drop the policy's own state: called when it becomes the current policy. NULL if it
	 * keeps none. */
	void (*reset)(void);
} xs_policy_ops;

extern const xs_policy_ops xs_policy_hpf;
extern const xs_policy_ops xs_policy_up;
extern const xs_policy_ops xs_policy_kedf;
extern const xs_policy_ops xs_policy_edf;
extern const xs_policy_ops xs_policy_lax;
extern const xs_policy_ops xs_policy_cfs;
extern const xs_policy_ops xs_policy_fifo;
extern const xs_policy_ops xs_policy_mlfq;

/* The policy of @type, or NULL if this library has none. */
const xs_policy_ops *xs_policy_find(XPolicyType type);
/* The policy named @name (case-insensitive), or NULL. */
const xs_policy_ops *xs_policy_find_name(const char *name);
/* The names of this library's policies ("HPF, UP, ..."), cut to @len bytes. */
void xs_policy_names(char *buf, size_t len);
/* True if @type is an XPolicyType value at all (built here or not). */
bool xs_policy_valid(XPolicyType type);

/* The policy's state in @e's slot, allocated zeroed (@size bytes) on first use; NULL if
 * out of memory (the policy then leaves the queue alone for this pass). */
void *xs_policy_slot(xs_sched_entry *e, size_t size);
/* A forget() for slots allocated by xs_policy_slot(). */
void xs_policy_slot_free(void **slot);

/* MLFQ's constants (mlfq.c says where they come from; doc/policies.md). */
enum { XS_MLFQ_LEVELS = 4 };
#define XS_MLFQ_SLICE_NS 10000000LL  /* level 0's slice; level l has 2^l times it */
#define XS_MLFQ_BOOST_NS 100000000LL /* a queue kept waiting this long goes to level 0 */
#define XS_MLFQ_IDLE_NS  1000000LL   /* idle this long: back at its starting level */

/* HPF's decision on e[i].prio (shared with LAX). */
void xs_policy_hpf_decide(xs_sched_entry *e, size_t n);

/* An entry's rank in a line: smaller first. */
typedef int64_t (*xs_policy_key)(const xs_sched_entry *e);

/* The line of FIFO and KEDF/EDF: the @k ready entries that come first by @key, then by
 * their place in line, then by handle, run; every other entry is suspended, idle ones
 * included (while fewer than @k are ready, none is). A queue takes its place when it goes
 * from idle to ready (first come, first served), and keeps it while blocked; but a chosen
 * queue whose turn has lasted one timeslice while a ready queue of the same key waits goes
 * to the back of the line (else a queue that never goes idle would keep its place for
 * ever, issue 22). Returns the end of the earliest such turn as the timer, 0 if none. The
 * state lives in the slots (forget: xs_policy_slot_free). */
int64_t xs_policy_line_decide(xs_sched_entry *e, size_t n, size_t k, xs_policy_key key,
			      const xs_sched_params *p);

#endif
