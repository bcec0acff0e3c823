// SPDX-License-Identifier: MIT
/* problem_moves.c: the edges of the whole-graph problem (semantics §6.6;
 * its nodes are sharding/problem.c's). An edge joins a producer and a
 * consumer; its matrix holds, per pair of their strategies, the cost of
 * moving the value between the producer's placements and the consumer's
 * (summed over the inputs reading it), in integer ns, DT_SOLVE_INFINITE
 * where no redistribution exists. A value several inputs read gets a
 * publisher between its producer and its readers: one placement all of
 * them read it from, so a shared redistribution counts once.
 *
 *   mm (S(1) | R | …) ─┬─ add      mm's result read twice: publisher p
 *                      └─ gelu     between, edges mm→p, p→add, p→gelu
 *
 * The copy a move makes is memory the edges cannot express (the contest
 * format has node usages only): a copy node per input that may move,
 * whose strategy the two ends' choices fix (semantics §6.6).
 *
 * Time: per edge the planner on each distinct (source, target) placement
 * pair not seen before (cached by tensor and placements), then a pass
 * over the |S_from| × |S_to| matrix. */
#include "problem_internal.h"
#include "redistribute.h"

#include <string.h>

/* The most words of a move's cache key (fill_key). */
#define KEY_WORDS (1 + DT_MAX_RANK + 2 * (2 + DT_MAX_MESH_DIMS))

void dt_shard_edges_init(struct dt_shard_edges *e)
{
	struct dt_module *m = e->m;
	dt_vec_grow(&e->to_output, m->nodes.len);
	memset(e->to_output.data, 0, m->nodes.len);
	struct dt_uses u;
	dt_uses_fill(&u, m);
	/* backwards: a view's flag is known before its base's */
	for (uint32_t id = m->last; id; id = dt_node_get(m, id)->prev) {
		bool only = u.first[id] < u.first[id + 1];
		for (uint32_t j = u.first[id]; j < u.first[id + 1]; j++) {
			const struct dt_node *r = dt_node_get(m, u.list[j]);
			only &= r->kind == DT_NODE_OUTPUT ||
				(dt_shard_is_view(r) &&
				 e->to_output.data[u.list[j]]);
		}
		e->to_output.data[id] = only;
	}
	dt_uses_fini(&u);
	dt_intern_init(&e->moves);
	e->searches = dt_redist_searches_new();
}

void dt_shard_edges_fini(struct dt_shard_edges *e)
{
	dt_vec_free(&e->to_output);
	dt_vec_free(&e->inputs);
	dt_vec_free(&e->copies);
	dt_intern_fini(&e->moves);
	dt_redist_searches_free(e->searches);
	e->searches = NULL;
	dt_vec_free(&e->cost);
	dt_vec_free(&e->joins);
	dt_vec_free(&e->transient);
	dt_vec_free(&e->buckets);
}

/* Append pl to key at *n, as dt_placements_equal tells placements apart:
 * 16 bits per mesh dim (kind; a P's reduce op; a shard's tensor dim and
 * order position), four to a word, then each _S's split factor. */
static void put_placements(uint64_t *key, int *n, const struct dt_placements *pl)
{
	for (int m = 0; m < pl->ndim; m += 4) {
		uint64_t w = 0;
		for (int j = m; j < m + 4 && j < pl->ndim; j++) {
			const struct dt_placement *p = &pl->p[j];
			uint64_t f = p->kind;
			if (p->kind == DT_PL_PARTIAL)
				f |= (uint64_t)p->reduce << 2;
			if (p->kind == DT_PL_SHARD ||
			    p->kind == DT_PL_STRIDED_SHARD) {
				DT_REQUIRE(p->dim >= 0 && p->dim < DT_MAX_RANK &&
					   pl->order_pos[j] < DT_MAX_MESH_DIMS);
				f |= (uint64_t)p->dim << 6 |
				     (uint64_t)pl->order_pos[j] << 10;
			}
			w |= f << (16 * (j - m));
		}
		key[(*n)++] = w;
	}
	for (int m = 0; m < pl->ndim; m++)
		if (pl->p[m].kind == DT_PL_STRIDED_SHARD)
			key[(*n)++] = (uint32_t)pl->p[m].split_factor;
}

