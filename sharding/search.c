// SPDX-License-Identifier: MIT
/* sharding/search.c: the search over a node's strategy space
 * (sharding/space.c): the costs of input placements, the filters a
 * strategy passes, the exhaustive search (the oracle) and the search
 * toward a pin. A strategy picks one expanded row per mesh dim; its cost
 * is the sum over inputs of the planner's plan cost (redistribute.h) from
 * the current placements to the ones the strategy needs. The
 * priority-queue search is sharding/pq.c.
 *
 *   mm on (2,2,2), a S(0) R R, b R R R: 512 strategies; the cheapest,
 *   S(0) R R, costs nothing.
 *
 * Time: exhaustive O(rows^dims · (tensors + mesh dims)), plan costs cached
 * per (input, placements). */
#include "cost_model.h"
#include "redistribute.h"
#include "search_internal.h"

#include <math.h>
#include <string.h>

static const struct dt_rule_tensor *tensor_of(const struct dt_shard_space *s,
					      uint32_t t)
{
	return &s->rules->tensors.data[t];
}

/* ------------------------------------------------------------------ */
/* Costs. */

bool dt_shard_unflatten(const struct dt_placements *pl,
			const int64_t *mesh_shape, const int64_t *shape,
			int rank, struct dt_shard_unflat *out)
{
	/* The first tensor dim split by _S, all of one factor, and by S
	 * only on mesh dims before them (a view's nested _S, §6.1: the S
	 * shards cut the pieces; an S after a _S is a shard order, §2). */
	int d = -1;
	int64_t pieces = 0;
	for (int e = 0; e < rank && d < 0; e++) {
		bool strided = false, one = true, nested = true;
		int64_t outer = 1;
		for (int m = 0; m < pl->ndim; m++) {
			const struct dt_placement *p = &pl->p[m];
			if (!dt_shard_is_sharding(p) || p->dim != e)
				continue;
			if (p->kind == DT_PL_SHARD) {
				nested &= !strided;
				outer *= mesh_shape[m];
				continue;
			}
			one &= !strided || p->split_factor * outer == pieces;
			strided = true;
			pieces = p->split_factor * outer;
		}
		if (strided && nested && one && pieces >= 2)
			d = e;
	}
	if (d < 0 || rank + 1 > DT_MAX_RANK || shape[d] % pieces != 0 ||
	    !dt_placements_has_default_order(pl))
		return false;
	*out = (struct dt_shard_unflat){.dim = d, .pieces = pieces,
					.rank = rank + 1};
	for (int k = 0, j = 0; k < rank; k++) {
		if (k == d) {
			out->shape[j++] = pieces;
			out->shape[j++] = shape[k] / pieces;
		} else {
			out->shape[j++] = shape[k];
		}
	}
	out->sharded = out->gathered = out->flat = *pl;
	for (int m = 0; m < pl->ndim; m++) {
		struct dt_placement *u = &out->sharded.p[m];
		if (u->kind == DT_PL_STRIDED_SHARD && u->dim == d) {
			*u = (struct dt_placement){.kind = DT_PL_SHARD,
						   .dim = (int8_t)(d + 1)};
			out->gathered.p[m] = out->flat.p[m] =
			    (struct dt_placement){.kind = DT_PL_REPLICATE};
		} else if (dt_shard_is_sharding(u) && u->dim > d) {
			u->dim++;
			out->gathered.p[m].dim++;
		}
	}
	dt_placements_default_order(&out->sharded);
	dt_placements_default_order(&out->gathered);
	dt_placements_default_order(&out->flat);
	return true;
}

bool dt_shard_unflatten_alike(const struct dt_shard_unflat *u,
			      const struct dt_placements *pl,
			      const int64_t *mesh_shape, const int64_t *shape,
			      int rank, struct dt_shard_unflat *out)
{
	return dt_shard_unflatten(pl, mesh_shape, shape, rank, out) && out->dim == u->dim &&
	       out->pieces == u->pieces;
}

/* Step s of plan joins the bucket of its key: the latency it leaves to
 * the bucket (0 when it pays its own, dt_shard_lowering's rule), the key
 * added to *keys. */
