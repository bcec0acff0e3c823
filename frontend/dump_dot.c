// SPDX-License-Identifier: MIT
/* dump_dot.c: the Graphviz dump: one box per node, data-flow edges,
 * collectives and their waits filled by process group, fused nodes
 * highlighted, and a legend of the groups. */
#include "frontend.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>

/* Fill colours of groups, by group index modulo the count (ColorBrewer
 * Set3: light enough for black text, distinct enough side by side). */
static const char *const group_palette[] = {
	"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
	"#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
};
#define NPALETTE (sizeof(group_palette) / sizeof(group_palette[0]))
#define UNDECLARED_FILL "#eeeeee" /* a collective naming no declared group */
#define FUSED_COLOR "#d62728"

static const char *const short_dtype[] = {"f32", "f16", "bf16", "f64", "i64",
					  "i32", "i16", "i8",  "u8",  "b8"};

#define TEXT_MAX 2048  /* a whole label or tooltip */
#define ARGS_MAX 80    /* the op line; longer ones end in "..." */

/* A bounded text buffer: appends past the end are dropped (labels are for
 * reading, so a cut is better than a huge node). */
struct text {
	char buf[TEXT_MAX];
	size_t len;
};

static void text_printf(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void text_printf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	if (k > 0)
		t->len += (size_t)k;
	if (t->len >= sizeof(t->buf))
		t->len = sizeof(t->buf) - 1;
}

/* Cut `t` to at most `max` bytes ending in "...", never inside a UTF-8
 * sequence. */
static void text_clip(struct text *t, size_t max)
{
	if (t->len <= max)
		return;
	size_t at = max - 3;
	while (at > 0 && ((unsigned char)t->buf[at] & 0xc0) == 0x80)
		at--;
	memcpy(t->buf + at, "...", 4);
	t->len = at + 3;
}

/* Write `s` as a quoted dot string. Backslash and quote are escaped; a
 * newline becomes dot's centred line break; other control characters
 * become spaces (dot has no escape for them). */
static void put_quoted(FILE *out, const char *s, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			fputc('\\', out);
			fputc(c, out);
		} else if (c == '\n') {
			fputs("\\n", out);
		} else if (c < 0x20 || c == 0x7f) {
			fputc(' ', out);
		} else {
			fputc(c, out);
		}
	}
	fputc('"', out);
}

static void put_text(FILE *out, const struct text *t)
{
	put_quoted(out, t->buf, t->len);
}

static const char *str(const struct dt_module *m, dt_str s)
{
	return dt_str_get(m, s);
}

static const char *node_name(const struct dt_module *m, uint32_t id)
{
	return str(m, dt_node_get(m, id)->name);
}

/* ---- what a node is ---- */

static bool node_has(const struct dt_node *n, uint32_t flag)
{
	return n->kind == DT_NODE_CALL && n->op != DT_OP_UNKNOWN &&
	       dt_op_has((enum dt_op)n->op, flag);
}

/* The op's name for a label: the table's short name, or for targets not in
 * the table the target without namespace and overload
 * ("aten.mm.default" -> "mm", "operator.getitem" -> "getitem"). */
static void put_op_name(struct text *t, const struct dt_module *m,
			const struct dt_node *n)
{
	if (n->op != DT_OP_UNKNOWN && dt_op_get((enum dt_op)n->op)->name) {
		text_printf(t, "%s", dt_op_get((enum dt_op)n->op)->name);
		return;
	}
	const char *s = str(m, n->target);
	const char *dot1 = strchr(s, '.');
	if (!dot1) {
		text_printf(t, "%s", s);
		return;
	}
	const char *rest = dot1 + 1;
	const char *dot2 = strchr(rest, '.');
	text_printf(t, "%.*s", dot2 ? (int)(dot2 - rest) : (int)strlen(rest),
		    rest);
}

/* The first node an arg list references (the tensor input), or 0. */
static uint32_t first_input(const struct dt_module *m, const struct dt_node *n)
{
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, i);
		if (a->kind == DT_ARG_NODE)
			return a->v.node;
	}
	return 0;
}

