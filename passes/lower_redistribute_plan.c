// SPDX-License-Identifier: MIT
/* lower_redistribute_plan.c: one dtensor.redistribute of the
 * `lower-redistribute` pass: its input, target and mesh checked, the
 * planner's steps (redistribute.h; greedy or min-cost, merged onto
 * declared groups, the merge's warnings placed at the node), refused when
 * the plan would move other elements than uneven _S placements hold or
 * divide an integer tensor; each step emitted (lower_redistribute_steps.c)
 * and checked against the local shape its placements give; the last
 * step's node takes the redistribute's name and metadata. */
#include "lower_redistribute_internal.h"

#include <stdio.h>
#include <string.h>

/* "S(0) R -> R R", for messages. */
static void change_text(const struct dt_placements *src,
			const struct dt_placements *dst, char *buf, size_t n)
{
	char a[160], b[160];
	dt_placements_print(src, a, sizeof a);
	dt_placements_print(dst, b, sizeof b);
	snprintf(buf, n, "%s -> %s", a, b);
}

static bool has_strided(const struct dt_placements *pl)
{
	for (int k = 0; k < pl->ndim; k++)
		if (pl->p[k].kind == DT_PL_STRIDED_SHARD)
			return true;
	return false;
}

/* Whether placements a and b give every rank the same elements of a
 * tensor of the plan's shape; else the first differing tensor dim in *dim. */
static bool same_shards(const struct dt_redist_plan *plan,
			const struct dt_placements *a,
			const struct dt_placements *b, int *dim)
{
	const struct dt_mesh *me = &plan->mesh;
	int64_t coord[DT_MAX_MESH_DIMS];
	bool same = true;
	for (int d = 0; d < plan->rank && same; d++) {
		int64_t len = plan->shape[d], na, nb;
		int64_t *ia = dt_malloc((size_t)(len + 1) * sizeof *ia);
		int64_t *ib = dt_malloc((size_t)(len + 1) * sizeof *ib);
		for (int64_t pos = 0; pos < me->size && same; pos++) {
			dt_mesh_coords(me, pos, coord);
			dt_shard_indices(a, me->shape, coord, d, len, ia, &na);
			dt_shard_indices(b, me->shape, coord, d, len, ib, &nb);
			same = na == nb &&
			       memcmp(ia, ib, (size_t)na * sizeof *ia) == 0;
		}
		dt_free(ia);
		dt_free(ib);
		*dim = d;
	}
	return same;
}

/* The planner plans a _S as the shard order it stands for (DTensor's
 * conversion); for uneven lengths the two hold different elements, and a
 * lowering of the plan would move the wrong rows. */
static int check_strided(struct dt_lower *l, const struct dt_node *n,
			 const char *name, const struct dt_redist_plan *plan)
{
	if (!plan->steps.len)
		return DT_OK;
	const struct dt_placements *given[2] = {&plan->src, &plan->dst};
	const struct dt_placements *planned[2] = {
		&plan->steps.data[0].before,
		&plan->steps.data[plan->steps.len - 1].after};
	for (int i = 0; i < 2; i++) {
		int d = 0;
		if (!has_strided(given[i]) ||
		    same_shards(plan, given[i], planned[i], &d))
			continue;
		char order[160], change[340];
		dt_placements_print_order(planned[i], &plan->mesh,
					  &l->m->strings, order, sizeof order);
		change_text(&plan->src, &plan->dst, change, sizeof change);
		dt_node_error(l->ctx->diag, l->m, n,
			      "cannot lower redistribute '%s' (%s): the "
			      "_S placements of its %s split the %lld elements "
			      "of tensor dim %d unevenly, so ranks hold other "
			      "elements than under the shard order the plan "
			      "uses (order=\"%s\"); only even _S shards lower",
			      name, change, i ? "target" : "source",
			      (long long)plan->shape[d], d, order);
		return DT_EINPUT;
	}
	return DT_OK;
}

/* Whether a step divides an integer tensor (DTensor would turn it into a
 * float tensor; the global graph keeps its dtype). */
static bool divides(const struct dt_redist_step *s)
{
	return s->group_size > 1 && s->divisor > 1;
}

/* Name node `id` `name` (the name index follows, when built). */
static void rename_node(struct dt_module *m, uint32_t id, dt_str name)
{
	dt_node_get(m, id)->name = name;
	if (name.id < m->node_by_name.len)
		m->node_by_name.data[name.id] = id;
}

/* The planner's merge warnings carry no place: give them the
 * redistribute's. */
struct placed {
	struct dt_diag *to;
	const char *file;
	uint32_t line;
};

static void place_emit(void *ud, const struct dt_diag_entry *e)
{
	struct placed *p = ud;
	dt_diag_report(p->to, e->severity, p->file, p->line, e->tag, "%s",
		       e->message);
}

