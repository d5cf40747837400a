/* HIP/CUDA name mapping for the GPU tests, examples and benchmarks: kernels.cu (built by
 * nvcc or hipcc) and the C test programs include it with XT_CUDA or XT_HIP defined. */
#ifndef XT_GPU_COMPAT_H
#define XT_GPU_COMPAT_H

#if defined(XT_HIP)
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#else
#include <hip/hip_runtime_api.h>
#endif
#define XT_RUNTIME      "hip"
#define XT_QUEUE_CREATE HipQueueCreate
/* A kernel command of a runtime function pointer (the library launches it with the HIP
 * runtime the program linked). */
#define XT_CREATE_KERNEL HwCommandCreateKernel
typedef hipError_t gpuError_t;
typedef hipStream_t gpuStream_t;
#define gpuSuccess                    hipSuccess
#define gpuGetErrorString             hipGetErrorString
#define gpuGetLastError               hipGetLastError
#define gpuGetDeviceCount             hipGetDeviceCount
#define gpuSetDevice                  hipSetDevice
#define gpuMalloc                     hipMalloc
#define gpuFree                       hipFree
#define gpuMemcpy                     hipMemcpy
#define gpuMemset                     hipMemset
#define gpuMemcpyDefault              hipMemcpyDefault
#define gpuStreamCreateWithFlags      hipStreamCreateWithFlags
#define gpuStreamNonBlocking          hipStreamNonBlocking
#define gpuStreamDestroy              hipStreamDestroy
#define gpuStreamSynchronize          hipStreamSynchronize
#define gpuDeviceSynchronize          hipDeviceSynchronize
#define gpuHostAllocMapped(p, n)      hipHostMalloc(p, n, hipHostMallocMapped | hipHostMallocCoherent)
#define gpuHostGetDevicePointer(d, h) hipHostGetDevicePointer(d, h, 0)
#define gpuFreeHost                   hipHostFree
#define gpuLaunchKernel               hipLaunchKernel
typedef hipDeviceProp_t gpuDeviceProp;
#define gpuGetDeviceProperties hipGetDeviceProperties
/* s_memrealtime (wall_clock64) runs at 100 MHz on gfx90a and later. */
#define XT_NS_PER_TICK 10
#else /* CUDA */
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#else
#include <cuda_runtime_api.h>
#endif
#define XT_RUNTIME                    "cuda"
#define XT_QUEUE_CREATE               CudaQueueCreate
/* A kernel command resolved by this program's CUDA runtime, static or shared (xsched.h,
 * included after this header). */
#define XT_CREATE_KERNEL              HwCommandCreateCudaKernel
typedef cudaError_t gpuError_t;
typedef cudaStream_t gpuStream_t;
#define gpuSuccess                    cudaSuccess
#define gpuGetErrorString             cudaGetErrorString
#define gpuGetLastError               cudaGetLastError
#define gpuGetDeviceCount             cudaGetDeviceCount
#define gpuSetDevice                  cudaSetDevice
#define gpuMalloc                     cudaMalloc
#define gpuFree                       cudaFree
#define gpuMemcpy                     cudaMemcpy
#define gpuMemset                     cudaMemset
#define gpuMemcpyDefault              cudaMemcpyDefault
#define gpuStreamCreateWithFlags      cudaStreamCreateWithFlags
#define gpuStreamNonBlocking          cudaStreamNonBlocking
#define gpuStreamDestroy              cudaStreamDestroy
#define gpuStreamSynchronize          cudaStreamSynchronize
#define gpuDeviceSynchronize          cudaDeviceSynchronize
#define gpuHostAllocMapped(p, n)      cudaHostAlloc(p, n, cudaHostAllocMapped)
#define gpuHostGetDevicePointer(d, h) cudaHostGetDevicePointer(d, h, 0)
#define gpuFreeHost                   cudaFreeHost
#define gpuLaunchKernel               cudaLaunchKernel
typedef struct cudaDeviceProp gpuDeviceProp;
#define gpuGetDeviceProperties        cudaGetDeviceProperties
/* %globaltimer counts nanoseconds. */
#define XT_NS_PER_TICK                1
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Host-side handles of the kernels of kernels.cu, for HwCommandCreateKernel() and
 * cudaLaunchKernel()/hipLaunchKernel(). */

/* xt_count(unsigned *seq, unsigned *log, unsigned idx), one thread:
 * pos = atomicAdd(seq, 1); if (log) log[pos] = idx. Not idempotent: a command run twice
 * or lost shows in seq, one run out of order in log. */
const void *xt_kernel_count(void);

/* xt_spin(unsigned long long ticks, unsigned *seq, unsigned *log, unsigned idx,
 *         unsigned *progress), any grid: every thread spins for @ticks timer ticks
 * (XT_NS_PER_TICK ns each); then thread 0 of block 0 does what xt_count does and, if
 * @progress (host-mapped) is not null, stores pos + 1 to it, visible to the host. */
const void *xt_kernel_spin(void);

/* xt_sgemm(int n, const float *A, const float *B, float *C): C = A * B, n x n, row-major;
 * 16 x 16 tiles: grid (n/16, n/16), block (16, 16); any n (edges are guarded). */
const void *xt_kernel_sgemm(void);

/* xt_affine(float *x, float a, float b, int n): x[i] = a * x[i] + b. */
const void *xt_kernel_affine(void);

#ifdef __cplusplus
}
#endif

#endif
