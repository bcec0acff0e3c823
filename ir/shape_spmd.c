// SPDX-License-Identifier: MIT
/* shape_spmd.c: the ops of SPMD local-view programs (semantics §7), whose
 * results depend on the running rank's mesh coordinate: their attributes
 * and their shape function. */
#include "shape.h"

#include <stdio.h>
#include <string.h>

/* Placements text parameter p with order parameter q into *pl. */
static bool read_placements(const struct dt_module *m,
			    const struct dt_bound_args *b, int p, int q,
			    const struct dt_mesh *me, struct dt_placements *pl,
			    int rank, char *err, size_t n)
{
	const struct dt_arg *a = b->arg[p], *o = b->arg[q];
	const char *order = o && o->kind == DT_ARG_STR ? dt_str_get(m, o->v.s)
						       : NULL;
	char why[300] = "missing";
	if (a && a->kind == DT_ARG_STR &&
	    dt_placements_parse(pl, dt_str_get(m, a->v.s), order, me,
				&m->strings, why, sizeof why) &&
	    dt_placements_validate(pl, rank, why, sizeof why))
		return true;
	snprintf(err, n, "bad placements '%s': %s",
		 a && a->kind == DT_ARG_STR ? dt_str_get(m, a->v.s) : "", why);
	return false;
}

/* Position i's elements of tensor dim d under pl (the member at global
 * rank `rank`) into out; their count. */
static int64_t member_indices(const struct dt_mesh *me,
			      const struct dt_placements *pl, int32_t rank,
			      const struct dt_spmd_args *a, int d, int64_t *out)
{
	int64_t coord[DT_MAX_MESH_DIMS], n = 0;
	dt_mesh_coords(me, dt_mesh_position(me, rank), coord);
	dt_shard_indices(pl, me->shape, coord, d, a->shape[d], out, &n);
	return n;
}

/* The declared group of mesh a->mesh bound to parameter p, or NULL with
 * a message. */
static const struct dt_group *read_group(const struct dt_module *m,
					 const struct dt_bound_args *b, int p,
					 const struct dt_spmd_args *a,
					 char *err, size_t n)
{
	const struct dt_arg *g = b->arg[p];
	int gi = g && g->kind == DT_ARG_STR ? dt_module_find_group(m, g->v.s)
					    : -1;
	const char *gname = g && g->kind == DT_ARG_STR ? dt_str_get(m, g->v.s)
						       : "";
	if (gi < 0) {
		snprintf(err, n, "group '%s' is not declared", gname);
		return NULL;
	}
	const struct dt_group *grp = &m->groups.data[gi];
	if (grp->mesh != a->mesh) {
		snprintf(err, n, "group '%s' is over mesh '%s', not '%s'", gname,
			 dt_str_get(m, m->meshes.data[grp->mesh].name),
			 dt_str_get(m, m->meshes.data[a->mesh].name));
		return NULL;
	}
	return grp;
}

/* Whether pl holds P (either op moves shards, not partial values). */
static bool no_partial(const struct dt_placements *pl, const char *op,
		       char *err, size_t n)
{
	for (int k = 0; k < pl->ndim; k++)
		if (pl->p[k].kind == DT_PL_PARTIAL) {
			snprintf(err, n, "%s moves shards, not partial values "
				 "(src and dst may not hold P)", op);
			return false;
		}
	return true;
}

/* dt.all_to_all_v: S and R only (each rank's shard a box), its group
 * (parameter 5) over every mesh dim. */
