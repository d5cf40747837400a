/* The engine: XQueues in front of HwQueues, and what reaches the device when.
 *
 * Terms (doc/architecture.md has the pictures):
 * - a command is *pending* in its XQueue until it is *enqueued* on the HwQueue, and
 *   *committed* once the device may run it. At Lv1 enqueuing commits. At Lv2 and Lv3 a
 *   command is enqueued behind a counter gate (hal.h) and committed by one store of the
 *   counter; suspension = no more commits, plus a decommit (the counter lowered to what
 *   completed) so that the queue stops at its next command boundary. A queue the
 *   scheduler suspends keeps enqueuing behind the counter (its resume is one store); one
 *   the application suspends (XQueueSuspend) enqueues nothing new;
 * - the *window* (threshold) bounds enqueued-but-incomplete commands per XQueue; at Lv1 it
 *   also bounds what a suspension waits for;
 * - the *commitment budget* (per device, budget.c) bounds the committed-but-incomplete
 *   work of the XQueues the scheduler marks *limited* (below the top priority present on
 *   the device): the device time still to run of their commands stays within the budget
 *   (at least one command may always be committed), and within the smaller *co-run
 *   budget* while a top-priority queue has work (HPF): lower work co-runs, bounded,
 *   instead of stopping. A high-priority arrival therefore finds at most the budget of
 *   lower-priority work, whatever the number of queues; waiters are served by priority,
 *   then fairly by device time;
 * - *direct submission*: XQueueSubmit enqueues on the calling thread when the XQueue may
 *   enqueue (a launch callback then runs inline there); a command waits for the device's
 *   launch thread only when its XQueue cannot enqueue yet;
 * - completion: each command is followed by a done mark (hal.h); the device's progress
 *   thread reads the done numbers, and XQueueWait waits on its own command's number
 *   directly, with no thread hand-off. Both sleep until the command is expected to end
 *   (its queue's estimated time per command) and poll only around that moment;
 * - *oversubscribed* device: with more XQueues than hardware queues (CUDA connections,
 *   HSA queues) a stream waiting at its counter would block the other streams of its
 *   hardware queue, so no command is enqueued behind a counter there: every XQueue
 *   enqueues only committed work (as at Lv1);
 * - the *sole top* queue: under HPF, the XQueue whose priority is above every other's of
 *   the process, which no pass suspends until a hint changes or a queue is created,
 *   enqueues without counter waits too (xs_engine_set_limited).
 *
 * Threads: per device (HwQueues with one device key) one progress thread ("xs-progress")
 * and one launch thread ("xs-launch"), started with the device's first XQueue, and on a
 * device with a board the board's watcher ("xs-board", core/board.c; remote.c); the
 * number of library threads does not grow with the number of XQueues.
 *
 * Locks, outermost first: the scheduler's lock (sched/) -> xq->lock -> dev->lock (leaf but
 * for the dependency lock) -> the dependency lock (deps.c, leaf). No thread holds two
 * XQueue locks. Launch callbacks and host functions run with no library lock held.
 *
 * Files, from the top down; each calls only files below it, no two call each other:
 *   device.c     the devices and their threads, which drive the state machine (the api
 *                attaches an XQueue to its device after xs_engine_create and detaches it
 *                after xs_engine_destroy);
 *   engine.c     the XQueue state machine;
 *   objective.c  latency objectives;
 *   budget.c     the commitment budget, with pace.c (the slices of pacing);
 *   remote.c     other processes on the device, through its board (core/board.h);
 *   deps.c       event dependencies; lv3.c over cwsr.c, Lv3 over KFD;
 *   signal.c     the signals the others raise (kick, look, activate, deactivate, hand
 *                budget on, the scheduler's hook), and settings.c, the process-wide
 *                settings: leaves every file may call.
 * The accountants (objective.c, budget.c, deps.c) return what to do and their callers act;
 * remote.c answers what other processes hold. This header is what the layers above see: an XQueue
 * is opaque there, read through xs_engine_snapshot() and xs_engine_stats(); engine_int.h, which
 * only the engine's files (and white-box tests) include, holds struct xs_xqueue and what the files
 * share. Layering: the engine includes core/ and hal/ only; it reports upward (queue became ready
 * or idle) through the hook the scheduler sets with xs_signal_set_notify().
 */
