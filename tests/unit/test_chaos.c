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
 * strict priority (on and off); enqueues run gate checks among commands charged to the
 * budget; opens scopes that stay open across a destroy; and shuts the scheduler down and
 * starts it again. A lifecycle thread destroys a slot's queue and makes a new one, on a
 * new HwQueue or the same one (while others wait on the old queue), while the others
 * submit.
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
 * command's result; every inline launch's callback ran once; and progress: when no
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
	OP_JOIN
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

enum {
	T_SUBMITTER = 0,
	T_WAITER = SUBMITTERS,
	T_CHAOS = SUBMITTERS + WAITERS,
	T_LIFECYCLE,
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
		switch (rand_r(&seed) % 16) {
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
			CHECK_OK(XSchedShutdown());
			CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
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
		fprintf(stderr, " slot %d", slot);
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
		const char *who = t < T_WAITER       ? "submitter"
				  : t < T_CHAOS      ? "waiter"
				  : t == T_CHAOS     ? "chaos thread"
				  : t == T_LIFECYCLE ? "lifecycle thread"
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

/* Fails the run when no command has run for STALL_S, or the run has not ended OVERRUN_S
 * after its time; samples how many priorities (tiers) the slots have meanwhile. */
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
	g_start_us = t_now_us();
	pthread_t wd, th[SUBMITTERS + WAITERS], ch, lc;
	CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0);
	for (int t = 0; t < SUBMITTERS; t++)
		CHECK(pthread_create(&th[t], NULL, submitter, (void *)(uintptr_t)t) == 0);
	for (int t = 0; t < WAITERS; t++)
		CHECK(pthread_create(&th[SUBMITTERS + t], NULL, waiter, (void *)(uintptr_t)t) == 0);
	CHECK(pthread_create(&ch, NULL, chaos, NULL) == 0);
	CHECK(pthread_create(&lc, NULL, lifecycle, NULL) == 0);
	t_sleep_us(g_run_ms * 1000);
	atomic_store(&g_stop, true);
	atomic_store(&g_phase, 1);
	struct wait_rec *w = &g_thread_waits[T_MAIN];
	wait_begin(w, OP_JOIN, -1, -1);
	CHECK(pthread_join(ch, NULL) == 0); /* first: it closes the scopes it left open */
	CHECK(pthread_join(lc, NULL) == 0);
	for (int t = 0; t < SUBMITTERS + WAITERS; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	wait_end(w);
	atomic_store(&g_phase, 2);
	/* Earlier slots first: their commands may still reach later ones. Drains: every
	 * accepted command has run. */
	for (int k = 0; k < SLOTS; k++)
		slot_close(&g_slots[k], false, w);
	atomic_store(&g_phase, 3);
	wait_begin(w, OP_SHUTDOWN, -1, -1);
	CHECK_OK(XSchedShutdown());
	wait_end(w);
	atomic_store(&g_done, true);
	CHECK(pthread_join(wd, NULL) == 0);

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
	    atomic_load(&g_inline_ok) != atomic_load(&g_inline_calls))
		fprintf(stderr, "test_chaos failed with seed %u (XS_CHAOS_MS=%lld)\n", g_seed,
			(long long)g_run_ms);
	CHECK(atomic_load(&g_inline_ok) == atomic_load(&g_inline_calls));
	CHECK(accepted > 100 && atomic_load(&g_checked_waits) > 10);
	CHECK(bad == 0);
	CHECK(atomic_load(&g_order_errors) == 0);
	CHECK(atomic_load(&g_result_errors) == 0);
	for (int c = 0; c < MAX_CHUNKS; c++)
		free(atomic_load(&g_chunks[c]));
	return 0;
}
