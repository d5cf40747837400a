/* The hardware abstraction layer: one vtable that every backend implements.
 *
 * A backend (host.c; gpu.c built for CUDA and for HIP) wraps one native queue in an
 * xs_hwq. The engine (preempt/engine.c) is its only caller. The contract, in the engine's
 * terms (doc/architecture.md):
 *
 * - Sequence numbers. The engine numbers the commands of a HwQueue 1, 2, 3, ... in
 *   enqueue order. enqueue(q, cmd, seq, flags) puts cmd on the queue behind everything
 *   enqueued before and, after it, a *done mark* (with cmd NULL, only the mark): when the queue
 * reaches the mark it publishes seq (GPU: a stream write-value into host-mapped memory; host: the
 * executor stores it). done(q) reads the last published number, so completion tracking is one
 *   memory load, from any thread, for any number of queues.
 * - Left-out marks. With XS_ENQ_MARK clear the mark after cmd is left out: seq becomes
 *   visible with a later mark (marks count: publishing n says every number <= n is done),
 *   and, for a queue that ran dry, through idle(): the done number itself stays where the
 *   last mark left it. XS_ENQ_MARK_PREV puts the mark of
 *   seq - 1 first, before the counter wait and cmd: the engine asks for it when cmd may
 *   block the queue (a counter wait, an event wait), so that what ran before is seen done
 *   meanwhile. Only queues with xs_hwq.lazy_marks are asked to leave a mark out.
 * - Counter gate (Lv2). With XS_ENQ_GATED the queue first waits until its counter >= seq
 *   (GPU: a stream wait-value on a host-mapped word). commit(q, c) stores c into the
 *   counter: the device may then run every gated command numbered <= c. Storing a lower
 *   value (decommit) stops the queue before the next gated command above it; a command
 *   that already passed its wait runs to its end. At most one command per queue is past
 *   its wait and not done at any time, since a queue runs its commands in order.
 * - Inline commands (XS_CMD_INLINE): the callback is called inside enqueue, on the calling
 *   thread (its submitter). GPU: after the counter wait, like a launch callback, so the
 *   work it puts on the stream is the command. Host: before the (empty) entry is
 *   appended: a host queue has no stream to put work on, so the work runs at enqueue.
 * - Run gate (optional, gate_check and set_run_gate): a word of the queue that is open
 *   while its XQueue runs and closed while it is suspended. gate_check puts a wait for
 *   it on the native queue outside the numbering, meant for stream capture (a graph
 *   then holds one check per kernel and stops at the next one while the gate is closed).
 * - Hardware queues. Streams beyond xs_hwq.hw_queues share hardware queues, where a stream
 *   waiting at its counter blocks the others: the engine then enqueues no gated command.
 * - Failure. enqueue returns the command's own launch result; the done mark is enqueued
 *   even when the launch failed (so numbers never stall). If the mark itself cannot be
 *   enqueued, the backend sets q->broken and done() then returns UINT64_MAX: the engine
 *   fails every command not yet complete, and refuses new ones.
 *
 * Threads: enqueue is called by one thread at a time per queue (the engine's launch token)
 * with no library lock held, since launch callbacks run inside it. commit is called with
 * the XQueue's lock held and is a single store. done, check and wait_done may be called
 * from any thread at any time, concurrently. thread_init runs once on each library thread
 * before it touches a queue. Backends never include each other or any layer above this
 * one; host.c is the reference for this contract.
 */
#ifndef XS_HAL_HAL_H
#define XS_HAL_HAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/command.h"
#include "core/object.h"
#include "xsched.h"

typedef struct xs_hwq xs_hwq;

/* enqueue's flags (the contract above). */
enum {
	XS_ENQ_GATED = 1u << 0,     /* wait for the counter to reach seq first */
	XS_ENQ_MARK = 1u << 1,      /* the done mark of seq after cmd */
	XS_ENQ_MARK_PREV = 1u << 2, /* the done mark of seq - 1 before anything else */
};

