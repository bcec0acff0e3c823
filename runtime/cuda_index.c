// SPDX-License-Identifier: MIT
/* cuda_index.c: the NCCL+CUDA backend's tril/triu, index_select,
 * index_add and repeat_interleave.Tensor: operands made contiguous,
 * geometry as [outer, size, inner], the kernels of cuda_index.cu, and a
 * staged result where the output is strided. Semantics follow
 * cpu_index.c. */
#include "cuda_internal.h"

#include <string.h>

/* Geometry of t around dim (tril/triu: the last two dims). */
static void around(const struct dt_rt_tensor *t, int64_t dim,
		   struct dt_cu_index_op *p)
{
	p->outer = p->size = p->inner = 1;
	for (int d = 0; d < t->rank; d++) {
		if (d < dim)
			p->outer *= t->shape[d];
		else if (d == dim)
			p->size = t->shape[d];
		else
			p->inner *= t->shape[d];
	}
}

/* Fills p from the call; `in` and `dst` are the contiguous operands. */
static int prepare(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		   struct dt_cu_index_op *p, const struct dt_rt_tensor *in,
		   const struct dt_rt_tensor *idx)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	int64_t dim = 0;
	switch (c->op) {
	case DT_OP_TRIL:
	case DT_OP_TRIU:
		p->kind = c->op == DT_OP_TRIL ? DT_CU_TRIL : DT_CU_TRIU;
		dt_cpu_int(c, 1, &p->diagonal);
		around(x, x->rank - 2, p);
		return DT_OK;
	case DT_OP_REPEAT_INTERLEAVE:
		p->kind = DT_CU_REPEAT_INTERLEAVE;
		p->n = dt_rt_numel(x);
		p->size = c->outputs[0].shape[0];
		p->index = dt_cuda_ptr(in);
		p->index_dtype = in->dtype;
		return dt_cuda_status(ctx, c, &p->err,
				      "the repeats are negative or do not sum to %lld",
				      (long long)p->size);
	default:
		p->kind = c->op == DT_OP_INDEX_SELECT ? DT_CU_INDEX_SELECT : DT_CU_INDEX_ADD;
		dt_cpu_int(c, 1, &dim);
		dt_rt_wrap_dim(&dim, x->rank);
		around(x, dim, p);
		p->n = dt_rt_numel(idx);
		p->alpha = 1;
		dt_cpu_number(c, 4, &p->alpha);
		p->alpha = dt_round_to((enum dt_dtype)x->dtype, p->alpha);
		return dt_cuda_status(ctx, c, &p->err,
				      "an index is out of range for a dim of size %lld",
				      (long long)p->size);
	}
}

int dt_cuda_index(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	bool add = c->op == DT_OP_INDEX_ADD;
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	const struct dt_rt_tensor *idx = c->op == DT_OP_INDEX_SELECT || add
						 ? dt_kernel_input(c, 2) : NULL;
	const struct dt_rt_tensor *src = add ? dt_kernel_input(c, 3) : x;
	struct dt_rt_tensor *out = &c->outputs[0];
	struct dt_rt_tensor in, ix, dst;
	struct dt_buffer hin = {0}, hix = {0}, hdst = {0};
	struct dt_cu_index_op p;
	memset(&p, 0, sizeof(p));
	int rc = dt_cuda_contiguous(ctx, c, src, &in, &hin);
	if (rc == DT_OK)
		rc = dt_cuda_contiguous(ctx, c, idx, &ix, &hix);
	/* index_add accumulates in double, starting from self */
	if (rc == DT_OK && (add || !dt_rt_is_contiguous(out)))
		rc = dt_cuda_temp(ctx, c, out->shape, out->rank,
				  add ? DT_FLOAT64 : (enum dt_dtype)out->dtype, &dst, &hdst);
	else if (rc == DT_OK)
		dst = *out;
	if (rc == DT_OK && add)
		rc = dt_cuda_copy(ctx, c, &dst, x);
	if (rc == DT_OK)
		rc = prepare(ctx, c, &p, &in, idx ? &ix : NULL);
	if (rc == DT_OK) {
		if (idx) {
			p.index = dt_cuda_ptr(&ix);
			p.index_dtype = ix.dtype;
		}
		if (c->op != DT_OP_REPEAT_INTERLEAVE) {
			p.src = dt_cuda_ptr(&in);
			p.src_dtype = in.dtype;
		}
		p.dst = dt_cuda_ptr(&dst);
		p.dst_dtype = dst.dtype;
		rc = dt_cuda_check(ctx, c->m, c->node, "dt_cu_index",
				   dt_cu_index(&p, ctx->stream));
	}
	if (rc == DT_OK && hdst.data)
		rc = dt_cuda_copy(ctx, c, out, &dst);
	dt_cuda_release(ctx, &hdst);
	dt_cuda_release(ctx, &hix);
	dt_cuda_release(ctx, &hin);
	return rc;
}
