// SPDX-License-Identifier: MIT
/* test_rt_inputs.c: the input formula (values, determinism, exactness in
 * 16-bit floats), the shards every rank materializes (S, uneven S, _S and
 * shard orders on (2,2) and (4,2) meshes reassemble the global tensor
 * exactly), Partial splits that reduce back to the global value, and the
 * per-rank and global-view cases. */
#include "rt_test.h"
#include "internal.h"

#include <math.h>

#define SEED 7

static void test_formula(void **state)
{
	(void)state;
	bool seen[17] = {false};
	for (int64_t i = 0; i < 4000; i++) {
		double v = dt_input_value(SEED, "w", i, DT_FLOAT32, 2);
		assert_true(v >= -1 && v <= 1);
		assert_true(v * 8 == floor(v * 8));
		assert_true(dt_round_to(DT_BFLOAT16, v) == v);
		assert_true(dt_round_to(DT_FLOAT16, v) == v);
		assert_true(dt_input_value(SEED, "w", i, DT_BFLOAT16, 2) == v);
		seen[(int)(v * 8) + 8] = true;
		double k = dt_input_value(SEED, "w", i, DT_INT64, 5);
		assert_true(k >= 0 && k < 5 && k == floor(k));
		double b = dt_input_value(SEED, "w", i, DT_BOOL, 2);
		assert_true(b == 0 || b == 1);
	}
	for (int k = 0; k < 17; k++)
		assert_true(seen[k]);
	/* the documented formula: mix(mix(mix(seed) ^ fnv(name)) ^ index) */
	uint64_t h = dt_rt_mix64(dt_rt_mix64(dt_rt_mix64(SEED) ^ dt_rt_fnv1a("w")) ^ 11);
	assert_true(dt_input_value(SEED, "w", 11, DT_FLOAT32, 2) == (double)((int)(h % 17) - 8) / 8);
	assert_true(dt_input_value(SEED, "w", 11, DT_INT32, 1000) == (double)(h % 1000));
	assert_true(dt_input_value(SEED, "w", 11, DT_BOOL, 2) == (double)(h & 1));
	/* pinned: splitmix64 of 0 and FNV-1a of "" and "a" */
	assert_true(dt_rt_mix64(0) == 0xe220a8397b1dcdafull);
	assert_true(dt_rt_fnv1a("") == 0xcbf29ce484222325ull);
	assert_true(dt_rt_fnv1a("a") == 0xaf63dc4c8601ec8cull);
	/* names, seeds and indices all matter */
	int differ_name = 0, differ_seed = 0;
	for (int64_t i = 0; i < 64; i++) {
		differ_name += dt_input_value(SEED, "w", i, DT_FLOAT32, 2) !=
			       dt_input_value(SEED, "x", i, DT_FLOAT32, 2);
		differ_seed += dt_input_value(SEED, "w", i, DT_FLOAT32, 2) !=
			       dt_input_value(SEED + 1, "w", i, DT_FLOAT32, 2);
	}
	assert_true(differ_name > 40 && differ_seed > 40);
}

/* ---- shards ---- */

/* A per-rank local-view graph (rank="graph_rank") with one placeholder
 * "x" (`tensor` and `sharding` elements); materializes it for `rank`. */
static int materialize_as(struct rt_diag *r, const char *mesh, const char *tensor,
			  const char *sharding, int graph_rank, int rank,
			  struct dt_backend *b, struct dt_module **mout,
			  struct dt_rt_tensor *t)
{
	char xml[2048];
	snprintf(xml, sizeof(xml),
		 "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" view=\"local\" rank=\"%d\">\n"
		 "%s<node name=\"x\" op=\"placeholder\">%s%s</node>"
		 "<node name=\"output\" op=\"output\"><arg nodes=\"x\"/></node></dtopt-graph>\n",
		 graph_rank, mesh, tensor, sharding);
	*mout = rt_load(r, xml);
	return dt_materialize_input(*mout, rt_node(*mout, "x"), rank, SEED, b, t);
}