/* The cache key of a move into key[]; returns its words. */
static int fill_key(uint64_t *key, uint16_t mesh, enum dt_shard_phase phase,
		    const struct dt_rule_tensor *t,
		    const struct dt_placements *src,
		    const struct dt_placements *dst)
{
	int n = 0;
	key[n++] = t->dtype | (uint64_t)t->rank << 8 | (uint64_t)mesh << 16 |
		   (uint64_t)phase << 32 | (uint64_t)src->ndim << 40;
	for (int d = 0; d < t->rank; d++)
		key[n++] = (uint64_t)t->shape[d];
	put_placements(key, &n, src);
	put_placements(key, &n, dst);
	return n;
}

/* The index of the bucket of key k on mesh `mesh` in phase `phase` among
 * e->buckets (added when new), or -1 when DT_SHARD_MAX_BUCKETS are known
 * already. */
static int bucket_index(struct dt_shard_edges *e, uint16_t mesh,
			enum dt_shard_phase phase,
			const struct dt_shard_bucket_key *k)
{
	for (uint32_t j = 0; j < e->buckets.len; j++)
		if (e->buckets.data[j].mesh == mesh &&
		    e->buckets.data[j].phase == phase &&
		    dt_shard_bucket_key_equal(&e->buckets.data[j].key, k))
			return (int)j;
	if (e->buckets.len == DT_SHARD_MAX_BUCKETS)
		return -1;
	struct dt_shard_bucket b = {.key = *k, .mesh = mesh,
				    .phase = (uint8_t)phase,
				    .pnode = UINT32_MAX};
	return (int)dt_vec_push(&e->buckets, b);
}

/* The cache entry of the move (computed when new). */
static uint32_t move_entry(struct dt_shard_edges *e, uint16_t mesh,
			   enum dt_shard_phase phase,
			   const struct dt_rule_tensor *t,
			   const struct dt_placements *src,
			   const struct dt_placements *dst)
{
	uint64_t key[KEY_WORDS];
	int n = fill_key(key, mesh, phase, t, src, dst);
	uint32_t k = dt_intern(&e->moves, key, (size_t)n * sizeof *key) - 1;
	if (k < e->cost.len)
		return k;
	struct dt_redist_merge_options merge = {
	    .module = e->m,
	    .mesh = mesh,
	    .create_groups = e->create_groups,
	    .price_only = true,
	};
	struct dt_shard_move_keys keys = {0};
	double transient = 0;
	struct dt_shard_lowering low = {.merge = &merge,
					.bucketed = phase != DT_SHARD_UNBUCKETED,
					.mode = e->redistribute, .keys = &keys,
					.transient = &transient,
					.searches = e->searches};
	double us = dt_shard_move_cost(&e->m->meshes.data[mesh], e->topology,
				       t, src, dst, &low);
	uint64_t joined = 0;
	for (int i = 0; i < keys.n && isfinite(us); i++) {
		int j = bucket_index(e, mesh, phase, &keys.key[i]);
		if (j < 0)
			us += keys.key[i].latency_us;
		else
			joined |= 1ull << j;
	}
	dt_vec_push(&e->cost, dt_shard_ns(us));
	dt_vec_push(&e->joins, isfinite(us) ? joined : 0);
	dt_vec_push(&e->transient, isfinite(us) ? transient : 0);
	return k;
}

int64_t dt_shard_edges_move_ns(struct dt_shard_edges *e, uint16_t mesh,
			       enum dt_shard_phase phase,
			       const struct dt_rule_tensor *t,
			       const struct dt_placements *src,
			       const struct dt_placements *dst, uint64_t *joins)
{
	if (dt_placements_equal(src, dst))
		return 0;
	uint32_t k = move_entry(e, mesh, phase, t, src, dst);
	if (joins)
		*joins |= e->joins.data[k];
	return e->cost.data[k];
}

double dt_shard_edges_move_transient(struct dt_shard_edges *e, uint16_t mesh,
				     const struct dt_rule_tensor *t,
				     const struct dt_placements *src,
				     const struct dt_placements *dst)
{
	if (dt_placements_equal(src, dst))
		return 0;
	/* move_entry() may grow e->transient: index it after the call. */
	uint32_t k = move_entry(e, mesh, DT_SHARD_UNBUCKETED, t, src, dst);
	return e->transient.data[k];
}

