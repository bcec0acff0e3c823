// SPDX-License-Identifier: MIT
/* search.c: the moves every search is made of: a plan with its cost and
 * usage profile changed one node at a time (delta, fit, move), steepest
 * descent that keeps within the usage limit, and an exhaustive branch and
 * bound for small problems (what makes the solver exact on them). */
#include "internal.h"

#include <string.h>

void dt_local_init(struct dt_local *ls, const struct dt_solve_problem *p)
{
	memset(ls, 0, sizeof(*ls));
	ls->p = p;
	dt_adjacency_init(&ls->adj, p);
	dt_timeline_init(&ls->tl, p);
	dt_profile_init(&ls->prof, ls->tl.nseg);
	ls->x = dt_calloc((size_t)p->nnodes + 1, sizeof(int32_t));
	ls->queued = dt_calloc((size_t)p->nnodes + 1, sizeof(bool));
}

void dt_local_fini(struct dt_local *ls)
{
	dt_adjacency_fini(&ls->adj);
	dt_timeline_fini(&ls->tl);
	dt_profile_fini(&ls->prof);
	dt_free(ls->x);
	dt_free(ls->queued);
	dt_vec_free(&ls->queue);
}

void dt_local_set(struct dt_local *ls, const int32_t *x)
{
	const struct dt_solve_problem *p = ls->p;
	memcpy(ls->x, x, sizeof(int32_t) * (size_t)p->nnodes);
	ls->cost = dt_plan_cost(p, x);
	dt_profile_clear(&ls->prof);
	for (int32_t v = 0; v < p->nnodes; v++)
		dt_profile_add(&ls->prof, ls->tl.lo[v], ls->tl.hi[v],
			       p->nodes[v].usage[x[v]]);
}

dt_wide dt_local_delta(const struct dt_local *ls, int32_t v, int32_t s)
{
	const struct dt_solve_problem *p = ls->p;
	int32_t cur = ls->x[v];
	dt_wide d = (dt_wide)p->nodes[v].cost[s] - p->nodes[v].cost[cur];
	for (int32_t i = ls->adj.off[v]; i < ls->adj.off[v + 1]; i++) {
		int32_t e = ls->adj.edge[i], u = dt_edge_other(p, e, v);
		d += (dt_wide)dt_edge_cost(p, e, v, s, ls->x[u]) -
		     dt_edge_cost(p, e, v, cur, ls->x[u]);
	}
	return d;
}

bool dt_local_fits(const struct dt_local *ls, int32_t v, int32_t s)
{
	const struct dt_solve_problem *p = ls->p;
	int64_t du = p->nodes[v].usage[s] - p->nodes[v].usage[ls->x[v]];
	if (p->usage_limit < 0 || du <= 0)
		return true;
	return dt_profile_max(&ls->prof, ls->tl.lo[v], ls->tl.hi[v]) + du <=
	       p->usage_limit;
}

void dt_local_move(struct dt_local *ls, int32_t v, int32_t s)
{
	const struct dt_solve_problem *p = ls->p;
	ls->cost += dt_local_delta(ls, v, s);
	dt_profile_add(&ls->prof, ls->tl.lo[v], ls->tl.hi[v],
		       p->nodes[v].usage[s] - p->nodes[v].usage[ls->x[v]]);
	ls->x[v] = s;
}

int64_t dt_local_peak(const struct dt_local *ls)
{
	return ls->tl.nseg > 0 ? dt_profile_max(&ls->prof, 0, ls->tl.nseg) : 0;
}

static void enqueue(struct dt_local *ls, int32_t v)
{
	if (!ls->queued[v]) {
		ls->queued[v] = true;
		dt_vec_push(&ls->queue, v);
	}
}

int64_t dt_local_descend(struct dt_local *ls, bool (*stop)(void *), void *ud)
{
	const struct dt_solve_problem *p = ls->p;
	int64_t moves = 0;
	for (int32_t v = p->nnodes - 1; v >= 0; v--)
		if (p->nodes[v].nstrategies > 1)
			enqueue(ls, v);
	uint32_t head = 0;
	while (head < ls->queue.len) {
		if ((head & 1023) == 0 && stop && stop(ud))
			break;
		int32_t v = ls->queue.data[head++];
		ls->queued[v] = false;
		int32_t best = -1;
		dt_wide bd = 0;
		for (int32_t s = 0; s < p->nodes[v].nstrategies; s++) {
			if (s == ls->x[v])
				continue;
			dt_wide d = dt_local_delta(ls, v, s);
			if (d < bd && dt_local_fits(ls, v, s)) {
				bd = d;
				best = s;
			}
		}
		if (best < 0)
			continue;
		dt_local_move(ls, v, best);
		moves++;
		for (int32_t i = ls->adj.off[v]; i < ls->adj.off[v + 1]; i++)
			enqueue(ls, dt_edge_other(p, ls->adj.edge[i], v));
		if (head > ls->queue.len / 2 && head > 4096) {
			memmove(ls->queue.data, ls->queue.data + head,
				sizeof(int32_t) * (ls->queue.len - head));
			ls->queue.len -= head;
			head = 0;
		}
	}
	for (uint32_t i = head; i < ls->queue.len; i++)
		ls->queued[ls->queue.data[i]] = false;
	ls->queue.len = 0;
	return moves;
}

/* ---- branch and bound ---- */

