// SPDX-License-Identifier: MIT
/* elim.c: exact minimisation of a problem's cost by variable elimination
 * (internal.h, dt_eliminate): nodes are eliminated one by one, cheapest
 * table first; eliminating v replaces every cost term touching v by one
 * table over v's neighbours holding, per choice of theirs, v's best cost
 * (and which strategy gives it). The last tables are constants; the plan
 * is read back in reverse order. Usage is ignored, so the answer is the
 * optimum of the problem without its limit: exact for problems without
 * one (and for the priced problems of lagrange.c, whose optimum gives a
 * lower bound).
 *
 *   a ─ v ─ b        eliminate v: f(a, b) = min_s c_v(s) + e(a, s) + e(s, b)
 *       │                         (a triangle a–b–c: f(a, b, c))
 *       c
 *
 * Cost: an ordering is O((n + fill) log n); each elimination costs its table
 * (the product of the strategy counts of v and its neighbours) times the
 * terms it sums. Two greedy orders are planned, and the one whose tables
 * sum to less is run: smallest table first, and smallest table left behind
 * first (over the cores the real-model problems reduce to, the second sums
 * to less in 87% and the first in 9%; mlp_sgd on 2x2x2: 268 M entries
 * against 44 M). The work budget bounds the sum of those tables:
 * graphs of small treewidth (trees of cycles, a transformer's dataflow)
 * pass, dense ones are refused before any table is built. */
#include "internal.h"

#include <string.h>

/* The tables kept (best choices, and the live tables) may hold 1/8 of the
 * work budget's entries. */
#define ELIM_MEMORY 8

/* A cost term over a few nodes: table[index] with index the mixed-radix
 * number of their strategies, the first node most significant. Edges of
 * the problem are terms over two nodes that point at its matrix. */
struct term {
	int32_t nvars;
	int32_t *vars;
	int64_t *table;
	bool owned, alive;
};

/* An elimination order and the neighbours each node has when it goes. */
struct order {
	int32_t *order;
	int32_t **scope;         /* [nnodes] */
	int32_t *nscope;
	int64_t work;            /* the tables' entries, summed */
};

struct elim {
	const struct dt_solve_problem *p;
	DT_VEC(struct term) terms;
	DT_VEC(int32_t) *of;     /* [nnodes]: terms touching each node */
	struct order o;
	uint16_t **argmin;       /* [nnodes]: best strategy per scope choice */
	int64_t *unary;          /* [nnodes] offsets into ucost */
	int64_t *ucost;          /* every node's own cost, concatenated */
};

/* A binary min-heap of (weight, node), ties to the lower node: the order
 * is deterministic. */
struct entry {
	double w;
	int32_t v;
};
struct heap {
	struct entry *data;
	uint32_t len, cap;
};

static bool less(struct entry a, struct entry b)
{
	return a.w < b.w || (a.w == b.w && a.v < b.v);
}

