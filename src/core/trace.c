/* The timeline trace (trace.h): per-thread rings and the Chrome trace-event writer. */
#include "core/trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/thread.h"

/* Kept loose: read by every emit site through XS_TRACE (trace.h), one relaxed load, so it is
 * the module's interface rather than its private state. */
atomic_bool xs_trace_on;

typedef struct xs__ring {
	xs_mutex lock; /* guards the fields below: its thread writes, the writer reads */
	xs_trace_ev *ev;
	uint64_t cap, head, count, dropped; /* head: next slot; count: events kept */
	uint64_t gen;                       /* the trace its events belong to */
	/* Under xs__lock: */
	struct xs__ring *next; /* xs__t.rings */
	bool owned;            /* a live thread records into it (its xs__mine) */
} xs__ring;

/* The trace's process-wide state, one struct (xs__t). Its lock guards the list of rings,
 * their owned flags and the trace's path. A ring belongs to one thread while that thread
 * lives (the thread keeps a pointer to it without a lock, xs__mine); when the thread exits,
 * the ring goes back (xs__ring_release) with the events it holds: a thread that records
 * later takes it over and adds its own events, and a ring nobody owns is freed once its
 * events are written (xs_trace_stop). So the memory of the rings follows the number of
 * recording threads alive at once, not of every thread that ever recorded. */
/* A live XQueue's track name (xs_trace_name). */
typedef struct xs__name {
	uint32_t xq;
	uint64_t stream;
	int64_t prio;
} xs__name;

static struct xs__trace {
	xs_mutex lock;
	xs__ring *rings;
	char *path;
	xs__name *names; /* the live XQueues' names, unordered (few: one per XQueue) */
	size_t nnames, names_cap;
	_Atomic uint64_t gen; /* the current trace; changed under lock */
	/* The ring size: stored under lock before the generation changes, read by recording
	 * threads without it (relaxed: a thread that sees an older generation may still take
	 * the new size, which is harmless). */
	_Atomic uint64_t cap;
	pthread_key_t key; /* its destructor gives a thread's ring back */
	bool key_ok;       /* key was made (under xs__key_once) */
} xs__t = {.lock = XS_MUTEX_INITIALIZER, .gen = 1, .cap = 65536};
static _Thread_local xs__ring *xs__mine;
static pthread_once_t xs__key_once = PTHREAD_ONCE_INIT;

/* The pthread key's destructor, at the exit of a thread that recorded: the ring keeps
 * its events for the file and goes to the next thread that records. */
static void xs__ring_release(void *arg)
{
	xs__ring *r = arg;
	xs_mutex_lock(&xs__t.lock);
	r->owned = false;
	xs_mutex_unlock(&xs__t.lock);
	xs__mine = NULL;
}

static void xs__key_init(void)
{
	xs__t.key_ok = pthread_key_create(&xs__t.key, xs__ring_release) == 0;
}

/* A ring that no live thread owns, taken for the calling thread, or a new one (not locked,
 * events of an earlier thread possibly kept); NULL when out of memory. */
static xs__ring *xs__ring_take(void)
{
	pthread_once(&xs__key_once, xs__key_init);
	xs_mutex_lock(&xs__t.lock);
	xs__ring *r = xs__t.rings;
	while (r && r->owned)
		r = r->next;
	if (r)
		r->owned = true;
	xs_mutex_unlock(&xs__t.lock);
	if (!r) {
		uint64_t cap = atomic_load_explicit(&xs__t.cap, memory_order_relaxed);
		r = calloc(1, sizeof(*r));
		if (r)
			r->ev = calloc(cap, sizeof(*r->ev));
		if (!r || !r->ev) {
			free(r);
			return NULL;
		}
		xs_mutex_init(&r->lock);
		r->cap = cap;
		r->owned = true;
		xs_mutex_lock(&xs__t.lock);
		r->next = xs__t.rings;
		xs__t.rings = r;
		xs_mutex_unlock(&xs__t.lock);
	}
	/* Without the key the ring stays owned for the life of the process (as before). */
	if (xs__t.key_ok)
		pthread_setspecific(xs__t.key, r);
	xs__mine = r;
	return r;
}

