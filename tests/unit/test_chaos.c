/* Randomized lifecycle stress on the host backend, seeded and bounded in time.
 *
 * Submitter threads submit host functions (each returning a result of its own) and
 * cross-queue event record/wait pairs to a few queue slots, and wait for some of their
 * commands; a chaos thread suspends (also with SyncHwQueue) and resumes queues, changes
 * priorities, launch configs, levels, deadlines, laxities and policies (all of them),
 * opens scopes that stay open across a destroy, and shuts the scheduler down and starts
 * it again; a lifecycle thread destroys
 * a slot's queue and makes a new one, on a new HwQueue or the same one (while others wait
 * on the old queue), while the others submit.
 * Checked: every command whose XQueueSubmit succeeded ran exactly once and no other ran;
 * each queue ran its commands in submission order; every XQueueWait returned its own
 * command's result; nothing hung (a watchdog aborts after 60 s, printing the seed).
 * XSCHED_TEST_SEED=n repeats a run; the seed is printed first.
 *
 * XS_CHAOS_EXTRA=1 (chaos_inline_gates in the unit suite) adds:
 * - host functions that launch inline commands on the last slot's queue. Under HPF a host
 *   function of a high-priority queue waits there while a queue of middle priority stays
 *   ready (a scope, or an event wait for a record behind that host function): priority
 *   inheritance must lend the waiting queue's rank to the last slot's;
 * - run gate checks enqueued by the chaos thread among commands charged to the budget,
 *   with synchronous suspensions (refused while commands behind a check are in flight). */
#include <pthread.h>
#include <string.h>

#include "check.h"

#define SLOTS     4
#define THREADS   6
#define RUN_MS    1500
#define MAX_ITEMS 200000

struct slot {
	pthread_mutex_t lock; /* submit order = index order; guards xq/hwq/gen/next */
	XQueueHandle xq;
	_Atomic XQueueHandle cur; /* xq, for host functions (which must not take the lock) */
	int scopes;               /* scopes the chaos thread left open on xq */
	HwQueueHandle hwq;
	int gen, next;
	/* Written by the slot's executor only (one queue at a time: a destroyed queue has
	 * drained before the next one exists). */
	int last_gen, last_index;
};

struct item {
	int slot, gen, index;
	XResult want;
	atomic_int runs;
	bool accepted;
};

static struct slot g_slots[SLOTS];
static struct item *g_items;
static atomic_int g_nitems, g_order_errors, g_result_errors, g_checked_waits;
static atomic_bool g_stop, g_wd_done;
static unsigned g_seed;
static bool g_extra; /* XS_CHAOS_EXTRA=1 */
static atomic_int g_inline_calls, g_inline_ok;
/* The scopes the chaos thread holds open on all slots: the sum of their `scopes`, each
 * change made under the slot's lock. */
static atomic_int g_open_scopes;

static XResult inline_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	atomic_fetch_add(&g_inline_calls, 1);
	return kXSchedSuccess;
}

static XResult item_fn(void *data)
{
	struct item *it = data;
	struct slot *s = &g_slots[it->slot];
	if (it->gen == s->last_gen ? it->index != s->last_index + 1 : it->index != 0)
		atomic_fetch_add(&g_order_errors, 1);
	s->last_gen = it->gen;
	s->last_index = it->index;
	atomic_fetch_add(&it->runs, 1);
	if (g_extra && it->slot < SLOTS - 1 && it->index % 5 == 0) {
		/* Only to later slots: crossed inline launches could wait for each other. */
		XQueueHandle other = atomic_load(&g_slots[SLOTS - 1].cur);
		XResult r = XQueueLaunchInline(other, inline_cb, NULL);
		if (r == kXSchedSuccess)
			atomic_fetch_add(&g_inline_ok, 1);
		else if (r != kXSchedErrorNotFound) /* NotFound: the queue went meanwhile */
			atomic_fetch_add(&g_result_errors, 1);
	}
	return it->want;
}

