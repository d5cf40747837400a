/* Lv3 preemption through the KFD debugger API; see cwsr.h and doc/cwsr.md.
 *
 * Sequence: open /dev/kfd, GET_VERSION (>= 1.13), DBG_TRAP ENABLE for
 * pid = getpid() (the first attach), GET_QUEUE_SNAPSHOT (finds the queue by
 * its ring buffer and clears its "new queue" state), then SUSPEND_QUEUES /
 * RESUME_QUEUES as the scheduler asks, and DBG_TRAP DISABLE + close after the
 * last detach. No other ioctl is ever issued.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "preempt/cwsr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/log.h"
#include "core/thread.h"
#include "preempt/kfd_uapi.h"

#define TOPIC "cwsr"

/* Up to this many queues per batch without a heap allocation. */
#define STACK_BATCH 32

/* Snapshot entries must reach at least up to queue_type. */
#define SNAPSHOT_MIN_ENTRY (offsetof(struct xs_kfd_queue_snapshot_entry, queue_type) + 4)

#define QUEUE_STATUS_MASK (XS_KFD_DBG_QUEUE_ERROR_MASK | XS_KFD_DBG_QUEUE_INVALID_MASK)

/* Warnings and errors go through xs__cwsr_log(), which xs_cwsr_log_capture() can redirect. */
#define CWSR_WARN(...)  xs__cwsr_log(XS_LOG_WARN, __VA_ARGS__)
#define CWSR_ERROR(...) xs__cwsr_log(XS_LOG_ERROR, __VA_ARGS__)

struct xs_cwsr_queue {
	struct xs_cwsr_queue *next; /* in xs__k.attached_list */
	uint64_t ring_base_address;
	uint32_t queue_id;
	uint32_t gpu_id;
	bool suspended; /* suspended by us and not resumed since */
};

/* The calling thread's capture buffer (xs_cwsr_log_capture()); thread-local, so no lock. */
static _Thread_local char *xs__capture_buf;
static _Thread_local size_t xs__capture_cap;

/* Log one warning or error line under TOPIC, or append it to the capture buffer
 * ("; "-separated, truncated) while the calling thread captures. */
__attribute__((format(printf, 2, 3))) static void xs__cwsr_log(enum xs_log_level level,
							       const char *fmt, ...)
{
	char line[384];
	va_list ap;
	size_t len;

	if (!xs__capture_buf && !xs_log_enabled(level))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!xs__capture_buf) {
		xs_log_write(level, TOPIC, "%s", line);
		return;
	}
	len = strlen(xs__capture_buf);
	if (len > 0 && len + 2 < xs__capture_cap) {
		memcpy(xs__capture_buf + len, "; ", 3);
		len += 2;
	}
	if (len + 1 < xs__capture_cap)
		snprintf(xs__capture_buf + len, xs__capture_cap - len, "%s", line);
}

void xs_cwsr_log_capture(char *buf, size_t cap)
{
	if (buf && cap > 0) {
		buf[0] = '\0';
		xs__capture_buf = buf;
		xs__capture_cap = cap;
	} else {
		xs__capture_buf = NULL;
		xs__capture_cap = 0;
	}
}

static int xs__real_open(const char *path, int flags)
{
	int fd = open(path, flags);

	return fd < 0 ? -errno : fd;
}

static int xs__real_close(int fd)
{
	return close(fd) < 0 ? -errno : 0;
}

