// SPDX-License-Identifier: MIT
/* reduce.c: exact reductions of a solver problem (internal.h, dt_solve_reduce):
 * infinite-cost and dominated strategies, single-strategy nodes, parallel
 * edges, and degree 0/1/2 elimination by dynamic programming, driven by a
 * worklist until nothing changes. Each elimination is recorded with the
 * best choice of the eliminated node per choice of its neighbours (by
 * original strategy index), so a plan of the reduced problem expands back.
 * Complexity: a leaf costs |S_v||S_u|, a degree-2 node |S_u||S_v||S_w|,
 * dominance at v |S_v|^2 times its incident matrix sizes. */
#include "internal.h"

#include <string.h>

#define DOMINANCE_MAX_DEGREE 32 /* dominance is checked up to this degree */
#define DOMINANCE_MAX_STRATEGIES 32 /* and this many strategies */

enum step_kind { STEP_FIX, STEP_LEAF, STEP_SERIES };

/* An edge's matrix from one end v: the entry of v's strategy s towards
 * the other end's strategy o < n is m[s * along + o * across]. */
struct rows {
	const int64_t *m;
	int32_t along, across, n;
};

/* What a degree-2 elimination of v between u and w saw, to work out v's
 * best choice per choice of theirs when a plan asks (series_choice): a
 * table of them all would cost as much as the elimination. */
struct series {
	int32_t nv;
	int64_t *cost;          /* [nv] v's costs */
	int32_t *map;           /* [nv] v's strategy -> original */
	int32_t *u_at, *w_at;   /* [orig S_u], [orig S_w]: u's and w's
				   strategy then, -1 where dropped before */
	struct rows ru, rw;     /* v's matrices towards u and w */
	int64_t *own[2];        /* those of them allocated here */
};

struct dt_reduce_step {
	enum step_kind kind;
	int32_t v, u, w;   /* eliminated node, its neighbours (original ids) */
	int32_t fixed;     /* STEP_FIX: original strategy */
	int64_t ballast;   /* v's usage, which no choice changes */
	int32_t *table;    /* LEAF: [orig S_u] */
	struct series series; /* SERIES */
};

struct wnode {
	int32_t ns;
	int32_t *map;          /* current strategy -> original */
	int64_t *cost, *usage;
	bool alive, queued;
	DT_VEC(int32_t) adj;   /* incident edge ids (dead ones dropped lazily) */
};

struct wedge {
	int32_t a, b;
	int64_t *m;            /* [ns_a x ns_b]: the input edge's matrix
				  until the work graph changes it (own_m) */
	uint64_t *order[2];    /* the row orders from end a (order[0]) and b
				  (order[1]), internal.h; NULL until
				  dominance needs them (stale_orders) */
	bool own_m, own_order[2]; /* allocated here, not the input's */
	bool alive;
};

struct work {
	const struct dt_solve_problem *p;
	struct wnode *n;
	DT_VEC(struct wedge) e;
	DT_VEC(int32_t) queue;
	DT_VEC(struct dt_reduce_step) steps;
	int32_t *mark;         /* per node: scratch edge id or -1 */
	int64_t offset, removed, eliminated, merged;
};

static void push(struct work *w, int32_t v)
{
	if (w->n[v].alive && !w->n[v].queued) {
		w->n[v].queued = true;
		dt_vec_push(&w->queue, v);
	}
}

static struct rows rows_of(const struct work *w, int32_t e, int32_t v)
{
	const struct wedge *ed = &w->e.data[e];
	int32_t nb = w->n[ed->b].ns;
	return ed->a == v ? (struct rows){ed->m, nb, 1, nb}
			  : (struct rows){ed->m, 1, nb, w->n[ed->a].ns};
}

static inline int64_t entry(const struct rows *r, int32_t s, int32_t o)
{
	return r->m[(int64_t)s * r->along + (int64_t)o * r->across];
}

static int32_t other(const struct work *w, int32_t e, int32_t v)
{
	return w->e.data[e].a == v ? w->e.data[e].b : w->e.data[e].a;
}

