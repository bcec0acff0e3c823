// SPDX-License-Identifier: MIT
/* placement.c: DTensor placements (R, S(d), _S(d,sf), P(op)) with their
 * shard order: parsing, printing, validation and which global indices each
 * rank holds (semantics.md §2). Pure functions; no state. */
#include "ir.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

static const char *const reduce_names[] = {
#define X(e, n) n,
	DT_REDUCE_OPS(X)
#undef X
};

const char *dt_reduce_name(enum dt_reduce_op op)
{
	DT_REQUIRE((unsigned)op < DT_NREDUCE);
	return reduce_names[op];
}

bool dt_reduce_parse(const char *name, enum dt_reduce_op *out)
{
	for (int i = 0; i < DT_NREDUCE; i++)
		if (strcmp(name, reduce_names[i]) == 0) {
			*out = (enum dt_reduce_op)i;
			return true;
		}
	return false;
}

/* ------------------------------------------------------------------ */
/* Output with snprintf semantics: `len` counts what would be written. */
struct out {
	char *buf;
	size_t n;
	int len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o,
						      const char *fmt, ...)
{
	size_t room = (size_t)o->len < o->n ? o->n - (size_t)o->len : 0;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->len += k;
}

__attribute__((format(printf, 3, 4))) static bool fail(char *err,
						       size_t errlen,
						       const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return false;
}

static void put_placement(struct out *o, const struct dt_placement *p)
{
	switch ((enum dt_placement_kind)p->kind) {
	case DT_PL_REPLICATE: put(o, "R"); break;
	case DT_PL_SHARD: put(o, "S(%d)", p->dim); break;
	case DT_PL_STRIDED_SHARD:
		put(o, "_S(%d,%d)", p->dim, (int)p->split_factor);
		break;
	case DT_PL_PARTIAL:
		put(o, "P(%s)", dt_reduce_name((enum dt_reduce_op)p->reduce));
		break;
	}
}

/* Mesh dim m by name when the names are at hand, else by index. */
static void put_mesh_dim(struct out *o, const struct dt_mesh *mesh,
			 const struct dt_intern *strings, int m)
{
	if (mesh && strings)
		put(o, "%s",
		    (const char *)dt_intern_get(strings, mesh->dims[m].id, NULL));
	else
		put(o, "%d", m);
}

static bool is_sharding(const struct dt_placement *p)
{
	return p->kind == DT_PL_SHARD || p->kind == DT_PL_STRIDED_SHARD;
}

static bool shards_dim(const struct dt_placement *p, int tdim)
{
	return is_sharding(p) && p->dim == tdim;
}

/* ------------------------------------------------------------------ */
/* Parsing. A cursor over one token; numbers are small and non-negative. */
struct cursor {
	const char *p, *end;
};

static void skip_blanks(struct cursor *c)
{
	while (c->p < c->end && isspace((unsigned char)*c->p))
		c->p++;
}

static bool eat(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);
	skip_blanks(c);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return false;
	c->p += n;
	return true;
}

static bool number(struct cursor *c, int32_t max, int32_t *v)
{
	skip_blanks(c);
	const char *start = c->p;
	int64_t x = 0;
	while (c->p < c->end && isdigit((unsigned char)*c->p) && x <= max)
		x = x * 10 + (*c->p++ - '0');
	*v = (int32_t)x;
	return c->p > start && x <= max;
}

