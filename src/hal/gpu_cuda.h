/* Name mapping for gpu.c built as the CUDA backend (-DXS_GPU_CUDA). Included by gpu.c only.
 *
 * Runtime calls come from libcudart. Driver calls (the stream's context, binding it to a
 * thread, stream wait-value, module launch, a device attribute) come through
 * cudaGetDriverEntryPointByVersion (CUDA 12.5 and later), so the library does not link
 * libcuda: without a driver it still loads, and CudaQueueCreate returns
 * kXSchedErrorNotSupported. A CUresult has the value of the cudaError_t of the same
 * meaning for every code these calls return (CUDA_ERROR_INVALID_VALUE = 1 =
 * cudaErrorInvalidValue, CUDA_ERROR_INVALID_HANDLE = 400 = cudaErrorInvalidResourceHandle,
 * ...), so driver results are passed on as cudaError_t and described by
 * cudaGetErrorName/cudaGetErrorString like the others.
 *
 * Thread binding: a stream belongs to a context (cuStreamGetCtx). Library threads make
 * that context current with cuCtxSetCurrent; the runtime then uses it for every call on
 * that thread, whether it is a device's primary context (PyTorch, the runtime API) or one
 * the application created with the driver API. cudaSetDevice would pick the primary
 * context and could not serve the latter.
 */
#ifndef XS_HAL_GPU_CUDA_H
#define XS_HAL_GPU_CUDA_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

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
#define XS_GPU_NOT_READY        cudaErrorNotReady

typedef cudaStream_t xs_gpu_stream;
typedef cudaEvent_t xs_gpu_event;
typedef cudaError_t xs_gpu_err;
#define XS_GPU_OK cudaSuccess

/* The stream's context: what a library thread binds before touching the stream. */
typedef struct xs_gpu_binding {
	CUcontext ctx;
} xs_gpu_binding;

/* ---- runtime calls with the same shape in both runtimes ---- */
#define xs_gpu_err_name                      cudaGetErrorName
#define xs_gpu_err_string                    cudaGetErrorString
#define xs_gpu_clear_error                   cudaGetLastError
#define XS_GPU_EVENT_DISABLE_TIMING          cudaEventDisableTiming
#define xs_gpu_event_create                  cudaEventCreateWithFlags
#define xs_gpu_event_record                  cudaEventRecord
#define xs_gpu_event_destroy                 cudaEventDestroy
#define xs_gpu_stream_wait_event(s, e)       cudaStreamWaitEvent(s, e, 0)
#define xs_gpu_stream_sync                   cudaStreamSynchronize
#define xs_gpu_stream_query                  cudaStreamQuery
#define xs_gpu_stream_get_priority           cudaStreamGetPriority
#define xs_gpu_stream_get_flags              cudaStreamGetFlags
#define XS_GPU_STREAM_NON_BLOCKING           cudaStreamNonBlocking
#define xs_gpu_memcpy_async(d, s, n, st)     cudaMemcpyAsync(d, s, n, cudaMemcpyDefault, st)
#define xs_gpu_memset_async                  cudaMemsetAsync
#define XS_GPU_HOST_FN_PARAMS                void *data
#define XS_GPU_HOST_FN_UNUSED()              ((void)0)
#define xs_gpu_launch_host_func              cudaLaunchHostFunc
#define xs_gpu_host_get_device_pointer(d, h) cudaHostGetDevicePointer(d, h, 0)

/* Pinned, mapped into the device's address space, usable from every context. Ordinary
 * write-back memory that the device reads coherently over the bus (not write-combined). */
static inline xs_gpu_err xs_gpu_host_alloc_mapped(void **p, size_t n)
{
	return cudaHostAlloc(p, n, cudaHostAllocMapped | cudaHostAllocPortable);
}

