// SPDX-License-Identifier: MIT
/* cmd_plan.c: the `plan` subcommand, a debugging window on the
 * redistribution planner (redistribute/redistribute.h): for a tensor on a mesh
 * given on the command line, print the steps DTensor takes from SRC to DST
 * placements (merged onto the --group groups), with their groups, bytes and
 * modelled times, as a table or as JSON. */
#include "cli.h"
#include "frontend.h"
#include "redistribute.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_CMD "plan"
#define MAX_GROUPS 64
#define MAX_PRINTED_RANKS 64 /* per-rank lengths are listed up to this */

static const char plan_help_head[] =
	"usage: dtopt plan --mesh SHAPE[:NAMES] --shape LENGTHS [options] SRC DST\n"
	"\n"
	"Plan how a tensor moves from SRC to DST placements (one token per mesh\n"
	"dim: R, S(d), _S(d,sf), P(sum|avg|max|min)) as DTensor does: its greedy\n"
	"plan for default shard orders, its min-cost plan when an order is given\n"
	"or a _S appears; then merge adjacent steps onto the declared groups.\n"
	"\n"
	"  --mesh 2,2,2[:A,B,C]   mesh shape and dim names (default A, B, C, ...;\n"
	"                         2x2x2 is read too)\n"
	"  --shape 8,8,8          the tensor's global shape\n"
	"  --dtype NAME           element type (default float32)\n"
	"  --src-order ORDER      shard order of SRC, e.g. \"0:B,A\" (tensor dim\n"
	"                         0 split by B first, then A; default left to right)\n"
	"  --dst-order ORDER      shard order of DST\n"
	"  --group A,B            declare the flattened group over these dims in\n"
	"                         this rank order (repeatable); merging uses it\n"
	"  --create-groups        declare the groups merging needs, and merge\n"
	"  --no-merge             print the per-dim steps as planned\n"
	"  --redistribute=MODE    dtensor (DTensor's plans, default) or min-memory\n"
	"                         (smallest shards: slice early, gather late,\n"
	"                         all_to_all and all_permute); both plans' modelled\n"
	"                         time and peak bytes per device are printed\n"
	"  -f, --format=FMT       text (default) or json\n"
	"  -o, --output=FILE      write to FILE (- for stdout, the default),\n"
	"                         atomically, and not on error\n"
	"  -h, --help             this text\n";

static const char plan_help_tail[] =
	"\nExit codes: 0 ok, 1 the redistribution is invalid (S->P, P(x)->P(y),\n"
	"mixed partials, wrong placement count, shard dim out of range), 2 usage.\n";

struct plan_args {
	const char *mesh, *shape, *dtype, *src_order, *dst_order, *format;
	const char *output;
	const char *groups[MAX_GROUPS];
	int ngroups;
	bool create_groups, no_merge;
	enum dt_redist_mode mode;
	struct dt_cli_topology topology;
};

/* ---- building the module: the mesh and the --group groups ---- */