/* The calling thread's ring for the current trace, locked; NULL when out of memory. */
static xs__ring *xs__ring_get(void)
{
	uint64_t gen = atomic_load_explicit(&xs__t.gen, memory_order_acquire);
	xs__ring *r = xs__mine ? xs__mine : xs__ring_take();
	if (!r)
		return NULL;
	xs_mutex_lock(&r->lock);
	if (r->gen == gen)
		return r; /* this trace's: its events (an earlier owner's too) stay */
	uint64_t cap = atomic_load_explicit(&xs__t.cap, memory_order_relaxed);
	if (cap != r->cap) {
		xs_trace_ev *ev = calloc(cap, sizeof(*ev));
		if (!ev) {
			xs_mutex_unlock(&r->lock);
			return NULL;
		}
		free(r->ev);
		r->ev = ev;
		r->cap = cap;
	}
	r->head = r->count = r->dropped = 0;
	r->gen = gen;
	return r;
}

void xs_trace_emit(enum xs_trace_kind kind, uint64_t xq, uint64_t a, int64_t b)
{
	xs_trace_ev e = {xs_now_ns(), a, b, (uint32_t)xq, (uint16_t)kind, 0};
	xs__ring *r = xs__ring_get();
	if (!r)
		return;
	r->ev[r->head] = e;
	r->head = (r->head + 1) % r->cap;
	if (r->count < r->cap)
		r->count++;
	else
		r->dropped++; /* the oldest was overwritten */
	xs_mutex_unlock(&r->lock);
}

XResult xs_trace_start(const char *path, int64_t ring_events)
{
	XS_CHECK(path && *path, kXSchedErrorInvalidValue, "trace", "XSchedTraceStart: no path");
	xs_mutex_lock(&xs__t.lock);
	if (xs__t.path) {
		XS_FAIL("trace", "XSchedTraceStart: a trace into %s runs already", xs__t.path);
		xs_mutex_unlock(&xs__t.lock);
		return kXSchedErrorNotAllowed;
	}
	xs__t.path = strdup(path);
	if (!xs__t.path) {
		xs_mutex_unlock(&xs__t.lock);
		return kXSchedErrorUnknown;
	}
	if (ring_events > 0)
		atomic_store_explicit(&xs__t.cap, (uint64_t)ring_events, memory_order_relaxed);
	atomic_fetch_add_explicit(&xs__t.gen, 1, memory_order_acq_rel); /* rings start empty */
	atomic_store_explicit(&xs_trace_on, true, memory_order_release);
	xs_mutex_unlock(&xs__t.lock);
	return kXSchedSuccess;
}

static int xs__cmp(const void *x, const void *y)
{
	const xs_trace_ev *a = x, *b = y;
	return (a->ts_ns > b->ts_ns) - (a->ts_ns < b->ts_ns);
}

static const char *const xs__names[XS_TR_KIND_COUNT] = {
    "queue",   "submit",        "enqueue",      "commit",   "complete",
    "suspend", "resume",        "priority",     "scope",    "pass",
    "policy",  "stall release", "corun budget", "sole top", "lower command too long",
    "slice",   "unit",
};

/* One event as a JSON object on its own line. */
static void xs__write_ev(FILE *f, const xs_trace_ev *e, int64_t t0)
{
	double us = (double)(e->ts_ns - t0) / 1000.0;
	unsigned tid = e->xq;
	switch (e->kind) {
	case XS_TR_KIND_COUNT: /* a name superseded by a later one */
		break;
	case XS_TR_QUEUE:
		fprintf(f,
			",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%u,\"name\":\"thread_name\",\"args\":{"
			"\"name\":\"XQueue 0x%x prio %lld %s 0x%llx\"}}",
			tid, tid, (long long)e->b, e->a ? "stream" : "host queue",
			(unsigned long long)e->a);
		break;
	case XS_TR_COMMIT:
	case XS_TR_COMPLETE:
		fprintf(
		    f,
		    ",\n{\"ph\":\"%s\",\"pid\":1,\"tid\":%u,\"cat\":\"xq%x\",\"name\":\"command\","
		    "\"id\":\"0x%x.%llu\",\"ts\":%.3f,\"args\":{\"seq\":%llu%s%lld}}",
		    e->kind == XS_TR_COMMIT ? "b" : "e", tid, tid, tid, (unsigned long long)e->a,
		    us, (unsigned long long)e->a,
		    e->kind == XS_TR_COMPLETE ? ",\"result\":" : ",\"c\":", (long long)e->b);
		break;
	default:
		fprintf(f,
			",\n{\"ph\":\"i\",\"s\":\"%s\",\"pid\":1,\"tid\":%u,\"name\":\"%s\",\"ts\":"
			"%.3f,"
			"\"args\":{\"a\":%llu,\"b\":%lld}}",
			tid ? "t" : "p", tid, xs__names[e->kind], us, (unsigned long long)e->a,
			(long long)e->b);
	}
}

