// SPDX-License-Identifier: MIT
/* problem.c: the whole-graph sharding problem of a global-view
 * graph (semantics §6.6), in the solver's form (solver.h) and the IOPDDL
 * contest's JSON. A node's strategies are those its rules give on its
 * mesh (every sharding kind: S, and the _S split factors the graph's
 * pins use); its cost is its modelled compute, a roofline of flops over
 * the topology's device_tflops and per-rank bytes over its
 * device_bandwidth (a replicated matmul pays its whole product), plus a
 * pinned node's move to its pin and each pinned getitem's of its results;
 * its usage the per-rank bytes of the buffers it makes, over the interval
 * the interpreter holds them (sharding/problem_usage.c). Its edges (the
 * moves between a producer's and a consumer's placements), publishers and
 * copy nodes are sharding/problem_moves.c's, its bucket nodes (the latency
 * of the buckets bucketed moves join) sharding/problem_buckets.c's.
 *
 *   x (placeholder S(0)) ─ mm(x, w) ─ relu     node mm: 6 strategies on
 *   w (placeholder R)   ─┘                     a 1-D mesh; edge x→mm:
 *                                              0 where mm reads S(0)
 *
 * Time: per node its strategies (enumeration, as --search=exhaustive);
 * the edges as problem_moves.c says. */
#include "cost_model.h"
#include "problem_internal.h"
#include "problem_prune.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* What a problem node's results may carry: the _S split factors (the
 * kinds its users' placeholders are filled with, as a node's own search
 * fills them with its inputs'), and the partial ops. A strategy reading
 * a P(max|min|product) its producer never gives is dropped: made by a
 * local R -> P(op), it only defers a reduction. P(sum|avg) stays (a bias
 * split R -> P(sum) is how a row-parallel addmm adds it once). */
#define MAX_FACTORS 16
struct factors {
	uint8_t partial; /* bit per enum dt_reduce_op: the partial sums its
			    results may be */
	int n;
	int32_t f[MAX_FACTORS];
};

static void factors_add(struct factors *fs, const struct dt_placements *pl)
{
	for (int m = 0; m < pl->ndim; m++) {
		if (pl->p[m].kind == DT_PL_PARTIAL)
			fs->partial |= (uint8_t)(1u << pl->p[m].reduce);
		if (pl->p[m].kind != DT_PL_STRIDED_SHARD)
			continue;
		int k = 0;
		while (k < fs->n && fs->f[k] != pl->p[m].split_factor)
			k++;
		if (k == fs->n && fs->n < MAX_FACTORS)
			fs->f[fs->n++] = pl->p[m].split_factor;
	}
}

struct builder {
	struct dt_shard_problem *pr;
	struct dt_module *m;
	const struct dt_topology *topology;
	struct dt_diag *diag;
	struct dt_rules rules;
	struct dt_shard_space space;
	DT_VEC(struct dt_placements) current; /* all-replicate, per input */
	DT_VEC(struct dt_placements) kinds;
	DT_VEC(uint32_t) pos;                 /* graph node -> position */
	DT_VEC(uint32_t) pinned_getitem;      /* graph node -> its first
						 getitem with a pin of its
						 own, a getitem -> the next
						 one of its node; 0: none */
	DT_VEC(int64_t) cost, usage, pin;     /* the node being built */
	DT_VEC(struct factors) factors;       /* per problem node */
	struct dt_shard_pnode *node;          /* while enumerating */
	struct dt_shard_edges edges;          /* the edges' half */
	struct dt_prune prune;
	DT_VEC(struct dt_prune_input) prune_in; /* the node being pruned */
	DT_VEC(const struct dt_placements *) srcs;
	DT_VEC(uint8_t) keep;
	uint32_t prune_first;                 /* its first entry of inputs */
	const struct dt_placements *hint;     /* per graph node, or NULL */
	bool matmul;
	bool view;                            /* aliases its input: no kernel */
};

static struct dt_node *gnode(const struct builder *b, uint32_t id)
{
	return dt_node_get(b->m, id);
}

static void replicated(struct dt_placements *pl, int ndim)
{
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	dt_placements_default_order(pl);
}

/* Modelled compute of a strategy (µs): flops (2·M·N·K for the matmul
 * family, one per element of the largest tensor otherwise) divided by the
 * size of every mesh dim on which some tensor is sharded, against the
 * per-rank bytes touched; none for a view, which aliases its input
 * (dt_compute_cost's model). */
