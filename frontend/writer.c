// SPDX-License-Identifier: MIT
/* writer.c: writes a dt_module as graph XML format v1, canonically (load,
 * write, load, write gives identical bytes), and atomically to files. */
#include "constant_data.h"
#include "frontend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The writer's own output buffer: the document goes out in few, large
 * fwrite calls instead of one stdio call per token. */
struct out {
	FILE *f;
	size_t len;
	char buf[1 << 16];
};

static void out_flush(struct out *o)
{
	fwrite(o->buf, 1, o->len, o->f);
	o->len = 0;
}

static void out_n(struct out *o, const char *s, size_t n)
{
	if (o->len + n > sizeof o->buf) {
		out_flush(o);
		if (n > sizeof o->buf) {
			fwrite(s, 1, n, o->f);
			return;
		}
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void out_s(struct out *o, const char *s)
{
	out_n(o, s, strlen(s));
}

static void out_c(struct out *o, char c)
{
	if (o->len == sizeof o->buf)
		out_flush(o);
	o->buf[o->len++] = c;
}

static void out_f(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void out_f(struct out *o, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	out_n(o, text, n < (int)sizeof text ? (size_t)n : sizeof text - 1);
}

/* Attribute-value escaping, in runs: the bytes between two special
 * characters go out in one fwrite. Control characters become character
 * refs so they survive attribute-value normalisation. */
static void put_escaped(struct out *out, const char *s)
{
	for (;;) {
		size_t n = strcspn(s, "&<>\"\n\r\t");
		out_n(out, s, n);
		s += n;
		const char *ref;
		switch (*s) {
		case 0: return;
		case '&': ref = "&amp;"; break;
		case '<': ref = "&lt;"; break;
		case '>': ref = "&gt;"; break;
		case '"': ref = "&quot;"; break;
		case '\n': ref = "&#10;"; break;
		case '\r': ref = "&#13;"; break;
		default: ref = "&#9;"; break;
		}
		out_s(out, ref);
		s++;
	}
}

static void put_str(struct out *out, const struct dt_module *m, dt_str s)
{
	put_escaped(out, dt_str_get(m, s));
}

static void put_int(struct out *out, int64_t v)
{
	char buf[24], *p = buf + sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	*--p = 0;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	out_n(out, p, (size_t)(buf + sizeof(buf) - 1 - p));
}

static void put_ints(struct out *out, const struct dt_module *m, dt_ints l)
{
	int n;
	const int64_t *v = dt_ints_get(m, l, &n);
	for (int i = 0; i < n; i++) {
		if (i)
			out_c(out, ' ');
		put_int(out, v[i]);
	}
}

static void put_double(struct out *out, double v)
{
	char buf[40];
	dt_format_double(v, buf, sizeof(buf));
	out_s(out, buf);
}

static void put_node_name(struct out *out, const struct dt_module *m, uint32_t id)
{
	put_str(out, m, dt_node_get(m, id)->name);
}

static void put_value(struct out *out, const struct dt_module *m,
		      const struct dt_arg *a)
{
	switch ((enum dt_arg_kind)a->kind) {
	case DT_ARG_NODE:
		out_s(out, " node=\"");
		put_node_name(out, m, a->v.node);
		break;
	case DT_ARG_NODES:
		out_s(out, " nodes=\"");
		for (uint32_t i = 0; i < a->len; i++) {
			if (i)
				out_c(out, ' ');
			put_node_name(out, m, m->refs.data[a->v.first + i]);
		}
		break;
	case DT_ARG_INT:
		out_s(out, " int=\"");
		put_int(out, a->v.i);
		break;
	case DT_ARG_INTS:
		out_s(out, " ints=\"");
		put_ints(out, m, a->v.ints);
		break;
	case DT_ARG_FLOAT:
		out_s(out, " float=\"");
		put_double(out, a->v.f);
		break;
	case DT_ARG_FLOATS:
		out_s(out, " floats=\"");
		for (uint32_t i = 0; i < a->len; i++) {
			if (i)
				out_c(out, ' ');
			put_double(out, m->floats.data[a->v.first + i]);
		}
		break;
	case DT_ARG_BOOL:
		out_s(out, a->v.b ? " bool=\"true" : " bool=\"false");
		break;
	case DT_ARG_STR:
		out_s(out, " str=\"");
		put_str(out, m, a->v.s);
		break;
	case DT_ARG_DTYPE:
		out_s(out, " dtype=\"");
		out_s(out, dt_dtype_name((enum dt_dtype)a->v.dtype));
		break;
	case DT_ARG_NONE:
		out_s(out, " none=\"true");
		break;
	case DT_ARG_ITEMS:
		DT_REQUIRE(!"items are written by put_arg");
	}
	out_c(out, '"');
}

static void put_arg(struct out *out, const struct dt_module *m,
		    const struct dt_arg *a)
{
	if (a->name.id) {
		out_s(out, "    <kwarg name=\"");
		put_str(out, m, a->name);
		out_c(out, '"');
	} else {
		out_s(out, "    <arg");
	}
	if (a->kind != DT_ARG_ITEMS) {
		put_value(out, m, a);
		out_s(out, "/>\n");
		return;
	}
	out_s(out, ">");
	for (uint32_t i = 0; i < a->len; i++) {
		out_s(out, "<item");
		put_value(out, m, &m->args.data[a->v.first + i]);
		out_s(out, "/>");
	}
	out_s(out, a->name.id ? "</kwarg>\n" : "</arg>\n");
}

static void put_tensor(struct out *out, const struct dt_module *m,
		       const struct dt_tensor *t)
{
	out_s(out, "    <tensor dtype=\"");
	out_s(out, dt_dtype_name((enum dt_dtype)t->dtype));
	out_s(out, "\" shape=\"");
	put_ints(out, m, t->shape);
	out_s(out, "\" stride=\"");
	put_ints(out, m, t->stride);
	out_c(out, '"');
	if (t->offset) {
		out_s(out, " offset=\"");
		put_int(out, t->offset);
		out_c(out, '"');
	}
	out_s(out, "/>\n");
}

static void put_sharding(struct out *out, const struct dt_module *m,
			 const struct dt_sharding *s)
{
	const struct dt_mesh *mesh = &m->meshes.data[s->mesh];
	char buf[512];
	out_s(out, "    <sharding mesh=\"");
	put_str(out, m, mesh->name);
	dt_placements_print(&s->placements, buf, sizeof(buf));
	out_s(out, "\" placements=\"");
	out_s(out, buf);
	out_c(out, '"');
	if (!dt_placements_has_default_order(&s->placements)) {
		dt_placements_print_order(&s->placements, mesh, &m->strings, buf,
					  sizeof(buf));
		out_s(out, " order=\"");
		put_escaped(out, buf);
		out_c(out, '"');
	}
	if (s->has_global_shape) {
		out_s(out, " global-shape=\"");
		put_ints(out, m, s->global_shape);
		out_c(out, '"');
	}
	out_s(out, "/>\n");
}

static const char *node_kind_name[] = {"placeholder", "call_function",
				       "output", "get_attr"};

/* Whether constant node n's data goes to a side file (in folder `dir`;
 * NULL when writing a stream, where all data is inline). */
static bool in_side_file(const struct dt_module *m, const struct dt_node *n,
			 const char *dir)
{
	return dir && dt_node_constant(m, n)->size > DT_INLINE_MAX_BYTES;
}

/* <data base64=.../> or <data file=... bytes=... crc32=.../>. */
static void put_data(struct out *out, const struct dt_module *m,
		     const struct dt_node *n, const char *dir)
{
	const struct dt_constant *c = dt_node_constant(m, n);
	if (!in_side_file(m, n, dir)) {
		out_s(out, "    <data base64=\"");
		out_flush(out);
		dt_base64_write(out->f, c->bytes, c->size);
		out_s(out, "\"/>\n");
		return;
	}
	uint32_t crc = dt_crc32(c->bytes, c->size);
	char name[128];
	dt_side_file_name(dt_str_get(m, n->name), crc, name, sizeof name);
	out_s(out, "    <data file=\"");
	put_escaped(out, name);
	out_s(out, "\" bytes=\"");
	put_int(out, (int64_t)c->size);
	out_f(out, "\" crc32=\"%08x\"/>\n", crc);
}

static void put_node(struct out *out, const struct dt_module *m,
		     const struct dt_node *n, const char *dir)
{
	out_s(out, "  <node name=\"");
	put_str(out, m, n->name);
	out_s(out, "\" op=\"");
	out_s(out, node_kind_name[n->kind]);
	out_c(out, '"');
	if (n->target.id) {
		out_s(out, " target=\"");
		put_str(out, m, n->target);
		out_c(out, '"');
	}
	bool empty = !n->nargs && !n->ntensors && !n->nmetas &&
		     n->sharding == DT_NO_SHARDING && n->kind != DT_NODE_CONSTANT;
	if (empty) {
		out_s(out, "/>\n");
		return;
	}
	out_s(out, ">\n");
	for (int i = 0; i < n->nargs; i++)
		put_arg(out, m, dt_node_arg(m, n, i));
	for (int i = 0; i < n->ntensors; i++)
		put_tensor(out, m, dt_node_tensor(m, n, i));
	if (n->kind == DT_NODE_CONSTANT)
		put_data(out, m, n, dir);
	if (n->sharding != DT_NO_SHARDING)
		put_sharding(out, m, dt_node_sharding(m, n));
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *meta = &m->metas.data[n->metas + i];
		out_s(out, "    <meta key=\"");
		put_str(out, m, meta->key);
		out_s(out, "\" value=\"");
		put_str(out, m, meta->value);
		out_s(out, "\"/>\n");
	}
	out_s(out, "  </node>\n");
}

/* Every attribute, so the file states the whole machine it was costed on. */
static void put_topology(struct out *out, const struct dt_topology *t)
{
	out_s(out, "  <topology devices-per-host=\"");
	put_int(out, t->devices_per_host);
	out_s(out, "\" bandwidth=\"");
	put_double(out, t->bandwidth);
	out_s(out, "\" latency=\"");
	put_double(out, t->latency);
	out_s(out, "\" inter-host-bandwidth-factor=\"");
	put_double(out, t->inter_host_bandwidth_factor);
	out_s(out, "\" inter-host-latency=\"");
	put_double(out, t->inter_host_latency);
	out_s(out, "\" base-latency=\"");
	put_double(out, t->base_latency);
	out_s(out, "\" all-to-all-penalty=\"");
	put_double(out, t->all_to_all_penalty);
	out_s(out, "\" device-tflops=\"");
	put_double(out, t->device_tflops);
	out_s(out, "\" device-bandwidth=\"");
	put_double(out, t->device_bandwidth);
	out_s(out, "\"/>\n");
}

int dt_format_node_minor(const struct dt_module *m, const struct dt_node *n,
			 char *what, size_t size)
{
	if (n->kind == DT_NODE_CONSTANT) {
		if (what)
			snprintf(what, size, "a constant (op=\"get_attr\")");
		return 1;
	}
	if (n->kind == DT_NODE_CALL && dt_op_is_spmd((enum dt_op)n->op)) {
		if (what)
			snprintf(what, size, "op %s", dt_op_get(n->op)->target);
		return 1;
	}
	const struct dt_sharding *sh = dt_node_sharding(m, n);
	if (!sh || !sh->has_global_shape || m->view != DT_VIEW_LOCAL ||
	    m->rank >= 0 || sh->mesh >= m->meshes.len)
		return 0;
	int rank;
	const int64_t *g = dt_ints_get(m, sh->global_shape, &rank);
	char err[8];
	if (!dt_placements_validate(&sh->placements, rank, err, sizeof err) ||
	    dt_shard_even(&m->meshes.data[sh->mesh], &sh->placements, g, rank))
		return 0;
	if (what)
		snprintf(what, size, "an uneven shard padded to the largest "
			 "one (an SPMD graph's uneven <sharding>)");
	return 1;
}

int dt_format_minor(const struct dt_module *m)
{
	int minor = 0;
	dt_foreach_node(m, id) {
		int n = dt_format_node_minor(m, dt_node_get(m, id), NULL, 0);
		minor = n > minor ? n : minor;
		if (minor == DT_FORMAT_MINOR)
			break;
	}
	return minor;
}

/* The document; constants larger than DT_INLINE_MAX_BYTES refer to side
 * files in `dir` (written by the caller), all inline when dir is NULL. */
static int write_xml(const struct dt_module *m, FILE *f, const char *dir)
{
	struct out *out = dt_malloc(sizeof *out);
	out->f = f;
	out->len = 0;
	int minor = dt_format_minor(m);
	out_s(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	if (minor)
		out_f(out, "<dtopt-graph version=\"1.%d\" name=\"", minor);
	else
		out_s(out, "<dtopt-graph version=\"1\" name=\"");
	put_str(out, m, m->name);
	out_s(out, m->view == DT_VIEW_GLOBAL ? "\" view=\"global\"" : "\" view=\"local\"");
	if (m->rank >= 0) {
		out_s(out, " rank=\"");
		put_int(out, m->rank);
		out_c(out, '"');
	}
	out_s(out, ">\n");
	if (m->has_topology)
		put_topology(out, &m->topology);
	for (uint32_t i = 0; i < m->meshes.len; i++) {
		const struct dt_mesh *mesh = &m->meshes.data[i];
		out_s(out, "  <mesh name=\"");
		put_str(out, m, mesh->name);
		out_s(out, "\" shape=\"");
		for (int d = 0; d < mesh->ndim; d++) {
			if (d)
				out_c(out, ' ');
			put_int(out, mesh->shape[d]);
		}
		out_s(out, "\" dims=\"");
		for (int d = 0; d < mesh->ndim; d++) {
			if (d)
				out_c(out, ' ');
			put_str(out, m, mesh->dims[d]);
		}
		out_c(out, '"');
		if (mesh->devices) {
			out_s(out, " devices=\"");
			for (int64_t k = 0; k < mesh->size; k++) {
				if (k)
					out_c(out, ' ');
				put_int(out, mesh->devices[k]);
			}
			out_c(out, '"');
		}
		out_s(out, "/>\n");
	}
	for (uint32_t i = 0; i < m->groups.len; i++) {
		const struct dt_group *g = &m->groups.data[i];
		const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
		out_s(out, "  <group name=\"");
		put_str(out, m, g->name);
		out_s(out, "\" mesh=\"");
		put_str(out, m, mesh->name);
		out_s(out, "\" dims=\"");
		for (int d = 0; d < g->ndims; d++) {
			if (d)
				out_c(out, ' ');
			put_str(out, m, mesh->dims[g->dims[d]]);
		}
		out_s(out, g->generated ? "\" generated=\"true\"/>\n" : "\"/>\n");
	}
	dt_foreach_node(m, id) put_node(out, m, dt_node_get(m, id), dir);
	out_s(out, "</dtopt-graph>\n");
	out_flush(out);
	dt_free(out);
	return ferror(f) ? DT_EIO : DT_OK;
}

int dt_write_stream(const struct dt_module *m, FILE *out)
{
	return write_xml(m, out, NULL);
}

/* The side files of the XML file `path` (folder `dir`), before it. */
static int write_side_files(const struct dt_module *m, const char *path,
			    const char *dir, struct dt_diag *d)
{
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_CONSTANT || !in_side_file(m, n, dir))
			continue;
		const struct dt_constant *c = dt_node_constant(m, n);
		char name[128], err[4400];
		dt_side_file_name(dt_str_get(m, n->name),
				  dt_crc32(c->bytes, c->size), name, sizeof name);
		if (dt_side_file_write(dir, name, c->bytes, c->size, err,
				       sizeof err) != 0) {
			dt_diag_report(d, DT_ERROR, path, 0, NULL, "%s", err);
			return DT_EIO;
		}
	}
	return DT_OK;
}

/* Whether all of m's data fits inline (for a target without a folder for
 * side files); reports the first constant that does not. */
static bool fits_inline(const struct dt_module *m, const char *path,
			struct dt_diag *d)
{
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_CONSTANT ||
		    dt_node_constant(m, n)->size <= DT_INLINE_LIMIT_BYTES)
			continue;
		dt_diag_report(d, DT_ERROR, path, 0, NULL,
			       "constant '%s' has %llu bytes, more than inline "
			       "data may hold (%u); write to a file (-o "
			       "FILE.xml), whose folder gets its side file",
			       dt_str_get(m, n->name),
			       (unsigned long long)dt_node_constant(m, n)->size,
			       DT_INLINE_LIMIT_BYTES);
		return false;
	}
	return true;
}

