// SPDX-License-Identifier: MIT
/* cpu_kernel.c: the CPU kernels' dispatch table (one entry per op of
 * ir/ops.def that computes), argument readers with the schemas' defaults,
 * Python-number operands, type promotion and strided iteration. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Every computing op and its family. Views, collectives, waits and the
 * structural ops have none: the interpreter handles them. */
static const dt_cpu_kernel_fn kernels[DT_NOPS] = {
	[DT_OP_REDISTRIBUTE] = dt_cpu_copy_op,
	[DT_OP_UNSAFE_VIEW] = dt_cpu_copy_op,
	[DT_OP_RESHAPE] = dt_cpu_copy_op,
	[DT_OP_CAT] = dt_cpu_join,
	[DT_OP_STACK] = dt_cpu_join,
	[DT_OP_CLONE] = dt_cpu_copy_op,
	[DT_OP_CONTIGUOUS] = dt_cpu_copy_op,
	[DT_OP_LIFT_FRESH_COPY] = dt_cpu_copy_op,
	[DT_OP_CONSTANT_PAD_ND] = dt_cpu_pad,
	[DT_OP_CONVERT_ELEMENT_TYPE] = dt_cpu_copy_op,
	[DT_OP_TO_COPY] = dt_cpu_copy_op,
	[DT_OP_SLICE_BACKWARD] = dt_cpu_pad,
	[DT_OP_SELECT_BACKWARD] = dt_cpu_pad,
	[DT_OP_TRIL] = dt_cpu_index,
	[DT_OP_TRIU] = dt_cpu_index,
	[DT_OP_INDEX_SELECT] = dt_cpu_index,
	[DT_OP_INDEX_ADD] = dt_cpu_index,
	[DT_OP_REPEAT_INTERLEAVE] = dt_cpu_index,
	[DT_OP_LOCAL_SHARD] = dt_cpu_pad,
	[DT_OP_GATHER] = dt_cpu_index,
	[DT_OP_SCATTER_ADD] = dt_cpu_index,
	[DT_OP_SCATTER_SRC] = dt_cpu_index,
	[DT_OP_SCATTER_VALUE] = dt_cpu_index,
	[DT_OP_REPEAT] = dt_cpu_index,
	[DT_OP_FLIP] = dt_cpu_index,
	[DT_OP_CUMSUM] = dt_cpu_index,
	[DT_OP_PACK_BLOCKS] = dt_cpu_pad,
	[DT_OP_UNPACK_BLOCKS] = dt_cpu_pad,
	[DT_OP_PACK_PIECES] = dt_cpu_pad,
	[DT_OP_UNPACK_PIECES] = dt_cpu_pad,
	[DT_OP_ADD_TENSOR] = dt_cpu_elementwise,
	[DT_OP_ADD_SCALAR] = dt_cpu_elementwise,
	[DT_OP_SUB_TENSOR] = dt_cpu_elementwise,
	[DT_OP_SUB_SCALAR] = dt_cpu_elementwise,
	[DT_OP_RSUB_TENSOR] = dt_cpu_elementwise,
	[DT_OP_RSUB_SCALAR] = dt_cpu_elementwise,
	[DT_OP_MUL_TENSOR] = dt_cpu_elementwise,
	[DT_OP_MUL_SCALAR] = dt_cpu_elementwise,
	[DT_OP_DIV_TENSOR] = dt_cpu_elementwise,
	[DT_OP_DIV_SCALAR] = dt_cpu_elementwise,
	[DT_OP_DIV_TENSOR_MODE] = dt_cpu_elementwise,
	[DT_OP_DIV_SCALAR_MODE] = dt_cpu_elementwise,
	[DT_OP_POW_TENSOR_SCALAR] = dt_cpu_elementwise,
	[DT_OP_POW_TENSOR_TENSOR] = dt_cpu_elementwise,
	[DT_OP_POW_SCALAR] = dt_cpu_elementwise,
	[DT_OP_MAXIMUM] = dt_cpu_elementwise,
	[DT_OP_MINIMUM] = dt_cpu_elementwise,
	[DT_OP_ADDCMUL] = dt_cpu_elementwise,
	[DT_OP_ADDCDIV] = dt_cpu_elementwise,
	[DT_OP_EQ_TENSOR] = dt_cpu_elementwise,
	[DT_OP_EQ_SCALAR] = dt_cpu_elementwise,
	[DT_OP_NE_TENSOR] = dt_cpu_elementwise,
	[DT_OP_NE_SCALAR] = dt_cpu_elementwise,
	[DT_OP_LT_TENSOR] = dt_cpu_elementwise,
	[DT_OP_LT_SCALAR] = dt_cpu_elementwise,
	[DT_OP_LE_TENSOR] = dt_cpu_elementwise,
	[DT_OP_LE_SCALAR] = dt_cpu_elementwise,
	[DT_OP_GT_TENSOR] = dt_cpu_elementwise,
	[DT_OP_GT_SCALAR] = dt_cpu_elementwise,
	[DT_OP_GE_TENSOR] = dt_cpu_elementwise,
	[DT_OP_GE_SCALAR] = dt_cpu_elementwise,
	[DT_OP_LOGICAL_NOT] = dt_cpu_elementwise,
	[DT_OP_WHERE_SELF] = dt_cpu_elementwise,
	[DT_OP_MASKED_FILL_SCALAR] = dt_cpu_elementwise,
	[DT_OP_MASKED_FILL_TENSOR] = dt_cpu_elementwise,
	[DT_OP_NEG] = dt_cpu_elementwise,
	[DT_OP_ABS] = dt_cpu_elementwise,
	[DT_OP_RELU] = dt_cpu_elementwise,
	[DT_OP_GELU] = dt_cpu_elementwise,
	[DT_OP_SILU] = dt_cpu_elementwise,
	[DT_OP_SIGMOID] = dt_cpu_elementwise,
	[DT_OP_TANH] = dt_cpu_elementwise,
	[DT_OP_EXP] = dt_cpu_elementwise,
	[DT_OP_LOG] = dt_cpu_elementwise,
	[DT_OP_SQRT] = dt_cpu_elementwise,
	[DT_OP_RSQRT] = dt_cpu_elementwise,
	[DT_OP_ERF] = dt_cpu_elementwise,
	[DT_OP_RECIPROCAL] = dt_cpu_elementwise,
	[DT_OP_SIN] = dt_cpu_elementwise,
	[DT_OP_COS] = dt_cpu_elementwise,
	[DT_OP_LOG1P] = dt_cpu_elementwise,
	[DT_OP_EXPM1] = dt_cpu_elementwise,
	[DT_OP_CLAMP] = dt_cpu_elementwise,
	[DT_OP_CLAMP_MIN] = dt_cpu_elementwise,
	[DT_OP_CLAMP_MAX] = dt_cpu_elementwise,
	[DT_OP_THRESHOLD_BACKWARD] = dt_cpu_elementwise,
	[DT_OP_GELU_BACKWARD] = dt_cpu_elementwise,
	[DT_OP_SILU_BACKWARD] = dt_cpu_elementwise,
	[DT_OP_SIGMOID_BACKWARD] = dt_cpu_elementwise,
	[DT_OP_TANH_BACKWARD] = dt_cpu_elementwise,
	[DT_OP_NATIVE_DROPOUT_BACKWARD] = dt_cpu_elementwise,
	[DT_OP_BITWISE_AND_TENSOR] = dt_cpu_elementwise,
	[DT_OP_BITWISE_AND_SCALAR] = dt_cpu_elementwise,
	[DT_OP_BITWISE_OR_TENSOR] = dt_cpu_elementwise,
	[DT_OP_BITWISE_OR_SCALAR] = dt_cpu_elementwise,
	[DT_OP_BITWISE_XOR_TENSOR] = dt_cpu_elementwise,
	[DT_OP_BITWISE_XOR_SCALAR] = dt_cpu_elementwise,
	[DT_OP_BITWISE_NOT] = dt_cpu_elementwise,
	[DT_OP_LOGICAL_AND] = dt_cpu_elementwise,
	[DT_OP_LOGICAL_OR] = dt_cpu_elementwise,
	[DT_OP_LOGICAL_XOR] = dt_cpu_elementwise,
	[DT_OP_ADD_INPLACE] = dt_cpu_elementwise,
	[DT_OP_SUB_INPLACE] = dt_cpu_elementwise,
	[DT_OP_MUL_INPLACE] = dt_cpu_elementwise,
	[DT_OP_FILL_INPLACE_SCALAR] = dt_cpu_elementwise,
	[DT_OP_FILL_INPLACE_TENSOR] = dt_cpu_elementwise,
	[DT_OP_FILL_SCALAR] = dt_cpu_elementwise,
	[DT_OP_FILL_TENSOR] = dt_cpu_elementwise,
	[DT_OP_MSE_LOSS_BACKWARD] = dt_cpu_elementwise,
	[DT_OP_SIGN] = dt_cpu_elementwise,
	[DT_OP_REMAINDER_TENSOR] = dt_cpu_elementwise,
	[DT_OP_REMAINDER_SCALAR] = dt_cpu_elementwise,
	[DT_OP_SGN] = dt_cpu_elementwise,
	[DT_OP_MASKED_FILL_INPLACE_SCALAR] = dt_cpu_elementwise,
	[DT_OP_MASKED_FILL_INPLACE_TENSOR] = dt_cpu_elementwise,
	[DT_OP_NATIVE_DROPOUT] = dt_cpu_random,
	[DT_OP_BERNOULLI] = dt_cpu_random,
	[DT_OP_BERNOULLI_P] = dt_cpu_random,
	[DT_OP_RAND_LIKE] = dt_cpu_random,
	[DT_OP_RANDN_LIKE] = dt_cpu_random,
	[DT_OP_SUM] = dt_cpu_reduce,
	[DT_OP_SUM_DIM] = dt_cpu_reduce,
	[DT_OP_MEAN] = dt_cpu_reduce,
	[DT_OP_MEAN_DIM] = dt_cpu_reduce,
	[DT_OP_AMAX] = dt_cpu_reduce,
	[DT_OP_AMIN] = dt_cpu_reduce,
	[DT_OP_MAX] = dt_cpu_reduce,
	[DT_OP_MIN] = dt_cpu_reduce,
	[DT_OP_MAX_DIM] = dt_cpu_reduce,
	[DT_OP_MIN_DIM] = dt_cpu_reduce,
	[DT_OP_ARGMAX] = dt_cpu_reduce,
	[DT_OP_ARGMIN] = dt_cpu_reduce,
	[DT_OP_LOGSUMEXP] = dt_cpu_reduce,
	[DT_OP_VAR_CORRECTION] = dt_cpu_reduce,
	[DT_OP_VAR_MEAN_CORRECTION] = dt_cpu_reduce,
	[DT_OP_VAR_MEAN_DIM] = dt_cpu_reduce,
	[DT_OP_MM] = dt_cpu_matmul,
	[DT_OP_BMM] = dt_cpu_matmul,
	[DT_OP_ADDMM] = dt_cpu_matmul,
	[DT_OP_BADDBMM] = dt_cpu_matmul,
	[DT_OP_SOFTMAX] = dt_cpu_softmax,
	[DT_OP_LOG_SOFTMAX] = dt_cpu_softmax,
	[DT_OP_SOFTMAX_BACKWARD] = dt_cpu_softmax,
	[DT_OP_LOG_SOFTMAX_BACKWARD] = dt_cpu_softmax,
	[DT_OP_NATIVE_LAYER_NORM] = dt_cpu_layer_norm,
	[DT_OP_NATIVE_LAYER_NORM_BACKWARD] = dt_cpu_layer_norm,
	[DT_OP_EMBEDDING] = dt_cpu_embedding,
	[DT_OP_EMBEDDING_DENSE_BACKWARD] = dt_cpu_embedding,
	[DT_OP_NLL_LOSS_FORWARD] = dt_cpu_nll_loss,
	[DT_OP_NLL_LOSS_BACKWARD] = dt_cpu_nll_loss,
	[DT_OP_MSE_LOSS] = dt_cpu_mse_loss,
	[DT_OP_EMPTY_LIKE] = dt_cpu_create,
	[DT_OP_ZEROS_LIKE] = dt_cpu_create,
	[DT_OP_ONES_LIKE] = dt_cpu_create,
	[DT_OP_FULL_LIKE] = dt_cpu_create,
	[DT_OP_FULL] = dt_cpu_create,
	[DT_OP_ZEROS] = dt_cpu_create,
	[DT_OP_ONES] = dt_cpu_create,
	[DT_OP_EMPTY] = dt_cpu_create,
	[DT_OP_EMPTY_STRIDED] = dt_cpu_create,
	[DT_OP_NEW_EMPTY] = dt_cpu_create,
	[DT_OP_NEW_ZEROS] = dt_cpu_create,
	[DT_OP_NEW_ONES] = dt_cpu_create,
	[DT_OP_NEW_FULL] = dt_cpu_create,
	[DT_OP_SCALAR_TENSOR] = dt_cpu_create,
	[DT_OP_ARANGE] = dt_cpu_create,
	[DT_OP_ARANGE_START] = dt_cpu_create,
	[DT_OP_ARANGE_START_STEP] = dt_cpu_create,
};

