/* Randomized lifecycle stress on the host backend, seeded and bounded in time.
 *
 * Four queue slots. Submitter threads submit commands (host functions and launch
 * callbacks, each returning a result of its own, one in 16 running for up to 0.5 ms) and
 * cross-queue event record/wait pairs to the slots the chaos thread makes hot, and wait for
 * some of their commands; waiter threads submit to any slot and wait for each command.
 * A command may reach another slot's XQueue from inside it, as a model's host code does:
 * - XQueueWait on a command it submits there itself (checked: its own result);
 * - XQueueWaitAll on that XQueue;
 * - XQueueLaunchInline onto it;
 * and the command it submits may do the same in turn (chains). The waited-for XQueue is of
 * higher, equal or lower priority than the waiter's, as the priorities move: each kind of
 * wait is counted per relation, each inline launch per pair of priorities.
 * A chaos thread suspends (also with SyncHwQueue) and resumes queues; changes priorities
 * (0..3 over four slots: three or four tiers most of the time) and which slots are hot (a
 * busy middle tier under an idle top one, a lone busy bottom one, all of them ...),
 * launch configs, levels, deadlines, laxities, policies (all of them), the commitment and
 * co-run budgets, latency objectives (1.2..3.0, or 0 to clear) on queues of any rank and
 * strict priority (on and off); sets PRIORITY_NO_EXECUTE for up to 2 ms and gives the
 * priority back; enqueues run gate checks among commands charged to the budget; opens
 * scopes that stay open across a destroy; and shuts the scheduler down and starts it
 * again. A lifecycle thread destroys a slot's queue and makes a new one, on a new HwQueue
 * or the same one (while others wait on the old queue), while the others submit.
 * Eight lanes beside the slots (below, "The lanes") bring nine or more distinct
 * priorities, priority changes of queues that wait for budget, PRIORITY_NO_EXECUTE
 * toggles with a probe that must not run meanwhile, two threads in XQueueWaitAll on a
 * batch with failures (both must return the round's error) and, in plain builds, forks
 * from inside host functions (each child must exit cleanly).
 *
 * What the application could wait for in a cycle, it does not (as on streams): a command
 * of slot k reaches only slots after k (its waits, inline launches and the commands it
 * submits), and an event wait on slot k waits only for a record on a later slot. The
 * chaos thread never waits while it holds a scope open (no synchronous suspension then):
 * a scope holds lower queues back for as long as it stays open (xsched.h,
 * XQueueBeginScope).
 *
 * Checked: every command whose XQueueSubmit succeeded ran exactly once and no other ran;
 * each queue ran its commands in submission order; every XQueueWait returned its own
 * command's result; every inline launch's callback ran once; the lanes' checks above;
 * and progress: when no
 * command has run anywhere for 10 s (or the run has not ended 90 s after its time), a
 * watchdog prints the seed, each slot's queue (priority, counts from XQueueGetStats) and
 * what every waiting command and thread waits for, and exits 1.
 *
 * XSCHED_TEST_SEED=n repeats a run (the seed is printed first; default: the clock);
 * XS_CHAOS_MS=n runs for n ms (default 1500). The unit suite runs ten seeds of 20 s
 * (chaos_1..chaos_10), three under the sanitizers. XS_CHAOS_EXTRA, which once turned the
 * cross-queue calls and run gate checks on, is ignored: they are always on. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/object.h"
#include "preempt/engine_int.h" /* the XQueue's fields */

#define SLOTS         4
#define NPRIO         4 /* priorities 0..NPRIO-1 */
#define SUBMITTERS    6
#define WAITERS       2
#define RUN_MS        1500
#define STALL_S       10 /* no command run anywhere for this long: a hang */
#define OVERRUN_S     90 /* the run not ended this long after its time: a hang */
#define CHUNK         65536
#define MAX_CHUNKS    4096
#define STATS_WAIT_MS 2000

/* What a command does besides running (it->op), or what a thread waits for. */
enum op {
	OP_NONE,
	OP_WAIT,
	OP_WAIT_ALL,
	OP_INLINE,
	OP_NOPS,
	/* Only in wait records: */
	OP_LOCK = OP_NOPS,
	OP_OWN_WAIT,
	OP_SUBMIT,
	OP_SUSPEND_SYNC,
	OP_DESTROY,
	OP_SHUTDOWN,
	OP_JOIN,
	OP_LANE_WAIT_ALL /* the "slot" is a lane's number */
};
static const char *const op_names[] = {
    "nothing",
    "XQueueWait on a command it submitted to",
    "XQueueWaitAll on",
    "XQueueLaunchInline onto",
    "the test's lock of",
    "XQueueWait on its own command of",
    "XQueueSubmit to",
    "XQueueSuspend(SyncHwQueue) of",
    "XQueueDestroy of",
    "XSchedShutdown or XHintSetScheduler",
    "joining the other threads",
    "XQueueWaitAll on lane",
};

enum kind { K_HOST_FUNC, K_CALLBACK };
enum rel { REL_HIGHER, REL_EQUAL, REL_LOWER }; /* the waited-for queue's priority */

/* What a command or a thread waits for now (read by the watchdog only). */
struct wait_rec {
	atomic_int op; /* enum op; OP_NONE: not waiting */
	atomic_int slot, item;
	_Atomic int64_t since_us;
};

struct slot {
	pthread_mutex_t lock; /* submit order = index order; guards xq/hwq and their change */
	XQueueHandle xq;
	_Atomic XQueueHandle cur; /* xq, for commands and the watchdog (no lock) */
	HwQueueHandle hwq;
	atomic_int gen, next;           /* written under the lock */
	atomic_int prio, level, scopes; /* as set (scopes: left open by the chaos thread) */
	atomic_bool app_suspended;
	/* Written by the slot's executor only (one queue at a time: a destroyed queue has
	 * drained before the next one exists). */
	atomic_int last_gen, last_index;
	struct wait_rec running; /* what the command running on the slot waits for */
};

struct item {
	atomic_int runs;
	int gen, index;
	XResult want;
	unsigned seed;  /* for what the command does when it runs */
	short sleep_us; /* how long it runs (most: 0) */
	signed char slot, kind, op, target;
	bool accepted;
};

static struct slot g_slots[SLOTS];
static _Atomic(struct item *) g_chunks[MAX_CHUNKS];
static atomic_int g_nitems, g_order_errors, g_result_errors, g_checked_waits, g_gone_waits;
static atomic_bool g_stop, g_done;
static atomic_int g_phase;      /* 0 running, 1 joining, 2 draining, 3 shutting down */
static atomic_llong g_progress; /* commands run, inline callbacks included */
static unsigned g_seed;
static int64_t g_run_ms, g_start_us;
static atomic_int g_inline_calls, g_inline_ok;
/* Cross-queue calls that returned, by kind of caller, call and relation; inline launches
 * by the caller's and the target's priority. */
