/**
 * @file xsched.h
 * @brief libxsched: preemptive priority scheduling of GPU work inside one process.
 *
 * The one public header. It is source-compatible with XSched's C API (XpuOS/xsched,
 * include/xsched/{types,xqueue,hint}.h): the same handle types, enum names and values,
 * function names and signatures. Calls XSched lacks carry the same style of name.
 *
 * Model (terms from the XSched paper, OSDI 2025):
 * - a **HwQueue** wraps a hardware command queue the application owns (a HIP or CUDA
 *   stream, or a host queue executed by a CPU thread);
 * - an **XQueue** is a software queue in front of one HwQueue; commands submitted to it
 *   are *enqueued* on the HwQueue (at most `threshold` incomplete) and *committed* (free
 *   to run on the device) when the scheduler lets them: at Lv1 enqueuing commits
 *   (progressive launching); at Lv2 each command waits on the device for a counter the
 *   library stores, so commands are enqueued ahead and committed by one store;
 * - a **command** (HwCommand) is one unit of work: a host function, a launch callback, and
 *   on GPU backends kernels, copies and events;
 * - the **scheduler** is one in-process thread that, through a policy (HPF by default),
 *   suspends and resumes XQueues, bounds per device the committed work of XQueues below
 *   the top priority present (the commitment budget, XHintCommitBudget()) and gives the
 *   others the device's greatest hardware stream priority (CUDA).
 *
 * Threads: the library has one scheduler thread and, per device, one progress thread
 * ("xs-progress": completions) and one launch thread ("xs-launch": commands that could
 * not be enqueued at submit time), and per device on a board shared with other processes
 * one watcher ("xs-board"); their number does not grow with the XQueues.
 *
 * Several processes: processes that use one GPU coordinate through a board in shared
 * memory (/dev/shm/xsched-<GPU UUID>; XSCHED_BOARD, XQueueGetBoard()), with no daemon:
 * priorities compare across them as within one process.
 *
 * Stall release: a runtime call that waits for every stream (a CUDA module load, as in
 * cudnnCreate; cudaFree) would wait for ever for commands a suspended XQueue holds behind
 * its counter at Lv2 while it blocks the launches that would end the suspension. When a
 * device shows no progress for XSCHED_STALL_RELEASE_US (default 1000000 us; 0 = off)
 * while XQueues hold such commands, the library commits them and lets those streams
 * drain; the XQueues stay suspended (doc/architecture.md, "Stall release").
 *
 * Units: durations are microseconds (us) where XSched uses them (hints) and nanoseconds
 * (ns) in statistics; sizes are bytes.
 *
 * Errors: every call returns an XResult (XResultName() gives its name). A call that fails
 * for a reason it can put in words keeps that reason for the calling thread
 * (XResultLastMessage()); when logging is on (`XSCHED_LOG=debug|info|warn|error`, any
 * case) it also prints it as one line to stderr. The library prints nothing otherwise, but
 * for one line per bad setting in the environment, whatever XSCHED_LOG says: a value the
 * library cannot use (`XSCHED_POLICY=BOGUS`, `XSCHED_BUDGET_US=abc`, `XSCHED_LOG=1`) is
 * named with what is used instead, once per process.
 *
 * fork(): a child starts from a clean library state (pthread_atfork). Every handle of the
 * parent is unusable in the child (kXSchedErrorNotFound, with a log line naming the fork;
 * its queues' threads do not exist there), the child's first XQueue starts the scheduler
 * again, and exit() in the child joins nothing of the parent's. GPU contexts do not
 * survive fork() (CUDA and HIP say so); host queues work in the child. A child forked
 * inside a host function or launch callback may use the library as any other (its thread
 * runs no command of the child's), but must leave with exit() or _exit() rather than
 * return from that function: the command and its queue are the parent's.
 *
 * This header needs no GPU headers and compiles as C99 and C++. Included after
 * cuda_runtime_api.h, it also defines HwCommandCreateCudaKernel() (end of the file).
 */
#ifndef XSCHED_H
#define XSCHED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks the public API; the shared library exports these names and no others. */
#if defined(XSCHED_BUILDING) && defined(__GNUC__)
#define XSCHED_API __attribute__((visibility("default")))
#else
#define XSCHED_API
#endif

/** @name Version (read by meson from this header) */
/**@{*/
#define XSCHED_VERSION_MAJOR 0
#define XSCHED_VERSION_MINOR 6
#define XSCHED_VERSION_PATCH 0
/**@}*/

/** Handle to an XQueue. 0 is never a valid handle. */
typedef uint64_t XQueueHandle;
/**
 * Handle to a HwQueue. For HIP and CUDA queues the value equals the native stream pointer
 * (as in XSched), so a launch callback may cast it back to its stream; host queues get
 * library-issued values. 0 is never a valid handle.
 */
typedef uint64_t HwQueueHandle;
/** Handle to a command. 0 is never a valid handle. */
typedef uint64_t HwCommandHandle;

/** Result of every call. Values 0-6 and 999 are XSched's; XResultName() names them. */
typedef enum {
	kXSchedSuccess = 0,           /**< The call did what it says. */
	kXSchedErrorHardware = 1,     /**< The device, its runtime or a command failed. */
	kXSchedErrorInvalidValue = 2, /**< An argument is out of range or a pointer is null. */
	kXSchedErrorNotFound = 3,     /**< A handle is 0, unknown or already destroyed. */
	kXSchedErrorNotAllowed = 4,   /**< The call is valid but not in the object's state. */
	kXSchedErrorNotSupported = 5, /**< This build, HwQueue or machine cannot do it. */
	kXSchedErrorBadResponse = 6,  /**< Kept for XSched compatibility; not returned. */
	kXSchedErrorUnknown = 999,    /**< Out of memory or an internal error. */
} XResult;

/** Preemption levels (XSched's values). A HwQueue supports a prefix of them. */
typedef enum {
	kPreemptLevelUnknown = 0,
	/** Lv1, progressive launching: stop launching; in-flight commands finish. */
	kPreemptLevelBlock = 1,
	/** Lv2: a device-side counter gate stops the HwQueue at its next command boundary. */
	kPreemptLevelDeactivate = 2,
	/** Lv3: running work is interrupted and later restored (AMD CWSR). */
	kPreemptLevelInterrupt = 3,
	kPreemptLevelMax,
} XPreemptLevel;

/** State reported by XQueueQuery(). */
typedef enum {
	kQueueStateUnknown = 0,
	kQueueStateIdle = 1,  /**< Every submitted command has completed. */
	kQueueStateReady = 2, /**< Some command is pending or in flight. */
} XQueueState;

/** Flags of XQueueCreate(). */
typedef enum {
	kQueueCreateFlagNone = 0x0000,
	/** XSched's blocking submit; not supported (as in XSched). */
	kQueueCreateFlagBlockingSubmit = 0x0001,
	kQueueCreateFlagMaskAll = -1,
} XQueueCreateFlag;

/** Flags of XQueueSuspend(). */
typedef enum {
	kQueueSuspendFlagNone = 0x0000,
	/** Return only once no launched command of the XQueue is still running (Lv1 only). */
	kQueueSuspendFlagSyncHwQueue = 0x0001,
	kQueueSuspendFlagWaitAll = 0x0002,  /**< Not supported. */
	kQueueSuspendFlagWaitIdle = 0x0004, /**< Not supported. */
	kQueueSuspendFlagMaskAll = -1,
} XQueueSuspendFlag;

/** Flags of XQueueResume(). */
typedef enum {
	kQueueResumeFlagNone = 0x0000,
	kQueueResumeFlagDropCommands = 0x0001, /**< Not supported. */
	kQueueResumeFlagMaskAll = -1,
} XQueueResumeFlag;

/** Scheduler kinds (XSched's values). */
typedef enum {
	kSchedulerUnknown = 0,
	/** No scheduler thread: the application calls XQueueSuspend()/XQueueResume(). */
	kSchedulerAppManaged = 1,
	/** One scheduler thread in this process, driven by a policy (the default). */
	kSchedulerLocal = 2,
	/** XSched's cross-process server; not supported. */
	kSchedulerGlobal = 3,
	kSchedulerMax,
} XSchedulerType;

/**
 * Scheduling policies. Values 0-11 and kPolicyMax (12) are XSched's and keep their
 * meaning; this library's own policies take values from 100 up, so that they can never
 * collide with a value XSched adds later. A valid policy lies in
 * (kPolicyUnknown, kPolicyMax) or [kPolicyFirstInFirstOut, kPolicyExtendedMax).
 * doc/policies.md describes each one, its hints and its source.
 */
typedef enum {
	kPolicyUnknown = 0,
	/** HPF: while a queue of higher priority has work, lower ones are suspended. */
	kPolicyHighestPriorityFirst = 1,
	kPolicyHeterogeneousHighestPriorityFirst = 2, /**< XSched's HHPF; not built here. */
	kPolicyCPUHighestPriorityFirst = 3,           /**< XSched's CHPF; not built here. */
	/** UP: one queue at a time, round robin, time slices in proportion to
	 *  XHintUtilization(), the round length set by XHintTimeslice(). */
	kPolicyUtilizationPartition = 4,
	kPolicyProcessUtilizationPartition = 5,       /**< XSched's PUP; not built here. */
	kPolicyStrictProcessUtilizationPartition = 6, /**< XSched's SPUP; not built here. */
	/** KEDF: the k queues with the earliest absolute deadlines (ready time +
	 *  XHintDeadline()) run; k from XHintKDeadline(), default 1. */
	kPolicyKEarliestDeadlineFirst = 7,
	/** LAX: HPF on a priority that rises from lax_prio to crit_prio once a queue has been
	 *  ready for its XHintLaxity() time. */
	kPolicyLaxity = 8,
	kPolicyActiveWindowFirst = 9, /**< XSched's AWF (the focused window's process first):
				       *   no meaning inside one process; not built here. */
	/** CFS: weighted fair share; weight 1024 * 1.2^priority (XHintPriority()). */
	kPolicyCompletelyFairScheduler = 10,
	/** MLFQ: levels by device time used (a queue that keeps the device busy sinks, one
	 *  that idles between bursts stays on top), HPF between levels, a boost to the top
	 *  after 100 ms of waiting; XHintPriority() < 0 starts a queue lower. */
	kPolicyMultiLevelFeedbackQueue = 11,
	kPolicyMax, /**< One past XSched's last policy (12), as in XSched. */
	/** FIFO (this library's): the queue that became ready first runs alone until it is
	 *  idle, then the next in arrival order; one that stays ready for a time slice
	 *  (XHintTimeslice()) while others wait goes to the back of the line. */
	kPolicyFirstInFirstOut = 100,
	/** EDF (this library's): KEDF with k fixed at 1, whatever XHintKDeadline() says. */
	kPolicyEarliestDeadlineFirst = 101,
	kPolicyExtendedMax, /**< One past this library's last policy (102). */
} XPolicyType;

/**
 * A launch callback: called when the command's turn to launch comes, with the HwQueue
 * handle (for HIP/CUDA queues, the native stream pointer) and the user's data. It should
 * enqueue work on that queue and return without waiting for it; on a host queue it runs on
 * the queue's executor thread and is the work itself. Its return value becomes the
 * command's result.
 */
