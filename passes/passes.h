// SPDX-License-Identifier: MIT
/* passes.h: the pass interface, the registry of passes, and the pass
 * manager that runs textual pipelines ("verify,shape-infer,dce") with
 * dump-after, verify-each and timing switches. */
#ifndef DTOPT_PASSES_H
#define DTOPT_PASSES_H

#include "ir.h"

#include <stdio.h>

/* Properties of a module that passes establish, require and preserve. */
enum dt_property {
	DT_PROP_VERIFIED = 1 << 0, /* dt_verify passed */
	DT_PROP_SHAPES = 1 << 1,   /* every value's metadata inferred and checked */
};

/* --opt-bisect-limit, as LLVM's: the optional rewrites (each fusion of
 * fuse-collectives, each view chain cancel-views removes, each node or
 * wait+collective dce removes) are numbered from 1 across the pipeline in
 * the order the passes consider them; those past `limit` are skipped.
 * Each is printed to `out` (stderr if NULL) as
 *   BISECT: running rewrite (N) PASS: WHAT
 *   BISECT: NOT running rewrite (N) PASS: WHAT
 * so the first N that breaks a graph can be found by bisection. */
struct dt_bisect {
	int64_t limit; /* the last rewrite that runs (0: none) */
	int64_t count; /* rewrites considered so far */
	FILE *out;
};

/* Options a pass may read (set from the command line). */
struct dt_pass_options {
	bool create_groups; /* passes may declare missing flattened groups */
	/* lower-redistribute's plans: enum dt_redist_mode (redistribute.h),
	 * 0 = DTensor's, 1 = min-memory (--redistribute=). */
	uint8_t redistribute;
	bool force_fusion;  /* fuse even where the cost model says slower */
	/* The cost model's machine: the module's <topology> (or defaults)
	 * with command-line overrides; NULL = the module's. */
	const struct dt_topology *topology;
	/* The rank lower-redistribute lowers for (its graph gets rank="R"),
	 * or -1: one SPMD graph for every rank. Zeroed options mean rank 0,
	 * so callers that lower set it. */
	int rank;
	/* shard-prop's search: enum dt_shard_search (sharding.h), 0 = the
	 * whole-graph solver (the default), 1 = the priority queue node by
	 * node (--search=greedy), 2 = exhaustive enumeration node by node. */
	uint8_t shard_search;
	/* The whole-graph search: the per-rank memory budget in bytes (0 =
	 * none) and the solver's time budget in seconds (0 = its default).
	 * search_budget, when > 0, is the search's usage limit instead (opt's
	 * replan: the passes after it keep memory_budget). */
	int64_t memory_budget, search_budget;
	/* The whole-graph search prices every graph input's move as lowered
	 * without buckets: each pays its collectives' latencies (opt's
	 * replan, where bucket-collectives could not merge all the gathers
	 * of parameters the search priced as one: a merged gather holds
	 * every member from the first member's read on). */
	bool search_inputs_unbucketed;
	double solve_timeout;
	/* Where shard-prop writes the whole-graph problem it builds, as the
	 * IOPDDL contest's JSON (any search); NULL = nowhere. */
	FILE *problem_out;
	/* --expert-pins: a file of an expert's placements per node, the
	 * whole-graph search reports where they went (shard_prop_expert.c);
	 * NULL = none. */
	const char *expert_pins;
	/* bucket-collectives: the most bytes one merged collective moves
	 * (the cost model's bytes); 0 = 25 MiB, DDP's default. */
	int64_t bucket_bytes;
	/* schedule-collectives: the most bytes that starting collectives
	 * early and waiting late may keep alive beyond the written order;
	 * 0 = 64 MiB. */
	int64_t overlap_bytes;
	struct dt_bisect *bisect; /* NULL: every rewrite runs, unprinted */
	/* When set, bucket-collectives stores there the most bytes a merge it
	 * left undone to keep --memory-budget would have held beyond the
	 * bound (0: none was left undone): the room the buckets lacked, which
	 * opt's replan gives them (tools/opt_replan.c). */
	double *bucket_room;
	/* When set, shard-prop's whole-graph search stores there the peak
	 * of the plan it takes, as its liveness estimate prices it (bytes
	 * per rank; the `peak` of remark shard-prop:global); untouched where
	 * it takes none. A usage limit at or above it keeps that plan
	 * within the limit, so opt's replan steps down from it. */
	int64_t *search_peak;
	/* Whole-graph problems shared by pipeline runs on copies of one
	 * module (dt_shard_problem_cache); NULL: each run builds its own. */
	struct dt_shard_problem_cache *problem_cache;
};

struct dt_pass_timings;
struct dt_pass_ctx {
	struct dt_module *m;
	struct dt_diag *diag;
	struct dt_arena *scratch; /* reset after each pass */
	const struct dt_pass_options *options;
	struct dt_pass_timings *timings; /* NULL: none kept */
};

