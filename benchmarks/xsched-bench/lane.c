/* xsched-bench: modes, and lanes that reach the device directly or through an XQueue.
 *
 * Native modes: the application thread enqueues each op on its own stream and waits on
 * the stream. Xsched modes: each op becomes a launch callback command submitted to the
 * lane's XQueue; the library calls it with the stream when the scheduler lets the queue
 * run; the thread waits on the task's last command. A lane that submits kernel commands
 * (XSB_SUBMIT_KERNEL) makes its streaming kernels kernel commands instead (the backend's
 * kernel_cmd), so that lanes of both kinds can share a device.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

const struct xsb_mode xsb_modes[] = {
    {.name = "native", .xsched = false, .hwprio = false, .level = 0},
    {.name = "native-prio", .xsched = false, .hwprio = true, .level = 0},
    {.name = "xsched",
     .xsched = true,
     .hwprio = false,
     .level = 0}, /* the library's defaults: the HwQueue's highest level */
    {.name = "xsched-lv1", .xsched = true, .hwprio = false, .level = kPreemptLevelBlock},
    {.name = "xsched-lv2", .xsched = true, .hwprio = false, .level = kPreemptLevelDeactivate},
    {.name = "xsched-lv3", .xsched = true, .hwprio = false, .level = kPreemptLevelInterrupt},
    {.name = "xsched-lv1+prio", .xsched = true, .hwprio = true, .level = kPreemptLevelBlock},
    {.name = "xsched-lv2+prio", .xsched = true, .hwprio = true, .level = kPreemptLevelDeactivate},
    {.name = "xsched-lv3+prio", .xsched = true, .hwprio = true, .level = kPreemptLevelInterrupt},
};
const size_t xsb_nmodes = sizeof(xsb_modes) / sizeof(xsb_modes[0]);

const struct xsb_mode *xsb_mode_find(const char *name)
{
	for (size_t i = 0; i < xsb_nmodes; i++)
		if (!strcmp(xsb_modes[i].name, name))
			return &xsb_modes[i];
	return NULL;
}

double xsb_objective;
FILE *xsb_objective_csv;
static pthread_mutex_t xsb__csv_lock = PTHREAD_MUTEX_INITIALIZER;

