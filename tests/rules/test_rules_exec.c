// SPDX-License-Identifier: MIT
/* test_rules_exec.c: every single-dim row of the sharding rule table
 * (sharding/rules.def) checked against the math by execution. For
 * each case (one op on small float64 inputs, uneven lengths included) and
 * each mesh of 2, 3 and 4 ranks, every row is filled with S (and with
 * _S(d,2) unless it is S-only), each rank runs the op on its shards with
 * the runtime's CPU kernels (a local-view graph whose placeholders carry
 * the row's input placements, Partial ones split as the runtime does), and
 * the ranks' results are combined as the row's outputs say (gathered for
 * S, reduced for P, each checked for R) and compared with the op run
 * unsharded. A row right only as lower-redistribute rewrites the op
 * (DT_ROW_GLOBAL_COUNT: mse_loss_backward's mean) runs the global graph
 * pinned to the row and lowered for each rank instead. Rows a mesh size cannot hold (a dim shorter than the ranks,
 * uneven under an even-only row) are skipped, as expansion filters them.
 * A negative control plants wrong rows and requires the check to catch
 * each; a coverage test requires a case for every op with rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "passes.h"
#include "runtime.h"
#include "sharding.h"

#define SEED 11
#define MAX_INPUTS 6
#define XML_CAP 16384

/* One placeholder: the op reads `name`; with `pre` the placeholder is
 * NAME_raw and NAME = pre(NAME_raw), an elementwise map applied before
 * sharding matters (exp keeps divisors away from zero). */
struct input {
	const char *name, *dtype, *shape;
	int64_t max; /* integer inputs take values in [0, max) */
	const char *pre;
};

/* One op to check. `call` is its node, named "op" (getitems r0, r1, …
 * after it for several results), with @SIZE@ standing for result 0's
 * shape: `size` globally, its shard under a row; `outs` lists the graph's
 * outputs, one per result of op, in order. */
struct rcase {
	const char *label;
	struct input in[MAX_INPUTS];
	const char *call, *outs, *size;
};

#define F(n, s) {n, "float64", s, 0, NULL}
#define POS(n, s) {n, "float64", s, 0, "aten.exp.default"}
#define B(n, s) {n, "bool", s, 0, NULL}
#define I(n, s, mx) {n, "int64", s, mx, NULL}
/* a fresh value (a clone) that an in-place op may write */
#define FRESH(n, s) {n, "float64", s, 0, "aten.clone.default"}
#define A(n) "<arg node=\"" n "\"/>"
#define AI(v) "<arg int=\"" #v "\"/>"
#define AF(v) "<arg float=\"" #v "\"/>"
#define AIS(v) "<arg ints=\"" v "\"/>"
#define AB(v) "<arg bool=\"" #v "\"/>"
#define ANONE "<arg none=\"true\"/>"
#define KW(k, kind, v) "<kwarg name=\"" k "\" " kind "=\"" v "\"/>"
#define OP(target, args) "<node name=\"op\" op=\"call_function\" target=\"" target "\">" args "</node>"
#define GET(k) "<node name=\"r" #k "\" op=\"call_function\" target=\"operator.getitem\"><arg node=\"op\"/><arg int=\"" #k "\"/></node>"
#define SIZE "<arg ints=\"@SIZE@\"/>"
#define STRIDE "<arg ints=\"@STRIDE@\"/>" /* contiguous strides of @SIZE@ */

