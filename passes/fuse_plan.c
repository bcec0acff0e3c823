// SPDX-License-Identifier: MIT
/* fuse_plan.c: fuse-collectives' checks (semantics §4.1–4.3, §4.6):
 * whether a link may follow another in a chain (one user each, views
 * composing to the identity, one mesh), and the plan of a window of links:
 * disjoint dims, combinable reduce ops (sum with avg: a division after),
 * even shards, the flattened group by layout in the order the kind needs,
 * and the cost model's verdict. The walk and the rewrite are
 * fuse_collectives.c's. */
#include "fuse_internal.h"
#include "views.h"

#include <string.h>

static void node_list_text(const struct dt_module *m, const uint32_t *ids,
			   int n, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = 0;
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       i ? " -> " : "", dt_node_name(m, ids[i]));
}

/* Whether `next` can follow `l` in a chain; on a miss, f->why says why. */
enum dt_fuse_miss dt_fuse_check_link(struct dt_fuse *f,
				     const struct dt_fuse_link *l,
				     const struct dt_fuse_link *next)
{
	struct dt_module *m = f->m;
	char buf[256];
	if (dt_fuse_nusers(f, l->wait) != 1) {
		snprintf(f->why, sizeof(f->why),
			 "%s has %u users; fusing would drop the value the "
			 "others read",
			 dt_node_name(m, l->wait), dt_fuse_nusers(f, l->wait));
		return DT_FUSE_MISS_MULTI_USER;
	}
	for (int i = 0; i < l->npath; i++)
		if (dt_fuse_nusers(f, l->path[i]) != 1) {
			snprintf(f->why, sizeof(f->why),
				 "%s between them has %u users; fusing would "
				 "drop the value the others read",
				 dt_node_name(m, l->path[i]),
				 dt_fuse_nusers(f, l->path[i]));
			return DT_FUSE_MISS_MULTI_USER;
		}
	const struct dt_tensor *start = dt_node_tensor0(m, l->wait);
	uint32_t end_id = l->npath ? l->path[l->npath - 1] : l->wait;
	const struct dt_tensor *end = dt_node_tensor0(m, end_id);
	if (start->dtype != end->dtype) {
		snprintf(f->why, sizeof(f->why),
			 "the value changes dtype between them (%s -> %s); cast before the first %s instead",
			 dt_dtype_name((enum dt_dtype)start->dtype),
			 dt_dtype_name((enum dt_dtype)end->dtype),
			 dt_op_get((enum dt_op)dt_node_get(m, l->coll)->op)->name);
		return DT_FUSE_MISS_DTYPE;
	}
	bool views = true;
	for (int i = 0; i < l->npath; i++)
		views &= dt_is_view_step(m, dt_node_get(m, l->path[i]));
	if (!views || !dt_tensor_same(start, end)) {
		char a[96], b[96];
		dt_tensor_print(m, start, a, sizeof(a));
		dt_tensor_print(m, end, b, sizeof(b));
		node_list_text(m, l->path, l->npath, buf, sizeof(buf));
		snprintf(f->why, sizeof(f->why),
			 views ? "the views between them (%s) do not compose to the identity: %s becomes %s"
			       : "the nodes between them (%s) are not all views (a copy may reorder values): %s becomes %s",
			 buf, a, b);
		return DT_FUSE_MISS_NOT_IDENTITY;
	}
	const struct dt_group *g1 = &m->groups.data[l->group];
	const struct dt_group *g2 = &m->groups.data[next->group];
	if (g1->mesh != g2->mesh) {
		snprintf(f->why, sizeof(f->why),
			 "their groups are on different meshes (%s, %s)",
			 dt_str_get(m, m->meshes.data[g1->mesh].name),
			 dt_str_get(m, m->meshes.data[g2->mesh].name));
		return DT_FUSE_MISS_MESH;
	}
	return DT_FUSE_MISS_NONE;
}