typedef XResult (*LaunchCallback)(HwQueueHandle hwq, void *data);

/**
 * A host function command: runs on the HwQueue's executor in launch order. Its return value
 * becomes the command's result (kXSchedSuccess or an error the caller chooses).
 */
typedef XResult (*HostFunction)(void *data);

/** Priority: a signed integer, higher is more important (XSched's range). */
typedef int32_t Priority;
/** XHintPriority(xq, PRIORITY_NO_EXECUTE): the XQueue is not executed (the local
 *  scheduler keeps it suspended, whatever the policy, from the call's return until another
 *  priority is given; XQueueDestroy still drains it). No effect without the local
 *  scheduler. */
#define PRIORITY_NO_EXECUTE -256
#define PRIORITY_MIN        -255
#define PRIORITY_DEFAULT    0
#define PRIORITY_MAX        255

/** Utilization share in percent, 0..100 (XSched's range). */
typedef int32_t Utilization;
#define UTILIZATION_MIN     0
#define UTILIZATION_DEFAULT 100
#define UTILIZATION_MAX     100

/** Time slice in microseconds (XSched's range). */
typedef int64_t Timeslice;
#define TIMESLICE_MIN     100      /* 0.1 ms */
#define TIMESLICE_DEFAULT 5000     /* 5 ms */
#define TIMESLICE_MAX     10000000 /* 10 s */

/** Laxity in microseconds; NO_LAXITY for none. */
typedef int64_t Laxity;
#define NO_LAXITY -1

/** Relative deadline in microseconds; NO_DEADLINE for none. */
typedef int64_t Deadline;
#define NO_DEADLINE -1

/**
 * Launch-config defaults: at most 16 commands in flight; a done mark every 8 commands
 * where nothing limits the XQueue (see XQueueSetLaunchConfig()).
 * Source: XSched's protocol/include/xsched/protocol/def.h (threshold 16, batch size 8).
 */
#define XSCHED_DEFAULT_THRESHOLD  16
#define XSCHED_DEFAULT_BATCH_SIZE 8

/** Per-XQueue statistics returned by XQueueGetStats(). Counters start at 0 on create. */
typedef struct XQueueStats {
	uint64_t submitted;   /**< Commands accepted by XQueueSubmit(). */
	uint64_t launched;    /**< Commands enqueued on the HwQueue (at Lv2 maybe not committed). */
	uint64_t completed;   /**< Commands whose completion was observed. */
	uint64_t failed;      /**< Completed commands whose result was not kXSchedSuccess. */
	uint64_t pending;     /**< Submitted, not yet launched (now). */
	uint64_t in_flight;   /**< Launched, not yet completed (now). */
	uint64_t suspensions; /**< Times the XQueue went from running to suspended. */
	uint64_t suspended_ns; /**< Total time suspended, in ns, including the current spell. */
	/** Highest command number the device may run (Lv2+: the counter; Lv1: = launched). */
	uint64_t committed;
	/** Estimated device time of one command, in ns (moving average of the completions
	 *  observed; 0 before the first). The commitment budget charges this per command. */
	uint64_t est_command_ns;
	/** The slowdown measured for an XQueue with a latency objective
	 *  (XHintLatencyObjective()), per mille of its time alone (1200 = 1.2x): the p99 of its
	 *  units' latency over their alone estimate (the second largest of those since its
	 *  last move), at the controller's last look (after 64 units, 50 ms of them, or a
	 *  violation); 0 without an objective or before the first look. */
	uint64_t slowdown_permille;
	/** Its alone estimate, in ns: the moving average of its command units that ran with no
	 *  lower-priority work committed (0 = none yet, or no objective ever set; that of its
	 *  scope and explicit units is alone_unit_ns). */
	uint64_t alone_command_ns;
	/** The co-run budget in force on the XQueue's device, in ns: a latency objective's
	 *  controller's while a queue of the device has one, else XHintCorunBudget()'s;
	 *  UINT64_MAX = not limited. It is what this process's lower queues get; other
	 *  processes on a device that time-slices processes get none from an objective
	 *  (XBoardInfo.timesliced). */
	uint64_t corun_budget_ns;
	/** For an XQueue with a latency objective: the longest lower-priority command (its
	 *  estimate, ns) charged on its device during the controller's last window (0 without
	 *  an objective or before the first look). Where it exceeds the objective's allowed
	 *  excess over the queue's alone time (alone x (objective - 1)), no co-run budget
	 *  above 0 can hold the objective while such commands run: a committed command holds
	 *  the device until it ends. Each look that finds one is a "lower command too long"
	 *  trace event. Appended in 0.6. */
	uint64_t lower_longest_ns;
	/** The alone estimate of the XQueue's scope units and explicit units
	 *  (XQueueBeginUnit()), in ns (0 = none yet). Appended in 0.7, like the fields below. */
	uint64_t alone_unit_ns;
	/** The latency objective's controller's looks so far (0 without an objective). */
	uint64_t objective_looks;
	/** The pacing in force on the XQueue's device: the eighths (0-8) of a protected unit's
	 *  slack that its slice gives lower-priority work (XQueueBeginUnit()). */
	uint64_t pace_eighths;
	/** The device's pacing slices so far (every XQueue of a device reports the same). */
	uint64_t slices;
	/** Their length, summed, in ns. */
	uint64_t slice_ns;
	/** Lower-priority device time past the slices' ends, summed, in ns: measured at each
	 *  lower command's completion, what delayed the units beyond their slices (owed by the
	 *  next slices, which are that much shorter). */
	uint64_t slice_over_ns;
	/** The hardware priority the library set on the HwQueue's stream (CUDA; see
	 *  XSCHED_HW_PRIORITY): 2 = the device's greatest (the XQueue is of its device's top
	 *  priority), 1 = the least (limited), 0 = none set yet (or never: host queues, the
	 *  setting off). Work captured into a graph on the stream keeps the priority it had at
	 *  capture: capture after this reads 2 (Python: XQueue.capture()). */
	uint64_t hw_priority;
} XQueueStats;

/* ---------------------------------------------------------------------------------------
 * XQueue
 * ------------------------------------------------------------------------------------- */

/**
 * @brief Create an XQueue in front of a HwQueue.
 *
 * The XQueue starts with priority PRIORITY_DEFAULT, threshold XSCHED_DEFAULT_THRESHOLD
 * and batch size XSCHED_DEFAULT_BATCH_SIZE, registered with the scheduler (which is
 * started here on first use unless the application chose kSchedulerAppManaged). It is
 * served by its device's two library threads (started with the device's first XQueue);
 * it owns none. It is reachable by handle (and by XQueueGet()) only once fully built.
 *
 * @param xq    [out] The new handle; written only on success. Owned by the caller, who
 *                    must XQueueDestroy() it.
 * @param hwq   [in]  A HwQueue from HostQueueCreate(), CudaQueueCreate() or
 *                    HipQueueCreate(); at most one XQueue per HwQueue.
 * @param level [in]  Preemption level, an XPreemptLevel from kPreemptLevelBlock up to the
 *                    HwQueue's maximum (HwQueueGetMaxPreemptLevel()).
 * @param flags [in]  kQueueCreateFlagNone.
 * @return kXSchedSuccess;
 *         kXSchedErrorInvalidValue if @p xq is null or @p level is not a level;
 *         kXSchedErrorNotFound if @p hwq is not a live HwQueue;
 *         kXSchedErrorNotSupported if the HwQueue cannot give @p level, or @p flags has
 *         kQueueCreateFlagBlockingSubmit or unknown bits;
 *         kXSchedErrorNotAllowed if the HwQueue already has an XQueue;
 *         kXSchedErrorUnknown if memory or threads could not be had.
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueCreate(XQueueHandle *xq, HwQueueHandle hwq, int64_t level, int64_t flags);

/**
 * @brief Destroy an XQueue, first draining it.
 *
 * Drain, not cancel: every command already submitted is still launched (overriding any
 * suspension, by the application or the scheduler) and waited for, so each waiter gets
 * that command's own result and nothing is lost. The handle becomes invalid at once:
 * concurrent XQueueSubmit() calls get kXSchedErrorNotFound. Returns once every command
 * has completed and the device's library threads no longer use the XQueue (it owns no
 * thread); blocks as long as its commands run. The HwQueue stays alive. The override
 * passes to what the drained commands wait for (a host function's XQueueWait() or
 * XQueueLaunchInline() on another XQueue, an event wait on another XQueue's record): the
 * scheduler neither suspends nor limits those XQueues meanwhile; the application's own
 * XQueueSuspend() and PRIORITY_NO_EXECUTE on them still hold, and the destroy waits for
 * them to be lifted.
 *
 * @param xq [in] The XQueue; 0 is accepted and does nothing.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p xq is not a live XQueue.
 * Thread-safety: any thread, not from a launch callback or host function of this XQueue.
 */
XSCHED_API XResult XQueueDestroy(XQueueHandle xq);

