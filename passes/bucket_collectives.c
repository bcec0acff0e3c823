// SPDX-License-Identifier: MIT
/* bucket_collectives.c: the `bucket-collectives` pass merges independent
 * collectives of one kind, group, dtype and reduce op into one collective
 * over a flat buffer (DDP's gradient buckets, FSDP2's one all-gather per
 * module, XLA's combiners), semantics §4.7:
 *
 *   a1 = all_reduce(g1, 'sum', 'dp')     f2 = view(g2, [8])
 *   w1 = wait(a1)                        c = cat([g1, f2]); a = all_reduce(c, 'sum', 'dp')
 *   a2 = all_reduce(g2, 'sum', 'dp')  →  w = wait(a)
 *   w2 = wait(a2)                        r1 = narrow(w, 0, 0, 12)
 *                                        r2 = view(narrow(w, 0, 12, 8), [2, 4])
 *
 * Per kind, over the members' flattened inputs (reshape: a copy only when
 * an input is not contiguous):
 *   all_reduce      cat, one all_reduce, each member's result a narrow
 *   all_gather      cat, one all_gather (dim 0), the result viewed as
 *                   [group, N] and each member's [group, n] columns
 *                   reshaped (copied) to its gathered shape
 *   reduce_scatter  each input viewed as [group, n/group], cat on dim 1,
 *                   one reduce_scatter, each member's result a narrow
 * A gather whose shards are then moved onto dim d > 0 (DTensor's chunk +
 * getitems + cat after the wait: the layout permutation FSDP2 does on its
 * flat buffer) has its columns viewed as [group, shard...], permuted and
 * copied straight into the cat's layout, which replaces the chunk and cat
 * (one copy instead of two).
 *
 * Membership (greedy, in graph order, one open bucket per key): a
 * collective whose only user is its wait joins the open bucket of its key
 * unless its input depends on the result of a collective of that key
 * (reachability over the SSA graph with the buckets contracted, so the
 * merged collective never waits for itself: a bitmask per node of the
 * keys whose results it depends on, closed over what each key's buckets
 * read) or the merged buffer would exceed --bucket-bytes (the bytes the
 * cost model charges: the gathered size for all_gather, the input size
 * otherwise) or hold more than 4096 members (two levels of 64-input
 * cats). The extra memory a bucket keeps alive is its flat buffer
 * plus the inputs held until the bucket starts, at most twice the bucket.
 * Decisions depend only on the graph's structure and on the sizes of the
 * key's own collectives, so every rank of a group buckets alike.
 *
 * Merged nodes go before the last member's collective; the graph is then
 * reordered (users of a member's result that came before it follow it),
 * and schedule-collectives places starts and waits. Merged nodes are named
 * after the first member (`ar_3.bucket`), carry its line and meta
 * dtopt.fused_from (every member's collective and wait); each member's
 * result takes its wait's metadata and sharding. Every collective kept
 * out gets a remark saying why (tag bucket-collectives:REASON); every
 * bucket a remark listing its members.
 *
 * Requires: VERIFIED, SHAPES. Preserves: both. O(nodes + uses) plus
 * O(64) bit operations per collective.
 */
#include "cost_model.h"
#include "passes.h"

#include <string.h>

#define DEFAULT_BUCKET_BYTES (25 << 20) /* DDP's bucket_cap_mb */
#define MAX_KEYS 64 /* keys tracked at once (one bit each) */
#define CAT_FANIN DT_MAX_RESULTS /* tensors one cat takes */
#define MAX_MEMBERS (CAT_FANIN * CAT_FANIN) /* two levels of cats */

/* Why a bucket started where it did (for the remarks of lone ones). */
enum start {
	START_FIRST,     /* the first collective of its key (so far) */
	START_DEPENDENT, /* the open bucket's result feeds this one */
	START_FULL,      /* the open bucket had no room left */
	START_COUNT,     /* the open bucket had MAX_MEMBERS members */
};

