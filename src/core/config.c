#include "core/config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/thread.h"

/* Guards xs__cfg and xs__loaded. Held only while the struct is (re)filled. */
static xs_mutex xs__lock = PTHREAD_MUTEX_INITIALIZER;
static xs_config xs__cfg;
static bool xs__loaded;

/* An integer variable in [lo, hi], or @def (with one warning) when it is anything else. */
static int64_t xs__int(const char *name, int64_t lo, int64_t hi, int64_t def)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return def;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (*end || v < lo || v > hi) {
		XS_WARN("core", "%s=%s is not an integer in [%lld, %lld]; using %lld", name, s,
			(long long)lo, (long long)hi, (long long)def);
		return def;
	}
	return v;
}

static void xs__load(xs_config *c)
{
	memset(c, 0, sizeof(*c));
	const char *p = getenv("XSCHED_POLICY");
	c->policy = p && *p ? p : NULL;
	const char *k = getenv("XSCHED_SCHEDULER");
	c->app_managed = k && !strcasecmp(k, "APP");
	if (k && *k && !c->app_managed && strcasecmp(k, "LCL"))
		XS_WARN("core", "XSCHED_SCHEDULER=%s is not APP or LCL; using the local scheduler",
			k);
	c->hpf_linger_ns = xs__int("XSCHED_HPF_LINGER_US", 0, 10000000, 0) * 1000;
	c->budget_ns = xs__int("XSCHED_BUDGET_US", 0, 10000000, XS_BUDGET_DEFAULT_US) * 1000;
	c->hw_priority = xs__int("XSCHED_HW_PRIORITY", 0, 1, 1) != 0;
	c->corun_ns = xs__int("XSCHED_CORUN_US", 0, 10000000, XS_CORUN_DEFAULT_US) * 1000;
	c->host_hw_queues = (unsigned)xs__int("XSCHED_HOST_HW_QUEUES", 0, 1 << 20, 0);
	c->cuda_connections = (long)xs__int("CUDA_DEVICE_MAX_CONNECTIONS", 0, 1024, 0);
	c->hip_hw_queues = (long)xs__int("GPU_MAX_HW_QUEUES", 0, 1024, 0);
	c->hip_cp_wait = xs__int("GPU_STREAMOPS_CP_WAIT", 0, 1, 0) != 0;
	const char *t = getenv("XSCHED_TRACE");
	c->trace_path = t && *t ? t : NULL;
	c->trace_events = xs__int("XSCHED_TRACE_EVENTS", 16, 1 << 24, 65536);
	c->stall_release_ns =
	    xs__int("XSCHED_STALL_RELEASE_US", 0, 100000000, XS_STALL_RELEASE_DEFAULT_US) * 1000;
}

const xs_config *xs_config_get(void)
{
	xs_mutex_lock(&xs__lock);
	if (!xs__loaded) {
		xs__load(&xs__cfg);
		xs__loaded = true;
	}
	xs_mutex_unlock(&xs__lock);
	return &xs__cfg;
}

void xs_config_forked(void)
{
	xs_mutex_init(&xs__lock);
	xs__loaded = false;
}

void xs_config_reset(void)
{
	xs_mutex_lock(&xs__lock);
	xs__loaded = false;
	xs_mutex_unlock(&xs__lock);
}
