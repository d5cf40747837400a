/* Lv3 (interrupt/restore) of one HwQueue: backend-independent glue over cwsr.h.
 *
 * Who calls what. The API layer (api/hwqueue.c) attaches a HwQueue whose backend names
 * its hardware queue (the HAL's ring_base; hal/hip_ring.h finds it for a HIP stream) with
 * xs_lv3_attach() after the backend's own Lv2 probe has passed, raises its maximum level
 * to kPreemptLevelInterrupt only when that succeeded, and calls xs_lv3_detach() before
 * the native queue goes away (KFD blocks the destruction of a suspended queue; detach
 * resumes it first). The engine (engine.c, xs__suspend_levels/xs__resume_levels) calls
 * xs_lv3_interrupt() and xs_lv3_restore() when such an XQueue is suspended or resumed.
 *
 * The probe. xs_lv3_attach() is the whole probe. xs_cwsr_attach() makes every check of
 * xs_cwsr_probe() (KFD ioctl version, DBG_TRAP ENABLE, the runtime's debug support) in
 * the same session that finds the queue, so calling xs_cwsr_probe() first would only add
 * an ENABLE/DISABLE pair (two run-list refreshes of the whole GPU). Attach then suspends
 * and resumes the queue once, which is where -EPERM, a refusal by the firmware or a
 * per-queue hardware error shows. Any failure undoes everything (the queue is detached;
 * the trap is disabled unless another queue holds it) and logs one warning saying why
 * and which level the queue falls back to.
 *
 * Failures at run time. The first failed suspend or resume marks the queue degraded and
 * logs one line; the reason the backend gave is folded into it (xs_cwsr_log_capture).
 * From then on xs_lv3_interrupt() sends no SUSPEND and returns false: the caller's Lv2
 * gate, which the core closes before it calls interrupt, holds the queue. Every later
 * call first retries the resume of anything a failure left suspended, and the queue is
 * detached from KFD as soon as nothing of it is suspended. A degraded queue still reports
 * max level 3 (it passed the probe); its Lv3 acts as Lv2.
 *
 * Locking and cost. The engine calls interrupt/restore with the XQueue's lock held
 * (xs__apply and xs_engine_set_level in engine.c, reached from the scheduler's pass,
 * XQueueSuspend/XQueueResume, XQueueSetPreemptLevel and XQueueDestroy). Each call that
 * reaches KFD makes it unmap and remap every user queue on the GPU: expect hundreds of us
 * (up to the preemption fence's time-out on a hung GPU) with that lock held. Meanwhile
 * the scheduler's pass, which applies its decisions one XQueue at a time, and every
 * thread submitting to or waiting on that XQueue wait as well. xs__lv3_lock (lv3.c) guards
 * the state of every xs_lv3 and is held across the cwsr calls.
 * Lock order: xq->lock -> xs__lv3_lock -> cwsr lock (-> the ioctl).
 *
 * Batching. xs_lv3_interrupt_many() suspends several queues with one SUSPEND_QUEUES: one
 * remap instead of N. The scheduler does not use it yet (tests do), because its pass
 * suspends XQueues one at a time, each under its own lock (sched.c: xs__pass ->
 * xs_engine_sched_suspend -> xs__apply). Using it needs a pass that applies the Lv1/Lv2
 * actions per XQueue, collects the Lv3 queues it suspended and interrupts them together
 * afterwards.
 */
#ifndef XS_PREEMPT_LV3_H
#define XS_PREEMPT_LV3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xsched.h"

/* One HwQueue's Lv3 state; owned by the backend from xs_lv3_attach() to
 * xs_lv3_detach(). */
typedef struct xs_lv3 xs_lv3;

