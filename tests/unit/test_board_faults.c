/* The board's faults and rules (core/board.h), each case with a board directory of its own
 * (XSCHED_BOARD=DIR) and the library started anew (XSchedShutdown between cases):
 * - off: XSCHED_BOARD=off, and host queues under auto (the default), join nothing and make
 *   no file;
 * - a board is made 0600 and owned by this user; XSCHED_BOARD_GROUP=name makes it 0660
 *   with that group;
 * - permissions: a board writable by every user, or by a group not asked for, or (as
 *   root) owned by another user, is refused with a warning and the process runs alone; a
 *   process of another user (as root: a child that becomes nobody) cannot open a 0600
 *   board and runs alone, logged;
 * - a corrupt or foreign board (magic, version, size) is refused, with its reason logged;
 * - pid reuse: a slot whose pid lives but whose start time is another process's, with a
 *   heartbeat older than the suspect age, is dead (not counted); the same slot with the
 *   right start time counts;
 * - another pid namespace: a slot counts while its heartbeat is fresh and no longer
 *   past XS_BOARD_FOREIGN_NS;
 * - a stale board (every slot left by dead processes) is reused: a newcomer takes a slot;
 * - a full board (64 live slots) is refused, logged: the process runs alone;
 * - fork(): a child of a process on the board (its threads running) is not on it until
 *   its own first XQueue, which takes a slot of its own; the parent's slot stays the
 *   parent's (each sees the other). Skipped under TSan and ASan, which cannot fork a
 *   multi-threaded process safely.
 * Slots are written here through the layout of core/board.h. */
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "board_util.h"
#include "core/board.h"
#include "core/log.h"
#include "log_capture.h"

static char g_dir[4096];
static int g_case;

/* A fresh board directory for the next case; the library reads its settings anew. */
static void next_dir(char *dir, size_t n)
{
	snprintf(dir, n, "%s/c%d", g_dir, ++g_case);
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(setenv("XSCHED_BOARD", dir, 1) == 0);
	CHECK_OK(XSchedShutdown());
}

/* Make an XQueue of priority @prio on a host queue, read its board, destroy it. Returns
 * the number of log lines that hold @tag (-1: not asked). */
