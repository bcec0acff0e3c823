// SPDX-License-Identifier: MIT
/* dce.c: the `dce` pass removes nodes whose results are unused and that
 * have no effects (unused constants too). An unused wait goes: alone when
 * its collective has other waits (they complete it; the verifier lets a
 * collective be read only by waits), with its collective when it is the
 * collective's only user. Collectives nobody waits for and nodes of
 * unknown targets are kept.
 *
 * Requires: VERIFIED. Preserves: everything. O(nodes + uses).
 *
 *   x = placeholder           x = placeholder
 *   t = aten.t(x)        →    (t, ag, w removed)
 *   ag = all_gather(x); w = wait(ag)
 *   return (x,)               return (x,)
 */
#include "passes.h"

struct dce {
	struct dt_module *m;
	uint32_t *users; /* live use count per node */
	uint8_t *dead;
};

static void drop_use(void *ud, uint32_t input)
{
	struct dce *c = ud;
	c->users[input]--;
}

static void count_use(void *ud, uint32_t input)
{
	struct dce *c = ud;
	c->users[input]++;
}

static void kill(struct dce *c, uint32_t id)
{
	c->dead[id] = 1;
	dt_node_for_each_input(c->m, dt_node_get(c->m, id), drop_use, c);
}

/* Pure calls and constants (an unused constant is dead data). */
static bool is_removable(const struct dt_node *n)
{
	return n->kind == DT_NODE_CONSTANT ||
	       (n->kind == DT_NODE_CALL && n->op != DT_OP_UNKNOWN &&
		dt_op_has((enum dt_op)n->op, DT_OPF_PURE));
}

/* The collective wait `n` completes, or 0. */
static uint32_t waited_collective(const struct dce *c, const struct dt_node *n)
{
	if (n->op != DT_OP_WAIT || n->nargs < 1)
		return 0;
	const struct dt_arg *a = dt_node_arg(c->m, n, 0);
	if (a->kind != DT_ARG_NODE)
		return 0;
	const struct dt_node *in = dt_node_get(c->m, a->v.node);
	return in->op != DT_OP_UNKNOWN &&
			       dt_op_has((enum dt_op)in->op, DT_OPF_COLLECTIVE)
		       ? a->v.node
		       : 0;
}

static int run_dce(struct dt_pass_ctx *ctx)
{
	struct dce c = {ctx->m, NULL, NULL};
	uint32_t n = ctx->m->nodes.len;
	c.users = dt_arena_alloc(ctx->scratch, n * sizeof(uint32_t));
	c.dead = dt_arena_alloc(ctx->scratch, n);
	dt_foreach_node(c.m, id)
		dt_node_for_each_input(c.m, dt_node_get(c.m, id), count_use, &c);
	/* Users come after their inputs, so one backward sweep suffices. */
	for (uint32_t id = c.m->last; id; id = dt_node_get(c.m, id)->prev) {
		const struct dt_node *node = dt_node_get(c.m, id);
		if (c.dead[id] || c.users[id])
			continue;
		uint32_t collective = waited_collective(&c, node);
		if (collective) {
			bool last = c.users[collective] == 1;
			if (!dt_pass_rewrite_ok(ctx, "dce", "remove %s%s%s",
						dt_node_name(c.m, id),
						last ? " with its collective " : "",
						last ? dt_node_name(c.m, collective) : ""))
				continue;
			kill(&c, id);
			if (last)
				kill(&c, collective);
		} else if (is_removable(node) &&
			   dt_pass_rewrite_ok(ctx, "dce", "remove %s",
					      dt_node_name(c.m, id))) {
			kill(&c, id);
		}
	}
	for (uint32_t id = c.m->first; id;) {
		uint32_t next = dt_node_get(c.m, id)->next;
		if (c.dead[id])
			dt_graph_remove(c.m, id);
		id = next;
	}
	return DT_OK;
}

const struct dt_pass dt_pass_dce = {
	.name = "dce",
	.help = "remove unused effect-free nodes (a wait with its collective)",
	.requires = DT_PROP_VERIFIED,
	.preserves = ~0u,
	.run = run_dce,
};
