/* xsched-bench: the CUDA backend: real GPU work on CUDA streams.
 *
 * - GEMM ops are cublasSgemm calls (FP32, column-major, operands filled with values in
 *   [-1, 1)); each lane owns one cuBLAS handle, bound to its stream. In xsched modes the
 *   op runs inside the launch callback, on the library's launcher thread of that lane's
 *   XQueue, which is then the handle's only user.
 * - SPIN, STAMP and STREAM ops are the benchmark's own kernels (kernels.cu). A lane that
 *   submits kernel commands makes each STREAM op a HwCommandCreateCudaKernel() command of
 *   that kernel (arguments copied at creation) instead of a launch callback.
 * - Streams are non-blocking; with hardware priority they get the device's greatest or
 *   least priority (cudaDeviceGetStreamPriorityRange). The device is set to block on
 *   synchronization, so that 16 waiting application threads and the library's threads
 *   do not spin on the host's cores.
 * - Stamps: the stamp kernel writes %globaltimer into mapped host memory. At start-up
 *   the offset between %globaltimer and CLOCK_MONOTONIC is calibrated: a kernel polls a
 *   mapped flag; the host reads its clock and sets the flag; the kernel reads
 *   %globaltimer as soon as it sees it. The smallest (GPU time - host time) of 32 trials
 *   is the offset, too large by at most one PCIe read of the flag (about 1 us). The
 *   calibration is repeated before each preempt run (the clocks drift apart).
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int xsb_k_spin(void *stream, uint64_t ns, unsigned grid, unsigned block);
int xsb_k_stamp(void *stream, uint64_t *out);
int xsb_k_calib(void *stream, uint32_t *flag, uint64_t *out);
int xsb_k_fill(void *stream, float *p, size_t n, uint32_t seed);
int xsb_k_stream(void *stream, const float *in, float *out, size_t n);
void xsb_k_stream_shape(size_t n, unsigned *grid, unsigned *block, unsigned *n4);
const void *xsb_k_stream_func(void);

#define XSB_CK(call)                                                                               \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "xsched-bench: %s: %s (%s:%d)\n", #call,                   \
				cudaGetErrorString(e_), __FILE__, __LINE__);                       \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

struct xsb__cu_lane {
	cudaStream_t s;
	cublasHandle_t h;
	float *a, *b, *c;
};

static struct {
	int dev;
	unsigned spin_grid, spin_block;
	int prio_least, prio_greatest;
	volatile uint64_t *stamps; /* mapped host memory, XSB_STAMP_SLOTS */
	uint64_t *stamps_dev;
	int64_t offset; /* globaltimer - CLOCK_MONOTONIC, ns */
	double calib_spread_us;
} xsb__cu;

bool xsb_cuda_built(void)
{
	return true;
}

static int xsb__cu_thread_init(void)
{
	XSB_CK(cudaSetDevice(xsb__cu.dev));
	return 0;
}

static int xsb__cu_alloc(float **p, size_t n, cudaStream_t s, uint32_t seed)
{
	*p = NULL;
	if (!n)
		return 0;
	XSB_CK(cudaMalloc((void **)p, n * sizeof(float)));
	XSB_CK((cudaError_t)xsb_k_fill(s, *p, n, seed));
	return 0;
}

static void xsb__cu_lane_free(struct xsb__cu_lane *c)
{
	if (c->s)
		cudaStreamSynchronize(c->s);
	if (c->h)
		cublasDestroy(c->h);
	cudaFree(c->a);
	cudaFree(c->b);
	cudaFree(c->c);
	if (c->s)
		cudaStreamDestroy(c->s);
	free(c);
}

/* The stream priority of hardware priority class @cls: 1 the least, 3 the greatest, 2 the
 * middle of the device's range. */
static int xsb__cu_prio(int cls)
{
	if (cls >= 3)
		return xsb__cu.prio_greatest;
	if (cls == 2)
		return (xsb__cu.prio_least + xsb__cu.prio_greatest) / 2;
	return xsb__cu.prio_least;
}

