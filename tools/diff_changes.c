// SPDX-License-Identifier: MIT
/* diff_changes.c: what differs between two matched nodes, and between the
 * graphs' own attributes, meshes and groups, for `dtopt diff`; each
 * difference as the texts the text form prints.
 *
 * Equivalence of a matched pair: kind, target, arguments (positional by
 * index, keywords by name; floats bitwise, any NaN equal to any NaN),
 * tensors, sharding (mesh name, placements with order, global shape) and
 * metas (in order). A structural match is a rename, hence a difference.
 * Meshes and groups are compared by name and content; a group's
 * `generated` flag is provenance, shown but not compared. The graph's
 * name, view, rank and <topology> are compared too. */
#include "diff.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- what changed in a matched pair ---- */

void dt_diff_changes_clear(dt_diff_change_vec *v)
{
	for (uint32_t i = 0; i < v->len; i++) {
		free(v->data[i].what);
		free(v->data[i].a);
		free(v->data[i].b);
	}
	v->len = 0;
}

char *dt_diff_printf(const char *fmt, ...)
{
	struct dt_capture c;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(dt_capture_open(&c), fmt, ap);
	va_end(ap);
	return dt_capture_close(&c);
}

static void change_add(dt_diff_change_vec *v, char *what, char *a, char *b)
{
	dt_vec_push(v, ((struct dt_diff_change){what, a, b}));
}

static char *arg_text(const struct dt_module *m, const struct dt_arg *x)
{
	struct dt_capture c;
	dt_print_arg(m, x, dt_capture_open(&c));
	return dt_capture_close(&c);
}

static char *args_text(const struct dt_module *m, const struct dt_node *n)
{
	struct dt_capture c;
	FILE *f = dt_capture_open(&c);
	fputc('(', f);
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *x = dt_node_arg(m, n, i);
		if (i)
			fputs(", ", f);
		if (x->name.id)
			fprintf(f, "%s=", dt_str_get(m, x->name));
		dt_print_arg(m, x, f);
	}
	fputc(')', f);
	return dt_capture_close(&c);
}

void dt_diff_print_types(const struct dt_module *m, const struct dt_node *n,
			 FILE *f)
{
	char buf[512];
	if (n->ntensors != 1)
		fputc('(', f);
	for (int i = 0; i < n->ntensors; i++) {
		dt_tensor_print(m, dt_node_tensor(m, n, i), buf, sizeof buf);
		fprintf(f, "%s%s", i ? ", " : "", buf);
	}
	if (n->ntensors != 1)
		fputc(')', f);
}

static char *types_text(const struct dt_module *m, const struct dt_node *n)
{
	struct dt_capture c;
	dt_diff_print_types(m, n, dt_capture_open(&c));
	return dt_capture_close(&c);
}

static char *tensor_text(const struct dt_module *m, const struct dt_tensor *t)
{
	char buf[512];
	dt_tensor_print(m, t, buf, sizeof buf);
	return dt_diff_printf("%s", buf);
}

/* "world[S(0) R] order(0:tp,dp) of [64, 8]", or NULL without sharding. */
static char *sharding_text(const struct dt_module *m, const struct dt_node *n)
{
	if (!dt_node_sharding(m, n))
		return NULL;
	struct dt_capture c;
	dt_print_sharding(m, n, dt_capture_open(&c));
	char *s = dt_capture_close(&c);
	const char *lead = " @ ";
	if (strncmp(s, lead, strlen(lead)) == 0)
		memmove(s, s + strlen(lead), strlen(s) - strlen(lead) + 1);
	return s;
}

static bool tensor_equal(const struct dt_diff *d, const struct dt_tensor *x,
			 const struct dt_tensor *y)
{
	return x->dtype == y->dtype &&
	       dt_diff_ints_equal(d, x->shape, y->shape) &&
	       dt_diff_ints_equal(d, x->stride, y->stride) &&
	       x->offset == y->offset;
}

static bool sharding_equal(const struct dt_diff *d, const struct dt_node *x,
			   const struct dt_node *y)
{
	const struct dt_sharding *sx = dt_node_sharding(d->a, x);
	const struct dt_sharding *sy = dt_node_sharding(d->b, y);
	if (!sx || !sy)
		return !sx && !sy;
	return dt_diff_str_equal(d, d->a->meshes.data[sx->mesh].name,
				 d->b->meshes.data[sy->mesh].name) &&
	       dt_placements_equal(&sx->placements, &sy->placements) &&
	       sx->has_global_shape == sy->has_global_shape &&
	       (!sx->has_global_shape ||
		dt_diff_ints_equal(d, sx->global_shape, sy->global_shape));
}

