/* xsched-bench: clock, random numbers, samples, statistics, JSON lines, progress line and
 * the stall watchdog. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

struct xsb_out xsb_out;

int64_t xsb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t xsb_cpu_ns(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
	       ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

const char *xsb_tier_name(enum xsb_tier t)
{
	return t == XSB_TIER_HIGH ? "high" : t == XSB_TIER_MID ? "mid" : "low";
}

void xsb_sleep_until(int64_t t_ns)
{
	struct timespec ts = {.tv_sec = t_ns / 1000000000, .tv_nsec = t_ns % 1000000000};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void xsb_sleep_ns(int64_t ns)
{
	if (ns > 0)
		xsb_sleep_until(xsb_now_ns() + ns);
}

uint64_t xsb_rand(struct xsb_rng *r)
{
	/* splitmix64 */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double xsb_rand01(struct xsb_rng *r)
{
	return (double)(xsb_rand(r) >> 11) / 9007199254740992.0;
}

void xsb_samples_add(struct xsb_samples *s, const struct xsb_sample *x)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct xsb_sample *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			xsb_die("out of memory for samples");
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = *x;
}

void xsb_samples_free(struct xsb_samples *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int xsb__cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted @v. */
static double xsb__pct(const double *v, size_t n, double p)
{
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

void xsb_stats_of(const double *v, size_t n, struct xsb_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->n = n;
	if (!n)
		return;
	double *s = malloc(n * sizeof(*s));
	if (!s)
		xsb_die("out of memory for statistics");
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), xsb__cmp_double);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	st->p50 = xsb__pct(s, n, 50);
	st->p99 = xsb__pct(s, n, 99);
	st->max = s[n - 1];
	st->mean = sum / (double)n;
	free(s);
}

/* ---- JSON lines ---------------------------------------------------------------------- */

static pthread_mutex_t xsb__json_lock = PTHREAD_MUTEX_INITIALIZER;

void xsb_json_raw(const char *fmt, ...)
{
	if (!xsb_out.jsonl)
		return;
	va_list ap;
	va_start(ap, fmt);
	pthread_mutex_lock(&xsb__json_lock);
	vfprintf(xsb_out.jsonl, fmt, ap);
	fputc('\n', xsb_out.jsonl);
	pthread_mutex_unlock(&xsb__json_lock);
	va_end(ap);
}

void xsb_json_sample(const char *scenario, const char *config, const char *mode,
		     const struct xsb_sample *x, int64_t t0, double latency_ms)
{
	if (!xsb_out.jsonl)
		return;
	xsb_json_raw("{\"type\":\"sample\",\"scenario\":\"%s\",\"config\":\"%s\",\"mode\":\"%s\","
		     "\"class\":\"%s\",\"thread\":%d,\"task\":%d,\"latency_ms\":%.4f,"
		     "\"start_ms\":%.4f,\"end_ms\":%.4f,\"extra_ms\":%.4f}",
		     scenario, config, mode, xsb_tier_name(x->tier), x->lane, x->task, latency_ms,
		     (double)(x->start - t0) / 1e6, (double)(x->end - t0) / 1e6,
		     (double)x->extra / 1e6);
}

/* ---- progress line and watchdog -------------------------------------------------------- */

static pthread_mutex_t xsb__prog_lock = PTHREAD_MUTEX_INITIALIZER;
/* Under xsb__prog_lock: */
static char xsb__prog_label[128];
static long xsb__prog_total;
static double xsb__prog_duration;
static int64_t xsb__prog_t0;
static bool xsb__prog_active;
static bool xsb__prog_shown;
/* Not a terminal: when the last plain line was printed (0 = none yet). */
static int64_t xsb__prog_last_plain;
/* Lock-free: */
static atomic_long xsb__prog_done;
static atomic_llong xsb__last_progress_ns;
static int xsb__stall_s;
static void (*xsb__stall_hook)(void);
static volatile bool xsb__stalled; /* this run stalled once (watchdog thread only) */

void xsb_progress_begin(const char *label, long total, double duration_s)
{
	pthread_mutex_lock(&xsb__prog_lock);
	snprintf(xsb__prog_label, sizeof(xsb__prog_label), "%s", label);
	xsb__prog_total = total;
	xsb__prog_duration = duration_s;
	xsb__prog_t0 = xsb_now_ns();
	xsb__prog_active = true;
	atomic_store_explicit(&xsb__prog_done, 0, memory_order_relaxed);
	atomic_store_explicit(&xsb__last_progress_ns, xsb__prog_t0, memory_order_relaxed);
	xsb__stalled = false;
	pthread_mutex_unlock(&xsb__prog_lock);
}

