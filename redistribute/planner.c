// SPDX-License-Identifier: MIT
/* redistribute/planner.c: the redistribution planner's front (semantics §3):
 * checks a request, writes `_S` placements as shard orders, chooses between
 * DTensor's greedy plan (default shard orders, here) and its min-cost search
 * (redistribute/search.c), and fills in what each step carries: kind,
 * tensor dims, reduce op, evenness, bytes and modelled cost. Merging onto
 * flattened groups is redistribute/merge.c.
 *
 * Greedy example, mesh (2,2,2), tensor (8,8,8), S(0) S(0) S(0) -> S(1) S(1)
 * S(1): C S(0)->R all_gather, B S(0)->R all_gather, A S(0)->S(1)
 * all_to_all, B R->S(1) chunk, C R->S(1) chunk: 3 collectives, as DTensor.
 *
 * Time: greedy O(mesh dims^2); each step's evenness O(mesh dims · lengths),
 * lengths being the distinct shard lengths (at most 2^dims + 1). */
#include "internal.h"

#include <stdarg.h>
#include <string.h>

static const char *const kind_names[DT_REDIST_NKINDS] = {
	[DT_REDIST_ALL_GATHER] = "all_gather",
	[DT_REDIST_ALL_REDUCE] = "all_reduce",
	[DT_REDIST_REDUCE_SCATTER] = "reduce_scatter",
	[DT_REDIST_ALL_TO_ALL] = "all_to_all",
	[DT_REDIST_CHUNK] = "chunk",
	[DT_REDIST_PARTITION] = "partition",
	[DT_REDIST_PERMUTE] = "all_permute",
	[DT_REDIST_TRANSFER] = "all_to_all_v",
};

const char *dt_redist_kind_name(enum dt_redist_kind kind)
{
	DT_REQUIRE(kind >= 0 && kind < DT_REDIST_NKINDS);
	return kind_names[kind];
}

int dt_redist_kind_comm(enum dt_redist_kind kind)
{
	switch (kind) {
	case DT_REDIST_ALL_GATHER: return DT_COMM_ALL_GATHER;
	case DT_REDIST_ALL_REDUCE: return DT_COMM_ALL_REDUCE;
	case DT_REDIST_REDUCE_SCATTER: return DT_COMM_REDUCE_SCATTER;
	case DT_REDIST_ALL_TO_ALL: return DT_COMM_ALL_TO_ALL;
	case DT_REDIST_PERMUTE: return DT_COMM_ALL_TO_ALL;
	case DT_REDIST_TRANSFER: return DT_COMM_ALL_TO_ALL;
	default: return -1;
	}
}

bool dt_redist_mode_parse(const char *text, enum dt_redist_mode *mode)
{
	if (!strcmp(text, "dtensor"))
		*mode = DT_REDIST_MODE_DTENSOR;
	else if (!strcmp(text, "min-memory"))
		*mode = DT_REDIST_MODE_MIN_MEMORY;
	else if (!strcmp(text, "auto"))
		*mode = DT_REDIST_MODE_AUTO;
	else
		return false;
	return true;
}

bool dt_redist_is_shard(const struct dt_placement *p)
{
	return p->kind == DT_PL_SHARD || p->kind == DT_PL_STRIDED_SHARD;
}

bool dt_redist_same_placement(const struct dt_placement *a,
			      const struct dt_placement *b)
{
	if (a->kind != b->kind)
		return false;
	switch ((enum dt_placement_kind)a->kind) {
	case DT_PL_REPLICATE: return true;
	case DT_PL_SHARD: return a->dim == b->dim;
	case DT_PL_STRIDED_SHARD:
		return a->dim == b->dim && a->split_factor == b->split_factor;
	case DT_PL_PARTIAL: return a->reduce == b->reduce;
	}
	return false;
}

bool dt_redist_ops_conflict(int a, int b)
{
	bool a_linear = a == DT_REDUCE_SUM || a == DT_REDUCE_AVG;
	bool b_linear = b == DT_REDUCE_SUM || b == DT_REDUCE_AVG;
	return a != b && !(a_linear && b_linear);
}


