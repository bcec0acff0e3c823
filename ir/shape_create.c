// SPDX-License-Identifier: MIT
/* shape_create.c: shape functions of tensor factories: the *_like ops
 * (empty_like's preserve_format rule), full/zeros/ones/empty, new_*,
 * empty_strided, scalar_tensor and arange (with PyTorch's dtype inference
 * from the Python numbers). */
#include "shape.h"

#include <math.h>
#include <string.h>

/* The dtype keyword when given, else `dflt`. */
static enum dt_dtype dtype_kw(const struct dt_shape_ctx *c, enum dt_dtype dflt)
{
	enum dt_dtype dt = dflt;
	int p = dt_shape_param_index(c, "dtype");
	if (p >= 0)
		dt_shape_dtype(c, p, &dt);
	return dt;
}

/* The memory_format keyword, PRESERVE when absent or not in the schema. */
static int memfmt_kw(struct dt_shape_ctx *c, enum dt_memfmt dflt,
		     enum dt_memfmt *f)
{
	int p = dt_shape_param_index(c, "memory_format");
	*f = dflt;
	return p < 0 ? DT_OK : dt_shape_memfmt(c, p, dflt, f);
}

/* empty_like, zeros_like, ones_like, full_like, rand_like, randn_like,
 * bernoulli: like self (empty_like with preserve_format) with an optional
 * dtype and memory format. */
