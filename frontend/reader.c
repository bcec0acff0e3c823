// SPDX-License-Identifier: MIT
/* reader.c: streaming reader of graph XML format v1, the entry points:
 * the input's checks before libxml2 sees it, its streaming with a size
 * bound, the parse (read_sax.c: libxml2's SAX2 parser feeding the element
 * handlers of read_graph.c and read_node.c, which build a dt_module), and
 * the RelaxNG schema as an optional second pass (opt.schema: dtopt verify
 * --schema, the tests); also the reader's diagnostics.
 *
 * Security: the input is read with a size bound; a DOCTYPE is rejected
 * before libxml2 sees the document, so no DTD, internal or external entity
 * is ever processed; the external entity loader refuses everything;
 * XML_PARSE_NONET forbids network access; element depth is bounded. */
#define _GNU_SOURCE /* memmem */
#include "internal.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/relaxng.h>
#include <libxml/xmlreader.h>
#include <stdlib.h>
#include <string.h>

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
void dt_rd_libxml_error(void *ud, xmlErrorPtr e)
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

const char dt_rd_doctype_refused[] =
    "DOCTYPE declarations are not allowed (format v1 has no DTD; entities "
    "are never loaded)";

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
	xmlTextReaderPtr xr =
	    xmlReaderForMemory(buf, (int)len, r->m->file, dt_rd_parse_encoding,
			       dt_rd_parse_options);
	if (!xr) {
		dt_rd_error(r, 0, "cannot create the XML reader");
		return DT_EIO;
	}
	xmlTextReaderSetStructuredErrorHandler(xr, dt_rd_libxml_error, r);
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
		dt_rd_error(r, line, "%s", dt_rd_doctype_refused);
		return DT_EINPUT;
	}
	xmlSetExternalEntityLoader(refuse_external_entity);
	return DT_OK;
}

/* Read the whole of `in` (prefix and file) with the prolog checks done. */
static int read_stream(struct dt_rd *r, struct stream *in)
{
	int rc = dt_rd_parse(r, stream_read, stream_close, in);
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
