// SPDX-License-Identifier: MIT
/* sharding_rules.c: the generators of the rule families named in
 * sharding_rules.def. Each writes a node's single-mesh-dim rows from its
 * op's variant, its arguments (dims, keepdim, permutation, …) and the
 * global shapes of its tensors; the table itself is data. Semantics §6.
 *
 *   mm(a[8,4], b[4,16]) -> S*(0) <- S*(0), R      S*(1) <- R, S*(1)
 *                          P(sum) <- S*(1), S*(0)  P(sum) <- P(sum), R …
 *
 * Time: O(rows · tensors) per node; rows are O(rank) for every family. */
#include "sharding.h"

#include <stdarg.h>
#include <string.h>

enum family {
#define DT_SHARD_FAMILIES(X)                                               \
	X(POINTWISE, "pointwise") X(REDUCTION, "reduction")                \
	X(MATMUL, "matmul") X(VIEW, "view") X(PERMUTE, "permute")          \
	X(EXPAND, "expand") X(DIMMAP, "dimmap") X(SLICE, "slice")          \
	X(SPLIT, "split") X(JOIN, "join") X(PAD, "pad")                    \
	X(SLICE_BACKWARD, "slice_backward") X(SOFTMAX, "softmax")          \
	X(LAYER_NORM, "layer_norm") X(EMBEDDING, "embedding")              \
	X(NLL_LOSS, "nll_loss") X(LIKE, "like") X(NEW, "new")              \
	X(REPLICATE, "replicate")
#define X(e, n) FAMILY_##e,
	FAMILY_NONE, /* not in the table */
	DT_SHARD_FAMILIES(X)
#undef X
};

static const char *const family_names[] = {
#define X(e, n) [FAMILY_##e] = n,
	DT_SHARD_FAMILIES(X)
#undef X
};

enum variant {
	VARIANT_NONE,
	VARIANT_LINEAR, VARIANT_MUL, VARIANT_DIV, VARIANT_SHIFT,
	VARIANT_AFFINE, VARIANT_SCALE, VARIANT_COPY, VARIANT_NEG,
	VARIANT_MONOTONE, VARIANT_MAXMIN, VARIANT_WHERE, VARIANT_MASKED_FILL,
	VARIANT_ADDC, VARIANT_GRAD,
	VARIANT_SUM, VARIANT_MEAN, VARIANT_AMAX, VARIANT_AMIN, VARIANT_KEEP,
	VARIANT_MM, VARIANT_BMM, VARIANT_ADDMM, VARIANT_BADDBMM,
};

struct rule_spec {
	uint8_t family;  /* enum family */
	uint8_t variant; /* enum variant */
};

