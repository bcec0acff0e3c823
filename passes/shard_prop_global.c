// SPDX-License-Identifier: MIT
/* shard_prop_global.c: shard-prop's whole-graph search (--search=global,
 * semantics §6.6): the problem of sharding/problem.c handed to the solver
 * (solver.h), after the checks that name what makes it unsolvable: pins
 * no redistribution reconciles, a memory budget below the smallest
 * footprint. The node-by-node plan and the replicated one in the
 * problem's terms are floors: the solver's is taken only when cheaper
 * (it is anytime: a loaded machine leaves it little of its budget). shard-prop then applies the
 * plan node by node.
 *
 *   x @ [S(0)] ─ mm ─ relu ─ sum      greedy: each node's cheapest from
 *   w @ [R]     ─┘                    its inputs; global: the least total
 *                                     of compute, moves and memory
 *
 * Time: the solver's (bounded by --solve-timeout) plus one pass over
 * every edge matrix. */
#include "passes.h"
#include "sharding.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* The solver's threads and its default budget in search rounds per
 * thread: a problem it solves exactly (small ones, after its reductions)
 * or within rounds gets the same plan on every machine, under any load,
 * so every rank lowered for itself (opt -o 'L.{rank}.xml' solves once per
 * rank) takes the same plan. --solve-timeout trades that for wall-clock time.
 * The suite's largest problems (3-D meshes) stop after 8 rounds without a
 * better plan well within the cap. */
#define DT_GLOBAL_THREADS 2
#define DT_GLOBAL_MAX_ROUNDS 64
/* A thread stops after this many search rounds without a better plan
 * (on dtopt's problems the best is found within the first few). Without
 * a limit every round after the first only searches neighbourhoods of
 * the same unpriced problem: on the suite's 48 such problems (toy and
 * medium) and 4- and 12-block GPT-2s on 2x2x2 the best plan came in the
 * first round at every stall tried (session 22). */
#define DT_GLOBAL_STALL_ROUNDS 8
#define DT_GLOBAL_STALL_ROUNDS_UNLIMITED 2
/* The exact search's budget before the anytime one: a reduced problem it
 * has not solved in this many visits (3-D meshes' cores of ~60 nodes) it
 * rarely solves in 10x more, and the search finds its plan in a round. */
#define DT_GLOBAL_EXACT_VISITS 200000

static const char *node_name(const struct dt_module *m, uint32_t id)
{
	return dt_str_get(m, dt_node_get(m, id)->name);
}

