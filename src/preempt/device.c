/* Devices: the two threads that serve every XQueue of a device.
 *
 * Above the state machine: this file calls engine.c (the launch thread drains a queue with
 * xs_engine_progress, the progress thread reaps with xs_engine_reap and hands budget on
 * with xs_engine_grant) and the accountants below it, and engine.c never calls it: what
 * the engine asks of these threads (kick, look, activate, deactivate, hand budget on) it
 * raises through the signals (signal.c), which these threads wait for. The api attaches
 * each XQueue here after xs_engine_create (xs_dev_attach: a device and its threads start
 * with its first XQueue) and detaches it after xs_engine_destroy drained it
 * (xs_dev_detach). The process-wide settings of the budget are set here too
 * (xs_dev_set_*: settings.c keeps them; every device then hands budget on).
 *
 * The progress thread ("xs-progress") reads the done numbers of the device's active
 * XQueues (hal.h) and completes what they cover; that frees window space and budget,
 * which it hands on by kicks (Lv1: enqueuing runs user code, so the launch thread does it)
 * or commits (Lv2+: one store, done here). Backends that push done numbers (the host
 * backend) wake it. For the others (GPU) it polls while some XQueue has work in flight,
 * but sleeps between looks: XS__POLL_MIN_NS after a look that found progress, doubling
 * while nothing completes up to XS__POLL_MAX_NS (counted from the last progress, the last
 * start of an XQueue's work from idle or the expected completion last looked for,
 * whichever came last: a quiet spell before says nothing of the work now, and a command
 * not seen at its expected end is due soon), and never past the moment the budget
 * admits its next waiter (budget.c) or a long command, or one that the budget or a
 * pending command waits for, is expected to complete (its queue's estimated time per
 * command; engine.c, xs__expect). Waiters poll for their own commands and submitting threads
 * complete what is marked done when their window is full (engine.c), so this thread's pace bounds
 * only how soon other queues' windows refill and an idle queue is seen idle.
 *
 * The launch thread ("xs-launch") drains the XQueues kicked to it: it enqueues their
 * pending commands (running their launch callbacks) when they may enqueue. A command
 * reaches it only when it could not be enqueued at submit time.
 *
 * Oversubscription: a device whose streams share fewer hardware queues than it has
 * XQueues (xs_hwq.hw_queues) is marked oversubscribed, logged once per spell; the engine
 * then enqueues no command behind a counter on it (engine.h).
 *
 * Stall release: when nothing completes on the device and no running XQueue enqueues a
 * command for XSCHED_STALL_RELEASE_US (default 1 s), while XQueues hold enqueued commands
 * behind their counters (suspended by the scheduler, or held by the budget), the progress
 * thread commits what they hold, once per such spell. A thread may be inside a runtime
 * call that waits for every stream of the context, the held ones too (CUDA loads a module
 * in cudnnCreate, at a lazily loaded kernel's first launch, in cudaFree), and block the
 * launches of the queue that holds the others: nothing else would end that (seen with
 * PyTorch on an H100, doc/python.md). Until a running XQueue progresses again, suspended
 * ones enqueue nothing new behind their counters (the call may wait for every stream to
 * go idle); they stay suspended. A device that runs one command longer than the limit,
 * with nothing else completing, gets the held work committed too: the price of the rule,
 * paid only by such devices.
 */
#include <sched.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "core/config.h"
#include "core/log.h"
#include "preempt/engine_int.h"

enum {
	/* GPU polling pace (see above): the first look after progress, and the longest sleep
	 * while work is in flight. 50 us keeps a 16-deep window of 20 us kernels fed with
	 * about 20k wake-ups a second at most; 1 ms is also the health-check period. */
	XS__POLL_MIN_NS = 50000,
	XS__POLL_MAX_NS = 1000000,
};

