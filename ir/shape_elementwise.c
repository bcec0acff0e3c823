// SPDX-License-Identifier: MIT
/* shape_elementwise.c: shape functions of elementwise ops. Output shapes
 * broadcast; dtypes follow at::result_type (with the float/bool rules of
 * each op); output strides follow TensorIterator: the fast setup
 * (all-contiguous, all-channels-last, or identical dense strides) and
 * otherwise reorder_dimensions, which gives the output the memory order of
 * the first input with a strict stride order between two dims
 * (aten/src/ATen/TensorIterator.cpp). Device-dependent kernels (dropout)
 * follow CUDA's. Checked against torch 1.13 (CPU) and 2.11 (CUDA) on
 * random strided inputs. */
#include "shape.h"

#include <string.h>

/* reorder_dimensions' comparison of dims d0 (currently inner) and d1 over
 * the inputs in order: 1 = swap them, -1 = keep, 0 = ambiguous (ask the
 * next insertion step). `st` holds each input's strides (0 = broadcast,
 * skipped); equal strides put the smaller dim inside. */
static int should_swap(int64_t st[][DT_MAX_RANK], int n, const int64_t *shape,
		       int d0, int d1)
{
	for (int k = 0; k < n; k++) {
		int64_t s0 = st[k][d0], s1 = st[k][d1];
		if (s0 == 0 || s1 == 0)
			continue;
		if (s0 < s1)
			return -1;
		if (s0 > s1)
			return 1;
		if (shape[d0] > shape[d1])
			return 1;
	}
	return 0;
}

/* The output geometry TensorIterator gives inputs `o` (in operand order):
 * out->rank/shape/stride, offset 0; dtype is left to the caller. */
static int iter_geometry(struct dt_shape_ctx *c, const struct dt_operand *o,
			 int n, struct dt_tinfo *out)
{
	bool same = true;
	int rank = o[0].t.rank;
	int64_t shape[DT_MAX_RANK];
	memcpy(shape, o[0].t.shape, sizeof(shape));
	for (int k = 1; k < n; k++) {
		const struct dt_tinfo *t = &o[k].t;
		if (t->rank == rank &&
		    memcmp(t->shape, shape, (size_t)rank * sizeof(int64_t)) == 0)
			continue;
		same = false;
		if (dt_shape_broadcast(c, shape, rank, t->shape, t->rank, shape,
				       &rank) != DT_OK)
			return DT_EINPUT;
	}
	memset(out, 0, sizeof(*out));
	out->rank = rank;
	memcpy(out->shape, shape, sizeof(shape));
	if (same) { /* fast setup */
		bool contig = true, cl = true, dense = true;
		for (int k = 0; k < n; k++) {
			contig = contig && dt_tinfo_is_contiguous(&o[k].t);
			cl = cl && dt_tinfo_is_channels_last(&o[k].t);
			dense = dense && dt_tinfo_is_dense(&o[k].t);
		}
		if (contig || cl) {
			dt_tinfo_set_strides(out, contig ? DT_MEMFMT_CONTIGUOUS
							 : DT_MEMFMT_CL);
			return DT_OK;
		}
		bool equal = dense;
		for (int k = 1; k < n && equal; k++)
			equal = memcmp(o[k].t.stride, o[0].t.stride,
				       (size_t)rank * sizeof(int64_t)) == 0;
		if (equal) {
			memcpy(out->stride, o[n - 1].t.stride, sizeof(out->stride));
			return DT_OK;
		}
	}
	/* compute_strides: inputs aligned to the right, broadcast dims 0 */
	int64_t st[4][DT_MAX_RANK];
	DT_REQUIRE(n <= 4);
	for (int k = 0; k < n; k++) {
		const struct dt_tinfo *t = &o[k].t;
		int lead = rank - t->rank;
		for (int d = 0; d < rank; d++) {
			int i = d - lead;
			st[k][d] = i < 0 || (t->shape[i] == 1 && shape[d] != 1)
					   ? 0
					   : t->stride[i];
		}
	}
	/* perm[0] is the innermost dim; initially the last dim */
	int perm[DT_MAX_RANK];
	for (int i = 0; i < rank; i++)
		perm[i] = rank - 1 - i;
	for (int i = 1; i < rank && rank > 1; i++) {
		int dim1 = i;
		for (int dim0 = i - 1; dim0 >= 0; dim0--) {
			int cmp = should_swap(st, n, shape, perm[dim0], perm[dim1]);
			if (cmp > 0) {
				int tmp = perm[dim0];
				perm[dim0] = perm[dim1];
				perm[dim1] = tmp;
				dim1 = dim0;
			} else if (cmp < 0) {
				break;
			}
		}
	}
	bool inverted = true;
	for (int i = 0; i < rank; i++)
		inverted = inverted && perm[i] == rank - 1 - i;
	if (inverted) {
		dt_tinfo_set_strides(out, DT_MEMFMT_CONTIGUOUS);
		return DT_OK;
	}
	int64_t next = 1; /* compatible_stride: plain products */
	for (int i = 0; i < rank; i++) {
		out->stride[perm[i]] = next;
		next *= shape[perm[i]];
	}
	return DT_OK;
}

