/* Data races between process-wide calls, for the thread sanitizer (a plain build runs the
 * same code and checks only that it ends):
 * - a trace started with a new ring size while another thread records (the ring size);
 * - XSchedShutdown() and a reload of the settings while another thread starts a trace
 *   (which reads the settings);
 * - XQueueCreate while tracing, with a busy high-priority queue: the scheduler suspends
 *   the new queue (and traces it by handle) before XQueueCreate has returned its handle.
 * Each phase is bounded in iterations and takes well under a second. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/trace.h"

static char g_path[128];
static atomic_bool g_stop;

static void *recorder(void *arg)
{
	(void)arg;
	while (!atomic_load(&g_stop))
		XS_TRACE(XS_TR_SUBMIT, 7, 1, 0);
	return NULL;
}

/* The ring size changes between traces while a thread keeps recording. */
static void test_ring_size(void)
{
	atomic_store(&g_stop, false);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, recorder, NULL) == 0);
	for (int i = 0; i < 200; i++) {
		CHECK_OK(xs_trace_start(g_path, 16 + i % 3));
		t_sleep_us(50);
		CHECK_OK(xs_trace_stop());
	}
	atomic_store(&g_stop, true);
	CHECK(pthread_join(t, NULL) == 0);
}

static void *tracer(void *arg)
{
	(void)arg;
	while (!atomic_load(&g_stop)) {
		XResult r = XSchedTraceStart(g_path);
		CHECK(r == kXSchedSuccess || r == kXSchedErrorNotAllowed);
		r = xs_trace_stop();
		CHECK(r == kXSchedSuccess || r == kXSchedErrorNotFound);
	}
	return NULL;
}

/* Shutdown resets the settings and the next call loads them again, while another thread
 * starts traces (XSchedTraceStart reads the ring size from the settings). */
static void test_settings_reload(void)
{
	atomic_store(&g_stop, false);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, tracer, NULL) == 0);
	for (int i = 0; i < 300; i++) {
		CHECK_OK(XSchedShutdown());
		XResult r = XSchedTraceStart(g_path); /* loads the settings again */
		CHECK(r == kXSchedSuccess || r == kXSchedErrorNotAllowed);
	}
	atomic_store(&g_stop, true);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_OK(XSchedShutdown());
}

static atomic_bool g_release;

static XResult hold_fn(void *data)
{
	(void)data;
	while (!atomic_load(&g_release))
		t_sleep_us(200);
	return kXSchedSuccess;
}

/* XQueues created (and traced) while HPF keeps suspending them behind a busy queue. */
static void test_create_traced(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	HwQueueHandle hh, hl;
	XQueueHandle high;
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(HostQueueCreate(&hl));
	CHECK_OK(XQueueCreate(&high, hh, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(high, 10));
	atomic_store(&g_release, false);
	t_submit_fn(high, hold_fn, NULL);
	CHECK_OK(XSchedTraceStart(g_path));
	for (int i = 0; i < 100; i++) {
		XQueueHandle low;
		CHECK_OK(XQueueCreate(&low, hl, kPreemptLevelBlock, 0));
		t_sleep_us(100);
		CHECK_OK(XQueueDestroy(low));
	}
	CHECK_OK(XSchedTraceStop());
	atomic_store(&g_release, true);
	CHECK_OK(XQueueWaitAll(high));
	CHECK_OK(XQueueDestroy(high));
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(HwQueueDestroy(hl));
	CHECK_OK(XSchedShutdown());
}

/* Runs every phase, or the one named by the argument (ring, settings, create). */
int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	snprintf(g_path, sizeof(g_path), "/tmp/xs_test_races_%d.json", (int)getpid());
	if (!only || !strcmp(only, "ring"))
		test_ring_size();
	if (!only || !strcmp(only, "settings"))
		test_settings_reload();
	if (!only || !strcmp(only, "create"))
		test_create_traced();
	unlink(g_path);
	printf("trace ring size, settings reload and traced create: no race\n");
	return 0;
}
