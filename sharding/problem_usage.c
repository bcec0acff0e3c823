// SPDX-License-Identifier: MIT
/* problem_usage.c: the memory half of the whole-graph problem (semantics
 * §6.6): per strategy, the per-rank bytes a problem node holds, as the
 * interpreter holds its buffers (a view holds none: its base's bytes; a
 * pinned result is held at its pin, a published result by its publisher,
 * the copy a move makes by the input's copy node), and per node the
 * interval it holds them over: from its position in graph order to its
 * last reader's, a reader aliasing it counting with its own last reader;
 * graph inputs throughout.
 *
 *   x ─ mm(x, w) ─ view ─ relu     mm's buffer: [pos(mm), pos(relu) + 1)
 *
 * Time: O(nodes + uses) besides the strategies' usages. */
#include "problem_internal.h"
#include "views.h"

#include <string.h>

#define NONE UINT32_MAX

/* What the usage pass reads of a problem being built. */
struct usage_builder {
	struct dt_shard_problem *pr;
	struct dt_module *m;
	struct dt_shard_edges *edges;       /* its copy nodes' inputs, the
					       moves' transients */
	const uint32_t *pos;                /* graph node -> position */
};

double dt_shard_local_bytes(const struct dt_mesh *mesh,
			  const struct dt_rule_tensor *t,
			  const struct dt_placements *pl)
{
	double n = dt_dtype_size((enum dt_dtype)t->dtype);
	for (int d = 0; d < t->rank; d++)
		n *= (double)dt_shard_largest(pl, mesh->shape, d, t->shape[d]);
	return n;
}

/* Result r of graph node `g` as the rules see it (shape, dtype). */
static struct dt_rule_tensor result_tensor(const struct dt_module *m,
					   const struct dt_node *g, uint32_t r)
{
	struct dt_rule_tensor rt = {0};
	if (r >= g->ntensors)
		return rt;
	const struct dt_tensor *t = dt_node_tensor(m, g, (int)r);
	int rank;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	rt.dtype = t->dtype;
	if (rank > DT_MAX_RANK)
		return rt;
	rt.rank = (uint8_t)rank;
	memcpy(rt.shape, shape, (size_t)rank * sizeof *shape);
	return rt;
}

/* Per-rank bytes of result r of graph node `g` under pl. */
static double value_bytes(const struct dt_module *m, uint16_t mesh,
			  const struct dt_node *g, uint32_t r,
			  const struct dt_placements *pl)
{
	if (r >= g->ntensors || mesh >= m->meshes.len)
		return 0;
	const struct dt_tensor *t = dt_node_tensor(m, g, (int)r);
	struct dt_rule_tensor rt = {.dtype = t->dtype};
	int rank;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	if (rank > DT_MAX_RANK)
		return 0;
	rt.rank = (uint8_t)rank;
	memcpy(rt.shape, shape, (size_t)rank * sizeof *shape);
	return dt_shard_local_bytes(&m->meshes.data[mesh], &rt, pl);
}

bool dt_shard_view_holder(const struct dt_shard_problem *pr,
			  const struct dt_module *m, uint32_t id)
{
	return dt_node_get(m, id)->op != DT_OP_GETITEM &&
	       dt_shard_aliases(pr, m, id);
}

/* Whether some strategy of pinned problem node k gives its pin (the
 * strategies reaching it by reductions or slices come in any order). */
static bool gives_pin(const struct dt_shard_problem *pr, uint32_t k)
{
	const struct dt_shard_pnode *n = &pr->pnodes.data[k];
	for (int32_t s = 0; s < pr->solve.nodes[k].nstrategies; s++)
		if (dt_placements_equal(&dt_shard_problem_pl(pr, k, s)[0],
					&n->pin))
			return true;
	return false;
}

bool dt_shard_aliases(const struct dt_shard_problem *pr,
		      const struct dt_module *m, uint32_t id)
{
	const struct dt_node *g = dt_node_get(m, id);
	if (g->kind != DT_NODE_CALL || !g->nargs ||
	    dt_node_arg(m, g, 0)->kind != DT_ARG_NODE ||
	    !(g->op == DT_OP_GETITEM || dt_op_has(g->op, DT_OPF_VIEW) ||
	      dt_is_view_step(m, g)))
		return false;
	uint32_t k = pr->of_node.data[id];
	const struct dt_shard_pnode *n = k == NONE ? NULL : &pr->pnodes.data[k];
	if (n && n->node == id && n->carries)
		return false;
	/* A pinned view none of whose strategies gives the pin: its users
	 * read the copy after it. */
	return !(n && n->node == id && n->pinned && !gives_pin(pr, k));
}

