// Kernels for the GPU tests and benchmarks; one source for nvcc (-DXT_CUDA) and hipcc
// (-DXT_HIP). C code reaches them through the getters declared in gpu_compat.h.
#include "gpu_compat.h"

__device__ static inline unsigned long long xt_timer(void)
{
#if defined(XT_HIP)
#if defined(__HIP_DEVICE_COMPILE__)
	return (unsigned long long)wall_clock64();
#else
	return 0; /* the host pass of hipcc parses device code too */
#endif
#else
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#endif
}

__device__ static inline void xt_append(unsigned *seq, unsigned *log, unsigned idx,
					unsigned *progress)
{
	unsigned pos = atomicAdd(seq, 1u);
	if (log)
		log[pos] = idx;
	if (progress) {
		__threadfence_system();
		*(volatile unsigned *)progress = pos + 1;
		__threadfence_system();
	}
}

__global__ void xt_count(unsigned *seq, unsigned *log, unsigned idx)
{
	xt_append(seq, log, idx, nullptr);
}

__global__ void xt_spin(unsigned long long ticks, unsigned *seq, unsigned *log, unsigned idx,
			unsigned *progress)
{
	unsigned long long t0 = xt_timer();
	while (xt_timer() - t0 < ticks)
		;
	if (blockIdx.x == 0 && threadIdx.x == 0)
		xt_append(seq, log, idx, progress);
}

#define XT_TILE 16

__global__ void xt_sgemm(int n, const float *A, const float *B, float *C)
{
	__shared__ float as[XT_TILE][XT_TILE];
	__shared__ float bs[XT_TILE][XT_TILE];
	int row = blockIdx.y * XT_TILE + threadIdx.y;
	int col = blockIdx.x * XT_TILE + threadIdx.x;
	float acc = 0.0f;
	for (int k0 = 0; k0 < n; k0 += XT_TILE) {
		int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
		as[threadIdx.y][threadIdx.x] = row < n && ka < n ? A[(size_t)row * n + ka] : 0.0f;
		bs[threadIdx.y][threadIdx.x] = kb < n && col < n ? B[(size_t)kb * n + col] : 0.0f;
		__syncthreads();
#pragma unroll
		for (int k = 0; k < XT_TILE; k++)
			acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		C[(size_t)row * n + col] = acc;
}

__global__ void xt_affine(float *x, float a, float b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = a * x[i] + b;
}

extern "C" const void *xt_kernel_count(void)
{
	return (const void *)xt_count;
}

extern "C" const void *xt_kernel_spin(void)
{
	return (const void *)xt_spin;
}

extern "C" const void *xt_kernel_sgemm(void)
{
	return (const void *)xt_sgemm;
}

extern "C" const void *xt_kernel_affine(void)
{
	return (const void *)xt_affine;
}
