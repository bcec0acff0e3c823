// SPDX-License-Identifier: MIT
/* cancel_views.c: the `cancel-views` pass removes chains of view steps
 * whose end has exactly its start's metadata (semantics §4.5): uses of the
 * end read the start instead and the chain's nodes leave the graph. Every
 * node of a chain but its end must have no user besides the next step, and
 * an end that carries a <sharding> keeps its chain unless the start carries
 * an equal one. An unused end is left to dce. Each removal is a remark.
 *
 * Requires: SHAPES. Preserves: VERIFIED, SHAPES.
 * O(nodes + args): one forward sweep finds, for every step, the farthest
 * start of an identity chain ending there (a hash of metadata per run of
 * single-user steps); one backward sweep removes the longest chains, which
 * leaves no chain to remove (removing one never shortens a walk back from
 * a later node, and only makes its start's users more).
 *
 *   w = wait_tensor(ag)                  w = wait_tensor(ag)
 *   p1 = aten.permute(w, [1, 0, 2])  →   ag2 = all_gather(w, 2, "tp")
 *   p2 = aten.permute(p1, [1, 0, 2])
 *   ag2 = all_gather(p2, 2, "tp")
 */
#include "passes.h"
#include "views.h"

#include <stdio.h>

/* One candidate start in the hash: the node, the run of single-user steps
 * it starts or belongs to, and its distance from the run's root. */
struct slot {
	uint32_t node; /* 0 = empty */
	uint32_t run;
	uint32_t depth;
};

struct cancel {
	struct dt_module *m;
	uint32_t *users; /* live use count per node */
	uint8_t *step;	 /* dt_is_view_step, decided before any removal */
	uint32_t *run;	 /* per step: its run */
	uint32_t *depth; /* per step: distance from its run's root */
	uint32_t *best;	 /* per step: farthest identity start, or 0 */
	uint32_t *repl;	 /* removed end -> its start */
	uint8_t *removed;
	struct slot *slots;
	uint32_t mask;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint32_t slot_hash(uint32_t run, const struct dt_tensor *t)
{
	uint64_t h = mix(run, t->dtype);
	h = mix(h, t->shape.id);
	h = mix(h, t->stride.id);
	h = mix(h, (uint64_t)t->offset);
	return (uint32_t)(h ^ (h >> 32));
}

/* The slot of (run, metadata of `like`): the one holding the first node
 * inserted with that key, or the empty slot where it would go. */
static struct slot *slot_find(struct cancel *c, uint32_t run, uint32_t like)
{
	const struct dt_tensor *t = dt_node_tensor0(c->m, like);
	for (uint32_t i = slot_hash(run, t) & c->mask;; i = (i + 1) & c->mask) {
		struct slot *s = &c->slots[i];
		if (!s->node ||
		    (s->run == run && dt_tensor_same(dt_node_tensor0(c->m, s->node), t)))
			return s;
	}
}

static void slot_add(struct cancel *c, uint32_t run, uint32_t node,
		     uint32_t depth)
{
	struct slot *s = slot_find(c, run, node);
	if (!s->node)
		*s = (struct slot){node, run, depth};
}

/* Forward sweep: place each step in a run and remember the farthest
 * earlier node of its run with its metadata. A run is a path root → s1 →
 * s2 …, where s1… are steps and all but the last have one user; the
 * candidate starts of s_i are root … s_(i-1). */
static void find_starts(struct cancel *c)
{
	uint32_t runs = 0;
	dt_foreach_node(c->m, id)
	{
		const struct dt_node *n = dt_node_get(c->m, id);
		if (!dt_is_view_step(c->m, n))
			continue;
		c->step[id] = 1;
		uint32_t in = dt_view_step_input(c->m, n);
		if (c->step[in] && c->users[in] == 1) {
			c->run[id] = c->run[in];
			c->depth[id] = c->depth[in] + 1;
		} else {
			c->run[id] = ++runs;
			c->depth[id] = 1;
			slot_add(c, c->run[id], in, 0);
		}
		const struct slot *s = slot_find(c, c->run[id], id);
		if (s->node && s->depth < c->depth[id])
			c->best[id] = s->node;
		slot_add(c, c->run[id], id, c->depth[id]);
	}
}

static bool sharding_same(const struct dt_sharding *a,
			  const struct dt_sharding *b)
{
	return a->mesh == b->mesh &&
	       dt_placements_equal(&a->placements, &b->placements) &&
	       a->has_global_shape == b->has_global_shape &&
	       (!a->has_global_shape ||
		a->global_shape.id == b->global_shape.id);
}

/* The steps from `start` (exclusive) to `end` (inclusive), end first, into
 * out; their count, or 0 when the chain no longer qualifies. */
static uint32_t collect_chain(const struct cancel *c, uint32_t start,
			      uint32_t end, uint32_t *out)
{
	uint32_t k = 0;
	for (uint32_t v = end; v != start;) {
		if (c->removed[v] || !c->step[v] ||
		    (v != end && c->users[v] != 1))
			return 0;
		out[k++] = v;
		v = dt_view_step_input(c->m, dt_node_get(c->m, v));
	}
	return c->removed[start] ? 0 : k;
}

static uint32_t resolve(const struct cancel *c, uint32_t v)
{
	while (c->repl[v])
		v = c->repl[v];
	return v;
}

static void remap(const struct cancel *c, uint32_t *ref)
{
	if (c->repl[*ref])
		*ref = resolve(c, *ref);
}

/* Make every reference to a removed end read its (final) start. */
static void rewrite_args(const struct cancel *c)
{
	struct dt_module *m = c->m;
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		for (uint32_t i = 0; i < n->nargs; i++) {
			struct dt_arg *a = &m->args.data[n->args + i];
			if (a->kind == DT_ARG_NODE) {
				remap(c, &a->v.node);
			} else if (a->kind == DT_ARG_NODES) {
				for (uint32_t k = 0; k < a->len; k++)
					remap(c, &m->refs.data[a->v.first + k]);
			} else if (a->kind == DT_ARG_ITEMS) {
				for (uint32_t k = 0; k < a->len; k++) {
					struct dt_arg *it =
					    &m->args.data[a->v.first + k];
					if (it->kind == DT_ARG_NODE)
						remap(c, &it->v.node);
				}
			}
		}
	}
}