typedef struct xs_hal_ops {
	const char *name;
	/* The backend calls xs_hwq.on_done after each done number it publishes (else the
	 * engine polls done()). */
	bool pushes_done;
	/* Prepare the calling library thread to use the queue (make the stream's context
	 * current). */
	XResult (*thread_init)(xs_hwq *q);
	/* Whether commands of @kind can run on this queue. */
	bool (*supports)(xs_hwq *q, enum xs_cmd_kind kind);
	/* Queues with the same key share a device: one commitment budget, one progress
	 * thread. */
	uint64_t (*device_key)(xs_hwq *q);
	/* The device's name on the board that processes sharing it coordinate through
	 * (core/board.h): its UUID as text (CUDA: "GPU-" and the UUID as nvidia-smi prints
	 * it; HIP: its 16 bytes in hex), the same in every process; the host backend's is
	 * "host" (host queues of all processes count as one device). Writes at most @n bytes
	 * with the terminating 0. kXSchedErrorNotSupported where the runtime cannot tell (the
	 * device then has no board: the process runs alone on it). Any thread, no engine lock
	 * held; a GPU backend binds the stream's context for the call. */
	XResult (*device_name)(xs_hwq *q, char *buf, size_t n);
	/* Whether the device runs the work of one process at a time, time-slicing between
	 * processes, into *@out: CUDA without MPS (CU_DEVICE_ATTRIBUTE_MPS_ENABLED 0). Then
	 * another process's command committed beside a unit of work holds the device for its
	 * turn rather than sharing it. kXSchedErrorHardware (logged with the runtime's
	 * string) where the runtime cannot tell. NULL: no (HIP: KFD's hardware scheduler maps
	 * the queues of several processes at once, amdgpu's hws_max_conc_proc; host:
	 * XSCHED_HOST_TIMESLICED models it). Any thread, no engine lock held; a GPU backend
	 * binds the stream's context for the call. */
	XResult (*timeslices_processes)(xs_hwq *q, bool *out);
	/* Whether launch callbacks run on the queue, in its order (host), rather than at
	 * enqueue on the enqueuing thread (GPU): then they may block it like host functions. */
	bool callbacks_on_queue;
	/* See the contract above (@flags: XS_ENQ_*). Must not wait for the device. */
	XResult (*enqueue)(xs_hwq *q, xs_cmd *cmd, uint64_t seq, unsigned flags);
	/* For queues with lazy_marks: whether everything enqueued so far has completed (GPU: a
	 * stream query; host: no entry runs or waits). Must not wait; false on failure. A backend
	 * that pushes done numbers also ends wait_done when the queue is idle. */
	bool (*idle)(xs_hwq *q);
	/* Set the counter and the done number back to 0; nothing of the queue is incomplete
	 * (a new XQueue starts numbering; the engine raised xs_hwq.generation before the
	 * call). Wakes the threads blocked in wait_done. */
	void (*reset)(xs_hwq *q);
	/* Lv2: store @seq into the counter. NULL below Lv2. */
	void (*commit)(xs_hwq *q, uint64_t seq);
	/* The number of the last command that passed its counter wait, read after a commit
	 * returned (so it includes every command that passed before that store). NULL where
	 * the backend cannot tell (GPU backends): the engine then assumes none did. */
	uint64_t (*started)(xs_hwq *q);
	/* The last published done number (0 before the first), or UINT64_MAX when broken. */
	uint64_t (*done)(xs_hwq *q);
	/* Block until done(q) >= seq, or until xs_hwq.generation is no longer @gen (the
	 * numbering restarted: @seq was of an earlier XQueue, whose commands are all done);
	 * kXSchedErrorHardware if the queue fails meanwhile. NULL where the engine polls
	 * done() itself (GPU backends: it sleeps until a command is expected to end,
	 * preempt/engine.c). */
	XResult (*wait_done)(xs_hwq *q, uint64_t seq, uint64_t gen);
	/* kXSchedSuccess while the queue works; kXSchedErrorHardware once the device reported
	 * a failure on it (the progress thread asks when a queue makes no progress). */
	XResult (*check)(xs_hwq *q);
	/* Run gate (see the contract). Both NULL where the queue cannot wait on memory.
	 * set_run_gate is called with the XQueue's lock held and is a single store;
	 * gate_check is called by the application's thread, outside the engine's numbering;
	 * with @mark_prev > 0 it first puts the done mark of that number (a left-out mark of
	 * the last command, which a closed gate would otherwise hide). */
	void (*set_run_gate)(xs_hwq *q, bool open);
	XResult (*gate_check)(xs_hwq *q, uint64_t mark_prev);
	/* Give the native queue the device's greatest (@top) or least hardware priority.
	 * NULL where the runtime cannot change it on an existing queue. */
	void (*set_priority)(xs_hwq *q, bool top);
	/* Lv3 model of the host backend: while held, the queue starts no command, as an
	 * unmapped hardware queue runs nothing. NULL on GPU backends. */
	void (*hold)(xs_hwq *q, bool on);
	/* Lv3: the address of the queue's ring buffer, which names its KFD queue. NULL where
	 * the backend has none. */
	XResult (*ring_base)(xs_hwq *q, uint64_t *addr);
	/* Free the backend's state: nothing is pending, no XQueue uses the queue, the
	 * counter is open. */
	void (*destroy)(xs_hwq *q);
} xs_hal_ops;

