// SPDX-License-Identifier: MIT
/* lower_redistribute_rules.c: `lower-redistribute` keeps each compute
 * node's op and runs it on the local shards, which gives the pinned result
 * only where the op's sharding rules (sharding/rules.def, semantics §6)
 * allow the node's placements: softmax over a sharded dim, or a mean over
 * an uneven shard pinned P(avg), computes something else. Before anything
 * is lowered, each call node's (pinned results, inputs' placements) must
 * be a strategy of its rules (an op without rules: all replicated), found
 * by the per-node search from the inputs' placements with the pin fixed;
 * else the node is refused with the placements its rules would need.
 * Mesh dims of one rank hold whole tensors whatever their placement, so
 * they count as R. Placements lowering itself refuses (no pin and a
 * sharded input, several meshes) are left to it.
 *
 * O(call nodes × the per-node search), which from placements a strategy
 * consumes stops at its first state. */
#include "lower_redistribute_internal.h"
#include "sharding.h"

#include <string.h>

/* One value's placements, as lowering will give them. */
struct known {
	bool ok;
	uint16_t mesh;
	struct dt_placements pl;
};

struct check {
	struct dt_lower *l;
	struct known *of;  /* per old node: result 0's (a getitem: its own) */
	struct dt_rules rules;
	struct dt_shard_space space;
	struct dt_shard_choice choice;
	DT_VEC(struct dt_placements) current;
};

static void replicate(struct dt_placements *pl, int ndim)
{
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	dt_placements_default_order(pl);
}

/* R on the mesh dims of one rank. */
static struct dt_placements squash(const struct dt_mesh *me,
				   const struct dt_placements *pl)
{
	struct dt_placements out = *pl;
	bool changed = false;
	for (int k = 0; k < out.ndim; k++)
		if (me->shape[k] == 1 && out.p[k].kind != DT_PL_REPLICATE) {
			memset(&out.p[k], 0, sizeof out.p[k]);
			changed = true;
		}
	if (changed)
		dt_placements_default_order(&out);
	return out;
}

/* Node `id`'s placements from its pin, its inputs' or its source's. */
static void settle(struct check *c, uint32_t id)
{
	const struct dt_module *m = c->l->m;
	const struct dt_node *n = dt_node_get(m, id);
	const struct dt_sharding *pin = dt_node_sharding(m, n);
	struct known *k = &c->of[id];
	if (pin) {
		*k = (struct known){true, pin->mesh, pin->placements};
		return;
	}
	if (n->kind == DT_NODE_CONSTANT) {
		*k = (struct known){.ok = m->meshes.len > 0};
		replicate(&k->pl, k->ok ? m->meshes.data[0].ndim : 0);
		return;
	}
	if (n->kind != DT_NODE_CALL)
		return;
	if (n->op == DT_OP_GETITEM) {
		if (n->nargs > 0 && dt_node_arg(m, n, 0)->kind == DT_ARG_NODE)
			*k = c->of[dt_node_arg(m, n, 0)->v.node];
		return;
	}
	/* Unpinned: replicated when every input is (lowering's rule). */
	int mesh = m->meshes.len == 1 ? 0 : -1;
	for (uint32_t a = 0; a < n->nargs; a++) {
		const struct dt_arg *arg = dt_node_arg(m, n, a);
		if (arg->kind != DT_ARG_NODE)
			continue;
		const struct known *in = &c->of[arg->v.node];
		if (!in->ok)
			return;
		const struct dt_mesh *me = &m->meshes.data[in->mesh];
		struct dt_placements r, s = squash(me, &in->pl);
		replicate(&r, me->ndim);
		if (!dt_placements_equal(&s, &r))
			return;
		mesh = in->mesh;
	}
	if (mesh < 0)
		return;
	*k = (struct known){.ok = true, .mesh = (uint16_t)mesh};
	replicate(&k->pl, m->meshes.data[mesh].ndim);
}

