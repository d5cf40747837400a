/* XResultLastMessage(): a failed call's reason in words, kept for the calling thread whether
 * logging is on or not, the same text as the call's log line; reading it clears it; a call
 * that succeeds leaves it; each thread has its own; a failure with no reason in words (a
 * command's own error, returned by XQueueWait) gives "" once the earlier reason was read. */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "core/log.h"
#include "log_capture.h"

/* The thread's reason must contain @want; prints both when it does not. */
#define CHECK_REASON(want)                                                                         \
	do {                                                                                       \
		const char *got_ = XResultLastMessage();                                           \
		if (!strstr(got_, (want))) {                                                       \
			fprintf(stderr,                                                            \
				"%s:%d: XResultLastMessage() is \"%s\", expected it to "           \
				"contain \"%s\"\n",                                                \
				__FILE__, __LINE__, got_, (want));                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* The thread's reason must be "". */
#define CHECK_NO_REASON() check_no_reason(__LINE__)
static void check_no_reason(int line)
{
	const char *got = XResultLastMessage();
	if (*got) {
		fprintf(stderr, "%s:%d: XResultLastMessage() is \"%s\", expected \"\"\n", __FILE__,
			line, got);
		exit(1);
	}
}

static XResult fail_fn(void *data)
{
	(void)data;
	return kXSchedErrorHardware;
}

/* Another thread: none of the main thread's reason; its own failure, its own reason. */
static void *other_thread(void *arg)
{
	(void)arg;
	CHECK_NO_REASON();
	CHECK_RES(XHintTimeslice(-5), kXSchedErrorInvalidValue);
	CHECK_REASON("XHintTimeslice: -5 us is outside");
	return NULL;
}

int main(void)
{
	xs_log_set_level(XS_LOG_OFF);
	CHECK_NO_REASON();
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	CHECK_NO_REASON(); /* success sets none */

	/* An argument out of range: its range, with logging off. */
	CHECK_RES(XHintPriority(xq, 1000), kXSchedErrorInvalidValue);
	CHECK_REASON("XHintPriority: 1000 is outside [-255, 255] and not PRIORITY_NO_EXECUTE");
	CHECK_NO_REASON(); /* read once */

	/* Kept across a call that succeeds. */
	CHECK_RES(XQueueSetLaunchConfig(xq, 2, 8), kXSchedErrorInvalidValue);
	CHECK_OK(XHintPriority(xq, 5));
	CHECK_REASON("XQueueSetLaunchConfig: threshold 2 is below batch size 8");

	/* An unknown handle; a level the HwQueue lacks; a command submitted twice; no GPU
	 * backend or a default stream. */
	CHECK_RES(XQueueWaitAll(0x1234), kXSchedErrorNotFound);
	CHECK_REASON("XQueueWaitAll: 0x1234 ");
	HwQueueHandle hwq2;
	XQueueHandle xq2;
	CHECK_OK(HostQueueCreate(&hwq2));
	CHECK_RES(XQueueCreate(&xq2, hwq2, kPreemptLevelInterrupt, 0), kXSchedErrorNotSupported);
	CHECK_REASON("XQueueCreate: the host HwQueue supports preemption levels up to");
	CHECK_OK(HwQueueDestroy(hwq2));
	int64_t us = 0;
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateHostFunc(&cmd, t_sleep_fn, &us));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_RES(XQueueSubmit(xq, cmd), kXSchedErrorNotAllowed);
	CHECK_REASON("XQueueSubmit: command 0x");
	CHECK_OK(XQueueWait(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
	HwQueueHandle gpu;
	XResult r = CudaQueueCreate(&gpu, NULL);
	CHECK(r == kXSchedErrorInvalidValue || r == kXSchedErrorNotSupported);
	CHECK_REASON("CudaQueueCreate: ");

	/* A command's own failure has no reason in words: "" once the last one was read. */
	CHECK_OK(HwCommandCreateHostFunc(&cmd, fail_fn, NULL));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_RES(XQueueWait(xq, cmd), kXSchedErrorHardware);
	CHECK_NO_REASON();
	CHECK_OK(HwCommandDestroy(cmd));

	/* Per thread. */
	CHECK_RES(XHintPriority(xq, -1000), kXSchedErrorInvalidValue);
	pthread_t th;
	CHECK(pthread_create(&th, NULL, other_thread, NULL) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_REASON("XHintPriority: -1000 is outside");

	/* The same text as the log line. */
	xs_log_set_level(XS_LOG_WARN);
	t_capture_begin();
	CHECK_RES(XHintPriority(xq, 999), kXSchedErrorInvalidValue);
	CHECK(t_capture_end("xsched[api] warn: ") == 1);
	char want[512];
	snprintf(want, sizeof(want), "xsched[api] warn: %s\n", XResultLastMessage());
	if (strcmp(t_captured, want)) {
		fprintf(stderr, "log line \"%s\", expected \"%s\"\n", t_captured, want);
		return 1;
	}
	xs_log_set_level(XS_LOG_OFF);

	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_OK(XSchedShutdown());
	printf("XResultLastMessage: reasons kept, read once, per thread, as logged\n");
	return 0;
}
