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
 * Files: engine.c (the XQueue state machine) and device.c (the device threads), which call
 * each other; budget.c (the commitment budget), objective.c (latency objectives) and
 * deps.c (event dependencies), leaves that return what to do (engine_int.h); lv3.c and
 * cwsr.c (Lv3 over KFD). Layering: the engine includes core/ and hal/ only; it reports upward
 * (queue became ready or idle) through the hook the scheduler registers with
 * xs_engine_set_notify().
 */
#ifndef XS_PREEMPT_ENGINE_H
#define XS_PREEMPT_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/command.h"
#include "core/list.h"
#include "core/object.h"
#include "core/thread.h"
#include "hal/hal.h"
#include "xsched.h"

typedef struct xs_device xs_device;

/* Units of a latency objective kept for its tail (objective.c): the last this many. */
enum { XS_OBJ_RING = 256 };
/* Explicit units (XQueueBeginUnit) begun and not yet seen to end, measured at most. */
enum { XS_OBJ_UNITS = 8 };

/* An explicit unit in flight (objective.c), under xq->lock. */
typedef struct xs_unit {
	int64_t arrive_ns; /* XQueueBeginUnit was called */
	int64_t start_ns;  /* it was released (after its slice, where it waited one) */
	int64_t lower_ns;  /* the device's lower-work clock then (budget.c) */
	uint64_t end_seq;  /* its boundary (XQueueEndUnit): it ends when this completes; 0 =
			    * still open */
} xs_unit;

/* A latency objective and its controller's per-queue state (objective.c). goal_pm is
 * written under both xq->lock and dev->lock (read under either); the unit fields under
 * xq->lock; the rest under dev->lock. */
typedef struct xs_objective {
	int64_t goal_pm;            /* the slowdown allowed at the p99, per mille (1200 = 1.2x
				     * alone); 0 = none */
	int64_t alone_ns;           /* mean command unit with no lower work (EWMA), 0 = none yet */
	int64_t alone_scope_ns;     /* the same for scope units */
	int64_t slow_pm;            /* the p99 slowdown of the units since the last move, per
				     * mille, at the last look; 0 = none yet */
	int64_t lower_longest_ns;   /* the longest lower command charged in the last window */
	uint16_t ring[XS_OBJ_RING]; /* the units' slowdowns since the last move, per mille
				     * (at most 65535), oldest overwritten */
	uint32_t n;     /* units since the last move (the ring holds min(n, XS_OBJ_RING)) */
	uint32_t win_n; /* units since the last look (a window: XS__WINDOW of them) */
	int64_t win_ns; /* their latencies, summed (a window ends on time too) */
	uint64_t looks; /* the controller's looks so far (statistics, tests) */
	uint32_t over;  /* of those the ring holds, above goal_pm */
	uint64_t over_bits[XS_OBJ_RING / 64]; /* which ring entries are above goal_pm */
	int level;        /* the co-run level this queue asks for; -1 = none (limited) */
	int fail_level;   /* the lowest level that broke the objective lately */
	uint32_t wait;    /* windows before fail_level may be tried again */
	uint32_t backoff; /* the next wait, doubled at each failure of one level */
	/* A scope unit (XQueueBeginScope .. the last completion after XQueueEndScope), under
	 * xq->lock: */
	bool unit_armed;       /* a scope opened: the unit starts at the next enqueue */
	int64_t unit_start_ns; /* when it started (0 = none running) */
	int64_t unit_lower_ns; /* the device's lower-work clock then (budget.c) */
	uint64_t unit_end_seq; /* the scope closed: the unit ends when this completes */
	/* Explicit units (XQueueBeginUnit), under xq->lock: a FIFO of those in flight, which
	 * may overlap (the next begun before the last one's end was seen). */
	xs_unit units[XS_OBJ_UNITS];
	unsigned unit_head, unit_count;
	int64_t unit_last_end_ns; /* when the last one was seen to end */
} xs_objective;

