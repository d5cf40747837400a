/* Where the microseconds of a tiny kernel go: a sampling profile of the submitting path.
 *
 * Runs the tiny-kernel stream of overhead.c (one block of 256 threads of xt_affine per
 * kernel, kernel commands created, submitted and destroyed one by one) in four
 * configurations, each on a stream of its own: raw launches ("raw"); an XQueue at the top
 * priority (3, "top"); XQueues at Lv1 and at Lv2 of priority 1 ("lv1", "lv2") below an idle
 * XQueue of priority 2. Each is run twice unprofiled (per-kernel wall and process CPU time
 * printed, with the application thread's CPU time and how often it blocked), then once
 * with a sampler on: a POSIX timer on the process's CPU time
 * (CLOCK_PROCESS_CPUTIME_ID, 25 us asked; the kernel delivers at its tick, about every
 * 4 ms of CPU) sends SIGPROF, whose handler records the thread and a stack of up to 12
 * frames (backtrace(3), primed before the timer starts so that it does not allocate in
 * the handler). Samples land on whichever thread runs: the application's or the
 * library's (xs-progress, xs-launch).
 *
 * Usage: hotpath_profile [--kernels N] [--out FILE]. N (default 1500000) is the profiled
 * run's length per configuration; FILE (default hotpath_samples.txt) gets the mapped
 * objects ("obj <base> <path>") and one line per sample ("s <config> <tid> <pc>..."), which
 * scripts/hotpath_report.py turns into a table per configuration, by function and by
 * category, on a machine that has this binary and the same libc (it runs addr2line).
 * Exits 77 without a device (xt_require_gpu). The sampler's own cost falls on every configuration
 * alike; compare configurations of one run only.
 */
#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "xt.h"

enum { MAX_SAMPLES = 200000, DEPTH = 12, CONFIGS = 4 };

/* The samples: written by the handler (one slot each, claimed atomically), read after the
 * timer is deleted. */
static void *g_stack[MAX_SAMPLES][DEPTH];
static int g_depth[MAX_SAMPLES], g_tid[MAX_SAMPLES], g_cfg_of[MAX_SAMPLES];
static atomic_int g_n;
static atomic_bool g_on;
static atomic_int g_cfg;

static void on_sample(int sig)
{
	(void)sig;
	if (!atomic_load_explicit(&g_on, memory_order_relaxed))
		return;
	int i = atomic_fetch_add_explicit(&g_n, 1, memory_order_relaxed);
	if (i >= MAX_SAMPLES)
		return;
	g_depth[i] = backtrace(g_stack[i], DEPTH);
	g_tid[i] = (int)syscall(SYS_gettid);
	g_cfg_of[i] = atomic_load_explicit(&g_cfg, memory_order_relaxed);
}

/* CPU time of the process (CLOCK_PROCESS_CPUTIME_ID) or the calling thread
 * (CLOCK_THREAD_CPUTIME_ID), us. */
static double cpu_us(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static float *g_x;
static int g_xn = 256;

static void tiny_raw(gpuStream_t s)
{
	float a = 1.0f, b = 1.0f;
	void *args[] = {&g_x, &a, &b, &g_xn};
	dim3 grid = {1, 1, 1}, block = {256, 1, 1};
	GPU_CHECK(gpuLaunchKernel(xt_kernel_affine(), grid, block, args, 0, s));
}

static void tiny_xq(XQueueHandle xq)
{
	float a = 1.0f, b = 1.0f;
	void *args[] = {&g_x, &a, &b, &g_xn};
	size_t sizes[] = {sizeof(g_x), sizeof(a), sizeof(b), sizeof(g_xn)};
	XDim3 grid = {1, 1, 1}, block = {256, 1, 1};
	HwCommandHandle c;
	CHECK_OK(XT_CREATE_KERNEL(&c, xt_kernel_affine(), grid, block, 0, args, sizes, 4));
	CHECK_OK(XQueueSubmit(xq, c));
	CHECK_OK(HwCommandDestroy(c));
}

struct config {
	const char *name;
	int level; /* 0 raw, -1 the highest the stream has */
	int prio;
	gpuStream_t s;
	HwQueueHandle hwq;
	XQueueHandle xq;
};

static struct config g_cfgs[CONFIGS] = {
    {.name = "raw"},
    {.name = "top", .level = -1, .prio = 3},
    {.name = "lv1", .level = 1, .prio = 1},
    {.name = "lv2", .level = 2, .prio = 1},
};

/* The calling thread's voluntary (it blocked) and involuntary context switches. */
static void thread_switches(long *blocked, long *preempted)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	*blocked = ru.ru_nvcsw;
	*preempted = ru.ru_nivcsw;
}

/* @n tiny kernels on @c; prints us per kernel (wall), the process's and the application
 * thread's CPU us per kernel (wall - thread CPU: the time it did not run), and how often
 * per 1000 kernels the application thread blocked (a lock or a condition it slept on)
 * or was preempted. */
