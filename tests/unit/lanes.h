/* Lanes for the tests of the budget's tiers (test_tiers_nine, test_tiers_demote,
 * test_tiers_deep): XQueues on host queues (Lv1 and Lv2 in turn), each kept busy by a
 * feeder thread that tops its backlog up every few milliseconds (so that no lane runs
 * dry, whatever share it gets, without submitting thousands of commands up front),
 * counted over windows.
 *
 * A lane's share is measured as the budget hands it out: the device time it was charged,
 * each command at the queue's estimate when it was charged (the engine's virtual time of
 * the queue, xs_xqueue.vtime_ns, which counts each charge and is raised to its tier's
 * floor where it fell behind: read under the device's lock). Not by completions: the
 * lanes all run the same sleep, but on a loaded 2-core host the estimates of one sleep
 * scatter by 2-8x between queues (the time from commit to completion seen, which
 * wake-ups stretch; test_tiers.c, FAIR_F_16), and the budget shares by them. What the
 * lanes' commands took by the engine's samples (busy_ns) is printed beside it. */
#ifndef XS_TEST_LANES_H
#define XS_TEST_LANES_H

#include <pthread.h>

#include "check.h"
#include "core/object.h"
#include "preempt/engine_int.h"

#define LANES_MAX   16
#define LANES_DEPTH 128 /* commands kept submitted and not complete per fed lane */

struct lane {
	HwQueueHandle hwq;
	XQueueHandle xq;
	int prio;
	atomic_bool fed;
	uint64_t submitted;   /* by the feeder */
	uint64_t base;        /* completed at the window's start */
	int64_t charged_base; /* device time charged (ns) at the window's start */
	int64_t busy_base;    /* device time taken, by the samples (ns), then */
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

/* The device time @xq was charged (its virtual time) and, with @busy, the time its
 * completed commands took by the engine's samples (ns). */
static inline int64_t lanes_ns(XQueueHandle xq, bool busy)
{
	xs_obj *obj = xs_handle_get(xq, XS_KIND_XQUEUE);
	CHECK(obj);
	xs_xqueue *x = xs_xqueue_of(obj);
	int64_t ns;
	if (busy) {
		xs_mutex_lock(&x->lock);
		ns = x->busy_ns;
		xs_mutex_unlock(&x->lock);
	} else {
		xs_mutex_lock(&x->dev->lock);
		ns = x->vtime_ns;
		xs_mutex_unlock(&x->dev->lock);
	}
	xs_obj_unref(obj);
	return ns;
}

/* A window starts: completions and device time count from here. */
static inline void lanes_mark(struct lanes *L)
{
	for (int i = 0; i < L->n; i++) {
		L->l[i].base = t_stats(L->l[i].xq).completed;
		L->l[i].charged_base = lanes_ns(L->l[i].xq, false);
		L->l[i].busy_base = lanes_ns(L->l[i].xq, true);
	}
}

/* Lane @i's completions since the mark, and the device time it was charged then (ms). */
static inline uint64_t lanes_count(const struct lanes *L, int i, double *dev_ms)
{
	uint64_t c = t_stats(L->l[i].xq).completed - L->l[i].base;
	if (dev_ms)
		*dev_ms = (double)(lanes_ns(L->l[i].xq, false) - L->l[i].charged_base) / 1e6;
	return c;
}

/* Print each lane's completions, device time charged and taken (by the samples) since the
 * mark, the charged time into @dev_ms (indexed by lane) when given; returns the lanes'
 * charged device time together (ms). */
static inline double lanes_report(const struct lanes *L, const char *what, double *dev_ms)
{
	double total = 0;
	printf("%s:", what);
	for (int i = 0; i < L->n; i++) {
		double d;
		uint64_t c = lanes_count(L, i, &d);
		double ran = (double)(lanes_ns(L->l[i].xq, true) - L->l[i].busy_base) / 1e6;
		printf(" [prio %d: %llu commands, charged %.1f ms, ran %.1f ms]", L->l[i].prio,
		       (unsigned long long)c, d, ran);
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
