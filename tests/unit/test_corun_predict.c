/* A co-run budget charges a lower command what its scope position held before
 * (preempt/budget.c, xs_budget_charge; pace.h, xs_pace_known), not its queue's mean: three
 * low lanes (host queues, Lv2) run scopes of five short commands (200 us) and one long
 * (8 ms), whose mean (1.5 ms) fits the co-run budget of 2 ms. Alone first, until each lane
 * has run its scope three times (each command waited for before the next: one completion
 * at a time, which the positions learn from). Then the high queue holds the device with
 * 300 ms of back-to-back work. Checked:
 * - no long command submitted after the high queue's first submit starts while the high
 *   queue works: charged its position's 10 ms it never fits 2 ms; charged the mean, it
 *   did (this check fails without the position's charge). One submitted before may have
 *   been committed before the device was held, and runs: not counted;
 * - short commands do start then (charged 260 us each, they fit): a timing bound
 *   (CHECK_TIMED), since they need the host to run the lanes' threads;
 * - every command completes, and each lane finishes its scopes once the high queue is
 *   idle (the long ones ran then).
 * Then a waiter ranked in another state (strict priorities, budgets of 1 ms): queue A's
 * long command (its position: 3 ms) and queue B's short one (100 us) wait behind X's
 * command that holds the budget, submitted while the top queue was idle; the top then
 * holds the device with 2.1 s of work, and X completes. A's command does not fit the
 * co-run budget and B's does: B's must start while the top works (a timing bound). When
 * the grant ranked waiters on the charge they would have made with the top idle (A's
 * mean, which fits), A was granted, its charge recomputed held did not fit, and the grant
 * loop stopped with nothing charged: B waited for the top's 2.1 s. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { LANES = 3, SHORT_US = 200, LONG_US = 8000, PER_SCOPE = 6, HIGH_US = 3000, HIGH_N = 100 };

static atomic_bool g_stop, g_high_busy, g_high_gate;
static atomic_int g_long_held, g_short_held, g_scopes[LANES];
static atomic_llong g_held_from; /* after the high queue's first submit returned (us); 0 */

struct lane {
	int id;
	HwQueueHandle hwq;
	XQueueHandle xq;
	pthread_t th;
	atomic_llong long_submit_us; /* when its long command's submit began */
};
static struct lane g_l[LANES];

static XResult short_fn(void *data)
{
	(void)data;
	if (atomic_load(&g_high_busy))
		atomic_fetch_add(&g_short_held, 1);
	t_work_us(SHORT_US);
	return kXSchedSuccess;
}

static XResult long_fn(void *data)
{
	struct lane *l = data;
	int64_t from = atomic_load(&g_held_from);
	if (atomic_load(&g_high_busy) && from && atomic_load(&l->long_submit_us) >= from)
		atomic_fetch_add(&g_long_held, 1);
	t_sleep_us(LONG_US);
	return kXSchedSuccess;
}

/* Scopes of five short commands and a long one, each waited for before the next. */
static void *lane_main(void *arg)
{
	struct lane *l = arg;
	while (!atomic_load(&g_stop)) {
		CHECK_OK(XQueueBeginScope(l->xq));
		for (int k = 0; k < PER_SCOPE; k++) {
			bool is_long = k == PER_SCOPE - 1;
			if (is_long)
				atomic_store(&l->long_submit_us, t_now_us());
			t_run_fn(l->xq, is_long ? long_fn : short_fn, l);
		}
		CHECK_OK(XQueueEndScope(l->xq));
		atomic_fetch_add(&g_scopes[l->id], 1);
	}
	return NULL;
}

/* The high queue's command; the last one (@data non-null) ends its busy spell before it
 * returns, before the engine can see the queue idle and let a long command start. */
static XResult high_fn(void *data)
{
	atomic_store(&g_high_busy, true);
	while (!atomic_load(&g_high_gate))
		t_sleep_us(50); /* all submitted first: the queue never runs dry meanwhile */
	t_sleep_us(HIGH_US);
	if (data)
		atomic_store(&g_high_busy, false);
	return kXSchedSuccess;
}

