// SPDX-License-Identifier: MIT
/* cmd_diff.c: the `diff` subcommand, a structural diff of two graphs for
 * engineers checking what a pass (fusion above all) changed: nodes matched
 * by name then by structure, the added, removed and changed ones, the
 * meshes and groups, and the per-group table of collectives before/after.
 *
 * Matching. First by name (any kind). Then, for each still-unmatched call
 * node b of B in graph order, by structure: the first unmatched call node
 * a of A (in A's order) with b's target, whose node arguments are matched
 * to b's (through the mapping) and whose other arguments equal b's. A's
 * candidates sit in a hash table keyed by (target, arguments with node
 * references translated to B's ids); a node enters it once all its inputs
 * are matched, so matching is linear in the nodes but for long runs of
 * structurally identical renamed nodes. Placeholders and the output match
 * by name only.
 *
 * Equivalence of a matched pair: kind, target, arguments (positional by
 * index, keywords by name; floats bitwise, any NaN equal to any NaN),
 * tensors, sharding (mesh name, placements with order, global shape) and
 * metas (in order). A structural match is a rename, hence a difference.
 * Meshes and groups are compared by name and content; a group's
 * `generated` flag is provenance, shown but not compared. The graph's
 * name, view, rank and <topology> are compared too.
 *
 * JSON layout (values are the texts the text form prints; null = absent):
 *   {"a": PATH, "b": PATH, "equivalent": bool,
 *    "graph":  [{"name": "view" | "name" | "rank" | "topology", "a", "b"}],
 *    "meshes": [{"name", "a", "b"}],
 *    "groups": [{"name", "a", "b", "a_generated", "b_generated"}],
 *    "removed", "added": [{"name", "line": N | null, "text",
 *                          "fused_from": null | [NAME..]}],
 *    "changed": [{"name", "a_name", "matched_by": "name" | "structure",
 *                 "changes": [{"what": "arg 1" | "kwarg K" | "args" | "op" |
 *                              "target" | "tensor" | "tensor I" | "tensors" |
 *                              "sharding" | "meta K" | "metas" | "data",
 *                              "a", "b"}]}],
 *    "unchanged": N, "collectives": dt_comm_report_print_json's object} */
#include "cli.h"
#include "cost_model.h"
#include "frontend.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FUSED_FROM_KEY DT_META_FUSED_FROM

enum match_how { MATCH_NONE, MATCH_NAME, MATCH_STRUCTURE };

struct diff {
	struct dt_module *a, *b;
	uint32_t *a2b, *b2a; /* node id -> matched node of the other, 0 = none */
	uint8_t *how;        /* per B node: enum match_how */
};

/* ---- strings built with stdio ---- */

/* A string printed through a FILE (open_memstream); freed with free(). */
struct capture {
	char *s;
	size_t len;
	FILE *f;
};

static FILE *capture_open(struct capture *c)
{
	c->s = NULL;
	c->len = 0;
	c->f = open_memstream(&c->s, &c->len);
	if (!c->f)
		dt_die(__FILE__, __LINE__, "open_memstream failed");
	return c->f;
}

static char *capture_close(struct capture *c)
{
	fclose(c->f);
	return c->s;
}

/* ---- value equality and hashing (A's node ids seen through a2b) ---- */

static bool str_equal(const struct diff *d, dt_str x, dt_str y)
{
	return strcmp(dt_str_get(d->a, x), dt_str_get(d->b, y)) == 0;
}

static bool ints_equal(const struct diff *d, dt_ints x, dt_ints y)
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

static bool arg_value_equal(const struct diff *d, const struct dt_arg *x,
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
	case DT_ARG_INTS: return ints_equal(d, x->v.ints, y->v.ints);
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
	case DT_ARG_STR: return str_equal(d, x->v.s, y->v.s);
	case DT_ARG_DTYPE: return x->v.dtype == y->v.dtype;
	case DT_ARG_NONE: return true;
	case DT_ARG_ITEMS:
		if (x->len != y->len)
			return false;
		for (uint32_t i = 0; i < x->len; i++)
			if (!arg_value_equal(d, &a->args.data[x->v.first + i],
					     &b->args.data[y->v.first + i]))
				return false;
		return true;
	}
	return false;
}

static int positional_count(const struct dt_module *m, const struct dt_node *n)
{
	int k = 0;
	while (k < n->nargs && dt_node_arg(m, n, k)->name.id == 0)
		k++;
	return k;
}

/* The keyword argument of `n` in `m` named like `name` of module `from`. */
static const struct dt_arg *find_kwarg(const struct dt_module *m,
				       const struct dt_node *n,
				       const struct dt_module *from, dt_str name)
{
	const char *s = dt_str_get(from, name);
	for (int i = positional_count(m, n); i < n->nargs; i++)
		if (strcmp(dt_str_get(m, dt_node_arg(m, n, i)->name), s) == 0)
			return dt_node_arg(m, n, i);
	return NULL;
}

