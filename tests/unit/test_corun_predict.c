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
 *   idle (the long ones ran then). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { LANES = 3, SHORT_US = 200, LONG_US = 8000, PER_SCOPE = 6, HIGH_US = 3000, HIGH_N = 100 };

static atomic_bool g_stop, g_high_busy;
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
			HwCommandHandle c;
			bool is_long = k == PER_SCOPE - 1;
			CHECK_OK(HwCommandCreateHostFunc(&c, is_long ? long_fn : short_fn, l));
			if (is_long)
				atomic_store(&l->long_submit_us, t_now_us());
			CHECK_OK(XQueueSubmit(l->xq, c));
			CHECK_OK(XQueueWait(l->xq, c));
			CHECK_OK(HwCommandDestroy(c));
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
	int64_t until = t_now_us() + 20000000;
	while (min_scopes() < 3) { /* the positions learn, the high queue idle */
		CHECKF(t_now_us() < until, "each lane ran 3 scopes alone within 20 s; ran %d",
		       min_scopes());
		t_sleep_us(5000);
	}
	printf("alone: each lane ran at least %d scopes of %d commands\n", min_scopes(), PER_SCOPE);

	t_host_reset();
	HwCommandHandle hc[HIGH_N];
	for (int k = 0; k < HIGH_N; k++) {
		CHECK_OK(HwCommandCreateHostFunc(&hc[k], high_fn, k == HIGH_N - 1 ? hc : NULL));
		CHECK_OK(XQueueSubmit(high, hc[k]));
		if (k == 0)
			atomic_store(&g_held_from, t_now_us());
	}
	CHECK_OK(XQueueWaitAll(high));
	t_host host = t_host_get();
	for (int k = 0; k < HIGH_N; k++)
		CHECK_OK(HwCommandDestroy(hc[k]));
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
	until = t_now_us() + 20000000;
	while (min_scopes() < before + 1) { /* the long ones run now */
		CHECKF(t_now_us() < until,
		       "each lane finishes a scope within 20 s once the high "
		       "queue is idle; the least went from %d to %d",
		       before, min_scopes());
		t_sleep_us(5000);
	}
	atomic_store(&g_stop, true);
	for (int i = 0; i < LANES; i++) {
		CHECK(pthread_join(g_l[i].th, NULL) == 0);
		CHECK_OK(XQueueWaitAll(g_l[i].xq));
		CHECK_OK(XQueueDestroy(g_l[i].xq));
		CHECK_OK(HwQueueDestroy(g_l[i].hwq));
	}
	CHECK_OK(XQueueDestroy(high));
	CHECK_OK(HwQueueDestroy(hhwq));
	return t_exit();
}