/* Per-rank bytes node k holds of its result r under strategy s (see
 * dt_shard_held_bytes). */
static double held_result_bytes(const struct dt_shard_problem *pr,
				const struct dt_module *m,
				const uint32_t *published, uint32_t k,
				int32_t s, uint32_t r)
{
	const struct dt_shard_pnode *n = &pr->pnodes.data[k];
	const struct dt_placements *pl = dt_shard_problem_pl(pr, k, s);
	if (published && r < 32 && (published[k] >> r & 1))
		return 0;
	bool moved = n->pinned && r == 0 && !dt_placements_equal(&pl[0], &n->pin);
	if (dt_shard_aliases(pr, m, n->node) && !moved)
		return 0;
	return value_bytes(m, n->mesh, dt_node_get(m, n->node), r,
			   n->pinned && r == 0 ? &n->pin : &pl[r]);
}

int64_t dt_shard_held_bytes(const struct dt_shard_problem *pr,
			    const struct dt_module *m, const uint32_t *published,
			    uint32_t k, int32_t s)
{
	double bytes = 0;
	for (uint32_t r = 0; r < pr->pnodes.data[k].nout; r++)
		bytes += held_result_bytes(pr, m, published, k, s, r);
	return (int64_t)bytes;
}

/* ends[id]: just after the last reader of graph node id's buffer: an
 * output's reader at npos, a reader aliasing it (dt_shard_aliases()) at its own
 * end, any other at its position + 1. */
static void alias_ends(const struct usage_builder *b, uint32_t npos,
		       uint32_t *ends)
{
	struct dt_module *m = b->m;
	uint32_t *order = dt_calloc((size_t)npos + 1, sizeof *order);
	dt_foreach_node(m, id)
	{
		order[b->pos[id]] = id;
	}
	struct dt_uses u;
	dt_uses_fill(&u, m);
	for (uint32_t p = npos; p-- > 0;) {
		uint32_t id = order[p];
		ends[id] = p + 1;
		for (uint32_t j = u.first[id]; j < u.first[id + 1]; j++) {
			uint32_t user = u.list[j];
			const struct dt_node *g = dt_node_get(m, user);
			uint32_t end = g->kind == DT_NODE_OUTPUT ? npos
				       : dt_shard_aliases(b->pr, m, user) &&
					       dt_node_arg(m, g, 0)->v.node == id
					   ? ends[user]
					   : b->pos[user] + 1;
			if (end > ends[id])
				ends[id] = end;
		}
	}
	dt_uses_fini(&u);
	dt_free(order);
}

/* Publisher k of result r of problem node h: where h has one strategy
 * (a pinned input, a fixed node), the publisher's strategy giving h's
 * placements moves nothing and holds no bytes of its own: the value is
 * h's. */
static void unmoved_alias(struct dt_shard_problem *pr, uint32_t k, uint32_t h,
			  uint32_t r)
{
	struct dt_solve_node *pub = &pr->solve.nodes[k];
	if (pr->solve.nodes[h].nstrategies != 1)
		return;
	const struct dt_placements *held = dt_shard_result_pl(pr, h, 0, r);
	for (int32_t j = 0; j < pub->nstrategies; j++)
		if (dt_placements_equal(dt_shard_result_pl(pr, k, j, 0), held))
			pub->usage[j] = 0;
}

/* The base of the chain of views ending at graph node v (v itself when
 * it is no view), each the only reader of the one before: a node of one
 * result, not a graph input, not a view, whose only reader is the
 * chain; NONE when there is none. */
static uint32_t sole_base(const struct usage_builder *b,
			  const struct dt_uses *u, uint32_t v)
{
	struct dt_shard_problem *pr = b->pr;
	while (dt_uses_count(u, v) == 1 && dt_shard_view_holder(pr, b->m, v))
		v = dt_node_arg(b->m, dt_node_get(b->m, v), 0)->v.node;
	uint32_t base = pr->of_node.data[v];
	if (dt_uses_count(u, v) != 1 || base == NONE ||
	    pr->pnodes.data[base].node != v || pr->pnodes.data[base].nout != 1 ||
	    pr->pnodes.data[base].kind == DT_PNODE_SOURCE ||
	    dt_shard_aliases(pr, b->m, v))
		return NONE;
	return base;
}

