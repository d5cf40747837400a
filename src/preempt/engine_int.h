/* Internals shared by the engine's files: struct xs_xqueue, the device, and the calls of
 * the files below engine.c. Not for other layers: they use engine.h, where an XQueue is
 * opaque (xs_engine_snapshot, xs_engine_stats); only src/preempt and white-box unit tests
 * include this header.
 *
 * Who calls whom (engine.h has the list of files): device.c (the device threads) calls
 * engine.c (the XQueue state machine), never the reverse; both call the accountants,
 * objective.c (latency objectives: it reads budget.c's clock), budget.c (the commitment
 * budget: it asks remote.c about other processes and paces with pace.c) and deps.c (event
 * dependencies), which return what to do (grant this queue, the budget crossed 0, kick the
 * blocked queues) and call nothing above them; every file raises its signals through
 * signal.c (kick, look, activate, deactivate, hand budget on, the scheduler's pass) and
 * reads the process-wide settings in settings.c, two leaves that call no other file of the
 * engine. */
#ifndef XS_PREEMPT_ENGINE_INT_H
#define XS_PREEMPT_ENGINE_INT_H

#include <stddef.h>

#include "core/board.h"
#include "core/list.h"
#include "core/thread.h"
#include "preempt/engine.h"
#include "preempt/pace.h"

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

/* The states of a device in which a lower command is charged differently (budget.c). */
enum xs_est_kind {
	XS_EST_IDLE,  /* the top idle: its queue's mean */
	XS_EST_CORUN, /* held, under a co-run budget: its scope position's time, else the mean */
	XS_EST_PACE,  /* held, pacing: the larger of its prediction (pace.h) and the mean */
	XS_EST_KINDS
};

struct xs_xqueue {
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
	xs_link dev_link;  /* dev->queues */
	xs_link act_link;  /* dev->active: has enqueued, incomplete commands */
	bool active;       /* = act_link is linked; written under xq->lock and dev->lock
			    * both, so either lock is enough to read it */
	xs_link kick_link; /* dev->kicks: the launch thread should drain it */
	xs_link wait_link; /* dev->budget.waiters: waits for budget */
	int64_t prio;      /* the scheduler's priority: the rank among waiters */
	int64_t vtime_ns;  /* device time charged so far (fair order within a priority) */
	/* The charge its waiting command makes in each state of the device (budget.c,
	 * xs__kind: the top idle, held under a co-run budget, held and pacing), computed
	 * when it began to wait under its own lock, which the grant does not hold: */
	int64_t wait_est_ns[XS_EST_KINDS];
	bool wait_paused;       /* not running (suspended): it keeps its place among the
				 * waiters, and its fair order, but is not served (budget.c) */
	xs_objective objective; /* latency objective (objective.c; goal_pm: see there) */
	/* Under the dependency lock (deps.c): */
	xs_link dep_link; /* queues blocked on an event record */

	void *sched_priv; /* owned by the scheduler layer (its per-queue state, under its lock:
			   * xs_engine_sched_priv) */
};

/* Priority inheritance: a thread that runs a command of @from (a host function, a launch
 * callback) waits for another XQueue (XQueueWait, XQueueWaitAll, XQueueLaunchInline). The
 * waited-for XQueue keeps one on its `lenders` list (under its lock) for the wait's length;
 * the scheduler ranks it at least as high as @from. Lives on the waiting thread's stack. */
typedef struct xs_lend {
	xs_link link;
	xs_xqueue *from; /* holds a reference for the wait */
} xs_lend;

/* The casts of engine.h (xs_xqueue_of, xs_xqueue_obj) rest on this. */
_Static_assert(offsetof(struct xs_xqueue, obj) == 0, "an XQueue starts with its object");

