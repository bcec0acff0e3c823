// SPDX-License-Identifier: MIT
/* lower_redistribute.c: the `lower-redistribute` pass turns a global-view
 * graph into the local-view graph one rank runs (or, when every rank gets
 * the same one, the SPMD graph all ranks run):
 *
 *   global (mesh 4, x: f32[8, 16] @ S(0))   local, --rank 1
 *   x = placeholder                     →   x = placeholder        f32[2, 16] @ S(0) of [8, 16]
 *   r = dtensor.redistribute(x) @ R         r.all_gather = all_gather_into_tensor(x, 4, 'world')
 *   y = aten.relu(r)                        r.wait = wait_tensor(r.all_gather)  @ R of [8, 16]
 *                                           y = aten.relu(r.wait)  f32[8, 16] @ R of [8, 16]
 *
 * - Placeholders get their shard's local shape (their <sharding> names it).
 * - Constants (get_attr) are inputs too: replicated (their pin, or R on
 *   the first mesh) they stay as they are; sharded, --rank R keeps the
 *   rank's slice of the data, and SPMD lowering (or a Partial pin)
 *   replicates the constant and redistributes it to its pin
 *   (lower_redistribute_inputs.c).
 * - Each dtensor.redistribute becomes DTensor's plan for it (the planner of
 *   redistribute.h: greedy, or min-cost for shard orders and _S), merged
 *   onto declared flattened groups (semantics §4.4; --create-groups
 *   declares missing ones, else one warning per module and group), each
 *   step as a _c10d_functional collective with its wait and DTensor's
 *   local ops around it (lower_redistribute_plan.c, _steps.c).
 * - A compute node keeps its op. Its output placements are its <sharding>
 *   pin; without a pin it is replicated when all its tensor inputs are,
 *   and otherwise an error (shard-prop, a later pass, will pick them).
 *   Args that state sizes (view/reshape/_unsafe_view/expand sizes, new_*,
 *   full/zeros/ones/empty sizes, *_backward input sizes, …) become the
 *   local output shape; the local result must then be this rank's shard of
 *   the global result under the pin, else "cannot lower X locally: …".
 *   _reshape_alias / as_strided whose strides are view()'s become
 *   aten.reshape first, and a view the local layout cannot serve becomes
 *   a reshape (semantics §6.1): both reshape values, whatever the layout.
 *   mse_loss_backward's mean over a sharded self divides by the global
 *   count: grad · (1/N) and reduction sum (count_globally).
 *   Before anything is lowered, each compute node's pin and its inputs'
 *   placements must be a strategy of its op's sharding rules (relu on S(1)
 *   of S(1), mm of S(1) by S(0) giving P(sum); an op without rules, such as
 *   arange or rand_like whose values depend on the element's position,
 *   only replicated), else it is refused (lower_redistribute_rules.c): a
 *   pin no rule allows would lower to a program computing something else.
 * - Every lowered value carries <sharding mesh placements [order]
 *   global-shape>, so fuse-collectives can check evenness and `dtopt run
 *   --check` can compare it with the global reference.
 * - Single mesh dims have their groups implicitly; the lowered graph
 *   declares each group it uses (a missing one under the dim's name, or a
 *   unique variant of it). Flattened groups are used only when declared,
 *   or with --create-groups.
 * - options->rank >= 0 lowers for that rank (rank="R" on the result); -1
 *   lowers one SPMD program for every rank (semantics §7): an R -> S(d)
 *   chunk becomes dt.local_shard, which cuts the running rank's piece at
 *   its mesh coordinate (for one rank, the same cut is a narrow). An
 *   unevenly sharded value's local shape is the largest shard of any rank,
 *   its rank's shard in the leading part (padding); uneven collective
 *   steps move padded pieces (lower_redistribute_steps.c), and compute
 *   nodes that would read padding into valid results get it zeroed or are
 *   refused (lower_redistribute_padding.c).
 * - The result is view="local". This is the only pass that takes a
 *   global-view graph and yields a local one.
 *
 * Requires: VERIFIED, SHAPES (global). Preserves: both (every value's
 * local metadata is inferred as it is made). Stops at the first error.
 * O(nodes + args + emitted nodes); SPMD mode adds O(mesh size) per value
 * (its padded shape).
 */