static const struct rcase cases[] = {
	/* pointwise: binary with broadcasting, numbers, scalars */
	{"add", {F("a", "6 5"), F("b", "5")}, OP("aten.add.Tensor", A("a") A("b") KW("alpha", "float", "0.5")), "op", NULL},
	{"add_col", {F("a", "6 5"), F("b", "6 1")}, OP("aten.add.Tensor", A("a") A("b")), "op", NULL},
	{"add_number", {F("a", "6 5")}, OP("aten.add.Tensor", A("a") AF(1.5)), "op", NULL},
	{"sub", {F("a", "3 6 5"), F("b", "6 5")}, OP("aten.sub.Tensor", A("a") A("b")), "op", NULL},
	{"rsub", {F("a", "6 5"), F("b", "6 5")}, OP("aten.rsub.Tensor", A("a") A("b") KW("alpha", "int", "2")), "op", NULL},
	{"mul", {F("a", "6 5"), F("b", "5")}, OP("aten.mul.Tensor", A("a") A("b")), "op", NULL},
	{"mul_number", {F("a", "6 5")}, OP("aten.mul.Tensor", A("a") AF(-2.0)), "op", NULL},
	{"div", {F("a", "6 5"), POS("b", "6 5")}, OP("aten.div.Tensor", A("a") A("b")), "op", NULL},
	{"div_number_self", {POS("b", "6 5")}, OP("aten.div.Tensor", AF(2.0) A("b")), "op", NULL},
	{"div_floor", {F("a", "6 5"), POS("b", "5")}, OP("aten.div.Tensor_mode", A("a") A("b") KW("rounding_mode", "str", "floor")), "op", NULL},
	{"div_scalar_floor", {F("a", "6 5")}, OP("aten.div.Scalar_mode", A("a") AF(0.5) KW("rounding_mode", "str", "trunc")), "op", NULL},
	{"add_scalar", {F("a", "6 5")}, OP("aten.add.Scalar", A("a") AF(1.5)), "op", NULL},
	{"sub_scalar", {F("a", "6 5")}, OP("aten.sub.Scalar", A("a") AF(0.25) AI(2)), "op", NULL},
	{"rsub_scalar", {F("a", "6 5")}, OP("aten.rsub.Scalar", A("a") AF(1.0)), "op", NULL},
	{"mul_scalar", {F("a", "6 5")}, OP("aten.mul.Scalar", A("a") AF(2.0)), "op", NULL},
	{"mul_scalar_neg", {F("a", "6 5")}, OP("aten.mul.Scalar", A("a") AF(-3.0)), "op", NULL},
	{"div_scalar", {F("a", "6 5")}, OP("aten.div.Scalar", A("a") AF(4.0)), "op", NULL},
	{"pow_scalar_exp", {F("a", "6 5")}, OP("aten.pow.Tensor_Scalar", A("a") AI(2)), "op", NULL},
	{"pow_tt", {POS("a", "6 5"), F("b", "5")}, OP("aten.pow.Tensor_Tensor", A("a") A("b")), "op", NULL},
	{"pow_scalar_base", {F("a", "6 5")}, OP("aten.pow.Scalar", AF(2.0) A("a")), "op", NULL},
	{"maximum", {F("a", "6 5"), F("b", "6 5")}, OP("aten.maximum.default", A("a") A("b")), "op", NULL},
	{"minimum", {F("a", "6 5"), F("b", "6 5")}, OP("aten.minimum.default", A("a") A("b")), "op", NULL},
	{"addcmul", {F("a", "6 5"), F("b", "6 5"), F("c", "5")}, OP("aten.addcmul.default", A("a") A("b") A("c") KW("value", "float", "0.5")), "op", NULL},
	{"addcdiv", {F("a", "6 5"), F("b", "6 5"), POS("c", "6 5")}, OP("aten.addcdiv.default", A("a") A("b") A("c")), "op", NULL},
	/* comparisons and selection */
	{"eq", {F("a", "6 5"), F("b", "5")}, OP("aten.eq.Tensor", A("a") A("b")), "op", NULL},
	{"eq_scalar", {F("a", "6 5")}, OP("aten.eq.Scalar", A("a") AF(0.5)), "op", NULL},
	{"ne", {F("a", "6 5"), F("b", "6 5")}, OP("aten.ne.Tensor", A("a") A("b")), "op", NULL},
	{"ne_scalar", {F("a", "6 5")}, OP("aten.ne.Scalar", A("a") AF(0.5)), "op", NULL},
	{"lt", {F("a", "6 5"), F("b", "6 5")}, OP("aten.lt.Tensor", A("a") A("b")), "op", NULL},
	{"lt_scalar", {F("a", "6 5")}, OP("aten.lt.Scalar", A("a") AF(0.0)), "op", NULL},
	{"le", {F("a", "6 5"), F("b", "6 5")}, OP("aten.le.Tensor", A("a") A("b")), "op", NULL},
	{"le_scalar", {F("a", "6 5")}, OP("aten.le.Scalar", A("a") AF(0.0)), "op", NULL},
	{"gt", {F("a", "6 5"), F("b", "6 5")}, OP("aten.gt.Tensor", A("a") A("b")), "op", NULL},
	{"gt_scalar", {F("a", "6 5")}, OP("aten.gt.Scalar", A("a") AF(0.0)), "op", NULL},
	{"ge", {F("a", "6 5"), F("b", "6 5")}, OP("aten.ge.Tensor", A("a") A("b")), "op", NULL},
	{"ge_scalar", {F("a", "6 5")}, OP("aten.ge.Scalar", A("a") AF(0.0)), "op", NULL},
	{"logical_not", {B("m", "6 5")}, OP("aten.logical_not.default", A("m")), "op", NULL},
	{"where", {B("m", "6 5"), F("a", "6 5"), F("b", "5")}, OP("aten.where.self", A("m") A("a") A("b")), "op", NULL},
	{"masked_fill", {F("a", "6 5"), B("m", "5")}, OP("aten.masked_fill.Scalar", A("a") A("m") AF(-1.5)), "op", NULL},
	{"masked_fill_t", {F("a", "6 5"), B("m", "6 5"), F("v", "")}, OP("aten.masked_fill.Tensor", A("a") A("m") A("v")), "op", NULL},
	/* unary */
	{"neg", {F("a", "6 5")}, OP("aten.neg.default", A("a")), "op", NULL},
	{"abs", {F("a", "6 5")}, OP("aten.abs.default", A("a")), "op", NULL},
	{"relu", {F("a", "6 5")}, OP("aten.relu.default", A("a")), "op", NULL},
	{"gelu", {F("a", "6 5")}, OP("aten.gelu.default", A("a") KW("approximate", "str", "tanh")), "op", NULL},
	{"silu", {F("a", "6 5")}, OP("aten.silu.default", A("a")), "op", NULL},
	{"sigmoid", {F("a", "6 5")}, OP("aten.sigmoid.default", A("a")), "op", NULL},
	{"tanh", {F("a", "6 5")}, OP("aten.tanh.default", A("a")), "op", NULL},
	{"exp", {F("a", "6 5")}, OP("aten.exp.default", A("a")), "op", NULL},
	{"log", {POS("a", "6 5")}, OP("aten.log.default", A("a")), "op", NULL},
	{"sqrt", {POS("a", "6 5")}, OP("aten.sqrt.default", A("a")), "op", NULL},
	{"rsqrt", {POS("a", "6 5")}, OP("aten.rsqrt.default", A("a")), "op", NULL},
	{"erf", {F("a", "6 5")}, OP("aten.erf.default", A("a")), "op", NULL},
	{"reciprocal", {POS("a", "6 5")}, OP("aten.reciprocal.default", A("a")), "op", NULL},
	{"sin", {F("a", "6 5")}, OP("aten.sin.default", A("a")), "op", NULL},
	{"cos", {F("a", "6 5")}, OP("aten.cos.default", A("a")), "op", NULL},
	{"log1p", {POS("a", "6 5")}, OP("aten.log1p.default", A("a")), "op", NULL},
	{"expm1", {F("a", "6 5")}, OP("aten.expm1.default", A("a")), "op", NULL},
	{"clamp", {F("a", "6 5")}, OP("aten.clamp.default", A("a") AF(-0.5) AF(0.5)), "op", NULL},
	{"clamp_min", {F("a", "6 5")}, OP("aten.clamp_min.default", A("a") AF(0.1)), "op", NULL},
	{"clamp_max", {F("a", "6 5")}, OP("aten.clamp_max.default", A("a") AF(0.25)), "op", NULL},
	/* copies and conversions */
	{"clone", {F("a", "6 5")}, OP("aten.clone.default", A("a")), "op", NULL},
	{"contiguous", {F("a", "6 5")}, OP("aten.contiguous.default", A("a")), "op", NULL},
	{"lift_fresh_copy", {F("a", "6 5")}, OP("aten.lift_fresh_copy.default", A("a")), "op", NULL},
	{"alias", {F("a", "6 5")}, OP("aten.alias.default", A("a")), "op", NULL},
	{"detach", {F("a", "6 5")}, OP("aten.detach.default", A("a")), "op", NULL},
	{"convert_f32", {F("a", "6 5")}, OP("prims.convert_element_type.default", A("a") "<arg dtype=\"float32\"/>"), "op", NULL},
	{"convert_int", {F("a", "6 5")}, OP("prims.convert_element_type.default", A("a") "<arg dtype=\"int64\"/>"), "op", NULL},
	{"to_copy", {F("a", "6 5")}, OP("aten._to_copy.default", A("a") KW("dtype", "dtype", "float32")), "op", NULL},
	/* backward helpers */
	{"threshold_backward", {F("g", "6 5"), F("a", "6 5")}, OP("aten.threshold_backward.default", A("g") A("a") AF(0.0)), "op", NULL},
	{"gelu_backward", {F("g", "6 5"), F("a", "6 5")}, OP("aten.gelu_backward.default", A("g") A("a")), "op", NULL},
	{"silu_backward", {F("g", "6 5"), F("a", "6 5")}, OP("aten.silu_backward.default", A("g") A("a")), "op", NULL},
	{"sigmoid_backward", {F("g", "6 5"), F("a", "6 5")}, OP("aten.sigmoid_backward.default", A("g") A("a")), "op", NULL},
	{"tanh_backward", {F("g", "6 5"), F("a", "6 5")}, OP("aten.tanh_backward.default", A("g") A("a")), "op", NULL},
	{"dropout_backward", {F("g", "6 5"), B("m", "6 5")}, OP("aten.native_dropout_backward.default", A("g") A("m") AF(2.0)), "op", NULL},
	/* reductions */
	{"sum", {F("a", "6 5")}, OP("aten.sum.default", A("a")), "op", NULL},
	{"sum_dim", {F("a", "4 6 5")}, OP("aten.sum.dim_IntList", A("a") AIS("1")), "op", NULL},
	{"sum_dims_keep", {F("a", "4 6 5")}, OP("aten.sum.dim_IntList", A("a") AIS("0 -1") AB(true)), "op", NULL},
	{"mean", {F("a", "6 4")}, OP("aten.mean.default", A("a")), "op", NULL},
	{"mean_dim", {F("a", "4 6 5")}, OP("aten.mean.dim", A("a") AIS("1") AB(true)), "op", NULL},
	{"amax", {F("a", "4 6 5")}, OP("aten.amax.default", A("a") AIS("2")), "op", NULL},
	{"amin", {F("a", "4 6 5")}, OP("aten.amin.default", A("a") AIS("0 2")), "op", NULL},
	{"max", {F("a", "6 5")}, OP("aten.max.default", A("a")), "op", NULL},
	{"min", {F("a", "6 5")}, OP("aten.min.default", A("a")), "op", NULL},
	{"max_dim", {F("a", "4 6 5")}, OP("aten.max.dim", A("a") AI(1)) GET(0) GET(1), "r0 r1", NULL},
	{"min_dim", {F("a", "4 6 5")}, OP("aten.min.dim", A("a") AI(-1) AB(true)) GET(0) GET(1), "r0 r1", NULL},
	{"argmax", {F("a", "4 6 5")}, OP("aten.argmax.default", A("a") AI(1)), "op", NULL},
	{"argmin", {F("a", "4 6")}, OP("aten.argmin.default", A("a") AI(0) AB(true)), "op", NULL},
	{"logsumexp", {F("a", "4 6 5")}, OP("aten.logsumexp.default", A("a") AIS("1")), "op", NULL},
	{"var", {F("a", "4 6 5")}, OP("aten.var.correction", A("a") AIS("2") KW("correction", "int", "1")), "op", NULL},
	{"var_mean", {F("a", "4 6 5")}, OP("aten.var_mean.correction", A("a") AIS("1") KW("keepdim", "bool", "true")) GET(0) GET(1), "r0 r1", NULL},
	{"var_mean_dim", {F("a", "4 6 5")}, OP("aten.var_mean.dim", A("a") AIS("0") AB(false)) GET(0) GET(1), "r0 r1", NULL},
	/* matrix products */
	{"mm", {F("a", "6 5"), F("b", "5 7")}, OP("aten.mm.default", A("a") A("b")), "op", NULL},
	{"bmm", {F("a", "3 4 5"), F("b", "3 5 6")}, OP("aten.bmm.default", A("a") A("b")), "op", NULL},
	{"addmm", {F("c", "7"), F("a", "6 5"), F("b", "5 7")}, OP("aten.addmm.default", A("c") A("a") A("b") KW("beta", "float", "0.5")), "op", NULL},
	{"addmm_full", {F("c", "6 7"), F("a", "6 5"), F("b", "5 7")}, OP("aten.addmm.default", A("c") A("a") A("b") KW("alpha", "float", "2.0")), "op", NULL},
	{"baddbmm", {F("c", "3 4 6"), F("a", "3 4 5"), F("b", "3 5 6")}, OP("aten.baddbmm.default", A("c") A("a") A("b") KW("beta", "float", "0.5")), "op", NULL},
	{"baddbmm_bias", {F("c", "6"), F("a", "3 4 5"), F("b", "3 5 6")}, OP("aten.baddbmm.default", A("c") A("a") A("b")), "op", NULL},
	/* views */
	{"view_merge", {F("a", "4 6 5")}, OP("aten.view.default", A("a") SIZE), "op", "24 5"},
	{"view_split", {F("a", "12 5")}, OP("aten.view.default", A("a") SIZE), "op", "3 4 5"},
	{"view_regroup", {F("a", "4 6")}, OP("aten.view.default", A("a") SIZE), "op", "6 4"},
	{"view_ones", {F("a", "1 8 1 3")}, OP("aten.view.default", A("a") SIZE), "op", "8 3"},
	{"view_merge3", {F("a", "3 5 2")}, OP("aten.view.default", A("a") SIZE), "op", "30"},
	{"view_split3", {F("a", "30")}, OP("aten.view.default", A("a") SIZE), "op", "3 5 2"},
	{"view_heads", {F("a", "2 3 5 4")}, OP("aten.view.default", A("a") SIZE), "op", "6 5 4"},
	{"view_unheads", {F("a", "6 5 4")}, OP("aten.view.default", A("a") SIZE), "op", "2 3 5 4"},
	{"reshape_alias", {F("a", "2 3 5 4")}, OP("aten._reshape_alias.default", A("a") SIZE STRIDE), "op", "6 5 4"},
	{"reshape_alias_split", {F("a", "6 5 4")}, OP("aten._reshape_alias.default", A("a") SIZE STRIDE), "op", "2 3 20"},
	{"as_strided", {F("a", "4 6")}, OP("aten.as_strided.default", A("a") SIZE STRIDE), "op", "24"},
	{"reshape", {F("a", "4 6 5")}, OP("aten.reshape.default", A("a") SIZE), "op", "4 30"},
	{"unsafe_view", {F("a", "6 4 2")}, OP("aten._unsafe_view.default", A("a") SIZE), "op", "6 8"},
	{"permute", {F("a", "3 4 5")}, OP("aten.permute.default", A("a") AIS("2 0 1")), "op", NULL},
	{"transpose", {F("a", "3 4 5")}, OP("aten.transpose.int", A("a") AI(0) AI(-1)), "op", NULL},
	{"t", {F("a", "6 5")}, OP("aten.t.default", A("a")), "op", NULL},
	{"expand", {F("a", "3 1 5")}, OP("aten.expand.default", A("a") SIZE), "op", "3 4 5"},
	{"expand_new_dims", {F("a", "5")}, OP("aten.expand.default", A("a") SIZE), "op", "2 3 5"},
	{"unsqueeze", {F("a", "6 5")}, OP("aten.unsqueeze.default", A("a") AI(1)), "op", NULL},
	{"unsqueeze_last", {F("a", "6 5")}, OP("aten.unsqueeze.default", A("a") AI(-1)), "op", NULL},
	{"squeeze_dim", {F("a", "3 1 5")}, OP("aten.squeeze.dim", A("a") AI(1)), "op", NULL},
	{"squeeze_dims", {F("a", "1 4 1 5")}, OP("aten.squeeze.dims", A("a") AIS("0 2")), "op", NULL},
	{"squeeze", {F("a", "4 1 5 1")}, OP("aten.squeeze.default", A("a")), "op", NULL},
	{"slice", {F("a", "6 5")}, OP("aten.slice.Tensor", A("a") AI(1) AI(1) AI(4)), "op", NULL},
	{"slice_whole", {F("a", "6 5")}, OP("aten.slice.Tensor", A("a") AI(0) AI(0) AI(9223372036854775807)), "op", NULL},
	{"slice_step", {F("a", "7 5")}, OP("aten.slice.Tensor", A("a") AI(0) AI(0) AI(7) AI(2)), "op", NULL},
	{"narrow", {F("a", "6 5")}, OP("aten.narrow.default", A("a") AI(0) AI(1) AI(3)), "op", NULL},
	{"select", {F("a", "4 6 5")}, OP("aten.select.int", A("a") AI(1) AI(2)), "op", NULL},
	{"split", {F("a", "6 7")}, OP("aten.split.Tensor", A("a") AI(3) AI(1)) GET(0) GET(1) GET(2), "r0 r1 r2", NULL},
	{"split_with_sizes", {F("a", "6 7")}, OP("aten.split_with_sizes.default", A("a") AIS("2 5") AI(1)) GET(0) GET(1), "r0 r1", NULL},
	{"chunk", {F("a", "6 5")}, OP("aten.chunk.default", A("a") AI(2)) GET(0) GET(1), "r0 r1", NULL},
	{"unbind", {F("a", "6 3")}, OP("aten.unbind.int", A("a") AI(1)) GET(0) GET(1) GET(2), "r0 r1 r2", NULL},
	/* joins, pads, slice backward */
	{"cat", {F("a", "4 5"), F("b", "3 5")}, OP("aten.cat.default", "<arg nodes=\"a b\"/>"), "op", NULL},
	{"cat_dim1", {F("a", "4 5"), F("b", "4 2"), F("c", "4 3")}, OP("aten.cat.default", "<arg nodes=\"a b c\"/>" AI(1)), "op", NULL},
	{"stack", {F("a", "4 5"), F("b", "4 5")}, OP("aten.stack.default", "<arg nodes=\"a b\"/>" AI(1)), "op", NULL},
	{"pad", {F("a", "4 5")}, OP("aten.constant_pad_nd.default", A("a") AIS("1 2")), "op", NULL},
	{"pad_value", {F("a", "4 5")}, OP("aten.constant_pad_nd.default", A("a") AIS("0 0 1 -1") AF(1.5)), "op", NULL},
	{"slice_backward", {F("g", "6 3")}, OP("aten.slice_backward.default", A("g") SIZE AI(1) AI(1) AI(4) AI(1)), "op", "6 5"},
	{"slice_backward_whole", {F("g", "6 5")}, OP("aten.slice_backward.default", A("g") SIZE AI(0) AI(0) AI(9223372036854775807) AI(1)), "op", "6 5"},
	{"select_backward", {F("g", "6 4")}, OP("aten.select_backward.default", A("g") SIZE AI(1) AI(2)), "op", "6 3 4"},
	/* neural-network ops */
	{"softmax", {F("a", "4 6")}, OP("aten._softmax.default", A("a") AI(1) AB(false)), "op", NULL},
	{"log_softmax", {F("a", "4 6 5")}, OP("aten._log_softmax.default", A("a") AI(0) AB(false)), "op", NULL},
	{"softmax_backward", {F("g", "4 6"), F("y", "4 6")}, OP("aten._softmax_backward_data.default", A("g") A("y") AI(1) "<arg dtype=\"float64\"/>"), "op", NULL},
	{"log_softmax_backward", {F("g", "4 6"), F("y", "4 6")}, OP("aten._log_softmax_backward_data.default", A("g") A("y") AI(-1) "<arg dtype=\"float64\"/>"), "op", NULL},
	{"layer_norm", {F("x", "4 3 6"), F("w", "6"), F("b", "6")}, OP("aten.native_layer_norm.default", A("x") AIS("6") A("w") A("b") AF(1e-05)) GET(0) GET(1) GET(2), "r0 r1 r2", NULL},
	{"layer_norm_2d", {F("x", "4 3 6")}, OP("aten.native_layer_norm.default", A("x") AIS("3 6") ANONE ANONE AF(1e-05)) GET(0) GET(1) GET(2), "r0 r1 r2", NULL},
	{"layer_norm_backward", {F("g", "4 3 6"), F("x", "4 3 6"), F("mean", "4 3 1"), POS("rstd", "4 3 1"), F("w", "6"), F("b", "6")},
	 OP("aten.native_layer_norm_backward.default", A("g") A("x") AIS("6") A("mean") A("rstd") A("w") A("b")
	    "<arg><item bool=\"true\"/><item bool=\"true\"/><item bool=\"true\"/></arg>") GET(0) GET(1) GET(2), "r0 r1 r2", NULL},
	{"embedding", {F("w", "10 6"), I("i", "4 3", 10)}, OP("aten.embedding.default", A("w") A("i")), "op", NULL},
	{"embedding_backward", {F("g", "4 3 6"), I("i", "4 3", 10)}, OP("aten.embedding_dense_backward.default", A("g") A("i") AI(10) AI(-1) AB(false)), "op", NULL},
	{"embedding_backward_freq", {F("g", "4 3 6"), I("i", "4 3", 10)}, OP("aten.embedding_dense_backward.default", A("g") A("i") AI(10) AI(2) AB(true)), "op", NULL},
	{"nll_none", {F("x", "6 5"), I("t", "6", 5)}, OP("aten.nll_loss_forward.default", A("x") A("t") ANONE AI(0) AI(-100)) GET(0) GET(1), "r0 r1", NULL},
	{"nll_mean", {F("x", "6 5"), I("t", "6", 5)}, OP("aten.nll_loss_forward.default", A("x") A("t") ANONE AI(1) AI(-100)) GET(0) GET(1), "r0 r1", NULL},
	{"nll_sum", {F("x", "6 5"), I("t", "6", 5), POS("w", "5")}, OP("aten.nll_loss_forward.default", A("x") A("t") A("w") AI(2) AI(3)) GET(0) GET(1), "r0 r1", NULL},
	{"nll_mean_weighted", {F("x", "6 5"), I("t", "6", 5), POS("w", "5")}, OP("aten.nll_loss_forward.default", A("x") A("t") A("w") AI(1) AI(-100)) GET(0) GET(1), "r0 r1", NULL},
	{"nll_backward_none", {F("g", "6"), F("x", "6 5"), I("t", "6", 5), F("tw", "")}, OP("aten.nll_loss_backward.default", A("g") A("x") A("t") ANONE AI(0) AI(-100) A("tw")), "op", NULL},
	{"nll_backward_mean", {F("g", ""), F("x", "6 5"), I("t", "6", 5), POS("w", "5"), POS("tw", "")}, OP("aten.nll_loss_backward.default", A("g") A("x") A("t") A("w") AI(1) AI(-100) A("tw")), "op", NULL},
	/* creation */
	{"empty_like", {F("a", "6 5")}, OP("aten.empty_like.default", A("a")), "op", NULL},
	{"zeros_like", {F("a", "6 5")}, OP("aten.zeros_like.default", A("a")), "op", NULL},
	{"ones_like", {F("a", "6 5")}, OP("aten.ones_like.default", A("a")), "op", NULL},
	{"full_like", {F("a", "6 5")}, OP("aten.full_like.default", A("a") AF(2.5)), "op", NULL},
	{"new_zeros", {F("a", "6 5")}, OP("aten.new_zeros.default", A("a") AIS("3 4")), "op", NULL},
	/* masks, index ops, bitwise and logical ops, in-place ops, mse_loss */
	{"tril", {F("a", "3 6 5")}, OP("aten.tril.default", A("a")), "op", NULL},
	{"triu", {F("a", "2 3 5 4")}, OP("aten.triu.default", A("a") AI(1)), "op", NULL},
	{"index_select", {F("a", "6 5"), I("i", "4", 6)}, OP("aten.index_select.default", A("a") AI(0) A("i")), "op", NULL},
	{"index_select_last", {F("a", "4 6 5"), I("i", "7", 5)}, OP("aten.index_select.default", A("a") AI(-1) A("i")), "op", NULL},
	{"index_add", {F("a", "6 5"), I("i", "4", 6), F("s", "4 5")}, OP("aten.index_add.default", A("a") AI(0) A("i") A("s") KW("alpha", "float", "0.5")), "op", NULL},
	{"index_add_mid", {F("a", "3 6 5"), I("i", "7", 6), F("s", "3 7 5")}, OP("aten.index_add.default", A("a") AI(1) A("i") A("s")), "op", NULL},
	{"gather", {F("a", "6 5"), I("i", "6 3", 5)}, OP("aten.gather.default", A("a") AI(1) A("i")), "op", NULL},
	{"gather_rows", {F("a", "4 5"), I("i", "7 5", 4)}, OP("aten.gather.default", A("a") AI(0) A("i")), "op", NULL},
	{"scatter_add", {F("a", "6 5"), I("i", "6 4", 5), F("s", "6 4")}, OP("aten.scatter_add.default", A("a") AI(1) A("i") A("s")), "op", NULL},
	{"scatter_add_rows", {F("a", "4 5"), I("i", "7 5", 4), F("s", "7 5")}, OP("aten.scatter_add.default", A("a") AI(0) A("i") A("s")), "op", NULL},
	{"scatter_src", {F("a", "6 5"), I("i", "6 4", 5), F("s", "6 4")}, OP("aten.scatter.src", A("a") AI(1) A("i") A("s")), "op", NULL},
	{"scatter_value", {F("a", "4 5"), I("i", "3 5", 4)}, OP("aten.scatter.value", A("a") AI(0) A("i") AF(2.5)), "op", NULL},
	{"remainder", {F("a", "6 5"), POS("b", "5")}, OP("aten.remainder.Tensor", A("a") A("b")), "op", NULL},
	{"remainder_scalar", {I("x", "6 5", 9)}, OP("aten.remainder.Scalar", A("x") AI(-4)), "op", NULL},
	{"repeat", {F("a", "6 5")}, OP("aten.repeat.default", A("a") AIS("2 1 3")), "op", NULL},
	{"flip", {F("a", "4 6 5")}, OP("aten.flip.default", A("a") AIS("0 2")), "op", NULL},
	{"cumsum", {F("a", "4 6 5")}, OP("aten.cumsum.default", A("a") AI(1)), "op", NULL},
	{"cumsum_int", {I("x", "6 5", 9)}, OP("aten.cumsum.default", A("x") AI(-1)), "op", NULL},
	{"bitwise_and", {I("x", "6 5", 16), I("y", "5", 16)}, OP("aten.bitwise_and.Tensor", A("x") A("y")), "op", NULL},
	{"bitwise_and_scalar", {I("x", "6 5", 16)}, OP("aten.bitwise_and.Scalar", A("x") AI(5)), "op", NULL},
	{"bitwise_or", {I("x", "6 5", 16), B("m", "6 5")}, OP("aten.bitwise_or.Tensor", A("x") A("m")), "op", NULL},
	{"bitwise_or_scalar", {B("m", "6 5")}, OP("aten.bitwise_or.Scalar", A("m") AI(2)), "op", NULL},
	{"bitwise_xor", {B("m", "6 5"), B("n", "6 5")}, OP("aten.bitwise_xor.Tensor", A("m") A("n")), "op", NULL},
	{"bitwise_xor_scalar", {I("x", "6 5", 16)}, OP("aten.bitwise_xor.Scalar", A("x") AI(9)), "op", NULL},
	{"bitwise_not", {I("x", "6 5", 16)}, OP("aten.bitwise_not.default", A("x")), "op", NULL},
	{"logical_and", {F("a", "6 5"), B("m", "5")}, OP("aten.logical_and.default", A("a") A("m")), "op", NULL},
	{"logical_or", {B("m", "6 5"), I("x", "6 5", 2)}, OP("aten.logical_or.default", A("m") A("x")), "op", NULL},
	{"logical_xor", {F("a", "6 5"), F("b", "6 5")}, OP("aten.logical_xor.default", A("a") A("b")), "op", NULL},
	{"add_", {FRESH("a", "6 5"), F("b", "5")}, OP("aten.add_.Tensor", A("a") A("b") KW("alpha", "float", "0.5")), "op", NULL},
	{"sub_", {FRESH("a", "6 5"), F("b", "6 5")}, OP("aten.sub_.Tensor", A("a") A("b")), "op", NULL},
	{"mul_", {FRESH("a", "6 5"), F("b", "6 1")}, OP("aten.mul_.Tensor", A("a") A("b")), "op", NULL},
	{"masked_fill_", {FRESH("a", "6 5"), B("m", "5")}, OP("aten.masked_fill_.Scalar", A("a") A("m") AF(-1.5)), "op", NULL},
	{"masked_fill__t", {FRESH("a", "6 5"), B("m", "6 5"), F("v", "")}, OP("aten.masked_fill_.Tensor", A("a") A("m") A("v")), "op", NULL},
	{"sign", {F("a", "6 5")}, OP("aten.sign.default", A("a")), "op", NULL},
	{"sgn", {F("a", "6 5")}, OP("aten.sgn.default", A("a")), "op", NULL},
	{"fill__scalar", {FRESH("a", "6 5")}, OP("aten.fill_.Scalar", A("a") AF(2.5)), "op", NULL},
	{"fill__tensor", {FRESH("a", "6 5"), F("v", "")}, OP("aten.fill_.Tensor", A("a") A("v")), "op", NULL},
	{"fill_scalar", {F("a", "6 5")}, OP("aten.fill.Scalar", A("a") AI(3)), "op", NULL},
	{"fill_tensor", {F("a", "6 5"), F("v", "")}, OP("aten.fill.Tensor", A("a") A("v")), "op", NULL},
	{"mse_none", {F("a", "6 5"), F("b", "5")}, OP("aten.mse_loss.default", A("a") A("b") AI(0)), "op", NULL},
	{"mse_mean", {F("a", "6 4"), F("b", "6 4")}, OP("aten.mse_loss.default", A("a") A("b")), "op", NULL},
	{"mse_sum", {F("a", "3 6 5"), F("b", "6 5")}, OP("aten.mse_loss.default", A("a") A("b") AI(2)), "op", NULL},
	{"mse_backward_none", {F("g", "6 5"), F("a", "6 5"), F("b", "5")}, OP("aten.mse_loss_backward.default", A("g") A("a") A("b") AI(0)), "op", NULL},
	{"mse_backward_mean", {F("g", ""), F("a", "6 5"), F("b", "6 5")}, OP("aten.mse_loss_backward.default", A("g") A("a") A("b") AI(1)), "op", NULL},
	{"mse_backward_mean_bcast", {F("g", ""), F("a", "6 5"), F("b", "5")}, OP("aten.mse_loss_backward.default", A("g") A("a") A("b") AI(1)), "op", NULL},
	{"mse_backward_mean_self_bcast", {F("g", ""), F("a", "5"), F("b", "6 5")}, OP("aten.mse_loss_backward.default", A("g") A("a") A("b") AI(1)), "op", NULL},
	{"mse_backward_sum", {F("g", ""), F("a", "6 5"), F("b", "6 5")}, OP("aten.mse_loss_backward.default", A("g") A("a") A("b") AI(2)), "op", NULL},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* ------------------------------------------------------------------ */
/* Graph text. */

static void append(char *buf, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t *at, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf + *at, XML_CAP - *at, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && *at + (size_t)n < XML_CAP);
	*at += (size_t)n;
}

