// SPDX-License-Identifier: MIT
/* shape_index.c: shape functions of the ops that address elements by
 * index: tril/triu (by row and column), index_select, index_add,
 * repeat_interleave.Tensor, gather, scatter, repeat, flip and cumsum.
 * Their results are fresh tensors laid out as ATen's structured kernels
 * allocate them (checked against torch 1.13). */
#include "shape.h"

#include <string.h>

/* tril(self, diagonal) and triu: self's dtype and shape (rank >= 2). */
int dt_shape_triangle(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (t.rank < 2)
		return dt_shape_fail(c, "input tensor must have at least 2 dimensions");
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)t.dtype, t.shape, t.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* An index argument: a vector (or a 0-d tensor) of int64 or int32. */
static int index_arg(struct dt_shape_ctx *c, int p, const char *who,
		     struct dt_tinfo *idx)
{
	if (dt_shape_tensor(c, p, idx) != DT_OK)
		return DT_EINPUT;
	if (idx->rank > 1)
		return dt_shape_fail(c, "%s(): Index is supposed to be a vector", who);
	if (idx->dtype != DT_INT64 && idx->dtype != DT_INT32)
		return dt_shape_fail(c, "%s(): Expected dtype int32 or int64 for index", who);
	return DT_OK;
}

/* index_select(self, dim, index): self's shape with dim's size the number
 * of indices (a 0-d self stays 0-d). */
int dt_shape_index_select(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, idx;
	int64_t dim = 0;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    index_arg(c, 2, "index_select", &idx) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	if (!dt_shape_wrap_dim(c, &dim, t.rank))
		return DT_EINPUT;
	int64_t n = dt_tinfo_numel(&idx);
	if (t.rank == 0 && n != 1)
		return dt_shape_fail(c, "index_select(): Index to scalar can have only 1 value, got %lld value(s)",
				     (long long)n);
	if (t.rank > 0)
		t.shape[dim] = n;
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)t.dtype, t.shape, t.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* index_add(self, dim, index, source, alpha): self's shape and dtype;
 * source has self's dtype and dims, with one slice along dim per index. */
int dt_shape_index_add(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, idx, src;
	int64_t dim = 0;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    index_arg(c, 2, "index_add_", &idx) != DT_OK ||
	    dt_shape_tensor(c, 3, &src) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	if (!dt_shape_wrap_dim(c, &dim, t.rank))
		return DT_EINPUT;
	if (src.dtype != t.dtype)
		return dt_shape_fail(c, "index_add_(): self (%s) and source (%s) must have the same scalar type",
				     dt_dtype_name((enum dt_dtype)t.dtype),
				     dt_dtype_name((enum dt_dtype)src.dtype));
	struct dt_scalar alpha;
	if (!dt_dtype_is_float((enum dt_dtype)t.dtype) && dt_shape_scalar(c, 4, &alpha) &&
	    alpha.kind == DT_ARG_FLOAT)
		return dt_shape_fail(c, "For integral input tensors, argument alpha must not be a floating point number.");
	int64_t n = dt_tinfo_numel(&idx);
	int64_t along = src.rank ? src.shape[src.rank > 1 ? dim : 0] : 1;
	if (along != n)
		return dt_shape_fail(c, "index_add_(): Number of indices (%lld) should be equal to source.size(dim): (%lld), for dim: %lld",
				     (long long)n, (long long)along, (long long)dim);
	struct dt_dimbuf b1, b2;
	bool dims_ok = t.rank <= 1 ? src.rank <= 1 : src.rank == t.rank;
	for (int d = 0; dims_ok && d < t.rank && t.rank > 1; d++)
		dims_ok = d == dim || src.shape[d] == t.shape[d];
	if (!dims_ok)
		return dt_shape_fail(c, "index_add_(): source %s does not match self %s outside dim %lld",
				     dt_dims_format(&b1, src.shape, src.rank),
				     dt_dims_format(&b2, t.shape, t.rank), (long long)dim);
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)t.dtype, t.shape, t.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* repeat_interleave.Tensor(repeats, output_size): [sum(repeats)] of
 * repeats' dtype. The sum depends on the values: it is output_size, or
 * the length the graph records (make_fx traces real values); the kernel
 * checks it at run time. */
int dt_shape_repeat_interleave(struct dt_shape_ctx *c)
{
	struct dt_tinfo rep;
	if (dt_shape_tensor(c, 0, &rep) != DT_OK)
		return DT_EINPUT;
	if (rep.rank != 1)
		return dt_shape_fail(c, "repeat_interleave only accept 1D vector as repeat");
	if (rep.dtype != DT_INT64 && rep.dtype != DT_INT32)
		return dt_shape_fail(c, "repeats must be int32 or int64, got %s",
				     dt_dtype_name((enum dt_dtype)rep.dtype));
	int64_t len = -1;
	const struct dt_node *n = dt_node_get(c->m, c->node);
	if (!dt_shape_int(c, 1, &len) && n->ntensors == 1) {
		const struct dt_tensor *have = dt_node_tensor(c->m, n, 0);
		int rank;
		const int64_t *shape = dt_ints_get(c->m, have->shape, &rank);
		if (rank == 1)
			len = shape[0];
	}
	if (len < 0)
		return dt_shape_fail(c, "the result's length is sum(repeats), known only at run time: give output_size or record the result's <tensor>");
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)rep.dtype, &len, 1);
	if (dt_shape_check_layout(c, &r) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* gather(self, dim, index) -> index's shape; scatter_add(self, dim, index,
 * src), scatter.src and scatter.value -> self's. Index is int64 with
 * self's number of dims, no larger than self outside dim (and than src
 * everywhere). */