/* The group_name argument of a collective: the keyword, else the
 * positional one at the schema's position, else the last positional
 * string. NULL when there is none. */
static const struct dt_arg *group_arg(const struct dt_module *m,
				      const struct dt_node *n)
{
	const struct dt_arg *last_str = NULL;
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, i);
		if (a->kind != DT_ARG_STR)
			continue;
		if (a->name.id && strcmp(str(m, a->name), "group_name") == 0)
			return a;
		if (!a->name.id)
			last_str = a;
	}
	const struct dt_op_info *info = dt_op_get((enum dt_op)n->op);
	for (int p = 0; p < info->nparams && p < n->nargs; p++) {
		const struct dt_arg *a = dt_node_arg(m, n, p);
		if (strcmp(info->params[p].name, "group_name") == 0 &&
		    !a->name.id && a->kind == DT_ARG_STR)
			return a;
	}
	return last_str;
}

/* The group a collective runs on, or that the collective a wait completes
 * runs on (through getitems). Stores the group name in *name (NULL when
 * the node is neither) and returns the group's index, or -1 when the name
 * is not a declared group. */
static int node_group(const struct dt_module *m, const struct dt_node *n,
		      const char **name)
{
	*name = NULL;
	if (node_has(n, DT_OPF_WAIT)) {
		uint32_t src = first_input(m, n);
		while (src && dt_node_get(m, src)->op == DT_OP_GETITEM)
			src = first_input(m, dt_node_get(m, src));
		if (!src)
			return -1;
		n = dt_node_get(m, src);
	}
	if (!node_has(n, DT_OPF_COLLECTIVE))
		return -1;
	const struct dt_arg *a = group_arg(m, n);
	if (!a)
		return -1;
	*name = str(m, a->v.s);
	return dt_module_find_group(m, a->v.s);
}

/* ---- labels ---- */

static void put_double(struct text *t, double v)
{
	char buf[40];
	dt_format_double(v, buf, sizeof(buf));
	text_printf(t, "%s", buf);
}

/* One scalar value as Python would print it; nodes by name. */
static void put_scalar(struct text *t, const struct dt_module *m,
		       const struct dt_arg *a)
{
	switch ((enum dt_arg_kind)a->kind) {
	case DT_ARG_NODE: text_printf(t, "%s", node_name(m, a->v.node)); break;
	case DT_ARG_INT: text_printf(t, "%lld", (long long)a->v.i); break;
	case DT_ARG_FLOAT: put_double(t, a->v.f); break;
	case DT_ARG_BOOL: text_printf(t, a->v.b ? "True" : "False"); break;
	case DT_ARG_STR: text_printf(t, "'%s'", str(m, a->v.s)); break;
	case DT_ARG_DTYPE:
		text_printf(t, "%s", dt_dtype_name((enum dt_dtype)a->v.dtype));
		break;
	case DT_ARG_NONE: text_printf(t, "None"); break;
	default: text_printf(t, "?"); break;
	}
}

/* A non-node arg; lists in brackets unless `bare`. */
static void put_value(struct text *t, const struct dt_module *m,
		      const struct dt_arg *a, bool bare)
{
	int n;
	const char *open = bare ? "" : "[", *close = bare ? "" : "]";
	switch ((enum dt_arg_kind)a->kind) {
	case DT_ARG_INTS: {
		const int64_t *v = dt_ints_get(m, a->v.ints, &n);
		text_printf(t, "%s", open);
		for (int i = 0; i < n; i++)
			text_printf(t, "%s%lld", i ? ", " : "", (long long)v[i]);
		text_printf(t, "%s", close);
		break;
	}
	case DT_ARG_FLOATS:
		text_printf(t, "%s", open);
		for (uint32_t i = 0; i < a->len; i++) {
			text_printf(t, "%s", i ? ", " : "");
			put_double(t, m->floats.data[a->v.first + i]);
		}
		text_printf(t, "%s", close);
		break;
	case DT_ARG_ITEMS:
		text_printf(t, "%s", open);
		for (uint32_t i = 0; i < a->len; i++) {
			text_printf(t, "%s", i ? ", " : "");
			put_scalar(t, m, &m->args.data[a->v.first + i]);
		}
		text_printf(t, "%s", close);
		break;
	default:
		put_scalar(t, m, a);
	}
}

