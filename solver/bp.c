// SPDX-License-Identifier: MIT
/* bp.c: min-sum message passing over a problem without a limit
 * (internal.h): the messages' store and min-sum product both passings
 * share (struct dt_messages), and belief propagation (dt_bp_plan), the
 * starting plan of a priced core on the search's even threads, which
 * descent and large neighbourhoods then improve (trws.c is the odd
 * threads'). Exact on trees; on the loopy cores it is a heuristic that
 * sees far beyond one node. Messages are doubles (costs up to the
 * contest's 1e18 keep their order; infinite ones stand as dt_messages'
 * `big`, finite with only_start), normalised to a minimum of 0 and
 * damped by half. Cost per iteration: the sum of the edge matrix sizes,
 * twice. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* The most a plan of finite costs can cost: every node's and every
 * edge's largest finite cost, summed. */
static double finite_bound(const struct dt_solve_problem *p)
{
	double sum = 0;
	for (int32_t v = 0; v < p->nnodes; v++) {
		int64_t most = 0;
		for (int32_t s = 0; s < p->nodes[v].nstrategies; s++)
			if (p->nodes[v].cost[s] != DT_SOLVE_INFINITE &&
			    p->nodes[v].cost[s] > most)
				most = p->nodes[v].cost[s];
		sum += (double)most;
	}
	for (int32_t e = 0; e < p->nedges; e++) {
		int64_t n = (int64_t)p->nodes[p->edges[e].from].nstrategies *
			    p->nodes[p->edges[e].to].nstrategies, most = 0;
		for (int64_t k = 0; k < n; k++)
			if (p->edges[e].cost[k] != DT_SOLVE_INFINITE &&
			    p->edges[e].cost[k] > most)
				most = p->edges[e].cost[k];
		sum += (double)most;
	}
	return sum;
}

double dt_messages_cost(const struct dt_messages *m, int64_t cost)
{
	return cost == DT_SOLVE_INFINITE ? m->big : (double)cost;
}

void dt_messages_init(struct dt_messages *m, const struct dt_solve_problem *p,
		      bool finite_big)
{
	m->p = p;
	dt_adjacency_init(&m->adj, p);
	m->off = dt_malloc(sizeof(size_t) * (2 * (size_t)p->nedges + 1));
	m->first = dt_malloc(sizeof(size_t) * ((size_t)p->nedges + 1));
	size_t total = 0, entries = 0;
	int32_t most = 1;
	for (int32_t e = 0; e < p->nedges; e++) {
		int32_t nf = p->nodes[p->edges[e].from].nstrategies;
		int32_t nt = p->nodes[p->edges[e].to].nstrategies;
		m->off[2 * e] = total;
		m->off[2 * e + 1] = total + (size_t)nt;
		total += (size_t)nt + (size_t)nf;
		m->first[e] = entries;
		entries += (size_t)nf * (size_t)nt;
	}
	for (int32_t v = 0; v < p->nnodes; v++)
		most = p->nodes[v].nstrategies > most ? p->nodes[v].nstrategies : most;
	m->msg = dt_calloc(total + 1, sizeof(double));
	m->big = finite_big ? 1.0 + finite_bound(p) : (double)DT_SOLVE_INFINITE;
	/* The edge matrices as doubles, converted once, not per iteration:
	 * the min-sum loops then vectorize. */
	m->costs = dt_malloc(sizeof(double) * (entries + 1));
	for (int32_t e = 0; e < p->nedges; e++) {
		size_t n = (size_t)p->nodes[p->edges[e].from].nstrategies *
			   (size_t)p->nodes[p->edges[e].to].nstrategies;
		for (size_t k = 0; k < n; k++)
			m->costs[m->first[e] + k] =
			    dt_messages_cost(m, p->edges[e].cost[k]);
	}
	m->belief = dt_malloc(sizeof(double) * (size_t)most);
	m->h = dt_malloc(sizeof(double) * (size_t)most);
	m->out = dt_malloc(sizeof(double) * (size_t)most);
}

