/* A bad setting in the environment is reported on stderr once per process, whatever
 * XSCHED_LOG says (unset, warn, error), as "NAME=VALUE ...; <what is used instead>"; read
 * again after XSchedShutdown() it is not reported again, a new bad value is; good values
 * print nothing. The table names every variable src/core/config.c reads (XSCHED_LOG is
 * log.c's: test_log_env.c): the test reads config.c (its path is the first argument) and
 * fails on a variable the table lacks. Each case runs in a child process of its own. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "log_capture.h"

struct bad {
	const char *name, *value;
	const char *instead; /* what the line must say is used instead */
};

static const struct bad bads[] = {
    {"XSCHED_POLICY", "BOGUS", "; using HPF (the default)"},
    {"XSCHED_SCHEDULER", "foo", "; using LCL"},
    {"XSCHED_HPF_LINGER_US", "abc", "; using 0 (the default)"},
    {"XSCHED_BUDGET_US", "abc", "; using 1000 (the default)"},
    {"XSCHED_HW_PRIORITY", "yes", "is not 0 or 1; using 1 (the default)"},
    {"XSCHED_GPU_LAZY_MARKS", "2", "is not 0 or 1; using 1 (the default)"},
    {"XSCHED_TOP_GATES", "on", "is not 0 or 1; using 0 (the default)"},
    {"XSCHED_STRICT_PRIORITY", "-1", "is not 0 or 1; using 0 (the default)"},
    {"XSCHED_PACE", "3", "is not 0 or 1; using 1 (the default)"},
    {"XSCHED_PACE_WAIT", "2", "is not 0 or 1; using 0 (the default)"},
    {"XSCHED_CORUN_US", "1e3", "; using 0 (the default)"},
    {"XSCHED_HOST_HW_QUEUES", "many", "; using 0 (the default: no limit)"},
    {"XSCHED_HOST_TIMESLICED", "2", "is not 0 or 1; using 0 (the default)"},
    {"CUDA_DEVICE_MAX_CONNECTIONS", "lots", "; the library takes it as unset"},
    {"GPU_MAX_HW_QUEUES", "4x", "; the library takes it as unset"},
    {"GPU_STREAMOPS_CP_WAIT", "yes", "; the library takes it as unset"},
    {"XSCHED_TRACE", "/nonexistent-xsched-dir/t.json", "cannot be written"},
    {"XSCHED_TRACE_EVENTS", "8", "; using 65536 (the default)"},
    {"XSCHED_STALL_RELEASE_US", "soon", "; using 1000000 (the default)"},
    {"XSCHED_BOARD", "relative/dir", "is not auto, off or an absolute directory; using auto"},
    {"XSCHED_BOARD_GROUP", "no-such-group-xsched", "is not a group; boards are made for this"},
};
#define NBAD (sizeof(bads) / sizeof(bads[0]))

/* Every name in quotes after getenv( or xs__int( in @path is in the table. */
static void check_table_complete(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		perror(path);
		exit(1);
	}
	static char src[65536];
	size_t len = fread(src, 1, sizeof(src) - 1, f);
	src[len] = '\0';
	fclose(f);
	int found = 0;
	static const char *const calls[] = {"getenv(\"", "xs__int(\""};
	for (size_t c = 0; c < 2; c++) {
		for (const char *p = src; (p = strstr(p, calls[c])) != NULL;) {
			p += strlen(calls[c]);
			size_t n = strcspn(p, "\"");
			bool known = false;
			for (size_t i = 0; i < NBAD; i++)
				known |= strlen(bads[i].name) == n && !strncmp(bads[i].name, p, n);
			if (!known) {
				fprintf(stderr, "%s reads %.*s, which this test's table lacks\n",
					path, (int)n, p);
				exit(1);
			}
			found++;
		}
	}
	CHECK(found >= (int)NBAD - 1); /* XSCHED_POLICY's check is in sched/sched.c */
}

