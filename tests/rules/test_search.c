// SPDX-License-Identifier: MIT
/* test_search.c: the strategy search of sharding/search.c. The
 * priority queue returns the same strategy (so the same minimum cost) as
 * exhaustive enumeration for every combination of input placements from
 * {S(0), S(1), R, P(sum)} per mesh dim for mm, add with broadcasting, cat
 * and sum.dim_IntList on meshes (4), (2,2), (2,2,2), and for a random
 * sample on (2,2,2,2); the candidates each evaluated are printed. Also:
 * DTensor's strategy counts and choices, the filters (mixed partials,
 * short dims, in-place, pins), ignored inputs, inputs with _S and shard
 * orders, the planner property the queue's keys rest on (a mesh dim
 * leaving S or P pays a collective on it), and a bucketed move's keys and
 * latencies (the whole-graph problem's bucket nodes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_model.h"
#include "frontend.h"
#include "passes.h"
#include "redistribute.h"
#include "sharding.h"

/* A global-view graph: placeholders "a", "b", … of the given shapes on a
 * mesh of the given shape, and node "op" made of `call`. */
static struct dt_module *graph(const char *mesh, const char *const *shapes, int n,
			       const char *call)
{
	static const char *const names[] = {"a", "b", "c", "d"};
	char xml[8192];
	size_t at = 0;
	int ndim = 1;
	for (const char *p = mesh; *p; p++)
		ndim += *p == ' ';
	char place[64] = "", dims[64] = "";
	for (int d = 0; d < ndim; d++) {
		strcat(place, d ? " R" : "R");
		snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%sd%d", d ? " " : "", d);
	}
	at += (size_t)snprintf(xml + at, sizeof xml - at,
			       "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" view=\"global\">\n"
			       "<mesh name=\"m\" shape=\"%s\" dims=\"%s\"/>\n", mesh, dims);
	for (int i = 0; i < n; i++) {
		int64_t shape[DT_MAX_RANK], stride[DT_MAX_RANK];
		int rank = 0;
		char st[64] = "";
		for (const char *p = shapes[i]; *p;) {
			char *end;
			shape[rank++] = strtoll(p, &end, 10);
			p = end;
		}
		dt_contiguous_strides(shape, rank, stride);
		for (int d = 0; d < rank; d++)
			snprintf(st + strlen(st), sizeof st - strlen(st), "%s%lld", d ? " " : "",
				 (long long)stride[d]);
		at += (size_t)snprintf(xml + at, sizeof xml - at,
				       "<node name=\"%s\" op=\"placeholder\"><tensor dtype=\"float32\" "
				       "shape=\"%s\" stride=\"%s\"/><sharding mesh=\"m\" placements=\"%s\"/></node>\n",
				       names[i], shapes[i], st, place);
	}
	at += (size_t)snprintf(xml + at, sizeof xml - at,
			       "%s\n<node name=\"output\" op=\"output\"><arg nodes=\"op\"/></node>\n</dtopt-graph>\n",
			       call);
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_read_options ropt = {0};
	struct dt_module *m = NULL;
	assert_int_equal(dt_read_memory(xml, strlen(xml), "t.xml", &ropt, &d, &m), DT_OK);
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {0};
	assert_int_equal(dt_pipeline_parse(&p, "verify,shape-infer", &d), DT_OK);
	assert_int_equal(dt_pipeline_run(m, &p, &popt, &d), DT_OK);
	return m;
}

static uint32_t op_node(struct dt_module *m)
{
	return dt_module_find_node(m, dt_str_intern(m, "op"));
}

static struct dt_placements parse(const struct dt_module *m, const char *text)
{
	struct dt_placements pl;
	char err[200];
	if (!dt_placements_parse(&pl, text, NULL, &m->meshes.data[0], &m->strings, err, sizeof err))
		fail_msg("%s: %s", text, err);
	return pl;
}

static void print_pl(const struct dt_placements *pl, char *buf, size_t n)
{
	dt_placements_print(pl, buf, n);
}

/* ------------------------------------------------------------------ */
/* PQ against exhaustive. */

struct tally {
	uint64_t cases, pq_popped, pq_costed, pq_plans, ex_candidates, ex_plans;
};

/* Search both ways from `current` (output 0 pinned to `pin` unless NULL);
 * they must agree exactly. */
