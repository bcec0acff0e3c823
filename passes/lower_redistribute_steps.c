// SPDX-License-Identifier: MIT
/* lower_redistribute_steps.c: the steps of one dtensor.redistribute of
 * the `lower-redistribute` pass, as DTensor runs them (the plan comes
 * from lower_redistribute_plan.c): each step with group_size > 1 emitted
 * as a functional collective and its wait plus the local ops DTensor
 * wraps around it. Per step, for this rank's
 * local tensor x (n = group_size, L = the step's logical length of the
 * dim, c = ceil(L / n)):
 *
 *   all_gather S(d)->R     pad d to c; all_gather; wait; d != 0: chunk(n,
 *                          dim 0) + cat(dim d); narrow(d, 0, L) if n·c != L
 *   all_reduce P->R        all_reduce; wait; div by `divisor` (merged
 *                          sum with avg)
 *   reduce_scatter P->S(d) pad d to n·c; d != 0: chunk(n, dim d) + cat(dim
 *                          0); reduce_scatter; wait; div; narrow d to this
 *                          rank's length if short
 *   all_to_all S(a)->S(b)  pad a to c_a and b to n·c_b; b != 0: chunk(n, b)
 *                          + cat(0); all_to_all_single with equal splits;
 *                          wait; a != 0: chunk(n, 0) + cat(a); narrow a
 *                          to L_a and b to this rank's length
 *   chunk R->S(d)          narrow(d, this rank's chunk) (no communication);
 *                          SPMD: dt.local_shard(x, mesh, before, after,
 *                          global shape), which narrows at run time
 *   partition R->P(op)     div by `divisor` (sum), else nothing
 *
 * Where d != 0, the shards are even, and x viewed with dim d first is
 * contiguous (a transposed gradient or shard: dense_dim_first), the
 * all_gather or reduce_scatter runs on that view, permute(x, [d, 0, …]),
 * and its result is permuted back: no chunk + cat copies the tensor
 * (DTensor copies it; semantics §3).
 *
 * In an SPMD program (no --rank) a collective works on pieces padded to
 * the largest (semantics §7): all_gather, then a static narrow, or
 * dt.pack_blocks where padding lies between the members' valid rows on
 * some rank; before a reduce_scatter a static pad, or dt.unpack_blocks;
 * all_to_all does both (unpack the target dim, pack the source dim).
 *
 * Emitted nodes are named after the redistribute node ("r.all_gather",
 * "r.wait", "r.chunk_0", …), carry its source line, and each step's
 * result carries <sharding> with the step's placements (the last one the
 * redistribute's target) and the global shape. */
#include "lower_redistribute_internal.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* Emitting nodes. */

static struct dt_arg arg_node(uint32_t id)
{
	return (struct dt_arg){.kind = DT_ARG_NODE, .v.node = id};
}

static struct dt_arg arg_int(int64_t v)
{
	return (struct dt_arg){.kind = DT_ARG_INT, .v.i = v};
}

static struct dt_arg arg_str(struct dt_module *m, const char *s)
{
	return (struct dt_arg){.kind = DT_ARG_STR, .v.s = dt_str_intern(m, s)};
}

static struct dt_arg arg_ints(struct dt_module *m, const int64_t *v, int n)
{
	return (struct dt_arg){.kind = DT_ARG_INTS, .len = (uint32_t)n,
			       .v.ints = dt_ints_intern(m, v, (size_t)n)};
}

/* "BASE.SUFFIX", or with ".2", ".3", … when taken. */
static dt_str new_name(struct dt_lower *l, const char *suffix)
{
	char name[320];
	size_t nb = strlen(l->base), ns = strlen(suffix);
	nb = nb > 200 ? 200 : nb;
	ns = ns > 100 ? 100 : ns;
	memcpy(name, l->base, nb);
	name[nb] = '.';
	memcpy(name + nb + 1, suffix, ns);
	int len = (int)(nb + 1 + ns);
	name[len] = 0;
	dt_str s = dt_str_intern_n(l->m, name, (size_t)len);
	for (int k = 2; dt_module_find_node(l->m, s); k++) {
		snprintf(name + len, sizeof name - (size_t)len, ".%d", k);
		s = dt_str_intern(l->m, name);
	}
	return s;
}