static bool is_integral(enum dt_dtype t)
{
	return !dt_dtype_is_float(t);
}

/* Reads operands from params `ps`, in TensorIterator's operand order. */
static int read_operands(struct dt_shape_ctx *c, const int *ps, int n,
			 struct dt_operand *o)
{
	for (int k = 0; k < n; k++)
		if (dt_shape_operand(c, ps[k], &o[k]) != DT_OK)
			return DT_EINPUT;
	return DT_OK;
}

/* Explicit input.to(common) of the inputs of another dtype (where, pow,
 * clamp): copies that keep dense strides and densify the others
 * (empty_like's rule), so they vote with their copies' strides. */
static void convert_inputs(struct dt_operand *o, int n, enum dt_dtype common)
{
	for (int k = 0; k < n; k++) {
		if (o[k].number || o[k].t.dtype == common)
			continue;
		dt_tinfo_like(&o[k].t, &o[k].t);
		o[k].t.dtype = (uint8_t)common;
	}
}

/* The result of a TensorIterator op computing in `common` over inputs
 * `o`. TensorIterator casts inputs of another dtype while it runs, except
 * on CPU, where it first replaces them by converted copies (which vote
 * with their own strides); dtopt follows CUDA and meta tensors (fake-mode
 * tracing), where the inputs' own strides vote. */
static int promoted(struct dt_shape_ctx *c, struct dt_operand *o, int n,
		    enum dt_dtype common, struct dt_tinfo *out)
{
	if (iter_geometry(c, o, n, out) != DT_OK)
		return DT_EINPUT;
	out->dtype = (uint8_t)common;
	return DT_OK;
}

/* add/sub/mul/maximum/minimum/pow.Tensor_Tensor: the promoted dtype.
 * rsub(self, other) is sub(other, self); pow.Tensor_Scalar is a unary op
 * on base.to(result_type); pow.Scalar(number, exponent) is contiguous. */
