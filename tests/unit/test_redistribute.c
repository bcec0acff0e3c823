// SPDX-License-Identifier: MIT
/* test_redistribute.c: unit tests of the redistribution planner
 * (redistribute/redistribute.h): DTensor's greedy steps and comm counts on the
 * tables of semantics §3, 1-D and uneven cases, bytes and modelled cost,
 * the min-cost plan for shard orders and _S, merging onto declared groups
 * with the tables of §4.4, warnings, --create-groups, and invalid
 * requests. A plan is checked as a string of its steps, "kind@dims", so a
 * wrong order, kind or mesh dim fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "redistribute.h"

/* Route the library's allocations through cmocka so leaks fail a test. */
static void *cmocka_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		if (ptr)
			test_free(ptr);
		return NULL;
	}
	return test_realloc(ptr, size);
}

static bool close_to(double got, double want, double eps)
{
	if (got - want <= eps && want - got <= eps)
		return true;
	print_error("%.17g is not within %g of %.17g\n", got, eps, want);
	return false;
}
#define assert_close(got, want, eps) assert_true(close_to((got), (want), (eps)))

/* A module with one mesh "world" of `shape`, dims named A, B, C, ... */
static struct dt_module *module_with_mesh(const int64_t *shape, int ndim)
{
	struct dt_module *m = dt_module_create("test");
	struct dt_mesh mesh = {.name = dt_str_intern(m, "world"),
			       .ndim = (uint8_t)ndim, .size = 1};
	for (int d = 0; d < ndim; d++) {
		char name[2] = {(char)('A' + d), 0};
		mesh.shape[d] = shape[d];
		mesh.size *= shape[d];
		mesh.dims[d] = dt_str_intern(m, name);
	}
	dt_vec_push(&m->meshes, mesh);
	return m;
}

/* Declare group `dims` ("A B") on mesh 0, named by its dims. */
static void declare(struct dt_module *m, const char *dims)
{
	struct dt_group g = {.mesh = 0};
	char name[32] = "";
	for (const char *p = dims; *p; p++)
		if (*p != ' ') {
			g.dims[g.ndims++] = (uint8_t)(*p - 'A');
			strncat(name, p, 1);
		}
	g.name = dt_str_intern(m, name);
	dt_vec_push(&m->groups, g);
}

struct request {
	const char *src, *dst;
	const char *src_order, *dst_order; /* NULL = default */
	int64_t shape[DT_MAX_RANK];
	int rank;
};

/* Plan `r` on mesh 0 of `m`; fails the test on an error. */
static void plan_on(struct dt_module *m, const struct request *r,
		    struct dt_redist_plan *plan)
{
	struct dt_redist_request req = {.mesh = &m->meshes.data[0],
					.dtype = DT_FLOAT32, .rank = r->rank};
	memcpy(req.shape, r->shape, sizeof req.shape);
	char err[256];
	assert_true(dt_placements_parse(&req.src, r->src, r->src_order,
					&m->meshes.data[0], &m->strings, err,
					sizeof err));
	assert_true(dt_placements_parse(&req.dst, r->dst, r->dst_order,
					&m->meshes.data[0], &m->strings, err,
					sizeof err));
	int status = dt_redist_plan_init(plan, &req, err, sizeof err);
	if (status != DT_OK)
		print_error("%s\n", err);
	assert_int_equal(status, DT_OK);
}

/* "all_gather@C all_to_all@A ...": kinds and dims of every step, merged
 * dims joined by '+' in rank order. */
static void steps_text(const struct dt_redist_plan *plan, char *buf,
		       size_t size)
{
	size_t at = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < plan->steps.len; i++) {
		const struct dt_redist_step *s = &plan->steps.data[i];
		at += (size_t)snprintf(buf + at, size - at, "%s%s@", i ? " " : "",
				       dt_redist_kind_name(s->kind));
		for (int k = 0; k < s->ndims; k++)
			at += (size_t)snprintf(buf + at, size - at, "%s%c",
					       k ? "+" : "", 'A' + s->dims[k]);
	}
}

