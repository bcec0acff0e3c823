// SPDX-License-Identifier: MIT
/* cmd_graph.c: the `opt` (its command line; one run: opt_run.c), `dump`
 * and `verify` subcommands. */
#include "cli.h"
#include "cost_model.h"
#include "dtopt_config.h"
#include "frontend.h"
#include "opt_job.h"
#include "passes.h"
#include "redistribute.h"
#include "runtime.h"
#include "sharding.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Pipeline-text errors are usage errors: print them as the CLI's own. */
static void usage_emit(void *ud, const struct dt_diag_entry *e)
{
	if (dt_cli_json)
		dt_cli_json_error(ud, e->message);
	else
		fprintf(stderr, "dtopt %s: error: %s\n", (const char *)ud,
			e->message);
}

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
	"                        bucket-collectives,schedule-collectives,\n"
	"                        cancel-views,dce; for a global-view graph:\n"
	"                        verify,shape-infer,shard-prop,lower-redistribute,\n"
	"                        then the same from fuse-collectives)\n"
	"  -o, --output=FILE     write the graph to FILE (- for stdout, the default);\n"
	"                        written atomically, and not at all on error;\n"
	"                        with lower-redistribute, a path holding {rank}\n"
	"                        (e.g. 'low.{rank}.xml') lowers once per rank of the\n"
	"                        graph's mesh and writes one graph per rank\n"
	"      --rank=R          lower-redistribute lowers for rank R (the graph gets\n"
	"                        rank=\"R\"); without it, one graph for every rank,\n"
	"                        refused (naming the first value that differs) where\n"
	"                        ranks need different graphs: uneven shards, R->S\n"
	"                        chunks\n"
	"  -f, --format=FMT      text (default) or json: the form of remarks,\n"
	"                        the report and errors on stderr\n"
	"      --dump-after=LIST print the text dump after the passes LIST names\n"
	"                        (comma-separated, or 'all') to stderr; with\n"
	"                        --dump-dir, pick the passes dumped there\n"
	"      --dump-dir=DIR    write DIR/NN-PASS.txt, .dot and .json after every\n"
	"                        pass (00-input: the graph as read), numbered in\n"
	"                        the order the passes ran\n"
	"      --opt-bisect-limit=N\n"
	"                        run only the first N optional rewrites (fusions,\n"
	"                        cancelled view chains, dce removals) and print\n"
	"                        each one considered, numbered, as 'BISECT:\n"
	"                        running rewrite (K) PASS: WHAT' or 'BISECT: NOT\n"
	"                        running ...' on stderr\n"
	"      --verify-each     run the verifier after every pass (the default\n"
	"                        in debug builds: buildtype=debug)\n"
	"      --no-verify-each  do not\n"
	"      --time-passes     print load, per-pass and write times to stderr\n"
	"                        (and a pass's phases under it: shard-prop's\n"
	"                        whole-graph problem build and solve)\n"
	"      --list-passes     list the passes and exit\n"
	"      --remarks[=json]  report what the passes did and why not, as\n"
	"                        file:line: remark: ... [pass:reason] lines, or one\n"
	"                        JSON object per remark {kind, pass, reason, node,\n"
	"                        file, line, message}, on stderr\n"
	"      --remarks-output=FILE\n"
	"                        write every remark to FILE as such JSON lines;\n"
	"                        kind: passed (a rewrite), missed (a candidate\n"
	"                        left, reason says why) or analysis (shard-prop's\n"
	"                        decisions); node: the input's node at that line\n"
	"      --report[=json]   print the collectives per kind and group before and\n"
	"                        after the passes (count, bytes, modelled time) and\n"
	"                        the peak per-rank memory of the live values to\n"
	"                        stderr\n"
	"      --create-groups   let passes declare flattened groups the graph lacks\n"
	"                        (written with generated=\"true\")\n"
	"      --redistribute=MODE  lower-redistribute's plans: dtensor (DTensor's,\n"
	"                        default), min-memory (smallest shards, with\n"
	"                        all_permute steps) or auto (per redistribution,\n"
	"                        min-memory where within 1.2x DTensor's time or\n"
	"                        where DTensor's peak passes 2x; semantics §3.1)\n"
	"      --force-fusion    fuse collectives even where the cost model says the\n"
	"                        fused one is slower\n";