static atomic_int g_rel[2][OP_NOPS][3];
static atomic_int g_inline_pairs[NPRIO][NPRIO];
static atomic_int g_tier_samples, g_tier3_samples;
/* The scopes the chaos thread holds open on all slots: the sum of their `scopes`, each
 * change made under the slot's lock. */
static atomic_int g_open_scopes;
/* The slots the submitters feed (a bit per slot; 0: all of them), changed by the chaos
 * thread: a busy middle tier below an idle top one, a lone busy bottom one, and so on. */
static atomic_int g_hot;
/* Process-wide settings as the chaos thread last set them, for the watchdog's report. */
static atomic_int g_policy = kPolicyHighestPriorityFirst, g_strict, g_budget_us = -1,
		  g_corun_us = -1;
/* Counted up before XSchedShutdown and after the scheduler starts again: odd while no
 * local scheduler runs (priorities, PRIORITY_NO_EXECUTE too, then have no effect). */
static atomic_int g_sched_restarts;

enum {
	T_SUBMITTER = 0,
	T_WAITER = SUBMITTERS,
	T_CHAOS = SUBMITTERS + WAITERS,
	T_LIFECYCLE,
	T_LANES,
	T_LANE_HELPER,
	T_MAIN,
	NTHREADS
};
static struct wait_rec g_thread_waits[NTHREADS];

static void wait_begin(struct wait_rec *w, enum op op, int slot, int item)
{
	atomic_store(&w->slot, slot);
	atomic_store(&w->item, item);
	atomic_store(&w->since_us, t_now_us());
	atomic_store(&w->op, (int)op);
}

static void wait_end(struct wait_rec *w)
{
	atomic_store(&w->op, OP_NONE);
}

/* The item numbered @i, its chunk made on first use. */
static struct item *item_at(int i)
{
	int c = i / CHUNK;
	struct item *chunk = atomic_load(&g_chunks[c]);
	if (!chunk) {
		struct item *fresh = calloc(CHUNK, sizeof(*fresh));
		CHECK(fresh);
		if (atomic_compare_exchange_strong(&g_chunks[c], &chunk, fresh))
			chunk = fresh;
		else
			free(fresh);
	}
	return &chunk[i % CHUNK];
}

/* A slot the submitters feed now: one of the hot ones (the others get only what commands
 * and waiters submit, and go idle now and then), or any when none is hot. */
static int hot_slot(unsigned *seed)
{
	unsigned hot = (unsigned)atomic_load(&g_hot);
	int k = (int)(rand_r(seed) % SLOTS);
	for (int i = 0; i < SLOTS && hot; i++, k = (k + 1) % SLOTS)
		if (hot & 1u << k)
			return k;
	return k;
}

static enum rel rel_of(int from, int to)
{
	int a = atomic_load(&g_slots[from].prio), b = atomic_load(&g_slots[to].prio);
	return b > a ? REL_HIGHER : b == a ? REL_EQUAL : REL_LOWER;
}

static HwCommandHandle submit_item(int k, unsigned *seed, const XResult *results, unsigned n,
				   struct item **out, int *num, XQueueHandle *xq,
				   struct wait_rec *w);

static XResult inline_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	atomic_fetch_add(&g_inline_calls, 1);
	atomic_fetch_add(&g_progress, 1);
	return kXSchedSuccess;
}

/* What a command of slot @it->slot does on another slot's XQueue (a later slot). */
static void reach(struct item *it, struct wait_rec *w)
{
	int k = it->slot, j = it->target;
	unsigned seed = it->seed;
	enum kind kind = (enum kind)it->kind;
	enum op op = (enum op)it->op;
	enum rel rel = rel_of(k, j);
	XResult r;
	if (op == OP_WAIT) {
		static const XResult results[] = {kXSchedSuccess, kXSchedSuccess,
						  kXSchedErrorNotAllowed, kXSchedErrorHardware};
		struct item *sub;
		int sub_i;
		XQueueHandle xq;
		HwCommandHandle c = submit_item(j, &seed, results, 4, &sub, &sub_i, &xq, w);
		wait_begin(w, OP_WAIT, j, sub_i);
		r = XQueueWait(xq, c);
		wait_end(w);
		/* NotFound (or InvalidValue) when the queue went, drained, before the wait
		 * looked it up. */
		if (r == sub->want)
			atomic_fetch_add(&g_checked_waits, 1);
		else if (r == kXSchedErrorNotFound || r == kXSchedErrorInvalidValue)
			atomic_fetch_add(&g_gone_waits, 1);
		else
			atomic_fetch_add(&g_result_errors, 1);
		CHECK_OK(HwCommandDestroy(c));
	} else if (op == OP_WAIT_ALL) {
		wait_begin(w, OP_WAIT_ALL, j, -1);
		r = XQueueWaitAll(atomic_load(&g_slots[j].cur));
		wait_end(w);
		/* The first failure among the queue's commands (each returns one of these). */
		if (r != kXSchedSuccess && r != kXSchedErrorNotAllowed &&
		    r != kXSchedErrorInvalidValue && r != kXSchedErrorHardware &&
		    r != kXSchedErrorNotFound)
			atomic_fetch_add(&g_result_errors, 1);
	} else {
		int from = atomic_load(&g_slots[k].prio), to = atomic_load(&g_slots[j].prio);
		wait_begin(w, OP_INLINE, j, -1);
		r = XQueueLaunchInline(atomic_load(&g_slots[j].cur), inline_cb, NULL);
		wait_end(w);
		if (r == kXSchedSuccess) {
			atomic_fetch_add(&g_inline_ok, 1);
			atomic_fetch_add(&g_inline_pairs[from][to], 1);
		} else if (r != kXSchedErrorNotFound) { /* NotFound: the queue went meanwhile */
			atomic_fetch_add(&g_result_errors, 1);
		}
	}
	atomic_fetch_add(&g_rel[kind][op][rel], 1);
}

/* A command of the test, run by its slot's executor. */
static XResult item_run(struct item *it)
{
	struct slot *s = &g_slots[it->slot];
	int last_gen = atomic_load(&s->last_gen), last_index = atomic_load(&s->last_index);
	if (it->gen == last_gen ? it->index != last_index + 1 : it->index != 0)
		atomic_fetch_add(&g_order_errors, 1);
	atomic_store(&s->last_gen, it->gen);
	atomic_store(&s->last_index, it->index);
	atomic_fetch_add(&it->runs, 1);
	atomic_fetch_add(&g_progress, 1);
	if (it->sleep_us)
		t_sleep_us(it->sleep_us);
	if (it->op != OP_NONE)
		reach(it, &s->running);
	return it->want;
}

static XResult item_fn(void *data)
{
	return item_run(data);
}

static XResult item_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	return item_run(data);
}

