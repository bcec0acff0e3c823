// SPDX-License-Identifier: MIT
/* shape_nn.c: shape functions of matrix products (mm, bmm, addmm,
 * baddbmm), softmax and log-softmax with their backward, layer norm,
 * embedding and nll_loss, following ATen's meta functions. All results
 * are fresh contiguous tensors. */
#include "shape.h"

#include <string.h>

static bool same_shape(const struct dt_tinfo *a, const int64_t *shape, int rank)
{
	return a->rank == rank &&
	       memcmp(a->shape, shape, (size_t)rank * sizeof(int64_t)) == 0;
}

/* The product of params pa and pb (rank 2, or rank 3 for the batched
 * ops) into *out, with shape, dtype and batch checks. */
static int matmul(struct dt_shape_ctx *c, int pa, int pb, int rank,
		  struct dt_tinfo *out)
{
	struct dt_tinfo a, b;
	struct dt_dimbuf ba, bb;
	if (dt_shape_tensor(c, pa, &a) != DT_OK || dt_shape_tensor(c, pb, &b) != DT_OK)
		return DT_EINPUT;
	const char *na = dt_shape_param_name(c, pa), *nb = dt_shape_param_name(c, pb);
	if (a.rank != rank || b.rank != rank)
		return dt_shape_fail(c, "'%s' must be a %s, got a %d-D tensor",
				     a.rank != rank ? na : nb,
				     rank == 2 ? "matrix" : "3-D tensor",
				     a.rank != rank ? a.rank : b.rank);
	if (a.dtype != b.dtype)
		return dt_shape_fail(c, "expected %s and %s to have the same dtype, but got: %s != %s",
				     na, nb, dt_dtype_name((enum dt_dtype)a.dtype),
				     dt_dtype_name((enum dt_dtype)b.dtype));
	if (a.shape[rank - 1] != b.shape[rank - 2] ||
	    (rank == 3 && a.shape[0] != b.shape[0]))
		return dt_shape_fail(c, "%s: %s @ %s",
				     rank == 3 && a.shape[0] != b.shape[0]
					     ? "batch sizes differ"
					     : "inner dimensions differ",
				     dt_dims_format(&ba, a.shape, a.rank),
				     dt_dims_format(&bb, b.shape, b.rank));
	int64_t shape[3];
	if (rank == 3)
		shape[0] = a.shape[0];
	shape[rank - 2] = a.shape[rank - 2];
	shape[rank - 1] = b.shape[rank - 1];
	if (dt_shape_check_sizes(c, shape, rank) != DT_OK)
		return DT_EINPUT;
	*out = dt_tinfo_contiguous((enum dt_dtype)a.dtype, shape, rank);
	return DT_OK;
}