static bool parse_token(const char *s, size_t len, struct dt_placement *p)
{
	struct cursor c = {s, s + len};
	int32_t a, b;
	memset(p, 0, sizeof *p);
	if (eat(&c, "R")) {
		p->kind = DT_PL_REPLICATE;
	} else if (eat(&c, "S(")) {
		if (!number(&c, INT16_MAX, &a) || !eat(&c, ")"))
			return false;
		p->kind = DT_PL_SHARD;
		p->dim = (int16_t)a;
	} else if (eat(&c, "_S(")) {
		if (!number(&c, INT16_MAX, &a) || !eat(&c, ",") ||
		    !number(&c, INT32_MAX / 10, &b) || !eat(&c, ")"))
			return false;
		p->kind = DT_PL_STRIDED_SHARD;
		p->dim = (int16_t)a;
		p->split_factor = b;
	} else if (eat(&c, "P(")) {
		const char *name = c.p;
		while (c.p < c.end && *c.p != ')')
			c.p++;
		char buf[16];
		size_t n = (size_t)(c.p - name);
		enum dt_reduce_op op;
		if (n >= sizeof buf || !eat(&c, ")"))
			return false;
		memcpy(buf, name, n);
		buf[n] = '\0';
		if (!dt_reduce_parse(buf, &op))
			return false;
		p->kind = DT_PL_PARTIAL;
		p->reduce = (uint8_t)op;
	} else {
		return false;
	}
	return c.p == c.end;
}

/* The next token of `s` from *pos: a run of non-blanks, extended through a
 * parenthesis so "_S(0, 2)" is one token and "S(0)S(1)" two. */
static bool next_token(const char *s, size_t *pos, size_t *start,
		       size_t *len)
{
	size_t i = *pos;
	while (s[i] && isspace((unsigned char)s[i]))
		i++;
	if (!s[i])
		return false;
	*start = i;
	while (s[i] && !isspace((unsigned char)s[i]) && s[i] != '(')
		i++;
	if (s[i] == '(') {
		while (s[i] && s[i] != ')')
			i++;
		if (s[i])
			i++;
	}
	*len = i - *start;
	*pos = i;
	return true;
}

static void put_mesh(struct out *o, const struct dt_mesh *mesh,
		     const struct dt_intern *strings)
{
	if (strings)
		put(o, "mesh '%s' (dims",
		    (const char *)dt_intern_get(strings, mesh->name.id, NULL));
	else
		put(o, "the mesh (dims");
	for (int m = 0; m < mesh->ndim; m++) {
		put(o, " ");
		put_mesh_dim(o, mesh, strings, m);
	}
	put(o, ")");
}

/* Mesh dim `s[0..n)` (n < 64) by name of `mesh` or by index, or -1. */
static int find_dim(const struct dt_placements *pl, const char *s, size_t n,
		    const struct dt_mesh *mesh, const struct dt_intern *strings)
{
	char name[64];
	memcpy(name, s, n);
	name[n] = '\0';
	if (mesh)
		return dt_mesh_find_dim(mesh, name, strings);
	struct cursor c = {s, s + n};
	int32_t m;
	return number(&c, DT_MAX_MESH_DIMS, &m) && c.p == c.end && m < pl->ndim
		       ? m
		       : -1;
}

