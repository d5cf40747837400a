/* A fake KFD for the Lv3 tests, installed with xs_cwsr_set_sys(&fake_sys).
 *
 * It behaves like the upstream kernel where it matters: it accepts only the two request
 * numbers (checked against their literal values), refuses every op but ENABLE until the
 * trap is enabled, refuses SUSPEND/RESUME with -EPERM unless the runtime is debug-enabled,
 * refuses to suspend a queue still flagged new, ORs status bits into the queue id array
 * (an already suspended queue is suspended again and counted; a failed resume sets
 * ERROR alone), resumes everything on DISABLE, and models the HSA runtime's teardown
 * (fake_runtime_disable: KFD's runtime_disable, which blocks while the trap is enabled). Every call
 * is appended to F.trace ("open version enable snapshot suspend[3,5] resume[3] disable close"), and
 * the last argument block of each op is kept for the tests to inspect.
 *
 * Locking: fake_lock() guards F. The fake's system calls take it themselves (they are
 * called with the backend's own lock held: lock order cwsr lock -> fake lock). A test that
 * has no other thread calling the backend may read and write F directly; one that has
 * (the scheduler thread, a launcher) uses the accessors below or holds fake_lock().
 * A "kernel" running on a host queue attached to fake queue @id models the hardware's
 * view with fake_wait_running(): it stalls while KFD has the queue suspended.
 */
#ifndef XS_TEST_FAKE_KFD_H
#define XS_TEST_FAKE_KFD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "preempt/cwsr.h"
#include "preempt/kfd_uapi.h"

/* Upstream request numbers, written out so that a wrong macro is caught. */
#if defined(__x86_64__) || defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64)
#define REQ_GET_VERSION 0x80084b01ul
#define REQ_DBG_TRAP    0xc0204b26ul
#else
#define REQ_GET_VERSION ((unsigned long)XS_AMDKFD_IOC_GET_VERSION)
#define REQ_DBG_TRAP    ((unsigned long)XS_AMDKFD_IOC_DBG_TRAP)
#endif

#define FAKE_FD         42
#define MAX_FAKE_QUEUES 40
#define ERR_BIT         XS_KFD_DBG_QUEUE_ERROR_MASK
#define INV_BIT         XS_KFD_DBG_QUEUE_INVALID_MASK

struct fake_queue {
	uint64_t ring;
	uint32_t id;
	uint32_t gpu_id;
	uint32_t type;
	bool is_new;
	bool suspended;
	uint32_t suspend_status; /* injected: INV_BIT = refused, ERR_BIT = HW failure */
	uint32_t resume_status;
};

struct fake {
	/* configuration */
	int open_result;
	int version_err;
	uint32_t major, minor;
	int enable_err;
	bool debugger_attached; /* someone else enabled the trap */
	uint32_t runtime_state;
	int snapshot_err, suspend_err, resume_err;
	int suspend_ret_override; /* >= 0: returned instead of the count */
	struct fake_queue q[MAX_FAKE_QUEUES];
	size_t nq;

	/* state */
	int fd;
	bool enabled;
	int opens, closes;

	/* observations */
	char trace[2048];
	int open_flags;
	int bad_requests, bad_pids, bad_fds, bad_ops;
	struct xs_kfd_dbg_trap_args last_enable, last_snapshot, last_suspend, last_resume;
	uint32_t last_suspend_ids[MAX_FAKE_QUEUES]; /* as sent, before status bits */
	uint32_t enable_rinfo_size_in;
	int snapshots;
	int runtime_disables;
};

/* The fake's state; see the locking note above. */
extern struct fake F;
/* The system calls to pass to xs_cwsr_set_sys(). */
extern const xs_kfd_sys fake_sys;

/* A machine that can do Lv3, with @n (<= MAX_FAKE_QUEUES) new AQL queues: ids 3, 5, 7, ...,
 * rings 0x10000, 0x20000, ... Clears every observation. Takes fake_lock(). */
void fake_reset(size_t n);
/* Empty F.trace. Takes fake_lock(). */
void trace_clear(void);

void fake_lock(void);
void fake_unlock(void);

/* Accessors; each takes fake_lock(). */
size_t fake_suspended_count(void);
bool fake_queue_suspended(uint32_t id);
bool fake_enabled(void);
/* The HSA runtime's teardown (hsaKmtRuntimeDisable -> KFD runtime_disable): -EDEADLK
 * ("would wait for ever") while the debug trap is enabled, else 0. Traced. */
int fake_runtime_disable(void);
/* Copy F.trace into @buf (@cap bytes, NUL-terminated). */
void fake_trace_copy(char *buf, size_t cap);

/* Block while KFD holds queue @id suspended (the hardware's view of a suspended queue).
 * Returns false if it is still suspended after @timeout_ms. */
bool fake_wait_running(uint32_t id, int timeout_ms);
/* As fake_wait_running(), with fake_lock() held by the caller (and still held on return):
 * what the caller does next cannot overlap a SUSPEND of the queue. */
bool fake_wait_running_locked(uint32_t id, int timeout_ms);
/* Block until queue @id is suspended; false after @timeout_ms. */
bool fake_wait_suspended(uint32_t id, int timeout_ms);

#endif
