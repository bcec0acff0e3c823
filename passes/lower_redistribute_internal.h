// SPDX-License-Identifier: MIT
/* lower_redistribute_internal.h: what the files of the
 * `lower-redistribute` pass share (lower_redistribute.c walks the graph
 * and lowers compute nodes; lower_redistribute_inputs.c placeholders and
 * constants; lower_redistribute_plan.c plans one dtensor.redistribute and
 * lower_redistribute_steps.c turns its steps into collectives and local
 * ops; _padding.c, _pieces.c and _rules.c their parts). Nothing else uses
 * it. */
#ifndef DTOPT_LOWER_REDISTRIBUTE_INTERNAL_H
#define DTOPT_LOWER_REDISTRIBUTE_INTERNAL_H

#include "passes.h"
#include "redistribute.h"

/* The state of one run of the pass. Old ids are the nodes that existed
 * before the pass; the arrays are indexed by them. */
struct dt_lower {
	struct dt_pass_ctx *ctx;
	struct dt_module *m;
	int rank;                    /* the rank lowered for; -1: SPMD */
	const struct dt_topology *topo;
	uint32_t nold;               /* nodes.len when the pass started */
	uint32_t *local;             /* old id -> node holding its local value */
	uint32_t *shard;             /* old id -> its sharding (index in
					m->shardings: mesh, placements and
					global shape) */
	int16_t (*dim_group)[DT_MAX_MESH_DIMS]; /* per mesh and dim: its
						   group, -1 = not looked up */
	struct dt_redist_warned warned; /* merge warnings, once per module */
	/* The getitems of each multi-result node (old ids), a list threaded
	 * through next_getitem; 0 ends a list. A pinned one gives result k's
	 * placements when they differ from result 0's (layer norm backward:
	 * S(0) grad_input, P(sum) grad_weight); a result no getitem selects
	 * is read by nobody, so its local shape is not checked. */
	uint32_t *first_getitem, *next_getitem;
	/* Old id -> the global metadata of input 0 of an as_strided or
	 * _reshape_alias that is not a reshape of values (lowered only where
	 * its input keeps that layout). */
	struct dt_tensor *strided_input;
	/* SPMD: a view (old id) that leaves the rank's rows of output dim
	 * `dim` in `count` padded pieces, for dt_lower_pack_pieces; view 0:
	 * none. */
	struct dt_lower_pieces {
		uint32_t view;
		int dim;
		int64_t count;
	} pieces;
	/* Where emitted nodes go: before node `before`, named after `base`,
	 * with the source line `line`. */
	uint32_t before;
	const char *base;
	uint32_t line;
	dt_str target[DT_NOPS];      /* interned targets of emitted ops */
};

/* Mesh coordinates of the rank lowered for (mesh position 0 in SPMD
 * mode); reports at node `at` and returns false when the rank is not in
 * mesh `mesh`. */
bool dt_lower_coords(struct dt_lower *l, const struct dt_node *at, int mesh,
		     int64_t *coord);
/* The local shape of a value of global shape g[0..rank) under pl: this
 * rank's shard, or in SPMD mode the largest shard of any rank (semantics
 * §7). */
void dt_lower_local_shape(const struct dt_lower *l, int mesh,
			  const struct dt_placements *pl, const int64_t *g,
			  int rank, int64_t *out);
/* Append a sharding (mesh, placements, global shape) to the module;
 * returns its index. */
uint32_t dt_lower_add_sharding(struct dt_lower *l, int mesh,
			       const struct dt_placements *pl,
			       const int64_t *g, int rank);
/* The group of the single mesh dim `dim` (found by layout, declared with
 * the dim's name when missing); returns its index. */
int dt_lower_dim_group(struct dt_lower *l, int mesh, int dim);

/* Copy the name of node `id` into buf (truncated to size - 1 bytes): a
 * pointer into the module's strings moves when a string is interned. */
void dt_lower_copy_name(const struct dt_module *m, uint32_t id, char *buf,
			size_t size);

/* Replicated on every mesh dim of `me` that has more than one rank. */
bool dt_lower_replicated(const struct dt_mesh *me,
			 const struct dt_placements *pl);

/* Graph inputs (lower_redistribute_inputs.c). Before the pass numbers the
 * old nodes: each constant pinned to a Partial placement (and with rank
 * -1, each sharded one) becomes its replicated self and a
 * dtensor.redistribute to its pin. */
void dt_lower_split_constants(struct dt_module *m, int rank);
/* Lower placeholder `id` to its local shape (and strides) under its
 * <sharding>; DT_OK or DT_EINPUT after a report. */
int dt_lower_placeholder(struct dt_lower *l, uint32_t id);
/* Lower constant `id` as a placeholder (replicated on the first mesh
 * without a pin); a sharded one keeps this rank's slice of its data.
 * DT_OK or DT_EINPUT after a report. */
int dt_lower_constant(struct dt_lower *l, uint32_t id);

/* A call of `op` before l->before, named after l->base, with its
 * metadata inferred; 0 after a report. */
uint32_t dt_lower_emit(struct dt_lower *l, enum dt_op op, const char *suffix,
		       const struct dt_arg *args, uint32_t nargs);
/* dt.local_shard (dim < 0: x under a, result under b, `fill` in the
 * padding) or dt.pack_blocks / dt.unpack_blocks (coarse a, fine b, tensor
 * dim `dim`; fill 0) of x, a value of global shape g[0..rank) on mesh
 * `mesh`; 0 after a report. */