/* Parses one order entry "T:m1,m2" and sets the order positions of T. */
static bool parse_order_entry(struct dt_placements *pl, const char *s,
			      size_t len, const struct dt_mesh *mesh,
			      const struct dt_intern *strings, bool *seen_mesh,
			      char *err, size_t errlen)
{
	char label[64];
	struct out lo = {label, sizeof label, 0};
	struct cursor c = {s, s + len};
	int32_t tdim;
	if (!number(&c, INT16_MAX, &tdim) || c.p == c.end || *c.p++ != ':' ||
	    c.p == c.end)
		return fail(err, errlen,
			    "bad order entry '%.*s' (expected "
			    "TENSORDIM:MESHDIM,...)",
			    (int)len, s);
	for (int m = 0; m < pl->ndim; m++)
		if (shards_dim(&pl->p[m], tdim) && seen_mesh[m])
			return fail(err, errlen,
				    "order lists tensor dim %d twice", tdim);
	int npos = 0;
	while (c.p < c.end) {
		const char *n0 = c.p;
		while (c.p < c.end && *c.p != ',')
			c.p++;
		size_t n = (size_t)(c.p - n0);
		bool trailing_comma = c.p + 1 == c.end;
		if (c.p < c.end)
			c.p++; /* ',' */
		if (n == 0 || trailing_comma)
			return fail(err, errlen,
				    "bad order entry '%.*s' (empty mesh dim)",
				    (int)len, s);
		int m = n < 64 ? find_dim(pl, n0, n, mesh, strings) : -1;
		if (m < 0) {
			char where[96];
			struct out wo = {where, sizeof where, 0};
			if (mesh && strings)
				put(&wo, "mesh '%s'",
				    (const char *)dt_intern_get(
					    strings, mesh->name.id, NULL));
			else
				put(&wo, "the %d mesh dims", pl->ndim);
			return fail(err, errlen,
				    "order names mesh dim '%.*s' which is not "
				    "in %s",
				    (int)n, n0, where);
		}
		lo.len = 0;
		put_mesh_dim(&lo, mesh, strings, m);
		if (seen_mesh[m])
			return fail(err, errlen,
				    "order lists mesh dim %s twice", label);
		if (!shards_dim(&pl->p[m], tdim))
			return fail(err, errlen,
				    "order for tensor dim %d lists mesh dim %s, "
				    "which does not shard dim %d",
				    tdim, label, tdim);
		seen_mesh[m] = true;
		pl->order_pos[m] = (uint8_t)npos++;
	}
	for (int m = 0; m < pl->ndim; m++)
		if (shards_dim(&pl->p[m], tdim) && !seen_mesh[m]) {
			lo.len = 0;
			put_mesh_dim(&lo, mesh, strings, m);
			return fail(err, errlen,
				    "order for tensor dim %d omits mesh dim %s, "
				    "which shards dim %d",
				    tdim, label, tdim);
		}
	return true;
}

bool dt_placements_parse(struct dt_placements *out, const char *text,
			 const char *order, const struct dt_mesh *mesh,
			 const struct dt_intern *strings, char *err,
			 size_t errlen)
{
	struct dt_placements pl = {0};
	size_t pos = 0, start, len;
	int count = 0;
	while (next_token(text, &pos, &start, &len)) {
		struct dt_placement p;
		if (!parse_token(text + start, len, &p))
			return fail(err, errlen, "bad placement token '%.*s'",
				    (int)len, text + start);
		if (count < DT_MAX_MESH_DIMS)
			pl.p[count] = p;
		count++;
	}
	if (mesh && count != mesh->ndim) {
		char what[160];
		struct out wo = {what, sizeof what, 0};
		put_mesh(&wo, mesh, strings);
		return fail(err, errlen, "expected %d placements for %s, got %d",
			    mesh->ndim, what, count);
	}
	if (count == 0 || count > DT_MAX_MESH_DIMS)
		return fail(err, errlen,
			    "expected 1 to %d placements, got %d",
			    DT_MAX_MESH_DIMS, count);
	pl.ndim = (uint8_t)count;
	dt_placements_default_order(&pl);

	bool seen_mesh[DT_MAX_MESH_DIMS] = {false};
	pos = 0;
	while (order && next_token(order, &pos, &start, &len))
		if (!parse_order_entry(&pl, order + start, len, mesh, strings,
				       seen_mesh, err, errlen))
			return false;
	*out = pl;
	return true;
}

/* ------------------------------------------------------------------ */
/* Shard order. */

/* Mesh dims that do not shard keep position 0, so that equal placements
 * compare equal field by field. */
void dt_placements_default_order(struct dt_placements *pl)
{
	for (int m = 0; m < pl->ndim; m++) {
		int k = 0;
		for (int e = 0; e < m && is_sharding(&pl->p[m]); e++)
			k += shards_dim(&pl->p[e], pl->p[m].dim);
		pl->order_pos[m] = (uint8_t)k;
	}
}

/* Whether tensor dim `tdim` is sharded in default (left to right) order. */
static bool dim_has_default_order(const struct dt_placements *pl, int tdim)
{
	int k = 0;
	for (int m = 0; m < pl->ndim; m++)
		if (shards_dim(&pl->p[m], tdim) && pl->order_pos[m] != k++)
			return false;
	return true;
}