struct xs_lv3; /* preempt/lv3.h: the HAL only carries the pointer */

struct xs_hwq {
	xs_obj obj;
	const xs_hal_ops *ops;
	int max_level; /* XPreemptLevel, probed at creation; read-only once published */
	void *native;  /* the stream for GPU queues, NULL for host queues */
	/* The hardware queues that the device's streams are spread over (CUDA connections,
	 * HSA queues of a priority pool), 0 = one per stream. Read-only once published. */
	unsigned hw_queues;
	/* enqueue honours a left-out mark (XS_ENQ_MARK clear; the contract above): host
	 * queues; GPU queues with stream memory operations when XSCHED_GPU_LAZY_MARKS=1.
	 * Read-only once published. */
	bool lazy_marks;
	atomic_bool broken; /* the done mark could not be enqueued (see the contract) */
	/* How often the numbering restarted (a new XQueue): raised by the engine before
	 * ops->reset, read by it before a wait_done, which it ends (see there). */
	_Atomic uint64_t generation;
	/* With ops->pushes_done: called by the backend (any thread, no lock of the engine
	 * held) after it published a done number, once set (xs_hwq_push_done). Set by the
	 * engine before the first enqueue of each XQueue (xs_hwq_set_on_done), maybe while the
	 * backend is still inside the push of an earlier XQueue's last command: atomics. The
	 * argument stays valid for the process's life. */
	void (*_Atomic on_done)(void *arg);
	void *_Atomic on_done_arg;
	/* With ops->pushes_done: how many pushes came (raised before each, xs_hwq_push_done).
	 * The engine reads it around an enqueue call: a command may end, and its push be
	 * looked at, before the engine stored the command's number. */
	_Atomic uint64_t pushes;
	/* Owned by the engine (preempt/): the KFD queue when the HwQueue has Lv3. */
	struct xs_lv3 *lv3;
	/* Guarded by the engine's binding lock: the XQueue in front of it, and destruction. */
	void *xq;
	bool dead;
};

static inline xs_hwq *xs_hwq_of(xs_obj *obj)
{
	return (xs_hwq *)obj;
}

/* Common set-up for backends: fill the generic part (one reference, the caller's). */
static inline void xs_hwq_init(xs_hwq *q, const xs_hal_ops *ops, int max_level, void *native,
			       void (*free_fn)(xs_obj *obj))
{
	xs_obj_init(&q->obj, XS_KIND_HWQUEUE, free_fn);
	q->ops = ops;
	q->max_level = max_level;
	q->native = native;
	q->hw_queues = 0;
	atomic_init(&q->broken, false);
	atomic_init(&q->generation, 0);
	atomic_init(&q->on_done, NULL);
	atomic_init(&q->on_done_arg, NULL);
	atomic_init(&q->pushes, 0);
	q->lv3 = NULL;
	q->xq = NULL;
	q->dead = false;
}

/* The engine: where the backend pushes its done numbers (the argument first, so that a
 * push that sees @fn sees @arg). */
