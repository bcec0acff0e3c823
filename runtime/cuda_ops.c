// SPDX-License-Identifier: MIT
/* cuda_ops.c: the NCCL+CUDA backend's data movement and reductions on
 * the GPU: the copying ops (clone, contiguous, _to_copy,
 * convert_element_type, a reshape that cannot alias, the single-process
 * redistribute), cat and stack as copies into slices of the result,
 * constant_pad_nd, slice/select backward and the dt.* ops of SPMD
 * programs as a fill plus copies, and the reductions' geometry for the
 * generic kernel of cuda_reduce.cu (also a whole-tensor sum or mean for
 * mse_loss).
 * Semantics follow cpu_copy.c and cpu_reduce.c. */
#include "cuda_internal.h"

#include <string.h>

/* ---- copies ---- */

int dt_cuda_copy_op(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *in = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	if (!in)
		return dt_cpu_fail(ctx->b, c, "the input is missing");
	if (c->op == DT_OP_RESHAPE || c->op == DT_OP_UNSAFE_VIEW) {
		if (dt_rt_numel(in) != dt_rt_numel(out) ||
		    in->dtype != out->dtype || !dt_rt_is_contiguous(out))
			return dt_cpu_fail(
			    ctx->b, c,
			    "a copying reshape needs a contiguous result with "
			    "the input's elements");
		struct dt_rt_tensor flat =
		    *out; /* out seen in the input's shape */
		flat.rank = in->rank;
		memcpy(flat.shape, in->shape, sizeof(flat.shape));
		dt_contiguous_strides(flat.shape, flat.rank, flat.stride);
		return dt_cuda_copy(ctx, c, &flat, in);
	}
	if (in->rank != out->rank ||
	    memcmp(in->shape, out->shape, (size_t)in->rank * sizeof(int64_t)) !=
		0)
		return dt_cpu_fail(ctx->b, c,
				   "result shape differs from the input's");
	return dt_cuda_copy(ctx, c, out, in);
}

static bool same_shape(const struct dt_rt_tensor *a,
		       const struct dt_rt_tensor *b)
{
	return a->rank == b->rank &&
	       memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) ==
		   0;
}

/* cat and stack: each input copied into its slice of the result (legacy
 * empty 1-D tensors take no part in cat). */
int dt_cuda_join(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *t[DT_MAX_RESULTS];
	struct dt_rt_tensor *out = &c->outputs[0];
	int n = dt_cpu_tensors(c, 0, t, DT_MAX_RESULTS);
	int64_t dim = 0, pos = 0;
	dt_cpu_int(c, 1, &dim);
	if (!dt_rt_wrap_dim(&dim, out->rank))
		return dt_cpu_fail(ctx->b, c, "dim %lld out of range",
				   (long long)dim);
	for (int i = 0; i < n; i++) {
		if (!t[i])
			return dt_cpu_fail(ctx->b, c,
					   "tensor %d of the list is none", i);
		struct dt_rt_tensor part;
		if (c->op == DT_OP_STACK) {
			part = dt_rt_select(out, (int)dim, i);
		} else {
			if (t[i]->rank == 1 && t[i]->shape[0] == 0 &&
			    out->rank != 1)
				continue;
			if (t[i]->rank != out->rank)
				return dt_cpu_fail(
				    ctx->b, c,
				    "tensor %d has rank %d, the result %d", i,
				    t[i]->rank, out->rank);
			part =
			    dt_rt_narrow(out, (int)dim, pos, t[i]->shape[dim], 1);
			pos += t[i]->shape[dim];
		}
		if (!same_shape(&part, t[i]))
			return dt_cpu_fail(ctx->b, c,
					   "a tensor does not fit the result");
		if (dt_cuda_copy(ctx, c, &part, t[i]) != DT_OK)
			return DT_ERUNTIME;
	}
	return DT_OK;
}

/* constant_pad_nd: the value everywhere, then the input's kept part. */
static int pad(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *in = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	int64_t p[2 * DT_MAX_RANK];
	int np = dt_cpu_ints(c, 1, p, 2 * DT_MAX_RANK);
	double value = 0;
	dt_cpu_number(c, 2, &value);
	if (np < 0 || np % 2 || np / 2 > in->rank || out->rank != in->rank)
		return dt_cpu_fail(ctx->b, c, "bad pad list");
	struct dt_rt_tensor src = *in, dst = *out;
	for (int k = 0; k < np / 2; k++) {
		int d = in->rank - 1 - k;
		int64_t before = p[2 * k], after = p[2 * k + 1];
		int64_t cut_b = before < 0 ? -before : 0,
			cut_a = after < 0 ? -after : 0;
		int64_t len = in->shape[d] - cut_b - cut_a;
		if (len < 0)
			len = 0;
		src = dt_rt_narrow(&src, d, cut_b, len, 1);
		dst = dt_rt_narrow(&dst, d, before > 0 ? before : 0, len, 1);
	}
	if (!same_shape(&dst, &src))
		return dt_cpu_fail(ctx->b, c,
				   "result does not fit the padding");
	if (dt_cuda_fill(ctx, c, out, value) != DT_OK)
		return DT_ERUNTIME;
	return dt_cuda_copy(ctx, c, &dst, &src);
}

