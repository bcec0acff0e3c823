// SPDX-License-Identifier: MIT
/* dump_json.c: the JSON dump, the whole module as one JSON object for
 * scripts and viewers (one mesh, group or node per line).
 *
 * Layout:
 *   {"format": "dtopt-graph", "version": 1 | 1.1 (the XML's), "name": S,
 *    "view": "local" | "global", "rank": null | R,
 *    "meshes": [{"name", "shape": [..], "dims": [S..], "devices": null | [..],
 *                "line"}],
 *    "groups": [{"name", "mesh", "dims": [S..], "size", "generated",
 *                "line"}],
 *    "nodes": [{"name", "op": "placeholder" | "call_function" | "output"
 *               | "get_attr",
 *               "target": null | S, "line", "args": [V..], "kwargs": {S: V},
 *               "tensors": [{"dtype", "shape", "stride", "offset"}],
 *               "sharding": null | {"mesh", "placements": "S(0) R",
 *                                   "order": null | "0:tp,dp",
 *                                   "global_shape": null | [..]},
 *               "meta": {S: S}, "fused": bool,
 *               "data": {"bytes": N, "crc32": "8 hex digits"} (get_attr
 *               only: the constant's data, summarised)}]}
 * "line" is the XML source line, null for things a pass created. Nodes are
 * in graph order; kwargs and meta keep their order.
 *
 * Argument values V, one JSON form per XML value form, so a value's kind
 * is told by its JSON type alone (and, for numbers, by the lexeme):
 *   node="x"        {"node": "x"}
 *   nodes="a b"     [{"node": "a"}, {"node": "b"}]
 *   int="3"         3            (never a '.' or an exponent)
 *   ints="1 0"      [1, 0]
 *   float="1e-05"   1e-05        (always a '.' or an exponent: 2.0, not 2)
 *                   {"float": "inf"}, {"float": "-inf"}, {"float": "nan"}
 *                                (JSON has no non-finite numbers)
 *   floats="0.5 2"  [0.5, 2.0]
 *   bool="true"     true
 *   str="sum"       "sum"        (strings are always plain JSON strings)
 *   dtype="int64"   {"dtype": "int64"}
 *   none="true"     null
 *   <item>s         [V, ...]     (each item in its scalar form above)
 * An empty list of any kind is []. Strings are UTF-8; invalid bytes (which
 * the XML reader never produces) are written as U+FFFD. */
#include "frontend.h"

#include <math.h>
#include <string.h>

/* ---- scalars ---- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes there
 * are not one (overlong forms, surrogates and values past U+10FFFF are
 * invalid). */
