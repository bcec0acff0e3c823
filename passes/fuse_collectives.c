// SPDX-License-Identifier: MIT
/* fuse_collectives.c: the `fuse-collectives` pass (semantics §4.1–4.3, §4.6)
 * turns a chain of collectives of one kind over disjoint dims of one mesh
 * into one collective over the flattened group of those dims:
 *
 *   a1 = all_gather(x, 16, "dp")            a = all_gather(x, 128, "tp_dp")
 *   w1 = wait(a1)                      →    w = wait(a)
 *   p1 = permute(w1, [1,0])                 (users of w2 read w)
 *   p2 = permute(p1, [1,0])
 *   a2 = all_gather(p2, 8, "tp"); w2 = wait(a2)
 *
 * A link is a collective and its wait; between two links only view steps
 * composing to the identity (views.h), and every intermediate has one user.
 * The fused group's dim order is the rank order the chain produces:
 *   all_gather      the dim gathered last is the slowest: (Dk … D1)
 *   reduce_scatter  the dim scattered first is the slowest: (D1 … Dk)
 *   all_reduce      any order (a declared group over the union, by layout)
 * Reduce ops must be equal, or sum with avg: then the fused collective sums
 * and a division by the product of the avg dims' sizes follows.
 * Gathers and scatters need even shards: a <sharding global-shape> saying
 * otherwise (in any tensor dim: the decision must not depend on the rank),
 * a pad before or a narrow after the chain refuses the fusion.
 * The group is looked up by layout; a missing one is declared only under
 * --create-groups. A fusion the cost model (cost_model.h) says is slower is
 * declined unless --force-fusion. Where the whole chain cannot fuse, its
 * longest fusable windows do. Every fired and missed candidate gives a
 * remark (tag "fuse-collectives[:reason]").
 *
 * The fused nodes are named after the first link (`ag_7.fused`), carry the
 * replaced nodes' names in meta dtopt.fused_from, the first collective's
 * metadata and line, and the last wait's metadata and sharding.
 *
 * Requires: VERIFIED, SHAPES. Preserves: both. O(nodes + uses).
 * The checks and plans of a window of links are fuse_plan.c's.
 */
#include "fuse_internal.h"
#include "views.h"

#include <string.h>

static const char *const miss_tag[] = {
	[DT_FUSE_MISS_MULTI_USER] = "fuse-collectives:multi_user",
	[DT_FUSE_MISS_NOT_IDENTITY] = "fuse-collectives:not_identity",
	[DT_FUSE_MISS_DTYPE] = "fuse-collectives:dtype_mismatch",
	[DT_FUSE_MISS_MESH] = "fuse-collectives:mesh_mismatch",
	[DT_FUSE_MISS_OVERLAP] = "fuse-collectives:overlapping_dims",
	[DT_FUSE_MISS_OP] = "fuse-collectives:op_mismatch",
	[DT_FUSE_MISS_UNEVEN] = "fuse-collectives:uneven",
	[DT_FUSE_MISS_NO_GROUP] = "fuse-collectives:no_group",
	[DT_FUSE_MISS_ORDER] = "fuse-collectives:order",
	[DT_FUSE_MISS_COST] = "fuse-collectives:cost",
};

static uint32_t only_user(const struct dt_fuse *f, uint32_t id)
{
	return dt_fuse_nusers(f, id) == 1 ? f->uses.list[f->uses.first[id]] : 0;
}

static bool is_kind(const struct dt_module *m, uint32_t id, enum dt_comm_kind k)
{
	const struct dt_node *n = dt_node_get(m, id);
	return n->kind == DT_NODE_CALL && dt_comm_kind_of_op(n->op) == (int)k;
}

/* Group, size and reduce op of collective `id` from its bound args. */
static bool read_link(struct dt_fuse *f, struct dt_fuse_link *l)
{
	struct dt_module *m = f->m;
	const struct dt_node *n = dt_node_get(m, l->coll);
	struct dt_bound_args b;
	if (dt_op_bind(m, n, &b, f->ctx->diag) != DT_OK)
		return false;
	int name_param = n->op == DT_OP_ALL_GATHER ? 2
			 : n->op == DT_OP_REDUCE_SCATTER ? 3
							 : 2;
	l->group = dt_module_find_group(m, b.arg[name_param]->v.s);
	if (l->group < 0)
		return false;
	const struct dt_group *g = &m->groups.data[l->group];
	l->size = dt_group_size(&m->meshes.data[g->mesh], g->dims, g->ndims);
	l->op = DT_REDUCE_SUM;
	if (n->op != DT_OP_ALL_GATHER) {
		enum dt_reduce_op op;
		if (!dt_reduce_parse(dt_str_get(m, b.arg[1]->v.s), &op))
			return false;
		l->op = op;
	}
	return true;
}

