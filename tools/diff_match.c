// SPDX-License-Identifier: MIT
/* diff_match.c: which node of one graph is which node of the other, for
 * `dtopt diff`; and the equality of two nodes' arguments it rests on.
 *
 * First by name (any kind). Then, for each still-unmatched call
 * node b of B in graph order, by structure: the first unmatched call node
 * a of A (in A's order) with b's target, whose node arguments are matched
 * to b's (through the mapping) and whose other arguments equal b's. A's
 * candidates sit in a hash table keyed by (target, arguments with node
 * references translated to B's ids); a node enters it once all its inputs
 * are matched, so matching is linear in the nodes but for long runs of
 * structurally identical renamed nodes. Placeholders and the output match
 * by name only. */
#include "diff.h"

#include <math.h>
#include <string.h>

/* ---- value equality and hashing (A's node ids seen through a2b) ---- */

bool dt_diff_str_equal(const struct dt_diff *d, dt_str x, dt_str y)
{
	return strcmp(dt_str_get(d->a, x), dt_str_get(d->b, y)) == 0;
}

bool dt_diff_ints_equal(const struct dt_diff *d, dt_ints x, dt_ints y)
{
	int nx, ny;
	const int64_t *vx = dt_ints_get(d->a, x, &nx);
	const int64_t *vy = dt_ints_get(d->b, y, &ny);
	return nx == ny && (nx == 0 || memcmp(vx, vy, (size_t)nx * sizeof *vx) == 0);
}

/* Bitwise, so that what prints differently differs; all NaNs are equal. */
static bool float_equal(double x, double y)
{
	return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof x) == 0;
}

bool dt_diff_arg_equal(const struct dt_diff *d, const struct dt_arg *x,
		       const struct dt_arg *y)
{
	const struct dt_module *a = d->a, *b = d->b;
	if (x->kind != y->kind)
		return false;
	switch ((enum dt_arg_kind)x->kind) {
	case DT_ARG_NODE:
		return d->a2b[x->v.node] == y->v.node;
	case DT_ARG_NODES:
		if (x->len != y->len)
			return false;
		for (uint32_t i = 0; i < x->len; i++)
			if (d->a2b[a->refs.data[x->v.first + i]] !=
			    b->refs.data[y->v.first + i])
				return false;
		return true;
	case DT_ARG_INT: return x->v.i == y->v.i;
	case DT_ARG_INTS:
		return dt_diff_ints_equal(d, x->v.ints, y->v.ints);
	case DT_ARG_FLOAT: return float_equal(x->v.f, y->v.f);
	case DT_ARG_FLOATS:
		if (x->len != y->len)
			return false;
		for (uint32_t i = 0; i < x->len; i++)
			if (!float_equal(a->floats.data[x->v.first + i],
					 b->floats.data[y->v.first + i]))
				return false;
		return true;
	case DT_ARG_BOOL: return x->v.b == y->v.b;
	case DT_ARG_STR:
		return dt_diff_str_equal(d, x->v.s, y->v.s);
	case DT_ARG_DTYPE: return x->v.dtype == y->v.dtype;
	case DT_ARG_NONE: return true;
	case DT_ARG_ITEMS:
		if (x->len != y->len)
			return false;
		for (uint32_t i = 0; i < x->len; i++)
			if (!dt_diff_arg_equal(d, &a->args.data[x->v.first + i],
					       &b->args.data[y->v.first + i]))
				return false;
		return true;
	}
	return false;
}

int dt_diff_positional_count(const struct dt_module *m, const struct dt_node *n)
{
	int k = 0;
	while (k < n->nargs && dt_node_arg(m, n, k)->name.id == 0)
		k++;
	return k;
}

/* The keyword argument of `n` in `m` named like `name` of module `from`. */
const struct dt_arg *dt_diff_find_kwarg(const struct dt_module *m,
					const struct dt_node *n,
					const struct dt_module *from,
					dt_str name)
{
	const char *s = dt_str_get(from, name);
	for (int i = dt_diff_positional_count(m, n); i < n->nargs; i++)
		if (strcmp(dt_str_get(m, dt_node_arg(m, n, i)->name), s) == 0)
			return dt_node_arg(m, n, i);
	return NULL;
}

