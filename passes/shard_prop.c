// SPDX-License-Identifier: MIT
/* shard_prop.c: the `shard-prop` pass (semantics §6) fixes the output
 * placements of every value of a global-view graph, in graph order. A
 * placeholder's are its <sharding>; a call node's come from the whole-graph
 * plan (--search=global, the default: shard_prop_global.c, semantics §6.6)
 * or, with --search=greedy (pq) or exhaustive and wherever the whole-graph
 * search falls back, from the strategy of least redistribution cost among
 * its op's expanded single-dim rules (sharding.h), weighed from the
 * placements its inputs already have. The chosen output placements become
 * the node's <sharding> (result 0; a getitem carries its result's), so
 * lower-redistribute reads them as pins. Where the strategy needs an input
 * elsewhere, a `dtensor.redistribute` node with the needed <sharding> is
 * inserted before the consumer (one per value and placements, shared by
 * later consumers).
 *
 * A constant (get_attr) is an input like a placeholder: its <sharding>
 * when it has one, else replicated on the first mesh.
 *
 * A node already carrying a <sharding> is pinned: its value ends up with
 * those placements. The node takes the strategy giving them whose input
 * moves cost least, unless another strategy plus moving its output to the
 * pin costs less (a gradient pinned R all-reduces its partial sum rather
 * than gathering its operands; a one-result node only), or no strategy
 * gives them: then that redistribution follows it (remark shard-prop:pin,
 * saying which). When
 * no strategy exists at all, or the op has no rows, the node runs
 * replicated (remark shard-prop:replicate when an input has to move).
 * Every inserted redistribution gives a remark shard-prop:redistribute
 * with its modelled cost (once: later consumers share it).
 *
 * Requires: VERIFIED, SHAPES; a global-view graph. Preserves: both.
 * Time: per node, the search's (sharding/search.c): for the pq a few
 * states on typical inputs, each costing one plan per moved input.
 *
 *   mm = aten.mm.default(x, w)     x_redist = dtensor.redistribute(x) @ [S(0)
 * R] x @ [S(1) R], w @ [R R]   →    mm = aten.mm.default(x_redist, w)  @ [S(0)
 * R]
 */
#include "passes.h"
#include "sharding.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NONE UINT32_MAX

/* The placements of one value. */
struct value {
	uint16_t mesh;
	struct dt_placements pl;
};

/* An inserted redistribution, found again by (value, placements). */
struct redist {
	uint32_t from, node, next; /* next: of the same value, NONE ends */
	uint16_t mesh;
	struct dt_placements pl;
};

struct prop {
	struct dt_pass_ctx *ctx;
	struct dt_module *m;
	enum dt_shard_search mode;
	const struct dt_topology *topology;
	DT_VEC(uint32_t) first;	      /* node -> its first value, NONE */
	DT_VEC(struct value) values;  /* results of each node, in order */
	DT_VEC(uint32_t) redist_head; /* node -> first redistribution */
	DT_VEC(struct redist) redists;
	struct dt_rules rules;
	struct dt_shard_space space;
	struct dt_shard_choice choice, alt;
	DT_VEC(struct dt_placements) current;
	dt_str redistribute_target;
	struct dt_shard_watch *watch; /* NULL = none */
	struct dt_shard_problem problem; /* --search=global, --dump-problem */
	/* The options->problem_cache entry whose arrays `problem` shares
	 * (and where its plans are kept), or NULL: problem is its own. */
	struct dt_shard_cached *cached;
	int32_t *plan; /* --search=global: a strategy per problem node */
};

static struct dt_node *node(struct prop *p, uint32_t id)
{
	return dt_node_get(p->m, id);
}

/* Make the per-node arrays cover every node id. */
static void cover_nodes(struct prop *p)
{
	while (p->first.len < p->m->nodes.len) {
		dt_vec_push(&p->first, NONE);
		dt_vec_push(&p->redist_head, NONE);
	}
}

/* Record the placements of every result of node `id` (n of them). */
static void record(struct prop *p, uint32_t id, const struct value *v,
		   uint32_t n)
{
	cover_nodes(p);
	p->first.data[id] = p->values.len;
	for (uint32_t k = 0; k < n; k++)
		dt_vec_push(&p->values, v[k]);
}

