// SPDX-License-Identifier: MIT
/* redistribute/min_memory.c: the min-memory redistribution plan
 * (--redistribute=min-memory, semantics §3.1), after "Memory-efficient
 * array redistribution through portable collective communication" (arXiv
 * 2112.01075): slice early, gather late, all_to_all instead of gather and
 * slice, and all_permute (a device permutation between two placements
 * whose ranks hold the same blocks) where the other moves would grow the
 * shards.
 *
 * The states are every placement of S and R with its shard order (they are
 * few: a 4-D mesh and a rank-2 tensor have under 300). Moves out of a
 * state: chunk (an R mesh dim shards tensor dim d, last in d's order),
 * all_to_all (the last mesh dim of a's order moves to the end of b's),
 * all_gather (the last mesh dim of d's order replicates), all_permute (to
 * any state whose ranks hold the same multiset of blocks, at most
 * DT_REDIST_MAX_PERMUTES times). A state's size is its largest shard on
 * any rank. The plan: for the smallest bound B >= L = max(src, dst size)
 * under which dst is reachable through states of size <= B and whose
 * cheapest path (Dijkstra on the modelled cost, ties to fewer steps) costs
 * at most 1.2x the cheapest within 2L, that path; when no path fits in
 * 2L, one all_to_all_v (src to dst directly).
 *
 * Worked case (semantics §3.1), mesh {x1:2, x2:2, y1:3, y2:2}, f32[12, 12],
 * [S(0) S(0) S(1) S(1)] -> [S(1) S(1) S(0) S(0)] (dim 0 on x1,x2 to dim 0
 * on y1,y2): all_to_all x2 0->1, all_permute, all_to_all y1 1->0,
 * all_permute; every rank holds 6 elements throughout (DTensor's plan: 72).
 *
 * Time: O(S · (N · rank + moves)) to build the S states over N ranks, then
 * O(E log E) per bound tried, E the moves (permutes within a class
 * included). Partial and _S placements are left to DTensor's plan. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Past this many states, or states times ranks, the planner leaves the
 * request to DTensor's. */
#define MAX_STATES 20000u
#define MAX_STATE_RANKS (1u << 18)
/* int64 per block row: (start, length) per tensor dim, zeros after. */
#define BLOCK (2 * DT_MAX_RANK)
/* A plan with smaller shards may cost this much more than the cheapest
 * within twice the larger end (the time bound of semantics §3.1). */
#define TIME_SLACK 1.2

struct mm_state {
	struct dt_placements pl;
	uint64_t key;
	double bytes;     /* largest shard of any rank */
	int64_t *blocks;  /* per rank a BLOCK row, rows sorted: the
			     multiset of blocks */
	uint64_t hash;    /* of blocks */
	uint32_t cls;     /* states with equal blocks share it: the first's
			     index */
	uint32_t next;    /* the next state of the class, UINT32_MAX */
};

struct key_index {
	uint64_t key;
	uint32_t state;
};

struct mm {
	struct dt_redist_plan *plan;
	DT_VEC(struct mm_state) states;
	uint32_t max_states;
	struct key_index *index; /* by key, for find_state */
};

/* Mesh dims sharding tensor dim d, in shard order. */
static int order_of(const struct dt_placements *pl, int d, int *seq)
{
	int n = 0;
	for (int pos = 0; pos < DT_MAX_MESH_DIMS; pos++)
		for (int m = 0; m < pl->ndim; m++)
			if (pl->p[m].kind == DT_PL_SHARD && pl->p[m].dim == d &&
			    pl->order_pos[m] == pos)
				seq[n++] = m;
	return n;
}

/* The block (start, length per tensor dim) that the rank at `coord` holds
 * under `pl` (S and R only). */
static void block_of(const struct dt_redist_plan *plan,
		     const struct dt_placements *pl, const int64_t *coord,
		     int64_t *out)
{
	for (int d = 0; d < plan->rank; d++)
		dt_shard_interval(pl, plan->mesh.shape, coord, d,
				  plan->shape[d], &out[2 * d], &out[2 * d + 1]);
}