static int parse_shape(const char *text, int64_t *shape)
{
	int rank = 0;
	for (const char *p = text; *p;) {
		char *end;
		shape[rank++] = strtoll(p, &end, 10);
		p = end;
		while (*p == ' ')
			p++;
	}
	return rank;
}

static void shape_text(const int64_t *shape, int rank, char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
	for (int d = 0; d < rank; d++)
		at += (size_t)snprintf(buf + at, n - at, "%s%lld", d ? " " : "", (long long)shape[d]);
}

/* Local length of each dim of `shape` on rank k of n under one-dim
 * placement p. */
static void local_shape(const struct dt_placement *p, int n, int k,
			const int64_t *shape, int rank, int64_t *out)
{
	struct dt_placements pl = {.ndim = 1};
	pl.p[0] = *p;
	int64_t mesh = n, coord = k;
	for (int d = 0; d < rank; d++)
		out[d] = dt_shard_length(&pl, &mesh, &coord, d, shape[d]);
}

/* The graph of case c on a mesh of n ranks: global (pl NULL), or local
 * for rank k with input i placed as pl[i] and result 0 of shape `size`;
 * with `pin` (a row lowering rewrites), global with input i pinned to
 * pl[i] and result 0 to *pin, for lower-redistribute to lower. */
static void graph_text(const struct rcase *c, int n, const struct dt_placement *pl,
		       const struct dt_placement *pin, int k, const int64_t *size,
		       int size_rank, char *buf)
{
	size_t at = 0;
	bool local = pl && !pin;
	if (local) /* uneven shards: a per-rank graph */
		append(buf, &at, "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" view=\"local\" rank=\"%d\">\n", k);
	else
		append(buf, &at, "<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" view=\"global\">\n");
	append(buf, &at, "<mesh name=\"m\" shape=\"%d\" dims=\"x\"/>\n", n);
	for (int i = 0; i < MAX_INPUTS && c->in[i].name; i++) {
		const struct input *in = &c->in[i];
		int64_t g[DT_MAX_RANK] = {0}, l[DT_MAX_RANK], st[DT_MAX_RANK];
		int rank = parse_shape(in->shape, g);
		char place[64] = "R", gs[128], ls[128], ss[128];
		memcpy(l, g, sizeof g);
		if (pl) {
			struct dt_placements one = {.ndim = 1};
			one.p[0] = pl[i];
			dt_placements_print(&one, place, sizeof place);
		}
		if (local)
			local_shape(&pl[i], n, k, g, rank, l);
		dt_contiguous_strides(l, rank, st);
		shape_text(g, rank, gs, sizeof gs);
		shape_text(l, rank, ls, sizeof ls);
		shape_text(st, rank, ss, sizeof ss);
		append(buf, &at, "<node name=\"%s%s\" op=\"placeholder\"><tensor dtype=\"%s\" shape=\"%s\" stride=\"%s\"/>",
		       in->name, in->pre ? "_raw" : "", in->dtype, ls, ss);
		append(buf, &at, "<sharding mesh=\"m\" placements=\"%s\"%s%s%s/>", place,
		       local ? " global-shape=\"" : "", local ? gs : "", local ? "\"" : "");
		if (in->max)
			append(buf, &at, "<meta key=\"dtopt.input_max\" value=\"%lld\"/>", (long long)in->max);
		append(buf, &at, "</node>\n");
		if (in->pre)
			append(buf, &at, "<node name=\"%s\" op=\"call_function\" target=\"%s\"><arg node=\"%s_raw\"/>"
			       "<sharding mesh=\"m\" placements=\"%s\"/></node>\n",
			       in->name, in->pre, in->name, place);
	}
	char op_pin[128] = "";
	if (pin) {
		struct dt_placements one = {.ndim = 1};
		char place[64];
		one.p[0] = *pin;
		dt_placements_print(&one, place, sizeof place);
		snprintf(op_pin, sizeof op_pin, "<sharding mesh=\"m\" placements=\"%s\"/>", place);
	}
	char sz[128] = "", sst[128] = "";
	if (size) {
		int64_t st[DT_MAX_RANK];
		dt_contiguous_strides(size, size_rank, st);
		shape_text(size, size_rank, sz, sizeof sz);
		shape_text(st, size_rank, sst, sizeof sst);
	}
	const char *op_end = strstr(c->call, "</node>"); /* the op's own */
	for (const char *p = c->call; *p;) {
		const char *hit = strchr(p, '@');
		if (op_pin[0] && p <= op_end && (!hit || hit > op_end))
			hit = op_end;
		size_t len = hit ? (size_t)(hit - p) : strlen(p);
		append(buf, &at, "%.*s", (int)len, p);
		p += len;
		if (!hit)
			continue;
		if (hit == op_end && op_pin[0]) {
			append(buf, &at, "%s", op_pin);
			op_pin[0] = 0;
			continue;
		}
		assert_non_null(size);
		bool stride = strncmp(hit, "@STRIDE@", 8) == 0;
		assert_true(stride || strncmp(hit, "@SIZE@", 6) == 0);
		append(buf, &at, "%s", stride ? sst : sz);
		p += stride ? 8 : 6;
	}
	append(buf, &at, "\n<node name=\"output\" op=\"output\"><arg nodes=\"%s\"/></node>\n</dtopt-graph>\n",
	       c->outs);
}

