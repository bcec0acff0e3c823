// SPDX-License-Identifier: MIT
/* redistribute/search.c: DTensor's min-cost redistribution plan (semantics
 * §3), used when either side has a non-default shard order or a `_S`:
 * Dijkstra over states (placements, per-tensor-dim order of mesh dims).
 *
 * Moves out of a state, generated in DTensor's order (which decides ties):
 *   1. all_to_all: the last mesh dim in tensor dim a's order moves to the
 *      end of b's order (a ascending, then b ascending);
 *   2. all_gather: the last mesh dim in a tensor dim's order replicates;
 *   3. all_reduce: any P dim replicates (mesh dims ascending);
 *   4. chunk: any R dim shards tensor dim b, appended to b's order;
 *   5. reduce_scatter: any P dim shards b, appended to b's order;
 *   6. partition: any R dim becomes P(op), for each op in src or dst
 *      (sum, avg, max, min, product order), unless ops would mix badly.
 * A move's weight is its collective's modelled cost (dt_comm_cost) with
 * DTensor's one-step bytes: the state's local size (global size over its
 * shard count), an all_gather charging its gathered size; chunk and
 * partition are free. A collective over a size-1 mesh dim costs the base
 * latency, as in DTensor. Queue entries compare by
 * (cost, insertion counter), as DTensor's heap of (cost, counter, state).
 * Instead of pushing every duplicate, a state keeps its best entry and the
 * counter still advances for every move to an unvisited state, so entries
 * pop in the same order as DTensor's.
 *
 * Example, mesh (2,2), S(0) S(0) with order 0:B,A -> R R: gather A (last
 * in dim 0's order), then B.
 *
 * A search stopped where its destination popped goes on towards another
 * destination of the same source (dt_redist_searches): the states popped
 * before that one are the ones a search started for it would pop, in the
 * same order, so its plan is the same. The whole-graph problem plans each
 * source towards tens of destinations (a 2x2x2 GPT-2 block: 4x fewer
 * states expanded).
 *
 * Time: O(E log S) for the E moves out of the S states expanded before the
 * destination pops; states are 64-bit keys in an open-addressing table. */
#include "internal.h"

#include <math.h>
#include <string.h>

/* Past this many states the search stops with an error (a 5-D or larger
 * mesh with several tensor dims). */
#define MAX_STATES (1u << 21)

/* A state packed into 8 bits per mesh dim: kind (2 bits), tensor dim or
 * reduce op (3 bits), order position (3 bits). */
static uint64_t key_byte(const struct dt_placement *p, uint8_t order_pos)
{
	uint64_t payload = 0, pos = 0;
	if (p->kind == DT_PL_SHARD) {
		payload = (uint64_t)p->dim;
		pos = order_pos;
	} else if (p->kind == DT_PL_PARTIAL) {
		payload = p->reduce;
	}
	return (uint64_t)p->kind | payload << 2 | pos << 5;
}

uint64_t dt_redist_state_key(const struct dt_placements *pl)
{
	uint64_t key = 0;
	for (int m = 0; m < pl->ndim; m++)
		key |= key_byte(&pl->p[m], pl->order_pos[m]) << (8 * m);
	return key;
}

/* The key of state `key` with mesh dim m at placement p, order_pos pos. */
static uint64_t key_with(uint64_t key, int m, struct dt_placement p,
			 uint8_t pos)
{
	return (key & ~(0xffull << (8 * m))) | key_byte(&p, pos) << (8 * m);
}

static void decode(uint64_t key, int ndim, struct dt_placements *pl)
{
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	for (int m = 0; m < ndim; m++) {
		unsigned byte = (unsigned)(key >> (8 * m)) & 0xff;
		struct dt_placement *p = &pl->p[m];
		p->kind = (uint8_t)(byte & 3);
		if (p->kind == DT_PL_SHARD) {
			p->dim = (int16_t)((byte >> 2) & 7);
			pl->order_pos[m] = (uint8_t)(byte >> 5);
		} else if (p->kind == DT_PL_PARTIAL) {
			p->reduce = (uint8_t)((byte >> 2) & 7);
		}
	}
}

