/* A fake CUDA driver (built as libcuda.so.1 next to the test that loads it): the CUDA
 * backend's entry points, each doing what the library relies on, with no GPU.
 *
 * One device thread runs every stream operation in the order the calls made them (one
 * FIFO for all streams: stricter than CUDA's per-stream order, which is what the backend
 * needs): a kernel takes FAKE_CUDA_KERNEL_US (default 20) microseconds, a write-value
 * stores, a wait-value blocks the device until the word reaches the value, a host function
 * runs on the device thread, events order nothing more than the FIFO does. cuStreamQuery
 * says whether the stream has operations not yet run; cuStreamSynchronize waits for them.
 * Device-visible host memory is plain host memory. Kernels' functions and arguments are
 * not looked at.
 *
 * For the tests, found with dlsym on the already loaded library (RTLD_NOLOAD):
 * fake_cuda_count(name) returns how many times an entry point was called,
 * fake_cuda_set_kernel_us(us) sets how long each kernel runs from now on,
 * fake_cuda_new_context() gives the one context a new unique id (cuCtxGetId), as if it
 * had been destroyed and made again at the same address, and fake_cuda_last_function()
 * returns the CUfunction of the last kernel launched. */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define API __attribute__((visibility("default")))

enum op_kind { OP_KERNEL, OP_WRITE, OP_WAIT, OP_HOST };

struct op {
	struct op *next;
	enum op_kind kind;
	CUstream stream;
	_Atomic cuuint32_t *addr;
	cuuint32_t value;
	CUhostFn fn;
	void *data;
};

/* Guards the FIFO and the per-stream counts; the device thread waits on `work`, the
 * synchronizing threads on `done`. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_work = PTHREAD_COND_INITIALIZER, g_done = PTHREAD_COND_INITIALIZER;
static struct op *g_head, *g_tail;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic long g_kernel_ns = 20000; /* how long a kernel runs */

/* Streams with operations not yet run: a small table (tests use a few streams). */
#define MAX_STREAMS 64
static struct {
	CUstream s;
	long pending;
} g_streams[MAX_STREAMS];

static long *pending_of(CUstream s) /* caller holds g_lock */
{
	for (int i = 0; i < MAX_STREAMS; i++)
		if (g_streams[i].s == s)
			return &g_streams[i].pending;
	for (int i = 0; i < MAX_STREAMS; i++)
		if (!g_streams[i].s) {
			g_streams[i].s = s;
			return &g_streams[i].pending;
		}
	abort();
}

/* Call counts, by entry point. */
#define MAX_NAMES 64
static const char *g_names[MAX_NAMES];
static _Atomic long g_counts[MAX_NAMES];
static pthread_mutex_t g_names_lock = PTHREAD_MUTEX_INITIALIZER;

static void count(const char *name)
{
	pthread_mutex_lock(&g_names_lock);
	int i = 0;
	while (i < MAX_NAMES && g_names[i] && strcmp(g_names[i], name))
		i++;
	if (i < MAX_NAMES && !g_names[i])
		g_names[i] = name;
	pthread_mutex_unlock(&g_names_lock);
	if (i < MAX_NAMES)
		atomic_fetch_add(&g_counts[i], 1);
}

API void fake_cuda_set_kernel_us(long us)
{
	atomic_store(&g_kernel_ns, us * 1000L);
}

API long fake_cuda_count(const char *name)
{
	pthread_mutex_lock(&g_names_lock);
	long n = 0;
	for (int i = 0; i < MAX_NAMES && g_names[i]; i++)
		if (!strcmp(g_names[i], name))
			n = atomic_load(&g_counts[i]);
	pthread_mutex_unlock(&g_names_lock);
	return n;
}

static void sleep_ns(long ns)
{
	struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
	nanosleep(&ts, NULL);
}

static void *device_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g_lock);
	for (;;) {
		while (!g_head)
			pthread_cond_wait(&g_work, &g_lock);
		struct op *o = g_head;
		pthread_mutex_unlock(&g_lock);
		switch (o->kind) {
		case OP_KERNEL: {
			long ns = atomic_load(&g_kernel_ns);
			if (ns)
				sleep_ns(ns);
			break;
		}
		case OP_WRITE:
			atomic_store_explicit(o->addr, o->value, memory_order_release);
			break;
		case OP_WAIT:
			while (atomic_load_explicit(o->addr, memory_order_acquire) < o->value)
				sleep_ns(20000);
			break;
		case OP_HOST:
			o->fn(o->data);
			break;
		}
		pthread_mutex_lock(&g_lock);
		g_head = o->next;
		if (!g_head)
			g_tail = NULL;
		--*pending_of(o->stream);
		pthread_cond_broadcast(&g_done);
		free(o);
	}
	return NULL;
}

static void start(void)
{
	const char *e = getenv("FAKE_CUDA_KERNEL_US");
	if (e)
		g_kernel_ns = atol(e) * 1000L;
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, device_main, NULL);
	pthread_attr_destroy(&a);
}

