/* Engine v2 on the host backend:
 * 1. direct submission: when the XQueue may launch, XQueueSubmit has enqueued the command
 *    on the HwQueue by the time it returns (no launcher thread in between); while the
 *    application suspends it (Lv1 and Lv2), nothing new is enqueued, and after the resume a
 *    library thread enqueues what waited, in order;
 * 2. the library's threads do not grow with the number of XQueues: with 1 or 24 XQueues
 *    busy there is one launch thread, one progress thread and one scheduler thread;
 * 3. from a host function or launch callback of an XQueue: waiting for an earlier command
 *    of the same XQueue works; waiting for itself or a later one, XQueueWaitAll,
 *    XQueueDestroy and a synchronous XQueueSuspend return kXSchedErrorNotAllowed instead of
 *    hanging;
 * 4. priority inversion: a host function of a high-priority XQueue that waits for a
 *    low-priority one under HPF completes (the waiting queue counts as blocked);
 *    XQueueSuspend(SyncHwQueue) returns although the level is raised while it waits;
 * 5. PRIORITY_NO_EXECUTE keeps an XQueue from running until another priority is given;
 * 6. publish last: XQueueGet and XQueueDestroy racing XQueueCreate and XHintSetScheduler
 *    never see a half-built XQueue (a handle of 0, a use after free under ASan). */
#include <dirent.h>
#include <pthread.h>
#include <string.h>

#include "check.h"

/* Threads of this process whose name starts with @prefix. */
static int count_threads(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	CHECK(d);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], name[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static int64_t g_slow_us = 2000;

static XResult slow(void *data)
{
	(void)data;
	t_sleep_us(g_slow_us);
	return kXSchedSuccess;
}

static void direct_submission(int level)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, level, 0));
	CHECK_OK(XQueueSetLaunchConfig(xq, 4, 2));
	for (int i = 0; i < 4; i++) {
		t_submit_fn(xq, slow, NULL);
		XQueueStats st = t_stats(xq);
		CHECK(st.launched == (uint64_t)i + 1); /* enqueued before XQueueSubmit returned */
	}
	t_submit_fn(xq, slow, NULL); /* the window is full: it waits */
	CHECK(t_stats(xq).launched == 4);
	CHECK_OK(XQueueWaitAll(xq)); /* the launch thread enqueued it when space came */
	CHECK(t_stats(xq).completed == 5);

	/* Suspended by the application: nothing new reaches the HwQueue, at Lv2 too. */
	CHECK_OK(XQueueSuspend(xq, 0));
	for (int i = 0; i < 3; i++)
		t_submit_fn(xq, slow, NULL);
	t_sleep_us(20000);
	XQueueStats st = t_stats(xq);
	CHECK(st.launched == 5 && st.pending == 3);
	CHECK_OK(XQueueResume(xq, 0));
	CHECK_OK(XQueueWaitAll(xq));
	st = t_stats(xq);
	CHECK(st.completed == 8 && st.failed == 0);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

static void thread_count(void)
{
	enum { N = 24 };
	HwQueueHandle hwq[N];
	XQueueHandle xq[N];
	for (int n = 1; n <= N; n += N - 1) {
		for (int i = 0; i < n; i++) {
			CHECK_OK(HostQueueCreate(&hwq[i]));
			CHECK_OK(XQueueCreate(&xq[i], hwq[i], kPreemptLevelDeactivate, 0));
			CHECK_OK(XHintPriority(xq[i], i % 3));
			for (int k = 0; k < 8; k++)
				t_submit_fn(xq[i], slow, NULL);
		}
		int launch = count_threads("xs-launch"), progress = count_threads("xs-progress"),
		    sched = count_threads("xsched-sched");
		printf("%d XQueues: %d launch, %d progress, %d scheduler threads\n", n, launch,
		       progress, sched);
		CHECK(launch == 1 && progress == 1 && sched == 1);
		for (int i = 0; i < n; i++) {
			CHECK_OK(XQueueWaitAll(xq[i]));
			CHECK_OK(XQueueDestroy(xq[i]));
			CHECK_OK(HwQueueDestroy(hwq[i]));
		}
	}
}

/* ---- calls on the own XQueue from its own commands ---- */

static XQueueHandle g_own;
static HwCommandHandle g_earlier, g_self, g_later;
static XResult g_res[6];

/* Run as a host function (or a host queue's launch callback) of g_own: waiting for an
 * earlier command works; waiting for itself or a later one, waiting for all, destroying
 * and a synchronous suspension are refused instead of hanging. */
