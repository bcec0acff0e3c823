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

struct dt_reduce_step {
	enum step_kind kind;
	int32_t v, u, w;   /* eliminated node, its neighbours (original ids) */
	int32_t fixed;     /* STEP_FIX: original strategy */
	int64_t ballast;   /* v's usage, which no choice changes */
	int32_t *table;    /* LEAF: [orig S_u]; SERIES: [orig S_u x orig S_w] */
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
	int64_t *m;            /* [ns_a x ns_b] */
	uint64_t *zero[2];     /* per strategy of a (zero[0]) or b (zero[1]):
				  bit o set where its entry towards the
				  other end's strategy o < 64 is 0; NULL
				  until dominance needs it (stale_zeros) */
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

/* An edge's matrix from one end v: the entry of v's strategy s towards
 * the other end's strategy o < n is m[s * along + o * across]. */
struct rows {
	const int64_t *m;
	int32_t along, across, n;
};

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

/* Forget e's zero masks (its matrix changed). */
static void stale_zeros(struct wedge *ed)
{
	for (int k = 0; k < 2; k++) {
		dt_free(ed->zero[k]);
		ed->zero[k] = NULL;
	}
}

static void kill_edge(struct work *w, int32_t e)
{
	w->e.data[e].alive = false;
	dt_free(w->e.data[e].m);
	w->e.data[e].m = NULL;
	stale_zeros(&w->e.data[e]);
}

static int32_t add_edge(struct work *w, int32_t a, int32_t b, int64_t *m)
{
	int32_t id = (int32_t)dt_vec_push(&w->e, ((struct wedge){
						    .a = a, .b = b, .m = m,
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
		for (int32_t a = 0; a < w->n[k->a].ns; a++)
			for (int32_t b = 0; b < w->n[k->b].ns; b++) {
				int64_t *x = &k->m[(int64_t)a * w->n[k->b].ns + b];
				int32_t sv = k->a == v ? a : b, su = k->a == v ? b : a;
				*x = dt_solve_add(*x, entry(&r, sv, su));
			}
		stale_zeros(k);
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
		dt_free(ed->m);
		ed->m = m;
		stale_zeros(ed);
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

/* The zero masks of e's matrix from end v (struct wedge), computed when
 * missing. */
static const uint64_t *edge_zeros(struct work *w, int32_t e, int32_t v)
{
	struct wedge *ed = &w->e.data[e];
	int end = ed->a == v ? 0 : 1;
	if (!ed->zero[end]) {
		struct rows r = rows_of(w, e, v);
		int32_t ns = w->n[v].ns, n = r.n < 64 ? r.n : 64;
		uint64_t *z = dt_malloc(sizeof *z * (size_t)ns);
		for (int32_t s = 0; s < ns; s++) {
			z[s] = 0;
			for (int32_t o = 0; o < n; o++)
				z[s] |= (uint64_t)(entry(&r, s, o) == 0) << o;
		}
		ed->zero[end] = z;
	}
	return ed->zero[end];
}

/* Does strategy b of v dominate a (b no worse in every respect)? zero[i]
 * are the zero masks of incident matrix i (edge_zeros): where b
 * dominates, b's row is 0 wherever a's is (costs are >= 0), so most pairs
 * are told apart without reading their rows. */
static bool dominates(const struct work *w, int32_t v, const struct rows *r,
		      const uint64_t *const *zero, int32_t b, int32_t a)
{
	const struct wnode *nd = &w->n[v];
	if (nd->cost[b] > nd->cost[a] ||
	    (usage_counts(w, v) && nd->usage[b] > nd->usage[a]))
		return false;
	for (uint32_t i = 0; i < nd->adj.len; i++)
		if (zero[i][a] & ~zero[i][b])
			return false;
	for (uint32_t i = 0; i < nd->adj.len; i++)
		for (int32_t o = 0; o < r[i].n; o++)
			if (entry(&r[i], b, o) > entry(&r[i], a, o))
				return false;
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
		struct rows r[DOMINANCE_MAX_DEGREE];
		const uint64_t *zero[DOMINANCE_MAX_DEGREE];
		for (uint32_t i = 0; i < nd->adj.len; i++) {
			r[i] = rows_of(w, nd->adj.data[i], v);
			zero[i] = edge_zeros(w, nd->adj.data[i], v);
		}
		for (int32_t a = 0; a < nd->ns && left > 1; a++)
			for (int32_t b = 0; b < nd->ns && kept[a]; b++)
				if (b != a && kept[b] && dominates(w, v, r, zero, b, a)) {
					kept[a] = false;
					left--;
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
		   int32_t x, int32_t fixed, int32_t *table)
{
	dt_vec_push(&w->steps, ((struct dt_reduce_step){kind, v, u, x, fixed,
							 w->n[v].usage[0], table}));
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
	record(w, STEP_FIX, v, -1, -1, nd->map[0], NULL);
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
		record(w, STEP_FIX, v, -1, -1, nd->map[best], NULL);
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
	record(w, STEP_LEAF, v, u, -1, -1, table);
	push(w, u);
}

/* row[sx] = min(row[sx], a + b[sx]) for sx < nx, and arg[sx] = sv where
 * the sum is less (a is finite; an infinite b[sx] never is): the inner
 * loop of a min-plus product, without branches so that it vectorizes,
 * with an AVX2 clone where the CPU has it. */
DT_SOLVE_VECTOR_CLONES
static void min_plus_row(int64_t *restrict row, int32_t *restrict arg,
			 const int64_t *restrict b, int64_t a, int32_t sv,
			 int32_t nx)
{
	int64_t lim = DT_SOLVE_INFINITE - a;
	for (int32_t sx = 0; sx < nx; sx++) {
		int64_t c = b[sx] < lim ? a + b[sx] : DT_SOLVE_INFINITE;
		bool less = c < row[sx];
		row[sx] = less ? c : row[sx];
		arg[sx] = less ? sv : arg[sx];
	}
}

/* Degree 2, usage fixed: an edge u-x carrying v's best choice. */
static void eliminate_series(struct work *w, int32_t v)
{
	struct wnode *nd = &w->n[v];
	int32_t e1 = nd->adj.data[0], e2 = nd->adj.data[1];
	int32_t u = other(w, e1, v), x = other(w, e2, v);
	int32_t nu = w->n[u].ns, nx = w->n[x].ns;
	int32_t onx = w->p->nodes[x].nstrategies;
	int32_t *table = unset_table((size_t)w->p->nodes[u].nstrategies * onx);
	int64_t *m = dt_malloc(sizeof(int64_t) * ((size_t)nu * nx + 1));
	/* Row by row of u (min-plus product, rows of v's matrix towards x
	 * contiguous; v's strategies infinite towards su skipped). */
	int64_t *vx = dt_malloc(sizeof(int64_t) * ((size_t)nd->ns * nx + 1));
	struct rows ru = rows_of(w, e1, v), rx = rows_of(w, e2, v);
	for (int32_t sv = 0; sv < nd->ns; sv++)
		for (int32_t sx = 0; sx < nx; sx++)
			vx[(int64_t)sv * nx + sx] = entry(&rx, sv, sx);
	int32_t *arg = dt_malloc(sizeof(int32_t) * ((size_t)nx + 1));
	for (int32_t su = 0; su < nu; su++) {
		int64_t *row = &m[(int64_t)su * nx];
		for (int32_t sx = 0; sx < nx; sx++) {
			row[sx] = DT_SOLVE_INFINITE;
			arg[sx] = 0;
		}
		for (int32_t sv = 0; sv < nd->ns; sv++) {
			int64_t a = dt_solve_add(nd->cost[sv], entry(&ru, sv, su));
			if (a < DT_SOLVE_INFINITE)
				min_plus_row(row, arg, &vx[(int64_t)sv * nx], a,
					     sv, nx);
		}
		for (int32_t sx = 0; sx < nx; sx++)
			table[(int64_t)w->n[u].map[su] * onx + w->n[x].map[sx]] =
				nd->map[arg[sx]];
	}
	dt_free(vx);
	dt_free(arg);
	kill_edge(w, e1);
	kill_edge(w, e2);
	record(w, STEP_SERIES, v, u, x, -1, table);
	add_edge(w, u, x, m);
	merge_parallel(w, u);
	push(w, u);
	push(w, x);
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

static void work_init(struct work *w, const struct dt_solve_problem *p)
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
		size_t n = (size_t)p->nodes[o->from].nstrategies * p->nodes[o->to].nstrategies;
		int64_t *m = dt_malloc(sizeof(int64_t) * (n + 1));
		memcpy(m, o->cost, sizeof(int64_t) * n);
		add_edge(w, o->from, o->to, m);
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
		r->edges[m++] = (struct dt_solve_edge){id[ed->a], id[ed->b], ed->m};
		ed->m = NULL;
	}
	dt_free(id);
}

void dt_solve_reduce(const struct dt_solve_problem *p, struct dt_solve_reduction *red)
{
	struct work w;
	work_init(&w, p);
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
	red->orig_nstrategies = dt_malloc(sizeof(int32_t) * ((size_t)p->nnodes + 1));
	for (int32_t v = 0; v < p->nnodes; v++)
		red->orig_nstrategies[v] = p->nodes[v].nstrategies;
	for (int32_t v = 0; v < p->nnodes; v++) {
		dt_free(w.n[v].map);
		dt_free(w.n[v].cost);
		dt_free(w.n[v].usage);
		dt_vec_free(&w.n[v].adj);
	}
	for (uint32_t e = 0; e < w.e.len; e++) {
		dt_free(w.e.data[e].m);
		stale_zeros(&w.e.data[e]);
	}
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
			out[st->v] = st->table[(int64_t)out[st->u] *
						red->orig_nstrategies[st->w] + out[st->w]];
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
		int32_t s = st->table[su];
		if (st->kind == STEP_SERIES) {
			int32_t sw = want[st->w] >= 0 ? want[st->w] : cur[st->w];
			s = st->table[(int64_t)su * red->orig_nstrategies[st->w] + sw];
		}
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
	for (int32_t i = 0; i < red->nsteps; i++)
		dt_free(red->steps[i].table);
	dt_free(red->steps);
	dt_free(red->orig_nstrategies);
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
