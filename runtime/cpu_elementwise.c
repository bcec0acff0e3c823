// SPDX-License-Identifier: MIT
/* cpu_elementwise.c: elementwise kernels (arithmetic, comparisons,
 * selection, unary math, clamps and the elementwise backward helpers).
 * Operands broadcast against the output; each is first cast to the op's
 * compute dtype (the output dtype, or the promoted input dtype for
 * comparisons) as TensorIterator does, then the op runs in double and the
 * result is stored to the output's dtype. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* Per-call constants of an op; `bad` is set by an op that hits an error
 * PyTorch raises (integer division by zero, negative integer powers). */
struct ew_ctx {
	struct dt_ew_consts k;
	bool int_compute, boolean;
	const char *bad;
};

/* An op over a chunk: y[i] = f(x0[i], x1[i], x2[i]) for i < n. */
typedef void (*ew_fn)(double *y, double *const *x, int64_t n, struct ew_ctx *e);

#define X0 x[0][i]
#define X1 x[1][i]
#define X2 x[2][i]
#define EW(name, expr)                                                     \
	static void name(double *y, double *const *x, int64_t n,           \
			 struct ew_ctx *e)                                 \
	{                                                                  \
		(void)e;                                                   \
		for (int64_t i = 0; i < n; i++)                            \
			y[i] = (expr);                                     \
	}

/* c10's div_floor_floating (Python's // on floats). */
static double floor_div(double a, double b)
{
	if (b == 0)
		return a / b;
	double mod = fmod(a, b);
	double div = (a - mod) / b;
	if (mod != 0 && (b < 0) != (mod < 0))
		div -= 1;
	if (div == 0)
		return copysign(0, a / b);
	double fl = floor(div);
	return div - fl > 0.5 ? fl + 1 : fl;
}

static double div_value(double a, double b, struct ew_ctx *e)
{
	if (e->int_compute && e->k.mode != 0 && b == 0) {
		e->bad = "ZeroDivisionError (integer division by zero)";
		return 0;
	}
	if (e->k.mode == 1)
		return trunc(a / b);
	if (e->k.mode == 2)
		return e->int_compute ? floor(a / b) : floor_div(a, b);
	return a / b;
}

/* Python's %: the result takes the divisor's sign (c10's remainder). */
static double rem_value(double a, double b, struct ew_ctx *e)
{
	if (e->int_compute && b == 0) {
		e->bad = "ZeroDivisionError";
		return 0;
	}
	double mod = fmod(a, b);
	if (mod != 0 && (b < 0) != (mod < 0))
		mod += b;
	return mod;
}

static double pow_value(double a, double b, struct ew_ctx *e)
{
	if (e->int_compute && b < 0) {
		e->bad = "Integers to negative integer powers are not allowed.";
		return 0;
	}
	return pow(a, b);
}

#define SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2 / pi) */
#define SQRT1_2 0.70710678118654752440        /* 1 / sqrt(2) */
#define INV_SQRT_2PI 0.39894228040143267794   /* 1 / sqrt(2 pi) */
#define GELU_KAPPA 0.044715

static double gelu(double v, bool tanh_approx)
{
	if (tanh_approx)
		return 0.5 * v * (1 + tanh(SQRT_2_OVER_PI * (v + GELU_KAPPA * v * v * v)));
	return 0.5 * v * (1 + erf(v * SQRT1_2));
}

static double gelu_backward(double g, double v, bool tanh_approx)
{
	if (tanh_approx) {
		double inner = SQRT_2_OVER_PI * (v + GELU_KAPPA * v * v * v);
		double t = tanh(inner);
		double dleft = 0.5 * (1 + t);
		double dright = 0.5 * v * (1 - t * t) * SQRT_2_OVER_PI *
				(1 + 3 * GELU_KAPPA * v * v);
		return g * (dleft + dright);
	}
	double cdf = 0.5 * (1 + erf(v * SQRT1_2));
	return g * (cdf + v * exp(-0.5 * v * v) * INV_SQRT_2PI);
}

static double sigmoid(double v)
{
	return 1 / (1 + exp(-v));
}

/* min(max(x, lo), hi) with NaN kept, as at::clamp. */
static double clamp(double v, const struct ew_ctx *e)
{
	if (isnan(v))
		return v;
	if (e->k.has_lo && v < e->k.lo)
		v = e->k.lo;
	if (e->k.has_hi && v > e->k.hi)
		v = e->k.hi;
	return v;
}