/* ------------------------------------------------------------------ */
/* Running. */

struct host {
	int rank;
	int64_t shape[DT_MAX_RANK];
	int64_t numel;
	enum dt_dtype dtype;
	double *v;
};

struct run {
	int noutputs;
	struct host out[DT_MAX_RESULTS];
	char error[1024];
};

static void keep_error(void *ud, const struct dt_diag_entry *e)
{
	struct run *r = ud;
	if (e->severity == DT_ERROR && !r->error[0])
		snprintf(r->error, sizeof r->error, "%s", e->message);
}

static void run_fini(struct run *r)
{
	for (int k = 0; k < r->noutputs; k++)
		free(r->out[k].v);
	r->noutputs = 0;
}

/* Load, verify, infer shapes (lower >= 0: and lower-redistribute for
 * that rank); the module, or NULL after reporting to d. */
static struct dt_module *load(const char *xml, int lower, struct dt_diag *d)
{
	struct dt_read_options ropt = {0};
	struct dt_module *m = NULL;
	if (dt_read_memory(xml, strlen(xml), "case.xml", &ropt, d, &m) != DT_OK)
		return NULL;
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {.pass.rank = lower};
	assert_int_equal(dt_pipeline_parse(&p, lower >= 0 ? "verify,shape-infer,lower-redistribute"
							    : "verify,shape-infer", d),
			 DT_OK);
	if (dt_pipeline_run(m, &p, &popt, d) != DT_OK) {
		dt_module_destroy(m);
		return NULL;
	}
	return m;
}

