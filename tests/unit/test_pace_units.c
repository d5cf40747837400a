/* Explicit units and pacing on the host backend (HPF, Lv2 host queues).
 *
 * The protected queue serves requests, each a scope of UNITS explicit units
 * (XQueueBeginUnit .. XQueueEndUnit, the host waiting for each as a server reads each
 * token), each unit one host function of UNIT_US; four low lanes run LOW_US host functions
 * back to back. A unit's function takes longer by BETA for each low command running beside
 * it or completed in the UNIT_US before (the device's contention, modelled: lower work
 * that co-runs, or that ran just before and left caches and queues behind). By default a
 * unit's slice co-runs with it; `pace_units_wait` runs the same with XSCHED_PACE_WAIT=1,
 * the slice before the unit, and `pace_units_off` with XSCHED_PACE=0: no level opens a
 * slice (checked exactly) and the controller gives co-run budgets instead, the lows served
 * beside the units (timed).
 * - Units inside a scope are measured: the alone estimate is a unit's time, not the
 *   request's (XQueueStats.alone_unit_ns), and no command is a unit of its own.
 * - Pacing with objective 3.0 and no contention: the controller climbs to at least half
 *   slices (at whole slices a unit takes 3x alone, right at the objective), and while the
 *   protected queue is busy without a break (a scope open across its requests) the lows
 *   complete commands in the slices; without an objective they complete next to none
 *   while it is busy. A timing bound (check.h): where the host did not give the test's
 *   threads a CPU when they were ready, or stretched the modelled sleeps' tail by more than
 *   1.5x, a miss is skipped, saying so (77).
 * - The slack per unit is bounded: no slice opened is longer than (objective - 1) x the
 *   largest alone estimate seen (the device's slice statistics; exact, not timed).
 * - A violation lowers what the controller gives within a few units: with heavy
 *   contention (BETA 3), the lower work of pacing's slices makes the units slow, and the
 *   level falls at the second slow unit (the violation rule), far inside a window. Not
 *   judged under XSCHED_PACE_WAIT=1 (pace_units_wait): the lows then run before a unit,
 *   and the model leaves the units near the objective (2.6-3.0x against 3.0), so a fall
 *   came at unit 1, 38, 41 or never (6 of 12 runs failed the bound on an idle machine). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hang_util.h"

enum { NLOW = 4, UNITS = 20, UNIT_US = 2000, LOW_US = 300 };

static atomic_bool g_stop;
static atomic_int g_low_done;      /* low commands completed */
static atomic_int g_low_done_busy; /* ... of them, while the protected queue was busy */
static atomic_bool g_busy;         /* the protected queue's scope is open */
static _Atomic double g_beta;
static _Atomic int64_t g_low_ends[64]; /* the last low completions (us), a ring */
static atomic_uint g_low_end_n;
static atomic_int g_low_running; /* low commands running now */

/* A unit's function: ten steps of a tenth of UNIT_US, each longer by BETA for each low
 * command running then or completed in the UNIT_US before (co-running work, and what
 * work just before left behind). */
static XResult high_fn(void *data)
{
	(void)data;
	for (int step = 0; step < 10; step++) {
		int64_t now = t_now_us(), recent = atomic_load(&g_low_running);
		for (int i = 0; i < 64; i++)
			recent += now - atomic_load(&g_low_ends[i]) < UNIT_US;
		double f = 1.0 + atomic_load(&g_beta) * (double)recent;
		t_work_us((int64_t)(UNIT_US / 10 * f));
	}
	return kXSchedSuccess;
}

static XResult low_fn(void *data)
{
	(void)data;
	atomic_fetch_add(&g_low_running, 1);
	t_sleep_us(LOW_US);
	atomic_fetch_sub(&g_low_running, 1);
	atomic_store(&g_low_ends[atomic_fetch_add(&g_low_end_n, 1) % 64], t_now_us());
	atomic_fetch_add(&g_low_done, 1);
	if (atomic_load(&g_busy))
		atomic_fetch_add(&g_low_done_busy, 1);
	return kXSchedSuccess;
}

struct lane {
	HwQueueHandle hwq;
	XQueueHandle xq;
	pthread_t th;
};

static void *low_main(void *arg)
{
	struct lane *l = arg;
	while (!atomic_load(&g_stop))
		t_run_fn(l->xq, low_fn, NULL);
	return NULL;
}