/* The devices, one struct, made anew in a fork child (xs_dev_forked). */
static struct xs__devs {
	/* Guards the list and each device's nqueues, hw_queues and oversubscribed changes. */
	xs_mutex lock;
	xs_link list;             /* xs_device.link */
	atomic_bool stall_warned; /* the first stall release is a warning, later ones debug */
} xs__dv = {XS_MUTEX_INITIALIZER, {&xs__dv.list, &xs__dv.list}, false};
/* A child's: the parent's devices, reachable for leak checkers (volatile: only ever
 * written, the store must stay). Not state: it outlives the re-initialisation. */
static xs_link *volatile xs__parent_devices;

/* Serve the budget's waiters in rank order, each given its turn until one finds the
 * budget full (at Lv1 its head command is charged there and the launch thread enqueues
 * it). The progress thread. */
static void xs__grant(xs_device *d)
{
	xs_xqueue *xq;
	while ((xq = xs_budget_grant_next(d))) {
		xs_mutex_lock(&xq->lock);
		xs_engine_grant(xq);
		xs_mutex_unlock(&xq->lock);
		bool more = xs_budget_grant_done(d);
		xs_obj_unref(&xq->obj);
		if (!more)
			break;
	}
}

/* ---- the process-wide settings of the budget ---- */

/* A setting changed: every device's progress thread hands budget on (waiters may fit). */
static void xs__grant_all(void)
{
	xs_mutex_lock(&xs__dv.lock);
	xs_list_for_each(l, &xs__dv.list)
	{
		xs_device *d = xs_container_of(l, xs_device, link);
		xs_mutex_lock(&d->lock);
		xs_signal_grant(d);
		xs_mutex_unlock(&d->lock);
	}
	xs_mutex_unlock(&xs__dv.lock);
}

/* A process-wide setting of the budget changed: waiters may be served now. */
static void xs__setting(enum xs_setting which, int64_t value)
{
	if (xs_settings_set(which, value))
		xs__grant_all();
}

void xs_dev_set_budget(int64_t budget_ns)
{
	xs__setting(XS_SETTING_BUDGET, budget_ns);
}

void xs_dev_set_corun(int64_t corun_ns)
{
	xs__setting(XS_SETTING_CORUN, corun_ns);
}

void xs_dev_set_strict(int strict)
{
	xs__setting(XS_SETTING_STRICT, strict);
}

void xs_dev_set_hold(bool hold)
{
	xs__setting(XS_SETTING_HOLD, hold);
}

/* ---- the launch thread ---- */

static void *xs__launch_main(void *arg)
{
	xs_device *d = arg;
	xs_signal_serve(d);
	XResult init = d->ops->thread_init(d->init_q);
	if (init != kXSchedSuccess)
		XS_ERROR("engine", "the launch thread cannot use the %s device (%s)", d->ops->name,
			 xs_result_name(init));
	xs_mutex_lock(&d->lock);
	for (;;) {
		if (xs_list_empty(&d->kicks)) {
			if (d->stop)
				break;
			xs_cond_wait(&d->launch_cv, &d->lock);
			continue;
		}
		xs_xqueue *xq = xs_container_of(xs_list_pop_front(&d->kicks), xs_xqueue, kick_link);
		xs_obj_ref(&xq->obj);
		xs_mutex_unlock(&d->lock);
		xs_mutex_lock(&xq->lock);
		xs_engine_progress(xq, true);
		xs_mutex_unlock(&xq->lock);
		xs_obj_unref(&xq->obj);
		xs_mutex_lock(&d->lock);
	}
	xs_mutex_unlock(&d->lock);
	return NULL;
}

/* ---- the progress thread ---- */

/* Copy the active XQueues into d->snap (references taken). Caller holds d->lock. */
static size_t xs__snapshot(xs_device *d)
{
	XS_ASSERT_HELD(&d->lock);
	xs_xqueue ***v = &d->snap;
	size_t *cap = &d->snap_cap;
	size_t n = 0;
	xs_list_for_each(l, &d->active) n++;
	if (n > *cap) {
		size_t c = *cap ? *cap : 16;
		while (c < n)
			c *= 2;
		xs_xqueue **p = realloc(*v, c * sizeof(*p));
		if (!p) {
			XS_ERROR("engine", "out of memory for %zu active queues", n);
			n = *cap;
		} else {
			*v = p;
			*cap = c;
		}
	}
	size_t i = 0;
	xs_list_for_each(l, &d->active)
	{
		if (i == n)
			break;
		xs_xqueue *xq = xs_container_of(l, xs_xqueue, act_link);
		xs_obj_ref(&xq->obj);
		(*v)[i++] = xq;
	}
	return i;
}

