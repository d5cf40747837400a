/* Unit test of the Lv3 (CWSR) backend against a fake KFD.
 *
 * The fake sits behind xs_kfd_sys and behaves like the upstream kernel where
 * it matters: it accepts only the two request numbers (checked against their
 * literal values), refuses every op but ENABLE until the trap is enabled,
 * refuses SUSPEND/RESUME with -EPERM unless the runtime is debug-enabled,
 * refuses to suspend a queue still flagged new, ORs status bits into the
 * queue id array, and resumes everything on DISABLE. Each test checks the
 * exact call sequence, the arguments, the result, the number of log lines,
 * and that no queue is left suspended and no fd left open.
 *
 * Exit status: 0 when every check passes, 1 at the first failed check.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "preempt/cwsr.h"
#include "preempt/kfd_uapi.h"

/* Upstream request numbers, written out so that a wrong macro is caught. */
#if defined(__x86_64__) || defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64)
#define REQ_GET_VERSION 0x80084b01ul
#define REQ_DBG_TRAP 0xc0204b26ul
#else
#define REQ_GET_VERSION ((unsigned long)XS_AMDKFD_IOC_GET_VERSION)
#define REQ_DBG_TRAP ((unsigned long)XS_AMDKFD_IOC_DBG_TRAP)
#endif

#define FAKE_FD 42
#define MAX_FAKE_QUEUES 24
#define ERR_BIT XS_KFD_DBG_QUEUE_ERROR_MASK
#define INV_BIT XS_KFD_DBG_QUEUE_INVALID_MASK

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

static struct fake {
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
	uint32_t enable_rinfo_size_in;
	int snapshots;
} F;

static void trace(const char *fmt, ...)
{
	size_t len = strlen(F.trace);
	va_list ap;

	if (len > 0 && len + 1 < sizeof(F.trace))
		F.trace[len++] = ' ';
	va_start(ap, fmt);
	vsnprintf(F.trace + len, sizeof(F.trace) - len, fmt, ap);
	va_end(ap);
}

