/* xsched-bench: shared declarations.
 *
 * The benchmark runs scenarios (sets of application threads, each owning one lane) under
 * modes (how a lane reaches the device: directly on a native stream, or through an XQueue
 * at a preemption level). A backend supplies the device: the CUDA backend runs real GPU
 * work; the host backend models a GPU on the CPU (see sim.c) so the benchmark also runs
 * where there is no GPU.
 *
 * Work is described by ops (one GEMM, one spin kernel, one streaming kernel, one time
 * stamp); a task is an
 * array of ops submitted back to back and then waited for. Latency is measured on the host
 * from the first submit of a task to the moment its completion is observed.
 */
#ifndef XSB_BENCH_H
#define XSB_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xsched.h"

/* ---- work ---------------------------------------------------------------------------- */

enum xsb_op_kind {
	XSB_OP_GEMM,   /* C[m x n] = A[m x k] * B[k x n], FP32, column-major */
	XSB_OP_SPIN,   /* a kernel that fills the device and spins for ns */
	XSB_OP_STAMP,  /* a one-block kernel that records its start time in a stamp slot */
	XSB_OP_STREAM, /* a memory-bound kernel: c[i] = 2 * a[i] + 1 for n floats */
};

/* Floats a streaming kernel reads and writes: 32 MiB each way (about 22 us on an H100). */
#define XSB_STREAM_FLOATS (8 << 20)

struct xsb_op {
	enum xsb_op_kind kind;
	int m, n, k; /* GEMM shape; STREAM: n floats */
	int64_t ns;  /* SPIN duration */
	int slot;    /* STAMP slot, 0 .. XSB_STAMP_SLOTS-1 */
};

#define XSB_STAMP_SLOTS 4096

struct xsb_task {
	struct xsb_op *ops;
	size_t n;
	char desc[96];
};

/* Largest operand sizes (in floats) a lane needs for the tasks it will run. */
struct xsb_sizes {
	size_t a, b, c;
};
void xsb_task_sizes(const struct xsb_task *t, struct xsb_sizes *s);
double xsb_task_gflop(const struct xsb_task *t);

/* ---- modes --------------------------------------------------------------------------- */

struct xsb_mode {
	const char *name;
	bool xsched; /* through an XQueue */
	bool hwprio; /* streams created with hardware priority */
	int level;   /* XPreemptLevel for xsched modes; 0 = the HwQueue's highest */
	/* xsched modes of the mlfq scenario only: the policy set for the run (0: leave the
	 * scheduler as it is, HPF) and no XHintPriority at all (every XQueue equal). */
	XPolicyType policy;
	bool no_hints;
};

extern const struct xsb_mode xsb_modes[];
extern const size_t xsb_nmodes;
const struct xsb_mode *xsb_mode_find(const char *name);

/* Launch configuration of the low-priority XQueues, per level (index 1..3). */
struct xsb_launch_cfg {
	int64_t threshold, batch;
};

/* ---- lanes --------------------------------------------------------------------------- */

/* Priority tier of a lane: XHintPriority() tier + 1; with hardware priority, the least,
 * middle or greatest stream priority. */
enum xsb_tier { XSB_TIER_LOW, XSB_TIER_MID, XSB_TIER_HIGH };

/* How a lane's ops reach an XQueue (native modes launch them directly either way). */
enum xsb_submit {
	XSB_SUBMIT_CALLBACK, /* every op a launch callback (HwCommandCreateCallback) */
	XSB_SUBMIT_KERNEL,   /* streaming kernels as kernel commands (HwCommandCreateKernel;
			      * host backend: host functions), other ops as callbacks */
};

struct xsb_lane;

/* Callback data of one op of the task in flight. */
struct xsb_cbslot {
	struct xsb_lane *lane;
	const struct xsb_op *op;
	bool last; /* the task's last op */
};

struct xsb_lane {
	int id;
	bool high;
	enum xsb_tier tier;
	enum xsb_submit submit;
	const struct xsb_backend *be;
	const struct xsb_mode *mode;
	int prio_class;    /* hardware priority: 0 none (equal), else tier + 1 (1 least) */
	void *stream;      /* the backend's native queue */
	void *priv;        /* the backend's per-lane state (handles, buffers) */
	HwQueueHandle hwq; /* xsched modes */
	XQueueHandle xq;   /* xsched modes */
	struct xsb_cbslot *slots;
	size_t nslots;
	HwCommandHandle last; /* last command of the task in flight */
	size_t pending_ops;   /* ops of the task in flight (native modes) */
	/* --objective-csv: the thread sampling this high lane's objective statistics */
	pthread_t sampler;
	atomic_bool sampling;
};

/* --objective X (0 = none): XHintLatencyObjective(X) on every high lane of xsched modes;
 * --objective-csv PATH: each such lane's slowdown and the co-run budget in force,
 * sampled every 10 ms, one CSV row each (lane.c). Set by main before any run. */
extern double xsb_objective;
extern FILE *xsb_objective_csv;

/* ---- backends ------------------------------------------------------------------------ */