static void node_diag(struct dt_pass_ctx *ctx, enum dt_severity sev,
		      uint32_t id, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void node_diag(struct dt_pass_ctx *ctx, enum dt_severity sev,
		      uint32_t id, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	dt_diag_vreport(ctx->diag, sev, ctx->m->file,
			dt_node_get(ctx->m, id)->line, tag, fmt, ap);
	va_end(ap);
}

/* "pinned to S(0) R" or "" for a node without a <sharding>. */
static void pin_text(const struct dt_module *m, uint32_t id, char *buf,
		     size_t n)
{
	const struct dt_sharding *s = dt_node_sharding(m, dt_node_get(m, id));
	char pl[128];
	if (!s) {
		buf[0] = 0;
		return;
	}
	dt_placements_print(&s->placements, pl, sizeof pl);
	snprintf(buf, n, " (pinned to %s)", pl);
}

/* Whether every edge has a pair of strategies with a finite move. One
 * that has none (the pins at its ends, or the op's rules, leave the
 * problem's strategies no way to move the value) is warned about: the
 * node search then decides, computing a pinned node where its inputs can
 * go and moving the result to the pin, or says why it cannot. */
static bool check_edges(struct dt_pass_ctx *ctx, const struct dt_shard_problem *pr)
{
	const struct dt_solve_problem *p = &pr->solve;
	for (int32_t k = 0; k < p->nedges; k++) {
		if (dt_solve_edge_open(p, k))
			continue;
		const struct dt_solve_edge *e = &p->edges[k];
		uint32_t from = pr->pnodes.data[e->from].node;
		uint32_t to = pr->pnodes.data[e->to].node;
		char a[160], b[160];
		pin_text(ctx->m, from, a, sizeof a);
		pin_text(ctx->m, to, b, sizeof b);
		node_diag(ctx, DT_WARNING, to, "shard-prop:no-plan",
			  "node '%s'%s cannot read '%s'%s in the whole-graph "
			  "problem: no redistribution moves its value to "
			  "placements a strategy of '%s' accepts; placements "
			  "chosen node by node (--search=greedy)",
			  node_name(ctx->m, to), b, node_name(ctx->m, from), a,
			  node_name(ctx->m, to));
		return false;
	}
	return true;
}

/* The peak over time of every node's least usage, the node live at the
 * peak with the largest share in *at: no plan uses less. */
static int64_t smallest_footprint(const struct dt_solve_problem *p,
				  int32_t *at)
{
	int64_t horizon = 0;
	for (int32_t k = 0; k < p->nnodes; k++)
		horizon = p->nodes[k].end > horizon ? p->nodes[k].end : horizon;
	int64_t *use = dt_calloc((size_t)horizon + 1, sizeof *use);
	int64_t *least = dt_calloc((size_t)p->nnodes + 1, sizeof *least);
	for (int32_t k = 0; k < p->nnodes; k++) {
		const struct dt_solve_node *n = &p->nodes[k];
		least[k] = INT64_MAX;
		for (int32_t s = 0; s < n->nstrategies; s++)
			if (n->cost[s] != DT_SOLVE_INFINITE &&
			    n->usage[s] < least[k])
				least[k] = n->usage[s];
		if (least[k] == INT64_MAX)
			least[k] = 0;
		for (int64_t t = n->start; t < n->end; t++)
			use[t] += least[k];
	}
	int64_t peak = 0, when = 0;
	for (int64_t t = 0; t < horizon; t++)
		if (use[t] > peak) {
			peak = use[t];
			when = t;
		}
	*at = -1;
	for (int32_t k = 0; k < p->nnodes; k++)
		if (p->nodes[k].start <= when && when < p->nodes[k].end &&
		    (*at < 0 || least[k] > least[*at]))
			*at = k;
	dt_free(use);
	dt_free(least);
	return peak;
}

/* The node-by-node plan in the problem's terms, the floor the solver's
 * must beat: in an order with producers first, each node takes the
 * strategy of least node cost plus moves from its producers' choices.
 * Time: O(edges + the edges into each node times its strategies). */
static void node_by_node(const struct dt_solve_problem *p, int32_t *x)
{
	int32_t n = p->nnodes;
	struct dt_adjacency adj;
	dt_adjacency_init(&adj, p);
	int32_t *indegree = dt_calloc((size_t)n + 1, sizeof *indegree);
	int32_t *order = dt_calloc((size_t)n + 1, sizeof *order);
	for (int32_t j = 0; j < p->nedges; j++)
		indegree[p->edges[j].to]++;
	int32_t head = 0, tail = 0;
	for (int32_t k = 0; k < n; k++)
		if (indegree[k] == 0)
			order[tail++] = k;
	while (head < tail) {
		int32_t k = order[head++];
		int32_t ns = p->nodes[k].nstrategies;
		int64_t best = DT_SOLVE_INFINITE;
		x[k] = 0;
		for (int32_t s = 0; s < ns; s++) {
			int64_t c = p->nodes[k].cost[s];
			for (int32_t i = adj.off[k]; i < adj.off[k + 1]; i++) {
				const struct dt_solve_edge *e = &p->edges[adj.edge[i]];
				if (e->to != k)
					continue;
				int64_t m = e->cost[(size_t)x[e->from] *
						    (size_t)ns + (size_t)s];
				c = c > DT_SOLVE_INFINITE - m ? DT_SOLVE_INFINITE
							      : c + m;
			}
			if (c < best) {
				best = c;
				x[k] = s;
			}
		}
		for (int32_t i = adj.off[k]; i < adj.off[k + 1]; i++) {
			const struct dt_solve_edge *e = &p->edges[adj.edge[i]];
			if (e->from == k && --indegree[e->to] == 0)
				order[tail++] = e->to;
		}
	}
	dt_adjacency_fini(&adj);
	dt_free(indegree);
	dt_free(order);
}

/* The replicated plan, the second floor: every node that has a strategy
 * with all its placements replicated takes it (graph inputs are moved to
 * R once, their moves joining buckets), the others their choice in `x`.
 * Small models run replicated at the cost of gathering their inputs: a
 * plan the search must not miss when it stops early. */
static void replicated_plan(const struct dt_shard_problem *pr, int32_t *x)
{
	for (uint32_t k = 0; k < pr->pnodes.len; k++) {
		const struct dt_shard_pnode *n = &pr->pnodes.data[k];
		const struct dt_solve_node *sn = &pr->solve.nodes[k];
		if (dt_shard_pnode_follows(n->kind))
			continue;
		for (int32_t s = 0; s < sn->nstrategies; s++) {
			const struct dt_placements *pl =
			    dt_shard_problem_pl(pr, k, s);
			bool all = sn->cost[s] != DT_SOLVE_INFINITE;
			for (uint32_t w = 0; w < n->width && all; w++)
				for (int m = 0; m < pl[w].ndim && all; m++)
					all = pl[w].p[m].kind == DT_PL_REPLICATE;
			if (all) {
				x[k] = s;
				break;
			}
		}
	}
	dt_shard_problem_settle(pr, x);
}

/* Take plan `x` into `strategy` (*cost, *peak) when it fits the limit and
 * costs less. */
static void take_if_cheaper(const struct dt_solve_problem *p, const int32_t *x,
			    int32_t *strategy, int64_t *cost, int64_t *peak)
{
	int64_t c_peak, c = dt_solve_plan_cost(p, x, &c_peak);
	if ((p->usage_limit < 0 || c_peak <= p->usage_limit) &&
	    c < DT_SOLVE_INFINITE && c < *cost) {
		memcpy(strategy, x, (size_t)p->nnodes * sizeof *strategy);
		*cost = c;
		*peak = c_peak;
	}
}

int dt_shard_global_build(struct dt_pass_ctx *ctx, struct dt_shard_problem *pr,
			  const struct dt_shard_problem_options *po)
{
	double start = dt_now();
	int rc = dt_shard_problem_build(pr, ctx->m, po, ctx->diag);
	dt_pass_phase_time(ctx, "whole-graph problem build", dt_now() - start);
	return rc;
}

/* Problems a cache keeps: one per value of inputs_unbucketed. */
#define DT_PROBLEM_CACHE_SLOTS 2

/* A plan the search found, as its remarks tell it. */
struct solved_plan {
	int64_t limit;       /* the problem's usage limit */
	int32_t *strategy;   /* per problem node */
	int64_t cost, peak, lower_bound;
	bool at_timeout, at_rounds; /* the search stopped at its limit */
};

struct dt_shard_cached {
	bool used, inputs_unbucketed;
	uint32_t nodes, args, tensors, shardings; /* the module's */
	struct dt_shard_problem pr;
	DT_VEC(struct solved_plan) plans; /* one per usage limit solved */
};

struct dt_shard_problem_cache {
	struct dt_shard_cached slot[DT_PROBLEM_CACHE_SLOTS];
};

struct dt_shard_problem_cache *dt_shard_problem_cache_create(void)
{
	return dt_calloc(1, sizeof(struct dt_shard_problem_cache));
}

void dt_shard_problem_cache_destroy(struct dt_shard_problem_cache *c)
{
	for (int k = 0; c && k < DT_PROBLEM_CACHE_SLOTS; k++) {
		if (!c->slot[k].used)
			continue;
		dt_shard_problem_fini(&c->slot[k].pr);
		for (uint32_t i = 0; i < c->slot[k].plans.len; i++)
			dt_free(c->slot[k].plans.data[i].strategy);
		dt_vec_free(&c->slot[k].plans);
	}
	dt_free(c);
}

static bool cached_for(const struct dt_shard_cached *c,
		       const struct dt_module *m,
		       const struct dt_shard_problem_options *po)
{
	return c->used && c->inputs_unbucketed == po->inputs_unbucketed &&
	       c->nodes == m->nodes.len && c->args == m->args.len &&
	       c->tensors == m->tensors.len &&
	       c->shardings == m->shardings.len;
}

int dt_shard_global_problem(struct dt_pass_ctx *ctx,
			    const struct dt_shard_problem_options *po,
			    struct dt_shard_problem *pr,
			    struct dt_shard_cached **cached)
{
	struct dt_shard_problem_cache *cache =
	    ctx->options ? ctx->options->problem_cache : NULL;
	const struct dt_module *m = ctx->m;
	*cached = NULL;
	for (int k = 0; cache && !po->hint && k < DT_PROBLEM_CACHE_SLOTS; k++)
		if (cached_for(&cache->slot[k], m, po)) {
			*pr = cache->slot[k].pr;
			pr->solve.usage_limit = po->budget;
			*cached = &cache->slot[k];
			dt_shard_problem_remark_pruned(pr, m, ctx->diag);
			return DT_OK;
		}
	int rc = dt_shard_global_build(ctx, pr, po);
	if (rc != DT_OK || !cache || po->hint ||
	    pr->entries > DT_SHARD_PROBLEM_MAX_ENTRIES)
		return rc;
	for (int k = 0; k < DT_PROBLEM_CACHE_SLOTS; k++)
		if (!cache->slot[k].used) {
			cache->slot[k] = (struct dt_shard_cached){
			    .used = true,
			    .inputs_unbucketed = po->inputs_unbucketed,
			    .nodes = m->nodes.len,
			    .args = m->args.len,
			    .tensors = m->tensors.len,
			    .shardings = m->shardings.len,
			    .pr = *pr};
			*cached = &cache->slot[k];
			break;
		}
	return rc;
}

void dt_shard_global_options(const struct dt_pass_ctx *ctx,
			     const struct dt_solve_problem *p,
			     struct dt_solve_options *so)
{
	const struct dt_pass_options *o = ctx->options;
	bool timed = o && o->solve_timeout > 0;
	*so = (struct dt_solve_options){
	    .timeout_s = timed ? o->solve_timeout : 0,
	    .max_rounds = timed ? 0 : DT_GLOBAL_MAX_ROUNDS,
	    .threads = DT_GLOBAL_THREADS,
	    .stall_rounds = p->usage_limit < 0 ? DT_GLOBAL_STALL_ROUNDS_UNLIMITED
					       : DT_GLOBAL_STALL_ROUNDS,
	    .exact_visits = DT_GLOBAL_EXACT_VISITS,
	};
}

bool dt_shard_global_built(struct dt_pass_ctx *ctx,
			   const struct dt_shard_problem *pr,
			   enum dt_severity sev, const char *then)
{
	if (pr->entries <= DT_SHARD_PROBLEM_MAX_ENTRIES)
		return true;
	if (isinf(pr->entries)) {
		uint32_t id = pr->pnodes.data[pr->pnodes.len - 1].node;
		node_diag(ctx, sev, id, "shard-prop:too-large",
			  "node '%s' has too many strategies to enumerate for "
			  "the whole-graph problem%s",
			  node_name(ctx->m, id), then);
	} else {
		dt_diag_report(ctx->diag, sev, ctx->m->file, 0,
			       "shard-prop:too-large",
			       "the whole-graph problem would hold more than "
			       "%.0f edge matrix entries%s",
			       DT_SHARD_PROBLEM_MAX_ENTRIES, then);
	}
	return false;
}

/* What the pass says of plan s of pr, found by the search with options
 * so or taken again from a cache: its estimated peak to
 * options->search_peak, and the remarks: where the search stopped at its
 * limit, and the plan's modelled cost and peak. */
static void report_plan(struct dt_pass_ctx *ctx,
			const struct dt_shard_problem *pr,
			const struct dt_solve_options *so,
			const struct solved_plan *s)
{
	if (ctx->options->search_peak)
		*ctx->options->search_peak = s->peak;
	if (!ctx->diag->remarks)
		return;
	uint32_t first = pr->pnodes.data[0].node;
	if (s->at_timeout)
		node_diag(ctx, DT_REMARK, first, "shard-prop:timeout",
			  "the whole-graph search stopped at its %.1f s limit: "
			  "the plan is the best found",
			  so->timeout_s);
	if (s->at_rounds)
		node_diag(ctx, DT_REMARK, first, "shard-prop:timeout",
			  "the whole-graph search stopped at its limit of %" PRId64
			  " rounds per thread: the plan is the best found "
			  "(--solve-timeout gives it time instead)",
			  so->max_rounds);
	char bound[64] = "";
	if (s->lower_bound != INT64_MIN)
		snprintf(bound, sizeof bound, ", lower bound %.2f us",
			 (double)s->lower_bound / 1000);
	int64_t compute = dt_shard_problem_compute_ns(pr, s->strategy);
	node_diag(ctx, DT_REMARK, first, "shard-prop:global",
		  "whole-graph plan of %d nodes: modelled %.2f us (compute "
		  "%.2f us, communication %.2f us)%s, peak %" PRId64
		  " bytes per rank",
		  pr->solve.nnodes, (double)s->cost / 1000,
		  (double)compute / 1000, (double)(s->cost - compute) / 1000,
		  bound, s->peak);
}

int dt_shard_global_solve(struct dt_pass_ctx *ctx,
			  const struct dt_shard_problem *pr,
			  struct dt_shard_cached *cached, int32_t *strategy,
			  bool *solved)
{
	const struct dt_solve_problem *p = &pr->solve;
	*solved = false;
	if (p->nnodes == 0)
		return DT_OK;
	struct dt_solve_options so;
	dt_shard_global_options(ctx, p, &so);
	for (uint32_t i = 0; cached && i < cached->plans.len; i++) {
		const struct solved_plan *s = &cached->plans.data[i];
		if (s->limit != p->usage_limit)
			continue;
		memcpy(strategy, s->strategy,
		       (size_t)p->nnodes * sizeof *strategy);
		*solved = true;
		report_plan(ctx, pr, &so, s);
		return DT_OK;
	}
	if (!check_edges(ctx, pr))
		return DT_OK;
	int32_t at;
	int64_t floor = smallest_footprint(p, &at);
	if (p->usage_limit >= 0 && floor > p->usage_limit) {
		uint32_t id = pr->pnodes.data[at].node;
		node_diag(ctx, DT_ERROR, id, NULL,
			  "--memory-budget=%" PRId64 " is below the smallest "
			  "per-rank footprint found, %" PRId64
			  " bytes (while '%s' is live, every value at its "
			  "smallest placements)",
			  p->usage_limit, floor, node_name(ctx->m, id));
		return DT_EINPUT;
	}
	struct dt_solve_result res = {.strategy = strategy};
	int rc = dt_solve(p, &so, &res);
	dt_pass_phase_time(ctx, "whole-graph solve", res.seconds);
	/* Never worse than deciding node by node, nor than running
	 * replicated. */
	if (rc != DT_OK)
		res.cost = DT_SOLVE_INFINITE;
	int32_t *floor_plan = dt_calloc((size_t)p->nnodes + 1, sizeof *floor_plan);
	node_by_node(p, floor_plan);
	take_if_cheaper(p, floor_plan, strategy, &res.cost, &res.peak_usage);
	replicated_plan(pr, floor_plan);
	take_if_cheaper(p, floor_plan, strategy, &res.cost, &res.peak_usage);
	if (res.cost < DT_SOLVE_INFINITE)
		rc = DT_OK;
	dt_free(floor_plan);
	uint32_t first = pr->pnodes.data[0].node;
	if (rc != DT_OK && p->usage_limit >= 0) {
		node_diag(ctx, DT_ERROR, first, NULL,
			  "the whole-graph search found no plan within "
			  "--memory-budget in %.1f s (smallest per-rank "
			  "footprint %" PRId64 " bytes)",
			  res.seconds, floor);
		return DT_EINPUT;
	}
	if (rc != DT_OK) {
		node_diag(ctx, DT_WARNING, first, "shard-prop:no-plan",
			  "the whole-graph search found no plan in %.1f s; "
			  "placements chosen node by node (--search=greedy)",
			  res.seconds);
		return DT_OK;
	}
	*solved = true;
	struct solved_plan found = {
	    .limit = p->usage_limit,
	    .strategy = strategy,
	    .cost = res.cost,
	    .peak = res.peak_usage,
	    .lower_bound = res.lower_bound,
	    .at_timeout = so.timeout_s > 0 && res.seconds >= so.timeout_s,
	    .at_rounds = so.timeout_s <= 0 &&
			 res.rounds >= so.threads * so.max_rounds};
	report_plan(ctx, pr, &so, &found);
	if (cached) {
		size_t bytes = (size_t)p->nnodes * sizeof *strategy;
		found.strategy = memcpy(dt_malloc(bytes + 1), strategy, bytes);
		dt_vec_push(&cached->plans, found);
	}
	return DT_OK;
}
