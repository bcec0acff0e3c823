// SPDX-License-Identifier: MIT
/* test_solver.c: the sharding solver (solver/) against brute force: the
 * contest's example, random small problems with and without a usage limit
 * (the reductions must keep the optimum exactly, dt_solve must find it),
 * the search on problems too big for branch and bound (plans within the
 * limit, costs consistent, deterministic for a seed), the message passing
 * starts (exact where the relaxation is tight), and the checks of
 * bad problems. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Route the library's allocations through cmocka so leaks fail a test
 * (single-threaded tests only: cmocka's allocator is not thread-safe). */
static void *cmocka_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		test_free(ptr);
		return NULL;
	}
	return test_realloc(ptr, size);
}

static int setup(void **state)
{
	(void)state;
	dt_set_allocator(cmocka_realloc, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dt_set_allocator(NULL, NULL);
	return 0;
}

/* ---- building problems ---- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static void init_problem(struct dt_solve_problem *p, int32_t nnodes, int32_t nedges)
{
	memset(p, 0, sizeof(*p));
	p->nnodes = nnodes;
	p->nedges = nedges;
	p->nodes = dt_calloc((size_t)nnodes + 1, sizeof(*p->nodes));
	p->edges = dt_calloc((size_t)nedges + 1, sizeof(*p->edges));
	p->usage_limit = -1;
}

static void set_node(struct dt_solve_problem *p, int32_t v, int64_t start,
		     int64_t end, int32_t ns, const int64_t *cost, const int64_t *usage)
{
	struct dt_solve_node *nd = &p->nodes[v];
	nd->start = start;
	nd->end = end;
	nd->nstrategies = ns;
	nd->cost = dt_malloc(sizeof(int64_t) * (size_t)ns);
	nd->usage = dt_malloc(sizeof(int64_t) * (size_t)ns);
	memcpy(nd->cost, cost, sizeof(int64_t) * (size_t)ns);
	memcpy(nd->usage, usage, sizeof(int64_t) * (size_t)ns);
}

static void set_edge(struct dt_solve_problem *p, int32_t e, int32_t from, int32_t to,
		     const int64_t *cost)
{
	size_t n = (size_t)p->nodes[from].nstrategies * p->nodes[to].nstrategies;
	p->edges[e].from = from;
	p->edges[e].to = to;
	p->edges[e].cost = dt_malloc(sizeof(int64_t) * n);
	memcpy(p->edges[e].cost, cost, sizeof(int64_t) * n);
}

/* A random problem: up to `maxn` nodes of up to `maxs` strategies, small
 * costs (ties and dominance happen), edges on random pairs (parallel ones
 * too), intervals in [0, 8) (empty ones too); a limit between the least
 * and the greatest footprint when `limited`. */
static void random_problem(struct dt_solve_problem *p, int32_t maxn, int32_t maxs,
			   bool limited)
{
	int32_t n = 1 + (int32_t)rnd((uint32_t)maxn);
	int32_t m = n > 1 ? (int32_t)rnd((uint32_t)(2 * n)) : 0;
	init_problem(p, n, m);
	for (int32_t v = 0; v < n; v++) {
		int32_t ns = 1 + (int32_t)rnd((uint32_t)maxs);
		int64_t cost[8], usage[8];
		for (int32_t s = 0; s < ns; s++) {
			cost[s] = rnd(20);
			usage[s] = rnd(10);
		}
		int64_t a = rnd(8), b = rnd(8);
		set_node(p, v, a < b ? a : b, a < b ? b : a, ns, cost, usage);
	}
	for (int32_t e = 0; e < m; e++) {
		int32_t a = (int32_t)rnd((uint32_t)n), b = (int32_t)rnd((uint32_t)n - 1);
		b += b >= a;
		int64_t cost[64];
		for (int32_t i = 0; i < p->nodes[a].nstrategies * p->nodes[b].nstrategies; i++)
			cost[i] = rnd(4) == 0 ? 0 : rnd(30);
		set_edge(p, e, a, b, cost);
	}
	if (limited) {
		int32_t *lo = dt_calloc((size_t)n, sizeof(int32_t));
		int32_t *hi = dt_calloc((size_t)n, sizeof(int32_t));
		for (int32_t v = 0; v < n; v++)
			for (int32_t s = 0; s < p->nodes[v].nstrategies; s++) {
				lo[v] = p->nodes[v].usage[s] < p->nodes[v].usage[lo[v]] ? s : lo[v];
				hi[v] = p->nodes[v].usage[s] > p->nodes[v].usage[hi[v]] ? s : hi[v];
			}
		int64_t least, most;
		dt_solve_plan_cost(p, lo, &least);
		dt_solve_plan_cost(p, hi, &most);
		p->usage_limit = least + (int64_t)rnd((uint32_t)(most - least + 1));
		dt_free(lo);
		dt_free(hi);
	}
}

/* The optimum by enumeration (cost DT_SOLVE_INFINITE when nothing fits);
 * the plan goes to best[] when not NULL. */
static int64_t brute_force(const struct dt_solve_problem *p, int32_t *best)
{
	int32_t *x = dt_calloc((size_t)p->nnodes + 1, sizeof(int32_t));
	int64_t opt = DT_SOLVE_INFINITE;
	for (;;) {
		int64_t peak;
		int64_t c = dt_solve_plan_cost(p, x, &peak);
		if ((p->usage_limit < 0 || peak <= p->usage_limit) && c < opt) {
			opt = c;
			if (best)
				memcpy(best, x, sizeof(int32_t) * (size_t)p->nnodes);
		}
		int32_t v = 0;
		while (v < p->nnodes && ++x[v] == p->nodes[v].nstrategies)
			x[v++] = 0;
		if (v == p->nnodes)
			break;
	}
	dt_free(x);
	return opt;
}

/* ---- the contest's example ---- */

static const char example_json[] =
	"{\"problem\": {\"name\": \"example\",\n"
	"  \"nodes\": {\"intervals\": [[30, 70], [40, 70], [50, 120], [110, 140], [110, 150]],\n"
	"    \"costs\": [[15], [55, 65], [25, 45, 35], [85, 75], [95]],\n"
	"    \"usages\": [[10], [25, 25], [15, 20, 15], [10, 10], [15]]},\n"
	"  \"edges\": {\"nodes\": [[0, 1], [0, 2], [1, 3], [2, 4], [3, 4]],\n"
	"    \"costs\": [[30, 40], [50, 10, 40], [90, 10, 20, 80], [60, 20, 30], [70, 60]]},\n"
	"  \"usage_limit\": 50}}\n";

/* Write `text` to a fresh temporary file; returns its name (static). */
static const char *temp_file(const char *text)
{
	static char name[] = "/tmp/dtopt_solver_XXXXXX";
	strcpy(name, "/tmp/dtopt_solver_XXXXXX");
	int fd = mkstemp(name);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return name;
}

static void test_example(void **state)
{
	(void)state;
	const char *path = temp_file(example_json);
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_solve_problem p;
	assert_int_equal(dt_solve_problem_read(path, &p, &d), DT_OK);
	unlink(path);
	assert_string_equal(p.name, "example");
	assert_int_equal(p.nnodes, 5);
	assert_int_equal(p.nedges, 5);
	assert_int_equal(p.usage_limit, 50);
	assert_int_equal(p.nodes[2].nstrategies, 3);
	assert_int_equal(p.nodes[2].end, 120);
	assert_int_equal(p.edges[2].cost[3], 80);
	int32_t want[5];
	int64_t opt = brute_force(&p, want);
	assert_int_equal(opt, 445);
	int32_t got[5];
	struct dt_solve_options o = {.timeout_s = 10, .threads = 1, .seed = 1, .max_rounds = 2};
	struct dt_solve_result r = {.strategy = got};
	assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
	assert_int_equal(r.cost, 445);
	assert_int_equal(r.lower_bound, 445);
	assert_false(r.timed_out);
	assert_memory_equal(got, want, sizeof(want));
	int64_t peak;
	assert_int_equal(dt_solve_plan_cost(&p, got, &peak), 445);
	assert_int_equal(r.peak_usage, peak);
	assert_true(peak <= 50);
	dt_solve_problem_fini(&p);
}

/* ---- random problems against brute force ---- */

/* Every pair of rows a row order (struct dt_solve_reduction) says it
 * compared is what comparing them says, and its zero masks are the rows'
 * zeros. */
static void check_orders(const struct dt_solve_problem *p, uint64_t *const *orders)
{
	for (int32_t e = 0; e < 2 * p->nedges; e++) {
		const struct dt_solve_edge *ed = &p->edges[e / 2];
		int32_t nf = p->nodes[ed->from].nstrategies, nt = p->nodes[ed->to].nstrategies;
		int32_t ns = e % 2 ? nt : nf, no = e % 2 ? nf : nt;
		const uint64_t *order = orders[e];
		for (int32_t a = 0; order && a < ns; a++) {
			uint64_t zero = 0;
			for (int32_t o = 0; o < no && o < 64; o++)
				zero |= (uint64_t)(ed->cost[e % 2 ? o * nt + a : a * nt + o] == 0) << o;
			assert_true(order[a] == zero);
			for (int32_t b = 0; b < ns; b++) {
				if (!(order[ns + a] >> b & 1))
					continue;
				bool below = true;
				for (int32_t o = 0; o < no; o++)
					below &= e % 2 ? ed->cost[o * nt + b] <= ed->cost[o * nt + a]
						       : ed->cost[b * nt + o] <= ed->cost[a * nt + o];
				assert_int_equal(order[2 * ns + a] >> b & 1, below);
			}
		}
	}
}

/* Two reductions are the same: offset, nodes, costs and matrices. */
static void assert_same_reduction(const struct dt_solve_reduction *a,
				  const struct dt_solve_reduction *b)
{
	assert_int_equal(a->offset, b->offset);
	assert_int_equal(a->r.nnodes, b->r.nnodes);
	assert_int_equal(a->r.nedges, b->r.nedges);
	for (int32_t v = 0; v < a->r.nnodes; v++) {
		int32_t ns = a->r.nodes[v].nstrategies;
		assert_int_equal(ns, b->r.nodes[v].nstrategies);
		assert_memory_equal(a->r.nodes[v].cost, b->r.nodes[v].cost, sizeof(int64_t) * (size_t)ns);
		assert_memory_equal(a->orig_strat[v], b->orig_strat[v], sizeof(int32_t) * (size_t)ns);
	}
	for (int32_t e = 0; e < a->r.nedges; e++) {
		const struct dt_solve_edge *x = &a->r.edges[e], *y = &b->r.edges[e];
		assert_int_equal(x->from, y->from);
		assert_int_equal(x->to, y->to);
		assert_memory_equal(x->cost, y->cost, sizeof(int64_t) *
				    (size_t)a->r.nodes[x->from].nstrategies *
				    (size_t)a->r.nodes[x->to].nstrategies);
	}
}

/* A problem with red->r's edges and other costs (as a round prices it)
 * reduces the same given red->r's row orders, which the dominance test
 * fills in, as without them; the orders hold what the rows say. */
static void check_orders_reused(const struct dt_solve_reduction *red)
{
	struct dt_solve_problem q = red->r;
	q.usage_limit = -1;
	q.nodes = dt_calloc((size_t)q.nnodes + 1, sizeof *q.nodes);
	for (int32_t v = 0; v < q.nnodes; v++) {
		q.nodes[v] = red->r.nodes[v];
		q.nodes[v].cost = dt_malloc(sizeof(int64_t) * (size_t)q.nodes[v].nstrategies);
		for (int32_t s = 0; s < q.nodes[v].nstrategies; s++)
			q.nodes[v].cost[s] = dt_solve_add(red->r.nodes[v].cost[s],
							  (v * 7 + s * 3) % 4);
	}
	struct dt_solve_reduction fresh, reused, again;
	dt_solve_reduce(&q, NULL, &fresh);
	dt_solve_reduce(&q, red->orders, &reused);
	dt_solve_reduce(&q, red->orders, &again);
	assert_same_reduction(&fresh, &reused);
	assert_same_reduction(&fresh, &again);
	check_orders(&red->r, red->orders);
	check_orders(&reused.r, reused.orders);
	dt_solve_reduction_fini(&fresh);
	dt_solve_reduction_fini(&reused);
	dt_solve_reduction_fini(&again);
	for (int32_t v = 0; v < q.nnodes; v++)
		dt_free(q.nodes[v].cost);
	dt_free(q.nodes);
}

/* Reductions keep the optimum exactly, and expand it back. */
static void check_reduction(const struct dt_solve_problem *p, int64_t opt)
{
	struct dt_solve_reduction red;
	dt_solve_reduce(p, NULL, &red);
	check_orders_reused(&red);
	int32_t *x = dt_calloc((size_t)red.r.nnodes + 1, sizeof(int32_t));
	int32_t *full = dt_calloc((size_t)p->nnodes + 1, sizeof(int32_t));
	int64_t ropt = brute_force(&red.r, x);
	assert_int_equal(ropt == DT_SOLVE_INFINITE ? ropt : red.offset + ropt, opt);
	if (opt < DT_SOLVE_INFINITE) {
		dt_solve_reduction_expand(&red, x, full);
		int64_t peak, rpeak;
		assert_int_equal(dt_solve_plan_cost(p, full, &peak), opt);
		dt_solve_plan_cost(&red.r, x, &rpeak);
		if (p->usage_limit >= 0) /* ballast keeps the usage */
			assert_int_equal(peak, rpeak);
	}
	dt_free(x);
	dt_free(full);
	dt_solve_reduction_fini(&red);
}

static void check_random(int count, bool limited)
{
	for (int i = 0; i < count; i++) {
		struct dt_solve_problem p;
		random_problem(&p, 10, 3, limited);
		int64_t opt = brute_force(&p, NULL);
		check_reduction(&p, opt);
		int32_t *got = dt_calloc((size_t)p.nnodes + 1, sizeof(int32_t));
		struct dt_solve_options o = {.timeout_s = 10, .threads = 1, .seed = 3, .max_rounds = 2};
		struct dt_solve_result r = {.strategy = got};
		int status = dt_solve(&p, &o, &r);
		if (opt == DT_SOLVE_INFINITE) {
			assert_int_equal(status, DT_EINPUT);
		} else {
			assert_int_equal(status, DT_OK);
			assert_int_equal(r.cost, opt);
			int64_t peak;
			assert_int_equal(dt_solve_plan_cost(&p, got, &peak), opt);
			assert_true(p.usage_limit < 0 || peak <= p.usage_limit);
		}
		dt_free(got);
		dt_solve_problem_fini(&p);
	}
}

static void test_random_unlimited(void **state)
{
	(void)state;
	rng_state = 12345;
	check_random(300, false);
}

static void test_random_limited(void **state)
{
	(void)state;
	rng_state = 777;
	check_random(300, true);
}

/* The cheapest plan breaks the limit: both nodes at strategy 0 (cost 0)
 * need 20 at time 0, the limit is 15, so one node pays 7 or 9 to drop to
 * usage 1; the optimum pays 7 (node 1). */
static void test_limit_binds(void **state)
{
	(void)state;
	struct dt_solve_problem p;
	init_problem(&p, 2, 1);
	set_node(&p, 0, 0, 2, 2, (int64_t[]){0, 9}, (int64_t[]){10, 1});
	set_node(&p, 1, 0, 2, 2, (int64_t[]){0, 7}, (int64_t[]){10, 1});
	set_edge(&p, 0, 0, 1, (int64_t[]){0, 0, 0, 0});
	int32_t got[2];
	struct dt_solve_options o = {.timeout_s = 10, .threads = 1, .seed = 1, .max_rounds = 1};
	struct dt_solve_result r = {.strategy = got};
	assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
	assert_int_equal(r.cost, 0); /* no limit: the cheapest */
	p.usage_limit = 15;
	assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
	assert_int_equal(r.cost, 7);
	assert_int_equal(got[0], 0);
	assert_int_equal(got[1], 1);
	assert_int_equal(r.peak_usage, 11);
	dt_solve_problem_fini(&p);
}

/* A knapsack with a duality gap, the shape of a memory-coupled move: three
 * nodes each save cost by holding bytes at the one segment (node 2: 10 for
 * 6 bytes; nodes 0 and 1: 6 for 5), the limit holds 10. The optimum holds
 * nodes 0 and 1 (cost 10); no price per byte makes it the priced optimum
 * (above 1.2 only node 2 pays, below it all three break the limit), no
 * ball holds the three unconnected nodes, and descent from nothing takes
 * node 2 first (cost 12). Repairing the priced plan that breaks the limit
 * (all three held) by the cheapest move that frees the 6 bytes over it
 * drops node 2. The exact searches are kept out (exact_visits 1). */
static void test_repair_gap(void **state)
{
	(void)state;
	struct dt_solve_problem p;
	init_problem(&p, 3, 0);
	set_node(&p, 0, 0, 1, 2, (int64_t[]){6, 0}, (int64_t[]){0, 5});
	set_node(&p, 1, 0, 1, 2, (int64_t[]){6, 0}, (int64_t[]){0, 5});
	set_node(&p, 2, 0, 1, 2, (int64_t[]){10, 0}, (int64_t[]){0, 6});
	p.usage_limit = 10;
	assert_int_equal(brute_force(&p, NULL), 10);
	int32_t got[3];
	struct dt_solve_options o = {.timeout_s = 10, .threads = 1, .seed = 1,
				     .max_rounds = 16, .exact_visits = 1};
	struct dt_solve_result r = {.strategy = got};
	assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
	assert_true(r.timed_out); /* the search ran, not the exact ones */
	assert_int_equal(r.cost, 10);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 1);
	assert_int_equal(got[2], 0);
	assert_int_equal(r.peak_usage, 10);
	dt_solve_problem_fini(&p);
}

