// SPDX-License-Identifier: MIT
/* bucket_rewrite.c: bucket-collectives' rewrite (semantics §4.7): one
 * bucket of collectives becomes one collective over a flat buffer, each
 * member's result a view (or, for all_gather, a copy) of it; then every
 * use reads the new results, the graph is put back in an order where
 * nodes follow their inputs, and views of the results get their metadata
 * again. Which collectives form a bucket is bucket_collectives.c's. */
#include "bucket_internal.h"

#include <string.h>

static const char *name_of(const struct dt_module *m, uint32_t id)
{
	return dt_str_get(m, dt_node_get(m, id)->name);
}

struct emitter {
	struct dt_module *m;
	struct dt_diag *diag;
	uint32_t before;       /* new nodes go before this one */
	uint32_t line;
	char base[200];        /* names: BASE.SUFFIX */
};

static struct dt_arg arg_node(uint32_t id)
{
	return (struct dt_arg){.kind = DT_ARG_NODE, .v.node = id};
}

static struct dt_arg arg_int(int64_t v)
{
	return (struct dt_arg){.kind = DT_ARG_INT, .v.i = v};
}

static struct dt_arg arg_ints(struct dt_module *m, const int64_t *v, int n)
{
	return (struct dt_arg){.kind = DT_ARG_INTS, .len = (uint32_t)n,
			       .v.ints = dt_ints_intern(m, v, (size_t)n)};
}

static dt_str new_name(struct emitter *e, const char *suffix)
{
	char name[320];
	int len = snprintf(name, sizeof name, "%s.%s", e->base, suffix);
	dt_str s = dt_str_intern(e->m, name);
	for (int k = 2; dt_module_find_node(e->m, s); k++) {
		snprintf(name + len, sizeof name - (size_t)len, ".%d", k);
		s = dt_str_intern(e->m, name);
	}
	return s;
}

/* A call of `op` before e->before, its metadata inferred. */
static uint32_t emit(struct emitter *e, enum dt_op op, const char *suffix,
		     const struct dt_arg *args, uint32_t nargs)
{
	struct dt_module *m = e->m;
	uint32_t id = dt_module_add_node(m, &(struct dt_node_init){
		.kind = DT_NODE_CALL,
		.name = new_name(e, suffix),
		.target = dt_str_intern(m, dt_op_get(op)->target),
		.line = e->line,
		.args = args,
		.nargs = nargs,
	});
	dt_graph_insert_before(m, id, e->before);
	struct dt_shape_ctx c;
	/* The arguments are built to fit: a failure is a bug here. */
	DT_REQUIRE(dt_infer_node(m, id, e->diag, &c) == DT_OK);
	dt_node_set_tensors(m, id, c.out, c.nout);
	return id;
}

static uint32_t emit_view(struct emitter *e, enum dt_op op, uint32_t x,
			  const int64_t *shape, int rank, const char *suffix)
{
	struct dt_arg a[2] = {arg_node(x), arg_ints(e->m, shape, rank)};
	return emit(e, op, suffix, a, 2);
}

/* Result node `r` stands for member wait `w`: its name (outputs and
 * tables keep naming the value as before), metadata and sharding. `w`,
 * out of the graph, is renamed NAME.unbucketed; the name index follows. */
static void adopt(struct dt_module *m, uint32_t r, uint32_t w)
{
	dt_str name = dt_node_get(m, w)->name;
	char buf[320];
	snprintf(buf, sizeof buf, "%s.unbucketed", dt_str_get(m, name));
	dt_str old = dt_str_intern(m, buf);
	struct dt_node *rn = dt_node_get(m, r), *wn = dt_node_get(m, w);
	rn->sharding = wn->sharding;
	rn->metas = wn->metas;
	rn->nmetas = wn->nmetas;
	wn->name = old;
	rn->name = name;
	if (name.id < m->node_by_name.len)
		m->node_by_name.data[name.id] = r;
}

/* "ar_1 w_1 ar_2 w_2 …": what the merged nodes replace
 * (dtopt.fused_from). */
static dt_str fused_from(struct dt_module *m,
			 const struct dt_bucket_member *members, uint32_t count)
{
	char buf[4096];
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < count && at < sizeof buf; i++)
		at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s %s",
				       i ? " " : "", name_of(m, members[i].coll),
				       name_of(m, members[i].wait));
	return dt_str_intern(m, buf);
}

/* Give node `id`, made by the rewrite (no <meta> yet), the entry
 * key = value. */