/* A new XQueue for the slot: on a new HwQueue, or with @same on the slot's HwQueue. */
static void slot_open(struct slot *s, unsigned *seed, bool same)
{
	if (!same)
		CHECK_OK(HostQueueCreate(&s->hwq));
	int level = 1 + (int)(rand_r(seed) % 2), prio = (int)(rand_r(seed) % NPRIO);
	CHECK_OK(XQueueCreate(&s->xq, s->hwq, level, 0));
	CHECK_OK(XHintPriority(s->xq, prio));
	atomic_store(&s->level, level);
	atomic_store(&s->prio, prio);
	atomic_store(&s->cur, s->xq);
	s->gen++;
	s->next = 0;
	atomic_fetch_sub(&g_open_scopes, s->scopes); /* gone with the queue */
	s->scopes = 0;
}

/* Destroy the slot's XQueue (open scopes and all), and its HwQueue unless @keep. */
static void slot_close(struct slot *s, bool keep, struct wait_rec *w)
{
	wait_begin(w, OP_DESTROY, (int)(s - g_slots), -1);
	CHECK_OK(XQueueDestroy(s->xq)); /* drains */
	wait_end(w);
	if (!keep)
		CHECK_OK(HwQueueDestroy(s->hwq));
}

/* Submit one command (a host function or a launch callback) returning one of @results
 * (@n of them) to slot @k; @w records the wait for the slot's lock. Returns the
 * command's handle, the item in *out, its number in *num and the queue in *xq. A command
 * of a slot before the last may reach a later slot when it runs. */
static HwCommandHandle submit_item(int k, unsigned *seed, const XResult *results, unsigned n,
				   struct item **out, int *num, XQueueHandle *xq,
				   struct wait_rec *w)
{
	int i = atomic_fetch_add(&g_nitems, 1);
	CHECK(i < CHUNK * MAX_CHUNKS);
	struct item *it = item_at(i);
	it->want = results[rand_r(seed) % n];
	it->kind = rand_r(seed) % 3 ? K_HOST_FUNC : K_CALLBACK;
	it->seed = rand_r(seed);
	it->sleep_us = (short)(rand_r(seed) % 16 ? 0 : 20 + rand_r(seed) % 500);
	it->op = OP_NONE;
	if (k < SLOTS - 1 && rand_r(seed) % 4 == 0) {
		static const signed char ops[] = {OP_WAIT, OP_WAIT, OP_WAIT_ALL, OP_INLINE,
						  OP_INLINE};
		it->op = ops[rand_r(seed) % 5];
		it->target = (signed char)(k + 1 + (int)(rand_r(seed) % (unsigned)(SLOTS - 1 - k)));
	}
	HwCommandHandle c;
	if (it->kind == K_HOST_FUNC)
		CHECK_OK(HwCommandCreateHostFunc(&c, item_fn, it));
	else
		CHECK_OK(HwCommandCreateCallback(&c, item_cb, it));
	struct slot *s = &g_slots[k];
	wait_begin(w, OP_LOCK, k, i);
	pthread_mutex_lock(&s->lock);
	wait_begin(w, OP_SUBMIT, k, i);
	it->slot = (signed char)k;
	it->gen = s->gen;
	it->index = s->next++;
	it->accepted = true;
	CHECK_OK(XQueueSubmit(s->xq, c)); /* the current queue: the lock holds it */
	*xq = s->xq;
	pthread_mutex_unlock(&s->lock);
	wait_end(w);
	*out = it;
	*num = i;
	return c;
}

static void *submitter(void *arg)
{
	int t = (int)(uintptr_t)arg;
	struct wait_rec *w = &g_thread_waits[T_SUBMITTER + t];
	unsigned seed = g_seed + (unsigned)t;
	while (!atomic_load(&g_stop)) {
		int k = hot_slot(&seed);
		if (rand_r(&seed) % 8 == 0 && k > 0) {
			/* An event pair: a record on slot k, its wait on an earlier slot j (a
			 * command waits only for later slots: see the top of the file). */
			int j = (int)(rand_r(&seed) % (unsigned)k);
			HwCommandHandle rec, wt;
			CHECK_OK(HwCommandCreateEventRecord(&rec));
			CHECK_OK(HwCommandCreateEventWait(&wt, rec));
			wait_begin(w, OP_SUBMIT, k, -1);
			pthread_mutex_lock(&g_slots[k].lock);
			CHECK_OK(XQueueSubmit(g_slots[k].xq, rec));
			pthread_mutex_unlock(&g_slots[k].lock);
			wait_begin(w, OP_SUBMIT, j, -1);
			pthread_mutex_lock(&g_slots[j].lock);
			CHECK_OK(XQueueSubmit(g_slots[j].xq, wt));
			pthread_mutex_unlock(&g_slots[j].lock);
			wait_end(w);
			CHECK_OK(HwCommandDestroy(rec));
			CHECK_OK(HwCommandDestroy(wt));
			continue;
		}
		static const XResult results[] = {kXSchedSuccess, kXSchedSuccess,
						  kXSchedErrorNotAllowed, kXSchedErrorInvalidValue};
		struct item *it;
		int i;
		XQueueHandle xq;
		HwCommandHandle c = submit_item(k, &seed, results, 4, &it, &i, &xq, w);
		if (rand_r(&seed) % 4 == 0) {
			/* NotFound (or InvalidValue: a newer queue of the slot) when the queue
			 * went, drained, before the wait looked it up. */
			wait_begin(w, OP_OWN_WAIT, k, i);
			XResult r = XQueueWait(xq, c);
			wait_end(w);
			if (r != it->want && r != kXSchedErrorNotFound &&
			    r != kXSchedErrorInvalidValue)
				atomic_fetch_add(&g_result_errors, 1);
		}
		CHECK_OK(HwCommandDestroy(c));
		if (rand_r(&seed) % 64 == 0)
			t_sleep_us(rand_r(&seed) % 300);
	}
	return NULL;
}

/* Waits that check their own result: submit and wait on one slot. */
static void *waiter(void *arg)
{
	int t = (int)(uintptr_t)arg;
	struct wait_rec *w = &g_thread_waits[T_WAITER + t];
	unsigned seed = g_seed + 1000u + (unsigned)t;
	while (!atomic_load(&g_stop)) {
		int k = (int)(rand_r(&seed) % SLOTS);
		static const XResult results[] = {kXSchedSuccess, kXSchedErrorNotAllowed,
						  kXSchedErrorInvalidValue};
		struct item *it;
		int i;
		XQueueHandle xq;
		HwCommandHandle c = submit_item(k, &seed, results, 3, &it, &i, &xq, w);
		wait_begin(w, OP_OWN_WAIT, k, i);
		XResult r = XQueueWait(xq, c);
		wait_end(w);
		/* NotFound: the queue went (drained) before the wait looked it up. */
		if (r != it->want && r != kXSchedErrorNotFound)
			atomic_fetch_add(&g_result_errors, 1);
		if (r == it->want)
			atomic_fetch_add(&g_checked_waits, 1);
		CHECK_OK(HwCommandDestroy(c));
	}
	return NULL;
}