/* Stale segment weights: a random problem (9 nodes, intervals over 8
 * points) whose first, unpriced plan breaks the limit on segments the
 * optimum fills. With the weights only growing, every later priced plan
 * avoids those segments and the search ends at 183; halving, after each
 * priced plan within the limit, the weight of the segments it leaves under
 * it lets the prices follow the segments that bind, and the search finds
 * the optimum, 167.
 * (Found among 3000 such problems: the decay is no strict gain on tiny
 * ones, four others go the other way; on dtopt's problems it is, llama/3d
 * under the expert's peak 157.05 -> 133.62 us.) */
static void test_weight_decay(void **state)
{
	(void)state;
	rng_state = 701723613283965919ull;
	struct dt_solve_problem p;
	random_problem(&p, 12, 4, true);
	assert_int_equal(p.nnodes, 9);
	assert_int_equal(brute_force(&p, NULL), 167);
	int32_t got[9];
	struct dt_solve_options o = {.timeout_s = 10, .threads = 1, .seed = 1,
				     .max_rounds = 16, .exact_visits = 1};
	struct dt_solve_result r = {.strategy = got};
	assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
	assert_int_equal(r.cost, 167);
	int64_t peak;
	assert_int_equal(dt_solve_plan_cost(&p, got, &peak), 167);
	assert_true(peak <= p.usage_limit);
	dt_solve_problem_fini(&p);
}

