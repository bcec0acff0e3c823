// SPDX-License-Identifier: MIT
/* shape_view.c: shape functions of the view ops (view, reshape, permute,
 * transpose, expand, squeeze/unsqueeze, slice/narrow/select and the
 * splitting ops), computing strides and storage offsets as ATen does
 * (aten/src/ATen/native/TensorShape.cpp, ATen/TensorUtils.cpp). */
#include "shape.h"

#include <string.h>

#define MAX_LIST (DT_MAX_RESULTS * 4) /* split sizes read at most */

/* at::detail::computeStride (dt_view_strides) on a value's metadata. */
static bool view_strides(const struct dt_tinfo *in, const int64_t *shape,
			 int rank, int64_t *stride)
{
	return dt_view_strides(in->shape, in->stride, in->rank, shape, rank,
			       stride);
}

/* Reads self and the target shape (param 1) with -1 resolved. */
static int view_args(struct dt_shape_ctx *c, struct dt_tinfo *in,
		     struct dt_tinfo *out)
{
	int rank;
	if (dt_shape_tensor(c, 0, in) != DT_OK ||
	    dt_shape_ints(c, 1, out->shape, DT_MAX_RANK, &rank) != DT_OK)
		return DT_EINPUT;
	out->rank = rank;
	out->dtype = in->dtype;
	out->offset = in->offset;
	return dt_shape_infer_size(c, out->shape, rank, dt_tinfo_numel(in));
}