/* A removed chain, for its remark: chain_nodes[first .. +len], end first. */
struct chain {
	uint32_t first, len;
};

static void emit_remark(struct dt_pass_ctx *ctx, const struct cancel *c,
			const uint32_t *nodes, uint32_t len)
{
	const struct dt_module *m = c->m;
	const struct dt_node *end = dt_node_get(m, nodes[0]);
	if (!ctx->diag->remarks) {
		/* Counted, not shown: skip naming every node. */
		dt_diag_report(ctx->diag, DT_REMARK, m->file, end->line,
			       "cancel-views", "removed identity view chain");
		return;
	}
	char list[1024];
	size_t used = 0;
	list[0] = 0;
	for (uint32_t k = len; k-- > 0;) {
		const char *name =
		    dt_str_get(m, dt_node_get(m, nodes[k])->name);
		int w = snprintf(list + used, sizeof(list) - used, "%s%s",
				 k + 1 == len ? "" : " -> ", name);
		if (w < 0 || (size_t)w >= sizeof(list) - used) {
			/* Too long to list: name the ends only. */
			snprintf(
			    list, sizeof(list), "%s -> ... -> %s (%u views)",
			    dt_str_get(m, dt_node_get(m, nodes[len - 1])->name),
			    dt_str_get(m, dt_node_get(m, nodes[0])->name), len);
			break;
		}
		used += (size_t)w;
	}
	const char *end_name = dt_str_get(m, end->name);
	dt_diag_report(
	    ctx->diag, DT_REMARK, m->file, end->line, "cancel-views",
	    "removed identity view chain %s (uses of %s now read %s)", list,
	    end_name,
	    dt_str_get(m, dt_node_get(m, resolve(c, nodes[0]))->name));
}