/* ---- variable elimination ---- */

/* On random problems (parallel edges, ties, up to 4 strategies, a third
 * with infinite entries) the plan of dt_eliminate is the optimum of the
 * problem without its limit. */
static void test_eliminate_random(void **state)
{
	(void)state;
	rng_state = 31337;
	for (int i = 0; i < 200; i++) {
		struct dt_solve_problem p;
		random_problem(&p, 9, 4, i % 2);
		for (int32_t e = 0; e < p.nedges && i % 3 == 0; e++) /* ruled out */
			p.edges[e].cost[rnd((uint32_t)p.nodes[p.edges[e].from].nstrategies)] =
				DT_SOLVE_INFINITE;
		int64_t limit = p.usage_limit;
		p.usage_limit = -1;
		int64_t opt = brute_force(&p, NULL);
		int32_t *x = dt_calloc((size_t)p.nnodes + 1, sizeof(int32_t));
		dt_wide cost;
		assert_true(dt_eliminate(&p, 1 << 20, x, &cost));
		assert_int_equal(dt_wide_clamp(cost), opt);
		assert_int_equal(dt_solve_plan_cost(&p, x, NULL), opt);
		/* With the limit: a lower bound of the limited optimum. */
		p.usage_limit = limit;
		assert_true(opt <= brute_force(&p, NULL));
		dt_free(x);
		dt_solve_problem_fini(&p);
	}
}

