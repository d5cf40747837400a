/* xsched-bench: the scenarios.
 *
 * Every scenario is a set of runs; a run is one mode with a set of lanes, one application
 * thread per lane. Lanes 0 .. nhigh-1 are high priority, the rest low. A run goes:
 * open the lanes (in lane order, so streams map to connections the same way in every
 * mode), each thread runs one untimed warm-up task, all meet at a barrier, the clock
 * starts, and each thread runs its loop (lanes nhigh .. nhigh+nmid-1 are of the middle
 * tier, corun only; they loop as high lanes do in open loops):
 * - closed loop (systematic, latency, overhead, tune): a high lane runs its tasks back to
 *   back (after an optional random think time); a low lane runs at least as many and
 *   goes on until every high lane is done, so no high task runs without contention;
 * - open loop (two-models, serve, corun): the high lane's requests arrive at a fixed rate
 *   (two-models) or at random, exponential gaps (serve, corun: Poisson arrivals), and a
 *   request's latency counts from its arrival; the low lanes run back to back until the
 *   duration is over;
 * - preempt: low lanes keep the device full with spin kernels; the high lane submits a
 *   stamp kernel now and then and measures submit-to-start.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum xsb__body { XSB_CLOSED, XSB_OPEN, XSB_PREEMPT };

struct xsb__run {
	struct xsb_ctx *c;
	const char *scenario;
	char config[48];
	const struct xsb_mode *mode;
	const struct xsb_launch_cfg *cfg; /* for low lanes; NULL = library default */
	enum xsb__body body;
	int nlanes, nhigh;
	int nmid; /* lanes of the middle tier, after the high ones (open loop only) */
	const struct xsb_task *task_high, *task_low;
	/* Optional, per lane: its task (else task_high or task_low) and how it submits (else
	 * callbacks). */
	const struct xsb_task *const *lane_task;
	const enum xsb_submit *lane_submit;
	int ntasks;        /* closed: tasks per high lane (and at least per low lane) */
	int ntasks_low;    /* closed: if > 0, the least a low lane runs instead */
	double think_ms;   /* closed: high lanes think U(0, think_ms) before each task */
	double duration_s; /* open */
	double rate;       /* open: high requests per second */
	double rate_mid;   /* open: mid-tier requests per second; 0 = back to back */
	bool poisson;      /* open: exponential gaps of mean 1/rate instead of fixed ones */
	double warmup_s;   /* open: low lanes run back to back this long before the clock and
			    * go on until it starts (no barrier: their queues never idle) */
	int nsamples;      /* preempt */
	int64_t spin_ns;   /* preempt */
	struct xsb_lane *lanes;
	struct xsb_samples *smp;
	pthread_barrier_t bar;
	int64_t t0;
	double cpu_cores; /* the process's CPU time over wall time, start to last thread */
	atomic_int highs_left;
	atomic_int warm_arrived; /* warm-up runs: threads done with their warm-up */
	atomic_bool go;          /* warm-up runs: t0 is set */
	atomic_bool stop;
	atomic_int err;
};

/* The run whose threads are going, for the stall hook. */
static pthread_mutex_t xsb__cur_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xsb__run *xsb__cur; /* under xsb__cur_lock */
static atomic_bool xsb__cur_stalled;

struct xsb__targ {
	struct xsb__run *r;
	int i;
};

/* One row of a results table. */
struct xsb__row {
	char mode[40];
	char cls[8];
	struct xsb_stats st;
	double thr; /* low tasks per second (low rows) */
	double total_s;
	double cpu;     /* cores busy over the run (the process's CPU time / wall time) */
	char note[200]; /* a skipped mode says why */
	bool skipped;
};

struct xsb__table {
	struct xsb__row rows[64];
	int n;
};

/* ---- threads --------------------------------------------------------------------------- */

static enum xsb_tier xsb__tier(const struct xsb__run *r, int i)
{
	return i < r->nhigh ? XSB_TIER_HIGH : i < r->nhigh + r->nmid ? XSB_TIER_MID : XSB_TIER_LOW;
}

static void xsb__record(struct xsb__run *r, int i, int task, int64_t start, int64_t end,
			int64_t extra)
{
	bool count = r->body != XSB_PREEMPT || r->lanes[i].high;
	struct xsb_sample x = {.lane = i,
			       .task = task,
			       .high = r->lanes[i].high,
			       .tier = r->lanes[i].tier,
			       .start = start,
			       .end = end,
			       .extra = extra};
	xsb_samples_add(&r->smp[i], &x);
	xsb_progress_add(count ? 1 : 0);
}

static void xsb__fail(struct xsb__run *r)
{
	atomic_store(&r->err, 1);
	atomic_store(&r->stop, true);
}

static void xsb__closed(struct xsb__run *r, int i, struct xsb_lane *l, const struct xsb_task *t,
			struct xsb_rng *rng)
{
	const struct xsb_backend *be = r->c->be;
	for (int k = 0;; k++) {
		if (atomic_load(&r->stop))
			break;
		if (l->high && k >= r->ntasks)
			break;
		if (!l->high && k >= (r->ntasks_low > 0 ? r->ntasks_low : r->ntasks) &&
		    atomic_load(&r->highs_left) == 0)
			break;
		if (l->high && r->think_ms > 0)
			xsb_sleep_ns((int64_t)(xsb_rand01(rng) * r->think_ms * 1e6));
		int64_t s = xsb_now_ns();
		if (xsb_lane_run(l, be, t)) {
			xsb__fail(r);
			break;
		}
		xsb__record(r, i, k, s, xsb_now_ns(), 0);
	}
	if (l->high)
		atomic_fetch_sub(&r->highs_left, 1);
}

static void xsb__open(struct xsb__run *r, int i, struct xsb_lane *l, const struct xsb_task *t,
		      struct xsb_rng *rng)
{
	const struct xsb_backend *be = r->c->be;
	int64_t end = r->t0 + (int64_t)(r->duration_s * 1e9);
	double next_s = 0; /* serve: the next arrival, in s after t0 */
	double rate = l->high ? r->rate : r->rate_mid;
	for (int k = 0; !atomic_load(&r->stop); k++) {
		int64_t arrival;
		if (l->tier == XSB_TIER_HIGH || (l->tier == XSB_TIER_MID && rate > 0)) {
			if (r->poisson)
				next_s += -log(1.0 - xsb_rand01(rng)) / rate;
			arrival = r->t0 + (int64_t)((r->poisson ? next_s : (double)k / rate) * 1e9);
			if (arrival >= end)
				break;
			xsb_sleep_until(arrival);
		} else {
			arrival = xsb_now_ns();
			if (arrival >= end)
				break;
		}
		if (xsb_lane_run(l, be, t)) {
			xsb__fail(r);
			break;
		}
		xsb__record(r, i, k, arrival, xsb_now_ns(), 0);
	}
}

static void xsb__preempt(struct xsb__run *r, int i, struct xsb_lane *l, const struct xsb_task *t,
			 struct xsb_rng *rng)
{
	const struct xsb_backend *be = r->c->be;
	if (!l->high) {
		for (int k = 0; !atomic_load(&r->stop); k++) {
			int64_t s = xsb_now_ns();
			if (xsb_lane_run(l, be, t)) {
				xsb__fail(r);
				break;
			}
			xsb__record(r, i, k, s, xsb_now_ns(), 0);
		}
		return;
	}
	/* Let the low lanes fill the device first. */
	if (r->nlanes > 1)
		xsb_sleep_ns(20000000 + 4 * r->spin_ns);
	struct xsb_op op = {.kind = XSB_OP_STAMP};
	struct xsb_task stamp = {.ops = &op, .n = 1};
	for (int k = 0; k < r->nsamples && !atomic_load(&r->stop); k++) {
		double lo = 2.0 * (double)r->spin_ns, span = 4.0 * (double)r->spin_ns;
		if (lo < 2e6)
			lo = 2e6;
		xsb_sleep_ns((int64_t)(lo + xsb_rand01(rng) * span));
		op.slot = k % XSB_STAMP_SLOTS;
		be->stamp_reset(op.slot);
		int64_t s = xsb_now_ns();
		if (xsb_lane_run(l, be, &stamp)) {
			xsb__fail(r);
			break;
		}
		int64_t e = xsb_now_ns();
		int64_t st = be->stamp_read(op.slot);
		if (st < 0) {
			fprintf(stderr, "xsched-bench: stamp %d was not written\n", op.slot);
			xsb__fail(r);
			break;
		}
		xsb__record(r, i, k, s, st, e - s);
	}
	atomic_store(&r->stop, true);
}

/* Warm-up runs: a low lane runs back to back for r->warmup_s, then on until the clock
 * starts, so that its queue is never idle between the warm-up and the run (MLFQ would
 * take an idle spell at a barrier for the end of a burst); other lanes wait. */
static void xsb__warm_up(struct xsb__run *r, struct xsb_lane *l, const struct xsb_task *t)
{
	bool low = l->tier == XSB_TIER_LOW;
	int64_t end = xsb_now_ns() + (int64_t)(r->warmup_s * 1e9);
	while (low && xsb_now_ns() < end && !atomic_load(&r->err))
		if (xsb_lane_run(l, r->c->be, t))
			xsb__fail(r);
	atomic_fetch_add(&r->warm_arrived, 1);
	while (!atomic_load(&r->go) && !atomic_load(&r->err)) {
		if (!low)
			xsb_sleep_ns(100000);
		else if (xsb_lane_run(l, r->c->be, t))
			xsb__fail(r);
	}
}

static void *xsb__thread(void *arg)
{
	struct xsb__targ *a = arg;
	struct xsb__run *r = a->r;
	int i = a->i;
	struct xsb_lane *l = &r->lanes[i];
	const struct xsb_backend *be = r->c->be;
	const struct xsb_task *t = r->lane_task ? r->lane_task[i]
				   : l->high    ? r->task_high
						: r->task_low;
	struct xsb_rng rng = {r->c->o->seed * 1000003u + (uint64_t)i};

	if (be->thread_init() || xsb_lane_run(l, be, t)) /* the run-up: one untimed task */
		xsb__fail(r);
	if (r->warmup_s > 0) {
		xsb__warm_up(r, l, t);
	} else {
		pthread_barrier_wait(&r->bar);
		pthread_barrier_wait(&r->bar); /* main sets t0 in between */
	}
	if (!atomic_load(&r->err)) {
		switch (r->body) {
		case XSB_CLOSED:
			xsb__closed(r, i, l, t, &rng);
			break;
		case XSB_OPEN:
			xsb__open(r, i, l, t, &rng);
			break;
		case XSB_PREEMPT:
			xsb__preempt(r, i, l, t, &rng);
			break;
		}
	} else if (l->high) {
		atomic_fetch_sub(&r->highs_left, 1);
	}
	return NULL;
}