/* "2x2x2" or "2x2x2:A,B,C" into a mesh named "world". */
static int add_mesh(struct dt_module *m, const char *text)
{
	struct dt_mesh mesh = {.name = dt_str_intern(m, "world"), .size = 1};
	const char *names = strchr(text, ':');
	const char *p = text;
	while (p && *p && *p != ':') {
		char *end;
		long long n = strtoll(p, &end, 10);
		if (end == p || n < 1 || n > (1 << 20) ||
		    mesh.ndim == DT_MAX_MESH_DIMS ||
		    (*end && *end != 'x' && *end != ',' && *end != ':'))
			return dt_usage_error(PLAN_CMD,
					      "bad --mesh '%s' (want 1 to %d "
					      "sizes like 2x2x2, names after "
					      "':')",
					      text, DT_MAX_MESH_DIMS);
		mesh.shape[mesh.ndim++] = n;
		mesh.size *= n;
		p = *end == 'x' || *end == ',' ? end + 1 : end;
	}
	if (mesh.ndim == 0)
		return dt_usage_error(PLAN_CMD, "bad --mesh '%s'", text);
	for (int d = 0; d < mesh.ndim; d++) {
		char name[64];
		if (!names) {
			snprintf(name, sizeof name, "%c", 'A' + d);
		} else {
			const char *start = names + 1;
			names = strchr(start, ',');
			size_t len = names ? (size_t)(names - start) : strlen(start);
			if (len == 0 || len >= sizeof name)
				return dt_usage_error(PLAN_CMD,
						      "--mesh '%s' needs %d "
						      "non-empty dim names",
						      text, mesh.ndim);
			memcpy(name, start, len);
			name[len] = '\0';
			if (!names && d + 1 < mesh.ndim)
				return dt_usage_error(PLAN_CMD,
						      "--mesh '%s' names fewer "
						      "than its %d dims",
						      text, mesh.ndim);
		}
		mesh.dims[d] = dt_str_intern(m, name);
		for (int e = 0; e < d; e++)
			if (mesh.dims[e].id == mesh.dims[d].id)
				return dt_usage_error(PLAN_CMD,
						      "--mesh '%s' names dim "
						      "'%s' twice",
						      text, name);
	}
	if (names)
		return dt_usage_error(PLAN_CMD,
				      "--mesh '%s' names more than its %d dims",
				      text, mesh.ndim);
	dt_vec_push(&m->meshes, mesh);
	return DT_EXIT_OK;
}

/* "A B" (or "A,B") into a group named "A_B" of mesh 0. */
static int add_group(struct dt_module *m, const char *text)
{
	const struct dt_mesh *mesh = &m->meshes.data[0];
	struct dt_group g = {.mesh = 0};
	char name[256] = "";
	size_t at = 0;
	for (const char *p = text; *p;) {
		size_t len = strcspn(p, " ,");
		if (len == 0) {
			p++;
			continue;
		}
		char dim[64];
		snprintf(dim, sizeof dim, "%.*s", (int)len, p);
		int d = dt_mesh_find_dim(mesh, dim, &m->strings);
		if (d < 0)
			return dt_usage_error(PLAN_CMD,
					      "--group '%s': the mesh has no "
					      "dim '%s'",
					      text, dim);
		for (int e = 0; e < g.ndims; e++)
			if (g.dims[e] == d)
				return dt_usage_error(PLAN_CMD,
						      "--group '%s' names dim "
						      "'%s' twice",
						      text, dim);
		g.dims[g.ndims++] = (uint8_t)d;
		at += (size_t)snprintf(name + at, sizeof name - at, "%s%s",
				       at ? "_" : "",
				       dt_str_get(m, mesh->dims[d]));
		p += len;
	}
	if (g.ndims == 0)
		return dt_usage_error(PLAN_CMD, "--group '%s' names no dims",
				      text);
	size_t len = strlen(name);
	for (int k = 2; dt_module_find_group(m, dt_str_intern(m, name)) >= 0; k++)
		snprintf(name + len, sizeof name - len, "_%d", k);
	g.name = dt_str_intern(m, name);
	dt_vec_push(&m->groups, g);
	return DT_EXIT_OK;
}

static int parse_shape(const char *text, struct dt_redist_request *req)
{
	const char *p = text;
	req->rank = 0;
	while (*p) {
		char *end;
		long long n = strtoll(p, &end, 10);
		if (end == p || n < 0 || req->rank == DT_MAX_RANK ||
		    (*end && *end != ','))
			return dt_usage_error(PLAN_CMD,
					      "bad --shape '%s' (want 1 to %d "
					      "lengths like 8,8,8)",
					      text, DT_MAX_RANK);
		req->shape[req->rank++] = n;
		p = *end ? end + 1 : end;
	}
	if (req->rank == 0)
		return dt_usage_error(PLAN_CMD, "--shape is empty");
	/* graph files bound tensors the same way, so that element and byte
	 * counts cannot overflow */
	int64_t span = 1;
	for (int d = 0; d < req->rank; d++)
		if (__builtin_mul_overflow(span, req->shape[d] > 1 ? req->shape[d] : 1,
					   &span) ||
		    span > ((int64_t)1 << 60))
			return dt_usage_error(PLAN_CMD, "--shape '%s' has more "
					      "than 2^60 elements", text);
	return DT_EXIT_OK;
}

