/* Name mapping for gpu.c built as the CUDA backend (-DXS_GPU_CUDA). Included by gpu.c only.
 *
 * Every call is a CUDA driver API call, reached at run time: the first CudaQueueCreate
 * opens libcuda.so.1 (dlopen), looks each entry point up with cuGetProcAddress at the
 * ABI of CUDA 12.0 (cuStreamWaitValue32 and cuMemHostGetDevicePointer are their _v2
 * there), and calls cuInit(0). The library links nothing from CUDA: compiled against
 * cuda.h for its types and constants only, it loads on machines without a driver, and
 * a program that makes no CUDA queue never loads libcuda. Without a driver
 * CudaQueueCreate returns kXSchedErrorNotSupported.
 *
 * Runtime function pointers (HwCommandCreateKernel): a `__global__` function's host
 * address is known only to the CUDA runtime instance that registered it (the static
 * cudart in an executable, or a shared libcudart). At a kernel command's enqueue the
 * library asks the process's shared runtime for its CUfunction (cudaGetFuncBySymbol,
 * found with dlsym(RTLD_DEFAULT) or in an already loaded libcudart.so.13/12/11), with
 * the stream's context current, and caches it per kernel and context. An application
 * with the static runtime passes its own cudaGetFuncBySymbol instead
 * (HwCommandCreateCudaKernel() in xsched.h, HwCommandCreateResolvedKernel: resolved by it
 * in the same way at launch, cached in the same table under entries of its own, and checked
 * once in the creating thread's context). See xs__fn_resolve and xs__fn_resolve_current.
 *
 * Thread binding: a stream belongs to a context (cuStreamGetCtx). Library threads make
 * that context current with cuCtxSetCurrent, whether it is a device's primary context
 * (PyTorch, the runtime API) or one the application created with the driver API.
 */
#ifndef XS_HAL_GPU_CUDA_H
#define XS_HAL_GPU_CUDA_H

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"

#define XS_GPU_NAME        "cuda"
#define XS_GPU_CREATE_NAME "CudaQueueCreate"
#define XS_GPU_CREATE_FN   xs_cuda_queue_create

/* Sets how many hardware queues the context spreads its streams over (default 8). */
#define XS_GPU_HWQ_ENV       "CUDA_DEVICE_MAX_CONNECTIONS"
#define XS_GPU_HWQ_DEFAULT   8
#define XS_GPU_HWQ_CONFIG(c) ((c)->cuda_connections)
/* The counter and done words the stream reads and writes are 32 bits wide. */
#define XS_GPU_COUNTER_BITS     32
#define XS_GPU_HAS_SET_PRIORITY 1
#define XS_GPU_NOT_READY        CUDA_ERROR_NOT_READY
/* xs_gpu_launch_kernel's result for a runtime function pointer no runtime resolves. */
#define XS_GPU_KERNEL_UNRESOLVED CUDA_ERROR_NOT_FOUND

typedef CUstream xs_gpu_stream;
typedef CUevent xs_gpu_event;
typedef CUresult xs_gpu_err;
#define XS_GPU_OK CUDA_SUCCESS

/* The stream's context: what a library thread binds before touching the stream. */
typedef struct xs_gpu_binding {
	CUcontext ctx;
	/* The kernel cache's key of ctx (xs__ctx_key), read once when the binding is taken
	 * from a stream (xs_gpu_stream_binding), so that a launch asks the driver nothing to
	 * find its kernel; 0 in a binding of the current context (xs_gpu_current_binding). */
	uint64_t key;
} xs_gpu_binding;

/* ---- the driver, loaded at the first CudaQueueCreate ---- */

/* The driver: its entry points and what loading them came to, written once by xs__cu_load()
 * under xs__cu_once (which orders the writes before every reader's return from pthread_once).
 * Entry points are all set when status is CUDA_SUCCESS; their signatures are those of CUDA
 * 12.0 (the version asked for). */