/* view(self, size): an alias; fails when the strides do not allow it. */
int dt_shape_view(struct dt_shape_ctx *c)
{
	struct dt_tinfo in, out;
	if (view_args(c, &in, &out) != DT_OK)
		return DT_EINPUT;
	if (!view_strides(&in, out.shape, out.rank, out.stride)) {
		struct dt_dimbuf b1, b2;
		return dt_shape_fail(c, "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead. (input %s with strides %s)",
				     dt_dims_format(&b1, in.shape, in.rank),
				     dt_dims_format(&b2, in.stride, in.rank));
	}
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* reshape(self, shape): a view when strides allow, else a contiguous copy
 * (_unsafe_view(clone(contiguous))). */
int dt_shape_reshape(struct dt_shape_ctx *c)
{
	struct dt_tinfo in, out;
	if (view_args(c, &in, &out) != DT_OK)
		return DT_EINPUT;
	if (!view_strides(&in, out.shape, out.rank, out.stride))
		dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* _unsafe_view(self, size) computes exactly like view (and fails where
 * view fails); it is only not an alias for autograd. */
int dt_shape_unsafe_view(struct dt_shape_ctx *c)
{
	return dt_shape_view(c);
}

/* as_strided(self, size, stride, storage_offset=None) and
 * _reshape_alias(self, size, stride): the given geometry. */
int dt_shape_as_strided(struct dt_shape_ctx *c)
{
	struct dt_tinfo in, out;
	int rank, nstride;
	if (dt_shape_tensor(c, 0, &in) != DT_OK ||
	    dt_shape_ints(c, 1, out.shape, DT_MAX_RANK, &rank) != DT_OK ||
	    dt_shape_ints(c, 2, out.stride, DT_MAX_RANK, &nstride) != DT_OK)
		return DT_EINPUT;
	if (rank != nstride)
		return dt_shape_fail(c, "mismatch in length of strides and shape");
	out.rank = rank;
	out.dtype = in.dtype;
	out.offset = in.offset;
	int64_t off;
	if (dt_shape_op(c) == DT_OP_AS_STRIDED && dt_shape_int(c, 3, &off)) {
		if (off < 0)
			return dt_shape_fail(c, "storage_offset must be non-negative, got %lld",
					     (long long)off);
		out.offset = off;
	}
	if (dt_shape_check_layout(c, &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

int dt_shape_permute(struct dt_shape_ctx *c)
{
	struct dt_tinfo in, out;
	int64_t dims[DT_MAX_RANK + 1];
	int n;
	if (dt_shape_tensor(c, 0, &in) != DT_OK ||
	    dt_shape_ints(c, 1, dims, DT_MAX_RANK + 1, &n) != DT_OK)
		return DT_EINPUT;
	if (n != in.rank)
		return dt_shape_fail(c, "number of dims don't match in permute (tensor has %d, dims has %d)",
				     in.rank, n);
	bool used[DT_MAX_RANK] = {false};
	out = in;
	for (int i = 0; i < n; i++) {
		if (!dt_shape_wrap_dim(c, &dims[i], in.rank))
			return DT_EINPUT;
		if (used[dims[i]])
			return dt_shape_fail(c, "repeated dim in permute");
		used[dims[i]] = true;
		out.shape[i] = in.shape[dims[i]];
		out.stride[i] = in.stride[dims[i]];
	}
	dt_shape_emit(c, &out);
	return DT_OK;
}

static void swap_dims(struct dt_tinfo *t, int64_t a, int64_t b)
{
	int64_t s = t->shape[a], st = t->stride[a];
	t->shape[a] = t->shape[b];
	t->stride[a] = t->stride[b];
	t->shape[b] = s;
	t->stride[b] = st;
}

int dt_shape_transpose(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t d0, d1;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &d0);
	dt_shape_int(c, 2, &d1);
	if (!dt_shape_wrap_dim(c, &d0, t.rank) || !dt_shape_wrap_dim(c, &d1, t.rank))
		return DT_EINPUT;
	if (t.rank > 0)
		swap_dims(&t, d0, d1);
	dt_shape_emit(c, &t);
	return DT_OK;
}

int dt_shape_t(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (t.rank > 2)
		return dt_shape_fail(c, "t() expects a tensor with <= 2 dimensions, but self is %dD",
				     t.rank);
	if (t.rank == 2)
		swap_dims(&t, 0, 1);
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* inferExpandGeometry: expanded dims get stride 0; new leading dims of
 * size 1 get size*stride of the dim after them. */
int dt_shape_expand(struct dt_shape_ctx *c)
{
	struct dt_tinfo in, out;
	int n;
	struct dt_dimbuf b1, b2;
	if (dt_shape_tensor(c, 0, &in) != DT_OK ||
	    dt_shape_ints(c, 1, out.shape, DT_MAX_RANK, &n) != DT_OK)
		return DT_EINPUT;
	out.rank = n;
	out.dtype = in.dtype;
	out.offset = in.offset;
	if (n < in.rank)
		return dt_shape_fail(c, "the number of sizes provided (%d) must be greater or equal to the number of dimensions in the tensor (%d)",
				     n, in.rank);
	if (in.rank == 0) {
		for (int i = 0; i < n; i++) {
			if (out.shape[i] < 0)
				return dt_shape_fail(c, "The expanded size of the tensor (%lld) isn't allowed in a leading, non-existing dimension %d",
						     (long long)out.shape[i], i);
			out.stride[i] = 0;
		}
		dt_shape_emit(c, &out);
		return DT_OK;
	}
	int64_t target[DT_MAX_RANK], bounded[DT_MAX_RANK];
	memcpy(target, out.shape, sizeof(target));
	for (int i = 0; i < n; i++)
		bounded[i] = target[i] == -1 ? 1 : target[i];
	for (int i = 0; i < n; i++)
		if (target[i] == -1 && i - (n - in.rank) >= 0)
			bounded[i] = in.shape[i - (n - in.rank)];
	if (dt_shape_check_sizes(c, bounded, n) != DT_OK)
		return DT_EINPUT;
	for (int i = n - 1; i >= 0; i--) {
		int dim = in.rank - 1 - (n - 1 - i);
		int64_t size = dim >= 0 ? in.shape[dim] : 1;
		int64_t stride = dim >= 0 ? in.stride[dim]
					  : out.shape[i + 1] * out.stride[i + 1];
		int64_t want = target[i];
		if (want == -1) {
			if (dim < 0)
				return dt_shape_fail(c, "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension %d",
						     i);
			want = size;
		}
		if (size != want) {
			if (size != 1 || want < 0)
				return dt_shape_fail(c, "The expanded size of the tensor (%lld) must match the existing size (%lld) at non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s",
						     (long long)want, (long long)size, i,
						     dt_dims_format(&b1, target, n),
						     dt_dims_format(&b2, in.shape, in.rank));
			size = want;
			stride = 0;
		}
		out.shape[i] = size;
		out.stride[i] = stride;
	}
	dt_shape_emit(c, &out);
	return DT_OK;
}

int dt_shape_unsqueeze(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	if (!dt_shape_wrap_dim(c, &dim, t.rank + 1))
		return DT_EINPUT;
	if (t.rank >= DT_MAX_RANK)
		return dt_shape_fail(c, "result would have more than %d dimensions",
				     DT_MAX_RANK);
	int64_t new_stride = dim >= t.rank ? 1 : t.shape[dim] * t.stride[dim];
	for (int i = t.rank; i > dim; i--) {
		t.shape[i] = t.shape[i - 1];
		t.stride[i] = t.stride[i - 1];
	}
	t.shape[dim] = 1;
	t.stride[dim] = new_stride;
	t.rank++;
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* squeeze.default (every size-1 dim), squeeze.dim, squeeze.dims (the
 * listed dims that have size 1). */
int dt_shape_squeeze(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	bool drop[DT_MAX_RANK] = {false};
	int64_t dims[DT_MAX_RANK];
	int n = 0;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	enum dt_op op = dt_shape_op(c);
	if (op == DT_OP_SQUEEZE) {
		for (int i = 0; i < t.rank; i++)
			drop[i] = t.shape[i] == 1;
	} else {
		if (dt_shape_ints(c, 1, dims, DT_MAX_RANK, &n) != DT_OK)
			return DT_EINPUT;
		for (int i = 0; i < n; i++) {
			if (!dt_shape_wrap_dim(c, &dims[i], t.rank))
				return DT_EINPUT;
			if (t.rank > 0 && t.shape[dims[i]] == 1)
				drop[dims[i]] = true;
		}
	}
	int r = 0;
	for (int i = 0; i < t.rank; i++) {
		if (drop[i])
			continue;
		t.shape[r] = t.shape[i];
		t.stride[r] = t.stride[i];
		r++;
	}
	t.rank = r;
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* alias and detach: the same geometry. */
int dt_shape_alias(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* The part [start, start+len) of dim `dim` of t, every step-th element. */
static struct dt_tinfo sliced(const struct dt_tinfo *t, int64_t dim,
			      int64_t start, int64_t len, int64_t step)
{
	struct dt_tinfo r = *t;
	r.offset += start * t->stride[dim];
	r.shape[dim] = len == 0 ? 0 : (len - 1) / step + 1;
	r.stride[dim] *= step; /* callers check it fits */
	return r;
}

/* slice.Tensor: start/end clamped into [0, size] after wrapping once. */
int dt_shape_slice(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim, start, end, step;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (t.rank == 0)
		return dt_shape_fail(c, "slice() cannot be applied to a 0-dim tensor.");
	dt_shape_int(c, 1, &dim);
	if (!dt_shape_int(c, 2, &start))
		start = 0;
	if (!dt_shape_int(c, 3, &end))
		end = INT64_MAX;
	dt_shape_int(c, 4, &step);
	if (!dt_shape_wrap_dim(c, &dim, t.rank))
		return DT_EINPUT;
	if (step <= 0)
		return dt_shape_fail(c, "slice step must be positive");
	int64_t new_stride;
	if (__builtin_mul_overflow(t.stride[dim], step, &new_stride) ||
	    new_stride > DT_MAX_ELEMENTS)
		return dt_shape_fail(c, "slice step %lld is too large", (long long)step);
	int64_t size = t.shape[dim];
	if (start < 0)
		start += size;
	if (end < 0)
		end += size;
	if (start < 0)
		start = 0;
	else if (start >= size)
		start = size;
	if (end < start)
		end = start;
	else if (end >= size)
		end = size;
	struct dt_tinfo r = sliced(&t, dim, start, end - start, step);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* Checks of narrow(); wraps *start. */
static int narrow_check(struct dt_shape_ctx *c, const struct dt_tinfo *t,
			int64_t dim, int64_t *start, int64_t length)
{
	if (length < 0)
		return dt_shape_fail(c, "narrow(): length must be non-negative.");
	int64_t size = t->shape[dim];
	if (*start < -size || *start > size)
		return dt_shape_fail(c, "start out of range (expected to be in range of [%lld, %lld], but got %lld)",
				     (long long)-size, (long long)size, (long long)*start);
	if (*start < 0)
		*start += size;
	if (*start > size - length)
		return dt_shape_fail(c, "start (%lld) + length (%lld) exceeds dimension size (%lld).",
				     (long long)*start, (long long)length, (long long)size);
	return DT_OK;
}

int dt_shape_narrow(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim, start, length;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (t.rank == 0)
		return dt_shape_fail(c, "narrow() cannot be applied to a 0-dim tensor.");
	dt_shape_int(c, 1, &dim);
	dt_shape_int(c, 2, &start);
	dt_shape_int(c, 3, &length);
	if (!dt_shape_wrap_dim(c, &dim, t.rank) ||
	    narrow_check(c, &t, dim, &start, length) != DT_OK)
		return DT_EINPUT;
	struct dt_tinfo r = sliced(&t, dim, start, length, 1);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* select(dim, index) of t: dim removed, offset moved. */
static struct dt_tinfo selected(const struct dt_tinfo *t, int64_t dim,
				int64_t index)
{
	struct dt_tinfo r = *t;
	r.offset += index * t->stride[dim];
	for (int i = (int)dim; i + 1 < t->rank; i++) {
		r.shape[i] = t->shape[i + 1];
		r.stride[i] = t->stride[i + 1];
	}
	r.rank--;
	return r;
}

int dt_shape_select(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim, index;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (t.rank == 0)
		return dt_shape_fail(c, "select() cannot be applied to a 0-dim tensor.");
	dt_shape_int(c, 1, &dim);
	dt_shape_int(c, 2, &index);
	if (!dt_shape_wrap_dim(c, &dim, t.rank))
		return DT_EINPUT;
	int64_t size = t.shape[dim];
	if (index < -size || index >= size) {
		struct dt_dimbuf b;
		return dt_shape_fail(c, "select(): index %lld out of range for tensor of size %s at dimension %lld",
				     (long long)index, dt_dims_format(&b, t.shape, t.rank),
				     (long long)dim);
	}
	if (index < 0)
		index += size;
	struct dt_tinfo r = selected(&t, dim, index);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* Reads self and the dim param `p` for the splitting ops. */
static int split_args(struct dt_shape_ctx *c, int p, struct dt_tinfo *t,
		      int64_t *dim, const char *what)
{
	if (dt_shape_tensor(c, 0, t) != DT_OK)
		return DT_EINPUT;
	if (t->rank == 0)
		return dt_shape_fail(c, "%s", what);
	dt_shape_int(c, p, dim);
	return dt_shape_wrap_dim(c, dim, t->rank) ? DT_OK : DT_EINPUT;
}

/* One result per size in `sizes`, consecutive along `dim`. */
static int emit_pieces(struct dt_shape_ctx *c, const struct dt_tinfo *t,
		       int64_t dim, const int64_t *sizes, int64_t n)
{
	if (dt_shape_check_results(c, n) != DT_OK)
		return DT_EINPUT;
	int64_t start = 0;
	for (int64_t i = 0; i < n; i++) {
		struct dt_tinfo r = sliced(t, dim, start, sizes[i], 1);
		dt_shape_emit(c, &r);
		start += sizes[i];
	}
	return DT_OK;
}

/* split(split_size, dim): pieces of split_size, the last one shorter. */
static int split_even(struct dt_shape_ctx *c, const struct dt_tinfo *t,
		      int64_t dim, int64_t split_size)
{
	int64_t dim_size = t->shape[dim];
	if (split_size < 0)
		return dt_shape_fail(c, "split expects split_size be non-negative, but got split_size=%lld",
				     (long long)split_size);
	if (split_size == 0 && dim_size != 0)
		return dt_shape_fail(c, "split_size can only be 0 if dimension size is 0, but got dimension size of %lld",
				     (long long)dim_size);
	int64_t n = 1;
	if (split_size != 0) {
		n = dim_size / split_size + (dim_size % split_size != 0);
		if (n < 1)
			n = 1;
	}
	if (dt_shape_check_results(c, n) != DT_OK)
		return DT_EINPUT;
	int64_t sizes[DT_MAX_RESULTS];
	for (int64_t i = 0; i < n; i++)
		sizes[i] = i < n - 1 ? split_size
				     : split_size - (split_size * n - dim_size);
	return emit_pieces(c, t, dim, sizes, n);
}

int dt_shape_split(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim, split_size;
	if (split_args(c, 2, &t, &dim, "split expects at least a 1-dimensional tensor") != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &split_size);
	return split_even(c, &t, dim, split_size);
}

int dt_shape_split_with_sizes(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim, sizes[MAX_LIST];
	int n;
	if (split_args(c, 2, &t, &dim, "split expects at least a 1-dimensional tensor") != DT_OK ||
	    dt_shape_ints(c, 1, sizes, MAX_LIST, &n) != DT_OK)
		return DT_EINPUT;
	int64_t sum = 0;
	bool overflow = false;
	struct dt_dimbuf b;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return dt_shape_fail(c, "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=%s",
					     dt_dims_format(&b, sizes, n));
		overflow = overflow || __builtin_add_overflow(sum, sizes[i], &sum);
	}
	if (overflow || sum != t.shape[dim])
		return dt_shape_fail(c, "split_with_sizes expects split_sizes to sum exactly to %lld (input tensor's size at dimension %lld), but got split_sizes=%s",
				     (long long)t.shape[dim], (long long)dim,
				     dt_dims_format(&b, sizes, n));
	return emit_pieces(c, &t, dim, sizes, n);
}

/* chunk(chunks, dim) = split(ceil(size/chunks), dim): possibly fewer than
 * `chunks` results. */
int dt_shape_chunk(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim, chunks;
	if (split_args(c, 2, &t, &dim, "chunk expects at least a 1-dimensional tensor") != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &chunks);
	if (chunks <= 0)
		return dt_shape_fail(c, "chunk expects `chunks` to be greater than 0, got: %lld",
				     (long long)chunks);
	int64_t dim_size = t.shape[dim];
	int64_t split_size = dim_size / chunks + (dim_size % chunks != 0);
	if (split_size == 0 && dim_size == 0) {
		if (dt_shape_check_results(c, chunks) != DT_OK)
			return DT_EINPUT;
		int64_t zeros[DT_MAX_RESULTS] = {0};
		return emit_pieces(c, &t, dim, zeros, chunks);
	}
	return split_even(c, &t, dim, split_size);
}

int dt_shape_unbind(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim;
	if (split_args(c, 1, &t, &dim, "Dimension specified as 0 but tensor has no dimensions") != DT_OK)
		return DT_EINPUT;
	if (dt_shape_check_results(c, t.shape[dim]) != DT_OK)
		return DT_EINPUT;
	for (int64_t i = 0; i < t.shape[dim]; i++) {
		struct dt_tinfo r = selected(&t, dim, i);
		dt_shape_emit(c, &r);
	}
	return DT_OK;
}
