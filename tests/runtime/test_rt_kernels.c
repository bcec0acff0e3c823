// SPDX-License-Identifier: MIT
/* test_rt_kernels.c: CPU kernels against small hand-computed cases: a
 * graph of placeholders (given values, any strides) and one call node is
 * run through dt_cpu_kernel directly. */
#include "rt_test.h"
#include "internal.h"

#include <math.h>

#define MAXRES 3

/* The results of one kernel call, row-major. */
struct kres {
	struct dt_rt_tensor t[MAXRES]; /* geometry (no storage) */
	double v[MAXRES][64];
	int rc;
};

/* Run node `name` of `xml` with placeholder k holding in[k] (row-major,
 * in graph order). Diagnostics land in *r. */
static void run_node(struct rt_diag *r, const char *xml, const char *name,
		     const double *const *in, struct kres *out)
{
	struct dt_module *m = rt_load(r, xml);
	struct dt_backend *b = rt_backend(r);
	uint32_t nn = m->nodes.len;
	struct dt_rt_tensor *store = test_calloc(nn * MAXRES, sizeof(*store));
	struct dt_rt_tensor **values = test_calloc(nn, sizeof(*values));
	int k = 0;
	uint32_t target = 0;
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		values[id] = store + id * MAXRES;
		if (strcmp(dt_str_get(m, n->name), name) == 0)
			target = id;
		if (n->kind != DT_NODE_PLACEHOLDER)
			continue;
		struct dt_rt_tensor *t = values[id];
		dt_rt_from_meta(t, m, dt_node_tensor(m, n, 0));
		t->buf = dt_buffer_create(b, dt_rt_storage_bytes(t));
		dt_cpu_write(t, in[k++]);
	}
	assert_true(target != 0);
	const struct dt_node *n = dt_node_get(m, target);
	assert_true(n->ntensors <= MAXRES);
	struct dt_bound_args args;
	assert_int_equal(dt_op_bind(m, n, &args, &r->d), DT_OK);
	for (uint32_t i = 0; i < n->ntensors; i++) {
		struct dt_rt_tensor *t = &values[target][i];
		dt_rt_from_meta(t, m, dt_node_tensor(m, n, (int)i));
		t->buf = dt_buffer_create(b, dt_rt_storage_bytes(t));
	}
	struct dt_kernel_call c = {
		.m = m, .node = n, .op = (enum dt_op)n->op, .args = &args,
		.values = values, .outputs = values[target], .noutputs = n->ntensors,
		.seed = 1,
	};
	memset(out, 0, sizeof(*out));
	out->rc = dt_cpu_kernel(b, &c);
	for (uint32_t i = 0; i < n->ntensors; i++) {
		out->t[i] = values[target][i];
		assert_true(dt_rt_numel(&out->t[i]) <= 64);
		if (out->rc == DT_OK)
			dt_cpu_read(&out->t[i], out->v[i]);
		out->t[i].buf = NULL;
	}
	for (uint32_t i = 0; i < nn * MAXRES; i++)
		dt_buffer_release(b, store[i].buf);
	test_free(store);
	test_free(values);
	b->ops->destroy(b);
	dt_module_destroy(m);
}

#define PH(name, dtype, shape, stride)                                     \
	"<node name=\"" name "\" op=\"placeholder\"><tensor dtype=\"" dtype \
	"\" shape=\"" shape "\" stride=\"" stride "\"/></node>\n"
#define CALL(name, target, args)                                           \
	"<node name=\"" name "\" op=\"call_function\" target=\"" target   \
	"\">" args "</node>\n"
#define OUT(nodes) "<node name=\"output\" op=\"output\"><arg nodes=\"" nodes "\"/></node>\n"

static void expect(const double *got, const double *want, int n, double tol)
{
	for (int i = 0; i < n; i++)
		if (!(fabs(got[i] - want[i]) <= tol))
			fail_msg("element %d: got %.17g, want %.17g", i, got[i], want[i]);
}

