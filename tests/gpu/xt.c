#include "xt.h"

#include <string.h>

void xt_require_gpu(void)
{
	int n = 0;
	gpuError_t err = gpuGetDeviceCount(&n);
	if (err != gpuSuccess || n == 0) {
		printf("no %s device (%s): skipped\n", XT_RUNTIME,
		       err != gpuSuccess ? gpuGetErrorString(err) : "0 devices");
		exit(XT_SKIP);
	}
	gpuDeviceProp prop;
	GPU_CHECK(gpuGetDeviceProperties(&prop, 0));
	printf("%s device 0: %s\n", XT_RUNTIME, prop.name);
}

gpuStream_t xt_stream(void)
{
	gpuStream_t s;
	GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
	return s;
}

HwQueueHandle xt_hwq(gpuStream_t s)
{
	HwQueueHandle h;
	CHECK_OK(XT_QUEUE_CREATE(&h, (void *)s));
	CHECK(h == (HwQueueHandle)(uintptr_t)s);
	return h;
}

void *xt_mapped(size_t bytes, void **dev)
{
	void *p;
	GPU_CHECK(gpuHostAllocMapped(&p, bytes));
	memset(p, 0, bytes);
	GPU_CHECK(gpuHostGetDevicePointer(dev, p));
	return p;
}

void xt_zero(void *dev, size_t bytes)
{
	GPU_CHECK(gpuMemset(dev, 0, bytes));
	/* cudaMemset/hipMemset run on the legacy default stream, asynchronously to the host
	 * and unordered with the non-blocking streams of the tests: wait for it. */
	GPU_CHECK(gpuStreamSynchronize(0));
}

void *xt_dev(size_t bytes)
{
	void *p;
	GPU_CHECK(gpuMalloc(&p, bytes));
	xt_zero(p, bytes);
	return p;
}

unsigned long long xt_ticks(unsigned long long ns)
{
	return ns / XT_NS_PER_TICK;
}

HwCommandHandle xt_count_cmd(unsigned *seq, unsigned *log, unsigned idx)
{
	void *args[] = {&seq, &log, &idx};
	size_t sizes[] = {sizeof(seq), sizeof(log), sizeof(idx)};
	XDim3 one = {1, 1, 1};
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateKernel(&cmd, xt_kernel_count(), one, one, 0, args, sizes, 3));
	return cmd;
}

HwCommandHandle xt_spin_cmd(unsigned long long ns, unsigned blocks, unsigned *seq, unsigned *log,
			    unsigned idx, unsigned *progress_dev)
{
	unsigned long long ticks = xt_ticks(ns);
	void *args[] = {&ticks, &seq, &log, &idx, &progress_dev};
	size_t sizes[] = {sizeof(ticks), sizeof(seq), sizeof(log), sizeof(idx),
			  sizeof(progress_dev)};
	XDim3 grid = {blocks, 1, 1}, block = {128, 1, 1};
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateKernel(&cmd, xt_kernel_spin(), grid, block, 0, args, sizes, 5));
	return cmd;
}

void xt_submit(XQueueHandle xq, HwCommandHandle cmd)
{
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
}

void xt_check_log(const unsigned *seq_dev, const unsigned *log_dev, unsigned n)
{
	unsigned seq = 0;
	GPU_CHECK(gpuMemcpy(&seq, seq_dev, sizeof(seq), gpuMemcpyDefault));
	if (seq != n) {
		fprintf(stderr, "seq = %u, expected %u (commands lost or run twice)\n", seq, n);
		exit(1);
	}
	unsigned *log = malloc(n * sizeof(*log));
	CHECK(log);
	GPU_CHECK(gpuMemcpy(log, log_dev, n * sizeof(*log), gpuMemcpyDefault));
	for (unsigned i = 0; i < n; i++) {
		if (log[i] != i) {
			fprintf(stderr, "log[%u] = %u: commands ran out of order\n", i, log[i]);
			exit(1);
		}
	}
	free(log);
}

unsigned xt_sm_count(void)
{
	gpuDeviceProp prop;
	GPU_CHECK(gpuGetDeviceProperties(&prop, 0));
	return (unsigned)prop.multiProcessorCount;
}
