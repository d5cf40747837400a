/* Capture what the library prints on stderr, to count its log lines in tests.
 * Not thread-safe itself; library threads may print while a capture is on. */
#ifndef XS_TEST_LOG_CAPTURE_H
#define XS_TEST_LOG_CAPTURE_H

#include <stdbool.h>

/* The text of the last finished capture. */
extern char t_captured[8192];

/* Redirect stderr into a temporary file. */
void t_capture_begin(void);
/* Restore stderr, keep the text in t_captured and return the number of occurrences of
 * @tag in it (-1 if the capture could not be set up). */
int t_capture_end(const char *tag);
/* True between t_capture_begin() and t_capture_end(). */
bool t_capturing(void);

#endif