#define assert_steps(plan, want)                                           \
	do {                                                               \
		char got_[512];                                            \
		steps_text((plan), got_, sizeof got_);                     \
		assert_string_equal(got_, (want));                         \
	} while (0)

/* The last step's placements equal dst, orders included. */
static void assert_reaches(const struct dt_redist_plan *plan,
			   const struct dt_placements *dst)
{
	if (plan->steps.len == 0)
		return;
	assert_true(dt_placements_equal(
		&plan->steps.data[plan->steps.len - 1].after, dst));
}

/* ---- greedy: the comm-count tables of semantics §3 ---- */

static void test_greedy_tables(void **state)
{
	(void)state;
	static const struct {
		const char *src, *dst, *steps;
		int collectives;
	} cube[] = {
		{"S(0) S(0) S(0)", "S(1) S(1) S(1)",
		 "all_gather@C all_gather@B all_to_all@A chunk@B chunk@C", 3},
		{"S(0) S(1) S(0)", "S(1) S(0) S(0)",
		 "all_gather@C all_gather@B all_to_all@A chunk@B chunk@C", 3},
		{"S(0) S(1) S(2)", "S(2) S(1) S(0)",
		 "all_gather@C all_to_all@A chunk@C", 2},
		{"S(1) S(0) S(0)", "R S(0) S(0)", "all_gather@A", 1},
		{"S(1) R S(0)", "R S(0) S(0)",
		 "all_gather@C chunk@B all_gather@A chunk@C", 2},
		{"S(0) S(0) S(1)", "S(0) S(1) S(2)",
		 "all_to_all@C all_to_all@B", 2},
	}, square[] = {
		{"S(0) S(1)", "S(0) S(0)", "all_to_all@B", 1},
		{"S(0) S(1)", "S(1) S(0)",
		 "all_gather@B all_to_all@A chunk@B", 2},
		{"S(0) S(0)", "S(1) S(1)",
		 "all_gather@B all_to_all@A chunk@B", 2},
		{"S(1) S(1)", "S(1) S(2)", "all_to_all@B", 1},
	};
	struct dt_module *m = module_with_mesh((int64_t[]){2, 2, 2}, 3);
	for (size_t i = 0; i < sizeof cube / sizeof cube[0]; i++) {
		struct dt_redist_plan plan;
		struct request r = {cube[i].src, cube[i].dst, NULL, NULL,
				    {8, 8, 8}, 3};
		plan_on(m, &r, &plan);
		assert_int_equal(plan.method, DT_REDIST_GREEDY);
		assert_steps(&plan, cube[i].steps);
		assert_int_equal(dt_redist_plan_collectives(&plan),
				 cube[i].collectives);
		assert_reaches(&plan, &plan.dst);
		dt_redist_plan_fini(&plan);
	}
	dt_module_destroy(m);
	m = module_with_mesh((int64_t[]){2, 2}, 2);
	for (size_t i = 0; i < sizeof square / sizeof square[0]; i++) {
		struct dt_redist_plan plan;
		struct request r = {square[i].src, square[i].dst, NULL, NULL,
				    {8, 8, 8}, 3};
		plan_on(m, &r, &plan);
		assert_steps(&plan, square[i].steps);
		assert_int_equal(dt_redist_plan_collectives(&plan),
				 square[i].collectives);
		dt_redist_plan_fini(&plan);
	}
	dt_module_destroy(m);
}

/* Bytes follow the local size of the state before each step; an
 * all_gather charges its gathered size. */
