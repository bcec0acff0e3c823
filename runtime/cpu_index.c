// SPDX-License-Identifier: MIT
/* cpu_index.c: the CPU kernels of the ops that address elements by index:
 * tril/triu (keep j - i <= k, or >= k, over the last two dims),
 * index_select (gather slices along a dim), index_add (scatter-add
 * alpha * source slices onto a copy of self) and repeat_interleave.Tensor
 * (each position i repeated repeats[i] times), gather, scatter_add,
 * repeat (tiling), flip and cumsum (a running sum along a dim, in double),
 * as ATen's CPU kernels. */
#include "internal.h"

#include <string.h>

static int triangle(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	int64_t k = 0;
	dt_cpu_int(c, 1, &k);
	int64_t n = dt_rt_numel(x), rows = x->shape[x->rank - 2],
		cols = x->shape[x->rank - 1];
	double *v = dt_cpu_scratch(b, c, n);
	if (!v)
		return DT_ERUNTIME;
	dt_cpu_read(x, v);
	bool lower = c->op == DT_OP_TRIL;
	for (int64_t e = 0; e < n; e++) {
		int64_t j = e % cols, i = (e / cols) % rows;
		if (lower ? j - i > k : j - i < k)
			v[e] = 0;
	}
	dt_cpu_write(&c->outputs[0], v);
	dt_cpu_release(b, v);
	return DT_OK;
}

/* The int64 indices of `idx`, each in [0, n) (negative ones too are out
 * of range, as in PyTorch); reports the first that is not. */
static int64_t *read_index(struct dt_backend *b, const struct dt_kernel_call *c,
			   const struct dt_rt_tensor *idx, int64_t n)
{
	int64_t count = dt_rt_numel(idx);
	double *v = dt_cpu_scratch(b, c, count);
	int64_t *ix = v ? dt_cpu_alloc(b, c, (size_t)count * sizeof(int64_t)) : NULL;
	if (!ix) {
		dt_cpu_release(b, v);
		return NULL;
	}
	dt_cpu_read(idx, v);
	for (int64_t i = 0; i < count; i++) {
		ix[i] = (int64_t)v[i];
		if (ix[i] < 0 || ix[i] >= n) {
			dt_cpu_fail(b, c, "index %lld is out of range for a dim of size %lld",
				    (long long)ix[i], (long long)n);
			dt_cpu_release(b, v);
			dt_cpu_release(b, ix);
			return NULL;
		}
	}
	dt_cpu_release(b, v);
	return ix;
}

/* self's dims around `dim`: outer * size * inner elements. */
struct slices {
	int64_t outer, size, inner;
};

static struct slices slices_of(const struct dt_rt_tensor *t, int64_t dim)
{
	struct slices s;
	dt_rt_around(t, dim, &s.outer, &s.size, &s.inner);
	return s;
}

static int index_select(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0), *idx = dt_kernel_input(c, 2);
	int64_t dim = 0;
	dt_cpu_int(c, 1, &dim);
	dt_rt_wrap_dim(&dim, x->rank);
	struct slices s = slices_of(x, dim);
	int64_t n = dt_rt_numel(idx);
	int64_t *ix = read_index(b, c, idx, s.size);
	if (!ix)
		return DT_ERUNTIME;
	double *v = dt_cpu_scratch(b, c, dt_rt_numel(x));
	double *out = v ? dt_cpu_scratch(b, c, s.outer * n * s.inner) : NULL;
	if (!out) {
		dt_cpu_release(b, ix);
		dt_cpu_release(b, v);
		return DT_ERUNTIME;
	}
	dt_cpu_read(x, v);
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t i = 0; i < n; i++)
			memcpy(out + (o * n + i) * s.inner, v + (o * s.size + ix[i]) * s.inner,
			       (size_t)s.inner * sizeof(double));
	dt_cpu_write(&c->outputs[0], out);
	dt_cpu_release(b, ix);
	dt_cpu_release(b, v);
	dt_cpu_release(b, out);
	return DT_OK;
}

static int index_add(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0), *idx = dt_kernel_input(c, 2),
				  *src = dt_kernel_input(c, 3);
	int64_t dim = 0;
	double alpha = 1;
	dt_cpu_int(c, 1, &dim);
	dt_cpu_number(c, 4, &alpha);
	dt_rt_wrap_dim(&dim, x->rank);
	struct slices s = slices_of(x, dim);
	int64_t n = dt_rt_numel(idx);
	int64_t *ix = read_index(b, c, idx, s.size);
	if (!ix)
		return DT_ERUNTIME;
	double *out = dt_cpu_scratch(b, c, dt_rt_numel(x));
	double *sv = out ? dt_cpu_scratch(b, c, dt_rt_numel(src)) : NULL;
	if (!sv) {
		dt_cpu_release(b, ix);
		dt_cpu_release(b, out);
		return DT_ERUNTIME;
	}
	dt_cpu_read(x, out);
	dt_cpu_read(src, sv);
	enum dt_dtype t = (enum dt_dtype)c->outputs[0].dtype;
	alpha = dt_round_to(t, alpha);
	for (int64_t o = 0; o < s.outer; o++)
		for (int64_t i = 0; i < n; i++) {
			double *dst = out + (o * s.size + ix[i]) * s.inner;
			const double *from = sv + (o * n + i) * s.inner;
			for (int64_t j = 0; j < s.inner; j++)
				dst[j] = dt_round_to(t, dst[j] + alpha * from[j]);
		}
	dt_cpu_write(&c->outputs[0], out);
	dt_cpu_release(b, ix);
	dt_cpu_release(b, out);
	dt_cpu_release(b, sv);
	return DT_OK;
}

