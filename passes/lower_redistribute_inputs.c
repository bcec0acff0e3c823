// SPDX-License-Identifier: MIT
/* lower_redistribute_inputs.c: the `lower-redistribute` pass's graph
 * inputs (lower_redistribute.c runs the pass): placeholders get their
 * shard's local shape and strides; constants are lowered as placeholders,
 * a sharded one keeping this rank's slice of its data, and those whose
 * data cannot be sliced (Partial pins; sharded ones in SPMD lowering)
 * become a replicated constant and a dtensor.redistribute to the pin. */
#include "lower_redistribute_internal.h"

#include <string.h>

/* Strides of `shape` laid out in the order the global strides give (the
 * contiguous strides for a contiguous global tensor). */
static void local_strides(const int64_t *gshape, const int64_t *gstride,
			  const int64_t *shape, int rank, int64_t *stride)
{
	int64_t want[DT_MAX_RANK];
	dt_contiguous_strides(gshape, rank, want);
	if (memcmp(want, gstride, (size_t)rank * sizeof *want) == 0) {
		dt_contiguous_strides(shape, rank, stride);
		return;
	}
	int order[DT_MAX_RANK]; /* dims, outermost (largest stride) first */
	for (int d = 0; d < rank; d++) {
		int at = d;
		while (at > 0 && gstride[order[at - 1]] < gstride[d]) {
			order[at] = order[at - 1];
			at--;
		}
		order[at] = d;
	}
	int64_t s = 1;
	for (int i = rank - 1; i >= 0; i--) {
		stride[order[i]] = s;
		s *= shape[order[i]] > 1 ? shape[order[i]] : 1;
	}
}

int dt_lower_placeholder(struct dt_lower *l, uint32_t id)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	const struct dt_sharding sh = *dt_node_sharding(m, n);
	struct dt_tensor t = *dt_node_tensor(m, n, 0);
	int rank;
	int64_t g[DT_MAX_RANK], gs[DT_MAX_RANK], shape[DT_MAX_RANK];
	int64_t stride[DT_MAX_RANK], coord[DT_MAX_MESH_DIMS];
	const int64_t *gp = dt_ints_get(m, t.shape, &rank);
	memcpy(g, gp, (size_t)rank * sizeof *g);
	memcpy(gs, dt_ints_get(m, t.stride, NULL), (size_t)rank * sizeof *gs);
	if (!dt_lower_coords(l, n, sh.mesh, coord))
		return DT_EINPUT;
	dt_lower_local_shape(l, sh.mesh, &sh.placements, g, rank, shape);
	local_strides(g, gs, shape, rank, stride);
	t.shape = dt_ints_intern(m, shape, (size_t)rank);
	t.stride = dt_ints_intern(m, stride, (size_t)rank);
	t.offset = 0;
	dt_node_set_tensors(m, id, &t, 1);
	uint32_t s = dt_lower_add_sharding(l, sh.mesh, &sh.placements, g, rank);
	dt_node_get(m, id)->sharding = s;
	l->shard[id] = s;
	return DT_OK;
}

static bool has_partial(const struct dt_placements *pl)
{
	for (int k = 0; k < pl->ndim; k++)
		if (pl->p[k].kind == DT_PL_PARTIAL)
			return true;
	return false;
}

/* The rank's slice of constant `id`'s data (global tensor g), for its
 * lowered local tensor and sharding. */
static void slice_constant(struct dt_lower *l, uint32_t id,
			   const struct dt_tensor *g, const int64_t *coord)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	const struct dt_sharding *sh = dt_node_sharding(m, n);
	const int64_t *mesh_shape = m->meshes.data[sh->mesh].shape;
	int rank;
	const int64_t *gshape = dt_ints_get(m, g->shape, &rank);
	int64_t gstride[DT_MAX_RANK], at[DT_MAX_RANK] = {0}, nidx;
	int64_t *idx[DT_MAX_RANK];
	dt_contiguous_strides(gshape, rank, gstride);
	const int64_t *local = dt_ints_get(m, dt_node_tensor(m, n, 0)->shape,
					   NULL);
	for (int d = 0; d < rank; d++) {
		idx[d] = dt_arena_alloc(l->ctx->scratch,
					(size_t)(gshape[d] + 1) * sizeof **idx);
		dt_shard_indices(&sh->placements, mesh_shape, coord, d,
				 gshape[d], idx[d], &nidx);
		DT_REQUIRE(nidx == local[d]);
	}
	size_t esize = (size_t)dt_dtype_size((enum dt_dtype)g->dtype);
	int64_t count = dt_numel(local, rank);
	const unsigned char *src = dt_node_constant(m, n)->bytes;
	unsigned char *dst;
	uint32_t c = dt_module_new_constant(m, (uint64_t)count * esize, &dst);
	for (int64_t e = 0; e < count; e++) {
		int64_t from = 0;
		for (int d = 0; d < rank; d++)
			from += idx[d][at[d]] * gstride[d];
		memcpy(dst + (size_t)e * esize, src + (size_t)from * esize, esize);
		for (int d = rank - 1; d >= 0 && ++at[d] == local[d]; d--)
			at[d] = 0;
	}
	dt_node_get(m, id)->constant = c;
}