static void own_calls(void)
{
	g_res[0] = XQueueWait(g_own, g_earlier);
	g_res[1] = XQueueWait(g_own, g_self);
	g_res[2] = XQueueWait(g_own, g_later);
	g_res[3] = XQueueWaitAll(g_own);
	g_res[4] = XQueueDestroy(g_own);
	g_res[5] = XQueueSuspend(g_own, kQueueSuspendFlagSyncHwQueue);
}

static XResult own_host(void *data)
{
	(void)data;
	own_calls();
	return kXSchedSuccess;
}

static XResult own_cb(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	(void)data;
	own_calls();
	return kXSchedSuccess;
}

static XResult nop(void *data)
{
	(void)data;
	return kXSchedSuccess;
}

static void own_queue(bool callback)
{
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&g_own, hwq, kPreemptLevelBlock, 0));
	CHECK_OK(HwCommandCreateHostFunc(&g_earlier, slow, NULL));
	if (callback)
		CHECK_OK(HwCommandCreateCallback(&g_self, own_cb, NULL));
	else
		CHECK_OK(HwCommandCreateHostFunc(&g_self, own_host, NULL));
	CHECK_OK(HwCommandCreateHostFunc(&g_later, nop, NULL));
	CHECK_OK(XQueueSubmit(g_own, g_earlier));
	CHECK_OK(XQueueSubmit(g_own, g_self));
	CHECK_OK(XQueueSubmit(g_own, g_later));
	CHECK_OK(XQueueWaitAll(g_own)); /* returns: nothing hung */
	CHECK_OK(g_res[0]);
	for (int i = 1; i < 6; i++)
		CHECK_RES(g_res[i], kXSchedErrorNotAllowed);
	CHECK_OK(XQueueResume(g_own, 0)); /* the refused suspension held nothing */
	CHECK_OK(HwCommandDestroy(g_earlier));
	CHECK_OK(HwCommandDestroy(g_self));
	CHECK_OK(HwCommandDestroy(g_later));
	CHECK_OK(XQueueDestroy(g_own));
	CHECK_OK(HwQueueDestroy(hwq));
}

/* ---- publish last ---- */

static atomic_bool g_race_stop;
static HwQueueHandle g_race_hwq;
static atomic_int g_race_errors;

static void *race_getter(void *arg)
{
	(void)arg;
	while (!atomic_load(&g_race_stop)) {
		XQueueHandle x = 0;
		XResult r = XQueueGet(&x, g_race_hwq);
		if (r == kXSchedSuccess && x == 0)
			atomic_fetch_add(&g_race_errors, 1);
		if (r == kXSchedSuccess)
			XQueueDestroy(x); /* may lose the race to the creator's destroy */
	}
	return NULL;
}

static void *race_scheduler(void *arg)
{
	(void)arg;
	while (!atomic_load(&g_race_stop)) {
		CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
		CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	}
	return NULL;
}

static void publish_race(void)
{
	CHECK_OK(HostQueueCreate(&g_race_hwq));
	atomic_store(&g_race_stop, false);
	pthread_t g[2], s;
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&g[i], NULL, race_getter, NULL) == 0);
	CHECK(pthread_create(&s, NULL, race_scheduler, NULL) == 0);
	/* At least 1 s and 11 XQueues (up to 20 s: a busy host or a sanitizer slows each). */
	int64_t end = t_now_us() + 1000000, limit = end + 19000000;
	int created = 0;
	while (t_now_us() < end || (created <= 10 && t_now_us() < limit)) {
		XQueueHandle x;
		XResult r = XQueueCreate(&x, g_race_hwq, kPreemptLevelBlock, 0);
		if (r == kXSchedErrorNotAllowed)
			continue; /* the previous one is still being destroyed by a getter */
		CHECK_OK(r);
		created++;
		XResult d = XQueueDestroy(x);
		CHECK(d == kXSchedSuccess || d == kXSchedErrorNotFound);
	}
	atomic_store(&g_race_stop, true);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(g[i], NULL) == 0);
	CHECK(pthread_join(s, NULL) == 0);
	printf("publish race: %d XQueues created, %d handles of 0 seen\n", created,
	       atomic_load(&g_race_errors));
	CHECKF(created > 10,
	       "more than 10 XQueues created and destroyed in the race (within "
	       "20 s); measured %d",
	       created);
	CHECKF(atomic_load(&g_race_errors) == 0, "no getter sees a handle of 0; measured %d",
	       atomic_load(&g_race_errors));
	XQueueHandle x;
	while (XQueueGet(&x, g_race_hwq) == kXSchedSuccess)
		XQueueDestroy(x);
	CHECK_OK(HwQueueDestroy(g_race_hwq));
}

