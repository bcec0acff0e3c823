// SPDX-License-Identifier: MIT
/* opt_ranks.c: the programs of every rank (opt -o 'L.{rank}.xml', and
 * opt --rank R under --memory-budget, semantics §6.6), from one problem
 * and one plan, settled quietly before any is written: they must declare
 * and issue what the first rank's does (else the passes that weigh each
 * rank's own memory are left out), and every one must fit the budget
 * where the program for every rank does (else every rank plans again
 * within one common limit). One run of a rank is opt_run.c's. */
#include "opt_job.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
		const char *path =
		    output ? rank_path(output, rank_at, ranks[i]) : NULL;
		rc = dt_opt_optimize(job, path);
		if (rc == DT_OK && output && i + 1 > *written)
			*written = i + 1;
	}
	job->popt->pass.problem_out = problem_out;
	return rc;
}

/* After a rank's program did not agree with the first rank's: warn,
 * and lower every rank from now on without the passes that weigh each
 * rank's own memory (the search settings stay). */
static void without_memory_passes(const struct opt_job *job,
				  struct every_rank *e)
{
	dt_diag_report(job->diag, DT_WARNING, job->input, 0, "opt:ranks",
		       "rank %d's program would declare or issue other groups or collectives than rank %d's (bucket-collectives and schedule-collectives weigh each rank's own memory, which uneven shards make differ): every rank's program is lowered again without those two passes",
		       e->differs, e->first_rank);
	*e = (struct every_rank){.tried = e->tried,
				 .decided = e->decided,
				 .settings = e->settings,
				 .differs = -1,
				 .without_memory_passes = true};
}

/* Every rank's program lowered by `quiet` (a job that reports and writes
 * nothing) with its search planning within `limit`: quiet->every_rank
 * then holds that limit and the largest peak. */
static int lower_every_rank_within(struct opt_job *quiet,
				   const struct every_rank *first,
				   int64_t limit, const int32_t *ranks,
				   int64_t nranks)
{
	struct every_rank *e = quiet->every_rank;
	*e = (struct every_rank){
	    .tried = true,
	    .decided = true,
	    .settings = {limit, first->settings.inputs_unbucketed},
	    .differs = -1,
	    .without_memory_passes = first->without_memory_passes};
	int64_t none = 0;
	return lower_every_rank(quiet, NULL, NULL, ranks, nranks, &none);
}

/* What fit_every_rank's trials share. */
struct rank_fit {
	struct opt_job *quiet;
	const struct every_rank *first;
	const int32_t *ranks;
	int64_t nranks;
};

/* Whether every rank's program, its search planning within `limit`,
 * agrees with the others and fits --memory-budget (a program that
 * differs counts as one that does not fit). */
static enum limit_trial try_every_rank(void *ud, int64_t limit)
{
	struct rank_fit *f = ud;
	int rc = lower_every_rank_within(f->quiet, f->first, limit, f->ranks,
					 f->nranks);
	const struct every_rank *e = f->quiet->every_rank;
	if (rc != DT_OK)
		return e->differs >= 0 ? LIMIT_OVER : LIMIT_NONE;
	return e->max_peak <= (size_t)f->quiet->popt->pass.memory_budget
		   ? LIMIT_FITS
		   : LIMIT_OVER;
}

/* Every rank planned again within one common limit (as `quiet`, which
 * lowered them last, and whose every_rank holds what they gave):
 * dt_opt_fit_limit from dt_opt_step_down_from (the largest rank's peak)
 * by `step`, up to the first limit whose programs all agree and fit.
 * Returns that limit, quiet->every_rank then holding its programs'
 * settings and peak; -1 where none does, the settings staying. Each limit
 * is solved once (the problem cache). */
static int64_t fit_every_rank(struct opt_job *quiet, const int32_t *ranks,
			      int64_t nranks, int64_t step)
{
	struct every_rank first = *quiet->every_rank;
	int64_t from = dt_opt_step_down_from(
	    first.settings.limit, first.estimate, (int64_t)first.max_peak,
	    quiet->popt->pass.memory_budget);
	struct rank_fit f = {quiet, &first, ranks, nranks};
	int64_t fits = dt_opt_fit_limit(first.settings.limit, from, step,
					try_every_rank, &f);
	if (fits < 0)
		*quiet->every_rank = first;
	else
		lower_every_rank_within(quiet, &first, fits, ranks, nranks);
	return fits;
}

/* Where the ranks' programs (as `quiet` lowered them last) differ
 * because bucket-collectives, weighing each rank's own memory (uneven
 * shards make it differ), left merges undone on some ranks for want of
 * up to every_rank->room bytes: every rank planned again within one
 * common limit stepping down by that room (fit_every_rank), where every
 * rank's buckets have it (remark opt:ranks to d). Returns whether their
 * programs then agree and fit; where not, the settings stay. */