/* ---- printing ---- */

static void placement_text(const struct dt_placement *p, char *buf,
			   size_t size)
{
	struct dt_placements one = {.ndim = 1};
	one.p[0] = *p;
	dt_placements_print(&one, buf, size);
}

/* "S(0) S(0) R" plus " order 0:B,A" when the order is not the default. */
static void state_text(const struct dt_module *m,
		       const struct dt_placements *pl, char *buf, size_t size)
{
	int len = dt_placements_print(pl, buf, size);
	char order[128];
	if (dt_placements_print_order(pl, &m->meshes.data[0], &m->strings,
				      order, sizeof order) > 0 &&
	    (size_t)len < size)
		snprintf(buf + len, size - (size_t)len, " order %s", order);
}

static void op_text(const struct dt_redist_step *s, char *buf, size_t size)
{
	const char *kind = dt_redist_kind_name(s->kind);
	if (s->kind == DT_REDIST_ALL_REDUCE ||
	    s->kind == DT_REDIST_REDUCE_SCATTER ||
	    s->kind == DT_REDIST_PARTITION)
		snprintf(buf, size, "%s(%s)", kind, dt_reduce_name(s->reduce));
	else
		snprintf(buf, size, "%s", kind);
}

static void group_text(const struct dt_module *m,
		       const struct dt_redist_step *s, char *buf, size_t size)
{
	if (s->group < 0) {
		dt_mesh_dims_join(m, 0, s->dims, s->ndims, " ", buf, size);
		return;
	}
	const struct dt_group *g = &m->groups.data[s->group];
	snprintf(buf, size, "%s%s", dt_str_get(m, g->name),
		 g->generated ? " (created)" : "");
}

