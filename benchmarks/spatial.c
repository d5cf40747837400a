/* spatial: what confining low-priority work to part of the GPU (NVIDIA green contexts) does
 * to a latency-critical chain and to the low work, against equal streams, hardware stream
 * priority and a temporal stop, measured before the library builds on it (doc/bench.md,
 * "spatial_cuda"). It does not use libxsched.
 *
 * High: one request = a chain in the primary context on its own stream (memory-bound: 40
 * streaming kernels of 4 Mi floats over 4 buffer pairs, more than the L2 holds;
 * compute-bound: 4 cuBLAS SGEMMs 2048^3), open-loop
 * Poisson arrivals (fixed seed) at 40% of the chain's alone service rate, one thread
 * launching, one waiting on each request's event; latency = arrival to observed
 * completion. Low: four lanes, each on its own thread and stream with 8 kernels
 * outstanding (lanes 0 and 2 stream 3 x 256 MiB per kernel, lanes 1 and 3 run a tiled SGEMM
 * 2048^3). Every kernel but cuBLAS's comes from spatial_kernels.cu, loaded context-
 * independently (cuLibraryLoadData), so the low lanes run the same kernels in every mode.
 * Then the cost of moving a queue's launches between a primary and a green stream in order
 * (events), and thread-block clusters on green contexts.
 *
 * usage: spatial_cuda [--quick] [--window S] [--ks 16,32,...] [--rate R] [--out FILE]
 * Exits 77 without a CUDA device of compute capability 9.0 or later. */
#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* spatial_kernels.cu as a fatbin (sm_90 code, compute_90 PTX), embedded by scripts/bin2c.py */
extern const unsigned char sp_fatbin[];

#define NLANES        4          /* low lanes: even = streaming, odd = SGEMM */
#define DEPTH         8          /* low kernels outstanding per lane */
#define STOP_DEPTH    2          /* ... in the stop mode */
#define HI_RING       32         /* high requests submitted and not yet complete, at most */
#define HI_MEM_N      (1u << 22) /* floats per buffer of a high streaming kernel */
#define HI_MEM_SETS   4          /* buffer pairs the chain cycles over: 128 MiB, more than the L2 */
#define HI_MEM_CHAIN  40
#define HI_GEMM_N     2048
#define HI_GEMM_CHAIN 4
#define LO_STREAM_N   (1u << 26) /* floats per buffer of a low streaming kernel */
#define LO_GEMM_N     2048
#define CHECK_N       (1u << 20)
#define CHECK_GEMM_N  128
#define TILE          32 /* sp_sgemm's tile and block: (TILE, ROWS) threads */
#define ROWS          8
#define BUSY          0.4 /* high load: arrival rate x alone service time */
#define SEED          0x5eed5eedULL
#define MAXK          16
#define CLUSTER_REPS  20

/* The driver API, reached through the runtime (cudaGetDriverEntryPointByVersion at the ABI of
 * the cuda.h compiled against): the program links no libcuda, so that it starts, and exits
 * 77, on a machine without a driver. A field is named as cuda.h maps the name
 * (drv.cuMemsetD32 is drv.cuMemsetD32_v2, of that function's type). Each function listed
 * has at CUDA 13.0 the prototype cuda.h gives it; cuCtxSynchronize has not (at 13.0 it
 * takes a context), so the primary context is synced with cudaDeviceSynchronize. */
#define DRIVER_API(X)                                                                              \
	X(cuCtxFromGreenCtx)                                                                       \
	X(cuCtxGetCurrent)                                                                         \
	X(cuCtxPopCurrent)                                                                         \
	X(cuCtxPushCurrent)                                                                        \
	X(cuCtxSetCurrent)                                                                         \
	X(cuDevResourceGenerateDesc)                                                               \
	X(cuDevSmResourceSplitByCount)                                                             \
	X(cuDeviceGet)                                                                             \
	X(cuDeviceGetAttribute)                                                                    \
	X(cuDeviceGetDevResource)                                                                  \
	X(cuDeviceGetName)                                                                         \
	X(cuDriverGetVersion)                                                                      \
	X(cuEventCreate)                                                                           \
	X(cuEventDestroy)                                                                          \
	X(cuEventQuery)                                                                            \
	X(cuEventRecord)                                                                           \
	X(cuEventSynchronize)                                                                      \
	X(cuGetErrorName)                                                                          \
	X(cuGreenCtxCreate)                                                                        \
	X(cuGreenCtxDestroy)                                                                       \
	X(cuGreenCtxStreamCreate)                                                                  \
	X(cuInit)                                                                                  \
	X(cuLaunchKernel)                                                                          \
	X(cuLaunchKernelEx)                                                                        \
	X(cuLibraryGetKernel)                                                                      \
	X(cuLibraryLoadData)                                                                       \
	X(cuLibraryUnload)                                                                         \
	X(cuMemcpyDtoH)                                                                            \
	X(cuMemcpyHtoD)                                                                            \
	X(cuMemsetD32)                                                                             \
	X(cuOccupancyMaxActiveClusters)                                                            \
	X(cuStreamDestroy)                                                                         \
	X(cuStreamSynchronize)                                                                     \
	X(cuStreamWaitEvent)
#define DRV_FIELD(f) __typeof__(f) *f;
static struct {
	DRIVER_API(DRV_FIELD)
} drv;

enum { HI_NONE = -1, HI_MEM = 0, HI_GEMM = 1 };
static const char *const hi_name[] = {"mem", "gemm"};

static _Noreturn void die(const char *file, int line, const char *what, const char *err)
{
	fprintf(stderr, "spatial: %s:%d %s: %s\n", file, line, what, err);
	exit(1);
}

static const char *cu_err(CUresult r)
{
	const char *s = NULL;
	if (!drv.cuGetErrorName || drv.cuGetErrorName(r, &s) != CUDA_SUCCESS || !s)
		return "unknown CUresult";
	return s;
}

