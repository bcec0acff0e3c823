// SPDX-License-Identifier: MIT
/* cuda_kernel.c: the NCCL+CUDA backend's kernel dispatch: one entry per
 * computing op of ir/ops.def (the families mirror cpu_kernel.c's), the
 * elementwise, random and creation ops on the generic kernels of
 * cuda_ew.cu, strided walks, scratch and temporaries, deferred kernel
 * errors, and the CPU-kernel fallback for what no CUDA kernel covers. */
#include "cuda_internal.h"

#include <math.h>
#include <string.h>

_Static_assert(DT_CU_MAX_RANK == DT_MAX_RANK, "walk rank");
_Static_assert(DT_CU_F32 == (int)DT_FLOAT32 && DT_CU_F16 == (int)DT_FLOAT16 &&
		   DT_CU_BF16 == (int)DT_BFLOAT16 &&
		   DT_CU_F64 == (int)DT_FLOAT64 && DT_CU_I64 == (int)DT_INT64 &&
		   DT_CU_I32 == (int)DT_INT32 && DT_CU_I16 == (int)DT_INT16 &&
		   DT_CU_I8 == (int)DT_INT8 && DT_CU_U8 == (int)DT_UINT8 &&
		   DT_CU_BOOL == (int)DT_BOOL,
	       "dtype codes follow enum dt_dtype");

/* ---- errors ---- */

int dt_cuda_fail(struct dt_cuda_ctx *ctx, const struct dt_module *m,
		 const struct dt_node *n, const char *api, const char *error)
{
	if (n)
		return dt_rt_fail(ctx->b, m, n, "%s failed: %s", api, error);
	dt_diag_report(ctx->b->diag, DT_ERROR, m ? m->file : NULL, 0, NULL,
		       "%s failed: %s", api, error);
	return DT_ERUNTIME;
}

int dt_cuda_check(struct dt_cuda_ctx *ctx, const struct dt_module *m,
		  const struct dt_node *n, const char *api, cudaError_t e)
{
	if (e == cudaSuccess)
		return DT_OK;
	return dt_cuda_fail(ctx, m, n, api, cudaGetErrorString(e));
}

/* dt_cuda_check at call c's node (c may be NULL: the graph). */
static int check(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 const char *api, cudaError_t e)
{
	return dt_cuda_check(ctx, c ? c->m : ctx->m, c ? c->node : NULL, api,
			     e);
}

/* The status word is read only when a launch since the last
 * synchronization could have set it. */
int dt_cuda_sync(struct dt_cuda_ctx *ctx)
{
	int32_t code = 0;
	int rc = DT_OK;
	if (ctx->nchecks > 0)
		rc = dt_cuda_check(
		    ctx, ctx->m, NULL, "cudaMemcpyAsync",
		    cudaMemcpyAsync(&code, ctx->status, sizeof(code),
				    cudaMemcpyDeviceToHost, ctx->stream));
	int sync = dt_cuda_check(ctx, ctx->m, NULL, "cudaStreamSynchronize",
				 cudaStreamSynchronize(ctx->stream));
	rc = rc == DT_OK ? sync : rc;
	if (rc == DT_OK && code != 0) {
		rc = dt_cuda_check(
		    ctx, ctx->m, NULL, "cudaMemsetAsync",
		    cudaMemsetAsync(ctx->status, 0, sizeof(code), ctx->stream));
		if (code > 0 && code <= ctx->nchecks) {
			const struct dt_cuda_check *k = &ctx->checks[code - 1];
			rc = dt_rt_fail(ctx->b, k->m, k->node, "%s", k->what);
		}
	}
	ctx->nchecks = 0;
	return rc;
}

int dt_cuda_status(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		   struct dt_cu_status *out, const char *fmt, ...)
{
	if (ctx->nchecks == DT_CUDA_MAX_CHECKS && dt_cuda_sync(ctx) != DT_OK)
		return DT_ERUNTIME;
	struct dt_cuda_check *k = &ctx->checks[ctx->nchecks++];
	k->m = c->m;
	k->node = c->node;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->what, sizeof(k->what), fmt, ap);
	va_end(ap);
	out->status = ctx->status;
	out->code = ctx->nchecks;
	return DT_OK;
}

/* ---- walks, memory, copies ---- */

