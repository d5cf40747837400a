/* Name mapping for gpu.c built as the HIP backend (-DXS_GPU_HIP). Included by gpu.c only.
 *
 * Every call goes to libamdhip64, opened at the first HipQueueCreate (hip_api.h): the
 * library links nothing from ROCm. Written against ROCm 5.2.3 (Debian 12), which has no
 * hipStreamGetDevice: hipGetStreamDeviceId gives the stream's device (it is still in
 * ROCm 6). HIP has no user-visible contexts here: a library thread binds the stream's
 * device with hipSetDevice. Runtime function pointers (HwCommandCreateKernel) go to
 * hipLaunchKernel of the same runtime instance the application registered them with
 * (dlopen finds the libamdhip64 it linked).
 *
 * Lv2 gate: hipStreamWaitValue32 on host memory from hipHostMalloc(Mapped | Coherent):
 * coherent (fine-grained) so that the device sees a host store without a cache flush.
 * ROCm documents the call for memory from hipExtMallocWithFlags(hipMallocSignalMemory);
 * its runtime also accepts other device-visible memory (it polls instead of using a
 * signal). The creation probe runs one wait on the stream and keeps Lv1 if it fails.
 */
#ifndef XS_HAL_GPU_HIP_H
#define XS_HAL_GPU_HIP_H

#include "hal/hip_api.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define XS_GPU_NAME        "hip"
#define XS_GPU_CREATE_NAME "HipQueueCreate"
#define XS_GPU_CREATE_FN   xs_hip_queue_create

/* Sets how many hardware queues the process spreads its streams over (default 4). */
#define XS_GPU_HWQ_ENV       "GPU_MAX_HW_QUEUES"
#define XS_GPU_HWQ_DEFAULT   4
#define XS_GPU_HWQ_CONFIG(c) ((c)->hip_hw_queues)
/* The counter and done words are 64 bits wide (hipStreamWaitValue64 compares unsigned
 * on the blit path and signed on the CP path: numbers stay below 2^63). */
#define XS_GPU_COUNTER_BITS 64
/* ROCm 5.2-6.x have no call that changes an existing stream's priority. */
#define XS_GPU_HAS_SET_PRIORITY 0
/* No MPS on AMD: the hardware scheduler runs the queues of several processes at once. */
#define XS_GPU_HAS_MPS_QUERY 0
#define XS_GPU_NOT_READY     hipErrorNotReady

typedef hipStream_t xs_gpu_stream;
typedef hipEvent_t xs_gpu_event;
typedef hipError_t xs_gpu_err;
#define XS_GPU_OK hipSuccess

/* The stream's device: what a library thread binds before touching the stream. */
typedef struct xs_gpu_binding {
	int device;
} xs_gpu_binding;

/* ---- runtime calls with the same shape in both runtimes ---- */
#define xs_gpu_err_name                  XS_HIP(hipGetErrorName)
#define xs_gpu_err_string                XS_HIP(hipGetErrorString)
#define xs_gpu_clear_error               XS_HIP(hipGetLastError)
#define XS_GPU_EVENT_DISABLE_TIMING      hipEventDisableTiming
#define xs_gpu_event_create              XS_HIP(hipEventCreateWithFlags)
#define xs_gpu_event_record              XS_HIP(hipEventRecord)
#define xs_gpu_event_destroy             XS_HIP(hipEventDestroy)
#define xs_gpu_stream_wait_event(s, e)   XS_HIP(hipStreamWaitEvent)(s, e, 0)
#define xs_gpu_stream_sync               XS_HIP(hipStreamSynchronize)
#define xs_gpu_stream_query              XS_HIP(hipStreamQuery)
#define xs_gpu_stream_get_flags          XS_HIP(hipStreamGetFlags)
#define XS_GPU_STREAM_NON_BLOCKING       hipStreamNonBlocking
#define xs_gpu_memcpy_async(d, s, n, st) XS_HIP(hipMemcpyAsync)(d, s, n, hipMemcpyDefault, st)
#define xs_gpu_memset_async              XS_HIP(hipMemsetAsync)
/* ROCm 5.2.3 declares hipLaunchHostFunc but its library does not export it:
 * hipStreamAddCallback, whose callback also holds back later work on the stream, stands
 * in. Its status argument is not used (a failed stream reports at the next completion
 * point). */
