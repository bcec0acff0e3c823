// SPDX-License-Identifier: MIT
/* json.c: the IOPDDL contest's JSON problem format, plain or gzip, read by a
 * streaming reader of our own (Debian's jansson and json-c take 1.3 s and
 * 0.7 s of CPU and 380-580 MB for instance A's 90 MB; this reads the .gz in
 * 0.2 s and 65 MB, keeping only the numbers). Only the contest's shape is
 * accepted:
 *
 *   {"problem": {"name": "...",
 *     "nodes": {"intervals": [[start, end], ...], "costs": [[c, ...], ...],
 *               "usages": [[u, ...], ...]},
 *     "edges": {"nodes": [[from, to], ...], "costs": [[c, ...], ...]},
 *     "usage_limit": L}}
 *
 * in any key order; other keys are skipped, usage_limit may be absent (no
 * limit). Errors name the JSON path and line, or the node or edge. */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <zlib.h>

#define MAX_DEPTH 64 /* nesting of skipped values */

struct reader {
	gzFile f;
	const char *path;
	struct dt_diag *diag;
	uint32_t line;
	int pos, len;
	bool failed; /* an error was reported: unwind */
	char buf[1 << 16];
};

/* Bytes of a string being read (a DT_VEC(char) with a name). */
struct text {
	char *data;
	uint32_t len, cap;
};

/* A list of integer lists, each with the line it starts on. */
struct lists {
	DT_VEC(int64_t *) items;
	DT_VEC(int32_t) lens;
	DT_VEC(uint32_t) lines;
	bool seen;
};