const struct dt_meta *dt_diff_find_meta(const struct dt_module *m,
					const struct dt_node *n,
					const char *key)
{
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *x = &m->metas.data[n->metas + i];
		if (strcmp(dt_str_get(m, x->key), key) == 0)
			return x;
	}
	return NULL;
}

static char *metas_text(const struct dt_module *m, const struct dt_node *n)
{
	struct dt_capture c;
	FILE *f = dt_capture_open(&c);
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *x = &m->metas.data[n->metas + i];
		fprintf(f, "%s%s=%s", i ? ", " : "", dt_str_get(m, x->key),
			dt_str_get(m, x->value));
	}
	return dt_capture_close(&c);
}

static void meta_changes(const struct dt_diff *d, const struct dt_node *x,
			 const struct dt_node *y, dt_diff_change_vec *out)
{
	const struct dt_module *a = d->a, *b = d->b;
	bool same = x->nmetas == y->nmetas;
	for (uint32_t i = 0; same && i < x->nmetas; i++) {
		const struct dt_meta *p = &a->metas.data[x->metas + i];
		const struct dt_meta *q = &b->metas.data[y->metas + i];
		same = dt_diff_str_equal(d, p->key, q->key) &&
		       dt_diff_str_equal(d, p->value, q->value);
	}
	if (same)
		return;
	uint32_t before = out->len;
	/* Per key (its first entry): changed or removed, then added. */
	for (uint32_t i = 0; i < x->nmetas; i++) {
		const struct dt_meta *p = &a->metas.data[x->metas + i];
		const char *key = dt_str_get(a, p->key);
		if (dt_diff_find_meta(a, x, key) != p)
			continue;
		const struct dt_meta *q = dt_diff_find_meta(b, y, key);
		if (!q || !dt_diff_str_equal(d, p->value, q->value))
			change_add(
			    out, dt_diff_printf("meta %s", key),
			    dt_diff_printf("%s", dt_str_get(a, p->value)),
			    q ? dt_diff_printf("%s", dt_str_get(b, q->value))
			      : NULL);
	}
	for (uint32_t i = 0; i < y->nmetas; i++) {
		const struct dt_meta *q = &b->metas.data[y->metas + i];
		const char *key = dt_str_get(b, q->key);
		if (dt_diff_find_meta(b, y, key) == q &&
		    !dt_diff_find_meta(a, x, key))
			change_add(
			    out, dt_diff_printf("meta %s", key), NULL,
			    dt_diff_printf("%s", dt_str_get(b, q->value)));
	}
	/* The same entries in another order, or repeated keys. */
	if (out->len == before)
		change_add(out, dt_diff_printf("metas"), metas_text(a, x),
			   metas_text(b, y));
}

static const char *kind_name(uint8_t kind)
{
	return kind == DT_NODE_PLACEHOLDER ? "placeholder"
	       : kind == DT_NODE_OUTPUT    ? "output"
	       : kind == DT_NODE_CONSTANT  ? "get_attr"
					   : "call_function";
}

/* "16 bytes, crc32 0123abcd": a constant's data, summarised. */
static char *data_text(const struct dt_module *m, const struct dt_node *n)
{
	const struct dt_constant *c = dt_node_constant(m, n);
	return dt_diff_printf("%llu bytes, crc32 %08x",
			      (unsigned long long)c->size,
			      dt_crc32(c->bytes, c->size));
}

/* A change "data" when two constants' bytes differ. */
static void constant_changes(const struct dt_module *a, const struct dt_node *x,
			     const struct dt_module *b, const struct dt_node *y,
			     dt_diff_change_vec *out)
{
	const struct dt_constant *p = dt_node_constant(a, x);
	const struct dt_constant *q = dt_node_constant(b, y);
	if (p->size != q->size || memcmp(p->bytes, q->bytes, p->size) != 0)
		change_add(out, dt_diff_printf("data"), data_text(a, x),
			   data_text(b, y));
}

