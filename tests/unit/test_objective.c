/* Latency objectives (XHintLatencyObjective) on the host backend.
 *
 * Host queues run on threads of their own and do not slow each other, so the test models
 * the device's contention itself: a high command sleeps BASE_US x (1 + beta x r), r the
 * number of low commands running when it starts (each co-running low command slows it by
 * beta, 8% by default). The low lanes (priority 1) run 200 us host functions back to back;
 * the high queue (priority 2, HPF) keeps four commands in flight. The test's own record of
 * each high command's factor (1 + beta x r) is the ground truth the assertions use, beside
 * what XQueueGetStats reports. The controller measures host times, so what depends on them
 * (the budget's moves, the factors it lets through) is a timing bound: met, it passes;
 * missed, it fails where the host gave the test's threads a CPU when they were ready during
 * its phase (and did not stretch the sleeps' tail beyond what the objective allows), and is
 * skipped, saying what was measured and what the host gave, where it did not (check.h,
 * CHECK_TIMED_TAIL; exit 77 once every other check passed). What holds on any host
 * (refusals, the budget without an objective and at the start, never unlimited under a
 * tight objective) is checked always. A watchdog turns a hang into a failure.
 *
 * - bad input: InvalidValue (negative, < 1 but not 0, > 1000, NaN, inf), NotFound;
 * - no objective: the budget in force is XHintCorunBudget's (0, then 300 us), no
 *   slowdown is reported, and at 0 a steady high chain runs without co-running low work;
 * - converges and holds at the tail: objective 1.2 with 7 low lanes (unlimited
 *   co-running would give ~1.5x): within 320 high commands (5 windows of 64) the budget
 *   is above 0 and not unlimited, afterwards the p99 of the recorded factors stays
 *   within 1.2 (+25% for the host's timer slack), low work co-runs (many more low
 *   commands than at a budget of 0), with few budget changes (no oscillation);
 * - reacts to a step: contention tripled (beta 0.24): by the second command slow beyond
 *   doubt (factor 1.44 or more) and those in flight, the budget is below the one in force
 *   before (unless that one was 400 us or less already), and the mean factor afterwards
 *   is within 1.2 again;
 * - widens with slack: objective 3.0 on the same load (at most 1.56x): the budget becomes
 *   not limited
 *   (UINT64_MAX) within 480 commands (6 windows of 64 at 4 levels each) and stays so while the
 * slowdown measured stays within the objective, and low work then co-runs; each move of the budget
 * is a "corun budget" event in the trace;
 * - tightest wins: two high queues with 1.2 and 2.0: the device's budget is never
 *   unlimited once settled and both queues report the same budget;
 * - clearing the objective returns the budget to XHintCorunBudget's. */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

enum { NLOW = 7, LOW_US = 200, BASE_US = 1000, RING = 4, MAXH = 2 };

static atomic_bool g_stop;
static atomic_int g_low_running;
static atomic_llong g_low_done;
static _Atomic double g_beta = 0.08;
static int64_t g_low_at_zero; /* low commands completed during no_objective's chain */

struct lane {
	HwQueueHandle hwq;
	XQueueHandle xq;
	pthread_t th;
};
static struct lane g_low[NLOW], g_high[MAXH];

/* The high commands' factors (1 + beta x r), in order of their start (one high queue at
 * a time records; with two, both add to the same log). */
#define MAXREC 4096
static double g_factor[MAXREC];
static atomic_int g_nrec;

static void *watchdog(void *arg)
{
	(void)arg;
	int64_t until = t_now_us() + 100 * 1000000LL;
	while (t_now_us() < until) {
		if (atomic_load(&g_stop) && atomic_load(&g_nrec) < 0)
			return NULL;
		t_sleep_us(10000);
	}
	fprintf(stderr, "test_objective: a hang (watchdog)\n");
	abort();
}

static XResult low_fn(void *data)
{
	(void)data;
	atomic_fetch_add(&g_low_running, 1);
	t_sleep_us(LOW_US);
	atomic_fetch_sub(&g_low_running, 1);
	atomic_fetch_add(&g_low_done, 1);
	return kXSchedSuccess;
}

