// SPDX-License-Identifier: MIT
/* sharding/pq.c: the priority-queue strategy search (semantics §6 step 4).
 *
 * The priority-queue search walks states: one placement per (input, mesh
 * dim) entry, drawn from the input's column of the rows, plus a flag per
 * input whose current non-default shard order is kept. It starts at the
 * current placements. A move gives one entry the value a row gives it;
 * moves take entries in a fixed order (the flags, then mesh dim by mesh
 * dim each input), so each state has one path and the entries before its
 * last move are settled. A state's key is a lower bound on the cost of
 * every state its later moves reach (plans pay at least one collective,
 * of at least its latency and smallest shard, on every mesh dim that
 * leaves S or P; a settled mesh dim must already match a row), its exact
 * cost once all is settled; states pop by (key, changes, placements). A
 * popped state that some valid strategy consumes is queued again keyed by
 * its cost; the search stops when such a matched state pops: every state
 * still queued, and all it leads to, costs at least as much, and ties go
 * to fewer changes then the smaller placements, as in the exhaustive
 * search. mm on a 2×2×2 mesh with inputs S(1) R R and R R R: the start
 * fails on dim 0; moving b's dim 0 from R to S(0) (a free chunk) gives a
 * state that P(sum) <- S(1), S(0) consumes: 2 pops out of 512 strategies.
 *
 * Time: O(V · (dims · rows · inputs + log V)) for V popped states, plan
 * costs cached per (input, placements). */
#include "cost_model.h"
#include "search_internal.h"

#include <math.h>
#include <string.h>

/* The entries of a state, in the order moves take them: the inputs'
 * re-order flags, then mesh dim by mesh dim the inputs' placements. A move
 * takes an entry after every entry moved before, so each state has one
 * path from the start, and the entries up to the last move are settled. */
static int64_t entry_index(const struct dt_shard_space *s, uint32_t i, int m)
{
	return (int64_t)s->rules->nin * (m + 1) + i;
}

/* The index of the last entry moved in st (a flag's index is its input),
 * or -1 at the start. */
static int64_t state_cursor(const struct dt_shard_space *s, const uint8_t *st)
{
	int ndim = s->mesh.ndim;
	uint32_t stride = (uint32_t)ndim + 1;
	int64_t cursor = -1;
	for (uint32_t i = 0; i < s->rules->nin; i++) {
		const uint8_t *a = &st[i * stride],
			      *b = &s->start.data[i * stride];
		if (a[ndim] != b[ndim] && (int64_t)i > cursor)
			cursor = i;
		for (int m = 0; m < ndim; m++)
			if (a[m] != b[m] && entry_index(s, i, m) > cursor)
				cursor = entry_index(s, i, m);
	}
	return cursor;
}

/* Whether entry (i, m) of st can no longer move: it is at or before the
 * cursor, or input i keeps its start order past its flag. */
static bool settled(const struct dt_shard_space *s, const uint8_t *st,
		    int64_t cursor, uint32_t i, int m)
{
	uint32_t stride = (uint32_t)s->mesh.ndim + 1;
	return entry_index(s, i, m) <= cursor ||
	       (st[i * stride + (uint32_t)s->mesh.ndim] &&
		(int64_t)i <= cursor);
}

static uint8_t *pq_state(struct dt_shard_space *s, uint32_t id)
{
	return &s->pq_states.data[(size_t)id * s->state_bytes];
}

/* Key order: bound (or cost), changes, placements, then a matched state
 * after its search node. */
static int pq_compare(struct dt_shard_space *s, uint32_t a, uint32_t b)
{
	int c = dt_shard_compare_states(
	    s->pq_cost.data[a], s->pq_changes.data[a], pq_state(s, a),
	    s->pq_cost.data[b], s->pq_changes.data[b], pq_state(s, b),
	    s->state_bytes);
	return c ? c : s->pq_terminal.data[a] - s->pq_terminal.data[b];
}

static void heap_push(struct dt_shard_space *s, uint32_t id)
{
	uint32_t k = dt_vec_push(&s->pq_heap, id);
	uint32_t *h = s->pq_heap.data;
	while (k > 0) {
		uint32_t parent = (k - 1) / 2;
		if (pq_compare(s, h[parent], h[k]) <= 0)
			break;
		uint32_t t = h[parent];
		h[parent] = h[k];
		h[k] = t;
		k = parent;
	}
}

