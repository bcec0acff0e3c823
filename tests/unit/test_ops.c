// SPDX-License-Identifier: MIT
/* test_ops.c: the op table (lookup, parsed schemas, flags), argument
 * binding and its errors, dt_infer_node's own errors, and the view ops'
 * strides and offsets. */
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

/* ---- table ---- */

static void test_lookup_roundtrip(void **state)
{
	(void)state;
	for (int op = 1; op < DT_NOPS; op++) {
		const struct dt_op_info *info = dt_op_get((enum dt_op)op);
		assert_int_equal(dt_op_lookup(info->target), op);
		assert_non_null(info->shape);
	}
	assert_true(DT_NOPS > 150);
	assert_int_equal(dt_op_lookup("aten.foo.default"), DT_OP_UNKNOWN);
	assert_int_equal(dt_op_lookup("aten.add"), DT_OP_UNKNOWN);
	assert_int_equal(dt_op_lookup(""), DT_OP_UNKNOWN);
	assert_int_equal(dt_op_lookup(NULL), DT_OP_UNKNOWN);
	assert_int_equal(dt_op_lookup("aten.mm.default"), DT_OP_MM);
	assert_int_equal(dt_op_lookup("operator.getitem"), DT_OP_GETITEM);
	assert_string_equal(dt_op_get(DT_OP_ALL_GATHER)->name, "all_gather_into_tensor");
	assert_string_equal(dt_op_get(DT_OP_ADD_TENSOR)->name, "add");
	assert_string_equal(dt_op_get(DT_OP_GETITEM)->name, "getitem");
}

static void test_schema_parsed(void **state)
{
	(void)state;
	const struct dt_op_info *s = dt_op_get(DT_OP_SUM_DIM);
	assert_int_equal(s->nparams, 4);
	const char *names[] = {"self", "dim", "keepdim", "dtype"};
	const uint8_t kinds[] = {DT_PARAM_TENSOR, DT_PARAM_INTS, DT_PARAM_BOOL,
				 DT_PARAM_DTYPE};
	for (int i = 0; i < 4; i++) {
		assert_string_equal(s->params[i].name, names[i]);
		assert_int_equal(s->params[i].kind, kinds[i]);
	}
	assert_true(s->params[1].optional && !s->params[1].has_default);
	assert_true(!s->params[2].optional && s->params[2].has_default);
	assert_false(s->params[2].kwarg_only);
	assert_true(s->params[3].kwarg_only && s->params[3].optional);

	const struct dt_op_info *f = dt_op_get(DT_OP_FULL);
	assert_int_equal(f->nparams, 6);
	assert_int_equal(f->params[1].kind, DT_PARAM_SCALAR);
	assert_false(f->params[1].kwarg_only);
	assert_true(f->params[2].kwarg_only);
	assert_string_equal(f->params[5].name, "pin_memory");

	const struct dt_op_info *g = dt_op_get(DT_OP_GELU);
	assert_int_equal(g->nparams, 2);
	assert_int_equal(g->params[1].kind, DT_PARAM_STR);
	assert_int_equal(dt_op_get(DT_OP_CAT)->params[0].kind, DT_PARAM_TENSORS);
	assert_int_equal(dt_op_get(DT_OP_PLACEHOLDER)->nparams, 0);
}