static void compare_pinned(struct dt_module *m, struct dt_rules *r,
			   const struct dt_placements *current,
			   const struct dt_placements *pin, struct tally *t)
{
	const struct dt_mesh *mesh = &m->meshes.data[0];
	struct dt_shard_request req = {.mesh = mesh, .current = current, .pin = pin};
	struct dt_shard_space s = {0};
	struct dt_shard_choice pq = {0}, ex = {0};
	struct dt_shard_stats spq = {0}, sex = {0};
	dt_shard_space_init(&s, r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_PQ, &pq, &spq), DT_OK);
	dt_shard_space_init(&s, r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_EXHAUSTIVE, &ex, &sex), DT_OK);
	if (pq.found != ex.found || (pq.found && (pq.cost != ex.cost ||
						  dt_shard_choice_compare(&pq, &ex) != 0))) {
		char buf[512] = "", one[64];
		for (uint32_t i = 0; i < r->nin; i++) {
			print_pl(&current[i], one, sizeof one);
			snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "[%s] ", one);
		}
		fail_msg("%s from %s: pq %s cost %g index %llu, exhaustive %s cost %g index %llu",
			 dt_op_get(r->op)->target, buf, pq.found ? "found" : "none", pq.cost,
			 (unsigned long long)pq.index, ex.found ? "found" : "none", ex.cost,
			 (unsigned long long)ex.index);
	}
	t->cases++;
	t->pq_popped += spq.candidates;
	t->pq_costed += spq.costed;
	t->pq_plans += spq.plans;
	t->ex_candidates += sex.candidates;
	t->ex_plans += sex.plans;
	dt_shard_choice_fini(&pq);
	dt_shard_choice_fini(&ex);
	dt_shard_space_fini(&s);
}

static void compare_searches(struct dt_module *m, struct dt_rules *r,
			     const struct dt_placements *current, struct tally *t)
{
	compare_pinned(m, r, current, NULL, t);
}

/* The placements of input i for combination `code` (base 4 digits per
 * (input, mesh dim)) from {S(0), S(1), R, P(sum)}; false when one shards
 * a dim the input lacks. */
static bool combination(uint64_t code, int ndim, int rank, struct dt_placements *pl)
{
	static const struct dt_placement alphabet[4] = {
		{.kind = DT_PL_SHARD, .dim = 0},
		{.kind = DT_PL_SHARD, .dim = 1},
		{.kind = DT_PL_REPLICATE},
		{.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_SUM},
	};
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	for (int m = 0; m < ndim; m++) {
		pl->p[m] = alphabet[code % 4];
		code /= 4;
		if (pl->p[m].kind == DT_PL_SHARD && pl->p[m].dim >= rank)
			return false;
	}
	dt_placements_default_order(pl);
	return true;
}

struct op_case {
	const char *label;
	const char *shapes[3];
	int n;
	const char *call;
};

static const struct op_case search_ops[] = {
	{"mm", {"16 8", "8 32"}, 2, "<node name=\"op\" op=\"call_function\" target=\"aten.mm.default\"><arg node=\"a\"/><arg node=\"b\"/></node>"},
	{"add", {"16 8", "8"}, 2, "<node name=\"op\" op=\"call_function\" target=\"aten.add.Tensor\"><arg node=\"a\"/><arg node=\"b\"/></node>"},
	{"cat", {"8 8 8", "8 8 8"}, 2, "<node name=\"op\" op=\"call_function\" target=\"aten.cat.default\"><arg nodes=\"a b\"/></node>"},
	{"sum.dim_IntList", {"16 8 4"}, 1, "<node name=\"op\" op=\"call_function\" target=\"aten.sum.dim_IntList\"><arg node=\"a\"/><arg ints=\"1\"/></node>"},
};