/* A track has one name: of an XQueue's naming events (create, then each priority change),
 * the last is written; the earlier ones become no-ops (kind XS_TR_KIND_COUNT). Returns how
 * many. */
static uint64_t xs__keep_last_names(xs_trace_ev *ev, uint64_t n)
{
	uint64_t gone = 0;
	for (uint64_t i = n; i-- > 0;) {
		if (ev[i].kind != XS_TR_QUEUE)
			continue;
		for (uint64_t j = i; j-- > 0;)
			if (ev[j].kind == XS_TR_QUEUE && ev[j].xq == ev[i].xq) {
				ev[j].kind = XS_TR_KIND_COUNT;
				gone++;
			}
	}
	return gone;
}

/* Free the rings of exited threads (their events were copied out). Caller holds
 * xs__t.lock. */
static void xs__free_unowned(void)
{
	XS_ASSERT_HELD(&xs__t.lock);
	for (xs__ring **p = &xs__t.rings; *p;) {
		xs__ring *r = *p;
		if (r->owned) {
			p = &r->next;
			continue;
		}
		*p = r->next;
		xs_mutex_destroy(&r->lock);
		free(r->ev);
		free(r);
	}
}

/* Copy out every ring's events of trace @gen, then a naming event per live XQueue (the
 * last of its names, xs__keep_last_names): *@k of them, *@dropped counted as dropped.
 * Returns a buffer to free, NULL when out of memory. A thread still inside an emit holds
 * its ring's lock, so each copy sees whole events. Caller holds xs__t.lock. */
static xs_trace_ev *xs__collect_locked(uint64_t gen, uint64_t *k, uint64_t *dropped)
{
	XS_ASSERT_HELD(&xs__t.lock);
	uint64_t n = xs__t.nnames;
	*k = *dropped = 0;
	for (xs__ring *r = xs__t.rings; r; r = r->next) {
		xs_mutex_lock(&r->lock); /* its thread may be resizing it for the next trace */
		n += r->gen == gen ? r->count : 0;
		xs_mutex_unlock(&r->lock);
	}
	xs_trace_ev *all = malloc((n ? n : 1) * sizeof(*all));
	for (xs__ring *r = xs__t.rings; r && all; r = r->next) {
		xs_mutex_lock(&r->lock);
		if (r->gen == gen) {
			uint64_t first = (r->head + r->cap - r->count) % r->cap;
			for (uint64_t i = 0; i < r->count && *k < n; i++)
				all[(*k)++] = r->ev[(first + i) % r->cap];
			*dropped += r->dropped;
		}
		xs_mutex_unlock(&r->lock);
	}
	for (size_t i = 0; i < xs__t.nnames && all && *k < n; i++) {
		const xs__name *m = &xs__t.names[i];
		all[(*k)++] = (xs_trace_ev){INT64_MAX, m->stream, m->prio, m->xq, XS_TR_QUEUE, 0};
	}
	return all;
}

/* The index of @xq's name, or xs__t.nnames when it has none. Caller holds xs__t.lock. */
static size_t xs__name_find(uint64_t xq)
{
	XS_ASSERT_HELD(&xs__t.lock);
	size_t i = 0;
	while (i < xs__t.nnames && xs__t.names[i].xq != (uint32_t)xq)
		i++;
	return i;
}

/* Room for one more name; false when out of memory (the track then goes unnamed unless
 * its naming event is kept). Caller holds xs__t.lock. */
static bool xs__name_room(void)
{
	XS_ASSERT_HELD(&xs__t.lock);
	if (xs__t.nnames < xs__t.names_cap)
		return true;
	size_t cap = xs__t.names_cap ? 2 * xs__t.names_cap : 16;
	xs__name *m = realloc(xs__t.names, cap * sizeof(*m));
	if (!m)
		return false;
	xs__t.names = m;
	xs__t.names_cap = cap;
	return true;
}

