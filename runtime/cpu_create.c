// SPDX-License-Identifier: MIT
/* cpu_create.c: tensor factories: full/zeros/ones and their *_like and
 * new_* forms, empty* (zero-filled, so runs are deterministic),
 * scalar_tensor and arange. */
#include "internal.h"

#include <math.h>

/* arange: start + i * step in double (int64 results on the truncated
 * numbers, as ATen computes them). */
static int arange(struct dt_backend *b, const struct dt_kernel_call *c,
		  struct dt_rt_tensor *out)
{
	double start = 0, end = 0, step = 1;
	if (c->op == DT_OP_ARANGE) {
		dt_cpu_number(c, 0, &end);
	} else {
		dt_cpu_number(c, 0, &start);
		dt_cpu_number(c, 1, &end);
		if (c->op == DT_OP_ARANGE_START_STEP)
			dt_cpu_number(c, 2, &step);
	}
	if (!dt_dtype_is_float((enum dt_dtype)out->dtype)) {
		start = trunc(start);
		step = trunc(step);
	}
	int64_t n = dt_rt_numel(out);
	double *v = dt_cpu_scratch(b, c, n);
	if (!v)
		return DT_ERUNTIME;
	for (int64_t i = 0; i < n; i++)
		v[i] = start + (double)i * step;
	dt_cpu_write(out, v);
	dt_cpu_release(b, v);
	return DT_OK;
}

int dt_cpu_create(struct dt_backend *b, const struct dt_kernel_call *c)
{
	struct dt_rt_tensor *out = &c->outputs[0];
	double v = 0;
	switch (c->op) {
	case DT_OP_EMPTY_LIKE: case DT_OP_EMPTY: case DT_OP_EMPTY_STRIDED:
	case DT_OP_NEW_EMPTY: case DT_OP_ZEROS_LIKE: case DT_OP_ZEROS:
	case DT_OP_NEW_ZEROS:
		break;
	case DT_OP_ONES_LIKE: case DT_OP_ONES: case DT_OP_NEW_ONES:
		v = 1;
		break;
	case DT_OP_FULL_LIKE: case DT_OP_FULL:
		dt_cpu_number(c, 1, &v);
		break;
	case DT_OP_NEW_FULL:
		dt_cpu_number(c, 2, &v);
		break;
	case DT_OP_SCALAR_TENSOR:
		dt_cpu_number(c, 0, &v);
		break;
	case DT_OP_ARANGE: case DT_OP_ARANGE_START: case DT_OP_ARANGE_START_STEP:
		return arange(b, c, out);
	default:
		dt_die(__FILE__, __LINE__, "no creation kernel for %s",
		       dt_op_get(c->op)->target);
	}
	dt_cpu_fill(out, v);
	return DT_OK;
}