static double compute_us(const struct builder *b,
			 const struct dt_placements *pl)
{
	if (b->view)
		return 0;
	const struct dt_rules *r = &b->rules;
	const struct dt_mesh *mesh = &b->space.mesh;
	double flops = 0, bytes = 0;
	bool split[DT_MAX_MESH_DIMS] = {false};
	for (uint32_t t = 0; t < r->nout + r->nin; t++) {
		const struct dt_rule_tensor *ten = &r->tensors.data[t];
		if (t >= r->nout && ten->ignored)
			continue;
		double numel = (double)dt_numel(ten->shape, ten->rank);
		flops = numel > flops ? numel : flops;
		bytes += dt_shard_local_bytes(mesh, ten, &pl[t]);
		for (int k = 0; k < mesh->ndim; k++)
			split[k] |= pl[t].p[k].kind == DT_PL_SHARD ||
				    pl[t].p[k].kind == DT_PL_STRIDED_SHARD;
	}
	if (b->matmul && r->nin >= 2 && r->nout >= 1) {
		const struct dt_rule_tensor *a = dt_rules_input(r, r->nin - 2);
		const struct dt_rule_tensor *o = &r->tensors.data[0];
		flops = 2.0 * (double)dt_numel(o->shape, o->rank) *
			(double)(a->rank ? a->shape[a->rank - 1] : 1);
	}
	for (int k = 0; k < mesh->ndim; k++)
		if (split[k])
			flops /= (double)mesh->shape[k];
	return dt_roofline_us(b->topology, flops, bytes);
}

/* Record one strategy (width placements) of b->node. */
static void add_strategy(struct builder *b, const struct dt_placements *pl,
			 double pin_us, uint64_t joins)
{
	struct dt_shard_problem *pr = b->pr;
	for (uint32_t k = 0; k < b->node->width; k++)
		dt_vec_push(&pr->placements, pl[k]);
	double c = b->node->kind == DT_PNODE_SOURCE ? 0 : compute_us(b, pl);
	dt_vec_push(&pr->compute_us, c);
	dt_vec_push(&pr->pin_us, pin_us);
	dt_vec_push(&pr->bucket_joins, joins);
	dt_vec_push(&b->cost, dt_shard_add_sat(dt_shard_ns(c), dt_shard_ns(pin_us)));
	dt_vec_push(&b->pin, dt_shard_ns(pin_us));
	int64_t held = dt_shard_held_bytes(pr, b->m, NULL, pr->pnodes.len - 1,
					    (int32_t)b->usage.len);
	dt_vec_push(&b->usage, held);
}

static uint32_t getitem_result(const struct builder *b, uint32_t g)
{
	return (uint32_t)dt_node_arg(b->m, gnode(b, g), 1)->v.i;
}

/* µs (INFINITY where none) of moving result r of b->node's strategy, at
 * `at`, to `pin`, the pin of graph node id (b->node's, or a getitem's of
 * result r), its buckets ORed into *joins (the move joins them when only
 * the output reads id). */
static double move_to_pin(struct builder *b, uint32_t id, uint32_t r,
			  const struct dt_placements *at,
			  const struct dt_placements *pin, uint64_t *joins)
{
	if (dt_placements_equal(at, pin))
		return 0;
	return dt_shard_edges_move_us(
	    &b->edges, b->node->mesh, dt_shard_edges_pin_phase(&b->edges, id),
	    &b->rules.tensors.data[r], at, pin, joins);
}

static void take_strategy(void *ud, const struct dt_shard_choice *c)
{
	struct builder *b = ud;
	const struct dt_placements *pl = c->placements.data;
	double pin_us = 0;
	uint64_t joins = 0;
	if (b->node->pinned && !dt_placements_equal(&pl[0], &b->node->pin))
		pin_us = b->node->nout != 1
			     ? INFINITY
			     : move_to_pin(b, b->node->node, 0, &pl[0],
					   &b->node->pin, &joins);
	for (uint32_t i = 0; i < b->rules.nin; i++) {
		const struct dt_rule_tensor *t = dt_rules_input(&b->rules, i);
		if (t->ignored)
			continue;
		uint8_t have =
		    b->factors.data[b->pr->of_node.data[t->node]].partial;
		const struct dt_placements *in = &pl[b->rules.nout + i];
		for (int m = 0; m < in->ndim; m++)
			if (in->p[m].kind == DT_PL_PARTIAL &&
			    in->p[m].reduce != DT_REDUCE_SUM &&
			    in->p[m].reduce != DT_REDUCE_AVG &&
			    !(have & (1u << in->p[m].reduce)))
				return;
	}
	for (uint32_t g = b->pinned_getitem.data[b->node->node];
	     g && isfinite(pin_us); g = b->pinned_getitem.data[g]) {
		uint32_t r = getitem_result(b, g);
		if (b->node->pinned_results >> r & 1)
			pin_us += move_to_pin(
			    b, g, r, &pl[r],
			    &dt_node_sharding(b->m, gnode(b, g))->placements,
			    &joins);
	}
	if (isfinite(pin_us))
		add_strategy(b, pl, pin_us, joins);
}

