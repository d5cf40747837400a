#include "check.h"

#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t t_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void t_sleep_us(int64_t us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts))
		;
}

bool t_wait_for(bool (*pred)(void *arg), void *arg, int timeout_ms)
{
	int64_t end = t_now_us() + (int64_t)timeout_ms * 1000;
	while (!pred(arg)) {
		if (t_now_us() > end)
			return false;
		t_sleep_us(100);
	}
	return true;
}

XResult t_sleep_fn(void *data)
{
	t_sleep_us(*(int64_t *)data);
	return kXSchedSuccess;
}

void t_submit_fn(XQueueHandle xq, HostFunction fn, void *data)
{
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateHostFunc(&cmd, fn, data));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
}

void t_run_fn(XQueueHandle xq, HostFunction fn, void *data)
{
	HwCommandHandle cmd;
	CHECK_OK(HwCommandCreateHostFunc(&cmd, fn, data));
	CHECK_OK(XQueueSubmit(xq, cmd));
	CHECK_OK(XQueueWait(xq, cmd));
	CHECK_OK(HwCommandDestroy(cmd));
}

XQueueStats t_stats(XQueueHandle xq)
{
	XQueueStats s;
	CHECK_OK(XQueueGetStats(xq, &s));
	return s;
}

/* The first hung child's threads, printed by gdb where the machine has it (the test's log
 * then says where it hung), with gdb's own complaint where it cannot attach (ptrace
 * restricted); nothing where there is no gdb. Once per test: each costs seconds. */
static void t_print_stacks(pid_t pid)
{
	static bool printed;
	if (printed || access("/usr/bin/gdb", X_OK) != 0)
		return;
	printed = true;
	char cmd[200];
	snprintf(cmd, sizeof cmd,
		 "timeout 20 /usr/bin/gdb -batch -nx -p %d -ex 'thread apply all bt' "
		 "</dev/null 2>&1 | grep -E '^(Thread|#)|ptrace|[Pp]ermission|[Cc]ould not'",
		 (int)pid);
	printf("the hung child's threads (gdb):\n");
	fflush(stdout);
	if (system(cmd) != 0)
		printf("(gdb printed nothing)\n");
	fflush(stdout);
}

