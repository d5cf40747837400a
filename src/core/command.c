#include "core/command.h"

#include <stdlib.h>

#include "core/log.h"

static void xs__cmd_free(xs_obj *obj)
{
	xs_cmd *cmd = xs_cmd_of(obj);
	free(cmd->owned);
	free(cmd);
}

xs_cmd *xs_cmd_new(enum xs_cmd_kind kind)
{
	xs_cmd *cmd = calloc(1, sizeof(*cmd));
	if (!cmd)
		return NULL;
	xs_obj_init(&cmd->obj, XS_KIND_COMMAND, xs__cmd_free);
	cmd->kind = kind;
	atomic_init(&cmd->xq, NULL);
	cmd->state = XS_CMD_CREATED;
	cmd->result = kXSchedSuccess;
	return cmd;
}

static XResult xs__register(HwCommandHandle *hw_cmd, xs_cmd *cmd)
{
	XResult res = xs_handle_register(&cmd->obj, 0);
	if (res == kXSchedSuccess)
		*hw_cmd = cmd->obj.handle;
	xs_obj_unref(&cmd->obj); /* the table holds it now, or nobody does */
	return res;
}

XResult HwCommandCreateCallback(HwCommandHandle *hw_cmd, LaunchCallback launch, void *data)
{
	if (!hw_cmd || !launch) {
		XS_WARN("core", "HwCommandCreateCallback: %s is null", hw_cmd ? "launch" : "hw_cmd");
		return kXSchedErrorInvalidValue;
	}
	xs_cmd *cmd = xs_cmd_new(XS_CMD_CALLBACK);
	if (!cmd)
		return kXSchedErrorUnknown;
	cmd->u.callback.fn = launch;
	cmd->u.callback.data = data;
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandCreateHostFunc(HwCommandHandle *hw_cmd, HostFunction fn, void *data)
{
	if (!hw_cmd || !fn) {
		XS_WARN("core", "HwCommandCreateHostFunc: %s is null", hw_cmd ? "fn" : "hw_cmd");
		return kXSchedErrorInvalidValue;
	}
	xs_cmd *cmd = xs_cmd_new(XS_CMD_HOST_FUNC);
	if (!cmd)
		return kXSchedErrorUnknown;
	cmd->u.host.fn = fn;
	cmd->u.host.data = data;
	return xs__register(hw_cmd, cmd);
}

XResult HwCommandDestroy(HwCommandHandle hw_cmd)
{
	if (!hw_cmd)
		return kXSchedSuccess;
	xs_obj *obj = xs_handle_unregister(hw_cmd, XS_KIND_COMMAND);
	if (!obj) {
		XS_WARN("core", "HwCommandDestroy: 0x%llx is not a live command",
			(unsigned long long)hw_cmd);
		return kXSchedErrorNotFound;
	}
	xs_obj_unref(obj);
	return kXSchedSuccess;
}
