// SPDX-License-Identifier: MIT
/* sharding/rules.c: the rule table (sharding/rules.def) and filling a
 * node's rules: its tensors, then the rows of its op's family, written by
 * a generator from the op's variant, its arguments (dims, keepdim,
 * permutation, …) and the global shapes of its tensors; the table itself
 * is data. Here the element-wise, reduction and matrix families and the
 * helpers every generator uses; the families that move dims and the
 * neural-network ops are sharding/rules_dims.c. Semantics §6.
 *
 *   mm(a[8,4], b[4,16]) -> S*(0) <- S*(0), R      S*(1) <- R, S*(1)
 *                          P(sum) <- S*(1), S*(0)  P(sum) <- P(sum), R …
 *
 * Time: O(rows · tensors) per node; rows are O(rank) for every family. */
#include "rules_internal.h"

#include <stdarg.h>
#include <string.h>

/* clang-format off */
#define DT_SHARD_FAMILIES(X)                                                   \
	X(POINTWISE, "pointwise")                                              \
	X(REDUCTION, "reduction")                                              \
	X(MATMUL, "matmul")                                                    \
	X(VIEW, "view")                                                        \
	X(PERMUTE, "permute")                                                  \
	X(EXPAND, "expand")                                                    \
	X(DIMMAP, "dimmap")                                                    \
	X(SLICE, "slice")                                                      \
	X(SPLIT, "split")                                                      \
	X(JOIN, "join")                                                        \
	X(PAD, "pad")                                                          \
	X(SLICE_BACKWARD, "slice_backward")                                    \
	X(SOFTMAX, "softmax")                                                  \
	X(LAYER_NORM, "layer_norm")                                            \
	X(EMBEDDING, "embedding")                                              \
	X(NLL_LOSS, "nll_loss")                                                \
	X(LIKE, "like")                                                        \
	X(NEW, "new")                                                          \
	X(TRIANGLE, "triangle")                                                \
	X(INDEX, "index")                                                      \
	X(MSE_LOSS, "mse_loss")                                                \
	X(REPLICATE, "replicate")
/* clang-format on */

enum family {
	FAMILY_NONE, /* not in the table */
#define X(e, n) FAMILY_##e,
	DT_SHARD_FAMILIES(X)
#undef X
};

static const char *const family_names[] = {
#define X(e, n) [FAMILY_##e] = n,
	DT_SHARD_FAMILIES(X)
#undef X
};

struct rule_spec {
	uint8_t family;	 /* enum family */
	uint8_t variant; /* enum dt_rule_variant */
};