static void run_all(const char *mesh, int ndim, uint64_t sample, const char *title)
{
	print_message("%s\n  %-16s %6s %12s %12s %10s %14s %10s %8s\n", title, "op", "cases",
		      "pq popped", "pq costed", "pq plans", "exh strategies", "exh plans",
		      "ratio");
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	for (size_t k = 0; k < sizeof search_ops / sizeof search_ops[0]; k++) {
		const struct op_case *oc = &search_ops[k];
		struct dt_module *m = graph(mesh, oc->shapes, oc->n, oc->call);
		struct dt_rules r = {0};
		char err[200];
		assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
		struct tally t = {0};
		uint64_t total = 1;
		for (int i = 0; i < oc->n * ndim; i++)
			total *= 4;
		uint64_t count = sample ? sample : total;
		for (uint64_t c = 0; c < count; c++) {
			uint64_t code = c;
			if (sample) {
				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				code = rng % total;
			}
			struct dt_placements cur[3];
			bool ok = true;
			for (uint32_t i = 0; i < r.nin && ok; i++) {
				uint64_t digits = 1;
				for (int j = 0; j < ndim; j++)
					digits *= 4;
				ok = combination(code % digits, ndim, dt_rules_input(&r, i)->rank, &cur[i]);
				code /= digits;
			}
			if (ok)
				compare_searches(m, &r, cur, &t);
		}
		print_message("  %-16s %6llu %12.1f %12.1f %10.1f %14.1f %10.1f %7.0fx\n", oc->label,
			      (unsigned long long)t.cases, (double)t.pq_popped / (double)t.cases,
			      (double)t.pq_costed / (double)t.cases, (double)t.pq_plans / (double)t.cases,
			      (double)t.ex_candidates / (double)t.cases,
			      (double)t.ex_plans / (double)t.cases,
			      (double)t.ex_candidates / (double)t.pq_popped);
		dt_rules_fini(&r);
		dt_module_destroy(m);
	}
}

static void test_pq_equals_exhaustive_1d(void **state)
{
	(void)state;
	run_all("4", 1, 0, "mesh (4), every combination (per case: mean)");
}

static void test_pq_equals_exhaustive_2d(void **state)
{
	(void)state;
	run_all("2 2", 2, 0, "mesh (2,2), every combination");
}

static void test_pq_equals_exhaustive_3d(void **state)
{
	(void)state;
	run_all("2 2 2", 3, 0, "mesh (2,2,2), every combination");
}

static void test_pq_equals_exhaustive_4d_sample(void **state)
{
	(void)state;
	run_all("2 2 2 2", 4, 300, "mesh (2,2,2,2), 300 random combinations");
}

/* Placements beyond the default kinds: _S, P(avg), P(max), and shard
 * orders other than the default. */
static void random_mixed(int ndim, int rank, uint64_t *rng, struct dt_placements *pl)
{
	static const struct dt_placement alphabet[] = {
		{.kind = DT_PL_REPLICATE},
		{.kind = DT_PL_SHARD, .dim = 0},
		{.kind = DT_PL_SHARD, .dim = 1},
		{.kind = DT_PL_STRIDED_SHARD, .dim = 0, .split_factor = 2},
		{.kind = DT_PL_STRIDED_SHARD, .dim = 1, .split_factor = 2},
		{.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_SUM},
		{.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_AVG},
		{.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_MAX},
	};
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	for (int m = 0; m < ndim; m++) {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		pl->p[m] = alphabet[*rng % 8];
		if (pl->p[m].kind != DT_PL_REPLICATE && pl->p[m].kind != DT_PL_PARTIAL &&
		    pl->p[m].dim >= rank)
			pl->p[m].dim = 0;
	}
	dt_placements_default_order(pl);
	/* Reverse the order of tensor dim 0 half the time. */
	if ((*rng >> 20) & 1) {
		int k = 0, dims[DT_MAX_MESH_DIMS];
		for (int m = 0; m < ndim; m++)
			if (pl->p[m].kind == DT_PL_SHARD && pl->p[m].dim == 0)
				dims[k++] = m;
		bool strided = false;
		for (int m = 0; m < ndim; m++)
			strided |= pl->p[m].kind == DT_PL_STRIDED_SHARD;
		for (int i = 0; i < k && !strided; i++)
			pl->order_pos[dims[i]] = (uint8_t)(k - 1 - i);
	}
}

/* Beyond the default kinds, and with pins, the queue still returns the
 * exhaustive search's strategy. */
