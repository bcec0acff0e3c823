// SPDX-License-Identifier: MIT
/* lower_redistribute_padding.c: the dt.* ops and compute nodes on padded
 * values in the SPMD programs of `lower-redistribute` (semantics §7). An
 * unevenly sharded value is the largest shard of any rank, the rank's own
 * shard in the leading part of each dim and unspecified padding after it.
 * An op that maps each element of a padded dim to the same position of
 * its result (elementwise ops, mse_loss_backward once its mean counts
 * the global elements, dim moves, empty/zeros/ones/full_like,
 * reductions and contractions over other dims, softmax and layer norm
 * over other dims, slicing, selecting, splitting and squeezing other
 * dims, whole slices, slice_backward along other dims, select_backward,
 * cat and stack of equally padded inputs along other dims, views and
 * expands that keep the padded dim whole) keeps padding in padding. A
 * view merging a padded dim into the dims before it gets dt.pack_pieces
 * after it, one splitting it dt.unpack_pieces before it, when the rank's
 * elements line up (lower_redistribute_pieces.c). A reduction over a
 * padded dim would read padding into valid results: sum and the
 * contraction of mm / bmm / addmm / baddbmm get the input's padding
 * zeroed first, amax / max (amin / min)
 * of a float input filled with -inf (+inf), by a dt.local_shard from its
 * placements to themselves with that fill; so do embedding's indices (a
 * weight padded in its columns only gives the result's columns that
 * padding) and embedding_dense_backward's gradient and indices (0: the
 * padding looks up, and adds zeros to, row 0), and nll_loss's target
 * padded in the batch dim (its ignore_index: padded rows are skipped):
 *
 *   h = aten.mm(a, w)  (a: [4, 7]{K padded}, w: [7, 8]{K padded})
 *   →  h.local_shard = dt.local_shard(a, 'world', 'R S(1)', 'R S(1)',
 *                                       [8, 13])
 *      h.local_shard.2 = dt.local_shard(w, ...)
 *      h = aten.mm(h.local_shard, h.local_shard.2)
 *
 * Every other op reading across a padded dim (mean, argmax, var, softmax
 * or layer norm over it, other views that merge or split it, slicing or
 * squeezing it, cat along it, indexing, other losses, …) is refused,
 * naming the node and input, with the advice to lower per rank.
 * O(args · mesh size) per node. */
#include "lower_redistribute_internal.h"

#include <math.h>
#include <string.h>

static struct dt_arg str_arg(struct dt_module *m, const char *s)
{
	return (struct dt_arg){.kind = DT_ARG_STR, .v.s = dt_str_intern(m, s)};
}

/* Args of a dt.* op (ops.def): x, the mesh, placements a and b, the
 * global shape, the op's own nmid args (blocks: dim; all_permute: perm,
 * group), the orders and local_shard's fill (left out when default).
 * Returns the count. */
static uint32_t spmd_args(struct dt_lower *l, int mesh, uint32_t x,
			  const struct dt_placements *a,
			  const struct dt_placements *b, const int64_t *g,
			  int rank, const struct dt_arg *mid, uint32_t nmid,
			  double fill, struct dt_arg *args)
{
	const struct dt_mesh *me = &l->m->meshes.data[mesh];
	const struct dt_placements *pl[2] = {a, b};
	char buf[320];
	uint32_t n = 0, last = 0;
	args[n++] = (struct dt_arg){.kind = DT_ARG_NODE, .v.node = x};
	args[n++] = (struct dt_arg){.kind = DT_ARG_STR, .v.s = me->name};
	for (int i = 0; i < 2; i++) {
		dt_placements_print(pl[i], buf, sizeof buf);
		args[n++] = str_arg(l->m, buf);
	}
	args[n++] = (struct dt_arg){.kind = DT_ARG_INTS, .len = (uint32_t)rank,
				    .v.ints = dt_ints_intern(l->m, g, (size_t)rank)};
	for (uint32_t i = 0; i < nmid; i++)
		args[n++] = mid[i];
	last = n;
	for (int i = 0; i < 2; i++) {
		dt_placements_print_order(pl[i], me, &l->m->strings, buf,
					  sizeof buf);
		args[n++] = buf[0] ? str_arg(l->m, buf)
				   : (struct dt_arg){.kind = DT_ARG_NONE};
		if (buf[0])
			last = n;
	}
	if (fill != 0) {
		args[n++] = (struct dt_arg){.kind = DT_ARG_FLOAT, .v.f = fill};
		last = n;
	}
	return last;
}