/* Same positional count and keyword names (in any order). */
static bool args_same_shape(const struct diff *d, const struct dt_node *x,
			    const struct dt_node *y)
{
	if (x->nargs != y->nargs ||
	    positional_count(d->a, x) != positional_count(d->b, y))
		return false;
	for (int i = positional_count(d->b, y); i < y->nargs; i++)
		if (!find_kwarg(d->a, x, d->b, dt_node_arg(d->b, y, i)->name))
			return false;
	return true;
}

static bool args_equal(const struct diff *d, const struct dt_node *x,
		       const struct dt_node *y)
{
	if (!args_same_shape(d, x, y))
		return false;
	int npos = positional_count(d->b, y);
	for (int i = 0; i < y->nargs; i++) {
		const struct dt_arg *ya = dt_node_arg(d->b, y, i);
		const struct dt_arg *xa =
			i < npos ? dt_node_arg(d->a, x, i)
				 : find_kwarg(d->a, x, d->b, ya->name);
		if (!arg_value_equal(d, xa, ya))
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
	int npos = positional_count(m, n);
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

static void candidates_add(struct candidates *c, const struct diff *d,
			   uint32_t a)
{
	uint64_t h = node_hash(d->a, dt_node_get(d->a, a), d->a2b);
	c->hash[a] = h;
	c->next[a] = c->head[h & c->mask];
	c->head[h & c->mask] = a;
}

/* The first (in A's order) unmatched candidate equal to B node `b`, or 0.
 * Matched nodes met on the way leave the chain. */
static uint32_t candidates_find(struct candidates *c, const struct diff *d,
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
		    str_equal(d, an->target, bn->target) &&
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

static void match_nodes(struct diff *d, const uint32_t *apos)
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
			d->how[id] = MATCH_NAME;
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
		d->how[id] = MATCH_STRUCTURE;
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

/* ---- what changed in a matched pair ---- */

struct change {
	char *what; /* "arg 1", "kwarg group_name", "tensor", "meta recompute" */
	char *a, *b; /* the values in A and B; NULL = absent */
};
typedef DT_VEC(struct change) change_vec;

static void changes_clear(change_vec *v)
{
	for (uint32_t i = 0; i < v->len; i++) {
		free(v->data[i].what);
		free(v->data[i].a);
		free(v->data[i].b);
	}
	v->len = 0;
}

static char *print_string(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static char *print_string(const char *fmt, ...)
{
	struct capture c;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(capture_open(&c), fmt, ap);
	va_end(ap);
	return capture_close(&c);
}

static void change_add(change_vec *v, char *what, char *a, char *b)
{
	dt_vec_push(v, ((struct change){what, a, b}));
}

static char *arg_text(const struct dt_module *m, const struct dt_arg *x)
{
	struct capture c;
	dt_print_arg(m, x, capture_open(&c));
	return capture_close(&c);
}

static char *args_text(const struct dt_module *m, const struct dt_node *n)
{
	struct capture c;
	FILE *f = capture_open(&c);
	fputc('(', f);
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *x = dt_node_arg(m, n, i);
		if (i)
			fputs(", ", f);
		if (x->name.id)
			fprintf(f, "%s=", dt_str_get(m, x->name));
		dt_print_arg(m, x, f);
	}
	fputc(')', f);
	return capture_close(&c);
}

static void print_types(const struct dt_module *m, const struct dt_node *n,
			FILE *f)
{
	char buf[512];
	if (n->ntensors != 1)
		fputc('(', f);
	for (int i = 0; i < n->ntensors; i++) {
		dt_tensor_print(m, dt_node_tensor(m, n, i), buf, sizeof buf);
		fprintf(f, "%s%s", i ? ", " : "", buf);
	}
	if (n->ntensors != 1)
		fputc(')', f);
}

static char *types_text(const struct dt_module *m, const struct dt_node *n)
{
	struct capture c;
	print_types(m, n, capture_open(&c));
	return capture_close(&c);
}

static char *tensor_text(const struct dt_module *m, const struct dt_tensor *t)
{
	char buf[512];
	dt_tensor_print(m, t, buf, sizeof buf);
	return print_string("%s", buf);
}

/* "world[S(0) R] order(0:tp,dp) of [64, 8]", or NULL without sharding. */
static char *sharding_text(const struct dt_module *m, const struct dt_node *n)
{
	if (!dt_node_sharding(m, n))
		return NULL;
	struct capture c;
	dt_print_sharding(m, n, capture_open(&c));
	char *s = capture_close(&c);
	const char *lead = " @ ";
	if (strncmp(s, lead, strlen(lead)) == 0)
		memmove(s, s + strlen(lead), strlen(s) - strlen(lead) + 1);
	return s;
}

static bool tensor_equal(const struct diff *d, const struct dt_tensor *x,
			 const struct dt_tensor *y)
{
	return x->dtype == y->dtype && ints_equal(d, x->shape, y->shape) &&
	       ints_equal(d, x->stride, y->stride) && x->offset == y->offset;
}

static bool sharding_equal(const struct diff *d, const struct dt_node *x,
			   const struct dt_node *y)
{
	const struct dt_sharding *sx = dt_node_sharding(d->a, x);
	const struct dt_sharding *sy = dt_node_sharding(d->b, y);
	if (!sx || !sy)
		return !sx && !sy;
	return str_equal(d, d->a->meshes.data[sx->mesh].name,
			 d->b->meshes.data[sy->mesh].name) &&
	       dt_placements_equal(&sx->placements, &sy->placements) &&
	       sx->has_global_shape == sy->has_global_shape &&
	       (!sx->has_global_shape ||
		ints_equal(d, sx->global_shape, sy->global_shape));
}

static const struct dt_meta *find_meta(const struct dt_module *m,
				       const struct dt_node *n, const char *key)
{
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *x = &m->metas.data[n->metas + i];
		if (strcmp(dt_str_get(m, x->key), key) == 0)
			return x;
	}
	return NULL;
}

static char *metas_text(const struct dt_module *m, const struct dt_node *n)
{
	struct capture c;
	FILE *f = capture_open(&c);
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *x = &m->metas.data[n->metas + i];
		fprintf(f, "%s%s=%s", i ? ", " : "", dt_str_get(m, x->key),
			dt_str_get(m, x->value));
	}
	return capture_close(&c);
}

static void meta_changes(const struct diff *d, const struct dt_node *x,
			 const struct dt_node *y, change_vec *out)
{
	const struct dt_module *a = d->a, *b = d->b;
	bool same = x->nmetas == y->nmetas;
	for (uint32_t i = 0; same && i < x->nmetas; i++) {
		const struct dt_meta *p = &a->metas.data[x->metas + i];
		const struct dt_meta *q = &b->metas.data[y->metas + i];
		same = str_equal(d, p->key, q->key) &&
		       str_equal(d, p->value, q->value);
	}
	if (same)
		return;
	uint32_t before = out->len;
	/* Per key (its first entry): changed or removed, then added. */
	for (uint32_t i = 0; i < x->nmetas; i++) {
		const struct dt_meta *p = &a->metas.data[x->metas + i];
		const char *key = dt_str_get(a, p->key);
		if (find_meta(a, x, key) != p)
			continue;
		const struct dt_meta *q = find_meta(b, y, key);
		if (!q || !str_equal(d, p->value, q->value))
			change_add(out, print_string("meta %s", key),
				   print_string("%s", dt_str_get(a, p->value)),
				   q ? print_string("%s", dt_str_get(b, q->value))
				     : NULL);
	}
	for (uint32_t i = 0; i < y->nmetas; i++) {
		const struct dt_meta *q = &b->metas.data[y->metas + i];
		const char *key = dt_str_get(b, q->key);
		if (find_meta(b, y, key) == q && !find_meta(a, x, key))
			change_add(out, print_string("meta %s", key), NULL,
				   print_string("%s", dt_str_get(b, q->value)));
	}
	/* The same entries in another order, or repeated keys. */
	if (out->len == before)
		change_add(out, print_string("metas"), metas_text(a, x),
			   metas_text(b, y));
}

static const char *kind_name(uint8_t kind)
{
	return kind == DT_NODE_PLACEHOLDER ? "placeholder"
	       : kind == DT_NODE_OUTPUT    ? "output"
	       : kind == DT_NODE_CONSTANT  ? "get_attr"
					   : "call_function";
}

/* "16 bytes, crc32 0123abcd": a constant's data, summarised. */
static char *data_text(const struct dt_module *m, const struct dt_node *n)
{
	const struct dt_constant *c = dt_node_constant(m, n);
	return print_string("%llu bytes, crc32 %08x",
			    (unsigned long long)c->size,
			    dt_crc32(c->bytes, c->size));
}

/* A change "data" when two constants' bytes differ. */
static void constant_changes(const struct dt_module *a, const struct dt_node *x,
			     const struct dt_module *b, const struct dt_node *y,
			     change_vec *out)
{
	const struct dt_constant *p = dt_node_constant(a, x);
	const struct dt_constant *q = dt_node_constant(b, y);
	if (p->size != q->size || memcmp(p->bytes, q->bytes, p->size) != 0)
		change_add(out, print_string("data"), data_text(a, x),
			   data_text(b, y));
}

/* The differences between B node `y` and its match in A, in `out`. */
static void node_changes(const struct diff *d, uint32_t y_id, change_vec *out)
{
	const struct dt_module *a = d->a, *b = d->b;
	const struct dt_node *y = dt_node_get(b, y_id);
	const struct dt_node *x = dt_node_get(a, d->b2a[y_id]);
	if (x->kind != y->kind)
		change_add(out, print_string("op"),
			   print_string("%s", kind_name(x->kind)),
			   print_string("%s", kind_name(y->kind)));
	else if (!str_equal(d, x->target, y->target))
		change_add(out, print_string("target"),
			   print_string("%s", dt_str_get(a, x->target)),
			   print_string("%s", dt_str_get(b, y->target)));
	if (x->kind == DT_NODE_CONSTANT && y->kind == DT_NODE_CONSTANT)
		constant_changes(a, x, b, y, out);

	if (!args_same_shape(d, x, y)) {
		change_add(out, print_string("args"), args_text(a, x),
			   args_text(b, y));
	} else {
		int npos = positional_count(b, y);
		for (int i = 0; i < y->nargs; i++) {
			const struct dt_arg *q = dt_node_arg(b, y, i);
			const struct dt_arg *p =
				i < npos ? dt_node_arg(a, x, i)
					 : find_kwarg(a, x, b, q->name);
			if (arg_value_equal(d, p, q))
				continue;
			char *what = i < npos ? print_string("arg %d", i)
					      : print_string("kwarg %s",
							     dt_str_get(b, q->name));
			change_add(out, what, arg_text(a, p), arg_text(b, q));
		}
	}

	if (x->ntensors != y->ntensors) {
		change_add(out, print_string("tensors"),
			   x->ntensors ? types_text(a, x) : NULL,
			   y->ntensors ? types_text(b, y) : NULL);
	} else {
		for (int i = 0; i < y->ntensors; i++) {
			const struct dt_tensor *p = dt_node_tensor(a, x, i);
			const struct dt_tensor *q = dt_node_tensor(b, y, i);
			if (tensor_equal(d, p, q))
				continue;
			change_add(out,
				   y->ntensors == 1 ? print_string("tensor")
						    : print_string("tensor %d", i),
				   tensor_text(a, p), tensor_text(b, q));
		}
	}

	if (!sharding_equal(d, x, y))
		change_add(out, print_string("sharding"), sharding_text(a, x),
			   sharding_text(b, y));
	meta_changes(d, x, y, out);
}

/* ---- meshes, groups and the graph itself ---- */

static char *mesh_text(const struct dt_module *m, const struct dt_mesh *mesh)
{
	struct capture c;
	FILE *f = capture_open(&c);
	fprintf(f, "(");
	for (int i = 0; i < mesh->ndim; i++)
		fprintf(f, "%s%s=%lld", i ? ", " : "",
			dt_str_get(m, mesh->dims[i]), (long long)mesh->shape[i]);
	fputc(')', f);
	bool identity = true;
	for (int64_t i = 0; mesh->devices && i < mesh->size; i++)
		identity &= mesh->devices[i] == i;
	if (!identity) {
		fputs(" devices [", f);
		for (int64_t i = 0; i < mesh->size; i++)
			fprintf(f, "%s%d", i ? " " : "", mesh->devices[i]);
		fputc(']', f);
	}
	return capture_close(&c);
}

/* "world[tp dp] size 128": what a group is; `generated` aside. */
static char *group_text(const struct dt_module *m, const struct dt_group *g)
{
	const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
	struct capture c;
	FILE *f = capture_open(&c);
	fprintf(f, "%s[", dt_str_get(m, mesh->name));
	for (int i = 0; i < g->ndims; i++)
		fprintf(f, "%s%s", i ? " " : "",
			dt_str_get(m, mesh->dims[g->dims[i]]));
	fprintf(f, "] size %lld",
		(long long)dt_group_size(mesh, g->dims, g->ndims));
	return capture_close(&c);
}

/* A difference outside the nodes: a mesh, a group or a graph attribute.
 * `a` NULL: added; `b` NULL: removed. */
struct item_change {
	const char *section; /* "graph", "mesh", "group" */
	char *name;
	char *a, *b;
	bool a_generated, b_generated;
};
typedef DT_VEC(struct item_change) item_vec;

static int find_group_named(const struct dt_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->groups.len; i++)
		if (strcmp(dt_str_get(m, m->groups.data[i].name), name) == 0)
			return (int)i;
	return -1;
}

