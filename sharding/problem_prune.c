// SPDX-License-Identifier: MIT
/* problem_prune.c: the whole-graph problem's strategy pruning
 * (problem_prune.h, semantics §6.6). A mesh of 3 dims gives a matmul
 * 17^3 strategies and a GPT-2 block a billion edge matrix entries; the
 * solver needs tens per node. Each node, once enumerated, is ranked by
 * forward cost (a strategy's own cost plus the cheapest way its producers'
 * kept strategies reach its inputs: a tree's dynamic programme, which a
 * DAG's shared values over-count but orders sensibly) and cut to the cap,
 * keeping the strategies a node-by-node plan takes, so the solver's floor
 * is never lost, and the chains: the strategies that read their inputs
 * where the producers' chains leave them (as they are, a partial reduced,
 * a weight gathered, R sliced to meet a sharded operand), so an expert's
 * plan is never lost either.
 *
 *   x ─ mm (4913) ─ gelu (343)      mm: moves from x's one placement;
 *   w ─┘                            gelu: from mm's 24 kept
 *
 * Time: per input, its distinct placements over the node's strategies ×
 * the producer's distinct kept placements (planner calls, cached by the
 * caller) and × its chained placements' variants (refinement checks),
 * then a sort of the node's strategies. */
#include "problem_internal.h"
#include "problem_prune.h"

#include <stdlib.h>
#include <string.h>

/* The slices of a placement no chain reads (chain_slices). */
#define DT_PRUNE_CLOSED UINT16_MAX

/* A hash consistent with dt_placements_equal. */
static uint32_t pl_hash(const struct dt_placements *pl)
{
	uint64_t h = 1469598103934665603ull ^ pl->ndim;
	for (int m = 0; m < pl->ndim; m++) {
		const struct dt_placement *q = &pl->p[m];
		uint64_t w = q->kind;
		if (q->kind == DT_PL_PARTIAL)
			w |= (uint64_t)q->reduce << 8;
		if (q->kind == DT_PL_SHARD || q->kind == DT_PL_STRIDED_SHARD)
			w |= (uint64_t)(uint16_t)q->dim << 16 |
			     (uint64_t)pl->order_pos[m] << 32;
		if (q->kind == DT_PL_STRIDED_SHARD)
			w ^= (uint64_t)(uint32_t)q->split_factor << 40;
		h = (h ^ w) * 1099511628211ull;
	}
	return (uint32_t)(h ^ (h >> 31));
}

/* Start a set of distinct placements for up to n members. */
static void set_clear(struct dt_prune *p, uint32_t n)
{
	uint32_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	p->slots.len = 0;
	dt_vec_grow(&p->slots, cap);
	for (uint32_t k = 0; k < cap; k++)
		p->slots.data[k] = UINT32_MAX;
	p->distinct.len = 0;
}

/* The index of pl in the set (added when new). */
static uint32_t set_index(struct dt_prune *p, const struct dt_placements *pl)
{
	uint32_t mask = p->slots.len - 1;
	for (uint32_t h = pl_hash(pl) & mask;; h = (h + 1) & mask) {
		uint32_t at = p->slots.data[h];
		if (at == UINT32_MAX) {
			p->slots.data[h] = p->distinct.len;
			dt_vec_push(&p->distinct, pl);
			return p->slots.data[h];
		}
		if (dt_placements_equal(p->distinct.data[at], pl))
			return at;
	}
}

/* The index of pl in the set, or UINT32_MAX. */
static uint32_t set_find(const struct dt_prune *p, const struct dt_placements *pl)
{
	uint32_t mask = p->slots.len - 1;
	for (uint32_t h = pl_hash(pl) & mask;; h = (h + 1) & mask) {
		uint32_t at = p->slots.data[h];
		if (at == UINT32_MAX || dt_placements_equal(p->distinct.data[at], pl))
			return at;
	}
}

/* First s of least v[s]. */
static int32_t argmin(const int64_t *v, int32_t n)
{
	int32_t best = 0;
	for (int32_t s = 1; s < n; s++)
		if (v[s] < v[best])
			best = s;
	return best;
}