/**
 * @brief Find the XQueue created on a HwQueue.
 * @param xq  [out] Its handle.
 * @param hwq [in]  A HwQueue.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p xq is null;
 *         kXSchedErrorNotFound if @p hwq is not live or has no XQueue.
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueGet(XQueueHandle *xq, HwQueueHandle hwq);

/**
 * @brief Change the preemption level of an XQueue while it runs.
 * @param xq    [in] The XQueue.
 * @param level [in] An XPreemptLevel the HwQueue supports.
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorInvalidValue if @p level is not a level;
 *         kXSchedErrorNotSupported if the HwQueue cannot give it (the level is unchanged).
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueSetPreemptLevel(XQueueHandle xq, int64_t level);

/**
 * @brief Read the preemption level in force.
 * @param xq    [in]  The XQueue.
 * @param level [out] Its XPreemptLevel.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p level is null;
 *         kXSchedErrorNotFound for a bad @p xq.
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueGetPreemptLevel(XQueueHandle xq, int64_t *level);

/**
 * @brief Set the in-flight threshold and the batch size of progressive launching (Lv1).
 *
 * At most @p threshold commands of the XQueue are launched and not yet known complete.
 * A suspend at Lv1 waits for up to @p threshold commands. Takes effect for the next
 * launch; commands already in flight are not affected. @p batch_size is the number of
 * commands per completion point (XSched's meaning): an XQueue that nothing limits (the top
 * priority on its device, below Lv3, no run gate checks) on a host queue, or on a GPU queue
 * (unless `XSCHED_GPU_LAZY_MARKS=0`), puts a done mark
 * on its HwQueue after every batch_size-th command only, and after a command somebody
 * already waits for;
 * the completion of the others is seen with the next mark, or when the HwQueue has run
 * dry (GPU: a stream query). That saves a driver call per command (about 1.1 us of a
 * 4 us kernel launch on an H100, doc/RESULTS.md); in exchange XQueueWait() for such a
 * command may return only once up to batch_size - 1 later commands have run too. A
 * limited XQueue marks every command (the commitment budget counts each). At most half
 * the threshold is used, so that the in-flight window keeps moving.
 *
 * @param xq         [in] The XQueue.
 * @param threshold  [in] Commands in flight, >= 1; <= 0 keeps the current value.
 * @param batch_size [in] Commands per done mark, >= 1 (1: a mark after every command); <= 0
 *                        keeps the current value.
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorInvalidValue if the resulting threshold < batch size (nothing changes).
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueSetLaunchConfig(XQueueHandle xq, int64_t threshold, int64_t batch_size);

/**
 * @brief Read the in-flight threshold and the batch size.
 * @param xq         [in]  The XQueue.
 * @param threshold  [out] Commands in flight; may be null.
 * @param batch_size [out] The batch size last set (see XQueueSetLaunchConfig());
 *                        may be null.
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq.
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueGetLaunchConfig(XQueueHandle xq, int64_t *threshold, int64_t *batch_size);

/**
 * @brief Submit a command; it runs after every command submitted to this XQueue before it.
 *
 * Never blocks on the device and never waits for window space. *Direct submission*:
 * when the XQueue may enqueue now (its window has space; at Lv1 it also runs and, if it
 * is limited, the commitment budget allows; at Lv2 it is not suspended by the
 * application), the command is enqueued on the HwQueue on the calling thread before this
 * returns: a launch callback then runs inline, on this thread (with the XQueue's launch
 * order kept: a caller may also enqueue commands other threads submitted before it).
 * Otherwise the command is buffered and the device's launch thread enqueues it when it
 * may; a launch callback then runs there. The XQueue holds its own reference to the
 * command, so the caller may HwCommandDestroy() it right after submitting (but then
 * cannot XQueueWait() on it). A command is submitted at most once.
 *
 * @param xq     [in] The XQueue.
 * @param hw_cmd [in] A command not yet submitted.
 * @return kXSchedSuccess;
 *         kXSchedErrorNotFound if @p xq or @p hw_cmd is not live (or @p xq is being
 *         destroyed);
 *         kXSchedErrorNotAllowed if @p hw_cmd was already submitted;
 *         kXSchedErrorNotSupported if the command kind cannot run on this HwQueue.
 * Thread-safety: any thread; submissions from several threads are ordered as they take
 * the XQueue's lock.
 */
XSCHED_API XResult XQueueSubmit(XQueueHandle xq, HwCommandHandle hw_cmd);

/**
 * @brief Wait until a submitted command has completed and return its result.
 * @param xq     [in] The XQueue it was submitted to.
 * @param hw_cmd [in] The command.
 * The calling thread waits for the command's own completion number (written by the device
 * after the command) and sleeps rather than spins. On a GPU queue: a command not yet
 * committed is not looked for (its commit wakes the waiter); the waiter of an XQueue below
 * the top priority present (limited by the commitment budget) is woken by the device's
 * progress thread when the command completes; otherwise it sleeps until shortly before the
 * command's expected end (the XQueue's per-command estimate), yield-polls for 20 us, then
 * sleeps in steps of at most 200 us, woken early by a completion the progress thread sees;
 * a queue that shows no progress is asked for faults every millisecond. On a host queue
 * it blocks until the executor has run the command. (doc/architecture.md, "Waiting
 * without spinning".)
 * @return the command's result: kXSchedSuccess, kXSchedErrorHardware (or the error its
 *         host function or launch callback returned) if it failed;
 *         kXSchedErrorNotFound for a bad handle;
 *         kXSchedErrorInvalidValue if @p hw_cmd was not submitted to @p xq;
 *         kXSchedErrorNotAllowed from a launch callback of the same XQueue running inside
 *         its enqueue, for a command not yet complete (it would wait for itself).
 * Thread-safety: any thread, any number of waiters; not from a host function of the same
 * XQueue on a command after it (it would wait for itself).
 */
XSCHED_API XResult XQueueWait(XQueueHandle xq, HwCommandHandle hw_cmd);

/**
 * @brief Wait until every command submitted before this call has completed.
 *
 * The call *covers* the commands submitted before it, less those covered by the
 * XQueueWaitAll() calls on @p xq (of any thread) that had returned when it was made: it
 * reports the first failure among them, each failure once per such call. So every caller
 * waiting on the same commands at once gets the same failure, a command submitted after
 * the call never decides its result (even if it fails before the call returns), and a
 * failure is reported again by no later call (it reports the next failure, if any: the
 * queue stays usable). XQueueWait() reports its own command's result and changes nothing
 * here.
 * @param xq [in] The XQueue.
 * @return kXSchedSuccess if the commands it covers all succeeded; else the first failed
 *         one's result (kXSchedErrorHardware, or the error its host function or launch
 *         callback returned); kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorNotAllowed from a command of @p xq itself (a host function or
 *         launch callback) with commands not yet complete (it would wait for itself); a
 *         call refused so covers nothing.
 * Thread-safety: as XQueueWait().
 */
XSCHED_API XResult XQueueWaitAll(XQueueHandle xq);

/**
 * @brief Launch work on the calling thread as one command of an XQueue.
 *
 * For code that must run on its own thread, such as eager PyTorch operators (thread-local
 * state, the GIL): the command is submitted as XQueueSubmit() would, and when it is its
 * turn and the XQueue may launch it, @p launch is called here, on the calling thread,
 * with the HwQueue's native stream; what it enqueues on that stream is the command. At
 * Lv2 and up it sits behind the command's counter wait, so a suspension stops the stream
 * in front of it; its done mark follows it. Until then the call blocks: while the XQueue
 * is suspended (Lv1, or XQueueSuspend()), while its window (threshold) is full, while the
 * commitment budget has no room (Lv1). Host queues have no stream: @p launch runs at the
 * command's launch and the command is its done mark.
 *
 * With a null @p launch the command is a *boundary*: it enqueues its counter wait and done
 * mark only, so work the caller puts on the stream after the call sits behind it (a
 * preemption point between two pieces of the caller's work, e.g. before each module of a
 * model: bindings/python's module scopes).
 *
 * @param xq     [in] The XQueue.
 * @param launch [in] Called once, before the call returns, with no library lock held;
 *                    or null (a boundary).
 * @param data   [in] Passed to @p launch; not copied or freed.
 * @return What @p launch returned (kXSchedSuccess for a boundary);
 *         kXSchedErrorNotFound if @p xq is not live or is being destroyed;
 *         kXSchedErrorNotAllowed from a command of @p xq itself (it would wait for
 *         itself); kXSchedErrorUnknown if out of memory. The command completes later, as
 *         any other: XQueueWaitAll() waits for it.
 * Thread-safety: any thread; commands of one XQueue keep their submission order across
 *         threads. Blocks (never spins) while it waits.
 */
XSCHED_API XResult XQueueLaunchInline(XQueueHandle xq, LaunchCallback launch, void *data);

/**
 * @brief Open a scope on an XQueue: until it is closed, the XQueue counts as having work.
 *
 * A request of a high-priority model is a chain of commands launched by the host (eager
 * PyTorch): between two of them the XQueue is idle for a moment, and lower-priority
 * XQueues would commit work that the next command then waits behind. While a scope is
 * open, the scheduler treats the XQueue as ready (HPF keeps lower XQueues suspended, the
 * budget's hold keeps them from committing) even when it has nothing in flight. Keep the
 * scope around the work of one request, not around idle waits. Scopes nest (counted).
 * A thread that keeps a scope open and then waits for lower-priority work, directly or
 * through a command that waits for it (a host function's XQueueLaunchInline() on a held
 * XQueue, a synchronous XQueueSuspend() of a queue running such a host function), waits
 * for itself, as it would holding a lock.
 *
 * @param xq [in] The XQueue.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p xq is not live or is being
 *         destroyed (XQueueDestroy() ends its scopes; no scope is opened).
 * Thread-safety: any thread; each XQueueBeginScope() needs one XQueueEndScope().
 */
XSCHED_API XResult XQueueBeginScope(XQueueHandle xq);

/**
 * @brief Close a scope opened by XQueueBeginScope().
 *
 * @param xq [in] The XQueue.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p xq is not live or is being
 *         destroyed (XQueueDestroy() ends its scopes: a call racing it gets this, never
 *         kXSchedErrorNotAllowed); kXSchedErrorNotAllowed if no scope is open.
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueEndScope(XQueueHandle xq);

/**
 * @brief Begin one unit of an XQueue's latency objective: a decode step, a denoising step,
 * a request; the work submitted or launched on its stream until XQueueEndUnit().
 *
 * Units are what XHintLatencyObjective() holds at the tail: each unit's latency, from this
 * call to the device's completion of the work before XQueueEndUnit(), may be at most the
 * objective times the unit's latency alone. Inside a request's scope
 * (XQueueBeginScope()) the units can be finer than the request: an LLM server states a
 * time-per-token objective with one unit per decode step. Once an XQueue has called this,
 * only its explicit units are measured (not its commands or scopes).
 *
 * *Pacing.* On a protected XQueue (it has an objective, it is of its device's top priority)
 * with nothing of its own in flight, the call opens a *slice* of the unit's share of the
 * slack: level/8 x (objective - 1) x its latency alone (the level is the objective
 * controller's, 0 to 8 eighths). While it is open, lower-priority XQueues commit only
 * commands predicted to end within it (their device time at the same position of their
 * scope last time, else their longest lately); outside slices they commit nothing while the
 * unit runs (as at a co-run budget of 0). By default the slice runs beside the unit and the
 * call returns at once; with `XSCHED_PACE_WAIT=1` the unit waits it out first: the call
 * blocks until the slice ends, or sooner when no lower work runs in it and none fits.
 * Spent this way, per unit and not in bursts, the slack is bounded per unit (a lower
 * command's predicted time fits the slice, so what it holds is over when the slice ends).
 * What a lower command held past its slice's end is measured at its completion and taken
 * from the next slices (doc/architecture.md, "Pacing"). Without an objective, a slice or
 * lower work, the call only marks the unit.
 *
 * Units do not nest on one XQueue; the next may begin before the last one's work
 * completed (up to 8 in flight are measured, each from its own arrival). While a unit is
 * open the XQueue counts as having work, as in a scope.
 *
 * @param xq [in] The XQueue.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p xq is not live or is being destroyed
 *         (also where the destroy came while the call waited out a slice);
 *         kXSchedErrorNotAllowed (logged) if a unit is open on it already, or from a
 *         command of @p xq itself (a launch callback or host function).
 * Thread-safety: any thread but the library's; with XSCHED_PACE_WAIT=1 it blocks for at
 * most the slice (the GIL is released in Python). Each XQueueBeginUnit() needs one
 * XQueueEndUnit() (any thread, a command of the XQueue's own included).
 */
XSCHED_API XResult XQueueBeginUnit(XQueueHandle xq);

