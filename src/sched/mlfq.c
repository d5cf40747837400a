/* MLFQ, multi-level feedback queue (XSched's kPolicyMultiLevelFeedbackQueue,
 * sched/src/policy/mlfq.cpp), for processes whose queues carry no priority hints: work
 * that uses the device in short bursts stays on top, work that keeps it busy sinks.
 *
 * Rules (the classic ones: Corbato's CTSS, 1962; as stated in Arpaci-Dusseau, "Operating
 * Systems: Three Easy Pieces", chapter 8, rules 1-5):
 * - Levels 0 (top) .. XS_MLFQ_LEVELS - 1. HPF between levels: while a queue of level l
 *   is ready, every queue of a level below l is suspended, idle ones included; the ready
 *   queues of the highest occupied level run together (rules 1 and 2, as hpf.c does
 *   with priorities). The level is also the queue's rank for the engine (-level): queues
 *   below the top level present on their device are subject to the commitment budget,
 *   and to the co-run budget while a top-level queue has work (the hold, as with HPF).
 * - Allotment (rule 4, with OSTEP's accounting that cannot be gamed by yielding): a queue
 *   is charged the device time its commands took (the engine's measurement,
 *   xs_xqueue.busy_ns, summed at each completion), whether it was suspended meanwhile
 *   or not; once it has used its level's slice, XS_MLFQ_SLICE_NS << level, it moves one
 *   level down, and the remainder is charged there. The last level keeps its queues.
 * - Back from idle (rule 4's intent, "interactive work stays at the top"): a queue that
 *   was idle (not ready) for at least XS_MLFQ_IDLE_NS when it becomes ready again starts
 *   over at its starting level with a fresh allotment. Shorter idle spells (a thread
 *   that waits for one batch and submits the next) change nothing, so a queue cannot
 *   stay on top by draining between batches.
 * - Boost (rule 5, anti-starvation): a ready queue that this policy kept suspended for
 *   XS_MLFQ_BOOST_NS without a break moves to level 0 with a fresh allotment. So every
 *   ready queue runs at least once per boost period plus the top level's slice.
 * - New queues (rule 3) start at their starting level: level 0 for XHintPriority >= 0
 *   (the default), level min(-prio, last) for negative priorities: -1 starts one level
 *   down, -3 and below at the last level. A priority hint that changes moves the queue to
 *   its new starting level at once. PRIORITY_NO_EXECUTE keeps the queue suspended (as
 *   with every policy).
 *
 * Constants (policy.h): 4 levels and slices of 10, 20, 40 and 80 ms are XSched's
 * (mlfq.cpp: levels 0-3, slice 10 ms * 2^level); the boost after 100 ms of waiting is
 * XSched's recovery threshold (100 ms; XSched promotes one level at a time there, after
 * discounting the time spent waiting behind peers, where this one boosts to the top as
 * OSTEP's rule 5 does); the idle threshold of 1 ms is this library's: far above the host
 * turnaround between two batches of a thread that waits for each (tens of us), far
 * below the gaps between the requests of an interactive stream.
 *
 * Differences from XSched: XSched runs one queue per device (the longest waiting at the
 * best level) and wakes every 5 ms; here every queue of the best level runs, as with
 * HPF, and the timer is set only while a decision depends on time: at least two queues
 * are ready, and then at the moment the first running one may use up its slice (at
 * least XS__MLFQ_TICK_NS later) or a waiting one reaches its boost. XSched charges wall
 * time while a queue is resumed; here the engine's device time is charged.
 */
#include "sched/policy.h"

enum {
	/* The least step of the timer: usage is known at completions only, so a slice that
	 * should be over by now is looked at again this much later. */
	XS__MLFQ_TICK_NS = 1000000,
};

/* Per queue (its slot). */
struct xs__mlfq_q {
	bool seen;
	int level;
	int64_t used_ns;       /* device time charged at this level */
	int64_t busy_seen_ns;  /* e->busy_ns at the last pass */
	Priority prio_seen;    /* e->prio at the last pass */
	int64_t idle_since_ns; /* first pass that saw it idle, 0 = seen ready */
	int64_t wait_since_ns; /* ready and suspended by this policy since, 0 = not */
};

static int64_t xs__slice_ns(int level)
{
	return (int64_t)XS_MLFQ_SLICE_NS << level;
}

