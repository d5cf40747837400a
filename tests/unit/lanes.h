/* Lanes for the tests of the budget's tiers (test_tiers_nine, test_tiers_demote,
 * test_tiers_deep): XQueues on host queues (Lv1 and Lv2 in turn), each kept busy by a
 * feeder thread that tops its backlog up every few milliseconds (so that no lane runs
 * dry, whatever share it gets, without submitting thousands of commands up front),
 * counted over windows.
 *
 * A lane's share is measured as the budget measures it: by device time, the samples its
 * estimate of one command averages (the engine's busy_ns, read under the XQueue's lock),
 * not by completions. The lanes all run the same sleep, but on a loaded 2-core host the
 * samples of one sleep scatter by 2-5x between queues (the time from commit to completion
 * seen, which wake-ups stretch), and the budget shares by them (test_tiers.c, FAIR_F_16);
 * completions times the estimate at the window's end would count each completion at an
 * estimate that may have drifted since. */
#ifndef XS_TEST_LANES_H
#define XS_TEST_LANES_H

#include <pthread.h>

#include "check.h"
#include "core/object.h"
#include "preempt/engine.h"

#define LANES_MAX   16
#define LANES_DEPTH 128 /* commands kept submitted and not complete per fed lane */

struct lane {
	HwQueueHandle hwq;
	XQueueHandle xq;
	int prio;
	atomic_bool fed;
	uint64_t submitted; /* by the feeder */
	uint64_t base;      /* completed at the window's start */
	int64_t busy_base;  /* device time (ns) at the window's start */
};

struct lanes {
	struct lane l[LANES_MAX];
	int n;
	int64_t work_us;
	atomic_bool stop; /* the feeder stops; the commands return at once */
	pthread_t feeder;
	bool started;
};

/* The lanes' work: sleeps for its time, or returns at once once the test is over (so
 * that the drains at destroy are quick). */
static inline XResult lanes_work_fn(void *data)
{
	struct lanes *L = data;
	if (!atomic_load(&L->stop))
		t_sleep_us(L->work_us);
	return kXSchedSuccess;
}

static inline void *lanes_feeder(void *arg)
{
	struct lanes *L = arg;
	while (!atomic_load(&L->stop)) {
		for (int i = 0; i < L->n; i++) {
			struct lane *ln = &L->l[i];
			if (!atomic_load(&ln->fed))
				continue;
			uint64_t done = t_stats(ln->xq).completed;
			for (; ln->submitted < done + LANES_DEPTH; ln->submitted++)
				t_submit_fn(ln->xq, lanes_work_fn, L);
		}
		t_sleep_us(2000);
	}
	return NULL;
}

/* An idle XQueue at @prio above the lanes, so that they are all limited (below the top
 * priority present on the device). The caller destroys it. */
static inline void lanes_top(HwQueueHandle *hwq, XQueueHandle *xq, int prio)
{
	CHECK_OK(HostQueueCreate(hwq));
	CHECK_OK(XQueueCreate(xq, *hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(*xq, prio));
}

/* A new lane at @prio (Lv1 and Lv2 in turn), fed (busy) from the next feeder round if
 * @fed. */
static inline int lanes_add(struct lanes *L, int prio, bool fed)
{
	CHECK(L->n < LANES_MAX);
	struct lane *ln = &L->l[L->n];
	CHECK_OK(HostQueueCreate(&ln->hwq));
	CHECK_OK(XQueueCreate(&ln->xq, ln->hwq,
			      L->n % 2 ? kPreemptLevelDeactivate : kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(ln->xq, prio));
	ln->prio = prio;
	atomic_store(&ln->fed, fed);
	return L->n++;
}

static inline void lanes_start(struct lanes *L, int64_t work_us)
{
	L->work_us = work_us;
	atomic_store(&L->stop, false);
	CHECK(pthread_create(&L->feeder, NULL, lanes_feeder, L) == 0);
	L->started = true;
}

static inline void lanes_set_prio(struct lanes *L, int i, int prio)
{
	CHECK_OK(XHintPriority(L->l[i].xq, prio));
	L->l[i].prio = prio;
}

/* The device time @xq's completed commands took, summed (ns): the engine's samples. */
static inline int64_t lanes_busy_ns(XQueueHandle xq)
{
	xs_obj *obj = xs_handle_get(xq, XS_KIND_XQUEUE);
	CHECK(obj);
	xs_xqueue *x = xs_xqueue_of(obj);
	xs_mutex_lock(&x->lock);
	int64_t ns = x->busy_ns;
	xs_mutex_unlock(&x->lock);
	xs_obj_unref(obj);
	return ns;
}

/* A window starts: completions and device time count from here. */
static inline void lanes_mark(struct lanes *L)
{
	for (int i = 0; i < L->n; i++) {
		L->l[i].base = t_stats(L->l[i].xq).completed;
		L->l[i].busy_base = lanes_busy_ns(L->l[i].xq);
	}
}

/* Lane @i's completions since the mark, and its device time then (ms). */
static inline uint64_t lanes_count(const struct lanes *L, int i, double *dev_ms)
{
	uint64_t c = t_stats(L->l[i].xq).completed - L->l[i].base;
	if (dev_ms)
		*dev_ms = (double)(lanes_busy_ns(L->l[i].xq) - L->l[i].busy_base) / 1e6;
	return c;
}

/* Print each lane's completions and estimated device time since the mark, into @dev_ms
 * (indexed by lane) when given; returns the lanes' device time together (ms). */
static inline double lanes_report(const struct lanes *L, const char *what, double *dev_ms)
{
	double total = 0;
	printf("%s:", what);
	for (int i = 0; i < L->n; i++) {
		double d;
		uint64_t c = lanes_count(L, i, &d);
		printf(" [prio %d: %llu, %.1f ms, est %.2f ms]", L->l[i].prio,
		       (unsigned long long)c, d, (double)t_stats(L->l[i].xq).est_command_ns / 1e6);
		if (dev_ms)
			dev_ms[i] = d;
		total += d;
	}
	printf("\n");
	fflush(stdout);
	return total;
}

/* Stop feeding, drain (every submitted command completes, none fails) and destroy. */
static inline void lanes_close(struct lanes *L)
{
	atomic_store(&L->stop, true);
	if (L->started)
		CHECK(pthread_join(L->feeder, NULL) == 0);
	for (int i = 0; i < L->n; i++) {
		CHECK_OK(XQueueWaitAll(L->l[i].xq));
		XQueueStats st = t_stats(L->l[i].xq);
		CHECK(st.completed == L->l[i].submitted && st.failed == 0);
		CHECK_OK(XQueueDestroy(L->l[i].xq));
		CHECK_OK(HwQueueDestroy(L->l[i].hwq));
	}
	L->n = 0;
}

#endif
