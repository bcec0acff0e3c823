// SPDX-License-Identifier: MIT
/* test_placement.c: unit tests of placement parsing, printing, validation
 * and shard indices against the vectors of semantics.md §2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"

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

/* Interned names and the meshes the tests use: world = dp x tp (2,4),
 * abc = A x B x C (2,2,2), m42 = x x y (4,2). */
struct fixture {
	struct dt_intern strings;
	struct dt_mesh world, abc, m42;
};

static struct dt_mesh make_mesh(struct dt_intern *strings, const char *name,
				const char *dims, const int64_t *shape, int ndim)
{
	struct dt_mesh m = {.ndim = (uint8_t)ndim, .size = 1};
	m.name.id = dt_intern(strings, name, strlen(name));
	for (int i = 0; i < ndim; i++) {
		size_t n = strcspn(dims, " ");
		m.dims[i].id = dt_intern(strings, dims, n);
		dims += n + (dims[n] == ' ');
		m.shape[i] = shape[i];
		m.size *= shape[i];
	}
	return m;
}

static int setup(void **state)
{
	struct fixture *f = test_calloc(1, sizeof *f);
	dt_intern_init(&f->strings);
	f->world = make_mesh(&f->strings, "world", "dp tp", (int64_t[]){2, 4}, 2);
	f->abc = make_mesh(&f->strings, "abc", "A B C", (int64_t[]){2, 2, 2}, 3);
	f->m42 = make_mesh(&f->strings, "m42", "x y", (int64_t[]){4, 2}, 2);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	dt_intern_fini(&f->strings);
	test_free(f);
	return 0;
}

/* Parses or fails the test with the parser's message. */
static struct dt_placements parse(struct fixture *f, const struct dt_mesh *m,
				  const char *text, const char *order)
{
	struct dt_placements pl;
	char err[200] = "";
	if (!dt_placements_parse(&pl, text, order, m, &f->strings, err,
				 sizeof err))
		fail_msg("parse '%s' order '%s': %s", text, order ? order : "",
			 err);
	return pl;
}

static void assert_parse_error(struct fixture *f, const struct dt_mesh *m,
			       const char *text, const char *order,
			       const char *want)
{
	struct dt_placements pl;
	char err[200] = "";
	assert_false(dt_placements_parse(&pl, text, order, m, &f->strings, err,
					 sizeof err));
	assert_string_equal(err, want);
}