struct xsb_backend {
	const char *name;    /* "cuda" or "host" */
	char device[400];    /* what runs the work, in words */
	bool modeled;        /* figures come from a model, not a device */
	int max_level;       /* highest XPreemptLevel a HwQueue of this backend gives */
	char no_xsched[160]; /* why no XQueue can run here (then max_level is 0), or empty */
	/* Called once by every application thread before it uses a lane. */
	int (*thread_init)(void);
	/* Create the lane's native queue (with hardware priority per l->prio_class) and its
	 * buffers for operands up to @s. The lane index sets the modeled connection. */
	int (*lane_create)(struct xsb_lane *l, const struct xsb_sizes *s);
	void (*lane_destroy)(struct xsb_lane *l);
	/* Enqueue @op on the lane's own native queue; must not wait for it. */
	int (*launch)(struct xsb_lane *l, const struct xsb_op *op);
	/* Run @op from a launch callback that was given @hwq; @last: the task's last op. */
	XResult (*launch_cb)(struct xsb_lane *l, HwQueueHandle hwq, const struct xsb_op *op,
			     bool last);
	/* Make @op a command of its own kind for an XQueue on the lane's HwQueue (a kernel
	 * command on GPUs); NULL, or kXSchedErrorNotSupported, where the op has none. */
	XResult (*kernel_cmd)(struct xsb_lane *l, struct xsb_cbslot *slot, HwCommandHandle *cmd);
	/* Wait until everything enqueued with launch() has completed. */
	int (*sync)(struct xsb_lane *l);
	/* Wrap the lane's native queue as a HwQueue. */
	XResult (*hwq_create)(struct xsb_lane *l, HwQueueHandle *hwq);
	/* The start time of the STAMP kernel that wrote @slot, in CLOCK_MONOTONIC ns, or -1
	 * if it has not run. */
	int64_t (*stamp_read)(int slot);
	void (*stamp_reset)(int slot);
	/* Measure the offset of the stamp clock to the host clock again (they drift apart by
	 * parts per million); NULL when stamps are host times. */
	int (*calibrate)(void);
	/* Method used for stamps, in words (for the output). */
	const char *stamp_method;
	void (*fini)(void);
};

/* The host model's device shared with other processes through the file @path (procs
 * scenario; sim.c): 0, or -1 when it cannot be opened. */
int xsb_sim_share(const char *path);

/* Backend constructors: return 0 and fill @be, or -1 and write why into @why. */
int xsb_host_backend(struct xsb_backend *be, char *why, size_t whylen);
int xsb_cuda_backend(struct xsb_backend *be, char *why, size_t whylen);
bool xsb_cuda_built(void);

/* ---- lanes through modes (lane.c) ---------------------------------------------------- */

/* Set up a lane for @mode: native queue, and for xsched modes a HwQueue and an XQueue at
 * the mode's level with priority by tier and, for low lanes, launch config @cfg. */
int xsb_lane_open(struct xsb_lane *l, const struct xsb_backend *be, const struct xsb_mode *m,
		  int id, enum xsb_tier tier, enum xsb_submit submit, const struct xsb_sizes *s,
		  const struct xsb_launch_cfg *cfg);
void xsb_lane_close(struct xsb_lane *l, const struct xsb_backend *be);
/* Submit every op of @t in order; does not wait. */
int xsb_lane_submit(struct xsb_lane *l, const struct xsb_backend *be, const struct xsb_task *t);
/* Wait for the task submitted last. */
int xsb_lane_wait(struct xsb_lane *l, const struct xsb_backend *be);
int xsb_lane_run(struct xsb_lane *l, const struct xsb_backend *be, const struct xsb_task *t);

/* ---- time, random, samples, output (util.c) ------------------------------------------ */

int64_t xsb_now_ns(void);
void xsb_sleep_ns(int64_t ns);
void xsb_sleep_until(int64_t t_ns);

struct xsb_rng {
	uint64_t s;
};
uint64_t xsb_rand(struct xsb_rng *r);
double xsb_rand01(struct xsb_rng *r);

struct xsb_sample {
	int lane;
	int task;
	bool high;
	enum xsb_tier tier;
	int64_t start, end; /* CLOCK_MONOTONIC ns */
	int64_t extra;      /* scenario-defined (preempt: submit-to-completion ns) */
};

struct xsb_samples {
	struct xsb_sample *v;
	size_t n, cap;
};
void xsb_samples_add(struct xsb_samples *s, const struct xsb_sample *x);
void xsb_samples_free(struct xsb_samples *s);

/* Latency statistics in ms. */
struct xsb_stats {
	size_t n;
	double p50, p99, max, mean;
};
void xsb_stats_of(const double *v, size_t n, struct xsb_stats *st);
const char *xsb_tier_name(enum xsb_tier t);

/* CPU time of the process (user + system, every thread) in ns. */
int64_t xsb_cpu_ns(void);

/* Global output settings (main.c). */
struct xsb_out {
	FILE *jsonl;
	bool quiet;
	bool tty;
};
extern struct xsb_out xsb_out;