static int find_mesh_named(const struct dt_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->meshes.len; i++)
		if (strcmp(dt_str_get(m, m->meshes.data[i].name), name) == 0)
			return (int)i;
	return -1;
}

static void item_add(item_vec *v, const char *section, char *name, char *a,
		     char *b)
{
	if (a && b && strcmp(a, b) == 0) {
		free(name);
		free(a);
		free(b);
		return;
	}
	dt_vec_push(v, ((struct item_change){section, name, a, b, false, false}));
}

static char *rank_text(int32_t rank)
{
	return rank < 0 ? NULL : print_string("%d", rank);
}

/* The <topology> as its attributes, or NULL when the graph has none. */
static char *topology_text(const struct dt_module *m)
{
	if (!m->has_topology)
		return NULL;
	const struct dt_topology *t = &m->topology;
	const struct {
		const char *name;
		double value;
	} fields[] = {
		{"bandwidth", t->bandwidth},
		{"latency", t->latency},
		{"inter-host-bandwidth-factor", t->inter_host_bandwidth_factor},
		{"inter-host-latency", t->inter_host_latency},
		{"base-latency", t->base_latency},
		{"all-to-all-penalty", t->all_to_all_penalty},
		{"device-tflops", t->device_tflops},
		{"device-bandwidth", t->device_bandwidth},
	};
	struct capture c;
	FILE *f = capture_open(&c);
	fprintf(f, "devices-per-host=%lld", (long long)t->devices_per_host);
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		char buf[40];
		dt_format_double(fields[i].value, buf, sizeof buf);
		fprintf(f, " %s=%s", fields[i].name, buf);
	}
	return capture_close(&c);
}

