/* The commitment budget on the host backend, under HPF with the scheduler thread: one
 * high-priority XQueue whose bursts arrive at random and many low-priority XQueues that
 * submit back to back from their own threads.
 * - Counted: with a budget of 0, at every moment at most one low-priority command has
 *   started and not finished (seen by the commands themselves), and the device's own
 *   count of charged commands agrees;
 * - timed (the timing suite: tests/unit/check.h): with a budget of 1 ms, no more than the
 *   budget over a command's time (300 us) plus one, counted both ways. The library bounds
 *   charged work by its *estimate* of a command's time, which a host that sees
 *   completions late makes shorter than the real time (164-260 us seen under
 *   ThreadSanitizer with two busy loops beside it: 5 charged against a bound of 4, in 2
 *   of 59 runs), so the bound is judged only where the host gave the threads their time;
 * - nothing is lost, run twice or reordered, and every thread finishes (a watchdog
 *   turns a hang into a failure).
 * Lv1 and Lv2, several queue counts. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "preempt/engine.h"

#define MAXLOW  15
#define LOW_US  300 /* duration of one low command */
#define HIGH_US 200
#define RUN_MS  1500

static atomic_int g_low_running, g_low_max;
static atomic_bool g_stop, g_wd_done;

struct lane {
	XQueueHandle xq;
	HwQueueHandle hwq;
	pthread_t th;
	atomic_int next; /* commands of this lane run so far */
	int submitted;
	int bad_order;
};

static struct lane g_lanes[MAXLOW + 1];

struct step {
	struct lane *lane;
	int idx;
};

static XResult low_fn(void *data)
{
	struct step *s = data;
	int now = atomic_fetch_add(&g_low_running, 1) + 1;
	int m = atomic_load(&g_low_max);
	while (now > m && !atomic_compare_exchange_weak(&g_low_max, &m, now))
		;
	if (atomic_fetch_add(&s->lane->next, 1) != s->idx)
		s->lane->bad_order++;
	t_work_us(LOW_US);
	atomic_fetch_sub(&g_low_running, 1);
	free(s);
	return kXSchedSuccess;
}

static void *low_thread(void *arg)
{
	struct lane *l = arg;
	while (!atomic_load(&g_stop)) {
		/* Two commands per task, then wait for the second: a closed loop. */
		HwCommandHandle last = 0;
		for (int k = 0; k < 2; k++) {
			struct step *s = malloc(sizeof(*s));
			CHECK(s);
			s->lane = l;
			s->idx = l->submitted++;
			HwCommandHandle c;
			CHECK_OK(HwCommandCreateHostFunc(&c, low_fn, s));
			CHECK_OK(XQueueSubmit(l->xq, c));
			if (k == 1)
				last = c;
			else
				CHECK_OK(HwCommandDestroy(c));
		}
		CHECK_OK(XQueueWait(l->xq, last));
		CHECK_OK(HwCommandDestroy(last));
	}
	return NULL;
}

static XResult high_fn(void *data)
{
	(void)data;
	t_sleep_us(HIGH_US);
	return kXSchedSuccess;
}

static void *watchdog(void *arg)
{
	int64_t until = t_now_us() + *(int64_t *)arg;
	while (t_now_us() < until) {
		if (atomic_load(&g_wd_done))
			return NULL;
		t_sleep_us(10000);
	}
	fprintf(stderr, "test_budget: no progress within the watchdog's time: a hang\n");
	for (int i = 0; i <= MAXLOW; i++) {
		if (!g_lanes[i].xq)
			continue;
		XQueueStats st;
		if (XQueueGetStats(g_lanes[i].xq, &st) == kXSchedSuccess)
			fprintf(stderr,
				"  lane %d: submitted %llu launched %llu committed %llu completed "
				"%llu suspensions %llu\n",
				i, (unsigned long long)st.submitted,
				(unsigned long long)st.launched, (unsigned long long)st.committed,
				(unsigned long long)st.completed,
				(unsigned long long)st.suspensions);
	}
	abort();
}

