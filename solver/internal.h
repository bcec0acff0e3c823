// SPDX-License-Identifier: MIT
/* internal.h: what the solver's files share: saturating cost arithmetic, the
 * timeline (node intervals as ranges of elementary segments), the usage
 * profile, the exact reductions and the searches over a reduced problem. */
#ifndef DTOPT_SOLVER_INTERNAL_H
#define DTOPT_SOLVER_INTERNAL_H

#include "ir.h"
#include "solver.h"

#include <stdbool.h>

/* A hot loop's function cloned for AVX2 (chosen at load time by the CPU)
 * where the compiler does it (GCC on x86-64). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define DT_SOLVE_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DT_SOLVE_VECTOR_CLONES
#endif

/* Costs are >= 0 (dt_solve_problem_check); sums saturate at infinity. */
static inline int64_t dt_solve_add(int64_t a, int64_t b)
{
	return a > DT_SOLVE_INFINITE - b ? DT_SOLVE_INFINITE : a + b;
}

/* Exact sums of many costs: a plan's cost passes 64 bits when it holds
 * several of the contest's near-infinite 1e18 entries, and incremental
 * updates must not saturate. */
__extension__ typedef __int128 dt_wide;
static inline int64_t dt_wide_clamp(dt_wide x)
{
	return x >= DT_SOLVE_INFINITE ? DT_SOLVE_INFINITE : (int64_t)x;
}
/* The cost of plan s, exactly. */
dt_wide dt_plan_cost(const struct dt_solve_problem *p, const int32_t *s);

/* A list of node ids (a DT_VEC with a name, to pass between files). */
struct dt_ids {
	int32_t *data;
	uint32_t len, cap;
};

/* The distinct interval ends, sorted: segment k is [point[k], point[k+1]),
 * and node v is live over segments [lo[v], hi[v]) (empty when lo == hi). */
struct dt_timeline {
	int32_t nseg;
	int64_t *point; /* [nseg + 1] */
	int32_t *lo, *hi; /* [nnodes] */
};
void dt_timeline_init(struct dt_timeline *t, const struct dt_solve_problem *p);
void dt_timeline_fini(struct dt_timeline *t);

/* Usage per segment under range additions, with the maximum over a range:
 * a lazy segment tree over the timeline's segments. */
struct dt_profile {
	int32_t n, size;  /* segments; leaves of the tree (power of two) */
	int64_t *max, *add; /* [2 * size] */
};
void dt_profile_init(struct dt_profile *pr, int32_t nseg);
void dt_profile_fini(struct dt_profile *pr);
void dt_profile_clear(struct dt_profile *pr);
/* Add `delta` over segments [lo, hi). */
void dt_profile_add(struct dt_profile *pr, int32_t lo, int32_t hi, int64_t delta);
/* Maximum over segments [lo, hi) (INT64_MIN when empty). */
int64_t dt_profile_max(const struct dt_profile *pr, int32_t lo, int32_t hi);
/* The first segment whose usage is the global maximum. */
int32_t dt_profile_argmax(const struct dt_profile *pr);
/* Usage of segment k. */
int64_t dt_profile_at(const struct dt_profile *pr, int32_t k);

#endif

/* ---- reduce.c: exact reductions ---- */

/* A problem reduced exactly: `r` keeps the nodes that still need a choice
 * (with fewer strategies), and for the usage of eliminated nodes whose usage
 * no choice changes, a "ballast" node with one strategy and no edges. Any
 * plan of `r` expands to a plan of the original with cost `offset` + its
 * cost in `r` and the same usage at every time; an optimal one to an
 * optimal one. */
struct dt_solve_reduction {
	struct dt_solve_problem r;
	int64_t offset;
	int32_t norig;          /* nodes of the original */
	int32_t *orig_node;     /* [r.nnodes]: original node, -1 for ballast */
	int32_t **orig_strat;   /* [r.nnodes][r's strategies]: original index */
	int32_t nsteps;
	struct dt_reduce_step *steps; /* eliminations, replayed backwards */
	int64_t removed_strategies, eliminated_nodes, merged_edges;
	/* [2 * r.nedges]: the row orders of r's edges where the reduction
	 * started them, else NULL: what its dominance test learnt of the
	 * edge's matrix seen from one end (orders[2e] from edge e's `from`,
	 * orders[2e + 1] from its `to`), for an end of ns <= 64 strategies
	 * 3 * ns words: [a] bit o set where a's entry towards the other
	 * end's strategy o < 64 is 0; [ns + a] bit b set where rows a and b
	 * were compared, and then [2 * ns + a] bit b set where b's row is no
	 * more than a's everywhere. A reduction of a problem with r's edges
	 * goes on from them (dt_solve_reduce). */
	uint64_t **orders;
};

