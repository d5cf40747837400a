/* partition: UP 75:25 and CFS 6:0 with two cuBLAS SGEMM lanes on one GPU (doc/policies.md,
 * "Measured on a GPU"). Each lane is an application-owned stream whose thread keeps 32 to
 * 64 launch-callback commands queued; share = lane 0's completed GEMMs over both lanes',
 * from XQueueGetStats() over a window after 0.5 s of warm-up; throughput relative to
 * lane 0 alone on a native stream.
 *
 * usage: partition_cuda [window seconds, default 3]. Exits 77 without a CUDA device. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xsched.h"

#define N 2048
#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,                  \
				cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define CB(x)                                                                                      \
	do {                                                                                       \
		cublasStatus_t s_ = (x);                                                           \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
			fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)s_);        \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define CX(x)                                                                                      \
	do {                                                                                       \
		XResult r_ = (x);                                                                  \
		if (r_ != kXSchedSuccess) {                                                        \
			fprintf(stderr, "%s:%d %s: %d\n", __FILE__, __LINE__, #x, (int)r_);        \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

typedef struct lane {
	cudaStream_t s;
	cublasHandle_t h;
	float *a, *b, *c;
	HwQueueHandle hwq;
	XQueueHandle xq;
	atomic_llong done; /* native mode */
	pthread_t t;
	int xsched;
} lane;

static lane L[2];
static atomic_int g_stop;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void gemm(lane *l, cudaStream_t s)
{
	const float one = 1.0f, zero = 0.0f;
	CB(cublasSetStream(l->h, s));
	CB(cublasSgemm(l->h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, l->a, N, l->b, N, &zero, l->c,
		       N));
}

static XResult gemm_cb(HwQueueHandle hwq, void *data)
{
	gemm(data, (cudaStream_t)(uintptr_t)hwq);
	return kXSchedSuccess;
}

static void *lane_main(void *arg)
{
	lane *l = arg;
	CK(cudaSetDevice(0));
	if (!l->xsched) {
		while (!atomic_load(&g_stop)) {
			for (int i = 0; i < 8; i++)
				gemm(l, l->s);
			CK(cudaStreamSynchronize(l->s));
			atomic_fetch_add(&l->done, 8);
		}
		return NULL;
	}
	HwCommandHandle prev[32] = {0}, cur[32];
	while (!atomic_load(&g_stop)) {
		for (int i = 0; i < 32; i++) {
			CX(HwCommandCreateCallback(&cur[i], gemm_cb, l));
			CX(XQueueSubmit(l->xq, cur[i]));
		}
		if (prev[31])
			CX(XQueueWait(l->xq, prev[31]));
		for (int i = 0; i < 32; i++) {
			if (prev[i])
				CX(HwCommandDestroy(prev[i]));
			prev[i] = cur[i];
		}
	}
	CX(XQueueWaitAll(l->xq));
	for (int i = 0; i < 32; i++)
		CX(HwCommandDestroy(prev[i]));
	return NULL;
}

static long long count(lane *l)
{
	if (!l->xsched)
		return atomic_load(&l->done);
	XQueueStats st;
	CX(XQueueGetStats(l->xq, &st));
	return (long long)st.completed;
}