static bool is_edge_arg(const struct dt_arg *a)
{
	return a->kind == DT_ARG_NODE || a->kind == DT_ARG_NODES;
}

/* "permute(1, 0)": the op with its non-tensor args (tensors are edges), or
 * the bare op name when it has none. A lone positional list is written
 * without brackets. */
static void put_op_line(struct text *t, const struct dt_module *m,
			const struct dt_node *n)
{
	struct text line = {.len = 0};
	int shown = 0;
	for (int i = 0; i < n->nargs; i++)
		shown += !is_edge_arg(dt_node_arg(m, n, i));
	put_op_name(&line, m, n);
	if (shown)
		text_printf(&line, "(");
	bool first = true;
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, i);
		if (is_edge_arg(a))
			continue;
		text_printf(&line, "%s", first ? "" : ", ");
		first = false;
		if (a->name.id)
			text_printf(&line, "%s=", str(m, a->name));
		put_value(&line, m, a, shown == 1 && !a->name.id);
	}
	if (shown)
		text_printf(&line, ")");
	text_clip(&line, ARGS_MAX);
	text_printf(t, "\n%s", line.buf);
}

/* "f32[512, 4096]", several results in parentheses. */
static void put_types(struct text *t, const struct dt_module *m,
		      const struct dt_node *n)
{
	if (n->ntensors == 0)
		return;
	text_printf(t, "\n%s", n->ntensors > 1 ? "(" : "");
	for (int i = 0; i < n->ntensors; i++) {
		const struct dt_tensor *ten = dt_node_tensor(m, n, i);
		int rank;
		const int64_t *shape = dt_ints_get(m, ten->shape, &rank);
		text_printf(t, "%s%s[", i ? ", " : "",
			    ten->dtype < DT_NDTYPES ? short_dtype[ten->dtype]
						    : "?");
		for (int d = 0; d < rank; d++)
			text_printf(t, "%s%lld", d ? ", " : "",
				    (long long)shape[d]);
		text_printf(t, "]");
	}
	text_printf(t, "%s", n->ntensors > 1 ? ")" : "");
}

/* "world: S(0) R", with a non-default order and the global shape. */
static void put_placements(struct text *t, const struct dt_module *m,
			   const struct dt_node *n)
{
	const struct dt_sharding *s = dt_node_sharding(m, n);
	if (!s)
		return;
	const struct dt_mesh *mesh = &m->meshes.data[s->mesh];
	char buf[512];
	dt_placements_print(&s->placements, buf, sizeof(buf));
	text_printf(t, "\n%s: %s", str(m, mesh->name), buf);
	if (!dt_placements_has_default_order(&s->placements)) {
		dt_placements_print_order(&s->placements, mesh, &m->strings,
					  buf, sizeof(buf));
		text_printf(t, " order %s", buf);
	}
	if (s->has_global_shape) {
		int r;
		const int64_t *g = dt_ints_get(m, s->global_shape, &r);
		text_printf(t, " of [");
		for (int i = 0; i < r; i++)
			text_printf(t, "%s%lld", i ? ", " : "", (long long)g[i]);
		text_printf(t, "]");
	}
}

/* "fused from ag_7, ag_8" from the dtopt.fused_from meta ("ag_7 ag_8"). */
static void put_fused(struct text *t, const struct dt_module *m,
		      const struct dt_node *n)
{
	const struct dt_meta *meta = dt_node_meta(m, n, DT_META_FUSED_FROM);
	text_printf(t, "\nfused");
	if (!meta)
		return;
	const char *s = str(m, meta->value);
	bool first = true;
	while (*s) {
		while (isspace((unsigned char)*s))
			s++;
		size_t len = 0;
		while (s[len] && !isspace((unsigned char)s[len]))
			len++;
		if (len) {
			text_printf(t, "%s%.*s", first ? " from " : ", ",
				    (int)len, s);
			first = false;
		}
		s += len;
	}
}

