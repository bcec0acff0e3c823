// SPDX-License-Identifier: MIT
/* gen_graph.c: the graph builder of `dtopt gen`, a synthetic generator of local-view transformer-like
 * forward+backward graphs of any size and mesh, full of the collective
 * chains that fuse-collectives must find (benchmarks and fuzzing).
 *
 * The model: every mesh dim is data parallel over tokens (each rank holds
 * `seq` tokens of `hidden` features) and every weight is sharded on dim 0
 * over two or more mesh dims (FSDP/ZeRO-3 style). Per layer (pre-LN block):
 *
 *   forward   each weight: all_gather chain over its shard dims, direct
 *             (semantics §4.1 with no views); t + mm; attention scores,
 *             _softmax, residual adds, native_layer_norm + getitems, a
 *             bias add, view / gelu / _unsafe_view
 *   backward  each weight: the all_gather chain again with a cancelling
 *             permute(1,0) pair between links (§4.1, §4.5); mm for the
 *             input and weight gradients; the weight gradient goes through
 *             a reduce_scatter chain back to the shard layout (§4.3), then
 *             an all_reduce chain over the mesh dims it is not sharded on;
 *             bias and norm gradients (sum.dim_IntList and
 *             native_layer_norm_backward) go through all_reduce chains
 *             (§4.2) mixing sum and avg
 *
 * and a loss (sum.dim_IntList, all_reduce avg chain) returned with all
 * gradients. Gathering over dims (g1, …, gn) in that order places the shard
 * of dim gn outermost, so each weight's <sharding> names that shard order
 * and its gradient is reduce-scattered in the reverse order (gn first):
 * both round trips are exact, and both chains fuse onto the group of
 * ordered dims (gn, …, g1), which --declare-groups=all declares together
 * with the reverse order.
 *
 * The output is a deterministic function of the options. Every node's
 * metadata is computed from its inputs' metadata as PyTorch would (so
 * shape-infer agrees). The seed picks dims and reduce ops but never the
 * node count of a layer, which is the same for every layer, so --nodes
 * can size the graph from two small trial builds. */
#include "gen.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The ops the generator emits: FX name base and target. */

enum gen_op {
	OP_MM,
	OP_T,
	OP_PERMUTE,
	OP_ADD,
	OP_GELU,
	OP_GELU_BW,
	OP_SOFTMAX,
	OP_SOFTMAX_BW,
	OP_LN,
	OP_LN_BW,
	OP_GETITEM,
	OP_VIEW,
	OP_UNSAFE_VIEW,
	OP_SUM,
	OP_AG,
	OP_RS,
	OP_AR,
	OP_WAIT,
	GEN_NOPS
};

static const struct gen_op_info {
	const char *base;   /* FX node name base */
	const char *target; /* FX target */
} gen_ops[GEN_NOPS] = {
	[OP_MM] = {"mm", "aten.mm.default"},
	[OP_T] = {"t", "aten.t.default"},
	[OP_PERMUTE] = {"permute", "aten.permute.default"},
	[OP_ADD] = {"add", "aten.add.Tensor"},
	[OP_GELU] = {"gelu", "aten.gelu.default"},
	[OP_GELU_BW] = {"gelu_backward", "aten.gelu_backward.default"},
	[OP_SOFTMAX] = {"_softmax", "aten._softmax.default"},
	[OP_SOFTMAX_BW] = {"_softmax_backward_data",
			   "aten._softmax_backward_data.default"},
	[OP_LN] = {"native_layer_norm", "aten.native_layer_norm.default"},
	[OP_LN_BW] = {"native_layer_norm_backward",
		      "aten.native_layer_norm_backward.default"},
	[OP_GETITEM] = {"getitem", "operator.getitem"},
	[OP_VIEW] = {"view", "aten.view.default"},
	[OP_UNSAFE_VIEW] = {"_unsafe_view", "aten._unsafe_view.default"},
	[OP_SUM] = {"sum", "aten.sum.dim_IntList"},
	[OP_AG] = {"ag", "_c10d_functional.all_gather_into_tensor.default"},
	[OP_RS] = {"rs", "_c10d_functional.reduce_scatter_tensor.default"},
	[OP_AR] = {"ar", "_c10d_functional.all_reduce.default"},
	[OP_WAIT] = {"wait", "_c10d_functional.wait_tensor.default"},
};

/* ------------------------------------------------------------------ */
/* The parameters of one layer, in placeholder (and output) order. A weight
 * is [rows·H, cols·H] sharded on dim 0; a vector is [rows·H], replicated. */

enum gen_param {
	P_LN1_W, P_LN1_B, P_WQ, P_WK, P_WV, P_WO,
	P_LN2_W, P_LN2_B, P_W1, P_B1, P_W2, P_B2,
	GEN_NPARAMS
};

static const struct gen_param_info {
	bool weight;
	int rows, cols;     /* multiples of hidden; cols 0 for vectors */
	bool split_reduce;  /* vector grad: all_reduce a pair, then the rest */
} gen_params[GEN_NPARAMS] = {
	[P_LN1_W] = {false, 1, 0, true},  [P_LN1_B] = {false, 1, 0, false},
	[P_WQ] = {true, 1, 1, false},     [P_WK] = {true, 1, 1, false},
	[P_WV] = {true, 1, 1, false},     [P_WO] = {true, 1, 1, false},
	[P_LN2_W] = {false, 1, 0, true},  [P_LN2_B] = {false, 1, 0, false},
	[P_W1] = {true, 4, 1, false},     [P_B1] = {false, 4, 0, false},
	[P_W2] = {true, 1, 4, false},     [P_B2] = {false, 1, 0, false},
};