double dt_shard_edges_move_us(struct dt_shard_edges *e, uint16_t mesh,
			      enum dt_shard_phase phase,
			      const struct dt_rule_tensor *t,
			      const struct dt_placements *src,
			      const struct dt_placements *dst, uint64_t *joins)
{
	int64_t ns = dt_shard_edges_move_ns(e, mesh, phase, t, src, dst,
					    joins);
	return ns == DT_SOLVE_INFINITE ? INFINITY : (double)ns / 1000;
}

/* Index of pl in list (appended when new). */
static uint32_t distinct(struct dt_placements **list, uint32_t *len,
			 uint32_t *cap, const struct dt_placements *pl)
{
	for (uint32_t k = 0; k < *len; k++)
		if (dt_placements_equal(&(*list)[k], pl))
			return k;
	if (*len == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*list = dt_realloc(*list, *cap * sizeof **list);
	}
	(*list)[*len] = *pl;
	return (*len)++;
}

/* Whether the consumer's strategy t reads input `in` where an earlier
 * input of it, of the inputs[0 .. n) before it, reads the same value:
 * lowering moves it once (shard-prop shares a value's redistribution to
 * given placements). */
static bool read_before(const struct dt_shard_problem *pr,
			const struct dt_shard_input *in,
			const struct dt_shard_input *before, uint32_t n,
			int32_t t)
{
	const struct dt_placements *pl = dt_shard_problem_pl(pr, in->consumer, t);
	uint32_t nout = pr->pnodes.data[in->consumer].nout;
	for (uint32_t j = 0; j < n; j++)
		if (before[j].producer == in->producer &&
		    before[j].result == in->result &&
		    dt_placements_equal(&pl[nout + before[j].index],
					&pl[nout + in->index]))
			return true;
	return false;
}

const struct dt_placements *dt_shard_pin_read(const struct dt_shard_problem *pr,
					      const struct dt_shard_input *in)
{
	const struct dt_shard_pnode *to = &pr->pnodes.data[in->consumer];
	const struct dt_placements *read = NULL;
	for (int32_t t = 0; to->pinned &&
			    t < pr->solve.nodes[in->consumer].nstrategies;
	     t++) {
		const struct dt_placements *pl =
		    dt_shard_problem_pl(pr, in->consumer, t);
		if (!dt_placements_equal(&pl[0], &to->pin))
			continue;
		if (read && !dt_placements_equal(read, &pl[to->nout + in->index]))
			return NULL;
		read = &pl[to->nout + in->index];
	}
	return read;
}

/* Add input `in`'s moves into its edge's matrix, but where an earlier
 * input of its consumer, of the n before it, reads the value at the same
 * placements. */
static void cost_input(struct dt_shard_edges *e,
		       const struct dt_shard_problem *pr,
		       const struct dt_shard_input *in,
		       const struct dt_shard_input *before, uint32_t n,
		       struct dt_solve_edge *edge)
{
	const struct dt_shard_pnode *from = &pr->pnodes.data[in->producer];
	const struct dt_shard_pnode *to = &pr->pnodes.data[in->consumer];
	int32_t nf = pr->solve.nodes[in->producer].nstrategies;
	int32_t nt = pr->solve.nodes[in->consumer].nstrategies;
	uint32_t *fi = dt_malloc((size_t)(nf + nt) * sizeof *fi);
	uint32_t *ti = fi + nf;
	struct dt_placements *src = NULL, *dst = NULL;
	uint32_t ns = 0, nd = 0, cs = 0, cd = 0;
	for (int32_t s = 0; s < nf; s++)
		fi[s] = distinct(&src, &ns, &cs,
				 dt_shard_result_pl(pr, in->producer, s, in->result));
	for (int32_t s = 0; s < nt; s++)
		ti[s] = distinct(
		    &dst, &nd, &cd,
		    &dt_shard_problem_pl(pr, in->consumer, s)[to->nout +
							       in->index]);
	enum dt_shard_phase phase =
	    dt_shard_edges_input_phase(e, from, to, in->result);
	const struct dt_placements *at_pin =
	    dt_shard_edges_input_bucketed_at_pin(e, from, to, in->result)
		? dt_shard_pin_read(pr, in)
		: NULL;
	int64_t *table = dt_malloc((size_t)ns * nd * sizeof *table);
	for (uint32_t i = 0; i < ns; i++)
		for (uint32_t j = 0; j < nd; j++)
			table[i * nd + j] =
			    from->mesh != to->mesh
				? DT_SOLVE_INFINITE
				: dt_shard_edges_move_ns(
				      e, to->mesh,
				      at_pin && dt_placements_equal(at_pin, &dst[j])
					  ? DT_SHARD_AT_OUTPUT
					  : phase,
				      &in->tensor, &src[i], &dst[j], NULL);
	for (int32_t t = 0; t < nt; t++) {
		if (read_before(pr, in, before, n, t))
			continue;
		for (int32_t s = 0; s < nf; s++) {
			int64_t *c =
			    &edge->cost[(size_t)s * (size_t)nt + (size_t)t];
			*c = dt_shard_add_sat(*c, table[fi[s] * nd + ti[t]]);
		}
	}
	dt_free(table);
	dt_free(src);
	dt_free(dst);
	dt_free(fi);
}