/* The wait of collective `coll` when it is the collective's only user. */
static uint32_t wait_of(const struct dt_fuse *f, uint32_t coll)
{
	uint32_t w = only_user(f, coll);
	if (!w || dt_node_get(f->m, w)->op != DT_OP_WAIT ||
	    dt_fuse_first_input(f->m, w) != coll)
		return 0;
	return w;
}

/* Nodes followed between links when looking for the next one: anything
 * reading its first input as one tensor that a chain could pass through. */
static bool is_passthrough(const struct dt_module *m, uint32_t id)
{
	const struct dt_node *n = dt_node_get(m, id);
	if (n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN ||
	    n->ntensors != 1 || dt_op_has((enum dt_op)n->op, DT_OPF_MULTI))
		return false;
	return dt_op_has((enum dt_op)n->op, DT_OPF_VIEW) ||
	       n->op == DT_OP_RESHAPE || n->op == DT_OP_UNSAFE_VIEW ||
	       n->op == DT_OP_CONVERT_ELEMENT_TYPE || n->op == DT_OP_TO_COPY ||
	       n->op == DT_OP_CLONE || n->op == DT_OP_CONTIGUOUS;
}

/* Depth-first from `from` through pass-through nodes to a collective of
 * kind `k` reading the path's end; fills path (without the collective). */
static uint32_t find_next(const struct dt_fuse *f, uint32_t from,
			  enum dt_comm_kind k, uint32_t *path, int *npath)
{
	const struct dt_module *m = f->m;
	for (uint32_t u = f->uses.first[from]; u < f->uses.first[from + 1]; u++) {
		uint32_t user = f->uses.list[u];
		if (dt_fuse_first_input(m, user) != from)
			continue;
		if (is_kind(m, user, k))
			return user;
		if (*npath < DT_FUSE_MAX_PATH && is_passthrough(m, user)) {
			path[(*npath)++] = user;
			uint32_t next = find_next(f, user, k, path, npath);
			if (next)
				return next;
			(*npath)--;
		}
	}
	return 0;
}

static void link_text(const struct dt_module *m, const struct dt_fuse_link *l,
		      char *buf, size_t n)
{
	const struct dt_group *g = &m->groups.data[l->group];
	char dims[128];
	dt_mesh_dims_join(m, g->mesh, g->dims, g->ndims, " ", dims,
			  sizeof(dims));
	snprintf(buf, n, "%s(%s,%lld)", dt_node_name(m, l->coll), dims,
		 (long long)l->size);
}

/* "all_gather chain ag_7(dp,16) -> ag_8(tp,8)" */
static void chain_text(const struct dt_fuse *f,
		       const struct dt_fuse_link *links, int lo, int hi,
		       char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "%s chain",
				     dt_comm_kind_name((enum dt_comm_kind)
					dt_comm_kind_of_op(dt_node_get(f->m, links[lo].coll)->op)));
	for (int i = lo; i < hi && at < n; i++) {
		char one[192];
		link_text(f->m, &links[i], one, sizeof(one));
		at += (size_t)snprintf(buf + at, n - at, "%s%s",
				       i > lo ? " -> " : " ", one);
	}
}

static dt_str unique_name(struct dt_module *m, const char *base,
			  const char *suffix)
{
	char name[256];
	snprintf(name, sizeof(name), "%s%s", base, suffix);
	size_t len = strlen(name);
	for (int k = 2; dt_module_find_node(m, dt_str_intern(m, name)); k++)
		snprintf(name + len, sizeof(name) - len, ".%d", k);
	return dt_str_intern(m, name);
}

