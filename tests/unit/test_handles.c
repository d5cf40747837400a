/* The handle table (core/object.c). Checked:
 * - every registered handle is found with its kind and no other, with a reference taken;
 * - the table grows past many handles per shard (200000 live at once) and finds each;
 * - a handle unregistered is gone (get and a second unregister return NULL), its object
 *   freed once the last reference drops, and the others are still found;
 * - a key registered twice is refused with kXSchedErrorNotAllowed;
 * - handles are never reused, from one thread or from several at once;
 * - library-issued handles and stream-pointer keys mixed in the shards are all found;
 * - threads registering, looking up and unregistering their own handles at once (more
 *   threads than shards, some with keys) never see another's object or lose one, and the
 *   count goes back to where it started;
 * - handles made on one thread are found and unregistered from another;
 * - a thread's recent object (xs_handle_keep_recent) is found by its first lookup there,
 *   not by a lookup of another kind, not once another thread unregistered it, and is freed
 *   once: when its last reference drops, also the one kept for a thread that exits;
 * - a borrowed object (xs_handle_borrow) is lent again without a reference, nested borrows
 *   of another take and return one, one unregistered is not lent, and what the thread kept
 *   is freed once it borrows another or exits; in a child forked during a borrow, the
 *   parent's kept object is not lent and not dropped, and the borrow's return matches it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/object.h"

static atomic_long g_freed;

static void count_free(xs_obj *obj)
{
	atomic_fetch_add(&g_freed, 1);
	free(obj);
}

static xs_obj *make(enum xs_kind kind)
{
	xs_obj *o = malloc(sizeof(*o));
	CHECK(o);
	xs_obj_init(o, kind, count_free);
	return o;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

enum { MANY = 200000 };

static void many(void)
{
	size_t base = xs_handle_count();
	long freed0 = atomic_load(&g_freed);
	xs_obj **objs = calloc(MANY, sizeof(*objs));
	uint64_t *h = calloc(MANY, sizeof(*h));
	CHECK(objs && h);
	for (int i = 0; i < MANY; i++) {
		objs[i] = make(i % 3 ? XS_KIND_COMMAND : XS_KIND_XQUEUE);
		CHECK_OK(xs_handle_register(objs[i], 0));
		h[i] = objs[i]->handle;
		xs_obj_unref(objs[i]); /* the table's reference keeps it */
	}
	CHECK(xs_handle_count() == base + MANY);
	/* Keys, hashed over every shard, among the library-issued handles of this thread's. */
	enum { KEYS = 20000 };
	xs_obj **keyed = calloc(KEYS, sizeof(*keyed));
	CHECK(keyed);
	for (int i = 0; i < KEYS; i++) {
		keyed[i] = make(XS_KIND_HWQUEUE);
		CHECK_OK(xs_handle_register(keyed[i], UINT64_C(0x7e0000001000) + (uint64_t)i * 64));
		xs_obj_unref(keyed[i]);
	}
	for (int i = 0; i < KEYS; i++) {
		xs_obj *o =
		    xs_handle_get(UINT64_C(0x7e0000001000) + (uint64_t)i * 64, XS_KIND_HWQUEUE);
		CHECK(o == keyed[i]);
		xs_obj_unref(o);
	}
	for (int i = 0; i < MANY; i++) {
		enum xs_kind k = i % 3 ? XS_KIND_COMMAND : XS_KIND_XQUEUE;
		xs_obj *o = xs_handle_get(h[i], k);
		CHECK(o == objs[i]);
		CHECK(atomic_load(&o->refs) == 2);
		xs_obj_unref(o);
		CHECK(!xs_handle_get(h[i], XS_KIND_HWQUEUE)); /* another kind: not found */
	}
	for (int i = 0; i < MANY; i += 2) {
		enum xs_kind k = i % 3 ? XS_KIND_COMMAND : XS_KIND_XQUEUE;
		CHECK(!xs_handle_unregister(h[i], XS_KIND_HWQUEUE)); /* kind checked */
		xs_obj *o = xs_handle_unregister(h[i], k);
		CHECK(o == objs[i]);
		CHECK(!xs_handle_unregister(h[i], k));
		CHECK(!xs_handle_get(h[i], k));
		xs_obj_unref(o);
	}
	CHECK(atomic_load(&g_freed) == freed0 + MANY / 2);
	CHECK(xs_handle_count() == base + MANY / 2 + KEYS);
	for (int i = 1; i < MANY; i += 2) {
		enum xs_kind k = i % 3 ? XS_KIND_COMMAND : XS_KIND_XQUEUE;
		xs_obj *o = xs_handle_get(h[i], k);
		CHECK(o == objs[i]);
		xs_obj_unref(o);
		xs_obj_unref(xs_handle_unregister(h[i], k));
	}
	for (int i = 0; i < KEYS; i++)
		xs_obj_unref(xs_handle_unregister(UINT64_C(0x7e0000001000) + (uint64_t)i * 64,
						  XS_KIND_HWQUEUE));
	free(keyed);
	CHECK(atomic_load(&g_freed) == freed0 + MANY + KEYS);
	CHECK(xs_handle_count() == base);
	qsort(h, MANY, sizeof(*h), cmp_u64);
	for (int i = 1; i < MANY; i++)
		CHECK(h[i] != h[i - 1]);
	free(objs);
	free(h);
}