/* Drop dead edges from v's list; returns the live degree. */
static int32_t compact(struct work *w, int32_t v)
{
	struct wnode *nd = &w->n[v];
	uint32_t k = 0;
	for (uint32_t i = 0; i < nd->adj.len; i++)
		if (w->e.data[nd->adj.data[i]].alive)
			nd->adj.data[k++] = nd->adj.data[i];
	nd->adj.len = k;
	return (int32_t)k;
}

/* Forget e's row orders (its matrix changed). */
static void stale_orders(struct wedge *ed)
{
	for (int k = 0; k < 2; k++) {
		if (ed->own_order[k])
			dt_free(ed->order[k]);
		ed->order[k] = NULL;
		ed->own_order[k] = false;
	}
}

/* Set e's matrix to m (allocated here), freeing the old one if it was. */
static void set_matrix(struct wedge *ed, int64_t *m)
{
	if (ed->own_m)
		dt_free(ed->m);
	ed->m = m;
	ed->own_m = m != NULL;
	stale_orders(ed);
}

static void kill_edge(struct work *w, int32_t e)
{
	w->e.data[e].alive = false;
	set_matrix(&w->e.data[e], NULL);
}

/* A copy of the first n words of src (allocated). */
static void *copy_words(const void *src, size_t n, size_t word)
{
	void *c = dt_malloc(word * n + 1);
	memcpy(c, src, word * n);
	return c;
}

/* An edge a-b of matrix m (allocated here when own). */
static int32_t add_edge(struct work *w, int32_t a, int32_t b, int64_t *m,
			bool own)
{
	int32_t id = (int32_t)dt_vec_push(&w->e, ((struct wedge){
						    .a = a, .b = b, .m = m,
						    .own_m = own,
						    .alive = true}));
	dt_vec_push(&w->n[a].adj, id);
	dt_vec_push(&w->n[b].adj, id);
	return id;
}

/* Merge every edge of v towards the same neighbour into one. */
static void merge_parallel(struct work *w, int32_t v)
{
	compact(w, v);
	struct wnode *nd = &w->n[v];
	for (uint32_t i = 0; i < nd->adj.len; i++) {
		int32_t e = nd->adj.data[i], u = other(w, e, v);
		int32_t keep = w->mark[u];
		if (keep < 0) {
			w->mark[u] = e;
			continue;
		}
		struct wedge *k = &w->e.data[keep];
		struct rows r = rows_of(w, e, v);
		/* k's matrix changes: its own copy, its orders stale. */
		if (k->own_m)
			stale_orders(k);
		else
			set_matrix(k, copy_words(k->m, (size_t)w->n[k->a].ns *
						 (size_t)w->n[k->b].ns,
						 sizeof *k->m));
		for (int32_t a = 0; a < w->n[k->a].ns; a++)
			for (int32_t b = 0; b < w->n[k->b].ns; b++) {
				int64_t *x = &k->m[(int64_t)a * w->n[k->b].ns + b];
				int32_t sv = k->a == v ? a : b, su = k->a == v ? b : a;
				*x = dt_solve_add(*x, entry(&r, sv, su));
			}
		kill_edge(w, e);
		w->merged++;
	}
	for (uint32_t i = 0; i < nd->adj.len; i++)
		w->mark[other(w, nd->adj.data[i], v)] = -1;
	compact(w, v);
}

/* Keep the strategies of v flagged in keep[] (renumbering v and its edges). */
static void keep_strategies(struct work *w, int32_t v, const bool *keep)
{
	struct wnode *nd = &w->n[v];
	int32_t *idx = dt_malloc(sizeof(int32_t) * (size_t)nd->ns);
	int32_t k = 0;
	for (int32_t s = 0; s < nd->ns; s++)
		if (keep[s])
			idx[k++] = s;
	for (uint32_t i = 0; i < nd->adj.len; i++) {
		struct wedge *ed = &w->e.data[nd->adj.data[i]];
		int32_t na = w->n[ed->a].ns, nb = w->n[ed->b].ns;
		int32_t ra = ed->a == v ? k : na, rb = ed->b == v ? k : nb;
		int64_t *m = dt_malloc(sizeof(int64_t) * ((size_t)ra * rb + 1));
		for (int32_t a = 0; a < ra; a++)
			for (int32_t b = 0; b < rb; b++)
				m[(int64_t)a * rb + b] =
					ed->m[(int64_t)(ed->a == v ? idx[a] : a) * nb +
					      (ed->b == v ? idx[b] : b)];
		set_matrix(ed, m);
	}
	for (int32_t s = 0; s < k; s++) {
		nd->map[s] = nd->map[idx[s]];
		nd->cost[s] = nd->cost[idx[s]];
		nd->usage[s] = nd->usage[idx[s]];
	}
	w->removed += nd->ns - k;
	nd->ns = k;
	dt_free(idx);
}

