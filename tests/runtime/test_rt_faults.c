// SPDX-License-Identifier: MIT
/* test_rt_faults.c: what the runtime checks before running: the memory
 * plan (dt_interpret_peak) is the peak a run reaches, allocating nothing,
 * and the run tells values and collective buffers apart;
 * every failed allocation (buffers, kernel scratch) is a reported error; the collective sequence the
 * ranks agree on tells apart what would mismatch (group, reduce op, order;
 * counts within a group instance) and nothing else (names); a wait for
 * peers sleeps between tests once its spin is over, and gives up at its
 * timeout. */
#include "rt_test.h"

#define PH(name, shape, stride)                                            \
	"<node name=\"" name "\" op=\"placeholder\"><tensor dtype=\"float32\" shape=\"" \
	shape "\" stride=\"" stride "\"/></node>\n"
#define CALL(name, target, args)                                           \
	"<node name=\"" name "\" op=\"call_function\" target=\"" target   \
	"\">" args "</node>\n"
#define OUT(nodes) "<node name=\"output\" op=\"output\"><arg nodes=\"" nodes "\"/></node>\n"
#define LOCAL(body)                                                        \
	"<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" "  \
	"view=\"local\" rank=\"0\">\n<mesh name=\"m\" shape=\"1 2\" "      \
	"dims=\"a b\"/><group name=\"ga\" mesh=\"m\" dims=\"a\"/>"         \
	"<group name=\"gb\" mesh=\"m\" dims=\"b\"/>\n" body "</dtopt-graph>\n"
#define AR(name, in, op, group)                                            \
	CALL(name, "_c10d_functional.all_reduce.default", "<arg node=\"" in \
	     "\"/><arg str=\"" op "\"/><arg str=\"" group "\"/>")
#define WAIT(name, in)                                                     \
	CALL(name, "_c10d_functional.wait_tensor.default", "<arg node=\"" in "\"/>")

/* x (24 B) and its transpose staged for the all_reduce (24 B), which
 * reduces into it: 48 B at ar, 24 B of them collective buffers; then the
 * received result is a value and neg's result a third: 72 B of values at
 * n, the peak. */
static const char staged[] = LOCAL(PH("x", "3 2", "2 1")
	CALL("t", "aten.t.default", "<arg node=\"x\"/>")
	AR("ar", "t", "sum", "ga") WAIT("w", "ar")
	CALL("n", "aten.neg.default", "<arg node=\"w\"/>")
	OUT("n"));

static void test_peak_plan(void **state)
{
	(void)state;
	const char *graphs[] = {
		staged,
		LOCAL(PH("x", "4 8", "8 1")
		      CALL("a", "aten.neg.default", "<arg node=\"x\"/>")
		      CALL("b", "aten.add.Tensor", "<arg node=\"a\"/><arg node=\"x\"/>")
		      CALL("s", "aten.sum.default", "<arg node=\"b\"/>")
		      OUT("s")),
	};
	size_t want[] = {72, 3 * 128};
	size_t values[] = {72, 3 * 128}, buffers[] = {24, 0},
	       largest[] = {24, 128};
	const char *at[] = {"n", "b"};
	for (size_t g = 0; g < sizeof(graphs) / sizeof(graphs[0]); g++) {
		struct rt_diag r;
		rt_diag_init(&r);
		struct dt_module *m = rt_load(&r, graphs[g]);
		struct dt_backend *b = rt_backend(&r);
		size_t peak = 0;
		uint32_t node = 0;
		assert_int_equal(dt_interpret_peak(m, b, &peak, &node), DT_OK);
		assert_int_equal(rt_counting_of(b)->total, 0); /* nothing held */
		assert_int_equal(peak, want[g]);
		assert_ptr_equal(dt_node_get(m, node), rt_node(m, at[g]));
		struct dt_run_options opt = {.iters = 2, .warmup = 1};
		struct dt_run_result res;
		assert_int_equal(dt_interpret(m, b, &opt, &res), DT_OK);
		assert_int_equal(res.memory_bytes, peak); /* the plan is the run */
		assert_int_equal(res.peak_bytes, values[g]);
		assert_int_equal(res.buffer_bytes, buffers[g]);
		assert_int_equal(res.largest_bytes, largest[g]);
		dt_run_result_fini(&res);
		b->ops->destroy(b);
		dt_module_destroy(m);
	}
}