static CUresult push(enum op_kind kind, CUstream s, CUdeviceptr addr, cuuint32_t value, CUhostFn fn,
		     void *data)
{
	pthread_once(&g_once, start);
	struct op *o = calloc(1, sizeof(*o));
	if (!o)
		return CUDA_ERROR_OUT_OF_MEMORY;
	o->kind = kind;
	o->stream = s;
	o->addr = (_Atomic cuuint32_t *)(uintptr_t)addr;
	o->value = value;
	o->fn = fn;
	o->data = data;
	pthread_mutex_lock(&g_lock);
	if (g_tail)
		g_tail->next = o;
	else
		g_head = o;
	g_tail = o;
	++*pending_of(s);
	pthread_cond_signal(&g_work);
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

static int g_ctx; /* the one context's handle points here */
/* Its unique id (cuCtxGetId); fake_cuda_new_context() gives the context at the same
 * address a new one, as a context destroyed and made again would have. */
static _Atomic unsigned long long g_ctx_id = 1;
/* The function of the last kernel launched (fake_cuda_last_function). */
static _Atomic(CUfunction) g_last_fn;

API void fake_cuda_new_context(void)
{
	atomic_fetch_add(&g_ctx_id, 1);
}

API CUfunction fake_cuda_last_function(void)
{
	return atomic_load(&g_last_fn);
}

API CUresult cuInit(unsigned flags)
{
	(void)flags;
	count("cuInit");
	return CUDA_SUCCESS;
}

API CUresult cuGetErrorName(CUresult e, const char **s)
{
	(void)e;
	*s = "CUDA_ERROR_FAKE";
	return CUDA_SUCCESS;
}

API CUresult cuGetErrorString(CUresult e, const char **s)
{
	(void)e;
	*s = "fake driver error";
	return CUDA_SUCCESS;
}

API CUresult cuEventCreate(CUevent *e, unsigned flags)
{
	(void)flags;
	*e = (CUevent)malloc(16);
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

API CUresult cuEventRecord(CUevent e, CUstream s)
{
	(void)e;
	(void)s;
	count("cuEventRecord");
	return CUDA_SUCCESS;
}

API CUresult cuEventDestroy(CUevent e)
{
	free(e);
	return CUDA_SUCCESS;
}

API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
	(void)s;
	(void)e;
	(void)flags;
	count("cuStreamWaitEvent");
	return CUDA_SUCCESS;
}

API CUresult cuStreamSynchronize(CUstream s)
{
	pthread_once(&g_once, start);
	pthread_mutex_lock(&g_lock);
	while (*pending_of(s))
		pthread_cond_wait(&g_done, &g_lock);
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

API CUresult cuStreamQuery(CUstream s)
{
	count("cuStreamQuery");
	pthread_mutex_lock(&g_lock);
	long n = *pending_of(s);
	pthread_mutex_unlock(&g_lock);
	return n ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

API CUresult cuStreamGetPriority(CUstream s, int *p)
{
	(void)s;
	*p = 0;
	return CUDA_SUCCESS;
}

API CUresult cuStreamGetFlags(CUstream s, unsigned *f)
{
	(void)s;
	*f = CU_STREAM_NON_BLOCKING;
	return CUDA_SUCCESS;
}

API CUresult cuStreamGetCtx(CUstream s, CUcontext *c)
{
	(void)s;
	*c = (CUcontext)&g_ctx;
	return CUDA_SUCCESS;
}

API CUresult cuStreamSetAttribute(CUstream s, CUstreamAttrID a, const CUstreamAttrValue *v)
{
	(void)s;
	(void)a;
	(void)v;
	return CUDA_SUCCESS;
}

API CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s)
{
	(void)d;
	(void)src;
	(void)n;
	return push(OP_KERNEL, s, 0, 0, NULL, NULL);
}

API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s)
{
	(void)d;
	(void)v;
	(void)n;
	return push(OP_KERNEL, s, 0, 0, NULL, NULL);
}

API CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data)
{
	count("cuLaunchHostFunc");
	return push(OP_HOST, s, 0, 0, fn, data);
}

API CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
	(void)flags;
	*p = calloc(1, n);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

API CUresult cuMemHostGetDevicePointer(CUdeviceptr *d, void *p, unsigned flags)
{
	(void)flags;
	*d = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

API CUresult cuCtxGetCurrent(CUcontext *c)
{
	*c = (CUcontext)&g_ctx;
	return CUDA_SUCCESS;
}

API CUresult cuCtxGetId(CUcontext c, unsigned long long *id)
{
	count("cuCtxGetId");
	if (!c)
		c = (CUcontext)&g_ctx; /* NULL: the current context */
	if (c != (CUcontext)&g_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	*id = atomic_load(&g_ctx_id);
	return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(CUcontext c)
{
	(void)c;
	return CUDA_SUCCESS;
}

API CUresult cuCtxGetDevice(CUdevice *d)
{
	*d = 0;
	return CUDA_SUCCESS;
}

/* The device's UUID: bytes 0 to 15 (the board of the fake device, core/board.h). */
API CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
	(void)d;
	count("cuDeviceGetUuid");
	for (int i = 0; i < 16; i++)
		u->bytes[i] = (char)i;
	return CUDA_SUCCESS;
}

API CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
	*least = 0;
	*greatest = -5;
	return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	if ((int)a == 133) { /* CU_DEVICE_ATTRIBUTE_MPS_ENABLED: FAKE_CUDA_MPS=1|0|err */
		const char *e = getenv("FAKE_CUDA_MPS");
		if (e && !strcmp(e, "err"))
			return CUDA_ERROR_INVALID_VALUE; /* a driver that does not know it */
		*v = e && !strcmp(e, "1");
		return CUDA_SUCCESS;
	}
	*v = 1; /* stream memory operations, and any other yes/no asked */
	return CUDA_SUCCESS;
}

API CUresult cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned f)
{
	(void)f;
	count("cuStreamWaitValue32");
	return push(OP_WAIT, s, addr, value, NULL, NULL);
}

