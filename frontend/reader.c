// SPDX-License-Identifier: MIT
/* reader.c: streaming reader of graph XML format v1 (libxml2 xmlTextReader
 * with RelaxNG validation) building a dt_module.
 *
 * Security: the input is read into memory with a size bound; a DOCTYPE is
 * rejected before libxml2 sees the document, so no DTD, internal or external
 * entity is ever processed; the external entity loader refuses everything;
 * XML_PARSE_NONET forbids network access; element depth is bounded. */
#define _GNU_SOURCE /* memmem */
#include "constant_data.h"
#include "frontend.h"
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <libxml/relaxng.h>
#include <libxml/xmlreader.h>
#include <stdlib.h>
#include <string.h>

/* One node being read: its children are collected, then added at </node>. */
struct pending_node {
	bool active;
	struct dt_node_init init;
	DT_VEC(struct dt_arg) args;     /* positional */
	DT_VEC(struct dt_arg) kwargs;
	DT_VEC(struct dt_arg) items;    /* of the arg being read */
	DT_VEC(struct dt_tensor) tensors;
	DT_VEC(struct dt_meta) metas;
	struct dt_sharding sharding;
	bool has_sharding;
	uint32_t sharding_line;
	/* A get_attr node's <data>: inline bytes decoded, or a side file. */
	DT_VEC(unsigned char) data;
	char *data_file;                /* side file name (heap), NULL = inline */
	uint64_t data_bytes;
	uint32_t data_crc, data_line;
	bool has_data;
	struct dt_arg *list_arg;        /* arg whose <item>s are being read */
	bool list_is_kwarg;
	bool bad;                       /* an error was reported for it */
};

struct reader {
	struct dt_module *m;
	struct dt_diag *diag;
	const struct dt_read_options *opt;
	xmlTextReaderPtr xr;
	bool failed;
	bool seen_node;
	int minor;                      /* the file's minor format version */
	uint32_t topology_line;         /* of the <topology>, 0 = none yet */
	struct pending_node node;
	DT_VEC(int64_t) scratch;
	/* The first schema violation, held back until the reader has looked at
	 * the element itself: its own message names the problem precisely, and
	 * the schema's is reported only when the reader found nothing. */
	char schema_error[512];
	uint32_t schema_line;
};

/* ---- diagnostics ---- */

static void error_at(struct reader *r, uint32_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void error_at(struct reader *r, uint32_t line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	dt_diag_vreport(r->diag, DT_ERROR, r->m->file, line, NULL, fmt, ap);
	va_end(ap);
	r->failed = true;
	r->node.bad = true;
}

static void libxml_error(void *ud, xmlErrorPtr e)
{
	struct reader *r = ud;
	/* libxml2 follows its first error with consequences of it. */
	if (!e || e->level == XML_ERR_WARNING || r->failed)
		return;
	char msg[1024];
	/* libxml2 says "Document is empty" of any input without a start tag. */
	snprintf(msg, sizeof(msg), "%s",
		 e->code == XML_ERR_DOCUMENT_EMPTY ? "no start tag of an element found"
		 : e->message			   ? e->message
						   : "XML error");
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = 0;
	uint32_t line = e->line > 0 ? (uint32_t)e->line : 0;
	if (e->domain == XML_FROM_RELAXNGV) {
		if (!r->schema_error[0]) {
			snprintf(r->schema_error, sizeof(r->schema_error),
				 "does not match the format v1 schema: %.400s", msg);
			r->schema_line = line;
		}
		return;
	}
	/* libxml2's words for an attribute value over its 10 MB limit. */
	bool huge = strstr(msg, "Huge input lookup") ||
		    strstr(msg, "AttValue length too long");
	error_at(r, line, "malformed XML: %s%s", msg,
		 huge ? " (a value over 10 MB: constant data this large "
			"belongs in a side file, <data file=...>)"
		      : "");
}

/* Report a held-back schema violation (see struct reader). */
static void flush_schema_error(struct reader *r)
{
	if (r->schema_error[0] && !r->failed)
		error_at(r, r->schema_line, "%s", r->schema_error);
}

static xmlParserInputPtr refuse_external_entity(const char *url,
						const char *id,
						xmlParserCtxtPtr ctxt)
{
	(void)url;
	(void)id;
	(void)ctxt;
	return NULL;
}

/* ---- attribute access on the current element ---- */

/* The source line of element `n`. libxml2 keeps element lines in 16 bits;
 * past line 65535 they come from the text node after the start tag, or,
 * when the reader has not parsed that far, the parser's position (at or a
 * few lines after the element: the reader parses ahead in chunks). */
static uint32_t node_line(struct reader *r, xmlNodePtr n)
{
	long line = xmlGetLineNo(n);
	if (line >= 65535 && n->type == XML_ELEMENT_NODE) {
		/* XML_PARSE_BIG_LINES keeps the full line only in text nodes,
		 * as the line where the text ends: the text after the start
		 * tag (first child, else next sibling) less its newlines is
		 * the line of the tag's end. */
		xmlNodePtr t = n->children ? n->children : n->next;
		if (t && t->type == XML_TEXT_NODE && t->psvi) {
			line = (long)(ptrdiff_t)t->psvi;
			for (const xmlChar *c = t->content; c && *c; c++)
				line -= *c == '\n';
			return line > 0 ? (uint32_t)line : 0;
		}
	}
	if (line >= 65535)
		line = xmlTextReaderGetParserLineNumber(r->xr);
	return line > 0 ? (uint32_t)line : 0;
}

/* Value of attribute `name` of element `n`, or NULL. Entities are never
 * defined (no DTD), so a value is one text child. */
static const char *attr(xmlNodePtr n, const char *name)
{
	for (xmlAttrPtr a = n->properties; a; a = a->next) {
		if (strcmp((const char *)a->name, name) == 0)
			return a->children && a->children->content
				       ? (const char *)a->children->content
				       : "";
	}
	return NULL;
}

static const char *required(struct reader *r, xmlNodePtr n, const char *name)
{
	const char *v = attr(n, name);
	if (!v)
		error_at(r, node_line(r, n), "<%s> needs a '%s' attribute",
			 (const char *)n->name, name);
	return v;
}

/* ---- value parsing ---- */

static bool parse_int(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno)
		return false;
	*out = v;
	return true;
}

static bool parse_float(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE)
		return false;
	*out = v;
	return true;
}

/* Parse a space-separated int list into r->scratch; false on a bad token
 * (its text is copied to bad). */
static bool parse_int_list(struct reader *r, const char *s, char *bad,
			   size_t badlen)
{
	r->scratch.len = 0;
	while (*s) {
		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (!*s)
			break;
		const char *start = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\n')
			s++;
		char tok[64];
		size_t n = (size_t)(s - start);
		int64_t v;
		if (n >= sizeof(tok)) {
			snprintf(bad, badlen, "%.40s...", start);
			return false;
		}
		memcpy(tok, start, n);
		tok[n] = 0;
		if (!parse_int(tok, &v)) {
			snprintf(bad, badlen, "%s", tok);
			return false;
		}
		dt_vec_push(&r->scratch, v);
	}
	return true;
}