/* slice_backward / select_backward: zeros with grad in the slice. */
static int scatter_back(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *g = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	int64_t dim = 0, start = 0, end = 0, step = 1;
	dt_cpu_int(c, 2, &dim);
	if (!dt_rt_wrap_dim(&dim, out->rank) || out->rank == 0)
		return dt_cpu_fail(ctx->b, c, "dim %lld out of range",
				   (long long)dim);
	int64_t size = out->shape[dim];
	struct dt_rt_tensor part;
	if (c->op == DT_OP_SELECT_BACKWARD) {
		dt_cpu_int(c, 3, &start);
		if (start < -size || start >= size)
			return dt_cpu_fail(
			    ctx->b, c, "index %lld out of range for size %lld",
			    (long long)start, (long long)size);
		part =
		    dt_rt_select(out, (int)dim, start < 0 ? start + size : start);
	} else {
		dt_cpu_int(c, 3, &start);
		dt_cpu_int(c, 4, &end);
		dt_cpu_int(c, 5, &step);
		if (step <= 0)
			return dt_cpu_fail(ctx->b, c,
					   "slice step must be positive");
		if (start < 0)
			start += size;
		if (end < 0)
			end += size;
		start = start < 0 ? 0 : start > size ? size : start;
		end = end < start ? start : end > size ? size : end;
		part = dt_rt_narrow(out, (int)dim, start,
				(end - start + step - 1) / step, step);
	}
	if (!same_shape(&part, g))
		return dt_cpu_fail(ctx->b, c,
				   "grad_output does not fit the slice");
	if (dt_cuda_fill(ctx, c, out, 0) != DT_OK)
		return DT_ERUNTIME;
	return dt_cuda_copy(ctx, c, &part, g);
}

/* The SPMD ops (dt.*): the padding (local_shard's fill, else zeros),
 * then each copy. */
static int spmd(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct dt_rt_tensor (*v)[2];
	int n;
	double fill = 0;
	if (c->op == DT_OP_LOCAL_SHARD)
		dt_cpu_number(c, 7, &fill);
	if (dt_cpu_spmd_views(ctx->b, c, &v, &n) != DT_OK)
		return DT_ERUNTIME;
	int status = dt_cuda_fill(ctx, c, &c->outputs[0], fill);
	for (int j = 0; j < n && status == DT_OK; j++)
		status = dt_cuda_copy(ctx, c, &v[j][1], &v[j][0]);
	dt_free(v);
	return status;
}

int dt_cuda_pad(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	switch (c->op) {
	case DT_OP_CONSTANT_PAD_ND:
		return pad(ctx, c);
	case DT_OP_LOCAL_SHARD:
	case DT_OP_PACK_BLOCKS:
	case DT_OP_UNPACK_BLOCKS:
	case DT_OP_PACK_PIECES:
	case DT_OP_UNPACK_PIECES:
		return spmd(ctx, c);
	default:
		return scatter_back(ctx, c);
	}
}

/* ---- reductions ---- */

/* The kernels' kinds are the IR's (dt_reduction_of). */
_Static_assert(DT_CU_RED_SUM == (int)DT_RED_SUM && DT_CU_RED_MEAN == (int)DT_RED_MEAN &&
		       DT_CU_RED_MAX == (int)DT_RED_MAX && DT_CU_RED_MIN == (int)DT_RED_MIN &&
		       DT_CU_RED_ARGMAX == (int)DT_RED_ARGMAX &&
		       DT_CU_RED_ARGMIN == (int)DT_RED_ARGMIN &&
		       DT_CU_RED_LOGSUMEXP == (int)DT_RED_LOGSUMEXP &&
		       DT_CU_RED_VAR == (int)DT_RED_VAR,
	       "enum dt_cu_reduce_kind follows enum dt_reduce_kind");

/* The reduced dims of x in row-major order, merged where contiguous. */
static void inner_dims(struct dt_cu_reduce_op *p, const struct dt_rt_tensor *xi)
{
	int nd = 0;
	for (int d = 0; d < xi->rank; d++) {
		if (xi->shape[d] == 1)
			continue;
		if (nd > 0 &&
		    p->inner_stride[nd - 1] == xi->stride[d] * xi->shape[d]) {
			p->inner_shape[nd - 1] *= xi->shape[d];
			p->inner_stride[nd - 1] = xi->stride[d];
			continue;
		}
		p->inner_shape[nd] = xi->shape[d];
		p->inner_stride[nd] = xi->stride[d];
		nd++;
	}
	p->inner_rank = nd;
}