EW(f_add, X0 + e->k.alpha * X1)
EW(f_sub, X0 - e->k.alpha * X1)
EW(f_rsub, X1 - e->k.alpha * X0)
EW(f_mul, X0 * X1)
EW(f_div, div_value(X0, X1, e))
EW(f_pow, pow_value(X0, X1, e))
EW(f_rem, rem_value(X0, X1, e))
EW(f_maximum, isnan(X0) || isnan(X1) ? NAN : X0 > X1 ? X0 : X1)
EW(f_minimum, isnan(X0) || isnan(X1) ? NAN : X0 < X1 ? X0 : X1)
EW(f_addcmul, X0 + e->k.alpha * X1 * X2)
EW(f_addcdiv, X0 + e->k.alpha * (X1 / X2))
EW(f_eq, X0 == X1)
EW(f_ne, X0 != X1)
EW(f_lt, X0 < X1)
EW(f_le, X0 <= X1)
EW(f_gt, X0 > X1)
EW(f_ge, X0 >= X1)
EW(f_not, X0 == 0)
EW(f_where, X0 != 0 ? X1 : X2)
EW(f_masked_fill, X1 != 0 ? X2 : X0)
EW(f_neg, -X0)
EW(f_abs, fabs(X0))
EW(f_relu, isnan(X0) || X0 > 0 ? X0 : 0)
EW(f_gelu, gelu(X0, e->k.tanh))
EW(f_silu, X0 * sigmoid(X0))
EW(f_sigmoid, sigmoid(X0))
EW(f_tanh, tanh(X0))
EW(f_exp, exp(X0))
EW(f_log, log(X0))
EW(f_sqrt, sqrt(X0))
EW(f_rsqrt, 1 / sqrt(X0))
EW(f_erf, erf(X0))
EW(f_reciprocal, 1 / X0)
EW(f_sin, sin(X0))
EW(f_cos, cos(X0))
EW(f_log1p, log1p(X0))
EW(f_expm1, expm1(X0))
EW(f_clamp, clamp(X0, e))
/* threshold_backward(grad, self, threshold): the threshold is in lo */
EW(f_threshold_bw, X1 <= e->k.lo ? 0 : X0)
EW(f_gelu_bw, gelu_backward(X0, X1, e->k.tanh))
EW(f_silu_bw, X0 * sigmoid(X1) * (1 + X1 * (1 - sigmoid(X1))))
EW(f_sigmoid_bw, X0 * (1 - X1) * X1)
EW(f_tanh_bw, X0 * (1 - X1 * X1))
/* native_dropout_backward(grad, mask, scale): the scale is in alpha */
EW(f_dropout_bw, X0 * X1 * e->k.alpha)
/* bitwise ops on integral values (exact below 2^53, as every int64 the
 * CPU runtime holds); ~ of a bool is logical not */
EW(f_band, (double)((int64_t)X0 & (int64_t)X1))
EW(f_bor, (double)((int64_t)X0 | (int64_t)X1))
EW(f_bxor, (double)((int64_t)X0 ^ (int64_t)X1))
EW(f_bnot, e->boolean ? X0 == 0 : (double)~(int64_t)X0)
EW(f_land, X0 != 0 && X1 != 0)
EW(f_lor, X0 != 0 || X1 != 0)
EW(f_lxor, (X0 != 0) != (X1 != 0))
/* fill(self, value) reads only the value */
EW(f_fill, X0)
/* sign and sgn of reals: (0 < x) - (x < 0), so NaN gives 0 as torch 1.13 */
EW(f_sign, (double)(0 < X0) - (double)(X0 < 0))
/* mse_loss (none) and mse_loss_backward(grad, self, target) iterated as
 * (self, target, grad); the norm (2 or 2 / numel) is in alpha */
EW(f_mse, (X0 - X1) * (X0 - X1))
EW(f_mse_bw, e->k.alpha * (X0 - X1) * X2)

/* How an op reads its operands: params in operand order, which of them
 * keep their dtype (masks, conditions), and whether it computes in the
 * inputs' promoted dtype rather than the output's (comparisons, logical
 * ops, and the in-place ops, whose output is self's dtype). */
enum { EW_PLAIN, EW_COMPARE };

struct ew_def {
	ew_fn fn;
	uint8_t nin;
	int8_t params[3];
	uint8_t keep;  /* bit k: operand k is not cast to the compute dtype */
	uint8_t kind;
};

