// SPDX-License-Identifier: MIT
/* sharding/space.c: a node's strategy space: its single-dim rule rows
 * expanded with the split factors its inputs need (S or _S(d,sf) for each
 * placeholder), the placements a state may give each input on one mesh
 * dim (its candidates, sorted), the start state from the current
 * placements, and per input and mesh dim the least a move can cost (the
 * priority queue's bound). The searches over the space are
 * sharding/search.c and sharding/pq.c.
 *
 *   mm on (2,2,2), a S(0) R R, b R R R: 8 rows per mesh dim (R, S(0) <-
 *   S(0), R, ...), 512 strategies.
 *
 * Time: O(rows^2 · tensors) (rows are deduplicated as they are pushed). */
#include "cost_model.h"
#include "search_internal.h"

#include <stdlib.h>
#include <string.h>

/* A total order on placements: R < S(d) < _S(d,sf) < P(op). */
static uint64_t placement_key(const struct dt_placement *p)
{
	uint64_t key = (uint64_t)p->kind << 56;
	if (p->kind == DT_PL_SHARD || p->kind == DT_PL_STRIDED_SHARD)
		key |= (uint64_t)(uint16_t)p->dim << 40;
	if (p->kind == DT_PL_STRIDED_SHARD)
		key |= (uint64_t)(uint32_t)p->split_factor << 8;
	if (p->kind == DT_PL_PARTIAL)
		key |= p->reduce;
	return key;
}

bool dt_shard_is_sharding(const struct dt_placement *p)
{
	return p->kind == DT_PL_SHARD || p->kind == DT_PL_STRIDED_SHARD;
}

bool dt_shard_input_active(const struct dt_shard_space *s, uint32_t i)
{
	return !dt_rules_input(s->rules, i)->ignored;
}


/* ------------------------------------------------------------------ */
/* Expansion. */

/* The concrete placement of rule entry e with placeholders filled by
 * `sf` (0: S, else _S(d,sf)). */
static struct dt_placement fill_entry(const struct dt_rule_entry *e, int32_t sf)
{
	struct dt_placement p = {0};
	switch ((enum dt_rule_kind)e->kind) {
	case DT_RULE_REPLICATE:
		p.kind = DT_PL_REPLICATE;
		break;
	case DT_RULE_PARTIAL:
		p.kind = DT_PL_PARTIAL;
		p.reduce = e->reduce;
		break;
	case DT_RULE_SHARD:
		p.kind = sf ? DT_PL_STRIDED_SHARD : DT_PL_SHARD;
		p.dim = e->dim;
		p.split_factor = sf;
		break;
	case DT_RULE_STRIDED:
		p.kind = e->split > 1 ? DT_PL_STRIDED_SHARD : DT_PL_SHARD;
		p.dim = e->dim;
		p.split_factor = e->split > 1 ? e->split : 0;
		break;
	}
	return p;
}

bool dt_shard_same_placement(const struct dt_placement *a,
			     const struct dt_placement *b)
{
	return placement_key(a) == placement_key(b);
}

/* Append an expanded row unless it repeats one. */
static void push_row(struct dt_shard_space *s, const struct dt_placement *row,
		     uint8_t flags, uint32_t origin)
{
	for (uint32_t r = 0; r < s->nrows; r++) {
		if (s->row_flags.data[r] != flags)
			continue;
		const struct dt_placement *e = dt_shard_space_row(s, r);
		uint32_t k = 0;
		while (k < s->width && dt_shard_same_placement(&e[k], &row[k]))
			k++;
		if (k == s->width)
			return;
	}
	uint32_t first = dt_vec_grow(&s->rows, s->width);
	memcpy(&s->rows.data[first], row, s->width * sizeof *row);
	dt_vec_push(&s->row_flags, flags);
	dt_vec_push(&s->row_origin, origin);
	s->nrows++;
}

/* The sharding kinds of the inputs: *plain when some input has S, and the
 * distinct _S split factors, ascending (the `cap` smallest). */
