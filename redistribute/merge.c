// SPDX-License-Identifier: MIT
/* redistribute/merge.c: merging the steps of one redistribution onto
 * declared flattened groups (semantics §4.4, DTensor's
 * _optimize_transform_infos, extended to ordered groups).
 *
 * A run is a maximal sequence of adjacent plain all_gather, all_reduce or
 * reduce_scatter steps whose (src, dst) placements equal the first's, or
 * are sum/avg partials with the first's dst. A run over two or more dims of
 * size > 1 becomes one step on the group whose rank order it produces
 * (gathers over D1 then D2: dims (D2 D1); reduce-scatters: (D1 D2);
 * all_reduce: any order, the row-major group first), found by layout among
 * the module's declared groups. Uneven gathers and scatters stay separate
 * (a flat collective would misplace rows); all_to_all never merges; so
 * DTensor's counts come out, plus ordered groups DTensor cannot flatten.
 *
 * Example, mesh (2,2,2) A B C with group "A C" declared:
 *   P(sum) R P(sum) -> R R R:  A all_reduce, C all_reduce
 *   becomes                    A C all_reduce on group "A C"
 * Without the group: one warning naming it (redistribute:no_group).
 *
 * Time: O(steps · (groups + mesh dims)). */
#include "internal.h"

#include <string.h>

enum miss { MISS_NO_GROUP, MISS_ORDER, MISS_UNEVEN };
static const char *const miss_tags[] = {
	[MISS_NO_GROUP] = "redistribute:no_group",
	[MISS_ORDER] = "redistribute:order",
	[MISS_UNEVEN] = "redistribute:uneven",
};

void dt_redist_warned_fini(struct dt_redist_warned *w)
{
	dt_vec_free(&w->keys);
}

static bool mergeable_kind(enum dt_redist_kind kind)
{
	return kind == DT_REDIST_ALL_GATHER || kind == DT_REDIST_ALL_REDUCE ||
	       kind == DT_REDIST_REDUCE_SCATTER;
}

static bool is_sum_or_avg(const struct dt_placement *p)
{
	return p->kind == DT_PL_PARTIAL &&
	       (p->reduce == DT_REDUCE_SUM || p->reduce == DT_REDUCE_AVG);
}

/* Whether plain step b can join the run that plain step a starts. */
static bool joins_run(const struct dt_redist_step *a,
		      const struct dt_redist_step *b)
{
	if (b->ndims != 1 || !mergeable_kind(b->kind) ||
	    !dt_redist_same_placement(&a->dst, &b->dst))
		return false;
	return dt_redist_same_placement(&a->src, &b->src) ||
	       (is_sum_or_avg(&a->src) && is_sum_or_avg(&b->src));
}

/* The dims of the run in the rank order its kind produces, size-1 dims
 * included; returns their count. */
static int run_dims(const struct dt_redist_step *run, int n, uint8_t *dims,
		    int mesh_ndim)
{
	if (run[0].kind == DT_REDIST_ALL_GATHER) {
		for (int i = 0; i < n; i++)
			dims[i] = run[n - 1 - i].dims[0];
		return n;
	}
	if (run[0].kind == DT_REDIST_REDUCE_SCATTER) {
		for (int i = 0; i < n; i++)
			dims[i] = run[i].dims[0];
		return n;
	}
	int k = 0; /* all_reduce: mesh order */
	for (int d = 0; d < mesh_ndim; d++)
		for (int i = 0; i < n; i++)
			if (run[i].dims[0] == d)
				dims[k++] = (uint8_t)d;
	return k;
}

/* `dims` without its size-1 dims; returns the count. */
static int nontrivial_dims(const struct dt_mesh *mesh, const uint8_t *dims,
			   int n, uint8_t *out)
{
	int k = 0;
	for (int i = 0; i < n; i++)
		if (mesh->shape[dims[i]] > 1)
			out[k++] = dims[i];
	return k;
}