/* dt_memory_plan walks the ranks a module runs on: every rank of an SPMD
 * graph's world (the 4 of a mesh naming its devices out of order), only R
 * of a rank="R" graph; each rank's plan is dt_interpret_peak's (staged's
 * 72 B at n on every rank). */
static void test_memory_plan(void **state)
{
	(void)state;
	static const char spmd[] =
	    "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" "
	    "view=\"local\">\n<mesh name=\"m\" shape=\"2 2\" dims=\"a b\" "
	    "devices=\"3 2 1 0\"/><group name=\"ga\" mesh=\"m\" dims=\"a\"/>\n"
	    PH("x", "3 2", "2 1")
	    CALL("t", "aten.t.default", "<arg node=\"x\"/>")
	    AR("ar", "t", "sum", "ga") WAIT("w", "ar")
	    CALL("n", "aten.neg.default", "<arg node=\"w\"/>")
	    OUT("n") "</dtopt-graph>\n";
	struct rt_diag r;
	rt_diag_init(&r);
	struct dt_module *m = rt_load(&r, spmd);
	size_t peak;
	int rank;
	uint32_t at;
	assert_int_equal(dt_memory_plan(m, &r.d, &peak, &rank, &at), DT_OK);
	assert_int_equal(peak, 72);
	assert_int_equal(rank, 0); /* every rank alike: the first */
	assert_ptr_equal(dt_node_get(m, at), rt_node(m, "n"));
	m->rank = 3;
	assert_int_equal(dt_memory_plan(m, &r.d, &peak, &rank, &at), DT_OK);
	assert_int_equal(rank, 3);
	assert_int_equal(peak, 72);
	dt_module_destroy(m);
}

/* Kernels with scratch: mm (x, y, the product), softmax (2 rows) and
 * cumsum (1): 6 scratch allocations besides the buffers. */
static const char scratch[] = LOCAL(PH("x", "3 2", "2 1") PH("y", "2 4", "4 1")
	CALL("p", "aten.mm.default", "<arg node=\"x\"/><arg node=\"y\"/>")
	CALL("s", "aten._softmax.default",
	     "<arg node=\"p\"/><arg int=\"1\"/><arg bool=\"false\"/>")
	CALL("c", "aten.cumsum.default", "<arg node=\"s\"/><arg int=\"0\"/>")
	OUT("c"));

/* Fail the 1st, 2nd, ... allocation of a run in turn (buffers and kernel
 * scratch alike): each is an error at its node, never an abort, and every
 * buffer and scratch array goes back. */
static void test_allocation_failures(void **state)
{
	(void)state;
	const char *graphs[] = {staged, scratch};
	const long least[] = {3, 5 + 6}, scratch_failures[] = {0, 6};
	for (size_t g = 0; g < sizeof(graphs) / sizeof(graphs[0]); g++) {
		long in_scratch = 0;
		for (long k = 1;; k++) {
			struct rt_diag r;
			rt_diag_init(&r);
			struct dt_module *m = rt_load(&r, graphs[g]);
			struct dt_backend *b = rt_backend(&r);
			rt_counting_of(b)->fail_at = k;
			struct dt_run_options opt = {.iters = 1};
			struct dt_run_result res;
			int rc = dt_interpret(m, b, &opt, &res);
			long total = rt_counting_of(b)->total;
			if (rc == DT_OK) {
				assert_true(k > total); /* no allocation failed */
				assert_true(k > least[g]);
				dt_run_result_fini(&res);
			} else {
				assert_int_equal(rc, DT_ERUNTIME);
				assert_non_null(strstr(r.last, "cannot allocate"));
				in_scratch += strstr(r.last, "of scratch") != NULL;
			}
			b->ops->destroy(b); /* asserts nothing is held */
			dt_module_destroy(m);
			if (rc == DT_OK)
				break;
		}
		assert_int_equal(in_scratch, scratch_failures[g]);
	}
}

struct seq {
	struct dt_collective_item *items;
	uint32_t n;
	uint64_t hash;
	struct dt_module *m;
};

