// SPDX-License-Identifier: MIT
/* problem_prune.h: the whole-graph problem's strategy pruning
 * (problem_prune.c), used by its builder (problem.c). Internal to
 * sharding/. */
#ifndef DTOPT_PROBLEM_PRUNE_H
#define DTOPT_PROBLEM_PRUNE_H

#include "sharding.h"

/* A problem node keeps at most this many strategies (plus its
 * node-by-node choices): those of least forward cost. */
#define DT_SHARD_PRUNE_CAP 24
/* Of a producer's kept placements, the forward costs weigh moves from
 * this many of least forward cost (and its node-by-node choices). */
#define DT_SHARD_PRUNE_SOURCES 2
/* Besides those continuing every chain, a node keeps this many chained
 * strategies (distinct results): the chains starting at it. */
#define DT_SHARD_PRUNE_CHAINS 6

/* One input of the node being pruned, as the edges will see it. */
struct dt_prune_input {
	uint32_t producer;                      /* problem node, pruned */
	int32_t nsrc;                           /* its strategies */
	const struct dt_placements *const *src; /* the placements each of
						   them gives this input */
	const struct dt_placements *dst;        /* strategy s reads
						   dst[s × stride] */
	uint32_t stride;
	bool source;                            /* the producer is a graph
						   input: a chain may gather
						   it */
};

/* The planner's cost (ns, DT_SOLVE_INFINITE where none) of moving input
 * `i` of the node being pruned from src to dst. */
typedef int64_t (*dt_prune_move)(void *ud, uint32_t i,
				 const struct dt_placements *src,
				 const struct dt_placements *dst);

struct dt_prune_rank {
	int64_t fwd;
	int32_t s;
};

struct dt_prune {
	uint32_t cap;                   /* DT_SHARD_PRUNE_CAP; 0 = none */
	DT_VEC(struct dt_placements) anchors; /* the graph's input pins:
					   a capped node keeps, per anchor,
					   its best strategy giving it */
	DT_VEC(uint32_t) first;         /* per pruned node: its values in fwd */
	DT_VEC(int64_t) fwd;            /* per kept strategy: forward cost */
	DT_VEC(uint8_t) chained;        /* per kept strategy: one of its
					   node's chained ones */
	DT_VEC(int32_t) floor, greedy;  /* per pruned node: its node-by-node
					   choices (kept) */
	double before, after;           /* strategies weighed, kept */
	uint32_t capped;                /* nodes the cap cut */
	uint32_t widest;                /* the problem node with the most
					   strategies before the cap */
	double widest_n;
	/* Scratch, reused from node to node. */
	DT_VEC(int64_t) lb, nb, gr, dmin, dfl, dgr, qf;
	DT_VEC(uint32_t) idx, slots;
	DT_VEC(struct dt_prune_rank) order;
	DT_VEC(const struct dt_placements *) distinct;
	DT_VEC(struct dt_placements) variants;
	DT_VEC(uint8_t) open, mark, seen;
	DT_VEC(uint16_t) sliced, held, reach; /* mesh dim masks */
	DT_VEC(uint32_t) vsrc;
	DT_VEC(int32_t) from, pick;
};

/* Prune the n strategies (cost[s] ns: compute plus the move to a pin;
 * pin[s] ns: that move alone; usage[s] bytes) of problem node k, the next one (nodes are
 * pruned in order, each after its producers). A strategy's forward cost
 * is its cost plus, per input, the least over the producer's kept
 * strategies (its DT_SHARD_PRUNE_SOURCES cheapest placements, its
 * node-by-node choices, and each chained one to what a chain reads of
 * it) of their forward cost plus the move between them: the cost
 * of the cheapest way to reach it were the graph a tree. With more than
 * p->cap strategies the cap keeps those of least forward cost (ties: the
 * earlier), and always the node-by-node choices: the strategy of least
 * cost plus moves from the producers' node-by-node choices (the floor
 * passes/shard_prop_global.c takes), and that of least moves plus pin
 * (greedy shard-prop's measure), so a plan built node by node survives
 * the pruning; and the finite-cost one of least usage, so the smallest
 * footprint (and every --memory-budget a plan meets with it) stays
 * reachable; and per placements of p->anchors (the pins of the graph's
 * inputs: a batch's S(0) on the data dims and R on tp is where an
 * expert keeps the activations) and for all-replicated, the strategy of
 * least forward cost giving them as result 0, so the plans that keep
 * the inputs' placements throughout (and the replicated floor) survive
 * when the cap would rank them out (3-D meshes); and its chained
 * strategies. A chain reads each input where a chained strategy of its
 * producer leaves it (a graph input also gathered on some mesh dims, a
 * partial also reduced to R, and R mesh dims also sliced where another
 * input is read sharded as it is there); of those the node keeps, per
 * input and chained placement of its producer, the best reading the
 * input there as it is (no chain ends where it can go on), and the best
 * of DT_SHARD_PRUNE_CHAINS more result placements; best: least usage,
 * then forward cost (a node without inputs chains from all it keeps).
 * So the plans that move only to gather a weight or reduce a partial
 * sum (an expert's: Megatron's heads on tp through every view) survive.
 * Sets keep[s] (n
 * entries) and returns how many are kept; the caller drops the others,
 * keeping the order. */
uint32_t dt_prune_node(struct dt_prune *p, uint32_t k, int32_t n,
		       const int64_t *cost, const int64_t *pin,
		       const int64_t *usage,
		       const struct dt_placements *res, uint32_t res_stride,
		       const struct dt_prune_input *in, uint32_t nin,
		       dt_prune_move move, void *ud, uint8_t *keep);
void dt_prune_fini(struct dt_prune *p);

#endif