/* Whether v's usage counts: a limit and a non-empty interval. */
static bool usage_counts(const struct work *w, int32_t v)
{
	const struct dt_solve_node *o = &w->p->nodes[v];
	return w->p->usage_limit >= 0 && o->start < o->end;
}

/* The row order of e's matrix from end v (v has at most 64 strategies),
 * started when missing: its zero masks. */
static uint64_t *edge_order(struct work *w, int32_t e, int32_t v)
{
	struct wedge *ed = &w->e.data[e];
	int end = ed->a == v ? 0 : 1;
	if (!ed->order[end]) {
		struct rows r = rows_of(w, e, v);
		int32_t ns = w->n[v].ns, n = r.n < 64 ? r.n : 64;
		uint64_t *order = dt_calloc(3 * (size_t)ns, sizeof *order);
		for (int32_t s = 0; s < ns; s++)
			for (int32_t o = 0; o < n; o++)
				order[s] |= (uint64_t)(entry(&r, s, o) == 0) << o;
		ed->order[end] = order;
		ed->own_order[end] = true;
	}
	return ed->order[end];
}

/* Does strategy b of v dominate a (b no worse in every respect: cost,
 * usage where it counts, and towards every neighbour strategy)? order[i]
 * is the row order of v's incident matrix i, where what is learnt of
 * rows b and a is kept. Where b's row is no more than a's it is 0
 * wherever a's is (costs are >= 0): most pairs are told apart by their
 * zero masks, the others by comparing the rows. */
static bool dominates(const struct work *w, int32_t v, uint64_t *const *order,
		      int32_t b, int32_t a)
{
	const struct wnode *nd = &w->n[v];
	if (nd->cost[b] > nd->cost[a] ||
	    (usage_counts(w, v) && nd->usage[b] > nd->usage[a]))
		return false;
	int32_t ns = nd->ns;
	uint64_t bit = 1ull << b;
	for (uint32_t i = 0; i < nd->adj.len; i++)
		if (order[i][a] & ~order[i][b]) {
			order[i][ns + a] |= bit;
			return false;
		}
	for (uint32_t i = 0; i < nd->adj.len; i++) {
		uint64_t *known = &order[i][ns], *below = &order[i][2 * ns];
		if (!(known[a] & bit)) {
			struct rows r = rows_of(w, nd->adj.data[i], v);
			bool no_more = true;
			for (int32_t o = 0; no_more && o < r.n; o++)
				no_more = entry(&r, b, o) <= entry(&r, a, o);
			known[a] |= bit;
			below[a] |= no_more ? bit : 0;
		}
		if (!(below[a] & bit))
			return false;
	}
	return true;
}

/* Drop infinite and dominated strategies of v (dominance only where the
 * degree keeps it cheap); returns whether any went. */
static bool prune(struct work *w, int32_t v)
{
	struct wnode *nd = &w->n[v];
	bool keep[DOMINANCE_MAX_STRATEGIES];
	bool cheap = nd->adj.len <= DOMINANCE_MAX_DEGREE &&
		     nd->ns <= DOMINANCE_MAX_STRATEGIES;
	bool *kept = cheap ? keep : dt_malloc(sizeof(bool) * (size_t)nd->ns);
	int32_t left = nd->ns;
	for (int32_t a = 0; a < nd->ns; a++)
		kept[a] = nd->cost[a] < DT_SOLVE_INFINITE;
	for (int32_t a = 0; a < nd->ns; a++)
		if (!kept[a])
			left--;
	if (left == 0) /* all saturated: nothing to tell them apart by */
		for (int32_t a = 0; a < nd->ns; a++, left++)
			kept[a] = true;
	if (cheap && left > 1) {
		uint64_t *order[DOMINANCE_MAX_DEGREE];
		for (uint32_t i = 0; i < nd->adj.len; i++)
			order[i] = edge_order(w, nd->adj.data[i], v);
		for (int32_t a = 0; a < nd->ns && left > 1; a++) {
			/* The strategies known not to dominate a. */
			uint64_t not_below = 1ull << a;
			for (uint32_t i = 0; i < nd->adj.len; i++)
				not_below |= order[i][nd->ns + a] &
					     ~order[i][2 * nd->ns + a];
			for (int32_t b = 0; b < nd->ns && kept[a]; b++)
				if (!(not_below >> b & 1) && kept[b] &&
				    dominates(w, v, order, b, a)) {
					kept[a] = false;
					left--;
				}
		}
	}
	bool changed = left < nd->ns;
	if (changed)
		keep_strategies(w, v, kept);
	if (kept != keep)
		dt_free(kept);
	return changed;
}