#include "lower_redistribute_internal.h"
#include "views.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* Shared helpers (lower_redistribute_internal.h). */

bool dt_lower_coords(struct dt_lower *l, const struct dt_node *at, int mesh,
		     int64_t *coord)
{
	const struct dt_mesh *me = &l->m->meshes.data[mesh];
	int64_t pos = l->rank < 0 ? 0 : dt_mesh_position(me, l->rank);
	if (pos < 0) {
		dt_node_error(l->ctx->diag, l->m, at,
			      "cannot lower '%s' for rank %d: the rank is not "
			      "in mesh '%s'",
			      dt_str_get(l->m, at->name), l->rank,
			      dt_str_get(l->m, me->name));
		return false;
	}
	dt_mesh_coords(me, pos, coord);
	return true;
}

void dt_lower_local_shape(const struct dt_lower *l, int mesh,
			  const struct dt_placements *pl, const int64_t *g,
			  int rank, int64_t *out)
{
	const struct dt_mesh *me = &l->m->meshes.data[mesh];
	int64_t pos = l->rank < 0 ? -1 : dt_mesh_position(me, l->rank);
	dt_shard_shape(me, pl, pos, g, rank, out);
}

uint32_t dt_lower_add_sharding(struct dt_lower *l, int mesh,
			       const struct dt_placements *pl,
			       const int64_t *g, int rank)
{
	struct dt_sharding s = {
		.mesh = (uint16_t)mesh,
		.placements = *pl,
		.global_shape = dt_ints_intern(l->m, g, (size_t)rank),
		.has_global_shape = true,
	};
	return dt_vec_push(&l->m->shardings, s);
}

int dt_lower_dim_group(struct dt_lower *l, int mesh, int dim)
{
	int16_t *slot = &l->dim_group[mesh][dim];
	if (*slot >= 0)
		return *slot;
	struct dt_module *m = l->m;
	uint8_t d = (uint8_t)dim;
	int g = dt_module_find_group_by_layout(m, mesh, &d, 1);
	if (g < 0) {
		char base[112], name[128]; /* copies: interning moves strings */
		snprintf(base, sizeof base, "%.100s",
			 dt_str_get(m, m->meshes.data[mesh].dims[dim]));
		snprintf(name, sizeof name, "%s", base);
		for (int k = 2; dt_module_find_group(m, dt_str_intern(m, name)) >= 0;
		     k++)
			snprintf(name, sizeof name, "%.100s_%d", base, k);
		struct dt_group grp = {.name = dt_str_intern(m, name),
				       .mesh = (uint16_t)mesh, .ndims = 1};
		grp.dims[0] = d;
		g = (int)dt_vec_push(&m->groups, grp);
	}
	*slot = (int16_t)g;
	return g;
}

void dt_lower_copy_name(const struct dt_module *m, uint32_t id, char *buf,
			size_t size)
{
	size_t n;
	const char *s = dt_intern_get(&m->strings, dt_node_get(m, id)->name.id,
				      &n);
	n = n < size ? n : size - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
}

bool dt_lower_replicated(const struct dt_mesh *me,
			 const struct dt_placements *pl)
{
	for (int k = 0; k < pl->ndim; k++)
		if (me->shape[k] > 1 && pl->p[k].kind != DT_PL_REPLICATE)
			return false;
	return true;
}

/* The node holding the local value of old node `input`. */
static uint32_t local_of(void *ud, uint32_t input)
{
	const struct dt_lower *l = ud;
	return input < l->nold ? l->local[input] : input;
}

/* Point every node reference in the args of `id` at the local value. */
static void remap_args(struct dt_lower *l, uint32_t id)
{
	dt_node_map_inputs(l->m, id, local_of, l);
}

/* ------------------------------------------------------------------ */
/* Compute nodes. */