struct member {
	uint32_t coll, wait, input;
	uint32_t moved;  /* all_gather: the cat moving the gathered shards
			    onto dim `dim` (DTensor's chunk + cat), or 0 */
	int dim;
	uint32_t bucket;
	int64_t numel; /* of the input */
	double bytes;  /* what the bucket limit counts */
};

struct bucket {
	uint32_t first, count; /* members[first .. +count) once grouped */
	double bytes;
	enum start why;
	uint32_t head;         /* its first collective */
	uint32_t blocker;      /* START_DEPENDENT/FULL: the open bucket's
				  first collective */
};

/* A (kind, group, dtype, reduce op) seen in this phase. */
struct key {
	uint16_t op;        /* enum dt_op */
	int32_t group;
	uint8_t dtype, reduce;
	int32_t open;       /* the bucket taking members, or -1 */
};

struct bucketing {
	struct dt_pass_ctx *ctx;
	struct dt_module *m;
	double limit;
	struct dt_uses uses;
	/* Per node: the keys (bits of this phase) whose results it reads,
	 * directly or through other nodes. */
	uint64_t *bits;
	uint32_t *phase;
	uint8_t *slot_of_wait; /* member wait -> its key's slot + 1 */
	uint32_t cur_phase;
	struct key keys[MAX_KEYS];
	uint64_t dep[MAX_KEYS]; /* bits the key's buckets read */
	int nkeys;
	DT_VEC(struct member) members;
	DT_VEC(struct bucket) buckets;
	uint32_t *replaced;     /* member wait -> its result's new node */
	uint32_t nold;          /* nodes before the rewrite (replaced's size) */
	uint64_t gather;        /* scratch for collect_bits */
};

static const char *name_of(const struct dt_module *m, uint32_t id)
{
	return dt_str_get(m, dt_node_get(m, id)->name);
}

static const struct dt_tensor *tensor_of(const struct dt_module *m,
					 uint32_t id)
{
	return dt_node_tensor(m, dt_node_get(m, id), 0);
}

static int rank_of(const struct dt_module *m, uint32_t id, int64_t *shape)
{
	int rank;
	const int64_t *s = dt_ints_get(m, tensor_of(m, id)->shape, &rank);
	if (shape)
		memcpy(shape, s, (size_t)rank * sizeof *shape);
	return rank;
}

static int64_t numel_of(const struct dt_module *m, uint32_t id)
{
	int64_t shape[DT_MAX_RANK];
	int rank = rank_of(m, id, shape);
	return dt_numel(shape, rank);
}

/* ------------------------------------------------------------------ */
/* Candidates. */

/* The parameters of a collective: group, its size and the reduce op. */
struct coll_args {
	int group;
	int64_t size;
	enum dt_reduce_op reduce;
	dt_str group_name, reduce_name;
};

static bool read_coll(struct bucketing *b, uint32_t id, struct coll_args *a)
{
	struct dt_module *m = b->m;
	const struct dt_node *n = dt_node_get(m, id);
	struct dt_bound_args bound;
	if (dt_op_bind(m, n, &bound, b->ctx->diag) != DT_OK)
		return false;
	int name_param = n->op == DT_OP_REDUCE_SCATTER ? 3 : 2;
	a->group_name = bound.arg[name_param]->v.s;
	a->group = dt_module_find_group(m, a->group_name);
	if (a->group < 0)
		return false;
	const struct dt_group *g = &m->groups.data[a->group];
	a->size = dt_group_size(&m->meshes.data[g->mesh], g->dims, g->ndims);
	a->reduce = DT_REDUCE_SUM;
	a->reduce_name.id = 0;
	if (n->op != DT_OP_ALL_GATHER) {
		a->reduce_name = bound.arg[1]->v.s;
		if (!dt_reduce_parse(dt_str_get(m, a->reduce_name), &a->reduce))
			return false;
	}
	return true;
}

