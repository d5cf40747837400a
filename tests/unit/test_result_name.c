/* XResultName(): every XResult by the name the header gives it, and a fixed name for a
 * value that is no XResult; the string is static (the same pointer at each call). */
#include <string.h>

#include "check.h"

static void check_name(XResult r, const char *want)
{
	const char *got = XResultName(r);
	if (!got || strcmp(got, want) != 0) {
		fprintf(stderr, "XResultName(%d) is \"%s\", expected \"%s\"\n", (int)r,
			got ? got : "(null)", want);
		exit(1);
	}
	CHECK(XResultName(r) == got);
}

int main(void)
{
	/* Before any other call: it needs nothing set up. */
	check_name(kXSchedErrorNotFound, "kXSchedErrorNotFound");
	check_name(kXSchedSuccess, "kXSchedSuccess");
	check_name(kXSchedErrorHardware, "kXSchedErrorHardware");
	check_name(kXSchedErrorInvalidValue, "kXSchedErrorInvalidValue");
	check_name(kXSchedErrorNotAllowed, "kXSchedErrorNotAllowed");
	check_name(kXSchedErrorNotSupported, "kXSchedErrorNotSupported");
	check_name(kXSchedErrorBadResponse, "kXSchedErrorBadResponse");
	check_name(kXSchedErrorUnknown, "kXSchedErrorUnknown");
	/* Values between and around them are no XResult. */
	const int others[] = {-1, 7, 8, 100, 998, 1000, 0x7fffffff};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		check_name((XResult)others[i], "XResult(unknown)");
	/* What a failed call returns is named: a handle of no object. */
	CHECK(strcmp(XResultName(XQueueWaitAll(0x1234)), "kXSchedErrorNotFound") == 0);
	printf("XResultName: 8 values and %zu others named\n", sizeof(others) / sizeof(others[0]));
	return 0;
}