#ifndef XS_PREEMPT_ENGINE_H
#define XS_PREEMPT_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/command.h"
#include "core/object.h"
#include "hal/hal.h"
#include "xsched.h"

/* An XQueue: opaque above the engine (its struct is in engine_int.h). Its object header
 * (core/object.h) comes first, so that a handle's object and its XQueue are one address:
 * the two casts below. */
typedef struct xs_xqueue xs_xqueue;

static inline xs_xqueue *xs_xqueue_of(xs_obj *obj)
{
	return (xs_xqueue *)obj;
}

static inline xs_obj *xs_xqueue_obj(xs_xqueue *xq)
{
	return (xs_obj *)xq;
}

/* Upward report (signal.c): @xq changed readiness (idle <-> ready, blocked) or needs a
 * pass. Called with xq->lock held; must not take it or block. @xq is NULL for a change
 * that is no queue's: another process on a device's board changed what it holds
 * (remote.c, from the board's watcher thread, with no lock held). */
typedef void (*xs_signal_notify_fn)(xs_xqueue *xq);
void xs_signal_set_notify(xs_signal_notify_fn fn);

/* Create an XQueue on @q at @level (checked by the caller): it is fully built, but not
 * attached to its device (xs_dev_attach, next) nor published. kXSchedErrorUnknown when out
 * of memory. Any thread. */
XResult xs_engine_create(xs_hwq *q, int level, xs_xqueue **out);
/* Drain @xq (every submitted command runs; waiters get their results); the caller then
 * detaches it from its device (xs_dev_detach) and drops its reference. Any thread but one
 * of the device's own (a launch callback or host function of a queue of the same
 * device). */
void xs_engine_destroy(xs_xqueue *xq);

/* The devices (device.c: their threads, which drive the engine): */
/* Attach @xq, made by xs_engine_create, to the device of its HwQueue, found or started
 * (its threads start with its first XQueue). kXSchedErrorUnknown when out of memory or
 * threads. Any thread. */
XResult xs_dev_attach(xs_xqueue *xq);
/* The reverse, once xs_engine_destroy drained @xq: the device's threads stop with its last
 * XQueue (unless that is destroyed from one of them: xs_dev_shutdown stops those). */
void xs_dev_detach(xs_xqueue *xq);
/* Whether, while an XQueue that is not limited has work, limited ones are held to the
 * co-run budget (0: commit nothing new; what they committed runs on). The scheduler
 * turns it on under HPF and MLFQ: the engine then acts on a top-rank arrival at once,
 * without waiting for the scheduler's pass. */
void xs_dev_set_hold(bool hold);
/* Whether priorities below a device's top are served strictly (XHintStrictPriority,
 * XSCHED_STRICT_PRIORITY=1): a busy limited queue then keeps every lower one waiting, the
 * budget serves its waiters highest priority first, and HPF suspends below the highest
 * ready priority whatever it is. By default (false) the budget shares itself among the
 * limited priorities by weight (budget.c, "Tiers") and HPF suspends only below a ready
 * queue of its device's top priority. -1 = from the configuration at first use. */
void xs_dev_set_strict(int strict);
/* Set the per-process commitment budget in ns (>= 0; 0 = one command at a time). */
void xs_dev_set_budget(int64_t budget_ns);
/* Set the per-process co-run budget in ns (>= 0; 0 = nothing new while held). */
void xs_dev_set_corun(int64_t corun_ns);
/* Stop the threads of devices that have no XQueue left (XSchedShutdown, exit). */
void xs_dev_shutdown(void);
/* In a child after fork(): forget the parent's devices (their threads do not exist
 * here), the settings (settings.c) and the calling thread's device (signal.c). */
void xs_dev_forked(void);

/* Accept @cmd (its XQueue already set by the caller) and enqueue it on the calling thread
 * when the XQueue may enqueue now. kXSchedErrorNotFound while closing,
 * kXSchedErrorNotSupported for a kind the HwQueue cannot run. Takes over one reference of
 * @cmd on success. */