void xsb_progress_add(long n)
{
	atomic_fetch_add_explicit(&xsb__prog_done, n, memory_order_relaxed);
	atomic_store_explicit(&xsb__last_progress_ns, xsb_now_ns(), memory_order_relaxed);
}

/* What the run has done: "12/48 tasks" (closed loop) or "355 tasks in 1.2 of 6.0 s"
 * (open loop), with the elapsed time. Lock held. */
static void xsb__progress_text(char *buf, size_t len, int64_t now)
{
	long done = atomic_load_explicit(&xsb__prog_done, memory_order_relaxed);
	double el = (double)(now - xsb__prog_t0) / 1e9;
	if (xsb__prog_total > 0)
		snprintf(buf, len, "[%s] %ld/%ld tasks, %.1f s", xsb__prog_label, done,
			 xsb__prog_total, el);
	else
		snprintf(buf, len, "[%s] %ld tasks in %.1f of %.1f s", xsb__prog_label, done, el,
			 xsb__prog_duration);
}

/* Not a terminal: a plain line of the run's progress, @end ("done") or not. Lock held. */
static void xsb__progress_plain(int64_t now, bool end)
{
	char text[256];
	xsb__progress_text(text, sizeof(text), now);
	fprintf(stderr, "  %s%s\n", text, end ? ", done" : "");
	fflush(stderr);
	xsb__prog_last_plain = now;
}

void xsb_progress_end(void)
{
	pthread_mutex_lock(&xsb__prog_lock);
	/* Not a terminal: a line at the end of each run, so that a log shows each row of the
	 * tables as it is measured (a table is printed when its scenario ends). */
	if (xsb__prog_active && !xsb_out.tty && !xsb_out.quiet)
		xsb__progress_plain(xsb_now_ns(), true);
	xsb__prog_active = false;
	if (xsb__prog_shown) {
		fprintf(stderr, "\r%-100s\r", "");
		fflush(stderr);
		xsb__prog_shown = false;
	}
	pthread_mutex_unlock(&xsb__prog_lock);
}

static void *xsb__progress_thread(void *arg)
{
	(void)arg;
	for (;;) {
		xsb_sleep_ns(250000000);
		int64_t now = xsb_now_ns();
		pthread_mutex_lock(&xsb__prog_lock);
		bool active = xsb__prog_active;
		char text[256];
		/* Not a terminal (a log, CI, a pipe): a plain line instead of a redrawn one, 10 s
		 * into a run and every 10 s after (counted from the last plain line, which
		 * xsb_progress_end also prints at the end of each run). */
		if (active && !xsb_out.tty && !xsb_out.quiet && now - xsb__prog_t0 >= 10000000000 &&
		    now - xsb__prog_last_plain >= 10000000000)
			xsb__progress_plain(now, false);
		if (active && xsb_out.tty && !xsb_out.quiet) {
			xsb__progress_text(text, sizeof(text), now);
			fprintf(stderr, "\r  %-96s", text);
			fflush(stderr);
			xsb__prog_shown = true;
		}
		char label[128];
		memcpy(label, xsb__prog_label, sizeof(label));
		pthread_mutex_unlock(&xsb__prog_lock);
		int64_t last = atomic_load_explicit(&xsb__last_progress_ns, memory_order_relaxed);
		if (active && xsb__stall_s > 0 && now - last > (int64_t)xsb__stall_s * 1000000000) {
			if (xsb__stall_hook && !xsb__stalled) {
				/* First stall of this run: say where, and let the hook try to
				 * get the run going (it resumes every queue). */
				fprintf(stderr,
					"\nxsched-bench: no task completed for %d s in [%s]; "
					"the run is stuck.\n",
					xsb__stall_s, label);
				xsb__stalled = true;
				xsb__stall_hook();
				atomic_store_explicit(&xsb__last_progress_ns, xsb_now_ns(),
						      memory_order_relaxed);
				continue;
			}
			fprintf(stderr,
				"\nxsched-bench: no task completed for %d s in [%s]; the run is "
				"stuck. Aborting.\n",
				xsb__stall_s, label);
			if (xsb_out.jsonl)
				fflush(xsb_out.jsonl);
			_exit(3);
		}
	}
	return NULL;
}

void xsb_watchdog_start(int stall_s, void (*on_stall)(void))
{
	xsb__stall_s = stall_s;
	xsb__stall_hook = on_stall;
	pthread_t t;
	if (pthread_create(&t, NULL, xsb__progress_thread, NULL) == 0)
		pthread_detach(t);
}

void xsb_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "xsched-bench: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}
