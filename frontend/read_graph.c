// SPDX-License-Identifier: MIT
/* read_graph.c: the reader's value parsing and the document's header
 * elements: <dtopt-graph>, <topology>, <mesh> and <group>. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- value parsing ---- */

bool dt_rd_parse_int(const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno)
		return false;
	*out = v;
	return true;
}

bool dt_rd_parse_float(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE)
		return false;
	*out = v;
	return true;
}

bool dt_rd_parse_bool(const char *s, bool *out)
{
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0)
		*out = true;
	else if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0)
		*out = false;
	else
		return false;
	return true;
}

static bool is_list_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

bool dt_rd_parse_int_list(struct dt_rd *r, const char *s, char *bad,
			  size_t badlen)
{
	r->scratch.len = 0;
	while (*s) {
		while (is_list_space(*s))
			s++;
		if (!*s)
			break;
		const char *start = s;
		/* the common case: plain decimal digits that fit in int64 */
		bool neg = *s == '-';
		s += neg;
		uint64_t u = 0;
		const char *digits = s;
		while (*s >= '0' && *s <= '9' && s - digits < 18)
			u = u * 10 + (uint64_t)(*s++ - '0');
		if (s > digits && (!*s || is_list_space(*s))) {
			int64_t v = neg ? -(int64_t)u : (int64_t)u;
			dt_vec_push(&r->scratch, v);
			continue;
		}
		while (*s && !is_list_space(*s))
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
		if (!dt_rd_parse_int(tok, &v)) {
			snprintf(bad, badlen, "%s", tok);
			return false;
		}
		dt_vec_push(&r->scratch, v);
	}
	return true;
}

/* Tensors span at most 2^60 elements of storage, so that sizes, strides,
 * element counts and byte offsets computed from them fit in int64. */
#define MAX_ELEMENTS ((int64_t)1 << 60)

bool dt_rd_sizes_in_bounds(const int64_t *sizes, uint32_t rank)
{
	int64_t span = 1;
	for (uint32_t i = 0; i < rank; i++)
		if (__builtin_mul_overflow(span, sizes[i] > 1 ? sizes[i] : 1,
					   &span) ||
		    span > MAX_ELEMENTS)
			return false;
	return true;
}

/* ---- the header ---- */

void dt_rd_root(struct dt_rd *r)
{
	uint32_t line = r->line;
	const char *version = dt_rd_attr(r, DT_RD_A_VERSION);
	if (!version) {
		dt_rd_error(r, line,
			    "<dtopt-graph> needs a 'version' attribute");
	} else if (strcmp(version, "1") != 0) {
		int64_t minor;
		if (strncmp(version, "1.", 2) != 0 ||
		    !dt_rd_parse_int(version + 2, &minor) || minor < 1 ||
		    minor > DT_FORMAT_MINOR || version[2] == '+' ||
		    version[2] == '-' || version[2] == ' ')
			dt_rd_error(
			    r, line,
			    "unsupported format version '%s' (this dtopt "
			    "reads versions 1 to 1.%d)",
			    version, DT_FORMAT_MINOR);
		else
			r->minor = (int)minor;
	}
	const char *name = dt_rd_attr(r, DT_RD_A_NAME);
	r->m->name = dt_str_intern(r->m, name ? name : "");
	const char *view = dt_rd_attr(r, DT_RD_A_VIEW);
	if (!view || strcmp(view, "local") == 0)
		r->m->view = DT_VIEW_LOCAL;
	else if (strcmp(view, "global") == 0)
		r->m->view = DT_VIEW_GLOBAL;
	else
		dt_rd_error(r, line, "view=\"%s\": expected local or global",
			    view);
	const char *rank = dt_rd_attr(r, DT_RD_A_RANK);
	int64_t rv;
	if (rank) {
		if (!dt_rd_parse_int(rank, &rv) || rv < 0 || rv > INT32_MAX)
			dt_rd_error(r, line,
				    "rank=\"%s\": expected a rank number",
				    rank);
		else
			r->m->rank = (int32_t)rv;
	}
}

/* One attribute of <topology>: a number in [DT_TOPOLOGY_MIN,
 * DT_TOPOLOGY_MAX], unless absent. */