static double xsb__now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --objective-csv: one row every 10 ms while the lane is open. */
static void *xsb__sample_main(void *arg)
{
	struct xsb_lane *l = arg;
	double t0 = xsb__now_s();
	while (atomic_load_explicit(&l->sampling, memory_order_relaxed)) {
		XQueueStats st;
		if (XQueueGetStats(l->xq, &st) == kXSchedSuccess) {
			pthread_mutex_lock(&xsb__csv_lock);
			fprintf(
			    xsb_objective_csv, "%s,%d,%.3f,%llu,%.1f,%.1f,%llu,%llu\n",
			    l->mode->name, l->id, xsb__now_s() - t0,
			    (unsigned long long)st.slowdown_permille,
			    (double)st.alone_unit_ns / 1000.0,
			    st.corun_budget_ns == UINT64_MAX ? -1.0
							     : (double)st.corun_budget_ns / 1000.0,
			    (unsigned long long)st.completed, (unsigned long long)st.pace_eighths);
			pthread_mutex_unlock(&xsb__csv_lock);
		}
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* --objective: the high lane's latency objective, and its sampler. */
static XResult xsb__objective(struct xsb_lane *l)
{
	if (!l->high || xsb_objective <= 0)
		return kXSchedSuccess;
	XResult r = XHintLatencyObjective(l->xq, xsb_objective);
	if (r == kXSchedSuccess && xsb_objective_csv) {
		atomic_store(&l->sampling, true);
		if (pthread_create(&l->sampler, NULL, xsb__sample_main, l))
			atomic_store(&l->sampling, false);
	}
	return r;
}

int xsb_lane_open(struct xsb_lane *l, const struct xsb_backend *be, const struct xsb_mode *m,
		  int id, enum xsb_tier tier, enum xsb_submit submit, const struct xsb_sizes *s,
		  const struct xsb_launch_cfg *cfg)
{
	memset(l, 0, sizeof(*l));
	l->id = id;
	l->tier = tier;
	l->high = tier == XSB_TIER_HIGH;
	l->submit = submit;
	l->be = be;
	l->mode = m;
	l->prio_class = m->hwprio ? (int)tier + 1 : 0;
	if (be->lane_create(l, s))
		return -1;
	if (!m->xsched)
		return 0;
	XResult r = be->hwq_create(l, &l->hwq);
	if (r != kXSchedSuccess) {
		fprintf(stderr, "xsched-bench: HwQueue for lane %d: %s\n", id, XResultName(r));
		be->lane_destroy(l);
		return -1;
	}
	int64_t level = m->level;
	if (!level && (r = HwQueueGetMaxPreemptLevel(l->hwq, &level)) != kXSchedSuccess)
		level = kPreemptLevelBlock;
	r = XQueueCreate(&l->xq, l->hwq, level, kQueueCreateFlagNone);
	if (r == kXSchedSuccess && !m->no_hints)
		r = XHintPriority(l->xq, (Priority)tier + 1);
	if (r == kXSchedSuccess && !l->high && cfg && m->level)
		r = XQueueSetLaunchConfig(l->xq, cfg->threshold, cfg->batch);
	if (r == kXSchedSuccess)
		r = xsb__objective(l);
	if (r != kXSchedSuccess) {
		fprintf(stderr, "xsched-bench: XQueue for lane %d (level %d): %s\n", id, m->level,
			XResultName(r));
		XQueueDestroy(l->xq);
		HwQueueDestroy(l->hwq);
		be->lane_destroy(l);
		l->xq = 0;
		l->hwq = 0;
		return -1;
	}
	return 0;
}

void xsb_lane_close(struct xsb_lane *l, const struct xsb_backend *be)
{
	if (atomic_exchange(&l->sampling, false))
		pthread_join(l->sampler, NULL);
	if (l->xq) {
		XResult r = XQueueDestroy(l->xq);
		if (r != kXSchedSuccess)
			fprintf(stderr, "xsched-bench: XQueueDestroy: %s\n", XResultName(r));
		r = HwQueueDestroy(l->hwq);
		if (r != kXSchedSuccess)
			fprintf(stderr, "xsched-bench: HwQueueDestroy: %s\n", XResultName(r));
		l->xq = 0;
		l->hwq = 0;
	}
	if (l->last)
		HwCommandDestroy(l->last);
	l->last = 0;
	be->lane_destroy(l);
	free(l->slots);
	l->slots = NULL;
	l->nslots = 0;
}

/* The launch callback of every op in xsched modes. */
static XResult xsb__cb(HwQueueHandle hwq, void *data)
{
	struct xsb_cbslot *slot = data;
	return slot->lane->be->launch_cb(slot->lane, hwq, slot->op, slot->last);
}

int xsb_lane_submit(struct xsb_lane *l, const struct xsb_backend *be, const struct xsb_task *t)
{
	if (!l->xq) {
		for (size_t i = 0; i < t->n; i++)
			if (be->launch(l, &t->ops[i]))
				return -1;
		l->pending_ops = t->n;
		return 0;
	}
	/* --objective: each task of the high lane is one unit of its objective (a request),
	 * paced: it may wait out a slice of its slack while the lows run (XQueueBeginUnit). */
	bool unit = l->high && xsb_objective > 0;
	XResult ur = unit ? XQueueBeginUnit(l->xq) : kXSchedSuccess;
	if (ur != kXSchedSuccess) {
		fprintf(stderr, "xsched-bench: XQueueBeginUnit on lane %d: %s\n", l->id,
			XResultName(ur));
		return -1;
	}
	if (l->nslots < t->n) {
		struct xsb_cbslot *s = realloc(l->slots, t->n * sizeof(*s));
		if (!s)
			return -1;
		l->slots = s;
		l->nslots = t->n;
	}
	for (size_t i = 0; i < t->n; i++) {
		l->slots[i].lane = l;
		l->slots[i].op = &t->ops[i];
		l->slots[i].last = i + 1 == t->n;
		HwCommandHandle cmd;
		XResult r = kXSchedErrorNotSupported;
		if (l->submit == XSB_SUBMIT_KERNEL && be->kernel_cmd)
			r = be->kernel_cmd(l, &l->slots[i], &cmd);
		if (r == kXSchedErrorNotSupported)
			r = HwCommandCreateCallback(&cmd, xsb__cb, &l->slots[i]);
		if (r == kXSchedSuccess)
			r = XQueueSubmit(l->xq, cmd);
		if (r != kXSchedSuccess) {
			fprintf(stderr, "xsched-bench: submit on lane %d: %s\n", l->id,
				XResultName(r));
			return -1;
		}
		if (i + 1 == t->n)
			l->last = cmd;
		else
			HwCommandDestroy(cmd); /* the XQueue keeps its own reference */
	}
	if (unit && (ur = XQueueEndUnit(l->xq)) != kXSchedSuccess) {
		fprintf(stderr, "xsched-bench: XQueueEndUnit on lane %d: %s\n", l->id,
			XResultName(ur));
		return -1;
	}
	return 0;
}

int xsb_lane_wait(struct xsb_lane *l, const struct xsb_backend *be)
{
	if (!l->xq) {
		l->pending_ops = 0;
		return be->sync(l);
	}
	if (!l->last)
		return 0;
	XResult r = XQueueWait(l->xq, l->last);
	HwCommandDestroy(l->last);
	l->last = 0;
	if (r != kXSchedSuccess) {
		fprintf(stderr, "xsched-bench: a command on lane %d failed: %s\n", l->id,
			XResultName(r));
		return -1;
	}
	return 0;
}

int xsb_lane_run(struct xsb_lane *l, const struct xsb_backend *be, const struct xsb_task *t)
{
	if (xsb_lane_submit(l, be, t))
		return -1;
	return xsb_lane_wait(l, be);
}