void dt_cuda_walk(struct dt_cu_walk *w, const int64_t *shape, int rank,
		  const struct dt_rt_tensor *const *t, int n)
{
	DT_REQUIRE(n <= DT_CU_MAX_OPS && rank <= DT_MAX_RANK);
	int64_t full[DT_CU_MAX_OPS][DT_MAX_RANK],
	    st[DT_CU_MAX_OPS][DT_MAX_RANK];
	int64_t sz[DT_MAX_RANK];
	memset(w, 0, sizeof(*w));
	w->n = n;
	w->numel = dt_numel(shape, rank);
	for (int k = 0; k < n; k++) {
		int lead = rank - (t[k] ? t[k]->rank : 0);
		DT_REQUIRE(lead >= 0);
		for (int d = 0; d < rank; d++) {
			int i = d - lead;
			full[k][d] = !t[k] || i < 0 || t[k]->shape[i] == 1
					 ? 0
					 : t[k]->stride[i];
		}
	}
	/* drop size-1 dims; merge d into the previous kept dim when every
	 * operand walks them as one */
	int nd = 0;
	for (int d = 0; d < rank; d++) {
		if (shape[d] == 1)
			continue;
		bool merge = nd > 0;
		for (int k = 0; k < n && merge; k++)
			merge = st[k][nd - 1] == full[k][d] * shape[d];
		if (merge) {
			sz[nd - 1] *= shape[d];
			for (int k = 0; k < n; k++)
				st[k][nd - 1] = full[k][d];
			continue;
		}
		sz[nd] = shape[d];
		for (int k = 0; k < n; k++)
			st[k][nd] = full[k][d];
		nd++;
	}
	w->rank = nd;
	memcpy(w->shape, sz, (size_t)nd * sizeof(int64_t));
	for (int k = 0; k < n; k++) {
		memcpy(w->t[k].stride, st[k], (size_t)nd * sizeof(int64_t));
		if (!t[k])
			continue;
		w->t[k].data = t[k]->buf->data;
		w->t[k].offset = t[k]->offset;
		w->t[k].dtype = t[k]->dtype;
	}
}

void *dt_cuda_ptr(const struct dt_rt_tensor *t)
{
	return dt_rt_at(t, t->offset);
}

void *dt_cuda_scratch(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		      size_t bytes)
{
	void *p = NULL;
	if (check(ctx, c, "cudaMallocAsync",
		  cudaMallocAsync(&p, bytes ? bytes : 1, ctx->stream)) != DT_OK)
		return NULL;
	return p;
}

/* A failure to free is left to the next synchronization to report. */
void dt_cuda_scratch_free(struct dt_cuda_ctx *ctx, void *p)
{
	if (p)
		(void)cudaFreeAsync(p, ctx->stream);
}

int dt_cuda_temp(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 const int64_t *shape, int rank, enum dt_dtype dtype,
		 struct dt_rt_tensor *out, struct dt_buffer *holder)
{
	int64_t dims[DT_MAX_RANK]; /* shape may point into *out */
	memcpy(dims, shape, (size_t)rank * sizeof(int64_t));
	memset(out, 0, sizeof(*out));
	out->dtype = (uint8_t)dtype;
	out->rank = (uint8_t)rank;
	memcpy(out->shape, dims, (size_t)rank * sizeof(int64_t));
	dt_contiguous_strides(out->shape, rank, out->stride);
	holder->bytes = dt_rt_storage_bytes(out);
	holder->refs = 1;
	holder->data = dt_cuda_scratch(ctx, c, holder->bytes);
	out->buf = holder;
	return holder->data ? DT_OK : DT_ERUNTIME;
}

void dt_cuda_release(struct dt_cuda_ctx *ctx, struct dt_buffer *holder)
{
	dt_cuda_scratch_free(ctx, holder->data);
	holder->data = NULL;
}

static bool same_shape(const struct dt_rt_tensor *a,
		       const struct dt_rt_tensor *b)
{
	return a->rank == b->rank &&
	       memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) ==
		   0;
}

int dt_cuda_copy(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 struct dt_rt_tensor *dst, const struct dt_rt_tensor *src)
{
	if (!same_shape(dst, src)) {
		if (c)
			return dt_rt_fail(
			    ctx->b, c->m, c->node,
			    "copy between tensors of different shapes");
		dt_diag_report(ctx->b->diag, DT_ERROR, NULL, 0, NULL,
			       "copy between tensors of different shapes");
		return DT_ERUNTIME;
	}
	int64_t n = dt_rt_numel(dst);
	if (n == 0)
		return DT_OK;
	if (dst->dtype == src->dtype && dt_rt_is_contiguous(dst) &&
	    dt_rt_is_contiguous(src))
		return check(ctx, c, "cudaMemcpyAsync",
			     cudaMemcpyAsync(
				 dt_cuda_ptr(dst), dt_cuda_ptr(src),
				 (size_t)n * (size_t)dt_dtype_size(dst->dtype),
				 cudaMemcpyDeviceToDevice, ctx->stream));
	struct dt_cu_walk w;
	const struct dt_rt_tensor *ts[2] = {dst, src};
	dt_cuda_walk(&w, dst->shape, dst->rank, ts, 2);
	return check(ctx, c, "dt_cu_copy", dt_cu_copy(&w, ctx->stream));
}

