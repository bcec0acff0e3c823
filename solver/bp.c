// SPDX-License-Identifier: MIT
/* bp.c: min-sum belief propagation over a problem without a limit
 * (internal.h, dt_bp_plan): the starting plan of a priced core, which
 * descent and large neighbourhoods then improve. Exact on trees; on the
 * loopy cores it is a heuristic that sees far beyond one node. Messages are
 * doubles (costs up to the contest's 1e18 keep their order), normalised to
 * a minimum of 0 and damped by half. Cost per iteration: the sum of the
 * edge matrix sizes, twice. */
#include "internal.h"

#include <string.h>

DT_SOLVE_VECTOR_CLONES
void dt_bp_plan(const struct dt_solve_problem *p, int iterations, int32_t *x)
{
	struct dt_adjacency adj;
	dt_adjacency_init(&adj, p);
	/* msg[2e] from `from` to `to` (indexed by to's strategy), msg[2e+1]
	 * from `to` to `from`; off[] locates each. */
	size_t *off = dt_malloc(sizeof(size_t) * (2 * (size_t)p->nedges + 1));
	size_t total = 0;
	int32_t most = 1;
	for (int32_t e = 0; e < p->nedges; e++) {
		off[2 * e] = total;
		total += (size_t)p->nodes[p->edges[e].to].nstrategies;
		off[2 * e + 1] = total;
		total += (size_t)p->nodes[p->edges[e].from].nstrategies;
	}
	for (int32_t v = 0; v < p->nnodes; v++)
		most = p->nodes[v].nstrategies > most ? p->nodes[v].nstrategies : most;
	double *msg = dt_calloc(total + 1, sizeof(double));
	/* The edge matrices as doubles, converted once, not per iteration:
	 * the min-sum loops below then vectorize. */
	size_t *first = dt_malloc(sizeof(size_t) * ((size_t)p->nedges + 1));
	size_t entries = 0;
	for (int32_t e = 0; e < p->nedges; e++) {
		first[e] = entries;
		entries += (size_t)p->nodes[p->edges[e].from].nstrategies *
			   (size_t)p->nodes[p->edges[e].to].nstrategies;
	}
	double *costs = dt_malloc(sizeof(double) * (entries + 1));
	for (int32_t e = 0; e < p->nedges; e++) {
		size_t n = (size_t)p->nodes[p->edges[e].from].nstrategies *
			   (size_t)p->nodes[p->edges[e].to].nstrategies;
		for (size_t k = 0; k < n; k++)
			costs[first[e] + k] = (double)p->edges[e].cost[k];
	}
	double *belief = dt_malloc(sizeof(double) * (size_t)most);
	double *out = dt_malloc(sizeof(double) * (size_t)most);
	double *h = dt_malloc(sizeof(double) * (size_t)most);
	for (int it = 0; it <= iterations; it++) {
		for (int32_t v = 0; v < p->nnodes; v++) {
			const struct dt_solve_node *nd = &p->nodes[v];
			for (int32_t s = 0; s < nd->nstrategies; s++)
				belief[s] = (double)nd->cost[s];
			for (int32_t i = adj.off[v]; i < adj.off[v + 1]; i++) {
				int32_t e = adj.edge[i];
				const double *in = &msg[off[2 * e + (p->edges[e].from == v)]];
				for (int32_t s = 0; s < nd->nstrategies; s++)
					belief[s] += in[s];
			}
			if (it == iterations) {
				x[v] = 0;
				for (int32_t s = 1; s < nd->nstrategies; s++)
					x[v] = belief[s] < belief[x[v]] ? s : x[v];
				continue;
			}
			for (int32_t i = adj.off[v]; i < adj.off[v + 1]; i++) {
				int32_t e = adj.edge[i], u = dt_edge_other(p, e, v);
				bool fwd = p->edges[e].from == v;
				const double *in = &msg[off[2 * e + fwd]];
				double *m = &msg[off[2 * e + !fwd]];
				int32_t nu = p->nodes[u].nstrategies, nv = nd->nstrategies;
				const double *mat = &costs[first[e]];
				for (int32_t s = 0; s < nv; s++)
					h[s] = belief[s] - in[s];
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
					m[su] = 0.5 * m[su] + 0.5 * (out[su] - lo);
			}
		}
	}
	dt_free(msg);
	dt_free(costs);
	dt_free(first);
	dt_free(belief);
	dt_free(out);
	dt_free(h);
	dt_free(off);
	dt_adjacency_fini(&adj);
}