/* A clique of 8 nodes with 3 strategies: eliminating any node first
 * builds a table over all 8 (3^8 entries to fill), so a budget of 1000 is
 * refused and a larger one solves it. */
static void test_eliminate_budget(void **state)
{
	(void)state;
	rng_state = 5;
	struct dt_solve_problem p;
	init_problem(&p, 8, 28);
	for (int32_t v = 0; v < 8; v++)
		set_node(&p, v, 0, 1, 3, (int64_t[]){rnd(9), rnd(9), rnd(9)},
			 (int64_t[]){1, 1, 1});
	int32_t e = 0;
	for (int32_t a = 0; a < 8; a++)
		for (int32_t b = a + 1; b < 8; b++) {
			int64_t m[9];
			for (int k = 0; k < 9; k++)
				m[k] = rnd(20);
			set_edge(&p, e++, a, b, m);
		}
	int32_t x[8] = {0};
	dt_wide cost;
	assert_false(dt_eliminate(&p, 1000, x, &cost));
	assert_true(dt_eliminate(&p, 100000, x, &cost));
	assert_int_equal(dt_wide_clamp(cost), brute_force(&p, NULL));
	dt_solve_problem_fini(&p);
}

/* A core of 6 nodes from the real-model problems (3, 17, 14, 22, 2 and 14
 * strategies): eliminating the smallest table first sums tables of 86030
 * entries, leaving the smallest table behind first 13138. A budget
 * between the two is met by the second order, and its plan is the
 * optimum; a budget below both is refused. */