/* Run `xml` as rank k of n (1 for a global graph) on the CPU backend,
 * lowered for rank k first when `lower`; false with r->error. */
static bool run_graph(const char *xml, int n, int k, bool lower, struct run *r)
{
	struct dt_diag d;
	dt_diag_init(&d);
	d.emit = keep_error;
	d.ud = r;
	r->error[0] = 0;
	r->noutputs = 0;
	struct dt_module *m = load(xml, lower ? k : -1, &d);
	if (!m)
		return false;
	struct dt_backend *b = dt_backend_cpu_create(&d);
	b->rank = k;
	b->world_size = n;
	struct dt_run_options opt = {.seed = SEED, .iters = 1};
	struct dt_run_result res;
	bool ok = dt_interpret(m, b, &opt, &res) == DT_OK;
	if (ok) {
		r->noutputs = (int)res.noutputs;
		for (uint32_t j = 0; j < res.noutputs; j++) {
			const struct dt_rt_tensor *t = &res.outputs[j];
			struct host *h = &r->out[j];
			h->rank = t->rank;
			h->dtype = (enum dt_dtype)t->dtype;
			memcpy(h->shape, t->shape, sizeof h->shape);
			h->numel = dt_rt_numel(t);
			h->v = malloc((size_t)(h->numel + 1) * sizeof(double));
			for (int64_t e = 0; e < h->numel; e++)
				h->v[e] = dt_load_element(h->dtype, (char *)t->buf->data +
								   (t->offset + e) * dt_dtype_size(h->dtype));
		}
		dt_run_result_fini(&res);
	}
	b->ops->destroy(b);
	dt_module_destroy(m);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Combining. */

static bool close_enough(double a, double b, enum dt_dtype t)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (a == b)
		return true;
	if (!dt_dtype_is_float(t))
		return false;
	double tol = t == DT_FLOAT64 ? 1e-9 : 1e-5;
	return fabs(a - b) <= tol + tol * fmax(fabs(a), fabs(b));
}

