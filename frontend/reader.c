// SPDX-License-Identifier: MIT
/* reader.c: streaming reader of graph XML format v1: libxml2's SAX2
 * parser feeds the element handlers of read_graph.c and read_node.c,
 * which build a dt_module. Elements and attributes are recognised by the
 * parser's dictionary pointers (one pointer compare each); the reader
 * itself checks everything format v1's RelaxNG schema does (element
 * nesting and order, allowed and required attributes, no namespaces, no
 * text), so the schema is off the load path: opt.schema runs it as a
 * second pass (dtopt verify --schema, the tests).
 *
 * Security: the input is read with a size bound; a DOCTYPE is rejected
 * before libxml2 sees the document, so no DTD, internal or external entity
 * is ever processed; the external entity loader refuses everything;
 * XML_PARSE_NONET forbids network access; element depth is bounded. */
#define _GNU_SOURCE /* memmem */
#include "internal.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/relaxng.h>
#include <libxml/xmlreader.h>
#include <stdlib.h>
#include <string.h>

const char *const dt_rd_element_names[DT_RD_NELEMENTS] = {
    [DT_RD_ROOT] = "dtopt-graph", [DT_RD_TOPOLOGY] = "topology",
    [DT_RD_MESH] = "mesh",	  [DT_RD_GROUP] = "group",
    [DT_RD_NODE] = "node",	  [DT_RD_ARG] = "arg",
    [DT_RD_KWARG] = "kwarg",	  [DT_RD_ITEM] = "item",
    [DT_RD_TENSOR] = "tensor",	  [DT_RD_SHARDING] = "sharding",
    [DT_RD_META] = "meta",	  [DT_RD_DATA] = "data",
};

const char *const dt_rd_attr_names[DT_RD_NATTRS] = {
#define X(e, s) [DT_RD_A_##e] = s,
    DT_RD_ATTRS(X)
#undef X
};

#define BIT(a) ((uint64_t)1 << DT_RD_A_##a)
#define VALUES                                                                 \
	(BIT(NODE) | BIT(NODES) | BIT(INT) | BIT(INTS) | BIT(FLOAT) |          \
	 BIT(FLOATS) | BIT(BOOL) | BIT(STR) | BIT(DTYPE) | BIT(NONE))
/* Where each element may stand (its depth, and its parent below the root)
 * and the attributes it may carry (dtopt-graph.rng). */
static const struct {
	int depth;
	enum dt_rd_element parent;
	uint64_t attrs;
} element_rules[DT_RD_NELEMENTS] = {
    [DT_RD_ROOT] = {0, DT_RD_ROOT,
		    BIT(VERSION) | BIT(NAME) | BIT(VIEW) | BIT(RANK)},
    [DT_RD_TOPOLOGY] = {1, DT_RD_ROOT,
			BIT(DEVICES_PER_HOST) | BIT(BANDWIDTH) | BIT(LATENCY) |
			    BIT(INTER_HOST_BANDWIDTH_FACTOR) |
			    BIT(INTER_HOST_LATENCY) | BIT(BASE_LATENCY) |
			    BIT(ALL_TO_ALL_PENALTY) | BIT(DEVICE_TFLOPS) |
			    BIT(DEVICE_BANDWIDTH)},
    [DT_RD_MESH] = {1, DT_RD_ROOT,
		    BIT(NAME) | BIT(SHAPE) | BIT(DIMS) | BIT(DEVICES)},
    [DT_RD_GROUP] = {1, DT_RD_ROOT,
		     BIT(NAME) | BIT(MESH) | BIT(DIMS) | BIT(GENERATED)},
    [DT_RD_NODE] = {1, DT_RD_ROOT, BIT(NAME) | BIT(OP) | BIT(TARGET)},
    [DT_RD_ARG] = {2, DT_RD_NODE, VALUES},
    [DT_RD_KWARG] = {2, DT_RD_NODE, BIT(NAME) | VALUES},
    [DT_RD_ITEM] = {3, DT_RD_ARG,
		    VALUES & ~(BIT(NODES) | BIT(INTS) | BIT(FLOATS))},
    [DT_RD_TENSOR] = {2, DT_RD_NODE,
		      BIT(DTYPE) | BIT(SHAPE) | BIT(STRIDE) | BIT(OFFSET)},
    [DT_RD_SHARDING] = {2, DT_RD_NODE,
			BIT(MESH) | BIT(PLACEMENTS) | BIT(ORDER) |
			    BIT(GLOBAL_SHAPE)},
    [DT_RD_META] = {2, DT_RD_NODE, BIT(KEY) | BIT(VALUE)},
    [DT_RD_DATA] = {2, DT_RD_NODE,
		    BIT(BASE64) | BIT(FILE) | BIT(BYTES) | BIT(CRC32)},
};
#undef BIT
#undef VALUES