static void test_bytes_bookkeeping(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){2, 2, 2}, 3);
	struct dt_redist_plan plan;
	struct request r = {"S(0) S(0) S(0)", "S(1) S(1) S(1)", NULL, NULL,
			    {8, 8, 8}, 3};
	plan_on(m, &r, &plan);
	const struct dt_redist_step *s = plan.steps.data;
	assert_close(s[0].bytes, 512, 0); /* 256 local, gathered over C */
	assert_close(s[1].bytes, 1024, 0);
	assert_close(s[2].bytes, 1024, 0); /* all_to_all: its local size */
	assert_close(s[3].bytes, 0, 0);
	assert_int_equal(s[2].src_dim, 0);
	assert_int_equal(s[2].dst_dim, 1);
	assert_close(dt_redist_plan_cost(&plan),
		     s[0].cost_us + s[1].cost_us + s[2].cost_us, 1e-12);
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

/* ---- 1-D meshes, uneven and zero-size shards ---- */

static void test_one_dim(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){4}, 1);
	static const struct {
		const char *src, *dst, *steps;
		int64_t rows;
		bool even;
	} cases[] = {
		{"S(0)", "R", "all_gather@A", 12, true},
		{"S(0)", "R", "all_gather@A", 13, false},
		{"S(0)", "R", "all_gather@A", 14, false},
		{"R", "S(0)", "chunk@A", 13, false},
		{"P(sum)", "R", "all_reduce@A", 13, true},
		{"P(sum)", "S(0)", "reduce_scatter@A", 12, true},
		{"P(sum)", "S(0)", "reduce_scatter@A", 14, false},
		{"S(0)", "S(1)", "all_to_all@A", 12, true},
		{"S(0)", "R", "all_gather@A", 2, false}, /* rows 1,1,0,0 */
		{"S(0)", "S(0)", "", 12, true},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct dt_redist_plan plan;
		struct request r = {cases[i].src, cases[i].dst, NULL, NULL,
				    {cases[i].rows, 4}, 2};
		plan_on(m, &r, &plan);
		assert_steps(&plan, cases[i].steps);
		if (plan.steps.len)
			assert_int_equal(plan.steps.data[0].even, cases[i].even);
		dt_redist_plan_fini(&plan);
	}
	dt_module_destroy(m);
}

static void test_partition(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){4, 2}, 2);
	struct dt_redist_plan plan;
	struct request r = {"R R", "P(sum) P(avg)", NULL, NULL, {8}, 1};
	plan_on(m, &r, &plan);
	assert_steps(&plan, "partition@A partition@B");
	assert_int_equal(plan.steps.data[0].divisor, 4); /* sum: 1/n each */
	assert_int_equal(plan.steps.data[1].divisor, 1); /* avg: keep */
	assert_int_equal(plan.steps.data[1].reduce, DT_REDUCE_AVG);
	assert_int_equal(dt_redist_plan_collectives(&plan), 0);
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

/* Semantics §5: 4 MiB global on 4 ranks, S(0)->R 41.81 µs, P->R 77.01. */
static void test_worked_costs(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){4}, 1);
	struct dt_redist_plan plan;
	struct request r = {"S(0)", "R", NULL, NULL, {1 << 20}, 1};
	plan_on(m, &r, &plan);
	assert_close(plan.steps.data[0].bytes, 4 << 20, 0);
	assert_close(dt_redist_plan_cost(&plan), 41.81, 0.005);
	dt_redist_plan_fini(&plan);
	r.src = "P(sum)";
	plan_on(m, &r, &plan);
	assert_close(dt_redist_plan_cost(&plan), 77.01, 0.005);
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

/* DTensor's logical shape: (5,3) S(0) S(0) on 2x2 holds rows 2,1 | 1,1;
 * gathering B works on 3 rows at A=0 and 2 at A=1. */