static void test_pq_equals_exhaustive_mixed(void **state)
{
	(void)state;
	static const char *const meshes[] = {"2 2", "2 2 2"};
	uint64_t rng = 12345;
	for (int mi = 0; mi < 2; mi++) {
		for (size_t k = 0; k < 3; k++) {
			const struct op_case *oc = &search_ops[k];
			struct dt_module *m = graph(meshes[mi], oc->shapes, oc->n, oc->call);
			struct dt_rules r = {0};
			char err[200];
			assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
			struct tally t = {0};
			for (int c = 0; c < 400; c++) {
				struct dt_placements cur[3];
				bool ok = true;
				for (uint32_t i = 0; i < r.nin; i++) {
					random_mixed(mi + 2, dt_rules_input(&r, i)->rank, &rng, &cur[i]);
					ok &= dt_placements_validate(&cur[i], dt_rules_input(&r, i)->rank,
								     err, sizeof err);
				}
				if (!ok)
					continue;
				compare_searches(m, &r, cur, &t);
				/* And with output 0 pinned to placements of the rows. */
				struct dt_placements pin;
				random_mixed(mi + 2, r.tensors.data[0].rank, &rng, &pin);
				if (dt_placements_validate(&pin, r.tensors.data[0].rank, err, sizeof err))
					compare_pinned(m, &r, cur, &pin, &t);
			}
			print_message("  mixed %-16s on (%s): %llu cases, pq %.1f pops, exhaustive %.1f\n",
				      oc->label, meshes[mi], (unsigned long long)t.cases,
				      (double)t.pq_popped / (double)t.cases,
				      (double)t.ex_candidates / (double)t.cases);
			dt_rules_fini(&r);
			dt_module_destroy(m);
		}
	}
}

/* ------------------------------------------------------------------ */
/* DTensor's counts and choices. */

static uint64_t count_strategies(struct dt_module *m, const char *const *pl, int n,
				 struct dt_shard_choice *best)
{
	struct dt_rules r = {0};
	char err[200];
	assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
	struct dt_placements cur[4];
	for (int i = 0; i < n; i++)
		cur[i] = parse(m, pl[i]);
	struct dt_shard_request req = {.mesh = &m->meshes.data[0], .current = cur};
	struct dt_shard_space s = {0};
	dt_shard_space_init(&s, &r, &req);
	struct dt_shard_stats st = {0};
	struct dt_shard_choice ex = {0};
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_EXHAUSTIVE, &ex, &st), DT_OK);
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_PQ, best, NULL), DT_OK);
	assert_true(best->found && dt_shard_choice_compare(best, &ex) == 0);
	dt_shard_choice_fini(&ex);
	dt_shard_space_fini(&s);
	dt_rules_fini(&r);
	return st.strategies;
}

static void assert_output(struct dt_module *m, const struct dt_shard_choice *c,
			  const char *want)
{
	char got[128];
	print_pl(&c->placements.data[0], got, sizeof got);
	assert_string_equal(got, want);
	(void)m;
}

static void test_dtensor_counts(void **state)
{
	(void)state;
	static const char *const mm_shapes[] = {"16 16", "16 16"};
	struct dt_module *m = graph("2 2 2", mm_shapes, 2,
				    "<node name=\"op\" op=\"call_function\" target=\"aten.mm.default\"><arg node=\"a\"/><arg node=\"b\"/></node>");
	static const char *const mm_in[] = {"S(0) R R", "R R R"};
	struct dt_shard_choice c = {0};
	assert_int_equal(count_strategies(m, mm_in, 2, &c), 512);
	assert_output(m, &c, "S(0) R R");
	assert_true(c.cost == 0);
	dt_module_destroy(m);

	static const char *const cat_shapes[] = {"8 8 8", "8 8 8"};
	static const char *const cat_call =
		"<node name=\"op\" op=\"call_function\" target=\"aten.cat.default\"><arg nodes=\"a b\"/></node>";
	m = graph("2 2 2", cat_shapes, 2, cat_call);
	static const char *const cat_in[] = {"R R S(1)", "S(1) S(1) S(1)"};
	assert_int_equal(count_strategies(m, cat_in, 2, &c), 64);
	assert_output(m, &c, "S(1) S(1) S(1)");
	static const char *const cat_in2[] = {"P(sum) R S(1)", "P(sum) S(1) S(1)"};
	assert_int_equal(count_strategies(m, cat_in2, 2, &c), 64);
	assert_output(m, &c, "P(sum) S(1) S(1)");
	dt_module_destroy(m);

	static const char *const short_shapes[] = {"8 4 8", "8 4 8"};
	m = graph("2 2 2", short_shapes, 2, cat_call);
	assert_int_equal(count_strategies(m, cat_in, 2, &c), 63);
	dt_module_destroy(m);
	dt_shard_choice_fini(&c);
}