/* Close b->node: its costs and usages become solve node arrays. */
static void finish_node(struct builder *b)
{
	struct dt_solve_node sn = {.nstrategies = (int32_t)b->cost.len};
	sn.cost = dt_malloc(b->cost.len * sizeof *sn.cost);
	sn.usage = dt_malloc(b->usage.len * sizeof *sn.usage);
	memcpy(sn.cost, b->cost.data, b->cost.len * sizeof *sn.cost);
	memcpy(sn.usage, b->usage.data, b->usage.len * sizeof *sn.usage);
	b->pr->solve.nodes[b->pr->pnodes.len - 1] = sn;
	b->cost.len = b->usage.len = b->pin.len = 0;
	struct factors fs = {0};
	const struct dt_shard_pnode *n = b->node;
	for (int32_t s = 0; s < sn.nstrategies; s++)
		for (uint32_t r = n->pinned ? 1 : 0; r < n->nout; r++)
			factors_add(&fs, &b->pr->placements.data[n->pl + (uint32_t)s * n->width + r]);
	if (n->pinned)
		factors_add(&fs, &n->pin);
	for (int r = 0; r < __builtin_popcountll(n->pinned_results); r++)
		factors_add(&fs, &b->pr->result_pins.data[n->result_pin + (uint32_t)r]);
	dt_vec_push(&b->factors, fs);
}

static struct dt_shard_pnode *new_pnode(struct builder *b, uint32_t id,
					uint16_t mesh, uint8_t kind)
{
	struct dt_shard_problem *pr = b->pr;
	struct dt_shard_pnode n = {
	    .node = id,
	    .mesh = mesh,
	    .kind = kind,
	    .first = pr->compute_us.len,
	    .pl = pr->placements.len,
	};
	pr->of_node.data[id] = dt_vec_push(&pr->pnodes, n);
	b->node = &pr->pnodes.data[pr->pnodes.len - 1];
	return b->node;
}

/* A placeholder, constant or redistribution: its <sharding> (a constant
 * without one is replicated on the first mesh, as shard-prop makes it). */
static void add_source(struct builder *b, uint32_t id)
{
	const struct dt_sharding *s = dt_node_sharding(b->m, gnode(b, id));
	struct dt_placements pl;
	uint16_t mesh = s ? s->mesh : 0;
	if (s)
		pl = s->placements;
	else
		replicated(&pl, b->m->meshes.len ? b->m->meshes.data[0].ndim : 0);
	struct dt_shard_pnode *n = new_pnode(b, id, mesh, DT_PNODE_SOURCE);
	n->nout = n->width = 1;
	add_strategy(b, &pl, 0, 0);
}

/* The kinds b->rules' placeholders take on mesh mp: S, and the split
 * factors of what its inputs' producers may give them and of its pin
 * (NULL: none), which it must be able to give whatever its producers
 * keep (a gradient pinned to its weight's FSDP _S(0,2)). */
static void fill_kinds(struct builder *b, const struct dt_mesh *mp,
		       const struct dt_sharding *pin)
{
	struct dt_placements s;
	replicated(&s, mp->ndim);
	s.p[0] = (struct dt_placement){.kind = DT_PL_SHARD};
	b->kinds.len = 0;
	dt_vec_push(&b->kinds, s);
	struct factors all = {0};
	for (uint32_t i = 0; i < b->rules.nin; i++) {
		const struct dt_rule_tensor *t = dt_rules_input(&b->rules, i);
		if (t->ignored)
			continue;
		const struct factors *fs =
		    &b->factors.data[b->pr->of_node.data[t->node]];
		for (int k = 0; k < fs->n; k++) {
			s.p[0] = (struct dt_placement){
			    .kind = DT_PL_STRIDED_SHARD,
			    .split_factor = fs->f[k]};
			factors_add(&all, &s);
		}
	}
	if (pin)
		factors_add(&all, &pin->placements);
	for (int k = 0; k < all.n; k++) {
		s.p[0] = (struct dt_placement){.kind = DT_PL_STRIDED_SHARD,
					       .split_factor = all.f[k]};
		dt_vec_push(&b->kinds, s);
	}
}

/* The mesh of call node id's inputs (else its pin's, else the first);
 * -1 after reporting inputs on different meshes. */
static int call_mesh(struct builder *b, uint32_t id,
		     const struct dt_sharding *pin)
{
	struct dt_shard_problem *pr = b->pr;
	int mesh = -1;
	for (uint32_t i = 0; i < b->rules.nin; i++) {
		uint32_t v = dt_rules_input(&b->rules, i)->node;
		uint16_t at = pr->pnodes.data[pr->of_node.data[v]].mesh;
		if (mesh >= 0 && at != mesh) {
			dt_node_error(b->diag, b->m, gnode(b, id),
				      "node '%s': its inputs are on different "
				      "meshes",
				      dt_str_get(b->m, gnode(b, id)->name));
			return -1;
		}
		mesh = at;
	}
	if (mesh >= 0 && pin && pin->mesh != mesh) {
		dt_node_error(b->diag, b->m, gnode(b, id),
			      "node '%s': its <sharding> names another mesh "
			      "than its inputs'",
			      dt_str_get(b->m, gnode(b, id)->name));
		return -1;
	}
	return mesh >= 0 ? mesh : pin ? pin->mesh : 0;
}

/* The results of call node n whose getitems (on its mesh) have pins of
 * their own (not result 0 of a pinned node: its pin is the node's), their
 * pins in pr->result_pins, in order of result. */