#define XS_GPU_HOST_FN_PARAMS                hipStream_t stream_, hipError_t status_, void *data
#define XS_GPU_HOST_FN_UNUSED()              ((void)stream_, (void)status_)
#define xs_gpu_launch_host_func(s, fn, d)    XS_HIP(hipStreamAddCallback)(s, fn, d, 0)
#define xs_gpu_host_get_device_pointer(d, h) XS_HIP(hipHostGetDevicePointer)(d, h, 0)

static inline xs_gpu_err xs_gpu_host_alloc_mapped(void **p, size_t n)
{
	return XS_HIP(hipHostMalloc)(
	    p, n, hipHostMallocMapped | hipHostMallocPortable | hipHostMallocCoherent);
}

static inline xs_gpu_err xs_gpu_launch_kernel(const void *func, XDim3 g, XDim3 b, void **args,
					      size_t shmem, xs_gpu_stream s,
					      const xs_gpu_binding *bind)
{
	(void)bind;
	dim3 gd = {g.x, g.y, g.z}, bd = {b.x, b.y, b.z};
	return XS_HIP(hipLaunchKernel)(func, gd, bd, args, shmem, s);
}

/* Whether @err says that the runtime is being torn down (process exit): nothing to report. */
static inline bool xs_gpu_err_is_shutdown(xs_gpu_err err)
{
	return err == hipErrorDeinitialized || err == hipErrorContextIsDestroyed;
}

/* The null stream, hipStreamPerThread, and 1 (hipStreamLegacy in later ROCm). */
static inline bool xs_gpu_is_default_stream(xs_gpu_stream s)
{
	return s == NULL || s == (hipStream_t)1 || s == hipStreamPerThread;
}

/* Open the runtime once and count the devices. On failure *why says what is missing. */
static inline xs_gpu_err xs_gpu_runtime_init(const char **why)
{
	static _Thread_local char msg[160]; /* the calling thread's: it logs *why at once */
	int n = 0;
	hipError_t err = xs_hip_load(why);
	if (err != hipSuccess)
		return err;
	err = XS_HIP(hipGetDeviceCount)(&n);
	if (err == hipSuccess && n == 0)
		err = hipErrorNoDevice;
	if (err != hipSuccess) {
		snprintf(msg, sizeof(msg), "hipGetDeviceCount: %s (%s)",
			 XS_HIP(hipGetErrorName)(err), XS_HIP(hipGetErrorString)(err));
		*why = msg;
	}
	return err;
}

static inline bool xs_gpu_err_is_no_driver(xs_gpu_err err)
{
	return err == hipErrorNoDevice || err == hipErrorInsufficientDriver ||
	       err == hipErrorNotInitialized;
}

static inline xs_gpu_err xs_gpu_stream_binding(xs_gpu_stream s, xs_gpu_binding *b)
{
	b->device = XS_HIP(hipGetStreamDeviceId)(s);
	return b->device >= 0 ? hipSuccess : hipErrorInvalidHandle;
}

static inline xs_gpu_err xs_gpu_current_binding(xs_gpu_binding *b)
{
	return XS_HIP(hipGetDevice)(&b->device);
}

static inline xs_gpu_err xs_gpu_bind(const xs_gpu_binding *b)
{
	return XS_HIP(hipSetDevice)(b->device);
}

static inline bool xs_gpu_same_binding(const xs_gpu_binding *a, const xs_gpu_binding *b)
{
	return a->device == b->device;
}

static inline xs_gpu_err xs_gpu_wait_value_supported(int *ok)
{
	int dev;
	hipError_t err = XS_HIP(hipGetDevice)(&dev);
	if (err == hipSuccess)
		err =
		    XS_HIP(hipDeviceGetAttribute)(ok, hipDeviceAttributeCanUseStreamWaitValue, dev);
	return err;
}

/* hipStreamWaitValue32/64 is, by default (GPU_STREAMOPS_CP_WAIT=0, ROCm 5.2-6.x), a
 * one-work-item kernel that spins on the word: a closed counter holds a wave and blocks
 * its HSA queue. With GPU_STREAMOPS_CP_WAIT=1 the command processor waits instead, but
 * only on memory from hipExtMallocWithFlags(hipMallocSignalMemory) (8 bytes; other memory
 * is refused with hipErrorInvalidValue, and the probe would drop to Lv1). Not run on AMD
 * hardware here. */
