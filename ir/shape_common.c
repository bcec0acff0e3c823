// SPDX-License-Identifier: MIT
/* shape_common.c: helpers of the shape functions (shape.h): argument
 * readers with schema defaults, errors at the node, PyTorch's stride and
 * memory-format rules, type promotion and broadcasting. */
#include "shape.h"

#include <stdlib.h>
#include <string.h>

const char *dt_dims_format(struct dt_dimbuf *b, const int64_t *v, int n)
{
	size_t at = 0;
	b->s[at++] = '[';
	for (int i = 0; i < n && at < sizeof(b->s) - 24; i++)
		at += (size_t)snprintf(b->s + at, sizeof(b->s) - at, "%s%lld",
				       i ? ", " : "", (long long)v[i]);
	snprintf(b->s + at, sizeof(b->s) - at, "]");
	return b->s;
}

/* ---- errors ---- */

static const struct dt_node *ctx_node(const struct dt_shape_ctx *c)
{
	return dt_node_get(c->m, c->node);
}

const char *dt_shape_target(const struct dt_shape_ctx *c)
{
	return dt_op_get((enum dt_op)ctx_node(c)->op)->target;
}

const char *dt_shape_param_name(const struct dt_shape_ctx *c, int p)
{
	return dt_op_get((enum dt_op)ctx_node(c)->op)->params[p].name;
}

int dt_shape_param_index(const struct dt_shape_ctx *c, const char *name)
{
	const struct dt_op_info *op = dt_op_get(dt_shape_op(c));
	for (int p = 0; p < op->nparams; p++)
		if (strcmp(op->params[p].name, name) == 0)
			return p;
	return -1;
}

static int fail(struct dt_shape_ctx *c, bool with_target, const char *fmt,
		va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	const struct dt_node *n = ctx_node(c);
	const char *name = dt_str_get(c->m, n->name);
	if (with_target)
		dt_node_error(c->diag, c->m, n, "node '%s': %s: %s", name,
			      dt_shape_target(c), msg);
	else
		dt_node_error(c->diag, c->m, n, "node '%s': %s", name, msg);
	return DT_EINPUT;
}

int dt_shape_fail(struct dt_shape_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = fail(c, true, fmt, ap);
	va_end(ap);
	return r;
}

int dt_shape_fail_node(struct dt_shape_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = fail(c, false, fmt, ap);
	va_end(ap);
	return r;
}

int dt_shape_check_results(struct dt_shape_ctx *c, int64_t n)
{
	if (n <= DT_MAX_RESULTS)
		return DT_OK;
	return dt_shape_fail(c, "produces %lld results; dtopt supports at most %d",
			     (long long)n, DT_MAX_RESULTS);
}

/* ---- argument readers ---- */

static const char *param_default(const struct dt_shape_ctx *c, int p)
{
	return dt_op_param_default((enum dt_op)ctx_node(c)->op, p);
}

bool dt_shape_has(const struct dt_shape_ctx *c, int p)
{
	return c->args.arg[p] != NULL || param_default(c, p) != NULL;
}

int dt_tinfo_load(struct dt_shape_ctx *c, uint32_t node, int idx,
		  struct dt_tinfo *t)
{
	const struct dt_node *src = dt_node_get(c->m, node);
	const char *name = dt_str_get(c->m, src->name);
	if (idx >= src->ntensors)
		return dt_shape_fail_node(c, "input '%s' has no tensor metadata",
					  name);
	const struct dt_tensor *tt = dt_node_tensor(c->m, src, idx);
	int rank, nstride;
	const int64_t *shape = dt_ints_get(c->m, tt->shape, &rank);
	const int64_t *stride = dt_ints_get(c->m, tt->stride, &nstride);
	if (rank > DT_MAX_RANK)
		return dt_shape_fail_node(c, "input '%s' has rank %d; dtopt supports at most %d",
					  name, rank, DT_MAX_RANK);
	if (nstride != rank || tt->dtype >= DT_NDTYPES)
		return dt_shape_fail_node(c, "input '%s' has malformed tensor metadata",
					  name);
	memset(t, 0, sizeof(*t));
	t->dtype = tt->dtype;
	t->rank = rank;
	t->offset = tt->offset;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return dt_shape_fail_node(c, "input '%s' has a negative size",
						  name);
		t->shape[i] = shape[i];
		t->stride[i] = stride[i];
	}
	return DT_OK;
}