static void record(struct work *w, enum step_kind kind, int32_t v, int32_t u,
		   int32_t x, int32_t fixed, int32_t *table, struct series series)
{
	dt_vec_push(&w->steps, ((struct dt_reduce_step){kind, v, u, x, fixed,
							 w->n[v].usage[0], table,
							 series}));
	w->n[v].alive = false;
	w->eliminated++;
}

/* v has one strategy: fold its edges into the neighbours' costs. */
static void fix_node(struct work *w, int32_t v)
{
	struct wnode *nd = &w->n[v];
	w->offset = dt_solve_add(w->offset, nd->cost[0]);
	for (uint32_t i = 0; i < nd->adj.len; i++) {
		int32_t e = nd->adj.data[i], u = other(w, e, v);
		struct rows r = rows_of(w, e, v);
		for (int32_t s = 0; s < w->n[u].ns; s++)
			w->n[u].cost[s] = dt_solve_add(w->n[u].cost[s], entry(&r, 0, s));
		kill_edge(w, e);
		push(w, u);
	}
	record(w, STEP_FIX, v, -1, -1, nd->map[0], NULL, (struct series){0});
}

/* A choice table of n entries, all -1: neighbour strategies dropped before
 * the elimination have no entry. */
static int32_t *unset_table(size_t n)
{
	int32_t *t = dt_malloc(sizeof(int32_t) * (n + 1));
	for (size_t i = 0; i < n; i++)
		t[i] = -1;
	return t;
}

/* Degree 0 or 1, usage fixed: v's best choice per choice of its neighbour. */
static void eliminate_leaf(struct work *w, int32_t v)
{
	struct wnode *nd = &w->n[v];
	if (nd->adj.len == 0) {
		int32_t best = 0;
		for (int32_t s = 1; s < nd->ns; s++)
			best = nd->cost[s] < nd->cost[best] ? s : best;
		w->offset = dt_solve_add(w->offset, nd->cost[best]);
		nd->usage[0] = nd->usage[best];
		record(w, STEP_FIX, v, -1, -1, nd->map[best], NULL, (struct series){0});
		return;
	}
	int32_t e = nd->adj.data[0], u = other(w, e, v);
	struct wnode *nu = &w->n[u];
	int32_t *table = unset_table((size_t)w->p->nodes[u].nstrategies);
	struct rows r = rows_of(w, e, v);
	for (int32_t su = 0; su < nu->ns; su++) {
		int32_t best = 0;
		int64_t bc = DT_SOLVE_INFINITE;
		for (int32_t sv = 0; sv < nd->ns; sv++) {
			int64_t c = dt_solve_add(nd->cost[sv], entry(&r, sv, su));
			if (c < bc) {
				bc = c;
				best = sv;
			}
		}
		nu->cost[su] = dt_solve_add(nu->cost[su], bc);
		table[nu->map[su]] = nd->map[best];
	}
	kill_edge(w, e);
	record(w, STEP_LEAF, v, u, -1, -1, table, (struct series){0});
	push(w, u);
}

/* m[su][sx] = min(m[su][sx], a[su] + b[sx]) for su < nu and sx < n (an
 * infinite a[su] or b[sx] never is less), n a multiple of 4 (rows padded
 * with infinities, so no remainder loop: the rows are short): one term of
 * a min-plus product, branch-free inside so that it vectorizes, with an
 * AVX2 clone where the CPU has it. */
