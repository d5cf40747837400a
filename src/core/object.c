#include "core/object.h"

#include <stdbool.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/thread.h"

/* The table is split in XS__SHARDS shards (the creating thread's for a library-issued
 * handle, by a hash for a key: xs__hash), each a chained hash table under its own mutex: submitting
 * threads look up and register commands several times per command (create, submit, destroy), and
 * with one mutex for the process two threads submitting to their own XQueues took 2.5-5x the time
 * of one (benchmarks/submit_host). The chains are intrusive (xs_obj.next), so registering allocates
 * nothing but the rare larger bucket array: a tsearch(3) tree, which allocated a node per handle
 * and freed it on unregister, cost 0.15 us of the 4 table operations a kernel command takes
 * (create, two lookups in XQueueSubmit, destroy), profiled on an H200's host, 2026-11-26. Each
 * shard's lock is a leaf: nothing else is taken under it. */
enum {
	XS__SHARD_BITS = 6,
	XS__SHARDS = 1 << XS__SHARD_BITS,
	XS__BUCKET_BITS_MIN = 4, /* a shard's first 16 buckets; doubled at one handle per bucket */
};

typedef struct xs__shard {
	xs_mutex lock;    /* guards the fields below and every chain link (xs_obj.next) in them */
	xs_obj **buckets; /* 2^bits chains, NULL until the first handle */
	unsigned bits;    /* log2 of the bucket count */
	size_t count;     /* handles registered in this shard */
	/* A child's: the parent's buckets, kept reachable for leak checkers. volatile: a
	 * variable that is only written would otherwise be dropped, with the store. */
	xs_obj **volatile parent_buckets;
} __attribute__((aligned(64))) xs__shard; /* one cache line each: no false sharing */

/* The handle table's process-wide state, one struct (xs__h). Each shard's lock guards
 * its part; the counters are atomics. */
static struct xs__table {
	xs__shard shards[XS__SHARDS];
	/* The next library-issued handle number that no thread's block holds (xs__number). A
	 * number is taken when an object is made, not when it is registered: the handle is
	 * written once, before any other thread can see the object, so that the layers which
	 * reach an object before its handle is registered (the scheduler and the engine during
	 * XQueueCreate, which trace it by handle) read a value that never changes. */
	_Atomic uint64_t next;
	/* next at the last fork in a child, 0 = not forked: written in the child before any
	 * of its threads but the forking one exists. */
	uint64_t fork_next;
	atomic_uint shard_turn;   /* the shard a new thread's numbers go to, in turn */
	pthread_key_t recent_key; /* drops a thread's kept objects at its exit */
	bool recent_ok;           /* recent_key was made (under xs__recent_once) */
} xs__h = {.next = 1};
static pthread_once_t xs__shards_once = PTHREAD_ONCE_INIT;

static void xs__shards_init(void)
{
	for (size_t i = 0; i < XS__SHARDS; i++)
		xs_mutex_init(&xs__h.shards[i].lock);
}

/* Where @handle lives: the top XS__SHARD_BITS of the result pick the shard, the next ones
 * the bucket. A library-issued handle (a kind in its top byte) names its shard in its low
 * bits (xs__number: the shard of the thread that made it, so that a thread's commands stay
 * in one shard whose lock and chains stay in its cache); the rest, and a key (a stream
 * pointer, top byte 0), are spread by a Fibonacci hash (Knuth, TAOCP vol. 3, 6.4). */
static uint64_t xs__hash(uint64_t handle)
{
	const uint64_t golden = UINT64_C(0x9E3779B97F4A7C15);
	if (!(handle >> 56))
		return handle * golden;
	uint64_t shard = handle & (XS__SHARDS - 1);
	return shard << (64 - XS__SHARD_BITS) |
	       ((handle >> XS__SHARD_BITS) * golden) >> XS__SHARD_BITS;
}

static xs__shard *xs__shard_of(uint64_t hash)
{
	pthread_once(&xs__shards_once, xs__shards_init);
	return &xs__h.shards[hash >> (64 - XS__SHARD_BITS)];
}

/* The chain of @hash in @sh, which has buckets. Caller holds sh->lock, or owns @sh alone
 * (the new table xs__grow fills). */
static xs_obj **xs__bucket(const xs__shard *sh, uint64_t hash)
{
	return &sh->buckets[(hash << XS__SHARD_BITS) >> (64 - sh->bits)];
}

