// SPDX-License-Identifier: MIT
/* lns.c: large-neighbourhood search (internal.h, struct dt_lns). A step
 * takes a ball of K nodes around a random node, holds every other node at
 * its strategy (folding the edges to them into the ball's node costs),
 * reduces the ball's problem and solves what is left by variable
 * elimination or branch and bound: when either finishes within its budget
 * the ball is re-solved exactly, the
 * best plan among all that differ from the current one only inside the
 * ball. The step keeps the new plan when it costs no more and the caller's
 * accept hook agrees. Cost per step: O(K) plus the ball's reduction and
 * search. */
#include "internal.h"

#include <math.h>
#include <string.h>

#define BALL_MAX 48        /* nodes in a ball */
#define BALL_WORK (1 << 18) /* variable elimination of a ball's core, up to
			       this many table entries; else */
#define BALL_BNB_NODES 16  /* branch and bound what it reduces to, up */
#define BALL_VISITS 10000  /* to this many nodes and visits */

static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void dt_lns_init(struct dt_lns *l, struct dt_local *ls, uint64_t *const *orders,
		 uint64_t seed)
{
	memset(l, 0, sizeof(*l));
	const struct dt_solve_problem *p = ls->p;
	size_t sz = (size_t)p->nnodes + 1;
	l->ls = ls;
	l->orders = orders;
	l->rng = seed * 0x9E3779B97F4A7C15ull + 0x1234567;
	l->k = p->nnodes < 24 ? p->nnodes : 24;
	l->id = dt_malloc(sizeof(int32_t) * sz);
	l->nodes = dt_malloc(sizeof(int32_t) * sz);
	l->cur = dt_malloc(sizeof(int32_t) * sz);
	l->plan = dt_malloc(sizeof(int32_t) * sz);
	l->sub.nodes = dt_calloc(sz, sizeof(*l->sub.nodes));
	l->sub.edges = dt_calloc((size_t)p->nedges + 1, sizeof(*l->sub.edges));
	l->sub_orders = dt_calloc(2 * (size_t)p->nedges + 1, sizeof *l->sub_orders);
	for (int32_t v = 0; v < p->nnodes; v++)
		l->id[v] = -1;
}

void dt_lns_fini(struct dt_lns *l)
{
	for (int32_t i = 0; i < l->ls->p->nnodes; i++)
		dt_free(l->sub.nodes[i].cost);
	dt_free(l->sub.nodes);
	dt_free(l->sub.edges);
	dt_free(l->sub_orders);
	dt_free(l->id);
	dt_free(l->nodes);
	dt_free(l->cur);
	dt_free(l->plan);
}

/* Breadth-first from `root` up to K nodes. */
static void grow(struct dt_lns *l, int32_t root)
{
	const struct dt_local *ls = l->ls;
	const struct dt_solve_problem *p = ls->p;
	l->n = 0;
	l->nodes[l->n++] = root;
	l->id[root] = 0;
	for (int32_t head = 0; head < l->n && l->n < l->k; head++) {
		int32_t v = l->nodes[head];
		for (int32_t i = ls->adj.off[v]; i < ls->adj.off[v + 1] && l->n < l->k; i++) {
			int32_t u = dt_edge_other(p, ls->adj.edge[i], v);
			if (l->id[u] < 0) {
				l->id[u] = l->n;
				l->nodes[l->n++] = u;
			}
		}
	}
}

/* The ball's problem: its nodes with the edges leaving the ball folded into
 * their costs (towards the current strategies); edges inside aliased. */