/* mm's rows: the 7 of semantics §6, in that form. */
static void test_mm_rows(void **state)
{
	(void)state;
	static const char *const shapes[] = {"8 4", "4 16"};
	struct dt_module *m = graph("2", shapes, 2,
				    "<node name=\"op\" op=\"call_function\" target=\"aten.mm.default\"><arg node=\"a\"/><arg node=\"b\"/></node>");
	struct dt_rules r = {0};
	char err[200], row[128];
	assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
	static const char *const want[] = {
		"S*(0) <- S*(0), R", "S*(1) <- R, S*(1)", "P(sum) <- S*(1), S*(0)",
		"P(sum) <- P(sum), R", "P(avg) <- P(avg), R", "P(sum) <- R, P(sum)",
		"P(avg) <- R, P(avg)",
	};
	assert_int_equal(r.nrows, 7);
	for (uint32_t k = 0; k < r.nrows; k++) {
		dt_rules_row_print(&r, k, row, sizeof row);
		assert_string_equal(row, want[k]);
	}
	assert_string_equal(r.family, "matmul");
	dt_rules_fini(&r);
	dt_module_destroy(m);
}

/* Placeholders take the sharding kinds of the inputs. */
static void test_expansion_kinds(void **state)
{
	(void)state;
	static const char *const shapes[] = {"16 8", "8 32"};
	struct dt_module *m = graph("2 2", shapes, 2,
				    "<node name=\"op\" op=\"call_function\" target=\"aten.mm.default\"><arg node=\"a\"/><arg node=\"b\"/></node>");
	struct dt_rules r = {0};
	char err[200];
	assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
	struct dt_shard_space s = {0};
	struct dt_placements cur[2] = {parse(m, "R R"), parse(m, "R R")};
	struct dt_shard_request req = {.mesh = &m->meshes.data[0], .current = cur};
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(s.nrows, 5); /* R, and the 4 partial rows */
	cur[0] = parse(m, "S(0) R");
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(s.nrows, 8);
	cur[1] = parse(m, "_S(1,2) S(1)");
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(s.nrows, 11); /* S and _S(·,2) versions of 3 rows */
	char text[64];
	struct dt_placements one = {.ndim = 1};
	one.p[0] = dt_shard_space_row(&s, 2)[0];
	print_pl(&one, text, sizeof text);
	assert_string_equal(text, "_S(0,2)");
	assert_int_equal(dt_shard_space_product(&s), 121);
	dt_shard_space_fini(&s);
	dt_rules_fini(&r);
	dt_module_destroy(m);
}

/* ------------------------------------------------------------------ */
/* Filters. */

static void test_filters(void **state)
{
	(void)state;
	/* amax's P(max) cannot meet sum's P(sum) of the same input. */
	static const char *const shapes[] = {"8 8"};
	struct dt_module *m = graph("2 2", shapes, 1,
				    "<node name=\"op\" op=\"call_function\" target=\"aten.amax.default\"><arg node=\"a\"/><arg ints=\"1\"/></node>");
	struct dt_rules r = {0};
	char err[200];
	assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
	struct dt_placements cur[2] = {parse(m, "S(1) P(max)")};
	struct dt_shard_request req = {.mesh = &m->meshes.data[0], .current = cur};
	struct dt_shard_space s = {0};
	struct dt_shard_choice c = {0};
	struct dt_shard_stats st = {0};
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_EXHAUSTIVE, &c, &st), DT_OK);
	/* rows: R, S(0)<-S(0), P(max)<-S(1), P(max)<-P(max): 16, all valid */
	assert_int_equal(s.nrows, 4);
	assert_int_equal(st.strategies, 16);
	assert_true(c.found && c.cost == 0);
	char text[64];
	print_pl(&c.placements.data[0], text, sizeof text);
	assert_string_equal(text, "P(max) P(max)");

	/* A pin: only strategies giving it; none gives S(1) of a [8] result. */
	struct dt_placements pin = parse(m, "R S(0)");
	req.pin = &pin;
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_PQ, &c, NULL), DT_OK);
	assert_true(c.found);
	print_pl(&c.placements.data[0], text, sizeof text);
	assert_string_equal(text, "R S(0)");
	print_pl(&c.placements.data[1], text, sizeof text);
	assert_string_equal(text, "R S(0)");
	pin = parse(m, "S(0) S(0)");
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_PQ, &c, NULL), DT_OK);
	assert_true(c.found); /* 8 rows over 4 shards */

	/* In-place: output 0 must keep input 0's placements. */
	r.inplace = true;
	req.pin = NULL;
	cur[0] = parse(m, "S(0) S(1)");
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_EXHAUSTIVE, &c, NULL), DT_OK);
	assert_false(c.found);
	cur[0] = parse(m, "S(0) R");
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_PQ, &c, NULL), DT_OK);
	assert_true(c.found);
	print_pl(&c.placements.data[0], text, sizeof text);
	assert_string_equal(text, "S(0) R");
	dt_shard_choice_fini(&c);
	dt_shard_space_fini(&s);
	dt_rules_fini(&r);
	dt_module_destroy(m);

	/* Short dims: S(0) over 8 ranks of a 4-long dim is out. */
	static const char *const small[] = {"4 16", "16 8"};
	m = graph("2 2 2", small, 2,
		  "<node name=\"op\" op=\"call_function\" target=\"aten.mm.default\"><arg node=\"a\"/><arg node=\"b\"/></node>");
	assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
	struct dt_placements cur2[2] = {parse(m, "S(0) S(0) R"), parse(m, "R R R")};
	req = (struct dt_shard_request){.mesh = &m->meshes.data[0], .current = cur2};
	dt_shard_space_init(&s, &r, &req);
	st = (struct dt_shard_stats){0};
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_EXHAUSTIVE, &c, &st), DT_OK);
	assert_int_equal(st.strategies, 511);
	dt_shard_choice_fini(&c);
	dt_shard_space_fini(&s);
	dt_rules_fini(&r);
	dt_module_destroy(m);
}

