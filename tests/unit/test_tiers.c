/* Every tier served (doc/architecture.md, "Tiers"), on the host backend under HPF: a
 * bursty top-priority XQueue, an always-busy middle one and many low ones.
 * - Below a busy middle queue (itself limited, under an idle-most-of-the-time top queue)
 *   the low queues are held by the commitment budget, not suspended: with 16 and with 127
 *   of them every one completes commands, each within [1/3, 3]x (16) and [1/4, 4]x
 *   (127) of the lows' mean (they share by estimated device time, each by its own; see
 *   FAIR_F_16), and
 *   the middle queue keeps the larger share (at least the lows' device time together);
 * - with XHintStrictPriority(1) the middle queue keeps them from running: in a run of 16
 *   of them, at least one completes nothing and all together under half of what they
 *   complete by default (0.5's behaviour, kept as an option; a few commands slip through
 *   in some runs, not yet explained);
 * - two low queues of unlike commands share by device time as much under a busy middle
 *   queue as without it (a floor per tier);
 * - 127 equal low queues without a middle one: none at 0, none above four times the
 *   mean (they share by estimated device time, and the estimates scatter on a loaded
 *   host);
 * - the top queue's requests all complete, and nothing is lost: every submitted command
 *   completes by the destroy (the host functions return at once after the window).
 *
 * Each share is a timing bound: met, it passes; missed, it fails where the host gave the
 * test's threads a CPU when they were ready during its window, and is skipped, saying what
 * was measured and what the host gave, where it did not (check.h, CHECK_TIMED; exit 77 once
 * every other check passed). Nothing lost, the top queue served and strict priority (a count that
 * does not depend on time: the middle queue is always ready) are checked always. */
#include <pthread.h>

#include "check.h"

#define MAXLOW 127

static atomic_bool g_stop;

struct work {
	int64_t us;
	bool recorded; /* its sleeps are what the host gave the judged queues (t_work_us) */
};

/* Sleeps for its time, or returns at once once the window is over (so that the drains at
 * destroy are quick). */
static XResult work_fn(void *data)
{
	const struct work *w = data;
	if (atomic_load(&g_stop))
		return kXSchedSuccess;
	if (w->recorded)
		t_work_us(w->us);
	else
		t_sleep_us(w->us);
	return kXSchedSuccess;
}

static const struct work g_high_work = {500, false}, g_mid_work = {200, false};

struct top {
	XQueueHandle xq;
	pthread_t th;
	int done;
};

/* A top-priority request (one 500 us command) every 10 ms, waited for. */
static void *top_main(void *arg)
{
	struct top *t = arg;
	while (!atomic_load(&g_stop)) {
		HwCommandHandle c;
		CHECK_OK(HwCommandCreateHostFunc(&c, work_fn, (void *)&g_high_work));
		CHECK_OK(XQueueSubmit(t->xq, c));
		CHECK_OK(XQueueWait(t->xq, c));
		CHECK_OK(HwCommandDestroy(c));
		t->done++;
		t_sleep_us(10000);
	}
	return NULL;
}

struct result {
	uint64_t low_min, low_max, low_total, mid;
	double low_dev_ms, mid_dev_ms; /* completed x the queue's estimate: the budget's measure */
	int nlow;
	t_host host; /* how the lows' commands' sleeps ran during the window */
};

/* @nlow low queues with a backlog of @low_us commands each, under an always-busy middle
 * queue when @middle, for @ms milliseconds. */