static const struct rule_spec table[DT_NOPS] = {
#define DT_SHARD_RULE(op, family, variant)                                 \
	[DT_OP_##op] = {FAMILY_##family, VARIANT_##variant},
#include "sharding_rules.def"
#undef DT_SHARD_RULE
};

/* Reduce-op sets, as bit masks of enum dt_reduce_op. */
#define OPS_SUM_AVG ((1u << DT_REDUCE_SUM) | (1u << DT_REDUCE_AVG))
#define OPS_MAX_MIN ((1u << DT_REDUCE_MAX) | (1u << DT_REDUCE_MIN))
#define OPS_ALL (OPS_SUM_AVG | OPS_MAX_MIN)
#define OPS_AVG_MAX_MIN ((1u << DT_REDUCE_AVG) | OPS_MAX_MIN)

const char *dt_rules_family(enum dt_op op)
{
	if (op <= DT_OP_UNKNOWN || op >= DT_NOPS)
		return NULL;
	uint8_t f = table[op].family;
	return f == FAMILY_NONE ? NULL : family_names[f];
}

/* ------------------------------------------------------------------ */
/* Filling one node. */

struct fill {
	const struct dt_module *m;
	const struct dt_node *n;
	struct dt_bound_args args;
	struct dt_rules *r;
	int param_input[DT_MAX_PARAMS]; /* first input of a parameter, -1 */
	uint32_t width;
};

static const struct dt_rule_tensor *out_t(const struct fill *f, uint32_t k)
{
	return &f->r->tensors.data[k];
}
static const struct dt_rule_tensor *in_t(const struct fill *f, uint32_t i)
{
	return &f->r->tensors.data[f->r->nout + i];
}

static struct dt_rule_entry shard(int d)
{
	return (struct dt_rule_entry){.kind = DT_RULE_SHARD, .dim = (int8_t)d};
}
static struct dt_rule_entry partial(int op)
{
	return (struct dt_rule_entry){.kind = DT_RULE_PARTIAL, .reduce = (uint8_t)op};
}

/* A new row, every entry R. The pointer is valid until the next row. */
static struct dt_rule_entry *row_add(struct fill *f, uint8_t flags)
{
	uint32_t first = dt_vec_grow(&f->r->entries, f->width);
	struct dt_rule_entry *e = &f->r->entries.data[first];
	memset(e, 0, f->width * sizeof *e);
	dt_vec_push(&f->r->flags, flags);
	f->r->nrows++;
	return e;
}

static void row_drop(struct fill *f)
{
	f->r->entries.len -= f->width;
	f->r->flags.len--;
	f->r->nrows--;
}

static struct dt_rule_entry *in_e(struct fill *f, struct dt_rule_entry *e,
				  uint32_t i)
{
	return &e[f->r->nout + i];
}

/* The input bound to parameter `name`, or -1 (absent, none, a number). */
static int input_of(const struct fill *f, const char *name)
{
	const struct dt_op_info *op = dt_op_get(f->r->op);
	for (int p = 0; p < op->nparams; p++)
		if (strcmp(op->params[p].name, name) == 0)
			return f->param_input[p];
	return -1;
}

static const struct dt_arg *arg_named(const struct fill *f, const char *name)
{
	const struct dt_op_info *op = dt_op_get(f->r->op);
	for (int p = 0; p < op->nparams; p++)
		if (strcmp(op->params[p].name, name) == 0)
			return f->args.arg[p];
	return NULL;
}

/* An int argument, or `dflt` when absent. */
static int64_t arg_int(const struct fill *f, const char *name, int64_t dflt)
{
	const struct dt_arg *a = arg_named(f, name);
	return a && a->kind == DT_ARG_INT ? a->v.i : dflt;
}

static bool arg_bool(const struct fill *f, const char *name, bool dflt)
{
	const struct dt_arg *a = arg_named(f, name);
	return a && a->kind == DT_ARG_BOOL ? a->v.b : dflt;
}

/* A Scalar argument as a double, or `dflt` when absent. */
static double arg_number(const struct fill *f, const char *name, double dflt)
{
	const struct dt_arg *a = arg_named(f, name);
	if (!a)
		return dflt;
	switch (a->kind) {
	case DT_ARG_INT: return (double)a->v.i;
	case DT_ARG_FLOAT: return a->v.f;
	case DT_ARG_BOOL: return a->v.b;
	default: return dflt;
	}
}

/* An int[] argument (a single int counts as one); -1 when absent. */
static int arg_ints(const struct fill *f, const char *name, int64_t *v, int cap)
{
	const struct dt_arg *a = arg_named(f, name);
	if (!a)
		return -1;
	int n = 0;
	if (a->kind == DT_ARG_INT) {
		v[0] = a->v.i;
		return 1;
	}
	if (a->kind == DT_ARG_INTS) {
		const int64_t *x = dt_ints_get(f->m, a->v.ints, &n);
		if (n > cap)
			n = cap;
		memcpy(v, x, (size_t)n * sizeof *v);
		return n;
	}
	if (a->kind == DT_ARG_ITEMS) {
		for (uint32_t k = 0; k < a->len && n < cap; k++) {
			const struct dt_arg *item = &f->m->args.data[a->v.first + k];
			if (item->kind == DT_ARG_INT)
				v[n++] = item->v.i;
		}
		return n;
	}
	return -1;
}

/* PyTorch's maybe_wrap_dim (rank 0 behaves as rank 1); -1 if out of range. */
static int wrap_dim(int64_t d, int rank)
{
	int64_t r = rank > 0 ? rank : 1;
	if (d < -r || d >= r)
		return -1;
	return (int)(d < 0 ? d + r : d);
}

/* Every input, as a mask of partial_rows. */
#define ALL_INPUTS (~0ull)

/* One row per op in `ops`: every output P(op), the inputs in `mask` (a bit
 * per input among the first 64, or ALL_INPUTS) P(op), the others R. */
static void partial_rows(struct fill *f, unsigned ops, uint64_t mask)
{
	for (int op = 0; op < DT_NREDUCE; op++) {
		if (!(ops & (1u << op)))
			continue;
		struct dt_rule_entry *e = row_add(f, 0);
		for (uint32_t k = 0; k < f->r->nout; k++)
			e[k] = partial(op);
		for (uint32_t i = 0; i < f->r->nin; i++)
			if (mask == ALL_INPUTS || (i < 64 && (mask & (1ull << i))))
				*in_e(f, e, i) = partial(op);
	}
}

/* Partial rows through every output from input 0 alone (views, copies). */
static void partial_through_first(struct fill *f, unsigned ops)
{
	if (f->r->nin >= 1)
		partial_rows(f, ops, 1);
}

/* A row sharding every output on out_dim and input 0 on in_dim. */
static void shard_row(struct fill *f, int out_dim, int in_dim, uint8_t flags)
{
	struct dt_rule_entry *e = row_add(f, flags);
	for (uint32_t k = 0; k < f->r->nout; k++)
		e[k] = shard(out_dim);
	*in_e(f, e, 0) = shard(in_dim);
}

/* ------------------------------------------------------------------ */
/* pointwise */

/* Input i's dim aligned (right-aligned broadcasting) with output dim d
 * and not broadcast there, or -1. */
static int aligned_dim(const struct fill *f, uint32_t i, int d)
{
	const struct dt_rule_tensor *in = in_t(f, i), *out = out_t(f, 0);
	int j = d - (out->rank - in->rank);
	if (j < 0 || in->shape[j] != out->shape[d])
		return -1;
	return j;
}

static void pointwise(struct fill *f, enum variant v)
{
	uint32_t nin = f->r->nin;
	if (nin == 0)
		return;
	int rank = out_t(f, 0)->rank;
	for (int d = 0; d < rank; d++) {
		struct dt_rule_entry *e = row_add(f, 0);
		bool any = false;
		for (uint32_t k = 0; k < f->r->nout; k++)
			e[k] = shard(d);
		for (uint32_t i = 0; i < nin; i++) {
			int j = aligned_dim(f, i, d);
			if (j >= 0) {
				*in_e(f, e, i) = shard(j);
				any = true;
			}
		}
		if (!any)
			row_drop(f);
	}
	bool self_tensor = f->param_input[0] == 0;
	switch (v) {
	case VARIANT_LINEAR:
		partial_rows(f, nin == 2 ? OPS_SUM_AVG : 1u << DT_REDUCE_AVG,
			     ALL_INPUTS);
		break;
	case VARIANT_MUL:
		partial_rows(f, OPS_SUM_AVG, 1);
		if (nin == 2)
			partial_rows(f, OPS_SUM_AVG, 2);
		break;
	case VARIANT_DIV:
		if (self_tensor)
			partial_rows(f, OPS_SUM_AVG, 1);
		break;
	case VARIANT_SHIFT:
		partial_rows(f, OPS_AVG_MAX_MIN, 1);
		break;
	case VARIANT_AFFINE:
		partial_rows(f, 1u << DT_REDUCE_AVG, 1);
		break;
	case VARIANT_SCALE:
		partial_rows(f, arg_number(f, "other", 0) > 0 ? OPS_ALL : OPS_SUM_AVG, 1);
		break;
	case VARIANT_COPY: {
		enum dt_dtype from = in_t(f, 0)->dtype, to = out_t(f, 0)->dtype;
		if (from == to || (dt_dtype_is_float(to) && from != DT_BOOL))
			partial_rows(f, OPS_ALL, 1);
		break;
	}
	case VARIANT_NEG:
		partial_rows(f, OPS_SUM_AVG, 1);
		break;
	case VARIANT_MONOTONE:
		partial_rows(f, OPS_MAX_MIN, 1);
		break;
	case VARIANT_MAXMIN:
		if (nin == 2)
			partial_rows(f, f->r->op == DT_OP_MAXIMUM ? 1u << DT_REDUCE_MAX
								 : 1u << DT_REDUCE_MIN,
				     3);
		break;
	case VARIANT_WHERE:
		if (nin == 3)
			partial_rows(f, OPS_ALL, 6);
		break;
	case VARIANT_MASKED_FILL:
		if (self_tensor)
			partial_rows(f, OPS_AVG_MAX_MIN, 1);
		break;
	case VARIANT_ADDC:
		if (nin == 3) {
			partial_rows(f, OPS_SUM_AVG, 3);
			if (f->r->op == DT_OP_ADDCMUL)
				partial_rows(f, OPS_SUM_AVG, 5);
		}
		break;
	case VARIANT_GRAD:
		if (self_tensor)
			partial_rows(f, OPS_SUM_AVG, 1);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* reduction */

static void reduction(struct fill *f, enum variant v)
{
	const struct dt_rule_tensor *in = in_t(f, 0);
	bool reduced[DT_MAX_RANK] = {false};
	int64_t dims[DT_MAX_RANK];
	int nd = arg_ints(f, "dim", dims, DT_MAX_RANK);
	for (int d = 0; d < in->rank; d++)
		reduced[d] = nd <= 0;
	for (int i = 0; i < nd; i++) {
		int d = wrap_dim(dims[i], in->rank);
		if (d >= 0 && d < in->rank)
			reduced[d] = true;
	}
	bool keepdim = arg_bool(f, "keepdim", false);
	int result = v == VARIANT_SUM    ? DT_REDUCE_SUM
		     : v == VARIANT_MEAN ? DT_REDUCE_AVG
		     : v == VARIANT_AMAX ? DT_REDUCE_MAX
		     : v == VARIANT_AMIN ? DT_REDUCE_MIN
					 : -1;
	int out_dim = 0;
	for (int d = 0; d < in->rank; d++) {
		if (!reduced[d]) {
			shard_row(f, out_dim++, d, 0);
			continue;
		}
		if (keepdim)
			out_dim++;
		if (result < 0)
			continue;
		uint8_t flags = v == VARIANT_MEAN ? DT_ROW_EVEN
				: result == DT_REDUCE_MAX || result == DT_REDUCE_MIN ? DT_ROW_NONEMPTY
										      : 0;
		struct dt_rule_entry *e = row_add(f, flags);
		for (uint32_t k = 0; k < f->r->nout; k++)
			e[k] = partial(result);
		*in_e(f, e, 0) = shard(d);
	}
	if (v == VARIANT_SUM || v == VARIANT_MEAN)
		partial_through_first(f, OPS_SUM_AVG);
	else if (result >= 0)
		partial_through_first(f, 1u << result);
}

/* ------------------------------------------------------------------ */
/* matmul */

/* Output dim d of a bias-like input i broadcast to the output: S*(j) of
 * its aligned dim, or R where it is broadcast. */
static struct dt_rule_entry follow(const struct fill *f, int i, int d)
{
	int j = i < 0 ? -1 : aligned_dim(f, (uint32_t)i, d);
	return j >= 0 ? shard(j) : (struct dt_rule_entry){DT_RULE_REPLICATE, 0, 0};
}

/* The matrix-product rows over inputs a (…, M, K) and b (…, K, N) with
 * `batch` leading batch dims; `bias` is the added input or -1. */
static void matmul_rows(struct fill *f, int bias, int a, int b, int batch)
{
	int m = batch, k = batch + 1, n = batch + 1;
	struct dt_rule_entry *e;
	if (batch) {
		e = row_add(f, 0);
		e[0] = shard(0);
		*in_e(f, e, (uint32_t)a) = shard(0);
		*in_e(f, e, (uint32_t)b) = shard(0);
		if (bias >= 0)
			*in_e(f, e, (uint32_t)bias) = follow(f, bias, 0);
	}
	e = row_add(f, 0);
	e[0] = shard(m);
	*in_e(f, e, (uint32_t)a) = shard(m);
	if (bias >= 0)
		*in_e(f, e, (uint32_t)bias) = follow(f, bias, m);
	e = row_add(f, 0);
	e[0] = shard(n);
	*in_e(f, e, (uint32_t)b) = shard(n);
	if (bias >= 0)
		*in_e(f, e, (uint32_t)bias) = follow(f, bias, n);
	e = row_add(f, 0);
	e[0] = partial(DT_REDUCE_SUM);
	*in_e(f, e, (uint32_t)a) = shard(k);
	*in_e(f, e, (uint32_t)b) = shard(batch);
	if (bias >= 0)
		*in_e(f, e, (uint32_t)bias) = partial(DT_REDUCE_SUM);
	uint64_t with_bias = bias >= 0 ? 1ull << bias : 0;
	partial_rows(f, OPS_SUM_AVG, with_bias | 1ull << a);
	partial_rows(f, OPS_SUM_AVG, with_bias | 1ull << b);
}

static void matmul(struct fill *f, enum variant v)
{
	bool added = v == VARIANT_ADDMM || v == VARIANT_BADDBMM;
	bool batched = v == VARIANT_BMM || v == VARIANT_BADDBMM;
	int bias = added ? input_of(f, "self") : -1;
	int a = input_of(f, added ? (batched ? "batch1" : "mat1") : "self");
	int b = input_of(f, added ? (batched ? "batch2" : "mat2") : "mat2");
	if (a < 0 || b < 0 || (added && bias < 0))
		return;
	matmul_rows(f, bias, a, b, batched);
}

/* ------------------------------------------------------------------ */
/* views and dim renumbering */

/* Next dim at or after d whose size is not 1, or rank. */
static int next_dim(const int64_t *shape, int rank, int d)
{
	while (d < rank && shape[d] == 1)
		d++;
	return d;
}

/* The shard rows of a view: blocks of dims with equal products. */
static void view_blocks(struct fill *f)
{
	const struct dt_rule_tensor *in = in_t(f, 0), *out = out_t(f, 0);
	if (dt_numel(in->shape, in->rank) == 0)
		return;
	int ia = next_dim(in->shape, in->rank, 0);
	int ib = next_dim(out->shape, out->rank, 0);
	while (ia < in->rank && ib < out->rank) {
		int first_a = ia, first_b = ib, na = 1, nb = 1;
		int64_t pa = in->shape[ia], pb = out->shape[ib];
		while (pa != pb) {
			if (pa < pb) {
				ia = next_dim(in->shape, in->rank, ia + 1);
				if (ia == in->rank)
					return;
				pa *= in->shape[ia];
				na++;
			} else {
				ib = next_dim(out->shape, out->rank, ib + 1);
				if (ib == out->rank)
					return;
				pb *= out->shape[ib];
				nb++;
			}
		}
		shard_row(f, first_b, first_a,
			  na == 1 && nb == 1 ? 0 : DT_ROW_EVEN | DT_ROW_PLAIN);
		ia = next_dim(in->shape, in->rank, ia + 1);
		ib = next_dim(out->shape, out->rank, ib + 1);
	}
}

static void view(struct fill *f)
{
	view_blocks(f);
	partial_through_first(f, OPS_ALL);
}

static void permute(struct fill *f)
{
	int rank = in_t(f, 0)->rank;
	int perm[DT_MAX_RANK];
	for (int d = 0; d < rank; d++)
		perm[d] = d;
	if (f->r->op == DT_OP_PERMUTE) {
		int64_t dims[DT_MAX_RANK];
		if (arg_ints(f, "dims", dims, DT_MAX_RANK) != rank)
			return;
		for (int d = 0; d < rank; d++)
			if ((perm[d] = wrap_dim(dims[d], rank)) < 0)
				return;
	} else if (f->r->op == DT_OP_TRANSPOSE || rank == 2) {
		int d0 = f->r->op == DT_OP_T ? 0 : wrap_dim(arg_int(f, "dim0", 0), rank);
		int d1 = f->r->op == DT_OP_T ? 1 : wrap_dim(arg_int(f, "dim1", 0), rank);
		if (d0 < 0 || d1 < 0 || rank == 0)
			return;
		perm[d0] = d1;
		perm[d1] = d0;
	}
	for (int d = 0; d < rank; d++)
		shard_row(f, d, perm[d], 0);
	partial_through_first(f, OPS_ALL);
}

static void expand(struct fill *f)
{
	for (int d = 0; d < out_t(f, 0)->rank; d++) {
		int j = aligned_dim(f, 0, d);
		if (j >= 0)
			shard_row(f, d, j, 0);
	}
	partial_through_first(f, OPS_ALL);
}

static void dimmap(struct fill *f)
{
	const struct dt_rule_tensor *in = in_t(f, 0);
	bool removed[DT_MAX_RANK] = {false};
	int inserted = -1;
	if (f->r->op == DT_OP_UNSQUEEZE) {
		inserted = wrap_dim(arg_int(f, "dim", 0), in->rank + 1);
		if (inserted < 0)
			return;
	} else if (f->r->op == DT_OP_SQUEEZE) {
		for (int d = 0; d < in->rank; d++)
			removed[d] = in->shape[d] == 1;
	} else {
		int64_t dims[DT_MAX_RANK];
		int nd = arg_ints(f, "dim", dims, DT_MAX_RANK);
		for (int i = 0; i < nd; i++) {
			int d = wrap_dim(dims[i], in->rank);
			if (d >= 0 && d < in->rank && in->shape[d] == 1)
				removed[d] = true;
		}
	}
	/* squeeze.default drops the local dims of length 1. */
	uint8_t flags = f->r->op == DT_OP_SQUEEZE ? DT_ROW_NO_UNIT : 0;
	int out_dim = 0;
	for (int d = 0; d < in->rank; d++) {
		if (removed[d])
			continue;
		if (out_dim == inserted)
			out_dim++;
		shard_row(f, out_dim++, d, flags);
	}
	partial_through_first(f, OPS_ALL);
}

static void slice(struct fill *f)
{
	int rank = in_t(f, 0)->rank;
	int dim = wrap_dim(arg_int(f, "dim", 0), rank);
	bool drops = f->r->op == DT_OP_SELECT || f->r->op == DT_OP_UNBIND;
	for (int d = 0; d < rank; d++)
		if (d != dim)
			shard_row(f, drops && d > dim ? d - 1 : d, d, 0);
	partial_through_first(f, OPS_ALL);
}

static void join(struct fill *f)
{
	const struct dt_rule_tensor *out = out_t(f, 0);
	bool stack = f->r->op == DT_OP_STACK;
	int rank = out->rank - stack;
	for (uint32_t i = 0; i < f->r->nin; i++)
		if (in_t(f, i)->rank != rank)
			return;
	int dim = wrap_dim(arg_int(f, "dim", 0), out->rank);
	if (dim < 0)
		return;
	for (int d = 0; d < rank; d++) {
		if (!stack && d == dim)
			continue;
		struct dt_rule_entry *e = row_add(f, 0);
		e[0] = shard(stack && d >= dim ? d + 1 : d);
		for (uint32_t i = 0; i < f->r->nin; i++)
			*in_e(f, e, i) = shard(d);
	}
	partial_rows(f, 1u << DT_REDUCE_SUM, ALL_INPUTS);
}

static void pad(struct fill *f)
{
	int rank = in_t(f, 0)->rank;
	int64_t pads[2 * DT_MAX_RANK];
	int np = arg_ints(f, "pad", pads, 2 * DT_MAX_RANK);
	bool padded[DT_MAX_RANK] = {false};
	for (int i = 0; 2 * i + 1 < np && i < rank; i++)
		padded[rank - 1 - i] = pads[2 * i] || pads[2 * i + 1];
	for (int d = 0; d < rank; d++)
		if (!padded[d])
			shard_row(f, d, d, 0);
	bool zero = arg_number(f, "value", 0) == 0;
	partial_through_first(f, zero ? OPS_ALL : OPS_AVG_MAX_MIN);
}

static void slice_backward(struct fill *f)
{
	int rank = out_t(f, 0)->rank;
	int dim = wrap_dim(arg_int(f, "dim", 0), rank);
	bool select = f->r->op == DT_OP_SELECT_BACKWARD;
	for (int d = 0; d < in_t(f, 0)->rank; d++) {
		int od = select && d >= dim ? d + 1 : d;
		if (od != dim)
			shard_row(f, od, d, 0);
	}
	partial_through_first(f, OPS_ALL);
}

/* ------------------------------------------------------------------ */
/* neural-network ops */

static void softmax(struct fill *f, enum variant v)
{
	int rank = in_t(f, 0)->rank;
	int dim = wrap_dim(arg_int(f, "dim", 0), rank);
	for (int d = 0; d < rank; d++) {
		if (d == dim)
			continue;
		struct dt_rule_entry *e = row_add(f, 0);
		e[0] = shard(d);
		for (uint32_t i = 0; i < f->r->nin; i++)
			*in_e(f, e, i) = shard(d);
	}
	if (v == VARIANT_GRAD)
		partial_rows(f, OPS_SUM_AVG, 1);
}

static void layer_norm(struct fill *f, enum variant v)
{
	bool backward = v == VARIANT_GRAD;
	int input = input_of(f, "input");
	int64_t normalized[DT_MAX_RANK];
	int nn = arg_ints(f, "normalized_shape", normalized, DT_MAX_RANK);
	if (input < 0 || nn < 0)
		return;
	int axis = in_t(f, (uint32_t)input)->rank - nn;
	static const char *const sharded_fwd[] = {"input"};
	static const char *const sharded_bwd[] = {"grad_out", "input", "mean", "rstd"};
	const char *const *names = backward ? sharded_bwd : sharded_fwd;
	int nnames = backward ? 4 : 1;
	for (int d = 0; d < axis; d++) {
		struct dt_rule_entry *e = row_add(f, 0);
		e[0] = shard(d);
		for (uint32_t k = 1; k < f->r->nout; k++)
			e[k] = backward ? partial(DT_REDUCE_SUM) : shard(d);
		for (int i = 0; i < nnames; i++) {
			int x = input_of(f, names[i]);
			if (x >= 0)
				*in_e(f, e, (uint32_t)x) = shard(d);
		}
	}
	if (backward && input_of(f, "grad_out") == 0)
		partial_rows(f, OPS_SUM_AVG, 1);
}

static void embedding(struct fill *f, enum variant v)
{
	bool backward = v == VARIANT_GRAD;
	int weight = input_of(f, backward ? "grad_output" : "weight");
	int indices = input_of(f, "indices");
	if (weight < 0 || indices < 0)
		return;
	int q = in_t(f, (uint32_t)indices)->rank;
	struct dt_rule_entry *e = row_add(f, 0);
	e[0] = shard(backward ? 1 : q);
	*in_e(f, e, (uint32_t)weight) = shard(backward ? q : 1);
	bool by_freq = backward && arg_bool(f, "scale_grad_by_freq", false);
	for (int d = 0; d < q && !by_freq; d++) {
		e = row_add(f, 0);
		e[0] = backward ? partial(DT_REDUCE_SUM) : shard(d);
		*in_e(f, e, (uint32_t)indices) = shard(d);
		if (backward)
			*in_e(f, e, (uint32_t)weight) = shard(d);
	}
	partial_rows(f, backward ? OPS_SUM_AVG : OPS_ALL, 1ull << weight);
}

enum { NLL_NONE, NLL_MEAN, NLL_SUM }; /* ATen's Reduction */

static void nll_loss(struct fill *f, enum variant v)
{
	bool backward = v == VARIANT_GRAD;
	int self = input_of(f, "self"), target = input_of(f, "target");
	int grad = backward ? input_of(f, "grad_output") : -1;
	if (self < 0 || target < 0 || in_t(f, (uint32_t)self)->rank != 2)
		return;
	int64_t reduction = arg_int(f, "reduction", NLL_MEAN);
	bool weighted = input_of(f, "weight") >= 0;
	if (backward) {
		if (grad < 0)
			return;
		struct dt_rule_entry *e = row_add(f, 0);
		e[0] = shard(0);
		*in_e(f, e, (uint32_t)self) = shard(0);
		*in_e(f, e, (uint32_t)target) = shard(0);
		if (reduction == NLL_NONE)
			*in_e(f, e, (uint32_t)grad) = shard(0);
		partial_rows(f, OPS_SUM_AVG, 1ull << grad);
		return;
	}
	/* Forward: (output, total_weight). */
	if (reduction == NLL_NONE || reduction == NLL_SUM ||
	    (reduction == NLL_MEAN && !weighted)) {
		struct dt_rule_entry *e =
		    row_add(f, reduction == NLL_MEAN ? DT_ROW_EVEN : 0);
		if (reduction == NLL_NONE) {
			e[0] = shard(0);
		} else {
			e[0] = partial(reduction == NLL_SUM ? DT_REDUCE_SUM : DT_REDUCE_AVG);
			e[1] = partial(DT_REDUCE_SUM);
		}
		*in_e(f, e, (uint32_t)self) = shard(0);
		*in_e(f, e, (uint32_t)target) = shard(0);
	}
	for (int op = DT_REDUCE_SUM; op <= DT_REDUCE_AVG; op++) {
		struct dt_rule_entry *e = row_add(f, 0);
		e[0] = partial(op);
		*in_e(f, e, (uint32_t)self) = partial(op);
	}
}

static void like(struct fill *f)
{
	for (int d = 0; d < in_t(f, 0)->rank; d++)
		shard_row(f, d, d, 0);
	bool zeros = f->r->op == DT_OP_ZEROS_LIKE || f->r->op == DT_OP_EMPTY_LIKE;
	partial_through_first(f, zeros ? OPS_ALL : OPS_AVG_MAX_MIN);
	/* A partial input has the global shape on every rank; its values are
	 * not read: the result is replicated. */
	for (int op = DT_REDUCE_SUM; op <= DT_REDUCE_MIN; op++) {
		struct dt_rule_entry *e = row_add(f, 0);
		*in_e(f, e, 0) = partial(op);
	}
}

/* ------------------------------------------------------------------ */

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return DT_EINPUT;
}

/* Appends the input read at args index `arg` or refs index `ref`. */
static void add_input(struct fill *f, int param, uint32_t node, uint32_t arg,
		      uint32_t ref)
{
	const struct dt_node *src = dt_node_get(f->m, node);
	struct dt_rule_tensor t = {.node = node, .arg = arg, .ref = ref,
				   .param = (uint8_t)param};
	if (src->ntensors) {
		const struct dt_tensor *meta = dt_node_tensor(f->m, src, 0);
		int rank;
		const int64_t *shape = dt_ints_get(f->m, meta->shape, &rank);
		t.dtype = meta->dtype;
		t.rank = (uint8_t)rank;
		memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
	}
	if (f->param_input[param] < 0)
		f->param_input[param] = (int)f->r->nin;
	dt_vec_push(&f->r->tensors, t);
	f->r->nin++;
}

static void collect_inputs(struct fill *f)
{
	const struct dt_op_info *op = dt_op_get(f->r->op);
	for (int p = 0; p < op->nparams; p++) {
		const struct dt_arg *a = f->args.arg[p];
		if (!a)
			continue;
		uint32_t at = (uint32_t)(a - f->m->args.data);
		if (op->params[p].kind == DT_PARAM_TENSOR && a->kind == DT_ARG_NODE)
			add_input(f, p, a->v.node, at, 0);
		if (op->params[p].kind != DT_PARAM_TENSORS)
			continue;
		for (uint32_t k = 0; k < a->len; k++) {
			if (a->kind == DT_ARG_NODES) {
				uint32_t ref = a->v.first + k;
				add_input(f, p, f->m->refs.data[ref], UINT32_MAX, ref);
			} else if (a->kind == DT_ARG_ITEMS) {
				const struct dt_arg *item = &f->m->args.data[a->v.first + k];
				if (item->kind == DT_ARG_NODE)
					add_input(f, p, item->v.node, a->v.first + k, 0);
			}
		}
	}
}

static void discard(void *ud, const struct dt_diag_entry *e)
{
	(void)ud;
	(void)e;
}

/* Drop rows equal to an earlier one or to the all-replicate row. */
static void dedupe(struct dt_rules *r)
{
	uint32_t w = r->nout + r->nin, kept = 0;
	size_t bytes = w * sizeof(struct dt_rule_entry);
	struct dt_rule_entry *e = r->entries.data;
	for (uint32_t i = 0; i < r->nrows; i++) {
		bool replicate = true, seen = false;
		for (uint32_t k = 0; k < w; k++)
			replicate &= e[i * w + k].kind == DT_RULE_REPLICATE;
		for (uint32_t j = 0; j < kept && !seen; j++)
			seen = memcmp(&e[j * w], &e[i * w], bytes) == 0 &&
			       r->flags.data[j] == r->flags.data[i];
		if (replicate || seen)
			continue;
		memmove(&e[kept * w], &e[i * w], bytes);
		r->flags.data[kept++] = r->flags.data[i];
	}
	r->nrows = kept;
	r->entries.len = kept * w;
	r->flags.len = kept;
}

int dt_rules_fill(struct dt_rules *r, const struct dt_module *m, uint32_t node,
		  char *err, size_t errlen)
{
	const struct dt_node *n = dt_node_get(m, node);
	r->op = (enum dt_op)n->op;
	r->family = dt_rules_family(r->op);
	r->nout = r->nin = r->nrows = 0;
	r->tensors.len = r->entries.len = r->flags.len = 0;
	r->inplace = false;
	if (n->kind != DT_NODE_CALL || !r->family)
		return fail(err, errlen, "%s has no sharding rule",
			    n->kind == DT_NODE_CALL ? dt_str_get(m, n->target)
						    : "a placeholder or output");
	struct dt_diag quiet;
	dt_diag_init(&quiet);
	quiet.emit = discard;
	struct fill f = {.m = m, .n = n, .r = r};
	if (dt_op_bind(m, n, &f.args, &quiet) != DT_OK)
		return fail(err, errlen, "the arguments of %s do not bind",
			    dt_str_get(m, n->target));
	for (int p = 0; p < DT_MAX_PARAMS; p++)
		f.param_input[p] = -1;
	for (uint32_t k = 0; k < n->ntensors; k++) {
		const struct dt_tensor *meta = dt_node_tensor(m, n, (int)k);
		int rank;
		const int64_t *shape = dt_ints_get(m, meta->shape, &rank);
		struct dt_rule_tensor t = {.node = node, .param = (uint8_t)k,
					   .dtype = meta->dtype, .rank = (uint8_t)rank};
		memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
		dt_vec_push(&r->tensors, t);
		r->nout++;
	}
	collect_inputs(&f);
	if (r->nout + r->nin > DT_RULE_MAX_TENSORS)
		return fail(err, errlen,
			    "%s has %u tensors; rules hold at most %d",
			    dt_str_get(m, n->target), r->nout + r->nin,
			    DT_RULE_MAX_TENSORS);
	f.width = r->nout + r->nin;
	enum variant v = (enum variant)table[r->op].variant;
	if (r->nout == 0)
		return DT_OK;
	switch ((enum family)table[r->op].family) {
	case FAMILY_POINTWISE: pointwise(&f, v); break;
	case FAMILY_REDUCTION: reduction(&f, v); break;
	case FAMILY_MATMUL: matmul(&f, v); break;
	case FAMILY_VIEW: view(&f); break;
	case FAMILY_PERMUTE: permute(&f); break;
	case FAMILY_EXPAND: expand(&f); break;
	case FAMILY_DIMMAP: dimmap(&f); break;
	case FAMILY_SLICE:
	case FAMILY_SPLIT: slice(&f); break;
	case FAMILY_JOIN: join(&f); break;
	case FAMILY_PAD: pad(&f); break;
	case FAMILY_SLICE_BACKWARD: slice_backward(&f); break;
	case FAMILY_SOFTMAX: softmax(&f, v); break;
	case FAMILY_LAYER_NORM: layer_norm(&f, v); break;
	case FAMILY_EMBEDDING: embedding(&f, v); break;
	case FAMILY_NLL_LOSS: nll_loss(&f, v); break;
	case FAMILY_LIKE: like(&f); break;
	case FAMILY_NEW:
		for (uint32_t i = 0; i < r->nin; i++)
			r->tensors.data[r->nout + i].ignored = true;
		break;
	case FAMILY_REPLICATE:
	case FAMILY_NONE:
		break;
	}
	dedupe(r);
	return DT_OK;
}

void dt_rules_fini(struct dt_rules *r)
{
	dt_vec_free(&r->tensors);
	dt_vec_free(&r->entries);
	dt_vec_free(&r->flags);
}

int dt_rule_entry_print(const struct dt_rule_entry *e, char *buf, size_t n)
{
	switch ((enum dt_rule_kind)e->kind) {
	case DT_RULE_REPLICATE: return snprintf(buf, n, "R");
	case DT_RULE_PARTIAL:
		return snprintf(buf, n, "P(%s)", dt_reduce_name((enum dt_reduce_op)e->reduce));
	case DT_RULE_SHARD: return snprintf(buf, n, "S*(%d)", e->dim);
	}
	return snprintf(buf, n, "?");
}

int dt_rules_row_print(const struct dt_rules *r, uint32_t row, char *buf,
		       size_t n)
{
	const struct dt_rule_entry *e = dt_rules_row(r, row);
	size_t len = 0;
	for (uint32_t k = 0; k < r->nout + r->nin; k++) {
		const char *sep = k == 0 ? "" : k == r->nout ? " <- " : ", ";
		char one[32];
		if (k >= r->nout && r->tensors.data[k].ignored)
			snprintf(one, sizeof one, "-");
		else
			dt_rule_entry_print(&e[k], one, sizeof one);
		int w = snprintf(buf + (len < n ? len : n), len < n ? n - len : 0,
				 "%s%s", sep, one);
		len += (size_t)w;
	}
	if (r->nin == 0)
		len += (size_t)snprintf(buf + (len < n ? len : n),
					len < n ? n - len : 0, " <- ");
	return (int)len;
}
