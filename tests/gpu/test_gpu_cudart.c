/* Kernel commands whatever CUDA runtime the program uses (CUDA only). Built twice: with
 * the shared libcudart (as PyTorch loads it) and with nvcc's default static cudart
 * (XT_STATIC_CUDART). The library calls the driver only, so:
 * - HwCommandCreateCudaKernel() (xsched.h's helper, resolved by this program's runtime)
 *   runs in both;
 * - HwCommandCreateKernel() with a runtime function pointer runs with the shared runtime
 *   (the library asks it) and fails, with kXSchedErrorNotSupported at the wait and the
 *   queue still usable, with the static one (the library cannot reach it);
 * - the helper refuses a pointer that is no kernel, at create;
 * - HwCommandCreateResolvedKernel asks its resolver once for many commands of one kernel in
 *   one context (the driver gives context ids), and they run;
 * - the library loaded libcuda.so.1 and no libcudart of its own. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "xt.h"

static int has_lib(struct dl_phdr_info *info, size_t size, void *name)
{
	(void)size;
	return info->dlpi_name && strstr(info->dlpi_name, (const char *)name) != NULL;
}

static bool loaded(const char *name)
{
	return dl_iterate_phdr(has_lib, (void *)name) != 0;
}

static HwCommandHandle count_cmd(bool helper, unsigned *seq)
{
	unsigned *log = NULL, idx = 0;
	void *args[] = {&seq, &log, &idx};
	size_t sizes[] = {sizeof(seq), sizeof(log), sizeof(idx)};
	XDim3 one = {1, 1, 1};
	HwCommandHandle cmd;
	if (helper)
		CHECK_OK(HwCommandCreateCudaKernel(&cmd, xt_kernel_count(), one, one, 0, args,
						   sizes, 3));
	else
		CHECK_OK(
		    HwCommandCreateKernel(&cmd, xt_kernel_count(), one, one, 0, args, sizes, 3));
	return cmd;
}

/* Submit and wait for one xt_count command; return its result. */
static XResult run(XQueueHandle xq, bool helper, unsigned *seq)
{
	HwCommandHandle cmd = count_cmd(helper, seq);
	CHECK_OK(XQueueSubmit(xq, cmd));
	XResult res = XQueueWait(xq, cmd);
	CHECK_OK(HwCommandDestroy(cmd));
	return res;
}

/* A resolver that counts its calls: xsched.h's wrapper of the program's
 * cudaGetFuncBySymbol. */
static int g_resolves;

static int counting_resolver(void **fn, const void *func)
{
	g_resolves++;
	return xsched__cuda_resolve(fn, func);
}

static unsigned read_seq(const unsigned *seq_dev)
{
	unsigned v = 0;
	GPU_CHECK(cudaMemcpy(&v, seq_dev, sizeof(v), cudaMemcpyDefault));
	return v;
}

int main(void)
{
	xt_require_gpu();
	gpuStream_t s = xt_stream();
	HwQueueHandle hwq = xt_hwq(s);
	CHECK(loaded("libcuda.so"));
	XQueueHandle xq;
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, kQueueCreateFlagNone));
	unsigned *seq = xt_dev(sizeof(unsigned));

	/* The helper works with either runtime. */
	CHECK_OK(run(xq, true, seq));
	CHECK(read_seq(seq) == 1);

	/* A runtime function pointer given to the library. */
	XResult plain = run(xq, false, seq);
#if defined(XT_STATIC_CUDART)
	CHECK(!loaded("libcudart"));
	CHECK_RES(plain, kXSchedErrorNotSupported);
	CHECK(read_seq(seq) == 1);
#else
	CHECK(loaded("libcudart"));
	CHECK_OK(plain);
	CHECK(read_seq(seq) == 2);
#endif
	/* The queue is still usable, and a second plain launch uses the cache. */
	CHECK_OK(run(xq, true, seq));
#if !defined(XT_STATIC_CUDART)
	CHECK_OK(run(xq, false, seq));
	CHECK(read_seq(seq) == 4);
#else
	CHECK(read_seq(seq) == 2);
#endif

	/* Many commands of one kernel do not ask the resolver each time (the cache holds the
	 * helper's entry for this kernel and context: 0 calls; without context ids, 20). */
	unsigned before = read_seq(seq);
	HwCommandHandle last = 0;
	for (int i = 0; i < 20; i++) {
		unsigned *log = NULL, idx = 0;
		void *args[] = {&seq, &log, &idx};
		size_t sizes[] = {sizeof(seq), sizeof(log), sizeof(idx)};
		XDim3 one1 = {1, 1, 1};
		HwCommandHandle cmd;
		CHECK_OK(HwCommandCreateResolvedKernel(&cmd, xt_kernel_count(), counting_resolver,
						       one1, one1, 0, args, sizes, 3));
		CHECK_OK(XQueueSubmit(xq, cmd));
		if (last)
			CHECK_OK(HwCommandDestroy(last));
		last = cmd;
	}
	/* Its own result (XQueueWaitAll would report the plain launch's failure above, with the
	 * static runtime). */
	CHECK_OK(XQueueWait(xq, last));
	CHECK_OK(HwCommandDestroy(last));
	CHECK(read_seq(seq) == before + 20);
	CHECK(g_resolves <= 1);

	/* The helper refuses what is no kernel, now, and leaves no runtime error behind. */
	XDim3 one = {1, 1, 1};
	HwCommandHandle bad = 0;
	static int not_a_kernel;
	CHECK_RES(HwCommandCreateCudaKernel(&bad, &not_a_kernel, one, one, 0, NULL, NULL, 0),
		  kXSchedErrorInvalidValue);
	CHECK(bad == 0);
	CHECK(cudaGetLastError() == cudaSuccess);

	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	GPU_CHECK(cudaFree(seq));
	GPU_CHECK(cudaStreamDestroy(s));
	printf("ok (%s cudart)\n",
#if defined(XT_STATIC_CUDART)
	       "static"
#else
	       "shared"
#endif
	);
	return 0;
}
