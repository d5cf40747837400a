/* xsched-bench: the benchmark's own CUDA kernels, with C entry points.
 *
 * Each entry point launches on the stream it is given and returns the launch's
 * cudaError_t (as an int), so that the C code (cuda.c) and the launch callbacks the
 * library calls need no CUDA compiler. %globaltimer is the GPU's nanosecond clock.
 */
#include <cuda_runtime.h>
#include <stdint.h>

static __device__ __forceinline__ uint64_t xsb_globaltimer(void)
{
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Every block spins for @ns from its own start. Launched with one full wave of blocks
 * that take every thread slot of every SM, so nothing else can start until it ends. */
__global__ void xsb_spin_kernel(uint64_t ns)
{
	uint64_t t0 = xsb_globaltimer();
	while (xsb_globaltimer() - t0 < ns) {
	}
}

/* One block: writes its start time to @out (mapped host memory). */
__global__ void xsb_stamp_kernel(volatile uint64_t *out)
{
	if (threadIdx.x == 0) {
		*out = xsb_globaltimer();
		__threadfence_system();
	}
}

/* Waits (at most 1 s) until the host sets @flag, then writes the time to @out. */
__global__ void xsb_calib_kernel(volatile uint32_t *flag, volatile uint64_t *out)
{
	uint64_t t0 = xsb_globaltimer();
	while (*flag == 0 && xsb_globaltimer() - t0 < 1000000000ull) {
	}
	*out = xsb_globaltimer();
	__threadfence_system();
}

/* Memory-bound: out[i] = 2 * in[i] + 1 over @n4 float4s, one float4 per thread, so that
 * the kernel moves 32 bytes per thread and computes next to nothing. */
__global__ void xsb_stream_kernel(const float4 *in, float4 *out, unsigned n4)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n4) {
		float4 v = in[i];
		out[i] = make_float4(2.0f * v.x + 1.0f, 2.0f * v.y + 1.0f, 2.0f * v.z + 1.0f,
				     2.0f * v.w + 1.0f);
	}
}

/* Fills @p with values in [-1, 1) from a hash of the index: GEMMs never run on zeros. */
__global__ void xsb_fill_kernel(float *p, size_t n, uint32_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint32_t x = (uint32_t)i * 2654435761u ^ seed;
		x ^= x >> 16;
		x *= 0x7feb352du;
		x ^= x >> 15;
		x *= 0x846ca68bu;
		x ^= x >> 16;
		p[i] = (float)(x >> 8) / 8388608.0f - 1.0f;
	}
}

extern "C" int xsb_k_spin(void *stream, uint64_t ns, unsigned grid, unsigned block)
{
	xsb_spin_kernel<<<grid, block, 0, (cudaStream_t)stream>>>(ns);
	return (int)cudaGetLastError();
}

/* The streaming kernel's launch shape for @n floats (a multiple of 4). */
extern "C" void xsb_k_stream_shape(size_t n, unsigned *grid, unsigned *block, unsigned *n4)
{
	*n4 = (unsigned)(n / 4);
	*block = 256;
	*grid = (*n4 + 255) / 256;
}

extern "C" int xsb_k_stream(void *stream, const float *in, float *out, size_t n)
{
	unsigned grid, block, n4;
	xsb_k_stream_shape(n, &grid, &block, &n4);
	xsb_stream_kernel<<<grid, block, 0, (cudaStream_t)stream>>>((const float4 *)in,
								    (float4 *)out, n4);
	return (int)cudaGetLastError();
}

/* The streaming kernel's host-side handle, for HwCommandCreateKernel(). */
extern "C" const void *xsb_k_stream_func(void)
{
	return (const void *)xsb_stream_kernel;
}

extern "C" int xsb_k_stamp(void *stream, uint64_t *out)
{
	xsb_stamp_kernel<<<1, 32, 0, (cudaStream_t)stream>>>(out);
	return (int)cudaGetLastError();
}

extern "C" int xsb_k_calib(void *stream, uint32_t *flag, uint64_t *out)
{
	xsb_calib_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(flag, out);
	return (int)cudaGetLastError();
}

extern "C" int xsb_k_fill(void *stream, float *p, size_t n, uint32_t seed)
{
	xsb_fill_kernel<<<1024, 256, 0, (cudaStream_t)stream>>>(p, n, seed);
	return (int)cudaGetLastError();
}