#define CU(x)                                                                                      \
	do {                                                                                       \
		CUresult r_ = (x);                                                                 \
		if (r_ != CUDA_SUCCESS)                                                            \
			die(__FILE__, __LINE__, #x, cu_err(r_));                                   \
	} while (0)
#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess)                                                             \
			die(__FILE__, __LINE__, #x, cudaGetErrorString(e_));                       \
	} while (0)
#define CB(x)                                                                                      \
	do {                                                                                       \
		cublasStatus_t s_ = (x);                                                           \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                                   \
			die(__FILE__, __LINE__, #x, cublasGetStatusString(s_));                    \
	} while (0)
#define PT(x)                                                                                      \
	do {                                                                                       \
		int e_ = (x);                                                                      \
		if (e_ != 0)                                                                       \
			die(__FILE__, __LINE__, #x, strerror(e_));                                 \
	} while (0)

/* Where the low lanes run: one stream per lane and each lane's ring of events, all of one
 * context (the primary context or a green context). */
typedef struct placement {
	int sms; /* SMs the lanes may use */
	CUstream s[NLANES];
	CUevent ev[NLANES][DEPTH];
} placement;

/* A green context of about k_req SMs, with low-lane streams at priority 0 (def) and, where
 * the least priority is not 0, at the least priority (least). */
typedef struct green {
	int k_req, sms; /* SMs asked for and obtained */
	CUgreenCtx g;
	CUcontext ctx; /* cuCtxFromGreenCtx(g) */
	placement def, least;
	CUevent sw_ev; /* recorded on def.s[0] by the switch-cost chain */
} green;

static struct {
	CUdevice dev;
	CUcontext ctx; /* the primary context */
	int sms;
	int prio_least, prio_greatest;
	CUlibrary lib;
	CUfunction axpby, sgemm, tiny; /* CUkernel handles, cast as cuLaunchKernel allows */
	cublasHandle_t blas;
	CUstream hs_def, hs_top;    /* high streams: priority 0, greatest priority */
	placement lo_def, lo_least; /* low lanes on primary-context streams */
	int has_least;              /* least priority != 0: lo_least and green.least exist */
	CUevent hev[HI_RING];       /* high requests' completion events */
	CUevent sw_ev, sw_ev2;      /* the switch-cost chain's events on primary streams */
	CUdeviceptr hx[HI_MEM_SETS], hy[HI_MEM_SETS]; /* high streaming buffers */
	CUdeviceptr ha, hb, hc;                       /* high SGEMM matrices */
	CUdeviceptr lbuf[NLANES][3]; /* per lane: x, y (streaming) or A, B, C (SGEMM) */
	CUdeviceptr counter;         /* sp_tiny's */
	double t_start;
	FILE *csv;
} g;

static struct {
	int quick;
	double window, warm; /* seconds measured per mode, and of ramp-up before */
	int ks[MAXK], nks;
	double rate; /* high requests per second; 0: BUSY over the alone service time */
	const char *out;
} opt;

/* ---- time and random numbers ---- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
	struct timespec ts;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_nsec = 999999999L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Sleeps to shortly before t, then spins: arrivals on time within microseconds. */
static void wait_until(double t)
{
	if (t - now_s() > 300e-6)
		sleep_until(t - 200e-6);
	while (now_s() < t)
		;
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000L};
	nanosleep(&ts, NULL);
}

/* splitmix64 */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* An exponential gap of mean 1 / rate. */
static double exp_gap(uint64_t *s, double rate)
{
	double u = ((double)(rng_next(s) >> 11) + 1.0) * 0x1p-53; /* (0, 1] */
	return -log(u) / rate;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile q of n sorted values; NAN for none. */
static double pct(const double *v, long n, double q)
{
	if (n <= 0)
		return NAN;
	long i = (long)ceil(q * (double)n) - 1;
	if (i < 0)
		i = 0;
	if (i >= n)
		i = n - 1;
	return v[i];
}

/* ---- device memory and launches ---- */

static CUdeviceptr dalloc(size_t bytes)
{
	void *p = NULL;
	CK(cudaMalloc(&p, bytes));
	return (CUdeviceptr)(uintptr_t)p;
}

static void dfill(CUdeviceptr p, float v, size_t count)
{
	uint32_t bits;
	memcpy(&bits, &v, sizeof(bits));
	CU(drv.cuMemsetD32(p, bits, count));
}

static unsigned axpby_grid(unsigned n)
{
	return (n / 4 + 255) / 256;
}

/* y = a * x + b * y over n floats (n a multiple of 4) on s. */
static void launch_axpby(CUstream s, CUdeviceptr x, CUdeviceptr y, unsigned n, float a, float b)
{
	unsigned long long n4 = n / 4;
	void *args[] = {&x, &y, &a, &b, &n4};
	CU(drv.cuLaunchKernel(g.axpby, axpby_grid(n), 1, 1, 256, 1, 1, 0, s, args, NULL));
}

/* C = A * B, n x n row-major (n a multiple of TILE), on s. */
static void launch_sgemm(CUstream s, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, int n)
{
	void *args[] = {&A, &B, &C, &n};
	CU(drv.cuLaunchKernel(g.sgemm, n / TILE, n / TILE, 1, TILE, ROWS, 1, 0, s, args, NULL));
}

static void launch_tiny(CUstream s)
{
	void *args[] = {&g.counter};
	CU(drv.cuLaunchKernel(g.tiny, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

/* One high request's kernels on s (no wait). */
static void high_request(int hi, CUstream s)
{
	if (hi == HI_MEM) {
		for (int i = 0; i < HI_MEM_CHAIN; i++)
			launch_axpby(s, g.hx[i % HI_MEM_SETS], g.hy[i % HI_MEM_SETS], HI_MEM_N,
				     1.0f, 0.5f);
		return;
	}
	const float one = 1.0f, zero = 0.0f;
	float *a = (float *)(uintptr_t)g.ha, *b = (float *)(uintptr_t)g.hb;
	float *c = (float *)(uintptr_t)g.hc;
	CB(cublasSetStream(g.blas, s));
	for (int i = 0; i < HI_GEMM_CHAIN; i++)
		CB(cublasSgemm(g.blas, CUBLAS_OP_N, CUBLAS_OP_N, HI_GEMM_N, HI_GEMM_N, HI_GEMM_N,
			       &one, a, HI_GEMM_N, b, HI_GEMM_N, &zero, c, HI_GEMM_N));
}

/* One low kernel of lane i on s. */
static void low_kernel(int i, CUstream s)
{
	if (i % 2 == 0)
		launch_axpby(s, g.lbuf[i][0], g.lbuf[i][1], LO_STREAM_N, 1.0f, 0.5f);
	else
		launch_sgemm(s, g.lbuf[i][0], g.lbuf[i][1], g.lbuf[i][2], LO_GEMM_N);
}

/* ---- placements and green contexts ---- */

static void placement_events(placement *p, CUcontext ctx)
{
	CUcontext popped;
	CU(drv.cuCtxPushCurrent(ctx));
	for (int i = 0; i < NLANES; i++)
		for (int d = 0; d < DEPTH; d++)
			CU(drv.cuEventCreate(&p->ev[i][d],
					     CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING));
	CU(drv.cuCtxPopCurrent(&popped));
}

static void placement_primary(placement *p, int prio)
{
	p->sms = g.sms;
	for (int i = 0; i < NLANES; i++)
		CK(cudaStreamCreateWithPriority(&p->s[i], cudaStreamNonBlocking, prio));
	placement_events(p, g.ctx);
}

static void placement_green(placement *p, const green *gr, int prio)
{
	p->sms = gr->sms;
	for (int i = 0; i < NLANES; i++)
		CU(drv.cuGreenCtxStreamCreate(&p->s[i], gr->g, CU_STREAM_NON_BLOCKING, prio));
	placement_events(p, gr->ctx);
}

static void placement_destroy(placement *p)
{
	for (int i = 0; i < NLANES; i++) {
		for (int d = 0; d < DEPTH; d++)
			CU(drv.cuEventDestroy(p->ev[i][d]));
		CU(drv.cuStreamDestroy(p->s[i]));
	}
}

/* A green context of at least k SMs: one group split off the whole device. Returns 0, or
 * -1 (said why on stderr) when the split or the context is refused. */
static int green_make(green *gr, int k)
{
	CUdevResource all, part, rest;
	CUdevResourceDesc desc;
	unsigned n = 1;
	memset(gr, 0, sizeof(*gr));
	memset(&part, 0, sizeof(part));
	memset(&rest, 0, sizeof(rest));
	gr->k_req = k;
	CU(drv.cuDeviceGetDevResource(g.dev, &all, CU_DEV_RESOURCE_TYPE_SM));
	CUresult r = drv.cuDevSmResourceSplitByCount(&part, &n, &all, &rest, 0, (unsigned)k);
	if (r != CUDA_SUCCESS || n != 1) {
		fprintf(stderr, "spatial: K=%d: cuDevSmResourceSplitByCount: %s, %u groups\n", k,
			cu_err(r), n);
		return -1;
	}
	gr->sms = (int)part.sm.smCount;
	r = drv.cuDevResourceGenerateDesc(&desc, &part, 1);
	if (r == CUDA_SUCCESS)
		r = drv.cuGreenCtxCreate(&gr->g, desc, g.dev, CU_GREEN_CTX_DEFAULT_STREAM);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "spatial: K=%d (%d SMs): green context: %s\n", k, gr->sms,
			cu_err(r));
		return -1;
	}
	CU(drv.cuCtxFromGreenCtx(&gr->ctx, gr->g));
	placement_green(&gr->def, gr, 0);
	if (g.has_least)
		placement_green(&gr->least, gr, g.prio_least);
	CUcontext popped;
	CU(drv.cuCtxPushCurrent(gr->ctx));
	CU(drv.cuEventCreate(&gr->sw_ev, CU_EVENT_DISABLE_TIMING));
	CU(drv.cuCtxPopCurrent(&popped));
	return 0;
}

/* The low lanes' streams at the least priority: 0 is the least on NVIDIA GPUs, so
 * usually the priority-0 ones. */
static const placement *least_of(const placement *def, const placement *least)
{
	return g.has_least ? least : def;
}

static void green_destroy(green *gr)
{
	placement_destroy(&gr->def);
	if (g.has_least)
		placement_destroy(&gr->least);
	CU(drv.cuEventDestroy(gr->sw_ev));
	CU(drv.cuGreenCtxDestroy(gr->g));
}

/* ---- correctness, once per stream kind, before anything is timed ---- */

/* The streaming kernel, the SGEMM kernel (against the CPU on 128^3) and the tiny kernel on
 * s, with buffers allocated by cudaMalloc in the primary context. Exact: every value is a
 * small integer or half-integer. Exits on a mismatch. */
static void check_kernels(CUstream s, const char *where)
{
	const int n = CHECK_GEMM_N;
	size_t bytes = CHECK_N * sizeof(float), mbytes = (size_t)n * n * sizeof(float);
	float *x = malloc(bytes), *y = malloc(bytes), *a = malloc(mbytes), *b = malloc(mbytes);
	float *c = malloc(mbytes);
	if (!x || !y || !a || !b || !c)
		die(__FILE__, __LINE__, "malloc", "out of memory");
	CUdeviceptr dx = dalloc(bytes), dy = dalloc(bytes);
	CUdeviceptr da = dalloc(mbytes), db = dalloc(mbytes), dc = dalloc(mbytes);
	for (unsigned i = 0; i < CHECK_N; i++) {
		x[i] = (float)(i % 7) * 0.5f;
		y[i] = (float)(i % 5);
	}
	for (int i = 0; i < n * n; i++) {
		a[i] = (float)((i * 3 + i / n) % 5) - 2.0f;
		b[i] = (float)((i + 2 * (i / n)) % 7) - 3.0f;
	}
	CU(drv.cuMemcpyHtoD(dx, x, bytes));
	CU(drv.cuMemcpyHtoD(dy, y, bytes));
	CU(drv.cuMemcpyHtoD(da, a, mbytes));
	CU(drv.cuMemcpyHtoD(db, b, mbytes));
	CU(drv.cuMemsetD32(dc, 0, (size_t)n * n));
	CU(drv.cuMemsetD32(g.counter, 0, 1));
	CK(cudaDeviceSynchronize()); /* the copies are done before s (non-blocking) reads */
	launch_axpby(s, dx, dy, CHECK_N, 2.0f, 0.5f);
	launch_sgemm(s, da, db, dc, n);
	launch_tiny(s);
	CU(drv.cuStreamSynchronize(s));
	float *yo = malloc(bytes);
	if (!yo)
		die(__FILE__, __LINE__, "malloc", "out of memory");
	int cnt = -1;
	CU(drv.cuMemcpyDtoH(yo, dy, bytes));
	CU(drv.cuMemcpyDtoH(c, dc, mbytes));
	CU(drv.cuMemcpyDtoH(&cnt, g.counter, sizeof(cnt)));
	long bad = 0;
	for (unsigned i = 0; i < CHECK_N; i++)
		bad += yo[i] != 2.0f * x[i] + 0.5f * y[i];
	for (int i = 0; i < n && bad == 0; i++)
		for (int j = 0; j < n; j++) {
			double ref = 0;
			for (int k = 0; k < n; k++)
				ref += (double)a[i * n + k] * b[k * n + j];
			bad += fabs(c[i * n + j] - ref) > 1e-3;
		}
	if (bad || cnt != 1) {
		fprintf(stderr, "spatial: kernels wrong on %s: %ld bad values, tiny count %d\n",
			where, bad, cnt);
		exit(1);
	}
	printf("check %s: streaming, SGEMM %d^3 and tiny kernels correct\n", where, n);
	CK(cudaFree((void *)(uintptr_t)dx));
	CK(cudaFree((void *)(uintptr_t)dy));
	CK(cudaFree((void *)(uintptr_t)da));
	CK(cudaFree((void *)(uintptr_t)db));
	CK(cudaFree((void *)(uintptr_t)dc));
	free(x);
	free(y);
	free(a);
	free(b);
	free(c);
	free(yo);
}

/* ---- one mode: high threads and low lanes over a window ---- */

typedef struct run {
	int hi; /* HI_MEM, HI_GEMM or HI_NONE */
	CUstream hs;
	const placement *lows; /* NULL: no low lanes */
	int depth;             /* low kernels outstanding per lane */
	int gate;              /* stop mode: lows launch only while no high request is in flight */
	double rate;
	double t0, t_end; /* the measured window */
	/* Shared between the threads. */
	atomic_int inflight;     /* high requests submitted, not yet seen complete */
	atomic_long submitted;   /* high requests launched (release: arrival[] written) */
	atomic_long completed;   /* high requests seen complete (release: slot free) */
	atomic_int sub_done;     /* the submitter launches no more */
	atomic_int stop_lows;    /* the lanes launch no more */
	double arrival[HI_RING]; /* by the submitter, read by the waiter after submitted */
	/* Each written by one thread, read after it is joined. */
	double *lat; /* by the waiter: seconds, one per request */
	long lat_cap, nlat, unserved;
	long lane_done[NLANES]; /* low kernels seen complete inside the window */
} run;

typedef struct lane_arg {
	run *r;
	int i;
} lane_arg;

static int in_window(const run *r, double t)
{
	return t >= r->t0 && t < r->t_end;
}

/* Launches request after request at the arrival times, at most HI_RING outstanding; one
 * that cannot be launched before the window ends is counted unserved. */
static void *high_submit_main(void *arg)
{
	run *r = arg;
	uint64_t rng = SEED;
	double t = r->t0;
	long i = 0;
	CU(drv.cuCtxSetCurrent(g.ctx));
	for (;;) {
		t += exp_gap(&rng, r->rate);
		if (t >= r->t_end)
			break;
		if (i >= r->lat_cap) {
			r->unserved++;
			continue;
		}
		wait_until(t);
		while (i - atomic_load_explicit(&r->completed, memory_order_acquire) >= HI_RING &&
		       now_s() < r->t_end)
			sleep_us(20);
		if (now_s() >= r->t_end) {
			r->unserved++;
			continue;
		}
		r->arrival[i % HI_RING] = t;
		if (r->gate)
			atomic_fetch_add_explicit(&r->inflight, 1, memory_order_relaxed);
		high_request(r->hi, r->hs);
		CU(drv.cuEventRecord(g.hev[i % HI_RING], r->hs));
		i++;
		atomic_store_explicit(&r->submitted, i, memory_order_release);
	}
	atomic_store_explicit(&r->sub_done, 1, memory_order_release);
	return NULL;
}

/* Waits for each request in order (one stream: they complete in order). */
static void *high_wait_main(void *arg)
{
	run *r = arg;
	CU(drv.cuCtxSetCurrent(g.ctx));
	for (long j = 0;; j++) {
		for (;;) {
			int fin = atomic_load_explicit(&r->sub_done, memory_order_acquire);
			if (atomic_load_explicit(&r->submitted, memory_order_acquire) > j)
				break;
			if (fin) {
				r->nlat = j;
				return NULL;
			}
			sleep_us(10);
		}
		CU(drv.cuEventSynchronize(g.hev[j % HI_RING]));
		r->lat[j] = now_s() - r->arrival[j % HI_RING];
		if (r->gate)
			atomic_fetch_sub_explicit(&r->inflight, 1, memory_order_relaxed);
		atomic_store_explicit(&r->completed, j + 1, memory_order_release);
	}
}

/* Returns 1 when the lane's oldest kernel is done, 0 when not yet. */
static int event_done(CUevent e)
{
	CUresult q = drv.cuEventQuery(e);
	if (q == CUDA_ERROR_NOT_READY)
		return 0;
	CU(q);
	return 1;
}

/* Keeps r->depth kernels outstanding until told to stop, then drains; counts the kernels
 * seen complete inside the window. */
static void *lane_main(void *arg)
{
	lane_arg *la = arg;
	run *r = la->r;
	const int i = la->i, depth = r->depth;
	CUstream s = r->lows->s[i];
	const CUevent *ev = r->lows->ev[i];
	long launched = 0, done = 0, counted = 0;
	CU(drv.cuCtxSetCurrent(g.ctx));
	while (!atomic_load_explicit(&r->stop_lows, memory_order_acquire)) {
		if (launched - done >= depth) {
			CU(drv.cuEventSynchronize(ev[done % depth]));
			counted += in_window(r, now_s());
			done++;
			continue;
		}
		if (r->gate && atomic_load_explicit(&r->inflight, memory_order_relaxed) > 0) {
			if (done < launched && event_done(ev[done % depth])) {
				counted += in_window(r, now_s());
				done++;
			} else {
				sleep_us(20);
			}
			continue;
		}
		low_kernel(i, s);
		CU(drv.cuEventRecord(ev[launched % depth], s));
		launched++;
	}
	while (done < launched) {
		CU(drv.cuEventSynchronize(ev[done % depth]));
		counted += in_window(r, now_s());
		done++;
	}
	r->lane_done[i] = counted;
	return NULL;
}

/* One row of the table. NAN where not measured. */
typedef struct row {
	const char *high; /* hi_name[] or "-" */
	const char *mode;
	int k_req;   /* green modes: SMs asked for; else 0 */
	int sms;     /* SMs the low lanes may use */
	double rate; /* high requests per second */
	long served, unserved;
	double p50, p99, p50x, p99x; /* ms; times the alone row's */
	double kps[NLANES];          /* low kernels per second per lane */
	double stream_kept, sgemm_kept, low_kept;
} row;

static int g_run_no, g_runs;

static void run_mode(row *w, int hi, CUstream hs, const placement *lows, int depth, int gate)
{
	run *r = calloc(1, sizeof(*r));
	if (!r)
		die(__FILE__, __LINE__, "calloc", "out of memory");
	atomic_init(&r->inflight, 0);
	atomic_init(&r->submitted, 0);
	atomic_init(&r->completed, 0);
	atomic_init(&r->sub_done, 0);
	atomic_init(&r->stop_lows, 0);
	pthread_t sub, wai, lt[NLANES];
	lane_arg la[NLANES];
	if (lows)
		fprintf(stderr, "spatial: [%d/%d] %s %s, lows on %d SMs (%.0f s)\n", ++g_run_no,
			g_runs, w->high, w->mode, lows->sms, now_s() - g.t_start);
	else
		fprintf(stderr, "spatial: [%d/%d] %s %s, no lows (%.0f s)\n", ++g_run_no, g_runs,
			w->high, w->mode, now_s() - g.t_start);
	fflush(stderr);
	r->hi = hi;
	r->hs = hs;
	r->lows = lows;
	r->depth = depth;
	r->gate = gate;
	r->rate = w->rate;
	if (hi != HI_NONE) {
		double mean = w->rate * opt.window;
		r->lat_cap = (long)(mean + 10.0 * sqrt(mean) + 64.0);
		r->lat = malloc((size_t)r->lat_cap * sizeof(double));
		if (!r->lat)
			die(__FILE__, __LINE__, "malloc", "out of memory");
	}
	r->t0 = now_s() + opt.warm;
	r->t_end = r->t0 + opt.window;
	if (lows)
		for (int i = 0; i < NLANES; i++) {
			la[i].r = r;
			la[i].i = i;
			PT(pthread_create(&lt[i], NULL, lane_main, &la[i]));
		}
	if (hi != HI_NONE) {
		PT(pthread_create(&wai, NULL, high_wait_main, r));
		PT(pthread_create(&sub, NULL, high_submit_main, r));
		PT(pthread_join(sub, NULL));
		PT(pthread_join(wai, NULL));
	}
	sleep_until(r->t_end); /* the lanes run at least to the window's end */
	atomic_store_explicit(&r->stop_lows, 1, memory_order_release);
	if (lows)
		for (int i = 0; i < NLANES; i++)
			PT(pthread_join(lt[i], NULL));
	CU(drv.cuStreamSynchronize(hs));
	w->served = r->nlat;
	w->unserved = r->unserved;
	w->p50 = w->p99 = NAN;
	if (hi != HI_NONE) {
		qsort(r->lat, (size_t)r->nlat, sizeof(double), cmp_double);
		w->p50 = pct(r->lat, r->nlat, 0.50) * 1e3;
		w->p99 = pct(r->lat, r->nlat, 0.99) * 1e3;
	}
	for (int i = 0; i < NLANES; i++)
		w->kps[i] = lows ? (double)r->lane_done[i] / opt.window : NAN;
	free(r->lat);
	free(r);
}

/* ---- output ---- */

static void cell(char *buf, size_t n, const char *fmt, double v)
{
	if (isnan(v))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, fmt, v);
}

static void csv_num(const char *fmt, double v)
{
	fputc(',', g.csv);
	if (!isnan(v))
		fprintf(g.csv, fmt, v);
}

static void row_header(void)
{
	printf("\n%-4s %-10s %8s %6s %6s %8s %8s %6s %6s %6s %6s %6s\n", "high", "mode", "SMs",
	       "req/s", "reqs", "p50 ms", "p99 ms", "p50x", "p99x", "stream", "sgemm", "lows");
	if (g.csv)
		fprintf(g.csv, "#table,high,mode,k_req,sms,rate_per_s,served,unserved,p50_ms,"
			       "p99_ms,p50_x,p99_x,stream_kept,sgemm_kept,low_kept,lane0_kps,"
			       "lane1_kps,lane2_kps,lane3_kps\n");
}

/* Fills the ratios against the alone references (NAN where there is none) and prints. */
static void row_emit(row *w, double alone_p50, double alone_p99, const double *alone_kps)
{
	double kept[NLANES];
	for (int i = 0; i < NLANES; i++)
		kept[i] = alone_kps && alone_kps[i] > 0 ? w->kps[i] / alone_kps[i] : NAN;
	w->p50x = w->p50 / alone_p50;
	w->p99x = w->p99 / alone_p99;
	w->stream_kept = (kept[0] + kept[2]) / 2;
	w->sgemm_kept = (kept[1] + kept[3]) / 2;
	w->low_kept = (kept[0] + kept[1] + kept[2] + kept[3]) / 4;
	char sms[16], rate[16], reqs[24], p50[16], p99[16], p50x[16], p99x[16];
	char sk[16], gk[16], lk[16];
	if (w->sms == 0)
		snprintf(sms, sizeof(sms), "-");
	else if (w->k_req > 0 && w->k_req != w->sms)
		snprintf(sms, sizeof(sms), "%d->%d", w->k_req, w->sms);
	else
		snprintf(sms, sizeof(sms), "%d", w->sms);
	cell(rate, sizeof(rate), "%.0f", w->rate);
	if (isnan(w->p50))
		snprintf(reqs, sizeof(reqs), "-");
	else if (w->unserved)
		snprintf(reqs, sizeof(reqs), "%ld+%ld", w->served, w->unserved);
	else
		snprintf(reqs, sizeof(reqs), "%ld", w->served);
	cell(p50, sizeof(p50), "%.3f", w->p50);
	cell(p99, sizeof(p99), "%.3f", w->p99);
	cell(p50x, sizeof(p50x), "%.2f", w->p50x);
	cell(p99x, sizeof(p99x), "%.2f", w->p99x);
	cell(sk, sizeof(sk), "%.3f", w->stream_kept);
	cell(gk, sizeof(gk), "%.3f", w->sgemm_kept);
	cell(lk, sizeof(lk), "%.3f", w->low_kept);
	printf("%-4s %-10s %8s %6s %6s %8s %8s %6s %6s %6s %6s %6s\n", w->high, w->mode, sms, rate,
	       reqs, p50, p99, p50x, p99x, sk, gk, lk);
	if (!g.csv)
		return;
	fprintf(g.csv, "frontier,%s,%s,%d,%d", w->high, w->mode, w->k_req, w->sms);
	csv_num("%.2f", w->rate);
	fprintf(g.csv, ",%ld,%ld", w->served, w->unserved);
	csv_num("%.4f", w->p50);
	csv_num("%.4f", w->p99);
	csv_num("%.3f", w->p50x);
	csv_num("%.3f", w->p99x);
	csv_num("%.4f", w->stream_kept);
	csv_num("%.4f", w->sgemm_kept);
	csv_num("%.4f", w->low_kept);
	for (int i = 0; i < NLANES; i++)
		csv_num("%.2f", w->kps[i]);
	fputc('\n', g.csv);
	fflush(g.csv);
}

static row row_new(const char *high, const char *mode, int k_req, int sms, double rate)
{
	row w;
	memset(&w, 0, sizeof(w));
	w.high = high;
	w.mode = mode;
	w.k_req = k_req;
	w.sms = sms;
	w.rate = rate;
	return w;
}

/* ---- the alone service time of a high request ---- */

static double service_s(int hi)
{
	double t[15];
	for (int i = 0; i < 3; i++)
		high_request(hi, g.hs_def);
	CU(drv.cuStreamSynchronize(g.hs_def));
	for (int i = 0; i < 15; i++) {
		double t0 = now_s();
		high_request(hi, g.hs_def);
		CU(drv.cuStreamSynchronize(g.hs_def));
		t[i] = now_s() - t0;
	}
	qsort(t, 15, sizeof(double), cmp_double);
	return t[7];
}

/* The median time of one low kernel of lane i alone on s, in ms. */
static double low_kernel_ms(int i, CUstream s)
{
	double t[5];
	low_kernel(i, s);
	CU(drv.cuStreamSynchronize(s));
	for (int k = 0; k < 5; k++) {
		double t0 = now_s();
		low_kernel(i, s);
		CU(drv.cuStreamSynchronize(s));
		t[k] = now_s() - t0;
	}
	qsort(t, 5, sizeof(double), cmp_double);
	return t[2] * 1e3;
}

/* ---- switch cost ---- */

static double tiny_chain(CUstream a, int n)
{
	double t0 = now_s();
	for (int i = 0; i < n; i++)
		launch_tiny(a);
	CU(drv.cuStreamSynchronize(a));
	return now_s() - t0;
}

/* iters x (A -> B -> A): each a record on one stream, a wait on the other and a tiny
 * kernel there. Returns the wall time; *cpu gets the time in the record+wait calls. */
static double switch_chain(CUstream a, CUstream b, CUevent evb, int iters, double *cpu)
{
	double rec = 0, t0 = now_s();
	for (int i = 0; i < iters; i++) {
		double c0 = now_s();
		CU(drv.cuEventRecord(g.sw_ev, a));
		CU(drv.cuStreamWaitEvent(b, g.sw_ev, 0));
		rec += now_s() - c0;
		launch_tiny(b);
		c0 = now_s();
		CU(drv.cuEventRecord(evb, b));
		CU(drv.cuStreamWaitEvent(a, evb, 0));
		rec += now_s() - c0;
		launch_tiny(a);
	}
	CU(drv.cuStreamSynchronize(a)); /* a's last kernel waited for all of b's */
	*cpu = rec;
	return now_s() - t0;
}

static int counter_read(void)
{
	int v = -1;
	CU(drv.cuMemcpyDtoH(&v, g.counter, sizeof(v)));
	return v;
}

static void counter_zero(void)
{
	CU(drv.cuMemsetD32(g.counter, 0, 1));
	CK(cudaDeviceSynchronize());
}

static void switch_cost(const char *path, int sms, CUstream b, CUevent evb)
{
	const int iters = opt.quick ? 500 : 2000;
	double base = INFINITY, sw = INFINITY, cpu = INFINITY, c;
	int order_ok = 1;
	CUstream a = g.hs_def;
	tiny_chain(a, 200);
	switch_chain(a, b, evb, 100, &c);
	for (int round = 0; round < 3; round++) {
		base = fmin(base, tiny_chain(a, 2 * iters));
		counter_zero();
		sw = fmin(sw, switch_chain(a, b, evb, iters, &c));
		cpu = fmin(cpu, c);
		order_ok &= counter_read() == 2 * iters;
	}
	double base_us = base / (2 * iters) * 1e6;
	double added_us = (sw - base) / (2 * iters) * 1e6;
	double cpu_us = cpu / (2 * iters) * 1e6;
	printf("%-18s %4d %6d %10.2f %10.2f %10.2f %6s\n", path, sms, iters, base_us, added_us,
	       cpu_us, order_ok ? "yes" : "NO");
	if (g.csv) {
		fprintf(g.csv, "switch,%s,%d,%d,%.3f,%.3f,%.3f,%d\n", path, sms, iters, base_us,
			added_us, cpu_us, order_ok);
		fflush(g.csv);
	}
}

/* ---- clusters ---- */

/* The streaming kernel (4096 blocks of 256) with cluster sizes 1, 2, 4, 8 on s. Returns -1
 * when a launched kernel failed (the context may be unusable), else 0. */
static int cluster_rows(const char *where, int sms, CUstream s)
{
	static const unsigned sizes[] = {1, 2, 4, 8};
	for (size_t ci = 0; ci < sizeof(sizes) / sizeof(sizes[0]); ci++) {
		unsigned cs = sizes[ci];
		CUlaunchAttribute at;
		CUlaunchConfig cfg;
		memset(&at, 0, sizeof(at));
		memset(&cfg, 0, sizeof(cfg));
		at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		at.value.clusterDim.x = cs;
		at.value.clusterDim.y = 1;
		at.value.clusterDim.z = 1;
		cfg.gridDimX = axpby_grid(HI_MEM_N);
		cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = 256;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.hStream = s;
		cfg.attrs = cs > 1 ? &at : NULL;
		cfg.numAttrs = cs > 1 ? 1 : 0;
		CUdeviceptr x = g.hx[0], y = g.hy[0];
		float a = 1.0f, b = 0.5f;
		unsigned long long n4 = HI_MEM_N / 4;
		void *args[] = {&x, &y, &a, &b, &n4};
		int maxc = -1;
		CUresult occ = CUDA_SUCCESS;
		if (cs > 1)
			occ = drv.cuOccupancyMaxActiveClusters(&maxc, g.axpby, &cfg);
		CUresult lr = drv.cuLaunchKernelEx(&cfg, g.axpby, args, NULL);
		int launched = lr == CUDA_SUCCESS, failed = 0;
		double us = NAN;
		if (launched) {
			lr = drv.cuStreamSynchronize(s);
			failed = lr != CUDA_SUCCESS;
		}
		if (launched && !failed) {
			double t0 = now_s();
			for (int r = 0; r < CLUSTER_REPS && lr == CUDA_SUCCESS; r++)
				lr = drv.cuLaunchKernelEx(&cfg, g.axpby, args, NULL);
			CUresult sr = drv.cuStreamSynchronize(s);
			failed = sr != CUDA_SUCCESS;
			if (lr == CUDA_SUCCESS && sr == CUDA_SUCCESS)
				us = (now_s() - t0) / CLUSTER_REPS * 1e6;
			else if (lr == CUDA_SUCCESS)
				lr = sr;
		}
		char maxs[32], uss[16];
		if (cs == 1)
			snprintf(maxs, sizeof(maxs), "-");
		else if (occ == CUDA_SUCCESS)
			snprintf(maxs, sizeof(maxs), "%d", maxc);
		else
			snprintf(maxs, sizeof(maxs), "%s", cu_err(occ));
		cell(uss, sizeof(uss), "%.1f", us);
		const char *res = lr == CUDA_SUCCESS ? "ok" : cu_err(lr);
		printf("%-8s %4d %7u %30s %34s %10s\n", where, sms, cs, maxs, res, uss);
		if (g.csv) {
			fprintf(g.csv, "cluster,%s,%d,%u,%s,%s", where, sms, cs,
				cs == 1 ? "" : maxs, res);
			csv_num("%.2f", us);
			fputc('\n', g.csv);
			fflush(g.csv);
		}
		if (failed) {
			fprintf(stderr,
				"spatial: a cluster kernel failed on %s (%d SMs): %s; "
				"stopping here\n",
				where, sms, res);
			return -1;
		}
	}
	return 0;
}

/* ---- main ---- */

static int parse_ks(const char *s)
{
	opt.nks = 0;
	while (*s) {
		char *end;
		long k = strtol(s, &end, 10);
		if (end == s || k < 1 || k > 4096 || opt.nks == MAXK)
			return -1;
		opt.ks[opt.nks++] = (int)k;
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return -1;
	}
	return opt.nks > 0 ? 0 : -1;
}

static int usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--quick] [--window S] [--ks 16,32,...] [--rate R] [--out FILE]\n",
		argv0);
	return 2;
}

