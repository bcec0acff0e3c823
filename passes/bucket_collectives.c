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
 * The cat costs no copy where a member is computed by a kernel read by
 * nothing else: the interpreter writes it straight into its run of the
 * flat buffer (runtime/place.c; all_reduce and all_gather, whose runs
 * are contiguous).
 * A gather whose shards are then moved onto dim d > 0 (DTensor's chunk +
 * getitems + cat after the wait: the layout permutation FSDP2 does on its
 * flat buffer) has its columns viewed as [group, shard...], permuted and
 * copied straight into the cat's layout, which replaces the chunk and cat
 * (one copy instead of two).
 *
 * Membership (greedy, in graph order, one open bucket per key): a
 * collective whose only user is its wait joins the open bucket of its key
 * unless its input depends on that bucket's result (reachability over the
 * SSA graph with the buckets contracted, so the merged collective never
 * waits for itself) or the merged buffer would exceed --bucket-bytes
 * (the bytes the cost model charges: the gathered size for all_gather,
 * the input size otherwise) or hold more than 4096 members (two levels of
 * 64-input cats). Reading a closed, earlier bucket of the key is no obstacle: the
 * open bucket's merged collective goes after its members' inputs, so
 * after that bucket's wait (DP's gradients all read the all-reduced loss
 * and still bucket together). The dependence test: per node and key, 1 +
 * the highest bucket of that key whose result it reads (0: none); per
 * bucket the same row for what its members read, starting from the row of
 * its key's previous bucket (reading bucket j stands for reading every
 * bucket of its key up to j, a safe over-approximation); a row is closed
 * over the buckets it names, and a collective may join open bucket b of
 * its key iff its closed row's entry for that key is at most b.
 * The extra memory a bucket keeps alive is its flat buffer
 * plus the inputs held until the bucket starts, at most twice the bucket.
 * Decisions depend only on the graph's structure and on the sizes of the
 * key's own collectives, so every rank of a group buckets alike.
 *
 * Such a bucket is then cut by the cost model into runs of consecutive
 * members, each one collective issued when its last member is ready,
 * where the latency a merge saves is less than the overlap it loses
 * (bucket_policy.c; the ready times are the modelled compute of the nodes
 * up to each member's input, dt_compute_cost); a member the cut leaves
 * alone gets remark `overlap`. --force-fusion keeps the buckets whole,
 * and so does a per-rank graph (rank="R"): its compute, and so the cut,
 * may differ between ranks (uneven shards), and every rank of a group must
 * issue the same collectives; an SPMD graph is one program for all.
 *
 * Membership is this file's, the cut bucket_policy.c's, the rewrite
 * bucket_rewrite.c's. Merged
 * nodes go before the last member's collective; the graph is then
 * reordered (users of a member's result that came before it follow it),
 * and schedule-collectives places starts and waits. Merged nodes are named
 * after the first member (`ar_3.bucket`), carry its line and meta
 * dtopt.fused_from (every member's collective and wait); each member's
 * result takes its wait's name, metadata and sharding (the wait, out of
 * the graph, becomes NAME.unbucketed). Every collective kept
 * out gets a remark saying why (tag bucket-collectives:REASON); every
 * bucket a remark listing its members.
 *
 * Requires: VERIFIED, SHAPES. Preserves: both. O(keys * (nodes + uses))
 * plus O(keys^3) per collective (the closure), keys <= 64 at once, plus
 * O(members^2) per bucket (the cut).
 */
#include "bucket_internal.h"
#include "cost_model.h"
#include "memory_guard.h"

#include <string.h>

#define DEFAULT_BUCKET_BYTES (25 << 20) /* DDP's bucket_cap_mb */
#define MAX_KEYS 64 /* keys tracked at once (one row entry each) */
/* Two levels of cats. */
#define MAX_MEMBERS (DT_BUCKET_CAT_FANIN * DT_BUCKET_CAT_FANIN)

/* Why a bucket started where it did (for the remarks of lone ones). */
enum start {
	START_FIRST,     /* the first collective of its key (so far) */
	START_DEPENDENT, /* the open bucket's result feeds this one */
	START_FULL,      /* the open bucket had no room left */
	START_COUNT,     /* the open bucket had MAX_MEMBERS members */
};

struct bucket {
	uint32_t first, count; /* members[first .. +count) once grouped */
	double bytes;
	enum start why;
	uint32_t head;         /* its first collective */
	uint32_t blocker;      /* START_DEPENDENT/FULL: the open bucket's
				  first collective */
	uint32_t phase;
	int slot;              /* its key */
	/* Per key: 1 + the highest bucket whose result a member reads. */
	uint32_t reads[MAX_KEYS];
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
	const struct dt_topology *topo;
	double limit;
	uint32_t nodes_before;    /* the module's node count at the start */
	double memory_bound;      /* fit_budget's guard bound, bytes */
	struct dt_uses uses;
	/* Per node, MAX_KEYS entries: for each key (slot of this phase), 1 +
	 * the highest bucket whose result it reads, directly or through other
	 * nodes; 0 if none. */
	uint32_t *reads;
	uint32_t *phase;
	uint32_t *bucket_of_wait; /* member wait -> its bucket + 1 */
	double *ready;            /* node -> modelled compute up to it, µs */
	uint32_t cur_phase;
	struct key keys[MAX_KEYS];
	int nkeys;
	DT_VEC(struct dt_bucket_member) members;
	DT_VEC(struct bucket) buckets;
	uint32_t gather[MAX_KEYS]; /* scratch for collect_reads */
};

static const char *name_of(const struct dt_module *m, uint32_t id)
{
	return dt_str_get(m, dt_node_get(m, id)->name);
}

static int64_t numel_of(const struct dt_module *m, uint32_t id)
{
	int64_t shape[DT_MAX_RANK];
	int rank = dt_bucket_shape(m, id, shape);
	return dt_numel(shape, rank);
}

/* ------------------------------------------------------------------ */
/* Candidates. */

bool dt_bucket_read_args(const struct dt_module *m, uint32_t id,
			 struct dt_diag *d, struct dt_bucket_args *a)
{
	const struct dt_node *n = dt_node_get(m, id);
	struct dt_bound_args bound;
	if (dt_op_bind(m, n, &bound, d) != DT_OK)
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

/* row `to` |= row `from` (entrywise max); whether `to` grew. */
static bool merge_row(uint32_t *to, const uint32_t *from, int nkeys)
{
	bool grew = false;
	for (int k = 0; k < nkeys; k++)
		if (from[k] > to[k]) {
			to[k] = from[k];
			grew = true;
		}
	return grew;
}

static void collect_reads(void *ud, uint32_t input)
{
	struct bucketing *b = ud;
	if (b->phase[input] == b->cur_phase)
		merge_row(b->gather, &b->reads[(size_t)input * MAX_KEYS], b->nkeys);
}

/* Row `row` with what the buckets it names read added, to a fixpoint. */
static void closure(const struct bucketing *b, uint32_t *row)
{
	bool grew;
	do {
		grew = false;
		for (int k = 0; k < b->nkeys; k++)
			if (row[k])
				grew |= merge_row(row, b->buckets.data[row[k] - 1].reads,
						  b->nkeys);
	} while (grew);
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
	return b->nkeys++;
}

static void open_bucket(struct bucketing *b, int slot, uint32_t head,
			enum start why)
{
	struct key *k = &b->keys[slot];
	struct bucket nb = {.why = why, .head = head, .phase = b->cur_phase,
			    .slot = slot};
	if (k->open >= 0) {
		const struct bucket *prev = &b->buckets.data[k->open];
		nb.blocker = prev->head;
		memcpy(nb.reads, prev->reads, sizeof nb.reads);
	}
	k->open = (int32_t)dt_vec_push(&b->buckets, nb);
}

static void find_move(struct bucketing *b, struct dt_bucket_member *mb, int64_t size);

/* Decide where collective `id` goes. `reads` is the row of its input
 * (closed here). */
/* Whether the runtime computes input `x` of a member straight into the
 * flat buffer (runtime/place.c): x, or the value x views without moving
 * a byte, is a kernel's result or an input (placed once for the run) read
 * by nothing else. A strided x is flattened by a copy, computed there in
 * its stead (and staged the same way by a collective of its own). */
static bool computed_in_place(const struct bucketing *b, uint32_t x)
{
	const struct dt_module *m = b->m;
	if (!dt_bucket_is_dense(m, x))
		return true;
	for (;;) {
		const struct dt_node *n = dt_node_get(m, x);
		if (dt_uses_count(&b->uses, x) != 1 || !dt_bucket_is_dense(m, x))
			return false;
		if (n->kind == DT_NODE_PLACEHOLDER || n->kind == DT_NODE_CONSTANT)
			return true;
		if (n->kind != DT_NODE_CALL)
			return false;
		enum dt_op op = (enum dt_op)n->op;
		bool view = dt_op_has(op, DT_OPF_VIEW) || op == DT_OP_RESHAPE ||
			    op == DT_OP_UNSAFE_VIEW || op == DT_OP_CONTIGUOUS;
		if (!view)
			return op != DT_OP_GETITEM && n->ntensors == 1 &&
			       !dt_op_has(op, DT_OPF_COLLECTIVE) &&
			       !dt_op_has(op, DT_OPF_WAIT);
		const struct dt_arg *in = dt_node_arg(m, n, 0);
		if (!in || in->kind != DT_ARG_NODE)
			return false;
		x = in->v.node;
	}
}

/* Bytes (read + written) a merge copies for member `mb` of kind `op`:
 * its input into the flat buffer (always for reduce_scatter, whose runs
 * are strided; else unless computed there), and an all_gather member's
 * columns out to its gathered shape (unless moved: that copy replaces the
 * chunk and cat's). */
static double copied_bytes(const struct bucketing *b,
			   const struct dt_bucket_member *mb, enum dt_op op)
{
	const struct dt_module *m = b->m;
	double in = (double)mb->numel *
		    (double)dt_dtype_size(dt_bucket_tensor(m, mb->input)->dtype);
	double copied = 0;
	if (op == DT_OP_REDUCE_SCATTER || !computed_in_place(b, mb->input))
		copied += 2 * in;
	if (op == DT_OP_ALL_GATHER && !mb->moved)
		copied += 2 * mb->bytes;
	return copied;
}

static void place(struct bucketing *b, uint32_t id, uint32_t *reads)
{
	struct dt_module *m = b->m;
	uint32_t wait = wait_of(b, id), x = input_of(m, id);
	struct dt_bucket_args a;
	if (!wait || !x || !dt_bucket_read_args(m, id, b->ctx->diag, &a)) {
		remark(b, id, "no_wait", "%s %s not bucketed: %s",
		       kind_name(m, id), name_of(m, id),
		       !wait ? "its only user must be its wait_tensor"
			     : "its input is not one tensor of a declared group");
		return;
	}
	if (dt_node_get(m, id)->op != DT_OP_ALL_REDUCE && dt_bucket_shape(m, x, NULL) == 0) {
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
			   .dtype = dt_bucket_tensor(m, x)->dtype,
			   .reduce = (uint8_t)a.reduce};
	int slot = key_index(b, &want);
	if (slot < 0) {
		memset(reads, 0, MAX_KEYS * sizeof *reads);
		slot = key_index(b, &want);
	}
	struct key *k = &b->keys[slot];
	closure(b, reads);
	if (k->open < 0)
		open_bucket(b, slot, id, START_FIRST);
	else if (reads[slot] > (uint32_t)k->open)
		open_bucket(b, slot, id, START_DEPENDENT);
	else if (b->buckets.data[k->open].bytes + bytes > b->limit)
		open_bucket(b, slot, id, START_FULL);
	else if (b->buckets.data[k->open].count == MAX_MEMBERS)
		open_bucket(b, slot, id, START_COUNT);
	struct bucket *bk = &b->buckets.data[k->open];
	bk->count++;
	bk->bytes += bytes;
	merge_row(bk->reads, reads, b->nkeys);
	struct dt_bucket_member mb = {.coll = id, .wait = wait, .input = x,
			    .bucket = (uint32_t)k->open,
			    .numel = numel_of(m, x), .bytes = bytes};
	if (want.op == DT_OP_ALL_GATHER)
		find_move(b, &mb, a.size);
	mb.copied = copied_bytes(b, &mb, want.op);
	dt_vec_push(&b->members, mb);
	b->bucket_of_wait[wait] = (uint32_t)k->open + 1;
}

/* One walk in graph order: the buckets every node reads, and the
 * buckets. */
static void form_buckets(struct bucketing *b)
{
	struct dt_module *m = b->m;
	double now = 0;
	dt_foreach_node(m, id) {
		now += dt_compute_cost(b->topo, m, dt_node_get(m, id));
		b->ready[id] = now;
		memset(b->gather, 0, sizeof b->gather);
		dt_node_for_each_input(m, dt_node_get(m, id), collect_reads, b);
		int kind = dt_comm_kind_of_op(dt_node_get(m, id)->op);
		uint32_t phase = b->cur_phase;
		if (kind >= 0 && kind != DT_COMM_ALL_TO_ALL)
			place(b, id, b->gather);
		if (phase != b->cur_phase)
			memset(b->gather, 0, sizeof b->gather);
		uint32_t waited = b->bucket_of_wait[id];
		if (waited && b->buckets.data[waited - 1].phase == b->cur_phase) {
			int slot = b->buckets.data[waited - 1].slot;
			if (waited > b->gather[slot])
				b->gather[slot] = waited;
		}
		memcpy(&b->reads[(size_t)id * MAX_KEYS], b->gather, sizeof b->gather);
		b->phase[id] = b->cur_phase;
	}
	/* Group the members by bucket, each in graph order. */
	uint32_t n = b->members.len, at = 0;
	for (uint32_t i = 0; i < b->buckets.len; i++) {
		b->buckets.data[i].first = at;
		at += b->buckets.data[i].count;
	}
	struct dt_bucket_member *grouped = dt_malloc((n ? n : 1) * sizeof *grouped);
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
static void find_move(struct bucketing *b, struct dt_bucket_member *mb, int64_t size)
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
	int rank = dt_bucket_shape(m, mb->input, NULL);
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

/* ------------------------------------------------------------------ */
/* Remarks. */

static void remark_bucket(struct bucketing *b, const struct bucket *bk,
			  uint32_t merged)
{
	struct dt_module *m = b->m;
	const struct dt_bucket_member *first = &b->members.data[bk->first];
	struct dt_bucket_args a;
	DT_REQUIRE(dt_bucket_read_args(m, merged, b->ctx->diag, &a));
	char names[1024], how[64] = "";
	size_t at = 0;
	names[0] = 0;
	for (uint32_t i = 0; i < bk->count && at < sizeof names; i++)
		at += (size_t)snprintf(names + at, sizeof names - at, "%s%s",
				       i ? ", " : "",
				       name_of(m, b->members.data[bk->first + i].coll));
	if (dt_node_get(m, first->coll)->op != DT_OP_ALL_GATHER)
		snprintf(how, sizeof how, " %s", dt_reduce_name(a.reduce));
	remark(b, first->coll, NULL,
	       "bucketed %u %s (%s) of %s%s on group %s into %s (%.0f bytes)",
	       bk->count, kind_name(m, first->coll), names,
	       dt_dtype_name((enum dt_dtype)dt_bucket_tensor(m, first->input)->dtype),
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
	const struct dt_bucket_member *mb = &b->members.data[bk->first];
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

static void remark_cut(struct bucketing *b, const struct bucket *bk,
		       const struct dt_bucket_member *mb)
{
	struct dt_module *m = b->m;
	remark(b, mb->coll, "overlap",
	       "%s %s not bucketed: the cost model keeps it alone (merged with the others of the bucket of %s it would add more exposed communication and copying than the launch it saves)",
	       kind_name(m, mb->coll), name_of(m, mb->coll),
	       name_of(m, bk->head));
}

/* Consecutive members [first, first + count) of bucket `bucket`: one
 * collective when merged, else one remark. */
struct run {
	uint32_t bucket, first, count;
	bool merge;   /* two or more members, and the memory guard agrees */
	bool together; /* all_gather: copy every member out at the first
			  member's reader (copy_out_together), which brought
			  the program's peak from `apart` bytes to `joined` */
	double apart, joined;
	double peak;  /* the guard ended the run here: the peak the program
			 would reach with the next member in it (0: not) */
	bool copy_in; /* the guard's: members copied into the flat buffer
			 where it runs (dtopt.copy_inputs), as computed into
			 it the program would reach `placed` bytes */
	double placed;
};
typedef DT_VEC(struct run) run_vec;

/* Bucket `bucket` cut by the cost model (dt_bucket_cut) into runs,
 * appended to `runs` (a bucket of one member is one run). */
static void cut_runs(struct bucketing *b, uint32_t bucket, run_vec *runs)
{
	struct dt_pass_ctx *ctx = b->ctx;
	const struct bucket *bk = &b->buckets.data[bucket];
	struct dt_module *m = b->m;
	const struct dt_bucket_member *mb = &b->members.data[bk->first];
	uint32_t n = bk->count, nruns = 1;
	uint32_t *run_first = dt_malloc((n + 1) * sizeof *run_first);
	run_first[0] = 0;
	if (n > 1 && !ctx->options->force_fusion && m->rank < 0) {
		struct dt_bucket_args a;
		DT_REQUIRE(dt_bucket_read_args(m, mb->coll, ctx->diag, &a));
		const struct dt_group *g = &m->groups.data[a.group];
		const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
		enum dt_comm_kind kind = (enum dt_comm_kind)dt_comm_kind_of_op(
			dt_node_get(m, mb->coll)->op);
		double alpha = dt_comm_cost(b->topo, mesh, g->dims, g->ndims, kind, 0);
		double beta = (dt_comm_cost(b->topo, mesh, g->dims, g->ndims, kind,
					    (double)(1 << 30)) - alpha) / (double)(1 << 30);
		double *ready = dt_malloc(3 * n * sizeof *ready), *bytes = ready + n;
		double *copy = bytes + n;
		for (uint32_t i = 0; i < n; i++) {
			ready[i] = b->ready[mb[i].input];
			bytes[i] = mb[i].bytes;
			copy[i] = dt_roofline_us(b->topo, 0, mb[i].copied);
		}
		nruns = dt_bucket_cut(ready, bytes, copy, n, alpha, beta, run_first);
		dt_free(ready);
	}
	run_first[nruns] = n;
	for (uint32_t r = 0; r < nruns; r++) {
		uint32_t count = run_first[r + 1] - run_first[r];
		struct run run = {.bucket = bucket,
				  .first = bk->first + run_first[r],
				  .count = count,
				  .merge = count > 1};
		dt_vec_push(runs, run);
	}
	dt_free(run_first);
}

/* Run `r` as a bucket (for the remarks). */
static struct bucket run_bucket(const struct bucketing *b, const struct run *r)
{
	struct bucket run = b->buckets.data[r->bucket];
	run.first = r->first;
	run.count = r->count;
	run.bytes = 0;
	for (uint32_t i = 0; i < run.count; i++)
		run.bytes += b->members.data[run.first + i].bytes;
	return run;
}

/* The remark of run `r` (on b's module, whose node ids a rewrite keeps). */
static void remark_run(struct bucketing *b, const struct run *r,
		       uint32_t merged)
{
	struct bucket run = run_bucket(b, r);
	const struct bucket *bk = &b->buckets.data[r->bucket];
	const struct dt_bucket_member *first = &b->members.data[r->first];
	if (merged) {
		remark_bucket(b, &run, merged);
		if (r->together && r->apart > 0)
			remark(b, first->coll, "copies",
			       "the members of %s are copied out of it together, where the first is read: the program's peak falls from %.0f to %.0f bytes per rank (copied each where it is read, they keep the flat result alive until the last is)",
			       name_of(b->m, merged), r->apart, r->joined);
		else if (r->together)
			remark(b, first->coll, "copies",
			       "the members of %s are copied out of it together, where the first is read: its bucket, before the memory guard cut it, held less so",
			       name_of(b->m, merged));
		if (r->copy_in)
			remark(b, first->coll, "copies",
			       "the members of %s are copied into its flat buffer where it runs (dtopt.copy_inputs): computed into it, the buffer would live from the first member on and the program would hold %.0f bytes per rank at its peak, over %.0f",
			       name_of(b->m, merged), r->placed, b->memory_bound);
	} else if (bk->count == 1) {
		remark_alone(b, bk);
	} else if (!r->peak) {
		remark_cut(b, bk, first);
	}
	if (r->peak)
		remark(b, first->coll, "memory",
		       "%s %s%s: merged with a neighbour in its bucket the program would hold %.0f bytes per rank at its peak, over %.0f (--memory-budget %lld, or the peak before bucketing)",
		       kind_name(b->m, first->coll), name_of(b->m, first->coll),
		       merged ? " and the rest of its run bucketed apart"
			      : " not bucketed",
		       r->peak, b->memory_bound,
		       (long long)b->ctx->options->memory_budget);
}

/* The members of a merged all_gather are copied out of its flat result
 * each where the graph first reads it (the reorder puts them there), and
 * the flat result lives until the last is: from the first member's reader
 * on the program holds the gathered bytes twice until then. Moving every
 * copy (the nodes made for the members' results, ids parts[0] ..
 * parts[1], each reading only the merged result or another of them) to
 * just before the first non-copy node after the earliest of them frees
 * the flat result there instead, at the cost of holding every copy from
 * there on: which is less depends on the graph (choose_copies). */
static void copy_out_together(struct dt_module *m, const uint32_t parts[2])
{
	uint32_t anchor = 0;
	dt_foreach_node(m, id) {
		bool part = id >= parts[0] && id <= parts[1];
		if (part && !anchor)
			anchor = id;
		else if (anchor && !part) {
			anchor = id;
			break;
		}
	}
	for (uint32_t id = parts[0]; id <= parts[1]; id++) {
		dt_graph_remove(m, id);
		dt_graph_insert_before(m, id, anchor);
	}
}

/* Rewrite the runs to merge on ctx's module (b's, or a trial's copy of
 * it, whose node ids are b's), remarking every run in graph order when
 * `remarks`. Returns whether anything changed. */
static bool rewrite_runs(struct bucketing *b, struct dt_pass_ctx *ctx,
			 const struct run *runs, uint32_t nruns, bool remarks)
{
	uint32_t count = b->nodes_before;
	/* member wait (or moved cat) -> the node standing for it */
	uint32_t *replaced = dt_arena_alloc(ctx->scratch, count * sizeof(uint32_t));
	uint32_t (*parts)[2] = dt_arena_alloc(ctx->scratch,
					      (nruns + 1) * sizeof *parts);
	bool changed = false;
	for (uint32_t i = 0; i < nruns; i++) {
		uint32_t merged = 0;
		if (runs[i].merge)
			merged = dt_bucket_rewrite(ctx, &b->members.data[runs[i].first],
						   runs[i].count, runs[i].copy_in,
						   replaced, parts[i]);
		if (remarks)
			remark_run(b, &runs[i], merged);
		changed |= merged != 0;
	}
	if (changed)
		dt_bucket_finish(ctx, replaced, count);
	for (uint32_t i = 0; i < nruns; i++)
		if (runs[i].merge && runs[i].together)
			copy_out_together(ctx->m, parts[i]);
	return changed;
}

/* The memory plan's peak with the runs to merge merged (a trial on a
 * copy). */
static double trial_peak(struct bucketing *b, const struct run *runs,
			 uint32_t nruns)
{
	struct dt_pass_ctx trial;
	struct dt_diag quiet;
	dt_memory_trial_begin(&trial, &quiet, b->ctx);
	rewrite_runs(b, &trial, runs, nruns, false);
	return dt_memory_trial_end(&trial);
}

/* Per merged all_gather run, in graph order, whether copying its members
 * out together (copy_out_together) lowers the program's peak as the
 * interpreter runs it, the runs before decided: kept where it does. */
static void choose_copies(struct bucketing *b, struct run *runs, uint32_t nruns)
{
	double best = -1;
	for (uint32_t i = 0; i < nruns; i++) {
		if (!runs[i].merge || dt_node_get(b->m, b->members.data[runs[i].first].coll)
					      ->op != DT_OP_ALL_GATHER)
			continue;
		if (best < 0)
			best = trial_peak(b, runs, nruns);
		runs[i].together = true;
		double peak = trial_peak(b, runs, nruns);
		if (peak < best) {
			runs[i].apart = best;
			runs[i].joined = best = peak;
		} else {
			runs[i].together = false;
		}
	}
}

/* Whether `fitted` with run r (appended for the trial) merged keeps the
 * program within `bound`: as the interpreter would place it, else with
 * r's members copied in (r->copy_in set) where that keeps it within the
 * budget proper (`budget` <= bound: copying in is the guard's own trade,
 * not a licence to reach the peak before bucketing). *peak = r->placed:
 * the peak as placed. */
static bool fit_trial(struct bucketing *b, run_vec *fitted, struct run *r,
		      double bound, double budget, double *peak)
{
	r->copy_in = false;
	dt_vec_push(fitted, *r);
	*peak = r->placed = trial_peak(b, fitted->data, fitted->len);
	bool fits = *peak <= bound;
	if (!fits) {
		fitted->data[fitted->len - 1].copy_in = true;
		r->copy_in = fits =
		    trial_peak(b, fitted->data, fitted->len) <= budget;
	}
	fitted->len--;
	return fits;
}

/* Under --memory-budget (memory_guard.h): when the runs all merged would
 * hold more than the guard's bound, each run to merge is cut again, in
 * graph order, into the longest runs that keep the program (with the runs
 * kept before) within the bound, its members computed into the flat
 * buffer (placed: the interpreter's way, no copies) where that fits, else
 * copied in where it runs (which holds the buffer only from there on, but
 * the members and the copy at once there): a member that fits with no
 * next one stays alone. Trials: per run kept, one or two for the rest of
 * its bucket's run, then a bisection of its length. */
static void fit_budget(struct bucketing *b, run_vec *runs)
{
	struct dt_memory_guard g;
	bool any = false;
	for (uint32_t i = 0; i < runs->len; i++)
		any |= runs->data[i].merge;
	if (!any || !dt_memory_guard_init(&g, b->ctx) ||
	    trial_peak(b, runs->data, runs->len) <= g.bound)
		return;
	b->memory_bound = g.bound;
	run_vec fitted = {0};
	for (uint32_t i = 0; i < runs->len; i++) {
		struct run r = runs->data[i];
		if (!r.merge) {
			dt_vec_push(&fitted, r);
			continue;
		}
		double over = 0; /* the last peak over the bound */
		for (uint32_t at = r.first, end = r.first + r.count; at < end;) {
			/* The longest run from `at` that fits: the rest of r,
			 * else bisected (a longer run holds no less); one
			 * member is no merge (a last one alone: by the guard). */
			struct run best = {.bucket = r.bucket, .first = at,
					   .count = 1, .peak = over,
					   .together = r.together};
			struct run fit = best;
			uint32_t fits = 1, over_at = end - at + 1;
			for (uint32_t n = end - at; n >= 2 && over_at - fits > 1;
			     n = fits + (over_at - fits) / 2) {
				struct run longer = best;
				longer.count = n;
				longer.merge = true;
				double peak;
				if (fit_trial(b, &fitted, &longer, g.bound,
					      (double)b->ctx->options->memory_budget,
					      &peak)) {
					fits = n;
					fit = longer;
				} else {
					over_at = n;
					over = peak;
				}
			}
			if (fits >= 2) {
				best = fit;
				best.peak = fits < end - at ? over : 0;
			} else if (end - at >= 2) {
				best.peak = over;
			}
			dt_vec_push(&fitted, best);
			at += best.count;
		}
	}
	dt_vec_free(runs);
	*runs = fitted;
}

/* ------------------------------------------------------------------ */

static int run_bucket_collectives(struct dt_pass_ctx *ctx)
{
	struct dt_module *m = ctx->m;
	struct bucketing b = {.ctx = ctx, .m = m};
	b.limit = ctx->options->bucket_bytes > 0 ? (double)ctx->options->bucket_bytes
						 : DEFAULT_BUCKET_BYTES;
	uint32_t count = m->nodes.len;
	b.nodes_before = count;
	dt_uses_fill(&b.uses, m);
	b.reads = dt_arena_alloc(ctx->scratch,
				 (size_t)count * MAX_KEYS * sizeof(uint32_t));
	b.phase = dt_arena_alloc(ctx->scratch, count * sizeof(uint32_t));
	b.bucket_of_wait = dt_arena_alloc(ctx->scratch, count * sizeof(uint32_t));
	b.ready = dt_arena_alloc(ctx->scratch, count * sizeof(double));
	b.topo = ctx->options->topology ? ctx->options->topology : &m->topology;
	form_buckets(&b);
	dt_uses_fini(&b.uses);
	run_vec runs = {0};
	for (uint32_t i = 0; i < b.buckets.len; i++)
		cut_runs(&b, i, &runs);
	if (m->view == DT_VIEW_LOCAL)
		choose_copies(&b, runs.data, runs.len);
	fit_budget(&b, &runs);
	for (uint32_t i = 0; ctx->options->bucket_room && i < runs.len; i++)
		if (runs.data[i].peak > b.memory_bound + *ctx->options->bucket_room)
			*ctx->options->bucket_room = runs.data[i].peak - b.memory_bound;
	bool changed = rewrite_runs(&b, ctx, runs.data, runs.len, true);
	if (changed && m->rank >= 0 && !ctx->options->force_fusion)
		dt_diag_report(ctx->diag, DT_REMARK, m->file, 0, "bucket-collectives",
			       "buckets of a per-rank graph (rank %d) are not cut by the cost model: each rank's compute may differ, and every rank must bucket alike",
			       (int)m->rank);
	dt_vec_free(&runs);
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
