/* Overhead of one XQueue against raw launches on the same stream.
 *
 * Configurations, each on a stream of its own: raw launches ("raw"); an XQueue at the
 * HwQueue's highest level with nothing set and the top priority (3), "top": what a
 * latency-critical queue pays with nothing to preempt it; XQueues at Lv1 and at Lv2 of
 * priority 1 ("lv1", "lv2"), below an idle XQueue of priority 2 on another stream, so
 * that the scheduler (local, HPF: the library's default) may suspend and limit them at
 * any time though nothing contends: what a preemptible queue pays. `--app-managed` runs
 * without the scheduler instead (no idle queue; nothing is limited), as before 0.4.
 *
 * (a) tasks of 30 SGEMM 2048 x 2048 (cuBLAS through launch callbacks where the build has
 *     it, else the tiled kernel of tests/gpu/kernels.cu): time per task (and at Lv1 with
 *     a 32/32 window);
 * (b) a stream of tiny kernels (one block of 256 threads each, kernel commands) back to
 *     back: time per kernel (the XQueues of lv1 and lv2 with the library's window 16/8
 *     and a deep one, 64/16; top keeps the defaults), and the process's CPU time per wall
 *     second;
 * (c) a decode step: a chain of 20 kernels of 10 us (one block each) with one wait at
 *     the end, per chain p50 and p99;
 * (d) the round trip of one tiny kernel (launch or submit, then wait for it), p50 and p99;
 *     then the same, the 100 that follow each of ten round trips of a 1 ms kernel;
 * (e) the cost of one submit (create + submit + destroy of a kernel command, and submit
 *     alone) while the XQueue is suspended, so that no launching competes with it.
 * The device blocks on synchronization (cudaDeviceScheduleBlockingSync), so raw waits
 * sleep as the library's waiters are meant to. Prints one line per measurement ("name
 * value unit"), then the targets of issue 23 with MET or MISSED (and a guard on the decode
 * chain's p99), and exits 77 without a device. `--quick` runs fewer repetitions. Timing:
 * host monotonic clock around a stream synchronize or XQueueWait/WaitAll, after warm-up.
 * Each configuration is measured once per round, rounds repeated, so that drifts of the
 * machine fall on all alike; a line gives the median and the quartiles over the rounds,
 * or p50 and p99 over every sample.
 * CPU: the process's CPU time per wall time while it ran.
 */
#include <stdbool.h>
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

#define GEMM_N         2048
#define GEMMS_PER_TASK 30

#define OK(expr)                                                                                   \
	do {                                                                                       \
		XResult r_ = (expr);                                                               \
		if (r_ != kXSchedSuccess) {                                                        \
			fprintf(stderr, "%s:%d: %s returned %s\n", __FILE__, __LINE__, #expr,      \
				XResultName(r_));                                                  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)
#define GPU(expr)                                                                                  \
	do {                                                                                       \
		gpuError_t e_ = (expr);                                                            \
		if (e_ != gpuSuccess) {                                                            \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,              \
				gpuGetErrorString(e_));                                            \
			exit(1);                                                                   \
		}                                                                                  \
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
	    cublasSgemm(g_blas, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_N, GEMM_N, GEMM_N, &one, g_a, GEMM_N,
			g_b, GEMM_N, &zero, g_c, GEMM_N) != CUBLAS_STATUS_SUCCESS)
		return kXSchedErrorHardware;
	return kXSchedSuccess;
#else
	int n = GEMM_N;
	void *args[] = {&n, &g_a, &g_b, &g_c};
	dim3 grid = {GEMM_N / 16, GEMM_N / 16, 1}, block = {16, 16, 1};
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

static double task_xq(XQueueHandle xq)
{
	double t0 = now_us();
	for (int i = 0; i < GEMMS_PER_TASK; i++) {
		HwCommandHandle c;
		OK(HwCommandCreateCallback(&c, gemm_cb, NULL));
		OK(XQueueSubmit(xq, c));
		OK(HwCommandDestroy(c));
	}
	OK(XQueueWaitAll(xq));
	return now_us() - t0;
}

/* ---- short kernels ---- */

static float *g_x;
static int g_xn = 256;

