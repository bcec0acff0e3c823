// SPDX-License-Identifier: MIT
/* trws.c: sequential tree-reweighted message passing (TRW-S, Kolmogorov
 * 2006) over a problem without a limit (internal.h, dt_trws_plan).
 * Nodes in index order; a node's messages towards its later neighbours
 * are sent on the forward pass, towards its earlier ones on the backward
 * pass, from gamma_v = 1 / max(earlier, later neighbours) of its belief
 * (cost plus every incoming message) less the reverse message. Unlike
 * damped loopy belief propagation it never oscillates: each pass raises
 * a lower bound of the linear relaxation, and where that relaxation is
 * tight (as on most sharding cores) its plan is the optimum. The plan is
 * decoded on a last forward pass, each node choosing against its earlier
 * neighbours' choices and its later neighbours' messages. Messages are
 * doubles normalised to a minimum of 0. Cost per iteration: the sum of
 * the edge matrix sizes, twice. */
#include "internal.h"

#include <string.h>

struct trws {
	const struct dt_solve_problem *p;
	struct dt_adjacency adj;
	size_t *off;    /* msg[off[2e]]: towards e's `to`; [2e+1]: its `from` */
	size_t *first;  /* costs[first[e]]: e's matrix as doubles */
	double *msg, *costs, *gamma;
	double *belief, *h, *out; /* scratch of the most strategies */
};

static void trws_init(struct trws *t, const struct dt_solve_problem *p)
{
	t->p = p;
	dt_adjacency_init(&t->adj, p);
	t->off = dt_malloc(sizeof(size_t) * (2 * (size_t)p->nedges + 1));
	t->first = dt_malloc(sizeof(size_t) * ((size_t)p->nedges + 1));
	size_t total = 0, entries = 0;
	int32_t most = 1;
	for (int32_t e = 0; e < p->nedges; e++) {
		int32_t nf = p->nodes[p->edges[e].from].nstrategies;
		int32_t nt = p->nodes[p->edges[e].to].nstrategies;
		t->off[2 * e] = total;
		t->off[2 * e + 1] = total + (size_t)nt;
		total += (size_t)nt + (size_t)nf;
		t->first[e] = entries;
		entries += (size_t)nf * (size_t)nt;
	}
	t->msg = dt_calloc(total + 1, sizeof(double));
	t->costs = dt_malloc(sizeof(double) * (entries + 1));
	for (int32_t e = 0; e < p->nedges; e++) {
		size_t n = (size_t)p->nodes[p->edges[e].from].nstrategies *
			   (size_t)p->nodes[p->edges[e].to].nstrategies;
		for (size_t k = 0; k < n; k++)
			t->costs[t->first[e] + k] = (double)p->edges[e].cost[k];
	}
	t->gamma = dt_malloc(sizeof(double) * ((size_t)p->nnodes + 1));
	for (int32_t v = 0; v < p->nnodes; v++) {
		int32_t lo = 0, hi = 0;
		for (int32_t i = t->adj.off[v]; i < t->adj.off[v + 1]; i++)
			dt_edge_other(p, t->adj.edge[i], v) < v ? lo++ : hi++;
		t->gamma[v] = 1.0 / (double)(lo > hi ? (lo > 0 ? lo : 1) : hi);
		most = p->nodes[v].nstrategies > most ? p->nodes[v].nstrategies : most;
	}
	t->belief = dt_malloc(sizeof(double) * (size_t)most);
	t->h = dt_malloc(sizeof(double) * (size_t)most);
	t->out = dt_malloc(sizeof(double) * (size_t)most);
}

static void trws_fini(struct trws *t)
{
	dt_adjacency_fini(&t->adj);
	dt_free(t->off);
	dt_free(t->first);
	dt_free(t->msg);
	dt_free(t->costs);
	dt_free(t->gamma);
	dt_free(t->belief);
	dt_free(t->h);
	dt_free(t->out);
}

/* The message of edge e into node v (indexed by v's strategy). */
static double *incoming(const struct trws *t, int32_t e, int32_t v)
{
	return &t->msg[t->off[2 * (size_t)e + (t->p->edges[e].from == v)]];
}