/* One layer's placeholders, sharding choices, saved activations and
 * reduced gradients. */
struct gen_layer {
	uint32_t param[GEN_NPARAMS];
	uint32_t grad[GEN_NPARAMS];
	uint8_t gather[GEN_NPARAMS][DT_MAX_MESH_DIMS]; /* weights: gather order */
	uint8_t ngather[GEN_NPARAMS];
	/* forward values the backward reads */
	uint32_t h, ln1[3], q, k, v, probs, attn, h1, ln2[3], f1v, a;
};

/* ------------------------------------------------------------------ */
/* Builder state (one per build; no globals). */

struct gen {
	struct dt_module *m;
	const struct gen_options *o;
	uint64_t rng;
	uint32_t seed_bits;         /* seed-derived phase of the cycles */
	uint32_t count[GEN_NOPS];   /* FX name counters */
	uint32_t ncollectives;      /* shared number of ag/rs/ar and wait */
	uint32_t nprimals;
	uint32_t nweights;          /* weights so far, for --direction both */
	uint32_t nreductions;       /* reduction chains so far (op cycle) */
	dt_str target[GEN_NOPS];
	dt_str reduce_name[2];      /* "sum", "avg" */
	dt_str dim_group[DT_MAX_MESH_DIMS]; /* single-dim group names */
	DT_VEC(uint64_t) groups;    /* fused groups needed, group_key() */
};

