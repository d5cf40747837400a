/* Order within an XQueue: every command runs exactly once, in submission order, for
 * several launch configurations, with host functions and launch callbacks mixed. */
#include "check.h"

#define N 2000

struct log {
	atomic_int next;
	int order[N];
};

struct step {
	struct log *log;
	int index;
};

static XResult record(struct step *s)
{
	int pos = atomic_fetch_add(&s->log->next, 1);
	CHECK(pos < N);
	s->log->order[pos] = s->index;
	return kXSchedSuccess;
}

static XResult host_step(void *data)
{
	return record(data);
}

static XResult cb_step(HwQueueHandle hwq, void *data)
{
	(void)hwq;
	return record(data);
}

static void run(int64_t threshold, int64_t batch)
{
	static struct step steps[N];
	static struct log log;
	atomic_store(&log.next, 0);
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueSetLaunchConfig(xq, threshold, batch));
	HwCommandHandle last = 0;
	for (int i = 0; i < N; i++) {
		steps[i] = (struct step){&log, i};
		HwCommandHandle cmd;
		if (i % 3)
			CHECK_OK(HwCommandCreateHostFunc(&cmd, host_step, &steps[i]));
		else
			CHECK_OK(HwCommandCreateCallback(&cmd, cb_step, &steps[i]));
		CHECK_OK(XQueueSubmit(xq, cmd));
		if (i == N - 1)
			last = cmd;
		else
			CHECK_OK(HwCommandDestroy(cmd));
	}
	CHECK_OK(XQueueWait(xq, last));
	/* Waiting for the last command means every earlier one completed. */
	XQueueStats st = t_stats(xq);
	CHECK(st.completed == N && st.submitted == N && st.launched == N);
	CHECK(st.pending == 0 && st.in_flight == 0 && st.failed == 0);
	CHECK(atomic_load(&log.next) == N);
	for (int i = 0; i < N; i++)
		CHECK(log.order[i] == i);
	XQueueState state;
	CHECK_OK(XQueueQuery(xq, &state));
	CHECK(state == kQueueStateIdle);
	CHECK_OK(HwCommandDestroy(last));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

int main(void)
{
	run(XSCHED_DEFAULT_THRESHOLD, XSCHED_DEFAULT_BATCH_SIZE);
	run(1, 1);
	run(3, 2);
	run(64, 64);
	run(100, 7);
	CHECK_OK(XSchedShutdown());
	return 0;
}
