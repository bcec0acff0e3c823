// SPDX-License-Identifier: MIT
/* views.c: view steps and identity view chains. */
#include "views.h"

uint32_t dt_view_step_input(const struct dt_module *m, const struct dt_node *n)
{
	return dt_node_arg(m, n, 0)->v.node;
}

/* reshape and _unsafe_view alias their input exactly when the stride rule
 * can express the new shape over the input's strides. */
static bool reshape_is_view(const struct dt_module *m, const struct dt_node *n,
			    const struct dt_node *in)
{
	const struct dt_tensor *src = dt_node_tensor(m, in, 0);
	const struct dt_tensor *dst = dt_node_tensor(m, n, 0);
	int in_rank, in_nstride, rank, nstride;
	const int64_t *in_shape = dt_ints_get(m, src->shape, &in_rank);
	const int64_t *in_stride = dt_ints_get(m, src->stride, &in_nstride);
	const int64_t *shape = dt_ints_get(m, dst->shape, &rank);
	const int64_t *stride = dt_ints_get(m, dst->stride, &nstride);
	int64_t view[DT_MAX_RANK];
	if (!dt_view_strides(in_shape, in_stride, in_rank, shape, rank, view))
		return false;
	for (int i = 0; i < rank; i++)
		if (shape[i] != 1 && view[i] != stride[i])
			return false;
	return dst->offset == src->offset;
}

bool dt_reshape_is_view(const struct dt_module *m, const struct dt_node *n)
{
	if (n->ntensors != 1 || n->nargs == 0 ||
	    dt_node_arg(m, n, 0)->kind != DT_ARG_NODE)
		return false;
	const struct dt_node *in = dt_node_get(m, dt_view_step_input(m, n));
	return in->ntensors == 1 && reshape_is_view(m, n, in);
}

bool dt_is_view_step(const struct dt_module *m, const struct dt_node *n)
{
	if (n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN ||
	    n->ntensors != 1 || n->nargs == 0 ||
	    dt_node_arg(m, n, 0)->kind != DT_ARG_NODE)
		return false;
	const struct dt_node *in = dt_node_get(m, dt_view_step_input(m, n));
	if (in->ntensors != 1)
		return false;
	uint32_t flags = dt_op_get(n->op)->flags;
	if (flags & DT_OPF_MULTI)
		return false;
	if (flags & DT_OPF_VIEW)
		return true;
	if (n->op == DT_OP_RESHAPE || n->op == DT_OP_UNSAFE_VIEW)
		return reshape_is_view(m, n, in);
	return false;
}

bool dt_tensor_same(const struct dt_tensor *a, const struct dt_tensor *b)
{
	/* Shapes and strides are interned: equal lists have equal ids. */
	return a->dtype == b->dtype && a->shape.id == b->shape.id &&
	       a->stride.id == b->stride.id && a->offset == b->offset;
}