/* Reduce `p` (checked): drop infinite-cost and dominated strategies (one
 * dominates another with no more cost, no more edge cost towards every
 * neighbour strategy, and no more usage where usage counts), fix nodes left
 * with one strategy, merge parallel edges, and eliminate nodes of degree 0,
 * 1 and 2 by dynamic programming when their usage is the same whatever they
 * choose (the problem has no limit, the interval is empty, or the usages are
 * equal). Without a limit (priced problems) everything of degree <= 2 goes.
 * orders: NULL, or the row orders of p's edges as red->orders (those of
 * a reduction whose r has p's edges), which the dominance test reads and
 * adds to (so one thread's). red's series steps read p's edge matrices
 * when a plan expands: p's edges must outlive red. */
void dt_solve_reduce(const struct dt_solve_problem *p, uint64_t *const *orders,
		     struct dt_solve_reduction *red);
void dt_solve_reduction_fini(struct dt_solve_reduction *red);
/* The original plan `out[norig]` of plan `x` of red->r. */
void dt_solve_reduction_expand(const struct dt_solve_reduction *red, const int32_t *x,
			 int32_t *out);

/* The plan x[] of red->r nearest to plan `orig` of the original: each
 * node's strategy where the reduction kept it, else its least-cost one. */
void dt_solve_reduction_restrict(const struct dt_solve_reduction *red, const int32_t *orig,
			   int32_t *x);

/* Plan changes through the eliminations: given want[v] >= 0 for nodes of
 * red->r's original that are re-chosen (plan cur[] elsewhere), set want[]
 * to the best choice of every eliminated node that hangs off them (the
 * eliminations replayed backwards; one whose neighbours are at strategies
 * the reduction had dropped keeps its own) and append each to `touched`,
 * which also lists the nodes given on entry. */
void dt_solve_reduction_propagate(const struct dt_solve_reduction *red, const int32_t *cur,
			    int32_t *want, struct dt_ids *touched);

/* The cost of edge e with its ends at strategies (sv of node v, so of the
 * other end). */
static inline int64_t dt_edge_cost(const struct dt_solve_problem *p, int32_t e,
				   int32_t v, int32_t sv, int32_t so)
{
	const struct dt_solve_edge *ed = &p->edges[e];
	return v == ed->from
		? ed->cost[(int64_t)sv * p->nodes[ed->to].nstrategies + so]
		: ed->cost[(int64_t)so * p->nodes[ed->to].nstrategies + sv];
}
static inline int32_t dt_edge_other(const struct dt_solve_problem *p, int32_t e,
				    int32_t v)
{
	return p->edges[e].from == v ? p->edges[e].to : p->edges[e].from;
}

/* ---- search.c: local search over one problem ---- */

/* A plan of `p` with its cost and usage profile, changed one node at a
 * time. */
struct dt_local {
	const struct dt_solve_problem *p;
	struct dt_adjacency adj;
	struct dt_timeline tl;
	struct dt_profile prof;
	int32_t *x;
	dt_wide cost;
	DT_VEC(int32_t) queue;
	bool *queued;
};
void dt_local_init(struct dt_local *ls, const struct dt_solve_problem *p);
void dt_local_fini(struct dt_local *ls);
/* Take plan x (copied). */
void dt_local_set(struct dt_local *ls, const int32_t *x);
/* Cost change of moving v to strategy s. */
dt_wide dt_local_delta(const struct dt_local *ls, int32_t v, int32_t s);
/* Whether moving v to s keeps the usage within the limit where v is live. */
bool dt_local_fits(const struct dt_local *ls, int32_t v, int32_t s);
void dt_local_move(struct dt_local *ls, int32_t v, int32_t s);
/* The peak usage (0 without segments). */
int64_t dt_local_peak(const struct dt_local *ls);
/* Improving moves that keep the plan within the limit (when it is), until
 * none is left or `stop(ud)`; returns the number of moves. */
int64_t dt_local_descend(struct dt_local *ls, bool (*stop)(void *), void *ud);
/* Exhaustive branch and bound over `p` within `max_visits` visits (a
 * visit of a node counts its strategies, so the budget bounds time). Returns
 * 1 with an optimal plan within the limit in best[] and its cost in *cost,
 * 0 when no plan fits the limit, -1 when the budget ran out (best[] is then
 * untouched). */