static void pin_results(struct builder *b, struct dt_shard_pnode *n,
			bool pinned)
{
	n->result_pin = b->pr->result_pins.len;
	for (uint32_t g = b->pinned_getitem.data[n->node]; g;
	     g = b->pinned_getitem.data[g]) {
		uint32_t r = getitem_result(b, g);
		if (dt_node_sharding(b->m, gnode(b, g))->mesh == n->mesh &&
		    !(pinned && r == 0))
			n->pinned_results |= 1ull << r;
	}
	for (uint32_t r = 0; r < DT_MAX_RESULTS; r++)
		for (uint32_t g = b->pinned_getitem.data[n->node];
		     (n->pinned_results >> r & 1) && g;
		     g = b->pinned_getitem.data[g])
			if (getitem_result(b, g) == r) {
				dt_vec_push(&b->pr->result_pins,
					    dt_node_sharding(b->m, gnode(b, g))
						->placements);
				break;
			}
}

/* A call node: its strategies, or the replicated one. */
static int add_call(struct builder *b, uint32_t id)
{
	struct dt_module *m = b->m;
	char why[256];
	bool have_rules =
	    dt_rules_fill(&b->rules, m, id, why, sizeof why) == DT_OK;
	if (!have_rules)
		b->rules.nrows = 0;
	const struct dt_sharding *pin = dt_node_sharding(m, gnode(b, id));
	int mesh = call_mesh(b, id, pin);
	if (mesh < 0)
		return DT_EINPUT;
	const struct dt_mesh *mp = &m->meshes.data[mesh];
	b->current.len = 0;
	for (uint32_t i = 0; i < b->rules.nin; i++) {
		struct dt_placements r;
		replicated(&r, mp->ndim);
		dt_vec_push(&b->current, r);
	}
	fill_kinds(b, mp, pin);
	struct dt_shard_request req = {
	    .mesh = mp,
	    .topology = b->topology,
	    .current = b->current.data,
	    .kinds = b->kinds.data,
	    .nkinds = b->kinds.len,
	    .uncosted = true,
	};
	dt_shard_space_init(&b->space, &b->rules, &req);
	struct dt_shard_pnode *n = new_pnode(
	    b, id, (uint16_t)mesh,
	    have_rules ? DT_PNODE_RULES : DT_PNODE_NO_RULE);
	n->nout = b->rules.nout;
	n->width = b->rules.nout + b->rules.nin;
	b->matmul = have_rules && strcmp(b->rules.family, "matmul") == 0;
	b->view = dt_op_has((enum dt_op)dt_node_get(m, id)->op, DT_OPF_VIEW);
	if (pin) {
		n->pinned = true;
		n->pin = pin->placements;
	}
	pin_results(b, n, pin != NULL);
	/* A pinned node takes every strategy, with the move of its result to
	 * the pin: a weight gradient's P(sum) and its all-reduce (which joins
	 * a bucket: the data-parallel plan), as well as a shard computed where
	 * the inputs are and all-gathered, or a result computed replicated
	 * and sliced. */
	if (have_rules && dt_shard_enumerate(&b->space, take_strategy, b) ==
			      UINT64_MAX) {
		/* Too many to weigh: the problem is too large, as with too
		 * many edge entries (the node search decides). */
		b->pr->entries = INFINITY;
		return DT_OK;
	}
	if (have_rules && b->cost.len == 0)
		n->kind = DT_PNODE_NO_STRATEGY;
	if (b->cost.len == 0) {
		struct dt_shard_choice all = {0};
		dt_vec_grow(&all.placements, n->width);
		for (uint32_t k = 0; k < n->width; k++)
			replicated(&all.placements.data[k], mp->ndim);
		take_strategy(b, &all);
		dt_shard_choice_fini(&all);
	}
	if (b->cost.len == 0 && !n->pinned) {
		/* Only getitems of its results are pinned (pin_results). */
		char text[512] = "";
		size_t used = 0;
		for (uint32_t g = b->pinned_getitem.data[id];
		     g && used + 1 < sizeof text; g = b->pinned_getitem.data[g]) {
			used += (size_t)snprintf(text + used, sizeof text - used,
						 "%s'%s' at ", used ? ", " : "",
						 dt_str_get(m, gnode(b, g)->name));
			if (used < sizeof text)
				used += (size_t)dt_placements_print(
				    &dt_node_sharding(m, gnode(b, g))->placements,
				    text + used, sizeof text - used);
		}
		dt_node_error(b->diag, m, gnode(b, id),
			      "no strategy of node '%s' gives, or reaches by "
			      "redistribution, the placements the getitems of "
			      "its results are pinned to: %s",
			      dt_str_get(m, gnode(b, id)->name), text);
		return DT_EINPUT;
	}
	if (b->cost.len == 0) {
		char text[128];
		dt_placements_print(&n->pin, text, sizeof text);
		if (n->nout == 1)
			dt_node_error(b->diag, m, gnode(b, id),
				      "node '%s' is pinned to %s, which no "
				      "strategy of its op gives and no "
				      "redistribution reaches",
				      dt_str_get(m, gnode(b, id)->name), text);
		else
			dt_node_error(b->diag, m, gnode(b, id),
				      "node '%s' is pinned to %s, which no "
				      "strategy of its op gives its result 0 "
				      "(of %u: pin the getitem of that result "
				      "instead)",
				      dt_str_get(m, gnode(b, id)->name), text,
				      n->nout);
		return DT_EINPUT;
	}
	for (uint32_t i = 0; i < b->rules.nin; i++) {
		const struct dt_rule_tensor *t = dt_rules_input(&b->rules, i);
		if (t->ignored)
			continue;
		struct dt_shard_input in = {
		    .consumer = b->pr->pnodes.len - 1,
		    .index = i,
		    .producer = b->pr->of_node.data[t->node],
		    .result = b->pr->result.data[t->node],
		    .tensor = *t,
		};
		dt_vec_push(&b->edges.inputs, in);
	}
	return DT_OK;
}