static void *chaos(void *arg)
{
	(void)arg;
	struct wait_rec *w = &g_thread_waits[T_CHAOS];
	unsigned seed = g_seed + 7u;
	/* HPF, where waits between queues matter most, half the time. */
	static const XPolicyType policies[] = {
	    kPolicyHighestPriorityFirst,
	    kPolicyHighestPriorityFirst,
	    kPolicyHighestPriorityFirst,
	    kPolicyHighestPriorityFirst,
	    kPolicyHighestPriorityFirst,
	    kPolicyFirstInFirstOut,
	    kPolicyCompletelyFairScheduler,
	    kPolicyUtilizationPartition,
	    kPolicyEarliestDeadlineFirst,
	    kPolicyKEarliestDeadlineFirst,
	    kPolicyLaxity,
	    kPolicyMultiLevelFeedbackQueue,
	};
	unsigned npolicies = sizeof(policies) / sizeof(policies[0]);
	while (!atomic_load(&g_stop)) {
		int k = (int)(rand_r(&seed) % SLOTS);
		struct slot *s = &g_slots[k];
		/* Never wait for a slot's lock: the lifecycle thread may hold it through a
		 * destroy that drains work held back by a scope this thread left open (the
		 * policies give the device to a queue with an open scope: the cycle would be
		 * the test's own). */
		if (pthread_mutex_trylock(&s->lock)) {
			t_sleep_us(100);
			continue;
		}
		XQueueHandle xq = s->xq;
		switch (rand_r(&seed) % 17) {
		case 0: {
			/* No synchronous suspension while a scope this thread left open holds
			 * queues back: it may wait for a command that waits for such a queue (a
			 * cycle of the test's own, xsched.h, XQueueBeginScope). */
			bool sync = rand_r(&seed) % 2 && !atomic_load(&g_open_scopes);
			if (sync)
				wait_begin(w, OP_SUSPEND_SYNC, k, -1);
			XResult r = XQueueSuspend(xq, sync ? kQueueSuspendFlagSyncHwQueue : 0);
			wait_end(w);
			CHECK(r == kXSchedSuccess || r == kXSchedErrorNotSupported);
			atomic_store(&s->app_suspended, r == kXSchedSuccess);
			pthread_mutex_unlock(&s->lock);
			t_sleep_us(rand_r(&seed) % 2000);
			/* NotFound: the queue went meanwhile (its destroy overrode the suspension).
			 */
			r = XQueueResume(xq, 0);
			CHECK(r == kXSchedSuccess || r == kXSchedErrorNotFound);
			atomic_store(&s->app_suspended, false);
			t_sleep_us(rand_r(&seed) % 500);
			continue;
		}
		case 1: /* which slots the submitters feed */
			atomic_store(&g_hot, (int)(rand_r(&seed) % (1u << SLOTS)));
			break;
		case 2:
		case 13:
		case 14: {
			int prio = (int)(rand_r(&seed) % NPRIO);
			CHECK_OK(XHintPriority(xq, prio));
			atomic_store(&s->prio, prio);
			break;
		}
		case 3:
			CHECK_OK(XQueueSetLaunchConfig(xq, 1 + rand_r(&seed) % 16, 1));
			break;
		case 4: {
			int level = 1 + (int)(rand_r(&seed) % 2);
			CHECK_OK(XQueueSetPreemptLevel(xq, level));
			atomic_store(&s->level, level);
			break;
		}
		case 5: {
			XPolicyType p = policies[rand_r(&seed) % npolicies];
			wait_begin(w, OP_SHUTDOWN, -1, -1);
			CHECK_OK(XHintSetScheduler(kSchedulerLocal, p));
			wait_end(w);
			atomic_store(&g_policy, (int)p);
			break;
		}
		case 6:
			wait_begin(w, OP_SHUTDOWN, -1, -1);
			atomic_fetch_add(&g_sched_restarts, 1);
			CHECK_OK(XSchedShutdown());
			CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
			atomic_fetch_add(&g_sched_restarts, 1);
			wait_end(w);
			atomic_store(&g_policy, kPolicyHighestPriorityFirst);
			atomic_store(&g_strict, 0);
			atomic_store(&g_budget_us, -1);
			atomic_store(&g_corun_us, -1);
			break;
		case 7: { /* the commitment or co-run budget: 0, small, 1 ms or any */
			static const int some[] = {0, 0, 50, 200, 1000, -1};
			int us = some[rand_r(&seed) % 6];
			if (rand_r(&seed) % 2) {
				us = us < 0 ? (int)(rand_r(&seed) % 3000) : us;
				CHECK_OK(XHintCommitBudget(us));
				atomic_store(&g_budget_us, us);
			} else {
				us = us < 0 ? (int)(rand_r(&seed) % 500) : us;
				CHECK_OK(XHintCorunBudget(us));
				atomic_store(&g_corun_us, us);
			}
			break;
		}
		case 8: /* a run gate check among commands charged to the budget */
			CHECK_OK(XQueueEnqueueGateCheck(xq));
			break;
		case 9: /* a scope, left open now and then until the queue goes */
			if (s->scopes && rand_r(&seed) % 2) {
				CHECK_OK(XQueueEndScope(xq));
				s->scopes--;
				atomic_fetch_sub(&g_open_scopes, 1);
			} else {
				CHECK_OK(XQueueBeginScope(xq));
				s->scopes++;
				atomic_fetch_add(&g_open_scopes, 1);
			}
			break;
		case 10: /* deadlines and laxities for EDF, KEDF and LAX */
			CHECK_OK(XHintDeadline(xq, 1000 + rand_r(&seed) % 20000));
			CHECK_OK(XHintLaxity(xq, rand_r(&seed) % 5000, 0, 3));
			break;
		case 11:
		case 12: { /* a latency objective, on a queue of whatever rank, or none */
			unsigned v = rand_r(&seed) % 200;
			CHECK_OK(XHintLatencyObjective(xq, v < 20 ? 0.0 : 1.2 + (v - 20) / 100.0));
			break;
		}
		case 15: {
			/* PRIORITY_NO_EXECUTE for up to 2 ms, then the priority back (NotFound:
			 * the queue went meanwhile, its destroy draining it whatever the hint). */
			int prio = atomic_load(&s->prio);
			CHECK_OK(XHintPriority(xq, PRIORITY_NO_EXECUTE));
			pthread_mutex_unlock(&s->lock);
			t_sleep_us(rand_r(&seed) % 2000);
			XResult r = XHintPriority(xq, prio);
			CHECK(r == kXSchedSuccess || r == kXSchedErrorNotFound);
			continue;
		}
		default: {
			int strict = (int)(rand_r(&seed) % 2);
			CHECK_OK(XHintStrictPriority(strict));
			atomic_store(&g_strict, strict);
			break;
		}
		}
		pthread_mutex_unlock(&s->lock);
		t_sleep_us(rand_r(&seed) % 500);
	}
	/* A scope left open holds lower-priority queues back (that is what it is for): the
	 * submitters' last waits would never end. */
	for (int k = 0; k < SLOTS; k++) {
		pthread_mutex_lock(&g_slots[k].lock);
		for (; g_slots[k].scopes; g_slots[k].scopes--) {
			CHECK_OK(XQueueEndScope(g_slots[k].xq));
			atomic_fetch_sub(&g_open_scopes, 1);
		}
		pthread_mutex_unlock(&g_slots[k].lock);
	}
	return NULL;
}

