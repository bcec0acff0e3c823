// SPDX-License-Identifier: MIT
/* sharding.h: sharding propagation's parts (semantics §6): the rule table
 * of single-mesh-dim rows written with R, P(op) and the placeholder S*(d)
 * (sharding/rules.def, sharding/rules.c), the expansion of a node's rows
 * to its strategies on an N-D mesh, and the search for the strategy of
 * least redistribution cost from the inputs' placements: a priority queue
 * over input placements, or full enumeration, the oracle
 * (sharding/search.c). The `shard-prop` pass and `dtopt explain` use them.
 *
 *     struct dt_rules rules = {0};
 *     if (dt_rules_fill(&rules, m, node, err, sizeof err) != DT_OK) ...
 *     struct dt_shard_request req = {.mesh = mesh, .current = placements};
 *     struct dt_shard_space space = {0};
 *     dt_shard_space_init(&space, &rules, &req);
 *     struct dt_shard_choice best = {0};
 *     struct dt_shard_stats stats = {0};
 *     if (dt_shard_search(&space, DT_SEARCH_PQ, &best, &stats) == DT_OK &&
 *         best.found)
 *             ... best.placements[0 .. nout) outputs, then the inputs ...
 *     dt_shard_choice_fini(&best);
 *     dt_shard_space_fini(&space);
 *     dt_rules_fini(&rules);
 *
 * The objects may be filled again without fini in between (their memory
 * is reused); fini once at the end. */
#ifndef DTOPT_SHARDING_H
#define DTOPT_SHARDING_H

#include "ir.h"
#include "solver.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Single-mesh-dim rules. */

enum dt_rule_kind {
	DT_RULE_REPLICATE, /* R */
	DT_RULE_PARTIAL,   /* P(op) */
	DT_RULE_SHARD,     /* S*(d): any sharding kind of tensor dim d (S, or
			      a _S(d,sf) whose sf the inputs carry) */
	DT_RULE_STRIDED,   /* exactly _S(d,split), or S(d) when split is 1:
			      a view that merges a sharded inner dim into
			      its outer ones, or splits such a dim back out */
};

struct dt_rule_entry {
	uint8_t kind;   /* enum dt_rule_kind */
	uint8_t reduce; /* enum dt_reduce_op, for P */
	int8_t dim;     /* tensor dim, for S* and _S */
	int32_t split;  /* split factor, for DT_RULE_STRIDED */
};

enum dt_rule_row_flag {
	DT_ROW_EVEN = 1 << 0,     /* only where every rank holds as much of
				     each tensor dim the row shards (a view
				     that splits or merges the dim, a mean) */
	DT_ROW_PLAIN = 1 << 1,    /* S* stands for S only: the row splits or
				     merges dims, which a _S does not survive */
	DT_ROW_NONEMPTY = 1 << 2, /* only where every rank holds some of each
				     dim the row shards (max over a dim) */
	DT_ROW_NO_UNIT = 1 << 3,  /* only where no rank holds exactly one of a
				     dim the row shards (squeeze.default
				     drops local dims of length 1) */
	DT_ROW_STRIDED = 1 << 4,  /* only where every mesh dim sharding a dim
				     the row shards uses this same row: its
				     split factors count pieces of the global
				     dim, which another row's shards would
				     cut differently */
	DT_ROW_GLOBAL_COUNT = 1 << 5, /* right as lower-redistribute lowers
				     the op, counting the global tensor's
				     elements (mse_loss_backward's mean
				     divides by numel(self)), not as the op
				     runs on its shard */
};

/* One tensor of a node: an output (a result of the node) or an input (a
 * tensor argument, in schema order, list elements in order). */