/* A pinned input's placements become a pruning anchor (problem_prune.h),
 * once. */
static void add_anchor(struct builder *b, uint32_t id)
{
	const struct dt_sharding *pin = dt_node_sharding(b->m, gnode(b, id));
	if (gnode(b, id)->kind != DT_NODE_PLACEHOLDER || !pin)
		return;
	for (uint32_t a = 0; a < b->prune.anchors.len; a++)
		if (dt_placements_equal(&b->prune.anchors.data[a],
					&pin->placements))
			return;
	dt_vec_push(&b->prune.anchors, pin->placements);
}

/* dt_prune_move of the node being pruned: a move into a pinned view at
 * its pin is priced in full here (the strategies reading there are not
 * known yet, dt_shard_pin_read), bucketed on the problem's edges. */
static int64_t prune_move(void *ud, uint32_t i, const struct dt_placements *src,
			  const struct dt_placements *dst)
{
	struct builder *b = ud;
	const struct dt_shard_input *in =
	    &b->edges.inputs.data[b->prune_first + i];
	const struct dt_shard_pnode *to = &b->pr->pnodes.data[in->consumer];
	const struct dt_shard_pnode *from = &b->pr->pnodes.data[in->producer];
	if (from->mesh != to->mesh)
		return DT_SOLVE_INFINITE;
	return dt_shard_edges_move_ns(&b->edges, to->mesh,
				      dt_shard_edges_input_phase(&b->edges, from,
								 to, in->result),
				      &in->tensor, src, dst, NULL);
}

/* Where input `in`'s producer puts its value in an expert's plan: its
 * pin (or its result's pinned getitem's), a source's placements, or its
 * hint (result 0); NULL when unknown. */
static const struct dt_placements *expert_source(const struct builder *b,
						 const struct dt_shard_input *in)
{
	const struct dt_shard_pnode *p = &b->pr->pnodes.data[in->producer];
	if ((p->pinned && in->result == 0) ||
	    (p->pinned_results >> in->result & 1) ||
	    p->kind == DT_PNODE_SOURCE)
		return dt_shard_result_pl(b->pr, in->producer, 0, in->result);
	const struct dt_placements *h = &b->hint[p->node];
	return in->result == 0 && h->ndim ? h : NULL;
}

/* The strategy an expert's plan takes at the node just built: of those
 * of finite cost giving result 0 `want`, the one of least cost plus moves
 * from where its producers put their values (expert_source; an input
 * from elsewhere is not weighed); -1 when none gives it. */
static int32_t expert_choice(struct builder *b, const struct dt_placements *want)
{
	const struct dt_shard_pnode *n = &b->pr->pnodes.data[b->pr->pnodes.len - 1];
	const struct dt_shard_input *in = &b->edges.inputs.data[b->prune_first];
	uint32_t nin = b->edges.inputs.len - b->prune_first;
	int32_t best = -1;
	int64_t least = 0;
	for (uint32_t s = 0; s < b->cost.len; s++) {
		const struct dt_placements *pl =
		    &b->pr->placements.data[n->pl + s * n->width];
		if (b->cost.data[s] == DT_SOLVE_INFINITE ||
		    !dt_placements_equal(&pl[0], want))
			continue;
		int64_t c = b->cost.data[s];
		for (uint32_t i = 0; i < nin; i++) {
			const struct dt_placements *src = expert_source(b, &in[i]);
			if (src)
				c = dt_shard_add_sat(
				    c, prune_move(b, i, src,
						  &pl[n->nout + in[i].index]));
		}
		if (best < 0 || c < least) {
			best = (int32_t)s;
			least = c;
		}
	}
	return best;
}

/* Cut the strategies of the node just built to those dt_prune_node
 * keeps (problem_prune.h), in order; with hints, record where the
 * node's went (pr->hint). */
