// SPDX-License-Identifier: MIT
/* transfer.c: what an all_to_all_v moves between two ranks: the
 * intersection of the sender's src box with the receiver's dst box, when
 * the sender is the receiver's designated holder (semantics §3.1). Both
 * sides compute the same boxes, so no counts are exchanged. */
#include "internal.h"

#include <stdlib.h>

void dt_rt_transfer_boxes(const struct dt_collective_call *c, int64_t me,
			  bool sending, struct dt_rt_box *box)
{
	const struct dt_module *m = c->m;
	const struct dt_group *grp = &m->groups.data[c->group];
	const struct dt_mesh *mesh = &m->meshes.data[grp->mesh];
	const struct dt_spmd_args *a = &c->layout;
	int64_t n = c->group_size;
	int32_t *ranks = dt_calloc((size_t)n, sizeof *ranks);
	dt_group_ranks(mesh, grp->dims, grp->ndims, 0, ranks);
	int64_t mine[DT_MAX_MESH_DIMS], peer[DT_MAX_MESH_DIMS];
	dt_mesh_coords(mesh, dt_mesh_position(mesh, ranks[me]), mine);
	for (int64_t q = 0; q < n; q++) {
		struct dt_rt_box *b = &box[q];
		dt_mesh_coords(mesh, dt_mesh_position(mesh, ranks[q]), peer);
		const int64_t *from = sending ? mine : peer;
		const int64_t *to = sending ? peer : mine;
		b->any = true;
		for (int k = 0; k < mesh->ndim; k++)
			if (a->src.p[k].kind == DT_PL_REPLICATE &&
			    from[k] != to[k])
				b->any = false; /* not its designated holder */
		for (int d = 0; d < a->rank && b->any; d++) {
			int64_t s0, sn, d0, dn;
			dt_shard_interval(&a->src, mesh->shape, from, d,
					  a->shape[d], &s0, &sn);
			dt_shard_interval(&a->dst, mesh->shape, to, d,
					  a->shape[d], &d0, &dn);
			int64_t lo = s0 > d0 ? s0 : d0;
			int64_t hi = s0 + sn < d0 + dn ? s0 + sn : d0 + dn;
			b->from[d] = lo - s0;
			b->to[d] = lo - d0;
			b->len[d] = hi - lo;
			b->any = hi > lo;
		}
	}
	dt_free(ranks);
}
