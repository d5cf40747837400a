/* The HwQueue API: wrap a native queue (host, CUDA, HIP), destroy it, its level, and
 * XQueueGet. The backends (hal/) build the queue; Lv3 is attached by preempt/lv3.c; the
 * handle is registered last. */
#include "api/api.h"
#include "core/log.h"
#include "hal/hal.h"
#include "preempt/engine.h"
#include "preempt/lv3.h"

/* Attach Lv3 where the backend can, then register the queue under @key (0 =
 * library-issued) and return its handle. On failure the queue is destroyed. */
static XResult xs__publish(xs_hwq *q, uint64_t key, HwQueueHandle *out)
{
	xs_api_init();
	xs_lv3_probe_hwq(q);
	XResult res = xs_handle_register(&q->obj, key);
	if (res != kXSchedSuccess) {
		if (res == kXSchedErrorNotAllowed)
			XS_FAIL("api", "the %s stream %p is already a HwQueue", q->ops->name,
				q->native);
		xs_lv3_detach(q->lv3);
		q->lv3 = NULL;
		q->ops->destroy(q);
		xs_obj_unref(&q->obj);
		return res;
	}
	*out = q->obj.handle;
	xs_obj_unref(&q->obj); /* the table holds it */
	XS_INFO("api", "created %s HwQueue 0x%llx, max preemption level %d", q->ops->name,
		(unsigned long long)*out, q->max_level);
	return kXSchedSuccess;
}

XResult HostQueueCreate(HwQueueHandle *hwq)
{
	XS_CHECK(hwq, kXSchedErrorInvalidValue, "api", "HostQueueCreate: hwq is null");
	xs_hwq *q;
	XResult res = xs_host_queue_create(&q);
	if (res != kXSchedSuccess)
		return res;
	return xs__publish(q, 0, hwq);
}

/* A stream that is already a HwQueue is refused before the backend touches it. */
static XResult xs__gpu_create(const char *fn, XResult (*create)(void *, xs_hwq **),
			      HwQueueHandle *hwq, void *stream)
{
	XS_CHECK(hwq, kXSchedErrorInvalidValue, "api", "%s: hwq is null", fn);
	xs_obj *dup = xs_handle_get((uint64_t)(uintptr_t)stream, XS_KIND_HWQUEUE);
	xs_obj_unref(dup);
	XS_CHECK(!dup, kXSchedErrorNotAllowed, "api", "%s: stream %p is already a HwQueue", fn,
		 stream);
	xs_hwq *q;
	XResult res = create(stream, &q);
	if (res != kXSchedSuccess)
		return res;
	return xs__publish(q, (uint64_t)(uintptr_t)stream, hwq);
}

XResult CudaQueueCreate(HwQueueHandle *hwq, void *stream)
{
	return xs__gpu_create("CudaQueueCreate", xs_cuda_queue_create, hwq, stream);
}

XResult HipQueueCreate(HwQueueHandle *hwq, void *stream)
{
	return xs__gpu_create("HipQueueCreate", xs_hip_queue_create, hwq, stream);
}

XResult HwQueueDestroy(HwQueueHandle hwq)
{
	if (!hwq)
		return kXSchedSuccess;
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	XS_CHECK(obj, kXSchedErrorNotFound, "api", "HwQueueDestroy: 0x%llx %s",
		 (unsigned long long)hwq, xs_handle_describe(hwq, XS_KIND_HWQUEUE));
	xs_hwq *q = xs_hwq_of(obj);
	XResult res = xs_hwq_kill(q);
	if (res == kXSchedSuccess) {
		xs_obj_unref(xs_handle_unregister(hwq, XS_KIND_HWQUEUE));
		/* Resume before anything else: KFD cannot destroy a suspended queue. */
		xs_lv3_detach(q->lv3);
		q->lv3 = NULL;
		q->ops->destroy(q);
	} else {
		XS_FAIL("api", "HwQueueDestroy: 0x%llx %s", (unsigned long long)hwq,
			res == kXSchedErrorNotAllowed ? "still has an XQueue: destroy it first"
						      : "is being destroyed");
	}
	xs_obj_unref(obj);
	return res;
}

XResult HwQueueGetMaxPreemptLevel(HwQueueHandle hwq, int64_t *level)
{
	XS_CHECK(level, kXSchedErrorInvalidValue, "api",
		 "HwQueueGetMaxPreemptLevel: level is null");
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	XS_CHECK(obj, kXSchedErrorNotFound, "api", "HwQueueGetMaxPreemptLevel: 0x%llx %s",
		 (unsigned long long)hwq, xs_handle_describe(hwq, XS_KIND_HWQUEUE));
	*level = xs_hwq_of(obj)->max_level;
	xs_obj_unref(obj);
	return kXSchedSuccess;
}

XResult XQueueGet(XQueueHandle *xq, HwQueueHandle hwq)
{
	XS_CHECK(xq, kXSchedErrorInvalidValue, "api", "XQueueGet: xq is null");
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	XS_CHECK(obj, kXSchedErrorNotFound, "api", "XQueueGet: 0x%llx %s", (unsigned long long)hwq,
		 xs_handle_describe(hwq, XS_KIND_HWQUEUE));
	xs_xqueue *x = xs_hwq_xqueue(xs_hwq_of(obj));
	xs_obj_unref(obj);
	XS_CHECK(x, kXSchedErrorNotFound, "api", "XQueueGet: HwQueue 0x%llx has no XQueue",
		 (unsigned long long)hwq);
	*xq = xs_xqueue_obj(x)->handle;
	xs_obj_unref(xs_xqueue_obj(x));
	return kXSchedSuccess;
}