static void test_flags(void **state)
{
	(void)state;
	assert_true(dt_op_has(DT_OP_VIEW, DT_OPF_VIEW));
	assert_true(dt_op_has(DT_OP_VIEW, DT_OPF_PURE));
	assert_false(dt_op_has(DT_OP_UNSAFE_VIEW, DT_OPF_VIEW));
	assert_true(dt_op_has(DT_OP_SPLIT, DT_OPF_MULTI | DT_OPF_VIEW));
	assert_true(dt_op_has(DT_OP_NATIVE_LAYER_NORM, DT_OPF_MULTI));
	assert_true(dt_op_has(DT_OP_MAX_DIM, DT_OPF_MULTI));
	assert_false(dt_op_has(DT_OP_SOFTMAX, DT_OPF_MULTI));
	assert_true(dt_op_has(DT_OP_ALL_GATHER, DT_OPF_COLLECTIVE));
	assert_false(dt_op_has(DT_OP_ALL_GATHER, DT_OPF_PURE));
	assert_false(dt_op_has(DT_OP_WAIT, DT_OPF_PURE));
	assert_true(dt_op_has(DT_OP_WAIT, DT_OPF_WAIT));
	assert_true(dt_op_has(DT_OP_MM, DT_OPF_MATMUL));
	assert_true(dt_op_has(DT_OP_ADD_TENSOR, DT_OPF_ELEMENTWISE | DT_OPF_PURE));
	assert_true(dt_op_has(DT_OP_SUM_DIM, DT_OPF_REDUCTION));
	assert_true(dt_op_has(DT_OP_FULL, DT_OPF_CREATION));
	assert_true(dt_op_has(DT_OP_OUTPUT, DT_OPF_STRUCTURAL));
	/* in-place targets are flagged (the verifier's check keys on it);
	 * their out-of-place twins are not */
	assert_int_equal(dt_op_lookup("aten.fill_.Scalar"), DT_OP_FILL_INPLACE_SCALAR);
	assert_true(dt_op_has(DT_OP_FILL_INPLACE_SCALAR, DT_OPF_INPLACE));
	assert_true(dt_op_has(DT_OP_SUB_INPLACE, DT_OPF_INPLACE));
	assert_true(dt_op_has(DT_OP_MASKED_FILL_INPLACE_TENSOR, DT_OPF_INPLACE));
	assert_false(dt_op_has(DT_OP_FILL_SCALAR, DT_OPF_INPLACE));
	assert_false(dt_op_has(DT_OP_SUB_TENSOR, DT_OPF_INPLACE));
	assert_int_equal(dt_op_lookup("aten.tril.default"), DT_OP_TRIL);
	assert_int_equal(dt_op_lookup("aten.mse_loss_backward.default"), DT_OP_MSE_LOSS_BACKWARD);
}

/* ---- binding ---- */

static void test_bind_positional_and_keywords(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	uint32_t x = tg_input(&g, "x", DT_FLOAT32, L(2, 3, 4), L(12, 4, 1), 0);
	struct dt_arg args[] = {a_node(x), kw(&g, "keepdim", a_bool(true)),
				kw(&g, "dim", a_ints(&g, L(1)))};
	uint32_t s = tg_call(&g, "s", "aten.sum.dim_IntList", args, NARGS(args));
	struct dt_bound_args b;
	assert_int_equal(dt_op_bind(g.m, dt_node_get(g.m, s), &b, &g.d), DT_OK);
	assert_int_equal(b.nparams, 4);
	assert_int_equal(b.arg[0]->v.node, x);
	assert_int_equal(b.arg[1]->kind, DT_ARG_INTS);
	assert_true(b.arg[2]->v.b);
	assert_null(b.arg[3]); /* omitted */
	struct dt_shape_ctx c;
	tg_ok(&g, s, &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 1, 4), L(4, 4, 1), 0);

	/* none for an optional parameter binds as NULL */
	struct dt_arg args2[] = {a_node(x), a_none()};
	uint32_t s2 = tg_call(&g, "s2", "aten.sum.dim_IntList", args2, NARGS(args2));
	assert_int_equal(dt_op_bind(g.m, dt_node_get(g.m, s2), &b, &g.d), DT_OK);
	assert_null(b.arg[1]);
	tg_ok(&g, s2, &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, NULL, 0, NULL, 0, 0);
	assert_int_equal(g.count, 0);
	tg_fini(&g);
}