static const struct ew_def defs[DT_NOPS] = {
	[DT_OP_ADD_TENSOR] = {f_add, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_ADD_SCALAR] = {f_add, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_SUB_TENSOR] = {f_sub, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_SUB_SCALAR] = {f_sub, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_RSUB_TENSOR] = {f_rsub, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_RSUB_SCALAR] = {f_rsub, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_MUL_TENSOR] = {f_mul, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_MUL_SCALAR] = {f_mul, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_DIV_TENSOR] = {f_div, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_DIV_SCALAR] = {f_div, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_DIV_TENSOR_MODE] = {f_div, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_DIV_SCALAR_MODE] = {f_div, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_POW_TENSOR_SCALAR] = {f_pow, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_POW_TENSOR_TENSOR] = {f_pow, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_POW_SCALAR] = {f_pow, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_MAXIMUM] = {f_maximum, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_MINIMUM] = {f_minimum, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_ADDCMUL] = {f_addcmul, 3, {0, 1, 2}, 0, EW_PLAIN},
	[DT_OP_ADDCDIV] = {f_addcdiv, 3, {0, 1, 2}, 0, EW_PLAIN},
	[DT_OP_EQ_TENSOR] = {f_eq, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_EQ_SCALAR] = {f_eq, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_NE_TENSOR] = {f_ne, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_NE_SCALAR] = {f_ne, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_LT_TENSOR] = {f_lt, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_LT_SCALAR] = {f_lt, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_LE_TENSOR] = {f_le, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_LE_SCALAR] = {f_le, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_GT_TENSOR] = {f_gt, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_GT_SCALAR] = {f_gt, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_GE_TENSOR] = {f_ge, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_GE_SCALAR] = {f_ge, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_LOGICAL_NOT] = {f_not, 1, {0}, 1, EW_PLAIN},
	[DT_OP_WHERE_SELF] = {f_where, 3, {0, 1, 2}, 1, EW_PLAIN},
	[DT_OP_MASKED_FILL_SCALAR] = {f_masked_fill, 3, {0, 1, 2}, 2, EW_PLAIN},
	[DT_OP_MASKED_FILL_TENSOR] = {f_masked_fill, 3, {0, 1, 2}, 2, EW_PLAIN},
	[DT_OP_NEG] = {f_neg, 1, {0}, 0, EW_PLAIN},
	[DT_OP_ABS] = {f_abs, 1, {0}, 0, EW_PLAIN},
	[DT_OP_RELU] = {f_relu, 1, {0}, 0, EW_PLAIN},
	[DT_OP_GELU] = {f_gelu, 1, {0}, 0, EW_PLAIN},
	[DT_OP_SILU] = {f_silu, 1, {0}, 0, EW_PLAIN},
	[DT_OP_SIGMOID] = {f_sigmoid, 1, {0}, 0, EW_PLAIN},
	[DT_OP_TANH] = {f_tanh, 1, {0}, 0, EW_PLAIN},
	[DT_OP_EXP] = {f_exp, 1, {0}, 0, EW_PLAIN},
	[DT_OP_LOG] = {f_log, 1, {0}, 0, EW_PLAIN},
	[DT_OP_SQRT] = {f_sqrt, 1, {0}, 0, EW_PLAIN},
	[DT_OP_RSQRT] = {f_rsqrt, 1, {0}, 0, EW_PLAIN},
	[DT_OP_ERF] = {f_erf, 1, {0}, 0, EW_PLAIN},
	[DT_OP_RECIPROCAL] = {f_reciprocal, 1, {0}, 0, EW_PLAIN},
	[DT_OP_SIN] = {f_sin, 1, {0}, 0, EW_PLAIN},
	[DT_OP_COS] = {f_cos, 1, {0}, 0, EW_PLAIN},
	[DT_OP_LOG1P] = {f_log1p, 1, {0}, 0, EW_PLAIN},
	[DT_OP_EXPM1] = {f_expm1, 1, {0}, 0, EW_PLAIN},
	[DT_OP_CLAMP] = {f_clamp, 1, {0}, 0, EW_PLAIN},
	[DT_OP_CLAMP_MIN] = {f_clamp, 1, {0}, 0, EW_PLAIN},
	[DT_OP_CLAMP_MAX] = {f_clamp, 1, {0}, 0, EW_PLAIN},
	[DT_OP_THRESHOLD_BACKWARD] = {f_threshold_bw, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_GELU_BACKWARD] = {f_gelu_bw, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_SILU_BACKWARD] = {f_silu_bw, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_SIGMOID_BACKWARD] = {f_sigmoid_bw, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_TANH_BACKWARD] = {f_tanh_bw, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_NATIVE_DROPOUT_BACKWARD] = {f_dropout_bw, 2, {0, 1}, 2, EW_PLAIN},
	[DT_OP_BITWISE_AND_TENSOR] = {f_band, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_BITWISE_AND_SCALAR] = {f_band, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_BITWISE_OR_TENSOR] = {f_bor, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_BITWISE_OR_SCALAR] = {f_bor, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_BITWISE_XOR_TENSOR] = {f_bxor, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_BITWISE_XOR_SCALAR] = {f_bxor, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_BITWISE_NOT] = {f_bnot, 1, {0}, 0, EW_PLAIN},
	[DT_OP_LOGICAL_AND] = {f_land, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_LOGICAL_OR] = {f_lor, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_LOGICAL_XOR] = {f_lxor, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_ADD_INPLACE] = {f_add, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_SUB_INPLACE] = {f_sub, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_MUL_INPLACE] = {f_mul, 2, {0, 1}, 0, EW_COMPARE},
	[DT_OP_FILL_INPLACE_SCALAR] = {f_fill, 1, {1}, 0, EW_PLAIN},
	[DT_OP_FILL_INPLACE_TENSOR] = {f_fill, 1, {1}, 0, EW_PLAIN},
	[DT_OP_FILL_SCALAR] = {f_fill, 1, {1}, 0, EW_PLAIN},
	[DT_OP_FILL_TENSOR] = {f_fill, 1, {1}, 0, EW_PLAIN},
	[DT_OP_MSE_LOSS] = {f_mse, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_SIGN] = {f_sign, 1, {0}, 0, EW_PLAIN},
	[DT_OP_REMAINDER_TENSOR] = {f_rem, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_REMAINDER_SCALAR] = {f_rem, 2, {0, 1}, 0, EW_PLAIN},
	[DT_OP_SGN] = {f_sign, 1, {0}, 0, EW_PLAIN},
	[DT_OP_MASKED_FILL_INPLACE_SCALAR] = {f_masked_fill, 3, {0, 1, 2}, 2, EW_PLAIN},
	[DT_OP_MASKED_FILL_INPLACE_TENSOR] = {f_masked_fill, 3, {0, 1, 2}, 2, EW_PLAIN},
	[DT_OP_MSE_LOSS_BACKWARD] = {f_mse_bw, 3, {1, 2, 0}, 0, EW_PLAIN},
};

