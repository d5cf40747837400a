/* cwsr-probe: check and measure Lv3 (CWSR suspend/resume) on this machine.
 *
 * For a machine with an AMD GPU. It prints the KFD version, whether this
 * process can use the KFD debug trap, which KFD queue each HIP stream runs
 * on, the suspend and resume latency (call time, and the time until a
 * spinning kernel's progress counter stops or moves again), and whether a
 * non-idempotent kernel (atomic increments) preempted many times still gives
 * the exact result.
 *
 * Usage: cwsr-probe [device] [iterations]
 * Exit status: 0 all checks passed; 77 this machine cannot do Lv3 (the
 * reason is printed); 1 a check or a HIP call failed.
 *
 * Built by meson when hipcc is found; by hand, see doc/cwsr.md (this file with
 * hipcc, src/preempt/cwsr.c and src/core/log.c with the C compiler).
 */
#include <hip/hip_runtime.h>
#include <hsa/hsa.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

extern "C" {
#include "core/log.h" /* a C header without C++ guards */
}
#include "preempt/cwsr.h"

#define EXIT_SKIP 77

static volatile sig_atomic_t interrupted;
static xs_cwsr_queue *attached_queue; /* detached before any exit */

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void cleanup(void)
{
	xs_cwsr_detach(attached_queue); /* resumes first: never leave it suspended */
	attached_queue = NULL;
}

#define HIP_CHECK(call)                                                                            \
	do {                                                                                       \
		hipError_t e_ = (call);                                                            \
		if (e_ != hipSuccess) {                                                            \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,       \
				hipGetErrorString(e_));                                            \
			cleanup();                                                                 \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void sleep_us(double us)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(us / 1e6);
	ts.tv_nsec = (long)((us - (double)ts.tv_sec * 1e6) * 1e3);
	nanosleep(&ts, NULL);
}

/* The HSA queue the command processor dispatched this kernel from: its ring
 * buffer is the ring_base_address KFD knows the queue by. */
__global__ void read_queue(uint64_t *out)
{
	const hsa_queue_t *q = (const hsa_queue_t *)__builtin_amdgcn_queue_ptr();

	out[0] = (uint64_t)(uintptr_t)q->base_address;
	out[1] = q->size;
}

/* Runs until *stop; thread 0 of every block bumps *progress (host memory). */
__global__ void spin(unsigned long long *progress, const unsigned *stop)
{
	while (*(volatile const unsigned *)stop == 0) {
		if (threadIdx.x == 0)
			atomicAdd_system(progress, 1ull);
		__builtin_amdgcn_s_sleep(8);
	}
}

/* Non-idempotent: replayed or lost work changes the final count. */
__global__ void count(unsigned long long *counter, int iters, float *sink)
{
	float x = (float)threadIdx.x;
	int i, j;

	for (i = 0; i < iters; i++) {
		for (j = 0; j < 256; j++)
			x = x * 0.999f + 0.5f;
		atomicAdd(counter, 1ull);
	}
	if (x == -1.0f)
		*sink = x;
}

static bool get_stream_ring(hipStream_t s, uint64_t *ring, uint64_t *slots, uint64_t *host_buf)
{
	host_buf[0] = host_buf[1] = 0;
	hipLaunchKernelGGL(read_queue, dim3(1), dim3(1), 0, s, host_buf);
	HIP_CHECK(hipGetLastError());
	HIP_CHECK(hipStreamSynchronize(s));
	*ring = host_buf[0];
	*slots = host_buf[1];
	return *ring != 0;
}

struct stats {
	std::vector<double> v;
	void add(double x)
	{
		v.push_back(x);
	}
	void print(const char *name) const
	{
		std::vector<double> s = v;

		if (s.empty()) {
			printf("  %-34s no samples\n", name);
			return;
		}
		std::sort(s.begin(), s.end());
		printf("  %-34s min %9.1f  median %9.1f  max %9.1f us  (n=%zu)\n", name, s.front(),
		       s[s.size() / 2], s.back(), s.size());
	}
};

/* Wait until *p stops changing for @quiet_us; return when it last changed,
 * or a negative value if it never stops within @limit_us. */