static int materialize(struct rt_diag *r, const char *mesh, const char *tensor,
		       const char *sharding, int rank, struct dt_backend *b,
		       struct dt_module **mout, struct dt_rt_tensor *t)
{
	return materialize_as(r, mesh, tensor, sharding, rank, rank, b, mout, t);
}

/* Rank `rank`'s tensor must hold, at local (i, j), the global element
 * (rows[i], cols[j]) of a global [R, C] tensor. */
static void expect_shard(const struct dt_rt_tensor *t, const int64_t *rows,
			 int nrows, const int64_t *cols, int ncols, int64_t gcols)
{
	assert_int_equal(t->rank, 2);
	assert_int_equal(t->shape[0], nrows);
	assert_int_equal(t->shape[1], ncols);
	for (int i = 0; i < nrows; i++)
		for (int j = 0; j < ncols; j++)
			assert_true(rt_at(t, i * ncols + j) ==
				    dt_input_value(SEED, "x", rows[i] * gcols + cols[j],
						   DT_FLOAT32, 2));
}

struct shard_case {
	const char *mesh, *placements; /* placements attribute + extras */
	int64_t grows, gcols;
	int nranks;
	/* per rank: its rows (-1 ends) and its column range */
	int64_t rows[8][16];
	int64_t col0[8], ncols[8];
	/* ranks in the order whose concatenation along dim 0 gives all rows
	 * (-1: not part of it, a replica) */
	int concat[8];
};

static const struct shard_case cases[] = {
	/* (2,2) S(0) S(1), 5x6: rows chunk 3,2; cols 3,3 */
	{"<mesh name=\"m\" shape=\"2 2\" dims=\"a b\"/>", "placements=\"S(0) S(1)\" global-shape=\"5 6\"",
	 5, 6, 4,
	 {{0, 1, 2, -1}, {0, 1, 2, -1}, {3, 4, -1}, {3, 4, -1}},
	 {0, 3, 0, 3}, {3, 3, 3, 3}, {-1}},
	/* (2,2) S(0) S(0), 13 rows: nested chunks 7 -> 4,3 and 6 -> 3,3 */
	{"<mesh name=\"m\" shape=\"2 2\" dims=\"a b\"/>", "placements=\"S(0) S(0)\" global-shape=\"13 2\"",
	 13, 2, 4,
	 {{0, 1, 2, 3, -1}, {4, 5, 6, -1}, {7, 8, 9, -1}, {10, 11, 12, -1}},
	 {0, 0, 0, 0}, {2, 2, 2, 2}, {0, 1, 2, 3}},
	/* (2,2) S(0) S(0) with order b before a: rank (i,j) holds chunk 2j+i */
	{"<mesh name=\"m\" shape=\"2 2\" dims=\"a b\"/>",
	 "placements=\"S(0) S(0)\" order=\"0:b,a\" global-shape=\"8 3\"",
	 8, 3, 4,
	 {{0, 1, -1}, {4, 5, -1}, {2, 3, -1}, {6, 7, -1}},
	 {0, 0, 0, 0}, {3, 3, 3, 3}, {0, 2, 1, 3}},
	/* (4,2) _S(0,2) S(0) = S(0) S(0) ordered 1,0: rank (i,j) chunk 4j+i */
	{"<mesh name=\"m\" shape=\"4 2\" dims=\"a b\"/>", "placements=\"_S(0,2) S(0)\" global-shape=\"16 2\"",
	 16, 2, 8,
	 {{0, 1, -1}, {8, 9, -1}, {2, 3, -1}, {10, 11, -1},
	  {4, 5, -1}, {12, 13, -1}, {6, 7, -1}, {14, 15, -1}},
	 {0}, {2, 2, 2, 2, 2, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}},
	/* the same local data from S(0) S(0) with order="0:b,a" */
	{"<mesh name=\"m\" shape=\"4 2\" dims=\"a b\"/>",
	 "placements=\"S(0) S(0)\" order=\"0:b,a\" global-shape=\"16 2\"",
	 16, 2, 8,
	 {{0, 1, -1}, {8, 9, -1}, {2, 3, -1}, {10, 11, -1},
	  {4, 5, -1}, {12, 13, -1}, {6, 7, -1}, {14, 15, -1}},
	 {0}, {2, 2, 2, 2, 2, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7}},
	/* (4,2) _S(0,2) R, 9 rows: [0,1,5] [2,3,6] [4,7] [8] (semantics §2) */
	{"<mesh name=\"m\" shape=\"4 2\" dims=\"a b\"/>", "placements=\"_S(0,2) R\" global-shape=\"9 1\"",
	 9, 1, 8,
	 {{0, 1, 5, -1}, {0, 1, 5, -1}, {2, 3, 6, -1}, {2, 3, 6, -1},
	  {4, 7, -1}, {4, 7, -1}, {8, -1}, {8, -1}},
	 {0}, {1, 1, 1, 1, 1, 1, 1, 1}, {-1}},
	/* (4,2) R S(1) uneven, 9 columns on b: 5,4; rows replicated */
	{"<mesh name=\"m\" shape=\"4 2\" dims=\"a b\"/>", "placements=\"R S(1)\" global-shape=\"2 9\"",
	 2, 9, 8,
	 {{0, 1, -1}, {0, 1, -1}, {0, 1, -1}, {0, 1, -1},
	  {0, 1, -1}, {0, 1, -1}, {0, 1, -1}, {0, 1, -1}},
	 {0, 5, 0, 5, 0, 5, 0, 5}, {5, 4, 5, 4, 5, 4, 5, 4}, {-1}},
	/* (4,2) S(0) R without global-shape: even, derived from 2 local rows */
	{"<mesh name=\"m\" shape=\"4 2\" dims=\"a b\"/>", "placements=\"S(0) R\"",
	 8, 3, 8,
	 {{0, 1, -1}, {0, 1, -1}, {2, 3, -1}, {2, 3, -1},
	  {4, 5, -1}, {4, 5, -1}, {6, 7, -1}, {6, 7, -1}},
	 {0}, {3, 3, 3, 3, 3, 3, 3, 3}, {0, 2, 4, 6, -1}},
};

