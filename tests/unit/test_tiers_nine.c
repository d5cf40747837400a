/* Any number of distinct priorities below the top is served by priority (issue 44, item 1):
 * nine and ten tiers, on the host backend under HPF, below an idle top queue.
 * - Eight busy lanes at priorities 1..8; a ninth lane at priority 9 (the highest limited
 *   one) starts 300 ms later: it completes commands, and gets at least the device time of
 *   the lane at 8 (by the weights, about four times as much). Before the fix the budget
 *   had tiers for eight priorities only, and a priority without one was served after
 *   every priority with one: the ninth lane completed nothing.
 * - Then the lane at priority 1 is raised to 50 (still below the top): it gets at least
 *   the device time of the lane at 9 (again about four times as much). Before, a waiter's
 *   priority change gave it no tier either.
 * Shares are measured by the device time charged (lanes.h), over windows of 1.5 s. */
#include "lanes.h"

#define WORK_US   500
#define WINDOW_MS 1500

static struct lanes g_lanes;

/* Lane @a has at least the device time of lane @b, and completed commands. */
static void check_above(const double *dev, const struct lanes *L, int a, int b)
{
	uint64_t ca = lanes_count(L, a, NULL);
	printf("  expected: prio %d gets at least the device time of prio %d (the weights give "
	       "it about 4x); measured %.1f ms against %.1f ms, %llu commands\n",
	       L->l[a].prio, L->l[b].prio, dev[a], dev[b], (unsigned long long)ca);
	fflush(stdout);
	CHECK(ca > 0);
	CHECK(dev[a] >= dev[b]);
}

int main(void)
{
	struct lanes *L = &g_lanes;
	HwQueueHandle htop;
	XQueueHandle top;
	lanes_top(&htop, &top, 100);
	for (int p = 1; p <= 8; p++)
		lanes_add(L, p, true); /* lane p - 1 */
	int nine = lanes_add(L, 9, false);
	lanes_start(L, WORK_US);
	t_sleep_us(300000);
	atomic_store(&L->l[nine].fed, true);
	lanes_mark(L);
	t_sleep_us(WINDOW_MS * 1000);
	double dev[LANES_MAX];
	lanes_report(L, "nine tiers, the ninth started 300 ms late", dev);
	check_above(dev, L, nine, 7);

	lanes_set_prio(L, 0, 50);
	lanes_mark(L);
	t_sleep_us(WINDOW_MS * 1000);
	lanes_report(L, "the lane at 1 raised to 50", dev);
	check_above(dev, L, 0, nine);

	lanes_close(L);
	CHECK_OK(XQueueDestroy(top));
	CHECK_OK(HwQueueDestroy(htop));
	return 0;
}