static void *lifecycle(void *arg)
{
	(void)arg;
	struct wait_rec *w = &g_thread_waits[T_LIFECYCLE];
	unsigned seed = g_seed + 13u;
	while (!atomic_load(&g_stop)) {
		t_sleep_us(20000 + rand_r(&seed) % 30000);
		int k = (int)(rand_r(&seed) % SLOTS);
		struct slot *s = &g_slots[k];
		bool same = rand_r(&seed) % 2;
		wait_begin(w, OP_LOCK, k, -1);
		pthread_mutex_lock(&s->lock);
		slot_close(s, same, w);
		slot_open(s, &seed, same);
		pthread_mutex_unlock(&s->lock);
		wait_end(w);
	}
	return NULL;
}

/* The lanes ----------------------------------------------------------------------- */

/* Eight more XQueues (lanes), fed by one thread (lanes_main) with short host functions and
 * given priorities of their own, mostly below the slots' (-40..-1, now and then up to 8
 * above them): with the slots' four, nine or more distinct priorities share the budget
 * most of the time. The lanes thread also
 * - changes a lane's priority while it waits for budget (its backlog kept up to 32);
 * - sets a lane to PRIORITY_NO_EXECUTE for up to 2 ms, submits a probe command and then
 *   gives its priority back: the probe must not run before (XHintPriority is in force
 *   when it returns; a scheduler shutdown meanwhile excuses it, as the priority then has
 *   no effect);
 * - waits for a lane from two threads at once (XQueueWaitAll) on a batch of which some
 *   commands fail, each round with an error of its own: a gate command holds the batch
 *   until both calls are inside (the engine's count of calls in progress), and both must
 *   return the round's error (none: kXSchedSuccess);
 * - in plain builds, lets a lane's host function fork now and then (at most every 300
 *   ms): the child makes a queue of its own, waits on it and leaves; every child must exit
 *   with status 0 within 10 s (no fork under the sanitizers: ThreadSanitizer runs no
 *   threads in such a child, and AddressSanitizer's allocator is not fork-safe).
 * Each lane's commands must run once, in submission order. */
#define LANES      8
#define LANE_DEPTH 32
#define MAX_FORKS  128

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHAOS_FORK 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CHAOS_FORK 0
#endif
#endif
#ifndef CHAOS_FORK
#define CHAOS_FORK 1
#endif

enum lane_kind { LANE_PLAIN, LANE_FAIL, LANE_GATE, LANE_PROBE, LANE_FORK };

struct lane {
	HwQueueHandle hwq;
	XQueueHandle xq;
	atomic_int prio;
	uint64_t submitted; /* by the lanes thread only */
	atomic_ullong ran;  /* the next index to run */
	/* The index of the probe submitted after the PRIORITY_NO_EXECUTE in force now
	 * (UINT64_MAX: none in force), and whether it ran meanwhile. A probe of an earlier
	 * toggle may run during a later one: it was enqueued before that call. */
	atomic_ullong noexec_probe;
	atomic_bool violated;
	XResult fail; /* what LANE_FAIL commands return now */
};

static struct lane g_lanes[LANES];
static atomic_int g_lane_rounds, g_lane_wait_alls, g_lane_prio_changes, g_lane_noexec, g_lane_forks,
    g_prio9_samples;
static atomic_llong g_lane_last_fork_us;
static pid_t g_children[MAX_FORKS];
static atomic_int g_nchildren;
/* The second waiter of a round: the lane to wait for (+1; 0: none) and its result. */
static atomic_int g_helper_lane;
static _Atomic XResult g_helper_res;
static atomic_bool g_helper_done;

/* XQueueWaitAll calls in progress on @xq (the engine's records), -1 if it is gone. */
static int wait_alls_in(XQueueHandle xq)
{
	xs_obj *obj = xs_handle_get(xq, XS_KIND_XQUEUE);
	if (!obj)
		return -1;
	xs_xqueue *x = xs_xqueue_of(obj);
	int n = 0;
	xs_mutex_lock(&x->lock);
	xs_list_for_each(l, &x->wait_alls) n++;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(obj);
	return n;
}

#if CHAOS_FORK
static XResult nop_fn(void *data)
{
	(void)data;
	return kXSchedSuccess;
}

/* The child of a fork inside a lane's host function: a queue of its own, both waits; it
 * leaves with _exit() (2: a call failed). */
static void fork_child(void)
{
	HwQueueHandle h;
	XQueueHandle x;
	HwCommandHandle c;
	if (HostQueueCreate(&h) || XQueueCreate(&x, h, kPreemptLevelBlock, 0) ||
	    HwCommandCreateHostFunc(&c, nop_fn, NULL) || XQueueSubmit(x, c) || XQueueWait(x, c) ||
	    XQueueWaitAll(x) || HwCommandDestroy(c) || XQueueDestroy(x) || HwQueueDestroy(h))
		_exit(2);
	_exit(0);
}
#endif

static void lane_fork(void)
{
#if CHAOS_FORK
	int i = atomic_fetch_add(&g_nchildren, 1);
	if (i >= MAX_FORKS)
		return;
	pid_t pid = fork();
	if (pid == 0)
		fork_child();
	g_children[i] = pid;
	atomic_fetch_add(&g_lane_forks, 1);
#endif
}

/* A lane's command: data packs its index, kind and lane. */
static XResult lane_fn(void *data)
{
	uintptr_t v = (uintptr_t)data;
	struct lane *ln = &g_lanes[v & 15];
	enum lane_kind kind = (enum lane_kind)(v >> 4 & 15);
	uint64_t index = (uint64_t)(v >> 8);
	if (atomic_load(&ln->ran) != index)
		atomic_fetch_add(&g_order_errors, 1);
	atomic_store(&ln->ran, index + 1);
	atomic_fetch_add(&g_progress, 1);
	switch (kind) {
	case LANE_PLAIN:
		if (index % 4 == 0)
			t_sleep_us((int64_t)(index % 7) * 30);
		return kXSchedSuccess;
	case LANE_FAIL:
		return ln->fail;
	case LANE_GATE: { /* until both WaitAll calls of the round are inside */
		int64_t end = t_now_us() + 2000000;
		while (wait_alls_in(ln->xq) < 2 && t_now_us() < end && !atomic_load(&g_stop))
			t_sleep_us(50);
		return kXSchedSuccess;
	}
	case LANE_PROBE:
		if (atomic_load(&ln->noexec_probe) == index)
			atomic_store(&ln->violated, true);
		return kXSchedSuccess;
	case LANE_FORK:
		lane_fork();
		return kXSchedSuccess;
	}
	return kXSchedSuccess;
}