/* Same positional count and keyword names (in any order). */
bool dt_diff_args_same_shape(const struct dt_diff *d, const struct dt_node *x,
			     const struct dt_node *y)
{
	if (x->nargs != y->nargs || dt_diff_positional_count(d->a, x) !=
					dt_diff_positional_count(d->b, y))
		return false;
	for (int i = dt_diff_positional_count(d->b, y); i < y->nargs; i++)
		if (!dt_diff_find_kwarg(d->a, x, d->b,
					dt_node_arg(d->b, y, i)->name))
			return false;
	return true;
}

static bool args_equal(const struct dt_diff *d, const struct dt_node *x,
		       const struct dt_node *y)
{
	if (!dt_diff_args_same_shape(d, x, y))
		return false;
	int npos = dt_diff_positional_count(d->b, y);
	for (int i = 0; i < y->nargs; i++) {
		const struct dt_arg *ya = dt_node_arg(d->b, y, i);
		const struct dt_arg *xa =
		    i < npos ? dt_node_arg(d->a, x, i)
			     : dt_diff_find_kwarg(d->a, x, d->b, ya->name);
		if (!dt_diff_arg_equal(d, xa, ya))
			return false;
	}
	return true;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

static uint64_t hash_bytes(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return mix(h, 1);
}

static uint64_t hash_float(double f)
{
	uint64_t bits;
	if (isnan(f))
		f = NAN;
	memcpy(&bits, &f, sizeof bits);
	return bits;
}

/* Hash of an argument value; node references are translated by `map`
 * (NULL = kept), so an A node and the B node it would match hash alike. */
static uint64_t arg_hash(const struct dt_module *m, const struct dt_arg *x,
			 const uint32_t *map)
{
	uint64_t h = mix(0, x->kind);
	int n;
	switch ((enum dt_arg_kind)x->kind) {
	case DT_ARG_NODE:
		return mix(h, map ? map[x->v.node] : x->v.node);
	case DT_ARG_NODES:
		for (uint32_t i = 0; i < x->len; i++) {
			uint32_t r = m->refs.data[x->v.first + i];
			h = mix(h, map ? map[r] : r);
		}
		return h;
	case DT_ARG_INT: return mix(h, (uint64_t)x->v.i);
	case DT_ARG_INTS: {
		const int64_t *v = dt_ints_get(m, x->v.ints, &n);
		for (int i = 0; i < n; i++)
			h = mix(h, (uint64_t)v[i]);
		return h;
	}
	case DT_ARG_FLOAT: return mix(h, hash_float(x->v.f));
	case DT_ARG_FLOATS:
		for (uint32_t i = 0; i < x->len; i++)
			h = mix(h, hash_float(m->floats.data[x->v.first + i]));
		return h;
	case DT_ARG_BOOL: return mix(h, x->v.b);
	case DT_ARG_STR: return hash_bytes(h, dt_str_get(m, x->v.s));
	case DT_ARG_DTYPE: return mix(h, x->v.dtype);
	case DT_ARG_NONE: return h;
	case DT_ARG_ITEMS:
		for (uint32_t i = 0; i < x->len; i++)
			h = mix(h, arg_hash(m, &m->args.data[x->v.first + i], map));
		return h;
	}
	return h;
}

/* Hash of what structural matching compares: kind, target, arguments
 * (keywords in any order). */
static uint64_t node_hash(const struct dt_module *m, const struct dt_node *n,
			  const uint32_t *map)
{
	uint64_t h = hash_bytes(mix(0, n->kind), dt_str_get(m, n->target));
	int npos = dt_diff_positional_count(m, n);
	uint64_t kw = 0;
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *x = dt_node_arg(m, n, i);
		if (i < npos)
			h = mix(h, arg_hash(m, x, map));
		else
			kw += mix(hash_bytes(0, dt_str_get(m, x->name)),
				  arg_hash(m, x, map));
	}
	return mix(mix(h, kw), (uint64_t)npos << 16 | n->nargs);
}

/* ---- matching ---- */

/* Unmatched call nodes of A whose inputs are all matched, chained per
 * bucket of their hash. */