/* new_zeros reads only self's dtype: self never moves. */
static void test_ignored_input(void **state)
{
	(void)state;
	static const char *const shapes[] = {"8 8"};
	struct dt_module *m = graph("2", shapes, 1,
				    "<node name=\"op\" op=\"call_function\" target=\"aten.new_zeros.default\"><arg node=\"a\"/><arg ints=\"4\"/></node>");
	struct dt_rules r = {0};
	char err[200], text[64];
	assert_int_equal(dt_rules_fill(&r, m, op_node(m), err, sizeof err), DT_OK);
	assert_true(dt_rules_input(&r, 0)->ignored);
	struct dt_placements cur[1] = {parse(m, "P(max)")};
	struct dt_shard_request req = {.mesh = &m->meshes.data[0], .current = cur};
	struct dt_shard_space s = {0};
	struct dt_shard_choice c = {0};
	dt_shard_space_init(&s, &r, &req);
	assert_int_equal(dt_shard_search(&s, DT_SEARCH_PQ, &c, NULL), DT_OK);
	assert_true(c.found && c.cost == 0);
	print_pl(&c.placements.data[1], text, sizeof text);
	assert_string_equal(text, "P(max)");
	print_pl(&c.placements.data[0], text, sizeof text);
	assert_string_equal(text, "R");
	dt_shard_choice_fini(&c);
	dt_shard_space_fini(&s);
	dt_rules_fini(&r);
	dt_module_destroy(m);
}

/* ------------------------------------------------------------------ */
/* The planner property the queue's keys rest on: from default-order
 * placements, every mesh dim that leaves S (or P) for another placement
 * has a step on it that is an all_gather or all_to_all (all_reduce or
 * reduce_scatter) carrying at least the smallest shard (all_gather: that
 * times the dim's size), so the plan costs at least that collective. */

static void decode(uint64_t code, int ndim, struct dt_placements *pl)
{
	static const struct dt_placement alphabet[] = {
		{.kind = DT_PL_REPLICATE},
		{.kind = DT_PL_SHARD, .dim = 0},
		{.kind = DT_PL_SHARD, .dim = 1},
		{.kind = DT_PL_SHARD, .dim = 2},
		{.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_SUM},
		{.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_AVG},
		{.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_MAX},
	};
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	for (int m = 0; m < ndim; m++) {
		pl->p[m] = alphabet[code % 7];
		code /= 7;
	}
	dt_placements_default_order(pl);
}

/* Whether plan has, on mesh dim m, a step leaving `from` as the bound
 * assumes. */
static bool paid_on(const struct dt_redist_plan *plan, int m,
		    const struct dt_placement *from, double least)
{
	for (uint32_t k = 0; k < plan->steps.len; k++) {
		const struct dt_redist_step *st = &plan->steps.data[k];
		if (st->ndims != 1 || st->dims[0] != m)
			continue;
		bool gather = st->kind == DT_REDIST_ALL_GATHER;
		bool ok = from->kind == DT_PL_PARTIAL
				  ? st->kind == DT_REDIST_ALL_REDUCE ||
					    st->kind == DT_REDIST_REDUCE_SCATTER
				  : gather || st->kind == DT_REDIST_ALL_TO_ALL;
		double want = gather ? least * (double)plan->mesh.shape[m] : least;
		if (ok && st->bytes >= want * (1 - 1e-12))
			return true;
	}
	return false;
}

