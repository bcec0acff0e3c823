// SPDX-License-Identifier: MIT
/* lns.c: large-neighbourhood search for problems without a limit (the
 * priced cores of lagrange.c, internal.h dt_lns_run). A step takes a ball of
 * K nodes around a random node, holds every other node at its strategy
 * (folding the edges to them into the ball's node costs), reduces the
 * ball's problem and solves what is left by branch and bound: when that
 * finishes within its budget the ball is re-solved exactly, which
 * is the best plan among all that differ from the current one only inside
 * the ball; otherwise descent settles what is left. A step never makes the
 * plan worse. Cost per step: O(K) plus the ball's reduction. */
#include "internal.h"

#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#define BALL_VISITS 20000 /* branch and bound of what a ball reduces to */

struct ball {
	int32_t *id;     /* [nnodes]: index in the ball or -1 */
	int32_t *nodes;  /* [K] */
	int32_t n;
	struct dt_solve_problem sub;
	int32_t *cur, *plan;
};

/* Breadth-first from `root` up to `k` nodes. */
static void grow(struct ball *b, const struct dt_local *ls, int32_t root, int32_t k)
{
	const struct dt_solve_problem *p = ls->p;
	b->n = 0;
	b->nodes[b->n++] = root;
	b->id[root] = 0;
	for (int32_t head = 0; head < b->n && b->n < k; head++) {
		int32_t v = b->nodes[head];
		for (int32_t i = ls->adj.off[v]; i < ls->adj.off[v + 1] && b->n < k; i++) {
			int32_t u = dt_edge_other(p, ls->adj.edge[i], v);
			if (b->id[u] < 0) {
				b->id[u] = b->n;
				b->nodes[b->n++] = u;
			}
		}
	}
}

/* The ball's problem: its nodes with the edges leaving the ball folded into
 * their costs (towards the current strategies), the edges inside aliased. */
static void build(struct ball *b, const struct dt_local *ls)
{
	const struct dt_solve_problem *p = ls->p;
	struct dt_solve_problem *s = &b->sub;
	s->nnodes = b->n;
	s->nedges = 0;
	s->usage_limit = -1;
	for (int32_t i = 0; i < b->n; i++) {
		int32_t v = b->nodes[i];
		const struct dt_solve_node *nd = &p->nodes[v];
		struct dt_solve_node *sn = &s->nodes[i];
		sn->start = sn->end = 0;
		sn->nstrategies = nd->nstrategies;
		sn->usage = nd->usage;
		sn->cost = dt_realloc(sn->cost, sizeof(int64_t) * (size_t)nd->nstrategies);
		memcpy(sn->cost, nd->cost, sizeof(int64_t) * (size_t)nd->nstrategies);
		b->cur[i] = ls->x[v];
		for (int32_t j = ls->adj.off[v]; j < ls->adj.off[v + 1]; j++) {
			int32_t e = ls->adj.edge[j], u = dt_edge_other(p, e, v);
			if (b->id[u] >= 0) {
				if (p->edges[e].from == v)
					s->edges[s->nedges++] = (struct dt_solve_edge){
						i, b->id[u], p->edges[e].cost};
				continue;
			}
			for (int32_t k = 0; k < nd->nstrategies; k++)
				sn->cost[k] = dt_solve_add(sn->cost[k],
							   dt_edge_cost(p, e, v, k, ls->x[u]));
		}
	}
}

/* Re-solve the ball; returns whether it reduced to nothing (exact). */
static bool solve_ball(struct ball *b, struct dt_local *ls, bool (*stop)(void *),
		       void *ud)
{
	struct dt_reduction red;
	dt_reduce(&b->sub, &red);
	const struct dt_solve_problem *c = &red.r;
	bool exact = c->nedges == 0;
	int32_t *x = dt_malloc(sizeof(int32_t) * ((size_t)c->nnodes + 1));
	for (int32_t i = 0; i < c->nnodes; i++) {
		int32_t want = b->cur[red.orig_node[i]], best = 0;
		for (int32_t s = 0; s < c->nodes[i].nstrategies; s++) {
			if (red.orig_strat[i][s] == want) {
				best = s;
				break;
			}
			if (c->nodes[i].cost[s] < c->nodes[i].cost[best])
				best = s;
		}
		x[i] = best;
	}
	if (!exact)
		exact = dt_exact_search(c, BALL_VISITS, x) >= 0;
	struct dt_local core;
	dt_local_init(&core, c);
	dt_local_set(&core, x);
	if (!exact)
		dt_local_descend(&core, stop, ud);
	dt_reduction_expand(&red, core.x, b->plan);
	dt_local_fini(&core);
	dt_free(x);
	dt_reduction_fini(&red);
	if (dt_solve_plan_cost(&b->sub, b->plan, NULL) <=
	    dt_solve_plan_cost(&b->sub, b->cur, NULL))
		for (int32_t i = 0; i < b->n; i++)
			if (b->plan[i] != b->cur[i])
				dt_local_move(ls, b->nodes[i], b->plan[i]);
	return exact;
}

bool dt_lns_run(struct dt_local *ls, int64_t steps, uint64_t *rng,
		bool (*stop)(void *), void *ud)
{
	const struct dt_solve_problem *p = ls->p;
	int32_t n = p->nnodes;
	if (n == 0)
		return true;
	struct ball b = {0};
	size_t sz = (size_t)n + 1;
	b.id = dt_malloc(sizeof(int32_t) * sz);
	b.nodes = dt_malloc(sizeof(int32_t) * sz);
	b.cur = dt_malloc(sizeof(int32_t) * sz);
	b.plan = dt_malloc(sizeof(int32_t) * sz);
	b.sub.nodes = dt_calloc(sz, sizeof(*b.sub.nodes));
	b.sub.edges = dt_calloc((size_t)p->nedges + 1, sizeof(*b.sub.edges));
	for (int32_t v = 0; v < n; v++)
		b.id[v] = -1;
	int32_t k = n < 24 ? n : 24;
	bool whole = false;
	for (int64_t step = 0; step < steps && !whole; step++) {
		if (stop && stop(ud))
			break;
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		grow(&b, ls, (int32_t)(*rng % (uint64_t)n), k);
		build(&b, ls);
		bool exact = solve_ball(&b, ls, stop, ud);
		whole = exact && b.n == n;
		for (int32_t i = 0; i < b.n; i++)
			b.id[b.nodes[i]] = -1;
		if (exact)
			k = k + k / 8 + 1 < n ? k + k / 8 + 1 : n;
		else
			k = k - k / 8 > 4 ? k - k / 8 : 4;
	}
	if (getenv("DT_SOLVE_DEBUG")) fprintf(stderr, "lns n %d k %d cost %ld\n", n, k, (long)ls->cost);
	for (int32_t i = 0; i < n; i++)
		dt_free(b.sub.nodes[i].cost);
	dt_free(b.sub.nodes);
	dt_free(b.sub.edges);
	dt_free(b.id);
	dt_free(b.nodes);
	dt_free(b.cur);
	dt_free(b.plan);
	return whole;
}