/* What a node's tensor inputs (old ids) say about its placements. */
struct inputs {
	const struct dt_lower *l;
	int mesh;            /* of the first input, -1 = none */
	uint32_t first;      /* the first input, 0 = none */
	uint32_t other_mesh; /* an input on another mesh, 0 = none */
	uint32_t sharded;    /* an input that is not replicated, 0 = none */
	uint32_t no_value;   /* an input without a sharding, 0 = none */
};

static void scan_input(void *ud, uint32_t input)
{
	struct inputs *in = ud;
	const struct dt_module *m = in->l->m;
	uint32_t s = in->l->shard[input];
	if (s == DT_NO_SHARDING) {
		in->no_value = in->no_value ? in->no_value : input;
		return;
	}
	const struct dt_sharding *sh = &m->shardings.data[s];
	if (in->mesh < 0) {
		in->mesh = sh->mesh;
		in->first = input;
	}
	else if (sh->mesh != in->mesh && !in->other_mesh)
		in->other_mesh = input;
	if (!in->sharded &&
	    !dt_lower_replicated(&m->meshes.data[sh->mesh], &sh->placements))
		in->sharded = input;
}

/* The placements of node `id` (old id, args not yet remapped): its pin,
 * a getitem's source's, or replicated when all inputs are. */
static int node_placements(struct dt_lower *l, uint32_t id, int *mesh,
			   struct dt_placements *pl)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	const struct dt_sharding *pin = dt_node_sharding(m, n);
	struct inputs in = {.l = l, .mesh = -1};
	dt_node_for_each_input(m, n, scan_input, &in);
	const char *name = dt_node_name(m, id);
	if (in.no_value) {
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower '%s': its input '%s' has no "
			      "tensor value", name, dt_node_name(m, in.no_value));
		return DT_EINPUT;
	}
	if (in.other_mesh) {
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower '%s': it reads '%s' on mesh '%s' "
			      "and '%s' on mesh '%s'; lowering does not move "
			      "values between meshes",
			      name, dt_node_name(m, in.first),
			      dt_str_get(m, m->meshes.data[in.mesh].name),
			      dt_node_name(m, in.other_mesh),
			      dt_str_get(m, m->meshes.data[m->shardings.data[
				      l->shard[in.other_mesh]].mesh].name));
		return DT_EINPUT;
	}
	if (n->op == DT_OP_GETITEM) {
		/* Result k's placements: the getitem's pin (checked against
		 * the rules of the node it selects from, dt_lower_check_rules),
		 * else the source's. */
		const struct dt_sharding *src = &m->shardings.data[
			l->shard[dt_node_arg(m, n, 0)->v.node]];
		if (pin && pin->mesh != src->mesh) {
			dt_node_error(l->ctx->diag, m, n,
				      "cannot lower '%s': its <sharding> pins "
				      "another mesh than the node it selects "
				      "from", name);
			return DT_EINPUT;
		}
		*mesh = src->mesh;
		*pl = pin ? pin->placements : src->placements;
		return DT_OK;
	}
	if (pin) {
		if (in.mesh >= 0 && in.mesh != pin->mesh) {
			dt_node_error(l->ctx->diag, m, n,
				      "cannot lower '%s': its inputs are on "
				      "mesh '%s' but its <sharding> pins it to "
				      "mesh '%s'; lowering does not move values "
				      "between meshes",
				      name,
				      dt_str_get(m, m->meshes.data[in.mesh].name),
				      dt_str_get(m, m->meshes.data[pin->mesh].name));
			return DT_EINPUT;
		}
		*mesh = pin->mesh;
		*pl = pin->placements;
		return DT_OK;
	}
	if (!in.sharded && (in.mesh >= 0 || m->meshes.len == 1)) {
		*mesh = in.mesh >= 0 ? in.mesh : 0;
		memset(pl, 0, sizeof *pl);
		pl->ndim = m->meshes.data[*mesh].ndim;
		dt_placements_default_order(pl);
		return DT_OK;
	}
	char why[300] = "it has no tensor input and the graph has several meshes";
	if (in.sharded) {
		const struct dt_sharding *s =
			&m->shardings.data[l->shard[in.sharded]];
		char p[160];
		dt_placements_print(&s->placements, p, sizeof p);
		snprintf(why, sizeof why, "its input '%.100s' is %s",
			 dt_node_name(m, in.sharded), p);
	}
	dt_node_error(l->ctx->diag, m, n,
		      "placements of node %s are unknown: pin them with "
		      "<sharding> (shard-prop is a later pass); %s",
		      name, why);
	return DT_EINPUT;
}

