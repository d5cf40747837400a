/* The scheduler thread's timer: it drives CFS's default 1 ms slices (many timer
 * wake-ups while two queues are busy), and costs nothing when idle: after the work is
 * done, under every policy, no pass runs at all (no polling, no leftover timer).
 *
 * Prints the measured lateness of the timer wake-ups (deadline to the thread running);
 * it asserts nothing on it, as a loaded or instrumented machine may be late. The counts of
 * wake-ups and idle passes are timing bounds: met, one passes; missed, it fails where the
 * host gave the test's threads (the scheduler's among them) a CPU when they were ready
 * during its window, and is skipped, saying what was measured and what the host gave, where
 * it did not (check.h, CHECK_TIMED; exit 77 once every other check passed).
 */
#include "sched/sched.h"
#include "sched_util.h"

enum { A, B };

static const XPolicyType g_policies[] = {
    kPolicyHighestPriorityFirst,    kPolicyUtilizationPartition,
    kPolicyKEarliestDeadlineFirst,  kPolicyLaxity,
    kPolicyCompletelyFairScheduler, kPolicyFirstInFirstOut,
    kPolicyEarliestDeadlineFirst,   kPolicyMultiLevelFeedbackQueue,
};

static void print_lateness(const xs_sched_stats *s0, const xs_sched_stats *s1)
{
	static const char *const names[XS_SCHED_LATE_BUCKETS] = {
	    "<10us", "<50us", "<100us", "<200us", "<500us", "<1ms", "<2ms", ">=2ms",
	};
	uint64_t n = s1->timer_wakeups - s0->timer_wakeups;
	printf("timer wake-ups: %llu, passes: %llu, mean lateness %.1f us, max (ever) %.1f us\n",
	       (unsigned long long)n, (unsigned long long)(s1->passes - s0->passes),
	       n ? (double)(s1->late_sum_ns - s0->late_sum_ns) / (double)n / 1000 : 0.0,
	       (double)s1->late_max_ns / 1000);
	uint64_t acc = 0;
	for (int b = 0; b < XS_SCHED_LATE_BUCKETS; b++) {
		uint64_t c = s1->late_hist[b] - s0->late_hist[b];
		acc += c;
		printf("  %-7s %6llu  (cumulative %.1f%%)\n", names[b], (unsigned long long)c,
		       n ? 100.0 * (double)acc / (double)n : 0.0);
	}
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyCompletelyFairScheduler));
	su_create(A, 1000);
	su_create(B, 1000);
	CHECK_OK(XHintLaxity(su_q[A].xq, 10000000, 0, 1)); /* a far-off LAX timer */

	/* 1. CFS with its default 1 ms slice: switching is timer-driven. */
	su_submit(A, 2000);
	su_submit(B, 2000);
	su_wait_ran(A);
	su_wait_ran(B);
	xs_sched_stats s0, s1;
	xs_sched_get_stats(&s0);
	t_host_reset();
	t_sleep_us(1000000);
	t_host host = t_host_get();
	xs_sched_get_stats(&s1);
	print_lateness(&s0, &s1);
	/* About 1000 slice ends in 1 s; at least a tenth. */
	CHECK_TIMED(&host, s1.timer_wakeups - s0.timer_wakeups >= 100,
		    "at least 100 timer wake-ups in "
		    "1 s of 1 ms slices; measured %llu",
		    (unsigned long long)(s1.timer_wakeups - s0.timer_wakeups));
	su_drain(A);
	su_drain(B);

	/* 2. Idle costs nothing: under each policy, after a little work, no pass at all. */
	for (size_t p = 0; p < sizeof(g_policies) / sizeof(g_policies[0]); p++) {
		CHECK_OK(XHintSetScheduler(kSchedulerLocal, g_policies[p]));
		atomic_store(&su_q[A].stop, false);
		atomic_store(&su_q[B].stop, false);
		su_submit(A, 5);
		su_submit(B, 5);
		CHECK_OK(XQueueWaitAll(su_q[A].xq));
		CHECK_OK(XQueueWaitAll(su_q[B].xq));
		/* The pass that sees them idle, and a timer left from the work (at most one
		 * slice, 1 ms for CFS, 5 ms for UP), come within this. */
		t_host_reset();
		t_sleep_us(50000);
		xs_sched_get_stats(&s0);
		t_sleep_us(300000);
		xs_sched_get_stats(&s1);
		t_host host = t_host_get();
		printf("policy %d: %llu passes while idle\n", (int)g_policies[p],
		       (unsigned long long)(s1.passes - s0.passes));
		CHECK_TIMED(&host, s1.passes == s0.passes,
			    "policy %d: no pass in 300 ms idle (from "
			    "50 ms after the work); measured %llu",
			    (int)g_policies[p], (unsigned long long)(s1.passes - s0.passes));
	}

	su_destroy(A);
	su_destroy(B);
	CHECK_OK(XSchedShutdown());
	return t_exit();
}