int dt_cuda_fill(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 struct dt_rt_tensor *t, double v)
{
	uint64_t bits = 0;
	dt_store_element((enum dt_dtype)t->dtype, &bits, v);
	int64_t n = dt_rt_numel(t);
	if (n == 0)
		return DT_OK;
	if (bits == 0 && dt_rt_is_contiguous(t))
		return check(
		    ctx, c, "cudaMemsetAsync",
		    cudaMemsetAsync(dt_cuda_ptr(t), 0,
				    (size_t)n * (size_t)dt_dtype_size(t->dtype),
				    ctx->stream));
	struct dt_cu_walk w;
	const struct dt_rt_tensor *tt = t;
	dt_cuda_walk(&w, t->shape, t->rank, &tt, 1);
	return check(ctx, c, "dt_cu_fill", dt_cu_fill(&w, bits, ctx->stream));
}

int dt_cuda_contiguous(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		       const struct dt_rt_tensor *t, struct dt_rt_tensor *out,
		       struct dt_buffer *holder)
{
	holder->data = NULL;
	if (!t || dt_rt_is_contiguous(t)) {
		if (t)
			*out = *t;
		return DT_OK;
	}
	if (dt_cuda_temp(ctx, c, t->shape, t->rank, (enum dt_dtype)t->dtype,
			 out, holder) != DT_OK)
		return DT_ERUNTIME;
	return dt_cuda_copy(ctx, c, out, t);
}

/* ---- elementwise ---- */

enum { EW_PLAIN, EW_COMPARE };

/* cpu_elementwise.c's table: kernel op, params in operand order, which
 * operands keep their dtype, whether the op compares. */
struct ew_def {
	uint8_t op, nin;
	int8_t params[3];
	uint8_t keep, kind;
	bool valid;
};

#define EW2(cu)                                                                \
	{                                                                      \
		cu, 2, {0, 1, 0}, 0, EW_PLAIN, true                            \
	}
#define EW1(cu)                                                                \
	{                                                                      \
		cu, 1, {0, 0, 0}, 0, EW_PLAIN, true                            \
	}
#define CMP(cu)                                                                \
	{                                                                      \
		cu, 2, {0, 1, 0}, 0, EW_COMPARE, true                          \
	}