static void test_eliminate_order(void **state)
{
	(void)state;
	rng_state = 11;
	static const int32_t ns[6] = {3, 17, 14, 22, 2, 14};
	static const int32_t ends[9][2] = {{0, 1}, {0, 2}, {0, 4}, {1, 4}, {1, 3},
					   {2, 5}, {2, 3}, {3, 5}, {4, 5}};
	struct dt_solve_problem p;
	init_problem(&p, 6, 9);
	int64_t cost[22 * 22], usage[22] = {0};
	for (int32_t v = 0; v < 6; v++) {
		for (int32_t s = 0; s < ns[v]; s++)
			cost[s] = rnd(50);
		set_node(&p, v, 0, 1, ns[v], cost, usage);
	}
	for (int32_t e = 0; e < 9; e++) {
		for (int32_t k = 0; k < ns[ends[e][0]] * ns[ends[e][1]]; k++)
			cost[k] = rnd(40);
		set_edge(&p, e, ends[e][0], ends[e][1], cost);
	}
	int32_t x[6] = {0};
	dt_wide found;
	assert_false(dt_eliminate(&p, 13137, x, &found));
	assert_true(dt_eliminate(&p, 13138, x, &found));
	int64_t opt = brute_force(&p, NULL);
	assert_int_equal(dt_wide_clamp(found), opt);
	assert_int_equal(dt_solve_plan_cost(&p, x, NULL), opt);
	dt_solve_problem_fini(&p);
}

/* A grid of 3 rows and n columns with 4 strategies: after the corners,
 * nothing reduces (treewidth 3), and there are too many nodes for branch
 * and bound, but variable elimination's tables hold 4^4 entries. */
static void grid(struct dt_solve_problem *p, int32_t n)
{
	init_problem(p, 3 * n, 3 * (n - 1) + 2 * n);
	for (int32_t v = 0; v < 3 * n; v++)
		set_node(p, v, v % n, v % n + 2, 4,
			 (int64_t[]){rnd(50), rnd(50), rnd(50), rnd(50)},
			 (int64_t[]){1 + rnd(5), 1 + rnd(5), 1 + rnd(5), 1 + rnd(5)});
	int32_t e = 0;
	for (int32_t row = 0; row < 3; row++)
		for (int32_t i = 0; i < n; i++) {
			int32_t v = row * n + i;
			int64_t m[16];
			for (int k = 0; k < 2; k++) {
				if ((k == 0 && i == n - 1) || (k == 1 && row == 2))
					continue;
				for (int j = 0; j < 16; j++)
					m[j] = rnd(40);
				set_edge(p, e++, v, k == 0 ? v + 1 : v + n, m);
			}
		}
	assert_int_equal(e, p->nedges);
}

/* The grid is solved and proven optimal before any search round, also
 * under a limit its optimum fits; the search on its own finds no cheaper
 * plan. */
static void test_proven(void **state)
{
	(void)state;
	rng_state = 2024;
	struct dt_solve_problem p;
	grid(&p, 100);
	int32_t *got = dt_calloc((size_t)p.nnodes, sizeof(int32_t));
	struct dt_solve_options o = {.timeout_s = 60, .threads = 1, .seed = 1, .max_rounds = 3};
	struct dt_solve_result r = {.strategy = got};
	assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
	assert_false(r.timed_out);
	assert_int_equal(r.rounds, 0);
	assert_int_equal(r.lower_bound, r.cost);
	assert_int_equal(dt_solve_plan_cost(&p, got, &p.usage_limit), r.cost);
	/* The search alone, from the plan of least usage. */
	struct dt_lagrange lg;
	p.usage_limit = -1;
	dt_lagrange_init(&lg, &p, NULL, 1);
	for (int i = 0; i < 3; i++)
		dt_lagrange_round(&lg, NULL, NULL);
	assert_true(lg.best_cost >= r.cost);
	dt_lagrange_fini(&lg);
	/* A limit the optimum fits (its own peak): the same plan, proven. */
	dt_solve_plan_cost(&p, got, &p.usage_limit);
	int64_t cost = r.cost;
	assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
	assert_false(r.timed_out);
	assert_int_equal(r.cost, cost);
	dt_free(got);
	dt_solve_problem_fini(&p);
}

/* ---- the search, on problems too big for branch and bound ---- */

/* A chain-and-cross-link problem of n nodes with up to 4 strategies and a
 * limit halfway between the least and the greatest footprint. */
static void big_problem(struct dt_solve_problem *p, int32_t n)
{
	init_problem(p, n, 2 * n - 2);
	for (int32_t v = 0; v < n; v++) {
		int32_t ns = 2 + (int32_t)rnd(3);
		int64_t cost[4], usage[4];
		for (int32_t s = 0; s < ns; s++) {
			cost[s] = rnd(100);
			usage[s] = 1 + rnd(20);
		}
		int64_t a = rnd(64);
		set_node(p, v, a, a + 1 + rnd(16), ns, cost, usage);
	}
	for (int32_t e = 0; e < 2 * n - 2; e++) {
		int32_t a = e < n - 1 ? e : (int32_t)rnd((uint32_t)n - 1);
		int32_t b = e < n - 1 ? e + 1 : a + 1 + (int32_t)rnd((uint32_t)(n - 1 - a));
		int64_t cost[16];
		for (int32_t i = 0; i < p->nodes[a].nstrategies * p->nodes[b].nstrategies; i++)
			cost[i] = rnd(60);
		set_edge(p, e, a, b, cost);
	}
	int32_t *lo = dt_calloc((size_t)n, sizeof(int32_t));
	for (int32_t v = 0; v < n; v++)
		for (int32_t s = 0; s < p->nodes[v].nstrategies; s++)
			lo[v] = p->nodes[v].usage[s] < p->nodes[v].usage[lo[v]] ? s : lo[v];
	int64_t least;
	dt_solve_plan_cost(p, lo, &least);
	p->usage_limit = least + least / 4;
	dt_free(lo);
}

