/* Which HwQueue's command the calling thread runs now (hal.h). */
#include "hal/hal.h"

static _Thread_local xs_hwq *xs__running_q;
static _Thread_local uint64_t xs__running_seq;

void xs_hal_set_running(xs_hwq *q, uint64_t seq)
{
	xs__running_q = q;
	xs__running_seq = seq;
}

xs_hwq *xs_hal_running(uint64_t *seq)
{
	*seq = xs__running_seq;
	return xs__running_q;
}

void xs_hal_forked(void)
{
	xs__running_q = NULL;
	xs__running_seq = 0;
}
