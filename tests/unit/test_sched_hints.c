/* Policy selection and hints: which XPolicyType values are policies, which are built;
 * XSCHED_POLICY names (case-insensitive, unknown ones fall back to HPF); bad hints are
 * refused and change nothing; hints and policy changes while queues run lose no command
 * and leak no policy state (ASan checks the latter); a queue destroyed while it holds
 * the device under UP or CFS leaves the others running.
 */
#include <stdlib.h>

#include "sched/policy.h"
#include "sched/sched.h"
#include "sched_util.h"

enum { A, B, C, D };

static const XPolicyType g_built[] = {
    kPolicyHighestPriorityFirst,    kPolicyUtilizationPartition,
    kPolicyKEarliestDeadlineFirst,  kPolicyLaxity,
    kPolicyCompletelyFairScheduler, kPolicyFirstInFirstOut,
    kPolicyEarliestDeadlineFirst,   kPolicyMultiLevelFeedbackQueue,
};
#define NBUILT (sizeof(g_built) / sizeof(g_built[0]))

static void values(void)
{
	for (size_t i = 0; i < NBUILT; i++)
		CHECK_OK(XHintSetScheduler(kSchedulerLocal, g_built[i]));
	static const XPolicyType not_built[] = {
	    kPolicyHeterogeneousHighestPriorityFirst,
	    kPolicyCPUHighestPriorityFirst,
	    kPolicyProcessUtilizationPartition,
	    kPolicyStrictProcessUtilizationPartition,
	    kPolicyActiveWindowFirst,
	};
	for (size_t i = 0; i < sizeof(not_built) / sizeof(not_built[0]); i++)
		CHECK_RES(XHintSetScheduler(kSchedulerLocal, not_built[i]),
			  kXSchedErrorNotSupported);
	static const int invalid[] = {-1, 0, kPolicyMax, 50, 99, kPolicyExtendedMax, 1000};
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++)
		CHECK_RES(XHintSetScheduler(kSchedulerLocal, (XPolicyType)invalid[i]),
			  kXSchedErrorInvalidValue);
	/* XSched's values are untouched. */
	CHECK(kPolicyMax == 12 && kPolicyCompletelyFairScheduler == 10);
	CHECK(kPolicyFirstInFirstOut == 100 && kPolicyEarliestDeadlineFirst == 101);
	CHECK(xs_sched_current_policy() == kPolicyMultiLevelFeedbackQueue);
}

static void names(void)
{
	static const struct {
		const char *name;
		XPolicyType type;
	} tab[] = {
	    {"hpf", kPolicyHighestPriorityFirst},    {"Up", kPolicyUtilizationPartition},
	    {"kedf", kPolicyKEarliestDeadlineFirst}, {"LAX", kPolicyLaxity},
	    {"cFs", kPolicyCompletelyFairScheduler}, {"fifo", kPolicyFirstInFirstOut},
	    {"EDF", kPolicyEarliestDeadlineFirst},   {"Mlfq", kPolicyMultiLevelFeedbackQueue},
	};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		const xs_policy_ops *ops = xs_policy_find_name(tab[i].name);
		CHECK(ops && ops->type == tab[i].type);
		CHECK(xs_policy_find(tab[i].type) == ops);
	}
	CHECK(!xs_policy_find_name("RR") && !xs_policy_find_name("AWF") &&
	      !xs_policy_find_name(""));

	/* From the environment, at the first XQueueCreate after a shutdown. */
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]) + 1; i++) {
		bool bogus = i == sizeof(tab) / sizeof(tab[0]);
		CHECK_OK(XSchedShutdown());
		CHECK(setenv("XSCHED_POLICY", bogus ? "round-robin" : tab[i].name, 1) == 0);
		HwQueueHandle h;
		XQueueHandle x;
		CHECK_OK(HostQueueCreate(&h));
		CHECK_OK(XQueueCreate(&x, h, kPreemptLevelBlock, 0));
		CHECK(xs_sched_current_policy() ==
		      (bogus ? kPolicyHighestPriorityFirst : tab[i].type));
		CHECK_OK(XQueueDestroy(x));
		CHECK_OK(HwQueueDestroy(h));
	}
	CHECK(unsetenv("XSCHED_POLICY") == 0);
	/* Application-managed: no policy runs; a local scheduler runs one again. */
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	CHECK(xs_sched_current_policy() == kPolicyUnknown);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyLaxity));
	CHECK(xs_sched_current_policy() == kPolicyLaxity);
}

/* Hint fields of queue @i, as the scheduler holds them. */
static xs_sched_hints snapshot(int i)
{
	xs_obj *obj = xs_handle_get(su_q[i].xq, XS_KIND_XQUEUE);
	CHECK(obj);
	xs_sched_hints h;
	xs_sched_get_hints(xs_xqueue_of(obj), &h);
	xs_obj_unref(obj);
	return h;
}