struct dt_rule_tensor {
	uint32_t node;     /* inputs: the node whose value is read */
	uint32_t arg;      /* inputs: index in m->args of the argument (an
			      item argument for item lists) holding it, or
			      UINT32_MAX when it sits in m->refs */
	uint32_t ref;      /* inputs: index in m->refs, when arg is UINT32_MAX */
	uint8_t param;     /* inputs: schema parameter; outputs: result index */
	uint8_t dtype;
	uint8_t rank;
	bool ignored;      /* inputs whose placement the op does not care about
			      (new_zeros reads only self's dtype): no rule
			      mentions them and they are never redistributed */
	int64_t shape[DT_MAX_RANK]; /* global shape */
};

/* The single-dim rows of one node. Row r holds nout + nin entries, the
 * outputs' first. The all-replicate row is not listed: expansion adds it. */
struct dt_rules {
	enum dt_op op;
	const char *family;  /* the rule family of sharding/rules.def */
	uint32_t nout, nin;
	DT_VEC(struct dt_rule_tensor) tensors; /* outputs, then inputs */
	DT_VEC(struct dt_rule_entry) entries;
	DT_VEC(uint8_t) flags;                 /* per row, DT_ROW_* */
	uint32_t nrows;
	bool inplace; /* output 0 keeps input 0's placement (an in-place op);
			 no op of the table is one today */
};

static inline const struct dt_rule_entry *dt_rules_row(const struct dt_rules *r,
						       uint32_t row)
{
	return &r->entries.data[row * (r->nout + r->nin)];
}
static inline const struct dt_rule_tensor *dt_rules_input(const struct dt_rules *r,
							  uint32_t i)
{
	return &r->tensors.data[r->nout + i];
}

/* The rule family of `op` ("pointwise", "matmul", "reduction", …;
 * "replicate" for ops with no rows), or NULL for the ops sharding
 * propagation handles itself (placeholder, output, getitem,
 * dtensor.redistribute) and the collectives, which have no rules. */
const char *dt_rules_family(enum dt_op op);

/* Fill `r` with the rows of call node `node` of a global-view module whose
 * metadata are known (SHAPES), from its op's family, its arguments and the
 * shapes of its tensors. Returns DT_OK, or DT_EINPUT with a one-line
 * message in err when the node has no rule table entry or more tensors
 * than a rule can hold (DT_RULE_MAX_TENSORS). */
#define DT_RULE_MAX_TENSORS 256
int dt_rules_fill(struct dt_rules *r, const struct dt_module *m, uint32_t node,
		  char *err, size_t errlen);
void dt_rules_fini(struct dt_rules *r);

/* "R", "P(sum)", "S*(1)" (snprintf semantics). */
int dt_rule_entry_print(const struct dt_rule_entry *e, char *buf, size_t n);
/* A row as "OUT, OUT <- IN, IN" (ignored inputs as "-"). */
int dt_rules_row_print(const struct dt_rules *r, uint32_t row, char *buf,
		       size_t n);

/* ------------------------------------------------------------------ */
/* Expansion and search. */

enum dt_shard_search {
	DT_SEARCH_GLOBAL,     /* shard-prop only, its default: one strategy
				 per node for the whole graph
				 (shard_prop_global.c); a node's own search
				 is then the pq's */
	DT_SEARCH_PQ,         /* priority queue from the inputs' placements */
	DT_SEARCH_EXHAUSTIVE, /* every strategy (the oracle) */
};

/* Where a node's inputs are, and what its output must be. */
struct dt_shard_request {
	const struct dt_mesh *mesh;
	const struct dt_topology *topology; /* NULL = DTensor's defaults */
	const struct dt_placements *current; /* one per input (ignored ones
						 too), with shard order */
	const struct dt_placements *pin;     /* output 0 must be exactly this
						 (a <sharding> on the node);
						 NULL = free */
	/* More placements whose sharding kinds (S, _S split factors) fill the
	 * rows' placeholders, as the inputs' own do: the whole-graph search
	 * weighs placements no input has yet. NULL/0 = none. */
	const struct dt_placements *kinds;
	uint32_t nkinds;
	/* dt_shard_enumerate weighs no move: every strategy passing the
	 * filters, at cost 0 (the whole-graph search prices moves itself). */
	bool uncosted;
};

