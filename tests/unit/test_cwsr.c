/* Unit test of the Lv3 (CWSR) backend against a fake KFD.
 *
 * The fake (fake_kfd.h) sits behind xs_kfd_sys and behaves like the upstream
 * kernel where it matters: it accepts only the two request numbers (checked
 * against their literal values), refuses every op but ENABLE until the trap is
 * enabled, refuses SUSPEND/RESUME with -EPERM unless the runtime is
 * debug-enabled, refuses to suspend a queue still flagged new, ORs status bits
 * into the queue id array, resumes everything on DISABLE, and blocks the
 * runtime's teardown while the trap is enabled. Each test checks
 * the exact call sequence, the arguments, the result, the number of log lines,
 * and that no queue is left suspended and no fd left open.
 *
 * Exit status: 0 when every check passes, 1 at the first failed check.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/log.h"
#include "fake_kfd.h"
#include "log_capture.h"
#include "preempt/cwsr.h"
#include "preempt/kfd_uapi.h"

/* ---- log capture (log_capture.h) ---- */

/* ---- checks ---- */

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		if (t_capturing())                                                                 \
			t_capture_end("xsched[cwsr]");                                             \
		printf("%s:%d: %s: ", __FILE__, __LINE__, __func__);                               \
		printf(__VA_ARGS__);                                                               \
		printf("\n  trace: %s\n  log: %s\n", F.trace, t_captured);                         \
		fflush(stdout);                                                                    \
		return 1;                                                                          \
	} while (0)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			FAIL("check failed: %s", #cond);                                           \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_)                                                                      \
			FAIL("%s == %lld, expected %s == %lld", #a, a_, #b, b_);                   \
	} while (0)

#define CHECK_TRACE(expected)                                                                      \
	do {                                                                                       \
		if (strcmp(F.trace, (expected)) != 0)                                              \
			FAIL("call sequence\n  got:      \"%s\"\n  expected: \"%s\"", F.trace,     \
			     (expected));                                                          \
	} while (0)

/* Run @call with the log captured; check its result and that it printed
 * exactly @lines lines. */
#define CHECK_CALL(call, want, lines)                                                              \
	do {                                                                                       \
		XResult r_;                                                                        \
		int n_;                                                                            \
		t_capture_begin();                                                                 \
		r_ = (call);                                                                       \
		n_ = t_capture_end("xsched[cwsr]");                                                \
		if (r_ != (want))                                                                  \
			FAIL("%s returned %s, expected %s", #call, XResultName(r_),                \
			     XResultName(want));                                                   \
		if (n_ != (lines))                                                                 \
			FAIL("%s printed %d log line(s), expected %d", #call, n_, (lines));        \
	} while (0)

#define CHECK_VOID_CALL(call, lines)                                                               \
	do {                                                                                       \
		int n_;                                                                            \
		t_capture_begin();                                                                 \
		call;                                                                              \
		n_ = t_capture_end("xsched[cwsr]");                                                \
		if (n_ != (lines))                                                                 \
			FAIL("%s printed %d log line(s), expected %d", #call, n_, (lines));        \
	} while (0)

/* Nothing open, nothing enabled, nothing suspended, no stray request. */
#define CHECK_CLEAN()                                                                              \
	do {                                                                                       \
		CHECK_EQ(F.fd, -1);                                                                \
		CHECK_EQ(F.opens, F.closes);                                                       \
		CHECK(!F.enabled);                                                                 \
		CHECK_EQ(fake_suspended_count(), 0);                                               \
		CHECK_EQ(F.bad_requests, 0);                                                       \
		CHECK_EQ(F.bad_pids, 0);                                                           \
		CHECK_EQ(F.bad_fds, 0);                                                            \
		CHECK_EQ(F.bad_ops, 0);                                                            \
	} while (0)

/* ---- tests ---- */

static int test_request_numbers(void)
{
	CHECK_EQ((unsigned long)XS_AMDKFD_IOC_GET_VERSION, REQ_GET_VERSION);
	CHECK_EQ((unsigned long)XS_AMDKFD_IOC_DBG_TRAP, REQ_DBG_TRAP);
	CHECK_EQ(_IOC_NR(XS_AMDKFD_IOC_DBG_TRAP), 0x26);
	CHECK_EQ(_IOC_TYPE(XS_AMDKFD_IOC_DBG_TRAP), 'K');
	CHECK_EQ(_IOC_SIZE(XS_AMDKFD_IOC_DBG_TRAP), 32);
	CHECK_EQ(_IOC_DIR(XS_AMDKFD_IOC_DBG_TRAP), _IOC_READ | _IOC_WRITE);
	CHECK_EQ(_IOC_NR(XS_AMDKFD_IOC_GET_VERSION), 0x01);
	CHECK_EQ(_IOC_DIR(XS_AMDKFD_IOC_GET_VERSION), _IOC_READ);
	CHECK_EQ(XS_KFD_DBG_TRAP_ENABLE, 0);
	CHECK_EQ(XS_KFD_DBG_TRAP_DISABLE, 1);
	CHECK_EQ(XS_KFD_DBG_TRAP_SUSPEND_QUEUES, 6);
	CHECK_EQ(XS_KFD_DBG_TRAP_RESUME_QUEUES, 7);
	CHECK_EQ(XS_KFD_DBG_TRAP_GET_QUEUE_SNAPSHOT, 13);
	CHECK_EQ(XS_KFD_EC_MASK(XS_KFD_EC_QUEUE_NEW), 1ull << 30);
	CHECK_EQ(XS_KFD_DBG_QUEUE_ERROR_MASK, 1u << 30);
	CHECK_EQ(XS_KFD_DBG_QUEUE_INVALID_MASK, 1u << 31);
	return 0;
}

static int test_probe_ok(void)
{
	uint32_t major = 0, minor = 0;

	fake_reset(1);
	CHECK_CALL(xs_cwsr_kfd_version(&major, &minor), kXSchedSuccess, 0);
	CHECK_TRACE("open version close");
	CHECK_EQ(major, 1);
	CHECK_EQ(minor, 15);

	trace_clear();
	CHECK_CALL(xs_cwsr_probe(), kXSchedSuccess, 0);
	/* The probe leaves nothing enabled behind. */
	CHECK_TRACE("open version enable disable close");
	CHECK_EQ(F.open_flags & O_ACCMODE, O_RDWR);
	CHECK(F.open_flags & O_CLOEXEC);
	CHECK_EQ(F.last_enable.pid, getpid());
	CHECK_EQ(F.last_enable.op, XS_KFD_DBG_TRAP_ENABLE);
	CHECK_EQ(F.last_enable.enable.exception_mask, 0);
	CHECK_EQ(F.last_enable.enable.dbg_fd, FAKE_FD);
	CHECK_EQ(F.enable_rinfo_size_in, sizeof(struct xs_kfd_runtime_info));
	CHECK(F.last_enable.enable.rinfo_ptr != 0);
	/* The probe changes no queue. */
	CHECK(F.q[0].is_new);
	CHECK_CLEAN();
	return 0;
}

static int test_no_device(void)
{
	uint32_t major, minor;

	fake_reset(1);
	F.open_result = -ENOENT;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open");
	CHECK(strstr(t_captured, "/dev/kfd") != NULL);
	CHECK_CALL(xs_cwsr_kfd_version(&major, &minor), kXSchedErrorNotSupported, 1);

	fake_reset(1);
	F.open_result = -EACCES;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK(strstr(t_captured, "permission") != NULL);
	CHECK_CLEAN();
	return 0;
}

static int test_old_kernel(void)
{
	xs_cwsr_queue *q = (xs_cwsr_queue *)&q;

	/* Debian 12's Linux 6.1: KFD 1.11, no DBG_TRAP: never issue it. */
	fake_reset(1);
	F.minor = 11;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version close");
	CHECK(strstr(t_captured, "1.11") != NULL);
	CHECK_CLEAN();

	trace_clear();
	CHECK_CALL(xs_cwsr_attach(&q, F.q[0].ring), kXSchedErrorNotSupported, 1);
	CHECK(q == NULL);
	CHECK_TRACE("open version close");

	/* An unknown major version is not trusted either. */
	fake_reset(1);
	F.major = 2;
	F.minor = 0;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version close");

	/* GET_VERSION itself failing. */
	fake_reset(1);
	F.version_err = -EINVAL;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version close");

	/* Version says 1.13 but DBG_TRAP is refused: -ENOTTY (no such ioctl)
	 * and -EINVAL (no hardware scheduling, or a driver without it). */
	fake_reset(1);
	F.enable_err = -ENOTTY;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable close");
	CHECK(strstr(t_captured, "ENOTTY") != NULL);

	fake_reset(1);
	F.enable_err = -EINVAL;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable close");
	CHECK(strstr(t_captured, "EINVAL") != NULL);
	CHECK_CLEAN();

	/* Exactly 1.13 is enough. */
	fake_reset(1);
	F.minor = 13;
	CHECK_CALL(xs_cwsr_probe(), kXSchedSuccess, 0);
	CHECK_CLEAN();
	return 0;
}

static int test_debugger_attached(void)
{
	xs_cwsr_queue *q = NULL;

	/* rocgdb (or the runtime's core dump) holds the trap: ENABLE gives
	 * -EALREADY, and we must not DISABLE someone else's session. */
	fake_reset(1);
	F.debugger_attached = true;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable close");
	CHECK(strstr(t_captured, "EALREADY") != NULL);
	trace_clear();
	CHECK_CALL(xs_cwsr_attach(&q, F.q[0].ring), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable close");
	CHECK(q == NULL);
	CHECK_EQ(F.opens, F.closes);
	return 0;
}

static int test_runtime_not_debug_enabled(void)
{
	xs_cwsr_queue *q = NULL;

	/* ENABLE works, but the runtime never enabled its debug support: KFD
	 * would answer SUSPEND with -EPERM, so Lv3 is refused up front. */
	fake_reset(1);
	F.runtime_state = XS_KFD_RUNTIME_STATE_DISABLED;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable disable close");
	CHECK(strstr(t_captured, "runtime_state 0") != NULL);
	CHECK_CLEAN();

	trace_clear();
	CHECK_CALL(xs_cwsr_attach(&q, F.q[0].ring), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable disable close");
	CHECK(q == NULL);
	CHECK_CLEAN();

	/* The runtime state changing under us: SUSPEND gives -EPERM. */
	fake_reset(1);
	CHECK_CALL(xs_cwsr_attach(&q, F.q[0].ring), kXSchedSuccess, 0);
	F.runtime_state = XS_KFD_RUNTIME_STATE_DISABLED;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend(q), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("suspend[3]");
	CHECK(!xs_cwsr_is_suspended(q));
	CHECK_EQ(fake_suspended_count(), 0);
	CHECK_VOID_CALL(xs_cwsr_detach(q), 0);
	CHECK_CLEAN();
	return 0;
}

static int test_attach_suspend_resume_detach(void)
{
	xs_cwsr_queue *q = NULL;

	fake_reset(2);
	CHECK_CALL(xs_cwsr_attach(&q, F.q[1].ring), kXSchedSuccess, 0);
	CHECK(q != NULL);
	CHECK_TRACE("open version enable snapshot");
	CHECK_EQ(xs_cwsr_queue_id(q), 5);
	CHECK_EQ(F.last_snapshot.pid, getpid());
	CHECK_EQ(F.last_snapshot.queue_snapshot.exception_mask, 1ull << 30);
	CHECK_EQ(F.last_snapshot.queue_snapshot.entry_size, 64);
	CHECK(F.last_snapshot.queue_snapshot.num_queues >= 2);
	CHECK(F.enabled);
	/* The new-queue state is cleared, or KFD would refuse the suspend. */
	CHECK(!F.q[1].is_new);

	trace_clear();
	CHECK_CALL(xs_cwsr_suspend(q), kXSchedSuccess, 0);
	CHECK_TRACE("suspend[5]");
	CHECK_EQ(F.last_suspend.pid, getpid());
	CHECK_EQ(F.last_suspend.op, XS_KFD_DBG_TRAP_SUSPEND_QUEUES);
	CHECK_EQ(F.last_suspend.suspend_queues.num_queues, 1);
	CHECK_EQ(F.last_suspend.suspend_queues.grace_period, 0);
	CHECK_EQ(F.last_suspend.suspend_queues.exception_mask, 0);
	CHECK(F.q[1].suspended);
	CHECK(!F.q[0].suspended);
	CHECK(xs_cwsr_is_suspended(q));

	/* Idempotent: no second ioctl. */
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend(q), kXSchedSuccess, 0);
	CHECK_TRACE("");

	CHECK_CALL(xs_cwsr_resume(q), kXSchedSuccess, 0);
	CHECK_TRACE("resume[5]");
	CHECK_EQ(F.last_resume.pid, getpid());
	CHECK_EQ(F.last_resume.op, XS_KFD_DBG_TRAP_RESUME_QUEUES);
	CHECK_EQ(F.last_resume.resume_queues.num_queues, 1);
	CHECK(!F.q[1].suspended);
	CHECK(!xs_cwsr_is_suspended(q));
	trace_clear();
	CHECK_CALL(xs_cwsr_resume(q), kXSchedSuccess, 0);
	CHECK_TRACE("");

	/* Detach of a suspended queue resumes it before DISABLE. */
	CHECK_CALL(xs_cwsr_suspend(q), kXSchedSuccess, 0);
	trace_clear();
	CHECK_VOID_CALL(xs_cwsr_detach(q), 0);
	CHECK_TRACE("resume[5] disable close");
	CHECK_CLEAN();

	/* detach(NULL) is a no-op. */
	trace_clear();
	CHECK_VOID_CALL(xs_cwsr_detach(NULL), 0);
	CHECK_TRACE("");
	return 0;
}

static int test_refcount_and_batches(void)
{
	xs_cwsr_queue *a = NULL, *b = NULL, *both[2];

	fake_reset(3);
	CHECK_CALL(xs_cwsr_attach(&a, F.q[0].ring), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_attach(&b, F.q[2].ring), kXSchedSuccess, 0);
	/* One open and one ENABLE for both; the second attach only snapshots. */
	CHECK_TRACE("open version enable snapshot snapshot");
	CHECK_EQ(xs_cwsr_queue_id(a), 3);
	CHECK_EQ(xs_cwsr_queue_id(b), 7);

	/* A probe while queues are attached changes nothing. */
	trace_clear();
	CHECK_CALL(xs_cwsr_probe(), kXSchedSuccess, 0);
	CHECK_TRACE("");

	both[0] = a;
	both[1] = b;
	CHECK_CALL(xs_cwsr_suspend_many(both, 2), kXSchedSuccess, 0);
	CHECK_TRACE("suspend[3,7]");
	CHECK_EQ(F.last_suspend.suspend_queues.num_queues, 2);
	CHECK_EQ(F.last_suspend.suspend_queues.grace_period, 0);
	CHECK_EQ(fake_suspended_count(), 2);

	/* Only the running ones are sent. */
	trace_clear();
	CHECK_CALL(xs_cwsr_resume(a), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_suspend_many(both, 2), kXSchedSuccess, 0);
	CHECK_TRACE("resume[3] suspend[3]");
	trace_clear();
	CHECK_CALL(xs_cwsr_resume_many(both, 2), kXSchedSuccess, 0);
	CHECK_TRACE("resume[3,7]");
	CHECK_EQ(fake_suspended_count(), 0);

	/* Bad batches are refused before any ioctl. */
	trace_clear();
	both[1] = a;
	CHECK_CALL(xs_cwsr_suspend_many(both, 2), kXSchedErrorInvalidValue, 0);
	both[1] = NULL;
	CHECK_CALL(xs_cwsr_suspend_many(both, 2), kXSchedErrorInvalidValue, 0);
	CHECK_CALL(xs_cwsr_resume_many(NULL, 1), kXSchedErrorInvalidValue, 0);
	CHECK_CALL(xs_cwsr_suspend_many(NULL, 0), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_suspend(NULL), kXSchedErrorInvalidValue, 0);
	CHECK_CALL(xs_cwsr_resume(NULL), kXSchedErrorInvalidValue, 0);
	CHECK_TRACE("");

	/* DISABLE only after the last detach. */
	CHECK_CALL(xs_cwsr_suspend(b), kXSchedSuccess, 0);
	trace_clear();
	CHECK_VOID_CALL(xs_cwsr_detach(a), 0);
	CHECK_TRACE("");
	CHECK(F.enabled);
	CHECK_VOID_CALL(xs_cwsr_detach(b), 0);
	CHECK_TRACE("resume[7] disable close");
	CHECK_CLEAN();

	/* A new attach after that enables again. */
	trace_clear();
	CHECK_CALL(xs_cwsr_attach(&a, F.q[1].ring), kXSchedSuccess, 0);
	CHECK_TRACE("open version enable snapshot");
	xs_cwsr_detach(a);
	CHECK_CLEAN();
	return 0;
}

static int test_attach_errors(void)
{
	xs_cwsr_queue *q = (xs_cwsr_queue *)&q, *q2 = NULL;

	fake_reset(2);
	CHECK_CALL(xs_cwsr_attach(NULL, F.q[0].ring), kXSchedErrorInvalidValue, 0);
	CHECK_CALL(xs_cwsr_attach(&q, 0), kXSchedErrorInvalidValue, 1);
	CHECK(q == NULL);
	CHECK_TRACE("");

	/* Queue not found: everything is undone. */
	q = (xs_cwsr_queue *)&q;
	CHECK_CALL(xs_cwsr_attach(&q, 0x999000), kXSchedErrorNotFound, 1);
	CHECK(q == NULL);
	CHECK_TRACE("open version enable snapshot disable close");
	CHECK(strstr(t_captured, "0x999000") != NULL);
	CHECK_CLEAN();

	/* An SDMA queue cannot be preempted this way. */
	fake_reset(2);
	F.q[1].type = XS_KFD_QUEUE_TYPE_SDMA;
	CHECK_CALL(xs_cwsr_attach(&q, F.q[1].ring), kXSchedErrorNotSupported, 1);
	CHECK(q == NULL);
	CHECK_CLEAN();

	/* The snapshot failing. */
	fake_reset(2);
	F.snapshot_err = -EIO;
	CHECK_CALL(xs_cwsr_attach(&q, F.q[1].ring), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable snapshot disable close");
	CHECK_CLEAN();

	/* The same hardware queue twice (streams sharing an HSA queue). */
	fake_reset(2);
	CHECK_CALL(xs_cwsr_attach(&q, F.q[0].ring), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_attach(&q2, F.q[0].ring), kXSchedErrorNotAllowed, 1);
	CHECK(q2 == NULL);
	CHECK(F.enabled); /* the first attach still holds the session */
	CHECK_CALL(xs_cwsr_suspend(q), kXSchedSuccess, 0);
	xs_cwsr_detach(q);
	CHECK_CLEAN();
	return 0;
}

static int test_snapshot_growth(void)
{
	xs_cwsr_queue *q = NULL, *all[MAX_FAKE_QUEUES];
	xs_cwsr_queue_info info[4];
	size_t count = 0, i;

	/* More queues than the first buffer holds: ask again with room. */
	fake_reset(MAX_FAKE_QUEUES);
	CHECK_CALL(xs_cwsr_attach(&q, F.q[MAX_FAKE_QUEUES - 1].ring), kXSchedSuccess, 0);
	CHECK_TRACE("open version enable snapshot snapshot");
	CHECK_EQ(xs_cwsr_queue_id(q), 3 + 2 * (MAX_FAKE_QUEUES - 1));
	CHECK(!F.q[MAX_FAKE_QUEUES - 1].is_new);
	CHECK_CALL(xs_cwsr_suspend(q), kXSchedSuccess, 0);
	xs_cwsr_detach(q);
	CHECK_CLEAN();

	/* A batch larger than the on-stack arrays: still one ioctl each way. */
	for (i = 0; i < MAX_FAKE_QUEUES; i++)
		CHECK_CALL(xs_cwsr_attach(&all[i], F.q[i].ring), kXSchedSuccess, 0);
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend_many(all, MAX_FAKE_QUEUES), kXSchedSuccess, 0);
	CHECK_EQ(F.last_suspend.suspend_queues.num_queues, MAX_FAKE_QUEUES);
	CHECK_EQ(fake_suspended_count(), MAX_FAKE_QUEUES);
	F.q[MAX_FAKE_QUEUES - 1].resume_status = ERR_BIT;
	CHECK_CALL(xs_cwsr_resume_many(all, MAX_FAKE_QUEUES), kXSchedErrorHardware, 1);
	CHECK_EQ(fake_suspended_count(), 1);
	CHECK(xs_cwsr_is_suspended(all[MAX_FAKE_QUEUES - 1]));
	F.q[MAX_FAKE_QUEUES - 1].resume_status = 0;
	CHECK_CALL(xs_cwsr_resume_many(all, MAX_FAKE_QUEUES), kXSchedSuccess, 0);
	CHECK_EQ(F.last_resume.resume_queues.num_queues, 1);
	CHECK(strncmp(F.trace, "suspend[3,5,7,", 14) == 0);
	for (i = 0; i < MAX_FAKE_QUEUES; i++)
		xs_cwsr_detach(all[i]);
	CHECK_CLEAN();

	/* Listing clears nothing and reports the full count. */
	fake_reset(6);
	trace_clear();
	CHECK_CALL(xs_cwsr_list_queues(info, 4, &count), kXSchedSuccess, 0);
	CHECK_TRACE("open version enable snapshot disable close");
	CHECK_EQ(count, 6);
	CHECK_EQ(F.last_snapshot.queue_snapshot.exception_mask, 0);
	CHECK(F.q[0].is_new);
	CHECK_EQ(info[2].queue_id, 7);
	CHECK_EQ(info[2].ring_base_address, 0x30000);
	CHECK_EQ(info[2].gpu_id, 0x1234);
	CHECK_EQ(info[2].ring_size, 4096);
	CHECK_EQ(info[2].queue_type, XS_KFD_QUEUE_TYPE_COMPUTE_AQL);
	CHECK_CALL(xs_cwsr_list_queues(NULL, 0, &count), kXSchedSuccess, 0);
	CHECK_EQ(count, 6);
	CHECK_CALL(xs_cwsr_list_queues(NULL, 1, &count), kXSchedErrorInvalidValue, 0);
	CHECK_CLEAN();
	return 0;
}

static int test_new_queue_refused(void)
{
	xs_cwsr_queue *a = NULL, *b = NULL, *both[2];

	/* Queue 5 appears after the attach snapshot of queue 3 ... */
	fake_reset(1);
	CHECK_CALL(xs_cwsr_attach(&a, F.q[0].ring), kXSchedSuccess, 0);
	F.nq = 2;
	F.q[1].ring = 0x20000;
	F.q[1].id = 5;
	F.q[1].type = XS_KFD_QUEUE_TYPE_COMPUTE_AQL;
	F.q[1].is_new = true;
	/* ... and its own attach clears its new state, so both suspend. */
	CHECK_CALL(xs_cwsr_attach(&b, 0x20000), kXSchedSuccess, 0);
	both[0] = a;
	both[1] = b;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend_many(both, 2), kXSchedSuccess, 0);
	CHECK_TRACE("suspend[3,5]");
	xs_cwsr_detach(b);
	xs_cwsr_detach(a);
	CHECK_CLEAN();
	return 0;
}

static int test_partial_suspend(void)
{
	xs_cwsr_queue *q[3] = {NULL, NULL, NULL};
	size_t i;

	/* Queue 7 refused (invalid): 3 and 5 were suspended and must be
	 * resumed again, in the same call. */
	fake_reset(3);
	for (i = 0; i < 3; i++)
		CHECK_CALL(xs_cwsr_attach(&q[i], F.q[i].ring), kXSchedSuccess, 0);
	F.q[2].suspend_status = INV_BIT;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend_many(q, 3), kXSchedErrorHardware, 1);
	CHECK_TRACE("suspend[3,5,7] resume[3,5]");
	CHECK_EQ(F.last_resume.resume_queues.num_queues, 2);
	CHECK(strstr(t_captured, "queue 7") != NULL);
	CHECK_EQ(fake_suspended_count(), 0);
	for (i = 0; i < 3; i++)
		CHECK(!xs_cwsr_is_suspended(q[i]));

	/* Queue 5 hits a hardware error after KFD marked it suspended: it is
	 * resumed too. */
	F.q[2].suspend_status = 0;
	F.q[1].suspend_status = ERR_BIT;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend_many(q, 3), kXSchedErrorHardware, 1);
	CHECK_TRACE("suspend[3,5,7] resume[3,5,7]");
	CHECK(strstr(t_captured, "hardware-error") != NULL);
	CHECK_EQ(fake_suspended_count(), 0);

	/* Clean entries but a short count: undo all of them. */
	F.q[1].suspend_status = 0;
	F.suspend_ret_override = 2;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend_many(q, 3), kXSchedErrorHardware, 1);
	CHECK_TRACE("suspend[3,5,7] resume[3,5,7]");
	CHECK_EQ(fake_suspended_count(), 0);
	F.suspend_ret_override = -1;

	/* Nothing suspended at all (single queue refused): nothing to undo. */
	F.q[0].suspend_status = INV_BIT;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend(q[0]), kXSchedErrorHardware, 1);
	CHECK_TRACE("suspend[3]");
	CHECK(!xs_cwsr_is_suspended(q[0]));
	F.q[0].suspend_status = 0;

	/* The rollback itself failing: the queues stay marked suspended, and
	 * the detaches (finally DISABLE) leave nothing suspended. */
	F.q[2].suspend_status = INV_BIT;
	F.q[0].resume_status = ERR_BIT;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend_many(q, 3), kXSchedErrorHardware, 1);
	CHECK_TRACE("suspend[3,5,7] resume[3,5]");
	CHECK(xs_cwsr_is_suspended(q[0]));
	CHECK(!xs_cwsr_is_suspended(q[1]));
	CHECK(!xs_cwsr_is_suspended(q[2]));
	CHECK(F.q[0].suspended);
	trace_clear();
	CHECK_VOID_CALL(xs_cwsr_detach(q[1]), 0);
	CHECK_VOID_CALL(xs_cwsr_detach(q[2]), 0);
	CHECK_TRACE("");
	/* Resume still fails: one line for the failure, none more (last one). */
	CHECK_VOID_CALL(xs_cwsr_detach(q[0]), 1);
	CHECK_TRACE("resume[3] disable close");
	CHECK_CLEAN();
	return 0;
}