enum {
	/* A GPU queue that makes no progress is asked for faults this often, by the progress
	 * thread and by a waiter (device.c, engine.c). */
	XS_HEALTH_CHECK_NS = 1000000,
	/* The budget's lead (budget.c): the next command of a limited queue is committed this
	 * long before the charged work is expected to end, or an eighth of a command if that is
	 * more (covers the progress thread's wake-up, the counter store's trip to the device,
	 * tens of us, and the estimate's error). Also how late a limited Lv1 queue's completions
	 * may be seen when it leaves marks out (engine.c): within the lead the budget commits
	 * the next command anyway. */
	XS_BUDGET_LEAD_NS = 100000,
};

/* One priority's share of the budget (budget.c): its virtual time, the device time its
 * queues were charged, weighted by its place among the waiting tiers. */
typedef struct xs_tier {
	int64_t prio;
	int64_t vtime_ns;
	int64_t qfloor_ns; /* the virtual time of its queue granted last (fair order within) */
} xs_tier;

/* A device's commitment budget (budget.c). Guarded by the device's lock. */
typedef struct xs_budget {
	xs_link waiters; /* XQueues waiting for budget (wait_link), served by rank */
	/* The priorities served lately (weighted fair order): ntiers in use of tiers_cap, as
	 * many as the device ever had XQueues (xs_budget_reserve), so that every priority of
	 * a waiter has a tier, however many there are. Never shrinks; freed never (nor is
	 * the device). */
	xs_tier *tiers;
	unsigned ntiers, tiers_cap;
	int64_t tier_floor_ns; /* the virtual time of the tier of the last grant */
	int64_t charged_ns;    /* estimated device time of the charged commands */
	uint64_t charged_cmds; /* the charged (committed, incomplete) commands of limited queues */
	uint64_t max_cmds;     /* the most charged at once since xs_budget_state */
	int64_t since_ns;      /* the charged work has run since: the last completion */
	int64_t vfloor_ns;     /* the virtual time of the last grant (fair order) */
	int64_t lower_end_ns;  /* when charged_cmds last fell to 0 (objective.c: "alone") */
	int64_t lower_busy_ns; /* the lower-work clock: time with charged_cmds > 0, summed up
				* to lower_from_ns (objective.c: how much of a unit co-ran) */
	int64_t lower_from_ns; /* when charged_cmds last rose from 0 */
	int64_t lower_longest_ns; /* the longest charge since a protected queue last looked */
	xs_xqueue *granting;      /* the waiter xs_budget_grant is serving now, or NULL */
	bool grant;               /* the progress thread should hand budget on */
	bool grant_blocked;       /* the one being granted found the budget full */
} xs_budget;

/* Other processes on the device (remote.c): its board (core/board.h), what this process
 * published there, and what the others' slots said at the board watcher's last look. */
typedef struct xs_remote {
	/* The board while this process holds a slot on it, else NULL (it runs alone on the
	 * device). Written under dev->lock (and the device-list lock) at the device's start
	 * and stop; read there, or lock-free (acquire): a board is never unmapped. */
	xs_board *_Atomic board;
	/* Under dev->lock: */
	int64_t wait_ns; /* this process's budget waiters wait for a device-wide turn since
			  * (monotonic ns; 0 = none waits) */
	uint64_t cmds;   /* the charged commands last published */
	/* Written once by xs_remote_start before it publishes the board (a release under
	 * dev->lock); read only by those that saw the board: the device time-slices
	 * processes (hal.h timeslices_processes), so a latency objective asks the others
	 * for no co-run (xs__ask). */
	bool timesliced;
	/* Lock-free: */
	_Atomic int64_t local_top;   /* this process's top rank on the device, from the
				      * scheduler's pass; XS_BOARD_NONE: it takes no part (its
				      * policy does not rank by priority) */
	_Atomic int64_t remote_top;  /* the others' greatest top rank (the watcher's look) */
	_Atomic int64_t remote_busy; /* the others' greatest busy rank (the watcher's look;
				      * the budget's hold reads the board itself) */
	_Atomic unsigned share;      /* processes with lower work, this one included (>= 1) */
} xs_remote;

/* A device: the HwQueues that share one device key (hal.h), their commitment budget and
 * the two threads that serve them. */
