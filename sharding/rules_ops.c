// SPDX-License-Identifier: MIT
/* sharding/rules_ops.c: the rule families of the masking, index and loss
 * ops real models add (sharding/rules.def: triangle, index — with gather,
 * scatter_add and repeat —, mse_loss).
 * Rows follow the ops' math (semantics §6); test_rules_exec checks each
 * by execution.
 *
 *   tril(x[2, 6, 6])  -> S*(0) <- S*(0); P(any) <- P(any)
 *   mse_loss(a[6, 4], b[6, 4], mean) -> P(avg) <- S*(d), S*(d) (even)
 *
 * Time: O(rank) rows per node. */
#include "rules_internal.h"

/* tril/triu: the mask depends on the row and column index within the
 * last two dims, so only the dims before them shard; zeros elsewhere
 * commute with every reduction, so partials pass. */
void dt_rule_triangle(struct dt_rule_fill *f)
{
	int rank = dt_rule_in(f, 0)->rank;
	for (int d = 0; d < rank - 2; d++)
		dt_rule_shard_row(f, d, d, 0);
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

/* repeat(self, repeats): a dim repeated once keeps its shard (self is
 * right-aligned with the result); tiles of a sharded dim would interleave
 * shards. Copies: partials pass. */
static void repeat_rows(struct dt_rule_fill *f)
{
	int64_t reps[DT_MAX_RANK];
	int n = dt_rule_arg_ints(f, "repeats", reps, DT_MAX_RANK);
	int rank = dt_rule_in(f, 0)->rank, lead = n - rank;
	for (int j = 0; j < rank && lead >= 0; j++)
		if (reps[j + lead] == 1)
			dt_rule_shard_row(f, j + lead, j, 0);
	dt_rule_partial_through_first(f, DT_OPS_ALL);
}

/* flip(self, dims) and cumsum(self, dim): a dim they do not run along
 * keeps its shard; a flipped dim would also reverse the order of shards,
 * a summed one carry across them. Partials pass through flip (a copy) and
 * cumsum's sum and avg (linear). */
static void along_rows(struct dt_rule_fill *f)
{
	int rank = dt_rule_in(f, 0)->rank;
	bool along[DT_MAX_RANK] = {false};
	int64_t dims[DT_MAX_RANK];
	int n = dt_rule_arg_ints(f, f->r->op == DT_OP_FLIP ? "dims" : "dim",
				 dims, DT_MAX_RANK);
	for (int i = 0; i < n; i++) {
		int d = dt_rule_wrap_dim(dims[i], rank);
		if (d < 0)
			return;
		along[d] = true;
	}
	for (int d = 0; d < rank; d++)
		if (!along[d])
			dt_rule_shard_row(f, d, d, 0);
	dt_rule_partial_through_first(
	    f, f->r->op == DT_OP_FLIP ? DT_OPS_ALL : DT_OPS_SUM_AVG);
}

/* gather(self, dim, index), scatter_add(self, dim, index, src) and
 * scatter.src / scatter.value: a dim other than `dim` shards self, index
 * (and src) together where their sizes agree; gather shards index's `dim`
 * against a replicated self; scatter_add adds each rank's slices of index
 * and src along `dim` into its partial self (P(sum)). Partials: gather
 * selects (P(any)), scatter_add adds (P(sum|avg) of self and src), the
 * other scatters write the same values on every rank (P(avg|max|min) of
 * self). */
static void gather_rows(struct dt_rule_fill *f)
{
	enum dt_op op = f->r->op;
	bool scatter = op != DT_OP_GATHER, add = op == DT_OP_SCATTER_ADD;
	const struct dt_rule_tensor *x = dt_rule_in(f, 0);
	int index = dt_rule_input_of(f, "index"),
	    src = dt_rule_input_of(f, "src");
	int dim = dt_rule_wrap_dim(dt_rule_arg_int(f, "dim", 0), x->rank);
	if (dim < 0 || index < 0 ||
	    (op != DT_OP_SCATTER_VALUE && scatter && src < 0))
		return;
	const struct dt_rule_tensor *ix = dt_rule_in(f, (uint32_t)index);
	const struct dt_rule_tensor *sv =
	    src >= 0 ? dt_rule_in(f, (uint32_t)src) : ix;
	if (ix->rank != x->rank || sv->rank != x->rank)
		return;
	for (int d = 0; d < x->rank; d++) {
		bool along = d == dim, same = ix->shape[d] == sv->shape[d];
		if (!along && (ix->shape[d] != x->shape[d] || !same))
			continue;
		if (along && (scatter ? !add || !same : false))
			continue;
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = along && add ? dt_rule_partial(DT_REDUCE_SUM)
				    : dt_rule_shard(d);
		*dt_rule_in_entry(f, e, 0) =
		    along ? (add ? dt_rule_partial(DT_REDUCE_SUM)
				 : (struct dt_rule_entry){
					   .kind = DT_RULE_REPLICATE})
			  : dt_rule_shard(d);
		*dt_rule_in_entry(f, e, (uint32_t)index) = dt_rule_shard(d);
		if (src >= 0)
			*dt_rule_in_entry(f, e, (uint32_t)src) =
			    dt_rule_shard(d);
	}
	if (add)
		dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1ull | 1ull << src);
	else if (scatter)
		dt_rule_partial_through_first(f, DT_OPS_AVG_MAX_MIN);
	else
		dt_rule_partial_through_first(f, DT_OPS_ALL);
}