/* Pinned view k (a gradient's transpose) gives the pin under some of its
 * strategies and not under others (P(sum), all-reduced to the pin after
 * it): where it ends a sole chain of views over a base, the base's bytes
 * live on at the pin either way, as the view over it or as the move's
 * copy while the move's collective frees the base: k carries them (its
 * pin's bytes whatever its strategy, dt_shard_aliases() false) and the
 * base ends at it. (Where the strategy gives the pin the two count once
 * more at k's position only.) */
static void carried_view(const struct usage_builder *b, const struct dt_uses *u,
			 uint32_t k)
{
	struct dt_shard_problem *pr = b->pr;
	struct dt_shard_pnode *n = &pr->pnodes.data[k];
	const struct dt_node *g = dt_node_get(b->m, n->node);
	if (!n->pinned || n->kind == DT_PNODE_SOURCE ||
	    !dt_shard_aliases(pr, b->m, n->node) || g->op == DT_OP_GETITEM)
		return;
	bool moved = false;
	for (int32_t s = 1; s < pr->solve.nodes[k].nstrategies && !moved; s++)
		moved = !dt_placements_equal(&dt_shard_problem_pl(pr, k, s)[0],
					     &n->pin);
	if (moved && sole_base(b, u, dt_node_arg(b->m, g, 0)->v.node) != NONE)
		n->carries = true;
}

/* Copy node q of carried view c's input (carried_view()): under the
 * strategies whose placements read make c move its result to the pin
 * after it, the move's collective reads the base while writing c's copy,
 * so q holds the base's bytes (at the placements read) at c's position
 * too; the base ends before c (where c gives the pin, c's bytes are the
 * base's, aliased). */
static void carried_copy(const struct usage_builder *b, const struct dt_uses *u,
			 uint32_t q)
{
	struct dt_shard_problem *pr = b->pr;
	const struct dt_shard_input *in =
	    &b->edges->copies.data[q - b->edges->first_copy];
	const struct dt_shard_pnode *c = &pr->pnodes.data[in->consumer];
	if (!c->carries || c->node != pr->pnodes.data[q].node)
		return;
	const struct dt_node *g = dt_node_get(b->m, c->node);
	if (dt_node_arg(b->m, g, 0)->v.node != in->tensor.node)
		return;
	uint32_t base = sole_base(b, u, in->tensor.node);
	struct dt_solve_node *sq = &pr->solve.nodes[q];
	struct dt_rule_tensor out = result_tensor(b->m, g, 0);
	int32_t nc = pr->solve.nodes[in->consumer].nstrategies;
	for (int32_t s = 0; s < sq->nstrategies; s++) {
		const struct dt_placements *read = dt_shard_problem_pl(pr, q, s);
		for (int32_t t = 0; t < nc; t++) {
			const struct dt_placements *pl =
			    dt_shard_problem_pl(pr, in->consumer, t);
			if (!dt_placements_equal(&pl[c->nout + in->index], read))
				continue;
			if (!dt_placements_equal(&pl[0], &c->pin))
				sq->usage[s] += (int64_t)(
				    dt_shard_local_bytes(
					&b->m->meshes.data[c->mesh],
					&in->tensor, read) +
				    dt_shard_edges_move_transient(
					b->edges, c->mesh, &out, &pl[0],
					&c->pin));
			break;
		}
	}
	if (base != NONE)
		pr->solve.nodes[base].end = b->pos[c->node];
}

/* Copy node k's reader c is a view of value v: where v is a chain of
 * views, each the only reader of the one before, over a base (one
 * result, not an input, not a view) nothing else reads, and c ends the
 * chain, the base's bytes live on in c whether moved or not: the copy
 * node holds them (its bytes at the placements read) and the base's
 * buffer ends at c. (An earlier link's copy still counts to the chain's
 * end: two moves in one chain are counted twice.) */