bool dt_placements_has_default_order(const struct dt_placements *pl)
{
	for (int m = 0; m < pl->ndim; m++)
		if (is_sharding(&pl->p[m]) &&
		    !dim_has_default_order(pl, pl->p[m].dim))
			return false;
	return true;
}

/* The mesh dims sharding `tdim`, in shard order; returns their count. */
static int shard_sequence(const struct dt_placements *pl, int tdim,
			  int *seq)
{
	int n = 0;
	for (int m = 0; m < pl->ndim; m++)
		if (shards_dim(&pl->p[m], tdim))
			seq[n++] = m;
	for (int i = 1; i < n; i++) /* insertion sort by order_pos */
		for (int j = i; j > 0 && pl->order_pos[seq[j - 1]] >
						 pl->order_pos[seq[j]];
		     j--) {
			int t = seq[j];
			seq[j] = seq[j - 1];
			seq[j - 1] = t;
		}
	return n;
}

/* ------------------------------------------------------------------ */
/* Printing. */

int dt_placements_print(const struct dt_placements *pl, char *buf, size_t n)
{
	struct out o = {buf, n, 0};
	if (n)
		buf[0] = '\0';
	for (int m = 0; m < pl->ndim; m++) {
		if (m)
			put(&o, " ");
		put_placement(&o, &pl->p[m]);
	}
	return o.len;
}

/* Lists only the tensor dims whose order is not the default one; parsing
 * gives the others their default order back. */
int dt_placements_print_order(const struct dt_placements *pl,
			      const struct dt_mesh *mesh,
			      const struct dt_intern *strings, char *buf,
			      size_t n)
{
	struct out o = {buf, n, 0};
	if (n)
		buf[0] = '\0';
	int max_dim = -1;
	for (int m = 0; m < pl->ndim; m++)
		if (is_sharding(&pl->p[m]) && pl->p[m].dim > max_dim)
			max_dim = pl->p[m].dim;
	for (int d = 0; d <= max_dim; d++) {
		int seq[DT_MAX_MESH_DIMS];
		int k = shard_sequence(pl, d, seq);
		if (k == 0 || dim_has_default_order(pl, d))
			continue;
		put(&o, "%s%d:", o.len ? " " : "", d);
		for (int i = 0; i < k; i++) {
			if (i)
				put(&o, ",");
			put_mesh_dim(&o, mesh, strings, seq[i]);
		}
	}
	return o.len;
}

/* ------------------------------------------------------------------ */
/* Validation and equality. */

static bool partial_ops_conflict(int a, int b)
{
	bool a_linear = a == DT_REDUCE_SUM || a == DT_REDUCE_AVG;
	bool b_linear = b == DT_REDUCE_SUM || b == DT_REDUCE_AVG;
	return a != b && !(a_linear && b_linear);
}

bool dt_placements_validate(const struct dt_placements *pl, int tensor_rank,
			    char *err, size_t errlen)
{
	char tok[32];
	for (int m = 0; m < pl->ndim; m++) {
		const struct dt_placement *p = &pl->p[m];
		struct out o = {tok, sizeof tok, 0};
		if (p->kind == DT_PL_PARTIAL && p->reduce >= DT_NREDUCE)
			return fail(err, errlen,
				    "bad reduce op %d on mesh dim %d",
				    p->reduce, m);
		bool bad_dim = is_sharding(p) &&
			       (p->dim < 0 || p->dim >= tensor_rank);
		bool bad_split = p->kind == DT_PL_STRIDED_SHARD &&
				 p->split_factor < 1;
		if (bad_dim || bad_split) /* named only in the message */
			put_placement(&o, p);
		if (bad_dim)
			return fail(err, errlen,
				    "%s on mesh dim %d shards tensor dim %d, "
				    "but the tensor has rank %d",
				    tok, m, p->dim, tensor_rank);
		if (bad_split)
			return fail(err, errlen,
				    "%s on mesh dim %d has split factor %d; it "
				    "must be at least 1",
				    tok, m, (int)p->split_factor);
		for (int e = 0; p->kind == DT_PL_PARTIAL && e < m; e++)
			if (pl->p[e].kind == DT_PL_PARTIAL &&
			    partial_ops_conflict(pl->p[e].reduce, p->reduce))
				return fail(err, errlen,
					    "mixed partial reduce ops P(%s) and "
					    "P(%s) are not allowed; only sum "
					    "and avg may mix",
					    reduce_names[pl->p[e].reduce],
					    reduce_names[p->reduce]);
	}
	for (int m = 0; m < pl->ndim; m++) {
		int seq[DT_MAX_MESH_DIMS];
		if (!is_sharding(&pl->p[m]))
			continue;
		int k = shard_sequence(pl, pl->p[m].dim, seq);
		for (int i = 0; i < k; i++)
			if (pl->order_pos[seq[i]] != i)
				return fail(err, errlen,
					    "shard order of tensor dim %d is "
					    "not a permutation of its %d mesh "
					    "dims",
					    pl->p[m].dim, k);
	}
	return true;
}