/* The value node `holder` makes, published at one placement for all its
 * readers: a DT_PNODE_PUBLISH node between its producer and the inputs
 * reading it (whose edges are rewritten to start there). */
static void add_publisher(struct dt_shard_edges *e,
			  struct dt_shard_problem *pr, uint32_t holder)
{
	uint32_t k = pr->of_node.data[holder], r = pr->result.data[holder];
	int32_t nk = pr->solve.nodes[k].nstrategies;
	struct dt_placements *cand = NULL;
	uint32_t n = 0, cap = 0;
	for (int32_t s = 0; s < nk; s++)
		distinct(&cand, &n, &cap, dt_shard_result_pl(pr, k, s, r));
	struct dt_shard_input link = {0};
	for (uint32_t j = 0; j < e->inputs.len; j++) {
		struct dt_shard_input *in = &e->inputs.data[j];
		if (in->tensor.node != holder)
			continue;
		const struct dt_shard_pnode *c = &pr->pnodes.data[in->consumer];
		for (int32_t s = 0; s < pr->solve.nodes[in->consumer].nstrategies;
		     s++)
			distinct(&cand, &n, &cap,
				 &dt_shard_problem_pl(pr, in->consumer,
						      s)[c->nout + in->index]);
		link = *in;
	}
	struct dt_shard_pnode v = {
	    .node = holder,
	    .mesh = pr->pnodes.data[k].mesh,
	    .kind = DT_PNODE_PUBLISH,
	    .width = 1,
	    .first = pr->compute_us.len,
	    .pl = pr->placements.len,
	};
	uint32_t at = dt_vec_push(&pr->pnodes, v);
	pr->publish.data[holder] = at;
	struct dt_solve_node sn = {.nstrategies = (int32_t)n};
	sn.cost = dt_calloc(n, sizeof *sn.cost);
	sn.usage = dt_calloc(n, sizeof *sn.usage);
	for (uint32_t j = 0; j < n; j++)
		sn.usage[j] = (int64_t)dt_shard_local_bytes(
		    &e->m->meshes.data[v.mesh], &link.tensor, &cand[j]);
	pr->solve.nodes[at] = sn;
	for (uint32_t j = 0; j < n; j++) {
		dt_vec_push(&pr->placements, cand[j]);
		dt_vec_push(&pr->compute_us, 0.0);
		dt_vec_push(&pr->pin_us, 0.0);
		dt_vec_push(&pr->bucket_joins, 0);
	}
	dt_free(cand);
	for (uint32_t j = 0; j < e->inputs.len; j++) {
		struct dt_shard_input *in = &e->inputs.data[j];
		if (in->tensor.node == holder) {
			in->producer = at;
			in->result = 0;
		}
	}
	link.consumer = at;
	link.index = 0;
	link.producer = k;
	link.result = r;
	dt_vec_push(&e->inputs, link);
}