static void remark(struct bucketing *b, uint32_t id, const char *reason,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void remark(struct bucketing *b, uint32_t id, const char *reason,
		   const char *fmt, ...)
{
	char msg[1024], tag[64];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(tag, sizeof tag, "bucket-collectives%s%s", reason ? ":" : "",
		 reason ? reason : "");
	dt_diag_report(b->ctx->diag, DT_REMARK, b->m->file,
		       dt_node_get(b->m, id)->line, tag, "%s", msg);
}

/* The wait of collective `coll` when it is its only user, else 0. */
static uint32_t wait_of(const struct bucketing *b, uint32_t coll)
{
	if (dt_uses_count(&b->uses, coll) != 1)
		return 0;
	uint32_t w = b->uses.list[b->uses.first[coll]];
	return dt_node_get(b->m, w)->op == DT_OP_WAIT ? w : 0;
}

/* The tensor input of collective `id` (a node with one result), or 0. */
static uint32_t input_of(const struct dt_module *m, uint32_t id)
{
	const struct dt_node *n = dt_node_get(m, id);
	const struct dt_arg *a = dt_node_arg(m, n, 0);
	if (n->nargs == 0 || a->kind != DT_ARG_NODE ||
	    dt_node_get(m, a->v.node)->ntensors != 1)
		return 0;
	return a->v.node;
}

static const char *kind_name(const struct dt_module *m, uint32_t coll)
{
	return dt_comm_kind_name(
		(enum dt_comm_kind)dt_comm_kind_of_op(dt_node_get(m, coll)->op));
}

/* ------------------------------------------------------------------ */
/* Dependences: which keys' results a node reads. */

static void collect_bits(void *ud, uint32_t input)
{
	struct bucketing *b = ud;
	if (b->phase[input] == b->cur_phase)
		b->gather |= b->bits[input];
}

/* `bits` with every key's own dependences added, to a fixpoint. */
static uint64_t closure(const struct bucketing *b, uint64_t bits)
{
	uint64_t prev;
	do {
		prev = bits;
		for (uint64_t rest = prev; rest; rest &= rest - 1)
			bits |= b->dep[__builtin_ctzll(rest)];
	} while (bits != prev);
	return bits;
}

/* The key of a collective, added when new; -1 after starting a new phase
 * (the table was full: earlier buckets stop taking members, and no
 * dependence on them can close a cycle through later ones). */
static int key_index(struct bucketing *b, const struct key *k)
{
	for (int i = 0; i < b->nkeys; i++) {
		const struct key *o = &b->keys[i];
		if (o->op == k->op && o->group == k->group &&
		    o->dtype == k->dtype && o->reduce == k->reduce)
			return i;
	}
	if (b->nkeys == MAX_KEYS) {
		b->cur_phase++;
		b->nkeys = 0;
		return -1;
	}
	b->keys[b->nkeys] = *k;
	b->keys[b->nkeys].open = -1;
	b->dep[b->nkeys] = 0;
	return b->nkeys++;
}

static void open_bucket(struct bucketing *b, struct key *k, uint32_t head,
			enum start why)
{
	uint32_t blocker = k->open >= 0 ? b->buckets.data[k->open].head : 0;
	struct bucket nb = {.why = why, .head = head, .blocker = blocker};
	k->open = (int32_t)dt_vec_push(&b->buckets, nb);
}

static void find_move(struct bucketing *b, struct member *mb, int64_t size);

/* Decide where collective `id` goes. `reads` are the keys its input reads. */
static void place(struct bucketing *b, uint32_t id, uint64_t reads)
{
	struct dt_module *m = b->m;
	uint32_t wait = wait_of(b, id), x = input_of(m, id);
	struct coll_args a;
	if (!wait || !x || !read_coll(b, id, &a)) {
		remark(b, id, "no_wait", "%s %s not bucketed: %s",
		       kind_name(m, id), name_of(m, id),
		       !wait ? "its only user must be its wait_tensor"
			     : "its input is not one tensor of a declared group");
		return;
	}
	if (dt_node_get(m, id)->op != DT_OP_ALL_REDUCE && rank_of(m, x, NULL) == 0) {
		remark(b, id, "shape", "%s %s not bucketed: a 0-d input has no dim 0",
		       kind_name(m, id), name_of(m, id));
		return;
	}
	double bytes = dt_comm_bytes(m, dt_node_get(m, id));
	if (bytes > b->limit) {
		remark(b, id, "too_large",
		       "%s %s not bucketed: it moves %.0f bytes, more than the bucket (%.0f bytes; --bucket-bytes)",
		       kind_name(m, id), name_of(m, id), bytes, b->limit);
		return;
	}
	struct key want = {.op = dt_node_get(m, id)->op, .group = a.group,
			   .dtype = tensor_of(m, x)->dtype,
			   .reduce = (uint8_t)a.reduce};
	int slot = key_index(b, &want);
	if (slot < 0) {
		reads = 0;
		slot = key_index(b, &want);
	}
	struct key *k = &b->keys[slot];
	uint64_t deps = closure(b, reads);
	if (k->open < 0)
		open_bucket(b, k, id, START_FIRST);
	else if (deps & (1ull << slot))
		open_bucket(b, k, id, START_DEPENDENT);
	else if (b->buckets.data[k->open].bytes + bytes > b->limit)
		open_bucket(b, k, id, START_FULL);
	else if (b->buckets.data[k->open].count == MAX_MEMBERS)
		open_bucket(b, k, id, START_COUNT);
	struct bucket *bk = &b->buckets.data[k->open];
	bk->count++;
	bk->bytes += bytes;
	b->dep[slot] |= deps;
	struct member mb = {.coll = id, .wait = wait, .input = x,
			    .bucket = (uint32_t)k->open,
			    .numel = numel_of(m, x), .bytes = bytes};
	if (want.op == DT_OP_ALL_GATHER)
		find_move(b, &mb, a.size);
	dt_vec_push(&b->members, mb);
	b->slot_of_wait[wait] = (uint8_t)(slot + 1);
}

/* One walk in graph order: the keys every node reads, and the buckets. */
static void form_buckets(struct bucketing *b)
{
	struct dt_module *m = b->m;
	dt_foreach_node(m, id) {
		b->gather = 0;
		dt_node_for_each_input(m, dt_node_get(m, id), collect_bits, b);
		int kind = dt_comm_kind_of_op(dt_node_get(m, id)->op);
		uint32_t phase = b->cur_phase;
		if (kind >= 0 && kind != DT_COMM_ALL_TO_ALL)
			place(b, id, b->gather);
		if (phase != b->cur_phase)
			b->gather = 0;
		if (b->slot_of_wait[id])
			b->gather |= 1ull << (b->slot_of_wait[id] - 1);
		b->bits[id] = b->gather;
		b->phase[id] = b->cur_phase;
	}
	/* Group the members by bucket, each in graph order. */
	uint32_t n = b->members.len, at = 0;
	for (uint32_t i = 0; i < b->buckets.len; i++) {
		b->buckets.data[i].first = at;
		at += b->buckets.data[i].count;
	}
	struct member *grouped = dt_malloc((n ? n : 1) * sizeof *grouped);
	uint32_t *fill = dt_calloc(b->buckets.len + 1, sizeof *fill);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = b->members.data[i].bucket;
		grouped[b->buckets.data[k].first + fill[k]++] = b->members.data[i];
	}
	dt_free(fill);
	dt_free(b->members.data);
	b->members.data = grouped;
	b->members.cap = n ? n : 1;
}

