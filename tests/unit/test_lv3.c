/* Lv3 wired into the scheduler path, on host queues attached to a fake KFD (fake_kfd.h).
 *
 * A host queue enabled with xs_host_queue_enable_lv3() stands for a HIP stream whose
 * hardware queue is the fake's queue 3 (or 5, 7). Its "kernels" are host functions that
 * run step by step and, like waves on an unmapped queue, make no step while the fake KFD
 * holds their queue suspended. Checked here:
 * (a) HPF: when the high queue gets work, the fake sees SUSPEND_QUEUES (grace period 0,
 *     the low queue's id) while a low kernel is half done; the kernel makes no progress
 *     until the high work is done, then RESUME_QUEUES, and it goes on where it stopped;
 *     every low command runs exactly once, in order;
 * (b) every failure at attach leaves the max level at 2, XQueueCreate(level 3) refused
 *     with kXSchedErrorNotSupported, one log line, and nothing enabled or suspended;
 * (c) a failed suspend at run time (error, partial, refused, -EPERM, failed rollback)
 *     degrades the queue to Lv2 with one log line and leaves nothing suspended;
 * (d) XQueueDestroy and HwQueueDestroy while suspended leave nothing suspended, and
 *     DISABLE comes after the last detach;
 * (e) XQueueSetPreemptLevel between 1, 2 and 3 while suspended keeps the fake consistent.
 * Every check of the fake's calls compares the exact sequence. The scheduler is
 * application-managed except in (a), so every KFD call is made by the calling thread.
 *
 * Exit status: 0 when every check passes, 1 at the first failed check.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/log.h"
#include "fake_kfd.h"
#include "log_capture.h"
#include "preempt/testing.h"
#include "preempt/cwsr.h"
#include "preempt/lv3.h"

#define RING(i) (0x10000ull * ((i) + 1)) /* ring of fake queue i (id 3 + 2 i) */
#define QID(i)  ((uint32_t)(3 + 2 * (i)))
#define WAIT_MS 10000 /* generous bound for things that must happen */

/* ---- log capture (log_capture.h) ---- */

/* A failed check exits while capturing: show what was t_captured, the check's message
 * included. */
static void capture_dump_at_exit(void)
{
	if (t_capturing()) {
		t_capture_end("xsched[");
		fprintf(stderr, "%s", t_captured);
		fprintf(stderr, "  (t_captured log above; fake trace: %s)\n", F.trace);
	}
}