static struct result run(int nlow, bool middle, int64_t low_us, int ms)
{
	atomic_store(&g_stop, false);
	HwQueueHandle hh, hm, hl[MAXLOW];
	XQueueHandle xm = 0, xl[MAXLOW];
	struct top top = {0};
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(XQueueCreate(&top.xq, hh, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(top.xq, 10));
	if (middle) {
		CHECK_OK(HostQueueCreate(&hm));
		CHECK_OK(XQueueCreate(&xm, hm, kPreemptLevelBlock, 0));
		CHECK_OK(XHintPriority(xm, 5));
	}
	struct work low_work = {low_us, true};
	for (int i = 0; i < nlow; i++) {
		CHECK_OK(HostQueueCreate(&hl[i]));
		CHECK_OK(XQueueCreate(&xl[i], hl[i],
				      (getenv("T_LV") ? atoi(getenv("T_LV")) : i % 2 + 1) ==
					      2 /* T_LV=1|2: all at one level */
					  ? kPreemptLevelDeactivate
					  : kPreemptLevelBlock,
				      0));
	}
	/* Backlogs deeper than the window can drain: every queue stays busy throughout. */
	int mid_n = (int)(ms * 1000 / g_mid_work.us) + 50;
	for (int k = 0; middle && k < mid_n; k++)
		t_submit_fn(xm, work_fn, (void *)&g_mid_work);
	/* Four times a fair share of what the budget lets through at most (three commands
	 * at once): no queue runs dry (checked below). */
	int low_n = (int)(3 * 4 * ms * 1000 / low_us / nlow) + 20;
	for (int k = 0; k < low_n; k++)
		for (int i = 0; i < nlow; i++)
			t_submit_fn(xl[i], work_fn, &low_work);
	/* Counted over the window only, not while the backlogs were being submitted. */
	uint64_t base[MAXLOW], mid_base = middle ? t_stats(xm).completed : 0;
	for (int i = 0; i < nlow; i++)
		base[i] = t_stats(xl[i]).completed;
	CHECK(pthread_create(&top.th, NULL, top_main, &top) == 0);
	t_host_reset();
	t_sleep_us((int64_t)ms * 1000);
	struct result r = {.low_min = UINT64_MAX, .nlow = nlow, .host = t_host_get()};
	for (int i = 0; i < nlow; i++) {
		XQueueStats st = t_stats(xl[i]);
		uint64_t c = st.completed;
		CHECKF(c < (uint64_t)low_n,
		       "low queue %d still busy at the window's end (fewer "
		       "than its %d commands completed); measured %llu completed",
		       i, low_n, (unsigned long long)c);
		c -= base[i];
		r.low_dev_ms += (double)c * (double)st.est_command_ns / 1e6;
		if (getenv("T_VERBOSE")) /* per queue: completed/estimate in us */
			printf("%llu/%lld ", (unsigned long long)c,
			       (long long)t_stats(xl[i]).est_command_ns / 1000);
		r.low_total += c;
		r.low_min = c < r.low_min ? c : r.low_min;
		r.low_max = c > r.low_max ? c : r.low_max;
	}
	if (middle) {
		XQueueStats st = t_stats(xm);
		r.mid = st.completed - mid_base;
		r.mid_dev_ms = (double)r.mid * (double)st.est_command_ns / 1e6;
	}
	atomic_store(&g_stop, true);
	CHECK(pthread_join(top.th, NULL) == 0);
	CHECKF(top.done > 0, "the top queue's requests complete; measured %d", top.done);
	/* Nothing lost: the drains run every command (at once now). */
	for (int i = 0; i < nlow; i++) {
		CHECK_OK(XQueueWaitAll(xl[i]));
		XQueueStats st = t_stats(xl[i]);
		CHECKF(st.completed == (uint64_t)low_n && st.failed == 0,
		       "low queue %d: all %d commands completed, none failed; measured %llu "
		       "completed, %llu failed",
		       i, low_n, (unsigned long long)st.completed, (unsigned long long)st.failed);
		CHECK_OK(XQueueDestroy(xl[i]));
		CHECK_OK(HwQueueDestroy(hl[i]));
	}
	if (middle) {
		CHECK_OK(XQueueWaitAll(xm));
		CHECK_CMP(t_stats(xm).completed, ==, mid_n);
		CHECK_OK(XQueueDestroy(xm));
		CHECK_OK(HwQueueDestroy(hm));
	}
	CHECK_OK(XQueueDestroy(top.xq));
	CHECK_OK(HwQueueDestroy(hh));
	printf("%3d low%s: low total %llu (min %llu, max %llu per queue), middle %llu; a thread "
	       "waited for a CPU up to %.0f%% of the window, the lows' sleeps took %.2fx their "
	       "time at p99\n",
	       nlow, middle ? " + busy middle" : "", (unsigned long long)r.low_total,
	       (unsigned long long)r.low_min, (unsigned long long)r.low_max,
	       (unsigned long long)r.mid, 100 * r.host.wait_max, r.host.p99);
	return r;
}

/* How far from the mean a queue may be: [1/F, F]. The queues share by estimated device
 * time, each by its own estimate (a moving average of the times its commands took, as the
 * progress thread saw them end), so the bounds hold where the host runs the test's and the
 * library's threads when they are ready: unloaded, 16 lows completed 25-28 commands around
 * 26 and 127 lows 13-51 around 22. A host that keeps a thread waiting for a CPU for a
 * quarter of the window pushes a queue below a third of the mean (16 lows at 0.25 and 0.29
 * of it, check.h). On an H100 the same shares came out within 0.83-1.19 of their kind's
 * mean (doc/RESULTS.md, "Every tier served"). */
#define FAIR_F_16  3.0
#define FAIR_F_127 4.0

/* The middle queue's device time over the lows' together, at least. Under
 * ThreadSanitizer the library's own work per command (each of the middle queue's commands
 * waits for the one before it on its host queue) keeps the one middle queue from using
 * its share: 0.8-1.3 of the lows' there, 1.8-2.3 in plain builds. */
#if defined(__SANITIZE_THREAD__)
#define MID_SHARE 0.5
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MID_SHARE 0.5
#endif
#endif
#ifndef MID_SHARE
#define MID_SHARE 1.0
#endif

/* Every low queue within [1/F, F]x of the mean, none at 0. */
static void check_fair(const struct result *r)
{
	double mean = (double)r->low_total / r->nlow, f = r->nlow > 16 ? FAIR_F_127 : FAIR_F_16;
	CHECK_TIMED(
	    &r->host, r->low_min >= mean / f && r->low_min > 0 && r->low_max <= f * mean,
	    "each of %d low queues completes commands, within [1/%.0f, %.0f]x of their mean "
	    "%.1f, i.e. [%.1f, %.1f]; measured %llu to %llu",
	    r->nlow, f, f, mean, mean / f, f * mean, (unsigned long long)r->low_min,
	    (unsigned long long)r->low_max);
}

/* Two low queues of unlike commands (100 us and 1000 us) under an idle top queue, with and
 * without a busy middle one: the ratio of their device time (B's over A's, completions x
 * nominal time). Within a tier queues share by device time, whatever the tiers above do:
 * the busy middle queue must not change the ratio much. A floor shared by the tiers raised
 * the lows to the middle queue's virtual time, which favoured the queue of long commands
 * (the ratio 3.3-3.4 with the middle queue against 1.8 without; 1.6-1.8 with a floor per
 * tier: the rest is the host estimates' error). *@host: what the host gave the window. */
static double kinds_ratio(bool middle, int ms, t_host *host)
{
	atomic_store(&g_stop, false);
	static const struct work a_work = {100, false}, b_work = {1000, true};
	HwQueueHandle hh, hm = 0, ha, hb;
	XQueueHandle xh, xm = 0, xa, xb;
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(XQueueCreate(&xh, hh, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(xh, 10));
	if (middle) {
		CHECK_OK(HostQueueCreate(&hm));
		CHECK_OK(XQueueCreate(&xm, hm, kPreemptLevelBlock, 0));
		CHECK_OK(XHintPriority(xm, 5));
		for (int k = 0; k < ms * 1000 / g_mid_work.us + 50; k++)
			t_submit_fn(xm, work_fn, (void *)&g_mid_work);
	}
	CHECK_OK(HostQueueCreate(&ha));
	CHECK_OK(HostQueueCreate(&hb));
	CHECK_OK(XQueueCreate(&xa, ha, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&xb, hb, kPreemptLevelBlock, 0));
	for (int k = 0; k < ms * 1000 / 100 + 50; k++)
		t_submit_fn(xa, work_fn, (void *)&a_work);
	for (int k = 0; k < ms * 1000 / 1000 + 50; k++)
		t_submit_fn(xb, work_fn, (void *)&b_work);
	uint64_t a0 = t_stats(xa).completed, b0 = t_stats(xb).completed;
	t_host_reset();
	t_sleep_us((int64_t)ms * 1000);
	*host = t_host_get();
	uint64_t a = t_stats(xa).completed - a0, b = t_stats(xb).completed - b0;
	atomic_store(&g_stop, true);
	XQueueHandle xs[] = {xa, xb, xm, xh};
	HwQueueHandle hs[] = {ha, hb, hm, hh};
	for (int i = 0; i < 4; i++) {
		if (!xs[i])
			continue;
		CHECK_OK(XQueueWaitAll(xs[i]));
		CHECK_OK(XQueueDestroy(xs[i]));
		CHECK_OK(HwQueueDestroy(hs[i]));
	}
	CHECKF(a > 0 && b > 0, "both queues of a tier served; measured A %llu, B %llu commands",
	       (unsigned long long)a, (unsigned long long)b);
	double ratio = (double)b * 1000.0 / ((double)a * 100.0);
	printf("kinds in a tier%s: A %llu x 100 us, B %llu x 1000 us: B/A device time %.2f; a "
	       "thread waited for a CPU up to %.0f%% of the window\n",
	       middle ? " under a busy middle" : "", (unsigned long long)a, (unsigned long long)b,
	       ratio, 100 * host->wait_max);
	return ratio;
}

int main(int argc, char **argv)
{
	if (argc > 3) { /* one run to look at: nlow middle(0/1) low_us [strict] */
		if (argc > 4)
			CHECK_OK(XHintStrictPriority(1));
		run(atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), 2000);
		return 0;
	}
	/* HPF with the defaults: co-run 0 (the top queue suspends everything below it while
	 * it has work), commitment budget 1000 us, priorities below the top by weight. */
	struct result r = run(16, true, 1000, 2000), weighted = r;
	check_fair(&r);
	/* The middle queue keeps the larger share: at least the lows' device time together,
	 * as the budget measures it (completions x estimate). By weight it gets four fifths of
	 * what both wait for, but one queue's commands run one after another on its host
	 * queue, so it cannot always use its share: 1.8x to 2.3x the lows' here, unloaded and
	 * with a build beside it. In estimated, not nominal, time: under ThreadSanitizer the
	 * library's own work stretches each command's time on the host queue. */
	printf("   device time by the estimates: middle %.0f ms, lows %.0f ms\n", r.mid_dev_ms,
	       r.low_dev_ms);
	CHECK_TIMED(&r.host, r.mid_dev_ms >= MID_SHARE * r.low_dev_ms,
		    "the middle queue's device time at least %.1fx the lows' together (%.0f ms); "
		    "measured %.0f ms",
		    MID_SHARE, MID_SHARE * r.low_dev_ms, r.mid_dev_ms);

	r = run(127, true, 500, 3000);
	check_fair(&r);

	/* Without the middle queue the lows have the whole budget; they share it by
	 * estimated device time: none at 0 and none above four times the mean (17-56 around
	 * 41 unloaded). */
	r = run(127, false, 500, 1500);
	CHECK_TIMED(&r.host, r.low_min > 0 && r.low_max <= FAIR_F_127 * r.low_total / r.nlow,
		    "each of 127 low queues completes commands, none above %.0fx their mean "
		    "%.1f (%.1f); measured %llu to %llu",
		    FAIR_F_127, (double)r.low_total / r.nlow, FAIR_F_127 * r.low_total / r.nlow,
		    (unsigned long long)r.low_min, (unsigned long long)r.low_max);

	/* Within a tier by device time, whatever the tier above does. */
	t_host h_alone, h_under;
	double alone_ratio = kinds_ratio(false, 1500, &h_alone);
	double under = kinds_ratio(true, 1500, &h_under);
	/* Judged on the busier of the two windows. */
	const t_host *h =
	    h_alone.wait_max < 0 || h_alone.wait_max > h_under.wait_max ? &h_alone : &h_under;
	CHECK_TIMED(h, under <= 1.5 * alone_ratio && under <= 2.6,
		    "B/A device time under a busy middle queue at most 1.5x the one without "
		    "(%.2f) and at most 2.6; measured %.2f",
		    1.5 * alone_ratio, under);

	/* Strict priority: the busy middle queue keeps the lows from running (0.5). */
	CHECK_OK(XHintStrictPriority(1));
	r = run(16, true, 1000, 2000);
	CHECKF(r.low_min == 0 && r.low_total * 2 < weighted.low_total,
	       "under strict priority at least one of 16 lows completes nothing and all "
	       "together under half of the default's %llu; measured min %llu, total %llu",
	       (unsigned long long)weighted.low_total, (unsigned long long)r.low_min,
	       (unsigned long long)r.low_total);
	CHECK_RES(XHintStrictPriority(2), kXSchedErrorInvalidValue);
	CHECK_OK(XSchedShutdown()); /* forgets the strict setting */
	return t_exit();
}