int dt_shape_gather(struct dt_shape_ctx *c)
{
	enum dt_op op = dt_shape_op(c);
	bool scatter = op != DT_OP_GATHER, has_src = scatter && op != DT_OP_SCATTER_VALUE;
	struct dt_tinfo t, idx, src;
	int64_t dim = 0;
	if (dt_shape_tensor(c, 0, &t) != DT_OK || dt_shape_tensor(c, 2, &idx) != DT_OK)
		return DT_EINPUT;
	if (has_src && dt_shape_tensor(c, 3, &src) != DT_OK)
		return DT_EINPUT;
	if (!has_src)
		src = idx;
	const char *who = scatter ? "scatter" : "gather";
	dt_shape_int(c, 1, &dim);
	if (!dt_shape_wrap_dim(c, &dim, t.rank))
		return DT_EINPUT;
	if (idx.dtype != DT_INT64)
		return dt_shape_fail(c, "%s(): Expected dtype int64 for index", who);
	if (has_src && src.dtype != t.dtype)
		return dt_shape_fail(c, "scatter(): Expected self.dtype to be equal to src.dtype");
	int rank = t.rank ? t.rank : 1;
	if ((idx.rank ? idx.rank : 1) != rank || (scatter && (src.rank ? src.rank : 1) != rank))
		return dt_shape_fail(c, "Index tensor must have the same number of dimensions as %s tensor",
				     scatter ? "self and src" : "input");
	struct dt_dimbuf b1, b2;
	for (int d = 0; d < idx.rank; d++) {
		if ((d != dim && t.rank && idx.shape[d] > t.shape[d]) ||
		    (scatter && src.rank && idx.shape[d] > src.shape[d]))
			return dt_shape_fail(c, "Size does not match at dimension %d: index %s must be no larger than self %s apart from dimension %lld%s",
					     d, dt_dims_format(&b1, idx.shape, idx.rank),
					     dt_dims_format(&b2, t.shape, t.rank), (long long)dim,
					     scatter ? ", nor than src" : "");
	}
	struct dt_tinfo r = scatter ? dt_tinfo_contiguous((enum dt_dtype)t.dtype, t.shape, t.rank)
				    : dt_tinfo_contiguous((enum dt_dtype)t.dtype, idx.shape, idx.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* repeat(self, repeats): self (leading dims of 1 added) tiled repeats[d]
 * times along each dim; contiguous. */
int dt_shape_repeat(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t reps[DT_MAX_RANK];
	int n;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    dt_shape_ints(c, 1, reps, DT_MAX_RANK, &n) != DT_OK)
		return DT_EINPUT;
	if (n < t.rank)
		return dt_shape_fail(c, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
	int64_t shape[DT_MAX_RANK];
	for (int d = 0; d < n; d++) {
		int j = d - (n - t.rank);
		if (reps[d] < 0)
			return dt_shape_fail(c, "Trying to create tensor with negative dimension %lld",
					     (long long)reps[d]);
		int64_t size = j >= 0 ? t.shape[j] : 1;
		if (size && reps[d] > DT_MAX_ELEMENTS / size)
			return dt_shape_fail(c, "repeating a dim of size %lld %lld times exceeds 2^60 elements",
					     (long long)size, (long long)reps[d]);
		shape[d] = size * reps[d];
	}
	if (dt_shape_check_sizes(c, shape, n) != DT_OK)
		return DT_EINPUT;
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)t.dtype, shape, n);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* flip(self, dims): empty_like(self) (dense strides kept); each dim once. */
int dt_shape_flip(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dims[DT_MAX_RANK];
	int n;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    dt_shape_ints(c, 1, dims, DT_MAX_RANK, &n) != DT_OK)
		return DT_EINPUT;
	bool seen[DT_MAX_RANK] = {false};
	for (int i = 0; i < n; i++) {
		if (!dt_shape_wrap_dim(c, &dims[i], t.rank))
			return DT_EINPUT;
		if (t.rank && seen[dims[i]])
			return dt_shape_fail(c, "dim %lld appears multiple times in the list of dims",
					     (long long)dims[i]);
		if (t.rank)
			seen[dims[i]] = true;
	}
	dt_tinfo_like(&t, &t);
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* cumsum(self, dim, dtype): contiguous; the dtype given, else integral
 * and bool inputs accumulate in int64. */
int dt_shape_cumsum(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim = 0;
	enum dt_dtype dtype;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	if (!dt_shape_wrap_dim(c, &dim, t.rank))
		return DT_EINPUT;
	if (!dt_shape_dtype(c, 2, &dtype))
		dtype = dt_dtype_is_float((enum dt_dtype)t.dtype) ? (enum dt_dtype)t.dtype
								  : DT_INT64;
	struct dt_tinfo r = dt_tinfo_contiguous(dtype, t.shape, t.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}