/* Append "; " (unless first) and a formatted note to buf. */
static void add_note(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void add_note(char *buf, size_t size, const char *fmt, ...)
{
	size_t at = strlen(buf);
	if (at && at + 2 < size) {
		memcpy(buf + at, "; ", 3);
		at += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + at, size - at, fmt, ap);
	va_end(ap);
}

/* The local work around the step, for the lowering reader. */
static void notes_text(const struct dt_redist_step *s, char *buf, size_t size)
{
	buf[0] = '\0';
	if (s->group_size == 1) {
		add_note(buf, size, "nothing to do (size 1)");
		return;
	}
	if (s->kind == DT_REDIST_ALL_GATHER && s->src_dim != 0)
		add_note(buf, size, "split dim 0 into %lld, cat on dim %d",
			 (long long)s->group_size, s->src_dim);
	if (s->kind == DT_REDIST_REDUCE_SCATTER && s->dst_dim != 0)
		add_note(buf, size, "dim %d to the front first", s->dst_dim);
	if (!s->even)
		add_note(buf, size, "%s",
			 s->kind == DT_REDIST_CHUNK ? "uneven chunks"
						    : "uneven: pad, then narrow");
	if (s->divisor > 1)
		add_note(buf, size, "divide by %lld", (long long)s->divisor);
	else if (s->kind == DT_REDIST_PARTITION)
		add_note(buf, size, "keep the value");
}

enum { COL_STEP, COL_DIMS, COL_CHANGE, COL_OP, COL_GROUP, COL_BYTES,
       COL_TIME, COL_AFTER, COL_NOTES, NCOLS };
#define CELL 160

static void fill_row(const struct dt_module *m, const struct dt_redist_step *s,
		     int index, char cells[NCOLS][CELL])
{
	char a[32], b[32];
	snprintf(cells[COL_STEP], CELL, "%d", index);
	dt_mesh_dims_join(m, 0, s->dims, s->ndims, " ", cells[COL_DIMS], CELL);
	placement_text(&s->src, a, sizeof a);
	placement_text(&s->dst, b, sizeof b);
	if (s->kind == DT_REDIST_PERMUTE || s->kind == DT_REDIST_TRANSFER)
		/* ranks trade whole shards, or pieces of them */
		snprintf(cells[COL_CHANGE], CELL, "ranks");
	else
		snprintf(cells[COL_CHANGE], CELL, "%s -> %s", a, b);
	op_text(s, cells[COL_OP], CELL);
	group_text(m, s, cells[COL_GROUP], CELL);
	if (dt_redist_kind_comm(s->kind) >= 0) {
		dt_format_bytes(s->bytes, cells[COL_BYTES], CELL);
		snprintf(cells[COL_TIME], CELL, "%.2f", s->cost_us);
	} else {
		snprintf(cells[COL_BYTES], CELL, "-");
		snprintf(cells[COL_TIME], CELL, "-");
	}
	state_text(m, &s->after, cells[COL_AFTER], CELL);
	notes_text(s, cells[COL_NOTES], CELL);
}

/* Per rank (mesh order), the length of every tensor dim whose lengths
 * differ between ranks under `pl` ("src" or "dst"). */
static void print_uneven_lengths(const struct dt_redist_plan *plan,
				 const char *which,
				 const struct dt_placements *pl, FILE *out)
{
	const struct dt_mesh *mesh = &plan->mesh;
	if (mesh->size > MAX_PRINTED_RANKS)
		return;
	for (int d = 0; d < plan->rank; d++) {
		int64_t lengths[MAX_PRINTED_RANKS];
		bool differ = false;
		for (int64_t r = 0; r < mesh->size; r++) {
			int64_t coord[DT_MAX_MESH_DIMS], shape[DT_MAX_RANK];
			dt_mesh_coords(mesh, r, coord);
			dt_redist_local_shape(plan, pl, coord, shape);
			lengths[r] = shape[d];
			differ |= lengths[r] != lengths[0];
		}
		if (!differ)
			continue;
		fprintf(out, "  uneven %s: tensor dim %d per rank (mesh order):",
			which, d);
		for (int64_t r = 0; r < mesh->size; r++)
			fprintf(out, " %" PRId64, lengths[r]);
		fputc('\n', out);
	}
}

static void print_header(const struct dt_module *m,
			 const struct dt_redist_plan *plan, FILE *out)
{
	const struct dt_mesh *mesh = &plan->mesh;
	char bytes[32], src[160], dst[160];
	dt_format_bytes((double)dt_numel(plan->shape, plan->rank) *
			     dt_dtype_size(plan->dtype),
		     bytes, sizeof bytes);
	fprintf(out, "redistribute %s[", dt_dtype_name(plan->dtype));
	for (int d = 0; d < plan->rank; d++)
		fprintf(out, "%s%" PRId64, d ? ", " : "", plan->shape[d]);
	fprintf(out, "] (%s) on mesh world (", bytes);
	for (int d = 0; d < mesh->ndim; d++)
		fprintf(out, "%s%s=%" PRId64, d ? " " : "",
			dt_str_get(m, mesh->dims[d]), mesh->shape[d]);
	state_text(m, &plan->src, src, sizeof src);
	state_text(m, &plan->dst, dst, sizeof dst);
	static const char *const methods[] = {
		[DT_REDIST_GREEDY] =
			"greedy (DTensor's default, for default shard orders)",
		[DT_REDIST_MIN_COST] =
			"min-cost (Dijkstra over placements and shard orders)",
		[DT_REDIST_MIN_MEMORY] =
			"min-memory (smallest shards, then cheapest)",
	};
	fprintf(out, ")\n  from %s\n  to   %s\n  plan %s\n", src, dst,
		methods[plan->method]);
}

/* Columns a UTF-8 string takes (every character one column). */
static int display_width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		w += ((unsigned char)*s & 0xc0) != 0x80;
	return w;
}

