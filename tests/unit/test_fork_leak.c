/* A forked child that calls exit() leaks nothing it inherited from the parent: under
 * AddressSanitizer the leak checker runs at the child's exit and fails it (non-zero
 * status) for every block that became unreachable. Plain builds check only that the child
 * exits cleanly; ThreadSanitizer cannot run a child of a multi-threaded process.
 *
 * The parent traces (the trace's path and the rings of its threads are the child's to
 * release), holds a host queue and commands (one destroyed unsubmitted just before the
 * fork, still held by the forking thread), and has a thread that recorded and exited.
 * With the argument "engine", the parent also runs XQueues (device threads: what they
 * hold on their stacks at the fork is unreachable in the child). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core/trace.h"

static XQueueHandle g_xq;

static XResult nop_fn(void *data)
{
	(void)data;
	return kXSchedSuccess;
}

static void *scoped(void *arg)
{
	(void)arg;
	XS_TRACE(XS_TR_PASS, 0, 1, 0); /* a ring of its own, left behind at its exit */
	if (g_xq) {
		CHECK_OK(XQueueBeginScope(g_xq));
		CHECK_OK(XQueueEndScope(g_xq));
	}
	return NULL;
}

/* The child: some work of its own on a host queue, then exit() (the leak check). */
static void child(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	for (int i = 0; i < 10; i++)
		t_submit_fn(xq, nop_fn, NULL);
	CHECK_OK(XQueueWaitAll(xq));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	exit(0);
}

int main(int argc, char **argv)
{
#if defined(__SANITIZE_THREAD__)
	printf("skipped under ThreadSanitizer (no threads after a multi-threaded fork)\n");
	return 77;
#endif
	bool engine = argc > 1 && !strcmp(argv[1], "engine");
	char path[128];
	snprintf(path, sizeof(path), "/tmp/xs_test_fork_leak_%d.json", (int)getpid());
	CHECK_OK(XSchedTraceStart(path));
	HwQueueHandle hwq;
	CHECK_OK(HostQueueCreate(&hwq));
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateHostFunc(&cmd, nop_fn, NULL));
	if (engine) {
		CHECK_OK(XQueueCreate(&g_xq, hwq, kPreemptLevelBlock, 0));
		for (int i = 0; i < 100; i++)
			t_submit_fn(g_xq, nop_fn, NULL);
		CHECK_OK(XQueueWaitAll(g_xq));
	}
	pthread_t t;
	CHECK(pthread_create(&t, NULL, scoped, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* A command made and destroyed unsubmitted just before: only this thread's recent
	 * object (core/object.c) holds it. */
	HwCommandHandle gone;
	CHECK_OK(HwCommandCreateHostFunc(&gone, nop_fn, NULL));
	CHECK_OK(HwCommandDestroy(gone));
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child();
	int st = -1;
	for (int i = 0; i < 2000; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		st = -1;
		t_sleep_us(10000);
	}
	if (st == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	int code = st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (code != 0)
		fprintf(stderr, "the child %s %d (a leak report above names what it lost)\n",
			code < 0 ? "hung:" : "exited with", code);
	CHECK(code == 0);
	CHECK_OK(XSchedTraceStop());
	unlink(path);
	if (g_xq)
		CHECK_OK(XQueueDestroy(g_xq));
	CHECK_OK(HwCommandDestroy(cmd));
	CHECK_OK(HwQueueDestroy(hwq));
	printf("the child exited without leaks%s\n", engine ? " (parent with XQueues)" : "");
	return 0;
}