/* A call of `op` before l->before with its metadata inferred; 0 after a
 * report (an internal inconsistency: the steps are planned to fit). */
static uint32_t emit(struct dt_lower *l, enum dt_op op, const char *suffix,
		     const struct dt_arg *args, uint32_t nargs)
{
	struct dt_module *m = l->m;
	if (!l->target[op].id)
		l->target[op] = dt_str_intern(m, dt_op_get(op)->target);
	uint32_t id = dt_module_add_node(m, &(struct dt_node_init){
		.kind = DT_NODE_CALL,
		.name = new_name(l, suffix),
		.target = l->target[op],
		.line = l->line,
		.args = args,
		.nargs = nargs,
	});
	dt_graph_insert_before(m, id, l->before);
	struct dt_shape_ctx c;
	if (dt_infer_node(m, id, l->ctx->diag, &c) != DT_OK)
		return 0;
	dt_node_set_tensors(m, id, c.out, c.nout);
	return id;
}

uint32_t dt_lower_emit(struct dt_lower *l, enum dt_op op, const char *suffix,
		       const struct dt_arg *args, uint32_t nargs)
{
	return emit(l, op, suffix, args, nargs);
}

int dt_lower_shape_of(const struct dt_module *m, uint32_t id, int64_t *shape)
{
	int rank;
	const int64_t *s =
		dt_ints_get(m, dt_node_tensor(m, dt_node_get(m, id), 0)->shape,
			    &rank);
	memcpy(shape, s, (size_t)rank * sizeof *shape);
	return rank;
}

/* constant_pad_nd(x, [0, 0, …, 0, amount]): `amount` zeros at the end of
 * dim `dim` (DTensor's pad_tensor). */
static uint32_t emit_pad(struct dt_lower *l, uint32_t x, int dim,
			 int64_t amount)
{
	int64_t shape[DT_MAX_RANK], pad[2 * DT_MAX_RANK] = {0};
	int rank = dt_lower_shape_of(l->m, x, shape);
	int npad = 2 * (rank - dim);
	pad[npad - 1] = amount;
	struct dt_arg a[2] = {arg_node(x), arg_ints(l->m, pad, npad)};
	return emit(l, DT_OP_CONSTANT_PAD_ND, "pad", a, 2);
}

static uint32_t emit_narrow(struct dt_lower *l, uint32_t x, int dim,
			    int64_t start, int64_t length)
{
	struct dt_arg a[4] = {arg_node(x), arg_int(dim), arg_int(start),
			      arg_int(length)};
	return emit(l, DT_OP_NARROW, "narrow", a, 4);
}

/* chunk(x, n, from) then cat(chunks, to): functional collectives' way of
 * moving the n pieces of one dim onto another. */
static uint32_t emit_move(struct dt_lower *l, uint32_t x, int64_t n,
			  int from, int to)
{
	struct dt_module *m = l->m;
	if (n > DT_MAX_RESULTS) {
		dt_diag_report(l->ctx->diag, DT_ERROR, m->file, l->line, NULL,
			       "cannot lower redistribute '%s': moving %lld "
			       "chunks between tensor dims needs one chunk "
			       "result each, and a node has at most %d",
			       l->base, (long long)n, DT_MAX_RESULTS);
		return 0;
	}
	struct dt_arg a[3] = {arg_node(x), arg_int(n), arg_int(from)};
	uint32_t chunk = emit(l, DT_OP_CHUNK, "chunk", a, 3);
	if (!chunk)
		return 0;
	uint32_t pieces[DT_MAX_RESULTS];
	/* getitem names follow the chunk's: "r.chunk_0", … (copied: new
	 * names may move the module's string bytes) */
	char chunk_name[280], suffix[300];
	snprintf(chunk_name, sizeof chunk_name, "%s",
		 dt_str_get(m, dt_node_get(m, chunk)->name) + strlen(l->base) + 1);
	for (int64_t k = 0; k < n; k++) {
		snprintf(suffix, sizeof suffix, "%s_%lld", chunk_name,
			 (long long)k);
		struct dt_arg g[2] = {arg_node(chunk), arg_int(k)};
		if (!(pieces[k] = emit(l, DT_OP_GETITEM, suffix, g, 2)))
			return 0;
	}
	struct dt_arg c[2] = {
		{.kind = DT_ARG_NODES, .len = (uint32_t)n,
		 .v.first = dt_module_add_refs(m, pieces, (uint32_t)n)},
		arg_int(to)};
	return emit(l, DT_OP_CAT, "cat", c, 2);
}