struct state {
	uint64_t key;
	double cost;      /* best known */
	uint64_t counter; /* of the best entry */
	uint32_t parent;  /* state the best entry came from */
	uint32_t expanded_before; /* visited: states expanded before its pop */
	bool visited;
};

struct entry {
	double cost;
	uint64_t counter;
	uint32_t state;
};

/* One Dijkstra search from one source. It stops where its goal pops, and
 * can go on from there towards another goal of the same source: the pops
 * before it are the same as a search started for that goal would make. */
struct search {
	struct dt_redist_plan where; /* mesh, topology, tensor; no steps */
	uint64_t src;              /* the source's state key */
	uint32_t ops;              /* partial ops of src and dst: bit op */
	DT_VEC(struct state) states;
	uint32_t *slots;           /* key hash -> state + 1, 0 = empty */
	uint32_t nslots;           /* power of two */
	DT_VEC(struct entry) heap;
	uint64_t counter;
	uint32_t expanded;         /* states expanded */
	bool pending;              /* `popped`, the last goal, is not expanded */
	struct entry popped;
	uint64_t used;             /* in a cache: when last used */
};

/* Searches kept between plans, reused least recently first. */
#define KEPT_SEARCHES 16
struct dt_redist_searches {
	struct search kept[KEPT_SEARCHES];
	uint32_t n;
	uint64_t clock;
};

