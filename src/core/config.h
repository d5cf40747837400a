/* The library's settings from the environment, read once into one struct.
 *
 * xs_config_get() reads every variable the first time it is called (and again after
 * xs_config_reset(), which XSchedShutdown() calls so that a process can change them
 * between two uses of the library), reports each bad value on stderr whatever the log
 * level, once per process (what was read, what is used instead: xs_log_setting), and
 * returns a pointer to the same immutable snapshot until the next reset. No other file
 * calls getenv() but log.c, which reads XSCHED_LOG itself (once, at the first message,
 * before anything else can be logged); nothing reads the environment on a library
 * thread.
 *
 * Thread-safety: any thread. A snapshot is never written after it is made and lives as
 * long as the process, so a thread may go on reading one while another resets and loads
 * a newer one; keeping it across XSchedShutdown() gives the old values.
 */
#ifndef XS_CORE_CONFIG_H
#define XS_CORE_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

typedef struct xs_config {
	const char *policy;    /* XSCHED_POLICY, or NULL: the policy's name (sched/policy.c) */
	bool app_managed;      /* XSCHED_SCHEDULER=APP */
	int64_t hpf_linger_ns; /* XSCHED_HPF_LINGER_US, default 0 (sched/hpf.c) */
	int64_t budget_ns;     /* XSCHED_BUDGET_US, default XS_BUDGET_DEFAULT_US (engine) */
	int64_t corun_ns;      /* XSCHED_CORUN_US, default XS_CORUN_DEFAULT_US (engine) */
	bool hw_priority;      /* XSCHED_HW_PRIORITY=0 turns it off; default on */
	bool gpu_lazy_marks;   /* XSCHED_GPU_LAZY_MARKS (default 1): GPU queues may leave done
				* marks out; 0 marks every command */
	bool top_gates;        /* XSCHED_TOP_GATES=1: the sole top-priority XQueue keeps its
				* counter waits (default 0: it enqueues without; preempt/engine.c) */
	bool pace;             /* XSCHED_PACE=0: latency objectives skip the pacing levels and
				* go from nothing beside a unit to co-run budgets (default 1;
				* preempt/objective.c) */
	bool pace_wait;        /* XSCHED_PACE_WAIT=1: a protected unit waits out its pacing
				* slice before it runs (default 0: the slice co-runs with it;
				* preempt/pace.h) */
	bool strict_priority;  /* XSCHED_STRICT_PRIORITY=1: below a device's top priority,
				* strict priority order (default 0: the budget shares itself
				* among the lower priorities by weight; preempt/budget.c) */
	/* XSCHED_HOST_HW_QUEUES, default 0 = unlimited: the hardware queues host queues are
	 * taken to share, a model of CUDA connections for tests (hal/host.c). */
	unsigned host_hw_queues;
	/* XSCHED_HOST_TIMESLICED=1: the host device is taken to run one process's work at a
	 * time, a model of a GPU without MPS for tests (hal/host.c, preempt/remote.c). */
	bool host_timesliced;
	/* Hardware queues the runtime spreads streams over, 0 = unset (the runtime's default):
	 * CUDA_DEVICE_MAX_CONNECTIONS and GPU_MAX_HW_QUEUES (hal/gpu.c warns with them). */
	long cuda_connections, hip_hw_queues;
	/* GPU_STREAMOPS_CP_WAIT=1: HIP's stream waits are done by the command processor, on
	 * signal memory only (hal/gpu.c then allocates the counter and run gate there). */
	bool hip_cp_wait;
	const char *trace_path; /* XSCHED_TRACE, or NULL: trace into that file (core/trace.h) */
	int64_t trace_events;   /* XSCHED_TRACE_EVENTS, events per thread's ring, default 65536 */
	/* XSCHED_STALL_RELEASE_US, default XS_STALL_RELEASE_DEFAULT_US, 0 = off: after this
	 * long without progress on a device, commit what suspended XQueues hold enqueued
	 * (preempt/device.c, "stall release"). */
	int64_t stall_release_ns;
	/* XSCHED_BOARD: where the boards of processes sharing a device are (core/board.h):
	 * NULL = auto (GPU devices: /dev/shm; host queues: none), "" = off, else the
	 * directory named. */
	const char *board_dir;
	/* XSCHED_BOARD_GROUP, or NULL: a board this process makes is readable and writable
	 * by that group too (0660), and a board of that group is joined. */
	const char *board_group;
} xs_config;

/* Default commitment budget of the work of lower-priority XQueues per device, in us: what
 * a top-priority arrival may find committed. Chosen from the serve scenario on an H100
 * (doc/RESULTS.md, "Engine v2"). */
#define XS_BUDGET_DEFAULT_US 1000

/* Default co-run budget, in us: the lower-priority work a device keeps committed while a
 * top-priority XQueue has work (HPF). 0: none (HPF suspends the lower queues meanwhile).
 * Chosen from the measured frontier (doc/RESULTS.md, "Engine v3: the co-run frontier"):
 * on an H100 every co-run budget tried (200 us to 4 ms) raised the high p99 (1.7-10x
 * alone against 1.03-1.23x) without keeping more lower throughput on mixed work. */
#define XS_CORUN_DEFAULT_US 0

/* Default stall release, in us. Progress is a completion or a launch of a running XQueue;
 * a scope without commands (bindings/python's whole-scope form) shows none while it is
 * open, so the limit must exceed the requests such scopes hold (ms to hundreds of ms),
 * while a thread caught by an implicit synchronization (once per thread and handle, in
 * practice at warm-up) loses at most this long (doc/architecture.md, "Stall release"). */
#define XS_STALL_RELEASE_DEFAULT_US 1000000

const xs_config *xs_config_get(void);
void xs_config_reset(void);
/* In a child after fork(): the lock anew, the environment read again at next use. */
void xs_config_forked(void);

#endif
