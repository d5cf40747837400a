/* Reference-counted objects and the process-wide handle table.
 *
 * Every object behind a public handle starts with an xs_obj. The table maps a handle to
 * its object; a lookup takes a reference, so an object found by one thread stays valid
 * while another thread destroys its handle. Handles are never reused: library-issued
 * values carry a kind tag in the top byte, then a 50-bit sequence number and the 6-bit
 * shard of the thread that made them; GPU HwQueue handles are native stream pointers
 * (user-space addresses, whose top byte is 0).
 *
 * Thread-safety: all functions may be called from any thread; the table is split in 64
 * shards, each with its own mutex (held only for the chain operation): the objects a
 * thread makes go to its own shard (given round robin), stream pointers by a hash, so
 * threads working on their own objects rarely wait for each other.
 */
#ifndef XS_CORE_OBJECT_H
#define XS_CORE_OBJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "xsched.h"

enum xs_kind {
	XS_KIND_NONE = 0, /* no live object (xs_handle_kind) */
	XS_KIND_XQUEUE = 0xA1,
	XS_KIND_HWQUEUE = 0xA2,
	XS_KIND_COMMAND = 0xA3,
};

typedef struct xs_obj {
	uint64_t handle; /* key in the table */
	uint8_t kind;    /* an enum xs_kind (a byte: the object stays 32 bytes) */
	/* Registered: written under its shard's lock, read without it by the fast path of
	 * xs_handle_get (xs_handle_keep_recent). */
	atomic_bool live;
	atomic_uint refs;                 /* the table's reference counts as one while registered */
	void (*free)(struct xs_obj *obj); /* called once, when refs reaches 0 */
	struct xs_obj *next; /* next in its handle-table chain; guarded by that shard's lock */
} xs_obj;

/* Set up @obj with one reference (the caller's) and its library-issued handle (the value
 * xs_handle_register publishes unless it is given a key). */
void xs_obj_init(xs_obj *obj, enum xs_kind kind, void (*free_fn)(xs_obj *obj));
void xs_obj_ref(xs_obj *obj);
void xs_obj_unref(xs_obj *obj); /* NULL ok */

/* Register @obj under its library-issued handle (or @key when nonzero, for GPU HwQueues,
 * before any other thread can reach @obj) and take the table's reference. Returns
 * kXSchedErrorNotAllowed if @key is already registered, kXSchedErrorUnknown if out of memory. */
XResult xs_handle_register(xs_obj *obj, uint64_t key);

/* Remember registered @obj as the calling thread's most recent object, with the caller's
 * reference, which becomes the thread's (the first xs_handle_get of its handle on this
 * thread takes it over, without a lock; else it is dropped at the thread's next call, or
 * when it exits): a command is mostly made, submitted and destroyed by one thread, and its
 * submit's lookup then skips the shard lock and the atomic operations of a locked lookup.
 * Returns false, and keeps nothing (the caller keeps its reference), if the thread cannot
 * keep objects (no thread-exit destructor could be set). For objects whose free calls no
 * backend (it may run late, on this thread): plain commands. */
bool xs_handle_keep_recent(xs_obj *obj);

/* The live object of @kind behind @handle for the calling thread's use until it passes it
 * to xs_handle_return, on this thread; NULL if none. The thread keeps the last object it
 * borrowed (a reference of its own, dropped when it borrows another at no depth or exits), and
 * a borrow of it again takes no lock and no reference: an application thread mostly submits
 * to one XQueue, and its lookup was a shard lock and four atomic operations per command.
 * Borrows nest (a launch callback may submit to another XQueue); a nested borrow of another
 * object takes a reference, as xs_handle_get does. The kept object may stay allocated after
 * it is unregistered, until the thread's next borrow or its exit: for objects whose free
 * calls no backend (XQueues). */
xs_obj *xs_handle_borrow(uint64_t handle, enum xs_kind kind);
void xs_handle_return(xs_obj *obj); /* NULL ok */

/* Find the live object of @kind behind @handle and take a reference; NULL if none. */
xs_obj *xs_handle_get(uint64_t handle, enum xs_kind kind);

/* Remove @handle of @kind from the table and return the object, still holding the
 * table's reference (the caller drops it). NULL if not live. Exactly one caller wins a
 * race to unregister a handle. */
xs_obj *xs_handle_unregister(uint64_t handle, enum xs_kind kind);

/* The kind of the live object behind @handle, whichever kind it is; XS_KIND_NONE if none.
 * Takes its shard's lock: for messages, not for a hot path. */
enum xs_kind xs_handle_kind(uint64_t handle);

/* What @handle is, said to a caller that wanted a live object of @want and found none, for
 * an API call's message: "is not a live XQueue", or where it is a live handle of another
 * kind (all handles are uint64_t, so passing one for another compiles) "is a HwQueue, not
 * an XQueue". Static storage; a lookup (xs_handle_kind). */
const char *xs_handle_describe(uint64_t handle, enum xs_kind want);

/* In a child after fork(): forget every handle of the parent (its objects stay allocated
 * and unreachable; lookups of them fail with a log line naming the fork). */
void xs_handles_forked(void);

/* Live handles (tests use this to check for leaks): a sum over the shards, each read
 * under its lock; not for a hot path. */
size_t xs_handle_count(void);

#endif