int dt_exact_search(const struct dt_solve_problem *p, int64_t max_visits,
		    int32_t *best, dt_wide *cost);

/* ---- elim.c: variable elimination ---- */

/* The least-cost plan of `p`, its usage ignored, by variable elimination
 * within `max_work` table entries (elim.c): returns true with the plan in x[] and
 * its exact cost in *cost, false (x[] untouched) when the elimination
 * would need more. Without a limit the plan is optimal; with one it is
 * optimal when it fits the limit, and its cost is a lower bound. */
bool dt_eliminate(const struct dt_solve_problem *p, int64_t max_work, int32_t *x,
		  dt_wide *cost);

/* ---- lns.c: large neighbourhoods solved exactly ---- */

/* Improves the plan of ls (a problem without a limit) by re-solving balls
 * of nodes (breadth-first from a random node) with every other node held
 * at its strategy: a ball's problem (edges leaving it folded into its node
 * costs) is reduced, then solved by branch and bound within a budget,
 * exactly when that finishes, else by descent. A new plan that costs no
 * more is offered to `accept` (when set), which may refuse it. Balls grow
 * while they are solved exactly and shrink when not. */
struct dt_lns {
	struct dt_local *ls;
	uint64_t *const *orders;   /* NULL or the row orders of ls->p's
				      edges (struct dt_solve_reduction) */
	int32_t k;                 /* ball size */
	uint64_t rng;
	int32_t *id, *nodes, *cur, *plan; /* ball: index per node, members */
	int32_t n;                 /* ball members */
	struct dt_solve_problem sub; /* the ball's problem */
	uint64_t **sub_orders;       /* its edges', from `orders` */
	/* Called with the ball's nodes moved from cur[] to plan[] in ls;
	 * returns whether to keep them. */
	bool (*accept)(void *ud, const struct dt_lns *l);
	void *accept_ud;
	/* When set, a price per byte of usage per node of ls->p, times
	 * price_scale, added to the ball's node costs (repair.c). */
	const double *price;
	double price_scale;
};
void dt_lns_init(struct dt_lns *l, struct dt_local *ls, uint64_t *const *orders,
		 uint64_t seed);
void dt_lns_fini(struct dt_lns *l);
/* Run `steps` balls, or until stop(ud) or a ball holding every node was
 * solved exactly. */
void dt_lns_run(struct dt_lns *l, int64_t steps, bool (*stop)(void *), void *ud);
/* Re-solve one ball of l->k nodes grown from `root` (its usage priced by
 * l->price when set) without moving ls: the members are l->nodes[0, n),
 * their strategies now in l->cur and the ball's best plan in l->plan.
 * Returns whether that plan is exact. */
bool dt_lns_ball(struct dt_lns *l, int32_t root, bool (*stop)(void *), void *ud);

/* ---- repair.c: plans over the limit brought back within it ---- */

/* Move the plan of ls (a problem with a limit) within the limit by at most
 * `max_steps` steps, each re-solving balls of nodes live at the peak
 * segment with a price per byte there and taking the cheapest move that
 * frees the excess (else the most per cost). Returns whether the plan now
 * fits; it is changed either way. */
bool dt_repair(struct dt_local *ls, uint64_t *const *orders, int32_t max_steps,
	       bool (*stop)(void *), void *ud);

/* Messages carried from one priced core to the next (trws.c): the cores
 * of consecutive rounds hold mostly the same nodes and edges, each round
 * with its own indices and strategies. A message is kept under its
 * edge's ends as nodes of `orig` (sender, receiver) and the receiver's
 * strategy of `orig`; node[] and strat[] map the current core to orig. */
struct dt_message_memory {
	const struct dt_solve_problem *orig;
	const int32_t *node;          /* [core nodes] original node */
	int32_t *const *strat;        /* [core nodes][strategies] original */
	struct dt_intern pairs;       /* (sender, receiver) -> id */
	DT_VEC(size_t) first;         /* id -> its receiver's messages */
	DT_VEC(double) values;
};
void dt_message_memory_init(struct dt_message_memory *mem,
			    const struct dt_solve_problem *orig);
void dt_message_memory_fini(struct dt_message_memory *mem);

/* ---- lagrange.c: the usage limit relaxed into prices ---- */

/* One search thread over a reduced problem `r` (internal.h): see
 * lagrange.c. */