static bool parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0)
		*out = true;
	else if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0)
		*out = false;
	else
		return false;
	return true;
}

/* Resolve a reference to an earlier node, named by the `len` bytes at
 * `name`. */
static uint32_t node_ref(struct reader *r, const char *name, size_t len,
			 uint32_t line)
{
	dt_str s = dt_str_intern_n(r->m, name, len);
	uint32_t id = dt_module_find_node(r->m, s);
	if (!id || !(dt_node_get(r->m, id)->flags & DT_NODE_LINKED)) {
		error_at(r, line,
			 "node '%s' uses '%s', which is not defined before it",
			 dt_str_get(r->m, r->node.init.name), dt_str_get(r->m, s));
		return 0;
	}
	return id;
}

/* Fill `a` from the value attribute of an <arg>, <kwarg> or <item>.
 * Returns false when the element has no value attribute (a list follows). */
static bool parse_value(struct reader *r, xmlNodePtr el, struct dt_arg *a,
			bool item)
{
	uint32_t line = node_line(r, el);
	const char *what = (const char *)el->name;
	char bad[64];
	int found = 0;
	for (xmlAttrPtr at = el->properties; at; at = at->next) {
		const char *k = (const char *)at->name;
		const char *v = at->children && at->children->content
					? (const char *)at->children->content
					: "";
		if (strcmp(k, "name") == 0 && !item)
			continue;
		found++;
		if (found > 1) {
			error_at(r, line, "<%s> has more than one value", what);
			return true;
		}
		if (strcmp(k, "node") == 0) {
			a->kind = DT_ARG_NODE;
			a->v.node = node_ref(r, v, strlen(v), line);
		} else if (strcmp(k, "nodes") == 0 && !item) {
			a->kind = DT_ARG_NODES;
			DT_VEC(uint32_t) ids = {0};
			const char *s = v;
			while (*s) {
				while (*s == ' ')
					s++;
				const char *st = s;
				while (*s && *s != ' ')
					s++;
				if (s > st)
					dt_vec_push(&ids, node_ref(r, st,
								   (size_t)(s - st),
								   line));
			}
			a->len = ids.len;
			a->v.first = dt_module_add_refs(r->m, ids.data, ids.len);
			dt_vec_free(&ids);
		} else if (strcmp(k, "int") == 0) {
			a->kind = DT_ARG_INT;
			if (!parse_int(v, &a->v.i))
				error_at(r, line, "<%s int=\"%s\">: not an integer",
					 what, v);
		} else if (strcmp(k, "ints") == 0 && !item) {
			a->kind = DT_ARG_INTS;
			if (!parse_int_list(r, v, bad, sizeof(bad)))
				error_at(r, line,
					 "<%s ints=...>: '%s' is not an integer",
					 what, bad);
			a->len = r->scratch.len;
			a->v.ints = dt_ints_intern(r->m, r->scratch.data,
						   r->scratch.len);
		} else if (strcmp(k, "float") == 0) {
			a->kind = DT_ARG_FLOAT;
			if (!parse_float(v, &a->v.f))
				error_at(r, line, "<%s float=\"%s\">: not a number",
					 what, v);
		} else if (strcmp(k, "floats") == 0 && !item) {
			a->kind = DT_ARG_FLOATS;
			DT_VEC(double) fs = {0};
			char *dup = dt_strdup(v), *save = NULL;
			for (char *t = strtok_r(dup, " \t\n", &save); t;
			     t = strtok_r(NULL, " \t\n", &save)) {
				double f = 0;
				if (!parse_float(t, &f))
					error_at(r, line,
						 "<%s floats=...>: '%s' is not a number",
						 what, t);
				dt_vec_push(&fs, f);
			}
			a->len = fs.len;
			a->v.first = dt_module_add_floats(r->m, fs.data, fs.len);
			dt_free(dup);
			dt_vec_free(&fs);
		} else if (strcmp(k, "bool") == 0) {
			a->kind = DT_ARG_BOOL;
			if (!parse_bool(v, &a->v.b))
				error_at(r, line,
					 "<%s bool=\"%s\">: expected true or false",
					 what, v);
		} else if (strcmp(k, "str") == 0) {
			a->kind = DT_ARG_STR;
			a->v.s = dt_str_intern(r->m, v);
		} else if (strcmp(k, "dtype") == 0) {
			enum dt_dtype t = DT_FLOAT32;
			a->kind = DT_ARG_DTYPE;
			if (!dt_dtype_parse(v, strlen(v), &t))
				error_at(r, line, "<%s dtype=\"%s\">: unknown dtype",
					 what, v);
			a->v.dtype = (uint8_t)t;
		} else if (strcmp(k, "none") == 0) {
			a->kind = DT_ARG_NONE;
			bool b;
			if (!parse_bool(v, &b) || !b)
				error_at(r, line, "<%s none=\"%s\">: expected none=\"true\"",
					 what, v);
		} else {
			error_at(r, line, "<%s> has an unknown attribute '%s'",
				 what, k);
		}
	}
	return found > 0;
}

/* Tensors span at most 2^60 elements of storage, so that sizes, strides,
 * element counts and byte offsets computed from them fit in int64. */
#define MAX_ELEMENTS ((int64_t)1 << 60)

/* Whether the contiguous layout of `sizes` spans at most MAX_ELEMENTS
 * (size-0 dims count as 1, as in contiguous strides). */
static bool sizes_in_bounds(const int64_t *sizes, uint32_t rank)
{
	int64_t span = 1;
	for (uint32_t i = 0; i < rank; i++)
		if (__builtin_mul_overflow(span, sizes[i] > 1 ? sizes[i] : 1,
					   &span) ||
		    span > MAX_ELEMENTS)
			return false;
	return true;
}

/* Whether every stride and the last element reached stay within
 * MAX_ELEMENTS. */
static bool layout_in_bounds(const int64_t *sizes, const int64_t *strides,
			     uint32_t rank, int64_t offset)
{
	int64_t last = offset, term;
	for (uint32_t i = 0; i < rank; i++)
		if (strides[i] > MAX_ELEMENTS ||
		    __builtin_mul_overflow(sizes[i] ? sizes[i] - 1 : 0,
					   strides[i], &term) ||
		    __builtin_add_overflow(last, term, &last))
			return false;
	return last <= MAX_ELEMENTS;
}

/* ---- elements ---- */