/* A new handle number: a sequence number from the calling thread's block, [xs__tl_next,
 * xs__tl_end), taken XS__NUMBERS_PER_TAKE at a time from xs__h.next (threads that make
 * commands at once then do not pass one counter's cache line between them at each
 * command), above the thread's shard (given round robin at its first number). The
 * sequence has 50 bits below the kind: 2^50 objects, 3.5 years at 10 M a second. */
enum { XS__NUMBERS_PER_TAKE = 256 };
static _Thread_local uint64_t xs__tl_next, xs__tl_end, xs__tl_shard = UINT64_MAX;

static uint64_t xs__number(void)
{
	if (xs__tl_next == xs__tl_end) {
		xs__tl_next = atomic_fetch_add_explicit(&xs__h.next, XS__NUMBERS_PER_TAKE,
							memory_order_relaxed);
		xs__tl_end = xs__tl_next + XS__NUMBERS_PER_TAKE;
	}
	if (xs__tl_shard == UINT64_MAX)
		xs__tl_shard =
		    atomic_fetch_add_explicit(&xs__h.shard_turn, 1, memory_order_relaxed) %
		    XS__SHARDS;
	return xs__tl_next++ << XS__SHARD_BITS | xs__tl_shard;
}

void xs_obj_init(xs_obj *obj, enum xs_kind kind, void (*free_fn)(xs_obj *obj))
{
	obj->handle = ((uint64_t)kind << 56) | xs__number();
	obj->kind = kind;
	atomic_init(&obj->refs, 1);
	obj->free = free_fn;
	atomic_init(&obj->live, false);
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

/* Give @sh twice the buckets (or its first ones), rehashing its chains; false if out of
 * memory (the old array stays: longer chains, same answers). Caller holds sh->lock. */
static bool xs__grow(xs__shard *sh)
{
	XS_ASSERT_HELD(&sh->lock);
	unsigned bits = sh->buckets ? sh->bits + 1 : XS__BUCKET_BITS_MIN;
	xs_obj **nb = calloc((size_t)1 << bits, sizeof(*nb));
	if (!nb)
		return false;
	xs__shard grown = {.buckets = nb, .bits = bits};
	for (size_t i = 0; sh->buckets && i < (size_t)1 << sh->bits; i++)
		for (xs_obj *o = sh->buckets[i], *next; o; o = next) {
			next = o->next;
			xs_obj **head = xs__bucket(&grown, xs__hash(o->handle));
			o->next = *head;
			*head = o;
		}
	free(sh->buckets);
	sh->buckets = nb;
	sh->bits = bits;
	return true;
}

/* The link that points at @handle's object in @sh (whatever its kind), or NULL. Caller
 * holds sh->lock. */
static xs_obj **xs__find(xs__shard *sh, uint64_t handle, uint64_t hash)
{
	if (!sh->buckets)
		return NULL;
	for (xs_obj **pp = xs__bucket(sh, hash); *pp; pp = &(*pp)->next)
		if ((*pp)->handle == handle)
			return pp;
	return NULL;
}

XResult xs_handle_register(xs_obj *obj, uint64_t key)
{
	XResult res = kXSchedSuccess;
	if (key)
		obj->handle = key; /* a GPU HwQueue: not reachable by another thread before */
	uint64_t hash = xs__hash(obj->handle);
	xs__shard *sh = xs__shard_of(hash);
	xs_mutex_lock(&sh->lock);
	bool full = !sh->buckets || sh->count >> sh->bits; /* a handle per bucket */
	if (xs__find(sh, obj->handle, hash))
		res = kXSchedErrorNotAllowed;
	else if (full && !xs__grow(sh) && !sh->buckets)
		res = kXSchedErrorUnknown;
	else {
		xs_obj **head = xs__bucket(sh, hash);
		obj->next = *head;
		*head = obj;
		sh->count++;
		xs_obj_ref(obj);
		atomic_store_explicit(&obj->live, true, memory_order_relaxed);
	}
	xs_mutex_unlock(&sh->lock);
	return res;
}

/* The calling thread's kept objects, each with a reference of the thread's own, which
 * xs__h.recent_key's destructor drops when the thread exits: its most recent object
 * (xs_handle_keep_recent), which its first lookup on this thread takes over, and its last
 * borrowed one (xs_handle_borrow), lent out without a reference, `lent_depth` borrows deep. */
static _Thread_local xs_obj *xs__tl_recent, *xs__tl_lent;
static _Thread_local unsigned xs__tl_lent_depth;
/* Whether xs__h.recent_key is set on this thread; FAILED: it could not be, and the thread
 * keeps nothing, for good (a borrow would not know whose reference it holds). */
static _Thread_local enum { XS__UNARMED, XS__ARMED, XS__ARM_FAILED } xs__tl_arm;
static pthread_once_t xs__recent_once = PTHREAD_ONCE_INIT;
/* A child's: the forking thread's kept objects of the parent, kept reachable for leak
 * checkers (volatile: the store of one only ever written must stay). The parent's lent one
 * is neither lent nor dropped in the child, but a borrow the fork happened in still
 * returns it (xs__own_lent). */
static xs_obj *volatile xs__parent_recent, *volatile xs__parent_lent;

/* Whether kept object @obj is the live one of @kind behind @handle. */
static bool xs__kept_is(const xs_obj *obj, uint64_t handle, enum xs_kind kind)
{
	return obj && obj->handle == handle && obj->kind == kind &&
	       atomic_load_explicit(&obj->live, memory_order_relaxed);
}

/* Whether this thread's lent object holds a reference of its own to drop (not the
 * parent's, in a fork child). */
static bool xs__own_lent(const xs_obj *lent)
{
	return lent && lent != xs__parent_lent;
}

static void xs__recent_drop(void *unused)
{
	(void)unused;
	xs_obj *old = xs__tl_recent, *lent = xs__own_lent(xs__tl_lent) ? xs__tl_lent : NULL;
	xs__tl_recent = xs__tl_lent = NULL;
	/* The key's value is NULL now: an object kept by a later destructor of this thread
	 * sets it again, and this runs once more (POSIX: up to PTHREAD_DESTRUCTOR_ITERATIONS). */
	xs__tl_arm = XS__UNARMED;
	xs_obj_unref(old);
	xs_obj_unref(lent);
}

static void xs__recent_init(void)
{
	xs__h.recent_ok = pthread_key_create(&xs__h.recent_key, xs__recent_drop) == 0;
}

/* Whether this thread may keep objects: its destructor is set. */
static bool xs__arm(void)
{
	if (xs__tl_arm == XS__UNARMED) {
		pthread_once(&xs__recent_once, xs__recent_init);
		bool set =
		    xs__h.recent_ok && pthread_setspecific(xs__h.recent_key, &xs__tl_recent) == 0;
		xs__tl_arm = set ? XS__ARMED : XS__ARM_FAILED;
	}
	return xs__tl_arm == XS__ARMED;
}

xs_obj *xs_handle_borrow(uint64_t handle, enum xs_kind kind)
{
	xs_obj *lent = xs__tl_lent;
	if (xs__own_lent(lent) && xs__kept_is(lent, handle, kind)) {
		xs__tl_lent_depth++;
		return lent;
	}
	xs_obj *obj = xs_handle_get(handle, kind);
	if (xs__tl_lent_depth || !xs__arm())
		return obj; /* an outer borrow uses the kept one: the caller's reference */
	xs__tl_lent = obj;  /* the lookup's reference becomes the thread's */
	if (xs__own_lent(lent))
		xs_obj_unref(lent); /* no borrow uses it: may free it, here, with no lock held */
	if (obj)
		xs__tl_lent_depth++;
	return obj;
}

void xs_handle_return(xs_obj *obj)
{
	if (obj && obj == xs__tl_lent)
		xs__tl_lent_depth--;
	else
		xs_obj_unref(obj);
}

bool xs_handle_keep_recent(xs_obj *obj)
{
	if (!xs__arm())
		return false;
	xs_obj *old = xs__tl_recent;
	xs__tl_recent = obj;
	xs_obj_unref(old); /* one never looked up: may free it, here, with no lock held */
	return true;
}

xs_obj *xs_handle_get(uint64_t handle, enum xs_kind kind)
{
	if (!handle)
		return NULL;
	/* The thread's recent object is kept allocated by its reference, which the caller
	 * gets: if it is still registered, this lookup comes before a racing unregister. */
	xs_obj *recent = xs__tl_recent;
	if (xs__kept_is(recent, handle, kind)) {
		xs__tl_recent = NULL;
		return recent;
	}
	uint64_t hash = xs__hash(handle);
	xs__shard *sh = xs__shard_of(hash);
	xs_mutex_lock(&sh->lock);
	xs_obj **pp = xs__find(sh, handle, hash);
	xs_obj *obj = pp && (*pp)->kind == kind ? *pp : NULL;
	if (obj)
		xs_obj_ref(obj);
	xs_mutex_unlock(&sh->lock);
	if (!obj && xs__h.fork_next &&
	    (handle & ((UINT64_C(1) << 56) - 1)) >> XS__SHARD_BITS < xs__h.fork_next)
		XS_WARN("core",
			"handle 0x%llx was made before fork() (by the parent process): "
			"unusable in the child, which starts from a clean library state",
			(unsigned long long)handle);
	return obj;
}

enum xs_kind xs_handle_kind(uint64_t handle)
{
	if (!handle)
		return XS_KIND_NONE;
	uint64_t hash = xs__hash(handle);
	xs__shard *sh = xs__shard_of(hash);
	xs_mutex_lock(&sh->lock);
	xs_obj **pp = xs__find(sh, handle, hash);
	enum xs_kind kind = pp ? (enum xs_kind)(*pp)->kind : XS_KIND_NONE;
	xs_mutex_unlock(&sh->lock);
	return kind;
}

const char *xs_handle_describe(uint64_t handle, enum xs_kind want)
{
	/* [wanted][found], each indexed by kind - XS_KIND_XQUEUE. Nothing found, or the kind
	 * wanted (a stream pointer wrapped again since the caller's lookup): "not a live". */
	static const char *const other[3][3] = {
	    {NULL, "is a HwQueue, not an XQueue", "is a command, not an XQueue"},
	    {"is an XQueue, not a HwQueue", NULL, "is a command, not a HwQueue"},
	    {"is an XQueue, not a command", "is a HwQueue, not a command", NULL},
	};
	static const char *const none[3] = {"is not a live XQueue", "is not a live HwQueue",
					    "is not a live command"};
	unsigned w = (unsigned)want - XS_KIND_XQUEUE;
	if (w >= 3)
		return "is not a live object";
	unsigned f = (unsigned)xs_handle_kind(handle) - XS_KIND_XQUEUE;
	return f < 3 && other[w][f] ? other[w][f] : none[w];
}

void xs_handles_forked(void)
{
	pthread_once(&xs__shards_once, xs__shards_init);
	for (size_t i = 0; i < XS__SHARDS; i++) {
		xs__shard *sh = &xs__h.shards[i];
		xs_mutex_init(&sh->lock);
		sh->parent_buckets = sh->buckets;
		sh->buckets = NULL; /* the parent's objects stay allocated, unreachable */
		sh->count = 0;
	}
	xs__h.fork_next = atomic_load_explicit(&xs__h.next, memory_order_relaxed);
	xs__tl_next = xs__tl_end = 0;      /* the forking thread's block: numbers of the parent's */
	xs__parent_recent = xs__tl_recent; /* the parent's: stay allocated, not found */
	xs__tl_recent = NULL;
	xs__parent_lent = xs__tl_lent; /* kept as it is: a borrow it is in still returns it */
}

xs_obj *xs_handle_unregister(uint64_t handle, enum xs_kind kind)
{
	if (!handle)
		return NULL;
	uint64_t hash = xs__hash(handle);
	xs__shard *sh = xs__shard_of(hash);
	xs_mutex_lock(&sh->lock);
	xs_obj **pp = xs__find(sh, handle, hash);
	xs_obj *obj = pp && (*pp)->kind == kind ? *pp : NULL;
	if (obj) {
		*pp = obj->next;
		sh->count--;
		atomic_store_explicit(&obj->live, false, memory_order_relaxed);
	}
	xs_mutex_unlock(&sh->lock);
	return obj;
}

size_t xs_handle_count(void)
{
	pthread_once(&xs__shards_once, xs__shards_init);
	size_t n = 0;
	for (size_t i = 0; i < XS__SHARDS; i++) {
		xs_mutex_lock(&xs__h.shards[i].lock);
		n += xs__h.shards[i].count;
		xs_mutex_unlock(&xs__h.shards[i].lock);
	}
	return n;
}