static void test_matmul(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct kres k;
	const double a[] = {1, 2, 3, 4, 5, 6};
	const double bm[] = {7, 8, 9, 10, 11, 12};
	const double *in[] = {a, bm};
	/* 2x3 @ 3x2, the second operand stored transposed */
	run_node(&r, RT_GRAPH("local", PH("a", "float32", "2 3", "3 1") PH("b", "float32", "3 2", "1 3")
				       CALL("y", "aten.mm.default", "<arg node=\"a\"/><arg node=\"b\"/>")
				       OUT("y")), "y", in, &k);
	assert_int_equal(k.rc, DT_OK);
	expect(k.v[0], (const double[]){58, 64, 139, 154}, 4, 0);

	/* addmm: 0.5 * self[2] + 2 * a @ b */
	const double s[] = {1, -1};
	const double *in3[] = {s, a, bm};
	run_node(&r, RT_GRAPH("local", PH("s", "float32", "2", "1") PH("a", "float32", "2 3", "3 1")
				       PH("b", "float32", "3 2", "2 1")
				       CALL("y", "aten.addmm.default", "<arg node=\"s\"/><arg node=\"a\"/><arg node=\"b\"/>"
						"<kwarg name=\"beta\" float=\"0.5\"/><kwarg name=\"alpha\" int=\"2\"/>")
				       OUT("y")), "y", in3, &k);
	expect(k.v[0], (const double[]){116.5, 127.5, 278.5, 307.5}, 4, 0);

	/* bmm of two batches */
	const double x[] = {1, 0, 0, 1, 2, 0, 0, 2};
	const double w[] = {1, 2, 3, 4, 1, 2, 3, 4};
	const double *in2[] = {x, w};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2 2 2", "4 2 1") PH("w", "float32", "2 2 2", "4 2 1")
				       CALL("y", "aten.bmm.default", "<arg node=\"x\"/><arg node=\"w\"/>")
				       OUT("y")), "y", in2, &k);
	expect(k.v[0], (const double[]){1, 2, 3, 4, 2, 4, 6, 8}, 8, 0);
}

