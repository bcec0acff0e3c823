// SPDX-License-Identifier: MIT
/* gen_internal.h: what the two files of the graph builder of `dtopt gen`
 * share: the builder's state and the node emitter (gen_ops.c: each op
 * with its result metadata computed as PyTorch would, and the collective
 * chains), used by the model (gen_graph.c). */
#ifndef DTOPT_GEN_INTERNAL_H
#define DTOPT_GEN_INTERNAL_H

#include "gen.h"

/* The ops the generator emits (gen_ops.c has their FX name bases and
 * targets). */
enum gen_op {
	OP_MM,
	OP_T,
	OP_PERMUTE,
	OP_ADD,
	OP_GELU,
	OP_GELU_BW,
	OP_SOFTMAX,
	OP_SOFTMAX_BW,
	OP_LN,
	OP_LN_BW,
	OP_GETITEM,
	OP_VIEW,
	OP_UNSAFE_VIEW,
	OP_SUM,
	OP_AG,
	OP_RS,
	OP_AR,
	OP_WAIT,
	GEN_NOPS
};

/* ------------------------------------------------------------------ */
/* Builder state (one per build; no globals). */

struct gen {
	struct dt_module *m;
	const struct gen_options *o;
	uint64_t rng;
	uint32_t seed_bits;         /* seed-derived phase of the cycles */
	uint32_t count[GEN_NOPS];   /* FX name counters */
	uint32_t ncollectives;      /* shared number of ag/rs/ar and wait */
	uint32_t nprimals;
	uint32_t nweights;          /* weights so far, for --direction both */
	uint32_t nreductions;       /* reduction chains so far (op cycle) */
	dt_str target[GEN_NOPS];
	dt_str reduce_name[2];      /* "sum", "avg" */
	dt_str dim_group[DT_MAX_MESH_DIMS]; /* single-dim group names */
	DT_VEC(uint64_t) groups;    /* fused groups needed, group_key() */
};

/* ------------------------------------------------------------------ */
/* Values: the metadata of a node's result, read back from the module. */

struct gen_val {
	uint8_t dtype;
	int rank;
	int64_t shape[DT_MAX_RANK];
	int64_t stride[DT_MAX_RANK];
};

enum gen_reduce { GEN_SUM, GEN_AVG };

/* Intern the strings the emitter uses (targets, reduce ops, the
 * single-dim group names) into g->m. */
void gen_intern_names(struct gen *g);

/* Result `i` of node `node`. */
struct gen_val gen_val_get(const struct gen *g, uint32_t node, int i);
/* A contiguous (row-major) value. */
struct gen_val gen_val_contig(uint8_t dtype, const int64_t *shape, int rank);
/* A contiguous 2-D value [a, b]. */
struct gen_val gen_val_2d(uint8_t dtype, int64_t a, int64_t b);
/* Append a node with `nouts` results and return its id. */
uint32_t gen_emit(struct gen *g, enum dt_node_kind kind, dt_str name,
		  dt_str target, const struct dt_arg *args, uint32_t nargs,
		  const struct gen_val *outs, uint32_t nouts,
		  const struct dt_sharding *sharding);
/* A placeholder named FX-style (base, base_1, ...: k) with value v. */
uint32_t gen_emit_placeholder(struct gen *g, const char *base, uint32_t k,
			      const struct gen_val *v,
			      const struct dt_sharding *sharding);

/* ---- Compute ops. Each derives its result metadata from its inputs'. */

/* x.t() (OP_T) or x.permute(1, 0) (OP_PERMUTE) of a 2-D value: a view with
 * shape and strides swapped. */
uint32_t gen_transpose(struct gen *g, enum gen_op op, uint32_t x);
/* a [M,K] @ b [K,N] -> contiguous [M,N]. */
uint32_t gen_mm(struct gen *g, uint32_t a, uint32_t b);
/* a + b, b broadcast over a's leading dims: contiguous, a's shape. */
uint32_t gen_add(struct gen *g, uint32_t a, uint32_t b);
/* An elementwise op of `nin` same-shaped inputs (gelu, gelu_backward):
 * contiguous, shaped like the first. */
uint32_t gen_pointwise(struct gen *g, enum gen_op op, uint32_t x, uint32_t y,
		       int nin);
/* _softmax(x, -1, False). */
uint32_t gen_softmax(struct gen *g, uint32_t x);
/* _softmax_backward_data(grad, out, -1, out.dtype). */
uint32_t gen_softmax_bw(struct gen *g, uint32_t grad, uint32_t out);
/* view / _unsafe_view of a contiguous value to `shape`. */
uint32_t gen_reshape(struct gen *g, enum gen_op op, uint32_t x,
		     const int64_t *shape, int rank);
/* sum.dim_IntList(x, dims[, True]): contiguous, reduced dims removed (or
 * kept as 1). */
uint32_t gen_sum(struct gen *g, uint32_t x, const int64_t *dims, int ndims,
		 bool keepdim);
/* native_layer_norm(x [.., H], [H], w, b, eps) and its three getitems:
 * out[0] = normalized, out[1] = mean, out[2] = rstd ([.., 1]). */
void gen_layer_norm(struct gen *g, uint32_t x, uint32_t w, uint32_t b,
		    uint32_t *out);
/* native_layer_norm_backward(grad, x, [H], mean, rstd, w, b, [T, T, T])
 * and its getitems: out[0] = grad x, out[1] = grad w, out[2] = grad b. */
void gen_layer_norm_bw(struct gen *g, uint32_t grad, uint32_t x,
		       const uint32_t *ln, uint32_t w, uint32_t b,
		       uint32_t *out);
/* linear(x, w) = mm(x, t(w)). */
uint32_t gen_linear(struct gen *g, uint32_t x, uint32_t w);

/* ---- Collectives. Each is followed at once by its wait; both are
 * numbered with one shared counter ("ag_7", "wait_7"). A chain returns
 * its last wait and records the fused group it would fuse onto. */

/* all_gather chain over `order` (gathered first to last); with `permutes`
 * a cancelling permute(1,0) pair sits between consecutive links. The fused
 * group has the dims in reverse order (the last gathered is slowest). */
uint32_t gen_gather_chain(struct gen *g, uint32_t x, const uint8_t *order,
			  int n, bool permutes);
/* reduce_scatter (OP_RS) or all_reduce (OP_AR) chain over `order`. The
 * fused group has the dims in this order (the first scattered is
 * slowest; any order suits all_reduce). */
uint32_t gen_reduce_chain(struct gen *g, enum gen_op op, uint32_t x,
			  const uint8_t *order, int n);

#endif