void xs_trace_name(uint64_t xq, uint64_t stream, int64_t prio, bool add)
{
	XS_TRACE(XS_TR_QUEUE, xq, stream, prio);
	xs_mutex_lock(&xs__t.lock);
	size_t i = xs__name_find(xq);
	if (i < xs__t.nnames || (add && xs__name_room())) {
		xs__t.names[i] = (xs__name){(uint32_t)xq, stream, prio};
		if (i == xs__t.nnames)
			xs__t.nnames++;
	}
	xs_mutex_unlock(&xs__t.lock);
}

void xs_trace_unname(uint64_t xq)
{
	xs_mutex_lock(&xs__t.lock);
	size_t i = xs__name_find(xq);
	if (i < xs__t.nnames)
		xs__t.names[i] = xs__t.names[--xs__t.nnames];
	xs_mutex_unlock(&xs__t.lock);
}

/* Write the @k events of @all (sorted here) to @path as a Chrome trace. */
static XResult xs__write_file(const char *path, xs_trace_ev *all, uint64_t k, uint64_t dropped)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		XS_ERROR("trace", "cannot write the trace to %s: %s", path, strerror(errno));
		return kXSchedErrorHardware;
	}
	qsort(all, k, sizeof(*all), xs__cmp);
	uint64_t written = k - xs__keep_last_names(all, k);
	int64_t t0 = k ? all[0].ts_ns : 0;
	fprintf(f,
		"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"library\":\"libxsched\","
		"\"clock\":\"CLOCK_MONOTONIC\",\"t0_ns\":%lld,\"events\":%llu,"
		"\"dropped\":%llu},\n\"traceEvents\":[\n"
		"{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":"
		"\"libxsched\"}}",
		(long long)t0, (unsigned long long)written, (unsigned long long)dropped);
	for (uint64_t i = 0; i < k; i++)
		xs__write_ev(f, &all[i], t0);
	fprintf(f, "\n]}\n");
	if (fclose(f) != 0) {
		XS_ERROR("trace", "cannot write the trace to %s: %s", path, strerror(errno));
		return kXSchedErrorHardware;
	}
	return kXSchedSuccess;
}

XResult xs_trace_stop(void)
{
	xs_mutex_lock(&xs__t.lock);
	char *path = xs__t.path;
	if (!path) {
		xs_mutex_unlock(&xs__t.lock);
		return kXSchedErrorNotFound;
	}
	atomic_store_explicit(&xs_trace_on, false, memory_order_release);
	xs__t.path = NULL;
	uint64_t gen = atomic_fetch_add_explicit(&xs__t.gen, 1, memory_order_acq_rel);
	uint64_t k, dropped;
	xs_trace_ev *all = xs__collect_locked(gen, &k, &dropped);
	xs__free_unowned();
	xs_mutex_unlock(&xs__t.lock);

	XResult res;
	if (all) {
		res = xs__write_file(path, all, k, dropped);
	} else {
		XS_ERROR("trace", "cannot write the trace to %s: %s", path, "out of memory");
		res = kXSchedErrorUnknown;
	}
	free(all);
	free(path);
	return res;
}

void xs_trace_counts(uint64_t *kept, uint64_t *dropped)
{
	*kept = *dropped = 0;
	xs_mutex_lock(&xs__t.lock);
	uint64_t gen = atomic_load_explicit(&xs__t.gen, memory_order_acquire);
	for (xs__ring *r = xs__t.rings; r; r = r->next) {
		xs_mutex_lock(&r->lock);
		if (r->gen == gen) {
			*kept += r->count;
			*dropped += r->dropped;
		}
		xs_mutex_unlock(&r->lock);
	}
	xs_mutex_unlock(&xs__t.lock);
}

void xs_trace_forked(void)
{
	/* The parent's trace is not the child's: its path is released and its events are
	 * dropped at the child's first trace. Only the forking thread lives on: the rings of
	 * the parent's other threads go to the child's threads. */
	atomic_store_explicit(&xs_trace_on, false, memory_order_relaxed);
	xs_mutex_init(&xs__t.lock);
	for (xs__ring *r = xs__t.rings; r; r = r->next) {
		xs_mutex_init(&r->lock); /* a parent's thread may have held one */
		r->owned = r == xs__mine;
	}
	free(xs__t.path);
	xs__t.path = NULL;
	xs__t.nnames = 0; /* the parent's XQueues are not the child's */
	atomic_fetch_add_explicit(&xs__t.gen, 1, memory_order_relaxed);
}
