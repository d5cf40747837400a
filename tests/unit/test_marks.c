/* Left-out done marks (hal.h, engine.c's xs__may_leave_mark): an XQueue that nothing limits
 * puts a done mark after every batch_size-th command only; the others are seen done with a
 * later mark, or once the queue is idle. On host queues, checked:
 * - the last command of a burst goes without a mark (the engine's `marked` stays one
 *   behind `enqueued`) and is seen done when the queue is idle, with nobody waiting, burst
 *   after burst and one command at a time (the done number stays at the last mark);
 * - a limited queue, and a command someone already waits for, get their own marks;
 * - XQueueWait for an unmarked command returns while a later host function blocks
 *   (the host function's predecessor is marked first), also from another thread;
 * - order and results are kept throughout. */
#include "hang_util.h"

static atomic_int g_ran, g_order_errors;

static XResult count_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	int want = (int)(intptr_t)data;
	if (atomic_fetch_add(&g_ran, 1) != want)
		atomic_fetch_add(&g_order_errors, 1);
	return want % 7 == 3 ? kXSchedErrorInvalidValue : kXSchedSuccess;
}

static HwCommandHandle submit_cb(XQueueHandle xq, int i)
{
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateCallback(&c, count_cb, (void *)(intptr_t)i));
	CHECK_OK(XQueueSubmit(xq, c));
	return c;
}

/* The engine's marked and enqueued numbers of @xq. */
static void marks_of(XQueueHandle xq, uint64_t *marked, uint64_t *enqueued)
{
	xs_obj *obj = xs_handle_get(xq, XS_KIND_XQUEUE);
	CHECK(obj);
	xs_xqueue *x = xs_xqueue_of(obj);
	xs_mutex_lock(&x->lock);
	*marked = x->marked;
	*enqueued = x->enqueued;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(obj);
}

/* Bursts behind a blocking host function. On host queues, whose callbacks run on the
 * queue and may block it, every command gets its predecessor's mark in front of it, so only
 * the last command of a burst goes without: it is seen done when the queue is idle. The
 * done number stays at the last mark (as a stream's does), and the next burst must still
 * be seen done: twice. */
static void burst(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueSetLaunchConfig(xq, 64, 8));
	atomic_store(&g_ran, 0);
	uint64_t total = 0;
	for (int round = 0; round < 2; round++) {
		atomic_bool release = false;
		HwCommandHandle b = h_submit(xq, h_block_fn, &release);
		HwCommandHandle c[20];
		for (int i = 0; i < 20; i++)
			c[i] = submit_cb(xq, round * 20 + i);
		total += 21;
		uint64_t marked, enqueued;
		marks_of(xq, &marked, &enqueued);
		CHECK(enqueued == total);
		CHECK(marked == total - 1); /* the last one's is left out */
		atomic_store(&release, true);
		/* Nobody waits: the last one is seen done once the queue is idle. */
		int64_t end = t_now_us() + 5000000;
		while (t_stats(xq).completed < total && t_now_us() < end)
			t_sleep_us(1000);
		CHECK(t_stats(xq).completed == total);
		for (int i = 0; i < 20; i++) {
			int k = round * 20 + i;
			CHECK_RES(XQueueWait(xq, c[i]),
				  k % 7 == 3 ? kXSchedErrorInvalidValue : kXSchedSuccess);
			CHECK_OK(HwCommandDestroy(c[i]));
		}
		CHECK_OK(HwCommandDestroy(b));
	}
	CHECK(t_stats(xq).failed == 6); /* 3, 10, 17, 24, 31, 38 */
	CHECK(atomic_load(&g_order_errors) == 0);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	printf("bursts: the last command's mark left out, seen done when idle, twice\n");
}

/* Single commands, one at a time, each the tail of the queue: each is seen done when the
 * queue is idle, while the done number lags behind (the next one's mark in front of it
 * publishes the one before). */
