// SPDX-License-Identifier: MIT
/* cpu_copy.c: data movement: the strided copy with dtype conversion
 * (bitwise when the dtypes agree), the copying ops (clone, contiguous,
 * _to_copy, convert_element_type, a reshape that cannot alias, the
 * single-process redistribute), cat and stack, constant_pad_nd, the
 * slice/select backward ops and the dt.* ops of SPMD programs. */
#include "internal.h"

#include <string.h>

/* Copy src into dst (same shape): bytes when the dtypes agree, else
 * converted through double. */
static void copy_elements(struct dt_rt_tensor *dst, const struct dt_rt_tensor *src)
{
	const struct dt_rt_tensor *ts[2] = {dst, src};
	struct dt_cpu_rows r;
	dt_cpu_rows_init(&r, dst->shape, dst->rank, ts, 2);
	int esize = dt_dtype_size((enum dt_dtype)dst->dtype);
	bool same = dst->dtype == src->dtype;
	double buf[512];
	for (int64_t row = 0; row < r.count; row++, dt_cpu_iter_next(&r.outer)) {
		char *d = dt_rt_at(dst, r.outer.off[0]);
		const char *s = dt_rt_at(src, r.outer.off[1]);
		if (same && r.step[0] == 1 && r.step[1] == 1) {
			memcpy(d, s, (size_t)(r.len * esize));
		} else if (same) {
			for (int64_t i = 0; i < r.len; i++)
				memcpy(d + i * r.step[0] * esize, s + i * r.step[1] * esize,
				       (size_t)esize);
		} else {
			for (int64_t at = 0; at < r.len; at += 512) {
				int64_t n = r.len - at < 512 ? r.len - at : 512;
				dt_cpu_load_row(src, r.outer.off[1] + at * r.step[1], r.step[1], n, buf);
				dt_cpu_store_row(dst, r.outer.off[0] + at * r.step[0], r.step[0], n, buf);
			}
		}
	}
}

static bool same_shape(const struct dt_rt_tensor *a, const struct dt_rt_tensor *b)
{
	return a->rank == b->rank &&
	       memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) == 0;
}

int dt_cpu_copy(struct dt_backend *b, struct dt_rt_tensor *dst,
		const struct dt_rt_tensor *src)
{
	if (!same_shape(dst, src)) {
		dt_diag_report(b->diag, DT_ERROR, NULL, 0, NULL,
			       "copy between tensors of different shapes");
		return DT_ERUNTIME;
	}
	copy_elements(dst, src);
	return DT_OK;
}

/* A kernel's copy of src into dst, reporting `what` at the node when the
 * shapes differ. */
static int copy_into(struct dt_backend *b, const struct dt_kernel_call *c,
		     struct dt_rt_tensor *dst, const struct dt_rt_tensor *src,
		     const char *what)
{
	if (!same_shape(dst, src))
		return dt_cpu_fail(b, c, "%s", what);
	copy_elements(dst, src);
	return DT_OK;
}

int dt_cpu_copy_op(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *in = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	switch (c->op) {
	case DT_OP_RESHAPE:
	case DT_OP_UNSAFE_VIEW: { /* a copy in row-major order */
		if (dt_rt_numel(in) != dt_rt_numel(out) || in->dtype != out->dtype ||
		    !dt_rt_is_contiguous(out))
			return dt_cpu_fail(b, c, "a copying reshape needs a contiguous result with the input's elements");
		struct dt_rt_tensor flat = *out; /* out seen in the input's shape */
		flat.rank = in->rank;
		memcpy(flat.shape, in->shape, sizeof(flat.shape));
		dt_contiguous_strides(flat.shape, flat.rank, flat.stride);
		copy_elements(&flat, in);
		return DT_OK;
	}
	case DT_OP_CLONE:
	case DT_OP_CONTIGUOUS:
	case DT_OP_LIFT_FRESH_COPY:
	case DT_OP_CONVERT_ELEMENT_TYPE:
	case DT_OP_TO_COPY:
	case DT_OP_REDISTRIBUTE: /* one process holds the whole tensor */
		return copy_into(b, c, out, in, "result shape differs from the input's");
	default:
		dt_die(__FILE__, __LINE__, "no copy kernel for %s",
		       dt_op_get(c->op)->target);
	}
}

/* cat(tensors, dim) and stack(tensors, dim). Legacy empty 1-D tensors
 * take no part in cat. */
int dt_cpu_join(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *t[DT_MAX_RESULTS];
	struct dt_rt_tensor *out = &c->outputs[0];
	int n = dt_cpu_tensors(c, 0, t, DT_MAX_RESULTS);
	int64_t dim = 0, pos = 0;
	dt_cpu_int(c, 1, &dim);
	if (!dt_rt_wrap_dim(&dim, out->rank))
		return dt_cpu_fail(b, c, "dim %lld out of range", (long long)dim);
	for (int i = 0; i < n; i++) {
		if (!t[i])
			return dt_cpu_fail(b, c, "tensor %d of the list is none", i);
		struct dt_rt_tensor part;
		if (c->op == DT_OP_STACK) {
			part = dt_rt_select(out, (int)dim, i);
		} else {
			if (t[i]->rank == 1 && t[i]->shape[0] == 0 && out->rank != 1)
				continue;
			if (t[i]->rank != out->rank)
				return dt_cpu_fail(b, c, "tensor %d has rank %d, the result %d",
						   i, t[i]->rank, out->rank);
			part = dt_rt_narrow(out, (int)dim, pos, t[i]->shape[dim], 1);
			pos += t[i]->shape[dim];
		}
		if (copy_into(b, c, &part, t[i], "a tensor does not fit the result") != DT_OK)
			return DT_ERUNTIME;
	}
	return DT_OK;
}