static double join_bucket(const struct dt_redist_plan *plan,
			  const struct dt_redist_step *s,
			  struct dt_shard_move_keys *keys)
{
	struct dt_shard_bucket_key k = {
	    .kind = (uint8_t)dt_redist_kind_comm(s->kind),
	    .ndims = s->ndims,
	    .dtype = (uint8_t)plan->dtype,
	    .reduce = s->kind == DT_REDIST_ALL_GATHER ? DT_REDUCE_SUM
						      : (uint8_t)s->reduce,
	    .latency_us = dt_redist_step_latency(plan, s),
	};
	memcpy(k.dims, s->dims, s->ndims);
	if (k.latency_us <= 0 || keys->n == DT_SHARD_MOVE_KEYS)
		return 0;
	for (int j = 0; j < keys->n; j++)
		if (dt_shard_bucket_key_equal(&keys->key[j], &k))
			return 0;
	keys->key[keys->n++] = k;
	return k.latency_us;
}

/* The most per-rank bytes plan's steps, as lower-redistribute emits them
 * (passes/lower_redistribute_steps.c), hold at once besides the plan's
 * source and result, each step's input let go once the step has read it
 * (the source too: its last reader is the move): per step its input and
 * its result, an all_gather on a dim past 0 then its gathered buffer and
 * the cat of it, a reduce_scatter on a dim past 0 its input and the cat
 * of it it sends, an all_to_all the same on both sides. */
static double transient_bytes(const struct dt_redist_plan *plan)
{
	double most = 0;
	for (uint32_t k = 0; k < plan->steps.len; k++) {
		const struct dt_redist_step *s = &plan->steps.data[k];
		if (s->group_size <= 1)
			continue;
		double in = dt_redist_local_bytes(plan, &s->before),
		       out = dt_redist_local_bytes(plan, &s->after),
		       held = in + out;
		if (s->kind == DT_REDIST_ALL_GATHER && s->src_dim > 0)
			held = fmax(held, 2 * out);
		else if (s->kind == DT_REDIST_REDUCE_SCATTER && s->dst_dim > 0)
			held = fmax(held, 2 * in);
		else if (s->kind == DT_REDIST_ALL_TO_ALL)
			held = fmax(held, fmax(s->dst_dim > 0 ? 2 * in : 0,
					       s->src_dim > 0 ? 2 * out : 0));
		most = fmax(most, held);
	}
	double ends = dt_redist_local_bytes(plan, &plan->src) +
		      dt_redist_local_bytes(plan, &plan->dst);
	return most > ends ? most - ends : 0;
}

