/* xsched-bench: the procs scenario, the serve load with its lanes in several processes.
 *
 * A serving engine and a training job usually live in separate processes. Here the high
 * lane (requests of 20 x SGEMM 1024^3, Poisson arrivals at 40/s, latency from arrival, as
 * in serve) runs in one process and each of N low lanes (SGEMM 4096^3 back to back) in a
 * process of its own; the processes are this program again (fork and exec,
 * --procs-child), which run their lanes through the same backend and write their samples
 * to a shared file. Rows, for each N:
 * - native (N+1 processes): plain streams, equal priority;
 * - native-prio (N+1 processes): the high stream at the greatest hardware priority, the
 *   lows at the least (across processes without MPS it does not act: the GPU time-slices
 *   between contexts);
 * - xsched, 1 process: the library's defaults with every lane in one process (today's
 *   figure for the same load);
 * - xsched, N+1 processes: the same across processes, which coordinate through the board
 *   (doc/architecture.md, "Several processes on one GPU: the board").
 * Targets: across processes, the high p99 within 1.2x alone, and the lows keeping at least
 * 0.90 of what the one-process row keeps.
 *
 * The host backend models the device per process; here the processes share one model
 * device (sim.c, xsb_sim_share: a kernel holds a file lock from start to end), and they
 * share the board of host queues through XSCHED_BOARD (a temporary directory) unless the
 * environment names one. On a GPU the board is the device's (XSCHED_BOARD=auto).
 */
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { XSB_PMAXL = 64, XSB_PMAXS = 16384 };

/* The file the parent and its children share. */
struct xsb__pshm {
	/* Written by the parent before the children start. */
	char mode[32];
	char sim_dev[256]; /* the host model's shared device, "" on a GPU */
	int nlanes;        /* lane 0 is the high one */
	int nprocs;
	int first[XSB_PMAXL + 1]; /* process p runs lanes first[p] .. first[p + 1] - 1 */
	int req_n, req_size, low_size;
	double rate, dur_s;
	uint64_t seed;
	/* The run. */
	atomic_int ready;   /* lanes warmed up */
	_Atomic int64_t t0; /* the clock's start (0: not yet), CLOCK_MONOTONIC ns */
	atomic_int err;
	double cpu[XSB_PMAXL]; /* each process's CPU time over the run's wall time */
	struct {
		atomic_int n;
		int64_t start[XSB_PMAXS], end[XSB_PMAXS];
	} lane[XSB_PMAXL];
};

/* ---- a child process ------------------------------------------------------------------ */

struct xsb__plane {
	struct xsb__pshm *sh;
	const struct xsb_backend *be;
	struct xsb_lane l;
	int i; /* lane index */
	const struct xsb_task *t;
};

static void xsb__precord(struct xsb__pshm *sh, int i, int64_t start, int64_t end)
{
	int k = atomic_load(&sh->lane[i].n);
	if (k >= XSB_PMAXS)
		return;
	sh->lane[i].start[k] = start;
	sh->lane[i].end[k] = end;
	atomic_store(&sh->lane[i].n, k + 1);
}

/* One lane's thread: a warm-up task, the start, then its open loop (serve's). */
static void *xsb__plane_main(void *arg)
{
	struct xsb__plane *p = arg;
	struct xsb__pshm *sh = p->sh;
	bool high = p->i == 0;
	if (p->be->thread_init() || xsb_lane_run(&p->l, p->be, p->t))
		atomic_store(&sh->err, 1);
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->t0) && !atomic_load(&sh->err))
		xsb_sleep_ns(1000000);
	int64_t t0 = atomic_load(&sh->t0), end = t0 + (int64_t)(sh->dur_s * 1e9);
	struct xsb_rng rng = {sh->seed * 1000003u + (uint64_t)p->i};
	double next_s = 0;
	while (!atomic_load(&sh->err)) {
		int64_t arrival = xsb_now_ns();
		if (high) {
			next_s += -log(1.0 - xsb_rand01(&rng)) / sh->rate;
			arrival = t0 + (int64_t)(next_s * 1e9);
			if (arrival >= end)
				break;
			xsb_sleep_until(arrival);
		} else if (arrival >= end) {
			break;
		}
		if (xsb_lane_run(&p->l, p->be, p->t)) {
			atomic_store(&sh->err, 1);
			break;
		}
		xsb__precord(sh, p->i, arrival, xsb_now_ns());
	}
	return NULL;
}