static int tensor_from_node(struct dt_shape_ctx *c, int p, uint32_t node,
			    struct dt_tinfo *t)
{
	const struct dt_node *src = dt_node_get(c->m, node);
	if (src->ntensors > 1)
		return dt_shape_fail(c, "argument '%s' refers to '%s', which has %u results (select one with operator.getitem)",
				     dt_shape_param_name(c, p),
				     dt_str_get(c->m, src->name), src->ntensors);
	return dt_tinfo_load(c, node, 0, t);
}

int dt_shape_tensor(struct dt_shape_ctx *c, int p, struct dt_tinfo *t)
{
	const struct dt_arg *a = c->args.arg[p];
	if (!a || a->kind != DT_ARG_NODE)
		return dt_shape_fail(c, "argument '%s' must be a tensor",
				     dt_shape_param_name(c, p));
	return tensor_from_node(c, p, a->v.node, t);
}

int dt_shape_operand(struct dt_shape_ctx *c, int p, struct dt_operand *o)
{
	struct dt_scalar s;
	memset(o, 0, sizeof(*o));
	const struct dt_arg *a = c->args.arg[p];
	if (a && a->kind == DT_ARG_NODE)
		return tensor_from_node(c, p, a->v.node, &o->t);
	if (!dt_shape_scalar(c, p, &s))
		return dt_shape_fail(c, "argument '%s' must be a tensor or a number",
				     dt_shape_param_name(c, p));
	o->number = true;
	o->t.rank = 0;
	o->t.dtype = s.kind == DT_ARG_BOOL  ? DT_BOOL
		     : s.kind == DT_ARG_INT ? DT_INT64
					    : DT_DEFAULT_FLOAT;
	return DT_OK;
}

int dt_shape_tensors(struct dt_shape_ctx *c, int p, struct dt_tinfo *t,
		     int cap, int *n)
{
	const struct dt_arg *a = c->args.arg[p];
	*n = 0;
	if (!a)
		return DT_OK;
	if ((int64_t)a->len > cap)
		return dt_shape_fail(c, "argument '%s' lists %u tensors; dtopt supports at most %d",
				     dt_shape_param_name(c, p), a->len, cap);
	for (uint32_t i = 0; i < a->len && a->kind != DT_ARG_INTS; i++) {
		uint32_t node;
		if (a->kind == DT_ARG_NODES) {
			node = c->m->refs.data[a->v.first + i];
		} else {
			const struct dt_arg *it = &c->m->args.data[a->v.first + i];
			if (it->kind != DT_ARG_NODE)
				return dt_shape_fail(c, "argument '%s' has none at position %u",
						     dt_shape_param_name(c, p), i);
			node = it->v.node;
		}
		if (tensor_from_node(c, p, node, &t[i]) != DT_OK)
			return DT_EINPUT;
		(*n)++;
	}
	return DT_OK;
}

bool dt_shape_int(const struct dt_shape_ctx *c, int p, int64_t *v)
{
	const struct dt_arg *a = c->args.arg[p];
	if (a) {
		*v = a->v.i;
		return true;
	}
	const char *d = param_default(c, p);
	if (!d)
		return false;
	*v = strtoll(d, NULL, 10);
	return true;
}

