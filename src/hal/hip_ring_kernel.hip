/* Device code of hip_ring.c: the kernel that tells which hardware queue ran it.
 *
 * Compiled by hipcc --genco for every configured offload arch into one code object
 * bundle, embedded into the library as a byte array (scripts/bin2c.py) and loaded with
 * hipModuleLoadData. Never linked into host code.
 */
#include <hip/hip_runtime.h>
#include <hsa/hsa.h>

#include <stddef.h>
#include <stdint.h>

static_assert(offsetof(hsa_queue_t, base_address) == 8, "hsa_queue_t layout");

/* One thread: write the ring buffer address of the HSA queue the command processor
 * dispatched this kernel from (what KFD reports as ring_base_address) to @out, which is
 * host-mapped memory. */
extern "C" __global__ void xs_hip_ring_read(uint64_t *out)
{
	const hsa_queue_t *q = (const hsa_queue_t *)__builtin_amdgcn_queue_ptr();

	out[0] = (uint64_t)(uintptr_t)q->base_address;
}