static void heap_push(struct heap *h, double w, int32_t v)
{
	uint32_t i = dt_vec_push(h, ((struct entry){w, v}));
	while (i > 0 && less(h->data[i], h->data[(i - 1) / 2])) {
		struct entry t = h->data[i];
		h->data[i] = h->data[(i - 1) / 2];
		h->data[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct entry heap_pop(struct heap *h)
{
	struct entry top = h->data[0];
	h->data[0] = h->data[--h->len];
	for (uint32_t i = 0;;) {
		uint32_t m = i, l = 2 * i + 1, r = l + 1;
		if (l < h->len && less(h->data[l], h->data[m]))
			m = l;
		if (r < h->len && less(h->data[r], h->data[m]))
			m = r;
		if (m == i)
			break;
		struct entry t = h->data[i];
		h->data[i] = h->data[m];
		h->data[m] = t;
		i = m;
	}
	return top;
}

/* Entries of the table eliminating v with neighbours nb[n] builds, or
 * with `kept` of the one it leaves (over nb alone); capped near 4e18. */
static double table_size(const struct dt_solve_problem *p, int32_t v,
			 const int32_t *nb, uint32_t n, bool kept)
{
	double w = kept ? 1 : p->nodes[v].nstrategies;
	for (uint32_t i = 0; i < n && w < 4e18; i++)
		w *= p->nodes[nb[i]].nstrategies;
	return w;
}

static void order_init(struct order *o, int32_t n)
{
	size_t sz = (size_t)n + 1;
	*o = (struct order){.order = dt_malloc(sizeof(int32_t) * sz),
			    .scope = dt_calloc(sz, sizeof(int32_t *)),
			    .nscope = dt_calloc(sz, sizeof(int32_t))};
}

static void order_fini(struct order *o, int32_t n)
{
	for (int32_t v = 0; v < n; v++)
		dt_free(o->scope[v]);
	dt_free(o->order);
	dt_free(o->scope);
	dt_free(o->nscope);
}

/* An order into o: repeatedly the node whose elimination builds the
 * smallest table (with `kept`, leaves the smallest), its neighbours then
 * joined pairwise (a heap, O((n + fill) log n)). Returns false when the
 * summed tables would pass `max_work` entries, or the tables kept
 * `max_work / ELIM_MEMORY`. */
static bool plan_order(const struct dt_solve_problem *p, int64_t max_work,
		       bool kept, struct order *o)
{
	int32_t n = p->nnodes;
	DT_VEC(int32_t) *adj = dt_calloc((size_t)n + 1, sizeof(*adj));
	int32_t *mark = dt_malloc(sizeof(int32_t) * ((size_t)n + 1));
	bool *gone = dt_calloc((size_t)n + 1, sizeof(bool));
	for (int32_t v = 0; v < n; v++)
		mark[v] = -1;
	for (int32_t e = 0; e < p->nedges; e++) {
		int32_t a = p->edges[e].from, b = p->edges[e].to;
		dt_vec_push(&adj[a], b);
		dt_vec_push(&adj[b], a);
	}
	/* Drop duplicate neighbours. */
	for (int32_t v = 0; v < n; v++) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < adj[v].len; i++)
			if (mark[adj[v].data[i]] != v) {
				mark[adj[v].data[i]] = v;
				adj[v].data[k++] = adj[v].data[i];
			}
		adj[v].len = k;
	}
	double *weight = dt_malloc(sizeof(double) * ((size_t)n + 1));
	struct heap h = {0};
	for (int32_t v = 0; v < n; v++) {
		weight[v] = table_size(p, v, adj[v].data, adj[v].len, kept);
		heap_push(&h, weight[v], v);
	}
	int64_t work = 0, memory = 0;
	bool ok = true;
	for (int32_t step = 0; step < n && ok; step++) {
		struct entry top;
		do /* entries of eliminated nodes or old weights are stale */
			top = heap_pop(&h);
		while (gone[top.v] || top.w != weight[top.v]);
		int32_t v = top.v;
		double left = table_size(p, v, adj[v].data, adj[v].len, true);
		double built = left * p->nodes[v].nstrategies;
		if (built > (double)(max_work - work) ||
		    left > (double)(max_work / ELIM_MEMORY - memory)) {
			ok = false;
			break;
		}
		work += (int64_t)built;
		memory += (int64_t)left;
		gone[v] = true;
		o->order[step] = v;
		o->nscope[v] = (int32_t)adj[v].len;
		o->scope[v] = dt_malloc(sizeof(int32_t) * (adj[v].len + 1));
		if (adj[v].len > 0) /* an isolated node's list is NULL */
			memcpy(o->scope[v], adj[v].data, sizeof(int32_t) * adj[v].len);
		/* v leaves its neighbours' lists; they become a clique. */
		for (uint32_t i = 0; i < adj[v].len; i++) {
			int32_t a = adj[v].data[i];
			uint32_t k = 0;
			for (uint32_t j = 0; j < adj[a].len; j++) {
				mark[adj[a].data[j]] = -2 - a;
				if (adj[a].data[j] != v)
					adj[a].data[k++] = adj[a].data[j];
			}
			adj[a].len = k;
			for (uint32_t j = 0; j < adj[v].len; j++) {
				int32_t b = adj[v].data[j];
				if (b != a && mark[b] != -2 - a) {
					mark[b] = -2 - a;
					dt_vec_push(&adj[a], b);
				}
			}
		}
		for (uint32_t i = 0; i < adj[v].len; i++) {
			int32_t a = adj[v].data[i];
			weight[a] = table_size(p, a, adj[a].data, adj[a].len, kept);
			heap_push(&h, weight[a], a);
		}
	}
	o->work = work;
	dt_free(weight);
	dt_vec_free(&h);
	for (int32_t v = 0; v < n; v++)
		dt_vec_free(&adj[v]);
	dt_free(adj);
	dt_free(mark);
	dt_free(gone);
	return ok;
}

static int32_t add_term(struct elim *el, struct term t)
{
	int32_t id = (int32_t)dt_vec_push(&el->terms, t);
	for (int32_t i = 0; i < t.nvars; i++)
		dt_vec_push(&el->of[t.vars[i]], id);
	return id;
}

/* sum[s] += row[s] for s < n, saturating: without branches, so that it
 * vectorizes (inlined in eliminate's clones). */
static inline void add_row(int64_t *restrict sum,
			   const int64_t *restrict row, int32_t n)
{
	for (int32_t s = 0; s < n; s++)
		sum[s] = sum[s] > DT_SOLVE_INFINITE - row[s] ? DT_SOLVE_INFINITE
							     : sum[s] + row[s];
}

/* A copy of term t's table with v moved to the last place (its strategy
 * varying fastest), the other nodes in their order. */
static int64_t *v_last(const struct dt_solve_problem *p, const struct term *t,
		       int32_t v)
{
	int64_t size = 1, vstride = 1, nv = p->nodes[v].nstrategies;
	for (int32_t i = t->nvars - 1; i >= 0; i--) {
		if (t->vars[i] == v)
			vstride = size;
		size *= p->nodes[t->vars[i]].nstrategies;
	}
	/* An index of t splits around v's digit s: hi (the nodes before v),
	 * s, lo (those after, vstride of them). */
	int64_t *out = dt_malloc(sizeof(int64_t) * (size_t)size);
	const int64_t *in = t->table;
	for (int64_t hi = 0; hi < size / (vstride * nv); hi++)
		for (int64_t s = 0; s < nv; s++)
			for (int64_t lo = 0; lo < vstride; lo++)
				out[(hi * vstride + lo) * nv + s] = *in++;
	return out;
}

/* Eliminate v: one term over its scope from the live terms touching it. */
DT_SOLVE_VECTOR_CLONES
static void eliminate(struct elim *el, int32_t v)
{
	const struct dt_solve_problem *p = el->p;
	int32_t nsc = el->o.nscope[v], *sc = el->o.scope[v];
	int32_t nv = p->nodes[v].nstrategies;
	/* The live terms on v, with each one's stride per scope node and
	 * for v (0 where the term does not hold it). */
	DT_VEC(int32_t) on = {0};
	for (uint32_t i = 0; i < el->of[v].len; i++) {
		int32_t t = el->of[v].data[i];
		if (el->terms.data[t].alive) {
			el->terms.data[t].alive = false;
			dt_vec_push(&on, t);
		}
	}
	int32_t nt = (int32_t)on.len;
	int64_t *stride = dt_calloc((size_t)nt * (size_t)(nsc + 1) + 1, sizeof(int64_t));
	/* Each term's table with v's strategy varying fastest (a copy where
	 * it does not already, freed after this elimination: at most the
	 * terms' own size more, for a while): the sums over v's strategies
	 * below then read consecutive entries. */
	const int64_t **tab = dt_malloc(sizeof(int64_t *) * ((size_t)nt + 1));
	int64_t **copies = dt_calloc((size_t)nt + 1, sizeof(int64_t *));
	for (int32_t k = 0; k < nt; k++) {
		const struct term *t = &el->terms.data[on.data[k]];
		int64_t *st = &stride[(size_t)k * (size_t)(nsc + 1)];
		tab[k] = t->table;
		if (t->vars[t->nvars - 1] != v)
			tab[k] = copies[k] = v_last(p, t, v);
		/* Strides in the table read: v's is 1, the others' the
		 * product of the sizes after them, v left out. */
		st[nsc] = 1;
		int64_t s = p->nodes[v].nstrategies;
		for (int32_t i = t->nvars - 1; i >= 0; i--) {
			int32_t u = t->vars[i];
			if (u == v)
				continue;
			for (int32_t j = 0; j < nsc; j++)
				if (sc[j] == u)
					st[j] = s;
			s *= p->nodes[u].nstrategies;
		}
	}
	int64_t size = 1;
	for (int32_t j = 0; j < nsc; j++)
		size *= p->nodes[sc[j]].nstrategies;
	int64_t *table = dt_malloc(sizeof(int64_t) * (size_t)size);
	uint16_t *arg = dt_malloc(sizeof(uint16_t) * (size_t)size);
	int32_t *digit = dt_calloc((size_t)nsc + 1, sizeof(int32_t));
	int64_t *off = dt_calloc((size_t)nt + 1, sizeof(int64_t));
	int64_t *sum = dt_malloc(sizeof(int64_t) * (size_t)nv);
	const int64_t *uc = &el->ucost[el->unary[v]];
	for (int64_t idx = 0; idx < size; idx++) {
		/* v's cost per strategy for this scope choice, term by term. */
		memcpy(sum, uc, sizeof(int64_t) * (size_t)nv);
		for (int32_t k = 0; k < nt; k++)
			add_row(sum, &tab[k][off[k]], nv);
		int32_t bs = 0;
		for (int32_t s = 1; s < nv; s++)
			bs = sum[s] < sum[bs] ? s : bs;
		table[idx] = sum[bs];
		arg[idx] = (uint16_t)bs;
		/* Next scope choice: the last node counts fastest. */
		for (int32_t j = nsc - 1; j >= 0; j--) {
			int32_t ns = p->nodes[sc[j]].nstrategies;
			for (int32_t k = 0; k < nt; k++)
				off[k] += stride[(size_t)k * (size_t)(nsc + 1) + (size_t)j];
			if (++digit[j] < ns)
				break;
			for (int32_t k = 0; k < nt; k++)
				off[k] -= (int64_t)ns * stride[(size_t)k * (size_t)(nsc + 1) + (size_t)j];
			digit[j] = 0;
		}
	}
	el->argmin[v] = arg;
	int32_t *vars = dt_malloc(sizeof(int32_t) * ((size_t)nsc + 1));
	memcpy(vars, sc, sizeof(int32_t) * (size_t)nsc);
	for (int32_t k = 0; k < nt; k++) {
		struct term *t = &el->terms.data[on.data[k]];
		if (t->owned) {
			dt_free(t->table);
			t->owned = false;
		}
	}
	add_term(el, (struct term){nsc, vars, table, true, true});
	for (int32_t k = 0; k < nt; k++)
		dt_free(copies[k]);
	dt_free(copies);
	dt_free(tab);
	dt_free(digit);
	dt_free(off);
	dt_free(sum);
	dt_free(stride);
	dt_vec_free(&on);
}

bool dt_eliminate(const struct dt_solve_problem *p, int64_t max_work, int32_t *x,
		  dt_wide *cost)
{
	int32_t n = p->nnodes;
	size_t sz = (size_t)n + 1;
	struct elim el = {.p = p};
	el.of = dt_calloc(sz, sizeof(*el.of));
	el.argmin = dt_calloc(sz, sizeof(uint16_t *));
	el.unary = dt_malloc(sizeof(int64_t) * sz);
	int64_t total = 0;
	for (int32_t v = 0; v < n; v++) {
		el.unary[v] = total;
		total += p->nodes[v].nstrategies;
	}
	el.ucost = dt_malloc(sizeof(int64_t) * ((size_t)total + 1));
	for (int32_t v = 0; v < n; v++)
		memcpy(&el.ucost[el.unary[v]], p->nodes[v].cost,
		       sizeof(int64_t) * (size_t)p->nodes[v].nstrategies);
	bool ok = true;
	for (int32_t v = 0; v < n; v++)
		ok = ok && p->nodes[v].nstrategies <= UINT16_MAX;
	/* Of the two orders within the budget, the one of smaller tables. */
	struct order by_kept;
	order_init(&el.o, n);
	order_init(&by_kept, n);
	bool built_fits = ok && plan_order(p, max_work, false, &el.o);
	bool kept_fits = ok && plan_order(p, max_work, true, &by_kept);
	if (kept_fits && (!built_fits || by_kept.work < el.o.work)) {
		struct order t = el.o;
		el.o = by_kept;
		by_kept = t;
	}
	order_fini(&by_kept, n);
	ok = built_fits || kept_fits;
	if (ok) {
		for (int32_t e = 0; e < p->nedges; e++) {
			int32_t *vars = dt_malloc(sizeof(int32_t) * 2);
			vars[0] = p->edges[e].from;
			vars[1] = p->edges[e].to;
			add_term(&el, (struct term){2, vars, p->edges[e].cost, false, true});
		}
		for (int32_t i = 0; i < n; i++)
			eliminate(&el, el.o.order[i]);
		for (int32_t i = n - 1; i >= 0; i--) {
			int32_t v = el.o.order[i];
			int64_t idx = 0;
			for (int32_t j = 0; j < el.o.nscope[v]; j++) {
				int32_t u = el.o.scope[v][j];
				idx = idx * p->nodes[u].nstrategies + x[u];
			}
			x[v] = el.argmin[v][idx];
		}
		*cost = dt_plan_cost(p, x); /* the tables saturate; this does not */
	}
	for (uint32_t t = 0; t < el.terms.len; t++) {
		dt_free(el.terms.data[t].vars);
		if (el.terms.data[t].owned)
			dt_free(el.terms.data[t].table);
	}
	dt_vec_free(&el.terms);
	for (int32_t v = 0; v < n; v++) {
		dt_vec_free(&el.of[v]);
		dt_free(el.argmin[v]);
	}
	dt_free(el.of);
	order_fini(&el.o, n);
	dt_free(el.argmin);
	dt_free(el.unary);
	dt_free(el.ucost);
	return ok;
}
