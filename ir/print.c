// SPDX-License-Identifier: MIT
/* print.c: the text dump, in the style of FX print_readable, with dtype,
 * shape, stride, placements and the XML line of every node. */
#include "ir.h"

#include <string.h>

static const char *short_dtype[] = {"f32", "f16", "bf16", "f64", "i64",
				    "i32", "i16", "i8",  "u8",  "b8"};

int dt_tensor_print(const struct dt_module *m, const struct dt_tensor *t,
		    char *buf, size_t n)
{
	size_t at = 0;
#define APPEND(...)                                                        \
	do {                                                               \
		int k = snprintf(buf + at, at < n ? n - at : 0, __VA_ARGS__); \
		at += k > 0 ? (size_t)k : 0;                               \
	} while (0)
	int rank;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	const int64_t *stride = dt_ints_get(m, t->stride, NULL);
	APPEND("%s[", short_dtype[t->dtype]);
	for (int i = 0; i < rank; i++)
		APPEND("%s%lld", i ? ", " : "", (long long)shape[i]);
	APPEND("]{");
	for (int i = 0; i < rank; i++)
		APPEND("%s%lld", i ? ", " : "", (long long)stride[i]);
	APPEND("}");
	if (t->offset)
		APPEND("+%lld", (long long)t->offset);
#undef APPEND
	return (int)at;
}

static void print_type(const struct dt_module *m, const struct dt_node *n,
		       FILE *out)
{
	char buf[512];
	if (n->ntensors == 0)
		return;
	fputs(": \"", out);
	if (n->ntensors > 1)
		fputc('(', out);
	for (int i = 0; i < n->ntensors; i++) {
		dt_tensor_print(m, dt_node_tensor(m, n, i), buf, sizeof(buf));
		fprintf(out, "%s%s", i ? ", " : "", buf);
	}
	if (n->ntensors > 1)
		fputc(')', out);
	fputc('"', out);
}

static void print_scalar(const struct dt_module *m, const struct dt_arg *a,
			 FILE *out)
{
	char buf[40];
	switch ((enum dt_arg_kind)a->kind) {
	case DT_ARG_NODE:
		fputs(dt_str_get(m, dt_node_get(m, a->v.node)->name), out);
		break;
	case DT_ARG_INT:
		fprintf(out, "%lld", (long long)a->v.i);
		break;
	case DT_ARG_FLOAT:
		dt_format_double(a->v.f, buf, sizeof(buf));
		fputs(buf, out);
		break;
	case DT_ARG_BOOL:
		fputs(a->v.b ? "True" : "False", out);
		break;
	case DT_ARG_STR:
		fprintf(out, "'%s'", dt_str_get(m, a->v.s));
		break;
	case DT_ARG_DTYPE:
		fprintf(out, "torch.%s", dt_dtype_name((enum dt_dtype)a->v.dtype));
		break;
	case DT_ARG_NONE:
		fputs("None", out);
		break;
	default:
		DT_REQUIRE(!"not a scalar arg");
	}
}

void dt_print_arg(const struct dt_module *m, const struct dt_arg *a, FILE *out)
{
	char buf[40];
	int n;
	switch ((enum dt_arg_kind)a->kind) {
	case DT_ARG_NODES:
		fputc('[', out);
		for (uint32_t i = 0; i < a->len; i++)
			fprintf(out, "%s%s", i ? ", " : "",
				dt_str_get(m, dt_node_get(m, m->refs.data[a->v.first + i])->name));
		fputc(']', out);
		break;
	case DT_ARG_INTS: {
		const int64_t *v = dt_ints_get(m, a->v.ints, &n);
		fputc('[', out);
		for (int i = 0; i < n; i++)
			fprintf(out, "%s%lld", i ? ", " : "", (long long)v[i]);
		fputc(']', out);
		break;
	}
	case DT_ARG_FLOATS:
		fputc('[', out);
		for (uint32_t i = 0; i < a->len; i++) {
			dt_format_double(m->floats.data[a->v.first + i], buf,
					 sizeof(buf));
			fprintf(out, "%s%s", i ? ", " : "", buf);
		}
		fputc(']', out);
		break;
	case DT_ARG_ITEMS:
		fputc('[', out);
		for (uint32_t i = 0; i < a->len; i++) {
			if (i)
				fputs(", ", out);
			print_scalar(m, &m->args.data[a->v.first + i], out);
		}
		fputc(']', out);
		break;
	default:
		print_scalar(m, a, out);
	}
}

void dt_print_sharding(const struct dt_module *m, const struct dt_node *n,
		       FILE *out)
{
	const struct dt_sharding *s = dt_node_sharding(m, n);
	if (!s)
		return;
	char buf[512];
	dt_placements_print(&s->placements, buf, sizeof(buf));
	fprintf(out, " @ %s[%s]", dt_str_get(m, m->meshes.data[s->mesh].name),
		buf);
	if (!dt_placements_has_default_order(&s->placements)) {
		dt_placements_print_order(&s->placements,
					  &m->meshes.data[s->mesh], &m->strings,
					  buf, sizeof(buf));
		fprintf(out, " order(%s)", buf);
	}
	if (s->has_global_shape) {
		int r;
		const int64_t *g = dt_ints_get(m, s->global_shape, &r);
		fputs(" of [", out);
		for (int i = 0; i < r; i++)
			fprintf(out, "%s%lld", i ? ", " : "", (long long)g[i]);
		fputc(']', out);
	}
}