static int join_once(int prio, XBoardInfo *out, const char *tag)
{
	HwQueueHandle hq;
	XQueueHandle xq;
	if (tag)
		t_capture_begin();
	xq = bu_queue_open(&hq, kPreemptLevelDeactivate, prio);
	t_sleep_us(30000); /* a pass and a watcher's look */
	CHECK_OK(XQueueGetBoard(xq, out));
	bu_queue_close(xq, hq);
	CHECK_OK(XSchedShutdown());
	int n = tag ? t_capture_end(tag) : -1;
	if (tag && n < 1)
		fprintf(stderr, "log was:\n%s\n", t_captured);
	return n;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void case_off(void)
{
	char dir[4200], path[4300];
	next_dir(dir, sizeof(dir));
	bu_board_path(dir, path, sizeof(path));
	XBoardInfo b;
	CHECK(setenv("XSCHED_BOARD", "off", 1) == 0);
	join_once(0, &b, NULL);
	printf("off: joined %d (expected 0), board made: %d (expected 0)\n", b.joined,
	       exists(path));
	CHECK(!b.joined && !exists(path));
	bool had = exists("/dev/shm/xsched-host");
	CHECK(unsetenv("XSCHED_BOARD") == 0);
	join_once(0, &b, NULL);
	printf("auto, host queues: joined %d (expected 0)\n", b.joined);
	CHECK(!b.joined && exists("/dev/shm/xsched-host") == had);
}

/* The group of this process, by name (NULL if it has none). */
static const char *own_group(void)
{
	struct group *g = getgrgid(getegid());
	return g ? g->gr_name : NULL;
}

static void case_modes(void)
{
	char dir[4200], path[4300];
	struct stat st;
	XBoardInfo b;
	next_dir(dir, sizeof(dir));
	bu_board_path(dir, path, sizeof(path));
	join_once(0, &b, NULL);
	CHECK(stat(path, &st) == 0);
	printf("made: joined %d, mode %03o (expected 600), owner %d (expected %d)\n", b.joined,
	       (unsigned)(st.st_mode & 0777), (int)st.st_uid, (int)geteuid());
	CHECK(b.joined && (st.st_mode & 0777) == 0600 && st.st_uid == geteuid());
	const char *g = own_group();
	if (!g)
		return;
	next_dir(dir, sizeof(dir));
	bu_board_path(dir, path, sizeof(path));
	CHECK(setenv("XSCHED_BOARD_GROUP", g, 1) == 0);
	join_once(0, &b, NULL);
	CHECK(stat(path, &st) == 0);
	printf("XSCHED_BOARD_GROUP=%s: joined %d, mode %03o (expected 660), group %d "
	       "(expected %d)\n",
	       g, b.joined, (unsigned)(st.st_mode & 0777), (int)st.st_gid, (int)getegid());
	CHECK(b.joined && (st.st_mode & 0777) == 0660 && st.st_gid == getegid());
	CHECK(unsetenv("XSCHED_BOARD_GROUP") == 0);
}

/* A board refused for @why once its file is changed by @change: joined 0, logged. */
static void refused(const char *what, void (*change)(const char *path), const char *why)
{
	char dir[4200], path[4300];
	XBoardInfo b;
	next_dir(dir, sizeof(dir));
	bu_board_path(dir, path, sizeof(path));
	join_once(0, &b, NULL); /* made */
	CHECK(b.joined);
	change(path);
	CHECK(setenv("XSCHED_BOARD", dir, 1) == 0);
	int logged = join_once(0, &b, why);
	printf("%s: joined %d (expected 0), \"%s\" logged %d time(s)\n", what, b.joined, why,
	       logged);
	CHECK(!b.joined && logged >= 1);
}

static void to_0666(const char *p)
{
	CHECK(chmod(p, 0666) == 0);
}

static void to_0660(const char *p)
{
	CHECK(chmod(p, 0660) == 0);
}

static void to_nobody(const char *p)
{
	CHECK(chown(p, 65534, (gid_t)-1) == 0);
}

/* Rewrite the header field at @off with @v. */
static void poke32(const char *p, size_t off, uint32_t v)
{
	unsigned char *m = bu_map(p, XS_BOARD_SIZE);
	memcpy(m + off, &v, sizeof(v));
	munmap(m, XS_BOARD_SIZE);
}

static void bad_magic(const char *p)
{
	poke32(p, offsetof(xs_board_hdr, magic), 0x12345678);
}

static void bad_version(const char *p)
{
	poke32(p, offsetof(xs_board_hdr, version), XS_BOARD_VERSION + 1);
}

static void bad_size(const char *p)
{
	CHECK(truncate(p, 4096) == 0);
}

/* As another user (a child that becomes nobody): the 0600 board of root cannot be opened;
 * the child runs alone and logs it. Exit status: 0 when so. */
static int as_nobody(const char *dir)
{
	if (setgid(65534) != 0 || setuid(65534) != 0)
		return 2;
	CHECK(setenv("XSCHED_BOARD", dir, 1) == 0);
	XBoardInfo b;
	int logged = join_once(0, &b, "cannot open");
	printf("another user: joined %d (expected 0), \"cannot open\" logged %d time(s)\n",
	       b.joined, logged);
	fflush(stdout);
	return !b.joined && logged >= 1 ? 0 : 1;
}

static void case_permissions(void)
{
	refused("writable by every user", to_0666, "writable by every user");
	refused("group-writable, no group asked for", to_0660, "writable by a group");
	if (geteuid() != 0) {
		printf("not root: the cases of another user's board are skipped\n");
		return;
	}
	refused("owned by another user", to_nobody, "owned by another user");
	char dir[4200];
	XBoardInfo b;
	next_dir(dir, sizeof(dir));
	CHECK(chmod(dir, 0755) == 0); /* the file's mode is what keeps nobody out */
	join_once(0, &b, NULL);
	CHECK(b.joined);
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(as_nobody(dir));
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void case_foreign(void)
{
	refused("corrupt (magic)", bad_magic, "not a board");
	refused("another version", bad_version, "another version");
	refused("another size", bad_size, "of another size");
}

/* This process's start time (/proc/self/stat, field 22). */
static uint64_t own_start(void)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "r");
	CHECK(f && fgets(buf, sizeof(buf), f));
	fclose(f);
	const char *p = strrchr(buf, ')');
	CHECK(p);
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	CHECK(p);
	return strtoull(p + 1, NULL, 10);
}

