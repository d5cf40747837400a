/* xsched-bench: stand-in for the CUDA workloads in builds without the CUDA backend. */
#include "bench.h"

bool xsb_cuda_built(void)
{
	return false;
}

int xsb_cuda_backend(struct xsb_backend *be, char *why, size_t whylen)
{
	(void)be;
	snprintf(why, whylen, "this build has no CUDA backend (meson found no CUDA toolkit)");
	return -1;
}