/* Set size-list parameter p of node `n` (bound args b) to v[0..k). */
static void set_ints(struct dt_lower *l, const struct dt_bound_args *b, int p,
		     const int64_t *v, int k)
{
	if (!b->arg[p])
		return;
	struct dt_arg *a = &l->m->args.data[b->arg[p] - l->m->args.data];
	a->kind = DT_ARG_INTS;
	a->len = (uint32_t)k;
	a->v.ints = dt_ints_intern(l->m, v, (size_t)k);
}

/* _reshape_alias and as_strided whose stated strides and offset are what
 * view() gives over their input (every _reshape_alias make_fx writes)
 * reshape values: the strides describe the global input's layout, which a
 * rank's input need not have (a gathered value is contiguous). Before any
 * node is lowered, each becomes aten.reshape(self, size), whose local
 * sizes and strides lowering derives from the local input. The others
 * keep their op; their input's global metadata is recorded for
 * strided_view_local. */
static void reshape_strided_views(struct dt_lower *l)
{
	struct dt_module *m = l->m;
	dt_foreach_node(m, id) {
		struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_CALL ||
		    (n->op != DT_OP_RESHAPE_ALIAS && n->op != DT_OP_AS_STRIDED) ||
		    n->nargs < 2 || n->ntensors != 1 ||
		    dt_node_arg(m, n, 0)->kind != DT_ARG_NODE)
			continue;
		const struct dt_node *in =
			dt_node_get(m, dt_node_arg(m, n, 0)->v.node);
		if (in->ntensors != 1)
			continue;
		bool positional = dt_node_arg(m, n, 0)->name.id == 0 &&
				  dt_node_arg(m, n, 1)->name.id == 0;
		if (!positional || !dt_reshape_is_view(m, n)) {
			l->strided_input[id] = *dt_node_tensor(m, in, 0);
			continue;
		}
		n->op = DT_OP_RESHAPE;
		n->target = dt_str_intern(m, dt_op_get(DT_OP_RESHAPE)->target);
		n = dt_node_get(m, id);
		n->nargs = 2;
	}
}

/* A strided view that is not a reshape (reshape_strided_views) reads the
 * storage layout of its global input: it runs only replicated (as the
 * rules say) on an input whose local metadata is the global one. */
static int strided_view_local(struct dt_lower *l, uint32_t id)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	const struct dt_node *in = dt_node_get(m, dt_node_arg(m, n, 0)->v.node);
	const struct dt_tensor *g = &l->strided_input[id];
	if (in->ntensors == 1 && dt_tensor_same(dt_node_tensor(m, in, 0), g))
		return DT_OK;
	dt_node_error(l->ctx->diag, m, n,
		      "cannot lower %s locally: %s states storage strides and "
		      "offsets of its global input, whose layout differs on "
		      "the ranks (sharded or redistributed)",
		      dt_node_name(m, id), dt_op_get((enum dt_op)n->op)->name);
	return DT_EINPUT;
}

/* view and _unsafe_view reshape values. A rank's input may have another
 * layout than the global one (a shard cut from a gathered value, a block
 * transposed locally) that cannot serve the view: then it becomes
 * aten.reshape, which copies where it must. Runs after the size argument
 * is localized. */