struct dt_lagrange {
	const struct dt_solve_problem *r;
	uint64_t **orders;           /* [2 * r edges] the row orders of r's
					edges (this thread's copy) */
	struct dt_local ls;          /* the current plan of r, within the limit */
	struct dt_solve_problem q;   /* r priced (edges shared with r) */
	double *lambda, *prefix;     /* [nseg], [nseg + 1] segment prices */
	double *weight;              /* [nseg] summed excess over the limit
					(fraction of it) of rejected plans */
	double mu, mu_lo, mu_hi;     /* prices = mu * weight; mu bisected
					between too low and high enough */
	double scale;                /* cost of the first priced plan */
	bool over_limit;             /* the round's priced plan broke it */
	bool trws;                   /* a core's start by TRW-S, not belief
					propagation */
	struct dt_message_memory memory; /* TRW-S's, from core to core */
	uint64_t seed;
	int32_t *best;               /* best plan of r within the limit */
	dt_wide best_cost;           /* of `best`, when `found` */
	bool found;
	int64_t lower_bound;         /* of r's cost, INT64_MIN if none proven */
	int64_t rounds;
	/* the round's priced reduction, its core plan and scratch */
	struct dt_solve_reduction *red;
	int32_t *want;               /* [r nodes] strategy after expansion, -1 */
	struct dt_ids touched;
	int32_t *undo;               /* [r nodes] strategy before the ball */
};
/* Start from the plan of least usage (ties: least cost), within the limit
 * when dt_solve_problem_check passed. orders: NULL or the row orders of
 * r's edges, copied. */
void dt_lagrange_init(struct dt_lagrange *lg, const struct dt_solve_problem *r,
		      uint64_t *const *orders, uint64_t seed);
void dt_lagrange_fini(struct dt_lagrange *lg);
/* One round; returns whether it improved lg->best. */
bool dt_lagrange_round(struct dt_lagrange *lg, bool (*stop)(void *), void *ud);

/* ---- bp.c, trws.c: message passing ---- */

/* Min-sum messages over the edges of `p` (both directions; doubles,
 * zero at first), its edge matrices as doubles, and scratch of the most
 * strategies a node has. An infinite cost (node or edge entry) stands as
 * `big`: with finite_big (dt_messages_init) one more than the costliest
 * plan of finite costs could be (every node's and every edge's largest
 * finite cost summed), so a plan through it still costs more than any
 * finite one while sums and differences of messages stay exact, where
 * INT64_MAX as a double (else) swallows the finite costs beside it
 * (x + 9.2e18 - 9.2e18 is 0 for x below 1024). */
struct dt_messages {
	const struct dt_solve_problem *p;
	struct dt_adjacency adj;
	size_t *off;            /* msg[off[2e]]: into e's `to`, [2e+1]: `from` */
	size_t *first;          /* costs[first[e]]: e's matrix */
	double *msg, *costs;
	double *belief, *h, *out;
	double big;
};
/* finite_big: infinite costs weigh as `big` (TRW-S always; belief
 * propagation on a problem without a limit). Else, as INT64_MAX in a
 * double: belief propagation's priced cores keep the arithmetic the
 * priced search was tuned with. */
void dt_messages_init(struct dt_messages *m, const struct dt_solve_problem *p,
		      bool finite_big);
void dt_messages_fini(struct dt_messages *m);
/* A cost as the messages weigh it: an infinite one is m->big. */
double dt_messages_cost(const struct dt_messages *m, int64_t cost);
/* The message along edge e into its end v (indexed by v's strategy). */
double *dt_messages_into(const struct dt_messages *m, int32_t e, int32_t v);
/* m->belief[] = v's cost plus every message into v. */
void dt_messages_gather(struct dt_messages *m, int32_t v);
/* m->out[su] = min over v's strategies s of m->h[s] plus edge e's cost
 * between s and the other end's su; returns the least m->out[]. */
double dt_messages_min_sum(struct dt_messages *m, int32_t e, int32_t v);

/* A plan of `p` (its costs only; usage is ignored) from `iterations` rounds
 * of damped min-sum message passing, each node then at its least belief,
 * into x[]. */
void dt_bp_plan(const struct dt_solve_problem *p, int iterations,
		bool only_start, int32_t *x);
/* The same start by sequential tree-reweighted message passing (trws.c):
 * `iterations` passes, x[] the cheapest plan decoded (only_start), or at
 * most that many, stopping once decoded plans settle, x[] the last.
 * mem: NULL, or the messages to start from and to keep for the next
 * core, mem->node and mem->strat mapping p to mem->orig. */
void dt_trws_plan(const struct dt_solve_problem *p, int iterations,
		  bool only_start, struct dt_message_memory *mem, int32_t *x);