int t_reap(pid_t pid, int timeout_ms)
{
	for (int i = 0; i * 10 < timeout_ms; i++) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		t_sleep_us(10000);
	}
	t_print_stacks(pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

void t_pair_open(struct t_pair *p, XPreemptLevel level)
{
	CHECK_OK(HostQueueCreate(&p->hl));
	CHECK_OK(HostQueueCreate(&p->hh));
	CHECK_OK(XQueueCreate(&p->low, p->hl, level, 0));
	CHECK_OK(XQueueCreate(&p->high, p->hh, level, 0));
	CHECK_OK(XHintPriority(p->low, 0));
	CHECK_OK(XHintPriority(p->high, 10));
}

void t_pair_close(struct t_pair *p)
{
	CHECK_OK(XQueueDestroy(p->low));
	CHECK_OK(XQueueDestroy(p->high));
	CHECK_OK(HwQueueDestroy(p->hl));
	CHECK_OK(HwQueueDestroy(p->hh));
}

_Noreturn void t_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "%s:%d: check failed: %s\n  ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* @v as an integer when it is one, else with 4 significant digits. */
static const char *t__num(long double v, char *buf, size_t n)
{
	if (v < 0 && v >= (long double)INT64_MIN && v == (long double)(long long)v)
		snprintf(buf, n, "%lld", (long long)v);
	else if (v >= 0 && v <= (long double)UINT64_MAX && v == (long double)(unsigned long long)v)
		snprintf(buf, n, "%llu", (unsigned long long)v);
	else
		snprintf(buf, n, "%.4Lg", v);
	return buf;
}

_Noreturn void t_fail_cmp(const char *file, int line, const char *a, const char *op, const char *b,
			  long double va, long double vb)
{
	char sa[48], sb[48];
	fflush(stdout);
	fprintf(stderr, "%s:%d: check failed: expected %s %s %s; measured %s = %s, %s = %s\n", file,
		line, a, op, b, a, t__num(va, sa, sizeof(sa)), b, t__num(vb, sb, sizeof(sb)));
	exit(1);
}

/* The recorded sleeps: time taken over time asked, in arrival order (relaxed atomics: a
 * reader may see a late writer's value or the one before, either is a fair sample). */
enum { T__SAMPLES = 1 << 16 };
static _Atomic float t__took[T__SAMPLES];
static atomic_uint t__n;

void t_work_us(int64_t us)
{
	int64_t t0 = t_now_us();
	t_sleep_us(us);
	int64_t took = t_now_us() - t0;
	unsigned i = atomic_fetch_add_explicit(&t__n, 1, memory_order_relaxed);
	if (i < T__SAMPLES && us > 0)
		atomic_store_explicit(&t__took[i], (float)took / (float)us, memory_order_relaxed);
}

/* Each thread's run-queue delay, in ns, from /proc/self/task/N/schedstat (its second
 * field), up to T__THREADS of them; false where Linux does not give it. */
enum { T__THREADS = 2048 };
struct t__wait {
	int tid;
	int64_t ns;
};
static bool t__waits(struct t__wait *w, int *n)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return false;
	*n = 0;
	for (struct dirent *e; (e = readdir(d)) && *n < T__THREADS;) {
		if (e->d_name[0] == '.')
			continue;
		char path[64];
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/schedstat", e->d_name);
		FILE *f = fopen(path, "r");
		long long run, wait;
		if (f && fscanf(f, "%lld %lld", &run, &wait) == 2)
			w[(*n)++] = (struct t__wait){atoi(e->d_name), wait};
		if (f)
			fclose(f);
	}
	closedir(d);
	return *n > 0;
}

/* The window: its start, and each thread's delay then (test threads only: no lock). */
static int64_t t__t0_us;
static struct t__wait t__w0[T__THREADS];
static int t__nw0;
static bool t__w0_ok;

void t_host_reset(void)
{
	atomic_store(&t__n, 0);
	t__w0_ok = t__waits(t__w0, &t__nw0);
	t__t0_us = t_now_us();
}

/* T_HOST_VERBOSE: each thread's name and wait in the window. */
static void t__print_wait(int tid, int64_t ns, int64_t dt_us)
{
	char path[64], name[32] = "?";
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
	FILE *f = fopen(path, "r");
	if (f && fgets(name, sizeof(name), f))
		name[strcspn(name, "\n")] = '\0';
	if (f)
		fclose(f);
	printf("  thread %d (%s): waited %.1f%% of the window\n", tid, name,
	       100.0 * (double)ns / 1000.0 / (double)dt_us);
}

static int t__cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

t_host t_host_get(void)
{
	static float v[T__SAMPLES];
	static struct t__wait w[T__THREADS];
	int64_t dt = t_now_us() - t__t0_us;
	t_host h = {.secs = (double)dt / 1e6, .wait_max = -1, .wait = -1};
	int nw;
	if (t__w0_ok && dt > 0 && t__waits(w, &nw)) {
		int64_t worst = 0, all = 0;
		for (int i = 0; i < nw; i++) {
			int64_t w0 = 0; /* a thread started since: all its delay */
			for (int j = 0; j < t__nw0; j++)
				if (t__w0[j].tid == w[i].tid)
					w0 = t__w0[j].ns;
			worst = w[i].ns - w0 > worst ? w[i].ns - w0 : worst;
			all += w[i].ns - w0;
			if (getenv("T_HOST_VERBOSE"))
				t__print_wait(w[i].tid, w[i].ns - w0, dt);
		}
		h.wait_max = (double)worst / 1000.0 / (double)dt;
		h.wait = (double)all / 1000.0 / (double)dt;
	}
	unsigned n = atomic_load(&t__n);
	h.n = n;
	if (n > T__SAMPLES)
		n = T__SAMPLES;
	if (!n)
		return h;
	for (unsigned i = 0; i < n; i++)
		v[i] = atomic_load_explicit(&t__took[i], memory_order_relaxed);
	qsort(v, n, sizeof(v[0]), t__cmp_float);
	h.p50 = v[(n - 1) / 2];
	h.p99 = v[(unsigned)((n - 1) * 0.99)];
	return h;
}