static void topology_number(struct dt_rd *r, enum dt_rd_attr a,
			    const char *unit, double *field)
{
	const char *text = dt_rd_attr(r, a);
	double v;
	if (!text)
		return;
	if (!dt_rd_parse_float(text, &v) ||
	    !(v >= DT_TOPOLOGY_MIN && v <= DT_TOPOLOGY_MAX))
		dt_rd_error(r, r->line,
			    "<topology> %s=\"%s\": expected a number%s%s from "
			    "%g to %g",
			    dt_rd_attr_names[a], text, *unit ? " of " : "",
			    unit, DT_TOPOLOGY_MIN, DT_TOPOLOGY_MAX);
	else
		*field = v;
}

void dt_rd_topology(struct dt_rd *r)
{
	uint32_t line = r->line;
	if (r->topology_line) {
		dt_rd_error(r, line,
			    "<topology> is given twice (first at line %u)",
			    r->topology_line);
		return;
	}
	if (r->m->meshes.len || r->m->groups.len || r->seen_node) {
		dt_rd_error(r, line,
			    "<topology> must come before the meshes, groups "
			    "and nodes");
		return;
	}
	r->topology_line = line;
	struct dt_topology *t = &r->m->topology;
	const char *dph = dt_rd_attr(r, DT_RD_A_DEVICES_PER_HOST);
	int64_t n;
	if (dph && (!dt_rd_parse_int(dph, &n) || n <= 0))
		dt_rd_error(r, line,
			    "<topology> devices-per-host=\"%s\": expected a "
			    "positive integer",
			    dph);
	else if (dph)
		t->devices_per_host = n;
	topology_number(r, DT_RD_A_BANDWIDTH, "GB/s", &t->bandwidth);
	topology_number(r, DT_RD_A_LATENCY, "µs", &t->latency);
	topology_number(r, DT_RD_A_INTER_HOST_BANDWIDTH_FACTOR, "",
			&t->inter_host_bandwidth_factor);
	topology_number(r, DT_RD_A_INTER_HOST_LATENCY, "µs",
			&t->inter_host_latency);
	topology_number(r, DT_RD_A_BASE_LATENCY, "µs", &t->base_latency);
	topology_number(r, DT_RD_A_ALL_TO_ALL_PENALTY, "µs",
			&t->all_to_all_penalty);
	topology_number(r, DT_RD_A_DEVICE_TFLOPS, "TFLOP/s",
			&t->device_tflops);
	topology_number(r, DT_RD_A_DEVICE_BANDWIDTH, "GB/s",
			&t->device_bandwidth);
	r->m->has_topology = true;
}

/* The devices="..." of mesh `mesh` (named `name`) into mesh->devices. */
static void mesh_devices(struct dt_rd *r, struct dt_mesh *mesh,
			 const char *name, const char *devices)
{
	uint32_t line = r->line;
	char bad[64];
	if (!dt_rd_parse_int_list(r, devices, bad, sizeof(bad))) {
		dt_rd_error(r, line, "mesh '%s': device '%s' is not an integer",
			    name, bad);
		return;
	}
	if (r->scratch.len != (uint32_t)mesh->size) {
		dt_rd_error(
		    r, line,
		    "mesh '%s': devices lists %u ranks, the shape has %lld",
		    name, r->scratch.len, (long long)mesh->size);
		return;
	}
	mesh->devices =
	    dt_arena_alloc(&r->m->arena, sizeof(int32_t) * (size_t)mesh->size);
	for (int64_t i = 0; i < mesh->size; i++) {
		int64_t v = r->scratch.data[i];
		if (v < 0 || v > INT32_MAX) {
			dt_rd_error(r, line,
				    "mesh '%s': device %lld is not a rank",
				    name, (long long)v);
			return;
		}
		for (int64_t k = 0; k < i; k++)
			if (mesh->devices[k] == v) {
				dt_rd_error(
				    r, line,
				    "mesh '%s': device %lld appears twice",
				    name, (long long)v);
				return;
			}
		mesh->devices[i] = (int32_t)v;
	}
}