static int parse_args(int argc, char **argv)
{
	static const int ks_full[] = {16, 32, 48, 64, 80, 96, 112}, ks_quick[] = {32, 64, 96};
	int have_ks = 0, have_window = 0;
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--quick")) {
			opt.quick = 1;
		} else if (!strcmp(argv[i], "--window") && v) {
			opt.window = atof(v);
			have_window = 1;
			i++;
			if (!(opt.window > 0 && opt.window <= 600))
				return usage(argv[0]);
		} else if (!strcmp(argv[i], "--ks") && v) {
			if (parse_ks(v))
				return usage(argv[0]);
			have_ks = 1;
			i++;
		} else if (!strcmp(argv[i], "--rate") && v) {
			opt.rate = atof(v);
			i++;
			if (!(opt.rate > 0 && opt.rate <= 1e6))
				return usage(argv[0]);
		} else if (!strcmp(argv[i], "--out") && v) {
			opt.out = v;
			i++;
		} else {
			return usage(argv[0]);
		}
	}
	if (!have_window)
		opt.window = opt.quick ? 1.5 : 3.0;
	opt.warm = opt.quick ? 0.2 : 0.3;
	if (!have_ks) {
		const int *ks = opt.quick ? ks_quick : ks_full;
		opt.nks = opt.quick ? 3 : 7;
		memcpy(opt.ks, ks, (size_t)opt.nks * sizeof(int));
	}
	return 0;
}