/* Record that `phase` (a string that outlives the pipeline run) of the
 * running pass took `seconds`: --time-passes prints it under the pass
 * (shard-prop: the whole-graph problem's build and solve). */
void dt_pass_phase_time(struct dt_pass_ctx *ctx, const char *phase,
			double seconds);

struct dt_pass {
	const char *name;     /* as in pipelines, e.g. "shape-infer" */
	const char *help;     /* one line for --list-passes */
	uint32_t requires;    /* properties established first (by their pass) */
	uint32_t establishes; /* properties true after a successful run */
	uint32_t preserves;   /* other properties that stay true */
	/* Returns DT_OK, or DT_EINPUT after reporting through ctx->diag. */
	int (*run)(struct dt_pass_ctx *ctx);
};

extern const struct dt_pass dt_pass_verify;
extern const struct dt_pass dt_pass_shape_infer;
extern const struct dt_pass dt_pass_shard_prop;
extern const struct dt_pass dt_pass_lower_redistribute;
extern const struct dt_pass dt_pass_dce;
extern const struct dt_pass dt_pass_cancel_views;
extern const struct dt_pass dt_pass_fuse_collectives;
extern const struct dt_pass dt_pass_bucket_collectives;
extern const struct dt_pass dt_pass_schedule_collectives;

/* Whether `list` ("all", or pass names separated by commas) names pass
 * `name`. */
bool dt_pass_listed(const char *list, const char *name);
/* The first item of comma-separated `list` that names no registered pass
 * (and is not "all"), copied into buf; false when every item is known. */
bool dt_pass_list_unknown(const char *list, char *buf, size_t size);

/* Whether an optional rewrite of pass `pass` described by `fmt` may run:
 * always without --opt-bisect-limit, else numbered, printed and checked
 * against the limit (struct dt_bisect). A pass calls it once per rewrite
 * it is about to make and skips the rewrite when it returns false. */
