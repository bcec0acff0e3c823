// SPDX-License-Identifier: MIT
/* test_shapes.c: shape functions beyond views: TensorIterator output
 * strides and type promotion of elementwise ops, reductions, matrix and
 * NN ops, collectives, copies and factories. */
#include "ops_test.h"

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

static uint32_t binary(struct tg *g, const char *target, struct dt_arg a,
		       struct dt_arg b)
{
	struct dt_arg args[] = {a, b};
	return tg_call(g, target, target, args, 2);
}

static uint32_t unary(struct tg *g, const char *target, uint32_t x)
{
	struct dt_arg args[] = {a_node(x)};
	return tg_call(g, target, target, args, 1);
}

/* ---- elementwise ---- */

static void test_elementwise_strides(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t tr = tg_input(&g, "tr", DT_FLOAT32, L(4, 8), L(1, 4), 0);
	uint32_t ct = tg_input(&g, "ct", DT_FLOAT32, L(4, 8), L(8, 1), 0);
	uint32_t cl = tg_input(&g, "cl", DT_FLOAT32, L(2, 3, 4, 5), L(60, 1, 15, 3), 0);
	tg_ok(&g, binary(&g, "aten.mul.Tensor", a_node(cl), a_node(cl)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3, 4, 5), L(60, 1, 15, 3), 0);
	/* the first input with a strict order decides */
	tg_ok(&g, binary(&g, "aten.add.Tensor", a_node(tr), a_node(ct)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_ok(&g, binary(&g, "aten.add.Tensor", a_node(ct), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	/* a broadcast input (stride 0) does not vote */
	uint32_t row = tg_input(&g, "row", DT_FLOAT32, L(8), L(1), 0);
	tg_ok(&g, binary(&g, "aten.mul.Tensor", a_node(row), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	/* a unary op keeps a dense permutation exactly ... */
	uint32_t p3 = tg_input(&g, "p3", DT_FLOAT32, L(2, 3, 4), L(1, 8, 2), 0);
	tg_ok(&g, unary(&g, "aten.relu.default", p3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3, 4), L(1, 8, 2), 0);
	/* identical dense strides are copied, size-1 dims included */
	uint32_t odd = tg_input(&g, "odd", DT_FLOAT32, L(3, 1, 2), L(1, 9, 3), 0);
	tg_ok(&g, binary(&g, "aten.add.Tensor", a_node(odd), a_node(odd)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 1, 2), L(1, 9, 3), 0);
	/* ... and makes a non-dense input dense in the same order */
	uint32_t gap = tg_input(&g, "gap", DT_FLOAT32, L(3, 4), L(1, 6), 2);
	tg_ok(&g, unary(&g, "aten.exp.default", gap), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 4), L(1, 3), 0);
	/* with a number the inputs differ in shape: the slow path, same order */
	tg_ok(&g, binary(&g, "aten.mul.Tensor", a_node(p3), a_float(0.5)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3, 4), L(1, 8, 2), 0);
	/* all-expanded + contiguous: contiguous */
	uint32_t one = tg_scalar(&g, "one", DT_FLOAT32);
	struct dt_arg ex[] = {a_node(one), a_ints(&g, L(4, 8))};
	uint32_t e = tg_call(&g, "e", "aten.expand.default", ex, 2);
	tg_ok(&g, e, &c);
	tg_ok(&g, binary(&g, "aten.add.Tensor", a_node(e), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	/* broadcasting both ways, and the error */
	uint32_t colv = tg_input(&g, "colv", DT_FLOAT32, L(4, 1), L(1, 1), 0);
	tg_ok(&g, binary(&g, "aten.sub.Tensor", a_node(colv), a_node(row)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	/* a broadcast dim is skipped, not compared: the second input decides */
	tg_ok(&g, binary(&g, "aten.add.Tensor", a_node(colv), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	uint32_t bad = tg_input(&g, "bad", DT_FLOAT32, L(3, 8), L(8, 1), 0);
	struct dt_arg add3[] = {a_node(ct), a_node(bad)};
	tg_fails(&g, tg_call(&g, "add_3", "aten.add.Tensor", add3, 2),
		 "node 'add_3': cannot broadcast shapes [4, 8] and [3, 8] for aten.add.Tensor");
	/* where: the condition is an operand too */
	uint32_t m = tg_input(&g, "m", DT_BOOL, L(4, 8), L(1, 4), 0);
	struct dt_arg wh[] = {a_node(m), a_node(ct), a_float(0.0)};
	tg_ok(&g, tg_call(&g, "wh", "aten.where.self", wh, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	/* masked_fill clones contiguous */
	struct dt_arg mf[] = {a_node(tr), a_node(m), a_float(-1e9)};
	tg_ok(&g, tg_call(&g, "mf", "aten.masked_fill.Scalar", mf, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	/* threshold_backward iterates (self, grad) */
	struct dt_arg th[] = {a_node(ct), a_node(tr), a_int(0)};
	tg_ok(&g, tg_call(&g, "th", "aten.threshold_backward.default", th, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_ok(&g, binary(&g, "aten.gelu_backward.default", a_node(ct), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	tg_fini(&g);
}

/* Device-dependent behaviour follows CUDA (checked against torch on an
 * H100): inputs of another dtype vote with their own strides (the CPU
 * would vote with converted copies) unless the op converts explicitly
 * (pow.Tensor_Scalar, where); rsub swaps its operands; dropout outputs are
 * like the input, its backward contiguous; bernoulli is contiguous. */
static void test_device_rules(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t tr = tg_input(&g, "tr", DT_FLOAT32, L(4, 8), L(1, 4), 0);
	uint32_t ct = tg_input(&g, "ct", DT_FLOAT32, L(4, 8), L(8, 1), 0);
	uint32_t ei = tg_input(&g, "ei", DT_INT64, L(4, 8), L(0, 1), 0);
	uint32_t ef = tg_input(&g, "ef", DT_FLOAT32, L(4, 8), L(0, 1), 0);
	tg_ok(&g, binary(&g, "aten.add.Tensor", a_node(ei), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_ok(&g, binary(&g, "aten.add.Tensor", a_node(ef), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	/* where converts its inputs first: a densified int copy votes */
	uint32_t m = tg_input(&g, "m", DT_BOOL, L(4, 8), L(0, 0), 0);
	struct dt_arg wh[] = {a_node(m), a_node(ei), a_node(tr)};
	tg_ok(&g, tg_call(&g, "wh", "aten.where.self", wh, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	uint32_t gi = tg_input(&g, "gi", DT_INT32, L(4, 8), L(1, 8), 0);
	tg_ok(&g, binary(&g, "aten.pow.Tensor_Scalar", a_node(gi), a_float(0.5)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_ok(&g, binary(&g, "aten.rsub.Tensor", a_node(tr), a_node(ct)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	tg_ok(&g, binary(&g, "aten.sub.Tensor", a_node(tr), a_node(ct)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_ok(&g, binary(&g, "aten.pow.Scalar", a_int(2), a_node(tr)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	struct dt_arg dr[] = {a_node(tr), a_float(0.1), a_bool(true)};
	tg_ok(&g, tg_call(&g, "dr", "aten.native_dropout.default", dr, 3), &c);
	assert_int_equal(c.nout, 2);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	check_tensor(&g, &c, 1, DT_BOOL, L(4, 8), L(1, 4), 0);
	uint32_t mask = tg_input(&g, "mask", DT_BOOL, L(4, 8), L(8, 1), 0);
	struct dt_arg db[] = {a_node(tr), a_node(mask), a_float(2.0)};
	tg_ok(&g, tg_call(&g, "db", "aten.native_dropout_backward.default", db, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	tg_ok(&g, unary(&g, "aten.bernoulli.default", tr), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	tg_fini(&g);
}

static enum dt_dtype promoted(struct tg *g, const char *target, struct dt_arg a,
			      struct dt_arg b)
{
	struct dt_shape_ctx c;
	tg_ok(g, binary(g, target, a, b), &c);
	return (enum dt_dtype)c.out[0].dtype;
}

static void test_type_promotion(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	uint32_t f32 = tg_input(&g, "f32", DT_FLOAT32, L(4), L(1), 0);
	uint32_t f16 = tg_input(&g, "f16", DT_FLOAT16, L(4), L(1), 0);
	uint32_t bf16 = tg_input(&g, "bf16", DT_BFLOAT16, L(4), L(1), 0);
	uint32_t i64 = tg_input(&g, "i64", DT_INT64, L(4), L(1), 0);
	uint32_t i32 = tg_input(&g, "i32", DT_INT32, L(4), L(1), 0);
	uint32_t u8 = tg_input(&g, "u8", DT_UINT8, L(4), L(1), 0);
	uint32_t i8 = tg_input(&g, "i8", DT_INT8, L(4), L(1), 0);
	uint32_t b = tg_input(&g, "b", DT_BOOL, L(4), L(1), 0);
	uint32_t f32_0d = tg_scalar(&g, "f32_0d", DT_FLOAT32);
	uint32_t i64_0d = tg_scalar(&g, "i64_0d", DT_INT64);
	const char *add = "aten.add.Tensor";

	assert_int_equal(promoted(&g, add, a_node(i64), a_node(f32)), DT_FLOAT32);
	assert_int_equal(promoted(&g, add, a_node(i32), a_node(f16)), DT_FLOAT16);
	assert_int_equal(promoted(&g, add, a_node(f16), a_node(bf16)), DT_FLOAT32);
	assert_int_equal(promoted(&g, add, a_node(u8), a_node(i8)), DT_INT16);
	assert_int_equal(promoted(&g, add, a_node(i32), a_node(i64)), DT_INT64);
	assert_int_equal(promoted(&g, add, a_node(b), a_node(b)), DT_BOOL);
	/* numbers: a float number only lifts an integral tensor, to float32 */
	assert_int_equal(promoted(&g, add, a_node(i32), a_float(1.5)), DT_FLOAT32);
	assert_int_equal(promoted(&g, add, a_node(f16), a_float(1.5)), DT_FLOAT16);
	assert_int_equal(promoted(&g, add, a_node(i32), a_int(3)), DT_INT32);
	assert_int_equal(promoted(&g, add, a_node(b), a_int(3)), DT_INT64);
	assert_int_equal(promoted(&g, "aten.mul.Scalar", a_node(u8), a_int(300)), DT_UINT8);
	/* 0-d tensors rank below tensors with dims of the same category */
	assert_int_equal(promoted(&g, add, a_node(f16), a_node(f32_0d)), DT_FLOAT16);
	assert_int_equal(promoted(&g, add, a_node(i32), a_node(i64_0d)), DT_INT32);
	assert_int_equal(promoted(&g, add, a_node(i32), a_node(f32_0d)), DT_FLOAT32);
	/* div and the float-only unary ops give float32 for integers */
	assert_int_equal(promoted(&g, "aten.div.Tensor", a_node(i64), a_node(i32)), DT_FLOAT32);
	assert_int_equal(promoted(&g, "aten.div.Tensor", a_node(f16), a_int(2)), DT_FLOAT16);
	assert_int_equal(promoted(&g, "aten.pow.Tensor_Scalar", a_node(i32), a_float(2.0)), DT_FLOAT32);
	assert_int_equal(promoted(&g, "aten.pow.Tensor_Scalar", a_node(i32), a_int(2)), DT_INT32);
	assert_int_equal(promoted(&g, "aten.eq.Scalar", a_node(f32), a_int(0)), DT_BOOL);
	assert_int_equal(promoted(&g, "aten.lt.Tensor", a_node(i64), a_node(f16)), DT_BOOL);
	struct dt_shape_ctx c;
	struct dt_arg dm[] = {a_node(i64), a_node(i32), kw(&g, "rounding_mode", a_str(&g, "floor"))};
	tg_ok(&g, tg_call(&g, "dm", "aten.div.Tensor_mode", dm, 3), &c);
	assert_int_equal(c.out[0].dtype, DT_INT64);
	tg_ok(&g, unary(&g, "aten.sqrt.default", i64), &c);
	assert_int_equal(c.out[0].dtype, DT_FLOAT32);
	tg_ok(&g, unary(&g, "aten.neg.default", i8), &c);
	assert_int_equal(c.out[0].dtype, DT_INT8);
	tg_fails(&g, unary(&g, "aten.neg.default", b), "on a bool tensor is not supported");
	tg_fails(&g, binary(&g, "aten.sub.Tensor", a_node(b), a_node(b)), "with two bool tensors");
	struct dt_arg wh[] = {a_node(b), a_node(i32), a_node(f16)};
	tg_ok(&g, tg_call(&g, "wh", "aten.where.self", wh, 3), &c);
	assert_int_equal(c.out[0].dtype, DT_FLOAT16);
	struct dt_arg wh2[] = {a_node(f32), a_node(i32), a_node(f16)};
	tg_fails(&g, tg_call(&g, "wh2", "aten.where.self", wh2, 3),
		 "where expected condition to be a boolean tensor");
	struct dt_arg cl[] = {a_node(i32), kw(&g, "max", a_float(2.5))};
	tg_ok(&g, tg_call(&g, "cl", "aten.clamp.default", cl, 2), &c);
	assert_int_equal(c.out[0].dtype, DT_FLOAT32);
	tg_fini(&g);
}

/* ---- reductions ---- */

static void test_reductions(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t x = tg_input(&g, "x", DT_FLOAT16, L(2, 3, 4), L(1, 2, 6), 0);
	struct dt_arg s1[] = {a_node(x), a_ints(&g, L(1, -1)), a_bool(true)};
	tg_ok(&g, tg_call(&g, "s1", "aten.sum.dim_IntList", s1, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 1, 1), L(1, 1, 1), 0);
	struct dt_arg s2[] = {a_node(x), a_int(-1)};
	tg_ok(&g, tg_call(&g, "s2", "aten.sum.dim_IntList", s2, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 3), L(3, 1), 0);
	struct dt_arg s3[] = {a_node(x), a_ints(&g, L(0)), a_bool(false),
			      kw(&g, "dtype", a_dtype(DT_FLOAT32))};
	tg_ok(&g, tg_call(&g, "s3", "aten.sum.dim_IntList", s3, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 4), L(4, 1), 0);
	struct dt_arg dup[] = {a_node(x), a_ints(&g, L(1, -2))};
	tg_fails(&g, tg_call(&g, "dup", "aten.sum.dim_IntList", dup, 2),
		 "dim 1 appears multiple times in the list of dims");
	struct dt_arg oor[] = {a_node(x), a_ints(&g, L(3))};
	tg_fails(&g, tg_call(&g, "oor", "aten.sum.dim_IntList", oor, 2),
		 "Dimension out of range (expected to be in range of [-3, 2], but got 3)");

	uint32_t i = tg_input(&g, "i", DT_INT32, L(5), L(1), 0);
	tg_ok(&g, unary(&g, "aten.sum.default", i), &c);
	check_tensor(&g, &c, 0, DT_INT64, NULL, 0, NULL, 0, 0);
	tg_fails(&g, unary(&g, "aten.mean.default", i),
		 "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: int32");
	struct dt_arg md[] = {a_node(x), a_ints(&g, L(2)), a_bool(true)};
	tg_ok(&g, tg_call(&g, "md", "aten.mean.dim", md, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 3, 1), L(3, 1, 1), 0);
	/* amax's default dim=[] reduces everything */
	tg_ok(&g, unary(&g, "aten.amax.default", x), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, NULL, 0, NULL, 0, 0);
	struct dt_arg mx[] = {a_node(x), a_int(1), a_bool(true)};
	tg_ok(&g, tg_call(&g, "mx", "aten.max.dim", mx, 3), &c);
	assert_int_equal(c.nout, 2);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 1, 4), L(4, 4, 1), 0);
	check_tensor(&g, &c, 1, DT_INT64, L(2, 1, 4), L(4, 4, 1), 0);
	struct dt_arg vm[] = {a_node(x), a_ints(&g, L(2)), kw(&g, "correction", a_int(0)),
			      kw(&g, "keepdim", a_bool(true))};
	tg_ok(&g, tg_call(&g, "vm", "aten.var_mean.correction", vm, 4), &c);
	assert_int_equal(c.nout, 2);
	check_tensor(&g, &c, 1, DT_FLOAT16, L(2, 3, 1), L(3, 1, 1), 0);
	struct dt_arg am[] = {a_node(x), kw(&g, "keepdim", a_bool(true))};
	tg_ok(&g, tg_call(&g, "am", "aten.argmax.default", am, 2), &c);
	check_tensor(&g, &c, 0, DT_INT64, L(1, 1, 1), L(1, 1, 1), 0);
	tg_fini(&g);
}

/* ---- matmul and NN ---- */

static void test_matmul_nn(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t a = tg_input(&g, "a", DT_FLOAT32, L(4, 8), L(1, 4), 0);
	uint32_t w = tg_input(&g, "w", DT_FLOAT32, L(8, 16), L(16, 1), 0);
	uint32_t bias = tg_input(&g, "bias", DT_FLOAT32, L(16), L(1), 0);
	tg_ok(&g, binary(&g, "aten.mm.default", a_node(a), a_node(w)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 16), L(16, 1), 0);
	struct dt_arg am[] = {a_node(bias), a_node(a), a_node(w), kw(&g, "beta", a_int(0))};
	tg_ok(&g, tg_call(&g, "am", "aten.addmm.default", am, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 16), L(16, 1), 0);
	struct dt_arg am2[] = {a_node(a), a_node(a), a_node(w)};
	tg_fails(&g, tg_call(&g, "am2", "aten.addmm.default", am2, 3),
		 "self of shape [4, 8] cannot be broadcast to the product's shape [4, 16]");
	uint32_t b1 = tg_input(&g, "b1", DT_BFLOAT16, L(3, 4, 8), L(32, 8, 1), 0);
	uint32_t b2 = tg_input(&g, "b2", DT_BFLOAT16, L(3, 8, 2), L(16, 1, 8), 0);
	uint32_t b3 = tg_input(&g, "b3", DT_BFLOAT16, L(2, 8, 2), L(16, 2, 1), 0);
	tg_ok(&g, binary(&g, "aten.bmm.default", a_node(b1), a_node(b2)), &c);
	check_tensor(&g, &c, 0, DT_BFLOAT16, L(3, 4, 2), L(8, 2, 1), 0);
	tg_fails(&g, binary(&g, "aten.bmm.default", a_node(b1), a_node(b3)), "batch sizes differ");
	tg_fails(&g, binary(&g, "aten.mm.default", a_node(b1), a_node(w)), "must be a matrix");
	tg_fails(&g, binary(&g, "aten.mm.default", a_node(a), a_node(b1)), "must be a matrix");

	uint32_t x = tg_input(&g, "x", DT_FLOAT16, L(2, 4, 16), L(64, 1, 4), 0);
	uint32_t lw = tg_input(&g, "lw", DT_FLOAT16, L(16), L(1), 0);
	struct dt_arg ln[] = {a_node(x), a_ints(&g, L(16)), a_node(lw), a_none(), a_float(1e-5)};
	uint32_t lnn = tg_call(&g, "ln", "aten.native_layer_norm.default", ln, 5);
	tg_ok(&g, lnn, &c);
	assert_int_equal(c.nout, 3);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 4, 16), L(64, 16, 1), 0);
	check_tensor(&g, &c, 1, DT_FLOAT32, L(2, 4, 1), L(4, 1, 1), 0);
	check_tensor(&g, &c, 2, DT_FLOAT32, L(2, 4, 1), L(4, 1, 1), 0);
	struct dt_arg ln2[] = {a_node(x), a_ints(&g, L(4, 16)), a_none(), a_none(), a_float(1e-5)};
	tg_ok(&g, tg_call(&g, "ln2", "aten.native_layer_norm.default", ln2, 5), &c);
	check_tensor(&g, &c, 1, DT_FLOAT32, L(2, 1, 1), L(1, 1, 1), 0);
	struct dt_arg ln3[] = {a_node(x), a_ints(&g, L(8)), a_none(), a_none(), a_float(1e-5)};
	tg_fails(&g, tg_call(&g, "ln3", "aten.native_layer_norm.default", ln3, 5),
		 "Given normalized_shape=[8], expected input with shape [*, 8], but got input of size[2, 4, 16]");
	struct dt_arg ln4[] = {a_node(x), a_ints(&g, L(4, 16)), a_node(lw), a_none(), a_float(1e-5)};
	tg_fails(&g, tg_call(&g, "ln4", "aten.native_layer_norm.default", ln4, 5),
		 "Expected weight to be of same shape as normalized_shape");

	struct dt_arg sm[] = {a_node(x), a_int(-1), a_bool(false)};
	tg_ok(&g, tg_call(&g, "sm", "aten._softmax.default", sm, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 4, 16), L(64, 16, 1), 0);
	struct dt_arg sm2[] = {a_node(x), a_int(-1), a_bool(true)};
	tg_ok(&g, tg_call(&g, "sm2", "aten._softmax.default", sm2, 3), &c);
	assert_int_equal(c.out[0].dtype, DT_FLOAT32);

	/* backward ops */
	struct dt_arg smb[] = {a_node(x), a_node(x), a_int(-1), a_dtype(DT_FLOAT16)};
	tg_ok(&g, tg_call(&g, "smb", "aten._softmax_backward_data.default", smb, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 4, 16), L(64, 16, 1), 0);
	struct dt_arg lnb[] = {a_node(x), a_node(x), a_ints(&g, L(16)), a_node(lnn), a_node(lnn),
			       a_node(lw), a_none(), a_none()};
	tg_fails(&g, tg_call(&g, "lnb0", "aten.native_layer_norm_backward.default", lnb, 8),
		 "refers to 'ln', which has 3 results");
	struct dt_arg gi[] = {a_node(lnn), a_int(1)};
	uint32_t mean = tg_call(&g, "mean", "operator.getitem", gi, 2);
	tg_ok(&g, mean, &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 4, 1), L(4, 1, 1), 0);
	lnb[3] = a_node(mean);
	lnb[4] = a_node(mean);
	tg_ok(&g, tg_call(&g, "lnb", "aten.native_layer_norm_backward.default", lnb, 8), &c);
	assert_int_equal(c.nout, 3);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 4, 16), L(64, 16, 1), 0);
	check_tensor(&g, &c, 1, DT_FLOAT16, L(16), L(1), 0);
	struct dt_arg slb[] = {a_node(x), a_ints(&g, L(2, 8, 16)), a_int(1), a_int(0), a_int(4),
			       a_int(2)};
	tg_ok(&g, tg_call(&g, "slb", "aten.slice_backward.default", slb, 6), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 8, 16), L(128, 16, 1), 0);

	uint32_t emb = tg_input(&g, "emb", DT_BFLOAT16, L(100, 16), L(16, 1), 0);
	uint32_t ids = tg_input(&g, "ids", DT_INT64, L(2, 5), L(1, 2), 0);
	tg_ok(&g, binary(&g, "aten.embedding.default", a_node(emb), a_node(ids)), &c);
	check_tensor(&g, &c, 0, DT_BFLOAT16, L(2, 5, 16), L(80, 16, 1), 0);
	tg_fails(&g, binary(&g, "aten.embedding.default", a_node(emb), a_node(emb)),
		 "'indices' to have one of the following scalar types");

	uint32_t logits = tg_input(&g, "logits", DT_FLOAT32, L(6, 10), L(10, 1), 0);
	uint32_t tgt = tg_input(&g, "tgt", DT_INT64, L(6), L(1), 0);
	struct dt_arg nl[] = {a_node(logits), a_node(tgt), a_none(), a_int(1), a_int(-100)};
	tg_ok(&g, tg_call(&g, "nl", "aten.nll_loss_forward.default", nl, 5), &c);
	assert_int_equal(c.nout, 2);
	check_tensor(&g, &c, 0, DT_FLOAT32, NULL, 0, NULL, 0, 0);
	struct dt_arg nl0[] = {a_node(logits), a_node(tgt), a_none(), a_int(0), a_int(-100)};
	tg_ok(&g, tg_call(&g, "nl0", "aten.nll_loss_forward.default", nl0, 5), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(6), L(1), 0);
	check_tensor(&g, &c, 1, DT_FLOAT32, NULL, 0, NULL, 0, 0);
	tg_fini(&g);
}

/* ---- collectives ---- */

static void test_collectives(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t x = tg_input(&g, "x", DT_FLOAT32, L(32, 4096), L(1, 32), 0);
	struct dt_arg ag[] = {a_node(x), a_int(16), a_str(&g, "dp")};
	uint32_t agn = tg_call(&g, "ag", "_c10d_functional.all_gather_into_tensor.default", ag, 3);
	tg_ok(&g, agn, &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(512, 4096), L(4096, 1), 0);
	struct dt_arg wt[] = {a_node(agn)};
	tg_ok(&g, tg_call(&g, "wait", "_c10d_functional.wait_tensor.default", wt, 1), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(512, 4096), L(4096, 1), 0);
	struct dt_arg rs[] = {a_node(x), a_str(&g, "sum"), a_int(8), a_str(&g, "tp")};
	tg_ok(&g, tg_call(&g, "rs", "_c10d_functional.reduce_scatter_tensor.default", rs, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 4096), L(4096, 1), 0);
	struct dt_arg rs2[] = {a_node(x), a_str(&g, "sum"), a_int(3), a_str(&g, "tp")};
	tg_fails(&g, tg_call(&g, "rs2", "_c10d_functional.reduce_scatter_tensor.default", rs2, 4),
		 "dim 0 of size 32 is not divisible by group_size 3");
	struct dt_arg ar[] = {a_node(x), a_str(&g, "avg"), a_str(&g, "tp")};
	tg_ok(&g, tg_call(&g, "ar", "_c10d_functional.all_reduce.default", ar, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(32, 4096), L(4096, 1), 0);
	struct dt_arg a2a[] = {a_node(x), a_ints(&g, L(10, 30)), a_ints(&g, L(16, 16)),
			       a_str(&g, "tp")};
	tg_ok(&g, tg_call(&g, "a2a", "_c10d_functional.all_to_all_single.default", a2a, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(40, 4096), L(4096, 1), 0);
	struct dt_arg a2b[] = {a_node(x), a_none(), a_none(), a_str(&g, "tp")};
	tg_ok(&g, tg_call(&g, "a2b", "_c10d_functional.all_to_all_single.default", a2b, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(32, 4096), L(4096, 1), 0);
	struct dt_arg rd[] = {a_node(x)};
	tg_ok(&g, tg_call(&g, "rd", "dtensor.redistribute", rd, 1), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(32, 4096), L(1, 32), 0);
	tg_fini(&g);
}

/* ---- copies and factories ---- */

static void test_copies(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t tr = tg_input(&g, "tr", DT_FLOAT32, L(4, 8), L(1, 4), 0);
	uint32_t gap = tg_input(&g, "gap", DT_FLOAT32, L(3, 4), L(1, 6), 2);
	tg_ok(&g, unary(&g, "aten.clone.default", tr), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_ok(&g, unary(&g, "aten.clone.default", gap), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 4), L(1, 3), 0);
	/* dense: strides copied exactly, even those of size-1 dims */
	uint32_t odd = tg_input(&g, "odd", DT_FLOAT32, L(2, 1, 3), L(3, 7, 1), 5);
	tg_ok(&g, unary(&g, "aten.clone.default", odd), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 1, 3), L(3, 7, 1), 0);
	/* an empty tensor counts as contiguous, hence dense: strides kept */
	uint32_t none = tg_input(&g, "none", DT_FLOAT32, L(2, 0, 3), L(9, 9, 1), 5);
	tg_ok(&g, unary(&g, "aten.clone.default", none), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 0, 3), L(9, 9, 1), 0);
	tg_ok(&g, unary(&g, "aten.relu.default", none), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 0, 3), L(3, 3, 1), 0);
	struct dt_arg cc[] = {a_node(tr), kw(&g, "memory_format", a_str(&g, "torch.contiguous_format"))};
	tg_ok(&g, tg_call(&g, "cc", "aten.clone.default", cc, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	struct dt_arg tc[] = {a_node(tr), kw(&g, "dtype", a_dtype(DT_BFLOAT16))};
	tg_ok(&g, tg_call(&g, "tc", "aten._to_copy.default", tc, 2), &c);
	check_tensor(&g, &c, 0, DT_BFLOAT16, L(4, 8), L(1, 4), 0);
	struct dt_arg ce[] = {a_node(gap), a_dtype(DT_FLOAT16)};
	tg_ok(&g, tg_call(&g, "ce", "prims.convert_element_type.default", ce, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(3, 4), L(1, 3), 0);
	tg_ok(&g, unary(&g, "aten.contiguous.default", tr), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	uint32_t off = tg_input(&g, "off", DT_FLOAT32, L(2, 3), L(3, 1), 6);
	tg_ok(&g, unary(&g, "aten.contiguous.default", off), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3), L(3, 1), 6);

	/* cat: promotion, memory format, errors */
	uint32_t p = tg_input(&g, "p", DT_FLOAT32, L(2, 3), L(3, 1), 0);
	uint32_t q = tg_input(&g, "q", DT_INT64, L(4, 3), L(1, 4), 0);
	uint32_t ids[] = {p, q};
	struct dt_arg cat[] = {a_nodes(&g, ids, 2)};
	tg_ok(&g, tg_call(&g, "cat", "aten.cat.default", cat, 1), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(6, 3), L(3, 1), 0);
	struct dt_arg cat1[] = {a_nodes(&g, ids, 2), a_int(-1)};
	tg_fails(&g, tg_call(&g, "cat1", "aten.cat.default", cat1, 2),
		 "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 4 for tensor number 1 in the list.");
	uint32_t same[] = {p, p, p};
	struct dt_arg st[] = {a_nodes(&g, same, 3), a_int(1)};
	tg_ok(&g, tg_call(&g, "st", "aten.stack.default", st, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3, 3), L(9, 3, 1), 0);

	/* channels-last inputs keep channels-last through cat, unless mixed */
	uint32_t cl = tg_input(&g, "cl", DT_FLOAT32, L(2, 3, 4, 5), L(60, 1, 15, 3), 0);
	uint32_t nc = tg_input(&g, "nc", DT_FLOAT32, L(2, 3, 4, 5), L(60, 20, 5, 1), 0);
	uint32_t cls[] = {cl, cl}, mixed[] = {cl, nc};
	struct dt_arg ccl[] = {a_nodes(&g, cls, 2)};
	tg_ok(&g, tg_call(&g, "ccl", "aten.cat.default", ccl, 1), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 3, 4, 5), L(60, 1, 15, 3), 0);
	struct dt_arg cmx[] = {a_nodes(&g, mixed, 2), a_int(1)};
	tg_ok(&g, tg_call(&g, "cmx", "aten.cat.default", cmx, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 6, 4, 5), L(120, 20, 5, 1), 0);
	struct dt_arg pcl[] = {a_node(cl), a_ints(&g, L(1, 1))};
	tg_ok(&g, tg_call(&g, "pcl", "aten.constant_pad_nd.default", pcl, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3, 4, 7), L(84, 1, 21, 3), 0);

	/* constant_pad_nd: growing gives a contiguous result, shrinking a clone */
	struct dt_arg pad[] = {a_node(p), a_ints(&g, L(1, 2, 0, 1))};
	tg_ok(&g, tg_call(&g, "pad", "aten.constant_pad_nd.default", pad, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 6), L(6, 1), 0);
	struct dt_arg crop[] = {a_node(tr), a_ints(&g, L(-1, -2))};
	tg_ok(&g, tg_call(&g, "crop", "aten.constant_pad_nd.default", crop, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 5), L(1, 4), 0);
	tg_fini(&g);
}

static void test_factories(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t tr = tg_input(&g, "tr", DT_FLOAT16, L(4, 8), L(1, 4), 0);
	struct dt_arg ol[] = {a_node(tr), kw(&g, "dtype", a_dtype(DT_FLOAT32)),
			      kw(&g, "memory_format", a_str(&g, "torch.preserve_format"))};
	tg_ok(&g, tg_call(&g, "ol", "aten.ones_like.default", ol, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	uint32_t one = tg_scalar(&g, "one", DT_FLOAT16);
	struct dt_arg ex[] = {a_node(one), a_ints(&g, L(3, 5))};
	uint32_t e = tg_call(&g, "e", "aten.expand.default", ex, 2);
	tg_ok(&g, e, &c);
	tg_ok(&g, unary(&g, "aten.zeros_like.default", e), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(3, 5), L(5, 1), 0);

	struct dt_arg fi[] = {a_ints(&g, L(2, 3)), a_int(7)};
	tg_ok(&g, tg_call(&g, "fi", "aten.full.default", fi, 2), &c);
	check_tensor(&g, &c, 0, DT_INT64, L(2, 3), L(3, 1), 0);
	struct dt_arg fb[] = {a_ints(&g, L(2)), a_bool(true)};
	tg_ok(&g, tg_call(&g, "fb", "aten.full.default", fb, 2), &c);
	assert_int_equal(c.out[0].dtype, DT_BOOL);
	struct dt_arg ff[] = {a_ints(&g, L(2)), a_float(0.5), kw(&g, "dtype", a_dtype(DT_FLOAT64))};
	tg_ok(&g, tg_call(&g, "ff", "aten.full.default", ff, 3), &c);
	assert_int_equal(c.out[0].dtype, DT_FLOAT64);
	struct dt_arg zs[] = {a_ints(&g, L(2, -1))};
	tg_fails(&g, tg_call(&g, "zs", "aten.zeros.default", zs, 1),
		 "Trying to create tensor with negative dimension -1");

	struct dt_arg ar[] = {a_int(10)};
	tg_ok(&g, tg_call(&g, "ar", "aten.arange.default", ar, 1), &c);
	check_tensor(&g, &c, 0, DT_INT64, L(10), L(1), 0);
	struct dt_arg ar2[] = {a_int(1), a_float(2.5), a_float(0.5)};
	tg_ok(&g, tg_call(&g, "ar2", "aten.arange.start_step", ar2, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3), L(1), 0);
	struct dt_arg ar3[] = {a_int(5), a_int(1)};
	tg_fails(&g, tg_call(&g, "ar3", "aten.arange.start", ar3, 2),
		 "upper bound and larger bound inconsistent with step sign");
	struct dt_arg sc[] = {a_int(3)};
	tg_ok(&g, tg_call(&g, "sc", "aten.scalar_tensor.default", sc, 1), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, NULL, 0, NULL, 0, 0);
	tg_fini(&g);
}

/* ---- masks, index ops, bitwise/logical, in-place ops, mse_loss ---- */

static void test_masks_index_inplace(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t tr = tg_input(&g, "tr", DT_FLOAT32, L(4, 8), L(1, 4), 0);
	uint32_t ct = tg_input(&g, "ct", DT_FLOAT32, L(4, 8), L(8, 1), 0);
	uint32_t off = tg_input(&g, "off", DT_FLOAT32, L(3, 2), L(1, 6), 5);
	uint32_t i64 = tg_input(&g, "i64", DT_INT64, L(4, 8), L(1, 4), 0);
	uint32_t i32 = tg_input(&g, "i32", DT_INT32, L(8), L(1), 0);
	uint32_t m = tg_input(&g, "m", DT_BOOL, L(4, 8), L(8, 1), 0);
	uint32_t idx = tg_input(&g, "idx", DT_INT64, L(5), L(1), 0);
	uint32_t d = tg_scalar(&g, "d", DT_FLOAT64);
	/* tril of a transposed tensor: a contiguous result */
	tg_ok(&g, unary(&g, "aten.tril.default", tr), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	tg_fails(&g, unary(&g, "aten.triu.default", i32), "at least 2 dimensions");
	/* bitwise: promotion, TensorIterator strides, floats refused */
	tg_ok(&g, binary(&g, "aten.bitwise_and.Tensor", a_node(i64), a_node(i32)), &c);
	check_tensor(&g, &c, 0, DT_INT64, L(4, 8), L(1, 4), 0);
	tg_ok(&g, binary(&g, "aten.bitwise_or.Scalar", a_node(m), a_int(3)), &c);
	check_tensor(&g, &c, 0, DT_INT64, L(4, 8), L(8, 1), 0);
	tg_fails(&g, unary(&g, "aten.bitwise_not.default", ct), "not implemented for 'float32'");
	tg_ok(&g, binary(&g, "aten.logical_xor.default", a_node(tr), a_node(i32)), &c);
	check_tensor(&g, &c, 0, DT_BOOL, L(4, 8), L(1, 4), 0);
	/* fill keeps empty_like's strides; fill_ is self, offset included */
	tg_ok(&g, binary(&g, "aten.fill.Scalar", a_node(tr), a_float(2.5)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_ok(&g, binary(&g, "aten.fill_.Scalar", a_node(off), a_int(1)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 2), L(1, 6), 5);
	tg_fails(&g, binary(&g, "aten.fill_.Tensor", a_node(ct), a_node(i32)),
		 "0-dimension value tensor");
	tg_ok(&g, binary(&g, "aten.sub_.Tensor", a_node(tr), a_node(d)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	tg_fails(&g, binary(&g, "aten.mul_.Tensor", a_node(i64), a_node(ct)),
		 "result type float32 can't be cast to the desired output type int64");
	tg_fails(&g, binary(&g, "aten.add_.Tensor", a_node(i32), a_node(i64)),
		 "output with shape [8] doesn't match the broadcast shape [4, 8]");
	/* mse_loss: TensorIterator strides (none), 0-d (mean); backward
	 * contiguous in self's dtype */
	struct dt_arg mn[] = {a_node(tr), a_node(ct), a_int(0)};
	tg_ok(&g, tg_call(&g, "mn", "aten.mse_loss.default", mn, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(1, 4), 0);
	struct dt_arg mm[] = {a_node(ct), a_node(d)};
	tg_ok(&g, tg_call(&g, "mm", "aten.mse_loss.default", mm, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, NULL, 0, NULL, 0, 0); /* a 0-d f64 does not promote */
	struct dt_arg mb[] = {a_node(d), a_node(tr), a_node(ct), a_int(1)};
	tg_fails(&g, tg_call(&g, "mb", "aten.mse_loss_backward.default", mb, 4),
		 "Found dtype float64 but expected float32");
	uint32_t g0 = tg_scalar(&g, "g0", DT_FLOAT32);
	struct dt_arg mb2[] = {a_node(g0), a_node(tr), a_node(ct), a_int(2)};
	tg_ok(&g, tg_call(&g, "mb2", "aten.mse_loss_backward.default", mb2, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	/* index ops: contiguous results */
	struct dt_arg is[] = {a_node(tr), a_int(-1), a_node(idx)};
	tg_ok(&g, tg_call(&g, "is", "aten.index_select.default", is, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 5), L(5, 1), 0);
	struct dt_arg ia[] = {a_node(tr), a_int(1), a_node(idx), a_node(ct)};
	tg_fails(&g, tg_call(&g, "ia", "aten.index_add.default", ia, 4),
		 "Number of indices (5) should be equal to source.size(dim): (8)");
	uint32_t gi = tg_input(&g, "gi", DT_INT64, L(4, 2), L(2, 1), 0);
	struct dt_arg ga[] = {a_node(tr), a_int(1), a_node(gi)};
	tg_ok(&g, tg_call(&g, "ga", "aten.gather.default", ga, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 2), L(2, 1), 0);
	struct dt_arg gb[] = {a_node(tr), a_int(0), a_node(i32)};
	tg_fails(&g, tg_call(&g, "gb", "aten.gather.default", gb, 3), "Expected dtype int64 for index");
	struct dt_arg sa[] = {a_node(tr), a_int(1), a_node(gi), a_node(gi)};
	tg_fails(&g, tg_call(&g, "sa", "aten.scatter_add.default", sa, 4),
		 "Expected self.dtype to be equal to src.dtype");
	struct dt_arg rp[] = {a_node(tr), a_ints(&g, L(2, 1, 3))};
	tg_ok(&g, tg_call(&g, "rp", "aten.repeat.default", rp, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 4, 24), L(96, 24, 1), 0);
	struct dt_arg rq[] = {a_node(tr), a_ints(&g, L(2))};
	tg_fails(&g, tg_call(&g, "rq", "aten.repeat.default", rq, 2), "can not be smaller");
	struct dt_arg ri[] = {a_node(idx), kw(&g, "output_size", a_int(9))};
	tg_ok(&g, tg_call(&g, "ri", "aten.repeat_interleave.Tensor", ri, 2), &c);
	check_tensor(&g, &c, 0, DT_INT64, L(9), L(1), 0);
	tg_fini(&g);
}

/* Sizes from arguments are bounded (2^60 elements, as the reader bounds
 * inputs), so no int64 arithmetic overflows; each is a clean error. */
static void test_huge_sizes(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	const int64_t big = (int64_t)1 << 40;
	uint32_t x = tg_input(&g, "x", DT_FLOAT32, L(4, 8), L(8, 1), 0);
	uint32_t col = tg_input(&g, "col", DT_FLOAT32, L(big, 1), L(1, 1), 0);
	uint32_t row = tg_input(&g, "row", DT_FLOAT32, L(1, big), L(big, 1), 0);
	struct dt_arg ex[] = {a_node(x), a_ints(&g, L(big, big, 4, 8))};
	tg_fails(&g, tg_call(&g, "ex", "aten.expand.default", ex, 2), "more than 2^60 elements");
	tg_fails(&g, binary(&g, "aten.add.Tensor", a_node(col), a_node(row)),
		 "more than 2^60 elements");
	struct dt_arg vw[] = {a_node(x), a_ints(&g, L(INT64_MAX, 2, -1))};
	tg_fails(&g, tg_call(&g, "vw", "aten.view.default", vw, 2), "is invalid for input of size 32");
	struct dt_arg fu[] = {a_ints(&g, L(big, big)), a_float(0.0)};
	tg_fails(&g, tg_call(&g, "fu", "aten.full.default", fu, 2), "more than 2^60 elements");
	struct dt_arg ag[] = {a_node(x), a_int(INT64_MAX / 2), a_str(&g, "dp")};
	tg_fails(&g, tg_call(&g, "ag", "_c10d_functional.all_gather_into_tensor.default", ag, 3),
		 "too large");
	struct dt_arg sl[] = {a_node(x), a_int(1), a_int(0), a_int(INT64_MAX), a_int(INT64_MAX)};
	tg_fails(&g, tg_call(&g, "sl", "aten.slice.Tensor", sl, 5), "slice step");
	struct dt_arg sp[] = {a_node(x), a_int(INT64_MAX)};
	struct dt_shape_ctx c;
	tg_ok(&g, tg_call(&g, "sp", "aten.split.Tensor", sp, 2), &c);
	assert_int_equal(c.nout, 1);
	struct dt_arg ch[] = {a_node(x), a_int(INT64_MAX)};
	tg_ok(&g, tg_call(&g, "ch", "aten.chunk.default", ch, 2), &c);
	assert_int_equal(c.nout, 4);
	struct dt_arg pd[] = {a_node(x), a_ints(&g, L(INT64_MAX, 1))};
	tg_fails(&g, tg_call(&g, "pd", "aten.constant_pad_nd.default", pd, 2), "too large");
	struct dt_arg ar[] = {a_float(1e300)};
	tg_fails(&g, tg_call(&g, "ar", "aten.arange.default", ar, 1), "unsupported range");
	struct dt_arg as[] = {a_node(x), a_ints(&g, L(4, 8)), a_ints(&g, L(INT64_MAX / 2, 1))};
	tg_fails(&g, tg_call(&g, "as", "aten.as_strided.default", as, 3), "beyond 2^60");
	tg_fini(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elementwise_strides),
		cmocka_unit_test(test_device_rules),
		cmocka_unit_test(test_type_promotion),
		cmocka_unit_test(test_reductions),
		cmocka_unit_test(test_matmul_nn),
		cmocka_unit_test(test_collectives),
		cmocka_unit_test(test_copies),
		cmocka_unit_test(test_factories),
		cmocka_unit_test(test_masks_index_inplace),
		cmocka_unit_test(test_huge_sizes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