static HwCommandHandle short_cmd(void)
{
	float a = 1.0f, b = 1.0f;
	void *args[] = {&g_x, &a, &b, &g_xn};
	size_t sizes[] = {sizeof(g_x), sizeof(a), sizeof(b), sizeof(g_xn)};
	XDim3 grid = {1, 1, 1}, block = {256, 1, 1};
	HwCommandHandle c;
	OK(XT_CREATE_KERNEL(&c, xt_kernel_affine(), grid, block, 0, args, sizes, 4));
	return c;
}

static void short_raw_launch(gpuStream_t s)
{
	float a = 1.0f, b = 1.0f;
	void *args[] = {&g_x, &a, &b, &g_xn};
	dim3 grid = {1, 1, 1}, block = {256, 1, 1};
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
	return (struct rate){t / k, (cpu_us() - c0) / t};
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
	return (struct rate){t / k, (cpu_us() - c0) / t};
}

static int g_reps = 15, g_shorts = 20000, g_rounds = 7, g_trips = 2000, g_chains = 1000;
static bool g_app_managed;

/* ---- configurations, measured in interleaved rounds so that drifts of the machine
 * (clocks, other load) fall on all of them alike ---- */

enum { MAXV = 4096 };

struct config {
	const char *name;
	int64_t level; /* 0: raw launches on the stream; -1: the HwQueue's highest */
	Priority prio; /* with the scheduler */
	gpuStream_t s;
	HwQueueHandle hwq;
	XQueueHandle xq;
	int tasks_only; /* != 0: only the GEMM tasks, with this threshold and batch size */
	double v[MAXV], cpu[MAXV];
	int n;
};

static struct config g_cfg[] = {
    {.name = "raw", .level = 0},
    {.name = "top", .level = -1, .prio = 3},
    {.name = "lv1", .level = 1, .prio = 1},
    {.name = "lv2", .level = 2, .prio = 1},
    /* Tasks only: a window of 32/32. */
    {.name = "lv1_w32", .level = 1, .prio = 1, .tasks_only = 32},
};
enum { NCFG = sizeof(g_cfg) / sizeof(g_cfg[0]), RAW = 0, TOP = 1, LV1 = 2, LV2 = 3 };

/* The idle XQueue of priority 2 above lv1 and lv2 (with the scheduler only). */
static gpuStream_t g_idle_s;
static HwQueueHandle g_idle_hwq;
static XQueueHandle g_idle_xq;

static void cfg_open(struct config *c, int64_t max_level)
{
	GPU(gpuStreamCreateWithFlags(&c->s, gpuStreamNonBlocking));
	if (!c->level || c->level > max_level)
		return;
	OK(XT_QUEUE_CREATE(&c->hwq, (void *)c->s));
	OK(XQueueCreate(&c->xq, c->hwq, c->level < 0 ? max_level : c->level, 0));
	if (!g_app_managed)
		OK(XHintPriority(c->xq, c->prio));
	if (c->tasks_only)
		OK(XQueueSetLaunchConfig(c->xq, c->tasks_only, c->tasks_only));
}

/* Whether @c keeps the library's launch configuration whatever a measurement sets. */
static bool cfg_defaults(const struct config *c)
{
	return c->level < 0;
}

static void cfg_close(struct config *c)
{
	if (c->xq) {
		OK(XQueueDestroy(c->xq));
		OK(HwQueueDestroy(c->hwq));
	}
	GPU(gpuStreamDestroy(c->s));
}

static bool cfg_live(const struct config *c)
{
	return !c->level || c->xq;
}

/* Live and measured beyond the GEMM tasks. */
static bool cfg_all(const struct config *c)
{
	return cfg_live(c) && !c->tasks_only;
}

static double pct(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	int i = (int)(q * (n - 1) + 0.5);
	return v[i];
}

/* Nearest-rank percentile @q (0..1) of @v. */
static double rank_pct(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	int r = (int)(q * n + 0.999999);
	return v[(r < 1 ? 1 : r > n ? n : r) - 1];
}

/* The sample sets reported as p50 and p99: decode chains, round trips, round trips after
 * a long command. */
enum { CHAIN_PCT, TRIP_PCT, AFTER_PCT, NPCT };