static bool fail(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool fail(struct reader *r, const char *fmt, ...)
{
	if (!r->failed) {
		va_list ap;
		va_start(ap, fmt);
		dt_diag_vreport(r->diag, DT_ERROR, r->path, r->line, NULL, fmt, ap);
		va_end(ap);
	}
	r->failed = true;
	return false;
}

static bool refill(struct reader *r)
{
	r->pos = 0;
	r->len = gzread(r->f, r->buf, sizeof(r->buf));
	if (r->len < 0) {
		int err;
		const char *msg = gzerror(r->f, &err);
		r->len = 0;
		return fail(r, "cannot read: %s", msg);
	}
	return r->len > 0;
}

/* The next significant character without consuming it; -1 at the end. */
static int peek(struct reader *r)
{
	for (;;) {
		if (r->pos == r->len && !refill(r))
			return -1;
		char c = r->buf[r->pos];
		if (c == '\n')
			r->line++;
		else if (c != ' ' && c != '\t' && c != '\r')
			return (unsigned char)c;
		r->pos++;
	}
}

static const char *describe(int c)
{
	static _Thread_local char s[16];
	if (c < 0)
		return "the end of the file";
	snprintf(s, sizeof(s), c >= 32 && c < 127 ? "'%c'" : "byte 0x%02x", c);
	return s;
}

static bool expect(struct reader *r, char want, const char *where)
{
	int c = peek(r);
	if (c != want)
		return fail(r, "%s: expected '%c', got %s", where, want, describe(c));
	r->pos++;
	return true;
}

/* A JSON integer (no fraction or exponent) that fits 64 bits. */
static bool read_int(struct reader *r, int64_t *out, const char *where)
{
	int c = peek(r);
	bool neg = c == '-';
	if (neg) {
		r->pos++;
		if (r->pos == r->len && !refill(r))
			return fail(r, "%s: expected an integer, got %s", where, describe(-1));
		c = (unsigned char)r->buf[r->pos];
	}
	if (c < '0' || c > '9')
		return fail(r, "%s: expected an integer, got %s", where, describe(c));
	uint64_t v = 0;
	for (;;) {
		if (r->pos == r->len && !refill(r))
			break;
		c = (unsigned char)r->buf[r->pos];
		if (c < '0' || c > '9')
			break;
		if (v > (UINT64_C(1) << 63) / 10)
			return fail(r, "%s: integer out of range", where);
		v = v * 10 + (uint64_t)(c - '0');
		r->pos++;
	}
	if (r->failed)
		return false;
	if (c == '.' || c == 'e' || c == 'E')
		return fail(r, "%s: expected an integer, got a fraction or exponent",
			    where);
	if (v > (uint64_t)INT64_MAX + neg)
		return fail(r, "%s: integer out of range", where);
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* A string; its bytes (escapes kept as written) go to `out` when not NULL. */
static bool read_string(struct reader *r, struct text *out, const char *where)
{
	if (!expect(r, '"', where))
		return false;
	for (;;) {
		if (r->pos == r->len && !refill(r))
			return fail(r, "%s: unterminated string", where);
		char c = r->buf[r->pos++];
		if (c == '"')
			break;
		if ((unsigned char)c < 32)
			return fail(r, "%s: control character in a string", where);
		if (c == '\\') {
			if (out)
				dt_vec_push(out, c);
			if (r->pos == r->len && !refill(r))
				return fail(r, "%s: unterminated string", where);
			c = r->buf[r->pos++];
		}
		if (out)
			dt_vec_push(out, c);
	}
	if (out)
		dt_vec_push(out, '\0');
	return true;
}

/* Skip any JSON value (numbers loosely: their characters). */
static bool skip_value(struct reader *r, const char *where, int depth)
{
	if (depth > MAX_DEPTH)
		return fail(r, "%s: nested deeper than %d", where, MAX_DEPTH);
	int c = peek(r);
	if (c == '"')
		return read_string(r, NULL, where);
	if (c == '[' || c == '{') {
		char close = c == '[' ? ']' : '}';
		r->pos++;
		if (peek(r) == close) {
			r->pos++;
			return true;
		}
		for (;;) {
			if (c == '{' && (!read_string(r, NULL, where) || !expect(r, ':', where)))
				return false;
			if (!skip_value(r, where, depth + 1))
				return false;
			if (peek(r) != ',')
				return expect(r, close, where);
			r->pos++;
		}
	}
	if (c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')) {
		do {
			r->pos++;
			if (r->pos == r->len && !refill(r))
				break;
			c = (unsigned char)r->buf[r->pos];
		} while (c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') ||
			 (c >= 'a' && c <= 'z') || c == 'E');
		return !r->failed;
	}
	return fail(r, "%s: expected a value, got %s", where, describe(c));
}

/* Iterate an object's keys: call `member(r, key, ud)` positioned at each
 * value. */
static bool read_object(struct reader *r, const char *where,
			bool (*member)(struct reader *, const char *, void *), void *ud)
{
	if (!expect(r, '{', where))
		return false;
	if (peek(r) == '}') {
		r->pos++;
		return true;
	}
	struct text key = {0};
	bool ok = true;
	for (;;) {
		key.len = 0;
		if (!(ok = read_string(r, &key, where) && expect(r, ':', where) &&
			   member(r, key.data, ud)))
			break;
		if (peek(r) != ',') {
			ok = expect(r, '}', where);
			break;
		}
		r->pos++;
	}
	dt_vec_free(&key);
	return ok;
}

static void lists_fini(struct lists *l)
{
	for (uint32_t i = 0; i < l->items.len; i++)
		dt_free(l->items.data[i]);
	dt_vec_free(&l->items);
	dt_vec_free(&l->lens);
	dt_vec_free(&l->lines);
}

/* [[int, ...], ...] at JSON path `where`. */
static bool read_lists(struct reader *r, struct lists *l, const char *where)
{
	if (l->seen)
		return fail(r, "%s: given twice", where);
	l->seen = true;
	if (!expect(r, '[', where))
		return false;
	if (peek(r) == ']') {
		r->pos++;
		return true;
	}
	DT_VEC(int64_t) tmp = {0};
	char at[96];
	for (;;) {
		snprintf(at, sizeof(at), "%s[%u]", where, l->items.len);
		tmp.len = 0;
		uint32_t line = r->line;
		if (!expect(r, '[', at))
			break;
		if (peek(r) == ']')
			r->pos++;
		else
			for (;;) {
				int64_t x;
				if (!read_int(r, &x, at))
					break;
				dt_vec_push(&tmp, x);
				if (peek(r) != ',') {
					expect(r, ']', at);
					break;
				}
				r->pos++;
			}
		if (r->failed)
			break;
		int64_t *item = dt_malloc(sizeof(int64_t) * (tmp.len + 1));
		if (tmp.len > 0)
			memcpy(item, tmp.data, sizeof(int64_t) * tmp.len);
		dt_vec_push(&l->items, item);
		dt_vec_push(&l->lens, (int32_t)tmp.len);
		dt_vec_push(&l->lines, line);
		if (peek(r) != ',') {
			expect(r, ']', where);
			break;
		}
		r->pos++;
	}
	dt_vec_free(&tmp);
	return !r->failed;
}

struct parts {
	struct lists intervals, node_costs, usages, edge_nodes, edge_costs;
	bool has_nodes, has_edges, has_limit, has_problem;
	int64_t limit;
	char *name;
	uint32_t problem_line;
};

static bool nodes_member(struct reader *r, const char *key, void *ud)
{
	struct parts *p = ud;
	if (strcmp(key, "intervals") == 0)
		return read_lists(r, &p->intervals, "problem.nodes.intervals");
	if (strcmp(key, "costs") == 0)
		return read_lists(r, &p->node_costs, "problem.nodes.costs");
	if (strcmp(key, "usages") == 0)
		return read_lists(r, &p->usages, "problem.nodes.usages");
	return skip_value(r, "problem.nodes", 0);
}

static bool edges_member(struct reader *r, const char *key, void *ud)
{
	struct parts *p = ud;
	if (strcmp(key, "nodes") == 0)
		return read_lists(r, &p->edge_nodes, "problem.edges.nodes");
	if (strcmp(key, "costs") == 0)
		return read_lists(r, &p->edge_costs, "problem.edges.costs");
	return skip_value(r, "problem.edges", 0);
}

static bool problem_member(struct reader *r, const char *key, void *ud)
{
	struct parts *p = ud;
	if (strcmp(key, "nodes") == 0) {
		if (p->has_nodes)
			return fail(r, "problem.nodes: given twice");
		p->has_nodes = true;
		return read_object(r, "problem.nodes", nodes_member, p);
	}
	if (strcmp(key, "edges") == 0) {
		if (p->has_edges)
			return fail(r, "problem.edges: given twice");
		p->has_edges = true;
		return read_object(r, "problem.edges", edges_member, p);
	}
	if (strcmp(key, "usage_limit") == 0) {
		if (p->has_limit)
			return fail(r, "problem.usage_limit: given twice");
		p->has_limit = true;
		return read_int(r, &p->limit, "problem.usage_limit");
	}
	if (strcmp(key, "name") == 0 && peek(r) == '"') {
		struct text s = {0};
		bool ok = read_string(r, &s, "problem.name");
		dt_free(p->name);
		p->name = s.data;
		return ok;
	}
	return skip_value(r, "problem", 0);
}

static bool top_member(struct reader *r, const char *key, void *ud)
{
	struct parts *p = ud;
	if (strcmp(key, "problem") != 0)
		return skip_value(r, "the top level", 0);
	if (p->has_problem)
		return fail(r, "problem: given twice");
	p->has_problem = true;
	p->problem_line = r->line;
	return read_object(r, "problem", problem_member, p);
}

/* ---- from the lists to the problem ---- */

static int missing(struct reader *r, const char *what)
{
	dt_diag_report(r->diag, DT_ERROR, r->path, 0, NULL, "missing %s", what);
	return DT_EINPUT;
}

static bool count_is(struct reader *r, const struct lists *l, const char *name,
		     uint32_t want, const char *want_name)
{
	if (l->items.len == want)
		return true;
	dt_diag_report(r->diag, DT_ERROR, r->path, 0, NULL,
		       "%s has %u entries but %s has %u", name, l->items.len,
		       want_name, want);
	return false;
}

/* Move the lists into `p`, checking every size; DT_OK or DT_EINPUT. */
static int build(struct reader *r, struct parts *s, struct dt_solve_problem *p)
{
	if (!s->has_problem)
		return missing(r, "'problem' object");
	if (!s->has_nodes || !s->intervals.seen || !s->node_costs.seen || !s->usages.seen)
		return missing(r, !s->has_nodes ? "problem.nodes" :
			       !s->intervals.seen ? "problem.nodes.intervals" :
			       !s->node_costs.seen ? "problem.nodes.costs" :
			       "problem.nodes.usages");
	if (!s->has_edges || !s->edge_nodes.seen || !s->edge_costs.seen)
		return missing(r, !s->has_edges ? "problem.edges" :
			       !s->edge_nodes.seen ? "problem.edges.nodes" :
			       "problem.edges.costs");
	uint32_t n = s->intervals.items.len, m = s->edge_nodes.items.len;
	if (!count_is(r, &s->node_costs, "problem.nodes.costs", n, "problem.nodes.intervals") ||
	    !count_is(r, &s->usages, "problem.nodes.usages", n, "problem.nodes.intervals") ||
	    !count_is(r, &s->edge_costs, "problem.edges.costs", m, "problem.edges.nodes"))
		return DT_EINPUT;
	if (n > INT32_MAX || m > INT32_MAX)
		return missing(r, "a problem under 2^31 nodes and edges");
	p->nnodes = (int32_t)n;
	p->nedges = (int32_t)m;
	p->usage_limit = s->has_limit ? s->limit : -1;
	p->name = s->name;
	s->name = NULL;
	p->nodes = dt_calloc(n + 1, sizeof(*p->nodes));
	p->edges = dt_calloc(m + 1, sizeof(*p->edges));
	int status = DT_OK;
	for (uint32_t v = 0; v < n; v++) {
		struct dt_solve_node *nd = &p->nodes[v];
		nd->cost = s->node_costs.items.data[v];
		nd->usage = s->usages.items.data[v];
		s->node_costs.items.data[v] = s->usages.items.data[v] = NULL;
		nd->nstrategies = s->node_costs.lens.data[v];
		const int64_t *iv = s->intervals.items.data[v];
		if (s->intervals.lens.data[v] != 2) {
			dt_diag_report(r->diag, DT_ERROR, r->path, s->intervals.lines.data[v],
				       NULL, "node %u: interval has %d numbers, want 2 "
				       "[start, end]", v, s->intervals.lens.data[v]);
			status = DT_EINPUT;
		} else {
			nd->start = iv[0];
			nd->end = iv[1];
		}
		if (s->usages.lens.data[v] != nd->nstrategies) {
			dt_diag_report(r->diag, DT_ERROR, r->path, s->usages.lines.data[v],
				       NULL, "node %u: %d costs but %d usages", v,
				       nd->nstrategies, s->usages.lens.data[v]);
			status = DT_EINPUT;
		}
	}
	for (uint32_t e = 0; e < m; e++) {
		struct dt_solve_edge *ed = &p->edges[e];
		ed->cost = s->edge_costs.items.data[e];
		s->edge_costs.items.data[e] = NULL;
		const int64_t *ends = s->edge_nodes.items.data[e];
		if (s->edge_nodes.lens.data[e] != 2) {
			dt_diag_report(r->diag, DT_ERROR, r->path, s->edge_nodes.lines.data[e],
				       NULL, "edge %u: has %d node numbers, want 2 "
				       "[from, to]", e, s->edge_nodes.lens.data[e]);
			status = DT_EINPUT;
			continue;
		}
		if (ends[0] < 0 || ends[0] >= n || ends[1] < 0 || ends[1] >= n) {
			dt_diag_report(r->diag, DT_ERROR, r->path, s->edge_nodes.lines.data[e],
				       NULL, "edge %u: node %lld out of range (%u nodes)", e,
				       (long long)(ends[0] < 0 || ends[0] >= n ? ends[0] : ends[1]), n);
			status = DT_EINPUT;
			continue;
		}
		ed->from = (int32_t)ends[0];
		ed->to = (int32_t)ends[1];
		int64_t want = (int64_t)p->nodes[ed->from].nstrategies * p->nodes[ed->to].nstrategies;
		if (s->edge_costs.lens.data[e] != want) {
			dt_diag_report(r->diag, DT_ERROR, r->path, s->edge_costs.lines.data[e],
				       NULL, "edge %u (node %d -> node %d): cost matrix has %d "
				       "entries, want %d x %d = %lld", e, ed->from, ed->to,
				       s->edge_costs.lens.data[e], p->nodes[ed->from].nstrategies,
				       p->nodes[ed->to].nstrategies, (long long)want);
			status = DT_EINPUT;
		}
	}
	return status;
}

int dt_solve_problem_read(const char *path, struct dt_solve_problem *p,
			  struct dt_diag *diag)
{
	memset(p, 0, sizeof(*p));
	struct reader *r = dt_calloc(1, sizeof(*r));
	r->path = path;
	r->diag = diag;
	r->line = 1;
	r->f = gzopen(path, "rb");
	if (!r->f) {
		dt_diag_report(diag, DT_ERROR, path, 0, NULL, "cannot open: %s",
			       strerror(errno));
		dt_free(r);
		return DT_EIO;
	}
	gzbuffer(r->f, 1 << 18);
	struct parts s = {0};
	bool ok = read_object(r, "the top level", top_member, &s);
	if (ok && peek(r) >= 0)
		ok = fail(r, "text after the top-level object");
	int status = ok ? build(r, &s, p) : DT_EINPUT;
	if (status == DT_OK)
		status = dt_solve_problem_check(p, path, diag);
	struct lists *all[] = {&s.intervals, &s.node_costs, &s.usages, &s.edge_nodes,
			       &s.edge_costs};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		lists_fini(all[i]);
	dt_free(s.name);
	gzclose(r->f);
	dt_free(r);
	if (status != DT_OK)
		dt_solve_problem_fini(p);
	return status;
}