static int xs__start_level(Priority prio)
{
	if (prio >= 0)
		return 0;
	return -prio < XS_MLFQ_LEVELS - 1 ? -prio : XS_MLFQ_LEVELS - 1;
}

static void xs__set_level(struct xs__mlfq_q *st, int level)
{
	st->level = level;
	st->used_ns = 0;
}

/* Charge @ns of device time; move down while a slice is used up. */
static void xs__charge(struct xs__mlfq_q *st, int64_t ns)
{
	st->used_ns += ns;
	while (st->level < XS_MLFQ_LEVELS - 1 && st->used_ns >= xs__slice_ns(st->level)) {
		st->used_ns -= xs__slice_ns(st->level);
		st->level++;
	}
	if (st->level == XS_MLFQ_LEVELS - 1)
		st->used_ns = 0; /* the last level keeps its queues: nothing to count */
}

/* Bring @st up to date with @e at @now: charge, priority change, idle return, boost. */
static void xs__update(struct xs__mlfq_q *st, const xs_sched_entry *e, int64_t now)
{
	int start = xs__start_level(e->prio);
	if (!st->seen) {
		st->seen = true;
		st->busy_seen_ns = e->busy_ns;
		st->prio_seen = e->prio;
		xs__set_level(st, start);
	}
	int64_t used = e->busy_ns - st->busy_seen_ns;
	st->busy_seen_ns = e->busy_ns;
	xs__charge(st, used > 0 ? used : 0);
	if (e->prio != st->prio_seen) {
		st->prio_seen = e->prio;
		xs__set_level(st, start);
	}
	if (!e->ready) {
		if (!st->idle_since_ns)
			st->idle_since_ns = now;
		else if (now - st->idle_since_ns >= XS_MLFQ_IDLE_NS)
			xs__set_level(st, start); /* already ranked where it will come back */
		st->wait_since_ns = 0;
		return;
	}
	if (st->idle_since_ns && now - st->idle_since_ns >= XS_MLFQ_IDLE_NS)
		xs__set_level(st, start);
	st->idle_since_ns = 0;
	if (st->wait_since_ns && now - st->wait_since_ns >= XS_MLFQ_BOOST_NS) {
		xs__set_level(st, 0);
		st->wait_since_ns = 0;
	}
}

/* When a decision may change next, given @st's new state (0: not for this queue). */
static int64_t xs__next_ns(const struct xs__mlfq_q *st, const xs_sched_entry *e, int64_t now)
{
	if (!e->ready)
		return 0;
	if (e->suspend)
		return st->wait_since_ns + XS_MLFQ_BOOST_NS;
	if (st->level == XS_MLFQ_LEVELS - 1)
		return 0;
	int64_t left = xs__slice_ns(st->level) - st->used_ns;
	return now + (left > XS__MLFQ_TICK_NS ? left : XS__MLFQ_TICK_NS);
}

static int64_t xs__mlfq_schedule(xs_sched_entry *e, size_t n, const xs_sched_params *p)
{
	int top = XS_MLFQ_LEVELS; /* none ready */
	size_t nready = 0;
	for (size_t i = 0; i < n; i++) {
		struct xs__mlfq_q *st = xs_policy_slot(&e[i], sizeof(*st));
		if (!st || e[i].prio == PRIORITY_NO_EXECUTE)
			continue; /* out of memory: left as it is; NO_EXECUTE: sched.c holds it */
		xs__update(st, &e[i], p->now_ns);
		e[i].rank = (Priority)-st->level;
		if (e[i].ready) {
			nready++;
			if (st->level < top)
				top = st->level;
		}
	}
	int64_t timer = 0;
	for (size_t i = 0; i < n; i++) {
		struct xs__mlfq_q *st = *e[i].slot;
		if (!st || e[i].prio == PRIORITY_NO_EXECUTE)
			continue;
		e[i].suspend = st->level > top;
		if (!e[i].ready || !e[i].suspend)
			st->wait_since_ns = 0;
		else if (!st->wait_since_ns)
			st->wait_since_ns = p->now_ns;
		int64_t t = nready > 1 ? xs__next_ns(st, &e[i], p->now_ns) : 0;
		if (t && (!timer || t < timer))
			timer = t;
	}
	return timer;
}

const xs_policy_ops xs_policy_mlfq = {
    .type = kPolicyMultiLevelFeedbackQueue,
    .name = "MLFQ",
    .hold = true,
    .schedule = xs__mlfq_schedule,
    .forget = xs_policy_slot_free,
};