/* What the targets need, per configuration. */
static struct {
	double gemm_ms, tiny_us;
	double pct[NPCT][2]; /* p50 and p99 in us, per kind of sample set */
} g_res[NCFG];

/* Print p50 and p99 of c->v in us against @raw (p50 and p99; none for raw itself), keep
 * them in *p50 and *p99. */
static void report_pcts(const char *what, struct config *c, const double *raw, double *p50,
			double *p99)
{
	*p50 = rank_pct(c->v, c->n, 0.50);
	*p99 = rank_pct(c->v, c->n, 0.99);
	printf("%s_%s p50 %.2f us p99 %.2f us (%d samples)", what, c->name, *p50, *p99, c->n);
	if (raw)
		printf(" %+.2f us / %+.2f us vs raw", *p50 - raw[0], *p99 - raw[1]);
	printf("\n");
}

/* Print median [p25 .. p75] of c->v with @unit and @scale, against @raw (0: none). */
static double report(const char *what, struct config *c, const char *unit, double scale, double raw,
		     bool cpu)
{
	double m = median(c->v, c->n);
	printf("%s_%s %.3f %s [%.3f .. %.3f]", what, c->name, m / scale, unit,
	       pct(c->v, c->n, 0.25) / scale, pct(c->v, c->n, 0.75) / scale);
	if (raw > 0)
		printf(" %+.1f%% vs raw", (m - raw) / raw * 100);
	if (cpu)
		printf(", cpu %.2f", median(c->cpu, c->n));
	printf("\n");
	return m;
}

static void bench_gemm(void)
{
	for (int r = -3; r < g_reps; r++) {
		for (int i = 0; i < NCFG; i++) {
			struct config *c = &g_cfg[i];
			if (!cfg_live(c))
				continue;
			double c0 = cpu_us();
			double t = c->level ? task_xq(c->xq) : task_raw(c->s);
			if (r >= 0) {
				c->v[c->n] = t;
				c->cpu[c->n++] = (cpu_us() - c0) / t;
			}
		}
	}
	double raw = report("gemm_task", &g_cfg[0], "ms", 1000, 0, true);
	g_res[0].gemm_ms = raw / 1000;
	g_cfg[0].n = 0;
	for (int i = 1; i < NCFG; i++) {
		if (g_cfg[i].n)
			g_res[i].gemm_ms =
			    report("gemm_task", &g_cfg[i], "ms", 1000, raw, true) / 1000;
		g_cfg[i].n = 0;
	}
}

static void bench_shorts(int64_t thr, int64_t batch, bool keep)
{
	for (int i = 0; i < NCFG; i++)
		if (g_cfg[i].xq && !g_cfg[i].tasks_only && !cfg_defaults(&g_cfg[i]))
			OK(XQueueSetLaunchConfig(g_cfg[i].xq, thr, batch));
	for (int r = -1; r < g_rounds; r++) {
		for (int i = 0; i < NCFG; i++) {
			struct config *c = &g_cfg[i];
			if (!cfg_all(c))
				continue;
			struct rate rr =
			    c->level ? shorts_xq(c->xq, g_shorts) : shorts_raw(c->s, g_shorts);
			if (r >= 0) {
				c->v[c->n] = rr.us_per_kernel;
				c->cpu[c->n++] = rr.cpu_per_wall;
			}
		}
	}
	char what[64];
	snprintf(what, sizeof(what), "short_w%lld/%lld", (long long)thr, (long long)batch);
	double raw = report(what, &g_cfg[0], "us/kernel", 1, 0, true);
	if (keep)
		g_res[0].tiny_us = raw;
	g_cfg[0].n = 0;
	for (int i = 1; i < NCFG; i++) {
		if (g_cfg[i].n) {
			double m = report(what, &g_cfg[i], "us/kernel", 1, raw, true);
			if (keep)
				g_res[i].tiny_us = m;
		}
		g_cfg[i].n = 0;
	}
}

/* Report the samples in each configuration's v as @what, p50 and p99 against raw's, into
 * g_res[].pct[@kind]; empty every v. */