static int utf8_length(const unsigned char *s)
{
	unsigned c = s[0];
	int n;
	unsigned min, cp;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0) {
		n = 2;
		min = 0x80;
		cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3;
		min = 0x800;
		cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		n = 4;
		min = 0x10000;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void dt_json_string(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	fputc('"', out);
	while (*p) {
		unsigned char c = *p;
		switch (c) {
		case '"': fputs("\\\"", out); break;
		case '\\': fputs("\\\\", out); break;
		case '\b': fputs("\\b", out); break;
		case '\f': fputs("\\f", out); break;
		case '\n': fputs("\\n", out); break;
		case '\r': fputs("\\r", out); break;
		case '\t': fputs("\\t", out); break;
		default: {
			if (c < 0x20) {
				fprintf(out, "\\u%04x", c);
				break;
			}
			int n = utf8_length(p);
			if (n == 0) {
				fputs("\\ufffd", out);
				p++;
			} else {
				fwrite(p, 1, (size_t)n, out);
				p += (size_t)n;
			}
			continue;
		}
		}
		p++;
	}
	fputc('"', out);
}

static void put_str(FILE *out, const struct dt_module *m, dt_str s)
{
	dt_json_string(out, dt_str_get(m, s));
}

/* A string or null when empty (absent target). */
static void put_str_or_null(FILE *out, const struct dt_module *m, dt_str s)
{
	if (s.id)
		put_str(out, m, s);
	else
		fputs("null", out);
}

static void put_line(FILE *out, uint32_t line)
{
	if (line)
		fprintf(out, "%u", line);
	else
		fputs("null", out);
}

static void put_int(FILE *out, int64_t v)
{
	fprintf(out, "%lld", (long long)v);
}

/* A float as a JSON number whose lexeme shows it is one ("2.0", "1e-05"),
 * or {"float": "inf"|"-inf"|"nan"}. */
static void put_float(FILE *out, double v)
{
	if (!isfinite(v)) {
		fprintf(out, "{\"float\": \"%s\"}",
			isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
		return;
	}
	char buf[48];
	dt_format_double(v, buf, sizeof(buf));
	fputs(buf, out);
	if (!strpbrk(buf, ".eE"))
		fputs(".0", out);
}

static void put_int_list(FILE *out, const int64_t *v, int n)
{
	fputc('[', out);
	for (int i = 0; i < n; i++) {
		if (i)
			fputs(", ", out);
		put_int(out, v[i]);
	}
	fputc(']', out);
}

static void put_ints(FILE *out, const struct dt_module *m, dt_ints l)
{
	int n;
	const int64_t *v = dt_ints_get(m, l, &n);
	put_int_list(out, v, n);
}

static void put_node_ref(FILE *out, const struct dt_module *m, uint32_t id)
{
	fputs("{\"node\": ", out);
	put_str(out, m, dt_node_get(m, id)->name);
	fputc('}', out);
}

/* ---- values ---- */

/* One argument value in the encoding described at the top. */
static void put_value(FILE *out, const struct dt_module *m,
		      const struct dt_arg *a)
{
	switch ((enum dt_arg_kind)a->kind) {
	case DT_ARG_NODE:
		put_node_ref(out, m, a->v.node);
		break;
	case DT_ARG_NODES:
		fputc('[', out);
		for (uint32_t i = 0; i < a->len; i++) {
			if (i)
				fputs(", ", out);
			put_node_ref(out, m, m->refs.data[a->v.first + i]);
		}
		fputc(']', out);
		break;
	case DT_ARG_INT:
		put_int(out, a->v.i);
		break;
	case DT_ARG_INTS:
		put_ints(out, m, a->v.ints);
		break;
	case DT_ARG_FLOAT:
		put_float(out, a->v.f);
		break;
	case DT_ARG_FLOATS:
		fputc('[', out);
		for (uint32_t i = 0; i < a->len; i++) {
			if (i)
				fputs(", ", out);
			put_float(out, m->floats.data[a->v.first + i]);
		}
		fputc(']', out);
		break;
	case DT_ARG_BOOL:
		fputs(a->v.b ? "true" : "false", out);
		break;
	case DT_ARG_STR:
		put_str(out, m, a->v.s);
		break;
	case DT_ARG_DTYPE:
		fputs("{\"dtype\": ", out);
		dt_json_string(out, dt_dtype_name((enum dt_dtype)a->v.dtype));
		fputc('}', out);
		break;
	case DT_ARG_NONE:
		fputs("null", out);
		break;
	case DT_ARG_ITEMS:
		fputc('[', out);
		for (uint32_t i = 0; i < a->len; i++) {
			if (i)
				fputs(", ", out);
			put_value(out, m, &m->args.data[a->v.first + i]);
		}
		fputc(']', out);
		break;
	default:
		DT_REQUIRE(!"unknown arg kind");
	}
}

/* ---- module parts ---- */

static void put_mesh(FILE *out, const struct dt_module *m,
		     const struct dt_mesh *mesh)
{
	fputs("{\"name\": ", out);
	put_str(out, m, mesh->name);
	fputs(", \"shape\": ", out);
	put_int_list(out, mesh->shape, mesh->ndim);
	fputs(", \"dims\": [", out);
	for (int d = 0; d < mesh->ndim; d++) {
		if (d)
			fputs(", ", out);
		put_str(out, m, mesh->dims[d]);
	}
	fputs("], \"devices\": ", out);
	if (mesh->devices) {
		fputc('[', out);
		for (int64_t k = 0; k < mesh->size; k++)
			fprintf(out, "%s%d", k ? ", " : "", mesh->devices[k]);
		fputc(']', out);
	} else {
		fputs("null", out);
	}
	fputs(", \"line\": ", out);
	put_line(out, mesh->line);
	fputc('}', out);
}

static void put_group(FILE *out, const struct dt_module *m,
		      const struct dt_group *g)
{
	const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
	fputs("{\"name\": ", out);
	put_str(out, m, g->name);
	fputs(", \"mesh\": ", out);
	put_str(out, m, mesh->name);
	fputs(", \"dims\": [", out);
	for (int d = 0; d < g->ndims; d++) {
		if (d)
			fputs(", ", out);
		put_str(out, m, mesh->dims[g->dims[d]]);
	}
	fprintf(out, "], \"size\": %lld, \"generated\": %s, \"line\": ",
		(long long)dt_group_size(mesh, g->dims, g->ndims),
		g->generated ? "true" : "false");
	put_line(out, g->line);
	fputc('}', out);
}

/* The <topology>, keyed by its XML attribute names. */
static void put_topology(FILE *out, const struct dt_topology *t)
{
	fputs("{\"devices-per-host\": ", out);
	put_int(out, t->devices_per_host);
	fputs(", \"bandwidth\": ", out);
	put_float(out, t->bandwidth);
	fputs(", \"latency\": ", out);
	put_float(out, t->latency);
	fputs(", \"inter-host-bandwidth-factor\": ", out);
	put_float(out, t->inter_host_bandwidth_factor);
	fputs(", \"inter-host-latency\": ", out);
	put_float(out, t->inter_host_latency);
	fputs(", \"base-latency\": ", out);
	put_float(out, t->base_latency);
	fputs(", \"all-to-all-penalty\": ", out);
	put_float(out, t->all_to_all_penalty);
	fputs(", \"device-tflops\": ", out);
	put_float(out, t->device_tflops);
	fputs(", \"device-bandwidth\": ", out);
	put_float(out, t->device_bandwidth);
	fputc('}', out);
}

static void put_tensor(FILE *out, const struct dt_module *m,
		       const struct dt_tensor *t)
{
	fputs("{\"dtype\": ", out);
	dt_json_string(out, dt_dtype_name((enum dt_dtype)t->dtype));
	fputs(", \"shape\": ", out);
	put_ints(out, m, t->shape);
	fputs(", \"stride\": ", out);
	put_ints(out, m, t->stride);
	fputs(", \"offset\": ", out);
	put_int(out, t->offset);
	fputc('}', out);
}

static void put_sharding(FILE *out, const struct dt_module *m,
			 const struct dt_sharding *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	const struct dt_mesh *mesh = &m->meshes.data[s->mesh];
	char buf[512];
	fputs("{\"mesh\": ", out);
	put_str(out, m, mesh->name);
	dt_placements_print(&s->placements, buf, sizeof(buf));
	fputs(", \"placements\": ", out);
	dt_json_string(out, buf);
	fputs(", \"order\": ", out);
	if (dt_placements_has_default_order(&s->placements)) {
		fputs("null", out);
	} else {
		dt_placements_print_order(&s->placements, mesh, &m->strings,
					  buf, sizeof(buf));
		dt_json_string(out, buf);
	}
	fputs(", \"global_shape\": ", out);
	if (s->has_global_shape)
		put_ints(out, m, s->global_shape);
	else
		fputs("null", out);
	fputc('}', out);
}

static const char *const node_kind_name[] = {"placeholder", "call_function",
					     "output", "get_attr"};

/* Positional args (keyword == false) as a JSON array, or keyword args as a
 * JSON object. */
static void put_args(FILE *out, const struct dt_module *m,
		     const struct dt_node *n, bool keyword)
{
	fputc(keyword ? '{' : '[', out);
	bool first = true;
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, i);
		if ((a->name.id != 0) != keyword)
			continue;
		if (!first)
			fputs(", ", out);
		first = false;
		if (keyword) {
			put_str(out, m, a->name);
			fputs(": ", out);
		}
		put_value(out, m, a);
	}
	fputc(keyword ? '}' : ']', out);
}