static int cmp_block(const void *a, const void *b)
{
	return memcmp(a, b, BLOCK * sizeof(int64_t));
}

static void add_state(struct mm *s, const struct dt_placements *pl)
{
	const struct dt_redist_plan *plan = s->plan;
	int64_t n = plan->mesh.size;
	struct mm_state st = {.pl = *pl, .key = dt_redist_state_key(pl)};
	st.blocks = dt_calloc((size_t)(n * BLOCK), sizeof *st.blocks);
	int64_t coord[DT_MAX_MESH_DIMS];
	for (int64_t p = 0; p < n; p++) {
		dt_mesh_coords(&plan->mesh, p, coord);
		block_of(plan, pl, coord, st.blocks + p * BLOCK);
	}
	qsort(st.blocks, (size_t)n, BLOCK * sizeof *st.blocks, cmp_block);
	st.bytes = dt_redist_local_bytes(plan, pl);
	st.hash = 0xcbf29ce484222325ull;
	for (int64_t i = 0; i < n * BLOCK; i++)
		st.hash = (st.hash ^ (uint64_t)st.blocks[i]) * 0x100000001b3ull;
	st.cls = s->states.len;
	st.next = UINT32_MAX;
	for (uint32_t i = 0; i < s->states.len; i++) {
		struct mm_state *o = &s->states.data[i];
		if (o->cls == i && o->hash == st.hash &&
		    !memcmp(o->blocks, st.blocks,
			    (size_t)(n * BLOCK) * sizeof *st.blocks)) {
			st.cls = i;
			st.next = o->next;
			o->next = s->states.len;
			break;
		}
	}
	dt_vec_push(&s->states, st);
}

/* Every S/R state: mesh dims from m on go to R or into some tensor dim's
 * order at any position. False when there are too many. */
static bool enumerate(struct mm *s, struct dt_placements *pl, int m)
{
	if (s->states.len >= s->max_states)
		return false;
	if (m == pl->ndim) {
		add_state(s, pl);
		return true;
	}
	pl->p[m] = (struct dt_placement){.kind = DT_PL_REPLICATE};
	pl->order_pos[m] = 0;
	if (!enumerate(s, pl, m + 1))
		return false;
	for (int d = 0; d < s->plan->rank; d++) {
		int seq[DT_MAX_MESH_DIMS];
		int k = order_of(pl, d, seq);
		for (int at = 0; at <= k; at++) {
			struct dt_placements next = *pl;
			next.p[m] = (struct dt_placement){.kind = DT_PL_SHARD,
							  .dim = (int16_t)d};
			for (int i = 0; i < k; i++)
				next.order_pos[seq[i]] = (uint8_t)(i + (i >= at));
			next.order_pos[m] = (uint8_t)at;
			if (!enumerate(s, &next, m + 1))
				return false;
		}
	}
	return true;
}

static int cmp_key(const void *a, const void *b)
{
	uint64_t x = ((const struct key_index *)a)->key;
	uint64_t y = ((const struct key_index *)b)->key;
	return x < y ? -1 : x > y;
}

static void build_index(struct mm *s)
{
	s->index = dt_calloc(s->states.len + 1, sizeof *s->index);
	for (uint32_t i = 0; i < s->states.len; i++)
		s->index[i] = (struct key_index){s->states.data[i].key, i};
	qsort(s->index, s->states.len, sizeof *s->index, cmp_key);
}

static int32_t find_state(const struct mm *s, const struct dt_placements *pl)
{
	struct key_index want = {.key = dt_redist_state_key(pl)};
	const struct key_index *at = bsearch(&want, s->index, s->states.len,
					     sizeof *s->index, cmp_key);
	return at ? (int32_t)at->state : -1;
}

/* ------------------------------------------------------------------ */
/* Moves and the search. A node is (state, permutes used). */

struct move {
	uint32_t to;
	int m;            /* mesh dim changed; -1: all_permute */
};
typedef DT_VEC(struct move) move_vec;