/* pl with the S and _S of mesh dims of size 1 made R, the shard order of
 * the other mesh dims on their tensor dim closed up: the same indices on
 * every rank (a level of one chunk keeps the whole dim). A local_shard
 * step of the planner may shard a mesh dim before such a level that it
 * passes (R S(0) -> S(0) S(0) with mesh dim 1 of size 1), which without
 * the level is a refinement. */
static struct dt_placements unit_levels_dropped(const struct dt_mesh *me,
						const struct dt_placements *pl)
{
	struct dt_placements q = *pl;
	for (int m = 0; m < q.ndim; m++) {
		struct dt_placement *p = &q.p[m];
		if (me->shape[m] != 1 || (p->kind != DT_PL_SHARD &&
					  p->kind != DT_PL_STRIDED_SHARD))
			continue;
		for (int k = 0; k < q.ndim; k++)
			if ((q.p[k].kind == DT_PL_SHARD ||
			     q.p[k].kind == DT_PL_STRIDED_SHARD) &&
			    q.p[k].dim == p->dim && q.order_pos[k] > q.order_pos[m])
				q.order_pos[k]--;
		*p = (struct dt_placement){.kind = DT_PL_REPLICATE};
		q.order_pos[m] = 0;
	}
	return q;
}

uint32_t dt_lower_emit_spmd(struct dt_lower *l, enum dt_op op, int mesh,
			    uint32_t x, const struct dt_placements *a,
			    const struct dt_placements *b, const int64_t *g,
			    int rank, int dim, double fill)
{
	struct dt_arg args[9];
	const struct dt_mesh *me = &l->m->meshes.data[mesh];
	struct dt_placements a1 = unit_levels_dropped(me, a),
			     b1 = unit_levels_dropped(me, b);
	if (op == DT_OP_LOCAL_SHARD) {
		a = &a1;
		b = &b1;
	}
	struct dt_arg d = {.kind = DT_ARG_INT, .v.i = dim};
	uint32_t n = spmd_args(l, mesh, x, a, b, g, rank, &d, dim >= 0, fill,
			       args);
	const char *suffix = op == DT_OP_LOCAL_SHARD ? "local_shard"
			     : op == DT_OP_PACK_BLOCKS ? "pack" : "unpack";
	return dt_lower_emit(l, op, suffix, args, n);
}

uint32_t dt_lower_emit_move(struct dt_lower *l, int mesh, uint32_t x,
			    const struct dt_placements *a,
			    const struct dt_placements *b, const int64_t *g,
			    int rank, const int64_t *perm, int64_t n, int group)
{
	struct dt_arg args[9], mid[2] = {
		{.kind = DT_ARG_INTS, .len = (uint32_t)n},
		{.kind = DT_ARG_STR, .v.s = l->m->groups.data[group].name}};
	if (perm)
		mid[0].v.ints = dt_ints_intern(l->m, perm, (size_t)n);
	uint32_t count = spmd_args(l, mesh, x, a, b, g, rank, mid + !perm,
				   2 - !perm, 0, args);
	return perm ? dt_lower_emit(l, DT_OP_ALL_PERMUTE, "all_permute", args,
				    count)
		    : dt_lower_emit(l, DT_OP_ALL_TO_ALL_V, "all_to_all_v", args,
				    count);
}

unsigned dt_lower_padded_bits(const struct dt_mesh *me,
			      const struct dt_placements *pl, const int64_t *g,
			      int rank)
{
	if (dt_shard_even(me, pl, g, rank))
		return 0;
	int64_t max[DT_MAX_RANK], here[DT_MAX_RANK];
	dt_shard_shape(me, pl, -1, g, rank, max);
	unsigned bits = 0;
	for (int64_t pos = 0; pos < me->size; pos++) {
		dt_shard_shape(me, pl, pos, g, rank, here);
		for (int d = 0; d < rank; d++)
			if (here[d] < max[d])
				bits |= 1u << d;
	}
	return bits;
}

/* The padded dims of node x's value. */
static unsigned padded_dims(const struct dt_module *m, uint32_t x)
{
	const struct dt_sharding *sh = dt_node_sharding(m, dt_node_get(m, x));
	if (!sh || !sh->has_global_shape)
		return 0;
	int rank;
	const int64_t *g = dt_ints_get(m, sh->global_shape, &rank);
	return dt_lower_padded_bits(&m->meshes.data[sh->mesh], &sh->placements,
				    g, rank);
}

