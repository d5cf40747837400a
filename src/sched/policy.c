/* The table of built-in policies and helpers shared by them. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "core/log.h"
#include "sched/policy.h"

static const xs_policy_ops *const xs__policies[] = {
    &xs_policy_hpf, &xs_policy_up,  &xs_policy_kedf, &xs_policy_edf,
    &xs_policy_lax, &xs_policy_cfs, &xs_policy_fifo, &xs_policy_mlfq,
};

#define XS__NPOLICIES (sizeof(xs__policies) / sizeof(xs__policies[0]))

const xs_policy_ops *xs_policy_find(XPolicyType type)
{
	for (size_t i = 0; i < XS__NPOLICIES; i++)
		if (xs__policies[i]->type == type)
			return xs__policies[i];
	return NULL;
}

const xs_policy_ops *xs_policy_find_name(const char *name)
{
	for (size_t i = 0; i < XS__NPOLICIES; i++)
		if (!strcasecmp(xs__policies[i]->name, name))
			return xs__policies[i];
	return NULL;
}

void xs_policy_names(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < XS__NPOLICIES && used < len; i++) {
		int n =
		    snprintf(buf + used, len - used, "%s%s", i ? ", " : "", xs__policies[i]->name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

bool xs_policy_valid(XPolicyType type)
{
	return (type > kPolicyUnknown && type < kPolicyMax) ||
	       (type >= kPolicyFirstInFirstOut && type < kPolicyExtendedMax);
}

void *xs_policy_slot(xs_sched_entry *e, size_t size)
{
	if (!*e->slot) {
		*e->slot = calloc(1, size);
		if (!*e->slot)
			XS_ERROR("sched", "out of memory for the policy state of queue #%llu",
				 (unsigned long long)e->id);
	}
	return *e->slot;
}

void xs_policy_slot_free(void **slot)
{
	free(*slot);
	*slot = NULL;
}

/* ---- a line of equals (FIFO; EDF among equal deadlines) ---- */

/* A queue's place in the line, in its slot. */
typedef struct xs__place {
	int64_t ready_since_ns; /* the ready spell the place belongs to */
	int64_t place_ns;       /* when it got work, or when it was sent to the back */
	int64_t chosen_ns;      /* when its turn began, 0 = not chosen now */
} xs__place;

/* Where @e stands: its place, or its ready time where it has no slot (no memory). */
static int64_t xs__line_place(const xs_sched_entry *e)
{
	const xs__place *pl = *e->slot;
	return pl ? pl->place_ns : e->ready_since_ns;
}

static bool xs__line_before(const xs_sched_entry *a, const xs_sched_entry *b, xs_policy_key key)
{
	int64_t ka = key(a), kb = key(b);
	if (ka != kb)
		return ka < kb;
	int64_t pa = xs__line_place(a), pb = xs__line_place(b);
	if (pa != pb)
		return pa < pb;
	return a->id < b->id;
}

/* Choose the @k first ready entries (suspend false); suspend every other one. O(k n). */
static void xs__line_choose(xs_sched_entry *e, size_t n, size_t k, xs_policy_key key)
{
	for (size_t i = 0; i < n; i++)
		e[i].suspend = true;
	for (size_t j = 0; j < k; j++) {
		xs_sched_entry *best = NULL;
		for (size_t i = 0; i < n; i++)
			if (e[i].ready && e[i].suspend &&
			    (!best || xs__line_before(&e[i], best, key)))
				best = &e[i];
		if (!best)
			break;
		best->suspend = false;
	}
}

/* Whether a ready entry of @c's key waits (is not chosen). */
static bool xs__line_waiter(const xs_sched_entry *e, size_t n, const xs_sched_entry *c,
			    xs_policy_key key)
{
	int64_t kc = key(c);
	for (size_t i = 0; i < n; i++)
		if (e[i].ready && e[i].suspend && key(&e[i]) == kc)
			return true;
	return false;
}

/* Begin the turns of the chosen entries that have none; with @rotate, send to the back
 * those whose turn lasted @slice_ns while an equal waits. Returns whether one was sent. */
static bool xs__line_turns(xs_sched_entry *e, size_t n, xs_policy_key key, int64_t now,
			   int64_t slice_ns)
{
	bool moved = false;
	for (size_t i = 0; i < n; i++) {
		xs__place *pl = *e[i].slot;
		if (!pl)
			continue;
		if (e[i].suspend) {
			pl->chosen_ns = 0;
			continue;
		}
		if (!pl->chosen_ns)
			pl->chosen_ns = now;
		if (now - pl->chosen_ns >= slice_ns && xs__line_waiter(e, n, &e[i], key)) {
			pl->place_ns = now;
			pl->chosen_ns = 0;
			moved = true;
		}
	}
	return moved;
}

int64_t xs_policy_line_decide(xs_sched_entry *e, size_t n, size_t k, xs_policy_key key,
			      const xs_sched_params *p)
{
	size_t ready = 0;
	for (size_t i = 0; i < n; i++) {
		xs__place *pl = e[i].ready ? xs_policy_slot(&e[i], sizeof(*pl)) : NULL;
		ready += e[i].ready;
		if (pl && pl->ready_since_ns != e[i].ready_since_ns) {
			/* Work after an idle spell: the back of the line, first come first served.
			 */
			pl->ready_since_ns = e[i].ready_since_ns;
			pl->place_ns = e[i].ready_since_ns;
			pl->chosen_ns = 0;
		}
	}
	if (ready < k) {
		/* Free places: every ready queue runs, and so do the idle ones; no turns. */
		for (size_t i = 0; i < n; i++) {
			e[i].suspend = false;
			if (*e[i].slot)
				((xs__place *)*e[i].slot)->chosen_ns = 0;
		}
		return 0;
	}
	int64_t slice = p->timeslice_us * 1000;
	xs__line_choose(e, n, k, key);
	if (xs__line_turns(e, n, key, p->now_ns, slice)) {
		xs__line_choose(e, n, k, key);
		xs__line_turns(e, n, key, p->now_ns, slice); /* new turns begin now: none ends */
	}
	int64_t timer = 0;
	for (size_t i = 0; i < n; i++) {
		const xs__place *pl = *e[i].slot;
		if (pl && pl->chosen_ns && xs__line_waiter(e, n, &e[i], key) &&
		    (!timer || pl->chosen_ns + slice < timer))
			timer = pl->chosen_ns + slice;
	}
	return timer;
}