static uint32_t heap_pop(struct dt_shard_space *s)
{
	uint32_t *h = s->pq_heap.data;
	uint32_t top = h[0], n = --s->pq_heap.len, k = 0;
	h[0] = h[n];
	for (;;) {
		uint32_t l = 2 * k + 1, r = l + 1, min = k;
		if (l < n && pq_compare(s, h[l], h[min]) < 0)
			min = l;
		if (r < n && pq_compare(s, h[r], h[min]) < 0)
			min = r;
		if (min == k)
			break;
		uint32_t t = h[min];
		h[min] = h[k];
		h[k] = t;
		k = min;
	}
	return top;
}

/* Input i's candidate c. */
static const struct dt_placement *cand_of(const struct dt_shard_space *s,
					  uint32_t i, uint8_t c)
{
	return &s->cand.data[s->cand_first.data[i] + c];
}

/* The least the plan of input i spends on mesh dim m when that dim goes
 * from candidate `from` to `to` (different). Every plan has a step on a
 * dim that changes, and the first one leaving R is local, leaving S or _S
 * an all_gather or an all_to_all (to R, always the gather), leaving P a
 * reduce_scatter or a costlier all_reduce. */
static double move_bound(const struct dt_shard_space *s, uint32_t i, int m,
			 uint8_t from, uint8_t to)
{
	const struct dt_placement *p = cand_of(s, i, from),
				  *q = cand_of(s, i, to);
	if (p->kind == DT_PL_REPLICATE)
		return 0;
	const double *c =
	    &s->move_cost.data[((size_t)i * (size_t)s->mesh.ndim + (size_t)m) *
			       DT_NCOMM_KINDS];
	if (p->kind == DT_PL_PARTIAL)
		return c[DT_COMM_REDUCE_SCATTER];
	if (q->kind == DT_PL_REPLICATE)
		return c[DT_COMM_ALL_GATHER];
	return c[DT_COMM_ALL_GATHER] < c[DT_COMM_ALL_TO_ALL]
		   ? c[DT_COMM_ALL_GATHER]
		   : c[DT_COMM_ALL_TO_ALL];
}

/* Whether no redistribution takes one mesh dim from candidate `from` to
 * `to` of input i: a shard cannot become partial, nor a partial change its
 * op. */
static bool unreachable(const struct dt_shard_space *s, uint32_t i,
			uint8_t from, uint8_t to)
{
	const struct dt_placement *p = cand_of(s, i, from),
				  *q = cand_of(s, i, to);
	return q->kind == DT_PL_PARTIAL && from != to &&
	       (dt_shard_is_sharding(p) || p->kind == DT_PL_PARTIAL);
}

/* Whether row r may serve mesh dim m: its output 0 is the pin's there
 * (and, for an in-place op, input 0's current placement). */
static bool row_allowed(const struct dt_shard_space *s, int m, uint32_t r)
{
	const struct dt_placement *out = &dt_shard_space_row(s, r)[0];
	if (s->rules->nout == 0)
		return true;
	if (s->has_pin && !dt_shard_same_placement(out, &s->pin_rows.p[m]))
		return false;
	return !s->rules->inplace || s->rules->nin == 0 ||
	       dt_shard_same_placement(out, &s->current.data[0].p[m]);
}

/* Whether row r can still be mesh dim m's in st: settled entries equal
 * it, the others can move to it. Adds to *add the least the moves cost. */
static bool row_open(const struct dt_shard_space *s, const uint8_t *st,
		     int64_t cursor, int m, uint32_t r, double *add)
{
	uint32_t nin = s->rules->nin, stride = (uint32_t)s->mesh.ndim + 1;
	const uint8_t *want = &s->row_cand.data[r * nin];
	double sum = 0;
	if (!row_allowed(s, m, r))
		return false;
	for (uint32_t i = 0; i < nin; i++) {
		uint32_t at = i * stride + (uint32_t)m;
		if (!dt_shard_input_active(s, i) || st[at] == want[i])
			continue;
		if (settled(s, st, cursor, i, m) ||
		    unreachable(s, i, st[at], want[i]))
			return false;
		sum += move_bound(s, i, m, st[at], want[i]);
	}
	*add = sum;
	return true;
}

/* Keys are lower bounds scaled by this, so rounding never lifts one above
 * the cost it bounds. */
#define BOUND_SCALE (1 - 1e-12)