/* ------------------------------------------------------------------ */
/* What a step carries. */

/* Product of the sizes of the mesh dims that shard (DTensor's num_shards). */
static int64_t shard_count(const struct dt_mesh *mesh,
			   const struct dt_placements *pl)
{
	int64_t n = 1;
	for (int m = 0; m < pl->ndim; m++)
		if (dt_redist_is_shard(&pl->p[m]))
			n *= mesh->shape[m];
	return n;
}

/* Adds v to the set vals[0..*n) unless present. */
static void add_length(int64_t *vals, int *n, int cap, int64_t v)
{
	for (int i = 0; i < *n; i++)
		if (vals[i] == v)
			return;
	DT_REQUIRE(*n < cap);
	vals[(*n)++] = v;
}

/* Whether, for every rank, the length of tensor dim `d` under `pl` with the
 * mesh dims in `skip` (a bit mask) left out divides by `n`. Walks the
 * distinct lengths level by level: chunking v over k ranks gives at most
 * the chunk size, one remainder and 0. */
static bool splits_evenly(const struct dt_redist_plan *plan,
			  const struct dt_placements *pl, uint32_t skip,
			  int d, int64_t n)
{
	enum { CAP = 2 * (1 << DT_MAX_MESH_DIMS) + 2 };
	int64_t vals[CAP], next[CAP];
	int nvals = 1;
	vals[0] = plan->shape[d];
	/* Mesh dims sharding d, in shard order. */
	int seq[DT_MAX_MESH_DIMS], k = 0;
	for (int pos = 0; pos < DT_MAX_MESH_DIMS; pos++)
		for (int m = 0; m < pl->ndim; m++)
			if (dt_redist_is_shard(&pl->p[m]) && pl->p[m].dim == d &&
			    pl->order_pos[m] == pos && !(skip & (1u << m)))
				seq[k++] = m;
	for (int i = 0; i < k; i++) {
		int64_t ranks = plan->mesh.shape[seq[i]];
		int nnext = 0;
		for (int v = 0; v < nvals; v++) {
			int64_t len = vals[v];
			if (len == 0) {
				add_length(next, &nnext, CAP, 0);
				continue;
			}
			int64_t chunk = (len + ranks - 1) / ranks;
			int64_t full = len / chunk, rest = len - full * chunk;
			add_length(next, &nnext, CAP, chunk);
			if (rest)
				add_length(next, &nnext, CAP, rest);
			if (full + (rest != 0) < ranks)
				add_length(next, &nnext, CAP, 0);
		}
		memcpy(vals, next, (size_t)nnext * sizeof *vals);
		nvals = nnext;
	}
	for (int v = 0; v < nvals; v++)
		if (vals[v] % n)
			return false;
	return true;
}

void dt_redist_step_price(const struct dt_redist_plan *plan,
			  struct dt_redist_step *s)
{
	uint32_t changed = 0;
	for (int i = 0; i < s->ndims; i++)
		changed |= 1u << s->dims[i];
	s->even = (s->src_dim < 0 || splits_evenly(plan, &s->before, changed,
						   s->src_dim, s->group_size)) &&
		  (s->dst_dim < 0 || splits_evenly(plan, &s->before, changed,
						   s->dst_dim, s->group_size));
	/* Local work, and a step over one rank (lowering emits nothing for
	 * it), cost nothing. */
	int comm = dt_redist_kind_comm(s->kind);
	if (comm < 0 || s->group_size == 1) {
		s->bytes = 0;
		s->cost_us = 0;
		return;
	}
	double local = (double)dt_numel(plan->shape, plan->rank) *
		       dt_dtype_size(plan->dtype) /
		       (double)shard_count(&plan->mesh, &s->before);
	s->bytes = comm == DT_COMM_ALL_GATHER ? local * (double)s->group_size
					      : local;
	s->cost_us = s->kind == DT_REDIST_PERMUTE
			     ? dt_permute_cost(&plan->topology, &plan->mesh,
					       s->bytes)
			     : dt_comm_cost(&plan->topology, &plan->mesh,
					    s->dims, s->ndims,
					    (enum dt_comm_kind)comm, s->bytes);
}