static void print_text(const struct dt_module *m,
		       const struct dt_redist_plan *plan, FILE *out)
{
	static const char *const header[NCOLS] = {
		"step", "mesh dims", "change", "op", "group", "bytes",
		"modelled µs", "after", "notes"};
	print_header(m, plan, out);
	uint32_t n = plan->steps.len;
	if (n == 0)
		fputs("  no steps: the placements already match\n", out);
	char(*cells)[NCOLS][CELL] = dt_calloc(n + 1, sizeof *cells);
	int width[NCOLS] = {0};
	for (int c = 0; c < NCOLS; c++)
		snprintf(cells[0][c], CELL, "%s", header[c]);
	for (uint32_t i = 0; i < n; i++)
		fill_row(m, &plan->steps.data[i], (int)i + 1, cells[i + 1]);
	for (uint32_t r = 0; r <= n; r++)
		for (int c = 0; c < NCOLS; c++)
			if (display_width(cells[r][c]) > width[c])
				width[c] = display_width(cells[r][c]);
	for (uint32_t r = n ? 0 : 1; r <= n; r++) {
		int last = NCOLS - 1;
		while (last > 0 && !cells[r][last][0])
			last--;
		fputs(" ", out);
		for (int c = 0; c < last; c++)
			fprintf(out, " %s%*s", cells[r][c],
				width[c] - display_width(cells[r][c]), "");
		fprintf(out, " %s\n", cells[r][last]);
	}
	dt_free(cells);
	int local = 0;
	for (uint32_t i = 0; i < n; i++)
		local += dt_redist_kind_comm(plan->steps.data[i].kind) < 0 &&
			 plan->steps.data[i].group_size > 1;
	fprintf(out, "  total: %d collective%s", dt_redist_plan_collectives(plan),
		dt_redist_plan_collectives(plan) == 1 ? "" : "s");
	const char *sep = " (";
	for (int k = 0; k < DT_REDIST_NKINDS; k++) {
		int count = dt_redist_plan_count(plan, (enum dt_redist_kind)k);
		if (count == 0 || dt_redist_kind_comm((enum dt_redist_kind)k) < 0)
			continue;
		fprintf(out, "%s%d %s", sep, count,
			dt_redist_kind_name((enum dt_redist_kind)k));
		sep = ", ";
	}
	fprintf(out, "%s, %d local step%s, modelled %.2f µs\n",
		*sep == ',' ? ")" : "", local, local == 1 ? "" : "s",
		dt_redist_plan_cost(plan));
	print_uneven_lengths(plan, "src", &plan->src, out);
	print_uneven_lengths(plan, "dst", &plan->dst, out);
}

static const char *method_key(enum dt_redist_method method)
{
	return method == DT_REDIST_GREEDY	? "greedy"
	       : method == DT_REDIST_MIN_COST ? "min_cost"
					      : "min_memory";
}

/* Both modes' modelled time and peak bytes per device, side by side, the
 * printed plan's marked. */
static void print_modes(const struct dt_redist_plan *plans, int chosen,
			FILE *out)
{
	static const char *const names[] = {"dtensor", "min-memory"};
	fprintf(out, "  %-12s %12s %14s %s\n", "mode", "modelled µs",
		"peak B/device", "steps");
	for (int i = 0; i < 2; i++)
		fprintf(out, "%s %-12s %12.2f %14.0f %u\n",
			i == chosen ? " *" : "  ", names[i],
			dt_redist_plan_cost(&plans[i]),
			dt_redist_plan_peak(&plans[i]), plans[i].steps.len);
	if (plans[1].method != DT_REDIST_MIN_MEMORY)
		fputs("  (min-memory is DTensor's plan here: partial or _S "
		      "placements, or too many states)\n",
		      out);
	double peak = dt_redist_plan_peak(&plans[chosen]);
	fprintf(out, "  peak %.0f bytes per device (%.0f elements; collective "
		"buffers not counted)\n",
		peak, peak / dt_dtype_size(plans[chosen].dtype));
}

