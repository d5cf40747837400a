/* Overhead of one XQueue against raw launches on the same stream.
 *
 * (a) tasks of 30 SGEMM 2048 x 2048 (cuBLAS through launch callbacks where the build has
 *     it, else the tiled kernel of tests/gpu/kernels.cu): median time per task, raw and
 *     through an XQueue at Lv1 and Lv2;
 * (b) a stream of short kernels (one block of 256 threads each): time per kernel, raw
 *     and through an XQueue (default window 16/8 and a deep one, 64/16), at Lv1 and Lv2,
 *     with completion events that block (default) or spin (XSCHED_GPU_SYNC=spin), and the
 *     process's CPU time per wall second while it runs;
 * (c) the cost of one submit (create + submit + destroy of a kernel command, and submit
 *     alone) while the XQueue is suspended, so that no launching competes with it;
 * (d) the round trip of one short kernel (launch or submit, then wait for it), raw and
 *     through an XQueue, with blocking and spinning completion events;
 * (e) Lv2 with one gate check per 4 and per 16 commands (XSCHED_GATE_EVERY) on the
 *     short-kernel stream.
 * Prints one line per measurement ("name value unit") and exits 77 without a device.
 * `--quick` runs fewer repetitions. Timing: host monotonic clock around a stream
 * synchronize or XQueueWaitAll, after warm-up; medians of the repetitions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "gpu_compat.h"
#include "xsched.h"

#if defined(XT_CUDA) && defined(XT_HAVE_CUBLAS)
#include <cublas_v2.h>
#define GEMM_IMPL "cuBLAS SGEMM"
#else
#define GEMM_IMPL "tiled SGEMM kernel"
#endif

#define GEMM_N 2048
#define GEMMS_PER_TASK 30

#define OK(expr)                                                                           \
	do {                                                                               \
		XResult r_ = (expr);                                                       \
		if (r_ != kXSchedSuccess) {                                                \
			fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #expr,   \
				(int)r_);                                                  \
			exit(1);                                                           \
		}                                                                          \
	} while (0)
#define GPU(expr)                                                                          \
	do {                                                                               \
		gpuError_t e_ = (expr);                                                    \
		if (e_ != gpuSuccess) {                                                    \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,           \
				gpuGetErrorString(e_));                                    \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + ru.ru_utime.tv_usec +
	       ru.ru_stime.tv_usec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- GEMM ---- */

static float *g_a, *g_b, *g_c;
#if defined(XT_CUDA) && defined(XT_HAVE_CUBLAS)
static cublasHandle_t g_blas;
#endif

static XResult gemm_on(gpuStream_t s)
{
#if defined(XT_CUDA) && defined(XT_HAVE_CUBLAS)
	const float one = 1.0f, zero = 0.0f;
	if (cublasSetStream(g_blas, s) != CUBLAS_STATUS_SUCCESS ||
	    cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one, g_a,
			GEMM_N, g_b, GEMM_N, &zero, g_c, GEMM_N) != CUBLAS_STATUS_SUCCESS)
		return kXSchedErrorHardware;
	return kXSchedSuccess;
#else
	int n = GEMM_N;
	void *args[] = { &n, &g_a, &g_b, &g_c };
	dim3 grid = { GEMM_N / 16, GEMM_N / 16, 1 }, block = { 16, 16, 1 };
	return gpuLaunchKernel(xt_kernel_sgemm(), grid, block, args, 0, s) == gpuSuccess
		       ? kXSchedSuccess
		       : kXSchedErrorHardware;
#endif
}

static XResult gemm_cb(HwQueueHandle hwq, void *data)
{
	(void)data;
	return gemm_on((gpuStream_t)(uintptr_t)hwq);
}

static double task_raw(gpuStream_t s)
{
	double t0 = now_us();
	for (int i = 0; i < GEMMS_PER_TASK; i++)
		OK(gemm_on(s));
	GPU(gpuStreamSynchronize(s));
	return now_us() - t0;
}

static double g_task_cpu; /* CPU time per wall time of the last task_xq run */

