/* Minimal checking helpers for the unit tests: a failed check prints where and why and
 * exits 1; a test's main returns 0 when every check passed. */
#ifndef XS_TEST_CHECK_H
#define XS_TEST_CHECK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "xsched.h"

/* A failed check flushes what the test printed first (a sanitizer's exit loses it). */
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fflush(stdout);                                                            \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* A check that says what was expected and what was measured (printf-style). */
#define CHECK_MSG(cond, ...)                                                                       \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fflush(stdout);                                                            \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);   \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_RES(expr, want)                                                                      \
	do {                                                                                       \
		XResult got_ = (expr);                                                             \
		if (got_ != (want)) {                                                              \
			fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__,          \
				__LINE__, #expr, XResultName(got_), XResultName(want));            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_OK(expr) CHECK_RES(expr, kXSchedSuccess)

/* Monotonic time in microseconds. */
int64_t t_now_us(void);
void t_sleep_us(int64_t us);

/* Poll @pred(arg) every 100 us until it holds or @timeout_ms passes; returns the result.
 * Only for waiting on a condition the test expects to become true, never for timing. */
bool t_wait_for(bool (*pred)(void *arg), void *arg, int timeout_ms);

/* Host function: sleeps for *(int64_t *)data microseconds. */
XResult t_sleep_fn(void *data);

/* Submit a host function command to @xq and destroy the caller's handle at once (the
 * XQueue keeps the command alive). */
void t_submit_fn(XQueueHandle xq, HostFunction fn, void *data);

/* Statistics of @xq (checks the call succeeds). */
XQueueStats t_stats(XQueueHandle xq);

/* A low- and a high-priority XQueue (priorities 0 and 10) at @level, each on a host queue
 * of its own; t_pair_close destroys all four (checking each call). */
struct t_pair {
	HwQueueHandle hl, hh;
	XQueueHandle low, high;
};
void t_pair_open(struct t_pair *p, XPreemptLevel level);
void t_pair_close(struct t_pair *p);

#endif
