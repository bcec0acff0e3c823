// SPDX-License-Identifier: MIT
/* shape_infer.c: the `shape-infer` pass computes the dtype, shape, stride
 * and offset of every value from its target (ir/shape_*.c), fills them where
 * the graph has none and reports every value where the graph disagrees,
 * showing both. Nodes of unknown targets are rejected here: this pass needs
 * every op's semantics.
 *
 * Requires: VERIFIED. Establishes: SHAPES. Preserves: VERIFIED. O(nodes).
 *
 *   mm_1 = aten.mm.default(a, b)          mm_1: "f32[4, 16]{16, 1}" = ...
 *   (no <tensor>)                    →    (filled in)
 */
#include "passes.h"
#include "views.h"

#include <string.h>

/* Size-1 dims may carry any stride (PyTorch does not normalise them), so
 * compare strides only where the size exceeds 1. */
static bool tensor_equivalent(const struct dt_module *m,
			      const struct dt_tensor *a,
			      const struct dt_tensor *b)
{
	if (dt_tensor_same(a, b))
		return true;
	if (a->dtype != b->dtype || a->shape.id != b->shape.id)
		return false;
	int rank;
	const int64_t *shape = dt_ints_get(m, a->shape, &rank);
	const int64_t *sa = dt_ints_get(m, a->stride, NULL);
	const int64_t *sb = dt_ints_get(m, b->stride, NULL);
	if (dt_numel(shape, rank) == 0)
		return true;
	for (int i = 0; i < rank; i++)
		if (shape[i] > 1 && sa[i] != sb[i])
			return false;
	return a->offset == b->offset;
}

static int run_shape_infer(struct dt_pass_ctx *ctx)
{
	struct dt_module *m = ctx->m;
	int rc = DT_OK;
	dt_foreach_node(m, id)
	{
		struct dt_shape_ctx c;
		if (dt_infer_node(m, id, ctx->diag, &c) != DT_OK) {
			rc = DT_EINPUT;
			continue;
		}
		const struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_CALL)
			continue;
		if (n->ntensors == 0) {
			dt_node_set_tensors(m, id, c.out, c.nout);
			continue;
		}
		if (n->ntensors != c.nout) {
			dt_node_error(ctx->diag, m, n,
				      "node '%s': the graph gives %u results but %s has %u",
				      dt_str_get(m, n->name), n->ntensors,
				      dt_str_get(m, n->target), c.nout);
			rc = DT_EINPUT;
			continue;
		}
		for (uint32_t i = 0; i < c.nout; i++) {
			const struct dt_tensor *have = dt_node_tensor(m, n, (int)i);
			if (tensor_equivalent(m, have, &c.out[i]))
				continue;
			char a[256], b[256];
			dt_tensor_print(m, have, a, sizeof(a));
			dt_tensor_print(m, &c.out[i], b, sizeof(b));
			dt_node_error(ctx->diag, m, n,
				      "node '%s': the graph says %s but %s gives %s%s",
				      dt_str_get(m, n->name), a,
				      dt_str_get(m, n->target), b,
				      c.nout > 1 ? " (a result differs)" : "");
			rc = DT_EINPUT;
			break;
		}
	}
	return rc;
}

const struct dt_pass dt_pass_shape_infer = {
	.name = "shape-infer",
	.help = "compute and check dtype, shape and stride of every value",
	.requires = DT_PROP_VERIFIED,
	.establishes = DT_PROP_SHAPES,
	.preserves = DT_PROP_VERIFIED,
	.run = run_shape_infer,
};
