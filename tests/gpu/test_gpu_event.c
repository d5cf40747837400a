/* Event dependencies across XQueues on real streams: the consumer's work after a wait
 * sees the producer's writes before the record, also when the wait was submitted first,
 * when the producer is suspended (Lv1: its record is pending; Lv2: behind its closed
 * gate), and under HPF with the consumer ranked higher. */
#include "xt.h"

#define NB (1 << 20) /* floats in the buffer */

static float *g_buf;  /* device */
static float *g_host; /* host-mapped copy target */
static void *g_host_dev;
static atomic_int g_done;

static XResult mark_done(void *data)
{
	(void)data;
	atomic_store(&g_done, 1);
	return kXSchedSuccess;
}

/* Producer: a long spin, then buf = value (affine a = 0), then the record. */
static HwCommandHandle produce(XQueueHandle p, float value, unsigned long long spin_ns,
			       unsigned *seq, HwCommandHandle rec)
{
	xt_submit(p, xt_spin_cmd(spin_ns, 1, seq, NULL, 0, NULL));
	float a = 0.0f;
	int n = NB;
	void *args[] = {&g_buf, &a, &value, &n};
	size_t sizes[] = {sizeof(g_buf), sizeof(a), sizeof(value), sizeof(n)};
	XDim3 grid = {NB / 256, 1, 1}, block = {256, 1, 1};
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateKernel(&cmd, xt_kernel_affine(), grid, block, 0, args, sizes, 4));
	xt_submit(p, cmd);
	CHECK_OK(XQueueSubmit(p, rec));
	return rec;
}

/* Consumer: the wait, a copy of the buffer to the host, a host function. */
static HwCommandHandle consume(XQueueHandle c, HwCommandHandle rec)
{
	atomic_store(&g_done, 0);
	HwCommandHandle w, cmd;
	CHECK_OK(HwCommandCreateEventWait(&w, rec));
	CHECK_OK(XQueueSubmit(c, w));
	CHECK_OK(HwCommandCreateMemcpy(&cmd, g_host, g_buf, NB * sizeof(float)));
	xt_submit(c, cmd);
	CHECK_OK(HwCommandCreateHostFunc(&cmd, mark_done, NULL));
	xt_submit(c, cmd);
	return w;
}

static void check_host(float value)
{
	for (int i = 0; i < NB; i += 4099)
		CHECK(g_host[i] == value);
	CHECK(g_host[NB - 1] == value);
}

static void finish(XQueueHandle p, XQueueHandle c, HwCommandHandle w, HwCommandHandle rec,
		   float value)
{
	CHECK_OK(XQueueWait(c, w));
	CHECK_OK(XQueueWaitAll(c));
	CHECK_OK(XQueueWaitAll(p));
	CHECK(atomic_load(&g_done) == 1);
	check_host(value);
	CHECK_OK(HwCommandDestroy(w));
	CHECK_OK(HwCommandDestroy(rec));
}