int dt_shape_ints(struct dt_shape_ctx *c, int p, int64_t *v, int cap, int *n)
{
	const struct dt_arg *a = c->args.arg[p];
	*n = -1;
	if (!a) {
		const char *d = param_default(c, p);
		if (!d)
			return DT_OK;
		/* "[]", "[0,1]" or a bare int */
		*n = 0;
		const char *s = d + (*d == '[');
		while (*s && *s != ']' && *n < cap) {
			char *end;
			v[(*n)++] = strtoll(s, &end, 10);
			s = end + (*end == ',');
		}
		return DT_OK;
	}
	int len = 1;
	const int64_t *vals = NULL;
	if (a->kind == DT_ARG_INTS)
		vals = dt_ints_get(c->m, a->v.ints, &len);
	else if (a->kind == DT_ARG_ITEMS)
		len = (int)a->len;
	if (len > cap)
		return dt_shape_fail(c, "argument '%s' has %d elements; dtopt supports at most %d",
				     dt_shape_param_name(c, p), len, cap);
	for (int i = 0; i < len; i++)
		v[i] = a->kind == DT_ARG_INT     ? a->v.i
		       : a->kind == DT_ARG_INTS ? vals[i]
						: c->m->args.data[a->v.first + (uint32_t)i].v.i;
	*n = len;
	return DT_OK;
}

bool dt_shape_bool(const struct dt_shape_ctx *c, int p, bool *v)
{
	const struct dt_arg *a = c->args.arg[p];
	if (a) {
		*v = a->v.b;
		return true;
	}
	const char *d = param_default(c, p);
	if (!d)
		return false;
	*v = strcmp(d, "True") == 0;
	return true;
}

bool dt_shape_scalar(const struct dt_shape_ctx *c, int p, struct dt_scalar *s)
{
	const struct dt_arg *a = c->args.arg[p];
	memset(s, 0, sizeof(*s));
	if (a) {
		if (a->kind != DT_ARG_INT && a->kind != DT_ARG_FLOAT &&
		    a->kind != DT_ARG_BOOL)
			return false;
		s->kind = a->kind;
		s->i = a->kind == DT_ARG_INT ? a->v.i : 0;
		s->f = a->kind == DT_ARG_FLOAT ? a->v.f : (double)s->i;
		s->b = a->kind == DT_ARG_BOOL && a->v.b;
		return true;
	}
	const char *d = param_default(c, p);
	if (!d)
		return false;
	if (strcmp(d, "True") == 0 || strcmp(d, "False") == 0) {
		s->kind = DT_ARG_BOOL;
		s->b = d[0] == 'T';
	} else if (strpbrk(d, ".eEn")) {
		s->kind = DT_ARG_FLOAT;
		s->f = strtod(d, NULL);
	} else {
		s->kind = DT_ARG_INT;
		s->i = strtoll(d, NULL, 10);
		s->f = (double)s->i;
	}
	return true;
}

bool dt_shape_dtype(const struct dt_shape_ctx *c, int p, enum dt_dtype *v)
{
	const struct dt_arg *a = c->args.arg[p];
	if (a && a->kind == DT_ARG_DTYPE) {
		*v = (enum dt_dtype)a->v.dtype;
		return true;
	}
	return false;
}

const char *dt_shape_str(const struct dt_shape_ctx *c, int p)
{
	const struct dt_arg *a = c->args.arg[p];
	return a && a->kind == DT_ARG_STR ? dt_str_get(c->m, a->v.s) : NULL;
}

int dt_shape_memfmt(struct dt_shape_ctx *c, int p, enum dt_memfmt dflt,
		    enum dt_memfmt *out)
{
	const struct dt_arg *a = c->args.arg[p];
	*out = dflt;
	if (!a)
		return DT_OK;
	const char *s = a->kind == DT_ARG_STR ? dt_str_get(c->m, a->v.s) : "";
	if (strncmp(s, "torch.", 6) == 0)
		s += 6;
	if (strcmp(s, "preserve_format") == 0)
		*out = DT_MEMFMT_PRESERVE;
	else if (strcmp(s, "contiguous_format") == 0)
		*out = DT_MEMFMT_CONTIGUOUS;
	else if (strcmp(s, "channels_last") == 0)
		*out = DT_MEMFMT_CL;
	else
		return dt_shape_fail(c, "unsupported memory_format '%s'", s);
	return DT_OK;
}