static bool give_every_rank_room(struct opt_job *quiet, const int32_t *ranks,
				 int64_t nranks, struct dt_diag *d)
{
	struct every_rank differing = *quiet->every_rank;
	if (!differing.decided || differing.room <= 0 ||
	    fit_every_rank(quiet, ranks, nranks,
			   (int64_t)ceil(differing.room)) < 0)
		return false;
	dt_diag_report(d, DT_REMARK, quiet->input, 0, "opt:ranks",
		       "rank %d's program would declare or issue other groups or collectives than rank %d's (bucket-collectives weighs each rank's own memory, which uneven shards make differ, and left merges undone for want of up to %.0f bytes): every rank planned again within %lld, where they agree, and every rank's program holds at most %zu",
		       differing.differs, differing.first_rank, differing.room,
		       (long long)quiet->every_rank->settings.limit,
		       quiet->every_rank->max_peak);
	return true;
}

/* Where a rank's program (as `quiet` lowered them last) holds more than
 * --memory-budget though the program for every rank, whose search
 * settings every rank takes, fits (each rank lowers its own shards,
 * semantics §7): every rank planned again within one common limit
 * stepping down by the largest excess (fit_every_rank; remark opt:ranks
 * to d); where none fits, the settings stay. */
static void fit_every_rank_budget(struct opt_job *quiet, const int32_t *ranks,
				  int64_t nranks, struct dt_diag *d)
{
	size_t over = quiet->every_rank->max_peak;
	int64_t budget = quiet->popt->pass.memory_budget;
	int64_t fits = fit_every_rank(quiet, ranks, nranks,
				      (int64_t)over - budget);
	if (fits < 0)
		return;
	dt_diag_report(d, DT_REMARK, quiet->input, 0, "opt:ranks",
		       "a rank's program held %zu bytes at its peak, over --memory-budget %lld, where the program for every rank fits: every rank planned again within %lld, and every rank's program holds at most %zu",
		       over, (long long)budget, (long long)fits,
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
		dt_opt_warn_plans_alone(job->diag, job->input);
	if (e->differs >= 0 &&
	    give_every_rank_room(&quiet, ranks, nranks, job->diag))
		rc = DT_OK;
	if (e->differs >= 0) {
		without_memory_passes(job, e);
		rc = lower_every_rank(&quiet, NULL, NULL, ranks, nranks, &none);
	}
	if (rc == DT_OK && e->decided &&
	    e->max_peak > (size_t)job->popt->pass.memory_budget)
		fit_every_rank_budget(&quiet, ranks, nranks, job->diag);
	return rc;
}

/* The ranks of m's only mesh, in mesh order (*nranks of them; dt_free
 * them). */
static int32_t *mesh_ranks(const struct dt_module *m, int64_t *nranks)
{
	const struct dt_mesh *mesh = &m->meshes.data[0];
	*nranks = mesh->size;
	int32_t *ranks = dt_calloc((size_t)*nranks, sizeof *ranks);
	for (int64_t i = 0; i < *nranks; i++)
		ranks[i] = dt_mesh_device(mesh, i);
	return ranks;
}

int dt_opt_rank(struct opt_job *job, const char *output)
{
	if (job->popt->pass.memory_budget <= 0 || strcmp(job->input, "-") == 0)
		return dt_exit_code(dt_opt_optimize(job, output));
	struct dt_module *m;
	int rc = dt_opt_load(job->input, false, job->diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	if (m->view != DT_VIEW_GLOBAL || m->meshes.len != 1) {
		dt_module_destroy(m);
		return dt_exit_code(dt_opt_optimize(job, output));
	}
	int64_t nranks;
	int32_t *ranks = mesh_ranks(m, &nranks);
	dt_module_destroy(m);
	int32_t rank = job->popt->pass.rank;
	struct every_rank every = {.differs = -1};
	job->every_rank = &every;
	job->popt->pass.problem_cache = dt_shard_problem_cache_create();
	rc = settle_every_rank(job, ranks, nranks);
	job->popt->pass.rank = rank;
	if (rc == DT_OK)
		rc = dt_opt_optimize(job, output);
	if (every.differs >= 0)
		dt_diag_report(job->diag, DT_ERROR, job->input, 0, NULL,
			       "rank %d's program declares or issues other groups or collectives than rank %d's: not written",
			       every.differs, every.first_rank);
	dt_shard_problem_cache_destroy(job->popt->pass.problem_cache);
	job->popt->pass.problem_cache = NULL;
	job->every_rank = NULL;
	dt_free(ranks);
	return dt_exit_code(rc);
}

int dt_opt_per_rank(struct opt_job *job, const char *output,
		    const char *rank_at)
{
	struct dt_module *m;
	int rc = dt_opt_load(job->input, false, job->diag, &m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	if (m->meshes.len != 1) {
		unsigned n = m->meshes.len;
		dt_module_destroy(m);
		return dt_usage_error("opt", "an output path with {rank} lowers "
				      "for each rank of the graph's mesh, but "
				      "it has %u meshes", n);
	}
	int64_t nranks;
	int32_t *ranks = mesh_ranks(m, &nranks);
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
		without_memory_passes(job, &every);
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