static void put_node(FILE *out, const struct dt_module *m,
		     const struct dt_node *n)
{
	fputs("{\"name\": ", out);
	put_str(out, m, n->name);
	fprintf(out, ", \"op\": \"%s\", \"target\": ", node_kind_name[n->kind]);
	put_str_or_null(out, m, n->target);
	fputs(", \"line\": ", out);
	put_line(out, n->line);
	fputs(", \"args\": ", out);
	put_args(out, m, n, false);
	fputs(", \"kwargs\": ", out);
	put_args(out, m, n, true);
	fputs(", \"tensors\": [", out);
	for (int i = 0; i < n->ntensors; i++) {
		if (i)
			fputs(", ", out);
		put_tensor(out, m, dt_node_tensor(m, n, i));
	}
	fputs("], \"sharding\": ", out);
	put_sharding(out, m, dt_node_sharding(m, n));
	fputs(", \"meta\": {", out);
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *meta = &m->metas.data[n->metas + i];
		if (i)
			fputs(", ", out);
		put_str(out, m, meta->key);
		fputs(": ", out);
		put_str(out, m, meta->value);
	}
	fprintf(out, "}, \"fused\": %s",
		(n->flags & DT_NODE_FUSED) ? "true" : "false");
	if (n->kind == DT_NODE_CONSTANT) {
		const struct dt_constant *c = dt_node_constant(m, n);
		fprintf(out, ", \"data\": {\"bytes\": %llu, \"crc32\": \"%08x\"}",
			(unsigned long long)c->size, dt_crc32(c->bytes, c->size));
	}
	fputc('}', out);
}

