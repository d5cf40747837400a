/* Pacing's accountant (src/preempt/pace.c) with fake clocks: no thread, no device; the
 * test plays the device and the engine.
 * - The slack per unit is bounded: units of alone time L with an objective G, and lower
 *   commands of random lengths committed only where xs_pace_fits says so, run as the
 *   engine runs them (one after another in the slice, the unit released when the slice
 *   ends or nothing more fits): no unit waits more than (G - 1) L, so none takes more than
 *   G L, when the commands take what was predicted; and the lower queues get at least
 *   half of the slack (the commands are at most half a slice long).
 * - When commands take longer than predicted, what they held past the slice is measured
 *   at their completion and owed: over many units the delays sum to at most the slack
 *   allowed plus the debt's cap, so a long command cannot take more than the slack on
 *   average; the debt is forgiven past XS_PACE_DEBT_UNITS allowances.
 * - The slice gives way to what is committed already and to the debt; a slice too short
 *   to use is not opened.
 * - The prediction: a position's time with a margin once seen, the queue's mean or its
 *   decayed longest otherwise; a longer sample at once, a shorter one by a quarter. */
#include "check.h"
#include "preempt/pace.h"

/* A small deterministic generator (the test must repeat). */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static int64_t rnd(int64_t lo, int64_t hi)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return lo + (int64_t)(g_rng % (uint64_t)(hi - lo + 1));
}

/* One unit arriving at *now with its slack @allow, as the engine serves it: lower commands
 * of predicted length in [lo, hi] ns are committed at once, one behind the other on the
 * device, while each fits (xs_pace_fits); each really takes @stretch per mille of its
 * prediction, and its completion is seen when it happens (xs_pace_done). The unit goes at
 * the slice's end, or sooner once the lower work is done and nothing more fits; lower work
 * that overran the slice delays it. Returns how long the unit waited, and adds the lower
 * device time to *lower. */
static int64_t unit(xs_pace *p, int64_t *now, int64_t allow, int64_t lo, int64_t hi,
		    int64_t stretch, int64_t *lower)
{
	int64_t arrive = *now;
	int64_t end = xs_pace_open(p, arrive, allow, 0) ? p->end_ns : 0;
	int64_t pred_until = arrive, real_until = arrive;
	while (end) {
		int64_t pred = rnd(lo, hi);
		if (!xs_pace_fits(p, arrive, pred_until - arrive, pred))
			break;
		int64_t real = pred * stretch / 1000;
		pred_until += pred;
		real_until += real;
		*lower += real;
		xs_pace_done(p, real_until, end);
	}
	if (end)
		xs_pace_close(p, real_until < end ? real_until : end);
	*now = real_until;
	return real_until - arrive;
}

static void test_bound_exact(void)
{
	const int64_t L = 1300000, G_PM = 1500; /* a decode step, objective 1.5 */
	const int64_t allow = L * (G_PM - 1000) / 1000;
	xs_pace p = {0};
	int64_t now = 1000000000, lower = 0, worst = 0;
	for (int i = 0; i < 10000; i++) {
		int64_t w = unit(&p, &now, allow, 20000, allow / 2, 1000, &lower);
		worst = w > worst ? w : worst;
		now += L + rnd(0, 200000); /* the unit runs alone, then a host gap */
	}
	printf("exact predictions: longest wait %lld ns of %lld allowed; lower time %.3f of the "
	       "slack\n",
	       (long long)worst, (long long)allow, (double)lower / (10000.0 * (double)allow));
	CHECKF(worst <= allow, "no unit waits beyond (G - 1) L = %lld ns, one waited %lld",
	       (long long)allow, (long long)worst);
	CHECKF(lower * 2 >= 10000 * allow, "the lows got %lld ns of %lld ns of slack",
	       (long long)lower, (long long)(10000 * allow));
	CHECKF(p.over_ns == 0 && p.debt_ns == 0, "no overrun expected, got %lld ns",
	       (long long)p.over_ns);
}