static void test_search(void **state)
{
	(void)state;
	rng_state = 4242;
	for (int i = 0; i < 5; i++) {
		struct dt_solve_problem p;
		big_problem(&p, 150 + 50 * i);
		int32_t *got = dt_calloc((size_t)p.nnodes + 1, sizeof(int32_t));
		struct dt_solve_options o = {.timeout_s = 60, .threads = 1, .seed = 9, .max_rounds = 4};
		struct dt_solve_result r = {.strategy = got};
		assert_int_equal(dt_solve(&p, &o, &r), DT_OK);
		assert_true(r.timed_out); /* searched, not proven */
		int64_t peak;
		assert_int_equal(dt_solve_plan_cost(&p, got, &peak), r.cost);
		assert_int_equal(peak, r.peak_usage);
		assert_true(peak <= p.usage_limit);
		/* Better than the plan of least usage it starts from. */
		int32_t *lo = dt_calloc((size_t)p.nnodes, sizeof(int32_t));
		for (int32_t v = 0; v < p.nnodes; v++)
			for (int32_t s = 0; s < p.nodes[v].nstrategies; s++)
				lo[v] = p.nodes[v].usage[s] < p.nodes[v].usage[lo[v]] ? s : lo[v];
		assert_true(r.cost < dt_solve_plan_cost(&p, lo, NULL));
		assert_true(r.lower_bound == INT64_MIN || r.lower_bound <= r.cost);
		dt_free(lo);
		dt_free(got);
		dt_solve_problem_fini(&p);
	}
}

/* ---- message passing (bp.c, trws.c) ---- */

/* A random tree of up to 9 nodes (each joined to an earlier one) of up
 * to 4 strategies, costs spread wide (ties are rare). */
static void random_tree(struct dt_solve_problem *p)
{
	int32_t n = 2 + (int32_t)rnd(8);
	init_problem(p, n, n - 1);
	for (int32_t v = 0; v < n; v++)
		set_node(p, v, 0, 0, 1 + (int32_t)rnd(4),
			 (int64_t[]){rnd(1000), rnd(1000), rnd(1000), rnd(1000)},
			 (int64_t[]){0, 0, 0, 0});
	for (int32_t v = 1; v < n; v++) {
		int64_t m[16];
		for (int j = 0; j < 16; j++)
			m[j] = rnd(1000);
		set_edge(p, v - 1, (int32_t)rnd((uint32_t)v), v, m);
	}
}

/* random_tree's, where a strategy or an edge entry is infinite one time
 * in three (DT_SOLVE_INFINITE: pins and shapes rule them out), drawn
 * again until some plan costs finitely. */
static void random_tree_infinite(struct dt_solve_problem *p)
{
	for (;;) {
		random_tree(p);
		for (int32_t v = 0; v < p->nnodes; v++)
			for (int32_t s = 0; s < p->nodes[v].nstrategies; s++)
				if (rnd(3) == 0)
					p->nodes[v].cost[s] = DT_SOLVE_INFINITE;
		for (int32_t e = 0; e < p->nedges; e++) {
			int32_t n = p->nodes[p->edges[e].from].nstrategies *
				    p->nodes[p->edges[e].to].nstrategies;
			for (int32_t k = 0; k < n; k++)
				if (rnd(3) == 0)
					p->edges[e].cost[k] = DT_SOLVE_INFINITE;
		}
		if (brute_force(p, NULL) != DT_SOLVE_INFINITE)
			return;
		dt_solve_problem_fini(p);
	}
}

/* A 3 x 3 grid of three-strategy nodes whose edges favour near choices:
 * w (a - b)^2 plus separable terms, a submodular (Monge) matrix, so the
 * linear relaxation is tight and TRW-S's plan is the optimum. */
static void submodular_grid(struct dt_solve_problem *p)
{
	const int32_t side = 3;
	init_problem(p, side * side, 2 * side * (side - 1));
	for (int32_t v = 0; v < side * side; v++)
		set_node(p, v, 0, 0, 3, (int64_t[]){rnd(300), rnd(300), rnd(300)},
			 (int64_t[]){0, 0, 0});
	int32_t e = 0;
	for (int32_t v = 0; v < side * side; v++)
		for (int k = 0; k < 2; k++) {
			int32_t w = k == 0 ? v + 1 : v + side;
			if ((k == 0 && v % side == side - 1) || w >= side * side)
				continue;
			int64_t m[9], weight = 1 + rnd(60);
			int64_t ra[3] = {rnd(50), rnd(50), rnd(50)};
			int64_t rb[3] = {rnd(50), rnd(50), rnd(50)};
			for (int a = 0; a < 3; a++)
				for (int b = 0; b < 3; b++)
					m[a * 3 + b] = weight * (a - b) * (a - b) + ra[a] + rb[b];
			set_edge(p, e++, v, w, m);
		}
	assert_int_equal(e, p->nedges);
}

/* TRW-S keeps the cheapest plan it decodes (every 10 passes) over all
 * its passes: on loopy grids (3 x 8, four strategies, no limit),
 * 1000 passes are never worse than 30, whose decodes they start with, and
 * better on some (one of these 40; 8 of them miss the optimum either way:
 * the relaxation is not tight there). */
