/* Backend-independent HwQueue calls: registration, binding to an XQueue, destroy. */
#include <stdlib.h>

#include "core/log.h"
#include "core/thread.h"
#include "core/xqueue.h"
#include "hal/hal.h"

/* Guards xs_hwq.xq and xs_hwq.dead of every HwQueue. Taken alone or inside an XQueue's
 * lock is never needed: bind/unbind/destroy take only this one. */
static xs_mutex xs__bind_lock = PTHREAD_MUTEX_INITIALIZER;

void xs_hwq_init(xs_hwq *q, const xs_hal_ops *ops, int max_level, void *native,
		 void (*free_fn)(xs_obj *obj))
{
	xs_obj_init(&q->obj, XS_KIND_HWQUEUE, free_fn);
	q->ops = ops;
	q->max_level = max_level;
	q->native = native;
	q->xq = NULL;
	q->dead = false;
}

XResult xs_hwq_publish(xs_hwq *q, uint64_t key, HwQueueHandle *out)
{
	XResult res = xs_handle_register(&q->obj, key);
	if (res != kXSchedSuccess) {
		if (res == kXSchedErrorNotAllowed)
			XS_WARN("hal", "the %s stream %p is already a HwQueue", q->ops->name,
				q->native);
		q->ops->destroy(q);
		xs_obj_unref(&q->obj);
		return res;
	}
	*out = q->obj.handle;
	xs_obj_unref(&q->obj); /* the table holds it */
	XS_INFO("hal", "created %s HwQueue 0x%llx, max preemption level %d", q->ops->name,
		(unsigned long long)*out, q->max_level);
	return kXSchedSuccess;
}

XResult xs_hwq_bind(xs_hwq *q, struct xs_xqueue *xq)
{
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__bind_lock);
	if (q->dead)
		res = kXSchedErrorNotFound;
	else if (q->xq)
		res = kXSchedErrorNotAllowed;
	else
		q->xq = xq;
	xs_mutex_unlock(&xs__bind_lock);
	return res;
}

void xs_hwq_unbind(xs_hwq *q)
{
	xs_mutex_lock(&xs__bind_lock);
	q->xq = NULL;
	xs_mutex_unlock(&xs__bind_lock);
}

XResult HostQueueCreate(HwQueueHandle *hwq)
{
	if (!hwq) {
		XS_WARN("hal", "HostQueueCreate: hwq is null");
		return kXSchedErrorInvalidValue;
	}
	xs_hwq *q;
	XResult res = xs_host_queue_create(&q);
	if (res != kXSchedSuccess)
		return res;
	return xs_hwq_publish(q, 0, hwq);
}

XResult HwQueueDestroy(HwQueueHandle hwq)
{
	if (!hwq)
		return kXSchedSuccess;
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	if (!obj) {
		XS_WARN("hal", "HwQueueDestroy: 0x%llx is not a live HwQueue",
			(unsigned long long)hwq);
		return kXSchedErrorNotFound;
	}
	xs_hwq *q = xs_hwq_of(obj);
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__bind_lock);
	if (q->dead)
		res = kXSchedErrorNotFound;
	else if (q->xq)
		res = kXSchedErrorNotAllowed;
	else
		q->dead = true;
	xs_mutex_unlock(&xs__bind_lock);
	if (res == kXSchedSuccess) {
		xs_obj_unref(xs_handle_unregister(hwq, XS_KIND_HWQUEUE));
		q->ops->destroy(q);
	} else {
		XS_WARN("hal", "HwQueueDestroy: 0x%llx %s", (unsigned long long)hwq,
			res == kXSchedErrorNotAllowed ? "still has an XQueue: destroy it first"
						      : "is being destroyed");
	}
	xs_obj_unref(obj);
	return res;
}

XResult HwQueueGetMaxPreemptLevel(HwQueueHandle hwq, int64_t *level)
{
	if (!level) {
		XS_WARN("hal", "HwQueueGetMaxPreemptLevel: level is null");
		return kXSchedErrorInvalidValue;
	}
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	if (!obj) {
		XS_WARN("hal", "HwQueueGetMaxPreemptLevel: 0x%llx is not a live HwQueue",
			(unsigned long long)hwq);
		return kXSchedErrorNotFound;
	}
	*level = xs_hwq_of(obj)->max_level;
	xs_obj_unref(obj);
	return kXSchedSuccess;
}

XResult XQueueGet(XQueueHandle *xq, HwQueueHandle hwq)
{
	if (!xq) {
		XS_WARN("core", "XQueueGet: xq is null");
		return kXSchedErrorInvalidValue;
	}
	xs_obj *obj = xs_handle_get(hwq, XS_KIND_HWQUEUE);
	if (!obj) {
		XS_WARN("core", "XQueueGet: 0x%llx is not a live HwQueue", (unsigned long long)hwq);
		return kXSchedErrorNotFound;
	}
	XResult res = kXSchedErrorNotFound;
	xs_mutex_lock(&xs__bind_lock);
	xs_xqueue *x = xs_hwq_of(obj)->xq;
	if (x) {
		*xq = x->obj.handle;
		res = kXSchedSuccess;
	}
	xs_mutex_unlock(&xs__bind_lock);
	xs_obj_unref(obj);
	if (res != kXSchedSuccess)
		XS_WARN("core", "XQueueGet: HwQueue 0x%llx has no XQueue", (unsigned long long)hwq);
	return res;
}
