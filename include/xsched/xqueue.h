/* XSched's include path "xsched/xqueue.h" (XpuOS/xsched), so that a program written for
 * XSched builds unchanged: libxsched declares all of XSched's C API, and its own additions,
 * in one header, xsched.h (doc/migration.md). */
#include "../xsched.h"