/* One unit: begin (it may wait out its slice), the work, end, and the host waits for it. */
static void one_unit(XQueueHandle xq)
{
	CHECK_OK(XQueueBeginUnit(xq));
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, high_fn, NULL));
	CHECK_OK(XQueueSubmit(xq, c));
	CHECK_OK(XQueueEndUnit(xq));
	CHECK_OK(XQueueWait(xq, c));
	CHECK_OK(HwCommandDestroy(c));
}

/* @n requests back to back inside one open scope (busy without a break), each UNITS
 * units; returns the largest alone estimate seen. */
static uint64_t serve(XQueueHandle xq, int n)
{
	uint64_t alone_max = 0;
	CHECK_OK(XQueueBeginScope(xq));
	atomic_store(&g_busy, true);
	for (int r = 0; r < n; r++) {
		for (int u = 0; u < UNITS; u++)
			one_unit(xq);
		uint64_t a = t_stats(xq).alone_unit_ns;
		alone_max = a > alone_max ? a : alone_max;
	}
	atomic_store(&g_busy, false);
	CHECK_OK(XQueueEndScope(xq));
	return alone_max;
}

/* What the controller gives the lows: the co-run budget when above 0, else the pacing's
 * eighths (a scalar that only falls when the controller backs off). */
static uint64_t gives(XQueueHandle xq)
{
	XQueueStats st = t_stats(xq);
	if (st.corun_budget_ns == UINT64_MAX)
		return UINT64_MAX; /* not limited */
	return st.corun_budget_ns ? (1ull << 32) + st.corun_budget_ns : st.pace_eighths;
}