/* The differences between B node `y` and its match in A, in `out`. */
void dt_diff_node_changes(const struct dt_diff *d, uint32_t y_id,
			  dt_diff_change_vec *out)
{
	const struct dt_module *a = d->a, *b = d->b;
	const struct dt_node *y = dt_node_get(b, y_id);
	const struct dt_node *x = dt_node_get(a, d->b2a[y_id]);
	if (x->kind != y->kind)
		change_add(out, dt_diff_printf("op"),
			   dt_diff_printf("%s", kind_name(x->kind)),
			   dt_diff_printf("%s", kind_name(y->kind)));
	else if (!dt_diff_str_equal(d, x->target, y->target))
		change_add(out, dt_diff_printf("target"),
			   dt_diff_printf("%s", dt_str_get(a, x->target)),
			   dt_diff_printf("%s", dt_str_get(b, y->target)));
	if (x->kind == DT_NODE_CONSTANT && y->kind == DT_NODE_CONSTANT)
		constant_changes(a, x, b, y, out);

	if (!dt_diff_args_same_shape(d, x, y)) {
		change_add(out, dt_diff_printf("args"), args_text(a, x),
			   args_text(b, y));
	} else {
		int npos = dt_diff_positional_count(b, y);
		for (int i = 0; i < y->nargs; i++) {
			const struct dt_arg *q = dt_node_arg(b, y, i);
			const struct dt_arg *p =
			    i < npos ? dt_node_arg(a, x, i)
				     : dt_diff_find_kwarg(a, x, b, q->name);
			if (dt_diff_arg_equal(d, p, q))
				continue;
			char *what =
			    i < npos ? dt_diff_printf("arg %d", i)
				     : dt_diff_printf("kwarg %s",
						      dt_str_get(b, q->name));
			change_add(out, what, arg_text(a, p), arg_text(b, q));
		}
	}

	if (x->ntensors != y->ntensors) {
		change_add(out, dt_diff_printf("tensors"),
			   x->ntensors ? types_text(a, x) : NULL,
			   y->ntensors ? types_text(b, y) : NULL);
	} else {
		for (int i = 0; i < y->ntensors; i++) {
			const struct dt_tensor *p = dt_node_tensor(a, x, i);
			const struct dt_tensor *q = dt_node_tensor(b, y, i);
			if (tensor_equal(d, p, q))
				continue;
			change_add(out,
				   y->ntensors == 1
				       ? dt_diff_printf("tensor")
				       : dt_diff_printf("tensor %d", i),
				   tensor_text(a, p), tensor_text(b, q));
		}
	}

	if (!sharding_equal(d, x, y))
		change_add(out, dt_diff_printf("sharding"), sharding_text(a, x),
			   sharding_text(b, y));
	meta_changes(d, x, y, out);
}

/* ---- meshes, groups and the graph itself ---- */

static char *mesh_text(const struct dt_module *m, const struct dt_mesh *mesh)
{
	struct dt_capture c;
	FILE *f = dt_capture_open(&c);
	fprintf(f, "(");
	for (int i = 0; i < mesh->ndim; i++)
		fprintf(f, "%s%s=%lld", i ? ", " : "",
			dt_str_get(m, mesh->dims[i]), (long long)mesh->shape[i]);
	fputc(')', f);
	bool identity = true;
	for (int64_t i = 0; mesh->devices && i < mesh->size; i++)
		identity &= mesh->devices[i] == i;
	if (!identity) {
		fputs(" devices [", f);
		for (int64_t i = 0; i < mesh->size; i++)
			fprintf(f, "%s%d", i ? " " : "", mesh->devices[i]);
		fputc(']', f);
	}
	return dt_capture_close(&c);
}

/* "world[tp dp] size 128": what a group is; `generated` aside. */
static char *group_text(const struct dt_module *m, const struct dt_group *g)
{
	const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
	struct dt_capture c;
	FILE *f = dt_capture_open(&c);
	fprintf(f, "%s[", dt_str_get(m, mesh->name));
	for (int i = 0; i < g->ndims; i++)
		fprintf(f, "%s%s", i ? " " : "",
			dt_str_get(m, mesh->dims[g->dims[i]]));
	fprintf(f, "] size %lld",
		(long long)dt_group_size(mesh, g->dims, g->ndims));
	return dt_capture_close(&c);
}

static int find_group_named(const struct dt_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->groups.len; i++)
		if (strcmp(dt_str_get(m, m->groups.data[i].name), name) == 0)
			return (int)i;
	return -1;
}

static int find_mesh_named(const struct dt_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->meshes.len; i++)
		if (strcmp(dt_str_get(m, m->meshes.data[i].name), name) == 0)
			return (int)i;
	return -1;
}