static double task_xq(XQueueHandle xq)
{
	double c0 = cpu_us();
	double t0 = now_us();
	for (int i = 0; i < GEMMS_PER_TASK; i++) {
		HwCommandHandle c;
		OK(HwCommandCreateCallback(&c, gemm_cb, NULL));
		OK(XQueueSubmit(xq, c));
		OK(HwCommandDestroy(c));
	}
	OK(XQueueWaitAll(xq));
	double t = now_us() - t0;
	g_task_cpu = (cpu_us() - c0) / t;
	return t;
}

/* ---- short kernels ---- */

static float *g_x;
static int g_xn = 256;

static HwCommandHandle short_cmd(void)
{
	float a = 1.0f, b = 1.0f;
	void *args[] = { &g_x, &a, &b, &g_xn };
	size_t sizes[] = { sizeof(g_x), sizeof(a), sizeof(b), sizeof(g_xn) };
	XDim3 grid = { 1, 1, 1 }, block = { 256, 1, 1 };
	HwCommandHandle c;
	OK(HwCommandCreateKernel(&c, xt_kernel_affine(), grid, block, 0, args, sizes, 4));
	return c;
}

static void short_raw_launch(gpuStream_t s)
{
	float a = 1.0f, b = 1.0f;
	void *args[] = { &g_x, &a, &b, &g_xn };
	dim3 grid = { 1, 1, 1 }, block = { 256, 1, 1 };
	GPU(gpuLaunchKernel(xt_kernel_affine(), grid, block, args, 0, s));
}

struct rate {
	double us_per_kernel, cpu_per_wall;
};

static struct rate shorts_raw(gpuStream_t s, int k)
{
	double c0 = cpu_us(), t0 = now_us();
	for (int i = 0; i < k; i++)
		short_raw_launch(s);
	GPU(gpuStreamSynchronize(s));
	double t = now_us() - t0;
	return (struct rate){ t / k, (cpu_us() - c0) / t };
}

static struct rate shorts_xq(XQueueHandle xq, int k)
{
	double c0 = cpu_us(), t0 = now_us();
	for (int i = 0; i < k; i++) {
		HwCommandHandle c = short_cmd();
		OK(XQueueSubmit(xq, c));
		OK(HwCommandDestroy(c));
	}
	OK(XQueueWaitAll(xq));
	double t = now_us() - t0;
	return (struct rate){ t / k, (cpu_us() - c0) / t };
}

static double roundtrip_raw(gpuStream_t s, int k)
{
	double v[4096];
	for (int i = 0; i < k; i++) {
		double t0 = now_us();
		short_raw_launch(s);
		GPU(gpuStreamSynchronize(s));
		v[i] = now_us() - t0;
	}
	return median(v, k);
}

static double roundtrip_xq(XQueueHandle xq, int k)
{
	double v[4096];
	for (int i = 0; i < k; i++) {
		double t0 = now_us();
		HwCommandHandle c = short_cmd();
		OK(XQueueSubmit(xq, c));
		OK(XQueueWait(xq, c));
		OK(HwCommandDestroy(c));
		v[i] = now_us() - t0;
	}
	return median(v, k);
}

/* ---- driver ---- */

static int g_reps = 15, g_shorts = 20000, g_trips = 2000;

static XQueueHandle make_xq(HwQueueHandle hwq, int64_t level, int64_t thr, int64_t batch)
{
	XQueueHandle xq;
	OK(XQueueCreate(&xq, hwq, level, 0));
	OK(XQueueSetLaunchConfig(xq, thr, batch));
	return xq;
}

static void report_tasks(const char *name, double *v, int n, double raw, double cpu)
{
	double m = median(v, n);
	printf("gemm_task_%s %.3f ms", name, m / 1000);
	if (raw > 0)
		printf(" (%+.2f%% vs raw, cpu %.2f)", (m - raw) / raw * 100, cpu);
	printf("\n");
}