struct candidates {
	uint32_t *head; /* bucket -> first A node, 0 = none */
	uint32_t *next; /* A node -> next in its chain */
	uint64_t *hash; /* A node -> its hash */
	uint32_t mask;
};

static void candidates_add(struct candidates *c, const struct dt_diff *d,
			   uint32_t a)
{
	uint64_t h = node_hash(d->a, dt_node_get(d->a, a), d->a2b);
	c->hash[a] = h;
	c->next[a] = c->head[h & c->mask];
	c->head[h & c->mask] = a;
}

/* The first (in A's order) unmatched candidate equal to B node `b`, or 0.
 * Matched nodes met on the way leave the chain. */
static uint32_t candidates_find(struct candidates *c, const struct dt_diff *d,
				const uint32_t *apos, uint32_t b)
{
	const struct dt_node *bn = dt_node_get(d->b, b);
	uint64_t h = node_hash(d->b, bn, NULL);
	uint32_t best = 0;
	for (uint32_t *link = &c->head[h & c->mask]; *link;) {
		uint32_t a = *link;
		if (d->a2b[a]) {
			*link = c->next[a];
			continue;
		}
		const struct dt_node *an = dt_node_get(d->a, a);
		if (c->hash[a] == h && an->kind == bn->kind &&
		    dt_diff_str_equal(d, an->target, bn->target) &&
		    args_equal(d, an, bn) && (!best || apos[a] < apos[best]))
			best = a;
		link = &c->next[a];
	}
	return best;
}

struct pending_count {
	const uint32_t *a2b;
	uint32_t n;
};

static void count_unmatched(void *ud, uint32_t input)
{
	struct pending_count *p = ud;
	p->n += p->a2b[input] == 0;
}

void dt_diff_match(struct dt_diff *d, const uint32_t *apos)
{
	struct dt_module *a = d->a, *b = d->b;
	dt_foreach_node(b, id)
	{
		const struct dt_node *bn = dt_node_get(b, id);
		uint32_t x = dt_module_find_node(
			a, dt_str_intern(a, dt_str_get(b, bn->name)));
		if (x && (dt_node_get(a, x)->flags & DT_NODE_LINKED) &&
		    !d->a2b[x]) {
			d->a2b[x] = id;
			d->b2a[id] = x;
			d->how[id] = DT_DIFF_MATCH_NAME;
		}
	}

	/* Structure: A's candidates enter the table when their last unmatched
	 * input gets matched. */
	uint32_t na = a->nodes.len, nbuckets = 16;
	while (nbuckets < 2 * na)
		nbuckets *= 2;
	struct candidates c = {
		.head = dt_calloc(nbuckets, sizeof(uint32_t)),
		.next = dt_calloc(na, sizeof(uint32_t)),
		.hash = dt_calloc(na, sizeof(uint64_t)),
		.mask = nbuckets - 1,
	};
	uint32_t *pending = dt_calloc(na, sizeof(uint32_t));
	struct dt_uses uses;
	dt_uses_fill(&uses, a);
	dt_foreach_node(a, id)
	{
		const struct dt_node *an = dt_node_get(a, id);
		if (d->a2b[id] || an->kind != DT_NODE_CALL)
			continue;
		struct pending_count p = {d->a2b, 0};
		dt_node_for_each_input(a, an, count_unmatched, &p);
		pending[id] = p.n;
		if (p.n == 0)
			candidates_add(&c, d, id);
	}
	dt_foreach_node(b, id)
	{
		const struct dt_node *bn = dt_node_get(b, id);
		if (d->b2a[id] || bn->kind != DT_NODE_CALL)
			continue;
		uint32_t x = candidates_find(&c, d, apos, id);
		if (!x)
			continue;
		d->a2b[x] = id;
		d->b2a[id] = x;
		d->how[id] = DT_DIFF_MATCH_STRUCTURE;
		for (uint32_t u = uses.first[x]; u < uses.first[x + 1]; u++) {
			uint32_t user = uses.list[u];
			if (dt_node_get(a, user)->kind == DT_NODE_CALL &&
			    !d->a2b[user] && --pending[user] == 0)
				candidates_add(&c, d, user);
		}
	}
	dt_uses_fini(&uses);
	dt_free(pending);
	dt_free(c.head);
	dt_free(c.next);
	dt_free(c.hash);
}
