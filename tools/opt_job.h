// SPDX-License-Identifier: MIT
/* opt_job.h: `dtopt opt` in rooms: its command line (cmd_graph.c), one
 * run (opt_run.c), its replan (opt_replan.c: planning again under
 * --memory-budget) and its per-rank lowering (opt_ranks.c: one plan and
 * agreeing programs for every rank). Internal to tools/. */
#ifndef DTOPT_OPT_JOB_H
#define DTOPT_OPT_JOB_H

#include "cli.h"
#include "opt_fit_limit.h"
#include "opt_output.h"
#include "passes.h"

/* The form of --remarks and --report: absent, text or json. */
enum output_form { FORM_NONE, FORM_TEXT, FORM_JSON };

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
	size_t max_peak;  /* the most any rank's program holds (with a
			     budget) */
	int64_t estimate; /* the search's estimate of the peak of the plan
			     every rank takes (search_peak; 0: none) */
	double room;      /* the most room any rank's buckets lacked
			     (bucket_room) */
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

/* opt_run.c: read `path` (allow_unknown: ops outside the table load as
 * unknown). */
int dt_opt_load(const char *path, bool allow_unknown, struct dt_diag *d,
		struct dt_module **m);
/* Load the input, run the pipeline (for rank popt->pass.rank), print the
 * report and timing, write `output` (NULL: nowhere). Returns a
 * dt_status. */
int dt_opt_optimize(const struct opt_job *job, const char *output);
/* opt_replan.c: plan the program `m` lowered from global-view `input`
 * again where it does not fit --memory-budget or where its buckets lacked
 * `room` bytes (the search estimated its plan's peak at `estimate`, 0:
 * unknown), keeping the fitting program of least modelled communication
 * time in m (remark opt:replan) and its settings in *kept (left as they
 * are where the first program stays). */
void dt_opt_replan(const struct opt_job *job, const struct dt_pipeline *pipeline,
		   struct dt_module *m, const struct dt_module *input,
		   double room, int64_t estimate, struct search_settings *kept);
/* opt_run.c: the warning that the program for every rank cannot be lowered, so each
 * rank plans alone under --memory-budget. */
void dt_opt_warn_plans_alone(struct dt_diag *d, const char *file);
/* opt_ranks.c: --rank R, rank R's program (popt->pass.rank) to `output`. Under
 * --memory-budget (from a file, one mesh) it is the program of R that
 * dt_opt_per_rank writes: every rank is settled quietly first, so ranks
 * lowering for themselves in separate runs agree. Returns an exit
 * code. */
int dt_opt_rank(struct opt_job *job, const char *output);
/* opt_ranks.c: an output path with {rank} (at rank_at), every rank's program. Returns
 * an exit code. */
int dt_opt_per_rank(struct opt_job *job, const char *output,
		    const char *rank_at);

#endif