int main(void)
{
	h_watchdog(180, "explicit units and pacing (test_pace_units)");
	CHECK(setenv("XSCHED_CORUN_US", "0", 1) == 0);
	struct lane hi, lo[NLOW];
	CHECK_OK(HostQueueCreate(&hi.hwq));
	CHECK_OK(XQueueCreate(&hi.xq, hi.hwq, kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(hi.xq, 2));
	for (int i = 0; i < NLOW; i++) {
		CHECK_OK(HostQueueCreate(&lo[i].hwq));
		CHECK_OK(XQueueCreate(&lo[i].xq, lo[i].hwq, kPreemptLevelDeactivate, 0));
		CHECK_OK(XHintPriority(lo[i].xq, 1));
	}
	/* Misuse: an end without a begin, two begins. */
	CHECK_RES(XQueueEndUnit(hi.xq), kXSchedErrorNotAllowed);
	CHECK_OK(XQueueBeginUnit(hi.xq));
	CHECK_RES(XQueueBeginUnit(hi.xq), kXSchedErrorNotAllowed);
	CHECK_OK(XQueueEndUnit(hi.xq));

	serve(hi.xq, 1); /* a warm-up request */
	atomic_store(&g_stop, false);
	for (int i = 0; i < NLOW; i++)
		CHECK(pthread_create(&lo[i].th, NULL, low_main, &lo[i]) == 0);

	/* No objective: the lows get nothing while the protected queue is busy. */
	serve(hi.xq, 2);
	int without = atomic_exchange(&g_low_done_busy, 0);
	printf("no objective: %d low commands while busy (%d units)\n", without, 2 * UNITS);
	t_host_reset();

	/* Objective 3.0, no contention: units measured, pacing reached, lows served. At whole
	 * slices a unit takes 3x alone, right at the objective, so the controller settles
	 * lower; at 4/8 a unit takes 2x, and the host's noise has the rest. */
	CHECK_OK(XHintLatencyObjective(hi.xq, 3.0));
	uint64_t alone_max = serve(hi.xq, 10);
	XQueueStats st = t_stats(hi.xq);
	int with = atomic_exchange(&g_low_done_busy, 0);
	printf("objective 3.0: alone per unit %llu ns (max %llu), per command %llu; %llu looks, "
	       "pacing %llu/8, %llu slices of %llu ns in all (%llu ns past their ends); %d low "
	       "commands while busy (%d units)\n",
	       (unsigned long long)st.alone_unit_ns, (unsigned long long)alone_max,
	       (unsigned long long)st.alone_command_ns, (unsigned long long)st.objective_looks,
	       (unsigned long long)st.pace_eighths, (unsigned long long)st.slices,
	       (unsigned long long)st.slice_ns, (unsigned long long)st.slice_over_ns, with,
	       10 * UNITS);
	CHECKF(st.alone_unit_ns >= UNIT_US * 1000ull &&
		   st.alone_unit_ns < UNITS * UNIT_US * 1000ull,
	       "a unit's alone time (>= %d us, < a request's), got %llu ns", UNIT_US,
	       (unsigned long long)st.alone_unit_ns);
	CHECKF(st.alone_command_ns == 0, "no command unit, got %llu ns",
	       (unsigned long long)st.alone_command_ns);
	/* Each slice is at most the slack of its unit: (3.0 - 1) x alone. Exact. */
	CHECKF(st.slice_ns <= st.slices * 2 * alone_max,
	       "slices within the slack: %llu ns in %llu slices, alone at most %llu ns",
	       (unsigned long long)st.slice_ns, (unsigned long long)st.slices,
	       (unsigned long long)alone_max);
	t_host host = t_host_get();
	const char *pace = getenv("XSCHED_PACE");
	if (pace && !strcmp(pace, "0")) {
		/* Pacing off: no level opens a slice (exact); the controller gives co-run
		 * budgets instead, and the lows co-run with the units. */
		CHECKF(st.slices == 0 && st.pace_eighths == 0,
		       "no slice with XSCHED_PACE=0; measured %llu slices, pacing %llu/8",
		       (unsigned long long)st.slices, (unsigned long long)st.pace_eighths);
		CHECK_TIMED_TAIL(
		    &host, 1.5, st.corun_budget_ns > 0 && with > without,
		    "a co-run budget given and the lows served while busy: %llu ns, %d "
		    "commands (without an objective: %d)",
		    (unsigned long long)st.corun_budget_ns, with, without);
	} else {
		CHECK_TIMED_TAIL(
		    &host, 1.5, st.pace_eighths >= 4,
		    "pacing reached (at least 4/8, a unit at 2x alone against 3.0); measured "
		    "%llu/8",
		    (unsigned long long)st.pace_eighths);
		CHECK_TIMED_TAIL(
		    &host, 1.5, st.slices > 0 && with > without,
		    "the lows served in slices while busy: %llu slices, %d commands (without "
		    "an objective: %d)",
		    (unsigned long long)st.slices, with, without);
	}

	/* Heavy contention: each low command beside a unit, or just before it, makes that part
	 * of it four times as long; the controller backs off at the second slow unit: what it
	 * gives falls below the most it gave since the contention began (it may still have
	 * been climbing when it began). */
	uint64_t peak = gives(hi.xq);
	atomic_store(&g_beta, 3.0);
	t_host_reset();
	CHECK_OK(XQueueBeginScope(hi.xq));
	int fell = -1;
	for (int u = 0; u < 64 && fell < 0; u++) {
		one_unit(hi.xq);
		uint64_t g = gives(hi.xq);
		if (g < peak)
			fell = u + 1;
		peak = g > peak ? g : peak;
	}
	CHECK_OK(XQueueEndScope(hi.xq));
	uint64_t seen = t_stats(hi.xq).slowdown_permille;
	printf("heavy contention: what the controller gives fell after %d units (from %llu); "
	       "the units' slowdown at its last look %llu per mille\n",
	       fell, (unsigned long long)peak, (unsigned long long)seen);
	host = t_host_get();
	const char *wait = getenv("XSCHED_PACE_WAIT");
	if (peak && wait && !strcmp(wait, "1")) /* the premise holds only beside the units */
		t_skip_part(
		    "the fall under XSCHED_PACE_WAIT=1: the lows run before a unit, not "
		    "in it, and the model's contention leaves the units near the objective "
		    "(slowdown %llu per mille at the last look; 2.6-3.0x seen), not above it",
		    (unsigned long long)seen);
	else if (peak)
		CHECK_TIMED(&host, fell >= 1 && fell <= 8,
			    "a fall within 8 units (the second slow one); measured after %d", fell);

	atomic_store(&g_stop, true);
	for (int i = 0; i < NLOW; i++) {
		CHECK(pthread_join(lo[i].th, NULL) == 0);
		CHECK_OK(XQueueDestroy(lo[i].xq));
		CHECK_OK(HwQueueDestroy(lo[i].hwq));
	}
	CHECK_OK(XQueueDestroy(hi.xq));
	CHECK_OK(HwQueueDestroy(hi.hwq));
	printf("ok (%d low commands in all)\n", atomic_load(&g_low_done));
	return t_exit();
}