static void test_logical_shape(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){2, 2}, 2);
	struct dt_redist_plan plan;
	struct request r = {"S(0) S(0)", "R R", NULL, NULL, {5, 3}, 2};
	plan_on(m, &r, &plan);
	assert_steps(&plan, "all_gather@B all_gather@A");
	int64_t shape[2];
	dt_redist_step_logical_shape(&plan, &plan.steps.data[0],
				     (int64_t[]){0, 1}, shape);
	assert_int_equal(shape[0], 3);
	assert_int_equal(shape[1], 3);
	dt_redist_step_logical_shape(&plan, &plan.steps.data[0],
				     (int64_t[]){1, 0}, shape);
	assert_int_equal(shape[0], 2);
	dt_redist_local_shape(&plan, &plan.src, (int64_t[]){0, 1}, shape);
	assert_int_equal(shape[0], 1);
	assert_false(plan.steps.data[0].even);
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

/* ---- min-cost plans: shard orders and _S ---- */

static void test_shard_order(void **state)
{
	(void)state;
	static const struct {
		const char *src, *dst, *src_order, *dst_order, *steps;
	} cases[] = {
		/* B split first: A is last in the order, gathered first. */
		{"S(0) S(0)", "R R", "0:B,A", NULL, "all_gather@A all_gather@B"},
		{"R R", "S(0) S(0)", NULL, "0:B,A", "chunk@B chunk@A"},
		{"P(sum) P(sum)", "S(0) S(0)", NULL, "0:B,A",
		 "reduce_scatter@B reduce_scatter@A"},
		{"S(0) S(0)", "S(0) S(0)", NULL, "0:B,A",
		 "all_gather@B all_gather@A chunk@B chunk@A"},
		{"S(0) S(0)", "S(1) R", "0:B,A", NULL,
		 "all_gather@A chunk@A all_gather@B"},
	};
	struct dt_module *m = module_with_mesh((int64_t[]){4, 2}, 2);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct dt_redist_plan plan;
		struct request r = {cases[i].src, cases[i].dst,
				    cases[i].src_order, cases[i].dst_order,
				    {8, 8}, 2};
		plan_on(m, &r, &plan);
		assert_int_equal(plan.method, DT_REDIST_MIN_COST);
		assert_steps(&plan, cases[i].steps);
		assert_reaches(&plan, &plan.dst);
		assert_true(plan.states > 0);
		dt_redist_plan_fini(&plan);
	}
	dt_module_destroy(m);
}

/* [_S(0,2), S(0)] on (4,2) is [S(0), S(0)] with order 0:B,A; on (2,2,2)
 * _S(0,4) S(0) S(0) is the order B, C, A. */
static void test_strided(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){4, 2}, 2);
	struct dt_redist_plan plan, ordered;
	struct request r = {"_S(0,2) S(0)", "R R", NULL, NULL, {8, 8}, 2};
	plan_on(m, &r, &plan);
	struct request o = {"S(0) S(0)", "R R", "0:B,A", NULL, {8, 8}, 2};
	plan_on(m, &o, &ordered);
	assert_int_equal(plan.method, DT_REDIST_MIN_COST);
	assert_steps(&plan, "all_gather@A all_gather@B");
	assert_true(dt_placements_equal(&plan.steps.data[0].before,
					&ordered.steps.data[0].before));
	dt_redist_plan_fini(&plan);
	dt_redist_plan_fini(&ordered);
	dt_module_destroy(m);

	m = module_with_mesh((int64_t[]){2, 2, 2}, 3);
	struct request c = {"_S(0,4) S(0) S(0)", "R R R", NULL, NULL, {8}, 1};
	plan_on(m, &c, &plan);
	assert_steps(&plan, "all_gather@A all_gather@C all_gather@B");
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

/* ---- invalid requests ---- */

static void expect_error(struct dt_module *m, const char *src,
			 const char *dst, int rank, const char *want)
{
	struct dt_redist_request req = {.mesh = &m->meshes.data[0],
					.dtype = DT_FLOAT32, .rank = rank,
					.shape = {8, 8}};
	char err[256];
	assert_true(dt_placements_parse(&req.src, src, NULL, NULL, NULL, err,
					sizeof err));
	assert_true(dt_placements_parse(&req.dst, dst, NULL, NULL, NULL, err,
					sizeof err));
	struct dt_redist_plan plan;
	err[0] = '\0';
	assert_int_equal(dt_redist_plan_init(&plan, &req, err, sizeof err),
			 DT_EINPUT);
	if (!strstr(err, want))
		print_error("message '%s' lacks '%s'\n", err, want);
	assert_non_null(strstr(err, want));
}