int dt_shape_like(struct dt_shape_ctx *c)
{
	struct dt_tinfo t, out;
	enum dt_memfmt f;
	if (dt_shape_tensor(c, 0, &t) != DT_OK ||
	    memfmt_kw(c, DT_MEMFMT_PRESERVE, &f) != DT_OK)
		return DT_EINPUT;
	if (f == DT_MEMFMT_CL && t.rank != 4)
		return dt_shape_fail(c, "required rank 4 tensor to use channels_last format");
	out = t;
	if (f == DT_MEMFMT_PRESERVE)
		dt_tinfo_like(&out, &t);
	else
		dt_tinfo_set_strides(&out, f);
	out.dtype = (uint8_t)dtype_kw(c, (enum dt_dtype)t.dtype);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* Reads the size list (param p) into out. */
static int size_arg(struct dt_shape_ctx *c, int p, struct dt_tinfo *out)
{
	int n;
	memset(out, 0, sizeof(*out));
	if (dt_shape_ints(c, p, out->shape, DT_MAX_RANK, &n) != DT_OK)
		return DT_EINPUT;
	out->rank = n;
	for (int i = 0; i < n; i++) {
		if (out->shape[i] < 0) {
			struct dt_dimbuf b;
			return dt_shape_fail(c, "Trying to create tensor with negative dimension %lld: %s",
					     (long long)out->shape[i],
					     dt_dims_format(&b, out->shape, n));
		}
	}
	return dt_shape_check_sizes(c, out->shape, n);
}

/* The dtype torch.full infers from its fill value: bool, int64 or
 * float32 (torch 1.13's aten.full without a dtype gave int64 for bools;
 * its Python torch.full passed dtype=torch.bool explicitly). */
static enum dt_dtype scalar_dtype(const struct dt_scalar *s)
{
	return s->kind == DT_ARG_BOOL  ? DT_BOOL
	       : s->kind == DT_ARG_INT ? DT_INT64
				       : DT_DEFAULT_FLOAT;
}

/* full(size, fill_value), zeros/ones(size), empty.memory_format(size):
 * contiguous (or the requested format); full infers its dtype from
 * fill_value, the others default to float32. */
int dt_shape_full(struct dt_shape_ctx *c)
{
	struct dt_tinfo out;
	enum dt_memfmt f;
	if (size_arg(c, 0, &out) != DT_OK ||
	    memfmt_kw(c, DT_MEMFMT_CONTIGUOUS, &f) != DT_OK)
		return DT_EINPUT;
	enum dt_dtype dflt = DT_DEFAULT_FLOAT;
	struct dt_scalar s;
	if (dt_shape_op(c) == DT_OP_FULL && dt_shape_scalar(c, 1, &s))
		dflt = scalar_dtype(&s);
	if (f == DT_MEMFMT_CL && out.rank != 4)
		return dt_shape_fail(c, "required rank 4 tensor to use channels_last format");
	out.dtype = (uint8_t)dtype_kw(c, dflt);
	dt_tinfo_set_strides(&out, f == DT_MEMFMT_CL ? DT_MEMFMT_CL : DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* empty_strided(size, stride). */
int dt_shape_empty_strided(struct dt_shape_ctx *c)
{
	struct dt_tinfo out;
	int n;
	if (size_arg(c, 0, &out) != DT_OK ||
	    dt_shape_ints(c, 1, out.stride, DT_MAX_RANK, &n) != DT_OK)
		return DT_EINPUT;
	if (n != out.rank)
		return dt_shape_fail(c, "mismatch in length of strides and shape");
	if (dt_shape_check_layout(c, &out) != DT_OK)
		return DT_EINPUT;
	out.dtype = (uint8_t)dtype_kw(c, DT_DEFAULT_FLOAT);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* new_empty/new_zeros/new_ones/new_full(self, size, …): self's dtype
 * unless given, contiguous. */
int dt_shape_new_full(struct dt_shape_ctx *c)
{
	struct dt_tinfo self, out;
	if (dt_shape_tensor(c, 0, &self) != DT_OK || size_arg(c, 1, &out) != DT_OK)
		return DT_EINPUT;
	out.dtype = (uint8_t)dtype_kw(c, (enum dt_dtype)self.dtype);
	dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* scalar_tensor(s): 0-d, float32 unless dtype is given (even for ints). */
int dt_shape_scalar_tensor(struct dt_shape_ctx *c)
{
	struct dt_tinfo out = {0};
	out.dtype = (uint8_t)dtype_kw(c, DT_DEFAULT_FLOAT);
	dt_shape_emit(c, &out);
	return DT_OK;
}

/* arange(end), arange(start, end), arange(start, end, step): int64 when
 * every number is an int, else float32; the length is
 * ceil((end - start) / step), computed on truncated values for int64. */
int dt_shape_arange(struct dt_shape_ctx *c)
{
	struct dt_scalar s[3];
	enum dt_op op = dt_shape_op(c);
	int pe = op == DT_OP_ARANGE ? 0 : 1;
	memset(s, 0, sizeof(s));
	s[0].kind = DT_ARG_INT; /* start = 0, step = 1 */
	s[2].kind = DT_ARG_INT;
	s[2].i = 1;
	s[2].f = 1.0;
	if (op != DT_OP_ARANGE)
		dt_shape_scalar(c, 0, &s[0]);
	dt_shape_scalar(c, pe, &s[1]);
	if (op == DT_OP_ARANGE_START_STEP)
		dt_shape_scalar(c, 2, &s[2]);
	bool any_float = false;
	for (int i = 0; i < 3; i++)
		any_float = any_float || s[i].kind == DT_ARG_FLOAT;
	enum dt_dtype dt = dtype_kw(c, any_float ? DT_DEFAULT_FLOAT : DT_INT64);
	double start = s[0].f, end = s[1].f, step = s[2].f;
	double size, limit = (double)((int64_t)1 << 61);
	if (!(fabs(start) <= limit && fabs(end) <= limit && fabs(step) <= limit))
		return dt_shape_fail(c, "unsupported range: %g -> %g step %g", start, end, step);
	if (!dt_dtype_is_float(dt)) {
		int64_t is = (int64_t)start, ie = (int64_t)end, ist = (int64_t)step;
		start = (double)is;
		end = (double)ie;
		step = (double)ist;
		if (dt == DT_INT64 && ist != 0)
			size = ceil((double)(ie - is) / (double)ist);
		else
			size = ceil((end - start) / step);
	} else {
		size = ceil((end - start) / step);
	}
	if (step == 0)
		return dt_shape_fail(c, "step must be nonzero");
	if (!((step > 0 && end >= start) || (step < 0 && end <= start)))
		return dt_shape_fail(c, "upper bound and larger bound inconsistent with step sign");
	if (!(size >= 0 && size <= (double)DT_MAX_ELEMENTS))
		return dt_shape_fail(c, "invalid size, possible overflow?");
	struct dt_tinfo out = {0};
	out.rank = 1;
	out.shape[0] = (int64_t)size;
	out.dtype = (uint8_t)dt;
	dt_tinfo_set_strides(&out, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &out);
	return DT_OK;
}