API CUresult cuStreamWriteValue32(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned f)
{
	(void)f;
	count("cuStreamWriteValue32");
	return push(OP_WRITE, s, addr, value, NULL, NULL);
}

API CUresult cuStreamBatchMemOp(CUstream s, unsigned n, CUstreamBatchMemOpParams *p, unsigned f)
{
	(void)f;
	count("cuStreamBatchMemOp");
	for (unsigned i = 0; i < n; i++) {
		CUresult r = CUDA_ERROR_INVALID_VALUE;
		if (p[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_32) {
			count("batch write");
			r = push(OP_WRITE, s, p[i].writeValue.address, p[i].writeValue.value, NULL,
				 NULL);
		} else if (p[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_32) {
			count("batch wait");
			r = push(OP_WAIT, s, p[i].waitValue.address, p[i].waitValue.value, NULL,
				 NULL);
		}
		if (r != CUDA_SUCCESS)
			return r;
	}
	return CUDA_SUCCESS;
}

API CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			    unsigned by, unsigned bz, unsigned shared, CUstream s, void **args,
			    void **extra)
{
	(void)fn;
	(void)gx;
	(void)gy;
	(void)gz;
	(void)bx;
	(void)by;
	(void)bz;
	(void)shared;
	(void)args;
	(void)extra;
	count("cuLaunchKernel");
	atomic_store(&g_last_fn, fn);
	return push(OP_KERNEL, s, 0, 0, NULL, NULL);
}

API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *m)
{
	*m = CU_MODULE_EAGER_LOADING;
	return CUDA_SUCCESS;
}

/* The entry points by name, as the library asks for them (cuda.h maps some names to
 * their _v2 symbols at compile time: the table keys are the names asked for). */
static const struct {
	const char *name;
	void *fn;
} g_table[] = {
    {"cuInit", (void *)cuInit},
    {"cuGetErrorName", (void *)cuGetErrorName},
    {"cuGetErrorString", (void *)cuGetErrorString},
    {"cuEventCreate", (void *)cuEventCreate},
    {"cuEventRecord", (void *)cuEventRecord},
    {"cuEventDestroy", (void *)cuEventDestroy},
    {"cuStreamWaitEvent", (void *)cuStreamWaitEvent},
    {"cuStreamSynchronize", (void *)cuStreamSynchronize},
    {"cuStreamQuery", (void *)cuStreamQuery},
    {"cuStreamGetPriority", (void *)cuStreamGetPriority},
    {"cuStreamGetFlags", (void *)cuStreamGetFlags},
    {"cuStreamGetCtx", (void *)cuStreamGetCtx},
    {"cuStreamSetAttribute", (void *)cuStreamSetAttribute},
    {"cuMemcpyAsync", (void *)cuMemcpyAsync},
    {"cuMemsetD8Async", (void *)cuMemsetD8Async},
    {"cuLaunchHostFunc", (void *)cuLaunchHostFunc},
    {"cuMemHostAlloc", (void *)cuMemHostAlloc},
    {"cuMemHostGetDevicePointer", (void *)cuMemHostGetDevicePointer},
    {"cuCtxGetCurrent", (void *)cuCtxGetCurrent},
    {"cuCtxSetCurrent", (void *)cuCtxSetCurrent},
    {"cuCtxGetId", (void *)cuCtxGetId},
    {"cuCtxGetDevice", (void *)cuCtxGetDevice},
    {"cuDeviceGetUuid", (void *)cuDeviceGetUuid},
    {"cuCtxGetStreamPriorityRange", (void *)cuCtxGetStreamPriorityRange},
    {"cuDeviceGetAttribute", (void *)cuDeviceGetAttribute},
    {"cuStreamWaitValue32", (void *)cuStreamWaitValue32},
    {"cuStreamWriteValue32", (void *)cuStreamWriteValue32},
    {"cuStreamBatchMemOp", (void *)cuStreamBatchMemOp},
    {"cuLaunchKernel", (void *)cuLaunchKernel},
    {"cuModuleGetLoadingMode", (void *)cuModuleGetLoadingMode},
};

API CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version, cuuint64_t flags,
				 CUdriverProcAddressQueryResult *status)
{
	(void)version;
	(void)flags;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof(g_table) / sizeof(g_table[0]); i++)
		if (!strcmp(g_table[i].name, sym))
			*pfn = g_table[i].fn;
	if (status)
		*status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
