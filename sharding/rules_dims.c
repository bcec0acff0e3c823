// SPDX-License-Identifier: MIT
/* sharding/rules_dims.c: the rule families whose rows follow tensor dims
 * as they move (views, permutations, expand, unsqueeze and squeeze,
 * slices and splits, cat and stack, padding, slice backward) and the
 * neural-network ops (softmax, layer norm, embedding, nll loss, *_like),
 * with their backward forms. sharding/rules.def says what each writes.
 *
 *   view([4, 6, 5] -> [24, 5]): S*(0) <- S*(0) (even, S only: dims 0 and 1
 *   merge), _S(0,4) <- S*(1) (S only: the inner dim, one chunk per row),
 *   S*(1) <- S*(2), P(op) <- P(op)
 *
 * Time: O(rank · tensors) rows per node. */
#include "rules_internal.h"
#include "views.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* views and dim renumbering */

/* Next dim at or after d whose size is not 1, or rank. */
static int next_dim(const int64_t *shape, int rank, int d)
{
	while (d < rank && shape[d] == 1)
		d++;
	return d;
}

/* The rows of a block that merges dims [first, end) of the input into
 * output dim `other` (merge) or splits input dim `other` into dims
 * [first, end) of the output: a sharded inner dim behind outer dims of
 * product P is _S(other, P) of the merged dim (the rank's chunk of every
 * outer index, in order), and back. Only a dim with no larger-than-one dim
 * inside it may be uneven: a chunk of an inner dim covers whole rows of the
 * dims inside it only when it is even. */
static void strided_rows(struct dt_rule_fill *f, const int64_t *shape, int first,
			 int end, int other, bool merge)
{
	int64_t outer = shape[first];
	for (int d = first + 1; d < end; d++) {
		if (shape[d] == 1)
			continue;
		bool inner = next_dim(shape, end, d + 1) < end;
		uint8_t flags = DT_ROW_STRIDED | (inner ? DT_ROW_EVEN : 0);
		struct dt_rule_entry *e =
		    dt_rule_row_add(f, flags | (merge ? DT_ROW_PLAIN : 0));
		if (merge) {
			e[0] = dt_rule_strided(other, outer);
			*dt_rule_in_entry(f, e, 0) = dt_rule_shard(d);
		} else {
			/* S(d) itself: a placeholder would take the input's
			 * _S kind. */
			e[0] = dt_rule_strided(d, 1);
			*dt_rule_in_entry(f, e, 0) = dt_rule_strided(other, outer);
		}
		outer *= shape[d];
	}
}

/* The shard rows of a view: blocks of dims with equal products. */
static void view_blocks(struct dt_rule_fill *f)
{
	const struct dt_rule_tensor *in = dt_rule_in(f, 0),
				    *out = dt_rule_out(f, 0);
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
		dt_rule_shard_row(
		    f, first_b, first_a,
		    na == 1 && nb == 1 ? 0 : DT_ROW_EVEN | DT_ROW_PLAIN);
		if (nb == 1 && na > 1)
			strided_rows(f, in->shape, first_a, ia + 1, first_b, true);
		if (na == 1 && nb > 1)
			strided_rows(f, out->shape, first_b, ib + 1, first_a,
				     false);
		ia = next_dim(in->shape, in->rank, ia + 1);
		ib = next_dim(out->shape, out->rank, ib + 1);
	}
}