static const struct ew_def ew_defs[DT_NOPS] = {
    [DT_OP_ADD_TENSOR] = EW2(DT_CU_ADD),
    [DT_OP_ADD_SCALAR] = EW2(DT_CU_ADD),
    [DT_OP_SUB_TENSOR] = EW2(DT_CU_SUB),
    [DT_OP_SUB_SCALAR] = EW2(DT_CU_SUB),
    [DT_OP_RSUB_TENSOR] = EW2(DT_CU_RSUB),
    [DT_OP_RSUB_SCALAR] = EW2(DT_CU_RSUB),
    [DT_OP_MUL_TENSOR] = EW2(DT_CU_MUL),
    [DT_OP_MUL_SCALAR] = EW2(DT_CU_MUL),
    [DT_OP_DIV_TENSOR] = EW2(DT_CU_DIV),
    [DT_OP_DIV_SCALAR] = EW2(DT_CU_DIV),
    [DT_OP_DIV_TENSOR_MODE] = EW2(DT_CU_DIV),
    [DT_OP_DIV_SCALAR_MODE] = EW2(DT_CU_DIV),
    [DT_OP_POW_TENSOR_SCALAR] = EW2(DT_CU_POW),
    [DT_OP_POW_TENSOR_TENSOR] = EW2(DT_CU_POW),
    [DT_OP_POW_SCALAR] = EW2(DT_CU_POW),
    [DT_OP_MAXIMUM] = EW2(DT_CU_MAXIMUM),
    [DT_OP_MINIMUM] = EW2(DT_CU_MINIMUM),
    [DT_OP_ADDCMUL] = {DT_CU_ADDCMUL, 3, {0, 1, 2}, 0, EW_PLAIN, true},
    [DT_OP_ADDCDIV] = {DT_CU_ADDCDIV, 3, {0, 1, 2}, 0, EW_PLAIN, true},
    [DT_OP_EQ_TENSOR] = CMP(DT_CU_EQ),
    [DT_OP_EQ_SCALAR] = CMP(DT_CU_EQ),
    [DT_OP_NE_TENSOR] = CMP(DT_CU_NE),
    [DT_OP_NE_SCALAR] = CMP(DT_CU_NE),
    [DT_OP_LT_TENSOR] = CMP(DT_CU_LT),
    [DT_OP_LT_SCALAR] = CMP(DT_CU_LT),
    [DT_OP_LE_TENSOR] = CMP(DT_CU_LE),
    [DT_OP_LE_SCALAR] = CMP(DT_CU_LE),
    [DT_OP_GT_TENSOR] = CMP(DT_CU_GT),
    [DT_OP_GT_SCALAR] = CMP(DT_CU_GT),
    [DT_OP_GE_TENSOR] = CMP(DT_CU_GE),
    [DT_OP_GE_SCALAR] = CMP(DT_CU_GE),
    [DT_OP_LOGICAL_NOT] = {DT_CU_NOT, 1, {0, 0, 0}, 1, EW_PLAIN, true},
    [DT_OP_WHERE_SELF] = {DT_CU_WHERE, 3, {0, 1, 2}, 1, EW_PLAIN, true},
    [DT_OP_MASKED_FILL_SCALAR] =
	{DT_CU_MASKED_FILL, 3, {0, 1, 2}, 2, EW_PLAIN, true},
    [DT_OP_MASKED_FILL_TENSOR] =
	{DT_CU_MASKED_FILL, 3, {0, 1, 2}, 2, EW_PLAIN, true},
    [DT_OP_NEG] = EW1(DT_CU_NEG),
    [DT_OP_ABS] = EW1(DT_CU_ABS),
    [DT_OP_RELU] = EW1(DT_CU_RELU),
    [DT_OP_GELU] = EW1(DT_CU_GELU),
    [DT_OP_SILU] = EW1(DT_CU_SILU),
    [DT_OP_SIGMOID] = EW1(DT_CU_SIGMOID),
    [DT_OP_TANH] = EW1(DT_CU_TANH),
    [DT_OP_EXP] = EW1(DT_CU_EXP),
    [DT_OP_LOG] = EW1(DT_CU_LOG),
    [DT_OP_SQRT] = EW1(DT_CU_SQRT),
    [DT_OP_RSQRT] = EW1(DT_CU_RSQRT),
    [DT_OP_ERF] = EW1(DT_CU_ERF),
    [DT_OP_RECIPROCAL] = EW1(DT_CU_RECIPROCAL),
    [DT_OP_SIN] = EW1(DT_CU_SIN),
    [DT_OP_COS] = EW1(DT_CU_COS),
    [DT_OP_LOG1P] = EW1(DT_CU_LOG1P),
    [DT_OP_EXPM1] = EW1(DT_CU_EXPM1),
    [DT_OP_CLAMP] = EW1(DT_CU_CLAMP),
    [DT_OP_CLAMP_MIN] = EW1(DT_CU_CLAMP),
    [DT_OP_CLAMP_MAX] = EW1(DT_CU_CLAMP),
    [DT_OP_THRESHOLD_BACKWARD] = EW2(DT_CU_THRESHOLD_BW),
    [DT_OP_GELU_BACKWARD] = EW2(DT_CU_GELU_BW),
    [DT_OP_SILU_BACKWARD] = EW2(DT_CU_SILU_BW),
    [DT_OP_SIGMOID_BACKWARD] = EW2(DT_CU_SIGMOID_BW),
    [DT_OP_TANH_BACKWARD] = EW2(DT_CU_TANH_BW),
    [DT_OP_NATIVE_DROPOUT_BACKWARD] =
	{DT_CU_DROPOUT_BW, 2, {0, 1, 0}, 2, EW_PLAIN, true},
    [DT_OP_BITWISE_AND_TENSOR] = EW2(DT_CU_BAND),
    [DT_OP_BITWISE_AND_SCALAR] = EW2(DT_CU_BAND),
    [DT_OP_BITWISE_OR_TENSOR] = EW2(DT_CU_BOR),
    [DT_OP_BITWISE_OR_SCALAR] = EW2(DT_CU_BOR),
    [DT_OP_BITWISE_XOR_TENSOR] = EW2(DT_CU_BXOR),
    [DT_OP_BITWISE_XOR_SCALAR] = EW2(DT_CU_BXOR),
    [DT_OP_BITWISE_NOT] = EW1(DT_CU_BNOT),
    [DT_OP_LOGICAL_AND] = CMP(DT_CU_LAND),
    [DT_OP_LOGICAL_OR] = CMP(DT_CU_LOR),
    [DT_OP_LOGICAL_XOR] = CMP(DT_CU_LXOR),
    [DT_OP_ADD_INPLACE] = CMP(DT_CU_ADD),
    [DT_OP_SUB_INPLACE] = CMP(DT_CU_SUB),
    [DT_OP_MUL_INPLACE] = CMP(DT_CU_MUL),
    [DT_OP_FILL_INPLACE_SCALAR] = {DT_CU_FILL, 1, {1, 0, 0}, 0, EW_PLAIN, true},
    [DT_OP_FILL_INPLACE_TENSOR] = {DT_CU_FILL, 1, {1, 0, 0}, 0, EW_PLAIN, true},
    [DT_OP_FILL_SCALAR] = {DT_CU_FILL, 1, {1, 0, 0}, 0, EW_PLAIN, true},
    [DT_OP_FILL_TENSOR] = {DT_CU_FILL, 1, {1, 0, 0}, 0, EW_PLAIN, true},
    [DT_OP_SIGN] = EW1(DT_CU_SIGN),
    [DT_OP_REMAINDER_TENSOR] = EW2(DT_CU_REM),
    [DT_OP_REMAINDER_SCALAR] = EW2(DT_CU_REM),
    [DT_OP_SGN] = EW1(DT_CU_SIGN),
    [DT_OP_MASKED_FILL_INPLACE_SCALAR] =
	{DT_CU_MASKED_FILL, 3, {0, 1, 2}, 2, EW_PLAIN, true},
    [DT_OP_MASKED_FILL_INPLACE_TENSOR] =
	{DT_CU_MASKED_FILL, 3, {0, 1, 2}, 2, EW_PLAIN, true},
    [DT_OP_MSE_LOSS_BACKWARD] = {DT_CU_MSE_BW, 3, {1, 2, 0}, 0, EW_PLAIN, true},
    /* not `valid`: dispatched to mse_loss, which reduces */
    [DT_OP_MSE_LOSS] = {DT_CU_MSE, 2, {0, 1, 0}, 0, EW_PLAIN, false},
};
#undef EW2
#undef EW1
#undef CMP