static int run_cancel_views(struct dt_pass_ctx *ctx)
{
	struct dt_module *m = ctx->m;
	struct dt_arena *a = ctx->scratch;
	uint32_t n = m->nodes.len;
	struct cancel c = {.m = m};
	c.users = dt_arena_alloc(a, n * sizeof(uint32_t));
	c.step = dt_arena_alloc(a, n);
	c.run = dt_arena_alloc(a, n * sizeof(uint32_t));
	c.depth = dt_arena_alloc(a, n * sizeof(uint32_t));
	c.best = dt_arena_alloc(a, n * sizeof(uint32_t));
	c.repl = dt_arena_alloc(a, n * sizeof(uint32_t));
	c.removed = dt_arena_alloc(a, n);
	/* At most two keys per node (itself, and once as a run's root). */
	size_t cap = 16;
	while (cap < 4 * (size_t)n)
		cap *= 2;
	c.slots = dt_arena_alloc(a, cap * sizeof(struct slot));
	c.mask = (uint32_t)(cap - 1);

	struct dt_uses uses;
	dt_uses_fill(&uses, m);
	for (uint32_t id = 0; id < n; id++)
		c.users[id] = dt_uses_count(&uses, id);
	dt_uses_fini(&uses);

	uint32_t count = dt_graph_count(m), k = 0;
	uint32_t *order = dt_arena_alloc(a, (count + 1) * sizeof(uint32_t));
	dt_foreach_node(m, id) order[k++] = id;

	find_starts(&c);

	/* Backward: the longest chain ending at each surviving node. */
	uint32_t *chain_nodes =
	    dt_arena_alloc(a, (count + 1) * sizeof(uint32_t));
	struct chain *chains =
	    dt_arena_alloc(a, (count + 1) * sizeof(struct chain));
	uint32_t nchain_nodes = 0, nchains = 0;
	for (uint32_t i = count; i-- > 0;) {
		uint32_t end = order[i], start = c.best[end];
		if (!start || c.removed[end] || c.users[end] == 0)
			continue;
		const struct dt_sharding *es =
		    dt_node_sharding(m, dt_node_get(m, end));
		const struct dt_sharding *ss =
		    dt_node_sharding(m, dt_node_get(m, start));
		if (es && (!ss || !sharding_same(es, ss)))
			continue;
		uint32_t *out = chain_nodes + nchain_nodes;
		uint32_t len = collect_chain(&c, start, end, out);
		if (!len ||
		    !dt_pass_rewrite_ok(ctx, "cancel-views",
					"remove the view chain %s .. %s",
					dt_node_name(m, out[len - 1]),
					dt_node_name(m, end)))
			continue;
		for (uint32_t j = 0; j < len; j++)
			c.removed[out[j]] = 1;
		c.repl[end] = start;
		c.users[start] += c.users[end] - 1;
		chains[nchains++] = (struct chain){nchain_nodes, len};
		nchain_nodes += len;
	}
	if (!nchains)
		return DT_OK;

	rewrite_args(&c);
	/* Remarks in graph order (chains were found last to first). */
	for (uint32_t i = nchains; i-- > 0;)
		emit_remark(ctx, &c, chain_nodes + chains[i].first,
			    chains[i].len);
	for (uint32_t i = 0; i < count; i++)
		if (c.removed[order[i]])
			dt_graph_remove(m, order[i]);
	return DT_OK;
}

const struct dt_pass dt_pass_cancel_views = {
    .name = "cancel-views",
    .help = "remove chains of views whose end equals their start (§4.5)",
    .requires = DT_PROP_SHAPES,
    .preserves = DT_PROP_VERIFIED | DT_PROP_SHAPES,
    .run = run_cancel_views,
};