static XResult high_fn(void *data)
{
	(void)data;
	double f = 1.0 + atomic_load(&g_beta) * atomic_load(&g_low_running);
	int i = atomic_fetch_add(&g_nrec, 1);
	if (i >= 0 && i < MAXREC)
		g_factor[i] = f;
	t_work_us((int64_t)(BASE_US * f));
	return kXSchedSuccess;
}

static void *low_main(void *arg)
{
	struct lane *l = arg;
	while (!atomic_load(&g_stop)) {
		HwCommandHandle c[2];
		for (int k = 0; k < 2; k++) {
			CHECK_OK(HwCommandCreateHostFunc(&c[k], low_fn, NULL));
			CHECK_OK(XQueueSubmit(l->xq, c[k]));
		}
		CHECK_OK(XQueueWait(l->xq, c[1]));
		for (int k = 0; k < 2; k++)
			CHECK_OK(HwCommandDestroy(c[k]));
	}
	return NULL;
}

static void open_lane(struct lane *l, Priority prio)
{
	CHECK_OK(HostQueueCreate(&l->hwq));
	CHECK_OK(XQueueCreate(&l->xq, l->hwq, kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(l->xq, prio));
}

static void close_lane(struct lane *l)
{
	CHECK_OK(XQueueWaitAll(l->xq));
	CHECK_OK(XQueueDestroy(l->xq));
	CHECK_OK(HwQueueDestroy(l->hwq));
}

static void lows_start(void)
{
	atomic_store(&g_stop, false);
	for (int i = 0; i < NLOW; i++) {
		open_lane(&g_low[i], 1);
		CHECK(pthread_create(&g_low[i].th, NULL, low_main, &g_low[i]) == 0);
	}
}

static void lows_stop(void)
{
	atomic_store(&g_stop, true);
	for (int i = 0; i < NLOW; i++) {
		CHECK(pthread_join(g_low[i].th, NULL) == 0);
		close_lane(&g_low[i]);
	}
}

/* The slowdown the controller reported (XQueueStats.slowdown_permille) after each
 * completion of the last high_chain given a budget log: it changes at each window's end, and
 * every window lasts 16 completions, so each window's figure is seen. */
static uint64_t g_slow_pm[MAXREC];

/* A high chain: @n commands on @xq with RING in flight; budget[k] is the co-run budget in
 * force seen after the k-th completed, g_slow_pm[k] the slowdown reported then (@budget may be
 * NULL: neither is kept). */
static void high_chain(XQueueHandle xq, int n, uint64_t *budget)
{
	HwCommandHandle c[RING] = {0};
	for (int k = 0; k < n + RING; k++) {
		HwCommandHandle *s = &c[k % RING];
		if (*s) {
			CHECK_OK(XQueueWait(xq, *s));
			CHECK_OK(HwCommandDestroy(*s));
			*s = 0;
			if (budget) {
				XQueueStats st = t_stats(xq);
				budget[k - RING] = st.corun_budget_ns;
				g_slow_pm[k - RING] = st.slowdown_permille;
			}
		}
		if (k < n) {
			CHECK_OK(HwCommandCreateHostFunc(s, high_fn, NULL));
			CHECK_OK(XQueueSubmit(xq, *s));
		}
	}
}

/* The 99th percentile of the recorded factors of records [from, to). */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double p99_factor(int from, int to)
{
	static double v[MAXREC];
	if (to > MAXREC)
		to = MAXREC;
	int k = to - from;
	if (k <= 0)
		return 0;
	memcpy(v, g_factor + from, (size_t)k * sizeof(double));
	qsort(v, (size_t)k, sizeof(double), cmp_double);
	return v[(k * 99 + 99) / 100 - 1];
}

/* The mean recorded factor of records [from, to). */
static double mean_factor(int from, int to)
{
	double sum = 0;
	if (to > MAXREC)
		to = MAXREC;
	for (int i = from; i < to; i++)
		sum += g_factor[i];
	return to > from ? sum / (to - from) : 0;
}

/* How often the budget changed in budget[from, to). */
static int changes(const uint64_t *budget, int from, int to)
{
	int n = 0;
	for (int i = from + 1; i < to; i++)
		n += budget[i] != budget[i - 1];
	return n;
}

static void bad_input(void)
{
	struct lane l;
	open_lane(&l, 2);
	CHECK_RES(XHintLatencyObjective(l.xq, 0.5), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLatencyObjective(l.xq, -1.0), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLatencyObjective(l.xq, 0.999), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLatencyObjective(l.xq, 1000.5), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLatencyObjective(l.xq, NAN), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLatencyObjective(l.xq, INFINITY), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLatencyObjective(l.xq, -INFINITY), kXSchedErrorInvalidValue);
	CHECK_RES(XHintLatencyObjective(0, 1.2), kXSchedErrorNotFound);
	CHECK_OK(XHintLatencyObjective(l.xq, 1.0));
	CHECK_OK(XHintLatencyObjective(l.xq, 0));
	XQueueHandle gone = l.xq;
	close_lane(&l);
	CHECK_RES(XHintLatencyObjective(gone, 1.2), kXSchedErrorNotFound);
	printf("bad input: refused\n");
}

static void no_objective(void)
{
	static uint64_t budget[400];
	open_lane(&g_high[0], 2);
	XQueueStats s = t_stats(g_high[0].xq);
	CHECKF(s.corun_budget_ns == 0 && s.slowdown_permille == 0 && s.alone_command_ns == 0,
	       "a new queue: budget 0, no slowdown, no alone estimate; measured %llu ns, %llu per "
	       "mille, %llu ns",
	       (unsigned long long)s.corun_budget_ns, (unsigned long long)s.slowdown_permille,
	       (unsigned long long)s.alone_command_ns);
	CHECK_OK(XHintCorunBudget(300));
	CHECK_CMP(t_stats(g_high[0].xq).corun_budget_ns, ==, 300000);
	CHECK_OK(XHintCorunBudget(0));
	lows_start();
	t_sleep_us(50000);
	atomic_store(&g_nrec, 0);
	int64_t low0 = atomic_load(&g_low_done);
	t_host_reset();
	high_chain(g_high[0].xq, 300, budget);
	g_low_at_zero = atomic_load(&g_low_done) - low0;
	int n = atomic_load(&g_nrec);
	lows_stop();
	t_host host = t_host_get();
	for (int i = 0; i < 300; i++)
		CHECKF(budget[i] == 0,
		       "no objective: the co-run budget XHintCorunBudget's 0 after "
		       "each command; measured %llu ns after command %d",
		       (unsigned long long)budget[i], i);
	/* v3 at a co-run budget of 0: lower queues commit nothing new while the chain runs. */
	double f = mean_factor(20, n);
	printf("no objective: budget 0 throughout, mean factor %.3f\n", f);
	CHECK_TIMED(&host, f < 1.05,
		    "a mean factor under 1.05 (low commands running at a high "
		    "command's start: only those committed before it); measured %.3f",
		    f);
	CHECK_CMP(t_stats(g_high[0].xq).slowdown_permille, ==, 0);
	close_lane(&g_high[0]);
}

/* Objective 1.2: converge, hold, then a step in contention. */
static void converge_and_step(void)
{
	enum { N1 = 720, N2 = 400, CONV = 320 };
	static uint64_t budget[N1 > N2 ? N1 : N2];
	open_lane(&g_high[0], 2);
	CHECK_OK(XHintLatencyObjective(g_high[0].xq, 1.2));
	CHECK_CMP(t_stats(g_high[0].xq).corun_budget_ns, ==, 0); /* starts at the safe end */
	lows_start();
	t_sleep_us(50000);
	atomic_store(&g_beta, 0.08);
	atomic_store(&g_nrec, 0);
	int64_t low0 = atomic_load(&g_low_done);
	t_host_reset();
	high_chain(g_high[0].xq, N1, budget);
	t_host host = t_host_get();
	int n = atomic_load(&g_nrec);
	int64_t low1 = atomic_load(&g_low_done);
	XQueueStats s = t_stats(g_high[0].xq);
	double held = p99_factor(CONV, n);
	int ch = changes(budget, CONV, N1);
	printf("objective 1.2: budget %llu ns after %d commands, %llu ns at the end; p99 factor "
	       "%.3f (mean %.3f) after %d; %d budget changes after it; reported p99 slowdown "
	       "%.3f, alone %llu ns; %lld low commands (%lld at a budget of 0)\n",
	       (unsigned long long)budget[CONV], CONV, (unsigned long long)budget[N1 - 1], held,
	       mean_factor(CONV, n), CONV, ch, s.slowdown_permille / 1000.0,
	       (unsigned long long)s.alone_command_ns, (long long)(low1 - low0),
	       (long long)g_low_at_zero);
	/* Never unlimited under an objective this tight, whatever the host: a host that
	 * stretches the measured times shows more slowdown, not less. */
	for (int i = CONV; i < N1; i++)
		CHECKF(budget[i] != UINT64_MAX,
		       "objective 1.2: the co-run budget never unlimited; "
		       "measured unlimited after command %d",
		       i);
	/* The controller compares the p99 of the units' times with their mean alone: a host that
	 * stretches the high commands' sleeps more than 1.2x at p99 against their median
	 * violates the objective by itself, whatever the budget (CHECK_TIMED_TAIL). */
	int at_zero = -1;
	for (int i = CONV; i < N1 && at_zero < 0; i++)
		if (budget[i] == 0)
			at_zero = i;
	CHECK_TIMED_TAIL(&host, 1.2, at_zero < 0,
			 "objective 1.2: the co-run budget above 0 after %d commands (low work "
			 "co-runs); measured 0 after command %d",
			 CONV, at_zero);
	/* The tail held, by the test's own record, and low work co-ran: many more low
	 * commands completed than while the same chain ran at a budget of 0 (the controller
	 * holds the tail, so the mean factor stays low: 1.01-1.03 on a 2-core host, where
	 * timer jitter alone reaches 1.1 at the tail). */
	CHECK_TIMED_TAIL(&host, 1.2, held <= 1.2 * 1.25,
			 "objective 1.2: the p99 of the recorded factors at most %.2f (the "
			 "objective, +25%% for timer slack); measured %.3f",
			 1.2 * 1.25, held);
	CHECK_TIMED_TAIL(&host, 1.2, low1 - low0 > 4 * g_low_at_zero + 50,
			 "objective 1.2: more than %lld low commands (4x those at a budget of 0, "
			 "+50); measured %lld",
			 (long long)(4 * g_low_at_zero + 50), (long long)(low1 - low0));
	/* Settled: a probe now and then, no oscillation (a controller that moved at every look
	 * would change it at each of the ~6 windows and at each violation). */
	CHECK_TIMED_TAIL(&host, 1.2, ch <= 18,
			 "objective 1.2: at most 18 budget changes once settled; measured %d", ch);
	CHECK_TIMED_TAIL(&host, 1.2, s.slowdown_permille >= 900 && s.slowdown_permille <= 1600,
			 "objective 1.2: a reported p99 slowdown within [0.9, 1.6]; measured %.3f",
			 s.slowdown_permille / 1000.0);
	CHECK_TIMED(&host,
		    s.alone_command_ns >= BASE_US * 1000 && s.alone_command_ns < 3 * BASE_US * 1000,
		    "an alone estimate within [1, 3) ms for 1 ms commands; measured %.3f ms",
		    s.alone_command_ns / 1e6);

	/* Step: each co-running low command now costs three times as much. */
	uint64_t before = budget[N1 - 1];
	atomic_store(&g_beta, 0.24);
	atomic_store(&g_nrec, 0);
	t_host_reset();
	high_chain(g_high[0].xq, N2, budget);
	host = t_host_get();
	n = atomic_load(&g_nrec);
	int react = -1;
	for (int i = 0; i < N2 && react < 0; i++)
		if (budget[i] < before)
			react = i;
	/* The second command slow beyond doubt (its factor 1.2 x 1.2 or more: two low
	 * commands beside it) after the step: the controller acts at the second unit above the
	 * objective, and how soon that comes depends on how often lows co-run. */
	int second = -1;
	for (int i = 0, slow = 0; i < n && i < N2 && second < 0; i++)
		if (g_factor[i] >= 1.2 * 1.2 && ++slow == 2)
			second = i;
	double after = mean_factor(160, n);
	printf("step (beta 0.24): budget %llu -> %llu ns, below the old after %d commands; mean "
	       "factor %.3f after 160\n",
	       (unsigned long long)before, (unsigned long long)budget[N2 - 1], react, after);
	/* A budget already at two low commands or less (400 us) before the step may meet the
	 * objective without a move: then only the mean factor below tells. (Settled budgets of
	 * 400 us came in about 1 of 10 runs on a 2-core host, with 0.5.0 too, and the budget then
	 * went below it after 95 and 191 commands, or not at all, with mean factors of 1.09-1.18.)
	 */
	{
		CHECK_TIMED(
		    &host, (react >= 0 && react <= second + 8) || second < 0 || before <= 400000,
		    "the budget below the %llu ns before the step by the second clearly slow "
		    "command (%d) and those in flight (unless the budget was 400 us or less); "
		    "measured %d commands (-1: never)",
		    (unsigned long long)before, second, react);
		CHECK_TIMED(&host, after <= 1.2 * 1.1,
			    "a mean factor after the step at most %.2f; measured "
			    "%.3f",
			    1.2 * 1.1, after);
	}
	lows_stop();
	atomic_store(&g_beta, 0.08);

	/* Clearing it: the process setting again. */
	CHECK_OK(XHintLatencyObjective(g_high[0].xq, 0));
	CHECK_CMP(t_stats(g_high[0].xq).corun_budget_ns, ==, 0);
	CHECK_CMP(t_stats(g_high[0].xq).slowdown_permille, ==, 0);
	close_lane(&g_high[0]);
}

/* Objective 3.0: the load cannot reach it, so it goes unlimited and stays there. Seven low
 * commands slow a high one by 1.56x at most; the controller measures host times, which a
 * host that keeps the test's threads waiting for a CPU stretches (under ThreadSanitizer on
 * a 2-core host with three tests at once, windows measured up to 1.91x, and above 3.0 with
 * other processes busy besides: a step down is then the right answer). So the climb, the
 * stay and the trace's moves are timing bounds (CHECK_TIMED_TAIL). */
static void widens(void)
{
	enum { N = 640, BY = 480 };
	static uint64_t budget[N];
	char path[64];
	snprintf(path, sizeof(path), "/tmp/test_objective_%d.json", (int)getpid());
	CHECK_OK(XSchedTraceStart(path));
	open_lane(&g_high[0], 2);
	CHECK_OK(XHintLatencyObjective(g_high[0].xq, 3.0));
	lows_start();
	t_sleep_us(50000);
	atomic_store(&g_nrec, 0);
	t_host_reset();
	high_chain(g_high[0].xq, N, budget);
	t_host host = t_host_get();
	int n = atomic_load(&g_nrec);
	lows_stop();
	int first = -1;
	for (int i = 0; i < N && first < 0; i++)
		if (budget[i] == UINT64_MAX)
			first = i;
	double f = mean_factor(BY, n);
	int kept = 0, over = 0;
	uint64_t worst = 0;
	for (int i = first < 0 ? N : first; i < N; i++) {
		kept += budget[i] == UINT64_MAX;
		over += g_slow_pm[i] > 3000;
		worst = g_slow_pm[i] > worst ? g_slow_pm[i] : worst;
	}
	printf("objective 3.0: not limited after %d commands, for %d of the %d after; mean factor "
	       "%.3f after %d; measured slowdown at most %.3f since (%d samples above 3.0)\n",
	       first, kept, first < 0 ? 0 : N - first, f, BY, worst / 1000.0, over);
	close_lane(&g_high[0]);
	/* Each move of the budget is a trace event; the last one says "not limited". */
	CHECK_OK(XSchedTraceStop());
	FILE *fp = fopen(path, "r");
	CHECKF(fp, "the trace file %s written; measured: it cannot be opened", path);
	char line[512];
	int moves = 0, unlimited = 0;
	while (fgets(line, sizeof(line), fp))
		if (strstr(line, "\"corun budget\"")) {
			moves++;
			unlimited += strstr(line, "\"b\":9223372036854775807") != NULL;
		}
	fclose(fp);
	remove(path);
	printf("  trace: %d budget moves, %d to not limited\n", moves, unlimited);
	/* The load slows a high command 1.56x at most: a host stretching the sleeps more than
	 * 3.0 / 1.56 at p99 against their median could violate the objective by itself. */
	const double tail = 3.0 / 1.56;
	CHECK_TIMED_TAIL(&host, tail, first >= 0 && first <= BY,
			 "objective 3.0: not limited within %d commands; "
			 "measured after %d (-1: never)",
			 BY, first);
	CHECK_TIMED_TAIL(
	    &host, tail, first < 0 || kept == N - first,
	    "objective 3.0: not limited from then on (no violation: at most "
	    "1.56x); measured not limited after %d of the %d commands since, the controller "
	    "measuring up to %.3f",
	    kept, N - first, worst / 1000.0);
	CHECK_TIMED_TAIL(&host, tail, f > 1.15,
			 "objective 3.0: low work co-runs freely, a mean factor above 1.15; "
			 "measured %.3f",
			 f);
	CHECK_TIMED_TAIL(&host, tail, moves >= 2 && unlimited >= 1,
			 "objective 3.0: at least 2 budget moves in the trace, "
			 "one to not limited; measured %d moves, %d to not limited",
			 moves, unlimited);
}

static void *high_main(void *arg)
{
	high_chain(((struct lane *)arg)->xq, 640, NULL);
	return NULL;
}

/* Two protected queues, 1.2 and 2.0: the tighter one sets the budget. */
static void tightest(void)
{
	open_lane(&g_high[0], 2);
	open_lane(&g_high[1], 2);
	CHECK_OK(XHintLatencyObjective(g_high[0].xq, 1.2));
	CHECK_OK(XHintLatencyObjective(g_high[1].xq, 2.0));
	lows_start();
	t_sleep_us(50000);
	atomic_store(&g_nrec, 0);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, high_main, &g_high[1]) == 0);
	t_host_reset();
	int unlimited = 0, looks = 0, differ = 0;
	int64_t t0 = t_now_us();
	HwCommandHandle c[RING] = {0};
	for (int k = 0; k < 640 + RING; k++) {
		HwCommandHandle *s = &c[k % RING];
		if (*s) {
			CHECK_OK(XQueueWait(g_high[0].xq, *s));
			CHECK_OK(HwCommandDestroy(*s));
			*s = 0;
			XQueueStats a = t_stats(g_high[0].xq), b = t_stats(g_high[1].xq);
			if (k > 320) {
				looks++;
				unlimited += a.corun_budget_ns == UINT64_MAX;
				differ += a.corun_budget_ns != b.corun_budget_ns;
			}
		}
		if (k < 640) {
			CHECK_OK(HwCommandCreateHostFunc(s, high_fn, NULL));
			CHECK_OK(XQueueSubmit(g_high[0].xq, *s));
		}
	}
	CHECK(pthread_join(th, NULL) == 0);
	t_host host = t_host_get();
	lows_stop();
	printf("tightest wins: %d of %d looks unlimited, %d differed between the queues (%.1f "
	       "s)\n",
	       unlimited, looks, differ, (double)(t_now_us() - t0) / 1e6);
	/* Never unlimited under a tight objective, whatever the host (its noise shows more
	 * slowdown, not less). */
	CHECKF(unlimited == 0,
	       "tightest wins: never unlimited under 1.2 once settled; measured "
	       "unlimited at %d of %d looks",
	       unlimited, looks);
	/* The two are read one after the other: a change may fall between, and a thread kept
	 * waiting for a CPU between the reads sees more. */
	CHECK_TIMED(&host, differ <= 2,
		    "tightest wins: the two queues' budgets differ at most twice "
		    "in %d looks; measured %d",
		    looks, differ);
	close_lane(&g_high[0]);
	close_lane(&g_high[1]);
}

int main(void)
{
	pthread_t wd;
	CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0);
	bad_input();
	no_objective();
	converge_and_step();
	widens();
	tightest();
	atomic_store(&g_stop, true);
	atomic_store(&g_nrec, -1);
	CHECK(pthread_join(wd, NULL) == 0);
	CHECK_OK(XSchedShutdown());
	return t_exit();
}
