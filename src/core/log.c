#include "core/log.h"

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* -1 until the environment has been read; then an xs_log_level. Relaxed ordering is
 * enough: every thread that reads the environment computes the same value. */
static atomic_int xs__log_level = -1;

/* The level @s (XSCHED_LOG's value) names; XS_LOG_OFF when it is unset or empty, or names
 * no level (then *@unknown is set). */
static int xs__log_level_of(const char *s, bool *unknown)
{
	*unknown = false;
	if (!s || !*s)
		return XS_LOG_OFF;
	if (!strcasecmp(s, "debug"))
		return XS_LOG_DEBUG;
	if (!strcasecmp(s, "info"))
		return XS_LOG_INFO;
	if (!strcasecmp(s, "warn") || !strcasecmp(s, "warning"))
		return XS_LOG_WARN;
	if (!strcasecmp(s, "error"))
		return XS_LOG_ERROR;
	*unknown = true;
	return XS_LOG_OFF;
}

bool xs_log_enabled(enum xs_log_level level)
{
	int cur = atomic_load_explicit(&xs__log_level, memory_order_relaxed);
	if (cur < 0) {
		const char *env = getenv("XSCHED_LOG");
		bool unknown;
		int want = xs__log_level_of(env, &unknown);
		/* Of the threads that read it first, the one that stores the level says, once,
		 * that the value names none (logging then stays off). */
		if (atomic_compare_exchange_strong_explicit(
			&xs__log_level, &cur, want, memory_order_relaxed, memory_order_relaxed)) {
			cur = want;
			if (unknown)
				fprintf(stderr,
					"xsched[core] warn: XSCHED_LOG=%.40s is not a level "
					"(debug, info, warn or error): logging stays off\n",
					env);
		}
	}
	return (int)level >= cur;
}

void xs_log_set_level(enum xs_log_level level)
{
	atomic_store_explicit(&xs__log_level, (int)level, memory_order_relaxed);
}

void xs_log_write(enum xs_log_level level, const char *topic, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	char line[512];
	int n = snprintf(line, sizeof(line), "xsched[%s] %s: ", topic,
			 names[level <= XS_LOG_ERROR ? level : XS_LOG_ERROR]);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One fputs per line so that lines from several threads do not interleave. */
	size_t len = strlen(line);
	if (len + 1 < sizeof(line)) {
		line[len] = '\n';
		line[len + 1] = '\0';
	}
	fputs(line, stderr);
}

/* Every XResult, once. The switch below has no default, so -Wswitch (in -Wall, an error in
 * CI) names a value added to the header and not here; the count checks the list against
 * the header's dense range 0..kXSchedErrorBadResponse plus kXSchedErrorUnknown. */
#define XS__RESULTS(X)                                                                             \
	X(kXSchedSuccess)                                                                          \
	X(kXSchedErrorHardware)                                                                    \
	X(kXSchedErrorInvalidValue)                                                                \
	X(kXSchedErrorNotFound)                                                                    \
	X(kXSchedErrorNotAllowed)                                                                  \
	X(kXSchedErrorNotSupported)                                                                \
	X(kXSchedErrorBadResponse)                                                                 \
	X(kXSchedErrorUnknown)
#define XS__ONE(r) +1
static_assert(0 XS__RESULTS(XS__ONE) == kXSchedErrorBadResponse + 2,
	      "XS__RESULTS lists every XResult value once");

const char *xs_result_name(XResult r)
{
#define XS__CASE(r)                                                                                \
	case r:                                                                                    \
		return #r;
	switch (r) {
		XS__RESULTS(XS__CASE)
	}
#undef XS__CASE
	return "XResult(unknown)";
}
