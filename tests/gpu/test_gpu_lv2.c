/* Lv2 on a real stream: with a deep in-flight window, closing the gate stops the stream at
 * a command boundary (the device's progress counter stops moving while commands sit
 * launched behind the gate); reopening resumes in order and every command runs exactly
 * once; host functions and event records behind the gate keep their place; destroying a
 * deactivated XQueue drains it. Skipped (77) where the stream has no Lv2. */
#include "xt.h"

#define N       300
#define SPIN_NS 500000ull /* 0.5 ms per kernel */

static unsigned *g_prog; /* host-mapped progress of the spin kernels */

static bool moved_past(void *arg)
{
	return xt_read(g_prog) > *(unsigned *)arg;
}

/* Wait until progress has not moved for 3 kernel times; return it. */
static unsigned settle(void)
{
	unsigned p = xt_read(g_prog);
	for (;;) {
		t_sleep_us(3 * SPIN_NS / 1000);
		unsigned q = xt_read(g_prog);
		if (q == p)
			return p;
		p = q;
	}
}

struct probe {
	unsigned seen;
};

static XResult read_prog(void *data)
{
	((struct probe *)data)->seen = xt_read(g_prog);
	return kXSchedSuccess;
}

int main(void)
{
	xt_require_gpu();
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	gpuStream_t s = xt_stream();
	HwQueueHandle hwq = xt_hwq(s);
	int64_t max;
	CHECK_OK(HwQueueGetMaxPreemptLevel(hwq, &max));
	if (max < kPreemptLevelDeactivate) {
		printf("this stream has no Lv2 (max level %lld): skipped\n", (long long)max);
		XQueueHandle xq;
		CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelDeactivate, 0),
			  kXSchedErrorNotSupported);
		CHECK_OK(HwQueueDestroy(hwq));
		return XT_SKIP;
	}
	XQueueHandle xq;
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelDeactivate, 0));
	CHECK_RES(XQueueSetPreemptLevel(xq, kPreemptLevelInterrupt), kXSchedErrorNotSupported);
	CHECK_OK(XQueueSetLaunchConfig(xq, 64, 8));

	void *prog_dev;
	g_prog = xt_mapped(sizeof(unsigned), &prog_dev);
	unsigned *seq = xt_dev(sizeof(unsigned)), *log = xt_dev(N * sizeof(unsigned));
	unsigned blocks = xt_sm_count();
	struct probe probes[N / 50];
	HwCommandHandle cmd;
	for (unsigned i = 0; i < N; i++) {
		xt_submit(xq, xt_spin_cmd(SPIN_NS, blocks, seq, log, i, prog_dev));
		if (i % 50 == 49) {
			/* Host function and event record behind the gate, in order. */
			probes[i / 50].seen = 0;
			CHECK_OK(HwCommandCreateHostFunc(&cmd, read_prog, &probes[i / 50]));
			xt_submit(xq, cmd);
			CHECK_OK(HwCommandCreateEventRecord(&cmd));
			xt_submit(xq, cmd);
		}
	}

	double stop_ms_max = 0, resume_us_max = 0;
	for (int cycle = 0; cycle < 4; cycle++) {
		unsigned target = 30 + 60 * (unsigned)cycle;
		int64_t until = t_now_us() + 20000000;
		while (xt_read(g_prog) < target && t_now_us() < until)
			t_sleep_us(50);
		CHECK(xt_read(g_prog) >= target);

		unsigned at = xt_read(g_prog);
		int64_t t0 = t_now_us();
		CHECK_OK(XQueueSuspend(xq, 0));
		unsigned stopped = settle();
		double stop_ms = (t_now_us() - t0) / 1000.0 - 3 * SPIN_NS / 1e6;
		/* The kernel running at the store finishes; maybe one past its check. */
		CHECK(stopped <= at + 2);
		XQueueStats st = t_stats(xq);
		CHECK(st.in_flight > 8); /* commands wait launched behind the gate */
		t_sleep_us(30000);
		CHECK(xt_read(g_prog) == stopped); /* stays stopped */

		int64_t t1 = t_now_us();
		CHECK_OK(XQueueResume(xq, 0));
		while (xt_read(g_prog) == stopped && t_now_us() - t1 < 10000000)
			; /* spin: the poll interval of t_wait_for would hide the latency */
		CHECK(xt_read(g_prog) > stopped);
		double resume_us = (double)(t_now_us() - t1) - SPIN_NS / 1000.0;
		printf("cycle %d: stopped %u kernels after the store (%.2f ms), in flight %llu; "
		       "first kernel after reopening done %.0f us after resume (less one kernel)\n",
		       cycle, stopped - at, stop_ms, (unsigned long long)st.in_flight, resume_us);
		if (stop_ms > stop_ms_max)
			stop_ms_max = stop_ms;
		if (resume_us > resume_us_max)
			resume_us_max = resume_us;
	}
	CHECK_OK(XQueueWaitAll(xq));
	xt_check_log(seq, log, N);
	for (unsigned k = 0; k < N / 50; k++)
		CHECK(probes[k].seen == 50 * (k + 1));
	printf("worst: settled %.2f ms after the store, resumed %.0f us\n", stop_ms_max,
	       resume_us_max);

	/* Destroying a deactivated XQueue drains it with the gate open. */
	xt_zero(seq, sizeof(unsigned));
	*(volatile unsigned *)g_prog = 0;
	for (unsigned i = 0; i < 100; i++)
		xt_submit(xq, xt_spin_cmd(SPIN_NS / 5, blocks, seq, log, i, prog_dev));
	unsigned five = 5;
	CHECK(t_wait_for(moved_past, &five, 10000));
	CHECK_OK(XQueueSuspend(xq, 0));
	settle();
	CHECK(xt_read(g_prog) < 100);
	CHECK_OK(XQueueDestroy(xq));
	CHECK(xt_read(g_prog) == 100);
	xt_check_log(seq, log, 100);

	CHECK_OK(HwQueueDestroy(hwq));
	GPU_CHECK(gpuStreamSynchronize(s));
	GPU_CHECK(gpuFree(seq));
	GPU_CHECK(gpuFree(log));
	GPU_CHECK(gpuFreeHost(g_prog));
	GPU_CHECK(gpuStreamDestroy(s));
	CHECK_OK(XSchedShutdown());
	printf("ok\n");
	return 0;
}