/* The stall release's view of its device, kept by the progress thread. */
typedef struct xs__stall {
	uint64_t mark;      /* the running queues' progress mark at its last change */
	int64_t since_ns;   /* when it last changed, or the device last went busy */
	int64_t release_ns; /* the last release, 0 = none */
} xs__stall;

/* One pass over @v, each queue under its lock: whether some queue holds work a release
 * would commit, and in *mark the running queues' enqueued plus completed counts, which
 * move when one of them launches or completes a command (what a release lets go runs on
 * suspended queues and does not move it). */
static bool xs__look(xs_xqueue **v, size_t n, uint64_t *mark)
{
	bool holds = false;
	*mark = 0;
	for (size_t i = 0; i < n; i++) {
		xs_mutex_lock(&v[i]->lock);
		holds |= xs_engine_holds(v[i]);
		if (v[i]->running)
			*mark += v[i]->enqueued + v[i]->completed;
		xs_mutex_unlock(&v[i]->lock);
	}
	return holds;
}

/* Commit what the queues of @v hold (the stall release). */
static void xs__release(xs_device *d, xs_xqueue **v, size_t n, int64_t quiet_ns)
{
	size_t released = 0;
	for (size_t i = 0; i < n; i++) {
		xs_mutex_lock(&v[i]->lock);
		released += xs_engine_release(v[i]);
		xs_mutex_unlock(&v[i]->lock);
	}
	if (!released)
		return;
	atomic_store_explicit(&d->draining, true, memory_order_relaxed);
	if (!atomic_exchange_explicit(&xs__dv.stall_warned, true, memory_order_relaxed))
		XS_WARN("engine",
			"%s device: no progress for %lld ms while %zu XQueue(s) held "
			"enqueued commands: committing them (a runtime call may be waiting for "
			"every stream: a module load, cudnnCreate, cudaFree; "
			"XSCHED_STALL_RELEASE_US, doc/architecture.md). Further releases are "
			"logged at debug level",
			d->ops->name, (long long)(quiet_ns / 1000000), released);
	else
		XS_DEBUG("engine", "%s device: stall release of %zu XQueue(s) after %lld ms",
			 d->ops->name, released, (long long)(quiet_ns / 1000000));
}

/* Once per XS_HEALTH_CHECK_NS, before the reaping: the stall release. Returns whether queues
 * still hold releasable work; the health check, a runtime call that blocks while another
 * thread's call waits for every stream (and holds the queue's lock meanwhile), is made
 * only when none does, so only after a release has let such work go. */
static bool xs__stall_look(xs_device *d, xs_xqueue **v, size_t n, int64_t now, xs__stall *st)
{
	uint64_t mark;
	bool holds = xs__look(v, n, &mark);
	if (mark != st->mark) {
		st->mark = mark;
		st->since_ns = now;
		atomic_store_explicit(&d->draining, false, memory_order_relaxed);
	}
	int64_t quiet = now - (st->since_ns > st->release_ns ? st->since_ns : st->release_ns);
	if (d->stall_ns <= 0 || quiet < d->stall_ns)
		return holds;
	if (holds)
		xs__release(d, v, n, now - st->since_ns);
	st->release_ns = now; /* the next look one limit later */
	return false;
}

/* How long the progress thread of a backend that pushes done numbers sleeps when nothing
 * happens: it still looks for stalls often enough. */
static int64_t xs__idle_wait_ns(const xs_device *d)
{
	int64_t w = 100000000;
	if (d->stall_ns > 0 && d->stall_ns / 4 < w)
		w = d->stall_ns / 4 > 1000000 ? d->stall_ns / 4 : 1000000;
	return w;
}