static void report_set(const char *what, int kind)
{
	double *raw = g_res[RAW].pct[kind];
	report_pcts(what, &g_cfg[RAW], NULL, &raw[0], &raw[1]);
	g_cfg[RAW].n = 0;
	for (int i = 1; i < NCFG; i++) {
		if (g_cfg[i].n)
			report_pcts(what, &g_cfg[i], raw, &g_res[i].pct[kind][0],
				    &g_res[i].pct[kind][1]);
		g_cfg[i].n = 0;
	}
}

/* ---- decode step: a chain of 10 us kernels, one wait at the end ---- */

enum { CHAIN = 20, CHAIN_NS = 10000 };
static unsigned *g_seq;

/* The spin kernel's arguments for @ns of device time (one block). */
static void spin_args(unsigned long long *ticks, void **args, long ns)
{
	static unsigned idx;
	static void *nul;
	*ticks = (unsigned long long)ns / XT_NS_PER_TICK;
	args[0] = ticks;
	args[1] = &g_seq;
	args[2] = &nul;
	args[3] = &idx;
	args[4] = &nul;
}

/* A kernel command of @ns of device time (one block of 256 threads). */
static HwCommandHandle spin_cmd(long ns)
{
	unsigned long long ticks;
	void *args[5];
	spin_args(&ticks, args, ns);
	size_t sizes[5] = {sizeof(ticks), sizeof(g_seq), sizeof(void *), sizeof(unsigned),
			   sizeof(void *)};
	XDim3 grid = {1, 1, 1}, block = {256, 1, 1};
	HwCommandHandle c;
	OK(XT_CREATE_KERNEL(&c, xt_kernel_spin(), grid, block, 0, args, sizes, 5));
	return c;
}

/* The same kernel launched on @s directly. */
static void spin_raw_launch(gpuStream_t s, long ns)
{
	unsigned long long ticks;
	void *args[5];
	spin_args(&ticks, args, ns);
	dim3 grid = {1, 1, 1}, block = {256, 1, 1};
	GPU(gpuLaunchKernel(xt_kernel_spin(), grid, block, args, 0, s));
}

static double chain_raw(gpuStream_t s)
{
	double t0 = now_us();
	for (int i = 0; i < CHAIN; i++)
		spin_raw_launch(s, CHAIN_NS);
	GPU(gpuStreamSynchronize(s));
	return now_us() - t0;
}

static double chain_xq(XQueueHandle xq)
{
	double t0 = now_us();
	HwCommandHandle last = 0;
	for (int i = 0; i < CHAIN; i++) {
		HwCommandHandle c = spin_cmd(CHAIN_NS);
		OK(XQueueSubmit(xq, c));
		if (i + 1 < CHAIN)
			OK(HwCommandDestroy(c));
		else
			last = c;
	}
	OK(XQueueWait(xq, last));
	double t = now_us() - t0;
	OK(HwCommandDestroy(last));
	return t;
}

static void bench_chains(void)
{
	for (int i = 0; i < NCFG; i++)
		if (g_cfg[i].xq && !g_cfg[i].tasks_only && !cfg_defaults(&g_cfg[i]))
			OK(XQueueSetLaunchConfig(g_cfg[i].xq, XSCHED_DEFAULT_THRESHOLD,
						 XSCHED_DEFAULT_BATCH_SIZE));
	int per = g_chains / 10;
	for (int r = -1; r < 10; r++)
		for (int i = 0; i < NCFG; i++) {
			struct config *c = &g_cfg[i];
			if (!cfg_all(c))
				continue;
			for (int k = 0; k < per; k++) {
				double t = c->level ? chain_xq(c->xq) : chain_raw(c->s);
				if (r >= 0 && c->n < MAXV)
					c->v[c->n++] = t;
			}
		}
	char what[64];
	snprintf(what, sizeof(what), "decode_chain%dx%dus", CHAIN, CHAIN_NS / 1000);
	report_set(what, CHAIN_PCT);
}

/* One round trip on @c: a kernel of @spin_ns of device time (0: a tiny kernel) launched
 * or submitted, then waited for; its time in us. */
static double trip(struct config *c, long spin_ns)
{
	double t0 = now_us();
	if (c->level) {
		HwCommandHandle cmd = spin_ns ? spin_cmd(spin_ns) : short_cmd();
		OK(XQueueSubmit(c->xq, cmd));
		OK(XQueueWait(c->xq, cmd));
		OK(HwCommandDestroy(cmd));
	} else {
		if (spin_ns)
			spin_raw_launch(c->s, spin_ns);
		else
			short_raw_launch(c->s);
		GPU(gpuStreamSynchronize(c->s));
	}
	return now_us() - t0;
}