static const struct value *value_of(struct prop *p, uint32_t id,
				    uint32_t result)
{
	if (id >= p->first.len || p->first.data[id] == NONE)
		return NULL;
	return &p->values.data[p->first.data[id] + result];
}

static void print_pl(const struct dt_placements *pl, char *buf, size_t n)
{
	dt_placements_print(pl, buf, n);
}

/* Give node `id` the <sharding> (mesh, pl), unless it already has it. */
static void set_sharding(struct prop *p, uint32_t id, uint16_t mesh,
			 const struct dt_placements *pl)
{
	const struct dt_sharding *have = dt_node_sharding(p->m, node(p, id));
	if (have && have->mesh == mesh &&
	    dt_placements_equal(&have->placements, pl))
		return;
	struct dt_sharding s = {.mesh = mesh, .placements = *pl};
	uint32_t index = dt_vec_push(&p->m->shardings, s);
	node(p, id)->sharding = index;
}

/* A fresh node name from `base`: base, then base_1, base_2, … */
static dt_str fresh_name(struct prop *p, const char *base)
{
	char buf[280];
	snprintf(buf, sizeof buf, "%.256s", base);
	for (unsigned k = 1;; k++) {
		dt_str s = dt_str_intern(p->m, buf);
		if (!dt_module_find_node(p->m, s))
			return s;
		snprintf(buf, sizeof buf, "%.256s_%u", base, k);
	}
}

/* A node of `target` reading `from` (and `more`, when not NULL) with
 * result metadata `t` at (mesh, pl), named after `from` with `suffix`,
 * linked before node `before` (or after `from` when `before` is NONE). */
static uint32_t new_node(struct prop *p, uint32_t from, dt_str target,
			 const struct dt_arg *more, const struct dt_tensor *t,
			 uint16_t mesh, const struct dt_placements *pl,
			 uint32_t before, uint32_t line, const char *suffix)
{
	char base[256];
	snprintf(base, sizeof base, "%s_%s", dt_node_name(p->m, from), suffix);
	struct dt_arg args[2] = {{.kind = DT_ARG_NODE, .v.node = from}};
	if (more)
		args[1] = *more;
	struct dt_sharding s = {.mesh = mesh, .placements = *pl};
	struct dt_node_init init = {
	    .kind = DT_NODE_CALL,
	    .name = fresh_name(p, base),
	    .target = target,
	    .line = line,
	    .args = args,
	    .nargs = more ? 2 : 1,
	    .tensors = t,
	    .ntensors = 1,
	    .sharding = &s,
	};
	uint32_t id = dt_module_add_node(p->m, &init);
	if (before != NONE)
		dt_graph_insert_before(p->m, id, before);
	else if (node(p, from)->next)
		dt_graph_insert_before(p->m, id, node(p, from)->next);
	else
		dt_graph_append(p->m, id);
	struct value v = {mesh, *pl};
	record(p, id, &v, 1);
	return id;
}

/* aten.view(from, shape) at (mesh, pl): splitting or merging back the dim
 * of a value dt_shard_unflatten reads, which view() always serves. */
static uint32_t new_view(struct prop *p, uint32_t from, const int64_t *shape,
			 int rank, uint16_t mesh, const struct dt_placements *pl,
			 uint32_t before, uint32_t line, const char *suffix)
{
	struct dt_tensor t = *dt_node_tensor(p->m, node(p, from), 0);
	int in_rank;
	const int64_t *in_shape = dt_ints_get(p->m, t.shape, &in_rank);
	const int64_t *in_stride = dt_ints_get(p->m, t.stride, NULL);
	int64_t stride[DT_MAX_RANK];
	DT_REQUIRE(dt_view_strides(in_shape, in_stride, in_rank, shape, rank,
				   stride));
	t.shape = dt_ints_intern(p->m, shape, (size_t)rank);
	t.stride = dt_ints_intern(p->m, stride, (size_t)rank);
	struct dt_arg size = {.kind = DT_ARG_INTS, .len = (uint32_t)rank,
			      .v.ints = t.shape};
	dt_str target = dt_str_intern(p->m, dt_op_get(DT_OP_VIEW)->target);
	return new_node(p, from, target, &size, &t, mesh, pl, before, line,
			suffix);
}