DT_SOLVE_VECTOR_CLONES
static void min_plus_term(int64_t *restrict m, const int64_t *restrict a,
			  const int64_t *restrict b, int32_t nu, int32_t n)
{
	n &= ~3; /* as it is: tells the compiler */
	for (int32_t su = 0; su < nu; su++) {
		if (a[su] == DT_SOLVE_INFINITE)
			continue;
		int64_t *row = &m[(int64_t)su * n], lim = DT_SOLVE_INFINITE - a[su];
		for (int32_t sx = 0; sx < n; sx++) {
			int64_t c = b[sx] < lim ? a[su] + b[sx] : DT_SOLVE_INFINITE;
			row[sx] = c < row[sx] ? c : row[sx];
		}
	}
}

/* [orig S_v]: v's strategy now per original one, -1 where dropped. */
static int32_t *strategy_at(const struct work *w, int32_t v)
{
	int32_t n = w->p->nodes[v].nstrategies;
	int32_t *at = dt_malloc(sizeof(int32_t) * ((size_t)n + 1));
	for (int32_t s = 0; s < n; s++)
		at[s] = -1;
	for (int32_t s = 0; s < w->n[v].ns; s++)
		at[w->n[v].map[s]] = s;
	return at;
}

/* Edge e's matrix, which is about to die, kept for a series step: its
 * rows from v, and the matrix in *own when allocated here. */
static struct rows keep_rows(struct work *w, int32_t e, int32_t v, int64_t **own)
{
	struct wedge *ed = &w->e.data[e];
	*own = ed->own_m ? ed->m : NULL;
	ed->own_m = false;
	return rows_of(w, e, v);
}

/* Degree 2, usage fixed: an edge u-x carrying v's best cost. */
static void eliminate_series(struct work *w, int32_t v)
{
	struct wnode *nd = &w->n[v];
	int32_t e1 = nd->adj.data[0], e2 = nd->adj.data[1];
	int32_t u = other(w, e1, v), x = other(w, e2, v);
	int32_t nu = w->n[u].ns, nx = w->n[x].ns;
	int64_t *m = dt_malloc(sizeof(int64_t) * ((size_t)nu * nx + 1));
	/* The min-plus product, a term per strategy sv of v (v's cost plus
	 * its column towards u, a; its row towards x, contiguous and padded,
	 * b), in t of rows padded to nx4, then copied into m. */
	int32_t nx4 = (nx + 3) & ~3;
	int64_t *a = dt_malloc(sizeof(int64_t) * ((size_t)nu + (size_t)nx4 * (nu + 1) + 1));
	int64_t *b = a + nu, *t = b + nx4;
	struct rows ru = rows_of(w, e1, v), rx = rows_of(w, e2, v);
	for (int64_t i = 0; i < (int64_t)nu * nx4; i++)
		t[i] = DT_SOLVE_INFINITE;
	for (int32_t sx = nx; sx < nx4; sx++)
		b[sx] = DT_SOLVE_INFINITE;
	for (int32_t sv = 0; sv < nd->ns; sv++) {
		for (int32_t su = 0; su < nu; su++)
			a[su] = dt_solve_add(nd->cost[sv], entry(&ru, sv, su));
		for (int32_t sx = 0; sx < nx; sx++)
			b[sx] = entry(&rx, sv, sx);
		min_plus_term(t, a, b, nu, nx4);
	}
	for (int32_t su = 0; su < nu; su++)
		memcpy(&m[(int64_t)su * nx], &t[(int64_t)su * nx4], sizeof(int64_t) * (size_t)nx);
	dt_free(a);
	struct series s = {.nv = nd->ns, .cost = nd->cost, .map = nd->map,
			   .u_at = strategy_at(w, u), .w_at = strategy_at(w, x)};
	nd->cost = NULL;
	nd->map = NULL;
	s.ru = keep_rows(w, e1, v, &s.own[0]);
	s.rw = keep_rows(w, e2, v, &s.own[1]);
	kill_edge(w, e1);
	kill_edge(w, e2);
	record(w, STEP_SERIES, v, u, x, -1, NULL, s);
	add_edge(w, u, x, m, true);
	merge_parallel(w, u);
	push(w, u);
	push(w, x);
}