static int xsb__cu_lane_create(struct xsb_lane *l, const struct xsb_sizes *sz)
{
	struct xsb__cu_lane *c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	l->priv = c;
	cudaError_t e;
	if (l->prio_class)
		e = cudaStreamCreateWithPriority(&c->s, cudaStreamNonBlocking,
						 xsb__cu_prio(l->prio_class));
	else
		e = cudaStreamCreateWithFlags(&c->s, cudaStreamNonBlocking);
	if (e != cudaSuccess) {
		fprintf(stderr, "xsched-bench: stream of lane %d: %s\n", l->id,
			cudaGetErrorString(e));
		c->s = NULL;
		goto fail;
	}
	uint32_t seed = 0x9e3779b9u * (uint32_t)(l->id + 1);
	if (xsb__cu_alloc(&c->a, sz->a, c->s, seed) || xsb__cu_alloc(&c->b, sz->b, c->s, ~seed) ||
	    xsb__cu_alloc(&c->c, sz->c, c->s, seed ^ 0x5555u))
		goto fail;
	cublasStatus_t st = cublasCreate(&c->h);
	if (st == CUBLAS_STATUS_SUCCESS)
		st = cublasSetStream(c->h, c->s);
	if (st != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "xsched-bench: cuBLAS handle of lane %d: %s\n", l->id,
			cublasGetStatusString(st));
		goto fail;
	}
	e = cudaStreamSynchronize(c->s);
	if (e != cudaSuccess) {
		fprintf(stderr, "xsched-bench: set-up of lane %d: %s\n", l->id,
			cudaGetErrorString(e));
		goto fail;
	}
	l->stream = c->s;
	return 0;
fail:
	xsb__cu_lane_free(c);
	l->priv = NULL;
	return -1;
}

static void xsb__cu_lane_destroy(struct xsb_lane *l)
{
	if (l->priv)
		xsb__cu_lane_free(l->priv);
	l->priv = NULL;
	l->stream = NULL;
}

static int xsb__cu_op(struct xsb_lane *l, cudaStream_t s, const struct xsb_op *op)
{
	struct xsb__cu_lane *c = l->priv;
	switch (op->kind) {
	case XSB_OP_GEMM: {
		static const float one = 1.0f, zero = 0.0f;
		cublasStatus_t st = cublasSetStream(c->h, s);
		if (st == CUBLAS_STATUS_SUCCESS)
			st = cublasSgemm(c->h, CUBLAS_OP_N, CUBLAS_OP_N, op->m, op->n, op->k, &one,
					 c->a, op->m, c->b, op->k, &zero, c->c, op->m);
		if (st != CUBLAS_STATUS_SUCCESS) {
			fprintf(stderr, "xsched-bench: cublasSgemm %dx%dx%d on lane %d: %s\n",
				op->m, op->n, op->k, l->id, cublasGetStatusString(st));
			return -1;
		}
		return 0;
	}
	case XSB_OP_SPIN:
		XSB_CK((cudaError_t)xsb_k_spin(s, (uint64_t)op->ns, xsb__cu.spin_grid,
					       xsb__cu.spin_block));
		return 0;
	case XSB_OP_STAMP:
		XSB_CK((cudaError_t)xsb_k_stamp(s, &xsb__cu.stamps_dev[op->slot]));
		return 0;
	case XSB_OP_STREAM:
		XSB_CK((cudaError_t)xsb_k_stream(s, c->a, c->c, (size_t)op->n));
		return 0;
	}
	return -1;
}

/* A STREAM op as a kernel command; other ops have none here (they go as callbacks). */
static XResult xsb__cu_kernel_cmd(struct xsb_lane *l, struct xsb_cbslot *slot, HwCommandHandle *cmd)
{
	struct xsb__cu_lane *c = l->priv;
	if (slot->op->kind != XSB_OP_STREAM)
		return kXSchedErrorNotSupported;
	unsigned grid, block, n4;
	xsb_k_stream_shape((size_t)slot->op->n, &grid, &block, &n4);
	const float *in = c->a;
	float *out = c->c;
	void *args[3] = {&in, &out, &n4};
	size_t sizes[3] = {sizeof(in), sizeof(out), sizeof(n4)};
	return HwCommandCreateCudaKernel(cmd, xsb_k_stream_func(), (XDim3){grid, 1, 1},
					 (XDim3){block, 1, 1}, 0, args, sizes, 3);
}

static int xsb__cu_launch(struct xsb_lane *l, const struct xsb_op *op)
{
	return xsb__cu_op(l, l->stream, op);
}

