/* A handle of one kind passed where another belongs (all handles are uint64_t, so the
 * swap compiles): the call returns what the header promises for a handle that is not live
 * (kXSchedErrorNotFound) and logs one line that says what the handle is ("0x.. is a
 * HwQueue, not an XQueue"), for every pair of XQueue, HwQueue and command; a handle of no
 * object, or of one destroyed, is "not a live ...". With logging off nothing is printed
 * and the results are the same. */
#include <string.h>

#include "check.h"
#include "core/log.h"
#include "core/object.h"
#include "log_capture.h"

static XResult noop_fn(void *data)
{
	(void)data;
	return kXSchedSuccess;
}

/* @call returns @want and logs exactly one line under xsched[api], which holds
 * "<fn>: 0x<handle> <what>". */
#define EXPECT_LINE(call, want, fn, handle, what)                                                  \
	do {                                                                                       \
		char line_[256];                                                                   \
		snprintf(line_, sizeof(line_), "%s: 0x%llx %s", fn, (unsigned long long)(handle),  \
			 what);                                                                    \
		t_capture_begin();                                                                 \
		XResult r_ = (call);                                                               \
		int n_ = t_capture_end("xsched[api]");                                             \
		CHECK_RES(r_, want);                                                               \
		if (n_ != 1 || !strstr(t_captured, line_)) {                                       \
			fprintf(stderr, "%s: expected one line with \"%s\", got %d:\n%s", #call,   \
				line_, n_, t_captured);                                            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

int main(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq, out;
	HwCommandHandle cmd, rec, made;
	int64_t level;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, kQueueCreateFlagNone));
	CHECK_OK(HwCommandCreateHostFunc(&cmd, noop_fn, NULL));
	CHECK_OK(HwCommandCreateEventRecord(&rec));
	CHECK(xs_handle_kind(xq) == XS_KIND_XQUEUE && xs_handle_kind(hwq) == XS_KIND_HWQUEUE &&
	      xs_handle_kind(cmd) == XS_KIND_COMMAND && xs_handle_kind(0x1234) == XS_KIND_NONE &&
	      xs_handle_kind(0) == XS_KIND_NONE);

	const char *hw_not_xq = "is a HwQueue, not an XQueue";
	const char *cmd_not_xq = "is a command, not an XQueue";
	const char *xq_not_hw = "is an XQueue, not a HwQueue";
	const char *cmd_not_hw = "is a command, not a HwQueue";
	const char *xq_not_cmd = "is an XQueue, not a command";
	const char *hw_not_cmd = "is a HwQueue, not a command";

	xs_log_set_level(XS_LOG_WARN);
	/* Where an XQueue belongs. */
	EXPECT_LINE(XQueueSubmit(hwq, cmd), kXSchedErrorNotFound, "XQueueSubmit", hwq, hw_not_xq);
	EXPECT_LINE(XQueueSubmit(cmd, cmd), kXSchedErrorNotFound, "XQueueSubmit", cmd, cmd_not_xq);
	EXPECT_LINE(XQueueWaitAll(hwq), kXSchedErrorNotFound, "XQueueWaitAll", hwq, hw_not_xq);
	EXPECT_LINE(XQueueDestroy(hwq), kXSchedErrorNotFound, "XQueueDestroy", hwq, hw_not_xq);
	EXPECT_LINE(XQueueDestroy(cmd), kXSchedErrorNotFound, "XQueueDestroy", cmd, cmd_not_xq);
	EXPECT_LINE(XHintPriority(hwq, 1), kXSchedErrorNotFound, "XHintPriority", hwq, hw_not_xq);
	/* Where a HwQueue belongs. */
	EXPECT_LINE(XQueueCreate(&out, xq, kPreemptLevelBlock, kQueueCreateFlagNone),
		    kXSchedErrorNotFound, "XQueueCreate", xq, xq_not_hw);
	EXPECT_LINE(XQueueCreate(&out, cmd, kPreemptLevelBlock, kQueueCreateFlagNone),
		    kXSchedErrorNotFound, "XQueueCreate", cmd, cmd_not_hw);
	EXPECT_LINE(HwQueueDestroy(xq), kXSchedErrorNotFound, "HwQueueDestroy", xq, xq_not_hw);
	EXPECT_LINE(HwQueueGetMaxPreemptLevel(cmd, &level), kXSchedErrorNotFound,
		    "HwQueueGetMaxPreemptLevel", cmd, cmd_not_hw);
	EXPECT_LINE(XQueueGet(&out, xq), kXSchedErrorNotFound, "XQueueGet", xq, xq_not_hw);
	/* Where a command belongs. */
	EXPECT_LINE(XQueueSubmit(xq, hwq), kXSchedErrorNotFound, "XQueueSubmit", hwq, hw_not_cmd);
	EXPECT_LINE(XQueueSubmit(xq, xq), kXSchedErrorNotFound, "XQueueSubmit", xq, xq_not_cmd);
	EXPECT_LINE(XQueueWait(xq, hwq), kXSchedErrorNotFound, "XQueueWait", hwq, hw_not_cmd);
	EXPECT_LINE(HwCommandDestroy(xq), kXSchedErrorNotFound, "HwCommandDestroy", xq, xq_not_cmd);
	EXPECT_LINE(HwCommandCreateEventWait(&made, hwq), kXSchedErrorNotFound,
		    "HwCommandCreateEventWait", hwq, hw_not_cmd);
	/* A handle of no object, and one destroyed. */
	EXPECT_LINE(XQueueWaitAll(0x1234), kXSchedErrorNotFound, "XQueueWaitAll", 0x1234,
		    "is not a live XQueue");
	EXPECT_LINE(HwQueueDestroy(0x1234), kXSchedErrorNotFound, "HwQueueDestroy", 0x1234,
		    "is not a live HwQueue");
	HwCommandHandle gone;
	CHECK_OK(HwCommandCreateHostFunc(&gone, noop_fn, NULL));
	CHECK_OK(HwCommandDestroy(gone));
	EXPECT_LINE(HwCommandDestroy(gone), kXSchedErrorNotFound, "HwCommandDestroy", gone,
		    "is not a live command");

	/* Logging off: the same results, nothing printed. */
	xs_log_set_level(XS_LOG_OFF);
	t_capture_begin();
	CHECK_RES(XQueueSubmit(hwq, cmd), kXSchedErrorNotFound);
	CHECK_RES(HwQueueDestroy(xq), kXSchedErrorNotFound);
	CHECK_RES(HwCommandDestroy(xq), kXSchedErrorNotFound);
	CHECK(t_capture_end("xsched[") == 0);

	/* The swapped calls changed nothing: the objects work as before. */
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(XQueueWait(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
	CHECK_OK(HwCommandDestroy(rec));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	printf("handle kinds: swapped and dead handles are named in their log lines\n");
	return 0;
}