/* The long command (1 ms), and the round trips timed after each: 100 with --quick too, since
 * the first 6-10 were slow while the estimate decayed (H100, doc/RESULTS.md), so fewer would
 * judge the decay alone. */
enum { LONG_NS = 1000000, AFTER_LONG = 100 };

/* (d) round trips of a tiny kernel; then the same after one kernel of LONG_NS (1 ms) on
 * the same stream: a waiter sleeps on the XQueue's estimate of a command's device time,
 * which the long command raised (a waiter that overslept its command made the samples of
 * that estimate long, so that it stayed high: doc/RESULTS.md). */
static void bench_roundtrips(void)
{
	int per = g_trips / 10;
	for (int r = -1; r < 10; r++)
		for (int i = 0; i < NCFG; i++) {
			struct config *c = &g_cfg[i];
			if (!cfg_all(c))
				continue;
			for (int k = 0; k < per; k++) {
				double t = trip(c, 0);
				if (r >= 0 && c->n < MAXV)
					c->v[c->n++] = t;
			}
		}
	report_set("roundtrip", TRIP_PCT);
	for (int r = 0; r < 10; r++)
		for (int i = 0; i < NCFG; i++) {
			struct config *c = &g_cfg[i];
			if (!cfg_all(c))
				continue;
			trip(c, LONG_NS);
			for (int k = 0; k < AFTER_LONG && c->n < MAXV; k++)
				c->v[c->n++] = trip(c, 0);
		}
	report_set("roundtrip_after_1ms", AFTER_PCT);
}

/* ---- targets (issue 23) ---- */

static void verdict(const char *what, const char *cfg, bool ok, const char *fmt, double a, double b)
{
	printf("  %-8s %-14s %-4s ", ok ? "MET" : "MISSED", what, cfg);
	printf(fmt, a, b);
	printf("\n");
}

/* A verdict per XQueue configuration: its percentile @q (0: p50, 1: p99) of sample set
 * @kind <= raw's + @allowed us; @fmt prints the configuration's value and raw's. */
static void pct_verdicts(const char *what, int kind, int q, double allowed, const char *fmt)
{
	for (int i = TOP; i <= LV2; i++) {
		if (!g_cfg[i].xq)
			continue;
		double v = g_res[i].pct[kind][q], raw = g_res[RAW].pct[kind][q];
		verdict(what, g_cfg[i].name, v <= raw + allowed, fmt, v, raw);
	}
}

static void targets(void)
{
	printf("targets%s:\n", g_app_managed ? " (without the scheduler: top is not the top "
					       "priority of anything, judged as the others)"
					     : "");
	for (int i = TOP; i <= LV2; i++) {
		if (!g_cfg[i].xq)
			continue;
		double lim = i == TOP ? 0.5 : 1.0;
		verdict("tiny kernels", g_cfg[i].name, g_res[i].tiny_us <= g_res[RAW].tiny_us + lim,
			"%.2f us/kernel, raw + %.2f allowed", g_res[i].tiny_us, lim);
	}
	pct_verdicts("round trip p50", TRIP_PCT, 0, 0, "%.2f us, raw (blocking sync) %.2f us");
	pct_verdicts("round trip p99", TRIP_PCT, 1, 10, "%.2f us, raw %.2f us + 10 allowed");
	for (int i = TOP; i <= LV2; i++) {
		if (!g_cfg[i].xq)
			continue;
		double over = (g_res[i].gemm_ms / g_res[RAW].gemm_ms - 1) * 100;
		verdict("30 x SGEMM task", g_cfg[i].name, over <= 1.0, "%+.2f%% vs raw (%.3f ms)",
			over, g_res[i].gemm_ms);
	}
	/* Not issue targets: guards. A chain's completion seen a progress-thread pace late (up
	 * to 1 ms) showed in the decode chain first; a waiter's sleep kept the estimate it
	 * slept on raised after a long command (H100, doc/RESULTS.md). */
	pct_verdicts("decode p99", CHAIN_PCT, 1, 100,
		     "%.2f us, raw %.2f us + 100 allowed (a guard)");
	for (int i = TOP; i <= LV2; i++) {
		if (!g_cfg[i].xq)
			continue;
		double after = g_res[i].pct[AFTER_PCT][0], trip = g_res[i].pct[TRIP_PCT][0];
		verdict("trip after 1ms", g_cfg[i].name, after <= trip + 5,
			"p50 %.2f us, its round trip's %.2f us + 5 allowed (a guard)", after, trip);
	}
	printf("decode chain: p50/p99 over raw's:");
	for (int i = TOP; i <= LV2; i++)
		if (g_cfg[i].xq)
			printf(" %s %+.1f/%+.1f us", g_cfg[i].name,
			       g_res[i].pct[CHAIN_PCT][0] - g_res[RAW].pct[CHAIN_PCT][0],
			       g_res[i].pct[CHAIN_PCT][1] - g_res[RAW].pct[CHAIN_PCT][1]);
	printf("\n");
}

