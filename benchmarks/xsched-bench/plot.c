/* xsched-bench --plot DIR: latency CDFs and short timelines through gnuplot.
 *
 * Every run hands its samples here (xsb_plot_run, from the results code). Runs are grouped
 * by scenario and configuration; after each scenario (xsb_plot_flush) every group gets
 * - DIR/<scenario>-<config>-cdf.{dat,gp,png,svg}: the high lane's latency CDF, one curve
 *   per mode, with the scenario's alone (or idle-device) run as the reference curve;
 * - for serve and preempt, DIR/<scenario>-<config>-timeline.{dat,gp,png,svg}: one panel per
 *   mode around that mode's p99 high request (time 0 at its arrival or submit), one row per
 *   lane, each task a bar from its submit (or arrival) to its observed completion; in
 *   preempt a high bar ends at its kernel's start.
 * The .dat and .gp files are always written; the images only when gnuplot is on PATH (each
 * script is run with DIR as working directory and needs nothing else, so `cd DIR && gnuplot
 * *.gp` renders a run made where gnuplot was missing).
 *
 * Single-threaded: called from the main thread between runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

struct xsb__curve {
	char mode[40];
	double *lat; /* high latencies in ms, sorted */
	size_t n;
	struct xsb_samples all; /* every lane's samples (timeline scenarios only) */
	int nlanes;
	int64_t t0;
};

struct xsb__group {
	char scenario[32];
	char config[48];
	struct xsb__curve *c;
	size_t n;
	bool reference; /* an alone or idle-device run */
};

static struct {
	char dir[512];
	char caption[1024]; /* device and date: small-font lines for a title (xsb__caption) */
	bool on;
	bool gnuplot;
	struct xsb__group *g;
	size_t n;
} xsb__plot;

static bool xsb__on_path(const char *prog)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	char buf[1024];
	for (const char *p = path; *p;) {
		size_t len = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? p : ".", prog);
		if (access(buf, X_OK) == 0)
			return true;
		p += len;
		if (*p == ':')
			p++;
	}
	return false;
}

/* Set the caption from @text: lines of at most XSB__CAPTION_COLS characters, broken at
 * spaces, each in the small font, joined by gnuplot's "\n", so that no title is cut off at
 * the image's edge. */
#define XSB__CAPTION_COLS 100
static void xsb__caption(const char *text)
{
	char *out = xsb__plot.caption;
	size_t cap = sizeof(xsb__plot.caption), len = 0;
	const char *p = text;
	while (*p && len + 16 < cap) {
		size_t n = strlen(p);
		if (n > XSB__CAPTION_COLS) {
			n = XSB__CAPTION_COLS;
			while (n > 20 && p[n] != ' ')
				n--;
		}
		len += (size_t)snprintf(out + len, cap - len, "%s{/*0.8 %.*s}", len ? "\\n" : "",
					(int)n, p);
		if (len >= cap)
			len = cap - 1;
		p += n;
		while (*p == ' ')
			p++;
	}
}

int xsb_plot_init(const char *dir, const char *device, const char *date, bool modeled)
{
	if (strlen(dir) >= sizeof(xsb__plot.dir) - 64) {
		fprintf(stderr, "xsched-bench: --plot: directory name too long\n");
		return -1;
	}
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "xsched-bench: --plot: cannot create %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	snprintf(xsb__plot.dir, sizeof(xsb__plot.dir), "%s", dir);
	char text[512];
	snprintf(text, sizeof(text), "%s%s, %s", modeled ? "NO GPU, figures of a model: " : "",
		 device, date);
	xsb__caption(text);
	xsb__plot.on = true;
	xsb__plot.gnuplot = xsb__on_path("gnuplot");
	if (xsb__plot.gnuplot)
		printf("plots: %s (PNG and SVG through gnuplot)\n", dir);
	else
		printf("plots: gnuplot not found on PATH: only data and gnuplot scripts go to %s "
		       "(render them with `cd %s && gnuplot *.gp`); the run goes on\n",
		       dir, dir);
	return 0;
}

static bool xsb__timeline_scenario(const char *scenario)
{
	return !strcmp(scenario, "serve") || !strcmp(scenario, "preempt");
}

static bool xsb__reference_config(const char *config)
{
	const char *slash = strrchr(config, '/');
	const char *last = slash ? slash + 1 : config;
	return !strcmp(last, "alone") || !strcmp(last, "idle");
}