struct xs_device {
	uint64_t key;
	const xs_hal_ops *ops;
	xs_link link;       /* the device list, under the device-list lock (device.c) */
	unsigned nqueues;   /* XQueues attached, under the device-list lock */
	unsigned hw_queues; /* hardware queues its streams share (0 = as many as streams) */
	/* Lock-free: more XQueues than hardware queues (device.c): no counter waits then. */
	atomic_bool oversubscribed;
	/* Lock-free: when an XQueue of the device last went busy from idle (xs_now_ns()), where
	 * the progress thread's pace restarts (device.c). */
	_Atomic int64_t busy_from_ns;

	xs_mutex lock;       /* guards everything below */
	xs_cond progress_cv; /* the progress thread: work became active, a done push, grants */
	xs_cond launch_cv;   /* the launch thread: a kick */
	xs_link queues;      /* every XQueue of the device (xs_xqueue.dev_link) */
	xs_link active;      /* XQueues with enqueued, incomplete commands (act_link) */
	xs_link kicks;       /* XQueues the launch thread should drain (kick_link) */
	xs_budget budget;    /* budget.c */
	xs_pace pace;        /* pace.c, through budget.c: the slice a protected unit gives */
	xs_cond pace_cv;     /* a unit waiting out its slice (xs_budget_slice_wait) */
	unsigned top_busy;   /* XQueues not limited that have work (xs_xqueue.top_busy) */
	int obj_level;       /* objective.c: the co-run level in force, -1 = no objective */
	/* Lock-free copy of obj_level's budget (ns; INT64_MAX = not limited, -1 = no
	 * objective: the process setting), written under the lock (objective.c). */
	_Atomic int64_t obj_corun_ns;
	/* Lock-free copy of obj_level's pacing: the eighths of a protected unit's slack that
	 * its slice may take (0 = no slices), written under the lock (objective.c). */
	atomic_int obj_pace;
	bool poke;         /* a backend pushed a done number since the last look */
	bool kick_pending; /* kicks of the progress thread's pass not yet signalled */
	bool stop;         /* the threads exit */
	bool started;      /* the threads run */
	/* Lock-free: set by a stall release, cleared at the next progress; meanwhile suspended
	 * XQueues enqueue nothing new behind their counters (a runtime call may wait for
	 * every stream to go idle, not only for what came before it). */
	atomic_bool draining;
	int64_t stall_ns; /* the stall release limit (0 = off); set before the threads start */
	uint64_t wakeups; /* the progress thread's wake-ups (statistics, tests) */
	/* The progress thread's copy of the active list (its own; here rather than on its
	 * stack so that a forked child, which inherits the memory, can still reach it). */
	xs_xqueue **snap;
	size_t snap_cap;
	pthread_t progress, launcher;
	xs_hwq *init_q;   /* a queue to bind the threads with (holds a reference) */
	xs_remote remote; /* remote.c: other processes on the device */
};

/* settings.c (see there): a leaf, the process-wide settings the budget, the objectives
 * and the board's glue read (relaxed atomics, no lock). */
/* Set one (XHintCommitBudget, XHintCorunBudget, XHintStrictPriority, the scheduler's
 * hold): returns whether waiters may now be served (the caller, device.c, then asks every
 * device to hand budget on). */
enum xs_setting { XS_SETTING_BUDGET, XS_SETTING_CORUN, XS_SETTING_STRICT, XS_SETTING_HOLD };
bool xs_settings_set(enum xs_setting which, int64_t value);
/* The commitment budget (ns), the co-run budget set for the process (ns), and whether the
 * scheduler's hold is on (xs_dev_set_hold). */
int64_t xs_settings_budget_ns(void);
int64_t xs_settings_corun_ns(void);
bool xs_settings_hold(void);
/* The settings from the configuration again at next use (shutdown), and after fork. */
void xs_settings_reset(void);
void xs_settings_forked(void);