static int test_runtime_failures(void)
{
	xs_cwsr_queue *a = NULL, *b = NULL;

	fake_reset(2);
	CHECK_CALL(xs_cwsr_attach(&a, F.q[0].ring), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_attach(&b, F.q[1].ring), kXSchedSuccess, 0);

	/* SUSPEND failing outright: nothing suspended, nothing to undo. */
	F.suspend_err = -EIO;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend(a), kXSchedErrorHardware, 1);
	CHECK_TRACE("suspend[3]");
	CHECK(!xs_cwsr_is_suspended(a));
	F.suspend_err = 0;

	/* RESUME failing: the queue stays suspended; a later resume works. */
	CHECK_CALL(xs_cwsr_suspend(a), kXSchedSuccess, 0);
	F.resume_err = -EIO;
	trace_clear();
	CHECK_CALL(xs_cwsr_resume(a), kXSchedErrorHardware, 1);
	CHECK_TRACE("resume[3]");
	CHECK(xs_cwsr_is_suspended(a));
	CHECK(F.q[0].suspended);
	F.resume_err = 0;
	CHECK_CALL(xs_cwsr_resume(a), kXSchedSuccess, 0);
	CHECK(!F.q[0].suspended);

	/* RESUME reporting a per-queue hardware error. */
	CHECK_CALL(xs_cwsr_suspend(a), kXSchedSuccess, 0);
	F.q[0].resume_status = ERR_BIT;
	CHECK_CALL(xs_cwsr_resume(a), kXSchedErrorHardware, 1);
	CHECK(xs_cwsr_is_suspended(a));

	/* Detach while resume keeps failing and another queue is attached:
	 * the failure and the consequence are logged. */
	trace_clear();
	CHECK_VOID_CALL(xs_cwsr_detach(a), 2);
	CHECK_TRACE("resume[3]");
	CHECK(F.enabled);
	/* The last detach disables, which makes KFD resume queue 3 too. */
	CHECK_VOID_CALL(xs_cwsr_detach(b), 0);
	CHECK_TRACE("resume[3] disable close");
	CHECK_CLEAN();
	return 0;
}