static void json_double(FILE *out, double v)
{
	char buf[40];
	dt_format_double(v, buf, sizeof buf);
	fputs(buf, out);
}

static void json_state(const struct dt_module *m,
		       const struct dt_placements *pl, FILE *out)
{
	char text[160], order[128];
	dt_placements_print(pl, text, sizeof text);
	dt_placements_print_order(pl, &m->meshes.data[0], &m->strings, order,
				  sizeof order);
	fputs("{\"placements\":", out);
	dt_json_string(out, text);
	fputs(",\"order\":", out);
	dt_json_string(out, order);
	fputc('}', out);
}

static void json_step(const struct dt_module *m, const struct dt_redist_step *s,
		      FILE *out)
{
	char text[CELL];
	fprintf(out, "{\"kind\":\"%s\",\"dims\":[", dt_redist_kind_name(s->kind));
	for (int i = 0; i < s->ndims; i++) {
		if (i)
			fputc(',', out);
		dt_json_string(out, dt_str_get(m, m->meshes.data[0].dims[s->dims[i]]));
	}
	fputs("],\"group\":", out);
	if (s->group >= 0)
		dt_json_string(out, dt_str_get(m, m->groups.data[s->group].name));
	else
		fputs("null", out);
	placement_text(&s->src, text, sizeof text);
	fputs(",\"src\":", out);
	dt_json_string(out, text);
	placement_text(&s->dst, text, sizeof text);
	fputs(",\"dst\":", out);
	dt_json_string(out, text);
	fprintf(out, ",\"src_dim\":%d,\"dst_dim\":%d", s->src_dim, s->dst_dim);
	fputs(",\"reduce\":", out);
	if (s->kind == DT_REDIST_ALL_REDUCE ||
	    s->kind == DT_REDIST_REDUCE_SCATTER || s->kind == DT_REDIST_PARTITION)
		dt_json_string(out, dt_reduce_name(s->reduce));
	else
		fputs("null", out);
	fprintf(out, ",\"divisor\":%lld,\"group_size\":%lld,\"even\":%s",
		(long long)s->divisor, (long long)s->group_size,
		s->even ? "true" : "false");
	fputs(",\"before\":", out);
	json_state(m, &s->before, out);
	fputs(",\"after\":", out);
	json_state(m, &s->after, out);
	fputs(",\"bytes\":", out);
	json_double(out, s->bytes);
	fputs(",\"time_us\":", out);
	json_double(out, s->cost_us);
	fputc('}', out);
}

static void print_json(const struct dt_module *m,
		       const struct dt_redist_plan *plan, FILE *out)
{
	fprintf(out, "{\"dtype\":\"%s\",\"shape\":[", dt_dtype_name(plan->dtype));
	for (int d = 0; d < plan->rank; d++)
		fprintf(out, "%s%" PRId64, d ? "," : "", plan->shape[d]);
	fputs("],\"mesh\":{", out);
	for (int d = 0; d < plan->mesh.ndim; d++) {
		if (d)
			fputc(',', out);
		dt_json_string(out, dt_str_get(m, plan->mesh.dims[d]));
		fprintf(out, ":%" PRId64, plan->mesh.shape[d]);
	}
	fputs("},\"src\":", out);
	json_state(m, &plan->src, out);
	fputs(",\"dst\":", out);
	json_state(m, &plan->dst, out);
	fprintf(out, ",\"method\":\"%s\",\"steps\":[",
		method_key(plan->method));
	for (uint32_t i = 0; i < plan->steps.len; i++) {
		if (i)
			fputc(',', out);
		json_step(m, &plan->steps.data[i], out);
	}
	fprintf(out, "],\"collectives\":%d,\"time_us\":",
		dt_redist_plan_collectives(plan));
	json_double(out, dt_redist_plan_cost(plan));
	fputs(",\"peak_bytes\":", out);
	json_double(out, dt_redist_plan_peak(plan));
	fputs("}\n", out);
}