XResult xs_engine_submit(xs_xqueue *xq, xs_cmd *cmd);
/* Submit the XS_CMD_INLINE command @cmd (its owner the calling thread) and enqueue it on
 * this thread, in order, once the XQueue may enqueue it: its callback runs here. Blocks
 * meanwhile (suspended, window full, budget). Returns the launch result, or what
 * xs_engine_submit returns; kXSchedErrorNotAllowed from a command of @xq itself. Takes
 * over the caller's reference of @cmd in every case. */
XResult xs_engine_launch_inline(xs_xqueue *xq, xs_cmd *cmd);
/* Open (@open) or close a scope: while one is open the XQueue counts as having work for
 * the scheduler and the budget's hold, also between its commands. kXSchedErrorNotAllowed
 * when closing a scope that is not open. */
XResult xs_engine_scope(xs_xqueue *xq, bool open);
/* Begin (@begin) or end an explicit unit of @xq's latency objective (XQueueBeginUnit):
 * begin opens the unit's pacing slice, if one is due (and waits it out with
 * XSCHED_PACE_WAIT=1), and counts @xq as having work until the unit's end; end submits a
 * boundary (a launch callback without a launch) whose completion ends the unit, without
 * waiting for it. kXSchedErrorNotFound while closing; kXSchedErrorNotAllowed for a second
 * begin, an end without a begin, or a begin from a command of @xq itself; kXSchedErrorUnknown
 * when out of memory for the boundary (the unit is closed, not measured). Any thread but
 * the device's own. */
XResult xs_engine_unit(xs_xqueue *xq, bool begin);
/* Enqueue on the HwQueue's native queue, at its current end and outside the numbering, a
 * wait for the XQueue's run gate (open while it runs, closed while suspended). For stream
 * capture. kXSchedErrorNotSupported where the backend has no run gate. */
XResult xs_engine_gate_check(xs_xqueue *xq);
/* Whether the calling thread runs a command of @xq (a launch callback inside its enqueue,
 * a host function, a host queue's launch callback): then destroying @xq, or waiting for
 * its own or a later command, would never return. */
bool xs_engine_in_callback(const xs_xqueue *xq);
/* Wait for @cmd (submitted to @xq) and return its result; kXSchedErrorNotAllowed from a
 * command of @xq itself when @cmd is that command or a later one. */
XResult xs_engine_wait(xs_xqueue *xq, xs_cmd *cmd);
/* Wait for every command submitted before the call; the first failure since the last
 * call that reported one, else kXSchedSuccess; kXSchedErrorNotAllowed from a command of
 * @xq itself while any is incomplete. */
XResult xs_engine_wait_all(xs_xqueue *xq);

/* Suspensions: set the application's or the scheduler's flag and apply the level's
 * actions on a change. With @sync (Lv1 only, checked by the caller) also wait until
 * nothing enqueued is incomplete; kXSchedErrorNotSupported (logged, not suspended) when
 * commands enqueued behind a run gate check are in flight: they may be stopped at it. */
XResult xs_engine_app_suspend(xs_xqueue *xq, bool suspend, bool sync);
void xs_engine_sched_suspend(xs_xqueue *xq, bool suspend);
/* Scheduler: whether @xq is subject to its device's budget, which also sets the HwQueue's
 * hardware priority (least when limited, greatest when not; when XSCHED_HW_PRIORITY is
 * on), and @prio, its rank among the budget's waiters. @sole: no pass suspends it until a
 * hint changes or a queue is created (under HPF, its priority above every other queue's of
 * the process, not suspended): unless XSCHED_TOP_GATES=1 or the application ever suspended it
 * (XQueueSuspend), it then enqueues without counter waits, as at Lv1. */
void xs_engine_set_limited(xs_xqueue *xq, bool limited, bool sole, int64_t prio);
/* Change the level (checked by the caller against the HwQueue's maximum). */
void xs_engine_set_level(xs_xqueue *xq, int level);
/* Change the window; kXSchedErrorInvalidValue when threshold < batch size. Values <= 0
 * keep the current one. */