/* PRIORITY_NO_EXECUTE: the local scheduler keeps the XQueue suspended whatever else is
 * ready; another priority lets it run; nothing submitted is lost. */
static void no_execute(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(xq, PRIORITY_NO_EXECUTE));
	t_sleep_us(20000); /* a pass has seen it */
	for (int i = 0; i < 5; i++)
		t_submit_fn(xq, slow, NULL);
	t_sleep_us(50000);
	XQueueStats st = t_stats(xq);
	CHECK(st.completed == 0 && st.suspensions >= 1);
	CHECK_OK(XHintPriority(xq, PRIORITY_DEFAULT));
	CHECK_OK(XQueueWaitAll(xq));
	CHECK(t_stats(xq).completed == 5);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

/* Priority inversion: a host function of the high-priority XQueue waits for a command of
 * a low-priority one that HPF (and the budget's hold) keep back while the high one is
 * busy. While it waits, the high XQueue counts as blocked, so the low one runs. */
static XQueueHandle g_inv_low;
static _Atomic HwCommandHandle g_inv_cmd;
static XResult g_inv_res[2];

static XResult inv_high(void *data)
{
	(void)data;
	HwCommandHandle c;
	while (!(c = atomic_load(&g_inv_cmd))) /* the low command is submitted, and held */
		t_sleep_us(1000);
	g_inv_res[0] = XQueueWait(g_inv_low, c);
	g_inv_res[1] = XQueueWaitAll(g_inv_low);
	return kXSchedSuccess;
}

static void inversion(int level)
{
	struct t_pair p;
	t_pair_open(&p, level);
	g_inv_low = p.low;
	t_sleep_us(10000);
	atomic_store(&g_inv_cmd, 0);
	t_submit_fn(p.high, inv_high, NULL);
	t_sleep_us(5000); /* high is busy: low is suspended, its commits held */
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, slow, NULL));
	CHECK_OK(XQueueSubmit(g_inv_low, c));
	atomic_store(&g_inv_cmd, c);
	t_submit_fn(g_inv_low, slow, NULL);
	CHECK_OK(XQueueWaitAll(p.high)); /* would hang without the inheritance */
	CHECK_OK(g_inv_res[0]);
	CHECK_OK(g_inv_res[1]);
	CHECK_OK(HwCommandDestroy(c));
	t_pair_close(&p);
}

/* XQueueSuspend(SyncHwQueue) at Lv1 returns although another thread raises the level to
 * Lv2 while it waits (what is enqueued after the call is not waited for). */
static atomic_int g_sync_done;

static void *sync_suspender(void *arg)
{
	CHECK_OK(XQueueSuspend(*(XQueueHandle *)arg, kQueueSuspendFlagSyncHwQueue));
	atomic_store(&g_sync_done, 1);
	return NULL;
}

static bool xq_suspended(void *arg)
{
	return t_stats(*(XQueueHandle *)arg).suspensions > 0;
}

static void sync_vs_level(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	int64_t long_us = 30000;
	for (int i = 0; i < 3; i++)
		t_submit_fn(xq, t_sleep_fn, &long_us);
	atomic_store(&g_sync_done, 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, sync_suspender, &xq) == 0);
	/* The level changes only once the suspension is applied (XQueueSuspend checked the
	 * level before): a busy host may start the thread late. */
	CHECKF(t_wait_for(xq_suspended, &xq, 10000), "the XQueue suspended by the other thread "
						     "within 10 s; measured: not suspended");
	CHECK_OK(XQueueSetPreemptLevel(xq, kPreemptLevelDeactivate));
	for (int i = 0; i < 3; i++)
		t_submit_fn(xq, slow, NULL);
	CHECK(pthread_join(t, NULL) == 0); /* returns: nothing waits for the Lv2 commands */
	CHECK(atomic_load(&g_sync_done) == 1);
	CHECK_OK(XQueueResume(xq, 0));
	CHECK_OK(XQueueWaitAll(xq));
	CHECK(t_stats(xq).completed == 6);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	direct_submission(kPreemptLevelBlock);
	direct_submission(kPreemptLevelDeactivate);
	own_queue(false);
	own_queue(true);
	publish_race();
	sync_vs_level();
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	g_slow_us = 200;
	thread_count();
	no_execute();
	inversion(kPreemptLevelBlock);
	inversion(kPreemptLevelDeactivate);
	CHECK_OK(XSchedShutdown());
	return 0;
}
