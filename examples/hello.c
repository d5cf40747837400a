/* The README's example: a high-priority and a low-priority XQueue on host queues. The
 * scheduler (HPF by default) holds the low queue back while the high one has work. */
#include <stdio.h>
#include <xsched.h>

static XResult work(void *name)
{
	printf("%s\n", (const char *)name);
	return kXSchedSuccess;
}

int main(void)
{
	HwQueueHandle hw_lo, hw_hi;
	XQueueHandle lo, hi;
	HwCommandHandle cmd;
	HostQueueCreate(&hw_lo);
	HostQueueCreate(&hw_hi);
	XQueueCreate(&lo, hw_lo, kPreemptLevelBlock, kQueueCreateFlagNone);
	XQueueCreate(&hi, hw_hi, kPreemptLevelBlock, kQueueCreateFlagNone);
	XHintPriority(hi, 10);
	HwCommandCreateHostFunc(&cmd, work, "high-priority command");
	XQueueSubmit(hi, cmd);
	XQueueWait(hi, cmd);
	HwCommandDestroy(cmd);
	XQueueDestroy(hi);
	XQueueDestroy(lo);
	HwQueueDestroy(hw_hi);
	HwQueueDestroy(hw_lo);
	return 0;
}