static void module_changes(const struct diff *d, item_vec *out)
{
	const struct dt_module *a = d->a, *b = d->b;
	item_add(out, "graph", print_string("name"),
		 print_string("%s", dt_str_get(a, a->name)),
		 print_string("%s", dt_str_get(b, b->name)));
	item_add(out, "graph", print_string("view"),
		 print_string(a->view == DT_VIEW_GLOBAL ? "global" : "local"),
		 print_string(b->view == DT_VIEW_GLOBAL ? "global" : "local"));
	if (a->rank != b->rank)
		item_add(out, "graph", print_string("rank"), rank_text(a->rank),
			 rank_text(b->rank));
	char *ta = topology_text(a), *tb = topology_text(b);
	if (ta || tb)
		item_add(out, "graph", print_string("topology"), ta, tb);

	/* Removed ones first (A's order), then B's in order. */
	for (uint32_t i = 0; i < a->meshes.len; i++) {
		const struct dt_mesh *mesh = &a->meshes.data[i];
		const char *name = dt_str_get(a, mesh->name);
		if (find_mesh_named(b, name) < 0)
			item_add(out, "mesh", print_string("%s", name),
				 mesh_text(a, mesh), NULL);
	}
	for (uint32_t i = 0; i < b->meshes.len; i++) {
		const struct dt_mesh *mesh = &b->meshes.data[i];
		const char *name = dt_str_get(b, mesh->name);
		int k = find_mesh_named(a, name);
		item_add(out, "mesh", print_string("%s", name),
			 k < 0 ? NULL : mesh_text(a, &a->meshes.data[k]),
			 mesh_text(b, mesh));
	}
	for (uint32_t i = 0; i < a->groups.len; i++) {
		const struct dt_group *g = &a->groups.data[i];
		const char *name = dt_str_get(a, g->name);
		if (find_group_named(b, name) < 0) {
			item_add(out, "group", print_string("%s", name),
				 group_text(a, g), NULL);
			out->data[out->len - 1].a_generated = g->generated;
		}
	}
	for (uint32_t i = 0; i < b->groups.len; i++) {
		const struct dt_group *g = &b->groups.data[i];
		const char *name = dt_str_get(b, g->name);
		int k = find_group_named(a, name);
		uint32_t len = out->len;
		item_add(out, "group", print_string("%s", name),
			 k < 0 ? NULL : group_text(a, &a->groups.data[k]),
			 group_text(b, g));
		if (out->len > len) {
			out->data[len].a_generated =
				k >= 0 && a->groups.data[k].generated;
			out->data[len].b_generated = g->generated;
		}
	}
}