XResult xs_engine_set_launch_config(xs_xqueue *xq, int64_t threshold, int64_t batch_size);

/* What an XQueue is now, read at once under its lock (xs_engine_snapshot): the scheduler's
 * pass takes one per queue, the api's getters one per call. */
typedef struct xs_xqueue_snap {
	/* Its commands so far (launched: enqueued, or inside its enqueue call): */
	uint64_t submitted, launched, completed, failed, committed;
	int level;                   /* XPreemptLevel in force */
	int64_t threshold;           /* the window (XQueueSetLaunchConfig) */
	int64_t batch_size;          /* at most this many commands per done mark */
	bool ready;                  /* has work (incomplete commands, an open scope or unit)
				      * and is not blocked on another XQueue */
	bool sched_suspended;        /* the scheduler's suspension in force */
	bool closing;                /* XQueueDestroy drains it */
	bool lent;                   /* threads running commands of other XQueues wait for it
				      * (xs_engine_lenders) */
	int64_t ready_since_ns;      /* when it last went from idle to ready */
	int64_t busy_ns;             /* device time its completed commands took, summed */
	const xs_xqueue *blocked_on; /* the XQueue whose event record its head command waits
				      * for while it is blocked (deps.c), else NULL: an address
				      * to compare, not to follow (it may be destroyed at any
				      * moment) */
} xs_xqueue_snap;
/* Fill @out with @xq's state now, under its lock. Caller holds no XQueue lock. */
void xs_engine_snapshot(xs_xqueue *xq, xs_xqueue_snap *out);

/* What a latency objective measured and does, for statistics (XQueueGetStats). */
typedef struct xs_objective_view {
	int64_t slow_pm;          /* the p99 slowdown at the last look, per mille; 0 = not
				   * measured (no objective, or no look yet) */
	int64_t alone_ns;         /* the alone estimate of command units (ns) */
	int64_t alone_unit_ns;    /* the same for scope and explicit units (ns) */
	int64_t lower_longest_ns; /* the longest lower command charged in the last window (ns,
				   * 0 without an objective) */
	uint64_t looks;           /* the controller's looks so far */
	int pace;                 /* the device's pacing in force: eighths of a unit's slack */
	uint64_t slices;          /* the device's pacing slices so far */
	int64_t slice_ns;         /* their length, summed (ns) */
	int64_t slice_over_ns;    /* lower device time past their ends, measured (ns) */
} xs_objective_view;

/* An XQueue's statistics (XQueueGetStats), read at once under its lock. */
typedef struct xs_xqueue_stats {
	xs_xqueue_snap now;          /* its counters and settings */
	uint64_t suspensions;        /* suspensions so far */
	int64_t suspended_ns;        /* time suspended, the current spell included */
	int64_t est_ns;              /* its estimate of one command's device time */
	xs_objective_view objective; /* its latency objective and its device's pacing */
	int hw_priority;             /* what the backend set: 2 the greatest, 1 the least, 0
				      * none yet */
	int64_t corun_ns;            /* the co-run budget in force on its device
				      * (xs_objective_corun_of) */
} xs_xqueue_stats;
/* Fill @out with @xq's statistics now: under its lock, and its device's for the
 * objective's part. Caller holds no lock. */
void xs_engine_stats(xs_xqueue *xq, xs_xqueue_stats *out);

/* Call @fn(@arg, from) for each XQueue @from one of whose commands' threads waits for @xq
 * now (priority inheritance: a host function's XQueueWait or XQueueLaunchInline), under
 * xq->lock: @fn takes no XQueue lock and does not block. Caller holds no XQueue lock. */
void xs_engine_lenders(xs_xqueue *xq, void (*fn)(void *arg, const xs_xqueue *from), void *arg);

/* The scheduler's per-queue state of @xq (NULL until set): the scheduler's own, guarded
 * by its lock, which the caller holds. */
void *xs_engine_sched_priv(const xs_xqueue *xq);
void xs_engine_set_sched_priv(xs_xqueue *xq, void *priv);

/* The HwQueue of @xq (a reference it holds: valid while @xq is). Any thread. */
xs_hwq *xs_engine_hwq(const xs_xqueue *xq);