/* DTensor gathers a shard of dim d > 0 as all_gather (dim 0), wait,
 * chunk(G, 0), getitem 0..G-1, cat(dim d): the layout permutation FSDP2
 * does on its flat buffer. When the wait of all_gather `mb` feeds exactly
 * that, record the cat: the bucket then permutes its rows of the flat
 * result straight into the cat's layout (one copy instead of two). */
static void find_move(struct bucketing *b, struct member *mb, int64_t size)
{
	struct dt_module *m = b->m;
	const struct dt_uses *u = &b->uses;
	if (dt_uses_count(u, mb->wait) != 1)
		return;
	uint32_t ch = u->list[u->first[mb->wait]];
	const struct dt_node *chn = dt_node_get(m, ch);
	struct dt_bound_args ba;
	if (chn->op != DT_OP_CHUNK || dt_op_bind(m, chn, &ba, b->ctx->diag) != DT_OK ||
	    ba.arg[1]->v.i != size || (ba.arg[2] && ba.arg[2]->v.i != 0) ||
	    chn->ntensors != size || dt_uses_count(u, ch) != size)
		return;
	uint32_t cat = 0;
	for (uint32_t k = u->first[ch]; k < u->first[ch + 1]; k++) {
		uint32_t gi = u->list[k];
		const struct dt_node *gn = dt_node_get(m, gi);
		if (gn->op != DT_OP_GETITEM || dt_uses_count(u, gi) != 1)
			return;
		uint32_t c = u->list[u->first[gi]];
		if (cat && c != cat)
			return;
		cat = c;
	}
	const struct dt_node *cn = dt_node_get(m, cat);
	if (cn->op != DT_OP_CAT || dt_op_bind(m, cn, &ba, b->ctx->diag) != DT_OK ||
	    ba.arg[0]->kind != DT_ARG_NODES || ba.arg[0]->len != size)
		return;
	/* The pieces in order: getitem k of the chunk at position k. */
	for (int64_t k = 0; k < size; k++) {
		uint32_t gi = m->refs.data[ba.arg[0]->v.first + (uint32_t)k];
		const struct dt_node *gn = dt_node_get(m, gi);
		if (gn->op != DT_OP_GETITEM || dt_node_arg(m, gn, 0)->v.node != ch ||
		    dt_node_arg(m, gn, 1)->v.i != k)
			return;
	}
	int rank = rank_of(m, mb->input, NULL);
	int64_t dim = ba.arg[1] ? ba.arg[1]->v.i : 0;
	if (dim < 0)
		dim += rank;
	if (dim <= 0 || dim >= rank)
		return;
	mb->moved = cat;
	mb->dim = (int)dim;
}