static int shard_kinds(const struct dt_shard_space *s,
		       const struct dt_shard_request *req, bool *plain,
		       int32_t *factors, int cap)
{
	int n = 0;
	*plain = false;
	for (uint32_t i = 0; i < s->rules->nin + req->nkinds; i++) {
		if (i < s->rules->nin && !dt_shard_input_active(s, i))
			continue;
		const struct dt_placements *pl =
		    i < s->rules->nin ? &s->current.data[i]
				      : &req->kinds[i - s->rules->nin];
		for (int m = 0; m < pl->ndim; m++) {
			const struct dt_placement *p = &pl->p[m];
			if (p->kind == DT_PL_SHARD)
				*plain = true;
			if (p->kind != DT_PL_STRIDED_SHARD)
				continue;
			int at = 0;
			while (at < n && factors[at] < p->split_factor)
				at++;
			if ((at < n && factors[at] == p->split_factor) ||
			    at == cap)
				continue;
			if (n == cap)
				n--; /* the largest gives way */
			memmove(&factors[at + 1], &factors[at],
				(size_t)(n - at) * sizeof *factors);
			factors[at] = p->split_factor;
			n++;
		}
	}
	return n;
}

static void expand_rows(struct dt_shard_space *s,
			const struct dt_shard_request *req)
{
	const struct dt_rules *r = s->rules;
	struct dt_placement row[DT_RULE_MAX_TENSORS];
	memset(row, 0, sizeof row);
	push_row(s, row, 0, DT_SHARD_NO_ORIGIN); /* all-replicate */
	bool plain;
	/* At most 16 split factors (the smallest): a column then holds at
	 * most 8 dims × 17 kinds + 4 partials + the current ones, under the
	 * 255 candidates a state byte can name. */
	int32_t factors[16];
	int nfactors = shard_kinds(s, req, &plain, factors,
				   (int)(sizeof factors / sizeof *factors));
	for (uint32_t i = 0; i < r->nrows; i++) {
		const struct dt_rule_entry *e = dt_rules_row(r, i);
		uint8_t flags = r->flags.data[i];
		bool placeholder = false;
		for (uint32_t k = 0; k < s->width; k++)
			placeholder |= e[k].kind == DT_RULE_SHARD;
		/* kind -1: S; kind j >= 0: _S with factors[j]. */
		for (int kind = -1; kind < (placeholder ? nfactors : 0);
		     kind++) {
			if (placeholder && kind < 0 && !plain)
				continue;
			if (kind >= 0 && (flags & DT_ROW_PLAIN))
				continue;
			int32_t sf = kind < 0 ? 0 : factors[kind];
			for (uint32_t k = 0; k < s->width; k++)
				row[k] = fill_entry(&e[k], sf);
			push_row(s, row, flags, i);
		}
	}
}