uint32_t dt_lower_emit_spmd(struct dt_lower *l, enum dt_op op, int mesh,
			    uint32_t x, const struct dt_placements *a,
			    const struct dt_placements *b, const int64_t *g,
			    int rank, int dim, double fill);
/* dt.all_permute of x, a value of global shape g[0..rank) on mesh `mesh`,
 * from placements a to b: position i of module group `group` sends its
 * shard to position perm[i] (n entries); with perm NULL dt.all_to_all_v
 * instead. 0 after a report. */
uint32_t dt_lower_emit_move(struct dt_lower *l, int mesh, uint32_t x,
			    const struct dt_placements *a,
			    const struct dt_placements *b, const int64_t *g,
			    int rank, const int64_t *perm, int64_t n, int group);
/* How an op of an SPMD program reads an input padded in some dims
 * (lower_redistribute_padding.c, semantics §7). */
enum dt_pad_use {
	DT_PAD_CONFINED, /* padding stays in padding */
	DT_PAD_MASKED,   /* reduced over a padded dim: fill the padding with
			    the reduction's identity first */
	DT_PAD_REFUSED,  /* would read padding into valid results */
	DT_PAD_VIEWED,   /* a view that does not keep the padded dims whole:
			    dt_lower_view_pieces decides */
	DT_PAD_PACK,     /* a view leaving the rank's rows in padded pieces:
			    dt.pack_pieces after it */
	DT_PAD_UNPACK,   /* a view wanting them: dt.unpack_pieces before it */
};
/* Bit d set for each tensor dim of a value of global shape g[0..rank)
 * under pl on mesh me that holds padding on some rank (its local size
 * exceeds that rank's shard). */
unsigned dt_lower_padded_bits(const struct dt_mesh *me,
			      const struct dt_placements *pl, const int64_t *g,
			      int rank);
/* How view node n (view, _unsafe_view or reshape; its placements pl on
 * mesh `mesh`, its global metadata still on it) reads its padded input x
 * (lower_redistribute_pieces.c): DT_PAD_CONFINED, DT_PAD_REFUSED, or
 * DT_PAD_PACK / DT_PAD_UNPACK of `*pieces` pieces of tensor dim `*dim`
 * of its result / its input. */
enum dt_pad_use dt_lower_view_pieces(const struct dt_module *m,
				     const struct dt_node *n, uint32_t x,
				     int mesh, const struct dt_placements *pl,
				     int *dim, int64_t *pieces);
/* dt.pack_pieces (op) or dt.unpack_pieces of x, a value of global shape
 * g[0..rank) under pl on mesh `mesh` whose dim `dim` holds `pieces`
 * pieces; 0 after a report. */
uint32_t dt_lower_emit_pieces(struct dt_lower *l, enum dt_op op, int mesh,
			      uint32_t x, const struct dt_placements *pl,
			      const int64_t *g, int rank, int dim,
			      int64_t pieces);
/* In SPMD mode, make node `id` (args remapped, global metadata; its
 * placements pl on mesh `mesh`) safe on padded inputs
 * (lower_redistribute_padding.c): zero the padding of inputs an op sums
 * over, unpack the pieces a view splits, note in l->pieces a view whose
 * result dt_lower_pack_pieces must pack, refuse ops that would read
 * padding into valid results. DT_OK or DT_EINPUT after a report. */
int dt_lower_padding(struct dt_lower *l, uint32_t id, int mesh,
		     const struct dt_placements *pl);
/* After node `id` is lowered (local metadata, sharding set): when
 * l->pieces names it (lower_redistribute_pieces.c), pack its rows after it into a new node that holds
 * its local value (l->local) and sharding; `id` keeps no sharding. DT_OK
 * or DT_EINPUT after a report. */
int dt_lower_pack_pieces(struct dt_lower *l, uint32_t id);

/* Emit step `s` of `plan` on value x (mesh coordinates `coord` of the
 * rank lowered for); returns the node of its result (x itself for a
 * partition that keeps the value), or 0 after a report
 * (lower_redistribute_steps.c). */
uint32_t dt_lower_emit_step(struct dt_lower *l,
			    const struct dt_redist_plan *plan,
			    const struct dt_redist_step *s, int mesh,
			    const int64_t *coord, uint32_t x);
/* Shape of result 0 of node `id` into shape; returns its rank. */
int dt_lower_shape_of(const struct dt_module *m, uint32_t id, int64_t *shape);

/* Lower dtensor.redistribute node `id` (an old id, not yet remapped):
 * plan, merge, emit the steps before it, record its local value and
 * sharding, and unlink it. DT_OK or DT_EINPUT after a report. */
int dt_lower_redistribute(struct dt_lower *l, uint32_t id);

/* The placements of each result of node `id`: result 0's are `pl` (the
 * node's own), result k's those of a pinned getitem selecting k, else
 * `pl`. selected[k]: result k is read (result 0 always counts as read). */
void dt_lower_result_placements(const struct dt_lower *l, uint32_t id,
				const struct dt_placements *pl, uint32_t nres,
				struct dt_placements *out, bool *selected);

/* Before anything is lowered (lower_redistribute_rules.c): check that each
 * call node computes its pinned placements from its inputs' placements by
 * a strategy of its op's rules (semantics §6; an op without rules only
 * replicated), so that a pin no rule allows (softmax over its sharded dim,
 * a mean over an uneven shard pinned P(avg)) is refused, not lowered into
 * a program that computes something else. Reports the first such node and
 * returns DT_EINPUT. */
int dt_lower_check_rules(struct dt_lower *l);

#endif