static int by_forward(const void *a, const void *b)
{
	const struct dt_prune_rank *x = a, *y = b;
	if (x->fwd != y->fwd)
		return x->fwd < y->fwd ? -1 : 1;
	return x->s < y->s ? -1 : x->s > y->s;
}

/* Append to p->variants what a chain may hold of a value at q: q, and q
 * with any of its partial mesh dims (from a graph input, of its sharded
 * ones) made R: an all-reduce, a weight's all-gather. */
static void add_variants(struct dt_prune *p, const struct dt_placements *q,
			 bool source)
{
	int dims[DT_MAX_MESH_DIMS], nd = 0;
	for (int m = 0; m < q->ndim; m++)
		if (q->p[m].kind == DT_PL_PARTIAL ||
		    (source && q->p[m].kind != DT_PL_REPLICATE))
			dims[nd++] = m;
	for (uint32_t mask = 0; mask < 1u << nd; mask++) {
		struct dt_placements v = *q;
		for (int j = 0; j < nd; j++)
			if (mask & 1u << j)
				v.p[dims[j]] = (struct dt_placement){
				    .kind = DT_PL_REPLICATE};
		if (mask)
			dt_placements_default_order(&v);
		dt_vec_push(&p->variants, v);
	}
}

/* The mesh dims (bit m) whose R a chain holding a value at v (one of
 * add_variants') slices to read it at dst, each rank keeping its chunk of
 * what it holds (dt_placements_refine: no data moves), or reads as a
 * partial (R -> P: no data moves either; Megatron's row-parallel linear
 * adds its replicated bias into a partial sum so); DT_PRUNE_CLOSED where
 * dst is neither. 0: v itself. */
static uint16_t chain_slices(const struct dt_placements *v,
			     const struct dt_placements *dst)
{
	struct dt_placements held = *v;
	for (int m = 0; m < v->ndim; m++)
		if (v->p[m].kind == DT_PL_REPLICATE &&
		    dst->p[m].kind == DT_PL_PARTIAL)
			held.p[m] = dst->p[m];
	if (!dt_placements_refine(&held, dst, DT_MAX_RANK))
		return DT_PRUNE_CLOSED;
	uint16_t slices = 0;
	for (int m = 0; m < v->ndim; m++)
		if (v->p[m].kind != dst->p[m].kind)
			slices |= (uint16_t)(1u << m);
	return slices;
}

/* Per placement d of the set, p->reach[d]: the fewest slices a chain
 * takes to read it (chain_slices from a variant of one of the producer's
 * chained strategies, whose distinct placements p->seen marks;
 * DT_PRUNE_CLOSED: no chain reads it), and p->dmin[d] lowered by the
 * moves from those strategies, so that a chain is weighed as the chain it
 * is: a partial the producer keeps, read as it is, is no cheaper to reach
 * from the producer's best (replicated, sharded) placements, which no
 * redistribution makes partial. */
static void weigh_chains(struct dt_prune *p, uint32_t i,
			 const struct dt_prune_input *in, dt_prune_move move,
			 void *ud)
{
	const uint8_t *chained = &p->chained.data[p->first.data[in->producer]];
	p->seen.len = p->vsrc.len = p->variants.len = 0;
	dt_vec_grow(&p->seen, p->qf.len);
	memset(p->seen.data, 0, p->qf.len);
	for (int32_t s = 0; s < in->nsrc; s++) {
		uint32_t q = set_find(p, in->src[s]);
		if (!chained[s] || p->seen.data[q])
			continue;
		p->seen.data[q] = 1;
		uint32_t from = p->variants.len;
		add_variants(p, in->src[s], in->source);
		for (uint32_t v = from; v < p->variants.len; v++)
			dt_vec_push(&p->vsrc, q);
	}
	uint32_t nd = p->distinct.len;
	p->reach.len = 0;
	dt_vec_grow(&p->reach, nd);
	for (uint32_t d = 0; d < nd; d++) {
		const struct dt_placements *dst = p->distinct.data[d];
		uint32_t last = UINT32_MAX;
		p->reach.data[d] = DT_PRUNE_CLOSED;
		for (uint32_t v = 0; v < p->variants.len; v++) {
			uint32_t q = p->vsrc.data[v];
			uint16_t sl = chain_slices(&p->variants.data[v], dst);
			if (sl == DT_PRUNE_CLOSED)
				continue;
			if (p->reach.data[d] == DT_PRUNE_CLOSED ||
			    __builtin_popcount(sl) <
				__builtin_popcount(p->reach.data[d]))
				p->reach.data[d] = sl;
			if (q == last) /* its other variants: the same move */
				continue;
			last = q;
			int64_t c = dt_shard_add_sat(
			    p->qf.data[q], move(ud, i, p->distinct.data[q], dst));
			if (c < p->dmin.data[d])
				p->dmin.data[d] = c;
		}
	}
}