/* Bits of the dims named by int or int[] parameter p of a rank-`rank`
 * input; all dims when it is absent or none (a full reduction). */
static unsigned dims_param(const struct dt_bound_args *b,
			   const struct dt_module *m, int p, int rank)
{
	const struct dt_arg *a = b->arg[p];
	unsigned all = rank >= 32 ? ~0u : (1u << rank) - 1, bits = 0;
	int n = 1;
	const int64_t *v = NULL;
	if (!a || a->kind == DT_ARG_NONE)
		return all;
	if (a->kind == DT_ARG_INT)
		v = &a->v.i;
	else if (a->kind == DT_ARG_INTS)
		v = dt_ints_get(m, a->v.ints, &n);
	else
		return all;
	if (n == 0)
		return all; /* amax(dim=[]) and sum.dim_IntList([]) reduce all */
	for (int i = 0; i < n; i++) {
		int64_t d = v[i] < 0 ? v[i] + rank : v[i];
		if (d >= 0 && d < rank)
			bits |= 1u << d;
	}
	return bits;
}

/* The bit of the dim int parameter p names (0 when absent: the default
 * of every op that lets it be omitted). */
static unsigned dim_param(const struct dt_bound_args *b, int p, int rank)
{
	const struct dt_arg *a = b->arg[p];
	int64_t d = a && a->kind == DT_ARG_INT ? a->v.i : 0;
	d = d < 0 ? d + rank : d;
	return d >= 0 && d < rank ? 1u << d : 0;
}

/* Bits of the last k of `rank` dims. */
static unsigned last_dims(int k, int rank)
{
	unsigned bits = 0;
	for (int d = rank - k; d < rank; d++)
		if (d >= 0)
			bits |= 1u << d;
	return bits;
}

/* Whether a view or expand of a tensor of local shape in[0..rank) to the
 * local sizes of parameter 1 keeps each padded dim (bits) whole, at the
 * same place: for a view, in row-major order, an output dim of the same
 * size after the same number of elements; for an expand, which aligns
 * dims from the right and repeats the whole input along new leading
 * dims, the output dim as many dims from the end of the same size. Either
 * way element i of the dim stays element i. A padded dim of size 1 is
 * not kept (expand and squeeze would repeat or drop a rank's empty
 * shard). */
static bool keeps_padded(const struct dt_module *m,
			 const struct dt_bound_args *b, const int64_t *in,
			 int rank, unsigned bits, bool expand)
{
	const struct dt_arg *a = b->arg[1];
	int nout;
	if (!a || a->kind != DT_ARG_INTS)
		return false;
	const int64_t *out = dt_ints_get(m, a->v.ints, &nout);
	int64_t before_in = 1;
	for (int d = 0; d < rank; before_in *= in[d], d++) {
		if (!(bits & (1u << d)))
			continue;
		bool kept = false;
		int64_t before_out = 1;
		if (expand)
			kept = nout >= rank && out[d + nout - rank] == in[d];
		else
			for (int e = 0;
			     e < nout && before_out <= before_in && !kept;
			     before_out *= out[e], e++)
				kept = before_out == before_in &&
				       out[e] == in[d];
		kept = kept && in[d] > 1;
		if (!kept)
			return false;
	}
	return true;
}

/* Whether nodes x and y hold the same valid rows (dim 0) on every rank:
 * both sharded on one mesh with the same shard length of dim 0 per rank
 * (a shard is the leading part of its padded dim). */
static bool same_rows(const struct dt_module *m, uint32_t x, uint32_t y)
{
	const struct dt_sharding *sx = dt_node_sharding(m, dt_node_get(m, x)),
				 *sy = dt_node_sharding(m, dt_node_get(m, y));
	if (!sx || !sy || !sx->has_global_shape || !sy->has_global_shape ||
	    sx->mesh != sy->mesh)
		return false;
	int rx, ry;
	const int64_t *gx = dt_ints_get(m, sx->global_shape, &rx),
		      *gy = dt_ints_get(m, sy->global_shape, &ry);
	const struct dt_mesh *me = &m->meshes.data[sx->mesh];
	int64_t hx[DT_MAX_RANK], hy[DT_MAX_RANK];
	if (rx < 1 || ry < 1)
		return false;
	for (int64_t pos = -1; pos < me->size; pos++) { /* -1: the padded */
		dt_shard_shape(me, &sx->placements, pos, gx, rx, hx);
		dt_shard_shape(me, &sy->placements, pos, gy, ry, hy);
		if (hx[0] != hy[0])
			return false;
	}
	return true;
}