/* The op's constants, cast like PyTorch (cpu_elementwise.c's
 * read_consts). */
static void ew_consts(const struct dt_kernel_call *c, enum dt_dtype compute,
		      struct dt_cu_ew *p)
{
	bool has_lo = false, has_hi = false;
	p->alpha = 1;
	p->int_compute = !dt_dtype_is_float(compute);
	switch (c->op) {
	case DT_OP_ADD_TENSOR:
	case DT_OP_SUB_TENSOR:
	case DT_OP_RSUB_TENSOR:
	case DT_OP_ADD_SCALAR:
	case DT_OP_SUB_SCALAR:
	case DT_OP_RSUB_SCALAR:
	case DT_OP_ADD_INPLACE:
	case DT_OP_SUB_INPLACE:
		dt_cpu_number(c, 2, &p->alpha);
		break;
	case DT_OP_MSE_LOSS_BACKWARD: {
		int64_t reduction = 1;
		dt_cpu_int(c, 3, &reduction);
		int64_t n = dt_rt_numel(dt_kernel_input(c, 1));
		p->alpha = dt_round_to(compute,
				       reduction == 1 ? 2.0 / (double)n : 2.0);
		break;
	}
	case DT_OP_ADDCMUL:
	case DT_OP_ADDCDIV:
		dt_cpu_number(c, 3, &p->alpha);
		p->alpha = dt_round_to(compute, p->alpha);
		break;
	case DT_OP_NATIVE_DROPOUT_BACKWARD:
		dt_cpu_number(c, 2, &p->alpha);
		p->alpha = dt_round_to(compute, p->alpha);
		break;
	case DT_OP_DIV_TENSOR_MODE:
	case DT_OP_DIV_SCALAR_MODE:
		p->mode = dt_cpu_str_is(c, 2, "trunc")	 ? 1
			  : dt_cpu_str_is(c, 2, "floor") ? 2
							 : 0;
		break;
	case DT_OP_GELU:
	case DT_OP_GELU_BACKWARD:
		p->tanh_approx =
		    dt_cpu_str_is(c, c->op == DT_OP_GELU ? 1 : 2, "tanh");
		break;
	case DT_OP_CLAMP:
		has_lo = dt_cpu_number(c, 1, &p->lo);
		has_hi = dt_cpu_number(c, 2, &p->hi);
		break;
	case DT_OP_CLAMP_MIN:
		has_lo = dt_cpu_number(c, 1, &p->lo);
		break;
	case DT_OP_CLAMP_MAX:
		has_hi = dt_cpu_number(c, 1, &p->hi);
		break;
	case DT_OP_THRESHOLD_BACKWARD:
		dt_cpu_number(c, 2, &p->lo);
		break;
	default:
		break;
	}
	p->has_lo = has_lo;
	p->has_hi = has_hi;
	p->lo = dt_round_to(compute, p->lo);
	p->hi = dt_round_to(compute, p->hi);
}

static bool is_narrow_float(enum dt_dtype t)
{
	return t == DT_FLOAT32 || t == DT_FLOAT16 || t == DT_BFLOAT16;
}