static void trace_ids(const char *name, const uint32_t *ids, uint32_t n)
{
	char buf[256];
	size_t len = 0;
	uint32_t i;

	for (i = 0; i < n && len + 16 < sizeof(buf); i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%u", i ? "," : "", ids[i]);
	buf[len] = '\0';
	trace("%s[%s]", name, buf);
}

static struct fake_queue *find_queue(uint32_t id)
{
	size_t i;

	for (i = 0; i < F.nq; i++)
		if (F.q[i].id == id)
			return &F.q[i];
	return NULL;
}

static int fake_open(const char *path, int flags)
{
	trace("open");
	if (strcmp(path, "/dev/kfd") != 0)
		return -ENOENT;
	F.open_flags = flags;
	if (F.open_result < 0)
		return F.open_result;
	F.opens++;
	F.fd = F.open_result;
	return F.fd;
}

static int fake_close(int fd)
{
	trace("close");
	if (fd != F.fd) {
		F.bad_fds++;
		return -EBADF;
	}
	F.closes++;
	F.fd = -1;
	return 0;
}

static int fake_enable(struct xs_kfd_dbg_trap_args *a)
{
	struct xs_kfd_runtime_info *ri = (void *)(uintptr_t)a->enable.rinfo_ptr;

	trace("enable");
	F.last_enable = *a;
	F.enable_rinfo_size_in = a->enable.rinfo_size;
	if (F.enable_err)
		return F.enable_err;
	if (F.enabled || F.debugger_attached)
		return -EALREADY;
	if ((int)a->enable.dbg_fd != F.fd)
		return -EBADF;
	F.enabled = true;
	if (ri && a->enable.rinfo_size >= sizeof(*ri)) {
		memset(ri, 0, sizeof(*ri));
		ri->runtime_state = F.runtime_state;
	}
	a->enable.rinfo_size = sizeof(*ri);
	return 0;
}

static int fake_snapshot(struct xs_kfd_dbg_trap_args *a)
{
	char *buf = (char *)(uintptr_t)a->queue_snapshot.snapshot_buf_ptr;
	uint32_t cap = a->queue_snapshot.num_queues, stride = a->queue_snapshot.entry_size;
	size_t i;

	trace("snapshot");
	F.snapshots++;
	F.last_snapshot = *a;
	if (!F.enabled)
		return -EINVAL;
	if (F.snapshot_err)
		return F.snapshot_err;
	if (stride == 0)
		return -EINVAL;
	for (i = 0; i < F.nq && i < cap; i++) {
		struct xs_kfd_queue_snapshot_entry e;

		memset(&e, 0, sizeof(e));
		e.exception_status = F.q[i].is_new ? XS_KFD_EC_MASK(XS_KFD_EC_QUEUE_NEW) : 0;
		e.ring_base_address = F.q[i].ring;
		e.queue_id = F.q[i].id;
		e.gpu_id = F.q[i].gpu_id;
		e.ring_size = 4096;
		e.queue_type = F.q[i].type;
		memcpy(buf + i * stride, &e, stride < sizeof(e) ? stride : sizeof(e));
		if (a->queue_snapshot.exception_mask & XS_KFD_EC_MASK(XS_KFD_EC_QUEUE_NEW))
			F.q[i].is_new = false;
	}
	a->queue_snapshot.num_queues = (uint32_t)F.nq;
	if (a->queue_snapshot.entry_size > sizeof(struct xs_kfd_queue_snapshot_entry))
		a->queue_snapshot.entry_size = sizeof(struct xs_kfd_queue_snapshot_entry);
	return 0;
}

static int fake_suspend(struct xs_kfd_dbg_trap_args *a)
{
	uint32_t *ids = (uint32_t *)(uintptr_t)a->suspend_queues.queue_array_ptr;
	uint32_t i, n = a->suspend_queues.num_queues;
	int count = 0;

	trace_ids("suspend", ids, n);
	F.last_suspend = *a;
	if (!F.enabled)
		return -EINVAL;
	if (F.runtime_state != XS_KFD_RUNTIME_STATE_ENABLED)
		return -EPERM;
	if (F.suspend_err)
		return F.suspend_err;
	for (i = 0; i < n; i++) {
		struct fake_queue *q = find_queue(ids[i]);

		ids[i] |= INV_BIT;
		if (!q || q->is_new || q->suspended || (q->suspend_status & INV_BIT)) {
			ids[i] |= q ? q->suspend_status & ERR_BIT : 0;
			continue;
		}
		q->suspended = true; /* ERR_BIT alone: marked suspended, HW failed */
		ids[i] &= ~INV_BIT;
		ids[i] |= q->suspend_status;
		if (!q->suspend_status)
			count++;
	}
	return F.suspend_ret_override >= 0 ? F.suspend_ret_override : count;
}

static int fake_resume(struct xs_kfd_dbg_trap_args *a)
{
	uint32_t *ids = (uint32_t *)(uintptr_t)a->resume_queues.queue_array_ptr;
	uint32_t i, n = a->resume_queues.num_queues;
	int count = 0;

	trace_ids("resume", ids, n);
	F.last_resume = *a;
	if (!F.enabled)
		return -EINVAL;
	if (F.runtime_state != XS_KFD_RUNTIME_STATE_ENABLED)
		return -EPERM;
	if (F.resume_err)
		return F.resume_err;
	for (i = 0; i < n; i++) {
		struct fake_queue *q = find_queue(ids[i]);

		ids[i] |= INV_BIT;
		if (!q)
			continue;
		if (q->resume_status) {
			ids[i] |= q->resume_status;
			continue;
		}
		q->suspended = false;
		ids[i] &= ~INV_BIT;
		count++;
	}
	return count;
}

static int fake_ioctl(int fd, unsigned long request, void *arg)
{
	struct xs_kfd_dbg_trap_args *a = arg;
	size_t i;

	if (fd != F.fd || fd < 0) {
		trace("ioctl-bad-fd");
		F.bad_fds++;
		return -EBADF;
	}
	if (request == REQ_GET_VERSION) {
		struct xs_kfd_get_version_args *v = arg;

		trace("version");
		if (F.version_err)
			return F.version_err;
		v->major_version = F.major;
		v->minor_version = F.minor;
		return 0;
	}
	if (request != REQ_DBG_TRAP) {
		trace("bad-request-%#lx", request);
		F.bad_requests++;
		return -ENOTTY;
	}
	if (a->pid != (uint32_t)getpid()) {
		trace("bad-pid");
		F.bad_pids++;
		return -ESRCH;
	}
	switch (a->op) {
	case XS_KFD_DBG_TRAP_ENABLE:
		return fake_enable(a);
	case XS_KFD_DBG_TRAP_DISABLE:
		trace("disable");
		if (!F.enabled)
			return -EINVAL;
		F.enabled = false;
		for (i = 0; i < F.nq; i++)
			F.q[i].suspended = false; /* KFD resumes everything on disable */
		return 0;
	case XS_KFD_DBG_TRAP_GET_QUEUE_SNAPSHOT:
		return fake_snapshot(a);
	case XS_KFD_DBG_TRAP_SUSPEND_QUEUES:
		return fake_suspend(a);
	case XS_KFD_DBG_TRAP_RESUME_QUEUES:
		return fake_resume(a);
	default:
		trace("bad-op-%u", a->op);
		F.bad_ops++;
		return -EINVAL;
	}
}

static const xs_kfd_sys fake_sys = {
	.open = fake_open,
	.close = fake_close,
	.ioctl = fake_ioctl,
};

/* A machine that can do Lv3, with @n new AQL queues: ids 3, 5, 7, ...,
 * rings 0x10000, 0x20000, ... */
static void fake_reset(size_t n)
{
	size_t i;

	memset(&F, 0, sizeof(F));
	F.open_result = FAKE_FD;
	F.fd = -1;
	F.major = 1;
	F.minor = 15;
	F.runtime_state = XS_KFD_RUNTIME_STATE_ENABLED;
	F.suspend_ret_override = -1;
	F.nq = n;
	for (i = 0; i < n; i++) {
		F.q[i].ring = 0x10000ull * (i + 1);
		F.q[i].id = (uint32_t)(3 + 2 * i);
		F.q[i].gpu_id = 0x1234;
		F.q[i].type = XS_KFD_QUEUE_TYPE_COMPUTE_AQL;
		F.q[i].is_new = true;
	}
}

static void trace_clear(void)
{
	F.trace[0] = '\0';
}

static size_t fake_suspended_count(void)
{
	size_t i, n = 0;

	for (i = 0; i < F.nq; i++)
		n += F.q[i].suspended;
	return n;
}

/* ---- log capture: count the lines the backend prints ---- */

static int saved_stderr = -1;
static FILE *capture_file;
static char captured[4096];

static void capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	saved_stderr = dup(STDERR_FILENO);
	if (capture_file && saved_stderr >= 0)
		dup2(fileno(capture_file), STDERR_FILENO);
}

