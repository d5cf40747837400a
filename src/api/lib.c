/* Process-wide calls: choosing the scheduler, the commitment budget, shutdown. The one
 * file that knows every layer's lifetime. */
#include "core/config.h"
#include "core/log.h"
#include "preempt/engine.h"
#include "sched/policy.h"
#include "sched/sched.h"

XResult XHintSetScheduler(XSchedulerType scheduler, XPolicyType policy)
{
	XS_CHECK(scheduler != kSchedulerGlobal, kXSchedErrorNotSupported, "api",
		 "XHintSetScheduler: the global (cross-process) scheduler is not supported");
	XS_CHECK(scheduler == kSchedulerLocal || scheduler == kSchedulerAppManaged,
		 kXSchedErrorInvalidValue, "api", "XHintSetScheduler: %d is not a scheduler type",
		 (int)scheduler);
	XS_CHECK(scheduler != kSchedulerLocal || xs_policy_valid(policy), kXSchedErrorInvalidValue,
		 "api", "XHintSetScheduler: %d is not a policy (valid: 1..%d, %d..%d)", (int)policy,
		 kPolicyMax - 1, kPolicyFirstInFirstOut, kPolicyExtendedMax - 1);
	return xs_sched_configure(scheduler, policy);
}

XResult XHintCommitBudget(int64_t budget_us)
{
	XS_CHECK(budget_us >= 0 && budget_us <= TIMESLICE_MAX, kXSchedErrorInvalidValue, "api",
		 "XHintCommitBudget: %lld us is outside [0, %d] us", (long long)budget_us,
		 TIMESLICE_MAX);
	xs_engine_set_budget(budget_us * 1000);
	return kXSchedSuccess;
}

XResult XSchedShutdown(void)
{
	xs_sched_shutdown();
	xs_engine_shutdown();
	xs_config_reset();
	return kXSchedSuccess;
}

/* At exit (or dlclose of the shared library) the library's threads are stopped and
 * joined, so that none runs while the process tears down. */
__attribute__((destructor)) static void xs__fini(void)
{
	XSchedShutdown();
}
