/* xsched-bench: the host backend, a GPU modeled on the CPU.
 *
 * Where there is no GPU, the benchmark still runs every scenario against a model of one,
 * so that the program, the library's scheduling and the output can be checked anywhere.
 * Its figures are a model, never a measurement of a GPU, and the output says so.
 *
 * The model (one thread, "xsb-gpu", advancing in real time):
 * - the device runs one kernel at a time (a 2048^3 SGEMM fills an H200); a kernel's time
 *   is its FLOPs over 49 TFLOP/s (30 x SGEMM 2048^3 = 10.5 ms, as measured on an H200),
 *   at least 8 us; a streaming kernel moves 8 bytes per float at 3 TB/s (about what an
 *   H100's memory sustains: 22 us for XSB_STREAM_FLOATS); a spin kernel takes its
 *   stated time; a stamp kernel 2 us;
 * - streams are in order; each maps to one of N connections (hardware work queues,
 *   CUDA_DEVICE_MAX_CONNECTIONS, default 8), round robin by lane; a connection passes
 *   its commands to the device in order, so a command whose stream is still busy holds
 *   back the commands of other streams behind it (the "false dependency" of CUDA);
 * - among the kernels passed to the device, the next to run is the one of the highest
 *   stream priority (hardware stream priority acts only at kernel boundaries: running
 *   work is never evicted), then the oldest.
 * Kernels start and end on a virtual timeline (a kernel starts when the previous one
 * ended, not when this thread woke up), so scheduling noise of the CPU does not change
 * the device's throughput; completions are observed in real time.
 *
 * Native lanes enqueue on a modeled stream. Xsched lanes sit on a host HwQueue
 * (HostQueueCreate); their launch callback runs on its executor thread and runs the op
 * on the lane's modeled stream to completion, so the library's window, gate and
 * suspension decide what reaches the modeled device. The executor runs one callback at a
 * time, so the next op reaches the model only after a CPU thread round trip (about 70 us
 * on two cores), a gap a GPU stream with queued commands does not have. When a callback
 * starts within 30 us of the lane's previous one returning, its command was already
 * queued on the HwQueue (launched by the library, past its gate), so the model starts
 * the op when the previous one ended, as the stream would have. A later callback (the
 * library held the command back: window full, queue suspended, gate closed, or a new
 * task) starts when it is submitted. For the same reason the model briefly holds its
 * choice of the next kernel when such a lane's next op may be on its way (xsb__sim_hold).
 *
 * Several processes (the procs scenario, procs.c): each process has its own model, and
 * all of them share one device (xsb_sim_share): a kernel holds an exclusive lock on a file
 * (flock) from its start to its end, in real time, and starts no sooner than it got the
 * lock. So the device runs one kernel at a time across processes, in the order the lock is
 * granted (about first come, first served) and whatever the streams' priorities, as a GPU
 * without MPS time-slices between contexts and orders by stream priority only within one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define XSB_SIM_FLOPS    49e12
#define XSB_SIM_BYTES_S  3e12
#define XSB_SIM_FLOOR_NS 8000
#define XSB_SIM_STAMP_NS 2000
#define XSB_SIM_MAX_CONN 32
/* A callback entered this soon after the lane's previous one returned was already
 * queued on the host HwQueue (see xsb__host_launch_cb). */
#define XSB_SIM_CHAIN_NS 30000
/* How long the model waits for such a command's op (see xsb__sim_hold). */
#define XSB_SIM_HOLD_NS 150000

struct xsb__sim_stream;

struct xsb__sim_item {
	const struct xsb_op *op;
	struct xsb__sim_stream *s;
	uint64_t seq;
	int64_t submit; /* ns */
	bool chained;   /* ready when the stream's previous op ends (see launch_cb) */
	struct xsb__sim_item *next;
};

struct xsb__sim_stream {
	int conn;
	int prio;
	/* Under xsb__sim.lock: */
	uint64_t enq, done;
	bool on_dev;       /* an item of this stream is passed to the device or running */
	int64_t last_end;  /* virtual end of its last kernel */
	pthread_cond_t cv; /* sync waits here */
	int64_t cb_return; /* xsched lanes: when the last callback returned (executor only) */
	bool xsched;       /* fed by a host HwQueue's callbacks */
};

