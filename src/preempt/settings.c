/* The engine's process-wide settings: the commitment budget (XHintCommitBudget,
 * XSCHED_BUDGET_US), the co-run budget (XHintCorunBudget, XSCHED_CORUN_US), strict
 * priorities (XHintStrictPriority, XSCHED_STRICT_PRIORITY) and the scheduler's hold. A
 * setting not given by a call is read from the configuration (core/config.c) at first use,
 * and again after XSchedShutdown (xs_settings_reset).
 *
 * A leaf: it calls no other file of the engine. The budget (budget.c), the latency
 * objectives (objective.c) and the board's glue (remote.c) read here; device.c sets and
 * then asks every device to hand budget on. Relaxed atomics, read on the hot path; no lock.
 */
#include "core/config.h"
#include "preempt/engine_int.h"

/* The settings, one struct, made anew in a fork child (xs_settings_forked). */
static struct xs__settings {
	_Atomic int64_t budget_ns, corun_ns; /* -1 = from the configuration at first use */
	atomic_bool hold;                    /* xs_dev_set_hold */
	atomic_int strict;                   /* xs_dev_set_strict; -1 = configuration */
} xs__set = {-1, -1, false, -1};

static int64_t xs__ns(_Atomic int64_t *v, bool corun)
{
	int64_t ns = atomic_load_explicit(v, memory_order_relaxed);
	if (ns < 0) {
		const xs_config *c = xs_config_get();
		ns = corun ? c->corun_ns : c->budget_ns;
		atomic_store_explicit(v, ns, memory_order_relaxed);
	}
	return ns;
}

int64_t xs_settings_budget_ns(void)
{
	return xs__ns(&xs__set.budget_ns, false);
}

int64_t xs_settings_corun_ns(void)
{
	return xs__ns(&xs__set.corun_ns, true);
}

bool xs_settings_hold(void)
{
	return atomic_load_explicit(&xs__set.hold, memory_order_relaxed);
}

bool xs_settings_strict(void)
{
	int strict = atomic_load_explicit(&xs__set.strict, memory_order_relaxed);
	if (strict < 0) {
		strict = xs_config_get()->strict_priority;
		atomic_store_explicit(&xs__set.strict, strict, memory_order_relaxed);
	}
	return strict;
}

bool xs_settings_set(enum xs_setting which, int64_t value)
{
	switch (which) {
	case XS_SETTING_BUDGET:
		atomic_store_explicit(&xs__set.budget_ns, value, memory_order_relaxed);
		return true; /* waiters may fit now */
	case XS_SETTING_CORUN:
		atomic_store_explicit(&xs__set.corun_ns, value, memory_order_relaxed);
		return true;
	case XS_SETTING_STRICT:
		atomic_store_explicit(&xs__set.strict, (int)value, memory_order_relaxed);
		return true; /* another waiter may come first now */
	case XS_SETTING_HOLD:
		/* Queues held back may commit now that the hold is off. */
		return atomic_exchange_explicit(&xs__set.hold, value != 0, memory_order_relaxed) &&
		       !value;
	}
	return false;
}

void xs_settings_reset(void)
{
	atomic_store_explicit(&xs__set.strict, -1, memory_order_relaxed);
	atomic_store_explicit(&xs__set.budget_ns, -1, memory_order_relaxed);
	atomic_store_explicit(&xs__set.corun_ns, -1, memory_order_relaxed);
}

void xs_settings_forked(void)
{
	xs__set = (struct xs__settings){-1, -1, false, -1}; /* one thread here: no race */
}