/* ------------------------------------------------------------------ */
/* Rewriting one bucket. */

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

/* Whether result 0 of `id` is contiguous from offset 0. */
static bool is_dense(const struct dt_module *m, uint32_t id)
{
	int64_t shape[DT_MAX_RANK], stride[DT_MAX_RANK];
	int rank = rank_of(m, id, shape), n;
	const struct dt_tensor *t = tensor_of(m, id);
	const int64_t *st = dt_ints_get(m, t->stride, &n);
	dt_contiguous_strides(shape, rank, stride);
	for (int d = 0; d < rank; d++)
		if (shape[d] != 1 && st[d] != stride[d])
			return false;
	return t->offset == 0;
}

/* Result node `r` stands for member wait `w`: its metadata and sharding. */
static void adopt(struct dt_module *m, uint32_t r, uint32_t w)
{
	struct dt_node *rn = dt_node_get(m, r);
	const struct dt_node *wn = dt_node_get(m, w);
	rn->sharding = wn->sharding;
	rn->metas = wn->metas;
	rn->nmetas = wn->nmetas;
}

/* "ar_1 w_1 ar_2 w_2 …" for dtopt.fused_from; "ar_1, ar_2, …" for remarks
 * (with `sep` ", " and no waits). */
static void member_names(const struct bucketing *b, const struct bucket *bk,
			 bool waits, char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t i = 0; i < bk->count && at < n; i++) {
		const struct member *mb = &b->members.data[bk->first + i];
		at += (size_t)snprintf(buf + at, n - at, "%s%s", i ? (waits ? " " : ", ") : "",
				       name_of(b->m, mb->coll));
		if (waits && at < n)
			at += (size_t)snprintf(buf + at, n - at, " %s",
					       name_of(b->m, mb->wait));
	}
}

