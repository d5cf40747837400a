/* Event record/wait across XQueues on the host backend, and the GPU command kinds' create
 * calls: a wait holds its queue until the record has run, also when the record is
 * submitted later, its producer is suspended (Lv1 and Lv2), or HPF ranks the waiter
 * higher; impossible dependencies fail the wait instead of hanging; kernel arguments are
 * copied at create time; the host queue refuses GPU-only kinds. */
#include <string.h>

#include "check.h"
#include "core/command.h"
#include "core/object.h"

static atomic_int g_produced; /* set by the producer's command before the record */
static atomic_int g_seen;     /* what the consumer's command saw */
static atomic_int g_consumed;

static XResult produce(void *data)
{
	t_sleep_us(*(int64_t *)data);
	atomic_store(&g_produced, 1);
	return kXSchedSuccess;
}

static XResult consume(void *data)
{
	(void)data;
	atomic_store(&g_seen, atomic_load(&g_produced));
	atomic_fetch_add(&g_consumed, 1);
	return kXSchedSuccess;
}

static void reset(void)
{
	atomic_store(&g_produced, 0);
	atomic_store(&g_seen, -1);
	atomic_store(&g_consumed, 0);
}

static HwCommandHandle submit_wait(XQueueHandle xq, HwCommandHandle rec)
{
	HwCommandHandle w;
	CHECK_OK(HwCommandCreateEventWait(&w, rec));
	CHECK_OK(XQueueSubmit(xq, w));
	return w;
}

static HwCommandHandle submit_record(XQueueHandle xq)
{
	HwCommandHandle r;
	CHECK_OK(HwCommandCreateEventRecord(&r));
	CHECK_OK(XQueueSubmit(xq, r));
	return r;
}

/* Producer @p: a slow command then a record; consumer @c: a wait on it then a check.
 * With @wait_first the consumer's side is submitted before the record exists in @p. */
static void one_dependency(XQueueHandle p, XQueueHandle c, bool wait_first, int64_t slow_us)
{
	reset();
	HwCommandHandle rec;
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	HwCommandHandle w;
	CHECK_OK(HwCommandCreateEventWait(&w, rec));
	uint64_t launched = t_stats(c).launched;
	if (wait_first) {
		CHECK_OK(XQueueSubmit(c, w));
		t_submit_fn(c, consume, NULL);
		t_sleep_us(20000);
		CHECK(atomic_load(&g_consumed) == 0); /* blocked on a record not yet submitted */
		CHECK(t_stats(c).launched == launched);
	}
	t_submit_fn(p, produce, &slow_us);
	CHECK_OK(XQueueSubmit(p, rec));
	if (!wait_first) {
		CHECK_OK(XQueueSubmit(c, w));
		t_submit_fn(c, consume, NULL);
	}
	CHECK_OK(XQueueWait(c, w));
	CHECK_OK(XQueueWaitAll(c));
	CHECK(atomic_load(&g_seen) == 1);
	CHECK_OK(XQueueWaitAll(p));
	CHECK_OK(HwCommandDestroy(w));
	CHECK_OK(HwCommandDestroy(rec));
}

static bool consumed(void *arg)
{
	(void)arg;
	return atomic_load(&g_consumed) > 0;
}

/* The producer @p (at @level) is suspended with its record pending or behind its gate;
 * the consumer must not pass its wait until @p is resumed. */
