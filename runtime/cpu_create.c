// SPDX-License-Identifier: MIT
/* cpu_create.c: tensor factories: full/zeros/ones and their *_like and
 * new_* forms, empty* (zero-filled, so runs are deterministic),
 * scalar_tensor and arange. */
#include "internal.h"

#include <math.h>

bool dt_cpu_factory(const struct dt_kernel_call *c, double *value,
		    double *start, double *step)
{
	double end = 0;
	*value = *start = 0;
	*step = 1;
	switch (c->op) {
	case DT_OP_EMPTY_LIKE: case DT_OP_EMPTY: case DT_OP_EMPTY_STRIDED:
	case DT_OP_NEW_EMPTY: case DT_OP_ZEROS_LIKE: case DT_OP_ZEROS:
	case DT_OP_NEW_ZEROS:
		return false;
	case DT_OP_ONES_LIKE: case DT_OP_ONES: case DT_OP_NEW_ONES:
		*value = 1;
		return false;
	case DT_OP_FULL_LIKE: case DT_OP_FULL:
		dt_cpu_number(c, 1, value);
		return false;
	case DT_OP_NEW_FULL:
		dt_cpu_number(c, 2, value);
		return false;
	case DT_OP_SCALAR_TENSOR:
		dt_cpu_number(c, 0, value);
		return false;
	case DT_OP_ARANGE:
		dt_cpu_number(c, 0, &end);
		break;
	case DT_OP_ARANGE_START: case DT_OP_ARANGE_START_STEP:
		dt_cpu_number(c, 0, start);
		dt_cpu_number(c, 1, &end);
		if (c->op == DT_OP_ARANGE_START_STEP)
			dt_cpu_number(c, 2, step);
		break;
	default:
		dt_die(__FILE__, __LINE__, "no creation kernel for %s",
		       dt_op_get(c->op)->target);
	}
	if (!dt_dtype_is_float((enum dt_dtype)c->outputs[0].dtype)) {
		*start = trunc(*start);
		*step = trunc(*step);
	}
	return true;
}

int dt_cpu_create(struct dt_backend *b, const struct dt_kernel_call *c)
{
	struct dt_rt_tensor *out = &c->outputs[0];
	double v, start, step;
	if (!dt_cpu_factory(c, &v, &start, &step)) {
		dt_cpu_fill(out, v);
		return DT_OK;
	}
	int64_t n = dt_rt_numel(out);
	double *x = dt_cpu_scratch(b, c, n);
	if (!x)
		return DT_ERUNTIME;
	for (int64_t i = 0; i < n; i++)
		x[i] = start + (double)i * step;
	dt_cpu_write(out, x);
	dt_cpu_release(b, x);
	return DT_OK;
}