/* nll_loss_forward / backward on a 2-D self padded in the batch dim
 * only, parameter p of bound args b with padded dims `bits`: each row i
 * of self, target (and a per-row grad_output) feeds only row i of a
 * per-row result and is skipped when target[i] is ignore_index (no loss,
 * no weight, a zero gradient row; self is not read). So the target's
 * padding becomes ignore_index (DT_PAD_MASKED, *fill) and the padded rows of
 * self and grad_output are DT_PAD_CONFINED when they match the target's valid
 * rows on every rank: the local result is then exactly the rank's own
 * (any reduction: total_weight is an input of the backward). */
static enum dt_pad_use nll_rows(const struct dt_module *m, enum dt_op op,
			 const struct dt_bound_args *b, int p, unsigned bits,
			 double *fill)
{
	int self = op == DT_OP_NLL_LOSS_BACKWARD; /* after grad_output */
	const struct dt_arg *x = b->arg[self], *t = b->arg[self + 1],
			    *ig = b->arg[self + 4], *me = b->arg[p];
	int64_t ignore = ig && ig->kind == DT_ARG_INT ? ig->v.i : -100;
	int rank = 0;
	if (x && x->kind == DT_ARG_NODE)
		dt_ints_get(m, dt_node_tensor(m, dt_node_get(m, x->v.node),
					      0)->shape, &rank);
	if (bits != 1u || p > self + 1 || rank != 2 || !t ||
	    t->kind != DT_ARG_NODE || !same_rows(m, me->v.node, t->v.node))
		return DT_PAD_REFUSED;
	if (p != self + 1)
		return DT_PAD_CONFINED;
	/* int64 holds the fill exactly when a double does */
	const struct dt_tensor *tt =
		dt_node_tensor(m, dt_node_get(m, t->v.node), 0);
	if (tt->dtype != DT_INT64 || ignore < -(INT64_C(1) << 53) ||
	    ignore > INT64_C(1) << 53)
		return DT_PAD_REFUSED;
	*fill = (double)ignore;
	return DT_PAD_MASKED;
}

/* Whether aten.slice with bound args b keeps its dim whole (x[:, 0:] or
 * make_fx's x[:, :], end 2^63 - 1): start 0, step 1 and an end at or past
 * the input's global length. */
static bool whole_slice(const struct dt_module *m,
			const struct dt_bound_args *b)
{
	const struct dt_arg *x = b->arg[0], *st = b->arg[2], *en = b->arg[3],
			    *sp = b->arg[4];
	const struct dt_sharding *sh =
		x && x->kind == DT_ARG_NODE
			? dt_node_sharding(m, dt_node_get(m, x->v.node)) : NULL;
	if (!sh || !sh->has_global_shape)
		return false;
	int rank;
	const int64_t *g = dt_ints_get(m, sh->global_shape, &rank);
	int64_t d = b->arg[1] && b->arg[1]->kind == DT_ARG_INT ? b->arg[1]->v.i
							       : 0;
	d = d < 0 ? d + rank : d;
	return d >= 0 && d < rank &&
	       (!st || st->kind != DT_ARG_INT || st->v.i == 0) &&
	       (!sp || sp->kind != DT_ARG_INT || sp->v.i == 1) &&
	       (!en || en->kind != DT_ARG_INT || en->v.i >= g[d]);
}

/* How node n (op `op`, bound args b) reads the padded dims `bits` of its
 * parameter p, a tensor of local shape shape[0..rank) and dtype `dtype`;
 * for DT_PAD_MASKED, the identity in *fill. */
