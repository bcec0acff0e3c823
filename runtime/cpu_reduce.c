// SPDX-License-Identifier: MIT
/* cpu_reduce.c: reductions over a dim list (sum, mean, amax/amin, max/min,
 * max.dim/min.dim with indices, argmax/argmin, logsumexp, var, var_mean).
 * Each output element reduces one row (the reduced dims of the input, in
 * row-major order) accumulated in double; NaN propagates through max/min
 * as in PyTorch, and indices are those of the first extreme. */
#include "internal.h"

#include <math.h>
#include <string.h>

enum red_kind { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_ARGMAX, RED_ARGMIN,
		RED_LOGSUMEXP, RED_VAR };

/* How an op is read: its kind, the dims parameter (-1: all dims), the
 * keepdim parameter (-1: none), and whether it returns indices too. */
struct red_def {
	uint8_t kind;
	int8_t pdims, pkeep;
	bool one_dim;      /* dim is a single int (max.dim, argmax) */
	bool with_indices; /* max.dim/min.dim: (values, indices) */
};

static bool red_def_of(enum dt_op op, struct red_def *d)
{
	static const struct {
		enum dt_op op;
		struct red_def def;
	} table[] = {
		{DT_OP_SUM, {RED_SUM, -1, -1, false, false}},
		{DT_OP_SUM_DIM, {RED_SUM, 1, 2, false, false}},
		{DT_OP_MEAN, {RED_MEAN, -1, -1, false, false}},
		{DT_OP_MEAN_DIM, {RED_MEAN, 1, 2, false, false}},
		{DT_OP_AMAX, {RED_MAX, 1, 2, false, false}},
		{DT_OP_AMIN, {RED_MIN, 1, 2, false, false}},
		{DT_OP_MAX, {RED_MAX, -1, -1, false, false}},
		{DT_OP_MIN, {RED_MIN, -1, -1, false, false}},
		{DT_OP_MAX_DIM, {RED_MAX, 1, 2, true, true}},
		{DT_OP_MIN_DIM, {RED_MIN, 1, 2, true, true}},
		{DT_OP_ARGMAX, {RED_ARGMAX, 1, 2, true, false}},
		{DT_OP_ARGMIN, {RED_ARGMIN, 1, 2, true, false}},
		{DT_OP_LOGSUMEXP, {RED_LOGSUMEXP, 1, 2, false, false}},
		{DT_OP_VAR_CORRECTION, {RED_VAR, 1, 3, false, false}},
		{DT_OP_VAR_MEAN_CORRECTION, {RED_VAR, 1, 3, false, false}},
		{DT_OP_VAR_MEAN_DIM, {RED_VAR, 1, 3, false, false}},
	};
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].op == op) {
			*d = table[i].def;
			return true;
		}
	}
	return false;
}

/* Marks the reduced dims of x; false (after reporting) on a bad dim. */
static int reduce_mask(struct dt_backend *b, const struct dt_kernel_call *c,
		       const struct red_def *def, const struct dt_rt_tensor *x,
		       bool *mask)
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
static void reduce_row(enum red_kind kind, double *row, int64_t k,
		       double correction, double *r)
{
	double sum = 0, v;
	int64_t at;
	switch (kind) {
	case RED_SUM:
	case RED_MEAN:
		for (int64_t i = 0; i < k; i++)
			sum += row[i];
		r[0] = kind == RED_SUM ? sum : sum / (double)k;
		break;
	case RED_MAX:
	case RED_MIN:
	case RED_ARGMAX:
	case RED_ARGMIN:
		extreme(row, k, kind == RED_MAX || kind == RED_ARGMAX ? 1 : -1, &v, &at);
		r[0] = kind == RED_MAX || kind == RED_MIN ? v : (double)at;
		r[1] = (double)at;
		break;
	case RED_LOGSUMEXP:
		extreme(row, k, 1, &v, &at);
		if (isinf(v))
			v = 0;
		for (int64_t i = 0; i < k; i++)
			sum += exp(row[i] - v);
		r[0] = log(sum) + v;
		break;
	case RED_VAR: {
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
	struct red_def def;
	if (!red_def_of(c->op, &def))
		dt_die(__FILE__, __LINE__, "no reduction kernel for %s",
		       dt_op_get(c->op)->target);
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	bool mask[DT_MAX_RANK], keepdim = false;
	if (reduce_mask(b, c, &def, x, mask) != DT_OK)
		return DT_ERUNTIME;
	if (def.pkeep >= 0)
		dt_cpu_bool(c, def.pkeep, &keepdim);
	double correction = 1;
	if (c->op == DT_OP_VAR_MEAN_DIM) {
		bool unbiased = true;
		dt_cpu_bool(c, 2, &unbiased);
		correction = unbiased;
	} else if (def.kind == RED_VAR) {
		dt_cpu_number(c, 2, &correction);
	}
	/* sum/mean with dtype=: the input is cast first */
	enum dt_dtype cast;
	bool do_cast = (def.kind == RED_SUM || def.kind == RED_MEAN) &&
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
	if (k == 0 && def.kind != RED_SUM && def.kind != RED_MEAN && def.kind != RED_VAR &&
	    rows > 0)
		return dt_cpu_fail(b, c, "cannot reduce over a zero-size dimension");
	double *row = dt_cpu_scratch(k);
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
		reduce_row((enum red_kind)def.kind, row, k, correction, r);
		for (int o = 0; o < nout; o++)
			dt_store_element((enum dt_dtype)outs[o].dtype,
					 dt_rt_at(&outs[o], it.off[o + 1]), r[o]);
	}
	dt_free(row);
	return DT_OK;
}
