// SPDX-License-Identifier: MIT
/* lagrange.c: the anytime search of one thread (internal.h, struct
 * dt_lagrange). Relaxing the usage limit with a price per timeline segment
 * turns the problem into one without a limit, whose tree and chain parts
 * the reductions solve exactly; a round prices, reduces, settles the core by
 * descent from the current plan, then brings the plan under the limit
 * (repair) and improves it there (descent). Prices rise where the plan broke
 * the limit and decay where it had room, so rounds move between cheap and
 * feasible plans. When the priced problem reduces to nothing, its optimum
 * minus the prices of the limit is a lower bound (Lagrangian duality). */
#include "internal.h"

#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>

static uint64_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void dt_lagrange_init(struct dt_lagrange *lg, const struct dt_solve_problem *r,
		      uint64_t seed)
{
	memset(lg, 0, sizeof(*lg));
	lg->r = r;
	lg->rng = seed * 0x9E3779B97F4A7C15ull + 1;
	dt_local_init(&lg->ls, r);
	int32_t nseg = lg->ls.tl.nseg;
	lg->lambda = dt_calloc((size_t)nseg + 1, sizeof(double));
	lg->prefix = dt_calloc((size_t)nseg + 2, sizeof(double));
	lg->best = dt_calloc((size_t)r->nnodes + 1, sizeof(int32_t));
	lg->best_cost = DT_SOLVE_INFINITE;
	lg->lower_bound = INT64_MIN;
	lg->q = *r;
	lg->q.name = NULL;
	lg->q.usage_limit = -1;
	lg->q.nodes = dt_calloc((size_t)r->nnodes + 1, sizeof(*lg->q.nodes));
	for (int32_t v = 0; v < r->nnodes; v++) {
		lg->q.nodes[v] = r->nodes[v];
		lg->q.nodes[v].cost = dt_malloc(sizeof(int64_t) *
						(size_t)r->nodes[v].nstrategies);
	}
	lg->priced_plan = dt_calloc((size_t)r->nnodes + 1, sizeof(int32_t));
}

void dt_lagrange_fini(struct dt_lagrange *lg)
{
	for (int32_t v = 0; v < lg->r->nnodes; v++)
		dt_free(lg->q.nodes[v].cost);
	dt_free(lg->q.nodes);
	dt_local_fini(&lg->ls);
	dt_free(lg->lambda);
	dt_free(lg->prefix);
	dt_free(lg->best);
	dt_free(lg->priced_plan);
}

/* q's costs: r's plus usage times the summed price of the node's segments
 * (rounded down, so a bound from them stays a bound); returns the price of
 * the limit itself, limit * sum of prices. */
static double price(struct dt_lagrange *lg)
{
	const struct dt_timeline *tl = &lg->ls.tl;
	for (int32_t k = 0; k < tl->nseg; k++)
		lg->prefix[k + 1] = lg->prefix[k] + lg->lambda[k];
	for (int32_t v = 0; v < lg->r->nnodes; v++) {
		const struct dt_solve_node *nd = &lg->r->nodes[v];
		double pv = lg->prefix[tl->hi[v]] - lg->prefix[tl->lo[v]];
		for (int32_t s = 0; s < nd->nstrategies; s++) {
			double extra = floor(pv * (double)nd->usage[s]);
			lg->q.nodes[v].cost[s] = extra >= 9e18 ? DT_SOLVE_INFINITE
				: dt_solve_add(nd->cost[s], (int64_t)extra);
		}
	}
	return (double)lg->r->usage_limit * lg->prefix[tl->nseg];
}

/* The best plan of q (exact when its reduction leaves no edge) as a plan of
 * r in out[], starting the core's descent from lg->ls's plan; returns the
 * cost of q's plan, or -1 when it is not proven optimal. */