/* The queue's key of state st: a lower bound on the cost of every state
 * its later moves reach (INFINITY when some mesh dim has no row left), the
 * exact cost once every entry is settled. A plan moves every mesh dim
 * whose placement changes, at a cost of at least move_bound; so
 *   per input: its cost, once all its entries are settled; else the bounds
 *              of its moved entries, plus for each open one the least move
 *              the open rows ask of it;
 *   overall:   the bounds of the moved entries, plus per mesh dim the least
 *              the open rows add;
 * whichever sum is larger. */
static double state_key(struct dt_shard_space *s, const uint8_t *st,
			int64_t cursor)
{
	int ndim = s->mesh.ndim;
	uint32_t nin = s->rules->nin, stride = (uint32_t)ndim + 1;
	const uint8_t *start = s->start.data;
	s->pq_bound.len = s->pq_need.len = 0;
	dt_vec_grow(&s->pq_bound, nin);
	dt_vec_grow(&s->pq_need, nin);
	double *bound = s->pq_bound.data, *need = s->pq_need.data;
	memset(bound, 0, nin * sizeof *bound);
	double overall = 0;
	for (int m = 0; m < ndim; m++) {
		for (uint32_t i = 0; i < nin; i++)
			need[i] = INFINITY;
		double least = INFINITY;
		for (uint32_t r = 0; r < s->nrows; r++) {
			double add;
			if (!row_open(s, st, cursor, m, r, &add))
				continue;
			least = add < least ? add : least;
			const uint8_t *want = &s->row_cand.data[r * nin];
			for (uint32_t i = 0; i < nin; i++) {
				uint32_t at = i * stride + (uint32_t)m;
				if (!dt_shard_input_active(s, i) ||
				    settled(s, st, cursor, i, m))
					continue;
				double c =
				    want[i] == st[at]
					? 0
					: move_bound(s, i, m, st[at], want[i]);
				need[i] = c < need[i] ? c : need[i];
			}
		}
		if (least == INFINITY)
			return INFINITY;
		overall += least;
		for (uint32_t i = 0; i < nin; i++) {
			uint32_t at = i * stride + (uint32_t)m;
			if (!dt_shard_input_active(s, i))
				continue;
			if (st[at] != start[at]) {
				double c =
				    move_bound(s, i, m, start[at], st[at]);
				overall += c;
				bound[i] += c;
			} else if (!settled(s, st, cursor, i, m)) {
				bound[i] += need[i];
			}
		}
	}
	double total = 0;
	for (uint32_t i = 0; i < nin; i++) {
		if (!dt_shard_input_active(s, i))
			continue;
		if (ndim == 0 || settled(s, st, cursor, i, ndim - 1))
			total +=
			    dt_shard_input_state_cost(s, i, &st[i * stride]);
		else
			total += bound[i] * BOUND_SCALE;
	}
	overall *= BOUND_SCALE;
	return total > overall ? total : overall;
}

/* Queue state st (a search node, or with `terminal` a matched state keyed
 * by its cost). */
static void pq_add(struct dt_shard_space *s, const uint8_t *st, bool terminal,
		   struct dt_shard_stats *stats)
{
	double key = terminal ? dt_shard_state_cost(s, st)
			      : state_key(s, st, state_cursor(s, st));
	if (!terminal)
		stats->costed++;
	if (!isfinite(key))
		return;
	uint32_t id = s->pq_cost.len;
	uint32_t at = dt_vec_grow(&s->pq_states, s->state_bytes);
	memcpy(&s->pq_states.data[at], st, s->state_bytes);
	dt_vec_push(&s->pq_cost, key);
	dt_vec_push(&s->pq_changes, dt_shard_state_changes(s, st));
	dt_vec_push(&s->pq_terminal, (uint8_t)terminal);
	heap_push(s, id);
}

/* The first valid strategy (lowest index) whose inputs are state `st`:
 * per mesh dim the rows consuming it, tried in lexicographic order. */