/* The pass options' part of the help (one string would pass C's 4095). */
static const char opt_help_passes[] =
	"      --bucket-bytes=N  bucket-collectives merges collectives up to N bytes\n"
	"                        (default 25 MiB; N > 0)\n"
	"      --overlap-bytes=N schedule-collectives keeps at most N bytes alive\n"
	"                        beyond the written order (default 64 MiB; N > 0)\n"
	"      --search=global|greedy|exhaustive\n"
	"                        shard-prop's strategy search: one strategy per\n"
	"                        node for the whole graph at once (global, the\n"
	"                        default: compute, redistribution and memory\n"
	"                        modelled, solved by the solver of solver/; node by\n"
	"                        node where the problem is too large, with a\n"
	"                        warning); or node by node, a priority queue from\n"
	"                        the inputs' placements (greedy, also 'pq') or\n"
	"                        every strategy (exhaustive)\n"
	"      --memory-budget=BYTES\n"
	"                        global: the per-rank memory the plan's live values\n"
	"                        may use at any point\n"
	"      --solve-timeout=S global: bound the solver by S seconds of wall\n"
	"                        time (the plan then depends on the machine's load;\n"
	"                        on time-out the best found, with a remark) instead\n"
	"                        of its default, a fixed number of search rounds\n"
	"                        (the same plan on every run and every rank)\n"
	"      --dump-problem=FILE\n"
	"                        write the whole-graph problem shard-prop builds (in\n"
	"                        the IOPDDL contest's JSON, 'dtopt solve' reads it;\n"
	"                        written only when opt succeeds, '-' is stdout)\n"
	"      --expert-pins=FILE\n"
	"                        global: remark where an expert's placements\n"
	"                        (FILE: 'NODE PLACEMENTS' lines) went in the\n"
	"                        problem (kept, pruned, none) and what the best\n"
	"                        plan keeping them costs (with --remarks)\n\n";

/* Whether `path` names a regular file or none yet (written through a
 * temporary beside it), not "-", a device or a pipe (written directly). */
