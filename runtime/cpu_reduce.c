// SPDX-License-Identifier: MIT
/* cpu_reduce.c: reductions over a dim list (sum, mean, amax/amin, max/min,
 * max.dim/min.dim with indices, argmax/argmin, logsumexp, var, var_mean).
 * Each output element reduces one row (the reduced dims of the input, in
 * row-major order) accumulated in double; NaN propagates through max/min
 * as in PyTorch, and indices are those of the first extreme. */
#include "internal.h"

#include <math.h>
#include <string.h>

int dt_cpu_reduce_mask(struct dt_backend *b, const struct dt_kernel_call *c,
		       const struct dt_reduction *def,
		       const struct dt_rt_tensor *x, bool *mask)
{
	int64_t dims[2 * DT_MAX_RANK];
	int n = -1;
	memset(mask, 0, DT_MAX_RANK * sizeof(bool));
	if (def->pdims >= 0) {
		if (def->one_dim) {
			if (dt_cpu_int(c, def->pdims, &dims[0]))
				n = 1;
		} else {
			n = dt_cpu_ints(c, def->pdims, dims, 2 * DT_MAX_RANK);
		}
	}
	if (n <= 0) {
		for (int d = 0; d < x->rank; d++)
			mask[d] = true;
		return DT_OK;
	}
	int64_t r = x->rank > 0 ? x->rank : 1;
	for (int i = 0; i < n; i++) {
		int64_t d = dims[i] < 0 ? dims[i] + r : dims[i];
		if (d < 0 || d >= r)
			return dt_cpu_fail(b, c, "dim %lld out of range for a %d-D tensor",
					   (long long)dims[i], x->rank);
		if (x->rank > 0)
			mask[d] = true;
	}
	return DT_OK;
}

/* The value and first index of the row's max (sign 1) or min (sign -1);
 * a NaN wins at its first position. */
static void extreme(const double *row, int64_t k, int sign, double *v,
		    int64_t *at)
{
	*v = row[0];
	*at = 0;
	for (int64_t i = 0; i < k && !isnan(*v); i++) {
		if (isnan(row[i]) || (sign > 0 ? row[i] > *v : row[i] < *v)) {
			*v = row[i];
			*at = i;
		}
	}
}

/* Reduce one row into r[0] (and r[1]: index or mean). */
static void reduce_row(enum dt_reduce_kind kind, double *row, int64_t k,
		       double correction, double *r)
{
	double sum = 0, v;
	int64_t at;
	switch (kind) {
	case DT_RED_SUM:
	case DT_RED_MEAN:
		for (int64_t i = 0; i < k; i++)
			sum += row[i];
		r[0] = kind == DT_RED_SUM ? sum : sum / (double)k;
		break;
	case DT_RED_MAX:
	case DT_RED_MIN:
	case DT_RED_ARGMAX:
	case DT_RED_ARGMIN:
		extreme(row, k, kind == DT_RED_MAX || kind == DT_RED_ARGMAX ? 1 : -1, &v, &at);
		r[0] = kind == DT_RED_MAX || kind == DT_RED_MIN ? v : (double)at;
		r[1] = (double)at;
		break;
	case DT_RED_LOGSUMEXP:
		extreme(row, k, 1, &v, &at);
		if (isinf(v))
			v = 0;
		for (int64_t i = 0; i < k; i++)
			sum += exp(row[i] - v);
		r[0] = log(sum) + v;
		break;
	case DT_RED_VAR: {
		for (int64_t i = 0; i < k; i++)
			sum += row[i];
		double mean = sum / (double)k, ss = 0;
		for (int64_t i = 0; i < k; i++)
			ss += (row[i] - mean) * (row[i] - mean);
		double div = (double)k - correction;
		r[0] = ss / (div > 0 ? div : 0);
		r[1] = mean;
		break;
	}
	}
}

int dt_cpu_reduce(struct dt_backend *b, const struct dt_kernel_call *c)
{
	struct dt_reduction def;
	if (!dt_reduction_of(c->op, &def))
		dt_die(__FILE__, __LINE__, "no reduction kernel for %s",
		       dt_op_get(c->op)->target);
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	bool mask[DT_MAX_RANK], keepdim = false;
	if (dt_cpu_reduce_mask(b, c, &def, x, mask) != DT_OK)
		return DT_ERUNTIME;
	if (def.pkeep >= 0)
		dt_cpu_bool(c, def.pkeep, &keepdim);
	double correction = 1;
	if (c->op == DT_OP_VAR_MEAN_DIM) {
		bool unbiased = true;
		dt_cpu_bool(c, 2, &unbiased);
		correction = unbiased;
	} else if (def.kind == DT_RED_VAR) {
		dt_cpu_number(c, 2, &correction);
	}
	/* sum/mean with dtype=: the input is cast first */
	enum dt_dtype cast;
	bool do_cast = (def.kind == DT_RED_SUM || def.kind == DT_RED_MEAN) &&
		       dt_cpu_dtype(c, c->op == DT_OP_SUM || c->op == DT_OP_MEAN ? 1 : 3,
				    &cast);

	struct dt_rt_tensor xo, xi, outs[2];
	dt_cpu_split_dims(x, mask, &xo, &xi);
	int nout = (int)c->noutputs;
	for (int k = 0; k < nout; k++) {
		struct dt_rt_tensor unused;
		outs[k] = c->outputs[k];
		if (keepdim && x->rank > 0)
			dt_cpu_split_dims(&c->outputs[k], mask, &outs[k], &unused);
		DT_REQUIRE(dt_rt_numel(&outs[k]) == dt_rt_numel(&xo));
		outs[k].rank = xo.rank; /* same sizes, as the IR says */
		memcpy(outs[k].shape, xo.shape, sizeof(xo.shape));
		if (!keepdim || x->rank == 0)
			memcpy(outs[k].stride, c->outputs[k].stride, sizeof(xo.stride));
	}
	int64_t k = dt_rt_numel(&xi), rows = dt_rt_numel(&xo);
	if (k == 0 && def.kind != DT_RED_SUM && def.kind != DT_RED_MEAN && def.kind != DT_RED_VAR &&
	    rows > 0)
		return dt_cpu_fail(b, c, "cannot reduce over a zero-size dimension");
	double *row = dt_cpu_scratch(b, c, k);
	if (!row)
		return DT_ERUNTIME;
	const struct dt_rt_tensor *ts[3] = {&xo, &outs[0], nout > 1 ? &outs[1] : &outs[0]};
	struct dt_cpu_iter it;
	dt_cpu_iter_init(&it, xo.shape, xo.rank, ts, 3);
	for (int64_t i = 0; i < rows; i++, dt_cpu_iter_next(&it)) {
		xi.offset = it.off[0];
		dt_cpu_read(&xi, row);
		if (do_cast)
			for (int64_t j = 0; j < k; j++)
				row[j] = dt_round_to(cast, row[j]);
		double r[2] = {0, 0};
		reduce_row((enum dt_reduce_kind)def.kind, row, k, correction, r);
		for (int o = 0; o < nout; o++)
			dt_store_element((enum dt_dtype)outs[o].dtype,
					 dt_rt_at(&outs[o], it.off[o + 1]), r[o]);
	}
	dt_cpu_release(b, row);
	return DT_OK;
}