/* The moves out of state i (not the permutes). */
static void moves_of(const struct mm *s, uint32_t i,
		     move_vec *out)
{
	const struct dt_placements *pl = &s->states.data[i].pl;
	int rank = s->plan->rank;
	for (int a = 0; a < rank; a++) {
		int seq[DT_MAX_MESH_DIMS];
		int k = order_of(pl, a, seq);
		for (int b = -1; b < rank && k > 0; b++) {
			if (b == a)
				continue;
			struct dt_placements next = *pl;
			int last = seq[k - 1];
			if (b < 0) { /* all_gather */
				next.p[last] = (struct dt_placement){
					.kind = DT_PL_REPLICATE};
				next.order_pos[last] = 0;
			} else { /* all_to_all */
				int bs[DT_MAX_MESH_DIMS];
				next.p[last].dim = (int16_t)b;
				next.order_pos[last] =
					(uint8_t)order_of(pl, b, bs);
			}
			int32_t to = find_state(s, &next);
			DT_REQUIRE(to >= 0);
			dt_vec_push(out, ((struct move){(uint32_t)to, last}));
		}
	}
	for (int m = 0; m < pl->ndim; m++) {
		if (pl->p[m].kind != DT_PL_REPLICATE)
			continue;
		for (int b = 0; b < rank; b++) { /* chunk */
			int bs[DT_MAX_MESH_DIMS];
			struct dt_placements next = *pl;
			next.p[m] = (struct dt_placement){.kind = DT_PL_SHARD,
							  .dim = (int16_t)b};
			next.order_pos[m] = (uint8_t)order_of(pl, b, bs);
			int32_t to = find_state(s, &next);
			DT_REQUIRE(to >= 0);
			dt_vec_push(out, ((struct move){(uint32_t)to, m}));
		}
	}
}

/* A step over the whole mesh: all_permute or all_to_all_v (`kind`). */
static void fill_whole(const struct dt_redist_plan *plan,
		       struct dt_redist_step *st, enum dt_redist_kind kind,
		       const struct dt_placements *before,
		       const struct dt_placements *after)
{
	memset(st, 0, sizeof *st);
	st->kind = kind;
	st->ndims = plan->mesh.ndim;
	for (int m = 0; m < plan->mesh.ndim; m++)
		st->dims[m] = (uint8_t)m;
	st->group = -1;
	st->src_dim = st->dst_dim = -1;
	st->divisor = 1;
	st->group_size = plan->mesh.size;
	st->before = *before;
	st->after = *after;
	dt_redist_step_price(plan, st);
}

static void step_of(const struct mm *s, uint32_t from, const struct move *mv,
		    struct dt_redist_step *st)
{
	const struct dt_placements *a = &s->states.data[from].pl;
	const struct dt_placements *b = &s->states.data[mv->to].pl;
	if (mv->m < 0)
		fill_whole(s->plan, st, DT_REDIST_PERMUTE, a, b);
	else
		dt_redist_step_fill(s->plan, st, mv->m, a, b);
}

struct node {
	double cost;
	uint32_t steps;
	uint32_t parent;  /* node + 1, 0 = none */
	int parent_m;
	bool done;
};

enum { LAYERS = DT_REDIST_MAX_PERMUTES + 1 };

/* A queue entry: a node's (cost, steps) when it was offered. */
struct entry {
	double cost;
	uint32_t steps, node;
};
typedef DT_VEC(struct entry) entry_vec;

static bool before(const struct entry *a, const struct entry *b)
{
	return a->cost < b->cost || (a->cost == b->cost && a->steps < b->steps);
}

