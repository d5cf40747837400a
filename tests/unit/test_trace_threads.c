/* The timeline trace with many short-lived threads: each thread that records gets a ring
 * of XSCHED_TRACE_EVENTS events, and a thread that exits gives its ring, with its events,
 * to the next one. 2000 threads that each record one event one after the other must not
 * keep 2000 rings (2 MiB each by default: 4 GB of address space), and every event they
 * recorded must still be in the trace. VmSize is read from /proc/self/status. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/trace.h"

#define THREADS 2000

static XQueueHandle g_xq;

/* Address space of the process in KiB (VmSize), or -1 where /proc is missing. */
static long vm_size_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void *one_event(void *arg)
{
	(void)arg;
	CHECK_OK(XQueueBeginScope(g_xq)); /* records a scope event */
	CHECK_OK(XQueueEndScope(g_xq));   /* and another */
	return NULL;
}

int main(void)
{
	char path[128];
	snprintf(path, sizeof(path), "/tmp/xs_test_trace_threads_%d.json", (int)getpid());
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XSchedTraceStart(path));
	/* A first thread, so that one ring exists before the measurement. */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, one_event, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	long before = vm_size_kib();
	for (int i = 1; i < THREADS; i++) {
		CHECK(pthread_create(&t, NULL, one_event, NULL) == 0);
		CHECK(pthread_join(t, NULL) == 0);
	}
	long after = vm_size_kib();
	uint64_t kept, dropped;
	xs_trace_counts(&kept, &dropped);
	printf("%d threads recorded %llu events (%llu dropped); VmSize %ld -> %ld KiB (+%ld)\n",
	       THREADS, (unsigned long long)kept, (unsigned long long)dropped, before, after,
	       after - before);
	/* Every event of the exited threads is kept (the scheduler may add some). */
	CHECK(kept >= 2 * THREADS && dropped == 0);
	/* Rings of exited threads are reused: far less than one ring per thread (4 GB). The
	 * bound leaves room for glibc's malloc arenas, 64 MiB of address space each, which
	 * threads that allocate while others do may add (up to 8 per core): a bound of 64 MiB
	 * failed once on a 2-core host beside other tests (+66 MiB). */
	if (before > 0)
		CHECKF(after - before < 1024 * 1024,
		       "VmSize to grow by less than 1 GiB over %d threads, measured +%ld KiB",
		       THREADS, after - before);
	CHECK_OK(XSchedTraceStop());
	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(hwq));
	unlink(path);
	return 0;
}
