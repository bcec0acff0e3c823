// SPDX-License-Identifier: MIT
/* repair.c: bring a plan over the usage limit back within it by the
 * cheapest moves per byte freed (internal.h, dt_repair). The Lagrangian
 * search's priced plans often break the limit at one segment or a few
 * while the cheapest plan within it differs from them only by a move that
 * frees those bytes elsewhere in the graph (a gathered weight kept sharded
 * at the peak, paying a gather later): a move the priced problem, solved
 * heuristically, misses, and that no ball of the large-neighbourhood
 * search (which keeps the plan within the limit at every step) can reach
 * when the saving and the freeing are far apart in the graph. A step:
 *
 *   peak segment k, over by `need` bytes
 *   roots: nodes live at k that can use less there (most bytes first)
 *   each root's ball (lns.c) re-solved exactly with a price lam per byte
 *   live at k: the least lam (bisected in log scale) whose plan frees
 *   `need` without another segment going further over; the root whose
 *   move costs least wins (else the one freeing the most per cost unit)
 *
 * Steps repeat until the plan fits or no ball frees anything. Cost per
 * step: REPAIR_ROOTS balls, each solved up to REPAIR_BISECT + 1 times. */
#include "internal.h"

#include <math.h>
#include <string.h>

#define REPAIR_ROOTS 8   /* balls tried per step */
#define REPAIR_BISECT 7  /* bisection steps of the price's exponent */
#define REPAIR_BALL 32   /* nodes per ball */

/* Summed usage over the limit over segments [lo, hi). */
static dt_wide excess(const struct dt_local *ls, int32_t lo, int32_t hi)
{
	dt_wide e = 0;
	for (int32_t k = lo; k < hi; k++) {
		int64_t u = dt_profile_at(&ls->prof, k);
		if (u > ls->p->usage_limit)
			e += u - ls->p->usage_limit;
	}
	return e;
}

/* A ball's move measured on ls: cost change, usage at segment k and the
 * change of the summed excess (over the segments of the nodes it moves:
 * the others keep theirs). */
struct move {
	dt_wide dcost, dexcess;
	int64_t at_k;
};

static struct move measure(struct dt_local *ls, const struct dt_lns *l, int32_t k,
			   int32_t *undo)
{
	int32_t lo = ls->tl.nseg, hi = 0;
	for (int32_t i = 0; i < l->n; i++) {
		int32_t v = l->nodes[i];
		if (ls->x[v] != l->plan[i] &&
		    ls->p->nodes[v].usage[ls->x[v]] != ls->p->nodes[v].usage[l->plan[i]]) {
			lo = ls->tl.lo[v] < lo ? ls->tl.lo[v] : lo;
			hi = ls->tl.hi[v] > hi ? ls->tl.hi[v] : hi;
		}
	}
	dt_wide before = ls->cost, e = excess(ls, lo, hi);
	for (int32_t i = 0; i < l->n; i++) {
		undo[i] = ls->x[l->nodes[i]];
		if (undo[i] != l->plan[i])
			dt_local_move(ls, l->nodes[i], l->plan[i]);
	}
	struct move m = {ls->cost - before, excess(ls, lo, hi) - e,
			 dt_profile_at(&ls->prof, k)};
	for (int32_t i = l->n; i-- > 0;)
		if (ls->x[l->nodes[i]] != undo[i])
			dt_local_move(ls, l->nodes[i], undo[i]);
	return m;
}

/* The chosen move of a step: its nodes and strategies. */
struct chosen {
	int32_t n, *nodes, *plan;
	struct move m;
	bool full, set;
};

static void keep(struct chosen *c, const struct dt_lns *l, struct move m, bool full)
{
	c->n = l->n;
	memcpy(c->nodes, l->nodes, sizeof(int32_t) * (size_t)l->n);
	memcpy(c->plan, l->plan, sizeof(int32_t) * (size_t)l->n);
	c->m = m;
	c->full = full;
	c->set = true;
}