static void run(struct config *c, long n, const char *what)
{
	long b0, p0;
	thread_switches(&b0, &p0);
	double tc0 = cpu_us(CLOCK_THREAD_CPUTIME_ID);
	double c0 = cpu_us(CLOCK_PROCESS_CPUTIME_ID), t0 = (double)t_now_us();
	for (long i = 0; i < n; i++) {
		if (c->xq)
			tiny_xq(c->xq);
		else
			tiny_raw(c->s);
	}
	if (c->xq)
		CHECK_OK(XQueueWaitAll(c->xq));
	else
		GPU_CHECK(gpuStreamSynchronize(c->s));
	double t = (double)t_now_us() - t0;
	double cpu = cpu_us(CLOCK_PROCESS_CPUTIME_ID) - c0,
	       tcpu = cpu_us(CLOCK_THREAD_CPUTIME_ID) - tc0;
	long b1, p1;
	thread_switches(&b1, &p1);
	printf("%-4s %-10s %.3f us/kernel, cpu %.3f us/kernel (application thread %.3f; "
	       "blocked %.2f, preempted %.2f times per 1000 kernels)\n",
	       c->name, what, t / n, cpu / n, tcpu / n, 1000.0 * (b1 - b0) / n,
	       1000.0 * (p1 - p0) / n);
}

static int print_object(struct dl_phdr_info *info, size_t size, void *f)
{
	(void)size;
	fprintf(f, "obj %lx %s\n", (unsigned long)info->dlpi_addr,
		info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe");
	return 0;
}

int main(int argc, char **argv)
{
	long n = 1500000;
	const char *out = "hotpath_samples.txt";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--kernels") && i + 1 < argc) {
			n = atol(argv[++i]);
		} else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			out = argv[++i];
		} else {
			fprintf(stderr, "usage: %s [--kernels N] [--out FILE]\n", argv[0]);
			return 2;
		}
	}
	if (n < 1000)
		n = 1000;
	xt_require_gpu();
#if defined(XT_CUDA)
	GPU_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
#else
	GPU_CHECK(hipSetDeviceFlags(hipDeviceScheduleBlockingSync));
#endif
	g_x = xt_dev(256 * sizeof(float));
	void *prime[DEPTH];
	(void)backtrace(prime, DEPTH); /* loads libgcc_s now, not in the handler */

	gpuStream_t idle_s = xt_stream();
	HwQueueHandle idle_hwq = xt_hwq(idle_s);
	XQueueHandle idle_xq;
	int64_t max;
	CHECK_OK(HwQueueGetMaxPreemptLevel(idle_hwq, &max));
	CHECK_OK(XQueueCreate(&idle_xq, idle_hwq, max, 0));
	CHECK_OK(XHintPriority(idle_xq, 2));
	for (int i = 0; i < CONFIGS; i++) {
		struct config *c = &g_cfgs[i];
		c->s = xt_stream();
		if (!c->level || c->level > max)
			continue;
		c->hwq = xt_hwq(c->s);
		CHECK_OK(XQueueCreate(&c->xq, c->hwq, c->level < 0 ? max : c->level, 0));
		CHECK_OK(XHintPriority(c->xq, c->prio));
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sample;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	timer_t timer;
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGPROF;
	if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &timer)) {
		perror("timer_create");
		return 1;
	}
	struct itimerspec every = {{0, 25000}, {0, 25000}};
	timer_settime(timer, 0, &every, NULL);

	for (int i = 0; i < CONFIGS; i++) {
		struct config *c = &g_cfgs[i];
		if (c->level && !c->xq)
			continue;
		run(c, 100000, "warm");
		run(c, 100000, "unprofiled");
		atomic_store(&g_cfg, i);
		atomic_store(&g_on, true);
		run(c, n, "profiled");
		atomic_store(&g_on, false);
	}
	timer_delete(timer);

	FILE *f = fopen(out, "w");
	if (!f) {
		perror(out);
		return 1;
	}
	fprintf(f, "configs");
	for (int i = 0; i < CONFIGS; i++)
		fprintf(f, " %s", g_cfgs[i].name);
	fprintf(f, "\nmain_tid %d\n", (int)syscall(SYS_gettid));
	dl_iterate_phdr(print_object, f);
	int got = atomic_load(&g_n) < MAX_SAMPLES ? atomic_load(&g_n) : MAX_SAMPLES;
	for (int i = 0; i < got; i++) {
		fprintf(f, "s %d %d", g_cfg_of[i], g_tid[i]);
		for (int k = 0; k < g_depth[i]; k++)
			fprintf(f, " %lx", (unsigned long)g_stack[i][k]);
		fprintf(f, "\n");
	}
	fclose(f);
	printf("%d samples in %s\n", got, out);

	for (int i = 0; i < CONFIGS; i++) {
		struct config *c = &g_cfgs[i];
		if (c->xq) {
			CHECK_OK(XQueueDestroy(c->xq));
			CHECK_OK(HwQueueDestroy(c->hwq));
		}
		GPU_CHECK(gpuStreamDestroy(c->s));
	}
	CHECK_OK(XQueueDestroy(idle_xq));
	CHECK_OK(HwQueueDestroy(idle_hwq));
	GPU_CHECK(gpuStreamDestroy(idle_s));
	GPU_CHECK(gpuFree(g_x));
	return 0;
}