static bool regular_target(const char *path)
{
	struct stat st;
	if (strcmp(path, "-") == 0)
		return false;
	return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

/* --dump-problem: close the temporary `tmp` and rename it over `path` when
 * opt succeeded (rc) and a problem was written; else remove it (a refused
 * or fallen-back search leaves no file, not an empty one). Returns rc or
 * DT_EXIT_INPUT. */
static int commit_problem(FILE *out, const char *path, char *tmp, int rc)
{
	bool written = ftell(out) > 0;
	errno = 0;
	bool closed = fclose(out) == 0;
	if (rc == DT_EXIT_OK && !closed) {
		fprintf(stderr, "%s: error: cannot write the problem: %s\n",
			path, errno ? strerror(errno) : "write error");
		rc = DT_EXIT_INPUT;
	} else if (rc == DT_EXIT_OK && !written) {
		fprintf(stderr, "%s: error: no problem to write: the whole-graph "
			"problem was not built (see the warnings)\n", path);
		rc = DT_EXIT_INPUT;
	} else if (rc == DT_EXIT_OK && rename(tmp, path) != 0) {
		rc = dt_io_error("opt", path);
	}
	if (rc != DT_EXIT_OK)
		unlink(tmp);
	dt_free(tmp);
	return rc;
}

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
		{"redistribute", required_argument, NULL, 'W'},
		{"force-fusion", no_argument, NULL, 'F'},
		{"search", required_argument, NULL, 'S'},
		{"rank", required_argument, NULL, 'K'},
		{"memory-budget", required_argument, NULL, 'M'},
		{"solve-timeout", required_argument, NULL, 'Z'},
		{"dump-problem", required_argument, NULL, 'P'},
		{"expert-pins", required_argument, NULL, 'E'},
		{"bucket-bytes", required_argument, NULL, 'U'},
		{"overlap-bytes", required_argument, NULL, 'O'},
		{"format", required_argument, NULL, 'f'},
		{"remarks-output", required_argument, NULL, 'X'},
		{"dump-dir", required_argument, NULL, 'Y'},
		{"opt-bisect-limit", required_argument, NULL, 'B'},
		DT_CLI_TOPOLOGY_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *pipeline_text = NULL, *output = "-", *problem_path = NULL;
	const char *remarks_output = NULL, *format = "text";
	struct dt_dump_dir dump_dir = {0};
	struct dt_bisect bisect = {.limit = -1};
	enum output_form remarks = FORM_NONE, report = FORM_NONE;
	struct dt_cli_topology topology_flags = {0};
	/* Verify after every pass in debug builds; other builds opt in. */
	struct dt_pipeline_options popt = {.verify_each =
						   DTOPT_VERIFY_EACH_DEFAULT};
	popt.pass.rank = -1; /* lower-redistribute: one graph for all ranks */
	char *end;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:o:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': pipeline_text = optarg; break;
		case 'o': output = optarg; break;
		case 'f': format = optarg; break;
		case 'X': remarks_output = optarg; break;
		case 'Y': dump_dir.dir = optarg; break;
		case 'B':
			bisect.limit = strtoll(optarg, &end, 10);
			if (!*optarg || *end || bisect.limit < 0)
				return dt_usage_error("opt", "--opt-bisect-limit "
						      "needs a count >= 0, not "
						      "'%s'", optarg);
			break;
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
		case 'W': {
			enum dt_redist_mode mode;
			if (!dt_redist_mode_parse(optarg, &mode))
				return dt_usage_error("opt",
						      "unknown --redistribute "
						      "'%s' (dtensor, "
						      "min-memory or auto)",
						      optarg);
			popt.pass.redistribute = (uint8_t)mode;
			break;
		}
		case 'F': popt.pass.force_fusion = true; break;
		case 'S':
			if (strcmp(optarg, "pq") == 0 || strcmp(optarg, "greedy") == 0)
				popt.pass.shard_search = DT_SEARCH_PQ;
			else if (strcmp(optarg, "exhaustive") == 0)
				popt.pass.shard_search = DT_SEARCH_EXHAUSTIVE;
			else if (strcmp(optarg, "global") == 0)
				popt.pass.shard_search = DT_SEARCH_GLOBAL;
			else
				return dt_usage_error("opt", "--search=%s: expected pq, "
						      "greedy, exhaustive or global",
						      optarg);
			break;
		case 'M':
			if (dt_cli_memory_budget_parse(
				optarg, "opt", &popt.pass.memory_budget) !=
			    DT_EXIT_OK)
				return DT_EXIT_USAGE;
			break;
		case 'Z':
			popt.pass.solve_timeout = strtod(optarg, &end);
			if (!*optarg || *end || !(popt.pass.solve_timeout > 0) ||
			    popt.pass.solve_timeout > 1e6)
				return dt_usage_error("opt", "--solve-timeout needs a "
						      "positive number of seconds, "
						      "not '%s'", optarg);
			break;
		case 'P': problem_path = optarg; break;
		case 'E': popt.pass.expert_pins = optarg; break;
		case 'K':
			popt.pass.rank = (int)strtol(optarg, &end, 10);
			if (!*optarg || *end || popt.pass.rank < 0)
				return dt_usage_error("opt", "--rank needs a rank "
						      ">= 0, not '%s'", optarg);
			break;
		case 'U':
		case 'O': {
			long long v = strtoll(optarg, &end, 10);
			if (!*optarg || *end || v <= 0)
				return dt_usage_error("opt", "--%s needs a byte "
						      "count > 0, not '%s'",
						      c == 'U' ? "bucket-bytes"
							       : "overlap-bytes",
						      optarg);
			*(c == 'U' ? &popt.pass.bucket_bytes
				   : &popt.pass.overlap_bytes) = v;
			break;
		}
		case 'h':
			fputs(opt_help, stdout);
			fputs(opt_help_passes, stdout);
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
	char unknown[64];
	if (popt.dump_after &&
	    dt_pass_list_unknown(popt.dump_after, unknown, sizeof unknown))
		return dt_usage_error("opt", "--dump-after names unknown pass '%s'",
				      unknown);
	enum output_form form = parse_form(format);
	if (form == FORM_NONE)
		return dt_usage_error("opt", "--format=%s: expected text or json",
				      format);
	if (form == FORM_JSON) {
		if (remarks == FORM_TEXT)
			remarks = FORM_JSON;
		if (report == FORM_TEXT)
			report = FORM_JSON;
	}
	if (bisect.limit >= 0)
		popt.pass.bisect = &bisect;
	if (dump_dir.dir) {
		if (dt_dump_dir_open(&dump_dir, "opt") != DT_EXIT_OK)
			return DT_EXIT_INPUT;
		dump_dir.only = popt.dump_after;
		popt.dump_after = NULL;
		popt.after_pass = dt_dump_dir_after_pass;
		popt.after_pass_ud = &dump_dir;
	}
	struct dt_opt_sink sink = {
		.remarks_stderr = remarks != FORM_NONE,
		.json = remarks == FORM_JSON,
	};
	if (remarks_output) {
		sink.remarks_out = strcmp(remarks_output, "-") == 0
					   ? stdout
					   : fopen(remarks_output, "w");
		if (!sink.remarks_out)
			return dt_io_error("opt", remarks_output);
	}
	struct dt_diag diag;
	dt_diag_init(&diag);
	diag.remarks = remarks != FORM_NONE || remarks_output;
	diag.emit = dt_opt_sink_emit;
	diag.ud = &sink;
	struct dt_pipeline pipeline;
	struct dt_diag usage_diag;
	dt_diag_init(&usage_diag);
	usage_diag.emit = usage_emit;
	usage_diag.ud = "opt";
	if (pipeline_text &&
	    dt_pipeline_parse(&pipeline, pipeline_text, &usage_diag) != DT_OK)
		return DT_EXIT_USAGE;
	struct opt_job job = {
		.input = argv[optind],
		.pipeline = pipeline_text ? &pipeline : NULL,
		.popt = &popt,
		.topology_flags = &topology_flags,
		.report = report,
		.diag = &diag,
		.sink = &sink,
		.dump_dir = dump_dir.dir ? &dump_dir : NULL,
	};
	const char *rank_at = strstr(output, "{rank}");
	/* the problem goes to a temporary beside its path, renamed over it
	 * only when opt succeeds and a problem was written */
	char *problem_tmp = NULL;
	if (problem_path && !regular_target(problem_path)) {
		popt.pass.problem_out = strcmp(problem_path, "-") == 0
					    ? stdout
					    : fopen(problem_path, "w");
		if (!popt.pass.problem_out)
			return dt_io_error("opt", problem_path);
	} else if (problem_path) {
		int fd = dt_temp_beside(problem_path, 0644, &problem_tmp);
		if (fd < 0 || !(popt.pass.problem_out = fdopen(fd, "w"))) {
			fprintf(stderr, "%s: error: cannot write the problem: %s\n",
				problem_path, strerror(errno));
			if (fd >= 0) {
				close(fd);
				unlink(problem_tmp);
			}
			dt_free(problem_tmp);
			return DT_EXIT_INPUT;
		}
	}
	int rc;
	if (!rank_at && popt.pass.rank >= 0)
		rc = dt_opt_rank(&job, output);
	else if (!rank_at)
		rc = dt_exit_code(dt_opt_optimize(&job, output));
	else if (popt.pass.rank >= 0 || strcmp(job.input, "-") == 0)
		rc = dt_usage_error("opt", "an output path with {rank} lowers "
				    "for every rank: it needs an input file "
				    "and no --rank");
	else
		rc = dt_opt_per_rank(&job, output, rank_at);
	if (problem_tmp)
		rc = commit_problem(popt.pass.problem_out, problem_path,
				    problem_tmp, rc);
	else if (popt.pass.problem_out && popt.pass.problem_out != stdout &&
		 fclose(popt.pass.problem_out) != 0 && rc == DT_EXIT_OK)
		rc = dt_io_error("opt", problem_path);
	if (sink.remarks_out && sink.remarks_out != stdout &&
	    fclose(sink.remarks_out) != 0 && rc == DT_EXIT_OK)
		rc = dt_io_error("opt", remarks_output);
	return rc;
}