/* A node's strategy space: the rows filled with the inputs' sharding kinds
 * and the all-replicate row (first); a strategy picks one row per mesh
 * dim. Also the search's caches (plan costs per input and placements). */
struct dt_shard_space {
	const struct dt_rules *rules;
	struct dt_mesh mesh;          /* copy (devices not used) */
	struct dt_topology topology;
	struct dt_placements pin;
	struct dt_placements pin_rows; /* the pin as the rows write it (a
					  view's nested _S: factors over the
					  whole dim, search.c) */
	bool has_pin;
	bool uncosted;                /* as the request's */
	uint32_t width;               /* nout + nin */
	uint32_t nrows;               /* expanded rows */
	DT_VEC(struct dt_placement) rows;   /* nrows × width */
	DT_VEC(uint8_t) row_flags;
	DT_VEC(uint32_t) row_origin;  /* single-dim row filled, UINT32_MAX for
					 the all-replicate row */
	DT_VEC(struct dt_placements) current; /* per input, as the rows
						 write them (pin_rows) */
	DT_VEC(struct dt_placements) given;   /* per input, as requested */
	bool strided;                 /* some row is strided (_S): placements
					 in rows form differ from their own */
	/* Per input: the placements a state may give one mesh dim (those of
	 * the input's column in the rows and its current ones), sorted. */
	DT_VEC(uint32_t) cand_first;  /* nin + 1 */
	DT_VEC(struct dt_placement) cand;
	DT_VEC(uint8_t) start;        /* the state of the current placements:
					 per input a candidate index per mesh
					 dim, then 1 when its shard order is
					 not the default one */
	uint32_t state_bytes;         /* nin × (mesh dims + 1) */
	DT_VEC(uint8_t) row_cand;     /* nrows × nin: each row's input
					 placements as candidate indices */
	/* Plan cost cache: (input, state of the input) → µs. */
	DT_VEC(uint64_t) cache_dims;  /* candidate index per mesh dim */
	DT_VEC(uint32_t) cache_input; /* input << 1 | re-order flag, +1; 0 =
					 empty slot */
	DT_VEC(double) cache_cost;
	uint32_t cache_used;
	uint64_t plans;               /* planner calls made (cache misses) */
	DT_VEC(double) move_cost;     /* per (input, mesh dim, collective):
					 the least that collective costs
					 moving the input on that dim */
	/* The priority queue's scratch, reused from search to search. */
	DT_VEC(uint8_t) pq_states;    /* state_bytes per state */
	DT_VEC(double) pq_cost;       /* the key: a lower bound on the cost
					 of every state its later moves
					 reach; a matched state's cost */
	DT_VEC(double) pq_bound;      /* per input, while keying a state */
	DT_VEC(double) pq_need;       /* per input, while keying a state */
	DT_VEC(uint32_t) pq_changes;
	DT_VEC(uint8_t) pq_terminal;  /* a matched state keyed by its cost */
	DT_VEC(uint32_t) pq_heap;     /* state ids */
	DT_VEC(struct dt_placements) strategy; /* width, being checked */
};

/* Expand `rules` for `req` (semantics §6 steps 1–2): placeholders filled
 * with the sharding kinds of the inputs (S, each distinct _S split factor;
 * rows with DT_ROW_PLAIN with S only; none: placeholder rows drop), the
 * all-replicate row first, duplicates dropped. `rules` must outlive the
 * space's use; the request's mesh, topology and placements are copied. */
void dt_shard_space_init(struct dt_shard_space *s, const struct dt_rules *rules,
			 const struct dt_shard_request *req);
void dt_shard_space_fini(struct dt_shard_space *s);
/* rows ^ mesh dims: the strategies before filtering. Saturates at
 * UINT64_MAX. */
uint64_t dt_shard_space_product(const struct dt_shard_space *s);
/* The entries of expanded row `row` (width placements, outputs first). */
static inline const struct dt_placement *dt_shard_space_row(const struct dt_shard_space *s,
							    uint32_t row)
{
	return &s->rows.data[row * s->width];
}

