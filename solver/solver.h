/* SPDX-License-Identifier: MIT */
/* The sharding solver: pick one strategy per node of a cost graph (the
 * IOPDDL / auto-sharding problem), minimising node + edge costs, with the
 * summed usage of the live nodes at every time point under a limit.
 * Independent of the IR: shard-prop builds a dt_solve_problem from a graph,
 * `dtopt solve` reads one from the contest's JSON. */
#ifndef DTOPT_SOLVER_H
#define DTOPT_SOLVER_H

#include <stdbool.h>
#include <stdint.h>

struct dt_diag;

/* A cost that can never be chosen (the contest uses none; dtopt uses it for
 * strategies a pin or a shape rules out). Costs are integers, as in the
 * contest; dtopt's own problems count nanoseconds of modelled time. */
#define DT_SOLVE_INFINITE INT64_MAX

struct dt_solve_node {
  int64_t start, end;     /* live over [start, end): usage counts there */
  int32_t nstrategies;    /* >= 1 */
  int64_t *cost;          /* [nstrategies] node cost per strategy */
  int64_t *usage;         /* [nstrategies] usage (bytes) per strategy */
};

struct dt_solve_edge {
  int32_t from, to;       /* node indices */
  int64_t *cost;          /* [from.nstrategies * to.nstrategies], row-major
                             in the strategy of `from` */
};

struct dt_solve_problem {
  char *name;             /* may be NULL */
  int32_t nnodes, nedges;
  struct dt_solve_node *nodes;
  struct dt_solve_edge *edges;
  int64_t usage_limit;    /* < 0: no limit */
};

struct dt_solve_options {
  double timeout_s;       /* wall-clock budget of the anytime search */
  int cpu_budget;         /* 1: timeout_s is each search thread's CPU
                             time instead (benchmarks on a loaded machine:
                             what an idle one gives in timeout_s) */
  int threads;            /* worker threads (>= 1) */
  uint64_t seed;          /* deterministic search for a given seed */
  int verbose;            /* print `#` progress lines to stdout */
  int64_t max_rounds;     /* > 0: stop each thread after this many search
                             rounds, so the result depends only on seed and
                             threads (tests); 0: only the timeout stops */
  int64_t stall_rounds;   /* > 0: stop each thread after this many rounds
                             in a row that did not improve its best plan
                             (deterministic, like max_rounds); 0: never.
                             Whatever the options, the search stops as
                             soon as its plan is proven optimal. */
  int64_t exact_visits;   /* > 0: the budget of the branch and bound tried
                             on a small reduced problem before the search
                             (default 8,000,000 strategy tries: a visit
                             counts its node's strategies) */
};

struct dt_solve_result {
  int32_t *strategy;      /* [nnodes], owned by the caller */
  int64_t cost;           /* DT_SOLVE_INFINITE when no feasible plan found */
  int64_t lower_bound;    /* a proven lower bound, or INT64_MIN */
  int64_t peak_usage;     /* max over time of the chosen usages */
  double seconds;
  int timed_out;          /* 1 when the search stopped before a proof
                             (budget, max_rounds or stall_rounds) */
  int64_t rounds;         /* search rounds run, summed over threads (0
                             when the problem was solved exactly first) */
  int infinite;           /* 1 when plans within the limit were found but
                             each costs infinitely (a strategy or an edge
                             no finite choice avoids) */
};

/* Solve `problem` within `options->timeout_s`; fills `result` (its
 * `strategy` array must hold nnodes entries). Returns 0 with a feasible plan,
 * DT_E* < 0 when none was found (result->cost is then DT_SOLVE_INFINITE).
 * The problem is not modified. */
int dt_solve(const struct dt_solve_problem *problem,
             const struct dt_solve_options *options,
             struct dt_solve_result *result);

/* Read a problem in the IOPDDL contest's JSON (plain or gzip-compressed;
 * /work/shared/iopddl/example.json shows the format) into `problem`, then
 * check it with dt_solve_problem_check. Errors go to `diag` as
 * `path[:line]: error: ...` naming the node or edge; returns DT_OK,
 * DT_EINPUT (bad content) or DT_EIO (unreadable). On error `problem` is left
 * empty (dt_solve_problem_fini is still safe). */
int dt_solve_problem_read(const char *path, struct dt_solve_problem *problem,
                          struct dt_diag *diag);

/* Check a problem built in memory or read from `file` (used in messages, may
 * be NULL): every node has >= 1 strategy with non-negative costs and usages
 * and an interval with 0 <= start <= end (an empty one counts nowhere), every
 * edge joins two distinct nodes in range, no cost is negative, and the limit
 * (if any) is at least the smallest footprint: the peak over time of each
 * node's least usage among its finite-cost strategies, which is reached by
 * some plan. Reports every problem found (up to the sink's cap); returns
 * DT_OK or DT_EINPUT. */
int dt_solve_problem_check(const struct dt_solve_problem *problem,
                           const char *file, struct dt_diag *diag);

/* Free what dt_solve_problem_read allocated: the name, every cost and usage
 * array (each from dt_malloc), the node and edge arrays. Problems built by
 * hand may use it when they allocate the same way. Leaves `problem` zeroed. */
void dt_solve_problem_fini(struct dt_solve_problem *problem);

/* The peak usage of plan `strategy` (the most the nodes live at one time
 * use; 0 when none is), and in *at the earliest time it is reached, -1
 * when none. Strategies must be in range. */
int64_t dt_solve_plan_peak(const struct dt_solve_problem *problem,
                           const int32_t *strategy, int64_t *at);
/* The cost of plan `strategy` (saturating at DT_SOLVE_INFINITE) and, when
 * `peak` is not NULL, its peak usage. Strategies must be in range. */
int64_t dt_solve_plan_cost(const struct dt_solve_problem *problem,
                           const int32_t *strategy, int64_t *peak);

/* Incident edges per node: edges of node v are edge[off[v] .. off[v+1]),
 * in edge order. */
struct dt_adjacency {
	int32_t *off, *edge;
};
void dt_adjacency_init(struct dt_adjacency *a, const struct dt_solve_problem *p);
void dt_adjacency_fini(struct dt_adjacency *a);

/* Whether edge `edge` of `problem` has a pair of strategies that can be
 * chosen together: finite at both ends and in its matrix. */
bool dt_solve_edge_open(const struct dt_solve_problem *problem, int32_t edge);

#endif