static void test_shards(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct shard_case *sc = &cases[k];
		int64_t next_row = 0;
		for (int pass = 0; pass < 2; pass++) {
			for (int q = 0; q < sc->nranks; q++) {
				int rank = pass == 0 ? q : sc->concat[q];
				if (pass == 1 && (sc->concat[0] < 0 || rank < 0))
					break;
				int nrows = 0;
				while (nrows < 16 && sc->rows[rank][nrows] >= 0)
					nrows++;
				if (pass == 1) { /* concatenation gives rows 0.. in order */
					for (int i = 0; i < nrows; i++)
						assert_int_equal(sc->rows[rank][i], next_row++);
					continue;
				}
				struct rt_diag r;
				rt_diag_init(&r);
				struct dt_backend *b = rt_backend(&r);
				char tensor[128], sharding[256];
				snprintf(tensor, sizeof(tensor),
					 "<tensor dtype=\"float32\" shape=\"%d %lld\" stride=\"%lld 1\"/>",
					 nrows, (long long)sc->ncols[rank], (long long)sc->ncols[rank]);
				snprintf(sharding, sizeof(sharding), "<sharding mesh=\"m\" %s/>",
					 sc->placements);
				struct dt_module *m;
				struct dt_rt_tensor t;
				if (materialize(&r, sc->mesh, tensor, sharding, rank, b, &m, &t) != DT_OK)
					fail_msg("case %zu rank %d: %s", k, rank, r.last);
				int64_t cols[16];
				for (int j = 0; j < sc->ncols[rank]; j++)
					cols[j] = sc->col0[rank] + j;
				expect_shard(&t, sc->rows[rank], nrows, cols, (int)sc->ncols[rank],
					     sc->gcols);
				dt_buffer_release(b, t.buf);
				b->ops->destroy(b);
				dt_module_destroy(m);
			}
		}
		if (sc->concat[0] >= 0)
			assert_int_equal(next_row, sc->grows);
	}
}