static void heap_push(entry_vec *h, struct entry e)
{
	uint32_t i = dt_vec_push(h, e);
	while (i > 0 && before(&h->data[i], &h->data[(i - 1) / 2])) {
		struct entry t = h->data[i];
		h->data[i] = h->data[(i - 1) / 2];
		h->data[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct entry heap_pop(entry_vec *h)
{
	struct entry top = h->data[0];
	h->data[0] = h->data[--h->len];
	for (uint32_t i = 0;;) {
		uint32_t l = 2 * i + 1, r = l + 1, best = i;
		if (l < h->len && before(&h->data[l], &h->data[best]))
			best = l;
		if (r < h->len && before(&h->data[r], &h->data[best]))
			best = r;
		if (best == i)
			break;
		struct entry t = h->data[i];
		h->data[i] = h->data[best];
		h->data[best] = t;
		i = best;
	}
	return top;
}

/* Cheapest path from src to dst through states of at most `bound` bytes;
 * appends its steps and returns true, or false when there is none. */
static bool search(struct mm *s, uint32_t src, uint32_t dst, double bound)
{
	uint32_t ns = s->states.len, nn = ns * LAYERS;
	struct node *nodes = dt_calloc(nn, sizeof *nodes);
	for (uint32_t i = 0; i < nn; i++)
		nodes[i].cost = -1;
	nodes[src].cost = 0;
	move_vec moves = {0};
	entry_vec heap = {0};
	uint32_t goal = UINT32_MAX;
	heap_push(&heap, (struct entry){0, 0, src});
	while (heap.len > 0) {
		uint32_t best = heap_pop(&heap).node;
		if (nodes[best].done)
			continue;
		nodes[best].done = true;
		uint32_t st = best % ns, layer = best / ns;
		if (st == dst) {
			goal = best;
			break;
		}
		moves.len = 0;
		moves_of(s, st, &moves);
		for (uint32_t j = s->states.data[st].cls;
		     layer + 1 < LAYERS && j != UINT32_MAX;
		     j = s->states.data[j].next)
			if (j != st)
				dt_vec_push(&moves, ((struct move){j, -1}));
		for (uint32_t k = 0; k < moves.len; k++) {
			const struct move *mv = &moves.data[k];
			if (s->states.data[mv->to].bytes > bound)
				continue;
			uint32_t to = mv->to + (layer + (mv->m < 0)) * ns;
			struct dt_redist_step step;
			step_of(s, st, mv, &step);
			double cost = nodes[best].cost + step.cost_us;
			uint32_t steps = nodes[best].steps + 1;
			struct node *y = &nodes[to];
			if (y->done || (y->cost >= 0 && (y->cost < cost ||
			    (y->cost == cost && y->steps <= steps))))
				continue;
			*y = (struct node){cost, steps, best + 1, mv->m, false};
			heap_push(&heap, (struct entry){cost, steps, to});
		}
	}
	dt_vec_free(&moves);
	dt_vec_free(&heap);
	if (goal == UINT32_MAX) {
		dt_free(nodes);
		return false;
	}
	uint32_t count = nodes[goal].steps, at = goal;
	uint32_t base = s->plan->steps.len;
	for (uint32_t i = 0; i < count; i++) {
		struct dt_redist_step zero = {0};
		dt_vec_push(&s->plan->steps, zero);
	}
	for (uint32_t i = count; i-- > 0;) {
		uint32_t from = nodes[at].parent - 1;
		struct move mv = {at % ns, nodes[at].parent_m};
		step_of(s, from % ns, &mv, &s->plan->steps.data[base + i]);
		at = from;
	}
	dt_free(nodes);
	return true;
}

static bool plain(const struct dt_placements *pl)
{
	for (int m = 0; m < pl->ndim; m++)
		if (pl->p[m].kind == DT_PL_PARTIAL ||
		    pl->p[m].kind == DT_PL_STRIDED_SHARD)
			return false;
	return true;
}

/* Modelled µs of the plan's steps from index `from` on. */
static double steps_cost(const struct dt_redist_plan *plan, uint32_t from)
{
	double us = 0;
	for (uint32_t i = from; i < plan->steps.len; i++)
		us += plan->steps.data[i].cost_us;
	return us;
}

/* Appends the plan: among the bounds in sizes[0..n) (ascending state
 * sizes, the first >= max(src, dst) = low), the smallest whose cheapest
 * path costs at most TIME_SLACK x the cheapest path within 2 x low; when
 * no path fits there, one all_to_all_v (its shards are src and dst). */
static void plan_bounded(struct mm *s, uint32_t src, uint32_t dst,
			 const double *sizes, uint32_t n, double low)
{
	struct dt_redist_plan *plan = s->plan;
	uint32_t base = plan->steps.len;
	if (!search(s, src, dst, 2 * low)) {
		struct dt_redist_step zero = {0};
		uint32_t i = dt_vec_push(&plan->steps, zero);
		fill_whole(plan, &plan->steps.data[i], DT_REDIST_TRANSFER,
			   &s->states.data[src].pl, &s->states.data[dst].pl);
		return;
	}
	double cheapest = steps_cost(plan, base);
	plan->steps.len = base;
	for (uint32_t i = 0; i < n; i++) {
		if (i > 0 && sizes[i] == sizes[i - 1])
			continue;
		if (search(s, src, dst, sizes[i]) &&
		    steps_cost(plan, base) <= TIME_SLACK * cheapest)
			return;
		plan->steps.len = base;
	}
	DT_REQUIRE(!"the bound 2 x low has a path");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

bool dt_redist_min_memory(struct dt_redist_plan *plan)
{
	if (!plain(&plan->src) || !plain(&plan->dst))
		return false;
	if (plan->mesh.size > (int64_t)MAX_STATE_RANKS)
		return false;
	struct mm s = {.plan = plan};
	s.max_states = MAX_STATE_RANKS / (uint32_t)plan->mesh.size;
	if (s.max_states > MAX_STATES)
		s.max_states = MAX_STATES;
	struct dt_placements pl = {.ndim = plan->mesh.ndim};
	bool ok = enumerate(&s, &pl, 0);
	if (ok)
		build_index(&s);
	int32_t src = ok ? find_state(&s, &plan->src) : -1;
	int32_t dst = ok ? find_state(&s, &plan->dst) : -1;
	ok = src >= 0 && dst >= 0;
	if (ok) {
		/* The bounds to try: the state sizes from max(src, dst) up. */
		double low = s.states.data[src].bytes;
		if (s.states.data[dst].bytes > low)
			low = s.states.data[dst].bytes;
		double *sizes = dt_calloc(s.states.len, sizeof *sizes);
		uint32_t n = 0;
		for (uint32_t i = 0; i < s.states.len; i++)
			if (s.states.data[i].bytes >= low)
				sizes[n++] = s.states.data[i].bytes;
		qsort(sizes, n, sizeof *sizes, cmp_double);
		plan_bounded(&s, (uint32_t)src, (uint32_t)dst, sizes, n, low);
		dt_free(sizes);
	}
	dt_free(s.index);
	for (uint32_t i = 0; i < s.states.len; i++)
		dt_free(s.states.data[i].blocks);
	dt_vec_free(&s.states);
	return ok;
}

void dt_redist_permute_map(const struct dt_redist_plan *plan,
			   const struct dt_redist_step *s, int64_t *dest)
{
	DT_REQUIRE(s->kind == DT_REDIST_PERMUTE);
	int64_t n = plan->mesh.size;
	int w = BLOCK;
	int64_t *from = dt_calloc((size_t)(n * w), sizeof *from);
	int64_t *to = dt_calloc((size_t)(n * w), sizeof *to);
	bool *taken = dt_calloc((size_t)n, sizeof *taken);
	int64_t coord[DT_MAX_MESH_DIMS];
	for (int64_t p = 0; p < n; p++) {
		dt_mesh_coords(&plan->mesh, p, coord);
		block_of(plan, &s->before, coord, from + p * w);
		block_of(plan, &s->after, coord, to + p * w);
	}
	for (int64_t p = 0; p < n; p++) {
		dest[p] = -1;
		for (int64_t q = 0; q < n && dest[p] < 0; q++)
			if (!taken[q] &&
			    !memcmp(from + p * w, to + q * w,
				    (size_t)w * sizeof *from)) {
				taken[q] = true;
				dest[p] = q;
			}
		DT_REQUIRE(dest[p] >= 0);
	}
	dt_free(from);
	dt_free(to);
	dt_free(taken);
}