static int t__skipped;

static void t__vskip(const char *fmt, va_list ap)
{
	char why[1536];
	vsnprintf(why, sizeof(why), fmt, ap);
	printf("SKIP: %s\n", why);
	fflush(stdout);
	t__skipped++;
}

void t_skip_part(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	t__vskip(fmt, ap);
	va_end(ap);
}

_Noreturn void t_skip(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	t__vskip(fmt, ap);
	va_end(ap);
	exit(t_exit());
}

int t_exit(void)
{
	if (t__skipped)
		printf("%d part%s skipped (the lines starting SKIP say what and why); every check "
		       "made passed\n",
		       t__skipped, t__skipped > 1 ? "s" : "");
	fflush(stdout);
	return t__skipped ? 77 : 0;
}

/* Why the host did not give @h's window the time a bound needs (@tail: also the sleeps'
 * p99 within @tail times their median; 0: not asked), into @why; false where it did. */
/* Whether this is a sanitizer build: its instrumentation stretches every path of the
 * library and the test by several times, unevenly, which no run-queue figure shows. */
static bool t__sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	return true;
#else
	return false;
#endif
#else
	return false;
#endif
}

static bool t__host_short(const t_host *h, double tail, char *why, size_t n)
{
	if (t__sanitized()) {
		snprintf(why, n,
			 "a sanitizer build stretches the library's and the test's paths by "
			 "several times, unevenly: timing bounds are judged in plain builds");
		return true;
	}
	if (h->wait_max < 0) {
		snprintf(why, n,
			 "cannot tell whether the host gave the test's threads the CPU it "
			 "needs (no /proc/self/task/N/schedstat)");
		return true;
	}
	if (h->wait_max > T_HOST_WAIT) {
		snprintf(why, n,
			 "it needs every thread of the test to wait for a CPU at most %.0f%% "
			 "of the %.2f s window; one waited %.0f%% (all together %.2f s per s)",
			 100 * T_HOST_WAIT, h->secs, 100 * h->wait_max, h->wait);
		return true;
	}
	if (tail > 0 && !(h->n > 0 && h->p99 <= tail * h->p50)) {
		snprintf(why, n,
			 "it needs the modelled commands' sleeps at most %.2fx longer at p99 "
			 "than at the median; they took %.2fx their time at p50, %.2fx at p99 (%u "
			 "of them)",
			 tail, h->p50, h->p99, h->n);
		return true;
	}
	return false;
}

static bool t__vhost_ok(const t_host *h, double tail, const char *what, va_list ap)
{
	char part[512], why[384];
	if (!t__host_short(h, tail, why, sizeof(why)))
		return true;
	vsnprintf(part, sizeof(part), what, ap);
	t_skip_part("%s: not judged: %s", part, why);
	return false;
}

bool t_host_ok(const t_host *h, const char *what, ...)
{
	va_list ap;
	va_start(ap, what);
	bool ok = t__vhost_ok(h, 0, what, ap);
	va_end(ap);
	return ok;
}

void t_timed_miss(const char *file, int line, const t_host *h, double tail, const char *cond,
		  const char *fmt, ...)
{
	char what[768], why[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!t__host_short(h, tail, why, sizeof(why)))
		t_fail(file, line, cond, "%s", what);
	t_skip_part("%s:%d: %s; not judged: %s", file, line, what, why);
}
