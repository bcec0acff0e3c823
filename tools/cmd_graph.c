// SPDX-License-Identifier: MIT
/* cmd_graph.c: the `opt`, `dump` and `verify` subcommands. */
#include "cli.h"
#include "cost_model.h"
#include "dtopt_config.h"
#include "frontend.h"
#include "opt_output.h"
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

static int load(const char *path, bool allow_unknown, struct dt_diag *d,
		struct dt_module **m)
{
	struct dt_read_options opt = {.allow_unknown_targets = allow_unknown};
	return dt_read_file(path, &opt, d, m);
}

/* Pipeline-text errors are usage errors: print them as the CLI's own. */
static void usage_emit(void *ud, const struct dt_diag_entry *e)
{
	if (dt_cli_json)
		dt_cli_json_error(ud, e->message);
	else
		fprintf(stderr, "dtopt %s: error: %s\n", (const char *)ud,
			e->message);
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

/* What the whole-graph search planned the kept program with: the usage
 * limit and whether graph inputs' moves were priced unbucketed. */
struct search_settings {
	int64_t limit;
	bool inputs_unbucketed;
};

/* What opt -o 'L.{rank}.xml' keeps from rank to rank: the search
 * settings every rank's program takes under --memory-budget, decided
 * once (settings_for_rank); what the first rank's program declares and
 * issues (rank_agreement), which every other rank's must match; and
 * whether the pipeline runs without bucket-collectives and
 * schedule-collectives, which weigh each rank's own memory. */
struct every_rank {
	bool tried;       /* plan_for_every_rank ran */
	bool decided;     /* and settings hold what it found */
	struct search_settings settings;
	bool agreed;      /* first_rank and agreement are set */
	int first_rank;
	uint64_t agreement;
	int differs;      /* the first rank whose program did not match, -1 */
	bool without_memory_passes;
	size_t max_peak;  /* the most any rank's program holds */
};

/* What `opt` was told, for one run or one run per rank. */
struct opt_job {
	const char *input;
	const struct dt_pipeline *pipeline; /* NULL: the view's default */
	struct dt_pipeline_options *popt;
	const struct dt_cli_topology *topology_flags;
	enum output_form report;
	struct dt_diag *diag;
	struct dt_opt_sink *sink;
	struct dt_dump_dir *dump_dir; /* NULL: no --dump-dir */
	struct every_rank *every_rank; /* NULL: the rank decides alone */
};

/* The "before" table of --report, from a copy of m whose metadata
 * shape-infer completed (collectives without <tensor> sizes would count 0
 * bytes; the output graph stays as the pipeline leaves it). Returns the
 * copy, which the table refers to (NULL: the table is m's own). */
static struct dt_module *fill_before(const struct dt_module *m,
				     const struct dt_topology *t,
				     struct dt_comm_table *before)
{
	struct dt_diag quiet;
	dt_diag_init_quiet(&quiet);
	struct dt_module *copy = dt_module_clone(m);
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {0};
	DT_REQUIRE(dt_pipeline_parse(&p, "shape-infer", &quiet) == DT_OK);
	if (dt_pipeline_run(copy, &p, &popt, &quiet) == DT_OK) {
		dt_comm_table_fill(before, copy, t);
		return copy;
	}
	dt_module_destroy(copy);
	dt_comm_table_fill(before, m, t);
	return NULL;
}

/* The per-rank peak --report prints: a local-view module's memory plan as
 * the interpreter runs it (values and collective buffers, the most any
 * rank holds: dt_memory_plan), a global-view module's liveness estimate
 * (each value's largest shard, dt_memory_peak), or that estimate when
 * the plan cannot be made. */
static double report_peak(struct dt_module *m, uint32_t *at)
{
	size_t peak;
	if (m->view == DT_VIEW_LOCAL &&
	    dt_memory_plan(m, NULL, &peak, NULL, at) == DT_OK)
		return (double)peak;
	return dt_memory_peak(m, at);
}

/* Where the program the passes wrote does not fit --memory-budget as the
 * interpreter runs it, a warning naming its peak and where. */
static void warn_over_budget(struct dt_module *m, int64_t budget,
			     struct dt_diag *d)
{
	if (budget <= 0 || m->view != DT_VIEW_LOCAL)
		return;
	size_t peak;
	int rank;
	uint32_t at;
	if (dt_memory_plan(m, NULL, &peak, &rank, &at) != DT_OK ||
	    peak <= (size_t)budget)
		return;
	const struct dt_node *n = dt_node_get(m, at);
	dt_diag_report(d, DT_WARNING, m->file, n->line, "opt:memory",
		       "the program holds %zu bytes per rank at its peak (rank %d, at '%s'), over --memory-budget %lld (the passes keep a program within it only from a plan that fits, semantics §4.7; the search plans with an estimate, §6.6)",
		       peak, rank, dt_str_get(m, n->name), (long long)budget);
}

/* Diagnostics kept for later (a replan's, reported if it is the one
 * kept). */
struct kept_diags {
	DT_VEC(struct dt_diag_entry) entries; /* strings owned */
};

static char *dup_or_null(const char *s)
{
	return s ? strcpy(dt_malloc(strlen(s) + 1), s) : NULL;
}

static void keep_diag(void *ud, const struct dt_diag_entry *e)
{
	struct kept_diags *k = ud;
	struct dt_diag_entry c = {e->severity, dup_or_null(e->file), e->line,
				  dup_or_null(e->tag), dup_or_null(e->message)};
	dt_vec_push(&k->entries, c);
}

static void kept_diags_fini(struct kept_diags *k, struct dt_diag *replay_to)
{
	for (uint32_t i = 0; i < k->entries.len; i++) {
		struct dt_diag_entry *e = &k->entries.data[i];
		if (replay_to)
			dt_diag_report(replay_to, e->severity, e->file, e->line,
				       e->tag, "%s", e->message);
		dt_free((char *)e->file);
		dt_free((char *)e->tag);
		dt_free((char *)e->message);
	}
	dt_vec_free(&k->entries);
}

/* The program's peak as run (dt_memory_plan), SIZE_MAX when no plan can
 * be made. */
static size_t run_peak(struct dt_module *m)
{
	size_t peak;
	return dt_memory_plan(m, NULL, &peak, NULL, NULL) == DT_OK ? peak
								   : SIZE_MAX;
}

/* The modelled communication time (µs) of the collectives of `m`. */
static double modelled_us(const struct dt_module *m,
			  const struct dt_topology *topology)
{
	struct dt_comm_table t = {0};
	dt_comm_table_fill(&t, m, topology);
	double us = 0;
	for (uint32_t i = 0; i < t.rows.len; i++)
		us += t.rows.data[i].time_us;
	dt_comm_table_fini(&t);
	return us;
}

/* A program planned again with the search's limit `limit` (and graph
 * inputs' moves priced unbucketed or not): the module (NULL when the
 * pipeline failed), its peak as run, its modelled communication time, the
 * room its buckets lacked (dt_pass_options' bucket_room) and the
 * diagnostics its passes gave. */
struct trial {
	int64_t limit;
	bool inputs_unbucketed;
	struct dt_module *m;
	size_t peak;
	double us, room;
	struct kept_diags diags;
};

/* Bisection steps between the first limit whose program fits and the
 * least one above it whose program does not. */
#define REPLAN_BISECTIONS 3

static void try_limit(const struct opt_job *job,
		      const struct dt_pipeline *pipeline,
		      const struct dt_module *input, int64_t limit,
		      bool inputs_unbucketed, struct trial *t)
{
	struct dt_pipeline_options po = {.registry = job->popt->registry,
					 .verify_each = job->popt->verify_each,
					 .pass = job->popt->pass};
	memset(t, 0, sizeof *t);
	po.pass.search_budget = limit;
	po.pass.problem_out = NULL;
	po.pass.bisect = NULL;
	po.pass.bucket_room = &t->room;
	po.pass.search_inputs_unbucketed = inputs_unbucketed;
	t->limit = limit;
	t->inputs_unbucketed = inputs_unbucketed;
	struct dt_diag d;
	dt_diag_init(&d);
	d.emit = keep_diag;
	d.ud = &t->diags;
	d.remarks = job->diag->remarks;
	t->m = dt_module_clone(input);
	if (dt_pipeline_run(t->m, pipeline, &po, &d) != DT_OK) {
		dt_module_destroy(t->m);
		t->m = NULL;
		return;
	}
	t->peak = run_peak(t->m);
	t->us = modelled_us(t->m, job->popt->pass.topology);
}

static void trial_drop(struct trial *t)
{
	kept_diags_fini(&t->diags, NULL);
	dt_module_destroy(t->m);
	t->m = NULL;
}

/* Plan again where the first program, which holds `peak` bytes as run,
 * does not fit --memory-budget B (the search plans with an estimate of
 * what lowering holds, semantics §6.6, and the passes after it keep a plan
 * only within max(B, its peak), §4.7): with the search's limit
 * B - excess·2^i (i = 0..3, excess = the peak over B) while the passes
 * keep B, up to the first program that fits; then bisect between that
 * limit and the least one above it whose program does not fit
 * (REPLAN_BISECTIONS steps: a limit cut by the whole excess is often
 * more than the estimate's error needs), keeping in *best, of the
 * programs that fit, the one of least modelled communication time.
 * Returns whether one fits. */
static bool fit_replan(const struct opt_job *job,
		       const struct dt_pipeline *pipeline,
		       const struct dt_module *input, size_t peak,
		       struct trial *best, int *tried)
{
	int64_t budget = job->popt->pass.memory_budget;
	int64_t excess = (int64_t)peak - budget, over = budget;
	struct trial t;
	for (int i = 0; i < 4 && budget - (excess << i) > 0 && !best->m; i++) {
		try_limit(job, pipeline, input, budget - (excess << i), false, &t);
		(*tried)++;
		if (!t.m) {
			trial_drop(&t);
			return false;
		}
		if (t.peak <= (size_t)budget) {
			*best = t;
			continue;
		}
		over = t.limit;
		trial_drop(&t);
	}
	if (!best->m)
		return false;
	int64_t fits = best->limit;
	for (int k = 0; k < REPLAN_BISECTIONS && over - fits > 1; k++) {
		try_limit(job, pipeline, input, fits + (over - fits) / 2, false,
			  &t);
		(*tried)++;
		if (!t.m) {
			trial_drop(&t);
			break;
		}
		if (t.peak > (size_t)budget) {
			over = t.limit;
		} else {
			fits = t.limit;
			if (t.us < best->us) {
				trial_drop(best);
				*best = t;
				continue;
			}
		}
		trial_drop(&t);
	}
	return true;
}

/* Steps of give_room. */
#define REPLAN_ROOM_STEPS 3

/* Where the program in *best (best->m NULL: the first) fits but
 * bucket-collectives left merges undone that would pass the budget by up
 * to best->room bytes (the search priced those buckets' latencies once,
 * their memory not at all), plan again with the search's limit lowered by
 * that room, and again from there by the room the new program's buckets
 * lack, while some do and each step gives a program that fits and is
 * modelled faster, which replaces *best (REPLAN_ROOM_STEPS at most).
 * mixer/3d under its expert's budget: 38436 -> 36280 -> 34124 bytes,
 * 138.3 -> 129.9 -> 116.1 µs. */
static void give_room(const struct opt_job *job,
		      const struct dt_pipeline *pipeline,
		      const struct dt_module *input, struct trial *best,
		      int *tried)
{
	int64_t budget = job->popt->pass.memory_budget, limit = best->limit;
	int64_t room = (int64_t)ceil(best->room);
	for (int k = 0; k < REPLAN_ROOM_STEPS && room > 0 && limit - room > 0;
	     k++) {
		struct trial t;
		try_limit(job, pipeline, input, limit - room, false, &t);
		(*tried)++;
		if (!t.m) {
			trial_drop(&t);
			return;
		}
		limit = t.limit;
		room = (int64_t)ceil(t.room);
		if (t.peak > (size_t)budget || t.us >= best->us) {
			trial_drop(&t);
			return;
		}
		trial_drop(best);
		*best = t;
	}
}

/* Where the first program (its buckets lacked `first_room` bytes) or the
 * one in *best left merges undone for --memory-budget, plan once more
 * within best's limit (the budget, or the one a replan step kept) with
 * graph inputs' moves priced unbucketed, each paying its collectives'
 * latencies: the search prices a bucket's latency once and its memory not
 * at all, while a merged gather of parameters holds every member from the
 * first member's read on. The program replaces *best when it fits and is
 * modelled faster.
 * mixer/fsdp_tp under its expert's budget: 76.5 -> 68.7 µs, 10 -> 9
 * collectives. */
static void price_inputs_unbucketed(const struct opt_job *job,
				    const struct dt_pipeline *pipeline,
				    const struct dt_module *input,
				    double first_room, struct trial *best,
				    int *tried)
{
	int64_t budget = job->popt->pass.memory_budget;
	if (first_room <= 0 && best->room <= 0)
		return;
	struct trial t;
	try_limit(job, pipeline, input, best->limit, true, &t);
	(*tried)++;
	if (t.m && t.peak <= (size_t)budget && t.us < best->us) {
		trial_drop(best);
		*best = t;
		return;
	}
	trial_drop(&t);
}

/* Plan the program lowered from global-view `input` again where it does
 * not fit --memory-budget (fit_replan) or where its buckets lacked `room`
 * bytes (give_room, price_inputs_unbucketed), keeping the fitting program
 * of least modelled communication time (remark opt:replan; its
 * diagnostics follow, those before it were the first plan's) and its
 * settings in *kept (left as they are where the first program stays). */
static void replan(const struct opt_job *job, const struct dt_pipeline *pipeline,
		   struct dt_module *m, const struct dt_module *input,
		   double room, struct search_settings *kept)
{
	int64_t budget = job->popt->pass.memory_budget;
	size_t peak = m->view == DT_VIEW_LOCAL ? run_peak(m) : SIZE_MAX;
	if (peak == SIZE_MAX)
		return;
	bool over = peak > (size_t)budget;
	struct trial best = {.limit = budget, .peak = peak, .room = room,
			     .us = modelled_us(m, job->popt->pass.topology)};
	double first_us = best.us;
	int tried = 0;
	if (over && !fit_replan(job, pipeline, input, peak, &best, &tried))
		return;
	give_room(job, pipeline, input, &best, &tried);
	price_inputs_unbucketed(job, pipeline, input, room, &best, &tried);
	if (!best.m)
		return;
	const char *priced = best.inputs_unbucketed
				 ? ", graph inputs' moves priced unbucketed"
				 : "";
	if (over)
		dt_diag_report(job->diag, DT_REMARK, m->file, 0, "opt:replan",
			       "the program held %zu bytes per rank at its peak, over --memory-budget %lld: planned again within %lld%s (of %d plans tried, the program of least modelled time that fits), it holds %zu (the diagnostics after this one are that plan's)",
			       peak, (long long)budget, (long long)best.limit,
			       priced, tried, best.peak);
	else
		dt_diag_report(job->diag, DT_REMARK, m->file, 0, "opt:replan",
			       "bucket-collectives left merges undone that would have passed --memory-budget %lld by up to %.0f bytes: planned again with the search's limit lowered by the room the buckets lacked and with graph inputs' moves priced unbucketed (%d plans); the program of least modelled time that fits, planned within %lld%s, holds %zu and is modelled at %.2f us against %.2f (the diagnostics after this one are that plan's)",
			       (long long)budget, room, tried,
			       (long long)best.limit, priced, best.peak,
			       best.us, first_us);
	kept_diags_fini(&best.diags, job->diag);
	*kept = (struct search_settings){best.limit, best.inputs_unbucketed};
	dt_module_swap(m, best.m);
	dt_module_destroy(best.m);
}

/* The settings of the one program for every rank (lower-redistribute
 * without a rank) that opt keeps under --memory-budget, planning again
 * as it does, from a copy of global-view `m`, quietly; false when that
 * program cannot be lowered. A rank's own program holds its own peak:
 * with uneven shards ranks hold different ones, and ranks planning alone
 * would plan within different limits and lower different collectives
 * (an odd-sized mlp_sgd on 2x2x2 under 13250 bytes: 5 collectives on
 * four ranks, 4 on the other four). */
static bool plan_for_every_rank(const struct opt_job *job,
				const struct dt_pipeline *pipeline,
				const struct dt_module *m,
				struct search_settings *out)
{
	struct dt_diag quiet;
	dt_diag_init_quiet(&quiet);
	struct dt_pipeline_options po = {.registry = job->popt->registry,
					 .verify_each = job->popt->verify_each,
					 .pass = job->popt->pass};
	po.pass.rank = -1;
	po.pass.problem_out = NULL;
	po.pass.bisect = NULL;
	double room = 0;
	po.pass.bucket_room = &room;
	struct opt_job spmd = *job;
	spmd.popt = &po;
	spmd.diag = &quiet;
	struct dt_module *input = dt_module_clone(m), *c = dt_module_clone(m);
	*out = (struct search_settings){po.pass.memory_budget, false};
	bool lowered = dt_pipeline_run(c, pipeline, &po, &quiet) == DT_OK &&
		       c->view == DT_VIEW_LOCAL;
	if (lowered) {
		po.pass.bucket_room = NULL;
		replan(&spmd, pipeline, c, input, room, out);
	}
	dt_module_destroy(c);
	dt_module_destroy(input);
	return lowered;
}

static void warn_plans_alone(struct dt_diag *d, const char *file)
{
	dt_diag_report(d, DT_WARNING, file, 0, "opt:ranks",
		       "the program for every rank cannot be lowered (lower it without --rank to see why), so each rank plans alone under --memory-budget: ranks whose shards hold other peaks may plan differently");
}

/* Under --memory-budget, a rank's program (--rank R, or each of
 * -o 'L.{rank}.xml') takes the search settings of the program for every
 * rank (plan_for_every_rank, decided once for all of -o 'L.{rank}.xml'),
 * so every rank lowers the same plan; where that program cannot be
 * lowered the rank plans alone, with a warning. Returns whether
 * *settings hold them. */
static bool settings_for_rank(const struct opt_job *job,
			      const struct dt_pipeline *pipeline,
			      const struct dt_module *m,
			      struct search_settings *settings)
{
	if (job->popt->pass.rank < 0 || job->popt->pass.memory_budget <= 0 ||
	    m->view != DT_VIEW_GLOBAL)
		return false;
	struct every_rank *e = job->every_rank;
	if (e && e->tried) {
		*settings = e->settings;
		return e->decided;
	}
	bool decided = plan_for_every_rank(job, pipeline, m, settings);
	if (e)
		*e = (struct every_rank){.tried = true, .decided = decided,
					 .settings = *settings,
					 .differs = e->differs,
					 .without_memory_passes =
					     e->without_memory_passes};
	else if (!decided)
		warn_plans_alone(job->diag, m->file);
	return decided;
}

/* What every rank's program must agree on to run together (the runtime
 * checks the same at start-up): the groups it declares, by name in
 * order, and the collectives it issues in order (kind, group, dtype,
 * reduce op: dt_collective_sequence), as one hash. */
static uint64_t rank_agreement(const struct dt_module *m)
{
	struct dt_collective_item *seq;
	uint32_t n;
	uint64_t h;
	dt_collective_sequence(m, &seq, &n, &h);
	dt_free(seq);
	for (uint32_t g = 0; g < m->groups.len; g++)
		for (const char *c = dt_str_get(m, m->groups.data[g].name);; c++) {
			h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
			if (!*c)
				break;
		}
	return h;
}

/* With job->every_rank, whether m (the program of rank
 * job->popt->pass.rank) agrees with the first rank's; records the
 * first's, and the rank that does not agree. */
static bool agrees_with_first_rank(const struct opt_job *job,
				   const struct dt_module *m)
{
	struct every_rank *e = job->every_rank;
	if (!e || m->view != DT_VIEW_LOCAL)
		return true;
	uint64_t a = rank_agreement(m);
	if (!e->agreed) {
		e->agreed = true;
		e->first_rank = job->popt->pass.rank;
		e->agreement = a;
		return true;
	}
	if (a == e->agreement)
		return true;
	e->differs = job->popt->pass.rank;
	return false;
}

/* `p` without bucket-collectives and schedule-collectives. */
static void drop_memory_passes(struct dt_pipeline *p)
{
	int kept = 0;
	for (int i = 0; i < p->npasses; i++)
		if (p->passes[i] != &dt_pass_bucket_collectives &&
		    p->passes[i] != &dt_pass_schedule_collectives)
			p->passes[kept++] = p->passes[i];
	p->npasses = kept;
}

static const char *peak_kind(enum dt_view v)
{
	return v == DT_VIEW_LOCAL ? "as run" : "liveness estimate";
}

/* Load the input, run the pipeline (for rank popt->pass.rank), print the
 * report and timing, write `output` (NULL: nowhere). Returns a
 * dt_status. */
static int optimize(const struct opt_job *job, const char *output)
{
	double t0 = dt_now();
	struct dt_module *m;
	int rc = load(job->input, false, job->diag, &m);
	if (rc != DT_OK)
		return rc;
	double t1 = dt_now();
	dt_opt_sink_module(job->sink, m);
	if (job->dump_dir)
		dt_dump_dir_write(job->dump_dir, m, "input");
	struct dt_pipeline pipeline;
	if (job->pipeline)
		pipeline = *job->pipeline;
	else
		DT_REQUIRE(dt_pipeline_parse(&pipeline, dt_default_pipeline(m),
					     job->diag) == DT_OK);
	if (job->every_rank && job->every_rank->without_memory_passes)
		drop_memory_passes(&pipeline);
	struct dt_topology topology = m->topology;
	dt_cli_topology_apply(job->topology_flags, &topology);
	job->popt->pass.topology = &topology;
	struct dt_comm_table before = {0}, after = {0};
	struct dt_module *shaped = NULL;
	uint32_t at_before = 0, at_after = 0;
	double peak_before = 0;
	enum dt_view view_before = (enum dt_view)m->view;
	if (job->report != FORM_NONE) {
		shaped = fill_before(m, &topology, &before);
		peak_before = report_peak(shaped ? shaped : m, &at_before);
	}
	bool own_cache = !job->popt->pass.problem_cache &&
			 job->popt->pass.memory_budget > 0 &&
			 m->view == DT_VIEW_GLOBAL;
	if (own_cache)
		job->popt->pass.problem_cache = dt_shard_problem_cache_create();
	struct search_settings settings;
	bool fixed = settings_for_rank(job, &pipeline, m, &settings);
	if (fixed) {
		job->popt->pass.search_budget = settings.limit;
		job->popt->pass.search_inputs_unbucketed =
		    settings.inputs_unbucketed;
		if (settings.limit != job->popt->pass.memory_budget ||
		    settings.inputs_unbucketed)
			dt_diag_report(job->diag, DT_REMARK, m->file, 0,
				       "opt:ranks",
				       "rank %d takes the plan every rank takes under --memory-budget %lld: the search plans within %lld%s",
				       job->popt->pass.rank,
				       (long long)job->popt->pass.memory_budget,
				       (long long)settings.limit,
				       settings.inputs_unbucketed
					   ? ", graph inputs' moves priced unbucketed"
					   : "");
	}
	struct dt_module *input =
	    job->popt->pass.memory_budget > 0 && m->view == DT_VIEW_GLOBAL &&
		    !fixed
		? dt_module_clone(m)
		: NULL;
	double room = 0;
	if (input)
		job->popt->pass.bucket_room = &room;
	rc = dt_pipeline_run(m, &pipeline, job->popt, job->diag);
	job->popt->pass.bucket_room = NULL;
	job->popt->pass.search_budget = 0;
	job->popt->pass.search_inputs_unbucketed = false;
	if (rc == DT_OK && job->dump_dir && job->dump_dir->failed)
		rc = DT_EIO;
	if (rc == DT_OK && input)
		replan(job, &pipeline, m, input, room, &settings);
	if (own_cache) {
		dt_shard_problem_cache_destroy(job->popt->pass.problem_cache);
		job->popt->pass.problem_cache = NULL;
	}
	dt_module_destroy(input);
	if (rc == DT_OK)
		warn_over_budget(m, job->popt->pass.memory_budget, job->diag);
	double t2 = dt_now();
	if (rc == DT_OK && job->report != FORM_NONE) {
		dt_comm_table_fill(&after, m, &topology);
		double peak_after = report_peak(m, &at_after);
		if (job->report == FORM_JSON) {
			dt_comm_report_print_json(&before, &after, stderr);
			fprintf(stderr, "{\"memory\": {\"peak_before\": %.0f, "
					"\"peak_after\": %.0f}}\n",
				peak_before, peak_after);
		} else {
			char a[32], b[32];
			dt_comm_report_print(&before, &after, stderr);
			dt_format_bytes(peak_before, a, sizeof a);
			dt_format_bytes(peak_after, b, sizeof b);
			fprintf(stderr, "peak per-rank memory: %s (%s) -> %s (%s) "
					"(at '%s')\n",
				a, peak_kind(view_before), b, peak_kind(m->view),
				dt_str_get(m, dt_node_get(m, at_after)->name));
		}
	}
	dt_comm_table_fini(&before);
	dt_comm_table_fini(&after);
	dt_module_destroy(shaped);
	if (rc == DT_OK && !agrees_with_first_rank(job, m))
		rc = DT_EINPUT;
	if (rc == DT_OK && job->every_rank && m->view == DT_VIEW_LOCAL) {
		size_t peak = run_peak(m);
		if (peak > job->every_rank->max_peak)
			job->every_rank->max_peak = peak;
	}
	if (rc == DT_OK && output)
		rc = dt_write_file(m, output, job->diag);
	double t3 = dt_now();
	if (job->popt->time_passes)
		fprintf(stderr, "  load %.6f s, passes %.6f s, write %.6f s, total %.6f s\n",
			t1 - t0, t2 - t1, t3 - t2, t3 - t0);
	job->popt->pass.topology = NULL;
	dt_opt_sink_fini(job->sink);
	dt_module_destroy(m);
	return rc;
}

/* `output` with its {rank} (at rank_at) replaced by `rank`, in a static
 * buffer. */
static const char *rank_path(const char *output, const char *rank_at,
			     int32_t rank)
{
	static char path[4096];
	snprintf(path, sizeof path, "%.*s%d%s", (int)(rank_at - output),
		 output, (int)rank, rank_at + strlen("{rank}"));
	return path;
}

/* Lower and write every rank's program (ranks[0 .. nranks)) to `output`
 * (NULL: nowhere); *written: how many were written, the most of any
 * attempt. Returns a dt_status; DT_EINPUT with job->every_rank->differs
 * set where a rank's program does not agree with the first's (it is not
 * written). */
static int lower_every_rank(struct opt_job *job, const char *output,
			    const char *rank_at, const int32_t *ranks,
			    int64_t nranks, int64_t *written)
{
	int rc = DT_OK;
	FILE *problem_out = job->popt->pass.problem_out;
	for (int64_t i = 0; i < nranks && rc == DT_OK; i++) {
		/* --dump-problem: the problem of all, written once */
		if (*written > 0)
			job->popt->pass.problem_out = NULL;
		job->popt->pass.rank = ranks[i];
		rc = optimize(job, output ? rank_path(output, rank_at, ranks[i])
					  : NULL);
		if (rc == DT_OK && output && i + 1 > *written)
			*written = i + 1;
	}
	job->popt->pass.problem_out = problem_out;
	return rc;
}

static void warn_ranks_differ(struct dt_diag *d, const char *file,
			      const struct every_rank *e)
{
	dt_diag_report(d, DT_WARNING, file, 0, "opt:ranks",
		       "rank %d's program would declare or issue other groups or collectives than rank %d's (bucket-collectives and schedule-collectives weigh each rank's own memory, which uneven shards make differ): every rank's program is lowered again without those two passes",
		       e->differs, e->first_rank);
}

/* Steps of fit_every_rank. */
#define RANK_FIT_STEPS 8

/* Where a rank's program (as `quiet`, a job that reports and writes
 * nothing, lowered them last) holds more than --memory-budget though the
 * program for every rank, whose search settings every rank takes, fits
 * (each rank lowers its own shards, semantics §7): lower every rank
 * again with the search's limit lowered by the largest excess·2^i
 * (i = 0..RANK_FIT_STEPS-1) up to the first limit whose programs all fit
 * and agree, which quiet->every_rank then holds (remark opt:ranks to d);
 * where none does, the settings stay. Each limit is solved once (the
 * problem cache). */
/* Whether every rank's program, its search planning within `limit`,
 * agrees with the others and fits --memory-budget (lowered by `quiet`);
 * quiet->every_rank then holds that limit and the largest peak. */
static bool every_rank_fits(struct opt_job *quiet, const struct every_rank *first,
			    int64_t limit, const int32_t *ranks, int64_t nranks)
{
	struct every_rank *e = quiet->every_rank;
	*e = (struct every_rank){
	    .tried = true,
	    .decided = true,
	    .settings = {limit, first->settings.inputs_unbucketed},
	    .differs = -1,
	    .without_memory_passes = first->without_memory_passes};
	int64_t none = 0;
	return lower_every_rank(quiet, NULL, NULL, ranks, nranks, &none) ==
		       DT_OK &&
	       e->max_peak <= (size_t)quiet->popt->pass.memory_budget;
}

static void fit_every_rank(struct opt_job *quiet, const int32_t *ranks,
			   int64_t nranks, struct dt_diag *d)
{
	struct every_rank first = *quiet->every_rank;
	int64_t budget = quiet->popt->pass.memory_budget;
	int64_t excess = (int64_t)first.max_peak - budget;
	int64_t over = first.settings.limit, fits = -1;
	for (int i = 0; i < RANK_FIT_STEPS && fits < 0; i++) {
		int64_t limit = first.settings.limit - (excess << i);
		if (limit <= 0)
			break;
		if (every_rank_fits(quiet, &first, limit, ranks, nranks))
			fits = limit;
		else
			over = limit;
	}
	if (fits < 0) {
		*quiet->every_rank = first;
		return;
	}
	/* The largest limit that fits, within REPLAN_BISECTIONS steps:
	 * a limit cut further than needed gives up time for memory. */
	for (int k = 0; k < REPLAN_BISECTIONS && over - fits > 1; k++) {
		int64_t mid = fits + (over - fits) / 2;
		if (every_rank_fits(quiet, &first, mid, ranks, nranks))
			fits = mid;
		else
			over = mid;
	}
	every_rank_fits(quiet, &first, fits, ranks, nranks);
	dt_diag_report(d, DT_REMARK, quiet->input, 0, "opt:ranks",
		       "a rank's program held %zu bytes at its peak, over --memory-budget %lld, where the program for every rank fits: every rank planned again within %lld, and every rank's program holds at most %zu",
		       first.max_peak, (long long)budget, (long long)fits,
		       quiet->every_rank->max_peak);
}

/* Settle what every rank's program of -o 'L.{rank}.xml' takes under
 * --memory-budget by lowering every rank quietly, writing nothing: the
 * search settings (settings_for_rank, fit_every_rank) and whether the
 * memory-weighing passes run (the ranks' programs agree). Returns a
 * dt_status; DT_EINPUT with every->differs set where they still differ
 * without those passes. */
static int settle_every_rank(const struct opt_job *job, const int32_t *ranks,
			     int64_t nranks)
{
	struct dt_diag quiet_diag;
	dt_diag_init_quiet(&quiet_diag);
	struct dt_opt_sink no_sink = {0};
	struct dt_pipeline_options po = *job->popt;
	po.time_passes = false;
	po.dump_after = NULL;
	po.after_pass = NULL;
	po.pass.problem_out = NULL;
	struct opt_job quiet = *job;
	quiet.popt = &po;
	quiet.diag = &quiet_diag;
	quiet.sink = &no_sink;
	quiet.report = FORM_NONE;
	quiet.dump_dir = NULL;
	struct every_rank *e = job->every_rank;
	int64_t none = 0;
	int rc = lower_every_rank(&quiet, NULL, NULL, ranks, nranks, &none);
	if (e->tried && !e->decided)
		warn_plans_alone(job->diag, job->input);
	if (e->differs >= 0) {
		warn_ranks_differ(job->diag, job->input, e);
		*e = (struct every_rank){.tried = e->tried,
					 .decided = e->decided,
					 .settings = e->settings,
					 .differs = -1,
					 .without_memory_passes = true};
		rc = lower_every_rank(&quiet, NULL, NULL, ranks, nranks, &none);
	}
	if (rc == DT_OK && e->decided &&
	    e->max_peak > (size_t)job->popt->pass.memory_budget)
		fit_every_rank(&quiet, ranks, nranks, job->diag);
	return rc;
}

/* An output path with {rank}: lower once per rank of the graph's only
 * mesh, reloading the input for each (optimize loads what it lowers), and write
 * one graph per rank. Returns an exit code. */
static int optimize_per_rank(struct opt_job *job, const char *output,
			     const char *rank_at)
{
	struct dt_module *m;
	int rc = load(job->input, false, job->diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	if (m->meshes.len != 1) {
		unsigned n = m->meshes.len;
		dt_module_destroy(m);
		return dt_usage_error("opt", "an output path with {rank} lowers "
				      "for each rank of the graph's mesh, but "
				      "it has %u meshes", n);
	}
	const struct dt_mesh *mesh = &m->meshes.data[0];
	int64_t nranks = mesh->size;
	int32_t *ranks = dt_calloc((size_t)nranks, sizeof *ranks);
	for (int64_t i = 0; i < nranks; i++)
		ranks[i] = dt_mesh_device(mesh, i);
	dt_module_destroy(m);
	/* Every rank's program from one problem and, under a budget, one
	 * plan (settings_for_rank), settled before any is written
	 * (settle_every_rank); all must declare and issue the same
	 * (agrees_with_first_rank), else every rank's is lowered again
	 * without the passes that weigh each rank's own memory, and where
	 * they still differ none is left written. */
	struct every_rank every = {.differs = -1};
	job->every_rank = &every;
	job->popt->pass.problem_cache = dt_shard_problem_cache_create();
	int64_t written = 0;
	if (job->popt->pass.memory_budget > 0)
		rc = settle_every_rank(job, ranks, nranks);
	if (rc == DT_OK) {
		every.agreed = false;
		every.max_peak = 0;
		rc = lower_every_rank(job, output, rank_at, ranks, nranks,
				      &written);
	}
	if (every.differs >= 0 && !every.without_memory_passes) {
		warn_ranks_differ(job->diag, job->input, &every);
		every = (struct every_rank){.tried = every.tried,
					    .decided = every.decided,
					    .settings = every.settings,
					    .differs = -1,
					    .without_memory_passes = true};
		rc = lower_every_rank(job, output, rank_at, ranks, nranks,
				      &written);
	}
	if (every.differs >= 0) {
		dt_diag_report(job->diag, DT_ERROR, job->input, 0, NULL,
			       "rank %d's program declares or issues other groups or collectives than rank %d's: no rank's program is written",
			       every.differs, every.first_rank);
		for (int64_t i = 0; i < written; i++)
			unlink(rank_path(output, rank_at, ranks[i]));
	}
	dt_shard_problem_cache_destroy(job->popt->pass.problem_cache);
	job->popt->pass.problem_cache = NULL;
	job->every_rank = NULL;
	dt_free(ranks);
	return dt_exit_code(rc);
}

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
	if (!rank_at)
		rc = dt_exit_code(optimize(&job, output));
	else if (popt.pass.rank >= 0 || strcmp(job.input, "-") == 0)
		rc = dt_usage_error("opt", "an output path with {rank} lowers "
				    "for every rank: it needs an input file "
				    "and no --rank");
	else
		rc = optimize_per_rank(&job, output, rank_at);
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
	int rc = load(argv[optind], true, &diag, &m);
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
