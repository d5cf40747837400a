/* Issue 22, item 6: policies under load. One XQueue of priority 10 works in bursts (10 ms
 * of 0.5 ms host functions, then 10 ms idle); 8 XQueues of priority 1 keep 4 commands of
 * 1 ms each in flight (4 of them host functions, 4 launch callbacks), on host queues at
 * Lv1 (XS_TEST_LEVEL=2: Lv2). Under each policy the process must keep completing commands
 * (no stretch of 1 s without a completion), every submitter must end when asked, and no
 * queue may starve: the high one completes more than its first burst, each low one more
 * than the commands it had in flight at the start. FIFO, EDF and KEDF by default (1 s
 * each, XS_TEST_RUN_MS=n for longer); an argument names other policies (HPF, LAX, UP,
 * CFS). Fails (not hangs) at the first stall or starved queue. */
#include <strings.h>

#include "hang_util.h"

#define LOWS     8
#define INFLIGHT 4

static XQueueHandle g_xq[LOWS + 1]; /* [LOWS] is the high one */
static HwQueueHandle g_hwq[LOWS + 1];
static atomic_bool g_stop;
static atomic_llong g_done; /* completions seen by the submitters */
static atomic_int g_per[LOWS + 1];
static int64_t g_run_us = 1000000;       /* XS_TEST_RUN_MS overrides */
static int g_level = kPreemptLevelBlock; /* XS_TEST_LEVEL overrides */

static XResult sleep_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	t_sleep_us(*(int64_t *)data);
	return kXSchedSuccess;
}

static HwCommandHandle submit(int i, bool callback, int64_t *us)
{
	HwCommandHandle c;
	if (callback)
		CHECK_OK(HwCommandCreateCallback(&c, sleep_cb, us));
	else
		CHECK_OK(HwCommandCreateHostFunc(&c, t_sleep_fn, us));
	CHECK_OK(XQueueSubmit(g_xq[i], c));
	return c;
}

static void *low_main(void *arg)
{
	int i = (int)(intptr_t)arg;
	static int64_t us = 1000;
	HwCommandHandle ring[INFLIGHT];
	for (int k = 0; k < INFLIGHT; k++)
		ring[k] = submit(i, i >= LOWS / 2, &us);
	for (int k = 0; !atomic_load(&g_stop); k = (k + 1) % INFLIGHT) {
		CHECK_OK(XQueueWait(g_xq[i], ring[k]));
		CHECK_OK(HwCommandDestroy(ring[k]));
		atomic_fetch_add(&g_done, 1);
		atomic_fetch_add(&g_per[i], 1);
		ring[k] = submit(i, i >= LOWS / 2, &us);
	}
	CHECK_OK(XQueueWaitAll(g_xq[i]));
	for (int k = 0; k < INFLIGHT; k++)
		CHECK_OK(HwCommandDestroy(ring[k]));
	return NULL;
}

static void *high_main(void *arg)
{
	(void)arg;
	static int64_t us = 500;
	while (!atomic_load(&g_stop)) {
		for (int k = 0; k < 20; k++)
			t_submit_fn(g_xq[LOWS], t_sleep_fn, &us);
		CHECK_OK(XQueueWaitAll(g_xq[LOWS]));
		atomic_fetch_add(&g_done, 20);
		atomic_fetch_add(&g_per[LOWS], 20);
		t_sleep_us(10000);
	}
	return NULL;
}

static void run(const char *name, XPolicyType policy)
{
	char what[160];
	snprintf(what, sizeof(what), "item 6: the process stalls under %s (no completion for 1 s)",
		 name);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, policy));
	for (int i = 0; i <= LOWS; i++) {
		CHECK_OK(HostQueueCreate(&g_hwq[i]));
		CHECK_OK(XQueueCreate(&g_xq[i], g_hwq[i], g_level, 0));
		CHECK_OK(XHintPriority(g_xq[i], i == LOWS ? 10 : 1));
		atomic_store(&g_per[i], 0);
	}
	atomic_store(&g_stop, false);
	h_call th[LOWS + 1];
	for (int i = 0; i < LOWS; i++)
		h_start(&th[i], low_main, (void *)(intptr_t)i);
	h_start(&th[LOWS], high_main, NULL);
	int64_t start = t_now_us(), last_t = start;
	long long last = 0;
	while (t_now_us() - start < g_run_us) {
		t_sleep_us(10000);
		long long d = atomic_load(&g_done);
		if (d != last) {
			last = d;
			last_t = t_now_us();
		} else if (t_now_us() - last_t > 1000000) {
			h_hang(what);
		}
	}
	atomic_store(&g_stop, true);
	for (int i = 0; i <= LOWS; i++)
		h_finish(&th[i], 3000, what);
	printf("%-4s:", name);
	for (int i = 0; i <= LOWS; i++)
		printf(" %d", atomic_load(&g_per[i]));
	printf(" (completions: 8 low queues, then the high one)\n");
	/* No queue starves: the high one gets more than its first burst, each low one more
	 * than the commands it had in flight at the start. */
	bool starved = atomic_load(&g_per[LOWS]) < 40;
	for (int i = 0; i < LOWS; i++)
		starved |= atomic_load(&g_per[i]) < 3;
	if (starved) {
		snprintf(what, sizeof(what),
			 "item 6: under %s a queue that always has work keeps the device; the "
			 "others (the high one included) starve",
			 name);
		h_hang(what);
	}
	for (int i = 0; i <= LOWS; i++) {
		CHECK_OK(XQueueDestroy(g_xq[i]));
		CHECK_OK(HwQueueDestroy(g_hwq[i]));
	}
	CHECK_OK(XSchedShutdown());
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		XPolicyType type;
	} all[] = {
	    {"FIFO", kPolicyFirstInFirstOut},
	    {"EDF", kPolicyEarliestDeadlineFirst},
	    {"KEDF", kPolicyKEarliestDeadlineFirst},
	    {"HPF", kPolicyHighestPriorityFirst},
	    {"LAX", kPolicyLaxity},
	    {"UP", kPolicyUtilizationPartition},
	    {"CFS", kPolicyCompletelyFairScheduler},
	};
	const char *ms = getenv("XS_TEST_RUN_MS");
	if (ms)
		g_run_us = atoll(ms) * 1000;
	const char *lv = getenv("XS_TEST_LEVEL");
	if (lv)
		g_level = atoi(lv);
	h_watchdog(60 + (unsigned)(g_run_us / 1000000) * 8, "item 6 (policies under load)");
	for (size_t p = 0; p < sizeof(all) / sizeof(all[0]); p++) {
		bool chosen = argc < 2 && p < 3;
		for (int a = 1; a < argc; a++)
			chosen |= !strcasecmp(argv[a], all[p].name);
		if (chosen)
			run(all[p].name, all[p].type);
	}
	return 0;
}