/* One strategy and what it costs. */
struct dt_shard_choice {
	bool found;
	uint32_t rows[DT_MAX_MESH_DIMS]; /* expanded row per mesh dim */
	uint64_t index;      /* position in enumeration order: mesh dim 0's
				row slowest */
	double cost;         /* µs: sum over inputs of the plan cost from the
				current placements */
	uint32_t changes;    /* (input, mesh dim) pairs that move, plus
				inputs re-ordered */
	DT_VEC(struct dt_placements) placements; /* width: outputs, inputs
						    (ignored inputs keep
						    their current ones) */
	DT_VEC(uint8_t) state;                   /* the inputs' state, for
						    the tie order */
};
void dt_shard_choice_fini(struct dt_shard_choice *c);
/* Copy b into a (a's memory reused). */
void dt_shard_choice_copy(struct dt_shard_choice *a, const struct dt_shard_choice *b);
/* The search order: cost, then changes, then the inputs' placements (each
 * input's mesh dims in order, placements ordered R < S(d) < _S(d,sf) <
 * P(op), by dim, split factor, op), then the enumeration index. <0, 0, >0. */
int dt_shard_choice_compare(const struct dt_shard_choice *a,
			    const struct dt_shard_choice *b);

struct dt_shard_stats {
	uint64_t strategies; /* strategies passing the filters (exhaustive;
				the pq leaves 0: it does not count them) */
	uint64_t candidates; /* exhaustive: strategies costed; pq: states
				taken from the queue and checked against the
				rows */
	uint64_t costed;     /* states whose cost was computed (pq: the start
				and every new neighbour; exhaustive: as
				candidates) */
	uint64_t plans;      /* planner calls (distinct input placements) */
};

/* Find the strategy of least cost (semantics §6 step 3–4). The filters:
 * partial ops of a tensor mixed only as {sum, avg}; a tensor dim sharded
 * over k ranks needs length >= k (and the local lengths the row flags ask
 * for: equal, non-empty, not one); an in-place op's output 0 keeps input
 * 0's placement; a pin fixes output 0. Ties break by dt_shard_choice_compare: fewer moved inputs,
 * then the smaller placements, then the lower index; both modes return
 * the same strategy. PQ: a best-first search over the inputs' placements
 * from the current ones (sharding/search.c): each state keyed by a lower
 * bound on the cost of what it leads to, moves taken in a fixed order of
 * (input, mesh dim) entries, stopping when a state some valid strategy
 * consumes comes out of the queue at its exact cost, so it returns the
 * exhaustive search's strategy (tests/rules check it over whole placement
 * spaces).
 * Returns DT_OK (out->found false when no strategy passes: a pin or an
 * in-place op the rows cannot satisfy), or DT_EINPUT when an exhaustive
 * search would exceed DT_SHARD_MAX_ENUMERATION strategies. Stats are
 * added to *stats (may be NULL). */
#define DT_SHARD_MAX_ENUMERATION 20000000ull
int dt_shard_search(struct dt_shard_space *s, enum dt_shard_search mode,
		    struct dt_shard_choice *out, struct dt_shard_stats *stats);

/* For a pin no strategy gives: the strategy (of a space without the pin)
 * whose cost plus that of moving its output 0 to `target` afterwards is
 * least, ties as dt_shard_search; out->cost stays the strategy's own.
 * Every strategy is weighed; with more than DT_SHARD_MAX_ENUMERATION, the
 * search's choice in `mode`. Returns out->cost plus the move, INFINITY
 * when nothing reaches the target (out->found false). */
double dt_shard_search_toward(struct dt_shard_space *s, const struct dt_placements *target,
			      enum dt_shard_search mode, struct dt_shard_choice *out);

