/* Many application threads submit to many XQueues while another thread suspends,
 * resumes and re-prioritizes them at random under HPF: no command is lost or run twice,
 * and each XQueue runs its commands in submission order. */
#include <pthread.h>

#include "check.h"

#define QUEUES     6
#define THREADS    8
#define PER_THREAD 400
#define TOTAL      (THREADS * PER_THREAD)

struct q {
	XQueueHandle xq;
	HwQueueHandle hwq;
	pthread_mutex_t submit_lock; /* makes "index order" equal "submission order" */
	int next_index;
	int last_run; /* written by the queue's executor only */
	unsigned char *runs;
};

struct item {
	struct q *q;
	int index;
};

static struct q g_q[QUEUES];
static struct item g_items[TOTAL];
static atomic_int g_item_next;
static atomic_int g_order_errors;
static atomic_bool g_done;

static XResult run_item(void *data)
{
	struct item *it = data;
	if (it->index != it->q->last_run + 1)
		atomic_fetch_add(&g_order_errors, 1);
	it->q->last_run = it->index;
	it->q->runs[it->index]++;
	t_sleep_us(50);
	return kXSchedSuccess;
}

static void *submitter(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int i = 0; i < PER_THREAD; i++) {
		struct q *q = &g_q[rand_r(&seed) % QUEUES];
		struct item *it = &g_items[atomic_fetch_add(&g_item_next, 1)];
		HwCommandHandle cmd;
		CHECK_OK(HwCommandCreateHostFunc(&cmd, run_item, it));
		pthread_mutex_lock(&q->submit_lock);
		it->q = q;
		it->index = q->next_index++;
		CHECK_OK(XQueueSubmit(q->xq, cmd));
		pthread_mutex_unlock(&q->submit_lock);
		CHECK_OK(HwCommandDestroy(cmd));
		if (i % 50 == 0)
			t_sleep_us(rand_r(&seed) % 500);
	}
	return NULL;
}

static void *chaos(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	bool suspended[QUEUES] = {0};
	while (!atomic_load(&g_done)) {
		int k = rand_r(&seed) % QUEUES;
		switch (rand_r(&seed) % 3) {
		case 0:
			if (suspended[k])
				CHECK_OK(XQueueResume(g_q[k].xq, 0));
			else
				CHECK_OK(XQueueSuspend(g_q[k].xq, 0));
			suspended[k] = !suspended[k];
			break;
		case 1:
			CHECK_OK(XHintPriority(g_q[k].xq, rand_r(&seed) % 5));
			break;
		default:
			CHECK_OK(XQueueSetLaunchConfig(g_q[k].xq, 1 + rand_r(&seed) % 16, 1));
			break;
		}
		t_sleep_us(rand_r(&seed) % 300);
	}
	for (int k = 0; k < QUEUES; k++)
		if (suspended[k])
			CHECK_OK(XQueueResume(g_q[k].xq, 0));
	return NULL;
}

int main(void)
{
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	for (int k = 0; k < QUEUES; k++) {
		CHECK_OK(HostQueueCreate(&g_q[k].hwq));
		CHECK_OK(XQueueCreate(&g_q[k].xq, g_q[k].hwq, kPreemptLevelBlock, 0));
		pthread_mutex_init(&g_q[k].submit_lock, NULL);
		g_q[k].last_run = -1;
		g_q[k].runs = calloc(TOTAL, 1);
		CHECK(g_q[k].runs);
	}
	/* One queue at Lv2, so the host gate is exercised under the same load. */
	CHECK_OK(XQueueSetPreemptLevel(g_q[0].xq, kPreemptLevelDeactivate));

	pthread_t subs[THREADS], ch;
	CHECK(pthread_create(&ch, NULL, chaos, (void *)(uintptr_t)99) == 0);
	for (int t = 0; t < THREADS; t++)
		CHECK(pthread_create(&subs[t], NULL, submitter, (void *)(uintptr_t)(t + 1)) == 0);
	for (int t = 0; t < THREADS; t++)
		pthread_join(subs[t], NULL);
	atomic_store(&g_done, true);
	pthread_join(ch, NULL);

	uint64_t completed = 0;
	for (int k = 0; k < QUEUES; k++) {
		CHECK_OK(XQueueWaitAll(g_q[k].xq));
		XQueueStats st = t_stats(g_q[k].xq);
		CHECK(st.submitted == (uint64_t)g_q[k].next_index);
		CHECK(st.completed == st.submitted && st.failed == 0);
		completed += st.completed;
		for (int i = 0; i < g_q[k].next_index; i++)
			CHECK(g_q[k].runs[i] == 1);
	}
	CHECK(completed == TOTAL);
	CHECK(atomic_load(&g_order_errors) == 0);

	for (int k = 0; k < QUEUES; k++) {
		CHECK_OK(XQueueDestroy(g_q[k].xq));
		CHECK_OK(HwQueueDestroy(g_q[k].hwq));
		pthread_mutex_destroy(&g_q[k].submit_lock);
		free(g_q[k].runs);
	}
	CHECK_OK(XSchedShutdown());
	return 0;
}