static void suspended_producer(XQueueHandle p, XQueueHandle c, int64_t level)
{
	reset();
	CHECK_OK(XQueueSetPreemptLevel(p, level));
	int64_t slow = 30000;
	t_submit_fn(p, produce, &slow);
	HwCommandHandle rec = submit_record(p);
	/* Suspend while the slow command runs: at Lv1 the record is already launched (it
	 * will run), at Lv2 it sits behind the closed gate. */
	t_sleep_us(5000);
	CHECK_OK(XQueueSuspend(p, 0));
	uint64_t launched = t_stats(c).launched;
	HwCommandHandle w = submit_wait(c, rec);
	t_submit_fn(c, consume, NULL);
	if (level >= kPreemptLevelDeactivate) {
		t_sleep_us(80000);
		CHECK(atomic_load(&g_consumed) == 0);
		CHECK(t_stats(c).launched == launched); /* not launched behind the gate */
		CHECK_OK(XQueueResume(p, 0));
	}
	CHECK(t_wait_for(consumed, NULL, 10000));
	CHECK(atomic_load(&g_seen) == 1);
	CHECK_OK(XQueueWait(c, w));
	if (level < kPreemptLevelDeactivate)
		CHECK_OK(XQueueResume(p, 0));
	CHECK_OK(XQueueWaitAll(p));
	CHECK_OK(XQueueWaitAll(c));
	CHECK_OK(HwCommandDestroy(w));
	CHECK_OK(HwCommandDestroy(rec));
}

static void create_errors(void)
{
	HwCommandHandle cmd, fn;
	int a = 1;
	double b = 2.0;
	void *args[] = {&a, &b};
	size_t sizes[] = {sizeof(a), sizeof(b)};
	XDim3 one = {1, 1, 1}, zero = {0, 1, 1};
	static char kernel; /* stands for a kernel's host-side handle */

	CHECK_RES(HwCommandCreateKernel(NULL, &kernel, one, one, 0, args, sizes, 2),
		  kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateKernel(&cmd, NULL, one, one, 0, args, sizes, 2),
		  kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateKernel(&cmd, &kernel, zero, one, 0, args, sizes, 2),
		  kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateKernel(&cmd, &kernel, one, zero, 0, args, sizes, 2),
		  kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateKernel(&cmd, &kernel, one, one, 0, NULL, sizes, 2),
		  kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateKernel(&cmd, &kernel, one, one, 0, args, NULL, 2),
		  kXSchedErrorInvalidValue);
	size_t bad[] = {sizeof(a), 0};
	CHECK_RES(HwCommandCreateKernel(&cmd, &kernel, one, one, 0, args, bad, 2),
		  kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateModuleKernel(&cmd, NULL, one, one, 0, NULL, NULL, 0),
		  kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateMemcpy(&cmd, NULL, &a, 4), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateMemcpy(&cmd, &a, NULL, 4), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateMemcpy(&cmd, &a, &b, 0), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateMemset(&cmd, NULL, 0, 4), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateMemset(&cmd, &a, 0, 0), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateEventRecord(NULL), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateEventWait(NULL, 0), kXSchedErrorInvalidValue);
	CHECK_RES(HwCommandCreateEventWait(&cmd, 0), kXSchedErrorNotFound);
	CHECK_RES(HwCommandCreateEventWait(&cmd, 0x1234), kXSchedErrorNotFound);
	CHECK_OK(HwCommandCreateHostFunc(&fn, consume, NULL));
	CHECK_RES(HwCommandCreateEventWait(&cmd, fn), kXSchedErrorInvalidValue);
	CHECK_OK(HwCommandDestroy(fn));

	/* The arguments are copied when the call returns: overwrite the caller's values. */
	CHECK_OK(HwCommandCreateKernel(&cmd, &kernel, one, one, 16, args, sizes, 2));
	a = 7;
	b = 9.0;
	xs_obj *obj = xs_handle_get(cmd, XS_KIND_COMMAND);
	CHECK(obj);
	xs_cmd *c = xs_cmd_of(obj);
	CHECK(c->kind == XS_CMD_KERNEL && c->u.kernel.num_args == 2);
	CHECK(c->u.kernel.func == &kernel && c->u.kernel.shared_mem_bytes == 16);
	CHECK(*(int *)c->u.kernel.args[0] == 1);
	CHECK(*(double *)c->u.kernel.args[1] == 2.0);
	CHECK(((uintptr_t)c->u.kernel.args[1] & 15) == 0);
	xs_obj_unref(obj);
	CHECK_OK(HwCommandDestroy(cmd));
	CHECK_OK(HwCommandCreateModuleKernel(&cmd, &kernel, one, one, 0, NULL, NULL, 0));
	CHECK_OK(HwCommandDestroy(cmd));
}