static void assert_indices(const struct dt_placements *pl,
			   const int64_t *shape, const int64_t *coord,
			   int64_t len, const int64_t *want, int64_t nwant)
{
	int64_t got[64], n = -1;
	dt_shard_indices(pl, shape, coord, 0, len, got, &n);
	assert_int_equal(n, nwant);
	for (int64_t i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
	assert_int_equal(dt_shard_length(pl, shape, coord, 0, len), nwant);
}

static void test_reduce_names(void **state)
{
	(void)state;
	enum dt_reduce_op op;
	for (int i = 0; i < DT_NREDUCE; i++) {
		assert_true(dt_reduce_parse(dt_reduce_name((enum dt_reduce_op)i),
					    &op));
		assert_int_equal(op, i);
	}
	assert_string_equal(dt_reduce_name(DT_REDUCE_AVG), "avg");
	assert_string_equal(dt_reduce_name(DT_REDUCE_PRODUCT), "product");
	assert_false(dt_reduce_parse("mean", &op));
	assert_false(dt_reduce_parse("Sum", &op));
}

static void test_parse_print(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh m4 = make_mesh(&f->strings, "m4", "a b c d",
				      (int64_t[]){2, 2, 2, 2}, 4);
	struct dt_placements pl = parse(f, &m4, "S(0) R P(sum) _S(0,2)", NULL);
	assert_int_equal(pl.ndim, 4);
	assert_int_equal(pl.p[0].kind, DT_PL_SHARD);
	assert_int_equal(pl.p[1].kind, DT_PL_REPLICATE);
	assert_int_equal(pl.p[2].kind, DT_PL_PARTIAL);
	assert_int_equal(pl.p[2].reduce, DT_REDUCE_SUM);
	assert_int_equal(pl.p[3].kind, DT_PL_STRIDED_SHARD);
	assert_int_equal(pl.p[3].dim, 0);
	assert_int_equal(pl.p[3].split_factor, 2);
	assert_int_equal(pl.order_pos[3], 1); /* _S shards dim 0 after S */

	char buf[64];
	int n = dt_placements_print(&pl, buf, sizeof buf);
	assert_string_equal(buf, "S(0) R P(sum) _S(0,2)");
	assert_int_equal(n, 21);
	/* snprintf semantics: full length returned, output truncated. */
	assert_int_equal(dt_placements_print(&pl, buf, 4), 21);
	assert_string_equal(buf, "S(0");
	assert_int_equal(dt_placements_print(&pl, NULL, 0), 21);

	/* Blanks are free; a closing parenthesis also ends a token. */
	pl = parse(f, &f->world, "  P(max)   _S(1, 3) ", NULL);
	dt_placements_print(&pl, buf, sizeof buf);
	assert_string_equal(buf, "P(max) _S(1,3)");
	pl = parse(f, &f->world, "S(12)S(0)", NULL);
	dt_placements_print(&pl, buf, sizeof buf);
	assert_string_equal(buf, "S(12) S(0)");
	/* Without a mesh any count up to the limit is accepted. */
	assert_true(dt_placements_parse(&pl, "R R R", NULL, NULL, NULL, buf,
					sizeof buf));
	assert_int_equal(pl.ndim, 3);
}

static void test_parse_errors(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh *w = &f->world;
	assert_parse_error(f, w, "S(0) R R", NULL,
			   "expected 2 placements for mesh 'world' (dims dp "
			   "tp), got 3");
	assert_parse_error(f, w, "", NULL,
			   "expected 2 placements for mesh 'world' (dims dp "
			   "tp), got 0");
	assert_parse_error(f, w, "S(x) R", NULL, "bad placement token 'S(x)'");
	assert_parse_error(f, w, "R P(mean)", NULL,
			   "bad placement token 'P(mean)'");
	assert_parse_error(f, w, "_S(0) R", NULL,
			   "bad placement token '_S(0)'");
	assert_parse_error(f, w, "S(-1) R", NULL,
			   "bad placement token 'S(-1)'");
	assert_parse_error(f, w, "Shard(0) R", NULL,
			   "bad placement token 'Shard(0)'");
	assert_parse_error(f, w, "S(0 R", NULL, "bad placement token 'S(0 R'");
	assert_parse_error(f, w, "S(0) S(1)", "0:pp",
			   "order names mesh dim 'pp' which is not in mesh "
			   "'world'");
	assert_parse_error(f, w, "S(0) S(1)", "0:2",
			   "order names mesh dim '2' which is not in mesh "
			   "'world'");
	assert_parse_error(f, w, "S(0) S(1)", "0:tp",
			   "order for tensor dim 0 lists mesh dim tp, which "
			   "does not shard dim 0");
	assert_parse_error(f, w, "S(0) S(0)", "0:tp",
			   "order for tensor dim 0 omits mesh dim dp, which "
			   "shards dim 0");
	assert_parse_error(f, w, "S(0) S(0)", "0:tp,tp",
			   "order lists mesh dim tp twice");
	assert_parse_error(f, w, "S(0) S(0)", "0:tp,dp 0:dp,tp",
			   "order lists tensor dim 0 twice");
	assert_parse_error(f, w, "S(0) S(0)", "0:tp,",
			   "bad order entry '0:tp,' (empty mesh dim)");
	assert_parse_error(f, w, "S(0) S(0)", "x:tp",
			   "bad order entry 'x:tp' (expected "
			   "TENSORDIM:MESHDIM,...)");
	/* A tiny error buffer is truncated, never overrun. */
	char err[8];
	struct dt_placements pl;
	assert_false(dt_placements_parse(&pl, "Q", NULL, w, &f->strings, err,
					 sizeof err));
	assert_string_equal(err, "bad pla");
}

static void test_order(void **state)
{
	struct fixture *f = *state;
	char buf[64];
	struct dt_placements def = parse(f, &f->world, "S(0) S(0)", NULL);
	assert_int_equal(def.order_pos[0], 0);
	assert_int_equal(def.order_pos[1], 1);
	assert_true(dt_placements_has_default_order(&def));
	assert_int_equal(dt_placements_print_order(&def, &f->world, &f->strings,
						   buf, sizeof buf),
			 0);
	assert_string_equal(buf, "");

	struct dt_placements rev = parse(f, &f->world, "S(0) S(0)", "0:tp,dp");
	assert_int_equal(rev.order_pos[0], 1);
	assert_int_equal(rev.order_pos[1], 0);
	assert_false(dt_placements_has_default_order(&rev));
	assert_false(dt_placements_equal(&def, &rev));
	dt_placements_print_order(&rev, &f->world, &f->strings, buf, sizeof buf);
	assert_string_equal(buf, "0:tp,dp");
	dt_placements_print_order(&rev, NULL, NULL, buf, sizeof buf);
	assert_string_equal(buf, "0:1,0");
	/* Indices name mesh dims too; the default order spelled out. */
	struct dt_placements by_index = parse(f, &f->world, "S(0) S(0)", "0:1,0");
	assert_true(dt_placements_equal(&by_index, &rev));
	struct dt_placements spelled = parse(f, &f->world, "S(0) S(0)", "0:dp,tp");
	assert_true(dt_placements_equal(&spelled, &def));

	/* Three dims, _S counts as sharding, other tensor dims default. */
	struct dt_placements three =
		parse(f, &f->abc, "S(1) _S(0,2) S(0)", "0:C,B");
	assert_int_equal(three.order_pos[0], 0);
	assert_int_equal(three.order_pos[1], 1);
	assert_int_equal(three.order_pos[2], 0);
	dt_placements_print_order(&three, &f->abc, &f->strings, buf, sizeof buf);
	assert_string_equal(buf, "0:C,B");
	struct dt_placements two = parse(f, &f->abc, "S(1) S(0) S(1)",
					 "1:C,A 0:B");
	assert_int_equal(two.order_pos[0], 1);
	assert_int_equal(two.order_pos[2], 0);
	dt_placements_print_order(&two, &f->abc, &f->strings, buf, sizeof buf);
	assert_string_equal(buf, "1:C,A");

	dt_placements_default_order(&rev);
	assert_true(dt_placements_equal(&rev, &def));
}

static void test_equal(void **state)
{
	struct fixture *f = *state;
	struct dt_placements a = parse(f, &f->world, "P(sum) R", NULL);
	struct dt_placements b = parse(f, &f->world, "P(avg) R", NULL);
	struct dt_placements c = parse(f, &f->world, "_S(0,2) R", NULL);
	struct dt_placements d = parse(f, &f->world, "_S(0,3) R", NULL);
	struct dt_placements e = parse(f, &f->world, "S(0) R", NULL);
	assert_false(dt_placements_equal(&a, &b));
	assert_false(dt_placements_equal(&c, &d));
	assert_false(dt_placements_equal(&c, &e));
	/* Fields a kind does not use do not matter. */
	struct dt_placements a2 = a;
	a2.p[1].dim = 5;
	a2.order_pos[1] = 3;
	assert_true(dt_placements_equal(&a, &a2));
}

static void assert_invalid(struct fixture *f, const char *text, int rank,
			   const char *want)
{
	struct dt_placements pl = parse(f, &f->abc, text, NULL);
	char err[200] = "";
	assert_false(dt_placements_validate(&pl, rank, err, sizeof err));
	assert_string_equal(err, want);
}

static void test_validate(void **state)
{
	struct fixture *f = *state;
	char err[200];
	struct dt_placements pl = parse(f, &f->abc, "S(1) P(sum) P(avg)", NULL);
	assert_true(dt_placements_validate(&pl, 2, err, sizeof err));
	pl = parse(f, &f->abc, "P(max) R P(max)", NULL);
	assert_true(dt_placements_validate(&pl, 0, err, sizeof err));

	assert_invalid(f, "R S(2) R", 2,
		       "S(2) on mesh dim 1 shards tensor dim 2, but the tensor "
		       "has rank 2");
	assert_invalid(f, "R R _S(0,0)", 1,
		       "_S(0,0) on mesh dim 2 has split factor 0; it must be "
		       "at least 1");
	assert_invalid(f, "P(sum) R P(max)", 1,
		       "mixed partial reduce ops P(sum) and P(max) are not "
		       "allowed; only sum and avg may mix");
	assert_invalid(f, "P(avg) P(sum) P(min)", 1,
		       "mixed partial reduce ops P(avg) and P(min) are not "
		       "allowed; only sum and avg may mix");
	assert_invalid(f, "P(product) P(sum) R", 1,
		       "mixed partial reduce ops P(product) and P(sum) are not "
		       "allowed; only sum and avg may mix");

	pl = parse(f, &f->abc, "S(0) S(0) R", NULL);
	pl.order_pos[1] = 0; /* two mesh dims at position 0 */
	assert_false(dt_placements_validate(&pl, 1, err, sizeof err));
	assert_string_equal(err, "shard order of tensor dim 0 is not a "
				 "permutation of its 2 mesh dims");
}

static void test_chunk(void **state)
{
	(void)state;
	const int64_t want13[][2] = {{0, 4}, {4, 4}, {8, 4}, {12, 1}};
	const int64_t want2[][2] = {{0, 1}, {1, 1}, {2, 0}, {2, 0}};
	int64_t s, n;
	for (int i = 0; i < 4; i++) {
		dt_chunk(13, 4, i, &s, &n);
		assert_int_equal(s, want13[i][0]);
		assert_int_equal(n, want13[i][1]);
		dt_chunk(2, 4, i, &s, &n);
		assert_int_equal(s, want2[i][0]);
		assert_int_equal(n, want2[i][1]);
	}
	dt_chunk(10, 4, 3, &s, &n); /* cs 3: [9, 10) */
	assert_int_equal(s, 9);
	assert_int_equal(n, 1);
	dt_chunk(0, 3, 1, &s, &n);
	assert_int_equal(n, 0);
}

static void test_shard_uneven(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh m4 = make_mesh(&f->strings, "m4", "w", (int64_t[]){4}, 1);
	struct dt_placements pl = parse(f, &m4, "S(0)", NULL);
	const int64_t len13[] = {4, 4, 4, 1}, len2[] = {1, 1, 0, 0};
	for (int64_t i = 0; i < 4; i++) {
		assert_int_equal(dt_shard_length(&pl, m4.shape, &i, 0, 13),
				 len13[i]);
		assert_int_equal(dt_shard_length(&pl, m4.shape, &i, 0, 2),
				 len2[i]);
	}
	assert_indices(&pl, m4.shape, (int64_t[]){3}, 13, (int64_t[]){12}, 1);
	assert_indices(&pl, m4.shape, (int64_t[]){1}, 2, (int64_t[]){1}, 1);
	assert_indices(&pl, m4.shape, (int64_t[]){2}, 2, NULL, 0);
}

static void test_strided_shard(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh m4 = make_mesh(&f->strings, "m4", "w", (int64_t[]){4}, 1);
	struct dt_placements pl = parse(f, &m4, "_S(0,2)", NULL);
	assert_indices(&pl, m4.shape, (int64_t[]){0}, 9, (int64_t[]){0, 1, 5}, 3);
	assert_indices(&pl, m4.shape, (int64_t[]){1}, 9, (int64_t[]){2, 3, 6}, 3);
	assert_indices(&pl, m4.shape, (int64_t[]){2}, 9, (int64_t[]){4, 7}, 2);
	assert_indices(&pl, m4.shape, (int64_t[]){3}, 9, (int64_t[]){8}, 1);
}

/* [_S(0,2), S(0)] on (4,2) holds what [S(0), S(0)] order "0:1,0" holds,
 * and (so the check has teeth) not what the default order holds. */
static void test_strided_matches_order(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh *m = &f->m42;
	struct dt_placements st = parse(f, m, "_S(0,2) S(0)", NULL);
	struct dt_placements ord = parse(f, m, "S(0) S(0)", "0:1,0");
	struct dt_placements def = parse(f, m, "S(0) S(0)", NULL);
	const int64_t lens[] = {16, 13, 8, 24, 12};
	for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
		bool differs_from_default = false;
		for (int64_t pos = 0; pos < m->size; pos++) {
			int64_t c[2] = {pos / 2, pos % 2};
			int64_t a[64], b[64], d[64], na, nb, nd;
			dt_shard_indices(&st, m->shape, c, 0, lens[k], a, &na);
			dt_shard_indices(&ord, m->shape, c, 0, lens[k], b, &nb);
			dt_shard_indices(&def, m->shape, c, 0, lens[k], d, &nd);
			assert_int_equal(na, nb);
			assert_memory_equal(a, b, (size_t)na * sizeof *a);
			differs_from_default |=
				na != nd || memcmp(a, d, (size_t)na * sizeof *a);
		}
		assert_true(differs_from_default);
	}
	/* Rank (1,1) of 16 rows: piece 1 of dim y, then x's chunk 1. */
	assert_indices(&st, m->shape, (int64_t[]){1, 1}, 16,
		       (int64_t[]){10, 11}, 2);
}