#define XS_GPU_WANTS_SIGNAL_MEMORY(c) ((c)->hip_cp_wait)
static inline xs_gpu_err xs_gpu_signal_alloc(void **p)
{
	return XS_HIP(hipExtMallocWithFlags)(p, 8, hipMallocSignalMemory);
}
static inline void xs_gpu_signal_free(void *p)
{
	if (p)
		(void)XS_HIP(hipFree)(p);
}

/* Pools of hardware queues: ROCclr keeps GPU_MAX_HW_QUEUES HSA queues per stream
 * priority (high, normal, low) and gives each new stream the least used queue of its
 * pool, for the stream's life; the null stream takes one of the normal pool. A stream
 * made with hipExtStreamCreateWithCUMask (a full mask) always gets a queue of its own
 * (ROCclr, rocm-6.x). */
#define XS_GPU_POOLS 3
#define XS_GPU_OWN_QUEUE_HINT                                                                      \
	"create such streams with hipExtStreamCreateWithCUMask and a full CU mask (a queue of "    \
	"their own), "
static inline int xs_gpu_stream_pool(xs_gpu_stream s)
{
	int p = 0;
	if (XS_HIP(hipStreamGetPriority)(s, &p) != hipSuccess)
		p = 0;
	return p < 0 ? 0 : p == 0 ? 1 : 2; /* lower numbers are higher priorities */
}
static inline int xs_gpu_pool_shared_with_null(int pool)
{
	return pool == 1;
}
static inline const char *xs_gpu_pool_name(int pool)
{
	return pool == 0 ? "high priority" : pool == 1 ? "normal priority" : "low priority";
}

/* Whether kernels are loaded at their first launch in a way that waits for the device's
 * streams: not known to on HIP (code objects load with the module). */
static inline bool xs_gpu_lazy_loading(void)
{
	return false;
}

/* Enqueue: the stream goes on once *dev_ptr >= value. */
static inline xs_gpu_err xs_gpu_wait_counter(xs_gpu_stream s, void *dev_ptr, uint64_t value)
{
	return XS_HIP(hipStreamWaitValue64)(s, dev_ptr, value, hipStreamWaitValueGte, ~UINT64_C(0));
}

/* Enqueue: write @value. */
static inline xs_gpu_err xs_gpu_write_done(xs_gpu_stream s, void *dev_ptr, uint64_t value)
{
	return XS_HIP(hipStreamWriteValue64)(s, dev_ptr, value, 0);
}

/* Enqueue: write @value to @done_ptr, then wait for @counter_ptr to reach @target (two
 * calls: ROCm 5 has no batch of memory operations). */
static inline xs_gpu_err xs_gpu_write_then_wait(xs_gpu_stream s, void *done_ptr, uint64_t value,
						void *counter_ptr, uint64_t target)
{
	xs_gpu_err err = xs_gpu_write_done(s, done_ptr, value);
	return err == XS_GPU_OK ? xs_gpu_wait_counter(s, counter_ptr, target) : err;
}

/* The UUID of the device of @b, its 16 bytes in hex, into @buf of @n bytes.
 * hipDeviceGetUuid is optional in the runtime's table (hip_api.h). */
static inline xs_gpu_err xs_gpu_device_uuid(const xs_gpu_binding *b, char *buf, size_t n)
{
	hipUUID u;
	if (!xs_hip.hipDeviceGetUuid)
		return hipErrorNotSupported;
	hipError_t err = xs_hip.hipDeviceGetUuid(&u, b->device);
	if (err != hipSuccess)
		return err;
	size_t k = 0;
	for (size_t i = 0; i < sizeof(u.bytes) && k + 3 <= n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%02x", (unsigned char)u.bytes[i]);
	return hipSuccess;
}

/* The key of a device for the engine: the device index. */
static inline uint64_t xs_gpu_binding_key(const xs_gpu_binding *b)
{
	return (uint64_t)b->device;
}

static inline xs_gpu_err xs_gpu_module_launch(const void *fn, XDim3 g, XDim3 b, size_t shmem,
					      xs_gpu_stream s, void **args)
{
	return XS_HIP(hipModuleLaunchKernel)((hipFunction_t)(uintptr_t)fn, g.x, g.y, g.z, b.x, b.y,
					     b.z, (unsigned int)shmem, s, args, NULL);
}

#endif
