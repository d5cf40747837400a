/* The local scheduler: one thread per process ("xsched-sched") that runs a policy.
 *
 * Wake-up sources (they may coalesce: one pass sees all of them):
 * - the engine's notification (engine.h): an XQueue went from idle to ready or back, or
 *   was blocked or unblocked on an event; a hint changed (XHint*), or a process-wide
 *   hint (XHintTimeslice, XHintKDeadline);
 * - a registration or removal of an XQueue, or a policy change;
 * - the policy's own timer: the deadline it returned from its last pass (UP: end of the
 *   running turn; CFS: end of the running slice; LAX: the earliest promotion; HPF, FIFO,
 *   EDF and KEDF set none). Policies ask for one only while another ready queue waits on
 *   it, so an idle process, or one busy queue alone, gets no timer wake-ups;
 * - shutdown.
 * Each pass reads every registered XQueue's state under its lock (level-triggered: the
 * order in which notifications arrive does not matter), asks the policy which XQueues
 * run, and applies the difference as scheduler suspensions. It then marks as *limited*
 * (subject to the device's commitment budget, engine.h) every XQueue whose priority is
 * below the highest priority present on its device, idle queues included, and gives the
 * others the device's greatest hardware priority. Idle, or with no timer, it
 * sleeps on a condition variable (pthread_cond_wait): no polling, no wake-ups.
 *
 * Precision. An event wakes the thread through a futex, within the kernel's wake-up
 * latency; the timer is an absolute CLOCK_MONOTONIC pthread_cond_timedwait, i.e. a
 * futex wait on a high-resolution timer, and the thread sets its timer slack to 1 ns
 * (PR_SET_TIMERSLACK; the default slack of 50 us would be added to every timer).
 * Measured lateness of timer wake-ups (deadline to the thread running again), CFS with
 * 1 ms slices and two busy host queues (test_sched_timer), on the 2-core Debian 12
 * development VM, 2026-11-21: otherwise idle, mean 12-22 us, 95-99% under 50 us,
 * max 95-420 us; with three CPU-bound processes on the two cores, mean 150-380 us and
 * outliers of 8-10 ms (the thread runs at normal priority). A bare timedwait loop on
 * the same machine: p50 16 us, p99 103 us (p50 69 us, p99 134 us with the default
 * slack). So 1 ms slices hold to a few percent on an idle machine; below ~200 us the
 * wake-up latency dominates. doc/policies.md has the table; xs_sched_get_stats()
 * reports the lateness seen.
 */
#ifndef XS_SCHED_SCHED_H
#define XS_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "preempt/engine.h"
#include "xsched.h"

/* Register a new, fully built XQueue; starts the scheduler on first use (configured from
 * the environment unless XHintSetScheduler() was called). kXSchedErrorUnknown when out of
 * memory or the thread cannot start. Any thread, no lock held. */
XResult xs_sched_add(xs_xqueue *xq);
/* Forget @xq (it is drained and about to go). Any thread, no lock held. */
void xs_sched_remove(xs_xqueue *xq);

/* Per-queue hints, as the XHint* calls set them (values checked by the API layer). */
typedef struct xs_sched_hints {
	Priority prio;        /* XHintPriority */
	bool has_util;        /* else UTILIZATION_DEFAULT */
	bool has_deadline;    /* else NO_DEADLINE */
	bool has_laxity;      /* else NO_LAXITY */
	Utilization util;     /* XHintUtilization, 0..100 */
	Deadline deadline_us; /* XHintDeadline, us >= 0 */
	Laxity laxity_us;     /* XHintLaxity, us >= 0 */
	Priority lax_prio;    /* XHintLaxity: before the laxity runs out */
	Priority crit_prio;   /* XHintLaxity: after it */
} xs_sched_hints;

/* Read and replace the hints of @xq (registered); the setter asks for a pass, and with
 * @apply runs one itself before it returns (XHintPriority: in force when the call
 * returns). Any thread but the scheduler's, no lock held. */
void xs_sched_get_hints(xs_xqueue *xq, xs_sched_hints *out);
void xs_sched_set_hints(xs_xqueue *xq, const xs_sched_hints *h, bool apply);

/* Process-wide hints (values already checked). Any thread, no lock held. */
void xs_sched_set_timeslice(Timeslice ts_us);
void xs_sched_set_k(size_t k);
/* XHintStrictPriority: strict order below each device's top priority (preempt's
 * xs_dev_set_strict), applied by a pass at once. */
void xs_sched_set_strict(bool strict);

/* In a child after fork(): a clean scheduler state (no thread, no queue). */
void xs_sched_forked(void);

/* XHintSetScheduler() and XSchedShutdown(), after argument checks. */
XResult xs_sched_configure(XSchedulerType scheduler, XPolicyType policy);
void xs_sched_shutdown(void);

#define XS_SCHED_LATE_BUCKETS 8

/* Counters of the scheduler thread since the process started. */
typedef struct xs_sched_stats {
	uint64_t passes;        /* scheduling passes */
	uint64_t timer_wakeups; /* passes started by the policy's timer */
	int64_t late_sum_ns;    /* total lateness of the timer wake-ups */
	int64_t late_max_ns;    /* worst lateness of one */
	/* Timer wake-ups by lateness: < 10, 50, 100, 200, 500, 1000, 2000 us, and the rest. */
	uint64_t late_hist[XS_SCHED_LATE_BUCKETS];
} xs_sched_stats;

/* A consistent copy of the counters. Any thread, no lock held. */
void xs_sched_get_stats(xs_sched_stats *out);

/* The policy the local scheduler runs, or kPolicyUnknown while it does not run
 * (application-managed, or not configured yet). Any thread, no lock held. */
XPolicyType xs_sched_current_policy(void);

#endif