static void build(struct dt_lns *l)
{
	const struct dt_local *ls = l->ls;
	const struct dt_solve_problem *p = ls->p;
	struct dt_solve_problem *s = &l->sub;
	s->nnodes = l->n;
	s->nedges = 0;
	s->usage_limit = -1;
	for (int32_t i = 0; i < l->n; i++) {
		int32_t v = l->nodes[i];
		const struct dt_solve_node *nd = &p->nodes[v];
		struct dt_solve_node *sn = &s->nodes[i];
		sn->start = sn->end = 0;
		sn->nstrategies = nd->nstrategies;
		sn->usage = nd->usage;
		sn->cost = dt_realloc(sn->cost, sizeof(int64_t) * (size_t)nd->nstrategies);
		memcpy(sn->cost, nd->cost, sizeof(int64_t) * (size_t)nd->nstrategies);
		l->cur[i] = ls->x[v];
		double pv = l->price ? l->price[v] * l->price_scale : 0;
		for (int32_t k = 0; pv > 0 && k < nd->nstrategies; k++) {
			double extra = floor(pv * (double)nd->usage[k]);
			sn->cost[k] = !(extra < 9e18) ? DT_SOLVE_INFINITE
				: dt_solve_add(sn->cost[k], (int64_t)extra);
		}
		for (int32_t j = ls->adj.off[v]; j < ls->adj.off[v + 1]; j++) {
			int32_t e = ls->adj.edge[j], u = dt_edge_other(p, e, v);
			if (l->id[u] >= 0) {
				if (p->edges[e].from != v)
					continue;
				for (int k = 0; k < 2; k++)
					l->sub_orders[2 * s->nedges + k] =
						l->orders ? l->orders[2 * e + k] : NULL;
				s->edges[s->nedges++] = (struct dt_solve_edge){
					i, l->id[u], p->edges[e].cost};
				continue;
			}
			for (int32_t k = 0; k < nd->nstrategies; k++)
				sn->cost[k] = dt_solve_add(sn->cost[k],
							   dt_edge_cost(p, e, v, k, ls->x[u]));
		}
	}
}

/* Solve the ball's problem into l->plan; returns whether exactly. */
static bool solve_ball(struct dt_lns *l, bool (*stop)(void *), void *ud)
{
	struct dt_solve_reduction red;
	dt_solve_reduce(&l->sub, l->sub_orders, &red);
	const struct dt_solve_problem *c = &red.r;
	int32_t *x = dt_malloc(sizeof(int32_t) * ((size_t)c->nnodes + 1));
	dt_solve_reduction_restrict(&red, l->cur, x);
	dt_wide cost;
	bool exact = c->nedges == 0 || dt_eliminate(c, BALL_WORK, x, &cost) ||
		     (c->nnodes <= BALL_BNB_NODES &&
		      dt_exact_search(c, BALL_VISITS, x, &cost) > 0);
	struct dt_local core;
	dt_local_init(&core, c);
	dt_local_set(&core, x);
	dt_local_descend(&core, stop, ud);
	dt_solve_reduction_expand(&red, core.x, l->plan);
	dt_local_fini(&core);
	dt_free(x);
	dt_solve_reduction_fini(&red);
	return exact;
}

/* Move the ball's nodes to `to`. */
static void apply(struct dt_lns *l, const int32_t *to)
{
	for (int32_t i = 0; i < l->n; i++)
		if (l->ls->x[l->nodes[i]] != to[i])
			dt_local_move(l->ls, l->nodes[i], to[i]);
}

bool dt_lns_ball(struct dt_lns *l, int32_t root, bool (*stop)(void *), void *ud)
{
	grow(l, root);
	build(l);
	bool exact = solve_ball(l, stop, ud);
	for (int32_t i = 0; i < l->n; i++)
		l->id[l->nodes[i]] = -1;
	return exact;
}

void dt_lns_run(struct dt_lns *l, int64_t steps, bool (*stop)(void *), void *ud)
{
	struct dt_local *ls = l->ls;
	const struct dt_solve_problem *p = ls->p;
	int32_t n = p->nnodes;
	bool whole = false;
	for (int64_t step = 0; step < steps && n > 0 && !whole; step++) {
		if (stop && stop(ud))
			break;
		grow(l, (int32_t)(next_random(&l->rng) % (uint64_t)n));
		build(l);
		bool exact = solve_ball(l, stop, ud);
		if (dt_plan_cost(&l->sub, l->plan) <= dt_plan_cost(&l->sub, l->cur)) {
			apply(l, l->plan);
			if (l->accept && !l->accept(l->accept_ud, l))
				apply(l, l->cur);
		}
		whole = exact && l->n == n; /* nothing left to improve */
		for (int32_t i = 0; i < l->n; i++)
			l->id[l->nodes[i]] = -1;
		int32_t most = n < BALL_MAX ? n : BALL_MAX;
		if (exact)
			l->k = l->k + l->k / 8 + 1 < most ? l->k + l->k / 8 + 1 : most;
		else
			l->k = l->k - l->k / 8 > 4 ? l->k - l->k / 8 : 4;
	}
}