/* The tasks of the run: the high request and the low task. */
static void xsb__ptasks(const struct xsb__pshm *sh, struct xsb_task *req, struct xsb_task *low)
{
	memset(req, 0, sizeof(*req));
	memset(low, 0, sizeof(*low));
	xsb_task_gemms(req, sh->req_n, sh->req_size, sh->req_size, sh->req_size);
	xsb_task_gemms(low, 1, sh->low_size, sh->low_size, sh->low_size);
}

int xsb_procs_child(const struct xsb_backend *be, const char *arg)
{
	char path[512];
	int p = -1;
	const char *colon = strrchr(arg, ':');
	if (!colon || (size_t)(colon - arg) >= sizeof(path))
		return 2;
	memcpy(path, arg, (size_t)(colon - arg));
	path[colon - arg] = 0;
	p = atoi(colon + 1);
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct xsb__pshm *sh =
	    fd < 0 ? MAP_FAILED
		   : mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	if (sh == MAP_FAILED || p < 0 || p >= sh->nprocs)
		return 2;
	if (sh->sim_dev[0] && xsb_sim_share(sh->sim_dev))
		return 2;
	const struct xsb_mode *m = xsb_mode_find(sh->mode);
	struct xsb_task req, low;
	xsb__ptasks(sh, &req, &low);
	struct xsb_sizes sz = {0, 0, 0};
	xsb_task_sizes(&req, &sz);
	xsb_task_sizes(&low, &sz);
	int n = sh->first[p + 1] - sh->first[p];
	struct xsb__plane *lanes = calloc((size_t)n, sizeof(*lanes));
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	int opened = 0;
	for (; m && lanes && th && opened < n; opened++) {
		struct xsb__plane *pl = &lanes[opened];
		pl->sh = sh, pl->be = be, pl->i = sh->first[p] + opened;
		pl->t = pl->i == 0 ? &req : &low;
		if (xsb_lane_open(&pl->l, be, m, pl->i, pl->i ? XSB_TIER_LOW : XSB_TIER_HIGH,
				  XSB_SUBMIT_CALLBACK, &sz, NULL))
			break;
	}
	if (opened < n) {
		atomic_store(&sh->err, 1);
		n = opened;
	}
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, xsb__plane_main, &lanes[i]);
	int64_t cpu0 = 0, w0 = 0;
	while (!atomic_load(&sh->t0) && !atomic_load(&sh->err))
		xsb_sleep_ns(1000000);
	cpu0 = xsb_cpu_ns(), w0 = xsb_now_ns();
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	int64_t wall = xsb_now_ns() - w0;
	sh->cpu[p] = wall > 0 ? (double)(xsb_cpu_ns() - cpu0) / (double)wall : 0;
	for (int i = 0; i < n; i++)
		xsb_lane_close(&lanes[i].l, be);
	free(lanes);
	free(th);
	xsb_task_free(&req);
	xsb_task_free(&low);
	XSchedShutdown();
	return atomic_load(&sh->err) ? 1 : 0;
}

/* ---- the parent -------------------------------------------------------------------------- */

struct xsb__prow {
	char name[40];
	bool done;
	struct xsb_stats high;
	double low_thr; /* low tasks per second, all lanes */
	double cpu;     /* cores busy, all processes */
};

