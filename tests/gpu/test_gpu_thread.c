/* Streams the library did not see being made: one created by a thread that has exited,
 * wrapped by a second thread that never used the runtime, and submitted to from a third
 * (the main thread) and from several threads at once. Every command runs once, in each
 * submitting thread's order. */
#include <pthread.h>

#include "xt.h"

#define PER_THREAD 200
#define THREADS    4

static gpuStream_t g_stream;
static HwQueueHandle g_hwq;
static XQueueHandle g_xq;
static unsigned *g_seq;
static unsigned *g_logs[THREADS];

static void *make_stream(void *arg)
{
	(void)arg;
	GPU_CHECK(gpuSetDevice(0));
	g_stream = xt_stream();
	return NULL;
}

static void *wrap_stream(void *arg)
{
	(void)arg;
	CHECK_OK(XT_QUEUE_CREATE(&g_hwq, (void *)g_stream));
	CHECK_OK(XQueueCreate(&g_xq, g_hwq, kPreemptLevelBlock, 0));
	return NULL;
}

/* Each submitter's counter kernels log into its own array; the shared g_seq only counts. */
static void *submitter(void *arg)
{
	int t = (int)(intptr_t)arg;
	unsigned *seq = xt_dev(sizeof(unsigned));
	for (unsigned i = 0; i < PER_THREAD; i++) {
		xt_submit(g_xq, xt_count_cmd(seq, g_logs[t], i));
		xt_submit(g_xq, xt_count_cmd(g_seq, NULL, 0));
	}
	CHECK_OK(XQueueWaitAll(g_xq));
	xt_check_log(seq, g_logs[t], PER_THREAD);
	GPU_CHECK(gpuFree(seq));
	return NULL;
}

int main(void)
{
	xt_require_gpu();
	pthread_t t;
	CHECK(pthread_create(&t, NULL, make_stream, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(pthread_create(&t, NULL, wrap_stream, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(g_hwq == (HwQueueHandle)(uintptr_t)g_stream);

	g_seq = xt_dev(sizeof(unsigned));
	unsigned *log = xt_dev(PER_THREAD * sizeof(unsigned));
	for (unsigned i = 0; i < PER_THREAD; i++)
		xt_submit(g_xq, xt_count_cmd(g_seq, log, i));
	CHECK_OK(XQueueWaitAll(g_xq));
	xt_check_log(g_seq, log, PER_THREAD);

	xt_zero(g_seq, sizeof(unsigned));
	pthread_t subs[THREADS];
	for (int i = 0; i < THREADS; i++) {
		g_logs[i] = xt_dev(PER_THREAD * sizeof(unsigned));
		CHECK(pthread_create(&subs[i], NULL, submitter, (void *)(intptr_t)i) == 0);
	}
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(subs[i], NULL) == 0);
	unsigned total = 0;
	GPU_CHECK(gpuMemcpy(&total, g_seq, sizeof(total), gpuMemcpyDefault));
	CHECK(total == THREADS * PER_THREAD);

	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(g_hwq));
	for (int i = 0; i < THREADS; i++)
		GPU_CHECK(gpuFree(g_logs[i]));
	GPU_CHECK(gpuFree(log));
	GPU_CHECK(gpuFree(g_seq));
	GPU_CHECK(gpuStreamDestroy(g_stream));
	CHECK_OK(XSchedShutdown());
	printf("ok\n");
	return 0;
}