static inline void xs_hwq_set_on_done(xs_hwq *q, void (*fn)(void *arg), void *arg)
{
	atomic_store_explicit(&q->on_done_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&q->on_done, fn, memory_order_release);
}

/* The backend, after it published a done number: push it, if the engine asked. */
static inline void xs_hwq_push_done(xs_hwq *q)
{
	atomic_fetch_add_explicit(&q->pushes, 1, memory_order_seq_cst);
	void (*fn)(void *arg) = atomic_load_explicit(&q->on_done, memory_order_acquire);
	if (fn)
		fn(atomic_load_explicit(&q->on_done_arg, memory_order_relaxed));
}

/* Widen @word, the low 32 bits of a number that only grows, to 64 bits against *widest,
 * the widest value returned so far, which it raises. The true number is taken to be
 * within 2^31 of *widest, either side: a word below it was read before another thread
 * widened a later one (readers race), and gives *widest. (Taken as 2^32 above it instead,
 * a stale word made every command enqueued on a CUDA stream complete at once, for good.)
 * CUDA's done word is 32 bits (cuStreamWriteValue32). Any thread, lock-free.
 *
 * Ordering: a thread that gets *widest back (its own word was older) frees commands up to
 * a number whose word another thread read, so *widest passes that reader's view on: the
 * raise releases and the loads acquire. With relaxed ones a host function's command was
 * freed by a thread ordered only after an older done word than the one that covered it,
 * unordered with the host function's own accesses to it (ThreadSanitizer, test_cuda_fake;
 * on x86 the orders cost nothing more). */
static inline uint64_t xs_hal_widen32(_Atomic uint64_t *widest, uint32_t word)
{
	uint64_t last = atomic_load_explicit(widest, memory_order_acquire);
	for (;;) {
		int32_t ahead = (int32_t)(word - (uint32_t)last);
		if (ahead <= 0)
			return last;
		if (atomic_compare_exchange_weak_explicit(widest, &last, last + (uint64_t)ahead,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return last + (uint64_t)ahead;
	}
}

/* Backends: create a queue (not yet published). Each returns kXSchedSuccess or the
 * XResult the public creation call documents; the GPU ones return
 * kXSchedErrorNotSupported in builds without that runtime. */
XResult xs_host_queue_create(xs_hwq **out);
XResult xs_cuda_queue_create(void *stream, xs_hwq **out);
XResult xs_hip_queue_create(void *stream, xs_hwq **out);

/* HwCommandCreateResolvedKernel: whether @resolve knows CUDA kernel stub @func in the
 * calling thread's current context (asked once per kernel and context: cached, and a thread
 * that made a command of this kernel and resolver before asks nothing). The launch looks the
 * CUfunction up in its stream's context (asking @resolve there if it is new).
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue if @resolve fails (logged),
 * kXSchedErrorNotSupported without a CUDA backend or driver, kXSchedErrorHardware if the
 * driver failed to start (cuInit). */
XResult xs_cuda_check_kernel(const void *func, int (*resolve)(void **, const void *));

/* The HwQueue whose command the calling thread runs now, and that command's number:
 * backends set it around user code they run themselves (host functions; launch callbacks
 * on host queues) and clear it with (NULL, 0). xs_hal_running returns NULL elsewhere.
 * Thread-local; running.c. */
void xs_hal_set_running(xs_hwq *q, uint64_t seq);
xs_hwq *xs_hal_running(uint64_t *seq);
/* In a child after fork(), on the forking thread: it runs no command of a HwQueue (one
 * that forked inside a host function or launch callback ran the parent's). */
void xs_hal_forked(void);
/* Likewise for the CUDA backend's memo of kernels this thread resolved (gpu.c): the
 * parent's contexts are not the child's. */
void xs_cuda_forked(void);

/* In a child after fork(): the host backend's process-wide lock anew (the parent's host
 * queues and their executor threads are gone). */
void xs_host_forked(void);

/* Whether @q is a host queue (tests attach host queues to a fake KFD). */
bool xs_hwq_is_host(const xs_hwq *q);

#endif