/* Opens a top-level array member; each element then goes on its own line
 * between element_sep calls. */
static void open_array(FILE *out, const char *key, bool empty)
{
	fprintf(out, ",\n  \"%s\": [%s", key, empty ? "" : "\n    ");
}

static void element_sep(FILE *out, bool first)
{
	if (!first)
		fputs(",\n    ", out);
}

static void close_array(FILE *out, bool empty)
{
	fputs(empty ? "]" : "\n  ]", out);
}

void dt_dump_json(const struct dt_module *m, FILE *out)
{
	int minor = dt_format_minor(m);
	fputs("{\n  \"format\": \"dtopt-graph\",\n  \"version\": ", out);
	if (minor)
		fprintf(out, "1.%d,\n  \"name\": ", minor);
	else
		fputs("1,\n  \"name\": ", out);
	put_str(out, m, m->name);
	fprintf(out, ",\n  \"view\": \"%s\",\n  \"rank\": ",
		m->view == DT_VIEW_GLOBAL ? "global" : "local");
	if (m->rank >= 0)
		fprintf(out, "%d", m->rank);
	else
		fputs("null", out);
	if (m->has_topology) {
		fputs(",\n  \"topology\": ", out);
		put_topology(out, &m->topology);
	}

	open_array(out, "meshes", m->meshes.len == 0);
	for (uint32_t i = 0; i < m->meshes.len; i++) {
		element_sep(out, i == 0);
		put_mesh(out, m, &m->meshes.data[i]);
	}
	close_array(out, m->meshes.len == 0);

	open_array(out, "groups", m->groups.len == 0);
	for (uint32_t i = 0; i < m->groups.len; i++) {
		element_sep(out, i == 0);
		put_group(out, m, &m->groups.data[i]);
	}
	close_array(out, m->groups.len == 0);

	open_array(out, "nodes", m->first == 0);
	dt_foreach_node(m, id)
	{
		element_sep(out, id == m->first);
		put_node(out, m, dt_node_get(m, id));
	}
	close_array(out, m->first == 0);
	fputs("\n}\n", out);
}