static void prune_node(struct builder *b)
{
	struct dt_shard_problem *pr = b->pr;
	struct dt_shard_pnode *n = &pr->pnodes.data[pr->pnodes.len - 1];
	const struct dt_shard_input *inputs = b->edges.inputs.data;
	uint32_t k = pr->pnodes.len - 1, first = b->edges.inputs.len;
	while (first > 0 && inputs[first - 1].consumer == k)
		first--;
	b->prune_first = first;
	uint32_t nin = b->edges.inputs.len - first, total = 0;
	for (uint32_t i = first; i < b->edges.inputs.len; i++)
		total += (uint32_t)pr->solve.nodes[inputs[i].producer].nstrategies;
	b->srcs.len = b->prune_in.len = 0;
	dt_vec_grow(&b->srcs, total);
	dt_vec_grow(&b->prune_in, nin);
	total = 0;
	for (uint32_t i = 0; i < nin; i++) {
		const struct dt_shard_input *in = &inputs[first + i];
		int32_t ns = pr->solve.nodes[in->producer].nstrategies;
		for (int32_t s = 0; s < ns; s++)
			b->srcs.data[total + (uint32_t)s] = dt_shard_result_pl(
			    pr, in->producer, s, in->result);
		b->prune_in.data[i] = (struct dt_prune_input){
		    .producer = in->producer,
		    .nsrc = ns,
		    .src = &b->srcs.data[total],
		    .dst = &pr->placements.data[n->pl + n->nout + in->index],
		    .stride = n->width,
		    .source = pr->pnodes.data[in->producer].kind ==
			      DT_PNODE_SOURCE,
		};
		total += (uint32_t)ns;
	}
	int32_t ns = (int32_t)b->cost.len;
	b->keep.len = 0;
	dt_vec_grow(&b->keep, (uint32_t)ns);
	uint32_t kept = dt_prune_node(&b->prune, k, ns, b->cost.data,
				      b->pin.data, b->usage.data,
				      n->nout ? &pr->placements.data[n->pl]
					      : NULL,
				      n->width, b->prune_in.data, nin,
				      prune_move, b, b->keep.data);
	int32_t expert = -1;
	if (b->hint) {
		const struct dt_placements *want = &b->hint[n->node];
		uint8_t state = DT_HINT_NONE;
		if (want->ndim && !n->pinned && n->nout) {
			expert = expert_choice(b, want);
			state = expert < 0		 ? DT_HINT_ABSENT
				: b->keep.data[expert] ? DT_HINT_KEPT
						       : DT_HINT_PRUNED;
		}
		dt_vec_push(&pr->hint, state);
		int32_t at = -1;
		for (int32_t s = 0; state == DT_HINT_KEPT && s <= expert; s++)
			at += b->keep.data[s];
		dt_vec_push(&pr->hint_at, at);
	}
	if (kept == (uint32_t)ns)
		return;
	uint32_t at = 0;
	for (uint32_t s = 0; s < (uint32_t)ns; s++) {
		if (!b->keep.data[s])
			continue;
		memmove(&pr->placements.data[n->pl + at * n->width],
			&pr->placements.data[n->pl + s * n->width],
			n->width * sizeof *pr->placements.data);
		pr->compute_us.data[n->first + at] =
		    pr->compute_us.data[n->first + s];
		pr->pin_us.data[n->first + at] = pr->pin_us.data[n->first + s];
		pr->bucket_joins.data[n->first + at] =
		    pr->bucket_joins.data[n->first + s];
		b->cost.data[at] = b->cost.data[s];
		b->usage.data[at] = b->usage.data[s];
		b->pin.data[at] = b->pin.data[s];
		at++;
	}
	pr->placements.len = n->pl + at * n->width;
	pr->compute_us.len = pr->pin_us.len = pr->bucket_joins.len =
	    n->first + at;
	b->cost.len = b->usage.len = b->pin.len = at;
}

/* The size of input k's edge matrix. */
static double entries_of(const struct builder *b, uint32_t k)
{
	const struct dt_shard_input *in = &b->edges.inputs.data[k];
	return (double)b->pr->solve.nodes[in->producer].nstrategies *
	       (double)b->pr->solve.nodes[in->consumer].nstrategies;
}