static int elementwise(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct ew_def *def = &ew_defs[c->op];
	struct dt_cpu_operand ops[3];
	const struct dt_cpu_operand *opp[3];
	for (int k = 0; k < def->nin; k++) {
		if (!dt_cpu_operand(c, def->params[k], &ops[k]))
			return dt_cpu_fail(
			    ctx->b, c, "argument '%s' is missing",
			    dt_op_get(c->op)->params[def->params[k]].name);
		opp[k] = &ops[k];
	}
	struct dt_rt_tensor *out = &c->outputs[0];
	enum dt_dtype compute = def->kind == EW_COMPARE
				    ? dt_cpu_result_type(opp, def->nin)
				    : (enum dt_dtype)out->dtype;
	struct dt_cu_ew p;
	memset(&p, 0, sizeof(p));
	p.op = def->op;
	p.nin = def->nin;
	p.compute = compute;
	ew_consts(c, compute, &p);
	/* rounding divisions run in double, so their integer results match */
	p.wide = !is_narrow_float(compute) || p.mode != 0;
	const struct dt_rt_tensor *ts[4] = {out, NULL, NULL, NULL};
	for (int k = 0; k < def->nin; k++) {
		bool keep = (def->keep >> k) & 1;
		if (ops[k].number) {
			p.number |= 1u << k;
			p.value[k] = keep ? ops[k].value
					  : dt_round_to(compute, ops[k].value);
		} else {
			ts[k + 1] = &ops[k].t;
			if (!keep && ops[k].t.dtype != compute)
				p.cast |= 1u << k;
		}
	}
	if (p.int_compute && ((p.op == DT_CU_DIV && p.mode != 0) ||
			      p.op == DT_CU_POW || p.op == DT_CU_REM)) {
		const char *what =
		    p.op == DT_CU_POW
			? "Integers to negative integer powers are not allowed."
			: "ZeroDivisionError (integer division by zero)";
		if (dt_cuda_status(ctx, c, &p.err, "%s", what) != DT_OK)
			return DT_ERUNTIME;
	}
	struct dt_cu_walk w;
	dt_cuda_walk(&w, out->shape, out->rank, ts, def->nin + 1);
	return check(ctx, c, "dt_cu_elementwise",
		     dt_cu_elementwise(&w, &p, ctx->stream));
}

/* mse_loss: reduction none is elementwise; mean and sum reduce the
 * squared differences, computed in the result's dtype into a temporary of
 * the broadcast shape. */
static int mse_loss(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	int64_t reduction = 1;
	dt_cpu_int(c, 2, &reduction);
	if (reduction == 0)
		return elementwise(ctx, c);
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0),
				  *y = dt_kernel_input(c, 1);
	int64_t shape[DT_MAX_RANK];
	int rank = dt_rt_broadcast(x, y, shape);
	struct dt_rt_tensor sq;
	struct dt_buffer holder = {0};
	int rc = dt_cuda_temp(ctx, c, shape, rank,
			      (enum dt_dtype)c->outputs[0].dtype, &sq, &holder);
	if (rc == DT_OK) {
		struct dt_kernel_call squares = *c;
		squares.outputs = &sq;
		rc = elementwise(ctx, &squares);
	}
	if (rc == DT_OK)
		rc = dt_cuda_reduce_all(ctx, c, reduction == 1, &sq,
					&c->outputs[0]);
	dt_cuda_release(ctx, &holder);
	return rc;
}

/* ---- random ops and factories ---- */

static int random_op(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct dt_cu_random_op p;
	memset(&p, 0, sizeof(p));
	p.seed = c->seed;
	p.name = dt_rt_fnv1a(dt_str_get(c->m, c->node->name));
	p.p = 0.5;
	bool train = true;
	const struct dt_rt_tensor *ts[3] = {&c->outputs[0], NULL, NULL};
	switch (c->op) {
	case DT_OP_NATIVE_DROPOUT:
		p.kind = DT_CU_DROPOUT;
		dt_cpu_number(c, 1, &p.p);
		dt_cpu_bool(c, 2, &train);
		if (train && (p.p < 0 || p.p > 1))
			return dt_cpu_fail(ctx->b, c,
					   "dropout probability has to be "
					   "between 0 and 1, but got %g",
					   p.p);
		ts[1] = &c->outputs[1];
		ts[2] = dt_kernel_input(c, 0);
		break;
	case DT_OP_BERNOULLI:
		p.kind = DT_CU_BERNOULLI;
		ts[2] = dt_kernel_input(c, 0);
		if (dt_cuda_status(ctx, c, &p.err,
				   "bernoulli expects 0 <= p <= 1") != DT_OK)
			return DT_ERUNTIME;
		break;
	case DT_OP_BERNOULLI_P:
		p.kind = DT_CU_BERNOULLI_P;
		dt_cpu_number(c, 1, &p.p);
		if (!(p.p >= 0 && p.p <= 1))
			return dt_cpu_fail(
			    ctx->b, c,
			    "bernoulli expects 0 <= p <= 1, but got p=%g", p.p);
		break;
	case DT_OP_RAND_LIKE:
		p.kind = DT_CU_RAND;
		break;
	default:
		p.kind = DT_CU_RANDN;
		break;
	}
	p.train = train;
	struct dt_rt_tensor *out = &c->outputs[0];
	struct dt_cu_walk w;
	dt_cuda_walk(&w, out->shape, out->rank, ts, 3);
	return check(ctx, c, "dt_cu_random", dt_cu_random(&w, &p, ctx->stream));
}