static void keys(void)
{
	xs_obj *a = make(XS_KIND_HWQUEUE), *b = make(XS_KIND_HWQUEUE);
	uint64_t key = 0x7f0012345678ull; /* a stream pointer's shape */
	CHECK_OK(xs_handle_register(a, key));
	CHECK(xs_handle_register(b, key) == kXSchedErrorNotAllowed);
	xs_obj *o = xs_handle_get(key, XS_KIND_HWQUEUE);
	CHECK(o == a);
	xs_obj_unref(o);
	xs_obj_unref(xs_handle_unregister(key, XS_KIND_HWQUEUE));
	CHECK(!xs_handle_get(key, XS_KIND_HWQUEUE));
	CHECK_OK(xs_handle_register(b, key)); /* free again */
	xs_obj_unref(xs_handle_unregister(key, XS_KIND_HWQUEUE));
	xs_obj_unref(a);
	xs_obj_unref(b);
}

/* More threads than shards (64), so that threads share shards; every third registers
 * stream-pointer-shaped keys (hashed over all shards) instead of library-issued handles. */
enum { THREADS = 72, ROUNDS = 4000, LIVE = 16 };
static uint64_t g_seen[THREADS][ROUNDS];

static void *churn(void *arg)
{
	int t = (int)(intptr_t)arg;
	bool keyed = t % 3 == 0;
	enum xs_kind kind = keyed ? XS_KIND_HWQUEUE : XS_KIND_COMMAND;
	xs_obj *live[LIVE] = {0};
	for (int r = 0; r < ROUNDS; r++) {
		int slot = r % LIVE;
		if (live[slot]) {
			uint64_t h = live[slot]->handle;
			xs_obj *o = xs_handle_get(h, kind);
			CHECK(o == live[slot]);
			xs_obj_unref(o);
			CHECK(xs_handle_unregister(h, kind) == live[slot]);
			xs_obj_unref(live[slot]);
		}
		xs_obj *n = make(kind);
		/* A key: a user-space address's shape (top byte 0), unique per thread and round. */
		uint64_t key =
		    keyed ? UINT64_C(0x7f0000000000) | (uint64_t)t << 24 | (uint64_t)r << 4 : 0;
		CHECK_OK(xs_handle_register(n, key));
		xs_obj_unref(n);
		live[slot] = n;
		g_seen[t][r] = n->handle;
	}
	for (int i = 0; i < LIVE; i++)
		if (live[i])
			xs_obj_unref(xs_handle_unregister(live[i]->handle, kind));
	return NULL;
}

static void threads(void)
{
	size_t base = xs_handle_count();
	pthread_t th[THREADS];
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_create(&th[t], NULL, churn, (void *)(intptr_t)t) == 0);
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_join(th[t], NULL) == 0);
	CHECK(xs_handle_count() == base);
	uint64_t *all = malloc(sizeof(g_seen));
	CHECK(all);
	memcpy(all, g_seen, sizeof(g_seen));
	size_t n = sizeof(g_seen) / sizeof(uint64_t);
	qsort(all, n, sizeof(*all), cmp_u64);
	for (size_t i = 1; i < n; i++)
		CHECK(all[i] != all[i - 1]); /* never reused, across threads */
	free(all);
}

