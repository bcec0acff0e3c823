// SPDX-License-Identifier: MIT
/* cmd_graph.c: the `opt`, `dump` and `verify` subcommands. */
#include "cli.h"
#include "frontend.h"
#include "passes.h"

#include <getopt.h>
#include <string.h>

static int load(const char *path, bool allow_unknown, struct dt_diag *d,
		struct dt_module **m)
{
	struct dt_read_options opt = {.allow_unknown_targets = allow_unknown};
	return dt_read_file(path, &opt, d, m);
}

/* Pipeline-text errors are usage errors: print them as the CLI's own. */
static void usage_emit(void *ud, const struct dt_diag_entry *e)
{
	fprintf(stderr, "dtopt %s: error: %s\n", (const char *)ud, e->message);
}

static const char opt_help[] =
	"usage: dtopt opt IN.xml [options]\n\n"
	"Runs a pass pipeline over IN.xml (- for stdin) and writes the result.\n\n"
	"  -p, --passes=LIST     comma-separated pipeline (default for the graph's view:\n"
	"                        verify,shape-infer,dce)\n"
	"  -o, --output=FILE     write the graph to FILE (- for stdout, the default);\n"
	"                        written atomically, and not at all on error\n"
	"      --dump-after=PASS print the text dump after PASS (or 'all') to stderr\n"
	"      --verify-each     run the verifier after every pass (the default\n"
	"                        in debug builds)\n"
	"      --no-verify-each  do not\n"
	"      --time-passes     print load, per-pass and write times to stderr\n"
	"      --list-passes     list the passes and exit\n";

int dt_cmd_opt(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"passes", required_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"dump-after", required_argument, NULL, 'D'},
		{"verify-each", no_argument, NULL, 'V'},
		{"no-verify-each", no_argument, NULL, 'N'},
		{"time-passes", no_argument, NULL, 'T'},
		{"list-passes", no_argument, NULL, 'L'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *pipeline_text = NULL, *output = "-";
	/* Verify after every pass in debug builds; release builds opt in. */
#ifdef NDEBUG
	struct dt_pipeline_options popt = {.verify_each = false};
#else
	struct dt_pipeline_options popt = {.verify_each = true};
#endif
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': pipeline_text = optarg; break;
		case 'o': output = optarg; break;
		case 'D': popt.dump_after = optarg; break;
		case 'V': popt.verify_each = true; break;
		case 'N': popt.verify_each = false; break;
		case 'T': popt.time_passes = true; break;
		case 'L': dt_pass_list(stdout); return DT_EXIT_OK;
		case 'h': fputs(opt_help, stdout); return DT_EXIT_OK;
		default:
			return dt_usage_error("opt", "unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return dt_usage_error("opt", "expected one input graph");
	if (popt.dump_after && strcmp(popt.dump_after, "all") != 0 &&
	    !dt_pass_find(popt.dump_after))
		return dt_usage_error("opt", "--dump-after names unknown pass '%s'",
				      popt.dump_after);
	struct dt_diag diag;
	dt_diag_init(&diag);
	struct dt_pipeline pipeline;
	struct dt_diag usage_diag;
	dt_diag_init(&usage_diag);
	usage_diag.emit = usage_emit;
	usage_diag.ud = "opt";
	if (pipeline_text &&
	    dt_pipeline_parse(&pipeline, pipeline_text, &usage_diag) != DT_OK)
		return DT_EXIT_USAGE;
	double t0 = dt_now();
	struct dt_module *m;
	int rc = load(argv[optind], false, &diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	double t1 = dt_now();
	if (!pipeline_text)
		DT_REQUIRE(dt_pipeline_parse(&pipeline, dt_default_pipeline(m),
					     &diag) == DT_OK);
	rc = dt_pipeline_run(m, &pipeline, &popt, &diag);
	double t2 = dt_now();
	if (rc == DT_OK)
		rc = dt_write_file(m, output, &diag);
	double t3 = dt_now();
	if (popt.time_passes)
		fprintf(stderr, "  load %.6f s, passes %.6f s, write %.6f s, total %.6f s\n",
			t1 - t0, t2 - t1, t3 - t2, t3 - t0);
	dt_module_destroy(m);
	return dt_exit_code(rc);
}

static const char dump_help[] =
	"usage: dtopt dump IN.xml [--format text|dot|json]\n\n"
	"Prints the graph. Targets missing from the op table are allowed.\n"
	"  text: FX print_readable style, with dtype[shape]{stride}, placements\n"
	"        and the XML line of every node\n"
	"  dot:  graphviz, collectives coloured by group, fused nodes marked\n"
	"  json: the whole module as one JSON object\n";

int dt_cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text";
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'h': fputs(dump_help, stdout); return DT_EXIT_OK;
		default:
			return dt_usage_error("dump", "unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return dt_usage_error("dump", "expected one input graph");
	void (*dump)(const struct dt_module *, FILE *) =
		strcmp(format, "text") == 0   ? dt_print_text
		: strcmp(format, "dot") == 0  ? dt_dump_dot
		: strcmp(format, "json") == 0 ? dt_dump_json
					      : NULL;
	if (!dump)
		return dt_usage_error("dump", "unknown format '%s' (text, dot or json)",
				      format);
	struct dt_diag diag;
	dt_diag_init(&diag);
	struct dt_module *m;
	int rc = load(argv[optind], true, &diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	dump(m, stdout);
	dt_module_destroy(m);
	return fflush(stdout) == 0 ? DT_EXIT_OK : DT_EXIT_INPUT;
}

static const char verify_help[] =
	"usage: dtopt verify IN.xml\n\n"
	"Reads IN.xml (schema, references, targets) and runs the verifier;\n"
	"reports every problem as file:line: error: and exits 1 if there is one.\n";

int dt_cmd_verify(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		fputs(verify_help, stdout);
		return DT_EXIT_OK;
	}
	if (argc != 2 || (argv[1][0] == '-' && argv[1][1]))
		return dt_usage_error("verify", "expected one input graph");
	struct dt_diag diag;
	dt_diag_init(&diag);
	struct dt_module *m;
	int rc = load(argv[1], false, &diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	rc = dt_verify(m, &diag);
	if (rc == DT_OK)
		printf("%s: ok (%u nodes, %s view)\n", m->file, dt_graph_count(m),
		       m->view == DT_VIEW_GLOBAL ? "global" : "local");
	dt_module_destroy(m);
	return dt_exit_code(rc);
}