static void alloc_buffers(void)
{
	size_t hb = (size_t)HI_MEM_N * sizeof(float);
	size_t gb = (size_t)HI_GEMM_N * HI_GEMM_N * sizeof(float);
	size_t lsb = (size_t)LO_STREAM_N * sizeof(float);
	size_t lgb = (size_t)LO_GEMM_N * LO_GEMM_N * sizeof(float);
	for (int i = 0; i < HI_MEM_SETS; i++) {
		g.hx[i] = dalloc(hb);
		g.hy[i] = dalloc(hb);
		dfill(g.hx[i], 1.0f, HI_MEM_N);
		dfill(g.hy[i], 1.0f, HI_MEM_N);
	}
	g.ha = dalloc(gb);
	g.hb = dalloc(gb);
	g.hc = dalloc(gb);
	dfill(g.ha, 0.01f, (size_t)HI_GEMM_N * HI_GEMM_N);
	dfill(g.hb, 0.01f, (size_t)HI_GEMM_N * HI_GEMM_N);
	for (int i = 0; i < NLANES; i++) {
		int nb = i % 2 == 0 ? 2 : 3;
		for (int j = 0; j < nb; j++) {
			g.lbuf[i][j] = dalloc(i % 2 == 0 ? lsb : lgb);
			if (i % 2 == 0)
				dfill(g.lbuf[i][j], 1.0f, LO_STREAM_N);
			else
				dfill(g.lbuf[i][j], 0.01f, (size_t)LO_GEMM_N * LO_GEMM_N);
		}
	}
	g.counter = dalloc(sizeof(int));
	CK(cudaDeviceSynchronize());
}