static enum dt_pad_use reads(const struct dt_module *m, enum dt_op op,
		      const struct dt_bound_args *b, int p, unsigned bits,
		      const int64_t *shape, int rank, enum dt_dtype dtype,
		      double *fill)
{
	unsigned across = 0; /* dims read across */
	bool sums = false, extremes = false;
	const struct dt_arg *ns;
	if (dt_op_has(op, DT_OPF_ELEMENTWISE))
		return DT_PAD_CONFINED;
	switch (op) {
	case DT_OP_PERMUTE: case DT_OP_TRANSPOSE: case DT_OP_T:
	case DT_OP_UNSQUEEZE: case DT_OP_ALIAS: case DT_OP_DETACH:
	case DT_OP_CLONE: case DT_OP_CONTIGUOUS: case DT_OP_LIFT_FRESH_COPY:
	case DT_OP_CONVERT_ELEMENT_TYPE: case DT_OP_TO_COPY: case DT_OP_GETITEM:
	case DT_OP_EMPTY_LIKE: case DT_OP_ZEROS_LIKE: case DT_OP_ONES_LIKE:
	case DT_OP_FULL_LIKE: /* read the shape only */
		return DT_PAD_CONFINED;
	case DT_OP_SUM: case DT_OP_SUM_DIM:
		sums = true;
		*fill = 0;
		/* fall through */
	case DT_OP_AMAX: case DT_OP_AMIN: case DT_OP_MAX: case DT_OP_MIN:
		if (!sums && dt_dtype_is_float(dtype)) {
			extremes = true;
			*fill = op == DT_OP_AMAX || op == DT_OP_MAX ? -INFINITY
								    : INFINITY;
		}
		/* fall through */
	case DT_OP_MEAN: case DT_OP_MEAN_DIM:
	case DT_OP_MAX_DIM: case DT_OP_MIN_DIM:
	case DT_OP_ARGMAX: case DT_OP_ARGMIN: case DT_OP_LOGSUMEXP:
	case DT_OP_VAR_CORRECTION: case DT_OP_VAR_MEAN_CORRECTION:
	case DT_OP_VAR_MEAN_DIM:
		across = op == DT_OP_SUM || op == DT_OP_MEAN ||
				 op == DT_OP_MAX || op == DT_OP_MIN
			 ? last_dims(rank, rank) /* all */
			 : dims_param(b, m, 1, rank);
		break;
	case DT_OP_MM: case DT_OP_ADDMM:
		p -= op == DT_OP_ADDMM;
		across = p < 0 ? 0 : p == 0 ? 1u << 1 : 1u << 0;
		sums = true;
		*fill = 0;
		break;
	case DT_OP_BMM: case DT_OP_BADDBMM:
		p -= op == DT_OP_BADDBMM;
		across = p < 0 ? 0 : p == 0 ? 1u << 2 : 1u << 1;
		sums = true;
		*fill = 0;
		break;
	case DT_OP_SOFTMAX: case DT_OP_LOG_SOFTMAX:
		across = dims_param(b, m, 1, rank);
		break;
	case DT_OP_SOFTMAX_BACKWARD: case DT_OP_LOG_SOFTMAX_BACKWARD:
		across = dims_param(b, m, 2, rank);
		break;
	case DT_OP_NATIVE_LAYER_NORM: case DT_OP_NATIVE_LAYER_NORM_BACKWARD:
		ns = b->arg[op == DT_OP_NATIVE_LAYER_NORM ? 1 : 2];
		across = last_dims(ns && ns->kind == DT_ARG_INTS ? (int)ns->len
								 : rank, rank);
		break;
	case DT_OP_SLICE: case DT_OP_NARROW: case DT_OP_SELECT:
	case DT_OP_UNBIND: case DT_OP_SQUEEZE_DIM:
		if (op == DT_OP_SLICE && whole_slice(m, b))
			return DT_PAD_CONFINED;
		across = dim_param(b, 1, rank);
		break;
	case DT_OP_SPLIT: case DT_OP_SPLIT_WITH_SIZES: case DT_OP_CHUNK:
	case DT_OP_SLICE_BACKWARD: /* zeros around grad in dim */
		across = dim_param(b, 2, rank);
		break;
	case DT_OP_SELECT_BACKWARD: /* grad lacks dim: every dim moves */
		return DT_PAD_CONFINED;
	case DT_OP_SQUEEZE_DIMS:
		across = dims_param(b, m, 1, rank);
		break;
	case DT_OP_SQUEEZE: /* every dim of size 1 */
		for (int d = 0; d < rank; d++)
			across |= shape[d] == 1 ? 1u << d : 0;
		break;
	case DT_OP_EMBEDDING: /* padded indices look up row 0 */
		*fill = 0;
		if (p == 1)
			return DT_PAD_MASKED;
		across = 1u << 0; /* the weight's rows; a column stays one */
		break;
	case DT_OP_EMBEDDING_DENSE_BACKWARD: /* rows of padding add 0 to row 0 */
		*fill = 0;
		return (p == 0 || p == 1) && b->arg[4] && !b->arg[4]->v.b
			       ? DT_PAD_MASKED
			       : DT_PAD_REFUSED;
	case DT_OP_VIEW: case DT_OP_UNSAFE_VIEW: case DT_OP_RESHAPE:
	case DT_OP_EXPAND:
		if (p == 0 && keeps_padded(m, b, shape, rank, bits,
					   op == DT_OP_EXPAND))
			return DT_PAD_CONFINED;
		return p == 0 && op != DT_OP_EXPAND ? DT_PAD_VIEWED : DT_PAD_REFUSED;
	case DT_OP_NLL_LOSS_FORWARD: case DT_OP_NLL_LOSS_BACKWARD:
		return nll_rows(m, op, b, p, bits, fill);
	case DT_OP_MSE_LOSS_BACKWARD: /* pointwise; a mean counts self's
					 elements, padding included, unless
					 lowering gave it the global count */
		return p == 1 && b->arg[3] && b->arg[3]->kind == DT_ARG_INT &&
			       b->arg[3]->v.i == 1
			   ? DT_PAD_REFUSED
			   : DT_PAD_CONFINED;
	default:
		return DT_PAD_REFUSED;
	}
	if (!(across & bits))
		return DT_PAD_CONFINED;
	return sums || extremes ? DT_PAD_MASKED : DT_PAD_REFUSED;
}