static void test_nested_order(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh *w = &f->world; /* DP = 2, TP = 4 */
	struct dt_placements def = parse(f, w, "S(0) S(0)", NULL);
	struct dt_placements rev = parse(f, w, "S(0) S(0)", "0:tp,dp");
	for (int64_t i = 0; i < 2; i++)
		for (int64_t j = 0; j < 4; j++) {
			int64_t c[2] = {i, j}, k = i * 4 + j, r = j * 2 + i;
			assert_indices(&def, w->shape, c, 16,
				       (int64_t[]){2 * k, 2 * k + 1}, 2);
			assert_indices(&rev, w->shape, c, 16,
				       (int64_t[]){2 * r, 2 * r + 1}, 2);
		}
	/* R and P leave indices alone; other tensor dims are whole. */
	struct dt_placements rs = parse(f, w, "P(sum) S(0)", NULL);
	assert_indices(&rs, w->shape, (int64_t[]){1, 2}, 8, (int64_t[]){4, 5},
		       2);
	int64_t out[8], n;
	dt_shard_indices(&def, w->shape, (int64_t[]){1, 3}, 1, 3, out, &n);
	assert_int_equal(n, 3);
	assert_int_equal(out[2], 2);
}

/* When every mesh dim shards the dim, the ranks' indices partition [0, L)
 * for any order and split factors, and dt_shard_length agrees. */