int main(void)
{
	xt_require_gpu();
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	gpuStream_t sp = xt_stream(), sc = xt_stream();
	HwQueueHandle hp = xt_hwq(sp), hc = xt_hwq(sc);
	int64_t max;
	CHECK_OK(HwQueueGetMaxPreemptLevel(hp, &max));
	XQueueHandle p, c;
	CHECK_OK(XQueueCreate(&p, hp, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&c, hc, kPreemptLevelBlock, 0));
	g_buf = xt_dev(NB * sizeof(float));
	g_host = xt_mapped(NB * sizeof(float), &g_host_dev);
	unsigned *seq = xt_dev(sizeof(unsigned));
	float value = 1.0f;
	HwCommandHandle rec, w;

	/* Record first, then the wait: the copy must see the producer's value, although the
	 * producer spins 30 ms first and the consumer's stream is idle. */
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	produce(p, value, 30000000, seq, rec);
	w = consume(c, rec);
	finish(p, c, w, rec, value);
	printf("record then wait: ok\n");

	/* The wait first, before the record is even submitted: the consumer blocks. */
	value = 2.0f;
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	uint64_t launched = t_stats(c).launched;
	w = consume(c, rec);
	t_sleep_us(20000);
	CHECK(t_stats(c).launched == launched);
	CHECK(atomic_load(&g_done) == 0);
	produce(p, value, 10000000, seq, rec);
	finish(p, c, w, rec, value);
	printf("wait then record: ok\n");

	/* A suspended producer (Lv1): its record stays pending, so the wait is not launched
	 * and the consumer does not run past it until the producer is resumed. */
	value = 3.0f;
	CHECK_OK(XQueueSuspend(p, 0));
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	produce(p, value, 1000000, seq, rec);
	launched = t_stats(c).launched;
	w = consume(c, rec);
	t_sleep_us(50000);
	CHECK(t_stats(c).launched == launched);
	CHECK(atomic_load(&g_done) == 0);
	CHECK_OK(XQueueResume(p, 0));
	finish(p, c, w, rec, value);
	printf("suspended producer (Lv1): ok\n");

	/* Lv2: the producer is suspended while its long spin runs, so the fill and the record
	 * sit launched behind its closed gate. The wait must not be launched behind them:
	 * the consumer stays blocked, not ready, until the producer resumes. */
	if (max >= kPreemptLevelDeactivate) {
		CHECK_OK(XQueueSetPreemptLevel(p, kPreemptLevelDeactivate));
		value = 4.0f;
		CHECK_OK(HwCommandCreateEventRecord(&rec));
		produce(p, value, 40000000, seq, rec);
		t_sleep_us(10000); /* the spin has passed its gate and runs */
		CHECK_OK(XQueueSuspend(p, 0));
		launched = t_stats(c).launched;
		w = consume(c, rec);
		t_sleep_us(100000); /* the spin is over; the fill waits at the gate */
		CHECK(t_stats(c).launched == launched);
		CHECK(atomic_load(&g_done) == 0);
		CHECK_OK(XQueueResume(p, 0));
		finish(p, c, w, rec, value);
		printf("suspended producer (Lv2): ok\n");
	}

	/* HPF, the consumer ranked higher: while it waits it is not ready, so the producer
	 * runs; no deadlock at either level. */
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	CHECK_OK(XHintPriority(c, 10));
	CHECK_OK(XHintPriority(p, 0));
	for (int64_t lv = kPreemptLevelBlock; lv <= max; lv++) {
		CHECK_OK(XQueueSetPreemptLevel(p, lv));
		CHECK_OK(XQueueSetPreemptLevel(c, lv));
		value = 10.0f + (float)lv;
		CHECK_OK(HwCommandCreateEventRecord(&rec));
		w = consume(c, rec);
		produce(p, value, 5000000, seq, rec);
		finish(p, c, w, rec, value);
		value += 10.0f;
		CHECK_OK(HwCommandCreateEventRecord(&rec));
		produce(p, value, 5000000, seq, rec);
		w = consume(c, rec);
		finish(p, c, w, rec, value);
		printf("HPF at Lv%lld: ok\n", (long long)lv);
	}

	CHECK_OK(XQueueDestroy(c));
	CHECK_OK(XQueueDestroy(p));
	CHECK_OK(HwQueueDestroy(hc));
	CHECK_OK(HwQueueDestroy(hp));
	GPU_CHECK(gpuStreamSynchronize(sp));
	GPU_CHECK(gpuStreamSynchronize(sc));
	GPU_CHECK(gpuFree(g_buf));
	GPU_CHECK(gpuFree(seq));
	GPU_CHECK(gpuFreeHost(g_host));
	GPU_CHECK(gpuStreamDestroy(sc));
	GPU_CHECK(gpuStreamDestroy(sp));
	CHECK_OK(XSchedShutdown());
	printf("ok\n");
	return 0;
}