static struct xsb__group *xsb__group_get(const char *scenario, const char *config)
{
	for (size_t i = 0; i < xsb__plot.n; i++)
		if (!strcmp(xsb__plot.g[i].scenario, scenario) &&
		    !strcmp(xsb__plot.g[i].config, config))
			return &xsb__plot.g[i];
	struct xsb__group *g = realloc(xsb__plot.g, (xsb__plot.n + 1) * sizeof(*g));
	if (!g)
		xsb_die("out of memory for plots");
	xsb__plot.g = g;
	g = &xsb__plot.g[xsb__plot.n++];
	memset(g, 0, sizeof(*g));
	snprintf(g->scenario, sizeof(g->scenario), "%s", scenario);
	snprintf(g->config, sizeof(g->config), "%s", config);
	g->reference = xsb__reference_config(config);
	return g;
}

static int xsb__cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void xsb_plot_run(const char *scenario, const char *config, const char *mode,
		  const struct xsb_samples *smp, int nlanes, int64_t t0)
{
	if (!xsb__plot.on)
		return;
	struct xsb__group *g = xsb__group_get(scenario, config);
	struct xsb__curve *c = realloc(g->c, (g->n + 1) * sizeof(*c));
	if (!c)
		xsb_die("out of memory for plots");
	g->c = c;
	c = &g->c[g->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->mode, sizeof(c->mode), "%s", mode);
	c->nlanes = nlanes;
	c->t0 = t0;
	bool keep = xsb__timeline_scenario(scenario) && !g->reference;
	for (int i = 0; i < nlanes; i++)
		for (size_t j = 0; j < smp[i].n; j++) {
			const struct xsb_sample *x = &smp[i].v[j];
			if (keep)
				xsb_samples_add(&c->all, x);
			if (!x->high)
				continue;
			if (!(c->n & (c->n + 1))) { /* n + 1 is a power of two: grow */
				double *v = realloc(c->lat, (2 * c->n + 2) * sizeof(*v));
				if (!v)
					xsb_die("out of memory for plots");
				c->lat = v;
			}
			c->lat[c->n++] = (double)(x->end - x->start) / 1e6;
		}
	if (c->n)
		qsort(c->lat, c->n, sizeof(*c->lat), xsb__cmp_double);
}

/* The reference curve of @g: the same scenario's "alone"/"idle" run (for a config "A/B",
 * first "A/alone"), else the shared SGEMM alone run (scenario "alone") for the scenarios
 * that compare with it. */
static const struct xsb__curve *xsb__reference(const struct xsb__group *g, const char **label)
{
	char prefixed[64] = "";
	const char *slash = strchr(g->config, '/');
	if (slash)
		snprintf(prefixed, sizeof(prefixed), "%.*s/alone", (int)(slash - g->config),
			 g->config);
	const char *tries[3][2] = {
	    {g->scenario, prefixed}, {g->scenario, "alone"}, {g->scenario, "idle"}};
	for (int t = 0; t < 3; t++)
		for (size_t i = 0; i < xsb__plot.n; i++) {
			const struct xsb__group *r = &xsb__plot.g[i];
			if (r->n && !strcmp(r->scenario, tries[t][0]) &&
			    !strcmp(r->config, tries[t][1])) {
				*label = t == 2 ? "idle device" : "alone";
				return &r->c[r->n - 1];
			}
		}
	if (strncmp(g->config, "two-models", 10))
		for (size_t i = 0; i < xsb__plot.n; i++)
			if (!strcmp(xsb__plot.g[i].scenario, "alone") && xsb__plot.g[i].n) {
				*label = "alone";
				return &xsb__plot.g[i].c[xsb__plot.g[i].n - 1];
			}
	return NULL;
}

/* @base without characters a file name should not have. */
static void xsb__file_base(const struct xsb__group *g, char *out, size_t len)
{
	snprintf(out, len, "%s-%s", g->scenario, g->config);
	for (char *p = out; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '+' || *p == '.' || *p == '-'))
			*p = '-';
}

static FILE *xsb__open_in_dir(const char *name)
{
	char path[768];
	snprintf(path, sizeof(path), "%s/%s", xsb__plot.dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "xsched-bench: --plot: cannot write %s: %s\n", path,
			strerror(errno));
	return f;
}

/* Open DIR/<base>-<what>.dat and DIR/<base>-<what>.gp for writing; their names (relative to
 * DIR) go to @dat and @gp, XSB__NAME bytes each. false, with nothing left open, when either
 * cannot be written. */
#define XSB__NAME 256
static bool xsb__open_pair(const char *base, const char *what, char *dat, char *gp, FILE **d,
			   FILE **f)
{
	snprintf(dat, XSB__NAME, "%s-%s.dat", base, what);
	snprintf(gp, XSB__NAME, "%s-%s.gp", base, what);
	*d = xsb__open_in_dir(dat);
	*f = *d ? xsb__open_in_dir(gp) : NULL;
	if (*f)
		return true;
	if (*d)
		fclose(*d);
	return false;
}