static void test_shards_partition(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh m = make_mesh(&f->strings, "m", "a b c",
				     (int64_t[]){2, 3, 2}, 3);
	const char *orders[] = {NULL, "0:c,a,b", "0:b,c,a"};
	/* Split factors above the length leave pieces empty, and below it
	 * leave one short piece (dt_shard_length's closed form). */
	const char *texts[] = {"S(0) S(0) S(0)", "_S(0,3) S(0) _S(0,2)",
			       "_S(0,5) _S(0,4) S(0)"};
	for (int t = 0; t < 3; t++)
		for (int o = 0; o < 3; o++) {
			struct dt_placements pl = parse(f, &m, texts[t], orders[o]);
			for (int64_t len = 0; len <= 30; len++) {
				int hits[31] = {0};
				for (int64_t pos = 0; pos < m.size; pos++) {
					int64_t c[3], out[31], n;
					dt_mesh_coords(&m, pos, c);
					dt_shard_indices(&pl, m.shape, c, 0, len,
							 out, &n);
					assert_int_equal(dt_shard_length(&pl,
									 m.shape,
									 c, 0,
									 len),
							 n);
					for (int64_t i = 0; i < n; i++)
						hits[out[i]]++;
				}
				for (int64_t i = 0; i < len; i++)
					assert_int_equal(hits[i], 1);
			}
		}
}