struct bnb {
	const struct dt_solve_problem *p;
	struct dt_adjacency adj;
	struct dt_timeline tl;
	int64_t *use;      /* [nseg] usage of the assigned nodes + rest at least */
	int64_t *least;    /* [nnodes] least usage */
	dt_wide *rest;     /* [nnodes + 1] sum of least costs of nodes i.. */
	int32_t *order, *pos, *x, *best;
	dt_wide best_cost;
	int64_t visits, max_visits;
	bool found;
};

/* Cost of order[i] at strategy s towards the nodes assigned before it. */
static dt_wide bnb_step(const struct bnb *b, int32_t i, int32_t s)
{
	int32_t v = b->order[i];
	dt_wide c = b->p->nodes[v].cost[s];
	for (int32_t j = b->adj.off[v]; j < b->adj.off[v + 1]; j++) {
		int32_t e = b->adj.edge[j], u = dt_edge_other(b->p, e, v);
		if (b->pos[u] < i)
			c += dt_edge_cost(b->p, e, v, s, b->x[u]);
	}
	return c;
}

/* Whether v at strategy s fits, with every unassigned node at its least. */
static bool bnb_fits(struct bnb *b, int32_t v, int64_t du)
{
	if (b->p->usage_limit < 0 || du == 0)
		return true;
	for (int32_t k = b->tl.lo[v]; k < b->tl.hi[v]; k++)
		if (b->use[k] + du > b->p->usage_limit)
			return false;
	return true;
}

static void bnb_add(struct bnb *b, int32_t v, int64_t du)
{
	for (int32_t k = b->tl.lo[v]; k < b->tl.hi[v]; k++)
		b->use[k] += du;
}

static void bnb_rec(struct bnb *b, int32_t i, dt_wide cost)
{
	if (b->visits > b->max_visits)
		return;
	/* A visit weighs the strategies it tries. */
	b->visits += i < b->p->nnodes ? b->p->nodes[b->order[i]].nstrategies : 1;
	if (i == b->p->nnodes) {
		if (!b->found || cost < b->best_cost) {
			b->found = true;
			b->best_cost = cost;
			memcpy(b->best, b->x, sizeof(int32_t) * (size_t)b->p->nnodes);
		}
		return;
	}
	int32_t v = b->order[i];
	const struct dt_solve_node *nd = &b->p->nodes[v];
	for (int32_t s = 0; s < nd->nstrategies; s++) {
		dt_wide c = cost + bnb_step(b, i, s);
		int64_t du = nd->usage[s] - b->least[v];
		if ((b->found && c + b->rest[i + 1] >= b->best_cost) || !bnb_fits(b, v, du))
			continue;
		b->x[v] = s;
		bnb_add(b, v, du);
		bnb_rec(b, i + 1, c);
		bnb_add(b, v, -du);
	}
}

int dt_exact_search(const struct dt_solve_problem *p, int64_t max_visits,
		    int32_t *best, dt_wide *cost)
{
	struct bnb b = {.p = p, .max_visits = max_visits};
	size_t n = (size_t)p->nnodes + 1;
	dt_adjacency_init(&b.adj, p);
	dt_timeline_init(&b.tl, p);
	b.use = dt_calloc((size_t)b.tl.nseg + 1, sizeof(int64_t));
	b.least = dt_malloc(sizeof(int64_t) * n);
	b.rest = dt_calloc(n, sizeof(dt_wide));
	b.order = dt_malloc(sizeof(int32_t) * n);
	b.pos = dt_malloc(sizeof(int32_t) * n);
	b.x = dt_calloc(n, sizeof(int32_t));
	b.best = dt_malloc(sizeof(int32_t) * n);
	/* Breadth-first order, so each node meets its assigned neighbours. */
	int32_t head = 0, tail = 0;
	for (int32_t v = 0; v < p->nnodes; v++)
		b.pos[v] = -1;
	for (int32_t r = 0; r < p->nnodes; r++) {
		if (b.pos[r] >= 0)
			continue;
		b.pos[r] = tail;
		b.order[tail++] = r;
		while (head < tail) {
			int32_t v = b.order[head++];
			for (int32_t j = b.adj.off[v]; j < b.adj.off[v + 1]; j++) {
				int32_t u = dt_edge_other(p, b.adj.edge[j], v);
				if (b.pos[u] < 0) {
					b.pos[u] = tail;
					b.order[tail++] = u;
				}
			}
		}
	}
	for (int32_t i = p->nnodes - 1; i >= 0; i--) {
		const struct dt_solve_node *nd = &p->nodes[b.order[i]];
		int64_t lc = INT64_MAX, lu = INT64_MAX;
		for (int32_t s = 0; s < nd->nstrategies; s++) {
			lc = nd->cost[s] < lc ? nd->cost[s] : lc;
			lu = nd->usage[s] < lu ? nd->usage[s] : lu;
		}
		b.rest[i] = b.rest[i + 1] + lc;
		b.least[b.order[i]] = lu;
		bnb_add(&b, b.order[i], lu);
	}
	bnb_rec(&b, 0, 0);
	int result = b.visits > max_visits ? -1 : b.found;
	if (result > 0) {
		memcpy(best, b.best, sizeof(int32_t) * (size_t)p->nnodes);
		*cost = b.best_cost;
	}
	dt_free(b.best);
	dt_adjacency_fini(&b.adj);
	dt_timeline_fini(&b.tl);
	dt_free(b.use);
	dt_free(b.least);
	dt_free(b.rest);
	dt_free(b.order);
	dt_free(b.pos);
	dt_free(b.x);
	return result;
}