/* ---- Partial ---- */

/* Every rank's [4, 3] tensor for placements `pl` on mesh (n0, n1). */
static void partial_values(const char *pl, int n0, int n1, double v[8][12])
{
	char mesh[128], sharding[128];
	snprintf(mesh, sizeof(mesh), "<mesh name=\"m\" shape=\"%d %d\" dims=\"a b\"/>", n0, n1);
	snprintf(sharding, sizeof(sharding), "<sharding mesh=\"m\" placements=\"%s\"/>", pl);
	for (int rank = 0; rank < n0 * n1; rank++) {
		struct rt_diag r;
		rt_diag_init(&r);
		struct dt_backend *b = rt_backend(&r);
		struct dt_module *m;
		struct dt_rt_tensor t;
		if (materialize(&r, mesh, "<tensor dtype=\"float32\" shape=\"4 3\" stride=\"3 1\"/>",
				sharding, rank, b, &m, &t) != DT_OK)
			fail_msg("%s rank %d: %s", pl, rank, r.last);
		for (int i = 0; i < 12; i++)
			v[rank][i] = rt_at(&t, i);
		dt_buffer_release(b, t.buf);
		b->ops->destroy(b);
		dt_module_destroy(m);
	}
}

static double global_x(int i)
{
	return dt_input_value(SEED, "x", i, DT_FLOAT32, 2);
}

static void test_partial_sum_avg(void **state)
{
	(void)state;
	double v[8][12];
	partial_values("P(sum) R", 2, 2, v);
	int nonzero = 0;
	for (int i = 0; i < 12; i++) {
		for (int j = 0; j < 2; j++) /* reduce over mesh dim a: ranks j, 2+j */
			assert_true(v[j][i] + v[2 + j][i] == global_x(i));
		assert_true(v[0][i] == v[1][i]); /* replicated over b */
		nonzero += v[0][i] != 0;
	}
	assert_true(nonzero > 0); /* a real split, not (0, v) */

	partial_values("P(sum) P(sum)", 4, 2, v);
	for (int i = 0; i < 12; i++) {
		double s = 0;
		for (int rank = 0; rank < 8; rank++)
			s += v[rank][i];
		assert_true(s == global_x(i));
	}

	partial_values("R P(avg)", 4, 2, v);
	for (int i = 0; i < 12; i++)
		for (int a = 0; a < 4; a++)
			assert_true((v[2 * a][i] + v[2 * a + 1][i]) / 2 == global_x(i));

	/* sum over a of the avg over b */
	partial_values("P(sum) P(avg)", 4, 2, v);
	for (int i = 0; i < 12; i++) {
		double s = 0;
		for (int a = 0; a < 4; a++)
			s += (v[2 * a][i] + v[2 * a + 1][i]) / 2;
		assert_true(s == global_x(i));
		/* and the avg over b of the sums over a */
		double t = 0;
		for (int bb = 0; bb < 2; bb++) {
			double col = 0;
			for (int a = 0; a < 4; a++)
				col += v[2 * a + bb][i];
			t += col / 2;
		}
		assert_true(t == global_x(i));
	}
}

static void test_partial_max_min(void **state)
{
	(void)state;
	double v[8][12];
	partial_values("P(max) R", 2, 2, v);
	for (int i = 0; i < 12; i++) {
		for (int j = 0; j < 2; j++) {
			assert_true(fmax(v[j][i], v[2 + j][i]) == global_x(i));
			assert_true(v[j][i] != v[2 + j][i]); /* one holder, one below */
		}
	}
	partial_values("R P(min)", 2, 2, v);
	for (int i = 0; i < 12; i++)
		for (int a = 0; a < 2; a++)
			assert_true(fmin(v[2 * a][i], v[2 * a + 1][i]) == global_x(i));
	partial_values("P(max) P(max)", 4, 2, v);
	for (int i = 0; i < 12; i++) {
		double mx = -INFINITY;
		int holders = 0;
		for (int rank = 0; rank < 8; rank++) {
			mx = fmax(mx, v[rank][i]);
			holders += v[rank][i] == global_x(i);
		}
		assert_true(mx == global_x(i));
		assert_true(holders < 8);
	}
}