/* Create and destroy an XQueue, which reads the environment, then shut down. */
static void use_library(void)
{
	HwQueueHandle hwq;
	XQueueHandle xq;
	CHECK_OK(HostQueueCreate(&hwq));
	CHECK_OK(XQueueCreate(&xq, hwq, kPreemptLevelBlock, 0));
	CHECK_OK(XQueueDestroy(xq));
	CHECK_OK(HwQueueDestroy(hwq));
	CHECK_OK(XSchedShutdown());
}

/* The number of lines of t_captured that report @b ("NAME=VALUE " ... instead). */
static int reports(const struct bad *b)
{
	char head[160];
	snprintf(head, sizeof(head), "xsched[core] warn: %s=%s ", b->name, b->value);
	int n = 0;
	for (const char *line = t_captured; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		if (!strncmp(line, head, strlen(head))) {
			char copy[600];
			snprintf(copy, sizeof(copy), "%.*s", (int)len, line);
			if (!strstr(copy, b->instead)) {
				fprintf(stderr, "\"%s\" does not say \"%s\"\n", copy, b->instead);
				exit(1);
			}
			n++;
		}
		line += len + (end != NULL);
	}
	return n;
}

/* In a child with XSCHED_LOG=@log (NULL: unset): every bad setting reported once over two
 * uses of the library; then a new bad value of one variable, reported once. */
static void bad_child(const char *log)
{
	if (log)
		CHECK(setenv("XSCHED_LOG", log, 1) == 0);
	for (size_t i = 0; i < NBAD; i++)
		CHECK(setenv(bads[i].name, bads[i].value, 1) == 0);
	t_capture_begin();
	use_library();
	use_library();
	t_capture_end("xsched[core]");
	for (size_t i = 0; i < NBAD; i++) {
		int n = reports(&bads[i]);
		if (n != 1) {
			fprintf(stderr,
				"XSCHED_LOG=%s: %s=%s reported %d times, expected once:\n%s",
				log ? log : "(unset)", bads[i].name, bads[i].value, n, t_captured);
			exit(1);
		}
	}
	CHECK(setenv("XSCHED_BUDGET_US", "xyz", 1) == 0);
	t_capture_begin();
	use_library();
	t_capture_end("xsched[core]");
	struct bad again = {"XSCHED_BUDGET_US", "xyz", "; using 1000 (the default)"};
	CHECK(reports(&again) == 1);
	CHECK(reports(&bads[0]) == 0);
	printf("XSCHED_LOG=%s: %zu bad settings reported once each\n", log ? log : "(unset)", NBAD);
	exit(0);
}

/* In a child with logging off: good values print nothing. */
static void good_child(void)
{
	static const char *const good[][2] = {
	    {"XSCHED_POLICY", "cfs"},        {"XSCHED_SCHEDULER", "lcl"},
	    {"XSCHED_BUDGET_US", "500"},     {"XSCHED_HW_PRIORITY", "0"},
	    {"XSCHED_CORUN_US", "0"},        {"CUDA_DEVICE_MAX_CONNECTIONS", "32"},
	    {"XSCHED_TRACE_EVENTS", "1024"}, {"XSCHED_STALL_RELEASE_US", "0"},
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(setenv(good[i][0], good[i][1], 1) == 0);
	t_capture_begin();
	use_library();
	t_capture_end("xsched");
	if (t_captured[0]) {
		fprintf(stderr, "good settings printed:\n%s", t_captured);
		exit(1);
	}
	printf("good settings: nothing printed\n");
	exit(0);
}

static void run(void (*fn)(const char *), const char *arg)
{
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		fn(arg);
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void good_child_arg(const char *unused)
{
	(void)unused;
	good_child();
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	check_table_complete(argv[1]);
	CHECK(unsetenv("XSCHED_LOG") == 0);
	run(bad_child, NULL);
	run(bad_child, "warn");
	run(bad_child, "error");
	run(good_child_arg, NULL);
	return 0;
}