static uint32_t emit_wait(struct dt_lower *l, uint32_t coll)
{
	if (!coll)
		return 0;
	struct dt_arg a = arg_node(coll);
	return emit(l, DT_OP_WAIT, "wait", &a, 1);
}

static uint32_t emit_div(struct dt_lower *l, uint32_t x, int64_t divisor)
{
	struct dt_arg a[2] = {arg_node(x), arg_int(divisor)};
	return emit(l, DT_OP_DIV_SCALAR, "div", a, 2);
}

/* ------------------------------------------------------------------ */
/* Steps. */

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* What one step works with on this rank. */
struct step_ctx {
	const struct dt_redist_plan *plan;
	const struct dt_redist_step *s;
	int mesh;                       /* index of the plan's mesh */
	dt_str group;                   /* the collective's group name */
	int64_t n;                      /* group size */
	int64_t in[DT_MAX_RANK];        /* local shape before */
	int64_t out[DT_MAX_RANK];       /* local shape after */
	int64_t logical[DT_MAX_RANK];   /* DTensor's logical shape */
	/* Every rank's pieces before and after are whole chunks of the same
	 * length: the layout a collective's members lay their buffers out in
	 * may then depend on x's layout, which is the same on every rank. */
	bool even;
};

static struct dt_arg arg_group(const struct step_ctx *k)
{
	return (struct dt_arg){.kind = DT_ARG_STR, .v.s = k->group};
}

/* permute(x, [d, 0, …, d-1, d+1, …]), tensor dim d first, or (`back`)
 * its inverse. */
static uint32_t emit_dim_first(struct dt_lower *l, uint32_t x, int d, bool back)
{
	int64_t shape[DT_MAX_RANK], perm[DT_MAX_RANK];
	int rank = dt_lower_shape_of(l->m, x, shape);
	for (int i = 0; i < rank; i++)
		perm[i] = back ? (i < d ? i + 1 : i == d ? 0 : i)
			       : (i == 0 ? d : i <= d ? i - 1 : i);
	struct dt_arg a[2] = {arg_node(x), arg_ints(l->m, perm, rank)};
	return emit(l, DT_OP_PERMUTE, back ? "dim_back" : "dim_first", a, 2);
}

/* Whether x with tensor dim d (!= 0) moved first is contiguous from
 * offset 0, on every rank alike (k->even):
 * then a collective on tensor dim d runs on dim 0 of that view, copying
 * nothing (a transposed gradient reduce-scattered on its dim 1: each
 * rank's rows lie whole and in rank order in memory), and its result is
 * viewed back, strided, instead of chunk + cat copying the whole tensor.
 * Size-1 dims' strides do not matter. */
static bool dense_dim_first(const struct dt_module *m, const struct step_ctx *k,
			    uint32_t x, int d)
{
	if (d == 0 || !k->even)
		return false;
	const struct dt_tensor *t = dt_node_tensor(m, dt_node_get(m, x), 0);
	int rank, n;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	const int64_t *stride = dt_ints_get(m, t->stride, &n);
	if (t->offset != 0 || n != rank || d >= rank)
		return false;
	int64_t want = 1;
	for (int i = rank - 1; i >= -1; i--) {
		int dim = i < 0 ? d : i;
		if (i == d)
			continue;
		if (shape[dim] != 1 && stride[dim] != want)
			return false;
		want *= shape[dim];
	}
	return true;
}

