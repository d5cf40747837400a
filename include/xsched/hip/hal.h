/* XSched's include path "xsched/hip/hal.h" (XpuOS/xsched), so that a program written for
 * XSched builds unchanged: HipQueueCreate() is declared in libxsched's one header,
 * xsched.h, with the stream as `void *` (a hipStream_t converts; doc/migration.md). */
#include "../../xsched.h"