/* Metas of node `id` plus `extra` (may be NULL). */
static uint32_t collect_metas(const struct dt_module *m, uint32_t id,
			      const struct dt_meta *extra, struct dt_meta *out,
			      uint32_t cap)
{
	const struct dt_node *n = dt_node_get(m, id);
	uint32_t k = 0;
	for (uint32_t i = 0; i < n->nmetas && k + 1 < cap; i++) {
		const struct dt_meta *mt = &m->metas.data[n->metas + i];
		if (strcmp(dt_str_get(m, mt->key), DT_META_FUSED_FROM) != 0)
			out[k++] = *mt;
	}
	if (extra)
		out[k++] = *extra;
	return k;
}

/* Replace links [lo, hi) with one collective and its wait (and the
 * division of sum with avg). */
static uint32_t rewrite(struct dt_fuse *f, const struct dt_fuse_link *links,
			int lo, int hi, struct dt_fuse_plan *p)
{
	struct dt_module *m = f->m;
	if (p->group < 0)
		p->group = dt_module_declare_group(m, p->mesh, p->dims,
						    p->ndims);
	/* Provenance: every node the window replaces, in graph order. */
	char from[4096];
	size_t at = 0;
	from[0] = 0;
	for (int i = lo; i < hi && at < sizeof(from); i++) {
		at += (size_t)snprintf(from + at, sizeof(from) - at, "%s%s %s",
				       at ? " " : "", dt_node_name(m, links[i].coll),
				       dt_node_name(m, links[i].wait));
		for (int k = 0; i + 1 < hi && k < links[i].npath && at < sizeof(from); k++)
			at += (size_t)snprintf(from + at, sizeof(from) - at, " %s",
					       dt_node_name(m, links[i].path[k]));
	}
	struct dt_meta provenance = {dt_str_intern(m, DT_META_FUSED_FROM),
				     dt_str_intern(m, from)};

	const struct dt_node *first = dt_node_get(m, links[lo].coll);
	uint32_t x = dt_fuse_first_input(m, links[lo].coll);
	struct dt_arg args[4];
	int nargs = 0;
	args[nargs++] = (struct dt_arg){.kind = DT_ARG_NODE, .v.node = x};
	if (p->kind != DT_COMM_ALL_GATHER)
		args[nargs++] = (struct dt_arg){
			.kind = DT_ARG_STR,
			.v.s = dt_str_intern(m, dt_reduce_name(p->op))};
	if (p->kind != DT_COMM_ALL_REDUCE)
		args[nargs++] = (struct dt_arg){.kind = DT_ARG_INT, .v.i = p->size};
	args[nargs++] = (struct dt_arg){.kind = DT_ARG_STR,
					.v.s = m->groups.data[p->group].name};
	struct dt_meta metas[64];
	uint32_t nmetas = collect_metas(m, links[lo].coll, &provenance, metas, 64);
	struct dt_tensor out = *dt_node_tensor0(m, links[hi - 1].coll);
	uint32_t coll = dt_module_add_node(m, &(struct dt_node_init){
		.kind = DT_NODE_CALL,
		.name = unique_name(m, dt_str_get(m, first->name), ".fused"),
		.target = first->target,
		.line = first->line,
		.args = args, .nargs = (uint32_t)nargs,
		.tensors = &out, .ntensors = 1,
		.metas = metas, .nmetas = nmetas,
	});
	dt_node_get(m, coll)->flags |= DT_NODE_FUSED;
	dt_graph_insert_before(m, coll, links[lo].coll);

	const struct dt_node *last_wait = dt_node_get(m, links[hi - 1].wait);
	/* The window's placements belong to the value it yields: the wait's,
	 * or, for sum with avg, the division's (the wait holds the sum). */
	const struct dt_sharding *placed = dt_node_sharding(m, last_wait);
	struct dt_arg wait_arg = {.kind = DT_ARG_NODE, .v.node = coll};
	nmetas = collect_metas(m, links[hi - 1].wait, &provenance, metas, 64);
	uint32_t wait = dt_module_add_node(m, &(struct dt_node_init){
		.kind = DT_NODE_CALL,
		.name = unique_name(m, dt_node_name(m, links[lo].wait), ".fused"),
		.target = last_wait->target,
		.line = dt_node_get(m, links[lo].wait)->line,
		.args = &wait_arg, .nargs = 1,
		.tensors = &out, .ntensors = 1,
		.sharding = p->avg_divisor > 1 ? NULL : placed,
		.metas = metas, .nmetas = nmetas,
	});
	dt_node_get(m, wait)->flags |= DT_NODE_FUSED;
	dt_graph_insert_before(m, wait, links[hi - 1].wait);

	uint32_t result = wait;
	if (p->avg_divisor > 1) {
		struct dt_arg div_args[2] = {
			{.kind = DT_ARG_NODE, .v.node = wait},
			{.kind = DT_ARG_INT, .v.i = p->avg_divisor},
		};
		struct dt_meta why = {dt_str_intern(m, DT_META_FUSED_FROM),
				      provenance.value};
		result = dt_module_add_node(m, &(struct dt_node_init){
			.kind = DT_NODE_CALL,
			.name = unique_name(m, dt_node_name(m, links[lo].wait), ".avg"),
			.target = dt_str_intern(m, "aten.div.Scalar"),
			.line = dt_node_get(m, links[lo].wait)->line,
			.args = div_args, .nargs = 2,
			.tensors = &out, .ntensors = 1,
			.sharding = placed,
			.metas = &why, .nmetas = 1,
		});
		dt_node_get(m, result)->flags |= DT_NODE_FUSED;
		dt_graph_insert_before(m, result, links[hi - 1].wait);
	}
	/* Its users read `result` once the pass ends (replace_all). */
	f->replaced[links[hi - 1].wait] = result;
	for (int i = lo; i < hi; i++) {
		dt_graph_remove(m, links[i].coll);
		dt_graph_remove(m, links[i].wait);
		for (int k = 0; i + 1 < hi && k < links[i].npath; k++)
			dt_graph_remove(m, links[i].path[k]);
	}
	return coll;
}