/* Call fn for every strategy passing the filters with a finite cost (any
 * cost when the space is uncosted), in
 * enumeration order (what the exhaustive search weighs); returns the
 * number passing the filters (finite cost or not: DTensor's count), or
 * UINT64_MAX without calling fn when rows ^ mesh dims exceeds
 * DT_SHARD_MAX_ENUMERATION. The choice passed is only valid during the
 * call. */
uint64_t dt_shard_enumerate(struct dt_shard_space *s,
			    void (*fn)(void *ud, const struct dt_shard_choice *c),
			    void *ud);

/* A value whose tensor dim d is split, on every mesh dim sharding it, as
 * _S(d,P) with P >= 2 (the pieces of a view that merged a sharded inner
 * dim behind outer dims of product P, semantics §6.1), or after S(d) on
 * mesh dims before them (a nested _S: the S shards cut the outer dims,
 * P = its factor times their shards) is no shard order, so the planner
 * cannot move it (other dims may hold anything, a shard-order _S
 * included; the first such d is taken). Read with dim d split into (P,
 * len/P) it is a shard of dim d+1 (and the S ones of dim d): it moves
 * through that view (shard-prop inserts it; the search prices it). */
struct dt_shard_unflat {
	int dim;                       /* d */
	int64_t pieces;                /* P */
	int rank;                      /* of the unflattened tensor */
	int64_t shape[DT_MAX_RANK];    /* unflattened */
	struct dt_placements sharded;  /* the placements, unflattened */
	struct dt_placements gathered; /* unflattened, those mesh dims R */
	struct dt_placements flat;     /* the placements, those mesh dims R */
};
/* Whether `pl` (on a mesh of shape mesh_shape) on a tensor of
 * shape[0..rank) is such a value; fills *out. */
bool dt_shard_unflatten(const struct dt_placements *pl,
			const int64_t *mesh_shape, const int64_t *shape,
			int rank, struct dt_shard_unflat *out);
/* Whether `pl` is such a value too, with u's dim and pieces (then the two
 * move into each other through the unflattened view); fills *out. */
bool dt_shard_unflatten_alike(const struct dt_shard_unflat *u,
			      const struct dt_placements *pl,
			      const int64_t *mesh_shape, const int64_t *shape,
			      int rank, struct dt_shard_unflat *out);

/* What bucket-collectives merges a collective on (semantics §4.7): its
 * kind (enum dt_comm_kind: all_gather, reduce_scatter, all_reduce), its
 * group (the mesh dims it runs on, in the group's rank order; the move's
 * mesh), the tensor's dtype and the reduce op (sum for all_gather); and
 * the latency the bucket pays once for all its members
 * (dt_redist_step_latency). */
struct dt_shard_bucket_key {
	uint8_t kind, ndims, dtype, reduce;
	uint8_t dims[DT_MAX_MESH_DIMS];
	double latency_us;
};
static inline bool dt_shard_bucket_key_equal(const struct dt_shard_bucket_key *a,
					     const struct dt_shard_bucket_key *b)
{
	return a->kind == b->kind && a->ndims == b->ndims &&
	       a->dtype == b->dtype && a->reduce == b->reduce &&
	       memcmp(a->dims, b->dims, a->ndims) == 0;
}
/* The keys of one move's bucketed collectives: a move has a few steps. */
#define DT_SHARD_MOVE_KEYS 8
struct dt_shard_move_keys {
	int n;
	struct dt_shard_bucket_key key[DT_SHARD_MOVE_KEYS];
};

/* How lowering will emit a move, for dt_shard_move_cost to price that:
 * its steps merged onto flattened groups with `merge` (its price_only set,
 * its mesh the move's; NULL: the planner's plain steps, DTensor's
 * pricing), and with `bucketed` its collectives joining buckets of others
 * (bucket-collectives): their latency is left out and their keys added to
 * `keys`, except a second collective of a key the move already has (it
 * depends on the first, so it cannot share its bucket) or one past the
 * room in `keys`, which keeps its latency; `mode` the planner's plans
 * lowering makes (--redistribute=; 0: DTensor's). */