static void read_root(struct reader *r, xmlNodePtr el)
{
	uint32_t line = node_line(r, el);
	if (strcmp((const char *)el->name, "dtopt-graph") != 0) {
		error_at(r, line,
			 "the root element is <%s>; expected <dtopt-graph>",
			 (const char *)el->name);
		return;
	}
	const char *version = attr(el, "version");
	if (!version) {
		error_at(r, line, "<dtopt-graph> needs a 'version' attribute");
	} else if (strcmp(version, "1") != 0) {
		int64_t minor;
		if (strncmp(version, "1.", 2) != 0 ||
		    !parse_int(version + 2, &minor) || minor < 1 ||
		    minor > DT_FORMAT_MINOR || version[2] == '+' ||
		    version[2] == '-' || version[2] == ' ')
			error_at(r, line,
				 "unsupported format version '%s' (this dtopt "
				 "reads versions 1 to 1.%d)",
				 version, DT_FORMAT_MINOR);
		else
			r->minor = (int)minor;
	}
	const char *name = attr(el, "name");
	r->m->name = dt_str_intern(r->m, name ? name : "");
	const char *view = attr(el, "view");
	if (!view || strcmp(view, "local") == 0)
		r->m->view = DT_VIEW_LOCAL;
	else if (strcmp(view, "global") == 0)
		r->m->view = DT_VIEW_GLOBAL;
	else
		error_at(r, line, "view=\"%s\": expected local or global", view);
	const char *rank = attr(el, "rank");
	int64_t rv;
	if (rank) {
		if (!parse_int(rank, &rv) || rv < 0 || rv > INT32_MAX)
			error_at(r, line, "rank=\"%s\": expected a rank number",
				 rank);
		else
			r->m->rank = (int32_t)rv;
	}
}

/* One attribute of <topology>: a positive finite number, unless absent. */
static void topology_number(struct reader *r, xmlNodePtr el, const char *name,
			    const char *unit, double *field)
{
	const char *text = attr(el, name);
	double v;
	if (!text)
		return;
	if (!parse_float(text, &v) || !(v >= DT_TOPOLOGY_MIN && v <= DT_TOPOLOGY_MAX))
		error_at(r, node_line(r, el),
			 "<topology> %s=\"%s\": expected a number%s%s from %g to %g",
			 name, text, *unit ? " of " : "", unit, DT_TOPOLOGY_MIN, DT_TOPOLOGY_MAX);
	else
		*field = v;
}

static void read_topology(struct reader *r, xmlNodePtr el)
{
	uint32_t line = node_line(r, el);
	if (r->topology_line) {
		error_at(r, line, "<topology> is given twice (first at line %u)",
			 r->topology_line);
		return;
	}
	if (r->m->meshes.len || r->m->groups.len || r->seen_node) {
		error_at(r, line, "<topology> must come before the meshes, groups "
				  "and nodes");
		return;
	}
	r->topology_line = line;
	struct dt_topology *t = &r->m->topology;
	const char *dph = attr(el, "devices-per-host");
	int64_t n;
	if (dph && (!parse_int(dph, &n) || n <= 0))
		error_at(r, line, "<topology> devices-per-host=\"%s\": expected a "
				  "positive integer", dph);
	else if (dph)
		t->devices_per_host = n;
	topology_number(r, el, "bandwidth", "GB/s", &t->bandwidth);
	topology_number(r, el, "latency", "µs", &t->latency);
	topology_number(r, el, "inter-host-bandwidth-factor", "",
			&t->inter_host_bandwidth_factor);
	topology_number(r, el, "inter-host-latency", "µs",
			&t->inter_host_latency);
	topology_number(r, el, "base-latency", "µs", &t->base_latency);
	topology_number(r, el, "all-to-all-penalty", "µs",
			&t->all_to_all_penalty);
	r->m->has_topology = true;
}

static void read_mesh(struct reader *r, xmlNodePtr el)
{
	uint32_t line = node_line(r, el);
	const char *name = required(r, el, "name");
	const char *shape = required(r, el, "shape");
	const char *dims = required(r, el, "dims");
	if (!name || !shape || !dims)
		return;
	struct dt_mesh mesh = {.name = dt_str_intern(r->m, name), .line = line};
	if (dt_module_find_mesh(r->m, mesh.name) >= 0) {
		error_at(r, line, "mesh '%s' is declared twice", name);
		return;
	}
	char bad[64];
	if (!parse_int_list(r, shape, bad, sizeof(bad))) {
		error_at(r, line, "mesh '%s': shape token '%s' is not an integer",
			 name, bad);
		return;
	}
	if (r->scratch.len == 0 || r->scratch.len > DT_MAX_MESH_DIMS) {
		error_at(r, line, "mesh '%s': a mesh has 1 to %d dims, not %u",
			 name, DT_MAX_MESH_DIMS, r->scratch.len);
		return;
	}
	mesh.ndim = (uint8_t)r->scratch.len;
	mesh.size = 1;
	for (int i = 0; i < mesh.ndim; i++) {
		mesh.shape[i] = r->scratch.data[i];
		if (mesh.shape[i] < 1 || mesh.shape[i] > (1 << 20)) {
			error_at(r, line, mesh.shape[i] < 1
				 ? "mesh '%s': dim size %lld is not positive"
				 : "mesh '%s': dim size %lld exceeds 2^20",
				 name, (long long)mesh.shape[i]);
			return;
		}
		mesh.size *= mesh.shape[i];
		if (mesh.size > (1 << 24)) {
			error_at(r, line, "mesh '%s' has more than %d devices",
				 name, 1 << 24);
			return;
		}
	}
	char *dup = dt_strdup(dims), *save = NULL;
	int nd = 0;
	for (char *t = strtok_r(dup, " \t\n", &save); t;
	     t = strtok_r(NULL, " \t\n", &save)) {
		if (nd == mesh.ndim) {
			nd++;
			break;
		}
		dt_str s = dt_str_intern(r->m, t);
		for (int k = 0; k < nd; k++)
			if (mesh.dims[k].id == s.id)
				error_at(r, line, "mesh '%s': dim name '%s' repeats",
					 name, t);
		mesh.dims[nd++] = s;
	}
	dt_free(dup);
	if (nd != mesh.ndim) {
		error_at(r, line,
			 "mesh '%s': shape has %d dims but dims names %s than %d",
			 name, mesh.ndim,
			 nd > mesh.ndim ? "more" : "fewer", mesh.ndim);
		return;
	}
	const char *devices = attr(el, "devices");
	if (devices) {
		if (!parse_int_list(r, devices, bad, sizeof(bad))) {
			error_at(r, line, "mesh '%s': device '%s' is not an integer",
				 name, bad);
			return;
		}
		if (r->scratch.len != (uint32_t)mesh.size) {
			error_at(r, line,
				 "mesh '%s': devices lists %u ranks, the shape has %lld",
				 name, r->scratch.len, (long long)mesh.size);
			return;
		}
		mesh.devices = dt_arena_alloc(&r->m->arena,
					      sizeof(int32_t) * (size_t)mesh.size);
		for (int64_t i = 0; i < mesh.size; i++) {
			int64_t v = r->scratch.data[i];
			if (v < 0 || v > INT32_MAX) {
				error_at(r, line, "mesh '%s': device %lld is not a rank",
					 name, (long long)v);
				return;
			}
			for (int64_t k = 0; k < i; k++)
				if (mesh.devices[k] == v) {
					error_at(r, line,
						 "mesh '%s': device %lld appears twice",
						 name, (long long)v);
					return;
				}
			mesh.devices[i] = (int32_t)v;
		}
	}
	dt_vec_push(&r->m->meshes, mesh);
}

