/* Kernel sequences on a real stream: every command runs exactly once and in submission
 * order while the XQueue is suspended and resumed (at Lv1 and, where the stream has it,
 * Lv2); kernel arguments are copied at create time (the caller reuses its buffer at
 * once); host functions, callbacks, copies, fills and module kernels keep their place. */
#include <pthread.h>
#include <string.h>

#include "xt.h"

#define N  600
#define NX 4096

static atomic_int g_stop;

/* Suspends and resumes the XQueue until told to stop. */
static void *toggler(void *arg)
{
	XQueueHandle xq = *(XQueueHandle *)arg;
	while (!atomic_load(&g_stop)) {
		CHECK_OK(XQueueSuspend(xq, 0));
		t_sleep_us(300);
		CHECK_OK(XQueueResume(xq, 0));
		t_sleep_us(700);
	}
	return NULL;
}

struct host_probe {
	const unsigned *progress; /* host-mapped, written by the spin kernels */
	unsigned seen;
};

static XResult read_progress(void *data)
{
	struct host_probe *p = data;
	p->seen = xt_read(p->progress);
	return kXSchedSuccess;
}

static XResult callback(HwQueueHandle hwq, void *data)
{
	*(HwQueueHandle *)data = hwq;
	return kXSchedSuccess;
}

