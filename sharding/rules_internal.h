// SPDX-License-Identifier: MIT
/* sharding/rules_internal.h: what the rule generators' files share
 * (sharding/rules.c: the table, filling a node, the element-wise,
 * reduction and matrix families; sharding/rules_dims.c: the families that
 * move dims and the neural-network ops). Nothing else uses it. */
#ifndef DTOPT_SHARDING_RULES_INTERNAL_H
#define DTOPT_SHARDING_RULES_INTERNAL_H

#include "sharding.h"

/* The VARIANT column of sharding/rules.def: which partials pass. */
enum dt_rule_variant {
	DT_VARIANT_NONE,
	DT_VARIANT_LINEAR, DT_VARIANT_MUL, DT_VARIANT_DIV, DT_VARIANT_SHIFT,
	DT_VARIANT_AFFINE, DT_VARIANT_SCALE, DT_VARIANT_COPY, DT_VARIANT_NEG,
	DT_VARIANT_MONOTONE, DT_VARIANT_MAXMIN, DT_VARIANT_WHERE,
	DT_VARIANT_MASKED_FILL, DT_VARIANT_ADDC, DT_VARIANT_GRAD,
	DT_VARIANT_SUM, DT_VARIANT_MEAN, DT_VARIANT_AMAX, DT_VARIANT_AMIN,
	DT_VARIANT_KEEP,
	DT_VARIANT_MM, DT_VARIANT_BMM, DT_VARIANT_ADDMM, DT_VARIANT_BADDBMM,
};

/* Reduce-op sets, as bit masks of enum dt_reduce_op. */
#define DT_OPS_SUM_AVG ((1u << DT_REDUCE_SUM) | (1u << DT_REDUCE_AVG))
#define DT_OPS_MAX_MIN ((1u << DT_REDUCE_MAX) | (1u << DT_REDUCE_MIN))
#define DT_OPS_ALL (DT_OPS_SUM_AVG | DT_OPS_MAX_MIN)
#define DT_OPS_AVG_MAX_MIN ((1u << DT_REDUCE_AVG) | DT_OPS_MAX_MIN)
/* Every input, as the mask of dt_rule_partial_rows. */
#define DT_ALL_INPUTS (~0ull)

/* One node being filled. */
struct dt_rule_fill {
	const struct dt_module *m;
	const struct dt_node *n;
	struct dt_bound_args args;
	struct dt_rules *r;
	int param_input[DT_MAX_PARAMS]; /* first input of a parameter, -1 */
	uint32_t width;                 /* nout + nin */
};

/* Output k's and input i's tensors. */
const struct dt_rule_tensor *dt_rule_out(const struct dt_rule_fill *f, uint32_t k);
const struct dt_rule_tensor *dt_rule_in(const struct dt_rule_fill *f, uint32_t i);
/* The entries S*(d) and P(op). */
struct dt_rule_entry dt_rule_shard(int d);
struct dt_rule_entry dt_rule_partial(int op);
/* The entry _S(d,split), S(d) when split is 1 (a fixed kind). */
struct dt_rule_entry dt_rule_strided(int d, int64_t split);
/* A new row, every entry R; the pointer is valid until the next row. */
struct dt_rule_entry *dt_rule_row_add(struct dt_rule_fill *f, uint8_t flags);
/* Drop the row just added. */
void dt_rule_row_drop(struct dt_rule_fill *f);
/* Input i's entry of row e. */
struct dt_rule_entry *dt_rule_in_entry(struct dt_rule_fill *f, struct dt_rule_entry *e,
				       uint32_t i);
/* The input bound to parameter `name`, or -1 (absent, none, a number). */
int dt_rule_input_of(const struct dt_rule_fill *f, const char *name);
/* Arguments by parameter name, `dflt` when absent; dt_rule_arg_ints
 * returns the count (a single int counts as one), -1 when absent. */
int64_t dt_rule_arg_int(const struct dt_rule_fill *f, const char *name, int64_t dflt);
bool dt_rule_arg_bool(const struct dt_rule_fill *f, const char *name, bool dflt);
double dt_rule_arg_number(const struct dt_rule_fill *f, const char *name, double dflt);
int dt_rule_arg_ints(const struct dt_rule_fill *f, const char *name, int64_t *v, int cap);
/* PyTorch's maybe_wrap_dim (rank 0 behaves as rank 1); -1 if out of range. */
int dt_rule_wrap_dim(int64_t d, int rank);
/* One row per op in `ops`: every output P(op), the inputs in `mask` (a bit
 * per input among the first 64, or DT_ALL_INPUTS) P(op), the others R. */
void dt_rule_partial_rows(struct dt_rule_fill *f, unsigned ops, uint64_t mask);
/* Partial rows through every output from input 0 alone. */
void dt_rule_partial_through_first(struct dt_rule_fill *f, unsigned ops);
/* A row sharding every output on out_dim and input 0 on in_dim. */
void dt_rule_shard_row(struct dt_rule_fill *f, int out_dim, int in_dim, uint8_t flags);
/* Input i's dim aligned (right-aligned broadcasting) with output 0's dim
 * d and not broadcast there, or -1. */
int dt_rule_aligned_dim(const struct dt_rule_fill *f, uint32_t i, int d);

/* The families of sharding/rules_dims.c (see sharding/rules.def). */
void dt_rule_view(struct dt_rule_fill *f);
void dt_rule_permute(struct dt_rule_fill *f);
void dt_rule_expand(struct dt_rule_fill *f);
void dt_rule_dimmap(struct dt_rule_fill *f);
void dt_rule_slice(struct dt_rule_fill *f);
void dt_rule_join(struct dt_rule_fill *f);
void dt_rule_pad(struct dt_rule_fill *f);
void dt_rule_slice_backward(struct dt_rule_fill *f);
void dt_rule_softmax(struct dt_rule_fill *f, enum dt_rule_variant v);
void dt_rule_layer_norm(struct dt_rule_fill *f, enum dt_rule_variant v);
void dt_rule_embedding(struct dt_rule_fill *f, enum dt_rule_variant v);
void dt_rule_nll_loss(struct dt_rule_fill *f, enum dt_rule_variant v);
void dt_rule_like(struct dt_rule_fill *f);
/* The families of sharding/rules_ops.c. */
void dt_rule_triangle(struct dt_rule_fill *f);
void dt_rule_index(struct dt_rule_fill *f);
void dt_rule_mse_loss(struct dt_rule_fill *f, enum dt_rule_variant v);

#endif