/* signal.c (see there): a leaf, what the engine's files raise for the device threads and
 * the scheduler. */
/* The launch thread will drain @xq (not once it is detached). Any thread, with xq->lock
 * or without (engine.c kicks the queues blocked on a record with none). */
void xs_signal_kick(xs_xqueue *xq);
/* The progress thread looks again now. Any thread. */
void xs_signal_look(xs_xqueue *xq);
/* @xq has enqueued, incomplete work now, and no longer (the progress thread's list).
 * Caller holds xq->lock. */
void xs_signal_activate(xs_xqueue *xq);
void xs_signal_deactivate(xs_xqueue *xq);
/* Wake the progress thread of the device @dev for a look now: the backend's done push
 * (hal.h on_done; any thread, no engine lock held) and xs_signal_look. */
void xs_signal_poke(void *dev);
/* The progress thread of @d should hand budget on, if any XQueue waits for it (a setting,
 * a share or the cap changed, a turn came). Caller holds d->lock. */
void xs_signal_grant(xs_device *d);
/* Ask the scheduler for a pass about @xq (it became ready or idle, or the co-run budget
 * crossed 0), through the hook it set (engine.h); NULL: about a device's board. Caller
 * holds xq->lock (engine.c; device.c at detach, under dev->lock), or no lock (NULL). */
void xs_signal_notify(xs_xqueue *xq);
/* The calling thread serves @d from now on (its progress or launch thread). */
void xs_signal_serve(const xs_device *d);
/* Whether the calling thread is one of the device threads of @d. */
bool xs_signal_is_own_thread(const xs_device *d);
/* The progress thread's pass begins: its kicks wake the launch thread once, at its end,
 * which wakes it for them. */
void xs_signal_batch_begin(void);
void xs_signal_batch_end(xs_device *d);
/* In a child after fork(): the calling thread serves no device. */
void xs_signal_forked(void);

/* budget.c (see there): an accountant; it calls only remote.c, pace.c and the leaves. */
/* Charge @cmd of the limited @xq at *@now (ns, monotonic; xs_now_lazy: read if 0) if the
 * budget has room and it is @xq's turn, else queue @xq as a waiter; true if @cmd may be
 * committed (always, uncharged, while @xq closes). Caller holds xq->lock. */
bool xs_budget_charge(xs_xqueue *xq, xs_cmd *cmd, int64_t *now);
/* Charge @cmd of the limited @xq whatever the room and the order: it is committed and
 * runs now (behind a run gate that opened again). Its device time was counted in @xq's
 * fair share when first charged. Caller holds xq->lock. */
void xs_budget_force(xs_xqueue *xq, xs_cmd *cmd);
/* Return @cmd's charge at @now (ns, monotonic: when it was seen to complete or to be
 * taken back; a completion passes the time its reap read once for all it completes);
 * waiters are then handed budget by the progress thread. Caller holds xq->lock. */
void xs_budget_uncharge(xs_xqueue *xq, xs_cmd *cmd, int64_t now);
/* The lower-work clock at @now: how long, in all, lower work was charged on @dev (ns), by
 * this process and by the others on its board (their clocks summed, xs_remote_lower_clock:
 * it steps back when one leaves, so a unit measured across that reads as alone once).
 * Caller holds dev->lock. */
int64_t xs_budget_lower_clock(const xs_device *dev, int64_t now);
/* The waiter to serve next, in rank order, if the budget has room for it: taken off the
 * waiters, marked as being granted, with a reference for the caller; NULL if none. The
 * caller (the progress thread, device.c) gives it its turn (xs_engine_grant under its
 * lock), then calls xs_budget_grant_done: true if the next waiter may be served. */
xs_xqueue *xs_budget_grant_next(xs_device *dev);
bool xs_budget_grant_done(xs_device *dev);
/* When the first waiter fits by the passing of time alone (ns, monotonic), 0 if none.
 * Caller holds dev->lock. */