static struct {
	pthread_mutex_t lock; /* guards everything below and every stream's counters */
	pthread_cond_t cv;    /* the device thread waits for work or its kernel's end */
	pthread_t thread;
	int nconn;
	struct xsb__sim_item *conn_head[XSB_SIM_MAX_CONN], *conn_tail[XSB_SIM_MAX_CONN];
	struct xsb__sim_item *pending; /* passed to the device, not started */
	struct xsb__sim_item *running;
	int64_t run_end;
	int64_t prev_end;
	/* An xsched stream whose op just ended, and until when (real time) its next op may
	 * still arrive chained (see xsb__sim_thread). */
	struct xsb__sim_stream *await;
	int64_t await_until;
	uint64_t seq;
	bool stop;
	int shared_fd; /* the device shared with other processes (flock), -1 = none */
	int64_t stamps[XSB_STAMP_SLOTS];
} xsb__sim = {.shared_fd = -1};

int xsb_sim_share(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	pthread_mutex_lock(&xsb__sim.lock);
	xsb__sim.shared_fd = fd;
	pthread_mutex_unlock(&xsb__sim.lock);
	return 0;
}

/* With a shared device: take it for the kernel about to start (the model's lock is let go
 * meanwhile), and its start is no sooner than now. Lock held. */
static int64_t xsb__sim_acquire(int64_t start)
{
	if (xsb__sim.shared_fd < 0)
		return start;
	pthread_mutex_unlock(&xsb__sim.lock);
	while (flock(xsb__sim.shared_fd, LOCK_EX) && errno == EINTR)
		;
	pthread_mutex_lock(&xsb__sim.lock);
	int64_t now = xsb_now_ns();
	return start > now ? start : now;
}

static void xsb__sim_release(void)
{
	if (xsb__sim.shared_fd >= 0)
		flock(xsb__sim.shared_fd, LOCK_UN);
}

static int64_t xsb__sim_dur(const struct xsb_op *op)
{
	switch (op->kind) {
	case XSB_OP_GEMM: {
		double ns = 2.0 * op->m * (double)op->n * op->k / XSB_SIM_FLOPS * 1e9;
		return ns < XSB_SIM_FLOOR_NS ? XSB_SIM_FLOOR_NS : (int64_t)ns;
	}
	case XSB_OP_SPIN:
		return op->ns;
	case XSB_OP_STAMP:
		return XSB_SIM_STAMP_NS;
	case XSB_OP_STREAM: {
		double ns = 8.0 * op->n / XSB_SIM_BYTES_S * 1e9;
		return ns < XSB_SIM_FLOOR_NS ? XSB_SIM_FLOOR_NS : (int64_t)ns;
	}
	}
	return XSB_SIM_FLOOR_NS;
}

static void xsb__cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

/* Pass every connection's head to the device while its stream is free. Lock held. */
static void xsb__sim_dispatch(void)
{
	for (int c = 0; c < xsb__sim.nconn; c++) {
		struct xsb__sim_item *it;
		while ((it = xsb__sim.conn_head[c]) && !it->s->on_dev) {
			xsb__sim.conn_head[c] = it->next;
			if (!it->next)
				xsb__sim.conn_tail[c] = NULL;
			it->s->on_dev = true;
			it->next = xsb__sim.pending;
			xsb__sim.pending = it;
		}
	}
}

/* Take the pending item of the highest priority, then the oldest. Lock held. */
static struct xsb__sim_item *xsb__sim_pick(void)
{
	struct xsb__sim_item **best = NULL;
	for (struct xsb__sim_item **p = &xsb__sim.pending; *p; p = &(*p)->next) {
		if (!best || (*p)->s->prio > (*best)->s->prio ||
		    ((*p)->s->prio == (*best)->s->prio && (*p)->seq < (*best)->seq))
			best = p;
	}
	if (!best)
		return NULL;
	struct xsb__sim_item *it = *best;
	*best = it->next;
	it->next = NULL;
	return it;
}

/* Whether to hold the next pick: an xsched stream's op has just ended and its next op,
 * already queued on its host HwQueue, may be on its way (the executor has to wake up
 * first). A GPU stream would have had that op waiting at the device, so if it outranks
 * everything pending, picking now would let a lower-priority kernel in that the GPU
 * would not run. Holding costs no modeled time: the pick is backdated to the end of the
 * previous kernel. Lock held; waits (releasing it) and returns true when it held. */
static bool xsb__sim_hold(void)
{
	struct xsb__sim_stream *a = xsb__sim.await;
	if (!a)
		return false;
	int64_t now = xsb_now_ns();
	if (now >= xsb__sim.await_until) {
		xsb__sim.await = NULL;
		return false;
	}
	for (struct xsb__sim_item *p = xsb__sim.pending; p; p = p->next)
		if (p->s->prio >= a->prio)
			return false;
	if (!xsb__sim.pending)
		return false; /* nothing to choose between */
	int64_t t = xsb__sim.await_until;
	struct timespec ts = {.tv_sec = t / 1000000000, .tv_nsec = t % 1000000000};
	pthread_cond_timedwait(&xsb__sim.cv, &xsb__sim.lock, &ts);
	return true;
}

