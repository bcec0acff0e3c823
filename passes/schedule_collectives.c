// SPDX-License-Identifier: MIT
/* schedule_collectives.c: the `schedule-collectives` pass reorders a
 * local-view graph so that communication overlaps compute (semantics
 * §4.7): every collective starts as soon as its inputs allow, together
 * with the copies and views that only feed it (a bucket's cat), and every
 * wait moves down to just before the first node that reads its result:
 *
 *   x = mm(a, b)                     ag = all_gather(w, 4, 'dp')
 *   y = gelu(x)                      x = mm(a, b)
 *   ag = all_gather(w, 4, 'dp')  →   y = gelu(x)
 *   w2 = wait(ag)                    z = add(y, 1)
 *   z = add(y, 1)                    w2 = wait(ag)
 *   o = mm(z, w2)                    o = mm(z, w2)
 *
 * Views of a waited result that read nothing else (a bucket's narrows and
 * views, its members' results) move down with the wait: they are free,
 * and the first node that computes on them is the wait's first real use.
 *
 * Collectives keep their relative order (every rank issues them in one
 * order on each communicator). Moving a start up keeps its buffers alive
 * longer, and so does moving a wait down: at every point the bytes held
 * beyond the written order (each collective's input + output, each early
 * copy's result) stay within --overlap-bytes (default 64 MiB); a move that
 * would exceed it waits for room, or stays put (the pass's remark counts
 * them). Under --memory-budget the limit is lowered until the program's
 * memory plan stays within the budget (memory_guard.h; remark
 * schedule-collectives:memory).
 *
 * Requires: VERIFIED, SHAPES (for the bytes). Preserves: both (only the
 * order changes).
 * O(nodes + uses) plus the retries of moves held back by the limit.
 */
#include "cost_model.h"
#include "memory_guard.h"

#include <math.h>
#include <string.h>

#define DEFAULT_OVERLAP_BYTES (64 << 20)

struct sched {
	struct dt_pass_ctx *ctx;
	struct dt_module *m;
	double limit, extra;   /* bytes held beyond the written order */
	struct dt_uses uses;
	uint32_t *order, n;    /* the written order (output excluded) */
	uint32_t *pos;         /* node -> index in order */
	uint32_t walk;         /* index the walk has reached */
	uint32_t *out, nout;   /* the new order */
	uint8_t *emitted, *early, *hoist, *sinkable, *pending;
	uint32_t *missing;     /* hoistable node -> inputs not emitted yet;
				  pending wait -> nout when it was held */
	double *bytes;         /* hoistable: held while early; wait: while late */
	uint32_t *colls, ncolls, next_coll; /* collectives in written order */
	DT_VEC(uint32_t) ready; /* ready hoistables held back (a heap) */
	uint32_t *work;        /* stack of ready hoistables */
	uint32_t nwork;
	bool dirty;            /* room or order changed: retry `ready` */
	bool sink_all;         /* scratch of all_sinkable */
	uint32_t moved_up, moved_down, held;
	uint8_t *reported;
};

static bool is_collective(const struct dt_module *m, uint32_t id)
{
	return dt_comm_kind_of_op(dt_node_get(m, id)->op) >= 0;
}

static double tensor_bytes(const struct dt_module *m, uint32_t id)
{
	const struct dt_node *n = dt_node_get(m, id);
	double total = 0;
	for (uint32_t i = 0; i < n->ntensors; i++)
		total += (double)dt_tensor_nbytes(m, dt_node_tensor(m, n, (int)i));
	return total;
}

/* A node that only prepares a collective's input: moving it up with the
 * collective costs no compute worth keeping in place. */
static bool is_prep(const struct dt_module *m, uint32_t id)
{
	const struct dt_node *n = dt_node_get(m, id);
	if (n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN)
		return false;
	return dt_op_has((enum dt_op)n->op, DT_OPF_VIEW) ||
	       n->op == DT_OP_RESHAPE || n->op == DT_OP_UNSAFE_VIEW ||
	       n->op == DT_OP_CAT || n->op == DT_OP_CLONE ||
	       n->op == DT_OP_CONTIGUOUS || n->op == DT_OP_CONSTANT_PAD_ND ||
	       n->op == DT_OP_GETITEM;
}