void dt_rd_mesh(struct dt_rd *r)
{
	uint32_t line = r->line;
	if (r->seen_node) {
		dt_rd_error(r, line, "<mesh> must come before the nodes");
		return;
	}
	if (r->m->groups.len) {
		dt_rd_error(r, line, "<mesh> must come before the groups");
		return;
	}
	const char *name = dt_rd_required(r, DT_RD_A_NAME);
	const char *shape = dt_rd_required(r, DT_RD_A_SHAPE);
	const char *dims = dt_rd_required(r, DT_RD_A_DIMS);
	if (!name || !shape || !dims)
		return;
	struct dt_mesh mesh = {.name = dt_str_intern(r->m, name), .line = line};
	if (dt_module_find_mesh(r->m, mesh.name) >= 0) {
		dt_rd_error(r, line, "mesh '%s' is declared twice", name);
		return;
	}
	char bad[64];
	if (!dt_rd_parse_int_list(r, shape, bad, sizeof(bad))) {
		dt_rd_error(r, line,
			    "mesh '%s': shape token '%s' is not an integer",
			    name, bad);
		return;
	}
	if (r->scratch.len == 0 || r->scratch.len > DT_MAX_MESH_DIMS) {
		dt_rd_error(r, line,
			    "mesh '%s': a mesh has 1 to %d dims, not %u", name,
			    DT_MAX_MESH_DIMS, r->scratch.len);
		return;
	}
	mesh.ndim = (uint8_t)r->scratch.len;
	mesh.size = 1;
	for (int i = 0; i < mesh.ndim; i++) {
		mesh.shape[i] = r->scratch.data[i];
		if (mesh.shape[i] < 1 || mesh.shape[i] > (1 << 20)) {
			dt_rd_error(r, line, mesh.shape[i] < 1
				    ? "mesh '%s': dim size %lld is not positive"
				    : "mesh '%s': dim size %lld exceeds 2^20",
				    name, (long long)mesh.shape[i]);
			return;
		}
		mesh.size *= mesh.shape[i];
		if (mesh.size > (1 << 24)) {
			dt_rd_error(r, line,
				    "mesh '%s' has more than %d devices", name,
				    1 << 24);
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
				dt_rd_error(r, line,
					    "mesh '%s': dim name '%s' repeats",
					    name, t);
		mesh.dims[nd++] = s;
	}
	dt_free(dup);
	if (nd != mesh.ndim) {
		dt_rd_error(
		    r, line,
		    "mesh '%s': shape has %d dims but dims names %s than %d",
		    name, mesh.ndim, nd > mesh.ndim ? "more" : "fewer",
		    mesh.ndim);
		return;
	}
	const char *devices = dt_rd_attr(r, DT_RD_A_DEVICES);
	if (devices)
		mesh_devices(r, &mesh, name, devices);
	if (!r->failed)
		dt_vec_push(&r->m->meshes, mesh);
}

void dt_rd_group(struct dt_rd *r)
{
	uint32_t line = r->line;
	if (r->seen_node) {
		dt_rd_error(r, line, "<group> must come before the nodes");
		return;
	}
	const char *name = dt_rd_required(r, DT_RD_A_NAME);
	const char *mesh_name = dt_rd_required(r, DT_RD_A_MESH);
	const char *dims = dt_rd_required(r, DT_RD_A_DIMS);
	if (!name || !mesh_name || !dims)
		return;
	struct dt_group g = {.name = dt_str_intern(r->m, name), .line = line};
	if (dt_module_find_group(r->m, g.name) >= 0) {
		dt_rd_error(r, line, "group '%s' is declared twice", name);
		return;
	}
	const char *generated = dt_rd_attr(r, DT_RD_A_GENERATED);
	if (generated && !dt_rd_parse_bool(generated, &g.generated)) {
		dt_rd_error(
		    r, line,
		    "group '%s': generated=\"%s\": expected true or false",
		    name, generated);
		return;
	}
	int mesh = dt_module_find_mesh(r->m, dt_str_intern(r->m, mesh_name));
	if (mesh < 0) {
		dt_rd_error(r, line,
			    "group '%s' names mesh '%s', which is not declared",
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
			dt_rd_error(r, line,
				    "group '%s': mesh '%s' has no dim '%s'",
				    name, mesh_name, t);
			break;
		}
		bool repeat = false;
		for (int k = 0; k < g.ndims; k++)
			repeat |= g.dims[k] == d;
		if (repeat || g.ndims == me->ndim) {
			dt_rd_error(r, line, "group '%s': dim '%s' repeats",
				    name, t);
			break;
		}
		g.dims[g.ndims++] = (uint8_t)d;
	}
	dt_free(dup);
	if (g.ndims == 0 && !r->failed)
		dt_rd_error(r, line, "group '%s' names no mesh dims", name);
	dt_vec_push(&r->m->groups, g);
}