/* The op's constants: alpha/value/scale, clamp bounds, threshold, the
 * gelu approximation and the div rounding mode, cast like PyTorch. */
void dt_cpu_ew_consts(const struct dt_kernel_call *c, enum dt_dtype compute,
		      struct dt_ew_consts *e)
{
	enum dt_op op = c->op;
	memset(e, 0, sizeof(*e));
	e->alpha = 1;
	switch (op) {
	case DT_OP_ADD_TENSOR: case DT_OP_SUB_TENSOR: case DT_OP_RSUB_TENSOR:
	case DT_OP_ADD_SCALAR: case DT_OP_SUB_SCALAR: case DT_OP_RSUB_SCALAR:
	case DT_OP_ADD_INPLACE: case DT_OP_SUB_INPLACE:
		dt_cpu_number(c, 2, &e->alpha);
		break;
	case DT_OP_MSE_LOSS_BACKWARD: {
		int64_t reduction = 1;
		dt_cpu_int(c, 3, &reduction);
		int64_t n = dt_rt_numel(dt_kernel_input(c, 1));
		e->alpha = dt_round_to(compute, reduction == 1 ? 2.0 / (double)n : 2.0);
		break;
	}
	case DT_OP_ADDCMUL: case DT_OP_ADDCDIV:
		dt_cpu_number(c, 3, &e->alpha);
		e->alpha = dt_round_to(compute, e->alpha);
		break;
	case DT_OP_NATIVE_DROPOUT_BACKWARD:
		dt_cpu_number(c, 2, &e->alpha);
		e->alpha = dt_round_to(compute, e->alpha);
		break;
	case DT_OP_DIV_TENSOR_MODE: case DT_OP_DIV_SCALAR_MODE:
		e->mode = dt_cpu_str_is(c, 2, "trunc") ? 1 : dt_cpu_str_is(c, 2, "floor") ? 2 : 0;
		break;
	case DT_OP_GELU: case DT_OP_GELU_BACKWARD:
		e->tanh = dt_cpu_str_is(c, op == DT_OP_GELU ? 1 : 2, "tanh");
		break;
	case DT_OP_CLAMP:
		e->has_lo = dt_cpu_number(c, 1, &e->lo);
		e->has_hi = dt_cpu_number(c, 2, &e->hi);
		break;
	case DT_OP_CLAMP_MIN:
		e->has_lo = dt_cpu_number(c, 1, &e->lo);
		break;
	case DT_OP_CLAMP_MAX:
		e->has_hi = dt_cpu_number(c, 1, &e->hi);
		break;
	case DT_OP_THRESHOLD_BACKWARD:
		dt_cpu_number(c, 2, &e->lo);
		break;
	default:
		break;
	}
	e->lo = dt_round_to(compute, e->lo);
	e->hi = dt_round_to(compute, e->hi);
}