static const char dump_help[] =
	"usage: dtopt dump IN.xml [-f|--format=text|dot|json] [-o OUT]\n\n"
	"Prints the graph (to OUT with -o, written atomically). Targets missing\n"
	"from the op table are allowed.\n"
	"  text: FX print_readable style, with dtype[shape]{stride}, placements\n"
	"        and the XML line of every node\n"
	"  dot:  graphviz, collectives coloured by group, fused nodes marked\n"
	"  json: the whole module as one JSON object\n";

int dt_cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text", *output = "-";
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
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
	dt_cli_diag_init(&diag);
	struct dt_module *m;
	int rc = dt_opt_load(argv[optind], true, &diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	rc = dt_cli_output_begin("dump", output);
	if (rc == DT_EXIT_OK) {
		dump(m, stdout);
		rc = dt_cli_output_commit();
	}
	dt_module_destroy(m);
	return rc;
}

static const char verify_help[] =
	"usage: dtopt verify [--schema] [-f|--format=text|json] [-o OUT] IN.xml\n\n"
	"Reads IN.xml (structure, references, targets), runs the verifier, then\n"
	"infers every value's dtype, shape, stride and offset (shape-infer) and\n"
	"checks them against the graph's; reports every problem as\n"
	"file:line: error: and exits 1 if there is one (shapes are checked only\n"
	"when the structure is sound).\n"
	"  --schema             also validate against the bundled RelaxNG schema\n"
	"                       (dtopt-graph.rng; the reader's own checks are as\n"
	"                       strict)\n"
	"  -f, --format=FORMAT  text (default): 'IN.xml: ok (N nodes, V view; ...)';\n"
	"                       json: one object {file, ok, nodes, view, checks},\n"
	"                       and the errors as JSON lines on stderr\n"
	"  -o, --output=FILE    write to FILE (- for stdout, the default),\n"
	"                       atomically, and not when the graph is bad\n"
	"  -h, --help           this text\n";