/* Run @r: open lanes, run threads, close lanes. Samples stay in r->smp. */
static int xsb__run(struct xsb__run *r)
{
	const struct xsb_backend *be = r->c->be;
	if (r->mode->xsched && r->mode->policy) {
		XResult res = XHintSetScheduler(kSchedulerLocal, r->mode->policy);
		if (res != kXSchedSuccess) {
			fprintf(stderr, "xsched-bench: XHintSetScheduler(%d): %s\n",
				(int)r->mode->policy, XResultName(res));
			return -1;
		}
	}
	struct xsb_sizes common = {0, 0, 0};
	xsb_task_sizes(r->task_high, &common);
	if (r->task_low)
		xsb_task_sizes(r->task_low, &common);
	r->lanes = calloc((size_t)r->nlanes, sizeof(*r->lanes));
	r->smp = calloc((size_t)r->nlanes, sizeof(*r->smp));
	if (!r->lanes || !r->smp)
		xsb_die("out of memory for lanes");
	int opened = 0;
	for (; opened < r->nlanes; opened++) {
		struct xsb_sizes own = {0, 0, 0};
		if (r->lane_task)
			xsb_task_sizes(r->lane_task[opened], &own);
		if (xsb_lane_open(&r->lanes[opened], be, r->mode, opened, xsb__tier(r, opened),
				  r->lane_submit ? r->lane_submit[opened] : XSB_SUBMIT_CALLBACK,
				  r->lane_task ? &own : &common, r->cfg))
			break;
	}
	if (opened < r->nlanes) {
		for (int i = 0; i < opened; i++)
			xsb_lane_close(&r->lanes[i], be);
		free(r->lanes);
		r->lanes = NULL;
		if (r->mode->xsched && r->mode->policy)
			XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst);
		return -1;
	}
	atomic_init(&r->highs_left, r->nhigh);
	atomic_init(&r->warm_arrived, 0);
	atomic_init(&r->go, false);
	atomic_init(&r->stop, false);
	atomic_init(&r->err, 0);
	pthread_barrier_init(&r->bar, NULL, (unsigned)r->nlanes + 1);
	pthread_t *th = calloc((size_t)r->nlanes, sizeof(*th));
	struct xsb__targ *ta = calloc((size_t)r->nlanes, sizeof(*ta));
	if (!th || !ta)
		xsb_die("out of memory for threads");

	char label[128];
	snprintf(label, sizeof(label), "%s %s %s", r->scenario, r->config, r->mode->name);
	long total = 0;
	if (r->body == XSB_CLOSED)
		total =
		    (long)r->ntasks * r->nhigh +
		    (long)(r->ntasks_low > 0 ? r->ntasks_low : r->ntasks) * (r->nlanes - r->nhigh);
	else if (r->body == XSB_PREEMPT)
		total = r->nsamples;
	xsb_progress_begin(label, total, r->duration_s);
	for (int i = 0; i < r->nlanes; i++) {
		ta[i].r = r;
		ta[i].i = i;
		if (pthread_create(&th[i], NULL, xsb__thread, &ta[i]))
			xsb_die("cannot start a thread");
	}
	pthread_mutex_lock(&xsb__cur_lock);
	xsb__cur = r;
	atomic_store(&xsb__cur_stalled, false);
	pthread_mutex_unlock(&xsb__cur_lock);
	int64_t cpu0;
	if (r->warmup_s > 0) {
		while (atomic_load(&r->warm_arrived) < r->nlanes)
			xsb_sleep_ns(1000000);
		r->t0 = xsb_now_ns();
		cpu0 = xsb_cpu_ns();
		atomic_store(&r->go, true);
	} else {
		pthread_barrier_wait(&r->bar);
		r->t0 = xsb_now_ns();
		cpu0 = xsb_cpu_ns();
		pthread_barrier_wait(&r->bar);
	}
	for (int i = 0; i < r->nlanes; i++)
		pthread_join(th[i], NULL);
	int64_t wall = xsb_now_ns() - r->t0;
	r->cpu_cores = wall > 0 ? (double)(xsb_cpu_ns() - cpu0) / (double)wall : 0;
	xsb_progress_end();
	pthread_mutex_lock(&xsb__cur_lock);
	xsb__cur = NULL;
	pthread_mutex_unlock(&xsb__cur_lock);
	bool stalled = atomic_load(&xsb__cur_stalled);
	if (stalled) {
		/* The hook turned the scheduler off; the next run gets it back. */
		XResult res = XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst);
		if (res != kXSchedSuccess)
			xsb_die("cannot restart the scheduler after a stall (%s)",
				XResultName(res));
		fprintf(stderr,
			"xsched-bench: [%s] completed after the stall; its figures are "
			"left out\n",
			label);
		atomic_store(&r->err, 1);
	}
	pthread_barrier_destroy(&r->bar);
	for (int i = 0; i < r->nlanes; i++)
		xsb_lane_close(&r->lanes[i], be);
	free(th);
	free(ta);
	free(r->lanes);
	r->lanes = NULL;
	if (r->mode->xsched && r->mode->policy &&
	    XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst) != kXSchedSuccess)
		xsb_die("cannot set the scheduler back to HPF");
	return atomic_load(&r->err) ? -1 : 0;
}

void xsb_on_stall(void)
{
	pthread_mutex_lock(&xsb__cur_lock);
	struct xsb__run *r = xsb__cur;
	if (!r) {
		pthread_mutex_unlock(&xsb__cur_lock);
		return;
	}
	fprintf(stderr, "  queues of [%s %s %s]:\n", r->scenario, r->config, r->mode->name);
	for (int i = 0; i < r->nlanes; i++) {
		struct xsb_lane *l = &r->lanes[i];
		XQueueStats st;
		XQueueState state = kQueueStateUnknown;
		if (!l->xq) {
			fprintf(stderr, "    lane %2d %-4s native stream\n", i,
				l->high ? "high" : "low");
			continue;
		}
		if (XQueueGetStats(l->xq, &st) != kXSchedSuccess ||
		    XQueueQuery(l->xq, &state) != kXSchedSuccess) {
			fprintf(stderr, "    lane %2d: no statistics\n", i);
			continue;
		}
		fprintf(stderr,
			"    lane %2d %-4s %s: submitted %llu launched %llu completed %llu "
			"pending %llu in flight %llu suspensions %llu\n",
			i, l->high ? "high" : "low", state == kQueueStateIdle ? "idle " : "ready",
			(unsigned long long)st.submitted, (unsigned long long)st.launched,
			(unsigned long long)st.completed, (unsigned long long)st.pending,
			(unsigned long long)st.in_flight, (unsigned long long)st.suspensions);
	}
	atomic_store(&xsb__cur_stalled, true);
	pthread_mutex_unlock(&xsb__cur_lock);
	/* Stop the scheduler: it resumes every queue it suspended (gates open). */
	XResult res = XHintSetScheduler(kSchedulerAppManaged, kPolicyHighestPriorityFirst);
	fprintf(stderr,
		"  scheduler stopped, every queue resumed (%s); waiting for the run to "
		"finish\n",
		res == kXSchedSuccess ? "ok" : "failed");
}

static void xsb__run_free(struct xsb__run *r)
{
	if (r->smp)
		for (int i = 0; i < r->nlanes; i++)
			xsb_samples_free(&r->smp[i]);
	free(r->smp);
	r->smp = NULL;
}

/* ---- results --------------------------------------------------------------------------- */

/* Statistics of one tier of @r, its throughput (low tier) and its total time; writes the
 * samples to the JSON lines file. */
static void xsb__collect(struct xsb__run *r, enum xsb_tier tier, struct xsb__row *row)
{
	bool high = tier == XSB_TIER_HIGH;
	size_t n = 0;
	for (int i = 0; i < r->nlanes; i++)
		n += r->smp[i].n;
	double *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		xsb_die("out of memory");
	size_t m = 0;
	int64_t last = r->t0, last_all = r->t0;
	for (int i = 0; i < r->nlanes; i++) {
		for (size_t j = 0; j < r->smp[i].n; j++) {
			const struct xsb_sample *x = &r->smp[i].v[j];
			if (x->end > last_all)
				last_all = x->end;
			if (x->tier != tier)
				continue;
			double ms = (double)(x->end - x->start) / 1e6;
			v[m++] = ms;
			if (x->end > last)
				last = x->end;
			xsb_json_sample(r->scenario, r->config, r->mode->name, x, r->t0, ms);
		}
	}
	memset(row, 0, sizeof(*row));
	snprintf(row->mode, sizeof(row->mode), "%s", r->mode->name);
	snprintf(row->cls, sizeof(row->cls), "%s", xsb_tier_name(tier));
	xsb_stats_of(v, m, &row->st);
	row->total_s = (double)(last_all - r->t0) / 1e9;
	row->cpu = r->cpu_cores;
	if (tier == XSB_TIER_LOW && m && last > r->t0)
		row->thr = (double)m / ((double)(last - r->t0) / 1e9);
	free(v);
	if (high)
		xsb_plot_run(r->scenario, r->config, r->mode->name, r->smp, r->nlanes, r->t0);
	xsb_json_raw("{\"type\":\"summary\",\"scenario\":\"%s\",\"config\":\"%s\",\"mode\":\"%s\","
		     "\"class\":\"%s\",\"n\":%zu,\"p50_ms\":%.4f,\"p99_ms\":%.4f,\"max_ms\":%.4f,"
		     "\"mean_ms\":%.4f,\"tasks_per_s\":%.3f,\"total_s\":%.4f,\"cpu_cores\":%.3f}",
		     r->scenario, r->config, r->mode->name, row->cls, row->st.n, row->st.p50,
		     row->st.p99, row->st.max, row->st.mean, row->thr, row->total_s, row->cpu);
}

static struct xsb__row *xsb__table_add(struct xsb__table *t)
{
	if (t->n >= (int)(sizeof(t->rows) / sizeof(t->rows[0])))
		xsb_die("too many rows in one table");
	struct xsb__row *row = &t->rows[t->n++];
	memset(row, 0, sizeof(*row));
	return row;
}

static void xsb__skip_row(struct xsb__table *t, const char *mode, const char *why)
{
	struct xsb__row *row = xsb__table_add(t);
	snprintf(row->mode, sizeof(row->mode), "%s", mode);
	snprintf(row->note, sizeof(row->note), "%s", why);
	row->skipped = true;
}

static const struct xsb__row *xsb__find(const struct xsb__table *t, const char *mode,
					const char *cls)
{
	for (int i = 0; i < t->n; i++)
		if (!t->rows[i].skipped && !strcmp(t->rows[i].mode, mode) &&
		    !strcmp(t->rows[i].cls, cls))
			return &t->rows[i];
	return NULL;
}

/* Print @t with ratios to @alone (the high class alone; no ratios when @ratios is false)
 * and throughput relative to the native mode's low class. */