/* belief[] = v's cost plus every message into v. */
static void gather(struct trws *t, int32_t v)
{
	const struct dt_solve_node *nd = &t->p->nodes[v];
	for (int32_t s = 0; s < nd->nstrategies; s++)
		t->belief[s] = (double)nd->cost[s];
	for (int32_t i = t->adj.off[v]; i < t->adj.off[v + 1]; i++) {
		const double *in = incoming(t, t->adj.edge[i], v);
		for (int32_t s = 0; s < nd->nstrategies; s++)
			t->belief[s] += in[s];
	}
}

/* Send v's message along edge e to its other end u: min over v's
 * strategies of gamma_v belief - (u's message into v) + the edge's cost. */
DT_SOLVE_VECTOR_CLONES
static void send(struct trws *t, int32_t v, int32_t e)
{
	const struct dt_solve_problem *p = t->p;
	int32_t u = dt_edge_other(p, e, v);
	bool fwd = p->edges[e].from == v;
	int32_t nv = p->nodes[v].nstrategies, nu = p->nodes[u].nstrategies;
	const double *back = incoming(t, e, v);
	double *m = incoming(t, e, u);
	const double *mat = &t->costs[t->first[e]];
	double *h = t->h, *out = t->out;
	for (int32_t s = 0; s < nv; s++)
		h[s] = t->gamma[v] * t->belief[s] - back[s];
	if (fwd) { /* mat[sv][su]: rows of v */
		for (int32_t su = 0; su < nu; su++)
			out[su] = h[0] + mat[su];
		for (int32_t s = 1; s < nv; s++) {
			const double *row = &mat[(int64_t)s * nu];
			for (int32_t su = 0; su < nu; su++) {
				double c = h[s] + row[su];
				out[su] = c < out[su] ? c : out[su];
			}
		}
	} else { /* mat[su][sv]: rows of u */
		for (int32_t su = 0; su < nu; su++) {
			const double *row = &mat[(int64_t)su * nv];
			double best = h[0] + row[0];
			for (int32_t s = 1; s < nv; s++) {
				double c = h[s] + row[s];
				best = c < best ? c : best;
			}
			out[su] = best;
		}
	}
	double lo = out[0];
	for (int32_t su = 1; su < nu; su++)
		lo = out[su] < lo ? out[su] : lo;
	for (int32_t su = 0; su < nu; su++)
		m[su] = out[su] - lo;
}

/* One pass: forward sends to later neighbours in index order, backward
 * to earlier ones in reverse order. */
static void pass(struct trws *t, bool forward)
{
	const struct dt_solve_problem *p = t->p;
	for (int32_t k = 0; k < p->nnodes; k++) {
		int32_t v = forward ? k : p->nnodes - 1 - k;
		gather(t, v);
		for (int32_t i = t->adj.off[v]; i < t->adj.off[v + 1]; i++) {
			int32_t e = t->adj.edge[i], u = dt_edge_other(p, e, v);
			if (forward ? u > v : u < v)
				send(t, v, e);
		}
	}
}

/* x[v] in index order: v's cost, its edges to earlier neighbours at their
 * choices, and its later neighbours' messages. */
static void decode(struct trws *t, int32_t *x)
{
	const struct dt_solve_problem *p = t->p;
	for (int32_t v = 0; v < p->nnodes; v++) {
		const struct dt_solve_node *nd = &p->nodes[v];
		for (int32_t s = 0; s < nd->nstrategies; s++)
			t->belief[s] = (double)nd->cost[s];
		for (int32_t i = t->adj.off[v]; i < t->adj.off[v + 1]; i++) {
			int32_t e = t->adj.edge[i], u = dt_edge_other(p, e, v);
			const double *in = incoming(t, e, v);
			for (int32_t s = 0; s < nd->nstrategies; s++)
				t->belief[s] += u > v ? in[s]
					: (double)dt_edge_cost(p, e, v, s, x[u]);
		}
		x[v] = 0;
		for (int32_t s = 1; s < nd->nstrategies; s++)
			x[v] = t->belief[s] < t->belief[x[v]] ? s : x[v];
	}
}

void dt_trws_plan(const struct dt_solve_problem *p, int iterations, int32_t *x)
{
	struct trws t;
	trws_init(&t, p);
	for (int it = 0; it < iterations; it++) {
		pass(&t, true);
		pass(&t, false);
	}
	decode(&t, x);
	trws_fini(&t);
}
