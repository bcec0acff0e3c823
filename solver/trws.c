// SPDX-License-Identifier: MIT
/* trws.c: sequential tree-reweighted message passing (TRW-S, Kolmogorov
 * 2006) over a problem without a limit (internal.h, dt_trws_plan): the
 * starting plan of a priced core on the search's odd threads (bp.c's
 * belief propagation is the even threads'). Nodes in index order; a
 * node's messages towards its later neighbours are sent on the forward
 * pass, towards its earlier ones on the backward pass, from gamma_v = 1 /
 * max(earlier, later neighbours) of its belief (cost plus every incoming
 * message) less the reverse message. Unlike damped loopy belief
 * propagation it never oscillates: each pass raises a lower bound of the
 * linear relaxation, and where that relaxation is tight its plan is the
 * optimum. A plan is decoded on a forward pass, each node choosing
 * against its earlier neighbours' choices and its later neighbours'
 * messages, every TRWS_DECODE_EVERY passes: with only_start (a problem
 * without a limit, solved once) the cheapest decoded in all the passes
 * is the plan (the decodes can stall for hundreds of passes before a
 * cheaper one: the medium-size llama/fsdp_tp core, 198 nodes, reaches its
 * optimum after more than 30 decodes in a row without progress); on a
 * priced core, whose messages start where the thread's previous core's
 * ended (struct dt_message_memory: the prices move a little from round to
 * round, the dual optimum with them), the passing stops once a decoded
 * plan repeats the one before. Messages are doubles normalised to a
 * minimum of 0 (bp.c's store), infinite costs standing finite (as
 * INT64_MAX they cancelled out of the differences and left the decoded
 * plans of the medium-size llama/fsdp_tp core at twice the optimum after
 * 3000 passes). Cost per iteration: the sum of the edge matrix sizes,
 * twice. */
#include "internal.h"

#include <string.h>

#define TRWS_DECODE_EVERY 10 /* passes between decoded plans */

/* gamma[v] of each node (above). */
static double *gammas(const struct dt_messages *m)
{
	const struct dt_solve_problem *p = m->p;
	double *gamma = dt_malloc(sizeof(double) * ((size_t)p->nnodes + 1));
	for (int32_t v = 0; v < p->nnodes; v++) {
		int32_t lo = 0, hi = 0;
		for (int32_t i = m->adj.off[v]; i < m->adj.off[v + 1]; i++)
			dt_edge_other(p, m->adj.edge[i], v) < v ? lo++ : hi++;
		int32_t most = lo > hi ? lo : hi;
		gamma[v] = 1.0 / (double)(most > 0 ? most : 1);
	}
	return gamma;
}

/* One pass: forward sends to later neighbours in index order, backward
 * to earlier ones in reverse order. */
static void pass(struct dt_messages *m, const double *gamma, bool forward)
{
	const struct dt_solve_problem *p = m->p;
	for (int32_t k = 0; k < p->nnodes; k++) {
		int32_t v = forward ? k : p->nnodes - 1 - k;
		dt_messages_gather(m, v);
		for (int32_t i = m->adj.off[v]; i < m->adj.off[v + 1]; i++) {
			int32_t e = m->adj.edge[i], u = dt_edge_other(p, e, v);
			if (forward ? u < v : u > v)
				continue;
			const double *back = dt_messages_into(m, e, v);
			for (int32_t s = 0; s < p->nodes[v].nstrategies; s++)
				m->h[s] = gamma[v] * m->belief[s] - back[s];
			double lo = dt_messages_min_sum(m, e, v);
			double *msg = dt_messages_into(m, e, u);
			for (int32_t su = 0; su < p->nodes[u].nstrategies; su++)
				msg[su] = m->out[su] - lo;
		}
	}
}

/* x[v] in index order: v's cost, its edges to earlier neighbours at their
 * choices, and its later neighbours' messages. */