static bool check_transfer(const struct dt_module *m,
			   const struct dt_bound_args *b,
			   const struct dt_spmd_args *a, char *err, size_t n)
{
	const char *op = "all_to_all_v";
	if (!no_partial(&a->src, op, err, n) || !no_partial(&a->dst, op, err, n))
		return false;
	for (int k = 0; k < a->src.ndim; k++)
		if (a->src.p[k].kind == DT_PL_STRIDED_SHARD ||
		    a->dst.p[k].kind == DT_PL_STRIDED_SHARD) {
			snprintf(err, n, "all_to_all_v moves S and R shards, "
				 "not _S");
			return false;
		}
	const struct dt_group *grp = read_group(m, b, 5, a, err, n);
	const struct dt_mesh *me = &m->meshes.data[a->mesh];
	if (grp && dt_group_size(me, grp->dims, grp->ndims) != me->size) {
		snprintf(err, n, "group '%s' must span every dim of mesh '%s' "
			 "(all_to_all_v moves between any ranks)",
			 dt_str_get(m, grp->name), dt_str_get(m, me->name));
		return false;
	}
	return grp != NULL;
}

/* dt.all_permute's perm (parameter 5) and group (6): a permutation of the
 * group's positions under which every member sends its src block to a
 * member whose dst block it is, in every instance of the group. */
static bool check_permutation(const struct dt_module *m,
			      const struct dt_bound_args *b,
			      const struct dt_spmd_args *a, char *err,
			      size_t n)
{
	if (!no_partial(&a->src, "all_permute", err, n) ||
	    !no_partial(&a->dst, "all_permute", err, n))
		return false;
	const struct dt_group *grp = read_group(m, b, 6, a, err, n);
	if (!grp)
		return false;
	const struct dt_arg *pa = b->arg[5];
	const char *gname = dt_str_get(m, grp->name);
	const struct dt_mesh *me = &m->meshes.data[a->mesh];
	int64_t size = dt_group_size(me, grp->dims, grp->ndims);
	int len = 0;
	const int64_t *perm = pa && pa->kind == DT_ARG_INTS
				      ? dt_ints_get(m, pa->v.ints, &len) : NULL;
	if (!perm || len != size) {
		snprintf(err, n, "perm has %d entries but group '%s' has %lld "
			 "ranks (one destination per position)", len, gname,
			 (long long)size);
		return false;
	}
	int64_t *from = dt_calloc((size_t)size, sizeof *from);
	bool ok = true;
	for (int64_t i = 0; i < size; i++)
		from[i] = -1;
	for (int64_t i = 0; i < size && ok; i++) {
		if (perm[i] < 0 || perm[i] >= size) {
			snprintf(err, n, "perm[%lld] = %lld is outside group '%s' "
				 "(positions 0 to %lld)", (long long)i,
				 (long long)perm[i], gname,
				 (long long)(size - 1));
			ok = false;
		} else if (from[perm[i]] >= 0) {
			snprintf(err, n, "perm sends positions %lld and %lld both "
				 "to %lld: not a permutation (every position "
				 "receives exactly one shard)",
				 (long long)from[perm[i]], (long long)i,
				 (long long)perm[i]);
			ok = false;
		} else {
			from[perm[i]] = i;
		}
	}
	/* the blocks: every instance, member, tensor dim */
	int64_t count = dt_group_instance_count(me, grp->dims, grp->ndims);
	int32_t *ranks = dt_calloc((size_t)size, sizeof *ranks);
	int64_t longest = 1;
	for (int d = 0; d < a->rank; d++)
		longest = a->shape[d] > longest ? a->shape[d] : longest;
	int64_t *is = dt_calloc((size_t)longest, sizeof *is);
	int64_t *id = dt_calloc((size_t)longest, sizeof *id);
	for (int64_t inst = 0; inst < count && ok; inst++) {
		dt_group_ranks(me, grp->dims, grp->ndims, inst, ranks);
		for (int64_t i = 0; i < size && ok; i++)
			for (int d = 0; d < a->rank && ok; d++) {
				int64_t ns = member_indices(me, &a->src, ranks[i],
							    a, d, is);
				int64_t nd = member_indices(
				    me, &a->dst, ranks[perm[i]], a, d, id);
				if (ns == nd && !memcmp(is, id, (size_t)ns *
							sizeof *is))
					continue;
				snprintf(err, n, "perm sends position %lld's "
					 "shard (rank %d) to position %lld "
					 "(rank %d), whose shard under dst "
					 "holds other elements: %lld of dim "
					 "%d from index %lld, not %lld from "
					 "%lld", (long long)i, ranks[i],
					 (long long)perm[i], ranks[perm[i]],
					 (long long)nd, d,
					 (long long)(nd ? id[0] : 0),
					 (long long)ns,
					 (long long)(ns ? is[0] : 0));
				ok = false;
			}
	}
	dt_free(is);
	dt_free(id);
	dt_free(ranks);
	dt_free(from);
	return ok;
}

