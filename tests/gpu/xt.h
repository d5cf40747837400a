/* Helpers shared by the GPU tests: skip without a device, streams, host-mapped memory,
 * and commands of the kernels of kernels.cu. Built once per runtime (XT_CUDA, XT_HIP). */
#ifndef XT_XT_H
#define XT_XT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "gpu_compat.h"
#include "xsched.h"

/* Meson's exit code for a skipped test. */
#define XT_SKIP 77

#define GPU_CHECK(expr)                                                                            \
	do {                                                                                       \
		gpuError_t e_ = (expr);                                                            \
		if (e_ != gpuSuccess) {                                                            \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr,       \
				gpuGetErrorString(e_));                                            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* Exit with XT_SKIP unless a device of this runtime is usable; print its name. */
void xt_require_gpu(void);

/* A new non-blocking stream on the current device. */
gpuStream_t xt_stream(void);

/* Wrap @s as a HwQueue (checks the call succeeds and the handle equals the stream). */
HwQueueHandle xt_hwq(gpuStream_t s);

/* Pinned host memory mapped into the device, zeroed; *dev gets its device address. */
void *xt_mapped(size_t bytes, void **dev);

/* Zero @bytes of device memory at @dev, finished when this returns. */
void xt_zero(void *dev, size_t bytes);

/* Device memory, zeroed. */
void *xt_dev(size_t bytes);

/* Timer ticks of the spin kernel for @ns nanoseconds. */
unsigned long long xt_ticks(unsigned long long ns);

/* A kernel command of xt_count (seq and log are device pointers; log may be null). */
HwCommandHandle xt_count_cmd(unsigned *seq, unsigned *log, unsigned idx);

/* A kernel command of xt_spin on @blocks blocks of 128 threads for @ns nanoseconds. */
HwCommandHandle xt_spin_cmd(unsigned long long ns, unsigned blocks, unsigned *seq, unsigned *log,
			    unsigned idx, unsigned *progress_dev);

/* Submit @cmd to @xq and drop the caller's handle. */
void xt_submit(XQueueHandle xq, HwCommandHandle cmd);

/* Read a host-mapped word written by the device. */
static inline unsigned xt_read(const unsigned *p)
{
	return *(const volatile unsigned *)p;
}

/* Copy @n words of device memory to the host and check that log[i] == i for all i (every
 * command ran once, in order) and that seq == n. */
void xt_check_log(const unsigned *seq_dev, const unsigned *log_dev, unsigned n);

/* Number of multiprocessors of the current device (to fill it with spin blocks). */
unsigned xt_sm_count(void);

#endif