/* Attach the hardware queue whose ring buffer starts at @ring_base_address and check,
 * by suspending and resuming it once, that Lv3 works on it (see "The probe" above).
 * @out:            out; the handle, or NULL on failure.
 * @fallback_level: the level the queue keeps if Lv3 fails (an XPreemptLevel, for the
 *                  log line).
 * @name:           names the queue in log lines ("HIP stream 0x..."); copied.
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue (NULL @out, zero address);
 * kXSchedErrorNotSupported (this process cannot do Lv3: no /dev/kfd, KFD older than
 * 1.13, a debugger holds the trap, the runtime is not debug-enabled, an SDMA queue);
 * kXSchedErrorNotFound (no KFD queue of this process has that ring buffer);
 * kXSchedErrorNotAllowed (another HwQueue already uses that hardware queue);
 * kXSchedErrorHardware (the trial suspend or resume failed); kXSchedErrorUnknown (out
 * of memory). Every failure logs one warning.
 * Thread-safety: any thread. Takes xs__k.lock (cwsr.c) for several ioctls (about a millisecond
 * on a real GPU); call it while creating the HwQueue, not on a hot path. */
XResult xs_lv3_attach(xs_lv3 **out, uint64_t ring_base_address, int fallback_level,
		      const char *name);

/* Interrupt the queue: KFD suspends it with grace period 0, so CWSR saves its running
 * waves, and it runs nothing until xs_lv3_restore(). Idempotent.
 * Returns true when the queue is suspended; false when it is degraded (now or before,
 * see above) and only the caller's Lv2 gate holds it. Cannot fail otherwise. A NULL @l
 * returns false.
 * Thread-safety: any thread; the core calls it with the XQueue's lock held. Takes
 * xs__lv3_lock and xs__k.lock (cwsr.c); blocks for one KFD call (hundreds of us) when it
 * suspends. */
bool xs_lv3_interrupt(xs_lv3 *l);

/* Interrupt the @n queues of @ls with one KFD call (one remap of the GPU instead of
 * @n); NULL entries and degraded queues are skipped. If KFD refuses the batch, each
 * queue is tried alone, so that only the queues that fail are degraded (each logging
 * its one line).
 * @suspended: out, @n entries (may be NULL): whether each queue is now suspended.
 * Returns the number of queues suspended.
 * Thread-safety: as xs_lv3_interrupt(); the caller must hold whatever serialises each
 * queue's interrupt and restore (the core: each XQueue's lock). */
size_t xs_lv3_interrupt_many(xs_lv3 *const *ls, size_t n, bool *suspended);

/* Restore the queue: KFD resumes it and CWSR restores the saved waves, so the kernel
 * that was running goes on where it stopped. Idempotent; on a degraded queue it only
 * retries the resume a failure left behind.
 * Returns kXSchedSuccess when nothing of the queue is suspended any more (or @l is
 * NULL); kXSchedErrorHardware when KFD failed to resume it: the queue is degraded (one
 * line logged the first time), stays suspended, and the next interrupt, restore or the
 * detach tries again.
 * Thread-safety: as xs_lv3_interrupt(). */
XResult xs_lv3_restore(xs_lv3 *l);

/* Detach and free @l: resume the queue first if it is suspended, then release it; the
 * last attached queue of the process disables the debug trap, which makes KFD resume
 * anything of this process still suspended. Call it before the native queue is
 * destroyed. NULL is a no-op. Cannot fail; a failed resume is logged (one line).
 * Thread-safety: any thread, once no other call on @l can run (the backend's destroy: no
 * XQueue is left on the HwQueue). */
void xs_lv3_detach(xs_lv3 *l);
/* At process exit: release the KFD session (xs_cwsr_release_all); queues stay attached
 * but can no longer be interrupted. */
void xs_lv3_release_all(void);

/* Whether a suspend or resume of @l has failed (its Lv3 now acts as Lv2).
 * Thread-safety: any thread; takes xs__lv3_lock. */
bool xs_lv3_degraded(const xs_lv3 *l);

/* The KFD queue id @l was attached to (for logs and tests).
 * Thread-safety: any thread; read-only after attach. */
uint32_t xs_lv3_queue_id(const xs_lv3 *l);

struct xs_hwq;
/* Give @q Lv3 where its backend names a KFD queue (ring_base) and the whole probe and
 * attach pass: max_level becomes kPreemptLevelInterrupt and q->lv3 is set. Otherwise one
 * line is logged by xs_lv3_attach and the queue stays at Lv2. Before @q is published. */
void xs_lv3_probe_hwq(struct xs_hwq *q);

#endif