void dt_shape_emit(struct dt_shape_ctx *c, const struct dt_tinfo *t)
{
	DT_REQUIRE(c->nout < DT_MAX_RESULTS);
	struct dt_tensor *o = &c->out[c->nout++];
	o->dtype = t->dtype;
	o->shape = dt_ints_intern(c->m, t->shape, (size_t)t->rank);
	o->stride = dt_ints_intern(c->m, t->stride, (size_t)t->rank);
	o->offset = t->offset;
}

/* ---- dims and sizes ---- */

int dt_shape_check_sizes(struct dt_shape_ctx *c, const int64_t *shape, int rank)
{
	struct dt_dimbuf b;
	int64_t span = 1;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 0)
			return dt_shape_fail(c, "negative size %lld in %s",
					     (long long)shape[i],
					     dt_dims_format(&b, shape, rank));
		if (__builtin_mul_overflow(span, shape[i] > 1 ? shape[i] : 1, &span) ||
		    span > DT_MAX_ELEMENTS)
			return dt_shape_fail(c, "shape %s has more than 2^60 elements",
					     dt_dims_format(&b, shape, rank));
	}
	return DT_OK;
}

int dt_shape_check_layout(struct dt_shape_ctx *c, const struct dt_tinfo *t)
{
	if (dt_shape_check_sizes(c, t->shape, t->rank) != DT_OK)
		return DT_EINPUT;
	int64_t last = t->offset, term;
	for (int i = 0; i < t->rank; i++) {
		if (t->stride[i] < 0)
			return dt_shape_fail(c, "negative stride %lld",
					     (long long)t->stride[i]);
		if (__builtin_mul_overflow(t->shape[i] ? t->shape[i] - 1 : 0,
					   t->stride[i], &term) ||
		    __builtin_add_overflow(last, term, &last) || last > DT_MAX_ELEMENTS)
			return dt_shape_fail(c, "the layout reaches beyond 2^60 elements");
	}
	return DT_OK;
}

bool dt_shape_wrap_dim(struct dt_shape_ctx *c, int64_t *dim, int rank)
{
	int64_t r = rank > 0 ? rank : 1;
	if (*dim < -r || *dim >= r) {
		dt_shape_fail(c, "Dimension out of range (expected to be in range of [%lld, %lld], but got %lld)",
			      (long long)-r, (long long)(r - 1), (long long)*dim);
		return false;
	}
	if (*dim < 0)
		*dim += r;
	return true;
}

int dt_shape_infer_size(struct dt_shape_ctx *c, int64_t *shape, int rank,
			int64_t numel)
{
	int infer = -1;
	int64_t known = 1;
	struct dt_dimbuf b;
	for (int i = 0; i < rank; i++) {
		if (shape[i] == -1) {
			if (infer >= 0)
				return dt_shape_fail(c, "only one dimension can be inferred");
			infer = i;
		} else if (shape[i] < 0) {
			return dt_shape_fail(c, "invalid shape dimension %lld",
					     (long long)shape[i]);
		} else if (__builtin_mul_overflow(known, shape[i], &known)) {
			return dt_shape_fail(c, "shape '%s' is invalid for input of size %lld",
					     dt_dims_format(&b, shape, rank), (long long)numel);
		}
	}
	if (numel == known || (infer >= 0 && known > 0 && numel % known == 0)) {
		if (infer >= 0) {
			if (known == 0)
				return dt_shape_fail(c, "cannot reshape tensor of 0 elements into shape %s because the unspecified dimension size -1 can be any value and is ambiguous",
						     dt_dims_format(&b, shape, rank));
			shape[infer] = numel / known;
		}
		return dt_shape_check_sizes(c, shape, rank);
	}
	return dt_shape_fail(c, "shape '%s' is invalid for input of size %lld",
			     dt_dims_format(&b, shape, rank), (long long)numel);
}

