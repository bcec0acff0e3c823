// SPDX-License-Identifier: MIT
/* lower_redistribute_pieces.c: views of padded values in the SPMD programs
 * of `lower-redistribute` (semantics §7). Merging a padded dim into the
 * dims before it (`[B, T, C] -> [B*T, C]` with T sharded unevenly, the
 * result _S(0,B)) leaves each of the B pieces of the merged dim with the
 * rank's rows leading and padding after them, while the result's padded
 * shard has all its rows leading; dt.pack_pieces after the view packs
 * them, and dt.unpack_pieces before a view splitting the dim back spreads
 * them out:
 *
 *   view = aten.view(x, [12, 24])   (x: [6, 2, 24]{T padded}, 7 on 4)
 *   view.pack = dt.pack_pieces(view, 'world', '_S(0,6)', [42, 24], 0, 6)
 *
 * Allowed only where every rank's elements line up (same_indices):
 * O(mesh size · the elements of the merged dims), refused beyond 2^24. */
#include "lower_redistribute_internal.h"

#include <string.h>

/* Input dims [i0, i1) of a view become output dims [o0, o1). */
struct vgroup {
	int i0, i1, o0, o1;
};

/* The groups of a view from global shape gi[0..ri) to go[0..ro): the
 * shortest runs of dims, taken in order, whose element counts match
 * (trailing size-1 dims a group of their own). Returns their count, or -1
 * when the counts never match (zero-size dims). */
static int view_groups(const int64_t *gi, int ri, const int64_t *go, int ro,
		       struct vgroup *out)
{
	int i = 0, o = 0, n = 0;
	while (i < ri || o < ro) {
		struct vgroup g = {i, i, o, o};
		int64_t pi = i < ri ? gi[i++] : 1, po = o < ro ? go[o++] : 1;
		while (pi != po) {
			if (pi < po && i < ri)
				pi *= gi[i++];
			else if (po < pi && o < ro)
				po *= go[o++];
			else
				return -1;
		}
		g.i1 = i;
		g.o1 = o;
		out[n++] = g;
	}
	return n;
}

/* The global indices of the elements of dims [d0, d1) of a value of
 * global shape g under pl held by the rank at coord, the dims merged into
 * one in the local row-major order, into out (capacity: the product of
 * g[d0..d1)); idx is scratch of capacity max g[d]. Returns their count. */
static int64_t merged_indices(const struct dt_placements *pl,
			      const struct dt_mesh *me, const int64_t *coord,
			      const int64_t *g, int d0, int d1, int64_t *out,
			      int64_t *idx)
{
	int64_t n = 1;
	out[0] = 0;
	for (int d = d0; d < d1; d++) {
		int64_t k;
		dt_shard_indices(pl, me->shape, coord, d, g[d], idx, &k);
		for (int64_t p = n; p-- > 0;) { /* in place, from the end */
			int64_t outer = out[p] * g[d];
			for (int64_t j = k; j-- > 0;)
				out[p * k + j] = outer + idx[j];
		}
		n *= k;
	}
	return n;
}

/* Indices same_indices compares at most (a refusal beyond). */
#define VIEW_CHECK_LIMIT (INT64_C(1) << 24)

/* Whether every rank holds the same global elements, in the same local
 * order, in input dims [i0, i1) of gi under pin as in output dims
 * [o0, o1) of go under pout, each side's dims merged: then the view maps
 * the rank's valid elements onto its shard of the output, in order. */
static bool same_indices(const struct dt_mesh *me,
			 const struct dt_placements *pin, const int64_t *gi,
			 const struct dt_placements *pout, const int64_t *go,
			 const struct vgroup *g)
{
	int64_t numel = 1, longest = 1;
	for (int d = g->i0; d < g->i1; d++) {
		numel *= gi[d];
		longest = gi[d] > longest ? gi[d] : longest;
	}
	for (int d = g->o0; d < g->o1; d++)
		longest = go[d] > longest ? go[d] : longest;
	if (numel > VIEW_CHECK_LIMIT / me->size)
		return false;
	int64_t *a = dt_malloc((size_t)(2 * numel + longest + 1) * sizeof *a);
	int64_t *b = a + numel, *idx = b + numel;
	bool same = true;
	for (int64_t pos = 0; pos < me->size && same; pos++) {
		int64_t coord[DT_MAX_MESH_DIMS];
		dt_mesh_coords(me, pos, coord);
		int64_t na = merged_indices(pin, me, coord, gi, g->i0, g->i1, a,
					    idx);
		int64_t nb = merged_indices(pout, me, coord, go, g->o0, g->o1,
					    b, idx);
		same = na == nb &&
		       memcmp(a, b, (size_t)na * sizeof *a) == 0;
	}
	dt_free(a);
	return same;
}

/* The product of sizes[d0..d1). */
static int64_t prod(const int64_t *sizes, int d0, int d1)
{
	int64_t p = 1;
	for (int d = d0; d < d1; d++)
		p *= sizes[d];
	return p;
}

/* The first set bit of bits in [d0, d1) (or -1), and their count. */
static int first_bit(unsigned bits, int d0, int d1, int *count)
{
	int first = -1;
	*count = 0;
	for (int d = d0; d < d1; d++)
		if (bits & (1u << d)) {
			first = first < 0 ? d : first;
			++*count;
		}
	return first;
}