/* Whether some mesh dim goes from P(a) in `from` to P(b), b != a, in
 * `to` (no redistribution: DTensor refuses it); then *mid is `from` with
 * those dims R, through which it goes (all_reduce a; a replicated value is
 * also P(b): every rank's copy is the value, for any reduce op). */
static bool changes_partial(const struct dt_placements *from,
			    const struct dt_placements *to,
			    struct dt_placements *mid)
{
	bool any = false;
	*mid = *from;
	for (int m = 0; m < from->ndim; m++)
		if (from->p[m].kind == DT_PL_PARTIAL &&
		    to->p[m].kind == DT_PL_PARTIAL &&
		    from->p[m].reduce != to->p[m].reduce) {
			mid->p[m] = (struct dt_placement){.kind = DT_PL_REPLICATE};
			mid->order_pos[m] = 0;
			any = true;
		}
	return any;
}

/* A dtensor.redistribute of value `from` to (mesh, pl), linked before
 * node `before` (or after `from` when `before` is NONE). A value that is
 * no shard order (dt_shard_unflatten: the pieces of a merged inner dim)
 * is first viewed with that dim split, gathered there and viewed back; a
 * partial whose reduce op changes (a pin P(sum) -> P(max)) goes through R
 * there first (changes_partial). Returns the last node; *first (unless
 * NULL) is the first one made. */
static uint32_t new_redistribute(struct prop *p, uint32_t from, uint16_t mesh,
				 const struct dt_placements *pl,
				 uint32_t before, uint32_t line, uint32_t *first)
{
	const struct value *v = value_of(p, from, 0);
	struct dt_tensor t = *dt_node_tensor(p->m, node(p, from), 0);
	int rank;
	int64_t shape[DT_MAX_RANK];
	const int64_t *g = dt_ints_get(p->m, t.shape, &rank);
	memcpy(shape, g, sizeof(int64_t) * (size_t)rank);
	struct dt_shard_unflat u, w;
	const int64_t *mesh_shape = p->m->meshes.data[mesh].shape;
	if (v && dt_shard_unflatten(&v->pl, mesh_shape, shape, rank, &u)) {
		uint32_t a = new_view(p, from, u.shape, u.rank, mesh,
				      &u.sharded, before, line, "unflat");
		if (first)
			*first = a;
		bool alike =
		    dt_shard_unflatten_alike(&u, pl, mesh_shape, shape, rank,
					     &w);
		uint32_t b =
		    new_redistribute(p, a, mesh, alike ? &w.sharded : &u.gathered,
				     before, line, NULL);
		from = new_view(p, b, shape, rank, mesh, alike ? pl : &u.flat,
				before, line, "flat");
		if (alike || dt_placements_equal(&u.flat, pl))
			return from;
		return new_redistribute(p, from, mesh, pl, before, line, NULL);
	}
	struct dt_placements mid;
	if (v && changes_partial(&v->pl, pl, &mid)) {
		uint32_t a = new_redistribute(p, from, mesh, &mid, before, line,
					      first);
		return new_redistribute(p, a, mesh, pl, before, line, NULL);
	}
	uint32_t id = new_node(p, from, p->redistribute_target, NULL, &t, mesh,
			       pl, before, line, "redistribute");
	if (first)
		*first = id;
	return id;
}

/* The redistribution of `from` to (mesh, pl) for consumer `user`: an
 * earlier one, or a new one before `user` (*made set). */
static uint32_t redistribution(struct prop *p, uint32_t from, uint16_t mesh,
			       const struct dt_placements *pl, uint32_t user,
			       bool *made)
{
	cover_nodes(p);
	*made = false;
	for (uint32_t r = p->redist_head.data[from]; r != NONE;
	     r = p->redists.data[r].next)
		if (p->redists.data[r].mesh == mesh &&
		    dt_placements_equal(&p->redists.data[r].pl, pl))
			return p->redists.data[r].node;
	*made = true;
	uint32_t id = new_redistribute(p, from, mesh, pl, user,
				       node(p, user)->line, NULL);
	struct redist r = {from, id, p->redist_head.data[from], mesh, *pl};
	p->redist_head.data[from] = dt_vec_push(&p->redists, r);
	return id;
}