static struct xs__cuda {
	CUresult (*init)(unsigned int);
	CUresult (*get_error_name)(CUresult, const char **);
	CUresult (*get_error_string)(CUresult, const char **);
	CUresult (*event_create)(CUevent *, unsigned int);
	CUresult (*event_record)(CUevent, CUstream);
	CUresult (*event_destroy)(CUevent);
	CUresult (*stream_wait_event)(CUstream, CUevent, unsigned int);
	CUresult (*stream_synchronize)(CUstream);
	CUresult (*stream_query)(CUstream);
	CUresult (*stream_get_priority)(CUstream, int *);
	CUresult (*stream_get_flags)(CUstream, unsigned int *);
	CUresult (*stream_get_ctx)(CUstream, CUcontext *);
	CUresult (*stream_set_attribute)(CUstream, CUstreamAttrID, const CUstreamAttrValue *);
	CUresult (*memcpy_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
	CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream);
	CUresult (*launch_host_func)(CUstream, CUhostFn, void *);
	CUresult (*mem_host_alloc)(void **, size_t, unsigned int);
	CUresult (*mem_host_get_device_pointer)(CUdeviceptr *, void *, unsigned int);
	CUresult (*ctx_get_current)(CUcontext *);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*ctx_get_stream_priority_range)(int *, int *);
	CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*stream_wait_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
	CUresult (*stream_write_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
	CUresult (*stream_batch_mem_op)(CUstream, unsigned int, CUstreamBatchMemOpParams *,
					unsigned int);
	CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int,
				  unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
				  void **, void **);
	CUresult (*module_get_loading_mode)(CUmoduleLoadingMode *);
	CUresult (*ctx_get_id)(CUcontext, unsigned long long *); /* NULL: none (optional) */
	CUresult (*device_get_uuid)(CUuuid *, CUdevice);         /* NULL: none (optional) */
	/* Entry points end here (xs__cu_load clears them up to status). */
	CUresult status; /* CUDA_SUCCESS: the driver is usable */
	char why[256];   /* why the driver is unusable, when it is */
} xs__cu;
static pthread_once_t xs__cu_once = PTHREAD_ONCE_INIT;
static const char xs__cu_lib[] = "libcuda.so.1";

/* Status of a driver that is not there: the library could not be opened, or lacks an
 * entry point this backend needs. Both read as "no usable driver" (xs_gpu_err_is_no_driver). */
#define XS__CU_NO_LIBRARY CUDA_ERROR_NOT_FOUND
#define XS__CU_TOO_OLD    CUDA_ERROR_NOT_SUPPORTED

/* The driver's cuGetProcAddress_v2. */
typedef CUresult (*xs__cu_get_proc_fn)(const char *, void **, int, cuuint64_t,
				       CUdriverProcAddressQueryResult *);

/* Open the driver and find its cuGetProcAddress_v2, or set xs__cu's status and why. */
static xs__cu_get_proc_fn xs__cu_open(void)
{
	/* The process's driver, if the application loaded it; else load it for good (the
	 * handle is never closed: entry points stay valid for the process's life). */
	void *lib = dlopen(xs__cu_lib, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(xs__cu.why, sizeof(xs__cu.why), "%s", e ? e : xs__cu_lib);
		xs__cu.status = XS__CU_NO_LIBRARY;
		return NULL;
	}
	xs__cu_get_proc_fn get_proc;
	*(void **)&get_proc = dlsym(lib, "cuGetProcAddress_v2");
	if (!get_proc) {
		snprintf(xs__cu.why, sizeof(xs__cu.why),
			 "%s has no cuGetProcAddress_v2 (a driver older than CUDA 12)", xs__cu_lib);
		xs__cu.status = XS__CU_TOO_OLD;
	}
	return get_proc;
}

/* Fill xs__cu's entry points through @get_proc: false (status and why set, every entry
 * point cleared) when one is missing. */
static bool xs__cu_resolve(xs__cu_get_proc_fn get_proc)
{
	static const struct {
		const char *name;
		void **fn;
	} syms[] = {
	    {"cuInit", (void **)&xs__cu.init},
	    {"cuGetErrorName", (void **)&xs__cu.get_error_name},
	    {"cuGetErrorString", (void **)&xs__cu.get_error_string},
	    {"cuEventCreate", (void **)&xs__cu.event_create},
	    {"cuEventRecord", (void **)&xs__cu.event_record},
	    {"cuEventDestroy", (void **)&xs__cu.event_destroy},
	    {"cuStreamWaitEvent", (void **)&xs__cu.stream_wait_event},
	    {"cuStreamSynchronize", (void **)&xs__cu.stream_synchronize},
	    {"cuStreamQuery", (void **)&xs__cu.stream_query},
	    {"cuStreamGetPriority", (void **)&xs__cu.stream_get_priority},
	    {"cuStreamGetFlags", (void **)&xs__cu.stream_get_flags},
	    {"cuStreamGetCtx", (void **)&xs__cu.stream_get_ctx},
	    {"cuStreamSetAttribute", (void **)&xs__cu.stream_set_attribute},
	    {"cuMemcpyAsync", (void **)&xs__cu.memcpy_async},
	    {"cuMemsetD8Async", (void **)&xs__cu.memset_d8_async},
	    {"cuLaunchHostFunc", (void **)&xs__cu.launch_host_func},
	    {"cuMemHostAlloc", (void **)&xs__cu.mem_host_alloc},
	    {"cuMemHostGetDevicePointer", (void **)&xs__cu.mem_host_get_device_pointer},
	    {"cuCtxGetCurrent", (void **)&xs__cu.ctx_get_current},
	    {"cuCtxSetCurrent", (void **)&xs__cu.ctx_set_current},
	    {"cuCtxGetDevice", (void **)&xs__cu.ctx_get_device},
	    {"cuCtxGetStreamPriorityRange", (void **)&xs__cu.ctx_get_stream_priority_range},
	    {"cuDeviceGetAttribute", (void **)&xs__cu.device_get_attribute},
	    {"cuStreamWaitValue32", (void **)&xs__cu.stream_wait_value32},
	    {"cuStreamWriteValue32", (void **)&xs__cu.stream_write_value32},
	    {"cuStreamBatchMemOp", (void **)&xs__cu.stream_batch_mem_op},
	    {"cuLaunchKernel", (void **)&xs__cu.launch_kernel},
	    {"cuModuleGetLoadingMode", (void **)&xs__cu.module_get_loading_mode},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
		/* 12000: each entry point's ABI as of CUDA 12.0, which later drivers keep. The
		 * streams passed are never default streams, so legacy and per-thread match. */
		CUresult r = get_proc(syms[i].name, syms[i].fn, 12000,
				      CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q);
		if (r != CUDA_SUCCESS || q != CU_GET_PROC_ADDRESS_SUCCESS || !*syms[i].fn) {
			snprintf(xs__cu.why, sizeof(xs__cu.why),
				 "%s has no entry point %s for CUDA 12.0 (CUresult %d, query %d)",
				 xs__cu_lib, syms[i].name, (int)r, (int)q);
			memset(&xs__cu, 0, offsetof(struct xs__cuda, status));
			xs__cu.status = XS__CU_TOO_OLD;
			return false;
		}
	}
	return true;
}