static void test_softmax_layer_norm(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct kres k;
	const double row[] = {1, 2, 3};
	const double *in[] = {row};
	run_node(&r, RT_GRAPH("local", PH("x", "float64", "1 3", "3 1")
				       CALL("y", "aten._softmax.default", "<arg node=\"x\"/><arg int=\"-1\"/><arg bool=\"false\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){0.09003057317038046, 0.24472847105479767, 0.6652409557748219}, 3, 1e-15);
	run_node(&r, RT_GRAPH("local", PH("x", "float64", "1 3", "3 1")
				       CALL("y", "aten._log_softmax.default", "<arg node=\"x\"/><arg int=\"1\"/><arg bool=\"false\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){-2.4076059644443806, -1.4076059644443806, -0.40760596444438065}, 3, 1e-15);

	/* layer norm of [1, 2, 3, 4] (eps 0): mean 2.5, var 1.25 */
	const double ln[] = {1, 2, 3, 4}, w[] = {1, 1, 2, 2}, bias[] = {0, 0, 0, 1};
	const double *lin[] = {ln, w, bias};
	run_node(&r, RT_GRAPH("local", PH("x", "float64", "1 4", "4 1") PH("w", "float64", "4", "1")
				       PH("b", "float64", "4", "1")
				       CALL("y", "aten.native_layer_norm.default",
					    "<arg node=\"x\"/><arg ints=\"4\"/><arg node=\"w\"/><arg node=\"b\"/><arg float=\"0.0\"/>")
				       OUT("y")), "y", lin, &k);
	assert_int_equal(k.rc, DT_OK);
	double z = 1 / sqrt(1.25);
	expect(k.v[0], (const double[]){-1.5 * z, -0.5 * z, 0.5 * 2 * z, 1.5 * 2 * z + 1}, 4, 1e-15);
	expect(k.v[1], (const double[]){2.5}, 1, 0);
	expect(k.v[2], (const double[]){z}, 1, 1e-15);
	assert_int_equal(k.t[1].rank, 2); /* [1, 1] */
	assert_int_equal(k.t[1].shape[1], 1);
}

static void test_broadcast_promotion(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct kres k;
	/* [[1,2,3],[4,5,6]] stored column-major + [10,20,30] */
	const double a[] = {1, 2, 3, 4, 5, 6}, c[] = {10, 20, 30};
	const double *in[] = {a, c};
	run_node(&r, RT_GRAPH("local", PH("a", "float32", "2 3", "1 2") PH("c", "float32", "3", "1")
				       CALL("y", "aten.add.Tensor", "<arg node=\"a\"/><arg node=\"c\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){11, 22, 33, 14, 25, 36}, 6, 0);
	/* the output takes the input's (column-major) memory order */
	assert_int_equal(k.t[0].stride[0], 1);
	assert_int_equal(k.t[0].stride[1], 2);

	/* int64 + float32 -> float32; int64 + Python int -> int64 */
	const double i[] = {1, 2}, f[] = {0.5, 0.25};
	const double *in2[] = {i, f};
	run_node(&r, RT_GRAPH("local", PH("i", "int64", "2", "1") PH("f", "float32", "2", "1")
				       CALL("y", "aten.add.Tensor", "<arg node=\"i\"/><arg node=\"f\"/><kwarg name=\"alpha\" int=\"2\"/>")
				       OUT("y")), "y", in2, &k);
	assert_int_equal(k.t[0].dtype, DT_FLOAT32);
	expect(k.v[0], (const double[]){2, 2.5}, 2, 0);
	run_node(&r, RT_GRAPH("local", PH("i", "int64", "2", "1")
				       CALL("y", "aten.mul.Tensor", "<arg node=\"i\"/><arg int=\"3\"/>")
				       OUT("y")), "y", in2, &k);
	assert_int_equal(k.t[0].dtype, DT_INT64);
	expect(k.v[0], (const double[]){3, 6}, 2, 0);
	/* int32 / Python float: float32; 0.1 compared in float32 */
	const double v[] = {(double)0.1f, 0.1};
	const double *in3[] = {v};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2", "1")
				       CALL("y", "aten.eq.Scalar", "<arg node=\"x\"/><arg float=\"0.1\"/>")
				       OUT("y")), "y", in3, &k);
	assert_int_equal(k.t[0].dtype, DT_BOOL);
	expect(k.v[0], (const double[]){1, 1}, 2, 0);
	/* floor and trunc division of negative integers */
	const double num[] = {-7, 7, -8};
	const double *in4[] = {num};
	run_node(&r, RT_GRAPH("local", PH("x", "int64", "3", "1")
				       CALL("y", "aten.div.Scalar_mode", "<arg node=\"x\"/><arg int=\"2\"/><kwarg name=\"rounding_mode\" str=\"floor\"/>")
				       OUT("y")), "y", in4, &k);
	expect(k.v[0], (const double[]){-4, 3, -4}, 3, 0);
	run_node(&r, RT_GRAPH("local", PH("x", "int64", "3", "1")
				       CALL("y", "aten.div.Scalar_mode", "<arg node=\"x\"/><arg int=\"2\"/><kwarg name=\"rounding_mode\" str=\"trunc\"/>")
				       OUT("y")), "y", in4, &k);
	expect(k.v[0], (const double[]){-3, 3, -4}, 3, 0);
	run_node(&r, RT_GRAPH("local", PH("x", "int64", "3", "1")
				       CALL("y", "aten.div.Scalar_mode", "<arg node=\"x\"/><arg int=\"0\"/><kwarg name=\"rounding_mode\" str=\"trunc\"/>")
				       OUT("y")), "y", in4, &k);
	assert_int_equal(k.rc, DT_ERUNTIME);
	assert_non_null(strstr(r.last, "t.xml:4: error: node 'y' (aten.div.Scalar_mode): ZeroDivisionError"));
}

static void test_reductions(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct kres k;
	const double x[] = {1, 2, 3, 4, 5, 6};
	const double *in[] = {x};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2 3", "3 1")
				       CALL("y", "aten.sum.dim_IntList", "<arg node=\"x\"/><arg ints=\"1\"/><arg bool=\"true\"/>")
				       OUT("y")), "y", in, &k);
	assert_int_equal(k.t[0].rank, 2);
	assert_int_equal(k.t[0].shape[1], 1);
	expect(k.v[0], (const double[]){6, 15}, 2, 0);
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2 3", "3 1")
				       CALL("y", "aten.mean.dim", "<arg node=\"x\"/><arg ints=\"0\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){2.5, 3.5, 4.5}, 3, 0);
	run_node(&r, RT_GRAPH("local", PH("x", "float64", "2 3", "3 1")
				       CALL("y", "aten.var.correction", "<arg node=\"x\"/><arg ints=\"1\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){1, 1}, 2, 1e-15);
	/* max.dim: values and the first index of ties */
	const double t[] = {3, 7, 7, 1, -2, -2};
	const double *in2[] = {t};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2 3", "3 1")
				       CALL("y", "aten.max.dim", "<arg node=\"x\"/><arg int=\"1\"/>")
				       OUT("y")), "y", in2, &k);
	expect(k.v[0], (const double[]){7, 1}, 2, 0);
	expect(k.v[1], (const double[]){1, 0}, 2, 0);
	assert_int_equal(k.t[1].dtype, DT_INT64);
	const double nan_row[] = {1, NAN, 5};
	const double *in3[] = {nan_row};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "3", "1")
				       CALL("y", "aten.argmax.default", "<arg node=\"x\"/>")
				       OUT("y")), "y", in3, &k);
	expect(k.v[0], (const double[]){1}, 1, 0);
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "3", "1")
				       CALL("y", "aten.amax.default", "<arg node=\"x\"/>")
				       OUT("y")), "y", in3, &k);
	assert_true(isnan(k.v[0][0]));
}

static void test_nll_embedding(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct kres k;
	const double lp[] = {-1, -2, -3, -4, -5, -6, -7, -8, -9}, tg[] = {0, 2, 1};
	const double w[] = {1, 2, 3};
	const double *in[] = {lp, tg, w};
	/* mean, ignore_index 2: (1 + 8) / 2 */
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "3 3", "3 1") PH("t", "int64", "3", "1")
				       PH("w", "float32", "3", "1")
				       CALL("y", "aten.nll_loss_forward.default",
					    "<arg node=\"x\"/><arg node=\"t\"/><arg none=\"true\"/><arg int=\"1\"/><arg int=\"2\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){4.5}, 1, 0);
	expect(k.v[1], (const double[]){2}, 1, 0);
	/* class weights: (1*1 + 2*8) / (1 + 2) */
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "3 3", "3 1") PH("t", "int64", "3", "1")
				       PH("w", "float32", "3", "1")
				       CALL("y", "aten.nll_loss_forward.default",
					    "<arg node=\"x\"/><arg node=\"t\"/><arg node=\"w\"/><arg int=\"1\"/><arg int=\"2\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){17.0 / 3}, 1, 1e-6);
	/* backward of the mean: -w[t] / total_weight at (i, t[i]) */
	const double g[] = {1}, tw[] = {2};
	const double *inb[] = {g, lp, tg, tw};
	run_node(&r, RT_GRAPH("local", PH("g", "float32", "", "") PH("x", "float32", "3 3", "3 1")
				       PH("t", "int64", "3", "1") PH("tw", "float32", "", "")
				       CALL("y", "aten.nll_loss_backward.default",
					    "<arg node=\"g\"/><arg node=\"x\"/><arg node=\"t\"/><arg none=\"true\"/>"
					    "<arg int=\"1\"/><arg int=\"2\"/><arg node=\"tw\"/>")
				       OUT("y")), "y", inb, &k);
	expect(k.v[0], (const double[]){-0.5, 0, 0, 0, 0, 0, 0, -0.5, 0}, 9, 0);

	/* embedding backward: rows 1 and 3 accumulate */
	const double gr[] = {1, 2, 10, 20, 100, 200, 1000, 2000}, ix[] = {1, 0, 1, 3};
	const double *ine[] = {gr, ix};
	run_node(&r, RT_GRAPH("local", PH("g", "float32", "4 2", "2 1") PH("i", "int64", "4", "1")
				       CALL("y", "aten.embedding_dense_backward.default",
					    "<arg node=\"g\"/><arg node=\"i\"/><arg int=\"4\"/><arg int=\"-1\"/><arg bool=\"false\"/>")
				       OUT("y")), "y", ine, &k);
	expect(k.v[0], (const double[]){10, 20, 101, 202, 0, 0, 1000, 2000}, 8, 0);
	run_node(&r, RT_GRAPH("local", PH("g", "float32", "4 2", "2 1") PH("i", "int64", "4", "1")
				       CALL("y", "aten.embedding_dense_backward.default",
					    "<arg node=\"g\"/><arg node=\"i\"/><arg int=\"4\"/><arg int=\"0\"/><arg bool=\"true\"/>")
				       OUT("y")), "y", ine, &k);
	expect(k.v[0], (const double[]){0, 0, 50.5, 101, 0, 0, 1000, 2000}, 8, 0);
	/* embedding: rows gathered; an index out of range is an error */
	const double wt[] = {1, 2, 3, 4, 5, 6}, bad[] = {2, 0, 3};
	const double *inf[] = {wt, bad};
	run_node(&r, RT_GRAPH("local", PH("w", "float32", "3 2", "2 1") PH("i", "int64", "3", "1")
				       CALL("e", "aten.embedding.default", "<arg node=\"w\"/><arg node=\"i\"/>")
				       OUT("e")), "e", inf, &k);
	assert_int_equal(k.rc, DT_ERUNTIME);
	assert_string_equal(r.last, "t.xml:5: error: node 'e' (aten.embedding.default): index 3 is out of bounds for size 3");
	const double good[] = {2, 0, 2};
	const double *ing[] = {wt, good};
	run_node(&r, RT_GRAPH("local", PH("w", "float32", "3 2", "2 1") PH("i", "int64", "3", "1")
				       CALL("e", "aten.embedding.default", "<arg node=\"w\"/><arg node=\"i\"/>")
				       OUT("e")), "e", ing, &k);
	expect(k.v[0], (const double[]){5, 6, 1, 2, 5, 6}, 6, 0);
}

static void test_gelu_cat_pad(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct kres k;
	const double one[] = {1, -1};
	const double *in[] = {one};
	run_node(&r, RT_GRAPH("local", PH("x", "float64", "2", "1")
				       CALL("y", "aten.gelu.default", "<arg node=\"x\"/>") OUT("y")),
		 "y", in, &k);
	expect(k.v[0], (const double[]){0.8413447460685429, -0.15865525393145707}, 2, 1e-15);
	run_node(&r, RT_GRAPH("local", PH("x", "float64", "2", "1")
				       CALL("y", "aten.gelu.default", "<arg node=\"x\"/><kwarg name=\"approximate\" str=\"tanh\"/>")
				       OUT("y")), "y", in, &k);
	expect(k.v[0], (const double[]){0.8411919906082768, -0.15880800939172324}, 2, 1e-15);
	/* gelu_backward at 1 with grad 1: cdf + x * pdf */
	const double *in2[] = {(const double[]){1}, (const double[]){1}};
	run_node(&r, RT_GRAPH("local", PH("g", "float64", "1", "1") PH("x", "float64", "1", "1")
				       CALL("y", "aten.gelu_backward.default", "<arg node=\"g\"/><arg node=\"x\"/>")
				       OUT("y")), "y", in2, &k);
	expect(k.v[0], (const double[]){0.8413447460685429 + 0.24197072451914337}, 1, 1e-15);

	/* cat on dim 1 of [2,1] and [2,2] */
	const double a[] = {1, 2}, b[] = {3, 4, 5, 6};
	const double *in3[] = {a, b};
	run_node(&r, RT_GRAPH("local", PH("a", "float32", "2 1", "1 1") PH("b", "float32", "2 2", "1 2")
				       CALL("y", "aten.cat.default", "<arg nodes=\"a b\"/><arg int=\"1\"/>")
				       OUT("y")), "y", in3, &k);
	assert_int_equal(k.t[0].shape[1], 3);
	expect(k.v[0], (const double[]){1, 3, 4, 2, 5, 6}, 6, 0);
	/* constant_pad_nd: one column of 9 before, crop the last row */
	run_node(&r, RT_GRAPH("local", PH("b", "float32", "2 2", "2 1")
				       CALL("y", "aten.constant_pad_nd.default", "<arg node=\"b\"/><arg ints=\"1 0 0 -1\"/><arg int=\"9\"/>")
				       OUT("y")), "y", &in3[1], &k);
	expect(k.v[0], (const double[]){9, 3, 4}, 3, 0);
	/* bfloat16 output rounds: 1/3 + 0 */
	const double third[] = {1.0 / 3};
	const double *in4[] = {third};
	run_node(&r, RT_GRAPH("local", PH("x", "float64", "1", "1")
				       CALL("y", "prims.convert_element_type.default", "<arg node=\"x\"/><arg dtype=\"bfloat16\"/>")
				       OUT("y")), "y", in4, &k);
	expect(k.v[0], (const double[]){0.333984375}, 1, 0);
}

/* tril/triu, bitwise ops on negative integers, index ops with repeated
 * and out-of-range (negative) indices, repeat_interleave, mse_loss, fill and sign. */
static void test_masks_index_loss(void **state)
{
	(void)state;
	struct rt_diag r;
	rt_diag_init(&r);
	struct kres k;
	const double n9[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	const double *in9[] = {n9};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "3 3", "3 1")
				       CALL("y", "aten.tril.default", "<arg node=\"x\"/><arg int=\"-1\"/>")
				       OUT("y")), "y", in9, &k);
	expect(k.v[0], (const double[]){0, 0, 0, 4, 0, 0, 7, 8, 0}, 9, 0);
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2 3", "1 2")
				       CALL("y", "aten.triu.default", "<arg node=\"x\"/><arg int=\"1\"/>")
				       OUT("y")), "y", in9, &k);
	expect(k.v[0], (const double[]){0, 2, 3, 0, 0, 6}, 6, 0);

	const double bx[] = {-6, 7, 0, -1}, by[] = {5, 3, -8, 4};
	const double *inb[] = {bx, by};