static const struct rule_spec table[DT_NOPS] = {
#define DT_SHARD_RULE(op, family, variant)                                     \
	[DT_OP_##op] = {FAMILY_##family, DT_VARIANT_##variant},
#include "rules.def"
#undef DT_SHARD_RULE
};

const char *dt_rules_family(enum dt_op op)
{
	if (op <= DT_OP_UNKNOWN || op >= DT_NOPS)
		return NULL;
	uint8_t f = table[op].family;
	return f == FAMILY_NONE ? NULL : family_names[f];
}

/* ------------------------------------------------------------------ */
/* Filling one node. */

const struct dt_rule_tensor *dt_rule_out(const struct dt_rule_fill *f,
					 uint32_t k)
{
	return &f->r->tensors.data[k];
}
const struct dt_rule_tensor *dt_rule_in(const struct dt_rule_fill *f,
					uint32_t i)
{
	return &f->r->tensors.data[f->r->nout + i];
}

struct dt_rule_entry dt_rule_shard(int d)
{
	return (struct dt_rule_entry){.kind = DT_RULE_SHARD, .dim = (int8_t)d};
}
struct dt_rule_entry dt_rule_strided(int d, int64_t split)
{
	return (struct dt_rule_entry){.kind = DT_RULE_STRIDED, .dim = (int8_t)d,
				      .split = (int32_t)split};
}
struct dt_rule_entry dt_rule_partial(int op)
{
	return (struct dt_rule_entry){.kind = DT_RULE_PARTIAL,
				      .reduce = (uint8_t)op};
}

/* A new row, every entry R. The pointer is valid until the next row. */
struct dt_rule_entry *dt_rule_row_add(struct dt_rule_fill *f, uint8_t flags)
{
	uint32_t first = dt_vec_grow(&f->r->entries, f->width);
	struct dt_rule_entry *e = &f->r->entries.data[first];
	memset(e, 0, f->width * sizeof *e);
	dt_vec_push(&f->r->flags, flags);
	f->r->nrows++;
	return e;
}

void dt_rule_row_drop(struct dt_rule_fill *f)
{
	f->r->entries.len -= f->width;
	f->r->flags.len--;
	f->r->nrows--;
}

struct dt_rule_entry *dt_rule_in_entry(struct dt_rule_fill *f,
				       struct dt_rule_entry *e, uint32_t i)
{
	return &e[f->r->nout + i];
}

/* The input bound to parameter `name`, or -1 (absent, none, a number). */
int dt_rule_input_of(const struct dt_rule_fill *f, const char *name)
{
	const struct dt_op_info *op = dt_op_get(f->r->op);
	for (int p = 0; p < op->nparams; p++)
		if (strcmp(op->params[p].name, name) == 0)
			return f->param_input[p];
	return -1;
}

static const struct dt_arg *arg_named(const struct dt_rule_fill *f,
				      const char *name)
{
	const struct dt_op_info *op = dt_op_get(f->r->op);
	for (int p = 0; p < op->nparams; p++)
		if (strcmp(op->params[p].name, name) == 0)
			return f->args.arg[p];
	return NULL;
}

/* An int argument, or `dflt` when absent. */
int64_t dt_rule_arg_int(const struct dt_rule_fill *f, const char *name,
			int64_t dflt)
{
	const struct dt_arg *a = arg_named(f, name);
	return a && a->kind == DT_ARG_INT ? a->v.i : dflt;
}

bool dt_rule_arg_bool(const struct dt_rule_fill *f, const char *name, bool dflt)
{
	const struct dt_arg *a = arg_named(f, name);
	return a && a->kind == DT_ARG_BOOL ? a->v.b : dflt;
}

/* A Scalar argument as a double, or `dflt` when absent. */
double dt_rule_arg_number(const struct dt_rule_fill *f, const char *name,
			  double dflt)
{
	const struct dt_arg *a = arg_named(f, name);
	if (!a)
		return dflt;
	switch (a->kind) {
	case DT_ARG_INT:
		return (double)a->v.i;
	case DT_ARG_FLOAT:
		return a->v.f;
	case DT_ARG_BOOL:
		return a->v.b;
	default:
		return dflt;
	}
}

/* An int[] argument (a single int counts as one); -1 when absent. */
int dt_rule_arg_ints(const struct dt_rule_fill *f, const char *name, int64_t *v,
		     int cap)
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
			const struct dt_arg *item =
			    &f->m->args.data[a->v.first + k];
			if (item->kind == DT_ARG_INT)
				v[n++] = item->v.i;
		}
		return n;
	}
	return -1;
}

/* PyTorch's maybe_wrap_dim (rank 0 behaves as rank 1); -1 if out of range. */
int dt_rule_wrap_dim(int64_t d, int rank)
{
	int64_t r = rank > 0 ? rank : 1;
	if (d < -r || d >= r)
		return -1;
	return (int)(d < 0 ? d + r : d);
}

/* One row per op in `ops`: every output P(op), the inputs in `mask` (a bit
 * per input among the first 64, or DT_ALL_INPUTS) P(op), the others R. */
void dt_rule_partial_rows(struct dt_rule_fill *f, unsigned ops, uint64_t mask)
{
	for (int op = 0; op < DT_NREDUCE; op++) {
		if (!(ops & (1u << op)))
			continue;
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		for (uint32_t k = 0; k < f->r->nout; k++)
			e[k] = dt_rule_partial(op);
		for (uint32_t i = 0; i < f->r->nin; i++)
			if (mask == DT_ALL_INPUTS ||
			    (i < 64 && (mask & (1ull << i))))
				*dt_rule_in_entry(f, e, i) =
				    dt_rule_partial(op);
	}
}