/* Cast a chunk to dtype t's values (float32 inline, the rest through
 * the element conversion). */
static void cast_chunk(enum dt_dtype t, double *v, int64_t n)
{
	if (t == DT_FLOAT32) {
		for (int64_t i = 0; i < n; i++)
			v[i] = (float)v[i];
		return;
	}
	for (int64_t i = 0; i < n; i++)
		v[i] = dt_round_to(t, v[i]);
}

int dt_cpu_ew_operands(struct dt_backend *b, const struct dt_kernel_call *c,
		       const int8_t *params, int n, bool compare,
		       struct dt_cpu_operand *ops, enum dt_dtype *compute)
{
	const struct dt_cpu_operand *opp[3];
	DT_REQUIRE(n <= 3);
	for (int k = 0; k < n; k++) {
		if (!dt_cpu_operand(c, params[k], &ops[k]))
			return dt_cpu_fail(b, c, "argument '%s' is missing",
					   dt_op_get(c->op)->params[params[k]].name);
		opp[k] = &ops[k];
	}
	*compute = compare ? dt_cpu_result_type(opp, n)
			   : (enum dt_dtype)c->outputs[0].dtype;
	return DT_OK;
}

#define CHUNK 512

int dt_cpu_elementwise(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct ew_def *def = &defs[c->op];
	if (!def->fn)
		dt_die(__FILE__, __LINE__, "no elementwise kernel for %s",
		       dt_op_get(c->op)->target);
	struct dt_cpu_operand ops[3];
	enum dt_dtype compute;
	if (dt_cpu_ew_operands(b, c, def->params, def->nin,
			       def->kind == EW_COMPARE, ops, &compute) != DT_OK)
		return DT_ERUNTIME;
	struct dt_rt_tensor *out = &c->outputs[0];
	struct ew_ctx e = {.int_compute = !dt_dtype_is_float(compute),
			   .boolean = compute == DT_BOOL};
	dt_cpu_ew_consts(c, compute, &e.k);

	/* numbers are cast once; tensors of another dtype per chunk */
	bool cast[3] = {false};
	const struct dt_rt_tensor *ts[4] = {out};
	for (int k = 0; k < def->nin; k++) {
		bool keep = (def->keep >> k) & 1;
		if (ops[k].number && !keep)
			ops[k].value = dt_round_to(compute, ops[k].value);
		cast[k] = !keep && !ops[k].number && ops[k].t.dtype != compute;
		ts[k + 1] = &ops[k].t;
	}
	double buf[4][CHUNK];
	double *x[3] = {buf[1], buf[2], buf[3]};
	struct dt_cpu_rows r;
	dt_cpu_rows_init(&r, out->shape, out->rank, ts, def->nin + 1);
	for (int64_t row = 0; row < r.count; row++, dt_cpu_iter_next(&r.outer)) {
		for (int64_t at = 0; at < r.len; at += CHUNK) {
			int64_t n = r.len - at < CHUNK ? r.len - at : CHUNK;
			for (int k = 0; k < def->nin; k++) {
				dt_cpu_load_row(ts[k + 1], r.outer.off[k + 1] + at * r.step[k + 1],
						r.step[k + 1], n, x[k]);
				if (cast[k])
					cast_chunk(compute, x[k], n);
			}
			def->fn(buf[0], x, n, &e);
			dt_cpu_store_row(out, r.outer.off[0] + at * r.step[0], r.step[0], n, buf[0]);
		}
	}
	if (e.bad)
		return dt_cpu_fail(b, c, "%s", e.bad);
	return DT_OK;
}