/* Start process @p of the run in @path. */
static pid_t xsb__pspawn(const struct xsb_ctx *c, const char *path, int p)
{
	char arg[640];
	snprintf(arg, sizeof(arg), "%s:%d", path, p);
	char *argv[] = {"xsched-bench",
			"--backend",
			(char *)c->be->name,
			"--quiet",
			"--procs-child",
			arg,
			NULL};
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		/* A child has one stream per lane: few hardware connections, not the 32 that
		 * main() asks for a process of many streams (a user's own choice stays). With 32
		 * each, 16 processes left 7 of their children without a context (NVIDIA H200,
		 * 2026-11-28: cudaSetDeviceFlags "out of memory" with the GPU's memory free):
		 * each connection is a channel of the GPU's, which has a bounded number. */
		if (c->o->conn_default)
			setenv("CUDA_DEVICE_MAX_CONNECTIONS", "4", 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	return pid;
}

/* Run the configuration in @sh (set up by the caller) to its end: its children started,
 * the clock started once every lane warmed up, and every child waited for. */
static int xsb__prun(const struct xsb_ctx *c, struct xsb__pshm *sh, const char *path)
{
	pid_t pids[XSB_PMAXL];
	for (int p = 0; p < sh->nprocs; p++)
		pids[p] = xsb__pspawn(c, path, p);
	int64_t limit = xsb_now_ns() + 300 * (int64_t)1000000000;
	while (atomic_load(&sh->ready) < sh->nlanes && !atomic_load(&sh->err) &&
	       xsb_now_ns() < limit)
		xsb_sleep_ns(2000000);
	atomic_store(&sh->t0, xsb_now_ns());
	int bad = atomic_load(&sh->ready) < sh->nlanes;
	for (int p = 0; p < sh->nprocs; p++) {
		int st = 0;
		int64_t until = xsb_now_ns() + (int64_t)((sh->dur_s + 120) * 1e9);
		while (waitpid(pids[p], &st, WNOHANG) == 0) {
			if (xsb_now_ns() > until) {
				fprintf(stderr, "xsched-bench: procs: process %d hung: killed\n",
					p);
				kill(pids[p], SIGKILL);
				waitpid(pids[p], &st, 0);
				break;
			}
			xsb_sleep_ns(5000000);
		}
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad || atomic_load(&sh->err) ? -1 : 0;
}

/* A fresh shared file at @path for @mode with @nlanes lanes in @nprocs processes. */
static struct xsb__pshm *xsb__pshm_new(const char *path, const char *dev, const char *mode,
				       int nlanes, int nprocs, double dur)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)sizeof(struct xsb__pshm)))
		xsb_die("procs: cannot make %s", path);
	struct xsb__pshm *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (sh == MAP_FAILED)
		xsb_die("procs: cannot map %s", path);
	snprintf(sh->mode, sizeof(sh->mode), "%s", mode);
	snprintf(sh->sim_dev, sizeof(sh->sim_dev), "%s", dev);
	sh->nlanes = nlanes;
	sh->nprocs = nprocs;
	for (int p = 0; p <= nprocs; p++) /* one process: every lane; else one lane each */
		sh->first[p] = nprocs == 1 ? (p ? nlanes : 0) : p;
	sh->req_n = 20, sh->req_size = 1024, sh->low_size = 4096;
	sh->rate = 40.0, sh->dur_s = dur;
	return sh;
}

/* The figures of a finished run into @row. */
static void xsb__pcollect(const struct xsb__pshm *sh, struct xsb__prow *row)
{
	size_t n = (size_t)atomic_load(&sh->lane[0].n);
	double *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		xsb_die("out of memory");
	for (size_t k = 0; k < n; k++)
		v[k] = (double)(sh->lane[0].end[k] - sh->lane[0].start[k]) / 1e6;
	xsb_stats_of(v, n, &row->high);
	free(v);
	long lows = 0;
	for (int i = 1; i < sh->nlanes; i++)
		lows += atomic_load(&sh->lane[i].n);
	row->low_thr = (double)lows / sh->dur_s;
	row->cpu = 0;
	for (int p = 0; p < sh->nprocs; p++)
		row->cpu += sh->cpu[p];
	row->done = true;
}

/* One row: @mode with @nlanes lanes in @nprocs processes. */
static void xsb__prow_run(struct xsb_ctx *c, const char *dir, const char *dev, const char *mode,
			  int nlanes, int nprocs, double dur, struct xsb__prow *row)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/run", dir);
	struct xsb__pshm *sh = xsb__pshm_new(path, dev, mode, nlanes, nprocs, dur);
	sh->seed = c->o->seed;
	if (!xsb__prun(c, sh, path))
		xsb__pcollect(sh, row);
	else
		c->fails++;
	munmap(sh, sizeof(*sh));
	unlink(path);
}

