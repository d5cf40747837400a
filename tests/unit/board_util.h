/* Helpers of the board tests (test_board_*.c): processes made with fork and exec, each
 * test's own board directory under a temporary directory (XSCHED_BOARD), and results
 * shared through a file that every process maps. */
#ifndef XS_TEST_BOARD_UTIL_H
#define XS_TEST_BOARD_UTIL_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "check.h"

/* A new directory under $TMPDIR (else /tmp), into @out (@n bytes); bu_rmdir removes it
 * with everything in it. */
void bu_tmpdir(char *out, size_t n);
void bu_rmdir(const char *dir);
/* @size bytes of the file @path (made, zeroed, if absent), mapped shared. */
void *bu_map(const char *path, size_t size);
/* Run this test's executable again as a child process, with the arguments @argv (NULL
 * ended; argv[0] is the role) and the caller's environment. */
pid_t bu_spawn(const char *const *argv);
/* Wait for @pid to exit within @timeout_ms: its exit status; -1 (it is killed) on a hang,
 * -2 when a signal ended it. */
int bu_wait(pid_t pid, int timeout_ms);
/* Whether the host has time to give: a 10 ms sleep took less than @max_ms (a loaded
 * 2-core machine under sanitizers may not; a timing check then skips, exit 77). */
bool bu_host_keeps_time(int max_ms);
/* The board of host queues in directory @dir (XSCHED_BOARD=dir): its path. */
void bu_board_path(const char *dir, char *out, size_t n);
/* A host queue (*@hq) and an XQueue on it at @level, returned; its priority set to @prio
 * unless BU_NO_PRIO. bu_queue_close destroys both. */
#define BU_NO_PRIO INT_MIN
XQueueHandle bu_queue_open(HwQueueHandle *hq, int64_t level, int prio);
void bu_queue_close(XQueueHandle xq, HwQueueHandle hq);
/* Wait until the shared *@flag is non-zero, for at most @timeout_ms: whether it is. */
bool bu_wait_flag(atomic_int *flag, int timeout_ms);
/* Poll XQueueGetBoard(@xq) until @pred holds (or @timeout_ms passes): whether it held. */
bool bu_board_until(XQueueHandle xq, bool (*pred)(const XBoardInfo *), int timeout_ms);

#endif
