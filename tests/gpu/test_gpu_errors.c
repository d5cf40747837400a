/* Errors on real streams: default streams and double wrapping are refused; a level the
 * stream cannot give is refused with kXSchedErrorNotSupported; an invalid launch is
 * reported on that command only and the XQueue stays usable; a callback's error becomes
 * its command's result. */
#include "xt.h"

static XResult failing_callback(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	return kXSchedErrorInvalidValue;
}

static XResult failing_host_fn(void *data)
{
	(void)data;
	return kXSchedErrorNotAllowed;
}

int main(void)
{
	xt_require_gpu();
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	HwQueueHandle h;
	CHECK_RES(XT_QUEUE_CREATE(NULL, (void *)1), kXSchedErrorInvalidValue);
	CHECK_RES(XT_QUEUE_CREATE(&h, NULL), kXSchedErrorInvalidValue);
	CHECK_RES(XT_QUEUE_CREATE(&h, (void *)1), kXSchedErrorInvalidValue); /* legacy */
	CHECK_RES(XT_QUEUE_CREATE(&h, (void *)2), kXSchedErrorInvalidValue); /* per-thread */

	gpuStream_t s = xt_stream();
	HwQueueHandle hwq = xt_hwq(s);
	CHECK_RES(XT_QUEUE_CREATE(&h, (void *)s), kXSchedErrorNotAllowed);

	/* Levels: probed, never Lv3 from the CUDA/HIP backend. */
	int64_t max;
	CHECK_OK(HwQueueGetMaxPreemptLevel(hwq, &max));
	CHECK(max == kPreemptLevelBlock || max == kPreemptLevelDeactivate);
	XQueueHandle xq;
	CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelInterrupt, 0), kXSchedErrorNotSupported);
	if (max < kPreemptLevelDeactivate)
		CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelDeactivate, 0),
			  kXSchedErrorNotSupported);
	CHECK_OK(XQueueCreate(&xq, hwq, max, 0));
	CHECK_RES(XQueueSetPreemptLevel(xq, kPreemptLevelInterrupt), kXSchedErrorNotSupported);
	int64_t level;
	CHECK_OK(XQueueGetPreemptLevel(xq, &level));
	CHECK(level == max);

	/* An invalid launch (2048 threads per block is over every device's limit) fails on
	 * its command; the commands around it run. */
	unsigned *seq = xt_dev(sizeof(unsigned));
	unsigned *log = xt_dev(16 * sizeof(unsigned));
	unsigned idx = 0;
	void *args[] = {&seq, &log, &idx};
	size_t sizes[] = {sizeof(seq), sizeof(log), sizeof(idx)};
	XDim3 one = {1, 1, 1}, huge = {2048, 1, 1};
	HwCommandHandle good1 = xt_count_cmd(seq, log, 0), bad, good2;
	CHECK_OK(HwCommandCreateKernel(&bad, xt_kernel_count(), one, huge, 0, args, sizes, 3));
	good2 = xt_count_cmd(seq, log, 1);
	CHECK_OK(XQueueSubmit(xq, good1));
	CHECK_OK(XQueueSubmit(xq, bad));
	CHECK_OK(XQueueSubmit(xq, good2));
	CHECK_RES(XQueueWait(xq, bad), kXSchedErrorHardware);
	CHECK_OK(XQueueWait(xq, good1));
	CHECK_OK(XQueueWait(xq, good2));
	CHECK_RES(XQueueWaitAll(xq), kXSchedErrorHardware); /* reported once */
	CHECK_OK(XQueueWaitAll(xq));
	XQueueStats st = t_stats(xq);
	CHECK(st.failed == 1);
	/* Too much dynamic shared memory fails the same way. */
	HwCommandHandle bad_shm;
	CHECK_OK(HwCommandCreateKernel(&bad_shm, xt_kernel_count(), one, one, (size_t)1 << 30, args,
				       sizes, 3));
	CHECK_OK(XQueueSubmit(xq, bad_shm));
	CHECK_RES(XQueueWait(xq, bad_shm), kXSchedErrorHardware);
	/* And the queue goes on. */
	for (unsigned i = 2; i < 16; i++)
		xt_submit(xq, xt_count_cmd(seq, log, i));
	CHECK_RES(XQueueWaitAll(xq), kXSchedErrorHardware);
	xt_check_log(seq, log, 16);
	CHECK_OK(HwCommandDestroy(good1));
	CHECK_OK(HwCommandDestroy(good2));
	CHECK_OK(HwCommandDestroy(bad));
	CHECK_OK(HwCommandDestroy(bad_shm));

	/* Errors returned by user code become the command's result. */
	HwCommandHandle cb, hf;
	CHECK_OK(HwCommandCreateCallback(&cb, failing_callback, NULL));
	CHECK_OK(HwCommandCreateHostFunc(&hf, failing_host_fn, NULL));
	CHECK_OK(XQueueSubmit(xq, cb));
	CHECK_OK(XQueueSubmit(xq, hf));
	CHECK_RES(XQueueWait(xq, cb), kXSchedErrorInvalidValue);
	CHECK_RES(XQueueWait(xq, hf), kXSchedErrorNotAllowed);
	CHECK_OK(HwCommandDestroy(cb));
	CHECK_OK(HwCommandDestroy(hf));
	CHECK_RES(XQueueWaitAll(xq), kXSchedErrorInvalidValue);

	/* The HwQueue cannot go while its XQueue lives. */
	CHECK_RES(HwQueueDestroy(hwq), kXSchedErrorNotAllowed);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	/* Unwrapped, the stream can be wrapped again. */
	hwq = xt_hwq(s);
	CHECK_OK(HwQueueDestroy(hwq));
	GPU_CHECK(gpuFree(seq));
	GPU_CHECK(gpuFree(log));
	GPU_CHECK(gpuStreamDestroy(s));
	CHECK_OK(XSchedShutdown());
	printf("ok\n");
	return 0;
}