/* index_select(self, dim, index): dims other than `dim` follow self (index
 * replicated); a sharded index selects a shard of the result's `dim`;
 * selection commutes with every reduction.
 * index_add(self, dim, index, source): dims other than `dim` follow self
 * and source; P(sum) <- self P(sum), index S*(0), source S*(dim) (each
 * rank adds its own slices); P(sum|avg) <- self P, index R, source P.
 * gather, the scatters, repeat, flip and cumsum: above. */
void dt_rule_index(struct dt_rule_fill *f)
{
	if (f->r->op == DT_OP_REPEAT) {
		repeat_rows(f);
		return;
	}
	if (f->r->op == DT_OP_FLIP || f->r->op == DT_OP_CUMSUM) {
		along_rows(f);
		return;
	}
	if (f->r->op == DT_OP_GATHER || f->r->op == DT_OP_SCATTER_ADD ||
	    f->r->op == DT_OP_SCATTER_SRC || f->r->op == DT_OP_SCATTER_VALUE) {
		gather_rows(f);
		return;
	}
	const struct dt_rule_tensor *x = dt_rule_in(f, 0);
	int dim = dt_rule_wrap_dim(dt_rule_arg_int(f, "dim", 0), x->rank);
	int index = dt_rule_input_of(f, "index"),
	    source = dt_rule_input_of(f, "source");
	bool add = f->r->op == DT_OP_INDEX_ADD;
	if (dim < 0 || index < 0 || (add && source < 0))
		return;
	for (int d = 0; d < x->rank; d++) {
		if (d == dim)
			continue;
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_shard(d);
		*dt_rule_in_entry(f, e, 0) = dt_rule_shard(d);
		if (add)
			*dt_rule_in_entry(f, e, (uint32_t)source) =
			    dt_rule_shard(d);
	}
	bool vector = dt_rule_in(f, (uint32_t)index)->rank == 1 && x->rank > 0;
	if (!add) {
		if (vector) {
			struct dt_rule_entry *e = dt_rule_row_add(f, 0);
			e[0] = dt_rule_shard(dim);
			*dt_rule_in_entry(f, e, (uint32_t)index) =
			    dt_rule_shard(0);
		}
		dt_rule_partial_through_first(f, DT_OPS_ALL);
		return;
	}
	int src_dim = dt_rule_in(f, (uint32_t)source)->rank > 1 ? dim : 0;
	if (vector && dt_rule_in(f, (uint32_t)source)->rank > 0) {
		struct dt_rule_entry *e = dt_rule_row_add(f, 0);
		e[0] = dt_rule_partial(DT_REDUCE_SUM);
		*dt_rule_in_entry(f, e, 0) = dt_rule_partial(DT_REDUCE_SUM);
		*dt_rule_in_entry(f, e, (uint32_t)index) = dt_rule_shard(0);
		*dt_rule_in_entry(f, e, (uint32_t)source) =
		    dt_rule_shard(src_dim);
	}
	dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1ull | 1ull << source);
}