static void test_overrun_owed(void)
{
	const int64_t allow = 700000;
	xs_pace p = {0};
	int64_t now = 1000000000, lower = 0, waited = 0;
	const int n = 5000;
	for (int i = 0; i < n; i++) {
		waited += unit(&p, &now, allow, 50000, 300000, 1800, &lower);
		now += 1400000;
	}
	int64_t bound = (int64_t)n * allow + allow * XS_PACE_DEBT_UNITS;
	printf("commands 1.8x their prediction: waits %lld ns in all, bound %lld; overrun %lld "
	       "ns, debt left %lld\n",
	       (long long)waited, (long long)bound, (long long)p.over_ns, (long long)p.debt_ns);
	CHECKF(p.over_ns > 0, "the overrun is measured (got %lld)", (long long)p.over_ns);
	CHECKF(waited <= bound, "delays within the slack plus the debt's cap: %lld > %lld",
	       (long long)waited, (long long)bound);
	CHECKF(p.debt_ns <= allow * XS_PACE_DEBT_UNITS, "debt capped: %lld", (long long)p.debt_ns);
}

static void test_open_rules(void)
{
	xs_pace p = {0};
	/* What is committed already and the debt come out of the allowance. */
	CHECKF(xs_pace_open(&p, 1000, 500000, 200000) == 300000, "slice = allow - remaining");
	CHECK(xs_pace_open_at(&p, 1000) && !xs_pace_open_at(&p, 301000));
	CHECK(xs_pace_fits(&p, 1000, 0, 300000) && !xs_pace_fits(&p, 1000, 1, 300000));
	xs_pace_close(&p, 2000);
	CHECK(!xs_pace_open_at(&p, 2000) && !xs_pace_fits(&p, 2000, 0, 1));
	/* A command of that slice ends 100 us past its end: owed. */
	xs_pace_done(&p, 401000, 301000);
	CHECKF(p.debt_ns == 100000, "debt 100 us, got %lld", (long long)p.debt_ns);
	/* Another that ended at the same moment counts once. */
	xs_pace_done(&p, 401000, 301000);
	CHECK(p.debt_ns == 100000 && p.over_ns == 100000);
	CHECKF(xs_pace_open(&p, 500000, 500000, 0) == 400000, "the debt is paid first");
	CHECK(p.debt_ns == 0);
	/* Too short to use: not opened; the unit goes at once. */
	CHECK(xs_pace_open(&p, 1000000, XS_PACE_MIN_NS - 1, 0) == 0 && !p.end_ns);
	CHECK(xs_pace_open(&p, 1000000, 100000, 100000) == 0);
	/* The debt is forgiven past its cap. */
	xs_pace q = {0};
	xs_pace_open(&q, 0, 100000, 0);
	xs_pace_done(&q, 10000000, 100000);
	CHECKF(q.debt_ns == 100000 * XS_PACE_DEBT_UNITS, "debt capped at %d allowances: %lld",
	       XS_PACE_DEBT_UNITS, (long long)q.debt_ns);
}

static void test_predict(void)
{
	uint32_t tab[XS_PACE_POS] = {0};
	int64_t longest = 0;
	/* Unknown: the larger of the mean and the decayed longest. */
	CHECK(xs_pace_predict(tab, 3, 50000, 0) == 50000);
	xs_pace_learn(tab, 3, 400000, &longest);
	CHECK(longest == 400000);
	CHECKF(xs_pace_predict(tab, 3, 50000, longest) == 401000 + 401000 / 4 + 10000,
	       "a seen position: its time, a quarter more and 10 us; got %lld",
	       (long long)xs_pace_predict(tab, 3, 50000, longest));
	CHECK(xs_pace_predict(tab, 4, 50000, longest) == 400000);
	CHECK(xs_pace_predict(NULL, -1, 50000, longest) == 400000);
	/* A shorter sample lowers a position by a quarter of the gap; a longer one at once. */
	xs_pace_learn(tab, 3, 200000, &longest);
	CHECKF(tab[3] == 401 - (401 - 201) / 4, "got %u us", tab[3]);
	xs_pace_learn(tab, 3, 900000, &longest);
	CHECK(tab[3] == 901 && longest == 900000);
	/* The longest decays by 1/32 a sample. */
	for (int i = 0; i < 64; i++)
		xs_pace_learn(NULL, -1, 1000, &longest);
	CHECKF(longest < 900000 / 3 && longest > 900000 / 16, "decayed longest %lld",
	       (long long)longest);
	/* Positions past the table have none. */
	xs_pace_learn(tab, XS_PACE_POS, 5000000, &longest);
	CHECK(xs_pace_predict(tab, XS_PACE_POS, 1000, 0) == 1000);
}

int main(void)
{
	test_open_rules();
	test_predict();
	test_bound_exact();
	test_overrun_owed();
	printf("ok\n");
	return 0;
}