/* Run @stmt with the log captured and check that it printed @lines lines. */
#define CHECK_LINES(stmt, lines)                                                                   \
	do {                                                                                       \
		int n_;                                                                            \
		t_capture_begin();                                                                 \
		stmt;                                                                              \
		n_ = t_capture_end("xsched[");                                                     \
		if (n_ != (lines)) {                                                               \
			fprintf(stderr, "%s:%d: %s printed %d line(s), expected %d:\n%s",          \
				__FILE__, __LINE__, #stmt, n_, (lines), t_captured);               \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_LOGGED(text)                                                                         \
	do {                                                                                       \
		if (!strstr(t_captured, (text))) {                                                 \
			fprintf(stderr, "%s:%d: the log does not say \"%s\":\n%s", __FILE__,       \
				__LINE__, (text), t_captured);                                     \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* The fake's call sequence since the last trace_clear() is exactly @want. */
#define CHECK_TRACE(want)                                                                          \
	do {                                                                                       \
		char t_[sizeof(F.trace)];                                                          \
		fake_trace_copy(t_, sizeof(t_));                                                   \
		if (strcmp(t_, (want)) != 0) {                                                     \
			fprintf(stderr,                                                            \
				"%s:%d: KFD call sequence\n  got:      \"%s\"\n"                   \
				"  expected: \"%s\"\n",                                            \
				__FILE__, __LINE__, t_, (want));                                   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Nothing open, enabled or suspended in the fake, and no stray request. */
static void check_clean(int line)
{
	fake_lock();
	bool ok = F.fd == -1 && F.opens == F.closes && !F.enabled && F.bad_requests == 0 &&
		  F.bad_pids == 0 && F.bad_fds == 0 && F.bad_ops == 0;
	for (size_t i = 0; i < F.nq; i++)
		ok = ok && !F.q[i].suspended;
	fake_unlock();
	if (!ok) {
		fprintf(stderr, "test_lv3.c:%d: the fake KFD is not clean (trace: %s)\n", line,
			F.trace);
		exit(1);
	}
}
#define CHECK_CLEAN() check_clean(__LINE__)

static int64_t max_level(HwQueueHandle hwq)
{
	int64_t level = 0;
	CHECK_OK(HwQueueGetMaxPreemptLevel(hwq, &level));
	return level;
}

/* A host queue with Lv3 on fake queue @i; the attach is checked to be silent. */
static HwQueueHandle lv3_queue(size_t i)
{
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_LINES(CHECK_OK(xs_host_queue_enable_lv3(hwq, RING(i))), 0);
	CHECK(max_level(hwq) == kPreemptLevelInterrupt);
	return hwq;
}

/* ---- commands ---- */

/* Appends its index to a log: order and exactly-once checks. */
#define MAX_LOG 256
static int run_log[MAX_LOG];
static atomic_int run_n;
static int run_idx[MAX_LOG];

static XResult record_fn(void *data)
{
	int n = atomic_fetch_add(&run_n, 1);
	if (n < MAX_LOG)
		run_log[n] = *(int *)data;
	return kXSchedSuccess;
}

static void log_reset(void)
{
	atomic_store(&run_n, 0);
	for (int i = 0; i < MAX_LOG; i++)
		run_idx[i] = i;
}

/* Submit commands @first .. @first + @n - 1 of the log. */
static void submit_records(XQueueHandle xq, int first, int n)
{
	for (int i = first; i < first + n; i++)
		t_submit_fn(xq, record_fn, &run_idx[i]);
}

static bool all_launched(void *arg)
{
	XQueueStats st = t_stats(*(XQueueHandle *)arg);
	return st.launched == st.submitted;
}

static void check_log(int n)
{
	CHECK(atomic_load(&run_n) == n);
	for (int i = 0; i < n; i++)
		CHECK(run_log[i] == i);
}

/* Blocks the executor until released. */
static atomic_bool blocker_started, blocker_release;

static bool is_true(void *arg)
{
	return atomic_load((atomic_bool *)arg);
}

static XResult blocker_fn(void *data)
{
	(void)data;
	atomic_store(&blocker_started, true);
	CHECK(t_wait_for(is_true, &blocker_release, WAIT_MS));
	return kXSchedSuccess;
}

/* A kernel on the queue attached to fake queue kernel_qid: K_STEPS steps, each made
 * only while KFD has the queue running (under the fake's lock, so a step and a SUSPEND
 * never overlap). It cannot pass its middle step before kernel_release, so a suspension
 * that comes while it runs lands mid-kernel. */
#define K_STEPS 40
static uint32_t kernel_qid;
static atomic_int k_done; /* steps made */
static int k_log[K_STEPS];
static atomic_bool kernel_release;

static XResult kernel_fn(void *data)
{
	(void)data;
	for (int s = 0; s < K_STEPS; s++) {
		if (s == K_STEPS / 2)
			CHECK(t_wait_for(is_true, &kernel_release, WAIT_MS));
		fake_lock();
		bool running = fake_wait_running_locked(kernel_qid, WAIT_MS);
		if (running)
			k_log[atomic_fetch_add(&k_done, 1)] = s;
		fake_unlock();
		CHECK(running);
		t_sleep_us(200);
	}
	return kXSchedSuccess;
}

static bool kernel_started(void *arg)
{
	(void)arg;
	return atomic_load(&k_done) >= 3;
}

/* The high-priority command of (a): runs while the low queue is suspended. */
static atomic_int high_mid_steps = -1;
static atomic_bool high_frozen, high_still_suspended;

static XResult high_fn(void *data)
{
	(void)data;
	CHECK(fake_wait_suspended(kernel_qid, WAIT_MS));
	int before = atomic_load(&k_done);
	atomic_store(&high_mid_steps, before);
	/* The kernel is past its start and before its middle: it is stopped mid-kernel. */
	atomic_store(&kernel_release, true);
	t_sleep_us(5000);
	atomic_store(&high_frozen, atomic_load(&k_done) == before);
	atomic_store(&high_still_suspended, fake_queue_suspended(kernel_qid));
	return kXSchedSuccess;
}

/* ---- (a) HPF with a Lv3 low-priority queue ---- */

static void test_hpf_interrupt_restore(void)
{
	HwQueueHandle hl, hh;
	XQueueHandle lo, hi;
	const int small = 20;

	fake_reset(2);
	CHECK_OK(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst));
	trace_clear();
	hl = lv3_queue(0);
	/* The probe: attach, then one trial suspend and resume. */
	CHECK_TRACE("open version enable snapshot suspend[3] resume[3]");
	CHECK_OK(HostQueueCreate(&hh));
	CHECK(max_level(hh) == kPreemptLevelDeactivate);
	CHECK_OK(XQueueCreate(&lo, hl, kPreemptLevelInterrupt, 0));
	CHECK_OK(XQueueCreate(&hi, hh, kPreemptLevelBlock, 0));
	CHECK_OK(XHintPriority(lo, 0));
	CHECK_OK(XHintPriority(hi, 10));

	kernel_qid = QID(0);
	atomic_store(&k_done, 0);
	atomic_store(&kernel_release, false);
	log_reset();
	trace_clear();
	t_capture_begin();
	t_submit_fn(lo, kernel_fn, NULL);
	submit_records(lo, 0, small);
	CHECK(t_wait_for(kernel_started, NULL, WAIT_MS));
	CHECK(t_stats(lo).suspensions == 0);
	t_submit_fn(hi, high_fn, NULL);
	CHECK_OK(XQueueWaitAll(hi));
	CHECK_OK(XQueueWaitAll(lo));
	CHECK(t_capture_end("xsched[") == 0);

	/* Suspended mid-kernel, frozen while suspended, resumed only after high's work. */
	int mid = atomic_load(&high_mid_steps);
	CHECK(mid >= 3 && mid <= K_STEPS / 2);
	CHECK(atomic_load(&high_frozen));
	CHECK(atomic_load(&high_still_suspended));
	/* The kernel went on where it stopped: every step once, in order; then the rest. */
	CHECK(atomic_load(&k_done) == K_STEPS);
	for (int s = 0; s < K_STEPS; s++)
		CHECK(k_log[s] == s);
	check_log(small);
	CHECK(t_stats(lo).suspensions == 1);
	CHECK(t_stats(lo).completed == (uint64_t)small + 1);

	/* Exactly one SUSPEND of queue 3 with grace period 0, then one RESUME. */
	CHECK_TRACE("suspend[3] resume[3]");
	fake_lock();
	CHECK(F.last_suspend.op == XS_KFD_DBG_TRAP_SUSPEND_QUEUES);
	CHECK(F.last_suspend.pid == (uint32_t)getpid());
	CHECK(F.last_suspend.suspend_queues.num_queues == 1);
	CHECK(F.last_suspend.suspend_queues.grace_period == 0);
	CHECK(F.last_suspend.suspend_queues.exception_mask == 0);
	CHECK(F.last_suspend_ids[0] == QID(0));
	CHECK(F.last_resume.op == XS_KFD_DBG_TRAP_RESUME_QUEUES);
	CHECK(F.last_resume.resume_queues.num_queues == 1);
	CHECK(!F.q[0].suspended && !F.q[1].suspended);
	fake_unlock();

	CHECK_OK(XQueueDestroy(lo));
	CHECK_OK(XQueueDestroy(hi));
	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	CHECK_TRACE("suspend[3] resume[3]");
	CHECK_OK(HwQueueDestroy(hh));
	CHECK_LINES(CHECK_OK(HwQueueDestroy(hl)), 0);
	CHECK_TRACE("suspend[3] resume[3] disable close");
	CHECK_CLEAN();
}

/* ---- (b) failures at attach ---- */

/* Enable Lv3 on a new host queue with the fake as set up; expect @want, one log line
 * naming the fallback and containing @text, the call sequence @trace, max level 2, and
 * XQueueCreate(level 3) refused (one line) while level 2 works. */
static void check_attach_fails(uint64_t ring, XResult want, const char *text, const char *trace)
{
	HwQueueHandle hwq;
	XQueueHandle xq;

	CHECK_OK(HostQueueCreate(&hwq));
	trace_clear();
	CHECK_LINES(CHECK_RES(xs_host_queue_enable_lv3(hwq, ring), want), 1);
	CHECK_LOGGED("falls back to Lv2");
	CHECK_LOGGED(text);
	CHECK_TRACE(trace);
	CHECK(max_level(hwq) == kPreemptLevelDeactivate);
	CHECK_LINES(
	    CHECK_RES(XQueueCreate(&xq, hwq, kPreemptLevelInterrupt, 0), kXSchedErrorNotSupported),
	    1);
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelDeactivate, 0));
	CHECK_LINES(
	    CHECK_RES(XQueueSetPreemptLevel(xq, kPreemptLevelInterrupt), kXSchedErrorNotSupported),
	    1);
	CHECK_OK(XQueueSuspend(xq, 0));
	CHECK_OK(XQueueResume(xq, 0));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

static void test_attach_failures(void)
{
	HwQueueHandle a, b;

	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));

	fake_reset(1);
	F.open_result = -ENOENT;
	check_attach_fails(RING(0), kXSchedErrorNotSupported, "no /dev/kfd", "open");
	CHECK_CLEAN();

	fake_reset(1);
	F.open_result = -EACCES;
	check_attach_fails(RING(0), kXSchedErrorNotSupported, "permission", "open");
	CHECK_CLEAN();

	/* Debian 12's Linux 6.1: KFD 1.11, no debugger API; DBG_TRAP is never sent. */
	fake_reset(1);
	F.minor = 11;
	check_attach_fails(RING(0), kXSchedErrorNotSupported, "1.11", "open version close");
	CHECK_CLEAN();

	/* A debugger holds the trap: not ours to DISABLE. */
	fake_reset(1);
	F.debugger_attached = true;
	check_attach_fails(RING(0), kXSchedErrorNotSupported, "EALREADY",
			   "open version enable close");
	CHECK(F.opens == F.closes && F.fd == -1);

	/* ENABLE works but the runtime never enabled its debug support. */
	fake_reset(1);
	F.runtime_state = XS_KFD_RUNTIME_STATE_DISABLED;
	check_attach_fails(RING(0), kXSchedErrorNotSupported, "runtime_state 0",
			   "open version enable disable close");
	CHECK_CLEAN();

	/* -EPERM at the trial suspend. */
	fake_reset(1);
	F.suspend_err = -EPERM;
	check_attach_fails(RING(0), kXSchedErrorNotSupported, "EPERM",
			   "open version enable snapshot suspend[3] disable close");
	CHECK_CLEAN();

	/* No queue of the process has that ring buffer. */
	fake_reset(1);
	check_attach_fails(0x999000, kXSchedErrorNotFound, "0x999000",
			   "open version enable snapshot disable close");
	CHECK_CLEAN();

	/* An SDMA queue; a zero address. */
	fake_reset(1);
	F.q[0].type = XS_KFD_QUEUE_TYPE_SDMA;
	check_attach_fails(RING(0), kXSchedErrorNotSupported, "not a compute queue",
			   "open version enable snapshot disable close");
	CHECK_CLEAN();
	fake_reset(1);
	check_attach_fails(0, kXSchedErrorInvalidValue, "ring base address 0", "");
	CHECK_CLEAN();

	/* The trial suspend only partly succeeds (hardware error): undone, then DISABLE. */
	fake_reset(1);
	F.q[0].suspend_status = ERR_BIT;
	check_attach_fails(RING(0), kXSchedErrorHardware, "hardware-error",
			   "open version enable snapshot suspend[3] resume[3] disable close");
	CHECK_CLEAN();

	/* The trial resume fails: retried by the detach, and DISABLE resumes it anyway. */
	fake_reset(1);
	F.resume_err = -EIO;
	check_attach_fails(RING(0), kXSchedErrorHardware, "RESUME_QUEUES",
			   "open version enable snapshot suspend[3] resume[3] resume[3] "
			   "disable close");
	CHECK_CLEAN();

	/* Two HwQueues on one hardware queue: the second is refused; the first keeps it. */
	fake_reset(1);
	a = lv3_queue(0);
	check_attach_fails(RING(0), kXSchedErrorNotAllowed, "already attached", "snapshot");
	CHECK(fake_enabled());
	CHECK_LINES(CHECK_RES(xs_host_queue_enable_lv3(a, RING(0)), kXSchedErrorNotAllowed), 1);
	CHECK_LINES(CHECK_RES(xs_host_queue_enable_lv3(0x1234, RING(0)), kXSchedErrorNotFound), 1);
	trace_clear();
	CHECK_OK(HwQueueDestroy(a));
	CHECK_TRACE("disable close");
	CHECK_CLEAN();

	/* A failed attach after a good one leaves the good one working. */
	fake_reset(2);
	a = lv3_queue(0);
	CHECK_OK(HostQueueCreate(&b));
	fake_lock();
	F.q[1].suspend_status = INV_BIT;
	fake_unlock();
	trace_clear();
	CHECK_LINES(CHECK_RES(xs_host_queue_enable_lv3(b, RING(1)), kXSchedErrorHardware), 1);
	CHECK_TRACE("snapshot suspend[5]");
	CHECK(max_level(b) == kPreemptLevelDeactivate);
	CHECK(fake_enabled());
	CHECK_OK(HwQueueDestroy(b));
	CHECK_OK(HwQueueDestroy(a));
	CHECK_CLEAN();
}

/* ---- (c) a failed suspend at run time ---- */

/* On a Lv3 queue whose next SUSPEND fails as the fake is set up by @inject: the
 * suspension still holds (Lv2: launched commands wait at the gate), one line is logged
 * (containing @text), the call sequence is @trace, nothing is left suspended, and later
 * suspensions use the gate only. */
static void check_suspend_fails(void (*inject)(void), const char *text, const char *trace)
{
	HwQueueHandle hwq;
	XQueueHandle xq;

	fake_reset(1);
	hwq = lv3_queue(0);
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelInterrupt, 0));
	log_reset();
	atomic_store(&blocker_started, false);
	atomic_store(&blocker_release, false);
	t_submit_fn(xq, blocker_fn, NULL);
	submit_records(xq, 0, 5); /* launched behind the blocker, gated */
	CHECK(t_wait_for(is_true, &blocker_started, WAIT_MS));
	CHECK(t_wait_for(all_launched, &xq, WAIT_MS));
	fake_lock();
	inject();
	fake_unlock();
	trace_clear();
	CHECK_LINES(CHECK_OK(XQueueSuspend(xq, 0)), 1);
	CHECK_LOGGED("falls back to Lv2");
	CHECK_LOGGED("nothing of it is left suspended");
	CHECK_LOGGED(text);
	CHECK_TRACE(trace);
	CHECK(fake_suspended_count() == 0);

	/* Lv2 behaviour: the gate holds what was launched. */
	atomic_store(&blocker_release, true);
	t_sleep_us(20000);
	CHECK(atomic_load(&run_n) == 0);
	CHECK(t_stats(xq).launched == 6); /* all behind the gate, none run */
	trace_clear();
	CHECK_LINES(CHECK_OK(XQueueResume(xq, 0)), 0);
	CHECK_OK(XQueueWaitAll(xq));
	check_log(5);

	/* Later suspensions: the gate only, no KFD call, no log line. */
	CHECK_LINES(CHECK_OK(XQueueSuspend(xq, 0)), 0);
	submit_records(xq, 5, 3);
	t_sleep_us(5000);
	CHECK(atomic_load(&run_n) == 5);
	CHECK_LINES(CHECK_OK(XQueueResume(xq, 0)), 0);
	CHECK_OK(XQueueWaitAll(xq));
	check_log(8);
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_TRACE("");
	CHECK_CLEAN();
}

static void inject_eio(void)
{
	F.suspend_err = -EIO;
}

static void inject_hw_error(void)
{
	F.q[0].suspend_status = ERR_BIT; /* marked suspended, then a hardware error */
}

static void inject_refused(void)
{
	F.q[0].suspend_status = INV_BIT;
}

static void inject_short_count(void)
{
	F.suspend_ret_override = 0; /* clean entries, but KFD counts none */
}

static void inject_eperm(void)
{
	F.runtime_state = XS_KFD_RUNTIME_STATE_DISABLED;
}

static void test_suspend_failures(void)
{
	HwQueueHandle a, b;
	XQueueHandle xa;

	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	/* The only attached queue degrades: released, so the trap is disabled too. */
	check_suspend_fails(inject_eio, "EIO", "suspend[3] disable close");
	check_suspend_fails(inject_hw_error, "hardware-error",
			    "suspend[3] resume[3] disable close");
	check_suspend_fails(inject_refused, "invalid", "suspend[3] disable close");
	check_suspend_fails(inject_short_count, "0 of 1", "suspend[3] resume[3] disable close");
	check_suspend_fails(inject_eperm, "EPERM", "suspend[3] disable close");

	/* The rollback itself fails: the queue stays suspended (error line), and the next
	 * resume retries and releases it; the other queue keeps Lv3 and the trap. */
	fake_reset(2);
	a = lv3_queue(0);
	b = lv3_queue(1);
	CHECK_OK(XQueueCreate(&xa, a, kPreemptLevelInterrupt, 0));
	fake_lock();
	F.q[0].suspend_status = ERR_BIT;
	F.q[0].resume_status = ERR_BIT;
	fake_unlock();
	trace_clear();
	CHECK_LINES(CHECK_OK(XQueueSuspend(xa, 0)), 1);
	CHECK_LOGGED("stays suspended until a retry succeeds");
	/* Suspend, the rollback, and the one retry of the degrade. */
	CHECK_TRACE("suspend[3] resume[3] resume[3]");
	CHECK(fake_queue_suspended(QID(0)));
	fake_lock();
	F.q[0].resume_status = 0;
	fake_unlock();
	trace_clear();
	CHECK_LINES(CHECK_OK(XQueueResume(xa, 0)), 0);
	CHECK_TRACE("resume[3]");
	CHECK(fake_suspended_count() == 0);
	CHECK(fake_enabled());
	trace_clear();
	CHECK_LINES(CHECK_OK(XQueueSuspend(xa, 0)), 0);
	CHECK_OK(XQueueResume(xa, 0));
	CHECK_OK(XQueueDestroy(xa));
	CHECK_OK(HwQueueDestroy(a));
	CHECK_TRACE("");
	CHECK_OK(HwQueueDestroy(b));
	CHECK_TRACE("disable close");
	CHECK_CLEAN();
}

/* Batches through xs_lv3_interrupt_many(): one KFD call; a refused batch is retried
 * queue by queue so that only the bad queue degrades. */
static void test_batch(void)
{
	xs_lv3 *l[3];
	bool s[4];

	fake_reset(3);
	for (int i = 0; i < 3; i++)
		CHECK_LINES(CHECK_OK(xs_lv3_attach(&l[i], RING(i), 2, "test queue")), 0);
	CHECK(xs_lv3_queue_id(l[2]) == QID(2));
	trace_clear();
	CHECK_LINES(CHECK(xs_lv3_interrupt_many(l, 3, s) == 3), 0);
	CHECK_TRACE("suspend[3,5,7]");
	CHECK(s[0] && s[1] && s[2]);
	CHECK(fake_suspended_count() == 3);
	/* Already suspended: no call. */
	trace_clear();
	CHECK(xs_lv3_interrupt(l[1]));
	CHECK_TRACE("");
	for (int i = 0; i < 3; i++)
		CHECK_OK(xs_lv3_restore(l[i]));
	CHECK_TRACE("resume[3] resume[5] resume[7]");

	/* Duplicates and NULL entries. */
	xs_lv3 *dup[4] = {l[0], NULL, l[0], l[2]};
	trace_clear();
	CHECK(xs_lv3_interrupt_many(dup, 4, s) == 3);
	CHECK(s[0] && !s[1] && s[2] && s[3]);
	CHECK_TRACE("suspend[3,7]");
	CHECK_OK(xs_lv3_restore(l[0]));
	CHECK_OK(xs_lv3_restore(l[2]));

	/* Queue 5 refused: the batch is undone, then each alone. */
	fake_lock();
	F.q[1].suspend_status = INV_BIT;
	fake_unlock();
	trace_clear();
	CHECK_LINES(CHECK(xs_lv3_interrupt_many(l, 3, s) == 2), 1);
	CHECK_LOGGED("test queue: Lv3 interrupt failed");
	CHECK_TRACE("suspend[3,5,7] resume[3,7] suspend[3] suspend[5] suspend[7]");
	CHECK(s[0] && !s[1] && s[2]);
	CHECK(xs_lv3_degraded(l[1]) && !xs_lv3_degraded(l[0]));
	/* The degraded queue is skipped from now on. */
	for (int i = 0; i < 3; i++)
		CHECK_OK(xs_lv3_restore(l[i]));
	trace_clear();
	CHECK(xs_lv3_interrupt_many(l, 3, NULL) == 2);
	CHECK_TRACE("suspend[3,7]");
	for (int i = 0; i < 3; i++)
		xs_lv3_detach(l[i]); /* resumes first */
	CHECK_TRACE("suspend[3,7] resume[3] resume[7] disable close");
	CHECK_CLEAN();

	CHECK(!xs_lv3_interrupt(NULL));
	CHECK_OK(xs_lv3_restore(NULL));
	xs_lv3_detach(NULL);
	CHECK(xs_lv3_interrupt_many(NULL, 3, s) == 0);
	CHECK_LINES(CHECK_RES(xs_lv3_attach(NULL, RING(0), 2, NULL), kXSchedErrorInvalidValue), 1);
}

/* ---- (d) destroy while suspended ---- */

static void test_destroy_while_suspended(void)
{
	HwQueueHandle a, b;
	XQueueHandle xa, xb;
	static int ia[4] = {0, 1, 2, 3};

	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));

	/* Both suspended with commands pending; each XQueueDestroy resumes its queue and
	 * drains it; DISABLE only after the second HwQueueDestroy. */
	fake_reset(2);
	a = lv3_queue(0);
	b = lv3_queue(1);
	CHECK_OK(XQueueCreate(&xa, a, kPreemptLevelInterrupt, 0));
	CHECK_OK(XQueueCreate(&xb, b, kPreemptLevelInterrupt, 0));
	log_reset();
	trace_clear();
	CHECK_OK(XQueueSuspend(xa, 0));
	CHECK_OK(XQueueSuspend(xb, 0));
	CHECK_TRACE("suspend[3] suspend[5]");
	submit_records(xa, 0, 3);
	t_submit_fn(xb, t_sleep_fn, &(int64_t){100});
	CHECK(fake_suspended_count() == 2);
	CHECK(atomic_load(&run_n) == 0);
	CHECK_LINES(CHECK_OK(XQueueDestroy(xa)), 0);
	check_log(3);
	CHECK_TRACE("suspend[3] suspend[5] resume[3]");
	CHECK(!fake_queue_suspended(QID(0)) && fake_queue_suspended(QID(1)));
	CHECK_OK(HwQueueDestroy(a));
	CHECK_TRACE("suspend[3] suspend[5] resume[3]");
	CHECK(fake_enabled());
	CHECK_OK(XQueueDestroy(xb));
	CHECK_TRACE("suspend[3] suspend[5] resume[3] resume[5]");
	CHECK_OK(HwQueueDestroy(b));
	CHECK_TRACE("suspend[3] suspend[5] resume[3] resume[5] disable close");
	CHECK_CLEAN();

	/* The resume at XQueueDestroy fails: the KFD queue stays suspended (one line) and
	 * HwQueueDestroy resumes it before the queue goes away. */
	fake_reset(2);
	a = lv3_queue(0);
	b = lv3_queue(1);
	CHECK_OK(XQueueCreate(&xa, a, kPreemptLevelInterrupt, 0));
	CHECK_OK(XQueueSuspend(xa, 0));
	t_submit_fn(xa, record_fn, &ia[0]);
	fake_lock();
	F.resume_err = -EIO;
	fake_unlock();
	trace_clear();
	CHECK_LINES(CHECK_OK(XQueueDestroy(xa)), 1);
	CHECK_LOGGED("Lv3 restore failed");
	CHECK_TRACE("resume[3] resume[3]");
	CHECK(fake_queue_suspended(QID(0)));
	fake_lock();
	F.resume_err = 0;
	fake_unlock();
	CHECK_LINES(CHECK_OK(HwQueueDestroy(a)), 0);
	CHECK_TRACE("resume[3] resume[3] resume[3]");
	CHECK(fake_suspended_count() == 0);
	CHECK(fake_enabled());
	CHECK_OK(HwQueueDestroy(b));
	CHECK_CLEAN();

	/* The last HwQueue goes while its resume keeps failing: DISABLE resumes it. */
	fake_reset(1);
	a = lv3_queue(0);
	CHECK_OK(XQueueCreate(&xa, a, kPreemptLevelInterrupt, 0));
	CHECK_OK(XQueueSuspend(xa, 0));
	fake_lock();
	F.resume_err = -EIO;
	fake_unlock();
	trace_clear();
	CHECK_LINES(CHECK_OK(XQueueDestroy(xa)), 1);
	CHECK_LINES(CHECK_OK(HwQueueDestroy(a)), 1);
	CHECK_LOGGED("detach");
	CHECK_TRACE("resume[3] resume[3] resume[3] disable close");
	CHECK_CLEAN();
}