static void test_invalid(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){2, 2}, 2);
	expect_error(m, "S(0) R", "P(sum) R", 2, "shard cannot become partial");
	expect_error(m, "P(sum) R", "P(avg) R", 2, "changes the reduce op");
	expect_error(m, "P(sum) P(max)", "R R", 2, "mixed partial reduce ops");
	expect_error(m, "R R", "P(min) P(sum)", 2, "mixed partial reduce ops");
	expect_error(m, "S(0)", "R R", 2, "src has 1 placements but the mesh "
					  "has 2 dims");
	expect_error(m, "R R", "R R R", 2, "dst has 3 placements");
	expect_error(m, "S(2) R", "R R", 2, "shards tensor dim 2");
	expect_error(m, "_S(0,3) S(0)", "R R", 2, "matches no shard order");
	dt_module_destroy(m);
}

/* Placement k (base 4 per mesh dim: R, S(0), S(1), P(sum)) of a rank-2
 * tensor on 3 mesh dims; `reversed` reverses the order of the mesh dims
 * sharding a tensor dim. */
static struct dt_placements numbered_placements(int k, bool reversed)
{
	struct dt_placements pl = {.ndim = 3};
	for (int m = 0; m < 3; m++, k /= 4) {
		int c = k % 4;
		pl.p[m].kind = c == 0 ? DT_PL_REPLICATE
			       : c == 3 ? DT_PL_PARTIAL : DT_PL_SHARD;
		pl.p[m].dim = (int16_t)(c == 2);
	}
	dt_placements_default_order(&pl);
	for (int m = 0; reversed && m < 3; m++)
		if (pl.p[m].kind == DT_PL_SHARD) {
			int n = 0;
			for (int o = 0; o < 3; o++)
				n += pl.p[o].kind == DT_PL_SHARD &&
				     pl.p[o].dim == pl.p[m].dim;
			pl.order_pos[m] = (uint8_t)(n - 1 - pl.order_pos[m]);
		}
	return pl;
}

/* Plans whose searches go on from kept ones (dt_redist_searches) are the
 * plans of fresh searches: steps, states expanded and errors, for sources
 * met in turn and interleaved (more than the cache keeps, so kept ones
 * are dropped and started over). */
static void test_kept_searches(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){2, 3, 2}, 3);
	struct dt_redist_searches *cache = dt_redist_searches_new();
	struct dt_redist_request req = {.mesh = &m->meshes.data[0],
					.dtype = DT_FLOAT32, .rank = 2,
					.shape = {12, 7}};
	int searched = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 64 * 64; i++) {
			/* pass 0: one source at a time; pass 1: a new
			 * source every call */
			int a = pass == 0 ? i / 64 : i % 64;
			int b = pass == 0 ? i % 64 : i / 64;
			req.src = numbered_placements(a, true);
			req.dst = numbered_placements(b, b % 2 == 0);
			struct dt_redist_plan fresh, kept;
			char err[256], kerr[256];
			req.searches = NULL;
			int want = dt_redist_plan_init(&fresh, &req, err, sizeof err);
			req.searches = cache;
			int got = dt_redist_plan_init(&kept, &req, kerr, sizeof kerr);
			assert_int_equal(got, want);
			if (want != DT_OK) {
				assert_string_equal(kerr, err);
				continue;
			}
			char fs[512], ks[512];
			steps_text(&fresh, fs, sizeof fs);
			steps_text(&kept, ks, sizeof ks);
			assert_string_equal(ks, fs);
			assert_int_equal(kept.states, fresh.states);
			assert_true(dt_redist_plan_cost(&kept) ==
				    dt_redist_plan_cost(&fresh));
			for (uint32_t k = 0; k < fresh.steps.len; k++)
				assert_true(dt_placements_equal(
				    &kept.steps.data[k].after,
				    &fresh.steps.data[k].after));
			searched += fresh.method == DT_REDIST_MIN_COST;
			dt_redist_plan_fini(&fresh);
			dt_redist_plan_fini(&kept);
		}
	assert_true(searched > 1000);
	dt_redist_searches_free(cache);
	dt_module_destroy(m);
}