/* The original strategy of a series step's v for original strategies su
 * of u and sw of w (eliminate_series' choice: the first least), -1 where
 * the reduction had dropped either before. */
static int32_t series_choice(const struct series *s, int32_t su, int32_t sw)
{
	int32_t iu = s->u_at[su], iw = s->w_at[sw], best = 0;
	if (iu < 0 || iw < 0)
		return -1;
	int64_t least = DT_SOLVE_INFINITE;
	for (int32_t sv = 0; sv < s->nv; sv++) {
		int64_t a = dt_solve_add(s->cost[sv], entry(&s->ru, sv, iu));
		int64_t c = dt_solve_add(a, entry(&s->rw, sv, iw));
		if (a < DT_SOLVE_INFINITE && c < least) {
			least = c;
			best = sv;
		}
	}
	return s->map[best];
}

/* One worklist visit of v. */
static void visit(struct work *w, int32_t v)
{
	struct wnode *nd = &w->n[v];
	merge_parallel(w, v);
	if (prune(w, v))
		for (uint32_t i = 0; i < nd->adj.len; i++)
			push(w, other(w, nd->adj.data[i], v));
	if (nd->ns == 1) {
		fix_node(w, v);
		return;
	}
	bool fixed_usage = true;
	for (int32_t s = 1; s < nd->ns && usage_counts(w, v); s++)
		fixed_usage &= nd->usage[s] == nd->usage[0];
	if (!fixed_usage || nd->adj.len > 2)
		return;
	for (uint32_t i = 0; i < nd->adj.len; i++)
		push(w, other(w, nd->adj.data[i], v));
	if (nd->adj.len <= 1)
		eliminate_leaf(w, v);
	else
		eliminate_series(w, v);
}

/* The work graph of p: its matrices and the given row orders (orders:
 * NULL or as red->orders) used in place until changed. */
static void work_init(struct work *w, const struct dt_solve_problem *p,
		      uint64_t *const *orders)
{
	memset(w, 0, sizeof(*w));
	w->p = p;
	w->n = dt_calloc((size_t)p->nnodes + 1, sizeof(*w->n));
	w->mark = dt_malloc(sizeof(int32_t) * ((size_t)p->nnodes + 1));
	for (int32_t v = 0; v < p->nnodes; v++) {
		const struct dt_solve_node *o = &p->nodes[v];
		struct wnode *nd = &w->n[v];
		nd->ns = o->nstrategies;
		nd->map = dt_malloc(sizeof(int32_t) * (size_t)nd->ns);
		nd->cost = dt_malloc(sizeof(int64_t) * (size_t)nd->ns);
		nd->usage = dt_malloc(sizeof(int64_t) * (size_t)nd->ns);
		for (int32_t s = 0; s < nd->ns; s++)
			nd->map[s] = s;
		memcpy(nd->cost, o->cost, sizeof(int64_t) * (size_t)nd->ns);
		memcpy(nd->usage, o->usage, sizeof(int64_t) * (size_t)nd->ns);
		nd->alive = true;
		w->mark[v] = -1;
	}
	for (int32_t e = 0; e < p->nedges; e++) {
		const struct dt_solve_edge *o = &p->edges[e];
		int32_t id = add_edge(w, o->from, o->to, o->cost, false);
		for (int k = 0; orders && k < 2; k++)
			w->e.data[id].order[k] = orders[2 * e + k];
	}
}

