#include "board_util.h"

#include <ftw.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void bu_tmpdir(char *out, size_t n)
{
	const char *t = getenv("TMPDIR");
	snprintf(out, n, "%s/xs-board-XXXXXX", t && *t ? t : "/tmp");
	CHECK(mkdtemp(out) != NULL);
}

static int bu__rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void bu_rmdir(const char *dir)
{
	nftw(dir, bu__rm, 16, FTW_DEPTH | FTW_PHYS);
}

void *bu_map(const char *path, size_t size)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	struct stat st;
	CHECK(fstat(fd, &st) == 0);
	if ((size_t)st.st_size < size)
		CHECK(ftruncate(fd, (off_t)size) == 0);
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	close(fd);
	return m;
}

pid_t bu_spawn(const char *const *argv)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0);
	self[n] = 0;
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		execv(self, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

int bu_wait(pid_t pid, int timeout_ms)
{
	/* The children of the board tests exit 0, 1 or 77: 128 and above is a signal. */
	int st = t_reap(pid, timeout_ms);
	if (st < 0)
		fprintf(stderr, "process %d did not exit within %d ms: killed\n", (int)pid,
			timeout_ms);
	return st >= 128 ? -2 : st;
}

bool bu_host_keeps_time(int max_ms)
{
	int64_t t0 = t_now_us();
	t_sleep_us(10000);
	return t_now_us() - t0 < (int64_t)max_ms * 1000;
}

void bu_board_path(const char *dir, char *out, size_t n)
{
	snprintf(out, n, "%s/xsched-host", dir);
}

bool bu_board_until(XQueueHandle xq, bool (*pred)(const XBoardInfo *), int timeout_ms)
{
	int64_t end = t_now_us() + (int64_t)timeout_ms * 1000;
	for (;;) {
		XBoardInfo bi;
		CHECK_OK(XQueueGetBoard(xq, &bi));
		if (pred(&bi))
			return true;
		if (t_now_us() > end)
			return false;
		t_sleep_us(500);
	}
}

XQueueHandle bu_queue_open(HwQueueHandle *hq, int64_t level, int prio)
{
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(hq));
	CHECK_OK(XQueueCreate(&xq, *hq, level, kQueueCreateFlagNone));
	if (prio != BU_NO_PRIO)
		CHECK_OK(XHintPriority(xq, prio));
	return xq;
}

void bu_queue_close(XQueueHandle xq, HwQueueHandle hq)
{
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hq));
}

static bool bu__flag_set(void *flag)
{
	return atomic_load((atomic_int *)flag) != 0;
}

bool bu_wait_flag(atomic_int *flag, int timeout_ms)
{
	return t_wait_for(bu__flag_set, flag, timeout_ms);
}