static void lane_submit(int l, enum lane_kind kind)
{
	struct lane *ln = &g_lanes[l];
	uintptr_t v = (uintptr_t)(ln->submitted++ << 8 | (uint64_t)kind << 4 | (uint64_t)l);
	t_submit_fn(ln->xq, lane_fn, (void *)v);
}

static int lane_prio(unsigned *seed)
{
	return rand_r(seed) % 8 ? -1 - (int)(rand_r(seed) % 40) : (int)(rand_r(seed) % 9);
}

/* Keep lane @l's backlog up; now and then a command that forks (plain builds). */
static void lane_feed(int l, unsigned *seed)
{
	XQueueStats st = t_stats(g_lanes[l].xq);
	for (uint64_t n = st.pending + st.in_flight; n < LANE_DEPTH; n++) {
		int64_t now = t_now_us();
		bool fork = CHAOS_FORK && rand_r(seed) % 512 == 0 &&
			    now - atomic_load(&g_lane_last_fork_us) > 300000;
		if (fork)
			atomic_store(&g_lane_last_fork_us, now);
		lane_submit(l, fork ? LANE_FORK : LANE_PLAIN);
	}
}

/* PRIORITY_NO_EXECUTE for a while, with a probe submitted after it. */
static void lane_noexec(int l, unsigned *seed)
{
	struct lane *ln = &g_lanes[l];
	int restarts = atomic_load(&g_sched_restarts), prio = atomic_load(&ln->prio);
	atomic_store(&ln->violated, false);
	CHECK_OK(XHintPriority(ln->xq, PRIORITY_NO_EXECUTE));
	atomic_store(&ln->noexec_probe, ln->submitted);
	lane_submit(l, LANE_PROBE);
	t_sleep_us(rand_r(seed) % 2000);
	atomic_store(&ln->noexec_probe, UINT64_MAX);
	CHECK_OK(XHintPriority(ln->xq, prio));
	atomic_fetch_add(&g_lane_noexec, 1);
	if (atomic_load(&ln->violated) && restarts % 2 == 0 &&
	    restarts == atomic_load(&g_sched_restarts)) {
		fprintf(stderr, "lane %d: a command submitted after PRIORITY_NO_EXECUTE ran\n", l);
		atomic_fetch_add(&g_result_errors, 1);
	}
}

/* The second waiter of the rounds. */
static void *lane_helper(void *arg)
{
	(void)arg;
	struct wait_rec *w = &g_thread_waits[T_LANE_HELPER];
	while (!atomic_load(&g_done)) {
		int l = atomic_load(&g_helper_lane) - 1;
		if (l < 0) {
			t_sleep_us(50);
			continue;
		}
		wait_begin(w, OP_LANE_WAIT_ALL, l, -1);
		atomic_store(&g_helper_res, XQueueWaitAll(g_lanes[l].xq));
		wait_end(w);
		atomic_store(&g_helper_lane, 0);
		atomic_store(&g_helper_done, true);
	}
	return NULL;
}

/* A round: a gate, a batch of which some fail with the round's error, two waiters. */
static void lane_round(int l, unsigned *seed)
{
	static const XResult errors[] = {kXSchedErrorHardware, kXSchedErrorInvalidValue,
					 kXSchedErrorNotAllowed, kXSchedErrorNotSupported};
	struct lane *ln = &g_lanes[l];
	int round = atomic_fetch_add(&g_lane_rounds, 1);
	ln->fail = errors[round % 4];
	lane_submit(l, LANE_GATE);
	bool failed = false;
	for (int n = 1 + (int)(rand_r(seed) % 6); n > 0; n--) {
		bool f = rand_r(seed) % 3 == 0;
		failed |= f;
		lane_submit(l, f ? LANE_FAIL : LANE_PLAIN);
	}
	struct wait_rec *w = &g_thread_waits[T_LANES];
	atomic_store(&g_helper_done, false);
	atomic_store(&g_helper_lane, l + 1);
	wait_begin(w, OP_LANE_WAIT_ALL, l, -1);
	while (wait_alls_in(ln->xq) < 1 && !atomic_load(&g_helper_done))
		t_sleep_us(50);
	XResult mine = XQueueWaitAll(ln->xq);
	while (!atomic_load(&g_helper_done))
		t_sleep_us(50);
	wait_end(w);
	XResult want = failed ? ln->fail : kXSchedSuccess, other = atomic_load(&g_helper_res);
	atomic_fetch_add(&g_lane_wait_alls, 2);
	if (mine != want || other != want) {
		fprintf(stderr,
			"lane %d, round %d: two XQueueWaitAll returned %s and %s, expected %s\n", l,
			round, XResultName(mine), XResultName(other), XResultName(want));
		atomic_fetch_add(&g_result_errors, 1);
	}
}

static void lane_open(int l, unsigned *seed)
{
	struct lane *ln = &g_lanes[l];
	CHECK_OK(HostQueueCreate(&ln->hwq));
	CHECK_OK(XQueueCreate(&ln->xq, ln->hwq, 1 + (int)(rand_r(seed) % 2), 0));
	int prio = lane_prio(seed);
	CHECK_OK(XHintPriority(ln->xq, prio));
	atomic_store(&ln->prio, prio);
	atomic_store(&ln->noexec_probe, UINT64_MAX);
}

static void *lanes_main(void *arg)
{
	(void)arg;
	unsigned seed = g_seed + 29u;
	while (!atomic_load(&g_stop)) {
		int l = (int)(rand_r(&seed) % LANES);
		unsigned r = rand_r(&seed) % 16;
		if (r < 10) {
			lane_feed(l, &seed);
		} else if (r < 13) { /* a priority change while it waits for budget */
			lane_feed(l, &seed);
			int prio = lane_prio(&seed);
			CHECK_OK(XHintPriority(g_lanes[l].xq, prio));
			atomic_store(&g_lanes[l].prio, prio);
			atomic_fetch_add(&g_lane_prio_changes, 1);
		} else if (r < 15) {
			lane_round(l, &seed);
		} else {
			lane_noexec(l, &seed);
		}
		t_sleep_us(rand_r(&seed) % 300);
	}
	return NULL;
}

/* Drain and destroy the lanes; each ran every command once. */
static void lanes_close(void)
{
	for (int l = 0; l < LANES; l++) {
		struct lane *ln = &g_lanes[l];
		CHECK_OK(XQueueDestroy(ln->xq));
		CHECK_OK(HwQueueDestroy(ln->hwq));
		if (atomic_load(&ln->ran) != ln->submitted) {
			fprintf(stderr, "lane %d: %llu of %llu commands ran\n", l,
				(unsigned long long)atomic_load(&ln->ran),
				(unsigned long long)ln->submitted);
			atomic_fetch_add(&g_result_errors, 1);
		}
	}
}

/* Every child forked in a lane's host function exits with 0 within 10 s. Returns the
 * number that did not. */