static const char *op_name(const struct dt_module *m, const struct dt_node *n)
{
	return dt_str_get(m, n->target);
}

/* The report for a pin no strategy gives: the first mesh dim whose pinned
 * placement no expanded row makes, else the filters (evenness, lengths). */
static void report_pin(struct check *c, uint32_t id,
		       const struct dt_placements *pin)
{
	const struct dt_module *m = c->l->m;
	const struct dt_node *n = dt_node_get(m, id);
	const struct dt_mesh *me = &m->meshes.data[c->of[id].mesh];
	char p[160], ins[600] = "";
	dt_placements_print(pin, p, sizeof p);
	size_t used = 0;
	for (uint32_t i = 0; i < c->rules.nin && used < sizeof ins; i++) {
		if (dt_rules_input(&c->rules, i)->ignored)
			continue;
		char q[160];
		dt_placements_print(&c->current.data[i], q, sizeof q);
		used += (size_t)snprintf(ins + used, sizeof ins - used,
					 "%s'%.60s' %s", used ? ", " : "",
					 dt_node_name(m, dt_rules_input(&c->rules, i)->node),
					 q);
	}
	for (int k = 0; k < pin->ndim; k++) {
		bool made = false;
		for (uint32_t r = 0; r < c->space.nrows && !made; r++) {
			const struct dt_placement *e =
			    &dt_shard_space_row(&c->space, r)[0];
			made = e->kind == pin->p[k].kind &&
			       (e->kind == DT_PL_REPLICATE ||
				(e->kind == DT_PL_PARTIAL
				     ? e->reduce == pin->p[k].reduce
				     : e->dim == pin->p[k].dim &&
					   (e->kind == DT_PL_SHARD ||
					    e->split_factor ==
						pin->p[k].split_factor)));
		}
		if (made)
			continue;
		char one[64];
		struct dt_placements single = {.ndim = 1, .p = {pin->p[k]}};
		dt_placements_print(&single, one, sizeof one);
		dt_node_error(c->l->ctx->diag, m, n,
			      "node '%s' (%s): its sharding %s is not one %s can "
			      "produce on mesh dim %d ('%s'): no row of its "
			      "'%s' rules gives %s (inputs: %s); run "
			      "shard-prop or pin another placement",
			      dt_node_name(m, id), op_name(m, n), p,
			      op_name(m, n), k, dt_str_get(m, me->dims[k]),
			      c->rules.family, one, ins[0] ? ins : "none");
		return;
	}
	dt_node_error(c->l->ctx->diag, m, n,
		      "node '%s' (%s): its sharding %s is not one %s can "
		      "produce here: its rule rows giving it need even, "
		      "non-empty or longer shards than these shapes have on "
		      "mesh '%s' (inputs: %s); run shard-prop or pin another "
		      "placement",
		      dt_node_name(m, id), op_name(m, n), p, op_name(m, n),
		      dt_str_get(m, me->name), ins[0] ? ins : "none");
}

/* The report for inputs the rules need elsewhere: the first that moves. */
static void report_inputs(struct check *c, uint32_t id,
			  const struct dt_placements *pin)
{
	const struct dt_module *m = c->l->m;
	const struct dt_node *n = dt_node_get(m, id);
	uint32_t nout = c->rules.nout;
	for (uint32_t i = 0; i < c->rules.nin; i++) {
		const struct dt_placements *want =
		    &c->choice.placements.data[nout + i];
		if (dt_rules_input(&c->rules, i)->ignored ||
		    dt_placements_equal(want, &c->current.data[i]))
			continue;
		char p[160], have[160], need[160];
		dt_placements_print(pin, p, sizeof p);
		dt_placements_print(&c->current.data[i], have, sizeof have);
		dt_placements_print(want, need, sizeof need);
		dt_node_error(c->l->ctx->diag, m, n,
			      "node '%s' (%s): its sharding %s is not what it "
			      "computes from input '%s' at %s: its rules need "
			      "'%s' at %s; redistribute it there, run "
			      "shard-prop or pin another placement",
			      dt_node_name(m, id), op_name(m, n), p,
			      dt_node_name(m, dt_rules_input(&c->rules, i)->node),
			      have, dt_node_name(m, dt_rules_input(&c->rules, i)->node),
			      need);
		return;
	}
	char p[160];
	dt_placements_print(pin, p, sizeof p);
	dt_node_error(c->l->ctx->diag, m, n,
		      "node '%s' (%s): its results' shardings (%s, then its "
		      "getitems' pins) are not a strategy of its rules; run "
		      "shard-prop or pin other placements",
		      dt_node_name(m, id), op_name(m, n), p);
}