static uint64_t own_ns(void)
{
	struct stat st;
	return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* Write slot @i of the board @m as a process @pid started at @start in namespace @ns, whose
 * heartbeat is @age_ms old, with top and busy @prio. */
static void craft(unsigned char *m, int i, int64_t pid, uint64_t start, uint64_t ns, int age_ms,
		  int64_t prio)
{
	xs_board_hdr *h = (xs_board_hdr *)(void *)m;
	xs_board_slot *s = (xs_board_slot *)(void *)(m + sizeof(*h)) + i;
	uint64_t token = ((uint64_t)(t_now_us() / 1000) << 20) | (uint64_t)(i + 1);
	atomic_store(&s->owner, token);
	atomic_store(&s->pid, pid);
	atomic_store(&s->start, start);
	atomic_store(&s->pidns, ns);
	atomic_store(&s->beat_ns, t_now_us() * 1000 - (int64_t)age_ms * 1000000);
	atomic_store(&s->top, prio);
	atomic_store(&s->busy, prio);
	atomic_store(&s->ask, 0);
	atomic_fetch_or(&h->busy, UINT64_C(1) << i);
	atomic_store(&s->ident, token);
}

/* A board made in a new directory, mapped. */
static unsigned char *fresh_board(char *dir, size_t n)
{
	char path[4300];
	XBoardInfo b;
	next_dir(dir, n);
	bu_board_path(dir, path, sizeof(path));
	join_once(0, &b, NULL);
	CHECK(b.joined);
	CHECK(setenv("XSCHED_BOARD", dir, 1) == 0);
	return bu_map(path, XS_BOARD_SIZE);
}

static void case_pid_reuse(void)
{
	char dir[4200];
	XBoardInfo b;
	unsigned char *m = fresh_board(dir, sizeof(dir));
	/* This process's pid, another start time, a heartbeat 200 ms old. */
	craft(m, 5, getpid(), own_start() + 12345, own_ns(), 200, 100);
	join_once(0, &b, NULL);
	printf("pid reused (start time differs): others counted %d, top %d (expected 0, none)\n",
	       b.processes, b.others_top);
	CHECK(b.processes == 0 && b.others_top == XBOARD_NONE);
	munmap(m, XS_BOARD_SIZE);
	m = fresh_board(dir, sizeof(dir));
	craft(m, 5, getpid(), own_start(), own_ns(), 200, 100);
	join_once(0, &b, NULL);
	printf("same slot, right start time: others counted %d, top %d, busy %d (expected 1, "
	       "100, 100)\n",
	       b.processes, b.others_top, b.others_busy);
	CHECK(b.processes == 1 && b.others_top == 100 && b.others_busy == 100);
	munmap(m, XS_BOARD_SIZE);
}

static bool foreign_gone(const XBoardInfo *b)
{
	return b->processes == 0 && b->others_busy == XBOARD_NONE;
}

static void case_foreign_ns(void)
{
	char dir[4200];
	unsigned char *m = fresh_board(dir, sizeof(dir));
	/* Another pid namespace: no /proc to ask, only the heartbeat. */
	int64_t t0 = t_now_us();
	craft(m, 9, 1, 1, own_ns() + 1, 0, 100);
	HwQueueHandle hq;
	XQueueHandle xq;
	xq = bu_queue_open(&hq, kPreemptLevelDeactivate, BU_NO_PRIO);
	XBoardInfo b;
	CHECK_OK(XQueueGetBoard(xq, &b));
	double first_ms = (t_now_us() - t0) / 1000.0;
	int first = b.processes;
	CHECK(bu_board_until(xq, foreign_gone, 2000));
	double gone_ms = (t_now_us() - t0) / 1000.0;
	printf("another pid namespace: counted %d at %.0f ms (expected 1 before %lld ms), not "
	       "counted from %.0f ms (expected after %lld ms)\n",
	       first, first_ms, XS_BOARD_SUSPECT_NS / 1000000, gone_ms,
	       XS_BOARD_FOREIGN_NS / 1000000);
	if (first_ms < XS_BOARD_SUSPECT_NS / 1000000.0) /* else a loaded host was too slow */
		CHECK(first == 1);
	CHECK(gone_ms >= XS_BOARD_FOREIGN_NS / 1000000.0);
	bu_queue_close(xq, hq);
	CHECK_OK(XSchedShutdown());
	munmap(m, XS_BOARD_SIZE);
}

static void case_stale_and_full(void)
{
	char dir[4200];
	XBoardInfo b;
	unsigned char *m = fresh_board(dir, sizeof(dir));
	for (int i = 0; i < XS_BOARD_SLOTS; i++) /* every slot left by a dead process */
		craft(m, i, getpid(), own_start() + 1 + (uint64_t)i, own_ns(), 500, 50);
	join_once(0, &b, NULL);
	printf("stale board (64 dead slots): joined %d, others counted %d (expected 1, 0)\n",
	       b.joined, b.processes);
	CHECK(b.joined && b.processes == 0);
	munmap(m, XS_BOARD_SIZE);
	m = fresh_board(dir, sizeof(dir));
	for (int i = 0; i < XS_BOARD_SLOTS; i++) /* 64 live processes */
		craft(m, i, getpid(), own_start(), own_ns(), 0, 1);
	int logged = join_once(0, &b, "is full");
	printf("full board: joined %d (expected 0), \"is full\" logged %d time(s)\n", b.joined,
	       logged);
	CHECK(!b.joined && logged >= 1);
	munmap(m, XS_BOARD_SIZE);
}

static bool sees_one(const XBoardInfo *b)
{
	return b->joined && b->processes == 1 && b->others_top != XBOARD_NONE;
}

static bool sees_none(const XBoardInfo *b)
{
	return b->joined && b->processes == 0;
}

/* In the child: the parent's queue is not usable here; a queue of its own takes a slot of
 * its own, where it sees the parent (priority 7). Exit status 0 when so. */
static int fork_child(XQueueHandle parent_xq)
{
	XBoardInfo b;
	if (XQueueGetBoard(parent_xq, &b) != kXSchedErrorNotFound)
		return 1;
	HwQueueHandle hq;
	XQueueHandle xq;
	xq = bu_queue_open(&hq, kPreemptLevelDeactivate, BU_NO_PRIO);
	bool ok = bu_board_until(xq, sees_one, 5000);
	CHECK_OK(XQueueGetBoard(xq, &b));
	printf("fork: the child, on its own slot, sees %d other process (expected 1) at top "
	       "%d (expected 7)\n",
	       b.processes, b.others_top);
	fflush(stdout);
	ok = ok && b.others_top == 7;
	bu_queue_close(xq, hq);
	CHECK_OK(XSchedShutdown());
	return ok ? 0 : 1;
}

static void case_fork(void)
{
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
	/* TSan runs no thread after a multi-threaded fork; ASan's allocator (GCC 12's
	 * libsanitizer) does not hold its locks across fork(), so a child whose parent had a
	 * thread inside it blocks in its first allocation (seen here: every thread of the
	 * child in QuarantineChunk's GetFromAllocator; test_fork.c says the same). */
	printf("fork: skipped under a sanitizer that cannot fork a multi-threaded process\n");
	return;
#endif
	char dir[4200];
	next_dir(dir, sizeof(dir));
	HwQueueHandle hq;
	XQueueHandle xq;
	xq = bu_queue_open(&hq, kPreemptLevelDeactivate, 7);
	CHECK(bu_board_until(xq, sees_none, 5000));
	fflush(stdout);
	pid_t pid = fork(); /* the watcher and the device threads run */
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(fork_child(xq));
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The child's slot was given back when its queue went: alone again, on its own slot. */
	bool alone = bu_board_until(xq, sees_none, 5000);
	XBoardInfo b;
	CHECK_OK(XQueueGetBoard(xq, &b));
	printf("fork: the parent, after the child left, sees %d other processes (expected 0), "
	       "joined %d\n",
	       b.processes, b.joined);
	CHECK(alone);
	bu_queue_close(xq, hq);
	CHECK_OK(XSchedShutdown());
}

int main(void)
{
	xs_log_set_level(XS_LOG_WARN);
	bu_tmpdir(g_dir, sizeof(g_dir));
	case_off();
	case_modes();
	case_permissions();
	case_foreign();
	case_pid_reuse();
	case_foreign_ns();
	case_stale_and_full();
	case_fork();
	bu_rmdir(g_dir);
	return 0;
}
