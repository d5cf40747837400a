/* The fake KFD shared by test_cwsr and test_lv3; see fake_kfd.h. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "fake_kfd.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct fake F;

/* Guards F; fake_cv is broadcast whenever a queue's suspended state changes. */
static pthread_mutex_t fake_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fake_cv;
static pthread_once_t fake_once = PTHREAD_ONCE_INIT;

static void fake_init_once(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&fake_cv, &a);
	pthread_condattr_destroy(&a);
}

void fake_lock(void)
{
	pthread_once(&fake_once, fake_init_once);
	pthread_mutex_lock(&fake_mu);
}

void fake_unlock(void)
{
	pthread_mutex_unlock(&fake_mu);
}

/* Caller holds fake_lock(). */
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

static int fake_open_locked(const char *path, int flags)
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

static int fake_close_locked(int fd)
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
	for (i = 0; i < n && i < MAX_FAKE_QUEUES; i++)
		F.last_suspend_ids[i] = ids[i];
	if (!F.enabled)
		return -EINVAL;
	if (F.runtime_state != XS_KFD_RUNTIME_STATE_ENABLED)
		return -EPERM;
	if (F.suspend_err)
		return F.suspend_err;
	for (i = 0; i < n; i++) {
		struct fake_queue *q = find_queue(ids[i]);

		ids[i] |= INV_BIT;
		if (q && q->suspended && !q->suspend_status) {
			/* As the kernel: an already suspended queue is suspended, and counted. */
			ids[i] &= ~INV_BIT;
			count++;
			continue;
		}
		if (!q || q->is_new || (q->suspend_status & INV_BIT)) {
			ids[i] |= q ? q->suspend_status & ERR_BIT : 0;
			continue;
		}
		q->suspended = true; /* ERR_BIT alone: marked suspended, HW failed */
		ids[i] &= ~INV_BIT;
		ids[i] |= q->suspend_status;
		if (!q->suspend_status)
			count++;
	}
	pthread_cond_broadcast(&fake_cv);
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

		if (!q) {
			ids[i] |= INV_BIT; /* no such queue */
			continue;
		}
		if (q->resume_status) {
			/* As the kernel: a queue whose resume failed in the hardware gets ERROR
			 * alone (it stays suspended); INVALID only with an injected INV_BIT. */
			ids[i] |= q->resume_status;
			continue;
		}
		q->suspended = false;
		ids[i] &= ~INV_BIT;
		count++;
	}
	pthread_cond_broadcast(&fake_cv);
	return count;
}

static int fake_ioctl_locked(int fd, unsigned long request, void *arg)
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
		pthread_cond_broadcast(&fake_cv);
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

int fake_runtime_disable(void)
{
	int r;

	fake_lock();
	trace("runtime-disable");
	F.runtime_disables++;
	r = F.enabled ? -EDEADLK : 0; /* the kernel waits here for ever */
	fake_unlock();
	return r;
}

static int fake_open(const char *path, int flags)
{
	int r;

	fake_lock();
	r = fake_open_locked(path, flags);
	fake_unlock();
	return r;
}

static int fake_close(int fd)
{
	int r;

	fake_lock();
	r = fake_close_locked(fd);
	fake_unlock();
	return r;
}

static int fake_ioctl(int fd, unsigned long request, void *arg)
{
	int r;

	fake_lock();
	r = fake_ioctl_locked(fd, request, arg);
	fake_unlock();
	return r;
}

const xs_kfd_sys fake_sys = {
    .open = fake_open,
    .close = fake_close,
    .ioctl = fake_ioctl,
};

void fake_reset(size_t n)
{
	size_t i;

	fake_lock();
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
	pthread_cond_broadcast(&fake_cv);
	fake_unlock();
}

void trace_clear(void)
{
	fake_lock();
	F.trace[0] = '\0';
	fake_unlock();
}

size_t fake_suspended_count(void)
{
	size_t i, n = 0;

	fake_lock();
	for (i = 0; i < F.nq; i++)
		n += F.q[i].suspended;
	fake_unlock();
	return n;
}

bool fake_queue_suspended(uint32_t id)
{
	struct fake_queue *q;
	bool s;

	fake_lock();
	q = find_queue(id);
	s = q && q->suspended;
	fake_unlock();
	return s;
}

bool fake_enabled(void)
{
	bool e;

	fake_lock();
	e = F.enabled;
	fake_unlock();
	return e;
}

void fake_trace_copy(char *buf, size_t cap)
{
	if (cap == 0)
		return;
	fake_lock();
	snprintf(buf, cap, "%s", F.trace);
	fake_unlock();
}

/* Wait (fake_lock() held) until queue @id is suspended == @want, or @timeout_ms pass. */
static bool wait_state_locked(uint32_t id, bool want, int timeout_ms)
{
	struct timespec end;
	struct fake_queue *q;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	end.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		q = find_queue(id);
		if ((q && q->suspended) == want)
			return true;
		if (pthread_cond_timedwait(&fake_cv, &fake_mu, &end) == ETIMEDOUT) {
			q = find_queue(id);
			return (q && q->suspended) == want;
		}
	}
}

bool fake_wait_running(uint32_t id, int timeout_ms)
{
	bool ok;

	fake_lock();
	ok = wait_state_locked(id, false, timeout_ms);
	fake_unlock();
	return ok;
}

bool fake_wait_running_locked(uint32_t id, int timeout_ms)
{
	return wait_state_locked(id, false, timeout_ms);
}

bool fake_wait_suspended(uint32_t id, int timeout_ms)
{
	bool ok;

	fake_lock();
	ok = wait_state_locked(id, true, timeout_ms);
	fake_unlock();
	return ok;
}