static void shorts_report(XQueueHandle xq, const char *name, double raw_short)
{
	int64_t configs[][2] = { { XSCHED_DEFAULT_THRESHOLD, XSCHED_DEFAULT_BATCH_SIZE },
				 { 64, 16 } };
	for (int c = 0; c < 2; c++) {
		OK(XQueueSetLaunchConfig(xq, configs[c][0], configs[c][1]));
		shorts_xq(xq, g_shorts / 4);
		double r[8];
		struct rate rr = { 0, 0 };
		for (int i = 0; i < 5; i++) {
			rr = shorts_xq(xq, g_shorts);
			r[i] = rr.us_per_kernel;
		}
		double m = median(r, 5);
		printf("short_%s_w%lld/%lld %.3f us/kernel (%+.1f%% vs raw, cpu %.2f)\n", name,
		       (long long)configs[c][0], (long long)configs[c][1], m,
		       (m - raw_short) / raw_short * 100, rr.cpu_per_wall);
	}
}

static double g_raw_short; /* short_raw of the first mode, for the gate-group runs */

static void run_mode(const char *mode, gpuStream_t s, int64_t max_level)
{
	setenv("XSCHED_GPU_SYNC", mode, 1);
	HwQueueHandle hwq;
	OK(XT_QUEUE_CREATE(&hwq, (void *)s));
	double raw_task = 0, raw_short = 0;
	{
		double v[64];
		for (int i = 0; i < 3; i++)
			task_raw(s);
		for (int i = 0; i < g_reps; i++)
			v[i] = task_raw(s);
		raw_task = median(v, g_reps);
		report_tasks("raw", v, g_reps, 0, 0);
		double r[8];
		struct rate rr = { 0, 0 };
		shorts_raw(s, g_shorts / 4);
		for (int i = 0; i < 5; i++) {
			rr = shorts_raw(s, g_shorts);
			r[i] = rr.us_per_kernel;
		}
		raw_short = median(r, 5);
		g_raw_short = raw_short;
		printf("short_raw %.3f us/kernel (cpu %.2f)\n", raw_short, rr.cpu_per_wall);
		roundtrip_raw(s, 100);
		printf("roundtrip_raw %.2f us\n", roundtrip_raw(s, g_trips));
	}
	for (int64_t level = kPreemptLevelBlock; level <= max_level; level++) {
		XQueueHandle xq = make_xq(hwq, level, XSCHED_DEFAULT_THRESHOLD,
					  XSCHED_DEFAULT_BATCH_SIZE);
		double v[64], cpu[64];
		for (int i = 0; i < 3; i++)
			task_xq(xq);
		for (int i = 0; i < g_reps; i++) {
			v[i] = task_xq(xq);
			cpu[i] = g_task_cpu;
		}
		char name[64];
		snprintf(name, sizeof(name), "xq_lv%lld_%s", (long long)level, mode);
		report_tasks(name, v, g_reps, raw_task, median(cpu, g_reps));
		shorts_report(xq, name, raw_short);
		OK(XQueueSetLaunchConfig(xq, XSCHED_DEFAULT_THRESHOLD, XSCHED_DEFAULT_BATCH_SIZE));
		roundtrip_xq(xq, 100);
		printf("roundtrip_%s %.2f us\n", name, roundtrip_xq(xq, g_trips));
		OK(XQueueDestroy(xq));
	}
	OK(HwQueueDestroy(hwq));
}

/* Lv2 on short kernels with a gate check every @k commands. */
static void gate_groups(gpuStream_t s, int k)
{
	char kv[16];
	snprintf(kv, sizeof(kv), "%d", k);
	setenv("XSCHED_GPU_SYNC", "block", 1);
	setenv("XSCHED_GATE_EVERY", kv, 1);
	HwQueueHandle hwq;
	OK(XT_QUEUE_CREATE(&hwq, (void *)s));
	XQueueHandle xq = make_xq(hwq, kPreemptLevelDeactivate, 16, 8);
	char name[64];
	snprintf(name, sizeof(name), "xq_lv2_block_gate%d", k);
	shorts_report(xq, name, g_raw_short);
	OK(XQueueDestroy(xq));
	OK(HwQueueDestroy(hwq));
	unsetenv("XSCHED_GATE_EVERY");
}