/* When the GPU progress thread looks next, after a look at @now (@since: the last
 * progress), given the earliest expected completion @expect; the caller also bounds it by
 * the budget's next admission. */
static int64_t xs__next_look(int64_t now, int64_t since, int64_t expect)
{
	int64_t nap = (now - since) / 2;
	if (nap < XS__POLL_MIN_NS)
		nap = XS__POLL_MIN_NS;
	if (nap > XS__POLL_MAX_NS)
		nap = XS__POLL_MAX_NS;
	int64_t at = now + nap;
	if (expect > now && expect < at)
		at = expect;
	return at;
}

/* What the progress thread carries from one round to the next. */
typedef struct xs__pace {
	int64_t last_progress; /* the last completion seen */
	int64_t last_check;    /* the last stall and health look (XS_HEALTH_CHECK_NS) */
	xs__stall st;          /* the stall release's clock */
	bool woke;             /* waited for work since the last look */
	int64_t looked_for;    /* the expected completion the last sleep ended at */
} xs__pace;

/* One round's view: the active queues (d->snap, with references), what was asked. */
typedef struct xs__round {
	xs_xqueue **v;
	size_t n;
	bool grant;       /* a hand-on of budget was asked for */
	int64_t bnext;    /* when the first budget waiter fits by time alone, 0 = none */
	bool look, check; /* a stall look this round; and a health check of silent queues */
	bool progressed;  /* something completed */
	int64_t expect;   /* the earliest expected completion worth a look */
} xs__round;

/* Phase 1: sleep until there is active work or budget to hand on, then take the round's
 * snapshot. Returns false when the thread should exit. */
static bool xs__await_work(xs_device *d, xs__pace *p, xs__round *r)
{
	xs_mutex_lock(&d->lock);
	while (!d->stop && xs_list_empty(&d->active) && !d->budget.grant) {
		/* Nothing in flight here, but waiters may be served when another process's
		 * charged work is about to end (remote.c); else only a signal wakes it. */
		int64_t next = xs_budget_next_ns(d);
		if (!next)
			xs_cond_wait(&d->progress_cv, &d->lock);
		else if (!xs_cond_timedwait(&d->progress_cv, &d->lock, next))
			d->budget.grant = true;
		p->woke = true;
	}
	if (d->stop && xs_list_empty(&d->active)) {
		xs_mutex_unlock(&d->lock);
		return false;
	}
	d->poke = false;
	*r = (xs__round){.grant = d->budget.grant, .expect = INT64_MAX};
	d->budget.grant = false;
	d->wakeups++;
	r->n = xs__snapshot(d);
	r->v = d->snap;
	r->bnext = xs_budget_next_ns(d);
	xs_mutex_unlock(&d->lock);
	return true;
}

/* Phase 2, once per XS_HEALTH_CHECK_NS: the stall release, then (GPU) whether silent
 * queues are asked for faults this round. */
static void xs__look_phase(xs_device *d, xs__pace *p, xs__round *r, int64_t now)
{
	r->look = now - p->last_check >= XS_HEALTH_CHECK_NS;
	if (!r->look)
		return;
	if (p->woke)
		p->st.since_ns = now; /* busy from idle: the stall clock starts here */
	bool holds = xs__stall_look(d, r->v, r->n, now, &p->st);
	r->check = !d->ops->pushes_done && !holds;
	p->last_check = now;
	p->woke = false;
}

/* Phase 3, per queue: reap what completed (the lock only where a done number moved, where
 * an unmarked tail is due, and on each look, which also takes idle queues off the active
 * list), and when to look at it next. A backend that pushes (host) woke this thread for the
 * change: its idle() is cheap, and nothing else would look again before the next push or
 * stall check (xs__idle_wait_ns), so each of its queues is reaped, under the lock (not on
 * the strength of the lock-free tail_unmarked, which the enqueuer's store need not have
 * reached). Drops the snapshot's references. */