static void items_fini(item_vec *v)
{
	for (uint32_t i = 0; i < v->len; i++) {
		free(v->data[i].name);
		free(v->data[i].a);
		free(v->data[i].b);
	}
	dt_vec_free(v);
}

/* ---- printing ---- */

/* Space-separated names of the nodes a fused node replaced, or NULL when
 * `n` is not fused. */
static const char *fused_from(const struct dt_module *m,
			      const struct dt_node *n)
{
	const struct dt_meta *meta = find_meta(m, n, FUSED_FROM_KEY);
	if (meta)
		return dt_str_get(m, meta->value);
	return (n->flags & DT_NODE_FUSED) ? "" : NULL;
}

/* "name = target(args) : f32[4, 8]{8, 1} @ world[S(0) R]" */
static void print_node_line(const struct dt_module *m, const struct dt_node *n,
			    FILE *f)
{
	fprintf(f, "%s = ", dt_str_get(m, n->name));
	dt_print_call(m, n, f);
	if (n->ntensors) {
		fputs(" : ", f);
		print_types(m, n, f);
	}
	dt_print_sharding(m, n, f);
}

static void text_node(const struct dt_module *m, uint32_t id, char sign,
		      FILE *out)
{
	const struct dt_node *n = dt_node_get(m, id);
	fprintf(out, "%c %s:", sign, m->file);
	if (n->line)
		fprintf(out, "%u:", n->line);
	fputc(' ', out);
	print_node_line(m, n, out);
	const char *from = fused_from(m, n);
	if (from)
		fprintf(out, *from ? " [fused from %s]" : " [fused]", from);
	fputc('\n', out);
}