/**
 * @brief End the unit begun by XQueueBeginUnit(): the unit ends when the device has
 * completed the work submitted or launched on the XQueue's stream before this call.
 *
 * On a measured unit it submits a boundary (a command without a launch: a done mark on
 * the stream, about a microsecond on a GPU) and returns without waiting: the boundary goes
 * behind the XQueue's window, a suspension or the budget as any command does (it returns
 * while the XQueue is suspended), and the unit's end is seen when the boundary completes.
 *
 * @param xq [in] The XQueue.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p xq is not live or is being destroyed;
 *         kXSchedErrorNotAllowed (logged) if no unit is open; kXSchedErrorUnknown if out of
 *         memory for the boundary (the unit is closed all the same, not measured).
 * Thread-safety: any thread, a launch callback or host function of the XQueue's own
 * included.
 */
XSCHED_API XResult XQueueEndUnit(XQueueHandle xq);

/**
 * @brief Enqueue a check of the XQueue's run gate on its stream, for graph capture.
 *
 * The run gate is a word of the HwQueue that is open while the XQueue runs and closed
 * while it is suspended (by the scheduler or XQueueSuspend()). This call puts a wait for
 * it at the current end of the native stream, outside the XQueue's commands, from the
 * calling thread. Call it while the stream is being captured (CUDA graphs, HIP graphs),
 * once before each kernel: a replay of the graph (one command of the XQueue) then stops
 * at the next check while the XQueue is suspended, instead of running to its end. The
 * captured checks refer to this HwQueue's gate: do not replay the graph after
 * HwQueueDestroy(). Host queues append a check entry (it holds the queue while closed).
 *
 * @param xq [in] The XQueue; nothing else may enqueue on its stream during the call.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p xq is not live;
 *         kXSchedErrorNotSupported if the HwQueue cannot wait on memory (its maximum
 *         level is Lv1); kXSchedErrorHardware if the runtime refused the wait (logged
 *         with its error string).
 * Thread-safety: any thread, with the stream's context current (GPU).
 */
XSCHED_API XResult XQueueEnqueueGateCheck(XQueueHandle xq);

/**
 * @brief Report whether the XQueue has work.
 * @param xq    [in]  The XQueue.
 * @param state [out] kQueueStateIdle or kQueueStateReady.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p state is null;
 *         kXSchedErrorNotFound for a bad @p xq.
 * Thread-safety: any thread; the answer may be stale by the time it returns.
 */
XSCHED_API XResult XQueueQuery(XQueueHandle xq, XQueueState *state);

/**
 * @brief Suspend an XQueue (application-managed suspension). Re-entrant.
 *
 * Nothing new reaches the HwQueue; at Lv2 the commands already enqueued but not yet
 * started are also withdrawn (the counter is lowered), so the HwQueue stops at its next
 * command boundary. (One exception, the first suspension of an XQueue whose priority was
 * until then above every other XQueue's of the process, under HPF: such an XQueue enqueues
 * without counter waits, as no scheduler pass suspends it, and at most its window of
 * commands enqueued that way runs on; from its first suspension on it keeps its waits.
 * XSCHED_TOP_GATES=1 in the environment keeps them from the start.) (A suspension by the
 * scheduler differs in one way: at Lv2 the XQueue keeps enqueuing behind the counter, so
 * that its resume is one store.) Application and scheduler suspensions are kept apart: the
 * XQueue runs only when neither holds it. Suspending twice needs only one resume.
 *
 * @param xq    [in] The XQueue.
 * @param flags [in] 0 or kQueueSuspendFlagSyncHwQueue (return once in-flight commands
 *                   have completed; Lv1 only).
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorNotSupported for other flags, for SyncHwQueue above Lv1, or for
 *         SyncHwQueue while commands enqueued after a run gate check
 *         (XQueueEnqueueGateCheck()) are in flight: stopped at a closed check, they
 *         would never complete (the XQueue is then not suspended);
 *         kXSchedErrorNotAllowed for SyncHwQueue from a command of @p xq itself (a host
 *         function, or a launch callback running inside its enqueue): it would wait for
 *         itself. The XQueue is then not suspended.
 * Thread-safety: any thread; with SyncHwQueue, not from a command of @p xq (above).
 */
XSCHED_API XResult XQueueSuspend(XQueueHandle xq, int64_t flags);

/**
 * @brief Resume an XQueue suspended by XQueueSuspend(). Re-entrant.
 * @param xq    [in] The XQueue.
 * @param flags [in] 0.
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorNotSupported for any flag (DropCommands is not supported).
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueResume(XQueueHandle xq, int64_t flags);

/**
 * @brief Read an XQueue's statistics.
 * @param xq    [in]  The XQueue.
 * @param stats [out] Filled on success.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p stats is null;
 *         kXSchedErrorNotFound for a bad @p xq.
 * Thread-safety: any thread; the fields are read together under the XQueue's lock.
 */
XSCHED_API XResult XQueueGetStats(XQueueHandle xq, XQueueStats *stats);

/** XBoardInfo's value for "no priority". */
#define XBOARD_NONE INT32_MIN

/**
 * What XQueueGetBoard() reports: the board through which the processes that use the
 * XQueue's device coordinate, with no daemon (doc/architecture.md, "Several processes on
 * one GPU: the board"). Priorities compare across processes as they do within one: an
 * XQueue below another process's top priority present on the device is limited by the
 * commitment budget, which the processes with lower work share, and is suspended while
 * one of that process's top XQueues has work (HPF).
 */
typedef struct XBoardInfo {
	/** 1 while this process holds a slot on the device's board; 0 when it runs alone on
	 *  the device: XSCHED_BOARD=off, host queues with XSCHED_BOARD=auto (the default), a
	 *  board refused (permissions, another version: logged) or full, a device without a
	 *  UUID, or a policy other than HPF (then 1, but it takes no part: others_top and
	 *  others_busy are XBOARD_NONE). */
	int32_t joined;
	/** Other processes found live on the board at the last look (within 20 ms). */
	int32_t processes;
	/** The greatest priority among the other processes' XQueues on the device, idle ones
	 *  included, or XBOARD_NONE: this process's XQueues below it are limited. */
	int32_t others_top;
	/** The priority of another process's XQueue that has work now at the device's top
	 *  priority, and so holds this process's lower XQueues (suspended, or kept to that
	 *  XQueue's co-run budget), or XBOARD_NONE. */
	int32_t others_busy;
	/** 1 if this XQueue is limited: below its device's top priority present in this
	 *  process or another (what it commits counts against the commitment budget). */
	int32_t limited;
	/** The processes with lower-priority work on the device that share its commitment
	 *  budget (XHintCommitBudget()), this one included: 1 = the whole budget is its own. */
	int32_t share;
	/** 1 if the device runs one process's work at a time, time-slicing between
	 *  processes (CUDA without MPS, or a driver that cannot tell; host queues with
	 *  XSCHED_HOST_TIMESLICED=1 and XSCHED_BOARD=DIR): a latency objective of this process
	 *  then lets no other process's lower work co-run with its units. 0 where processes
	 *  share the device (AMD, CUDA with MPS) and while not joined. Decided when the
	 *  process joins the device's board (an MPS server started later is not seen).
	 *  Appended in 0.7, like the fields below. */
	int32_t timesliced;
	/** Unused, 0 (others_corun_ns stays 8-byte aligned in every ABI). */
	int32_t reserved;
	/** The co-run budget that the processes busy at others_busy's priority allow lower
	 *  work beside them (the least of theirs), in ns, before this process's share of it is
	 *  taken: 0 = nothing new, INT64_MAX = not limited; 0 while others_busy is
	 *  XBOARD_NONE. */
	int64_t others_corun_ns;
} XBoardInfo;

/**
 * @brief Read what the board of an XQueue's device says (XBoardInfo).
 *
 * The board is a file in shared memory, one per device (/dev/shm/xsched-<device UUID> by
 * default; `XSCHED_BOARD=auto|off|DIR`, `XSCHED_BOARD_GROUP=name`, README), joined when
 * the device's first XQueue is created and left when its last is destroyed. With
 * `XSCHED_LOG=info` the library logs the board's path when it joins, and why not when it
 * runs alone.
 * @param xq   [in]  The XQueue.
 * @param info [out] Filled on success.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p info is null;
 *         kXSchedErrorNotFound for a bad @p xq.
 * Thread-safety: any thread; lock-free reads of the board, the XQueue's limit under its
 * lock.
 */
XSCHED_API XResult XQueueGetBoard(XQueueHandle xq, XBoardInfo *info);

/**
 * @brief Number of commands submitted to an XQueue (XSched's profiling call).
 * @param xq    [in]  The XQueue.
 * @param count [out] Commands submitted so far.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p count is null;
 *         kXSchedErrorNotFound for a bad @p xq.
 * Thread-safety: any thread.
 */
XSCHED_API XResult XQueueProfileHwCommandCount(XQueueHandle xq, int64_t *count);

/* ---------------------------------------------------------------------------------------
 * HwQueue
 * ------------------------------------------------------------------------------------- */

/**
 * @brief Create a host HwQueue: commands run in launch order on a CPU thread it owns.
 *
 * The reference backend: it needs no GPU and supports Lv1 and Lv2 (its executor checks a
 * gate word before each command). It runs host functions, launch callbacks, event records
 * and event waits; XQueueSubmit() refuses the GPU-only kinds (kernels, copies, fills) with
 * kXSchedErrorNotSupported.
 *
 * @param hwq [out] The new handle; owned by the caller, who must HwQueueDestroy() it.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p hwq is null;
 *         kXSchedErrorUnknown if memory or a thread could not be had.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HostQueueCreate(HwQueueHandle *hwq);

/**
 * @brief Wrap an application-owned CUDA stream as a HwQueue.
 *
 * The library never creates or destroys a context and never synchronizes a device: on
 * its own threads it makes the stream's context current (cuStreamGetCtx, so streams of
 * primary contexts, as PyTorch makes them, and of driver-API contexts both work), and
 * where it must call the runtime on another thread it restores that thread's context
 * afterwards. The stream must outlive the HwQueue. Needs a CUDA 12.0+ driver, opened at
 * the first call (dlopen of libcuda.so.1; the library links nothing from CUDA, so a
 * program that makes no CUDA queue never loads it); any CUDA runtime of the application
 * (static or shared cudart, or none: the driver API) works.
 *
 * Levels, probed here: Lv1 always; Lv2 if the device reports stream wait-value support
 * and one wait-value and one write-value enqueued on @p stream complete. The probe waits
 * for them, so this call returns only after the work already queued on @p stream.
 * Every command is followed by a stream write-value of its number into host-mapped
 * memory (completion tracking); at Lv2 it is also preceded by a stream wait-value on a
 * counter (cuStreamWaitValue32 GEQ). A waiting counter blocks the hardware queue the
 * stream is mapped to: with more streams than `CUDA_DEVICE_MAX_CONNECTIONS` (default 8,
 * at most 32) streams share hardware queues, and a suspended stream can then hold back
 * another one; raise that variable before the first CUDA call when many streams are
 * scheduled at Lv2 (a warning is logged when there are more HwQueues with Lv2 than
 * hardware queues). The two stream operations cost about 6-7 us of host time per
 * command on an H100 (doc/RESULTS.md), which matters for streams of very short kernels.
 * Hardware priority: while the scheduler runs, the library sets the stream's priority
 * attribute (cudaStreamSetAttribute) to the device's greatest when the XQueue is at the
 * top priority present on its device, else to the least, and restores the stream's own
 * priority at HwQueueDestroy(); `XSCHED_HW_PRIORITY=0` turns this off. Work captured into
 * a CUDA graph keeps the priority the stream had at capture (PyTorch instantiates graphs
 * with per-node priorities, cudaGraphInstantiateFlagUseNodePriority): make the XQueue
 * before capturing on its stream, once XQueueGetStats() reports `hw_priority` 2 (Python:
 * XQueue.capture()), or create the stream at the greatest priority yourself; a graph
 * captured before the XQueue existed replays at the stream's old priority.
 * CUDA loads a module lazily at its first kernel launch and then waits for the stream;
 * the library commits a command before enqueuing it when it may run, but a command whose
 * XQueue is suspended at Lv2 can make that launch wait until the resume:
 * `CUDA_MODULE_LOADING=EAGER` avoids it.
 *
 * @param hwq    [out] The new handle (equal to @p stream); owned by the caller.
 * @param stream [in]  A `CUstream`/`cudaStream_t` created by the application.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p hwq is null or @p stream is the
 *         null/legacy/per-thread default stream (its implicit synchronization with every
 *         other stream would defeat preemption);
 *         kXSchedErrorNotAllowed if the stream is already wrapped;
 *         kXSchedErrorNotSupported if this build has no CUDA backend, libcuda.so.1 cannot
 *         be opened, lacks a CUDA 12.0 entry point or finds no device (one log line
 *         says which);
 *         kXSchedErrorHardware if the driver rejects the stream.
 * Thread-safety: any thread.
 */
