// SPDX-License-Identifier: MIT
/* problem.c: a solver problem's life (check, fini), the cost and peak usage
 * of a plan, and the timeline that turns node intervals into segments. */
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Index of `x` in the sorted `pt[0..n)`, which holds it. */
static int32_t find_point(const int64_t *pt, int32_t n, int64_t x)
{
	int32_t lo = 0, hi = n - 1;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (pt[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void dt_timeline_init(struct dt_timeline *t, const struct dt_solve_problem *p)
{
	int64_t *pt = dt_malloc(sizeof(*pt) * (2 * (size_t)p->nnodes + 1));
	int32_t n = 0;
	for (int32_t v = 0; v < p->nnodes; v++)
		if (p->nodes[v].start < p->nodes[v].end) {
			pt[n++] = p->nodes[v].start;
			pt[n++] = p->nodes[v].end;
		}
	qsort(pt, n, sizeof(*pt), cmp_i64);
	int32_t m = 0;
	for (int32_t i = 0; i < n; i++)
		if (m == 0 || pt[m - 1] != pt[i])
			pt[m++] = pt[i];
	t->point = pt;
	t->nseg = m > 0 ? m - 1 : 0;
	t->lo = dt_malloc(sizeof(int32_t) * ((size_t)p->nnodes + 1));
	t->hi = dt_malloc(sizeof(int32_t) * ((size_t)p->nnodes + 1));
	for (int32_t v = 0; v < p->nnodes; v++) {
		const struct dt_solve_node *nd = &p->nodes[v];
		if (nd->start < nd->end) {
			t->lo[v] = find_point(pt, m, nd->start);
			t->hi[v] = find_point(pt, m, nd->end);
		} else {
			t->lo[v] = t->hi[v] = 0;
		}
	}
}

void dt_timeline_fini(struct dt_timeline *t)
{
	dt_free(t->point);
	dt_free(t->lo);
	dt_free(t->hi);
	memset(t, 0, sizeof(*t));
}

/* The per-segment usage (sums fit: check_node bounds each usage by
 * INT64_MAX / (nnodes + 1)) of `use[v]` for every node (a difference array
 * summed up): out[nseg]. */
static void fill_usage(const struct dt_timeline *t, int32_t nnodes,
		       const int64_t *use, int64_t *out)
{
	memset(out, 0, sizeof(*out) * ((size_t)t->nseg + 1));
	for (int32_t v = 0; v < nnodes; v++) {
		out[t->lo[v]] += use[v];
		out[t->hi[v]] -= use[v];
	}
	for (int32_t k = 1; k < t->nseg; k++)
		out[k] += out[k - 1];
}

dt_wide dt_plan_cost(const struct dt_solve_problem *p, const int32_t *s)
{
	dt_wide cost = 0;
	for (int32_t v = 0; v < p->nnodes; v++)
		cost += p->nodes[v].cost[s[v]];
	for (int32_t e = 0; e < p->nedges; e++) {
		const struct dt_solve_edge *ed = &p->edges[e];
		int32_t nb = p->nodes[ed->to].nstrategies;
		cost += ed->cost[(int64_t)s[ed->from] * nb + s[ed->to]];
	}
	return cost;
}

int64_t dt_solve_plan_peak(const struct dt_solve_problem *p, const int32_t *s,
			   int64_t *at)
{
	struct dt_timeline t;
	dt_timeline_init(&t, p);
	int64_t *use = dt_malloc(sizeof(*use) * ((size_t)p->nnodes + 1));
	int64_t *prof = dt_malloc(sizeof(*prof) * ((size_t)t.nseg + 1));
	for (int32_t v = 0; v < p->nnodes; v++)
		use[v] = p->nodes[v].usage[s[v]];
	fill_usage(&t, p->nnodes, use, prof);
	int64_t peak = 0;
	*at = -1;
	for (int32_t k = 0; k < t.nseg; k++)
		if (prof[k] > peak) {
			peak = prof[k];
			*at = t.point[k];
		}
	dt_free(use);
	dt_free(prof);
	dt_timeline_fini(&t);
	return peak;
}

int64_t dt_solve_plan_cost(const struct dt_solve_problem *p,
			   const int32_t *s, int64_t *peak)
{
	int64_t at;
	if (peak)
		*peak = dt_solve_plan_peak(p, s, &at);
	return dt_wide_clamp(dt_plan_cost(p, s));
}

bool dt_solve_edge_open(const struct dt_solve_problem *p, int32_t k)
{
	const struct dt_solve_edge *e = &p->edges[k];
	const struct dt_solve_node *from = &p->nodes[e->from];
	const struct dt_solve_node *to = &p->nodes[e->to];
	for (int32_t i = 0; i < from->nstrategies; i++)
		for (int32_t j = 0; j < to->nstrategies; j++)
			if (from->cost[i] != DT_SOLVE_INFINITE &&
			    to->cost[j] != DT_SOLVE_INFINITE &&
			    e->cost[(size_t)i * (size_t)to->nstrategies +
				    (size_t)j] != DT_SOLVE_INFINITE)
				return true;
	return false;
}

/* The smallest footprint: each node at its least usage among finite-cost
 * strategies; reports the limit it breaks, naming the time. */
static void check_footprint(const struct dt_solve_problem *p, const char *file,
			    struct dt_diag *d)
{
	struct dt_timeline t;
	dt_timeline_init(&t, p);
	int64_t *use = dt_malloc(sizeof(*use) * ((size_t)p->nnodes + 1));
	int64_t *prof = dt_malloc(sizeof(*prof) * ((size_t)t.nseg + 1));
	for (int32_t v = 0; v < p->nnodes; v++) {
		const struct dt_solve_node *nd = &p->nodes[v];
		use[v] = DT_SOLVE_INFINITE;
		for (int32_t i = 0; i < nd->nstrategies; i++)
			if (nd->cost[i] < DT_SOLVE_INFINITE && nd->usage[i] < use[v])
				use[v] = nd->usage[i];
		if (use[v] == DT_SOLVE_INFINITE)
			use[v] = 0; /* reported as a node without strategies */
	}
	fill_usage(&t, p->nnodes, use, prof);
	int32_t worst = -1;
	for (int32_t k = 0; k < t.nseg; k++)
		if (prof[k] > p->usage_limit && (worst < 0 || prof[k] > prof[worst]))
			worst = k;
	if (worst >= 0)
		dt_diag_report(d, DT_ERROR, file, 0, NULL,
			       "no plan meets usage_limit %" PRId64 ": the smallest "
			       "footprint is %" PRId64 " at time %" PRId64
			       " (every node at its least usage)",
			       p->usage_limit, prof[worst], t.point[worst]);
	dt_free(use);
	dt_free(prof);
	dt_timeline_fini(&t);
}

/* One node's intervals, costs and usages; returns whether it is sound. */
static bool check_node(const struct dt_solve_problem *p, int32_t v,
		       const char *file, struct dt_diag *d)
{
	const struct dt_solve_node *nd = &p->nodes[v];
	if (nd->nstrategies < 1) {
		dt_diag_report(d, DT_ERROR, file, 0, NULL, "node %d: no strategies", v);
		return false;
	}
	bool ok = true;
	if (nd->start < 0 || nd->end < nd->start) {
		dt_diag_report(d, DT_ERROR, file, 0, NULL,
			       "node %d: interval [%" PRId64 ", %" PRId64 "] %s", v,
			       nd->start, nd->end,
			       nd->start < 0 ? "starts before 0" : "ends before it starts");
		ok = false;
	}
	bool finite = false;
	int64_t max_usage = INT64_MAX / ((int64_t)p->nnodes + 1);
	for (int32_t i = 0; i < nd->nstrategies; i++) {
		if (nd->cost[i] < 0 || nd->usage[i] < 0) {
			dt_diag_report(d, DT_ERROR, file, 0, NULL,
				       "node %d: strategy %d has a negative %s", v, i,
				       nd->cost[i] < 0 ? "cost" : "usage");
			return false;
		}
		if (nd->usage[i] > max_usage) {
			dt_diag_report(d, DT_ERROR, file, 0, NULL,
				       "node %d: strategy %d: usage %" PRId64
				       " too large (over %" PRId64 ")", v, i,
				       nd->usage[i], max_usage);
			return false;
		}
		finite |= nd->cost[i] < DT_SOLVE_INFINITE;
	}
	if (!finite) {
		dt_diag_report(d, DT_ERROR, file, 0, NULL,
			       "node %d: every strategy has infinite cost", v);
		ok = false;
	}
	return ok;
}

static bool check_edge(const struct dt_solve_problem *p, int32_t e,
		       const char *file, struct dt_diag *d)
{
	const struct dt_solve_edge *ed = &p->edges[e];
	int32_t ends[2] = {ed->from, ed->to};
	for (int i = 0; i < 2; i++)
		if (ends[i] < 0 || ends[i] >= p->nnodes) {
			dt_diag_report(d, DT_ERROR, file, 0, NULL,
				       "edge %d: node %d out of range (%d nodes)", e,
				       ends[i], p->nnodes);
			return false;
		}
	if (ed->from == ed->to) {
		dt_diag_report(d, DT_ERROR, file, 0, NULL,
			       "edge %d: joins node %d to itself", e, ed->from);
		return false;
	}
	int64_t n = (int64_t)p->nodes[ed->from].nstrategies * p->nodes[ed->to].nstrategies;
	for (int64_t i = 0; i < n; i++)
		if (ed->cost[i] < 0) {
			dt_diag_report(d, DT_ERROR, file, 0, NULL,
				       "edge %d: negative cost at [%" PRId64 "][%" PRId64 "]",
				       e, i / p->nodes[ed->to].nstrategies,
				       i % p->nodes[ed->to].nstrategies);
			return false;
		}
	return true;
}

int dt_solve_problem_check(const struct dt_solve_problem *p, const char *file,
			   struct dt_diag *d)
{
	unsigned before = d->nerrors;
	bool ok = p->nnodes >= 0 && p->nedges >= 0;
	bool nodes_ok = ok;
	for (int32_t v = 0; v < p->nnodes; v++)
		nodes_ok &= check_node(p, v, file, d);
	for (int32_t e = 0; e < p->nedges && nodes_ok; e++)
		ok &= check_edge(p, e, file, d);
	ok &= nodes_ok;
	if (ok && p->usage_limit >= 0)
		check_footprint(p, file, d);
	return ok && d->nerrors == before ? DT_OK : DT_EINPUT;
}

void dt_solve_problem_fini(struct dt_solve_problem *p)
{
	for (int32_t v = 0; p->nodes && v < p->nnodes; v++) {
		dt_free(p->nodes[v].cost);
		dt_free(p->nodes[v].usage);
	}
	for (int32_t e = 0; p->edges && e < p->nedges; e++)
		dt_free(p->edges[e].cost);
	dt_free(p->nodes);
	dt_free(p->edges);
	dt_free(p->name);
	memset(p, 0, sizeof(*p));
}