static void xsb__print_as(const struct xsb__table *t, const struct xsb_stats *alone,
			  const char *alone_label, bool ratios)
{
	const struct xsb__row *nat = xsb__find(t, "native", "low");
	printf("  %-18s %-5s %6s %9s %9s %9s %7s %7s %8s %8s %5s\n", "mode", "class", "n", "p50 ms",
	       "p99 ms", "max ms", "p50/al", "p99/al", "low thr", "total s", "cpu");
	if (alone)
		printf("  %-18s %-5s %6zu %9.3f %9.3f %9.3f %7s %7s %8s %8s %5s\n", alone_label,
		       "high", alone->n, alone->p50, alone->p99, alone->max, ratios ? "1.00" : "-",
		       ratios ? "1.00" : "-", "-", "-", "-");
	for (int i = 0; i < t->n; i++) {
		const struct xsb__row *r = &t->rows[i];
		if (r->skipped) {
			printf("  %-18s skipped: %s\n", r->mode, r->note);
			continue;
		}
		char p50r[16] = "-", p99r[16] = "-", thr[16] = "-";
		if (ratios && alone && alone->p50 > 0 && !strcmp(r->cls, "high")) {
			snprintf(p50r, sizeof(p50r), "%.2f", r->st.p50 / alone->p50);
			snprintf(p99r, sizeof(p99r), "%.2f", r->st.p99 / alone->p99);
		}
		if (!strcmp(r->cls, "low") && nat && nat->thr > 0)
			snprintf(thr, sizeof(thr), "%.3f", r->thr / nat->thr);
		printf("  %-18s %-5s %6zu %9.3f %9.3f %9.3f %7s %7s %8s %8.2f %5.2f\n", r->mode,
		       r->cls, r->st.n, r->st.p50, r->st.p99, r->st.max, p50r, p99r, thr,
		       r->total_s, r->cpu);
	}
}

static void xsb__print(const struct xsb__table *t, const struct xsb_stats *alone)
{
	xsb__print_as(t, alone, "alone", true);
}

/* The word a target line gives a row: baselines are references, "(ref)"; on a modeled
 * backend nothing is judged ("(model)"); the library's default row ("xsched") is the one
 * the targets are for, MET or MISSED; other xsched rows say "(within)" or "(over)". */
static const char *xsb__verdict(const struct xsb_ctx *c, const char *mode, bool ok)
{
	if (strncmp(mode, "xsched", 6))
		return "(ref)";
	if (c->be->modeled)
		return "(model)";
	if (!strcmp(mode, "xsched"))
		return ok ? "MET" : "MISSED";
	return ok ? "(within)" : "(over)";
}

/* The JSON value of a verdict: null where the backend cannot judge. */
static const char *xsb__met_json(const struct xsb_ctx *c, bool ok)
{
	return c->be->modeled ? "null" : ok ? "true" : "false";
}

/* The line before a scenario's target lines (the header says once that a modeled backend
 * judges nothing). */