void dt_redist_step_fill(const struct dt_redist_plan *plan,
			 struct dt_redist_step *s, int m,
			 const struct dt_placements *before,
			 const struct dt_placements *after)
{
	const struct dt_placement *from = &before->p[m], *to = &after->p[m];
	memset(s, 0, sizeof *s);
	s->ndims = 1;
	s->dims[0] = (uint8_t)m;
	s->group = -1;
	s->src = *from;
	s->dst = *to;
	s->src_dim = dt_redist_is_shard(from) ? from->dim : -1;
	s->dst_dim = dt_redist_is_shard(to) ? to->dim : -1;
	s->group_size = plan->mesh.shape[m];
	s->divisor = 1;
	s->before = *before;
	s->after = *after;
	bool shard_from = dt_redist_is_shard(from);
	bool shard_to = dt_redist_is_shard(to);
	if (from->kind == DT_PL_PARTIAL) {
		DT_REQUIRE(to->kind != DT_PL_PARTIAL);
		s->kind = shard_to ? DT_REDIST_REDUCE_SCATTER
				   : DT_REDIST_ALL_REDUCE;
		s->reduce = (enum dt_reduce_op)from->reduce;
	} else if (shard_from) {
		DT_REQUIRE(to->kind != DT_PL_PARTIAL);
		s->kind = shard_to ? DT_REDIST_ALL_TO_ALL : DT_REDIST_ALL_GATHER;
	} else if (shard_to) {
		s->kind = DT_REDIST_CHUNK;
	} else {
		DT_REQUIRE(to->kind == DT_PL_PARTIAL);
		s->kind = DT_REDIST_PARTITION;
		s->reduce = (enum dt_reduce_op)to->reduce;
		if (to->reduce == DT_REDUCE_SUM)
			s->divisor = s->group_size;
	}
	dt_redist_step_price(plan, s);
}

/* ------------------------------------------------------------------ */
/* Checking and normalizing a request. */

static int check_placements(const struct dt_redist_request *req,
			     const struct dt_placements *pl, const char *which,
			     char *err, size_t errlen)
{
	if (pl->ndim != req->mesh->ndim)
		return dt_fail_message(err, errlen,
			    "%s has %d placements but the mesh has %d dims",
			    which, pl->ndim, req->mesh->ndim);
	char why[200];
	if (!dt_placements_validate(pl, req->rank, why, errlen ? sizeof why : 0))
		return dt_fail_message(err, errlen, "%s: %s", which, why);
	return DT_OK;
}

/* DTensor's _maybe_convert_StridedShard_to_shard_order: walking mesh dims
 * right to left, a S/_S with split factor sf goes at the first position of
 * its tensor dim's order where the sizes of the mesh dims before it
 * multiply to sf. Rewrites every _S as S with that order. */
static int strided_to_order(struct dt_placements *pl,
			     const struct dt_mesh *mesh, const char *which,
			     char *err, size_t errlen)
{
	uint8_t order[DT_MAX_RANK][DT_MAX_MESH_DIMS];
	int len[DT_MAX_RANK] = {0};
	if (!dt_placements_has_default_order(pl))
		return dt_fail_message(err, errlen,
			    "%s mixes _S placements with a shard order; a _S "
			    "already states its order",
			    which);
	for (int m = pl->ndim - 1; m >= 0; m--) {
		const struct dt_placement *p = &pl->p[m];
		if (!dt_redist_is_shard(p))
			continue;
		int64_t sf = p->kind == DT_PL_STRIDED_SHARD ? p->split_factor : 1;
		int d = p->dim, at = -1;
		int64_t before = 1;
		for (int i = 0; i <= len[d]; i++) {
			if (before == sf) {
				at = i;
				break;
			}
			if (i < len[d])
				before *= mesh->shape[order[d][i]];
		}
		if (at < 0)
			return dt_fail_message(err, errlen,
				    "%s: _S(%d,%d) on mesh dim %d matches no "
				    "shard order (its split factor must be the "
				    "product of the sizes of some mesh dims to "
				    "its right sharding dim %d first)",
				    which, d, (int)sf, m, d);
		memmove(&order[d][at + 1], &order[d][at],
			(size_t)(len[d] - at));
		order[d][at] = (uint8_t)m;
		len[d]++;
	}
	for (int d = 0; d < DT_MAX_RANK; d++)
		for (int i = 0; i < len[d]; i++) {
			struct dt_placement *p = &pl->p[order[d][i]];
			p->kind = DT_PL_SHARD;
			p->split_factor = 0;
			pl->order_pos[order[d][i]] = (uint8_t)i;
		}
	return DT_OK;
}

