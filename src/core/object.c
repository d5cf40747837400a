#include "core/object.h"

#include <search.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/thread.h"

/* Guards xs__root and xs__count. A leaf lock: nothing else is taken under it. */
static xs_mutex xs__table_lock = PTHREAD_MUTEX_INITIALIZER;
static void *xs__root; /* tsearch(3) tree of xs_obj *, ordered by handle */
static size_t xs__count;
/* The next library-issued handle number. Taken when an object is made, not when it is
 * registered: the handle is written once, before any other thread can see the object,
 * so that the layers which reach an object before its handle is registered (the
 * scheduler and the engine during XQueueCreate, which trace it by handle) read a value
 * that never changes. */
static _Atomic uint64_t xs__next = 1;
static uint64_t xs__fork_next; /* xs__next at the last fork in a child, 0 = not forked */
/* A child's: the parent's tree, kept reachable for leak checkers. volatile: a variable that
 * is only written would otherwise be dropped by the compiler, with the store. */
static void *volatile xs__parent_root;

void xs_obj_init(xs_obj *obj, enum xs_kind kind, void (*free_fn)(xs_obj *obj))
{
	obj->handle =
	    ((uint64_t)kind << 56) | atomic_fetch_add_explicit(&xs__next, 1, memory_order_relaxed);
	obj->kind = kind;
	atomic_init(&obj->refs, 1);
	obj->free = free_fn;
}

void xs_obj_ref(xs_obj *obj)
{
	atomic_fetch_add_explicit(&obj->refs, 1, memory_order_relaxed);
}

void xs_obj_unref(xs_obj *obj)
{
	if (!obj)
		return;
	/* Release orders this thread's uses before the free; acquire orders the free after
	 * every other thread's release. (acq_rel rather than release plus a fence: the
	 * thread sanitizer does not model stand-alone fences.) */
	if (atomic_fetch_sub_explicit(&obj->refs, 1, memory_order_acq_rel) == 1)
		obj->free(obj);
}

static int xs__cmp(const void *a, const void *b)
{
	uint64_t x = ((const xs_obj *)a)->handle, y = ((const xs_obj *)b)->handle;
	return x < y ? -1 : x > y;
}

XResult xs_handle_register(xs_obj *obj, uint64_t key)
{
	XResult res = kXSchedSuccess;
	xs_mutex_lock(&xs__table_lock);
	if (key)
		obj->handle = key; /* a GPU HwQueue: not reachable by another thread before */
	xs_obj **slot = tsearch(obj, &xs__root, xs__cmp);
	if (!slot)
		res = kXSchedErrorUnknown;
	else if (*slot != obj)
		res = kXSchedErrorNotAllowed;
	else {
		xs_obj_ref(obj);
		xs__count++;
	}
	xs_mutex_unlock(&xs__table_lock);
	return res;
}

static xs_obj *xs__find(uint64_t handle, enum xs_kind kind)
{
	xs_obj key = {.handle = handle};
	xs_obj **slot = tfind(&key, &xs__root, xs__cmp);
	return slot && (*slot)->kind == kind ? *slot : NULL;
}

xs_obj *xs_handle_get(uint64_t handle, enum xs_kind kind)
{
	if (!handle)
		return NULL;
	xs_mutex_lock(&xs__table_lock);
	xs_obj *obj = xs__find(handle, kind);
	if (obj)
		xs_obj_ref(obj);
	uint64_t fork_next = xs__fork_next;
	xs_mutex_unlock(&xs__table_lock);
	if (!obj && fork_next && (handle & ((UINT64_C(1) << 56) - 1)) < fork_next)
		XS_WARN("core",
			"handle 0x%llx was made before fork() (by the parent process): "
			"unusable in the child, which starts from a clean library state",
			(unsigned long long)handle);
	return obj;
}

void xs_handles_forked(void)
{
	xs_mutex_init(&xs__table_lock);
	xs__parent_root = xs__root;
	xs__root = NULL; /* the parent's objects stay allocated, unreachable by handle */
	xs__count = 0;
	xs__fork_next = atomic_load_explicit(&xs__next, memory_order_relaxed);
}

xs_obj *xs_handle_unregister(uint64_t handle, enum xs_kind kind)
{
	if (!handle)
		return NULL;
	xs_mutex_lock(&xs__table_lock);
	xs_obj *obj = xs__find(handle, kind);
	if (obj) {
		tdelete(obj, &xs__root, xs__cmp);
		xs__count--;
	}
	xs_mutex_unlock(&xs__table_lock);
	return obj;
}

size_t xs_handle_count(void)
{
	xs_mutex_lock(&xs__table_lock);
	size_t n = xs__count;
	xs_mutex_unlock(&xs__table_lock);
	return n;
}