static void xsb__targets_head(const struct xsb_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void xsb__targets_head(const struct xsb_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("  targets: ");
	vprintf(fmt, ap);
	va_end(ap);
	printf("%s\n", c->be->modeled ? " (not judged on the host model)" : "");
}

/* The CPU part of a target line: cores busy against the native row's + 0.25. Sets *ok. */
static void xsb__cpu_part(char *buf, size_t len, const struct xsb_ctx *c, const char *mode,
			  double cpu, const struct xsb__row *nat, bool *ok)
{
	*ok = !nat || cpu <= nat->cpu + 0.25;
	if (!nat || strncmp(mode, "xsched", 6))
		snprintf(buf, len, "cpu %.2f cores", cpu);
	else if (c->be->modeled)
		snprintf(buf, len, "cpu %.2f cores (native %.2f)", cpu, nat->cpu);
	else
		snprintf(buf, len, "cpu %s %.2f cores (native %.2f)", xsb__verdict(c, mode, *ok),
			 cpu, nat->cpu);
}

/* Verdicts on the targets: high p99 <= @max_ratio x alone and (when @min_thr > 0) low
 * throughput >= @min_thr of native's; CPU <= native's + 0.25 cores. */
static void xsb__verdicts(const struct xsb_ctx *c, const char *what, const struct xsb__table *t,
			  const struct xsb_stats *alone, double max_ratio, double min_thr)
{
	const struct xsb__row *nat = xsb__find(t, "native", "low");
	char thr_text[64] = "";
	if (min_thr > 0)
		snprintf(thr_text, sizeof(thr_text), " at >= %.2f of native low throughput",
			 min_thr);
	xsb__targets_head(c, "%s: high p99 <= %.2fx alone%s; cpu <= native + 0.25 cores", what,
			  max_ratio, thr_text);
	for (int i = 0; i < t->n; i++) {
		const struct xsb__row *h = &t->rows[i];
		if (h->skipped || strcmp(h->cls, "high") || !alone || alone->p99 <= 0)
			continue;
		const struct xsb__row *lo = xsb__find(t, h->mode, "low");
		double ratio = h->st.p99 / alone->p99;
		double frac = (lo && nat && nat->thr > 0) ? lo->thr / nat->thr : -1;
		bool ok = ratio <= max_ratio && (min_thr <= 0 || frac >= min_thr);
		bool cpu_ok;
		char cpu[96];
		xsb__cpu_part(cpu, sizeof(cpu), c, h->mode, h->cpu, xsb__find(t, "native", "high"),
			      &cpu_ok);
		xsb_summary_note(what, false, "xsched", h->mode, ratio, frac,
				 xsb__verdict(c, h->mode, ok));
		if (frac >= 0)
			printf("    %-18s %-8s p99 %.2fx alone, low throughput %.3f; %s\n", h->mode,
			       xsb__verdict(c, h->mode, ok), ratio, frac, cpu);
		else
			printf("    %-18s %-8s p99 %.2fx alone%s; %s\n", h->mode,
			       xsb__verdict(c, h->mode, ok), ratio,
			       min_thr > 0 ? ", low throughput n/a (no native run)" : "", cpu);
		xsb_json_raw(
		    "{\"type\":\"target\",\"what\":\"%s\",\"mode\":\"%s\",\"p99_ratio\":%.4f,"
		    "\"low_thr_frac\":%.4f,\"cpu_cores\":%.3f,\"met\":%s,\"cpu_met\":%s}",
		    what, h->mode, ratio, frac, h->cpu, xsb__met_json(c, ok),
		    xsb__met_json(c, cpu_ok));
	}
}

/* ---- shared pieces --------------------------------------------------------------------- */

static const char *xsb__mode_unavailable(const struct xsb_ctx *c, const struct xsb_mode *m)
{
	static char why[120];
	if (m->xsched && c->be->no_xsched[0])
		return c->be->no_xsched;
	if (m->xsched && m->level > c->be->max_level) {
		snprintf(why, sizeof(why), "the HwQueue's highest preemption level is Lv%d",
			 c->be->max_level);
		return why;
	}
	return NULL;
}

static const struct xsb_launch_cfg *xsb__cfg(const struct xsb_ctx *c, const struct xsb_mode *m)
{
	if (!m->xsched || !c->o->cfg_set[m->level])
		return NULL;
	return &c->o->cfg[m->level];
}

static void xsb__sgemm_task(struct xsb_task *t)
{
	memset(t, 0, sizeof(*t));
	xsb_task_gemms(t, 30, 2048, 2048, 2048);
	snprintf(t->desc, sizeof(t->desc), "30 x SGEMM 2048^3 on one stream");
}

static int xsb__tasks(const struct xsb_ctx *c, int full, int quick)
{
	if (c->o->tasks > 0)
		return c->o->tasks;
	return c->o->quick ? quick : full;
}

/* Alone: the task on one native lane. */
static int xsb__alone(struct xsb_ctx *c, const char *scenario, const struct xsb_task *t, int n,
		      struct xsb_stats *out)
{
	struct xsb__run r = {.c = c,
			     .scenario = scenario,
			     .mode = xsb_mode_find("native"),
			     .body = XSB_CLOSED,
			     .nlanes = 1,
			     .nhigh = 1,
			     .task_high = t,
			     .task_low = t,
			     .ntasks = n};
	snprintf(r.config, sizeof(r.config), "alone");
	if (xsb__run(&r)) {
		xsb__run_free(&r);
		return -1;
	}
	struct xsb__row row;
	xsb__collect(&r, XSB_TIER_HIGH, &row);
	*out = row.st;
	xsb__run_free(&r);
	return 0;
}

/* Alone, open loop: requests of @t on one native lane at @rate per second (Poisson
 * arrivals with @poisson, else at a fixed rate) for @dur seconds; the run's configuration
 * is named @config. */
static int xsb__alone_open(struct xsb_ctx *c, const char *scenario, const char *config,
			   const struct xsb_task *t, double dur, double rate, bool poisson,
			   struct xsb_stats *out)
{
	struct xsb__run r = {.c = c,
			     .scenario = scenario,
			     .mode = xsb_mode_find("native"),
			     .body = XSB_OPEN,
			     .poisson = poisson,
			     .nlanes = 1,
			     .nhigh = 1,
			     .task_high = t,
			     .task_low = t,
			     .duration_s = dur,
			     .rate = rate};
	snprintf(r.config, sizeof(r.config), "%s", config);
	int ret = xsb__run(&r);
	if (!ret) {
		struct xsb__row row;
		xsb__collect(&r, XSB_TIER_HIGH, &row);
		*out = row.st;
	}
	xsb__run_free(&r);
	return ret;
}

/* Run @base under every selected mode into @tab. */
static void xsb__modes(struct xsb_ctx *c, struct xsb__run *base, struct xsb__table *tab)
{
	for (size_t mi = 0; mi < c->o->nmodes; mi++) {
		const struct xsb_mode *m = c->o->modes[mi];
		const char *why = xsb__mode_unavailable(c, m);
		if (why) {
			xsb__skip_row(tab, m->name, why);
			continue;
		}
		struct xsb__run r = *base;
		r.mode = m;
		r.cfg = xsb__cfg(c, m);
		if (r.body == XSB_PREEMPT && c->be->calibrate && c->be->calibrate()) {
			xsb__skip_row(tab, m->name, "clock calibration failed");
			c->fails++;
			continue;
		}
		if (xsb__run(&r)) {
			xsb__skip_row(tab, m->name, "the run failed (see the errors above)");
			c->fails++;
			xsb__run_free(&r);
			continue;
		}
		if (r.nhigh > 0)
			xsb__collect(&r, XSB_TIER_HIGH, xsb__table_add(tab));
		if (r.nlanes > r.nhigh)
			xsb__collect(&r, XSB_TIER_LOW, xsb__table_add(tab));
		xsb__run_free(&r);
	}
}

static void xsb__print_cfg(const struct xsb_ctx *c)
{
	printf("  low-priority XQueues' launch config (threshold:batch):");
	for (int lv = 1; lv <= 3; lv++) {
		if (lv > c->be->max_level)
			break;
		if (c->o->cfg_set[lv])
			printf(" Lv%d %lld:%lld", lv, (long long)c->o->cfg[lv].threshold,
			       (long long)c->o->cfg[lv].batch);
		else
			printf(" Lv%d %d:%d (library default)", lv, XSCHED_DEFAULT_THRESHOLD,
			       XSCHED_DEFAULT_BATCH_SIZE);
	}
	printf("\n");
}

/* ---- systematic ------------------------------------------------------------------------ */

static struct xsb_stats xsb__sgemm_alone;
static bool xsb__sgemm_alone_done;

static int xsb__get_sgemm_alone(struct xsb_ctx *c, const struct xsb_task *t, struct xsb_stats *st)
{
	if (!xsb__sgemm_alone_done) {
		int n = c->o->quick ? 10 : 30;
		if (xsb__tasks(c, 10, 3) > n)
			n = xsb__tasks(c, 10, 3);
		if (xsb__alone(c, "alone", t, n, &xsb__sgemm_alone))
			return -1;
		xsb__sgemm_alone_done = true;
		printf("\nalone: %s, 1 thread, %zu tasks: p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
		       t->desc, xsb__sgemm_alone.n, xsb__sgemm_alone.p50, xsb__sgemm_alone.p99,
		       xsb__sgemm_alone.max);
	}
	*st = xsb__sgemm_alone;
	return 0;
}

int xsb_scenario_systematic(struct xsb_ctx *c)
{
	struct xsb_task t;
	xsb__sgemm_task(&t);
	struct xsb_stats alone;
	if (xsb__get_sgemm_alone(c, &t, &alone)) {
		xsb_task_free(&t);
		return -1;
	}
	int threads = c->o->threads > 0 ? c->o->threads : 16;
	int ntasks = xsb__tasks(c, 10, 3);
	static const int highs[2] = {1, 3};
	for (int h = 0; h < 2; h++) {
		if (highs[h] >= threads)
			continue;
		struct xsb__run base = {.c = c,
					.scenario = "systematic",
					.body = XSB_CLOSED,
					.nlanes = threads,
					.nhigh = highs[h],
					.task_high = &t,
					.task_low = &t,
					.ntasks = ntasks};
		snprintf(base.config, sizeof(base.config), "%dH+%dL", highs[h], threads - highs[h]);
		struct xsb__table tab = {.n = 0};
		xsb__modes(c, &base, &tab);
		printf("\nsystematic %s: %d threads x %d tasks, task = %s (low threads go on "
		       "until the high ones finish)\n",
		       base.config, threads, ntasks, t.desc);
		xsb__print(&tab, &alone);
		if (highs[h] == 1) {
			char what[64];
			snprintf(what, sizeof(what), "systematic %s", base.config);
			xsb__verdicts(c, what, &tab, &alone, 1.05, 0.95);
		}
	}
	xsb_task_free(&t);
	return 0;
}

/* ---- latency ----------------------------------------------------------------------------- */

int xsb_scenario_latency(struct xsb_ctx *c)
{
	struct xsb_task t;
	xsb__sgemm_task(&t);
	struct xsb_stats alone;
	if (xsb__get_sgemm_alone(c, &t, &alone)) {
		xsb_task_free(&t);
		return -1;
	}
	int threads = c->o->threads > 0 ? (c->o->threads < 8 ? c->o->threads : 8) : 8;
	if (threads < 2)
		threads = 2;
	int ntasks = xsb__tasks(c, 50, 8);
	struct xsb__run base = {.c = c,
				.scenario = "latency",
				.body = XSB_CLOSED,
				.nlanes = threads,
				.nhigh = 1,
				.task_high = &t,
				.task_low = &t,
				.ntasks = ntasks,
				.think_ms = alone.p50};
	snprintf(base.config, sizeof(base.config), "1H+%dL", threads - 1);
	struct xsb__table tab = {.n = 0};
	xsb__modes(c, &base, &tab);
	printf("\nlatency 1H+%dL: %d tasks per thread, task = %s; the high thread waits U(0, "
	       "%.1f ms) before each task\n",
	       threads - 1, ntasks, t.desc, alone.p50);
	xsb__print(&tab, &alone);
	xsb_task_free(&t);
	return 0;
}

/* ---- two models -------------------------------------------------------------------------- */

int xsb_scenario_two_models(struct xsb_ctx *c)
{
	struct xsb_task small = {0}, large = {0};
	xsb_resnet18(&small, 1);
	xsb_resnet50(&large, c->o->large_batch);
	snprintf(small.desc, sizeof(small.desc), "ResNet-18 batch 1 (%zu GEMMs, %.2f GFLOP)",
		 small.n, xsb_task_gflop(&small));
	snprintf(large.desc, sizeof(large.desc), "ResNet-50 batch %d (%zu GEMMs, %.1f GFLOP)",
		 c->o->large_batch, large.n, xsb_task_gflop(&large));
	double dur = c->o->duration_s > 0 ? c->o->duration_s : (c->o->quick ? 1.5 : 60.0);
	double alone_s = dur / 4 < 5 ? (dur < 5 ? dur : 5) : dur / 4;

	/* Alone: the small model at its rate, nothing else. */
	struct xsb_stats alone;
	if (xsb__alone_open(c, "two-models", "alone", &small, alone_s, c->o->rate, false, &alone)) {
		xsb_task_free(&small);
		xsb_task_free(&large);
		return -1;
	}

	struct xsb__run base = {.c = c,
				.scenario = "two-models",
				.body = XSB_OPEN,
				.nlanes = 2,
				.nhigh = 1,
				.task_high = &small,
				.task_low = &large,
				.duration_s = dur,
				.rate = c->o->rate};
	snprintf(base.config, sizeof(base.config), "r18b1+r50b%d", c->o->large_batch);
	struct xsb__table tab = {.n = 0};
	xsb__modes(c, &base, &tab);
	printf("\ntwo-models: high = %s at %.0f req/s (latency from arrival); low = %s back to "
	       "back; %.1f s per mode, alone %.1f s; low rows: one sample per forward pass\n",
	       small.desc, c->o->rate, large.desc, dur, alone_s);
	xsb__print(&tab, &alone);
	xsb__verdicts(c, "two-models", &tab, &alone, 1.10, 0.97);
	xsb_task_free(&small);
	xsb_task_free(&large);
	return 0;
}

/* ---- serve ----------------------------------------------------------------------------- */

/* The latency bound of the serve-like targets: max(1.5 x alone p99, @floor_ms). */
static double xsb__serve_bound(const struct xsb_stats *alone, double floor_ms)
{
	return 1.5 * alone->p99 > floor_ms ? 1.5 * alone->p99 : floor_ms;
}

/* Target lines of a serve-like table: high p99 <= max(1.5 x alone, floor) at >= 0.90 of
 * native low throughput; CPU <= native + 0.25 cores. */
static void xsb__serve_verdicts(const struct xsb_ctx *c, const char *config,
				const struct xsb__table *tab, const struct xsb_stats *alone,
				double floor_ms)
{
	double bound = xsb__serve_bound(alone, floor_ms);
	const struct xsb__row *nat = xsb__find(tab, "native", "low");
	xsb__targets_head(c,
			  "high p99 <= max(1.5 x alone p99, floor) = %.3f ms at >= 0.90 of native "
			  "low throughput; cpu <= native + 0.25 cores",
			  bound);
	for (int i = 0; i < tab->n; i++) {
		const struct xsb__row *h = &tab->rows[i];
		if (h->skipped || strcmp(h->cls, "high"))
			continue;
		const struct xsb__row *lo = xsb__find(tab, h->mode, "low");
		double frac = lo && nat && nat->thr > 0 ? lo->thr / nat->thr : -1;
		bool ok = h->st.p99 <= bound && frac >= 0.90, cpu_ok;
		char cpu[96];
		xsb__cpu_part(cpu, sizeof(cpu), c, h->mode, h->cpu,
			      xsb__find(tab, "native", "high"), &cpu_ok);
		char what[64];
		snprintf(what, sizeof(what), "serve %s", config);
		xsb_summary_note(what, false, "xsched", h->mode, h->st.p99 / alone->p99, frac,
				 xsb__verdict(c, h->mode, ok));
		printf("    %-18s %-8s p99 %.3f ms (%.2fx alone, %.2fx floor), low throughput "
		       "%.3f; %s\n",
		       h->mode, xsb__verdict(c, h->mode, ok), h->st.p99, h->st.p99 / alone->p99,
		       h->st.p99 / floor_ms, frac, cpu);
		xsb_json_raw("{\"type\":\"target\",\"what\":\"serve %s\",\"mode\":\"%s\","
			     "\"p99_ms\":%.4f,\"bound_ms\":%.4f,\"floor_ms\":%.4f,"
			     "\"low_thr_frac\":%.4f,\"cpu_cores\":%.3f,\"met\":%s,\"cpu_met\":%s}",
			     config, h->mode, h->st.p99, bound, floor_ms, frac, h->cpu,
			     xsb__met_json(c, ok), xsb__met_json(c, cpu_ok));
	}
}

/* Whether @m is one of serve's default modes: the baselines, the library's defaults and
 * the explicit levels, without the "+prio" combinations (--modes can ask for them). */
static bool xsb__serve_mode(const struct xsb_ctx *c, const struct xsb_mode *m)
{
	return c->o->modes_given || !strstr(m->name, "+prio");
}

int xsb_scenario_serve(struct xsb_ctx *c)
{
	/* A request: a chain of 20 dependent SGEMM 1024 kernels (a small model's forward). */
	struct xsb_task req = {0};
	xsb_task_gemms(&req, 20, 1024, 1024, 1024);
	snprintf(req.desc, sizeof(req.desc), "20 x SGEMM 1024^3");
	static const int lows_full[3] = {7, 15, 31}, lows_quick[1] = {7};
	static const int sizes_full[2] = {2048, 4096}, sizes_quick[1] = {4096};
	const int *lows = c->o->nlows ? c->o->lows : c->o->quick ? lows_quick : lows_full;
	const int *sizes = c->o->quick ? sizes_quick : sizes_full;
	int nl = c->o->nlows ? c->o->nlows : c->o->quick ? 1 : 3, ns = c->o->quick ? 1 : 2;
	double dur = c->o->duration_s > 0 ? c->o->duration_s : (c->o->quick ? 1.0 : 6.0);
	double rate = 40.0; /* requests per second: mean gap 25 ms */

	struct xsb_stats alone;
	if (xsb__alone_open(c, "serve", "alone", &req, dur, rate, true, &alone)) {
		xsb_task_free(&req);
		return -1;
	}
	printf("\nserve: high = %s, Poisson arrivals at %.0f/s, latency from arrival; alone p50 "
	       "%.3f ms, p99 %.3f ms (%zu requests)\n",
	       req.desc, rate, alone.p50, alone.p99, alone.n);

	for (int si = 0; si < ns; si++) {
		struct xsb_task low = {0};
		xsb_task_gemms(&low, 1, sizes[si], sizes[si], sizes[si]);
		snprintf(low.desc, sizeof(low.desc), "SGEMM %d^3", sizes[si]);
		struct xsb_stats kst;
		if (xsb__alone(c, "serve-kernel", &low, c->o->quick ? 5 : 20, &kst)) {
			xsb_task_free(&low);
			continue;
		}
		double floor_ms = alone.p99 + kst.p50;
		for (int li = 0; li < nl; li++) {
			struct xsb__run base = {.c = c,
						.scenario = "serve",
						.body = XSB_OPEN,
						.poisson = true,
						.nlanes = 1 + lows[li],
						.nhigh = 1,
						.task_high = &req,
						.task_low = &low,
						.duration_s = dur,
						.rate = rate};
			snprintf(base.config, sizeof(base.config), "1H+%dL/sgemm%d", lows[li],
				 sizes[si]);
			struct xsb__table tab = {.n = 0};
			struct xsb_opts o = *c->o;
			struct xsb_ctx cc = *c;
			cc.o = &o;
			o.nmodes = 0;
			for (size_t mi = 0; mi < c->o->nmodes; mi++)
				if (xsb__serve_mode(c, c->o->modes[mi]))
					o.modes[o.nmodes++] = c->o->modes[mi];
			xsb__modes(&cc, &base, &tab);
			c->fails = cc.fails;
			printf(
			    "\nserve %s: 1 high lane + %d low lanes of %s (%.3f ms each) back to "
			    "back; %.1f s per mode; floor = alone p99 + one low kernel = %.3f ms\n",
			    base.config, lows[li], low.desc, kst.p50, dur, floor_ms);
			xsb__print(&tab, &alone);
			xsb__serve_verdicts(c, base.config, &tab, &alone, floor_ms);
		}
		xsb_task_free(&low);
	}
	xsb_task_free(&req);
	return 0;
}

/* ---- corun ------------------------------------------------------------------------------- */

/* What the low lanes of corun run, lane by lane. Each kind's share is measured against its
 * own task time alone, so lanes of different command sizes compare. */
enum xsb__lk { XSB_LK_SGEMM, XSB_LK_STREAM_KERN, XSB_LK_STREAM_CB, XSB_LK_MIX, XSB_LK_N };

static const char *const xsb__lk_name[XSB_LK_N] = {"sgemm-cb", "stream-kern", "stream-cb", "mixed"};

/* A corun shape: the high request (a chain of SGEMM 1024 launch callbacks, or a chain of
 * streaming kernel commands) and the low lanes' work (compute-bound, memory-bound, or a
 * mix of both and of both command kinds). */
struct xsb__shape {
	const char *name;
	bool high_stream;
	int low; /* 0 compute, 1 memory, 2 mixed */
};

static const struct xsb__shape xsb__shapes[] = {
    {"stream-mixed", true, 2},
    {"gemm-mixed", false, 2},
    {"stream-memory", true, 1},
    {"gemm-compute", false, 0},
};
#define XSB__NSHAPES (sizeof(xsb__shapes) / sizeof(xsb__shapes[0]))

const char *xsb_corun_shape_name(size_t i)
{
	return i < XSB__NSHAPES ? xsb__shapes[i].name : NULL;
}

static enum xsb__lk xsb__lane_kind(const struct xsb__shape *sh, int j)
{
	if (sh->low == 0)
		return XSB_LK_SGEMM;
	if (sh->low == 1)
		return j % 2 ? XSB_LK_STREAM_CB : XSB_LK_STREAM_KERN;
	return (enum xsb__lk)(j % 4);
}

/* Whether @m is one of corun's default modes: the baselines, the library's defaults and
 * Lv1 (--modes chooses others). */
static bool xsb__corun_mode(const struct xsb_ctx *c, const struct xsb_mode *m)
{
	if (c->o->modes_given)
		return true;
	return !strcmp(m->name, "native") || !strcmp(m->name, "native-prio") ||
	       !strcmp(m->name, "xsched") || !strcmp(m->name, "xsched-lv1");
}

/* The work of corun, made once, and what it takes alone (measured once per program run). */
struct xsb__corun_work {
	struct xsb_task high[2]; /* [0] SGEMM chain, [1] streaming chain */
	struct xsb_task mid;
	struct xsb_task low[XSB_LK_N];
	struct xsb_task kern[2]; /* one low kernel: [0] SGEMM 2048, [1] streaming */
	struct xsb_stats high_alone[2];
	double low_alone_ms[XSB_LK_N];
	double kern_ms[2];
	bool high_done[2], low_done;
};

/* One mode's row of a corun table. */
struct xsb__crow {
	char mode[40];
	bool skipped;
	char note[200];
	struct xsb_stats hi, mid;
	double work;               /* low lanes' work per second, in alone device-seconds */
	double lane_min, lane_max; /* least and greatest lane share over the lanes' mean */
	int zero;                  /* low lanes that completed nothing */
	double cpu;
};

static int xsb__corun_alone(struct xsb_ctx *c, struct xsb__corun_work *w, int hk, double dur,
			    double rate)
{
	if (w->high_done[hk])
		return 0;
	char config[48];
	snprintf(config, sizeof(config), "%s/alone", hk ? "stream" : "gemm");
	int ret =
	    xsb__alone_open(c, "corun", config, &w->high[hk], dur, rate, true, &w->high_alone[hk]);
	if (!ret)
		w->high_done[hk] = true;
	return ret;
}

static int xsb__corun_low_alone(struct xsb_ctx *c, struct xsb__corun_work *w)
{
	if (w->low_done)
		return 0;
	int n = c->o->quick ? 5 : 20;
	struct xsb_stats st;
	for (int k = 0; k < XSB_LK_N; k++) {
		if (k == XSB_LK_STREAM_CB) { /* the same work as stream-kern, natively */
			w->low_alone_ms[k] = w->low_alone_ms[XSB_LK_STREAM_KERN];
			continue;
		}
		if (xsb__alone(c, "corun-alone", &w->low[k], n, &st))
			return -1;
		w->low_alone_ms[k] = st.p50;
	}
	for (int k = 0; k < 2; k++) {
		if (xsb__alone(c, "corun-alone", &w->kern[k], n, &st))
			return -1;
		w->kern_ms[k] = st.p50;
	}
	w->low_done = true;
	return 0;
}

/* Fill @row from run @r: the high and mid latencies, the low lanes' shares (tasks times
 * the kind's alone time, per second of the run), the CPU. */
static void xsb__corun_row(struct xsb__run *r, const struct xsb__corun_work *w,
			   const struct xsb__shape *sh, struct xsb__crow *row)
{
	struct xsb__row tmp;
	xsb__collect(r, XSB_TIER_HIGH, &tmp);
	row->hi = tmp.st;
	xsb__collect(r, XSB_TIER_MID, &tmp);
	row->mid = tmp.st;
	xsb__collect(r, XSB_TIER_LOW, &tmp);
	row->cpu = r->cpu_cores;
	int first = r->nhigh + r->nmid, nlow = r->nlanes - first;
	int64_t last = r->t0;
	for (int i = first; i < r->nlanes; i++)
		for (size_t j = 0; j < r->smp[i].n; j++)
			if (r->smp[i].v[j].end > last)
				last = r->smp[i].v[j].end;
	double win_s = (double)(last - r->t0) / 1e9;
	double *share = calloc((size_t)nlow, sizeof(*share));
	if (!share)
		xsb_die("out of memory");
	double sum = 0;
	for (int i = first; i < r->nlanes; i++) {
		enum xsb__lk k = xsb__lane_kind(sh, i - first);
		share[i - first] =
		    win_s > 0 ? (double)r->smp[i].n * w->low_alone_ms[k] / 1e3 / win_s : 0;
		sum += share[i - first];
	}
	double mean = nlow ? sum / nlow : 0;
	row->work = sum;
	row->lane_min = row->lane_max = 0;
	row->zero = 0;
	for (int i = 0; i < nlow; i++) {
		double q = mean > 0 ? share[i] / mean : 0;
		if (i == 0 || q < row->lane_min)
			row->lane_min = q;
		if (i == 0 || q > row->lane_max)
			row->lane_max = q;
		row->zero += r->smp[first + i].n == 0;
	}
	/* One JSON line per mode with every low lane. */
	if (xsb_out.jsonl) {
		/* At most 160 characters a lane; a lane that would not fit is left out. */
		size_t cap = 64 + (size_t)nlow * 160, len = 0;
		char *lanes = malloc(cap);
		if (!lanes)
			xsb_die("out of memory");
		lanes[0] = '\0';
		for (int i = 0; i < nlow && len < cap; i++)
			len += (size_t)snprintf(
			    lanes + len, cap - len,
			    "%s{\"lane\":%d,\"kind\":\"%s\",\"tasks\":%zu,\"tasks_per_s\":%.3f,"
			    "\"share\":%.4f}",
			    i ? "," : "", first + i, xsb__lk_name[xsb__lane_kind(sh, i)],
			    r->smp[first + i].n,
			    win_s > 0 ? (double)r->smp[first + i].n / win_s : 0,
			    mean > 0 ? share[i] / mean : 0);
		xsb_json_raw(
		    "{\"type\":\"corun\",\"config\":\"%s\",\"mode\":\"%s\",\"high_p50_ms\":%.4f,"
		    "\"high_p99_ms\":%.4f,\"mid_p50_ms\":%.4f,\"mid_p99_ms\":%.4f,"
		    "\"low_work\":%.4f,\"cpu_cores\":%.3f,\"lanes\":[%s]}",
		    r->config, r->mode->name, row->hi.p50, row->hi.p99, row->mid.p50, row->mid.p99,
		    row->work, row->cpu, lanes);
		free(lanes);
	}
	free(share);
}

static const struct xsb__crow *xsb__crow_find(const struct xsb__crow *rows, int n, const char *mode)
{
	for (int i = 0; i < n; i++)
		if (!rows[i].skipped && !strcmp(rows[i].mode, mode))
			return &rows[i];
	return NULL;
}

/* The table and target lines of one corun configuration. */
static void xsb__corun_print(const struct xsb_ctx *c, const char *config,
			     const struct xsb__crow *rows, int n, const struct xsb_stats *alone,
			     double floor_ms)
{
	const struct xsb__crow *nat = xsb__crow_find(rows, n, "native");
	printf("  %-18s %9s %9s %7s %7s %9s %8s %8s %8s %5s\n", "mode", "high p50", "high p99",
	       "p99/al", "p99/fl", "mid p99", "low thr", "lane min", "lane max", "cpu");
	printf("  %-18s %9.3f %9.3f %7s %7.2f %9s %8s %8s %8s %5s\n", "alone", alone->p50,
	       alone->p99, "1.00", alone->p99 / floor_ms, "-", "-", "-", "-", "-");
	for (int i = 0; i < n; i++) {
		const struct xsb__crow *r = &rows[i];
		if (r->skipped) {
			printf("  %-18s skipped: %s\n", r->mode, r->note);
			continue;
		}
		char thr[16] = "-";
		if (nat && nat->work > 0)
			snprintf(thr, sizeof(thr), "%.3f", r->work / nat->work);
		printf("  %-18s %9.3f %9.3f %7.2f %7.2f %9.3f %8s %8.2f %8.2f %5.2f\n", r->mode,
		       r->hi.p50, r->hi.p99, alone->p99 > 0 ? r->hi.p99 / alone->p99 : 0,
		       r->hi.p99 / floor_ms, r->mid.p99, thr, r->lane_min, r->lane_max, r->cpu);
	}
	double bound = xsb__serve_bound(alone, floor_ms);
	xsb__targets_head(
	    c,
	    "high p99 <= max(1.5 x alone p99, floor) = %.3f ms at >= 0.90 of native "
	    "low throughput; cpu <= native + 0.25 cores; each low lane within [0.5, 2] "
	    "x the lanes' mean, none at 0",
	    bound);
	for (int i = 0; i < n; i++) {
		const struct xsb__crow *r = &rows[i];
		if (r->skipped)
			continue;
		double frac = nat && nat->work > 0 ? r->work / nat->work : -1;
		bool ok = r->hi.p99 <= bound && frac >= 0.90, cpu_ok;
		bool fair = r->lane_min >= 0.5 && r->lane_max <= 2.0 && !r->zero;
		char cpu[96];
		struct xsb__row nrow = {.cpu = nat ? nat->cpu : 0};
		xsb__cpu_part(cpu, sizeof(cpu), c, r->mode, r->cpu, nat ? &nrow : NULL, &cpu_ok);
		char what[64];
		snprintf(what, sizeof(what), "corun %s", config);
		xsb_summary_note(what, false, "xsched", r->mode,
				 alone->p99 > 0 ? r->hi.p99 / alone->p99 : 0, frac,
				 xsb__verdict(c, r->mode, ok));
		const char *fv = strncmp(r->mode, "xsched", 6) || c->be->modeled
				     ? ""
				     : xsb__verdict(c, r->mode, fair);
		printf("    %-18s %-8s p99 %.3f ms (%.2fx alone), low throughput %.3f; %s; lanes "
		       "%s%s%.2f .. %.2f x mean, %d at 0\n",
		       r->mode, xsb__verdict(c, r->mode, ok), r->hi.p99,
		       alone->p99 > 0 ? r->hi.p99 / alone->p99 : 0, frac, cpu, fv, *fv ? " " : "",
		       r->lane_min, r->lane_max, r->zero);
		xsb_json_raw("{\"type\":\"target\",\"what\":\"corun %s\",\"mode\":\"%s\","
			     "\"p99_ms\":%.4f,\"bound_ms\":%.4f,\"floor_ms\":%.4f,"
			     "\"low_thr_frac\":%.4f,\"cpu_cores\":%.3f,\"lane_min\":%.4f,"
			     "\"lane_max\":%.4f,\"lanes_at_0\":%d,\"met\":%s,\"cpu_met\":%s,"
			     "\"fair_met\":%s}",
			     config, r->mode, r->hi.p99, bound, floor_ms, frac, r->cpu, r->lane_min,
			     r->lane_max, r->zero, xsb__met_json(c, ok), xsb__met_json(c, cpu_ok),
			     xsb__met_json(c, fair));
	}
}

/* One configuration: @sh with @nlow low lanes, under every corun mode. */
static void xsb__corun_config(struct xsb_ctx *c, struct xsb__corun_work *w,
			      const struct xsb__shape *sh, int nlow, double dur, double rate,
			      double rate_mid)
{
	int hk = sh->high_stream ? 1 : 0;
	int nlanes = 2 + nlow;
	const struct xsb_task **tasks = calloc((size_t)nlanes, sizeof(*tasks));
	enum xsb_submit *sub = calloc((size_t)nlanes, sizeof(*sub));
	struct xsb__crow *rows = calloc(c->o->nmodes, sizeof(*rows));
	if (!tasks || !sub || !rows)
		xsb_die("out of memory");
	tasks[0] = &w->high[hk];
	sub[0] = hk ? XSB_SUBMIT_KERNEL : XSB_SUBMIT_CALLBACK;
	tasks[1] = &w->mid;
	sub[1] = XSB_SUBMIT_CALLBACK;
	int count[XSB_LK_N] = {0};
	for (int j = 0; j < nlow; j++) {
		enum xsb__lk k = xsb__lane_kind(sh, j);
		tasks[2 + j] = &w->low[k];
		sub[2 + j] = k == XSB_LK_STREAM_KERN || k == XSB_LK_MIX ? XSB_SUBMIT_KERNEL
									: XSB_SUBMIT_CALLBACK;
		count[k]++;
	}
	/* One low kernel: the longest single kernel of the low lanes. */
	int kk = sh->low == 1 ? 1 : 0;
	double floor_ms = w->high_alone[hk].p99 + w->kern_ms[kk];
	struct xsb__run base = {.c = c,
				.scenario = "corun",
				.body = XSB_OPEN,
				.poisson = true,
				.nlanes = nlanes,
				.nhigh = 1,
				.nmid = 1,
				.task_high = &w->high[hk],
				.task_low = &w->low[0],
				.lane_task = tasks,
				.lane_submit = sub,
				.duration_s = dur,
				.rate = rate,
				.rate_mid = rate_mid};
	snprintf(base.config, sizeof(base.config), "%s/%s-1H+1M+%dL", hk ? "stream" : "gemm",
		 strchr(sh->name, '-') + 1, nlow);
	int n = 0;
	for (size_t mi = 0; mi < c->o->nmodes; mi++) {
		const struct xsb_mode *m = c->o->modes[mi];
		if (!xsb__corun_mode(c, m))
			continue;
		struct xsb__crow *row = &rows[n++];
		snprintf(row->mode, sizeof(row->mode), "%s", m->name);
		const char *why = xsb__mode_unavailable(c, m);
		if (why) {
			row->skipped = true;
			snprintf(row->note, sizeof(row->note), "%s", why);
			continue;
		}
		struct xsb__run r = base;
		r.mode = m;
		r.cfg = xsb__cfg(c, m);
		if (xsb__run(&r)) {
			row->skipped = true;
			snprintf(row->note, sizeof(row->note),
				 "the run failed (see the errors above)");
			c->fails++;
		} else {
			xsb__corun_row(&r, w, sh, row);
		}
		xsb__run_free(&r);
	}
	char mid_when[48] = "back to back (always busy)";
	if (rate_mid > 0)
		snprintf(mid_when, sizeof(mid_when), "Poisson at %.0f/s", rate_mid);
	printf("\ncorun %s: 1 high, 1 mid and %d low lanes, %.1f s per mode\n"
	       "  high: %s, Poisson arrivals at %.0f/s; mid: %s (callbacks), %s\n"
	       "  low, back to back:",
	       base.config, nlow, dur, w->high[hk].desc, rate, w->mid.desc, mid_when);
	const char *sep = "";
	for (int k = 0; k < XSB_LK_N; k++)
		if (count[k]) {
			printf("%s %d %s (%s, %.3f ms alone)", sep, count[k], xsb__lk_name[k],
			       w->low[k].desc, w->low_alone_ms[k]);
			sep = ",";
		}
	printf("\n  floor = alone p99 + one low kernel (%s, %.3f ms) = %.3f ms\n", w->kern[kk].desc,
	       w->kern_ms[kk], floor_ms);
	xsb__corun_print(c, base.config, rows, n, &w->high_alone[hk], floor_ms);
	free(tasks);
	free(sub);
	free(rows);
}

static bool xsb__shape_selected(const struct xsb_ctx *c, const struct xsb__shape *sh)
{
	const char *list = c->o->shapes;
	if (!list)
		return c->o->quick ? sh->low == 2 : true;
	size_t n = strlen(sh->name);
	for (const char *p = list; (p = strstr(p, sh->name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

int xsb_scenario_corun(struct xsb_ctx *c)
{
	static const int lows_full[3] = {7, 31, 127}, lows_quick[2] = {7, 31};
	const int *lows = c->o->nlows ? c->o->lows : c->o->quick ? lows_quick : lows_full;
	int nl = c->o->nlows ? c->o->nlows : c->o->quick ? 2 : 3;
	double dur = c->o->duration_s > 0 ? c->o->duration_s : (c->o->quick ? 1.0 : 6.0);
	double rate = 40.0, rate_mid = c->o->rate_mid;
	struct xsb__corun_work w;
	memset(&w, 0, sizeof(w));
	xsb_task_gemms(&w.high[0], 20, 1024, 1024, 1024);
	snprintf(w.high[0].desc, sizeof(w.high[0].desc), "20 x SGEMM 1024^3 (callbacks)");
	xsb_task_streams(&w.high[1], 96);
	snprintf(w.high[1].desc, sizeof(w.high[1].desc), "96 x streaming kernel (kernel commands)");
	xsb_task_gemms(&w.mid, 4, 2048, 2048, 2048);
	snprintf(w.mid.desc, sizeof(w.mid.desc), "4 x SGEMM 2048^3");
	xsb_task_gemms(&w.low[XSB_LK_SGEMM], 1, 2048, 2048, 2048);
	snprintf(w.low[XSB_LK_SGEMM].desc, sizeof(w.low[0].desc), "SGEMM 2048^3");
	for (int k = XSB_LK_STREAM_KERN; k <= XSB_LK_STREAM_CB; k++) {
		xsb_task_streams(&w.low[k], 10);
		snprintf(w.low[k].desc, sizeof(w.low[k].desc), "10 x streaming");
	}
	xsb_task_gemms(&w.low[XSB_LK_MIX], 1, 2048, 2048, 2048);
	xsb_task_streams(&w.low[XSB_LK_MIX], 5);
	snprintf(w.low[XSB_LK_MIX].desc, sizeof(w.low[0].desc),
		 "SGEMM 2048^3 + 5 x streaming as kernel commands");
	xsb_task_gemms(&w.kern[0], 1, 2048, 2048, 2048);
	snprintf(w.kern[0].desc, sizeof(w.kern[0].desc), "SGEMM 2048^3");
	xsb_task_streams(&w.kern[1], 1);
	snprintf(w.kern[1].desc, sizeof(w.kern[1].desc), "streaming kernel, %d MiB each way",
		 (int)((size_t)XSB_STREAM_FLOATS * 4 >> 20));

	int ret = xsb__corun_low_alone(c, &w);
	if (!ret)
		printf(
		    "\ncorun: 1 high lane and 1 mid lane (open loop, latency from arrival), N low "
		    "lanes (back to back), streams made by the application without priority; "
		    "one low kernel alone: %s %.3f ms, %s %.3f ms. Columns: low thr = the low "
		    "lanes' work (tasks x their alone time) over native's; lane min/max = a "
		    "lane's share over the lanes' mean; cpu = cores busy\n",
		    w.kern[0].desc, w.kern_ms[0], w.kern[1].desc, w.kern_ms[1]);
	for (size_t s = 0; !ret && s < XSB__NSHAPES; s++) {
		const struct xsb__shape *sh = &xsb__shapes[s];
		if (!xsb__shape_selected(c, sh))
			continue;
		int hk = sh->high_stream ? 1 : 0;
		if (xsb__corun_alone(c, &w, hk, dur, rate)) {
			ret = -1;
			break;
		}
		for (int li = 0; li < nl; li++)
			xsb__corun_config(c, &w, sh, lows[li], dur, rate, rate_mid);
	}
	for (int k = 0; k < 2; k++) {
		xsb_task_free(&w.high[k]);
		xsb_task_free(&w.kern[k]);
	}
	xsb_task_free(&w.mid);
	for (int k = 0; k < XSB_LK_N; k++)
		xsb_task_free(&w.low[k]);
	return ret;
}

/* ---- mlfq -------------------------------------------------------------------------------- */

/* The modes of mlfq: no XQueue gets a priority hint. native-prio is the reference that
 * does get one: the short lane's stream has the greatest hardware priority. */
static const struct xsb_mode xsb__mlfq_modes[] = {
    {.name = "xsched-hpf", .xsched = true, .policy = kPolicyHighestPriorityFirst, .no_hints = true},
    {.name = "xsched-mlfq",
     .xsched = true,
     .policy = kPolicyMultiLevelFeedbackQueue,
     .no_hints = true},
};

/* Target lines of mlfq: on the MLFQ row, short p99 <= max(2 x alone p99, floor) at >= 0.85
 * of native long-lane throughput; the other rows are references. */
static void xsb__mlfq_verdicts(const struct xsb_ctx *c, const char *config,
			       const struct xsb__table *tab, const struct xsb_stats *alone,
			       double floor_ms)
{
	double bound = 2 * alone->p99 > floor_ms ? 2 * alone->p99 : floor_ms;
	const struct xsb__row *nat = xsb__find(tab, "native", "low");
	xsb__targets_head(c,
			  "xsched-mlfq, no hints: short p99 <= max(2 x alone p99, floor) = %.3f "
			  "ms at >= 0.85 of native long-lane throughput",
			  bound);
	for (int i = 0; i < tab->n; i++) {
		const struct xsb__row *h = &tab->rows[i];
		if (h->skipped || strcmp(h->cls, "high"))
			continue;
		const struct xsb__row *lo = xsb__find(tab, h->mode, "low");
		double frac = lo && nat && nat->thr > 0 ? lo->thr / nat->thr : -1;
		bool ok = h->st.p99 <= bound && frac >= 0.85;
		bool target = !strcmp(h->mode, "xsched-mlfq");
		const char *word = !target          ? "(ref)"
				   : c->be->modeled ? "(model)"
				   : ok             ? "MET"
						    : "MISSED";
		char what[64];
		snprintf(what, sizeof(what), "mlfq %s", config);
		xsb_summary_note(what, false, "xsched-mlfq", h->mode, h->st.p99 / alone->p99, frac,
				 word);
		printf("    %-18s %-8s p99 %.3f ms (%.2fx alone, %.2fx floor), long throughput "
		       "%.3f%s\n",
		       h->mode, word, h->st.p99, h->st.p99 / alone->p99, h->st.p99 / floor_ms, frac,
		       !strcmp(h->mode, "native-prio")
			   ? " (a hint: the short stream at the greatest hardware priority)"
			   : "");
		xsb_json_raw("{\"type\":\"target\",\"what\":\"mlfq %s\",\"mode\":\"%s\","
			     "\"p99_ms\":%.4f,\"bound_ms\":%.4f,\"floor_ms\":%.4f,"
			     "\"low_thr_frac\":%.4f,\"cpu_cores\":%.3f,\"met\":%s}",
			     config, h->mode, h->st.p99, bound, floor_ms, frac, h->cpu,
			     target ? xsb__met_json(c, ok) : "null");
	}
}

int xsb_scenario_mlfq(struct xsb_ctx *c)
{
	/* A short request: a chain of 20 dependent SGEMM 1024 kernels, as serve's. */
	struct xsb_task req = {0};
	xsb_task_gemms(&req, 20, 1024, 1024, 1024);
	snprintf(req.desc, sizeof(req.desc), "20 x SGEMM 1024^3");
	struct xsb_task low = {0};
	xsb_task_gemms(&low, 1, 2048, 2048, 2048);
	snprintf(low.desc, sizeof(low.desc), "SGEMM 2048^3");
	static const int lows_def[1] = {7};
	const int *lows = c->o->nlows ? c->o->lows : lows_def;
	int nl = c->o->nlows ? c->o->nlows : 1;
	double dur = c->o->duration_s > 0 ? c->o->duration_s : (c->o->quick ? 1.0 : 6.0);
	double rate = 40.0;                    /* requests per second: mean gap 25 ms */
	double warm = c->o->quick ? 0.2 : 0.5; /* long lanes before the clock starts */
	struct xsb_stats alone, kst;
	int ret = xsb__alone_open(c, "mlfq", "alone", &req, dur, rate, true, &alone);
	if (!ret)
		ret = xsb__alone(c, "mlfq-kernel", &low, c->o->quick ? 5 : 20, &kst);
	if (ret) {
		xsb_task_free(&req);
		xsb_task_free(&low);
		return -1;
	}
	double floor_ms = alone.p99 + kst.p50;
	printf("\nmlfq: no priority hints at all. A short request stream (%s, Poisson arrivals "
	       "at %.0f/s, latency from arrival; alone p50 %.3f ms, p99 %.3f ms) beside long "
	       "lanes of %s (%.3f ms each) back to back, which run %.1f s before the clock "
	       "starts. Class high = the short stream, low = the long lanes. Modes: native; "
	       "native-prio, the reference WITH a hint (the short stream at the greatest "
	       "hardware priority); xsched-hpf, every XQueue at the default priority (HPF: "
	       "all equal); xsched-mlfq (XHintSetScheduler MLFQ, no hints)\n",
	       req.desc, rate, alone.p50, alone.p99, low.desc, kst.p50, warm);
	static const char *const base_modes[] = {"native", "native-prio"};
	const struct xsb_mode *modes[4];
	size_t nm = 0;
	for (size_t i = 0; i < 2; i++)
		modes[nm++] = xsb_mode_find(base_modes[i]);
	for (size_t i = 0; i < 2; i++)
		modes[nm++] = &xsb__mlfq_modes[i];
	for (int li = 0; li < nl; li++) {
		struct xsb__run base = {.c = c,
					.scenario = "mlfq",
					.body = XSB_OPEN,
					.poisson = true,
					.nlanes = 1 + lows[li],
					.nhigh = 1,
					.task_high = &req,
					.task_low = &low,
					.duration_s = dur,
					.rate = rate,
					.warmup_s = warm};
		snprintf(base.config, sizeof(base.config), "1S+%dL/sgemm2048", lows[li]);
		struct xsb__table tab = {.n = 0};
		struct xsb_opts o = *c->o;
		struct xsb_ctx cc = *c;
		cc.o = &o;
		o.nmodes = nm;
		for (size_t mi = 0; mi < nm; mi++)
			o.modes[mi] = modes[mi];
		xsb__modes(&cc, &base, &tab);
		c->fails = cc.fails;
		printf("\nmlfq %s: 1 short lane + %d long lanes; %.1f s per mode; floor = alone "
		       "p99 + one long kernel = %.3f ms\n",
		       base.config, lows[li], dur, floor_ms);
		xsb__print(&tab, &alone);
		xsb__mlfq_verdicts(c, base.config, &tab, &alone, floor_ms);
	}
	xsb_task_free(&req);
	xsb_task_free(&low);
	return 0;
}

/* ---- preempt ----------------------------------------------------------------------------- */

/* Target lines of preempt: submit-to-start p50 <= native-prio's. */
static void xsb__preempt_verdicts(const struct xsb_ctx *c, const char *config,
				  const struct xsb__table *tab)
{
	const struct xsb__row *ref = xsb__find(tab, "native-prio", "high");
	if (!ref)
		return;
	xsb__targets_head(c, "submit-to-start p50 <= native-prio's (%.3f ms)", ref->st.p50);
	for (int i = 0; i < tab->n; i++) {
		const struct xsb__row *h = &tab->rows[i];
		if (h->skipped || strcmp(h->cls, "high"))
			continue;
		bool ok = h->st.p50 <= ref->st.p50;
		char what[64];
		snprintf(what, sizeof(what), "preempt %s", config);
		xsb_summary_note(what, true, "xsched", h->mode, h->st.p50, -1,
				 xsb__verdict(c, h->mode, ok));
		printf("    %-18s %-8s p50 %.3f ms (%.2fx native-prio)\n", h->mode,
		       xsb__verdict(c, h->mode, ok), h->st.p50,
		       ref->st.p50 > 0 ? h->st.p50 / ref->st.p50 : 0);
		xsb_json_raw("{\"type\":\"target\",\"what\":\"preempt %s\",\"mode\":\"%s\","
			     "\"p50_ms\":%.4f,\"ref_p50_ms\":%.4f,\"met\":%s}",
			     config, h->mode, h->st.p50, ref->st.p50, xsb__met_json(c, ok));
	}
}

int xsb_scenario_preempt(struct xsb_ctx *c)
{
	static const int64_t spins[2] = {500000, 5000000};
	int nlow = 4, k = 4;
	int n = xsb__tasks(c, 100, 20);
	printf("\npreempt: time from a high-priority submit to the start of its kernel, while %d "
	       "low lanes keep the device full (each submits %d spin kernels, waits, repeats); "
	       "%d samples, the high thread waits U(2, 6) x the spin time (at least 2 ms) "
	       "between them. Kernel start: %s.\n",
	       nlow, k, n, c->be->stamp_method);
	for (int d = 0; d < 2; d++) {
		struct xsb_op spin = {.kind = XSB_OP_SPIN, .ns = spins[d]};
		struct xsb_task low = {0};
		for (int i = 0; i < k; i++)
			xsb_task_push(&low, &spin);
		struct xsb_op stamp = {.kind = XSB_OP_STAMP};
		struct xsb_task high = {.ops = &stamp, .n = 1};
		struct xsb__run base = {.c = c,
					.scenario = "preempt",
					.body = XSB_PREEMPT,
					.nlanes = 1 + nlow,
					.nhigh = 1,
					.task_high = &high,
					.task_low = &low,
					.nsamples = n,
					.spin_ns = spins[d]};
		snprintf(base.config, sizeof(base.config), "spin%.1fms", (double)spins[d] / 1e6);
		struct xsb__table tab = {.n = 0};
		/* Idle device: the same measure with nothing else running. */
		struct xsb__run ir = base;
		ir.mode = xsb_mode_find("native");
		ir.nlanes = 1;
		snprintf(ir.config, sizeof(ir.config), "idle");
		struct xsb_stats idle = {0};
		if (c->be->calibrate && c->be->calibrate())
			c->fails++;
		if (!xsb__run(&ir)) {
			struct xsb__row row;
			xsb__collect(&ir, XSB_TIER_HIGH, &row);
			idle = row.st;
		}
		xsb__run_free(&ir);
		xsb__modes(c, &base, &tab);
		printf("\npreempt, low kernels of %.1f ms: high rows = submit-to-start in ms; low "
		       "rows = one sample per low task of %d kernels\n",
		       (double)spins[d] / 1e6, k);
		xsb__print_as(&tab, &idle, "idle device", false);
		xsb__preempt_verdicts(c, base.config, &tab);
		xsb_task_free(&low);
	}
	return 0;
}

/* ---- overhead ---------------------------------------------------------------------------- */

int xsb_scenario_overhead(struct xsb_ctx *c)
{
	struct xsb_task t;
	xsb__sgemm_task(&t);
	struct xsb_op stamp = {.kind = XSB_OP_STAMP, .slot = XSB_STAMP_SLOTS - 1};
	struct xsb_task tiny = {0};
	int ntiny = 256;
	for (int i = 0; i < ntiny; i++)
		xsb_task_push(&tiny, &stamp);
	snprintf(tiny.desc, sizeof(tiny.desc), "%d tiny kernels", ntiny);
	int n = xsb__tasks(c, 50, 10);
	printf("\noverhead: one lane alone, raw stream (native) vs through an XQueue; %d tasks "
	       "each of %s and of %s\n",
	       n, t.desc, tiny.desc);
	printf("  %-18s %11s %11s %8s %14s %14s\n", "mode", "sgemm p50", "sgemm p99", "vs nat",
	       "tiny us/kernel", "vs native");
	double nat_sg = 0, nat_tiny = 0;
	for (size_t mi = 0; mi < c->o->nmodes; mi++) {
		const struct xsb_mode *m = c->o->modes[mi];
		if (m->hwprio)
			continue; /* one lane: priority changes nothing */
		const char *why = xsb__mode_unavailable(c, m);
		if (why) {
			printf("  %-18s skipped: %s\n", m->name, why);
			continue;
		}
		struct xsb_stats st[2];
		const struct xsb_task *tasks[2] = {&t, &tiny};
		bool ok = true;
		for (int w = 0; w < 2 && ok; w++) {
			struct xsb__run r = {.c = c,
					     .scenario = "overhead",
					     .mode = m,
					     .cfg = xsb__cfg(c, m),
					     .body = XSB_CLOSED,
					     .nlanes = 1,
					     .nhigh = 1,
					     .task_high = tasks[w],
					     .task_low = tasks[w],
					     .ntasks = n};
			snprintf(r.config, sizeof(r.config), "%s", w ? "tiny" : "sgemm");
			if (xsb__run(&r)) {
				ok = false;
				c->fails++;
			} else {
				struct xsb__row row;
				xsb__collect(&r, XSB_TIER_HIGH, &row);
				st[w] = row.st;
			}
			xsb__run_free(&r);
		}
		if (!ok) {
			printf("  %-18s failed (see the errors above)\n", m->name);
			continue;
		}
		double per = st[1].p50 * 1000.0 / ntiny;
		if (!m->xsched && !nat_sg) {
			nat_sg = st[0].p50;
			nat_tiny = per;
		}
		char d1[16] = "-", d2[16] = "-";
		if (nat_sg > 0)
			snprintf(d1, sizeof(d1), "%+.1f%%", (st[0].p50 / nat_sg - 1) * 100);
		if (nat_tiny > 0)
			snprintf(d2, sizeof(d2), "%+.2f us", per - nat_tiny);
		printf("  %-18s %8.3f ms %8.3f ms %8s %14.2f %14s\n", m->name, st[0].p50, st[0].p99,
		       d1, per, d2);
		if (!strcmp(m->name, "xsched") && nat_sg > 0 && nat_tiny > 0)
			xsb_summary_line("overhead (one lane alone, xsched over a native stream): "
					 "task of %s %s, tiny kernel %s",
					 t.desc, d1, d2);
	}
	xsb_task_free(&t);
	xsb_task_free(&tiny);
	return 0;
}

/* ---- tune -------------------------------------------------------------------------------- */

/* For each xsched mode and launch config of the low queues: systematic 1H+15L (the high
 * thread runs 3x the systematic tasks; low threads stop once it is done), which shows the
 * effect on the high queue's latency when many low queues are in flight, and two-models,
 * which shows the effect on the throughput of a single low queue of short kernels. */
int xsb_scenario_tune(struct xsb_ctx *c)
{
	static const struct xsb_launch_cfg full[] = {{1, 1}, {2, 1}, {4, 2}, {16, 8}, {64, 32}};
	static const struct xsb_launch_cfg quick[] = {{1, 1}, {16, 8}};
	const struct xsb_launch_cfg *cfgs = c->o->quick ? quick : full;
	size_t ncfg =
	    c->o->quick ? sizeof(quick) / sizeof(quick[0]) : sizeof(full) / sizeof(full[0]);
	struct xsb_task t, small = {0}, large = {0};
	xsb__sgemm_task(&t);
	struct xsb_stats alone;
	if (xsb__get_sgemm_alone(c, &t, &alone)) {
		xsb_task_free(&t);
		return -1;
	}
	xsb_resnet18(&small, 1);
	xsb_resnet50(&large, c->o->large_batch);
	int threads = c->o->threads > 0 ? c->o->threads : 16;
	int ntasks = 3 * xsb__tasks(c, 10, 3);
	double dur = c->o->quick ? 0.5 : 3.0;
	struct xsb__run sys = {.c = c,
			       .scenario = "tune",
			       .body = XSB_CLOSED,
			       .nlanes = threads,
			       .nhigh = 1,
			       .task_high = &t,
			       .task_low = &t,
			       .ntasks = ntasks,
			       .ntasks_low = 1};
	struct xsb__run two = {.c = c,
			       .scenario = "tune",
			       .body = XSB_OPEN,
			       .nlanes = 2,
			       .nhigh = 1,
			       .task_high = &small,
			       .task_low = &large,
			       .duration_s = dur,
			       .rate = c->o->rate};
	/* References for two-models: its alone p99 and native low throughput. */
	double two_alone_p99 = 0, two_nat_thr = 0;
	struct xsb__run ar = two, nr = two;
	ar.mode = nr.mode = xsb_mode_find("native");
	ar.nlanes = 1;
	snprintf(ar.config, sizeof(ar.config), "two-models/alone");
	snprintf(nr.config, sizeof(nr.config), "two-models");
	struct xsb__row row;
	if (!xsb__run(&ar)) {
		xsb__collect(&ar, XSB_TIER_HIGH, &row);
		two_alone_p99 = row.st.p99;
	}
	xsb__run_free(&ar);
	if (!xsb__run(&nr)) {
		xsb__collect(&nr, XSB_TIER_LOW, &row);
		two_nat_thr = row.thr;
	}
	xsb__run_free(&nr);

	printf("\ntune: launch config of the low XQueues (threshold:batch), per mode. systematic "
	       "1H+%dL: the high thread runs %d tasks, low threads stop when it is done; "
	       "two-models: %.1f s, low = ResNet-50 batch %d (one queue of short kernels)\n",
	       threads - 1, ntasks, dur, c->o->large_batch);
	printf("  %-18s %6s | %-28s | %-22s\n", "", "", "systematic: high", "two-models");
	printf("  %-18s %6s | %8s %8s %8s | %9s %11s\n", "mode", "T:B", "p50 ms", "p99 ms",
	       "p99/al", "p99/al", "low thr");
	for (size_t mi = 0; mi < c->o->nmodes; mi++) {
		const struct xsb_mode *m = c->o->modes[mi];
		if (!m->xsched)
			continue;
		const char *why = xsb__mode_unavailable(c, m);
		if (why) {
			printf("  %-18s skipped: %s\n", m->name, why);
			continue;
		}
		for (size_t k = 0; k < ncfg; k++) {
			char tb[24];
			snprintf(tb, sizeof(tb), "%lld:%lld", (long long)cfgs[k].threshold,
				 (long long)cfgs[k].batch);
			struct xsb__run r = sys, q = two;
			r.mode = q.mode = m;
			r.cfg = q.cfg = &cfgs[k];
			snprintf(r.config, sizeof(r.config), "1H+%dL/%s", threads - 1, tb);
			snprintf(q.config, sizeof(q.config), "two-models/%s", tb);
			struct xsb__row hi = {0}, qhi = {0}, qlo = {0};
			bool ok = !xsb__run(&r);
			if (ok)
				xsb__collect(&r, XSB_TIER_HIGH, &hi);
			xsb__run_free(&r);
			ok = ok && !xsb__run(&q);
			if (ok) {
				xsb__collect(&q, XSB_TIER_HIGH, &qhi);
				xsb__collect(&q, XSB_TIER_LOW, &qlo);
			}
			xsb__run_free(&q);
			if (!ok) {
				printf("  %-18s %6s failed\n", m->name, tb);
				c->fails++;
				continue;
			}
			char r2[16] = "-", thr[16] = "-";
			if (two_alone_p99 > 0)
				snprintf(r2, sizeof(r2), "%.2f", qhi.st.p99 / two_alone_p99);
			if (two_nat_thr > 0)
				snprintf(thr, sizeof(thr), "%.3f", qlo.thr / two_nat_thr);
			printf("  %-18s %6s | %8.3f %8.3f %8.2f | %9s %11s\n", m->name, tb,
			       hi.st.p50, hi.st.p99, alone.p99 > 0 ? hi.st.p99 / alone.p99 : 0, r2,
			       thr);
		}
	}
	xsb_task_free(&t);
	xsb_task_free(&small);
	xsb_task_free(&large);
	return 0;
}

void xsb_print_launch_cfg(const struct xsb_ctx *c)
{
	xsb__print_cfg(c);
}
