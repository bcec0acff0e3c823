// SPDX-License-Identifier: MIT
/* sharding/problem_internal.h: what the parts of the whole-graph problem
 * share: sharding/problem.c (its nodes: strategies, compute, pruning),
 * sharding/problem_usage.c (their usages and intervals) and
 * sharding/problem_moves.c (its edges: the cost of moving a value between
 * a producer's and a consumer's placements, and the publishers of values
 * several inputs read). */
#ifndef DTOPT_SHARDING_PROBLEM_INTERNAL_H
#define DTOPT_SHARDING_PROBLEM_INTERNAL_H

#include "sharding.h"

#include <math.h>

/* A consumer's input as the edges see it. */
struct dt_shard_input {
	uint32_t consumer, index; /* problem node, input of its rules */
	uint32_t producer, result;
	struct dt_rule_tensor tensor;
};

/* The edge half of a problem being built: the inputs read so far (grouped
 * by consumer, in order) and the moves' costs and the buckets they join,
 * cached by (mesh, phase, tensor, source, target): edges between values
 * of one shape ask for the same moves. Set the fields before to_output,
 * then dt_shard_edges_init. */
struct dt_shard_edges {
	struct dt_module *m;                 /* meshes, declared groups */
	const struct dt_topology *topology;
	bool create_groups;                  /* lowering declares missing
						flattened groups */
	uint8_t redistribute;                /* enum dt_redist_mode lowering
						plans with */
	bool inputs_unbucketed;              /* graph inputs' moves join no
						bucket: each pays its
						latencies */
	DT_VEC(uint8_t) to_output;           /* per graph node: only the
						output node reads it, directly
						or through views */
	DT_VEC(struct dt_shard_input) inputs;
	DT_VEC(struct dt_shard_input) copies; /* per copy node, in order: the
						 input it copies (consumer =
						 the copy node's reader) */
	uint32_t first_copy;                 /* the first copy node */
	struct dt_intern moves; /* the cache: a move's key words -> id; entry
				   id - 1 of the arrays below */
	DT_VEC(int64_t) cost;   /* ns, per entry */
	DT_VEC(uint64_t) joins; /* per entry: the buckets the move joins
				   (bit j: buckets[j]) */
	DT_VEC(double) transient; /* per entry: dt_shard_lowering's transient
				     bytes */
	DT_VEC(struct dt_shard_bucket) buckets; /* the keys bucketed moves
						   have joined so far */
	struct dt_redist_searches *searches; /* the planner's, for misses */
};
void dt_shard_edges_init(struct dt_shard_edges *e);
void dt_shard_edges_fini(struct dt_shard_edges *e);

/* Where a bucketed move's collectives run, for bucket-collectives to
 * merge them: with the graph inputs' moves (before the nodes reading
 * them) or with the moves of values only the output reads (after the
 * nodes making them). The two never share a bucket: a bucket of a key
 * per phase. */
enum dt_shard_phase {
	DT_SHARD_UNBUCKETED,
	DT_SHARD_AT_INPUTS,
	DT_SHARD_AT_OUTPUT,
};

/* The cost in ns of moving t from src to dst on mesh `mesh` (an index of
 * e->m) as lowering emits it: the planner's plan merged onto flattened
 * groups (those declared, and with create_groups any); bucketed (phase
 * not DT_SHARD_UNBUCKETED): its collectives join the buckets of their
 * keys in that phase (bucket-collectives), their latency left to the
 * buckets, which are ORed into *joins (bit j: e->buckets[j], added when
 * new; joins may be NULL); a collective past DT_SHARD_MAX_BUCKETS buckets
 * keeps its latency. Cached; DT_SOLVE_INFINITE where no redistribution
 * gets there (no buckets). _us: in µs, INFINITY there. */
int64_t dt_shard_edges_move_ns(struct dt_shard_edges *e, uint16_t mesh,
			       enum dt_shard_phase phase,
			       const struct dt_rule_tensor *t,
			       const struct dt_placements *src,
			       const struct dt_placements *dst, uint64_t *joins);
double dt_shard_edges_move_us(struct dt_shard_edges *e, uint16_t mesh,
			      enum dt_shard_phase phase,
			      const struct dt_rule_tensor *t,
			      const struct dt_placements *src,
			      const struct dt_placements *dst, uint64_t *joins);

/* The most per-rank bytes the move of t from src to dst (as
 * dt_shard_edges_move_ns()) holds at once besides its source and result
 * (struct dt_shard_lowering's transient); 0 where nothing moves or no
 * redistribution gets there. Cached with the move's cost. */