static void text_value(const char *s, FILE *out)
{
	fputs(s ? s : "(none)", out);
}

static void text_items(const item_vec *v, FILE *out)
{
	for (uint32_t i = 0; i < v->len; i++) {
		const struct item_change *c = &v->data[i];
		const char *sep = strcmp(c->section, "mesh") == 0 ? " " : " = ";
		if (strcmp(c->section, "graph") == 0) {
			fprintf(out, "~ graph: %s (", c->name);
			text_value(c->a, out);
			fputs(" -> ", out);
			text_value(c->b, out);
			fputs(")\n", out);
		} else if (!c->a || !c->b) {
			fprintf(out, "%c %s %s%s%s%s\n", c->a ? '-' : '+',
				c->section, c->name, sep, c->a ? c->a : c->b,
				(c->a ? c->a_generated : c->b_generated)
					? " (created by dtopt)"
					: "");
		} else {
			fprintf(out, "~ %s %s: %s%s -> %s%s\n", c->section,
				c->name, c->a,
				c->a_generated ? " (created by dtopt)" : "",
				c->b, c->b_generated ? " (created by dtopt)" : "");
		}
	}
}

struct counts {
	uint32_t removed, added, changed, unchanged;
};

static void text_changed(const struct diff *d, uint32_t id,
			 const change_vec *v, FILE *out)
{
	const char *name = dt_str_get(d->b, dt_node_get(d->b, id)->name);
	if (d->how[id] == MATCH_STRUCTURE)
		fprintf(out, "~ %s (matched by structure to A's %s)\n", name,
			dt_str_get(d->a, dt_node_get(d->a, d->b2a[id])->name));
	for (uint32_t i = 0; i < v->len; i++) {
		fprintf(out, "~ %s: %s (", name, v->data[i].what);
		text_value(v->data[i].a, out);
		fputs(" -> ", out);
		text_value(v->data[i].b, out);
		fputs(")\n", out);
	}
}

/* Removed A nodes are printed where they were, as in a unified diff: before
 * the B nodes (added or matched) that precede the match of the next matched
 * A node after them. */
static void text_nodes(const struct diff *d, const uint32_t *apos,
		       const uint32_t *aorder, uint32_t na,
		       struct counts *k, FILE *out)
{
	/* until[b]: A's position of the first match at or after b in B. */
	uint32_t *until = dt_calloc(d->b->nodes.len, sizeof(uint32_t));
	uint32_t next = na;
	for (uint32_t id = d->b->last; id; id = dt_node_get(d->b, id)->prev) {
		if (d->b2a[id])
			next = apos[d->b2a[id]];
		until[id] = next;
	}
	uint32_t cursor = 0; /* next A position not yet walked */
	change_vec v = {0};
	dt_foreach_node(d->b, id)
	{
		for (; cursor < until[id]; cursor++) {
			if (!d->a2b[aorder[cursor]]) {
				text_node(d->a, aorder[cursor], '-', out);
				k->removed++;
			}
		}
		uint32_t x = d->b2a[id];
		if (!x) {
			text_node(d->b, id, '+', out);
			k->added++;
			continue;
		}
		changes_clear(&v);
		node_changes(d, id, &v);
		if (v.len || d->how[id] == MATCH_STRUCTURE) {
			text_changed(d, id, &v, out);
			k->changed++;
		} else {
			k->unchanged++;
		}
	}
	for (; cursor < na; cursor++) {
		if (!d->a2b[aorder[cursor]]) {
			text_node(d->a, aorder[cursor], '-', out);
			k->removed++;
		}
	}
	changes_clear(&v);
	dt_vec_free(&v);
	dt_free(until);
}

static void json_value(const char *s, FILE *out)
{
	if (s)
		dt_json_string(out, s);
	else
		fputs("null", out);
}

static void json_node(const struct dt_module *m, uint32_t id, bool first,
		      FILE *out)
{
	const struct dt_node *n = dt_node_get(m, id);
	fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", out);
	dt_json_string(out, dt_str_get(m, n->name));
	if (n->line)
		fprintf(out, ", \"line\": %u, \"text\": ", n->line);
	else
		fputs(", \"line\": null, \"text\": ", out);
	struct capture c;
	print_node_line(m, n, capture_open(&c));
	char *text = capture_close(&c);
	dt_json_string(out, text);
	free(text);
	fputs(", \"fused_from\": ", out);
	const char *from = fused_from(m, n);
	if (!from) {
		fputs("null}", out);
		return;
	}
	/* The names, split at spaces. */
	fputc('[', out);
	bool any = false;
	for (const char *p = from; *p;) {
		size_t len = strcspn(p, " ");
		if (len) {
			char *name = print_string("%.*s", (int)len, p);
			fputs(any ? ", " : "", out);
			dt_json_string(out, name);
			free(name);
			any = true;
		}
		p += len + (p[len] == ' ');
	}
	fputs("]}", out);
}