static void view_or_reshape(struct dt_lower *l, uint32_t id)
{
	struct dt_module *m = l->m;
	struct dt_node *n = dt_node_get(m, id);
	if ((n->op != DT_OP_VIEW && n->op != DT_OP_UNSAFE_VIEW) || n->nargs < 2 ||
	    dt_node_arg(m, n, 0)->kind != DT_ARG_NODE ||
	    dt_node_arg(m, n, 1)->kind != DT_ARG_INTS)
		return;
	const struct dt_node *in = dt_node_get(m, dt_node_arg(m, n, 0)->v.node);
	if (in->ntensors != 1)
		return;
	const struct dt_tensor *t = dt_node_tensor(m, in, 0);
	int rank, k;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	const int64_t *stride = dt_ints_get(m, t->stride, NULL);
	const int64_t *size = dt_ints_get(m, dt_node_arg(m, n, 1)->v.ints, &k);
	if (k > DT_MAX_RANK)
		return;
	/* One -1 (a size left to infer, kept where the output is
	 * replicated) stands for what the input's elements leave. */
	int64_t numel = 1, in_numel = dt_numel(shape, rank);
	int64_t want[DT_MAX_RANK], out[DT_MAX_RANK];
	int infer = -1;
	for (int d = 0; d < k; d++) {
		want[d] = size[d];
		if (size[d] == -1 && infer < 0)
			infer = d;
		else
			numel *= size[d];
	}
	if (infer >= 0 && numel > 0 && in_numel % numel == 0) {
		want[infer] = in_numel / numel;
		numel = in_numel;
	}
	if (numel != in_numel ||
	    dt_view_strides(shape, stride, rank, want, k, out))
		return;
	n->op = DT_OP_RESHAPE;
	n->target = dt_str_intern(m, dt_op_get(DT_OP_RESHAPE)->target);
}

/* mse_loss_backward's mean scales by 2 / numel(self), which the op would
 * count on the rank's shard (padding included). Where self's local numel
 * is not its global N, the node becomes mse_loss_backward(grad · (1/N),
 * self, target, sum): 2 · (self − target) · grad / N, the global op's
 * value up to rounding, on every rank and shard length (its rows,
 * DT_ROW_GLOBAL_COUNT). Runs once the args are local; the scaled grad
 * keeps grad's sharding. DT_OK or DT_EINPUT after a report. */
static int count_globally(struct dt_lower *l, uint32_t id, const char *name)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	struct dt_bound_args b;
	if (n->op != DT_OP_MSE_LOSS_BACKWARD)
		return DT_OK;
	if (dt_op_bind(m, n, &b, l->ctx->diag) != DT_OK)
		return DT_EINPUT;
	const struct dt_arg *grad = b.arg[0], *self = b.arg[1], *red = b.arg[3];
	if (!grad || grad->kind != DT_ARG_NODE || !self ||
	    self->kind != DT_ARG_NODE || !red || red->kind != DT_ARG_INT ||
	    red->v.i != 1)
		return DT_OK;
	const struct dt_node *x = dt_node_get(m, self->v.node);
	const struct dt_sharding *sh = dt_node_sharding(m, x);
	int rank, grank;
	const int64_t *local = dt_ints_get(m, dt_node_tensor(m, x, 0)->shape,
					   &rank);
	if (!sh || !sh->has_global_shape)
		return DT_OK;
	const int64_t *g = dt_ints_get(m, sh->global_shape, &grank);
	int64_t count = dt_numel(g, grank);
	if (dt_numel(local, rank) == count)
		return DT_OK;
	uint32_t at = (uint32_t)(grad - m->args.data),
		 red_at = (uint32_t)(red - m->args.data), gnode = grad->v.node;
	l->before = id;
	l->base = name;
	l->line = n->line;
	struct dt_arg a[2] = {
	    {.kind = DT_ARG_NODE, .v.node = gnode},
	    {.kind = DT_ARG_FLOAT, .v.f = 1.0 / (double)count}};
	uint32_t z = dt_lower_emit(l, DT_OP_MUL_SCALAR, "scale", a, 2);
	if (!z)
		return DT_EINPUT;
	dt_node_get(m, z)->sharding = dt_node_get(m, gnode)->sharding;
	m->args.data[at].v.node = z;
	m->args.data[red_at].v.i = 2;
	return DT_OK;
}

/* Args that state sizes become the local output shape `out` (of rank k;
 * `g` is the global one). */
