/* Thin pthread wrappers and the clock.
 *
 * Lock and unlock abort on failure (as libuv does): a failing pthread_mutex_lock means
 * memory corruption or a lock used after destroy, and no caller could recover from it.
 *
 * Thread-safety: all functions may be called from any thread.
 */
#ifndef XS_CORE_THREAD_H
#define XS_CORE_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* A mutex. Builds with assertions (no NDEBUG: meson's debug builds, CI's sanitizer builds)
 * record its holder, so that XS_ASSERT_HELD checks the "Caller holds" rules of the code
 * (as the kernel's lockdep_assert_held does); release builds record nothing. */
typedef struct xs_mutex {
	pthread_mutex_t m;
#ifndef NDEBUG
	_Atomic(pthread_t) owner; /* the holder, valid while held */
	atomic_bool held;
#endif
} xs_mutex;
#ifndef NDEBUG
#define XS_MUTEX_INITIALIZER                                                                       \
	{                                                                                          \
		PTHREAD_MUTEX_INITIALIZER, 0, false                                                \
	}
#else
#define XS_MUTEX_INITIALIZER                                                                       \
	{                                                                                          \
		PTHREAD_MUTEX_INITIALIZER                                                          \
	}
#endif
typedef pthread_cond_t xs_cond;

void xs_mutex_init(xs_mutex *m);
void xs_mutex_destroy(xs_mutex *m);
/* Print what failed and abort (thread.c). */
_Noreturn void xs_thread_die(const char *what, int err) __attribute__((cold));

/* The holder's record (builds with assertions): set after locking, cleared before
 * unlocking (and around a condition wait, which unlocks). */
static inline void xs__mutex_owned(xs_mutex *m, bool held)
{
#ifndef NDEBUG
	if (held)
		atomic_store_explicit(&m->owner, pthread_self(), memory_order_relaxed);
	atomic_store_explicit(&m->held, held, memory_order_relaxed);
#else
	(void)m;
	(void)held;
#endif
}

/* Whether the calling thread holds @m (builds with assertions; true otherwise). */
static inline bool xs_mutex_held(const xs_mutex *m)
{
#ifndef NDEBUG
	return atomic_load_explicit(&m->held, memory_order_relaxed) &&
	       pthread_equal(atomic_load_explicit(&m->owner, memory_order_relaxed), pthread_self());
#else
	(void)m;
	return true;
#endif
}

/* Abort, naming the lock and the place, unless the calling thread holds @lock (builds
 * with assertions; nothing in release builds). Where a comment says "Caller holds". */
#ifndef NDEBUG
#define XS_ASSERT_HELD(lock)                                                                       \
	do {                                                                                       \
		if (__builtin_expect(!xs_mutex_held(lock), 0))                                     \
			xs_thread_die(__FILE__ ": " #lock " not held in this function", 0);        \
	} while (0)
#else
#define XS_ASSERT_HELD(lock) ((void)0)
#endif

/* Inline: a submitted command takes and drops about ten locks, and a call each was 1-2 ns. */
static inline void xs_mutex_lock(xs_mutex *m)
{
	int err = pthread_mutex_lock(&m->m);
	if (__builtin_expect(err != 0, 0))
		xs_thread_die("pthread_mutex_lock", err);
	xs__mutex_owned(m, true);
}

static inline void xs_mutex_unlock(xs_mutex *m)
{
	xs__mutex_owned(m, false);
	int err = pthread_mutex_unlock(&m->m);
	if (__builtin_expect(err != 0, 0))
		xs_thread_die("pthread_mutex_unlock", err);
}

/* Condition variables use CLOCK_MONOTONIC, so timed waits ignore wall-clock jumps. */
void xs_cond_init(xs_cond *c);
void xs_cond_destroy(xs_cond *c);
void xs_cond_wait(xs_cond *c, xs_mutex *m);
/* Wait until the monotonic time @deadline_ns; returns false on time-out. Wake-ups may be
 * spurious or coalesced: callers re-check their predicate. */
bool xs_cond_timedwait(xs_cond *c, xs_mutex *m, int64_t deadline_ns);
void xs_cond_signal(xs_cond *c);
void xs_cond_broadcast(xs_cond *c);

/* Start a joinable thread named @name (at most 15 characters, as Linux allows).
 * Returns 0 or an errno value. */
int xs_thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg);
void xs_thread_join(pthread_t t);

/* The calling thread's timer slack in ns: how much later than asked the kernel may end
 * its timed sleeps (prctl(2) PR_GET_TIMERSLACK; Linux's default for a normal thread is
 * 50 us). 50 us where it cannot be read (or reads negative: prctl returns an int, so a
 * slack of 2^31 ns or more is not told exactly). A system call: not for a hot path. */
int64_t xs_thread_timer_slack_ns(void);

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t xs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* *@now, read from the clock the first time it is asked (while it is 0): one read shared
 * by the steps of one pass that need the time, and none where none does (a clock read
 * cost 20-50 ns of the 0.2-0.5 us the library spends per command, perf on this project's
 * hosts). */
static inline int64_t xs_now_lazy(int64_t *now)
{
	if (!*now)
		*now = xs_now_ns();
	return *now;
}

#endif