static double wait_stopped(volatile unsigned long long *p, double quiet_us, double limit_us)
{
	double start = now_us(), last_change = start;
	unsigned long long v = *p;

	while (now_us() - start < limit_us) {
		unsigned long long w = *p;

		if (w != v) {
			v = w;
			last_change = now_us();
		} else if (now_us() - last_change >= quiet_us) {
			return last_change;
		}
	}
	return -1.0;
}

/* Wait until *p moves away from @v; return when, or negative on timeout. */
static double wait_moving(volatile unsigned long long *p, unsigned long long v, double limit_us)
{
	double start = now_us();

	while (now_us() - start < limit_us)
		if (*p != v)
			return now_us();
	return -1.0;
}

int main(int argc, char **argv)
{
	int device = argc > 1 ? atoi(argv[1]) : 0;
	int iterations = argc > 2 ? atoi(argv[2]) : 20;
	hipDeviceProp_t prop;
	hipStream_t lo, hi;
	uint64_t *qbuf;
	uint64_t ring_lo = 0, ring_hi = 0, slots = 0;
	uint32_t major = 0, minor = 0;
	XResult r;
	int failures = 0;

	if (iterations < 1)
		iterations = 1;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (!getenv("XSCHED_LOG"))
		xs_log_set_level(XS_LOG_INFO); /* show why Lv3 is unavailable */

	/* The HSA runtime must be up first: it enables KFD debug support at
	 * start-up, which SUSPEND/RESUME need. */
	{
		int n = 0;

		if (hipGetDeviceCount(&n) != hipSuccess || n == 0) {
			printf("no HIP device\nLv3: unavailable\n");
			return EXIT_SKIP;
		}
	}
	HIP_CHECK(hipSetDevice(device));
	HIP_CHECK(hipFree(0));
	HIP_CHECK(hipGetDeviceProperties(&prop, device));
	printf("device %d: %s (%s), %d CUs\n", device, prop.name, prop.gcnArchName,
	       prop.multiProcessorCount);
	{
		/* A code object runs only on its exact ISA (ROCr): without code for this GPU
		 * (MI300 is gfx942; the default build is gfx90a), skip rather than fail. */
		hipFuncAttributes fa;
		hipError_t e = hipFuncGetAttributes(&fa, reinterpret_cast<const void *>(spin));
		if (e != hipSuccess) {
			printf("this probe has no code for %s (%s); rebuild with "
			       "-Dhip_offload_arch=%s\nLv3: not checked\n",
			       prop.gcnArchName, hipGetErrorString(e), prop.gcnArchName);
			return EXIT_SKIP;
		}
	}
	printf("GPU_MAX_HW_QUEUES=%s\n", getenv("GPU_MAX_HW_QUEUES") ? getenv("GPU_MAX_HW_QUEUES")
								     : "(unset: 4 per priority)");

	if (xs_cwsr_kfd_version(&major, &minor) != kXSchedSuccess) {
		printf("KFD: cannot read the version\nLv3: unavailable\n");
		return EXIT_SKIP;
	}
	printf("KFD ioctl version: %u.%u (debugger API needs 1.13)\n", major, minor);
	r = xs_cwsr_probe();
	printf("KFD debug trap for this process: %s\n",
	       r == kXSchedSuccess ? "available" : "unavailable (reason above)");
	if (r != kXSchedSuccess)
		return EXIT_SKIP;

	/* ---- stream -> KFD queue mapping ---- */
	HIP_CHECK(hipHostMalloc((void **)&qbuf, 2 * sizeof(uint64_t), hipHostMallocCoherent));
	HIP_CHECK(hipStreamCreateWithFlags(&lo, hipStreamNonBlocking));
	HIP_CHECK(hipStreamCreateWithFlags(&hi, hipStreamNonBlocking));
	if (!get_stream_ring(lo, &ring_lo, &slots, qbuf) ||
	    !get_stream_ring(hi, &ring_hi, &slots, qbuf)) {
		printf("could not read the HSA queue of a stream\n");
		return 1;
	}
	printf("stream lo: HSA queue ring 0x%llx (%llu slots)\n", (unsigned long long)ring_lo,
	       (unsigned long long)slots);
	printf("stream hi: HSA queue ring 0x%llx\n", (unsigned long long)ring_hi);
	r = xs_cwsr_distinct_queues(ring_lo, ring_hi);
	if (r != kXSchedSuccess) {
		/* Sharing: suspending lo would also stop hi, and the test below would wait for
		 * hi for ever. */
		printf("the two streams are not two separate KFD compute queues (reason above); "
		       "raise GPU_MAX_HW_QUEUES, or create the streams with "
		       "hipExtStreamCreateWithCUMask and a full mask\nLv3: not checked\n");
		return EXIT_SKIP;
	}
	{
		xs_cwsr_queue_info info[64];
		size_t n = 0, i;

		if (xs_cwsr_list_queues(info, 64, &n) == kXSchedSuccess) {
			printf("KFD queues of this process: %zu\n", n);
			for (i = 0; i < n && i < 64; i++)
				printf("  queue %4u  gpu %5u  type %u  ring 0x%llx  %u bytes%s%s\n",
				       info[i].queue_id, info[i].gpu_id, info[i].queue_type,
				       (unsigned long long)info[i].ring_base_address,
				       info[i].ring_size,
				       info[i].ring_base_address == ring_lo ? "  <- stream lo" : "",
				       info[i].ring_base_address == ring_hi ? "  <- stream hi"
									    : "");
		}
	}
	r = xs_cwsr_attach(&attached_queue, ring_lo);
	if (r != kXSchedSuccess) {
		printf("attach to stream lo's queue failed (%s)\n", xs_result_name(r));
		return r == kXSchedErrorNotSupported ? EXIT_SKIP : 1;
	}
	printf("stream lo -> KFD queue %u\n", xs_cwsr_queue_id(attached_queue));

	/* ---- latency with a spinning kernel ---- */
	{
		unsigned long long *progress;
		unsigned *stop;
		stats call_s, stop_s, call_r, start_r, hi_s;
		int i, blocks = prop.multiProcessorCount * 2;
		hipEvent_t e0, e1;

		HIP_CHECK(
		    hipHostMalloc((void **)&progress, sizeof(*progress), hipHostMallocCoherent));
		HIP_CHECK(hipHostMalloc((void **)&stop, sizeof(*stop), hipHostMallocCoherent));
		HIP_CHECK(hipEventCreate(&e0));
		HIP_CHECK(hipEventCreate(&e1));
		*progress = 0;
		*stop = 0;
		hipLaunchKernelGGL(spin, dim3(blocks), dim3(256), 0, lo, progress, stop);
		HIP_CHECK(hipGetLastError());
		if (wait_moving(progress, 0, 5e6) < 0) {
			printf("the spinning kernel did not start within 5 s\n");
			failures++;
		}
		for (i = 0; i < iterations && !interrupted && failures == 0; i++) {
			double t0, t1, t_stop, t2, t3, t_move;
			unsigned long long v;
			float ms = 0;

			t0 = now_us();
			r = xs_cwsr_suspend(attached_queue);
			t1 = now_us();
			if (r != kXSchedSuccess) {
				printf("suspend failed (%s)\n", xs_result_name(r));
				failures++;
				break;
			}
			call_s.add(t1 - t0);
			t_stop = wait_stopped(progress, 20000, 2e6);
			if (t_stop < 0) {
				printf("progress kept moving for 2 s after suspend\n");
				failures++;
				break;
			}
			stop_s.add(std::max(t_stop - t0, 0.0));

			/* While lo is suspended, hi runs alone. */
			HIP_CHECK(hipEventRecord(e0, hi));
			hipLaunchKernelGGL(read_queue, dim3(1), dim3(1), 0, hi, qbuf);
			HIP_CHECK(hipEventRecord(e1, hi));
			HIP_CHECK(hipEventSynchronize(e1));
			HIP_CHECK(hipEventElapsedTime(&ms, e0, e1));
			hi_s.add((double)ms * 1000.0);

			v = *progress;
			t2 = now_us();
			r = xs_cwsr_resume(attached_queue);
			t3 = now_us();
			if (r != kXSchedSuccess) {
				printf("resume failed (%s)\n", xs_result_name(r));
				failures++;
				break;
			}
			call_r.add(t3 - t2);
			t_move = wait_moving(progress, v, 2e6);
			if (t_move < 0) {
				printf("progress did not move within 2 s after resume\n");
				failures++;
				break;
			}
			start_r.add(t_move - t2);
			sleep_us(5000);
		}
		*stop = 1;
		xs_cwsr_resume(attached_queue);
		HIP_CHECK(hipStreamSynchronize(lo));
		printf("latency over %zu suspend/resume cycles (grace period 0):\n",
		       call_s.v.size());
		call_s.print("suspend call");
		stop_s.print("suspend -> progress stopped");
		call_r.print("resume call");
		start_r.print("resume -> progress moving");
		hi_s.print("stream hi kernel while lo held");
		HIP_CHECK(hipEventDestroy(e0));
		HIP_CHECK(hipEventDestroy(e1));
		HIP_CHECK(hipHostFree(progress));
		HIP_CHECK(hipHostFree(stop));
	}

	/* ---- correctness of a preempted non-idempotent kernel ---- */
	if (!interrupted && failures == 0) {
		unsigned long long *counter, got = 0, expect;
		float *sink;
		int blocks = prop.multiProcessorCount * 4, threads = 256, iters = 64, preempts = 0;
		double t0, elapsed;

		HIP_CHECK(hipMalloc((void **)&counter, sizeof(*counter)));
		HIP_CHECK(hipMalloc((void **)&sink, sizeof(*sink)));
		/* Size the kernel to run for at least ~300 ms unpreempted. */
		for (;;) {
			HIP_CHECK(hipMemsetAsync(counter, 0, sizeof(*counter), lo));
			HIP_CHECK(hipStreamSynchronize(lo));
			t0 = now_us();
			hipLaunchKernelGGL(count, dim3(blocks), dim3(threads), 0, lo, counter,
					   iters, sink);
			HIP_CHECK(hipGetLastError());
			HIP_CHECK(hipStreamSynchronize(lo));
			elapsed = now_us() - t0;
			if (elapsed >= 300000 || iters >= (1 << 24))
				break;
			iters *= std::max(2, (int)(300000 / std::max(elapsed, 1.0)));
		}
		HIP_CHECK(hipMemsetAsync(counter, 0, sizeof(*counter), lo));
		HIP_CHECK(hipStreamSynchronize(lo));
		hipLaunchKernelGGL(count, dim3(blocks), dim3(threads), 0, lo, counter, iters, sink);
		HIP_CHECK(hipGetLastError());
		while (hipStreamQuery(lo) == hipErrorNotReady && !interrupted) {
			if (xs_cwsr_suspend(attached_queue) != kXSchedSuccess) {
				failures++;
				break;
			}
			sleep_us(2000);
			if (xs_cwsr_resume(attached_queue) != kXSchedSuccess) {
				failures++;
				break;
			}
			preempts++;
			sleep_us(3000);
		}
		xs_cwsr_resume(attached_queue);
		HIP_CHECK(hipStreamSynchronize(lo));
		HIP_CHECK(hipMemcpy(&got, counter, sizeof(got), hipMemcpyDeviceToHost));
		expect = (unsigned long long)blocks * (unsigned long long)threads *
			 (unsigned long long)iters;
		printf("preempted kernel (%.0f ms alone, %d suspend/resume cycles): count %llu, "
		       "expected %llu: %s\n",
		       elapsed / 1000.0, preempts, got, expect, got == expect ? "PASS" : "FAIL");
		if (got != expect || preempts == 0)
			failures++;
		HIP_CHECK(hipFree(counter));
		HIP_CHECK(hipFree(sink));
	}

	cleanup(); /* resume + DISABLE before the streams go away */
	HIP_CHECK(hipStreamDestroy(lo));
	HIP_CHECK(hipStreamDestroy(hi));
	HIP_CHECK(hipHostFree(qbuf));
	if (interrupted)
		printf("interrupted\n");
	printf("%s\n", failures == 0 && !interrupted ? "Lv3: OK" : "Lv3: FAILED");
	return failures == 0 && !interrupted ? 0 : 1;
}