static void read_group(struct reader *r, xmlNodePtr el)
{
	uint32_t line = node_line(r, el);
	const char *name = required(r, el, "name");
	const char *mesh_name = required(r, el, "mesh");
	const char *dims = required(r, el, "dims");
	if (!name || !mesh_name || !dims)
		return;
	struct dt_group g = {.name = dt_str_intern(r->m, name), .line = line};
	if (dt_module_find_group(r->m, g.name) >= 0) {
		error_at(r, line, "group '%s' is declared twice", name);
		return;
	}
	const char *generated = attr(el, "generated");
	if (generated && !parse_bool(generated, &g.generated)) {
		error_at(r, line, "group '%s': generated=\"%s\": expected true or false",
			 name, generated);
		return;
	}
	int mesh = dt_module_find_mesh(r->m, dt_str_intern(r->m, mesh_name));
	if (mesh < 0) {
		error_at(r, line, "group '%s' names mesh '%s', which is not declared",
			 name, mesh_name);
		return;
	}
	g.mesh = (uint16_t)mesh;
	const struct dt_mesh *me = &r->m->meshes.data[mesh];
	char *dup = dt_strdup(dims), *save = NULL;
	for (char *t = strtok_r(dup, " \t\n", &save); t;
	     t = strtok_r(NULL, " \t\n", &save)) {
		int d = dt_mesh_find_dim(me, t, &r->m->strings);
		if (d < 0) {
			error_at(r, line, "group '%s': mesh '%s' has no dim '%s'",
				 name, mesh_name, t);
			break;
		}
		bool repeat = false;
		for (int k = 0; k < g.ndims; k++)
			repeat |= g.dims[k] == d;
		if (repeat || g.ndims == me->ndim) {
			error_at(r, line, "group '%s': dim '%s' repeats", name, t);
			break;
		}
		g.dims[g.ndims++] = (uint8_t)d;
	}
	dt_free(dup);
	if (g.ndims == 0 && !r->failed)
		error_at(r, line, "group '%s' names no mesh dims", name);
	dt_vec_push(&r->m->groups, g);
}

static void node_begin(struct reader *r, xmlNodePtr el)
{
	struct pending_node *p = &r->node;
	uint32_t line = node_line(r, el);
	p->active = true;
	p->bad = false;
	p->args.len = p->kwargs.len = p->items.len = 0;
	p->tensors.len = p->metas.len = 0;
	p->has_sharding = false;
	p->list_arg = NULL;
	p->data.len = 0;
	dt_free(p->data_file);
	p->data_file = NULL;
	p->has_data = false;
	memset(&p->init, 0, sizeof(p->init));
	p->init.line = line;
	r->seen_node = true;
	const char *name = required(r, el, "name");
	const char *op = required(r, el, "op");
	p->init.name = dt_str_intern(r->m, name ? name : "");
	if (!name || !op)
		return;
	if (!*name)
		error_at(r, line, "a node name is empty");
	uint32_t other = dt_module_find_node(r->m, p->init.name);
	if (other)
		error_at(r, line, "node '%s' is defined twice (first at line %u)",
			 name, dt_node_get(r->m, other)->line);
	const char *target = attr(el, "target");
	if (strcmp(op, "placeholder") == 0) {
		p->init.kind = DT_NODE_PLACEHOLDER;
	} else if (strcmp(op, "output") == 0) {
		p->init.kind = DT_NODE_OUTPUT;
	} else if (strcmp(op, "get_attr") == 0) {
		p->init.kind = DT_NODE_CONSTANT;
		if (!target)
			error_at(r, line, "get_attr node '%s' needs a target "
				 "(the attribute it reads)", name);
	} else if (strcmp(op, "call_function") == 0) {
		p->init.kind = DT_NODE_CALL;
		if (!target) {
			error_at(r, line, "call_function node '%s' needs a target",
				 name);
			return;
		}
		if (dt_op_lookup(target) == DT_OP_UNKNOWN &&
		    !r->opt->allow_unknown_targets)
			error_at(r, line,
				 "node '%s': unknown target '%s' (not in dtopt's op table; "
				 "only dump and diff load such graphs)",
				 name, target);
	} else {
		error_at(r, line,
			 "node '%s': op '%s' is not supported (expected placeholder, "
			 "get_attr, call_function or output)",
			 name, op);
	}
	if (p->init.kind != DT_NODE_CALL && target && strcmp(target, name) != 0)
		p->init.target = dt_str_intern(r->m, target);
	else if (target && (p->init.kind == DT_NODE_CALL ||
			    p->init.kind == DT_NODE_CONSTANT))
		p->init.target = dt_str_intern(r->m, target);
}

static void read_tensor(struct reader *r, xmlNodePtr el)
{
	uint32_t line = node_line(r, el);
	const char *node = dt_str_get(r->m, r->node.init.name);
	const char *dtype = required(r, el, "dtype");
	const char *shape = required(r, el, "shape");
	if (!dtype || !shape)
		return;
	struct dt_tensor t = {0};
	enum dt_dtype dt;
	if (!dt_dtype_parse(dtype, strlen(dtype), &dt)) {
		error_at(r, line, "node '%s': unknown dtype '%s'", node, dtype);
		return;
	}
	t.dtype = (uint8_t)dt;
	char bad[64];
	if (!parse_int_list(r, shape, bad, sizeof(bad))) {
		error_at(r, line, "node '%s': shape token '%s' is not an integer",
			 node, bad);
		return;
	}
	uint32_t rank = r->scratch.len;
	if (rank > DT_MAX_RANK) {
		error_at(r, line, "node '%s': rank %u exceeds dtopt's limit of %d",
			 node, rank, DT_MAX_RANK);
		return;
	}
	int64_t sizes[DT_MAX_RANK], strides[DT_MAX_RANK];
	for (uint32_t i = 0; i < rank; i++) {
		sizes[i] = r->scratch.data[i];
		if (sizes[i] < 0) {
			error_at(r, line, "node '%s': negative size %lld in shape",
				 node, (long long)sizes[i]);
			return;
		}
	}
	if (!sizes_in_bounds(sizes, rank)) {
		error_at(r, line, "node '%s': shape '%s' has more than 2^60 elements",
			 node, shape);
		return;
	}
	const char *stride = attr(el, "stride");
	if (stride) {
		if (!parse_int_list(r, stride, bad, sizeof(bad))) {
			error_at(r, line,
				 "node '%s': stride token '%s' is not an integer",
				 node, bad);
			return;
		}
		if (r->scratch.len != rank) {
			error_at(r, line,
				 "node '%s': shape has %u dims but stride has %u",
				 node, rank, r->scratch.len);
			return;
		}
		for (uint32_t i = 0; i < rank; i++) {
			strides[i] = r->scratch.data[i];
			if (strides[i] < 0) {
				error_at(r, line, "node '%s': negative stride %lld",
					 node, (long long)strides[i]);
				return;
			}
		}
	} else {
		dt_contiguous_strides(sizes, (int)rank, strides);
	}
	const char *offset = attr(el, "offset");
	if (offset && (!parse_int(offset, &t.offset) || t.offset < 0)) {
		error_at(r, line, "node '%s': offset '%s' is not a non-negative integer",
			 node, offset);
		return;
	}
	if (!layout_in_bounds(sizes, strides, rank, t.offset)) {
		error_at(r, line,
			 "node '%s': strides and offset reach past 2^60 elements of storage",
			 node);
		return;
	}
	t.shape = dt_ints_intern(r->m, sizes, rank);
	t.stride = dt_ints_intern(r->m, strides, rank);
	dt_vec_push(&r->node.tensors, t);
}

