/* XSched's include path "xsched/cuda/hal.h" (XpuOS/xsched), so that a program written for
 * XSched builds unchanged: CudaQueueCreate() is declared in libxsched's one header,
 * xsched.h, with the stream as `void *` (a CUstream or cudaStream_t converts); this file
 * adds what XSched's CUDA header has beside it (doc/migration.md). */
#ifndef XSCHED_CUDA_HAL_H
#define XSCHED_CUDA_HAL_H

#include "../../xsched.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The driver's stream type, as XSched's header and cuda.h both declare it (a repeated
 * typedef is valid in C++ and C11 only). */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L)
typedef struct CUstream_st *CUstream;
#endif

/**
 * @brief XSched's CudaQueueGet: the HwQueue that wraps @p stream.
 *
 * A HwQueue made by CudaQueueCreate() has the stream's address as its handle; this asks
 * whether that handle is a live HwQueue.
 *
 * @param hwq    [out] The HwQueue (equal to @p stream) when there is one.
 * @param stream [in]  A CUstream/cudaStream_t.
 * @return kXSchedSuccess; kXSchedErrorInvalidValue if @p hwq is null;
 *         kXSchedErrorNotFound if no HwQueue wraps @p stream.
 * Thread-safety: any thread.
 */
static inline XResult CudaQueueGet(HwQueueHandle *hwq, void *stream)
{
	int64_t level;
	XResult res;
	if (!hwq)
		return kXSchedErrorInvalidValue;
	res = HwQueueGetMaxPreemptLevel((HwQueueHandle)(uintptr_t)stream, &level);
	if (res == kXSchedSuccess)
		*hwq = (HwQueueHandle)(uintptr_t)stream;
	return res;
}

#ifdef __cplusplus
}
#endif

#endif /* XSCHED_CUDA_HAL_H */