/* ---- the command ---- */

static int parse_args(int argc, char **argv, struct plan_args *a,
		      const char **src, const char **dst)
{
	enum { OPT_MESH = 1, OPT_SHAPE, OPT_DTYPE, OPT_SRC_ORDER, OPT_DST_ORDER,
	       OPT_GROUP, OPT_CREATE_GROUPS, OPT_NO_MERGE,
	       OPT_REDISTRIBUTE };
	static const struct option longopts[] = {
		{"mesh", required_argument, NULL, OPT_MESH},
		{"shape", required_argument, NULL, OPT_SHAPE},
		{"dtype", required_argument, NULL, OPT_DTYPE},
		{"src-order", required_argument, NULL, OPT_SRC_ORDER},
		{"dst-order", required_argument, NULL, OPT_DST_ORDER},
		{"group", required_argument, NULL, OPT_GROUP},
		{"create-groups", no_argument, NULL, OPT_CREATE_GROUPS},
		{"no-merge", no_argument, NULL, OPT_NO_MERGE},
		{"redistribute", required_argument, NULL, OPT_REDISTRIBUTE},
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		DT_CLI_TOPOLOGY_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
		if (c >= DT_CLI_OPT_TOPOLOGY_FIRST && c < DT_CLI_OPT_TOPOLOGY_END) {
			if (dt_cli_topology_parse(&a->topology, c, optarg,
						  PLAN_CMD) != DT_EXIT_OK)
				return DT_EXIT_USAGE;
			continue;
		}
		switch (c) {
		case OPT_MESH: a->mesh = optarg; break;
		case OPT_SHAPE: a->shape = optarg; break;
		case OPT_DTYPE: a->dtype = optarg; break;
		case OPT_SRC_ORDER: a->src_order = optarg; break;
		case OPT_DST_ORDER: a->dst_order = optarg; break;
		case OPT_GROUP:
			if (a->ngroups == MAX_GROUPS)
				return dt_usage_error(PLAN_CMD,
						      "more than %d --group",
						      MAX_GROUPS);
			a->groups[a->ngroups++] = optarg;
			break;
		case OPT_CREATE_GROUPS: a->create_groups = true; break;
		case OPT_NO_MERGE: a->no_merge = true; break;
		case OPT_REDISTRIBUTE:
			if (!dt_redist_mode_parse(optarg, &a->mode))
				return dt_usage_error(PLAN_CMD,
						      "unknown --redistribute "
						      "'%s' (dtensor or "
						      "min-memory)",
						      optarg);
			break;
		case 'f': a->format = optarg; break;
		case 'o': a->output = optarg; break;
		case 'h':
			fputs(plan_help_head, stdout);
			fputc('\n', stdout);
			fputs(dt_cli_topology_help, stdout);
			fputs(plan_help_tail, stdout);
			return -1;
		default:
			return dt_usage_error(PLAN_CMD,
					      "unknown or incomplete option '%s'",
					      argv[optind - 1]);
		}
	}
	if (strcmp(a->format, "text") != 0 && strcmp(a->format, "json") != 0)
		return dt_usage_error(PLAN_CMD,
				      "unknown format '%s' (text or json)",
				      a->format);
	if (!a->mesh || !a->shape)
		return dt_usage_error(PLAN_CMD, "--mesh and --shape are required");
	if (argc - optind != 2)
		return dt_usage_error(PLAN_CMD,
				      "expected SRC and DST placements, got %d "
				      "argument%s",
				      argc - optind, argc - optind == 1 ? "" : "s");
	*src = argv[optind];
	*dst = argv[optind + 1];
	return DT_EXIT_OK;
}