int dt_shard_problem_build(struct dt_shard_problem *pr, struct dt_module *m,
			   const struct dt_shard_problem_options *o,
			   struct dt_diag *diag)
{
	struct builder b = {.pr = pr, .m = m, .topology = o->topology,
			    .diag = diag,
			    .edges = {.m = m, .topology = o->topology,
				      .create_groups = o->create_groups,
				      .redistribute = o->redistribute,
				      .inputs_unbucketed = o->inputs_unbucketed},
			    .hint = o->hint,
			    .prune.cap = DT_SHARD_PRUNE_CAP};
	dt_shard_edges_init(&b.edges);
	uint32_t count = 0, npos = 0;
	dt_vec_grow(&pr->of_node, m->nodes.len);
	dt_vec_grow(&pr->result, m->nodes.len);
	dt_vec_grow(&b.pos, m->nodes.len);
	memset(pr->of_node.data, 0xff, m->nodes.len * sizeof(uint32_t));
	memset(pr->result.data, 0, m->nodes.len);
	dt_vec_grow(&b.pinned_getitem, m->nodes.len);
	memset(b.pinned_getitem.data, 0, m->nodes.len * sizeof(uint32_t));
	dt_foreach_node(m, id)
	{
		b.pos.data[id] = npos++;
		count++;
		add_anchor(&b, id);
		const struct dt_node *g = gnode(&b, id);
		if (g->op == DT_OP_GETITEM && dt_node_sharding(m, g)) {
			uint32_t src = dt_node_arg(m, g, 0)->v.node;
			b.pinned_getitem.data[id] = b.pinned_getitem.data[src];
			b.pinned_getitem.data[src] = id;
		}
	}
	pr->solve.nodes = dt_calloc(2 * count + 1, sizeof *pr->solve.nodes);
	pr->solve.usage_limit = o->budget;
	int rc = DT_OK;
	uint32_t counted = 0;
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = gnode(&b, id);
		if (n->kind == DT_NODE_OUTPUT)
			continue;
		if (n->op == DT_OP_GETITEM) {
			const struct dt_arg *src = dt_node_arg(m, n, 0);
			pr->of_node.data[id] = pr->of_node.data[src->v.node];
			pr->result.data[id] =
			    (uint8_t)dt_node_arg(m, n, 1)->v.i;
			continue;
		}
		if (n->kind == DT_NODE_CALL && n->op != DT_OP_REDISTRIBUTE)
			rc = add_call(&b, id);
		else
			add_source(&b, id);
		if (rc != DT_OK || pr->entries > DT_SHARD_PROBLEM_MAX_ENTRIES)
			break;
		prune_node(&b);
		finish_node(&b);
		/* Stop weighing strategies once the edges are too many. */
		for (; counted < b.edges.inputs.len; counted++)
			pr->entries += entries_of(&b, counted);
		if (pr->entries > DT_SHARD_PROBLEM_MAX_ENTRIES)
			break;
	}
	dt_vec_grow(&pr->publish, m->nodes.len);
	memset(pr->publish.data, 0xff, m->nodes.len * sizeof(uint32_t));
	if (rc == DT_OK && pr->entries <= DT_SHARD_PROBLEM_MAX_ENTRIES) {
		dt_shard_edges_publish(&b.edges, pr);
		dt_shard_edges_copies(&b.edges, pr);
		pr->entries = 0;
		for (uint32_t k = 0; k < b.edges.inputs.len; k++)
			pr->entries += entries_of(&b, k);
		for (uint32_t k = 0; k < b.edges.copies.len; k++) {
			const struct dt_shard_input *in = &b.edges.copies.data[k];
			pr->entries +=
			    (double)pr->solve.nodes[b.edges.first_copy + k]
				.nstrategies *
			    (double)(pr->solve.nodes[in->producer].nstrategies +
				     pr->solve.nodes[in->consumer].nstrategies);
		}
	}
	pr->solve.nnodes = (int32_t)pr->pnodes.len;
	if (rc == DT_OK && pr->entries <= DT_SHARD_PROBLEM_MAX_ENTRIES) {
		dt_shard_edges_build(&b.edges, pr);
		dt_shard_usage_build(pr, m, &b.edges, b.pos.data, npos);
		dt_shard_edges_buckets(&b.edges, pr);
	}
	pr->pruned = (struct dt_shard_pruned){
	    .capped = b.prune.capped, .cap = b.prune.cap,
	    .widest = b.prune.widest, .before = b.prune.before,
	    .after = b.prune.after, .widest_n = b.prune.widest_n};
	if (rc == DT_OK)
		dt_shard_problem_remark_pruned(pr, m, diag);
	dt_rules_fini(&b.rules);
	dt_shard_space_fini(&b.space);
	dt_vec_free(&b.current);
	dt_vec_free(&b.kinds);
	dt_vec_free(&b.factors);
	dt_shard_edges_fini(&b.edges);
	dt_vec_free(&b.pos);
	dt_vec_free(&b.pinned_getitem);
	dt_vec_free(&b.cost);
	dt_vec_free(&b.usage);
	dt_vec_free(&b.pin);
	dt_vec_free(&b.prune_in);
	dt_vec_free(&b.srcs);
	dt_vec_free(&b.keep);
	dt_prune_fini(&b.prune);
	return rc;
}

void dt_shard_problem_remark_pruned(const struct dt_shard_problem *pr,
				    const struct dt_module *m,
				    struct dt_diag *diag)
{
	const struct dt_shard_pruned *c = &pr->pruned;
	if (!diag->remarks || !c->capped)
		return;
	const struct dt_node *w =
	    dt_node_get(m, pr->pnodes.data[c->widest].node);
	dt_diag_report(diag, DT_REMARK, m->file, w->line, "shard-prop:pruned",
		       "the whole-graph problem keeps %.0f of %.0f "
		       "strategies: %u nodes had more than %u (the most, "
		       "'%s', %.0f) and keep those of least forward cost",
		       c->after, c->before, c->capped, c->cap,
		       dt_str_get(m, w->name), c->widest_n);
}

void dt_shard_problem_fini(struct dt_shard_problem *pr)
{
	for (int32_t k = 0; k < pr->solve.nnodes; k++) {
		dt_free(pr->solve.nodes[k].cost);
		dt_free(pr->solve.nodes[k].usage);
	}
	for (int32_t k = 0; k < pr->solve.nedges; k++)
		dt_free(pr->solve.edges[k].cost);
	dt_free(pr->solve.nodes);
	dt_free(pr->solve.edges);
	dt_vec_free(&pr->pnodes);
	dt_vec_free(&pr->of_node);
	dt_vec_free(&pr->result);
	dt_vec_free(&pr->publish);
	dt_vec_free(&pr->placements);
	dt_vec_free(&pr->compute_us);
	dt_vec_free(&pr->pin_us);
	dt_vec_free(&pr->bucket_joins);
	dt_vec_free(&pr->result_pins);
	dt_vec_free(&pr->buckets);
	dt_vec_free(&pr->hint);
	dt_vec_free(&pr->hint_at);
	memset(pr, 0, sizeof *pr);
}