static void test_trws_long(void **state)
{
	(void)state;
	rng_state = 4242;
	int better = 0;
	for (int i = 0; i < 40; i++) {
		struct dt_solve_problem p;
		grid(&p, 8);
		p.usage_limit = -1;
		int32_t *x = dt_calloc((size_t)p.nnodes, sizeof(int32_t));
		dt_trws_plan(&p, 30, true, NULL, x);
		dt_wide brief = dt_plan_cost(&p, x);
		dt_trws_plan(&p, 1000, true, NULL, x);
		dt_wide longer = dt_plan_cost(&p, x);
		assert_true(longer <= brief);
		better += longer < brief;
		dt_free(x);
		dt_solve_problem_fini(&p);
	}
	assert_true(better > 0);
}

/* q: p (4 strategies a node) with node v's strategies in the order
 * perm[v] (q's strategy k is p's perm[v][k]). */
static void permuted(const struct dt_solve_problem *p, int32_t (*perm)[4],
		     struct dt_solve_problem *q)
{
	init_problem(q, p->nnodes, p->nedges);
	for (int32_t v = 0; v < p->nnodes; v++) {
		const struct dt_solve_node *nd = &p->nodes[v];
		int64_t cost[4], usage[4];
		for (int k = 0; k < 4; k++) {
			cost[k] = nd->cost[perm[v][k]];
			usage[k] = nd->usage[perm[v][k]];
		}
		set_node(q, v, nd->start, nd->end, 4, cost, usage);
	}
	for (int32_t e = 0; e < p->nedges; e++) {
		const struct dt_solve_edge *ed = &p->edges[e];
		int64_t m[16];
		for (int a = 0; a < 4; a++)
			for (int b = 0; b < 4; b++)
				m[4 * a + b] = ed->cost[4 * perm[ed->from][a] + perm[ed->to][b]];
		set_edge(q, e, ed->from, ed->to, m);
	}
}

/* A priced core's TRW-S goes on from the messages the previous core left
 * (struct dt_message_memory): 10 passes on a loopy grid (costs apart
 * enough for no ties), then 10 on the same grid with its strategies
 * shuffled, decode the plan that 20 passes in one go decode (mapped
 * back), on each of 20 draws; 10 passes alone decode another plan on
 * some of them. */
static void test_trws_carried(void **state)
{
	(void)state;
	rng_state = 31337;
	int apart = 0;
	for (int i = 0; i < 20; i++) {
		struct dt_solve_problem p, q;
		grid(&p, 8);
		for (int32_t v = 0; v < p.nnodes; v++)
			for (int s = 0; s < 4; s++)
				p.nodes[v].cost[s] = 4096 * p.nodes[v].cost[s] + rnd(4096);
		for (int32_t e = 0; e < p.nedges; e++)
			for (int k = 0; k < 16; k++)
				p.edges[e].cost[k] = 4096 * p.edges[e].cost[k] + rnd(4096);
		int32_t(*perm)[4] = dt_malloc(sizeof(*perm) * (size_t)p.nnodes);
		int32_t **strat = dt_malloc(sizeof(*strat) * (size_t)p.nnodes);
		int32_t *node = dt_malloc(sizeof(int32_t) * (size_t)p.nnodes);
		for (int32_t v = 0; v < p.nnodes; v++) {
			node[v] = v;
			for (int k = 0; k < 4; k++)
				perm[v][k] = k;
			for (int k = 3; k > 0; k--) {
				int j = (int)rnd((uint32_t)k + 1), t = perm[v][k];
				perm[v][k] = perm[v][j];
				perm[v][j] = t;
			}
			strat[v] = perm[v];
		}
		permuted(&p, perm, &q);
		int32_t *x = dt_calloc((size_t)p.nnodes, sizeof(int32_t));
		int32_t *whole = dt_calloc((size_t)p.nnodes, sizeof(int32_t));
		dt_trws_plan(&p, 20, false, NULL, whole);
		struct dt_message_memory mem;
		dt_message_memory_init(&mem, &p);
		static int32_t identity[4] = {0, 1, 2, 3};
		int32_t **same = dt_malloc(sizeof(*same) * (size_t)p.nnodes);
		for (int32_t v = 0; v < p.nnodes; v++)
			same[v] = identity;
		mem.node = node;
		mem.strat = same;
		dt_trws_plan(&p, 10, false, &mem, x);
		apart += memcmp(x, whole, sizeof(int32_t) * (size_t)p.nnodes) != 0;
		mem.strat = strat;
		dt_trws_plan(&q, 10, false, &mem, x);
		for (int32_t v = 0; v < p.nnodes; v++)
			assert_int_equal(perm[v][x[v]], whole[v]);
		dt_message_memory_fini(&mem);
		dt_free(x);
		dt_free(whole);
		dt_free(node);
		dt_free(same);
		dt_free(strat);
		dt_free(perm);
		dt_solve_problem_fini(&q);
		dt_solve_problem_fini(&p);
	}
	assert_true(apart > 0);
}

/* TRW-S (the start of the odd search threads' priced cores) is exact on
 * trees, on trees with infinite costs (messages that carried INT64_MAX
 * lost the finite costs beside it) and on submodular grids, 30 draws
 * each; belief propagation (the even threads') on the trees. */
static void test_trws(void **state)
{
	(void)state;
	rng_state = 777;
	for (int i = 0; i < 90; i++) {
		struct dt_solve_problem p;
		if (i < 30)
			random_tree(&p);
		else if (i < 60)
			random_tree_infinite(&p);
		else
			submodular_grid(&p);
		int32_t *x = dt_calloc((size_t)p.nnodes, sizeof(int32_t));
		int64_t opt = brute_force(&p, NULL);
		dt_trws_plan(&p, 30, true, NULL, x);
		assert_int_equal(dt_solve_plan_cost(&p, x, NULL), opt);
		if (i < 60) {
			dt_bp_plan(&p, 30, true, x);
			assert_int_equal(dt_solve_plan_cost(&p, x, NULL), opt);
		}
		dt_free(x);
		dt_solve_problem_fini(&p);
	}
}

