#include "core/thread.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

void xs_thread_die(const char *what, int err)
{
	/* The one place the library prints without XSCHED_LOG: it is about to abort. */
	if (err)
		fprintf(stderr, "xsched: fatal: %s: %s\n", what, strerror(err));
	else
		fprintf(stderr, "xsched: fatal: %s\n", what);
	abort();
}

void xs_mutex_init(xs_mutex *m)
{
	int err = pthread_mutex_init(&m->m, NULL);
	if (err)
		xs_thread_die("pthread_mutex_init", err);
	xs__mutex_owned(m, false);
}

void xs_mutex_destroy(xs_mutex *m)
{
	int err = pthread_mutex_destroy(&m->m);
	if (err)
		xs_thread_die("pthread_mutex_destroy", err);
}

void xs_cond_init(xs_cond *c)
{
	pthread_condattr_t attr;
	int err = pthread_condattr_init(&attr);
	if (!err)
		err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(c, &attr);
	if (err)
		xs_thread_die("pthread_cond_init", err);
	pthread_condattr_destroy(&attr);
}

void xs_cond_destroy(xs_cond *c)
{
	int err = pthread_cond_destroy(c);
	if (err)
		xs_thread_die("pthread_cond_destroy", err);
}

void xs_cond_wait(xs_cond *c, xs_mutex *m)
{
	xs__mutex_owned(m, false);
	int err = pthread_cond_wait(c, &m->m);
	if (err)
		xs_thread_die("pthread_cond_wait", err);
	xs__mutex_owned(m, true);
}

bool xs_cond_timedwait(xs_cond *c, xs_mutex *m, int64_t deadline_ns)
{
	struct timespec ts = {
	    .tv_sec = deadline_ns / 1000000000,
	    .tv_nsec = deadline_ns % 1000000000,
	};
	xs__mutex_owned(m, false);
	int err = pthread_cond_timedwait(c, &m->m, &ts);
	xs__mutex_owned(m, true);
	if (err == ETIMEDOUT)
		return false;
	if (err)
		xs_thread_die("pthread_cond_timedwait", err);
	return true;
}

void xs_cond_signal(xs_cond *c)
{
	int err = pthread_cond_signal(c);
	if (err)
		xs_thread_die("pthread_cond_signal", err);
}

void xs_cond_broadcast(xs_cond *c)
{
	int err = pthread_cond_broadcast(c);
	if (err)
		xs_thread_die("pthread_cond_broadcast", err);
}

int xs_thread_start(pthread_t *t, const char *name, void *(*fn)(void *), void *arg)
{
	int err = pthread_create(t, NULL, fn, arg);
	if (!err)
		pthread_setname_np(*t, name); /* best effort: names are for debuggers */
	return err;
}

int64_t xs_thread_timer_slack_ns(void)
{
#ifdef PR_GET_TIMERSLACK
	int slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
	if (slack >= 0)
		return slack;
#endif
	return 50000;
}

void xs_thread_join(pthread_t t)
{
	int err = pthread_join(t, NULL);
	if (err)
		xs_thread_die("pthread_join", err);
}
