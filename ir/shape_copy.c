// SPDX-License-Identifier: MIT
/* shape_copy.c: shape functions of ops that copy data into a new tensor:
 * cat and stack, clone/contiguous/_to_copy/convert_element_type (which
 * keep the input's memory order under preserve_format), constant_pad_nd
 * and the slice/select backward ops. */
#include "shape.h"

#include <string.h>

/* cat of already-checked tensors along `dim` (ATen's cat meta function):
 * legacy 1-D empty tensors are skipped, dtype is the promotion of all
 * inputs, memory format the inputs' common suggestion. */
static int cat_tensors(struct dt_shape_ctx *c, const struct dt_tinfo *t, int n,
		       int64_t dim)
{
	if (n == 0)
		return dt_shape_fail(c, "torch.cat(): expected a non-empty list of Tensors");
	struct dt_operand ops[DT_MAX_RESULTS];
	memset(ops, 0, sizeof(ops));
	int valid = -1;
	enum dt_memfmt fmt = DT_MEMFMT_CONTIGUOUS;
	for (int i = 0; i < n; i++) {
		if (t[i].rank == 0)
			return dt_shape_fail(c, "zero-dimensional tensor (at position %d) cannot be concatenated",
					     i);
		ops[i].t = t[i];
		enum dt_memfmt f = dt_tinfo_suggest_memfmt(&t[i]);
		if (i == 0)
			fmt = f;
		else if (fmt != f)
			fmt = DT_MEMFMT_CONTIGUOUS;
		bool skip = t[i].rank == 1 && t[i].shape[0] == 0;
		if (!skip && valid < 0)
			valid = i;
	}
	struct dt_tinfo out = {0};
	out.dtype = (uint8_t)dt_operands_result_type(ops, n);
	if (valid < 0) { /* only legacy empty tensors: the result is [0] */
		out.rank = 1;
		dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
		dt_shape_emit(c, &out);
		return DT_OK;
	}
	if (!dt_shape_wrap_dim(c, &dim, t[valid].rank))
		return DT_EINPUT;
	int64_t total = 0;
	for (int i = 0; i < n; i++) {
		if (t[i].rank == 1 && t[i].shape[0] == 0)
			continue;
		if (t[i].rank != t[valid].rank)
			return dt_shape_fail(c, "Tensors must have same number of dimensions: got %d and %d",
					     t[valid].rank, t[i].rank);
		for (int d = 0; d < t[i].rank; d++)
			if (d != dim && t[i].shape[d] != t[valid].shape[d])
				return dt_shape_fail(c, "Sizes of tensors must match except in dimension %lld. Expected size %lld but got size %lld for tensor number %d in the list.",
						     (long long)dim,
						     (long long)t[valid].shape[d],
						     (long long)t[i].shape[d], i);
		total += t[i].shape[dim];
	}
	out.rank = t[valid].rank;
	memcpy(out.shape, t[valid].shape, sizeof(out.shape));
	out.shape[dim] = total; /* n <= 64 sizes <= 2^60: no overflow */
	if (dt_shape_check_sizes(c, out.shape, out.rank) != DT_OK)
		return DT_EINPUT;
	dt_tinfo_set_strides(&out, fmt);
	dt_shape_emit(c, &out);
	return DT_OK;
}

