/* Helpers shared by the public entry points (src/api only). */
#ifndef XS_API_API_H
#define XS_API_API_H

#include "core/log.h"
#include "preempt/engine.h"

/* @obj as the XQueue of handle @h for API call @fn; logs and returns NULL if it is NULL
 * (no live XQueue). */
static inline xs_xqueue *xs__api_found(xs_obj *obj, XQueueHandle h, const char *fn)
{
	if (!obj) {
		XS_FAIL("api", "%s: 0x%llx %s", fn, (unsigned long long)h,
			xs_handle_describe(h, XS_KIND_XQUEUE));
		return NULL;
	}
	return xs_xqueue_of(obj);
}

/* The live XQueue behind @h, with a reference, for API call @fn; logs and returns NULL if
 * there is none. */
static inline xs_xqueue *xs_api_xqueue(XQueueHandle h, const char *fn)
{
	return xs__api_found(xs_handle_get(h, XS_KIND_XQUEUE), h, fn);
}

/* The end of an API call on @x (taken with xs_api_xqueue): drops its reference and returns
 * @res, so that a call reads `return xs_api_done(x, xs_engine_...(x));` (the argument runs
 * first, the reference is dropped after it). */
static inline XResult xs_api_done(xs_xqueue *x, XResult res)
{
	xs_obj_unref(xs_xqueue_obj(x));
	return res;
}

/* xs_api_xqueue for a call that ends on this thread and passes the XQueue to
 * xs_api_xqueue_return (xs_handle_borrow: no lock and no reference where the thread used
 * this XQueue last). */
static inline xs_xqueue *xs_api_xqueue_borrow(XQueueHandle h, const char *fn)
{
	return xs__api_found(xs_handle_borrow(h, XS_KIND_XQUEUE), h, fn);
}

static inline void xs_api_xqueue_return(xs_xqueue *x)
{
	xs_handle_return(xs_xqueue_obj(x));
}

/* lib.c: the library's process-wide set-up (the fork handler), once, from every call that
 * creates an object. */
void xs_api_init(void);
/* hint.c: in a child after fork(). */
void xs_api_hints_forked(void);

#endif