bool dt_spmd_args_read(const struct dt_module *m, enum dt_op op,
		       const struct dt_bound_args *b, struct dt_spmd_args *a,
		       char *err, size_t errlen)
{
	bool pieces = op == DT_OP_PACK_PIECES || op == DT_OP_UNPACK_PIECES;
	const struct dt_arg *mesh = b->arg[1], *size = b->arg[pieces ? 3 : 4];
	a->mesh = mesh && mesh->kind == DT_ARG_STR
			  ? dt_module_find_mesh(m, mesh->v.s) : -1;
	if (a->mesh < 0) {
		snprintf(err, errlen, "mesh '%s' is not declared (the op reads "
			 "the rank's coordinate in it)",
			 mesh && mesh->kind == DT_ARG_STR
				 ? dt_str_get(m, mesh->v.s) : "");
		return false;
	}
	if (!size || size->kind != DT_ARG_INTS || size->len > DT_MAX_RANK) {
		snprintf(err, errlen, "size must list the global shape");
		return false;
	}
	const int64_t *g = dt_ints_get(m, size->v.ints, &a->rank);
	for (int d = 0; d < a->rank; d++)
		if ((a->shape[d] = g[d]) < 0) {
			snprintf(err, errlen, "size has a negative entry");
			return false;
		}
	const struct dt_mesh *me = &m->meshes.data[a->mesh];
	int orders = op == DT_OP_LOCAL_SHARD ? 5
		     : op == DT_OP_ALL_PERMUTE ? 7 : 6;
	a->pieces = 1;
	if (pieces) {
		if (!read_placements(m, b, 2, 6, me, &a->src, a->rank, err,
				     errlen))
			return false;
		a->dst = a->src;
		a->mesh_dim = -1;
		a->dim = b->arg[4] ? (int)b->arg[4]->v.i : -1;
		a->pieces = b->arg[5] ? b->arg[5]->v.i : 0;
		if (a->dim < 0 || a->dim >= a->rank)
			snprintf(err, errlen, "dim %d is not a dim of size",
				 a->dim);
		else if (a->pieces < 1)
			snprintf(err, errlen, "pieces %lld is not positive",
				 (long long)a->pieces);
		return a->dim >= 0 && a->dim < a->rank && a->pieces >= 1;
	}
	if (!read_placements(m, b, 2, orders, me, &a->src, a->rank, err, errlen) ||
	    !read_placements(m, b, 3, orders + 1, me, &a->dst, a->rank, err,
			     errlen))
		return false;
	char s[160], d[160];
	dt_placements_print(&a->src, s, sizeof s);
	dt_placements_print(&a->dst, d, sizeof d);
	a->dim = a->mesh_dim = -1;
	if (op == DT_OP_ALL_PERMUTE)
		return check_permutation(m, b, a, err, errlen);
	if (op == DT_OP_ALL_TO_ALL_V)
		return check_transfer(m, b, a, err, errlen);
	if (op == DT_OP_LOCAL_SHARD) {
		if (dt_placements_refine(&a->src, &a->dst, a->rank))
			return true;
		snprintf(err, errlen, "dst %s does not refine src %s (each mesh "
			 "dim keeps its placement or goes from R to S(d), "
			 "appended to its tensor dim's shard order)", d, s);
		return false;
	}
	int64_t dim = b->arg[5] ? b->arg[5]->v.i : -1;
	if (dim < 0 || dim >= a->rank) {
		snprintf(err, errlen, "dim %lld is not a dim of size",
			 (long long)dim);
		return false;
	}
	a->dim = (int)dim;
	a->mesh_dim = dt_placements_block_dim(&a->src, &a->dst, a->dim);
	if (a->mesh_dim >= 0)
		return true;
	snprintf(err, errlen, "fine %s does not shard dim %d one S level "
		 "deeper than coarse %s", d, a->dim, s);
	return false;
}

