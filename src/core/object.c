#include "core/object.h"

#include <search.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/thread.h"

/* The table is split in XS__SHARDS shards by a hash of the handle, each a tsearch(3) tree
 * under its own mutex: submitting threads look up and register commands several times
 * per command (create, submit, destroy), and with one mutex for the process two threads
 * submitting to their own XQueues took 2.5-5x the time of one (benchmarks/submit_host).
 * Each shard's lock is a leaf: nothing else is taken under it. */
enum { XS__SHARD_BITS = 6, XS__SHARDS = 1 << XS__SHARD_BITS };

typedef struct xs__shard {
	xs_mutex lock; /* guards root */
	void *root;    /* tsearch(3) tree of xs_obj *, ordered by handle */
	/* A child's: the parent's tree, kept reachable for leak checkers. volatile: a
	 * variable that is only written would otherwise be dropped, with the store. */
	void *volatile parent_root;
} __attribute__((aligned(64))) xs__shard; /* one cache line each: no false sharing */

static xs__shard xs__shards[XS__SHARDS];
static pthread_once_t xs__shards_once = PTHREAD_ONCE_INIT;
static atomic_size_t xs__count; /* live handles */
/* The next library-issued handle number. Taken when an object is made, not when it is
 * registered: the handle is written once, before any other thread can see the object,
 * so that the layers which reach an object before its handle is registered (the
 * scheduler and the engine during XQueueCreate, which trace it by handle) read a value
 * that never changes. */
static _Atomic uint64_t xs__next = 1;
/* xs__next at the last fork in a child, 0 = not forked: written in the child before any
 * of its threads but the forking one exists. */
static uint64_t xs__fork_next;

static void xs__shards_init(void)
{
	for (size_t i = 0; i < XS__SHARDS; i++)
		xs_mutex_init(&xs__shards[i].lock);
}

/* The shard of @handle: the top bits of a Fibonacci hash (Knuth, TAOCP vol. 3, 6.4), which
 * spreads both consecutive library-issued handles and stream pointers. */
static xs__shard *xs__shard_of(uint64_t handle)
{
	pthread_once(&xs__shards_once, xs__shards_init);
	return &xs__shards[(handle * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - XS__SHARD_BITS)];
}

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
	if (key)
		obj->handle = key; /* a GPU HwQueue: not reachable by another thread before */
	xs__shard *sh = xs__shard_of(obj->handle);
	xs_mutex_lock(&sh->lock);
	xs_obj **slot = tsearch(obj, &sh->root, xs__cmp);
	if (!slot)
		res = kXSchedErrorUnknown;
	else if (*slot != obj)
		res = kXSchedErrorNotAllowed;
	else
		xs_obj_ref(obj);
	xs_mutex_unlock(&sh->lock);
	if (res == kXSchedSuccess)
		atomic_fetch_add_explicit(&xs__count, 1, memory_order_relaxed);
	return res;
}

/* The object of @kind behind @handle in @sh, or NULL. Caller holds sh->lock. */
static xs_obj *xs__find(xs__shard *sh, uint64_t handle, enum xs_kind kind)
{
	xs_obj key = {.handle = handle};
	xs_obj **slot = tfind(&key, &sh->root, xs__cmp);
	return slot && (*slot)->kind == kind ? *slot : NULL;
}

xs_obj *xs_handle_get(uint64_t handle, enum xs_kind kind)
{
	if (!handle)
		return NULL;
	xs__shard *sh = xs__shard_of(handle);
	xs_mutex_lock(&sh->lock);
	xs_obj *obj = xs__find(sh, handle, kind);
	if (obj)
		xs_obj_ref(obj);
	xs_mutex_unlock(&sh->lock);
	if (!obj && xs__fork_next && (handle & ((UINT64_C(1) << 56) - 1)) < xs__fork_next)
		XS_WARN("core",
			"handle 0x%llx was made before fork() (by the parent process): "
			"unusable in the child, which starts from a clean library state",
			(unsigned long long)handle);
	return obj;
}

void xs_handles_forked(void)
{
	pthread_once(&xs__shards_once, xs__shards_init);
	for (size_t i = 0; i < XS__SHARDS; i++) {
		xs_mutex_init(&xs__shards[i].lock);
		xs__shards[i].parent_root = xs__shards[i].root;
		xs__shards[i].root = NULL; /* the parent's objects stay allocated, unreachable */
	}
	atomic_store_explicit(&xs__count, 0, memory_order_relaxed);
	xs__fork_next = atomic_load_explicit(&xs__next, memory_order_relaxed);
}

xs_obj *xs_handle_unregister(uint64_t handle, enum xs_kind kind)
{
	if (!handle)
		return NULL;
	xs__shard *sh = xs__shard_of(handle);
	xs_mutex_lock(&sh->lock);
	xs_obj *obj = xs__find(sh, handle, kind);
	if (obj)
		tdelete(obj, &sh->root, xs__cmp);
	xs_mutex_unlock(&sh->lock);
	if (obj)
		atomic_fetch_sub_explicit(&xs__count, 1, memory_order_relaxed);
	return obj;
}

size_t xs_handle_count(void)
{
	return atomic_load_explicit(&xs__count, memory_order_relaxed);
}
