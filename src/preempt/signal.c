/* The engine's signals: what its files raise for the device threads (device.c) and for the
 * scheduler, a leaf that every other file of the engine may call.
 *
 * - kick: the launch thread should drain an XQueue (its commands may go, and the thread
 *   that found so may not run user code);
 * - look: the progress thread should look now (a waiter sleeps, a pushed number was
 *   stored late), and poke, the same from a backend's done push (hal.h on_done);
 * - activate, deactivate: an XQueue has enqueued, incomplete work, or no longer (the
 *   progress thread's list);
 * - grant: the progress thread should hand budget on to a device's waiters (budget.c);
 * - notify: the upward hook, a pass of the scheduler about a queue (or about a device's
 *   board, remote.c).
 * And what the device threads say of themselves: which device the calling thread serves
 * (xs_signal_is_own_thread: a wait there would never end), and the progress thread's
 * pass, during which its kicks wake the launch thread once, at the pass's end.
 *
 * A leaf: it calls no other file of the engine. Locks: each signal takes the device's lock
 * (dev->lock, under xq->lock where the caller holds one) around the device's lists and
 * condition variables, but the hand-on of budget, whose caller holds it already
 * (engine_int.h says which lock each call needs).
 */
#include "preempt/engine_int.h"

/* The scheduler's hook (xs_signal_set_notify). Kept loose: one word, set at the
 * scheduler's start and kept by a fork child (its scheduler is the parent's code). */
static _Atomic(xs_signal_notify_fn) xs__notify;

/* The device the calling thread serves, if it is a device thread (xs_signal_serve). */
static _Thread_local const xs_device *xs__own;

/* Set on the progress thread during its pass over the queues: its kicks wake the launch
 * thread once, at the end of the pass (xs_signal_batch_end), not once per command. */
static _Thread_local bool xs__batching;

void xs_signal_set_notify(xs_signal_notify_fn fn)
{
	atomic_store_explicit(&xs__notify, fn, memory_order_release);
}

void xs_signal_notify(xs_xqueue *xq)
{
	xs_signal_notify_fn fn = atomic_load_explicit(&xs__notify, memory_order_acquire);
	if (fn)
		fn(xq);
}

void xs_signal_serve(const xs_device *d)
{
	xs__own = d;
}

bool xs_signal_is_own_thread(const xs_device *d)
{
	return xs__own == d;
}

void xs_signal_kick(xs_xqueue *xq)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	/* Not once detached: a kicker that holds a reference (engine.c kicks blocked queues
	 * with no XQueue lock held) may come after xs_dev_detach, and a queue left on the
	 * kick list would be drained by the launch thread after it was freed (a use after
	 * free the randomized stress found under the thread sanitizer). */
	if (!xs_linked(&xq->kick_link) && xs_linked(&xq->dev_link)) {
		xs_list_push_back(&d->kicks, &xq->kick_link);
		if (xs__batching && xs__own == d)
			d->kick_pending = true;
		else
			xs_cond_signal(&d->launch_cv);
	}
	xs_mutex_unlock(&d->lock);
}

void xs_signal_batch_begin(void)
{
	xs__batching = true;
}

void xs_signal_batch_end(xs_device *d)
{
	xs__batching = false;
	xs_mutex_lock(&d->lock);
	if (d->kick_pending) {
		d->kick_pending = false;
		xs_cond_signal(&d->launch_cv);
	}
	xs_mutex_unlock(&d->lock);
}

void xs_signal_deactivate(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	if (!xq->active)
		return;
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	xs_list_remove(&xq->act_link);
	xq->active = false;
	xs_mutex_unlock(&d->lock);
}

void xs_signal_activate(xs_xqueue *xq)
{
	XS_ASSERT_HELD(&xq->lock);
	if (xq->active)
		return; /* the common case, each command of a busy queue: no device lock */
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	xs_list_push_back(&d->active, &xq->act_link);
	xq->active = true;
	xs_cond_signal(&d->progress_cv);
	xs_mutex_unlock(&d->lock);
}

void xs_signal_poke(void *dev)
{
	xs_device *d = dev;
	xs_mutex_lock(&d->lock);
	if (!d->poke) {
		d->poke = true;
		xs_cond_signal(&d->progress_cv);
	}
	xs_mutex_unlock(&d->lock);
}

void xs_signal_look(xs_xqueue *xq)
{
	xs_signal_poke(xq->dev);
}

void xs_signal_grant(xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
	if (!xs_list_empty(&d->budget.waiters) && !d->budget.grant) {
		d->budget.grant = true;
		xs_cond_signal(&d->progress_cv);
	}
}

void xs_signal_forked(void)
{
	/* The forking thread serves no device of the child (it may have been a launch thread
	 * of the parent's, forking inside a launch callback). */
	xs__own = NULL;
	xs__batching = false;
}
