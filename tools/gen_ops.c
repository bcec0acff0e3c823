// SPDX-License-Identifier: MIT
/* gen_ops.c: the node emitter of `dtopt gen`'s builder: every op the
 * generator emits, appended with its result metadata computed from its
 * inputs' as PyTorch would (so shape-infer agrees), and the collective
 * chains with the fused groups they need. */
#include "gen_internal.h"

#include <inttypes.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* FX name base and target of each op. */


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

struct gen_val gen_val_get(const struct gen *g, uint32_t node, int i)
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

struct gen_val gen_val_contig(uint8_t dtype, const int64_t *shape, int rank)
{
	struct gen_val v = {.dtype = dtype, .rank = rank};
	memcpy(v.shape, shape, (size_t)rank * sizeof(int64_t));
	dt_contiguous_strides(v.shape, rank, v.stride);
	return v;
}

struct gen_val gen_val_2d(uint8_t dtype, int64_t a, int64_t b)
{
	return gen_val_contig(dtype, (int64_t[]){a, b}, 2);
}

static bool val_is_contig(const struct gen_val *v)
{
	struct gen_val c = gen_val_contig(v->dtype, v->shape, v->rank);
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

void gen_intern_names(struct gen *g)
{
	for (int i = 0; i < GEN_NOPS; i++)
		g->target[i] = dt_str_intern(g->m, gen_ops[i].target);
	g->reduce_name[GEN_SUM] = dt_str_intern(g->m, "sum");
	g->reduce_name[GEN_AVG] = dt_str_intern(g->m, "avg");
	for (int d = 0; d < g->o->ndim; d++)
		g->dim_group[d] = dt_str_intern(g->m, g->o->dims[d]);
}

static dt_str gen_name(struct gen *g, const char *base, uint32_t k)
{
	char buf[64];
	if (k == 0)
		return dt_str_intern(g->m, base);
	int n = snprintf(buf, sizeof(buf), "%s_%" PRIu32, base, k);
	return dt_str_intern_n(g->m, buf, (size_t)n);
}

uint32_t gen_emit(struct gen *g, enum dt_node_kind kind, dt_str name,
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
	return gen_emit(g, DT_NODE_CALL, name, g->target[op], args, nargs, outs,
		    nouts, NULL);
}

uint32_t gen_emit_placeholder(struct gen *g, const char *base, uint32_t k,
			      const struct gen_val *v,
			      const struct dt_sharding *sharding)
{
	return gen_emit(g, DT_NODE_PLACEHOLDER, gen_name(g, base, k), (dt_str){0},
		    NULL, 0, v, 1, sharding);
}

/* ------------------------------------------------------------------ */
/* Compute ops. Each derives its result metadata from its inputs'. */

uint32_t gen_transpose(struct gen *g, enum gen_op op, uint32_t x)
{
	struct gen_val v = gen_val_get(g, x, 0);
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

uint32_t gen_mm(struct gen *g, uint32_t a, uint32_t b)
{
	struct gen_val va = gen_val_get(g, a, 0), vb = gen_val_get(g, b, 0);
	DT_REQUIRE(va.rank == 2 && vb.rank == 2 && va.shape[1] == vb.shape[0]);
	struct gen_val r = gen_val_2d(va.dtype, va.shape[0], vb.shape[1]);
	struct dt_arg args[] = {arg_node(a), arg_node(b)};
	return emit_op(g, OP_MM, args, 2, &r, 1);
}

uint32_t gen_add(struct gen *g, uint32_t a, uint32_t b)
{
	struct gen_val va = gen_val_get(g, a, 0), vb = gen_val_get(g, b, 0);
	DT_REQUIRE(vb.rank <= va.rank);
	for (int i = 1; i <= vb.rank; i++)
		DT_REQUIRE(vb.shape[vb.rank - i] == va.shape[va.rank - i]);
	struct gen_val r = gen_val_contig(va.dtype, va.shape, va.rank);
	struct dt_arg args[] = {arg_node(a), arg_node(b)};
	return emit_op(g, OP_ADD, args, 2, &r, 1);
}

uint32_t gen_pointwise(struct gen *g, enum gen_op op, uint32_t x, uint32_t y,
		       int nin)
{
	struct gen_val v = gen_val_get(g, x, 0);
	struct gen_val r = gen_val_contig(v.dtype, v.shape, v.rank);
	struct dt_arg args[] = {arg_node(x), arg_node(y)};
	return emit_op(g, op, args, (uint32_t)nin, &r, 1);
}

uint32_t gen_softmax(struct gen *g, uint32_t x)
{
	struct gen_val v = gen_val_get(g, x, 0);
	struct gen_val r = gen_val_contig(v.dtype, v.shape, v.rank);
	struct dt_arg args[] = {arg_node(x), arg_int(-1), arg_bool(false)};
	return emit_op(g, OP_SOFTMAX, args, 3, &r, 1);
}

uint32_t gen_softmax_bw(struct gen *g, uint32_t grad, uint32_t out)
{
	struct gen_val v = gen_val_get(g, grad, 0);
	struct gen_val r = gen_val_contig(v.dtype, v.shape, v.rank);
	struct dt_arg args[] = {arg_node(grad), arg_node(out), arg_int(-1),
				arg_dtype(v.dtype)};
	return emit_op(g, OP_SOFTMAX_BW, args, 4, &r, 1);
}

uint32_t gen_reshape(struct gen *g, enum gen_op op, uint32_t x,
		     const int64_t *shape, int rank)
{
	struct gen_val v = gen_val_get(g, x, 0);
	DT_REQUIRE(val_is_contig(&v));
	DT_REQUIRE(dt_numel(v.shape, v.rank) == dt_numel(shape, rank));
	struct gen_val r = gen_val_contig(v.dtype, shape, rank);
	struct dt_arg args[] = {arg_node(x), arg_ints(g, shape, rank)};
	return emit_op(g, op, args, 2, &r, 1);
}

uint32_t gen_sum(struct gen *g, uint32_t x, const int64_t *dims, int ndims,
		 bool keepdim)
{
	struct gen_val v = gen_val_get(g, x, 0);
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
	struct gen_val r = gen_val_contig(v.dtype, shape, rank);
	struct dt_arg args[] = {arg_node(x), arg_ints(g, dims, ndims),
				arg_bool(true)};
	return emit_op(g, OP_SUM, args, keepdim ? 3 : 2, &r, 1);
}

/* getitem(x, 0..n-1) of a multi-result node: one node per result. */
static void op_getitems(struct gen *g, uint32_t x, int n, uint32_t *out)
{
	for (int i = 0; i < n; i++) {
		struct gen_val r = gen_val_get(g, x, i);
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

void gen_layer_norm(struct gen *g, uint32_t x, uint32_t w, uint32_t b,
		    uint32_t *out)
{
	struct gen_val v = gen_val_get(g, x, 0);
	int64_t stat[DT_MAX_RANK];
	memcpy(stat, v.shape, sizeof(stat));
	stat[v.rank - 1] = 1;
	struct gen_val r[3] = {
		gen_val_contig(v.dtype, v.shape, v.rank),
		gen_val_contig(ln_stat_dtype(v.dtype), stat, v.rank),
		gen_val_contig(ln_stat_dtype(v.dtype), stat, v.rank),
	};
	struct dt_arg args[] = {arg_node(x),
				arg_ints(g, &v.shape[v.rank - 1], 1),
				arg_node(w), arg_node(b), arg_float(GEN_LN_EPS)};
	uint32_t ln = emit_op(g, OP_LN, args, 5, r, 3);
	op_getitems(g, ln, 3, out);
}

void gen_layer_norm_bw(struct gen *g, uint32_t grad, uint32_t x,
		       const uint32_t *ln, uint32_t w, uint32_t b,
		       uint32_t *out)
{
	struct gen_val v = gen_val_get(g, x, 0);
	struct gen_val vw = gen_val_get(g, w, 0), vb = gen_val_get(g, b, 0);
	struct gen_val r[3] = {
		gen_val_contig(v.dtype, v.shape, v.rank),
		gen_val_contig(vw.dtype, vw.shape, vw.rank),
		gen_val_contig(vb.dtype, vb.shape, vb.rank),
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

uint32_t gen_linear(struct gen *g, uint32_t x, uint32_t w)
{
	return gen_mm(g, x, gen_transpose(g, OP_T, w));
}

/* ------------------------------------------------------------------ */
/* Collectives. Each is followed at once by its wait; both are numbered
 * with one shared counter ("ag_7", "wait_7"). Returns the wait. */
static uint32_t collective(struct gen *g, enum gen_op op, uint32_t x, int dim,
			   enum gen_reduce reduce)
{
	struct gen_val v = gen_val_get(g, x, 0);
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
	r = gen_val_contig(r.dtype, r.shape, r.rank);
	uint32_t k = ++g->ncollectives;
	uint32_t c = gen_emit(g, DT_NODE_CALL, gen_name(g, gen_ops[op].base, k),
			  g->target[op], args, nargs, &r, 1, NULL);
	struct dt_arg wargs[] = {arg_node(c)};
	return gen_emit(g, DT_NODE_CALL, gen_name(g, gen_ops[OP_WAIT].base, k),
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

uint32_t gen_gather_chain(struct gen *g, uint32_t x, const uint8_t *order,
			  int n, bool permutes)
{
	uint8_t rev[DT_MAX_MESH_DIMS];
	for (int i = 0; i < n; i++) {
		if (i > 0 && permutes)
			x = gen_transpose(g, OP_PERMUTE,
					 gen_transpose(g, OP_PERMUTE, x));
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

uint32_t gen_reduce_chain(struct gen *g, enum gen_op op, uint32_t x,
			  const uint8_t *order, int n)
{
	for (int i = 0; i < n; i++)
		x = collective(g, op, x, order[i], chain_reduce(g, i));
	if (n > 1)
		need_group(g, order, n);
	g->nreductions++;
	return x;
}