static void *xsb__sim_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&xsb__sim.lock);
	for (;;) {
		xsb__sim_dispatch();
		if (!xsb__sim.running) {
			if (xsb__sim_hold())
				continue;
			struct xsb__sim_item *it = xsb__sim_pick();
			if (!it) {
				if (xsb__sim.stop)
					break;
				pthread_cond_wait(&xsb__sim.cv, &xsb__sim.lock);
				continue;
			}
			int64_t ready = it->submit > it->s->last_end ? it->submit : it->s->last_end;
			if (it->chained)
				ready = it->s->last_end;
			int64_t start = ready > xsb__sim.prev_end ? ready : xsb__sim.prev_end;
			start = xsb__sim_acquire(start);
			xsb__sim.running = it;
			xsb__sim.run_end = start + xsb__sim_dur(it->op);
			if (it->op->kind == XSB_OP_STAMP)
				xsb__sim.stamps[it->op->slot] = start;
			continue;
		}
		int64_t end = xsb__sim.run_end;
		if (xsb_now_ns() < end) {
			struct timespec ts = {.tv_sec = end / 1000000000,
					      .tv_nsec = end % 1000000000};
			pthread_cond_timedwait(&xsb__sim.cv, &xsb__sim.lock, &ts);
			continue; /* new work to pass on, or the end */
		}
		struct xsb__sim_item *it = xsb__sim.running;
		xsb__sim_release();
		xsb__sim.running = NULL;
		xsb__sim.prev_end = end;
		it->s->last_end = end;
		it->s->on_dev = false;
		it->s->done++;
		if (it->s->xsched) {
			xsb__sim.await = it->s;
			xsb__sim.await_until = xsb_now_ns() + XSB_SIM_HOLD_NS;
		}
		pthread_cond_broadcast(&it->s->cv);
		free(it);
	}
	pthread_mutex_unlock(&xsb__sim.lock);
	return NULL;
}

static int xsb__sim_submit(struct xsb__sim_stream *s, const struct xsb_op *op, bool chained)
{
	struct xsb__sim_item *it = calloc(1, sizeof(*it));
	if (!it)
		return -1;
	it->op = op;
	it->s = s;
	it->submit = xsb_now_ns();
	it->chained = chained;
	pthread_mutex_lock(&xsb__sim.lock);
	it->seq = xsb__sim.seq++;
	if (xsb__sim.conn_tail[s->conn])
		xsb__sim.conn_tail[s->conn]->next = it;
	else
		xsb__sim.conn_head[s->conn] = it;
	xsb__sim.conn_tail[s->conn] = it;
	s->enq++;
	if (xsb__sim.await == s)
		xsb__sim.await = NULL;
	pthread_cond_signal(&xsb__sim.cv);
	pthread_mutex_unlock(&xsb__sim.lock);
	return 0;
}

static void xsb__sim_sync(struct xsb__sim_stream *s)
{
	pthread_mutex_lock(&xsb__sim.lock);
	while (s->done < s->enq)
		pthread_cond_wait(&s->cv, &xsb__sim.lock);
	pthread_mutex_unlock(&xsb__sim.lock);
}

/* ---- backend ops ------------------------------------------------------------------- */

static int xsb__host_thread_init(void)
{
	return 0;
}

static int xsb__host_lane_create(struct xsb_lane *l, const struct xsb_sizes *sz)
{
	(void)sz;
	struct xsb__sim_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	s->conn = l->id % xsb__sim.nconn;
	s->prio = l->prio_class;
	s->xsched = l->mode->xsched;
	xsb__cond_init(&s->cv);
	l->stream = s;
	return 0;
}

static void xsb__host_lane_destroy(struct xsb_lane *l)
{
	struct xsb__sim_stream *s = l->stream;
	if (!s)
		return;
	xsb__sim_sync(s);
	pthread_cond_destroy(&s->cv);
	free(s);
	l->stream = NULL;
}

static int xsb__host_launch(struct xsb_lane *l, const struct xsb_op *op)
{
	return xsb__sim_submit(l->stream, op, false);
}

