/* Command objects: allocation and the free function every reference ends in. */
#include "core/command.h"

#include <stddef.h>
#include <stdint.h>
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
	free(cmd); /* `owned` is part of it */
}

enum { XS__OWNED_ALIGN = 16 };
_Static_assert(_Alignof(max_align_t) >= XS__OWNED_ALIGN, "malloc aligns the payload");

/* Where the payload starts behind the command: its size rounded up to the alignment. */
static size_t xs__owned_at(void)
{
	return (sizeof(xs_cmd) + XS__OWNED_ALIGN - 1) & ~(size_t)(XS__OWNED_ALIGN - 1);
}

xs_cmd *xs_cmd_new(enum xs_cmd_kind kind, size_t extra)
{
	size_t at = xs__owned_at();
	if (extra > SIZE_MAX - at)
		return NULL;
	/* malloc's alignment (16 on the 64-bit targets built for) holds for the payload. */
	xs_cmd *cmd = malloc(extra ? at + extra : sizeof(*cmd));
	if (!cmd)
		return NULL;
	memset(cmd, 0, sizeof(*cmd));
	if (extra)
		cmd->owned = (char *)cmd + at;
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
