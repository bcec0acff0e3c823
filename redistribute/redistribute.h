// SPDX-License-Identifier: MIT
/* redistribute.h: the redistribution planner. For a tensor of a given global
 * shape and dtype on a mesh, plans `src -> dst` placements as the list of
 * per-mesh-dim steps DTensor takes (semantics §3): its greedy plan for
 * default shard orders, its min-cost (Dijkstra) plan when either side has a
 * non-default shard order or a `_S` placement. The steps can then be merged
 * onto declared flattened groups (§4.4). The `lower-redistribute` pass turns
 * steps into collectives and local ops; `dtopt plan` prints them.
 *
 * Typical use (a lowering that knows the module and the mesh index):
 *
 *     struct dt_redist_request req = {.mesh = mesh, .topology = topo, ...};
 *     struct dt_redist_plan plan;
 *     char err[256];
 *     if (dt_redist_plan_init(&plan, &req, err, sizeof err) != DT_OK)
 *             report err, stop;
 *     dt_redist_plan_merge(&plan, &merge_options);  (optional)
 *     for each plan.steps.data[i]: emit it;
 *     dt_redist_plan_fini(&plan);
 */
#ifndef DTOPT_REDISTRIBUTE_H
#define DTOPT_REDISTRIBUTE_H

#include "cost_model.h"
#include "ir.h"

/* What one step does on its mesh dim(s). Collectives run on dim 0 of the
 * local tensor over the step's group; the local work around them follows
 * from the fields of the step (src_dim, dst_dim, even, divisor). */
enum dt_redist_kind {
	DT_REDIST_ALL_GATHER,     /* S(d)->R. d != 0: split the gathered result
				     into group_size chunks on dim 0 and cat
				     them on dim d. Uneven: pad each shard to
				     the chunk size before, narrow after */
	DT_REDIST_ALL_REDUCE,     /* P(op)->R */
	DT_REDIST_REDUCE_SCATTER, /* P(op)->S(d). d != 0: move d to the front
				     first. Uneven: pad dim d to a multiple of
				     group_size first */
	DT_REDIST_ALL_TO_ALL,     /* S(a)->S(b). Uneven: pad as all_gather */
	DT_REDIST_CHUNK,          /* R->S(d), local: chunk dim d, keep own piece */
	DT_REDIST_PARTITION,      /* R->P(op), local: divide by `divisor` */
	DT_REDIST_PERMUTE,        /* dt.all_permute over the whole mesh (ndims
				     = all mesh dims, group -1): every rank
				     sends its whole shard under `before` to
				     the rank that holds the same global block
				     under `after` (dt_redist_permute_map);
				     equal local shapes. Priced as an
				     all_to_all of the local bytes over the
				     mesh (the model has no point-to-point) */
	DT_REDIST_TRANSFER,       /* dt.all_to_all_v over the whole mesh (as
				     PERMUTE): `before` to `after` in one
				     collective, each rank receiving exactly
				     its shard; the min-memory plan when no
				     other stays within 2x. Priced as an
				     all_to_all of the local bytes */
	DT_REDIST_NKINDS
};

/* "all_gather", "all_reduce", "reduce_scatter", "all_to_all", "chunk",
 * "partition", "all_permute", "all_to_all_v". */
const char *dt_redist_kind_name(enum dt_redist_kind kind);
/* The collective of a step kind (enum dt_comm_kind), or -1 for local work. */
int dt_redist_kind_comm(enum dt_redist_kind kind);

/* One step. A plain step changes one mesh dim; a merged step (ndims > 1)
 * does the work of several adjacent plain steps in one collective over a
 * declared flattened group. */
struct dt_redist_step {
	enum dt_redist_kind kind;
	uint8_t ndims;                  /* mesh dims changed: 1, or > 1 merged */
	uint8_t dims[DT_MAX_MESH_DIMS]; /* in the group's rank order, slowest
					   first (merged), else dims[0] */
	int group;                      /* merged: index of the declared group
					   in the module; -1: plain step, whose
					   group is the single mesh dim dims[0] */
	struct dt_placement src, dst;   /* the placement of each changed mesh
					   dim before / after (merged sum with
					   avg: src is P(sum), see divisor) */
	int src_dim, dst_dim;           /* tensor dim sharded on the changed
					   dims before / after; -1 if none */
	enum dt_reduce_op reduce;       /* all_reduce / reduce_scatter's op,
					   the partition's op */
	int64_t divisor;                /* divide the result by this: partition
					   of sum (the dim's size); merged sum
					   with avg (product of the avg dims'
					   sizes); 1 = nothing to divide */
	int64_t group_size;             /* product of the changed dims' sizes;
					   1 means there is nothing to do */
	bool even;                      /* every instance's length of
					   src_dim / dst_dim before the split
					   divides by group_size: no pad or
					   narrow anywhere */
	struct dt_placements before, after; /* all mesh dims, with shard order */
	double bytes;                   /* what the cost model charges (see
					   dt_comm_cost); 0 for local work */
	double cost_us;                 /* modelled time; 0 for local work */
};