static bool has_strided(const struct dt_placements *pl)
{
	for (int m = 0; m < pl->ndim; m++)
		if (pl->p[m].kind == DT_PL_STRIDED_SHARD)
			return true;
	return false;
}

static int check_request(const struct dt_redist_request *req, char *err,
			 size_t errlen)
{
	if (req->rank < 0 || req->rank > DT_MAX_RANK)
		return dt_fail_message(err, errlen, "tensor rank %d is out of range 0..%d",
			    req->rank, DT_MAX_RANK);
	for (int d = 0; d < req->rank; d++)
		if (req->shape[d] < 0)
			return dt_fail_message(err, errlen, "tensor dim %d has length %lld",
				    d, (long long)req->shape[d]);
	int status = check_placements(req, &req->src, "src", err, errlen);
	if (status == DT_OK)
		status = check_placements(req, &req->dst, "dst", err, errlen);
	if (status != DT_OK)
		return status;
	for (int m = 0; m < req->mesh->ndim; m++) {
		const struct dt_placement *a = &req->src.p[m], *b = &req->dst.p[m];
		bool from_shard = dt_redist_is_shard(a);
		bool new_op = a->kind == DT_PL_PARTIAL && a->reduce != b->reduce;
		if (b->kind != DT_PL_PARTIAL || !(from_shard || new_op))
			continue;
		if (errlen == 0) /* priced only: no message to name them in */
			return DT_EINPUT;
		char sa[32], sb[32];
		struct dt_placements one = {.ndim = 1};
		one.p[0] = *a;
		dt_placements_print(&one, sa, sizeof sa);
		one.p[0] = *b;
		dt_placements_print(&one, sb, sizeof sb);
		if (from_shard)
			return dt_fail_message(err, errlen,
				    "mesh dim %d: %s -> %s is not a "
				    "redistribution (a shard cannot become "
				    "partial)",
				    m, sa, sb);
		return dt_fail_message(err, errlen,
				       "mesh dim %d: %s -> %s changes the "
				       "reduce op of a partial value",
				       m, sa, sb);
	}
	return DT_OK;
}

/* ------------------------------------------------------------------ */
/* DTensor's greedy plan. */

/* Whether the mesh dims before `m` shard tensor dim d alike in a and b. */
static bool same_sharding_before(const struct dt_placements *a,
				 const struct dt_placements *b, int m, int d)
{
	for (int i = 0; i < m; i++) {
		bool sa = a->p[i].kind == DT_PL_SHARD && a->p[i].dim == d;
		bool sb = b->p[i].kind == DT_PL_SHARD && b->p[i].dim == d;
		if (sa != sb)
			return false;
	}
	return true;
}

static void push_greedy_step(struct dt_redist_plan *plan,
			     struct dt_placements *cur, int m,
			     const struct dt_placement *to)
{
	struct dt_placements before = *cur;
	cur->p[m] = *to;
	dt_placements_default_order(cur);
	struct dt_redist_step s;
	dt_redist_step_fill(plan, &s, m, &before, cur);
	dt_vec_push(&plan->steps, s);
}

/* 1. If src shards (on more than one rank), walk mesh dims last to first:
 * a dim bound for S(d) whose earlier dims shard d differently in src and
 * dst goes to R first, any other dim straight to its target. 2. Walk first
 * to last and move every remaining dim to its target. */