static int reap_children(void)
{
	int bad = 0, n = atomic_load(&g_nchildren);
	n = n < MAX_FORKS ? n : MAX_FORKS;
	for (int i = 0; i < n; i++) {
		int st = t_reap(g_children[i], 10000);
		if (st != 0) {
			fprintf(stderr, "the child forked in a lane's host function %d: %s\n", i,
				st < 0 ? "hung, killed" : "failed");
			bad++;
		}
	}
	return bad;
}

/* The report of a hang ------------------------------------------------------------- */

static atomic_bool g_stats_done;

/* Each slot's queue as the library counts it; on a thread of its own, as it takes the
 * XQueues' locks (a hang may hold one). */
static void *report_stats(void *arg)
{
	(void)arg;
	for (int k = 0; k < SLOTS; k++) {
		XQueueStats st;
		XResult r = XQueueGetStats(atomic_load(&g_slots[k].cur), &st);
		if (r != kXSchedSuccess) {
			fprintf(stderr, "  slot %d: XQueueGetStats: %s\n", k, XResultName(r));
			continue;
		}
		fprintf(stderr,
			"  slot %d: submitted %llu, launched %llu, committed %llu, completed %llu "
			"(pending %llu, in flight %llu); %llu suspensions; est %llu ns; co-run "
			"budget %lld ns\n",
			k, (unsigned long long)st.submitted, (unsigned long long)st.launched,
			(unsigned long long)st.committed, (unsigned long long)st.completed,
			(unsigned long long)st.pending, (unsigned long long)st.in_flight,
			(unsigned long long)st.suspensions, (unsigned long long)st.est_command_ns,
			st.corun_budget_ns == UINT64_MAX ? -1LL : (long long)st.corun_budget_ns);
	}
	atomic_store(&g_stats_done, true);
	return NULL;
}

static void report_wait(const char *who, int n, const struct wait_rec *w, int64_t now)
{
	int op = atomic_load(&w->op);
	if (op == OP_NONE)
		return;
	int slot = atomic_load(&w->slot), item = atomic_load(&w->item);
	if (n >= 0)
		fprintf(stderr, "  %s %d: %s", who, n, op_names[op]);
	else
		fprintf(stderr, "  %s: %s", who, op_names[op]);
	if (slot >= 0)
		fprintf(stderr, op == OP_LANE_WAIT_ALL ? " %d" : " slot %d", slot);
	if (item >= 0)
		fprintf(stderr, " (command %d: index %d of gen %d)", item, item_at(item)->index,
			item_at(item)->gen);
	fprintf(stderr, ", for %.1f s\n", (double)(now - atomic_load(&w->since_us)) / 1e6);
}

static bool stats_done_pred(void *arg)
{
	(void)arg;
	return atomic_load(&g_stats_done);
}

static void report_hang(const char *why)
{
	static const char *const phases[] = {"running", "joining the threads",
					     "destroying the queues", "shutting down"};
	int64_t now = t_now_us();
	fflush(stdout);
	fprintf(stderr,
		"test_chaos: HANG (%s), seed %u (XSCHED_TEST_SEED=%u XS_CHAOS_MS=%lld repeats "
		"it), %.1f s in, %s; %lld commands run\n",
		why, g_seed, g_seed, (long long)g_run_ms, (double)(now - g_start_us) / 1e6,
		phases[atomic_load(&g_phase)], (long long)atomic_load(&g_progress));
	fprintf(stderr,
		"  policy %d, strict %d, commit budget %d us, co-run budget %d us (-1: default), "
		"%d scopes left open\n",
		atomic_load(&g_policy), atomic_load(&g_strict), atomic_load(&g_budget_us),
		atomic_load(&g_corun_us), atomic_load(&g_open_scopes));
	for (int k = 0; k < SLOTS; k++) {
		struct slot *s = &g_slots[k];
		fprintf(stderr,
			"  slot %d: gen %d, priority %d, Lv%d, %d scopes%s; %d submitted to this "
			"gen, last run: index %d of gen %d\n",
			k, atomic_load(&s->gen), atomic_load(&s->prio), atomic_load(&s->level),
			atomic_load(&s->scopes),
			atomic_load(&s->app_suspended) ? ", suspended by the application" : "",
			atomic_load(&s->next), atomic_load(&s->last_index),
			atomic_load(&s->last_gen));
	}
	fprintf(stderr, " waiting:\n");
	for (int k = 0; k < SLOTS; k++)
		report_wait("the command running on slot", k, &g_slots[k].running, now);
	for (int t = 0; t < NTHREADS; t++) {
		const char *who = t < T_WAITER         ? "submitter"
				  : t < T_CHAOS        ? "waiter"
				  : t == T_CHAOS       ? "chaos thread"
				  : t == T_LIFECYCLE   ? "lifecycle thread"
				  : t == T_LANES       ? "lanes thread"
				  : t == T_LANE_HELPER ? "lanes' second waiter"
						       : "main thread";
		report_wait(who,
			    t < T_WAITER  ? t
			    : t < T_CHAOS ? t - T_WAITER
					  : -1,
			    &g_thread_waits[t], now);
	}
	fprintf(stderr, " the library's counts (XQueueGetStats):\n");
	pthread_t th;
	if (pthread_create(&th, NULL, report_stats, NULL) == 0 &&
	    !t_wait_for(stats_done_pred, NULL, STATS_WAIT_MS))
		fprintf(stderr, "  (XQueueGetStats did not return within %d ms)\n", STATS_WAIT_MS);
	fflush(stderr);
	_exit(1);
}

/* The distinct priorities of the slots and the lanes now. */
static int distinct_prios(void)
{
	int seen[SLOTS + LANES], n = 0;
	for (int i = 0; i < SLOTS + LANES; i++) {
		int p = i < SLOTS ? atomic_load(&g_slots[i].prio)
				  : atomic_load(&g_lanes[i - SLOTS].prio);
		int j = 0;
		while (j < n && seen[j] != p)
			j++;
		if (j == n)
			seen[n++] = p;
	}
	return n;
}

/* Fails the run when no command has run for STALL_S, or the run has not ended OVERRUN_S
 * after its time; samples how many priorities (tiers) the slots have meanwhile, and how
 * many the slots and the lanes have together. */
static void *watchdog(void *arg)
{
	(void)arg;
	long long last = -1;
	int64_t last_change = t_now_us(), limit = g_start_us + (g_run_ms + OVERRUN_S * 1000) * 1000;
	while (!atomic_load(&g_done)) {
		t_sleep_us(10000);
		int64_t now = t_now_us();
		long long p = atomic_load(&g_progress);
		if (p != last) {
			last = p;
			last_change = now;
		} else if (now - last_change > STALL_S * 1000000LL) {
			char why[64];
			snprintf(why, sizeof(why), "no command ran for %d s", STALL_S);
			report_hang(why);
		}
		if (now > limit)
			report_hang("the run did not end in time");
		if (!atomic_load(&g_stop)) {
			bool seen[NPRIO] = {false};
			int tiers = 0;
			for (int k = 0; k < SLOTS; k++) {
				int prio = atomic_load(&g_slots[k].prio);
				tiers += !seen[prio];
				seen[prio] = true;
			}
			atomic_fetch_add(&g_tier_samples, 1);
			atomic_fetch_add(&g_tier3_samples, tiers >= 3);
			atomic_fetch_add(&g_prio9_samples, distinct_prios() >= 9);
		}
	}
	return NULL;
}