void dt_rule_view(struct dt_rule_fill *f)
{
	/* _reshape_alias and as_strided state strides: they are a view of
	 * the values only when those are the strides view() would give. */
	if ((f->r->op == DT_OP_RESHAPE_ALIAS || f->r->op == DT_OP_AS_STRIDED) &&
	    !dt_reshape_is_view(f->m, f->n))
		return;
	view_blocks(f);
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

void dt_rule_permute(struct dt_rule_fill *f)
{
	int rank = dt_rule_in(f, 0)->rank;
	int perm[DT_MAX_RANK];
	for (int d = 0; d < rank; d++)
		perm[d] = d;
	if (f->r->op == DT_OP_PERMUTE) {
		int64_t dims[DT_MAX_RANK];
		if (dt_rule_arg_ints(f, "dims", dims, DT_MAX_RANK) != rank)
			return;
		for (int d = 0; d < rank; d++)
			if ((perm[d] = dt_rule_wrap_dim(dims[d], rank)) < 0)
				return;
	} else if (f->r->op == DT_OP_TRANSPOSE || rank == 2) {
		int d0 =
		    f->r->op == DT_OP_T
			? 0
			: dt_rule_wrap_dim(dt_rule_arg_int(f, "dim0", 0), rank);
		int d1 =
		    f->r->op == DT_OP_T
			? 1
			: dt_rule_wrap_dim(dt_rule_arg_int(f, "dim1", 0), rank);
		if (d0 < 0 || d1 < 0 || rank == 0)
			return;
		perm[d0] = d1;
		perm[d1] = d0;
	}
	for (int d = 0; d < rank; d++)
		dt_rule_shard_row(f, d, perm[d], 0);
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

void dt_rule_expand(struct dt_rule_fill *f)
{
	for (int d = 0; d < dt_rule_out(f, 0)->rank; d++) {
		int j = dt_rule_aligned_dim(f, 0, d);
		if (j >= 0)
			dt_rule_shard_row(f, d, j, 0);
	}
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

void dt_rule_dimmap(struct dt_rule_fill *f)
{
	const struct dt_rule_tensor *in = dt_rule_in(f, 0);
	bool removed[DT_MAX_RANK] = {false};
	int inserted = -1;
	if (f->r->op == DT_OP_UNSQUEEZE) {
		inserted = dt_rule_wrap_dim(dt_rule_arg_int(f, "dim", 0),
					    in->rank + 1);
		if (inserted < 0)
			return;
	} else if (f->r->op == DT_OP_SQUEEZE) {
		for (int d = 0; d < in->rank; d++)
			removed[d] = in->shape[d] == 1;
	} else {
		int64_t dims[DT_MAX_RANK];
		int nd = dt_rule_arg_ints(f, "dim", dims, DT_MAX_RANK);
		for (int i = 0; i < nd; i++) {
			int d = dt_rule_wrap_dim(dims[i], in->rank);
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
		dt_rule_shard_row(f, out_dim++, d, flags);
	}
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

/* A slice.Tensor over all of its dim (start 0, end past it, step 1) is the
 * identity there, so that dim keeps its shard too (HF's repeat_kv writes
 * `x[:, :, None]`, which make_fx traces as such slices of every dim). */
static bool whole_slice(const struct dt_rule_fill *f, int dim)
{
	return f->r->op == DT_OP_SLICE && dim >= 0 &&
	       dt_rule_arg_int(f, "start", 0) == 0 &&
	       dt_rule_arg_int(f, "end", INT64_MAX) >=
		   dt_rule_in(f, 0)->shape[dim] &&
	       dt_rule_arg_int(f, "step", 1) == 1;
}

void dt_rule_slice(struct dt_rule_fill *f)
{
	int rank = dt_rule_in(f, 0)->rank;
	int dim = dt_rule_wrap_dim(dt_rule_arg_int(f, "dim", 0), rank);
	bool drops = f->r->op == DT_OP_SELECT || f->r->op == DT_OP_UNBIND;
	bool whole = whole_slice(f, dim);
	for (int d = 0; d < rank; d++)
		if (d != dim || whole)
			dt_rule_shard_row(f, drops && d > dim ? d - 1 : d, d,
					  0);
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

void dt_rule_join(struct dt_rule_fill *f)
{
	const struct dt_rule_tensor *out = dt_rule_out(f, 0);
	bool stack = f->r->op == DT_OP_STACK;
	int rank = out->rank - stack;
	for (uint32_t i = 0; i < f->r->nin; i++)
		if (dt_rule_in(f, i)->rank != rank)
			return;
	int dim = dt_rule_wrap_dim(dt_rule_arg_int(f, "dim", 0), out->rank);
	if (dim < 0)
		return;
	for (int d = 0; d < rank; d++) {
		if (!stack && d == dim)
			continue;
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_shard(stack && d >= dim ? d + 1 : d);
		for (uint32_t i = 0; i < f->r->nin; i++)
			*dt_rule_in_entry(f, e, i) = dt_rule_shard(d);
	}
	dt_rule_partial_rows(f, 1u << DT_REDUCE_SUM, DT_ALL_INPUTS);
}

void dt_rule_pad(struct dt_rule_fill *f)
{
	int rank = dt_rule_in(f, 0)->rank;
	int64_t pads[2 * DT_MAX_RANK];
	int np = dt_rule_arg_ints(f, "pad", pads, 2 * DT_MAX_RANK);
	bool padded[DT_MAX_RANK] = {false};
	for (int i = 0; 2 * i + 1 < np && i < rank; i++)
		padded[rank - 1 - i] = pads[2 * i] || pads[2 * i + 1];
	for (int d = 0; d < rank; d++)
		if (!padded[d])
			dt_rule_shard_row(f, d, d, 0);
	bool zero = dt_rule_arg_number(f, "value", 0) == 0;
	dt_rule_partial_through_first(f,
				      zero ? DT_OPS_ALL : DT_OPS_AVG_MAX_MIN);
}

void dt_rule_slice_backward(struct dt_rule_fill *f)
{
	int rank = dt_rule_out(f, 0)->rank;
	int dim = dt_rule_wrap_dim(dt_rule_arg_int(f, "dim", 0), rank);
	bool select = f->r->op == DT_OP_SELECT_BACKWARD;
	/* The backward of a whole slice (grad as long as the input) keeps
	 * that dim's shard, as the slice does. */
	bool whole = !select && dim >= 0 &&
		     dt_rule_in(f, 0)->shape[dim] == dt_rule_out(f, 0)->shape[dim];
	for (int d = 0; d < dt_rule_in(f, 0)->rank; d++) {
		int od = select && d >= dim ? d + 1 : d;
		if (od != dim || whole)
			dt_rule_shard_row(f, od, d, 0);
	}
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

/* ------------------------------------------------------------------ */
/* neural-network ops */

void dt_rule_softmax(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	int rank = dt_rule_in(f, 0)->rank;
	int dim = dt_rule_wrap_dim(dt_rule_arg_int(f, "dim", 0), rank);
	for (int d = 0; d < rank; d++) {
		if (d == dim)
			continue;
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_shard(d);
		for (uint32_t i = 0; i < f->r->nin; i++)
			*dt_rule_in_entry(f, e, i) = dt_rule_shard(d);
	}
	if (v == DT_VARIANT_GRAD)
		dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1);
}

void dt_rule_layer_norm(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	bool backward = v == DT_VARIANT_GRAD;
	int input = dt_rule_input_of(f, "input");
	int64_t normalized[DT_MAX_RANK];
	int nn =
	    dt_rule_arg_ints(f, "normalized_shape", normalized, DT_MAX_RANK);
	if (input < 0 || nn < 0)
		return;
	int axis = dt_rule_in(f, (uint32_t)input)->rank - nn;
	static const char *const sharded_fwd[] = {"input"};
	static const char *const sharded_bwd[] = {"grad_out", "input", "mean",
						  "rstd"};
	const char *const *names = backward ? sharded_bwd : sharded_fwd;
	int nnames = backward ? 4 : 1;
	for (int d = 0; d < axis; d++) {
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_shard(d);
		for (uint32_t k = 1; k < f->r->nout; k++)
			e[k] = backward ? dt_rule_partial(DT_REDUCE_SUM)
					: dt_rule_shard(d);
		for (int i = 0; i < nnames; i++) {
			int x = dt_rule_input_of(f, names[i]);
			if (x >= 0)
				*dt_rule_in_entry(f, e, (uint32_t)x) =
				    dt_rule_shard(d);
		}
	}
	if (backward && dt_rule_input_of(f, "grad_out") == 0)
		dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1);
}

void dt_rule_embedding(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	bool backward = v == DT_VARIANT_GRAD;
	int weight = dt_rule_input_of(f, backward ? "grad_output" : "weight");
	int indices = dt_rule_input_of(f, "indices");
	if (weight < 0 || indices < 0)
		return;
	int q = dt_rule_in(f, (uint32_t)indices)->rank;
	struct dt_rule_entry *e = dt_rule_row_add(f, 0);
	e[0] = dt_rule_shard(backward ? 1 : q);
	*dt_rule_in_entry(f, e, (uint32_t)weight) =
	    dt_rule_shard(backward ? q : 1);
	bool by_freq =
	    backward && dt_rule_arg_bool(f, "scale_grad_by_freq", false);
	for (int d = 0; d < q && !by_freq; d++) {
		e = dt_rule_row_add(f, 0);
		e[0] = backward ? dt_rule_partial(DT_REDUCE_SUM)
				: dt_rule_shard(d);
		*dt_rule_in_entry(f, e, (uint32_t)indices) = dt_rule_shard(d);
		if (backward)
			*dt_rule_in_entry(f, e, (uint32_t)weight) =
			    dt_rule_shard(d);
	}
	dt_rule_partial_rows(f, backward ? DT_OPS_SUM_AVG : DT_OPS_ALL,
			     1ull << weight);
}

enum { NLL_NONE, NLL_MEAN, NLL_SUM }; /* ATen's Reduction */

void dt_rule_nll_loss(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	bool backward = v == DT_VARIANT_GRAD;
	int self = dt_rule_input_of(f, "self"),
	    target = dt_rule_input_of(f, "target");
	int grad = backward ? dt_rule_input_of(f, "grad_output") : -1;
	if (self < 0 || target < 0 || dt_rule_in(f, (uint32_t)self)->rank != 2)
		return;
	int64_t reduction = dt_rule_arg_int(f, "reduction", NLL_MEAN);
	bool weighted = dt_rule_input_of(f, "weight") >= 0;
	if (backward) {
		if (grad < 0)
			return;
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_shard(0);
		*dt_rule_in_entry(f, e, (uint32_t)self) = dt_rule_shard(0);
		*dt_rule_in_entry(f, e, (uint32_t)target) = dt_rule_shard(0);
		if (reduction == NLL_NONE)
			*dt_rule_in_entry(f, e, (uint32_t)grad) =
			    dt_rule_shard(0);
		dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1ull << grad);
		return;
	}
	/* Forward: (output, total_weight). */
	if (reduction == NLL_NONE || reduction == NLL_SUM ||
	    (reduction == NLL_MEAN && !weighted)) {
		struct dt_rule_entry *e =
		    dt_rule_row_add(f, reduction == NLL_MEAN ? DT_ROW_EVEN : 0);
		if (reduction == NLL_NONE) {
			e[0] = dt_rule_shard(0);
		} else {
			e[0] = dt_rule_partial(reduction == NLL_SUM
						   ? DT_REDUCE_SUM
						   : DT_REDUCE_AVG);
			e[1] = dt_rule_partial(DT_REDUCE_SUM);
		}
		*dt_rule_in_entry(f, e, (uint32_t)self) = dt_rule_shard(0);
		*dt_rule_in_entry(f, e, (uint32_t)target) = dt_rule_shard(0);
	}
	for (int op = DT_REDUCE_SUM; op <= DT_REDUCE_AVG; op++) {
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_partial(op);
		*dt_rule_in_entry(f, e, (uint32_t)self) = dt_rule_partial(op);
	}
}

void dt_rule_like(struct dt_rule_fill *f)
{
	for (int d = 0; d < dt_rule_in(f, 0)->rank; d++)
		dt_rule_shard_row(f, d, d, 0);
	bool zeros =
	    f->r->op == DT_OP_ZEROS_LIKE || f->r->op == DT_OP_EMPTY_LIKE;
	dt_rule_partial_through_first(f,
				      zeros ? DT_OPS_ALL : DT_OPS_AVG_MAX_MIN);
	/* A partial input has the global shape on every rank; its values are
	 * not read: the result is replicated. */
	for (int op = DT_REDUCE_SUM; op <= DT_REDUCE_MIN; op++) {
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		*dt_rule_in_entry(f, e, 0) = dt_rule_partial(op);
	}
}
