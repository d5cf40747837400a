/* Lv3 preemption (interrupt/restore) of AMD GPU compute queues through KFD.
 *
 * A suspended queue is unmapped by the GPU scheduler firmware; its running
 * waves are saved by CWSR (compute wave save/restore) and restored when the
 * queue is resumed. The only stock-kernel path to that from user space is the
 * KFD debugger API on the process's own /dev/kfd (AMDKFD_IOC_DBG_TRAP, KFD
 * ioctl 1.13+, Linux 6.5+), targeting pid = getpid(): no root, no ptrace.
 * See doc/cwsr.md for requirements, costs and fallbacks.
 *
 * Lifetime: the first successful xs_cwsr_attach() opens /dev/kfd and enables
 * the debug trap for this process; the last xs_cwsr_detach() resumes anything
 * still suspended, disables the debug trap and closes the fd, so that rocgdb
 * or ROCr's core dump can attach again. At exit, xs_cwsr_release_all() does the
 * same with queues still attached, before the HSA runtime tears down. While any queue is attached,
 * another debugger cannot attach to this process (and vice versa).
 *
 * This file needs only C11 and Linux headers; HIP-specific code (finding the
 * ring buffer of a stream's queue) lives with the caller.
 *
 * Thread-safety: every function may be called from any thread. One
 * process-wide mutex serialises them all, including the ioctls (a suspend or
 * resume holds it for the whole ioctl, typically hundreds of us). Not
 * fork-safe: a child process must not use queues attached by its parent
 * (KFD refuses a parent's fd with -EBADF).
 */
#ifndef XS_PREEMPT_CWSR_H
#define XS_PREEMPT_CWSR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xsched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Path of the KFD device node. */
#define XS_KFD_DEVICE_PATH "/dev/kfd"

/* The system calls the backend makes, replaceable for tests. Each returns a
 * negative errno on failure instead of setting errno:
 *   open:  a file descriptor (>= 0) or -errno;
 *   close: 0 or -errno;
 *   ioctl: the kernel's non-negative return value (SUSPEND/RESUME_QUEUES
 *          return a queue count) or -errno.
 */
typedef struct xs_kfd_sys {
	int (*open)(const char *path, int flags);
	int (*close)(int fd);
	int (*ioctl)(int fd, unsigned long request, void *arg);
} xs_kfd_sys;

/* Replace the system calls; NULL restores the real ones. Tests only: call it
 * while no queue is attached. Thread-safety: any thread. */
void xs_cwsr_set_sys(const xs_kfd_sys *sys);

/* Redirect the warnings and errors that the functions below log on the calling thread
 * into @buf instead of the log: each message is appended ("; "-separated, truncated to
 * @cap bytes including the NUL) and nothing is printed, whatever XSCHED_LOG says, until
 * the thread calls this again with @buf NULL. @buf is emptied here. Debug lines are not
 * redirected. lv3.c uses it to fold the backend's reason into its own single line, which
 * also says what the queue falls back to.
 * Thread-safety: any thread; affects only the calling thread (thread-local state). */
void xs_cwsr_log_capture(char *buf, size_t cap);

/* One KFD queue of this process, as reported by GET_QUEUE_SNAPSHOT. */
typedef struct xs_cwsr_queue_info {
	uint64_t ring_base_address; /* ring buffer VA (hsa_queue_t.base_address) */
	uint32_t queue_id;          /* KFD queue id, unique within the process */
	uint32_t gpu_id;            /* KFD gpu id (topology), not a HIP device index */
	uint32_t ring_size;         /* bytes */
	uint32_t queue_type;        /* XS_KFD_QUEUE_TYPE_* (2 = AQL compute) */
} xs_cwsr_queue_info;

/* An attached queue: owned by the caller from xs_cwsr_attach() until
 * xs_cwsr_detach(). */
typedef struct xs_cwsr_queue xs_cwsr_queue;

/* Read the KFD ioctl interface version (opens /dev/kfd if needed; changes no
 * state). Works on every KFD version.
 * @major, @minor: out; both required.
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue for a NULL pointer;
 * kXSchedErrorNotSupported when /dev/kfd cannot be opened or queried. */
XResult xs_cwsr_kfd_version(uint32_t *major, uint32_t *minor);

/* Can this process do Lv3 at all? Opens /dev/kfd, checks KFD >= 1.13,
 * enables the debug trap for this process and checks that the HSA runtime
 * has debug support enabled, then undoes all of it unless a queue is already
 * attached. Call it after the HIP/HSA runtime is initialised (the runtime
 * enables its debug support at start-up).
 * Returns kXSchedSuccess, or kXSchedErrorNotSupported (reason logged once:
 * no /dev/kfd, no access, old kernel, debugger already attached, runtime
 * not debug-enabled, no hardware scheduler, ...). */
XResult xs_cwsr_probe(void);