static void free_buffers(void)
{
	CUdeviceptr all[] = {g.ha, g.hb, g.hc, g.counter};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		CK(cudaFree((void *)(uintptr_t)all[i]));
	for (int i = 0; i < HI_MEM_SETS; i++) {
		CK(cudaFree((void *)(uintptr_t)g.hx[i]));
		CK(cudaFree((void *)(uintptr_t)g.hy[i]));
	}
	for (int i = 0; i < NLANES; i++)
		for (int j = 0; j < 3; j++)
			if (g.lbuf[i][j])
				CK(cudaFree((void *)(uintptr_t)g.lbuf[i][j]));
}

/* Looks up the driver function named (base name, no _v2) in *fn. Returns 0, or -1 (said
 * why on stdout). */
static int drv_lookup(const char *name, void **fn)
{
	enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	cudaError_t e =
	    cudaGetDriverEntryPointByVersion(name, fn, CUDA_VERSION, cudaEnableDefault, &st);
	if (e != cudaSuccess || st != cudaDriverEntryPointSuccess || !*fn) {
		printf("driver has no %s for CUDA %d (%s, status %d)\n", name, CUDA_VERSION,
		       cudaGetErrorString(e), (int)st);
		return -1;
	}
	return 0;
}

static int drv_open(void)
{
#define DRV_LOOKUP(f)                                                                              \
	if (drv_lookup(#f, (void **)&drv.f))                                                       \
		return -1;
	DRIVER_API(DRV_LOOKUP)
#undef DRV_LOOKUP
	return 0;
}

/* Returns 0 when set up, 77 when the device cannot run this program. */
static int device_open(void)
{
	int ndev = 0, major = 0, version = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("no CUDA device: skipped\n");
		return 77;
	}
	/* High waits spin (precise completion times); the lanes' events block. */
	cudaError_t e = cudaSetDeviceFlags(cudaDeviceScheduleSpin);
	if (e != cudaSuccess)
		printf("cudaSetDeviceFlags(cudaDeviceScheduleSpin): %s; waits as the runtime "
		       "chooses\n",
		       cudaGetErrorString(e));
	if (drv_open()) {
		printf("driver API incomplete: skipped\n");
		return 77;
	}
	CK(cudaSetDevice(0));
	CK(cudaFree(NULL)); /* creates the primary context and makes it current */
	CU(drv.cuInit(0));
	CU(drv.cuCtxGetCurrent(&g.ctx));
	CU(drv.cuDeviceGet(&g.dev, 0));
	CU(drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g.dev));
	CU(drv.cuDeviceGetAttribute(&g.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, g.dev));
	CU(drv.cuDriverGetVersion(&version));
	if (major < 9 || version < 12040) {
		printf("needs compute capability 9.0+ and a CUDA 12.4+ driver (have %d.x, %d): "
		       "skipped\n",
		       major, version);
		return 77;
	}
	CUdevResource all;
	memset(&all, 0, sizeof(all));
	CUresult r = drv.cuDeviceGetDevResource(g.dev, &all, CU_DEV_RESOURCE_TYPE_SM);
	if (r != CUDA_SUCCESS) {
		printf("no green contexts (cuDeviceGetDevResource: %s): skipped\n", cu_err(r));
		return 77;
	}
	char name[256] = "";
	CU(drv.cuDeviceGetName(name, sizeof(name), g.dev));
	CK(cudaDeviceGetStreamPriorityRange(&g.prio_least, &g.prio_greatest));
	time_t now = time(NULL);
	char date[32];
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("device %s, %s, driver %d; %d SMs; green contexts: %u SMs, minimum partition %u, "
	       "co-scheduled alignment %u; stream priorities %d (least) to %d (greatest)\n",
	       name, date, version, g.sms, all.sm.smCount, all.sm.minSmPartitionSize,
	       all.sm.smCoscheduledAlignment, g.prio_least, g.prio_greatest);
	return 0;
}