typedef struct xs_xqueue {
	xs_obj obj;
	xs_hwq *hwq;    /* holds a reference; read-only after create */
	xs_device *dev; /* holds a reference; read-only after create */

	xs_mutex lock;   /* guards every field below unless the field says otherwise */
	xs_cond cv;      /* completions, enqueues, commits, the launch token's release */
	xs_cond done_cv; /* waits for the device (XQueueWait*): woken only when the number
			  * they wait for is enqueued, committed or completed (sleep_seq) */

	xs_link pending;  /* submitted, not enqueued (FIFO, xs_cmd.link) */
	xs_link inflight; /* enqueued, not complete (FIFO by seq) */
	uint64_t submitted, enqueued, committed, completed, failed;
	uint64_t issuing; /* the seq inside an enqueue call now, 0 = none (statistics) */
	/* What XQueueWaitAll reports (engine.c, xs__report_*): the first failure after the
	 * commands covered by the XQueueWaitAll calls that returned (reported_upto), and its
	 * number (0 = none); the calls in progress (xs__wait_all records, on their threads'
	 * stacks) keep the failures they need besides. */
	XResult err_pending;
	uint64_t err_seq, reported_upto;
	xs_link wait_alls;

	int64_t threshold, batch_size; /* window; at most batch_size commands per done mark */
	uint64_t marked;       /* the highest number whose done mark was enqueued (or seen done) */
	int level;             /* XPreemptLevel in force */
	bool launching;        /* the launch token: one thread enqueues at a time, in order */
	bool app_suspended;    /* XQueueSuspend/Resume */
	bool sched_suspended;  /* the scheduler's decision */
	bool running;          /* = closing || !(app_suspended || sched_suspended), applied */
	bool closing;          /* XQueueDestroy has begun: drain, accept nothing new */
	bool limited;          /* subject to the device's commitment budget */
	bool sole_top;         /* enqueues without counter waits (xs_engine_set_limited) */
	uint64_t ungated_upto; /* the last command enqueued without one at Lv2+ (sole_top): it
				* runs whatever the counter says, so a decommit keeps it */
	uint64_t mark_want;    /* a waiter needs a done mark at or after this number: the
				* launch token's holder puts one on its next command */
	bool app_suspended_once; /* XQueueSuspend was called on it: it never goes sole_top */
	bool blocked;            /* the head command waits for another XQueue's event record */
	unsigned waiting;        /* threads running a command of this XQueue that wait (XQueueWait*)
				  * for another XQueue: it counts as blocked meanwhile */
	xs_link lenders;         /* xs_lend.link: XQueues whose commands' threads wait for this
				  * one; the scheduler ranks it as the highest of them */
	bool published;          /* reachable by handle and XQueueGet (guarded by the bind lock) */
	bool top_busy;       /* counted in the device's top_busy: not limited, ready, not closing */
	unsigned scopes;     /* open scopes (XQueueBeginScope): it counts as having work */
	int32_t scope_pos;   /* the position the next command submitted in a scope takes */
	bool unit_open;      /* an explicit unit is open (XQueueBeginUnit): it has work */
	bool units_explicit; /* it called XQueueBeginUnit: its objective measures those only */
	uint32_t unit_gen;   /* explicit units begun (a begin that waited knows if it is current) */
	/* Pacing's prediction of its commands' device time (pace.h), under the lock: */
	uint32_t *pos_us;       /* per position in a scope, us (XS_PACE_POS; NULL until needed) */
	int64_t long_ns;        /* the decayed longest command */
	uint64_t sync_target;   /* the most a synchronous XQueueSuspend waited for: what a
				 * decommit leaves committed (done, it no longer counts) */
	uint64_t gate_after;    /* commands numbered above it may wait at a run gate check
				 * (XQueueEnqueueGateCheck); UINT64_MAX: none was enqueued */
	uint64_t committed_max; /* the highest seq ever committed (a decommit lowers `committed`,
				 * not this): its commit was traced (core/trace.h), and a command
				 * above it cannot have started */

	uint64_t suspensions;
	int64_t suspended_ns;       /* finished spells */
	int64_t suspended_since_ns; /* start of the current spell (valid while !running) */
	int64_t ready_since_ns;     /* when the queue last went from idle to ready */
	int64_t est_ns;             /* estimated duration of one command (moving average) */
	int64_t last_per_ns;        /* the last sample of it (0 = none yet): a waiter sleeps
				     * on the smaller of the two (xs__wake_at) */
	int64_t busy_ns;            /* device time its completed commands took, summed */
	int64_t busy_since_ns;      /* committed work started; 0 = none committed */
	/* Lock-free copies for the progress thread's look (written under the lock): */
	_Atomic uint64_t seen_done;  /* = completed */
	_Atomic int64_t expect_ns;   /* the expected end of the first command with a done
				      * mark (busy_since + est per command up to it), where
				      * the progress thread should look then (xs__expect);
				      * else INT64_MAX */
	atomic_bool tail_unmarked;   /* = marked < enqueued: seen done only through idle() */
	_Atomic int64_t tail_due_ns; /* when to ask idle() about that tail (xs__tail_enqueued) */
	_Atomic int64_t reaper_ns;   /* the last enqueue by an application thread, which
				      * completes what the marks show at its next submit
				      * (xs__window_full, xs_engine_reaper_until); 0 = a
				      * thread sleeps on the queue, or a device thread
				      * enqueued last: the progress thread's */
	int64_t tail_end_ns;         /* the expected end of the last command enqueued */
	int hw_top;                  /* hardware priority applied: 1 top, 0 not, -1 none yet */
	atomic_int hw_set;           /* what the backend's call set, once it returned: 2 the
				      * greatest, 1 the least, 0 none yet (statistics) */
	unsigned sleepers;           /* threads asleep on done_cv */
	uint64_t sleep_seq;          /* the least number they wait for (UINT64_MAX: none) */

	/* Under dev->lock: */
	xs_link dev_link;       /* dev->queues */
	xs_link act_link;       /* dev->active: has enqueued, incomplete commands */
	bool active;            /* = act_link is linked; written under xq->lock and dev->lock
				 * both, so either lock is enough to read it */
	xs_link kick_link;      /* dev->kicks: the launch thread should drain it */
	xs_link wait_link;      /* dev->budget.waiters: waits for budget */
	int64_t prio;           /* the scheduler's priority: the rank among waiters */
	int64_t vtime_ns;       /* device time charged so far (fair order within a priority) */
	int64_t wait_est_ns;    /* the charge it waits to make */
	bool wait_paused;       /* not running (suspended): it keeps its place among the
				 * waiters, and its fair order, but is not served (budget.c) */
	xs_objective objective; /* latency objective (objective.c; goal_pm: see there) */
	/* Under the dependency lock (deps.c): */
	xs_link dep_link; /* queues blocked on an event record */

	void *sched_priv; /* owned by the scheduler layer (its per-queue state) */
} xs_xqueue;