/* Add input `in`'s cheapest arrivals into p->lb, and its moves from the
 * producer's node-by-node choices into p->nb and p->gr; and how a chain
 * reads it (weigh_chains) into p->sliced, p->held and p->from. */
static void weigh_input(struct dt_prune *p, uint32_t i,
			const struct dt_prune_input *in, int32_t n,
			dt_prune_move move, void *ud)
{
	/* The producer's distinct placements, each at its least forward
	 * cost. */
	const int64_t *f = &p->fwd.data[p->first.data[in->producer]];
	set_clear(p, (uint32_t)in->nsrc);
	p->qf.len = 0;
	for (int32_t s = 0; s < in->nsrc; s++) {
		uint32_t q = set_index(p, in->src[s]);
		if (q == p->qf.len)
			dt_vec_push(&p->qf, f[s]);
		else if (f[s] < p->qf.data[q])
			p->qf.data[q] = f[s];
	}
	uint32_t nq = p->distinct.len;
	const struct dt_placements *fl = in->src[p->floor.data[in->producer]];
	const struct dt_placements *gr = in->src[p->greedy.data[in->producer]];
	uint32_t qfl = set_index(p, fl), qgr = set_index(p, gr);
	/* Those of least forward cost are the sources weighed. */
	p->order.len = 0;
	dt_vec_grow(&p->order, nq);
	for (uint32_t q = 0; q < nq; q++)
		p->order.data[q] = (struct dt_prune_rank){p->qf.data[q], (int32_t)q};
	qsort(p->order.data, nq, sizeof *p->order.data, by_forward);
	if (nq > DT_SHARD_PRUNE_SOURCES)
		nq = DT_SHARD_PRUNE_SOURCES;
	/* The node's distinct input placements after them. */
	set_clear(p, (uint32_t)in->nsrc + (uint32_t)n);
	for (int32_t s = 0; s < in->nsrc; s++)
		set_index(p, in->src[s]);
	p->idx.len = 0;
	dt_vec_grow(&p->idx, (uint32_t)n);
	for (int32_t s = 0; s < n; s++)
		p->idx.data[s] = set_index(p, &in->dst[(size_t)s * in->stride]);
	uint32_t nd = p->distinct.len;
	p->dmin.len = p->dfl.len = p->dgr.len = 0;
	dt_vec_grow(&p->dmin, nd);
	dt_vec_grow(&p->dfl, nd);
	dt_vec_grow(&p->dgr, nd);
	for (uint32_t d = 0; d < nd; d++) {
		const struct dt_placements *dst = p->distinct.data[d];
		p->dfl.data[d] = move(ud, i, fl, dst);
		p->dgr.data[d] = qgr == qfl ? p->dfl.data[d] : move(ud, i, gr, dst);
		int64_t best = dt_shard_add_sat(p->qf.data[qfl], p->dfl.data[d]);
		int64_t alt = dt_shard_add_sat(p->qf.data[qgr], p->dgr.data[d]);
		best = alt < best ? alt : best;
		for (uint32_t j = 0; j < nq && p->order.data[j].fwd < best; j++) {
			uint32_t q = (uint32_t)p->order.data[j].s;
			if (q == qfl || q == qgr)
				continue;
			int64_t c = dt_shard_add_sat(p->qf.data[q],
					    move(ud, i, p->distinct.data[q], dst));
			best = c < best ? c : best;
		}
		p->dmin.data[d] = best;
	}
	weigh_chains(p, i, in, move, ud);
	int32_t *from = &p->from.data[(size_t)i * (size_t)n];
	for (int32_t s = 0; s < n; s++) {
		uint32_t d = p->idx.data[s];
		uint16_t sl = p->reach.data[d];
		const struct dt_placements *dst = p->distinct.data[d];
		from[s] = d < p->qf.len && p->seen.data[d] ? (int32_t)d : -1;
		p->sliced.data[s] |= sl;
		for (int m = 0; sl != DT_PRUNE_CLOSED && m < dst->ndim; m++)
			if ((dst->p[m].kind == DT_PL_SHARD ||
			     dst->p[m].kind == DT_PL_STRIDED_SHARD) &&
			    !(sl & 1u << m))
				p->held.data[s] |= (uint16_t)(1u << m);
		p->lb.data[s] = dt_shard_add_sat(p->lb.data[s], p->dmin.data[d]);
		p->nb.data[s] = dt_shard_add_sat(p->nb.data[s], p->dfl.data[d]);
		p->gr.data[s] = dt_shard_add_sat(p->gr.data[s], p->dgr.data[d]);
	}
}

