/* board_overhead: what the board costs a process that is alone on its device (host
 * backend): the same work with XSCHED_BOARD=off and with a board (XSCHED_BOARD=DIR, a
 * temporary directory), in alternating rounds of one process. Built from public calls
 * only, so that the same source measures a library without the board ("today").
 *
 * Per round and configuration, on host queues at Lv2:
 * - round trip: one no-op host function submitted to the top-priority XQueue and waited
 *   for, 2000 times (each one an idle-to-busy and a busy-to-idle change of the device's
 *   top: the board's publish, twice);
 * - stream: 20000 no-op host functions submitted back to back to the top XQueue, then one
 *   wait: the submitting thread's time per command;
 * - limited stream: the same on an XQueue below an idle one of higher priority (its
 *   commands are charged to the commitment budget, which reads the board's share).
 * Prints each configuration's median over the rounds (us per command) and the board's
 * difference (target: within 0.2 us), and the best rounds' (the least disturbed by other
 * work on the machine).
 *
 * Usage: board_overhead [--rounds N (7)] [--quick] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xsched.h"

#define OK(expr)                                                                                   \
	do {                                                                                       \
		XResult r_ = (expr);                                                               \
		if (r_ != kXSchedSuccess) {                                                        \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,              \
				XResultName(r_));                                                  \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

enum { MEASURES = 3, MAXR = 128 };
static const char *const g_names[MEASURES] = {"round trip", "stream", "limited stream"};
static int g_rt = 2000, g_stream = 20000;

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static XResult nothing(void *d)
{
	(void)d;
	return kXSchedSuccess;
}

static HwCommandHandle submit(XQueueHandle xq)
{
	HwCommandHandle c;
	OK(HwCommandCreateHostFunc(&c, nothing, NULL));
	OK(XQueueSubmit(xq, c));
	return c;
}

static double round_trips(XQueueHandle xq)
{
	double t0 = now_us();
	for (int i = 0; i < g_rt; i++) {
		HwCommandHandle c = submit(xq);
		OK(XQueueWait(xq, c));
		OK(HwCommandDestroy(c));
	}
	return (now_us() - t0) / g_rt;
}

static double stream(XQueueHandle xq)
{
	double t0 = now_us();
	for (int i = 0; i < g_stream; i++)
		OK(HwCommandDestroy(submit(xq)));
	double us = (now_us() - t0) / g_stream;
	OK(XQueueWaitAll(xq));
	return us;
}

/* One round of configuration @dir (NULL: off): the three measures into @out. */
static void round_of(const char *dir, double *out)
{
	OK(XSchedShutdown()); /* settings read again */
	setenv("XSCHED_BOARD", dir ? dir : "off", 1);
	HwQueueHandle hq[3];
	XQueueHandle top, low, idle;
	for (int i = 0; i < 3; i++)
		OK(HostQueueCreate(&hq[i]));
	OK(XQueueCreate(&top, hq[0], kPreemptLevelDeactivate, kQueueCreateFlagNone));
	OK(XQueueCreate(&low, hq[1], kPreemptLevelDeactivate, kQueueCreateFlagNone));
	OK(XQueueCreate(&idle, hq[2], kPreemptLevelDeactivate, kQueueCreateFlagNone));
	OK(XHintPriority(top, 10));
	OK(XHintPriority(idle, 5));
	OK(XHintPriority(low, 1));
	usleep(20000);    /* the scheduler's pass: limits in place */
	round_trips(top); /* warm-up */
	out[0] = round_trips(top);
	out[1] = stream(top);
	OK(XQueueDestroy(top)); /* the idle queue of 5 is now the device's top */
	out[2] = stream(low);
	OK(XQueueDestroy(low));
	OK(XQueueDestroy(idle));
	for (int i = 0; i < 3; i++)
		OK(HwQueueDestroy(hq[i]));
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	int rounds = 7;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			rounds = 3, g_rt = 500, g_stream = 5000;
		} else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
			rounds = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: board_overhead [--rounds N] [--quick]\n");
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAXR)
		return 2;
	char dir[] = "/tmp/xs-overhead-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	double v[2][MEASURES][MAXR];
	for (int r = 0; r < rounds; r++)
		for (int cfg = 0; cfg < 2; cfg++) { /* off, then the board */
			double out[MEASURES];
			round_of(cfg ? dir : NULL, out);
			for (int m = 0; m < MEASURES; m++)
				v[cfg][m][r] = out[m];
		}
	OK(XSchedShutdown());
	char board[64];
	snprintf(board, sizeof(board), "%s/xsched-host", dir);
	bool made = access(board, F_OK) == 0;
	unlink(board);
	rmdir(dir);
	printf("board_overhead: a process alone on its device (host queues, Lv2), median of %d "
	       "rounds; board %s\n",
	       rounds, made ? "joined in the board rounds" : "NOT MADE (a library without it?)");
	double worst = 0;
	for (int m = 0; m < MEASURES; m++) {
		double off = median(v[0][m], rounds), on = median(v[1][m], rounds);
		double off_b = v[0][m][0], on_b = v[1][m][0]; /* sorted by median() */
		printf("  %-15s off %8.3f us, board %8.3f us per command: %+.3f us (best rounds "
		       "%.3f, %.3f: %+.3f)\n",
		       g_names[m], off, on, on - off, off_b, on_b, on_b - off_b);
		if (on - off > worst)
			worst = on - off;
	}
	printf("target: within 0.2 us per command: %s (%+.3f us at most)\n",
	       worst <= 0.2 ? "MET" : "MISSED", worst);
	return 0;
}
