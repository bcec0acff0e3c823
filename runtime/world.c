// SPDX-License-Identifier: MIT
/* world.c: what every multi-rank backend checks before creating its
 * communicators: that the ranks' graphs agree on meshes and groups, and
 * the world size the graph needs. */
#include "internal.h"

static uint64_t fnv(uint64_t h, int64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (uint64_t)(v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A hash of what communicator creation depends on: mesh shapes and device
 * lists, group meshes and ordered dims (not names). */
uint64_t dt_topology_fingerprint(const struct dt_module *m)
{
	uint64_t h = fnv(0xcbf29ce484222325ull, m->meshes.len);
	for (uint32_t i = 0; i < m->meshes.len; i++) {
		const struct dt_mesh *mesh = &m->meshes.data[i];
		h = fnv(h, mesh->ndim);
		for (int k = 0; k < mesh->ndim; k++)
			h = fnv(h, mesh->shape[k]);
		for (int64_t k = 0; k < mesh->size; k++)
			h = fnv(h, dt_mesh_device(mesh, k));
	}
	h = fnv(h, m->groups.len);
	for (uint32_t i = 0; i < m->groups.len; i++) {
		const struct dt_group *g = &m->groups.data[i];
		h = fnv(h, g->mesh);
		for (int k = 0; k < g->ndims; k++)
			h = fnv(h, g->dims[k]);
		h = fnv(h, -1);
	}
	return h;
}

/* The world size the module needs: one more than the largest global rank
 * any mesh names (its `devices`, else 0..size-1), so with one mesh and no
 * device list exactly the mesh size. Several meshes (e.g. sub-meshes of a
 * pipeline stage) share the world; a rank outside a mesh simply has no
 * communicator for that mesh's groups. *which is the mesh that sets it;
 * 0 and NULL when there is no mesh. */
int64_t dt_required_world(const struct dt_module *m,
			  const struct dt_mesh **which)
{
	int64_t need = 0;
	*which = NULL;
	for (uint32_t i = 0; i < m->meshes.len; i++) {
		const struct dt_mesh *mesh = &m->meshes.data[i];
		for (int64_t k = 0; k < mesh->size; k++)
			if (dt_mesh_device(mesh, k) + 1 > need) {
				need = dt_mesh_device(mesh, k) + 1;
				*which = mesh;
			}
	}
	return need;
}