/* The result of a graph that passed every check. */
static void verify_print(const struct dt_module *m, bool schema, bool json)
{
	const char *view = m->view == DT_VIEW_GLOBAL ? "global" : "local";
	if (!json) {
		printf("%s: ok (%u nodes, %s view; structure and shapes)\n",
		       m->file, dt_graph_count(m), view);
		return;
	}
	fputs("{\"file\": ", stdout);
	dt_json_string(stdout, m->file);
	printf(", \"ok\": true, \"nodes\": %u, \"view\": \"%s\", \"checks\": "
	       "[%s\"structure\", \"shapes\"]}\n",
	       dt_graph_count(m), view, schema ? "\"schema\", " : "");
}

int dt_cmd_verify(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"schema", no_argument, NULL, 'S'},
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text", *output = "-";
	struct dt_read_options opt = {0};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'S': opt.schema = true; break;
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
		case 'h': fputs(verify_help, stdout); return DT_EXIT_OK;
		default:
			return dt_usage_error("verify", "unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	bool json = strcmp(format, "json") == 0;
	if (!json && strcmp(format, "text") != 0)
		return dt_usage_error("verify", "unknown format '%s' (text or json)",
				      format);
	if (optind != argc - 1)
		return dt_usage_error("verify", "expected one input graph");
	struct dt_diag diag;
	dt_cli_diag_init(&diag);
	struct dt_module *m;
	int rc = dt_read_file(argv[optind], &opt, &diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	/* What opt checks before any rewrite: structure, then shapes. */
	struct dt_pipeline checks = {{&dt_pass_verify, &dt_pass_shape_infer}, 2};
	struct dt_pipeline_options popt = {0};
	rc = dt_exit_code(dt_pipeline_run(m, &checks, &popt, &diag));
	if (rc == DT_EXIT_OK)
		rc = dt_cli_output_begin("verify", output);
	if (rc == DT_EXIT_OK) {
		verify_print(m, opt.schema, json);
		rc = dt_cli_output_commit();
	}
	dt_module_destroy(m);
	return rc;
}