/* Partial rows through every output from input 0 alone (views, copies). */
void dt_rule_partial_through_first(struct dt_rule_fill *f, unsigned ops)
{
	if (f->r->nin >= 1)
		dt_rule_partial_rows(f, ops, 1);
}

/* A row sharding every output on out_dim and input 0 on in_dim. */
void dt_rule_shard_row(struct dt_rule_fill *f, int out_dim, int in_dim,
		       uint8_t flags)
{
	struct dt_rule_entry *e = dt_rule_row_add(f, flags);
	for (uint32_t k = 0; k < f->r->nout; k++)
		e[k] = dt_rule_shard(out_dim);
	*dt_rule_in_entry(f, e, 0) = dt_rule_shard(in_dim);
}

/* ------------------------------------------------------------------ */
/* pointwise */

/* Input i's dim aligned (right-aligned broadcasting) with output dim d
 * and not broadcast there, or -1. */
int dt_rule_aligned_dim(const struct dt_rule_fill *f, uint32_t i, int d)
{
	const struct dt_rule_tensor *in = dt_rule_in(f, i),
				    *out = dt_rule_out(f, 0);
	int j = d - (out->rank - in->rank);
	if (j < 0 || in->shape[j] != out->shape[d])
		return -1;
	return j;
}

static void pointwise(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	uint32_t nin = f->r->nin;
	if (nin == 0)
		return;
	int rank = dt_rule_out(f, 0)->rank;
	for (int d = 0; d < rank; d++) {
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		bool any = false;
		for (uint32_t k = 0; k < f->r->nout; k++)
			e[k] = dt_rule_shard(d);
		for (uint32_t i = 0; i < nin; i++) {
			int j = dt_rule_aligned_dim(f, i, d);
			if (j >= 0) {
				*dt_rule_in_entry(f, e, i) = dt_rule_shard(j);
				any = true;
			}
		}
		if (!any)
			dt_rule_row_drop(f);
	}
	bool self_tensor = f->param_input[0] == 0;
	switch (v) {
	case DT_VARIANT_LINEAR:
		dt_rule_partial_rows(
		    f, nin == 2 ? DT_OPS_SUM_AVG : 1u << DT_REDUCE_AVG,
		    DT_ALL_INPUTS);
		break;
	case DT_VARIANT_MUL:
		dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1);
		if (nin == 2)
			dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 2);
		break;
	case DT_VARIANT_DIV:
		if (self_tensor)
			dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1);
		break;
	case DT_VARIANT_SHIFT:
		dt_rule_partial_rows(f, DT_OPS_AVG_MAX_MIN, 1);
		break;
	case DT_VARIANT_AFFINE:
		dt_rule_partial_rows(f, 1u << DT_REDUCE_AVG, 1);
		break;
	case DT_VARIANT_SCALE:
		dt_rule_partial_rows(f,
				     dt_rule_arg_number(f, "other", 0) > 0
					 ? DT_OPS_ALL
					 : DT_OPS_SUM_AVG,
				     1);
		break;
	case DT_VARIANT_COPY: {
		enum dt_dtype from = dt_rule_in(f, 0)->dtype,
			      to = dt_rule_out(f, 0)->dtype;
		if (from == to || (dt_dtype_is_float(to) && from != DT_BOOL))
			dt_rule_partial_rows(f, DT_OPS_ALL, 1);
		break;
	}
	case DT_VARIANT_NEG:
		dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1);
		break;
	case DT_VARIANT_MONOTONE:
		dt_rule_partial_rows(f, DT_OPS_MAX_MIN, 1);
		break;
	case DT_VARIANT_MAXMIN:
		if (nin == 2)
			dt_rule_partial_rows(f,
					     f->r->op == DT_OP_MAXIMUM
						 ? 1u << DT_REDUCE_MAX
						 : 1u << DT_REDUCE_MIN,
					     3);
		break;
	case DT_VARIANT_WHERE:
		if (nin == 3)
			dt_rule_partial_rows(f, DT_OPS_ALL, 6);
		break;
	case DT_VARIANT_MASKED_FILL:
		if (self_tensor)
			dt_rule_partial_rows(f, DT_OPS_AVG_MAX_MIN, 1);
		break;
	case DT_VARIANT_ADDC:
		if (nin == 3) {
			dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 3);
			if (f->r->op == DT_OP_ADDCMUL)
				dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 5);
		}
		break;
	case DT_VARIANT_GRAD:
		if (self_tensor)
			dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------ */