int dt_write_file(const struct dt_module *m, const char *path,
		  struct dt_diag *d)
{
	if (strcmp(path, "-") == 0) {
		if (!fits_inline(m, "<stdout>", d))
			return DT_EIO;
		int rc = dt_write_stream(m, stdout);
		if (fflush(stdout) != 0 || rc != DT_OK) {
			dt_diag_report(d, DT_ERROR, "<stdout>", 0, NULL,
				       "cannot write: %s", strerror(errno));
			return DT_EIO;
		}
		return DT_OK;
	}
	struct stat st;
	bool exists = stat(path, &st) == 0;
	if (exists && !S_ISREG(st.st_mode)) {
		/* A device or pipe (/dev/null): nothing to replace atomically. */
		if (!fits_inline(m, path, d))
			return DT_EIO;
		FILE *dev = fopen(path, "w");
		int rc = dev ? write_xml(m, dev, NULL) : DT_EIO;
		if (dev && fclose(dev) != 0)
			rc = DT_EIO;
		if (rc != DT_OK)
			dt_diag_report(d, DT_ERROR, path, 0, NULL,
				       "cannot write: %s", strerror(errno));
		return rc;
	}
	char dir[4096];
	dt_path_dir(path, dir, sizeof dir);
	if (write_side_files(m, path, dir, d) != DT_OK)
		return DT_EIO;
	char *tmp;
	int fd = dt_temp_beside(path, exists ? (st.st_mode & 07777) : 0644,
				&tmp);
	if (fd < 0) {
		dt_diag_report(d, DT_ERROR, path, 0, NULL,
			       "cannot create a temporary file beside it: %s",
			       strerror(errno));
		return DT_EIO;
	}
	FILE *out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		unlink(tmp);
		dt_free(tmp);
		return DT_EIO;
	}
	char *buf = dt_malloc(1 << 16);
	setvbuf(out, buf, _IOFBF, 1 << 16);
	int rc = write_xml(m, out, dir);
	int saved = errno;
	int closed = fclose(out);
	dt_free(buf);
	if (closed != 0 && rc == DT_OK) {
		saved = errno;
		rc = DT_EIO;
	}
	if (rc == DT_OK && rename(tmp, path) != 0) {
		saved = errno;
		rc = DT_EIO;
	}
	if (rc != DT_OK) {
		unlink(tmp);
		dt_diag_report(d, DT_ERROR, path, 0, NULL, "cannot write: %s",
			       strerror(saved));
	}
	dt_free(tmp);
	return rc;
}