static void sole_view(const struct usage_builder *b, const struct dt_uses *u,
		      uint32_t k)
{
	struct dt_shard_problem *pr = b->pr;
	const struct dt_shard_input *in =
	    &b->edges->copies.data[k - b->edges->first_copy];
	uint32_t c = pr->pnodes.data[k].node, v = in->tensor.node;
	uint32_t next = dt_uses_count(u, c) == 1 ? u->list[u->first[c]] : NONE;
	uint32_t nk = next == NONE ? NONE : pr->of_node.data[next];
	if (next != NONE && (dt_shard_view_holder(pr, b->m, next) ||
			     (nk != NONE && pr->pnodes.data[nk].node == next &&
			      pr->pnodes.data[nk].carries)))
		return; /* the chain goes on: its last view's copy node, or a
			   carried view's (carried_copy()) */
	if (dt_shard_edges_pin_phase(b->edges, c) != DT_SHARD_UNBUCKETED)
		return; /* only the output reads it: the move joins a bucket,
			   at the end, the base held until then */
	uint32_t base = sole_base(b, u, v);
	if (base == NONE)
		return;
	struct dt_solve_node *sn = &pr->solve.nodes[k];
	for (int32_t s = 0; s < (int32_t)pr->pnodes.data[k].kept; s++)
		sn->usage[s] = (int64_t)dt_shard_local_bytes(
		    &b->m->meshes.data[pr->pnodes.data[k].mesh], &in->tensor,
		    dt_shard_problem_pl(pr, k, s));
	pr->solve.nodes[base].end = b->pos[c] + 1;
}

/* Result node for the results of problem node k (strategies `ns`)
 * whose bit is set in `which`, held over [from, to): per strategy of k
 * their bytes, and the edge tying its strategy to k's. */
static void add_result_node(const struct usage_builder *b,
			    const uint32_t *published, uint32_t k,
			    uint32_t which, int64_t from, int64_t to)
{
	struct dt_shard_problem *pr = b->pr;
	int32_t ns = pr->solve.nodes[k].nstrategies;
	struct dt_shard_pnode v = {
	    .node = pr->pnodes.data[k].node,
	    .mesh = pr->pnodes.data[k].mesh,
	    .kind = DT_PNODE_RESULT,
	    .first = pr->compute_us.len,
	    .pl = pr->placements.len,
	};
	uint32_t q = dt_vec_push(&pr->pnodes, v);
	struct dt_solve_node sn = {.nstrategies = ns, .start = from, .end = to};
	sn.cost = dt_calloc((size_t)ns, sizeof *sn.cost);
	sn.usage = dt_calloc((size_t)ns, sizeof *sn.usage);
	for (int32_t s = 0; s < ns; s++) {
		double bytes = 0;
		for (uint32_t r = 0; r < 32; r++)
			if (which >> r & 1)
				bytes += held_result_bytes(pr, b->m, published,
							   k, s, r);
		sn.usage[s] = (int64_t)bytes;
		dt_vec_push(&pr->compute_us, 0.0);
		dt_vec_push(&pr->pin_us, 0.0);
		dt_vec_push(&pr->bucket_joins, 0);
	}
	pr->solve.nodes = dt_realloc(pr->solve.nodes,
				     ((size_t)q + 2) * sizeof *pr->solve.nodes);
	pr->solve.nodes[q] = sn;
	pr->solve.edges = dt_realloc(pr->solve.edges,
				     ((size_t)pr->solve.nedges + 2) *
					 sizeof *pr->solve.edges);
	struct dt_solve_edge *e = &pr->solve.edges[pr->solve.nedges++];
	e->from = (int32_t)k;
	e->to = (int32_t)q;
	e->cost = dt_malloc((size_t)ns * (size_t)ns * sizeof *e->cost);
	for (int32_t s = 0; s < ns; s++)
		for (int32_t t = 0; t < ns; t++)
			e->cost[(size_t)s * (size_t)ns + (size_t)t] =
			    s == t ? 0 : DT_SOLVE_INFINITE;
}

/* A node of several results holds them all from its position, each to
 * its own getitems' last reader (a layer norm's output read soon, its
 * mean and rstd kept for the backward; a result nothing reads, one
 * position): the node's interval ends at the earliest end, and the
 * results living on go to a result node per later end. */