void dt_messages_fini(struct dt_messages *m)
{
	dt_adjacency_fini(&m->adj);
	dt_free(m->off);
	dt_free(m->first);
	dt_free(m->msg);
	dt_free(m->costs);
	dt_free(m->belief);
	dt_free(m->h);
	dt_free(m->out);
}

double *dt_messages_into(const struct dt_messages *m, int32_t e, int32_t v)
{
	return &m->msg[m->off[2 * (size_t)e + (m->p->edges[e].from == v)]];
}

void dt_messages_gather(struct dt_messages *m, int32_t v)
{
	const struct dt_solve_node *nd = &m->p->nodes[v];
	for (int32_t s = 0; s < nd->nstrategies; s++)
		m->belief[s] = dt_messages_cost(m, nd->cost[s]);
	for (int32_t i = m->adj.off[v]; i < m->adj.off[v + 1]; i++) {
		const double *in = dt_messages_into(m, m->adj.edge[i], v);
		for (int32_t s = 0; s < nd->nstrategies; s++)
			m->belief[s] += in[s];
	}
}

DT_SOLVE_VECTOR_CLONES
double dt_messages_min_sum(struct dt_messages *m, int32_t e, int32_t v)
{
	const struct dt_solve_problem *p = m->p;
	int32_t nv = p->nodes[v].nstrategies;
	int32_t nu = p->nodes[dt_edge_other(p, e, v)].nstrategies;
	const double *mat = &m->costs[m->first[e]], *h = m->h;
	double *out = m->out;
	if (p->edges[e].from == v) { /* mat[sv][su]: rows of v */
		for (int32_t su = 0; su < nu; su++)
			out[su] = h[0] + mat[su];
		for (int32_t s = 1; s < nv; s++) {
			const double *row = &mat[(int64_t)s * nu];
			for (int32_t su = 0; su < nu; su++) {
				double c = h[s] + row[su];
				out[su] = c < out[su] ? c : out[su];
			}
		}
	} else { /* mat[su][sv]: rows of u, each a minimum over 4 lanes */
		int32_t n4 = nv & ~3;
		for (int32_t su = 0; su < nu; su++) {
			const double *row = &mat[(int64_t)su * nv];
			double lane[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
			for (int32_t s = 0; s < n4; s += 4)
				for (int k = 0; k < 4; k++) {
					double c = h[s + k] + row[s + k];
					lane[k] = c < lane[k] ? c : lane[k];
				}
			for (int32_t s = n4; s < nv; s++) {
				double c = h[s] + row[s];
				lane[0] = c < lane[0] ? c : lane[0];
			}
			double best = lane[0] < lane[1] ? lane[0] : lane[1];
			double other = lane[2] < lane[3] ? lane[2] : lane[3];
			out[su] = best < other ? best : other;
		}
	}
	double lo = out[0];
	for (int32_t su = 1; su < nu; su++)
		lo = out[su] < lo ? out[su] : lo;
	return lo;
}

void dt_bp_plan(const struct dt_solve_problem *p, int iterations,
		bool only_start, int32_t *x)
{
	struct dt_messages m;
	dt_messages_init(&m, p, only_start);
	for (int it = 0; it <= iterations; it++) {
		for (int32_t v = 0; v < p->nnodes; v++) {
			const struct dt_solve_node *nd = &p->nodes[v];
			dt_messages_gather(&m, v);
			if (it == iterations) {
				x[v] = 0;
				for (int32_t s = 1; s < nd->nstrategies; s++)
					x[v] = m.belief[s] < m.belief[x[v]] ? s : x[v];
				continue;
			}
			for (int32_t i = m.adj.off[v]; i < m.adj.off[v + 1]; i++) {
				int32_t e = m.adj.edge[i], u = dt_edge_other(p, e, v);
				const double *in = dt_messages_into(&m, e, v);
				double *msg = dt_messages_into(&m, e, u);
				for (int32_t s = 0; s < nd->nstrategies; s++)
					m.h[s] = m.belief[s] - in[s];
				double lo = dt_messages_min_sum(&m, e, v);
				for (int32_t su = 0; su < p->nodes[u].nstrategies; su++)
					msg[su] = 0.5 * msg[su] + 0.5 * (m.out[su] - lo);
			}
		}
	}
	dt_messages_fini(&m);
}
