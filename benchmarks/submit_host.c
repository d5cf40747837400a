/* submit_host: the library's own cost per command, with no device: create, submit and
 * destroy of a host-function command (the API path a kernel command also takes: handle
 * table, command allocation, the XQueue's lock, the pending list), from 1 and from 2
 * threads at once, each with its own XQueue on its own host queue. The XQueues are
 * suspended by the application while the commands are submitted, so the figure is the
 * submitting thread's path alone (no executor runs meanwhile); they then run and complete.
 * The heap is not given back to the kernel between runs (glibc's mallopt), so that the
 * figure is the library's path and not the page faults of memory that commands piling
 * up in a suspended XQueue touch anew in each run.
 *
 * Output: one line per thread count, "submit_host threads=T: X us per command (best of R
 * runs of K commands per thread)", the wall time of the slowest thread over K. Runs on any
 * machine (meson benchmark); figures in doc/RESULTS.md give the machine and date. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h" /* tests/unit: CHECK_OK, t_now_us */

enum { MAXT = 8 };

static int g_k = 100000, g_reps = 7;

static XResult nothing(void *data)
{
	(void)data;
	return kXSchedSuccess;
}

struct lane {
	HwQueueHandle hwq;
	XQueueHandle xq;
	pthread_barrier_t *start;
	double us;
};

static void *lane_main(void *arg)
{
	struct lane *l = arg;
	pthread_barrier_wait(l->start);
	int64_t t0 = t_now_us();
	for (int i = 0; i < g_k; i++) {
		HwCommandHandle c;
		CHECK_OK(HwCommandCreateHostFunc(&c, nothing, NULL));
		CHECK_OK(XQueueSubmit(l->xq, c));
		CHECK_OK(HwCommandDestroy(c));
	}
	l->us = (double)(t_now_us() - t0);
	return NULL;
}

/* The slowest lane's microseconds per command, @t lanes at once. */
static double run(struct lane *lanes, int t)
{
	pthread_barrier_t start;
	pthread_barrier_init(&start, NULL, (unsigned)t);
	pthread_t th[MAXT];
	for (int i = 0; i < t; i++) {
		CHECK_OK(XQueueSuspend(lanes[i].xq, 0));
		lanes[i].start = &start;
		pthread_create(&th[i], NULL, lane_main, &lanes[i]);
	}
	double worst = 0;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		if (lanes[i].us > worst)
			worst = lanes[i].us;
	}
	for (int i = 0; i < t; i++) {
		CHECK_OK(XQueueResume(lanes[i].xq, 0));
		CHECK_OK(XQueueWaitAll(lanes[i].xq));
	}
	pthread_barrier_destroy(&start);
	return worst / g_k;
}

int main(int argc, char **argv)
{
	int maxt = 2;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			g_k = 20000;
			g_reps = 3;
		} else if (!strncmp(argv[i], "--threads=", 10)) {
			maxt = atoi(argv[i] + 10);
			if (maxt < 1 || maxt > MAXT) {
				fprintf(stderr, "--threads: 1 to %d\n", MAXT);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: %s [--quick] [--threads=N]\n", argv[0]);
			return 2;
		}
	}
	mallopt(M_TRIM_THRESHOLD, 1 << 30);
	mallopt(M_MMAP_THRESHOLD, 1 << 30);
	struct lane lanes[MAXT];
	for (int i = 0; i < maxt; i++) {
		CHECK_OK(HostQueueCreate(&lanes[i].hwq));
		CHECK_OK(XQueueCreate(&lanes[i].xq, lanes[i].hwq, kPreemptLevelBlock, 0));
	}
	for (int t = 1; t <= maxt; t *= 2) {
		double best = 1e30;
		for (int r = 0; r < g_reps; r++) {
			double us = run(lanes, t);
			if (us < best)
				best = us;
		}
		printf("submit_host threads=%d: %.3f us per command (best of %d runs of %d "
		       "commands per thread)\n",
		       t, best, g_reps, g_k);
	}
	for (int i = 0; i < maxt; i++) {
		CHECK_OK(XQueueDestroy(lanes[i].xq));
		CHECK_OK(HwQueueDestroy(lanes[i].hwq));
	}
	CHECK_OK(XSchedShutdown());
	return 0;
}