/* The parse of one document. */
struct sax {
	struct dt_rd *r;
	xmlParserCtxtPtr ctxt;
	/* The dictionary's pointers for the names of format v1. */
	const xmlChar *element_key[DT_RD_NELEMENTS];
	const xmlChar *attr_key[DT_RD_NATTRS];
	uint32_t at_depth[4]; /* the elements at each depth, a bit each */
	int depth;	      /* of the next element (0 = root) */
	enum dt_rd_element open[DT_READ_MAX_DEPTH + 1]; /* by depth */
	bool saw_root;
	/* Character data since the last markup that is not blank (an error
	 * reported at the next markup): its first bytes and the line of its
	 * first non-blank character, where the quoted bytes start. */
	bool text;
	char preview[64];
	size_t preview_len;
	uint32_t text_line;
};

/* ---- diagnostics ---- */

void dt_rd_error(struct dt_rd *r, uint32_t line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	dt_diag_vreport(r->diag, DT_ERROR, r->m->file, line, NULL, fmt, ap);
	va_end(ap);
	r->failed = true;
	r->node.bad = true;
	if (r->ctxt)
		xmlStopParser(r->ctxt);
}

const char *dt_rd_required(struct dt_rd *r, enum dt_rd_attr a)
{
	const char *v = dt_rd_attr(r, a);
	if (!v)
		dt_rd_error(r, r->line, "<%s> needs a '%s' attribute",
			    dt_rd_element_names[r->el], dt_rd_attr_names[a]);
	return v;
}

/* Report libxml2's error `e`: a schema violation, or malformed XML. */
static void libxml_error(void *ud, xmlErrorPtr e)
{
	struct dt_rd *r = ud;
	/* libxml2 follows its first error with consequences of it. */
	if (!e || e->level == XML_ERR_WARNING || r->failed)
		return;
	char msg[1024];
	/* libxml2 says "Document is empty" of any input without a start tag. */
	snprintf(msg, sizeof(msg), "%s",
		 e->code == XML_ERR_DOCUMENT_EMPTY
		     ? "no start tag of an element found"
		 : e->message ? e->message
			      : "XML error");
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = 0;
	uint32_t line = e->line > 0 ? (uint32_t)e->line : 0;
	if (e->domain == XML_FROM_RELAXNGV) {
		dt_rd_error(r, line,
			    "does not match the format v1 schema: %.400s", msg);
		return;
	}
	/* libxml2's words for an attribute value over its 10 MB limit. */
	bool huge = strstr(msg, "Huge input lookup") ||
		    strstr(msg, "AttValue length too long");
	dt_rd_error(r, line, "malformed XML: %s%s", msg,
		    huge ? " (a value over 10 MB: constant data this large "
			   "belongs in a side file, <data file=...>)"
			 : "");
}

static xmlParserInputPtr refuse_external_entity(const char *url, const char *id,
						xmlParserCtxtPtr ctxt)
{
	(void)url;
	(void)id;
	(void)ctxt;
	return NULL;
}

static const char doctype_refused[] =
    "DOCTYPE declarations are not allowed (format v1 has no DTD; entities "
    "are never loaded)";