static int repeat_interleave(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *r = dt_kernel_input(c, 0);
	int64_t n = dt_rt_numel(r), len = c->outputs[0].shape[0], total = 0;
	double *rv = dt_cpu_scratch(b, c, n);
	if (!rv)
		return DT_ERUNTIME;
	dt_cpu_read(r, rv);
	for (int64_t i = 0; i < n; i++) {
		if (rv[i] < 0) {
			dt_cpu_release(b, rv);
			return dt_cpu_fail(b, c, "repeats can not be negative");
		}
		if (rv[i] > (double)(len - total)) {
			dt_cpu_release(b, rv);
			return dt_cpu_fail(b, c, "the repeats sum to more than the result's %lld elements",
					   (long long)len);
		}
		total += (int64_t)rv[i];
	}
	if (total != len) {
		dt_cpu_release(b, rv);
		return dt_cpu_fail(b, c, "the repeats sum to %lld but the result has %lld elements",
				   (long long)total, (long long)len);
	}
	double *out = dt_cpu_scratch(b, c, len);
	if (!out) {
		dt_cpu_release(b, rv);
		return DT_ERUNTIME;
	}
	for (int64_t i = 0, at = 0; i < n; i++)
		for (int64_t k = 0; k < (int64_t)rv[i]; k++)
			out[at++] = (double)i;
	dt_cpu_write(&c->outputs[0], out);
	dt_cpu_release(b, rv);
	dt_cpu_release(b, out);
	return DT_OK;
}

/* Row-major offset of coordinates `at` in `shape`. */
static int64_t offset_in(const int64_t *at, const int64_t *shape, int rank)
{
	int64_t off = 0;
	for (int d = 0; d < rank; d++)
		off = off * shape[d] + at[d];
	return off;
}

/* The next coordinates of `shape` in row-major order. */
static void step(int64_t *at, const int64_t *shape, int rank)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (++at[d] < shape[d])
			return;
		at[d] = 0;
	}
}

/* gather: out[at] = self[at with dim <- index[at]]; scatter_add:
 * out = self, out[at with dim <- index[at]] += src[at] over index's
 * elements; scatter.src and scatter.value assign src[at] or the value
 * there instead (in index order: the last write wins). */
static int gather(struct dt_backend *b, const struct dt_kernel_call *c)
{
	bool scatter = c->op != DT_OP_GATHER, add = c->op == DT_OP_SCATTER_ADD;
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0), *idx = dt_kernel_input(c, 2);
	const struct dt_rt_tensor *src = dt_kernel_input(c, 3); /* NULL: a value */
	int64_t dim = 0;
	dt_cpu_int(c, 1, &dim);
	dt_rt_wrap_dim(&dim, x->rank);
	int rank = idx->rank;
	int64_t n = dt_rt_numel(idx), size = x->rank ? x->shape[dim] : 1;
	double *xv = dt_cpu_scratch(b, c, dt_rt_numel(x));
	double *iv = xv ? dt_cpu_scratch(b, c, n) : NULL;
	double *sv = iv && scatter && src ? dt_cpu_scratch(b, c, dt_rt_numel(src)) : NULL;
	double *out = scatter ? xv : iv ? dt_cpu_scratch(b, c, n) : NULL, value = 0;
	if (!iv || (scatter && src && !sv) || !out) {
		if (!scatter)
			dt_cpu_release(b, out);
		dt_cpu_release(b, xv);
		dt_cpu_release(b, iv);
		dt_cpu_release(b, sv);
		return DT_ERUNTIME;
	}
	dt_cpu_read(x, xv);
	dt_cpu_read(idx, iv);
	if (sv)
		dt_cpu_read(src, sv);
	enum dt_dtype t = (enum dt_dtype)c->outputs[0].dtype;
	if (scatter && !src && dt_cpu_number(c, 3, &value))
		value = dt_round_to(t, value);
	int64_t at[DT_MAX_RANK] = {0}, from[DT_MAX_RANK];
	int rc = DT_OK;
	for (int64_t e = 0; e < n && rc == DT_OK; e++, step(at, idx->shape, rank)) {
		int64_t ix = (int64_t)iv[e];
		if (ix < 0 || ix >= size) {
			rc = dt_cpu_fail(b, c, "index %lld is out of bounds for dimension %lld with size %lld",
					 (long long)ix, (long long)dim, (long long)size);
			break;
		}
		memcpy(from, at, sizeof(from));
		from[dim] = ix;
		int64_t xo = x->rank ? offset_in(from, x->shape, x->rank) : 0;
		double s = sv ? sv[src->rank ? offset_in(at, src->shape, rank) : 0] : value;
		if (add)
			out[xo] = dt_round_to(t, out[xo] + s);
		else if (scatter)
			out[xo] = s;
		else
			out[e] = xv[xo];
	}
	if (rc == DT_OK)
		dt_cpu_write(&c->outputs[0], out);
	if (!scatter)
		dt_cpu_release(b, out);
	dt_cpu_release(b, xv);
	dt_cpu_release(b, iv);
	dt_cpu_release(b, sv);
	return rc;
}