static uint32_t step_all_gather(struct dt_lower *l, const struct step_ctx *k,
				uint32_t x)
{
	int d = k->s->src_dim;
	int64_t len = k->logical[d], c = ceil_div(len, k->n);
	uint32_t v = x;
	if (k->in[d] < c && !(v = emit_pad(l, v, d, c - k->in[d])))
		return 0;
	bool dim_first = dense_dim_first(l->m, k, v, d);
	if (dim_first && !(v = emit_dim_first(l, v, d, false)))
		return 0;
	struct dt_arg a[3] = {arg_node(v), arg_int(k->n),
			      arg_group(k)};
	if (!(v = emit_wait(l, emit(l, DT_OP_ALL_GATHER, "all_gather", a, 3))))
		return 0;
	v = dim_first ? emit_dim_first(l, v, d, true)
	    : d != 0  ? emit_move(l, v, k->n, 0, d)
		      : v;
	if (!v)
		return 0;
	if (k->n * c != len)
		v = emit_narrow(l, v, d, 0, len);
	return v;
}

static uint32_t step_all_reduce(struct dt_lower *l, const struct step_ctx *k,
				uint32_t x)
{
	struct dt_arg a[3] = {arg_node(x),
			      arg_str(l->m, dt_reduce_name(k->s->reduce)),
			      arg_group(k)};
	uint32_t v = emit_wait(l, emit(l, DT_OP_ALL_REDUCE, "all_reduce", a, 3));
	if (v && k->s->divisor > 1)
		v = emit_div(l, v, k->s->divisor);
	return v;
}

static uint32_t step_reduce_scatter(struct dt_lower *l,
				    const struct step_ctx *k, uint32_t x)
{
	int d = k->s->dst_dim;
	int64_t len = k->logical[d], c = ceil_div(len, k->n);
	uint32_t v = x;
	if (k->n * c != len && !(v = emit_pad(l, v, d, k->n * c - len)))
		return 0;
	bool dim_first = dense_dim_first(l->m, k, v, d);
	v = dim_first ? emit_dim_first(l, v, d, false)
	    : d != 0  ? emit_move(l, v, k->n, d, 0)
		      : v;
	if (!v)
		return 0;
	struct dt_arg a[4] = {arg_node(v),
			      arg_str(l->m, dt_reduce_name(k->s->reduce)),
			      arg_int(k->n), arg_group(k)};
	v = emit_wait(l, emit(l, DT_OP_REDUCE_SCATTER, "reduce_scatter", a, 4));
	if (v && dim_first)
		v = emit_dim_first(l, v, d, true);
	if (v && k->s->divisor > 1)
		v = emit_div(l, v, k->s->divisor);
	if (v && k->out[d] != c)
		v = emit_narrow(l, v, d, 0, k->out[d]);
	return v;
}

static uint32_t step_all_to_all(struct dt_lower *l, const struct step_ctx *k,
				uint32_t x)
{
	int a = k->s->src_dim, b = k->s->dst_dim;
	int64_t n = k->n, la = k->logical[a], lb = k->logical[b];
	int64_t ca = ceil_div(la, n), cb = ceil_div(lb, n);
	uint32_t v = x;
	if (k->in[a] < ca && !(v = emit_pad(l, v, a, ca - k->in[a])))
		return 0;
	if (k->in[b] < n * cb && !(v = emit_pad(l, v, b, n * cb - k->in[b])))
		return 0;
	if (b != 0 && !(v = emit_move(l, v, n, b, 0)))
		return 0;
	int64_t shape[DT_MAX_RANK], splits[DT_MAX_RESULTS * 16];
	dt_lower_shape_of(l->m, v, shape);
	if (n > DT_MAX_RESULTS * 16)
		return 0;
	for (int64_t i = 0; i < n; i++)
		splits[i] = shape[0] / n;
	struct dt_arg args[4] = {arg_node(v), arg_ints(l->m, splits, (int)n),
				 arg_ints(l->m, splits, (int)n),
				 arg_group(k)};
	v = emit_wait(l, emit(l, DT_OP_ALL_TO_ALL, "all_to_all", args, 4));
	if (v && a != 0)
		v = emit_move(l, v, n, 0, a);
	if (v && n * ca != la)
		v = emit_narrow(l, v, a, 0, la);
	if (v && k->out[b] != cb)
		v = emit_narrow(l, v, b, 0, k->out[b]);
	return v;
}

/* R -> S(d): this rank's torch.chunk piece. For one rank a narrow; for
 * every rank (SPMD) a dt.local_shard, which cuts the piece at the running
 * rank's mesh coordinate (semantics §7). */