double dt_shard_move_cost(const struct dt_mesh *mesh,
			  const struct dt_topology *topology,
			  const struct dt_rule_tensor *t,
			  const struct dt_placements *src,
			  const struct dt_placements *dst,
			  const struct dt_shard_lowering *low)
{
	struct dt_shard_unflat u, w;
	if (dt_shard_unflatten(src, mesh->shape, t->shape, t->rank, &u)) {
		struct dt_rule_tensor wide = *t;
		wide.rank = (uint8_t)u.rank;
		memcpy(wide.shape, u.shape, sizeof u.shape);
		if (dt_shard_unflatten_alike(&u, dst, mesh->shape, t->shape,
					     t->rank, &w))
			return dt_shard_move_cost(mesh, topology, &wide,
						  &u.sharded, &w.sharded, low);
		/* A shard never becomes partial (semantics §3), not even
		 * through the gathered value. */
		for (int m = 0; m < src->ndim; m++)
			if (dt_shard_is_sharding(&src->p[m]) &&
			    dst->p[m].kind == DT_PL_PARTIAL)
				return INFINITY;
		double gather = dt_shard_move_cost(mesh, topology, &wide,
						   &u.sharded, &u.gathered,
						   low);
		if (dt_placements_equal(&u.flat, dst))
			return gather;
		double held = low && low->transient ? *low->transient : 0;
		gather += dt_shard_move_cost(mesh, topology, t, &u.flat, dst,
					     low);
		if (low && low->transient && held > *low->transient)
			*low->transient = held;
		return gather;
	}
	struct dt_redist_request req = {
	    .mesh = mesh,
	    .topology = topology,
	    .dtype = (enum dt_dtype)t->dtype,
	    .rank = t->rank,
	    .src = *src,
	    .dst = *dst,
	    .mode = low ? (enum dt_redist_mode)low->mode : DT_REDIST_MODE_DTENSOR,
	    .searches = low ? low->searches : NULL,
	};
	memcpy(req.shape, t->shape, sizeof req.shape);
	/* Only whether a plan exists counts here: no message is written. */
	struct dt_redist_plan plan;
	if (dt_redist_plan_init(&plan, &req, NULL, 0) != DT_OK)
		return INFINITY;
	if (low && low->merge)
		dt_redist_plan_merge(&plan, low->merge);
	double cost = dt_redist_plan_cost(&plan);
	if (low && low->transient)
		*low->transient = transient_bytes(&plan);
	for (uint32_t k = 0; low && low->bucketed && k < plan.steps.len; k++)
		cost -= join_bucket(&plan, &plan.steps.data[k], low->keys);
	/* DTensor's greedy order can pass through placements that are not
	 * valid (R -> P(sum) on one dim while another is still P(max)), which
	 * lowering refuses: such a plan gets nowhere. */
	for (uint32_t k = 0; k < plan.steps.len && cost < INFINITY; k++)
		if (!dt_placements_validate(&plan.steps.data[k].after, t->rank,
					    NULL, 0))
			cost = INFINITY;
	dt_redist_plan_fini(&plan);
	return cost;
}

/* From input i's given placements to `target` (both in their own form). */
static double plan_cost(struct dt_shard_space *s, uint32_t i,
			const struct dt_placements *target)
{
	const struct dt_placements *cur = &s->given.data[i];
	if (dt_placements_equal(cur, target))
		return 0;
	s->plans++;
	return dt_shard_move_cost(&s->mesh, &s->topology,
				  dt_rules_input(s->rules, i), cur, target,
				  NULL);
}

/* The placements of input i in state `st` (its ndim + 1 bytes), in
 * their own form. */