/* cpu_create.c's factories: a fill, or arange's start + i * step. */
static int create(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct dt_rt_tensor *out = &c->outputs[0];
	double v = 0, start = 0, end = 0, step = 1;
	switch (c->op) {
	case DT_OP_ONES_LIKE:
	case DT_OP_ONES:
	case DT_OP_NEW_ONES:
		v = 1;
		break;
	case DT_OP_FULL_LIKE:
	case DT_OP_FULL:
		dt_cpu_number(c, 1, &v);
		break;
	case DT_OP_NEW_FULL:
		dt_cpu_number(c, 2, &v);
		break;
	case DT_OP_SCALAR_TENSOR:
		dt_cpu_number(c, 0, &v);
		break;
	case DT_OP_ARANGE:
	case DT_OP_ARANGE_START:
	case DT_OP_ARANGE_START_STEP: {
		if (c->op == DT_OP_ARANGE) {
			dt_cpu_number(c, 0, &end);
		} else {
			dt_cpu_number(c, 0, &start);
			dt_cpu_number(c, 1, &end);
			if (c->op == DT_OP_ARANGE_START_STEP)
				dt_cpu_number(c, 2, &step);
		}
		if (!dt_dtype_is_float((enum dt_dtype)out->dtype)) {
			start = trunc(start);
			step = trunc(step);
		}
		struct dt_cu_walk w;
		const struct dt_rt_tensor *t = out;
		dt_cuda_walk(&w, out->shape, out->rank, &t, 1);
		return check(ctx, c, "dt_cu_arange",
			     dt_cu_arange(&w, start, step, ctx->stream));
	}
	default:
		break; /* empty* and zeros*: zero-filled */
	}
	return dt_cuda_fill(ctx, c, out, v);
}

/* ---- the CPU fallback ---- */

/* The distinct nodes a call reads (ids NULL: only count the uses). */
struct inputs {
	uint32_t *ids;
	uint32_t n;
};

static void add_input(void *ud, uint32_t id)
{
	struct inputs *in = ud;
	for (uint32_t i = 0; in->ids && i < in->n; i++)
		if (in->ids[i] == id)
			return;
	if (in->ids)
		in->ids[in->n] = id;
	in->n++;
}

/* Bytes between host and device on the compute stream, synchronously. */
static int move(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		void *dst, const void *src, size_t bytes,
		enum cudaMemcpyKind kind)
{
	if (!bytes)
		return DT_OK;
	if (check(ctx, c, "cudaMemcpyAsync",
		  cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream)) != DT_OK)
		return DT_ERUNTIME;
	return dt_cuda_sync(ctx);
}

int dt_cuda_fallback(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct dt_module *m = c->m;
	struct inputs in = {NULL, 0};
	dt_node_for_each_input(m, c->node, add_input, &in);
	in.ids = dt_calloc(in.n ? in.n : 1, sizeof(uint32_t));
	in.n = 0;
	dt_node_for_each_input(m, c->node, add_input, &in);
	struct dt_rt_tensor **hv = dt_calloc(m->nodes.len, sizeof(*hv));
	struct dt_rt_tensor *hout = dt_calloc(c->noutputs, sizeof(*hout));
	struct dt_buffer *hbuf = dt_calloc(c->noutputs, sizeof(*hbuf));
	int rc = DT_OK;
	for (uint32_t i = 0; i < in.n && rc == DT_OK; i++) {
		uint32_t id = in.ids[i], nt = dt_node_get(m, id)->ntensors;
		hv[id] = dt_calloc(nt ? nt : 1, sizeof(**hv));
		for (uint32_t r = 0; r < nt && rc == DT_OK; r++)
			if (c->values[id] && c->values[id][r].buf &&
			    dt_rt_to_host(ctx->b, &c->values[id][r],
					  &hv[id][r]) != DT_OK)
				rc = dt_rt_fail(ctx->b, m, c->node,
						"cannot copy input %u to the "
						"host for the CPU kernel",
						id);
	}
	for (uint32_t k = 0; k < c->noutputs; k++) {
		hout[k] = c->outputs[k];
		hbuf[k].bytes = c->outputs[k].buf->bytes;
		hbuf[k].data = dt_calloc(hbuf[k].bytes ? hbuf[k].bytes : 1, 1);
		hbuf[k].refs = 1;
		hout[k].buf = &hbuf[k];
	}
	if (rc == DT_OK) {
		struct dt_kernel_call hc = *c;
		hc.values = (struct dt_rt_tensor *const *)hv;
		hc.outputs = hout;
		rc = dt_cpu_kernel(ctx->b, &hc);
	}
	for (uint32_t k = 0; k < c->noutputs && rc == DT_OK; k++)
		rc = move(ctx, c, c->outputs[k].buf->data, hbuf[k].data,
			  hbuf[k].bytes, cudaMemcpyHostToDevice);
	for (uint32_t i = 0; i < in.n; i++) {
		uint32_t id = in.ids[i], nt = dt_node_get(m, id)->ntensors;
		for (uint32_t r = 0; hv[id] && r < nt; r++)
			dt_rt_host_free(&hv[id][r]);
		dt_free(hv[id]);
	}
	for (uint32_t k = 0; k < c->noutputs; k++)
		dt_free(hbuf[k].data);
	dt_free(hbuf);
	dt_free(hout);
	dt_free(hv);
	dt_free(in.ids);
	if (rc == DT_OK)
		ctx->fallbacks[c->op]++;
	return rc;
}