static uint32_t step_chunk(struct dt_lower *l, const struct step_ctx *k,
			   uint32_t x, const int64_t *coord)
{
	int d = k->s->dst_dim, md = k->s->dims[0];
	if (l->rank >= 0) {
		int64_t start, length;
		dt_chunk(k->logical[d], k->n, coord[md], &start, &length);
		return emit_narrow(l, x, d, start, length);
	}
	return dt_lower_emit_spmd(l, DT_OP_LOCAL_SHARD, k->mesh, x,
				  &k->s->before, &k->s->after, k->plan->shape,
				  k->plan->rank, -1, 0);
}

/* The uneven collectives of an SPMD program (semantics §7): every rank's
 * piece is padded to the largest, `block` rows of tensor dim d, so a
 * gather leaves the members' valid rows at block offsets, and a scatter
 * needs each member's rows at its block. The blocks are compact when on
 * every rank each member's rows start at its block (its coarse shard has
 * at most one nonempty chunk, or chunks of exactly `block` rows): then a
 * static narrow or pad moves them; else dt.pack_blocks / dt.unpack_blocks
 * do at run time. */
static bool compact(struct dt_lower *l, const struct step_ctx *k,
		    const struct dt_placements *coarse, int d, int64_t block)
{
	const struct dt_mesh *me = &l->m->meshes.data[k->mesh];
	int64_t coord[DT_MAX_MESH_DIMS];
	for (int64_t pos = 0; pos < me->size; pos++) {
		dt_mesh_coords(me, pos, coord);
		int64_t len = dt_shard_length(coarse, me->shape, coord, d,
					      k->plan->shape[d]);
		int64_t c = ceil_div(len, k->n);
		if (len > c && c != block)
			return false;
	}
	return true;
}

/* The padded shapes before and after step k. */
static void padded(struct dt_lower *l, const struct step_ctx *k, int64_t *pb,
		   int64_t *pa)
{
	dt_lower_local_shape(l, k->mesh, &k->s->before, k->plan->shape,
			     k->plan->rank, pb);
	dt_lower_local_shape(l, k->mesh, &k->s->after, k->plan->shape,
			     k->plan->rank, pa);
}

/* The blocks of x (dim d, `block` rows each) into x's coarse shard, of
 * `size` rows. */
static uint32_t pack(struct dt_lower *l, const struct step_ctx *k,
		     uint32_t x, const struct dt_placements *coarse,
		     const struct dt_placements *fine, int d, int64_t block,
		     int64_t size)
{
	if (!compact(l, k, coarse, d, block))
		return dt_lower_emit_spmd(l, DT_OP_PACK_BLOCKS, k->mesh, x,
					  coarse, fine, k->plan->shape,
					  k->plan->rank, d, 0);
	return size == k->n * block ? x : emit_narrow(l, x, d, 0, size);
}

/* x's coarse shard (dim d, `size` rows) into blocks of `block` rows. */
static uint32_t unpack(struct dt_lower *l, const struct step_ctx *k,
		       uint32_t x, const struct dt_placements *coarse,
		       const struct dt_placements *fine, int d, int64_t block,
		       int64_t size)
{
	if (!compact(l, k, coarse, d, block))
		return dt_lower_emit_spmd(l, DT_OP_UNPACK_BLOCKS, k->mesh, x,
					  coarse, fine, k->plan->shape,
					  k->plan->rank, d, 0);
	return size == k->n * block ? x : emit_pad(l, x, d, k->n * block - size);
}

static uint32_t spmd_all_gather(struct dt_lower *l, const struct step_ctx *k,
				uint32_t x)
{
	int d = k->s->src_dim;
	int64_t pb[DT_MAX_RANK], pa[DT_MAX_RANK];
	padded(l, k, pb, pa);
	bool dim_first = dense_dim_first(l->m, k, x, d);
	uint32_t v = dim_first ? emit_dim_first(l, x, d, false) : x;
	struct dt_arg a[3] = {arg_node(v), arg_int(k->n), arg_group(k)};
	if (v)
		v = emit_wait(l, emit(l, DT_OP_ALL_GATHER, "all_gather", a, 3));
	if (v && d != 0)
		v = dim_first ? emit_dim_first(l, v, d, true)
			      : emit_move(l, v, k->n, 0, d);
	return v ? pack(l, k, v, &k->s->after, &k->s->before, d, pb[d], pa[d])
		 : 0;
}

