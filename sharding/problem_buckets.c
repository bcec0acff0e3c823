// SPDX-License-Identifier: MIT
/* problem_buckets.c: the bucket nodes of the whole-graph problem
 * (semantics §6.6). A move whose collectives bucket-collectives merges
 * with others (a graph input's, a pinned value's to its pin when only the
 * output reads it: problem_moves.c prices them at their bytes term) joins
 * the bucket of each collective's key; the bucket's latency is paid once,
 * by a bucket node the moves' deciders switch on:
 *
 *   w1 (S(0)) ─ mm1      bucket all_gather dp f32: [unused 0, used 8 µs]
 *   w2 (S(0)) ─ mm2      edges mm1→bucket, mm2→bucket: ∞ where the
 *                        strategy reads its weight gathered (R) and the
 *                        bucket is unused, else 0
 *
 * A move's decider is the node whose strategy fixes both its ends: a
 * graph input has one strategy, so its consumer (or publisher) decides
 * its moves; a pinned node decides its move to its pin.
 *
 * Time: one cached move per (input of a graph input, consumer strategy),
 * then one pass over the joining nodes' strategies per bucket they join. */
#include "problem_internal.h"

#include <string.h>

/* OR into pr->bucket_joins, per strategy of the producer, the buckets
 * the move of input `in` to where its consumer reads it at its pin
 * (dt_shard_edges_input_bucketed_at_pin) joins. */
static void join_at_pin(struct dt_shard_edges *e, struct dt_shard_problem *pr,
			const struct dt_shard_input *in)
{
	const struct dt_placements *at_pin = dt_shard_pin_read(pr, in);
	const struct dt_shard_pnode *from = &pr->pnodes.data[in->producer];
	for (int32_t s = 0; at_pin && s < pr->solve.nodes[in->producer].nstrategies;
	     s++)
		dt_shard_edges_move_ns(
		    e, from->mesh, DT_SHARD_AT_OUTPUT, &in->tensor,
		    dt_shard_result_pl(pr, in->producer, s, in->result), at_pin,
		    &pr->bucket_joins.data[from->first + (uint32_t)s]);
}

/* OR into pr->bucket_joins, per strategy of the node deciding them, the
 * buckets inputs' moves join: a graph input's or a pinned value's, at
 * each strategy of its consumer; one a pinned view reads at its pin, at
 * each strategy of its producer. */
static void join_inputs(struct dt_shard_edges *e, struct dt_shard_problem *pr)
{
	for (uint32_t j = 0; j < e->inputs.len; j++) {
		const struct dt_shard_input *in = &e->inputs.data[j];
		const struct dt_shard_pnode *from = &pr->pnodes.data[in->producer];
		const struct dt_shard_pnode *to = &pr->pnodes.data[in->consumer];
		if (from->mesh != to->mesh)
			continue;
		if (dt_shard_edges_input_bucketed_at_pin(e, from, to, in->result))
			join_at_pin(e, pr, in);
		enum dt_shard_phase phase =
		    dt_shard_edges_input_phase(e, from, to, in->result);
		if (phase == DT_SHARD_UNBUCKETED)
			continue;
		const struct dt_placements *src =
		    dt_shard_result_pl(pr, in->producer, 0, in->result);
		for (int32_t t = 0; t < pr->solve.nodes[in->consumer].nstrategies;
		     t++)
			dt_shard_edges_move_ns(
			    e, to->mesh, phase, &in->tensor, src,
			    &dt_shard_problem_pl(pr, in->consumer,
						 t)[to->nout + in->index],
			    &pr->bucket_joins.data[to->first + (uint32_t)t]);
	}
}

/* The bucket node of e->buckets[j], first joined by problem node k. */
static void add_bucket(struct dt_shard_edges *e, struct dt_shard_problem *pr,
		       uint32_t j, uint32_t k)
{
	struct dt_shard_bucket *bk = &e->buckets.data[j];
	struct dt_shard_pnode v = {
	    .node = pr->pnodes.data[k].node,
	    .mesh = bk->mesh,
	    .kind = DT_PNODE_BUCKET,
	    .first = pr->compute_us.len,
	    .pl = pr->placements.len,
	    .bucket = j,
	};
	bk->pnode = dt_vec_push(&pr->pnodes, v);
	struct dt_solve_node sn = {.nstrategies = 2};
	sn.cost = dt_calloc(2, sizeof *sn.cost);
	sn.usage = dt_calloc(2, sizeof *sn.usage);
	sn.cost[1] = dt_shard_ns(bk->key.latency_us);
	pr->solve.nodes[bk->pnode] = sn;
	for (int s = 0; s < 2; s++) {
		dt_vec_push(&pr->compute_us, 0.0);
		dt_vec_push(&pr->pin_us, 0.0);
		dt_vec_push(&pr->bucket_joins, 0);
	}
}

/* The edge from node k to the bucket node of e->buckets[j]. */
static void add_edge(const struct dt_shard_edges *e,
		     struct dt_shard_problem *pr, uint32_t k, uint32_t j)
{
	struct dt_solve_edge *edge = &pr->solve.edges[pr->solve.nedges++];
	int32_t n = pr->solve.nodes[k].nstrategies;
	const uint64_t *joins = &pr->bucket_joins.data[pr->pnodes.data[k].first];
	edge->from = (int32_t)k;
	edge->to = (int32_t)e->buckets.data[j].pnode;
	edge->cost = dt_calloc(2 * (size_t)n, sizeof *edge->cost);
	for (int32_t s = 0; s < n; s++)
		if (joins[s] >> j & 1)
			edge->cost[2 * (size_t)s] = DT_SOLVE_INFINITE;
}

void dt_shard_edges_buckets(struct dt_shard_edges *e,
			    struct dt_shard_problem *pr)
{
	join_inputs(e, pr);
	uint32_t nodes = pr->pnodes.len, nedges = 0;
	uint64_t *joined = dt_calloc((size_t)nodes + 1, sizeof *joined);
	for (uint32_t k = 0; k < nodes; k++) {
		const struct dt_shard_pnode *n = &pr->pnodes.data[k];
		for (int32_t s = 0; s < pr->solve.nodes[k].nstrategies; s++)
			joined[k] |= pr->bucket_joins.data[n->first + (uint32_t)s];
		nedges += (uint32_t)__builtin_popcountll(joined[k]);
	}
	pr->solve.nodes = dt_realloc(pr->solve.nodes,
				     ((size_t)nodes + e->buckets.len + 1) *
					 sizeof *pr->solve.nodes);
	pr->solve.edges = dt_realloc(pr->solve.edges,
				     ((size_t)pr->solve.nedges + nedges + 1) *
					 sizeof *pr->solve.edges);
	for (uint32_t k = 0; k < nodes; k++)
		for (uint32_t j = 0; j < e->buckets.len; j++) {
			if (!(joined[k] >> j & 1))
				continue;
			if (e->buckets.data[j].pnode == UINT32_MAX)
				add_bucket(e, pr, j, k);
			add_edge(e, pr, k, j);
		}
	pr->solve.nnodes = (int32_t)pr->pnodes.len;
	dt_free(joined);
	pr->buckets.data = e->buckets.data; /* the problem's from here */
	pr->buckets.len = e->buckets.len;
	pr->buckets.cap = e->buckets.cap;
	memset(&e->buckets, 0, sizeof e->buckets);
}