static void submit_cost(gpuStream_t s)
{
	HwQueueHandle hwq;
	OK(XT_QUEUE_CREATE(&hwq, (void *)s));
	XQueueHandle xq = make_xq(hwq, kPreemptLevelBlock, 16, 8);
	enum { K = 20000 };
	static HwCommandHandle cmds[K];
	double best_full = 1e30, best_submit = 1e30;
	for (int rep = 0; rep < 5; rep++) {
		OK(XQueueSuspend(xq, 0));
		double t0 = now_us();
		for (int i = 0; i < K; i++) {
			HwCommandHandle c = short_cmd();
			OK(XQueueSubmit(xq, c));
			OK(HwCommandDestroy(c));
		}
		double full = (now_us() - t0) / K;
		for (int i = 0; i < K; i++)
			cmds[i] = short_cmd();
		t0 = now_us();
		for (int i = 0; i < K; i++)
			OK(XQueueSubmit(xq, cmds[i]));
		double sub = (now_us() - t0) / K;
		for (int i = 0; i < K; i++)
			OK(HwCommandDestroy(cmds[i]));
		OK(XQueueResume(xq, 0));
		OK(XQueueWaitAll(xq));
		if (full < best_full)
			best_full = full;
		if (sub < best_submit)
			best_submit = sub;
	}
	printf("submit_create_submit_destroy %.3f us (best of 5 x %d, 4 kernel arguments)\n",
	       best_full, K);
	printf("submit_only %.3f us\n", best_submit);
	OK(XQueueDestroy(xq));
	OK(HwQueueDestroy(hwq));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		g_reps = 3;
		g_shorts = 2000;
		g_trips = 200;
	}
	int ndev = 0;
	if (gpuGetDeviceCount(&ndev) != gpuSuccess || ndev == 0) {
		printf("no %s device: skipped\n", XT_RUNTIME);
		return 77;
	}
	gpuDeviceProp prop;
	GPU(gpuGetDeviceProperties(&prop, 0));
	time_t now = time(NULL);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	printf("device %s, %s, %s, %d repetitions, %d short kernels per run\n", prop.name, date,
	       GEMM_IMPL, g_reps, g_shorts);
	OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));

	size_t bytes = (size_t)GEMM_N * GEMM_N * sizeof(float);
	GPU(gpuMalloc((void **)&g_a, bytes));
	GPU(gpuMalloc((void **)&g_b, bytes));
	GPU(gpuMalloc((void **)&g_c, bytes));
	float *h = malloc(bytes);
	if (!h)
		return 1;
	srand(1);
	for (size_t i = 0; i < (size_t)GEMM_N * GEMM_N; i++)
		h[i] = (float)((double)rand() / RAND_MAX - 0.5);
	GPU(gpuMemcpy(g_a, h, bytes, gpuMemcpyDefault));
	GPU(gpuMemcpy(g_b, h, bytes, gpuMemcpyDefault));
	free(h);
	GPU(gpuMalloc((void **)&g_x, (size_t)g_xn * sizeof(float)));
	GPU(gpuMemset(g_x, 0, (size_t)g_xn * sizeof(float)));
#if defined(XT_CUDA) && defined(XT_HAVE_CUBLAS)
	if (cublasCreate(&g_blas) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "cublasCreate failed\n");
		return 1;
	}
#endif
	gpuStream_t s;
	GPU(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
	HwQueueHandle probe;
	OK(XT_QUEUE_CREATE(&probe, (void *)s));
	int64_t max;
	OK(HwQueueGetMaxPreemptLevel(probe, &max));
	OK(HwQueueDestroy(probe));
	printf("max preemption level %lld\n", (long long)max);

	run_mode("block", s, max);
	run_mode("spin", s, max);
	if (max >= kPreemptLevelDeactivate) {
		gate_groups(s, 4);
		gate_groups(s, 16);
	}
	submit_cost(s);

#if defined(XT_CUDA) && defined(XT_HAVE_CUBLAS)
	cublasDestroy(g_blas);
#endif
	GPU(gpuStreamDestroy(s));
	GPU(gpuFree(g_a));
	GPU(gpuFree(g_b));
	GPU(gpuFree(g_c));
	GPU(gpuFree(g_x));
	OK(XSchedShutdown());
	return 0;
}