static void singles(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	atomic_store(&g_ran, 0);
	for (int i = 0; i < 5; i++) {
		HwCommandHandle c = submit_cb(xq, i);
		int64_t end = t_now_us() + 3000000;
		while (t_stats(xq).completed < (uint64_t)i + 1)
			if (t_now_us() > end)
				h_hang("a single command left without a mark is never seen done");
			else
				t_sleep_us(500);
		CHECK_OK(HwCommandDestroy(c));
	}
	CHECK(atomic_load(&g_order_errors) == 0);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	printf("singles: each seen done when the queue is idle\n");
}

/* A limited queue (below another's priority) marks every command. */
static void limited(void)
{
	h_tiers t;
	h_tiers_open(&t);
	h_wait_field(t.low, H_LIMITED, true);
	atomic_store(&g_ran, 0);
	atomic_bool release = false;
	HwCommandHandle b = h_submit(t.low, h_block_fn, &release);
	HwCommandHandle c[6];
	for (int i = 0; i < 6; i++)
		c[i] = submit_cb(t.low, i);
	uint64_t marked, enqueued;
	marks_of(t.low, &marked, &enqueued);
	CHECK(marked == enqueued);
	atomic_store(&release, true);
	CHECK_OK(XQueueWait(t.low, c[5]));
	for (int i = 0; i < 6; i++)
		CHECK_OK(HwCommandDestroy(c[i]));
	CHECK_OK(HwCommandDestroy(b));
	h_tiers_close(&t);
	printf("limited: every command marked\n");
}

static XQueueHandle g_xq;
static HwCommandHandle g_first;
static XResult g_wait_res;

static void *wait_first(void *arg)
{
	(void)arg;
	g_wait_res = XQueueWait(g_xq, g_first);
	return NULL;
}

/* XQueueWait for an unmarked command while a later host function blocks. */
static void wait_behind_block(void)
{
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelBlock, 0));
	atomic_store(&g_ran, 0);
	g_first = submit_cb(g_xq, 0); /* unmarked: the first of a batch */
	HwCommandHandle c1 = submit_cb(g_xq, 1);
	atomic_bool release = false;
	HwCommandHandle b = h_submit(g_xq, h_block_fn, &release); /* blocks the queue */
	h_call call;
	g_wait_res = kXSchedErrorUnknown;
	h_start(&call, wait_first, NULL);
	h_finish(&call, 3000, "XQueueWait for an unmarked command behind a blocking host function");
	CHECK_OK(g_wait_res);
	CHECK_OK(XQueueWait(g_xq, c1));
	atomic_store(&release, true);
	CHECK_OK(XQueueWait(g_xq, b));
	CHECK_OK(HwCommandDestroy(g_first));
	CHECK_OK(HwCommandDestroy(c1));
	CHECK_OK(HwCommandDestroy(b));
	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(hwq));
	printf("a wait for an unmarked command returns while a later host function blocks\n");
}

/* Many small commands and waits from two threads: all complete, in order. */
static void *waiter_thread(void *arg)
{
	HwCommandHandle *c = arg;
	for (int i = 0; i < 2000; i += 37)
		CHECK_RES(XQueueWait(g_xq, c[i]),
			  i % 7 == 3 ? kXSchedErrorInvalidValue : kXSchedSuccess);
	return NULL;
}

static void stream(void)
{
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelDeactivate, 0));
	atomic_store(&g_ran, 0);
	static HwCommandHandle c[2000];
	for (int i = 0; i < 2000; i++)
		c[i] = submit_cb(g_xq, i);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, waiter_thread, c) == 0);
	for (int i = 1999; i >= 0; i -= 101)
		CHECK_RES(XQueueWait(g_xq, c[i]),
			  i % 7 == 3 ? kXSchedErrorInvalidValue : kXSchedSuccess);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_RES(XQueueWaitAll(g_xq), kXSchedErrorInvalidValue);
	CHECK(t_stats(g_xq).completed == 2000);
	CHECK(atomic_load(&g_order_errors) == 0);
	for (int i = 0; i < 2000; i++)
		CHECK_OK(HwCommandDestroy(c[i]));
	CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwQueueDestroy(hwq));
	printf("2000 commands at Lv2, waits from two threads: all complete, in order\n");
}

int main(void)
{
	h_watchdog(60, "left-out done marks");
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	burst();
	singles();
	limited();
	wait_behind_block();
	stream();
	CHECK_OK(XSchedShutdown());
	return 0;
}
