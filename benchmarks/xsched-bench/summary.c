/* xsched-bench: the closing summary. The scenarios' target lines note, per configuration,
 * the high lane's figure and the lower work kept under native streams, hardware stream
 * priority and the library's mode the targets are for; main prints them as one table at
 * the end, so that the last screen of a run says what it measured. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

enum { XSB__COLS = 3, XSB__ROWS = 64, XSB__LINES = 8 };

/* Columns: native streams, hardware priority, the library. */
static const char *const xsb__col_modes[XSB__COLS - 1] = {"native", "native-prio"};

struct xsb__srow {
	char what[64];
	bool ms;      /* figures in ms (else over alone) */
	char lib[24]; /* the library's mode of this row */
	bool has[XSB__COLS];
	double v[XSB__COLS], low[XSB__COLS];
	char verdict[12]; /* the library mode's target word */
};

static struct xsb__srow xsb__rows[XSB__ROWS];
static int xsb__nrows;
static char xsb__lines[XSB__LINES][200];
static int xsb__nlines;

static struct xsb__srow *xsb__row_of(const char *what, bool ms, const char *lib)
{
	for (int i = 0; i < xsb__nrows; i++)
		if (!strcmp(xsb__rows[i].what, what))
			return &xsb__rows[i];
	if (xsb__nrows == XSB__ROWS)
		return NULL;
	struct xsb__srow *r = &xsb__rows[xsb__nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->what, sizeof(r->what), "%s", what);
	snprintf(r->lib, sizeof(r->lib), "%s", lib);
	r->ms = ms;
	return r;
}

void xsb_summary_note(const char *what, bool ms, const char *lib, const char *mode, double value,
		      double low, const char *verdict)
{
	int col = !strcmp(mode, lib) ? XSB__COLS - 1 : -1;
	for (int i = 0; i < XSB__COLS - 1 && col < 0; i++)
		if (!strcmp(mode, xsb__col_modes[i]))
			col = i;
	if (col < 0)
		return;
	struct xsb__srow *r = xsb__row_of(what, ms, lib);
	if (!r)
		return;
	r->has[col] = true;
	r->v[col] = value;
	r->low[col] = low;
	if (col == XSB__COLS - 1)
		snprintf(r->verdict, sizeof(r->verdict), "%s", verdict);
}

void xsb_summary_line(const char *fmt, ...)
{
	if (xsb__nlines == XSB__LINES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(xsb__lines[xsb__nlines++], sizeof(xsb__lines[0]), fmt, ap);
	va_end(ap);
}

static void xsb__cell(char *buf, size_t len, const struct xsb__srow *r, int col)
{
	if (!r->has[col])
		snprintf(buf, len, "-");
	else if (r->ms)
		snprintf(buf, len, "%.3f ms", r->v[col]);
	else
		snprintf(buf, len, "%.2fx", r->v[col]);
}

static void xsb__low_cell(char *buf, size_t len, const struct xsb__srow *r, int col)
{
	if (!r->has[col] || r->low[col] < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.3f", r->low[col]);
}

void xsb_summary_print(bool modeled)
{
	if (!xsb__nrows && !xsb__nlines)
		return;
	printf("\nsummary: per configuration, the high-priority lane's p99 over alone (preempt: "
	       "its submit-to-start p50)\nand the lower-priority work kept over native "
	       "streams'%s\n",
	       modeled ? " (HOST MODEL: no GPU was used; these are not GPU figures)" : "");
	if (xsb__nrows)
		printf("  %-34s %10s %10s %10s %-12s %13s %13s  %s\n", "configuration", "native",
		       "hw prio", "libxsched", "(lib mode)", "low: hw prio", "low: lib", "target");
	for (int i = 0; i < xsb__nrows; i++) {
		const struct xsb__srow *r = &xsb__rows[i];
		char v[XSB__COLS][24], low[2][16];
		for (int c = 0; c < XSB__COLS; c++)
			xsb__cell(v[c], sizeof(v[c]), r, c);
		xsb__low_cell(low[0], sizeof(low[0]), r, 1);
		xsb__low_cell(low[1], sizeof(low[1]), r, XSB__COLS - 1);
		char lib[32];
		snprintf(lib, sizeof(lib), "(%s)", r->lib);
		printf("  %-34s %10s %10s %10s %-12s %13s %13s  %s\n", r->what, v[0], v[1], v[2],
		       lib, low[0], low[1], r->has[XSB__COLS - 1] ? r->verdict : "-");
	}
	for (int i = 0; i < xsb__nlines; i++)
		printf("  %s\n", xsb__lines[i]);
}