static void run(int level, int nlow, int64_t budget_us)
{
	printf("level %d, %d low queues, budget %lld us\n", level, nlow, (long long)budget_us);
	CHECK_OK(XHintCommitBudget(budget_us));
	atomic_store(&g_low_running, 0);
	atomic_store(&g_low_max, 0);
	atomic_store(&g_stop, false);
	atomic_store(&g_wd_done, false);
	for (int i = 0; i <= nlow; i++) {
		struct lane *l = &g_lanes[i];
		memset(l, 0, sizeof(*l));
		CHECK_OK(HostQueueCreate(&l->hwq));
		CHECK_OK(XQueueCreate(&l->xq, l->hwq, level, 0));
		CHECK_OK(XHintPriority(l->xq, i == 0 ? 2 : 1));
	}
	t_sleep_us(20000); /* the scheduler marks the low queues limited */
	int64_t charged_ns;
	uint64_t charged, max_cmds;
	xs_obj *obj = xs_handle_get(g_lanes[1].xq, XS_KIND_XQUEUE);
	CHECK(obj);
	xs_budget_state(xs_xqueue_of(obj), &charged_ns, &charged, &max_cmds);
	int64_t wd_us = 60000000;
	pthread_t wd;
	CHECK(pthread_create(&wd, NULL, watchdog, &wd_us) == 0);
	for (int i = 1; i <= nlow; i++)
		CHECK(pthread_create(&g_lanes[i].th, NULL, low_thread, &g_lanes[i]) == 0);
	/* High bursts of 5 commands at random gaps of 0..4 ms. */
	t_host_reset();
	int64_t end = t_now_us() + RUN_MS * 1000;
	unsigned r = 12345;
	while (t_now_us() < end) {
		r = r * 1103515245u + 12345u;
		t_sleep_us((r >> 8) % 4000);
		for (int k = 0; k < 5; k++)
			t_submit_fn(g_lanes[0].xq, high_fn, NULL);
		CHECK_OK(XQueueWaitAll(g_lanes[0].xq));
	}
	atomic_store(&g_stop, true);
	for (int i = 1; i <= nlow; i++)
		CHECK(pthread_join(g_lanes[i].th, NULL) == 0);
	t_host h = t_host_get();
	xs_budget_state(xs_xqueue_of(obj), &charged_ns, &charged, &max_cmds);
	xs_obj_unref(obj);
	int bound = budget_us ? (int)(budget_us / LOW_US) + 1 : 1;
	printf("  low commands running at once: at most %d (bound %d); device charged at most "
	       "%llu, now %llu\n",
	       atomic_load(&g_low_max), bound, (unsigned long long)max_cmds,
	       (unsigned long long)charged);
	CHECK(atomic_load(&g_low_max) >= 1);
	if (!budget_us) { /* one at a time: counted, whatever the estimates */
		CHECK_CMP(atomic_load(&g_low_max), <=, bound);
		CHECK_CMP(max_cmds, <=, (uint64_t)bound);
	} else {
		CHECK_TIMED(&h, atomic_load(&g_low_max) <= bound,
			    "at most %d low commands running at once, measured %d", bound,
			    atomic_load(&g_low_max));
		CHECK_TIMED(&h, (int)max_cmds <= bound,
			    "at most %d low commands charged at once, measured %llu", bound,
			    (unsigned long long)max_cmds);
	}
	CHECK(charged == 0 && charged_ns == 0);
	for (int i = 1; i <= nlow; i++) {
		struct lane *l = &g_lanes[i];
		CHECK(atomic_load(&l->next) == l->submitted); /* each ran exactly once */
		CHECK(l->bad_order == 0);
		XQueueStats st = t_stats(l->xq);
		CHECK(st.completed == (uint64_t)l->submitted && st.failed == 0);
	}
	for (int i = 0; i <= nlow; i++) {
		CHECK_OK(XQueueDestroy(g_lanes[i].xq));
		CHECK_OK(HwQueueDestroy(g_lanes[i].hwq));
		g_lanes[i].xq = 0;
	}
	atomic_store(&g_wd_done, true);
	CHECK(pthread_join(wd, NULL) == 0);
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	CHECK_RES(XHintCommitBudget(-1), kXSchedErrorInvalidValue);
	CHECK_RES(XHintCommitBudget(TIMESLICE_MAX + 1), kXSchedErrorInvalidValue);
	run(kPreemptLevelDeactivate, 7, 0);
	run(kPreemptLevelDeactivate, 15, 1000);
	run(kPreemptLevelBlock, 7, 0);
	run(kPreemptLevelBlock, 15, 1000);
	CHECK_OK(XSchedShutdown());
	return t_exit();
}
