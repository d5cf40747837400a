/* Internals shared by the engine's files. engine.c (the XQueue state machine) and device.c
 * (the device threads) call each other; budget.c (the commitment budget), objective.c (the
 * latency objectives' controller) and deps.c (event dependencies) are leaves: they call
 * none of the others (objective.c reads budget.c's clock and settings) and return what to
 * do (grant this queue, the budget crossed 0, kick the blocked queues), which engine.c and
 * device.c act on. Not for other layers: they use engine.h. */
#ifndef XS_PREEMPT_ENGINE_INT_H
#define XS_PREEMPT_ENGINE_INT_H

#include "core/board.h"
#include "preempt/engine.h"
#include "preempt/pace.h"

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
	uint64_t max_cmds;     /* the most charged at once since xs_engine_budget_state */
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

/* device.c */
/* Find or start the device of xq->hwq. */
xs_device *xs_dev_attach(xs_xqueue *xq);
void xs_dev_detach(xs_xqueue *xq); /* the reverse; xq is drained */
/* Caller holds xq->lock: */
void xs_dev_kick(xs_xqueue *xq);       /* the launch thread will drain xq */
void xs_dev_look(xs_xqueue *xq);       /* the progress thread looks again now */
void xs_dev_activate(xs_xqueue *xq);   /* xq has enqueued, incomplete work now */
void xs_dev_deactivate(xs_xqueue *xq); /* and no longer */
/* Whether the calling thread is one of the device threads of @dev. */
bool xs_dev_is_own_thread(const xs_device *dev);
/* Ask every device's progress thread to hand budget on (a setting changed). No lock. */
void xs_dev_grant_all(void);

/* budget.c (see there): a leaf. */
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
/* The lower-work clock at @now: how long, in all, lower work was charged on @dev (ns).
 * Caller holds dev->lock. */
int64_t xs_budget_lower_clock(const xs_device *dev, int64_t now);
/* The waiter to serve next, in rank order, if the budget has room for it: taken off the
 * waiters, marked as being granted, with a reference for the caller; NULL if none. The
 * caller (the progress thread, device.c) gives it its turn (xs_engine_grant under its
 * lock), then calls xs_budget_grant_done: true if the next waiter may be served. */
xs_xqueue *xs_budget_grant_next(xs_device *dev);
bool xs_budget_grant_done(xs_device *dev);
/* The process-wide settings (XHintCommitBudget, XHintCorunBudget, XHintStrictPriority,
 * the scheduler's hold): returns whether waiters may now be served (the caller then asks
 * every device to hand budget on). */
enum xs_budget_setting { XS_BUDGET_COMMIT, XS_BUDGET_CORUN, XS_BUDGET_STRICT, XS_BUDGET_HOLD };
bool xs_budget_set(enum xs_budget_setting which, int64_t value);
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
/* The settings from the configuration again at next use (shutdown), and after fork. */
void xs_budget_reset(void);
void xs_budget_forked(void);

/* objective.c (see there): a leaf. Caller holds xq->lock and not dev->lock: */
/* A command of @xq that has an objective took @per ns (@n of them completed at @now,
 * started at @start): returns whether the co-run budget went from 0 to more or back, so
 * the caller asks the scheduler for a pass (xs_engine_notify). */
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
/* Caller holds dev->lock: */
/* @xq left the device (detach): the budget in force without it; returns whether it
 * crossed 0, as above. */
bool xs_objective_forget(xs_xqueue *xq);
/* Waiters may fit now: ask the progress thread to hand budget on (budget.c). */
void xs_budget_widened(xs_device *d);

/* remote.c (see there): a leaf over core/board.h: other processes on the device. */
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
/* Ask the scheduler for a pass about @xq (it became ready or idle, or the co-run budget
 * crossed 0). Caller holds xq->lock (engine.c, or device.c at detach under dev->lock). */
void xs_engine_notify(xs_xqueue *xq);

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
void xs_dev_forked(void);
void xs_dep_forked(void);
/* An event record of @xq was enqueued (@ok) or failed to; @needs_done: waiters must wait
 * for its completion. Returns whether its state changed: the blocked XQueues are then
 * kicked. Caller holds xq->lock. */
bool xs_dep_enqueued(xs_cmd *rec, bool ok, bool needs_done, XResult res);

#endif
