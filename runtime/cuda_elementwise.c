// SPDX-License-Identifier: MIT
/* cuda_elementwise.c: the NCCL+CUDA backend's host side of the generic
 * kernels of cuda_ew.cu: the elementwise ops (cpu_elementwise.c's table,
 * operands cast and broadcast as there), mse_loss, the random ops
 * (cpu_random.c's numbers) and the factories (cpu_create.c's). */
#include "cuda_internal.h"

#include <string.h>

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

bool dt_cuda_is_elementwise(uint32_t op)
{
	return op < DT_NOPS && ew_defs[op].valid;
}

/* The op's constants, cast like PyTorch (dt_cpu_ew_consts). */
static void ew_consts(const struct dt_kernel_call *c, enum dt_dtype compute,
		      struct dt_cu_ew *p)
{
	struct dt_ew_consts k;
	dt_cpu_ew_consts(c, compute, &k);
	p->alpha = k.alpha;
	p->lo = k.lo;
	p->hi = k.hi;
	p->has_lo = k.has_lo;
	p->has_hi = k.has_hi;
	p->tanh_approx = k.tanh;
	p->mode = k.mode;
	p->int_compute = !dt_dtype_is_float(compute);
}

static bool is_narrow_float(enum dt_dtype t)
{
	return t == DT_FLOAT32 || t == DT_FLOAT16 || t == DT_BFLOAT16;
}

int dt_cuda_elementwise(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct ew_def *def = &ew_defs[c->op];
	struct dt_cpu_operand ops[3];
	enum dt_dtype compute;
	if (dt_cpu_ew_operands(ctx->b, c, def->params, def->nin,
			       def->kind == EW_COMPARE, ops, &compute) != DT_OK)
		return DT_ERUNTIME;
	struct dt_rt_tensor *out = &c->outputs[0];
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
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_elementwise",
			     dt_cu_elementwise(&w, &p, ctx->stream));
}

/* mse_loss: reduction none is elementwise; mean and sum reduce the
 * squared differences, computed in the result's dtype into a temporary of
 * the broadcast shape. */
int dt_cuda_mse_loss(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	int64_t reduction = 1;
	dt_cpu_int(c, 2, &reduction);
	if (reduction == 0)
		return dt_cuda_elementwise(ctx, c);
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
		rc = dt_cuda_elementwise(ctx, &squares);
	}
	if (rc == DT_OK)
		rc = dt_cuda_reduce_all(ctx, c, reduction == 1, &sq,
					&c->outputs[0]);
	dt_cuda_release(ctx, &holder);
	return rc;
}

/* ---- random ops and factories ---- */

int dt_cuda_random(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
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
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_random",
			     dt_cu_random(&w, &p, ctx->stream));
}

/* cpu_create.c's factories: a fill, or arange's start + i * step. */
int dt_cuda_create(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct dt_rt_tensor *out = &c->outputs[0];
	double v, start, step;
	if (!dt_cpu_factory(c, &v, &start, &step))
		return dt_cuda_fill(ctx, c, out, v);
	struct dt_cu_walk w;
	const struct dt_rt_tensor *t = out;
	dt_cuda_walk(&w, out->shape, out->rank, &t, 1);
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_arange",
			     dt_cu_arange(&w, start, step, ctx->stream));
}
