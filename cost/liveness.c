// SPDX-License-Identifier: MIT
/* liveness.c: the per-rank memory a module's values need at once, as the
 * interpreter holds them: inputs and constants throughout, every
 * other result from its node to its last user (a view keeps its base
 * alive instead of holding bytes), the graph's outputs to the end. A
 * global-view value counts its largest shard under its <sharding>
 * (replicated without one); a local-view value its tensors as written.
 * `opt --report` prints it before and after the passes.
 *
 *   x = placeholder (64 B)   y = relu(x) (64 B)   z = view(y)   -> 128 B
 *
 * Time: O(nodes + args). */
#include "cost_model.h"

#include <string.h>

/* Per-rank bytes of node n's results. */
static double result_bytes(const struct dt_module *m, const struct dt_node *n)
{
	const struct dt_sharding *s = dt_node_sharding(m, n);
	double total = 0;
	for (int k = 0; k < n->ntensors; k++) {
		const struct dt_tensor *t = dt_node_tensor(m, n, k);
		int rank;
		const int64_t *shape = dt_ints_get(m, t->shape, &rank);
		double b = dt_dtype_size((enum dt_dtype)t->dtype);
		for (int d = 0; d < rank; d++) {
			int64_t len = shape[d];
			if (m->view == DT_VIEW_GLOBAL && s && k == 0 &&
			    s->placements.ndim ==
				m->meshes.data[s->mesh].ndim) {
				int64_t coord[DT_MAX_MESH_DIMS] = {0};
				/* Rank 0 holds the largest chunk. */
				len = dt_shard_length(
				    &s->placements,
				    m->meshes.data[s->mesh].shape, coord, d,
				    shape[d]);
			}
			b *= (double)len;
		}
		total += b;
	}
	return total;
}

struct walk {
	const struct dt_module *m;
	uint32_t *base, *end, pos;
};

static void extend(void *ud, uint32_t input)
{
	struct walk *w = ud;
	uint32_t b = w->base[input];
	if (w->pos > w->end[b])
		w->end[b] = w->pos;
}

double dt_memory_peak(const struct dt_module *m, uint32_t *at)
{
	uint32_t n = m->nodes.len;
	struct walk w = {.m = m};
	w.base = dt_calloc(3 * (size_t)n + 1, sizeof *w.base);
	w.end = w.base + n;
	uint32_t *start = w.end + n;
	uint32_t last = 0;
	dt_foreach_node(m, id)
	{
		const struct dt_node *node = dt_node_get(m, id);
		w.base[id] = id;
		if (node->nargs && dt_op_has(node->op, DT_OPF_VIEW) &&
		    dt_node_arg(m, node, 0)->kind == DT_ARG_NODE)
			w.base[id] = w.base[dt_node_arg(m, node, 0)->v.node];
		bool input = node->kind == DT_NODE_PLACEHOLDER ||
			     node->kind == DT_NODE_CONSTANT;
		start[id] = input ? 0 : w.pos;
		w.end[id] = input ? UINT32_MAX : w.pos;
		if (node->kind == DT_NODE_OUTPUT)
			w.pos = UINT32_MAX; /* outputs live to the end */
		dt_node_for_each_input(m, node, extend, &w);
		if (node->kind != DT_NODE_OUTPUT)
			last = w.pos++;
	}
	double *delta = dt_calloc(2 * ((size_t)last + 2), sizeof *delta);
	double *freed = delta + last + 2;
	dt_foreach_node(m, id)
	{
		const struct dt_node *node = dt_node_get(m, id);
		if (w.base[id] != id || node->kind == DT_NODE_OUTPUT)
			continue;
		double b = result_bytes(m, node);
		delta[start[id]] += b;
		if (w.end[id] <= last)
			freed[w.end[id]] += b;
	}
	double live = 0, peak = 0;
	uint32_t when = 0;
	for (uint32_t p = 0; p <= last; p++) {
		live += delta[p];
		if (live > peak) {
			peak = live;
			when = p;
		}
		live -= freed[p];
	}
	*at = 0;
	uint32_t p = 0;
	dt_foreach_node(m, id)
	{
		if (dt_node_get(m, id)->kind == DT_NODE_OUTPUT)
			continue;
		if (p++ == when)
			*at = id;
	}
	dt_free(delta);
	dt_free(w.base);
	return peak;
}