/* Run gnuplot on @script with the plot directory as working directory. */
static void xsb__gnuplot(const char *script)
{
	if (!xsb__plot.gnuplot)
		return;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		if (chdir(xsb__plot.dir) == 0)
			execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "xsched-bench: --plot: gnuplot failed on %s/%s\n", xsb__plot.dir,
			script);
}

/* The terminals of every script: PNG, then the same plot as SVG. */
static void xsb__gp_output(FILE *f, const char *base, const char *what, int w, int h, bool png)
{
	if (png)
		fprintf(f, "set terminal pngcairo size %d,%d font 'DejaVu Sans,10'\n", w, h);
	else
		fprintf(f, "set terminal svg size %d,%d font 'DejaVu Sans,10'\n", w, h);
	fprintf(f, "set output '%s-%s.%s'\n", base, what, png ? "png" : "svg");
}

static void xsb__write_cdf(const struct xsb__group *g, const char *base)
{
	const char *rlabel = NULL;
	const struct xsb__curve *ref = xsb__reference(g, &rlabel);
	enum { MAX_CURVES = 65 }; /* the reference and the modes of one table (64 rows) */
	const struct xsb__curve *cs[MAX_CURVES];
	const char *labels[MAX_CURVES];
	int nc = 0;
	if (ref && ref->n) {
		cs[nc] = ref;
		labels[nc++] = rlabel;
	}
	for (size_t i = 0; i < g->n && nc < MAX_CURVES; i++)
		if (g->c[i].n) {
			cs[nc] = &g->c[i];
			labels[nc++] = g->c[i].mode;
		}
	if (!nc)
		return;
	char dat[XSB__NAME], gp[XSB__NAME];
	FILE *d, *f;
	if (!xsb__open_pair(base, "cdf", dat, gp, &d, &f))
		return;
	for (int k = 0; k < nc; k++) {
		fprintf(d, "# %s: latency_ms fraction\n", labels[k]);
		for (size_t j = 0; j < cs[k]->n; j++)
			fprintf(d, "%.4f %.5f\n", cs[k]->lat[j],
				(double)(j + 1) / (double)cs[k]->n);
		fprintf(d, "\n\n");
	}
	fclose(d);
	bool preempt = !strcmp(g->scenario, "preempt");
	for (int png = 1; png >= 0; png--) {
		xsb__gp_output(f, base, "cdf", 900, 560, png);
		fprintf(f,
			"set title \"%s %s: high-priority %s, CDF per mode\\n%s\"\n"
			"set xlabel '%s (ms, log scale)'\nset ylabel 'fraction of samples'\n"
			"set logscale x\nset yrange [0:1.02]\nset grid\nset key bottom right\n"
			"plot ",
			g->scenario, g->config, preempt ? "submit-to-start time" : "latency",
			xsb__plot.caption, preempt ? "submit to kernel start" : "latency");
		for (int k = 0; k < nc; k++)
			fprintf(f, "%s'%s' index %d using 1:2 with steps lw %d title '%s'",
				k ? ", \\\n     " : "", dat, k, k == 0 && ref ? 3 : 2, labels[k]);
		fprintf(f, "\nunset output\n");
	}
	fclose(f);
	xsb__gnuplot(gp);
}

/* The high sample of @c at its p99 (nearest rank), or NULL. */
static const struct xsb_sample *xsb__p99_sample(const struct xsb__curve *c)
{
	if (!c->n)
		return NULL;
	size_t rank = (size_t)((double)c->n * 0.99 + 0.999999);
	double want = c->lat[(rank ? rank : 1) - 1];
	for (size_t j = 0; j < c->all.n; j++) {
		const struct xsb_sample *x = &c->all.v[j];
		if (x->high && (double)(x->end - x->start) / 1e6 == want)
			return x; /* the same expression as in xsb_plot_run: exact */
	}
	return NULL;
}

/* One panel's bars: index 3k = high tasks, 3k+1 / 3k+2 = low tasks of even / odd number
 * (two shades, so that back-to-back tasks stay apart); x in ms from @at. */
static void xsb__timeline_data(FILE *d, const struct xsb__curve *c, int64_t at, double w0,
			       double w1)
{
	for (int part = 0; part < 3; part++) {
		fprintf(d, "# %s %s: start_ms lane length_ms\n", c->mode, part ? "low" : "high");
		int n = 0;
		for (size_t j = 0; j < c->all.n; j++) {
			const struct xsb_sample *x = &c->all.v[j];
			if (x->high != (part == 0) || (part && (x->task & 1) != part - 1))
				continue;
			double s = (double)(x->start - at) / 1e6, e = (double)(x->end - at) / 1e6;
			if (e < w0 || s > w1)
				continue;
			s = s < w0 ? w0 : s;
			e = e > w1 ? w1 : e;
			fprintf(d, "%.4f %d %.4f\n", s, x->lane, e - s);
			n++;
		}
		if (!n) /* gnuplot refuses an empty block: one point off the panel */
			fprintf(d, "%.4f 0 0\n", w1 * 10);
		fprintf(d, "\n\n");
	}
}