static uint64_t hash_key(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void rehash(struct search *s, uint32_t nslots)
{
	dt_free(s->slots);
	s->slots = dt_calloc(nslots, sizeof *s->slots);
	s->nslots = nslots;
	for (uint32_t i = 0; i < s->states.len; i++) {
		uint32_t at = (uint32_t)hash_key(s->states.data[i].key) &
			      (nslots - 1);
		while (s->slots[at])
			at = (at + 1) & (nslots - 1);
		s->slots[at] = i + 1;
	}
}

/* The state of `key`, added unseen (cost and counter unset) if new. */
static uint32_t state_of(struct search *s, uint64_t key, bool *added)
{
	if (2 * (s->states.len + 1) > s->nslots)
		rehash(s, s->nslots ? 2 * s->nslots : 1024);
	uint32_t at = (uint32_t)hash_key(key) & (s->nslots - 1);
	for (; s->slots[at]; at = (at + 1) & (s->nslots - 1))
		if (s->states.data[s->slots[at] - 1].key == key) {
			*added = false;
			return s->slots[at] - 1;
		}
	struct state st = {.key = key};
	uint32_t id = dt_vec_push(&s->states, st);
	s->slots[at] = id + 1;
	*added = true;
	return id;
}

static bool entry_less(const struct entry *a, const struct entry *b)
{
	return a->cost < b->cost || (a->cost == b->cost && a->counter < b->counter);
}

static void heap_push(struct search *s, struct entry e)
{
	uint32_t i = dt_vec_push(&s->heap, e);
	struct entry *h = s->heap.data;
	while (i > 0 && entry_less(&h[i], &h[(i - 1) / 2])) {
		struct entry t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct entry heap_pop(struct search *s)
{
	struct entry *h = s->heap.data, top = h[0];
	uint32_t n = --s->heap.len, i = 0;
	h[0] = h[n];
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, best = i;
		if (l < n && entry_less(&h[l], &h[best]))
			best = l;
		if (r < n && entry_less(&h[r], &h[best]))
			best = r;
		if (best == i)
			break;
		struct entry t = h[i];
		h[i] = h[best];
		h[best] = t;
		i = best;
	}
	return top;
}

/* The move of mesh dim m from state `from` to state key `next`, a
 * collective of kind `comm` (-1: local work, free) charging `bytes`: an
 * unvisited target takes it as its best entry when cheaper than the one it
 * has. *weight caches the collective's cost (NAN: not computed yet; the
 * same for every move of `comm` on m out of `from`). */
static void offer(struct search *s, uint32_t from, int m, uint64_t next,
		  int comm, double bytes, double *weight)
{
	bool added;
	uint32_t to = state_of(s, next, &added);
	if (s->states.data[to].visited)
		return;
	s->counter++;
	uint8_t dim = (uint8_t)m;
	if (comm >= 0 && isnan(*weight))
		*weight = dt_comm_cost(&s->where.topology, &s->where.mesh, &dim,
				       1, (enum dt_comm_kind)comm, bytes);
	double cost = s->states.data[from].cost + (comm < 0 ? 0 : *weight);
	struct state *st = &s->states.data[to];
	if (!added && !(cost < st->cost))
		return;
	st->cost = cost;
	st->counter = s->counter;
	st->parent = from;
	heap_push(s, (struct entry){cost, s->counter, to});
}

static bool ops_mix_badly(const struct dt_placements *pl)
{
	for (int a = 0; a < pl->ndim; a++)
		for (int b = 0; b < a; b++)
			if (pl->p[a].kind == DT_PL_PARTIAL &&
			    pl->p[b].kind == DT_PL_PARTIAL &&
			    dt_redist_ops_conflict(pl->p[a].reduce,
						   pl->p[b].reduce))
				return true;
	return false;
}

/* Every move out of state `from`, in DTensor's order (see the top). */
static void expand(struct search *s, uint32_t from)
{
	int ndim = s->where.mesh.ndim, rank = s->where.rank;
	uint64_t key = s->states.data[from].key;
	struct dt_placements cur, next;
	decode(key, ndim, &cur);
	/* DTensor's one-step bookkeeping: the local size is the global size
	 * over the shard count; an all_gather charges its gathered size. */
	int64_t shards = 1;
	for (int m = 0; m < ndim; m++)
		if (cur.p[m].kind == DT_PL_SHARD)
			shards *= s->where.mesh.shape[m];
	double local = (double)dt_numel(s->where.shape, rank) *
		       dt_dtype_size(s->where.dtype) / (double)shards;
	/* Per collective kind and mesh dim, the cost of its moves. */
	double weight[DT_NCOMM_KINDS][DT_MAX_MESH_DIMS];
	for (int k = 0; k < DT_NCOMM_KINDS; k++)
		for (int m = 0; m < ndim; m++)
			weight[k][m] = NAN;
	int last[DT_MAX_RANK], count[DT_MAX_RANK];
	for (int d = 0; d < rank; d++) {
		last[d] = -1;
		count[d] = 0;
	}
	for (int m = 0; m < ndim; m++)
		if (cur.p[m].kind == DT_PL_SHARD) {
			int d = cur.p[m].dim;
			if (last[d] < 0 || cur.order_pos[m] > cur.order_pos[last[d]])
				last[d] = m;
			count[d]++;
		}
	const struct dt_placement replicate = {.kind = DT_PL_REPLICATE};
	/* 1. all_to_all */
	for (int a = 0; a < rank; a++)
		for (int b = 0; last[a] >= 0 && b < rank; b++) {
			if (a == b)
				continue;
			int m = last[a];
			struct dt_placement p = cur.p[m];
			p.dim = (int16_t)b;
			offer(s, from, m, key_with(key, m, p, (uint8_t)count[b]),
			      DT_COMM_ALL_TO_ALL, local,
			      &weight[DT_COMM_ALL_TO_ALL][m]);
		}
	/* 2. all_gather */
	for (int a = 0; a < rank; a++)
		if (last[a] >= 0)
			offer(s, from, last[a], key_with(key, last[a], replicate, 0),
			      DT_COMM_ALL_GATHER,
			      local * (double)s->where.mesh.shape[last[a]],
			      &weight[DT_COMM_ALL_GATHER][last[a]]);
	/* 3. all_reduce */
	for (int m = 0; m < ndim; m++)
		if (cur.p[m].kind == DT_PL_PARTIAL)
			offer(s, from, m, key_with(key, m, replicate, 0),
			      DT_COMM_ALL_REDUCE, local,
			      &weight[DT_COMM_ALL_REDUCE][m]);
	/* 4. chunk and 5. reduce_scatter */
	for (int pass = 0; pass < 2; pass++) {
		int kind = pass == 0 ? DT_PL_REPLICATE : DT_PL_PARTIAL;
		for (int m = 0; m < ndim; m++)
			for (int b = 0; cur.p[m].kind == kind && b < rank; b++) {
				struct dt_placement p = {.kind = DT_PL_SHARD,
							 .dim = (int16_t)b};
				offer(s, from, m,
				      key_with(key, m, p, (uint8_t)count[b]),
				      pass == 0 ? -1 : DT_COMM_REDUCE_SCATTER,
				      local, &weight[DT_COMM_REDUCE_SCATTER][m]);
			}
	}
	/* 6. partition */
	for (int m = 0; m < ndim; m++)
		for (int op = 0; cur.p[m].kind == DT_PL_REPLICATE &&
				 op < DT_NREDUCE; op++) {
			if (!(s->ops >> op & 1))
				continue;
			next = cur;
			next.p[m] = (struct dt_placement){
				.kind = DT_PL_PARTIAL, .reduce = (uint8_t)op};
			if (!ops_mix_badly(&next))
				offer(s, from, m, key_with(key, m, next.p[m], 0),
				      -1, 0, NULL);
		}
}

/* Append the steps of the path ending at state `to`. */
static void emit_path(const struct search *s, struct dt_redist_plan *plan,
		      uint32_t src, uint32_t to)
{
	uint32_t n = 0;
	for (uint32_t at = to; at != src; at = s->states.data[at].parent)
		n++;
	uint32_t *path = dt_malloc((size_t)(n + 1) * sizeof *path);
	uint32_t k = n;
	for (uint32_t at = to;; at = s->states.data[at].parent) {
		path[k] = at;
		if (k-- == 0)
			break;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct dt_placements before, after;
		decode(s->states.data[path[i]].key, plan->mesh.ndim, &before);
		decode(s->states.data[path[i + 1]].key, plan->mesh.ndim, &after);
		int m = 0;
		while (dt_redist_same_placement(&before.p[m], &after.p[m]))
			m++;
		struct dt_redist_step step;
		dt_redist_step_fill(plan, &step, m, &before, &after);
		dt_vec_push(&plan->steps, step);
	}
	dt_free(path);
}

/* The partial ops of a and b, as a bit set. */
static uint32_t ops_of(const struct dt_placements *a,
		       const struct dt_placements *b)
{
	uint32_t seen = 0;
	for (int m = 0; m < a->ndim; m++) {
		if (a->p[m].kind == DT_PL_PARTIAL)
			seen |= 1u << a->p[m].reduce;
		if (b->p[m].kind == DT_PL_PARTIAL)
			seen |= 1u << b->p[m].reduce;
	}
	return seen;
}

static void search_start(struct search *s, const struct dt_redist_plan *plan,
			 uint64_t src, uint32_t ops)
{
	memset(s, 0, sizeof *s);
	s->where = *plan;
	memset(&s->where.steps, 0, sizeof s->where.steps);
	s->src = src;
	s->ops = ops;
	bool added;
	uint32_t start = state_of(s, src, &added);
	heap_push(s, (struct entry){0, 0, start});
}

static void search_fini(struct search *s)
{
	dt_vec_free(&s->states);
	dt_vec_free(&s->heap);
	dt_free(s->slots);
}

/* Whether s searches from src for plan's mesh, topology and tensor with
 * the partial ops `ops`. */
static bool search_fits(const struct search *s, const struct dt_redist_plan *plan,
			uint64_t src, uint32_t ops)
{
	const struct dt_redist_plan *w = &s->where;
	if (s->src != src || s->ops != ops || w->dtype != plan->dtype ||
	    w->rank != plan->rank || w->mesh.ndim != plan->mesh.ndim ||
	    memcmp(&w->topology, &plan->topology, sizeof w->topology) != 0)
		return false;
	for (int d = 0; d < w->rank; d++)
		if (w->shape[d] != plan->shape[d])
			return false;
	for (int m = 0; m < w->mesh.ndim; m++)
		if (w->mesh.shape[m] != plan->mesh.shape[m])
			return false;
	return true;
}

/* The search of `cache` for plan and src (the least recently used one
 * started over when none fits). */
static struct search *kept_search(struct dt_redist_searches *cache,
				  const struct dt_redist_plan *plan,
				  uint64_t src, uint32_t ops)
{
	struct search *s = NULL;
	for (uint32_t i = 0; i < cache->n && !s; i++)
		if (search_fits(&cache->kept[i], plan, src, ops))
			s = &cache->kept[i];
	if (!s) {
		if (cache->n < KEPT_SEARCHES) {
			s = &cache->kept[cache->n++];
		} else {
			s = &cache->kept[0];
			for (uint32_t i = 1; i < cache->n; i++)
				if (cache->kept[i].used < s->used)
					s = &cache->kept[i];
			search_fini(s);
		}
		search_start(s, plan, src, ops);
	}
	s->used = ++cache->clock;
	return s;
}

/* The state of `key`, or UINT32_MAX when unseen. */
static uint32_t state_find(const struct search *s, uint64_t key)
{
	uint32_t at = (uint32_t)hash_key(key) & (s->nslots - 1);
	for (; s->slots[at]; at = (at + 1) & (s->nslots - 1))
		if (s->states.data[s->slots[at] - 1].key == key)
			return s->slots[at] - 1;
	return UINT32_MAX;
}

/* Go on with s until the state of `goal` pops; returns it, or UINT32_MAX
 * past the state limit. */
static uint32_t search_to(struct search *s, uint64_t goal)
{
	uint32_t at = state_find(s, goal);
	if (at != UINT32_MAX && (s->states.data[at].visited ||
				 (s->pending && s->popped.state == at)))
		return at;
	for (;;) {
		struct entry e;
		if (s->pending) {
			e = s->popped;
			s->pending = false;
		} else {
			/* dst is reachable from anywhere: gather, reduce,
			 * then chunk and partition. */
			DT_REQUIRE(s->heap.len > 0);
			e = heap_pop(s);
			if (s->states.data[e.state].key == goal) {
				s->pending = true;
				s->popped = e;
				return e.state;
			}
		}
		struct state *st = &s->states.data[e.state];
		if (st->visited)
			continue;
		if (s->states.len > MAX_STATES) {
			s->pending = true; /* where a search for another
					      goal stops too */
			s->popped = e;
			return UINT32_MAX;
		}
		st->visited = true;
		st->expanded_before = s->expanded++;
		expand(s, e.state);
	}
}

struct dt_redist_searches *dt_redist_searches_new(void)
{
	return dt_calloc(1, sizeof(struct dt_redist_searches));
}

void dt_redist_searches_free(struct dt_redist_searches *cache)
{
	for (uint32_t i = 0; cache && i < cache->n; i++)
		search_fini(&cache->kept[i]);
	dt_free(cache);
}

int dt_redist_search(struct dt_redist_plan *plan,
		     const struct dt_placements *src,
		     const struct dt_placements *dst,
		     struct dt_redist_searches *cache, char *err,
		     size_t errlen)
{
	struct search own, *s = &own;
	uint64_t from = dt_redist_state_key(src);
	uint32_t ops = ops_of(src, dst);
	if (cache)
		s = kept_search(cache, plan, from, ops);
	else
		search_start(s, plan, from, ops);
	uint32_t at = search_to(s, dt_redist_state_key(dst));
	int status = DT_OK;
	if (at == UINT32_MAX) {
		snprintf(err, errlen,
			 "the min-cost search gave up after %u states "
			 "(mesh of %d dims, tensor of rank %d)",
			 s->states.len, plan->mesh.ndim, plan->rank);
		status = DT_EINPUT;
	} else {
		plan->states += s->states.data[at].visited
					? s->states.data[at].expanded_before
					: s->expanded;
		emit_path(s, plan, 0, at);
	}
	if (!cache)
		search_fini(s);
	return status;
}
