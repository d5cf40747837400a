/* Every tier served at any depth (issue 44, item 6), on the host backend under HPF: eight
 * busy lanes at priorities 1..8 below an idle top queue, for 3 s.
 * The tiers' weights are 4^-k (k waiting tiers above), but never below 1/(8n) with n
 * tiers waiting (xsched.h, XHintStrictPriority): each waiting tier gets at least 1/(12n)
 * of the device time the budget hands out, 1/96 here (the lowest five lanes about 1/89
 * each by the weights). Checked, by the device time charged (lanes.h):
 * - every lane completes commands, and each gets at least a third of that floor (a loaded
 *   host's estimates scatter); before the fix the weights 4^-k left the lowest lane
 *   4^-7 of the budget, and the two lowest completed nothing;
 * - the floor does not flatten the order: the lane at 8 gets more device time than any
 *   other (by the weights at least 4x; a queue cannot always take its turn, as its own
 *   commands run one after another, and the lower ones then get it). */
#include "lanes.h"

#define WORK_US   500
#define WINDOW_MS 3000
#define NLANES    8

static struct lanes g_lanes;

int main(void)
{
	struct lanes *L = &g_lanes;
	HwQueueHandle htop;
	XQueueHandle top;
	lanes_top(&htop, &top, 100);
	for (int p = 1; p <= NLANES; p++)
		lanes_add(L, p, true); /* lane p - 1 */
	lanes_start(L, WORK_US);
	t_sleep_us(200000); /* every lane busy */
	lanes_mark(L);
	t_sleep_us(WINDOW_MS * 1000);
	double dev[LANES_MAX];
	double total = lanes_report(L, "eight tiers", dev);
	double floor = total / (12.0 * NLANES), least = dev[0];
	for (int i = 1; i < NLANES; i++)
		least = dev[i] < least ? dev[i] : least;
	printf("  expected: every lane at least a third of the floor 1/(12n) of %.1f ms, %.2f "
	       "ms; measured: the least %.2f ms\n",
	       total, floor / 3, least);
	fflush(stdout);
	for (int i = 0; i < NLANES; i++) {
		CHECK(lanes_count(L, i, NULL) > 0);
		CHECK(dev[i] >= floor / 3);
	}
	double second = 0;
	for (int i = 0; i < NLANES - 1; i++)
		second = dev[i] > second ? dev[i] : second;
	printf("  expected: prio 8 more device time than any other; measured %.1f ms, the next "
	       "%.1f ms\n",
	       dev[NLANES - 1], second);
	CHECK(dev[NLANES - 1] > second);

	lanes_close(L);
	CHECK_OK(XQueueDestroy(top));
	CHECK_OK(HwQueueDestroy(htop));
	return 0;
}