/* Mark a merged node as fused from the bucket's members. */
static void mark_fused(struct dt_module *m, uint32_t id, dt_str from)
{
	struct dt_meta meta = {dt_str_intern(m, DT_META_FUSED_FROM), from};
	struct dt_node *n = dt_node_get(m, id);
	n->metas = m->metas.len;
	n->nmetas = 1;
	dt_vec_push(&m->metas, meta);
	n->flags |= DT_NODE_FUSED;
}

/* The flat input of member `mb`: [n] (all_gather, all_reduce) or
 * [size, n/size] (reduce_scatter); the input itself when it already is. */
static uint32_t flat_input(struct emitter *e, const struct member *mb,
			   bool scatter, int64_t size)
{
	int64_t want[2] = {mb->numel, 0}, shape[DT_MAX_RANK];
	int rank = scatter ? 2 : 1;
	if (scatter) {
		want[0] = size;
		want[1] = mb->numel / size;
	}
	int have = rank_of(e->m, mb->input, shape);
	if (have == rank && memcmp(shape, want, (size_t)rank * sizeof *want) == 0 &&
	    is_dense(e->m, mb->input))
		return mb->input;
	return emit_view(e, DT_OP_RESHAPE, mb->input, want, rank, "flat");
}

/* Member `mb`'s rows [G, n] of a gathered bucket, laid out as its cat
 * onto dim d: viewed [G, shard...], rank axis moved before shard dim d,
 * reshaped (copied) to the cat's shape. */
static uint32_t emit_move(struct emitter *e, uint32_t rows,
			  const struct member *mb, int64_t size)
{
	int64_t shape[DT_MAX_RANK + 1], perm[DT_MAX_RANK + 1];
	int rank = rank_of(e->m, mb->input, shape + 1);
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
	int orank = rank_of(e->m, mb->moved, out);
	return emit_view(e, DT_OP_RESHAPE, p, out, orank, "out");
}

/* The chunk, getitems and cat a moved member's result replaces. */
static void remove_move(struct dt_module *m, const struct member *mb)
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