struct dt_redist_merge_options;
struct dt_shard_lowering {
	const struct dt_redist_merge_options *merge;
	bool bucketed;
	uint8_t mode; /* enum dt_redist_mode */
	struct dt_shard_move_keys *keys; /* with bucketed */
	double *transient; /* non-NULL: set to the most per-rank bytes the
			      move's lowered steps hold at once besides its
			      source and its result (intermediate steps'
			      values, the gathered buffer an all_gather on
			      a dim past 0 cats from, the cat a
			      reduce_scatter or all_to_all on one sends) */
	struct dt_redist_searches *searches; /* the planner's searches kept
						between moves (NULL: none) */
};

/* What moving a tensor of shape t->shape (rank, dtype) from `src` to `dst`
 * costs on `mesh` (µs, from the planner's plan; a value that is no shard
 * order gathers through its unflattened view first), INFINITY when no
 * redistribution gets there; priced as `low` says (NULL: plain steps, no
 * bucket). */
double dt_shard_move_cost(const struct dt_mesh *mesh,
			  const struct dt_topology *topology,
			  const struct dt_rule_tensor *t,
			  const struct dt_placements *src,
			  const struct dt_placements *dst,
			  const struct dt_shard_lowering *low);

/* ------------------------------------------------------------------ */
/* The whole-graph problem (sharding/problem*.c; semantics §6.6): one
 * problem node per node that makes a value, its strategies those the
 * per-node search weighs (every sharding kind, not only the inputs'),
 * edges the redistributions between a producer's and a consumer's
 * placements. A getitem is no problem node: its users read its
 * producer's result. */

/* How a problem node came to have its strategies. */
enum dt_shard_pnode_kind {
	DT_PNODE_SOURCE,     /* placeholder, constant, dtensor.redistribute:
				its <sharding> only (width 1) */
	DT_PNODE_RULES,      /* the op's expanded rules */
	DT_PNODE_NO_RULE,    /* no rule for the op: runs replicated */
	DT_PNODE_NO_STRATEGY, /* rules, none applies: runs replicated */
	DT_PNODE_PUBLISH,    /* a value two inputs or more read: the one
				placement all of them read it from (one
				redistribution after it, shared), width 1,
				no results; its node is the value's */
	DT_PNODE_COPY,       /* the copy a move makes for one input (memory
				only, no cost): width 1, the placements the
				input is read at; its first `kept` strategies
				read the value where it is (no copy), the
				others hold a copy; its node is the
				consumer's */
	DT_PNODE_RESULT,     /* the results of a node of several results
				(its node) living past the node's own
				interval (memory only, no cost): its
				strategy is the node's (an edge ∞ off the
				diagonal), width 0 */
	DT_PNODE_BUCKET      /* a bucket bucketed moves join
				(pr->buckets[bucket]): strategy 0 unused
				(cost 0), 1 used (its latency, paid once for
				all its moves); width 0, no usage; its node
				is its first joiner's */
};

/* Whether a problem node of this kind follows its neighbours: its
 * strategy is the one the edges into it allow given their ends' (a copy
 * node, a result node, a bucket node), modelling memory or a latency,
 * not placements of a graph node of its own. */
static inline bool dt_shard_pnode_follows(uint8_t kind)
{
	return kind == DT_PNODE_COPY || kind == DT_PNODE_RESULT ||
	       kind == DT_PNODE_BUCKET;
}