/* repeat and flip: out[at] = self[from] over the output's row-major
 * coordinates, from[d] = at[d + lead] mod self's size (repeat: self
 * right-aligned and tiled; flip: the same shape, so the identity),
 * reversed on the `flipped` dims of self. */
static int move_tiled(struct dt_backend *b, const struct dt_kernel_call *c,
		      const bool *flipped)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	struct dt_rt_tensor *y = &c->outputs[0];
	int64_t n = dt_rt_numel(y), lead = y->rank - x->rank;
	double *xv = dt_cpu_scratch(b, c, dt_rt_numel(x));
	double *out = xv ? dt_cpu_scratch(b, c, n) : NULL;
	if (!out) {
		dt_cpu_release(b, xv);
		return DT_ERUNTIME;
	}
	dt_cpu_read(x, xv);
	int64_t at[DT_MAX_RANK] = {0}, from[DT_MAX_RANK] = {0};
	for (int64_t e = 0; e < n; e++, step(at, y->shape, y->rank)) {
		for (int d = 0; d < x->rank; d++) {
			from[d] = at[d + lead] % x->shape[d];
			if (flipped[d])
				from[d] = x->shape[d] - 1 - from[d];
		}
		out[e] = xv[offset_in(from, x->shape, x->rank)];
	}
	dt_cpu_write(y, out);
	dt_cpu_release(b, xv);
	dt_cpu_release(b, out);
	return DT_OK;
}

static int flip(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	int64_t dims[DT_MAX_RANK];
	bool flipped[DT_MAX_RANK] = {false};
	int nd = dt_cpu_ints(c, 1, dims, DT_MAX_RANK);
	for (int i = 0; i < nd; i++)
		if (dt_rt_wrap_dim(&dims[i], x->rank) && x->rank)
			flipped[dims[i]] = true;
	return move_tiled(b, c, flipped);
}

static int cumsum(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	enum dt_dtype t = (enum dt_dtype)c->outputs[0].dtype;
	int64_t dim = 0, outer, size, inner;
	dt_cpu_int(c, 1, &dim);
	dt_rt_wrap_dim(&dim, x->rank);
	dt_rt_around(x, dim, &outer, &size, &inner);
	double *v = dt_cpu_scratch(b, c, dt_rt_numel(x));
	if (!v)
		return DT_ERUNTIME;
	dt_cpu_read(x, v);
	for (int64_t o = 0; o < outer; o++)
		for (int64_t j = 0; j < inner; j++) {
			double acc = 0;
			for (int64_t i = 0; i < size; i++) {
				double *e = &v[(o * size + i) * inner + j];
				acc += dt_round_to(t, *e);
				*e = acc;
			}
		}
	dt_cpu_write(&c->outputs[0], v);
	dt_cpu_release(b, v);
	return DT_OK;
}

int dt_cpu_index(struct dt_backend *b, const struct dt_kernel_call *c)
{
	switch (c->op) {
	case DT_OP_TRIL:
	case DT_OP_TRIU:
		return triangle(b, c);
	case DT_OP_INDEX_SELECT:
		return index_select(b, c);
	case DT_OP_INDEX_ADD:
		return index_add(b, c);
	case DT_OP_REPEAT_INTERLEAVE:
		return repeat_interleave(b, c);
	case DT_OP_GATHER:
	case DT_OP_SCATTER_ADD:
	case DT_OP_SCATTER_SRC:
	case DT_OP_SCATTER_VALUE:
		return gather(b, c);
	case DT_OP_REPEAT:
		return move_tiled(b, c, (const bool[DT_MAX_RANK]){false});
	case DT_OP_FLIP:
		return flip(b, c);
	case DT_OP_CUMSUM:
		return cumsum(b, c);
	default:
		dt_die(__FILE__, __LINE__, "no index kernel for %s", dt_op_get(c->op)->target);
	}
}