/* Move what is left of the work graph into red->r, ballast included. */
static void emit(struct work *w, struct dt_solve_reduction *red)
{
	const struct dt_solve_problem *p = w->p;
	int32_t *id = dt_malloc(sizeof(int32_t) * ((size_t)p->nnodes + 1));
	int32_t n = 0, m = 0;
	for (int32_t v = 0; v < p->nnodes; v++)
		id[v] = w->n[v].alive ? n++ : -1;
	int32_t nlive = n;
	for (uint32_t i = 0; i < w->steps.len; i++) {
		const struct dt_reduce_step *st = &w->steps.data[i];
		n += usage_counts(w, st->v) && st->ballast > 0;
	}
	for (uint32_t e = 0; e < w->e.len; e++)
		m += w->e.data[e].alive;
	struct dt_solve_problem *r = &red->r;
	r->nnodes = n;
	r->nedges = m;
	r->usage_limit = p->usage_limit;
	r->nodes = dt_calloc((size_t)n + 1, sizeof(*r->nodes));
	r->edges = dt_calloc((size_t)m + 1, sizeof(*r->edges));
	red->orders = dt_calloc(2 * (size_t)m + 1, sizeof *red->orders);
	red->orig_node = dt_malloc(sizeof(int32_t) * ((size_t)n + 1));
	red->orig_strat = dt_calloc((size_t)n + 1, sizeof(int32_t *));
	for (int32_t v = 0; v < p->nnodes; v++) {
		struct wnode *nd = &w->n[v];
		if (!nd->alive)
			continue;
		struct dt_solve_node *rn = &r->nodes[id[v]];
		rn->start = p->nodes[v].start;
		rn->end = p->nodes[v].end;
		rn->nstrategies = nd->ns;
		rn->cost = nd->cost;
		rn->usage = nd->usage;
		red->orig_node[id[v]] = v;
		red->orig_strat[id[v]] = nd->map;
		nd->cost = nd->usage = NULL;
		nd->map = NULL;
	}
	int32_t b = nlive;
	for (uint32_t i = 0; i < w->steps.len; i++) {
		const struct dt_reduce_step *st = &w->steps.data[i];
		if (!usage_counts(w, st->v) || st->ballast <= 0)
			continue;
		struct dt_solve_node *rn = &r->nodes[b];
		rn->start = p->nodes[st->v].start;
		rn->end = p->nodes[st->v].end;
		rn->nstrategies = 1;
		rn->cost = dt_calloc(1, sizeof(int64_t));
		rn->usage = dt_malloc(sizeof(int64_t));
		rn->usage[0] = st->ballast;
		red->orig_node[b] = -1;
		red->orig_strat[b] = dt_calloc(1, sizeof(int32_t));
		b++;
	}
	m = 0;
	for (uint32_t e = 0; e < w->e.len; e++) {
		struct wedge *ed = &w->e.data[e];
		if (!ed->alive)
			continue;
		int32_t ns[2] = {w->n[ed->a].ns, w->n[ed->b].ns};
		r->edges[m] = (struct dt_solve_edge){
		    id[ed->a], id[ed->b],
		    ed->own_m ? ed->m
			      : copy_words(ed->m, (size_t)ns[0] * (size_t)ns[1],
					   sizeof *ed->m)};
		ed->own_m = false;
		for (int k = 0; k < 2; k++)
			if (ed->order[k])
				red->orders[2 * m + k] =
				    ed->own_order[k]
					? ed->order[k]
					: copy_words(ed->order[k], 3 * (size_t)ns[k],
						     sizeof *ed->order[k]);
		ed->own_order[0] = ed->own_order[1] = false;
		m++;
	}
	dt_free(id);
}

void dt_solve_reduce(const struct dt_solve_problem *p, uint64_t *const *orders,
		     struct dt_solve_reduction *red)
{
	struct work w;
	work_init(&w, p, orders);
	for (int32_t v = p->nnodes - 1; v >= 0; v--)
		push(&w, v);
	while (w.queue.len > 0) {
		int32_t v = w.queue.data[--w.queue.len];
		w.n[v].queued = false;
		if (w.n[v].alive)
			visit(&w, v);
	}
	memset(red, 0, sizeof(*red));
	emit(&w, red);
	red->offset = w.offset;
	red->norig = p->nnodes;
	red->nsteps = (int32_t)w.steps.len;
	red->steps = w.steps.data;
	red->removed_strategies = w.removed;
	red->eliminated_nodes = w.eliminated;
	red->merged_edges = w.merged;
	for (int32_t v = 0; v < p->nnodes; v++) {
		dt_free(w.n[v].map);
		dt_free(w.n[v].cost);
		dt_free(w.n[v].usage);
		dt_vec_free(&w.n[v].adj);
	}
	for (uint32_t e = 0; e < w.e.len; e++)
		set_matrix(&w.e.data[e], NULL);
	dt_free(w.n);
	dt_free(w.mark);
	dt_vec_free(&w.e);
	dt_vec_free(&w.queue);
}