static XResult xsb__host_launch_cb(struct xsb_lane *l, HwQueueHandle hwq, const struct xsb_op *op,
				   bool last)
{
	(void)hwq;
	(void)last;
	/* On a host HwQueue the callback is the work itself: run the op to completion, so the
	 * library's count of commands in flight is exact. */
	struct xsb__sim_stream *s = l->stream;
	int64_t now = xsb_now_ns();
	bool chained = s->cb_return && now - s->cb_return < XSB_SIM_CHAIN_NS;
	if (xsb__sim_submit(s, op, chained))
		return kXSchedErrorUnknown;
	xsb__sim_sync(s);
	s->cb_return = xsb_now_ns();
	return kXSchedSuccess;
}

/* A kernel command's stand-in on a host queue: a host function (a command kind of its
 * own, as a kernel is on a GPU) that runs the op as the launch callback does. */
static XResult xsb__host_func(void *data)
{
	struct xsb_cbslot *slot = data;
	return xsb__host_launch_cb(slot->lane, 0, slot->op, slot->last);
}

static XResult xsb__host_kernel_cmd(struct xsb_lane *l, struct xsb_cbslot *slot,
				    HwCommandHandle *cmd)
{
	(void)l;
	return HwCommandCreateHostFunc(cmd, xsb__host_func, slot);
}

static int xsb__host_sync(struct xsb_lane *l)
{
	xsb__sim_sync(l->stream);
	return 0;
}

static XResult xsb__host_hwq_create(struct xsb_lane *l, HwQueueHandle *hwq)
{
	(void)l;
	return HostQueueCreate(hwq);
}

static int64_t xsb__host_stamp_read(int slot)
{
	pthread_mutex_lock(&xsb__sim.lock);
	int64_t t = xsb__sim.stamps[slot];
	pthread_mutex_unlock(&xsb__sim.lock);
	return t;
}

static void xsb__host_stamp_reset(int slot)
{
	pthread_mutex_lock(&xsb__sim.lock);
	xsb__sim.stamps[slot] = -1;
	pthread_mutex_unlock(&xsb__sim.lock);
}

static void xsb__host_fini(void)
{
	pthread_mutex_lock(&xsb__sim.lock);
	xsb__sim.stop = true;
	pthread_cond_signal(&xsb__sim.cv);
	pthread_mutex_unlock(&xsb__sim.lock);
	pthread_join(xsb__sim.thread, NULL);
}

int xsb_host_backend(struct xsb_backend *be, char *why, size_t whylen)
{
	memset(be, 0, sizeof(*be));
	int nconn = 8;
	const char *env = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	if (env && atoi(env) > 0)
		nconn = atoi(env) > XSB_SIM_MAX_CONN ? XSB_SIM_MAX_CONN : atoi(env);
	pthread_mutex_init(&xsb__sim.lock, NULL);
	xsb__cond_init(&xsb__sim.cv);
	xsb__sim.nconn = nconn;
	for (int i = 0; i < XSB_STAMP_SLOTS; i++)
		xsb__sim.stamps[i] = -1;
	if (pthread_create(&xsb__sim.thread, NULL, xsb__sim_thread, NULL)) {
		snprintf(why, whylen, "cannot start the model's thread");
		return -1;
	}
	pthread_setname_np(xsb__sim.thread, "xsb-gpu");

	/* The level a host HwQueue gives, probed rather than assumed. */
	HwQueueHandle probe;
	int64_t level = kPreemptLevelBlock;
	if (HostQueueCreate(&probe) == kXSchedSuccess) {
		HwQueueGetMaxPreemptLevel(probe, &level);
		HwQueueDestroy(probe);
	}
	be->name = "host";
	snprintf(be->device, sizeof(be->device),
		 "host model of a GPU (one kernel at a time, SGEMM at 49 TFLOP/s as measured on "
		 "an H200, streaming kernels at 3 TB/s, %d connections)",
		 nconn);
	be->modeled = true;
	be->max_level = (int)level;
	be->thread_init = xsb__host_thread_init;
	be->lane_create = xsb__host_lane_create;
	be->lane_destroy = xsb__host_lane_destroy;
	be->launch = xsb__host_launch;
	be->launch_cb = xsb__host_launch_cb;
	be->kernel_cmd = xsb__host_kernel_cmd;
	be->sync = xsb__host_sync;
	be->hwq_create = xsb__host_hwq_create;
	be->stamp_read = xsb__host_stamp_read;
	be->stamp_reset = xsb__host_stamp_reset;
	be->stamp_method = "modeled kernel start on the host clock";
	be->fini = xsb__host_fini;
	(void)why;
	return 0;
}