int dt_lower_redistribute(struct dt_lower *l, uint32_t id)
{
	struct dt_module *m = l->m;
	const struct dt_node *n = dt_node_get(m, id);
	/* Copies: emitting moves the module's nodes, shardings and strings. */
	char name[256];
	dt_lower_copy_name(m, id, name, sizeof name);
	const struct dt_arg *in = dt_node_arg(m, n, 0);
	DT_REQUIRE(in->kind == DT_ARG_NODE && in->v.node < l->nold);
	uint32_t x = in->v.node;
	if (l->shard[x] == DT_NO_SHARDING) {
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower redistribute '%s': its input '%s' "
			      "has no tensor value", name,
			      dt_str_get(m, dt_node_get(m, x)->name));
		return DT_EINPUT;
	}
	const struct dt_sharding src = m->shardings.data[l->shard[x]];
	if (!dt_node_sharding(m, n)) {
		dt_node_error(l->ctx->diag, m, n,
			      "redistribute '%s' has no <sharding> child "
			      "naming its target placements", name);
		return DT_EINPUT;
	}
	const struct dt_sharding dst_copy = *dt_node_sharding(m, n);
	const struct dt_sharding *dst = &dst_copy;
	if (dst->mesh != src.mesh) {
		dt_node_error(l->ctx->diag, m, n,
			      "redistribute '%s' moves '%s' from mesh '%s' to "
			      "mesh '%s'; lowering redistributes within one "
			      "mesh only",
			      name, dt_str_get(m, dt_node_get(m, x)->name),
			      dt_str_get(m, m->meshes.data[src.mesh].name),
			      dt_str_get(m, m->meshes.data[dst->mesh].name));
		return DT_EINPUT;
	}
	const struct dt_tensor *t = dt_node_tensor(m, n, 0);
	struct dt_redist_request req = {
		.mesh = &m->meshes.data[src.mesh],
		.topology = l->topo,
		.dtype = (enum dt_dtype)t->dtype,
		.src = src.placements,
		.dst = dst->placements,
		.mode = (enum dt_redist_mode)l->ctx->options->redistribute,
	};
	const int64_t *g = dt_ints_get(m, src.global_shape, &req.rank);
	memcpy(req.shape, g, (size_t)req.rank * sizeof *g);
	char err[400], change[340];
	struct dt_redist_plan plan;
	if (dt_redist_plan_init(&plan, &req, err, sizeof err) != DT_OK) {
		change_text(&src.placements, &dst->placements, change,
			    sizeof change);
		dt_node_error(l->ctx->diag, m, n,
			      "cannot lower redistribute '%s' of '%s' (%s): %s",
			      name, dt_str_get(m, dt_node_get(m, x)->name),
			      change, err);
		return DT_EINPUT;
	}
	if (check_strided(l, n, name, &plan) != DT_OK) {
		dt_redist_plan_fini(&plan);
		return DT_EINPUT;
	}
	struct placed placed = {l->ctx->diag, m->file, n->line};
	struct dt_diag here;
	dt_diag_init(&here);
	here.emit = place_emit;
	here.ud = &placed;
	here.remarks = l->ctx->diag->remarks;
	dt_redist_plan_merge(&plan, &(struct dt_redist_merge_options){
		.module = m,
		.mesh = src.mesh,
		.create_groups = l->ctx->options->create_groups,
		.diag = &here,
		.warned = &l->warned,
	});
	int64_t coord[DT_MAX_MESH_DIMS];
	int status = dt_lower_coords(l, n, src.mesh, coord) ? DT_OK : DT_EINPUT;
	l->before = id;
	l->base = name;
	l->line = n->line;
	uint32_t v = l->local[x];
	bool emitted = false;
	for (uint32_t i = 0; status == DT_OK && i < plan.steps.len; i++) {
		const struct dt_redist_step *s = &plan.steps.data[i];
		if (s->group_size == 1)
			continue;
		if (divides(s) && !dt_dtype_is_float(plan.dtype)) {
			change_text(&src.placements, &dst->placements, change,
				    sizeof change);
			dt_node_error(l->ctx->diag, m, dt_node_get(m, id),
				      "cannot lower redistribute '%s' (%s): "
				      "step %u divides by %lld, which %s "
				      "values cannot hold",
				      name, change, i + 1, (long long)s->divisor,
				      dt_dtype_name(plan.dtype));
			status = DT_EINPUT;
			break;
		}
		uint32_t next =
		    dt_lower_emit_step(l, &plan, s, src.mesh, coord, v);
		if (!next) {
			status = DT_EINPUT;
			break;
		}
		if (next != v) {
			int64_t want[DT_MAX_RANK], got[DT_MAX_RANK];
			dt_lower_local_shape(l, src.mesh, &s->after, plan.shape,
					     plan.rank, want);
			dt_lower_shape_of(m, next, got);
			if (memcmp(want, got, (size_t)plan.rank * sizeof *want)) {
				char w[160], h[160], p[160];
				dt_int_list_print(want, plan.rank, w, sizeof w);
				dt_int_list_print(got, plan.rank, h, sizeof h);
				dt_placements_print(&s->after, p, sizeof p);
				dt_node_error(l->ctx->diag, m, dt_node_get(m, id),
					      "internal error: step %u (%s) of "
					      "redistribute '%s' made %s, but %s "
					      "holds %s", i + 1,
					      dt_redist_kind_name(s->kind), name,
					      h, p, w);
				status = DT_EINPUT;
				break;
			}
			dt_node_get(m, next)->sharding = dt_lower_add_sharding(
				l, src.mesh, &s->after, plan.shape, plan.rank);
			emitted = true;
		}
		v = next;
	}
	if (status == DT_OK) {
		uint32_t sh = dt_lower_add_sharding(l, src.mesh,
						    &dst->placements,
						    plan.shape, plan.rank);
		/* The last step's node holds the target (as written, _S
		 * kept); without one the input's node holds it too. */
		if (emitted) {
			/* ... and takes the redistribute's name and metadata,
			 * so the value keeps what it has in the global graph. */
			struct dt_node *r = dt_node_get(m, id), *last = dt_node_get(m, v);
			dt_str mine = last->name;
			last->metas = r->metas;
			last->nmetas = r->nmetas;
			last->sharding = sh;
			rename_node(m, v, r->name);
			rename_node(m, id, mine);
		}
		l->local[id] = v;
		l->shard[id] = sh;
		dt_graph_remove(m, id);
	}
	dt_redist_plan_fini(&plan);
	return status;
}