#define BIT(target, ...)                                                           \
	run_node(&r, RT_GRAPH("local", PH("x", "int64", "4", "1") PH("y", "int64", "4", "1") \
				       CALL("z", target, "<arg node=\"x\"/><arg node=\"y\"/>") OUT("z")), \
		 "z", inb, &k);                                                    \
	expect(k.v[0], (const double[]){__VA_ARGS__}, 4, 0)
	BIT("aten.bitwise_and.Tensor", 0, 3, 0, 4);
	BIT("aten.bitwise_or.Tensor", -1, 7, -8, -1);
	BIT("aten.bitwise_xor.Tensor", -1, 4, -8, -5);
#undef BIT
	run_node(&r, RT_GRAPH("local", PH("x", "int64", "4", "1")
				       CALL("z", "aten.bitwise_not.default", "<arg node=\"x\"/>") OUT("z")),
		 "z", inb, &k);
	expect(k.v[0], (const double[]){5, -8, -1, 0}, 4, 0);
	const double mb[] = {1, 0};
	const double *inm[] = {mb};
	run_node(&r, RT_GRAPH("local", PH("m", "bool", "2", "1")
				       CALL("z", "aten.bitwise_not.default", "<arg node=\"m\"/>") OUT("z")),
		 "z", inm, &k);
	expect(k.v[0], (const double[]){0, 1}, 2, 0);

	/* index_add: rows 2 and 0 (row 2 twice), alpha 2 */
	const double ones[] = {1, 1, 1, 1, 1, 1}, ia[] = {2, 0, 2}, src[] = {1, 2, 3, 4, 5, 6};
	const double *ini[] = {ones, ia, src};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "3 2", "2 1") PH("i", "int64", "3", "1")
				       PH("s", "float32", "3 2", "2 1")
				       CALL("y", "aten.index_add.default",
					    "<arg node=\"x\"/><arg int=\"0\"/><arg node=\"i\"/><arg node=\"s\"/>"
					    "<kwarg name=\"alpha\" int=\"2\"/>")
				       OUT("y")), "y", ini, &k);
	expect(k.v[0], (const double[]){7, 9, 1, 1, 13, 17}, 6, 0);
	const double sel[] = {2, 0};
	const double *ins[] = {n9, sel};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2 3", "3 1") PH("i", "int64", "2", "1")
				       CALL("y", "aten.index_select.default",
					    "<arg node=\"x\"/><arg int=\"1\"/><arg node=\"i\"/>")
				       OUT("y")), "y", ins, &k);
	expect(k.v[0], (const double[]){3, 1, 6, 4}, 4, 0);
	const double neg[] = {-1, 0};
	const double *inn[] = {n9, neg};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "2 3", "3 1") PH("i", "int64", "2", "1")
				       CALL("y", "aten.index_select.default",
					    "<arg node=\"x\"/><arg int=\"1\"/><arg node=\"i\"/>")
				       OUT("y")), "y", inn, &k);
	assert_int_equal(k.rc, DT_ERUNTIME);
	assert_non_null(strstr(r.last, "index -1 is out of range"));
	const double reps[] = {2, 0, 3};
	const double *inr[] = {reps};
	run_node(&r, RT_GRAPH("local", PH("r", "int64", "3", "1")
				       CALL("y", "aten.repeat_interleave.Tensor",
					    "<arg node=\"r\"/><tensor dtype=\"int64\" shape=\"5\" stride=\"1\"/>")
				       OUT("y")), "y", inr, &k);
	expect(k.v[0], (const double[]){0, 0, 2, 2, 2}, 5, 0);

	/* mse_loss: mean (1 + 4 + 9 + 16) / 4, sum, backward of the mean */
	const double ma[] = {1, 2, 3, 4}, mz[] = {0, 0, 0, 0}, g1[] = {1};
	const double *inl[] = {ma, mz}, *inlb[] = {g1, ma, mz};
	run_node(&r, RT_GRAPH("local", PH("a", "float32", "4", "1") PH("b", "float32", "4", "1")
				       CALL("y", "aten.mse_loss.default", "<arg node=\"a\"/><arg node=\"b\"/>")
				       OUT("y")), "y", inl, &k);
	expect(k.v[0], (const double[]){7.5}, 1, 0);
	run_node(&r, RT_GRAPH("local", PH("a", "float32", "4", "1") PH("b", "float32", "4", "1")
				       CALL("y", "aten.mse_loss.default", "<arg node=\"a\"/><arg node=\"b\"/><arg int=\"2\"/>")
				       OUT("y")), "y", inl, &k);
	expect(k.v[0], (const double[]){30}, 1, 0);
	run_node(&r, RT_GRAPH("local", PH("g", "float32", "", "") PH("a", "float32", "4", "1")
				       PH("b", "float32", "4", "1")
				       CALL("y", "aten.mse_loss_backward.default",
					    "<arg node=\"g\"/><arg node=\"a\"/><arg node=\"b\"/><arg int=\"1\"/>")
				       OUT("y")), "y", inlb, &k);
	expect(k.v[0], (const double[]){0.5, 1, 1.5, 2}, 4, 0);

	/* fill truncates to an integral dtype; sign of NaN is 0 (torch 1.13) */
	run_node(&r, RT_GRAPH("local", PH("x", "int64", "2", "1")
				       CALL("y", "aten.fill.Scalar", "<arg node=\"x\"/><arg float=\"2.7\"/>")
				       OUT("y")), "y", inm, &k);
	expect(k.v[0], (const double[]){2, 2}, 2, 0);
	const double sg[] = {-2, 0, NAN, 3};
	const double *ing[] = {sg};
	run_node(&r, RT_GRAPH("local", PH("x", "float32", "4", "1")
				       CALL("y", "aten.sign.default", "<arg node=\"x\"/>")
				       OUT("y")), "y", ing, &k);
	expect(k.v[0], (const double[]){-1, 0, 0, 1}, 4, 0);

	/* arange to an integral dtype counts from the truncated start by the
	 * truncated step (torch 1.13: arange(-0.5, 2.5, 1, dtype=int64) is
	 * [0, 1], arange(0.5, 4, 1.5, dtype=int64) [0, 1, 2, 3]); to a float
	 * one from the numbers as given */
	run_node(&r, RT_GRAPH("local", CALL("y", "aten.arange.start_step",
					    "<arg float=\"-0.5\"/><arg float=\"2.5\"/><arg int=\"1\"/>"
					    "<kwarg name=\"dtype\" dtype=\"int64\"/>"
					    "<tensor dtype=\"int64\" shape=\"2\" stride=\"1\"/>")
				       OUT("y")), "y", NULL, &k);
	expect(k.v[0], (const double[]){0, 1}, 2, 0);
	run_node(&r, RT_GRAPH("local", CALL("y", "aten.arange.start_step",
					    "<arg float=\"0.5\"/><arg int=\"4\"/><arg float=\"1.5\"/>"
					    "<kwarg name=\"dtype\" dtype=\"int64\"/>"
					    "<tensor dtype=\"int64\" shape=\"4\" stride=\"1\"/>")
				       OUT("y")), "y", NULL, &k);
	expect(k.v[0], (const double[]){0, 1, 2, 3}, 4, 0);
	run_node(&r, RT_GRAPH("local", CALL("y", "aten.arange.start_step",
					    "<arg float=\"0.5\"/><arg int=\"4\"/><arg float=\"1.5\"/>"
					    "<tensor dtype=\"float32\" shape=\"3\" stride=\"1\"/>")
				       OUT("y")), "y", NULL, &k);
	expect(k.v[0], (const double[]){0.5, 2, 3.5}, 3, 0);
}

static void test_dispatch(void **state)
{
	(void)state;
	for (int op = 1; op < DT_NOPS; op++) {
		uint32_t none = DT_OPF_STRUCTURAL | DT_OPF_VIEW | DT_OPF_COLLECTIVE | DT_OPF_WAIT;
		bool want = !dt_op_has((enum dt_op)op, none);
		if (dt_cpu_has_kernel((enum dt_op)op) != want)
			fail_msg("%s: kernel %s", dt_op_get((enum dt_op)op)->target,
				 want ? "missing" : "unexpected");
	}
	assert_false(dt_cpu_has_kernel(DT_OP_UNKNOWN));
	assert_true(dt_cpu_has_kernel(DT_OP_RESHAPE));
	assert_false(dt_cpu_has_kernel(DT_OP_VIEW));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_matmul, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_softmax_layer_norm, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_broadcast_promotion, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_reductions, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_nll_embedding, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_gelu_cat_pad, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_masks_index_loss, rt_setup, rt_teardown),
		cmocka_unit_test(test_dispatch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
