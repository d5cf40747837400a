/* Command objects: allocation and the free function every reference ends in. */
#include "core/command.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"

static void xs__cmd_free(xs_obj *obj)
{
	xs_cmd *cmd = xs_cmd_of(obj);
	if (cmd->kind == XS_CMD_EVENT_RECORD && cmd->u.record.native)
		cmd->u.record.native_free(cmd->u.record.native);
	else if (cmd->kind == XS_CMD_EVENT_WAIT)
		xs_obj_unref(&cmd->u.wait.record->obj);
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
	xs_link_init(&cmd->link);
	cmd->state = XS_CMD_CREATED;
	cmd->result = kXSchedSuccess;
	if (kind == XS_CMD_EVENT_RECORD) {
		atomic_init(&cmd->u.record.ran, false);
		cmd->u.record.dep = XS_DEP_NONE;
		cmd->u.record.dep_result = kXSchedSuccess;
	}
	return cmd;
}