int64_t xs_budget_next_ns(const xs_device *dev);
/* Count xq in its device's top_busy or not (@busy: not limited and ready, decided by the
 * engine). Caller holds xq->lock. */
void xs_budget_top_set(xs_xqueue *xq, bool busy);
/* @xq stopped running (@paused: suspended) or runs again: a waiter keeps its place in the
 * order while paused but is not served. Caller holds xq->lock. */
void xs_budget_pause(xs_xqueue *xq, bool paused);
/* @xq charges nothing for a while (a command of it waits for another queue): off the
 * waiters, where its old estimate could stop the grant loop; the next waiter's turn.
 * Caller holds xq->lock. */
void xs_budget_leave(xs_xqueue *xq);
/* The rank of @xq among waiters (its scheduler priority). A queue whose rank changes
 * starts at its new tier's floor. Caller holds xq->lock. */
void xs_budget_set_prio(xs_xqueue *xq, int64_t prio);
/* Room for the tiers of @nqueues XQueues on @dev (attach); false if out of memory.
 * Caller holds dev->lock. */
bool xs_budget_reserve(xs_device *dev, unsigned nqueues);
/* Take @xq off the waiters (detach). Caller holds dev->lock. */
void xs_budget_forget(xs_xqueue *xq);
/* Pacing (pace.h): a protected unit of @xq arrives at @now with @allow_ns of slack: open a
 * slice of @xq's device (what the lower work still committed and the debt leave of it) and
 * ask the progress thread to hand it to the waiters whose predicted commands fit. Returns
 * the slice's end (ns, monotonic), 0 when none was opened. Caller holds no lock. */
int64_t xs_budget_slice_open(xs_xqueue *xq, int64_t allow_ns, int64_t now);
/* Wait out the slice of @dev ending at @end_ns: until then, or sooner when nothing lower
 * runs in it and no waiter's command fits what is left (the slice is spent); then close it.
 * Caller holds no lock. */
void xs_budget_slice_wait(xs_device *dev, int64_t end_ns);

/* objective.c (see there): an accountant; it calls only budget.c's clock and the leaves.
 * Caller holds xq->lock and not dev->lock: */
/* A command of @xq that has an objective took @per ns (@n of them completed at @now,
 * started at @start): returns whether the co-run budget went from 0 to more or back, so
 * the caller asks the scheduler for a pass (xs_signal_notify). */
bool xs_objective_sample(xs_xqueue *xq, int64_t start, int64_t per, uint64_t n, int64_t now);
/* Set @xq's objective (@goal_pm per mille, 0 = none): a new one starts at level 0;
 * returns whether the budget in force crossed 0, as above. Caller holds xq->lock. */
bool xs_objective_set(xs_xqueue *xq, int64_t goal_pm);
/* A scope unit of the protected @xq starts at @now (its first enqueue since the scope
 * opened), and ends at @now (the completion of its last command, or the scope's close
 * with nothing in flight): the end returns whether the budget crossed 0, as above. */
void xs_objective_unit_begin(xs_xqueue *xq, int64_t now);
bool xs_objective_unit_end(xs_xqueue *xq, int64_t now);
/* Explicit units (XQueueBeginUnit): one arrived at @arrive and was released at @start (ns,
 * monotonic; not measured past XS_OBJ_UNITS in flight); whether the newest is open; the
 * newest open one is closed by its boundary @end_seq; and those whose boundary @done covers
 * end at @now (returns whether the budget crossed 0, as above). Caller holds xq->lock. */
void xs_objective_xunit_begin(xs_xqueue *xq, int64_t arrive, int64_t start);
bool xs_objective_xunit_open(const xs_xqueue *xq);
void xs_objective_xunit_close(xs_xqueue *xq, uint64_t end_seq);
void xs_objective_xunit_drop(xs_xqueue *xq); /* the newest, open, is not measured */
bool xs_objective_xunits_done(xs_xqueue *xq, uint64_t done, int64_t now);
/* The slack an explicit unit of the protected @xq may give lower queues as its pacing slice
 * (pace.h), in ns: the level in force's eighths of (objective - 1) x its alone estimate; 0
 * without an objective, an estimate or slices, or when @xq is limited. Caller holds
 * xq->lock. */
