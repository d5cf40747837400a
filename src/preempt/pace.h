/* Pacing: the slack a latency objective allows, handed to the lower queues one slice per
 * unit, and the prediction of a lower command's device time that decides what fits in a
 * slice. A leaf of the engine: pure functions over the state given, no lock, no clock (the
 * caller passes the time), so that it is tested with fake clocks (tests/unit/test_pace.c).
 *
 * The model (doc/architecture.md, "Pacing"). A protected XQueue's unit (XQueueBeginUnit ..
 * XQueueEndUnit: a decode step, a denoising step, a request) may take G times its latency
 * alone, L. Spent evenly, that slack is (G - 1) L per unit: at the unit's start lower queues
 * get a *slice* of it, beside the unit (the default) or before it (XSCHED_PACE_WAIT=1: the
 * unit waits it out, then runs alone). A lower command is committed in a slice only if its
 * predicted device time ends within the slice (xs_pace_fits), so what a committed command
 * holds (a lower kernel holds its SMs until its blocks end) is over when the slice ends, and
 * no unit is delayed beyond G L by the pacer even where the lower work takes the whole GPU.
 * Spent in bursts (a co-run budget: lower work committed beside the unit all
 * along), the same slack breaks the tail: each kernel of a chain of short dependent kernels
 * waits for the lower blocks that took the SMs freed by its predecessor (H100, 2026-11-28:
 * a co-run budget of 200 us gave a decode step's p99 2.07x alone, its median 1.09x).
 *
 * What a lower command really held is measured at its completion: past the slice's end it
 * delayed the unit, and that overrun is owed (xs_pace_done): the next slices are shorter by
 * it, so that a command longer than predicted cannot take more than the slack on average.
 */
#ifndef XS_PREEMPT_PACE_H
#define XS_PREEMPT_PACE_H

#include <stdbool.h>
#include <stdint.h>

enum {
	/* A slice shorter than this is not opened: the unit goes at once (a wake-up and a
	 * commit cost tens of microseconds). */
	XS_PACE_MIN_NS = 20000,
	/* A slice with no lower work running and no waiter that fits is given up after this
	 * long (a lower queue that waits for each of its commands before it submits the next
	 * is back within tens of microseconds; ending the slice at once gave it nothing). */
	XS_PACE_GRACE_NS = 100000,
	/* Positions within a scope whose commands' device time is remembered, per XQueue
	 * (xs_pace_predict): a training step's leaf modules and their backward, in order. */
	XS_PACE_POS = 1024,
	/* The debt owed is forgiven past this many slices' worth: one command far longer than
	 * predicted must not keep the lower queues out for long. */
	XS_PACE_DEBT_UNITS = 4,
};

/* A device's pacing state (in struct xs_device, under its lock). */
typedef struct xs_pace {
	int64_t end_ns;   /* the open slice ends then (ns, monotonic); 0 = none open */
	int64_t debt_ns;  /* lower device time past earlier slices' ends, owed by the next */
	int64_t over_at;  /* overruns are counted up to here (overlapping ones count once) */
	int64_t allow_ns; /* the last unit's allowance (the debt's cap) */
	/* Statistics, since the device was made: */
	uint64_t slices;  /* slices opened */
	int64_t given_ns; /* their length, summed */
	int64_t over_ns;  /* lower device time past their ends, measured, summed */
} xs_pace;

/* A unit arrives at @now with @allow_ns of slack (its objective's share for it: level x
 * (G - 1) x its alone estimate) and @remaining_ns of lower work still committed, which
 * will overlap it whatever happens. Opens a slice of what is left after that and the debt
 * (the debt is paid from the allowance first), and returns its length in ns; 0 when none is
 * opened (less than XS_PACE_MIN_NS left): the unit goes at once. */
int64_t xs_pace_open(xs_pace *p, int64_t now, int64_t allow_ns, int64_t remaining_ns);
/* Whether a slice is open at @now. */
bool xs_pace_open_at(const xs_pace *p, int64_t now);
/* Whether a lower command predicted to hold the device @pred_ns fits the open slice at
 * @now, behind @remaining_ns of lower work still committed: it is expected to end by the
 * slice's end. */
bool xs_pace_fits(const xs_pace *p, int64_t now, int64_t remaining_ns, int64_t pred_ns);
/* The unit leaves its slice (it is released at @now, by time or early). */
void xs_pace_close(xs_pace *p, int64_t now);
/* A lower command committed in the slice that ended at @slice_end_ns completed at @now:
 * what it held past that end is owed (at most XS_PACE_DEBT_UNITS allowances in all). */
void xs_pace_done(xs_pace *p, int64_t now, int64_t slice_end_ns);

/* What the command at position @pos of a scope (0-based; -1 outside scopes) is predicted
 * to hold the device, from that position's device time seen before (@tab: per position,
 * in us, 0 = not seen; NULL = none kept), with a margin (a quarter, and 10 us for the
 * commit's trip); 0 where nothing was seen there. */
int64_t xs_pace_known(const uint32_t *tab, int pos);
/* The prediction of a lower command's device time: for a command at position @pos of a
 * scope (0-based; -1 outside scopes) whose device time was seen before (@tab: per position,
 * in us, 0 = not seen; NULL = none kept), that time with a margin (a quarter, and 10 us for
 * the commit's trip); else the larger of the queue's mean estimate @est_ns and its decayed
 * longest @long_ns. */
int64_t xs_pace_predict(const uint32_t *tab, int pos, int64_t est_ns, int64_t long_ns);
/* Learn a command's device time @ns at position @pos (@tab may be NULL, @pos -1): a longer
 * one at once, a shorter one by a quarter (the tail matters more than the mean); and the
 * decayed longest *@long_ns (decays by 1/32 a sample). */
void xs_pace_learn(uint32_t *tab, int pos, int64_t ns, int64_t *long_ns);

#endif