enum dt_redist_method {
	DT_REDIST_GREEDY,   /* DTensor's default plan (default shard orders) */
	DT_REDIST_MIN_COST, /* Dijkstra over (placements, shard order) */
	DT_REDIST_MIN_MEMORY, /* the normal form (--redistribute=min-memory) */
};

/* Which plans the planner makes (--redistribute=MODE). */
enum dt_redist_mode {
	DT_REDIST_MODE_DTENSOR,    /* "dtensor": DTensor's plans (default) */
	DT_REDIST_MODE_MIN_MEMORY, /* "min-memory": the plan whose largest
				      shard on any rank between steps is
				      smallest (slice early, gather late,
				      all_to_all and at most
				      DT_REDIST_MAX_PERMUTES all_permutes),
				      cheapest among those; DTensor's plan
				      for partial or _S placements */
	DT_REDIST_MODE_AUTO,       /* "auto": per redistribution the
				      min-memory plan where
				      dt_redist_prefer_min_memory says so,
				      else DTensor's */
};
/* At most this many all_permute steps in a min-memory plan. The paper's
 * normal form (arXiv 2112.01075) needs one, its all-to-all moving any
 * mesh axis; dtopt's all_to_all moves the last mesh dim of a shard order
 * only, and the worked transpose of semantics §3 then needs two. */
#define DT_REDIST_MAX_PERMUTES 2
/* "dtensor", "min-memory" or "auto" into *mode; false for any other
 * text. */
bool dt_redist_mode_parse(const char *text, enum dt_redist_mode *mode);

/* What to plan. `src` and `dst` carry their shard orders (default order if
 * built by dt_placements_parse without one). */
/* Min-cost searches kept between plans: a caller planning many moves of
 * one tensor from one source (the whole-graph problem's edges) continues
 * one Dijkstra search towards each target instead of starting over; the
 * plans are the same. */
struct dt_redist_searches;
struct dt_redist_searches *dt_redist_searches_new(void);
void dt_redist_searches_free(struct dt_redist_searches *cache);

struct dt_redist_request {
	const struct dt_mesh *mesh;
	const struct dt_topology *topology; /* NULL = DTensor's defaults */
	enum dt_dtype dtype;
	int rank;                           /* tensor rank, 0 .. DT_MAX_RANK */
	int64_t shape[DT_MAX_RANK];         /* global shape */
	struct dt_placements src, dst;
	enum dt_redist_mode mode;           /* zero: dtensor */
	struct dt_redist_searches *searches; /* NULL: none kept */
};

struct dt_redist_plan {
	struct dt_mesh mesh;         /* copy of the request's (devices shared) */
	struct dt_topology topology;
	enum dt_dtype dtype;
	int rank;
	int64_t shape[DT_MAX_RANK];
	struct dt_placements src, dst; /* as requested (may hold _S) */
	enum dt_redist_method method;
	DT_VEC(struct dt_redist_step) steps; /* in execution order */
	uint32_t states;             /* states the min-cost search expanded */
};

/* Plan `req`. On success returns DT_OK; `plan` holds the steps in DTensor's
 * order (the last step's `after` equals dst, with a `_S` written as its
 * shard order) and must be released with dt_redist_plan_fini. On an invalid
 * request (placements of the wrong length, shard dims out of range, mixed
 * partial ops other than {sum, avg}, S->P or P(x)->P(y) on a mesh dim, a
 * `_S` that no shard order expresses, a search too large) returns
 * DT_EINPUT with a one-line message in `err` (none when errlen is 0: a
 * caller asking only whether a plan exists), and `plan` needs no fini.
 * Time: greedy O(mesh dims^2); min-cost O(S log S) in the states S
 * reachable at less than the plan's cost. */
int dt_redist_plan_init(struct dt_redist_plan *plan,
			const struct dt_redist_request *req, char *err,
			size_t errlen);
void dt_redist_plan_fini(struct dt_redist_plan *plan);

/* Peak bytes per device: the largest shard any rank holds under src or
 * after any step (uneven: the largest rank's), times the element size.
 * Buffers a collective uses while it runs (its input and output both
 * live, pads) are not counted. */
