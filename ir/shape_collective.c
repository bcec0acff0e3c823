// SPDX-License-Identifier: MIT
/* shape_collective.c: shape functions of the _c10d_functional collectives,
 * wait_tensor and dtensor.redistribute. Collective results are fresh
 * contiguous tensors (the functional collectives allocate them). */
#include "shape.h"

#include <string.h>

/* Size of the declared group named by parameter p, or 0 when the module
 * does not declare it (the verifier reports that). */
static int64_t group_size_of(const struct dt_shape_ctx *c, int p)
{
	const struct dt_arg *a = c->args.arg[p];
	if (!a || a->kind != DT_ARG_STR)
		return 0;
	int g = dt_module_find_group(c->m, a->v.s);
	if (g < 0)
		return 0;
	const struct dt_group *grp = &c->m->groups.data[g];
	return dt_group_size(&c->m->meshes.data[grp->mesh], grp->dims, grp->ndims);
}

/* Reads the input (param 0) and the group_size param `p` (p < 0: none). */
static int collective_input(struct dt_shape_ctx *c, int p, struct dt_tinfo *t,
			    int64_t *group_size)
{
	if (dt_shape_tensor(c, 0, t) != DT_OK)
		return DT_EINPUT;
	if (p >= 0) {
		dt_shape_int(c, p, group_size);
		if (*group_size < 1)
			return dt_shape_fail(c, "group_size must be positive, got %lld",
					     (long long)*group_size);
		if (t->rank == 0)
			return dt_shape_fail(c, "input must have at least one dimension");
	}
	return DT_OK;
}

/* all_gather_into_tensor(input, group_size, group_name): the ranks' inputs
 * stacked along dim 0. */
int dt_shape_all_gather(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t n = 1;
	if (collective_input(c, 1, &t, &n) != DT_OK)
		return DT_EINPUT;
	if (__builtin_mul_overflow(t.shape[0], n, &t.shape[0]))
		return dt_shape_fail(c, "the gathered tensor is too large");
	if (dt_shape_check_sizes(c, t.shape, t.rank) != DT_OK)
		return DT_EINPUT;
	dt_tinfo_set_strides(&t, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* reduce_scatter_tensor(input, reduce_op, group_size, group_name): this
 * rank's chunk of dim 0 of the reduction. */
int dt_shape_reduce_scatter(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t n = 1;
	if (collective_input(c, 2, &t, &n) != DT_OK)
		return DT_EINPUT;
	if (t.shape[0] % n != 0)
		return dt_shape_fail(c, "dim 0 of size %lld is not divisible by group_size %lld",
				     (long long)t.shape[0], (long long)n);
	t.shape[0] /= n;
	dt_tinfo_set_strides(&t, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &t);
	return DT_OK;
}

int dt_shape_all_reduce(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	if (collective_input(c, -1, &t, NULL) != DT_OK)
		return DT_EINPUT;
	dt_tinfo_set_strides(&t, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* all_to_all_single(input, output_split_sizes, input_split_sizes,
 * group_name): dim 0 becomes the sum of the output splits (equal splits:
 * unchanged, and it must divide by the group size). */
int dt_shape_all_to_all(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	int64_t out_split[DT_MAX_RESULTS * 16], in_split[DT_MAX_RESULTS * 16];
	int nout, nin, cap = DT_MAX_RESULTS * 16;
	if (collective_input(c, -1, &t, NULL) != DT_OK ||
	    dt_shape_ints(c, 1, out_split, cap, &nout) != DT_OK ||
	    dt_shape_ints(c, 2, in_split, cap, &nin) != DT_OK)
		return DT_EINPUT;
	if (t.rank == 0)
		return dt_shape_fail(c, "input must have at least one dimension");
	int64_t group = group_size_of(c, 3);
	struct dt_dimbuf b;
	if (nin >= 0) {
		int64_t sum = 0;
		bool bad = false;
		for (int i = 0; i < nin; i++)
			bad = bad || in_split[i] < 0 ||
			      __builtin_add_overflow(sum, in_split[i], &sum);
		if (bad || sum != t.shape[0])
			return dt_shape_fail(c, "input_split_sizes %s do not add up to dim 0 of the input (%lld)",
					     dt_dims_format(&b, in_split, nin),
					     (long long)t.shape[0]);
		if (group > 0 && nin != group)
			return dt_shape_fail(c, "input_split_sizes has %d entries for a group of %lld",
					     nin, (long long)group);
	}
	if (nout >= 0) {
		if (group > 0 && nout != group)
			return dt_shape_fail(c, "output_split_sizes has %d entries for a group of %lld",
					     nout, (long long)group);
		int64_t sum = 0;
		for (int i = 0; i < nout; i++) {
			if (out_split[i] < 0)
				return dt_shape_fail(c, "output_split_sizes %s has a negative size",
						     dt_dims_format(&b, out_split, nout));
			if (__builtin_add_overflow(sum, out_split[i], &sum))
				return dt_shape_fail(c, "output_split_sizes add up to too much");
		}
		t.shape[0] = sum;
		if (dt_shape_check_sizes(c, t.shape, t.rank) != DT_OK)
			return DT_EINPUT;
	} else if (group > 0 && t.shape[0] % group != 0) {
		return dt_shape_fail(c, "dim 0 of size %lld is not divisible by the group size %lld",
				     (long long)t.shape[0], (long long)group);
	}
	dt_tinfo_set_strides(&t, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* wait_tensor(t) is t. */
int dt_shape_wait(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	dt_shape_emit(c, &t);
	return DT_OK;
}

/* In a global-view graph a redistribution keeps the logical tensor. */
int dt_shape_redistribute(struct dt_shape_ctx *c)
{
	return dt_shape_wait(c);
}
