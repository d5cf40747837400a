/* xsched-bench: what libxsched does for a latency-critical queue that shares a GPU with
 * best-effort work, scenario by scenario and mode by mode. See doc/bench.md. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static const char *const xsb__all[] = {"systematic", "latency", "two-models", "serve", "corun",
				       "mlfq",       "preempt", "overhead",   "tune",  "procs"};
#define XSB_NSCEN (sizeof(xsb__all) / sizeof(xsb__all[0]))

static void xsb__usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: xsched-bench [options]\n"
	    "Runs GPU work from several threads at two priorities, directly on streams and\n"
	    "through libxsched, and prints per-mode latency tables.\n"
	    "\n"
	    "  --scenario NAME|all  systematic, latency, two-models, serve, corun, mlfq,\n"
	    "                       preempt, overhead, tune, procs (serve's load with each\n"
	    "                       lane in a process of its own)\n"
	    "                       (a comma-separated list is accepted; default all)\n"
	    "  --modes LIST         comma-separated: native, native-prio, xsched (the library's\n"
	    "                       defaults: the highest level, nothing set), xsched-lv1,\n"
	    "                       xsched-lv2, xsched-lv3, xsched-lv1+prio, xsched-lv2+prio,\n"
	    "                       xsched-lv3+prio (default: all; levels the hardware lacks\n"
	    "                       are skipped with a note; mlfq runs its own four)\n"
	    "  --duration S         seconds per mode of two-models (default 60; --quick: 1.5),\n"
	    "                       serve, corun and mlfq (6; --quick: 1)\n"
	    "  --lows LIST          serve, corun, mlfq and procs: numbers of low lanes, comma-\n"
	    "                       separated (serve 7,15,31; corun 7,31,127; mlfq 7; procs\n"
	    "                       1,3,7,15 (at most 63); --quick: 7, 7,31, 7 and 3)\n"
	    "  --shapes LIST        corun: stream-mixed, gemm-mixed, stream-memory,\n"
	    "                       gemm-compute (default all; --quick: the two mixed ones)\n"
	    "  --tasks N            tasks per thread (systematic 10, latency 50, preempt 100\n"
	    "                       samples, overhead 50)\n"
	    "  --threads N          threads of systematic and tune (16) and latency (8, at most)\n"
	    "  --backend B          auto (default: CUDA if a device is found, else host), cuda,\n"
	    "                       hip, host (a model of a GPU on the CPU)\n"
	    "  --launch-config C    low-priority XQueues' threshold:batch per level, e.g.\n"
	    "                       lv1=2:1,lv2=16:8 (default: the library's, 16:8)\n"
	    "  --large-batch N      two-models: batch of the large model (default 8)\n"
	    "  --rate R             two-models: requests per second of the small model (20)\n"
	    "  --mid-rate R         corun: the mid lane's requests per second (25); 0 = back\n"
	    "                       to back, a middle tier that is always busy\n"
	    "  --jsonl PATH         write every sample and summary as JSON lines\n"
	    "  --plot DIR           write per scenario the high lane's latency CDF of every\n"
	    "                       mode, and for serve and preempt a short timeline, as PNG\n"
	    "                       and SVG through gnuplot (data and scripts only without it)\n"
	    "  --quick              a short run (host backend: about 75 s on 2 cores)\n"
	    "  --quiet              no progress line\n"
	    "  --objective X        XHintLatencyObjective(X) on the high lanes of xsched modes:\n"
	    "                       their slowdown against alone may be X (e.g. 1.2); each\n"
	    "                       task (request) is one unit (XQueueBeginUnit), paced: the\n"
	    "                       engine hands the slack to the lows one slice per request\n"
	    "  --objective-csv PATH with --objective: the high lanes' measured slowdown and the\n"
	    "                       co-run budget in force every 10 ms, as CSV (mode, lane,\n"
	    "                       t_s, slowdown_permille, alone_us (a unit's), corun_budget_us\n"
	    "                       (-1: not limited), completed, pace_eighths)\n"
	    "  --seed N             random seed of think times (default 1)\n"
	    "  --stall S            abort when no task completes for S seconds (default 60)\n"
	    "  --help               this text\n");
}

static int xsb__parse_cfg(struct xsb_opts *o, const char *arg)
{
	char *dup = strdup(arg);
	if (!dup)
		return -1;
	int ret = 0;
	for (char *save = NULL, *tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int lv;
		long long t, b;
		if (sscanf(tok, "lv%d=%lld:%lld", &lv, &t, &b) != 3 || lv < 1 || lv > 3 || t < 1 ||
		    b < 1 || b > t) {
			fprintf(stderr,
				"xsched-bench: bad launch config '%s' (want lvN=T:B, "
				"1 <= B <= T)\n",
				tok);
			ret = -1;
			break;
		}
		o->cfg[lv].threshold = t;
		o->cfg[lv].batch = b;
		o->cfg_set[lv] = true;
	}
	free(dup);
	return ret;
}

static int xsb__parse_modes(struct xsb_opts *o, const char *arg)
{
	char *dup = strdup(arg);
	if (!dup)
		return -1;
	o->nmodes = 0;
	int ret = 0;
	for (char *save = NULL, *tok = strtok_r(dup, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct xsb_mode *m = xsb_mode_find(tok);
		if (!m || o->nmodes >= sizeof(o->modes) / sizeof(o->modes[0])) {
			fprintf(stderr, "xsched-bench: unknown mode '%s'\n", tok);
			ret = -1;
			break;
		}
		o->modes[o->nmodes++] = m;
	}
	free(dup);
	return ret;
}

static int xsb__parse_lows(struct xsb_opts *o, const char *arg)
{
	o->nlows = 0;
	for (const char *p = arg; *p;) {
		char *end;
		long n = strtol(p, &end, 10);
		if (end == p || n < 1 || n > 255 || (*end && *end != ',') ||
		    o->nlows >= (int)(sizeof(o->lows) / sizeof(o->lows[0]))) {
			fprintf(stderr, "xsched-bench: --lows wants up to 8 numbers 1..255, "
					"comma-separated\n");
			return -1;
		}
		o->lows[o->nlows++] = (int)n;
		p = *end ? end + 1 : end;
	}
	return o->nlows ? 0 : -1;
}

static int xsb__check_shapes(const char *arg)
{
	char *dup = strdup(arg);
	if (!dup)
		return -1;
	int ret = 0;
	for (char *save = NULL, *tok = strtok_r(dup, ",", &save); tok && !ret;
	     tok = strtok_r(NULL, ",", &save)) {
		ret = -1;
		for (size_t i = 0; xsb_corun_shape_name(i); i++)
			if (!strcmp(tok, xsb_corun_shape_name(i)))
				ret = 0;
		if (ret)
			fprintf(stderr, "xsched-bench: unknown corun shape '%s'\n", tok);
	}
	free(dup);
	return ret;
}

static bool xsb__scenario_selected(const char *list, const char *name)
{
	if (!strcmp(list, "all"))
		return true;
	size_t n = strlen(name);
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct xsb_opts o = {
	    .scenario = "all",
	    .large_batch = 8,
	    .rate = 20,
	    .rate_mid = 25,
	    .seed = 1,
	};
	const char *backend = "auto", *jsonl = NULL, *plot = NULL, *procs_child = NULL;
	int stall = 60;
	bool quiet = false;
	for (size_t i = 0; i < xsb_nmodes; i++)
		o.modes[o.nmodes++] = &xsb_modes[i];

	enum {
		O_SCEN = 1,
		O_MODES,
		O_DUR,
		O_TASKS,
		O_THREADS,
		O_BACKEND,
		O_JSONL,
		O_QUICK,
		O_QUIET,
		O_HELP,
		O_CFG,
		O_BATCH,
		O_RATE,
		O_MID_RATE,
		O_SEED,
		O_STALL,
		O_PLOT,
		O_LOWS,
		O_SHAPES,
		O_OBJ,
		O_OBJ_CSV,
		O_PROCS_CHILD
	};
	static const struct option lo[] = {
	    {"scenario", required_argument, NULL, O_SCEN},
	    {"modes", required_argument, NULL, O_MODES},
	    {"duration", required_argument, NULL, O_DUR},
	    {"tasks", required_argument, NULL, O_TASKS},
	    {"threads", required_argument, NULL, O_THREADS},
	    {"backend", required_argument, NULL, O_BACKEND},
	    {"jsonl", required_argument, NULL, O_JSONL},
	    {"quick", no_argument, NULL, O_QUICK},
	    {"quiet", no_argument, NULL, O_QUIET},
	    {"help", no_argument, NULL, O_HELP},
	    {"launch-config", required_argument, NULL, O_CFG},
	    {"large-batch", required_argument, NULL, O_BATCH},
	    {"rate", required_argument, NULL, O_RATE},
	    {"mid-rate", required_argument, NULL, O_MID_RATE},
	    {"seed", required_argument, NULL, O_SEED},
	    {"stall", required_argument, NULL, O_STALL},
	    {"plot", required_argument, NULL, O_PLOT},
	    {"lows", required_argument, NULL, O_LOWS},
	    {"shapes", required_argument, NULL, O_SHAPES},
	    {"objective", required_argument, NULL, O_OBJ},
	    {"objective-csv", required_argument, NULL, O_OBJ_CSV},
	    {"procs-child", required_argument, NULL, O_PROCS_CHILD},
	    {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case O_SCEN:
			o.scenario = optarg;
			break;
		case O_MODES:
			o.modes_given = true;
			if (xsb__parse_modes(&o, optarg))
				return 2;
			break;
		case O_DUR:
			o.duration_s = atof(optarg);
			if (o.duration_s <= 0) {
				fprintf(stderr, "xsched-bench: --duration wants seconds > 0\n");
				return 2;
			}
			break;
		case O_TASKS:
			o.tasks = atoi(optarg);
			if (o.tasks < 1) {
				fprintf(stderr, "xsched-bench: --tasks wants N >= 1\n");
				return 2;
			}
			break;
		case O_THREADS:
			o.threads = atoi(optarg);
			if (o.threads < 2 || o.threads > 256) {
				fprintf(stderr, "xsched-bench: --threads wants 2..256\n");
				return 2;
			}
			break;
		case O_BACKEND:
			backend = optarg;
			break;
		case O_JSONL:
			jsonl = optarg;
			break;
		case O_QUICK:
			o.quick = true;
			break;
		case O_QUIET:
			quiet = true;
			break;
		case O_CFG:
			if (xsb__parse_cfg(&o, optarg))
				return 2;
			break;
		case O_BATCH:
			o.large_batch = atoi(optarg);
			if (o.large_batch < 1 || o.large_batch > 1024) {
				fprintf(stderr, "xsched-bench: --large-batch wants 1..1024\n");
				return 2;
			}
			break;
		case O_RATE:
			o.rate = atof(optarg);
			if (o.rate <= 0 || o.rate > 10000) {
				fprintf(stderr, "xsched-bench: --rate wants 0 < R <= 10000\n");
				return 2;
			}
			break;
		case O_MID_RATE:
			o.rate_mid = atof(optarg);
			if (o.rate_mid < 0 || o.rate_mid > 10000) {
				fprintf(stderr, "xsched-bench: --mid-rate wants 0 <= R <= 10000\n");
				return 2;
			}
			break;
		case O_SEED:
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case O_STALL:
			stall = atoi(optarg);
			break;
		case O_PLOT:
			plot = optarg;
			break;
		case O_LOWS:
			if (xsb__parse_lows(&o, optarg))
				return 2;
			break;
		case O_SHAPES:
			if (xsb__check_shapes(optarg))
				return 2;
			o.shapes = optarg;
			break;
		case O_OBJ:
			xsb_objective = atof(optarg);
			if (!(xsb_objective >= 1.0 && xsb_objective <= 1000.0)) {
				fprintf(stderr,
					"xsched-bench: --objective wants 1.0 <= X <= 1000\n");
				return 2;
			}
			break;
		case O_OBJ_CSV:
			xsb_objective_csv = fopen(optarg, "w");
			if (!xsb_objective_csv) {
				fprintf(stderr, "xsched-bench: --objective-csv: cannot write %s\n",
					optarg);
				return 2;
			}
			fprintf(xsb_objective_csv, "mode,lane,t_s,slowdown_permille,alone_us,"
						   "corun_budget_us,completed,pace_eighths\n");
			break;
		case O_PROCS_CHILD:
			procs_child = optarg;
			break;
		case O_HELP:
		case 'h':
			xsb__usage(stdout);
			return 0;
		default:
			xsb__usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "xsched-bench: unexpected argument '%s'\n", argv[optind]);
		xsb__usage(stderr);
		return 2;
	}
	bool any = false;
	for (size_t i = 0; i < XSB_NSCEN; i++)
		any |= xsb__scenario_selected(o.scenario, xsb__all[i]);
	if (!any) {
		fprintf(stderr, "xsched-bench: unknown scenario '%s'\n", o.scenario);
		return 2;
	}

	xsb_out.quiet = quiet;
	xsb_out.tty = isatty(STDERR_FILENO);
	if (jsonl) {
		xsb_out.jsonl = fopen(jsonl, "w");
		if (!xsb_out.jsonl) {
			perror(jsonl);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* Every stream its own hardware connection (CUDA's maximum, 32), unless the user chose:
	 * a closed Lv2 gate blocks every stream that shares its connection, and with 16
	 * streams on the default 8, a suspended low stream can hold back the high one.
	 * Must be set before CUDA starts. */
	const char *conn_env = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	bool conn_set_here = !conn_env;
	if (conn_set_here)
		setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
	o.conn_default = conn_set_here;

	/* The backend. */
	struct xsb_backend be;
	char why[256] = "";
	const char *fallback = NULL;
	if (!strcmp(backend, "cuda")) {
		if (xsb_cuda_backend(&be, why, sizeof(why)))
			xsb_die("--backend cuda: %s", why);
	} else if (!strcmp(backend, "hip")) {
		xsb_die("--backend hip: this build has no HIP workloads (ROCm's BLAS is not "
			"packaged here and the portable kernels are not wired in yet); use cuda or "
			"host");
	} else if (!strcmp(backend, "host")) {
		if (xsb_host_backend(&be, why, sizeof(why)))
			xsb_die("host backend: %s", why);
	} else if (!strcmp(backend, "auto")) {
		if (xsb_cuda_backend(&be, why, sizeof(why))) {
			fallback = why;
			char why2[256];
			if (xsb_host_backend(&be, why2, sizeof(why2)))
				xsb_die("host backend: %s", why2);
		}
	} else {
		xsb_die("unknown backend '%s' (auto, cuda, hip, host)", backend);
	}

	if (procs_child) /* a process of the procs scenario (procs.c) */
		return xsb_procs_child(&be, procs_child);

	char date[64];
	time_t now = time(NULL);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	const char *conn = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
	printf("xsched-bench (libxsched %d.%d.%d), %s\n", XSCHED_VERSION_MAJOR,
	       XSCHED_VERSION_MINOR, XSCHED_VERSION_PATCH, date);
	if (be.modeled) {
		printf(
		    "backend: host. NO GPU IS USED: every figure below comes from a model of a GPU "
		    "run on the CPU, not from a GPU.\n"
		    "targets: not judged on this backend: a model cannot judge GPU "
		    "targets; their figures are printed for reference.\n");
		if (fallback)
			printf("  (no GPU backend: %s)\n", fallback);
	} else {
		printf("backend: %s\n", be.name);
	}
	printf("device: %s\n", be.device);
	if (be.no_xsched[0])
		printf("xsched modes: skipped: %s\n", be.no_xsched);
	else
		printf("preemption levels of a HwQueue here: Lv1..Lv%d%s\n", be.max_level,
		       be.max_level < 3 ? " (modes above it are skipped)" : "");
	if (!be.modeled)
		printf("CUDA_DEVICE_MAX_CONNECTIONS: %s%s\n", conn ? conn : "?",
		       conn_set_here
			   ? " (set by xsched-bench; CUDA's default is 8: see doc/bench.md)"
			   : "");
	xsb_json_raw("{\"type\":\"run\",\"backend\":\"%s\",\"modeled\":%s,\"device\":\"%s\","
		     "\"date\":\"%s\",\"max_level\":%d,\"quick\":%s}",
		     be.name, be.modeled ? "true" : "false", be.device, date, be.max_level,
		     o.quick ? "true" : "false");

	if (plot && xsb_plot_init(plot, be.device, date, be.modeled))
		return 2;

	struct xsb_ctx ctx = {.be = &be, .o = &o, .fails = 0};
	xsb_print_launch_cfg(&ctx);
	xsb_watchdog_start(stall, xsb_on_stall);

	int64_t t0 = xsb_now_ns();
	static int (*const fns[XSB_NSCEN])(struct xsb_ctx *) = {
	    xsb_scenario_systematic, xsb_scenario_latency,  xsb_scenario_two_models,
	    xsb_scenario_serve,      xsb_scenario_corun,    xsb_scenario_mlfq,
	    xsb_scenario_preempt,    xsb_scenario_overhead, xsb_scenario_tune,
	    xsb_scenario_procs};
	for (size_t i = 0; i < XSB_NSCEN; i++) {
		if (!xsb__scenario_selected(o.scenario, xsb__all[i]))
			continue;
		if (fns[i](&ctx))
			ctx.fails++;
		xsb_plot_flush();
	}
	xsb_plot_fini();
	xsb_summary_print(be.modeled);
	printf("\ndone in %.1f s%s%s\n", (double)(xsb_now_ns() - t0) / 1e9,
	       ctx.fails ? "; some runs FAILED" : "",
	       be.modeled ? " (host backend: modeled figures, no GPU used)" : "");
	if (xsb_out.jsonl)
		fclose(xsb_out.jsonl);
	if (xsb_objective_csv)
		fclose(xsb_objective_csv);
	XSchedShutdown();
	be.fini();
	return ctx.fails ? 1 : 0;
}
