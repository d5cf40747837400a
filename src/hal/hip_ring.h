/* From a HIP stream to its hardware queue (HIP builds only).
 *
 * KFD knows a user-mode queue by its ring buffer address (hsa_queue_t.base_address, which
 * GET_QUEUE_SNAPSHOT reports as ring_base_address); HIP has no call that returns a
 * stream's HSA queue. This asks the GPU instead (doc/cwsr.md, "Ask the GPU"): a one-thread
 * kernel launched on the stream reads the queue the command processor dispatched it from
 * and writes that queue's ring address to host-mapped memory. The kernel is built by
 * hipcc for the configured offload archs (meson option hip_offload_arch) and embedded in
 * the library; it is loaded once per device with hipModuleLoadData.
 *
 * This header needs no HIP header; hip_ring.c is compiled with -D__HIP_PLATFORM_AMD__
 * against the ROCm headers.
 */
#ifndef XS_HAL_HIP_RING_H
#define XS_HAL_HIP_RING_H

#include <stdint.h>

#include "xsched.h"

/* Find the ring buffer address of the hardware queue behind @stream, for
 * xs_lv3_attach(). Meant for HipQueueCreate(), once per stream: it launches one
 * one-thread kernel on @stream and waits for it with hipStreamSynchronize(@stream) (that
 * stream only, never the device), so it returns only after everything the application
 * queued on @stream before has run. The first call on a device also loads the embedded
 * code object there (hipModuleLoadData), and the first call of the process allocates a
 * small host-mapped buffer that is never freed (hipHostFree would synchronise the whole
 * device).
 * @stream: a hipStream_t the application created, on the device current on this
 *          thread; not the null stream. Streams that share one hardware queue (more
 *          streams than GPU_MAX_HW_QUEUES) report the same address.
 * @ring:   out; the address, 0 on failure.
 * Returns kXSchedSuccess; kXSchedErrorInvalidValue (NULL argument, or the runtime
 * rejects the stream); kXSchedErrorNotSupported (no code object for this GPU: build with
 * -Dhip_offload_arch=<its gfx name>, or the runtime refuses the module);
 * kXSchedErrorHardware (a HIP call failed, or the kernel reported no queue);
 * kXSchedErrorUnknown (more devices than this file keeps modules for). Every failure
 * logs one warning, with the runtime's error string, saying Lv3 is unavailable for the
 * stream; the caller need not log again.
 * Thread-safety: any thread; calls are serialised by one process-wide lock, held across
 * the stream synchronisation. Not on a hot path. */
XResult xs_hip_stream_ring_base(void *stream, uint64_t *ring);

#endif