uint32_t dt_shard_problem_node_at(const struct dt_module *m, int64_t t)
{
	int64_t pos = 0;
	dt_foreach_node(m, id)
	{
		if (pos++ == t)
			return id;
	}
	return 0;
}

/* A copy node takes the one strategy its input's ends imply, a result
 * node its node's, a bucket node "unused" unless a move of the plan joins
 * it. */
void dt_shard_problem_settle(const struct dt_shard_problem *pr, int32_t *x)
{
	const struct dt_solve_problem *p = &pr->solve;
	size_t *at = dt_calloc((size_t)p->nnodes + 1, sizeof *at), total = 0;
	for (int32_t k = 0; k < p->nnodes; k++) {
		at[k] = total;
		if (dt_shard_pnode_follows(pr->pnodes.data[k].kind))
			total += (size_t)p->nodes[k].nstrategies;
	}
	uint8_t *open = dt_malloc(total + 1);
	memset(open, 1, total + 1);
	for (int32_t j = 0; j < p->nedges; j++) {
		const struct dt_solve_edge *e = &p->edges[j];
		int32_t nq = p->nodes[e->to].nstrategies;
		if (!dt_shard_pnode_follows(pr->pnodes.data[e->to].kind))
			continue;
		for (int32_t t = 0; t < nq; t++)
			open[at[e->to] + (size_t)t] &=
			    e->cost[(size_t)x[e->from] * (size_t)nq + (size_t)t] !=
			    DT_SOLVE_INFINITE;
	}
	for (int32_t k = 0; k < p->nnodes; k++) {
		if (!dt_shard_pnode_follows(pr->pnodes.data[k].kind))
			continue;
		for (int32_t t = p->nodes[k].nstrategies - 1; t >= 0; t--)
			if (open[at[k] + (size_t)t])
				x[k] = t;
	}
	dt_free(open);
	dt_free(at);
}

int64_t dt_shard_problem_compute_ns(const struct dt_shard_problem *pr,
				    const int32_t *x)
{
	int64_t ns = 0;
	for (uint32_t k = 0; k < pr->pnodes.len; k++)
		ns = dt_shard_add_sat(ns, dt_shard_ns(pr->compute_us.data
			[pr->pnodes.data[k].first + (uint32_t)x[k]]));
	return ns;
}

static void write_ints(FILE *out, const int64_t *v, int64_t n)
{
	fputc('[', out);
	for (int64_t k = 0; k < n; k++)
		fprintf(out, "%s%" PRId64, k ? ", " : "", v[k]);
	fputc(']', out);
}

void dt_shard_problem_write(const struct dt_shard_problem *pr, FILE *out)
{
	const struct dt_solve_problem *p = &pr->solve;
	fprintf(out, "{\n  \"problem\": {\n    \"name\": \"dtopt\",\n"
		     "    \"nodes\": {\n      \"intervals\": [");
	for (int32_t k = 0; k < p->nnodes; k++)
		fprintf(out, "%s\n        [%" PRId64 ", %" PRId64 "]",
			k ? "," : "", p->nodes[k].start, p->nodes[k].end);
	fprintf(out, "\n      ],\n      \"costs\": [");
	for (int32_t k = 0; k < p->nnodes; k++) {
		fprintf(out, "%s\n        ", k ? "," : "");
		write_ints(out, p->nodes[k].cost, p->nodes[k].nstrategies);
	}
	fprintf(out, "\n      ],\n      \"usages\": [");
	for (int32_t k = 0; k < p->nnodes; k++) {
		fprintf(out, "%s\n        ", k ? "," : "");
		write_ints(out, p->nodes[k].usage, p->nodes[k].nstrategies);
	}
	fprintf(out, "\n      ]\n    },\n    \"edges\": {\n      \"nodes\": [");
	for (int32_t k = 0; k < p->nedges; k++)
		fprintf(out, "%s\n        [%d, %d]", k ? "," : "",
			p->edges[k].from, p->edges[k].to);
	fprintf(out, "\n      ],\n      \"costs\": [");
	for (int32_t k = 0; k < p->nedges; k++) {
		fprintf(out, "%s\n        ", k ? "," : "");
		write_ints(out, p->edges[k].cost,
			   (int64_t)p->nodes[p->edges[k].from].nstrategies *
			       p->nodes[p->edges[k].to].nstrategies);
	}
	fprintf(out, "\n      ]\n    }");
	if (p->usage_limit >= 0)
		fprintf(out, ",\n    \"usage_limit\": %" PRId64, p->usage_limit);
	fprintf(out, "\n  }\n}\n");
}