static void kernels_load(void)
{
	CUkernel k;
	CU(drv.cuLibraryLoadData(&g.lib, sp_fatbin, NULL, NULL, 0, NULL, NULL, 0));
	CU(drv.cuLibraryGetKernel(&k, g.lib, "sp_axpby"));
	g.axpby = (CUfunction)k;
	CU(drv.cuLibraryGetKernel(&k, g.lib, "sp_sgemm"));
	g.sgemm = (CUfunction)k;
	CU(drv.cuLibraryGetKernel(&k, g.lib, "sp_tiny"));
	g.tiny = (CUfunction)k;
}

/* Makes the green context of about k SMs and checks the kernels on it. Returns 0, or -1
 * when the device refuses it. */
static int green_open(green *gr, int k)
{
	if (green_make(gr, k))
		return -1;
	char where[48];
	snprintf(where, sizeof(where), "green stream, %d SMs", gr->sms);
	check_kernels(gr->def.s[0], where);
	return 0;
}

/* The rows of one green context: the lows alone on it, then with each high kind, at equal
 * priority and with the high stream at the greatest. */
static void green_rows(const green *gr, const double rate[2], double alone[2][2],
		       const double *lane_alone)
{
	const placement *lows_least = least_of(&gr->def, &gr->least);
	row w = row_new("-", "lows-green", gr->k_req, gr->sms, NAN);
	run_mode(&w, HI_NONE, g.hs_def, &gr->def, DEPTH, 0);
	row_emit(&w, NAN, NAN, lane_alone);
	for (int hi = HI_MEM; hi <= HI_GEMM; hi++) {
		w = row_new(hi_name[hi], "green", gr->k_req, gr->sms, rate[hi]);
		run_mode(&w, hi, g.hs_def, &gr->def, DEPTH, 0);
		row_emit(&w, alone[hi][0], alone[hi][1], lane_alone);
		w = row_new(hi_name[hi], "green+prio", gr->k_req, gr->sms, rate[hi]);
		run_mode(&w, hi, g.hs_top, lows_least, DEPTH, 0);
		row_emit(&w, alone[hi][0], alone[hi][1], lane_alone);
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_args(argc, argv))
		return 2;
	/* Streams beyond the device's connections share hardware queues (a high request would
	 * wait behind low kernels queued in its queue): more connections than streams here,
	 * unless the environment says otherwise. */
	setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	g.t_start = now_s();
	int rc = device_open();
	if (rc)
		return rc;
	printf("CUDA_DEVICE_MAX_CONNECTIONS=%s\n", getenv("CUDA_DEVICE_MAX_CONNECTIONS"));
	kernels_load();
	alloc_buffers();
	CB(cublasCreate(&g.blas));
	CK(cudaStreamCreateWithPriority(&g.hs_def, cudaStreamNonBlocking, 0));
	CK(cudaStreamCreateWithPriority(&g.hs_top, cudaStreamNonBlocking, g.prio_greatest));
	g.has_least = g.prio_least != 0;
	placement_primary(&g.lo_def, 0);
	if (g.has_least)
		placement_primary(&g.lo_least, g.prio_least);
	const placement *lo_least = least_of(&g.lo_def, &g.lo_least);
	for (int i = 0; i < HI_RING; i++)
		CU(drv.cuEventCreate(&g.hev[i], CU_EVENT_DISABLE_TIMING));
	CU(drv.cuEventCreate(&g.sw_ev, CU_EVENT_DISABLE_TIMING));
	CU(drv.cuEventCreate(&g.sw_ev2, CU_EVENT_DISABLE_TIMING));
	if (opt.out) {
		g.csv = fopen(opt.out, "w");
		if (!g.csv) {
			fprintf(stderr, "spatial: %s: %s\n", opt.out, strerror(errno));
			return 1;
		}
	}

	check_kernels(g.hs_def, "primary stream");
	printf("low kernels alone on the whole GPU: streaming %.3f ms, sgemm %.3f ms\n",
	       low_kernel_ms(0, g.lo_def.s[0]), low_kernel_ms(1, g.lo_def.s[1]));
	double rate[2];
	for (int hi = HI_MEM; hi <= HI_GEMM; hi++) {
		double svc = service_s(hi);
		rate[hi] = opt.rate > 0 ? opt.rate : BUSY / svc;
		printf("high %s: %s; alone service p50 %.3f ms; %.0f requests/s (busy %.2f)\n",
		       hi_name[hi],
		       hi == HI_MEM ? "40 x streaming kernel, 4 Mi floats, 4 buffer pairs"
				    : "4 x cuBLAS SGEMM 2048^3",
		       svc * 1e3, rate[hi], rate[hi] * svc);
	}
	printf("low lanes: 0, 2 streaming (64 Mi floats, 768 MiB moved), 1, 3 SGEMM 2048^3 "
	       "(32x32 tiles); %d outstanding (stop: %d); window %.1f s after %.1f s\n",
	       DEPTH, STOP_DEPTH, opt.window, opt.warm);

	/* The frontier: references first, then one green context at a time (made for its
	 * rows and destroyed after them). */
	g_runs = 1 + 2 * 4 + opt.nks * 5;
	double lane_alone[NLANES], alone[2][2];
	row_header();
	row w = row_new("-", "lows-alone", 0, g.sms, NAN);
	run_mode(&w, HI_NONE, g.hs_def, &g.lo_def, DEPTH, 0);
	memcpy(lane_alone, w.kps, sizeof(lane_alone));
	row_emit(&w, NAN, NAN, lane_alone);
	for (int hi = HI_MEM; hi <= HI_GEMM; hi++) {
		const char *h = hi_name[hi];
		w = row_new(h, "alone", 0, 0, rate[hi]);
		run_mode(&w, hi, g.hs_def, NULL, DEPTH, 0);
		alone[hi][0] = w.p50;
		alone[hi][1] = w.p99;
		row_emit(&w, alone[hi][0], alone[hi][1], NULL);
		w = row_new(h, "native", 0, g.sms, rate[hi]);
		run_mode(&w, hi, g.hs_def, &g.lo_def, DEPTH, 0);
		row_emit(&w, alone[hi][0], alone[hi][1], lane_alone);
		w = row_new(h, "prio", 0, g.sms, rate[hi]);
		run_mode(&w, hi, g.hs_top, lo_least, DEPTH, 0);
		row_emit(&w, alone[hi][0], alone[hi][1], lane_alone);
		w = row_new(h, "stop", 0, g.sms, rate[hi]);
		run_mode(&w, hi, g.hs_top, lo_least, STOP_DEPTH, 1);
		row_emit(&w, alone[hi][0], alone[hi][1], lane_alone);
	}
	for (int i = 0; i < opt.nks; i++) {
		green gr;
		if (green_open(&gr, opt.ks[i]))
			continue;
		printf("green context K=%d: %d SMs; low kernels alone on it: streaming %.3f ms, "
		       "sgemm %.3f ms\n",
		       gr.k_req, gr.sms, low_kernel_ms(0, gr.def.s[0]),
		       low_kernel_ms(1, gr.def.s[1]));
		green_rows(&gr, rate, alone, lane_alone);
		green_destroy(&gr);
	}

	fprintf(stderr, "spatial: switch cost (%.0f s)\n", now_s() - g.t_start);
	printf("\nswitch: a tiny-kernel chain alternating between the primary stream A and "
	       "stream B, ordered by events\n%-18s %4s %6s %10s %10s %10s %6s\n",
	       "B", "SMs", "iters", "base us", "added us", "cpu us", "order");
	if (g.csv)
		fprintf(g.csv, "#table,path,sms,iters,base_us_per_kernel,added_us_per_switch,"
			       "cpu_us_per_switch,order_ok\n");
	switch_cost("primary->primary", g.sms, g.lo_def.s[0], g.sw_ev2);
	for (int i = 0; i < opt.nks; i++) {
		green gr;
		if (green_make(&gr, opt.ks[i]))
			continue;
		switch_cost("primary->green", gr.sms, gr.def.s[0], gr.sw_ev);
		green_destroy(&gr);
	}

	/* Last: a cluster launch that fails on the device may leave the context unusable. */
	fprintf(stderr, "spatial: clusters (%.0f s)\n", now_s() - g.t_start);
	printf("\nclusters: the streaming kernel, 4096 blocks of 256, launched with a cluster "
	       "dimension\n%-8s %4s %7s %30s %34s %10s\n",
	       "stream", "SMs", "cluster", "max active clusters", "launch", "us/kernel");
	if (g.csv)
		fprintf(g.csv,
			"#table,stream,sms,cluster,max_active_clusters,launch,us_per_kernel\n");
	int broken = cluster_rows("primary", g.sms, g.hs_def);
	for (int i = 0; i < opt.nks && !broken; i++) {
		green gr;
		if (green_make(&gr, opt.ks[i]))
			continue;
		broken = cluster_rows("green", gr.sms, gr.def.s[0]);
		if (!broken)
			green_destroy(&gr);
	}
	if (g.csv && fclose(g.csv)) {
		fprintf(stderr, "spatial: %s: %s\n", opt.out, strerror(errno));
		return 1;
	}
	fprintf(stderr, "spatial: done (%.0f s)\n", now_s() - g.t_start);
	if (broken)
		return 1; /* the context may be unusable: no clean-up */

	placement_destroy(&g.lo_def);
	if (g.has_least)
		placement_destroy(&g.lo_least);
	for (int i = 0; i < HI_RING; i++)
		CU(drv.cuEventDestroy(g.hev[i]));
	CU(drv.cuEventDestroy(g.sw_ev));
	CU(drv.cuEventDestroy(g.sw_ev2));
	CK(cudaStreamDestroy(g.hs_def));
	CK(cudaStreamDestroy(g.hs_top));
	CB(cublasDestroy(g.blas));
	free_buffers();
	CU(drv.cuLibraryUnload(g.lib));
	return 0;
}