static void put_label(struct text *t, const struct dt_module *m,
		      const struct dt_node *n, const char *group)
{
	text_printf(t, "%s", str(m, n->name));
	if (n->kind == DT_NODE_CALL)
		put_op_line(t, m, n);
	put_types(t, m, n);
	put_placements(t, m, n);
	if (group)
		text_printf(t, "\ngroup %s", group);
	if (n->flags & DT_NODE_FUSED)
		put_fused(t, m, n);
}

/* The tooltip (shown on hover in SVG): target, source line and metadata. */
static void put_tooltip(struct text *t, const struct dt_module *m,
			const struct dt_node *n)
{
	if (n->kind == DT_NODE_CONSTANT)
		text_printf(t, "get_attr '%s' (%llu bytes, crc32 %08x)\n",
			    str(m, n->target),
			    (unsigned long long)dt_node_constant(m, n)->size,
			    dt_crc32(dt_node_constant(m, n)->bytes,
				     dt_node_constant(m, n)->size));
	else if (n->target.id)
		text_printf(t, "%s\n", str(m, n->target));
	if (n->line)
		text_printf(t, "line %u", n->line);
	else
		text_printf(t, "created by a pass");
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *meta = &m->metas.data[n->metas + i];
		text_printf(t, "\n%s: %s", str(m, meta->key),
			    str(m, meta->value));
	}
}

/* ---- the graph ---- */

static void dump_node(FILE *out, const struct dt_module *m, uint32_t id)
{
	const struct dt_node *n = dt_node_get(m, id);
	const char *group = NULL;
	int g = node_group(m, n, &group);
	struct text t = {.len = 0};
	put_label(&t, m, n, group);
	fprintf(out, "  n%u [label=", id);
	put_text(out, &t);
	t.len = 0;
	t.buf[0] = 0;
	put_tooltip(&t, m, n);
	fputs(", tooltip=", out);
	put_text(out, &t);
	if (n->kind == DT_NODE_PLACEHOLDER)
		fputs(", shape=invhouse, style=filled, fillcolor=\"#e8f0ff\"",
		      out);
	else if (n->kind == DT_NODE_OUTPUT)
		fputs(", shape=doubleoctagon, style=filled, fillcolor=\"#e8ffe8\"",
		      out);
	else if (n->kind == DT_NODE_CONSTANT)
		fputs(", shape=cylinder, style=filled, fillcolor=\"#fff4e0\"",
		      out);
	if (group)
		fprintf(out, ", fillcolor=\"%s\"",
			g >= 0 ? group_palette[(size_t)g % NPALETTE]
			       : UNDECLARED_FILL);
	if (node_has(n, DT_OPF_WAIT) && group)
		fputs(", style=\"rounded,filled,dashed\"", out);
	if (n->flags & DT_NODE_FUSED)
		fputs(", penwidth=3, color=\"" FUSED_COLOR "\", fontcolor=\""
		      FUSED_COLOR "\"", out);
	fputs("];\n", out);
}

/* An edge from `src` into `dst`, labelled (getitem index, keyword) when
 * `label` is not empty. */
static void dump_edge(FILE *out, uint32_t src, uint32_t dst, const char *label)
{
	fprintf(out, "  n%u -> n%u", src, dst);
	if (*label) {
		fputs(" [label=", out);
		put_quoted(out, label, strlen(label));
		fputc(']', out);
	}
	fputs(";\n", out);
}