/* reduction */

static void reduction(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	const struct dt_rule_tensor *in = dt_rule_in(f, 0);
	bool reduced[DT_MAX_RANK] = {false};
	int64_t dims[DT_MAX_RANK];
	int nd = dt_rule_arg_ints(f, "dim", dims, DT_MAX_RANK);
	for (int d = 0; d < in->rank; d++)
		reduced[d] = nd <= 0;
	for (int i = 0; i < nd; i++) {
		int d = dt_rule_wrap_dim(dims[i], in->rank);
		if (d >= 0 && d < in->rank)
			reduced[d] = true;
	}
	bool keepdim = dt_rule_arg_bool(f, "keepdim", false);
	int result = v == DT_VARIANT_SUM    ? DT_REDUCE_SUM
		     : v == DT_VARIANT_MEAN ? DT_REDUCE_AVG
		     : v == DT_VARIANT_AMAX ? DT_REDUCE_MAX
		     : v == DT_VARIANT_AMIN ? DT_REDUCE_MIN
					    : -1;
	int out_dim = 0;
	for (int d = 0; d < in->rank; d++) {
		if (!reduced[d]) {
			dt_rule_shard_row(f, out_dim++, d, 0);
			continue;
		}
		if (keepdim)
			out_dim++;
		if (result < 0)
			continue;
		uint8_t flags =
		    v == DT_VARIANT_MEAN ? DT_ROW_EVEN
		    : result == DT_REDUCE_MAX || result == DT_REDUCE_MIN
			? DT_ROW_NONEMPTY
			: 0;
		struct dt_rule_entry *e = dt_rule_row_add(f, flags);
		for (uint32_t k = 0; k < f->r->nout; k++)
			e[k] = dt_rule_partial(result);
		*dt_rule_in_entry(f, e, 0) = dt_rule_shard(d);
	}
	if (v == DT_VARIANT_SUM || v == DT_VARIANT_MEAN)
		dt_rule_partial_through_first(f, DT_OPS_SUM_AVG);
	else if (result >= 0)
		dt_rule_partial_through_first(f, 1u << result);
}

/* ------------------------------------------------------------------ */
/* matmul */

/* Output dim d of a bias-like input i broadcast to the output: S*(j) of
 * its aligned dim, or R where it is broadcast. */
static struct dt_rule_entry follow(const struct dt_rule_fill *f, int i, int d)
{
	int j = i < 0 ? -1 : dt_rule_aligned_dim(f, (uint32_t)i, d);
	return j >= 0 ? dt_rule_shard(j)
		      : (struct dt_rule_entry){.kind = DT_RULE_REPLICATE};
}

/* The matrix-product rows over inputs a (…, M, K) and b (…, K, N) with
 * `batch` leading batch dims; `bias` is the added input or -1. */