double dt_shard_edges_move_transient(struct dt_shard_edges *e, uint16_t mesh,
				     const struct dt_rule_tensor *t,
				     const struct dt_placements *src,
				     const struct dt_placements *dst);

/* Whether graph node n only names (part of) its input's value: a view op
 * or a getitem. */
static inline bool dt_shard_is_view(const struct dt_node *n)
{
	return n->kind == DT_NODE_CALL &&
	       (n->op == DT_OP_GETITEM ||
		dt_op_has((enum dt_op)n->op, DT_OPF_VIEW));
}

/* Whether the move of graph node `id`'s value to its pin joins a bucket
 * (at the output): only the output node reads the value, directly or
 * through views (a gradient, its transpose, an updated parameter: their
 * moves are independent of each other). */
static inline enum dt_shard_phase
dt_shard_edges_pin_phase(const struct dt_shard_edges *e, uint32_t id)
{
	return e->to_output.data[id] ? DT_SHARD_AT_OUTPUT : DT_SHARD_UNBUCKETED;
}

/* Whether the moves of an input from problem node `from` to `to` join
 * buckets decided by the consumer's strategy, and where: a graph input's
 * (placeholder, constant) moves are independent of everything (at the
 * inputs, unless e->inputs_unbucketed); so is a pinned value's move into
 * a view only the output reads, through views (at the output: a gradient
 * pinned before its transpose, the view's strategy decides the move, from
 * the pin). */
static inline enum dt_shard_phase
dt_shard_edges_input_phase(const struct dt_shard_edges *e,
			   const struct dt_shard_pnode *from,
			   const struct dt_shard_pnode *to, uint32_t result)
{
	enum dt_node_kind kind = dt_node_get(e->m, from->node)->kind;
	if (from->kind == DT_PNODE_SOURCE)
		return (kind == DT_NODE_PLACEHOLDER ||
			kind == DT_NODE_CONSTANT) && !e->inputs_unbucketed
			       ? DT_SHARD_AT_INPUTS
			       : DT_SHARD_UNBUCKETED;
	return from->pinned && result == 0 && to->kind == DT_PNODE_RULES &&
		       dt_shard_is_view(dt_node_get(e->m, to->node)) &&
		       e->to_output.data[to->node]
		   ? DT_SHARD_AT_OUTPUT
		   : DT_SHARD_UNBUCKETED;
}

/* Whether the moves of an input from problem node `from` to `to` join
 * buckets (at the output) decided by the producer's strategy, where
 * dt_shard_edges_input_phase() gives none: `to` is a pinned view
 * only the output reads, through views (a gradient's view pinned to its
 * parameter's placements), and its strategies giving the pin read the
 * input at one placement (dt_shard_pin_read()), so the move there
 * depends on the producer's strategy alone. Its buckets are paid from
 * the producer's strategy even where the view reads the input elsewhere
 * (a latency too many, never one too few). */
static inline bool dt_shard_edges_input_bucketed_at_pin(
    const struct dt_shard_edges *e, const struct dt_shard_pnode *from,
    const struct dt_shard_pnode *to, uint32_t result)
{
	return from->kind != DT_PNODE_SOURCE &&
	       dt_shard_edges_input_phase(e, from, to, result) ==
		   DT_SHARD_UNBUCKETED &&
	       to->kind == DT_PNODE_RULES && to->pinned &&
	       dt_shard_is_view(dt_node_get(e->m, to->node)) &&
	       e->to_output.data[to->node];
}

/* The placements at which input `in`'s consumer reads it in its
 * strategies giving the consumer's pin: NULL when none does or two read
 * it at different placements. */
const struct dt_placements *dt_shard_pin_read(const struct dt_shard_problem *pr,
					      const struct dt_shard_input *in);

/* A publisher (DT_PNODE_PUBLISH) for every value two inputs or more read,
 * unless its producer is pinned (its users read the pin) or it is a
 * getitem with a pin of its own; the inputs reading it are rewritten to
 * start there. After every node of e->m is in pr. */
void dt_shard_edges_publish(struct dt_shard_edges *e,
			    struct dt_shard_problem *pr);

/* A copy node (DT_PNODE_COPY) for every input (not a publisher's, unless
 * the value published is a view's: the publisher then holds nothing) whose
 * producer's and consumer's placements may differ: per placements the
 * input is read at, a strategy without a copy (where the producer may
 * give them) and one holding the copy (its per-rank bytes, where the
 * producer may give others). Its edges (dt_shard_edges_build) from the
 * producer and from the consumer allow only the strategy their choices
 * imply, at no cost. After dt_shard_edges_publish. */
