/* Helpers shared by the public entry points (src/api only). */
#ifndef XS_API_API_H
#define XS_API_API_H

#include "core/log.h"
#include "preempt/engine.h"

/* The live XQueue behind @h, with a reference, for API call @fn; logs and returns NULL if
 * there is none. */
static inline xs_xqueue *xs_api_xqueue(XQueueHandle h, const char *fn)
{
	xs_obj *obj = xs_handle_get(h, XS_KIND_XQUEUE);
	if (!obj) {
		XS_WARN("api", "%s: 0x%llx is not a live XQueue", fn, (unsigned long long)h);
		return NULL;
	}
	return xs_xqueue_of(obj);
}

/* lib.c: the library's process-wide set-up (the fork handler), once, from every call that
 * creates an object. */
void xs_api_init(void);
/* hint.c: in a child after fork(). */
void xs_api_hints_forked(void);

#endif
