/* Hooks for the unit tests only; not part of any layer's interface. */
#ifndef XS_PREEMPT_TESTING_H
#define XS_PREEMPT_TESTING_H

#include <stdint.h>

#include "xsched.h"

/* Attach the host queue @hwq to the KFD queue whose ring buffer starts at
 * @ring_base_address (the fake KFD's, installed with xs_cwsr_set_sys()) through lv3.c,
 * and raise its max level to kPreemptLevelInterrupt only when the whole probe and attach
 * passed; on failure it stays at 2 and one line is logged. Its HwQueueDestroy then
 * detaches it, resuming it first.
 * Returns kXSchedSuccess; kXSchedErrorNotFound (not a live HwQueue);
 * kXSchedErrorInvalidValue (not a host queue, or a zero address); kXSchedErrorNotAllowed
 * (already enabled, or another HwQueue uses that KFD queue); otherwise as xs_lv3_attach().
 * Thread-safety: right after HostQueueCreate(), before any XQueue exists on @hwq and while
 * no other thread uses it. */
XResult xs_host_queue_enable_lv3(HwQueueHandle hwq, uint64_t ring_base_address);

/* The wake-ups of the progress thread of @xq's device so far (device.c). */
struct xs_xqueue;
uint64_t xs_dev_wakeups(const struct xs_xqueue *xq);

#endif
