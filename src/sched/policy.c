/* The table of built-in policies. */
#include <stddef.h>
#include <strings.h>

#include "sched/policy.h"

static const xs_policy_ops *const xs__policies[] = {
	&xs_policy_hpf,
};

const xs_policy_ops *xs_policy_find(XPolicyType type)
{
	for (size_t i = 0; i < sizeof(xs__policies) / sizeof(xs__policies[0]); i++)
		if (xs__policies[i]->type == type)
			return xs__policies[i];
	return NULL;
}

const xs_policy_ops *xs_policy_find_name(const char *name)
{
	for (size_t i = 0; i < sizeof(xs__policies) / sizeof(xs__policies[0]); i++)
		if (!strcasecmp(xs__policies[i]->name, name))
			return xs__policies[i];
	return NULL;
}