/* ---- merging (semantics §4.4) ---- */

struct warnings {
	int count;
	char last[512];
};

static void count_warning(void *ud, const struct dt_diag_entry *e)
{
	struct warnings *w = ud;
	assert_int_equal(e->severity, DT_WARNING);
	w->count++;
	snprintf(w->last, sizeof w->last, "%s [%s]", e->message, e->tag);
}

struct merge_case {
	const char *src, *dst, *steps;
	int ag, ar, rs;
};

static void check_merges(struct dt_module *m, const struct merge_case *c,
			 size_t n, int rank)
{
	struct warnings w = {0};
	struct dt_diag diag;
	dt_diag_init(&diag);
	diag.emit = count_warning;
	diag.ud = &w;
	struct dt_redist_merge_options opt = {.module = m, .diag = &diag};
	for (size_t i = 0; i < n; i++) {
		struct dt_redist_plan plan;
		struct request r = {c[i].src, c[i].dst, NULL, NULL, {8, 8, 8},
				    rank};
		plan_on(m, &r, &plan);
		dt_redist_plan_merge(&plan, &opt);
		assert_steps(&plan, c[i].steps);
		assert_int_equal(dt_redist_plan_count(&plan, DT_REDIST_ALL_GATHER),
				 c[i].ag);
		assert_int_equal(dt_redist_plan_count(&plan, DT_REDIST_ALL_REDUCE),
				 c[i].ar);
		assert_int_equal(
			dt_redist_plan_count(&plan, DT_REDIST_REDUCE_SCATTER),
			c[i].rs);
		assert_reaches(&plan, &plan.dst);
		dt_redist_plan_fini(&plan);
	}
	assert_int_equal(w.count, 0);
}

static void test_merge_tables(void **state)
{
	(void)state;
	static const struct merge_case flat[] = {
		{"P(sum) P(sum)", "R R", "all_reduce@A+B", 0, 1, 0},
		{"P(sum) P(sum)", "S(0) S(0)", "reduce_scatter@A+B", 0, 0, 1},
		{"P(sum) P(sum)", "S(0) S(1)",
		 "reduce_scatter@A reduce_scatter@B", 0, 0, 2},
		{"S(0) S(0)", "R R", "all_gather@A+B", 1, 0, 0},
		{"S(0) S(1)", "R R", "all_gather@B all_gather@A", 2, 0, 0},
	};
	struct dt_module *m = module_with_mesh((int64_t[]){4, 2}, 2);
	declare(m, "A B");
	check_merges(m, flat, sizeof flat / sizeof flat[0], 2);
	dt_module_destroy(m);

	static const struct merge_case cube[] = {
		{"P(sum) P(sum) S(0)", "S(0) S(0) S(0)",
		 "all_gather@C all_reduce@B reduce_scatter@A chunk@B chunk@C",
		 1, 1, 1},
		{"P(sum) P(sum) P(sum)", "R R R", "all_reduce@A+B+C", 0, 1, 0},
		{"P(sum) S(0) P(sum)", "R R R",
		 "all_reduce@C all_gather@B all_reduce@A", 1, 2, 0},
		{"P(sum) R P(sum)", "R R R", "all_reduce@A+C", 0, 1, 0},
		{"P(sum) P(sum) R", "S(0) S(1) R",
		 "reduce_scatter@A reduce_scatter@B", 0, 0, 2},
		{"P(sum) P(sum) P(sum)", "S(0) S(0) S(1)",
		 "reduce_scatter@A+B reduce_scatter@C", 0, 0, 2},
		{"S(0) S(0) S(0)", "R R R", "all_gather@A+B+C", 1, 0, 0},
	};
	m = module_with_mesh((int64_t[]){2, 2, 2}, 3);
	declare(m, "A B");
	declare(m, "A C");
	declare(m, "A B C");
	check_merges(m, cube, sizeof cube / sizeof cube[0], 3);
	dt_module_destroy(m);
}