static void plan_greedy(struct dt_redist_plan *plan)
{
	struct dt_placements cur = plan->src;
	const struct dt_placements *dst = &plan->dst;
	const struct dt_placement replicate = {.kind = DT_PL_REPLICATE};
	if (shard_count(&plan->mesh, &cur) > 1)
		for (int m = cur.ndim - 1; m >= 0; m--) {
			const struct dt_placement *to = &dst->p[m];
			if (to->kind == DT_PL_SHARD &&
			    !same_sharding_before(&cur, dst, m, to->dim))
				to = &replicate;
			if (!dt_redist_same_placement(&cur.p[m], to))
				push_greedy_step(plan, &cur, m, to);
		}
	for (int m = 0; m < cur.ndim; m++)
		if (!dt_redist_same_placement(&cur.p[m], &dst->p[m]))
			push_greedy_step(plan, &cur, m, &dst->p[m]);
}

/* ------------------------------------------------------------------ */

bool dt_redist_prefer_min_memory(const struct dt_redist_plan *dtensor,
				 const struct dt_redist_plan *mm)
{
	if (mm->method != DT_REDIST_MIN_MEMORY)
		return false;
	double low = dt_redist_local_bytes(mm, &mm->src);
	double b = dt_redist_local_bytes(mm, &mm->dst);
	low = b > low ? b : low;
	return dt_redist_plan_cost(mm) <= 1.2 * dt_redist_plan_cost(dtensor) ||
	       dt_redist_plan_peak(dtensor) > 2 * low;
}

/* --redistribute=auto: both plans, the preferred one kept. */
static int plan_auto(struct dt_redist_plan *plan,
		     const struct dt_redist_request *req, char *err,
		     size_t errlen)
{
	struct dt_redist_request r = *req;
	struct dt_redist_plan mm;
	r.mode = DT_REDIST_MODE_DTENSOR;
	int status = dt_redist_plan_init(plan, &r, err, errlen);
	r.mode = DT_REDIST_MODE_MIN_MEMORY;
	if (status == DT_OK)
		status = dt_redist_plan_init(&mm, &r, err, errlen);
	if (status != DT_OK)
		return status;
	if (dt_redist_prefer_min_memory(plan, &mm)) {
		dt_redist_plan_fini(plan);
		*plan = mm;
	} else {
		dt_redist_plan_fini(&mm);
	}
	return DT_OK;
}

int dt_redist_plan_init(struct dt_redist_plan *plan,
			const struct dt_redist_request *req, char *err,
			size_t errlen)
{
	if (req->mode == DT_REDIST_MODE_AUTO)
		return plan_auto(plan, req, err, errlen);
	memset(plan, 0, sizeof *plan);
	int status = check_request(req, err, errlen);
	if (status != DT_OK)
		return status;
	plan->mesh = *req->mesh;
	if (req->topology)
		plan->topology = *req->topology;
	else
		dt_topology_default(&plan->topology);
	plan->dtype = req->dtype;
	plan->rank = req->rank;
	memcpy(plan->shape, req->shape, sizeof plan->shape);
	plan->src = req->src;
	plan->dst = req->dst;

	if (req->mode == DT_REDIST_MODE_MIN_MEMORY &&
	    dt_redist_min_memory(plan)) {
		plan->method = DT_REDIST_MIN_MEMORY;
		return DT_OK;
	}
	bool strided = has_strided(&req->src) || has_strided(&req->dst);
	if (!strided && dt_placements_has_default_order(&req->src) &&
	    dt_placements_has_default_order(&req->dst)) {
		plan->method = DT_REDIST_GREEDY;
		plan_greedy(plan);
		return DT_OK;
	}
	plan->method = DT_REDIST_MIN_COST;
	struct dt_placements src = req->src, dst = req->dst;
	if (has_strided(&src))
		status = strided_to_order(&src, req->mesh, "src", err, errlen);
	if (status == DT_OK && has_strided(&dst))
		status = strided_to_order(&dst, req->mesh, "dst", err, errlen);
	if (status == DT_OK)
		status = dt_redist_search(plan, &src, &dst, req->searches, err,
					  errlen);
	if (status != DT_OK)
		dt_redist_plan_fini(plan);
	return status;
}