/* A new XQueue for the slot: on a new HwQueue, or with @same on the slot's HwQueue. */
static void slot_open(struct slot *s, unsigned *seed, bool same)
{
	if (!same)
		CHECK_OK(HostQueueCreate(&s->hwq));
	CHECK_OK(XQueueCreate(&s->xq, s->hwq, 1 + (int)(rand_r(seed) % 2), 0));
	atomic_store(&s->cur, s->xq);
	s->gen++;
	s->next = 0;
	atomic_fetch_sub(&g_open_scopes, s->scopes); /* gone with the queue */
	s->scopes = 0;
}

/* Destroy the slot's XQueue (open scopes and all), and its HwQueue unless @keep. */
static void slot_close(struct slot *s, bool keep)
{
	CHECK_OK(XQueueDestroy(s->xq)); /* drains */
	if (!keep)
		CHECK_OK(HwQueueDestroy(s->hwq));
}

/* Submit one host function returning one of @results (@n of them) to slot @k. Returns its
 * handle (0 when the item table is full), the item in *out and the queue in *xq. */
static HwCommandHandle submit_item(int k, unsigned *seed, const XResult *results, unsigned n,
				   struct item **out, XQueueHandle *xq)
{
	int i = atomic_fetch_add(&g_nitems, 1);
	if (i >= MAX_ITEMS)
		return 0;
	struct item *it = &g_items[i];
	it->want = results[rand_r(seed) % n];
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, item_fn, it));
	struct slot *s = &g_slots[k];
	pthread_mutex_lock(&s->lock);
	it->slot = k;
	it->gen = s->gen;
	it->index = s->next++;
	it->accepted = true;
	CHECK_OK(XQueueSubmit(s->xq, c)); /* the current queue: the lock holds it */
	*xq = s->xq;
	pthread_mutex_unlock(&s->lock);
	*out = it;
	return c;
}