int64_t xs_objective_allowance(xs_xqueue *xq);
/* @xq became limited (it asks for no co-run level any more) or stopped being limited (it
 * asks again, from 0): returns whether the budget in force crossed 0, as above. */
bool xs_objective_limited(xs_xqueue *xq, bool limited);
/* The objective state of @xq and its device's pacing (XQueueGetStats). Caller holds
 * xq->lock. */
void xs_objective_state(xs_xqueue *xq, xs_objective_view *out);
/* Caller holds dev->lock: */
/* @xq left the device (detach): the budget in force without it; returns whether it
 * crossed 0, as above. */
bool xs_objective_forget(xs_xqueue *xq);

/* remote.c (see there): other processes on the device, over core/board.h; it calls only
 * the leaves (signal.c, settings.c). */
/* Open and join the device's board as XSCHED_BOARD says (its name from @q's backend), and
 * leave it. Caller holds the device-list lock (device.c), not @d->lock; @d's threads are
 * starting (stopped). */
void xs_remote_start(xs_device *d, xs_hwq *q);
void xs_remote_stop(xs_device *d);
/* Whether another process's queue of @d's top rank has work: the budget's hold counts it
 * as a local top queue's (budget.c, xs__held). Any thread, lock-free. */
bool xs_remote_held(const xs_device *d);
/* This process's part of a device-wide @budget (ns): shared among the processes that have
 * lower work on the device. Lock-free. */
int64_t xs_remote_share(const xs_device *d, int64_t budget);
/* The cap while another process's top holds @d (its co-run budget, the tightest of the
 * holders', shared as above): -1 = nothing new, INT64_MAX = not limited. Lock-free. */
int64_t xs_remote_corun(const xs_device *d);
/* Whether a command charged but not committed yet should give its charge back: another
 * process's top holds @d and allows nothing new beside it. Lock-free. */
bool xs_remote_revokes(const xs_device *d);
/* The other processes' lower-work clocks at @now, summed (ns; core/board.h,
 * xs_board_lower_clock: it may step when a process joins or leaves); 0 without a board.
 * Lock-free. */
int64_t xs_remote_lower_clock(const xs_device *d, int64_t now);
/* Whether no other process has had lower work charged since @since. Lock-free. */
bool xs_remote_lower_quiet(const xs_device *d, int64_t since);
/* Caller holds d->lock: */
/* Whether the one command that may always be charged when nothing is (budget.c) may be
 * charged at @now: no other process has lower work charged, and none waits longer. */
bool xs_remote_may_start(const xs_device *d, int64_t now);
/* When a waiter of @d, blocked by other processes' charged work only, may be served (that
 * work within its lead of its end), 0 if none: the progress thread looks again then. */
int64_t xs_remote_next_ns(const xs_device *d);
/* d->top_busy went from 0 or to 0: publish it. */
void xs_remote_busy_edge(xs_device *d);
/* The budget's charged work or waiters changed (at @now, 0 = unknown): publish them; and
 * once nothing is charged, wake the process that waits longest. */
void xs_remote_lower(xs_device *d, int64_t now);

/* engine.c, caller holds xq->lock: */
/* Commit what may be committed, and enqueue pending commands: on this thread when
 * @may_launch (user code may run here; the lock is dropped around it), else by a kick. */
void xs_engine_progress(xs_xqueue *xq, bool may_launch);
/* The budget's turn for @xq (budget.c, under its grant): commit what fits, and at Lv1
 * charge the head pending command and kick the launch thread to enqueue it. */
void xs_engine_grant(xs_xqueue *xq);
/* Read the done number, complete what it covers; returns whether anything completed.
 * With @check_health, a queue that made no progress is asked for faults. With @ask_idle,
 * commands after the last mark seen are complete if the backend says the queue is idle
 * (a driver call: the progress thread asks only once xs_engine_tail_due says so). */