static void submit_cost(void)
{
	XQueueHandle xq = g_cfg[LV1].xq;
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
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			g_reps = 3;
			g_shorts = 2000;
			g_rounds = 2;
			g_trips = 200;
			g_chains = 200;
		} else if (!strcmp(argv[i], "--app-managed")) {
			g_app_managed = true;
		} else {
			fprintf(stderr, "usage: %s [--quick] [--app-managed]\n", argv[0]);
			return 2;
		}
	}
	int ndev = 0;
	if (gpuGetDeviceCount(&ndev) != gpuSuccess || ndev == 0) {
		printf("no %s device: skipped\n", XT_RUNTIME);
		return 77;
	}
#if defined(XT_CUDA)
	GPU(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
#else
	GPU(hipSetDeviceFlags(hipDeviceScheduleBlockingSync));
#endif
	gpuDeviceProp prop;
	GPU(gpuGetDeviceProperties(&prop, 0));
	time_t now = time(NULL);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	printf("device %s, %s, %s, %d repetitions, %d short kernels per run\n", prop.name, date,
	       GEMM_IMPL, g_reps, g_shorts);
	if (g_app_managed)
		OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	printf("scheduler: %s; raw waits block (cudaDeviceScheduleBlockingSync)\n",
	       g_app_managed ? "none (--app-managed)"
			     : "local, HPF; top = priority 3, lv1/lv2 = priority 1 under an idle "
			       "XQueue of priority 2");

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
	GPU(gpuMalloc((void **)&g_seq, sizeof(unsigned)));
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
	GPU(gpuStreamDestroy(s));
	printf("max preemption level %lld; each line: median [p25 .. p75]\n", (long long)max);
	for (int i = 0; i < NCFG; i++)
		cfg_open(&g_cfg[i], max);
	if (!g_app_managed) {
		GPU(gpuStreamCreateWithFlags(&g_idle_s, gpuStreamNonBlocking));
		OK(XT_QUEUE_CREATE(&g_idle_hwq, (void *)g_idle_s));
		OK(XQueueCreate(&g_idle_xq, g_idle_hwq, max, 0));
		OK(XHintPriority(g_idle_xq, 2));
	}

	bench_gemm();
	bench_shorts(XSCHED_DEFAULT_THRESHOLD, XSCHED_DEFAULT_BATCH_SIZE, true);
	bench_shorts(64, 16, false);
	bench_chains();
	bench_roundtrips();
	submit_cost();
	targets();

	for (int i = 0; i < NCFG; i++)
		cfg_close(&g_cfg[i]);
	if (g_idle_xq) {
		OK(XQueueDestroy(g_idle_xq));
		OK(HwQueueDestroy(g_idle_hwq));
		GPU(gpuStreamDestroy(g_idle_s));
	}
#if defined(XT_CUDA) && defined(XT_HAVE_CUBLAS)
	cublasDestroy(g_blas);
#endif
	GPU(gpuFree(g_a));
	GPU(gpuFree(g_b));
	GPU(gpuFree(g_c));
	GPU(gpuFree(g_x));
	GPU(gpuFree(g_seq));
	OK(XSchedShutdown());
	return 0;
}