int dt_shape_broadcast(struct dt_shape_ctx *c, const int64_t *a, int ra,
		       const int64_t *b, int rb, int64_t *out, int *rout)
{
	int r = ra > rb ? ra : rb;
	int64_t tmp[DT_MAX_RANK];
	for (int i = 0; i < r; i++) {
		int ia = ra - r + i, ib = rb - r + i;
		int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
		if (sa != sb && sa != 1 && sb != 1) {
			struct dt_dimbuf ba, bb;
			return dt_shape_fail_node(c, "cannot broadcast shapes %s and %s for %s",
						  dt_dims_format(&ba, a, ra),
						  dt_dims_format(&bb, b, rb),
						  dt_shape_target(c));
		}
		tmp[i] = sa == 1 ? sb : sa;
	}
	memcpy(out, tmp, (size_t)r * sizeof(int64_t));
	*rout = r;
	return dt_shape_check_sizes(c, out, r);
}

/* ---- geometry ---- */

int64_t dt_tinfo_numel(const struct dt_tinfo *t)
{
	return dt_numel(t->shape, t->rank);
}

bool dt_tinfo_is_contiguous(const struct dt_tinfo *t)
{
	if (dt_tinfo_numel(t) == 0)
		return true;
	int64_t z = 1;
	for (int d = t->rank - 1; d >= 0; d--) {
		if (t->shape[d] != 1) {
			if (t->stride[d] != z)
				return false;
			z *= t->shape[d];
		}
	}
	return true;
}

bool dt_tinfo_is_channels_last(const struct dt_tinfo *t)
{
	if (t->rank != 4)
		return false;
	if (dt_tinfo_numel(t) == 0)
		return true;
	static const int order[4] = {1, 3, 2, 0};
	int64_t expected = 1;
	for (int k = 0; k < 4; k++) {
		int d = order[k];
		if (t->shape[d] != 1) {
			if (t->stride[d] != expected)
				return false;
			expected *= t->shape[d];
		}
	}
	return true;
}

bool dt_tinfo_is_dense(const struct dt_tinfo *t)
{
	/* TensorImpl: contiguous (every empty tensor is) or channels-last
	 * contiguous, else compute_non_overlapping_and_dense */
	if (dt_tinfo_is_contiguous(t) || dt_tinfo_is_channels_last(t))
		return true;
	if (t->rank == 1)
		return t->shape[0] < 2 || t->stride[0] == 1;
	int perm[DT_MAX_RANK];
	int n = 0;
	/* dims of size >= 2 sorted by stride (stable insertion sort); the
	 * size 0/1 dims never matter */
	for (int d = 0; d < t->rank; d++) {
		if (t->shape[d] < 2)
			continue;
		int j = n++;
		while (j > 0 && t->stride[perm[j - 1]] > t->stride[d]) {
			perm[j] = perm[j - 1];
			j--;
		}
		perm[j] = d;
	}
	int64_t require = 1;
	for (int i = 0; i < n; i++) {
		if (t->stride[perm[i]] != require)
			return false;
		require *= t->shape[perm[i]];
	}
	return true;
}

enum dt_memfmt dt_tinfo_suggest_memfmt(const struct dt_tinfo *t)
{
	/* is_channels_last_strides_2d_s4 */
	if (t->rank != 4 || t->stride[1] == 0)
		return DT_MEMFMT_CONTIGUOUS;
	static const int order[4] = {1, 3, 2, 0};
	int64_t min = 0;
	for (int k = 0; k < 4; k++) {
		int d = order[k];
		if (t->shape[d] == 0 || t->stride[d] < min)
			return DT_MEMFMT_CONTIGUOUS;
		if (d == 0 && min == t->stride[1])
			return DT_MEMFMT_CONTIGUOUS;
		min = t->stride[d];
		if (t->shape[d] > 1)
			min *= t->shape[d];
	}
	return DT_MEMFMT_CL;
}