/* ---- dispatch ---- */

int dt_cuda_kernel(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	if ((unsigned)c->op < DT_NOPS && ew_defs[c->op].valid)
		return elementwise(ctx, c);
	switch (c->op) {
	case DT_OP_REDISTRIBUTE:
	case DT_OP_UNSAFE_VIEW:
	case DT_OP_RESHAPE:
	case DT_OP_CLONE:
	case DT_OP_CONTIGUOUS:
	case DT_OP_LIFT_FRESH_COPY:
	case DT_OP_CONVERT_ELEMENT_TYPE:
	case DT_OP_TO_COPY:
		return dt_cuda_copy_op(ctx, c);
	case DT_OP_CAT:
	case DT_OP_STACK:
		return dt_cuda_join(ctx, c);
	case DT_OP_CONSTANT_PAD_ND:
	case DT_OP_SLICE_BACKWARD:
	case DT_OP_SELECT_BACKWARD:
	case DT_OP_LOCAL_SHARD:
	case DT_OP_PACK_BLOCKS:
	case DT_OP_UNPACK_BLOCKS:
	case DT_OP_PACK_PIECES:
	case DT_OP_UNPACK_PIECES:
		return dt_cuda_pad(ctx, c);
	case DT_OP_NATIVE_DROPOUT:
	case DT_OP_BERNOULLI:
	case DT_OP_BERNOULLI_P:
	case DT_OP_RAND_LIKE:
	case DT_OP_RANDN_LIKE:
		return random_op(ctx, c);
	case DT_OP_SUM:
	case DT_OP_SUM_DIM:
	case DT_OP_MEAN:
	case DT_OP_MEAN_DIM:
	case DT_OP_AMAX:
	case DT_OP_AMIN:
	case DT_OP_MAX:
	case DT_OP_MIN:
	case DT_OP_MAX_DIM:
	case DT_OP_MIN_DIM:
	case DT_OP_ARGMAX:
	case DT_OP_ARGMIN:
	case DT_OP_LOGSUMEXP:
	case DT_OP_VAR_CORRECTION:
	case DT_OP_VAR_MEAN_CORRECTION:
	case DT_OP_VAR_MEAN_DIM:
		return dt_cuda_reduce(ctx, c);
	case DT_OP_MM:
	case DT_OP_BMM:
	case DT_OP_ADDMM:
	case DT_OP_BADDBMM:
		return dt_cuda_matmul(ctx, c);
	case DT_OP_SOFTMAX:
	case DT_OP_LOG_SOFTMAX:
	case DT_OP_SOFTMAX_BACKWARD:
	case DT_OP_LOG_SOFTMAX_BACKWARD:
		return dt_cuda_softmax(ctx, c);
	case DT_OP_NATIVE_LAYER_NORM:
	case DT_OP_NATIVE_LAYER_NORM_BACKWARD:
		return dt_cuda_layer_norm(ctx, c);
	case DT_OP_EMBEDDING:
	case DT_OP_EMBEDDING_DENSE_BACKWARD:
		return dt_cuda_embedding(ctx, c);
	case DT_OP_NLL_LOSS_FORWARD:
	case DT_OP_NLL_LOSS_BACKWARD:
		return dt_cuda_nll_loss(ctx, c);
	case DT_OP_MSE_LOSS:
		return mse_loss(ctx, c);
	case DT_OP_TRIL:
	case DT_OP_TRIU:
	case DT_OP_INDEX_SELECT:
	case DT_OP_INDEX_ADD:
	case DT_OP_REPEAT_INTERLEAVE:
	case DT_OP_GATHER:
	case DT_OP_SCATTER_ADD:
	case DT_OP_SCATTER_SRC:
	case DT_OP_SCATTER_VALUE:
	case DT_OP_REPEAT:
	case DT_OP_FLIP:
	case DT_OP_CUMSUM:
		return dt_cuda_index(ctx, c);
	case DT_OP_EMPTY_LIKE:
	case DT_OP_ZEROS_LIKE:
	case DT_OP_ONES_LIKE:
	case DT_OP_FULL_LIKE:
	case DT_OP_FULL:
	case DT_OP_ZEROS:
	case DT_OP_ONES:
	case DT_OP_EMPTY:
	case DT_OP_EMPTY_STRIDED:
	case DT_OP_NEW_EMPTY:
	case DT_OP_NEW_ZEROS:
	case DT_OP_NEW_ONES:
	case DT_OP_NEW_FULL:
	case DT_OP_SCALAR_TENSOR:
	case DT_OP_ARANGE:
	case DT_OP_ARANGE_START:
	case DT_OP_ARANGE_START_STEP:
		return create(ctx, c);
	default:
		return DT_CUDA_FALLBACK;
	}
}