bool xs_engine_reap(xs_xqueue *xq, bool check_health, bool ask_idle);
/* Stall release: commit what @xq holds enqueued behind its counter although the scheduler
 * suspends or the budget limits it (not when the application suspended it); returns
 * whether it committed anything. */
bool xs_engine_release(xs_xqueue *xq);
/* Whether @xq holds enqueued commands behind its counter that the device may not run yet
 * and that xs_engine_release would commit (not what XQueueSuspend holds). */
bool xs_engine_holds(const xs_xqueue *xq);
/* When, after @now, the progress thread should look at @xq (ns, monotonic): when its
 * running command is expected to complete, for long commands and where the budget, a
 * pending command or a sleeping waiter waits for that completion (engine.c, xs__expect),
 * or when an unmarked tail comes due (xs_engine_tail_due), whichever comes first of those
 * still ahead; INT64_MAX when none is (unknown, nothing runs, or a stream of short
 * commands that nothing waits for). Any thread, no lock (relaxed looks). */
int64_t xs_engine_expect_ns(const xs_xqueue *xq, int64_t now);
/* Whether @xq's done number moved past what it completed: worth a reap. Any thread, no
 * lock (a relaxed look). */
bool xs_engine_done_moved(xs_xqueue *xq);
/* Until when (ns, monotonic) @xq's submitting thread reaps: XS__TAIL_QUIET_NS (20 us)
 * after its last enqueue, with nobody asleep on the queue; 0 = it does not. Until then it
 * completes what the marks show at its next submit, and the progress thread leaves a moved
 * done number to it (taking the lock for it stalled each submit of a burst) and looks at
 * none of the queue's expected completions (it woke at each expected mark of a burst of
 * microsecond kernels at Lv2, to find it reaped: 0.6 us of its CPU per kernel on an H200).
 * The tail, the health and stall looks, and a sleeping waiter stay the progress thread's; a
 * completion is seen at most that much plus one poll interval late where the submits stop
 * (a limited queue's budget then commits less, never more). Any thread, no lock. */
int64_t xs_engine_reaper_until(const xs_xqueue *xq);
/* Whether @xq's last commands were enqueued without a done mark and were expected to
 * complete by @now: worth a reap, which asks the backend whether the queue is idle. Any
 * thread, no lock. */
bool xs_engine_tail_due(const xs_xqueue *xq, int64_t now);

/* deps.c: a leaf (it calls no other file of the engine; engine.c acts on its answers). */
/* Whether the event wait @cmd at the head of @xq may be enqueued now; when it must not
 * be launched at all, *res is the result to give it. When it may not go, @xq is on the
 * blocked list and will be kicked at the next change. Caller holds xq->lock. */
bool xs_dep_check(xs_xqueue *xq, xs_cmd *cmd, XResult *res);
/* Take @xq off the blocked list (destroy). Caller holds xq->lock. */
void xs_dep_unblock(xs_xqueue *xq);
/* Move @record's dependency state forward to @state (never back; @res kept with
 * XS_DEP_FAILED); returns whether it changed: the blocked XQueues are then kicked. */
bool xs_dep_advance(xs_cmd *record, enum xs_dep_state state, XResult res);
/* The number of XQueues blocked now, and the first of them, taken off the list with a
 * reference for the caller (NULL: none): the engine kicks them after a change. No lock
 * but at most one XQueue's. */
size_t xs_dep_blocked_count(void);
xs_xqueue *xs_dep_pop_blocked(void);

/* In a child after fork(): clean state. */
void xs_dep_forked(void);
/* An event record of @xq was enqueued (@ok) or failed to; @needs_done: waiters must wait
 * for its completion. Returns whether its state changed: the blocked XQueues are then
 * kicked. Caller holds xq->lock. */
bool xs_dep_enqueued(xs_cmd *rec, bool ok, bool needs_done, XResult res);

#endif