/* Dims of links [lo, hi) must be pairwise disjoint. */
static enum dt_fuse_miss check_disjoint(struct dt_fuse *f,
					const struct dt_fuse_link *links,
					int lo, int hi)
{
	uint32_t seen = 0;
	for (int i = lo; i < hi; i++) {
		const struct dt_group *g = &f->m->groups.data[links[i].group];
		for (int d = 0; d < g->ndims; d++) {
			if (seen & (1u << g->dims[d])) {
				const struct dt_mesh *me = &f->m->meshes.data[g->mesh];
				snprintf(f->why, sizeof(f->why),
					 "mesh dim %s is in more than one of their groups",
					 dt_str_get(f->m, me->dims[g->dims[d]]));
				return DT_FUSE_MISS_OVERLAP;
			}
			seen |= 1u << g->dims[d];
		}
	}
	return DT_FUSE_MISS_NONE;
}

/* Combined reduce op of links [lo, hi): equal ops, or sum with avg. */
static enum dt_fuse_miss combine_ops(struct dt_fuse *f,
				     const struct dt_fuse_link *links, int lo,
				     int hi, struct dt_fuse_plan *p)
{
	p->op = links[lo].op;
	p->avg_divisor = 1;
	if (p->kind == DT_COMM_ALL_GATHER)
		return DT_FUSE_MISS_NONE;
	bool all_avg = true, mixed = false;
	int64_t avg_size = 1;
	for (int i = lo; i < hi; i++) {
		enum dt_reduce_op op = links[i].op;
		bool linear = op == DT_REDUCE_SUM || op == DT_REDUCE_AVG;
		if (op != links[lo].op) {
			if (!linear || !(links[lo].op == DT_REDUCE_SUM ||
					 links[lo].op == DT_REDUCE_AVG)) {
				snprintf(f->why, sizeof(f->why),
					 "reduce ops %s and %s do not combine (only equal ops, or sum with avg)",
					 dt_reduce_name(links[lo].op), dt_reduce_name(op));
				return DT_FUSE_MISS_OP;
			}
			mixed = true;
		}
		all_avg &= op == DT_REDUCE_AVG;
		if (op == DT_REDUCE_AVG)
			avg_size *= links[i].size;
	}
	if (!mixed || all_avg)
		return DT_FUSE_MISS_NONE;
	const struct dt_tensor *t = dt_node_tensor0(f->m, links[lo].coll);
	if (!dt_dtype_is_float((enum dt_dtype)t->dtype)) {
		snprintf(f->why, sizeof(f->why),
			 "sum with avg needs a division after the sum, which %s cannot hold exactly",
			 dt_dtype_name((enum dt_dtype)t->dtype));
		return DT_FUSE_MISS_OP;
	}
	p->op = DT_REDUCE_SUM;
	p->avg_divisor = avg_size;
	return DT_FUSE_MISS_NONE;
}

/* Every tensor dim has equal local lengths on every rank of the mesh:
 * else *dim is the first that does not and lens its first lengths. Not
 * only dim 0: a collective on dim d moves d to the front, and a decision
 * that read one rank's local shapes would differ between ranks (ranks
 * holding a full chunk see no trim between the links and fuse, the others
 * do not, and the collectives no longer match: a hang). */
static bool sharding_even(const struct dt_module *m, const struct dt_sharding *s,
			  int *dim, int64_t *lens, int *nlens)
{
	if (!s->has_global_shape)
		return true;
	int rank;
	const int64_t *shape = dt_ints_get(m, s->global_shape, &rank);
	const struct dt_mesh *me = &m->meshes.data[s->mesh];
	int64_t coord[DT_MAX_MESH_DIMS];
	for (int d = 0; d < rank; d++) {
		*nlens = 0;
		bool even = true;
		for (int64_t pos = 0; pos < me->size; pos++) {
			dt_mesh_coords(me, pos, coord);
			int64_t len = dt_shard_length(&s->placements, me->shape,
						      coord, d, shape[d]);
			if (*nlens < 8)
				lens[(*nlens)++] = len;
			even &= len == lens[0];
		}
		if (!even) {
			*dim = d;
			return false;
		}
	}
	return true;
}

static bool is_pad(const struct dt_module *m, uint32_t id)
{
	return dt_node_get(m, id)->op == DT_OP_CONSTANT_PAD_ND;
}

