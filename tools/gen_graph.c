// SPDX-License-Identifier: MIT
/* gen_graph.c: the graph builder of `dtopt gen`, a synthetic generator of
 * local-view transformer-like forward+backward graphs of any size and mesh,
 * full of the collective chains that fuse-collectives must find (benchmarks and
 * fuzzing).
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
 * can size the graph from two small trial builds. The nodes themselves
 * come from gen_ops.c. */
#include "gen_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The parameters of one layer, in placeholder (and output) order. A weight
 * is [rows·H, cols·H] sharded on dim 0; a vector is [rows·H], replicated. */

enum gen_param {
	P_LN1_W,
	P_LN1_B,
	P_WQ,
	P_WK,
	P_WV,
	P_WO,
	P_LN2_W,
	P_LN2_B,
	P_W1,
	P_B1,
	P_W2,
	P_B2,
	GEN_NPARAMS
};
_Static_assert(P_LN1_B == P_LN1_W + 1 && P_LN2_B == P_LN2_W + 1,
	       "a norm's bias follows its weight (norm_bw)");

static const struct gen_param_info {
	bool weight;
	int rows, cols;	   /* multiples of hidden; cols 0 for vectors */
	bool split_reduce; /* vector grad: all_reduce a pair, then the rest */
} gen_params[GEN_NPARAMS] = {
    [P_LN1_W] = {false, 1, 0, true}, [P_LN1_B] = {false, 1, 0, false},
    [P_WQ] = {true, 1, 1, false},    [P_WK] = {true, 1, 1, false},
    [P_WV] = {true, 1, 1, false},    [P_WO] = {true, 1, 1, false},
    [P_LN2_W] = {false, 1, 0, true}, [P_LN2_B] = {false, 1, 0, false},
    [P_W1] = {true, 4, 1, false},    [P_B1] = {false, 4, 0, false},
    [P_W2] = {true, 1, 4, false},    [P_B2] = {false, 1, 0, false},
};

/* One layer's placeholders, sharding choices, saved activations and
 * reduced gradients. */
struct gen_layer {
	uint32_t param[GEN_NPARAMS];
	uint32_t grad[GEN_NPARAMS];
	uint8_t gather[GEN_NPARAMS]
		      [DT_MAX_MESH_DIMS]; /* weights: gather order */
	uint8_t ngather[GEN_NPARAMS];
	/* forward values the backward reads */
	uint32_t h, ln1[3], q, k, v, probs, attn, h1, ln2[3], f1v, a;
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
				n = 0; /* replicated: no gather, an all_reduce
					*/
			L->ngather[p] = (uint8_t)n;
			int64_t shards = 1;
			for (int i = 0; i < n; i++)
				shards *= g->o->mesh[L->gather[p][i]];
			v = gen_val_2d(g->o->dtype, rows / shards, cols);
			s = weight_sharding(g, L->gather[p], n, rows, cols);
		} else {
			v = gen_val_contig(g->o->dtype,
					   (int64_t[]){pi->rows * H}, 1);
			s = plain_sharding(g, &v, false);
		}
		L->param[p] =
		    gen_emit_placeholder(g, "primals", ++g->nprimals, &v, &s);
	}
}

/* The full weight `p` (forward: a direct gather chain; backward: with
 * cancelling permutes between the links). */
static uint32_t full_weight(struct gen *g, const struct gen_layer *L, int p,
			    bool backward)
{
	return gen_gather_chain(g, L->param[p], L->gather[p], L->ngather[p],
				backward);
}