/* Priority inheritance: a thread that runs a command of @from (a host function, a launch
 * callback) waits for another XQueue (XQueueWait, XQueueWaitAll, XQueueLaunchInline). The
 * waited-for XQueue keeps one on its `lenders` list (under its lock) for the wait's length;
 * the scheduler ranks it at least as high as @from. Lives on the waiting thread's stack. */
typedef struct xs_lend {
	xs_link link;
	xs_xqueue *from; /* holds a reference for the wait */
} xs_lend;

static inline xs_xqueue *xs_xqueue_of(xs_obj *obj)
{
	return (xs_xqueue *)obj;
}

/* Upward report: @xq changed readiness (idle <-> ready, blocked) or needs a pass. Called
 * with xq->lock held; must not take it or block. @xq is NULL for a change that is no
 * queue's: another process on a device's board changed what it holds (remote.c, from the
 * board's watcher thread, with no lock held). */
typedef void (*xs_engine_notify_fn)(xs_xqueue *xq);
void xs_engine_set_notify(xs_engine_notify_fn fn);

/* Create an XQueue on @q at @level (checked by the caller): it is fully built and
 * attached to its device, but not published. kXSchedErrorUnknown when out of memory or
 * threads. Any thread. */
XResult xs_engine_create(xs_hwq *q, int level, xs_xqueue **out);
/* Drain @xq (every submitted command runs; waiters get their results), then detach it
 * from its device; the caller drops its reference afterwards. Any thread but one of the
 * device's own (a launch callback or host function of a queue of the same device). */
void xs_engine_destroy(xs_xqueue *xq);

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
 * (XQueueSuspend), it then enqueues without counter waits, as at Lv1 (xs_engine_gated). */
void xs_engine_set_limited(xs_xqueue *xq, bool limited, bool sole, int64_t prio);
/* Whether @xq's commands wait at a counter: Lv2 or above on a device that is not
 * oversubscribed, unless it is the sole top queue (xs_engine_set_limited). Caller holds
 * xq->lock. */
bool xs_engine_gated(const xs_xqueue *xq);
/* Change the level (checked by the caller against the HwQueue's maximum). */
void xs_engine_set_level(xs_xqueue *xq, int level);
/* Change the window; kXSchedErrorInvalidValue when threshold < batch size. Values <= 0
 * keep the current one. */
XResult xs_engine_set_launch_config(xs_xqueue *xq, int64_t threshold, int64_t batch_size);

/* Whether @xq has work: submitted, incomplete commands, or an open scope. Caller holds
 * xq->lock. */
static inline bool xs_engine_has_work(const xs_xqueue *xq)
{
	return xq->completed != xq->submitted || xq->scopes || xq->unit_open;
}

/* Whether @xq has work and is not blocked. Caller holds xq->lock. */
static inline bool xs_engine_ready(const xs_xqueue *xq)
{
	return xs_engine_has_work(xq) && !xq->blocked && !xq->waiting;
}