static void decode(struct dt_messages *m, int32_t *x)
{
	const struct dt_solve_problem *p = m->p;
	for (int32_t v = 0; v < p->nnodes; v++) {
		const struct dt_solve_node *nd = &p->nodes[v];
		for (int32_t s = 0; s < nd->nstrategies; s++)
			m->belief[s] = dt_messages_cost(m, nd->cost[s]);
		for (int32_t i = m->adj.off[v]; i < m->adj.off[v + 1]; i++) {
			int32_t e = m->adj.edge[i], u = dt_edge_other(p, e, v);
			const double *in = dt_messages_into(m, e, v);
			for (int32_t s = 0; s < nd->nstrategies; s++)
				m->belief[s] += u > v ? in[s]
					: dt_messages_cost(m, dt_edge_cost(
						p, e, v, s, x[u]));
		}
		x[v] = 0;
		for (int32_t s = 1; s < nd->nstrategies; s++)
			x[v] = m->belief[s] < m->belief[x[v]] ? s : x[v];
	}
}

void dt_message_memory_init(struct dt_message_memory *mem,
			    const struct dt_solve_problem *orig)
{
	memset(mem, 0, sizeof(*mem));
	mem->orig = orig;
	dt_intern_init(&mem->pairs);
	dt_vec_push(&mem->first, 0); /* id 0: the empty key */
}

void dt_message_memory_fini(struct dt_message_memory *mem)
{
	dt_intern_fini(&mem->pairs);
	dt_vec_free(&mem->first);
	dt_vec_free(&mem->values);
}

/* The kept messages from core node u to core node v, indexed by v's
 * original strategies: made (zero) where none are kept yet. */
static double *kept(struct dt_message_memory *mem, int32_t u, int32_t v)
{
	int32_t key[2] = {mem->node[u], mem->node[v]};
	uint32_t id = dt_intern(&mem->pairs, key, sizeof key);
	if (id == mem->first.len) {
		size_t n = (size_t)mem->orig->nodes[key[1]].nstrategies;
		dt_vec_push(&mem->first, mem->values.len);
		dt_vec_grow(&mem->values, (uint32_t)n);
		memset(&mem->values.data[mem->values.len - n], 0, sizeof(double) * n);
	}
	return &mem->values.data[mem->first.data[id]];
}

/* Between m's messages and the kept ones: load or save. */
static void carry(struct dt_messages *m, struct dt_message_memory *mem, bool save)
{
	const struct dt_solve_problem *p = m->p;
	for (int32_t e = 0; e < 2 * p->nedges; e++) {
		const struct dt_solve_edge *ed = &p->edges[e / 2];
		int32_t v = e % 2 ? ed->from : ed->to, u = e % 2 ? ed->to : ed->from;
		double *msg = dt_messages_into(m, e / 2, v), *k = kept(mem, u, v);
		for (int32_t s = 0; s < p->nodes[v].nstrategies; s++) {
			double *at = &k[mem->strat[v][s]];
			if (save)
				*at = msg[s];
			else
				msg[s] = *at;
		}
	}
}

void dt_trws_plan(const struct dt_solve_problem *p, int iterations,
		  bool only_start, struct dt_message_memory *mem, int32_t *x)
{
	struct dt_messages m;
	dt_messages_init(&m, p, true);
	if (mem)
		carry(&m, mem, false);
	double *gamma = gammas(&m);
	int32_t *y = dt_malloc(sizeof(int32_t) * ((size_t)p->nnodes + 1));
	size_t plan_bytes = sizeof(int32_t) * (size_t)p->nnodes;
	bool decoded = false; /* x holds a decoded plan */
	dt_wide best = 0;     /* with only_start, its cost */
	for (int it = 1; it <= iterations; it++) {
		pass(&m, gamma, true);
		pass(&m, gamma, false);
		if (it % TRWS_DECODE_EVERY != 0 && it < iterations)
			continue;
		decode(&m, y);
		if (only_start) {
			dt_wide cost = dt_plan_cost(p, y);
			if (!decoded || cost < best) {
				best = cost;
				memcpy(x, y, plan_bytes);
			}
		} else {
			bool settled = decoded && !memcmp(x, y, plan_bytes);
			memcpy(x, y, plan_bytes);
			if (settled)
				break;
		}
		decoded = true;
	}
	if (mem)
		carry(&m, mem, true);
	dt_free(y);
	dt_free(gamma);
	dt_messages_fini(&m);
}