static int localize_args(struct dt_lower *l, uint32_t id, const int64_t *g,
			 const int64_t *out, int k)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	struct dt_bound_args b;
	if (dt_op_bind(m, n, &b, l->ctx->diag) != DT_OK)
		return DT_EINPUT;
	switch ((enum dt_op)n->op) {
	case DT_OP_VIEW: case DT_OP_UNSAFE_VIEW: case DT_OP_RESHAPE:
	case DT_OP_EXPAND: case DT_OP_NEW_EMPTY: case DT_OP_NEW_ZEROS:
	case DT_OP_NEW_ONES: case DT_OP_NEW_FULL: case DT_OP_SLICE_BACKWARD:
	case DT_OP_SELECT_BACKWARD:
		set_ints(l, &b, 1, out, k);
		break;
	case DT_OP_FULL: case DT_OP_ZEROS: case DT_OP_ONES: case DT_OP_EMPTY:
		set_ints(l, &b, 0, out, k);
		break;
	case DT_OP_EMPTY_STRIDED: {
		int64_t want[DT_MAX_RANK], local[DT_MAX_RANK];
		int ns = 0;
		const int64_t *st = b.arg[1] && b.arg[1]->kind == DT_ARG_INTS
					    ? dt_ints_get(m, b.arg[1]->v.ints, &ns)
					    : NULL;
		dt_contiguous_strides(g, k, want);
		if (!st || ns != k ||
		    memcmp(st, want, (size_t)k * sizeof *st) != 0) {
			dt_node_error(l->ctx->diag, m, n,
				      "cannot lower %s locally: empty_strided "
				      "with non-contiguous strides states a "
				      "storage layout of the global tensor",
				      dt_node_name(m, id));
			return DT_EINPUT;
		}
		dt_contiguous_strides(out, k, local);
		set_ints(l, &b, 0, out, k);
		set_ints(l, &b, 1, local, k);
		break;
	}
	case DT_OP_EMBEDDING_DENSE_BACKWARD:
		if (b.arg[2])
			m->args.data[b.arg[2] - m->args.data].v.i = out[0];
		break;
	case DT_OP_AS_STRIDED: case DT_OP_RESHAPE_ALIAS:
		return strided_view_local(l, id);
	default:
		break;
	}
	return DT_OK;
}

/* Keeps the first error message of a shape function. */
struct capture {
	char text[600];
};

static void capture_emit(void *ud, const struct dt_diag_entry *e)
{
	struct capture *c = ud;
	if (e->severity == DT_ERROR && !c->text[0])
		snprintf(c->text, sizeof c->text, "%s", e->message);
}

void dt_lower_result_placements(const struct dt_lower *l, uint32_t id,
				const struct dt_placements *pl, uint32_t nres,
				struct dt_placements *out, bool *selected)
{
	const struct dt_module *m = l->m;
	for (uint32_t k = 0; k < nres; k++) {
		out[k] = *pl;
		selected[k] = k == 0;
	}
	for (uint32_t g = l->first_getitem[id]; g; g = l->next_getitem[g]) {
		const struct dt_node *n = dt_node_get(m, g);
		int64_t k = dt_node_arg(m, n, 1)->v.i;
		if (k < 0 || (uint64_t)k >= nres)
			continue;
		selected[k] = true;
		const struct dt_sharding *pin = dt_node_sharding(m, n);
		if (k > 0 && pin)
			out[k] = pin->placements;
	}
}