static void read_sharding(struct reader *r, xmlNodePtr el)
{
	uint32_t line = node_line(r, el);
	struct pending_node *p = &r->node;
	const char *node = dt_str_get(r->m, p->init.name);
	if (p->has_sharding) {
		error_at(r, line, "node '%s' has more than one <sharding>", node);
		return;
	}
	const char *mesh_name = required(r, el, "mesh");
	const char *placements = required(r, el, "placements");
	if (!mesh_name || !placements)
		return;
	int mesh = dt_module_find_mesh(r->m, dt_str_intern(r->m, mesh_name));
	node = dt_str_get(r->m, p->init.name); /* interning moves the bytes */
	if (mesh < 0) {
		error_at(r, line, "node '%s': sharding names mesh '%s', which is not declared",
			 node, mesh_name);
		return;
	}
	struct dt_sharding s = {.mesh = (uint16_t)mesh};
	char err[256];
	if (!dt_placements_parse(&s.placements, placements, attr(el, "order"),
				 &r->m->meshes.data[mesh], &r->m->strings, err,
				 sizeof(err))) {
		error_at(r, line, "node '%s': %s", node, err);
		return;
	}
	const char *gs = attr(el, "global-shape");
	if (gs) {
		char bad[64];
		if (!parse_int_list(r, gs, bad, sizeof(bad))) {
			error_at(r, line,
				 "node '%s': global-shape token '%s' is not an integer",
				 node, bad);
			return;
		}
		for (uint32_t i = 0; i < r->scratch.len; i++)
			if (r->scratch.data[i] < 0) {
				error_at(r, line, "node '%s': negative global-shape size",
					 node);
				return;
			}
		if (!sizes_in_bounds(r->scratch.data, r->scratch.len)) {
			error_at(r, line,
				 "node '%s': global-shape '%s' has more than 2^60 elements",
				 node, gs);
			return;
		}
		s.global_shape = dt_ints_intern(r->m, r->scratch.data,
						r->scratch.len);
		s.has_global_shape = true;
	}
	p->sharding = s;
	p->has_sharding = true;
	p->sharding_line = line;
}

static void read_meta(struct reader *r, xmlNodePtr el)
{
	const char *key = required(r, el, "key");
	const char *value = required(r, el, "value");
	if (!key || !value)
		return;
	struct dt_meta meta = {dt_str_intern(r->m, key),
			       dt_str_intern(r->m, value)};
	dt_vec_push(&r->node.metas, meta);
}

static void read_arg(struct reader *r, xmlNodePtr el, bool kw, bool empty)
{
	struct pending_node *p = &r->node;
	struct dt_arg a = {0};
	if (kw) {
		const char *name = required(r, el, "name");
		a.name = dt_str_intern(r->m, name && *name ? name : "?");
	}
	bool has_value = parse_value(r, el, &a, false);
	if (!has_value && empty) {
		error_at(r, node_line(r, el), "<%s> of node '%s' has no value",
			 (const char *)el->name, dt_str_get(r->m, p->init.name));
		a.kind = DT_ARG_NONE;
	}
	uint32_t i = kw ? dt_vec_push(&p->kwargs, a) : dt_vec_push(&p->args, a);
	if (!has_value && !empty) {
		p->list_arg = kw ? &p->kwargs.data[i] : &p->args.data[i];
		p->list_arg->kind = DT_ARG_ITEMS;
		p->items.len = 0;
	}
}

static void read_item(struct reader *r, xmlNodePtr el)
{
	struct dt_arg a = {0};
	if (!parse_value(r, el, &a, true)) {
		error_at(r, node_line(r, el), "<item> has no value");
		a.kind = DT_ARG_NONE;
	}
	dt_vec_push(&r->node.items, a);
}

static void list_end(struct reader *r)
{
	struct pending_node *p = &r->node;
	p->list_arg->len = p->items.len;
	p->list_arg->v.first =
		dt_module_add_args(r->m, p->items.data, p->items.len);
	p->list_arg = NULL;
}

/* <data base64="..."/> or <data file="NAME.bin" bytes="N" crc32="HEX"/>
 * of a get_attr node; checked against its tensor at </node>. */
static void read_data(struct reader *r, xmlNodePtr el)
{
	struct pending_node *p = &r->node;
	uint32_t line = node_line(r, el);
	const char *node = dt_str_get(r->m, p->init.name);
	if (p->init.kind != DT_NODE_CONSTANT) {
		error_at(r, line, "node '%s': only get_attr nodes have <data>", node);
		return;
	}
	if (p->has_data) {
		error_at(r, line, "node '%s' has <data> twice (first at line %u)",
			 node, p->data_line);
		return;
	}
	p->has_data = true;
	p->data_line = line;
	const char *b64 = attr(el, "base64"), *file = attr(el, "file");
	const char *bytes = attr(el, "bytes"), *crc = attr(el, "crc32");
	if (!b64 == !file || (b64 && (bytes || crc))) {
		error_at(r, line, "node '%s': <data> has either base64=\"...\" "
			 "or file=\"NAME\" bytes=\"N\" crc32=\"HEX\"", node);
		return;
	}
	char err[512];
	if (b64) {
		size_t len = strlen(b64), bad = 0;
		int64_t n = dt_base64_size(b64, len, &bad);
		if (n < 0) {
			error_at(r, line, "node '%s': <data base64=...> is not "
				 "canonical base64 (RFC 4648 alphabet, '=' "
				 "padding, zero pad bits): %s %zu", node,
				 bad == len ? "its length is not a multiple of 4:"
					    : "wrong at offset", bad);
			return;
		}
		dt_vec_grow(&p->data, (uint32_t)n);
		dt_base64_decode(b64, len, p->data.data);
		return;
	}
	int64_t size = 0;
	uint32_t sum = 0;
	bool hex = crc && strlen(crc) == 8;
	for (int i = 0; hex && i < 8; i++) {
		char c = crc[i];
		int v = c >= '0' && c <= '9' ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		hex = v >= 0;
		sum = sum << 4 | (uint32_t)(v & 15);
	}
	if (!bytes || !parse_int(bytes, &size) || size < 0 || !hex) {
		error_at(r, line, "node '%s': <data file=...> needs bytes=\"N\" "
			 "(a byte count) and crc32=\"HEX\" (8 hex digits)", node);
		return;
	}
	if (!dt_side_path_ok(file, err, sizeof err)) {
		error_at(r, line, "node '%s': %s", node, err);
		return;
	}
	p->data_file = dt_strdup(file);
	p->data_bytes = (uint64_t)size;
	p->data_crc = sum;
}

