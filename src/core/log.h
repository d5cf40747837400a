/* Logging: silent unless XSCHED_LOG=debug|info|warn|error is set.
 *
 * Every message goes to stderr as "xsched[<topic>] <level>: <text>".
 * Two kinds of message are more than log lines:
 * - the reason a call fails (XS_FAIL, XS_CHECK): also kept, whatever the level, as the
 *   calling thread's last message, which XResultLastMessage() hands to the application
 *   (the Python binding puts it in its exceptions);
 * - a bad setting in the environment (xs_log_setting): printed whatever the level, once
 *   per distinct line for the life of the process.
 * Topics name the subsystem: "api" (argument checks and API calls), "core", "hal"
 * (backends), "engine" (launching, gates, budget), "sched", "trace", "lv3" and "cwsr".
 * The level is read from the environment once, on first use. Any other non-empty value
 * (XSCHED_LOG=1, =verbose) prints one warning line naming the accepted values, whatever
 * the level, and logging stays off.
 *
 * Thread-safety: all functions may be called from any thread.
 */
#ifndef XS_CORE_LOG_H
#define XS_CORE_LOG_H

#include <stdbool.h>

#include "xsched.h"

enum xs_log_level {
	XS_LOG_DEBUG = 0,
	XS_LOG_INFO = 1,
	XS_LOG_WARN = 2,
	XS_LOG_ERROR = 3,
	XS_LOG_OFF = 4,
};

/* True when messages of @level are printed. Cheap: one relaxed atomic load
 * after the first call. */
bool xs_log_enabled(enum xs_log_level level);

/* Print one line; callers normally go through the XS_* macros below so that
 * arguments are not evaluated while logging is off. */
void xs_log_write(enum xs_log_level level, const char *topic, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Keep the text of @fmt as the calling thread's last message (XResultLastMessage) and, when
 * messages of @level are printed, print it as one line. Formats even with logging off:
 * for failure paths only (a few hundred ns), never for a path a call takes when it
 * succeeds. */
void xs_log_fail(enum xs_log_level level, const char *topic, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The calling thread's last message, "" when none was kept since the last call (which
 * clears it). Thread-local storage: valid on the thread until its next xs_log_fail. */
const char *xs_log_last_message(void);

/* A bad setting in the environment (what was read, what is used instead): one line
 * "xsched[core] warn: <text>" on stderr whatever XSCHED_LOG says, once per distinct text
 * for the life of the process (a setting read again after XSchedShutdown() is not
 * reported again). */
void xs_log_setting(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Override the level read from XSCHED_LOG (tests use this). */
void xs_log_set_level(enum xs_log_level level);

/* The name of @r as the header spells it ("kXSchedErrorNotFound"), for messages; a value
 * that is no XResult gives "XResult(unknown)". Static storage. */
const char *xs_result_name(XResult r);

#define XS_LOG(level, topic, ...)                                                                  \
	do {                                                                                       \
		if (xs_log_enabled(level))                                                         \
			xs_log_write(level, topic, __VA_ARGS__);                                   \
	} while (0)

#define XS_DEBUG(topic, ...) XS_LOG(XS_LOG_DEBUG, topic, __VA_ARGS__)
#define XS_INFO(topic, ...)  XS_LOG(XS_LOG_INFO, topic, __VA_ARGS__)
#define XS_WARN(topic, ...)  XS_LOG(XS_LOG_WARN, topic, __VA_ARGS__)
#define XS_ERROR(topic, ...) XS_LOG(XS_LOG_ERROR, topic, __VA_ARGS__)

/* Why the calling thread's public call fails: kept as the thread's last message
 * (XResultLastMessage) and logged at warning level. Every error return of a public call
 * that has a reason in words says it through here (or XS_CHECK), on the calling thread. */
#define XS_FAIL(topic, ...) xs_log_fail(XS_LOG_WARN, topic, __VA_ARGS__)

/* Validate an argument at the API boundary in one line: when @cond is false, give @fmt as
 * the reason (XS_FAIL) under @topic and return @ret from the calling function. */
#define XS_CHECK(cond, ret, topic, ...)                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			XS_FAIL(topic, __VA_ARGS__);                                               \
			return ret;                                                                \
		}                                                                                  \
	} while (0)

#endif