/* The merged step runs on the declared group whose rank order the run
 * produces, found by layout. */
static void test_merge_group_choice(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){2, 2, 2}, 3);
	declare(m, "A C");
	declare(m, "A B C");
	struct dt_redist_merge_options opt = {.module = m};
	struct dt_redist_plan plan;
	struct request r = {"P(sum) R P(sum)", "R R R", NULL, NULL, {8}, 1};
	plan_on(m, &r, &plan);
	assert_int_equal(dt_redist_plan_merge(&plan, &opt), 1);
	assert_int_equal(plan.steps.data[0].group, 0);
	assert_int_equal(plan.steps.data[0].group_size, 4);
	assert_true(dt_placements_equal(&plan.steps.data[0].before, &plan.src));
	dt_redist_plan_fini(&plan);

	/* Gathering A then C (order 0:C,A) needs the group (C A). */
	struct request o = {"S(0) R S(0)", "R R R", "0:C,A", NULL, {8}, 1};
	plan_on(m, &o, &plan);
	assert_steps(&plan, "all_gather@A all_gather@C");
	assert_int_equal(dt_redist_plan_merge(&plan, &opt), 0);
	declare(m, "C A");
	assert_int_equal(dt_redist_plan_merge(&plan, &opt), 1);
	assert_steps(&plan, "all_gather@C+A");
	assert_int_equal(plan.steps.data[0].group, 2);
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