int dt_shape_cat(struct dt_shape_ctx *c)
{
	struct dt_tinfo t[DT_MAX_RESULTS];
	int n;
	int64_t dim;
	if (dt_shape_tensors(c, 0, t, DT_MAX_RESULTS, &n) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	return cat_tensors(c, t, n, dim);
}

/* stack = cat of the inputs unsqueezed at dim (so their strides, hence the
 * memory format, are those of the unsqueezed views). */
int dt_shape_stack(struct dt_shape_ctx *c)
{
	struct dt_tinfo t[DT_MAX_RESULTS];
	int n;
	int64_t dim;
	if (dt_shape_tensors(c, 0, t, DT_MAX_RESULTS, &n) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	if (n == 0)
		return dt_shape_fail(c, "stack expects a non-empty TensorList");
	if (t[0].rank >= DT_MAX_RANK)
		return dt_shape_fail(c, "result would have more than %d dimensions",
				     DT_MAX_RANK);
	if (!dt_shape_wrap_dim(c, &dim, t[0].rank + 1))
		return DT_EINPUT;
	for (int i = 1; i < n; i++) {
		if (t[i].rank != t[0].rank ||
		    memcmp(t[i].shape, t[0].shape, (size_t)t[0].rank * sizeof(int64_t))) {
			struct dt_dimbuf b0, b1;
			return dt_shape_fail(c, "stack expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d",
					     dt_dims_format(&b0, t[0].shape, t[0].rank),
					     dt_dims_format(&b1, t[i].shape, t[i].rank), i);
		}
	}
	for (int i = 0; i < n; i++) {
		struct dt_tinfo *u = &t[i];
		int64_t ns = dim >= u->rank ? 1 : u->shape[dim] * u->stride[dim];
		for (int d = u->rank; d > dim; d--) {
			u->shape[d] = u->shape[d - 1];
			u->stride[d] = u->stride[d - 1];
		}
		u->shape[dim] = 1;
		u->stride[dim] = ns;
		u->rank++;
	}
	return cat_tensors(c, t, n, dim);
}

/* A copy of `in` with memory format `f` (preserve: the input's strides
 * when dense, else dense strides in its order; as clone/_to_copy). */
static void copy_like(struct dt_tinfo *out, const struct dt_tinfo *in,
		      enum dt_memfmt f)
{
	*out = *in;
	if (f == DT_MEMFMT_PRESERVE)
		dt_tinfo_like(out, in);
	else
		dt_tinfo_set_strides(out, f);
}

static int check_memfmt(struct dt_shape_ctx *c, const struct dt_tinfo *t,
			enum dt_memfmt f)
{
	if (f == DT_MEMFMT_CL && t->rank != 4)
		return dt_shape_fail(c, "required rank 4 tensor to use channels_last format");
	return DT_OK;
}

/* clone(self, memory_format=None) and lift_fresh_copy(self). */
int dt_shape_clone(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, out;
	enum dt_memfmt f = DT_MEMFMT_PRESERVE;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (dt_shape_op(c) == DT_OP_CLONE &&
	    (dt_shape_memfmt(c, 1, DT_MEMFMT_PRESERVE, &f) != DT_OK ||
	     check_memfmt(c, &t, f) != DT_OK))
		return DT_EINPUT;
	copy_like(&out, &t, f);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* contiguous(self): self itself when already contiguous in the format,
 * else a copy. */
int dt_shape_contiguous(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, out;
	enum dt_memfmt f;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    dt_shape_memfmt(c, 1, DT_MEMFMT_CONTIGUOUS, &f) != DT_OK)
		return DT_EINPUT;
	if (f == DT_MEMFMT_PRESERVE)
		return dt_shape_fail(c, "preserve memory format is unsupported by the contiguous operator");
	if (check_memfmt(c, &t, f) != DT_OK)
		return DT_EINPUT;
	bool already = f == DT_MEMFMT_CL ? dt_tinfo_is_channels_last(&t)
					 : dt_tinfo_is_contiguous(&t);
	if (already)
		out = t;
	else
		copy_like(&out, &t, f);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* prims.convert_element_type(a, dtype): dense strides kept, else the
 * elementwise output strides of `a`. */
int dt_shape_convert_element_type(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, out;
	enum dt_dtype dt;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_dtype(c, 1, &dt);
	copy_like(&out, &t, DT_MEMFMT_PRESERVE);
	out.dtype = (uint8_t)dt;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* _to_copy(self, *, dtype, layout, device, pin_memory, non_blocking,
 * memory_format). */
int dt_shape_to_copy(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, out;
	enum dt_dtype dt;
	enum dt_memfmt f;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    dt_shape_memfmt(c, 6, DT_MEMFMT_PRESERVE, &f) != DT_OK ||
	    check_memfmt(c, &t, f) != DT_OK)
		return DT_EINPUT;
	copy_like(&out, &t, f);
	if (dt_shape_dtype(c, 1, &dt))
		out.dtype = (uint8_t)dt;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* constant_pad_nd(self, pad, value): pads are (before, after) pairs from
 * the last dim backwards; all non-positive pads are a narrowed clone. */
int dt_shape_constant_pad_nd(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, out;
	int64_t pad[2 * DT_MAX_RANK + 1];
	int npad;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    dt_shape_ints(c, 1, pad, 2 * DT_MAX_RANK + 1, &npad) != DT_OK)
		return DT_EINPUT;
	if (npad % 2 != 0)
		return dt_shape_fail(c, "Length of pad must be even but instead it equals %d",
				     npad);
	int lpad = npad / 2, ldiff = t.rank - lpad;
	if (ldiff < 0)
		return dt_shape_fail(c, "Length of pad should be no more than twice the number of dimensions of the input. Pad length is %d while the input has %d dimensions.",
				     npad, t.rank);
	bool all_nonpositive = true;
	struct dt_tinfo narrowed = t;
	for (int i = ldiff; i < t.rank; i++) {
		int at = 2 * (t.rank - i - 1);
		for (int k = 0; k < 2; k++) {
			int64_t p = pad[at + k];
			if (p > 0) {
				all_nonpositive = false;
			} else if (p < 0) {
				if (narrowed.shape[i] + p < 0)
					return dt_shape_fail(c, "narrow(): length must be non-negative.");
				if (k == 0)
					narrowed.offset += -p * narrowed.stride[i];
				narrowed.shape[i] += p;
			}
		}
	}
	if (all_nonpositive) {
		copy_like(&out, &narrowed, DT_MEMFMT_PRESERVE);
		dt_shape_emit(c, &out);
		return DT_OK;
	}
	out = t;
	for (int i = 0; i < lpad; i++) {
		int at = npad - (i + 1) * 2;
		int64_t size;
		if (__builtin_add_overflow(t.shape[ldiff + i], pad[at], &size) ||
		    __builtin_add_overflow(size, pad[at + 1], &size))
			return dt_shape_fail(c, "padding %lld and %lld is too large",
					     (long long)pad[at], (long long)pad[at + 1]);
		if (size < 0) /* torch 1.13 also rejects 0; later versions do not */
			return dt_shape_fail(c, "The input size %lld, plus negative padding %lld and %lld resulted in a negative output size, which is invalid. Check dimension %d of your input.",
					     (long long)t.shape[ldiff + i], (long long)pad[at],
					     (long long)pad[at + 1], ldiff + i);
		out.shape[ldiff + i] = size;
	}
	if (dt_shape_check_sizes(c, out.shape, out.rank) != DT_OK)
		return DT_EINPUT;
	dt_tinfo_set_strides(&out, dt_tinfo_suggest_memfmt(&t));
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* slice_backward/select_backward(grad, input_sizes, ...): zeros of the
 * input's size (contiguous) with grad's dtype. */
int dt_shape_slice_backward(struct dt_shape_ctx *c)
{
	struct dt_tinfo g, out = {0};
	int n;
	if (dt_shape_tensor(c, 0, &g) != DT_OK ||
	    dt_shape_ints(c, 1, out.shape, DT_MAX_RANK, &n) != DT_OK)
		return DT_EINPUT;
	out.rank = n;
	out.dtype = g.dtype;
	if (dt_shape_check_sizes(c, out.shape, n) != DT_OK)
		return DT_EINPUT;
	dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &out);
	return DT_OK;
}