static void *submitter(void *arg)
{
	unsigned seed = g_seed + (unsigned)(uintptr_t)arg;
	while (!atomic_load(&g_stop)) {
		int k = (int)(rand_r(&seed) % SLOTS);
		/* With inline launches (extra), the last slot, which they go to, takes no
		 * waits: a host function of slot k launching inline there behind a wait for a
		 * record that slot k holds behind that host function would wait for itself,
		 * as it would on streams. */
		int last = g_extra ? SLOTS - 2 : SLOTS - 1;
		if (rand_r(&seed) % 8 == 0 && k < last) {
			/* An event pair: a record on slot k, its wait on a later slot (waits only
			 * from lower to higher slots: crossed pairs could wait for each other for
			 * ever, as they would on streams). */
			int j = k + 1 + (int)(rand_r(&seed) % (unsigned)(last - k));
			HwCommandHandle rec, w;
			CHECK_OK(HwCommandCreateEventRecord(&rec));
			CHECK_OK(HwCommandCreateEventWait(&w, rec));
			pthread_mutex_lock(&g_slots[k].lock);
			CHECK_OK(XQueueSubmit(g_slots[k].xq, rec));
			pthread_mutex_unlock(&g_slots[k].lock);
			pthread_mutex_lock(&g_slots[j].lock);
			CHECK_OK(XQueueSubmit(g_slots[j].xq, w));
			pthread_mutex_unlock(&g_slots[j].lock);
			CHECK_OK(HwCommandDestroy(rec));
			CHECK_OK(HwCommandDestroy(w));
			continue;
		}
		static const XResult results[] = {kXSchedSuccess, kXSchedSuccess,
						  kXSchedErrorNotAllowed, kXSchedErrorInvalidValue};
		struct item *it;
		XQueueHandle xq;
		HwCommandHandle c = submit_item(k, &seed, results, 4, &it, &xq);
		if (!c)
			break;
		if (rand_r(&seed) % 4 == 0) {
			/* NotFound (or InvalidValue: a newer queue of the slot) when the queue
			 * went, drained, before the wait looked it up. */
			XResult r = XQueueWait(xq, c);
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

/* Waits that check their own result: submit and wait on one slot under its lock. */
static void *waiter(void *arg)
{
	unsigned seed = g_seed + 1000u + (unsigned)(uintptr_t)arg;
	while (!atomic_load(&g_stop)) {
		int k = (int)(rand_r(&seed) % SLOTS);
		static const XResult results[] = {kXSchedSuccess, kXSchedErrorNotAllowed,
						  kXSchedErrorInvalidValue};
		struct item *it;
		XQueueHandle xq;
		HwCommandHandle c = submit_item(k, &seed, results, 3, &it, &xq);
		if (!c)
			break;
		XResult r = XQueueWait(xq, c);
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
	unsigned seed = g_seed + 7u;
	static const XPolicyType policies[] = {
	    kPolicyHighestPriorityFirst,
	    kPolicyFirstInFirstOut,
	    kPolicyCompletelyFairScheduler,
	    kPolicyUtilizationPartition,
	    kPolicyEarliestDeadlineFirst,
	    kPolicyKEarliestDeadlineFirst,
	    kPolicyLaxity,
	};
	unsigned npolicies = 7;
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
		unsigned op = rand_r(&seed) % 10;
		if (op == 7 && !g_extra)
			op = 1;
		switch (op) {
		case 0: {
			/* With inline launches (extra) a synchronous suspension may wait for a
			 * host function that waits for a queue held by a scope this thread left
			 * open: a cycle of the test's own (xsched.h, XQueueBeginScope). */
			bool sync = rand_r(&seed) % 2 && !(g_extra && atomic_load(&g_open_scopes));
			XResult r = XQueueSuspend(xq, sync ? kQueueSuspendFlagSyncHwQueue : 0);
			CHECK(r == kXSchedSuccess || r == kXSchedErrorNotSupported);
			pthread_mutex_unlock(&s->lock);
			t_sleep_us(rand_r(&seed) % 2000);
			/* NotFound: the queue went meanwhile (its destroy overrode the suspension).
			 */
			r = XQueueResume(xq, 0);
			CHECK(r == kXSchedSuccess || r == kXSchedErrorNotFound);
			t_sleep_us(rand_r(&seed) % 500);
			continue;
		}
		case 1:
			CHECK_OK(XHintPriority(xq, (int)(rand_r(&seed) % 4)));
			break;
		case 2:
			CHECK_OK(XQueueSetLaunchConfig(xq, 1 + rand_r(&seed) % 16, 1));
			break;
		case 3:
			CHECK_OK(XQueueSetPreemptLevel(xq, 1 + (int)(rand_r(&seed) % 2)));
			break;
		case 4:
			CHECK_OK(XHintSetScheduler(kSchedulerLocal,
						   policies[rand_r(&seed) % npolicies]));
			break;
		case 5:
			CHECK_OK(XSchedShutdown());
			CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
			break;
		case 6:
			CHECK_OK(XHintCommitBudget(rand_r(&seed) % 3000));
			break;
		case 7: /* extra: a run gate check among commands charged to the budget */
			CHECK_OK(XQueueEnqueueGateCheck(xq));
			break;
		case 8: /* a scope, left open now and then until the queue goes */
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
		default: /* deadlines and laxities for EDF, KEDF and LAX */
			CHECK_OK(XHintDeadline(xq, 1000 + rand_r(&seed) % 20000));
			CHECK_OK(XHintLaxity(xq, rand_r(&seed) % 5000, 0, 3));
			break;
		}
		pthread_mutex_unlock(&s->lock);
		t_sleep_us(rand_r(&seed) % 500);
	}
	/* A scope left open holds lower-priority queues back (that is what it is for): the
	 * submitters' last waits would never end. */
	for (int k = 0; k < SLOTS; k++) {
		pthread_mutex_lock(&g_slots[k].lock);
		for (; g_slots[k].scopes; g_slots[k].scopes--)
			CHECK_OK(XQueueEndScope(g_slots[k].xq));
		pthread_mutex_unlock(&g_slots[k].lock);
	}
	return NULL;
}

static void *lifecycle(void *arg)
{
	(void)arg;
	unsigned seed = g_seed + 13u;
	while (!atomic_load(&g_stop)) {
		t_sleep_us(20000 + rand_r(&seed) % 30000);
		struct slot *s = &g_slots[rand_r(&seed) % SLOTS];
		bool same = rand_r(&seed) % 2;
		pthread_mutex_lock(&s->lock);
		slot_close(s, same);
		slot_open(s, &seed, same);
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

static void *watchdog(void *arg)
{
	(void)arg;
	int limit_s = 60;
	for (int i = 0; i < limit_s * 100 && !atomic_load(&g_wd_done); i++)
		t_sleep_us(10000);
	if (atomic_load(&g_wd_done))
		return NULL;
	fprintf(stderr, "test_chaos: no end within %d s: a hang (seed %u%s)\n", limit_s, g_seed,
		g_extra ? ", XS_CHAOS_EXTRA=1" : "");
	abort();
}

int main(void)
{
	const char *env = getenv("XSCHED_TEST_SEED");
	g_seed = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)t_now_us();
	const char *extra = getenv("XS_CHAOS_EXTRA");
	g_extra = extra && !strcmp(extra, "1");
	printf("seed %u (XSCHED_TEST_SEED=%u%s repeats this run)\n", g_seed, g_seed,
	       g_extra ? " XS_CHAOS_EXTRA=1" : "");
	fflush(stdout);
	g_items = calloc(MAX_ITEMS, sizeof(*g_items));
	CHECK(g_items);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	unsigned seed = g_seed;
	for (int k = 0; k < SLOTS; k++) {
		pthread_mutex_init(&g_slots[k].lock, NULL);
		g_slots[k].last_gen = -1;
		slot_open(&g_slots[k], &seed, false);
	}
	pthread_t wd, th[THREADS + 2], ch, lc;
	CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0);
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, submitter, (void *)(uintptr_t)t) == 0);
	for (int t = 0; t < 2; t++)
		CHECK(pthread_create(&th[THREADS + t], NULL, waiter, (void *)(uintptr_t)t) == 0);
	CHECK(pthread_create(&ch, NULL, chaos, NULL) == 0);
	CHECK(pthread_create(&lc, NULL, lifecycle, NULL) == 0);
	t_sleep_us(RUN_MS * 1000);
	atomic_store(&g_stop, true);
	CHECK(pthread_join(ch, NULL) == 0); /* first: it closes the scopes it left open */
	CHECK(pthread_join(lc, NULL) == 0);
	for (int t = 0; t < THREADS + 2; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	for (int k = 0; k < SLOTS; k++)
		slot_close(&g_slots[k], false); /* drains: every accepted command has run */
	CHECK_OK(XSchedShutdown());
	atomic_store(&g_wd_done, true);
	CHECK(pthread_join(wd, NULL) == 0);

	int n = atomic_load(&g_nitems);
	if (n > MAX_ITEMS)
		n = MAX_ITEMS;
	int accepted = 0, bad = 0;
	for (int i = 0; i < n; i++) { /* items never given a command stay unaccepted */
		int runs = atomic_load(&g_items[i].runs);
		accepted += g_items[i].accepted;
		if (runs != (g_items[i].accepted ? 1 : 0))
			bad++;
	}
	printf("%d commands accepted; %d ran other than once; %d out of order; %d waits checked, "
	       "%d wrong\n",
	       accepted, bad, atomic_load(&g_order_errors), atomic_load(&g_checked_waits),
	       atomic_load(&g_result_errors));
	if (g_extra)
		printf("%d inline launches from host functions, %d callbacks ran\n",
		       atomic_load(&g_inline_ok), atomic_load(&g_inline_calls));
	CHECK(atomic_load(&g_inline_ok) == atomic_load(&g_inline_calls));
	if (bad || atomic_load(&g_order_errors) || atomic_load(&g_result_errors))
		fprintf(stderr, "test_chaos failed with seed %u\n", g_seed);
	CHECK(accepted > 100 && atomic_load(&g_checked_waits) > 10);
	CHECK(bad == 0);
	CHECK(atomic_load(&g_order_errors) == 0);
	CHECK(atomic_load(&g_result_errors) == 0);
	free(g_items);
	return 0;
}