/* Check call node `id` (its placements settled). */
static int check_node(struct check *c, uint32_t id)
{
	struct dt_module *m = c->l->m;
	const struct dt_node *n = dt_node_get(m, id);
	const struct known *self = &c->of[id];
	if (!self->ok || n->op == DT_OP_GETITEM ||
	    n->op == DT_OP_REDISTRIBUTE || !dt_rules_family((enum dt_op)n->op))
		return DT_OK;
	char why[256];
	if (dt_rules_fill(&c->rules, m, id, why, sizeof why) != DT_OK)
		c->rules.nrows = 0; /* runs replicated only */
	const struct dt_mesh *me = &m->meshes.data[self->mesh];
	c->current.len = 0;
	for (uint32_t i = 0; i < c->rules.nin; i++) {
		const struct known *in = &c->of[dt_rules_input(&c->rules, i)->node];
		if (!in->ok || in->mesh != self->mesh)
			return DT_OK; /* lowering refuses it */
		dt_vec_push(&c->current, squash(me, &in->pl));
	}
	uint32_t nres = n->ntensors;
	if (nres == 0 || nres > DT_MAX_RESULTS || nres != c->rules.nout)
		return DT_OK;
	struct dt_placements res[DT_MAX_RESULTS];
	bool selected[DT_MAX_RESULTS];
	dt_lower_result_placements(c->l, id, &self->pl, nres, res, selected);
	for (uint32_t k = 0; k < nres; k++)
		res[k] = squash(me, &res[k]);
	struct dt_shard_request req = {
	    .mesh = me,
	    .topology = c->l->topo,
	    .current = c->current.data,
	    .pin = &res[0],
	};
	dt_shard_space_init(&c->space, &c->rules, &req);
	if (dt_shard_search(&c->space, DT_SEARCH_PQ, &c->choice, NULL) !=
		DT_OK ||
	    !c->choice.found) {
		report_pin(c, id, &res[0]);
		return DT_EINPUT;
	}
	bool same = true;
	for (uint32_t k = 1; k < nres; k++)
		same &= !selected[k] ||
			dt_placements_equal(&c->choice.placements.data[k], &res[k]);
	for (uint32_t i = 0; i < c->rules.nin; i++)
		same &= dt_rules_input(&c->rules, i)->ignored ||
			dt_placements_equal(&c->choice.placements.data[nres + i],
					    &c->current.data[i]);
	if (same)
		return DT_OK;
	report_inputs(c, id, &res[0]);
	return DT_EINPUT;
}

int dt_lower_check_rules(struct dt_lower *l)
{
	struct dt_module *m = l->m;
	struct check c = {
	    .l = l,
	    .of = dt_arena_alloc(l->ctx->scratch, l->nold * sizeof *c.of),
	};
	memset(c.of, 0, l->nold * sizeof *c.of);
	int rc = DT_OK;
	for (uint32_t id = m->first; id && rc == DT_OK;
	     id = dt_node_get(m, id)->next) {
		settle(&c, id);
		if (dt_node_get(m, id)->kind == DT_NODE_CALL)
			rc = check_node(&c, id);
	}
	dt_shard_choice_fini(&c.choice);
	dt_shard_space_fini(&c.space);
	dt_rules_fini(&c.rules);
	dt_vec_free(&c.current);
	return rc;
}