struct dt_tinfo dt_tinfo_contiguous(enum dt_dtype dtype, const int64_t *shape,
				    int rank)
{
	struct dt_tinfo r = {0};
	r.dtype = (uint8_t)dtype;
	r.rank = rank;
	memcpy(r.shape, shape, (size_t)rank * sizeof(int64_t));
	dt_tinfo_set_strides(&r, DT_MEMFMT_CONTIGUOUS);
	return r;
}

void dt_tinfo_set_strides(struct dt_tinfo *t, enum dt_memfmt f)
{
	t->offset = 0;
	if (f == DT_MEMFMT_CL && t->rank == 4) {
		t->stride[1] = 1;
		t->stride[3] = t->shape[1];
		t->stride[2] = t->stride[3] * t->shape[3];
		t->stride[0] = t->stride[2] * t->shape[2];
		return;
	}
	dt_contiguous_strides(t->shape, t->rank, t->stride);
}

void dt_tinfo_dense_strides(const struct dt_tinfo *t, int64_t *stride)
{
	int ndim = t->rank;
	int perm[DT_MAX_RANK];
	for (int i = 0; i < ndim; i++)
		perm[i] = ndim - 1 - i;
	/* insertion sort with ambiguous comparisons (0 strides stay put) */
	for (int i = 1; i < ndim; i++) {
		int dim1 = i;
		for (int dim0 = i - 1; dim0 >= 0; dim0--) {
			int64_t s0 = t->stride[perm[dim0]], s1 = t->stride[perm[dim1]];
			int cmp = 0;
			if (s0 != 0 && s1 != 0) {
				if (s0 < s1)
					cmp = -1;
				else if (s0 > s1)
					cmp = 1;
				else if (t->shape[perm[dim0]] > t->shape[perm[dim1]])
					cmp = 1;
			}
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
	int64_t cur = 1;
	for (int i = 0; i < ndim; i++) {
		stride[perm[i]] = cur;
		if (t->shape[perm[i]] > 1)
			cur *= t->shape[perm[i]];
	}
}

void dt_tinfo_like(struct dt_tinfo *out, const struct dt_tinfo *t)
{
	struct dt_tinfo r = *t;
	if (!dt_tinfo_is_dense(t))
		dt_tinfo_dense_strides(t, r.stride);
	r.offset = 0;
	*out = r;
}

/* ---- dtypes ---- */

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

enum dt_dtype dt_dtype_promote(enum dt_dtype a, enum dt_dtype b)
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
	if (fa)
		return a;
	if (fb)
		return b;
	if (a == DT_BOOL)
		return b;
	if (b == DT_BOOL)
		return a;
	if ((a == DT_UINT8 && b == DT_INT8) || (a == DT_INT8 && b == DT_UINT8))
		return DT_INT16;
	return int_rank(a) >= int_rank(b) ? a : b;
}

/* combine_categories(higher, lower) of c10's result_type; -1 = undefined. */
static int combine(int higher, int lower)
{
	if (higher < 0)
		return lower;
	if (dt_dtype_is_float((enum dt_dtype)higher))
		return higher;
	if (lower >= 0 && (higher == DT_BOOL ||
			   dt_dtype_is_float((enum dt_dtype)lower)))
		return dt_dtype_promote((enum dt_dtype)higher, (enum dt_dtype)lower);
	return higher;
}

enum dt_dtype dt_operands_result_type(const struct dt_operand *o, int n)
{
	int dim = -1, zero = -1, wrapped = -1;
	for (int i = 0; i < n; i++) {
		int *slot = o[i].number ? &wrapped : o[i].t.rank > 0 ? &dim : &zero;
		*slot = *slot < 0 ? o[i].t.dtype
				  : (int)dt_dtype_promote((enum dt_dtype)*slot,
							  (enum dt_dtype)o[i].t.dtype);
	}
	int r = combine(dim, combine(zero, wrapped));
	return r < 0 ? DT_DEFAULT_FLOAT : (enum dt_dtype)r;
}