/* Forward of one pre-LN block; returns the block output. */
static uint32_t build_forward(struct gen *g, struct gen_layer *L, uint32_t h)
{
	const int64_t S = g->o->seq, H = g->o->hidden;
	L->h = h;
	gen_layer_norm(g, h, L->param[P_LN1_W], L->param[P_LN1_B], L->ln1);
	L->q = gen_linear(g, L->ln1[0], full_weight(g, L, P_WQ, false));
	L->k = gen_linear(g, L->ln1[0], full_weight(g, L, P_WK, false));
	L->v = gen_linear(g, L->ln1[0], full_weight(g, L, P_WV, false));
	uint32_t scores = gen_mm(g, L->q, gen_transpose(g, OP_T, L->k));
	L->probs = gen_softmax(g, scores);
	L->attn = gen_mm(g, L->probs, L->v);
	uint32_t o = gen_linear(g, L->attn, full_weight(g, L, P_WO, false));
	L->h1 = gen_add(g, h, o);

	gen_layer_norm(g, L->h1, L->param[P_LN2_W], L->param[P_LN2_B], L->ln2);
	uint32_t f1 = gen_linear(g, L->ln2[0], full_weight(g, L, P_W1, false));
	f1 = gen_add(g, f1, L->param[P_B1]);
	L->f1v = gen_reshape(g, OP_VIEW, f1, (int64_t[]){1, S, 4 * H}, 3);
	uint32_t act = gen_pointwise(g, OP_GELU, L->f1v, 0, 1);
	L->a = gen_reshape(g, OP_UNSAFE_VIEW, act, (int64_t[]){S, 4 * H}, 2);
	uint32_t f2 = gen_linear(g, L->a, full_weight(g, L, P_W2, false));
	f2 = gen_add(g, f2, L->param[P_B2]);
	return gen_add(g, L->h1, f2);
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
	grad = gen_reduce_chain(g, OP_RS, grad, order, n);
	int nrest = other_dims(g, order, n, rest);
	if (nrest > 0)
		grad = gen_reduce_chain(g, OP_AR, grad, rest, nrest);
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
		return gen_reduce_chain(g, OP_AR, grad, dims, nd);
	int a = (int)(gen_random(g) % (uint64_t)nd);
	int b = (a + 1 + (int)(gen_random(g) % (uint64_t)(nd - 1))) % nd;
	uint8_t pair[2] = {(uint8_t)(a < b ? a : b), (uint8_t)(a < b ? b : a)};
	int64_t len = gen_val_get(g, grad, 0).shape[0];
	grad = gen_reduce_chain(g, OP_AR, grad, pair, 2);
	grad = gen_reshape(g, OP_VIEW, grad, (int64_t[]){1, len}, 2);
	int nrest = other_dims(g, pair, 2, rest);
	grad = gen_reduce_chain(g, OP_AR, grad, rest, nrest);
	return gen_reshape(g, OP_UNSAFE_VIEW, grad, &len, 1);
}

/* Gradients of linear(x, w) given grad of its output: returns grad x and
 * stores the reduced weight gradient. */
static uint32_t linear_bw(struct gen *g, struct gen_layer *L, int p,
			  uint32_t grad, uint32_t x)
{
	uint32_t w = full_weight(g, L, p, true);
	uint32_t gx = gen_mm(g, grad, w);
	uint32_t gw = gen_mm(g, gen_transpose(g, OP_T, grad), x);
	L->grad[p] = reduce_weight_grad(g, L, p, gw);
	return gx;
}

/* The backward of a layer norm (weight param pw, its bias pw + 1; input
 * x, saved results ln): its parameters' gradients reduced, the input's
 * returned. */
static uint32_t norm_bw(struct gen *g, struct gen_layer *L, int pw,
			uint32_t grad, uint32_t x, const uint32_t *ln)
{
	uint32_t out[3];
	gen_layer_norm_bw(g, grad, x, ln, L->param[pw], L->param[pw + 1], out);
	L->grad[pw] =
	    reduce_vector_grad(g, out[1], gen_params[pw].split_reduce);
	L->grad[pw + 1] =
	    reduce_vector_grad(g, out[2], gen_params[pw + 1].split_reduce);
	return out[0];
}

/* Backward of one block given the gradient of its output; returns the
 * gradient of its input. */