static uint32_t only_user(const struct sched *s, uint32_t id)
{
	return dt_uses_count(&s->uses, id) == 1 ? s->uses.list[s->uses.first[id]]
						: 0;
}

static void all_sinkable(void *ud, uint32_t input)
{
	struct sched *s = ud;
	s->sink_all &= s->sinkable[input] != 0;
}

/* Which nodes may move up (collectives whose only user is their wait, and
 * prep nodes all of whose users may) and which may move down (those
 * waits, and the views that read only them or such views). */
static void classify(struct sched *s)
{
	struct dt_module *m = s->m;
	for (uint32_t p = s->n; p-- > 0;) {
		uint32_t id = s->order[p];
		if (is_collective(m, id)) {
			uint32_t w = only_user(s, id);
			if (w && dt_node_get(m, w)->op == DT_OP_WAIT) {
				s->hoist[id] = 1;
				s->sinkable[w] = 1;
				s->bytes[id] = s->bytes[w] =
					tensor_bytes(m, id) +
					dt_comm_bytes(m, dt_node_get(m, id));
			}
			continue;
		}
		if (!is_prep(m, id) || dt_uses_count(&s->uses, id) == 0)
			continue;
		bool all = true;
		for (uint32_t u = s->uses.first[id]; u < s->uses.first[id + 1]; u++)
			all &= s->hoist[s->uses.list[u]] != 0;
		if (all) {
			s->hoist[id] = 1;
			s->bytes[id] = dt_op_has((enum dt_op)dt_node_get(m, id)->op,
						 DT_OPF_VIEW) ? 0 : tensor_bytes(m, id);
		}
	}
	for (uint32_t p = 0; p < s->n; p++) {
		uint32_t id = s->order[p];
		const struct dt_node *n = dt_node_get(m, id);
		if (s->hoist[id] || n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN ||
		    !(dt_op_has((enum dt_op)n->op, DT_OPF_VIEW) ||
		      n->op == DT_OP_GETITEM))
			continue;
		s->sink_all = true;
		dt_node_for_each_input(m, n, all_sinkable, s);
		s->sinkable[id] = s->sink_all; /* bytes 0: the wait's buffer */
	}
}

static void count_input(void *ud, uint32_t input)
{
	struct sched *s = ud;
	(void)input;
	s->missing[s->walk]++;
}

/* Append `id` to the new order; hoistable users that became ready go on
 * the work stack. */
static void emit(struct sched *s, uint32_t id)
{
	s->emitted[id] = 1;
	s->out[s->nout++] = id;
	if (is_collective(s->m, id))
		while (s->next_coll < s->ncolls &&
		       s->emitted[s->colls[s->next_coll]]) {
			s->next_coll++;
			s->dirty = true;
		}
	for (uint32_t u = s->uses.first[id]; u < s->uses.first[id + 1]; u++) {
		uint32_t user = s->uses.list[u];
		if (s->hoist[user] && --s->missing[user] == 0 &&
		    !s->emitted[user] && s->pos[user] > s->walk)
			s->work[s->nwork++] = user;
	}
}

/* Move ready node `id` up now if order and memory allow; else hold it. */
static bool try_early(struct sched *s, uint32_t id)
{
	if (s->emitted[id])
		return true;
	if (is_collective(s->m, id) && s->colls[s->next_coll] != id)
		return false;
	if (s->extra + s->bytes[id] > s->limit) {
		if (is_collective(s->m, id) && !s->reported[id]) {
			s->reported[id] = 1;
			s->held++;
		}
		return false;
	}
	s->extra += s->bytes[id];
	s->early[id] = 1;
	/* It moved past something when a node before it is still to come. */
	if (is_collective(s->m, id))
		for (uint32_t p = s->walk + 1; p < s->pos[id]; p++)
			if (!s->emitted[s->order[p]]) {
				s->moved_up++;
				break;
			}
	emit(s, id);
	return true;
}

