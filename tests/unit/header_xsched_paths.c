/* XSched's include paths (include/xsched/...) compile as strict C99, each alone and all
 * together, in XSched's order (the build compiles this file once per header and once with
 * all). */
#ifdef XS_ONE_HEADER
#include XS_ONE_HEADER
#else
#include "xsched/xsched.h"
#include "xsched/types.h"
#include "xsched/xqueue.h"
#include "xsched/hint.h"
#include "xsched/cuda/hal.h"
#include "xsched/hip/hal.h"
#endif

int main(void)
{
	XDim3 d = {1, 1, 1};
	return (int)d.x - 1 + (int)kXSchedSuccess;
}