/* JSON lines: one object per call. */
void xsb_json_sample(const char *scenario, const char *config, const char *mode,
		     const struct xsb_sample *x, int64_t t0, double latency_ms);
void xsb_json_raw(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The closing summary (summary.c). A scenario's target lines note each mode's figure for
 * configuration @what: the high lane's p99 over alone (@ms: a figure in ms instead) and the
 * lower work kept over native's (@low, < 0: none), with @verdict, its target word; only
 * native, native-prio and @lib (the mode the targets are for) are kept. A line of its own
 * (overhead) goes below the table. main prints it all at the end. */
void xsb_summary_note(const char *what, bool ms, const char *lib, const char *mode, double value,
		      double low, const char *verdict);
void xsb_summary_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xsb_summary_print(bool modeled);

/* Progress on stderr without --quiet: on a terminal a line redrawn 4 times a second; else
 * (a log, a pipe) a plain line at the end of each run, and during a run 10 s into it and
 * every 10 s after. The stall watchdog:
 * when no task completes for stall_s seconds, it calls @on_stall once per run (from its
 * own thread) and, if the run stays stuck for as long again, exits with status 3. */
void xsb_progress_begin(const char *label, long total, double duration_s);
void xsb_progress_add(long n);
void xsb_progress_end(void);
void xsb_watchdog_start(int stall_s, void (*on_stall)(void));

/* Fatal error: print and exit(1). */
void xsb_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- plots (plot.c) ------------------------------------------------------------------ */

/* --plot DIR: create @dir, note whether gnuplot is on PATH (it says so either way).
 * Returns 0, or -1 when @dir cannot be made. */
int xsb_plot_init(const char *dir, const char *device, const char *date, bool modeled);
/* One run's samples (every lane's) for scenario @scenario and configuration @config; a
 * no-op without --plot. */
void xsb_plot_run(const char *scenario, const char *config, const char *mode,
		  const struct xsb_samples *smp, int nlanes, int64_t t0);
/* Write (and render) the plots of the runs handed in since the last flush. */
void xsb_plot_flush(void);
void xsb_plot_fini(void);

/* ---- scenarios (scenarios.c) --------------------------------------------------------- */

struct xsb_opts {
	const char *scenario; /* name or "all" */
	const struct xsb_mode *modes[16];
	size_t nmodes;
	bool modes_given; /* --modes was given */
	double duration_s;
	int tasks;   /* per thread; 0 = scenario default */
	int threads; /* 0 = scenario default */
	bool quick;
	int large_batch;
	double rate;     /* two-models request rate */
	double rate_mid; /* corun: mid-tier requests per second; 0 = back to back */
	int lows[8];     /* serve, corun and mlfq: numbers of low lanes (--lows) */
	int nlows;
	const char *shapes;           /* corun: comma-separated shapes (--shapes), or NULL */
	struct xsb_launch_cfg cfg[4]; /* per level */
	bool cfg_set[4];
	uint64_t seed;
	/* CUDA_DEVICE_MAX_CONNECTIONS is this program's default (main), not the user's: the
	 * procs scenario's children get their own (procs.c). */
	bool conn_default;
};

struct xsb_ctx {
	const struct xsb_backend *be;
	const struct xsb_opts *o;
	int fails; /* runs that failed */
};

int xsb_scenario_systematic(struct xsb_ctx *c);
int xsb_scenario_latency(struct xsb_ctx *c);
int xsb_scenario_two_models(struct xsb_ctx *c);
int xsb_scenario_serve(struct xsb_ctx *c);
int xsb_scenario_corun(struct xsb_ctx *c);
int xsb_scenario_mlfq(struct xsb_ctx *c);
/* The corun shapes, for --help and checking --shapes; NULL after the last. */
const char *xsb_corun_shape_name(size_t i);
int xsb_scenario_preempt(struct xsb_ctx *c);
int xsb_scenario_overhead(struct xsb_ctx *c);
int xsb_scenario_tune(struct xsb_ctx *c);
/* The serve load with the high lane in one process and each low lane in another (procs.c);
 * and the entry of those processes (--procs-child FILE:INDEX). */
int xsb_scenario_procs(struct xsb_ctx *c);
int xsb_procs_child(const struct xsb_backend *be, const char *arg);
void xsb_print_launch_cfg(const struct xsb_ctx *c);
/* The watchdog's hook: dumps the running run's queues and resumes every queue. */
void xsb_on_stall(void);

/* ---- model layers (models.c) --------------------------------------------------------- */

/* Append the conv layers (as implicit GEMMs) and the classifier of a ResNet to @t. */
void xsb_resnet18(struct xsb_task *t, int batch);
void xsb_resnet50(struct xsb_task *t, int batch);
void xsb_task_free(struct xsb_task *t);
void xsb_task_gemms(struct xsb_task *t, int count, int m, int n, int k);
/* Append @count streaming kernels of XSB_STREAM_FLOATS. */
void xsb_task_streams(struct xsb_task *t, int count);
void xsb_task_push(struct xsb_task *t, const struct xsb_op *op);

#endif
