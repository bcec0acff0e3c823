// SPDX-License-Identifier: MIT
/* fuse_internal.h: what fuse-collectives' chain walk and rewrite
 * (fuse_collectives.c) share with its checks and plans (fuse_plan.c). Not
 * installed. */
#ifndef DTOPT_FUSE_INTERNAL_H
#define DTOPT_FUSE_INTERNAL_H

#include "cost_model.h"
#include "passes.h"

#define DT_FUSE_MAX_LINKS DT_MAX_MESH_DIMS /* links in one chain */
#define DT_FUSE_MAX_PATH 16 /* view steps followed between two links */

/* Why a window of links does not fuse (DT_FUSE_MISS_NONE: it does). */
enum dt_fuse_miss {
	DT_FUSE_MISS_NONE,
	DT_FUSE_MISS_MULTI_USER,
	DT_FUSE_MISS_NOT_IDENTITY,
	DT_FUSE_MISS_DTYPE,
	DT_FUSE_MISS_MESH,
	DT_FUSE_MISS_OVERLAP,
	DT_FUSE_MISS_OP,
	DT_FUSE_MISS_UNEVEN,
	DT_FUSE_MISS_NO_GROUP,
	DT_FUSE_MISS_ORDER,
	DT_FUSE_MISS_COST,
};

/* One collective, its wait, and the view steps from the wait to the next
 * link's collective (none for the last link). */
struct dt_fuse_link {
	uint32_t coll, wait;
	uint32_t path[DT_FUSE_MAX_PATH];
	int npath;
	int group;
	int64_t size;
	enum dt_reduce_op op; /* reduce_scatter, all_reduce */
};

/* The pass over one module. */
struct dt_fuse {
	struct dt_pass_ctx *ctx;
	struct dt_module *m;
	const struct dt_topology *topo;
	struct dt_uses uses;
	uint32_t nuses;     /* node count the uses were built for */
	uint8_t *consumed;  /* nodes already part of a chain */
	uint32_t *replaced; /* original last wait -> what now stands for it */
	char why[1024];     /* the reason of the last miss */
};

/* A fusion plan for links [lo, hi). */
struct dt_fuse_plan {
	enum dt_comm_kind kind;
	int mesh;
	uint8_t dims[DT_MAX_MESH_DIMS];
	int ndims;
	int64_t size;
	int group;                 /* -1: to declare (--create-groups) */
	enum dt_reduce_op op;      /* emitted op */
	int64_t avg_divisor;       /* >1: divide after a sum (sum with avg) */
	double chain_us, fused_us;
};

/* The node argument 0 of `id` reads, or 0. */
static inline uint32_t dt_fuse_first_input(const struct dt_module *m,
					   uint32_t id)
{
	const struct dt_node *n = dt_node_get(m, id);
	if (n->nargs == 0 || dt_node_arg(m, n, 0)->kind != DT_ARG_NODE)
		return 0;
	return dt_node_arg(m, n, 0)->v.node;
}

/* How many uses node `id` has. */
static inline uint32_t dt_fuse_nusers(const struct dt_fuse *f, uint32_t id)
{
	return dt_uses_count(&f->uses, id);
}

/* ---- the checks and the plan (fuse_plan.c) ---- */

/* Whether `next` can follow `l` in a chain; on a miss, f->why says why. */
enum dt_fuse_miss dt_fuse_check_link(struct dt_fuse *f,
				     const struct dt_fuse_link *l,
				     const struct dt_fuse_link *next);
/* Plan the fusion of links [lo, hi) into *p, or say why not (f->why). */
enum dt_fuse_miss dt_fuse_plan_window(struct dt_fuse *f,
				      const struct dt_fuse_link *links, int lo,
				      int hi, struct dt_fuse_plan *p);

#endif
