// SPDX-License-Identifier: MIT
/* opt_run.c: one run of `dtopt opt` (cmd_graph.c parses its command
 * line): load the input, run the pipeline for one rank or for every rank
 * at once, plan again under --memory-budget (opt_replan.c), print the
 * report and write the graph. A rank's run under a budget takes the plan
 * of the program for every rank and, among the ranks of -o
 * 'L.{rank}.xml' (opt_ranks.c), must agree with the first rank's. */
#include "cost_model.h"
#include "frontend.h"
#include "opt_job.h"
#include "runtime.h"

#include <stdio.h>
#include <string.h>

int dt_opt_load(const char *path, bool allow_unknown, struct dt_diag *d,
		struct dt_module **m)
{
	struct dt_read_options opt = {.allow_unknown_targets = allow_unknown};
	return dt_read_file(path, &opt, d, m);
}

/* The settings of the one program for every rank (lower-redistribute
 * without a rank) that opt keeps under --memory-budget, planning again
 * as it does, from a copy of global-view `m`, quietly (a pipeline that
 * does not lower leaves the budget's own); false when that program
 * cannot be lowered (an op refused for every rank at once, semantics §7).
 * A rank's own program holds its own peak:
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
	int64_t estimate = 0;
	po.pass.bucket_room = &room;
	po.pass.search_peak = &estimate;
	struct opt_job spmd = *job;
	spmd.popt = &po;
	spmd.diag = &quiet;
	struct dt_module *input = dt_module_clone(m), *c = dt_module_clone(m);
	*out = (struct search_settings){po.pass.memory_budget, false};
	bool ran = dt_pipeline_run(c, pipeline, &po, &quiet) == DT_OK;
	if (ran && c->view == DT_VIEW_LOCAL) {
		po.pass.bucket_room = NULL;
		po.pass.search_peak = NULL;
		dt_opt_replan(&spmd, pipeline, c, input, room, estimate, out);
	}
	dt_module_destroy(c);
	dt_module_destroy(input);
	return ran;
}

void dt_opt_warn_plans_alone(struct dt_diag *d, const char *file)
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
	if (e) {
		e->tried = true;
		e->decided = decided;
		e->settings = *settings;
	} else if (!decided)
		dt_opt_warn_plans_alone(job->diag, m->file);
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
		for (const char *c = dt_str_get(m, m->groups.data[g].name);;
		     c++) {
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
 * interpreter runs it, a warning naming its peak and where. Returns that
 * peak (0 without a budget or a plan). */
static size_t warn_over_budget(struct dt_module *m, int64_t budget,
			       struct dt_diag *d)
{
	size_t peak;
	int rank;
	uint32_t at;
	if (budget <= 0 || m->view != DT_VIEW_LOCAL ||
	    dt_memory_plan(m, NULL, &peak, &rank, &at) != DT_OK)
		return 0;
	if (peak <= (size_t)budget)
		return peak;
	const struct dt_node *n = dt_node_get(m, at);
	dt_diag_report(d, DT_WARNING, m->file, n->line, "opt:memory",
		       "the program holds %zu bytes per rank at its peak (rank %d, at '%s'), over --memory-budget %lld (the passes keep a program within it only from a plan that fits, semantics §4.7; the search plans with an estimate, §6.6)",
		       peak, rank, dt_str_get(m, n->name), (long long)budget);
	return peak;
}

static const char *peak_kind(enum dt_view v)
{
	return v == DT_VIEW_LOCAL ? "as run" : "liveness estimate";
}

/* Load the input, run the pipeline (for rank popt->pass.rank), print the
 * report and timing, write `output` (NULL: nowhere). Returns a
 * dt_status. */
int dt_opt_optimize(const struct opt_job *job, const char *output)
{
	double t0 = dt_now();
	struct dt_module *m;
	int rc = dt_opt_load(job->input, false, job->diag, &m);
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
	int64_t estimate = 0;
	if (input || job->every_rank)
		job->popt->pass.bucket_room = &room;
	job->popt->pass.search_peak = &estimate;
	rc = dt_pipeline_run(m, &pipeline, job->popt, job->diag);
	job->popt->pass.bucket_room = NULL;
	job->popt->pass.search_peak = NULL;
	job->popt->pass.search_budget = 0;
	job->popt->pass.search_inputs_unbucketed = false;
	if (rc == DT_OK && job->dump_dir && job->dump_dir->failed)
		rc = DT_EIO;
	if (rc == DT_OK && input)
		dt_opt_replan(job, &pipeline, m, input, room, estimate,
			      &settings);
	if (own_cache) {
		dt_shard_problem_cache_destroy(job->popt->pass.problem_cache);
		job->popt->pass.problem_cache = NULL;
	}
	dt_module_destroy(input);
	size_t peak =
	    rc == DT_OK
		? warn_over_budget(m, job->popt->pass.memory_budget, job->diag)
		: 0;
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
	if (rc == DT_OK && job->every_rank) {
		struct every_rank *e = job->every_rank;
		if (peak > e->max_peak)
			e->max_peak = peak;
		if (room > e->room)
			e->room = room;
		e->estimate = estimate;
	}
	if (rc == DT_OK && !agrees_with_first_rank(job, m))
		rc = DT_EINPUT;
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