static void test_per_rank_and_global(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct dt_backend *b = rt_backend(&r);
	struct dt_module *m;
	struct dt_rt_tensor t;
	/* no sharding: per rank, name "x@3"; strided storage with an offset */
	assert_int_equal(materialize(&r, "", "<tensor dtype=\"bfloat16\" shape=\"2 3\" stride=\"1 2\" offset=\"1\"/>",
				     "", 3, b, &m, &t), DT_OK);
	assert_int_equal(t.offset, 1);
	assert_int_equal(t.buf->bytes, (1 + 1 + 2 * 2 + 1) * 2);
	for (int i = 0; i < 6; i++)
		assert_true(rt_at(&t, i) == dt_input_value(SEED, "x@3", i, DT_BFLOAT16, 2));
	dt_buffer_release(b, t.buf);
	dt_module_destroy(m);

	/* global view: the full tensor under the plain name, any rank */
	m = rt_load(&r, RT_GRAPH("global",
		"<mesh name=\"m\" shape=\"2\" dims=\"a\"/>"
		"<node name=\"x\" op=\"placeholder\"><tensor dtype=\"int64\" shape=\"5\" stride=\"1\"/>"
		"<sharding mesh=\"m\" placements=\"P(sum)\"/><meta key=\"dtopt.input_max\" value=\"9\"/></node>"
		"<node name=\"output\" op=\"output\"><arg nodes=\"x\"/></node>"));
	assert_int_equal(dt_input_max(m, rt_node(m, "x")), 9);
	assert_int_equal(dt_materialize_input(m, rt_node(m, "x"), 1, SEED, b, &t), DT_OK);
	for (int i = 0; i < 5; i++)
		assert_true(rt_at(&t, i) == dt_input_value(SEED, "x", i, DT_INT64, 9));
	dt_buffer_release(b, t.buf);
	dt_module_destroy(m);
	b->ops->destroy(b);
}

static void test_errors(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct dt_backend *b = rt_backend(&r);
	struct dt_module *m;
	struct dt_rt_tensor t;
	const char *mesh = "<mesh name=\"m\" shape=\"2 2\" dims=\"a b\"/>";
	/* local rows differ from the shard's (the graph is rank 0's) */
	assert_int_equal(materialize_as(&r, mesh, "<tensor dtype=\"float32\" shape=\"3 2\" stride=\"2 1\"/>",
					"<sharding mesh=\"m\" placements=\"S(0) R\" global-shape=\"5 2\"/>",
					0, 2, b, &m, &t), DT_ERUNTIME);
	assert_string_equal(r.last, "t.xml:3: error: node 'x' (placeholder): dim 0 holds 3 elements, but the shard of global size 5 on this rank has 2");
	assert_null(t.buf);
	dt_module_destroy(m);
	assert_int_equal(materialize_as(&r, mesh, "<tensor dtype=\"float32\" shape=\"3 2\" stride=\"2 1\"/>",
					"<sharding mesh=\"m\" placements=\"R R\"/>", 0, 4, b, &m, &t),
			 DT_ERUNTIME);
	assert_string_equal(r.last, "t.xml:3: error: node 'x' (placeholder): rank 4 is not in mesh 'm'");
	dt_module_destroy(m);
	b->ops->destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formula),
		cmocka_unit_test_setup_teardown(test_shards, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_partial_sum_avg, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_partial_max_min, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_per_rank_and_global, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_errors, rt_setup, rt_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