static void xs__reap_phase(const xs_device *d, xs__round *r, int64_t now)
{
	for (size_t i = 0; i < r->n; i++) {
		xs_xqueue *xq = r->v[i];
		bool due = d->ops->pushes_done || xs_engine_tail_due(xq, now);
		int64_t turn = xs_engine_reaper_until(xq); /* its submitter reaps */
		if (r->look || due || (now >= turn && xs_engine_done_moved(xq))) {
			xs_mutex_lock(&xq->lock);
			r->progressed |= xs_engine_reap(xq, r->check, due);
			xs_mutex_unlock(&xq->lock);
		} else if (now < turn && xs_engine_done_moved(xq)) {
			r->progressed = true; /* its submitter completes it; the pace stays */
		}
		/* Not before its submitter's turn ends: it sees those completions. And while it
		 * has one, not sooner than the shortest pace: a stream of microsecond kernels
		 * renews the turn at each enqueue, and a look at each turn's end (every 20 us,
		 * XS__TAIL_QUIET_NS) found only a new turn, at about 1 us of this thread's CPU
		 * per 5 us kernel (H200, 2026-11-26, benchmarks/hotpath_profile.c). A submitter
		 * that stops has its tail seen at most this much later. */
		int64_t e = xs_engine_expect_ns(xq, now);
		if (e < turn)
			e = turn;
		if (now < turn && e < now + XS__POLL_MIN_NS)
			e = now + XS__POLL_MIN_NS;
		if (e < r->expect)
			r->expect = e;
		xs_obj_unref(&xq->obj);
	}
}

/* Phase 4: hand budget on where it was asked for or a waiter now fits by time. */
static void xs__grant_phase(xs_device *d, xs__round *r, int64_t now)
{
	if (!r->grant && !(r->bnext && now >= r->bnext))
		return;
	xs__grant(d);
	xs_mutex_lock(&d->lock);
	r->bnext = xs_budget_next_ns(d);
	xs_mutex_unlock(&d->lock);
}

/* Phase 5: sleep until the next look (the pace, an expected completion, the budget's
 * next admission), unless poked meanwhile. */
static void xs__sleep_phase(xs_device *d, xs__pace *p, const xs__round *r, int64_t now)
{
	if (r->progressed)
		p->last_progress = now;
	int64_t since = p->last_progress;
	int64_t from = atomic_load_explicit(&d->busy_from_ns, memory_order_relaxed);
	if (from > since)
		since = from;
	if (p->looked_for <= now && p->looked_for > since)
		since = p->looked_for;
	p->looked_for = r->expect;
	int64_t at =
	    d->ops->pushes_done ? now + xs__idle_wait_ns(d) : xs__next_look(now, since, r->expect);
	if (r->bnext && r->bnext < at)
		at = r->bnext;
	xs_mutex_lock(&d->lock);
	if (!d->poke && !d->stop && !d->budget.grant && at > now)
		xs_cond_timedwait(&d->progress_cv, &d->lock, at);
	xs_mutex_unlock(&d->lock);
}

/* The progress thread: rounds of named phases until the device stops. */
static void *xs__progress_main(void *arg)
{
	xs_device *d = arg;
	xs_signal_serve(d);
#ifdef PR_SET_TIMERSLACK
	/* Sleeps end when asked, not up to 50 us (the default slack) later. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
	XResult init = d->ops->thread_init(d->init_q);
	if (init != kXSchedSuccess)
		XS_ERROR("engine", "the progress thread cannot use the %s device (%s)",
			 d->ops->name, xs_result_name(init));
	int64_t start = xs_now_ns();
	xs__pace p = {
	    .last_progress = start,
	    .last_check = start,
	    .st = {.mark = 0, .since_ns = start, .release_ns = 0},
	    .looked_for = INT64_MAX,
	};
	xs__round r;
	while (xs__await_work(d, &p, &r)) {
		int64_t now = xs_now_ns();
		xs__look_phase(d, &p, &r, now);
		xs_signal_batch_begin(); /* kicks wait for the pass's end */
		xs__reap_phase(d, &r, now);
		xs__grant_phase(d, &r, now);
		xs_signal_batch_end(d);
		xs__sleep_phase(d, &p, &r, now);
	}
	xs_mutex_lock(&d->lock);
	free(d->snap);
	d->snap = NULL;
	d->snap_cap = 0;
	xs_mutex_unlock(&d->lock);
	return NULL;
}