XSCHED_API XResult CudaQueueCreate(HwQueueHandle *hwq, void *stream);

/**
 * @brief Wrap an application-owned HIP stream as a HwQueue. As CudaQueueCreate().
 *
 * The HIP runtime is opened at the first call (dlopen of libamdhip64.so.6, else .so.5: the
 * one the application linked; the library links nothing from ROCm), and not found or
 * without a device gives kXSchedErrorNotSupported.
 * Library threads bind the stream's device (hipGetStreamDeviceId, hipSetDevice). The
 * Lv2 probe uses hipStreamWaitValue64/hipStreamWriteValue64 and
 * hipDeviceAttributeCanUseStreamWaitValue. HIP maps streams onto `GPU_MAX_HW_QUEUES`
 * hardware queues (default 4): a waiting counter can hold back the other streams of its
 * queue, as with CUDA_DEVICE_MAX_CONNECTIONS. ROCm has no call that changes an existing
 * stream's priority: create high-priority streams with hipStreamCreateWithPriority.
 *
 * @param hwq    [out] The new handle (equal to @p stream); owned by the caller.
 * @param stream [in]  A `hipStream_t` created by the application.
 * @return as CudaQueueCreate(), for HIP.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HipQueueCreate(HwQueueHandle *hwq, void *stream);

/**
 * @brief Destroy a HwQueue (not the native stream it wraps).
 * @param hwq [in] The HwQueue; 0 is accepted and does nothing.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p hwq is not live;
 *         kXSchedErrorNotAllowed if an XQueue still uses it (destroy that first).
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwQueueDestroy(HwQueueHandle hwq);

/**
 * @brief The highest preemption level this HwQueue supports on this machine.
 *
 * Probed when the HwQueue was created, never assumed: every level up to the result works.
 * The highest is not always the best: with the commitment budget, lower-priority queues
 * at Lv1 gave the same or a lower high-priority p99 than at Lv2 (1.15x alone against
 * 1.47-2.07x, at the same throughput) with 7 low queues on an H100 (doc/RESULTS.md,
 * "Engine v3"), and Lv1 needs no hardware queue per stream; Lv2 is for queues the
 * application suspends itself for long, and CUDA graphs with gate checks
 * (XQueueEnqueueGateCheck()). A device with more XQueues than hardware queues runs Lv2
 * as Lv1 anyway.
 *
 * @param hwq   [in]  The HwQueue.
 * @param level [out] An XPreemptLevel, at least kPreemptLevelBlock.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p level is null;
 *         kXSchedErrorNotFound if @p hwq is not live.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwQueueGetMaxPreemptLevel(HwQueueHandle hwq, int64_t *level);

/* ---------------------------------------------------------------------------------------
 * Commands
 * ------------------------------------------------------------------------------------- */

/**
 * @brief Create a command that calls @p launch when its turn to launch comes.
 *
 * This is how library work (cuBLAS, hipBLAS, PyTorch) is scheduled: the callback enqueues
 * it on the stream passed in. The library does not copy or free @p data.
 *
 * @param hw_cmd [out] The new handle; owned by the caller, who must HwCommandDestroy() it.
 * @param launch [in]  The callback; called once, with no library lock held, on the
 *                    thread that enqueues the command: the submitting thread when the
 *                    XQueue may enqueue at submit time (XQueueSubmit()), else the
 *                    device's launch thread (host queues: their executor thread).
 * @param data   [in]  Passed to @p launch; must stay valid until the command completes.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p hw_cmd or @p launch is null;
 *         kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateCallback(HwCommandHandle *hw_cmd, LaunchCallback launch,
					   void *data);

/**
 * @brief Create a command that runs @p fn on the host in the HwQueue's order.
 *
 * On a host queue it runs on the executor thread; on a GPU stream it runs when the
 * stream reaches it (cudaLaunchHostFunc/hipLaunchHostFunc) and must not call the GPU
 * runtime. It should be short.
 *
 * @param hw_cmd [out] The new handle; owned by the caller, who must HwCommandDestroy() it.
 * @param fn     [in]  The function; its return value becomes the command's result.
 * @param data   [in]  Passed to @p fn; must stay valid until the command completes.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p hw_cmd or @p fn is null;
 *         kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateHostFunc(HwCommandHandle *hw_cmd, HostFunction fn, void *data);

/** Grid or block dimensions of a kernel launch, in blocks or threads. */
typedef struct XDim3 {
	uint32_t x, y, z;
} XDim3;

/**
 * @brief Create a kernel launch command, copying its arguments now.
 *
 * The arguments are copied into the command when this call returns, so the caller may
 * reuse or free its buffers at once. Sizes come from the caller, never from code-object
 * metadata. Runs only on HIP or CUDA HwQueues.
 *
 * @p func is a runtime function pointer, known only to the runtime instance that
 * registered the kernel. HIP: launched with hipLaunchKernel of the libamdhip64 the
 * application linked. CUDA: the library calls the driver API only, so at the command's
 * enqueue it asks the process's shared CUDA runtime (cudaGetFuncBySymbol of a libcudart
 * loaded by the application or a library it uses, as PyTorch does, or exported by the
 * executable) for the kernel's CUfunction in the stream's context, and caches it per
 * kernel and context. An application linked with the static CUDA runtime (nvcc's
 * default) has none the library can reach: it creates the command with
 * HwCommandCreateCudaKernel() (defined by this header when cuda_runtime_api.h was
 * included before it), or with HwCommandCreateModuleKernel(). Otherwise the command
 * fails at its enqueue with kXSchedErrorNotSupported (XQueueWait() returns it) and one
 * log line saying so.
 *
 * @param hw_cmd           [out] The new handle; owned by the caller (HwCommandDestroy()).
 * @param func             [in]  The kernel's host-side handle (the `__global__` function's
 *                               address, as for cudaLaunchKernel/hipLaunchKernel).
 * @param grid             [in]  Grid size in blocks; each component >= 1.
 * @param block            [in]  Block size in threads; each component >= 1.
 * @param shared_mem_bytes [in]  Dynamic shared memory per block, in bytes.
 * @param args             [in]  @p num_args pointers, one to each argument value (as for
 *                               cudaLaunchKernel); read only during this call.
 * @param arg_sizes        [in]  Size in bytes of each argument; read only during this call.
 * @param num_args         [in]  Number of arguments (0 allows null @p args/@p arg_sizes).
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if a pointer is null, a dimension is 0
 *         or an argument size is 0; kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateKernel(HwCommandHandle *hw_cmd, const void *func, XDim3 grid,
					 XDim3 block, size_t shared_mem_bytes, void **args,
					 const size_t *arg_sizes, size_t num_args);

/**
 * @brief Create a launch of a module function (`CUfunction`/`hipFunction_t`), copying its
 *        arguments now. As HwCommandCreateKernel() otherwise.
 * @param hw_cmd           [out] The new handle; owned by the caller.
 * @param function         [in]  The module function, from cuModuleGetFunction,
 *                               cudaGetFuncBySymbol (a CUfunction of the context that was
 *                               current there: submit the command to a stream of that
 *                               context) or hipModuleGetFunction.
 * @param grid             [in]  Grid size in blocks.
 * @param block            [in]  Block size in threads.
 * @param shared_mem_bytes [in]  Dynamic shared memory per block, in bytes.
 * @param args             [in]  Pointers to each argument value; read only during this call.
 * @param arg_sizes        [in]  Size in bytes of each argument.
 * @param num_args         [in]  Number of arguments.
 * @return as HwCommandCreateKernel().
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateModuleKernel(HwCommandHandle *hw_cmd, void *function, XDim3 grid,
					       XDim3 block, size_t shared_mem_bytes, void **args,
					       const size_t *arg_sizes, size_t num_args);

/**
 * @brief The signature of the CUDA runtime's cudaGetFuncBySymbol(): store in *@p function
 *        the module function (`CUfunction`) of the kernel whose host stub is @p func, in
 *        the calling thread's current context; return 0 (cudaSuccess) or the runtime's
 *        error code.
 */
typedef int (*XCudaFuncResolver)(void **function, const void *func);

