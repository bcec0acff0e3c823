// SPDX-License-Identifier: MIT
/* read_sax.c: the reader's parse (reader.c reads the input): libxml2's
 * SAX2 parser feeds the element handlers of read_graph.c and read_node.c,
 * which build a dt_module. Elements and attributes are recognised by the
 * parser's dictionary pointers (one pointer compare each); the events
 * check everything format v1's RelaxNG schema does (element nesting and
 * order, allowed and required attributes, no namespaces, no text), so the
 * schema is off the load path. Element depth is bounded. */
#include "internal.h"

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
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

/* The input is read as UTF-8 whatever its first bytes or its declaration
 * say: in UTF-16 or a declared encoding="UTF-7" a DOCTYPE would escape the
 * byte-level prolog scan. */
const char dt_rd_parse_encoding[] = "UTF-8";
const int dt_rd_parse_options = XML_PARSE_NONET | XML_PARSE_BIG_LINES |
				XML_PARSE_COMPACT | XML_PARSE_NOCDATA |
				XML_PARSE_IGNORE_ENC;

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
	dt_rd_libxml_error(s->r, e);
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
	dt_rd_error(s->r, parser_line(s), "%s", dt_rd_doctype_refused);
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

int dt_rd_parse(struct dt_rd *r, int (*read)(void *in, char *buf, int len),
		int (*close)(void *in), void *in)
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
	s.ctxt = xmlCreateIOParserCtxt(&handler, &s, read, close, in,
				       XML_CHAR_ENCODING_NONE);
	if (!s.ctxt) {
		dt_rd_error(r, 0, "cannot create the XML parser");
		return DT_EIO;
	}
	xmlSwitchToEncoding(s.ctxt,
			    xmlFindCharEncodingHandler(dt_rd_parse_encoding));
	/* NOENT: attribute values arrive with &amp; and character references
	 * replaced (without it SAX2 hands "&#38;" on); no other entity can
	 * exist, as the DOCTYPE is refused. */
	xmlCtxtUseOptions(s.ctxt, dt_rd_parse_options | XML_PARSE_NOENT);
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
