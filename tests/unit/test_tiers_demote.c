/* A queue that changes priority starts at its new tier's floor (issue 44, item 2), on the
 * host backend under HPF, below an idle top queue:
 * - X and Y at priority 3, Z and W at 5, all busy for 1.5 s: the tier of 5 gets about 4/5
 *   of the device time, so Z's own virtual time (the device time it was charged) runs far
 *   ahead of X's and Y's;
 * - then Z is set to 3: over the next 1.5 s the three share their one tier by device time,
 *   and Z gets at least a third of X's and Y's mean (by design as much as each).
 * Before the fix a priority change kept Z's virtual time, and Z waited until X and Y had
 * caught up with it (seconds: it completed 0-1 commands in the window).
 * And the reverse: Z raised to 5 again, beside W, busy there all along: over the next
 * 1.5 s each of the two gets at least a third of the other's device time (Z, behind W's
 * floor, brings no credit either).
 * Shares are measured by the device time charged (lanes.h). */
#include "lanes.h"

#define WORK_US   500
#define WINDOW_MS 1500

static struct lanes g_lanes;

int main(void)
{
	struct lanes *L = &g_lanes;
	HwQueueHandle htop;
	XQueueHandle top;
	lanes_top(&htop, &top, 10);
	int x = lanes_add(L, 3, true), y = lanes_add(L, 3, true), z = lanes_add(L, 5, true);
	int w = lanes_add(L, 5, true);
	lanes_start(L, WORK_US);
	lanes_mark(L);
	t_sleep_us(WINDOW_MS * 1000);
	double dev[LANES_MAX];
	lanes_report(L, "X, Y at 3, Z, W at 5", dev);
	CHECK(dev[z] > dev[x] && dev[z] > dev[y]); /* Z's tier first: its virtual time ahead */

	lanes_set_prio(L, z, 3);
	lanes_mark(L);
	t_sleep_us(WINDOW_MS * 1000);
	lanes_report(L, "Z set to 3", dev);
	double mean = (dev[x] + dev[y]) / 2;
	printf("  expected: Z at least a third of X's and Y's mean device time (by design "
	       "equal); measured Z %.1f ms, mean %.1f ms\n",
	       dev[z], mean);
	fflush(stdout);
	CHECK(lanes_count(L, z, NULL) > 0);
	CHECK(dev[z] >= mean / 3);

	lanes_set_prio(L, z, 5);
	lanes_mark(L);
	t_sleep_us(WINDOW_MS * 1000);
	lanes_report(L, "Z set to 5 again", dev);
	printf("  expected: Z and W each at least a third of the other's device time (by "
	       "design equal); measured Z %.1f ms, W %.1f ms\n",
	       dev[z], dev[w]);
	fflush(stdout);
	CHECK(dev[z] >= dev[w] / 3 && dev[w] >= dev[z] / 3);

	lanes_close(L);
	CHECK_OK(XQueueDestroy(top));
	CHECK_OK(HwQueueDestroy(htop));
	return 0;
}
