/* The table of built-in policies and helpers shared by them. */
#include <stddef.h>
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