/* Whether (mesh, dims, reason) was warned about; records it if not. */
static bool already_warned(struct dt_redist_warned *w, int mesh,
			   const uint8_t *dims, int n, enum miss why)
{
	if (!w)
		return false;
	uint64_t key = (uint64_t)mesh << 40 | (uint64_t)why << 32;
	for (int i = 0; i < n; i++)
		key |= (uint64_t)(dims[i] + 1) << (4 * i);
	for (uint32_t i = 0; i < w->keys.len; i++)
		if (w->keys.data[i] == key)
			return true;
	dt_vec_push(&w->keys, key);
	return false;
}

static void warn_missed(const struct dt_redist_plan *plan,
			const struct dt_redist_merge_options *opt,
			const struct dt_redist_step *run, int n,
			const uint8_t *dims, int ndims, enum miss why,
			int other_group)
{
	if (!opt->diag ||
	    already_warned(opt->warned, opt->mesh, dims, ndims, why))
		return;
	struct dt_module *m = opt->module;
	char src[128], dst[128], names[96], fix[400];
	dt_placements_print(&plan->src, src, sizeof src);
	dt_placements_print(&plan->dst, dst, sizeof dst);
	dt_mesh_dims_join(m, opt->mesh, dims, ndims, " ", names, sizeof names);
	const char *mesh = dt_str_get(m, m->meshes.data[opt->mesh].name);
	const char *kind = dt_redist_kind_name(run[0].kind);
	if (why == MISS_UNEVEN) {
		int d = run[0].kind == DT_REDIST_ALL_GATHER ? run[0].src_dim
							     : run[0].dst_dim;
		int64_t size = 1;
		for (int i = 0; i < n; i++)
			size *= run[i].group_size;
		dt_diag_report(opt->diag, DT_WARNING, NULL, 0, miss_tags[why],
			       "redistributing %s -> %s on mesh %s: %d %s steps "
			       "over dims (%s) stay separate: tensor dim %d "
			       "does not split evenly over their %lld ranks, "
			       "and one flattened %s would misplace rows",
			       src, dst, mesh, n, kind, names, d,
			       (long long)size, kind);
		return;
	}
	char name[96];
	dt_module_new_group_name(m, opt->mesh, dims, ndims, name, sizeof name);
	snprintf(fix, sizeof fix,
		 "add <group name=\"%s\" mesh=\"%s\" dims=\"%s\"/> or pass "
		 "--create-groups",
		 name, mesh, names);
	if (why == MISS_ORDER) {
		const struct dt_group *g = &m->groups.data[other_group];
		char have[96];
		dt_mesh_dims_join(m, opt->mesh, g->dims, g->ndims, " ", have,
			       sizeof have);
		dt_diag_report(opt->diag, DT_WARNING, NULL, 0, miss_tags[why],
			       "redistributing %s -> %s on mesh %s: %d %s steps "
			       "stay separate: group %s (dims %s) has the wrong "
			       "rank order, this run needs dims (%s) (%s); %s",
			       src, dst, mesh, n, kind, dt_str_get(m, g->name),
			       have, names,
			       run[0].kind == DT_REDIST_ALL_GATHER
				       ? "the dim gathered last is the slowest"
				       : "the dim scattered first is the slowest",
			       fix);
		return;
	}
	dt_diag_report(opt->diag, DT_WARNING, NULL, 0, miss_tags[why],
		       "redistributing %s -> %s on mesh %s: %d %s steps stay "
		       "separate: no group over dims (%s) is declared; %s",
		       src, dst, mesh, n, kind, names, fix);
}

/* The group for a run over `dims` (rank order), declared if allowed; -1
 * after warning. */