static uint32_t spmd_reduce_scatter(struct dt_lower *l,
				    const struct step_ctx *k, uint32_t x)
{
	int d = k->s->dst_dim;
	int64_t pb[DT_MAX_RANK], pa[DT_MAX_RANK];
	padded(l, k, pb, pa);
	uint32_t v = unpack(l, k, x, &k->s->before, &k->s->after, d, pa[d],
			    pb[d]);
	bool dim_first = v && dense_dim_first(l->m, k, v, d);
	if (v && d != 0)
		v = dim_first ? emit_dim_first(l, v, d, false)
			      : emit_move(l, v, k->n, d, 0);
	if (!v)
		return 0;
	struct dt_arg a[4] = {arg_node(v),
			      arg_str(l->m, dt_reduce_name(k->s->reduce)),
			      arg_int(k->n), arg_group(k)};
	v = emit_wait(l, emit(l, DT_OP_REDUCE_SCATTER, "reduce_scatter", a, 4));
	if (v && dim_first)
		v = emit_dim_first(l, v, d, true);
	if (v && k->s->divisor > 1)
		v = emit_div(l, v, k->s->divisor);
	return v;
}

static uint32_t spmd_all_to_all(struct dt_lower *l, const struct step_ctx *k,
				uint32_t x)
{
	int a = k->s->src_dim, b = k->s->dst_dim;
	int64_t n = k->n, shape[DT_MAX_RANK], splits[DT_MAX_RESULTS * 16];
	int64_t pb[DT_MAX_RANK], pa[DT_MAX_RANK];
	padded(l, k, pb, pa);
	uint32_t v = unpack(l, k, x, &k->s->before, &k->s->after, b, pa[b],
			    pb[b]);
	if (v && b != 0)
		v = emit_move(l, v, n, b, 0);
	if (!v || n > DT_MAX_RESULTS * 16)
		return 0;
	dt_lower_shape_of(l->m, v, shape);
	for (int64_t i = 0; i < n; i++)
		splits[i] = shape[0] / n;
	struct dt_arg args[4] = {arg_node(v), arg_ints(l->m, splits, (int)n),
				 arg_ints(l->m, splits, (int)n),
				 arg_group(k)};
	v = emit_wait(l, emit(l, DT_OP_ALL_TO_ALL, "all_to_all", args, 4));
	if (v && a != 0)
		v = emit_move(l, v, n, 0, a);
	return v ? pack(l, k, v, &k->s->after, &k->s->before, a, pb[a], pa[a])
		 : 0;
}

/* The group over every dim of `mesh`, slowest first (its positions are
 * row-major mesh positions), declared (generated, named by its dims) when
 * missing. */
static int whole_mesh_group(struct dt_lower *l, int mesh)
{
	struct dt_module *m = l->m;
	const struct dt_mesh *me = &m->meshes.data[mesh];
	uint8_t dims[DT_MAX_MESH_DIMS];
	for (int d = 0; d < me->ndim; d++)
		dims[d] = (uint8_t)d;
	int g = dt_module_find_group_by_layout(m, mesh, dims, me->ndim);
	if (g >= 0)
		return g;
	char base[112] = "", name[128]; /* copies: interning moves strings */
	for (int d = 0; d < me->ndim; d++)
		snprintf(base + strlen(base), sizeof base - strlen(base),
			 "%s%.20s", d ? "_" : "", dt_str_get(m, me->dims[d]));
	snprintf(name, sizeof name, "%s", base);
	for (int k = 2; dt_module_find_group(m, dt_str_intern(m, name)) >= 0; k++)
		snprintf(name, sizeof name, "%.100s_%d", base, k);
	struct dt_group grp = {.name = dt_str_intern(m, name),
			       .mesh = (uint16_t)mesh, .ndims = me->ndim,
			       .generated = true};
	memcpy(grp.dims, dims, sizeof dims);
	return (int)dt_vec_push(&m->groups, grp);
}