enum { MSE_NONE, MSE_MEAN, MSE_SUM };

/* mse_loss(self, target, reduction): over the broadcast shape, a dim
 * shards both operands where they are not broadcast; the output is S*(d)
 * (none), P(sum) (sum) or P(avg) over even shards (mean: each rank's
 * mean of as many elements). No partial passes (a square).
 * mse_loss_backward(grad, self, target, reduction): pointwise over
 * (grad, self, target), a scalar grad (mean, sum) replicated; mean
 * scales by 2 / numel(self), which the local op would count on its
 * shard: lowering gives it the global count (DT_ROW_GLOBAL_COUNT). It is
 * linear in grad: P(sum|avg) <- grad P, R, R. */
void dt_rule_mse_loss(struct dt_rule_fill *f, enum dt_rule_variant v)
{
	int64_t reduction = dt_rule_arg_int(f, "reduction", MSE_MEAN);
	if (v == DT_VARIANT_GRAD) {
		int grad = dt_rule_input_of(f, "grad_output");
		if (grad < 0)
			return;
		int rank = dt_rule_out(f, 0)->rank;
		for (int d = 0; d < rank; d++) {
			struct dt_rule_entry *e = dt_rule_row_add(
			    f, reduction == MSE_MEAN ? DT_ROW_GLOBAL_COUNT : 0);
			bool any = false;
			e[0] = dt_rule_shard(d);
			for (uint32_t i = 0; i < f->r->nin; i++) {
				int j = dt_rule_aligned_dim(f, i, d);
				if (j >= 0) {
					*dt_rule_in_entry(f, e, i) =
					    dt_rule_shard(j);
					any = true;
				}
			}
			if (!any)
				dt_rule_row_drop(f);
		}
		dt_rule_partial_rows(f, DT_OPS_SUM_AVG, 1ull << grad);
		return;
	}
	if (f->r->nin != 2)
		return;
	const struct dt_rule_tensor *a = dt_rule_in(f, 0),
				    *b = dt_rule_in(f, 1);
	int rank = a->rank > b->rank ? a->rank : b->rank;
	for (int d = 0; d < rank; d++) {
		int ja = d - (rank - a->rank), jb = d - (rank - b->rank);
		int64_t sa = ja >= 0 ? a->shape[ja] : 1,
			sb = jb >= 0 ? b->shape[jb] : 1;
		int64_t size = sa == 1 ? sb : sa;
		struct dt_rule_entry *e =
		    dt_rule_row_add(f, reduction == MSE_MEAN ? DT_ROW_EVEN : 0);
		e[0] = reduction == MSE_NONE  ? dt_rule_shard(d)
		       : reduction == MSE_SUM ? dt_rule_partial(DT_REDUCE_SUM)
					      : dt_rule_partial(DT_REDUCE_AVG);
		bool any = false;
		if (ja >= 0 && sa == size) {
			*dt_rule_in_entry(f, e, 0) = dt_rule_shard(ja);
			any = true;
		}
		if (jb >= 0 && sb == size) {
			*dt_rule_in_entry(f, e, 1) = dt_rule_shard(jb);
			any = true;
		}
		if (!any)
			dt_rule_row_drop(f);
	}
}