static XResult xsb__cu_launch_cb(struct xsb_lane *l, HwQueueHandle hwq, const struct xsb_op *op,
				 bool last)
{
	(void)last;
	/* A CUDA HwQueue's handle is its stream. */
	return xsb__cu_op(l, (cudaStream_t)(uintptr_t)hwq, op) ? kXSchedErrorHardware
							       : kXSchedSuccess;
}

static int xsb__cu_sync(struct xsb_lane *l)
{
	XSB_CK(cudaStreamSynchronize(l->stream));
	return 0;
}

static XResult xsb__cu_hwq_create(struct xsb_lane *l, HwQueueHandle *hwq)
{
	return CudaQueueCreate(hwq, l->stream);
}

static int64_t xsb__cu_stamp_read(int slot)
{
	atomic_thread_fence(memory_order_acquire);
	uint64_t t = xsb__cu.stamps[slot];
	return t ? (int64_t)t - xsb__cu.offset : -1;
}

static void xsb__cu_stamp_reset(int slot)
{
	xsb__cu.stamps[slot] = 0;
	atomic_thread_fence(memory_order_release);
}

static void xsb__cu_fini(void)
{
	if (xsb__cu.stamps)
		cudaFreeHost((void *)xsb__cu.stamps);
	xsb__cu.stamps = NULL;
}

/* Calibrate the offset of %globaltimer to CLOCK_MONOTONIC (see the top of the file). The
 * preempt scenario calls this again before each run: an offset measured minutes earlier
 * was seen off by about 1 ms on an H200. */
static int xsb__cu_calibrate(void)
{
	cudaStream_t s;
	volatile uint32_t *flag;
	XSB_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	XSB_CK(cudaHostAlloc((void **)&flag, 64, cudaHostAllocMapped));
	uint32_t *flag_dev;
	XSB_CK(cudaHostGetDevicePointer((void **)&flag_dev, (void *)flag, 0));
	int64_t best = INT64_MAX, worst = INT64_MIN;
	for (int i = 0; i < 32; i++) {
		*flag = 0;
		xsb__cu.stamps[0] = 0;
		atomic_thread_fence(memory_order_seq_cst);
		XSB_CK((cudaError_t)xsb_k_calib(s, flag_dev, xsb__cu.stamps_dev));
		xsb_sleep_ns(500000); /* the kernel is polling by now */
		int64_t h = xsb_now_ns();
		*flag = 1;
		atomic_thread_fence(memory_order_seq_cst);
		XSB_CK(cudaStreamSynchronize(s));
		int64_t d = (int64_t)xsb__cu.stamps[0] - h;
		if (d < best)
			best = d;
		if (d > worst)
			worst = d;
	}
	xsb_json_raw("{\"type\":\"calibration\",\"offset_ns\":%lld,\"change_ns\":%lld,"
		     "\"spread_ns\":%lld}",
		     (long long)best, xsb__cu.offset ? (long long)(best - xsb__cu.offset) : 0LL,
		     (long long)(worst - best));
	xsb__cu.offset = best;
	xsb__cu.calib_spread_us = (double)(worst - best) / 1e3;
	xsb__cu.stamps[0] = 0;
	cudaFreeHost((void *)flag);
	XSB_CK(cudaStreamDestroy(s));
	return 0;
}