static int min_scopes(void)
{
	int m = atomic_load(&g_scopes[0]);
	for (int i = 1; i < LANES; i++)
		if (atomic_load(&g_scopes[i]) < m)
			m = atomic_load(&g_scopes[i]);
	return m;
}

/* t_wait_for's predicate: every lane ran at least *@arg scopes. */
static bool scopes_reach(void *arg)
{
	return min_scopes() >= *(int *)arg;
}

static atomic_bool g_x_go;
static atomic_llong g_b_ran_us, g_top_end_us;

static XResult x_fn(void *data)
{
	(void)data;
	while (!atomic_load(&g_x_go))
		t_sleep_us(100);
	return kXSchedSuccess;
}

static XResult b_fn(void *data)
{
	(void)data;
	atomic_store(&g_b_ran_us, t_now_us());
	t_sleep_us(100);
	return kXSchedSuccess;
}

static XResult top_last_fn(void *data)
{
	t_sleep_us(*(int64_t *)data);
	atomic_store(&g_top_end_us, t_now_us());
	return kXSchedSuccess;
}

/* Command lengths for t_sleep_fn (us). */
static int64_t g_us100 = 100, g_us3000 = 3000, g_us30000 = 30000;

/* The waiter ranked in another state (the file's first comment). */
static void stale_waiter(void)
{
	enum { TOP_N = 700 }; /* commands of 3 ms */
	printf("a waiter ranked in another state\n");
	CHECK_OK(XHintCorunBudget(1000));
	CHECK_OK(XHintCommitBudget(1000));
	CHECK_OK(XHintStrictPriority(1));
	HwQueueHandle hw[4];
	XQueueHandle top, a, b, x;
	for (int i = 0; i < 4; i++)
		CHECK_OK(HostQueueCreate(&hw[i]));
	CHECK_OK(XQueueCreate(&top, hw[0], kPreemptLevelDeactivate, 0));
	CHECK_OK(XQueueCreate(&a, hw[1], kPreemptLevelDeactivate, 0));
	CHECK_OK(XQueueCreate(&b, hw[2], kPreemptLevelDeactivate, 0));
	CHECK_OK(XQueueCreate(&x, hw[3], kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(top, 4));
	CHECK_OK(XHintPriority(x, 3));
	CHECK_OK(XHintPriority(a, 2));
	CHECK_OK(XHintPriority(b, 1));
	t_sleep_us(30000);            /* the scheduler's pass marks the lower queues limited */
	for (int r = 0; r < 3; r++) { /* learn: A's positions, X's and B's means */
		CHECK_OK(XQueueBeginScope(a));
		for (int k = 0; k < 5; k++)
			t_run_fn(a, t_sleep_fn, &g_us100);
		t_run_fn(a, t_sleep_fn, &g_us3000);
		CHECK_OK(XQueueEndScope(a));
		t_run_fn(x, t_sleep_fn, &g_us30000);
		t_run_fn(b, t_sleep_fn, &g_us100);
	}
	CHECK_OK(XQueueBeginScope(a));
	for (int k = 0; k < 5; k++)
		t_run_fn(a, t_sleep_fn, &g_us100);
	HwCommandHandle cx, ca, cb;
	CHECK_OK(HwCommandCreateHostFunc(&cx, x_fn, NULL));
	CHECK_OK(XQueueSubmit(x, cx)); /* X holds the budget */
	t_sleep_us(500);
	CHECK_OK(HwCommandCreateHostFunc(&ca, t_sleep_fn, &g_us3000));
	CHECK_OK(XQueueSubmit(a, ca)); /* A's long, the top idle: it waits */
	CHECK_OK(HwCommandCreateHostFunc(&cb, b_fn, NULL));
	CHECK_OK(XQueueSubmit(b, cb)); /* B's short waits too */
	for (int k = 0; k < TOP_N; k++)
		t_submit_fn(top, k == TOP_N - 1 ? top_last_fn : t_sleep_fn, &g_us3000);
	t_sleep_us(2000);
	t_host_reset();
	int64_t release = t_now_us();
	atomic_store(&g_x_go, true); /* X completes: nothing charged */
	CHECK_OK(XQueueWait(b, cb));
	t_host host = t_host_get();
	CHECK_OK(XQueueWait(a, ca));
	CHECK_OK(XQueueEndScope(a));
	CHECK_OK(XQueueWaitAll(top));
	CHECK_OK(XQueueWaitAll(x));
	int64_t b_at = atomic_load(&g_b_ran_us) - release;
	int64_t top_at = atomic_load(&g_top_end_us) - release;
	printf("  B's short started %lld us after X's release; the top's work ended after %lld "
	       "us\n",
	       (long long)b_at, (long long)top_at);
	CHECK_TIMED(&host, b_at < top_at,
		    "B's short command (it fits the co-run budget) starts while the top works "
		    "(its work ended %lld us after X's release); it started after %lld us",
		    (long long)top_at, (long long)b_at);
	CHECK_OK(HwCommandDestroy(cx));
	CHECK_OK(HwCommandDestroy(ca));
	CHECK_OK(HwCommandDestroy(cb));
	XQueueHandle qs[] = {top, a, b, x};
	for (int i = 0; i < 4; i++) {
		CHECK_OK(XQueueDestroy(qs[i]));
		CHECK_OK(HwQueueDestroy(hw[i]));
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK_OK(XHintCorunBudget(2000));
	CHECK_OK(XHintCommitBudget(4000));
	HwQueueHandle hhwq;
	XQueueHandle high;
	CHECK_OK(HostQueueCreate(&hhwq));
	CHECK_OK(XQueueCreate(&high, hhwq, kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(high, 2));
	for (int i = 0; i < LANES; i++) {
		g_l[i].id = i;
		CHECK_OK(HostQueueCreate(&g_l[i].hwq));
		CHECK_OK(XQueueCreate(&g_l[i].xq, g_l[i].hwq, kPreemptLevelDeactivate, 0));
		CHECK_OK(XHintPriority(g_l[i].xq, 1));
	}
	t_sleep_us(20000); /* the scheduler's pass marks the low queues limited */
	for (int i = 0; i < LANES; i++)
		CHECK(pthread_create(&g_l[i].th, NULL, lane_main, &g_l[i]) == 0);
	int want = 3; /* the positions learn, the high queue idle */
	CHECKF(t_wait_for(scopes_reach, &want, 20000),
	       "each lane ran 3 scopes alone within 20 s; ran %d", min_scopes());
	printf("alone: each lane ran at least %d scopes of %d commands\n", min_scopes(), PER_SCOPE);

	t_host_reset();
	for (int k = 0; k < HIGH_N; k++) {
		t_submit_fn(high, high_fn, k == HIGH_N - 1 ? &g_high_gate : NULL);
		if (k == 0)
			atomic_store(&g_held_from, t_now_us());
	}
	atomic_store(&g_high_gate, true);
	CHECK_OK(XQueueWaitAll(high));
	t_host host = t_host_get();
	int longs = atomic_load(&g_long_held), shorts = atomic_load(&g_short_held);
	printf("while the high queue worked (%d x %d us): %d long low commands submitted after "
	       "its first submit and %d short ones started\n",
	       HIGH_N, HIGH_US, longs, shorts);
	CHECKF(longs == 0,
	       "no long command (%d us, predicted from its position) starts under a co-run budget "
	       "of 2000 us; %d started",
	       LONG_US, longs);
	CHECK_TIMED(&host, shorts > 0,
		    "short commands (%d us) co-run with the high queue under a budget of 2000 us; "
		    "none started",
		    SHORT_US);

	int before = min_scopes();
	want = before + 1; /* the long ones run now */
	CHECKF(t_wait_for(scopes_reach, &want, 20000),
	       "each lane finishes a scope within 20 s once the high queue is idle; the least "
	       "went from %d to %d",
	       before, min_scopes());
	atomic_store(&g_stop, true);
	for (int i = 0; i < LANES; i++) {
		CHECK(pthread_join(g_l[i].th, NULL) == 0);
		CHECK_OK(XQueueWaitAll(g_l[i].xq));
		CHECK_OK(XQueueDestroy(g_l[i].xq));
		CHECK_OK(HwQueueDestroy(g_l[i].hwq));
	}
	CHECK_OK(XQueueDestroy(high));
	CHECK_OK(HwQueueDestroy(hhwq));
	stale_waiter();
	return t_exit();
}
