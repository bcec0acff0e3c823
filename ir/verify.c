// SPDX-License-Identifier: MIT
/* verify.c: structural and metadata checks of a module (dt_verify), and
 * that no in-place write can be observed. Every problem is reported at its
 * node's line; the graph is never changed. */
#include "ir.h"

#include <string.h>

struct verifier {
	struct dt_module *m;
	struct dt_diag *d;
	uint32_t *position; /* node id -> 1-based position in order, 0 = absent */
	const struct dt_node *node;
	int errors;
};

static void fail(struct verifier *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(struct verifier *v, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dt_diag_report(v->d, DT_ERROR, v->m->file, v->node ? v->node->line : 0,
		       NULL, "node '%s': %s",
		       v->node ? dt_str_get(v->m, v->node->name) : "?", msg);
	v->errors++;
}

struct input_check {
	struct verifier *v;
	uint32_t self_pos;
};

static void check_input(void *ud, uint32_t input)
{
	struct input_check *c = ud;
	struct verifier *v = c->v;
	if (input == 0 || input >= v->m->nodes.len) {
		fail(v, "refers to an invalid node");
		return;
	}
	uint32_t pos = v->position[input];
	if (pos == 0)
		fail(v, "uses '%s', which is not in the graph",
		     dt_node_name(v->m, input));
	else if (pos >= c->self_pos)
		fail(v, "uses '%s', which is defined after it",
		     dt_node_name(v->m, input));
	else if (dt_node_get(v->m, input)->kind == DT_NODE_OUTPUT)
		fail(v, "uses the output node");
}

/* Group argument of a collective: exists, matches group_size. */
static void check_collective(struct verifier *v, const struct dt_bound_args *b)
{
	const struct dt_node *n = v->node;
	enum dt_op op = (enum dt_op)n->op;
	const struct dt_op_info *info = dt_op_get(op);
	int group_param = -1, size_param = -1, reduce_param = -1;
	for (int i = 0; i < info->nparams; i++) {
		if (strcmp(info->params[i].name, "group_name") == 0)
			group_param = i;
		else if (strcmp(info->params[i].name, "group_size") == 0)
			size_param = i;
		else if (strcmp(info->params[i].name, "reduce_op") == 0)
			reduce_param = i;
	}
	if (reduce_param >= 0 && b->arg[reduce_param]) {
		const char *r = dt_str_get(v->m, b->arg[reduce_param]->v.s);
		enum dt_reduce_op ro;
		if (!dt_reduce_parse(r, &ro))
			fail(v, "unknown reduce_op '%s' (expected sum, avg, max, min or product)",
			     r);
	}
	if (group_param < 0 || !b->arg[group_param])
		return;
	const char *gname = dt_str_get(v->m, b->arg[group_param]->v.s);
	int g = dt_module_find_group(v->m, b->arg[group_param]->v.s);
	if (g < 0) {
		fail(v, "%s names group '%s', which is not declared (add a <group name=\"%s\" mesh=... dims=...>)",
		     info->name, gname, gname);
		return;
	}
	const struct dt_group *grp = &v->m->groups.data[g];
	int64_t size = dt_group_size(&v->m->meshes.data[grp->mesh], grp->dims,
				     grp->ndims);
	if (size_param >= 0 && b->arg[size_param] &&
	    b->arg[size_param]->v.i != size)
		fail(v, "group_size is %lld but group '%s' has %lld ranks",
		     (long long)b->arg[size_param]->v.i, gname, (long long)size);
}

static int tensor_rank(const struct dt_module *m, const struct dt_tensor *t)
{
	int n;
	dt_ints_get(m, t->shape, &n);
	return n;
}

static void check_sharding(struct verifier *v)
{
	const struct dt_node *n = v->node;
	const struct dt_sharding *s = dt_node_sharding(v->m, n);
	if (!s) {
		if (v->m->view == DT_VIEW_GLOBAL && n->kind == DT_NODE_PLACEHOLDER)
			fail(v, "a placeholder of a global-view graph needs a <sharding>");
		return;
	}
	const struct dt_mesh *mesh = &v->m->meshes.data[s->mesh];
	int rank = -1;
	int64_t global[DT_MAX_RANK];
	if (s->has_global_shape) {
		const int64_t *g = dt_ints_get(v->m, s->global_shape, &rank);
		if (rank > DT_MAX_RANK) {
			fail(v, "global-shape has more than %d dims", DT_MAX_RANK);
			return;
		}
		memcpy(global, g, sizeof(int64_t) * (size_t)rank);
	} else if (n->ntensors) {
		const struct dt_tensor *t = dt_node_tensor(v->m, n, 0);
		rank = tensor_rank(v->m, t);
		if (v->m->view == DT_VIEW_GLOBAL)
			memcpy(global, dt_ints_get(v->m, t->shape, NULL),
			       sizeof(int64_t) * (size_t)rank);
	}
	char err[256];
	if (rank >= 0 && !dt_placements_validate(&s->placements, rank, err,
						 sizeof(err))) {
		fail(v, "%s", err);
		return;
	}
	if (v->m->view == DT_VIEW_GLOBAL && s->has_global_shape &&
	    n->ntensors) {
		const struct dt_tensor *t = dt_node_tensor(v->m, n, 0);
		int r2;
		const int64_t *shape = dt_ints_get(v->m, t->shape, &r2);
		if (r2 != rank || memcmp(shape, global, sizeof(int64_t) * (size_t)rank))
			fail(v, "global-shape differs from the tensor shape of a global-view node");
	}
	/* A local value with a global shape must be this rank's shard (every
	 * rank's, for an SPMD graph without rank="R"). */
	if (v->m->view != DT_VIEW_LOCAL || !s->has_global_shape ||
	    !n->ntensors)
		return;
	const struct dt_tensor *t = dt_node_tensor(v->m, n, 0);
	int lrank;
	const int64_t *local = dt_ints_get(v->m, t->shape, &lrank);
	if (lrank != rank) {
		fail(v, "local shape has %d dims but global-shape has %d", lrank,
		     rank);
		return;
	}
	/* An SPMD graph pads uneven shards to the largest (semantics §7). */
	int64_t pos = v->m->rank >= 0 ? dt_mesh_position(mesh, v->m->rank) : -1;
	if (v->m->rank >= 0 && pos < 0)
		return;
	int64_t want[DT_MAX_RANK];
	dt_shard_shape(mesh, &s->placements, pos, global, rank, want);
	for (int d = 0; d < rank; d++)
		if (want[d] != local[d]) {
			fail(v, "local dim %d is %lld but %s %lld of global-shape "
			     "dim %lld", d, (long long)local[d],
			     pos >= 0 ? "this rank holds"
				      : "the largest shard (an SPMD graph's "
					"local size) is",
			     (long long)want[d], (long long)global[d]);
			return;
		}
}

/* A constant: no arguments, one contiguous tensor whose byte count its
 * data has. */
static void check_constant(struct verifier *v)
{
	const struct dt_node *n = v->node;
	if (n->nargs)
		fail(v, "a constant takes no arguments");
	if (n->ntensors != 1 || n->constant >= v->m->constants.len) {
		fail(v, "a constant has one <tensor> and its data");
		return;
	}
	const struct dt_tensor *t = dt_node_tensor(v->m, n, 0);
	int rank, nstride;
	const int64_t *shape = dt_ints_get(v->m, t->shape, &rank);
	const int64_t *stride = dt_ints_get(v->m, t->stride, &nstride);
	int64_t want[DT_MAX_RANK];
	bool contiguous = t->offset == 0 && nstride == rank && rank <= DT_MAX_RANK;
	if (contiguous)
		dt_contiguous_strides(shape, rank, want);
	for (int d = 0; contiguous && d < rank; d++)
		contiguous = shape[d] <= 1 || stride[d] == want[d];
	if (!contiguous)
		fail(v, "a constant's tensor must be contiguous with offset 0 "
			"(its data is row-major)");
	uint64_t size = dt_node_constant(v->m, n)->size;
	if (size != dt_tensor_nbytes(v->m, t))
		fail(v, "the constant has %llu data bytes but its tensor needs %llu",
		     (unsigned long long)size,
		     (unsigned long long)dt_tensor_nbytes(v->m, t));
}

static void check_node(struct verifier *v, uint32_t id, uint32_t pos)
{
	const struct dt_node *n = dt_node_get(v->m, id);
	v->node = n;
	struct input_check ic = {v, pos};
	dt_node_for_each_input(v->m, n, check_input, &ic);
	if (n->kind == DT_NODE_OUTPUT) {
		if (n->next)
			fail(v, "the output node must be the last node");
		return;
	}
	if (n->kind == DT_NODE_PLACEHOLDER && n->nargs)
		fail(v, "a placeholder takes no arguments");
	if (n->kind == DT_NODE_CONSTANT)
		check_constant(v);
	check_sharding(v);
	if (n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN)
		return;
	struct dt_bound_args b;
	if (dt_op_bind(v->m, n, &b, v->d) != DT_OK) {
		v->errors++;
		return;
	}
	if (dt_op_has((enum dt_op)n->op, DT_OPF_COLLECTIVE)) {
		if (v->m->view == DT_VIEW_GLOBAL)
			fail(v, "a global-view graph has no collectives (use dtensor.redistribute)");
		check_collective(v, &b);
	}
	char err[500];
	if (dt_op_is_spmd((enum dt_op)n->op) &&
	    !dt_spmd_args_read(v->m, (enum dt_op)n->op, &b,
			       &(struct dt_spmd_args){0}, err, sizeof err))
		fail(v, "%s", err);
	if (dt_op_is_spmd((enum dt_op)n->op) && v->m->view == DT_VIEW_GLOBAL)
		fail(v, "%s reads the rank's mesh coordinate: a local-view op",
		     dt_op_get((enum dt_op)n->op)->target);
	if (n->op == DT_OP_WAIT && b.arg[0] && b.arg[0]->kind == DT_ARG_NODE) {
		const struct dt_node *in = dt_node_get(v->m, b.arg[0]->v.node);
		if (in->kind != DT_NODE_CALL || in->op == DT_OP_UNKNOWN ||
		    !dt_op_has((enum dt_op)in->op, DT_OPF_COLLECTIVE))
			fail(v, "wait_tensor waits on '%s', which is not a collective",
			     dt_str_get(v->m, in->name));
	}
}

/* Whether node `input` is a collective that v->node reads other than
 * through its wait. */
static void check_collective_input(void *ud, uint32_t input)
{
	struct verifier *v = ud;
	const struct dt_node *n = dt_node_get(v->m, input);
	if (v->node->op != DT_OP_WAIT && n->kind == DT_NODE_CALL &&
	    n->op != DT_OP_UNKNOWN &&
	    dt_op_has((enum dt_op)n->op, DT_OPF_COLLECTIVE))
		fail(v, "uses collective '%s' directly; read it through its wait_tensor",
		     dt_str_get(v->m, n->name));
}

/* A collective's result may only be read by its wait: every node's inputs
 * are checked (no use lists: they would double the memory a big graph's
 * check takes). */
static void check_collective_users(struct verifier *v)
{
	dt_foreach_node(v->m, id)
	{
		v->node = dt_node_get(v->m, id);
		dt_node_for_each_input(v->m, v->node, check_collective_input, v);
	}
	v->node = NULL;
}

/* The value node id reads its memory from (argument 0), or 0. */
static uint32_t first_input(struct verifier *v, uint32_t id)
{
	struct dt_bound_args b;
	const struct dt_node *n = dt_node_get(v->m, id);
	if (dt_op_bind(v->m, n, &b, v->d) != DT_OK || !b.arg[0] ||
	    b.arg[0]->kind != DT_ARG_NODE)
		return 0;
	return b.arg[0]->v.node;
}

/* Whether node id's value may share memory with its first input: a view,
 * a result of a view, or an op that returns its input's memory in
 * PyTorch when it can (reshape, contiguous) or always (_unsafe_view). */
static bool is_alias(struct verifier *v, uint32_t id)
{
	const struct dt_node *n = dt_node_get(v->m, id);
	if (n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN)
		return false;
	if (n->op == DT_OP_GETITEM) {
		uint32_t src = first_input(v, id);
		return src && is_alias(v, src);
	}
	return dt_op_has((enum dt_op)n->op, DT_OPF_VIEW) || n->op == DT_OP_RESHAPE ||
	       n->op == DT_OP_CONTIGUOUS || n->op == DT_OP_UNSAFE_VIEW;
}

/* A value sharing memory with `w` (w itself or a view of it, transitively)
 * that a node after position `at` reads, other than node `skip`; its
 * reader in *reader. 0 when there is none. */
static uint32_t read_after(struct verifier *v, const struct dt_uses *u,
			   uint32_t w, uint32_t skip, uint32_t at,
			   uint32_t *reader)
{
	for (uint32_t k = u->first[w]; k < u->first[w + 1]; k++) {
		uint32_t user = u->list[k];
		if (user == skip)
			continue;
		if (is_alias(v, user)) {
			uint32_t found = read_after(v, u, user, skip, at, reader);
			if (found)
				return found;
		} else if (v->position[user] > at) {
			*reader = user;
			return w;
		}
	}
	return 0;
}

/* dtopt computes an in-place op (ops.def: DT_OPF_INPLACE) out of place,
 * which is PyTorch's result only when nothing observes the write: the
 * memory self lives in (found through the views self comes from) is not a
 * graph input, and no value in it is read after the op. */
static void check_inplace(struct verifier *v)
{
	struct dt_uses u = {0}; /* filled at the first in-place op */
	dt_foreach_node(v->m, id)
	{
		const struct dt_node *n = dt_node_get(v->m, id);
		if (n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN ||
		    !dt_op_has((enum dt_op)n->op, DT_OPF_INPLACE))
			continue;
		v->node = n;
		uint32_t self = first_input(v, id), base = self;
		while (base && is_alias(v, base))
			base = first_input(v, base);
		if (!self || !base)
			continue;
		if (dt_node_get(v->m, base)->kind == DT_NODE_PLACEHOLDER) {
			if (base == self)
				fail(v, "writes graph input '%s' in place (dtopt runs in-place ops only where the write cannot be observed)",
				     dt_node_name(v->m, self));
			else
				fail(v, "writes '%s' in place, a view of graph input '%s' (dtopt runs in-place ops only where the write cannot be observed)",
				     dt_node_name(v->m, self), dt_node_name(v->m, base));
			continue;
		}
		if (!u.first)
			dt_uses_fill(&u, v->m);
		uint32_t reader = 0, seen = read_after(v, &u, base, id, v->position[id], &reader);
		if (seen)
			fail(v, "writes '%s' in place, and '%s' reads %s%s%s afterwards (dtopt runs in-place ops only where the write cannot be observed)",
			     dt_node_name(v->m, self), dt_node_name(v->m, reader),
			     seen == self ? "it" : "'", seen == self ? "" : dt_node_name(v->m, seen),
			     seen == self ? "" : "', which shares its memory,");
	}
	v->node = NULL;
	if (u.first)
		dt_uses_fini(&u);
}

int dt_verify(struct dt_module *m, struct dt_diag *d)
{
	struct verifier v = {.m = m, .d = d};
	v.position = dt_calloc(m->nodes.len, sizeof(uint32_t));
	uint32_t pos = 0, outputs = 0;
	dt_foreach_node(m, id) v.position[id] = ++pos;
	dt_foreach_node(m, id)
	{
		check_node(&v, id, v.position[id]);
		outputs += dt_node_get(m, id)->kind == DT_NODE_OUTPUT;
	}
	v.node = NULL;
	if (outputs == 0) {
		/* Point at the end of the graph: its last node. */
		const struct dt_node *last = m->last ? dt_node_get(m, m->last) : NULL;
		dt_diag_report(d, DT_ERROR, m->file, last ? last->line : 0, NULL,
			       "the graph has no output node%s%s%s",
			       last ? " (it ends with node '" : "",
			       last ? dt_str_get(m, last->name) : "",
			       last ? "')" : "");
		v.errors++;
	}
	if (!v.errors)
		check_collective_users(&v);
	if (!v.errors)
		check_inplace(&v);
	dt_free(v.position);
	return v.errors ? DT_EINPUT : DT_OK;
}