static void xs__cu_load(void)
{
	xs__cu_get_proc_fn get_proc = xs__cu_open();
	if (!get_proc || !xs__cu_resolve(get_proc))
		return;
	/* Optional: a context's unique id keys the kernel cache (xs__ctx_key) where the
	 * driver has it (CUDA 12.0 and later). */
	CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (get_proc("cuCtxGetId", (void **)&xs__cu.ctx_get_id, 12000,
		     CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q) != CUDA_SUCCESS ||
	    q != CU_GET_PROC_ADDRESS_SUCCESS)
		xs__cu.ctx_get_id = NULL;
	/* Optional: the device's UUID names its board (cuDeviceGetUuid_v2 at 12.0). */
	if (get_proc("cuDeviceGetUuid", (void **)&xs__cu.device_get_uuid, 12000,
		     CU_GET_PROC_ADDRESS_LEGACY_STREAM, &q) != CUDA_SUCCESS ||
	    q != CU_GET_PROC_ADDRESS_SUCCESS)
		xs__cu.device_get_uuid = NULL;
	CUresult r = xs__cu.init(0);
	if (r != CUDA_SUCCESS) {
		const char *name = "?", *text = "?";
		(void)xs__cu.get_error_name(r, &name);
		(void)xs__cu.get_error_string(r, &text);
		snprintf(xs__cu.why, sizeof(xs__cu.why), "cuInit: %s (%s)", name, text);
		xs__cu.status = r;
	}
}

/* Load the driver once. On failure *why says what is missing. */
static inline xs_gpu_err xs_gpu_runtime_init(const char **why)
{
	pthread_once(&xs__cu_once, xs__cu_load);
	*why = xs__cu.status != CUDA_SUCCESS ? xs__cu.why : NULL;
	return xs__cu.status;
}

/* The driver's name and text for @err; also before (or without) a driver. */
static inline const char *xs_gpu_err_name(xs_gpu_err err)
{
	const char *s = NULL;
	if (!xs__cu.get_error_name || xs__cu.get_error_name(err, &s) != CUDA_SUCCESS || !s)
		return err == XS__CU_NO_LIBRARY ? "no libcuda.so.1" : "unknown CUresult";
	return s;
}

static inline const char *xs_gpu_err_string(xs_gpu_err err)
{
	const char *s = NULL;
	if (!xs__cu.get_error_string || xs__cu.get_error_string(err, &s) != CUDA_SUCCESS || !s)
		return "no description (the driver is not loaded)";
	return s;
}

