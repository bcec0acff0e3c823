// SPDX-License-Identifier: MIT
/* cmd_solve.c: the `solve` subcommand: read a sharding problem in the IOPDDL
 * contest's JSON, solve it within a time budget (solver/solver.h) and print
 * the plan as the contest expected: progress lines starting with '#', the
 * strategy vector [i, j, ...] as the last line. */
#include "cli.h"
#include "solver.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SOLVE_CMD "solve"

static const char solve_help[] =
	"usage: dtopt solve [options] PROBLEM.json[.gz] TIMEOUT_S\n"
	"\n"
	"Pick one strategy per node of a sharding problem in the IOPDDL\n"
	"contest's format, minimising node and edge costs with the usage of\n"
	"the live nodes under the limit at every time, within TIMEOUT_S\n"
	"seconds (of wall-clock time), or sooner when the plan is proven\n"
	"optimal. Prints '#' progress lines, then the strategy of each node\n"
	"as [i, j, ...] on the last line.\n"
	"\n"
	"      --stats            '#' lines with cost, lower bound, peak\n"
	"                         usage and time before the plan\n"
	"  -j, --threads N        search threads (default 2)\n"
	"      --cpu-time         TIMEOUT_S counts each search thread's CPU\n"
	"                         time, not wall-clock time (benchmarks on a\n"
	"                         busy machine: what an idle one would give)\n"
	"      --seed N           seed of the search (default 1)\n"
	"      --rounds N         stop each thread after N rounds: the plan\n"
	"                         then depends only on seed and threads\n"
	"      --stall N          stop each thread after N rounds in a row\n"
	"                         without a better plan (also deterministic)\n"
	"  -q, --quiet            no progress lines\n"
	"  -h, --help             this text\n"
	"\n"
	"Exit codes: 0 a plan within the limit, 1 bad problem (the message\n"
	"names the node or edge), no plan found or only plans of infinite\n"
	"cost, 2 usage.\n";

struct solve_args {
	const char *path;
	double timeout;
	bool stats, quiet;
	struct dt_solve_options opt;
};

static int parse_count(const char *arg, const char *flag, int64_t lo,
		       int64_t *out)
{
	char *end;
	long long v = strtoll(arg, &end, 10);
	if (!*arg || *end || v < lo || v > (1LL << 40))
		return dt_usage_error(SOLVE_CMD, "%s needs an integer >= %" PRId64
				      ", not '%s'", flag, lo, arg);
	*out = v;
	return DT_EXIT_OK;
}

static int parse_args(int argc, char **argv, struct solve_args *a)
{
	static const struct option longopts[] = {
		{"stats", no_argument, NULL, 's'},
		{"threads", required_argument, NULL, 'j'},
		{"cpu-time", no_argument, NULL, 'c'},
		{"seed", required_argument, NULL, 'S'},
		{"rounds", required_argument, NULL, 'r'},
		{"stall", required_argument, NULL, 'T'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	a->opt = (struct dt_solve_options){.threads = 2, .seed = 1, .verbose = 1};
	int c;
	int64_t v;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "j:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->stats = true;
			break;
		case 'j':
			if (parse_count(optarg, "--threads", 1, &v) != DT_EXIT_OK ||
			    (v > 256 && dt_usage_error(SOLVE_CMD, "--threads %s: at "
						       "most 256", optarg)))
				return DT_EXIT_USAGE;
			a->opt.threads = (int)v;
			break;
		case 'c':
			a->opt.cpu_budget = 1;
			break;
		case 'S':
			if (parse_count(optarg, "--seed", 0, &v) != DT_EXIT_OK)
				return DT_EXIT_USAGE;
			a->opt.seed = (uint64_t)v;
			break;
		case 'r':
			if (parse_count(optarg, "--rounds", 1, &a->opt.max_rounds) !=
			    DT_EXIT_OK)
				return DT_EXIT_USAGE;
			break;
		case 'T':
			if (parse_count(optarg, "--stall", 1, &a->opt.stall_rounds) !=
			    DT_EXIT_OK)
				return DT_EXIT_USAGE;
			break;
		case 'q':
			a->opt.verbose = 0;
			break;
		case 'h':
			fputs(solve_help, stdout);
			return -1;
		default:
			return dt_usage_error(SOLVE_CMD,
					      "unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	if (argc - optind != 2)
		return dt_usage_error(SOLVE_CMD,
				      "expected a problem file and a timeout in "
				      "seconds, got %d argument%s",
				      argc - optind, argc - optind == 1 ? "" : "s");
	a->path = argv[optind];
	char *end;
	a->opt.timeout_s = strtod(argv[optind + 1], &end);
	if (!*argv[optind + 1] || *end || !isfinite(a->opt.timeout_s) ||
	    a->opt.timeout_s < 0)
		return dt_usage_error(SOLVE_CMD, "TIMEOUT_S must be a number of "
				      "seconds >= 0, not '%s'", argv[optind + 1]);
	return DT_EXIT_OK;
}

static void print_plan(const int32_t *s, int32_t n)
{
	putchar('[');
	for (int32_t v = 0; v < n; v++)
		printf(v ? ", %d" : "%d", s[v]);
	puts("]");
}

int dt_cmd_solve(int argc, char **argv)
{
	struct solve_args a = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc != DT_EXIT_OK)
		return rc < 0 ? DT_EXIT_OK : rc;
	struct dt_diag diag;
	dt_diag_init(&diag);
	struct dt_solve_problem p;
	int status = dt_solve_problem_read(a.path, &p, &diag);
	if (status != DT_OK)
		return dt_exit_code(status);
	struct dt_solve_result res = {0};
	res.strategy = dt_calloc((size_t)p.nnodes + 1, sizeof(int32_t));
	status = dt_solve(&p, &a.opt, &res);
	if (status != DT_OK && res.infinite) {
		fprintf(stderr, "%s: error: every plan found within usage_limit %"
			PRId64 " in %.1f s costs infinitely (a strategy or an edge "
			"no finite choice avoids)\n", a.path, p.usage_limit,
			res.seconds);
	} else if (status != DT_OK) {
		fprintf(stderr, "%s: error: no plan within usage_limit %" PRId64
			" found in %.1f s\n", a.path, p.usage_limit, res.seconds);
	} else {
		if (res.timed_out && a.opt.verbose)
			printf("# remark: the search stopped after %.1f s; this is "
			       "the best plan found, not proven optimal\n",
			       res.seconds);
		if (a.stats) {
			printf("# cost %" PRId64 "\n", res.cost);
			if (res.lower_bound != INT64_MIN)
				printf("# lower bound %" PRId64 "\n", res.lower_bound);
			else
				printf("# lower bound unknown\n");
			if (p.usage_limit >= 0)
				printf("# peak usage %" PRId64 " (limit %" PRId64 ")\n",
				       res.peak_usage, p.usage_limit);
			else
				printf("# peak usage %" PRId64 " (no limit)\n",
				       res.peak_usage);
			printf("# time %.2f s\n", res.seconds);
		}
		print_plan(res.strategy, p.nnodes);
	}
	dt_free(res.strategy);
	dt_solve_problem_fini(&p);
	return dt_exit_code(status);
}