/* Point input slot `t` of its consumer at node `to`. */
static void rewire(struct prop *p, const struct dt_rule_tensor *t, uint32_t to)
{
	if (t->arg != UINT32_MAX)
		p->m->args.data[t->arg].v.node = to;
	else
		p->m->refs.data[t->ref] = to;
}

static void remark(struct prop *p, uint32_t id, const char *tag,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void remark(struct prop *p, uint32_t id, const char *tag,
		   const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	dt_diag_vreport(p->ctx->diag, DT_REMARK, p->m->file, node(p, id)->line,
			tag, fmt, ap);
	va_end(ap);
}

/* Move the inputs of node `id` to the placements `want` (one per input),
 * through redistributions. */
static void move_inputs(struct prop *p, uint32_t id, uint16_t mesh,
			const struct dt_placements *want)
{
	for (uint32_t i = 0; i < p->rules.nin; i++) {
		const struct dt_rule_tensor *t = dt_rules_input(&p->rules, i);
		const struct dt_placements *cur = &p->current.data[i];
		if (t->ignored || dt_placements_equal(cur, &want[i]))
			continue;
		bool made;
		uint32_t r =
		    redistribution(p, t->node, mesh, &want[i], id, &made);
		rewire(p, t, r);
		if (!made || !p->ctx->diag->remarks)
			continue;
		char a[128], b[128];
		print_pl(cur, a, sizeof a);
		print_pl(&want[i], b, sizeof b);
		remark(
		    p, id, "shard-prop:redistribute",
		    "'%s' moves from %s to %s for '%s' (%s), modelled %.2f us",
		    dt_node_name(p->m, t->node), a, b, dt_node_name(p->m, id),
		    dt_op_get(p->rules.op)->target,
		    dt_shard_input_cost(&p->space, i, &want[i]));
	}
}

/* After node `id` (one result), a redistribution to its pin: later users
 * read that instead. */
static void redistribute_to_pin(struct prop *p, uint32_t id, uint16_t mesh,
				const struct dt_placements *pin)
{
	uint32_t first;
	uint32_t r = new_redistribute(p, id, mesh, pin, NONE, node(p, id)->line,
				      &first);
	dt_module_replace_uses(p->m, id, r);
	struct dt_node *rn = node(p, first);
	p->m->args.data[rn->args].v.node = id; /* its own input stays */
}

static void replicated(struct dt_placements *pl, int ndim)
{
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	dt_placements_default_order(pl);
}

/* A constant's placements: its pin, else replicated on the first mesh. */
static int constant_value(struct prop *p, uint32_t id)
{
	const struct dt_sharding *s = dt_node_sharding(p->m, node(p, id));
	struct value v = {0};
	if (s) {
		v = (struct value){s->mesh, s->placements};
	} else if (p->m->meshes.len == 0) {
		dt_node_error(p->ctx->diag, p->m, node(p, id),
			      "constant '%s' has no <sharding> and the graph "
			      "declares no mesh to replicate it on",
			      dt_node_name(p->m, id));
		return DT_EINPUT;
	} else {
		replicated(&v.pl, p->m->meshes.data[0].ndim);
		set_sharding(p, id, 0, &v.pl);
	}
	record(p, id, &v, 1);
	return DT_OK;
}

/* The mesh of node `id`'s inputs (or of its pin, or the first mesh);
 * -1 after reporting inputs on different meshes. */
static int node_mesh(struct prop *p, uint32_t id, const struct dt_sharding *pin)
{
	int mesh = -1;
	uint32_t first = NONE;
	for (uint32_t i = 0; i < p->rules.nin; i++) {
		const struct dt_rule_tensor *t = dt_rules_input(&p->rules, i);
		const struct value *v = value_of(p, t->node, 0);
		DT_REQUIRE(v != NULL);
		if (mesh < 0) {
			mesh = v->mesh;
			first = t->node;
		} else if (v->mesh != mesh) {
			dt_node_error(
			    p->ctx->diag, p->m, node(p, id),
			    "node '%s': its inputs '%s' and '%s' are on "
			    "different meshes ('%s' and '%s')",
			    dt_node_name(p->m, id), dt_node_name(p->m, first),
			    dt_node_name(p->m, t->node),
			    dt_str_get(p->m, p->m->meshes.data[mesh].name),
			    dt_str_get(p->m, p->m->meshes.data[v->mesh].name));
			return -1;
		}
	}
	if (mesh < 0)
		mesh = pin ? pin->mesh : 0;
	if (pin && pin->mesh != mesh) {
		dt_node_error(
		    p->ctx->diag, p->m, node(p, id),
		    "node '%s': its <sharding> names mesh '%s' but its inputs "
		    "are on '%s'",
		    dt_node_name(p->m, id),
		    dt_str_get(p->m, p->m->meshes.data[pin->mesh].name),
		    dt_str_get(p->m, p->m->meshes.data[mesh].name));
		return -1;
	}
	return mesh;
}

/* Record for p->watch what its node sees now. */
static void observe(struct prop *p, int mesh, const struct dt_placements *pin)
{
	struct dt_shard_watch *w = p->watch;
	w->seen = true;
	w->mesh = mesh;
	w->pinned = pin != NULL;
	if (pin)
		w->pin = *pin;
	w->values.len = w->current.len = 0;
	for (uint32_t i = 0; i < p->rules.nin; i++) {
		dt_vec_push(&w->values, dt_rules_input(&p->rules, i)->node);
		dt_vec_push(&w->current, p->current.data[i]);
	}
}

/* The whole-graph plan's strategy for call node `id` (outputs, then
 * inputs), or NULL without one. */
static const struct dt_placements *planned_strategy(struct prop *p,
						    uint32_t id)
{
	if (!p->plan || id >= p->problem.of_node.len)
		return NULL;
	uint32_t k = p->problem.of_node.data[id];
	if (k == NONE || p->problem.pnodes.data[k].node != id)
		return NULL;
	return dt_shard_problem_pl(&p->problem, k, p->plan[k]);
}

/* How the whole-graph problem saw call node `id` (it has a plan). */
static enum dt_shard_pnode_kind planned_kind(struct prop *p, uint32_t id)
{
	return (enum dt_shard_pnode_kind)p->problem.pnodes
	    .data[p->problem.of_node.data[id]]
	    .kind;
}

/* Fix the placements of call node `id` and move its inputs. */
static int propagate(struct prop *p, uint32_t id)
{
	struct dt_module *m = p->m;
	char why[256] = "";
	bool have_rules =
	    dt_rules_fill(&p->rules, m, id, why, sizeof why) == DT_OK;
	if (!have_rules) /* still know the tensors, for the replicated fallback
			  */
		p->rules.nrows = 0;
	const struct dt_sharding *pin_sharding =
	    dt_node_sharding(m, node(p, id));
	struct dt_sharding pin =
	    pin_sharding ? *pin_sharding : (struct dt_sharding){0};
	int mesh = node_mesh(p, id, pin_sharding ? &pin : NULL);
	if (mesh < 0)
		return DT_EINPUT;
	const struct dt_mesh *mp = &m->meshes.data[mesh];
	p->current.len = 0;
	for (uint32_t i = 0; i < p->rules.nin; i++)
		dt_vec_push(
		    &p->current,
		    value_of(p, dt_rules_input(&p->rules, i)->node, 0)->pl);
	if (p->watch && p->watch->node == id)
		observe(p, mesh, pin_sharding ? &pin.placements : NULL);
	struct dt_shard_request req = {
	    .mesh = mp,
	    .topology = p->topology,
	    .current = p->current.data,
	    .pin = pin_sharding ? &pin.placements : NULL,
	};
	dt_shard_space_init(&p->space, &p->rules, &req);
	bool pin_unmet = false, cheaper = false, chose = false;
	const struct dt_placements *planned = planned_strategy(p, id);
	if (planned) {
		pin_unmet = pin_sharding &&
			    !dt_placements_equal(&planned[0], &pin.placements);
		/* some strategy would give the pin: the plan chose not to
		 * (asked only for the remark) */
		chose = pin_unmet && have_rules && p->ctx->diag->remarks &&
			dt_shard_search(&p->space, p->mode, &p->choice, NULL) ==
			    DT_OK &&
			p->choice.found;
	} else if (have_rules) {
		if (dt_shard_search(&p->space, p->mode, &p->choice, NULL) !=
		    DT_OK) {
			dt_node_error(p->ctx->diag, m, node(p, id),
				      "node '%s': %llu strategies are too many "
				      "for --search=exhaustive (use pq)",
				      dt_node_name(p->m, id),
				      (unsigned long long)
					  dt_shard_space_product(&p->space));
			return DT_EINPUT;
		}
		if (!p->choice.found && pin_sharding) {
			pin_unmet = true;
			req.pin = NULL;
			dt_shard_space_init(&p->space, &p->rules, &req);
			dt_shard_search_toward(&p->space, &pin.placements,
					       p->mode, &p->choice);
		} else if (pin_sharding && p->rules.nout == 1) {
			/* Computing elsewhere and moving the result to the
			 * pin may cost less than the moves of the inputs a
			 * strategy giving the pin needs (a gradient pinned R
			 * all-reduces its partial sum instead of gathering
			 * its operands). */
			req.pin = NULL;
			dt_shard_space_init(&p->space, &p->rules, &req);
			if (dt_shard_search_toward(&p->space, &pin.placements,
						   p->mode, &p->alt) <
			    p->choice.cost - 1e-9) {
				dt_shard_choice_copy(&p->choice, &p->alt);
				pin_unmet = cheaper = true;
			}
		}
	}
	uint32_t nout = p->rules.nout, width = nout + p->rules.nin;
	const struct dt_placements *chosen;
	DT_VEC(struct dt_placements) fallback = {0};
	if (planned) {
		chosen = planned;
	} else if (have_rules && p->choice.found) {
		chosen = p->choice.placements.data;
	} else {
		dt_vec_grow(&fallback, width);
		for (uint32_t k = 0; k < width; k++)
			replicated(&fallback.data[k], mp->ndim);
		for (uint32_t i = 0; i < p->rules.nin; i++)
			if (dt_rules_input(&p->rules, i)->ignored)
				fallback.data[nout + i] = p->current.data[i];
		chosen = fallback.data;
		pin_unmet = pin_sharding &&
			    !dt_placements_equal(&chosen[0], &pin.placements);
	}
	bool moved = false;
	for (uint32_t i = 0; i < p->rules.nin; i++)
		moved |= !dt_placements_equal(&p->current.data[i],
					      &chosen[nout + i]);
	/* The whole-graph search names every fallback; a node's own search
	 * those that move an input. */
	bool no_strategy = planned ? planned_kind(p, id) == DT_PNODE_NO_STRATEGY
				   : have_rules && !p->choice.found;
	bool replicate = !have_rules || no_strategy || p->rules.nrows == 0;
	if (no_strategy)
		snprintf(why, sizeof why, "no strategy of its rules applies");
	if ((moved || planned) && replicate && p->ctx->diag->remarks)
		remark(p, id, "shard-prop:replicate",
		       "'%s' (%s) runs replicated: %s", dt_node_name(p->m, id),
		       dt_str_get(m, node(p, id)->target),
		       !have_rules || no_strategy ? why
		       : strcmp(p->rules.family, "replicate") == 0
			   ? "its op has no sharding rule"
			   : "no rule of its op applies to these arguments");
	move_inputs(p, id, (uint16_t)mesh, &chosen[nout]);
	struct value vals[DT_MAX_RESULTS];
	for (uint32_t k = 0; k < nout && k < DT_MAX_RESULTS; k++)
		vals[k] = (struct value){(uint16_t)mesh, chosen[k]};
	if (nout)
		set_sharding(p, id, (uint16_t)mesh, &chosen[0]);
	record(p, id, vals, nout);
	if (pin_unmet) {
		char a[128], b[128];
		print_pl(&pin.placements, a, sizeof a);
		print_pl(&chosen[0], b, sizeof b);
		if (nout != 1) {
			dt_node_error(p->ctx->diag, m, node(p, id),
				      "node '%s': no strategy gives its result "
				      "0 the pinned placements %s; pin the "
				      "getitem of that result instead",
				      dt_node_name(p->m, id), a);
			dt_vec_free(&fallback);
			return DT_EINPUT;
		}
		if (p->ctx->diag->remarks && (chose || cheaper))
			remark(p, id, "shard-prop:pin",
			       "'%s' (%s) computes %s and is redistributed to "
			       "its pinned placements %s: %s",
			       dt_node_name(p->m, id),
			       dt_str_get(m, node(p, id)->target), b, a,
			       chose ? "the whole-graph plan's choice"
				     : "cheaper than any strategy giving them");
		else if (p->ctx->diag->remarks)
			remark(p, id, "shard-prop:pin",
			       "no strategy of '%s' (%s) gives its pinned "
			       "placements %s; it computes %s and is "
			       "redistributed",
			       dt_node_name(p->m, id),
			       dt_str_get(m, node(p, id)->target), a, b);
		redistribute_to_pin(p, id, (uint16_t)mesh, &pin.placements);
	}
	dt_vec_free(&fallback);
	return DT_OK;
}

/* A getitem takes its result's placements (a pin on it is honoured by a
 * redistribution after it). */
static int propagate_getitem(struct prop *p, uint32_t id)
{
	struct dt_node *n = node(p, id);
	const struct dt_arg *src = dt_node_arg(p->m, n, 0);
	const struct dt_arg *idx = dt_node_arg(p->m, n, 1);
	const struct value *v = value_of(p, src->v.node, (uint32_t)idx->v.i);
	DT_REQUIRE(v != NULL);
	struct value val = *v;
	const struct dt_sharding *pin = dt_node_sharding(p->m, n);
	struct dt_sharding pinned = pin ? *pin : (struct dt_sharding){0};
	set_sharding(p, id, val.mesh, &val.pl);
	record(p, id, &val, 1);
	if (pin && (pinned.mesh != val.mesh ||
		    !dt_placements_equal(&pinned.placements, &val.pl)))
		redistribute_to_pin(p, id, pinned.mesh, &pinned.placements);
	return DT_OK;
}

/* The whole-graph plan publishes the value of node `id` (read by two
 * inputs or more) at one placement: when that is not the one it has, one
 * redistribution after it, which every later user reads. */
static void publish(struct prop *p, uint32_t id)
{
	if (!p->plan || id >= p->problem.publish.len ||
	    p->problem.publish.data[id] == NONE)
		return;
	uint32_t k = p->problem.publish.data[id];
	const struct dt_placements *want =
	    dt_shard_problem_pl(&p->problem, k, p->plan[k]);
	const struct value *v = value_of(p, id, 0);
	if (dt_placements_equal(&v->pl, want))
		return;
	if (p->ctx->diag->remarks) {
		char a[128], b[128];
		print_pl(&v->pl, a, sizeof a);
		print_pl(want, b, sizeof b);
		remark(p, id, "shard-prop:redistribute",
		       "'%s' moves from %s to %s for all its users",
		       dt_node_name(p->m, id), a, b);
	}
	redistribute_to_pin(p, id, v->mesh, want);
}

/* Build the whole-graph problem when asked for (--search=global,
 * --dump-problem), write it, and solve it for the global search. */
static int plan_graph(struct prop *p)
{
	const struct dt_pass_options *o = p->ctx->options;
	bool global = o && o->shard_search == DT_SEARCH_GLOBAL;
	if (!global && !(o && o->problem_out))
		return DT_OK;
	struct dt_shard_problem_options po = {
	    .topology = p->topology,
	    .budget = o->search_budget > 0   ? o->search_budget
		      : o->memory_budget > 0 ? o->memory_budget
					     : -1,
	    .create_groups = o->create_groups,
	    .redistribute = o->redistribute,
	    .inputs_unbucketed = o->search_inputs_unbucketed,
	};
	struct dt_placements *hint = NULL;
	if (global && o->expert_pins) {
		hint = dt_calloc(p->m->nodes.len + 1, sizeof *hint);
		po.hint = hint;
		int rc = dt_shard_expert_read(p->ctx, o->expert_pins, hint);
		if (rc != DT_OK) {
			dt_free(hint);
			return rc;
		}
	}
	int rc = dt_shard_global_problem(p->ctx, &po, &p->problem, &p->cached);
	if (rc != DT_OK) {
		dt_free(hint);
		return rc;
	}
	/* Too large to solve or write: the node-by-node search. */
	if (!dt_shard_global_built(p->ctx, &p->problem,
				   o->problem_out ? DT_ERROR : DT_WARNING,
				   o->problem_out ? ": not written"
						  : "; placements chosen node "
						    "by node (--search=greedy)")) {
		dt_free(hint);
		return o->problem_out ? DT_EINPUT : DT_OK;
	}
	if (o->problem_out)
		dt_shard_problem_write(&p->problem, o->problem_out);
	if (!global)
		return DT_OK;
	p->plan = dt_calloc((size_t)p->problem.solve.nnodes + 1,
			    sizeof *p->plan);
	bool solved;
	rc = dt_shard_global_solve(p->ctx, &p->problem, p->cached, p->plan,
				   &solved);
	if (hint && solved)
		dt_shard_expert_report(p->ctx, &p->problem, hint,
				       dt_solve_plan_cost(&p->problem.solve,
							  p->plan, NULL));
	dt_free(hint);
	if (!solved) {
		dt_free(p->plan);
		p->plan = NULL;
	}
	return rc;
}

void dt_shard_watch_fini(struct dt_shard_watch *w)
{
	dt_vec_free(&w->values);
	dt_vec_free(&w->current);
}

int dt_shard_prop(struct dt_pass_ctx *ctx, struct dt_shard_watch *watch)
{
	struct dt_module *m = ctx->m;
	if (m->view != DT_VIEW_GLOBAL) {
		dt_diag_report(
		    ctx->diag, DT_ERROR, m->file, 0, NULL,
		    "shard-prop needs a global-view graph (this one is local)");
		return DT_EINPUT;
	}
	struct prop p = {
	    .ctx = ctx,
	    .m = m,
	    .mode = ctx->options &&
			    ctx->options->shard_search == DT_SEARCH_EXHAUSTIVE
			? DT_SEARCH_EXHAUSTIVE
			: DT_SEARCH_PQ, /* a node's own search under global */
	    .topology = ctx->options && ctx->options->topology
			    ? ctx->options->topology
			    : &m->topology,
	    .watch = watch,
	};
	p.redistribute_target =
	    dt_str_intern(m, dt_op_get(DT_OP_REDISTRIBUTE)->target);
	int rc = plan_graph(&p);
	for (uint32_t id = m->first; id != 0 && rc == DT_OK;
	     id = node(&p, id)->next) {
		struct dt_node *n = node(&p, id);
		const struct dt_sharding *s = dt_node_sharding(m, n);
		if (n->kind == DT_NODE_OUTPUT)
			continue;
		if (n->kind == DT_NODE_CONSTANT) {
			rc = constant_value(&p, id);
		} else if (n->kind == DT_NODE_PLACEHOLDER ||
			   n->op == DT_OP_REDISTRIBUTE) {
			if (!s) { /* the verifier checked placeholders */
				dt_node_error(ctx->diag, m, n,
					      "node '%s': dtensor.redistribute "
					      "needs a <sharding> target",
					      dt_node_name(p.m, id));
				rc = DT_EINPUT;
				break;
			}
			struct value v = {s->mesh, s->placements};
			record(&p, id, &v, 1);
		} else {
			rc = n->op == DT_OP_GETITEM ? propagate_getitem(&p, id)
						    : propagate(&p, id);
		}
		if (rc == DT_OK)
			publish(&p, id);
	}
	if (!p.cached)
		dt_shard_problem_fini(&p.problem);
	dt_free(p.plan);
	dt_vec_free(&p.first);
	dt_vec_free(&p.values);
	dt_vec_free(&p.redist_head);
	dt_vec_free(&p.redists);
	dt_vec_free(&p.current);
	dt_rules_fini(&p.rules);
	dt_shard_space_fini(&p.space);
	dt_shard_choice_fini(&p.choice);
	dt_shard_choice_fini(&p.alt);
	return rc;
}

static int run_shard_prop(struct dt_pass_ctx *ctx)
{
	return dt_shard_prop(ctx, NULL);
}

const struct dt_pass dt_pass_shard_prop = {
    .name = "shard-prop",
    .help = "choose placements (single-dim rules, min-cost search); insert "
	    "redistributions",
    .requires = DT_PROP_VERIFIED | DT_PROP_SHAPES,
    .preserves = DT_PROP_VERIFIED | DT_PROP_SHAPES,
    .run = run_shard_prop,
};
