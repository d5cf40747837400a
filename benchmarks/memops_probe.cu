// The cost of a tiny kernel's launch with and without the stream memory operations the
// engine puts around a command (doc/RESULTS.md, "Hot path"): a done mark
// (cuStreamWriteValue32), a counter wait (cuStreamWaitValue32), both batched into one
// cuStreamBatchMemOp, and marks every 8th launch. Host time per iteration and total time
// to completion, 20,000 one-block kernels per row, two rounds (the second is the one to
// read). Not built by meson (it needs the CUDA driver at link time); on a machine with a
// driver:
//
//   nvcc -O2 -o memops_probe benchmarks/memops_probe.cu -lcuda && ./memops_probe
//
// The counter word is set above every value waited for, so no wait ever blocks.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <stdint.h>
__global__ void tiny(int *p)
{
	if (threadIdx.x == 0 && p)
		p[blockIdx.x] += 1;
}
static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
#define N 20000

/* The mark of @value at @done, then a wait for @cnt >= @target: one batch of memory
 * operations. */
static void write_then_wait(CUstream s, CUdeviceptr done, uint32_t value, CUdeviceptr cnt,
			    uint32_t target)
{
	CUstreamBatchMemOpParams p[2] = {};
	p[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
	p[0].writeValue.address = done;
	p[0].writeValue.value = value;
	p[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
	p[1].waitValue.address = cnt;
	p[1].waitValue.value = target;
	p[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
	cuStreamBatchMemOp(s, 2, p, 0);
}
int main()
{
	cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync);
	cudaFree(0);
	cudaStream_t s;
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	uint32_t *host;
	cudaHostAlloc((void **)&host, 4096, cudaHostAllocMapped | cudaHostAllocPortable);
	host[0] = N + 10;
	host[1] = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	CUdeviceptr cnt, done;
	cudaHostGetDevicePointer((void **)&cnt, host, 0);
	done = cnt + 4;
	int *d;
	cudaMalloc(&d, 4096);
	CUfunction f;
	cudaGetFuncBySymbol(&f, (const void *)tiny);
	void *args[] = {&d};
	const char *names[] = {"raw cudaLaunchKernel",
			       "raw cuLaunchKernel",
			       "launch+write",
			       "wait+launch+write",
			       "batch(write n-1,wait n)+launch",
			       "launch+write every 8",
			       "wait+launch, write every 8",
			       "write only",
			       "wait only",
			       "batch(write,wait) only"};
	for (int round = 0; round < 2; round++)
		for (int m = 0; m < 10; m++) {
			cudaStreamSynchronize(s);
			double t0 = now_us();
			for (uint32_t i = 1; i <= N; i++) {
				switch (m) {
				case 0:
					cudaLaunchKernel((const void *)tiny, dim3(1), dim3(256),
							 args, 0, s);
					break;
				case 1:
					cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, (CUstream)s, args,
						       0);
					break;
				case 2:
					cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, (CUstream)s, args,
						       0);
					cuStreamWriteValue32((CUstream)s, done, i, 0);
					break;
				case 3:
					cuStreamWaitValue32((CUstream)s, cnt, i,
							    CU_STREAM_WAIT_VALUE_GEQ);
					cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, (CUstream)s, args,
						       0);
					cuStreamWriteValue32((CUstream)s, done, i, 0);
					break;
				case 4: {
					write_then_wait((CUstream)s, done, i - 1, cnt, i);
					cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, (CUstream)s, args,
						       0);
					break;
				}
				case 5:
					cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, (CUstream)s, args,
						       0);
					if (i % 8 == 0)
						cuStreamWriteValue32((CUstream)s, done, i, 0);
					break;
				case 6:
					cuStreamWaitValue32((CUstream)s, cnt, i,
							    CU_STREAM_WAIT_VALUE_GEQ);
					cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, (CUstream)s, args,
						       0);
					if (i % 8 == 0)
						cuStreamWriteValue32((CUstream)s, done, i, 0);
					break;
				case 7:
					cuStreamWriteValue32((CUstream)s, done, i, 0);
					break;
				case 8:
					cuStreamWaitValue32((CUstream)s, cnt, i,
							    CU_STREAM_WAIT_VALUE_GEQ);
					break;
				case 9: {
					write_then_wait((CUstream)s, done, i - 1, cnt, i);
					break;
				}
				}
			}
			double t1 = now_us();
			cudaStreamSynchronize(s);
			double t2 = now_us();
			cudaError_t e = cudaGetLastError();
			printf("round %d %-34s host %.2f us/iter, total %.2f us/iter %s\n", round,
			       names[m], (t1 - t0) / N, (t2 - t0) / N,
			       e ? cudaGetErrorString(e) : "");
		}
	return 0;
}