/* Returns the number of "xsched[cwsr]" lines printed since capture_begin(). */
static int capture_end(void)
{
	size_t len;
	int lines = 0;
	char *p;

	fflush(stderr);
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
	captured[0] = '\0';
	if (!capture_file)
		return -1;
	rewind(capture_file);
	len = fread(captured, 1, sizeof(captured) - 1, capture_file);
	captured[len] = '\0';
	fclose(capture_file);
	capture_file = NULL;
	for (p = captured; (p = strstr(p, "xsched[cwsr]")) != NULL; p++)
		lines++;
	return lines;
}

/* ---- checks ---- */

#define FAIL(...)                                                                          \
	do {                                                                               \
		if (saved_stderr >= 0)                                                     \
			capture_end();                                                     \
		printf("%s:%d: %s: ", __FILE__, __LINE__, __func__);                       \
		printf(__VA_ARGS__);                                                       \
		printf("\n  trace: %s\n  log: %s\n", F.trace, captured);                   \
		fflush(stdout);                                                            \
		return 1;                                                                  \
	} while (0)

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond))                                                               \
			FAIL("check failed: %s", #cond);                                   \
	} while (0)

#define CHECK_EQ(a, b)                                                                     \
	do {                                                                               \
		long long a_ = (long long)(a), b_ = (long long)(b);                        \
		if (a_ != b_)                                                              \
			FAIL("%s == %lld, expected %s == %lld", #a, a_, #b, b_);           \
	} while (0)

#define CHECK_TRACE(expected)                                                              \
	do {                                                                               \
		if (strcmp(F.trace, (expected)) != 0)                                      \
			FAIL("call sequence\n  got:      \"%s\"\n  expected: \"%s\"", F.trace, \
			     (expected));                                                  \
	} while (0)

/* Run @call with the log captured; check its result and that it printed
 * exactly @lines lines. */
#define CHECK_CALL(call, want, lines)                                                      \
	do {                                                                               \
		XResult r_;                                                                \
		int n_;                                                                    \
		capture_begin();                                                           \
		r_ = (call);                                                               \
		n_ = capture_end();                                                        \
		if (r_ != (want))                                                          \
			FAIL("%s returned %d, expected %s (%d)", #call, (int)r_, #want,    \
			     (int)(want));                                                 \
		if (n_ != (lines))                                                         \
			FAIL("%s printed %d log line(s), expected %d", #call, n_, (lines)); \
	} while (0)

#define CHECK_VOID_CALL(call, lines)                                                       \
	do {                                                                               \
		int n_;                                                                    \
		capture_begin();                                                           \
		call;                                                                      \
		n_ = capture_end();                                                        \
		if (n_ != (lines))                                                         \
			FAIL("%s printed %d log line(s), expected %d", #call, n_, (lines)); \
	} while (0)

/* Nothing open, nothing enabled, nothing suspended, no stray request. */
#define CHECK_CLEAN()                                                                      \
	do {                                                                               \
		CHECK_EQ(F.fd, -1);                                                        \
		CHECK_EQ(F.opens, F.closes);                                               \
		CHECK(!F.enabled);                                                         \
		CHECK_EQ(fake_suspended_count(), 0);                                       \
		CHECK_EQ(F.bad_requests, 0);                                               \
		CHECK_EQ(F.bad_pids, 0);                                                   \
		CHECK_EQ(F.bad_fds, 0);                                                    \
		CHECK_EQ(F.bad_ops, 0);                                                    \
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
	CHECK(strstr(captured, "/dev/kfd") != NULL);
	CHECK_CALL(xs_cwsr_kfd_version(&major, &minor), kXSchedErrorNotSupported, 1);

	fake_reset(1);
	F.open_result = -EACCES;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK(strstr(captured, "permission") != NULL);
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
	CHECK(strstr(captured, "1.11") != NULL);
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
	CHECK(strstr(captured, "ENOTTY") != NULL);

	fake_reset(1);
	F.enable_err = -EINVAL;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorNotSupported, 1);
	CHECK_TRACE("open version enable close");
	CHECK(strstr(captured, "EINVAL") != NULL);
	CHECK_CLEAN();

	/* Exactly 1.13 is enough. */
	fake_reset(1);
	F.minor = 13;
	CHECK_CALL(xs_cwsr_probe(), kXSchedErrorSuccess_placeholder, 0);
	CHECK_CLEAN();
	return 0;
}