/* ---- attach, detach, shutdown ---- */

static xs_device *xs__dev_new(xs_hwq *q, uint64_t key)
{
	xs_device *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->key = key;
	d->ops = q->ops;
	xs_mutex_init(&d->lock);
	xs_cond_init(&d->progress_cv);
	xs_cond_init(&d->launch_cv);
	xs_cond_init(&d->pace_cv);
	xs_list_init(&d->queues);
	xs_list_init(&d->active);
	xs_list_init(&d->kicks);
	xs_list_init(&d->budget.waiters);
	atomic_init(&d->oversubscribed, false);
	atomic_init(&d->busy_from_ns, 0);
	d->obj_level = -1; /* no latency objective (objective.c) */
	atomic_init(&d->obj_corun_ns, -1);
	atomic_init(&d->obj_pace, 0);
	return d;
}

/* Room in @d's budget for the tiers of one more XQueue (budget.c: a tier per priority,
 * however many). Caller holds xs__dv.lock. */
static bool xs__reserve(xs_device *d)
{
	XS_ASSERT_HELD(&xs__dv.lock);
	xs_mutex_lock(&d->lock);
	bool ok = xs_budget_reserve(d, d->nqueues + 1);
	xs_mutex_unlock(&d->lock);
	if (!ok)
		XS_ERROR("engine", "out of memory for the budget's tiers of %u queues",
			 d->nqueues + 1);
	return ok;
}

/* Start the device's threads with @q to bind them. Caller holds xs__dv.lock. */
static bool xs__dev_start(xs_device *d, xs_hwq *q)
{
	XS_ASSERT_HELD(&xs__dv.lock);
	xs_obj_ref(&q->obj);
	d->init_q = q;
	d->stop = false;
	d->stall_ns = xs_config_get()->stall_release_ns; /* read here, not on the thread */
	int err = xs_thread_start(&d->progress, "xs-progress", xs__progress_main, d);
	if (!err) {
		err = xs_thread_start(&d->launcher, "xs-launch", xs__launch_main, d);
		if (err) {
			xs_mutex_lock(&d->lock);
			d->stop = true;
			xs_cond_signal(&d->progress_cv);
			xs_mutex_unlock(&d->lock);
			xs_thread_join(d->progress);
		}
	}
	if (err) {
		XS_ERROR("engine", "cannot start the threads of a %s device (errno %d)",
			 q->ops->name, err);
		xs_obj_unref(&q->obj);
		d->init_q = NULL;
		return false;
	}
	d->started = true;
	xs_remote_start(d, q); /* other processes on the device, through its board */
	return true;
}

/* Stop the threads of @d. Caller holds xs__dv.lock; @d has no XQueue. */
static void xs__dev_stop(xs_device *d)
{
	XS_ASSERT_HELD(&xs__dv.lock);
	if (!d->started)
		return;
	xs_remote_stop(d);
	xs_mutex_lock(&d->lock);
	d->stop = true;
	xs_cond_signal(&d->progress_cv);
	xs_cond_signal(&d->launch_cv);
	xs_mutex_unlock(&d->lock);
	xs_thread_join(d->progress);
	xs_thread_join(d->launcher);
	d->started = false;
	xs_obj_unref(&d->init_q->obj);
	d->init_q = NULL;
}

/* Mark @d oversubscribed or not after its XQueue count changed; one log line per spell.
 * Caller holds xs__dv.lock. */
static void xs__count_queues(xs_device *d)
{
	XS_ASSERT_HELD(&xs__dv.lock);
	bool over = d->hw_queues && d->nqueues > d->hw_queues;
	if (over == atomic_load_explicit(&d->oversubscribed, memory_order_relaxed))
		return;
	atomic_store_explicit(&d->oversubscribed, over, memory_order_relaxed);
	if (over)
		XS_INFO("engine",
			"%s device: %u XQueues share %u hardware queues: no command waits at a "
			"counter on this device while they do (commands are enqueued when "
			"committed; Lv2 acts as Lv1)",
			d->ops->name, d->nqueues, d->hw_queues);
	else
		XS_INFO("engine", "%s device: %u XQueues on %u hardware queues: counters again",
			d->ops->name, d->nqueues, d->hw_queues);
}

