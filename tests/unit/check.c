#include "check.h"

#include <time.h>

int64_t t_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void t_sleep_us(int64_t us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts))
		;
}

bool t_wait_for(bool (*pred)(void *arg), void *arg, int timeout_ms)
{
	int64_t end = t_now_us() + (int64_t)timeout_ms * 1000;
	while (!pred(arg)) {
		if (t_now_us() > end)
			return false;
		t_sleep_us(100);
	}
	return true;
}

XResult t_sleep_fn(void *data)
{
	t_sleep_us(*(int64_t *)data);
	return kXSchedSuccess;
}

void t_submit_fn(XQueueHandle xq, HostFunction fn, void *data)
{
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateHostFunc(&cmd, fn, data));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
}

XQueueStats t_stats(XQueueHandle xq)
{
	XQueueStats s;
	CHECK_OK(XQueueGetStats(xq, &s));
	return s;
}

void t_pair_open(struct t_pair *p, XPreemptLevel level)
{
	CHECK_OK(HostQueueCreate(&p->hl));
	CHECK_OK(HostQueueCreate(&p->hh));
	CHECK_OK(XQueueCreate(&p->low, p->hl, level, 0));
	CHECK_OK(XQueueCreate(&p->high, p->hh, level, 0));
	CHECK_OK(XHintPriority(p->low, 0));
	CHECK_OK(XHintPriority(p->high, 10));
}

void t_pair_close(struct t_pair *p)
{
	CHECK_OK(XQueueDestroy(p->low));
	CHECK_OK(XQueueDestroy(p->high));
	CHECK_OK(HwQueueDestroy(p->hl));
	CHECK_OK(HwQueueDestroy(p->hh));
}
