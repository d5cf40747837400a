/* Creation calls of backends this build does not have. */
#include "core/log.h"
#include "hal/hal.h"

#ifndef XS_HAVE_CUDA
XResult xs_cuda_queue_create(void *stream, xs_hwq **out)
{
	(void)stream;
	(void)out;
	XS_FAIL("hal", "CudaQueueCreate: this build of libxsched has no CUDA backend");
	return kXSchedErrorNotSupported;
}

XResult xs_cuda_check_kernel(const void *func, int (*resolve)(void **, const void *))
{
	(void)func;
	(void)resolve;
	XS_FAIL("hal", "HwCommandCreateResolvedKernel: this build of libxsched has no CUDA "
		       "backend");
	return kXSchedErrorNotSupported;
}

void xs_cuda_forked(void)
{
}
#endif

#ifndef XS_HAVE_HIP
XResult xs_hip_queue_create(void *stream, xs_hwq **out)
{
	(void)stream;
	(void)out;
	XS_FAIL("hal", "HipQueueCreate: this build of libxsched has no HIP backend");
	return kXSchedErrorNotSupported;
}
#endif