/* Sum with avg: one all_reduce with sum, divided by the avg dims' sizes. */
static void test_merge_sum_avg(void **state)
{
	(void)state;
	struct dt_module *m = module_with_mesh((int64_t[]){2, 2, 2}, 3);
	declare(m, "A B C");
	struct dt_redist_merge_options opt = {.module = m};
	struct dt_redist_plan plan;
	struct request r = {"P(avg) P(avg) P(sum)", "R R R", NULL, NULL, {8}, 1};
	plan_on(m, &r, &plan);
	dt_redist_plan_merge(&plan, &opt);
	assert_steps(&plan, "all_reduce@A+B+C");
	assert_int_equal(plan.steps.data[0].reduce, DT_REDUCE_SUM);
	assert_int_equal(plan.steps.data[0].divisor, 4);
	dt_redist_plan_fini(&plan);

	r.src = "P(avg) P(avg) P(avg)";
	plan_on(m, &r, &plan);
	dt_redist_plan_merge(&plan, &opt);
	assert_int_equal(plan.steps.data[0].reduce, DT_REDUCE_AVG);
	assert_int_equal(plan.steps.data[0].divisor, 1);
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

/* Uneven runs stay separate with one warning per (mesh, dims, reason). */
static void test_merge_uneven(void **state)
{
	(void)state;
	struct warnings w = {0};
	struct dt_diag diag;
	dt_diag_init(&diag);
	diag.emit = count_warning;
	diag.ud = &w;
	struct dt_redist_warned warned = {0};
	struct dt_module *m = module_with_mesh((int64_t[]){2, 3}, 2);
	declare(m, "A B");
	struct dt_redist_merge_options opt = {
		.module = m, .diag = &diag, .warned = &warned,
		.create_groups = true};
	struct dt_redist_plan plan;
	struct request r = {"P(sum) P(sum)", "S(0) S(0)", NULL, NULL, {4, 8}, 2};
	for (int round = 0; round < 2; round++) {
		plan_on(m, &r, &plan);
		assert_int_equal(dt_redist_plan_merge(&plan, &opt), 0);
		assert_steps(&plan, "reduce_scatter@A reduce_scatter@B");
		assert_true(plan.steps.data[0].even);
		assert_false(plan.steps.data[1].even);
		dt_redist_plan_fini(&plan);
	}
	assert_int_equal(w.count, 1);
	assert_non_null(strstr(w.last, "[redistribute:uneven]"));
	assert_int_equal(m->groups.len, 1); /* nothing created */
	dt_module_destroy(m);
	dt_redist_warned_fini(&warned); /* a new module warns afresh */

	m = module_with_mesh((int64_t[]){2, 2}, 2);
	declare(m, "A B");
	opt.module = m;
	struct request g = {"S(0) S(0)", "R R", NULL, NULL, {5, 3}, 2};
	plan_on(m, &g, &plan);
	assert_int_equal(dt_redist_plan_merge(&plan, &opt), 0);
	assert_int_equal(dt_redist_plan_collectives(&plan), 2);
	dt_redist_plan_fini(&plan);
	assert_int_equal(w.count, 2);
	dt_redist_warned_fini(&warned);
	dt_module_destroy(m);
}

/* No group: one warning naming it; --create-groups declares it once. */
static void test_merge_missing_group(void **state)
{
	(void)state;
	struct warnings w = {0};
	struct dt_diag diag;
	dt_diag_init(&diag);
	diag.emit = count_warning;
	diag.ud = &w;
	struct dt_redist_warned warned = {0};
	struct dt_module *m = module_with_mesh((int64_t[]){2, 2}, 2);
	struct dt_redist_merge_options opt = {
		.module = m, .diag = &diag, .warned = &warned};
	struct dt_redist_plan plan;
	struct request r = {"S(0) S(0)", "R R", NULL, NULL, {8, 8}, 2};
	for (int round = 0; round < 3; round++) {
		plan_on(m, &r, &plan);
		assert_int_equal(dt_redist_plan_merge(&plan, &opt), 0);
		dt_redist_plan_fini(&plan);
	}
	assert_int_equal(w.count, 1);
	assert_non_null(strstr(w.last, "add <group name=\"A_B\" mesh=\"world\" "
				       "dims=\"A B\"/>"));
	assert_non_null(strstr(w.last, "[redistribute:no_group]"));

	opt.create_groups = true;
	for (int round = 0; round < 2; round++) {
		plan_on(m, &r, &plan);
		assert_int_equal(dt_redist_plan_merge(&plan, &opt), 1);
		assert_steps(&plan, "all_gather@A+B");
		dt_redist_plan_fini(&plan);
	}
	assert_int_equal(m->groups.len, 1);
	assert_true(m->groups.data[0].generated);
	assert_string_equal(dt_str_get(m, m->groups.data[0].name), "A_B");
	assert_int_equal(w.count, 1);
	dt_redist_warned_fini(&warned);
	dt_module_destroy(m);
}

int main(void)
{
	dt_set_allocator(cmocka_realloc, NULL);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_greedy_tables),
	    cmocka_unit_test(test_bytes_bookkeeping),
	    cmocka_unit_test(test_one_dim),
	    cmocka_unit_test(test_partition),
	    cmocka_unit_test(test_worked_costs),
	    cmocka_unit_test(test_logical_shape),
	    cmocka_unit_test(test_shard_order),
	    cmocka_unit_test(test_strided),
	    cmocka_unit_test(test_kept_searches),
	    cmocka_unit_test(test_invalid),
	    cmocka_unit_test(test_merge_tables),
	    cmocka_unit_test(test_merge_group_choice),
	    cmocka_unit_test(test_merge_sum_avg),
	    cmocka_unit_test(test_merge_uneven),
	    cmocka_unit_test(test_merge_missing_group),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