int main(void)
{
	size_t base = xs_handle_count();
	create_errors();
	CHECK(xs_handle_count() == base);

	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	HwQueueHandle hp, hc;
	XQueueHandle p, c;
	CHECK_OK(HostQueueCreate(&hp));
	CHECK_OK(HostQueueCreate(&hc));
	CHECK_OK(XQueueCreate(&p, hp, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueCreate(&c, hc, kPreemptLevelBlock, 0));

	/* The host queue runs events but refuses GPU-only kinds. */
	HwCommandHandle cmd;
	int x = 0;
	CHECK_OK(HwCommandCreateMemset(&cmd, &x, 0, sizeof(x)));
	CHECK_RES(XQueueSubmit(c, cmd), kXSchedErrorNotSupported);
	CHECK_OK(HwCommandDestroy(cmd));

	/* Plain dependencies, the wait submitted after or before the record. */
	one_dependency(p, c, false, 20000);
	one_dependency(p, c, true, 20000);
	one_dependency(p, c, false, 0);

	/* A record and a wait in the same XQueue: the record first is fine; a wait on a
	 * record submitted later in the same XQueue fails instead of hanging. */
	reset();
	HwCommandHandle rec = submit_record(c);
	HwCommandHandle w = submit_wait(c, rec);
	CHECK_OK(XQueueWait(c, w));
	CHECK_OK(HwCommandDestroy(w));
	CHECK_OK(HwCommandDestroy(rec));
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	w = submit_wait(c, rec);
	CHECK_OK(XQueueSubmit(c, rec));
	t_submit_fn(c, consume, NULL);
	CHECK_RES(XQueueWait(c, w), kXSchedErrorInvalidValue);
	CHECK_RES(XQueueWaitAll(c), kXSchedErrorInvalidValue);
	CHECK(atomic_load(&g_consumed) == 1); /* the queue goes on */
	CHECK_OK(HwCommandDestroy(w));
	CHECK_OK(HwCommandDestroy(rec));

	/* A record dropped before it was submitted can never run: its wait fails. */
	reset();
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	uint64_t launched = t_stats(c).launched;
	w = submit_wait(c, rec);
	t_submit_fn(c, consume, NULL);
	t_sleep_us(10000);
	CHECK(t_stats(c).launched == launched);
	CHECK_OK(HwCommandDestroy(rec));
	CHECK_RES(XQueueWait(c, w), kXSchedErrorNotFound);
	CHECK_RES(XQueueWaitAll(c), kXSchedErrorNotFound);
	CHECK(atomic_load(&g_consumed) == 1);
	CHECK_OK(HwCommandDestroy(w));

	/* A suspended producer holds its waiters back until it is resumed. */
	suspended_producer(p, c, kPreemptLevelBlock);
	suspended_producer(p, c, kPreemptLevelDeactivate);
	CHECK_OK(XQueueSetPreemptLevel(p, kPreemptLevelBlock));

	/* HPF: the waiting queue ranks higher. While it waits it counts as not ready, so the
	 * producer runs and the dependency is met. */
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	CHECK_OK(XHintPriority(c, 10));
	CHECK_OK(XHintPriority(p, 0));
	for (int lv = kPreemptLevelBlock; lv <= kPreemptLevelDeactivate; lv++) {
		CHECK_OK(XQueueSetPreemptLevel(p, lv));
		CHECK_OK(XQueueSetPreemptLevel(c, lv));
		one_dependency(p, c, true, 10000);
		one_dependency(p, c, false, 10000);
	}

	CHECK_OK(XQueueDestroy(c));
	CHECK_OK(XQueueDestroy(p));
	CHECK_OK(HwQueueDestroy(hc));
	CHECK_OK(HwQueueDestroy(hp));
	CHECK_OK(XSchedShutdown());
	CHECK(xs_handle_count() == base);
	return 0;
}
