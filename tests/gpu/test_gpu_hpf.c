/* HPF with real kernels: a low-priority XQueue streams spin kernels that fill the GPU;
 * once a high-priority XQueue submits work, the low one is suspended and its progress
 * (a host-mapped counter its kernels advance) stops but for what it already had in flight
 * (Lv1: at most its threshold; Lv2: the kernel running, since its gate stops the rest);
 * the high work finishes well before it would behind the low queue's backlog; then the
 * low queue resumes and every command runs once, in order. */
#include "xt.h"

#define LOW_N         400
#define HIGH_N        20
#define SPIN_NS       1000000ull /* 1 ms per kernel */
#define LOW_THRESHOLD 4

static void run(gpuStream_t sl, gpuStream_t sh, HwQueueHandle hl, HwQueueHandle hh, int64_t level)
{
	XQueueHandle lo, hi;
	CHECK_OK(XQueueCreate(&lo, hl, level, 0));
	CHECK_OK(XQueueCreate(&hi, hh, level, 0));
	CHECK_OK(XHintPriority(lo, 0));
	CHECK_OK(XHintPriority(hi, 10));
	/* Lv1 bounds the low queue's in-flight work by its window; at Lv2 the gate does, so
	 * the window can be deep. */
	CHECK_OK(
	    XQueueSetLaunchConfig(lo, level >= kPreemptLevelDeactivate ? 32 : LOW_THRESHOLD, 2));
	unsigned blocks = xt_sm_count() * 4;
	unsigned *lseq = xt_dev(sizeof(unsigned)), *llog = xt_dev(LOW_N * sizeof(unsigned));
	unsigned *hseq = xt_dev(sizeof(unsigned)), *hlog = xt_dev(HIGH_N * sizeof(unsigned));
	void *lprog_dev, *hprog_dev;
	unsigned *lprog = xt_mapped(sizeof(unsigned), &lprog_dev);
	unsigned *hprog = xt_mapped(sizeof(unsigned), &hprog_dev);

	for (unsigned i = 0; i < LOW_N; i++)
		xt_submit(lo, xt_spin_cmd(SPIN_NS, blocks, lseq, llog, i, lprog_dev));
	int64_t until = t_now_us() + 10000000;
	while (xt_read(lprog) < 20 && t_now_us() < until)
		t_sleep_us(100);
	CHECK(xt_read(lprog) >= 20);

	int64_t t0 = t_now_us();
	unsigned low_at_submit = xt_read(lprog);
	for (unsigned i = 0; i < HIGH_N; i++)
		xt_submit(hi, xt_spin_cmd(SPIN_NS, blocks, hseq, hlog, i, hprog_dev));
	CHECK_OK(XQueueWaitAll(hi));
	int64_t high_us = t_now_us() - t0;
	unsigned low_after = xt_read(lprog);
	XQueueStats lst = t_stats(lo);
	unsigned ran = low_after - low_at_submit;
	printf("Lv%lld: high work of %d x 1 ms took %.1f ms; the low queue ran %u kernels "
	       "meanwhile (%llu suspensions)\n",
	       (long long)level, HIGH_N, high_us / 1000.0, ran,
	       (unsigned long long)lst.suspensions);
	CHECK(lst.suspensions >= 1);
	/* What was in flight may finish: the window at Lv1, the running kernel and the one
	 * past its gate at Lv2. The low backlog (hundreds of ms) does not run. */
	unsigned bound = level >= kPreemptLevelDeactivate ? 3 : LOW_THRESHOLD + 1;
	CHECK(ran <= bound);
	CHECK(high_us < (int64_t)((HIGH_N + bound + 10) * SPIN_NS / 1000));

	CHECK_OK(XQueueWaitAll(lo));
	CHECK(xt_read(lprog) == LOW_N);
	xt_check_log(lseq, llog, LOW_N);
	xt_check_log(hseq, hlog, HIGH_N);
	CHECK_OK(XQueueDestroy(hi));
	CHECK_OK(XQueueDestroy(lo));
	GPU_CHECK(gpuStreamSynchronize(sl));
	GPU_CHECK(gpuStreamSynchronize(sh));
	GPU_CHECK(gpuFree(lseq));
	GPU_CHECK(gpuFree(llog));
	GPU_CHECK(gpuFree(hseq));
	GPU_CHECK(gpuFree(hlog));
	GPU_CHECK(gpuFreeHost(lprog));
	GPU_CHECK(gpuFreeHost(hprog));
}

int main(void)
{
	xt_require_gpu();
	/* HPF suspends lower XQueues only with a co-run budget of 0 (else they co-run within
	 * it): this test checks the suspensions. */
	CHECK_OK(XHintCorunBudget(0));
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	gpuStream_t sl = xt_stream(), sh = xt_stream();
	HwQueueHandle hl = xt_hwq(sl), hh = xt_hwq(sh);
	int64_t max;
	CHECK_OK(HwQueueGetMaxPreemptLevel(hl, &max));
	for (int64_t level = kPreemptLevelBlock; level <= max; level++)
		run(sl, sh, hl, hh, level);
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(HwQueueDestroy(hl));
	GPU_CHECK(gpuStreamDestroy(sh));
	GPU_CHECK(gpuStreamDestroy(sl));
	CHECK_OK(XSchedShutdown());
	printf("ok\n");
	return 0;
}
