/* XSCHED_LOG read from the environment (core/log.c), each value in a child process of its
 * own (the level is read once per process): debug, info, warn, warning and error (in any
 * case) turn logging on, unset or empty leaves it off, and any other value (1, verbose,
 * off) prints exactly one line naming the accepted values, even when four threads make
 * their first log call at once, and logging stays off. */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "log_capture.h"

enum { THREADS = 4 };

static pthread_barrier_t g_start;

/* A call that logs a warning when logging is on. */
static void *fail_call(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&g_start);
	CHECK_RES(XQueueWaitAll(0x1234), kXSchedErrorNotFound);
	return NULL;
}

/* In a child with XSCHED_LOG=@value (NULL: unset): the count of warnings about the value
 * and of the API's lines, as the exit status (warnings * 16 + lines). */
static int run_child(const char *value)
{
	if (value)
		CHECK(setenv("XSCHED_LOG", value, 1) == 0);
	else
		CHECK(unsetenv("XSCHED_LOG") == 0);
	pthread_t th[THREADS];
	CHECK(pthread_barrier_init(&g_start, NULL, THREADS) == 0);
	t_capture_begin();
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, fail_call, NULL) == 0);
	for (int i = 0; i < THREADS; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	int lines = t_capture_end("xsched[api]");
	int warnings = 0;
	for (const char *p = t_captured; (p = strstr(p, "XSCHED_LOG=")) != NULL; p++)
		warnings++;
	if (warnings && !strstr(t_captured, "is not a level (debug, info, warn or error): "
					    "logging stays off"))
		warnings = 15;
	printf("XSCHED_LOG=%s: %d warning line(s), %d API line(s)\n", value ? value : "(unset)",
	       warnings, lines);
	fflush(stdout);
	_exit(warnings * 16 + (lines > 15 ? 15 : lines));
}

static void expect(const char *value, int warnings, int lines)
{
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		run_child(value);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status));
	int got = WEXITSTATUS(status);
	if (got / 16 != warnings || got % 16 != lines) {
		fprintf(stderr,
			"XSCHED_LOG=%s: %d warning(s) and %d API line(s), expected %d and %d\n",
			value ? value : "(unset)", got / 16, got % 16, warnings, lines);
		exit(1);
	}
}

int main(void)
{
	/* Known levels: no warning; each thread's failed call logs a line. */
	expect("warn", 0, THREADS);
	expect("WARNING", 0, THREADS);
	expect("debug", 0, THREADS);
	expect("Info", 0, THREADS);
	/* Above the API's warnings: nothing. */
	expect("error", 0, 0);
	/* Off, silently. */
	expect(NULL, 0, 0);
	expect("", 0, 0);
	/* Not a level: one line, once, and logging stays off. */
	expect("1", 1, 0);
	expect("verbose", 1, 0);
	expect("off", 1, 0);
	return 0;
}
