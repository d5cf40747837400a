/* The part of the amdkfd user-space ABI that the Lv3 (CWSR) backend uses.
 *
 * Distribution kernel headers lag behind (Debian 12 ships KFD ioctl 1.11,
 * which has no debugger API), so the backend carries its own definitions of
 * the few structures it needs instead of including <linux/kfd_ioctl.h>.
 * Names carry an xs_/XS_ prefix so that this header never collides with a
 * newer system header included in the same translation unit.
 *
 * Layouts follow the upstream header include/uapi/linux/kfd_ioctl.h
 * (Linux 6.5+, "1.13 - Add debugger API"). Every structure has its size, and
 * the fields the backend reads have their offsets, checked at compile time
 * below. The request numbers are built with _IOR/_IOWR exactly as upstream
 * builds them; on x86-64 and arm64 they are also checked against the literal
 * values. Only the two requests defined here are ever issued: never add an
 * ioctl number that is not in the upstream header.
 */
#ifndef XS_PREEMPT_KFD_UAPI_H
#define XS_PREEMPT_KFD_UAPI_H

#include <stddef.h>

#include <linux/ioctl.h>
#include <linux/types.h>

/* The debugger API (AMDKFD_IOC_DBG_TRAP) exists from KFD ioctl 1.13 on. */
#define XS_KFD_MAJOR_REQUIRED 1
#define XS_KFD_MINOR_REQUIRED 13

#define XS_KFD_IOCTL_BASE 'K'

/* AMDKFD_IOC_GET_VERSION (nr 0x01). */
struct xs_kfd_get_version_args {
	__u32 major_version; /* from KFD */
	__u32 minor_version; /* from KFD */
};

/* Queue types reported in xs_kfd_queue_snapshot_entry.queue_type. */
#define XS_KFD_QUEUE_TYPE_COMPUTE     0x0
#define XS_KFD_QUEUE_TYPE_SDMA        0x1
#define XS_KFD_QUEUE_TYPE_COMPUTE_AQL 0x2
#define XS_KFD_QUEUE_TYPE_SDMA_XGMI   0x3

/* Exception codes (enum kfd_dbg_trap_exception_code); only the one we clear. */
#define XS_KFD_EC_QUEUE_NEW   31
#define XS_KFD_EC_MASK(ecode) (1ULL << ((ecode)-1))

/* Runtime state reported by ENABLE in xs_kfd_runtime_info.runtime_state. */
#define XS_KFD_RUNTIME_STATE_DISABLED      0
#define XS_KFD_RUNTIME_STATE_ENABLED       1
#define XS_KFD_RUNTIME_STATE_ENABLED_BUSY  2
#define XS_KFD_RUNTIME_STATE_ENABLED_ERROR 3

/* struct kfd_runtime_info: copied out by ENABLE. */
struct xs_kfd_runtime_info {
	__u64 r_debug;
	__u32 runtime_state;
	__u32 ttmp_setup;
};

/* struct kfd_queue_snapshot_entry: one element of GET_QUEUE_SNAPSHOT. */
struct xs_kfd_queue_snapshot_entry {
	__u64 exception_status;
	__u64 ring_base_address;
	__u64 write_pointer_address;
	__u64 read_pointer_address;
	__u64 ctx_save_restore_address;
	__u32 queue_id;
	__u32 gpu_id;
	__u32 ring_size;
	__u32 queue_type;
	__u32 ctx_save_restore_area_size;
	__u32 reserved;
};

/* Per-entry status bits that SUSPEND_QUEUES/RESUME_QUEUES OR into the queue id
 * array: ERROR = hardware failure, INVALID = queue missing, new or dying. */
#define XS_KFD_DBG_QUEUE_ERROR_BIT    30
#define XS_KFD_DBG_QUEUE_INVALID_BIT  31
#define XS_KFD_DBG_QUEUE_ERROR_MASK   (1U << XS_KFD_DBG_QUEUE_ERROR_BIT)
#define XS_KFD_DBG_QUEUE_INVALID_MASK (1U << XS_KFD_DBG_QUEUE_INVALID_BIT)

/* enum kfd_dbg_trap_operations: only the ops the backend issues. */
#define XS_KFD_DBG_TRAP_ENABLE             0
#define XS_KFD_DBG_TRAP_DISABLE            1
#define XS_KFD_DBG_TRAP_SUSPEND_QUEUES     6
#define XS_KFD_DBG_TRAP_RESUME_QUEUES      7
#define XS_KFD_DBG_TRAP_GET_QUEUE_SNAPSHOT 13