static int env_int(const char *name, long long def)
{
	const char *v = getenv(name);
	return v && *v ? (int)strtoll(v, NULL, 10) : (int)def;
}

static void report(void)
{
	static const char *const kinds[] = {"host functions", "launch callbacks"};
	static const char *const calls[] = {"", "XQueueWait", "XQueueWaitAll", "inline launch"};
	for (int kind = 0; kind < 2; kind++)
		for (int op = OP_WAIT; op < OP_NOPS; op++)
			printf("%s, %s to a queue of higher/equal/lower priority: %d/%d/%d\n",
			       kinds[kind], calls[op], atomic_load(&g_rel[kind][op][REL_HIGHER]),
			       atomic_load(&g_rel[kind][op][REL_EQUAL]),
			       atomic_load(&g_rel[kind][op][REL_LOWER]));
	int pairs = 0;
	for (int a = 0; a < NPRIO; a++)
		for (int b = 0; b < NPRIO; b++)
			pairs += atomic_load(&g_inline_pairs[a][b]) > 0;
	int samples = atomic_load(&g_tier_samples);
	printf("lanes: %d rounds of two XQueueWaitAll (%d calls checked), %d priority changes, %d "
	       "PRIORITY_NO_EXECUTE toggles with a probe, %d forks in host functions; %d%% of "
	       "the time 9 or more distinct priorities\n",
	       atomic_load(&g_lane_rounds), atomic_load(&g_lane_wait_alls),
	       atomic_load(&g_lane_prio_changes), atomic_load(&g_lane_noexec),
	       atomic_load(&g_lane_forks),
	       samples ? 100 * atomic_load(&g_prio9_samples) / samples : 0);
	printf("%d inline launches (%d callbacks ran), %d of %d pairs of priorities; %d%% of "
	       "the time 3 or more tiers\n",
	       atomic_load(&g_inline_ok), atomic_load(&g_inline_calls), pairs, NPRIO * NPRIO,
	       atomic_load(&g_tier_samples)
		   ? 100 * atomic_load(&g_tier3_samples) / atomic_load(&g_tier_samples)
		   : 0);
}

int main(void)
{
	const char *env = getenv("XSCHED_TEST_SEED");
	g_seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)t_now_us();
	g_run_ms = env_int("XS_CHAOS_MS", RUN_MS);
	if (g_run_ms < 1)
		g_run_ms = RUN_MS;
	printf("seed %u, %lld ms (XSCHED_TEST_SEED=%u XS_CHAOS_MS=%lld repeats this run)\n", g_seed,
	       (long long)g_run_ms, g_seed, (long long)g_run_ms);
	fflush(stdout);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	unsigned seed = g_seed;
	for (int k = 0; k < SLOTS; k++) {
		pthread_mutex_init(&g_slots[k].lock, NULL);
		atomic_store(&g_slots[k].last_gen, -1);
		slot_open(&g_slots[k], &seed, false);
	}
	for (int l = 0; l < LANES; l++)
		lane_open(l, &seed);
	g_start_us = t_now_us();
	pthread_t wd, th[SUBMITTERS + WAITERS], ch, lc, ln, lh;
	CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0);
	for (int t = 0; t < SUBMITTERS; t++)
		CHECK(pthread_create(&th[t], NULL, submitter, (void *)(uintptr_t)t) == 0);
	for (int t = 0; t < WAITERS; t++)
		CHECK(pthread_create(&th[SUBMITTERS + t], NULL, waiter, (void *)(uintptr_t)t) == 0);
	CHECK(pthread_create(&ch, NULL, chaos, NULL) == 0);
	CHECK(pthread_create(&lc, NULL, lifecycle, NULL) == 0);
	CHECK(pthread_create(&ln, NULL, lanes_main, NULL) == 0);
	CHECK(pthread_create(&lh, NULL, lane_helper, NULL) == 0);
	t_sleep_us(g_run_ms * 1000);
	atomic_store(&g_stop, true);
	atomic_store(&g_phase, 1);
	struct wait_rec *w = &g_thread_waits[T_MAIN];
	wait_begin(w, OP_JOIN, -1, -1);
	CHECK(pthread_join(ch, NULL) == 0); /* first: it closes the scopes it left open */
	CHECK(pthread_join(lc, NULL) == 0);
	CHECK(pthread_join(ln, NULL) == 0);
	for (int t = 0; t < SUBMITTERS + WAITERS; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	wait_end(w);
	atomic_store(&g_phase, 2);
	/* Earlier slots first: their commands may still reach later ones. Drains: every
	 * accepted command has run. */
	for (int k = 0; k < SLOTS; k++)
		slot_close(&g_slots[k], false, w);
	lanes_close();
	atomic_store(&g_phase, 3);
	wait_begin(w, OP_SHUTDOWN, -1, -1);
	CHECK_OK(XSchedShutdown());
	wait_end(w);
	atomic_store(&g_done, true);
	CHECK(pthread_join(wd, NULL) == 0);
	CHECK(pthread_join(lh, NULL) == 0);
	int children_bad = reap_children();

	int n = atomic_load(&g_nitems);
	int accepted = 0, bad = 0;
	for (int i = 0; i < n; i++) {
		struct item *it = item_at(i);
		int runs = atomic_load(&it->runs);
		accepted += it->accepted;
		if (runs != (it->accepted ? 1 : 0))
			bad++;
	}
	printf("%d commands accepted; %d ran other than once; %d out of order; %d waits checked "
	       "(%d more found their queue gone), %d wrong\n",
	       accepted, bad, atomic_load(&g_order_errors), atomic_load(&g_checked_waits),
	       atomic_load(&g_gone_waits), atomic_load(&g_result_errors));
	report();
	if (bad || atomic_load(&g_order_errors) || atomic_load(&g_result_errors) ||
	    atomic_load(&g_inline_ok) != atomic_load(&g_inline_calls) || children_bad)
		fprintf(stderr, "test_chaos failed with seed %u (XS_CHAOS_MS=%lld)\n", g_seed,
			(long long)g_run_ms);
	CHECK(atomic_load(&g_inline_ok) == atomic_load(&g_inline_calls));
	CHECK(accepted > 100 && atomic_load(&g_checked_waits) > 10);
	CHECK(atomic_load(&g_lane_wait_alls) > 0);
	CHECK(children_bad == 0);
	CHECK(bad == 0);
	CHECK(atomic_load(&g_order_errors) == 0);
	CHECK(atomic_load(&g_result_errors) == 0);
	for (int c = 0; c < MAX_CHUNKS; c++)
		free(atomic_load(&g_chunks[c]));
	return 0;
}