/* Mark in keep[] the first p->cap strategies of p->order that give a
 * result 0 none before gives (consumers see a node only through its
 * results: among strategies giving the same, the one of least forward
 * cost would be the tree's choice), then, while fewer, the next ones in
 * order. */
static void take_best(struct dt_prune *p, int32_t n,
		      const struct dt_placements *res, uint32_t res_stride,
		      uint8_t *keep)
{
	set_clear(p, (uint32_t)n);
	p->idx.len = 0;
	dt_vec_grow(&p->idx, (uint32_t)n);
	uint32_t taken = 0;
	for (int32_t j = 0; j < n && taken < p->cap; j++) {
		int32_t s = p->order.data[j].s;
		uint32_t before = p->distinct.len;
		p->idx.data[j] = 0;
		if (res && set_index(p, &res[(size_t)s * res_stride]) < before)
			continue;
		p->idx.data[j] = 1;
		keep[s] = 1;
		taken++;
	}
	for (int32_t j = 0; j < n && taken < p->cap; j++)
		if (!p->idx.data[j]) {
			keep[p->order.data[j].s] = 1;
			taken++;
		}
}

/* The finite-cost strategy of least usage (ties: least forward cost, then
 * the earlier), or 0. */
static int32_t least_usage(const struct dt_prune *p, int32_t n,
			   const int64_t *cost, const int64_t *usage)
{
	int32_t best = -1;
	for (int32_t s = 0; s < n; s++)
		if (cost[s] != DT_SOLVE_INFINITE &&
		    (best < 0 || usage[s] < usage[best] ||
		     (usage[s] == usage[best] &&
		      p->lb.data[s] < p->lb.data[best])))
			best = s;
	return best < 0 ? 0 : best;
}

static bool all_replicated(const struct dt_placements *pl)
{
	for (int d = 0; d < pl->ndim; d++)
		if (pl->p[d].kind != DT_PL_REPLICATE)
			return false;
	return true;
}

/* Keep, per anchor and for all-replicated, the strategy of least forward
 * cost (ties: the earlier) whose result 0 gives it. */
static void keep_anchored(const struct dt_prune *p, int32_t n,
			  const struct dt_placements *res, uint32_t res_stride,
			  uint8_t *keep)
{
	for (uint32_t a = 0; a <= p->anchors.len; a++) {
		int32_t best = -1;
		for (int32_t s = 0; s < n; s++) {
			const struct dt_placements *r =
			    &res[(size_t)s * res_stride];
			if ((a < p->anchors.len
				 ? dt_placements_equal(r, &p->anchors.data[a])
				 : all_replicated(r)) &&
			    p->lb.data[s] != DT_SOLVE_INFINITE &&
			    (best < 0 || p->lb.data[s] < p->lb.data[best]))
				best = s;
		}
		if (best >= 0)
			keep[best] = 1;
	}
}