int dt_shape_binary(struct dt_shape_ctx *c)
{
	static const int ps[2] = {0, 1}, swapped[2] = {1, 0};
	struct dt_operand o[2];
	struct dt_tinfo out;
	enum dt_op op = dt_shape_op(c);
	if (read_operands(c, op == DT_OP_RSUB_TENSOR ? swapped : ps, 2, o) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype common = dt_operands_result_type(o, 2);
	bool sub = op == DT_OP_SUB_TENSOR || op == DT_OP_SUB_SCALAR ||
		   op == DT_OP_RSUB_TENSOR || op == DT_OP_RSUB_SCALAR;
	if (sub && o[0].t.dtype == DT_BOOL && o[1].t.dtype == DT_BOOL)
		return dt_shape_fail(c, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.");
	if (op == DT_OP_POW_SCALAR) {
		out = o[1].t;
		out.dtype = (uint8_t)common;
		dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
		dt_shape_emit(c, &out);
		return DT_OK;
	}
	int n = 2;
	if (op == DT_OP_POW_TENSOR_SCALAR) { /* unary on base.to(common) */
		convert_inputs(o, 1, common);
		n = 1;
	}
	if (promoted(c, o, n, common, &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* div: integer inputs compute in float32 unless a rounding mode is given. */
int dt_shape_div(struct dt_shape_ctx *c)
{
	static const int ps[2] = {0, 1};
	struct dt_operand o[2];
	struct dt_tinfo out;
	if (read_operands(c, ps, 2, o) != DT_OK)
		return DT_EINPUT;
	enum dt_op op = dt_shape_op(c);
	bool rounding = (op == DT_OP_DIV_TENSOR_MODE || op == DT_OP_DIV_SCALAR_MODE) &&
			dt_shape_str(c, 2) != NULL;
	enum dt_dtype common = dt_operands_result_type(o, 2);
	if (!rounding && is_integral(common))
		common = DT_DEFAULT_FLOAT;
	if (promoted(c, o, 2, common, &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* eq/ne/lt/le/gt/ge (inputs promoted to each other) and logical_not:
 * bool results. */
int dt_shape_compare(struct dt_shape_ctx *c)
{
	static const int ps[2] = {0, 1};
	struct dt_operand o[2];
	struct dt_tinfo out;
	int n = dt_shape_op(c) == DT_OP_LOGICAL_NOT ? 1 : 2;
	if (read_operands(c, ps, n, o) != DT_OK ||
	    promoted(c, o, n, dt_operands_result_type(o, n), &out) != DT_OK)
		return DT_EINPUT;
	out.dtype = DT_BOOL;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* addcmul/addcdiv(self, tensor1, tensor2, value). */
int dt_shape_ternary(struct dt_shape_ctx *c)
{
	static const int ps[3] = {0, 1, 2};
	struct dt_operand o[3];
	struct dt_tinfo out;
	if (read_operands(c, ps, 3, o) != DT_OK)
		return DT_EINPUT;
	if (dt_shape_op(c) == DT_OP_ADDCDIV && is_integral((enum dt_dtype)o[1].t.dtype) &&
	    is_integral((enum dt_dtype)o[2].t.dtype))
		return dt_shape_fail(c, "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a true division of tensor1 and tensor2.");
	if (promoted(c, o, 3, dt_operands_result_type(o, 3), &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* where(condition, self, other): a uint8 condition is converted to bool,
 * self and other to result_type(self, other); all three are operands. */
int dt_shape_where(struct dt_shape_ctx *c)
{
	static const int ps[3] = {0, 1, 2};
	struct dt_operand o[3];
	struct dt_tinfo out;
	if (read_operands(c, ps, 3, o) != DT_OK)
		return DT_EINPUT;
	if (o[0].t.dtype != DT_BOOL && o[0].t.dtype != DT_UINT8)
		return dt_shape_fail(c, "where expected condition to be a boolean tensor, but got a tensor with dtype %s",
				     dt_dtype_name((enum dt_dtype)o[0].t.dtype));
	convert_inputs(o, 1, DT_BOOL);
	enum dt_dtype common = dt_operands_result_type(o + 1, 2);
	convert_inputs(o + 1, 2, common);
	if (iter_geometry(c, o, 3, &out) != DT_OK)
		return DT_EINPUT;
	out.dtype = (uint8_t)common;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* masked_fill(self, mask, value) = self expanded to the broadcast shape
 * and cloned contiguous, then filled. */
int dt_shape_masked_fill(struct dt_shape_ctx *c)
{
	struct dt_tinfo self, mask, out = {0};
	if (dt_shape_tensor(c, 0, &self) != DT_OK ||
	    dt_shape_tensor(c, 1, &mask) != DT_OK)
		return DT_EINPUT;
	if (mask.dtype != DT_BOOL)
		return dt_shape_fail(c, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
				     dt_dtype_name((enum dt_dtype)mask.dtype));
	if (dt_shape_op(c) == DT_OP_MASKED_FILL_TENSOR) {
		struct dt_operand v;
		if (dt_shape_operand(c, 2, &v) != DT_OK)
			return DT_EINPUT;
		if (v.t.rank != 0)
			return dt_shape_fail(c, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with %d dimension(s).",
					     v.t.rank);
	}
	if (dt_shape_broadcast(c, mask.shape, mask.rank, self.shape, self.rank,
			       out.shape, &out.rank) != DT_OK)
		return DT_EINPUT;
	out.dtype = self.dtype;
	dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* neg, abs, relu, gelu, silu, sign, sgn: the input's dtype. */
int dt_shape_unary(struct dt_shape_ctx *c)
{
	static const int ps[1] = {0};
	struct dt_operand o[1];
	struct dt_tinfo out;
	if (read_operands(c, ps, 1, o) != DT_OK ||
	    promoted(c, o, 1, (enum dt_dtype)o[0].t.dtype, &out) != DT_OK)
		return DT_EINPUT;
	if (dt_shape_op(c) == DT_OP_NEG && out.dtype == DT_BOOL)
		return dt_shape_fail(c, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* sigmoid, tanh, exp, log, sqrt, …: integer inputs compute in float32. */
int dt_shape_unary_float(struct dt_shape_ctx *c)
{
	static const int ps[1] = {0};
	struct dt_operand o[1];
	struct dt_tinfo out;
	if (read_operands(c, ps, 1, o) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype common = (enum dt_dtype)o[0].t.dtype;
	if (promoted(c, o, 1, is_integral(common) ? DT_DEFAULT_FLOAT : common,
		     &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* clamp(self, min, max), clamp_min, clamp_max: a float self keeps its
 * dtype; otherwise the bounds take part in promotion and the op runs on
 * self.to(result_type). */
int dt_shape_clamp(struct dt_shape_ctx *c)
{
	struct dt_operand o[3];
	struct dt_tinfo out;
	int n = 1;
	if (dt_shape_operand(c, 0, &o[0]) != DT_OK)
		return DT_EINPUT;
	int nb = dt_shape_op(c) == DT_OP_CLAMP ? 2 : 1;
	for (int p = 1; p <= nb; p++)
		if (dt_shape_has(c, p) && dt_shape_operand(c, p, &o[n++]) != DT_OK)
			return DT_EINPUT;
	if (n == 1)
		return dt_shape_fail(c, "torch.clamp: At least one of 'min' or 'max' must not be None");
	enum dt_dtype common = dt_dtype_is_float((enum dt_dtype)o[0].t.dtype)
				       ? (enum dt_dtype)o[0].t.dtype
				       : dt_operands_result_type(o, n);
	convert_inputs(o, 1, common);
	if (promoted(c, o, 1, common, &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* threshold_backward(grad, self, threshold) iterates (self, grad); the
 * other backward ops (grad, x). Promoted dtype. */
int dt_shape_backward_binary(struct dt_shape_ctx *c)
{
	static const int grad_first[2] = {0, 1}, self_first[2] = {1, 0};
	struct dt_operand o[2];
	struct dt_tinfo out;
	const int *ps = dt_shape_op(c) == DT_OP_THRESHOLD_BACKWARD ? self_first
								  : grad_first;
	if (read_operands(c, ps, 2, o) != DT_OK ||
	    promoted(c, o, 2, dt_operands_result_type(o, 2), &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* native_dropout(input, p, train) -> (output, mask): CUDA's kernel makes
 * both empty_like(input), the mask bool (training or not; the CPU kernel
 * of torch 1.13 computes input * mask instead). */
int dt_shape_native_dropout(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, out, mask;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_tinfo_like(&out, &t);
	mask = out;
	mask.dtype = DT_BOOL;
	dt_shape_emit(c, &out);
	dt_shape_emit(c, &mask);
	return DT_OK;
}

/* native_dropout_backward(grad, mask, scale): CUDA's kernel gives
 * empty_like(grad, grad.suggest_memory_format()). */
int dt_shape_dropout_backward(struct dt_shape_ctx *c)
{
	struct dt_tinfo g, mask;
	if (dt_shape_tensor(c, 0, &g) != DT_OK || dt_shape_tensor(c, 1, &mask) != DT_OK)
		return DT_EINPUT;
	if (mask.dtype != DT_BOOL)
		return dt_shape_fail(c, "Mask should be Bool Scalar Type %s",
				     dt_dtype_name((enum dt_dtype)mask.dtype));
	struct dt_dimbuf b1, b2;
	if (mask.rank != g.rank ||
	    memcmp(mask.shape, g.shape, (size_t)g.rank * sizeof(int64_t)))
		return dt_shape_fail(c, "mask of shape %s does not match grad_output of shape %s",
				     dt_dims_format(&b1, mask.shape, mask.rank),
				     dt_dims_format(&b2, g.shape, g.rank));
	dt_tinfo_set_strides(&g, dt_tinfo_suggest_memfmt(&g));
	dt_shape_emit(c, &g);
	return DT_OK;
}

/* bernoulli(self) and bernoulli.p(self, p): a contiguous tensor like self
 * (empty_like with LEGACY_CONTIGUOUS_MEMORY_FORMAT). */
int dt_shape_bernoulli(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_tinfo_set_strides(&t, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* bitwise_and/or/xor (Tensor and Scalar) and bitwise_not: the promoted
 * dtype, which must be integral or bool. */
int dt_shape_bitwise(struct dt_shape_ctx *c)
{
	static const int ps[2] = {0, 1};
	struct dt_operand o[2];
	struct dt_tinfo out;
	enum dt_op op = dt_shape_op(c);
	int n = op == DT_OP_BITWISE_NOT ? 1 : 2;
	if (read_operands(c, ps, n, o) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype common = dt_operands_result_type(o, n);
	if (!is_integral(common))
		return dt_shape_fail(c, "not implemented for '%s' (integral and bool tensors only)",
				     dt_dtype_name(common));
	if (promoted(c, o, n, common, &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* fill.Tensor / fill_.Tensor: the value is a 0-d tensor or a number. */
static int check_fill_value(struct dt_shape_ctx *c)
{
	struct dt_operand v;
	if (dt_shape_operand(c, 1, &v) != DT_OK)
		return DT_EINPUT;
	if (!v.number && v.t.rank != 0)
		return dt_shape_fail(c, "fill_ only supports 0-dimension value tensor but got tensor with %d dimensions.",
				     v.t.rank);
	return DT_OK;
}

/* fill.Scalar(self, value), fill.Tensor: empty_like(self).fill_(value). */
int dt_shape_fill(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    (dt_shape_op(c) == DT_OP_FILL_TENSOR && check_fill_value(c) != DT_OK))
		return DT_EINPUT;
	dt_tinfo_like(&t, &t);
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* c10::canCast without complex types: no float to integral or bool, no
 * integral to bool. */
static bool can_cast(enum dt_dtype from, enum dt_dtype to)
{
	if (dt_dtype_is_float(from) && !dt_dtype_is_float(to))
		return false;
	return !(from != DT_BOOL && to == DT_BOOL);
}

/* add_/sub_/mul_.Tensor, fill_, masked_fill_: self itself (dtype,
 * shape, strides and offset). The second operand (other, mask) must
 * broadcast to self's shape, and for arithmetic the promoted dtype cast
 * to self's, as TensorIterator checks for an in-place op. */
int dt_shape_inplace(struct dt_shape_ctx *c)
{
	struct dt_tinfo self;
	if (dt_shape_tensor(c, 0, &self) != DT_OK)
		return DT_EINPUT;
	enum dt_op op = dt_shape_op(c);
	if (op == DT_OP_FILL_INPLACE_SCALAR || op == DT_OP_FILL_INPLACE_TENSOR) {
		if (op == DT_OP_FILL_INPLACE_TENSOR && check_fill_value(c) != DT_OK)
			return DT_EINPUT;
		dt_shape_emit(c, &self);
		return DT_OK;
	}
	struct dt_operand o[2];
	static const int ps[2] = {0, 1};
	if (read_operands(c, ps, 2, o) != DT_OK)
		return DT_EINPUT;
	int64_t shape[DT_MAX_RANK];
	int rank;
	if (dt_shape_broadcast(c, self.shape, self.rank, o[1].t.shape, o[1].t.rank,
			       shape, &rank) != DT_OK)
		return DT_EINPUT;
	struct dt_dimbuf b1, b2;
	if (rank != self.rank || memcmp(shape, self.shape, (size_t)rank * sizeof(int64_t)))
		return dt_shape_fail(c, "output with shape %s doesn't match the broadcast shape %s",
				     dt_dims_format(&b1, self.shape, self.rank),
				     dt_dims_format(&b2, shape, rank));
	if (op == DT_OP_MASKED_FILL_INPLACE_SCALAR || op == DT_OP_MASKED_FILL_INPLACE_TENSOR) {
		struct dt_operand v;
		if (o[1].t.dtype != DT_BOOL)
			return dt_shape_fail(c, "masked_fill_ only supports boolean masks, but got mask with dtype %s",
					     dt_dtype_name((enum dt_dtype)o[1].t.dtype));
		if (op == DT_OP_MASKED_FILL_INPLACE_TENSOR &&
		    (dt_shape_operand(c, 2, &v) != DT_OK || v.t.rank != 0))
			return dt_shape_fail(c, "masked_fill_ only supports a 0-dimensional value tensor");
		dt_shape_emit(c, &self);
		return DT_OK;
	}
	enum dt_dtype common = dt_operands_result_type(o, 2);
	if (op == DT_OP_SUB_INPLACE && (self.dtype == DT_BOOL || o[1].t.dtype == DT_BOOL))
		return dt_shape_fail(c, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
	if (!can_cast(common, (enum dt_dtype)self.dtype))
		return dt_shape_fail(c, "result type %s can't be cast to the desired output type %s",
				     dt_dtype_name(common), dt_dtype_name((enum dt_dtype)self.dtype));
	dt_shape_emit(c, &self);
	return DT_OK;
}

/* mse_loss(self, target, reduction): (self - target)^2 as a binary
 * TensorIterator op in the promoted (floating) dtype; mean and sum give a
 * 0-d tensor of that dtype. */
int dt_shape_mse_loss(struct dt_shape_ctx *c)
{
	static const int ps[2] = {0, 1};
	struct dt_operand o[2];
	struct dt_tinfo out;
	int64_t reduction = 1;
	dt_shape_int(c, 2, &reduction);
	if (reduction < 0 || reduction > 2)
		return dt_shape_fail(c, "reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld",
				     (long long)reduction);
	if (read_operands(c, ps, 2, o) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype common = dt_operands_result_type(o, 2);
	if (is_integral(common))
		return dt_shape_fail(c, "\"mse\" not implemented for '%s'", dt_dtype_name(common));
	if (promoted(c, o, 2, common, &out) != DT_OK)
		return DT_EINPUT;
	if (reduction != 0) {
		out.rank = 0;
		out.offset = 0;
	}
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* mse_loss_backward(grad, self, target, reduction): zeros_like(self)
 * (contiguous) written by a TensorIterator over (self, target, grad),
 * which all have self's dtype; broadcasting resizes it. */
int dt_shape_mse_loss_backward(struct dt_shape_ctx *c)
{
	struct dt_tinfo t[3]; /* self, target, grad */
	static const int ps[3] = {1, 2, 0};
	int64_t reduction = 1;
	dt_shape_int(c, 3, &reduction);
	if (reduction < 0 || reduction > 2)
		return dt_shape_fail(c, "reduction must be 0 (none), 1 (mean) or 2 (sum), got %lld",
				     (long long)reduction);
	for (int k = 0; k < 3; k++)
		if (dt_shape_tensor(c, ps[k], &t[k]) != DT_OK)
			return DT_EINPUT;
	for (int k = 1; k < 3; k++)
		if (t[k].dtype != t[0].dtype)
			return dt_shape_fail(c, "Found dtype %s but expected %s",
					     dt_dtype_name((enum dt_dtype)t[k].dtype),
					     dt_dtype_name((enum dt_dtype)t[0].dtype));
	if (is_integral((enum dt_dtype)t[0].dtype))
		return dt_shape_fail(c, "\"mse_backward\" not implemented for '%s'",
				     dt_dtype_name((enum dt_dtype)t[0].dtype));
	struct dt_tinfo out = t[0];
	for (int k = 1; k < 3; k++) {
		int64_t shape[DT_MAX_RANK];
		if (dt_shape_broadcast(c, out.shape, out.rank, t[k].shape, t[k].rank,
				       shape, &out.rank) != DT_OK)
			return DT_EINPUT;
		memcpy(out.shape, shape, sizeof(shape));
	}
	dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &out);
	return DT_OK;
}