/* ---- SAX events ---- */

static uint32_t parser_line(const struct sax *s)
{
	int line = s->ctxt->input ? s->ctxt->input->line : 0;
	return line > 0 ? (uint32_t)line : 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void on_error(void *ud, xmlErrorPtr e)
{
	struct sax *s = ud;
	libxml_error(s->r, e);
}

static void on_characters(void *ud, const xmlChar *ch, int len)
{
	struct sax *s = ud;
	const char *t = (const char *)ch;
	size_t n = (size_t)len, last = n;
	while (last && is_blank(t[last - 1]))
		last--;
	if (!last)
		return; /* blanks (between elements, or after text) */
	if (!s->text) {
		s->text = true;
		s->preview_len = 0;
		while (is_blank(*t))
			t++, n--;
		/* the parser is at the end of the chunk (a CDATA section's
		 * too): back up over the newlines after the first non-blank
		 * character */
		uint32_t line = parser_line(s);
		for (size_t i = 0; i < n; i++)
			line -= t[i] == '\n' && line > 1;
		s->text_line = line;
	}
	size_t room = sizeof s->preview - s->preview_len;
	memcpy(s->preview + s->preview_len, t, n < room ? n : room);
	s->preview_len += n < room ? n : room;
}

/* Report the character data since the last markup unless it is blank:
 * format v1 has no text content. */
static void flush_text(struct sax *s)
{
	if (!s->text)
		return;
	s->text = false;
	const char *t = s->preview;
	size_t shown = 0;
	while (shown < s->preview_len && t[shown] != '\r' && t[shown] != '\n')
		shown++;
	while (shown && (t[shown - 1] == ' ' || t[shown - 1] == '\t'))
		shown--;
	dt_rd_error(s->r, s->text_line, "unexpected text content '%.*s'",
		    (int)(shown < 40 ? shown : 40), t);
}

static void on_markup(void *ud, const xmlChar *a, const xmlChar *b)
{
	(void)a;
	(void)b;
	flush_text(ud);
}

static void on_comment(void *ud, const xmlChar *text)
{
	(void)text;
	flush_text(ud);
}

static void on_doctype(void *ud, const xmlChar *name, const xmlChar *id,
		       const xmlChar *sys)
{
	struct sax *s = ud;
	(void)name;
	(void)id;
	(void)sys;
	/* The prolog scan refuses these; never let one by. */
	dt_rd_error(s->r, parser_line(s), "%s", doctype_refused);
}

/* "prefix:name" of an element or attribute, for messages. */
static const char *qname(const xmlChar *prefix, const xmlChar *name, char *buf,
			 size_t size)
{
	if (!prefix)
		return (const char *)name;
	snprintf(buf, size, "%s:%s", (const char *)prefix, (const char *)name);
	return buf;
}

/* Which element `name` at depth s->depth is, or DT_RD_NELEMENTS after
 * reporting it as out of place. */
static enum dt_rd_element classify(struct sax *s, const xmlChar *name,
				   const xmlChar *prefix, const xmlChar *uri)
{
	struct dt_rd *r = s->r;
	char buf[256];
	/* only the elements that stand at this depth are candidates */
	int e = DT_RD_NELEMENTS;
	for (uint32_t m = s->depth < 4 ? s->at_depth[s->depth] : 0; m;
	     m &= m - 1)
		if (s->element_key[__builtin_ctz(m)] == name) {
			e = __builtin_ctz(m);
			break;
		}
	if (uri) {
		dt_rd_error(r, r->line,
			    "<%s> is in namespace '%s' (format v1 "
			    "elements are in none)",
			    qname(prefix, name, buf, sizeof buf),
			    (const char *)uri);
		return DT_RD_NELEMENTS;
	}
	if (s->depth == 0) {
		if (e != DT_RD_ROOT) {
			dt_rd_error(
			    r, r->line,
			    "the root element is <%s>; expected <dtopt-graph>",
			    qname(prefix, name, buf, sizeof buf));
			return DT_RD_NELEMENTS;
		}
		return DT_RD_ROOT;
	}
	enum dt_rd_element parent = s->open[s->depth - 1];
	if (e == DT_RD_NELEMENTS ||
	    (parent == DT_RD_KWARG ? DT_RD_ARG : parent) !=
		element_rules[e].parent ||
	    (e == DT_RD_ITEM && !r->node.list_arg) ||
	    (element_rules[e].depth == 2 && !r->node.active)) {
		dt_rd_error(r, r->line, "unexpected element <%s>",
			    qname(prefix, name, buf, sizeof buf));
		return DT_RD_NELEMENTS;
	}
	return (enum dt_rd_element)e;
}

/* Put the attributes of element e in place (r->attr_value); false after
 * reporting one that e does not take. */
static bool take_attributes(struct sax *s, enum dt_rd_element e, int n,
			    const xmlChar **attrs)
{
	struct dt_rd *r = s->r;
	uint64_t allowed = element_rules[e].attrs;
	size_t bytes = 0;
	for (int i = 0; i < n; i++)
		bytes += (size_t)(attrs[5 * i + 4] - attrs[5 * i + 3]) + 1;
	if (bytes > UINT32_MAX / 2) {
		dt_rd_error(r, r->line, "<%s> has attributes over 2 GB",
			    dt_rd_element_names[e]);
		return false;
	}
	r->values.len = 0;
	dt_vec_grow(&r->values, (uint32_t)bytes);
	char *out = r->values.data;
	r->stamp++;
	for (int i = 0; i < n; i++) {
		const xmlChar **at = attrs + 5 * i;
		/* only the attributes e takes are candidates */
		int a = DT_RD_NATTRS;
		for (uint64_t m = at[1] ? 0 : allowed; m; m &= m - 1)
			if (s->attr_key[__builtin_ctzll(m)] == at[0]) {
				a = __builtin_ctzll(m);
				break;
			}
		if (a == DT_RD_NATTRS) {
			char buf[256];
			dt_rd_error(r, r->line,
				    "<%s> has an unknown attribute '%s'",
				    dt_rd_element_names[e],
				    qname(at[1], at[0], buf, sizeof buf));
			return false;
		}
		size_t len = (size_t)(at[4] - at[3]);
		memcpy(out, at[3], len);
		out[len] = 0;
		r->attr_value[a] = out;
		r->attr_stamp[a] = r->stamp;
		out += len + 1;
	}
	return true;
}

static void on_start(void *ud, const xmlChar *name, const xmlChar *prefix,
		     const xmlChar *uri, int nb_namespaces,
		     const xmlChar **namespaces, int nb_attributes,
		     int nb_defaulted, const xmlChar **attrs)
{
	struct sax *s = ud;
	struct dt_rd *r = s->r;
	(void)nb_namespaces;
	(void)namespaces;
	(void)nb_defaulted;
	flush_text(s);
	if (r->failed)
		return;
	r->line = parser_line(s);
	if (s->depth > DT_READ_MAX_DEPTH) {
		dt_rd_error(r, r->line, "elements nest deeper than %d levels",
			    DT_READ_MAX_DEPTH);
		return;
	}
	s->saw_root = true;
	enum dt_rd_element e = classify(s, name, prefix, uri);
	if (e == DT_RD_NELEMENTS ||
	    !take_attributes(s, e, nb_attributes, attrs))
		return;
	r->el = e;
	s->open[s->depth++] = e;
	switch (e) {
	case DT_RD_ROOT:
		dt_rd_root(r);
		break;
	case DT_RD_TOPOLOGY:
		dt_rd_topology(r);
		break;
	case DT_RD_MESH:
		dt_rd_mesh(r);
		break;
	case DT_RD_GROUP:
		dt_rd_group(r);
		break;
	case DT_RD_NODE:
		dt_rd_node_begin(r);
		break;
	case DT_RD_ARG:
		dt_rd_arg(r, false);
		break;
	case DT_RD_KWARG:
		dt_rd_arg(r, true);
		break;
	case DT_RD_ITEM:
		dt_rd_item(r);
		break;
	case DT_RD_TENSOR:
		dt_rd_tensor(r);
		break;
	case DT_RD_SHARDING:
		dt_rd_sharding(r);
		break;
	case DT_RD_META:
		dt_rd_meta(r);
		break;
	case DT_RD_DATA:
		dt_rd_data(r);
		break;
	case DT_RD_NELEMENTS:
		break;
	}
}

static void on_end(void *ud, const xmlChar *name, const xmlChar *prefix,
		   const xmlChar *uri)
{
	struct sax *s = ud;
	struct dt_rd *r = s->r;
	(void)name;
	(void)prefix;
	(void)uri;
	flush_text(s);
	if (r->failed)
		return;
	enum dt_rd_element e = s->open[--s->depth];
	if (e == DT_RD_NODE && r->node.active)
		dt_rd_node_end(r);
	else if ((e == DT_RD_ARG || e == DT_RD_KWARG) && r->node.list_arg)
		dt_rd_list_end(r);
}

/* ---- parsing ---- */

/* Streaming input: the bytes read for the prolog check (or the whole
 * input of dt_read_memory), then the rest of the file, counting against
 * the size limit. */
struct stream {
	FILE *f; /* NULL: the prefix is everything */
	const char *prefix;
	size_t prefix_len, prefix_pos;
	uint64_t total, max;
	bool too_big, io_error;
};

static int stream_read(void *ctx, char *buf, int len)
{
	struct stream *s = ctx;
	size_t n = 0;
	if (s->prefix_pos < s->prefix_len) {
		n = s->prefix_len - s->prefix_pos;
		if (n > (size_t)len)
			n = (size_t)len;
		memcpy(buf, s->prefix + s->prefix_pos, n);
		s->prefix_pos += n;
	} else if (s->f) {
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

/* The input is read as UTF-8 whatever its first bytes or its declaration
 * say: in UTF-16 or a declared encoding="UTF-7" a DOCTYPE would escape the
 * byte-level prolog scan. */
static const char parse_encoding[] = "UTF-8";
static const int parse_options = XML_PARSE_NONET | XML_PARSE_BIG_LINES |
				 XML_PARSE_COMPACT | XML_PARSE_NOCDATA |
				 XML_PARSE_IGNORE_ENC;

/* Parse the document behind `in` into r->m with the element handlers. */
static int parse(struct dt_rd *r, struct stream *in)
{
	xmlSAXHandler handler;
	memset(&handler, 0, sizeof handler);
	handler.initialized = XML_SAX2_MAGIC;
	handler.startElementNs = on_start;
	handler.endElementNs = on_end;
	handler.characters = on_characters;
	handler.comment = on_comment;
	handler.processingInstruction = on_markup;
	handler.internalSubset = on_doctype;
	handler.serror = on_error;
	struct sax s = {.r = r};
	s.ctxt = xmlCreateIOParserCtxt(&handler, &s, stream_read, stream_close,
				       in, XML_CHAR_ENCODING_NONE);
	if (!s.ctxt) {
		dt_rd_error(r, 0, "cannot create the XML parser");
		return DT_EIO;
	}
	xmlSwitchToEncoding(s.ctxt, xmlFindCharEncodingHandler(parse_encoding));
	/* NOENT: attribute values arrive with &amp; and character references
	 * replaced (without it SAX2 hands "&#38;" on); no other entity can
	 * exist, as the DOCTYPE is refused. */
	xmlCtxtUseOptions(s.ctxt, parse_options | XML_PARSE_NOENT);
	for (int e = 0; e < DT_RD_NELEMENTS; e++) {
		s.at_depth[element_rules[e].depth] |= 1u << e;
		s.element_key[e] = xmlDictLookup(
		    s.ctxt->dict, BAD_CAST dt_rd_element_names[e], -1);
	}
	for (int a = 0; a < DT_RD_NATTRS; a++)
		s.attr_key[a] = xmlDictLookup(s.ctxt->dict,
					      BAD_CAST dt_rd_attr_names[a], -1);
	r->ctxt = s.ctxt;
	xmlParseDocument(s.ctxt);
	flush_text(&s);
	if (!r->failed && !s.ctxt->wellFormed)
		dt_rd_error(r, parser_line(&s), "malformed XML");
	r->ctxt = NULL;
	if (!r->failed && !s.saw_root)
		dt_rd_error(r, 0, "no <dtopt-graph> element");
	if (s.ctxt->myDoc)
		xmlFreeDoc(s.ctxt->myDoc);
	xmlFreeParserCtxt(s.ctxt);
	return r->failed ? DT_EINPUT : DT_OK;
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

/* Validate the document in `buf` (which the reader accepted) against the
 * RelaxNG schema; reports the first violation. */
static int validate_schema(struct dt_rd *r, const char *buf, size_t len)
{
	xmlTextReaderPtr xr = xmlReaderForMemory(buf, (int)len, r->m->file,
						 parse_encoding, parse_options);
	if (!xr) {
		dt_rd_error(r, 0, "cannot create the XML reader");
		return DT_EIO;
	}
	xmlTextReaderSetStructuredErrorHandler(xr, libxml_error, r);
	xmlRelaxNGPtr schema = load_schema();
	if (xmlTextReaderRelaxNGSetSchema(xr, schema) != 0)
		dt_rd_error(r, 0, "cannot attach the format v1 schema");
	while (!r->failed && xmlTextReaderRead(xr) == 1)
		;
	if (!r->failed && xmlTextReaderIsValid(xr) != 1)
		dt_rd_error(r, 0, "does not match the format v1 schema");
	xmlFreeTextReader(xr);
	xmlRelaxNGFree(schema);
	return r->failed ? DT_EINPUT : DT_OK;
}

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
		} else if (len - i >= 9 &&
			   memcmp(buf + i, "<!DOCTYPE", 9) == 0) {
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

/* Finish a read: free the reader's buffers; hand the module over or
 * destroy it. */
static int finish(struct dt_rd *r, int rc, struct dt_module **out)
{
	dt_rd_node_fini(&r->node);
	dt_vec_free(&r->values);
	dt_vec_free(&r->scratch);
	if (rc != DT_OK || r->failed) {
		dt_module_destroy(r->m);
		return rc != DT_OK ? rc : DT_EINPUT;
	}
	*out = r->m;
	return DT_OK;
}

/* Checks shared by both entry points before libxml2 sees any byte. */
static int check_prefix(struct dt_rd *r, const char *buf, size_t len, bool eof)
{
	if (len == 0 && eof) {
		dt_rd_error(
		    r, 0,
		    "the file is empty (expected a <dtopt-graph> document)");
		return DT_EINPUT;
	}
	/* UTF-16 and UTF-32, with or without a byte order mark. */
	const unsigned char *u = (const unsigned char *)buf;
	if ((len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) ||
			  (u[0] == 0xFF && u[1] == 0xFE))) ||
	    memchr(buf, 0, len < 4 ? len : 4)) {
		dt_rd_error(
		    r, 1,
		    "the file is not UTF-8 text (format v1 files are UTF-8)");
		return DT_EINPUT;
	}
	uint32_t line = 0;
	if (scan_prolog(buf, len, eof, &line) == PROLOG_DOCTYPE) {
		dt_rd_error(r, line, "%s", doctype_refused);
		return DT_EINPUT;
	}
	xmlSetExternalEntityLoader(refuse_external_entity);
	return DT_OK;
}

/* Read the whole of `in` (prefix and file) with the prolog checks done. */
static int read_stream(struct dt_rd *r, struct stream *in)
{
	int rc = parse(r, in);
	if (in->too_big) {
		dt_rd_error(r, 0,
			    "the file is larger than the limit of %llu bytes",
			    (unsigned long long)in->max);
		rc = DT_EINPUT;
	} else if (in->io_error) {
		dt_rd_error(r, 0, "cannot read: %s", strerror(errno));
		rc = DT_EIO;
	}
	return rc;
}

int dt_read_memory(const char *buf, size_t len, const char *name,
		   const struct dt_read_options *opt, struct dt_diag *d,
		   struct dt_module **out)
{
	static const struct dt_read_options defaults;
	*out = NULL;
	struct dt_rd r = {.diag = d, .opt = opt ? opt : &defaults};
	r.m = dt_module_create(name);
	uint64_t max = r.opt->max_bytes ? r.opt->max_bytes : DT_READ_MAX_BYTES;
	if (len > max || len > INT32_MAX) {
		dt_rd_error(
		    &r, 0, "the input is larger than the limit of %llu bytes",
		    (unsigned long long)(max < INT32_MAX ? max : INT32_MAX));
		return finish(&r, DT_EINPUT, out);
	}
	int rc = check_prefix(&r, buf, len, true);
	if (rc != DT_OK)
		return finish(&r, rc, out);
	struct stream in = {.prefix = buf, .prefix_len = len, .max = max};
	rc = read_stream(&r, &in);
	if (rc == DT_OK && r.opt->schema)
		rc = validate_schema(&r, buf, len);
	return finish(&r, rc, out);
}

/* All of `f` in a new heap buffer (*len bytes), or NULL after reporting
 * a file over `max` bytes or a read error. */
static char *slurp(FILE *f, const char *name, uint64_t max, size_t *len,
		   struct dt_diag *d)
{
	size_t cap = 1 << 20, n = 0, got;
	char *buf = dt_malloc(cap);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n > max) {
			dt_diag_report(
			    d, DT_ERROR, name, 0, NULL,
			    "the file is larger than the limit of %llu bytes",
			    (unsigned long long)max);
			dt_free(buf);
			return NULL;
		}
		if (n == cap)
			buf = dt_realloc(buf, cap *= 2);
	}
	if (ferror(f)) {
		dt_diag_report(d, DT_ERROR, name, 0, NULL, "cannot read: %s",
			       strerror(errno));
		dt_free(buf);
		return NULL;
	}
	*len = n;
	return buf;
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
	/* libxml2 asks for about 4 KB at a time: read the file in 256 KB */
	char *iobuf = is_stdin ? NULL : dt_malloc(1 << 18);
	if (iobuf)
		setvbuf(f, iobuf, _IOFBF, 1 << 18);
	struct dt_rd r = {.diag = d, .opt = opt ? opt : &defaults};
	uint64_t max = r.opt->max_bytes ? r.opt->max_bytes : DT_READ_MAX_BYTES;
	if (r.opt->schema) {
		/* the schema's pass reads the document a second time */
		size_t len = 0;
		char *all =
		    slurp(f, name, max < INT32_MAX ? max : INT32_MAX, &len, d);
		if (!is_stdin)
			fclose(f);
		dt_free(iobuf);
		int rc = all ? dt_read_memory(all, len, name, opt, d, out)
			     : DT_EINPUT;
		dt_free(all);
		return rc;
	}
	DT_VEC(char) prefix = {0};
	r.m = dt_module_create(name);
	/* Read until the prolog check can decide (usually the first block). */
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
		dt_rd_error(&r, 0, "cannot read: %s", strerror(errno));
		rc = DT_EIO;
	} else {
		rc = check_prefix(&r, prefix.data ? prefix.data : "",
				  prefix.len, eof);
	}
	if (rc == DT_OK) {
		struct stream in = {.f = f,
				    .prefix = prefix.data,
				    .prefix_len = prefix.len,
				    .max = max};
		rc = read_stream(&r, &in);
	}
	dt_vec_free(&prefix);
	if (!is_stdin)
		fclose(f);
	dt_free(iobuf);
	return finish(&r, rc, out);
}
