// SPDX-License-Identifier: MIT
/* cmd_graph.c: the `opt`, `dump` and `verify` subcommands. */
#include "cli.h"
#include "cost_model.h"
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

/* --remarks=json: one JSON object per remark on stderr; errors, warnings
 * and notes keep the GNU text form. */
static void remark_json_emit(void *ud, const struct dt_diag_entry *e)
{
	(void)ud;
	if (e->severity != DT_REMARK) {
		dt_diag_format(e, stderr);
		fputc('\n', stderr);
		return;
	}
	/* The tag is "pass:reason" or "pass". */
	const char *tag = e->tag ? e->tag : "";
	const char *colon = strchr(tag, ':');
	size_t pass_len = colon ? (size_t)(colon - tag) : strlen(tag);
	char pass[128];
	snprintf(pass, sizeof pass, "%.*s", (int)pass_len, tag);
	fputs("{\"file\": ", stderr);
	if (e->file)
		dt_json_string(stderr, e->file);
	else
		fputs("null", stderr);
	if (e->line)
		fprintf(stderr, ", \"line\": %u, \"pass\": ", e->line);
	else
		fputs(", \"line\": null, \"pass\": ", stderr);
	if (e->tag)
		dt_json_string(stderr, pass);
	else
		fputs("null", stderr);
	fputs(", \"reason\": ", stderr);
	if (colon)
		dt_json_string(stderr, colon + 1);
	else
		fputs("null", stderr);
	fputs(", \"message\": ", stderr);
	dt_json_string(stderr, e->message);
	fputs("}\n", stderr);
}

/* The form of --remarks and --report: absent, text or json. */
enum output_form { FORM_NONE, FORM_TEXT, FORM_JSON };

/* Parse the optional value of --remarks or --report; FORM_NONE when bad. */
static enum output_form parse_form(const char *value)
{
	if (!value || strcmp(value, "text") == 0)
		return FORM_TEXT;
	return strcmp(value, "json") == 0 ? FORM_JSON : FORM_NONE;
}

static const char opt_help[] =
	"usage: dtopt opt IN.xml [options]\n\n"
	"Runs a pass pipeline over IN.xml (- for stdin) and writes the result.\n\n"
	"  -p, --passes=LIST     comma-separated pipeline (default for a local-view\n"
	"                        graph: verify,shape-infer,fuse-collectives,\n"
	"                        cancel-views,dce; for a global-view graph:\n"
	"                        verify,shape-infer,dce)\n"
	"  -o, --output=FILE     write the graph to FILE (- for stdout, the default);\n"
	"                        written atomically, and not at all on error\n"
	"      --dump-after=PASS print the text dump after PASS (or 'all') to stderr\n"
	"      --verify-each     run the verifier after every pass (the default\n"
	"                        in debug builds)\n"
	"      --no-verify-each  do not\n"
	"      --time-passes     print load, per-pass and write times to stderr\n"
	"      --list-passes     list the passes and exit\n"
	"      --remarks[=json]  report what the passes did and why not, as\n"
	"                        file:line: remark: ... [pass:reason] lines, or one\n"
	"                        JSON object per remark {file, line, pass, reason,\n"
	"                        message}, on stderr\n"
	"      --report[=json]   print the collectives per kind and group before and\n"
	"                        after the passes (count, bytes, modelled time) to\n"
	"                        stderr\n"
	"      --create-groups   let passes declare flattened groups the graph lacks\n"
	"                        (written with generated=\"true\")\n"
	"      --force-fusion    fuse collectives even where the cost model says the\n"
	"                        fused one is slower\n\n";

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
		{"remarks", optional_argument, NULL, 'R'},
		{"report", optional_argument, NULL, 'r'},
		{"create-groups", no_argument, NULL, 'G'},
		{"force-fusion", no_argument, NULL, 'F'},
		DT_CLI_TOPOLOGY_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *pipeline_text = NULL, *output = "-";
	enum output_form remarks = FORM_NONE, report = FORM_NONE;
	struct dt_cli_topology topology_flags = {0};
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
		case 'R':
			if ((remarks = parse_form(optarg)) == FORM_NONE)
				return dt_usage_error("opt", "--remarks=%s: expected "
						      "text or json", optarg);
			break;
		case 'r':
			if ((report = parse_form(optarg)) == FORM_NONE)
				return dt_usage_error("opt", "--report=%s: expected "
						      "text or json", optarg);
			break;
		case 'G': popt.pass.create_groups = true; break;
		case 'F': popt.pass.force_fusion = true; break;
		case 'h':
			fputs(opt_help, stdout);
			fputs(dt_cli_topology_help, stdout);
			return DT_EXIT_OK;
		default:
			if (c >= DT_CLI_OPT_TOPOLOGY_FIRST &&
			    c < DT_CLI_OPT_TOPOLOGY_END) {
				if (dt_cli_topology_parse(&topology_flags, c, optarg,
							  "opt") != DT_EXIT_OK)
					return DT_EXIT_USAGE;
				break;
			}
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
	diag.remarks = remarks != FORM_NONE;
	if (remarks == FORM_JSON)
		diag.emit = remark_json_emit;
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
	struct dt_topology topology = m->topology;
	dt_cli_topology_apply(&topology_flags, &topology);
	popt.pass.topology = &topology;
	struct dt_comm_table before = {0}, after = {0};
	if (report != FORM_NONE)
		dt_comm_table_fill(&before, m, &topology);
	rc = dt_pipeline_run(m, &pipeline, &popt, &diag);
	double t2 = dt_now();
	if (rc == DT_OK && report != FORM_NONE) {
		dt_comm_table_fill(&after, m, &topology);
		if (report == FORM_JSON)
			dt_comm_report_print_json(&before, &after, stderr);
		else
			dt_comm_report_print(&before, &after, stderr);
	}
	dt_comm_table_fini(&before);
	dt_comm_table_fini(&after);
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