int xsb_cuda_backend(struct xsb_backend *be, char *why, size_t whylen)
{
	memset(be, 0, sizeof(*be));
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice ||
	    e == cudaErrorStubLibrary || (e == cudaSuccess && n < 1)) {
		snprintf(why, whylen, "no NVIDIA driver/GPU found (cudaGetDeviceCount: %s)",
			 e != cudaSuccess ? cudaGetErrorName(e) : "0 devices");
		return -1;
	}
	if (e != cudaSuccess) {
		snprintf(why, whylen, "no usable CUDA device (cudaGetDeviceCount: %s)",
			 cudaGetErrorString(e));
		return -1;
	}
	xsb__cu.dev = 0;
	/* Before the context exists: block on synchronization instead of spinning. */
	e = cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync | cudaDeviceMapHost);
	if (e != cudaSuccess && e != cudaErrorSetOnActiveProcess) {
		snprintf(why, whylen, "cudaSetDeviceFlags: %s", cudaGetErrorString(e));
		return -1;
	}
	cudaGetLastError();
	struct cudaDeviceProp p;
	if ((e = cudaSetDevice(xsb__cu.dev)) != cudaSuccess ||
	    (e = cudaGetDeviceProperties(&p, xsb__cu.dev)) != cudaSuccess ||
	    (e = cudaDeviceGetStreamPriorityRange(&xsb__cu.prio_least, &xsb__cu.prio_greatest)) !=
		cudaSuccess) {
		snprintf(why, whylen, "CUDA device 0: %s", cudaGetErrorString(e));
		return -1;
	}
	xsb__cu.spin_block = p.maxThreadsPerBlock >= 1024 ? 1024 : (unsigned)p.maxThreadsPerBlock;
	unsigned per_sm = (unsigned)p.maxThreadsPerMultiProcessor / xsb__cu.spin_block;
	xsb__cu.spin_grid = (unsigned)p.multiProcessorCount * (per_sm ? per_sm : 1);

	/* Whether this libxsched can wrap a CUDA stream, and at which level. */
	cudaStream_t ps;
	if ((e = cudaStreamCreateWithFlags(&ps, cudaStreamNonBlocking)) != cudaSuccess) {
		snprintf(why, whylen, "cudaStreamCreate: %s", cudaGetErrorString(e));
		return -1;
	}
	HwQueueHandle probe;
	XResult r = CudaQueueCreate(&probe, ps);
	int64_t level = kPreemptLevelBlock;
	if (r == kXSchedSuccess) {
		HwQueueGetMaxPreemptLevel(probe, &level);
		HwQueueDestroy(probe);
	}
	cudaStreamDestroy(ps);
	if (r != kXSchedSuccess) {
		/* The native modes still run on the GPU; the xsched modes are skipped. */
		level = 0;
		snprintf(be->no_xsched, sizeof(be->no_xsched),
			 "libxsched cannot wrap a CUDA stream here (CudaQueueCreate: %s)",
			 XResultName(r));
	}

	if ((e = cudaHostAlloc((void **)&xsb__cu.stamps, XSB_STAMP_SLOTS * sizeof(uint64_t),
			       cudaHostAllocMapped)) != cudaSuccess ||
	    (e = cudaHostGetDevicePointer((void **)&xsb__cu.stamps_dev, (void *)xsb__cu.stamps,
					  0)) != cudaSuccess) {
		snprintf(why, whylen, "mapped host memory: %s", cudaGetErrorString(e));
		return -1;
	}
	memset((void *)xsb__cu.stamps, 0, XSB_STAMP_SLOTS * sizeof(uint64_t));
	if (xsb__cu_calibrate()) {
		snprintf(why, whylen, "calibration of %%globaltimer failed");
		return -1;
	}
	int drv = 0, rt = 0;
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	be->name = "cuda";
	snprintf(be->device, sizeof(be->device),
		 "%s (%d SMs, %.0f GiB; driver API %d.%d, runtime %d.%d); stream priorities %d "
		 "(least) .. %d (greatest)",
		 p.name, p.multiProcessorCount, (double)p.totalGlobalMem / 1073741824.0, drv / 1000,
		 drv % 1000 / 10, rt / 1000, rt % 1000 / 10, xsb__cu.prio_least,
		 xsb__cu.prio_greatest);
	be->modeled = false;
	be->max_level = (int)level;
	be->thread_init = xsb__cu_thread_init;
	be->lane_create = xsb__cu_lane_create;
	be->lane_destroy = xsb__cu_lane_destroy;
	be->launch = xsb__cu_launch;
	be->launch_cb = xsb__cu_launch_cb;
	be->kernel_cmd = xsb__cu_kernel_cmd;
	be->sync = xsb__cu_sync;
	be->hwq_create = xsb__cu_hwq_create;
	be->stamp_read = xsb__cu_stamp_read;
	be->stamp_reset = xsb__cu_stamp_reset;
	static char method[160];
	snprintf(method, sizeof(method),
		 "%%globaltimer written by the kernel, mapped to the host clock by a calibrated "
		 "offset (spread of 32 calibration trials: %.1f us)",
		 xsb__cu.calib_spread_us);
	be->stamp_method = method;
	be->calibrate = xsb__cu_calibrate;
	be->fini = xsb__cu_fini;
	return 0;
}
