/* XQueueDestroy drains: commands pending behind a suspension still run, threads blocked
 * in XQueueWait get each command's own result, concurrent submitters get
 * kXSchedErrorNotFound once the handle is gone, and no handle leaks. Also: destroy of a
 * deactivated (Lv2) queue, and scheduler shutdown/restart. */
#include <pthread.h>

#include "check.h"
#include "core/object.h"

static atomic_int g_ran;

static XResult count_fn(void *d)
{
	(void)d;
	atomic_fetch_add(&g_ran, 1);
	t_sleep_us(50);
	return kXSchedSuccess;
}

static XResult failing_fn(void *d)
{
	(void)d;
	return kXSchedErrorHardware;
}

struct waiter {
	XQueueHandle xq;
	HwCommandHandle cmd;
	XResult res;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	w->res = XQueueWait(w->xq, w->cmd);
	return NULL;
}

struct sub {
	XQueueHandle xq;
	atomic_int ok, not_found;
};

static void *submit_thread(void *arg)
{
	struct sub *s = arg;
	for (int i = 0; i < 2000; i++) {
		HwCommandHandle cmd;
		CHECK_OK(HwCommandCreateHostFunc(&cmd, count_fn, NULL));
		XResult r = XQueueSubmit(s->xq, cmd);
		CHECK(r == kXSchedSuccess || r == kXSchedErrorNotFound);
		atomic_fetch_add(r == kXSchedSuccess ? &s->ok : &s->not_found, 1);
		CHECK_OK(HwCommandDestroy(cmd));
		if (r == kXSchedErrorNotFound)
			break;
	}
	return NULL;
}

static void destroy_while_waiting(int level)
{
	size_t base = xs_handle_count();
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, level, 0));
	CHECK_OK(XQueueSuspend(xq, 0));
	atomic_store(&g_ran, 0);
	struct waiter w[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 5; j++)
			t_submit_fn(xq, count_fn, NULL);
		w[i].xq = xq;
		CHECK_OK(HwCommandCreateHostFunc(&w[i].cmd, i == 1 ? failing_fn : count_fn, NULL));
		CHECK_OK(XQueueSubmit(xq, w[i].cmd));
		CHECK(pthread_create(&th[i], NULL, wait_thread, &w[i]) == 0);
	}
	t_sleep_us(5000);
	CHECK(atomic_load(&g_ran) == 0); /* suspended: nothing ran */
	CHECK_OK(XQueueDestroy(xq));
	CHECK(atomic_load(&g_ran) == 17); /* 15 + two counting waited-for commands */
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		/* A waiter either saw the result or, if it looked the queue up after the
		 * destroy, was told the queue is gone. */
		if (i == 1)
			CHECK(w[i].res == kXSchedErrorHardware || w[i].res == kXSchedErrorNotFound);
		else
			CHECK(w[i].res == kXSchedSuccess || w[i].res == kXSchedErrorNotFound);
		CHECK_OK(HwCommandDestroy(w[i].cmd));
	}
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK(xs_handle_count() == base);
}

int main(void)
{
	destroy_while_waiting(kPreemptLevelBlock);
	destroy_while_waiting(kPreemptLevelDeactivate);

	/* Submitters racing a destroy: every accepted command ran, the rest were refused. */
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	struct sub s = {0};
	CHECK_OK(XQueueCreate(&s.xq, hwq, kPreemptLevelBlock, 0));
	atomic_store(&g_ran, 0);
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, submit_thread, &s) == 0);
	t_sleep_us(20000);
	CHECK_OK(XQueueDestroy(s.xq));
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load(&g_ran) == atomic_load(&s.ok));
	CHECK_OK(HwQueueDestroy(hwq));

	/* The scheduler stops and starts again on demand; queues keep working. */
	CHECK_OK(XSchedShutdown());
	CHECK_OK(XSchedShutdown()); /* idempotent */
	CHECK_OK(HostQueueCreate(&hwq));
	XQueueHandle xq;
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0)); /* restarts the scheduler */
	t_submit_fn(xq, count_fn, NULL);
	CHECK_OK(XQueueWaitAll(xq));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK(xs_handle_count() == 0);
	CHECK_OK(XSchedShutdown());
	return 0;
}
