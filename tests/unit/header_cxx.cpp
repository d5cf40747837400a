// include/xsched.h compiles alone as C++ and links with C linkage.
#include "xsched.h"

int main()
{
	XQueueHandle xq = 0;
	return XQueueDestroy(xq) == kXSchedSuccess ? 0 : 1;
}
