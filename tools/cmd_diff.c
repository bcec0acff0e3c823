// SPDX-License-Identifier: MIT
/* cmd_diff.c: the `diff` subcommand, a structural diff of two graphs for
 * engineers checking what a pass (fusion above all) changed: nodes matched
 * by name then by structure, the added, removed and changed ones, the
 * meshes and groups, and the per-group table of collectives before/after.
 * The matching is diff_match.c's, the differences diff_changes.c's; this
 * file prints them and is the command.
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
#include "diff.h"
#include "frontend.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define FUSED_FROM_KEY DT_META_FUSED_FROM

/* ---- printing ---- */

/* Space-separated names of the nodes a fused node replaced, or NULL when
 * `n` is not fused. */
static const char *fused_from(const struct dt_module *m,
			      const struct dt_node *n)
{
	const struct dt_meta *meta = dt_diff_find_meta(m, n, FUSED_FROM_KEY);
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
		dt_diff_print_types(m, n, f);
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

static void text_items(const dt_diff_item_vec *v, FILE *out)
{
	for (uint32_t i = 0; i < v->len; i++) {
		const struct dt_diff_item *c = &v->data[i];
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

static void text_changed(const struct dt_diff *d, uint32_t id,
			 const dt_diff_change_vec *v, FILE *out)
{
	const char *name = dt_str_get(d->b, dt_node_get(d->b, id)->name);
	if (d->how[id] == DT_DIFF_MATCH_STRUCTURE)
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
static void text_nodes(const struct dt_diff *d, const uint32_t *apos,
		       const uint32_t *aorder, uint32_t na, struct counts *k,
		       FILE *out)
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
	dt_diff_change_vec v = {0};
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
		dt_diff_changes_clear(&v);
		dt_diff_node_changes(d, id, &v);
		if (v.len || d->how[id] == DT_DIFF_MATCH_STRUCTURE) {
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
	dt_diff_changes_clear(&v);
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
	struct dt_capture c;
	print_node_line(m, n, dt_capture_open(&c));
	char *text = dt_capture_close(&c);
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
			char *name = dt_diff_printf("%.*s", (int)len, p);
			fputs(any ? ", " : "", out);
			dt_json_string(out, name);
			free(name);
			any = true;
		}
		p += len + (p[len] == ' ');
	}
	fputs("]}", out);
}

static void json_changed(const struct dt_diff *d, uint32_t id,
			 const dt_diff_change_vec *v, bool first, FILE *out)
{
	const struct dt_node *y = dt_node_get(d->b, id);
	const struct dt_node *x = dt_node_get(d->a, d->b2a[id]);
	fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", out);
	dt_json_string(out, dt_str_get(d->b, y->name));
	fputs(", \"a_name\": ", out);
	dt_json_string(out, dt_str_get(d->a, x->name));
	fprintf(out, ", \"matched_by\": \"%s\", \"changes\": [",
		d->how[id] == DT_DIFF_MATCH_STRUCTURE ? "structure" : "name");
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

static void json_items(const dt_diff_item_vec *v, const char *section,
		       const char *key, FILE *out)
{
	bool first = true;
	fprintf(out, "  \"%s\": [", key);
	for (uint32_t i = 0; i < v->len; i++) {
		const struct dt_diff_item *c = &v->data[i];
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
static void json_nodes(const struct dt_diff *d, struct counts *k, FILE *removed,
		       FILE *added, FILE *changed)
{
	dt_diff_change_vec v = {0};
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
		dt_diff_changes_clear(&v);
		dt_diff_node_changes(d, id, &v);
		if (v.len || d->how[id] == DT_DIFF_MATCH_STRUCTURE)
			json_changed(d, id, &v, k->changed++ == 0, changed);
		else
			k->unchanged++;
	}
	dt_diff_changes_clear(&v);
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
	struct dt_diff d = {0};
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
	dt_diff_match(&d, apos);

	dt_diff_item_vec items = {0};
	dt_diff_module_changes(&d, &items);

	struct dt_comm_table before = {0}, after = {0};
	struct dt_topology ta = d.a->topology, tb = d.b->topology;
	dt_cli_topology_apply(&topo_flags, &ta);
	dt_cli_topology_apply(&topo_flags, &tb);
	dt_comm_table_fill(&before, d.a, &ta);
	dt_comm_table_fill(&after, d.b, &tb);

	struct counts k = {0};
	if (json) {
		struct dt_capture cr, ca, cc;
		json_nodes(&d, &k, dt_capture_open(&cr), dt_capture_open(&ca),
			   dt_capture_open(&cc));
		char *removed = dt_capture_close(&cr),
		     *added = dt_capture_close(&ca),
		     *changed = dt_capture_close(&cc);
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
	dt_diff_items_fini(&items);
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