static int run_group(const struct dt_redist_plan *plan,
		     const struct dt_redist_merge_options *opt,
		     const struct dt_redist_step *run, int n,
		     const uint8_t *dims, int ndims)
{
	struct dt_module *m = opt->module;
	int g = dt_module_find_group_by_layout(m, opt->mesh, dims, ndims);
	int any = dt_module_find_group_any_order(m, opt->mesh, dims, ndims);
	if (g < 0 && run[0].kind == DT_REDIST_ALL_REDUCE)
		g = any;
	if (g >= 0)
		return g;
	uint8_t wanted[DT_MAX_MESH_DIMS];
	int nwanted = nontrivial_dims(&plan->mesh, dims, ndims, wanted);
	if (opt->create_groups)
		return opt->price_only ? (int)m->groups.len /* its index */
				       : dt_module_declare_group(m, opt->mesh,
								 wanted, nwanted);
	warn_missed(plan, opt, run, n, wanted, nwanted,
		    any >= 0 ? MISS_ORDER : MISS_NO_GROUP, any);
	return -1;
}

/* The run's reduce op and divisor: one op, or sum and the product of the
 * avg dims' sizes when sum meets avg. */
static void run_reduce(const struct dt_redist_step *run, int n,
		       struct dt_redist_step *merged)
{
	bool mixed = false;
	int64_t avg_size = 1;
	for (int i = 0; i < n; i++) {
		mixed |= run[i].src.reduce != run[0].src.reduce;
		if (run[i].src.reduce == DT_REDUCE_AVG)
			avg_size *= run[i].group_size;
	}
	merged->reduce = (enum dt_reduce_op)run[0].src.reduce;
	merged->divisor = 1;
	if (mixed) {
		merged->reduce = DT_REDUCE_SUM;
		merged->src.reduce = DT_REDUCE_SUM;
		merged->divisor = avg_size;
	}
}

/* One step for run[0..n), or false (after a warning where one helps). */
static bool merge_run(const struct dt_redist_plan *plan,
		      const struct dt_redist_merge_options *opt,
		      const struct dt_redist_step *run, int n,
		      struct dt_redist_step *merged)
{
	uint8_t dims[DT_MAX_MESH_DIMS], wanted[DT_MAX_MESH_DIMS];
	int ndims = run_dims(run, n, dims, plan->mesh.ndim);
	int nwanted = nontrivial_dims(&plan->mesh, dims, ndims, wanted);
	if (nwanted < 2)
		return false;
	*merged = run[0];
	merged->ndims = (uint8_t)ndims;
	memcpy(merged->dims, dims, (size_t)ndims);
	merged->group_size = 1;
	for (int i = 0; i < n; i++)
		merged->group_size *= run[i].group_size;
	merged->after = run[n - 1].after;
	dt_redist_step_price(plan, merged);
	if (!merged->even) {
		warn_missed(plan, opt, run, n, wanted, nwanted, MISS_UNEVEN, -1);
		return false;
	}
	merged->group = run_group(plan, opt, run, n, dims, ndims);
	if (merged->group < 0)
		return false;
	if (run[0].kind != DT_REDIST_ALL_GATHER)
		run_reduce(run, n, merged);
	return true;
}

int dt_redist_plan_merge(struct dt_redist_plan *plan,
			 const struct dt_redist_merge_options *opt)
{
	const struct dt_mesh *me = &opt->module->meshes.data[opt->mesh];
	DT_REQUIRE(me->ndim == plan->mesh.ndim &&
		   memcmp(me->shape, plan->mesh.shape,
			  sizeof(me->shape[0]) * me->ndim) == 0);
	struct dt_redist_step *steps = plan->steps.data;
	uint32_t nsteps = plan->steps.len, out = 0;
	int merged_count = 0;
	for (uint32_t i = 0; i < nsteps;) {
		uint32_t j = i + 1;
		if (steps[i].ndims == 1 && mergeable_kind(steps[i].kind))
			while (j < nsteps && joins_run(&steps[i], &steps[j]))
				j++;
		struct dt_redist_step merged;
		if (j - i > 1 &&
		    merge_run(plan, opt, &steps[i], (int)(j - i), &merged)) {
			steps[out++] = merged;
			merged_count++;
		} else {
			memmove(&steps[out], &steps[i],
				(j - i) * sizeof *steps);
			out += j - i;
		}
		i = j;
	}
	plan->steps.len = out;
	return merged_count;
}