XResult xs_dev_attach(xs_xqueue *xq)
{
	xs_hwq *q = xq->hwq;
	uint64_t key = q->ops->device_key(q);
	xs_mutex_lock(&xs__dv.lock);
	xs_device *d = NULL;
	xs_list_for_each(l, &xs__dv.list)
	{
		xs_device *c = xs_container_of(l, xs_device, link);
		if (c->ops == q->ops && c->key == key) {
			d = c;
			break;
		}
	}
	if (!d) {
		d = xs__dev_new(q, key);
		if (d)
			xs_list_push_back(&xs__dv.list, &d->link);
	}
	if (d && !xs__reserve(d))
		d = NULL;
	if (d && !d->started && !xs__dev_start(d, q))
		d = NULL;
	if (d) {
		d->nqueues++;
		if (q->hw_queues && (!d->hw_queues || q->hw_queues < d->hw_queues))
			d->hw_queues = q->hw_queues;
		xs__count_queues(d);
		xq->dev = d;
		if (q->ops->pushes_done)
			xs_hwq_set_on_done(q, xs_signal_poke, d);
		xs_mutex_lock(&d->lock);
		xs_list_push_back(&d->queues, &xq->dev_link);
		xs_mutex_unlock(&d->lock);
	}
	xs_mutex_unlock(&xs__dv.lock);
	return d ? kXSchedSuccess : kXSchedErrorUnknown;
}

void xs_dev_detach(xs_xqueue *xq)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&xs__dv.lock);
	xs_mutex_lock(&d->lock);
	xs_list_remove(&xq->dev_link);
	if (xq->active) /* not after xs_engine_destroy's drain (xs_signal_deactivate) */
		xs_list_remove(&xq->act_link);
	if (xs_linked(&xq->kick_link))
		xs_list_remove(&xq->kick_link);
	xs_budget_forget(xq);
	if (xs_objective_forget(xq))
		xs_signal_notify(xq); /* the co-run budget went from 0 or to 0 */
	xs_mutex_unlock(&d->lock);
	/* The last XQueue stops the threads, unless it runs on one of them (a launch
	 * callback that destroys another queue): xs_dev_shutdown() stops those. */
	if (--d->nqueues == 0 && !xs_signal_is_own_thread(d))
		xs__dev_stop(d);
	xs__count_queues(d);
	xs_mutex_unlock(&xs__dv.lock);
}

void xs_dev_shutdown(void)
{
	xs_mutex_lock(&xs__dv.lock);
	for (xs_link *l = xs__dv.list.next; l != &xs__dv.list;) {
		xs_device *d = xs_container_of(l, xs_device, link);
		l = l->next;
		if (d->nqueues || xs_signal_is_own_thread(d))
			continue;
		/* Stopped, not freed: a backend may still be inside the on_done push of the
		 * last command (it runs after the number it reports), so a device lives until
		 * the process ends, its threads only while it has XQueues. */
		xs__dev_stop(d);
	}
	xs_settings_reset();
	xs_mutex_unlock(&xs__dv.lock);
}

void xs_dev_forked(void)
{
	xs_signal_forked();
	/* Devices of the parent are abandoned with their (absent) threads. */
	xs__parent_devices = xs_list_first(&xs__dv.list);
	xs__dv = (struct xs__devs){XS_MUTEX_INITIALIZER, {&xs__dv.list, &xs__dv.list}, false};
	xs_settings_forked();
}

uint64_t xs_dev_wakeups(const xs_xqueue *xq)
{
	xs_device *d = xq->dev;
	xs_mutex_lock(&d->lock);
	uint64_t w = d->wakeups;
	xs_mutex_unlock(&d->lock);
	return w;
}
