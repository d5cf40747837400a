#include "core/config.h"

#include <errno.h>
#include <grp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/log.h"
#include "core/thread.h"

/* Settings are snapshots: each load fills a new struct, which is never written again and
 * lives as long as the process, so that a thread still reading the one it got while
 * another thread resets and loads again (XSchedShutdown, then any call) reads whole,
 * unchanging values. A load whose values equal the newest snapshot's reuses it: memory
 * grows only when the environment changed between two uses of the library. */
typedef struct xs__snap {
	xs_config cfg;
	struct xs__snap *prev; /* older snapshots (kept: a reader may hold one) */
} xs__snap;

/* Guards xs__newest and the loads. */
static xs_mutex xs__lock = XS_MUTEX_INITIALIZER;
static xs__snap *xs__newest;
/* The snapshot in force, NULL = read the environment at the next use. Stored under
 * xs__lock (release), read without it (acquire). */
static _Atomic(const xs_config *) xs__cur;

/* An integer variable in [lo, hi], or @def when it is unset or empty. Any other value is
 * reported (xs_log_setting: once, whatever the log level) with what is used instead:
 * @instead, or where it is NULL "using <def> (the default)". */
static int64_t xs__int(const char *name, int64_t lo, int64_t hi, int64_t def, const char *instead)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*end && end != s && !errno && v >= lo && v <= hi)
		return v;
	char range[64], dflt[48];
	if (lo == 0 && hi == 1)
		snprintf(range, sizeof(range), "0 or 1");
	else
		snprintf(range, sizeof(range), "an integer in [%lld, %lld]", (long long)lo,
			 (long long)hi);
	snprintf(dflt, sizeof(dflt), "using %lld (the default)", (long long)def);
	xs_log_setting("%s=%.64s is not %s; %s", name, s, range, instead ? instead : dflt);
	return def;
}

/* XSCHED_TRACE's path, or NULL (reported) when no file can be written there: the trace is
 * written at XSchedTraceStop() or exit, too late to say that it could not be. */
static const char *xs__trace_path(void)
{
	const char *t = getenv("XSCHED_TRACE");
	if (!t || !*t)
		return NULL;
	int err = 0;
	if (access(t, F_OK) == 0) {
		if (access(t, W_OK) != 0)
			err = errno;
	} else {
		char dir[4096];
		const char *slash = strrchr(t, '/');
		size_t n = !slash ? 0 : slash == t ? 1 : (size_t)(slash - t);
		if (n >= sizeof(dir))
			n = sizeof(dir) - 1;
		memcpy(dir, n ? t : ".", n ? n : 1);
		dir[n ? n : 1] = '\0';
		if (access(dir, W_OK | X_OK) != 0)
			err = errno;
	}
	if (err) {
		xs_log_setting("XSCHED_TRACE=%.200s cannot be written (%s); recording no trace", t,
			       strerror(err));
		return NULL;
	}
	return t;
}

/* XSCHED_BOARD=auto|off|DIR and XSCHED_BOARD_GROUP (core/board.h). */
static void xs__board(xs_config *c)
{
	const char *b = getenv("XSCHED_BOARD");
	if (!b || !*b || !strcasecmp(b, "auto"))
		c->board_dir = NULL;
	else if (!strcasecmp(b, "off") || !strcmp(b, "0"))
		c->board_dir = "";
	else if (b[0] == '/')
		c->board_dir = b;
	else {
		xs_log_setting("XSCHED_BOARD=%.200s is not auto, off or an absolute directory; "
			       "using auto (the default)",
			       b);
		c->board_dir = NULL;
	}
	const char *g = getenv("XSCHED_BOARD_GROUP");
	c->board_group = g && *g ? g : NULL;
	char buf[4096];
	struct group grp, *res = NULL;
	if (c->board_group && (getgrnam_r(c->board_group, &grp, buf, sizeof(buf), &res) || !res)) {
		xs_log_setting("XSCHED_BOARD_GROUP=%.64s is not a group; boards are made for this "
			       "user only (0600, the default)",
			       c->board_group);
		c->board_group = NULL;
	}
}