/* The XQueue whose event record the head command of @xq waits for while @xq is blocked
 * (deps.c), else NULL. An address to compare, not to follow: that XQueue may be destroyed
 * at any moment. Caller holds xq->lock. */
static inline const xs_xqueue *xs_engine_blocked_on(const xs_xqueue *xq)
{
	if (!xq->blocked || xs_list_empty(&xq->pending))
		return NULL;
	const xs_cmd *c = xs_container_of(xq->pending.next, xs_cmd, link);
	if (c->kind != XS_CMD_EVENT_WAIT)
		return NULL;
	return atomic_load_explicit(&c->u.wait.record->xq, memory_order_acquire);
}

/* Other processes on a device (preempt/remote.c, through its board): what one pass of the
 * scheduler sees. */
typedef struct xs_engine_remote {
	int64_t top;  /* their greatest rank present (idle queues count), INT64_MIN = none */
	int64_t busy; /* their rank that holds this process (one of their queues of the
		       * device's top rank has work), INT64_MIN = none */
	int64_t ask;  /* the co-run budget the holders allow lower work (ns, this process's
		       * share; -1 = nothing new, INT64_MAX = not limited) */
} xs_engine_remote;
/* Publish this process's top rank on device @dev (from xs_engine_device; INT64_MIN: it
 * takes no part, its policy does not rank by priority) and read the others' into @out.
 * Returns false where the device has no board (the process runs alone on it). Caller
 * holds no XQueue or device lock. */
bool xs_engine_remote_pass(const void *dev, int64_t top, xs_engine_remote *out);

/* What @xq's device's board says (XQueueGetBoard). Caller holds no lock. */
void xs_engine_board_info(xs_xqueue *xq, XBoardInfo *info);

/* The device of @xq, as an opaque key for grouping (the scheduler ranks priorities per
 * device). */
const void *xs_engine_device(const xs_xqueue *xq);

/* Whether, while an XQueue that is not limited has work, limited ones are held to the
 * co-run budget (0: commit nothing new; what they committed runs on). The scheduler
 * turns it on under HPF and MLFQ: the engine then acts on a top-rank arrival at once,
 * without waiting for the scheduler's pass. */
void xs_engine_set_hold(bool hold);

/* Whether priorities below a device's top are served strictly (XHintStrictPriority,
 * XSCHED_STRICT_PRIORITY=1): a busy limited queue then keeps every lower one waiting, the
 * budget serves its waiters highest priority first, and HPF suspends below the highest
 * ready priority whatever it is. By default (false) the budget shares itself among the
 * limited priorities by weight (budget.c, "Tiers") and HPF suspends only below a ready
 * queue of its device's top priority. -1 = from the configuration at first use. */
void xs_engine_set_strict(int strict);
bool xs_engine_strict(void);

/* Set the per-process commitment budget in ns (>= 0; 0 = one command at a time). */
void xs_engine_set_budget(int64_t budget_ns);
/* Set the per-process co-run budget in ns (>= 0; 0 = nothing new while held). */
void xs_engine_set_corun(int64_t corun_ns);
/* The co-run budget set for the process (XHintCorunBudget, XSCHED_CORUN_US), in ns. */
int64_t xs_engine_corun_ns(void);
/* The co-run budget in force on @xq's device, in ns: the latency objectives' controller's
 * while an XQueue of the device has an objective (INT64_MAX = not limited), else
 * xs_engine_corun_ns(). Any thread, no lock (a relaxed look). */
int64_t xs_engine_corun_of(const xs_xqueue *xq);
/* Give @xq a latency objective: its commands may take @goal_pm per mille of their time
 * alone (>= 1000); 0 clears it. Any thread but the device's own, no lock held. */
void xs_engine_set_objective(xs_xqueue *xq, int64_t goal_pm);
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

/* The objective state of @xq and its device's pacing. Caller holds xq->lock. */
void xs_engine_objective_state(xs_xqueue *xq, xs_objective_view *out);
/* Whether @xq's device paces: a latency objective's level hands out slices (pace.h), and
 * lower queues are held by the budget rather than suspended. Any thread, no lock. */
bool xs_engine_paced(const xs_xqueue *xq);

/* The budget state of @xq's device, for tests and statistics: committed work of limited
 * queues now (ns, commands) and the most commands charged at once since the last call. */
void xs_engine_budget_state(const xs_xqueue *xq, int64_t *charged_ns, uint64_t *charged_cmds,
			    uint64_t *max_cmds);

/* In a child after fork(): forget the parent's devices, blocked queues and bindings
 * (their threads do not exist here). */
void xs_engine_forked(void);

/* Stop the threads of devices that have no XQueue left (XSchedShutdown, exit). */
void xs_engine_shutdown(void);
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