static int lower_call(struct dt_lower *l, uint32_t id)
{
	struct dt_module *m = l->m;
	if (dt_node_get(m, id)->op == DT_OP_REDISTRIBUTE)
		return dt_lower_redistribute(l, id);
	int mesh;
	struct dt_placements pl;
	if (node_placements(l, id, &mesh, &pl) != DT_OK)
		return DT_EINPUT;
	remap_args(l, id);
	const struct dt_node *n = dt_node_get(m, id);
	char name[256]; /* a copy: interning may move the module's strings */
	dt_lower_copy_name(m, id, name, sizeof name);
	const struct dt_mesh *me = &m->meshes.data[mesh];
	uint32_t nres = n->ntensors;
	if (nres == 0) {
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower %s: it has no tensor metadata", name);
		return DT_EINPUT;
	}
	bool repl = dt_lower_replicated(me, &pl);
	int64_t coord[DT_MAX_MESH_DIMS];
	if (!dt_lower_coords(l, n, mesh, coord))
		return DT_EINPUT;
	/* The global results and this rank's shards of them. */
	struct dt_placements result_pl[DT_MAX_RESULTS];
	bool selected[DT_MAX_RESULTS];
	dt_lower_result_placements(l, id, &pl, nres, result_pl, selected);
	int64_t g[DT_MAX_RESULTS][DT_MAX_RANK], want[DT_MAX_RESULTS][DT_MAX_RANK];
	int rank[DT_MAX_RESULTS];
	uint8_t dtype[DT_MAX_RESULTS];
	for (uint32_t k = 0; k < nres; k++) {
		const struct dt_tensor *t = dt_node_tensor(m, n, (int)k);
		const int64_t *s = dt_ints_get(m, t->shape, &rank[k]);
		memcpy(g[k], s, (size_t)rank[k] * sizeof *s);
		dtype[k] = t->dtype;
		if (!selected[k])
			continue;
		char err[256];
		/* verify checked a pin against result 0 */
		if ((k > 0 || n->op == DT_OP_GETITEM) &&
		    !dt_placements_validate(&result_pl[k], rank[k], err,
					    sizeof err)) {
			dt_node_error(l->ctx->diag, m, n,
				      "cannot lower %s: its placements do not "
				      "fit result %u: %s", name, k, err);
			return DT_EINPUT;
		}
		dt_lower_local_shape(l, mesh, &result_pl[k], g[k], rank[k],
				     want[k]);
	}
	bool strided = n->op == DT_OP_AS_STRIDED || n->op == DT_OP_RESHAPE_ALIAS;
	if ((!repl || strided) &&
	    localize_args(l, id, g[0], want[0], rank[0]) != DT_OK)
		return DT_EINPUT;
	view_or_reshape(l, id);
	if (count_globally(l, id, name) != DT_OK)
		return DT_EINPUT;
	if (l->rank < 0 && dt_lower_padding(l, id, mesh, &pl) != DT_OK)
		return DT_EINPUT;
	struct capture cap = {{0}};
	struct dt_diag quiet;
	dt_diag_init(&quiet);
	quiet.emit = capture_emit;
	quiet.ud = &cap;
	struct dt_shape_ctx c;
	int rank_shown = l->rank >= 0 ? l->rank : dt_mesh_device(me, 0);
	if (dt_infer_node(m, id, &quiet, &c) != DT_OK) {
		char prefix[300];
		snprintf(prefix, sizeof prefix, "node '%s': ", name);
		const char *msg = cap.text;
		if (strncmp(msg, prefix, strlen(prefix)) == 0)
			msg += strlen(prefix);
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower %s locally on rank %d: %s", name,
			      rank_shown, msg);
		return DT_EINPUT;
	}
	for (uint32_t k = 0; k < nres && k < c.nout; k++) {
		int r;
		const int64_t *got = dt_ints_get(m, c.out[k].shape, &r);
		if (!selected[k] || (c.out[k].dtype == dtype[k] && r == rank[k] &&
		    memcmp(got, want[k], (size_t)r * sizeof *got) == 0))
			continue;
		char have[160], gl[160], w[160], p[160], which[32] = "";
		dt_int_list_print(got, r, have, sizeof have);
		dt_int_list_print(g[k], rank[k], gl, sizeof gl);
		dt_int_list_print(want[k], rank[k], w, sizeof w);
		dt_placements_print(&result_pl[k], p, sizeof p);
		if (nres > 1)
			snprintf(which, sizeof which, " %u", k);
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower %s locally: on rank %d its local "
			      "result%s would be %s %s, but that rank's shard "
			      "of the global %s %s under %s is %s %s (is its "
			      "<sharding> pin right?)",
			      name, rank_shown, which,
			      dt_dtype_name((enum dt_dtype)c.out[k].dtype), have,
			      dt_dtype_name((enum dt_dtype)dtype[k]), gl, p,
			      dt_dtype_name((enum dt_dtype)dtype[k]), w);
		return DT_EINPUT;
	}
	if (c.nout != nres) {
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower %s locally: it has %u results "
			      "locally but %u globally", name, c.nout, nres);
		return DT_EINPUT;
	}
	dt_node_set_tensors(m, id, c.out, c.nout);
	uint32_t s = dt_lower_add_sharding(l, mesh, &pl, g[0], rank[0]);
	dt_node_get(m, id)->sharding = s;
	l->shard[id] = s;
	return dt_lower_pack_pieces(l, id);
}

