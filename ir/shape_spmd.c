// SPDX-License-Identifier: MIT
/* shape_spmd.c: the ops of SPMD local-view programs (semantics §7), whose
 * results depend on the running rank's mesh coordinate: their attributes
 * and shape functions. */
#include "shape.h"

#include <stdio.h>
#include <string.h>

static bool fail(char *err, size_t n, const char *fmt, const char *a,
		 const char *b)
{
	snprintf(err, n, fmt, a, b);
	return false;
}

/* Placements text parameter p (order parameter q) into *pl. */
static bool read_placements(const struct dt_module *m,
			    const struct dt_bound_args *b, int p, int q,
			    const struct dt_mesh *me, struct dt_placements *pl,
			    int rank, char *err, size_t n)
{
	const struct dt_arg *a = b->arg[p], *o = b->arg[q];
	const char *order = o && o->kind == DT_ARG_STR ? dt_str_get(m, o->v.s)
						       : NULL;
	char why[300];
	if (!a || a->kind != DT_ARG_STR ||
	    !dt_placements_parse(pl, dt_str_get(m, a->v.s), order, me,
				 &m->strings, why, sizeof why) ||
	    !dt_placements_validate(pl, rank, why, sizeof why))
		return fail(err, n, "bad %s placements: %s", p == 2 ? "src" : "dst",
			    a && a->kind == DT_ARG_STR ? why : "missing");
	return true;
}

bool dt_local_shard_read(const struct dt_module *m,
			 const struct dt_bound_args *b, struct dt_local_shard *ls,
			 char *err, size_t errlen)
{
	const struct dt_arg *mesh = b->arg[1], *size = b->arg[4];
	ls->mesh = mesh && mesh->kind == DT_ARG_STR
			   ? dt_module_find_mesh(m, mesh->v.s) : -1;
	if (ls->mesh < 0)
		return fail(err, errlen, "mesh '%s' is not declared%s",
			    mesh && mesh->kind == DT_ARG_STR
				    ? dt_str_get(m, mesh->v.s) : "",
			    " (the op reads the rank's coordinate in it)");
	if (!size || size->kind != DT_ARG_INTS || size->len > DT_MAX_RANK)
		return fail(err, errlen, "%s%s", "size must list the global "
			    "shape", "");
	const int64_t *g = dt_ints_get(m, size->v.ints, &ls->rank);
	for (int d = 0; d < ls->rank; d++) {
		if (g[d] < 0)
			return fail(err, errlen, "%s%s", "size has a negative "
				    "entry", "");
		ls->shape[d] = g[d];
	}
	const struct dt_mesh *me = &m->meshes.data[ls->mesh];
	if (!read_placements(m, b, 2, 5, me, &ls->src, ls->rank, err, errlen) ||
	    !read_placements(m, b, 3, 6, me, &ls->dst, ls->rank, err, errlen))
		return false;
	if (!dt_placements_refine(&ls->src, &ls->dst, ls->rank)) {
		char a[160], c[160];
		dt_placements_print(&ls->src, a, sizeof a);
		dt_placements_print(&ls->dst, c, sizeof c);
		snprintf(err, errlen, "dst %s does not refine src %s (each mesh "
			 "dim keeps its placement or goes from R to S(d), "
			 "appended to its tensor dim's shard order)", c, a);
		return false;
	}
	return true;
}

/* dt.local_shard(self, mesh, src, dst, size, src_order, dst_order): self
 * is the rank's shard under src, the result its shard under dst; in an
 * SPMD graph both padded to the largest shard (semantics §7), in a
 * per-rank graph exact. A fresh contiguous tensor. */
int dt_shape_local_shard(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	struct dt_local_shard ls;
	char err[500];
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (!dt_local_shard_read(c->m, &c->args, &ls, err, sizeof err))
		return dt_shape_fail(c, "%s", err);
	const struct dt_mesh *me = &c->m->meshes.data[ls.mesh];
	int64_t pos = -1, in[DT_MAX_RANK];
	if (c->m->rank >= 0 && (pos = dt_mesh_position(me, c->m->rank)) < 0)
		return dt_shape_fail(c, "rank %d is not in mesh '%s'",
				     c->m->rank, dt_str_get(c->m, me->name));
	struct dt_dimbuf b1, b2;
	dt_shard_shape(me, &ls.src, pos, ls.shape, ls.rank, in);
	if (t.rank != ls.rank ||
	    memcmp(t.shape, in, (size_t)t.rank * sizeof *in) != 0)
		return dt_shape_fail(c, "self has shape %s, but the local shard "
				     "of size %s under src is %s",
				     dt_dims_format(&b1, t.shape, t.rank),
				     dt_dims_format(&b2, ls.shape, ls.rank),
				     dt_dims_format(&(struct dt_dimbuf){0}, in,
						    ls.rank));
	dt_shard_shape(me, &ls.dst, pos, ls.shape, ls.rank, t.shape);
	t.offset = 0;
	dt_tinfo_set_strides(&t, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &t);
	return DT_OK;
}
