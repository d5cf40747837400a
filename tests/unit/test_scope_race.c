/* XQueueEndScope and XQueueBeginScope racing XQueueDestroy return what the header says:
 * kXSchedSuccess, or kXSchedErrorNotFound once the destroy has begun (it ends every
 * scope), never kXSchedErrorNotAllowed for a scope that was open (0.5.3: about 1 race in
 * 15,000, when the destroy had cleared the scopes but the handle was still found).
 * - Deterministic: during a destroy held in its drain by a blocked host function, a call
 *   that had found the XQueue before the destroy unregistered it gets
 *   kXSchedErrorNotFound from both, no scope is left open, and the destroy completes.
 * - Randomized: 3000 rounds of a scope opened, then closed by one thread while another
 *   destroys the queue. */
#include "hang_util.h"

struct race {
	XQueueHandle xq;
	atomic_bool go;
	XResult end;
};

static void *end_main(void *arg)
{
	struct race *r = arg;
	while (!atomic_load(&r->go))
		;
	r->end = XQueueEndScope(r->xq);
	return NULL;
}

static void *destroy_main(void *arg)
{
	XQueueHandle xq = *(XQueueHandle *)arg;
	CHECK_OK(XQueueDestroy(xq));
	return NULL;
}

static bool closing_pred(void *arg)
{
	xs_xqueue *x = arg;
	xs_mutex_lock(&x->lock);
	bool closing = x->closing;
	xs_mutex_unlock(&x->lock);
	return closing;
}

int main(void)
{
	h_watchdog(60, "scopes racing XQueueDestroy (test_scope_race)");
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));

	/* Deterministic: what a call that found the XQueue just before XQueueDestroy
	 * unregistered it meets (its reference taken, as xs_api_xqueue takes it), while the
	 * destroy drains. */
	XQueueHandle xq;
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueBeginScope(xq));
	xs_obj *o = xs_handle_get(xq, XS_KIND_XQUEUE);
	CHECK(o);
	xs_xqueue *x = xs_xqueue_of(o);
	atomic_bool release = false;
	HwCommandHandle c = h_submit(xq, h_block_fn, &release);
	h_call d;
	h_start(&d, destroy_main, &xq);
	CHECK(t_wait_for(closing_pred, x, 3000));
	CHECK_RES(xs_engine_scope(x, false), kXSchedErrorNotFound);
	CHECK_RES(xs_engine_scope(x, true), kXSchedErrorNotFound);
	CHECK_RES(XQueueEndScope(xq), kXSchedErrorNotFound); /* unregistered already */
	atomic_store(&release, true);
	h_finish(&d, 3000, "XQueueDestroy with a scope open and a command blocked");
	CHECK(x->scopes == 0);
	xs_obj_unref(o);
	CHECK_OK(HwCommandDestroy(c));

	/* Randomized. */
	int ok = 0, gone = 0;
	for (int i = 0; i < 3000; i++) {
		struct race r = {.end = kXSchedErrorUnknown};
		CHECK_OK(XQueueCreate(&r.xq, hwq, kPreemptLevelBlock, 0));
		CHECK_OK(XQueueBeginScope(r.xq));
		pthread_t t;
		CHECK(pthread_create(&t, NULL, end_main, &r) == 0);
		atomic_store(&r.go, true);
		CHECK_OK(XQueueDestroy(r.xq));
		CHECK(pthread_join(t, NULL) == 0);
		if (r.end != kXSchedSuccess && r.end != kXSchedErrorNotFound) {
			fprintf(stderr,
				"round %d: XQueueEndScope racing XQueueDestroy returned %d\n", i,
				(int)r.end);
			CHECK(false);
		}
		ok += r.end == kXSchedSuccess;
		gone += r.end == kXSchedErrorNotFound;
	}
	printf("3000 races: XQueueEndScope returned success %d times, not found %d times\n", ok,
	       gone);
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_OK(XSchedShutdown());
	return 0;
}
