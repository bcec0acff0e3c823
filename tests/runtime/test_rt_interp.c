// SPDX-License-Identifier: MIT
/* test_rt_interp.c: the interpreter: views share their input's storage
 * (no allocation), buffers die after their last reader (peak bytes),
 * reshape views or copies, outputs match the input formula, one-rank
 * collectives, global-view graphs, every op of the table in one graph,
 * dropout's semantics, iterations, the summary table, Chrome traces with
 * per-rank files and their merge, and errors at the failing node. */
#include "rt_test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#define SEED 5

struct run {
	struct rt_diag r;
	struct dt_module *m;
	struct dt_backend *b;
	struct dt_run_result res;
	int rc;
};

/* Load `xml` and run it with `opt` (NULL: one iteration). */
static void run_graph(struct run *u, const char *xml, const struct dt_run_options *opt)
{
	struct dt_run_options dflt = {.seed = SEED, .iters = 1};
	rt_diag_init(&u->r);
	u->m = rt_load(&u->r, xml);
	u->b = rt_backend(&u->r);
	u->rc = dt_interpret(u->m, u->b, opt ? opt : &dflt, &u->res);
}

static void run_fini(struct run *u)
{
	dt_run_result_fini(&u->res);
	u->b->ops->destroy(u->b); /* asserts every buffer came back */
	dt_module_destroy(u->m);
}

static long allocations(struct dt_backend *b)
{
	return rt_counting_of(b)->total;
}

static double x_at(const char *name, int64_t i)
{
	return dt_input_value(SEED, name, i, DT_FLOAT32, 2);
}

#define PH(name, shape, stride)                                            \
	"<node name=\"" name "\" op=\"placeholder\"><tensor dtype=\"float32\" shape=\"" \
	shape "\" stride=\"" stride "\"/></node>\n"
#define CALL(name, target, args)                                           \
	"<node name=\"" name "\" op=\"call_function\" target=\"" target   \
	"\">" args "</node>\n"
#define OUT(nodes) "<node name=\"output\" op=\"output\"><arg nodes=\"" nodes "\"/></node>\n"

static void test_views_share(void **state)
{
	(void)state;
	struct run u;
	/* split, getitem, transpose pairs, unsqueeze, expand: no new buffer */
	run_graph(&u, RT_GRAPH("local", PH("x", "4 8", "8 1")
		CALL("sp", "aten.split.Tensor", "<arg node=\"x\"/><arg int=\"2\"/>")
		CALL("g1", "operator.getitem", "<arg node=\"sp\"/><arg int=\"1\"/>")
		CALL("t1", "aten.t.default", "<arg node=\"g1\"/>")
		CALL("t2", "aten.t.default", "<arg node=\"t1\"/>")
		CALL("u", "aten.unsqueeze.default", "<arg node=\"t2\"/><arg int=\"0\"/>")
		CALL("e", "aten.expand.default", "<arg node=\"u\"/><arg ints=\"1 2 8\"/>")
		CALL("r", "aten.reshape.default", "<arg node=\"e\"/><arg ints=\"16\"/>")
		OUT("r g1")), NULL);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(allocations(u.b), 1); /* the input only */
	assert_int_equal(u.res.peak_bytes, 4 * 8 * 4);
	assert_int_equal(u.res.noutputs, 2);
	for (int i = 0; i < 16; i++) {
		assert_true(rt_at(&u.res.outputs[0], i) == x_at("x@0", 16 + i));
		assert_true(rt_at(&u.res.outputs[1], i) == x_at("x@0", 16 + i));
	}
	run_fini(&u);
}