struct dt_shard_pnode {
	uint32_t node;       /* the graph node */
	uint16_t mesh;
	uint8_t kind;        /* enum dt_shard_pnode_kind */
	bool pinned;         /* a <sharding> on the node: its users read
				result 0 at the pin; its strategies are
				those giving the pin or reaching it by
				reductions and local slices alone
				(P(sum|avg) where the pin has R or S, R
				where it has S), paying the move, or when none
				does, every one paying the move there */
	bool carries;        /* a pinned view holding its base's bytes
				whatever its strategy (problem_usage.c's
				carried_view()): aliases nothing */
	uint32_t nout, width; /* results; placements per strategy (results,
				 then inputs) */
	uint32_t first;      /* its strategies' index in the per-strategy
				arrays */
	uint32_t pl;         /* strategy s's placements: pl + s × width */
	uint32_t kept;       /* DT_PNODE_COPY: its strategies without a copy */
	uint32_t bucket;     /* DT_PNODE_BUCKET: its index in pr->buckets */
	uint64_t pinned_results; /* bit r: a getitem of result r has a pin of
				    its own (not result 0 of a pinned node):
				    each strategy pays the move there, its
				    users read the pin */
	uint32_t result_pin; /* those pins: pr->result_pins from here, in
				order of result */
	struct dt_placements pin; /* when pinned */
};

/* A bucket of the problem: the key bucket-collectives merges on, on mesh
 * `mesh`, and its bucket node (UINT32_MAX: no kept strategy joins it). */
struct dt_shard_bucket {
	struct dt_shard_bucket_key key;
	uint16_t mesh;
	uint8_t phase; /* enum dt_shard_phase (problem_internal.h) */
	uint32_t pnode;
};
/* The buckets a problem tells apart (bits of a uint64_t). */
#define DT_SHARD_MAX_BUCKETS 64

struct dt_shard_problem {
	struct dt_solve_problem solve; /* node k is pnodes[k]; costs in ns,
					  usages in per-rank bytes, intervals
					  over graph positions; its arrays
					  dt_malloc'd one by one */
	DT_VEC(struct dt_shard_pnode) pnodes;
	DT_VEC(uint32_t) of_node;    /* graph node -> problem node (a
					getitem: its producer's); NONE */
	DT_VEC(uint8_t) result;      /* graph node -> the result it names */
	DT_VEC(uint32_t) publish;    /* graph node -> its value's publishing
					node, NONE */
	DT_VEC(struct dt_placements) placements; /* dt_shard_problem_pl */
	DT_VEC(double) compute_us;   /* per strategy: modelled compute */
	DT_VEC(double) pin_us;       /* per strategy: the move to the pin */
	DT_VEC(uint64_t) bucket_joins; /* per strategy: the buckets its
					  bucketed moves join (its pin's,
					  its graph inputs'), bit j:
					  buckets[j] */
	DT_VEC(struct dt_shard_bucket) buckets;
	DT_VEC(struct dt_placements) result_pins; /* dt_shard_pnode's */
	double entries;              /* the edge matrices' sizes, summed */
	DT_VEC(uint8_t) hint;        /* per problem node: enum
					dt_shard_hint_state (with hints) */
	DT_VEC(int32_t) hint_at;     /* per problem node: the kept strategy
					an expert's plan takes (with
					DT_HINT_KEPT), else -1 */
	/* What the pruning cap cut (the remark shard-prop:pruned): nodes
	 * capped, strategies weighed and kept, the problem node with the
	 * most before the cap and how many it had. */
	struct dt_shard_pruned {
		uint32_t capped, cap, widest;
		double before, after, widest_n;
	} pruned;
};

/* Above this many edge matrix entries the problem is not built (its
 * nodes are, its edges left empty): a mesh of 3 dims gives ops hundreds
 * of strategies and GPT-2-size graphs billions of entries before
 * pruning; after it, about 800 an edge. A make_fx GPT-2 of L layers on
 * 2x2x2 holds 0.8e6 entries a layer: 12 layers (9.7e6) solve in 17 s
 * and 213 MB, 32 layers (Llama-7B's depth, 26e6) in 49 s and 528 MB
 * (session 22); at the limit about 650 MB. */
#define DT_SHARD_PROBLEM_MAX_ENTRIES 32e6

/* The placements of strategy `s` of problem node `k` (width entries). */
static inline const struct dt_placements *
dt_shard_problem_pl(const struct dt_shard_problem *pr, uint32_t k, int32_t s)
{
	const struct dt_shard_pnode *n = &pr->pnodes.data[k];
	return &pr->placements.data[n->pl + (uint32_t)s * n->width];
}

