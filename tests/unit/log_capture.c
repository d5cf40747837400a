#include "log_capture.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

char t_captured[8192];
static int saved_stderr = -1;
static FILE *capture_file;

void t_capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	saved_stderr = dup(STDERR_FILENO);
	if (capture_file && saved_stderr >= 0)
		dup2(fileno(capture_file), STDERR_FILENO);
}

int t_capture_end(const char *tag)
{
	int count = 0;
	fflush(stderr);
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		close(saved_stderr);
		saved_stderr = -1;
	}
	t_captured[0] = '\0';
	if (!capture_file)
		return -1;
	rewind(capture_file);
	size_t len = fread(t_captured, 1, sizeof(t_captured) - 1, capture_file);
	t_captured[len] = '\0';
	fclose(capture_file);
	capture_file = NULL;
	for (const char *p = t_captured; (p = strstr(p, tag)) != NULL; p++)
		count++;
	return count;
}

bool t_capturing(void)
{
	return saved_stderr >= 0;
}