double dt_redist_plan_peak(const struct dt_redist_plan *plan);
/* Largest bytes any rank holds under placements `pl` of the plan's mesh. */
double dt_redist_local_bytes(const struct dt_redist_plan *plan,
			     const struct dt_placements *pl);
/* Where a DT_REDIST_PERMUTE step sends each shard: dest[p] is the mesh
 * position (row-major) that receives what position p holds, for the
 * plan's mesh->size positions. Ranks holding the same block (replicas)
 * pair in mesh order. */
void dt_redist_permute_map(const struct dt_redist_plan *plan,
			   const struct dt_redist_step *s, int64_t *dest);

/* --redistribute=auto's choice (semantics §3.1): whether min-memory plan
 * mm (of the same request) replaces DTensor's plan `dtensor`: mm is a
 * min-memory plan and costs at most 1.2x dtensor's modelled time, or
 * dtensor peaks above twice max(src, dst) bytes per device. */
bool dt_redist_prefer_min_memory(const struct dt_redist_plan *dtensor,
				 const struct dt_redist_plan *mm);
/* Sum of the steps' modelled times, µs. */
double dt_redist_plan_cost(const struct dt_redist_plan *plan);
/* The launch and hop latencies of step `s` of `plan` (its cost with no
 * bytes, dt_comm_cost) when it is an all_gather, reduce_scatter or
 * all_reduce that does something: what bucket-collectives pays once for
 * every collective of the bucket it merges the step into; 0 otherwise. */
double dt_redist_step_latency(const struct dt_redist_plan *plan,
			      const struct dt_redist_step *s);
/* Number of steps of `kind` that do something (group_size > 1). */
int dt_redist_plan_count(const struct dt_redist_plan *plan,
			 enum dt_redist_kind kind);
/* Number of steps that communicate (group_size > 1). */
int dt_redist_plan_collectives(const struct dt_redist_plan *plan);

/* Local shape, under placements `pl` (of the plan's mesh), of the rank at
 * mesh coordinates `coord`: `plan->rank` lengths into `shape`. */
void dt_redist_local_shape(const struct dt_redist_plan *plan,
			   const struct dt_placements *pl,
			   const int64_t *coord, int64_t *shape);
/* The shape step `s` works on for the rank at `coord`: its `before`
 * placements with the changed dims replicated (DTensor's logical_shape:
 * the gathered shape of an all_gather, the scattered input's of a
 * reduce_scatter; pad to it and narrow from it when !even). */
void dt_redist_step_logical_shape(const struct dt_redist_plan *plan,
				  const struct dt_redist_step *s,
				  const int64_t *coord, int64_t *shape);

/* Merging (semantics §4.4). Warnings already given, one per (mesh, ordered
 * dims, reason); owned by the caller so that a pass warns once per module,
 * not once per redistribution. Start zeroed. */
struct dt_redist_warned {
	DT_VEC(uint64_t) keys;
};
void dt_redist_warned_fini(struct dt_redist_warned *w);

struct dt_redist_merge_options {
	struct dt_module *module; /* declared groups (by layout); with
				     create_groups, missing ones go here */
	int mesh;                 /* the plan's mesh: index in module */
	bool create_groups;       /* declare a missing group (generated) and
				     merge instead of warning */
	struct dt_diag *diag;     /* DT_WARNING per missed merge, tags
				     "redistribute:no_group",
				     "redistribute:order",
				     "redistribute:uneven"; NULL = silent */
	struct dt_redist_warned *warned; /* NULL = warn every time */
	bool price_only;          /* the plan is only priced: declare
				     nothing; a group create_groups would
				     declare merges as if declared (its
				     step's group: the index it would get) */
};

/* Merge runs of adjacent steps as DTensor does: all_gather, all_reduce or
 * reduce_scatter steps with identical (src, dst) placements, or sum/avg
 * partials with equal dst, become one step over the flattened group of
 * their dims when that group is declared. The group's rank order must be
 * the one the run produces: gathers over D1 then D2 need dims (D2 D1)
 * (DTensor's descending gathers: the row-major group), reduce-scatters over
 * D1 then D2 need (D1 D2); any order of a declared group serves an
 * all_reduce (the row-major one preferred). Sum mixed with avg reduces with
 * sum and divides by the product of the avg dims' sizes. Never merged:
 * all_to_all, uneven gathers and scatters, runs with fewer than two dims of
 * size > 1. Steps of size-1 dims are left out of a group's suggested
 * name. Returns the number of merged steps made. */
int dt_redist_plan_merge(struct dt_redist_plan *plan,
			 const struct dt_redist_merge_options *opt);

#endif