static bool match_state(struct dt_shard_space *s, const uint8_t *st,
			uint32_t *rows)
{
	int ndim = s->mesh.ndim;
	uint32_t nin = s->rules->nin, stride = (uint32_t)ndim + 1;
	for (uint32_t i = 0; i < nin; i++)
		if (dt_shard_input_active(s, i) &&
		    st[i * stride + (uint32_t)ndim])
			return false; /* a kept non-default order: no row reads
					 it */
	uint32_t first[DT_MAX_MESH_DIMS + 1];
	DT_VEC(uint32_t) matches = {0};
	for (int m = 0; m < ndim; m++) {
		first[m] = matches.len;
		for (uint32_t r = 0; r < s->nrows; r++) {
			uint32_t i = 0;
			while (i < nin && (!dt_shard_input_active(s, i) ||
					   s->row_cand.data[r * nin + i] ==
					       st[i * stride + (uint32_t)m]))
				i++;
			if (i == nin)
				dt_vec_push(&matches, r);
		}
		if (matches.len == first[m]) {
			dt_vec_free(&matches);
			return false;
		}
	}
	first[ndim] = matches.len;
	uint32_t pick[DT_MAX_MESH_DIMS] = {0};
	bool found = false;
	for (;;) {
		for (int m = 0; m < ndim; m++)
			rows[m] = matches.data[first[m] + pick[m]];
		if (dt_shard_build_strategy(s, rows)) {
			found = true;
			break;
		}
		int m = ndim - 1;
		while (m >= 0 && ++pick[m] == first[m + 1] - first[m])
			pick[m--] = 0;
		if (m < 0)
			break;
	}
	dt_vec_free(&matches);
	return found;
}

/* Queue the states one move after the cursor of `st`: an input keeping
 * its start order adopts the default one; an open entry of an input that
 * no longer keeps it takes a value some row gives it, that row agreeing
 * with the entries of its mesh dim before it (those settle as they are). */
static void expand_state(struct dt_shard_space *s, uint8_t *st,
			 struct dt_shard_stats *stats)
{
	int ndim = s->mesh.ndim;
	uint32_t nin = s->rules->nin, stride = (uint32_t)ndim + 1;
	int64_t cursor = state_cursor(s, st);
	for (uint32_t i = 0; i < nin; i++) {
		uint8_t *flag = &st[i * stride + (uint32_t)ndim];
		if (dt_shard_input_active(s, i) && *flag &&
		    (int64_t)i > cursor) {
			*flag = 0;
			pq_add(s, st, false, stats);
			*flag = 1;
		}
	}
	uint8_t tried[256];
	for (int m = 0; m < ndim; m++) {
		for (uint32_t i = 0; i < nin; i++) {
			uint32_t at = i * stride + (uint32_t)m;
			if (!dt_shard_input_active(s, i) ||
			    entry_index(s, i, m) <= cursor ||
			    st[i * stride + (uint32_t)ndim])
				continue;
			memset(tried, 0, sizeof tried);
			uint8_t was = st[at];
			for (uint32_t r = 0; r < s->nrows; r++) {
				const uint8_t *want =
				    &s->row_cand.data[r * nin];
				uint8_t v = want[i];
				if (v == was || tried[v] ||
				    !row_allowed(s, m, r) ||
				    unreachable(s, i, was, v))
					continue;
				uint32_t j = 0;
				while (
				    j < i &&
				    (!dt_shard_input_active(s, j) ||
				     want[j] == st[j * stride + (uint32_t)m]))
					j++;
				if (j < i)
					continue; /* disagrees with a settled
						     entry */
				tried[v] = 1;
				st[at] = v;
				pq_add(s, st, false, stats);
				st[at] = was;
			}
		}
	}
}

int dt_shard_search_pq(struct dt_shard_space *s, struct dt_shard_choice *out,
		       struct dt_shard_stats *stats)
{
	s->pq_states.len = s->pq_cost.len = s->pq_changes.len = 0;
	s->pq_terminal.len = s->pq_heap.len = 0;
	uint8_t *st = dt_malloc(s->state_bytes + 1);
	pq_add(s, s->start.data, false, stats);
	while (s->pq_heap.len) {
		uint32_t id = heap_pop(s);
		memcpy(st, pq_state(s, id), s->state_bytes);
		uint32_t rows[DT_MAX_MESH_DIMS];
		if (s->pq_terminal.data[id]) {
			DT_REQUIRE(match_state(s, st, rows));
			dt_shard_fill_choice(s, out, rows, st,
					     s->pq_cost.data[id]);
			break;
		}
		stats->candidates++;
		if (match_state(s, st, rows)) {
			pq_add(s, st, true, stats);
			/* Later states cost at least the key and move more. */
			if (dt_shard_state_cost(s, st) <= s->pq_cost.data[id])
				continue;
		}
		expand_state(s, st, stats);
	}
	dt_free(st);
	return DT_OK;
}
