/* What XQueueWaitAll() reports (issue 44, item 5; xsched.h, XQueueWaitAll): the first
 * failure among the commands it covers, those submitted before it was called and after
 * those an earlier XQueueWaitAll that had returned covered, whoever else waits. On a host
 * queue, each case repeated (the commands' ends race the waiters' wake-ups):
 * - two threads in XQueueWaitAll on the same commands, one of which fails: both return
 *   its error (before the fix one returned it and the other kXSchedErrorSuccess, every
 *   time: the queue kept one pending error, returned and cleared by the first waiter);
 * - a WaitAll that covers only successful commands returns kXSchedSuccess although a
 *   command submitted after the call fails before it returns; the next WaitAll returns
 *   that failure (before: the first returned it in most tries, the next one nothing);
 * - two failures, one covered by a WaitAll and one submitted after it: the WaitAll returns
 *   the first's error, the next WaitAll the second's (before, the second was lost
 *   whenever it failed before the first WaitAll returned);
 * - once reported, a failure is not reported again: a later WaitAll of successful
 *   commands returns kXSchedSuccess (the queue stays usable).
 * A waiter is known to be inside its call when it sleeps there (below). */
#include "hang_util.h"

#define TRIES 30

static XResult fail_hw(void *data)
{
	(void)data;
	return kXSchedErrorHardware;
}

static XResult fail_inval(void *data)
{
	(void)data;
	return kXSchedErrorInvalidValue;
}

/* Waiter threads asleep inside XQueueWaitAll: the test is linked with
 * -Wl,--wrap=pthread_cond_wait (as test_hang_recreate), and the wrapper counts the
 * library's condition waits on threads marked as waiters. With the queue's first command
 * blocked, such a wait is the waiter's wait for its commands: it has read what it covers. */
static _Thread_local bool t_waiter;
static atomic_int g_asleep;

int __real_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);

int __wrap_pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	if (t_waiter)
		atomic_fetch_add(&g_asleep, 1);
	int r = __real_pthread_cond_wait(c, m);
	if (t_waiter)
		atomic_fetch_sub(&g_asleep, 1);
	return r;
}

struct waiter {
	XQueueHandle xq;
	XResult res;
	pthread_t th;
};

static void *wait_all_main(void *arg)
{
	struct waiter *w = arg;
	t_waiter = true;
	w->res = XQueueWaitAll(w->xq);
	return NULL;
}

/* Start @n waiters on @xq and wait (up to 5 s) until all of them sleep inside the call. */
static void start_waiters(struct waiter *w, int n, XQueueHandle xq)
{
	for (int i = 0; i < n; i++) {
		w[i].xq = xq;
		w[i].res = kXSchedErrorUnknown;
		CHECK(pthread_create(&w[i].th, NULL, wait_all_main, &w[i]) == 0);
	}
	int64_t end = t_now_us() + 5000000;
	while (atomic_load(&g_asleep) < n) {
		CHECK(t_now_us() < end);
		t_sleep_us(100);
	}
}

static void join_waiters(struct waiter *w, int n)
{
	for (int i = 0; i < n; i++)
		CHECK(pthread_join(w[i].th, NULL) == 0);
}

static int g_wrong;

static void expect(const char *what, int try, XResult want, XResult got)
{
	if (got == want)
		return;
	if (g_wrong++ < 10)
		printf("  %s, try %d: expected %s, measured %s\n", what, try, XResultName(want),
		       XResultName(got));
}

int main(void)
{
	HwQueueHandle h;
	XQueueHandle q;
	CHECK_OK(HostQueueCreate(&h));
	CHECK_OK(XQueueCreate(&q, h, kPreemptLevelBlock, 0));
	struct waiter w[2];
	for (int i = 0; i < TRIES; i++) {
		/* Two waiters on one failure. */
		atomic_bool release = false;
		t_submit_fn(q, h_block_fn, &release);
		t_submit_fn(q, fail_hw, NULL);
		t_submit_fn(q, h_nop_fn, NULL);
		start_waiters(w, 2, q);
		atomic_store(&release, true);
		join_waiters(w, 2);
		expect("two waiters, one failure: the first waiter", i, kXSchedErrorHardware,
		       w[0].res);
		expect("two waiters, one failure: the second waiter", i, kXSchedErrorHardware,
		       w[1].res);
		expect("reported already: a WaitAll after both", i, kXSchedSuccess,
		       XQueueWaitAll(q));

		/* A failure submitted after the call. */
		atomic_store(&release, false);
		t_submit_fn(q, h_block_fn, &release);
		t_submit_fn(q, h_nop_fn, NULL);
		start_waiters(w, 1, q);
		t_submit_fn(q, fail_hw, NULL);
		atomic_store(&release, true);
		join_waiters(w, 1);
		expect("a failure submitted after the call: that call", i, kXSchedSuccess,
		       w[0].res);
		expect("a failure submitted after the call: the next WaitAll", i,
		       kXSchedErrorHardware, XQueueWaitAll(q));

		/* Two failures, one on either side of the call. */
		atomic_store(&release, false);
		t_submit_fn(q, h_block_fn, &release);
		t_submit_fn(q, fail_hw, NULL);
		start_waiters(w, 1, q);
		t_submit_fn(q, fail_inval, NULL);
		atomic_store(&release, true);
		join_waiters(w, 1);
		expect("two failures: the WaitAll covering the first", i, kXSchedErrorHardware,
		       w[0].res);
		expect("two failures: the next WaitAll", i, kXSchedErrorInvalidValue,
		       XQueueWaitAll(q));
		expect("all reported: a WaitAll of nothing", i, kXSchedSuccess, XQueueWaitAll(q));
	}
	XQueueStats st = t_stats(q);
	CHECK_OK(XQueueDestroy(q));
	CHECK_OK(HwQueueDestroy(h));
	printf("%d tries of three cases: %d results other than expected; %llu commands failed\n",
	       TRIES, g_wrong, (unsigned long long)st.failed);
	CHECK(st.failed == 4 * TRIES);
	CHECK(g_wrong == 0);
	return 0;
}