/**
 * @brief A launch of CUDA kernel @p func, whose `CUfunction` @p resolve gives once per
 *        kernel and context; it is then cached.
 *
 * Each launch looks the `CUfunction` up in the context of its stream, by the kernel and the
 * context's unique id (cuCtxGetId, CUDA 12.0 and later; never reused, so a context destroyed
 * and made again never gets a stale entry; a driver without it keys by the context's
 * address and resolves again when a launch finds the handle stale). On a miss the launching
 * thread (the submitter, or a library thread) calls @p resolve with the stream's context
 * current; if it fails there, the command fails with kXSchedErrorInvalidValue (its
 * XQueueWait() result, logged). So a command may be created in one context and run in
 * another. To report an unknown @p func here rather than at launch, the first command of a
 * kernel and resolver on a thread also asks @p resolve in the calling thread's current
 * context (with no context current, the runtime makes its device's primary context
 * current); later ones ask neither the driver nor @p resolve at create (a memo per thread).
 * The cache is the library's own: HwCommandCreateKernel()'s launches do not use what was
 * resolved here. HwCommandCreateCudaKernel() passes a wrapper of the program's own
 * cudaGetFuncBySymbol (which has another C type: call it through a function of this type,
 * as that helper does, and clear the runtime's last error there on a failure), which works
 * with nvcc's default static runtime; asking the runtime at each command cost about 0.19 us
 * of a 3-4 us launch, a cached lookup at create 0.07-0.10 us (a driver call to learn the
 * context, then the cache; H200, 2026-11-26, doc/RESULTS.md). Runs on CUDA queues only
 * (XQueueSubmit() to another returns kXSchedErrorNotSupported).
 *
 * @param hw_cmd           [out] The new handle; owned by the caller (HwCommandDestroy()).
 * @param func             [in]  The `__global__` function's host address.
 * @param resolve          [in]  The runtime's resolver (cudaGetFuncBySymbol of the runtime
 *                               that registered @p func); thread-safe, since a library
 *                               thread may call it; called without any library lock held
 *                               (it must not wait for the XQueue's commands). It must stay
 *                               callable until the command has completed.
 * @param grid             [in]  Grid size in blocks; each component >= 1.
 * @param block            [in]  Block size in threads; each component >= 1.
 * @param shared_mem_bytes [in]  Dynamic shared memory per block, in bytes.
 * @param args             [in]  Pointers to each argument value; read only during this call.
 * @param arg_sizes        [in]  Size in bytes of each argument; read only during this call.
 * @param num_args         [in]  Number of arguments.
 * @return as HwCommandCreateKernel(); also kXSchedErrorInvalidValue if @p resolve is null
 *         or fails for @p func where it is asked here (logged with its error code);
 *         kXSchedErrorNotSupported if this build has no CUDA backend or the process no
 *         usable CUDA driver; kXSchedErrorHardware if the driver failed to start (cuInit).
 * Thread-safety: any thread; the cache's writers take a lock of its own, never held across
 * @p resolve; lookups take none.
 */
XSCHED_API XResult HwCommandCreateResolvedKernel(HwCommandHandle *hw_cmd, const void *func,
						 XCudaFuncResolver resolve, XDim3 grid, XDim3 block,
						 size_t shared_mem_bytes, void **args,
						 const size_t *arg_sizes, size_t num_args);

/**
 * @brief Create an asynchronous copy of @p bytes bytes from @p src to @p dst.
 *
 * The direction is inferred from the pointers (unified addressing). Host memory should be
 * pinned for the copy to be asynchronous. Runs only on HIP or CUDA HwQueues.
 *
 * @param hw_cmd [out] The new handle; owned by the caller.
 * @param dst    [in]  Destination; must stay valid until the command completes.
 * @param src    [in]  Source; must stay valid and unchanged until the command completes.
 * @param bytes  [in]  Bytes to copy, >= 1.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue for a null pointer or 0 bytes;
 *         kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateMemcpy(HwCommandHandle *hw_cmd, void *dst, const void *src,
					 size_t bytes);

/**
 * @brief Create an asynchronous fill of @p bytes bytes at @p dst with @p value.
 * @param hw_cmd [out] The new handle; owned by the caller.
 * @param dst    [in]  Device memory; must stay valid until the command completes.
 * @param value  [in]  The byte to write.
 * @param bytes  [in]  Bytes to fill, >= 1.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue for a null pointer or 0 bytes;
 *         kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateMemset(HwCommandHandle *hw_cmd, void *dst, uint8_t value,
					 size_t bytes);

/**
 * @brief Create an event record: a marker that other XQueues' wait commands can depend on.
 *
 * The library owns the native event behind it (created on the HwQueue's device at launch,
 * destroyed with the command).
 *
 * @param hw_cmd [out] The new handle; owned by the caller. Keep it until every wait
 *                     command created on it has been submitted.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p hw_cmd is null;
 *         kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateEventRecord(HwCommandHandle *hw_cmd);

/**
 * @brief Create a wait: the HwQueue runs nothing after it until @p record_cmd has run.
 *
 * A dependency across XQueues. The library launches the wait only once the record
 * command has been launched (so a suspended producer cannot be overtaken), and while an
 * XQueue waits for that it counts as not ready to the scheduler (so HPF does not
 * suspend the producer it waits for). Where a launched record could still be held back
 * (launched behind a Lv2 gate, or on another backend than the wait's), the wait goes
 * only once the record has completed. Then the device orders the wait behind the record
 * (cudaStreamWaitEvent/hipStreamWaitEvent; the host executor stops at it).
 *
 * A wait fails, instead of blocking for ever, with kXSchedErrorNotFound if its record's
 * handle is destroyed before the record was submitted, and with kXSchedErrorInvalidValue
 * if the record is submitted to the same XQueue after the wait; with the record's own
 * result if the record failed. A wait whose record is never submitted blocks its XQueue
 * (and XQueueDestroy() of it) until one of those happens.
 *
 * @param hw_cmd     [out] The new handle; owned by the caller.
 * @param record_cmd [in]  A command from HwCommandCreateEventRecord(); the wait holds a
 *                         reference to it.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p hw_cmd is null or @p record_cmd
 *         is not an event record; kXSchedErrorNotFound if @p record_cmd is not live;
 *         kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandCreateEventWait(HwCommandHandle *hw_cmd, HwCommandHandle record_cmd);

/**
 * @brief Destroy a command handle.
 *
 * If the command was submitted and has not completed, the XQueue keeps it alive until it
 * completes: it still runs, but can no longer be waited for by handle.
 *
 * @param hw_cmd [in] The command; 0 is accepted and does nothing.
 * @return kXSchedSuccess; kXSchedErrorNotFound if @p hw_cmd is not live.
 * Thread-safety: any thread.
 */
XSCHED_API XResult HwCommandDestroy(HwCommandHandle hw_cmd);

/* ---------------------------------------------------------------------------------------
 * Scheduler and hints
 * ------------------------------------------------------------------------------------- */

/**
 * @brief Choose the scheduler and its policy.
 *
 * kSchedulerLocal starts the scheduler thread ("xsched-sched") if it is not running, or
 * switches its policy safely while queues run: the old policy's per-queue state is
 * dropped, the new one decides at once, and hints given earlier stay in force.
 * kSchedulerAppManaged stops the thread and resumes every queue it had suspended; the
 * application's own XQueueSuspend() calls stay in force.
 * Without this call, the first XQueueCreate() reads `XSCHED_SCHEDULER` (`APP` or `LCL`)
 * and `XSCHED_POLICY` (a name, case-insensitive: XSched's `HPF`, `UP`, `KEDF`, `LAX`,
 * `CFS`, `MLFQ`, or this library's `FIFO`, `EDF`; an unknown name logs a warning and gives
 * HPF);
 * the default is the local scheduler with HPF.
 *
 * @param scheduler [in] kSchedulerLocal or kSchedulerAppManaged.
 * @param policy    [in] With kSchedulerLocal: kPolicyHighestPriorityFirst,
 *                       kPolicyUtilizationPartition, kPolicyKEarliestDeadlineFirst,
 *                       kPolicyLaxity, kPolicyCompletelyFairScheduler,
 *                       kPolicyMultiLevelFeedbackQueue, kPolicyFirstInFirstOut or
 *                       kPolicyEarliestDeadlineFirst.
 *                       Ignored otherwise.
 * @return kXSchedSuccess;
 *         kXSchedErrorInvalidValue for an unknown scheduler, or a policy outside both
 *         ranges of XPolicyType (0, 12..99 and 102 and up included);
 *         kXSchedErrorNotSupported for kSchedulerGlobal, or an XSched policy this library
 *         does not build (HHPF, CHPF, PUP, SPUP, AWF);
 *         kXSchedErrorUnknown if the thread could not be started.
 * Thread-safety: any thread except the scheduler's own.
 */
XSCHED_API XResult XHintSetScheduler(XSchedulerType scheduler, XPolicyType policy);

/**
 * @brief Set an XQueue's priority (used by HPF, by LAX for queues without a laxity, by
 *        CFS as the weight 1024 * 1.2^prio, and by MLFQ as the starting level: 0 for
 *        prio >= 0, else min(-prio, 3)). In force when the call returns.
 *
 * With the local scheduler the call runs a scheduling pass itself before it returns, so a
 * command submitted after it, by any thread, is held as the new priority says: under
 * PRIORITY_NO_EXECUTE it does not run until another priority is given, and a queue that
 * the new priority puts below a busy queue of its device's top priority (HPF, co-run
 * budget 0) commits nothing new while that queue has work. What the queue enqueued
 * before the call is not all taken back: at Lv1 up to its window runs on; at Lv2 and Lv3
 * it stops at its next command boundary (but for what a sole top queue enqueued without
 * a counter wait, at most its window: doc/architecture.md). Without the local scheduler
 * (kSchedulerAppManaged) priorities change nothing. The other XHint* calls on one queue
 * take effect at the scheduler's next pass, within the thread's wake-up latency.
 *
 * With any policy, an XQueue below the highest priority present on its device is subject
 * to the commitment budget (XHintCommitBudget()); under HPF, while a queue of that top
 * priority has work, the others commit nothing new (what they committed runs on, and
 * XHintCorunBudget() or XHintLatencyObjective() may let them co-run). Below the top,
 * priorities are tiers that share the budget by weight, however many there are: a busy
 * queue of middle priority gets about 4/5 of what it and a lower one both wait for, and
 * the lower one is not suspended for it; every waiting tier keeps a floor share
 * (XHintStrictPriority() says how much); for strict priority at every level (a busy
 * middle queue keeps the
 * lower ones from running at all, as in 0.5) call XHintStrictPriority(1). MLFQ does the
 * same by level instead of priority.
 * @param xq   [in] The XQueue.
 * @param prio [in] PRIORITY_MIN..PRIORITY_MAX, higher is more important; or PRIORITY_NO_EXECUTE.
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorInvalidValue if @p prio is out of range.
 * Thread-safety: any thread, host functions and launch callbacks included; it waits for a
 *         scheduling pass in progress (the scheduler's lock) and runs one.
 */
XSCHED_API XResult XHintPriority(XQueueHandle xq, Priority prio);

/*
 * The hints below have XSched's names and signatures (include/xsched/hint.h); the
 * policies that read them follow XSched's sched/src/policy/{up,kedf,lax,cfs}.cpp, with the
 * differences doc/policies.md lists. Every hint may be given at any time, to a queue that
 * runs or not, under any policy: it is stored, and a policy that reads it applies it at
 * its next pass, which the call wakes (on the scheduler thread: what the hint changes may
 * happen after the call has returned). Invalid values change nothing.
 */

/**
 * @brief Set an XQueue's utilization share (used by UP).
 *
 * Under UP the ready queues take turns, one at a time. In each round of XHintTimeslice()
 * microseconds, a ready queue gets a slice of timeslice * util / (sum of the ready
 * queues' utils), at least TIMESLICE_MIN; a queue that goes idle gives up the rest of
 * its slice at once, and idle queues get no slice, so their share goes to the ready
 * ones. A queue with util 0 runs only while no queue with a positive util is ready.
 * Utils are weights: they need not add up to 100. A change applies to the running slice.
 * Source: XSched's UtilizationPartitionPolicy (sched/src/policy/up.cpp); the 3:1
 * partition of the XSched paper (OSDI '25), figure 7.
 *
 * @param xq   [in] The XQueue.
 * @param util [in] Percent, UTILIZATION_MIN..UTILIZATION_MAX (0..100). A queue that was
 *                  never given this hint has UTILIZATION_DEFAULT (100).
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorInvalidValue if @p util is outside 0..100 (the share is unchanged).
 * Thread-safety: any thread.
 */
