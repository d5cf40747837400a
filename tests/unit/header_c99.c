/* include/xsched.h compiles alone as strict C99. */
#include "xsched.h"

int main(void)
{
	XDim3 d = {1, 1, 1};
	return (int)d.x - 1 + (int)kXSchedSuccess;
}