static void matmul_rows(struct dt_rule_fill *f, int bias, int a, int b,
			int batch)
{
	int m = batch, k = batch + 1, n = batch + 1;
	struct dt_rule_entry *e;
	if (batch) {
		e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_shard(0);
		*dt_rule_in_entry(f, e, (uint32_t)a) = dt_rule_shard(0);
		*dt_rule_in_entry(f, e, (uint32_t)b) = dt_rule_shard(0);
		if (bias >= 0)
			*dt_rule_in_entry(f, e, (uint32_t)bias) =
			    follow(f, bias, 0);
	}
	e = dt_rule_row_add(f, 0);
	e[0] = dt_rule_shard(m);
	*dt_rule_in_entry(f, e, (uint32_t)a) = dt_rule_shard(m);
	if (bias >= 0)
		*dt_rule_in_entry(f, e, (uint32_t)bias) = follow(f, bias, m);
	e = dt_rule_row_add(f, 0);
	e[0] = dt_rule_shard(n);
	*dt_rule_in_entry(f, e, (uint32_t)b) = dt_rule_shard(n);
	if (bias >= 0)
		*dt_rule_in_entry(f, e, (uint32_t)bias) = follow(f, bias, n);
	e = dt_rule_row_add(f, 0);
	e[0] = dt_rule_partial(DT_REDUCE_SUM);
	*dt_rule_in_entry(f, e, (uint32_t)a) = dt_rule_shard(k);
	*dt_rule_in_entry(f, e, (uint32_t)b) = dt_rule_shard(batch);
	if (bias >= 0)
		*dt_rule_in_entry(f, e, (uint32_t)bias) =
		    dt_rule_partial(DT_REDUCE_SUM);
	uint64_t with_bias = bias >= 0 ? 1ull << bias : 0;
	dt_rule_partial_rows(f, DT_OPS_SUM_AVG, with_bias | 1ull << a);
	dt_rule_partial_rows(f, DT_OPS_SUM_AVG, with_bias | 1ull << b);
}

static void matmul(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	bool added = v == DT_VARIANT_ADDMM || v == DT_VARIANT_BADDBMM;
	bool batched = v == DT_VARIANT_BMM || v == DT_VARIANT_BADDBMM;
	int bias = added ? dt_rule_input_of(f, "self") : -1;
	int a =
	    dt_rule_input_of(f, added ? (batched ? "batch1" : "mat1") : "self");
	int b =
	    dt_rule_input_of(f, added ? (batched ? "batch2" : "mat2") : "mat2");
	if (a < 0 || b < 0 || (added && bias < 0))
		return;
	matmul_rows(f, bias, a, b, batched);
}

/* ------------------------------------------------------------------ */