static void xsb__pprint(const struct xsb_ctx *c, int nl, const struct xsb__prow *rows, int n,
			const struct xsb_stats *alone)
{
	printf("\nprocs 1H+%dL: high = 20 x SGEMM 1024^3 at 40/s (Poisson), lows = SGEMM 4096^3 "
	       "back to back\n",
	       nl);
	printf("  %-26s %6s %9s %9s %7s %9s %8s %5s\n", "row", "n", "p50 ms", "p99 ms", "p99/al",
	       "low/s", "low/1p", "cpu");
	printf("  %-26s %6zu %9.3f %9.3f %7s %9s %8s %5s\n", "alone (1 process)", alone->n,
	       alone->p50, alone->p99, "1.00", "-", "-", "-");
	const struct xsb__prow *one = &rows[2];
	for (int i = 0; i < n; i++) {
		const struct xsb__prow *r = &rows[i];
		if (!r->done) {
			printf("  %-26s failed (see the errors above)\n", r->name);
			continue;
		}
		char frac[16] = "-";
		if (one->done && one->low_thr > 0)
			snprintf(frac, sizeof(frac), "%.3f", r->low_thr / one->low_thr);
		printf("  %-26s %6zu %9.3f %9.3f %7.2f %9.1f %8s %5.2f\n", r->name, r->high.n,
		       r->high.p50, r->high.p99, r->high.p99 / alone->p99, r->low_thr, frac,
		       r->cpu);
		xsb_json_raw("{\"type\":\"summary\",\"scenario\":\"procs\",\"config\":\"1H+%dL\","
			     "\"row\":\"%s\",\"n\":%zu,\"p50_ms\":%.4f,\"p99_ms\":%.4f,"
			     "\"alone_p99_ms\":%.4f,\"low_tasks_per_s\":%.3f,\"cpu_cores\":%.3f}",
			     nl, r->name, r->high.n, r->high.p50, r->high.p99, alone->p99,
			     r->low_thr, r->cpu);
	}
	const struct xsb__prow *x = &rows[3];
	if (x->done && one->done) {
		bool lat = x->high.p99 <= 1.2 * alone->p99;
		bool thr = one->low_thr > 0 && x->low_thr >= 0.9 * one->low_thr;
		const char *judge = c->be->modeled ? "(model)" : NULL;
		printf("  targets: across processes, high p99 <= 1.2 x alone: %s (%.2fx); lows >= "
		       "0.90 of one process: %s (%.3f)\n",
		       judge ? judge
		       : lat ? "MET"
			     : "MISSED",
		       x->high.p99 / alone->p99,
		       judge ? judge
		       : thr ? "MET"
			     : "MISSED",
		       one->low_thr > 0 ? x->low_thr / one->low_thr : 0.0);
	}
}

int xsb_scenario_procs(struct xsb_ctx *c)
{
	static const int lows_full[4] = {1, 3, 7, 15}, lows_quick[1] = {3};
	const int *lows = c->o->nlows ? c->o->lows : c->o->quick ? lows_quick : lows_full;
	int nl = c->o->nlows ? c->o->nlows : c->o->quick ? 1 : 4;
	double dur = c->o->duration_s > 0 ? c->o->duration_s : (c->o->quick ? 1.5 : 6.0);
	char dir[] = "/tmp/xsb-procs-XXXXXX", dev[600] = "";
	if (!mkdtemp(dir))
		xsb_die("procs: cannot make a temporary directory");
	if (c->be->modeled) {
		snprintf(dev, sizeof(dev), "%s/device", dir);
		if (!getenv("XSCHED_BOARD"))
			setenv("XSCHED_BOARD", dir, 1); /* the children's board of host queues */
	}
	printf("\nprocs: lanes in separate processes (board: %s)\n",
	       getenv("XSCHED_BOARD") ? getenv("XSCHED_BOARD") : "auto");
	struct xsb__prow alone_row = {.done = false};
	xsb__prow_run(c, dir, dev, "native", 1, 1, dur, &alone_row);
	if (!alone_row.done) {
		rmdir(dir);
		return -1;
	}
	for (int li = 0; li < nl; li++) {
		int n = lows[li] + 1;
		if (n > XSB_PMAXL)
			continue;
		struct xsb__prow rows[4] = {{.name = "native, N+1 processes"},
					    {.name = "native-prio, N+1 processes"},
					    {.name = "xsched, 1 process"},
					    {.name = "xsched, N+1 processes"}};
		xsb__prow_run(c, dir, dev, "native", n, n, dur, &rows[0]);
		xsb__prow_run(c, dir, dev, "native-prio", n, n, dur, &rows[1]);
		xsb__prow_run(c, dir, dev, "xsched", n, 1, dur, &rows[2]);
		xsb__prow_run(c, dir, dev, "xsched", n, n, dur, &rows[3]);
		xsb__pprint(c, lows[li], rows, 4, &alone_row.high);
	}
	unlink(dev);
	char board[700];
	snprintf(board, sizeof(board), "%s/xsched-host", dir);
	unlink(board);
	rmdir(dir);
	return 0;
}
