/* fork() while the library is busy (HPF scheduler thread, device threads, host executors,
 * submitting threads): every child starts from a clean library state.
 * - A handle of the parent is unusable in the child (kXSchedErrorNotFound, no hang), also
 *   a command the forking thread made just before fork();
 * - the child creates host queues under HPF, submits from several threads and waits:
 *   everything runs exactly once, and the high-priority queue is not held behind the low;
 * - a child that only starts a thread and calls exit() exits (the exit-time shutdown joins
 *   nothing of the parent's);
 * - the parent goes on unaffected.
 * Under AddressSanitizer the parent's submitting threads pause around each fork (g_park).
 * Each child must exit within 20 s (a hang fails the test), with status 0. */
#include <pthread.h>
#include <unistd.h>

#include "check.h"

#define CHILDREN 12

static atomic_int g_ran;
static atomic_bool g_stop;

static XResult count_fn(void *data)
{
	(void)data;
	atomic_fetch_add(&g_ran, 1);
	t_sleep_us(100);
	return kXSchedSuccess;
}

/* Under AddressSanitizer the parent pauses its load around each fork() (main): the
 * sanitizer's allocator (GCC 12's libsanitizer) does not hold its locks across fork(), so a
 * parent thread inside malloc or free at the fork left the child blocked for ever in its
 * first allocation of that size (seen: calloc in xs_cmd_new, waiting in
 * SizeClassAllocator64::GetFromAllocator's mutex, in about 3% of runs under load, the
 * library before 0.4.4 alike). glibc's allocator is fork-safe: the other builds fork with
 * the load running. */
static atomic_bool g_park;
static atomic_int g_parked;

/* The parent's load: keep a queue busy while the main thread forks. */
static void *busy(void *arg)
{
	XQueueHandle xq = *(XQueueHandle *)arg;
	while (!atomic_load(&g_stop)) {
		if (atomic_load(&g_park)) {
			atomic_fetch_add(&g_parked, 1);
			while (atomic_load(&g_park) && !atomic_load(&g_stop))
				t_sleep_us(100);
			atomic_fetch_sub(&g_parked, 1);
			continue;
		}
		for (int i = 0; i < 8; i++)
			t_submit_fn(xq, count_fn, NULL);
		CHECK_OK(XQueueWaitAll(xq));
	}
	return NULL;
}

static void *child_submitter(void *arg)
{
	XQueueHandle xq = *(XQueueHandle *)arg;
	for (int i = 0; i < 50; i++)
		t_submit_fn(xq, count_fn, NULL);
	CHECK_OK(XQueueWaitAll(xq));
	return NULL;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	t_sleep_us(1000);
	return NULL;
}

/* exit(0): the exit-time shutdown joins the child's own threads. Under AddressSanitizer,
 * whose leak check would report what the parent's threads held on their stacks (gone in
 * the child), the child shuts the library down itself and leaves with _exit(). */
static void xs__exit(void)
{
#if defined(__SANITIZE_ADDRESS__)
	CHECK_OK(XSchedShutdown());
	_exit(0);
#else
	exit(0);
#endif
}

/* The child's work; exits with 0 on success (CHECK exits 1 otherwise). */
static void child(int variant, XQueueHandle parent_xq, HwCommandHandle parent_cmd)
{
	/* Nor is a command this thread made just before fork() (first: the lookup of a
	 * command made last on this thread has a path of its own). */
	HwCommandHandle w;
	CHECK_RES(HwCommandCreateEventWait(&w, parent_cmd), kXSchedErrorNotFound);
	CHECK_RES(HwCommandDestroy(parent_cmd), kXSchedErrorNotFound);
	if (variant == 1) {
		/* A thread, then exit(): the exit-time shutdown must not join the parent's
		 * scheduler thread handle (this thread may reuse it). */
		pthread_t t;
		CHECK(pthread_create(&t, NULL, idle_thread, NULL) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		xs__exit();
	}
	/* The parent's XQueue is not ours. */
	HwCommandHandle c;
	CHECK_OK(HwCommandCreateHostFunc(&c, count_fn, NULL));
	CHECK_RES(XQueueSubmit(parent_xq, c), kXSchedErrorNotFound);
	CHECK_RES(XQueueWaitAll(parent_xq), kXSchedErrorNotFound);
	CHECK_OK(HwCommandDestroy(c));

	atomic_store(&g_ran, 0);
	struct t_pair p;
	t_pair_open(&p, kPreemptLevelDeactivate);
	CHECK_RES(XQueueSubmit(p.high, parent_cmd), kXSchedErrorNotFound);
	pthread_t t[2];
	CHECK(pthread_create(&t[0], NULL, child_submitter, &p.low) == 0);
	CHECK(pthread_create(&t[1], NULL, child_submitter, &p.high) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	CHECK(atomic_load(&g_ran) == 100);
	CHECK(t_stats(p.high).completed == 50 && t_stats(p.low).completed == 50);
	t_pair_close(&p);
	xs__exit();
}

int main(void)
{
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer cannot run threads in a child of a multi-threaded process. */
	printf("skipped under ThreadSanitizer (no threads after a multi-threaded fork)\n");
	return 77;
#endif
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	HwQueueHandle hwq[2];
	XQueueHandle xq[2];
	for (int i = 0; i < 2; i++) {
		CHECK_OK(HostQueueCreate(&hwq[i]));
		CHECK_OK(XQueueCreate(&xq[i], hwq[i], kPreemptLevelBlock, 0));
		CHECK_OK(XHintPriority(xq[i], i));
	}
	atomic_store(&g_stop, false);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, busy, &xq[i]) == 0);
	t_sleep_us(20000);
	for (int k = 0; k < CHILDREN; k++) {
		/* The forking thread submits to the XQueue the child then tries (it keeps the
		 * XQueue it submitted to last: core/object.c, xs_handle_borrow), and waits, so
		 * that no library thread frees that command during the fork (below). */
		t_submit_fn(xq[0], count_fn, NULL);
		CHECK_OK(XQueueWaitAll(xq[0]));
		fflush(stdout);
#if defined(__SANITIZE_ADDRESS__)
		atomic_store(&g_park, true);
		while (atomic_load(&g_parked) < 2)
			t_sleep_us(100);
		t_sleep_us(5000); /* the library's threads go idle after the last waits */
#endif
		/* The forking thread makes a command just before: its handle is the parent's
		 * only. */
		HwCommandHandle pc;
		CHECK_OK(HwCommandCreateHostFunc(&pc, count_fn, NULL));
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			child(k % 3 == 2, xq[0], pc);
		CHECK_OK(HwCommandDestroy(pc));
		atomic_store(&g_park, false);
		int st = t_reap(pid, 20000);
		if (st != 0)
			fprintf(stderr, "child %d (variant %d): %s %d\n", k, k % 3 == 2,
				st < 0 ? "hung, killed;" : "exit status", st);
		CHECK(st == 0);
		t_sleep_us(2000);
	}
	atomic_store(&g_stop, true);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	for (int i = 0; i < 2; i++) {
		CHECK_OK(XQueueWaitAll(xq[i]));
		CHECK_OK(XQueueDestroy(xq[i]));
		CHECK_OK(HwQueueDestroy(hwq[i]));
	}
	CHECK_OK(XSchedShutdown());
	printf("%d children forked while busy: all clean\n", CHILDREN);
	return 0;
}