/* The held-back nodes form a min-heap by written position: they move up
 * in their written order, the first one first, so a retry looks at the
 * head only. */
static void ready_push(struct sched *s, uint32_t id)
{
	uint32_t i = dt_vec_push(&s->ready, id);
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (s->pos[s->ready.data[parent]] <= s->pos[id])
			break;
		s->ready.data[i] = s->ready.data[parent];
		i = parent;
	}
	s->ready.data[i] = id;
}

static void ready_pop(struct sched *s)
{
	uint32_t last = s->ready.data[--s->ready.len], i = 0, n = s->ready.len;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && s->pos[s->ready.data[c + 1]] < s->pos[s->ready.data[c]])
			c++;
		if (s->pos[s->ready.data[c]] >= s->pos[last])
			break;
		s->ready.data[i] = s->ready.data[c];
		i = c;
	}
	if (n)
		s->ready.data[i] = last;
}

/* Emit what became ready, and retry what was held back. */
static void drain(struct sched *s)
{
	for (;;) {
		while (s->nwork) {
			uint32_t id = s->work[--s->nwork];
			if (!try_early(s, id))
				ready_push(s, id);
		}
		if (!s->dirty)
			return;
		s->dirty = false;
		while (s->ready.len && try_early(s, s->ready.data[0]))
			ready_pop(s);
	}
}

/* Emit held node `input` (a wait or a view of one) after the held nodes
 * it reads. */
static void emit_pending_input(void *ud, uint32_t input)
{
	struct sched *s = ud;
	if (s->pending[input]) {
		s->pending[input] = 0;
		dt_node_for_each_input(s->m, dt_node_get(s->m, input),
				       emit_pending_input, s);
		s->extra -= s->bytes[input];
		s->dirty = true;
		if (dt_node_get(s->m, input)->op == DT_OP_WAIT)
			s->moved_down += s->missing[input] != s->nout;
		emit(s, input);
	}
}

/* The written order, walked: each node is emitted at its place at the
 * latest, a sinkable wait at the first node that reads it. */
static void walk(struct sched *s)
{
	struct dt_module *m = s->m;
	for (s->walk = 0; s->walk < s->n; s->walk++) {
		uint32_t id = s->order[s->walk];
		if (s->emitted[id]) {
			if (s->early[id]) {
				s->extra -= s->bytes[id];
				s->dirty = true;
			}
		} else if (s->sinkable[id] &&
			   s->extra + s->bytes[id] <= s->limit) {
			s->pending[id] = 1;
			s->missing[id] = s->nout;
			s->extra += s->bytes[id];
		} else {
			dt_node_for_each_input(m, dt_node_get(m, id),
					       emit_pending_input, s);
			emit(s, id);
		}
		drain(s);
	}
	/* Waits nobody reads close the graph. */
	for (uint32_t p = 0; p < s->n; p++)
		emit_pending_input(s, s->order[p]);
}

/* Reorder ctx->m keeping at most `limit` bytes alive beyond the written
 * order. */