/* Set p->open[s] for the strategies a chain takes: reading every input
 * where a chained strategy of its producer leaves it (weigh_chains), an
 * R sliced only on mesh dims where some input is read sharded as it is
 * (the slice meets a sharded operand: a batch-sharded bmm reading a
 * replicated, expanded weight; not a value cut finer for its own sake). */
static void find_open(struct dt_prune *p, int32_t n)
{
	p->open.len = 0;
	dt_vec_grow(&p->open, (uint32_t)n);
	for (int32_t s = 0; s < n; s++)
		p->open.data[s] = p->sliced.data[s] != DT_PRUNE_CLOSED &&
				  !(p->sliced.data[s] & ~p->held.data[s]) &&
				  p->lb.data[s] != DT_SOLVE_INFINITE;
}

/* Whether strategy s ranks before strategy b (-1: none yet) as a chain:
 * least usage (a plan that keeps its values sharded, as an expert's
 * does, holds the least), then least forward cost, then the earlier. */
static bool chain_before(const struct dt_prune *p, const int64_t *usage,
			 int32_t s, int32_t b)
{
	return b < 0 || usage[s] < usage[b] ||
	       (usage[s] == usage[b] && p->lb.data[s] < p->lb.data[b]);
}

/* Keep, and mark chained in `chain`, for each input and each chained
 * placement of its producer, the best open strategy reading the input
 * there as it is: no chain ends at a node that can continue it (a
 * per-result choice would keep one way to make a result, where the
 * chain reaching it needs another). */
static void keep_continued(struct dt_prune *p, int32_t n, uint32_t nin,
			   const int64_t *usage, uint8_t *keep, uint8_t *chain)
{
	for (uint32_t i = 0; i < nin; i++) {
		const int32_t *from = &p->from.data[(size_t)i * (size_t)n];
		int32_t nq = 0;
		for (int32_t s = 0; s < n; s++)
			nq = from[s] >= nq ? from[s] + 1 : nq;
		p->pick.len = 0;
		dt_vec_grow(&p->pick, (uint32_t)nq);
		for (int32_t q = 0; q < nq; q++)
			p->pick.data[q] = -1;
		for (int32_t s = 0; s < n; s++)
			if (from[s] >= 0 && p->open.data[s] &&
			    chain_before(p, usage, s, p->pick.data[from[s]]))
				p->pick.data[from[s]] = s;
		for (int32_t q = 0; q < nq; q++)
			if (p->pick.data[q] >= 0)
				keep[p->pick.data[q]] = chain[p->pick.data[q]] = 1;
	}
}

/* Keep, and mark chained in `chain`, the best open strategy
 * (chain_before) of each of DT_SHARD_PRUNE_CHAINS result placements: the
 * chains that start here (reading a reduced partial, a gathered weight). */
static void keep_chained(struct dt_prune *p, int32_t n, const int64_t *usage,
			 const struct dt_placements *res, uint32_t res_stride,
			 uint8_t *keep, uint8_t *chain)
{
	for (int c = 0; c < DT_SHARD_PRUNE_CHAINS; c++) {
		int32_t best = -1;
		for (int32_t s = 0; s < n; s++)
			if (p->open.data[s] && chain_before(p, usage, s, best))
				best = s;
		if (best < 0)
			return;
		keep[best] = chain[best] = 1;
		for (int32_t s = 0; s < n; s++)
			if (p->open.data[s] &&
			    (s == best || (res && dt_placements_equal(
						      &res[(size_t)s * res_stride],
						      &res[(size_t)best * res_stride]))))
				p->open.data[s] = 0;
	}
}