/* Appends the input read at args index `arg` or refs index `ref`. */
static void add_input(struct dt_rule_fill *f, int param, uint32_t node,
		      uint32_t arg, uint32_t ref)
{
	const struct dt_node *src = dt_node_get(f->m, node);
	struct dt_rule_tensor t = {
	    .node = node, .arg = arg, .ref = ref, .param = (uint8_t)param};
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

static void collect_inputs(struct dt_rule_fill *f)
{
	const struct dt_op_info *op = dt_op_get(f->r->op);
	for (int p = 0; p < op->nparams; p++) {
		const struct dt_arg *a = f->args.arg[p];
		if (!a)
			continue;
		uint32_t at = (uint32_t)(a - f->m->args.data);
		if (op->params[p].kind == DT_PARAM_TENSOR &&
		    a->kind == DT_ARG_NODE)
			add_input(f, p, a->v.node, at, 0);
		if (op->params[p].kind != DT_PARAM_TENSORS)
			continue;
		for (uint32_t k = 0; k < a->len; k++) {
			if (a->kind == DT_ARG_NODES) {
				uint32_t ref = a->v.first + k;
				add_input(f, p, f->m->refs.data[ref],
					  UINT32_MAX, ref);
			} else if (a->kind == DT_ARG_ITEMS) {
				const struct dt_arg *item =
				    &f->m->args.data[a->v.first + k];
				if (item->kind == DT_ARG_NODE)
					add_input(f, p, item->v.node,
						  a->v.first + k, 0);
			}
		}
	}
}

static bool entry_equal(const struct dt_rule_entry *a,
			const struct dt_rule_entry *b)
{
	return a->kind == b->kind && a->reduce == b->reduce &&
	       a->dim == b->dim && a->split == b->split;
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
		for (uint32_t j = 0; j < kept && !seen; j++) {
			seen = r->flags.data[j] == r->flags.data[i];
			for (uint32_t k = 0; k < w && seen; k++)
				seen = entry_equal(&e[j * w + k], &e[i * w + k]);
		}
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
		return dt_fail_message(err, errlen, "%s has no sharding rule",
			    n->kind == DT_NODE_CALL
				? dt_str_get(m, n->target)
				: "a placeholder, constant or output");
	struct dt_diag quiet;
	dt_diag_init_quiet(&quiet);
	struct dt_rule_fill f = {.m = m, .n = n, .r = r};
	if (dt_op_bind(m, n, &f.args, &quiet) != DT_OK)
		return dt_fail_message(err, errlen, "the arguments of %s do not bind",
			    dt_str_get(m, n->target));
	for (int p = 0; p < DT_MAX_PARAMS; p++)
		f.param_input[p] = -1;
	for (uint32_t k = 0; k < n->ntensors; k++) {
		const struct dt_tensor *meta = dt_node_tensor(m, n, (int)k);
		int rank;
		const int64_t *shape = dt_ints_get(m, meta->shape, &rank);
		struct dt_rule_tensor t = {.node = node,
					   .param = (uint8_t)k,
					   .dtype = meta->dtype,
					   .rank = (uint8_t)rank};
		memcpy(t.shape, shape, (size_t)rank * sizeof *shape);
		dt_vec_push(&r->tensors, t);
		r->nout++;
	}
	collect_inputs(&f);
	if (r->nout + r->nin > DT_RULE_MAX_TENSORS)
		return dt_fail_message(err, errlen,
			    "%s has %u tensors; rules hold at most %d",
			    dt_str_get(m, n->target), r->nout + r->nin,
			    DT_RULE_MAX_TENSORS);
	f.width = r->nout + r->nin;
	enum dt_rule_variant v = (enum dt_rule_variant)table[r->op].variant;
	if (r->nout == 0)
		return DT_OK;
	switch ((enum family)table[r->op].family) {
	case FAMILY_POINTWISE:
		pointwise(&f, v);
		break;
	case FAMILY_REDUCTION:
		reduction(&f, v);
		break;
	case FAMILY_MATMUL:
		matmul(&f, v);
		break;
	case FAMILY_VIEW:
		dt_rule_view(&f);
		break;
	case FAMILY_PERMUTE:
		dt_rule_permute(&f);
		break;
	case FAMILY_EXPAND:
		dt_rule_expand(&f);
		break;
	case FAMILY_DIMMAP:
		dt_rule_dimmap(&f);
		break;
	case FAMILY_SLICE:
	case FAMILY_SPLIT:
		dt_rule_slice(&f);
		break;
	case FAMILY_JOIN:
		dt_rule_join(&f);
		break;
	case FAMILY_PAD:
		dt_rule_pad(&f);
		break;
	case FAMILY_SLICE_BACKWARD:
		dt_rule_slice_backward(&f);
		break;
	case FAMILY_SOFTMAX:
		dt_rule_softmax(&f, v);
		break;
	case FAMILY_LAYER_NORM:
		dt_rule_layer_norm(&f, v);
		break;
	case FAMILY_EMBEDDING:
		dt_rule_embedding(&f, v);
		break;
	case FAMILY_NLL_LOSS:
		dt_rule_nll_loss(&f, v);
		break;
	case FAMILY_LIKE:
		dt_rule_like(&f);
		break;
	case FAMILY_TRIANGLE:
		dt_rule_triangle(&f);
		break;
	case FAMILY_INDEX:
		dt_rule_index(&f);
		break;
	case FAMILY_MSE_LOSS:
		dt_rule_mse_loss(&f, v);
		break;
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
	case DT_RULE_REPLICATE:
		return snprintf(buf, n, "R");
	case DT_RULE_PARTIAL:
		return snprintf(buf, n, "P(%s)",
				dt_reduce_name((enum dt_reduce_op)e->reduce));
	case DT_RULE_SHARD:
		return snprintf(buf, n, "S*(%d)", e->dim);
	case DT_RULE_STRIDED:
		if (e->split > 1)
			return snprintf(buf, n, "_S(%d,%d)", e->dim, (int)e->split);
		return snprintf(buf, n, "S(%d)", e->dim);
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
		int w = snprintf(buf + (len < n ? len : n),
				 len < n ? n - len : 0, "%s%s", sep, one);
		len += (size_t)w;
	}
	if (r->nin == 0)
		len += (size_t)snprintf(buf + (len < n ? len : n),
					len < n ? n - len : 0, " <- ");
	return (int)len;
}
