/* core/thread.h's xs_thread_timer_slack_ns, on which a waiter's early margin rests
 * (engine.c, xs__wake_at): it gives the calling thread's timer slack as prctl sets it,
 * and each thread its own (a thread made after a change inherits it, a thread's later
 * change is not seen by another). */
#include <pthread.h>
#include <sys/prctl.h>

#include "check.h"
#include "core/thread.h"

static void *other(void *arg)
{
	int64_t *seen = arg;
	seen[0] = xs_thread_timer_slack_ns(); /* inherited from the creator */
	CHECK(prctl(PR_SET_TIMERSLACK, 777000UL, 0UL, 0UL, 0UL) == 0);
	seen[1] = xs_thread_timer_slack_ns();
	return NULL;
}

static xs_mutex g_m = XS_MUTEX_INITIALIZER;

/* Another thread does not hold a lock this one holds. */
static void *other_main(void *arg)
{
	(void)arg;
	CHECK(!xs_mutex_held(&g_m));
	return NULL;
}

/* The holder record behind XS_ASSERT_HELD (builds with assertions): held by the locking
 * thread only, and not across a condition wait's unlock. */
static void held(void)
{
#ifndef NDEBUG
	CHECK(!xs_mutex_held(&g_m));
	xs_mutex_lock(&g_m);
	CHECK(xs_mutex_held(&g_m));
	XS_ASSERT_HELD(&g_m);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, other_main, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	xs_cond c;
	xs_cond_init(&c);
	CHECK(!xs_cond_timedwait(&c, &g_m, xs_now_ns() + 1000000));
	CHECK(xs_mutex_held(&g_m)); /* locked again after the wait */
	xs_cond_destroy(&c);
	xs_mutex_unlock(&g_m);
	CHECK(!xs_mutex_held(&g_m));
#endif
}

int main(void)
{
	held();
	CHECK(xs_thread_timer_slack_ns() >= 0); /* 0 for a real-time thread on recent kernels */
	CHECK(prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) == 0);
	CHECK(xs_thread_timer_slack_ns() == 1);
	CHECK(prctl(PR_SET_TIMERSLACK, 123456UL, 0UL, 0UL, 0UL) == 0);
	CHECK(xs_thread_timer_slack_ns() == 123456);

	int64_t seen[2] = {0, 0};
	pthread_t t;
	CHECK(pthread_create(&t, NULL, other, seen) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(seen[0] == 123456);
	CHECK(seen[1] == 777000);
	CHECK(xs_thread_timer_slack_ns() == 123456); /* the other thread's change is its own */
	printf("timer slack: read per thread, as set\n");
	return 0;
}
