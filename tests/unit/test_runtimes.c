/* The library needs no GPU runtime: a program that uses host queues loads none (no
 * libcuda, libcudart, libamdhip64 or what ROCm brings with it, also not at start-up), and
 * on a machine without a driver or device CudaQueueCreate and HipQueueCreate return
 * kXSchedErrorNotSupported without touching the stream. On a machine with a usable
 * runtime the GPU part is skipped (a fake stream would be used there). */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "check.h"

static const char *const gpu_libs[] = {"libcuda.so",     "libcudart", "libamdhip64",
				       "libhsa-runtime", "libhsakmt", "libdrm_amdgpu",
				       "libhiprtc"};

static int find_lib(struct dl_phdr_info *info, size_t size, void *name)
{
	(void)size;
	return info->dlpi_name && strstr(info->dlpi_name, (const char *)name) != NULL;
}

static bool loaded(const char *name)
{
	return dl_iterate_phdr(find_lib, (void *)name) != 0;
}

static void check_none_loaded(const char *when)
{
	for (size_t i = 0; i < sizeof(gpu_libs) / sizeof(gpu_libs[0]); i++)
		if (loaded(gpu_libs[i])) {
			fprintf(stderr, "%s is loaded %s\n", gpu_libs[i], when);
			exit(1);
		}
}

static XResult note(void *data)
{
	*(int *)data = 1;
	return kXSchedSuccess;
}

static void host_work(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	HwCommandHandle cmd;
	int ran = 0;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelDeactivate, kQueueCreateFlagNone));
	CHECK_OK(HwCommandCreateHostFunc(&cmd, note, &ran));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(XQueueWait(xq, cmd));
	CHECK(ran == 1);
	CHECK_OK(HwCommandDestroy(cmd));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
}

#if defined(XS_HAVE_CUDA) || defined(XS_HAVE_HIP)
/* Whether this machine has a usable device of the runtime in @libs (loads it to ask:
 * call only after the library's own checks). @count names the device-count call. */
static bool usable(const char *const *libs, size_t n, const char *init, const char *count)
{
	void *h = NULL;
	for (size_t i = 0; !h && i < n; i++)
		h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return false;
	int (*init_fn)(unsigned) = NULL;
	int (*count_fn)(int *) = NULL;
	*(void **)&init_fn = init ? dlsym(h, init) : NULL;
	*(void **)&count_fn = dlsym(h, count);
	int devices = 0;
	if ((init && (!init_fn || init_fn(0) != 0)) || !count_fn || count_fn(&devices) != 0)
		return false;
	return devices > 0;
}
#endif

int main(void)
{
	check_none_loaded("at start-up");
	host_work();
	check_none_loaded("after host queues were used");

	/* Not a stream: never dereferenced, as no runtime is found before it would be. */
	void *fake = (void *)(uintptr_t)0x1000;
	HwQueueHandle hwq = 0;
#if defined(XS_HAVE_CUDA)
	static const char *const cuda[] = {"libcuda.so.1"};
	if (!loaded("libcuda.so") && !usable(cuda, 1, "cuInit", "cuDeviceGetCount")) {
		CHECK_RES(CudaQueueCreate(&hwq, fake), kXSchedErrorNotSupported);
		CHECK_RES(CudaQueueCreate(&hwq, fake), kXSchedErrorNotSupported); /* once */
	} else {
		printf("a CUDA device is usable here: CudaQueueCreate not tried\n");
	}
#else
	CHECK_RES(CudaQueueCreate(&hwq, fake), kXSchedErrorNotSupported);
#endif
#if defined(XS_HAVE_HIP)
	static const char *const hip[] = {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
	if (!usable(hip, 3, NULL, "hipGetDeviceCount"))
		CHECK_RES(HipQueueCreate(&hwq, fake), kXSchedErrorNotSupported);
	else
		printf("a HIP device is usable here: HipQueueCreate not tried\n");
#else
	CHECK_RES(HipQueueCreate(&hwq, fake), kXSchedErrorNotSupported);
#endif
	CHECK(hwq == 0);
	/* Host queues still work after a GPU runtime was looked for. */
	host_work();
	return 0;
}