/* ------------------------------------------------------------------ */

static int run_lower(struct dt_pass_ctx *ctx)
{
	struct dt_module *m = ctx->m;
	if (m->view != DT_VIEW_GLOBAL) {
		dt_diag_report(ctx->diag, DT_ERROR, m->file, 1, NULL,
			       "lower-redistribute takes a global-view graph "
			       "(view=\"global\"); this one is already local");
		return DT_EINPUT;
	}
	int rank = ctx->options->rank;
	if (rank < -1) {
		dt_diag_report(ctx->diag, DT_ERROR, m->file, 0, NULL,
			       "lower-redistribute: rank %d is not a rank (-1 "
			       "lowers one graph for every rank)", rank);
		return DT_EINPUT;
	}
	dt_lower_split_constants(m, rank);
	struct dt_lower l = {
		.ctx = ctx,
		.m = m,
		.rank = rank,
		.topo = ctx->options->topology ? ctx->options->topology
					       : &m->topology,
		.nold = m->nodes.len,
	};
	l.local = dt_arena_alloc(ctx->scratch, l.nold * sizeof *l.local);
	l.shard = dt_arena_alloc(ctx->scratch, l.nold * sizeof *l.shard);
	l.dim_group = dt_arena_alloc(ctx->scratch,
				     (m->meshes.len + 1) * sizeof *l.dim_group);
	memset(l.shard, 0xff, l.nold * sizeof *l.shard);
	memset(l.dim_group, 0xff, (m->meshes.len + 1) * sizeof *l.dim_group);
	for (uint32_t id = 0; id < l.nold; id++)
		l.local[id] = id;
	l.strided_input = dt_arena_alloc(ctx->scratch,
					 l.nold * sizeof *l.strided_input);
	reshape_strided_views(&l);
	l.first_getitem = dt_arena_alloc(ctx->scratch, l.nold * sizeof(uint32_t));
	l.next_getitem = dt_arena_alloc(ctx->scratch, l.nold * sizeof(uint32_t));
	dt_foreach_node(m, id) {
		const struct dt_node *n = dt_node_get(m, id);
		if (n->op != DT_OP_GETITEM || n->nargs < 2 || dt_node_arg(m, n, 0)->kind != DT_ARG_NODE ||
		    dt_node_arg(m, n, 1)->kind != DT_ARG_INT)
			continue;
		uint32_t src = dt_node_arg(m, n, 0)->v.node;
		l.next_getitem[id] = l.first_getitem[src];
		l.first_getitem[src] = id;
	}
	int rc = dt_lower_check_rules(&l);
	int32_t was = m->rank;
	m->rank = rank; /* the shapes of the dt ops emitted read it */
	uint32_t next;
	for (uint32_t id = m->first; id && rc == DT_OK; id = next) {
		next = dt_node_get(m, id)->next;
		switch ((enum dt_node_kind)dt_node_get(m, id)->kind) {
		case DT_NODE_PLACEHOLDER: rc = dt_lower_placeholder(&l, id); break;
		case DT_NODE_CALL: rc = lower_call(&l, id); break;
		case DT_NODE_OUTPUT: remap_args(&l, id); break;
		case DT_NODE_CONSTANT: rc = dt_lower_constant(&l, id); break;
		}
	}
	dt_redist_warned_fini(&l.warned);
	if (rc != DT_OK) {
		m->rank = was;
		return rc;
	}
	m->view = DT_VIEW_LOCAL;
	return DT_OK;
}

const struct dt_pass dt_pass_lower_redistribute = {
	.name = "lower-redistribute",
	.help = "turn a global-view graph into the local view of one rank "
		"(--rank R) or of every rank: redistributions become "
		"collectives and local ops",
	.requires = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.preserves = DT_PROP_VERIFIED | DT_PROP_SHAPES,
	.run = run_lower,
};