/* Results of rows with no element: sum 0, mean and var NaN (0/0). */
static int reduce_empty(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
			int kind, double correction, struct dt_rt_tensor *outs,
			int nout)
{
	if (kind != DT_CU_RED_SUM && kind != DT_CU_RED_MEAN &&
	    kind != DT_CU_RED_VAR)
		return dt_cpu_fail(ctx->b, c,
				   "cannot reduce over a zero-size dimension");
	double zero = 0, v[2] = {0, 0};
	if (kind != DT_CU_RED_SUM) {
		v[0] = v[1] = zero / zero;
		if (kind == DT_CU_RED_VAR)
			v[0] = zero / (-correction > 0 ? -correction : 0);
	}
	for (int k = 0; k < nout; k++)
		if (dt_cuda_fill(ctx, c, &outs[k], v[k]) != DT_OK)
			return DT_ERUNTIME;
	return DT_OK;
}

/* Runs reduction p of x over the dims `mask` marks into results[0..nout)
 * (keepdim: they keep the reduced dims as size 1). */
static int run_reduce(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		      struct dt_cu_reduce_op *pp, const struct dt_rt_tensor *x,
		      const bool *mask, bool keepdim,
		      const struct dt_rt_tensor *results, int nout)
{
	struct dt_cu_reduce_op p = *pp;
	/* rows: x's kept dims; each result seen in those dims */
	struct dt_rt_tensor xo, xi, outs[2];
	dt_cpu_split_dims(x, mask, &xo, &xi);
	for (int k = 0; k < nout; k++) {
		struct dt_rt_tensor unused;
		outs[k] = results[k];
		if (keepdim && x->rank > 0)
			dt_cpu_split_dims(&results[k], mask, &outs[k],
					  &unused);
		DT_REQUIRE(dt_rt_numel(&outs[k]) == dt_rt_numel(&xo));
		outs[k].rank = xo.rank;
		memcpy(outs[k].shape, xo.shape, sizeof(xo.shape));
		if (!keepdim || x->rank == 0)
			memcpy(outs[k].stride, results[k].stride,
			       sizeof(xo.stride));
	}
	p.nout = nout;
	p.k = dt_rt_numel(&xi);
	if (dt_rt_numel(&xo) == 0)
		return DT_OK;
	if (p.k == 0)
		return reduce_empty(ctx, c, p.kind, p.correction, outs, nout);
	const struct dt_rt_tensor *ts[3] = {&xo, &outs[0],
					    nout > 1 ? &outs[1] : &outs[0]};
	dt_cuda_walk(&p.outer, xo.shape, xo.rank, ts, 3);
	inner_dims(&p, &xi);
	size_t bytes = dt_cu_reduce_scratch(&p);
	void *scratch = NULL;
	if (bytes && !(scratch = dt_cuda_scratch(ctx, c, bytes)))
		return DT_ERUNTIME;
	int rc = dt_cuda_check(ctx, c->m, c->node, "dt_cu_reduce",
			       dt_cu_reduce(&p, scratch, ctx->stream));
	dt_cuda_scratch_free(ctx, scratch);
	return rc;
}

int dt_cuda_reduce_all(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		       bool mean, const struct dt_rt_tensor *x,
		       struct dt_rt_tensor *out)
{
	struct dt_cu_reduce_op p;
	bool mask[DT_MAX_RANK];
	memset(&p, 0, sizeof(p));
	p.kind = mean ? DT_CU_RED_MEAN : DT_CU_RED_SUM;
	p.correction = 1;
	p.cast = -1;
	for (int d = 0; d < DT_MAX_RANK; d++)
		mask[d] = true;
	return run_reduce(ctx, c, &p, x, mask, false, out, 1);
}

int dt_cuda_reduce(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct dt_reduction def;
	DT_REQUIRE(dt_reduction_of(c->op, &def));
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	bool mask[DT_MAX_RANK], keepdim = false;
	if (dt_cpu_reduce_mask(ctx->b, c, &def, x, mask) != DT_OK)
		return DT_ERUNTIME;
	if (def.pkeep >= 0)
		dt_cpu_bool(c, def.pkeep, &keepdim);
	struct dt_cu_reduce_op p;
	memset(&p, 0, sizeof(p));
	p.kind = def.kind;
	p.correction = 1;
	if (c->op == DT_OP_VAR_MEAN_DIM) {
		bool unbiased = true;
		dt_cpu_bool(c, 2, &unbiased);
		p.correction = unbiased;
	} else if (def.kind == DT_CU_RED_VAR) {
		dt_cpu_number(c, 2, &p.correction);
	}
	enum dt_dtype cast;
	bool sum = def.kind == DT_CU_RED_SUM || def.kind == DT_CU_RED_MEAN;
	p.cast =
	    sum && dt_cpu_dtype(
		       c, c->op == DT_OP_SUM || c->op == DT_OP_MEAN ? 1 : 3,
		       &cast)
		? (int32_t)cast
		: -1;
	return run_reduce(ctx, c, &p, x, mask, keepdim, c->outputs,
			  (int)c->noutputs);
}
