/* The local scheduler: one thread per process ("xsched-sched") that runs a policy.
 *
 * Wake-up sources (they may coalesce: one pass sees all of them):
 * - xs_sched_notify(): an XQueue went from idle to ready or from ready to idle, or one of
 *   its hints changed;
 * - a registration or removal of an XQueue, or a policy change;
 * - the policy's own timer (the deadline it returned from its last pass);
 * - shutdown.
 * Each pass reads every registered XQueue's state under its lock (level-triggered: the
 * order in which notifications arrive does not matter), asks the policy which XQueues
 * run, and applies the difference as scheduler suspensions. Idle, it sleeps on a
 * condition variable: no polling.
 */
#ifndef XS_SCHED_SCHED_H
#define XS_SCHED_SCHED_H

#include "xsched.h"

struct xs_xqueue;

/* Register a new XQueue; starts the scheduler on first use (configured from the
 * environment unless XHintSetScheduler() was called). Any thread, no lock held. */
XResult xs_sched_add(struct xs_xqueue *xq);
/* Forget @xq (it is drained and about to be freed). Any thread, no lock held. */
void xs_sched_remove(struct xs_xqueue *xq);
/* Ask for a scheduling pass soon. Any thread; may be called with xq->lock held. */
void xs_sched_notify(struct xs_xqueue *xq);

#endif
