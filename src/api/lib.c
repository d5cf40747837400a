/* Process-wide calls: choosing the scheduler, the commitment budget, shutdown, naming a
 * result. The one file that knows every layer's lifetime. */
#include <pthread.h>

#include "api/api.h"
#include "core/board.h"
#include "core/config.h"
#include "core/log.h"
#include "core/trace.h"
#include "hal/hal.h"
#include "preempt/engine.h"
#include "sched/policy.h"
#include "sched/sched.h"

/* fork(): the child starts from a clean library state. Every process-wide lock is made
 * anew (another thread of the parent may have held it at the fork), the parent's handles,
 * XQueues, HwQueues and devices become unreachable (their threads do not exist in the
 * child; using a handle of theirs fails with kXSchedErrorNotFound and a log line naming
 * the fork), the scheduler starts again at the child's first XQueue, and exit() in the
 * child joins nothing of the parent's. The forking thread lives on in the child: every
 * thread-local of the library is reset for it (which command of which HwQueue it runs,
 * which device it serves, which XQueue it enqueues on, the kernels it resolved), so that a
 * child forked inside a host function or launch callback does not take itself for a thread
 * of the parent's queues. GPU contexts do not survive fork() (CUDA and HIP say so); the
 * host backend does. */
static void xs__atfork_child(void)
{
	xs_hal_forked();
	xs_cuda_forked();
	xs_handles_forked();
	xs_config_forked();
	xs_board_forked();
	xs_host_forked();
	xs_dev_forked();
	xs_engine_forked();
	xs_sched_forked();
	xs_api_hints_forked();
	xs_trace_forked();
}

static pthread_once_t xs__init_once = PTHREAD_ONCE_INIT;

static void xs__init(void)
{
	if (pthread_atfork(NULL, NULL, xs__atfork_child))
		XS_ERROR("api", "pthread_atfork failed: a forked child may inherit held locks");
	const xs_config *c = xs_config_get();
	if (c->trace_path && xs_trace_start(c->trace_path, c->trace_events) == kXSchedSuccess)
		XS_INFO("api", "tracing into %s (XSCHED_TRACE)", c->trace_path);
}

void xs_api_init(void)
{
	pthread_once(&xs__init_once, xs__init);
}

XResult XHintSetScheduler(XSchedulerType scheduler, XPolicyType policy)
{
	xs_api_init();
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
	xs_dev_set_budget(budget_us * 1000);
	return kXSchedSuccess;
}

XResult XHintCorunBudget(int64_t budget_us)
{
	XS_CHECK(budget_us >= 0 && budget_us <= TIMESLICE_MAX, kXSchedErrorInvalidValue, "api",
		 "XHintCorunBudget: %lld us is outside [0, %d] us", (long long)budget_us,
		 TIMESLICE_MAX);
	xs_dev_set_corun(budget_us * 1000);
	return kXSchedSuccess;
}

XResult XHintStrictPriority(int strict)
{
	XS_CHECK(strict == 0 || strict == 1, kXSchedErrorInvalidValue, "api",
		 "XHintStrictPriority: %d is neither 0 nor 1", strict);
	xs_sched_set_strict(strict);
	return kXSchedSuccess;
}

XResult XSchedShutdown(void)
{
	xs_sched_shutdown();
	xs_dev_shutdown();
	xs_trace_stop(); /* writes a running trace; kXSchedErrorNotFound when none runs */
	xs_config_reset();
	return kXSchedSuccess;
}

XResult XSchedTraceStart(const char *path)
{
	xs_api_init();
	return xs_trace_start(path, xs_config_get()->trace_events);
}

XResult XSchedTraceStop(void)
{
	XResult res = xs_trace_stop();
	if (res == kXSchedErrorNotFound)
		XS_FAIL("api", "XSchedTraceStop: no trace runs");
	return res;
}

const char *XResultName(XResult r)
{
	return xs_result_name(r);
}

const char *XResultLastMessage(void)
{
	return xs_log_last_message();
}

/* At exit the library's threads are stopped and joined, so that none runs while the
 * process tears down. (The shared library is linked with -z nodelete: a dlclose leaves it
 * loaded, since threads' exit destructors point into it.) */
__attribute__((destructor)) static void xs__fini(void)
{
	XSchedShutdown();
	xs_engine_exit(); /* also done at exit by the handler of the first Lv3 attach */
}