/* The constant's data into the module, once its tensor is known; false
 * after reporting an error. */
static bool finish_constant(struct reader *r)
{
	struct pending_node *p = &r->node;
	const char *node = dt_str_get(r->m, p->init.name);
	if (!p->has_data || p->tensors.len != 1 || p->args.len || p->kwargs.len) {
		error_at(r, p->init.line, "get_attr node '%s' needs one <tensor> "
			 "and one <data>, and takes no <arg>", node);
		return false;
	}
	uint64_t want = dt_tensor_nbytes(r->m, &p->tensors.data[0]);
	uint64_t have = p->data_file ? p->data_bytes : p->data.len;
	if (have != want) {
		char type[128];
		dt_tensor_print(r->m, &p->tensors.data[0], type, sizeof type);
		error_at(r, p->data_line, "node '%s': <data> holds %llu bytes "
			 "but its tensor %s needs %llu", node,
			 (unsigned long long)have, type,
			 (unsigned long long)want);
		return false;
	}
	char dir[4096], err[4400];
	dt_path_dir(r->m->file, dir, sizeof dir);
	int fd = p->data_file ? dt_side_file_open(dir, p->data_file, want, err,
						  sizeof err)
			      : 0;
	if (fd < 0) {
		error_at(r, p->data_line, "node '%s': %s", node, err);
		return false;
	}
	unsigned char *bytes;
	p->init.constant = dt_module_new_constant(r->m, want, &bytes);
	if (!p->data_file) {
		if (want)
			memcpy(bytes, p->data.data, want);
	} else if (dt_side_file_load(fd, p->data_file, bytes, want, p->data_crc,
				     err, sizeof err) != 0) {
		error_at(r, p->data_line, "node '%s': %s", node, err);
		return false;
	}
	for (uint64_t i = 0; p->tensors.data[0].dtype == DT_BOOL && i < want; i++)
		if (bytes[i] > 1) {
			error_at(r, p->data_line, "node '%s': bool element %llu "
				 "is the byte %u (bool data is 0 or 1)", node,
				 (unsigned long long)i, bytes[i]);
			return false;
		}
	return true;
}

static void node_end(struct reader *r)
{
	struct pending_node *p = &r->node;
	p->active = false;
	if (p->bad)
		return;
	/* Positional args first, then keyword args: one contiguous slice. */
	uint32_t nargs = p->args.len;
	dt_vec_grow(&p->args, p->kwargs.len);
	if (p->kwargs.len)
		memcpy(p->args.data + nargs, p->kwargs.data,
		       p->kwargs.len * sizeof(struct dt_arg));
	p->init.args = p->args.data;
	p->init.nargs = p->args.len;
	if (p->init.nargs > UINT16_MAX || p->tensors.len > UINT16_MAX) {
		error_at(r, p->init.line, "node '%s' has too many arguments or results",
			 dt_str_get(r->m, p->init.name));
		return;
	}
	p->init.tensors = p->tensors.data;
	p->init.ntensors = p->tensors.len;
	p->init.metas = p->metas.data;
	p->init.nmetas = p->metas.len;
	p->init.sharding = p->has_sharding ? &p->sharding : NULL;
	if (p->init.kind == DT_NODE_CONSTANT && !finish_constant(r))
		return;
	uint32_t id = dt_module_add_node(r->m, &p->init);
	char what[200];
	/* a file of the newest minor version may use every feature */
	int minor = r->minor < DT_FORMAT_MINOR
			    ? dt_format_node_minor(r->m, dt_node_get(r->m, id),
						   what, sizeof what)
			    : 0;
	if (minor > r->minor) {
		char have[16] = "1";
		if (r->minor)
			snprintf(have, sizeof have, "1.%d", r->minor);
		error_at(r, p->init.line,
			 "node '%s' uses %s, a format 1.%d feature, but the "
			 "file says version=\"%s\" (write version=\"1.%d\")",
			 dt_str_get(r->m, p->init.name), what, minor, have,
			 minor);
	}
	for (uint32_t i = 0; i < p->metas.len; i++)
		if (strcmp(dt_str_get(r->m, p->metas.data[i].key),
			   DT_META_FUSED_FROM) == 0)
			dt_node_get(r->m, id)->flags |= DT_NODE_FUSED;
	dt_graph_append(r->m, id);
}

/* Handle one element start. `depth` is 0 for the root. */
static void element_start(struct reader *r, xmlNodePtr el, int depth,
			  bool empty)
{
	const char *n = (const char *)el->name;
	uint32_t line = node_line(r, el);
	if (depth == 0) {
		read_root(r, el);
	} else if (depth == 1 && strcmp(n, "topology") == 0) {
		read_topology(r, el);
	} else if (depth == 1 && strcmp(n, "mesh") == 0) {
		if (r->seen_node)
			error_at(r, line, "<mesh> must come before the nodes");
		read_mesh(r, el);
	} else if (depth == 1 && strcmp(n, "group") == 0) {
		if (r->seen_node)
			error_at(r, line, "<group> must come before the nodes");
		read_group(r, el);
	} else if (depth == 1 && strcmp(n, "node") == 0) {
		node_begin(r, el);
		if (empty)
			node_end(r);
	} else if (depth == 2 && r->node.active && strcmp(n, "arg") == 0) {
		read_arg(r, el, false, empty);
	} else if (depth == 2 && r->node.active && strcmp(n, "kwarg") == 0) {
		read_arg(r, el, true, empty);
	} else if (depth == 2 && r->node.active && strcmp(n, "tensor") == 0) {
		read_tensor(r, el);
	} else if (depth == 2 && r->node.active && strcmp(n, "sharding") == 0) {
		read_sharding(r, el);
	} else if (depth == 2 && r->node.active && strcmp(n, "meta") == 0) {
		read_meta(r, el);
	} else if (depth == 2 && r->node.active && strcmp(n, "data") == 0) {
		read_data(r, el);
	} else if (depth == 3 && r->node.list_arg && strcmp(n, "item") == 0) {
		read_item(r, el);
	} else {
		error_at(r, line, "unexpected element <%s>", n);
	}
}

