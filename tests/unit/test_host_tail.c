/* A host queue's command that ends without a done mark of its own (left-out marks) is seen
 * done soon after it ends, so the lower queues it holds go on.
 *
 * H (priority 10) first runs commands of 5 ms, so its estimate is 5 ms; then one quick
 * host function; L (priority 0) submits meanwhile and waits (HPF, co-run budget 0). The
 * quick command's completion used to be looked for only once its tail was due (an
 * estimate later), while the host backend's push woke the progress thread only then;
 * L started 100 ms later, when the stall check came round. Checked in 5 rounds: L's
 * command starts within 50 ms of the end of H's.
 *
 * Then 400 rounds of only the quick command and L's: a quick command may end, and the
 * host backend push its end, before the submitting thread stored its number; the progress
 * thread then found nothing to complete and slept until the stall check (1-12 rounds of
 * 200 took 100 ms on a loaded 2-core machine). Same bound.
 *
 * The bound is a timing bound: a round over it fails where the host gave the test's threads
 * a CPU when they were ready during that round, and is skipped, saying so, where it did not
 * (check.h, CHECK_TIMED; exit 77 once the rounds are done). */
#include <stdlib.h>

#include "check.h"

static atomic_llong g_end, g_start;

static XResult quick(void *d)
{
	(void)d;
	atomic_store(&g_end, t_now_us());
	return kXSchedSuccess;
}

static XResult slow(void *d)
{
	(void)d;
	t_sleep_us(5000);
	return kXSchedSuccess;
}

static XResult low(void *d)
{
	(void)d;
	atomic_store(&g_start, t_now_us());
	return kXSchedSuccess;
}

/* One quick command on H and one on L, both waited for; then checks that L's command
 * started within 50 ms of the end of H's (or before it: L may run before the scheduler
 * first sees H). */
static void quick_round(const struct t_pair *p, int r, bool print)
{
	t_host_reset();
	t_submit_fn(p->high, quick, NULL);
	t_submit_fn(p->low, low, NULL);
	CHECK_OK(XQueueWaitAll(p->low));
	CHECK_OK(XQueueWaitAll(p->high));
	long long gap = atomic_load(&g_start) - atomic_load(&g_end);
	if (print || gap >= 50000)
		printf("round %d: low started %lld us after high's quick command ended\n", r, gap);
	if (gap < 50000)
		return;
	t_host host = t_host_get();
	CHECK_TIMED(&host, gap < 50000,
		    "round %d: the low command starts within 50 ms of the end of the "
		    "high one; measured %lld us",
		    r, gap);
}

int main(void)
{
	CHECK(setenv("XSCHED_CORUN_US", "0", 1) == 0);
	CHECK(setenv("XSCHED_HPF_LINGER_US", "0", 1) == 0);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	struct t_pair p;
	t_pair_open(&p, kPreemptLevelBlock); /* L priority 0, H priority 10 */
	for (int r = 0; r < 5; r++) {
		for (int i = 0; i < 3; i++)
			t_submit_fn(p.high, slow, NULL);
		CHECK_OK(XQueueWaitAll(p.high));
		t_sleep_us(2000);
		quick_round(&p, r, true);
	}
	for (int r = 0; r < 400; r++) {
		t_sleep_us(300);
		quick_round(&p, r, false);
	}
	t_pair_close(&p);
	CHECK_OK(XSchedShutdown());
	return t_exit();
}