static void set_meta(struct dt_module *m, uint32_t id, const char *key,
		     dt_str value)
{
	struct dt_meta meta = {dt_str_intern(m, key), value};
	struct dt_node *n = dt_node_get(m, id);
	n->metas = m->metas.len;
	n->nmetas = 1;
	dt_vec_push(&m->metas, meta);
}

/* Mark a merged node as fused from the bucket's members. */
static void mark_fused(struct dt_module *m, uint32_t id, dt_str from)
{
	set_meta(m, id, DT_META_FUSED_FROM, from);
	dt_node_get(m, id)->flags |= DT_NODE_FUSED;
}

/* The flat input of member `mb`: [n] (all_gather, all_reduce) or
 * [size, n/size] (reduce_scatter); the input itself when it already is. */
static uint32_t flat_input(struct emitter *e, const struct dt_bucket_member *mb,
			   bool scatter, int64_t size)
{
	int64_t want[2] = {mb->numel, 0}, shape[DT_MAX_RANK];
	int rank = scatter ? 2 : 1;
	if (scatter) {
		want[0] = size;
		want[1] = mb->numel / size;
	}
	int have = dt_bucket_shape(e->m, mb->input, shape);
	if (have == rank && memcmp(shape, want, (size_t)rank * sizeof *want) == 0 &&
	    dt_bucket_is_dense(e->m, mb->input))
		return mb->input;
	return emit_view(e, DT_OP_RESHAPE, mb->input, want, rank, "flat");
}

/* Member `mb`'s rows [G, n] of a gathered bucket, laid out as its cat
 * onto dim d: viewed [G, shard...], rank axis moved before shard dim d,
 * reshaped (copied) to the cat's shape. */
static uint32_t emit_move(struct emitter *e, uint32_t rows,
			  const struct dt_bucket_member *mb, int64_t size)
{
	int64_t shape[DT_MAX_RANK + 1], perm[DT_MAX_RANK + 1];
	int rank = dt_bucket_shape(e->m, mb->input, shape + 1);
	shape[0] = size;
	uint32_t v = emit_view(e, DT_OP_VIEW, rows, shape, rank + 1, "shards");
	int n = 0;
	for (int d = 0; d < mb->dim; d++)
		perm[n++] = d + 1;
	perm[n++] = 0;
	for (int d = mb->dim; d < rank; d++)
		perm[n++] = d + 1;
	struct dt_arg pa[2] = {arg_node(v), arg_ints(e->m, perm, n)};
	uint32_t p = emit(e, DT_OP_PERMUTE, "move", pa, 2);
	int64_t out[DT_MAX_RANK];
	int orank = dt_bucket_shape(e->m, mb->moved, out);
	return emit_view(e, DT_OP_RESHAPE, p, out, orank, "out");
}

/* The chunk, getitems and cat a moved member's result replaces. */
static void remove_move(struct dt_module *m, const struct dt_bucket_member *mb)
{
	const struct dt_node *cat = dt_node_get(m, mb->moved);
	const struct dt_arg *list = dt_node_arg(m, cat, 0);
	uint32_t chunk = 0;
	for (uint32_t k = 0; k < list->len; k++) {
		uint32_t gi = m->refs.data[list->v.first + k];
		chunk = dt_node_arg(m, dt_node_get(m, gi), 0)->v.node;
		dt_graph_remove(m, gi);
	}
	dt_graph_remove(m, chunk);
	dt_graph_remove(m, mb->moved);
}