/* Other processes on a device (preempt/remote.c, through its board): what one pass of the
 * scheduler sees. */
typedef struct xs_remote_view {
	int64_t top;  /* their greatest rank present (idle queues count), INT64_MIN = none */
	int64_t busy; /* their rank that holds this process (one of their queues of the
		       * device's top rank has work), INT64_MIN = none */
	int64_t ask;  /* the co-run budget the holders allow lower work (ns, this process's
		       * share; -1 = nothing new, INT64_MAX = not limited) */
} xs_remote_view;
/* Publish this process's top rank on device @dev (from xs_engine_device; INT64_MIN: it
 * takes no part, its policy does not rank by priority) and read the others' into @out.
 * Returns false where the device has no board (the process runs alone on it). Caller
 * holds no XQueue or device lock. */
bool xs_remote_pass(const void *dev, int64_t top, xs_remote_view *out);

/* What @xq's device's board says (XQueueGetBoard). Caller holds no lock. */
void xs_remote_board_info(xs_xqueue *xq, XBoardInfo *info);

/* The device of @xq, as an opaque key for grouping (the scheduler ranks priorities per
 * device). */
const void *xs_engine_device(const xs_xqueue *xq);

/* Whether priorities below a device's top are served strictly (xs_dev_set_strict;
 * settings.c). Any thread, no lock. */
bool xs_settings_strict(void);

/* The co-run budget in force on @xq's device, in ns (objective.c): the latency
 * objectives' controller's while an XQueue of the device has an objective (INT64_MAX = not
 * limited), else the process's (XHintCorunBudget, XSCHED_CORUN_US). Any thread, no lock
 * (a relaxed look). */
int64_t xs_objective_corun_of(const xs_xqueue *xq);
/* Give @xq a latency objective: its commands may take @goal_pm per mille of their time
 * alone (>= 1000); 0 clears it. Any thread but the device's own, no lock held. */
void xs_engine_set_objective(xs_xqueue *xq, int64_t goal_pm);

/* Whether @xq's device paces: a latency objective's level hands out slices (pace.h), and
 * lower queues are held by the budget rather than suspended. Any thread, no lock. */
bool xs_objective_paced(const xs_xqueue *xq);

/* The budget state of @xq's device, for tests and statistics: committed work of limited
 * queues now (ns, commands) and the most commands charged at once since the last call. */
void xs_budget_state(const xs_xqueue *xq, int64_t *charged_ns, uint64_t *charged_cmds,
		     uint64_t *max_cmds);

/* In a child after fork(): forget the parent's blocked queues and bindings. */
void xs_engine_forked(void);

/* At process exit only: release what must not outlive the process's runtime teardown (the
 * Lv3 KFD session: xs_cwsr_release_all). Lv3 is unavailable afterwards. */
void xs_engine_exit(void);

/* Event dependencies (deps.c, through engine.c). The dependency lock is a leaf. */
/* Move @record's dependency state forward to @state (never back) and kick every XQueue
 * blocked on a record. @res is kept with XS_DEP_FAILED. Any thread, any lock. */
void xs_engine_record_advance(xs_cmd *record, enum xs_dep_state state, XResult res);

/* HwQueue binding (one XQueue per HwQueue), engine.c. Bind reserves the HwQueue
 * (kXSchedErrorNotAllowed if it has an XQueue, kXSchedErrorNotFound if it is being
 * destroyed) and, on success, starts its numbering again for @xq (before @xq's first
 * submit); publish makes the XQueue visible to XQueueGet, once it is fully built. */
XResult xs_hwq_bind(xs_hwq *q, xs_xqueue *xq);
void xs_hwq_publish_xqueue(xs_xqueue *xq);
void xs_hwq_unbind(xs_hwq *q);
/* Mark @q dead unless an XQueue is bound: kXSchedErrorNotAllowed (bound),
 * kXSchedErrorNotFound (already dead). */
XResult xs_hwq_kill(xs_hwq *q);
/* The published XQueue of @q, with a reference, or NULL. */
xs_xqueue *xs_hwq_xqueue(xs_hwq *q);

#endif
