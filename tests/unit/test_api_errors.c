/* Bad input at the API boundary: each case returns its documented XResult, nothing
 * hangs, nothing already submitted is lost, and no handle leaks. */
#include <string.h>

#include "check.h"
#include "core/object.h"

static XResult fail_fn(void *data)
{
	(void)data;
	return kXSchedErrorInvalidValue;
}

static XResult count_fn(void *data)
{
	atomic_fetch_add((atomic_int *)data, 1);
	return kXSchedSuccess;
}

static XResult cb_fn(HwQueueHandle hwq, void *data)
{
	*(HwQueueHandle *)data = hwq;
	return kXSchedSuccess;
}

int main(void)
{
	size_t base = xs_handle_count();
	HwQueueHandle hwq;
	XQueueHandle xq;
	HwCommandHandle cmd;
	int64_t v;

	/* Null out-pointers and null functions. */
	CHECK_RES(HostQueueCreate(NULL), kXSchedErrorInvalidValue);
	/* A null out-pointer is InvalidValue whether or not the build has the backend. */
	CHECK_RES(CudaQueueCreate(NULL, (void *)0x1000), kXSchedErrorInvalidValue);
	CHECK_RES(HipQueueCreate(NULL, (void *)0x1000), kXSchedErrorInvalidValue);
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_RES(XQueueCreate(NULL, hwq, kPreemptLevelBlock, 0), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateHostFunc(&cmd, NULL, NULL), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateHostFunc(NULL, count_fn, NULL), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateCallback(&cmd, NULL, NULL), kXSchedErrorInvalidValue);
	CHECK_RES(HwQueueGetMaxPreemptLevel(hwq, NULL), kXSchedErrorInvalidValue);

	/* Levels: the host queue supports Lv1 and Lv2, not Lv3; 0 and 4 are not levels. */
	CHECK_OK(HwQueueGetMaxPreemptLevel(hwq, &v));
	CHECK(v == kPreemptLevelDeactivate);
	CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelInterrupt, 0), kXSchedErrorNotSupported);
	CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelUnknown, 0), kXSchedErrorInvalidValue);
	CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelMax, 0), kXSchedErrorInvalidValue);
	CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelBlock, kQueueCreateFlagBlockingSubmit),
		  kXSchedErrorNotSupported);

	/* Null and made-up handles. */
	CHECK_RES(XQueueCreate(&xq, 0, kPreemptLevelBlock, 0), kXSchedErrorNotFound);
	CHECK_RES(XQueueCreate(&xq, 0x1234, kPreemptLevelBlock, 0), kXSchedErrorNotFound);
	CHECK_RES(XQueueSubmit(0, 0), kXSchedErrorNotFound);
	CHECK_RES(XQueueWaitAll(0), kXSchedErrorNotFound);
	CHECK_RES(XQueueSuspend(0, 0), kXSchedErrorNotFound);
	CHECK_RES(XHintPriority(0, 1), kXSchedErrorNotFound);
	CHECK_OK(XQueueDestroy(0));
	CHECK_OK(HwQueueDestroy(0));
	CHECK_OK(HwCommandDestroy(0));
	CHECK_RES(HwCommandDestroy(0x77), kXSchedErrorNotFound);

	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	/* A handle of one kind is not a handle of another. */
	CHECK_RES(XQueueSubmit(hwq, 0), kXSchedErrorNotFound);
	CHECK_RES(HwQueueDestroy(xq), kXSchedErrorNotFound);
	/* One XQueue per HwQueue; a HwQueue in use cannot be destroyed. */
	XQueueHandle xq2;
	CHECK_RES(XQueueCreate(&xq2, hwq, kPreemptLevelBlock, 0), kXSchedErrorNotAllowed);
	CHECK_RES(HwQueueDestroy(hwq), kXSchedErrorNotAllowed);
	CHECK_OK(XQueueGet(&xq2, hwq));
	CHECK(xq2 == xq);

	/* Level changes: unsupported levels are refused and leave the level as it was. */
	CHECK_RES(XQueueSetPreemptLevel(xq, kPreemptLevelInterrupt), kXSchedErrorNotSupported);
	CHECK_RES(XQueueSetPreemptLevel(xq, 0), kXSchedErrorInvalidValue);
	CHECK_OK(XQueueGetPreemptLevel(xq, &v));
	CHECK(v == kPreemptLevelBlock);
	CHECK_OK(XQueueSetPreemptLevel(xq, kPreemptLevelDeactivate));
	CHECK_OK(XQueueGetPreemptLevel(xq, &v));
	CHECK(v == kPreemptLevelDeactivate);
	CHECK_OK(XQueueSetPreemptLevel(xq, kPreemptLevelBlock));

	/* Launch config: threshold below batch size is refused; <= 0 keeps a value. */
	int64_t t, b;
	CHECK_OK(XQueueGetLaunchConfig(xq, &t, &b));
	CHECK(t == XSCHED_DEFAULT_THRESHOLD && b == XSCHED_DEFAULT_BATCH_SIZE);
	CHECK_RES(XQueueSetLaunchConfig(xq, 4, 8), kXSchedErrorInvalidValue);
	CHECK_RES(XQueueSetLaunchConfig(xq, 0, 32), kXSchedErrorInvalidValue);
	CHECK_OK(XQueueGetLaunchConfig(xq, &t, &b));
	CHECK(t == XSCHED_DEFAULT_THRESHOLD && b == XSCHED_DEFAULT_BATCH_SIZE);
	CHECK_OK(XQueueSetLaunchConfig(xq, 0, 4));
	CHECK_OK(XQueueGetLaunchConfig(xq, &t, &b));
	CHECK(t == XSCHED_DEFAULT_THRESHOLD && b == 4);
	CHECK_OK(XQueueSetLaunchConfig(xq, 8, 2));

	/* Flags XSched has but this library does not implement. */
	CHECK_RES(XQueueSuspend(xq, kQueueSuspendFlagWaitAll), kXSchedErrorNotSupported);
	CHECK_RES(XQueueResume(xq, kQueueResumeFlagDropCommands), kXSchedErrorNotSupported);
	CHECK_RES(XQueueQuery(xq, NULL), kXSchedErrorInvalidValue);
	CHECK_RES(XQueueGetStats(xq, NULL), kXSchedErrorInvalidValue);

	/* Priorities out of range; schedulers and policies that do not exist. */
	CHECK_RES(XHintPriority(xq, PRIORITY_MAX + 1), kXSchedErrorInvalidValue);
	CHECK_RES(XHintPriority(xq, PRIORITY_NO_EXECUTE - 1), kXSchedErrorInvalidValue);
	CHECK_OK(XHintPriority(xq, PRIORITY_NO_EXECUTE)); /* valid: see test_engine */
	CHECK_OK(XHintPriority(xq, PRIORITY_DEFAULT));
	CHECK_RES(XHintSetScheduler(kSchedulerGlobal, kPolicyHighestPriorityFirst),
		  kXSchedErrorNotSupported);
	CHECK_RES(XHintSetScheduler((XSchedulerType)42, kPolicyHighestPriorityFirst),
		  kXSchedErrorInvalidValue);
	CHECK_RES(XHintSetScheduler(kSchedulerLocal, (XPolicyType)42), kXSchedErrorInvalidValue);
	CHECK_RES(XHintSetScheduler(kSchedulerLocal, kPolicyUnknown), kXSchedErrorInvalidValue);

	/* A failing command reports its own result and leaves the queue usable. */
	atomic_int count = 0;
	HwCommandHandle bad, good;
	CHECK_OK(HwCommandCreateHostFunc(&bad, fail_fn, NULL));
	CHECK_OK(HwCommandCreateHostFunc(&good, count_fn, &count));
	CHECK_OK(XQueueSubmit(xq, bad));
	CHECK_OK(XQueueSubmit(xq, good));
	CHECK_RES(XQueueWait(xq, bad), kXSchedErrorInvalidValue);
	CHECK_OK(XQueueWait(xq, good));
	CHECK_RES(XQueueWaitAll(xq), kXSchedErrorInvalidValue); /* reports the failure once */
	CHECK_OK(XQueueWaitAll(xq));
	CHECK(t_stats(xq).failed == 1);

	/* A command is submitted once; waiting on another queue's command is refused. */
	CHECK_RES(XQueueSubmit(xq, good), kXSchedErrorNotAllowed);
	HwQueueHandle hwq2;
	CHECK_OK(HostQueueCreate(&hwq2));
	CHECK_OK(XQueueCreate(&xq2, hwq2, kPreemptLevelBlock, 0));
	CHECK_RES(XQueueWait(xq2, good), kXSchedErrorInvalidValue);
	CHECK_RES(XQueueSubmit(xq2, good), kXSchedErrorNotAllowed);
	CHECK_OK(HwCommandDestroy(bad));
	CHECK_OK(HwCommandDestroy(good));
	CHECK_RES(HwCommandDestroy(good), kXSchedErrorNotFound);

	/* A launch callback on a host queue gets the HwQueue handle. */
	HwQueueHandle seen = 0;
	CHECK_OK(HwCommandCreateCallback(&cmd, cb_fn, &seen));
	CHECK_OK(XQueueSubmit(xq2, cmd));
	CHECK_OK(XQueueWait(xq2, cmd));
	CHECK(seen == hwq2);
	CHECK_OK(HwCommandDestroy(cmd));

	/* Destroy with pending commands drains them, even while suspended; afterwards the
	 * handle is dead for every call. */
	CHECK_OK(XQueueSuspend(xq, 0));
	for (int i = 0; i < 10; i++)
		t_submit_fn(xq, count_fn, &count);
	CHECK_OK(HwCommandCreateHostFunc(&cmd, count_fn, &count));
	CHECK_OK(XQueueDestroy(xq));
	CHECK(atomic_load(&count) == 11);
	CHECK_RES(XQueueSubmit(xq, cmd), kXSchedErrorNotFound);
	CHECK_RES(XQueueWaitAll(xq), kXSchedErrorNotFound);
	CHECK_RES(XQueueResume(xq, 0), kXSchedErrorNotFound);
	CHECK_RES(XQueueDestroy(xq), kXSchedErrorNotFound);
	CHECK_RES(XQueueGet(&xq2, hwq), kXSchedErrorNotFound);
	/* The command was never submitted, so another queue may take it. */
	CHECK_OK(XQueueGet(&xq2, hwq2));
	CHECK_OK(XQueueSubmit(xq2, cmd));
	CHECK_OK(XQueueWait(xq2, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
	CHECK(atomic_load(&count) == 12);

	CHECK_OK(XQueueDestroy(xq2));
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_OK(HwQueueDestroy(hwq2));
	CHECK_RES(HwQueueDestroy(hwq), kXSchedErrorNotFound);
	CHECK(xs_handle_count() == base);
	CHECK_OK(XSchedShutdown());
	return 0;
}