/* dt.local_shard, dt.all_permute and dt.all_to_all_v: self is the rank's
 * shard under src,
 * the result its shard under dst. dt.pack_blocks: self has the n padded fine shards of
 * the group along the block level in dim, the result is the rank's coarse
 * shard; dt.unpack_blocks: the reverse. dt.pack_pieces and
 * dt.unpack_pieces keep the shape of the shard under placements, whose dim
 * splits into the pieces. In an SPMD graph shards are padded
 * to the largest (semantics §7), in a per-rank graph exact; blocks are
 * always padded. Fresh contiguous tensors. */
int dt_shape_spmd(struct dt_shape_ctx *c)
{
	struct dt_tinfo t;
	struct dt_spmd_args a;
	enum dt_op op = dt_shape_op(c);
	char err[500];
	if (dt_shape_tensor(c, 0, &t) != DT_OK)
		return DT_EINPUT;
	if (!dt_spmd_args_read(c->m, op, &c->args, &a, err, sizeof err))
		return dt_shape_fail(c, "%s", err);
	const struct dt_mesh *me = &c->m->meshes.data[a.mesh];
	int64_t pos = -1, in[DT_MAX_RANK], out[DT_MAX_RANK];
	if (c->m->rank >= 0 && (pos = dt_mesh_position(me, c->m->rank)) < 0)
		return dt_shape_fail(c, "rank %d is not in mesh '%s'",
				     c->m->rank, dt_str_get(c->m, me->name));
	if (t.rank != a.rank)
		return dt_shape_fail(c, "self has %d dims but size %d", t.rank,
				     a.rank);
	if (op != DT_OP_PACK_BLOCKS && op != DT_OP_UNPACK_BLOCKS) {
		dt_shard_shape(me, &a.src, pos, a.shape, a.rank, in);
		dt_shard_shape(me, &a.dst, pos, a.shape, a.rank, out);
		if (a.dim >= 0 && in[a.dim] % a.pieces != 0)
			return dt_shape_fail(c, "dim %d (%lld) does not split "
					     "into %lld pieces", a.dim,
					     (long long)in[a.dim],
					     (long long)a.pieces);
	} else {
		int64_t fine[DT_MAX_RANK], coarse[DT_MAX_RANK];
		dt_shard_shape(me, &a.dst, -1, a.shape, a.rank, fine);
		dt_shard_shape(me, &a.src, pos, a.shape, a.rank, coarse);
		memcpy(in, t.shape, sizeof in);
		memcpy(out, t.shape, sizeof out);
		int64_t blocks = fine[a.dim] * me->shape[a.mesh_dim];
		in[a.dim] = op == DT_OP_PACK_BLOCKS ? blocks : coarse[a.dim];
		out[a.dim] = op == DT_OP_PACK_BLOCKS ? coarse[a.dim] : blocks;
	}
	struct dt_dimbuf b1, b2, b3;
	if (memcmp(t.shape, in, (size_t)t.rank * sizeof *in) != 0)
		return dt_shape_fail(c, "self has shape %s, but these attributes "
				     "(global size %s) want %s",
				     dt_dims_format(&b1, t.shape, t.rank),
				     dt_dims_format(&b2, a.shape, a.rank),
				     dt_dims_format(&b3, in, a.rank));
	memcpy(t.shape, out, (size_t)t.rank * sizeof *out);
	t.offset = 0;
	dt_tinfo_set_strides(&t, DT_MEMFMT_CONTIGUOUS);
	dt_shape_emit(c, &t);
	return DT_OK;
}