/* Row-major multi-index of element e of shape. */
static void unravel(int64_t e, const int64_t *shape, int rank, int64_t *idx)
{
	for (int d = rank - 1; d >= 0; d--) {
		idx[d] = shape[d] ? e % shape[d] : 0;
		e = shape[d] ? e / shape[d] : 0;
	}
}

static int64_t ravel(const int64_t *idx, const int64_t *shape, int rank)
{
	int64_t e = 0;
	for (int d = 0; d < rank; d++)
		e = e * shape[d] + idx[d];
	return e;
}

/* Whether the ranks' results `got[0..n)` (output j) combine under p into
 * the reference `ref`; writes why not into `why`. */
static bool combine_ok(const struct host *ref, struct run *got, int j, int n,
		       const struct dt_placement *p, char *why, size_t whylen)
{
	struct dt_placements pl = {.ndim = 1};
	pl.p[0] = *p;
	bool shard = p->kind == DT_PL_SHARD || p->kind == DT_PL_STRIDED_SHARD;
	double *reduced = NULL;
	if (p->kind == DT_PL_PARTIAL)
		reduced = calloc((size_t)ref->numel + 1, sizeof(double));
	bool ok = true;
	for (int k = 0; k < n && ok; k++) {
		const struct host *h = &got[k].out[j];
		int64_t want[DT_MAX_RANK], idx[DT_MAX_RANK * 8];
		memcpy(want, ref->shape, sizeof want);
		int64_t nidx = 0, mesh = n, coord = k;
		if (shard) {
			dt_shard_indices(&pl, &mesh, &coord, p->dim, ref->shape[p->dim], idx, &nidx);
			want[p->dim] = nidx;
		}
		if (h->rank != ref->rank || memcmp(h->shape, want, (size_t)ref->rank * sizeof *want)) {
			snprintf(why, whylen, "output %d on rank %d has the wrong shape", j, k);
			ok = false;
			break;
		}
		for (int64_t e = 0; e < h->numel && ok; e++) {
			int64_t mi[DT_MAX_RANK];
			unravel(e, h->shape, h->rank, mi);
			if (shard)
				mi[p->dim] = idx[mi[p->dim]];
			int64_t g = ravel(mi, ref->shape, ref->rank);
			if (p->kind == DT_PL_PARTIAL) {
				double v = h->v[e];
				double *acc = &reduced[g];
				switch ((enum dt_reduce_op)p->reduce) {
				case DT_REDUCE_SUM:
				case DT_REDUCE_AVG: *acc = k ? *acc + v : v; break;
				case DT_REDUCE_MAX: *acc = k ? fmax(*acc, v) : v; break;
				case DT_REDUCE_MIN: *acc = k ? fmin(*acc, v) : v; break;
				default: fail_msg("unexpected reduce op");
				}
				continue;
			}
			if (!close_enough(h->v[e], ref->v[g], ref->dtype)) {
				snprintf(why, whylen, "output %d rank %d element %lld: %g, want %g",
					 j, k, (long long)e, h->v[e], ref->v[g]);
				ok = false;
			}
		}
	}
	if (ok && reduced) {
		for (int64_t g = 0; g < ref->numel && ok; g++) {
			double v = p->reduce == DT_REDUCE_AVG ? reduced[g] / n : reduced[g];
			if (!close_enough(v, ref->v[g], ref->dtype)) {
				snprintf(why, whylen, "output %d element %lld reduces to %g, want %g",
					 j, (long long)g, v, ref->v[g]);
				ok = false;
			}
		}
	}
	free(reduced);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Checking rows. */

struct checked {
	int rows, kinds, runs, skipped;
};

/* The case input read by op input i (through a pre node). */
static int case_input(const struct rcase *c, const struct dt_module *m,
		      const struct dt_rules *r, uint32_t i)
{
	const struct dt_node *src = dt_node_get(m, dt_rules_input(r, i)->node);
	const char *name = dt_str_get(m, src->name);
	for (int k = 0; k < MAX_INPUTS && c->in[k].name; k++)
		if (strcmp(c->in[k].name, name) == 0)
			return k;
	fail_msg("%s: op input %s is not a case input", c->label, name);
	return -1;
}

/* Whether one-dim placements `pl` (width) fit a mesh of n ranks as the
 * expansion's filter says: a sharded dim at least n long, and the local
 * lengths the row's flags ask for. */
static bool fits(const struct dt_rules *r, const struct dt_placement *pl, int n,
		 uint8_t flags)
{
	for (uint32_t t = 0; t < r->nout + r->nin; t++) {
		const struct dt_placement *p = &pl[t];
		if (p->kind != DT_PL_SHARD && p->kind != DT_PL_STRIDED_SHARD)
			continue;
		int64_t len = r->tensors.data[t].shape[p->dim], mesh = n;
		struct dt_placements one = {.ndim = 1};
		one.p[0] = *p;
		struct dt_shard_lengths l;
		dt_shard_lengths(&one, &mesh, p->dim, len, &l);
		if (len < n || ((flags & DT_ROW_EVEN) && l.min != l.max) ||
		    ((flags & DT_ROW_NONEMPTY) && l.min == 0) ||
		    ((flags & DT_ROW_NO_UNIT) && l.unit))
			return false;
	}
	return true;
}

/* Check one filled row (width placements) of case c on n ranks; a row
 * right only as lowering rewrites the op (`lowered`) runs the global
 * graph, pinned to the row, lowered for each rank. */
static bool check_filled(const struct rcase *c, const struct dt_module *global,
			 const struct dt_rules *r, const struct dt_placement *pl, int n,
			 bool lowered, const struct run *ref, char *why, size_t whylen,
			 struct checked *count)
{
	struct dt_placement in[MAX_INPUTS];
	memset(in, 0, sizeof in);
	for (uint32_t i = 0; i < r->nin; i++)
		in[case_input(c, global, r, i)] = pl[r->nout + i];
	const struct dt_rule_tensor *out0 = &r->tensors.data[0];
	int64_t size[DT_MAX_RANK];
	local_shape(&pl[0], n, 0, out0->shape, out0->rank, size);
	struct run *got = calloc((size_t)n, sizeof *got);
	char *xml = malloc(XML_CAP);
	bool ok = true;
	for (int k = 0; k < n && ok; k++) {
		local_shape(&pl[0], n, k, out0->shape, out0->rank, size);
		graph_text(c, n, in, lowered ? &pl[0] : NULL, k,
			   lowered ? out0->shape : size, out0->rank, xml);
		count->runs++;
		if (!run_graph(xml, n, k, lowered, &got[k])) {
			snprintf(why, whylen, "rank %d does not run: %.400s", k, got[k].error);
			ok = false;
		}
	}
	for (uint32_t j = 0; ok && j < r->nout; j++)
		ok = combine_ok(&ref->out[j], got, (int)j, n, &pl[j], why, whylen);
	for (int k = 0; k < n; k++)
		run_fini(&got[k]);
	free(got);
	free(xml);
	return ok;
}

static void row_label(const struct dt_rules *r, const struct dt_placement *pl,
		      char *buf, size_t n)
{
	size_t at = 0;
	for (uint32_t t = 0; t < r->nout + r->nin && at < n; t++) {
		struct dt_placements one = {.ndim = 1};
		one.p[0] = pl[t];
		char s[32];
		dt_placements_print(&one, s, sizeof s);
		at += (size_t)snprintf(buf + at, n - at, "%s%s",
				       t == 0 ? "" : t == r->nout ? " <- " : ", ", s);
	}
}

/* Fill row `row` of r with sharding kind sf (0: S) into pl. */
static void fill_row(const struct dt_rules *r, uint32_t row, int32_t sf,
		     struct dt_placement *pl)
{
	const struct dt_rule_entry *e = dt_rules_row(r, row);
	for (uint32_t t = 0; t < r->nout + r->nin; t++) {
		memset(&pl[t], 0, sizeof pl[t]);
		if (e[t].kind == DT_RULE_PARTIAL) {
			pl[t].kind = DT_PL_PARTIAL;
			pl[t].reduce = e[t].reduce;
		} else if (e[t].kind == DT_RULE_SHARD) {
			pl[t].kind = sf ? DT_PL_STRIDED_SHARD : DT_PL_SHARD;
			pl[t].dim = e[t].dim;
			pl[t].split_factor = sf;
		} else if (e[t].kind == DT_RULE_STRIDED) {
			pl[t].kind = e[t].split > 1 ? DT_PL_STRIDED_SHARD : DT_PL_SHARD;
			pl[t].dim = e[t].dim;
			pl[t].split_factor = e[t].split > 1 ? e[t].split : 0;
		}
	}
}

/* Check every row of case c (r from `global`) on n ranks; the number of
 * failing rows, the last described in `why` (each printed with report). */
static int check_rules(const struct rcase *c, const struct dt_module *global,
		       const struct dt_rules *r, int n, const struct run *ref,
		       char *why, size_t whylen, struct checked *count, bool report)
{
	int failures = 0;
	struct dt_placement pl[DT_RULE_MAX_TENSORS];
	for (uint32_t row = 0; row < r->nrows; row++) {
		const struct dt_rule_entry *e = dt_rules_row(r, row);
		bool placeholder = false;
		for (uint32_t t = 0; t < r->nout + r->nin; t++)
			placeholder |= e[t].kind == DT_RULE_SHARD;
		uint8_t flags = r->flags.data[row];
		bool plain = (flags & DT_ROW_PLAIN) != 0;
		count->rows++;
		for (int32_t sf = 0; sf <= (placeholder && !plain ? 2 : 0); sf += 2) {
			fill_row(r, row, sf, pl);
			if (!fits(r, pl, n, flags)) {
				count->skipped++;
				continue;
			}
			count->kinds++;
			char reason[512];
			if (check_filled(c, global, r, pl, n, (flags & DT_ROW_GLOBAL_COUNT) != 0,
					 ref, reason, sizeof reason, count))
				continue;
			char label[512];
			row_label(r, pl, label, sizeof label);
			snprintf(why, whylen, "%s on %d ranks: row %.300s: %.400s", c->label, n, label, reason);
			failures++;
			if (report)
				print_message("FAIL %s\n", why);
		}
	}
	return failures;
}

/* Load case c's global graph on n ranks, run it into ref, fill its rules. */
static struct dt_module *prepare(const struct rcase *c, int n, struct run *ref,
				 struct dt_rules *r)
{
	char *xml = malloc(XML_CAP);
	int64_t size[DT_MAX_RANK];
	int size_rank = c->size ? parse_shape(c->size, size) : 0;
	graph_text(c, n, NULL, NULL, 0, c->size ? size : NULL, size_rank, xml);
	if (!run_graph(xml, 1, 0, false, ref))
		fail_msg("%s: the global graph does not run: %s", c->label, ref->error);
	struct run quiet = {0};
	struct dt_diag d;
	dt_diag_init(&d);
	d.emit = keep_error;
	d.ud = &quiet;
	struct dt_module *m = load(xml, -1, &d);
	assert_non_null(m);
	free(xml);
	uint32_t op = dt_module_find_node(m, dt_str_intern(m, "op"));
	char err[256];
	if (dt_rules_fill(r, m, op, err, sizeof err) != DT_OK)
		fail_msg("%s: %s", c->label, err);
	assert_int_equal(r->nout, dt_node_get(m, op)->ntensors);
	return m;
}

static void test_rows_by_execution(void **state)
{
	(void)state;
	struct checked count = {0};
	int failures = 0;
	char why[1024] = "";
	for (int ci = 0; ci < NCASES; ci++) {
		const struct rcase *c = &cases[ci];
		for (int n = 2; n <= 4; n++) {
			struct run ref = {0};
			struct dt_rules r = {0};
			struct dt_module *m = prepare(c, n, &ref, &r);
			failures += check_rules(c, m, &r, n, &ref, why, sizeof why, &count, true);
			dt_rules_fini(&r);
			dt_module_destroy(m);
			run_fini(&ref);
		}
	}
	print_message("%d cases, %d rows (3 mesh sizes), %d filled rows checked by %d "
		      "rank runs, %d skipped as too short or uneven\n",
		      NCASES, count.rows, count.kinds, count.runs, count.skipped);
	assert_int_equal(failures, 0);
}

/* Wrong rows, appended to a case's rules, must each fail. */
struct planted {
	const char *label;
	struct dt_rule_entry row[4]; /* outputs then inputs */
};

static void test_wrong_rows_fail(void **state)
{
	(void)state;
#define RE(k, op, d) {DT_RULE_##k, DT_REDUCE_##op, d, 0}
#define RS(d, sf) {DT_RULE_STRIDED, 0, d, sf}
	static const struct planted planted[] = {
		/* relu is not linear */
		{"relu", {RE(PARTIAL, SUM, 0), RE(PARTIAL, SUM, 0)}},
		/* a partial plus a replicated value counts it n times */
		{"add", {RE(PARTIAL, SUM, 0), RE(PARTIAL, SUM, 0), RE(REPLICATE, SUM, 0)}},
		/* mm's rows dimension does not follow the columns of a */
		{"mm", {RE(SHARD, SUM, 0), RE(SHARD, SUM, 1), RE(REPLICATE, SUM, 0)}},
		/* a mean over a sharded dim is an average, not a sum */
		{"mean_dim", {RE(PARTIAL, SUM, 0), RE(SHARD, SUM, 1)}},
		/* softmax normalizes over its dim */
		{"softmax", {RE(SHARD, SUM, 1), RE(SHARD, SUM, 1)}},
		/* a view that merges dims keeps the first dim's shard, not the second's */
		{"view_merge", {RE(SHARD, SUM, 0), RE(SHARD, SUM, 1)}},
		/* a merged inner dim is not a plain shard of the merged one */
		{"view_heads", {RE(SHARD, SUM, 0), RE(SHARD, SUM, 1)}},
		/* _reshape_alias: the same, whatever strides it states */
		{"reshape_alias", {RE(SHARD, SUM, 0), RE(SHARD, SUM, 1)}},
		/* an inner dim merged behind 4 rows is 4 pieces, not 2 */
		{"view_merge", {RS(0, 2), RE(SHARD, SUM, 1)}},
		/* splitting a strided shard: its pieces are the outer dim */
		{"view_unheads", {RS(1, 1), RS(0, 3)}},
		/* cat along its own dim */
		{"cat", {RE(SHARD, SUM, 0), RE(SHARD, SUM, 0), RE(SHARD, SUM, 0)}},
		/* ones are not a partial sum */
		{"ones_like", {RE(PARTIAL, SUM, 0), RE(PARTIAL, SUM, 0)}},
	};
#undef RE
#undef RS
	for (size_t k = 0; k < sizeof planted / sizeof planted[0]; k++) {
		const struct rcase *c = NULL;
		for (int ci = 0; ci < NCASES; ci++)
			if (strcmp(cases[ci].label, planted[k].label) == 0)
				c = &cases[ci];
		assert_non_null(c);
		struct run ref = {0};
		struct dt_rules r = {0};
		struct dt_module *m = prepare(c, 2, &ref, &r);
		/* Keep only the planted row. */
		uint32_t w = r.nout + r.nin;
		r.entries.len = 0;
		uint32_t at = dt_vec_grow(&r.entries, w);
		memcpy(&r.entries.data[at], planted[k].row, w * sizeof *planted[k].row);
		r.flags.len = 0;
		dt_vec_push(&r.flags, (uint8_t)0);
		r.nrows = 1;
		struct checked count = {0};
		char why[1024] = "";
		int f = check_rules(c, m, &r, 2, &ref, why, sizeof why, &count, false);
		if (f == 0)
			fail_msg("planted row %zu of %s was not caught", k, c->label);
		dt_rules_fini(&r);
		dt_module_destroy(m);
		run_fini(&ref);
	}
}

/* Every op with rows (not "replicate", "new") has a case. */
static void test_every_op_has_a_case(void **state)
{
	(void)state;
	for (int op = 1; op < DT_NOPS; op++) {
		const char *family = dt_rules_family((enum dt_op)op);
		const struct dt_op_info *info = dt_op_get((enum dt_op)op);
		if (info->flags & (DT_OPF_STRUCTURAL | DT_OPF_COLLECTIVE | DT_OPF_WAIT) ||
		    op == DT_OP_REDISTRIBUTE || dt_op_is_spmd((enum dt_op)op)) {
			assert_null(family);
			continue;
		}
		if (!family)
			fail_msg("%s has no entry in sharding/rules.def", info->target);
		if (strcmp(family, "replicate") == 0 || strcmp(family, "new") == 0)
			continue;
		char quoted[256];
		snprintf(quoted, sizeof quoted, "target=\"%s\"", info->target);
		bool found = false;
		for (int ci = 0; ci < NCASES && !found; ci++)
			found = strstr(cases[ci].call, quoted) != NULL;
		if (!found)
			fail_msg("no execution case for %s (family %s)", info->target, family);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_op_has_a_case),
		cmocka_unit_test(test_wrong_rows_fail),
		cmocka_unit_test(test_rows_by_execution),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