void dt_shard_edges_copies(struct dt_shard_edges *e,
			   struct dt_shard_problem *pr);

/* pr->solve's edges: one per (producer, consumer) pair, its matrix the
 * moves of the inputs it joins, summed; then two per copy node. */
void dt_shard_edges_build(struct dt_shard_edges *e,
			  struct dt_shard_problem *pr);

/* A bucket node (DT_PNODE_BUCKET) per bucket some kept strategy's
 * bucketed moves join (pr->bucket_joins, with the moves of graph inputs'
 * edges ORed in at their consumers' strategies here): strategies unused
 * (cost 0) and used (the key's latency), and an edge from every node
 * whose strategies decide such moves, ∞ where its strategy joins the
 * bucket and the bucket is unused, else 0; e->buckets become pr->buckets.
 * After dt_shard_usage_build: the bucket nodes hold nothing. */
void dt_shard_edges_buckets(struct dt_shard_edges *e,
			    struct dt_shard_problem *pr);

/* Whether graph node id's results alias its input 0's buffer (a view, a
 * getitem, a split; a reshape the strides allow), as the interpreter
 * runs it: not a pinned view none of whose strategies gives the pin (its
 * users read the copy after it). */
bool dt_shard_aliases(const struct dt_shard_problem *pr,
		      const struct dt_module *m, uint32_t id);
/* A view's value (aliasing, not a getitem): its publisher holds nothing,
 * its link's copy node the copy a move makes. */
bool dt_shard_view_holder(const struct dt_shard_problem *pr,
			  const struct dt_module *m, uint32_t id);

/* The per-rank bytes problem node k (not a publisher or copy node) holds
 * under strategy s: each result at its placements, result 0 of a pinned
 * node at its pin (where its users read it); none for a view's results
 * (its base's bytes) unless pinned elsewhere (the copy after it), nor for
 * the results `published` marks (bit r of entry k; NULL: none), which
 * their publishers hold. */
int64_t dt_shard_held_bytes(const struct dt_shard_problem *pr,
			    const struct dt_module *m, const uint32_t *published,
			    uint32_t k, int32_t s);
/* Intervals and usages (semantics §6.6): a node's buffers live from its
 * position to just after the last reader of its buffer (a graph input's
 * to the end, as the interpreter holds them); a published value from its
 * holder's position, at the publisher's placements, its holder holding
 * none of it (a graph input holds its own: the publisher only a copy); a
 * copy node from its reader's position to just after it (to the reader's
 * end when the reader aliases it). After dt_shard_edges_build: every
 * node, publisher and copy node in pr; pos: graph node -> position, npos
 * positions. */
void dt_shard_usage_build(struct dt_shard_problem *pr, struct dt_module *m,
			  struct dt_shard_edges *e, const uint32_t *pos,
			  uint32_t npos);

/* Per-rank bytes of tensor t under pl: its largest shard. */
double dt_shard_local_bytes(const struct dt_mesh *mesh,
			    const struct dt_rule_tensor *t,
			    const struct dt_placements *pl);

/* The placements a problem node's strategy gives its users for result r
 * (a pinned node's result 0, a result whose getitem is pinned: the pin,
 * moved to after it if need be). */
static inline const struct dt_placements *
dt_shard_result_pl(const struct dt_shard_problem *pr, uint32_t k, int32_t s,
		   uint32_t r)
{
	const struct dt_shard_pnode *n = &pr->pnodes.data[k];
	if (n->pinned && r == 0)
		return &n->pin;
	if (n->pinned_results >> r & 1)
		return &pr->result_pins.data[
		    n->result_pin + (uint32_t)__builtin_popcountll(
					n->pinned_results & ((1ull << r) - 1))];
	return &dt_shard_problem_pl(pr, k, s)[r];
}

/* µs to integer ns, DT_SOLVE_INFINITE for an infinite cost; a positive
 * cost at least 1 ns: a plan that moves a small tensor must not tie with
 * one that does not (the solver breaks ties anyhow). */
static inline int64_t dt_shard_ns(double us)
{
	if (!isfinite(us))
		return DT_SOLVE_INFINITE;
	int64_t ns = (int64_t)llround(us * 1000);
	return ns == 0 && us > 0 ? 1 : ns;
}

/* a + b, saturating at DT_SOLVE_INFINITE. */
static inline int64_t dt_shard_add_sat(int64_t a, int64_t b)
{
	return a > DT_SOLVE_INFINITE - b ? DT_SOLVE_INFINITE : a + b;
}

#endif