/* all_permute and all_to_all_v (min-memory plans) over the whole mesh:
 * dt.all_permute sends each rank's shard to the rank holding that block
 * after the step, dt.all_to_all_v the pieces each rank needs; both name
 * placements, so one program serves every rank. Then the wait. */
static uint32_t step_whole_mesh(struct dt_lower *l, const struct step_ctx *k,
				uint32_t x)
{
	const struct dt_redist_plan *plan = k->plan;
	int64_t *dest = NULL;
	if (k->s->kind == DT_REDIST_PERMUTE) {
		dest = dt_calloc((size_t)plan->mesh.size, sizeof *dest);
		dt_redist_permute_map(plan, k->s, dest);
	}
	uint32_t v = dt_lower_emit_move(l, k->mesh, x, &k->s->before,
					&k->s->after, plan->shape, plan->rank,
					dest, plan->mesh.size,
					whole_mesh_group(l, k->mesh));
	dt_free(dest);
	return emit_wait(l, v);
}

uint32_t dt_lower_emit_step(struct dt_lower *l,
			    const struct dt_redist_plan *plan,
			    const struct dt_redist_step *s, int mesh,
			    const int64_t *coord, uint32_t x)
{
	struct step_ctx k = {.plan = plan, .s = s, .mesh = mesh,
			     .n = s->group_size};
	if (s->kind == DT_REDIST_PERMUTE || s->kind == DT_REDIST_TRANSFER)
		return step_whole_mesh(l, &k, x);
	int g = s->group >= 0 ? s->group : dt_lower_dim_group(l, mesh, s->dims[0]);
	k.group = l->m->groups.data[g].name;
	dt_redist_local_shape(plan, &s->before, coord, k.in);
	dt_redist_local_shape(plan, &s->after, coord, k.out);
	dt_redist_step_logical_shape(plan, s, coord, k.logical);
	const struct dt_mesh *me = &l->m->meshes.data[mesh];
	k.even = dt_shard_even(me, &s->before, plan->shape, plan->rank) &&
		 dt_shard_even(me, &s->after, plan->shape, plan->rank);
	/* The collectives of an SPMD program work on pieces padded to the
	 * largest; `even` (every instance splits evenly) does not make the
	 * pieces of different instances the same length. */
	if (l->rank < 0 && s->ndims == 1) {
		switch (s->kind) {
		case DT_REDIST_ALL_GATHER: return spmd_all_gather(l, &k, x);
		case DT_REDIST_REDUCE_SCATTER:
			return spmd_reduce_scatter(l, &k, x);
		case DT_REDIST_ALL_TO_ALL: return spmd_all_to_all(l, &k, x);
		default: break;
		}
	}
	/* all_reduce sums padding into padding; merged gathers and scatters
	 * need every piece full */
	if (l->rank < 0 && s->ndims > 1 && s->kind != DT_REDIST_ALL_REDUCE &&
	    !k.even) {
		dt_diag_report(l->ctx->diag, DT_ERROR, l->m->file, l->line, NULL,
			       "cannot lower for every rank at once (SPMD): "
			       "redistribute '%s' merges %s steps over %d mesh "
			       "dims of uneven shards; lower per rank instead "
			       "(dtopt opt --rank R, or -o 'OUT.{rank}.xml')",
			       l->base, dt_redist_kind_name(s->kind), s->ndims);
		return 0;
	}
	switch (s->kind) {
	case DT_REDIST_ALL_GATHER: return step_all_gather(l, &k, x);
	case DT_REDIST_ALL_REDUCE: return step_all_reduce(l, &k, x);
	case DT_REDIST_REDUCE_SCATTER: return step_reduce_scatter(l, &k, x);
	case DT_REDIST_ALL_TO_ALL: return step_all_to_all(l, &k, x);
	case DT_REDIST_CHUNK: return step_chunk(l, &k, x, coord);
	case DT_REDIST_PARTITION:
		return s->divisor > 1 ? emit_div(l, x, s->divisor) : x;
	case DT_REDIST_PERMUTE:
	case DT_REDIST_TRANSFER:
	case DT_REDIST_NKINDS: break;
	}
	DT_REQUIRE(!"unknown step kind");
	return 0;
}