/* splitmix64: a small, well-mixed deterministic sequence. */
static uint64_t gen_random(struct gen *g)
{
	uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------------ */
/* Values: the metadata of a node's result, read back from the module. */

struct gen_val {
	uint8_t dtype;
	int rank;
	int64_t shape[DT_MAX_RANK];
	int64_t stride[DT_MAX_RANK];
};

/* Result `i` of node `node`. */
static struct gen_val val_get(const struct gen *g, uint32_t node, int i)
{
	const struct dt_node *n = dt_node_get(g->m, node);
	DT_REQUIRE(i < n->ntensors);
	const struct dt_tensor *t = dt_node_tensor(g->m, n, i);
	struct gen_val v = {.dtype = t->dtype};
	int ns, nt;
	const int64_t *shape = dt_ints_get(g->m, t->shape, &ns);
	const int64_t *stride = dt_ints_get(g->m, t->stride, &nt);
	DT_REQUIRE(ns == nt && ns <= DT_MAX_RANK && t->offset == 0);
	v.rank = ns;
	memcpy(v.shape, shape, (size_t)ns * sizeof(int64_t));
	memcpy(v.stride, stride, (size_t)ns * sizeof(int64_t));
	return v;
}

/* A contiguous (row-major) value. */
static struct gen_val val_contig(uint8_t dtype, const int64_t *shape, int rank)
{
	struct gen_val v = {.dtype = dtype, .rank = rank};
	memcpy(v.shape, shape, (size_t)rank * sizeof(int64_t));
	dt_contiguous_strides(v.shape, rank, v.stride);
	return v;
}

static struct gen_val val_2d(uint8_t dtype, int64_t a, int64_t b)
{
	return val_contig(dtype, (int64_t[]){a, b}, 2);
}

static bool val_is_contig(const struct gen_val *v)
{
	struct gen_val c = val_contig(v->dtype, v->shape, v->rank);
	return memcmp(c.stride, v->stride, (size_t)v->rank * sizeof(int64_t)) == 0;
}

static struct dt_tensor val_tensor(struct gen *g, const struct gen_val *v)
{
	return (struct dt_tensor){
		.dtype = v->dtype,
		.shape = dt_ints_intern(g->m, v->shape, (size_t)v->rank),
		.stride = dt_ints_intern(g->m, v->stride, (size_t)v->rank),
	};
}

/* ------------------------------------------------------------------ */
/* Args. */

static struct dt_arg arg_node(uint32_t node)
{
	return (struct dt_arg){.kind = DT_ARG_NODE, .v.node = node};
}
static struct dt_arg arg_int(int64_t i)
{
	return (struct dt_arg){.kind = DT_ARG_INT, .v.i = i};
}
static struct dt_arg arg_ints(struct gen *g, const int64_t *v, int n)
{
	return (struct dt_arg){.kind = DT_ARG_INTS, .len = (uint32_t)n,
			       .v.ints = dt_ints_intern(g->m, v, (size_t)n)};
}
static struct dt_arg arg_float(double f)
{
	return (struct dt_arg){.kind = DT_ARG_FLOAT, .v.f = f};
}
static struct dt_arg arg_bool(bool b)
{
	return (struct dt_arg){.kind = DT_ARG_BOOL, .v.b = b};
}
static struct dt_arg arg_str(dt_str s)
{
	return (struct dt_arg){.kind = DT_ARG_STR, .v.s = s};
}
static struct dt_arg arg_dtype(uint8_t dtype)
{
	return (struct dt_arg){.kind = DT_ARG_DTYPE, .v.dtype = dtype};
}

/* ------------------------------------------------------------------ */
/* Emitting nodes. */

static dt_str gen_name(struct gen *g, const char *base, uint32_t k)
{
	char buf[64];
	if (k == 0)
		return dt_str_intern(g->m, base);
	int n = snprintf(buf, sizeof(buf), "%s_%" PRIu32, base, k);
	return dt_str_intern_n(g->m, buf, (size_t)n);
}

/* Append a node with `nouts` results and return its id. */
static uint32_t emit(struct gen *g, enum dt_node_kind kind, dt_str name,
		     dt_str target, const struct dt_arg *args, uint32_t nargs,
		     const struct gen_val *outs, uint32_t nouts,
		     const struct dt_sharding *sharding)
{
	struct dt_tensor t[3];
	DT_REQUIRE(nouts <= 3);
	for (uint32_t i = 0; i < nouts; i++)
		t[i] = val_tensor(g, &outs[i]);
	struct dt_node_init in = {
		.kind = kind, .name = name, .target = target,
		.args = args, .nargs = nargs, .tensors = t, .ntensors = nouts,
		.sharding = sharding,
	};
	uint32_t id = dt_module_add_node(g->m, &in);
	dt_graph_append(g->m, id);
	return id;
}

/* A call_function node named FX-style after its op ("mm", "mm_1", …). */
static uint32_t emit_op(struct gen *g, enum gen_op op,
			const struct dt_arg *args, uint32_t nargs,
			const struct gen_val *outs, uint32_t nouts)
{
	dt_str name = gen_name(g, gen_ops[op].base, g->count[op]++);
	return emit(g, DT_NODE_CALL, name, g->target[op], args, nargs, outs,
		    nouts, NULL);
}

static uint32_t emit_placeholder(struct gen *g, const char *base, uint32_t k,
				 const struct gen_val *v,
				 const struct dt_sharding *sharding)
{
	return emit(g, DT_NODE_PLACEHOLDER, gen_name(g, base, k), (dt_str){0},
		    NULL, 0, v, 1, sharding);
}

/* ------------------------------------------------------------------ */
/* Compute ops. Each derives its result metadata from its inputs'. */

/* x.t() (OP_T) or x.permute(1, 0) (OP_PERMUTE) of a 2-D value: a view with
 * shape and strides swapped. */
static uint32_t op_transpose(struct gen *g, enum gen_op op, uint32_t x)
{
	struct gen_val v = val_get(g, x, 0);
	DT_REQUIRE(v.rank == 2);
	struct gen_val r = v;
	r.shape[0] = v.shape[1], r.shape[1] = v.shape[0];
	r.stride[0] = v.stride[1], r.stride[1] = v.stride[0];
	struct dt_arg args[2] = {arg_node(x)};
	uint32_t nargs = 1;
	if (op == OP_PERMUTE)
		args[nargs++] = arg_ints(g, (int64_t[]){1, 0}, 2);
	return emit_op(g, op, args, nargs, &r, 1);
}

/* a [M,K] @ b [K,N] -> contiguous [M,N]. */
static uint32_t op_mm(struct gen *g, uint32_t a, uint32_t b)
{
	struct gen_val va = val_get(g, a, 0), vb = val_get(g, b, 0);
	DT_REQUIRE(va.rank == 2 && vb.rank == 2 && va.shape[1] == vb.shape[0]);
	struct gen_val r = val_2d(va.dtype, va.shape[0], vb.shape[1]);
	struct dt_arg args[] = {arg_node(a), arg_node(b)};
	return emit_op(g, OP_MM, args, 2, &r, 1);
}

/* a + b, b broadcast over a's leading dims: contiguous, a's shape. */
static uint32_t op_add(struct gen *g, uint32_t a, uint32_t b)
{
	struct gen_val va = val_get(g, a, 0), vb = val_get(g, b, 0);
	DT_REQUIRE(vb.rank <= va.rank);
	for (int i = 1; i <= vb.rank; i++)
		DT_REQUIRE(vb.shape[vb.rank - i] == va.shape[va.rank - i]);
	struct gen_val r = val_contig(va.dtype, va.shape, va.rank);
	struct dt_arg args[] = {arg_node(a), arg_node(b)};
	return emit_op(g, OP_ADD, args, 2, &r, 1);
}

/* An elementwise op of `nin` same-shaped inputs (gelu, gelu_backward):
 * contiguous, shaped like the first. */
static uint32_t op_pointwise(struct gen *g, enum gen_op op, uint32_t x,
			     uint32_t y, int nin)
{
	struct gen_val v = val_get(g, x, 0);
	struct gen_val r = val_contig(v.dtype, v.shape, v.rank);
	struct dt_arg args[] = {arg_node(x), arg_node(y)};
	return emit_op(g, op, args, (uint32_t)nin, &r, 1);
}

/* _softmax(x, -1, False). */
static uint32_t op_softmax(struct gen *g, uint32_t x)
{
	struct gen_val v = val_get(g, x, 0);
	struct gen_val r = val_contig(v.dtype, v.shape, v.rank);
	struct dt_arg args[] = {arg_node(x), arg_int(-1), arg_bool(false)};
	return emit_op(g, OP_SOFTMAX, args, 3, &r, 1);
}

/* _softmax_backward_data(grad, out, -1, out.dtype). */
static uint32_t op_softmax_bw(struct gen *g, uint32_t grad, uint32_t out)
{
	struct gen_val v = val_get(g, grad, 0);
	struct gen_val r = val_contig(v.dtype, v.shape, v.rank);
	struct dt_arg args[] = {arg_node(grad), arg_node(out), arg_int(-1),
				arg_dtype(v.dtype)};
	return emit_op(g, OP_SOFTMAX_BW, args, 4, &r, 1);
}

/* view / _unsafe_view of a contiguous value to `shape`. */
static uint32_t op_reshape(struct gen *g, enum gen_op op, uint32_t x,
			   const int64_t *shape, int rank)
{
	struct gen_val v = val_get(g, x, 0);
	DT_REQUIRE(val_is_contig(&v));
	DT_REQUIRE(dt_numel(v.shape, v.rank) == dt_numel(shape, rank));
	struct gen_val r = val_contig(v.dtype, shape, rank);
	struct dt_arg args[] = {arg_node(x), arg_ints(g, shape, rank)};
	return emit_op(g, op, args, 2, &r, 1);
}

/* sum.dim_IntList(x, dims[, True]): contiguous, reduced dims removed (or
 * kept as 1). */
static uint32_t op_sum(struct gen *g, uint32_t x, const int64_t *dims,
		       int ndims, bool keepdim)
{
	struct gen_val v = val_get(g, x, 0);
	int64_t shape[DT_MAX_RANK];
	int rank = 0;
	for (int i = 0; i < v.rank; i++) {
		bool reduced = false;
		for (int j = 0; j < ndims; j++)
			reduced |= dims[j] == i;
		if (!reduced)
			shape[rank++] = v.shape[i];
		else if (keepdim)
			shape[rank++] = 1;
	}
	struct gen_val r = val_contig(v.dtype, shape, rank);
	struct dt_arg args[] = {arg_node(x), arg_ints(g, dims, ndims),
				arg_bool(true)};
	return emit_op(g, OP_SUM, args, keepdim ? 3 : 2, &r, 1);
}

/* getitem(x, 0..n-1) of a multi-result node: one node per result. */
static void op_getitems(struct gen *g, uint32_t x, int n, uint32_t *out)
{
	for (int i = 0; i < n; i++) {
		struct gen_val r = val_get(g, x, i);
		struct dt_arg args[] = {arg_node(x), arg_int(i)};
		out[i] = emit_op(g, OP_GETITEM, args, 2, &r, 1);
	}
}

/* Mean and rstd of a layer norm are kept in float32 for reduced-precision
 * inputs (PyTorch's CUDA kernels and meta functions). */
static uint8_t ln_stat_dtype(uint8_t dtype)
{
	return dtype == DT_FLOAT16 || dtype == DT_BFLOAT16 ? DT_FLOAT32 : dtype;
}

/* native_layer_norm(x [.., H], [H], w, b, eps) and its three getitems:
 * out[0] = normalized, out[1] = mean, out[2] = rstd ([.., 1]). */
static void op_layer_norm(struct gen *g, uint32_t x, uint32_t w, uint32_t b,
			  uint32_t *out)
{
	struct gen_val v = val_get(g, x, 0);
	int64_t stat[DT_MAX_RANK];
	memcpy(stat, v.shape, sizeof(stat));
	stat[v.rank - 1] = 1;
	struct gen_val r[3] = {
		val_contig(v.dtype, v.shape, v.rank),
		val_contig(ln_stat_dtype(v.dtype), stat, v.rank),
		val_contig(ln_stat_dtype(v.dtype), stat, v.rank),
	};
	struct dt_arg args[] = {arg_node(x),
				arg_ints(g, &v.shape[v.rank - 1], 1),
				arg_node(w), arg_node(b), arg_float(GEN_LN_EPS)};
	uint32_t ln = emit_op(g, OP_LN, args, 5, r, 3);
	op_getitems(g, ln, 3, out);
}

/* native_layer_norm_backward(grad, x, [H], mean, rstd, w, b, [T, T, T])
 * and its getitems: out[0] = grad x, out[1] = grad w, out[2] = grad b. */
static void op_layer_norm_bw(struct gen *g, uint32_t grad, uint32_t x,
			     const uint32_t *ln, uint32_t w, uint32_t b,
			     uint32_t *out)
{
	struct gen_val v = val_get(g, x, 0);
	struct gen_val vw = val_get(g, w, 0), vb = val_get(g, b, 0);
	struct gen_val r[3] = {
		val_contig(v.dtype, v.shape, v.rank),
		val_contig(vw.dtype, vw.shape, vw.rank),
		val_contig(vb.dtype, vb.shape, vb.rank),
	};
	struct dt_arg mask[3] = {arg_bool(true), arg_bool(true), arg_bool(true)};
	struct dt_arg items = {.kind = DT_ARG_ITEMS, .len = 3,
			       .v.first = dt_module_add_args(g->m, mask, 3)};
	struct dt_arg args[] = {arg_node(grad), arg_node(x),
				arg_ints(g, &v.shape[v.rank - 1], 1),
				arg_node(ln[1]), arg_node(ln[2]),
				arg_node(w), arg_node(b), items};
	uint32_t bw = emit_op(g, OP_LN_BW, args, 8, r, 3);
	op_getitems(g, bw, 3, out);
}

/* linear(x, w) = mm(x, t(w)). */
static uint32_t op_linear(struct gen *g, uint32_t x, uint32_t w)
{
	return op_mm(g, x, op_transpose(g, OP_T, w));
}

/* ------------------------------------------------------------------ */
/* Collectives. Each is followed at once by its wait; both are numbered
 * with one shared counter ("ag_7", "wait_7"). Returns the wait. */

enum gen_reduce { GEN_SUM, GEN_AVG };

static uint32_t collective(struct gen *g, enum gen_op op, uint32_t x, int dim,
			   enum gen_reduce reduce)
{
	struct gen_val v = val_get(g, x, 0);
	DT_REQUIRE(val_is_contig(&v));
	int64_t n = g->o->mesh[dim];
	struct gen_val r = v;
	struct dt_arg args[4] = {arg_node(x)};
	uint32_t nargs = 1;
	dt_str op_name = g->reduce_name[reduce];
	switch (op) {
	case OP_AG: /* input, group_size, group_name */
		r.shape[0] *= n;
		args[nargs++] = arg_int(n);
		break;
	case OP_RS: /* input, reduce_op, group_size, group_name */
		DT_REQUIRE(v.shape[0] % n == 0);
		r.shape[0] /= n;
		args[nargs++] = arg_str(op_name);
		args[nargs++] = arg_int(n);
		break;
	case OP_AR: /* input, reduce_op, group_name */
		args[nargs++] = arg_str(op_name);
		break;
	default:
		DT_REQUIRE(!"not a collective");
	}
	args[nargs++] = arg_str(g->dim_group[dim]);
	r = val_contig(r.dtype, r.shape, r.rank);
	uint32_t k = ++g->ncollectives;
	uint32_t c = emit(g, DT_NODE_CALL, gen_name(g, gen_ops[op].base, k),
			  g->target[op], args, nargs, &r, 1, NULL);
	struct dt_arg wargs[] = {arg_node(c)};
	return emit(g, DT_NODE_CALL, gen_name(g, gen_ops[OP_WAIT].base, k),
		    g->target[OP_WAIT], wargs, 1, &r, 1, NULL);
}

/* A group's ordered dims packed into one word: 4 bits per dim, the count
 * in the top bits. */
static uint64_t group_key(const uint8_t *dims, int n, bool reverse)
{
	uint64_t key = (uint64_t)n << 60;
	for (int i = 0; i < n; i++)
		key |= (uint64_t)dims[reverse ? n - 1 - i : i] << (4 * i);
	return key;
}

/* Record that a chain fuses onto the group of ordered dims `dims`;
 * --declare-groups=all declares it and its reverse. */
static void need_group(struct gen *g, const uint8_t *dims, int n)
{
	for (int rev = 0; rev < 2; rev++) {
		uint64_t key = group_key(dims, n, rev);
		bool seen = false;
		for (uint32_t i = 0; i < g->groups.len && !seen; i++)
			seen = g->groups.data[i] == key;
		if (!seen)
			dt_vec_push(&g->groups, key);
	}
}

/* all_gather chain over `order` (gathered first to last); with `permutes`
 * a cancelling permute(1,0) pair sits between consecutive links. The fused
 * group has the dims in reverse order (the last gathered is slowest). */
static uint32_t gather_chain(struct gen *g, uint32_t x, const uint8_t *order,
			     int n, bool permutes)
{
	uint8_t rev[DT_MAX_MESH_DIMS];
	for (int i = 0; i < n; i++) {
		if (i > 0 && permutes)
			x = op_transpose(g, OP_PERMUTE,
					 op_transpose(g, OP_PERMUTE, x));
		x = collective(g, OP_AG, x, order[i], GEN_SUM);
		rev[n - 1 - i] = order[i];
	}
	if (n > 1)
		need_group(g, rev, n);
	return x;
}

/* The reduce op of link `i` of the next reduction chain: the chains cycle
 * through all-sum, all-avg, sum then avg, avg then sum. */
static enum gen_reduce chain_reduce(const struct gen *g, int i)
{
	switch ((g->nreductions + g->seed_bits) % 4) {
	case 0: return GEN_SUM;
	case 1: return GEN_AVG;
	case 2: return i == 0 ? GEN_SUM : GEN_AVG;
	default: return i == 0 ? GEN_AVG : GEN_SUM;
	}
}

/* reduce_scatter (OP_RS) or all_reduce (OP_AR) chain over `order`. The
 * fused group has the dims in this order (the first scattered is
 * slowest; any order suits all_reduce). */
static uint32_t reduce_chain(struct gen *g, enum gen_op op, uint32_t x,
			     const uint8_t *order, int n)
{
	for (int i = 0; i < n; i++)
		x = collective(g, op, x, order[i], chain_reduce(g, i));
	if (n > 1)
		need_group(g, order, n);
	g->nreductions++;
	return x;
}

/* ------------------------------------------------------------------ */
/* Sharding choices. */

/* Choose the dims weight `wi` of a layer is sharded over and their gather
 * order: even weights over every mesh dim, odd ones (on 3-D and larger
 * meshes) over a random subset whose size cycles through 2 .. ndim-1. The
 * sizes depend only on `wi`, so every layer has the same node count. */
static int choose_gather(struct gen *g, int wi, uint8_t *order)
{
	int nd = g->o->ndim, n = nd;
	uint8_t all[DT_MAX_MESH_DIMS];
	for (int i = 0; i < nd; i++)
		all[i] = (uint8_t)i;
	if (nd >= 3 && wi % 2 == 1) {
		n = 2 + (wi / 2) % (nd - 2);
		for (int i = 0; i < n; i++) { /* partial Fisher-Yates */
			int j = i + (int)(gen_random(g) % (uint64_t)(nd - i));
			uint8_t tmp = all[i];
			all[i] = all[j], all[j] = tmp;
		}
		for (int i = 1; i < n; i++) /* back to mesh order */
			for (int j = i; j > 0 && all[j - 1] > all[j]; j--) {
				uint8_t tmp = all[j];
				all[j] = all[j - 1], all[j - 1] = tmp;
			}
	}
	bool asc = g->o->direction == GEN_DIR_ASC ||
		   (g->o->direction == GEN_DIR_BOTH &&
		    (g->nweights + g->seed_bits / 4) % 2 == 0);
	g->nweights++;
	for (int i = 0; i < n; i++)
		order[i] = all[asc ? i : n - 1 - i];
	return n;
}

/* The mesh dims not in dims[0..n), in mesh order; returns their count. */
static int other_dims(const struct gen *g, const uint8_t *dims, int n,
		      uint8_t *out)
{
	int k = 0;
	for (int d = 0; d < g->o->ndim; d++) {
		bool in = false;
		for (int i = 0; i < n; i++)
			in |= dims[i] == d;
		if (!in)
			out[k++] = (uint8_t)d;
	}
	return k;
}

/* The sharding of a weight gathered over `order`: S(0) on those dims, R
 * elsewhere; the last gathered dim shards outermost. */
static struct dt_sharding weight_sharding(struct gen *g, const uint8_t *order,
					  int n, int64_t rows, int64_t cols)
{
	struct dt_sharding s = {.mesh = 0};
	struct dt_placements *pl = &s.placements;
	pl->ndim = (uint8_t)g->o->ndim;
	for (int i = 0; i < n; i++)
		pl->p[order[i]] = (struct dt_placement){.kind = DT_PL_SHARD};
	dt_placements_default_order(pl);
	for (int i = 0; i < n; i++)
		pl->order_pos[order[i]] = (uint8_t)(n - 1 - i);
	s.global_shape = dt_ints_intern(g->m, (int64_t[]){rows, cols}, 2);
	s.has_global_shape = true;
	return s;
}

/* Replicated (`shard_tokens` false) or tokens sharded on dim 0 over every
 * mesh dim in mesh order (the rank's chunk is its row-major position). */
static struct dt_sharding plain_sharding(struct gen *g, const struct gen_val *v,
					 bool shard_tokens)
{
	struct dt_sharding s = {.mesh = 0};
	struct dt_placements *pl = &s.placements;
	pl->ndim = (uint8_t)g->o->ndim;
	int64_t global[DT_MAX_RANK];
	memcpy(global, v->shape, sizeof(global));
	for (int d = 0; shard_tokens && d < g->o->ndim; d++) {
		pl->p[d] = (struct dt_placement){.kind = DT_PL_SHARD};
		global[0] *= g->o->mesh[d];
	}
	dt_placements_default_order(pl);
	s.global_shape = dt_ints_intern(g->m, global, (size_t)v->rank);
	s.has_global_shape = true;
	return s;
}

/* ------------------------------------------------------------------ */
/* The model. */

/* Placeholders of one layer (primals_N, in gen_params order). */
static void build_params(struct gen *g, struct gen_layer *L)
{
	const int64_t H = g->o->hidden;
	int wi = 0;
	for (int p = 0; p < GEN_NPARAMS; p++) {
		const struct gen_param_info *pi = &gen_params[p];
		struct dt_sharding s;
		struct gen_val v;
		if (pi->weight) {
			int64_t rows = pi->rows * H, cols = pi->cols * H;
			int n = choose_gather(g, wi++, L->gather[p]);
			if (g->o->style == GEN_STYLE_DP)
				n = 0; /* replicated: no gather, an all_reduce */
			L->ngather[p] = (uint8_t)n;
			int64_t shards = 1;
			for (int i = 0; i < n; i++)
				shards *= g->o->mesh[L->gather[p][i]];
			v = val_2d(g->o->dtype, rows / shards, cols);
			s = weight_sharding(g, L->gather[p], n, rows, cols);
		} else {
			v = val_contig(g->o->dtype, (int64_t[]){pi->rows * H}, 1);
			s = plain_sharding(g, &v, false);
		}
		L->param[p] = emit_placeholder(g, "primals", ++g->nprimals, &v,
					       &s);
	}
}

/* The full weight `p` (forward: a direct gather chain; backward: with
 * cancelling permutes between the links). */
static uint32_t full_weight(struct gen *g, const struct gen_layer *L, int p,
			    bool backward)
{
	return gather_chain(g, L->param[p], L->gather[p], L->ngather[p],
			    backward);
}

/* Forward of one pre-LN block; returns the block output. */
static uint32_t build_forward(struct gen *g, struct gen_layer *L, uint32_t h)
{
	const int64_t S = g->o->seq, H = g->o->hidden;
	L->h = h;
	op_layer_norm(g, h, L->param[P_LN1_W], L->param[P_LN1_B], L->ln1);
	L->q = op_linear(g, L->ln1[0], full_weight(g, L, P_WQ, false));
	L->k = op_linear(g, L->ln1[0], full_weight(g, L, P_WK, false));
	L->v = op_linear(g, L->ln1[0], full_weight(g, L, P_WV, false));
	uint32_t scores = op_mm(g, L->q, op_transpose(g, OP_T, L->k));
	L->probs = op_softmax(g, scores);
	L->attn = op_mm(g, L->probs, L->v);
	uint32_t o = op_linear(g, L->attn, full_weight(g, L, P_WO, false));
	L->h1 = op_add(g, h, o);

	op_layer_norm(g, L->h1, L->param[P_LN2_W], L->param[P_LN2_B], L->ln2);
	uint32_t f1 = op_linear(g, L->ln2[0], full_weight(g, L, P_W1, false));
	f1 = op_add(g, f1, L->param[P_B1]);
	L->f1v = op_reshape(g, OP_VIEW, f1, (int64_t[]){1, S, 4 * H}, 3);
	uint32_t act = op_pointwise(g, OP_GELU, L->f1v, 0, 1);
	L->a = op_reshape(g, OP_UNSAFE_VIEW, act, (int64_t[]){S, 4 * H}, 2);
	uint32_t f2 = op_linear(g, L->a, full_weight(g, L, P_W2, false));
	f2 = op_add(g, f2, L->param[P_B2]);
	return op_add(g, L->h1, f2);
}

/* Reduce the full, partial gradient of weight `p` back to its shard:
 * reduce_scatter chain in the reverse gather order, then all_reduce over
 * the mesh dims the weight is replicated on. */
static uint32_t reduce_weight_grad(struct gen *g, const struct gen_layer *L,
				   int p, uint32_t grad)
{
	uint8_t order[DT_MAX_MESH_DIMS], rest[DT_MAX_MESH_DIMS];
	int n = L->ngather[p];
	for (int i = 0; i < n; i++)
		order[i] = L->gather[p][n - 1 - i];
	grad = reduce_chain(g, OP_RS, grad, order, n);
	int nrest = other_dims(g, order, n, rest);
	if (nrest > 0)
		grad = reduce_chain(g, OP_AR, grad, rest, nrest);
	return grad;
}

/* All-reduce the gradient of a replicated vector over every mesh dim. A
 * `split` one on a 3-D or larger mesh reduces a random pair of dims first,
 * then (behind a reshape, so the chains stay apart) the other dims. */
static uint32_t reduce_vector_grad(struct gen *g, uint32_t grad, bool split)
{
	uint8_t dims[DT_MAX_MESH_DIMS], rest[DT_MAX_MESH_DIMS];
	int nd = g->o->ndim;
	bool asc = g->nreductions % 2 == 0;
	for (int i = 0; i < nd; i++)
		dims[i] = (uint8_t)(asc ? i : nd - 1 - i);
	if (!split || nd < 3)
		return reduce_chain(g, OP_AR, grad, dims, nd);
	int a = (int)(gen_random(g) % (uint64_t)nd);
	int b = (a + 1 + (int)(gen_random(g) % (uint64_t)(nd - 1))) % nd;
	uint8_t pair[2] = {(uint8_t)(a < b ? a : b), (uint8_t)(a < b ? b : a)};
	int64_t len = val_get(g, grad, 0).shape[0];
	grad = reduce_chain(g, OP_AR, grad, pair, 2);
	grad = op_reshape(g, OP_VIEW, grad, (int64_t[]){1, len}, 2);
	int nrest = other_dims(g, pair, 2, rest);
	grad = reduce_chain(g, OP_AR, grad, rest, nrest);
	return op_reshape(g, OP_UNSAFE_VIEW, grad, &len, 1);
}

/* Gradients of linear(x, w) given grad of its output: returns grad x and
 * stores the reduced weight gradient. */
static uint32_t linear_bw(struct gen *g, struct gen_layer *L, int p,
			  uint32_t grad, uint32_t x)
{
	uint32_t w = full_weight(g, L, p, true);
	uint32_t gx = op_mm(g, grad, w);
	uint32_t gw = op_mm(g, op_transpose(g, OP_T, grad), x);
	L->grad[p] = reduce_weight_grad(g, L, p, gw);
	return gx;
}

/* Backward of one block given the gradient of its output; returns the
 * gradient of its input. */
static uint32_t build_backward(struct gen *g, struct gen_layer *L, uint32_t gy)
{
	const int64_t S = g->o->seq, H = g->o->hidden;
	static const int64_t dim0[] = {0};

	/* MLP: y = h1 + (mm(a, t(w2)) + b2), a = gelu(view(f1)) */
	L->grad[P_B2] = reduce_vector_grad(g, op_sum(g, gy, dim0, 1, false),
					   gen_params[P_B2].split_reduce);
	uint32_t ga = linear_bw(g, L, P_W2, gy, L->a);
	ga = op_reshape(g, OP_VIEW, ga, (int64_t[]){1, S, 4 * H}, 3);
	uint32_t gf1 = op_pointwise(g, OP_GELU_BW, ga, L->f1v, 2);
	gf1 = op_reshape(g, OP_UNSAFE_VIEW, gf1, (int64_t[]){S, 4 * H}, 2);
	L->grad[P_B1] = reduce_vector_grad(g, op_sum(g, gf1, dim0, 1, false),
					   gen_params[P_B1].split_reduce);
	uint32_t gln2 = linear_bw(g, L, P_W1, gf1, L->ln2[0]);
	uint32_t ln2[3];
	op_layer_norm_bw(g, gln2, L->h1, L->ln2, L->param[P_LN2_W],
			 L->param[P_LN2_B], ln2);
	L->grad[P_LN2_W] = reduce_vector_grad(g, ln2[1],
					      gen_params[P_LN2_W].split_reduce);
	L->grad[P_LN2_B] = reduce_vector_grad(g, ln2[2],
					      gen_params[P_LN2_B].split_reduce);
	uint32_t gh1 = op_add(g, gy, ln2[0]);

	/* attention: h1 = h + mm(softmax(q k^T) v, t(wo)) */
	uint32_t gattn = linear_bw(g, L, P_WO, gh1, L->attn);
	uint32_t gprobs = op_mm(g, gattn, op_transpose(g, OP_T, L->v));
	uint32_t gv = op_mm(g, op_transpose(g, OP_T, L->probs), gattn);
	uint32_t gscores = op_softmax_bw(g, gprobs, L->probs);
	uint32_t gq = op_mm(g, gscores, L->k);
	uint32_t gk = op_mm(g, op_transpose(g, OP_T, gscores), L->q);
	uint32_t gx = linear_bw(g, L, P_WQ, gq, L->ln1[0]);
	gx = op_add(g, gx, linear_bw(g, L, P_WK, gk, L->ln1[0]));
	gx = op_add(g, gx, linear_bw(g, L, P_WV, gv, L->ln1[0]));
	uint32_t ln1[3];
	op_layer_norm_bw(g, gx, L->h, L->ln1, L->param[P_LN1_W],
			 L->param[P_LN1_B], ln1);
	L->grad[P_LN1_W] = reduce_vector_grad(g, ln1[1],
					      gen_params[P_LN1_W].split_reduce);
	L->grad[P_LN1_B] = reduce_vector_grad(g, ln1[2],
					      gen_params[P_LN1_B].split_reduce);
	return op_add(g, gh1, ln1[0]);
}

/* Declare the mesh and the groups --declare-groups asks for. */
static void declare_mesh(struct gen *g)
{
	const struct gen_options *o = g->o;
	struct dt_mesh mesh = {.name = dt_str_intern(g->m, "world"),
			       .ndim = (uint8_t)o->ndim, .size = 1};
	for (int d = 0; d < o->ndim; d++) {
		mesh.shape[d] = o->mesh[d];
		mesh.dims[d] = g->dim_group[d];
		mesh.size *= o->mesh[d];
	}
	dt_vec_push(&g->m->meshes, mesh);
	for (int d = 0; d < o->ndim; d++) {
		struct dt_group grp = {.name = g->dim_group[d], .ndims = 1};
		grp.dims[0] = (uint8_t)d;
		dt_vec_push(&g->m->groups, grp);
	}
	if (o->declare != GEN_DECLARE_ALL)
		return;
	for (uint32_t i = 0; i < g->groups.len; i++) {
		uint64_t key = g->groups.data[i];
		struct dt_group grp = {.ndims = (uint8_t)(key >> 60)};
		char name[DT_MAX_MESH_DIMS * 33] = "";
		size_t len = 0;
		for (int j = 0; j < grp.ndims; j++) {
			grp.dims[j] = (uint8_t)(key >> (4 * j) & 0xf);
			len += (size_t)snprintf(name + len, sizeof(name) - len,
						"%s%s", j ? "_" : "",
						o->dims[grp.dims[j]]);
		}
		grp.name = dt_str_intern(g->m, name);
		dt_vec_push(&g->m->groups, grp);
	}
}

struct dt_module *dt_gen_build(const struct gen_options *o, int64_t layers)
{
	struct gen g = {.o = o, .rng = o->seed};
	g.m = dt_module_create(o->out && strcmp(o->out, "-") ? o->out : "<gen>");
	g.seed_bits = (uint32_t)(gen_random(&g) >> 32);
	for (int i = 0; i < GEN_NOPS; i++)
		g.target[i] = dt_str_intern(g.m, gen_ops[i].target);
	g.reduce_name[GEN_SUM] = dt_str_intern(g.m, "sum");
	g.reduce_name[GEN_AVG] = dt_str_intern(g.m, "avg");
	for (int d = 0; d < o->ndim; d++)
		g.dim_group[d] = dt_str_intern(g.m, o->dims[d]);
	char name[96];
	snprintf(name, sizeof(name), "gen_l%" PRId64 "_h%" PRId64, layers,
		 o->hidden);
	g.m->name = dt_str_intern(g.m, name);
	g.m->view = DT_VIEW_LOCAL;

	const int64_t S = o->seq, H = o->hidden;
	struct gen_layer *L = dt_calloc((size_t)layers, sizeof(*L));
	struct gen_val act = val_2d(o->dtype, S, H);
	struct dt_sharding act_sharding = plain_sharding(&g, &act, true);

	/* placeholders first, as in an FX joint graph */
	uint32_t x = emit_placeholder(&g, "primals", ++g.nprimals, &act,
				      &act_sharding);
	for (int64_t l = 0; l < layers; l++)
		build_params(&g, &L[l]);
	uint32_t tangent = emit_placeholder(&g, "tangents", 1, &act,
					    &act_sharding);

	uint32_t h = x;
	for (int64_t l = 0; l < layers; l++)
		h = build_forward(&g, &L[l], h);
	static const int64_t all2[] = {0, 1};
	uint32_t loss = op_sum(&g, h, all2, 2, true);
	uint8_t dims[DT_MAX_MESH_DIMS] = {0};
	for (int d = 0; d < o->ndim; d++)
		dims[d] = (uint8_t)d;
	loss = reduce_chain(&g, OP_AR, loss, dims, o->ndim);

	uint32_t gh = tangent;
	for (int64_t l = layers - 1; l >= 0; l--)
		gh = build_backward(&g, &L[l], gh);

	/* output: (loss, grad x, grads of every parameter in order) */
	DT_VEC(uint32_t) outs = {0};
	dt_vec_push(&outs, loss);
	dt_vec_push(&outs, gh);
	for (int64_t l = 0; l < layers; l++)
		for (int p = 0; p < GEN_NPARAMS; p++)
			dt_vec_push(&outs, L[l].grad[p]);
	struct dt_arg out = {.kind = DT_ARG_NODES, .len = outs.len,
			     .v.first = dt_module_add_refs(g.m, outs.data,
							   outs.len)};
	emit(&g, DT_NODE_OUTPUT, dt_str_intern(g.m, "output"), (dt_str){0},
	     &out, 1, NULL, 0, NULL);
	dt_vec_free(&outs);
	dt_free(L);

	declare_mesh(&g);
	dt_vec_free(&g.groups);
	return g.m;
}