static void dump_edges(FILE *out, const struct dt_module *m, uint32_t id)
{
	const struct dt_node *n = dt_node_get(m, id);
	char index[32] = "";
	if (n->op == DT_OP_GETITEM && n->nargs >= 2 &&
	    dt_node_arg(m, n, 1)->kind == DT_ARG_INT)
		snprintf(index, sizeof(index), "[%lld]",
			 (long long)dt_node_arg(m, n, 1)->v.i);
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, i);
		const char *label = a->name.id ? str(m, a->name) : index;
		switch ((enum dt_arg_kind)a->kind) {
		case DT_ARG_NODE:
			dump_edge(out, a->v.node, id, label);
			break;
		case DT_ARG_NODES:
			for (uint32_t k = 0; k < a->len; k++)
				dump_edge(out, m->refs.data[a->v.first + k], id,
					  label);
			break;
		case DT_ARG_ITEMS:
			for (uint32_t k = 0; k < a->len; k++) {
				const struct dt_arg *it =
					&m->args.data[a->v.first + k];
				if (it->kind == DT_ARG_NODE)
					dump_edge(out, it->v.node, id, label);
			}
			break;
		default:
			break;
		}
	}
}

/* The legend: one box per group in its colour, with mesh dims and size. */
static void dump_legend(FILE *out, const struct dt_module *m, bool any_fused)
{
	if (m->groups.len == 0 && !any_fused)
		return;
	fputs("  subgraph cluster_legend {\n"
	      "    label=\"legend\"; style=dashed; color=gray50;\n", out);
	for (uint32_t i = 0; i < m->groups.len; i++) {
		const struct dt_group *g = &m->groups.data[i];
		const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
		struct text t = {.len = 0};
		text_printf(&t, "group %s\n%s[", str(m, g->name),
			    str(m, mesh->name));
		for (int d = 0; d < g->ndims; d++)
			text_printf(&t, "%s%s", d ? " " : "",
				    str(m, mesh->dims[g->dims[d]]));
		text_printf(&t, "] size %lld%s",
			    (long long)dt_group_size(mesh, g->dims, g->ndims),
			    g->generated ? "\ncreated by dtopt" : "");
		fprintf(out, "    g%u [label=", i);
		put_text(out, &t);
		fprintf(out, ", fillcolor=\"%s\"];\n",
			group_palette[i % NPALETTE]);
	}
	if (any_fused)
		fputs("    fused_key [label=\"fused node\", penwidth=3, color=\""
		      FUSED_COLOR "\", fontcolor=\"" FUSED_COLOR
		      "\", fillcolor=white];\n", out);
	/* Stack the entries vertically. */
	for (uint32_t i = 1; i < m->groups.len; i++)
		fprintf(out, "    g%u -> g%u [style=invis];\n", i - 1, i);
	if (any_fused && m->groups.len)
		fprintf(out, "    g%u -> fused_key [style=invis];\n",
			m->groups.len - 1);
	fputs("  }\n", out);
}

void dt_dump_dot(const struct dt_module *m, FILE *out)
{
	const char *name = str(m, m->name);
	fputs("digraph ", out);
	put_quoted(out, name, strlen(name));
	fputs(" {\n", out);
	struct text t = {.len = 0};
	text_printf(&t, "%s (%s view", name,
		    m->view == DT_VIEW_GLOBAL ? "global" : "local");
	if (m->rank >= 0)
		text_printf(&t, ", rank %d", m->rank);
	text_printf(&t, ")");
	fputs("  graph [rankdir=TB, labelloc=t, fontname=\"Helvetica\", label=",
	      out);
	put_text(out, &t);
	fputs("];\n"
	      "  node [shape=box, style=\"rounded,filled\", fillcolor=white, "
	      "fontname=\"Helvetica\", fontsize=10];\n"
	      "  edge [fontname=\"Helvetica\", fontsize=9];\n", out);
	bool any_fused = false;
	dt_foreach_node(m, id)
	{
		dump_node(out, m, id);
		any_fused |= (dt_node_get(m, id)->flags & DT_NODE_FUSED) != 0;
	}
	dt_foreach_node(m, id) dump_edges(out, m, id);
	dump_legend(out, m, any_fused);
	fputs("}\n", out);
}
