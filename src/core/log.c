#include "core/log.h"

#include <assert.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
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

static const char *const xs__level_names[] = {"debug", "info", "warn", "error"};

/* Print "xsched[@topic] <level>: @text" as one line, in one fputs so that lines of several
 * threads do not interleave; a text too long for the line is cut, its end kept. */
static void xs__print(enum xs_log_level level, const char *topic, const char *text)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "xsched[%s] %s: %s\n", topic,
			 xs__level_names[level <= XS_LOG_ERROR ? level : XS_LOG_ERROR], text);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		line[sizeof(line) - 2] = '\n'; /* cut: the newline still ends it */
	fputs(line, stderr);
}

void xs_log_write(enum xs_log_level level, const char *topic, const char *fmt, ...)
{
	char text[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	xs__print(level, topic, text);
}

/* The calling thread's last failure message (XResultLastMessage) and whether it is still
 * to be read. Written only on failure paths; read by the thread itself. */
static _Thread_local char xs__last[400];
static _Thread_local bool xs__last_unread;

void xs_log_fail(enum xs_log_level level, const char *topic, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(xs__last, sizeof(xs__last), fmt, ap);
	va_end(ap);
	xs__last_unread = true;
	if (xs_log_enabled(level))
		xs__print(level, topic, xs__last);
}

const char *xs_log_last_message(void)
{
	if (!xs__last_unread)
		return "";
	xs__last_unread = false;
	return xs__last;
}

/* Hashes (FNV-1a, 64 bits; 0 = free) of the setting lines printed so far. Lock-free: a
 * slot goes from 0 to a hash once and never back, so of two threads with the same line
 * only the one whose compare-exchange fills the slot prints. Past the last slot a line is
 * printed every time (64 distinct bad settings in one process). */
static _Atomic uint64_t xs__told[64];

void xs_log_setting(const char *fmt, ...)
{
	char text[480];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	uint64_t h = 14695981039346656037ull;
	for (const char *p = text; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h += !h; /* never 0, the free mark */
	for (size_t i = 0; i < sizeof(xs__told) / sizeof(xs__told[0]); i++) {
		uint64_t cur = atomic_load_explicit(&xs__told[i], memory_order_relaxed);
		if (cur == h)
			return; /* said already */
		if (cur == 0 && atomic_compare_exchange_strong_explicit(&xs__told[i], &cur, h,
									memory_order_relaxed,
									memory_order_relaxed))
			break;
		if (cur == h)
			return; /* another thread filled the slot with this line meanwhile */
	}
	xs__print(XS_LOG_WARN, "core", text);
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
