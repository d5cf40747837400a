/* CFS: two busy queues of priority 6 and 0 (weights 1024 * 1.2^6 = 3058 and 1024, a
 * ratio of 2.99) share the device about 3:1, measured as command time per queue; a
 * queue that joins later starts at the least virtual runtime, so it gets about its
 * weight's share (1/5 here) instead of running alone until it has caught up (which
 * would take it more than half of the window); a priority change applies while they run.
 *
 * Tolerances: shares within +-0.10 of the ideal over 1 to 2 s of 20 ms slices with 1 ms
 * commands. A switch lets the outgoing queue finish its running command uncharged; on a
 * loaded machine that command's sleep overruns by milliseconds, and with 5 ms slices the
 * bonus was seen to push the 1:3 share to 0.40. 20 ms slices keep it small.
 *
 * Each share is a timing bound: met, it passes; missed, it fails where the host gave the
 * test's threads a CPU when they were ready during its window, and is skipped, saying what
 * was measured and what the host gave, where it did not (check.h, CHECK_TIMED; exit 77 once
 * every other check passed).
 */
#include "sched_util.h"

enum { A, B, C };

#define CMD_US 1000

/* Command time of queues @a and @b over @us: returns @a's share, *@host what the host
 * gave the window. */
static double share_of(int a, int b, int64_t us, t_host *host)
{
	int64_t a0 = su_busy(a), b0 = su_busy(b);
	t_host_reset();
	t_sleep_us(us);
	*host = t_host_get();
	double da = (double)(su_busy(a) - a0), db = (double)(su_busy(b) - b0);
	CHECKF(da + db > 0, "the two queues run commands in the window; measured none");
	return da / (da + db);
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyCompletelyFairScheduler));
	CHECK_OK(XHintTimeslice(20000));
	su_create(A, CMD_US);
	su_create(B, CMD_US);
	su_create(C, CMD_US);
	CHECK_OK(XHintPriority(su_q[A].xq, 6));
	CHECK_OK(XHintPriority(su_q[B].xq, 0));
	CHECK_OK(XHintPriority(su_q[C].xq, 0));

	su_submit(A, 4000);
	su_submit(B, 4000);
	su_wait_ran(A);
	su_wait_ran(B);
	t_sleep_us(100000);

	/* 1. Weighted shares: 2.99 : 1, A's ideal share 0.749. */
	t_host host;
	double s = share_of(A, B, 2000000, &host);
	printf("A (prio 6) vs B (prio 0): A's share %.3f\n", s);
	CHECK_TIMED(&host, s > 0.65 && s < 0.85,
		    "A's share within (0.65, 0.85) (ideal 0.749); "
		    "measured %.3f",
		    s);

	/* 2. C joins: it starts at the least virtual runtime. Ideal shares: A 0.6, B 0.2,
	 * C 0.2. Had it started at 0, it would run alone for a large part of the window first. */
	int64_t a0 = su_busy(A), b0 = su_busy(B), c0 = su_busy(C);
	su_submit(C, 4000);
	t_host_reset();
	t_sleep_us(1000000);
	host = t_host_get();
	double da = (double)(su_busy(A) - a0), db = (double)(su_busy(B) - b0);
	double dc = (double)(su_busy(C) - c0);
	double sc = dc / (da + db + dc);
	printf("C joined: shares A %.3f, B %.3f, C %.3f\n", da / (da + db + dc),
	       db / (da + db + dc), sc);
	CHECK_TIMED(&host, sc > 0.05 && sc < 0.40,
		    "C's share within (0.05, 0.40) (ideal 0.2); "
		    "measured %.3f",
		    sc);
	CHECK_TIMED(&host, da > db && da > dc,
		    "A (priority 6) the largest share; measured A %.0f, "
		    "B %.0f, C %.0f ms",
		    da / 1000, db / 1000, dc / 1000);

	/* 3. Priorities change while they run: A at 0, B at 6 (A's ideal share 0.251). */
	su_drain(C);
	CHECK_OK(XHintPriority(su_q[A].xq, 0));
	CHECK_OK(XHintPriority(su_q[B].xq, 6));
	t_sleep_us(100000);
	s = share_of(A, B, 2000000, &host);
	printf("A (prio 0) vs B (prio 6): A's share %.3f\n", s);
	CHECK_TIMED(&host, s > 0.15 && s < 0.35,
		    "A's share within (0.15, 0.35) (ideal 0.251); "
		    "measured %.3f",
		    s);

	su_drain(A);
	su_drain(B);
	su_destroy(A);
	su_destroy(B);
	su_destroy(C);
	CHECK_OK(XSchedShutdown());
	return t_exit();
}
