/* board_publish: the board's own costs, measured directly (internal calls, core/board.h):
 * a process alone on a board publishes its top's busy state (xs_board_set_busy, what the
 * budget does at each change of it: twice per round trip of a top-priority command) and
 * reads the others' (xs_board_busy, what the budget's hold does at each decision of a
 * limited queue). Prints ns per call over 2 x 10^6 calls (best of 5). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/board.h"

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void hook(void *arg)
{
	(void)arg;
}

int main(void)
{
	char dir[] = "/tmp/xs-publish-XXXXXX", path[64];
	if (!mkdtemp(dir))
		return 1;
	xs_board *b = xs_board_open(dir, "host", NULL);
	if (!b || !xs_board_join(b, hook, NULL))
		return 1;
	enum { N = 1000000 };
	double pub = 1e9, rd = 1e9;
	long sink = 0;
	for (int r = 0; r < 5; r++) {
		double t0 = now_ns();
		for (int i = 0; i < N; i++) {
			xs_board_set_busy(b, 10, 0);
			xs_board_set_busy(b, XS_BOARD_NONE, 0);
		}
		double t1 = now_ns();
		int64_t ask;
		for (int i = 0; i < N; i++)
			sink += xs_board_busy(b, &ask) != XS_BOARD_NONE;
		double t2 = now_ns();
		if ((t1 - t0) / (2.0 * N) < pub)
			pub = (t1 - t0) / (2.0 * N);
		if ((t2 - t1) / N < rd)
			rd = (t2 - t1) / N;
	}
	printf("board_publish: alone on a board: a publish of the busy state %.1f ns, a read of "
	       "the others' %.1f ns (best of 5 x 10^6; %ld)\n",
	       pub, rd, sink);
	xs_board_leave(b);
	snprintf(path, sizeof(path), "%s/xsched-host", dir);
	unlink(path);
	rmdir(dir);
	return 0;
}