XSCHED_API XResult XHintUtilization(XQueueHandle xq, Utilization util);

/**
 * @brief Set the scheduler's time slice (process-wide).
 *
 * UP: the length of one round, divided among the ready queues by utilization
 * (TIMESLICE_DEFAULT, 5000 us, until this hint is given).
 * CFS: how long the running queue keeps the device before the queue with the least
 * virtual runtime may take it (1000 us, XSched's CFS period, until this hint is given).
 * FIFO, and KEDF/EDF among equal deadlines: the longest turn of a queue that stays ready
 * while another waits; it then goes to the back of the line (TIMESLICE_DEFAULT).
 * Other policies ignore it. It applies from the next pass, is kept across policy
 * changes, and XSchedShutdown() forgets it.
 * Source: XSched's XHintTimeslice (include/xsched/hint.h).
 *
 * @param ts_us [in] Microseconds, TIMESLICE_MIN..TIMESLICE_MAX (100 us .. 10 s).
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p ts_us is out of range (the
 *         slice is unchanged).
 * Thread-safety: any thread.
 */
XSCHED_API XResult XHintTimeslice(Timeslice ts_us);

/**
 * @brief Set an XQueue's laxity (used by LAX).
 *
 * Under LAX a queue with a laxity has priority @p lax_prio from the moment it goes from
 * idle to ready until @p lax_us later, then @p crit_prio until it is idle again; while
 * idle it has @p lax_prio. HPF then decides on those priorities (a queue without a
 * laxity keeps its XHintPriority()). While another queue is ready, the scheduler wakes
 * itself at the earliest promotion, so no event is needed for it.
 * Source: XSched's LaxityPolicy (sched/src/policy/lax.cpp), per XQueue here rather than
 * per process.
 *
 * @param xq        [in] The XQueue.
 * @param lax_us    [in] Microseconds >= 0, or NO_LAXITY (-1) to remove the laxity (the
 *                       priorities are then ignored, but still checked).
 * @param lax_prio  [in] Priority before the laxity runs out, PRIORITY_MIN..PRIORITY_MAX.
 * @param crit_prio [in] Priority after it has run out, PRIORITY_MIN..PRIORITY_MAX.
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorInvalidValue if @p lax_us is negative and not NO_LAXITY, or a
 *         priority is out of range (nothing changes).
 * Thread-safety: any thread.
 */
XSCHED_API XResult XHintLaxity(XQueueHandle xq, Laxity lax_us, Priority lax_prio,
			       Priority crit_prio);

/**
 * @brief Set an XQueue's relative deadline (used by KEDF and EDF).
 *
 * The absolute deadline is the time the queue last went from idle to ready plus
 * @p ddl_us. It stays put while the queue has work, so a queue that never drains keeps
 * its first deadline (as in XSched). Queues without a deadline sort after every queue
 * with one, and among themselves by ready time.
 * Source: XSched's KEarliestDeadlineFirstPolicy (sched/src/policy/kedf.cpp).
 *
 * @param xq     [in] The XQueue.
 * @param ddl_us [in] Microseconds >= 0, or NO_DEADLINE (-1) to remove the deadline.
 * @return kXSchedSuccess; kXSchedErrorNotFound for a bad @p xq;
 *         kXSchedErrorInvalidValue if @p ddl_us is negative and not NO_DEADLINE.
 * Thread-safety: any thread.
 */
XSCHED_API XResult XHintDeadline(XQueueHandle xq, Deadline ddl_us);

/**
 * @brief Set k of KEDF: how many ready queues, earliest deadlines first, run at once
 *        (process-wide). 1 until this hint is given; EDF always uses 1.
 *
 * While fewer than k queues are ready, idle queues are not suspended either (the free
 * places may take them). XSchedShutdown() forgets the value.
 * Source: XSched's XHintKDeadline (include/xsched/hint.h, sched/src/policy/kedf.cpp).
 *
 * @param k [in] Number of queues, >= 1.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p k is 0 (k is unchanged).
 * Thread-safety: any thread.
 */
XSCHED_API XResult XHintKDeadline(size_t k);

/**
 * @brief Set the commitment budget: how much lower-priority work a device may hold.
 *
 * Per device, the commands of XQueues whose priority is below the highest priority
 * present on that device (idle queues count) may be *committed* (free to run on the
 * device) only while the estimated device time of their committed, incomplete commands
 * stays within this budget; at least one such command may always be committed. A
 * high-priority arrival therefore waits for at most about this much lower-priority work
 * (plus the rest of what runs), whatever the number of queues. Estimates are moving
 * averages of observed command times (XQueueStats.est_command_ns). Queues at the top
 * priority are not limited; when all queues share one priority nothing is. Applies to
 * every policy (ranked by XHintPriority()); without a scheduler (kSchedulerAppManaged)
 * nothing is limited.
 *
 * Default XSCHED_BUDGET_US from the environment, else 1000 us (doc/RESULTS.md, "Engine
 * v2", says how it was chosen).
 *
 * @param budget_us [in] Budget in microseconds, 0..TIMESLICE_MAX; 0 = one command at a
 *                       time.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue outside the range.
 * Thread-safety: any thread; applies to the next commit on every device.
 */
XSCHED_API XResult XHintCommitBudget(int64_t budget_us);

/**
 * @brief Set the co-run budget: the lower-priority work a device keeps committed while a
 * top-priority XQueue has work (HPF).
 *
 * Under HPF, queues below the top priority present on a device are not stopped while a
 * top-priority queue has work: they keep committing, but the estimated device time still
 * to run of their committed commands stays within this budget (one command may always
 * run), and the top queue's hardware priority (CUDA) lets its blocks dispatch first. The
 * GPU stays busy (work-conserving) while the top queue's slowdown stays bounded, whatever
 * the number of queues. Waiting queues are served by priority, then in turn by estimated
 * device time (equal-priority queues share fairly whatever their command kinds). When no
 * top-priority queue has work, XHintCommitBudget() applies instead. Queues at Lv3 are
 * suspended outright under HPF, as in XSched.
 *
 * Default XSCHED_CORUN_US from the environment, else 0, chosen from the frontier of
 * high-priority p99 against lower-priority throughput measured on an H100 (doc/RESULTS.md,
 * "Engine v3: the co-run frontier"): on the shapes measured, co-running lower work
 * raised the high p99 more than it raised the lower throughput. A larger budget suits
 * high work that tolerates slowdown (see XSCHED_CORUN_US in doc/RESULTS.md).
 *
 * @param budget_us [in] Budget in microseconds, 0..TIMESLICE_MAX; 0 = lower queues commit
 *                       nothing new while a top-priority queue has work (what they
 *                       committed runs on).
 * @return kXSchedSuccess; kXSchedErrorInvalidValue outside the range.
 * Thread-safety: any thread; applies to the next commit on every device.
 */
XSCHED_API XResult XHintCorunBudget(int64_t budget_us);

/**
 * @brief Choose how the priorities below each device's top priority share the device:
 *        by weight (default) or strictly.
 *
 * XQueues below the highest priority present on their device are *limited*: they share
 * the commitment budget (XHintCommitBudget()). By default (@p strict 0) that budget is
 * shared among their priorities by weight: each priority (a *tier*) is charged its
 * queues' estimated device time times 4^k, k the number of waiting tiers above it, but at
 * most times 8n, n the number of tiers waiting, and the tier charged least goes first. So
 * while two lower priorities both wait, the higher gets about 4/5 of the device time the
 * budget hands out and the lower 1/5; up to three tiers the weights are 4^-k; and every
 * waiting tier, however deep, gets at least 1/(12n) of it (with eight, the lowest gets
 * about 1/89, where 4^-7 left it nothing for seconds): a busy middle priority never takes
 * the whole device from the ones below it. Any number of distinct priorities is served
 * so, each by its place, never by the order in which it came. A queue whose priority
 * changes starts level with the queues of its new tier: it brings neither credit nor debt
 * from its old one (XHintPriority() applies the change at once). Under HPF and MLFQ
 * a ready queue then suspends the queues below it only if it is of its device's top
 * priority; below a busy queue that is itself limited, the budget holds them instead.
 * Within one priority, queues share by estimated device time whatever their number.
 * The weight 4 is a design choice (doc/architecture.md, "Tiers"), not a measurement.
 *
 * With @p strict 1, priorities are strict at every level, as in 0.5: the budget serves
 * its waiters highest priority first, and HPF suspends every queue below the highest
 * ready priority, so a queue of middle priority that stays busy keeps the lower ones
 * from running at all.
 *
 * Default XSCHED_STRICT_PRIORITY from the environment (0 or 1), else 0. The top
 * priority's protection (XHintCorunBudget(), XHintLatencyObjective()) is the same either
 * way. XSchedShutdown() forgets a value set here.
 *
 * @param strict [in] 0 (weighted tiers) or 1 (strict priority).
 * @return kXSchedSuccess; kXSchedErrorInvalidValue for another value.
 * Thread-safety: any thread; applies at the next scheduling pass and the next commit on
 *                every device.
 */
XSCHED_API XResult XHintStrictPriority(int strict);