static void test_buffers_freed(void **state)
{
	(void)state;
	struct run u;
	/* ten negations of 1 KiB: the input and two live values at most */
	run_graph(&u, RT_GRAPH("local", PH("x", "256", "1")
		CALL("n1", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("n2", "aten.neg.default", "<arg node=\"n1\"/>")
		CALL("n3", "aten.neg.default", "<arg node=\"n2\"/>")
		CALL("n4", "aten.neg.default", "<arg node=\"n3\"/>")
		CALL("n5", "aten.neg.default", "<arg node=\"n4\"/>")
		CALL("n6", "aten.neg.default", "<arg node=\"n5\"/>")
		CALL("n7", "aten.neg.default", "<arg node=\"n6\"/>")
		CALL("n8", "aten.neg.default", "<arg node=\"n7\"/>")
		CALL("n9", "aten.neg.default", "<arg node=\"n8\"/>")
		CALL("n10", "aten.neg.default", "<arg node=\"n9\"/>")
		OUT("n10")), NULL);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(allocations(u.b), 11);
	assert_int_equal(u.res.peak_bytes, 3 * 1024); /* not 11 KiB */
	for (int i = 0; i < 256; i++)
		assert_true(rt_at(&u.res.outputs[0], i) == x_at("x@0", i));
	run_fini(&u);

	/* a value read late stays alive until then */
	run_graph(&u, RT_GRAPH("local", PH("x", "256", "1")
		CALL("a", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("b", "aten.neg.default", "<arg node=\"a\"/>")
		CALL("c", "aten.neg.default", "<arg node=\"b\"/>")
		CALL("d", "aten.add.Tensor", "<arg node=\"c\"/><arg node=\"a\"/>")
		OUT("d")), NULL);
	assert_int_equal(u.res.peak_bytes, 4 * 1024); /* x, a, b, c */
	for (int i = 0; i < 256; i++)
		assert_true(rt_at(&u.res.outputs[0], i) == -2 * x_at("x@0", i));
	run_fini(&u);
}

/* Producers write into the cat that reads them (place.c): through a
 * reshape, directly, an input once for the run, nested cats; copied: a
 * placeholder read elsewhere, a value with another reader, one listed
 * twice, a cat on dim 1 of [4, 8]s. */
static void test_cat_in_place(void **state)
{
	(void)state;
	struct run u;
	run_graph(&u, RT_GRAPH("local", PH("x", "4 8", "8 1") PH("y", "32", "1")
		CALL("a", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("fa", "aten.reshape.default", "<arg node=\"a\"/><arg ints=\"32\"/>")
		CALL("b", "aten.neg.default", "<arg node=\"y\"/>")
		CALL("d", "aten.exp.default", "<arg node=\"y\"/>")
		CALL("e", "aten.add.Tensor", "<arg node=\"y\"/><arg node=\"y\"/>")
		CALL("c", "aten.cat.default", "<arg nodes=\"fa b e y d d\"/>")
		OUT("c e")), NULL);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(allocations(u.b), 5); /* x, y, d, e, c: a and b in c */
	assert_int_equal(u.res.peak_bytes, (32 + 32 + 32 + 32 + 192) * 4);
	for (int i = 0; i < 32; i++) {
		const struct dt_rt_tensor *c = &u.res.outputs[0];
		double y = x_at("y@0", i), ey = (double)expf((float)y);
		assert_true(rt_at(c, i) == -x_at("x@0", i));
		assert_true(rt_at(c, 32 + i) == -y);
		assert_true(rt_at(c, 64 + i) == 2 * y);
		assert_true(rt_at(c, 96 + i) == y);
		assert_true(rt_at(c, 128 + i) == ey && rt_at(c, 160 + i) == ey);
	}
	run_fini(&u);

	/* an input read only by the cat goes into a buffer the cat keeps for
	 * the run: every iteration writes only a into it */
	struct dt_run_options three = {.seed = SEED, .iters = 3};
	run_graph(&u, RT_GRAPH("local", PH("x", "64", "1") PH("z", "64", "1")
		CALL("a", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("c", "aten.cat.default", "<arg nodes=\"a z\"/>")
		OUT("c")), &three);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(allocations(u.b), 3); /* x, z's own, c's kept */
	assert_int_equal(u.res.memory_bytes, (64 + 128) * 4);
	for (int i = 0; i < 64; i++) {
		assert_true(rt_at(&u.res.outputs[0], i) == -x_at("x@0", i));
		assert_true(rt_at(&u.res.outputs[0], 64 + i) == x_at("z@0", i));
	}
	run_fini(&u);

	run_graph(&u, RT_GRAPH("local", PH("x", "4 8", "8 1")
		CALL("p", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("q", "aten.exp.default", "<arg node=\"x\"/>")
		CALL("i1", "aten.cat.default", "<arg nodes=\"p q\"/>")
		CALL("r", "aten.abs.default", "<arg node=\"x\"/>")
		CALL("s", "aten.neg.default", "<arg node=\"r\"/>")
		CALL("i2", "aten.cat.default", "<arg nodes=\"r s\"/><arg int=\"1\"/>")
		CALL("f2", "aten.reshape.default", "<arg node=\"i2\"/><arg ints=\"8 8\"/>")
		CALL("o", "aten.cat.default", "<arg nodes=\"i1 f2\"/>")
		OUT("o")), NULL);
	assert_int_equal(u.rc, DT_OK);
	/* x, r, s (i2 cats on dim 1 of [4, 8]s: copies), o; p, q, i1, i2
	 * in o */
	assert_int_equal(allocations(u.b), 4);
	for (int i = 0; i < 32; i++) {
		const struct dt_rt_tensor *o = &u.res.outputs[0];
		double v = x_at("x@0", i);
		int row = i / 8, col = i % 8;
		assert_true(rt_at(o, i) == -v);
		assert_true(rt_at(o, 32 + i) == (double)expf((float)v));
		assert_true(rt_at(o, 64 + row * 16 + col) == fabs(v));
		assert_true(rt_at(o, 64 + row * 16 + 8 + col) == -fabs(v));
	}
	run_fini(&u);
}

/* A cat marked dtopt.copy_inputs="true" (bucket-collectives under a
 * budget) takes no producer: a and b get buffers of their own and c
 * copies them, the same values; any other value places as usual. */
static void test_cat_copy_inputs(void **state)
{
	(void)state;
	struct run u;
	const char *values[2] = {"true", "false"};
	for (int k = 0; k < 2; k++) {
		char graph[2048];
		snprintf(graph, sizeof graph, RT_GRAPH("local", PH("x", "16", "1")
			CALL("a", "aten.neg.default", "<arg node=\"x\"/>")
			CALL("b", "aten.exp.default", "<arg node=\"x\"/>")
			CALL("c", "aten.cat.default", "<arg nodes=\"a b\"/>"
			     "<meta key=\"dtopt.copy_inputs\" value=\"%s\"/>")
			OUT("c")), values[k]);
		run_graph(&u, graph, NULL);
		assert_int_equal(u.rc, DT_OK);
		/* x, a, b, c copied; x, c placed */
		assert_int_equal(allocations(u.b), k == 0 ? 4 : 2);
		for (int i = 0; i < 16; i++) {
			double x = x_at("x@0", i);
			assert_true(rt_at(&u.res.outputs[0], i) == -x);
			assert_true(rt_at(&u.res.outputs[0], 16 + i) ==
				    (double)expf((float)x));
		}
		run_fini(&u);
	}
}

static void test_reshape_copy(void **state)
{
	(void)state;
	struct run u;
	/* reshape of a transposed tensor copies in row-major order */
	run_graph(&u, RT_GRAPH("local", PH("x", "4 6", "6 1")
		CALL("t", "aten.t.default", "<arg node=\"x\"/>")
		CALL("r", "aten.reshape.default", "<arg node=\"t\"/><arg ints=\"24\"/>")
		CALL("v", "aten._unsafe_view.default", "<arg node=\"x\"/><arg ints=\"3 8\"/>")
		CALL("c", "aten.contiguous.default", "<arg node=\"v\"/>")
		OUT("r c")), NULL);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(allocations(u.b), 2); /* x and the copy */
	for (int j = 0; j < 6; j++)
		for (int i = 0; i < 4; i++)
			assert_true(rt_at(&u.res.outputs[0], j * 4 + i) == x_at("x@0", i * 6 + j));
	for (int i = 0; i < 24; i++)
		assert_true(rt_at(&u.res.outputs[1], i) == x_at("x@0", i));
	run_fini(&u);
}

static void test_outputs(void **state)
{
	(void)state;
	struct run u;
	run_graph(&u, RT_GRAPH("local", PH("a", "2 3", "3 1") PH("b", "3 2", "2 1")
		CALL("mm", "aten.mm.default", "<arg node=\"a\"/><arg node=\"b\"/>")
		CALL("s", "aten.sum.default", "<arg node=\"mm\"/>")
		OUT("mm s")), NULL);
	assert_int_equal(u.rc, DT_OK);
	double total = 0;
	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < 2; j++) {
			double want = 0;
			for (int k = 0; k < 3; k++)
				want += x_at("a@0", i * 3 + k) * x_at("b@0", k * 2 + j);
			assert_true(rt_at(&u.res.outputs[0], i * 2 + j) == want);
			total += want;
		}
	}
	assert_int_equal(u.res.outputs[1].rank, 0);
	assert_true(rt_at(&u.res.outputs[1], 0) == total);
	run_fini(&u);
}

#define MESH1 "<mesh name=\"m\" shape=\"1 2\" dims=\"a b\"/><group name=\"ga\" mesh=\"m\" dims=\"a\"/>" \
	"<group name=\"gb\" mesh=\"m\" dims=\"b\"/>\n"

static void test_collectives(void **state)
{
	(void)state;
	struct run u;
	/* groups of one rank: identities; a transposed input is staged */
	run_graph(&u, "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" view=\"local\" rank=\"0\">\n"
		MESH1 PH("x", "3 2", "2 1")
		CALL("t", "aten.t.default", "<arg node=\"x\"/>")
		CALL("ar", "_c10d_functional.all_reduce.default", "<arg node=\"t\"/><arg str=\"sum\"/><arg str=\"ga\"/>")
		CALL("w", "_c10d_functional.wait_tensor.default", "<arg node=\"ar\"/>")
		CALL("ag", "_c10d_functional.all_gather_into_tensor.default", "<arg node=\"w\"/><arg int=\"1\"/><arg str=\"ga\"/>")
		CALL("w2", "_c10d_functional.wait_tensor.default", "<arg node=\"ag\"/>")
		OUT("w2") "</dtopt-graph>\n", NULL);
	assert_int_equal(u.rc, DT_OK);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			assert_true(rt_at(&u.res.outputs[0], i * 3 + j) == x_at("x@0", j * 2 + i));
	/* x, staged t (ar reduces into it), ag */
	assert_int_equal(allocations(u.b), 3);
	run_fini(&u);

	run_graph(&u, "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" view=\"local\" rank=\"0\">\n"
		MESH1 PH("x", "3 2", "2 1")
		CALL("ag", "_c10d_functional.all_gather_into_tensor.default", "<arg node=\"x\"/><arg int=\"2\"/><arg str=\"gb\"/>")
		CALL("w", "_c10d_functional.wait_tensor.default", "<arg node=\"ag\"/>")
		OUT("w") "</dtopt-graph>\n", NULL);
	assert_int_equal(u.rc, DT_ERUNTIME);
	assert_string_equal(u.r.last, "t.xml:5: error: node 'ag' (_c10d_functional.all_gather_into_tensor.default): the single-process CPU backend runs collectives only on groups of size 1, this one has 2 ranks (use the MPI backend)");
	assert_int_equal(u.res.noutputs, 0);
	run_fini(&u);
}

/* A one-rank graph over MESH1: x of `shape`, a = -x, then `body`, whose
 * output is o; run, with its memory at peak in *peak. The value of o at
 * flat index i. */
#define NEG_X(shape, strides, body)                                           \
	"<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" "     \
	"view=\"local\" rank=\"0\">\n" MESH1 PH("x", shape, strides)           \
	CALL("a", "aten.neg.default", "<arg node=\"x\"/>") body OUT("o")       \
	"</dtopt-graph>\n"
#define ALL_REDUCE(of)                                                        \
	CALL("ar", "_c10d_functional.all_reduce.default",                     \
	     "<arg node=\"" of "\"/><arg str=\"sum\"/><arg str=\"ga\"/>")      \
	CALL("w", "_c10d_functional.wait_tensor.default", "<arg node=\"ar\"/>")

static double in_place_run(const char *graph, size_t *peak, int64_t i)
{
	struct run u;
	run_graph(&u, graph, NULL);
	assert_int_equal(u.rc, DT_OK);
	*peak = u.res.memory_bytes;
	double o = rt_at(&u.res.outputs[0], i);
	run_fini(&u);
	return o;
}

/* An all_reduce that is its input's last reader, on a buffer nothing
 * else holds, reduces into it, and one that stages a non-contiguous input
 * into the copy: its result holds no buffer of its own. Read after it
 * (directly or through a view), the input keeps its buffer and the
 * result gets one. (Groups of one rank reduce to the identity: what
 * tells the cases apart is the memory.) */
static void test_all_reduce_in_place(void **state)
{
	(void)state;
	size_t peak;
	double o = in_place_run(NEG_X("16384", "1", ALL_REDUCE("a")
		CALL("o", "aten.view.default", "<arg node=\"w\"/><arg ints=\"128 128\"/>")),
		&peak, 5);
	assert_int_equal(peak, 2 * 65536); /* x, a (= w, o) */
	assert_true(o == -x_at("x@0", 5));
	o = in_place_run(NEG_X("16384", "1", ALL_REDUCE("a")
		CALL("o", "aten.add.Tensor", "<arg node=\"w\"/><arg node=\"a\"/>")),
		&peak, 5);
	assert_int_equal(peak, 4 * 65536); /* x, a, w and o at o */
	assert_true(o == -2 * x_at("x@0", 5));
	/* a view of a read after ar holds a's buffer */
	in_place_run(NEG_X("16384", "1",
		CALL("v", "aten.view.default", "<arg node=\"a\"/><arg ints=\"128 128\"/>")
		ALL_REDUCE("a")
		CALL("f", "aten.view.default", "<arg node=\"v\"/><arg ints=\"16384\"/>")
		CALL("o", "aten.add.Tensor", "<arg node=\"w\"/><arg node=\"f\"/>")),
		&peak, 0);
	assert_int_equal(peak, 4 * 65536);
	/* a non-contiguous input: ar reduces into the copy it stages, a left
	 * as it was (x, a, the copy at ar) */
	o = in_place_run(NEG_X("128 128", "128 1",
		CALL("t", "aten.t.default", "<arg node=\"a\"/>") ALL_REDUCE("t")
		CALL("o", "aten.view.default", "<arg node=\"w\"/><arg ints=\"16384\"/>")),
		&peak, 1);
	assert_int_equal(peak, 3 * 65536);
	assert_true(o == -x_at("x@0", 128));
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = test_malloc((size_t)n + 1);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = 0;
	fclose(f);
	return s;
}

static void test_global_view(void **state)
{
	(void)state;
	struct run u;
	char *xml = read_text(RT_SOURCE_DIR "/../../tools/examples/mlp_fwdbwd.xml");
	run_graph(&u, xml, NULL);
	assert_int_equal(u.rc, DT_OK);
	assert_true(u.res.noutputs > 0);
	/* the inputs are the full global tensors (plain names) */
	run_fini(&u);
	rt_diag_init(&u.r);
	u.m = rt_load(&u.r, xml);
	u.b = rt_backend(&u.r);
	u.b->world_size = 4;
	struct dt_run_options opt = {.iters = 1};
	assert_int_equal(dt_interpret(u.m, u.b, &opt, &u.res), DT_ERUNTIME);
	assert_non_null(strstr(u.r.last, "a global-view graph runs only on one process (got 4)"));
	run_fini(&u);
	test_free(xml);

	/* dtensor.redistribute is the identity on one process (a view) */
	run_graph(&u, RT_GRAPH("global", "<mesh name=\"m\" shape=\"2\" dims=\"a\"/>\n"
		"<node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" shape=\"4 2\" stride=\"2 1\"/>"
		"<sharding mesh=\"m\" placements=\"S(0)\"/></node>\n"
		"<node name=\"r\" op=\"call_function\" target=\"dtensor.redistribute\"><arg node=\"x\"/>"
		"<sharding mesh=\"m\" placements=\"R\"/></node>\n"
		CALL("n", "aten.neg.default", "<arg node=\"r\"/>") OUT("n")), NULL);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(allocations(u.b), 2); /* x and n */
	for (int i = 0; i < 8; i++)
		assert_true(rt_at(&u.res.outputs[0], i) == -x_at("x", i));
	run_fini(&u);
}

/* Every op with a CPU kernel occurs in ops_all.xml, which runs. */
static void test_ops_all(void **state)
{
	(void)state;
	struct run u;
	char *xml = read_text(RT_SOURCE_DIR "/ops_all.xml");
	run_graph(&u, xml, NULL);
	if (u.rc != DT_OK)
		fail_msg("%s", u.r.last);
	bool seen[DT_NOPS] = {false};
	dt_foreach_node(u.m, id)
		seen[dt_node_get(u.m, id)->op] = true;
	/* redistribute: global view only; dt.*: test_local_shard and the
	 * lowering tests (tests/lower) */
	for (int op = 1; op < DT_NOPS; op++)
		if (dt_cpu_has_kernel((enum dt_op)op) && !seen[op] &&
		    op != DT_OP_REDISTRIBUTE && !dt_op_is_spmd((enum dt_op)op))
			fail_msg("ops_all.xml lacks %s", dt_op_get((enum dt_op)op)->target);
	run_fini(&u);
	test_free(xml);
}

/* dt.local_shard of 13 rows on a mesh of 4 (R -> S(0)): on each rank of
 * an SPMD graph the rank's rows padded with zeros to 4 (the kernel reads
 * the backend's rank); in a per-rank graph (rank="3") exactly that rank's
 * row. */
#define LOCAL_SHARD_GRAPH(rank_attr, out_shape)                               \
	"<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1.1\" name=\"t\" "   \
	"view=\"local\"" rank_attr ">\n"                                        \
	"<mesh name=\"world\" shape=\"4\" dims=\"w\"/>\n"                        \
	"<node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" "        \
	"shape=\"13 6\"/><sharding mesh=\"world\" placements=\"R\" "           \
	"global-shape=\"13 6\"/></node>\n"                                      \
	CALL("y", "dt.local_shard", "<arg node=\"x\"/><arg str=\"world\"/>"     \
	     "<arg str=\"R\"/><arg str=\"S(0)\"/><arg ints=\"13 6\"/>"           \
	     "<tensor dtype=\"float32\" shape=\"" out_shape "\"/>")              \
	OUT("y") "</dtopt-graph>\n"

static void run_on_rank(struct run *u, const char *xml, int rank)
{
	struct dt_run_options opt = {.seed = SEED, .iters = 1};
	rt_diag_init(&u->r);
	u->m = rt_load(&u->r, xml);
	u->b = rt_backend(&u->r);
	u->b->rank = rank;
	u->rc = dt_interpret(u->m, u->b, &opt, &u->res);
	if (u->rc != DT_OK)
		fail_msg("%s", u->r.last);
}

static void test_local_shard(void **state)
{
	(void)state;
	struct run u;
	for (int rank = 0; rank < 4; rank++) {
		run_on_rank(&u, LOCAL_SHARD_GRAPH("", "4 6"), rank);
		int64_t rows = rank < 3 ? 4 : 1;
		for (int64_t i = 0; i < 24; i++)
			assert_true(rt_at(&u.res.outputs[0], i) ==
				    (i / 6 < rows ? x_at("x", rank * 24 + i) : 0));
		run_fini(&u);
	}
	run_on_rank(&u, LOCAL_SHARD_GRAPH(" rank=\"3\"", "1 6"), 3);
	assert_int_equal(u.res.outputs[0].shape[0], 1);
	for (int64_t i = 0; i < 6; i++)
		assert_true(rt_at(&u.res.outputs[0], i) == x_at("x", 72 + i));
	run_fini(&u);
}

/* dt.pack_pieces then dt.unpack_pieces of 12 rows on a mesh of 4: 6
 * pieces of 2 rows of _S(0,6) over 42 rows, whose rank holds 2, 2, 2, 1
 * rows of each piece. Ranks 0-2 keep the rows; rank 3 packs row 2a to a
 * (zeros after row 5) and unpacks it back to 2a (zeros between). */
static void test_pack_pieces(void **state)
{
	(void)state;
	struct run u;
	const char *xml =
		"<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1.1\" "
		"name=\"t\" view=\"local\">\n"
		"<mesh name=\"world\" shape=\"4\" dims=\"w\"/>\n"
		"<node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" "
		"shape=\"12 3\"/><sharding mesh=\"world\" placements=\"R\" "
		"global-shape=\"12 3\"/></node>\n"
		CALL("y", "dt.pack_pieces", "<arg node=\"x\"/><arg str=\"world\"/>"
		     "<arg str=\"_S(0,6)\"/><arg ints=\"42 3\"/><arg int=\"0\"/>"
		     "<arg int=\"6\"/>")
		CALL("z", "dt.unpack_pieces", "<arg node=\"y\"/><arg str=\"world\"/>"
		     "<arg str=\"_S(0,6)\"/><arg ints=\"42 3\"/><arg int=\"0\"/>"
		     "<arg int=\"6\"/>")
		OUT("y z") "</dtopt-graph>\n";
	for (int rank = 0; rank < 4; rank++) {
		run_on_rank(&u, xml, rank);
		for (int64_t i = 0; i < 36; i++) {
			int64_t row = i / 3, col = i % 3;
			double packed = rank < 3 ? x_at("x", i)
					: row < 6 ? x_at("x", 6 * row + col) : 0;
			double back = rank < 3 || row % 2 == 0 ? x_at("x", i) : 0;
			assert_true(rt_at(&u.res.outputs[0], i) == packed);
			assert_true(rt_at(&u.res.outputs[1], i) == back);
		}
		run_fini(&u);
	}
}

static void dropout(uint64_t seed, double *out, double *mask)
{
	struct run u;
	struct dt_run_options opt = {.seed = seed, .iters = 1};
	run_graph(&u, RT_GRAPH("local", PH("x", "256", "1")
		CALL("d", "aten.native_dropout.default", "<arg node=\"x\"/><arg float=\"0.5\"/><arg bool=\"true\"/>")
		CALL("o", "operator.getitem", "<arg node=\"d\"/><arg int=\"0\"/>")
		CALL("k", "operator.getitem", "<arg node=\"d\"/><arg int=\"1\"/>")
		OUT("o k")), &opt);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(u.res.outputs[1].dtype, DT_BOOL);
	for (int i = 0; i < 256; i++) {
		out[i] = rt_at(&u.res.outputs[0], i);
		mask[i] = rt_at(&u.res.outputs[1], i);
	}
	run_fini(&u);
}

static void test_dropout(void **state)
{
	(void)state;
	double o1[256], m1[256], o2[256], m2[256], o3[256], m3[256];
	dropout(1, o1, m1);
	dropout(1, o2, m2);
	dropout(2, o3, m3);
	int kept = 0, same = 0;
	for (int i = 0; i < 256; i++) {
		double x = dt_input_value(1, "x@0", i, DT_FLOAT32, 2);
		assert_true(m1[i] == 0 || m1[i] == 1);
		assert_true(o1[i] == x * m1[i] * 2);
		assert_true(o1[i] == o2[i] && m1[i] == m2[i]); /* same seed */
		kept += (int)m1[i];
		same += m1[i] == m3[i];
	}
	assert_true(kept > 96 && kept < 160);
	assert_true(same < 200);
}

static void test_iterations_summary(void **state)
{
	(void)state;
	struct run u;
	struct dt_run_options opt = {.seed = SEED, .iters = 3, .warmup = 2};
	run_graph(&u, RT_GRAPH("local", PH("x", "64", "1")
		CALL("n1", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("n2", "aten.neg.default", "<arg node=\"n1\"/>")
		CALL("t", "aten.unsqueeze.default", "<arg node=\"n2\"/><arg int=\"0\"/>")
		OUT("t")), &opt);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(u.res.iters, 3);
	assert_true(u.res.seconds_per_iter > 0);
	assert_int_equal(u.res.nstats, 4); /* placeholder, neg, unsqueeze, output */
	assert_string_equal(u.res.stats[1].target, "aten.neg.default");
	assert_int_equal(u.res.stats[1].count, 6);
	assert_int_equal(u.res.stats[1].bytes, 6 * 256);
	assert_int_equal(u.res.stats[2].bytes, 0); /* a view moves nothing */
	assert_int_equal(allocations(u.b), 1 + 5 * 2);
	FILE *f = tmpfile();
	dt_run_summary_print(&u.res, f);
	rewind(f);
	char text[4096];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = 0;
	fclose(f);
	assert_non_null(strstr(text, "aten.neg.default"));
	assert_non_null(strstr(text, "aten.unsqueeze.default"));
	assert_non_null(strstr(text, "3 iterations"));
	run_fini(&u);
}

/* Buffers of 64 KiB or more freed in one iteration serve the next
 * (allocations of the first iteration only), and the pool gives back what
 * it holds rather than let the run hold more than its accounted peak. */
static void test_buffer_pool(void **state)
{
	(void)state;
	struct run u;
	struct dt_run_options opt = {.seed = SEED, .iters = 3, .warmup = 2};
	run_graph(&u, RT_GRAPH("local", PH("x", "16384", "1")
		CALL("a", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("b", "aten.neg.default", "<arg node=\"a\"/>")
		CALL("c", "aten.neg.default", "<arg node=\"b\"/>")
		OUT("c")), &opt);
	assert_int_equal(u.rc, DT_OK);
	/* x, a, b; c reuses a's buffer, every later iteration the pool's */
	assert_int_equal(allocations(u.b), 3);
	assert_int_equal(u.res.memory_bytes, 3 * 65536);
	assert_true(rt_at(&u.res.outputs[0], 7) == -x_at("x@0", 7));
	run_fini(&u);

	/* a is pooled when b is done; c (128 KiB) would make x, a, b, c
	 * held, past the peak (x, a, b): a goes back first; in later
	 * iterations the pooled c and d give way to a and b likewise */
	run_graph(&u, RT_GRAPH("local", PH("x", "16384", "1")
		CALL("a", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("b", "aten.neg.default", "<arg node=\"a\"/>")
		CALL("c", "aten.cat.default", "<arg nodes=\"b b\"/>")
		CALL("d", "aten.neg.default", "<arg node=\"c\"/>")
		OUT("d")), &opt);
	assert_int_equal(u.rc, DT_OK);
	assert_int_equal(u.res.memory_bytes, 5 * 65536); /* x, b, c at d */
	assert_int_equal(rt_counting_of(u.b)->max_bytes, 5 * 65536);
	run_fini(&u);
}

static int count(const char *s, const char *what)
{
	int k = 0;
	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		k++;
	return k;
}

static void test_trace(void **state)
{
	(void)state;
	char dir[] = "/tmp/dtopt_rt_XXXXXX", path[256], name[256];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.json", dir);
	assert_int_equal(dt_trace_rank_path(path, 0, 1, name, sizeof(name)), (int)strlen(path));
	assert_string_equal(name, path);
	dt_trace_rank_path("a/t.json", 3, 4, name, sizeof(name));
	assert_string_equal(name, "a/t.rank3.json");
	dt_trace_rank_path("trace", 1, 2, name, sizeof(name));
	assert_string_equal(name, "trace.rank1");

	const char *xml = RT_GRAPH("local", PH("x", "64", "1")
		CALL("n1", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("n2", "aten.exp.default", "<arg node=\"n1\"/>") OUT("n2"));
	struct dt_run_options opt = {.seed = SEED, .iters = 2, .trace_path = path};
	struct run u;
	run_graph(&u, xml, &opt); /* one process: exactly `path` */
	assert_int_equal(u.rc, DT_OK);
	char *text = read_text(path);
	assert_non_null(strstr(text, "{\"traceEvents\":["));
	assert_int_equal(count(text, "\"ph\":\"X\""), 2 * 4);
	assert_non_null(strstr(text, "\"name\":\"n1\",\"cat\":\"aten.neg.default\""));
	assert_non_null(strstr(text, "\"bytes\":256}"));
	test_free(text);
	run_fini(&u);
	remove(path);

	/* two ranks write their own files; the merge joins and removes them */
	for (int rank = 0; rank < 2; rank++) {
		rt_diag_init(&u.r);
		u.m = rt_load(&u.r, xml);
		u.b = rt_backend(&u.r);
		u.b->rank = rank;
		u.b->world_size = 2;
		assert_int_equal(dt_interpret(u.m, u.b, &opt, &u.res), DT_OK);
		run_fini(&u);
	}
	dt_trace_rank_path(path, 1, 2, name, sizeof(name));
	assert_int_equal(access(name, F_OK), 0);
	assert_int_equal(access(path, F_OK), -1);
	struct rt_diag r;
	rt_diag_init(&r);
	assert_int_equal(dt_trace_merge(path, 2, &r.d), DT_OK);
	assert_int_equal(access(name, F_OK), -1);
	text = read_text(path);
	assert_int_equal(count(text, "\"ph\":\"X\""), 2 * 2 * 4);
	assert_int_equal(count(text, "\"pid\":1,"), 2 * 4 + 2);
	assert_non_null(strstr(text, "\"name\":\"rank 0\""));
	test_free(text);
	remove(path);
	rmdir(dir);
}

static void test_errors(void **state)
{
	(void)state;
	struct run u;
	/* a kernel failure names the node; every buffer still comes back */
	run_graph(&u, RT_GRAPH("local", PH("w", "2 4", "4 1")
		"<node name=\"i\" op=\"placeholder\"><tensor dtype=\"int64\" shape=\"16\" stride=\"1\"/>"
		"<meta key=\"dtopt.input_max\" value=\"50\"/></node>\n"
		CALL("n", "aten.neg.default", "<arg node=\"w\"/>")
		CALL("e", "aten.embedding.default", "<arg node=\"n\"/><arg node=\"i\"/>")
		OUT("e")), NULL);
	assert_int_equal(u.rc, DT_ERUNTIME);
	assert_non_null(strstr(u.r.last, "t.xml:6: error: node 'e' (aten.embedding.default): index "));
	assert_ptr_equal(u.b->failed_node, rt_node(u.m, "e"));
	run_fini(&u);

	/* allocation failures, for an input and for a kernel's result */
	const char *chain = RT_GRAPH("local", PH("x", "64", "1")
		CALL("n", "aten.neg.default", "<arg node=\"x\"/>")
		CALL("e", "aten.exp.default", "<arg node=\"n\"/>") OUT("e"));
	const char *want[] = {
		"t.xml:3: error: node 'x' (placeholder): cannot allocate 256 bytes",
		"t.xml:5: error: node 'e' (aten.exp.default): cannot allocate 256 bytes",
	};
	for (int k = 0; k < 2; k++) {
		rt_diag_init(&u.r);
		u.m = rt_load(&u.r, chain);
		u.b = rt_backend(&u.r);
		rt_counting_of(u.b)->fail_at = k == 0 ? 1 : 3;
		struct dt_run_options o = {.iters = 1};
		assert_int_equal(dt_interpret(u.m, u.b, &o, &u.res), DT_ERUNTIME);
		assert_string_equal(u.r.last, want[k]);
		run_fini(&u); /* nothing leaked on the way out */
	}

	/* a graph for another rank */
	run_graph(&u, "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" view=\"local\" rank=\"1\">\n"
		PH("x", "4", "1") OUT("x") "</dtopt-graph>\n", NULL);
	assert_int_equal(u.rc, DT_ERUNTIME);
	assert_non_null(strstr(u.r.last, "the graph is rank 1's"));
	run_fini(&u);

	/* no metadata: shape inference did not run */
	rt_diag_init(&u.r);
	struct dt_read_options ropt = {0};
	const char *xml = RT_GRAPH("local", PH("x", "4", "1")
		CALL("n", "aten.neg.default", "<arg node=\"x\"/>") OUT("n"));
	assert_int_equal(dt_read_memory(xml, strlen(xml), "t.xml", &ropt, &u.r.d, &u.m), DT_OK);
	u.b = rt_backend(&u.r);
	struct dt_run_options opt = {.iters = 1};
	assert_int_equal(dt_interpret(u.m, u.b, &opt, &u.res), DT_ERUNTIME);
	assert_string_equal(u.r.last, "t.xml:4: error: node 'n' (aten.neg.default): no tensor metadata (run shape-infer first)");
	run_fini(&u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_views_share, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_buffers_freed, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_reshape_copy, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_cat_in_place, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_cat_copy_inputs, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_outputs, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_collectives, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_all_reduce_in_place, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_global_view, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_ops_all, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_local_shard, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_pack_pieces, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_dropout, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_iterations_summary, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_buffer_pool, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_trace, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_errors, rt_setup, rt_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
