// SPDX-License-Identifier: MIT
/* shape_reduce.c: shape functions of reductions (sum, mean, amax/amin,
 * max/min, argmax/argmin, logsumexp, var/var_mean). Results are fresh
 * contiguous tensors (ATen's resize_reduction); an empty or absent dim
 * list reduces every dim. */
#include "shape.h"

#include <string.h>

bool dt_reduction_of(enum dt_op op, struct dt_reduction *out)
{
	static const struct {
		enum dt_op op;
		struct dt_reduction r;
	} table[] = {
		{DT_OP_SUM, {DT_RED_SUM, -1, -1, false, false}},
		{DT_OP_SUM_DIM, {DT_RED_SUM, 1, 2, false, false}},
		{DT_OP_MEAN, {DT_RED_MEAN, -1, -1, false, false}},
		{DT_OP_MEAN_DIM, {DT_RED_MEAN, 1, 2, false, false}},
		{DT_OP_AMAX, {DT_RED_MAX, 1, 2, false, false}},
		{DT_OP_AMIN, {DT_RED_MIN, 1, 2, false, false}},
		{DT_OP_MAX, {DT_RED_MAX, -1, -1, false, false}},
		{DT_OP_MIN, {DT_RED_MIN, -1, -1, false, false}},
		{DT_OP_MAX_DIM, {DT_RED_MAX, 1, 2, true, true}},
		{DT_OP_MIN_DIM, {DT_RED_MIN, 1, 2, true, true}},
		{DT_OP_ARGMAX, {DT_RED_ARGMAX, 1, 2, true, false}},
		{DT_OP_ARGMIN, {DT_RED_ARGMIN, 1, 2, true, false}},
		{DT_OP_LOGSUMEXP, {DT_RED_LOGSUMEXP, 1, 2, false, false}},
		{DT_OP_VAR_CORRECTION, {DT_RED_VAR, 1, 3, false, false}},
		{DT_OP_VAR_MEAN_CORRECTION, {DT_RED_VAR, 1, 3, false, false}},
		{DT_OP_VAR_MEAN_DIM, {DT_RED_VAR, 1, 3, false, false}},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].op == op) {
			*out = table[i].r;
			return true;
		}
	}
	return false;
}

/* Marks the reduced dims of t from the int[] param p (p < 0: all). */
static int reduce_mask(struct dt_shape_ctx *c, const struct dt_tinfo *t, int p,
		       bool *mask)
{
	int64_t dims[2 * DT_MAX_RANK];
	int n = -1;
	if (p >= 0 && dt_shape_ints(c, p, dims, 2 * DT_MAX_RANK, &n) != DT_OK)
		return DT_EINPUT;
	memset(mask, 0, DT_MAX_RANK * sizeof(bool));
	if (n <= 0) {
		for (int d = 0; d < t->rank; d++)
			mask[d] = true;
		return DT_OK;
	}
	bool seen[DT_MAX_RANK + 1] = {false};
	for (int i = 0; i < n; i++) {
		if (!dt_shape_wrap_dim(c, &dims[i], t->rank))
			return DT_EINPUT;
		if (seen[dims[i]])
			return dt_shape_fail(c, "dim %lld appears multiple times in the list of dims",
					     (long long)dims[i]);
		seen[dims[i]] = true;
		if (t->rank > 0)
			mask[dims[i]] = true;
	}
	return DT_OK;
}

/* The contiguous result of reducing `mask` dims of t. */
static struct dt_tinfo reduced(const struct dt_tinfo *t, const bool *mask,
			       bool keepdim, enum dt_dtype dtype)
{
	struct dt_tinfo r = {0};
	r.dtype = (uint8_t)dtype;
	for (int d = 0; d < t->rank; d++) {
		if (!mask[d])
			r.shape[r.rank++] = t->shape[d];
		else if (keepdim)
			r.shape[r.rank++] = 1;
	}
	dt_tinfo_set_strides(&r, DT_MEMFMT_CONTIGUOUS);
	return r;
}

/* Common reading: self, the dims and keepdim params of the node's op
 * (dt_reduction_of). */
static int reduce_args(struct dt_shape_ctx *c, struct dt_tinfo *t, bool *mask,
		       bool *keepdim)
{
	struct dt_reduction r;
	DT_REQUIRE(dt_reduction_of(dt_shape_op(c), &r) && !r.one_dim);
	*keepdim = false;
	if (dt_shape_tensor(c, 0, t) != DT_OK ||
	    reduce_mask(c, t, r.pdims, mask) != DT_OK)
		return DT_EINPUT;
	if (r.pkeep >= 0)
		dt_shape_bool(c, r.pkeep, keepdim);
	return DT_OK;
}

/* sum.default(self, *, dtype) and sum.dim_IntList(self, dim, keepdim, *,
 * dtype): integers and bool sum to int64 unless dtype is given. */