static void schedule(struct dt_pass_ctx *ctx, double limit)
{
	struct dt_module *m = ctx->m;
	struct dt_arena *a = ctx->scratch;
	struct sched s = {.ctx = ctx, .m = m, .limit = limit};
	uint32_t count = m->nodes.len, output = 0;
	s.order = dt_arena_alloc(a, count * sizeof(uint32_t));
	s.out = dt_arena_alloc(a, count * sizeof(uint32_t));
	s.pos = dt_arena_alloc(a, count * sizeof(uint32_t));
	s.colls = dt_arena_alloc(a, count * sizeof(uint32_t));
	s.work = dt_arena_alloc(a, count * sizeof(uint32_t));
	s.missing = dt_arena_alloc(a, count * sizeof(uint32_t));
	s.bytes = dt_arena_alloc(a, count * sizeof(double));
	s.emitted = dt_arena_alloc(a, count);
	s.early = dt_arena_alloc(a, count);
	s.hoist = dt_arena_alloc(a, count);
	s.sinkable = dt_arena_alloc(a, count);
	s.pending = dt_arena_alloc(a, count);
	s.reported = dt_arena_alloc(a, count);
	dt_foreach_node(m, id) {
		if (dt_node_get(m, id)->kind == DT_NODE_OUTPUT) {
			output = id;
			continue;
		}
		s.pos[id] = s.n;
		s.order[s.n++] = id;
		if (is_collective(m, id))
			s.colls[s.ncolls++] = id;
	}
	dt_uses_fill(&s.uses, m);
	classify(&s);
	/* Input counts of hoistable nodes (s.walk doubles as the index). */
	dt_foreach_node(m, id) if (s.hoist[id]) {
		s.walk = id;
		dt_node_for_each_input(m, dt_node_get(m, id), count_input, &s);
		if (s.missing[id] == 0)
			s.work[s.nwork++] = id;
	}
	s.walk = 0;
	drain(&s);
	walk(&s);
	DT_REQUIRE(s.nout == s.n);
	for (uint32_t i = 0; i < s.n; i++)
		dt_graph_remove(m, s.order[i]);
	if (output)
		dt_graph_remove(m, output);
	for (uint32_t i = 0; i < s.n; i++)
		dt_graph_append(m, s.out[i]);
	if (output)
		dt_graph_append(m, output);
	if (s.ncolls)
		dt_diag_report(ctx->diag, DT_REMARK, m->file, 0,
			       "schedule-collectives",
			       "%u of %u collectives start earlier, %u waits move later; %u held back by --overlap-bytes %.0f",
			       s.moved_up, s.ncolls, s.moved_down, s.held, s.limit);
	dt_uses_fini(&s.uses);
	dt_vec_free(&s.ready);
}

/* The peak of ctx's module scheduled within `limit` (a trial). */
static double scheduled_peak(const struct dt_pass_ctx *ctx, double limit)
{
	struct dt_pass_ctx trial;
	struct dt_diag quiet;
	dt_memory_trial_begin(&trial, &quiet, ctx);
	schedule(&trial, limit);
	return dt_memory_trial_end(&trial);
}

/* Under --memory-budget the overlap limit is bisected down to the most
 * whose schedule keeps the memory plan within the guard's bound (more
 * overlap holds more, so the peak grows with the limit; the written order
 * is the limit 0); the pass does nothing where even that exceeds it. */
static int run_schedule_collectives(struct dt_pass_ctx *ctx)
{
	double limit = ctx->options->overlap_bytes > 0
			       ? (double)ctx->options->overlap_bytes
			       : DEFAULT_OVERLAP_BYTES;
	struct dt_memory_guard g;
	double full;
	if (!dt_memory_guard_init(&g, ctx) ||
	    (full = scheduled_peak(ctx, limit)) <= g.bound) {
		schedule(ctx, limit);
		return DT_OK;
	}
	double lo = 0, hi = limit;
	while (hi - lo > 64) {
		double mid = floor((lo + hi) / 2);
		if (scheduled_peak(ctx, mid) <= g.bound)
			lo = mid;
		else
			hi = mid;
	}
	bool fits = lo > 0 || scheduled_peak(ctx, 0) <= g.bound;
	char kept[64] = "off";
	if (fits)
		snprintf(kept, sizeof kept, "limited to %.0f bytes", lo);
	dt_diag_report(ctx->diag, DT_REMARK, ctx->m->file, 0,
		       "schedule-collectives:memory",
		       "--memory-budget %lld: overlap %s (within %.0f bytes the program would hold %.0f bytes at its peak, over %.0f)",
		       (long long)ctx->options->memory_budget, kept, limit,
		       full, g.bound);
	if (fits)
		schedule(ctx, lo);
	return DT_OK;
}

const struct dt_pass dt_pass_schedule_collectives = {
	.name = "schedule-collectives",
	.help = "start collectives as early as their inputs allow and wait as late as their first use, within --overlap-bytes of extra live memory",
	.requires = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.preserves = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.run = run_schedule_collectives,
};
