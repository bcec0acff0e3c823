// SPDX-License-Identifier: MIT
/* cuda_index.c: the NCCL+CUDA backend's tril/triu, index_select,
 * index_add, repeat_interleave.Tensor, gather, scatter_add, repeat, flip
 * and cumsum:
 * operands made contiguous, geometry as [outer, size, inner] or as shapes,
 * the kernels of cuda_index.cu, and a staged result where the output is
 * strided. Semantics follow cpu_index.c. */
#include "cuda_internal.h"

#include <string.h>

/* Where an op reads: its index and source parameters (-1: none), whether
 * it writes into a copy of self, and whether that copy is double
 * accumulators (it adds). */
struct operands {
	int index, source;
	bool from_self, accumulate;
};

static struct operands operands_of(enum dt_op op)
{
	switch (op) {
	case DT_OP_INDEX_SELECT:
	case DT_OP_GATHER:
		return (struct operands){2, 0, false, false};
	case DT_OP_INDEX_ADD:
	case DT_OP_SCATTER_ADD:
		return (struct operands){2, 3, true, true};
	case DT_OP_SCATTER_SRC:
		return (struct operands){2, 3, true, false};
	case DT_OP_SCATTER_VALUE:
		return (struct operands){2, -1, true, false};
	default: /* tril, triu, repeat_interleave, repeat, flip, cumsum */
		return (struct operands){-1, 0, false, false};
	}
}

/* t's shape in `rank` dims (a 0-d t as [1, ...]). */
static void copy_shape(int64_t *dst, const struct dt_rt_tensor *t, int rank)
{
	for (int d = 0; d < rank; d++)
		dst[d] = d < t->rank ? t->shape[d] : 1;
}

/* Fills p's kind and geometry from the call; `in` is the contiguous
 * source (the repeats for repeat_interleave). */
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
		dt_rt_around(x, x->rank - 2, &p->outer, &p->size, &p->inner);
		return DT_OK;
	case DT_OP_REPEAT_INTERLEAVE:
		p->kind = DT_CU_REPEAT_INTERLEAVE;
		p->n = dt_rt_numel(x);
		p->size = c->outputs[0].shape[0];
		p->index = dt_cuda_ptr(in);
		p->index_dtype = in->dtype;
		return dt_cuda_status(
		    ctx, c, &p->err,
		    "the repeats are negative or do not sum to %lld",
		    (long long)p->size);
	case DT_OP_CUMSUM:
		p->kind = DT_CU_CUMSUM;
		dt_cpu_int(c, 1, &dim);
		dt_rt_wrap_dim(&dim, x->rank);
		dt_rt_around(x, dim, &p->outer, &p->size, &p->inner);
		return DT_OK;
	case DT_OP_REPEAT:
	case DT_OP_FLIP: {
		/* one kernel: the output tiles self (flip: once) */
		p->kind = c->op == DT_OP_FLIP ? DT_CU_FLIP : DT_CU_REPEAT;
		p->rank = c->outputs[0].rank;
		copy_shape(p->shape, &c->outputs[0], p->rank);
		p->self_rank = x->rank;
		copy_shape(p->self_shape, x, x->rank);
		int64_t dims[DT_MAX_RANK];
		int nd = c->op == DT_OP_FLIP ? dt_cpu_ints(c, 1, dims, DT_MAX_RANK)
					     : 0;
		for (int i = 0; i < nd; i++)
			if (dt_rt_wrap_dim(&dims[i], x->rank) && x->rank)
				p->flip_mask |= 1u << dims[i];
		return DT_OK;
	}
	default:
		break;
	}
	dt_cpu_int(c, 1, &dim);
	dt_rt_wrap_dim(&dim, x->rank);
	if (c->op == DT_OP_GATHER || c->op == DT_OP_SCATTER_ADD ||
	    c->op == DT_OP_SCATTER_SRC || c->op == DT_OP_SCATTER_VALUE) {
		p->kind = c->op == DT_OP_GATHER	       ? DT_CU_GATHER
			  : c->op == DT_OP_SCATTER_ADD ? DT_CU_SCATTER_ADD
			  : c->op == DT_OP_SCATTER_SRC ? DT_CU_SCATTER_SRC
						       : DT_CU_SCATTER_VALUE;
		if (c->op == DT_OP_SCATTER_VALUE &&
		    dt_cpu_number(c, 3, &p->alpha))
			p->alpha =
			    dt_round_to((enum dt_dtype)x->dtype, p->alpha);
		p->rank = idx->rank;
		p->dim = (int32_t)dim;
		copy_shape(p->shape, idx, p->rank);
		copy_shape(p->self_shape, x, p->rank);
		if (c->op == DT_OP_SCATTER_ADD || c->op == DT_OP_SCATTER_SRC)
			copy_shape(p->src_shape, dt_kernel_input(c, 3),
				   p->rank);
		return dt_cuda_status(
		    ctx, c, &p->err,
		    "an index is out of bounds for dimension %lld",
		    (long long)dim);
	}
	p->kind =
	    c->op == DT_OP_INDEX_SELECT ? DT_CU_INDEX_SELECT : DT_CU_INDEX_ADD;
	dt_rt_around(x, dim, &p->outer, &p->size, &p->inner);
	p->n = dt_rt_numel(idx);
	p->alpha = 1;
	dt_cpu_number(c, 4, &p->alpha);
	p->alpha = dt_round_to((enum dt_dtype)x->dtype, p->alpha);
	return dt_cuda_status(ctx, c, &p->err,
			      "an index is out of range for a dim of size %lld",
			      (long long)p->size);
}

int dt_cuda_index(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct operands o = operands_of(c->op);
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	const struct dt_rt_tensor *idx =
	    o.index >= 0 ? dt_kernel_input(c, o.index) : NULL;
	const struct dt_rt_tensor *src =
	    o.source >= 0 ? dt_kernel_input(c, o.source) : NULL;
	struct dt_rt_tensor *out = &c->outputs[0];
	struct dt_rt_tensor in, ix, dst;
	struct dt_buffer hin = {0}, hix = {0}, hdst = {0};
	struct dt_cu_index_op p;
	memset(&p, 0, sizeof(p));
	int rc = dt_cuda_contiguous(ctx, c, src, &in, &hin);
	if (rc == DT_OK)
		rc = dt_cuda_contiguous(ctx, c, idx, &ix, &hix);
	/* index_add and scatter_add accumulate in double; they and the
	 * scatters start from self */
	if (rc == DT_OK && (o.accumulate || !dt_rt_is_contiguous(out)))
		rc = dt_cuda_temp(ctx, c, out->shape, out->rank,
				  o.accumulate ? DT_FLOAT64
					       : (enum dt_dtype)out->dtype,
				  &dst, &hdst);
	else if (rc == DT_OK)
		dst = *out;
	if (rc == DT_OK && o.from_self)
		rc = dt_cuda_copy(ctx, c, &dst, x);
	if (rc == DT_OK)
		rc = prepare(ctx, c, &p, &in, idx ? &ix : NULL);
	if (rc == DT_OK) {
		if (idx) {
			p.index = dt_cuda_ptr(&ix);
			p.index_dtype = ix.dtype;
		}
		if (src && c->op != DT_OP_REPEAT_INTERLEAVE) {
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
