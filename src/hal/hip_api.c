/* The HIP runtime's entry points, loaded at run time (hip_api.h). */
#include "hal/hip_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Kept loose: the table is the module's interface (every call goes through XS_HIP), not
 * its private state. Written once, by xs__hip_open(). */
xs_hip_api xs_hip;

/* The loader's state, written once by xs__hip_open() under xs__hip_once (which orders the
 * writes before every reader's return from pthread_once). */
static struct xs__hip_loader {
	hipError_t status; /* hipSuccess: the runtime is open and xs_hip filled */
	char why[256];     /* why not, when not */
	void *lib;         /* the runtime's handle: never closed */
} xs__hl;
static pthread_once_t xs__hip_once = PTHREAD_ONCE_INIT;

#define XS_HIP_STR2(x) #x
#define XS_HIP_STR(x)  XS_HIP_STR2(x)

static void *xs__sym(const char *name)
{
	return dlsym(xs__hl.lib, name);
}

static void xs__hip_open(void)
{
	static const char *const libs[] = {"libamdhip64.so.6", "libamdhip64.so.5",
					   "libamdhip64.so"};
	char tried[192] = "";
	/* The runtime the application loaded first: a second one in the process would not
	 * know its streams. */
	for (size_t i = 0; !xs__hl.lib && i < sizeof(libs) / sizeof(libs[0]); i++)
		xs__hl.lib = dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD);
	for (size_t i = 0; !xs__hl.lib && i < sizeof(libs) / sizeof(libs[0]); i++) {
		xs__hl.lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
		if (!xs__hl.lib && i == 0) {
			const char *e = dlerror();
			snprintf(tried, sizeof(tried), "%s", e ? e : libs[i]);
		}
	}
	if (!xs__hl.lib) {
		snprintf(xs__hl.why, sizeof(xs__hl.why), "no HIP runtime (libamdhip64.so.6/.5): %s",
			 tried);
		xs__hl.status = hipErrorNotInitialized;
		return;
	}
#define XS_HIP_LOOK(f)                                                                             \
	if (xs__hl.status == hipSuccess && !(*(void **)&xs_hip.f = xs__sym(XS_HIP_STR(f)))) {      \
		snprintf(xs__hl.why, sizeof(xs__hl.why), "the HIP runtime has no %s",              \
			 XS_HIP_STR(f));                                                           \
		xs__hl.status = hipErrorNotInitialized;                                            \
	}
	XS_HIP_CALLS(XS_HIP_LOOK)
#undef XS_HIP_LOOK
	if (xs__hl.status != hipSuccess) {
		memset(&xs_hip, 0, sizeof(xs_hip));
		return;
	}
	/* Headers that define the old structure name it hipGetDeviceProperties; ROCm 6
	 * keeps that structure's call as hipGetDevicePropertiesR0000. */
	const char *props = XS_HIP_STR(hipGetDeviceProperties);
	if (!strcmp(props, "hipGetDeviceProperties"))
		*(void **)&xs_hip.hipGetDeviceProperties = xs__sym("hipGetDevicePropertiesR0000");
	if (!xs_hip.hipGetDeviceProperties)
		*(void **)&xs_hip.hipGetDeviceProperties = xs__sym(props);
	*(void **)&xs_hip.hipDeviceGetUuid = xs__sym("hipDeviceGetUuid");
}

hipError_t xs_hip_load(const char **why)
{
	pthread_once(&xs__hip_once, xs__hip_open);
	*why = xs__hl.status != hipSuccess ? xs__hl.why : NULL;
	return xs__hl.status;
}

void *xs_hip_library(void)
{
	return xs__hl.status == hipSuccess ? xs__hl.lib : NULL;
}