static void test_every_changed_dim_pays_a_collective(void **state)
{
	(void)state;
	static const struct {
		int ndim;
		int64_t mesh[3], shape[3];
	} setups[] = {
		{2, {2, 2}, {8, 8, 8}},
		{2, {4, 2}, {5, 6, 7}},
		{3, {2, 2, 2}, {8, 8, 8}},
		{3, {4, 4, 2}, {3, 5, 16}},
	};
	for (size_t k = 0; k < sizeof setups / sizeof setups[0]; k++) {
		struct dt_mesh mesh = {.ndim = (uint8_t)setups[k].ndim, .size = 1};
		for (int d = 0; d < mesh.ndim; d++) {
			mesh.shape[d] = setups[k].mesh[d];
			mesh.size *= mesh.shape[d];
		}
		double least = (double)(setups[k].shape[0] * setups[k].shape[1] * setups[k].shape[2]) * 4 /
			(double)mesh.size;
		uint64_t states = 1, pairs = 0;
		for (int d = 0; d < mesh.ndim; d++)
			states *= 7;
		for (uint64_t a = 0; a < states; a++) {
			struct dt_placements src;
			decode(a, mesh.ndim, &src);
			for (uint64_t b = 0; b < states; b++) {
				struct dt_placements dst;
				decode(b, mesh.ndim, &dst);
				struct dt_redist_request req = {.mesh = &mesh, .dtype = DT_FLOAT32,
								.rank = 3, .src = src, .dst = dst};
				memcpy(req.shape, setups[k].shape, sizeof setups[k].shape);
				struct dt_redist_plan plan;
				char err[256];
				if (dt_redist_plan_init(&plan, &req, err, sizeof err) != DT_OK)
					continue;
				pairs++;
				for (int d = 0; d < mesh.ndim; d++) {
					const struct dt_placement *p = &src.p[d], *q = &dst.p[d];
					bool same = p->kind == q->kind && p->dim == q->dim &&
						    p->reduce == q->reduce;
					if (same || p->kind == DT_PL_REPLICATE || mesh.shape[d] == 1)
						continue;
					if (!paid_on(&plan, d, p, least)) {
						char x[64], y[64];
						print_pl(&src, x, sizeof x);
						print_pl(&dst, y, sizeof y);
						fail_msg("%s -> %s: mesh dim %d changes without its collective",
							 x, y, d);
					}
				}
				dt_redist_plan_fini(&plan);
			}
		}
		print_message("mesh setup %zu: %llu (src, dst) plans hold\n", k,
			      (unsigned long long)pairs);
	}
}

/* What the move tests price: an f32[8, 8] value on a 2 x 2 mesh under
 * DTensor's default topology. */
struct move_setup {
	struct dt_module *m;
	const struct dt_mesh *mesh;
	struct dt_topology topo;
	struct dt_rule_tensor t;
};

static void move_setup_init(struct move_setup *u)
{
	static const char *const shapes[] = {"8 8"};
	u->m = graph("2 2", shapes, 1,
		     "<node name=\"op\" op=\"call_function\" target=\"aten.neg.default\"><arg node=\"a\"/></node>");
	u->mesh = &u->m->meshes.data[0];
	dt_topology_default(&u->topo);
	u->t = (struct dt_rule_tensor){.rank = 2, .dtype = DT_FLOAT32, .shape = {8, 8}};
}

/* A bucketed move (dt_shard_lowering.bucketed) leaves the latency of each
 * all_gather, reduce_scatter and all_reduce to the bucket of its key and
 * records the key; a collective of a key the move already has keeps it. */