static int64_t solve_priced(struct dt_lagrange *lg, int32_t *out,
			    bool (*stop)(void *), void *ud)
{
	struct dt_reduction red;
	dt_reduce(&lg->q, &red);
	const struct dt_solve_problem *c = &red.r;
	int32_t *x = dt_malloc(sizeof(int32_t) * ((size_t)c->nnodes + 1));
	for (int32_t i = 0; i < c->nnodes; i++) {
		int32_t want = lg->priced_plan[red.orig_node[i]], best = 0;
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
	if (getenv("DT_SOLVE_DEBUG") && lg->rounds < 3) fprintf(stderr, "core %d nodes %d edges\n", c->nnodes, c->nedges);
	struct dt_local core;
	dt_local_init(&core, c);
	dt_local_set(&core, x);
	dt_local_descend(&core, stop, ud);
	bool exact = c->nedges == 0 ||
		     dt_lns_run(&core, getenv("LNS") ? atoi(getenv("LNS")) : 8 + c->nnodes, &lg->rng, stop, ud);
	int64_t cost = exact ? dt_solve_add(red.offset, core.cost) : -1;
	dt_reduction_expand(&red, core.x, out);
	dt_local_fini(&core);
	dt_free(x);
	dt_reduction_fini(&red);
	return cost;
}

/* Raise prices where plan usage breaks the limit, decay them elsewhere. */
static void update_prices(struct dt_lagrange *lg)
{
	const struct dt_local *ls = &lg->ls;
	int64_t limit = lg->r->usage_limit;
	double up = 1.5 + (double)(next_random(&lg->rng) % 1000) / 2000.0;
	for (int32_t k = 0; k < ls->tl.nseg; k++) {
		int64_t u = dt_profile_at(&ls->prof, k);
		if (u > limit)
			lg->lambda[k] = lg->lambda[k] > 0 ? lg->lambda[k] * up : lg->lambda0;
		else if (u < limit)
			lg->lambda[k] *= 0.9;
	}
}

bool dt_lagrange_round(struct dt_lagrange *lg, bool (*stop)(void *), void *ud)
{
	const struct dt_solve_problem *r = lg->r;
	lg->rounds++;
	double limit_price = r->usage_limit >= 0 ? price(lg) : 0;
	if (r->usage_limit < 0)
		for (int32_t v = 0; v < r->nnodes; v++)
			memcpy(lg->q.nodes[v].cost, r->nodes[v].cost,
			       sizeof(int64_t) * (size_t)r->nodes[v].nstrategies);
	int32_t *y = lg->priced_plan;
	int64_t priced = solve_priced(lg, y, stop, ud);
	if (lg->lambda0 == 0) {
		/* Price per unit of usage and segment that would double the
		 * cost of the least-cost plan if it filled every segment to the
		 * limit, a hundredth of it to start. */
		int64_t c = dt_solve_plan_cost(r, y, NULL);
		double area = (double)(r->usage_limit > 0 ? r->usage_limit : 1) *
			      (lg->ls.tl.nseg > 0 ? lg->ls.tl.nseg : 1);
		lg->lambda0 = (c > 0 && c < (int64_t)1e15 ? (double)c : 1e15) / area / 100;
	}
	if (priced >= 0 && priced < DT_SOLVE_INFINITE) {
		double bound = floor((double)priced - limit_price);
		if (bound > (double)lg->lower_bound && bound < 9e18)
			lg->lower_bound = (int64_t)bound;
	}
	if (getenv("DT_SOLVE_DEBUG")) { double mx=0; for (int32_t k=0;k<lg->ls.tl.nseg;k++) if (lg->lambda[k]>mx) mx=lg->lambda[k]; fprintf(stderr, "priced(y) %ld priced(prev) %ld maxlambda %g lambda0 %g\n", (long)dt_solve_plan_cost(&lg->q, y, NULL), (long)dt_solve_plan_cost(&lg->q, lg->ls.x, NULL), mx, lg->lambda0); }
	dt_local_set(&lg->ls, y);
	if (getenv("DT_SOLVE_DEBUG") && lg->rounds < 40) fprintf(stderr, "round %ld priced %ld cost %ld peak %ld\n", (long)lg->rounds, (long)priced, (long)lg->ls.cost, (long)dt_local_peak(&lg->ls));
	if (r->usage_limit >= 0 && dt_local_peak(&lg->ls) > r->usage_limit) {
		update_prices(lg);
		if (!dt_local_repair(&lg->ls))
			return false;
	} else if (r->usage_limit >= 0) {
		update_prices(lg);
	}
	if (getenv("DT_SOLVE_DEBUG") && lg->rounds < 40) fprintf(stderr, "  repaired cost %ld peak %ld\n", (long)lg->ls.cost, (long)dt_local_peak(&lg->ls));
	dt_local_descend(&lg->ls, stop, ud);
	if (getenv("DT_SOLVE_DEBUG") && lg->rounds < 40) fprintf(stderr, "  descended cost %ld peak %ld\n", (long)lg->ls.cost, (long)dt_local_peak(&lg->ls));
	if (lg->ls.cost >= lg->best_cost)
		return false;
	lg->best_cost = lg->ls.cost;
	memcpy(lg->best, lg->ls.x, sizeof(int32_t) * (size_t)r->nnodes);
	return true;
}
