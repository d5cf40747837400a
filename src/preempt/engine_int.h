/* Internals shared by the engine's files (engine.c, device.c, deps.c). Not for other
 * layers: they use engine.h. */
#ifndef XS_PREEMPT_ENGINE_INT_H
#define XS_PREEMPT_ENGINE_INT_H

#include "preempt/engine.h"

/* What the device threads (device.c) ask of the engine (engine.c), registered at attach:
 * a hook, so that device.c never calls up into engine.c. */
typedef struct xs_dev_hooks {
	void (*progress)(xs_xqueue *xq, bool may_launch); /* xs_engine_progress */
	bool (*reap)(xs_xqueue *xq, bool check_health);   /* xs_engine_reap */
	bool (*release)(xs_xqueue *xq);                   /* xs_engine_release */
	bool (*holds)(const xs_xqueue *xq);               /* xs_engine_holds */
} xs_dev_hooks;

/* A device: the HwQueues that share one device key (hal.h), their commitment budget and
 * the two threads that serve them. */
struct xs_device {
	uint64_t key;
	const xs_hal_ops *ops;
	xs_link link;     /* the device list, under the device-list lock (device.c) */
	unsigned nqueues; /* XQueues attached, under the device-list lock */

	xs_mutex lock;         /* guards everything below */
	xs_cond progress_cv;   /* the progress thread: work became active, a done push */
	xs_cond launch_cv;     /* the launch thread: a kick */
	xs_link queues;        /* every XQueue of the device (xs_xqueue.dev_link) */
	xs_link active;        /* XQueues with enqueued, incomplete commands (act_link) */
	xs_link kicks;         /* XQueues the launch thread should drain (kick_link) */
	xs_link waiters;       /* XQueues waiting for budget, FIFO (wait_link) */
	int64_t charged_ns;    /* committed work of limited XQueues, estimated */
	uint64_t charged_cmds; /* and the number of their committed, incomplete commands */
	uint64_t max_cmds;     /* the most ever charged at once */
	unsigned top_busy;     /* XQueues not limited that have work (xs_xqueue.top_busy) */
	bool poke;             /* a backend pushed a done number since the last look */
	bool grant;            /* budget was returned while XQueues wait for it */
	xs_xqueue *granting;   /* the waiter xs_dev_grant is serving now, or NULL */
	bool grant_blocked;    /* it found the budget full */
	bool stop;             /* the threads exit */
	bool started;          /* the threads run */
	/* Lock-free: set by a stall release, cleared at the next progress; meanwhile suspended
	 * XQueues enqueue nothing new behind their counters (a runtime call may wait for
	 * every stream to go idle, not only for what came before it). */
	atomic_bool draining;
	int64_t stall_ns; /* the stall release limit (0 = off); set before the threads start */
	pthread_t progress, launcher;
	const xs_dev_hooks *hooks; /* set at the first attach, read-only after */
	xs_hwq *init_q;            /* a queue to bind the threads with (holds a reference) */
};

/* device.c */
/* Find or start the device of xq->hwq; @hooks must live for the process. */
xs_device *xs_dev_attach(xs_xqueue *xq, const xs_dev_hooks *hooks);
void xs_dev_detach(xs_xqueue *xq); /* the reverse; xq is drained */
/* Caller holds xq->lock: */
void xs_dev_kick(xs_xqueue *xq);       /* the launch thread will drain xq */
void xs_dev_activate(xs_xqueue *xq);   /* xq has enqueued, incomplete work now */
void xs_dev_deactivate(xs_xqueue *xq); /* and no longer */
bool xs_dev_charge(xs_xqueue *xq, xs_cmd *cmd);
/* Return @cmd's charge; when XQueues wait for budget, the progress thread is asked to
 * hand it on (xs_dev_grant). */
void xs_dev_uncharge(xs_xqueue *xq, xs_cmd *cmd);
void xs_dev_grant(xs_device *dev);
/* Count xq in its device's top_busy or not (@busy: not limited and ready, decided by the
 * engine). Caller holds xq->lock. */
void xs_dev_top_set(xs_xqueue *xq, bool busy);
/* Whether the calling thread is one of the device threads of @dev. */
bool xs_dev_is_own_thread(const xs_device *dev);
int64_t xs_dev_budget_ns(void);

/* engine.c, caller holds xq->lock: */
/* Commit what may be committed, and enqueue pending commands: on this thread when
 * @may_launch (user code may run here; the lock is dropped around it), else by a kick. */
void xs_engine_progress(xs_xqueue *xq, bool may_launch);
/* Read the done number, complete what it covers; returns whether anything completed.
 * With @check_health, a queue that made no progress is asked for faults. */
bool xs_engine_reap(xs_xqueue *xq, bool check_health);
/* Stall release: commit what @xq holds enqueued behind its counter although the scheduler
 * suspends or the budget limits it (not when the application suspended it); returns
 * whether it committed anything. */
bool xs_engine_release(xs_xqueue *xq);
/* Whether @xq holds enqueued commands behind its counter that the device may not run yet
 * and that xs_engine_release would commit (not what XQueueSuspend holds). */
bool xs_engine_holds(const xs_xqueue *xq);
/* Called with xq->lock held by deps.c when a blocked queue may go on. */
void xs_engine_notify(xs_xqueue *xq);

/* deps.c */
/* Whether the event wait @cmd at the head of @xq may be enqueued now; when it must not
 * be launched at all, *res is the result to give it. When it may not go, @xq is on the
 * blocked list and will be kicked at the next change. Caller holds xq->lock. */
bool xs_dep_check(xs_xqueue *xq, xs_cmd *cmd, XResult *res);
/* Take @xq off the blocked list (destroy). Caller holds xq->lock. */
void xs_dep_unblock(xs_xqueue *xq);
/* An event record was submitted: a blocked wait may sit in front of it. */
void xs_dep_record_submitted(void);

/* In a child after fork(): clean state. */
void xs_dev_forked(void);
void xs_dep_forked(void);
/* An event record of @xq was enqueued (@ok) or failed to; @needs_done: waiters must wait
 * for its completion. Caller holds xq->lock. */
void xs_dep_enqueued(xs_cmd *rec, bool ok, bool needs_done, XResult res);

#endif