/* policy 0 = native. Returns nothing; prints one line. */
static void run(const char *label, int nlanes, XPolicyType policy, int level, int thr, int batch,
		Timeslice ts, int u0, int u1, int p0, int p1, double secs, double *ref_rate)
{
	atomic_store(&g_stop, 0);
	if (policy) {
		CX(XHintSetScheduler(kSchedulerLocal, policy));
		CX(XHintTimeslice(ts));
	}
	for (int i = 0; i < nlanes; i++) {
		lane *l = &L[i];
		l->xsched = policy != 0;
		atomic_store(&l->done, 0);
		if (l->xsched) {
			CX(CudaQueueCreate(&l->hwq, l->s));
			int64_t max;
			CX(HwQueueGetMaxPreemptLevel(l->hwq, &max));
			if (level > max) {
				printf("%s: level %d not supported (max %lld)\n", label, level,
				       (long long)max);
				exit(1);
			}
			CX(XQueueCreate(&l->xq, l->hwq, level, 0));
			CX(XQueueSetLaunchConfig(l->xq, thr, batch));
			CX(XHintUtilization(l->xq, i ? u1 : u0));
			CX(XHintPriority(l->xq, i ? p1 : p0));
		}
		if (pthread_create(&l->t, NULL, lane_main, l)) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	struct timespec w = {0, 500000000};
	nanosleep(&w, NULL);
	long long c0[2] = {0}, c1[2] = {0};
	double t0 = now_s();
	for (int i = 0; i < nlanes; i++)
		c0[i] = count(&L[i]);
	struct timespec d = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
	nanosleep(&d, NULL);
	double t1 = now_s();
	for (int i = 0; i < nlanes; i++)
		c1[i] = count(&L[i]);
	atomic_store(&g_stop, 1);
	for (int i = 0; i < nlanes; i++) {
		pthread_join(L[i].t, NULL);
		if (L[i].xsched) {
			CX(XQueueDestroy(L[i].xq));
			CX(HwQueueDestroy(L[i].hwq));
		}
	}
	CK(cudaDeviceSynchronize());
	double n0 = (double)(c1[0] - c0[0]), n1 = (double)(c1[1] - c0[1]);
	double rate = (n0 + n1) / (t1 - t0);
	if (ref_rate && *ref_rate == 0)
		*ref_rate = rate;
	printf("%-34s lane0 %6.0f  lane1 %6.0f  share0 %.3f  total %7.1f GEMM/s (%.3f of alone)\n",
	       label, n0, n1, nlanes > 1 ? n0 / (n0 + n1) : 1.0, rate,
	       ref_rate && *ref_rate ? rate / *ref_rate : 1.0);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("partition: no CUDA device; skipped\n");
		return 77;
	}
	CK(cudaSetDevice(0));
	CK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
	struct cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	printf("device: %s; SGEMM %dx%dx%d per command; window %.1f s after 0.5 s warm-up\n",
	       prop.name, N, N, N, secs);
	for (int i = 0; i < 2; i++) {
		lane *l = &L[i];
		CK(cudaStreamCreateWithFlags(&l->s, cudaStreamNonBlocking));
		CB(cublasCreate(&l->h));
		CK(cudaMalloc((void **)&l->a, sizeof(float) * N * N));
		CK(cudaMalloc((void **)&l->b, sizeof(float) * N * N));
		CK(cudaMalloc((void **)&l->c, sizeof(float) * N * N));
		CK(cudaMemset(l->a, 0, sizeof(float) * N * N));
		CK(cudaMemset(l->b, 0, sizeof(float) * N * N));
	}
	double alone = 0;
	run("native, lane0 alone", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, secs, &alone);
	run("native, two lanes", 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, secs, &alone);
	run("UP 75:25 Lv1 4:2 ts 20 ms", 2, kPolicyUtilizationPartition, 1, 4, 2, 20000, 75, 25, 0,
	    0, secs, &alone);
	run("UP 75:25 Lv1 4:2 ts 5 ms", 2, kPolicyUtilizationPartition, 1, 4, 2, 5000, 75, 25, 0, 0,
	    secs, &alone);
	run("UP 75:25 Lv1 16:8 ts 20 ms", 2, kPolicyUtilizationPartition, 1, 16, 8, 20000, 75, 25,
	    0, 0, secs, &alone);
	run("UP 75:25 Lv2 16:8 ts 20 ms", 2, kPolicyUtilizationPartition, 2, 16, 8, 20000, 75, 25,
	    0, 0, secs, &alone);
	run("UP 75:25 Lv2 16:8 ts 5 ms", 2, kPolicyUtilizationPartition, 2, 16, 8, 5000, 75, 25, 0,
	    0, secs, &alone);
	run("CFS prio 6:0 Lv2 16:8 slice 5 ms", 2, kPolicyCompletelyFairScheduler, 2, 16, 8, 5000,
	    100, 100, 6, 0, secs, &alone);
	run("CFS prio 6:0 Lv1 4:2 slice 5 ms", 2, kPolicyCompletelyFairScheduler, 1, 4, 2, 5000,
	    100, 100, 6, 0, secs, &alone);
	XSchedShutdown();
	return 0;
}