static void sequence_of(struct seq *s, const char *xml)
{
	struct rt_diag r;
	rt_diag_init(&r);
	s->m = rt_load(&r, xml);
	dt_collective_sequence(s->m, &s->items, &s->n, &s->hash);
}

static void seq_fini(struct seq *s)
{
	dt_free(s->items);
	dt_module_destroy(s->m);
}

#define TWO(op1, g1, op2, g2, shape)                                       \
	LOCAL(PH("x", shape, "1") AR("a", "x", op1, g1) WAIT("w", "a")      \
	      AR("b", "w", op2, g2) WAIT("v", "b") OUT("v"))

static void test_sequence(void **state)
{
	(void)state;
	struct seq base, s;
	sequence_of(&base, TWO("sum", "ga", "max", "ga", "6"));
	assert_int_equal(base.n, 2);
	const struct dt_collective_item *it = &base.items[1];
	assert_int_equal(it->kind, DT_OP_ALL_REDUCE);
	assert_int_equal(it->group, 0);
	assert_int_equal(it->dtype, DT_FLOAT32);
	assert_int_equal(it->in, 6);
	assert_int_equal(it->out, 6);
	assert_int_equal(it->reduce, DT_REDUCE_MAX);
	assert_int_equal(it->line, rt_node(base.m, "b")->line);
	assert_int_not_equal(base.items[0].hash, base.items[1].hash);
	/* what would mismatch between ranks changes the hash */
	const char *differ[] = {
		TWO("sum", "ga", "max", "gb", "6"),  /* group */
		TWO("sum", "ga", "min", "ga", "6"),  /* reduce op */
		TWO("max", "ga", "sum", "ga", "6"),  /* order */
		LOCAL(PH("x", "6", "1") AR("a", "x", "sum", "ga") WAIT("w", "a")
		      OUT("w")),                   /* length */
	};
	for (size_t k = 0; k < sizeof(differ) / sizeof(differ[0]); k++) {
		sequence_of(&s, differ[k]);
		assert_int_not_equal(s.hash, base.hash);
		seq_fini(&s);
	}
	/* counts may differ between group instances (uneven shards): they
	 * have a hash of their own, compared within each instance */
	sequence_of(&s, TWO("sum", "ga", "max", "ga", "7"));
	assert_int_equal(s.hash, base.hash);
	assert_int_not_equal(s.items[0].counts, base.items[0].counts);
	assert_int_not_equal(s.items[1].counts, base.items[1].counts);
	seq_fini(&s);
	/* names and other nodes change neither */
	sequence_of(&s, LOCAL(PH("y", "6", "1")
			      CALL("z", "aten.neg.default", "<arg node=\"y\"/>")
			      AR("p", "z", "sum", "ga") WAIT("q", "p")
			      AR("r", "q", "max", "ga") WAIT("u", "r") OUT("u")));
	assert_int_equal(s.hash, base.hash);
	for (int k = 0; k < 2; k++)
		assert_int_equal(s.items[k].counts, base.items[k].counts);
	seq_fini(&s);
	seq_fini(&base);
}

struct poll_ctx {
	double until; /* the test succeeds from then on */
	int calls;
};

static bool poll_test(void *ud)
{
	struct poll_ctx *c = ud;
	c->calls++;
	return dt_rt_now() >= c->until;
}

/* Past its spin a wait sleeps at least 50 µs between tests: 20 ms take at
 * most 400 tests (yielding throughout, thousands on an idle core); a test
 * that never succeeds ends at the timeout. */
static void test_poll(void **state)
{
	(void)state;
	struct poll_ctx c = {dt_rt_now() + 0.02, 0};
	assert_true(dt_rt_poll(poll_test, &c, 0, 0));
	assert_in_range(c.calls, 2, 401);
	double start = dt_rt_now();
	c = (struct poll_ctx){start + 1e9, 0};
	assert_false(dt_rt_poll(poll_test, &c, 0.01, 200e-6));
	assert_true(dt_rt_now() - start >= 0.01);
	assert_true(c.calls >= 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_peak_plan, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_memory_plan, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_allocation_failures, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_sequence, rt_setup, rt_teardown),
		cmocka_unit_test(test_poll),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