static void test_move_bucket_keys(void **state)
{
	(void)state;
	struct move_setup u;
	move_setup_init(&u);
	struct dt_placements src = parse(u.m, "S(0) S(1)"), dst = parse(u.m, "R R");
	double full = dt_shard_move_cost(u.mesh, &u.topo, &u.t, &src, &dst, NULL);
	struct dt_shard_move_keys keys = {0};
	struct dt_shard_lowering low = {.bucketed = true, .keys = &keys};
	double bytes = dt_shard_move_cost(u.mesh, &u.topo, &u.t, &src, &dst, &low);
	/* DTensor's plan: all_gather on mesh dim 1 (tp), then on dim 0. */
	assert_int_equal(keys.n, 2);
	double latency = 0;
	for (int k = 0; k < 2; k++) {
		assert_int_equal(keys.key[k].kind, DT_COMM_ALL_GATHER);
		assert_int_equal(keys.key[k].ndims, 1);
		assert_int_equal(keys.key[k].dims[0], 1 - k);
		assert_int_equal(keys.key[k].dtype, DT_FLOAT32);
		assert_int_equal(keys.key[k].reduce, DT_REDUCE_SUM);
		assert_true(keys.key[k].latency_us > 1);
		latency += keys.key[k].latency_us;
	}
	assert_true(fabs(full - (bytes + latency)) < 1e-9);
	/* Both keys joined already: each collective pays its own latency. */
	assert_true(fabs(dt_shard_move_cost(u.mesh, &u.topo, &u.t, &src, &dst, &low) -
			 full) < 1e-9);
	assert_int_equal(keys.n, 2);
	/* A partial average's all_reduce: its op is part of the key. */
	struct dt_shard_move_keys avg = {0};
	low.keys = &avg;
	struct dt_placements p = parse(u.m, "P(avg) R");
	dt_shard_move_cost(u.mesh, &u.topo, &u.t, &p, &dst, &low);
	assert_int_equal(avg.n, 1);
	assert_int_equal(avg.key[0].kind, DT_COMM_ALL_REDUCE);
	assert_int_equal(avg.key[0].dims[0], 0);
	assert_int_equal(avg.key[0].reduce, DT_REDUCE_AVG);
	assert_false(dt_shard_bucket_key_equal(&avg.key[0], &keys.key[1]));
	dt_module_destroy(u.m);
}

/* The bytes a move's lowered steps hold besides its source and result
 * (dt_shard_lowering.transient), on a 2 × 2 mesh, f32[8, 8] (256 bytes
 * whole): a reduce_scatter on dim 1 sends a cat of its input (the input
 * and the cat, 512, are 128 past the source and the 128-byte result); on
 * dim 0 it reads the input as it is (none); an all_gather on dim 1 cats
 * from the gathered buffer (the buffer and the cat, 512, 128 past the
 * 128-byte shard and the result); an all_reduce holds its input and
 * result (none); two steps hold the first step's result with the
 * second's (all_gather on tp then dp: 128 + 256 past 64 + 256; P(sum) on
 * both to S(0) S(1): reduce_scatter on dp (dim 0, 256 + 128), then on tp
 * with the cat of its 128-byte input, 64 past 256 + 64). */
static void test_move_transient(void **state)
{
	(void)state;
	struct move_setup u;
	move_setup_init(&u);
	static const struct {
		const char *src, *dst;
		double transient;
	} cases[] = {
	    {"R P(sum)", "R S(1)", 128}, {"R P(sum)", "R S(0)", 0},
	    {"R S(1)", "R R", 128},      {"R P(sum)", "R R", 0},
	    {"S(0) S(1)", "R R", 64},    {"P(sum) P(sum)", "S(0) S(1)", 64},
	};
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
		struct dt_placements src = parse(u.m, cases[k].src),
				     dst = parse(u.m, cases[k].dst);
		double transient = -1;
		struct dt_shard_lowering low = {.transient = &transient};
		assert_true(isfinite(dt_shard_move_cost(u.mesh, &u.topo, &u.t, &src,
							&dst, &low)));
		if (transient != cases[k].transient)
			fail_msg("%s -> %s: transient %g, want %g", cases[k].src,
				 cases[k].dst, transient, cases[k].transient);
	}
	dt_module_destroy(u.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mm_rows),
		cmocka_unit_test(test_expansion_kinds),
		cmocka_unit_test(test_dtensor_counts),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_ignored_input),
		cmocka_unit_test(test_every_changed_dim_pays_a_collective),
		cmocka_unit_test(test_move_bucket_keys),
		cmocka_unit_test(test_move_transient),
		cmocka_unit_test(test_pq_equals_exhaustive_1d),
		cmocka_unit_test(test_pq_equals_exhaustive_2d),
		cmocka_unit_test(test_pq_equals_exhaustive_3d),
		cmocka_unit_test(test_pq_equals_exhaustive_4d_sample),
		cmocka_unit_test(test_pq_equals_exhaustive_mixed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