static void remark_fired(struct dt_fuse *f, const struct dt_fuse_link *links,
			 int lo, int hi, const struct dt_fuse_plan *p,
			 uint32_t fused)
{
	struct dt_module *m = f->m;
	char chain[512], dims[128], scale[96] = "";
	chain_text(f, links, lo, hi, chain, sizeof(chain));
	const struct dt_group *g = &m->groups.data[p->group];
	dt_mesh_dims_join(m, g->mesh, g->dims, g->ndims, " ", dims, sizeof(dims));
	if (p->avg_divisor > 1)
		snprintf(scale, sizeof(scale), ", sum then divided by %lld for the avg dims",
			 (long long)p->avg_divisor);
	dt_diag_report(f->ctx->diag, DT_REMARK, m->file,
		       dt_node_get(m, links[lo].coll)->line, "fuse-collectives",
		       "fused %s into %s(%s,%lld) on group %s%s%s (modelled %.1f -> %.1f us%s)",
		       chain, dt_node_name(m, fused), dims, (long long)p->size,
		       dt_str_get(m, g->name), g->generated ? " (declared by --create-groups)" : "",
		       scale, p->chain_us, p->fused_us,
		       p->fused_us > p->chain_us ? ", slower: forced by --force-fusion" : "");
}

static void remark_missed(struct dt_fuse *f, const struct dt_fuse_link *links,
			  int lo, int hi, enum dt_fuse_miss why)
{
	char chain[512];
	chain_text(f, links, lo, hi, chain, sizeof(chain));
	dt_diag_report(f->ctx->diag, DT_REMARK, f->m->file,
		       dt_node_get(f->m, links[lo].coll)->line, miss_tag[why],
		       "%s not fused: %s", chain, f->why);
}

/* Fuse the longest fusable window of links [lo, hi), then the rest on
 * either side. The first attempt of the whole range reports its miss. */
static void fuse_range(struct dt_fuse *f, const struct dt_fuse_link *links,
		       int lo, int hi, bool report)
{
	for (int len = hi - lo; len >= 2; len--)
		for (int s = lo; s + len <= hi; s++) {
			struct dt_fuse_plan p;
			enum dt_fuse_miss r =
			    dt_fuse_plan_window(f, links, s, s + len, &p);
			if (r == DT_FUSE_MISS_NONE &&
			    !dt_pass_rewrite_ok(
				f->ctx, "fuse-collectives",
				"fuse %s .. %s (%d collectives)",
				dt_node_name(f->m, links[s].coll),
				dt_node_name(f->m, links[s + len - 1].coll),
				len))
				continue;
			if (r == DT_FUSE_MISS_NONE) {
				uint32_t fused = rewrite(f, links, s, s + len, &p);
				remark_fired(f, links, s, s + len, &p, fused);
				fuse_range(f, links, lo, s, false);
				fuse_range(f, links, s + len, hi, false);
				return;
			}
			if (report && len == hi - lo)
				remark_missed(f, links, lo, hi, r);
		}
}

