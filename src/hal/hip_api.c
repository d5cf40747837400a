/* The HIP runtime's entry points, loaded at run time (hip_api.h). */
#include "hal/hip_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

xs_hip_api xs_hip;

static pthread_once_t hip_once = PTHREAD_ONCE_INIT;
static hipError_t hip_status; /* written once under hip_once */
static char hip_why[256];
static void *hip_lib;

#define XS_HIP_STR2(x) #x
#define XS_HIP_STR(x)  XS_HIP_STR2(x)

static void *sym(const char *name)
{
	return dlsym(hip_lib, name);
}

static void hip_open(void)
{
	static const char *const libs[] = {"libamdhip64.so.6", "libamdhip64.so.5",
					   "libamdhip64.so"};
	char tried[192] = "";
	/* The runtime the application loaded first: a second one in the process would not
	 * know its streams. */
	for (size_t i = 0; !hip_lib && i < sizeof(libs) / sizeof(libs[0]); i++)
		hip_lib = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
	for (size_t i = 0; !hip_lib && i < sizeof(libs) / sizeof(libs[0]); i++) {
		hip_lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
		if (!hip_lib && i == 0) {
			const char *e = dlerror();
			snprintf(tried, sizeof(tried), "%s", e ? e : libs[i]);
		}
	}
	if (!hip_lib) {
		snprintf(hip_why, sizeof(hip_why), "no HIP runtime (libamdhip64.so.6/.5): %s",
			 tried);
		hip_status = hipErrorNotInitialized;
		return;
	}
#define XS_HIP_LOOK(f)                                                                             \
	if (hip_status == hipSuccess && !(*(void **)&xs_hip.f = sym(XS_HIP_STR(f)))) {             \
		snprintf(hip_why, sizeof(hip_why), "the HIP runtime has no %s", XS_HIP_STR(f));    \
		hip_status = hipErrorNotInitialized;                                               \
	}
	XS_HIP_CALLS(XS_HIP_LOOK)
#undef XS_HIP_LOOK
	if (hip_status != hipSuccess) {
		memset(&xs_hip, 0, sizeof(xs_hip));
		return;
	}
	/* Headers that define the old structure name it hipGetDeviceProperties; ROCm 6
	 * keeps that structure's call as hipGetDevicePropertiesR0000. */
	const char *props = XS_HIP_STR(hipGetDeviceProperties);
	if (!strcmp(props, "hipGetDeviceProperties"))
		*(void **)&xs_hip.hipGetDeviceProperties = sym("hipGetDevicePropertiesR0000");
	if (!xs_hip.hipGetDeviceProperties)
		*(void **)&xs_hip.hipGetDeviceProperties = sym(props);
	*(void **)&xs_hip.hipDeviceGetUuid = sym("hipDeviceGetUuid");
}

hipError_t xs_hip_load(const char **why)
{
	pthread_once(&hip_once, hip_open);
	*why = hip_status != hipSuccess ? hip_why : NULL;
	return hip_status;
}

void *xs_hip_library(void)
{
	return hip_status == hipSuccess ? hip_lib : NULL;
}