static void element_end(struct reader *r, const char *n, int depth)
{
	if (depth == 1 && strcmp(n, "node") == 0 && r->node.active)
		node_end(r);
	else if (depth == 2 && r->node.list_arg &&
		 (strcmp(n, "arg") == 0 || strcmp(n, "kwarg") == 0))
		list_end(r);
}

/* The line of the last non-blank character of text node `n` (libxml2
 * numbers a text node by the line where it ends, blanks included); *text
 * is advanced past leading blanks. 0 when unknown. */
static uint32_t text_line(struct reader *r, xmlNodePtr n, const char **text)
{
	uint32_t line = n ? node_line(r, n) : 0;
	const char *s = *text;
	size_t len = strlen(s);
	for (; len && strchr(" \t\r\n", s[len - 1]); len--)
		if (s[len - 1] == '\n' && line > 1)
			line--;
	while (*s && strchr(" \t\r\n", *s))
		s++;
	*text = s;
	return line;
}

static const char doctype_refused[] =
	"DOCTYPE declarations are not allowed (format v1 has no DTD; entities "
	"are never loaded)";

/* Where the prolog scan got to: a DOCTYPE (and its line), the start of
 * the document element (or junk, which libxml2 reports), or the end of the
 * bytes seen so far. */
enum prolog { PROLOG_DOCTYPE, PROLOG_CLEAN, PROLOG_MORE };

/* Reject a DOCTYPE (and so every entity declaration) before parsing: format
 * v1 has none, and refusing it up front makes entity attacks impossible.
 * `eof` tells whether `buf` holds the whole input. */
static enum prolog scan_prolog(const char *buf, size_t len, bool eof,
			       uint32_t *line_out)
{
	uint32_t line = 1;
	size_t i = 0;
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
		i = 3;
	while (i < len) {
		char c = buf[i];
		const char *close = NULL;
		size_t skip = 0;
		if (c == '\n' || c == ' ' || c == '\t' || c == '\r') {
			line += c == '\n';
			i++;
			continue;
		}
		if (c != '<' || i + 1 >= len)
			return eof || c != '<' ? PROLOG_CLEAN : PROLOG_MORE;
		if (buf[i + 1] == '?') {
			close = "?>";
			skip = 2;
		} else if (len - i >= 4 && memcmp(buf + i, "<!--", 4) == 0) {
			close = "-->";
			skip = 3;
		} else if (len - i >= 9 && memcmp(buf + i, "<!DOCTYPE", 9) == 0) {
			*line_out = line;
			return PROLOG_DOCTYPE;
		} else if (buf[i + 1] == '!' && len - i < 9 && !eof) {
			return PROLOG_MORE;
		} else {
			return PROLOG_CLEAN; /* the root element, or junk */
		}
		const char *e = memmem(buf + i, len - i, close, skip);
		if (!e)
			return eof ? PROLOG_CLEAN : PROLOG_MORE;
		for (size_t stop = (size_t)(e - buf) + skip; i < stop; i++)
			line += buf[i] == '\n';
	}
	return eof ? PROLOG_CLEAN : PROLOG_MORE;
}

static xmlRelaxNGPtr load_schema(void)
{
	xmlRelaxNGParserCtxtPtr pc = xmlRelaxNGNewMemParserCtxt(
		(const char *)dt_schema_rng, (int)dt_schema_rng_len);
	DT_REQUIRE(pc);
	xmlRelaxNGPtr schema = xmlRelaxNGParse(pc);
	xmlRelaxNGFreeParserCtxt(pc);
	DT_REQUIRE(schema); /* the bundled schema is valid */
	return schema;
}

/* Parse the document behind r->xr (which this frees) into r->m. */
static int parse(struct reader *r)
{
	xmlTextReaderSetStructuredErrorHandler(r->xr, libxml_error, r);
	xmlRelaxNGPtr schema = NULL;
	if (!r->opt->skip_schema) {
		schema = load_schema();
		if (xmlTextReaderRelaxNGSetSchema(r->xr, schema) != 0)
			error_at(r, 0, "cannot attach the format v1 schema");
	}
	bool saw_root = false;
	int ret = 0;
	while (!r->failed && (ret = xmlTextReaderRead(r->xr)) == 1) {
		int type = xmlTextReaderNodeType(r->xr);
		int depth = xmlTextReaderDepth(r->xr);
		if (type == XML_READER_TYPE_ELEMENT) {
			xmlNodePtr el = xmlTextReaderCurrentNode(r->xr);
			if (depth > DT_READ_MAX_DEPTH) {
				error_at(r, node_line(r, el),
					 "elements nest deeper than %d levels",
					 DT_READ_MAX_DEPTH);
				break;
			}
			saw_root = true;
			element_start(r, el, depth,
				      xmlTextReaderIsEmptyElement(r->xr) == 1);
			flush_schema_error(r);
		} else if (type == XML_READER_TYPE_END_ELEMENT) {
			element_end(r, (const char *)xmlTextReaderConstLocalName(r->xr),
				    depth);
			flush_schema_error(r);
		} else if (type == XML_READER_TYPE_DOCUMENT_TYPE) {
			/* The prolog scan refuses these; never let one by. */
			error_at(r, (uint32_t)xmlTextReaderGetParserLineNumber(r->xr),
				 "%s", doctype_refused);
		} else if (type == XML_READER_TYPE_TEXT ||
			   type == XML_READER_TYPE_CDATA) {
			xmlNodePtr el = xmlTextReaderCurrentNode(r->xr);
			const char *text = el && el->content
						   ? (const char *)el->content
						   : "";
			uint32_t line = text_line(r, el, &text);
			int shown = (int)strcspn(text, "\r\n");
			while (shown && (text[shown - 1] == ' ' ||
					 text[shown - 1] == '\t'))
				shown--;
			error_at(r, line, "unexpected text content '%.*s'",
				 shown < 40 ? shown : 40, text);
		}
	}
	flush_schema_error(r);
	if (!r->failed && ret != 0)
		error_at(r, (uint32_t)xmlTextReaderGetParserLineNumber(r->xr),
			 "malformed XML");
	if (!r->failed && !saw_root)
		error_at(r, 0, "no <dtopt-graph> element");
	if (!r->failed && schema && xmlTextReaderIsValid(r->xr) != 1)
		error_at(r, 0, "does not match the format v1 schema");
	xmlFreeTextReader(r->xr);
	r->xr = NULL;
	if (schema)
		xmlRelaxNGFree(schema);
	return r->failed ? DT_EINPUT : DT_OK;
}