/* Whether cat (along dim k) or stack of the node list `list` keeps
 * padding in padding: all inputs on one mesh, none padded in dim k (cat),
 * and on every rank shards of the same length in every other dim (stack:
 * every dim), so each position of the result holds padding exactly where
 * its input does. */
static bool joins_confined(const struct dt_module *m, enum dt_op op,
			   const struct dt_arg *list, const struct dt_arg *dim)
{
	int64_t first[DT_MAX_RANK], here[DT_MAX_RANK];
	const struct dt_sharding *s0 = NULL;
	int r0 = 0;
	for (uint32_t i = 0; i < list->len; i++) {
		uint32_t x = m->refs.data[list->v.first + i];
		const struct dt_sharding *sh =
			dt_node_sharding(m, dt_node_get(m, x));
		if (!sh || !sh->has_global_shape || (s0 && sh->mesh != s0->mesh))
			return false;
		int rank;
		const int64_t *g = dt_ints_get(m, sh->global_shape, &rank);
		int64_t k = dim && dim->kind == DT_ARG_INT ? dim->v.i : 0;
		k = k < 0 ? k + rank : k;
		if (op == DT_OP_CAT && (k < 0 || k >= rank ||
					(padded_dims(m, x) & (1u << k))))
			return false;
		if (!s0) {
			s0 = sh;
			r0 = rank;
		}
		if (rank != r0)
			return false;
		const struct dt_mesh *me = &m->meshes.data[sh->mesh];
		const int64_t *g0 = dt_ints_get(m, s0->global_shape, NULL);
		for (int64_t pos = 0; pos < me->size; pos++) {
			dt_shard_shape(me, &s0->placements, pos, g0, rank, first);
			dt_shard_shape(me, &sh->placements, pos, g, rank, here);
			for (int d = 0; d < rank; d++)
				if (here[d] != first[d] &&
				    (op != DT_OP_CAT || d != k))
					return false;
		}
	}
	return true;
}

struct input {
	int p;          /* parameter */
	uint32_t arg;   /* index in m->args of its node arg */
	uint32_t node;  /* the local value */
	unsigned bits;  /* its padded dims */
	double fill;    /* DT_PAD_MASKED: what its padding becomes */
};