static void bad_hints(void)
{
	XQueueHandle q = su_q[A].xq;
	CHECK_OK(XHintUtilization(q, 30));
	CHECK_OK(XHintDeadline(q, 5000));
	CHECK_OK(XHintLaxity(q, 7000, 1, 9));
	CHECK_OK(XHintPriority(q, 3));
	CHECK_RES(XHintUtilization(q, -1), kXSchedErrorInvalidValue);
	CHECK_RES(XHintUtilization(q, 101), kXSchedErrorInvalidValue);
	CHECK_RES(XHintDeadline(q, -7), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLaxity(q, -7, 0, 0), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLaxity(q, 10, PRIORITY_NO_EXECUTE, 0), kXSchedErrorInvalidValue);
	CHECK_RES(XHintPriority(q, PRIORITY_MAX + 1), kXSchedErrorInvalidValue);
	CHECK_RES(XHintTimeslice(0), kXSchedErrorInvalidValue);
	CHECK_RES(XHintTimeslice(-5000), kXSchedErrorInvalidValue);
	CHECK_RES(XHintKDeadline(0), kXSchedErrorInvalidValue);
	xs_sched_hints s = snapshot(A);
	CHECK(s.has_util && s.util == 30);
	CHECK(s.has_deadline && s.deadline_us == 5000);
	CHECK(s.has_laxity && s.laxity_us == 7000 && s.lax_prio == 1 && s.crit_prio == 9);
	CHECK(s.prio == 3);
	/* Removing a deadline or laxity. */
	CHECK_OK(XHintDeadline(q, NO_DEADLINE));
	CHECK_OK(XHintLaxity(q, NO_LAXITY, 0, 0));
	s = snapshot(A);
	CHECK(!s.has_deadline && !s.has_laxity);
	/* Handles that are not live XQueues. */
	CHECK_RES(XHintUtilization(0, 10), kXSchedErrorNotFound);
	CHECK_RES(XHintDeadline(su_q[A].hwq, 10), kXSchedErrorNotFound);
	CHECK_RES(XHintLaxity(0x1234, 10, 0, 1), kXSchedErrorNotFound);
	CHECK_RES(XHintPriority(0, 1), kXSchedErrorNotFound);
}

/* Policy and hint changes while four queues run: every command completes. */
static void switching(void)
{
	su_reset_log();
	for (int i = A; i <= D; i++)
		atomic_store(&su_q[i].ran, 0);
	CHECK_OK(XHintTimeslice(2000));
	CHECK_OK(XHintKDeadline(2));
	for (int i = A; i <= D; i++) {
		CHECK_OK(XHintUtilization(su_q[i].xq, 10 + 20 * i));
		CHECK_OK(XHintDeadline(su_q[i].xq, 10000 * (4 - i)));
		CHECK_OK(XHintLaxity(su_q[i].xq, 5000 * i, i, 10 - i));
		CHECK_OK(XHintPriority(su_q[i].xq, i));
		su_submit(i, 150);
	}
	for (int round = 0; round < 3; round++) {
		for (size_t p = 0; p < NBUILT; p++) {
			CHECK_OK(XHintSetScheduler(kSchedulerLocal, g_built[p]));
			CHECK_OK(XHintPriority(su_q[(round + p) % 4].xq, (int)p));
			CHECK_OK(XHintUtilization(su_q[p % 4].xq, (int)(p * 10)));
			t_sleep_us(15000);
		}
	}
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	for (int i = A; i <= D; i++)
		CHECK_OK(XHintPriority(su_q[i].xq, 0));
	for (int i = A; i <= D; i++) {
		CHECK_OK(XQueueWaitAll(su_q[i].xq));
		CHECK(atomic_load(&su_q[i].ran) == 150);
	}
}

/* Under UP and CFS, destroy the queue that holds the device: the others go on. */
static void destroy_current(XPolicyType policy)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, policy));
	CHECK_OK(XHintTimeslice(20000));
	for (int i = A; i <= B; i++) {
		atomic_store(&su_q[i].ran, 0);
		CHECK_OK(XHintPriority(su_q[i].xq, 0));
		CHECK_OK(XHintUtilization(su_q[i].xq, 50));
	}
	su_submit(A, 20);
	su_submit(B, 20);
	su_wait_ran(A);
	su_wait_ran(B);
	/* One of them holds the device; destroying it drains its work first. Then the
	 * other must get its turn back. */
	int victim = su_sched_suspended(A) ? B : A, other = victim == A ? B : A;
	su_destroy(victim);
	CHECK_OK(XQueueWaitAll(su_q[other].xq));
	CHECK(atomic_load(&su_q[other].ran) == 20);
	su_create(victim, 1000);
}

int main(void)
{
	values();
	names();
	for (int i = A; i <= D; i++)
		su_create(i, 500);
	bad_hints();
	switching();
	destroy_current(kPolicyUtilizationPartition);
	destroy_current(kPolicyCompletelyFairScheduler);
	for (int i = A; i <= D; i++)
		su_destroy(i);
	CHECK_OK(XSchedShutdown());
	return 0;
}