/* A narrow or slice of dim 0 (how DTensor trims padding). */
static bool is_trim(const struct dt_module *m, uint32_t id, struct dt_diag *diag)
{
	const struct dt_node *n = dt_node_get(m, id);
	if (n->op != DT_OP_NARROW && n->op != DT_OP_SLICE)
		return false;
	struct dt_bound_args b;
	if (dt_op_bind(m, n, &b, diag) != DT_OK)
		return false;
	int64_t dim = b.arg[1] ? b.arg[1]->v.i : 0;
	return dim == 0;
}

/* Gathers and scatters of links [lo, hi) need even shards. */
static enum dt_fuse_miss check_even(struct dt_fuse *f,
				    const struct dt_fuse_link *links, int lo,
				    int hi, enum dt_comm_kind kind)
{
	struct dt_module *m = f->m;
	if (kind == DT_COMM_ALL_REDUCE)
		return DT_FUSE_MISS_NONE;
	uint32_t x = dt_fuse_first_input(m, links[lo].coll);
	if (is_pad(m, x)) {
		snprintf(f->why, sizeof(f->why),
			 "the shards are uneven: %s pads the input before the first collective",
			 dt_node_name(m, x));
		return DT_FUSE_MISS_UNEVEN;
	}
	uint32_t last = links[hi - 1].wait;
	for (uint32_t u = f->uses.first[last]; u < f->uses.first[last + 1]; u++)
		if (is_trim(m, f->uses.list[u], f->ctx->diag)) {
			snprintf(f->why, sizeof(f->why),
				 "the shards are uneven: %s trims the result after the last collective",
				 dt_node_name(m, f->uses.list[u]));
			return DT_FUSE_MISS_UNEVEN;
		}
	uint32_t values[2 * DT_FUSE_MAX_LINKS + 1];
	int nvalues = 0;
	values[nvalues++] = x;
	for (int i = lo; i < hi; i++)
		values[nvalues++] = links[i].wait;
	for (int i = 0; i < nvalues; i++) {
		const struct dt_sharding *s =
			dt_node_sharding(m, dt_node_get(m, values[i]));
		int64_t lens[8];
		int nlens, dim;
		if (s && !sharding_even(m, s, &dim, lens, &nlens)) {
			char text[64];
			dt_placements_print(&s->placements, text, sizeof(text));
			int rank;
			const int64_t *shape = dt_ints_get(m, s->global_shape, &rank);
			char rows[96];
			size_t at = 0;
			for (int k = 0; k < nlens && at < sizeof(rows); k++)
				at += (size_t)snprintf(rows + at, sizeof(rows) - at,
						       "%s%lld", k ? "," : "",
						       (long long)lens[k]);
			snprintf(f->why, sizeof(f->why),
				 "the shards are uneven: %s is %s of a global dim %d of %lld (local %s %s%s)",
				 dt_node_name(m, values[i]), text, dim,
				 (long long)shape[dim], dim ? "lengths" : "rows",
				 rows, nlens == 8 ? ",..." : "");
			return DT_FUSE_MISS_UNEVEN;
		}
	}
	return DT_FUSE_MISS_NONE;
}

/* The group of the plan: by layout in the order the kind needs. */
static enum dt_fuse_miss find_group(struct dt_fuse *f, struct dt_fuse_plan *p)
{
	struct dt_module *m = f->m;
	if (p->kind == DT_COMM_ALL_REDUCE) {
		/* Prefer the mesh-order (row-major) group, then any order. */
		uint8_t sorted[DT_MAX_MESH_DIMS];
		int n = 0;
		for (int d = 0; d < m->meshes.data[p->mesh].ndim; d++)
			for (int i = 0; i < p->ndims; i++)
				if (p->dims[i] == d)
					sorted[n++] = (uint8_t)d;
		memcpy(p->dims, sorted, (size_t)n);
		p->group = dt_module_find_group_by_layout(m, p->mesh, p->dims, n);
		if (p->group < 0)
			p->group = dt_module_find_group_any_order(m, p->mesh,
								  p->dims, n);
	} else {
		p->group = dt_module_find_group_by_layout(m, p->mesh, p->dims,
							  p->ndims);
	}
	if (p->group >= 0 || f->ctx->options->create_groups)
		return DT_FUSE_MISS_NONE;
	char dims[96], name[96];
	dt_mesh_dims_join(m, p->mesh, p->dims, p->ndims, " ", dims, sizeof(dims));
	dt_module_new_group_name(m, p->mesh, p->dims, p->ndims, name,
				 sizeof(name));
	const char *mesh = dt_str_get(m, m->meshes.data[p->mesh].name);
	int other = dt_module_find_group_any_order(m, p->mesh, p->dims,
						   p->ndims);
	if (other >= 0) {
		const struct dt_group *g = &m->groups.data[other];
		char have[96];
		dt_mesh_dims_join(m, g->mesh, g->dims, g->ndims, " ", have, sizeof(have));
		snprintf(f->why, sizeof(f->why),
			 "group %.64s (dims %s) has the wrong rank order: this chain needs dims (%s), %s; add <group name=\"%s\" mesh=\"%.64s\" dims=\"%s\"/> or pass --create-groups",
			 dt_str_get(m, g->name), have, dims,
			 p->kind == DT_COMM_ALL_GATHER
				 ? "the dim gathered last is the slowest"
				 : "the dim scattered first is the slowest",
			 name, mesh, dims);
		return DT_FUSE_MISS_ORDER;
	}
	snprintf(f->why, sizeof(f->why),
		 "no group over dims (%s) is declared; add <group name=\"%s\" mesh=\"%.64s\" dims=\"%s\"/> or pass --create-groups",
		 dims, name, mesh, dims);
	return DT_FUSE_MISS_NO_GROUP;
}