/* The SPMD helpers (semantics §7): padded shapes, evenness, refinement,
 * block levels and where a finer shard sits in a coarser one. */
static void test_spmd_helpers(void **state)
{
	struct fixture *f = *state;
	struct dt_mesh m22 = make_mesh(&f->strings, "m22", "A B",
				       (int64_t[]){2, 2}, 2);
	struct dt_mesh m32 = make_mesh(&f->strings, "m32", "A B",
				       (int64_t[]){3, 2}, 2);
	struct dt_placements s00 = parse(f, &m22, "S(0) S(0)", NULL);
	struct dt_placements s0r = parse(f, &m22, "S(0) R", NULL);
	struct dt_placements rr = parse(f, &m22, "R R", NULL);
	struct dt_placements s00b = parse(f, &m22, "S(0) S(0)", "0:B,A");
	int64_t out[2];
	/* (5, 3) S0S0 on 2x2: rows 2 1 1 1, padded to 2; rank 3 (1, 1) has 1 */
	dt_shard_shape(&m22, &s00, -1, (int64_t[]){5, 3}, 2, out);
	assert_int_equal(out[0], 2);
	assert_int_equal(out[1], 3);
	dt_shard_shape(&m22, &s00, 3, (int64_t[]){5, 3}, 2, out);
	assert_int_equal(out[0], 1);
	assert_false(dt_shard_even(&m22, &s00, (int64_t[]){5, 3}, 2));
	assert_true(dt_shard_even(&m22, &s00, (int64_t[]){8, 3}, 2));
	/* 10 rows on 3x2: 4 4 2, then 2 2 / 2 2 / 1 1: uneven though each
	 * level's groups split evenly */
	struct dt_placements t00 = parse(f, &m32, "S(0) S(0)", NULL);
	assert_false(dt_shard_even(&m32, &t00, (int64_t[]){10}, 1));
	dt_shard_shape(&m32, &t00, -1, (int64_t[]){10}, 1, out);
	assert_int_equal(out[0], 2);
	/* refinement: R R -> S(0) R -> S(0) S(0), not back, not reordered */
	assert_true(dt_placements_refine(&rr, &s0r, 2));
	assert_true(dt_placements_refine(&s0r, &s00, 2));
	assert_true(dt_placements_refine(&s00, &s00, 2));
	assert_false(dt_placements_refine(&s00, &s0r, 2));
	assert_false(dt_placements_refine(&s0r, &s00b, 2));
	/* block levels: S(0) S(0) is S(0) R plus B on dim 0 */
	assert_int_equal(dt_placements_block_dim(&s0r, &s00, 0), 1);
	assert_int_equal(dt_placements_block_dim(&rr, &s0r, 0), 0);
	assert_int_equal(dt_placements_block_dim(&rr, &s00, 0), -1);
	assert_int_equal(dt_placements_block_dim(&s0r, &s00, 1), -1);
	/* rank (1, 1)'s S0S0 row of 5 (row 4) sits at position 1 of its
	 * S(0) R rows [3, 5) */
	int64_t start, length;
	dt_shard_box(&s0r, &s00, m22.shape, (int64_t[]){1, 1}, 0, 5, &start,
		     &length);
	assert_int_equal(start, 1);
	assert_int_equal(length, 1);
	dt_shard_box(&rr, &s00b, m22.shape, (int64_t[]){0, 1}, 0, 8, &start,
		     &length);
	assert_int_equal(start, 4); /* order B, A: chunk 1 * 2 + 0 */
	assert_int_equal(length, 2);
}

int main(void)
{
	dt_set_allocator(cmocka_realloc, NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reduce_names),
		cmocka_unit_test_setup_teardown(test_parse_print, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_equal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_validate, setup, teardown),
		cmocka_unit_test(test_chunk),
		cmocka_unit_test_setup_teardown(test_shard_uneven, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strided_shard, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strided_matches_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_nested_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_shards_partition, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_spmd_helpers, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
