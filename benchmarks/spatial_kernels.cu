// Kernels of benchmarks/spatial.c, built by nvcc into a fatbin that the program loads
// context-independently (cuLibraryLoadData), so that one kernel runs on a stream of the
// primary context and on a stream of a green context alike. extern "C": the program finds
// them by these names (cuLibraryGetKernel).

// y = a * x + b * y over n4 float4 elements, one per thread: a streaming kernel (12 bytes
// moved per float).
extern "C" __global__ void sp_axpby(const float4 *x, float4 *y, float a, float b,
				    unsigned long long n4)
{
	unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n4) {
		float4 u = x[i];
		float4 v = y[i];
		v.x = a * u.x + b * v.x;
		v.y = a * u.y + b * v.y;
		v.z = a * u.z + b * v.z;
		v.w = a * u.w + b * v.w;
		y[i] = v;
	}
}

#define SP_TILE    32
#define SP_ROWS    8 /* threads per block in y; each computes SP_TILE / SP_ROWS outputs */
#define SP_THREADS (SP_TILE * SP_ROWS)

// C = A * B, n x n, row-major, n a multiple of SP_TILE. Block (SP_TILE, SP_ROWS), grid
// (n / SP_TILE, n / SP_TILE): each block computes one 32 x 32 tile of C from 32 x 32 tiles
// of A and B in shared memory, each thread the four outputs of rows ty, ty + 8, ty + 16,
// ty + 24 in column tx.
extern "C" __global__ void __launch_bounds__(SP_THREADS)
    sp_sgemm(const float *A, const float *B, float *C, int n)
{
	__shared__ float as[SP_TILE][SP_TILE];
	__shared__ float bs[SP_TILE][SP_TILE];
	const int tx = threadIdx.x, ty = threadIdx.y;
	const int row0 = blockIdx.y * SP_TILE;
	const int col = blockIdx.x * SP_TILE + tx;
	float acc[SP_TILE / SP_ROWS] = {0.0f};
	for (int k0 = 0; k0 < n; k0 += SP_TILE) {
		for (int r = 0; r < SP_TILE / SP_ROWS; r++) {
			int rr = ty + r * SP_ROWS;
			as[rr][tx] = A[(size_t)(row0 + rr) * n + k0 + tx];
			bs[rr][tx] = B[(size_t)(k0 + rr) * n + col];
		}
		__syncthreads();
		for (int k = 0; k < SP_TILE; k++) {
			float b = bs[k][tx];
			for (int r = 0; r < SP_TILE / SP_ROWS; r++)
				acc[r] += as[ty + r * SP_ROWS][k] * b;
		}
		__syncthreads();
	}
	for (int r = 0; r < SP_TILE / SP_ROWS; r++)
		C[(size_t)(row0 + ty + r * SP_ROWS) * n + col] = acc[r];
}

// One block: adds 1 to *p (the switch-cost chain; the count checks that the two streams'
// kernels ran one after the other).
extern "C" __global__ void sp_tiny(int *p)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		p[0] += 1;
}