static void item_add(dt_diff_item_vec *v, const char *section, char *name,
		     char *a, char *b)
{
	if (a && b && strcmp(a, b) == 0) {
		free(name);
		free(a);
		free(b);
		return;
	}
	dt_vec_push(v,
		    ((struct dt_diff_item){section, name, a, b, false, false}));
}

static char *rank_text(int32_t rank)
{
	return rank < 0 ? NULL : dt_diff_printf("%d", rank);
}

/* The <topology> as its attributes, or NULL when the graph has none. */
static char *topology_text(const struct dt_module *m)
{
	if (!m->has_topology)
		return NULL;
	const struct dt_topology *t = &m->topology;
	const struct {
		const char *name;
		double value;
	} fields[] = {
		{"bandwidth", t->bandwidth},
		{"latency", t->latency},
		{"inter-host-bandwidth-factor", t->inter_host_bandwidth_factor},
		{"inter-host-latency", t->inter_host_latency},
		{"base-latency", t->base_latency},
		{"all-to-all-penalty", t->all_to_all_penalty},
	};
	struct dt_capture c;
	FILE *f = dt_capture_open(&c);
	fprintf(f, "devices-per-host=%lld", (long long)t->devices_per_host);
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		char buf[40];
		dt_format_double(fields[i].value, buf, sizeof buf);
		fprintf(f, " %s=%s", fields[i].name, buf);
	}
	return dt_capture_close(&c);
}

void dt_diff_module_changes(const struct dt_diff *d, dt_diff_item_vec *out)
{
	const struct dt_module *a = d->a, *b = d->b;
	item_add(out, "graph", dt_diff_printf("name"),
		 dt_diff_printf("%s", dt_str_get(a, a->name)),
		 dt_diff_printf("%s", dt_str_get(b, b->name)));
	item_add(
	    out, "graph", dt_diff_printf("view"),
	    dt_diff_printf(a->view == DT_VIEW_GLOBAL ? "global" : "local"),
	    dt_diff_printf(b->view == DT_VIEW_GLOBAL ? "global" : "local"));
	if (a->rank != b->rank)
		item_add(out, "graph", dt_diff_printf("rank"),
			 rank_text(a->rank), rank_text(b->rank));
	char *ta = topology_text(a), *tb = topology_text(b);
	if (ta || tb)
		item_add(out, "graph", dt_diff_printf("topology"), ta, tb);

	/* Removed ones first (A's order), then B's in order. */
	for (uint32_t i = 0; i < a->meshes.len; i++) {
		const struct dt_mesh *mesh = &a->meshes.data[i];
		const char *name = dt_str_get(a, mesh->name);
		if (find_mesh_named(b, name) < 0)
			item_add(out, "mesh", dt_diff_printf("%s", name),
				 mesh_text(a, mesh), NULL);
	}
	for (uint32_t i = 0; i < b->meshes.len; i++) {
		const struct dt_mesh *mesh = &b->meshes.data[i];
		const char *name = dt_str_get(b, mesh->name);
		int k = find_mesh_named(a, name);
		item_add(out, "mesh", dt_diff_printf("%s", name),
			 k < 0 ? NULL : mesh_text(a, &a->meshes.data[k]),
			 mesh_text(b, mesh));
	}
	for (uint32_t i = 0; i < a->groups.len; i++) {
		const struct dt_group *g = &a->groups.data[i];
		const char *name = dt_str_get(a, g->name);
		if (find_group_named(b, name) < 0) {
			item_add(out, "group", dt_diff_printf("%s", name),
				 group_text(a, g), NULL);
			out->data[out->len - 1].a_generated = g->generated;
		}
	}
	for (uint32_t i = 0; i < b->groups.len; i++) {
		const struct dt_group *g = &b->groups.data[i];
		const char *name = dt_str_get(b, g->name);
		int k = find_group_named(a, name);
		uint32_t len = out->len;
		item_add(out, "group", dt_diff_printf("%s", name),
			 k < 0 ? NULL : group_text(a, &a->groups.data[k]),
			 group_text(b, g));
		if (out->len > len) {
			out->data[len].a_generated =
				k >= 0 && a->groups.data[k].generated;
			out->data[len].b_generated = g->generated;
		}
	}
}

void dt_diff_items_fini(dt_diff_item_vec *v)
{
	for (uint32_t i = 0; i < v->len; i++) {
		free(v->data[i].name);
		free(v->data[i].a);
		free(v->data[i].b);
	}
	dt_vec_free(v);
}