static int xs__real_ioctl(int fd, unsigned long request, void *arg)
{
	int r;

	do {
		r = ioctl(fd, request, arg);
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

static const xs_kfd_sys xs__real_sys = {
    .open = xs__real_open,
    .close = xs__real_close,
    .ioctl = xs__real_ioctl,
};

/* The process's KFD session, one struct. Its lock (`xs__k.lock` in the lock map, taken
 * under lv3.c's lock) guards every field: the syscall table, the KFD fd, the debug-trap
 * state and the list of attached queues (including each queue's suspended flag). It is held
 * across the ioctls, so that the kernel state and ours change together; every `*_locked`
 * function below asserts it. */
static struct xs__kfd {
	xs_mutex lock;
	const xs_kfd_sys *sys; /* the system calls: real, or a test's fake (xs_cwsr_set_sys) */
	int fd;                /* /dev/kfd, -1 = closed */
	bool trap_enabled;
	xs_cwsr_queue *attached_list;
	size_t n_attached;
	bool exit_registered; /* the exit handler is registered (once per process) */
	bool released;        /* xs_cwsr_release_all ran: nothing is enabled again */
} xs__k = {.lock = XS_MUTEX_INITIALIZER, .sys = &xs__real_sys, .fd = -1};

static const char *xs__errno_name(int err)
{
	switch (err) {
	case EPERM:
		return "EPERM";
	case ENOENT:
		return "ENOENT";
	case ESRCH:
		return "ESRCH";
	case ENXIO:
		return "ENXIO";
	case EBADF:
		return "EBADF";
	case ENOMEM:
		return "ENOMEM";
	case EACCES:
		return "EACCES";
	case EFAULT:
		return "EFAULT";
	case EBUSY:
		return "EBUSY";
	case ENODEV:
		return "ENODEV";
	case EINVAL:
		return "EINVAL";
	case ENOTTY:
		return "ENOTTY";
	case EALREADY:
		return "EALREADY";
	case EIO:
		return "EIO";
	case ETIME:
		return "ETIME";
	default:
		return "errno";
	}
}

static int xs__dbg_trap_locked(struct xs_kfd_dbg_trap_args *args, uint32_t op)
{
	XS_ASSERT_HELD(&xs__k.lock);
	args->pid = (uint32_t)getpid();
	args->op = op;
	return xs__k.sys->ioctl(xs__k.fd, XS_AMDKFD_IOC_DBG_TRAP, args);
}

static XResult xs__kfd_open_locked(void)
{
	XS_ASSERT_HELD(&xs__k.lock);
	int fd;

	if (xs__k.fd >= 0)
		return kXSchedSuccess;
	fd = xs__k.sys->open(XS_KFD_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		xs__k.fd = fd;
		return kXSchedSuccess;
	}
	if (fd == -ENOENT || fd == -ENODEV || fd == -ENXIO)
		CWSR_WARN("Lv3 unavailable: no %s (no AMD GPU, or the amdgpu driver is not loaded)",
			  XS_KFD_DEVICE_PATH);
	else if (fd == -EACCES || fd == -EPERM)
		CWSR_WARN("Lv3 unavailable: no permission to open %s (-%s; the user needs the "
			  "'render' or 'video' group)",
			  XS_KFD_DEVICE_PATH, xs__errno_name(-fd));
	else
		CWSR_WARN("Lv3 unavailable: cannot open %s (-%s, %d)", XS_KFD_DEVICE_PATH,
			  xs__errno_name(-fd), fd);
	return kXSchedErrorNotSupported;
}

static void xs__kfd_close_locked(void)
{
	XS_ASSERT_HELD(&xs__k.lock);
	int r;

	if (xs__k.fd < 0)
		return;
	r = xs__k.sys->close(xs__k.fd);
	if (r < 0)
		XS_DEBUG(TOPIC, "close(%s) failed (-%s)", XS_KFD_DEVICE_PATH, xs__errno_name(-r));
	xs__k.fd = -1;
}

/* Returns 0 or -errno; logs nothing. */
static int xs__kfd_get_version_locked(uint32_t *major, uint32_t *minor)
{
	XS_ASSERT_HELD(&xs__k.lock);
	struct xs_kfd_get_version_args args;
	int r;

	memset(&args, 0, sizeof(args));
	r = xs__k.sys->ioctl(xs__k.fd, XS_AMDKFD_IOC_GET_VERSION, &args);
	if (r < 0)
		return r;
	*major = args.major_version;
	*minor = args.minor_version;
	return 0;
}

static const char *xs__enable_failure_reason(int err)
{
	switch (err) {
	case EALREADY:
		return "this process is already debug-enabled (rocgdb attached, or the HSA "
		       "runtime writing a GPU core dump)";
	case ENOTTY:
		return "this KFD has no AMDKFD_IOC_DBG_TRAP (kernel too old)";
	case EINVAL:
		return "the driver refuses the debugger API: GPU hardware scheduling off "
		       "(amdgpu sched_policy=2), or, on kernels before the debugger API's "
		       "EALREADY, this process is already debug-enabled (rocgdb, a GPU core "
		       "dump)";
	case EPERM:
		return "the driver refuses to debug this process";
	case EBUSY:
		return "PC sampling is active, or GWS queues exist on a GPU whose debugger "
		       "cannot handle them";
	case ENODEV:
		return "a GPU of this process does not support the KFD debugger";
	case ESRCH:
		return "KFD does not know this process";
	case EBADF:
		return "the KFD fd belongs to another process (used after fork?)";
	default:
		return "unexpected error";
	}
}

/* kfd_ioctl.h: DEBUG_RUNTIME_STATE_DISABLED, _ENABLED, _ENABLED_BUSY, _ENABLED_ERROR. */
static const char *xs__runtime_state_name(uint32_t st)
{
	switch (st) {
	case 0:
		return "disabled: needs a ROCm runtime that calls RUNTIME_ENABLE (ROCr does at "
		       "hsa_init from KFD 1.13), debug-capable firmware, and the runtime "
		       "initialised before the first XQueue";
	case 2:
		return "enabled but busy: the runtime is being enabled or disabled; try again";
	case 3:
		return "enabled with an error: the trap handler or its memory could not be set "
		       "up";
	default:
		return "unknown state";
	}
}

static void xs__trap_disable_locked(void)
{
	XS_ASSERT_HELD(&xs__k.lock);
	struct xs_kfd_dbg_trap_args args;
	int r;

	if (!xs__k.trap_enabled)
		return;
	memset(&args, 0, sizeof(args));
	r = xs__dbg_trap_locked(&args, XS_KFD_DBG_TRAP_DISABLE);
	if (r < 0)
		CWSR_WARN("DBG_TRAP DISABLE failed (-%s, %d)", xs__errno_name(-r), r);
	xs__k.trap_enabled = false;
}

static void xs__cwsr_at_exit(void)
{
	xs_cwsr_release_all();
}

/* Whether KFD's ioctl version has the debugger API (1.13+); logs why not. */
static bool xs__kfd_version_ok_locked(void)
{
	XS_ASSERT_HELD(&xs__k.lock);
	uint32_t major = 0, minor = 0;
	int r = xs__kfd_get_version_locked(&major, &minor);
	if (r < 0) {
		CWSR_WARN("Lv3 unavailable: AMDKFD_IOC_GET_VERSION failed (-%s, %d)",
			  xs__errno_name(-r), r);
		return false;
	}
	if (major != XS_KFD_MAJOR_REQUIRED || minor < XS_KFD_MINOR_REQUIRED) {
		CWSR_WARN("Lv3 unavailable: KFD ioctl version %u.%u; the debugger API needs "
			  "%d.%d or later (Linux 6.5+, or a recent amdgpu-dkms driver)",
			  major, minor, XS_KFD_MAJOR_REQUIRED, XS_KFD_MINOR_REQUIRED);
		return false;
	}
	XS_DEBUG(TOPIC, "KFD %u.%u", major, minor);
	return true;
}

/* Enable the debug trap on the open /dev/kfd (into @rinfo: the runtime's state); logs
 * why not. */
static bool xs__trap_enable_locked(struct xs_kfd_runtime_info *rinfo)
{
	XS_ASSERT_HELD(&xs__k.lock);
	struct xs_kfd_dbg_trap_args args;
	memset(&args, 0, sizeof(args));
	memset(rinfo, 0, sizeof(*rinfo));
	args.enable.exception_mask = 0;
	args.enable.rinfo_ptr = (uint64_t)(uintptr_t)rinfo;
	args.enable.rinfo_size = sizeof(*rinfo);
	/* KFD needs a valid fd to report exceptions on; with an empty exception
	 * mask it never writes to it. libhsakmt passes the KFD fd itself too. */
	args.enable.dbg_fd = (uint32_t)xs__k.fd;
	int r = xs__dbg_trap_locked(&args, XS_KFD_DBG_TRAP_ENABLE);
	if (r < 0) {
		CWSR_WARN("Lv3 unavailable: DBG_TRAP ENABLE failed (-%s, %d): %s",
			  xs__errno_name(-r), r, xs__enable_failure_reason(-r));
		return false;
	}
	xs__k.trap_enabled = true;
	/* KFD's runtime_disable, which the HSA runtime calls at its teardown (hsa_shut_down
	 * from HIP's exit handler), waits for ever while the debug trap is enabled. Handlers
	 * run in reverse order of registration and HIP registered its own when it loaded,
	 * before any queue could be attached: ours runs first. */
	if (!xs__k.exit_registered && atexit(xs__cwsr_at_exit) == 0)
		xs__k.exit_registered = true;
	return true;
}

/* Make sure /dev/kfd is open and the debug trap enabled for this process.
 * On failure everything opened here is undone and one line is logged. */
static XResult xs__session_get_locked(void)
{
	XS_ASSERT_HELD(&xs__k.lock);
	struct xs_kfd_runtime_info rinfo;
	if (xs__k.trap_enabled)
		return kXSchedSuccess;
	if (xs__k.released) {
		CWSR_WARN("Lv3 unavailable: the process is exiting (KFD session released)");
		return kXSchedErrorNotSupported;
	}
	XResult res = xs__kfd_open_locked();
	if (res != kXSchedSuccess)
		return res;
	if (!xs__kfd_version_ok_locked() || !xs__trap_enable_locked(&rinfo))
		goto fail;
	/* SUSPEND/RESUME need the runtime's debug support (-EPERM otherwise);
	 * ROCr turns it on at start-up when the kernel and firmware allow it. */
	if (rinfo.runtime_state != XS_KFD_RUNTIME_STATE_ENABLED) {
		CWSR_WARN("Lv3 unavailable: the HSA runtime has not enabled KFD debug support "
			  "(runtime_state %u: %s)",
			  rinfo.runtime_state, xs__runtime_state_name(rinfo.runtime_state));
		xs__trap_disable_locked();
		goto fail;
	}
	XS_DEBUG(TOPIC, "debug trap enabled for pid %d", (int)getpid());
	return kXSchedSuccess;

fail:
	xs__kfd_close_locked();
	return kXSchedErrorNotSupported;
}

/* Undo xs__session_get_locked() once no queue needs the debug trap. */
static void xs__session_put_locked(void)
{
	XS_ASSERT_HELD(&xs__k.lock);
	if (xs__k.n_attached > 0)
		return;
	xs__trap_disable_locked();
	xs__kfd_close_locked();
}

/* Read the queue list, clearing @clear_mask on every queue reported.
 * On success *@out (free() it) holds *@n entries. Logs one line on failure. */
static XResult xs__snapshot_locked(uint64_t clear_mask, struct xs_kfd_queue_snapshot_entry **out,
				   size_t *n)
{
	XS_ASSERT_HELD(&xs__k.lock);
	struct xs_kfd_queue_snapshot_entry *buf;
	struct xs_kfd_dbg_trap_args args;
	size_t cap = 16;
	int tries, r;

	for (tries = 0; tries < 4; tries++) {
		buf = calloc(cap, sizeof(*buf));
		if (!buf) {
			CWSR_ERROR("out of memory for a queue snapshot of %zu entries", cap);
			return kXSchedErrorUnknown;
		}
		memset(&args, 0, sizeof(args));
		args.queue_snapshot.exception_mask = clear_mask;
		args.queue_snapshot.snapshot_buf_ptr = (uint64_t)(uintptr_t)buf;
		args.queue_snapshot.num_queues = (uint32_t)cap;
		args.queue_snapshot.entry_size = sizeof(*buf);
		r = xs__dbg_trap_locked(&args, XS_KFD_DBG_TRAP_GET_QUEUE_SNAPSHOT);
		if (r < 0) {
			free(buf);
			CWSR_WARN("Lv3 unavailable: DBG_TRAP GET_QUEUE_SNAPSHOT failed (-%s, %d)",
				  xs__errno_name(-r), r);
			return kXSchedErrorNotSupported;
		}
		if (args.queue_snapshot.num_queues <= cap) {
			if (args.queue_snapshot.num_queues > 0 &&
			    args.queue_snapshot.entry_size < SNAPSHOT_MIN_ENTRY) {
				free(buf);
				CWSR_ERROR("KFD queue snapshot entries hold %u bytes, need %zu",
					   args.queue_snapshot.entry_size, SNAPSHOT_MIN_ENTRY);
				return kXSchedErrorNotSupported;
			}
			*out = buf;
			*n = args.queue_snapshot.num_queues;
			return kXSchedSuccess;
		}
		/* More queues than room: retry with enough (queues may come and go). */
		cap = (size_t)args.queue_snapshot.num_queues + 8;
		free(buf);
	}
	CWSR_ERROR("KFD queue snapshot: the queue count kept growing (%zu)", cap);
	return kXSchedErrorNotSupported;
}

static bool xs__is_compute_queue(uint32_t type)
{
	return type == XS_KFD_QUEUE_TYPE_COMPUTE || type == XS_KFD_QUEUE_TYPE_COMPUTE_AQL;
}

void xs_cwsr_set_sys(const xs_kfd_sys *sys)
{
	xs_mutex_lock(&xs__k.lock);
	xs__k.sys = sys ? sys : &xs__real_sys;
	xs_mutex_unlock(&xs__k.lock);
}

XResult xs_cwsr_kfd_version(uint32_t *major, uint32_t *minor)
{
	bool opened_here;
	XResult res;
	int r;

	if (!major || !minor)
		return kXSchedErrorInvalidValue;
	xs_mutex_lock(&xs__k.lock);
	opened_here = xs__k.fd < 0;
	res = xs__kfd_open_locked();
	if (res == kXSchedSuccess) {
		r = xs__kfd_get_version_locked(major, minor);
		if (r < 0) {
			CWSR_WARN("AMDKFD_IOC_GET_VERSION failed (-%s, %d)", xs__errno_name(-r), r);
			res = kXSchedErrorNotSupported;
		}
		if (opened_here)
			xs__kfd_close_locked();
	}
	xs_mutex_unlock(&xs__k.lock);
	return res;
}

XResult xs_cwsr_probe(void)
{
	XResult res;

	xs_mutex_lock(&xs__k.lock);
	res = xs__session_get_locked();
	if (res == kXSchedSuccess)
		xs__session_put_locked();
	xs_mutex_unlock(&xs__k.lock);
	return res;
}

/* A snapshot of this process's queues for a reader, with a session just for the call.
 * Caller holds xs__k.lock and frees *out (also on failure). */
static XResult xs__snapshot_once_locked(struct xs_kfd_queue_snapshot_entry **out, size_t *n)
{
	XS_ASSERT_HELD(&xs__k.lock);
	XResult res = xs__session_get_locked();
	if (res != kXSchedSuccess)
		return res;
	res = xs__snapshot_locked(0, out, n);
	xs__session_put_locked();
	return res;
}

XResult xs_cwsr_list_queues(xs_cwsr_queue_info *out, size_t cap, size_t *count)
{
	struct xs_kfd_queue_snapshot_entry *entries = NULL;
	size_t n = 0, i;
	XResult res;

	if (!count || (cap > 0 && !out))
		return kXSchedErrorInvalidValue;
	*count = 0;
	xs_mutex_lock(&xs__k.lock);
	res = xs__snapshot_once_locked(&entries, &n);
	xs_mutex_unlock(&xs__k.lock);
	if (res == kXSchedSuccess) {
		for (i = 0; i < n && i < cap; i++) {
			out[i].ring_base_address = entries[i].ring_base_address;
			out[i].queue_id = entries[i].queue_id;
			out[i].gpu_id = entries[i].gpu_id;
			out[i].ring_size = entries[i].ring_size;
			out[i].queue_type = entries[i].queue_type;
		}
		*count = n;
	}
	free(entries);
	return res;
}

/* The entry of @n that has ring buffer @ring, or NULL. */
static const struct xs_kfd_queue_snapshot_entry *
xs__find_ring(const struct xs_kfd_queue_snapshot_entry *entries, size_t n, uint64_t ring)
{
	for (size_t i = 0; i < n; i++)
		if (entries[i].ring_base_address == ring)
			return &entries[i];
	return NULL;
}

XResult xs_cwsr_distinct_queues(uint64_t ring_a, uint64_t ring_b)
{
	struct xs_kfd_queue_snapshot_entry *entries = NULL;
	const struct xs_kfd_queue_snapshot_entry *a, *b;
	size_t n = 0;
	XResult res;

	if (!ring_a || !ring_b)
		return kXSchedErrorInvalidValue;
	if (ring_a == ring_b) {
		CWSR_WARN("the two streams share one hardware queue (ring 0x%llx): suspending one "
			  "would stall the other",
			  (unsigned long long)ring_a);
		return kXSchedErrorNotAllowed;
	}
	xs_mutex_lock(&xs__k.lock);
	res = xs__snapshot_once_locked(&entries, &n);
	xs_mutex_unlock(&xs__k.lock);
	if (res == kXSchedSuccess) {
		a = xs__find_ring(entries, n, ring_a);
		b = xs__find_ring(entries, n, ring_b);
		bool ok_a = a && xs__is_compute_queue(a->queue_type);
		if (!ok_a || !b || !xs__is_compute_queue(b->queue_type)) {
			CWSR_WARN("no compute queue of this process has ring 0x%llx",
				  (unsigned long long)(ok_a ? ring_b : ring_a));
			res = kXSchedErrorNotFound;
		}
	}
	free(entries);
	return res;
}

/* The compute queue of @entries with ring buffer @ring, not attached yet, copied to *@e.
 * Logs why not. Caller holds xs__k.lock. */
static XResult xs__attach_find_locked(const struct xs_kfd_queue_snapshot_entry *entries, size_t n,
				      uint64_t ring, struct xs_kfd_queue_snapshot_entry *e)
{
	XS_ASSERT_HELD(&xs__k.lock);
	const struct xs_kfd_queue_snapshot_entry *found = xs__find_ring(entries, n, ring);
	if (!found) {
		CWSR_WARN("attach: none of this process's %zu KFD queues has ring buffer 0x%llx", n,
			  (unsigned long long)ring);
		return kXSchedErrorNotFound;
	}
	if (!xs__is_compute_queue(found->queue_type)) {
		CWSR_WARN("attach: KFD queue %u (ring 0x%llx) is not a compute queue (type %u)",
			  found->queue_id, (unsigned long long)ring, found->queue_type);
		return kXSchedErrorNotSupported;
	}
	for (const xs_cwsr_queue *q = xs__k.attached_list; q; q = q->next) {
		if (q->queue_id == found->queue_id) {
			CWSR_WARN("attach: KFD queue %u is already attached (streams sharing one "
				  "hardware queue cannot be preempted apart)",
				  found->queue_id);
			return kXSchedErrorNotAllowed;
		}
	}
	*e = *found;
	return kXSchedSuccess;
}

/* Add the queue of @e (ring buffer @ring) to the attached list, as *@out. Caller holds
 * xs__k.lock. */
static XResult xs__attach_add_locked(xs_cwsr_queue **out, uint64_t ring,
				     const struct xs_kfd_queue_snapshot_entry *e)
{
	XS_ASSERT_HELD(&xs__k.lock);
	xs_cwsr_queue *q = calloc(1, sizeof(*q));
	if (!q) {
		CWSR_ERROR("attach: out of memory");
		return kXSchedErrorUnknown;
	}
	q->ring_base_address = ring;
	q->queue_id = e->queue_id;
	q->gpu_id = e->gpu_id;
	q->next = xs__k.attached_list;
	xs__k.attached_list = q;
	xs__k.n_attached++;
	*out = q;
	XS_DEBUG(TOPIC, "attached KFD queue %u (gpu %u, ring 0x%llx, %u bytes)", q->queue_id,
		 q->gpu_id, (unsigned long long)ring, e->ring_size);
	return kXSchedSuccess;
}

XResult xs_cwsr_attach(xs_cwsr_queue **out, uint64_t ring_base_address)
{
	struct xs_kfd_queue_snapshot_entry *entries = NULL, e;
	size_t n = 0;
	XResult res;

	if (!out)
		return kXSchedErrorInvalidValue;
	*out = NULL;
	if (!ring_base_address) {
		CWSR_WARN("attach: ring base address 0 names no queue");
		return kXSchedErrorInvalidValue;
	}
	xs_mutex_lock(&xs__k.lock);
	res = xs__session_get_locked();
	if (res == kXSchedSuccess) {
		/* Clearing EC_QUEUE_NEW is required: KFD refuses to suspend a queue
		 * still flagged new. The snapshot clears it on every queue it reports. */
		res = xs__snapshot_locked(XS_KFD_EC_MASK(XS_KFD_EC_QUEUE_NEW), &entries, &n);
		if (res == kXSchedSuccess)
			res = xs__attach_find_locked(entries, n, ring_base_address, &e);
		if (res == kXSchedSuccess)
			res = xs__attach_add_locked(out, ring_base_address, &e);
		free(entries);
		xs__session_put_locked();
	}
	xs_mutex_unlock(&xs__k.lock);
	return res;
}

uint32_t xs_cwsr_queue_id(const xs_cwsr_queue *q)
{
	return q ? q->queue_id : 0;
}

bool xs_cwsr_is_suspended(const xs_cwsr_queue *q)
{
	bool s;

	if (!q)
		return false;
	xs_mutex_lock(&xs__k.lock);
	s = q->suspended;
	xs_mutex_unlock(&xs__k.lock);
	return s;
}

static XResult xs__check_batch(xs_cwsr_queue *const *qs, size_t n)
{
	size_t i, j;

	if (n > 0 && !qs)
		return kXSchedErrorInvalidValue;
	for (i = 0; i < n; i++) {
		if (!qs[i])
			return kXSchedErrorInvalidValue;
		for (j = 0; j < i; j++)
			if (qs[j] == qs[i])
				return kXSchedErrorInvalidValue;
	}
	return kXSchedSuccess;
}

/* Issue RESUME_QUEUES for @ids (status bits come back ORed in).
 * Returns the kernel's return value. */
static int xs__resume_ioctl_locked(uint32_t *ids, size_t k)
{
	XS_ASSERT_HELD(&xs__k.lock);
	struct xs_kfd_dbg_trap_args args;

	memset(&args, 0, sizeof(args));
	args.resume_queues.queue_array_ptr = (uint64_t)(uintptr_t)ids;
	args.resume_queues.num_queues = (uint32_t)k;
	return xs__dbg_trap_locked(&args, XS_KFD_DBG_TRAP_RESUME_QUEUES);
}

/* Read RESUME_QUEUES' per-queue status in @ids (@r: what the ioctl returned, the queues
 * resumed): a queue is resumed unless flagged ERROR (INVALID alone: KFD has no such queue,
 * so nothing is suspended). Logs what went wrong. */
static XResult xs__resume_status_locked(xs_cwsr_queue *const *todo, const uint32_t *ids, size_t k,
					int r)
{
	XS_ASSERT_HELD(&xs__k.lock);
	size_t failed = 0, first_bad = 0;
	for (size_t i = 0; i < k; i++) {
		uint32_t st = ids[i] & QUEUE_STATUS_MASK;
		if (!(st & XS_KFD_DBG_QUEUE_ERROR_MASK))
			todo[i]->suspended = false;
		if (st && failed++ == 0)
			first_bad = i;
	}
	if (!failed && (size_t)r == k)
		return kXSchedSuccess;
	if (failed)
		CWSR_ERROR("DBG_TRAP RESUME_QUEUES resumed %d of %zu queue(s); queue %u "
			   "flagged%s%s; %s",
			   r, k, todo[first_bad]->queue_id,
			   (ids[first_bad] & XS_KFD_DBG_QUEUE_ERROR_MASK) ? " hardware-error" : "",
			   (ids[first_bad] & XS_KFD_DBG_QUEUE_INVALID_MASK) ? " invalid" : "",
			   (ids[first_bad] & XS_KFD_DBG_QUEUE_ERROR_MASK)
			       ? "it stays suspended"
			       : "KFD has no such queue");
	else
		CWSR_ERROR("DBG_TRAP RESUME_QUEUES resumed %d of %zu queue(s) with no queue "
			   "flagged",
			   r, k);
	return kXSchedErrorHardware;
}

/* Resume the @k queues of @todo that are marked suspended. Logs one line on
 * failure. */
static XResult xs__resume_locked(xs_cwsr_queue *const *todo, size_t k)
{
	XS_ASSERT_HELD(&xs__k.lock);
	uint32_t stack_ids[STACK_BATCH], *ids = stack_ids;
	size_t i;
	XResult res = kXSchedSuccess;
	int r;

	if (k == 0)
		return kXSchedSuccess;
	if (!xs__k.trap_enabled) { /* released: DISABLE resumed every queue */
		for (i = 0; i < k; i++)
			todo[i]->suspended = false;
		return kXSchedSuccess;
	}
	if (k > STACK_BATCH) {
		ids = malloc(k * sizeof(*ids));
		if (!ids) {
			CWSR_ERROR("resume: out of memory for %zu queue ids", k);
			return kXSchedErrorUnknown;
		}
	}
	for (i = 0; i < k; i++)
		ids[i] = todo[i]->queue_id;
	r = xs__resume_ioctl_locked(ids, k);
	if (r < 0) {
		CWSR_ERROR("DBG_TRAP RESUME_QUEUES of %zu queue(s) (first %u) failed (-%s, %d); "
			   "they stay suspended",
			   k, todo[0]->queue_id, xs__errno_name(-r), r);
		res = kXSchedErrorHardware;
		goto out;
	}
	res = xs__resume_status_locked(todo, ids, k, r);
out:
	if (ids != stack_ids)
		free(ids);
	return res;
}

/* A batch's queues and their KFD ids: on the stack up to STACK_BATCH queues, else on the
 * heap. */
typedef struct xs__batch {
	xs_cwsr_queue *stack_todo[STACK_BATCH], **todo;
	uint32_t stack_ids[STACK_BATCH], *ids;
	size_t k; /* the queues in todo */
} xs__batch;

static void xs__batch_free(xs__batch *b)
{
	if (b->todo != b->stack_todo)
		free(b->todo);
	if (b->ids != b->stack_ids)
		free(b->ids);
	b->todo = b->stack_todo;
	b->ids = b->stack_ids;
}

/* Room for @n queues and their ids; false when out of memory (nothing is left to free). */
static bool xs__batch_alloc(xs__batch *b, size_t n)
{
	b->todo = b->stack_todo;
	b->ids = b->stack_ids;
	b->k = 0;
	if (n <= STACK_BATCH)
		return true;
	b->todo = malloc(n * sizeof(*b->todo));
	b->ids = malloc(n * sizeof(*b->ids));
	if (b->todo && b->ids)
		return true;
	xs__batch_free(b);
	return false;
}

/* Log a SUSPEND_QUEUES of @k queues that returned @r < 0, and map it. Negative returns
 * come from checks made before any queue is touched, so nothing is suspended. */
static XResult xs__suspend_refused(xs_cwsr_queue *const *todo, size_t k, int r)
{
	if (r == -EPERM) {
		CWSR_WARN("Lv3 unavailable: KFD refused SUSPEND_QUEUES (-EPERM): the "
			  "HSA runtime has not enabled debug support");
		return kXSchedErrorNotSupported;
	}
	CWSR_ERROR("DBG_TRAP SUSPEND_QUEUES of %zu queue(s) (first %u) failed "
		   "(-%s, %d); nothing suspended",
		   k, todo[0]->queue_id, xs__errno_name(-r), r);
	return kXSchedErrorHardware;
}

/* Read SUSPEND_QUEUES' per-queue status in @ids: KFD clears INVALID on each queue it
 * marked suspended, and sets ERROR when the hardware then failed; a clean entry is a
 * suspended queue. Returns how many entries were flagged, the first at *@first_bad.
 * Caller holds xs__k.lock. */
static size_t xs__suspend_status_locked(xs_cwsr_queue *const *todo, const uint32_t *ids, size_t k,
					size_t *first_bad)
{
	XS_ASSERT_HELD(&xs__k.lock);
	size_t bad = 0;
	*first_bad = 0;
	for (size_t i = 0; i < k; i++) {
		uint32_t st = ids[i] & QUEUE_STATUS_MASK;

		if (!(st & XS_KFD_DBG_QUEUE_INVALID_MASK))
			todo[i]->suspended = true;
		if (st && bad++ == 0)
			*first_bad = i;
	}
	return bad;
}

/* After a partial SUSPEND_QUEUES, resume the queues of @todo that it suspended (moved to
 * the front of @todo; @ids is reused), so the batch is all or nothing. Returns how many it
 * tried, *@back whether all of them came back. Caller holds xs__k.lock. */
static size_t xs__suspend_undo_locked(xs_cwsr_queue **todo, uint32_t *ids, size_t k, XResult *back)
{
	XS_ASSERT_HELD(&xs__k.lock);
	size_t n_back = 0;
	*back = kXSchedSuccess;
	for (size_t i = 0; i < k; i++)
		if (todo[i]->suspended)
			todo[n_back++] = todo[i];
	if (n_back == 0)
		return 0;
	for (size_t i = 0; i < n_back; i++)
		ids[i] = todo[i]->queue_id;
	int r = xs__resume_ioctl_locked(ids, n_back);
	for (size_t i = 0; i < n_back; i++) {
		if (r >= 0 && !(ids[i] & XS_KFD_DBG_QUEUE_ERROR_MASK))
			todo[i]->suspended = false;
		if (todo[i]->suspended)
			*back = kXSchedErrorHardware;
	}
	return n_back;
}

/* The one line of a partial SUSPEND_QUEUES: @ret of @k suspended, @bad entries flagged
 * (the first: queue @bad_id, status @bad_st), @n_back resumed again (@back: all of them). */
static void xs__suspend_log_partial(int ret, size_t k, size_t bad, uint32_t bad_id, uint32_t bad_st,
				    size_t n_back, XResult back)
{
	char what[96];

	if (bad == 0)
		snprintf(what, sizeof(what), "no queue flagged");
	else
		snprintf(what, sizeof(what), "queue %u flagged%s%s", bad_id,
			 (bad_st & XS_KFD_DBG_QUEUE_ERROR_MASK) ? " hardware-error" : "",
			 (bad_st & XS_KFD_DBG_QUEUE_INVALID_MASK)
			     ? " invalid (missing, new or dying)"
			     : "");
	CWSR_ERROR("DBG_TRAP SUSPEND_QUEUES: KFD reported %d of %zu queue(s) suspended, %s; %s",
		   ret, k, what,
		   n_back == 0              ? "nothing to undo"
		   : back == kXSchedSuccess ? "resumed the suspended ones again"
					    : "could not resume them all (the last detach will)");
}

/* Suspend the @k queues of @todo (none marked suspended), all or nothing, with @ids room
 * for their ids. Logs one line on failure. Caller holds xs__k.lock. */
static XResult xs__suspend_locked(xs_cwsr_queue **todo, uint32_t *ids, size_t k)
{
	XS_ASSERT_HELD(&xs__k.lock);
	struct xs_kfd_dbg_trap_args args;
	size_t first_bad, bad, n_back;
	XResult back;

	if (!xs__k.trap_enabled) {
		CWSR_WARN("suspend refused: the KFD session was released (process exiting)");
		return kXSchedErrorNotSupported;
	}
	for (size_t i = 0; i < k; i++)
		ids[i] = todo[i]->queue_id;
	memset(&args, 0, sizeof(args));
	args.suspend_queues.exception_mask = 0;
	args.suspend_queues.queue_array_ptr = (uint64_t)(uintptr_t)ids;
	args.suspend_queues.num_queues = (uint32_t)k;
	args.suspend_queues.grace_period = 0; /* preempt now: CWSR saves the waves */
	int r = xs__dbg_trap_locked(&args, XS_KFD_DBG_TRAP_SUSPEND_QUEUES);
	if (r < 0)
		return xs__suspend_refused(todo, k, r);
	bad = xs__suspend_status_locked(todo, ids, k, &first_bad);
	if (bad == 0 && (size_t)r == k) {
		XS_DEBUG(TOPIC, "suspended %zu queue(s), first %u", k, todo[0]->queue_id);
		return kXSchedSuccess;
	}
	/* Partial: put back what was suspended (the undo reuses todo and ids). */
	uint32_t bad_id = todo[first_bad]->queue_id;
	uint32_t bad_st = ids[first_bad] & QUEUE_STATUS_MASK;
	n_back = xs__suspend_undo_locked(todo, ids, k, &back);
	xs__suspend_log_partial(r, k, bad, bad_id, bad_st, n_back, back);
	return kXSchedErrorHardware;
}

XResult xs_cwsr_suspend_many(xs_cwsr_queue *const *qs, size_t n)
{
	XResult res;
	xs__batch b;

	res = xs__check_batch(qs, n);
	if (res != kXSchedSuccess || n == 0)
		return res;
	if (!xs__batch_alloc(&b, n)) {
		CWSR_ERROR("suspend: out of memory for %zu queues", n);
		return kXSchedErrorUnknown;
	}
	xs_mutex_lock(&xs__k.lock);
	for (size_t i = 0; i < n; i++)
		if (!qs[i]->suspended)
			b.todo[b.k++] = qs[i];
	if (b.k > 0)
		res = xs__suspend_locked(b.todo, b.ids, b.k);
	xs_mutex_unlock(&xs__k.lock);
	xs__batch_free(&b);
	return res;
}

XResult xs_cwsr_resume_many(xs_cwsr_queue *const *qs, size_t n)
{
	xs_cwsr_queue *stack_todo[STACK_BATCH], **todo = stack_todo;
	size_t i, k = 0;
	XResult res;

	res = xs__check_batch(qs, n);
	if (res != kXSchedSuccess || n == 0)
		return res;
	if (n > STACK_BATCH) {
		todo = malloc(n * sizeof(*todo));
		if (!todo) {
			CWSR_ERROR("resume: out of memory for %zu queues", n);
			return kXSchedErrorUnknown;
		}
	}
	xs_mutex_lock(&xs__k.lock);
	for (i = 0; i < n; i++)
		if (qs[i]->suspended)
			todo[k++] = qs[i];
	res = xs__resume_locked(todo, k);
	xs_mutex_unlock(&xs__k.lock);
	if (todo != stack_todo)
		free(todo);
	return res;
}

XResult xs_cwsr_suspend(xs_cwsr_queue *q)
{
	return xs_cwsr_suspend_many(&q, 1);
}

XResult xs_cwsr_resume(xs_cwsr_queue *q)
{
	return xs_cwsr_resume_many(&q, 1);
}

void xs_cwsr_release_all(void)
{
	xs_cwsr_queue *q;

	xs_mutex_lock(&xs__k.lock);
	xs__k.released = true;
	if (xs__k.trap_enabled) {
		XS_DEBUG(TOPIC, "releasing the KFD session with %zu queue(s) attached",
			 xs__k.n_attached);
		xs__trap_disable_locked(); /* KFD resumes every queue it had suspended */
		for (q = xs__k.attached_list; q; q = q->next)
			q->suspended = false;
	}
	xs__kfd_close_locked();
	xs_mutex_unlock(&xs__k.lock);
}

void xs_cwsr_detach(xs_cwsr_queue *q)
{
	xs_cwsr_queue **pp;

	if (!q)
		return;
	xs_mutex_lock(&xs__k.lock);
	if (q->suspended && xs__resume_locked(&q, 1) != kXSchedSuccess && xs__k.n_attached > 1)
		CWSR_ERROR("detach: KFD queue %u may stay suspended until the last detach",
			   q->queue_id);
	for (pp = &xs__k.attached_list; *pp; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			xs__k.n_attached--;
			break;
		}
	}
	XS_DEBUG(TOPIC, "detached KFD queue %u", q->queue_id);
	free(q);
	xs__session_put_locked();
	xs_mutex_unlock(&xs__k.lock);
}