static inline xs_gpu_err xs_gpu_launch_kernel(const void *func, XDim3 g, XDim3 b, void **args,
					      size_t shmem, xs_gpu_stream s)
{
	dim3 gd = {g.x, g.y, g.z}, bd = {b.x, b.y, b.z};
	return cudaLaunchKernel(func, gd, bd, args, shmem, s);
}

/* The null stream, cudaStreamLegacy and cudaStreamPerThread. */
static inline bool xs_gpu_is_default_stream(xs_gpu_stream s)
{
	return s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

/* ---- driver calls, through entry points ---- */
static struct {
	CUresult (*stream_get_ctx)(CUstream, CUcontext *);
	CUresult (*ctx_get_current)(CUcontext *);
	CUresult (*ctx_set_current)(CUcontext);
	CUresult (*ctx_get_device)(CUdevice *);
	CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
	CUresult (*stream_wait_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
	CUresult (*stream_write_value32)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
	CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int,
				  unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
				  void **, void **);
	CUresult (*module_get_loading_mode)(CUmoduleLoadingMode *);
} xs__cu;
static pthread_once_t xs__cu_once = PTHREAD_ONCE_INIT;
static cudaError_t xs__cu_status; /* written once under xs__cu_once */
static const char *xs__cu_missing;

static void xs__cu_load(void)
{
	static const struct {
		const char *name;
		void **fn;
	} syms[] = {
	    {"cuStreamGetCtx", (void **)&xs__cu.stream_get_ctx},
	    {"cuCtxGetCurrent", (void **)&xs__cu.ctx_get_current},
	    {"cuCtxSetCurrent", (void **)&xs__cu.ctx_set_current},
	    {"cuCtxGetDevice", (void **)&xs__cu.ctx_get_device},
	    {"cuDeviceGetAttribute", (void **)&xs__cu.device_get_attribute},
	    {"cuStreamWaitValue32", (void **)&xs__cu.stream_wait_value32},
	    {"cuStreamWriteValue32", (void **)&xs__cu.stream_write_value32},
	    {"cuLaunchKernel", (void **)&xs__cu.launch_kernel},
	    {"cuModuleGetLoadingMode", (void **)&xs__cu.module_get_loading_mode},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
		/* 12000: the ABI of each symbol as of CUDA 12.0 (cuStreamWaitValue32 and
		 * cuStreamWriteValue32 are their _v2 there), which later drivers keep. */
		cudaError_t err = cudaGetDriverEntryPointByVersion(syms[i].name, syms[i].fn, 12000,
								   cudaEnableDefault, &q);
		if (err == cudaSuccess && q != cudaDriverEntryPointSuccess)
			err = cudaErrorCallRequiresNewerDriver;
		if (err != cudaSuccess) {
			xs__cu_status = err;
			xs__cu_missing = syms[i].name;
			return;
		}
	}
}

/* CUDA's stream memory operations work on any mapped memory: no signal memory. */
#define XS_GPU_WANTS_SIGNAL_MEMORY(c) ((void)(c), 0)
static inline xs_gpu_err xs_gpu_signal_alloc(void **p)
{
	*p = NULL;
	return cudaErrorNotSupported;
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
	return xs__cu.module_get_loading_mode &&
	       xs__cu.module_get_loading_mode(&m) == CUDA_SUCCESS && m == CU_MODULE_LAZY_LOADING;
}

/* Load the driver entry points once. On failure *missing names the first absent one. */
static inline xs_gpu_err xs_gpu_runtime_init(const char **missing)
{
	pthread_once(&xs__cu_once, xs__cu_load);
	*missing = xs__cu_missing;
	return xs__cu_status;
}

/* Whether @err says that the runtime is being torn down (process exit): nothing to report. */
static inline bool xs_gpu_err_is_shutdown(xs_gpu_err err)
{
	return err == cudaErrorCudartUnloading || err == cudaErrorContextIsDestroyed;
}

/* Whether @err says that no usable driver or device is present. */
static inline bool xs_gpu_err_is_no_driver(xs_gpu_err err)
{
	return err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver ||
	       err == cudaErrorStubLibrary || err == cudaErrorCallRequiresNewerDriver ||
	       err == cudaErrorDevicesUnavailable || err == cudaErrorSystemDriverMismatch ||
	       err == cudaErrorCompatNotSupportedOnDevice;
}

static inline xs_gpu_err xs_gpu_stream_binding(xs_gpu_stream s, xs_gpu_binding *b)
{
	return (xs_gpu_err)xs__cu.stream_get_ctx((CUstream)s, &b->ctx);
}

static inline xs_gpu_err xs_gpu_current_binding(xs_gpu_binding *b)
{
	return (xs_gpu_err)xs__cu.ctx_get_current(&b->ctx);
}

static inline xs_gpu_err xs_gpu_bind(const xs_gpu_binding *b)
{
	return (xs_gpu_err)xs__cu.ctx_set_current(b->ctx);
}

static inline bool xs_gpu_same_binding(const xs_gpu_binding *a, const xs_gpu_binding *b)
{
	return a->ctx == b->ctx;
}

/* Whether the bound device can wait on a 32-bit value in a stream (Lv2). All CUDA 12+
 * devices have the memory operations; the attribute of the newest of them (NOR) is the
 * one still reported per device. */
static inline xs_gpu_err xs_gpu_wait_value_supported(int *ok)
{
	CUdevice dev;
	CUresult r = xs__cu.ctx_get_device(&dev);
	if (r == CUDA_SUCCESS)
		r = xs__cu.device_get_attribute(
		    ok, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev);
	return (xs_gpu_err)r;
}

/* Enqueue: the stream goes on once (int32_t)(*dev_ptr - (uint32_t)value) >= 0 (the
 * driver API's GEQ compares wrap-safe), i.e. once the counter reached @value. */
static inline xs_gpu_err xs_gpu_wait_counter(xs_gpu_stream s, void *dev_ptr, uint64_t value)
{
	return (xs_gpu_err)xs__cu.stream_wait_value32((CUstream)s, (CUdeviceptr)(uintptr_t)dev_ptr,
						      (cuuint32_t)value, CU_STREAM_WAIT_VALUE_GEQ);
}

/* Enqueue: write the low 32 bits of @value, after a memory barrier (the default flags). */
static inline xs_gpu_err xs_gpu_write_done(xs_gpu_stream s, void *dev_ptr, uint64_t value)
{
	return (xs_gpu_err)xs__cu.stream_write_value32((CUstream)s, (CUdeviceptr)(uintptr_t)dev_ptr,
						       (cuuint32_t)value,
						       CU_STREAM_WRITE_VALUE_DEFAULT);
}

/* The key of a device for the engine: the context. */
static inline uint64_t xs_gpu_binding_key(const xs_gpu_binding *b)
{
	return (uint64_t)(uintptr_t)b->ctx;
}

/* The bound device's stream priority range (greatest is the numerically lowest). */
static inline xs_gpu_err xs_gpu_priority_range(int *least, int *greatest)
{
	return cudaDeviceGetStreamPriorityRange(least, greatest);
}

static inline xs_gpu_err xs_gpu_stream_set_priority(xs_gpu_stream s, int prio)
{
	cudaStreamAttrValue v;
	memset(&v, 0, sizeof(v));
	v.priority = prio;
	return cudaStreamSetAttribute(s, cudaStreamAttributePriority, &v);
}

static inline xs_gpu_err xs_gpu_module_launch(const void *fn, XDim3 g, XDim3 b, size_t shmem,
					      xs_gpu_stream s, void **args)
{
	return (xs_gpu_err)xs__cu.launch_kernel((CUfunction)(uintptr_t)fn, g.x, g.y, g.z, b.x, b.y,
						b.z, (unsigned int)shmem, (CUstream)s, args, NULL);
}

#endif