static void xs__load(xs_config *c)
{
	memset(c, 0, sizeof(*c));
	const char *p = getenv("XSCHED_POLICY");
	c->policy = p && *p ? p : NULL; /* a name no policy has is reported by sched.c */
	const char *k = getenv("XSCHED_SCHEDULER");
	c->app_managed = k && !strcasecmp(k, "APP");
	if (k && *k && !c->app_managed && strcasecmp(k, "LCL"))
		xs_log_setting("XSCHED_SCHEDULER=%.64s is not APP or LCL; using LCL (the local "
			       "scheduler, the default)",
			       k);
	c->hpf_linger_ns = xs__int("XSCHED_HPF_LINGER_US", 0, 10000000, 0, NULL) * 1000;
	c->budget_ns = xs__int("XSCHED_BUDGET_US", 0, 10000000, XS_BUDGET_DEFAULT_US, NULL) * 1000;
	c->hw_priority = xs__int("XSCHED_HW_PRIORITY", 0, 1, 1, NULL) != 0;
	c->gpu_lazy_marks = xs__int("XSCHED_GPU_LAZY_MARKS", 0, 1, 1, NULL) != 0;
	c->top_gates = xs__int("XSCHED_TOP_GATES", 0, 1, 0, NULL) != 0;
	c->strict_priority = xs__int("XSCHED_STRICT_PRIORITY", 0, 1, 0, NULL) != 0;
	c->pace = xs__int("XSCHED_PACE", 0, 1, 1, NULL) != 0;
	c->pace_wait = xs__int("XSCHED_PACE_WAIT", 0, 1, 0, NULL) != 0;
	c->corun_ns = xs__int("XSCHED_CORUN_US", 0, 10000000, XS_CORUN_DEFAULT_US, NULL) * 1000;
	c->host_hw_queues = (unsigned)xs__int("XSCHED_HOST_HW_QUEUES", 0, 1 << 20, 0,
					      "using 0 (the default: no limit)");
	c->host_timesliced = xs__int("XSCHED_HOST_TIMESLICED", 0, 1, 0, NULL) != 0;
	/* The runtimes read these themselves; the library only plans with them. */
	static const char unset[] = "the library takes it as unset (the runtime's own default)";
	c->cuda_connections = (long)xs__int("CUDA_DEVICE_MAX_CONNECTIONS", 0, 1024, 0, unset);
	c->hip_hw_queues = (long)xs__int("GPU_MAX_HW_QUEUES", 0, 1024, 0, unset);
	c->hip_cp_wait = xs__int("GPU_STREAMOPS_CP_WAIT", 0, 1, 0, unset) != 0;
	c->trace_path = xs__trace_path();
	c->trace_events = xs__int("XSCHED_TRACE_EVENTS", 16, 1 << 24, 65536, NULL);
	c->stall_release_ns =
	    xs__int("XSCHED_STALL_RELEASE_US", 0, 100000000, XS_STALL_RELEASE_DEFAULT_US, NULL) *
	    1000;
	xs__board(c);
}

/* A snapshot of the environment now: the newest one when nothing changed, else a new
 * one (NULL when out of memory). Caller holds xs__lock. */
static const xs_config *xs__snapshot(void)
{
	XS_ASSERT_HELD(&xs__lock);
	xs__snap *s = calloc(1, sizeof(*s)); /* zeroed: padding compares equal */
	if (!s)
		return xs__newest ? &xs__newest->cfg : NULL;
	xs__load(&s->cfg);
	if (xs__newest && !memcmp(&s->cfg, &xs__newest->cfg, sizeof(s->cfg))) {
		free(s);
		return &xs__newest->cfg;
	}
	s->prev = xs__newest;
	xs__newest = s;
	return &s->cfg;
}

const xs_config *xs_config_get(void)
{
	const xs_config *c = atomic_load_explicit(&xs__cur, memory_order_acquire);
	if (c)
		return c;
	xs_mutex_lock(&xs__lock);
	c = atomic_load_explicit(&xs__cur, memory_order_relaxed);
	if (!c) {
		c = xs__snapshot();
		atomic_store_explicit(&xs__cur, c, memory_order_release);
	}
	xs_mutex_unlock(&xs__lock);
	if (!c) { /* out of memory before any snapshot: the defaults of an empty environment */
		static const xs_config none = {.budget_ns = XS_BUDGET_DEFAULT_US * 1000,
					       .hw_priority = true,
					       .gpu_lazy_marks = true,
					       .pace = true,
					       .corun_ns = XS_CORUN_DEFAULT_US * 1000,
					       .trace_events = 65536,
					       .stall_release_ns =
						   XS_STALL_RELEASE_DEFAULT_US * 1000};
		c = &none;
	}
	return c;
}

void xs_config_forked(void)
{
	xs_mutex_init(&xs__lock);
	atomic_store_explicit(&xs__cur, NULL, memory_order_relaxed);
}

void xs_config_reset(void)
{
	xs_mutex_lock(&xs__lock);
	atomic_store_explicit(&xs__cur, NULL, memory_order_release);
	xs_mutex_unlock(&xs__lock);
}