/* Build the chain starting at collective `start` and fuse what can be. */
static void fuse_chain(struct dt_fuse *f, uint32_t start)
{
	struct dt_module *m = f->m;
	enum dt_comm_kind kind =
		(enum dt_comm_kind)dt_comm_kind_of_op(dt_node_get(m, start)->op);
	struct dt_fuse_link links[DT_FUSE_MAX_LINKS + 1];
	int n = 0;
	links[0] = (struct dt_fuse_link){.coll = start};
	if (!read_link(f, &links[0]) || !(links[0].wait = wait_of(f, start)))
		return;
	f->consumed[start] = 1;
	n = 1;
	while (n < DT_FUSE_MAX_LINKS) {
		struct dt_fuse_link *cur = &links[n - 1];
		struct dt_fuse_link next = {0};
		next.coll = find_next(f, cur->wait, kind, cur->path, &cur->npath);
		if (!next.coll || f->consumed[next.coll] || !read_link(f, &next))
			break;
		next.wait = wait_of(f, next.coll);
		if (!next.wait)
			break;
		enum dt_fuse_miss r = dt_fuse_check_link(f, cur, &next);
		if (r != DT_FUSE_MISS_NONE) {
			links[n] = next;
			remark_missed(f, links, n - 1, n + 1, r);
			break;
		}
		f->consumed[next.coll] = 1;
		links[n++] = next;
	}
	links[n - 1].npath = 0;
	if (n >= 2)
		fuse_range(f, links, 0, n, true);
}

static uint32_t replacement_of(void *ud, uint32_t input)
{
	const struct dt_fuse *f = ud;
	return input < f->nuses && f->replaced[input] ? f->replaced[input]
						      : input;
}

/* Point every use of a replaced wait at its replacement: one sweep. Until
 * then a fused collective may read a replaced wait of an earlier chain; it
 * has the same metadata, so the checks in between see the same thing. */
static void replace_all(struct dt_fuse *f)
{
	dt_foreach_node(f->m, id)
		dt_node_map_inputs(f->m, id, replacement_of, f);
}

static int run_fuse_collectives(struct dt_pass_ctx *ctx)
{
	struct dt_fuse f = {.ctx = ctx, .m = ctx->m};
	f.topo = ctx->options->topology ? ctx->options->topology
					: &ctx->m->topology;
	dt_uses_fill(&f.uses, f.m);
	f.nuses = f.m->nodes.len;
	f.consumed = dt_arena_alloc(ctx->scratch, f.nuses);
	f.replaced = dt_arena_alloc(ctx->scratch, f.nuses * sizeof(uint32_t));
	/* The collectives in graph order, taken before any rewrite. A chain
	 * starts at its first link, which comes first; links fused or seen
	 * as part of an earlier chain are consumed. */
	uint32_t *colls = dt_arena_alloc(ctx->scratch, f.nuses * sizeof(uint32_t));
	uint32_t ncolls = 0;
	dt_foreach_node(f.m, id) {
		int kind = dt_comm_kind_of_op(dt_node_get(f.m, id)->op);
		if (kind >= 0 && kind != DT_COMM_ALL_TO_ALL)
			colls[ncolls++] = id;
	}
	for (uint32_t i = 0; i < ncolls; i++)
		if (!f.consumed[colls[i]] &&
		    (dt_node_get(f.m, colls[i])->flags & DT_NODE_LINKED))
			fuse_chain(&f, colls[i]);
	replace_all(&f);
	dt_uses_fini(&f.uses);
	return DT_OK;
}

const struct dt_pass dt_pass_fuse_collectives = {
	.name = "fuse-collectives",
	.help = "fuse chains of all_gather / all_reduce / reduce_scatter over disjoint mesh dims into one collective on the flattened group",
	.requires = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.preserves = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.run = run_fuse_collectives,
};

