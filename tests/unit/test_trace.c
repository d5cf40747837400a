/* The timeline trace: a thread's ring keeps its newest events and counts the dropped
 * ones; the file holds exactly what was kept; start/stop errors; nothing is recorded while
 * tracing is off; a traced host run writes one completion per commit. (The JSON itself
 * is parsed by tests/python/test_trace.py.) */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/trace.h"

#define RING 64
#define N    1000

static char g_path[128];

/* Lines of the file that contain @what. */
static int count_lines(const char *path, const char *what)
{
	FILE *f = fopen(path, "r");
	CHECK(f);
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

static void test_ring_drops_oldest(void)
{
	uint64_t kept, dropped;
	XS_TRACE(XS_TR_PASS, 0, 1, 0); /* off: nothing */
	CHECK_OK(xs_trace_start(g_path, RING));
	xs_trace_counts(&kept, &dropped);
	CHECK(kept == 0 && dropped == 0);
	for (int i = 1; i <= N; i++)
		XS_TRACE(XS_TR_SUBMIT, 7, (uint64_t)i, 0);
	xs_trace_counts(&kept, &dropped);
	CHECK(kept == RING && dropped == N - RING);
	CHECK_OK(xs_trace_stop());
	CHECK(count_lines(g_path, "\"name\":\"submit\"") == RING);
	char want[64];
	snprintf(want, sizeof(want), "\"dropped\":%d", N - RING);
	CHECK(count_lines(g_path, want) == 1);
	/* The newest were kept: the last submission is there, the first is not. */
	snprintf(want, sizeof(want), "\"a\":%d,", N);
	CHECK(count_lines(g_path, want) == 1);
	CHECK(count_lines(g_path, "\"a\":1,") == 0);
	/* Stopped: nothing more is recorded, and a new trace starts empty. */
	XS_TRACE(XS_TR_SUBMIT, 7, 1, 0);
	CHECK_OK(xs_trace_start(g_path, RING));
	xs_trace_counts(&kept, &dropped);
	CHECK(kept == 0 && dropped == 0);
	CHECK_OK(xs_trace_stop());
}

static void test_errors(void)
{
	CHECK_RES(XSchedTraceStop(), kXSchedErrorNotFound);
	CHECK_RES(XSchedTraceStart(NULL), kXSchedErrorInvalidValue);
	CHECK_RES(XSchedTraceStart(""), kXSchedErrorInvalidValue);
	CHECK_OK(XSchedTraceStart(g_path));
	CHECK_RES(XSchedTraceStart(g_path), kXSchedErrorNotAllowed);
	CHECK_OK(XSchedTraceStop());
	CHECK_OK(XSchedTraceStart("/nonexistent-dir/trace.json"));
	CHECK_RES(XSchedTraceStop(), kXSchedErrorHardware);
}

static XResult nop(void *d)
{
	(void)d;
	return kXSchedSuccess;
}

/* A host run: per command one submit, one commit and one completion. */
static void test_host_run(void)
{
	HwQueueHandle h;
	XQueueHandle xq;
	CHECK_OK(XSchedTraceStart(g_path));
	CHECK_OK(HostQueueCreate(&h));
	CHECK_OK(XQueueCreate(&xq, h, kPreemptLevelDeactivate, kQueueCreateFlagNone));
	for (int i = 0; i < 100; i++)
		t_submit_fn(xq, nop, NULL);
	CHECK_OK(XQueueSuspend(xq, kQueueSuspendFlagNone));
	for (int i = 0; i < 20; i++)
		t_submit_fn(xq, nop, NULL);
	CHECK_OK(XQueueResume(xq, kQueueResumeFlagNone));
	CHECK_OK(XQueueWaitAll(xq));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(h));
	CHECK_OK(XSchedTraceStop());
	CHECK(count_lines(g_path, "\"name\":\"submit\"") == 120);
	CHECK(count_lines(g_path, "\"ph\":\"b\"") == 120);
	CHECK(count_lines(g_path, "\"ph\":\"e\"") == 120);
	CHECK(count_lines(g_path, "\"name\":\"suspend\"") == 1);
	CHECK(count_lines(g_path, "\"name\":\"resume\"") == 1);
	CHECK(count_lines(g_path, "thread_name") == 1);
}

int main(void)
{
	snprintf(g_path, sizeof(g_path), "/tmp/xsched-test-trace-%d.json", (int)getpid());
	test_ring_drops_oldest();
	test_errors();
	test_host_run();
	unlink(g_path);
	return 0;
}