void dt_shard_edges_publish(struct dt_shard_edges *e,
			    struct dt_shard_problem *pr)
{
	DT_VEC(uint32_t) readers = {0};
	dt_vec_grow(&readers, e->m->nodes.len);
	memset(readers.data, 0, readers.len * sizeof *readers.data);
	uint32_t ninputs = e->inputs.len;
	for (uint32_t j = 0; j < ninputs; j++)
		readers.data[e->inputs.data[j].tensor.node]++;
	for (uint32_t id = 0; id < readers.len; id++) {
		if (readers.data[id] < 2)
			continue;
		const struct dt_shard_pnode *k =
		    &pr->pnodes.data[pr->of_node.data[id]];
		const struct dt_node *g = dt_node_get(e->m, id);
		bool pinned = k->pinned && pr->result.data[id] == 0;
		if (pinned || (g->op == DT_OP_GETITEM &&
			       dt_node_sharding(e->m, g)))
			continue;
		add_publisher(e, pr, id);
	}
	dt_vec_free(&readers);
}

/* Whether placements pl are among list's n. */
static bool among(const struct dt_placements *list, uint32_t n,
		  const struct dt_placements *pl)
{
	for (uint32_t k = 0; k < n; k++)
		if (dt_placements_equal(&list[k], pl))
			return true;
	return false;
}

/* The copy node of input `in`, when some pair of its ends' placements
 * differs. */
static void add_copy(struct dt_shard_edges *e, struct dt_shard_problem *pr,
		     const struct dt_shard_input *in)
{
	const struct dt_shard_pnode *to = &pr->pnodes.data[in->consumer];
	if (pr->pnodes.data[in->producer].mesh != to->mesh)
		return;
	struct dt_placements *src = NULL, *dst = NULL, *cand = NULL;
	uint32_t ns = 0, nd = 0, nc = 0, cs = 0, cd = 0, cc = 0;
	for (int32_t s = 0; s < pr->solve.nodes[in->producer].nstrategies; s++)
		distinct(&src, &ns, &cs,
			 dt_shard_result_pl(pr, in->producer, s, in->result));
	for (int32_t s = 0; s < pr->solve.nodes[in->consumer].nstrategies; s++)
		distinct(&dst, &nd, &cd,
			 &dt_shard_problem_pl(pr, in->consumer,
					      s)[to->nout + in->index]);
	if (ns > 1 || nd > 1 || !dt_placements_equal(&src[0], &dst[0])) {
		for (uint32_t j = 0; j < nd; j++) /* read in place */
			if (among(src, ns, &dst[j]))
				distinct(&cand, &nc, &cc, &dst[j]);
		uint32_t kept = nc;
		for (uint32_t j = 0; j < nd; j++) /* copied */
			if (ns > 1 || !dt_placements_equal(&src[0], &dst[j])) {
				if (nc == cc) {
					cc = cc ? 2 * cc : 16;
					cand = dt_realloc(cand, cc * sizeof *cand);
				}
				cand[nc++] = dst[j];
			}
		struct dt_shard_pnode v = {
		    .node = to->node,
		    .mesh = to->mesh,
		    .kind = DT_PNODE_COPY,
		    .width = 1,
		    .first = pr->compute_us.len,
		    .pl = pr->placements.len,
		    .kept = kept,
		};
		struct dt_solve_node sn = {.nstrategies = (int32_t)nc};
		sn.cost = dt_calloc(nc, sizeof *sn.cost);
		sn.usage = dt_calloc(nc, sizeof *sn.usage);
		for (uint32_t j = kept; j < nc; j++)
			sn.usage[j] = (int64_t)dt_shard_local_bytes(
			    &e->m->meshes.data[v.mesh], &in->tensor, &cand[j]);
		pr->solve.nodes[dt_vec_push(&pr->pnodes, v)] = sn;
		for (uint32_t j = 0; j < nc; j++) {
			dt_vec_push(&pr->placements, cand[j]);
			dt_vec_push(&pr->compute_us, 0.0);
			dt_vec_push(&pr->pin_us, 0.0);
			dt_vec_push(&pr->bucket_joins, 0);
		}
		dt_vec_push(&e->copies, *in);
	}
	dt_free(src);
	dt_free(dst);
	dt_free(cand);
}