/* Two threads, a round cap: the same plan every time (libc's allocator:
 * cmocka's is not thread-safe). */
static void test_deterministic(void **state)
{
	(void)state;
	dt_set_allocator(NULL, NULL);
	rng_state = 99;
	struct dt_solve_problem p;
	big_problem(&p, 300);
	int32_t *a = calloc((size_t)p.nnodes, sizeof(int32_t));
	int32_t *b = calloc((size_t)p.nnodes, sizeof(int32_t));
	struct dt_solve_options o = {.timeout_s = 60, .threads = 2, .seed = 5, .max_rounds = 3};
	struct dt_solve_result ra = {.strategy = a}, rb = {.strategy = b};
	assert_int_equal(dt_solve(&p, &o, &ra), DT_OK);
	assert_int_equal(dt_solve(&p, &o, &rb), DT_OK);
	assert_int_equal(ra.cost, rb.cost);
	assert_memory_equal(a, b, sizeof(int32_t) * (size_t)p.nnodes);
	free(a);
	free(b);
	dt_solve_problem_fini(&p);
	dt_set_allocator(cmocka_realloc, NULL);
}

/* stall_rounds without max_rounds: each thread stops after 3 rounds in a
 * row without a better plan, long before the budget; the plan depends
 * only on seed and threads. */
static void test_stall(void **state)
{
	(void)state;
	dt_set_allocator(NULL, NULL);
	rng_state = 99;
	struct dt_solve_problem p;
	big_problem(&p, 300);
	int32_t *a = calloc((size_t)p.nnodes, sizeof(int32_t));
	int32_t *b = calloc((size_t)p.nnodes, sizeof(int32_t));
	struct dt_solve_options o = {.timeout_s = 30, .threads = 2, .seed = 5,
				     .stall_rounds = 3};
	struct dt_solve_result ra = {.strategy = a}, rb = {.strategy = b};
	assert_int_equal(dt_solve(&p, &o, &ra), DT_OK);
	assert_int_equal(dt_solve(&p, &o, &rb), DT_OK);
	assert_true(ra.timed_out);
	assert_true(ra.rounds >= 2 * 3 && ra.rounds < 200);
	assert_int_equal(ra.rounds, rb.rounds);
	assert_int_equal(ra.cost, rb.cost);
	assert_memory_equal(a, b, sizeof(int32_t) * (size_t)p.nnodes);
	free(a);
	free(b);
	dt_solve_problem_fini(&p);
	dt_set_allocator(cmocka_realloc, NULL);
}

/* ---- bad problems ---- */

struct captured {
	char text[4096];
};

static void capture(void *ud, const struct dt_diag_entry *e)
{
	struct captured *c = ud;
	size_t n = strlen(c->text);
	snprintf(c->text + n, sizeof(c->text) - n, "%s\n", e->message);
}

/* Check a hand-made problem; returns the messages. */
static const char *check_messages(const struct dt_solve_problem *p, struct captured *c)
{
	struct dt_diag d;
	dt_diag_init(&d);
	d.emit = capture;
	d.ud = c;
	c->text[0] = '\0';
	assert_int_equal(dt_solve_problem_check(p, "p.json", &d), DT_EINPUT);
	return c->text;
}

static void test_check(void **state)
{
	(void)state;
	struct captured c;
	struct dt_solve_problem p;
	init_problem(&p, 2, 1);
	set_node(&p, 0, 0, 4, 2, (int64_t[]){1, 2}, (int64_t[]){5, 3});
	set_node(&p, 1, 2, 6, 1, (int64_t[]){1}, (int64_t[]){4});
	set_edge(&p, 0, 0, 1, (int64_t[]){0, 1});
	p.usage_limit = 6;
	assert_string_equal(check_messages(&p, &c),
			    "no plan meets usage_limit 6: the smallest footprint "
			    "is 7 at time 2 (every node at its least usage)\n");
	p.usage_limit = 7;
	struct dt_diag d;
	dt_diag_init(&d);
	assert_int_equal(dt_solve_problem_check(&p, NULL, &d), DT_OK);
	p.nodes[1].start = 7;
	p.nodes[0].usage[1] = -3;
	assert_string_equal(check_messages(&p, &c),
			    "node 0: strategy 1 has a negative usage\n"
			    "node 1: interval [7, 6] ends before it starts\n");
	p.nodes[1].start = 2;
	p.nodes[0].usage[1] = 3;
	p.edges[0].cost[1] = -1;
	assert_string_equal(check_messages(&p, &c), "edge 0: negative cost at [1][0]\n");
	p.edges[0].cost[1] = 1;
	p.edges[0].to = 0;
	assert_string_equal(check_messages(&p, &c), "edge 0: joins node 0 to itself\n");
	p.edges[0].to = 2;
	assert_string_equal(check_messages(&p, &c),
			    "edge 0: node 2 out of range (2 nodes)\n");
	p.edges[0].to = 1;
	p.nodes[0].cost[0] = p.nodes[0].cost[1] = DT_SOLVE_INFINITE;
	assert_string_equal(check_messages(&p, &c),
			    "node 0: every strategy has infinite cost\n");
	dt_solve_problem_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_example, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_unlimited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_limited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limit_binds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repair_gap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_weight_decay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eliminate_random, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eliminate_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eliminate_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proven, setup, teardown),
		cmocka_unit_test_setup_teardown(test_search, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trws, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trws_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trws_carried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deterministic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stall, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