/* The view goes group by group (view_groups); a group with padding on
 * either side must hold the same elements in the same order on every rank
 * (same_indices). A kept dim is then confined. One group may merge one
 * padded dim d into the unpadded dims before it (and after it, inner):
 * the local view leaves the rank's rows in `pieces` (the product of the
 * local sizes before d) padded pieces of output dim `dim`, which
 * dt.pack_pieces packs after the view; or split padded dim `dim` into
 * unpadded dims and one padded one: dt.unpack_pieces spreads the rows
 * into pieces before it. Anything else is refused. */
enum dt_pad_use dt_lower_view_pieces(const struct dt_module *m,
				     const struct dt_node *n, uint32_t x,
				     int mesh, const struct dt_placements *pl,
				     int *dim, int64_t *pieces)
{
	const struct dt_sharding *sh = dt_node_sharding(m, dt_node_get(m, x));
	if (sh->mesh != mesh || n->ntensors != 1)
		return DT_PAD_REFUSED;
	const struct dt_mesh *me = &m->meshes.data[mesh];
	int ri, ro;
	const int64_t *gi = dt_ints_get(m, sh->global_shape, &ri);
	const int64_t *go = dt_ints_get(m, dt_node_tensor(m, n, 0)->shape, &ro);
	unsigned bin = dt_lower_padded_bits(me, &sh->placements, gi, ri),
		 bout = dt_lower_padded_bits(me, pl, go, ro);
	int64_t li[DT_MAX_RANK], lo[DT_MAX_RANK];
	dt_shard_shape(me, &sh->placements, -1, gi, ri, li);
	dt_shard_shape(me, pl, -1, go, ro, lo);
	struct vgroup g[2 * DT_MAX_RANK];
	int ng = view_groups(gi, ri, go, ro, g);
	enum dt_pad_use u = ng < 0 ? DT_PAD_REFUSED : DT_PAD_CONFINED;
	for (int k = 0; k < ng && u != DT_PAD_REFUSED; k++) {
		int ci, co;
		int di = first_bit(bin, g[k].i0, g[k].i1, &ci),
		    dout = first_bit(bout, g[k].o0, g[k].o1, &co);
		if (!ci && !co)
			continue;
		bool one_in = g[k].i1 - g[k].i0 == 1,
		     one_out = g[k].o1 - g[k].o0 == 1;
		if (!same_indices(me, &sh->placements, gi, pl, go, &g[k]))
			return DT_PAD_REFUSED;
		if (one_in && one_out)
			continue;
		int64_t np = one_out && ci == 1 && co <= 1
				     ? prod(li, g[k].i0, di)
			     : one_in && co == 1 && ci <= 1
				     ? prod(lo, g[k].o0, dout)
				     : 0;
		if (np == 1)
			continue; /* the padded dim leads: the layout is kept */
		if (!np || u != DT_PAD_CONFINED)
			return DT_PAD_REFUSED;
		u = one_out && ci == 1 ? DT_PAD_PACK : DT_PAD_UNPACK;
		*dim = u == DT_PAD_PACK ? g[k].o0 : g[k].i0;
		*pieces = np;
	}
	return u;
}

uint32_t dt_lower_emit_pieces(struct dt_lower *l, enum dt_op op, int mesh,
			      uint32_t x, const struct dt_placements *pl,
			      const int64_t *g, int rank, int dim,
			      int64_t pieces)
{
	const struct dt_mesh *me = &l->m->meshes.data[mesh];
	char text[2][320];
	dt_placements_print(pl, text[0], sizeof text[0]);
	dt_placements_print_order(pl, me, &l->m->strings, text[1],
				  sizeof text[1]);
	struct dt_arg args[7] = {
		{.kind = DT_ARG_NODE, .v.node = x},
		{.kind = DT_ARG_STR, .v.s = me->name},
		{.kind = DT_ARG_STR, .v.s = dt_str_intern(l->m, text[0])},
		{.kind = DT_ARG_INTS, .len = (uint32_t)rank,
		 .v.ints = dt_ints_intern(l->m, g, (size_t)rank)},
		{.kind = DT_ARG_INT, .v.i = dim},
		{.kind = DT_ARG_INT, .v.i = pieces},
		{.kind = DT_ARG_STR, .v.s = dt_str_intern(l->m, text[1])},
	};
	uint32_t n = text[1][0] ? 7 : 6; /* the order: left out when default */
	return dt_lower_emit(l, op, op == DT_OP_PACK_PIECES ? "pack" : "unpack",
			     args, n);
}

int dt_lower_pack_pieces(struct dt_lower *l, uint32_t id)
{
	struct dt_module *m = l->m;
	if (l->pieces.view != id)
		return DT_OK;
	l->pieces.view = 0;
	struct dt_node *n = dt_node_get(m, id);
	uint32_t s = n->sharding;
	const struct dt_sharding sh = m->shardings.data[s];
	int rank;
	int64_t g[DT_MAX_RANK];
	const int64_t *gs = dt_ints_get(m, sh.global_shape, &rank);
	memcpy(g, gs, (size_t)rank * sizeof *g);
	char name[256];
	dt_lower_copy_name(m, id, name, sizeof name);
	l->before = n->next;
	l->base = name;
	l->line = n->line;
	n->sharding = DT_NO_SHARDING; /* pieces, not a padded shard */
	uint32_t z = dt_lower_emit_pieces(l, DT_OP_PACK_PIECES, sh.mesh, id,
					  &sh.placements, g, rank,
					  l->pieces.dim, l->pieces.count);
	if (!z)
		return DT_EINPUT;
	dt_node_get(m, z)->sharding = s;
	l->local[id] = z;
	return DT_OK;
}