/* What the problem is built for: the cost model's machine, the per-rank
 * memory budget (bytes, < 0: none) that becomes the usage limit, and
 * whether lowering may declare missing flattened groups (--create-groups:
 * moves are priced merged onto any; otherwise onto the declared ones). */
struct dt_shard_problem_options {
	const struct dt_topology *topology;
	int64_t budget;
	bool create_groups;
	uint8_t redistribute; /* enum dt_redist_mode lowering plans with */
	bool inputs_unbucketed; /* graph inputs' moves join no bucket
				   (dt_pass_options' search_inputs_unbucketed) */
	/* Per graph node, placements of result 0 to report on (an expert's
	 * plan, --expert-pins; ndim 0: none), or NULL: pr->hint says where
	 * each went. They change nothing in the problem. */
	const struct dt_placements *hint;
};

/* Where a hinted node's strategy went in the problem: the expert's is,
 * of those giving the hint, the one of least cost plus moves from where
 * its producers' hints (pins, sources) put its inputs. */
enum dt_shard_hint_state {
	DT_HINT_NONE,   /* no hint (or a pinned node) */
	DT_HINT_KEPT,   /* kept */
	DT_HINT_PRUNED, /* the cap dropped it */
	DT_HINT_ABSENT, /* no strategy of the node's rules gives the hint */
};

/* Build the problem of global-view module `m` (SHAPES known). Returns
 * DT_OK, or DT_EINPUT after reporting to `diag` (inputs on different
 * meshes, a node with too many tensors, a pin no strategy reaches). With
 * more than DT_SHARD_PROBLEM_MAX_ENTRIES entries, returns DT_OK with no
 * edges (pr->entries says why; INFINITY: the last node of pr->pnodes has
 * more strategies than can be enumerated). Start from a zeroed problem;
 * fini it either way. Time: per node its strategies × inputs, per edge the
 * distinct placement pairs of its ends (planner calls). */
int dt_shard_problem_build(struct dt_shard_problem *pr, struct dt_module *m,
			   const struct dt_shard_problem_options *o,
			   struct dt_diag *diag);
void dt_shard_problem_fini(struct dt_shard_problem *pr);
/* Remark shard-prop:pruned (with remarks on, where the cap cut any
 * node's strategies): what pr->pruned says, at the widest node. */
void dt_shard_problem_remark_pruned(const struct dt_shard_problem *pr,
				    const struct dt_module *m,
				    struct dt_diag *diag);
/* Write the problem in the IOPDDL contest's JSON, the form
 * dt_solve_problem_read reads (solver.h): intervals, costs and usages per
 * node, node pairs and row-major cost matrices per edge, the usage limit
 * when there is one. */
void dt_shard_problem_write(const struct dt_shard_problem *pr, FILE *out);
/* The graph node at time `t` of the problem's timeline (its intervals
 * count positions in graph order, every node included), 0 when none. */
uint32_t dt_shard_problem_node_at(const struct dt_module *m, int64_t t);
/* Settle plan x's followers (dt_shard_pnode_follows: copy, result and
 * bucket nodes, whose every edge comes in): each takes the first
 * strategy every edge into it allows given x, as its ends' choices
 * imply. */
void dt_shard_problem_settle(const struct dt_shard_problem *pr, int32_t *x);
/* The modelled compute (ns) of plan x (a strategy per problem node): its
 * nodes' compute, the rest of its cost being communication (moves, moves
 * to pins). */
int64_t dt_shard_problem_compute_ns(const struct dt_shard_problem *pr,
				    const int32_t *x);

/* Plan cost in µs of moving input `i` from its current placements to
 * `target` (default shard order), cached; INFINITY when no redistribution
 * gets there (S->P, P(x)->P(y), mixed partial ops). */
double dt_shard_input_cost(struct dt_shard_space *s, uint32_t i,
			   const struct dt_placements *target);

#endif