/* mm(self, mat2) and bmm(self, mat2). */
int dt_shape_mm(struct dt_shape_ctx *c)
{
	struct dt_tinfo out;
	if (matmul(c, 0, 1, dt_shape_op(c) == DT_OP_BMM ? 3 : 2, &out) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* addmm(self, mat1, mat2) and baddbmm(self, batch1, batch2): self must
 * broadcast to the product's shape. */
int dt_shape_addmm(struct dt_shape_ctx *c)
{
	struct dt_tinfo out, self;
	if (matmul(c, 1, 2, dt_shape_op(c) == DT_OP_BADDBMM ? 3 : 2, &out) != DT_OK ||
	    dt_shape_tensor(c, 0, &self) != DT_OK)
		return DT_EINPUT;
	bool fits = self.rank <= out.rank;
	for (int i = 0; fits && i < self.rank; i++) {
		int64_t s = self.shape[self.rank - 1 - i];
		fits = s == 1 || s == out.shape[out.rank - 1 - i];
	}
	if (!fits) {
		struct dt_dimbuf b1, b2;
		return dt_shape_fail(c, "self of shape %s cannot be broadcast to the product's shape %s",
				     dt_dims_format(&b1, self.shape, self.rank),
				     dt_dims_format(&b2, out.shape, out.rank));
	}
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* _softmax/_log_softmax(self, dim, half_to_float). */
int dt_shape_softmax(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t dim;
	bool half_to_float = false;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 1, &dim);
	dt_shape_bool(c, 2, &half_to_float);
	if (!dt_shape_wrap_dim(c, &dim, t.rank))
		return DT_EINPUT;
	struct dt_tinfo r = dt_tinfo_contiguous(half_to_float ? DT_FLOAT32 : (enum dt_dtype)t.dtype,
				  t.shape, t.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* _softmax_backward_data/_log_softmax_backward_data(grad_output, output,
 * dim, input_dtype): grad's dtype, except float grads of a half softmax. */
int dt_shape_softmax_backward(struct dt_shape_ctx *c)
{
	struct dt_tinfo g, o;
	int64_t dim;
	enum dt_dtype in_dtype;
	if (dt_shape_tensor(c, 0, &g) != DT_OK || dt_shape_tensor(c, 1, &o) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 2, &dim);
	dt_shape_dtype(c, 3, &in_dtype);
	if (!same_shape(&o, g.shape, g.rank)) {
		struct dt_dimbuf b1, b2;
		return dt_shape_fail(c, "Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 'output'; but %s does not equal %s",
				     dt_dims_format(&b1, g.shape, g.rank),
				     dt_dims_format(&b2, o.shape, o.rank));
	}
	if (!dt_shape_wrap_dim(c, &dim, g.rank))
		return DT_EINPUT;
	enum dt_dtype dt = (enum dt_dtype)g.dtype;
	if (dt == DT_FLOAT32 && in_dtype == DT_FLOAT16)
		dt = DT_FLOAT16;
	struct dt_tinfo r = dt_tinfo_contiguous(dt, g.shape, g.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* Checks of _check_layer_norm_inputs; sets *axis = first normalized dim. */
static int layer_norm_check(struct dt_shape_ctx *c, const struct dt_tinfo *in,
			    const int64_t *ns, int nn, int pw, int pb, int *axis)
{
	struct dt_dimbuf b1, b2, b3;
	if (nn < 1)
		return dt_shape_fail(c, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = %s",
				     dt_dims_format(&b1, ns, nn));
	int params[2] = {pw, pb};
	for (int k = 0; k < 2; k++) {
		struct dt_tinfo w;
		if (params[k] < 0 || !dt_shape_has(c, params[k]))
			continue;
		if (dt_shape_tensor(c, params[k], &w) != DT_OK)
			return DT_EINPUT;
		if (!same_shape(&w, ns, nn))
			return dt_shape_fail(c, "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and normalized_shape = %s",
					     dt_shape_param_name(c, params[k]),
					     dt_shape_param_name(c, params[k]),
					     dt_dims_format(&b1, w.shape, w.rank),
					     dt_dims_format(&b2, ns, nn));
	}
	*axis = in->rank - nn;
	if (*axis < 0 || memcmp(in->shape + *axis, ns, (size_t)nn * sizeof(int64_t)))
		return dt_shape_fail(c, "Given normalized_shape=%s, expected input with shape [*, %s, but got input of size%s",
				     dt_dims_format(&b1, ns, nn),
				     dt_dims_format(&b2, ns, nn) + 1,
				     dt_dims_format(&b3, in->shape, in->rank));
	return DT_OK;
}

/* native_layer_norm(input, normalized_shape, weight, bias, eps) -> (out,
 * mean, rstd); mean/rstd have the batch dims followed by 1s and CUDA's
 * accumulation dtype: float32 for half inputs (also what meta tensors
 * give; torch 1.13's CPU kernel keeps bfloat16). */
int dt_shape_layer_norm(struct dt_shape_ctx *c)
{
	struct dt_tinfo in;
	int64_t ns[DT_MAX_RANK + 1];
	int nn, axis;
	if (dt_shape_tensor(c, 0, &in) != DT_OK ||
	    dt_shape_ints(c, 1, ns, DT_MAX_RANK + 1, &nn) != DT_OK ||
	    layer_norm_check(c, &in, ns, nn, 2, 3, &axis) != DT_OK)
		return DT_EINPUT;
	struct dt_tinfo out = dt_tinfo_contiguous((enum dt_dtype)in.dtype, in.shape, in.rank);
	int64_t stat[DT_MAX_RANK];
	for (int d = 0; d < in.rank; d++)
		stat[d] = d < axis ? in.shape[d] : 1;
	enum dt_dtype acc = in.dtype == DT_FLOAT16 || in.dtype == DT_BFLOAT16
				    ? DT_FLOAT32
				    : (enum dt_dtype)in.dtype;
	struct dt_tinfo st = dt_tinfo_contiguous(acc, stat, in.rank);
	dt_shape_emit(c, &out);
	dt_shape_emit(c, &st);
	dt_shape_emit(c, &st);
	return DT_OK;
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean,
 * rstd, weight, bias, output_mask) -> (grad_input, grad_weight,
 * grad_bias). Results the mask turns off are None in PyTorch; dtopt still
 * describes them (weight/bias-like) so getitem indices stay valid. */
int dt_shape_layer_norm_backward(struct dt_shape_ctx *c)
{
	struct dt_tinfo g, in, mean, rstd;
	int64_t ns[DT_MAX_RANK + 1];
	int nn, axis;
	if (dt_shape_tensor(c, 0, &g) != DT_OK || dt_shape_tensor(c, 1, &in) != DT_OK ||
	    dt_shape_tensor(c, 3, &mean) != DT_OK || dt_shape_tensor(c, 4, &rstd) != DT_OK ||
	    dt_shape_ints(c, 2, ns, DT_MAX_RANK + 1, &nn) != DT_OK ||
	    layer_norm_check(c, &in, ns, nn, 5, 6, &axis) != DT_OK)
		return DT_EINPUT;
	if (!same_shape(&g, in.shape, in.rank)) {
		struct dt_dimbuf b1, b2;
		return dt_shape_fail(c, "grad_out of shape %s does not match input of shape %s",
				     dt_dims_format(&b1, g.shape, g.rank),
				     dt_dims_format(&b2, in.shape, in.rank));
	}
	struct dt_tinfo gi = dt_tinfo_contiguous((enum dt_dtype)in.dtype, in.shape, in.rank);
	dt_shape_emit(c, &gi);
	for (int p = 5; p <= 6; p++) {
		struct dt_tinfo w;
		if (dt_shape_has(c, p)) {
			if (dt_shape_tensor(c, p, &w) != DT_OK)
				return DT_EINPUT;
		} else {
			w = dt_tinfo_contiguous((enum dt_dtype)in.dtype, ns, nn);
		}
		struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)w.dtype, ns, nn);
		dt_shape_emit(c, &r);
	}
	return DT_OK;
}

static int check_indices(struct dt_shape_ctx *c, const struct dt_tinfo *idx)
{
	if (idx->dtype != DT_INT64 && idx->dtype != DT_INT32)
		return dt_shape_fail(c, "Expected tensor for argument #1 'indices' to have one of the following scalar types: int64, int32; but got %s instead",
				     dt_dtype_name((enum dt_dtype)idx->dtype));
	return DT_OK;
}

/* embedding(weight, indices, …) -> indices.shape + [weight.size(1)]. */
int dt_shape_embedding(struct dt_shape_ctx *c)
{
	struct dt_tinfo w, idx;
	if (dt_shape_tensor(c, 0, &w) != DT_OK || dt_shape_tensor(c, 1, &idx) != DT_OK ||
	    check_indices(c, &idx) != DT_OK)
		return DT_EINPUT;
	if (w.rank != 2)
		return dt_shape_fail(c, "'weight' must be 2-D, got a %d-D tensor", w.rank);
	if (idx.rank >= DT_MAX_RANK)
		return dt_shape_fail(c, "result would have more than %d dimensions",
				     DT_MAX_RANK);
	int64_t shape[DT_MAX_RANK];
	memcpy(shape, idx.shape, (size_t)idx.rank * sizeof(int64_t));
	shape[idx.rank] = w.shape[1];
	if (dt_shape_check_sizes(c, shape, idx.rank + 1) != DT_OK)
		return DT_EINPUT;
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)w.dtype, shape, idx.rank + 1);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* embedding_dense_backward(grad, indices, num_weights, …) ->
 * [num_weights, grad.size(-1)]. */
int dt_shape_embedding_backward(struct dt_shape_ctx *c)
{
	struct dt_tinfo g, idx;
	int64_t shape[2];
	if (dt_shape_tensor(c, 0, &g) != DT_OK || dt_shape_tensor(c, 1, &idx) != DT_OK ||
	    check_indices(c, &idx) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 2, &shape[0]);
	if (g.rank == 0 || shape[0] < 0)
		return dt_shape_fail(c, "needs a grad with dimensions and num_weights >= 0");
	shape[1] = g.shape[g.rank - 1];
	if (dt_shape_check_sizes(c, shape, 2) != DT_OK)
		return DT_EINPUT;
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)g.dtype, shape, 2);
	dt_shape_emit(c, &r);
	return DT_OK;
}

/* Shared checks of nll_loss_forward/backward on self (param ps), target
 * (pt) and weight (pw). */
static int nll_check(struct dt_shape_ctx *c, int ps, int pt, int pw,
		     struct dt_tinfo *self)
{
	struct dt_tinfo target, w;
	struct dt_dimbuf b1, b2;
	if (dt_shape_tensor(c, ps, self) != DT_OK || dt_shape_tensor(c, pt, &target) != DT_OK)
		return DT_EINPUT;
	if (self->rank < 1 || self->rank > 2)
		return dt_shape_fail(c, "input tensor should be 1D or 2D");
	if (target.rank > 1)
		return dt_shape_fail(c, "0D or 1D target tensor expected, multi-target not supported");
	bool no_batch = self->rank == 1 && target.rank == 0;
	if (!no_batch && (target.rank == 0 || self->shape[0] != target.shape[0]))
		return dt_shape_fail(c, "size mismatch (got input: %s, target: %s)",
				     dt_dims_format(&b1, self->shape, self->rank),
				     dt_dims_format(&b2, target.shape, target.rank));
	int64_t classes = self->shape[self->rank - 1];
	if (dt_shape_has(c, pw)) {
		if (dt_shape_tensor(c, pw, &w) != DT_OK)
			return DT_EINPUT;
		if (w.rank != 1 || w.shape[0] != classes)
			return dt_shape_fail(c, "weight tensor should be defined either for all %lld classes or no classes but got weight tensor of shape: %s",
					     (long long)classes,
					     dt_dims_format(&b1, w.shape, w.rank));
	}
	return DT_OK;
}

/* nll_loss_forward(self, target, weight, reduction, ignore_index) ->
 * (output, total_weight): output is [N] for reduction none on 2-D input,
 * else 0-d; total_weight is 0-d. */
int dt_shape_nll_loss(struct dt_shape_ctx *c)
{
	struct dt_tinfo self;
	int64_t reduction;
	if (nll_check(c, 0, 1, 2, &self) != DT_OK)
		return DT_EINPUT;
	dt_shape_int(c, 3, &reduction);
	bool per_item = reduction == 0 && self.rank == 2;
	struct dt_tinfo out = dt_tinfo_contiguous((enum dt_dtype)self.dtype, self.shape, per_item ? 1 : 0);
	struct dt_tinfo tw = dt_tinfo_contiguous((enum dt_dtype)self.dtype, self.shape, 0);
	dt_shape_emit(c, &out);
	dt_shape_emit(c, &tw);
	return DT_OK;
}

/* nll_loss_backward(grad_output, self, target, weight, reduction,
 * ignore_index, total_weight) -> like self. */
int dt_shape_nll_loss_backward(struct dt_shape_ctx *c)
{
	struct dt_tinfo self, tw;
	if (nll_check(c, 1, 2, 3, &self) != DT_OK || dt_shape_tensor(c, 6, &tw) != DT_OK)
		return DT_EINPUT;
	if (dt_tinfo_numel(&tw) != 1)
		return dt_shape_fail(c, "expected total_weight to be a single element tensor, got: %lld elements",
				     (long long)dt_tinfo_numel(&tw));
	struct dt_tinfo r = dt_tinfo_contiguous((enum dt_dtype)self.dtype, self.shape, self.rank);
	dt_shape_emit(c, &r);
	return DT_OK;
}