/* The request's placements; a message and DT_EXIT_INPUT when invalid. */
static int parse_placements(const struct dt_module *m, const char *which,
			    const char *text, const char *order,
			    struct dt_placements *out)
{
	char err[256];
	if (dt_placements_parse(out, text, order, &m->meshes.data[0],
				&m->strings, err, sizeof err))
		return DT_EXIT_OK;
	return dt_cli_error(PLAN_CMD, "%s: %s", which, err);
}

static int run_plan(struct dt_module *m, const struct plan_args *a,
		    const char *src_text, const char *dst_text)
{
	struct dt_redist_request req = {.mesh = &m->meshes.data[0],
					 .topology = &m->topology,
					 .dtype = DT_FLOAT32};
	if (a->dtype && !dt_dtype_parse(a->dtype, strlen(a->dtype), &req.dtype))
		return dt_usage_error(PLAN_CMD, "unknown --dtype '%s'", a->dtype);
	int rc = parse_shape(a->shape, &req);
	for (int i = 0; rc == DT_EXIT_OK && i < a->ngroups; i++)
		rc = add_group(m, a->groups[i]);
	if (rc == DT_EXIT_OK)
		rc = parse_placements(m, "src", src_text, a->src_order, &req.src);
	if (rc == DT_EXIT_OK)
		rc = parse_placements(m, "dst", dst_text, a->dst_order, &req.dst);
	if (rc != DT_EXIT_OK)
		return rc;

	/* plans[mode]: both modes, for the comparison; the chosen one is
	 * merged and printed. */
	struct dt_redist_plan plans[2];
	char err[512];
	for (int i = 0; i < 2; i++) {
		req.mode = (enum dt_redist_mode)i;
		if (dt_redist_plan_init(&plans[i], &req, err, sizeof err) !=
		    DT_OK) {
			if (i)
				dt_redist_plan_fini(&plans[0]);
			return dt_cli_error(PLAN_CMD, "%s", err);
		}
	}
	struct dt_redist_plan plan = plans[a->mode];
	if (!a->no_merge) {
		struct dt_diag diag;
		dt_cli_diag_init(&diag);
		struct dt_redist_warned warned = {0};
		struct dt_redist_merge_options mo = {
			.module = m,
			.mesh = 0,
			.create_groups = a->create_groups,
			.diag = &diag,
			.warned = &warned,
		};
		dt_redist_plan_merge(&plan, &mo);
		dt_redist_warned_fini(&warned);
	}
	rc = dt_cli_output_begin(PLAN_CMD, a->output);
	if (rc == DT_EXIT_OK) {
		if (strcmp(a->format, "json") == 0)
			print_json(m, &plan, stdout);
		else
			print_text(m, &plan, stdout);
		if (strcmp(a->format, "json") != 0)
			print_modes(plans, a->mode, stdout);
		rc = dt_cli_output_commit();
	}
	dt_redist_plan_fini(&plan);
	dt_redist_plan_fini(&plans[!a->mode]);
	return rc;
}

int dt_cmd_plan(int argc, char **argv)
{
	struct plan_args a = {.format = "text", .output = "-"};
	const char *src = NULL, *dst = NULL;
	int rc = parse_args(argc, argv, &a, &src, &dst);
	if (rc < 0)
		return DT_EXIT_OK; /* --help */
	if (rc != DT_EXIT_OK)
		return rc;
	struct dt_module *m = dt_module_create("<plan>");
	rc = add_mesh(m, a.mesh);
	if (rc == DT_EXIT_OK) {
		dt_cli_topology_apply(&a.topology, &m->topology);
		rc = run_plan(m, &a, src, dst);
	}
	dt_module_destroy(m);
	return rc;
}