/* List this process's KFD queues (user-mode queues of all GPUs, including
 * SDMA queues). Enables the debug trap for the duration of the call unless a
 * queue is attached; clears no queue state.
 * @out: array of @cap entries (may be NULL when @cap is 0).
 * @count: out; the number of queues that exist, which may exceed @cap (only
 *         min(count, cap) entries are written).
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue; kXSchedErrorNotSupported
 * as for xs_cwsr_probe(), or when KFD's reply is malformed;
 * kXSchedErrorUnknown (out of memory). */
XResult xs_cwsr_list_queues(xs_cwsr_queue_info *out, size_t cap, size_t *count);

/* Whether @ring_a and @ring_b (ring buffer addresses, as for xs_cwsr_attach) are two
 * different compute queues of this process, so that one can be suspended while the
 * other runs (cwsr-probe checks its two streams with it before suspending anything).
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue (a zero address);
 * kXSchedErrorNotAllowed (the same queue: HIP made the two streams share it);
 * kXSchedErrorNotFound (one is not a compute queue of this process);
 * kXSchedErrorNotSupported as for xs_cwsr_probe(). One log line on each failure. */
XResult xs_cwsr_distinct_queues(uint64_t ring_a, uint64_t ring_b);

/* Attach to the compute queue whose ring buffer starts at
 * @ring_base_address (for a HIP stream: hsa_queue_t.base_address of the
 * stream's HSA queue; doc/cwsr.md shows how to find it). The first attach
 * enables the debug trap. Clears the queue's "new queue" state, without which
 * KFD refuses to suspend it.
 * @out: out; the handle, NULL on failure.
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue (NULL @out, zero address);
 * kXSchedErrorNotSupported (this process cannot do Lv3, or the queue is not
 * a compute queue); kXSchedErrorNotFound (no KFD queue of this process has
 * that ring buffer); kXSchedErrorNotAllowed (the queue is already attached:
 * a preemptible stream needs a hardware queue of its own);
 * kXSchedErrorUnknown (out of memory). */
XResult xs_cwsr_attach(xs_cwsr_queue **out, uint64_t ring_base_address);

/* The KFD queue id of @q (for logs and tests). @q must be attached. */
uint32_t xs_cwsr_queue_id(const xs_cwsr_queue *q);

/* True while @q is suspended by this backend. @q must be attached. */
bool xs_cwsr_is_suspended(const xs_cwsr_queue *q);

/* Suspend @q: KFD preempts it with grace period 0, so its running waves are
 * saved by CWSR; it runs nothing until resumed. Returns when KFD has unmapped
 * it. Idempotent: a suspended queue is left as it is, with no ioctl.
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue (NULL);
 * kXSchedErrorNotSupported (the runtime is not debug-enabled: -EPERM);
 * kXSchedErrorHardware (KFD failed to suspend it; it is left running). */
XResult xs_cwsr_suspend(xs_cwsr_queue *q);

/* Resume @q, restoring its saved waves. Idempotent: a running queue is left
 * as it is, with no ioctl.
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue (NULL);
 * kXSchedErrorHardware (KFD failed to resume it; it stays marked suspended
 * and the next resume or the detach tries again). */
XResult xs_cwsr_resume(xs_cwsr_queue *q);

/* Suspend @n queues with one ioctl (each KFD call remaps every queue on the
 * device, so one call for several queues costs about as much as one queue).
 * Queues already suspended are skipped. All or nothing: if KFD suspends only
 * some, those are resumed again before returning kXSchedErrorHardware.
 * @qs: @n distinct attached queues. Returns as xs_cwsr_suspend(). */
XResult xs_cwsr_suspend_many(xs_cwsr_queue *const *qs, size_t n);

/* Resume @n queues with one ioctl; running ones are skipped. On
 * kXSchedErrorHardware, the queues KFD did resume are marked running and the
 * others stay marked suspended. Returns as xs_cwsr_resume(). */
XResult xs_cwsr_resume_many(xs_cwsr_queue *const *qs, size_t n);

/* Release the KFD session at exit: disable the debug trap (KFD then resumes every queue
 * of this process it had suspended) and close /dev/kfd, with queues still attached. It
 * must run before the HSA runtime's teardown, whose KFD runtime_disable waits for ever
 * while the trap is enabled (kfd_debug.c): registered with atexit() at the first
 * successful ENABLE (after HIP's own handler, so it runs before it) and called by the
 * library's destructor. Afterwards suspends are refused, resumes and detaches succeed
 * without ioctls, and nothing enables the trap again. Idempotent.
 * Thread-safety: any thread. */
void xs_cwsr_release_all(void);

/* Detach @q: resume it first if suspended (KFD blocks destruction of a
 * suspended queue, so detach before destroying the stream), then free it.
 * The last detach disables the debug trap, which makes KFD resume any queue
 * of this process still suspended, and closes /dev/kfd. NULL is a no-op.
 * Cannot fail; a failed resume is logged. */
void xs_cwsr_detach(xs_cwsr_queue *q);

#ifdef __cplusplus
}
#endif

#endif