static void several_results(const struct usage_builder *b,
			    const uint32_t *published, const uint32_t *ends)
{
	struct dt_shard_problem *pr = b->pr;
	struct dt_module *m = b->m;
	uint32_t nodes = pr->pnodes.len;
	uint32_t *first = dt_calloc((size_t)nodes + 1, sizeof *first);
	for (uint32_t k = 0; k < nodes; k++)
		first[k + 1] = first[k] + pr->pnodes.data[k].nout;
	uint32_t *rend = dt_calloc((size_t)first[nodes] + 1, sizeof *rend);
	dt_foreach_node(m, id)
	{
		const struct dt_node *g = dt_node_get(m, id);
		uint32_t k = pr->of_node.data[id], r = pr->result.data[id];
		if (g->op != DT_OP_GETITEM || k == NONE ||
		    pr->publish.data[id] != NONE || r >= pr->pnodes.data[k].nout)
			continue;
		if (ends[id] > rend[first[k] + r])
			rend[first[k] + r] = ends[id];
	}
	for (uint32_t k = 0; k < nodes; k++) {
		/* add_result_node() grows pr->pnodes and pr->solve.nodes: no
		 * pointer into them is held across it. */
		uint32_t nout = pr->pnodes.data[k].nout;
		uint8_t kind = pr->pnodes.data[k].kind;
		if (nout < 2 || kind == DT_PNODE_PUBLISH || kind == DT_PNODE_COPY)
			continue;
		int64_t start = pr->solve.nodes[k].start, end[32];
		int64_t earliest = INT64_MAX, latest = start + 1;
		for (uint32_t r = 0; r < nout; r++) {
			int64_t e = rend[first[k] + r] ? rend[first[k] + r]
						       : start + 1;
			latest = e > latest ? e : latest;
			if (r < 32 && !(published[k] >> r & 1) && e < earliest)
				earliest = e;
			if (r < 32)
				end[r] = e;
		}
		if (nout > 32) { /* past the bit masks (no such op but a view
				    or an unknown one): all to the latest end */
			pr->solve.nodes[k].end = latest;
			continue;
		}
		if (earliest == INT64_MAX)
			continue;
		pr->solve.nodes[k].end = earliest;
		uint32_t done = 0;
		for (uint32_t r = 0; r < nout; r++) {
			if ((published[k] >> r & 1) || end[r] == earliest ||
			    (done >> r & 1))
				continue;
			uint32_t which = 0;
			for (uint32_t q = r; q < nout; q++)
				if (!(published[k] >> q & 1) && end[q] == end[r])
					which |= 1u << q;
			done |= which;
			add_result_node(b, published, k, which, earliest,
					end[r]);
		}
	}
	dt_free(rend);
	dt_free(first);
}

void dt_shard_usage_build(struct dt_shard_problem *pr, struct dt_module *m,
			  struct dt_shard_edges *e, const uint32_t *pos,
			  uint32_t npos)
{
	const struct usage_builder ub = {pr, m, e, pos}, *b = &ub;
	uint32_t *ends = dt_calloc((size_t)m->nodes.len + 1, sizeof *ends);
	uint32_t *published =
	    dt_calloc((size_t)pr->pnodes.len + 1, sizeof *published);
	struct dt_uses u;
	dt_uses_fill(&u, m);
	for (uint32_t k = 0; k < e->first_copy; k++)
		carried_view(b, &u, k);
	alias_ends(b, npos, ends);
	dt_foreach_node(m, id)
	{
		uint32_t r = pr->result.data[id];
		if (pr->publish.data[id] != NONE && r < 32)
			published[pr->of_node.data[id]] |= 1u << r;
	}
	for (uint32_t k = 0; k < pr->pnodes.len; k++) {
		const struct dt_shard_pnode *n = &pr->pnodes.data[k];
		struct dt_solve_node *sn = &pr->solve.nodes[k];
		const struct dt_node *g = dt_node_get(m, n->node);
		sn->start = b->pos[n->node];
		sn->end = ends[n->node];
		if (n->kind == DT_PNODE_SOURCE) {
			if (g->op != DT_OP_REDISTRIBUTE)
				sn->end = npos;
		} else if (n->kind == DT_PNODE_PUBLISH) {
			uint32_t h = pr->of_node.data[n->node];
			if (pr->pnodes.data[h].kind == DT_PNODE_SOURCE)
				unmoved_alias(pr, k, h, pr->result.data[n->node]);
			if (dt_shard_view_holder(pr, m, n->node)) /* its link's copy node */
				memset(sn->usage, 0, (size_t)sn->nstrategies *
							 sizeof *sn->usage);
		} else if (n->kind == DT_PNODE_COPY) {
			/* A graph input's move too is made at its reader, as
			 * lowering emits it (bucket-collectives, which would
			 * issue it at the start, comes later). */
			if (!dt_shard_aliases(pr, m, n->node))
				sn->end = sn->start + 1;
			else
				sole_view(b, &u, k);
		} else {
			if (g->ntensors > 1) /* its getitems' below */
				sn->end = sn->start + 1;
			for (int32_t s = 0; s < sn->nstrategies; s++)
				sn->usage[s] =
				    dt_shard_held_bytes(pr, m, published, k, s);
		}
	}
	for (uint32_t q = e->first_copy; q < e->first_copy + e->copies.len; q++)
		carried_copy(b, &u, q);
	several_results(b, published, ends);
	dt_uses_fini(&u);
	dt_free(published);
	dt_free(ends);
}
