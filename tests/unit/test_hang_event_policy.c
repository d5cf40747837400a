/* A queue blocked on an event runs once the event is recorded, under every policy, while
 * another queue stays busy.
 *
 * A keeps 400 commands of 1 ms queued (window 1); P runs a 20 ms host function, then
 * records an event; B waits for the event, then runs one command. The record sits behind
 * P's host function, so B is blocked until it completes. B's dependency used to be looked
 * at only once B could launch: under a policy that suspends queues that are not ready
 * (CFS, UP, FIFO, EDF, k-EDF) B stayed blocked, hence not ready, hence suspended, until A
 * drained (1.7 s for 1500 commands). Checked: B's command completes while A still has
 * most of its work ahead (fewer than 300 of 400 done). */
#include "check.h"

static XResult ms(void *d)
{
	(void)d;
	t_sleep_us(1000);
	return kXSchedSuccess;
}

static XResult p_fn(void *d)
{
	(void)d;
	t_sleep_us(20000);
	return kXSchedSuccess;
}

static void run(XPolicyType policy, const char *name)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, policy));
	HwQueueHandle ha, hp, hb;
	XQueueHandle a, p, b;
	CHECK_OK(HostQueueCreate(&ha));
	CHECK_OK(HostQueueCreate(&hp));
	CHECK_OK(HostQueueCreate(&hb));
	CHECK_OK(XQueueCreate(&a, ha, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&p, hp, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&b, hb, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueSetLaunchConfig(a, 1, 1));
	for (int i = 0; i < 400; i++)
		t_submit_fn(a, ms, NULL);
	t_sleep_us(5000);
	t_submit_fn(p, p_fn, NULL);
	HwCommandHandle rec, w;
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	CHECK_OK(XQueueSubmit(p, rec));
	CHECK_OK(HwCommandCreateEventWait(&w, rec));
	CHECK_OK(XQueueSubmit(b, w));
	t_submit_fn(b, ms, NULL);
	CHECK_OK(XQueueWaitAll(b));
	uint64_t a_done = t_stats(a).completed;
	printf("%s: B ran when A had completed %llu of 400\n", name, (unsigned long long)a_done);
	CHECKF(a_done < 300,
	       "%s: B's command completes while A has fewer than 300 of its 400 "
	       "done; measured %llu",
	       name, (unsigned long long)a_done);
	CHECK_OK(XQueueWaitAll(a));
	CHECK_OK(XQueueWaitAll(p));
	CHECK_OK(HwCommandDestroy(rec));
	CHECK_OK(HwCommandDestroy(w));
	CHECK_OK(XQueueDestroy(a));
	CHECK_OK(XQueueDestroy(p));
	CHECK_OK(XQueueDestroy(b));
	CHECK_OK(HwQueueDestroy(ha));
	CHECK_OK(HwQueueDestroy(hp));
	CHECK_OK(HwQueueDestroy(hb));
}

int main(void)
{
	run(kPolicyCompletelyFairScheduler, "CFS");
	run(kPolicyUtilizationPartition, "UP");
	run(kPolicyFirstInFirstOut, "FIFO");
	run(kPolicyEarliestDeadlineFirst, "EDF");
	run(kPolicyKEarliestDeadlineFirst, "k-EDF");
	run(kPolicyHighestPriorityFirst, "HPF");
	run(kPolicyLaxity, "LAX");
	CHECK_OK(XSchedShutdown());
	return 0;
}