/* Replace bucket `bk` (two or more members) by one collective. */
static uint32_t rewrite(struct bucketing *b, const struct bucket *bk)
{
	struct dt_module *m = b->m;
	const struct member *first = &b->members.data[bk->first];
	const struct member *last = &b->members.data[bk->first + bk->count - 1];
	enum dt_op op = (enum dt_op)dt_node_get(m, first->coll)->op;
	struct coll_args a;
	DT_REQUIRE(read_coll(b, first->coll, &a));
	bool scatter = op == DT_OP_REDUCE_SCATTER, gather = op == DT_OP_ALL_GATHER;
	struct emitter e = {.m = m, .diag = b->ctx->diag, .before = last->coll,
			    .line = dt_node_get(m, first->coll)->line};
	char from[4096];
	member_names(b, bk, true, from, sizeof from);
	dt_str from_s = dt_str_intern(m, from);

	uint32_t *flat = dt_arena_alloc(b->ctx->scratch, bk->count * sizeof *flat);
	int64_t total = 0;
	for (uint32_t i = 0; i < bk->count; i++) {
		const struct member *mb = &b->members.data[bk->first + i];
		snprintf(e.base, sizeof e.base, "%s", name_of(m, mb->coll));
		flat[i] = flat_input(&e, mb, scatter, a.size);
		total += mb->numel;
	}
	snprintf(e.base, sizeof e.base, "%s", name_of(m, first->coll));
	/* More members than one cat takes: cats of CAT_FANIN, then their cat
	 * (one more copy of the bucket). */
	uint32_t n = bk->count;
	while (n > 1) { /* a bucket has two members or more */
		uint32_t groups = (n + CAT_FANIN - 1) / CAT_FANIN;
		for (uint32_t k = 0; k < groups; k++) {
			uint32_t lo = k * CAT_FANIN;
			uint32_t len = n - lo < CAT_FANIN ? n - lo : CAT_FANIN;
			struct dt_arg cat_args[2] = {
				{.kind = DT_ARG_NODES, .len = len,
				 .v.first = dt_module_add_refs(m, flat + lo, len)},
				arg_int(scatter ? 1 : 0)};
			flat[k] = emit(&e, DT_OP_CAT, "cat", cat_args, 2);
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
	int64_t off = 0;
	for (uint32_t i = 0; i < bk->count; i++) {
		const struct member *mb = &b->members.data[bk->first + i];
		int64_t len = scatter ? mb->numel / a.size : mb->numel;
		snprintf(e.base, sizeof e.base, "%s", name_of(m, mb->coll));
		struct dt_arg na[4] = {arg_node(all), arg_int(gather ? 1 : 0),
				       arg_int(off), arg_int(len)};
		uint32_t r = emit(&e, DT_OP_NARROW, "part", na, 4);
		off += len;
		int64_t shape[DT_MAX_RANK];
		int rank = rank_of(m, mb->wait, shape);
		if (mb->moved) {
			r = emit_move(&e, r, mb, a.size);
		} else if (gather || rank != 1) {
			r = emit_view(&e, gather ? DT_OP_RESHAPE : DT_OP_VIEW, r,
				      shape, rank, "out");
		}
		/* A gathered member is a copy, laid out as the wait was: views
		 * of it stay possible. (reshape is a view where only one rank's
		 * rows make up the part.) */
		if (gather && !is_dense(m, r)) {
			struct dt_arg ca = arg_node(r);
			r = emit(&e, DT_OP_CONTIGUOUS, "copy", &ca, 1);
		}
		uint32_t stands_for = mb->moved ? mb->moved : mb->wait;
		adopt(m, r, stands_for);
		b->replaced[stands_for] = r;
	}
	for (uint32_t i = 0; i < bk->count; i++) {
		const struct member *mb = &b->members.data[bk->first + i];
		if (mb->moved)
			remove_move(m, mb);
		dt_graph_remove(m, mb->coll);
		dt_graph_remove(m, mb->wait);
	}
	return coll;
}

/* ------------------------------------------------------------------ */
/* Remarks. */

static void remark_bucket(struct bucketing *b, const struct bucket *bk,
			  uint32_t merged)
{
	struct dt_module *m = b->m;
	const struct member *first = &b->members.data[bk->first];
	struct coll_args a;
	DT_REQUIRE(read_coll(b, merged, &a));
	char names[1024], how[64] = "";
	member_names(b, bk, false, names, sizeof names);
	if (dt_node_get(m, first->coll)->op != DT_OP_ALL_GATHER)
		snprintf(how, sizeof how, " %s", dt_reduce_name(a.reduce));
	remark(b, first->coll, NULL,
	       "bucketed %u %s (%s) of %s%s on group %s into %s (%.0f bytes)",
	       bk->count, kind_name(m, first->coll), names,
	       dt_dtype_name((enum dt_dtype)tensor_of(m, first->input)->dtype),
	       how, dt_str_get(m, a.group_name), name_of(m, merged), bk->bytes);
}

/* What a bucket's key adds to its group in remarks. */
static const char *key_text(const struct dt_module *m, uint32_t coll)
{
	return dt_node_get(m, coll)->op == DT_OP_ALL_GATHER
		       ? " and dtype" : ", dtype and reduce op";
}

static void remark_alone(struct bucketing *b, const struct bucket *bk)
{
	struct dt_module *m = b->m;
	const struct member *mb = &b->members.data[bk->first];
	const char *kind = kind_name(m, mb->coll);
	switch (bk->why) {
	case START_DEPENDENT:
		remark(b, mb->coll, "dependent",
		       "%s %s not bucketed: its input depends on the result of an earlier %s of its group%s, so the open bucket (of %s) cannot take it without waiting for itself",
		       kind, name_of(m, mb->coll), kind,
		       key_text(m, mb->coll),
		       name_of(m, bk->blocker));
		break;
	case START_FULL:
		remark(b, mb->coll, "full",
		       "%s %s not bucketed: the bucket of %s is full (%.0f bytes more would exceed --bucket-bytes %.0f) and no later collective joins it",
		       kind, name_of(m, mb->coll), name_of(m, bk->blocker),
		       mb->bytes, b->limit);
		break;
	case START_COUNT:
		remark(b, mb->coll, "full",
		       "%s %s not bucketed: the bucket of %s has %d members, the most it takes, and no later collective joins it",
		       kind, name_of(m, mb->coll), name_of(m, bk->blocker),
		       MAX_MEMBERS);
		break;
	case START_FIRST:
		remark(b, mb->coll, "alone",
		       "%s %s not bucketed: no other independent %s of its group%s",
		       kind, name_of(m, mb->coll), kind,
		       key_text(m, mb->coll));
		break;
	}
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
	struct bucketing *b;
	uint8_t *moved;  /* node -> its metadata changed */
	bool any;
};

static void note_moved(void *ud, uint32_t input)
{
	struct refresh *r = ud;
	r->any |= r->moved[input] != 0;
}

static void refresh(struct bucketing *b)
{
	struct dt_module *m = b->m;
	struct refresh r = {.b = b};
	r.moved = dt_arena_alloc(b->ctx->scratch, m->nodes.len);
	for (uint32_t i = 0; i < b->nold; i++)
		if (b->replaced[i])
			r.moved[b->replaced[i]] = 1;
	dt_foreach_node(m, id) {
		struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_CALL || r.moved[id])
			continue;
		r.any = false;
		dt_node_for_each_input(m, n, note_moved, &r);
		if (!r.any)
			continue;
		struct dt_shape_ctx c;
		DT_REQUIRE(dt_infer_node(m, id, b->ctx->diag, &c) == DT_OK);
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

static uint32_t replacement_of(void *ud, uint32_t input)
{
	const struct bucketing *b = ud;
	return input < b->nold && b->replaced[input] ? b->replaced[input] : input;
}

static int run_bucket_collectives(struct dt_pass_ctx *ctx)
{
	struct dt_module *m = ctx->m;
	struct bucketing b = {.ctx = ctx, .m = m};
	b.limit = ctx->options->bucket_bytes > 0 ? (double)ctx->options->bucket_bytes
						 : DEFAULT_BUCKET_BYTES;
	uint32_t count = m->nodes.len;
	dt_uses_fill(&b.uses, m);
	b.bits = dt_arena_alloc(ctx->scratch, count * sizeof(uint64_t));
	b.phase = dt_arena_alloc(ctx->scratch, count * sizeof(uint32_t));
	b.slot_of_wait = dt_arena_alloc(ctx->scratch, count);
	b.replaced = dt_arena_alloc(ctx->scratch, count * sizeof(uint32_t));
	b.nold = count;
	form_buckets(&b);
	dt_uses_fini(&b.uses);
	bool changed = false;
	for (uint32_t i = 0; i < b.buckets.len; i++) {
		const struct bucket *bk = &b.buckets.data[i];
		if (bk->count == 1) {
			remark_alone(&b, bk);
			continue;
		}
		uint32_t merged = rewrite(&b, bk);
		remark_bucket(&b, bk, merged);
		changed = true;
	}
	if (changed) {
		dt_foreach_node(m, id)
			dt_node_map_inputs(m, id, replacement_of, &b);
		reorder(m, ctx->scratch);
		refresh(&b);
	}
	dt_vec_free(&b.members);
	dt_vec_free(&b.buckets);
	return DT_OK;
}

const struct dt_pass dt_pass_bucket_collectives = {
	.name = "bucket-collectives",
	.help = "merge independent collectives of one kind, group, dtype and reduce op into one over a flat buffer (--bucket-bytes)",
	.requires = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.preserves = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.run = run_bucket_collectives,
};
