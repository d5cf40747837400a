/* The HwCommand API: create each kind of command (arguments copied here), destroy. */
#include <stdlib.h>
#include <string.h>

#include "core/command.h"
#include "core/log.h"
#include "hal/hal.h"
#include "preempt/engine.h"

static XResult xs__register(HwCommandHandle *hw_cmd, xs_cmd *cmd)
{
	XResult res = xs_handle_register(&cmd->obj, 0);
	if (res == kXSchedSuccess) {
		*hw_cmd = cmd->obj.handle;
		/* Its submit on this thread finds it without a lock (our reference becomes the
		 * thread's). Not an event's record or wait: their free destroys a native event or
		 * drops a record, not to be late. */
		if (cmd->kind != XS_CMD_EVENT_RECORD && cmd->kind != XS_CMD_EVENT_WAIT &&
		    xs_handle_keep_recent(&cmd->obj))
			return res;
	}
	xs_obj_unref(&cmd->obj); /* the table holds it now, or nobody does */
	return res;
}

XResult HwCommandCreateCallback(HwCommandHandle *hw_cmd, LaunchCallback launch, void *data)
{
	XS_CHECK(hw_cmd && launch, kXSchedErrorInvalidValue, "api",
		 "HwCommandCreateCallback: %s is null", hw_cmd ? "launch" : "hw_cmd");
	xs_cmd *cmd = xs_cmd_new(XS_CMD_CALLBACK, 0);
	if (!cmd)
		return kXSchedErrorUnknown;
	cmd->u.callback.fn = launch;
	cmd->u.callback.data = data;
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandCreateHostFunc(HwCommandHandle *hw_cmd, HostFunction fn, void *data)
{
	XS_CHECK(hw_cmd && fn, kXSchedErrorInvalidValue, "api",
		 "HwCommandCreateHostFunc: %s is null", hw_cmd ? "fn" : "hw_cmd");
	xs_cmd *cmd = xs_cmd_new(XS_CMD_HOST_FUNC, 0);
	if (!cmd)
		return kXSchedErrorUnknown;
	cmd->u.host.fn = fn;
	cmd->u.host.data = data;
	return xs__register(hw_cmd, cmd);
}

static bool xs__dim_ok(XDim3 d)
{
	return d.x >= 1 && d.y >= 1 && d.z >= 1;
}

/* Create a KERNEL or MODULE_KERNEL command: the argument values are copied into one owned
 * buffer (in the command's own allocation) laid out as [num_args pointers][value 0][value 1]...,
 * each value 16-byte aligned, and the pointer array points at the copies (the form cudaLaunchKernel
 * takes). */
static XResult xs__create_kernel(const char *fn, enum xs_cmd_kind kind, HwCommandHandle *hw_cmd,
				 const void *func, int (*resolve)(void **, const void *),
				 XDim3 grid, XDim3 block, size_t shared_mem_bytes, void **args,
				 const size_t *arg_sizes, size_t num_args)
{
	XS_CHECK(hw_cmd && func, kXSchedErrorInvalidValue, "api", "%s: %s is null", fn,
		 hw_cmd ? "the kernel" : "hw_cmd");
	XS_CHECK(xs__dim_ok(grid) && xs__dim_ok(block), kXSchedErrorInvalidValue, "api",
		 "%s: grid %ux%ux%u or block %ux%ux%u has a zero dimension", fn, grid.x, grid.y,
		 grid.z, block.x, block.y, block.z);
	XS_CHECK(!num_args || (args && arg_sizes), kXSchedErrorInvalidValue, "api",
		 "%s: %zu arguments but %s is null", fn, num_args, args ? "arg_sizes" : "args");
	const size_t align = 16;
	XS_CHECK(num_args <= SIZE_MAX / 2 / sizeof(void *), kXSchedErrorInvalidValue, "api",
		 "%s: %zu arguments is too many", fn, num_args);
	size_t head = (num_args * sizeof(void *) + align - 1) & ~(align - 1);
	size_t total = head;
	for (size_t i = 0; i < num_args; i++) {
		XS_CHECK(args[i] && arg_sizes[i], kXSchedErrorInvalidValue, "api",
			 "%s: argument %zu has %s", fn, i, args[i] ? "size 0" : "a null pointer");
		size_t sz = (arg_sizes[i] + align - 1) & ~(align - 1);
		XS_CHECK(arg_sizes[i] <= SIZE_MAX / 2 && total <= SIZE_MAX / 2 - sz,
			 kXSchedErrorInvalidValue, "api",
			 "%s: argument %zu is too large (%zu bytes)", fn, i, arg_sizes[i]);
		total += sz;
	}
	xs_cmd *cmd = xs_cmd_new(kind, num_args ? total : 0);
	if (!cmd)
		return kXSchedErrorUnknown;
	if (num_args) {
		void **ptrs = cmd->owned;
		char *val = (char *)cmd->owned + head;
		for (size_t i = 0; i < num_args; i++) {
			memcpy(val, args[i], arg_sizes[i]);
			ptrs[i] = val;
			val += (arg_sizes[i] + align - 1) & ~(align - 1);
		}
		cmd->u.kernel.args = ptrs;
	}
	cmd->u.kernel.func = func;
	cmd->u.kernel.resolve = resolve;
	cmd->u.kernel.grid = grid;
	cmd->u.kernel.block = block;
	cmd->u.kernel.shared_mem_bytes = shared_mem_bytes;
	cmd->u.kernel.num_args = num_args;
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandCreateKernel(HwCommandHandle *hw_cmd, const void *func, XDim3 grid, XDim3 block,
			      size_t shared_mem_bytes, void **args, const size_t *arg_sizes,
			      size_t num_args)
{
	return xs__create_kernel("HwCommandCreateKernel", XS_CMD_KERNEL, hw_cmd, func, NULL, grid,
				 block, shared_mem_bytes, args, arg_sizes, num_args);
}

XResult HwCommandCreateModuleKernel(HwCommandHandle *hw_cmd, void *function, XDim3 grid,
				    XDim3 block, size_t shared_mem_bytes, void **args,
				    const size_t *arg_sizes, size_t num_args)
{
	return xs__create_kernel("HwCommandCreateModuleKernel", XS_CMD_MODULE_KERNEL, hw_cmd,
				 function, NULL, grid, block, shared_mem_bytes, args, arg_sizes,
				 num_args);
}

XResult HwCommandCreateResolvedKernel(HwCommandHandle *hw_cmd, const void *func,
				      XCudaFuncResolver resolve, XDim3 grid, XDim3 block,
				      size_t shared_mem_bytes, void **args, const size_t *arg_sizes,
				      size_t num_args)
{
	static const char fn[] = "HwCommandCreateResolvedKernel";
	XS_CHECK(hw_cmd && func && resolve, kXSchedErrorInvalidValue, "api", "%s: %s is null", fn,
		 !hw_cmd ? "hw_cmd"
		 : !func ? "the kernel"
			 : "resolve");
	XResult res = xs_cuda_check_kernel(func, resolve);
	if (res != kXSchedSuccess)
		return res;
	return xs__create_kernel(fn, XS_CMD_RESOLVED_KERNEL, hw_cmd, func, resolve, grid, block,
				 shared_mem_bytes, args, arg_sizes, num_args);
}

XResult HwCommandCreateMemcpy(HwCommandHandle *hw_cmd, void *dst, const void *src, size_t bytes)
{
	XS_CHECK(hw_cmd && dst && src && bytes, kXSchedErrorInvalidValue, "api",
		 "HwCommandCreateMemcpy: %s",
		 !hw_cmd ? "hw_cmd is null"
		 : !dst  ? "dst is null"
		 : !src  ? "src is null"
			 : "bytes is 0");
	xs_cmd *cmd = xs_cmd_new(XS_CMD_MEMCPY, 0);
	if (!cmd)
		return kXSchedErrorUnknown;
	cmd->u.memcpy.dst = dst;
	cmd->u.memcpy.src = src;
	cmd->u.memcpy.bytes = bytes;
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandCreateMemset(HwCommandHandle *hw_cmd, void *dst, uint8_t value, size_t bytes)
{
	XS_CHECK(hw_cmd && dst && bytes, kXSchedErrorInvalidValue, "api",
		 "HwCommandCreateMemset: %s",
		 !hw_cmd ? "hw_cmd is null"
		 : !dst  ? "dst is null"
			 : "bytes is 0");
	xs_cmd *cmd = xs_cmd_new(XS_CMD_MEMSET, 0);
	if (!cmd)
		return kXSchedErrorUnknown;
	cmd->u.memset.dst = dst;
	cmd->u.memset.value = value;
	cmd->u.memset.bytes = bytes;
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandCreateEventRecord(HwCommandHandle *hw_cmd)
{
	XS_CHECK(hw_cmd, kXSchedErrorInvalidValue, "api",
		 "HwCommandCreateEventRecord: hw_cmd is null");
	xs_cmd *cmd = xs_cmd_new(XS_CMD_EVENT_RECORD, 0);
	if (!cmd)
		return kXSchedErrorUnknown;
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandCreateEventWait(HwCommandHandle *hw_cmd, HwCommandHandle record_cmd)
{
	XS_CHECK(hw_cmd, kXSchedErrorInvalidValue, "api",
		 "HwCommandCreateEventWait: hw_cmd is null");
	xs_obj *robj = xs_handle_get(record_cmd, XS_KIND_COMMAND);
	XS_CHECK(robj, kXSchedErrorNotFound, "api", "HwCommandCreateEventWait: 0x%llx %s",
		 (unsigned long long)record_cmd, xs_handle_describe(record_cmd, XS_KIND_COMMAND));
	if (xs_cmd_of(robj)->kind != XS_CMD_EVENT_RECORD) {
		XS_FAIL("api", "HwCommandCreateEventWait: command 0x%llx is not an event record",
			(unsigned long long)record_cmd);
		xs_obj_unref(robj);
		return kXSchedErrorInvalidValue;
	}
	xs_cmd *cmd = xs_cmd_new(XS_CMD_EVENT_WAIT, 0);
	if (!cmd) {
		xs_obj_unref(robj);
		return kXSchedErrorUnknown;
	}
	cmd->u.wait.record = xs_cmd_of(robj); /* the lookup's reference becomes the wait's */
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandDestroy(HwCommandHandle hw_cmd)
{
	if (!hw_cmd)
		return kXSchedSuccess;
	xs_obj *obj = xs_handle_unregister(hw_cmd, XS_KIND_COMMAND);
	XS_CHECK(obj, kXSchedErrorNotFound, "api", "HwCommandDestroy: 0x%llx %s",
		 (unsigned long long)hw_cmd, xs_handle_describe(hw_cmd, XS_KIND_COMMAND));
	/* An event record dropped before it was submitted can never run: fail its waits
	 * rather than leave their XQueues blocked. (A submit racing with this destroy of
	 * the same handle may still run it; its waits then fail all the same.) */
	xs_cmd *cmd = xs_cmd_of(obj);
	if (cmd->kind == XS_CMD_EVENT_RECORD &&
	    !atomic_load_explicit(&cmd->xq, memory_order_acquire))
		xs_engine_record_advance(cmd, XS_DEP_FAILED, kXSchedErrorNotFound);
	xs_obj_unref(obj);
	return kXSchedSuccess;
}