static void json_changed(const struct diff *d, uint32_t id,
			 const change_vec *v, bool first, FILE *out)
{
	const struct dt_node *y = dt_node_get(d->b, id);
	const struct dt_node *x = dt_node_get(d->a, d->b2a[id]);
	fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", out);
	dt_json_string(out, dt_str_get(d->b, y->name));
	fputs(", \"a_name\": ", out);
	dt_json_string(out, dt_str_get(d->a, x->name));
	fprintf(out, ", \"matched_by\": \"%s\", \"changes\": [",
		d->how[id] == MATCH_STRUCTURE ? "structure" : "name");
	for (uint32_t i = 0; i < v->len; i++) {
		fputs(i ? ", {\"what\": " : "{\"what\": ", out);
		dt_json_string(out, v->data[i].what);
		fputs(", \"a\": ", out);
		json_value(v->data[i].a, out);
		fputs(", \"b\": ", out);
		json_value(v->data[i].b, out);
		fputc('}', out);
	}
	fputs("]}", out);
}

static void json_items(const item_vec *v, const char *section, const char *key,
		       FILE *out)
{
	bool first = true;
	fprintf(out, "  \"%s\": [", key);
	for (uint32_t i = 0; i < v->len; i++) {
		const struct item_change *c = &v->data[i];
		if (strcmp(c->section, section) != 0)
			continue;
		fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", out);
		first = false;
		dt_json_string(out, c->name);
		fputs(", \"a\": ", out);
		json_value(c->a, out);
		fputs(", \"b\": ", out);
		json_value(c->b, out);
		if (strcmp(section, "group") == 0)
			fprintf(out, ", \"a_generated\": %s, \"b_generated\": %s",
				c->a_generated ? "true" : "false",
				c->b_generated ? "true" : "false");
		fputc('}', out);
	}
	fputs(first ? "],\n" : "\n  ],\n", out);
}

/* Sections are built apart, since "equivalent" comes before them. */
static void json_nodes(const struct diff *d, struct counts *k, FILE *removed,
		       FILE *added, FILE *changed)
{
	change_vec v = {0};
	dt_foreach_node(d->a, id)
	{
		if (!d->a2b[id])
			json_node(d->a, id, k->removed++ == 0, removed);
	}
	dt_foreach_node(d->b, id)
	{
		if (!d->b2a[id]) {
			json_node(d->b, id, k->added++ == 0, added);
			continue;
		}
		changes_clear(&v);
		node_changes(d, id, &v);
		if (v.len || d->how[id] == MATCH_STRUCTURE)
			json_changed(d, id, &v, k->changed++ == 0, changed);
		else
			k->unchanged++;
	}
	changes_clear(&v);
	dt_vec_free(&v);
}

static void json_section(const char *key, char *text, uint32_t count,
			 FILE *out)
{
	fprintf(out, "  \"%s\": [%s%s],\n", key, text, count ? "\n  " : "");
	free(text);
}

/* ---- the command ---- */

static const char diff_help_head[] =
	"usage: dtopt diff A.xml B.xml [-f|--format=text|json] [-o OUT]\n"
	"                  [cost-model flags]\n\n"
	"Compares two graphs (one may be - for stdin; targets missing from the op\n"
	"table are allowed). Nodes are matched by name, then the remaining call\n"
	"nodes of B by structure: the first unmatched node of A with the same\n"
	"target whose node arguments are matched to B's and whose other arguments\n"
	"are equal. Lists meshes and groups, then nodes in B's order with A's\n"
	"removed nodes near their place:\n"
	"  - A.xml:LINE: name = target(args) : type     removed\n"
	"  + B.xml:LINE: name = target(args) : type     added (fused nodes show\n"
	"                                               [fused from ...])\n"
	"  ~ name: what (old -> new)                    changed: op, target, arg N,\n"
	"                                               kwarg K, args, tensor,\n"
	"                                               sharding, meta K\n"
	"  ~ name (matched by structure to A's old)     renamed\n"
	"then the number of unchanged nodes and the per-group table of collectives\n"
	"(count, bytes, modelled time) before (A) and after (B).\n\n"
	"  -f, --format=FORMAT    text (default) or json: one object {a, b,\n"
	"                         equivalent, graph, meshes, groups, removed, added,\n"
	"                         changed, unchanged, collectives}\n"
	"  -o, --output=FILE      write to FILE (- for stdout, the default),\n"
	"                         atomically, and not when an input is bad\n"
	"  -h, --help             this text\n";

static const char diff_help_tail[] =
	"\nExit codes: 0 equivalent, 1 different (or an input cannot be read),\n"
	"2 usage.\n";