/**
 * @brief Give an XQueue a latency objective: the slowdown its commands may suffer against
 * running alone; the engine sizes the co-run budget at run time to meet it with as much
 * lower-priority work as possible.
 *
 * "My requests may run at most 20% slower than alone, 99 times in 100; give the rest to
 * the lower queues": XHintLatencyObjective(xq, 1.2). The XQueue is then *protected*: the
 * p99 of its *units'* latency is held within @p max_slowdown times their latency alone.
 * - A unit is an explicit unit where the XQueue has them (XQueueBeginUnit() ..
 *   XQueueEndUnit(): a decode step inside a request, from its arrival to its completion);
 *   otherwise a command (its device time: commit, or the previous completion, to
 *   completion), or, for commands inside a scope (XQueueBeginScope()/XQueueEndScope(), the
 *   Python running() forms), the scope: from its first enqueue to the completion of the
 *   last command enqueued before it closed, so that a request in a scope is measured as
 *   the one request it is. Scopes that overlap the previous scope's unit are not measured.
 * - Alone: a moving average (1/8) of the units, of each kind, that ran with no
 *   lower-priority work charged on the device (a scope: for at most a sixteenth of it).
 *   A unit's slowdown is its latency over that estimate.
 * - The tail: more than 0.5% of the units kept since the controller's last move (the last
 *   256) above @p max_slowdown (counted over at least 200: so the second of them) is a
 *   violation, acted on at once: half of what a p99 allows, because slow units come in a
 *   cluster far above the objective and the p99 sits wherever 1% of them falls
 *   (XQueueStats.slowdown_permille reports the second largest at the last look).
 *
 * A controller sets what lower queues may do on the queue's device while it works, over
 * levels: 0 (lower queues commit nothing new while a top-priority queue has work: the
 * default); 1 to 8, *pacing*: each explicit unit gives lower queues a slice of level/8 of
 * its slack at its start (XQueueBeginUnit()), and they commit nothing else meanwhile; then,
 * with whole slices, a co-run budget (what XHintCorunBudget() sets for the whole process)
 * in half octaves from 25 us to 51.2 ms (past the commitment budget); then *not limited*
 * (lower queues run as if no top-priority queue were busy and no commitment budget
 * applied; only hardware stream priority favours the top queue). An XQueue without
 * explicit units passes the pacing levels as it climbs (they change nothing for it), and
 * with the environment variable XSCHED_PACE=0 every XQueue does (no slices). With
 * u = (p99 slowdown - 1) / (@p max_slowdown - 1):
 * - a violation: down 1, 2 or 4 levels (u up to 1.5, up to 3, beyond): an eighth, a
 *   quarter or a half of the slices, or the co-run budget x0.71, x0.5 or x0.25; the level
 *   that failed is not tried again for 4 windows, doubled each time it fails again, up to
 *   64;
 * - after a window without one (64 units, or 50 ms of the units' latency over at least 8:
 *   a server's requests, a few a second, are looked at every few tens of units): u < 0.75,
 *   up 4 levels (u < 0.4) or 1, one at a time into a level that failed; otherwise (dead
 *   band, 0.75..1 of the excess) no change.
 * The cost of probing is bounded: a step up that fails is undone at its second unit above
 * @p max_slowdown, so each failed probe lets at most 2 units (and those in flight) exceed
 * it, and settled just below a failing level the controller probes it at most once in 64
 * windows. It starts at 0 (it learns the alone time there) and reaches whole slices in 2
 * windows of large slack, not limited in 8. Several protected queues on one device: the tightest
 * wins (the least budget). A protected queue below the top priority of its device is measured but
 * sets no limit: the queues above keep the process's co-run budget. An objective the device cannot
 * meet even at 0 leaves the budget at 0 (the default behaviour). Without any objective on a device,
 * XHintCorunBudget()'s value applies, unchanged. Acts under the policies that hold lower
 * queues while a top one works (HPF, MLFQ). Every change of the budget is an event
 * ("corun budget") in the trace (XSchedTraceStart()).
 *
 * What bounds it: a lower command committed before a top-priority unit arrives runs to its
 * end (Lv1 and Lv2; Lv3 interrupts it), so a lower command longer than the objective
 * allows breaks it whatever the budget; the controller then stays at 0.
 *
 * Other processes on the device (the board, XQueueGetBoard()): they see the co-run budget
 * of the level in force, except on a device that runs one process at a time (CUDA
 * without MPS: XBoardInfo.timesliced), where the objective allows them no co-run at any
 * level: a command of another process committed beside a unit there takes the GPU for its
 * turn rather than sharing it (doc/architecture.md, "Several processes on one GPU").
 *
 * A double, not an XSched-style integer: the value is a ratio whose useful precision
 * (1.05, 1.2, 2.0) no integer unit names naturally; it is kept as per mille inside.
 *
 * @param xq           [in] The XQueue to protect.
 * @param max_slowdown [in] Its units' p99 latency allowed, as a multiple of their latency
 *                          alone: 1.0 to 1000.0 (1.2 = 20% slower; 1.0 is taken as
 *                          1.01); 0 clears the objective (the device's co-run budget
 *                          returns to XHintCorunBudget()'s unless another queue has one).
 * @return kXSchedSuccess; kXSchedErrorInvalidValue (logged) if @p max_slowdown is
 *         negative, below 1.0 but not 0, above 1000, NaN or infinite;
 *         kXSchedErrorNotFound if @p xq is not a live XQueue.
 * Thread-safety: any thread; takes effect at once (a new objective puts the device's
 * co-run budget at 0 until its first windows are measured).
 */
XSCHED_API XResult XHintLatencyObjective(XQueueHandle xq, double max_slowdown);

/**
 * @brief Stop the scheduler thread and release the library's process-wide state.
 *
 * Queues the scheduler suspended are resumed, and the process-wide hints
 * (XHintTimeslice(), XHintKDeadline(), XHintCommitBudget(), XHintCorunBudget()) return to
 * their defaults;
 * per-queue hints stay. The threads of devices without XQueues are stopped, and the
 * environment is read again at the next start. A running trace (XSchedTraceStart(),
 * XSCHED_TRACE) is written. Also runs at process exit. Idempotent; a later
 * XQueueCreate() or XHintSetScheduler() starts the scheduler again.
 *
 * @return kXSchedSuccess.
 * Thread-safety: any thread except the scheduler's own.
 */
XSCHED_API XResult XSchedShutdown(void);

/**
 * @brief Start recording a timeline trace, written to a file at XSchedTraceStop().
 *
 * Records, per XQueue, submissions, commits and completions (an async slice per command
 * from commit to completion), suspensions and resumes, priority hints, scopes and the
 * scheduler's passes, with CLOCK_MONOTONIC timestamps, and writes them in the Chrome
 * trace-event JSON format that Perfetto (ui.perfetto.dev) and chrome://tracing open: one
 * track per XQueue, named after its handle, priority and stream. Memory is bounded: each
 * recording thread has a ring of XSCHED_TRACE_EVENTS events (default 65536, 32 bytes
 * each); a full ring drops its oldest events, counted in the file ("dropped").
 * XSCHED_TRACE=path starts a trace at the library's first use; XSchedShutdown() and
 * process exit write a running trace.
 *
 * @param path [in] The file to write (copied); created or truncated at the stop.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p path is null or empty;
 *         kXSchedErrorNotAllowed while a trace runs; kXSchedErrorUnknown if out of memory.
 * Thread-safety: any thread. Cost per command while tracing: doc/architecture.md.
 */
XSCHED_API XResult XSchedTraceStart(const char *path);

/**
 * @brief Stop the trace started by XSchedTraceStart() (or XSCHED_TRACE) and write it.
 *
 * @return kXSchedSuccess; kXSchedErrorNotFound if no trace runs; kXSchedErrorHardware if
 *         the file cannot be written (logged with the system's reason).
 * Thread-safety: any thread; events recorded concurrently with the stop may be left out.
 */
XSCHED_API XResult XSchedTraceStop(void);

/* ---------------------------------------------------------------------------------------
 * Results
 * ------------------------------------------------------------------------------------- */

/**
 * @brief The name of an XResult as this header spells it, for messages.
 *
 * XSched has no such call; this one is named after the type it names. It needs no other
 * call first and starts nothing.
 *
 * @param r [in] A value returned by any call of this header.
 * @return the enumerator's name ("kXSchedSuccess", "kXSchedErrorNotFound", ...);
 *         "XResult(unknown)" for a value that is no XResult. The string is static and
 *         constant: never freed or written by the caller, valid for the life of the
 *         process.
 * Thread-safety: any thread, at any time (also from launch callbacks and host functions).
 */
XSCHED_API const char *XResultName(XResult r);

/**
 * @brief Why the calling thread's last failed call failed, in words.
 *
 * A call that returns an error for a reason it can name (an argument out of range, an
 * unknown handle, a preemption level the HwQueue lacks, no GPU runtime, a command kind the
 * HwQueue cannot run) keeps that reason for the calling thread, whether logging is on or
 * not: the text `XSCHED_LOG=warn` prints after "xsched[<topic>] warn: ", for example
 * "XHintPriority: 1000 is outside [-255, 255] and not PRIORITY_NO_EXECUTE". Reading it
 * clears it, so that a reader that reads after every failed call (as the Python binding
 * does) never sees a reason of an earlier call: a failure with no reason in words (a
 * command's own error, returned by XQueueWait(); out of memory) then gives "". A call
 * that succeeds leaves the reason as it was. XSched has no such call.
 *
 * @return the reason, or "" when no call of this thread failed with one since the last
 *         XResultLastMessage(). Never NULL. The string belongs to the calling thread: it
 *         stays valid on that thread until its next failing call into the library; never
 *         free or write it.
 * Cost: none on a call that succeeds; a failing call formats its reason (under a
 * microsecond).
 * Thread-safety: any thread, at any time; each thread has its own reason.
 */
XSCHED_API const char *XResultLastMessage(void);

#ifdef __cplusplus
}
#endif

#endif /* XSCHED_H */

/*
 * Outside the include guard: including xsched.h again after cuda_runtime_api.h defines
 * the helper below, whatever the order of the first includes.
 */
#if defined(__CUDA_RUNTIME_API_H__) && !defined(XSCHED_CUDA_HELPER_DEFINED)
#define XSCHED_CUDA_HELPER_DEFINED
/* The resolver HwCommandCreateCudaKernel() passes: the caller's own cudaGetFuncBySymbol.
 * A failure is cleared from the runtime's last error (cudaGetLastError()), where the
 * application may look after its launches. */
static inline int xsched__cuda_resolve(void **function, const void *func)
{
	cudaFunction_t fn = 0;
	cudaError_t e = cudaGetFuncBySymbol(&fn, func);
	if (e != cudaSuccess)
		(void)cudaGetLastError();
	*function = (void *)fn;
	return (int)e;
}

/**
 * @brief HwCommandCreateKernel() for a CUDA kernel of the calling program's own CUDA
 *        runtime, static or shared.
 *
 * Defined (static inline, compiled into the caller) only where cuda_runtime_api.h (or
 * cuda_runtime.h) was included before this header. It is HwCommandCreateResolvedKernel()
 * with the caller's cudaGetFuncBySymbol as the resolver, so it works with nvcc's default
 * static cudart, which the library cannot reach; the kernel's CUfunction is asked of the
 * runtime once per context and cached, and each launch uses the one of its stream's
 * context. The first command of a kernel on a thread also asks the runtime with the
 * calling thread's context current (the runtime makes the current device's primary context
 * current if none is), so an unknown @p func fails now, not at launch.
 *
 * @param hw_cmd           [out] The new handle; owned by the caller (HwCommandDestroy()).
 * @param func             [in]  The `__global__` function's host address.
 * @param grid             [in]  Grid size in blocks; each component >= 1.
 * @param block            [in]  Block size in threads; each component >= 1.
 * @param shared_mem_bytes [in]  Dynamic shared memory per block, in bytes.
 * @param args             [in]  Pointers to each argument value; read only during this call.
 * @param arg_sizes        [in]  Size in bytes of each argument; read only during this call.
 * @param num_args         [in]  Number of arguments.
 * @return as HwCommandCreateResolvedKernel() (kXSchedErrorInvalidValue if the runtime does
 *         not know @p func: cudaGetFuncBySymbol failed, and its error was cleared from the
 *         runtime's last error with cudaGetLastError()).
 * Thread-safety: any thread.
 */
static inline XResult HwCommandCreateCudaKernel(HwCommandHandle *hw_cmd, const void *func,
						XDim3 grid, XDim3 block, size_t shared_mem_bytes,
						void **args, const size_t *arg_sizes,
						size_t num_args)
{
	return HwCommandCreateResolvedKernel(hw_cmd, func, xsched__cuda_resolve, grid, block,
					     shared_mem_bytes, args, arg_sizes, num_args);
}
#endif