bool dt_repair(struct dt_local *ls, uint64_t *const *orders, int32_t max_steps,
	       bool (*stop)(void *), void *ud)
{
	const struct dt_solve_problem *p = ls->p;
	int64_t limit = p->usage_limit;
	if (limit < 0 || dt_local_peak(ls) <= limit)
		return true;
	int32_t n = p->nnodes;
	size_t sz = (size_t)n + 1;
	struct dt_lns l;
	dt_lns_init(&l, ls, orders, 1);
	double *price = dt_calloc(sz, sizeof(double));
	int64_t *gain = dt_calloc(sz, sizeof(int64_t));
	int32_t *roots = dt_malloc(sizeof(int32_t) * sz);
	int32_t *tried = dt_calloc(sz, sizeof(int32_t));
	int32_t *undo = dt_malloc(sizeof(int32_t) * sz);
	struct chosen c = {.nodes = dt_malloc(sizeof(int32_t) * sz),
			   .plan = dt_malloc(sizeof(int32_t) * sz)};
	l.price = price;
	l.k = n < REPAIR_BALL ? n : REPAIR_BALL;
	for (int32_t step = 1; step <= max_steps && dt_local_peak(ls) > limit; step++) {
		if (stop && stop(ud))
			break;
		int32_t k = dt_profile_argmax(&ls->prof);
		int64_t peak = dt_profile_at(&ls->prof, k);
		/* Roots: nodes live at k that can hold less there. */
		int32_t nroots = 0;
		for (int32_t v = 0; v < n; v++) {
			price[v] = 0;
			if (ls->tl.lo[v] > k || k >= ls->tl.hi[v])
				continue;
			const struct dt_solve_node *nd = &p->nodes[v];
			price[v] = 1;
			int64_t least = nd->usage[ls->x[v]];
			for (int32_t s = 0; s < nd->nstrategies; s++)
				if (nd->cost[s] < DT_SOLVE_INFINITE && nd->usage[s] < least)
					least = nd->usage[s];
			gain[v] = nd->usage[ls->x[v]] - least;
			if (gain[v] > 0)
				roots[nroots++] = v;
		}
		/* The price that makes a byte at k dearer than any cost a
		 * ball can hold, without overflowing. */
		double hi = 1e17 / ((double)peak + 1), lo_exp = -60;
		c.set = false;
		for (int32_t tries = 0; tries < REPAIR_ROOTS && nroots > 0; tries++) {
			int32_t bi = 0; /* the root of most bytes to free */
			for (int32_t i = 1; i < nroots; i++)
				if (gain[roots[i]] > gain[roots[bi]])
					bi = i;
			int32_t root = roots[bi];
			roots[bi] = roots[--nroots];
			if (tried[root] == step) {
				tries--;
				continue;
			}
			l.price_scale = hi;
			dt_lns_ball(&l, root, stop, ud);
			for (int32_t i = 0; i < l.n; i++)
				tried[l.nodes[i]] = step;
			struct move m = measure(ls, &l, k, undo);
			if (m.at_k >= peak || m.dexcess >= 0)
				continue; /* this ball frees nothing */
			if (m.at_k > limit) {
				/* Partial: the most excess removed per cost. */
				if (!c.full && (!c.set || (m.dcost * -c.m.dexcess <
							   c.m.dcost * -m.dexcess)))
					keep(&c, &l, m, false);
				continue;
			}
			/* Full at k: the least price that still is. */
			double a = lo_exp, b = 0; /* exponents of 2 below hi */
			struct chosen *best = &c;
			if (!c.full || m.dcost < c.m.dcost)
				keep(best, &l, m, true);
			for (int32_t it = 0; it < REPAIR_BISECT; it++) {
				double mid = (a + b) / 2;
				l.price_scale = hi * exp2(mid);
				dt_lns_ball(&l, root, stop, ud);
				struct move t = measure(ls, &l, k, undo);
				if (t.at_k <= limit && t.dexcess < 0) {
					b = mid;
					if (t.dcost < best->m.dcost)
						keep(best, &l, t, true);
				} else {
					a = mid;
				}
			}
		}
		if (!c.set)
			break;
		for (int32_t i = 0; i < c.n; i++)
			if (ls->x[c.nodes[i]] != c.plan[i])
				dt_local_move(ls, c.nodes[i], c.plan[i]);
	}
	bool fits = dt_local_peak(ls) <= limit;
	dt_lns_fini(&l);
	dt_free(price);
	dt_free(gain);
	dt_free(roots);
	dt_free(tried);
	dt_free(undo);
	dt_free(c.nodes);
	dt_free(c.plan);
	return fits;
}
