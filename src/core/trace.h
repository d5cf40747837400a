/* The timeline trace: what the scheduler and the engine did, for Perfetto.
 *
 * XSCHED_TRACE=path (read with the other settings) or XSchedTraceStart(path) turns it on;
 * XSchedTraceStop(), XSchedShutdown() or exit writes the file in the Chrome trace-event
 * JSON format (ui.perfetto.dev, chrome://tracing): one track per XQueue, named after its
 * priority and stream; an async slice per command from commit to completion; instant
 * events for submissions, suspensions, resumes, hints, scopes and the scheduler's passes.
 * Timestamps: CLOCK_MONOTONIC (xs_now_ns), written in us.
 *
 * Memory: one ring of XSCHED_TRACE_EVENTS events (default 65536, 32 bytes each) per
 * thread that records, allocated at its first event; a full ring drops its oldest event
 * and counts it ("dropped" in the file). When a thread exits, its ring (with its events)
 * goes to the next thread that records; rings no thread owns are freed when the file is
 * written. So the rings follow the recording threads alive at once.
 *
 * Cost: off, each trace point is one relaxed load and a branch predicted not taken
 * (XS_TRACE); on, a clock read and a store under the thread's own ring lock (uncontended
 * except while the file is written). doc/architecture.md has the measured figure.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef XS_CORE_TRACE_H
#define XS_CORE_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "xsched.h"

enum xs_trace_kind {
	XS_TR_QUEUE,      /* an XQueue's track: a = stream (0 host), b = priority */
	XS_TR_SUBMIT,     /* a = seq */
	XS_TR_ENQUEUE,    /* a = seq (launch on the HwQueue) */
	XS_TR_COMMIT,     /* a = seq: the device may run it (async slice begins) */
	XS_TR_COMPLETE,   /* a = seq, b = XResult (async slice ends) */
	XS_TR_SUSPEND,    /* a = the application suspends it (0/1), b = the scheduler does */
	XS_TR_RESUME,     /* a, b: as for SUSPEND, after the change */
	XS_TR_PRIORITY,   /* b = the new priority */
	XS_TR_SCOPE,      /* a = 1 begin, 0 end */
	XS_TR_PASS,       /* the scheduler's pass: a = queues, b = suspended after it */
	XS_TR_POLICY,     /* a = XSchedulerType, b = XPolicyType */
	XS_TR_RELEASE,    /* stall release: a = first seq committed, b = last */
	XS_TR_CORUN,      /* a latency objective moved the device's co-run budget: a = the
			   * queue's last slowdown (per mille), b = the budget (ns, INT64_MAX =
			   * not limited) */
	XS_TR_SOLE,       /* a = 1: the sole top queue, enqueuing without counter waits; 0: no
			   * longer (preempt/engine.c, xs_engine_set_limited) */
	XS_TR_LONG_LOWER, /* a protected queue's look found a lower command longer than its
			   * objective allows: a = that command's estimate (ns), b = the allowed
			   * excess (alone x (objective - 1), ns) (preempt/objective.c) */
	XS_TR_SLICE,      /* a protected unit opened a pacing slice: a = its length (ns), b =
			   * the debt left (ns) (preempt/budget.c, pace.h) */
	XS_TR_UNIT,       /* a protected unit: a = 1 begins (released after its slice), 0 ends
			   * (its closing mark was submitted) */
	XS_TR_KIND_COUNT,
};

typedef struct xs_trace_ev {
	int64_t ts_ns;
	uint64_t a;
	int64_t b;
	uint32_t xq; /* the XQueue's handle (low 32 bits), 0 for none */
	uint16_t kind;
	uint16_t pad;
} xs_trace_ev;

extern atomic_bool xs_trace_on;

/* Record an event; only through XS_TRACE. */
void xs_trace_emit(enum xs_trace_kind kind, uint64_t xq, uint64_t a, int64_t b);

#define XS_TRACE(kind, xq, a, b)                                                                   \
	do {                                                                                       \
		if (__builtin_expect(atomic_load_explicit(&xs_trace_on, memory_order_relaxed), 0)) \
			xs_trace_emit((kind), (xq), (a), (b));                                     \
	} while (0)

/* Start tracing into @path (copied); kXSchedErrorNotAllowed while a trace runs. */
XResult xs_trace_start(const char *path, int64_t ring_events);
/* Stop and write the file; kXSchedErrorNotFound when no trace runs, kXSchedErrorHardware
 * when the file cannot be written (logged). */
XResult xs_trace_stop(void);
/* An XQueue's track name (its handle @xq, the native @stream, 0 for a host queue, and its
 * @prio): kept while the XQueue lives, whether or not a trace runs, so that a trace started
 * after the XQueue was made, or whose rings dropped the naming event, still names its
 * track; and recorded as an XS_TR_QUEUE event while a trace runs. @add: the XQueue is new
 * (else only a known one is renamed: a priority change racing its destroy adds nothing).
 * xs_trace_unname at its destroy. */
void xs_trace_name(uint64_t xq, uint64_t stream, int64_t prio, bool add);
void xs_trace_unname(uint64_t xq);
/* Events kept and dropped so far (tests). */
void xs_trace_counts(uint64_t *kept, uint64_t *dropped);
/* In a child after fork(): tracing off, the parent's path released, the rings of its
 * other threads free for the child's. */
void xs_trace_forked(void);

#endif