/* Objects made on one thread (its own shard) are found and unregistered from another. */
enum { HANDOFF = 1000 };
static xs_obj *g_made[HANDOFF];

static void *make_many(void *arg)
{
	(void)arg;
	for (int i = 0; i < HANDOFF; i++) {
		g_made[i] = make(XS_KIND_COMMAND);
		CHECK_OK(xs_handle_register(g_made[i], 0));
		xs_obj_unref(g_made[i]);
	}
	return NULL;
}

static void handoff(void)
{
	size_t base = xs_handle_count();
	pthread_t t;
	CHECK(pthread_create(&t, NULL, make_many, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(xs_handle_count() == base + HANDOFF);
	for (int i = 0; i < HANDOFF; i++) {
		uint64_t h = g_made[i]->handle;
		xs_obj *o = xs_handle_get(h, XS_KIND_COMMAND);
		CHECK(o == g_made[i]);
		xs_obj_unref(o);
		xs_obj_unref(xs_handle_unregister(h, XS_KIND_COMMAND));
		CHECK(!xs_handle_get(h, XS_KIND_COMMAND));
	}
	CHECK(xs_handle_count() == base);
}

/* Register @o and keep it as this thread's recent object, which takes our reference. */
static void keep(xs_obj *o)
{
	CHECK_OK(xs_handle_register(o, 0));
	if (!xs_handle_keep_recent(o)) /* it takes our reference */
		xs_obj_unref(o);
}

static void *unregister_it(void *arg)
{
	xs_obj_unref(xs_handle_unregister(*(uint64_t *)arg, XS_KIND_COMMAND));
	return NULL;
}

static void *keep_and_exit(void *arg)
{
	xs_obj *o = make(XS_KIND_COMMAND);
	keep(o);
	*(uint64_t *)arg = o->handle;
	xs_obj_unref(xs_handle_unregister(o->handle, XS_KIND_COMMAND)); /* the kept one stays */
	return NULL;
}

static void recent(void)
{
	size_t base = xs_handle_count();
	long freed0 = atomic_load(&g_freed);
	/* Found by its first lookup, which takes the kept reference; a later one too. */
	xs_obj *a = make(XS_KIND_COMMAND);
	keep(a);
	uint64_t ha = a->handle;
	CHECK(!xs_handle_get(ha, XS_KIND_XQUEUE)); /* another kind: not it, and not taken */
	CHECK(xs_handle_get(ha, XS_KIND_COMMAND) == a);
	xs_obj_unref(a);
	CHECK(xs_handle_get(ha, XS_KIND_COMMAND) == a);
	xs_obj_unref(a);
	xs_obj_unref(xs_handle_unregister(ha, XS_KIND_COMMAND));
	CHECK(atomic_load(&g_freed) == freed0 + 1);
	/* Unregistered by another thread before its lookup here: not found, freed once this
	 * thread keeps another. */
	xs_obj *b = make(XS_KIND_COMMAND);
	keep(b);
	uint64_t hb = b->handle;
	pthread_t t;
	CHECK(pthread_create(&t, NULL, unregister_it, &hb) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(atomic_load(&g_freed) == freed0 + 1); /* the kept reference holds it */
	CHECK(!xs_handle_get(hb, XS_KIND_COMMAND));
	xs_obj *c = make(XS_KIND_COMMAND);
	keep(c);
	CHECK(atomic_load(&g_freed) == freed0 + 2);
	xs_obj_unref(xs_handle_unregister(c->handle, XS_KIND_COMMAND));
	/* A thread that exits drops what it kept. */
	uint64_t hd = 0;
	CHECK(pthread_create(&t, NULL, keep_and_exit, &hd) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(hd && !xs_handle_get(hd, XS_KIND_COMMAND));
	CHECK(atomic_load(&g_freed) == freed0 + 3);
	CHECK(xs_handle_count() == base);
	/* c is this thread's, unregistered: dropped at its next keep (or exit). */
	xs_obj *e = make(XS_KIND_COMMAND);
	keep(e);
	CHECK(atomic_load(&g_freed) == freed0 + 4);
	CHECK(xs_handle_get(e->handle, XS_KIND_COMMAND) == e);
	xs_obj_unref(e);
	xs_obj_unref(xs_handle_unregister(e->handle, XS_KIND_COMMAND));
	CHECK(atomic_load(&g_freed) == freed0 + 5);
}

/* A new object of @kind, registered: the table holds its one reference. */
static xs_obj *registered(enum xs_kind kind)
{
	xs_obj *o = make(kind);
	CHECK_OK(xs_handle_register(o, 0));
	xs_obj_unref(o);
	return o;
}

static unsigned refs(const xs_obj *o)
{
	return atomic_load(&o->refs);
}

static void *borrow_and_exit(void *arg)
{
	xs_obj *o = arg;
	CHECK(xs_handle_borrow(o->handle, XS_KIND_XQUEUE) == o);
	xs_handle_return(o);
	return NULL;
}

static void borrow(void)
{
	size_t base = xs_handle_count();
	long freed0 = atomic_load(&g_freed);
	xs_obj *a = registered(XS_KIND_XQUEUE), *b = registered(XS_KIND_XQUEUE);
	CHECK(!xs_handle_borrow(a->handle, XS_KIND_COMMAND)); /* another kind */
	/* The first borrow keeps it (the table's and the thread's); again: no reference. */
	CHECK(xs_handle_borrow(a->handle, XS_KIND_XQUEUE) == a);
	CHECK(refs(a) == 2);
	CHECK(xs_handle_borrow(a->handle, XS_KIND_XQUEUE) == a);
	CHECK(refs(a) == 2);
	/* Nested in it, another: a reference of the caller's, returned. */
	CHECK(xs_handle_borrow(b->handle, XS_KIND_XQUEUE) == b);
	CHECK(refs(b) == 2);
	xs_handle_return(b);
	CHECK(refs(b) == 1);
	xs_handle_return(a);
	xs_handle_return(a);
	CHECK(refs(a) == 2);
	/* At no depth, b is kept instead: a goes back to the table's reference alone. */
	CHECK(xs_handle_borrow(b->handle, XS_KIND_XQUEUE) == b);
	xs_handle_return(b);
	CHECK(refs(a) == 1 && refs(b) == 2);
	/* Unregistered: not lent; freed once this thread borrows again. */
	uint64_t hb = b->handle;
	xs_obj_unref(xs_handle_unregister(hb, XS_KIND_XQUEUE));
	CHECK(atomic_load(&g_freed) == freed0); /* the kept reference holds it */
	CHECK(!xs_handle_borrow(hb, XS_KIND_XQUEUE));
	CHECK(atomic_load(&g_freed) == freed0 + 1);
	/* A thread that exits drops what it kept. */
	pthread_t t;
	CHECK(pthread_create(&t, NULL, borrow_and_exit, a) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(refs(a) == 1);
	xs_obj_unref(xs_handle_unregister(a->handle, XS_KIND_XQUEUE));
	CHECK(atomic_load(&g_freed) == freed0 + 2);
	CHECK(xs_handle_count() == base);
}

/* A fork in the middle of a borrow: in the child (xs_handles_forked, which the library's
 * fork handler calls) the parent's kept object is neither lent nor dropped, and the
 * borrow's return still matches it. */
static void fork_in_borrow(void)
{
	xs_obj *a = registered(XS_KIND_XQUEUE), *b = registered(XS_KIND_XQUEUE);
	CHECK(xs_handle_borrow(a->handle, XS_KIND_XQUEUE) == a);
	unsigned ra = refs(a);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		xs_handles_forked();
		CHECK(!xs_handle_borrow(a->handle, XS_KIND_XQUEUE)); /* the parent's */
		xs_handle_return(a);                                 /* the outer borrow's */
		CHECK(refs(a) == ra);
		CHECK(!xs_handle_borrow(b->handle, XS_KIND_XQUEUE));
		CHECK(refs(a) == ra); /* not dropped at the next borrow either */
		_exit(0);
	}
	int st = -1;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	xs_handle_return(a);
	xs_obj_unref(xs_handle_unregister(a->handle, XS_KIND_XQUEUE));
	xs_obj_unref(xs_handle_unregister(b->handle, XS_KIND_XQUEUE));
}

int main(void)
{
	many();
	keys();
	threads();
	handoff();
	recent();
	borrow();
	fork_in_borrow();
	return 0;
}