static int refuse(struct dt_lower *l, uint32_t id, const char *name,
		  const struct input *in)
{
	struct dt_module *m = l->m;
	const struct dt_sharding *sh =
		dt_node_sharding(m, dt_node_get(m, in->node));
	char p[160], g[160];
	int rank, d = 0;
	const int64_t *gs = dt_ints_get(m, sh->global_shape, &rank);
	size_t at = 0;
	for (int i = 0; i < rank && at < sizeof g; i++)
		at += (size_t)snprintf(g + at, sizeof g - at, "%s%lld",
				       i ? ", " : "[", (long long)gs[i]);
	if (at < sizeof g)
		snprintf(g + at, sizeof g - at, "]");
	while (!(in->bits & (1u << d)))
		d++;
	dt_placements_print(&sh->placements, p, sizeof p);
	const struct dt_node *n = dt_node_get(m, id);
	dt_node_error(l->ctx->diag, m, n,
		      "cannot lower %s for every rank at once (SPMD): its "
		      "input '%s' (%s shards of %s) is padded in dim %d on "
		      "some ranks (an SPMD program pads uneven shards to the "
		      "largest), and %s reads across that dim; lower per rank "
		      "instead (dtopt opt --rank R, or -o 'OUT.{rank}.xml')",
		      name, dt_str_get(m, dt_node_get(m, in->node)->name), p,
		      g, d, dt_op_get((enum dt_op)n->op)->target);
	return DT_EINPUT;
}

int dt_lower_padding(struct dt_lower *l, uint32_t id, int mesh,
		     const struct dt_placements *pl)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	struct dt_bound_args b;
	if (dt_op_bind(m, n, &b, l->ctx->diag) != DT_OK)
		return DT_EINPUT;
	struct input in[DT_MAX_PARAMS];
	int nin = 0, dim = -1;
	int64_t pieces = 1;
	enum dt_pad_use view = DT_PAD_CONFINED;
	char name[256];
	dt_lower_copy_name(m, id, name, sizeof name);
	for (int p = 0; p < b.nparams; p++) {
		const struct dt_arg *a = b.arg[p];
		if (!a || (a->kind != DT_ARG_NODE && a->kind != DT_ARG_NODES))
			continue;
		if (a->kind == DT_ARG_NODES) { /* cat, stack */
			bool joins = (n->op == DT_OP_CAT || n->op == DT_OP_STACK) &&
				     p == 0;
			if (joins && joins_confined(m, (enum dt_op)n->op, a,
						    b.arg[1]))
				continue;
			for (uint32_t i = 0; i < a->len; i++) {
				uint32_t x = m->refs.data[a->v.first + i];
				struct input one = {p, 0, x, padded_dims(m, x), 0};
				if (one.bits)
					return refuse(l, id, name, &one);
			}
			continue;
		}
		struct input one = {p, (uint32_t)(a - m->args.data), a->v.node,
				    padded_dims(m, a->v.node), 0};
		if (!one.bits)
			continue;
		int rank;
		const struct dt_tensor *t =
			dt_node_tensor(m, dt_node_get(m, one.node), 0);
		const int64_t *shape = dt_ints_get(m, t->shape, &rank);
		enum dt_pad_use u = reads(m, (enum dt_op)n->op, &b, p, one.bits, shape,
				   rank, (enum dt_dtype)t->dtype, &one.fill);
		if (u == DT_PAD_VIEWED)
			u = view = dt_lower_view_pieces(m, n, one.node, mesh, pl,
						       &dim, &pieces);
		if (u == DT_PAD_REFUSED)
			return refuse(l, id, name, &one);
		if (u == DT_PAD_MASKED || u == DT_PAD_UNPACK)
			in[nin++] = one;
	}
	l->before = id;
	l->base = name;
	l->line = n->line;
	if (view == DT_PAD_PACK)
		l->pieces = (struct dt_lower_pieces){id, dim, pieces};
	for (int i = 0; i < nin; i++) {
		const struct dt_sharding sh =
			*dt_node_sharding(m, dt_node_get(m, in[i].node));
		int rank;
		int64_t g[DT_MAX_RANK];
		const int64_t *gs = dt_ints_get(m, sh.global_shape, &rank);
		memcpy(g, gs, (size_t)rank * sizeof *g);
		uint32_t z = view == DT_PAD_UNPACK
			? dt_lower_emit_pieces(l, DT_OP_UNPACK_PIECES, sh.mesh,
				      in[i].node, &sh.placements, g, rank, dim,
				      pieces)
			: dt_lower_emit_spmd(l, DT_OP_LOCAL_SHARD, sh.mesh,
					     in[i].node, &sh.placements,
					     &sh.placements, g, rank, -1,
					     in[i].fill);
		if (!z)
			return DT_EINPUT;
		if (view != DT_PAD_UNPACK) /* unpacked: pieces, not a padded shard */
			dt_node_get(m, z)->sharding = dt_lower_add_sharding(
				l, sh.mesh, &sh.placements, g, rank);
		m->args.data[in[i].arg].v.node = z;
	}
	return DT_OK;
}