void dt_redist_plan_fini(struct dt_redist_plan *plan)
{
	dt_vec_free(&plan->steps);
}

double dt_redist_local_bytes(const struct dt_redist_plan *plan,
			     const struct dt_placements *pl)
{
	int64_t coord[DT_MAX_MESH_DIMS], shape[DT_MAX_RANK], most = 0;
	/* Where the device at coordinate 0 holds a largest shard of every
	 * dim (dt_shard_origin_largest: all but some strided shards) it
	 * holds a largest one of the tensor, each tensor dim depending only
	 * on the mesh dims sharding it. So one device, not the whole mesh
	 * (a 999992 x 3 mesh took seconds per call). */
	int64_t devices = 1;
	for (int d = 0; d < plan->rank; d++)
		if (!dt_shard_origin_largest(pl, plan->mesh.shape, d,
					     plan->shape[d]))
			devices = plan->mesh.size;
	for (int64_t pos = 0; pos < devices; pos++) {
		dt_mesh_coords(&plan->mesh, pos, coord);
		dt_redist_local_shape(plan, pl, coord, shape);
		int64_t n = dt_numel(shape, plan->rank);
		most = n > most ? n : most;
	}
	return (double)most * dt_dtype_size(plan->dtype);
}

double dt_redist_plan_peak(const struct dt_redist_plan *plan)
{
	double peak = dt_redist_local_bytes(plan, &plan->src);
	for (uint32_t i = 0; i < plan->steps.len; i++) {
		double b = dt_redist_local_bytes(plan,
						 &plan->steps.data[i].after);
		peak = b > peak ? b : peak;
	}
	return peak;
}

double dt_redist_plan_cost(const struct dt_redist_plan *plan)
{
	double total = 0;
	for (uint32_t i = 0; i < plan->steps.len; i++)
		total += plan->steps.data[i].cost_us;
	return total;
}

double dt_redist_step_latency(const struct dt_redist_plan *plan,
			      const struct dt_redist_step *s)
{
	int comm = dt_redist_kind_comm(s->kind);
	if (s->cost_us <= 0 || (comm != DT_COMM_ALL_GATHER &&
				comm != DT_COMM_REDUCE_SCATTER &&
				comm != DT_COMM_ALL_REDUCE))
		return 0;
	return dt_comm_cost(&plan->topology, &plan->mesh, s->dims, s->ndims,
			    (enum dt_comm_kind)comm, 0);
}

int dt_redist_plan_count(const struct dt_redist_plan *plan,
			 enum dt_redist_kind kind)
{
	int n = 0;
	for (uint32_t i = 0; i < plan->steps.len; i++)
		n += plan->steps.data[i].kind == kind &&
		     plan->steps.data[i].group_size > 1;
	return n;
}

int dt_redist_plan_collectives(const struct dt_redist_plan *plan)
{
	int n = 0;
	for (uint32_t i = 0; i < plan->steps.len; i++)
		n += dt_redist_kind_comm(plan->steps.data[i].kind) >= 0 &&
		     plan->steps.data[i].group_size > 1;
	return n;
}

void dt_redist_local_shape(const struct dt_redist_plan *plan,
			   const struct dt_placements *pl,
			   const int64_t *coord, int64_t *shape)
{
	for (int d = 0; d < plan->rank; d++)
		shape[d] = dt_shard_length(pl, plan->mesh.shape, coord, d,
					   plan->shape[d]);
}

void dt_redist_step_logical_shape(const struct dt_redist_plan *plan,
				  const struct dt_redist_step *s,
				  const int64_t *coord, int64_t *shape)
{
	struct dt_placements pl = s->before;
	for (int i = 0; i < s->ndims; i++)
		pl.p[s->dims[i]] = (struct dt_placement){.kind = DT_PL_REPLICATE};
	dt_redist_local_shape(plan, &pl, coord, shape);
}