bool dt_placements_equal(const struct dt_placements *a,
			 const struct dt_placements *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (int m = 0; m < a->ndim; m++) {
		const struct dt_placement *p = &a->p[m], *q = &b->p[m];
		if (p->kind != q->kind)
			return false;
		if (p->kind == DT_PL_PARTIAL && p->reduce != q->reduce)
			return false;
		if (is_sharding(p) &&
		    (p->dim != q->dim || a->order_pos[m] != b->order_pos[m]))
			return false;
		if (p->kind == DT_PL_STRIDED_SHARD &&
		    p->split_factor != q->split_factor)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Which indices a rank holds. */

void dt_chunk(int64_t len, int64_t n, int64_t i, int64_t *start,
	      int64_t *length)
{
	DT_REQUIRE(len >= 0 && n > 0 && i >= 0 && i < n);
	int64_t cs = (len + n - 1) / n;
	int64_t s = i * cs < len ? i * cs : len;
	int64_t e = (i + 1) * cs < len ? (i + 1) * cs : len;
	*start = s;
	*length = e - s;
}

/* Works in place on out[0..*nout): every step keeps a subsequence, and a
 * kept element never moves right, so forward memmove is safe. */
void dt_shard_indices(const struct dt_placements *pl, const int64_t *mesh_shape,
		      const int64_t *coord, int tdim, int64_t len, int64_t *out,
		      int64_t *nout)
{
	int seq[DT_MAX_MESH_DIMS];
	int k = shard_sequence(pl, tdim, seq);
	int64_t cur = len;
	for (int64_t i = 0; i < len; i++)
		out[i] = i;
	for (int i = 0; i < k; i++) {
		const struct dt_placement *p = &pl->p[seq[i]];
		int64_t n = mesh_shape[seq[i]], c = coord[seq[i]];
		int64_t sf = p->kind == DT_PL_STRIDED_SHARD ? p->split_factor : 1;
		int64_t kept = 0;
		DT_REQUIRE(sf >= 1);
		for (int64_t piece = 0; piece < sf; piece++) {
			int64_t ps, pn, s, l;
			dt_chunk(cur, sf, piece, &ps, &pn);
			dt_chunk(pn, n, c, &s, &l);
			memmove(out + kept, out + ps + s, (size_t)l * sizeof *out);
			kept += l;
		}
		cur = kept;
	}
	*nout = cur;
}

void dt_shard_interval(const struct dt_placements *pl,
		       const int64_t *mesh_shape, const int64_t *coord,
		       int tdim, int64_t len, int64_t *start, int64_t *length)
{
	int seq[DT_MAX_MESH_DIMS];
	int k = shard_sequence(pl, tdim, seq);
	*start = 0;
	for (int i = 0; i < k; i++) {
		int64_t s;
		DT_REQUIRE(pl->p[seq[i]].kind == DT_PL_SHARD);
		dt_chunk(len, mesh_shape[seq[i]], coord[seq[i]], &s, &len);
		*start += s;
	}
	*length = len;
}

/* Local length of a dim of length len at `coord`, sharded by the k mesh
 * dims seq[] in shard order. */
static int64_t sequence_length(const struct dt_placements *pl, const int *seq,
			       int k, const int64_t *mesh_shape,
			       const int64_t *coord, int64_t len)
{
	for (int i = 0; i < k && len > 0; i++) {
		const struct dt_placement *p = &pl->p[seq[i]];
		int64_t n = mesh_shape[seq[i]], c = coord[seq[i]];
		int64_t sf = p->kind == DT_PL_STRIDED_SHARD ? p->split_factor : 1;
		DT_REQUIRE(sf >= 1);
		/* The rank keeps chunk c of each of the sf pieces: `full`
		 * pieces of length ps, then one of length `rest` (the pieces
		 * after it are empty). */
		int64_t ps = (len + sf - 1) / sf, full = len / ps;
		int64_t rest = len - full * ps, s, l, kept;
		dt_chunk(ps, n, c, &s, &l);
		kept = full * l;
		if (rest > 0) {
			dt_chunk(rest, n, c, &s, &l);
			kept += l;
		}
		len = kept;
	}
	return len;
}

int64_t dt_shard_length(const struct dt_placements *pl,
			const int64_t *mesh_shape, const int64_t *coord,
			int tdim, int64_t len)
{
	int seq[DT_MAX_MESH_DIMS];
	int k = shard_sequence(pl, tdim, seq);
	return sequence_length(pl, seq, k, mesh_shape, coord, len);
}

void dt_shard_lengths(const struct dt_placements *pl, const int64_t *mesh_shape,
		      int d, int64_t len, struct dt_shard_lengths *out)
{
	/* Only the mesh dims sharding d matter: walk their coordinates. */
	int seq[DT_MAX_MESH_DIMS];
	int k = shard_sequence(pl, d, seq);
	int64_t coord[DT_MAX_MESH_DIMS] = {0};
	*out = (struct dt_shard_lengths){.min = len, .max = 0};
	for (;;) {
		int64_t l = sequence_length(pl, seq, k, mesh_shape, coord, len);
		out->min = l < out->min ? l : out->min;
		out->max = l > out->max ? l : out->max;
		out->unit |= l == 1;
		int i = k - 1;
		while (i >= 0 && ++coord[seq[i]] == mesh_shape[seq[i]])
			coord[seq[i--]] = 0;
		if (i < 0)
			break;
	}
}

/* The product of the mesh dims sharding tensor dim d into *parts; returns
 * that times every strided shard's split factor (= *parts without _S). */
static int64_t shard_grain(const struct dt_placements *pl,
			   const int64_t *mesh_shape, int d, int64_t *parts)
{
	int64_t grain = 1;
	*parts = 1;
	for (int m = 0; m < pl->ndim; m++)
		if (shards_dim(&pl->p[m], d)) {
			*parts *= mesh_shape[m];
			grain *= mesh_shape[m] * (pl->p[m].kind == DT_PL_STRIDED_SHARD
							  ? pl->p[m].split_factor
							  : 1);
		}
	return grain;
}

bool dt_shard_origin_largest(const struct dt_placements *pl,
			     const int64_t *mesh_shape, int d, int64_t len)
{
	int64_t parts, grain = shard_grain(pl, mesh_shape, d, &parts);
	return grain == parts || len % grain == 0;
}

int64_t dt_shard_largest(const struct dt_placements *pl,
			 const int64_t *mesh_shape, int d, int64_t len)
{
	int64_t parts, grain = shard_grain(pl, mesh_shape, d, &parts);
	if (grain != parts && len % grain != 0) {
		struct dt_shard_lengths l;
		dt_shard_lengths(pl, mesh_shape, d, len, &l);
		return l.max;
	}
	return (len + parts - 1) / parts;
}

void dt_shard_shape(const struct dt_mesh *mesh, const struct dt_placements *pl,
		    int64_t pos, const int64_t *g, int rank, int64_t *out)
{
	int64_t coord[DT_MAX_MESH_DIMS];
	if (pos >= 0) {
		dt_mesh_coords(mesh, pos, coord);
		for (int d = 0; d < rank; d++)
			out[d] = dt_shard_length(pl, mesh->shape, coord, d, g[d]);
		return;
	}
	for (int d = 0; d < rank; d++)
		out[d] = dt_shard_largest(pl, mesh->shape, d, g[d]);
}

bool dt_placements_refine(const struct dt_placements *src,
			  const struct dt_placements *dst, int tensor_rank)
{
	if (src->ndim != dst->ndim)
		return false;
	for (int k = 0; k < src->ndim; k++) {
		const struct dt_placement *a = &src->p[k], *b = &dst->p[k];
		bool same = a->kind == b->kind && a->dim == b->dim &&
			    a->split_factor == b->split_factor &&
			    a->reduce == b->reduce;
		if (!same && !(a->kind == DT_PL_REPLICATE &&
			       b->kind == DT_PL_SHARD))
			return false;
	}
	for (int d = 0; d < tensor_rank; d++) {
		int sa[DT_MAX_MESH_DIMS], sb[DT_MAX_MESH_DIMS];
		int na = shard_sequence(src, d, sa), nb = shard_sequence(dst, d, sb);
		if (nb < na || memcmp(sa, sb, (size_t)na * sizeof *sa) != 0)
			return false;
	}
	return true;
}

void dt_shard_box(const struct dt_placements *src,
		  const struct dt_placements *dst, const int64_t *mesh_shape,
		  const int64_t *coord, int tdim, int64_t len, int64_t *start,
		  int64_t *length)
{
	int64_t *is = dt_malloc((size_t)(len + 1) * sizeof *is);
	int64_t *id = dt_malloc((size_t)(len + 1) * sizeof *id);
	int64_t ns, nd;
	dt_shard_indices(src, mesh_shape, coord, tdim, len, is, &ns);
	dt_shard_indices(dst, mesh_shape, coord, tdim, len, id, &nd);
	*start = 0;
	*length = nd;
	while (nd > 0 && *start < ns && is[*start] != id[0])
		++*start;
	DT_REQUIRE(*start + nd <= ns &&
		   (nd == 0 || memcmp(is + *start, id, (size_t)nd * sizeof *id) == 0));
	dt_free(is);
	dt_free(id);
}

bool dt_shard_even(const struct dt_mesh *mesh, const struct dt_placements *pl,
		   const int64_t *g, int rank)
{
	int64_t first[DT_MAX_RANK], here[DT_MAX_RANK];
	bool shards = false;
	for (int k = 0; k < pl->ndim; k++)
		shards = shards || (is_sharding(&pl->p[k]) && mesh->shape[k] > 1);
	if (!shards)
		return true;
	/* every level splits evenly (no _S): no need to visit the ranks */
	bool divides = true;
	for (int d = 0; d < rank && divides; d++) {
		int seq[DT_MAX_MESH_DIMS];
		int n = shard_sequence(pl, d, seq);
		int64_t len = g[d];
		for (int i = 0; i < n && divides; i++) {
			divides = pl->p[seq[i]].kind == DT_PL_SHARD &&
				  len % mesh->shape[seq[i]] == 0;
			len /= mesh->shape[seq[i]];
		}
	}
	if (divides)
		return true;
	for (int64_t pos = 0; pos < mesh->size; pos++) {
		dt_shard_shape(mesh, pl, pos, g, rank, pos ? here : first);
		if (pos && memcmp(first, here, (size_t)rank * sizeof *here) != 0)
			return false;
	}
	return true;
}

int dt_placements_block_dim(const struct dt_placements *coarse,
			    const struct dt_placements *fine, int tdim)
{
	int sc[DT_MAX_MESH_DIMS], sf[DT_MAX_MESH_DIMS];
	int nc = shard_sequence(coarse, tdim, sc), nf = shard_sequence(fine, tdim, sf);
	if (nf != nc + 1 || memcmp(sc, sf, (size_t)nc * sizeof *sc) != 0 ||
	    fine->p[sf[nc]].kind != DT_PL_SHARD)
		return -1;
	return sf[nc];
}