/* slice(size, start, end) bounds as aten.slice clamps them. */
static void slice_bounds(int64_t size, int64_t *start, int64_t *end)
{
	if (*start < 0)
		*start += size;
	if (*end < 0)
		*end += size;
	*start = *start < 0 ? 0 : *start > size ? size : *start;
	*end = *end < *start ? *start : *end > size ? size : *end;
}

/* constant_pad_nd: the value everywhere, then the input's kept part;
 * pads are (before, after) pairs from the last dim backwards, negative
 * ones crop. */
static int pad(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *in = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	int64_t p[2 * DT_MAX_RANK];
	int np = dt_cpu_ints(c, 1, p, 2 * DT_MAX_RANK);
	double value = 0;
	dt_cpu_number(c, 2, &value);
	if (np < 0 || np % 2 || np / 2 > in->rank || out->rank != in->rank)
		return dt_cpu_fail(b, c, "bad pad list");
	struct dt_rt_tensor src = *in, dst = *out;
	for (int k = 0; k < np / 2; k++) {
		int d = in->rank - 1 - k;
		int64_t before = p[2 * k], after = p[2 * k + 1];
		int64_t cut_b = before < 0 ? -before : 0, cut_a = after < 0 ? -after : 0;
		int64_t len = in->shape[d] - cut_b - cut_a;
		if (len < 0)
			len = 0;
		src = dt_rt_narrow(&src, d, cut_b, len, 1);
		dst = dt_rt_narrow(&dst, d, before > 0 ? before : 0, len, 1);
	}
	dt_cpu_fill(out, value);
	return copy_into(b, c, &dst, &src, "result does not fit the padding");
}

/* slice_backward / select_backward: zeros with grad in the slice. */
static int scatter_back(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *g = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	int64_t dim = 0, start = 0, end = 0, step = 1;
	dt_cpu_int(c, 2, &dim);
	if (!dt_rt_wrap_dim(&dim, out->rank) || out->rank == 0)
		return dt_cpu_fail(b, c, "dim %lld out of range", (long long)dim);
	int64_t size = out->shape[dim];
	struct dt_rt_tensor part;
	dt_cpu_fill(out, 0);
	if (c->op == DT_OP_SELECT_BACKWARD) {
		dt_cpu_int(c, 3, &start);
		if (start < -size || start >= size)
			return dt_cpu_fail(b, c, "index %lld out of range for size %lld",
					   (long long)start, (long long)size);
		part = dt_rt_select(out, (int)dim, start < 0 ? start + size : start);
	} else {
		dt_cpu_int(c, 3, &start);
		dt_cpu_int(c, 4, &end);
		dt_cpu_int(c, 5, &step);
		if (step <= 0)
			return dt_cpu_fail(b, c, "slice step must be positive");
		slice_bounds(size, &start, &end);
		part = dt_rt_narrow(out, (int)dim, start, (end - start + step - 1) / step, step);
	}
	return copy_into(b, c, &part, g, "grad_output does not fit the slice");
}

/* dt.pack_pieces / dt.unpack_pieces: dim holds `pieces` pieces of B rows
 * (the padded side), each with the rank's `per` valid rows leading; on the
 * packed side they lie back to back. `per` is the rank's shard length of
 * dim under the placements over the pieces. */
static int pieces_views(struct dt_backend *b, const struct dt_kernel_call *c,
			const struct dt_spmd_args *a, const struct dt_mesh *me,
			const int64_t *coord,
			struct dt_rt_tensor (**pairs)[2], int *npairs)
{
	const struct dt_rt_tensor *in = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	int64_t len = dt_shard_length(&a->src, me->shape, coord, a->dim,
				      a->shape[a->dim]);
	int64_t n = a->pieces, rows = in->shape[a->dim];
	if (rows != out->shape[a->dim] || rows % n || len % n ||
	    len / n > rows / n)
		return dt_cpu_fail(b, c, "dim %d: the rank's %lld rows do not "
				   "lie in %lld pieces of %lld", a->dim,
				   (long long)len, (long long)n,
				   (long long)(rows / n));
	int64_t per = len / n, block = rows / n;
	bool pack = c->op == DT_OP_PACK_PIECES;
	struct dt_rt_tensor (*v)[2] = dt_malloc((size_t)n * sizeof *v);
	for (int64_t j = 0; j < n; j++) {
		v[j][0] = dt_rt_narrow(in, a->dim, j * (pack ? block : per),
				       per, 1);
		v[j][1] = dt_rt_narrow(out, a->dim, j * (pack ? per : block),
				       per, 1);
	}
	*pairs = v;
	*npairs = (int)n;
	return DT_OK;
}