void dt_solve_reduction_expand(const struct dt_solve_reduction *red, const int32_t *x,
			 int32_t *out)
{
	for (int32_t i = 0; i < red->r.nnodes; i++)
		if (red->orig_node[i] >= 0)
			out[red->orig_node[i]] = red->orig_strat[i][x[i]];
	for (int32_t i = red->nsteps - 1; i >= 0; i--) {
		const struct dt_reduce_step *st = &red->steps[i];
		switch (st->kind) {
		case STEP_FIX:
			out[st->v] = st->fixed;
			break;
		case STEP_LEAF:
			out[st->v] = st->table[out[st->u]];
			break;
		case STEP_SERIES:
			out[st->v] = series_choice(&st->series, out[st->u], out[st->w]);
			break;
		}
	}
}

void dt_solve_reduction_propagate(const struct dt_solve_reduction *red, const int32_t *cur,
			    int32_t *want, struct dt_ids *t)
{
	for (int32_t i = red->nsteps - 1; i >= 0; i--) {
		const struct dt_reduce_step *st = &red->steps[i];
		if (st->kind == STEP_FIX || (want[st->u] < 0 && (st->kind == STEP_LEAF ||
								 want[st->w] < 0)))
			continue;
		int32_t su = want[st->u] >= 0 ? want[st->u] : cur[st->u];
		int32_t s = st->kind == STEP_LEAF
				    ? st->table[su]
				    : series_choice(&st->series, su,
						    want[st->w] >= 0 ? want[st->w] : cur[st->w]);
		if (s < 0) /* a neighbour choice the reduction had dropped */
			s = cur[st->v];
		if (want[st->v] < 0)
			dt_vec_push(t, st->v);
		want[st->v] = s;
	}
}

void dt_solve_reduction_restrict(const struct dt_solve_reduction *red, const int32_t *orig,
			   int32_t *x)
{
	const struct dt_solve_problem *c = &red->r;
	for (int32_t i = 0; i < c->nnodes; i++) {
		const struct dt_solve_node *nd = &c->nodes[i];
		int32_t want = red->orig_node[i] >= 0 ? orig[red->orig_node[i]] : -1;
		int32_t best = 0;
		for (int32_t s = 0; s < nd->nstrategies; s++) {
			if (red->orig_strat[i][s] == want) {
				best = s;
				break;
			}
			if (nd->cost[s] < nd->cost[best])
				best = s;
		}
		x[i] = best;
	}
}

void dt_solve_reduction_fini(struct dt_solve_reduction *red)
{
	for (int32_t i = 0; i < red->r.nnodes; i++)
		dt_free(red->orig_strat[i]);
	dt_free(red->orig_strat);
	dt_free(red->orig_node);
	for (int32_t i = 0; i < red->nsteps; i++) {
		struct dt_reduce_step *st = &red->steps[i];
		dt_free(st->table);
		dt_free(st->series.cost);
		dt_free(st->series.map);
		dt_free(st->series.u_at);
		dt_free(st->series.w_at);
		dt_free(st->series.own[0]);
		dt_free(st->series.own[1]);
	}
	dt_free(red->steps);
	for (int32_t e = 0; e < 2 * red->r.nedges; e++)
		dt_free(red->orders[e]);
	dt_free(red->orders);
	dt_solve_problem_fini(&red->r);
	memset(red, 0, sizeof(*red));
}

void dt_adjacency_init(struct dt_adjacency *a, const struct dt_solve_problem *p)
{
	a->off = dt_calloc((size_t)p->nnodes + 2, sizeof(int32_t));
	a->edge = dt_malloc(sizeof(int32_t) * (2 * (size_t)p->nedges + 1));
	for (int32_t e = 0; e < p->nedges; e++) {
		a->off[p->edges[e].from + 2]++;
		a->off[p->edges[e].to + 2]++;
	}
	for (int32_t v = 0; v < p->nnodes; v++)
		a->off[v + 2] += a->off[v + 1];
	for (int32_t e = 0; e < p->nedges; e++) {
		a->edge[a->off[p->edges[e].from + 1]++] = e;
		a->edge[a->off[p->edges[e].to + 1]++] = e;
	}
}

void dt_adjacency_fini(struct dt_adjacency *a)
{
	dt_free(a->off);
	dt_free(a->edge);
	a->off = a->edge = NULL;
}