int dt_cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		DT_CLI_TOPOLOGY_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	const char *format = "text", *output = "-";
	struct dt_cli_topology topo_flags = {0};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
		if (c >= DT_CLI_OPT_TOPOLOGY_FIRST && c < DT_CLI_OPT_TOPOLOGY_END) {
			if (dt_cli_topology_parse(&topo_flags, c, optarg, "diff") !=
			    DT_EXIT_OK)
				return DT_EXIT_USAGE;
			continue;
		}
		switch (c) {
		case 'f': format = optarg; break;
		case 'o': output = optarg; break;
		case 'h':
			fputs(diff_help_head, stdout);
			fputc('\n', stdout);
			fputs(dt_cli_topology_help, stdout);
			fputs(diff_help_tail, stdout);
			return DT_EXIT_OK;
		default:
			return dt_usage_error("diff", "unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	bool json = strcmp(format, "json") == 0;
	if (!json && strcmp(format, "text") != 0)
		return dt_usage_error("diff", "unknown format '%s' (text or json)",
				      format);
	if (argc - optind != 2)
		return dt_usage_error("diff", "expected two input graphs");
	if (strcmp(argv[optind], "-") == 0 && strcmp(argv[optind + 1], "-") == 0)
		return dt_usage_error("diff", "only one input can be stdin");
	int orc = dt_cli_output_begin("diff", output);
	if (orc != DT_EXIT_OK)
		return orc;

	struct dt_diag diag;
	dt_cli_diag_init(&diag);
	struct dt_read_options ropt = {.allow_unknown_targets = true};
	struct diff d = {0};
	int ra = dt_read_file(argv[optind], &ropt, &diag, &d.a);
	int rb = dt_read_file(argv[optind + 1], &ropt, &diag, &d.b);
	if (ra != DT_OK || rb != DT_OK) {
		if (d.a)
			dt_module_destroy(d.a);
		if (d.b)
			dt_module_destroy(d.b);
		return DT_EXIT_INPUT;
	}

	uint32_t na = dt_graph_count(d.a);
	uint32_t *apos = dt_calloc(d.a->nodes.len, sizeof(uint32_t));
	uint32_t *aorder = dt_calloc(na + 1, sizeof(uint32_t));
	uint32_t pos = 0;
	dt_foreach_node(d.a, id)
	{
		apos[id] = pos;
		aorder[pos++] = id;
	}
	d.a2b = dt_calloc(d.a->nodes.len, sizeof(uint32_t));
	d.b2a = dt_calloc(d.b->nodes.len, sizeof(uint32_t));
	d.how = dt_calloc(d.b->nodes.len, 1);
	match_nodes(&d, apos);

	item_vec items = {0};
	module_changes(&d, &items);

	struct dt_comm_table before = {0}, after = {0};
	struct dt_topology ta = d.a->topology, tb = d.b->topology;
	dt_cli_topology_apply(&topo_flags, &ta);
	dt_cli_topology_apply(&topo_flags, &tb);
	dt_comm_table_fill(&before, d.a, &ta);
	dt_comm_table_fill(&after, d.b, &tb);

	struct counts k = {0};
	if (json) {
		struct capture cr, ca, cc;
		json_nodes(&d, &k, capture_open(&cr), capture_open(&ca),
			   capture_open(&cc));
		char *removed = capture_close(&cr), *added = capture_close(&ca),
		     *changed = capture_close(&cc);
		bool equivalent = !items.len && !k.removed && !k.added &&
				  !k.changed;
		fputs("{\n  \"a\": ", stdout);
		dt_json_string(stdout, argv[optind]);
		fputs(",\n  \"b\": ", stdout);
		dt_json_string(stdout, argv[optind + 1]);
		fprintf(stdout, ",\n  \"equivalent\": %s,\n",
			equivalent ? "true" : "false");
		json_items(&items, "graph", "graph", stdout);
		json_items(&items, "mesh", "meshes", stdout);
		json_items(&items, "group", "groups", stdout);
		json_section("removed", removed, k.removed, stdout);
		json_section("added", added, k.added, stdout);
		json_section("changed", changed, k.changed, stdout);
		fprintf(stdout, "  \"unchanged\": %u,\n  \"collectives\": ",
			k.unchanged);
		dt_comm_report_print_json(&before, &after, stdout);
		fputs("}\n", stdout);
	} else {
		printf("--- %s\n+++ %s\n", d.a->file, d.b->file);
		text_items(&items, stdout);
		text_nodes(&d, apos, aorder, na, &k, stdout);
		printf("= %u node%s unchanged\n\n", k.unchanged,
		       k.unchanged == 1 ? "" : "s");
		dt_comm_report_print(&before, &after, stdout);
	}
	bool equivalent = !items.len && !k.removed && !k.added && !k.changed;

	dt_comm_table_fini(&before);
	dt_comm_table_fini(&after);
	items_fini(&items);
	dt_free(apos);
	dt_free(aorder);
	dt_free(d.a2b);
	dt_free(d.b2a);
	dt_free(d.how);
	dt_module_destroy(d.a);
	dt_module_destroy(d.b);
	orc = dt_cli_output_commit();
	if (orc != DT_EXIT_OK)
		return orc;
	return dt_cli_flush_stdout(equivalent ? DT_EXIT_OK : DT_EXIT_INPUT);
}