bool dt_cpu_has_kernel(enum dt_op op)
{
	return (unsigned)op < DT_NOPS && kernels[op] != NULL;
}

int dt_cpu_kernel(struct dt_backend *b, const struct dt_kernel_call *c)
{
	if (!dt_cpu_has_kernel(c->op))
		return dt_cpu_fail(b, c, "no CPU kernel for this op");
	return kernels[c->op](b, c);
}

int dt_cpu_fail(struct dt_backend *b, const struct dt_kernel_call *c,
		const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = dt_rt_vfail(b, c->m, c->node, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- arguments ---- */

/* The default text of parameter p of `op` from its schema (quotes
 * removed); false when it has none or it is None. */
static bool param_default(enum dt_op op, int p, const char **s, size_t *n)
{
	const char *t = dt_op_get(op)->schema;
	int at = 0;
	while (*t) {
		size_t len = strcspn(t, " ");
		if (!(len == 1 && *t == '*')) {
			if (at++ == p) {
				const char *eq = memchr(t, '=', len);
				if (!eq)
					return false;
				*s = eq + 1;
				*n = len - (size_t)(eq + 1 - t);
				if (*n >= 2 && **s == '\'') {
					(*s)++;
					*n -= 2;
				}
				return !(*n == 4 && memcmp(*s, "None", 4) == 0);
			}
		}
		t += len;
		t += *t == ' ';
	}
	return false;
}

static const struct dt_arg *bound(const struct dt_kernel_call *c, int p)
{
	return p < c->args->nparams ? c->args->arg[p] : NULL;
}

/* A default as a NUL-terminated string in buf. */
static bool default_text(const struct dt_kernel_call *c, int p, char *buf,
			 size_t cap)
{
	const char *s;
	size_t n;
	if (!param_default(c->op, p, &s, &n) || n >= cap)
		return false;
	memcpy(buf, s, n);
	buf[n] = 0;
	return true;
}

bool dt_cpu_int(const struct dt_kernel_call *c, int p, int64_t *v)
{
	const struct dt_arg *a = bound(c, p);
	char buf[64];
	if (a && a->kind == DT_ARG_INT) {
		*v = a->v.i;
		return true;
	}
	if (a || !default_text(c, p, buf, sizeof(buf)))
		return false;
	*v = strtoll(buf, NULL, 10);
	return true;
}

bool dt_cpu_number(const struct dt_kernel_call *c, int p, double *v)
{
	const struct dt_arg *a = bound(c, p);
	char buf[64];
	if (a) {
		if (a->kind == DT_ARG_INT)
			*v = (double)a->v.i;
		else if (a->kind == DT_ARG_FLOAT)
			*v = a->v.f;
		else if (a->kind == DT_ARG_BOOL)
			*v = a->v.b;
		else
			return false;
		return true;
	}
	if (!default_text(c, p, buf, sizeof(buf)))
		return false;
	*v = strcmp(buf, "True") == 0 ? 1 : strcmp(buf, "False") == 0 ? 0
								    : strtod(buf, NULL);
	return true;
}

bool dt_cpu_bool(const struct dt_kernel_call *c, int p, bool *v)
{
	const struct dt_arg *a = bound(c, p);
	char buf[16];
	if (a && a->kind == DT_ARG_BOOL) {
		*v = a->v.b;
		return true;
	}
	if (a || !default_text(c, p, buf, sizeof(buf)))
		return false;
	*v = strcmp(buf, "True") == 0;
	return true;
}

bool dt_cpu_str_is(const struct dt_kernel_call *c, int p, const char *s)
{
	const struct dt_arg *a = bound(c, p);
	char buf[64];
	if (a)
		return a->kind == DT_ARG_STR && strcmp(dt_str_get(c->m, a->v.s), s) == 0;
	return default_text(c, p, buf, sizeof(buf)) && strcmp(buf, s) == 0;
}

bool dt_cpu_dtype(const struct dt_kernel_call *c, int p, enum dt_dtype *v)
{
	const struct dt_arg *a = bound(c, p);
	if (!a || a->kind != DT_ARG_DTYPE)
		return false;
	*v = (enum dt_dtype)a->v.dtype;
	return true;
}

int dt_cpu_ints(const struct dt_kernel_call *c, int p, int64_t *v, int cap)
{
	const struct dt_arg *a = bound(c, p);
	char buf[256];
	int n = 0;
	if (!a) {
		if (!default_text(c, p, buf, sizeof(buf)))
			return -1;
		const char *s = buf + (*buf == '[');
		while (*s && *s != ']' && n < cap) {
			char *end;
			v[n++] = strtoll(s, &end, 10);
			s = end + (*end == ',');
		}
		return n;
	}
	if (a->kind == DT_ARG_INT) {
		if (cap > 0)
			v[0] = a->v.i;
		return 1;
	}
	if (a->kind == DT_ARG_INTS) {
		const int64_t *vals = dt_ints_get(c->m, a->v.ints, &n);
		memcpy(v, vals, (size_t)(n < cap ? n : cap) * sizeof(int64_t));
		return n < cap ? n : cap;
	}
	if (a->kind == DT_ARG_BOOL) {
		if (cap > 0)
			v[0] = a->v.b;
		return 1;
	}
	if (a->kind != DT_ARG_ITEMS)
		return -1;
	for (uint32_t i = 0; i < a->len && n < cap; i++) {
		const struct dt_arg *it = &c->m->args.data[a->v.first + i];
		v[n++] = it->kind == DT_ARG_BOOL ? it->v.b : it->v.i;
	}
	return n;
}

static const struct dt_rt_tensor *node_value(const struct dt_kernel_call *c,
					     uint32_t node)
{
	const struct dt_rt_tensor *t = c->values[node];
	DT_REQUIRE(t != NULL && t->buf != NULL);
	return t;
}

int dt_cpu_tensors(const struct dt_kernel_call *c, int p,
		   const struct dt_rt_tensor **t, int cap)
{
	const struct dt_arg *a = bound(c, p);
	int n = 0;
	if (!a || (a->kind != DT_ARG_NODES && a->kind != DT_ARG_ITEMS))
		return 0;
	for (uint32_t i = 0; i < a->len && n < cap; i++) {
		if (a->kind == DT_ARG_NODES) {
			t[n++] = node_value(c, c->m->refs.data[a->v.first + i]);
		} else {
			const struct dt_arg *it = &c->m->args.data[a->v.first + i];
			t[n++] = it->kind == DT_ARG_NODE ? node_value(c, it->v.node)
							 : NULL;
		}
	}
	return n;
}

const struct dt_rt_tensor *dt_kernel_input(const struct dt_kernel_call *c,
					   int param)
{
	const struct dt_arg *a = bound(c, param);
	return a && a->kind == DT_ARG_NODE ? node_value(c, a->v.node) : NULL;
}

bool dt_cpu_operand(const struct dt_kernel_call *c, int p,
		    struct dt_cpu_operand *o)
{
	memset(o, 0, sizeof(*o));
	const struct dt_rt_tensor *t = dt_kernel_input(c, p);
	if (t) {
		o->t = *t;
		o->dtype = t->dtype;
		return true;
	}
	const struct dt_arg *a = bound(c, p);
	if (!dt_cpu_number(c, p, &o->value))
		return false;
	o->number = true;
	o->dtype = !a || a->kind == DT_ARG_FLOAT ? DT_FLOAT32
		   : a->kind == DT_ARG_INT       ? DT_INT64
						 : DT_BOOL;
	if (!a) { /* a schema default: an int unless it has a point */
		const char *s;
		size_t n;
		param_default(c->op, p, &s, &n);
		if (!memchr(s, '.', n) && !memchr(s, 'e', n))
			o->dtype = (n == 4 || n == 5) && (*s == 'T' || *s == 'F')
					   ? DT_BOOL
					   : DT_INT64;
	}
	o->buf.data = &o->value;
	o->buf.bytes = sizeof(double);
	o->buf.refs = 1;
	o->t.buf = &o->buf;
	o->t.dtype = DT_FLOAT64;
	return true;
}

/* ---- type promotion (c10's promoteTypes and result_type) ---- */

static int int_rank(enum dt_dtype t)
{
	switch (t) {
	case DT_BOOL: return 0;
	case DT_UINT8:
	case DT_INT8: return 1;
	case DT_INT16: return 2;
	case DT_INT32: return 3;
	default: return 4;
	}
}

static enum dt_dtype promote(enum dt_dtype a, enum dt_dtype b)
{
	if (a == b)
		return a;
	bool fa = dt_dtype_is_float(a), fb = dt_dtype_is_float(b);
	if (fa && fb) {
		if ((a == DT_FLOAT16 && b == DT_BFLOAT16) ||
		    (a == DT_BFLOAT16 && b == DT_FLOAT16))
			return DT_FLOAT32;
		return dt_dtype_size(a) >= dt_dtype_size(b) ? a : b;
	}
	if (fa || fb)
		return fa ? a : b;
	if (a == DT_BOOL || b == DT_BOOL)
		return a == DT_BOOL ? b : a;
	if ((a == DT_UINT8 && b == DT_INT8) || (a == DT_INT8 && b == DT_UINT8))
		return DT_INT16;
	return int_rank(a) >= int_rank(b) ? a : b;
}

static int combine(int higher, int lower)
{
	if (higher < 0)
		return lower;
	if (dt_dtype_is_float((enum dt_dtype)higher))
		return higher;
	if (lower >= 0 && (higher == DT_BOOL || dt_dtype_is_float((enum dt_dtype)lower)))
		return promote((enum dt_dtype)higher, (enum dt_dtype)lower);
	return higher;
}

enum dt_dtype dt_cpu_result_type(const struct dt_cpu_operand *const *o, int n)
{
	int dim = -1, zero = -1, wrapped = -1;
	for (int i = 0; i < n; i++) {
		int *slot = o[i]->number ? &wrapped : o[i]->t.rank > 0 ? &dim : &zero;
		*slot = *slot < 0 ? o[i]->dtype
				  : (int)promote((enum dt_dtype)*slot, (enum dt_dtype)o[i]->dtype);
	}
	int r = combine(dim, combine(zero, wrapped));
	return r < 0 ? DT_FLOAT32 : (enum dt_dtype)r;
}

/* ---- strided access ---- */

void dt_cpu_iter_init(struct dt_cpu_iter *it, const int64_t *shape, int rank,
		      const struct dt_rt_tensor *const *t, int n)
{
	DT_REQUIRE(n <= DT_CPU_MAX_OPS && rank <= DT_MAX_RANK);
	memset(it, 0, sizeof(*it));
	it->rank = rank;
	it->n = n;
	memcpy(it->shape, shape, (size_t)rank * sizeof(int64_t));
	for (int k = 0; k < n; k++) {
		int lead = rank - t[k]->rank;
		DT_REQUIRE(lead >= 0);
		for (int d = 0; d < rank; d++) {
			int i = d - lead;
			it->stride[k][d] = i < 0 || t[k]->shape[i] == 1 ? 0
									 : t[k]->stride[i];
		}
		it->off[k] = t[k]->offset;
	}
}

int dt_cpu_merge_dims(const int64_t *shape, int rank,
		      const struct dt_rt_tensor *const *t, int n, int64_t *sz,
		      int64_t (*st)[DT_MAX_RANK])
{
	DT_REQUIRE(n <= DT_CPU_MAX_OPS && rank <= DT_MAX_RANK);
	int64_t full[DT_CPU_MAX_OPS][DT_MAX_RANK];
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
	/* merge d into the previous kept dim when every operand walks them
	 * as one (stride[d - 1] == stride[d] * size[d]) */
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
	return nd;
}

void dt_cpu_rows_init(struct dt_cpu_rows *r, const int64_t *shape, int rank,
		      const struct dt_rt_tensor *const *t, int n)
{
	int64_t sz[DT_MAX_RANK], st[DT_CPU_MAX_OPS][DT_MAX_RANK];
	int nd = dt_cpu_merge_dims(shape, rank, t, n, sz, st);
	memset(r, 0, sizeof(*r));
	r->outer.n = n;
	r->len = nd > 0 ? sz[nd - 1] : 1;
	r->count = dt_numel(shape, rank) == 0 ? 0 : 1;
	for (int k = 0; k < n; k++) {
		r->step[k] = nd > 0 ? st[k][nd - 1] : 0;
		r->outer.off[k] = t[k]->offset;
	}
	r->outer.rank = nd > 0 ? nd - 1 : 0;
	for (int d = 0; d < r->outer.rank; d++) {
		r->outer.shape[d] = sz[d];
		r->count *= sz[d];
		for (int k = 0; k < n; k++)
			r->outer.stride[k][d] = st[k][d];
	}
}

#define ROW_CASES(X)                                                       \
	X(DT_FLOAT32, float) X(DT_FLOAT64, double) X(DT_INT64, int64_t)    \
	X(DT_INT32, int32_t) X(DT_INT16, int16_t) X(DT_INT8, int8_t)       \
	X(DT_UINT8, uint8_t)

void dt_cpu_load_row(const struct dt_rt_tensor *t, int64_t off, int64_t step,
		     int64_t n, double *dst)
{
	const char *base = dt_rt_at(t, off);
	switch ((enum dt_dtype)t->dtype) {
#define X(e, T)                                                            \
	case e: {                                                          \
		const T *p = (const T *)(const void *)base;                \
		for (int64_t i = 0; i < n; i++)                            \
			dst[i] = (double)p[i * step];                      \
		return;                                                    \
	}
	ROW_CASES(X)
#undef X
	case DT_BOOL:
		for (int64_t i = 0; i < n; i++)
			dst[i] = base[i * step] != 0;
		return;
	default: {
		dt_load_fn load = dt_loader((enum dt_dtype)t->dtype);
		int esize = dt_dtype_size((enum dt_dtype)t->dtype);
		for (int64_t i = 0; i < n; i++)
			dst[i] = load(base + i * step * esize);
	}
	}
}

void dt_cpu_store_row(struct dt_rt_tensor *t, int64_t off, int64_t step,
		      int64_t n, const double *src)
{
	char *base = dt_rt_at(t, off);
	switch ((enum dt_dtype)t->dtype) {
	case DT_FLOAT32: {
		float *p = (float *)(void *)base;
		for (int64_t i = 0; i < n; i++)
			p[i * step] = (float)src[i];
		return;
	}
	case DT_FLOAT64: {
		double *p = (double *)(void *)base;
		for (int64_t i = 0; i < n; i++)
			p[i * step] = src[i];
		return;
	}
	default: {
		dt_store_fn store = dt_storer((enum dt_dtype)t->dtype);
		int esize = dt_dtype_size((enum dt_dtype)t->dtype);
		for (int64_t i = 0; i < n; i++)
			store(base + i * step * esize, src[i]);
	}
	}
}

void dt_cpu_read_as(const struct dt_rt_tensor *t, const int64_t *shape,
		    int rank, double *dst)
{
	struct dt_cpu_rows r;
	dt_cpu_rows_init(&r, shape, rank, &t, 1);
	for (int64_t i = 0; i < r.count; i++, dt_cpu_iter_next(&r.outer))
		dt_cpu_load_row(t, r.outer.off[0], r.step[0], r.len, dst + i * r.len);
}

int dt_rt_broadcast(const struct dt_rt_tensor *a, const struct dt_rt_tensor *b,
		    int64_t *shape)
{
	int rank = a->rank > b->rank ? a->rank : b->rank;
	for (int d = 0; d < rank; d++) {
		int da = d - (rank - a->rank), db = d - (rank - b->rank);
		int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
		shape[d] = sa == 1 ? sb : sa;
	}
	return rank;
}

void dt_rt_around(const struct dt_rt_tensor *t, int64_t dim, int64_t *outer,
		  int64_t *size, int64_t *inner)
{
	*outer = *size = *inner = 1;
	for (int d = 0; d < t->rank; d++) {
		if (d < dim)
			*outer *= t->shape[d];
		else if (d == dim)
			*size = t->shape[d];
		else
			*inner *= t->shape[d];
	}
}

void dt_cpu_read(const struct dt_rt_tensor *t, double *dst)
{
	dt_cpu_read_as(t, t->shape, t->rank, dst);
}

void dt_cpu_write(struct dt_rt_tensor *t, const double *src)
{
	const struct dt_rt_tensor *tt = t;
	struct dt_cpu_rows r;
	dt_cpu_rows_init(&r, t->shape, t->rank, &tt, 1);
	for (int64_t i = 0; i < r.count; i++, dt_cpu_iter_next(&r.outer))
		dt_cpu_store_row(t, r.outer.off[0], r.step[0], r.len, src + i * r.len);
}

void dt_cpu_fill(struct dt_rt_tensor *t, double v)
{
	int esize = dt_dtype_size((enum dt_dtype)t->dtype);
	unsigned char elem[8];
	dt_store_element((enum dt_dtype)t->dtype, elem, v);
	const struct dt_rt_tensor *tt = t;
	struct dt_cpu_rows r;
	dt_cpu_rows_init(&r, t->shape, t->rank, &tt, 1);
	for (int64_t i = 0; i < r.count; i++, dt_cpu_iter_next(&r.outer)) {
		char *p = dt_rt_at(t, r.outer.off[0]);
		for (int64_t j = 0; j < r.len; j++)
			memcpy(p + j * r.step[0] * esize, elem, (size_t)esize);
	}
}

void dt_cpu_split_dims(const struct dt_rt_tensor *t, const bool *mask,
		       struct dt_rt_tensor *outer, struct dt_rt_tensor *inner)
{
	*outer = *t;
	*inner = *t;
	outer->rank = inner->rank = 0;
	for (int d = 0; d < t->rank; d++) {
		struct dt_rt_tensor *x = mask[d] ? inner : outer;
		x->shape[x->rank] = t->shape[d];
		x->stride[x->rank] = t->stride[d];
		x->rank++;
	}
}

void *dt_cpu_alloc(struct dt_backend *b, const struct dt_kernel_call *c,
		   size_t bytes)
{
	void *p = b->ops->alloc(b, bytes ? bytes : 1);
	if (!p)
		dt_cpu_fail(b, c, "cannot allocate %zu bytes of scratch", bytes);
	return p;
}

double *dt_cpu_scratch(struct dt_backend *b, const struct dt_kernel_call *c,
		       int64_t n)
{
	if (n > 0 && (uint64_t)n > SIZE_MAX / sizeof(double)) {
		dt_cpu_fail(b, c, "cannot allocate %lld doubles of scratch",
			    (long long)n);
		return NULL;
	}
	return dt_cpu_alloc(b, c, (size_t)(n > 0 ? n : 0) * sizeof(double));
}

void dt_cpu_release(struct dt_backend *b, void *p)
{
	if (p)
		b->ops->release(b, p);
}