int dt_cpu_spmd_views(struct dt_backend *b, const struct dt_kernel_call *c,
		      struct dt_rt_tensor (**pairs)[2], int *npairs)
{
	struct dt_spmd_args a;
	char err[500];
	*pairs = NULL;
	if (!dt_spmd_args_read(c->m, c->op, c->args, &a, err, sizeof err))
		return dt_cpu_fail(b, c, "%s", err);
	const struct dt_mesh *me = &c->m->meshes.data[a.mesh];
	int rank = c->m->rank >= 0 ? c->m->rank : b->rank;
	int64_t pos = dt_mesh_position(me, rank), coord[DT_MAX_MESH_DIMS];
	if (pos < 0)
		return dt_cpu_fail(b, c, "rank %d is not in mesh '%s'", rank,
				   dt_str_get(c->m, me->name));
	dt_mesh_coords(me, pos, coord);
	const struct dt_rt_tensor *in = dt_kernel_input(c, 0);
	struct dt_rt_tensor *out = &c->outputs[0];
	if (in->rank != a.rank || out->rank != a.rank)
		return dt_cpu_fail(b, c, "self or the result is not of rank %d",
				   a.rank);
	if (c->op == DT_OP_PACK_PIECES || c->op == DT_OP_UNPACK_PIECES)
		return pieces_views(b, c, &a, me, coord, pairs, npairs);
	bool local = c->op == DT_OP_LOCAL_SHARD;
	int n = local ? 1 : (int)me->shape[a.mesh_dim];
	int64_t fine[DT_MAX_RANK];
	dt_shard_shape(me, &a.dst, -1, a.shape, a.rank, fine);
	struct dt_rt_tensor (*v)[2] = dt_malloc((size_t)n * sizeof *v);
	for (int j = 0; j < n; j++) {
		struct dt_rt_tensor src = *in, dst = *out;
		/* blocks: the block of the member at coordinate j of the level */
		struct dt_rt_tensor *coarse = c->op == DT_OP_PACK_BLOCKS ? &dst : &src;
		struct dt_rt_tensor *block = c->op == DT_OP_PACK_BLOCKS ? &src : &dst;
		if (!local)
			coord[a.mesh_dim] = j;
		for (int d = 0; d < a.rank; d++) {
			if (!local && d != a.dim)
				continue;
			int64_t start, length;
			dt_shard_box(&a.src, &a.dst, me->shape, coord, d,
				     a.shape[d], &start, &length);
			int64_t at = local ? 0 : j * fine[d];
			if (start + length > (local ? src.shape[d] : coarse->shape[d]) ||
			    at + length > (local ? dst.shape[d] : block->shape[d])) {
				dt_free(v);
				return dt_cpu_fail(b, c, "dim %d: the shard [%lld, "
						   "%lld) does not fit",
						   d, (long long)start,
						   (long long)(start + length));
			}
			if (local) {
				src = dt_rt_narrow(&src, d, start, length, 1);
				dst = dt_rt_narrow(&dst, d, 0, length, 1);
			} else {
				*coarse = dt_rt_narrow(coarse, d, start, length, 1);
				*block = dt_rt_narrow(block, d, at, length, 1);
			}
		}
		v[j][0] = src;
		v[j][1] = dst;
	}
	*pairs = v;
	*npairs = n;
	return DT_OK;
}

/* The SPMD ops: the padding (semantics §7; local_shard's fill, else
 * zeros), then each copy. */
static int spmd(struct dt_backend *b, const struct dt_kernel_call *c)
{
	struct dt_rt_tensor (*v)[2];
	int n;
	double fill = 0;
	if (c->op == DT_OP_LOCAL_SHARD)
		dt_cpu_number(c, 7, &fill);
	if (dt_cpu_spmd_views(b, c, &v, &n) != DT_OK)
		return DT_ERUNTIME;
	dt_cpu_fill(&c->outputs[0], fill);
	int status = DT_OK;
	for (int j = 0; j < n && status == DT_OK; j++)
		status = copy_into(b, c, &v[j][1], &v[j][0], "a shard does not fit");
	dt_free(v);
	return status;
}

int dt_cpu_pad(struct dt_backend *b, const struct dt_kernel_call *c)
{
	switch (c->op) {
	case DT_OP_CONSTANT_PAD_ND:
		return pad(b, c);
	case DT_OP_LOCAL_SHARD:
	case DT_OP_PACK_BLOCKS:
	case DT_OP_UNPACK_BLOCKS:
	case DT_OP_PACK_PIECES:
	case DT_OP_UNPACK_PIECES:
		return spmd(b, c);
	case DT_OP_SLICE_BACKWARD:
	case DT_OP_SELECT_BACKWARD:
		return scatter_back(b, c);
	default:
		dt_die(__FILE__, __LINE__, "no pad kernel for %s",
		       dt_op_get(c->op)->target);
	}
}