/* A constant is lowered as a placeholder (one without a pin is replicated
 * on the first mesh); a sharded one keeps this rank's slice of its data
 * (only --rank R gets here, without Partial placements:
 * dt_lower_split_constants took the others). */
int dt_lower_constant(struct dt_lower *l, uint32_t id)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	if (!dt_node_sharding(m, n)) {
		if (!m->meshes.len) {
			dt_node_error(l->ctx->diag, m, n,
				      "cannot lower constant '%s': the graph "
				      "declares no mesh", dt_node_name(m, id));
			return DT_EINPUT;
		}
		struct dt_sharding r = {.placements.ndim =
						m->meshes.data[0].ndim};
		dt_placements_default_order(&r.placements);
		uint32_t s = dt_vec_push(&m->shardings, r);
		dt_node_get(m, id)->sharding = s;
	}
	const struct dt_sharding *sh = dt_node_sharding(m, dt_node_get(m, id));
	bool whole =
	    dt_lower_replicated(&m->meshes.data[sh->mesh], &sh->placements);
	bool partial = has_partial(&sh->placements);
	int mesh = sh->mesh;
	struct dt_tensor g = *dt_node_tensor(m, n, 0);
	int64_t coord[DT_MAX_MESH_DIMS];
	int rc = dt_lower_placeholder(l, id);
	if (rc != DT_OK || whole)
		return rc;
	DT_REQUIRE(l->rank >= 0 && !partial);
	if (!dt_lower_coords(l, dt_node_get(m, id), mesh, coord))
		return DT_EINPUT;
	slice_constant(l, id, &g, coord);
	return DT_OK;
}

/* Each constant pinned to a Partial placement (and in SPMD lowering, each
 * sharded one) becomes its replicated self and a dtensor.redistribute to
 * its pin, lowered like any other (a partition step, or a chunk per
 * sharded mesh dim): data given whole cannot be split into parts by
 * slicing. Runs before the pass numbers the old nodes. */
void dt_lower_split_constants(struct dt_module *m, int rank)
{
	dt_str target = dt_str_intern(m, dt_op_get(DT_OP_REDISTRIBUTE)->target);
	dt_foreach_node(m, id) {
		const struct dt_node *n = dt_node_get(m, id);
		const struct dt_sharding *sh = dt_node_sharding(m, n);
		if (n->kind != DT_NODE_CONSTANT || !sh ||
		    dt_lower_replicated(&m->meshes.data[sh->mesh],
					&sh->placements) ||
		    (rank >= 0 && !has_partial(&sh->placements)))
			continue;
		struct dt_sharding pin = *sh, whole = {.mesh = sh->mesh};
		whole.placements.ndim = sh->placements.ndim;
		dt_placements_default_order(&whole.placements);
		struct dt_tensor t = *dt_node_tensor(m, n, 0);
		char name[300];
		snprintf(name, sizeof name, "%.256s.redistribute",
			 dt_node_name(m, id));
		for (int k = 2; dt_module_find_node(m, dt_str_intern(m, name)); k++)
			snprintf(name, sizeof name, "%.256s.redistribute_%d",
				 dt_node_name(m, id), k);
		struct dt_arg in = {.kind = DT_ARG_NODE, .v.node = id};
		uint32_t r = dt_module_add_node(m, &(struct dt_node_init){
			.kind = DT_NODE_CALL, .name = dt_str_intern(m, name),
			.target = target, .line = dt_node_get(m, id)->line,
			.args = &in, .nargs = 1, .tensors = &t, .ntensors = 1,
			.sharding = &pin});
		uint32_t next = dt_node_get(m, id)->next;
		if (next)
			dt_graph_insert_before(m, r, next);
		else
			dt_graph_append(m, r);
		dt_module_replace_uses(m, id, r);
		m->args.data[dt_node_get(m, r)->args].v.node = id;
		dt_node_get(m, id)->sharding = dt_vec_push(&m->shardings, whole);
	}
}