/* The input is read as UTF-8 whatever its first bytes or its declaration
 * say: in UTF-16 or a declared encoding="UTF-7" a DOCTYPE would escape the
 * byte-level prolog scan. */
static const char parse_encoding[] = "UTF-8";
static const int parse_options = XML_PARSE_NONET | XML_PARSE_BIG_LINES |
				 XML_PARSE_COMPACT | XML_PARSE_NOCDATA |
				 XML_PARSE_IGNORE_ENC;

/* Finish a read: free the reader's buffers; hand the module over or
 * destroy it. */
static int finish(struct reader *r, int rc, struct dt_module **out)
{
	struct pending_node *p = &r->node;
	dt_vec_free(&p->args);
	dt_vec_free(&p->kwargs);
	dt_vec_free(&p->items);
	dt_vec_free(&p->tensors);
	dt_vec_free(&p->metas);
	dt_vec_free(&p->data);
	dt_free(p->data_file);
	dt_vec_free(&r->scratch);
	if (rc != DT_OK || r->failed) {
		dt_module_destroy(r->m);
		return rc != DT_OK ? rc : DT_EINPUT;
	}
	*out = r->m;
	return DT_OK;
}

/* Checks shared by both entry points before libxml2 sees any byte. */
static int check_prefix(struct reader *r, const char *buf, size_t len,
			bool eof)
{
	if (len == 0 && eof) {
		error_at(r, 0, "the file is empty (expected a <dtopt-graph> document)");
		return DT_EINPUT;
	}
	/* UTF-16 and UTF-32, with or without a byte order mark. */
	const unsigned char *u = (const unsigned char *)buf;
	if ((len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) ||
			  (u[0] == 0xFF && u[1] == 0xFE))) ||
	    memchr(buf, 0, len < 4 ? len : 4)) {
		error_at(r, 1, "the file is not UTF-8 text (format v1 files are UTF-8)");
		return DT_EINPUT;
	}
	uint32_t line = 0;
	if (scan_prolog(buf, len, eof, &line) == PROLOG_DOCTYPE) {
		error_at(r, line, "%s", doctype_refused);
		return DT_EINPUT;
	}
	xmlSetExternalEntityLoader(refuse_external_entity);
	return DT_OK;
}

int dt_read_memory(const char *buf, size_t len, const char *name,
		   const struct dt_read_options *opt, struct dt_diag *d,
		   struct dt_module **out)
{
	static const struct dt_read_options defaults;
	*out = NULL;
	struct reader r = {.diag = d, .opt = opt ? opt : &defaults};
	r.m = dt_module_create(name);
	uint64_t max = r.opt->max_bytes ? r.opt->max_bytes : DT_READ_MAX_BYTES;
	if (len > max || len > INT32_MAX) {
		error_at(&r, 0, "the input is larger than the limit of %llu bytes",
			 (unsigned long long)(max < INT32_MAX ? max : INT32_MAX));
		return finish(&r, DT_EINPUT, out);
	}
	int rc = check_prefix(&r, buf, len, true);
	if (rc != DT_OK)
		return finish(&r, rc, out);
	r.xr = xmlReaderForMemory(buf, (int)len, name, parse_encoding,
				  parse_options);
	if (!r.xr) {
		error_at(&r, 0, "cannot create the XML reader");
		return finish(&r, DT_EIO, out);
	}
	return finish(&r, parse(&r), out);
}

/* Streaming input: first the bytes read for the prolog check, then the
 * rest of the file, counting against the size limit. */
struct stream {
	FILE *f;
	const char *prefix;
	size_t prefix_len, prefix_pos;
	uint64_t total, max;
	bool too_big, io_error;
};

static int stream_read(void *ctx, char *buf, int len)
{
	struct stream *s = ctx;
	size_t n;
	if (s->prefix_pos < s->prefix_len) {
		n = s->prefix_len - s->prefix_pos;
		if (n > (size_t)len)
			n = (size_t)len;
		memcpy(buf, s->prefix + s->prefix_pos, n);
		s->prefix_pos += n;
	} else {
		n = fread(buf, 1, (size_t)len, s->f);
		if (n == 0 && ferror(s->f)) {
			s->io_error = true;
			return -1;
		}
	}
	s->total += n;
	if (s->total > s->max) {
		s->too_big = true;
		return -1;
	}
	return (int)n;
}

static int stream_close(void *ctx)
{
	(void)ctx;
	return 0;
}

int dt_read_file(const char *path, const struct dt_read_options *opt,
		 struct dt_diag *d, struct dt_module **out)
{
	static const struct dt_read_options defaults;
	*out = NULL;
	bool is_stdin = strcmp(path, "-") == 0;
	const char *name = is_stdin ? "<stdin>" : path;
	FILE *f = is_stdin ? stdin : fopen(path, "rb");
	if (!f) {
		dt_diag_report(d, DT_ERROR, name, 0, NULL, "cannot open: %s",
			       strerror(errno));
		return DT_EIO;
	}
	struct reader r = {.diag = d, .opt = opt ? opt : &defaults};
	r.m = dt_module_create(name);
	struct stream s = {.f = f};
	s.max = r.opt->max_bytes ? r.opt->max_bytes : DT_READ_MAX_BYTES;
	/* Read until the prolog check can decide (usually the first block). */
	DT_VEC(char) prefix = {0};
	enum prolog state = PROLOG_MORE;
	bool eof = false;
	uint32_t ignored;
	while (state == PROLOG_MORE && !eof && prefix.len < (64u << 20)) {
		uint32_t at = dt_vec_grow(&prefix, 1 << 16);
		size_t got = fread(prefix.data + at, 1, 1 << 16, f);
		prefix.len = at + (uint32_t)got;
		eof = got == 0;
		state = scan_prolog(prefix.data, prefix.len, eof, &ignored);
	}
	int rc = DT_OK;
	if (ferror(f)) {
		error_at(&r, 0, "cannot read: %s", strerror(errno));
		rc = DT_EIO;
	} else {
		rc = check_prefix(&r, prefix.data ? prefix.data : "", prefix.len,
				  eof);
	}
	if (rc == DT_OK) {
		s.prefix = prefix.data;
		s.prefix_len = prefix.len;
		r.xr = xmlReaderForIO(stream_read, stream_close, &s, name,
				      parse_encoding, parse_options);
		if (!r.xr) {
			error_at(&r, 0, "cannot create the XML reader");
			rc = DT_EIO;
		} else {
			rc = parse(&r);
		}
		if (s.too_big) {
			error_at(&r, 0, "the file is larger than the limit of %llu bytes",
				 (unsigned long long)s.max);
			rc = DT_EINPUT;
		} else if (s.io_error) {
			error_at(&r, 0, "cannot read: %s", strerror(errno));
			rc = DT_EIO;
		}
	}
	dt_vec_free(&prefix);
	if (!is_stdin)
		fclose(f);
	return finish(&r, rc, out);
}
