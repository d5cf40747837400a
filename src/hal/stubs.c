/* Creation calls of backends this build does not have. */
#include "core/log.h"
#include "hal/hal.h"

#ifndef XS_HAVE_CUDA
XResult CudaQueueCreate(HwQueueHandle *hwq, void *stream)
{
	(void)hwq;
	(void)stream;
	XS_WARN("hal", "CudaQueueCreate: this build of libxsched has no CUDA backend");
	return kXSchedErrorNotSupported;
}
#endif

#ifndef XS_HAVE_HIP
XResult HipQueueCreate(HwQueueHandle *hwq, void *stream)
{
	(void)hwq;
	(void)stream;
	XS_WARN("hal", "HipQueueCreate: this build of libxsched has no HIP backend");
	return kXSchedErrorNotSupported;
}
#endif