/* Panel @k of a timeline: the mode of @c around its p99 high sample @p (the data written
 * to @d with the PNG's script only: the SVG's plots the same blocks). */
static void xsb__timeline_panel(FILE *f, FILE *d, const struct xsb__curve *c,
				const struct xsb_sample *p, int k, const char *dat,
				const char *unit)
{
	/* The panel spans its own request and half as much again. */
	double ms = (double)(p->end - p->start) / 1e6;
	double w1 = 1.5 * (ms > 0.2 ? ms : 0.2), w0 = -w1 / 6;
	if (d)
		xsb__timeline_data(d, c, p->start, w0, w1);
	fprintf(f,
		"set title '%s: this %s %.3f ms' offset 0,-0.5\n"
		"set xrange [%.4f:%.4f]\nset yrange [%d.5:-0.5]\n"
		"plot '%s' index %d using 1:2:3:(0) with vectors nohead lw 5 "
		"lc rgb '#d62728' title 'high', \\\n"
		"     '' index %d using 1:2:3:(0) with vectors nohead lw 3 "
		"lc rgb '#1f77b4' title 'low', \\\n"
		"     '' index %d using 1:2:3:(0) with vectors nohead lw 3 "
		"lc rgb '#7fb8e0' notitle\n",
		c->mode, unit, ms, w0, w1, c->nlanes - 1, dat, 3 * k, 3 * k + 1, 3 * k + 2);
}

static void xsb__write_timeline(const struct xsb__group *g, const char *base)
{
	int panels = 0;
	for (size_t i = 0; i < g->n; i++)
		panels += xsb__p99_sample(&g->c[i]) != NULL;
	if (!panels)
		return;
	char dat[XSB__NAME], gp[XSB__NAME];
	FILE *d, *f;
	if (!xsb__open_pair(base, "timeline", dat, gp, &d, &f))
		return;
	bool preempt = !strcmp(g->scenario, "preempt");
	const char *unit = preempt ? "kernel" : "request";
	for (int png = 1; png >= 0; png--) {
		xsb__gp_output(f, base, "timeline", 1000, 110 + 210 * panels, png);
		fprintf(f,
			"set multiplot layout %d,1 title \"%s %s: each mode around its p99 high %s "
			"(time 0 = its %s)\\nbars: tasks from submit to observed completion%s"
			"\\n%s\"\n"
			"set xlabel 'ms'\nset ylabel 'lane (0 = high)'\n"
			"set grid x\nset key outside right\nunset arrow\n"
			"set arrow 1 from 0, graph 0 to 0, graph 1 nohead dt 2\n",
			panels, g->scenario, g->config, unit, preempt ? "submit" : "arrival",
			preempt ? " (high: to its kernel's start)" : "", xsb__plot.caption);
		int k = 0;
		for (size_t i = 0; i < g->n; i++) {
			const struct xsb_sample *p = xsb__p99_sample(&g->c[i]);
			if (p)
				xsb__timeline_panel(f, png ? d : NULL, &g->c[i], p, k++, dat, unit);
		}
		fprintf(f, "unset multiplot\nunset output\n");
	}
	fclose(d);
	fclose(f);
	xsb__gnuplot(gp);
}

static void xsb__group_free(struct xsb__group *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free(g->c[i].lat);
		xsb_samples_free(&g->c[i].all);
	}
	free(g->c);
	memset(g, 0, sizeof(*g));
}

void xsb_plot_flush(void)
{
	if (!xsb__plot.on)
		return;
	size_t kept = 0;
	for (size_t i = 0; i < xsb__plot.n; i++) {
		struct xsb__group *g = &xsb__plot.g[i];
		if (g->reference) {
			xsb__plot.g[kept++] = *g;
			continue;
		}
		char base[128];
		xsb__file_base(g, base, sizeof(base));
		xsb__write_cdf(g, base);
		if (xsb__timeline_scenario(g->scenario))
			xsb__write_timeline(g, base);
		xsb__group_free(g);
	}
	xsb__plot.n = kept;
}

void xsb_plot_fini(void)
{
	xsb_plot_flush();
	for (size_t i = 0; i < xsb__plot.n; i++)
		xsb__group_free(&xsb__plot.g[i]);
	free(xsb__plot.g);
	memset(&xsb__plot, 0, sizeof(xsb__plot));
}
