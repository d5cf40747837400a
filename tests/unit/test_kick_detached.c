/* A kick that comes after XQueueDestroy detached the XQueue from its device leaves the
 * device's kick list alone.
 *
 * deps.c kicks blocked XQueues with a reference but no XQueue lock, so a kick may follow
 * xs_dev_detach. It used to link the queue onto the kick list again; once the last
 * reference went, the launch thread drained freed memory (the randomized stress under the
 * thread sanitizer: a SEGV in xs_list_pop_front, device.c). Checked on the engine's own
 * state: the kick link stays unlinked. */
#include "check.h"
#include "core/object.h"
#include "preempt/engine_int.h"

static XResult nop(void *data)
{
	(void)data;
	return kXSchedSuccess;
}

int main(void)
{
	HwQueueHandle ha, hb;
	XQueueHandle a, b;
	CHECK_OK(HostQueueCreate(&ha));
	CHECK_OK(HostQueueCreate(&hb));
	CHECK_OK(XQueueCreate(&a, ha, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&b, hb, kPreemptLevelBlock, 0)); /* keeps the device's threads */
	xs_obj *obj = xs_handle_get(a, XS_KIND_XQUEUE);
	CHECK(obj);
	xs_xqueue *xq = xs_xqueue_of(obj);
	CHECK_OK(XQueueDestroy(a)); /* drained and detached; our reference keeps it */

	xs_mutex_lock(&xq->lock);
	xs_signal_kick(xq); /* what deps.c may do after the destroy */
	xs_mutex_unlock(&xq->lock);
	xs_mutex_lock(&xq->dev->lock);
	bool linked = xs_linked(&xq->kick_link);
	xs_mutex_unlock(&xq->dev->lock);
	CHECK(!linked);
	xs_obj_unref(obj);

	/* The device goes on serving the other queue. */
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, nop, NULL));
	CHECK_OK(XQueueSubmit(b, c));
	CHECK_OK(XQueueWait(b, c));
	CHECK_OK(HwCommandDestroy(c));
	CHECK_OK(XQueueDestroy(b));
	CHECK_OK(HwQueueDestroy(ha));
	CHECK_OK(HwQueueDestroy(hb));
	CHECK_OK(XSchedShutdown());
	printf("a kick after the destroy leaves the kick list alone\n");
	return 0;
}