/* ---- (e) changing the level while suspended ---- */

static void set_level(XQueueHandle xq, int64_t level)
{
	int64_t got = 0;
	CHECK_LINES(CHECK_OK(XQueueSetPreemptLevel(xq, level)), 0);
	CHECK_OK(XQueueGetPreemptLevel(xq, &got));
	CHECK(got == level);
}

static void test_relevel(void)
{
	HwQueueHandle a, plain;
	XQueueHandle xa, xp;

	CHECK_OK(XHintSetScheduler(kSchedulerAppManaged, kPolicyUnknown));
	fake_reset(1);
	a = lv3_queue(0);
	CHECK_OK(XQueueCreate(&xa, a, kPreemptLevelDeactivate, 0));
	log_reset();
	trace_clear();

	/* Running: level changes touch nothing in KFD. */
	set_level(xa, kPreemptLevelInterrupt);
	set_level(xa, kPreemptLevelBlock);
	set_level(xa, kPreemptLevelDeactivate);
	CHECK_TRACE("");

	CHECK_OK(XQueueSuspend(xa, 0));
	submit_records(xa, 0, 4);
	CHECK_TRACE("");
	set_level(xa, kPreemptLevelInterrupt); /* 2 -> 3 while suspended: interrupt */
	CHECK_TRACE("suspend[3]");
	CHECK(fake_queue_suspended(QID(0)));
	set_level(xa, kPreemptLevelInterrupt); /* no change */
	CHECK_TRACE("suspend[3]");
	set_level(xa, kPreemptLevelDeactivate); /* 3 -> 2: restore, the gate holds it */
	CHECK_TRACE("suspend[3] resume[3]");
	CHECK(!fake_queue_suspended(QID(0)));
	set_level(xa, kPreemptLevelBlock);
	set_level(xa, kPreemptLevelInterrupt); /* 1 -> 3 */
	CHECK_TRACE("suspend[3] resume[3] suspend[3]");
	CHECK(fake_queue_suspended(QID(0)));
	set_level(xa, kPreemptLevelBlock); /* 3 -> 1 */
	CHECK_TRACE("suspend[3] resume[3] suspend[3] resume[3]");
	set_level(xa, kPreemptLevelInterrupt);
	CHECK(atomic_load(&run_n) == 0); /* suspended throughout */
	CHECK_OK(XQueueResume(xa, 0));
	CHECK_TRACE("suspend[3] resume[3] suspend[3] resume[3] suspend[3] resume[3]");
	CHECK_OK(XQueueWaitAll(xa));
	check_log(4);
	CHECK(fake_suspended_count() == 0);

	/* Commands launched ungated at Lv1 are held too once Lv3 interrupts the queue (the
	 * gate does not hold them; the unmapped queue does). */
	set_level(xa, kPreemptLevelBlock);
	atomic_store(&blocker_started, false);
	atomic_store(&blocker_release, false);
	t_submit_fn(xa, blocker_fn, NULL);
	submit_records(xa, 4, 3);
	CHECK(t_wait_for(is_true, &blocker_started, WAIT_MS));
	CHECK(t_wait_for(all_launched, &xa, WAIT_MS));
	CHECK_OK(XQueueSuspend(xa, 0));
	set_level(xa, kPreemptLevelInterrupt);
	CHECK(fake_queue_suspended(QID(0)));
	atomic_store(&blocker_release, true);
	t_sleep_us(20000);
	CHECK(atomic_load(&run_n) == 4);
	CHECK_OK(XQueueResume(xa, 0));
	CHECK_OK(XQueueWaitAll(xa));
	check_log(7);
	CHECK(fake_suspended_count() == 0);

	/* After a degrade, level 3 acts as Lv2: no KFD call at all. */
	CHECK_OK(XQueueSuspend(xa, 0));
	CHECK_OK(XQueueResume(xa, 0));
	fake_lock();
	F.suspend_err = -EIO;
	fake_unlock();
	CHECK_LINES(CHECK_OK(XQueueSuspend(xa, 0)), 1);
	trace_clear();
	set_level(xa, kPreemptLevelDeactivate);
	set_level(xa, kPreemptLevelInterrupt);
	CHECK_OK(XQueueResume(xa, 0));
	CHECK_TRACE("");
	CHECK(fake_suspended_count() == 0);
	CHECK(!fake_enabled());

	/* A queue without Lv3 refuses level 3. */
	CHECK_OK(HostQueueCreate(&plain));
	CHECK_OK(XQueueCreate(&xp, plain, kPreemptLevelDeactivate, 0));
	CHECK_LINES(
	    CHECK_RES(XQueueSetPreemptLevel(xp, kPreemptLevelInterrupt), kXSchedErrorNotSupported),
	    1);
	CHECK_OK(XQueueDestroy(xp));
	CHECK_OK(HwQueueDestroy(plain));
	CHECK_OK(XQueueDestroy(xa));
	CHECK_OK(HwQueueDestroy(a));
	CHECK_CLEAN();
}

int main(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
	    {"hpf_interrupt_restore", test_hpf_interrupt_restore},
	    {"attach_failures", test_attach_failures},
	    {"suspend_failures", test_suspend_failures},
	    {"batch", test_batch},
	    {"destroy_while_suspended", test_destroy_while_suspended},
	    {"relevel", test_relevel},
	};

	/* Warnings and errors are what the checks count. */
	xs_log_set_level(XS_LOG_WARN);
	atexit(capture_dump_at_exit);
	xs_cwsr_set_sys(&fake_sys);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		tests[i].fn();
		printf("ok   %s\n", tests[i].name);
		fflush(stdout);
	}
	CHECK_OK(XSchedShutdown());
	xs_cwsr_set_sys(NULL);
	return 0;
}