/* Whether @err says that the driver is being torn down (process exit): nothing to report. */
static inline bool xs_gpu_err_is_shutdown(xs_gpu_err err)
{
	return err == CUDA_ERROR_DEINITIALIZED || err == CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

/* Whether @err (from xs_gpu_runtime_init) says that no usable driver or device is present. */
static inline bool xs_gpu_err_is_no_driver(xs_gpu_err err)
{
	return err == XS__CU_NO_LIBRARY || err == XS__CU_TOO_OLD || err == CUDA_ERROR_NO_DEVICE ||
	       err == CUDA_ERROR_NOT_INITIALIZED || err == CUDA_ERROR_STUB_LIBRARY ||
	       err == CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER ||
	       err == CUDA_ERROR_DEVICE_UNAVAILABLE || err == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH ||
	       err == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE ||
	       err == CUDA_ERROR_SYSTEM_NOT_READY;
}

/* ---- calls with the same shape in both runtimes ---- */

/* The driver API keeps no per-thread last error: nothing to clear. */
#define xs_gpu_clear_error()              ((void)0)
#define XS_GPU_EVENT_DISABLE_TIMING       CU_EVENT_DISABLE_TIMING
#define xs_gpu_event_create(e, f)         xs__cu.event_create(e, f)
#define xs_gpu_event_record(e, s)         xs__cu.event_record(e, s)
#define xs_gpu_event_destroy(e)           xs__cu.event_destroy(e)
#define xs_gpu_stream_wait_event(s, e)    xs__cu.stream_wait_event(s, e, 0)
#define xs_gpu_stream_sync(s)             xs__cu.stream_synchronize(s)
#define xs_gpu_stream_query(s)            xs__cu.stream_query(s)
#define xs_gpu_stream_get_priority(s, p)  xs__cu.stream_get_priority(s, p)
#define xs_gpu_stream_get_flags(s, f)     xs__cu.stream_get_flags(s, f)
#define XS_GPU_STREAM_NON_BLOCKING        CU_STREAM_NON_BLOCKING
#define XS_GPU_HOST_FN_PARAMS             void *data
#define XS_GPU_HOST_FN_UNUSED()           ((void)0)
#define xs_gpu_launch_host_func(s, fn, d) xs__cu.launch_host_func(s, fn, d)

/* Unified addressing: the driver infers the direction from the two pointers. */
static inline xs_gpu_err xs_gpu_memcpy_async(void *dst, const void *src, size_t n, CUstream s)
{
	return xs__cu.memcpy_async((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n, s);
}

static inline xs_gpu_err xs_gpu_memset_async(void *dst, int value, size_t n, CUstream s)
{
	return xs__cu.memset_d8_async((CUdeviceptr)(uintptr_t)dst, (unsigned char)value, n, s);
}

static inline xs_gpu_err xs_gpu_host_get_device_pointer(void **dev, void *host)
{
	CUdeviceptr d = 0;
	CUresult r = xs__cu.mem_host_get_device_pointer(&d, host, 0);
	*dev = (void *)(uintptr_t)d;
	return r;
}

/* Pinned, mapped into the device's address space, usable from every context (with the
 * context the caller has bound). Ordinary write-back memory that the device reads
 * coherently over the bus (not write-combined). */
static inline xs_gpu_err xs_gpu_host_alloc_mapped(void **p, size_t n)
{
	return xs__cu.mem_host_alloc(p, n, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
}

/* The null stream, CU_STREAM_LEGACY (cudaStreamLegacy) and CU_STREAM_PER_THREAD
 * (cudaStreamPerThread). */
static inline bool xs_gpu_is_default_stream(xs_gpu_stream s)
{
	return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* ---- runtime function pointers -> CUfunction ---- */

/* The process's CUDA runtime, looked up at the first kernel command that needs it and
 * again while none is found (it may be loaded later, as Python loads PyTorch). */
typedef int (*xs__get_func_fn)(CUfunction *, const void *);
typedef int (*xs__last_error_fn)(void);

/* Who resolved a cache entry: the process's shared runtime (HwCommandCreateKernel's
 * launches) or an application's resolver (HwCommandCreateResolvedKernel). Each looks up its
 * own entries only, so whether a plain runtime pointer launches does not depend on what the
 * application resolved before. */
enum xs__fn_origin { XS__FN_SHARED_RT, XS__FN_APP };

/* A resolved kernel: the runtime's host stub in one context (xs__ctx_key). */
typedef struct xs__fn {
	_Atomic(struct xs__fn *) next; /* its chain; never changed once it is unlinked */
	struct xs__fn *retired_next;   /* xs__fc.retired's link */
	const void *stub; /* stub, ctx, origin and fn: written before the entry is published */
	uint64_t ctx;
	enum xs__fn_origin origin;
	CUfunction fn;
} xs__fn;

enum { XS__FN_BUCKETS = 256 };

/* The kernel cache, one struct: chains read without a lock (each command of
 * HwCommandCreateCudaKernel looks its kernel up here); its lock serializes the writers. An
 * entry is published whole (release) and never freed: one unlinked as stale (xs__fn_forget)
 * may still be read by a lookup standing on it, which goes on along its `next` (left as it
 * was) to the rest of the chain; it is kept on `retired`. The lock guards the chains'
 * writes, `retired` and `rt`; a leaf, never held across a runtime call. */
static struct xs__fn_cache {
	xs_mutex lock;
	_Atomic(xs__fn *) chains[XS__FN_BUCKETS];
	xs__fn *retired;
	/* The runtime's cudaGetFuncBySymbol, and its cudaGetLastError to clear the error a
	 * failed lookup leaves on the calling thread (the application may check it after its
	 * launches). */
	struct {
		xs__get_func_fn get_func;
		xs__last_error_fn last_error;
	} rt;
} xs__fc = {.lock = XS_MUTEX_INITIALIZER};

/* The unique id of @ctx (NULL: the calling thread's current context) from cuCtxGetId,
 * never reused within the process; 0 if there is none or the driver has no context ids. */
static uint64_t xs__ctx_id(CUcontext ctx)
{
	unsigned long long id = 0;
	if (!xs__cu.ctx_get_id || xs__cu.ctx_get_id(ctx, &id) != CUDA_SUCCESS)
		return 0;
	return (uint64_t)id;
}

/* The key of @ctx in the kernel cache: its unique id (an entry of a destroyed context is
 * never found for a new one at the same address), else its address (a stale entry is then
 * forgotten when its launch fails, xs__fn_forget). 0 if @ctx is not a live context. */
static uint64_t xs__ctx_key(CUcontext ctx)
{
	if (!ctx)
		return 0;
	return xs__cu.ctx_get_id ? xs__ctx_id(ctx) : (uint64_t)(uintptr_t)ctx;
}

static size_t xs__fn_bucket(const void *stub, uint64_t ctx)
{
	uintptr_t h = (uintptr_t)stub ^ (uintptr_t)(ctx >> 4) ^ (uintptr_t)(ctx << 7);
	h ^= h >> 17;
	h *= (uintptr_t)0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 24) % XS__FN_BUCKETS;
}

/* cudaGetFuncBySymbol of a runtime the application loaded: exported to the process
 * (an executable, or a libcudart loaded with RTLD_GLOBAL), or a shared libcudart loaded
 * locally (RTLD_NOLOAD: never loads one). Caller holds xs__fc.lock. */
static void xs__find_runtime_locked(void)
{
	XS_ASSERT_HELD(&xs__fc.lock);
	static const char *const libs[] = {"libcudart.so.13", "libcudart.so.12",
					   "libcudart.so.11.0", "libcudart.so"};
	void *h = RTLD_DEFAULT;
	for (size_t i = 0; !dlsym(h, "cudaGetFuncBySymbol") && i < sizeof(libs) / sizeof(libs[0]);
	     i++) {
		void *l = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
		if (l)
			h = l;
	}
	*(void **)&xs__fc.rt.last_error = dlsym(h, "cudaGetLastError");
	*(void **)&xs__fc.rt.get_func = dlsym(h, "cudaGetFuncBySymbol");
}

/* Forget what @resolve (NULL: the shared runtime) resolved for @stub in @bind's context
 * (its launch said the handle is stale: a context destroyed and another made at the same
 * address, where the driver has no context ids). */
static void xs__fn_forget(const void *stub, int (*resolve)(void **, const void *),
			  const xs_gpu_binding *bind)
{
	uint64_t ctx = bind->key;
	enum xs__fn_origin origin = resolve ? XS__FN_APP : XS__FN_SHARED_RT;
	xs_mutex_lock(&xs__fc.lock);
	for (_Atomic(xs__fn *) *pp = &xs__fc.chains[xs__fn_bucket(stub, ctx)];;) {
		xs__fn *e = atomic_load_explicit(pp, memory_order_relaxed);
		if (!e)
			break;
		if (e->stub == stub && e->ctx == ctx && e->origin == origin) {
			atomic_store_explicit(pp,
					      atomic_load_explicit(&e->next, memory_order_relaxed),
					      memory_order_release);
			e->retired_next = xs__fc.retired;
			xs__fc.retired = e; /* a lookup may be reading it: kept */
			break;              /* xs__fn_keep keeps one entry per key */
		}
		pp = &e->next;
	}
	xs_mutex_unlock(&xs__fc.lock);
}

/* The cached CUfunction of @stub in context key @ctx resolved by @origin, or NULL. No lock:
 * see xs__fc. */
static CUfunction xs__fn_cached(const void *stub, uint64_t ctx, enum xs__fn_origin origin)
{
	xs__fn *e =
	    atomic_load_explicit(&xs__fc.chains[xs__fn_bucket(stub, ctx)], memory_order_acquire);
	for (; e; e = atomic_load_explicit(&e->next, memory_order_acquire))
		if (e->stub == stub && e->ctx == ctx && e->origin == origin)
			return e->fn;
	return NULL;
}

/* Cache @fn for @stub in context key @ctx, resolved by @origin, unless another thread did
 * meanwhile (one entry per key; if memory is short, a later miss resolves again). */
static void xs__fn_keep(const void *stub, uint64_t ctx, enum xs__fn_origin origin, CUfunction fn)
{
	xs__fn *e = malloc(sizeof(*e));
	if (!e)
		return;
	e->stub = stub;
	e->ctx = ctx;
	e->origin = origin;
	e->fn = fn;
	e->retired_next = NULL;
	size_t b = xs__fn_bucket(stub, ctx);
	xs_mutex_lock(&xs__fc.lock);
	if (xs__fn_cached(stub, ctx, origin)) {
		xs_mutex_unlock(&xs__fc.lock);
		free(e); /* never published */
		return;
	}
	atomic_store_explicit(&e->next,
			      atomic_load_explicit(&xs__fc.chains[b], memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&xs__fc.chains[b], e, memory_order_release); /* published whole */
	xs_mutex_unlock(&xs__fc.lock);
}

/* The CUfunction of kernel stub @stub in @bind's context: cached, else asked of @resolve (an
 * application's resolver: HwCommandCreateResolvedKernel) or, if it is NULL, of the process's
 * shared runtime, with that context current on this thread (bound for the call if another
 * is). Returns CUDA_SUCCESS, or CUDA_ERROR_NOT_FOUND with *why set. */
static CUresult xs__fn_resolve(const void *stub, int (*resolve)(void **, const void *),
			       const xs_gpu_binding *bind, CUfunction *out, const char **why)
{
	enum xs__fn_origin origin = resolve ? XS__FN_APP : XS__FN_SHARED_RT;
	CUfunction hit = bind->key ? xs__fn_cached(stub, bind->key, origin) : NULL;
	if (hit) {
		*out = hit;
		return CUDA_SUCCESS;
	}
	xs__get_func_fn get = NULL;
	xs__last_error_fn last_error = NULL;
	if (!resolve) {
		xs_mutex_lock(&xs__fc.lock);
		if (!xs__fc.rt.get_func)
			xs__find_runtime_locked();
		get = xs__fc.rt.get_func;
		last_error = xs__fc.rt.last_error;
		xs_mutex_unlock(&xs__fc.lock);
		if (!get) {
			*why = "no shared CUDA runtime (libcudart) in the process";
			return CUDA_ERROR_NOT_FOUND;
		}
	}
	CUcontext cur = NULL;
	CUresult r = xs__cu.ctx_get_current(&cur);
	bool rebind = r == CUDA_SUCCESS && cur != bind->ctx;
	if (rebind)
		r = xs__cu.ctx_set_current(bind->ctx);
	if (r != CUDA_SUCCESS) {
		*why = "cannot make the stream's context current";
		return r;
	}
	void *fn = NULL;
	int rt = resolve ? resolve(&fn, stub) : get((CUfunction *)&fn, stub);
	if (rebind)
		(void)xs__cu.ctx_set_current(cur);
	if (rt != 0 || !fn) {
		if (last_error)
			(void)last_error();
		*why = resolve ? "the command's resolver does not know this kernel in the stream's "
				 "context"
			       : "the process's shared CUDA runtime does not know this kernel "
				 "(cudaGetFuncBySymbol failed)";
		return CUDA_ERROR_NOT_FOUND;
	}
	if (bind->key)
		xs__fn_keep(stub, bind->key, origin, (CUfunction)fn);
	*out = (CUfunction)fn;
	return CUDA_SUCCESS;
}

/* HwCommandCreateResolvedKernel's check at create: whether @resolve knows @stub in the
 * calling thread's current context (with no context current, the runtime makes its
 * device's primary context current, which then keys the entry). Asked once per kernel and
 * context (cached where the driver gives context ids). Returns CUDA_SUCCESS, or
 * CUDA_ERROR_NOT_FOUND if @resolve failed (*rt_err: its result). */
static CUresult xs__fn_resolve_current(const void *stub, int (*resolve)(void **, const void *),
				       int *rt_err)
{
	uint64_t key = xs__ctx_id(NULL);
	if (key && xs__fn_cached(stub, key, XS__FN_APP))
		return CUDA_SUCCESS;
	void *got = NULL;
	*rt_err = resolve(&got, stub);
	if (*rt_err != 0 || !got)
		return CUDA_ERROR_NOT_FOUND;
	if (!key)
		key = xs__ctx_id(NULL); /* the runtime may have made its context current */
	if (key)
		xs__fn_keep(stub, key, XS__FN_APP, (CUfunction)got);
	return CUDA_SUCCESS;
}

static inline xs_gpu_err xs_gpu_module_launch(const void *fn, XDim3 g, XDim3 b, size_t shmem,
					      xs_gpu_stream s, void **args)
{
	return xs__cu.launch_kernel((CUfunction)(uintptr_t)fn, g.x, g.y, g.z, b.x, b.y, b.z,
				    (unsigned int)shmem, s, args, NULL);
}

/* Launch kernel stub @func, resolved by @resolve (NULL: the process's shared runtime), on
 * @s, whose context is @bind's. A stub that is not resolved logs why (once per call) and
 * returns CUDA_ERROR_NOT_FOUND. */
static inline xs_gpu_err xs_gpu_launch_resolved(const void *func,
						int (*resolve)(void **, const void *), XDim3 g,
						XDim3 b, void **args, size_t shmem, xs_gpu_stream s,
						const xs_gpu_binding *bind)
{
	for (int attempt = 0;; attempt++) {
		CUfunction fn = NULL;
		const char *why = NULL;
		CUresult r = xs__fn_resolve(func, resolve, bind, &fn, &why);
		if (r != CUDA_SUCCESS) {
			XS_WARN("hal", "kernel %p on cuda stream %p: %s%s", func, (void *)s, why,
				r != XS_GPU_KERNEL_UNRESOLVED || resolve
				    ? ""
				    : "; an application with the static CUDA runtime (nvcc's "
				      "default) creates the command with "
				      "HwCommandCreateCudaKernel() (xsched.h, after "
				      "cuda_runtime_api.h) or HwCommandCreateModuleKernel()");
			return r;
		}
		r = xs_gpu_module_launch((const void *)fn, g, b, shmem, s, args);
		if (attempt == 0 &&
		    (r == CUDA_ERROR_INVALID_HANDLE || r == CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		     r == CUDA_ERROR_INVALID_CONTEXT)) {
			xs__fn_forget(func, resolve, bind); /* stale: resolve once more */
			continue;
		}
		return r;
	}
}

/* A runtime stub of the process's shared runtime (HwCommandCreateKernel). */
static inline xs_gpu_err xs_gpu_launch_kernel(const void *func, XDim3 g, XDim3 b, void **args,
					      size_t shmem, xs_gpu_stream s,
					      const xs_gpu_binding *bind)
{
	return xs_gpu_launch_resolved(func, NULL, g, b, args, shmem, s, bind);
}

/* CUDA's stream memory operations work on any mapped memory: no signal memory. */
#define XS_GPU_WANTS_SIGNAL_MEMORY(c) ((void)(c), 0)
static inline xs_gpu_err xs_gpu_signal_alloc(void **p)
{
	*p = NULL;
	return CUDA_ERROR_NOT_SUPPORTED;
}
static inline void xs_gpu_signal_free(void *p)
{
	(void)p;
}

/* Pools of hardware queues that streams are spread over: one (CUDA_DEVICE_MAX_CONNECTIONS
 * connections for every stream of the context). */
#define XS_GPU_POOLS          1
#define XS_GPU_OWN_QUEUE_HINT ""
static inline int xs_gpu_stream_pool(xs_gpu_stream s)
{
	(void)s;
	return 0;
}
static inline int xs_gpu_pool_shared_with_null(int pool)
{
	(void)pool;
	return 0;
}
static inline const char *xs_gpu_pool_name(int pool)
{
	(void)pool;
	return "all streams";
}

/* Whether kernels are loaded lazily, at their first launch (CUDA_MODULE_LOADING=LAZY, the
 * default since CUDA 12.2). Such a load waits for the device's streams, also for one that
 * waits at a closed counter (measured on H100/H200 with PyTorch, 2026-11-23). */
static inline bool xs_gpu_lazy_loading(void)
{
	CUmoduleLoadingMode m = CU_MODULE_EAGER_LOADING;
	return xs__cu.module_get_loading_mode(&m) == CUDA_SUCCESS && m == CU_MODULE_LAZY_LOADING;
}

static inline xs_gpu_err xs_gpu_stream_binding(xs_gpu_stream s, xs_gpu_binding *b)
{
	xs_gpu_err err = xs__cu.stream_get_ctx(s, &b->ctx);
	b->key = err == CUDA_SUCCESS ? xs__ctx_key(b->ctx) : 0;
	return err;
}

static inline xs_gpu_err xs_gpu_current_binding(xs_gpu_binding *b)
{
	b->key = 0;
	return xs__cu.ctx_get_current(&b->ctx);
}

static inline xs_gpu_err xs_gpu_bind(const xs_gpu_binding *b)
{
	return xs__cu.ctx_set_current(b->ctx);
}

static inline bool xs_gpu_same_binding(const xs_gpu_binding *a, const xs_gpu_binding *b)
{
	return a->ctx == b->ctx;
}

/* The bound context's device's attribute @a, into *@v. */
static inline CUresult xs__cu_attribute(int *v, CUdevice_attribute a)
{
	CUdevice dev;
	CUresult r = xs__cu.ctx_get_device(&dev);
	if (r == CUDA_SUCCESS)
		r = xs__cu.device_get_attribute(v, a, dev);
	return r;
}

/* Whether the bound device can wait on a 32-bit value in a stream (Lv2). All CUDA 12+
 * devices have the memory operations; the attribute of the newest of them (NOR) is the
 * one still reported per device. */
static inline xs_gpu_err xs_gpu_wait_value_supported(int *ok)
{
	return xs__cu_attribute(ok, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR);
}

/* Whether the bound device shares the contexts of several processes through MPS
 * (CU_DEVICE_ATTRIBUTE_MPS_ENABLED, cuda.h: "contexts created on this device will be
 * shared via MPS"); without MPS the GPU time-slices the contexts of processes. By number:
 * the headers of the oldest toolkits this backend builds with (12.0) may lack the name; a
 * driver that does not know it answers CUDA_ERROR_INVALID_VALUE. */
#define XS_GPU_HAS_MPS_QUERY        1
#define XS_CU_ATTRIBUTE_MPS_ENABLED ((CUdevice_attribute)133)
#if CUDA_VERSION >= 13000
_Static_assert(CU_DEVICE_ATTRIBUTE_MPS_ENABLED == 133, "cuda.h's MPS attribute moved");
#endif
static inline xs_gpu_err xs_gpu_mps_enabled(int *on)
{
	return xs__cu_attribute(on, XS_CU_ATTRIBUTE_MPS_ENABLED);
}

/* Enqueue: the stream goes on once (int32_t)(*dev_ptr - (uint32_t)value) >= 0 (the
 * driver API's GEQ compares wrap-safe), i.e. once the counter reached @value. */
static inline xs_gpu_err xs_gpu_wait_counter(xs_gpu_stream s, void *dev_ptr, uint64_t value)
{
	return xs__cu.stream_wait_value32(s, (CUdeviceptr)(uintptr_t)dev_ptr, (cuuint32_t)value,
					  CU_STREAM_WAIT_VALUE_GEQ);
}

/* Enqueue: write the low 32 bits of @value, after a memory barrier (the default flags). */
static inline xs_gpu_err xs_gpu_write_done(xs_gpu_stream s, void *dev_ptr, uint64_t value)
{
	return xs__cu.stream_write_value32(s, (CUdeviceptr)(uintptr_t)dev_ptr, (cuuint32_t)value,
					   CU_STREAM_WRITE_VALUE_DEFAULT);
}

/* Enqueue: write the low 32 bits of @value to @done_ptr, then wait for the counter at
 * @counter_ptr to reach @target, in one call (a batch of memory operations, run in
 * order): one driver call instead of two, about 1 us less per command on an H100
 * (measured 2026-11-25, doc/RESULTS.md). */
static inline xs_gpu_err xs_gpu_write_then_wait(xs_gpu_stream s, void *done_ptr, uint64_t value,
						void *counter_ptr, uint64_t target)
{
	CUstreamBatchMemOpParams p[2];
	memset(p, 0, sizeof(p));
	p[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	p[0].writeValue.address = (CUdeviceptr)(uintptr_t)done_ptr;
	p[0].writeValue.value = (cuuint32_t)value;
	p[0].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
	p[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
	p[1].waitValue.address = (CUdeviceptr)(uintptr_t)counter_ptr;
	p[1].waitValue.value = (cuuint32_t)target;
	p[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
	return xs__cu.stream_batch_mem_op(s, 2, p, 0);
}

/* The UUID of the bound context's device as nvidia-smi prints it ("GPU-" then 8-4-4-4-12
 * hex digits), into @buf of @n bytes. */
static inline xs_gpu_err xs_gpu_device_uuid(const xs_gpu_binding *b, char *buf, size_t n)
{
	(void)b; /* bound by the caller */
	CUdevice dev;
	CUuuid u;
	if (!xs__cu.device_get_uuid)
		return CUDA_ERROR_NOT_SUPPORTED;
	CUresult r = xs__cu.ctx_get_device(&dev);
	if (r == CUDA_SUCCESS)
		r = xs__cu.device_get_uuid(&u, dev);
	if (r != CUDA_SUCCESS)
		return r;
	const unsigned char *x = (const unsigned char *)u.bytes;
	snprintf(buf, n, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12],
		 x[13], x[14], x[15]);
	return CUDA_SUCCESS;
}

/* The key of a device for the engine: the context. */
static inline uint64_t xs_gpu_binding_key(const xs_gpu_binding *b)
{
	return (uint64_t)(uintptr_t)b->ctx;
}

/* The bound context's stream priority range (greatest is the numerically lowest). */
static inline xs_gpu_err xs_gpu_priority_range(int *least, int *greatest)
{
	return xs__cu.ctx_get_stream_priority_range(least, greatest);
}

static inline xs_gpu_err xs_gpu_stream_set_priority(xs_gpu_stream s, int prio)
{
	CUstreamAttrValue v;
	memset(&v, 0, sizeof(v));
	v.priority = prio;
	return xs__cu.stream_set_attribute(s, CU_STREAM_ATTRIBUTE_PRIORITY, &v);
}

#endif