static uint32_t build_backward(struct gen *g, struct gen_layer *L, uint32_t gy)
{
	const int64_t S = g->o->seq, H = g->o->hidden;
	static const int64_t dim0[] = {0};

	/* MLP: y = h1 + (mm(a, t(w2)) + b2), a = gelu(view(f1)) */
	L->grad[P_B2] = reduce_vector_grad(g, gen_sum(g, gy, dim0, 1, false),
					   gen_params[P_B2].split_reduce);
	uint32_t ga = linear_bw(g, L, P_W2, gy, L->a);
	ga = gen_reshape(g, OP_VIEW, ga, (int64_t[]){1, S, 4 * H}, 3);
	uint32_t gf1 = gen_pointwise(g, OP_GELU_BW, ga, L->f1v, 2);
	gf1 = gen_reshape(g, OP_UNSAFE_VIEW, gf1, (int64_t[]){S, 4 * H}, 2);
	L->grad[P_B1] = reduce_vector_grad(g, gen_sum(g, gf1, dim0, 1, false),
					   gen_params[P_B1].split_reduce);
	uint32_t gln2 = linear_bw(g, L, P_W1, gf1, L->ln2[0]);
	uint32_t gh1 = gen_add(g, gy, norm_bw(g, L, P_LN2_W, gln2, L->h1, L->ln2));

	/* attention: h1 = h + mm(softmax(q k^T) v, t(wo)) */
	uint32_t gattn = linear_bw(g, L, P_WO, gh1, L->attn);
	uint32_t gprobs = gen_mm(g, gattn, gen_transpose(g, OP_T, L->v));
	uint32_t gv = gen_mm(g, gen_transpose(g, OP_T, L->probs), gattn);
	uint32_t gscores = gen_softmax_bw(g, gprobs, L->probs);
	uint32_t gq = gen_mm(g, gscores, L->k);
	uint32_t gk = gen_mm(g, gen_transpose(g, OP_T, gscores), L->q);
	uint32_t gx = linear_bw(g, L, P_WQ, gq, L->ln1[0]);
	gx = gen_add(g, gx, linear_bw(g, L, P_WK, gk, L->ln1[0]));
	gx = gen_add(g, gx, linear_bw(g, L, P_WV, gv, L->ln1[0]));
	return gen_add(g, gh1, norm_bw(g, L, P_LN1_W, gx, L->h, L->ln1));
}

/* Declare the mesh and the groups --declare-groups asks for. */
static void declare_mesh(struct gen *g)
{
	const struct gen_options *o = g->o;
	struct dt_mesh mesh = {.name = dt_str_intern(g->m, "world"),
			       .ndim = (uint8_t)o->ndim,
			       .size = 1};
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
	g.m =
	    dt_module_create(o->out && strcmp(o->out, "-") ? o->out : "<gen>");
	g.seed_bits = (uint32_t)(gen_random(&g) >> 32);
	gen_intern_names(&g);
	char name[96];
	snprintf(name, sizeof(name), "gen_l%" PRId64 "_h%" PRId64, layers,
		 o->hidden);
	g.m->name = dt_str_intern(g.m, name);
	g.m->view = DT_VIEW_LOCAL;

	const int64_t S = o->seq, H = o->hidden;
	struct gen_layer *L = dt_calloc((size_t)layers, sizeof(*L));
	struct gen_val act = gen_val_2d(o->dtype, S, H);
	struct dt_sharding act_sharding = plain_sharding(&g, &act, true);

	/* placeholders first, as in an FX joint graph */
	uint32_t x = gen_emit_placeholder(&g, "primals", ++g.nprimals, &act,
					  &act_sharding);
	for (int64_t l = 0; l < layers; l++)
		build_params(&g, &L[l]);
	uint32_t tangent =
	    gen_emit_placeholder(&g, "tangents", 1, &act, &act_sharding);

	uint32_t h = x;
	for (int64_t l = 0; l < layers; l++)
		h = build_forward(&g, &L[l], h);
	static const int64_t all2[] = {0, 1};
	uint32_t loss = gen_sum(&g, h, all2, 2, true);
	uint8_t dims[DT_MAX_MESH_DIMS] = {0};
	for (int d = 0; d < o->ndim; d++)
		dims[d] = (uint8_t)d;
	loss = gen_reduce_chain(&g, OP_AR, loss, dims, o->ndim);

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
	struct dt_arg out = {.kind = DT_ARG_NODES,
			     .len = outs.len,
			     .v.first =
				 dt_module_add_refs(g.m, outs.data, outs.len)};
	gen_emit(&g, DT_NODE_OUTPUT, dt_str_intern(g.m, "output"), (dt_str){0},
		 &out, 1, NULL, 0, NULL);
	dt_vec_free(&outs);
	dt_free(L);

	declare_mesh(&g);
	dt_vec_free(&g.groups);
	return g.m;
}