/* KFD_IOC_DBG_TRAP_ENABLE. */
struct xs_kfd_dbg_trap_enable_args {
	__u64 exception_mask; /* exceptions raised to the debugger fd */
	__u64 rinfo_ptr;      /* struct xs_kfd_runtime_info * */
	__u32 rinfo_size;     /* in: buffer size; out: KFD's size */
	__u32 dbg_fd;         /* fd KFD notifies; must be a valid fd */
};

/* KFD_IOC_DBG_TRAP_SUSPEND_QUEUES. Returns the number of queues suspended. */
struct xs_kfd_dbg_trap_suspend_queues_args {
	__u64 exception_mask;  /* raised exceptions to clear */
	__u64 queue_array_ptr; /* __u32 queue ids; status bits ORed in on return */
	__u32 num_queues;
	__u32 grace_period; /* wave time before preemption, units of 1K clocks */
};

/* KFD_IOC_DBG_TRAP_RESUME_QUEUES. Returns the number of queues resumed. */
struct xs_kfd_dbg_trap_resume_queues_args {
	__u64 queue_array_ptr; /* __u32 queue ids; status bits ORed in on return */
	__u32 num_queues;
	__u32 pad;
};

/* KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT. num_queues: in = capacity of the
 * buffer, out = number of queues that exist (may exceed the capacity).
 * entry_size: in = our stride, out = bytes KFD filled per entry. */
struct xs_kfd_dbg_trap_queue_snapshot_args {
	__u64 exception_mask; /* raised exceptions to clear on the copied queues */
	__u64 snapshot_buf_ptr;
	__u32 num_queues;
	__u32 entry_size;
};

/* struct kfd_ioctl_dbg_trap_args. Upstream's union has more members; none is
 * larger than 24 bytes, and the size check below holds us to 32 in all. */
struct xs_kfd_dbg_trap_args {
	__u32 pid;
	__u32 op;
	union {
		struct xs_kfd_dbg_trap_enable_args enable;
		struct xs_kfd_dbg_trap_suspend_queues_args suspend_queues;
		struct xs_kfd_dbg_trap_resume_queues_args resume_queues;
		struct xs_kfd_dbg_trap_queue_snapshot_args queue_snapshot;
	};
};

#define XS_AMDKFD_IOC_GET_VERSION _IOR(XS_KFD_IOCTL_BASE, 0x01, struct xs_kfd_get_version_args)
#define XS_AMDKFD_IOC_DBG_TRAP    _IOWR(XS_KFD_IOCTL_BASE, 0x26, struct xs_kfd_dbg_trap_args)

_Static_assert(sizeof(struct xs_kfd_get_version_args) == 8, "kfd_ioctl_get_version_args");
_Static_assert(sizeof(struct xs_kfd_runtime_info) == 16, "kfd_runtime_info");
_Static_assert(offsetof(struct xs_kfd_runtime_info, runtime_state) == 8, "runtime_state");
_Static_assert(sizeof(struct xs_kfd_queue_snapshot_entry) == 64, "kfd_queue_snapshot_entry");
_Static_assert(offsetof(struct xs_kfd_queue_snapshot_entry, ring_base_address) == 8,
	       "snapshot ring_base_address");
_Static_assert(offsetof(struct xs_kfd_queue_snapshot_entry, queue_id) == 40, "snapshot queue_id");
_Static_assert(offsetof(struct xs_kfd_queue_snapshot_entry, gpu_id) == 44, "snapshot gpu_id");
_Static_assert(offsetof(struct xs_kfd_queue_snapshot_entry, queue_type) == 52,
	       "snapshot queue_type");
_Static_assert(sizeof(struct xs_kfd_dbg_trap_enable_args) == 24, "dbg_trap_enable_args");
_Static_assert(sizeof(struct xs_kfd_dbg_trap_suspend_queues_args) == 24,
	       "dbg_trap_suspend_queues_args");
_Static_assert(sizeof(struct xs_kfd_dbg_trap_resume_queues_args) == 16,
	       "dbg_trap_resume_queues_args");
_Static_assert(sizeof(struct xs_kfd_dbg_trap_queue_snapshot_args) == 24,
	       "dbg_trap_queue_snapshot_args");
_Static_assert(sizeof(struct xs_kfd_dbg_trap_args) == 32, "kfd_ioctl_dbg_trap_args");
_Static_assert(offsetof(struct xs_kfd_dbg_trap_args, enable) == 8, "dbg_trap_args union");

/* The generic _IOC encoding (x86-64, arm64, riscv64) gives these values. */
#if defined(__x86_64__) || defined(__aarch64__) || (defined(__riscv) && __riscv_xlen == 64)
_Static_assert(XS_AMDKFD_IOC_GET_VERSION == 0x80084b01u, "AMDKFD_IOC_GET_VERSION");
_Static_assert(XS_AMDKFD_IOC_DBG_TRAP == 0xc0204b26u, "AMDKFD_IOC_DBG_TRAP");
#endif

#endif
