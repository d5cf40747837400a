/* Pacing: one slice of the objective's slack per protected unit; pace.h has the model.
 * Pure functions: the caller (budget.c, engine.c, under the device's or the XQueue's lock)
 * passes the time and owns the state. */
#include "preempt/pace.h"

int64_t xs_pace_open(xs_pace *p, int64_t now, int64_t allow_ns, int64_t remaining_ns)
{
	p->allow_ns = allow_ns;
	int64_t s = allow_ns - (remaining_ns > 0 ? remaining_ns : 0);
	if (s > 0 && p->debt_ns > 0) {
		int64_t pay = p->debt_ns < s ? p->debt_ns : s;
		p->debt_ns -= pay;
		s -= pay;
	}
	if (s < XS_PACE_MIN_NS) {
		p->end_ns = 0;
		return 0;
	}
	p->end_ns = now + s;
	p->slices++;
	p->given_ns += s;
	return s;
}

bool xs_pace_open_at(const xs_pace *p, int64_t now)
{
	return p->end_ns && now < p->end_ns;
}

bool xs_pace_fits(const xs_pace *p, int64_t now, int64_t remaining_ns, int64_t pred_ns)
{
	if (!xs_pace_open_at(p, now))
		return false;
	return now + (remaining_ns > 0 ? remaining_ns : 0) + pred_ns <= p->end_ns;
}

void xs_pace_close(xs_pace *p, int64_t now)
{
	(void)now;
	p->end_ns = 0;
}

void xs_pace_done(xs_pace *p, int64_t now, int64_t slice_end_ns)
{
	if (!slice_end_ns || now <= slice_end_ns)
		return;
	int64_t from = p->over_at > slice_end_ns ? p->over_at : slice_end_ns;
	if (now <= from)
		return; /* already counted with another command that overran with it */
	int64_t over = now - from;
	p->over_at = now;
	p->over_ns += over;
	p->debt_ns += over;
	int64_t cap = p->allow_ns * XS_PACE_DEBT_UNITS;
	if (p->debt_ns > cap)
		p->debt_ns = cap > 0 ? cap : 0;
}

int64_t xs_pace_known(const uint32_t *tab, int pos)
{
	if (!tab || pos < 0 || pos >= XS_PACE_POS || !tab[pos])
		return 0;
	int64_t ns = (int64_t)tab[pos] * 1000;
	return ns + ns / 4 + 10000;
}

int64_t xs_pace_predict(const uint32_t *tab, int pos, int64_t est_ns, int64_t long_ns)
{
	int64_t known = xs_pace_known(tab, pos);
	if (known)
		return known;
	int64_t ns = est_ns > long_ns ? est_ns : long_ns;
	return ns > 0 ? ns : 0;
}

void xs_pace_learn(uint32_t *tab, int pos, int64_t ns, int64_t *long_ns)
{
	if (ns <= 0)
		return;
	int64_t l = *long_ns - *long_ns / 32;
	*long_ns = ns > l ? ns : l;
	if (!tab || pos < 0 || pos >= XS_PACE_POS)
		return;
	int64_t us = ns / 1000 + 1, old = tab[pos];
	if (us > UINT32_MAX)
		us = UINT32_MAX;
	tab[pos] = (uint32_t)(us >= old ? us : old + (us - old) / 4);
}