static void test_bind_errors(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	uint32_t a = tg_input(&g, "a", DT_FLOAT32, L(4, 8), L(8, 1), 0);
	uint32_t b = tg_input(&g, "b", DT_FLOAT32, L(8, 2), L(2, 1), 0);

	struct dt_arg three[] = {a_node(a), a_node(b), a_node(b)};
	tg_fails(&g, tg_call(&g, "mm_3", "aten.mm.default", three, 3),
		 "node 'mm_3': aten.mm.default expects 2 positional arguments, got 3");
	assert_string_equal(g.last, "node 'mm_3': aten.mm.default expects 2 positional arguments, got 3");

	struct dt_arg one[] = {a_node(a)};
	tg_fails(&g, tg_call(&g, "x", "aten.mm.default", one, 1),
		 "node 'x': missing argument 'mat2' of aten.mm.default");

	struct dt_arg bad_kind[] = {a_node(a), a_str(&g, "1")};
	tg_fails(&g, tg_call(&g, "x", "aten.sum.dim_IntList", bad_kind, 2),
		 "node 'x': argument 'dim' of aten.sum.dim_IntList expects int[], got str");

	struct dt_arg unknown[] = {a_node(a), a_node(a), kw(&g, "foo", a_int(1))};
	tg_fails(&g, tg_call(&g, "x", "aten.add.Tensor", unknown, 3),
		 "node 'x': unknown keyword argument 'foo' for aten.add.Tensor");

	/* alpha is keyword-only */
	struct dt_arg alpha_pos[] = {a_node(a), a_node(a), a_int(2)};
	tg_fails(&g, tg_call(&g, "x", "aten.add.Tensor", alpha_pos, 3),
		 "expects 2 positional arguments, got 3");

	/* at most / twice / none for a non-optional parameter */
	struct dt_arg many[] = {a_node(a), a_int(1), a_int(0), a_int(1)};
	tg_fails(&g, tg_call(&g, "x", "aten.split.Tensor", many, 4),
		 "aten.split.Tensor expects at most 3 positional arguments, got 4");
	struct dt_arg twice[] = {a_node(a), a_int(1), kw(&g, "self", a_node(a))};
	tg_fails(&g, tg_call(&g, "x", "aten.split.Tensor", twice, 3),
		 "argument 'self' of aten.split.Tensor given more than once");
	struct dt_arg none_dim[] = {a_node(a), a_none()};
	tg_fails(&g, tg_call(&g, "x", "aten.unsqueeze.default", none_dim, 2),
		 "argument 'dim' of aten.unsqueeze.default expects int, got none");

	/* a number for a tensor: only elementwise ops take one */
	struct dt_arg num[] = {a_node(a), a_float(2.0)};
	tg_fails(&g, tg_call(&g, "x", "aten.mm.default", num, 2),
		 "argument 'mat2' of aten.mm.default expects tensor, got float");
	struct dt_shape_ctx c;
	tg_ok(&g, tg_call(&g, "d", "aten.div.Tensor", num, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);

	/* kinds that convert: an int for a float, a single int for int[] */
	struct dt_arg ln[] = {a_node(a), a_int(8), a_none(), a_none(), a_int(0)};
	tg_ok(&g, tg_call(&g, "ln", "aten.native_layer_norm.default", ln, 5), &c);
	assert_int_equal(c.nout, 3);
	tg_fini(&g);
}

static void test_infer_errors(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_node_init in = {0};
	in.kind = DT_NODE_PLACEHOLDER;
	in.name = dt_str_intern(g.m, "bare");
	in.line = 3;
	uint32_t bare = dt_module_add_node(g.m, &in);
	dt_graph_append(g.m, bare);
	tg_fails(&g, bare, "placeholder 'bare' has no <tensor>");

	uint32_t a = tg_input(&g, "a", DT_FLOAT32, L(4, 8), L(8, 1), 0);
	struct dt_arg one[] = {a_node(a)};
	tg_fails(&g, tg_call(&g, "n", "aten.foo.default", one, 1),
		 "node 'n': unknown target 'aten.foo.default' (not in dtopt's op table)");

	struct dt_arg on_bare[] = {a_node(bare)};
	tg_fails(&g, tg_call(&g, "r", "aten.relu.default", on_bare, 1),
		 "node 'r': input 'bare' has no tensor metadata");

	uint32_t b = tg_input(&g, "b", DT_FLOAT32, L(16, 2), L(2, 1), 0);
	struct dt_arg ab[] = {a_node(a), a_node(b)};
	tg_fails(&g, tg_call(&g, "mm_1", "aten.mm.default", ab, 2),
		 "node 'mm_1': aten.mm.default: inner dimensions differ: [4, 8] @ [16, 2]");

	/* getitem: selects a result; out of range; a tuple used as a tensor */
	struct dt_shape_ctx c;
	struct dt_arg sp[] = {a_node(a), a_int(3)};
	uint32_t split = tg_call(&g, "split", "aten.split.Tensor", sp, 2);
	tg_ok(&g, split, &c);
	assert_int_equal(c.nout, 2);
	struct dt_arg gi[] = {a_node(split), a_int(1)};
	tg_ok(&g, tg_call(&g, "getitem", "operator.getitem", gi, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(1, 8), L(8, 1), 24);
	struct dt_arg gi2[] = {a_node(split), a_int(2)};
	tg_fails(&g, tg_call(&g, "g2", "operator.getitem", gi2, 2),
		 "index 2 out of range for 'split' (2 results)");
	struct dt_arg single[] = {a_node(a), a_int(0)};
	tg_fails(&g, tg_call(&g, "g3", "operator.getitem", single, 2),
		 "'a' is a single tensor, not a tuple");
	struct dt_arg last[] = {a_node(split), a_int(-2)};
	tg_ok(&g, tg_call(&g, "g4", "operator.getitem", last, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 8), L(8, 1), 0);
	tg_fails(&g, tg_call(&g, "p", "placeholder", one, 1), "is a node kind, not a call target");
	struct dt_arg tuple[] = {a_node(split)};
	tg_fails(&g, tg_call(&g, "r2", "aten.relu.default", tuple, 1),
		 "refers to 'split', which has 2 results");

	/* the output node has no results; placeholders keep theirs */
	struct dt_node_init out = {0};
	out.kind = DT_NODE_OUTPUT;
	out.name = dt_str_intern(g.m, "output");
	out.args = one;
	out.nargs = 1;
	uint32_t o = dt_module_add_node(g.m, &out);
	dt_graph_append(g.m, o);
	tg_ok(&g, o, &c);
	assert_int_equal(c.nout, 0);
	tg_ok(&g, a, &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 8), L(8, 1), 0);
	tg_fini(&g);
}

/* ---- views ---- */

static uint32_t unary(struct tg *g, const char *target, uint32_t x)
{
	struct dt_arg args[] = {a_node(x)};
	return tg_call(g, target, target, args, 1);
}

static uint32_t with_ints(struct tg *g, const char *target, uint32_t x,
			  const int64_t *v, int n)
{
	struct dt_arg args[] = {a_node(x), a_ints(g, v, n)};
	return tg_call(g, target, target, args, 2);
}

static void test_view_vs_reshape(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	/* a transposed [4, 6] -> [6, 4] with strides [1, 6] */
	uint32_t x = tg_input(&g, "x", DT_FLOAT32, L(4, 6), L(6, 1), 0);
	uint32_t t = unary(&g, "aten.t.default", x);
	tg_ok(&g, t, &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(6, 4), L(1, 6), 0);
	tg_fails(&g, with_ints(&g, "aten.view.default", t, L(24)),
		 "view size is not compatible with input tensor's size and stride");
	tg_ok(&g, with_ints(&g, "aten.reshape.default", t, L(24)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(24), L(1), 0);
	/* splitting a dim of the transposed tensor is a valid view */
	tg_ok(&g, with_ints(&g, "aten.view.default", t, L(3, 2, 4)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 2, 4), L(2, 1, 6), 0);
	tg_ok(&g, with_ints(&g, "aten.reshape.default", t, L(2, -1, 4)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3, 4), L(3, 1, 6), 0);

	/* a column slice (offset 2, row stride 16) merges rows only in views
	 * that keep the gap */
	uint32_t s = tg_input(&g, "s", DT_FLOAT16, L(4, 8), L(16, 1), 2);
	tg_ok(&g, with_ints(&g, "aten.view.default", s, L(4, 2, -1)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(4, 2, 4), L(16, 4, 1), 2);
	tg_fails(&g, with_ints(&g, "aten.view.default", s, L(32)), "Use .reshape");
	tg_ok(&g, with_ints(&g, "aten.reshape.default", s, L(32)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(32), L(1), 0);
	tg_ok(&g, with_ints(&g, "aten._unsafe_view.default", s, L(2, 2, 8)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT16, L(2, 2, 8), L(32, 16, 1), 2);
	tg_fails(&g, with_ints(&g, "aten._unsafe_view.default", s, L(32)), "Use .reshape");
	tg_fails(&g, with_ints(&g, "aten.view.default", s, L(5, -1)),
		 "shape '[5, -1]' is invalid for input of size 32");
	tg_fails(&g, with_ints(&g, "aten.view.default", s, L(-1, -1)),
		 "only one dimension can be inferred");
	/* a size-1 dim never splits a chunk, whatever its stride */
	uint32_t odd = tg_input(&g, "odd", DT_FLOAT32, L(2, 1, 3), L(3, 7, 1), 0);
	tg_ok(&g, with_ints(&g, "aten.view.default", odd, L(6)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(6), L(1), 0);
	/* a 0-d tensor views as any shape of one element with strides 1 */
	uint32_t z = tg_scalar(&g, "z", DT_INT64);
	tg_ok(&g, with_ints(&g, "aten.view.default", z, L(1, 1)), &c);
	check_tensor(&g, &c, 0, DT_INT64, L(1, 1), L(1, 1), 0);
	tg_fini(&g);
}

static void test_unsqueeze_expand_permute(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t v = tg_input(&g, "v", DT_FLOAT32, L(3), L(2), 5);
	struct dt_arg u0[] = {a_node(v), a_int(0)};
	tg_ok(&g, tg_call(&g, "u0", "aten.unsqueeze.default", u0, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(1, 3), L(6, 2), 5);
	struct dt_arg u1[] = {a_node(v), a_int(-1)};
	tg_ok(&g, tg_call(&g, "u1", "aten.unsqueeze.default", u1, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 1), L(2, 1), 5);
	struct dt_arg u2[] = {a_node(v), a_int(2)};
	tg_fails(&g, tg_call(&g, "u2", "aten.unsqueeze.default", u2, 2),
		 "Dimension out of range (expected to be in range of [-2, 1], but got 2)");

	tg_ok(&g, with_ints(&g, "aten.expand.default", v, L(2, 3)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3), L(0, 2), 5);
	tg_ok(&g, with_ints(&g, "aten.expand.default", v, L(1, -1)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(1, 3), L(6, 2), 5);
	uint32_t col = tg_input(&g, "col", DT_FLOAT32, L(3, 1), L(1, 1), 0);
	tg_ok(&g, with_ints(&g, "aten.expand.default", col, L(2, 3, 4)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(2, 3, 4), L(0, 1, 0), 0);
	tg_fails(&g, with_ints(&g, "aten.expand.default", col, L(2, 4)),
		 "The expanded size of the tensor (2) must match the existing size (3) at non-singleton dimension 0");
	tg_fails(&g, with_ints(&g, "aten.expand.default", col, L(4)),
		 "the number of sizes provided (1) must be greater or equal");
	uint32_t z = tg_scalar(&g, "z", DT_FLOAT32);
	tg_ok(&g, with_ints(&g, "aten.expand.default", z, L(1, 4)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(1, 4), L(0, 0), 0);

	uint32_t x = tg_input(&g, "x", DT_BFLOAT16, L(2, 3, 4), L(12, 4, 1), 0);
	tg_ok(&g, with_ints(&g, "aten.permute.default", x, L(2, 0, -2)), &c);
	check_tensor(&g, &c, 0, DT_BFLOAT16, L(4, 2, 3), L(1, 12, 4), 0);
	tg_fails(&g, with_ints(&g, "aten.permute.default", x, L(0, 0, 1)),
		 "repeated dim in permute");
	tg_fails(&g, with_ints(&g, "aten.permute.default", x, L(1, 0)),
		 "number of dims don't match in permute");
	struct dt_arg tr[] = {a_node(x), a_int(0), a_int(-1)};
	tg_ok(&g, tg_call(&g, "tr", "aten.transpose.int", tr, 3), &c);
	check_tensor(&g, &c, 0, DT_BFLOAT16, L(4, 3, 2), L(1, 4, 12), 0);
	tg_fails(&g, unary(&g, "aten.t.default", x), "t() expects a tensor with <= 2 dimensions, but self is 3D");

	/* squeeze variants keep the other strides */
	uint32_t q = tg_input(&g, "q", DT_FLOAT32, L(1, 3, 1, 2), L(6, 2, 2, 1), 1);
	tg_ok(&g, unary(&g, "aten.squeeze.default", q), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 2), L(2, 1), 1);
	struct dt_arg sq[] = {a_node(q), a_int(-2)};
	tg_ok(&g, tg_call(&g, "sq", "aten.squeeze.dim", sq, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(1, 3, 2), L(6, 2, 1), 1);
	tg_ok(&g, with_ints(&g, "aten.squeeze.dims", q, L(0, 1)), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 1, 2), L(2, 2, 1), 1);
	tg_fini(&g);
}

static void test_slice_select_narrow(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t x = tg_input(&g, "x", DT_FLOAT32, L(10, 8), L(8, 1), 4);
	struct dt_arg s1[] = {a_node(x), a_int(0), a_int(2), a_int(9), a_int(3)};
	tg_ok(&g, tg_call(&g, "s1", "aten.slice.Tensor", s1, 5), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 8), L(24, 1), 20);
	/* negative start, end past the size (INT64_MAX as make_fx writes) */
	struct dt_arg s2[] = {a_node(x), a_int(1), a_int(-3), a_int(INT64_MAX)};
	tg_ok(&g, tg_call(&g, "s2", "aten.slice.Tensor", s2, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(10, 3), L(8, 1), 9);
	/* defaults: dim 0, start None, end by keyword */
	struct dt_arg s3[] = {a_node(x), kw(&g, "end", a_int(-7))};
	tg_ok(&g, tg_call(&g, "s3", "aten.slice.Tensor", s3, 2), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(3, 8), L(8, 1), 4);
	struct dt_arg s4[] = {a_node(x), a_int(0), a_int(5), a_int(2)};
	tg_ok(&g, tg_call(&g, "s4", "aten.slice.Tensor", s4, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(0, 8), L(8, 1), 44);
	struct dt_arg s5[] = {a_node(x), a_int(0), a_int(0), a_int(4), a_int(0)};
	tg_fails(&g, tg_call(&g, "s5", "aten.slice.Tensor", s5, 5), "slice step must be positive");

	struct dt_arg sel[] = {a_node(x), a_int(1), a_int(-1)};
	tg_ok(&g, tg_call(&g, "sel", "aten.select.int", sel, 3), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(10), L(8), 11);
	struct dt_arg sel2[] = {a_node(x), a_int(0), a_int(10)};
	tg_fails(&g, tg_call(&g, "sel2", "aten.select.int", sel2, 3),
		 "select(): index 10 out of range for tensor of size [10, 8] at dimension 0");

	struct dt_arg nar[] = {a_node(x), a_int(1), a_int(-4), a_int(3)};
	tg_ok(&g, tg_call(&g, "nar", "aten.narrow.default", nar, 4), &c);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(10, 3), L(8, 1), 8);
	struct dt_arg nar2[] = {a_node(x), a_int(1), a_int(6), a_int(3)};
	tg_fails(&g, tg_call(&g, "nar2", "aten.narrow.default", nar2, 4),
		 "start (6) + length (3) exceeds dimension size (8).");
	tg_fini(&g);
}

static void test_split_family(void **state)
{
	(void)state;
	struct tg g;
	tg_init(&g);
	struct dt_shape_ctx c;
	uint32_t x = tg_input(&g, "x", DT_FLOAT32, L(10, 4), L(4, 1), 0);
	struct dt_arg sp[] = {a_node(x), a_int(4)};
	tg_ok(&g, tg_call(&g, "sp", "aten.split.Tensor", sp, 2), &c);
	assert_int_equal(c.nout, 3);
	check_tensor(&g, &c, 0, DT_FLOAT32, L(4, 4), L(4, 1), 0);
	check_tensor(&g, &c, 1, DT_FLOAT32, L(4, 4), L(4, 1), 16);
	check_tensor(&g, &c, 2, DT_FLOAT32, L(2, 4), L(4, 1), 32);

	struct dt_arg ch[] = {a_node(x), a_int(3), kw(&g, "dim", a_int(1))};
	tg_ok(&g, tg_call(&g, "ch", "aten.chunk.default", ch, 3), &c);
	assert_int_equal(c.nout, 2); /* ceil(4/3) = 2 per chunk */
	check_tensor(&g, &c, 1, DT_FLOAT32, L(10, 2), L(4, 1), 2);

	struct dt_arg sws[] = {a_node(x), a_ints(&g, L(1, 6, 3))};
	tg_ok(&g, tg_call(&g, "sws", "aten.split_with_sizes.default", sws, 2), &c);
	assert_int_equal(c.nout, 3);
	check_tensor(&g, &c, 1, DT_FLOAT32, L(6, 4), L(4, 1), 4);
	check_tensor(&g, &c, 2, DT_FLOAT32, L(3, 4), L(4, 1), 28);
	struct dt_arg bad[] = {a_node(x), a_ints(&g, L(1, 6))};
	tg_fails(&g, tg_call(&g, "bad", "aten.split_with_sizes.default", bad, 2),
		 "split_with_sizes expects split_sizes to sum exactly to 10");

	struct dt_arg ub[] = {a_node(x), a_int(1)};
	tg_ok(&g, tg_call(&g, "ub", "aten.unbind.int", ub, 2), &c);
	assert_int_equal(c.nout, 4);
	check_tensor(&g, &c, 3, DT_FLOAT32, L(10), L(4), 3);

	uint32_t big = tg_input(&g, "big", DT_FLOAT32, L(100), L(1), 0);
	struct dt_arg many[] = {a_node(big), a_int(1)};
	tg_fails(&g, tg_call(&g, "many", "aten.split.Tensor", many, 2),
		 "produces 100 results");
	tg_fini(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup_roundtrip),
		cmocka_unit_test(test_schema_parsed),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_bind_positional_and_keywords),
		cmocka_unit_test(test_bind_errors),
		cmocka_unit_test(test_infer_errors),
		cmocka_unit_test(test_view_vs_reshape),
		cmocka_unit_test(test_unsqueeze_expand_permute),
		cmocka_unit_test(test_slice_select_narrow),
		cmocka_unit_test(test_split_family),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
