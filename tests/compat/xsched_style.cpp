// A program written for XSched's C API (XpuOS/xsched), in the style of its explicit-API
// examples: XSched's include paths, the scheduler chosen with XHintSetScheduler, one
// thread per priority submitting launch callbacks to an XQueue with launch config 8:4,
// manual XQueueSuspend/XQueueResume, XQueueWaitAll. It must build unchanged against
// libxsched's headers (tests/meson.build: the build tree; .ci/run: the installed headers
// through pkg-config) and run on any machine.
//
// Where XSched's examples wrap a cudaStream_t with CudaQueueCreate, a machine without a GPU
// has no stream to wrap: the queues here are host queues (HostQueueCreate, libxsched's own
// call), and the CUDA and HIP calls are made with typed stream pointers that the library
// must refuse, so that their declarations are compiled and linked as XSched's are.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "xsched/cuda/hal.h"
#include "xsched/hip/hal.h"
#include "xsched/xsched.h"

#define TASKS 20 // tasks per thread
#define OPS   8  // launch callbacks per task

struct CUstream_st;  // what cudaStream_t points to
struct ihipStream_t; // what hipStream_t points to

static std::atomic<int> ran[2];

static void expect(bool ok, const char *what)
{
	if (!ok) {
		std::fprintf(stderr, "xsched_style: %s\n", what);
		std::exit(1);
	}
}

static XResult launch(HwQueueHandle hwq, void *data)
{
	(void)hwq; // a CUDA program would enqueue its kernels on this stream
	ran[*static_cast<int *>(data)]++;
	return kXSchedSuccess;
}

static void run(int priority)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	static int index[2] = {0, 1};
	int *which = &index[priority - 1];

	expect(HostQueueCreate(&hwq) == kXSchedSuccess, "HostQueueCreate");
	expect(XQueueCreate(&xq, hwq, kPreemptLevelBlock, kQueueCreateFlagNone) == kXSchedSuccess,
	       "XQueueCreate");
	expect(XQueueSetLaunchConfig(xq, 8, 4) == kXSchedSuccess, "XQueueSetLaunchConfig");
	expect(XHintPriority(xq, priority) == kXSchedSuccess, "XHintPriority");

	for (int i = 0; i < TASKS; ++i) {
		for (int j = 0; j < OPS; ++j) {
			HwCommandHandle cmd;
			expect(HwCommandCreateCallback(&cmd, launch, which) == kXSchedSuccess,
			       "HwCommandCreateCallback");
			expect(XQueueSubmit(xq, cmd) == kXSchedSuccess, "XQueueSubmit");
			expect(HwCommandDestroy(cmd) == kXSchedSuccess, "HwCommandDestroy");
		}
		expect(XQueueWaitAll(xq) == kXSchedSuccess, "XQueueWaitAll");
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	expect(XQueueDestroy(xq) == kXSchedSuccess, "XQueueDestroy");
	expect(HwQueueDestroy(hwq) == kXSchedSuccess, "HwQueueDestroy");
}

// Manual scheduling, as XSched's manual example does it: a suspended XQueue runs nothing
// of what is submitted to it until it is resumed.
static void manual()
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	static int which = 0;
	expect(HostQueueCreate(&hwq) == kXSchedSuccess, "HostQueueCreate");
	expect(XQueueCreate(&xq, hwq, kPreemptLevelBlock, kQueueCreateFlagNone) == kXSchedSuccess,
	       "XQueueCreate");
	int before = ran[0];
	expect(XQueueSuspend(xq, 0) == kXSchedSuccess, "XQueueSuspend");
	HwCommandHandle cmd;
	expect(HwCommandCreateCallback(&cmd, launch, &which) == kXSchedSuccess,
	       "HwCommandCreateCallback");
	expect(XQueueSubmit(xq, cmd) == kXSchedSuccess, "XQueueSubmit");
	std::this_thread::sleep_for(std::chrono::milliseconds(50));
	expect(ran[0] == before, "a suspended XQueue ran a command");
	XQueueState state;
	expect(XQueueQuery(xq, &state) == kXSchedSuccess && state == kQueueStateReady,
	       "XQueueQuery: a suspended XQueue with a command is not ready");
	expect(XQueueResume(xq, 0) == kXSchedSuccess, "XQueueResume");
	expect(XQueueWait(xq, cmd) == kXSchedSuccess, "XQueueWait");
	expect(ran[0] == before + 1, "the resumed XQueue did not run its command");
	expect(HwCommandDestroy(cmd) == kXSchedSuccess, "HwCommandDestroy");
	expect(XQueueDestroy(xq) == kXSchedSuccess, "XQueueDestroy");
	expect(HwQueueDestroy(hwq) == kXSchedSuccess, "HwQueueDestroy");
}

int main()
{
	// The null (default) stream is refused, or the build has no such backend.
	HwQueueHandle hwq;
	CUstream_st *cuda_stream = nullptr;
	XResult res = CudaQueueCreate(&hwq, cuda_stream);
	expect(res == kXSchedErrorInvalidValue || res == kXSchedErrorNotSupported,
	       "CudaQueueCreate accepted the null stream");
	expect(CudaQueueGet(&hwq, cuda_stream) == kXSchedErrorNotFound,
	       "CudaQueueGet found a HwQueue for a stream nobody wrapped");
	ihipStream_t *hip_stream = nullptr;
	res = HipQueueCreate(&hwq, hip_stream);
	expect(res == kXSchedErrorInvalidValue || res == kXSchedErrorNotSupported,
	       "HipQueueCreate accepted the null stream");

	// set the scheduler and policy through the XHint API, rather than the environment
	expect(XHintSetScheduler(kSchedulerLocal, kPolicyHighestPriorityFirst) == kXSchedSuccess,
	       "XHintSetScheduler");
	std::thread high(run, 2);
	std::thread low(run, 1);
	high.join();
	low.join();
	expect(ran[0] == TASKS * OPS && ran[1] == TASKS * OPS, "a launch callback was lost");
	manual();
	std::printf("xsched_style: %d launch callbacks at priorities 1 and 2, and a manual "
		    "suspension, through XSched's headers\n",
		    ran[0] + ran[1]);
	return 0;
}