static int test_already_suspended_is_counted(void)
{
	xs_cwsr_queue *a = NULL;

	/* KFD suspends an already suspended queue again and counts it (kfd_debug.c): the
	 * backend takes that as a suspension. */
	fake_reset(1);
	CHECK_CALL(xs_cwsr_attach(&a, F.q[0].ring), kXSchedSuccess, 0);
	F.q[0].suspended = true;
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend(a), kXSchedSuccess, 0);
	CHECK_TRACE("suspend[3]");
	CHECK(xs_cwsr_is_suspended(a));
	/* A failed resume comes back with ERROR alone: the queue stays suspended. */
	F.q[0].resume_status = ERR_BIT;
	CHECK_CALL(xs_cwsr_resume(a), kXSchedErrorHardware, 1);
	CHECK(xs_cwsr_is_suspended(a) && F.q[0].suspended);
	F.q[0].resume_status = 0;
	CHECK_VOID_CALL(xs_cwsr_detach(a), 0);
	CHECK_CLEAN();
	return 0;
}

static int test_distinct_queues(void)
{
	/* cwsr-probe's check before it suspends one of its two streams: it skips (77) unless
	 * they are two compute queues of this process. */
	fake_reset(3);
	F.q[2].type = 1; /* SDMA */
	CHECK_CALL(xs_cwsr_distinct_queues(F.q[0].ring, F.q[1].ring), kXSchedSuccess, 0);
	CHECK_TRACE("open version enable snapshot disable close");
	CHECK_CALL(xs_cwsr_distinct_queues(F.q[0].ring, F.q[0].ring), kXSchedErrorNotAllowed, 1);
	CHECK_CALL(xs_cwsr_distinct_queues(F.q[0].ring, F.q[2].ring), kXSchedErrorNotFound, 1);
	CHECK_CALL(xs_cwsr_distinct_queues(F.q[0].ring, 0x1234000), kXSchedErrorNotFound, 1);
	CHECK_CALL(xs_cwsr_distinct_queues(0, F.q[0].ring), kXSchedErrorInvalidValue, 0);
	F.minor = 12; /* no debugger API: nothing but the version is asked */
	trace_clear();
	CHECK_CALL(xs_cwsr_distinct_queues(F.q[0].ring, F.q[1].ring), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version close");
	CHECK_CLEAN();
	return 0;
}

/* ---- exit (run in children: the release is for the rest of the process) ---- */

/* Stands for HIP's exit handler, registered when libamdhip64 loaded, before any queue was
 * attached: hsa_shut_down -> KFD runtime_disable, which waits for ever while the debug
 * trap is enabled (the fake returns -EDEADLK instead). */
static void hip_teardown(void)
{
	if (fake_runtime_disable() != 0)
		_exit(3); /* the real process would hang here */
	if (F.fd != -1 || F.opens != F.closes)
		_exit(4);
	if (fake_suspended_count() != 0)
		_exit(5);
	_exit(0);
}

static int exit_child(void)
{
	xs_cwsr_queue *a = NULL, *b = NULL;

	xs_log_set_level(XS_LOG_OFF);
	atexit(hip_teardown);
	fake_reset(2);
	if (xs_cwsr_attach(&a, F.q[0].ring) != kXSchedSuccess ||
	    xs_cwsr_attach(&b, F.q[1].ring) != kXSchedSuccess || xs_cwsr_suspend(a) != 0)
		return 2;
	exit(0); /* with both queues attached and one suspended */
}

static int release_child(void)
{
	xs_cwsr_queue *a = NULL, *b = NULL;

	fake_reset(2);
	CHECK_CALL(xs_cwsr_attach(&a, F.q[0].ring), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_attach(&b, F.q[1].ring), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_suspend(a), kXSchedSuccess, 0);
	trace_clear();
	CHECK_VOID_CALL(xs_cwsr_release_all(), 0);
	CHECK_TRACE("disable close");
	CHECK(!xs_cwsr_is_suspended(a) && fake_suspended_count() == 0);
	CHECK_EQ(fake_runtime_disable(), 0);
	trace_clear();
	CHECK_CALL(xs_cwsr_suspend(a), kXSchedErrorNotSupported, 1);
	CHECK_CALL(xs_cwsr_resume(a), kXSchedSuccess, 0);
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_VOID_CALL(xs_cwsr_detach(a), 0);
	CHECK_VOID_CALL(xs_cwsr_detach(b), 0);
	CHECK_VOID_CALL(xs_cwsr_release_all(), 0);
	CHECK_TRACE("");
	CHECK_CLEAN();
	return 0;
}

static int run_child(int (*fn)(void), const char *what)
{
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		FAIL("fork: %s", strerror(errno));
	if (pid == 0)
		_exit(fn());
	if (waitpid(pid, &status, 0) != pid)
		FAIL("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		FAIL("%s: child status %d (3: the runtime's teardown would wait for ever; 4: "
		     "/dev/kfd left open; 5: a queue left suspended)",
		     what, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

static int test_exit_releases_trap(void)
{
	/* First test of the program: no queue was attached before the fork, so the
	 * backend's exit handler is registered in the child after hip_teardown's, as in a
	 * HIP program, and must run before it. */
	if (run_child(exit_child, "exit with queues attached") != 0)
		return 1;
	return run_child(release_child, "release");
}

struct worker {
	xs_cwsr_queue *q;
	int failures;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int i;

	for (i = 0; i < 200; i++) {
		if (xs_cwsr_suspend(w->q) != kXSchedSuccess || !xs_cwsr_is_suspended(w->q))
			w->failures++;
		if (xs_cwsr_resume(w->q) != kXSchedSuccess || xs_cwsr_is_suspended(w->q))
			w->failures++;
	}
	return NULL;
}

static int test_threads(void)
{
	struct worker w[4];
	pthread_t t[4];
	int i;

	/* Four threads driving their own queues: the backend's lock keeps the
	 * fake KFD (which has none) consistent. */
	fake_reset(4);
	memset(w, 0, sizeof(w));
	for (i = 0; i < 4; i++)
		CHECK_CALL(xs_cwsr_attach(&w[i].q, F.q[i].ring), kXSchedSuccess, 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	for (i = 0; i < 4; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	for (i = 0; i < 4; i++) {
		CHECK_EQ(w[i].failures, 0);
		xs_cwsr_detach(w[i].q);
	}
	CHECK_CLEAN();
	return 0;
}

static int test_real_syscalls_without_kfd(void)
{
	/* With the real system calls: this machine has no /dev/kfd (if it
	 * does, the result depends on the kernel and is not checked). */
	xs_cwsr_set_sys(NULL);
	if (access("/dev/kfd", F_OK) != 0)
		CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	xs_cwsr_set_sys(&fake_sys);
	return 0;
}

int main(void)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} tests[] = {
	    {"exit_releases_trap", test_exit_releases_trap},
	    {"request_numbers", test_request_numbers},
	    {"probe_ok", test_probe_ok},
	    {"no_device", test_no_device},
	    {"old_kernel", test_old_kernel},
	    {"debugger_attached", test_debugger_attached},
	    {"runtime_not_debug_enabled", test_runtime_not_debug_enabled},
	    {"attach_suspend_resume_detach", test_attach_suspend_resume_detach},
	    {"refcount_and_batches", test_refcount_and_batches},
	    {"attach_errors", test_attach_errors},
	    {"snapshot_growth", test_snapshot_growth},
	    {"new_queue_refused", test_new_queue_refused},
	    {"partial_suspend", test_partial_suspend},
	    {"runtime_failures", test_runtime_failures},
	    {"already_suspended_is_counted", test_already_suspended_is_counted},
	    {"distinct_queues", test_distinct_queues},
	    {"threads", test_threads},
	    {"real_syscalls_without_kfd", test_real_syscalls_without_kfd},
	};
	size_t i;

	/* Warnings and errors are what the checks count. */
	xs_log_set_level(XS_LOG_WARN);
	xs_cwsr_set_sys(&fake_sys);
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		if (tests[i].fn() != 0) {
			printf("FAIL %s\n", tests[i].name);
			return 1;
		}
		printf("ok   %s\n", tests[i].name);
	}
	xs_cwsr_set_sys(NULL);
	return 0;
}