void dt_shard_edges_copies(struct dt_shard_edges *e,
			   struct dt_shard_problem *pr)
{
	uint32_t n = pr->pnodes.len + e->inputs.len;
	pr->solve.nodes = dt_realloc(pr->solve.nodes,
				     (n + 1) * sizeof *pr->solve.nodes);
	memset(&pr->solve.nodes[pr->pnodes.len], 0,
	       (e->inputs.len + 1) * sizeof *pr->solve.nodes);
	e->first_copy = pr->pnodes.len;
	for (uint32_t j = 0; j < e->inputs.len; j++) {
		const struct dt_shard_input *in = &e->inputs.data[j];
		const struct dt_shard_pnode *to = &pr->pnodes.data[in->consumer];
		if (to->kind != DT_PNODE_PUBLISH ||
		    dt_shard_view_holder(pr, e->m, to->node))
			add_copy(e, pr, in);
	}
}

/* The two edges of copy node q (of input `in`): from the producer (no
 * copy exactly where it gives the placements read) and from the
 * consumer (the placements it reads). */
static void copy_edges(struct dt_shard_problem *pr, uint32_t q,
		       const struct dt_shard_input *in)
{
	const struct dt_shard_pnode *c = &pr->pnodes.data[q];
	int32_t nq = pr->solve.nodes[q].nstrategies;
	uint32_t ends[2] = {in->producer, in->consumer};
	for (int k = 0; k < 2; k++) {
		struct dt_solve_edge *edge = &pr->solve.edges[pr->solve.nedges++];
		int32_t nf = pr->solve.nodes[ends[k]].nstrategies;
		edge->from = (int32_t)ends[k];
		edge->to = (int32_t)q;
		edge->cost = dt_calloc((size_t)nf * (size_t)nq, sizeof *edge->cost);
		const struct dt_shard_pnode *f = &pr->pnodes.data[ends[k]];
		for (int32_t s = 0; s < nf; s++) {
			const struct dt_placements *pl =
			    k == 0 ? dt_shard_result_pl(pr, ends[0], s, in->result)
				   : &dt_shard_problem_pl(pr, ends[1], s)[f->nout + in->index];
			for (int32_t t = 0; t < nq; t++) {
				bool same = dt_placements_equal(
				    pl, dt_shard_problem_pl(pr, q, t));
				bool ok = k == 1 ? same
						 : same == ((uint32_t)t < c->kept);
				edge->cost[(size_t)s * (size_t)nq + (size_t)t] =
				    ok ? 0 : DT_SOLVE_INFINITE;
			}
		}
	}
}

void dt_shard_edges_build(struct dt_shard_edges *e,
			  struct dt_shard_problem *pr)
{
	pr->solve.edges = dt_calloc(e->inputs.len + 2 * e->copies.len + 1,
				    sizeof *pr->solve.edges);
	uint32_t first_of_consumer = 0, first_input = 0;
	for (uint32_t k = 0; k < e->inputs.len; k++) {
		const struct dt_shard_input *in = &e->inputs.data[k];
		if (k && in->consumer != e->inputs.data[k - 1].consumer) {
			first_of_consumer = (uint32_t)pr->solve.nedges;
			first_input = k;
		}
		struct dt_solve_edge *edge = NULL;
		for (uint32_t j = first_of_consumer;
		     j < (uint32_t)pr->solve.nedges; j++)
			if (pr->solve.edges[j].from == (int32_t)in->producer)
				edge = &pr->solve.edges[j];
		if (!edge) {
			edge = &pr->solve.edges[pr->solve.nedges++];
			edge->from = (int32_t)in->producer;
			edge->to = (int32_t)in->consumer;
			size_t n = (size_t)pr->solve.nodes[in->producer]
				       .nstrategies *
				   (size_t)pr->solve.nodes[in->consumer]
				       .nstrategies;
			edge->cost = dt_calloc(n, sizeof *edge->cost);
		}
		cost_input(e, pr, in, &e->inputs.data[first_input],
			   k - first_input, edge);
	}
	for (uint32_t j = 0; j < e->copies.len; j++)
		copy_edges(pr, e->first_copy + j, &e->copies.data[j]);
}
