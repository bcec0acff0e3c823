// SPDX-License-Identifier: MIT
/* opt_replan.c: `opt` plans again under --memory-budget (semantics §4.7):
 * where the first program does not fit (fit_replan), or fits while its
 * buckets lacked room (give_room, price_inputs_unbucketed), trials with
 * other search limits on clones of the global-view input, keeping the
 * fitting program of least modelled communication time. Each trial runs
 * the whole pipeline; the whole-graph problem is built once for all
 * (dt_shard_problem_cache). */
#include "cost_model.h"
#include "opt_job.h"
#include "runtime.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
 * pipeline failed), the peak the search estimated for its plan
 * (dt_pass_options' search_peak, 0: none), its peak as run, its modelled
 * communication time, the room its buckets lacked (bucket_room) and the
 * diagnostics its passes gave. */
struct trial {
	int64_t limit;
	bool inputs_unbucketed;
	struct dt_module *m;
	int64_t estimate;
	size_t peak;
	double us, room;
	struct kept_diags diags;
};

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
	po.pass.search_peak = &t->estimate;
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

/* The limit to step down from for a plan other than t's
 * (dt_opt_step_down_from under the budget the passes keep). */
static int64_t step_down_from(const struct opt_job *job,
			      const struct trial *t)
{
	return dt_opt_step_down_from(t->limit, t->estimate, (int64_t)t->peak,
				     job->popt->pass.memory_budget);
}

static void trial_drop(struct trial *t)
{
	kept_diags_fini(&t->diags, NULL);
	dt_module_destroy(t->m);
	t->m = NULL;
}

/* What fit_replan's trials share: the job and input they plan from, the
 * fitting program of least modelled communication time so far, and the
 * count of plans tried. */
struct replan_fit {
	const struct opt_job *job;
	const struct dt_pipeline *pipeline;
	const struct dt_module *input;
	struct trial *best;
	int *tried;
};

static enum limit_trial try_replan(void *ud, int64_t limit)
{
	struct replan_fit *f = ud;
	struct trial t;
	try_limit(f->job, f->pipeline, f->input, limit, false, &t);
	(*f->tried)++;
	enum limit_trial r = LIMIT_NONE;
	if (t.m)
		r = t.peak <= (size_t)f->job->popt->pass.memory_budget
			? LIMIT_FITS
			: LIMIT_OVER;
	if (r == LIMIT_FITS && (!f->best->m || t.us < f->best->us)) {
		trial_drop(f->best);
		*f->best = t;
	} else {
		trial_drop(&t);
	}
	return r;
}

/* Plan again where the first program (*best, its module NULL), which
 * holds best->peak bytes as run, does not fit --memory-budget B (the
 * search plans with an estimate of what lowering holds, semantics §6.6,
 * and the passes after it keep a plan only within max(B, its peak),
 * §4.7): dt_opt_fit_limit from the lower of B and the first plan's
 * estimated peak by the peak's excess over B, while the passes keep B,
 * keeping in *best, of the programs that fit, the one of least modelled
 * communication time. Returns whether one fits.
 * An odd-sized mixer on 4x1 under 66064 bytes: the first plan's estimate
 * is 64728, its program holds 66072; limits from 66064 down by 8·2^i
 * kept that plan, from 64728 the first step fits. */
static bool fit_replan(const struct opt_job *job,
		       const struct dt_pipeline *pipeline,
		       const struct dt_module *input, struct trial *best,
		       int *tried)
{
	struct replan_fit f = {job, pipeline, input, best, tried};
	int64_t excess = (int64_t)best->peak - job->popt->pass.memory_budget;
	int64_t fits = dt_opt_fit_limit(best->limit, step_down_from(job, best),
					excess, try_replan, &f);
	return fits >= 0;
}

/* Steps of give_room. */
#define REPLAN_ROOM_STEPS 3

/* Where the program in *best (best->m NULL: the first) fits but
 * bucket-collectives left merges undone that would pass the budget by up
 * to best->room bytes (the search priced those buckets' latencies once,
 * their memory not at all), plan again with the search's limit
 * step_down_from best less that room, and again from there by the room the
 * new program's buckets lack, while some do and each step gives a program
 * that fits and is modelled faster, which replaces *best
 * (REPLAN_ROOM_STEPS at most). mixer/3d under its expert's budget of
 * 38436 bytes (golden global_room): the first plan, estimated at 37568,
 * holds 37648 and lacks 2156; planned within 37568 + 788 - 2156 = 36200,
 * 138.3 -> 116.1 µs. */
static void give_room(const struct opt_job *job,
		      const struct dt_pipeline *pipeline,
		      const struct dt_module *input, struct trial *best,
		      int *tried)
{
	int64_t budget = job->popt->pass.memory_budget;
	int64_t limit = step_down_from(job, best);
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
		limit = step_down_from(job, &t);
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
 * bytes (give_room, price_inputs_unbucketed), stepping down from the
 * search's `estimate` of its plan's peak (0: none), keeping the fitting
 * program of least modelled communication time (remark opt:replan; its
 * diagnostics follow, those before it were the first plan's) and its
 * settings in *kept (left as they are where the first program stays). */
void dt_opt_replan(const struct opt_job *job, const struct dt_pipeline *pipeline,
		   struct dt_module *m, const struct dt_module *input,
		   double room, int64_t estimate, struct search_settings *kept)
{
	int64_t budget = job->popt->pass.memory_budget;
	size_t peak = m->view == DT_VIEW_LOCAL ? run_peak(m) : SIZE_MAX;
	if (peak == SIZE_MAX)
		return;
	bool over = peak > (size_t)budget;
	struct trial best = {.limit = budget, .estimate = estimate,
			     .peak = peak, .room = room,
			     .us = modelled_us(m, job->popt->pass.topology)};
	double first_us = best.us;
	int tried = 0;
	if (over && !fit_replan(job, pipeline, input, &best, &tried))
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
