/* Issue 22, item 1: XQueueWait on a command of an XQueue while another thread destroys that
 * XQueue and creates a new one on the same HwQueue. The new XQueue numbers its commands
 * from 1 again (the HwQueue's done number goes back to 0); a waiter that had not yet seen
 * its command's number when that happened must still return (its command completed: the
 * destroy drained it).
 *
 * Made deterministic by holding the waiting thread where it wakes: the test is linked with
 * -Wl,--wrap=pthread_cond_wait, and the wrapper keeps that one thread (its lock released)
 * from returning from a wake-up while its command completes and the XQueue is re-created,
 * so it looks at the done number only afterwards. Fails (not hangs) when the wait does
 * not return within 2 s.
 *
 * Then the same restart must not happen to an XQueue in use: a refused XQueueCreate on a
 * HwQueue that has one leaves its numbering alone. */
#include "hang_util.h"

static atomic_bool g_release, g_hold, g_held, g_waiter_known;
static pthread_t g_waiter;
static XQueueHandle g_xq;
static HwCommandHandle g_cmd;
static XResult g_res = kXSchedErrorUnknown;

int __real_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int r = __real_pthread_cond_wait(c, m);
	if (atomic_load(&g_hold) && atomic_load(&g_waiter_known) &&
	    pthread_equal(pthread_self(), g_waiter)) {
		pthread_mutex_unlock(m);
		atomic_store(&g_held, true);
		while (atomic_load(&g_hold))
			t_sleep_us(100);
		pthread_mutex_lock(m);
	}
	return r;
}

static void *waiter(void *arg)
{
	(void)arg;
	g_waiter = pthread_self();
	atomic_store(&g_waiter_known, true);
	g_res = XQueueWait(g_xq, g_cmd);
	return NULL;
}

static XQueueHandle g_live;
static HwCommandHandle g_live_cmd;

static void *wait_live(void *arg)
{
	(void)arg;
	CHECK_OK(XQueueWait(g_live, g_live_cmd));
	return NULL;
}

/* A refused XQueueCreate on a HwQueue that has an XQueue leaves that XQueue's numbering
 * alone: its Lv2 command committed behind the counter still runs. */
static void refused_create(void)
{
	static atomic_bool release;
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_live, hwq, kPreemptLevelDeactivate, 0));
	HwCommandHandle blocker = h_submit(g_live, h_block_fn, &release);
	g_live_cmd = h_submit(g_live, h_nop_fn, NULL); /* committed: the counter is 2 */
	XQueueHandle other;
	CHECK(XQueueCreate(&other, hwq, kPreemptLevelBlock, 0) == kXSchedErrorNotAllowed);
	atomic_store(&release, true);
	h_call w;
	h_start(&w, wait_live, NULL);
	h_finish(&w, 2000,
		 "item 1: a refused XQueueCreate set the live XQueue's counter back: its "
		 "committed command never runs");
	CHECK_OK(HwCommandDestroy(blocker));
	CHECK_OK(HwCommandDestroy(g_live_cmd));
	CHECK_OK(XQueueDestroy(g_live));
	CHECK_OK(HwQueueDestroy(hwq));
}

int main(void)
{
	h_watchdog(20, "item 1 (XQueueWait after a re-create on the same HwQueue)");
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelBlock, 0));
	HwCommandHandle blocker = h_submit(g_xq, h_block_fn, &g_release);
	g_cmd = h_submit(g_xq, h_nop_fn, NULL); /* number 2 */
	h_call w;
	h_start(&w, waiter, NULL);
	t_sleep_us(50000); /* the waiter sleeps on the HwQueue's done number */
	/* Its next wake-up is held: its command completes, the XQueue goes (drained) and a
	 * new one starts on the same HwQueue before it looks. */
	atomic_store(&g_hold, true);
	atomic_store(&g_release, true);
	while (!atomic_load(&g_held))
		t_sleep_us(100);
	XQueueHandle old = g_xq;
	CHECK_OK(XQueueDestroy(old));
	XQueueHandle fresh;
	CHECK_OK(XQueueCreate(&fresh, hwq, kPreemptLevelBlock, 0));
	atomic_store(&g_hold, false);
	h_finish(&w, 2000,
		 "item 1: XQueueWait never returns after its XQueue was destroyed "
		 "and another was created on the same HwQueue");
	/* The waiter found its command complete (or, had the XQueue gone before the lookup,
	 * NotFound; it had not: the waiter was blocked inside the wait). */
	CHECK_OK(g_res);
	CHECK_OK(HwCommandDestroy(blocker));
	CHECK_OK(HwCommandDestroy(g_cmd));
	CHECK_OK(XQueueDestroy(fresh));
	CHECK_OK(HwQueueDestroy(hwq));
	refused_create();
	printf("item 1: the wait returned after the re-create\n");
	return 0;
}