int dt_shape_sum(struct dt_shape_ctx *c)
{
	bool all = dt_shape_op(c) == DT_OP_SUM;
	struct dt_tinfo t;
	bool mask[DT_MAX_RANK], keepdim;
	if (reduce_args(c, &t, mask, &keepdim) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype dt = (enum dt_dtype)t.dtype;
	if (!dt_shape_dtype(c, all ? 1 : 3, &dt) && !dt_dtype_is_float(dt))
		dt = DT_INT64;
	struct dt_tinfo r = reduced(&t, mask, keepdim, dt);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* mean.default / mean.dim: only floating dtypes. */
int dt_shape_mean(struct dt_shape_ctx *c)
{
	bool all = dt_shape_op(c) == DT_OP_MEAN;
	struct dt_tinfo t;
	bool mask[DT_MAX_RANK], keepdim;
	if (reduce_args(c, &t, mask, &keepdim) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype dt = (enum dt_dtype)t.dtype;
	bool given = dt_shape_dtype(c, all ? 1 : 3, &dt);
	if (!dt_dtype_is_float(dt))
		return dt_shape_fail(c, "mean(): could not infer output dtype. %s dtype must be either a floating point or complex dtype. Got: %s",
				     given ? "Optional" : "Input", dt_dtype_name(dt));
	struct dt_tinfo r = reduced(&t, mask, keepdim, dt);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* amax/amin(self, dim=[], keepdim) and max/min(self): the input dtype. */
int dt_shape_amax(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	bool mask[DT_MAX_RANK], keepdim;
	if (reduce_args(c, &t, mask, &keepdim) != DT_OK)
		return DT_EINPUT;
	for (int d = 0; d < t.rank; d++)
		if (mask[d] && t.shape[d] == 0)
			return dt_shape_fail(c, "Expected reduction dim %d to have non-zero size.",
					     d);
	struct dt_tinfo r = reduced(&t, mask, keepdim, (enum dt_dtype)t.dtype);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* The mask of one int dim param (for max.dim and argmax). */
static int one_dim(struct dt_shape_ctx *c, const struct dt_tinfo *t, int64_t dim,
		   bool *mask)
{
	memset(mask, 0, DT_MAX_RANK * sizeof(bool));
	if (!dt_shape_wrap_dim(c, &dim, t->rank))
		return DT_EINPUT;
	if (t->rank > 0) {
		if (t->shape[dim] == 0)
			return dt_shape_fail(c, "Expected reduction dim %lld to have non-zero size.",
					     (long long)dim);
		mask[dim] = true;
	}
	return DT_OK;
}

/* max.dim / min.dim(self, dim, keepdim) -> (values, indices int64). */
int dt_shape_max_dim(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	bool mask[DT_MAX_RANK], keepdim = false;
	int64_t dim;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	dt_shape_bool(c, 2, &keepdim);
	if (one_dim(c, &t, dim, mask) != DT_OK)
		return DT_EINPUT;
	struct dt_tinfo v = reduced(&t, mask, keepdim, (enum dt_dtype)t.dtype);
	struct dt_tinfo i = reduced(&t, mask, keepdim, DT_INT64);
	dt_shape_emit(c, &v);
	dt_shape_emit(c, &i);
	return DT_OK;
}

/* argmax/argmin(self, dim=None, keepdim): int64; no dim = every dim. */
int dt_shape_argmax(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	bool mask[DT_MAX_RANK], keepdim = false;
	int64_t dim;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_bool(c, 2, &keepdim);
	if (dt_shape_int(c, 1, &dim)) {
		if (one_dim(c, &t, dim, mask) != DT_OK)
			return DT_EINPUT;
	} else {
		if (dt_tinfo_numel(&t) == 0)
			return dt_shape_fail(c, "Expected reduction dim to be specified for input.numel() == 0.");
		for (int d = 0; d < DT_MAX_RANK; d++)
			mask[d] = true;
	}
	struct dt_tinfo r = reduced(&t, mask, keepdim, DT_INT64);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* logsumexp(self, dim, keepdim): integer inputs give float32. */
int dt_shape_logsumexp(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	bool mask[DT_MAX_RANK], keepdim;
	if (reduce_args(c, &t, mask, &keepdim) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype dt = (enum dt_dtype)t.dtype;
	struct dt_tinfo r = reduced(&t, mask, keepdim,
				    dt_dtype_is_float(dt) ? dt : DT_DEFAULT_FLOAT);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* var.correction -> var; var_mean.correction / var_mean.dim -> (var,
 * mean). keepdim is parameter 3 in all three schemas. */
int dt_shape_var(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	bool mask[DT_MAX_RANK], keepdim;
	if (reduce_args(c, &t, mask, &keepdim) != DT_OK)
		return DT_EINPUT;
	if (!dt_dtype_is_float((enum dt_dtype)t.dtype))
		return dt_shape_fail(c, "std and var only support floating point and complex dtypes");
	struct dt_tinfo r = reduced(&t, mask, keepdim, (enum dt_dtype)t.dtype);
	dt_shape_emit(c, &r);
	if (dt_shape_op(c) != DT_OP_VAR_CORRECTION)
		dt_shape_emit(c, &r);
	return DT_OK;
}