void dt_print_call(const struct dt_module *m, const struct dt_node *n,
		   FILE *out)
{
	if (n->kind == DT_NODE_PLACEHOLDER) {
		fputs("placeholder", out);
		return;
	}
	if (n->kind == DT_NODE_CONSTANT) {
		const struct dt_constant *c = dt_node_constant(m, n);
		fprintf(out, "get_attr '%s' (%llu bytes, crc32 %08x)",
			dt_str_get(m, n->target), (unsigned long long)c->size,
			dt_crc32(c->bytes, c->size));
		return;
	}
	if (n->kind == DT_NODE_OUTPUT) {
		fputs("return ", out);
		for (int i = 0; i < n->nargs; i++)
			dt_print_arg(m, dt_node_arg(m, n, i), out);
		return;
	}
	fprintf(out, "%s(", dt_str_get(m, n->target));
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, i);
		if (i)
			fputs(", ", out);
		if (a->name.id)
			fprintf(out, "%s=", dt_str_get(m, a->name));
		dt_print_arg(m, a, out);
	}
	fputc(')', out);
}

static void print_trailer(const struct dt_module *m, const struct dt_node *n,
			  FILE *out)
{
	if (n->line)
		fprintf(out, "  # line %u", n->line);
	else
		fputs("  # new", out);
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *meta = &m->metas.data[n->metas + i];
		fprintf(out, "%s%s=%s", i ? ", " : " {",
			dt_str_get(m, meta->key), dt_str_get(m, meta->value));
	}
	if (n->nmetas)
		fputc('}', out);
	fputc('\n', out);
}

/* The <topology>, when the graph gives one, with its units. */
static void print_topology(const struct dt_module *m, FILE *out)
{
	const struct dt_topology *t = &m->topology;
	if (!m->has_topology)
		return;
	fprintf(out,
		"# topology devices-per-host=%lld, bandwidth=%g GB/s, "
		"latency=%g µs, inter-host-bandwidth-factor=%g, "
		"inter-host-latency=%g µs, base-latency=%g µs, "
		"all-to-all-penalty=%g µs, device-tflops=%g, "
		"device-bandwidth=%g GB/s\n",
		(long long)t->devices_per_host, t->bandwidth, t->latency,
		t->inter_host_bandwidth_factor, t->inter_host_latency,
		t->base_latency, t->all_to_all_penalty, t->device_tflops,
		t->device_bandwidth);
}

static void print_groups(const struct dt_module *m, FILE *out)
{
	for (uint32_t i = 0; i < m->meshes.len; i++) {
		const struct dt_mesh *mesh = &m->meshes.data[i];
		fprintf(out, "# mesh %s (", dt_str_get(m, mesh->name));
		for (int d = 0; d < mesh->ndim; d++)
			fprintf(out, "%s%s=%lld", d ? ", " : "",
				dt_str_get(m, mesh->dims[d]),
				(long long)mesh->shape[d]);
		fprintf(out, ")%s\n", mesh->devices ? " with a device list" : "");
	}
	for (uint32_t i = 0; i < m->groups.len; i++) {
		const struct dt_group *g = &m->groups.data[i];
		const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
		fprintf(out, "# group %s = %s[", dt_str_get(m, g->name),
			dt_str_get(m, mesh->name));
		for (int d = 0; d < g->ndims; d++)
			fprintf(out, "%s%s", d ? " " : "",
				dt_str_get(m, mesh->dims[g->dims[d]]));
		fprintf(out, "] size %lld%s\n",
			(long long)dt_group_size(mesh, g->dims, g->ndims),
			g->generated ? " (created by dtopt)" : "");
	}
}

void dt_print_text(const struct dt_module *m, FILE *out)
{
	fprintf(out, "# graph \"%s\" view=%s", dt_str_get(m, m->name),
		m->view == DT_VIEW_GLOBAL ? "global" : "local");
	if (m->rank >= 0)
		fprintf(out, " rank=%d", m->rank);
	fputc('\n', out);
	print_topology(m, out);
	print_groups(m, out);
	fputs("def forward(", out);
	bool first = true;
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_PLACEHOLDER)
			continue;
		fprintf(out, "%s%s", first ? "" : ", ", dt_str_get(m, n->name));
		first = false;
	}
	fputs("):\n", out);
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		fputs("    ", out);
		if (n->kind == DT_NODE_OUTPUT) {
			dt_print_call(m, n, out);
			print_trailer(m, n, out);
			continue;
		}
		fputs(dt_str_get(m, n->name), out);
		print_type(m, n, out);
		fputs(" = ", out);
		dt_print_call(m, n, out);
		dt_print_sharding(m, n, out);
		print_trailer(m, n, out);
	}
}

void dt_int_list_print(const int64_t *v, int n, char *buf, size_t size)
{
	size_t at = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%s%lld",
				       i ? ", " : "", (long long)v[i]);
	if (at < size)
		snprintf(buf + at, size - at, "]");
}
