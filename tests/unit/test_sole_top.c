/* The sole top queue (doc/architecture.md, "The sole top queue needs no counter wait") on
 * host queues at Lv2, HPF, co-run budget 0:
 * 1. H (priority 5), alone, is marked sole (with XSCHED_TOP_GATES=1: never);
 * 2. X (priority 9) arrives with a 40 ms command while H has 40 commands of 2 ms queued,
 *    a window of 8: H is no longer sole and is suspended; of H's commands, those enqueued
 *    without a counter wait run on, at most the window (8) after the suspension was
 *    applied (with XSCHED_TOP_GATES=1 at most the one that passed its wait as the counter
 *    came down); then all 40 run, once each and in order;
 * 3. once X is gone H is sole again, but not after the application suspended it
 *    (XQueueSuspend must stop it at its next command boundary from then on). */
#include <stdlib.h>
#include <string.h>

#include "hang_util.h"

enum { N = 40, WINDOW = 8 };

static atomic_llong g_start_us[N];
static atomic_int g_order[N], g_ran;
static atomic_llong g_x_end_us;

static XResult h_cmd(void *data)
{
	int i = (int)(intptr_t)data;
	g_start_us[i] = t_now_us();
	g_order[atomic_fetch_add(&g_ran, 1)] = i;
	t_sleep_us(2000);
	return kXSchedSuccess;
}

static XResult x_cmd(void *data)
{
	(void)data;
	t_sleep_us(40000);
	g_x_end_us = t_now_us();
	return kXSchedSuccess;
}

static bool started_two(void *arg)
{
	(void)arg;
	return atomic_load(&g_ran) >= 2;
}

int main(void)
{
	h_watchdog(60, "test_sole_top");
	const char *gates_env = getenv("XSCHED_TOP_GATES");
	bool gates = gates_env && strcmp(gates_env, "1") == 0;
	CHECK(setenv("XSCHED_CORUN_US", "0", 1) == 0);
	CHECK(setenv("XSCHED_HPF_LINGER_US", "0", 1) == 0);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	HwQueueHandle hh, hx;
	XQueueHandle h, x;
	CHECK_OK(HostQueueCreate(&hh));
	CHECK_OK(XQueueCreate(&h, hh, kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(h, 5));
	CHECK_OK(XQueueSetLaunchConfig(h, WINDOW, WINDOW / 2));
	/* 1 */
	if (!gates)
		h_wait_field(h, H_SOLE_TOP, true);

	/* 2 */
	for (int i = 0; i < N; i++)
		t_submit_fn(h, h_cmd, (void *)(intptr_t)i);
	CHECK(t_wait_for(started_two, NULL, 5000));
	CHECK_OK(HostQueueCreate(&hx));
	CHECK_OK(XQueueCreate(&x, hx, kPreemptLevelDeactivate, 0));
	CHECK_OK(XHintPriority(x, 9));
	t_submit_fn(x, x_cmd, NULL);
	h_wait_field(h, H_SCHED_SUSPENDED, true);
	long long suspended_us = t_now_us();
	CHECK(!h_get(h, H_SOLE_TOP));
	CHECK_OK(XQueueWaitAll(x));
	long long x_end = atomic_load(&g_x_end_us);
	int after = 0;
	for (int i = 0; i < N; i++) {
		long long s = atomic_load(&g_start_us[i]);
		after += s > suspended_us && s < x_end;
	}
	printf("%s: %d of H's commands started while it was suspended behind X\n",
	       gates ? "XSCHED_TOP_GATES=1" : "sole top", after);
	CHECK(after <= (gates ? 1 : WINDOW));
	CHECK_OK(XQueueWaitAll(h));
	CHECK(atomic_load(&g_ran) == N);
	for (int i = 0; i < N; i++)
		CHECK(g_order[i] == i);

	/* 3 */
	CHECK_OK(XQueueDestroy(x));
	CHECK_OK(HwQueueDestroy(hx));
	if (!gates)
		h_wait_field(h, H_SOLE_TOP, true);
	CHECK_OK(XQueueSuspend(h, 0));
	CHECK(!h_get(h, H_SOLE_TOP));
	CHECK_OK(XQueueResume(h, 0));
	CHECK_OK(XHintPriority(h, 6)); /* a pass that would mark it sole again */
	h_wait_field(h, H_LIMITED, false);
	CHECK(!h_get(h, H_SOLE_TOP));

	CHECK_OK(XQueueDestroy(h));
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_OK(XSchedShutdown());
	return 0;
}