uint32_t dt_bucket_rewrite(struct dt_pass_ctx *ctx,
			   const struct dt_bucket_member *members, uint32_t count,
			   bool copy_in, uint32_t *replaced, uint32_t parts[2])
{
	struct dt_module *m = ctx->m;
	const struct dt_bucket_member *first = &members[0];
	const struct dt_bucket_member *last = &members[count - 1];
	enum dt_op op = (enum dt_op)dt_node_get(m, first->coll)->op;
	struct dt_bucket_args a;
	DT_REQUIRE(dt_bucket_read_args(m, first->coll, ctx->diag, &a));
	bool scatter = op == DT_OP_REDUCE_SCATTER, gather = op == DT_OP_ALL_GATHER;
	struct emitter e = {.m = m, .diag = ctx->diag, .before = last->coll,
			    .line = dt_node_get(m, first->coll)->line};
	dt_str from_s = fused_from(m, members, count);

	uint32_t *flat = dt_arena_alloc(ctx->scratch, count * sizeof *flat);
	int64_t total = 0;
	for (uint32_t i = 0; i < count; i++) {
		const struct dt_bucket_member *mb = &members[i];
		snprintf(e.base, sizeof e.base, "%s", name_of(m, mb->coll));
		flat[i] = flat_input(&e, mb, scatter, a.size);
		total += mb->numel;
	}
	snprintf(e.base, sizeof e.base, "%s", name_of(m, first->coll));
	/* More members than one cat takes: cats of DT_BUCKET_CAT_FANIN, then their cat
	 * (one more copy of the bucket). */
	uint32_t n = count;
	while (n > 1) { /* a bucket has two members or more */
		uint32_t groups = (n + DT_BUCKET_CAT_FANIN - 1) / DT_BUCKET_CAT_FANIN;
		for (uint32_t k = 0; k < groups; k++) {
			uint32_t lo = k * DT_BUCKET_CAT_FANIN;
			uint32_t len = n - lo < DT_BUCKET_CAT_FANIN ? n - lo : DT_BUCKET_CAT_FANIN;
			struct dt_arg cat_args[2] = {
				{.kind = DT_ARG_NODES, .len = len,
				 .v.first = dt_module_add_refs(m, flat + lo, len)},
				arg_int(scatter ? 1 : 0)};
			flat[k] = emit(&e, DT_OP_CAT, "cat", cat_args, 2);
			if (copy_in)
				set_meta(m, flat[k], DT_META_COPY_INPUTS,
					 dt_str_intern(m, "true"));
		}
		n = groups;
	}
	uint32_t buf = flat[0];
	if (scatter)
		buf = emit_view(&e, DT_OP_VIEW, buf, &total, 1, "flat");
	struct dt_arg args[4];
	uint32_t nargs = 0;
	args[nargs++] = arg_node(buf);
	if (!gather)
		args[nargs++] = (struct dt_arg){.kind = DT_ARG_STR, .v.s = a.reduce_name};
	if (!(op == DT_OP_ALL_REDUCE))
		args[nargs++] = arg_int(a.size);
	args[nargs++] = (struct dt_arg){.kind = DT_ARG_STR, .v.s = a.group_name};
	uint32_t coll = emit(&e, op, "bucket", args, nargs);
	mark_fused(m, coll, from_s);
	struct dt_arg wa = arg_node(coll);
	uint32_t wait = emit(&e, DT_OP_WAIT, "bucket_wait", &wa, 1);
	mark_fused(m, wait, from_s);
	uint32_t all = wait;
	if (gather) {
		int64_t rows[2] = {a.size, total};
		all = emit_view(&e, DT_OP_VIEW, wait, rows, 2, "rows");
	}
	/* Each member's result: a narrow of its run, then its shape. */
	parts[0] = m->nodes.len;
	int64_t off = 0;
	for (uint32_t i = 0; i < count; i++) {
		const struct dt_bucket_member *mb = &members[i];
		int64_t len = scatter ? mb->numel / a.size : mb->numel;
		snprintf(e.base, sizeof e.base, "%s", name_of(m, mb->coll));
		struct dt_arg na[4] = {arg_node(all), arg_int(gather ? 1 : 0),
				       arg_int(off), arg_int(len)};
		uint32_t r = emit(&e, DT_OP_NARROW, "part", na, 4);
		off += len;
		int64_t shape[DT_MAX_RANK];
		int rank = dt_bucket_shape(m, mb->wait, shape);
		if (mb->moved) {
			r = emit_move(&e, r, mb, a.size);
		} else if (gather || rank != 1) {
			r = emit_view(&e, gather ? DT_OP_RESHAPE : DT_OP_VIEW, r,
				      shape, rank, "out");
		}
		/* A gathered member is a copy, laid out as the wait was: views
		 * of it stay possible. (reshape is a view where only one rank's
		 * rows make up the part.) */
		if (gather && !dt_bucket_is_dense(m, r)) {
			struct dt_arg ca = arg_node(r);
			r = emit(&e, DT_OP_CONTIGUOUS, "copy", &ca, 1);
		}
		uint32_t stands_for = mb->moved ? mb->moved : mb->wait;
		adopt(m, r, stands_for);
		replaced[stands_for] = r;
	}
	parts[1] = m->nodes.len - 1;
	for (uint32_t i = 0; i < count; i++) {
		const struct dt_bucket_member *mb = &members[i];
		if (mb->moved)
			remove_move(m, mb);
		dt_graph_remove(m, mb->coll);
		dt_graph_remove(m, mb->wait);
	}
	return coll;
}

/* ------------------------------------------------------------------ */
/* Order: a node whose inputs come later moves to just after the last. */

struct reorder {
	struct dt_module *m;
	struct dt_uses uses;
	uint8_t *state;    /* 0 not reached, 1 waiting for inputs, 2 placed */
	uint32_t *missing; /* inputs not placed yet */
	uint32_t *order, n;
	uint32_t *stack;
	uint32_t counted;
};