bool dt_pass_rewrite_ok(const struct dt_pass_ctx *ctx, const char *pass,
			const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The registered pass named `name`, or NULL. */
const struct dt_pass *dt_pass_find(const char *name);
/* Print every pass with its help line. */
void dt_pass_list(FILE *out);

#define DT_MAX_PIPELINE 64

struct dt_pipeline {
	const struct dt_pass *passes[DT_MAX_PIPELINE];
	int npasses;
};
/* Parse "a,b,c". Reports an unknown pass name (listing the known ones) and
 * returns DT_EUSAGE. */
int dt_pipeline_parse(struct dt_pipeline *p, const char *text,
		      struct dt_diag *d);
/* The default pipeline for the module's view. */
const char *dt_default_pipeline(const struct dt_module *m);

/* A set of passes the pass manager picks prerequisites from. */
struct dt_pass_registry {
	const struct dt_pass *const *passes;
	int npasses;
};
/* How deep prerequisites may nest (a pass requiring what a pass requiring
 * what … establishes): deeper is an error, never a pass run without them. */
#define DT_MAX_PREREQ_DEPTH 8

struct dt_pipeline_options {
	/* Passes to print the text dump after: "a,b" or "all"; NULL = none
	 * (dt_pass_listed). */
	const char *dump_after;
	FILE *dump_out;         /* where dumps go (stderr if NULL) */
	/* Called after every pass that succeeds (prerequisites included),
	 * after any dump_after print; for dumps to files. */
	void (*after_pass)(void *ud, const struct dt_module *m,
			   const struct dt_pass *pass);
	void *after_pass_ud;
	bool verify_each;       /* run dt_verify after every pass */
	bool time_passes;       /* print a timing table to time_out */
	FILE *time_out;
	/* Where prerequisites come from; NULL = the registered passes. */
	const struct dt_pass_registry *registry;
	struct dt_pass_options pass;
};

/* Run the pipeline on `m`: before each pass, the passes establishing its
 * missing required properties run first (the set after a pass: what it
 * establishes and, of what held before, what it preserves). Stops at the
 * first failing pass; returns its status (DT_EUSAGE, reported, when
 * prerequisites cannot be met: a required property no pass establishes,
 * prerequisites nested deeper than DT_MAX_PREREQ_DEPTH or undoing each
 * other). */
int dt_pipeline_run(struct dt_module *m, const struct dt_pipeline *p,
		    const struct dt_pipeline_options *opt, struct dt_diag *d);

/* ------------------------------------------------------------------ */
/* shard-prop, observed (the pass is passes/shard_prop.c; its parts are
 * sharding/). */

/* What shard-prop saw at one node (for `dtopt explain`). */
struct dt_shard_watch {
	uint32_t node;        /* in: the call node to watch */
	bool seen;            /* out: the pass weighed its strategies */
	int mesh;             /* the mesh of its inputs */
	bool pinned;          /* it carried a <sharding> before the pass */
	struct dt_placements pin;
	DT_VEC(uint32_t) values;              /* per input: the value read */
	DT_VEC(struct dt_placements) current; /* per input: its placements */
};
void dt_shard_watch_fini(struct dt_shard_watch *w);

/* Run shard-prop (as the pass does, ctx->options giving the search mode
 * and topology) and, when `watch` is not NULL, record what the node it
 * names saw before its inputs moved. Returns the pass's status. */
int dt_shard_prop(struct dt_pass_ctx *ctx, struct dt_shard_watch *watch);

struct dt_shard_problem;
struct dt_shard_problem_options;
/* Whether `pr` was built whole; if not (too many edge matrix entries, or a
 * node with too many strategies to enumerate), reports why at severity
 * `sev` (tag shard-prop:too-large), the message ending with `then` (what
 * happens instead). */
bool dt_shard_global_built(struct dt_pass_ctx *ctx,
			   const struct dt_shard_problem *pr,
			   enum dt_severity sev, const char *then);
/* Build the whole-graph problem of ctx->m into `pr` (zeroed) with options
 * `po`, timed as the pass's phase "whole-graph problem build". Returns a
 * dt_status. */
int dt_shard_global_build(struct dt_pass_ctx *ctx, struct dt_shard_problem *pr,
			  const struct dt_shard_problem_options *po);

/* Whole-graph problems shared by the pipeline runs of opt's replan, which
 * plans clones of its input again under other usage limits, and of its
 * ranks (tools/opt_ranks.c), which all plan one graph: a problem
 * depends on its limit only as its usage_limit, so shard-prop builds one
 * per set of the other options (graph inputs' moves bucketed or not) and
 * the later runs take it with their own limit. A module is told by its
 * counts of nodes, arguments, tensors and shardings at shard-prop: the
 * clones, after the same passes, have the same ones; a second shard-prop
 * in one pipeline, after redistributions went in, does not. */
struct dt_shard_problem_cache;
struct dt_shard_problem_cache *dt_shard_problem_cache_create(void);
void dt_shard_problem_cache_destroy(struct dt_shard_problem_cache *c);
/* One problem a dt_shard_problem_cache holds, with the plans found for
 * it (one per usage limit). */
struct dt_shard_cached;
/* The whole-graph problem of ctx->m with options `po` into `pr` (zeroed):
 * a copy of the one ctx->options->problem_cache holds for them (its usage
 * limit po->budget, its remarks repeated), or dt_shard_global_build's,
 * which the cache then keeps when built whole. *cached: the cache's entry
 * whose arrays pr shares (the caller must not fini pr), else NULL.
 * Returns a dt_status. */
int dt_shard_global_problem(struct dt_pass_ctx *ctx,
			    const struct dt_shard_problem_options *po,
			    struct dt_shard_problem *pr,
			    struct dt_shard_cached **cached);
/* Solve `pr` for shard-prop's --search=global (shard_prop_global.c):
 * `strategy` gets one entry per problem node and *solved is set. With
 * `cached` (pr's cache entry, or NULL), a plan found for pr's usage limit
 * before is taken again (its remarks repeated) and a new one is kept
 * there: every run sharing the problem, each rank of opt -o
 * 'L.{rank}.xml' among them, takes one plan for a limit, even where the
 * search is bounded by wall-clock time. A budget
 * below the smallest footprint and a budget no plan found meets are errors
 * naming them; a solver time-out keeps the best plan with a remark; an
 * edge with no finite move between its ends' strategies (pins the
 * problem's strategies cannot reconcile) or no plan at all without a
 * budget is a warning, *solved false (the caller decides node by node).
 * Returns DT_OK or DT_EINPUT. */
int dt_shard_global_solve(struct dt_pass_ctx *ctx,
			  const struct dt_shard_problem *pr,
			  struct dt_shard_cached *cached, int32_t *strategy,
			  bool *solved);

/* The solver options of --search=global for problem p (its threads,
 * time budget and stopping rules, which depend on whether p has a usage
 * limit). */
struct dt_solve_options;
struct dt_solve_problem;
void dt_shard_global_options(const struct dt_pass_ctx *ctx,
			     const struct dt_solve_problem *p,
			     struct dt_solve_options *so);

/* --expert-pins (shard_prop_expert.c): read FILE's `NODE PLACEMENTS`
 * lines into hint (one entry per node of ctx->m, zeroed by the caller:
 * ndim 0 = none); DT_OK, or DT_EINPUT / DT_EIO after a `FILE:LINE:
 * error:`. Then, after the plan (cost plan_cost) is found, remark where
 * each hint went in pr (built with them) and what the best plan keeping
 * the kept ones costs: a remark per node the problem lost, and one
 * summary (tag shard-prop:expert). */
int dt_shard_expert_read(struct dt_pass_ctx *ctx, const char *path,
			 struct dt_placements *hint);
void dt_shard_expert_report(struct dt_pass_ctx *ctx,
			    const struct dt_shard_problem *pr,
			    const struct dt_placements *hint,
			    int64_t plan_cost);

/* Monotonic seconds, for timing. */
double dt_now(void);

#endif