int dt_shard_cand_index(const struct dt_shard_space *s, uint32_t i,
			const struct dt_placement *p)
{
	uint64_t key = placement_key(p);
	uint32_t lo = s->cand_first.data[i], hi = s->cand_first.data[i + 1];
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		uint64_t k = placement_key(&s->cand.data[mid]);
		if (k == key)
			return (int)(mid - s->cand_first.data[i]);
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int compare_keys(const void *a, const void *b)
{
	uint64_t x = placement_key(a), y = placement_key(b);
	return x < y ? -1 : x > y;
}

/* Per input: the sorted distinct placements of its column and its current
 * ones; then every row's inputs as indices, and the start state. */
static void fill_candidates(struct dt_shard_space *s)
{
	const struct dt_rules *r = s->rules;
	int ndim = s->mesh.ndim;
	s->cand.len = s->cand_first.len = 0;
	for (uint32_t i = 0; i < r->nin; i++) {
		uint32_t first = s->cand.len;
		dt_vec_push(&s->cand_first, first);
		if (!dt_shard_input_active(s, i))
			continue;
		for (uint32_t row = 0; row < s->nrows; row++)
			dt_vec_push(&s->cand,
				    dt_shard_space_row(s, row)[r->nout + i]);
		for (int m = 0; m < ndim; m++)
			dt_vec_push(&s->cand, s->current.data[i].p[m]);
		struct dt_placement *c = &s->cand.data[first];
		uint32_t n = s->cand.len - first, kept = 0;
		qsort(c, n, sizeof *c, compare_keys);
		for (uint32_t k = 0; k < n; k++)
			if (kept == 0 ||
			    !dt_shard_same_placement(&c[kept - 1], &c[k]))
				c[kept++] = c[k];
		/* The state stores one byte per mesh dim. */
		DT_REQUIRE(kept <= 255);
		s->cand.len = first + kept;
	}
	dt_vec_push(&s->cand_first, s->cand.len);

	s->row_cand.len = 0;
	dt_vec_grow(&s->row_cand, s->nrows * r->nin);
	for (uint32_t row = 0; row < s->nrows; row++)
		for (uint32_t i = 0; i < r->nin; i++) {
			int c = dt_shard_input_active(s, i)
				    ? dt_shard_cand_index(s, i,
						 &dt_shard_space_row(
						     s, row)[r->nout + i])
				    : 0;
			s->row_cand.data[row * r->nin + i] = (uint8_t)c;
		}

	s->state_bytes = r->nin * (uint32_t)(ndim + 1);
	s->start.len = 0;
	dt_vec_grow(&s->start, s->state_bytes);
	memset(s->start.data, 0, s->state_bytes);
	for (uint32_t i = 0; i < r->nin; i++) {
		const struct dt_placements *cur = &s->current.data[i];
		struct dt_placements dflt = *cur;
		dt_placements_default_order(&dflt);
		bool reorder = dt_shard_input_active(s, i) &&
			       !dt_placements_equal(cur, &dflt);
		if (!dt_shard_input_active(s, i))
			continue;
		uint8_t *st = &s->start.data[i * (uint32_t)(ndim + 1)];
		for (int m = 0; m < ndim; m++)
			st[m] = (uint8_t)dt_shard_cand_index(s, i, &cur->p[m]);
		st[ndim] = reorder;
	}
}

void dt_shard_nested_form(const struct dt_mesh *mesh, struct dt_placements *pl,
			  bool rows)
{
	bool changed = false;
	for (int d = 0; d < DT_MAX_RANK; d++) {
		int last_plain = -1, first_strided = DT_MAX_MESH_DIMS;
		int64_t outer = 1;
		for (int m = 0; m < pl->ndim; m++) {
			if (!dt_shard_is_sharding(&pl->p[m]) || pl->p[m].dim != d)
				continue;
			if (pl->p[m].kind == DT_PL_SHARD) {
				last_plain = m;
				outer *= mesh->shape[m];
			} else if (m < first_strided) {
				first_strided = m;
			}
		}
		if (last_plain < 0 || first_strided == DT_MAX_MESH_DIMS ||
		    last_plain > first_strided)
			continue;
		for (int m = 0; m < pl->ndim; m++) {
			struct dt_placement *p = &pl->p[m];
			if (p->kind != DT_PL_STRIDED_SHARD || p->dim != d)
				continue;
			if (rows) {
				p->split_factor *= (int32_t)outer;
			} else if (p->split_factor % outer == 0) {
				p->split_factor = (int32_t)(p->split_factor / outer);
				if (p->split_factor == 1)
					*p = (struct dt_placement){
					    .kind = DT_PL_SHARD, .dim = p->dim};
				changed = true;
			}
		}
	}
	if (changed)
		dt_placements_default_order(pl);
}

void dt_shard_space_init(struct dt_shard_space *s, const struct dt_rules *rules,
			 const struct dt_shard_request *req)
{
	s->rules = rules;
	s->mesh = *req->mesh;
	s->mesh.devices = NULL;
	if (req->topology)
		s->topology = *req->topology;
	else
		dt_topology_default(&s->topology);
	s->has_pin = req->pin != NULL;
	s->uncosted = req->uncosted;
	if (req->pin)
		s->pin = *req->pin;
	s->width = rules->nout + rules->nin;
	DT_REQUIRE(s->width <= DT_RULE_MAX_TENSORS);
	s->nrows = 0;
	s->rows.len = s->row_flags.len = s->row_origin.len = 0;
	s->current.len = s->given.len = 0;
	for (uint32_t i = 0; i < rules->nin; i++) {
		dt_vec_push(&s->current, req->current[i]);
		dt_vec_push(&s->given, req->current[i]);
	}
	expand_rows(s, req);
	s->pin_rows = s->pin;
	s->strided = false;
	for (uint32_t r = 0; r < s->nrows; r++)
		s->strided |= (s->row_flags.data[r] & DT_ROW_STRIDED) != 0;
	if (s->strided) {
		dt_shard_nested_form(&s->mesh, &s->pin_rows, true);
		for (uint32_t i = 0; i < rules->nin; i++)
			if (dt_shard_input_active(s, i))
				dt_shard_nested_form(&s->mesh,
						     &s->current.data[i], true);
	}
	fill_candidates(s);
	/* A collective moving input i on mesh dim m carries at least its
	 * smallest shard, the global size over every rank (an all_gather that
	 * shard times the dim's size); one over a single rank costs nothing.
	 * An input whose shards nest in another order (a _S, a non-default
	 * order) may change a placement without a step on its mesh dim, and so
	 * may one of strided rows (S(0) S(0) is the nested [S(0), _S(0,P)]
	 * of P the S shards, dt_shard_nested_form): no bound for them. */
	s->move_cost.len = 0;
	for (uint32_t i = 0; i < rules->nin; i++) {
		const struct dt_rule_tensor *t = dt_rules_input(rules, i);
		const struct dt_placements *cur = &s->current.data[i];
		bool ordered = s->strided || !dt_placements_has_default_order(cur);
		for (int m = 0; m < cur->ndim; m++)
			ordered |= cur->p[m].kind == DT_PL_STRIDED_SHARD;
		double least = (double)dt_numel(t->shape, t->rank) *
			       dt_dtype_size((enum dt_dtype)t->dtype) /
			       (double)s->mesh.size;
		for (int m = 0; m < s->mesh.ndim; m++) {
			uint8_t dim = (uint8_t)m;
			int64_t n = s->mesh.shape[m];
			for (int kind = 0; kind < DT_NCOMM_KINDS; kind++) {
				double bytes = kind == DT_COMM_ALL_GATHER
						   ? least * (double)n
						   : least;
				double c =
				    n == 1 || ordered
					? 0
					: dt_comm_cost(
					      &s->topology, &s->mesh, &dim, 1,
					      (enum dt_comm_kind)kind, bytes);
				dt_vec_push(&s->move_cost, c);
			}
		}
	}
	s->cache_used = 0;
	if (s->cache_input.len)
		memset(s->cache_input.data, 0,
		       s->cache_input.len * sizeof(uint32_t));
	s->plans = 0;
}

void dt_shard_space_fini(struct dt_shard_space *s)
{
	dt_vec_free(&s->rows);
	dt_vec_free(&s->row_flags);
	dt_vec_free(&s->row_origin);
	dt_vec_free(&s->current);
	dt_vec_free(&s->given);
	dt_vec_free(&s->cand_first);
	dt_vec_free(&s->cand);
	dt_vec_free(&s->start);
	dt_vec_free(&s->row_cand);
	dt_vec_free(&s->cache_dims);
	dt_vec_free(&s->cache_input);
	dt_vec_free(&s->cache_cost);
	dt_vec_free(&s->move_cost);
	dt_vec_free(&s->pq_states);
	dt_vec_free(&s->pq_cost);
	dt_vec_free(&s->pq_bound);
	dt_vec_free(&s->pq_need);
	dt_vec_free(&s->pq_changes);
	dt_vec_free(&s->pq_terminal);
	dt_vec_free(&s->pq_heap);
	dt_vec_free(&s->strategy);
}

uint64_t dt_shard_space_product(const struct dt_shard_space *s)
{
	uint64_t n = 1;
	for (int m = 0; m < s->mesh.ndim; m++) {
		if (s->nrows && n > UINT64_MAX / s->nrows)
			return UINT64_MAX;
		n *= s->nrows;
	}
	return n;
}
