// SPDX-License-Identifier: MIT
/* passes.h: the pass interface, the registry of passes, and the pass
 * manager that runs textual pipelines ("verify,shape-infer,dce") with
 * dump-after, verify-each and timing switches. */
#ifndef DTOPT_PASSES_H
#define DTOPT_PASSES_H

#include "ir.h"

/* Properties of a module that passes establish, require and preserve. */
enum dt_property {
	DT_PROP_VERIFIED = 1 << 0, /* dt_verify passed */
	DT_PROP_SHAPES = 1 << 1,   /* every value's metadata inferred and checked */
};

/* Options a pass may read (set from the command line). */
struct dt_pass_options {
	bool create_groups; /* passes may declare missing flattened groups */
	bool force_fusion;  /* fuse even where the cost model says slower */
	/* The cost model's machine: the module's <topology> (or defaults)
	 * with command-line overrides; NULL = the module's. */
	const struct dt_topology *topology;
	/* The rank lower-redistribute lowers for (its graph gets rank="R"),
	 * or -1: one SPMD graph for every rank. Zeroed options mean rank 0,
	 * so callers that lower set it. */
	int rank;
	/* shard-prop's search: enum dt_shard_search (sharding.h), 0 = the
	 * priority queue, 1 = exhaustive enumeration. */
	uint8_t shard_search;
	/* bucket-collectives: the most bytes one merged collective moves
	 * (the cost model's bytes); 0 = 25 MiB, DDP's default. */
	int64_t bucket_bytes;
	/* schedule-collectives: the most bytes that starting collectives
	 * early and waiting late may keep alive beyond the written order;
	 * 0 = 64 MiB. */
	int64_t overlap_bytes;
};

struct dt_pass_ctx {
	struct dt_module *m;
	struct dt_diag *diag;
	struct dt_arena *scratch; /* reset after each pass */
	const struct dt_pass_options *options;
};

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

struct dt_pipeline_options {
	const char *dump_after; /* pass name or "all"; NULL = none */
	FILE *dump_out;         /* where dumps go (stderr if NULL) */
	bool verify_each;       /* run dt_verify after every pass */
	bool time_passes;       /* print a timing table to time_out */
	FILE *time_out;
	struct dt_pass_options pass;
};

/* Run the pipeline on `m`: before each pass, the passes establishing its
 * missing required properties run first. Stops at the first failing pass;
 * returns its status. */
int dt_pipeline_run(struct dt_module *m, const struct dt_pipeline *p,
		    const struct dt_pipeline_options *opt, struct dt_diag *d);

/* Monotonic seconds, for timing. */
double dt_now(void);

#endif