static void state_placements(const struct dt_shard_space *s, uint32_t i,
			     const uint8_t *st, struct dt_placements *out)
{
	int ndim = s->mesh.ndim;
	if (st[ndim]) {
		*out = s->given.data[i];
		return;
	}
	memset(out, 0, sizeof *out);
	out->ndim = (uint8_t)ndim;
	const struct dt_placement *c = &s->cand.data[s->cand_first.data[i]];
	for (int m = 0; m < ndim; m++)
		out->p[m] = c[st[m]];
	dt_placements_default_order(out);
	if (s->strided)
		dt_shard_nested_form(&s->mesh, out, false);
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static void cache_grow(struct dt_shard_space *s);

/* Cost of input i in state bytes `st`, cached. */
double dt_shard_input_state_cost(struct dt_shard_space *s, uint32_t i,
				 const uint8_t *st)
{
	int ndim = s->mesh.ndim;
	uint64_t dims = 0;
	for (int m = 0; m < ndim; m++)
		dims |= (uint64_t)st[m] << (8 * m);
	uint32_t tag = (i << 1 | st[ndim]) + 1;
	if (2 * (s->cache_used + 1) > s->cache_input.len)
		cache_grow(s);
	uint32_t mask = s->cache_input.len - 1;
	uint32_t h = (uint32_t)hash64(dims ^ (uint64_t)tag << 40) & mask;
	while (s->cache_input.data[h]) {
		if (s->cache_input.data[h] == tag &&
		    s->cache_dims.data[h] == dims)
			return s->cache_cost.data[h];
		h = (h + 1) & mask;
	}
	struct dt_placements target;
	state_placements(s, i, st, &target);
	double cost = plan_cost(s, i, &target);
	s->cache_input.data[h] = tag;
	s->cache_dims.data[h] = dims;
	s->cache_cost.data[h] = cost;
	s->cache_used++;
	return cost;
}

static void cache_grow(struct dt_shard_space *s)
{
	uint32_t old = s->cache_input.len, cap = old ? 2 * old : 64;
	uint32_t *tags = dt_malloc(old * sizeof *tags + 1);
	uint64_t *dims = dt_malloc(old * sizeof *dims + 1);
	double *costs = dt_malloc(old * sizeof *costs + 1);
	if (old) {
		memcpy(tags, s->cache_input.data, old * sizeof *tags);
		memcpy(dims, s->cache_dims.data, old * sizeof *dims);
		memcpy(costs, s->cache_cost.data, old * sizeof *costs);
	}
	s->cache_input.len = s->cache_dims.len = s->cache_cost.len = 0;
	dt_vec_grow(&s->cache_input, cap);
	dt_vec_grow(&s->cache_dims, cap);
	dt_vec_grow(&s->cache_cost, cap);
	memset(s->cache_input.data, 0, cap * sizeof *tags);
	for (uint32_t k = 0; k < old; k++) {
		if (!tags[k])
			continue;
		uint32_t h =
		    (uint32_t)hash64(dims[k] ^ (uint64_t)tags[k] << 40) &
		    (cap - 1);
		while (s->cache_input.data[h])
			h = (h + 1) & (cap - 1);
		s->cache_input.data[h] = tags[k];
		s->cache_dims.data[h] = dims[k];
		s->cache_cost.data[h] = costs[k];
	}
	dt_free(tags);
	dt_free(dims);
	dt_free(costs);
}

/* Sum over active inputs, in input order (both searches add the same way,
 * so equal strategies get bit-equal costs). */
double dt_shard_state_cost(struct dt_shard_space *s, const uint8_t *st)
{
	uint32_t stride = (uint32_t)s->mesh.ndim + 1;
	double total = 0;
	for (uint32_t i = 0; i < s->rules->nin; i++)
		if (dt_shard_input_active(s, i))
			total +=
			    dt_shard_input_state_cost(s, i, &st[i * stride]);
	return total;
}

uint32_t dt_shard_state_changes(const struct dt_shard_space *s,
				const uint8_t *st)
{
	uint32_t n = 0;
	for (uint32_t k = 0; k < s->state_bytes; k++)
		n += st[k] != s->start.data[k];
	return n;
}

double dt_shard_input_cost(struct dt_shard_space *s, uint32_t i,
			   const struct dt_placements *target)
{
	uint8_t st[DT_MAX_MESH_DIMS + 1];
	int ndim = s->mesh.ndim;
	struct dt_placements dflt = *target, rows = *target;
	dt_placements_default_order(&dflt);
	if (s->strided)
		dt_shard_nested_form(&s->mesh, &rows, true);
	bool cached = dt_placements_equal(&dflt, target);
	for (int m = 0; m < ndim && cached; m++) {
		int c = dt_shard_cand_index(s, i, &rows.p[m]);
		cached = c >= 0;
		st[m] = (uint8_t)c;
	}
	st[ndim] = 0;
	return cached ? dt_shard_input_state_cost(s, i, st)
		      : plan_cost(s, i, target);
}

/* ------------------------------------------------------------------ */
/* Strategies. */

/* Whether two mesh dims hold partial values of ops that do not commute
 * (any pair but sum with avg). */
static bool partials_conflict(const struct dt_placements *pl)
{
	int op = -1;
	for (int m = 0; m < pl->ndim; m++) {
		const struct dt_placement *p = &pl->p[m];
		if (p->kind != DT_PL_PARTIAL)
			continue;
		bool linear =
		    p->reduce == DT_REDUCE_SUM || p->reduce == DT_REDUCE_AVG;
		bool seen_linear = op == DT_REDUCE_SUM || op == DT_REDUCE_AVG;
		if (op >= 0 && op != p->reduce && !(linear && seen_linear))
			return true;
		op = p->reduce;
	}
	return false;
}

/* Tensor dim d of pl sharded both by a view's block row (S: the merged
 * dim's outer pieces) and by one strided row (_S(d,P): an inner dim
 * behind outer dims of product P), semantics §6.1: valid when every S
 * mesh dim comes first in shard order, so that each rank's S chunk holds
 * whole outer rows; the _S then counts the pieces of that chunk, its
 * factor P divided by the S shards (dp x tp attention: `[S(0), _S(0,4)]`
 * holds the batch on dp and the heads on tp of a merged batch x heads dim).
 * Adjusts pl's factors; false when not valid. */
static bool nest_strided(const struct dt_shard_space *s, const uint32_t *rows,
			 struct dt_placements *pl, int d)
{
	int last_plain = -1, first_strided = DT_MAX_MESH_DIMS;
	uint32_t origin = DT_SHARD_NO_ORIGIN;
	int64_t outer = 1;
	for (int m = 0; m < pl->ndim; m++) {
		const struct dt_placement *p = &pl->p[m];
		if (!dt_shard_is_sharding(p) || p->dim != d)
			continue;
		if (!(s->row_flags.data[rows[m]] & DT_ROW_STRIDED)) {
			if (p->kind != DT_PL_SHARD)
				return false;
			last_plain = m;
			outer *= s->mesh.shape[m];
			continue;
		}
		uint32_t o = s->row_origin.data[rows[m]];
		if ((origin != DT_SHARD_NO_ORIGIN && o != origin) ||
		    p->kind != DT_PL_STRIDED_SHARD)
			return false;
		origin = o;
		first_strided = m < first_strided ? m : first_strided;
	}
	if (last_plain > first_strided)
		return false;
	for (int m = 0; m < pl->ndim; m++) {
		struct dt_placement *p = &pl->p[m];
		if (p->kind != DT_PL_STRIDED_SHARD || p->dim != d ||
		    !(s->row_flags.data[rows[m]] & DT_ROW_STRIDED))
			continue;
		if (p->split_factor % outer != 0)
			return false;
		p->split_factor = (int32_t)(p->split_factor / outer);
		if (p->split_factor == 1)
			p->kind = DT_PL_SHARD;
	}
	return true;
}

/* The placements of the strategy `rows` into s->strategy, and whether it
 * passes the filters of semantics §6 step 3. */
bool dt_shard_build_strategy(struct dt_shard_space *s, const uint32_t *rows)
{
	int ndim = s->mesh.ndim;
	const struct dt_rules *r = s->rules;
	s->strategy.len = 0;
	dt_vec_grow(&s->strategy, s->width);
	struct dt_placements *pl = s->strategy.data;
	for (uint32_t t = 0; t < s->width; t++) {
		if (t >= r->nout && !dt_shard_input_active(s, t - r->nout)) {
			pl[t] = s->current.data[t - r->nout];
			continue;
		}
		memset(&pl[t], 0, sizeof pl[t]);
		pl[t].ndim = (uint8_t)ndim;
		for (int m = 0; m < ndim; m++)
			pl[t].p[m] = dt_shard_space_row(s, rows[m])[t];
		dt_placements_default_order(&pl[t]);
	}
	for (uint32_t t = 0; t < s->width; t++) {
		if (t >= r->nout && !dt_shard_input_active(s, t - r->nout))
			continue;
		const struct dt_rule_tensor *ten = tensor_of(s, t);
		if (partials_conflict(&pl[t]))
			return false;
		for (int d = 0; d < ten->rank; d++) {
			int64_t shards = 1;
			uint8_t flags = 0;
			bool one_origin = true;
			uint32_t origin = DT_SHARD_NO_ORIGIN;
			for (int m = 0; m < ndim; m++) {
				if (!dt_shard_is_sharding(&pl[t].p[m]) ||
				    pl[t].p[m].dim != d)
					continue;
				shards *= s->mesh.shape[m];
				flags |= s->row_flags.data[rows[m]];
				uint32_t o = s->row_origin.data[rows[m]];
				one_origin &= origin == DT_SHARD_NO_ORIGIN || o == origin;
				origin = o;
			}
			if ((flags & DT_ROW_STRIDED) && !one_origin &&
			    !nest_strided(s, rows, &pl[t], d))
				return false;
			if (shards == 1)
				continue;
			if (ten->shape[d] < shards)
				return false;
			if (!(flags &
			      (DT_ROW_EVEN | DT_ROW_NONEMPTY | DT_ROW_NO_UNIT)))
				continue;
			struct dt_shard_lengths len;
			dt_shard_lengths(&pl[t], s->mesh.shape, d,
					 ten->shape[d], &len);
			if (((flags & DT_ROW_EVEN) && len.min != len.max) ||
			    ((flags & DT_ROW_NONEMPTY) && len.min == 0) ||
			    ((flags & DT_ROW_NO_UNIT) && len.unit))
				return false;
		}
	}
	if (r->inplace && r->nin && r->nout &&
	    !dt_placements_equal(&pl[0], &s->current.data[0]))
		return false;
	return !s->has_pin || dt_placements_equal(&pl[0], &s->pin);
}

/* The inputs' state of strategy `rows` into st (state_bytes). */
static void strategy_state(const struct dt_shard_space *s, const uint32_t *rows,
			   uint8_t *st)
{
	int ndim = s->mesh.ndim;
	uint32_t nin = s->rules->nin;
	memset(st, 0, s->state_bytes);
	for (uint32_t i = 0; i < nin; i++) {
		uint8_t *si = &st[i * (uint32_t)(ndim + 1)];
		if (!dt_shard_input_active(s, i))
			continue;
		for (int m = 0; m < ndim; m++)
			si[m] = s->row_cand.data[rows[m] * nin + i];
	}
}

static uint64_t strategy_index(const struct dt_shard_space *s,
			       const uint32_t *rows)
{
	uint64_t index = 0;
	for (int m = 0; m < s->mesh.ndim; m++)
		index = index * s->nrows + rows[m];
	return index;
}

/* Fill choice c from the strategy just built into s->strategy. */
void dt_shard_fill_choice(struct dt_shard_space *s, struct dt_shard_choice *c,
			  const uint32_t *rows, const uint8_t *st, double cost)
{
	c->found = true;
	memcpy(c->rows, rows, (size_t)s->mesh.ndim * sizeof *rows);
	c->index = strategy_index(s, rows);
	c->cost = cost;
	c->changes = dt_shard_state_changes(s, st);
	c->placements.len = 0;
	dt_vec_grow(&c->placements, s->width);
	memcpy(c->placements.data, s->strategy.data,
	       s->width * sizeof *s->strategy.data);
	c->state.len = 0;
	dt_vec_grow(&c->state, s->state_bytes);
	memcpy(c->state.data, st, s->state_bytes);
}

void dt_shard_choice_fini(struct dt_shard_choice *c)
{
	dt_vec_free(&c->placements);
	dt_vec_free(&c->state);
}

void dt_shard_choice_copy(struct dt_shard_choice *a,
			  const struct dt_shard_choice *b)
{
	a->found = b->found;
	memcpy(a->rows, b->rows, sizeof a->rows);
	a->index = b->index;
	a->cost = b->cost;
	a->changes = b->changes;
	a->placements.len = 0;
	dt_vec_grow(&a->placements, b->placements.len);
	memcpy(a->placements.data, b->placements.data,
	       b->placements.len * sizeof *b->placements.data);
	a->state.len = 0;
	dt_vec_grow(&a->state, b->state.len);
	memcpy(a->state.data, b->state.data, b->state.len);
}

/* The search order of two states: cost, changes, bytes. */
int dt_shard_compare_states(double ca, uint32_t na, const uint8_t *sa,
			    double cb, uint32_t nb, const uint8_t *sb,
			    uint32_t bytes)
{
	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (na != nb)
		return na < nb ? -1 : 1;
	return memcmp(sa, sb, bytes);
}

int dt_shard_choice_compare(const struct dt_shard_choice *a,
			    const struct dt_shard_choice *b)
{
	uint32_t bytes =
	    a->state.len < b->state.len ? a->state.len : b->state.len;
	int c =
	    dt_shard_compare_states(a->cost, a->changes, a->state.data, b->cost,
				    b->changes, b->state.data, bytes);
	if (c)
		return c;
	return a->index < b->index ? -1 : a->index > b->index;
}

uint64_t dt_shard_enumerate(struct dt_shard_space *s,
			    void (*fn)(void *ud,
				       const struct dt_shard_choice *c),
			    void *ud)
{
	if (dt_shard_space_product(s) > DT_SHARD_MAX_ENUMERATION)
		return UINT64_MAX;
	int ndim = s->mesh.ndim;
	uint32_t rows[DT_MAX_MESH_DIMS] = {0};
	uint8_t *st = dt_malloc(s->state_bytes + 1);
	struct dt_shard_choice c = {0};
	uint64_t valid = 0;
	for (;;) {
		if (dt_shard_build_strategy(s, rows)) {
			valid++;
			strategy_state(s, rows, st);
			double cost =
			    s->uncosted ? 0 : dt_shard_state_cost(s, st);
			if (isfinite(cost)) {
				dt_shard_fill_choice(s, &c, rows, st, cost);
				fn(ud, &c);
			}
		}
		int m = ndim - 1;
		while (m >= 0 && ++rows[m] == s->nrows)
			rows[m--] = 0;
		if (m < 0)
			break;
	}
	dt_free(st);
	dt_shard_choice_fini(&c);
	return valid;
}

struct best {
	struct dt_shard_choice *out;
	uint64_t seen;
};

static void keep_best(void *ud, const struct dt_shard_choice *c)
{
	struct best *b = ud;
	b->seen++;
	if (!b->out->found || dt_shard_choice_compare(c, b->out) < 0)
		dt_shard_choice_copy(b->out, c);
}

/* Output 0 of strategy c moved to `target` afterwards: what it costs. */
static double output_move_cost(struct dt_shard_space *s,
			       const struct dt_shard_choice *c,
			       const struct dt_placements *target)
{
	return dt_shard_move_cost(&s->mesh, &s->topology, tensor_of(s, 0),
				  &c->placements.data[0], target, NULL);
}

struct toward {
	struct dt_shard_space *s;
	const struct dt_placements *target;
	struct dt_shard_choice *out;
	double best;
};

static void weigh_toward(void *ud, const struct dt_shard_choice *c)
{
	struct toward *k = ud;
	double total = c->cost + output_move_cost(k->s, c, k->target);
	if (!isfinite(total))
		return;
	if (!k->out->found || total < k->best ||
	    (total == k->best && dt_shard_choice_compare(c, k->out) < 0)) {
		dt_shard_choice_copy(k->out, c);
		k->best = total;
	}
}

double dt_shard_search_toward(struct dt_shard_space *s,
			      const struct dt_placements *target,
			      enum dt_shard_search mode,
			      struct dt_shard_choice *out)
{
	struct toward k = {s, target, out, INFINITY};
	out->found = false;
	if (s->rules->nout == 0)
		return INFINITY;
	if (dt_shard_enumerate(s, weigh_toward, &k) != UINT64_MAX)
		return k.best;
	dt_shard_search(s, mode, out, NULL);
	return out->found ? out->cost + output_move_cost(s, out, target)
			  : INFINITY;
}

int dt_shard_search(struct dt_shard_space *s, enum dt_shard_search mode,
		    struct dt_shard_choice *out, struct dt_shard_stats *stats)
{
	struct dt_shard_stats local = {0};
	out->found = false;
	uint64_t plans = s->plans;
	int rc = DT_OK;
	if (mode == DT_SEARCH_EXHAUSTIVE) {
		struct best b = {out, 0};
		uint64_t valid = dt_shard_enumerate(s, keep_best, &b);
		if (valid == UINT64_MAX) {
			rc = DT_EINPUT;
		} else {
			local.strategies = valid;
			local.candidates = local.costed = valid;
		}
	} else {
		rc = dt_shard_search_pq(s, out, &local);
	}
	local.plans = s->plans - plans;
	if (stats) {
		stats->strategies += local.strategies;
		stats->candidates += local.candidates;
		stats->costed += local.costed;
		stats->plans += local.plans;
	}
	return rc;
}