/* Modelled time of the links separately and fused. */
static enum dt_fuse_miss check_cost(struct dt_fuse *f,
				    const struct dt_fuse_link *links, int lo,
				    int hi, struct dt_fuse_plan *p)
{
	struct dt_module *m = f->m;
	const struct dt_mesh *me = &m->meshes.data[p->mesh];
	p->chain_us = 0;
	for (int i = lo; i < hi; i++) {
		const struct dt_group *g = &m->groups.data[links[i].group];
		p->chain_us += dt_comm_cost(f->topo, me, g->dims, g->ndims, p->kind,
					    dt_comm_bytes(m, dt_node_get(m, links[i].coll)));
	}
	/* The fused collective reads the first input and writes the last
	 * output: it charges the larger of the two, as its kind does. */
	double bytes = p->kind == DT_COMM_ALL_GATHER
			       ? dt_comm_bytes(m, dt_node_get(m, links[hi - 1].coll))
			       : dt_comm_bytes(m, dt_node_get(m, links[lo].coll));
	p->fused_us = dt_comm_cost(f->topo, me, p->dims, p->ndims, p->kind, bytes);
	if (p->fused_us <= p->chain_us || f->ctx->options->force_fusion)
		return DT_FUSE_MISS_NONE;
	snprintf(f->why, sizeof(f->why),
		 "the cost model says it is slower: %.1f us fused vs %.1f us chained (one %lld-rank ring pays every hop at the slowest dim's link); pass --force-fusion to fuse anyway",
		 p->fused_us, p->chain_us, (long long)p->size);
	return DT_FUSE_MISS_COST;
}

/* Plan the fusion of links [lo, hi), or say why not. */
enum dt_fuse_miss dt_fuse_plan_window(struct dt_fuse *f,
				      const struct dt_fuse_link *links, int lo,
				      int hi, struct dt_fuse_plan *p)
{
	struct dt_module *m = f->m;
	p->kind = (enum dt_comm_kind)dt_comm_kind_of_op(
		dt_node_get(m, links[lo].coll)->op);
	p->mesh = m->groups.data[links[lo].group].mesh;
	enum dt_fuse_miss r;
	if ((r = check_disjoint(f, links, lo, hi)) ||
	    (r = combine_ops(f, links, lo, hi, p)) ||
	    (r = check_even(f, links, lo, hi, p->kind)))
		return r;
	p->ndims = 0;
	p->size = 1;
	for (int k = lo; k < hi; k++) {
		/* Gathers: the last gathered is the slowest, so reversed. */
		int i = p->kind == DT_COMM_ALL_GATHER ? hi - 1 - (k - lo) : k;
		const struct dt_group *g = &m->groups.data[links[i].group];
		memcpy(p->dims + p->ndims, g->dims, g->ndims);
		p->ndims += g->ndims;
		p->size *= links[i].size;
	}
	if ((r = find_group(f, p)))
		return r;
	return check_cost(f, links, lo, hi, p);
}