static void run_level(gpuStream_t s, HwQueueHandle hwq, int64_t level)
{
	printf("level %lld\n", (long long)level);
	XQueueHandle xq;
	CHECK_OK(XQueueCreate(&xq, hwq, level, 0));
	CHECK_OK(XQueueSetLaunchConfig(xq, 8, 4));

	/* 1. Counter kernels, submitted while another thread suspends and resumes. */
	unsigned *seq = xt_dev(sizeof(unsigned));
	unsigned *log = xt_dev(N * sizeof(unsigned));
	atomic_store(&g_stop, 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, toggler, &xq) == 0);
	for (unsigned i = 0; i < N; i++) {
		xt_submit(xq, xt_count_cmd(seq, log, i));
		if (i % 50 == 0)
			t_sleep_us(500);
	}
	atomic_store(&g_stop, 1);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_OK(XQueueWaitAll(xq));
	xt_check_log(seq, log, N);
	XQueueStats st = t_stats(xq);
	CHECK(st.completed == N && st.failed == 0 && st.suspensions > 0);

	/* 2. An order-dependent sequence of affine kernels, one argument buffer reused and
	 * overwritten right after each create and each submit. */
	float *x = xt_dev(NX * sizeof(float));
	float *hx = NULL;
	void *hx_dev;
	hx = xt_mapped(NX * sizeof(float), &hx_dev);
	for (int i = 0; i < NX; i++)
		hx[i] = 1.0f;
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateMemcpy(&cmd, x, hx, NX * sizeof(float)));
	xt_submit(xq, cmd);
	float a, b;
	int n = NX;
	void *args[] = {&x, &a, &b, &n};
	size_t sizes[] = {sizeof(x), sizeof(a), sizeof(b), sizeof(n)};
	XDim3 grid = {NX / 256, 1, 1}, block = {256, 1, 1};
	double want = 1.0;
	for (int i = 0; i < 60; i++) {
		a = i % 3 == 0 ? 2.0f : 1.0f;
		b = i % 3 == 0 ? 0.0f : 1.0f;
		want = a * want + b;
		CHECK_OK(HwCommandCreateKernel(&cmd, xt_kernel_affine(), grid, block, 0, args,
					       sizes, 4));
		a = -5.0f; /* the command keeps its own copy */
		b = 1e9f;
		CHECK_OK(XQueueSubmit(xq, cmd));
		a = 123.0f;
		CHECK_OK(HwCommandDestroy(cmd));
		if (i == 20)
			CHECK_OK(XQueueSuspend(xq, 0));
		if (i == 40)
			CHECK_OK(XQueueResume(xq, 0));
	}
	CHECK_OK(HwCommandCreateMemcpy(&cmd, hx, x, NX * sizeof(float)));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(XQueueWait(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
	CHECK(want < 16777216.0); /* exact in float */
	for (int i = 0; i < NX; i++) {
		if (hx[i] != (float)want) {
			fprintf(stderr, "x[%d] = %g, expected %g\n", i, hx[i], want);
			exit(1);
		}
	}
	/* A fill, then a copy back behind it. */
	CHECK_OK(HwCommandCreateMemset(&cmd, x, 0, NX * sizeof(float)));
	xt_submit(xq, cmd);
	CHECK_OK(HwCommandCreateMemcpy(&cmd, hx, x, NX * sizeof(float)));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(XQueueWait(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
	for (int i = 0; i < NX; i++)
		CHECK(hx[i] == 0.0f);

	/* 3. Host functions and callbacks keep their place among kernels. */
	void *prog_dev;
	unsigned *prog = xt_mapped(sizeof(unsigned), &prog_dev);
	xt_zero(seq, sizeof(unsigned));
	struct host_probe probes[8];
	HwQueueHandle seen_hwq[8];
	for (unsigned i = 0; i < 8; i++) {
		xt_submit(xq, xt_spin_cmd(200000, 1, seq, log, i, prog_dev));
		probes[i].progress = prog;
		probes[i].seen = 0;
		CHECK_OK(HwCommandCreateHostFunc(&cmd, read_progress, &probes[i]));
		xt_submit(xq, cmd);
		seen_hwq[i] = 0;
		CHECK_OK(HwCommandCreateCallback(&cmd, callback, &seen_hwq[i]));
		xt_submit(xq, cmd);
		if (i == 3)
			CHECK_OK(XQueueSuspend(xq, 0));
	}
	t_sleep_us(5000);
	CHECK_OK(XQueueResume(xq, 0));
	CHECK_OK(XQueueWaitAll(xq));
	for (unsigned i = 0; i < 8; i++) {
		CHECK(probes[i].seen == i + 1);
		CHECK(seen_hwq[i] == hwq);
	}
	xt_check_log(seq, log, 8);

	/* 4. A module kernel (CUDA: the runtime kernel's CUfunction). */
#if defined(XT_CUDA)
	cudaFunction_t fn;
	GPU_CHECK(cudaGetFuncBySymbol(&fn, xt_kernel_count()));
	xt_zero(seq, sizeof(unsigned));
	for (unsigned i = 0; i < 16; i++) {
		void *margs[] = {&seq, &log, &i};
		size_t msizes[] = {sizeof(seq), sizeof(log), sizeof(i)};
		XDim3 one = {1, 1, 1};
		CHECK_OK(
		    HwCommandCreateModuleKernel(&cmd, (void *)fn, one, one, 0, margs, msizes, 3));
		xt_submit(xq, cmd);
	}
	CHECK_OK(XQueueWaitAll(xq));
	xt_check_log(seq, log, 16);
#endif

	CHECK_OK(XQueueDestroy(xq));
	GPU_CHECK(gpuStreamSynchronize(s));
	GPU_CHECK(gpuFree(seq));
	GPU_CHECK(gpuFree(log));
	GPU_CHECK(gpuFree(x));
	GPU_CHECK(gpuFreeHost(hx));
	GPU_CHECK(gpuFreeHost(prog));
}

int main(void)
{
	xt_require_gpu();
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	gpuStream_t s = xt_stream();
	HwQueueHandle hwq = xt_hwq(s);
	int64_t max;
	CHECK_OK(HwQueueGetMaxPreemptLevel(hwq, &max));
	printf("max preemption level %lld\n", (long long)max);
	CHECK(max == kPreemptLevelBlock || max == kPreemptLevelDeactivate);
	for (int64_t level = kPreemptLevelBlock; level <= max; level++)
		run_level(s, hwq, level);
	CHECK_OK(HwQueueDestroy(hwq));
	GPU_CHECK(gpuStreamDestroy(s));
	CHECK_OK(XSchedShutdown());
	printf("ok\n");
	return 0;
}