static void count_missing(void *ud, uint32_t input)
{
	struct reorder *r = ud;
	r->counted += r->state[input] != 2;
}

static void place_ready(struct reorder *r, uint32_t id)
{
	uint32_t top = 0;
	r->stack[top++] = id;
	while (top) {
		uint32_t n = r->stack[--top];
		r->state[n] = 2;
		r->order[r->n++] = n;
		for (uint32_t u = r->uses.first[n]; u < r->uses.first[n + 1]; u++) {
			uint32_t user = r->uses.list[u];
			if (r->state[user] == 1 && --r->missing[user] == 0)
				r->stack[top++] = user;
		}
	}
}

/* Reorder the graph so that every node follows its inputs, keeping the
 * order otherwise; the output node stays last. */
static void reorder(struct dt_module *m, struct dt_arena *scratch)
{
	struct reorder r = {.m = m};
	uint32_t count = m->nodes.len;
	dt_uses_fill(&r.uses, m);
	r.state = dt_arena_alloc(scratch, count);
	r.missing = dt_arena_alloc(scratch, count * sizeof(uint32_t));
	r.order = dt_arena_alloc(scratch, count * sizeof(uint32_t));
	r.stack = dt_arena_alloc(scratch, count * sizeof(uint32_t));
	uint32_t output = 0;
	dt_foreach_node(m, id) {
		if (dt_node_get(m, id)->kind == DT_NODE_OUTPUT) {
			output = id;
			continue;
		}
		r.counted = 0;
		dt_node_for_each_input(m, dt_node_get(m, id), count_missing, &r);
		if (r.counted == 0) {
			place_ready(&r, id);
		} else {
			r.state[id] = 1;
			r.missing[id] = r.counted;
		}
	}
	DT_REQUIRE(r.n + (output != 0) == dt_graph_count(m));
	for (uint32_t i = 0; i < r.n; i++)
		dt_graph_remove(m, r.order[i]);
	if (output)
		dt_graph_remove(m, output);
	for (uint32_t i = 0; i < r.n; i++)
		dt_graph_append(m, r.order[i]);
	if (output)
		dt_graph_append(m, output);
	dt_uses_fini(&r.uses);
}

/* A member's result is a view of the merged buffer: an all_reduce or
 * reduce_scatter member starts at its offset in it. Views that read it
 * (directly or through other views) get their metadata again. */
struct refresh {
	uint8_t *moved;  /* node -> its metadata changed */
	bool any;
};

static void note_moved(void *ud, uint32_t input)
{
	struct refresh *r = ud;
	r->any |= r->moved[input] != 0;
}

static void refresh(struct dt_pass_ctx *ctx, const uint32_t *replaced,
		    uint32_t nold)
{
	struct dt_module *m = ctx->m;
	struct refresh r = {0};
	r.moved = dt_arena_alloc(ctx->scratch, m->nodes.len);
	for (uint32_t i = 0; i < nold; i++)
		if (replaced[i])
			r.moved[replaced[i]] = 1;
	dt_foreach_node(m, id) {
		struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_CALL || r.moved[id])
			continue;
		r.any = false;
		dt_node_for_each_input(m, n, note_moved, &r);
		if (!r.any)
			continue;
		struct dt_shape_ctx c;
		DT_REQUIRE(dt_infer_node(m, id, ctx->diag, &c) == DT_OK);
		n = dt_node_get(m, id);
		bool same = c.nout == n->ntensors;
		for (uint32_t k = 0; same && k < c.nout; k++) {
			const struct dt_tensor *t = dt_node_tensor(m, n, (int)k);
			same = t->dtype == c.out[k].dtype &&
			       t->shape.id == c.out[k].shape.id &&
			       t->stride.id == c.out[k].stride.id &&
			       t->offset == c.out[k].offset;
		}
		if (!same) {
			dt_node_set_tensors(m, id, c.out, c.nout);
			r.moved[id] = 1;
		}
	}
}

/* ------------------------------------------------------------------ */

struct replacements {
	const uint32_t *replaced;
	uint32_t nold;
};

static uint32_t replacement_of(void *ud, uint32_t input)
{
	const struct replacements *r = ud;
	return input < r->nold && r->replaced[input] ? r->replaced[input] : input;
}

void dt_bucket_finish(struct dt_pass_ctx *ctx, const uint32_t *replaced,
		      uint32_t nold)
{
	struct replacements r = {replaced, nold};
	dt_foreach_node(ctx->m, id)
		dt_node_map_inputs(ctx->m, id, replacement_of, &r);
	reorder(ctx->m, ctx->scratch);
	refresh(ctx, replaced, nold);
}