uint32_t dt_prune_node(struct dt_prune *p, uint32_t k, int32_t n,
		       const int64_t *cost, const int64_t *pin,
		       const int64_t *usage,
		       const struct dt_placements *res, uint32_t res_stride,
		       const struct dt_prune_input *in, uint32_t nin,
		       dt_prune_move move, void *ud, uint8_t *keep)
{
	DT_REQUIRE(k == p->first.len && n >= 1);
	p->lb.len = p->nb.len = p->gr.len = 0;
	dt_vec_grow(&p->lb, (uint32_t)n);
	dt_vec_grow(&p->nb, (uint32_t)n);
	dt_vec_grow(&p->gr, (uint32_t)n);
	p->sliced.len = p->held.len = p->from.len = 0;
	dt_vec_grow(&p->sliced, (uint32_t)n);
	dt_vec_grow(&p->held, (uint32_t)n);
	dt_vec_grow(&p->from, (uint32_t)n * nin);
	for (int32_t s = 0; s < n; s++) {
		p->lb.data[s] = p->nb.data[s] = cost[s];
		p->gr.data[s] = pin[s];
		p->sliced.data[s] = p->held.data[s] = 0;
	}
	for (uint32_t i = 0; i < nin; i++)
		weigh_input(p, i, &in[i], n, move, ud);
	int32_t fl = argmin(p->nb.data, n), gr = argmin(p->gr.data, n);
	int32_t lu = least_usage(p, n, cost, usage);
	for (int32_t s = 0; s < n; s++)
		keep[s] = 1;
	if (p->cap && (uint32_t)n > p->cap) {
		p->order.len = 0;
		dt_vec_grow(&p->order, (uint32_t)n);
		for (int32_t s = 0; s < n; s++) {
			p->order.data[s] = (struct dt_prune_rank){p->lb.data[s], s};
			keep[s] = s == fl || s == gr || s == lu;
		}
		qsort(p->order.data, (size_t)n, sizeof *p->order.data,
		      by_forward);
		take_best(p, n, res, res_stride, keep);
		if (res)
			keep_anchored(p, n, res, res_stride, keep);
		p->capped++;
	}
	/* A node without inputs (a source, a creation op) starts chains
	 * from whatever it keeps. */
	p->mark.len = 0;
	dt_vec_grow(&p->mark, (uint32_t)n);
	memcpy(p->mark.data, keep, (size_t)n);
	if (nin) {
		memset(p->mark.data, 0, (size_t)n);
		find_open(p, n);
		keep_continued(p, n, nin, usage, keep, p->mark.data);
		keep_chained(p, n, usage, res, res_stride, keep, p->mark.data);
	}
	uint32_t kept = 0;
	for (int32_t s = 0; s < n; s++)
		kept += keep[s];
	if (n > p->widest_n) {
		p->widest_n = n;
		p->widest = k;
	}
	p->before += n;
	p->after += kept;
	dt_vec_push(&p->first, p->fwd.len);
	int32_t at = 0;
	for (int32_t s = 0; s < n; s++) {
		if (!keep[s])
			continue;
		if (s == fl)
			dt_vec_push(&p->floor, at);
		if (s == gr)
			dt_vec_push(&p->greedy, at);
		dt_vec_push(&p->fwd, p->lb.data[s]);
		dt_vec_push(&p->chained, p->mark.data[s]);
		at++;
	}
	return kept;
}

void dt_prune_fini(struct dt_prune *p)
{
	dt_vec_free(&p->first);
	dt_vec_free(&p->anchors);
	dt_vec_free(&p->fwd);
	dt_vec_free(&p->chained);
	dt_vec_free(&p->variants);
	dt_vec_free(&p->open);
	dt_vec_free(&p->seen);
	dt_vec_free(&p->sliced);
	dt_vec_free(&p->held);
	dt_vec_free(&p->reach);
	dt_vec_free(&p->vsrc);
	dt_vec_free(&p->from);
	dt_vec_free(&p->pick);
	dt_vec_free(&p->mark);
	dt_vec_free(&p->floor);
	dt_vec_free(&p->greedy);
	dt_vec_free(&p->lb);
	dt_vec_free(&p->nb);
	dt_vec_free(&p->gr);
	dt_vec_free(&p->dmin);
	dt_vec_free(&p->dfl);
	dt_vec_free(&p->dgr);
	dt_vec_free(&p->qf);
	dt_vec_free(&p->idx);
	dt_vec_free(&p->order);
	dt_vec_free(&p->slots);
	dt_vec_free(&p->distinct);
}
