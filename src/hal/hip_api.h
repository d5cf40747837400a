/* The HIP runtime, reached at run time (HIP builds only): every hip* call of gpu.c
 * (through gpu_hip.h) and hip_ring.c goes through the table xs_hip, filled by
 * xs_hip_load() from libamdhip64.so.6, .so.5 or .so (dlopen), the one already loaded
 * first. The library links nothing from ROCm: a program that makes no HIP queue never
 * loads it. A HIP application links libamdhip64 itself, so dlopen finds that same
 * instance, and the kernels and streams it registered are the ones these calls see.
 *
 * Compiled against the HIP headers (-D__HIP_PLATFORM_AMD__): each entry point is looked up
 * by the name the header gives it (ROCm 6 headers map some calls to versioned names,
 * e.g. hipGetDeviceProperties -> hipGetDevicePropertiesR0600, whose structure they define).
 */
#ifndef XS_HAL_HIP_API_H
#define XS_HAL_HIP_API_H

#include <hip/hip_runtime_api.h>

/* X(name): every HIP call the library makes. */
#define XS_HIP_CALLS(X)                                                                            \
	X(hipGetErrorName)                                                                         \
	X(hipGetErrorString)                                                                       \
	X(hipGetLastError)                                                                         \
	X(hipGetDeviceCount)                                                                       \
	X(hipGetDevice)                                                                            \
	X(hipSetDevice)                                                                            \
	X(hipDeviceGetAttribute)                                                                   \
	X(hipGetStreamDeviceId)                                                                    \
	X(hipEventCreateWithFlags)                                                                 \
	X(hipEventRecord)                                                                          \
	X(hipEventDestroy)                                                                         \
	X(hipStreamWaitEvent)                                                                      \
	X(hipStreamSynchronize)                                                                    \
	X(hipStreamQuery)                                                                          \
	X(hipStreamGetFlags)                                                                       \
	X(hipStreamGetPriority)                                                                    \
	X(hipStreamAddCallback)                                                                    \
	X(hipStreamWaitValue64)                                                                    \
	X(hipStreamWriteValue64)                                                                   \
	X(hipMemcpyAsync)                                                                          \
	X(hipMemsetAsync)                                                                          \
	X(hipHostMalloc)                                                                           \
	X(hipHostGetDevicePointer)                                                                 \
	X(hipExtMallocWithFlags)                                                                   \
	X(hipFree)                                                                                 \
	X(hipLaunchKernel)                                                                         \
	X(hipModuleLaunchKernel)                                                                   \
	X(hipModuleLoadData)                                                                       \
	X(hipModuleGetFunction)

/* Entry points, written once by xs_hip_load(); all set after it returned hipSuccess.
 * hipGetDeviceProperties (hip_ring.c only) may be null: a runtime without the structure
 * the headers define; so may hipDeviceGetUuid (a runtime without it: no board). */
typedef struct xs_hip_api {
#define XS_HIP_FIELD(f) __typeof__(f) *f;
	XS_HIP_CALLS(XS_HIP_FIELD)
#undef XS_HIP_FIELD
	__typeof__(hipGetDeviceProperties) *hipGetDeviceProperties;
	__typeof__(hipDeviceGetUuid) *hipDeviceGetUuid; /* may be null (the board's name) */
} xs_hip_api;

extern xs_hip_api xs_hip;

/* Open the HIP runtime and fill xs_hip, once per process (later calls return the first
 * result at once). On failure *why says what is missing (dlopen's message or the absent
 * entry point) and the result is hipErrorNotInitialized (no usable runtime).
 * Thread-safety: any thread. */
hipError_t xs_hip_load(const char **why);

/* The handle of the runtime xs_hip_load() opened (NULL before): hip_ring.c looks hiprtc up
 * there (ROCm 5.2 exports it from libamdhip64). */
void *xs_hip_library(void);

/* Call @f through the table: XS_HIP(hipGetDevice)(&dev). */
#define XS_HIP(f) (xs_hip.f)

#endif
