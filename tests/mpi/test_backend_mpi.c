// SPDX-License-Identifier: MIT
/* test_backend_mpi.c: the MPI backend's collectives against their
 * definition, on hand-built tensors (run under mpirun).
 *
 * usage: mpirun -np N test_backend_mpi SHAPE [DEVICES]
 *   SHAPE   mesh shape, e.g. 2x2x2 (N must be its size)
 *   DEVICES optional comma-separated global ranks of the mesh (row-major)
 *
 * Every ordered subset of the mesh dims is declared as a group. For each
 * group, dtype and collective, every rank fills its input with values that
 * are a function of (its global rank, element index), exact in every dtype,
 * issues all collectives of the group before waiting for any (in reverse
 * order), and checks each output element against the value computed from
 * the definition: all_gather chunk j is group rank j's input (the group's
 * rank order comes from dt_group_ranks, i.e. the layout algebra, which the
 * backend's communicators must reproduce); reduce_scatter keeps the chunk
 * at the rank's group position; all_to_all chunk j comes from group rank j,
 * with equal and with per-rank uneven split sizes. It also checks the
 * refusal messages (bool avg, a world-size mismatch). Exits 1 on any
 * failure (all ranks), printing the first few. */
#include "runtime.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

enum { CHUNK = 5, WIDTH = 3, MAX_REPORTS = 8 };

struct ctx {
	struct dt_module *m;
	struct dt_backend *b;
	int rank;
	int failures;
	char last_error[1024];
};

/* Keep the last error message for the refusal checks. */
static void capture(void *ud, const struct dt_diag_entry *e)
{
	struct ctx *c = ud;
	if (e->severity == DT_ERROR)
		snprintf(c->last_error, sizeof(c->last_error), "%s:%u: %s",
			 e->file ? e->file : "", e->line, e->message);
}

__attribute__((format(printf, 2, 3)))
static void failure(struct ctx *c, const char *fmt, ...)
{
	if (c->failures++ < MAX_REPORTS) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "rank %d: FAIL: ", c->rank);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		va_end(ap);
	}
}

/* ------------------------------------------------------------------ */
/* Values: small integers, exact in every dtype and in every reduction of
 * up to 8 of them (product values stay within 4 in magnitude). */

static double input_value(enum dt_dtype t, bool product, int32_t rank,
			  int64_t i)
{
	if (t == DT_BOOL)
		return (rank + i) % 3 == 0;
	if (product)
		return (i + rank) % 7 == 0 ? 2
		       : (t != DT_UINT8 && (i + 2 * rank) % 5 == 0) ? -1 : 1;
	if (t == DT_UINT8)
		return (double)((rank * 5 + i * 3) % 11);
	return (double)((rank * 5 + i * 3) % 11 - 5);
}

/* The reduction of `n` values as the backend defines it: avg divides the
 * sum (float32 for 16-bit floats and float32, truncating for integers),
 * bool reduces logically. Returned rounded to the dtype. */
static double reduce_values(enum dt_dtype t, enum dt_reduce_op op,
			    const double *v, int64_t n)
{
	double r = v[0];
	for (int64_t j = 1; j < n; j++) {
		switch (op) {
		case DT_REDUCE_SUM:
		case DT_REDUCE_AVG: r += v[j]; break;
		case DT_REDUCE_MAX: r = v[j] > r ? v[j] : r; break;
		case DT_REDUCE_MIN: r = v[j] < r ? v[j] : r; break;
		case DT_REDUCE_PRODUCT: r *= v[j]; break;
		default: break;
		}
	}
	if (t == DT_BOOL)
		r = r != 0;
	if (op == DT_REDUCE_AVG) {
		if (t == DT_FLOAT64)
			r /= (double)n;
		else if (dt_dtype_is_float(t))
			r = (double)((float)r / (float)n);
		else
			r = (double)((int64_t)r / n);
	}
	unsigned char tmp[8];
	dt_store_element(t, tmp, r);
	return dt_load_element(t, tmp);
}

/* ------------------------------------------------------------------ */
/* Tensors: contiguous, rows x WIDTH or 1-D, stored at a nonzero offset so
 * the backend must honour it. */

static struct dt_rt_tensor make_tensor(struct ctx *c, enum dt_dtype t,
				       int64_t rows, int64_t width)
{
	enum { OFFSET = 3 };
	struct dt_rt_tensor x = {.dtype = (uint8_t)t, .offset = OFFSET};
	x.rank = width ? 2 : 1;
	x.shape[0] = rows;
	x.stride[0] = width ? width : 1;
	if (width) {
		x.shape[1] = width;
		x.stride[1] = 1;
	}
	int64_t n = rows * (width ? width : 1);
	x.buf = dt_calloc(1, sizeof(*x.buf));
	x.buf->bytes = (size_t)(n + OFFSET) * (size_t)dt_dtype_size(t);
	x.buf->data = c->b->ops->alloc(c->b, x.buf->bytes);
	x.buf->refs = 1;
	memset(x.buf->data, 0xab, x.buf->bytes);
	return x;
}

static void free_tensor(struct ctx *c, struct dt_rt_tensor *x)
{
	c->b->ops->release(c->b, x->buf->data);
	dt_free(x->buf);
}

static char *element(const struct dt_rt_tensor *x, int64_t i)
{
	return (char *)x->buf->data +
	       (x->offset + i) * dt_dtype_size((enum dt_dtype)x->dtype);
}

static void fill(struct dt_rt_tensor *x, bool product, int32_t rank)
{
	int64_t n = dt_rt_numel(x);
	for (int64_t i = 0; i < n; i++)
		dt_store_element((enum dt_dtype)x->dtype, element(x, i),
				 input_value((enum dt_dtype)x->dtype, product,
					     rank, i));
}

/* ------------------------------------------------------------------ */
/* One collective of a batch: its tensors and expected output. */
struct job {
	struct dt_collective_call call;
	struct dt_rt_tensor in, out;
	double *expect;
	int64_t in_splits[64], out_splits[64];
	struct dt_pending *pending;
	char what[128];
};

struct group_info {
	int index;
	const struct dt_group *g;
	int64_t n, pos;
	int32_t ranks[64];
};

/* Uneven all_to_all: rows that group rank `from` sends to group rank
 * `to` (0 to 2, so some chunks are empty). */
static int64_t a2a_rows(int64_t from, int64_t to)
{
	return (from + 2 * to) % 3;
}

static void set_job(struct job *j, const struct group_info *gi,
		    enum dt_collective_kind kind, enum dt_reduce_op op,
		    enum dt_dtype t, const char *label)
{
	j->call.kind = kind;
	j->call.reduce = op;
	j->call.group = gi->index;
	j->call.group_size = gi->n;
	j->call.input = &j->in;
	j->call.output = &j->out;
	snprintf(j->what, sizeof(j->what), "%s %s %s", label, dt_dtype_name(t),
		 kind == DT_COLL_ALL_REDUCE || kind == DT_COLL_REDUCE_SCATTER
			 ? dt_reduce_name(op) : "");
}

static void plan_reduction(struct ctx *c, struct job *j,
			   const struct group_info *gi, enum dt_dtype t,
			   enum dt_reduce_op op, bool scatter)
{
	int64_t n = gi->n, nin = scatter ? CHUNK * n : CHUNK;
	bool product = op == DT_REDUCE_PRODUCT;
	set_job(j, gi, scatter ? DT_COLL_REDUCE_SCATTER : DT_COLL_ALL_REDUCE,
		op, t, scatter ? "reduce_scatter" : "all_reduce");
	j->in = make_tensor(c, t, nin, 0);
	j->out = make_tensor(c, t, CHUNK, 0);
	fill(&j->in, product, c->rank);
	j->expect = dt_calloc(CHUNK, sizeof(double));
	double v[64];
	for (int64_t i = 0; i < CHUNK; i++) {
		int64_t src = scatter ? gi->pos * CHUNK + i : i;
		for (int64_t k = 0; k < n; k++)
			v[k] = input_value(t, product, gi->ranks[k], src);
		j->expect[i] = reduce_values(t, op, v, n);
	}
}

static void plan_all_gather(struct ctx *c, struct job *j,
			    const struct group_info *gi, enum dt_dtype t)
{
	set_job(j, gi, DT_COLL_ALL_GATHER, DT_REDUCE_SUM, t, "all_gather");
	j->in = make_tensor(c, t, CHUNK, WIDTH);
	j->out = make_tensor(c, t, CHUNK * gi->n, WIDTH);
	fill(&j->in, false, c->rank);
	int64_t len = CHUNK * WIDTH;
	j->expect = dt_calloc((size_t)(len * gi->n), sizeof(double));
	for (int64_t k = 0; k < gi->n; k++)
		for (int64_t i = 0; i < len; i++)
			j->expect[k * len + i] =
				input_value(t, false, gi->ranks[k], i);
}

/* Equal splits (CHUNK rows per peer) or the uneven a2a_rows pattern. */
static void plan_all_to_all(struct ctx *c, struct job *j,
			    const struct group_info *gi, enum dt_dtype t,
			    bool uneven)
{
	set_job(j, gi, DT_COLL_ALL_TO_ALL, DT_REDUCE_SUM, t,
		uneven ? "all_to_all(uneven)" : "all_to_all");
	int64_t n = gi->n, in_rows = 0, out_rows = 0;
	for (int64_t k = 0; k < n; k++) {
		j->in_splits[k] = uneven ? a2a_rows(gi->pos, k) : CHUNK;
		j->out_splits[k] = uneven ? a2a_rows(k, gi->pos) : CHUNK;
		in_rows += j->in_splits[k];
		out_rows += j->out_splits[k];
	}
	if (uneven) {
		j->call.input_splits = j->in_splits;
		j->call.output_splits = j->out_splits;
	}
	j->in = make_tensor(c, t, in_rows, WIDTH);
	j->out = make_tensor(c, t, out_rows, WIDTH);
	fill(&j->in, false, c->rank);
	j->expect = dt_calloc((size_t)(out_rows * WIDTH + 1), sizeof(double));
	int64_t at = 0;
	for (int64_t k = 0; k < n; k++) {
		/* Rank k's rows for this rank start after those it sends to
		 * group ranks before this one. */
		int64_t first = 0;
		for (int64_t q = 0; q < gi->pos; q++)
			first += uneven ? a2a_rows(k, q) : CHUNK;
		for (int64_t i = 0; i < j->out_splits[k] * WIDTH; i++)
			j->expect[at++] = input_value(t, false, gi->ranks[k],
						      first * WIDTH + i);
	}
}

static void check_job(struct ctx *c, struct job *j)
{
	enum dt_dtype t = (enum dt_dtype)j->out.dtype;
	int64_t n = dt_rt_numel(&j->out);
	for (int64_t i = 0; i < n; i++) {
		double got = dt_load_element(t, element(&j->out, i));
		if (got != j->expect[i]) {
			const struct dt_group *g =
				&c->m->groups.data[j->call.group];
			failure(c, "group '%s': %s: element %lld is %g, "
				"expected %g", dt_str_get(c->m, g->name),
				j->what, (long long)i, got, j->expect[i]);
			return;
		}
	}
}

static const enum dt_dtype all_dtypes[] = {
	DT_FLOAT32, DT_FLOAT16, DT_BFLOAT16, DT_FLOAT64, DT_INT64,
	DT_INT32, DT_INT16, DT_INT8, DT_UINT8, DT_BOOL,
};
enum { NDTYPES = sizeof(all_dtypes) / sizeof(all_dtypes[0]) };

/* Issue every collective of one group, then wait in reverse order. */
static void test_group(struct ctx *c, int index)
{
	struct group_info gi = {.index = index, .g = &c->m->groups.data[index]};
	const struct dt_mesh *mesh = &c->m->meshes.data[gi.g->mesh];
	int64_t instance;
	DT_REQUIRE(dt_group_locate(mesh, gi.g->dims, gi.g->ndims, c->rank,
				   &instance, &gi.pos));
	gi.n = dt_group_size(mesh, gi.g->dims, gi.g->ndims);
	dt_group_ranks(mesh, gi.g->dims, gi.g->ndims, instance, gi.ranks);
	enum { PER_DTYPE = 3 + 2 * DT_NREDUCE };
	struct job *jobs = dt_calloc(NDTYPES * PER_DTYPE, sizeof(*jobs));
	int njobs = 0;
	for (int k = 0; k < NDTYPES; k++) {
		enum dt_dtype t = all_dtypes[k];
		plan_all_gather(c, &jobs[njobs++], &gi, t);
		plan_all_to_all(c, &jobs[njobs++], &gi, t, false);
		plan_all_to_all(c, &jobs[njobs++], &gi, t, true);
		for (int op = 0; op < DT_NREDUCE; op++) {
			if (t == DT_BOOL && op == DT_REDUCE_AVG)
				continue;
			plan_reduction(c, &jobs[njobs++], &gi, t, op, false);
			plan_reduction(c, &jobs[njobs++], &gi, t, op, true);
		}
	}
	for (int k = 0; k < njobs; k++)
		if (c->b->ops->collective(c->b, &jobs[k].call, &jobs[k].pending)
		    != DT_OK)
			failure(c, "starting %s failed: %s", jobs[k].what,
				c->last_error);
	for (int k = njobs - 1; k >= 0; k--) {
		if (!jobs[k].pending)
			continue;
		if (c->b->ops->wait(c->b, jobs[k].pending) != DT_OK)
			failure(c, "waiting for %s failed: %s", jobs[k].what,
				c->last_error);
		else
			check_job(c, &jobs[k]);
	}
	for (int k = 0; k < njobs; k++) {
		free_tensor(c, &jobs[k].in);
		free_tensor(c, &jobs[k].out);
		dt_free(jobs[k].expect);
	}
	dt_free(jobs);
}

/* ------------------------------------------------------------------ */
/* Modules built by hand: one mesh, every ordered subset of its dims. */

static void add_groups(struct dt_module *m, uint8_t *dims, int ndims,
		       unsigned used, int ndim)
{
	if (ndims) {
		struct dt_group g = {.ndims = (uint8_t)ndims, .line = 2};
		char name[64] = "";
		for (int k = 0; k < ndims; k++) {
			g.dims[k] = dims[k];
			size_t at = strlen(name);
			snprintf(name + at, sizeof(name) - at, "%s%c",
				 k ? "_" : "", 'a' + dims[k]);
		}
		g.name = dt_str_intern(m, name);
		dt_vec_push(&m->groups, g);
	}
	for (int d = 0; d < ndim; d++)
		if (!(used & (1u << d))) {
			dims[ndims] = (uint8_t)d;
			add_groups(m, dims, ndims + 1, used | (1u << d), ndim);
		}
}

static struct dt_module *make_module(const int64_t *shape, int ndim,
				     const int32_t *devices)
{
	struct dt_module *m = dt_module_create("test.xml");
	struct dt_mesh mesh = {.name = dt_str_intern(m, "world"),
			       .ndim = (uint8_t)ndim, .size = 1, .line = 1};
	for (int k = 0; k < ndim; k++) {
		char dim[2] = {(char)('a' + k), 0};
		mesh.shape[k] = shape[k];
		mesh.dims[k] = dt_str_intern(m, dim);
		mesh.size *= shape[k];
	}
	if (devices) {
		size_t bytes = (size_t)mesh.size * sizeof(int32_t);
		mesh.devices = dt_arena_alloc(&m->arena, bytes);
		memcpy(mesh.devices, devices, bytes);
	}
	dt_vec_push(&m->meshes, mesh);
	uint8_t dims[DT_MAX_MESH_DIMS];
	add_groups(m, dims, 0, 0, ndim);
	/* A collective node for error messages, at line 7. */
	struct dt_node_init init = {
		.kind = DT_NODE_CALL,
		.name = dt_str_intern(m, "ar"),
		.target = dt_str_intern(m, dt_op_get(DT_OP_ALL_REDUCE)->target),
		.line = 7};
	dt_module_add_node(m, &init);
	return m;
}

/* Refusals: avg on bool names the node; a mesh bigger than the world is
 * reported with both sizes and gives no backend. */
static void test_refusals(struct ctx *c, const int64_t *shape, int ndim)
{
	struct job j = {0};
	struct group_info gi = {.index = 0, .g = &c->m->groups.data[0]};
	gi.n = c->m->meshes.data[0].shape[gi.g->dims[0]];
	plan_reduction(c, &j, &gi, DT_BOOL, DT_REDUCE_AVG, false);
	j.call.node = dt_node_get(c->m, 1);
	c->last_error[0] = 0;
	int rc = c->b->ops->collective(c->b, &j.call, &j.pending);
	if (rc != DT_ERUNTIME || j.pending ||
	    !strstr(c->last_error, "test.xml:7: node 'ar' "
				   "(_c10d_functional.all_reduce.default): "
				   "reduce op 'avg' is not defined on bool") ||
	    c->b->failed_node != j.call.node)
		failure(c, "bool avg: rc %d, message '%s'", rc, c->last_error);
	free_tensor(c, &j.in);
	free_tensor(c, &j.out);
	dt_free(j.expect);

	int64_t bigger[DT_MAX_MESH_DIMS];
	memcpy(bigger, shape, (size_t)ndim * sizeof(int64_t));
	bigger[0] *= 2;
	struct dt_module *m = make_module(bigger, ndim, NULL);
	char expect[128];
	snprintf(expect, sizeof(expect), "test.xml:1: the graph's mesh 'world' "
		 "has %lld devices but mpirun started %lld ranks",
		 (long long)c->m->meshes.data[0].size * 2,
		 (long long)c->m->meshes.data[0].size);
	c->last_error[0] = 0;
	struct dt_backend *b = dt_backend_mpi_create(m, c->b->diag);
	if (b || strcmp(c->last_error, expect) != 0)
		failure(c, "world-size mismatch: got '%s', expected '%s'",
			c->last_error, expect);
	if (b)
		b->ops->destroy(b);
	dt_module_destroy(m);
}

static int run(struct ctx *c, const int64_t *shape, int ndim,
	       const int32_t *devices, struct dt_diag *diag)
{
	c->m = make_module(shape, ndim, devices);
	c->b = dt_backend_mpi_create(c->m, diag);
	if (!c->b) {
		failure(c, "dt_backend_mpi_create failed: %s", c->last_error);
		dt_module_destroy(c->m);
		return 0;
	}
	for (uint32_t g = 0; g < c->m->groups.len; g++)
		test_group(c, (int)g);
	test_refusals(c, shape, ndim);
	c->b->ops->destroy(c->b);
	int groups = (int)c->m->groups.len;
	dt_module_destroy(c->m);
	return groups;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	struct ctx c = {0};
	MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
	int64_t shape[DT_MAX_MESH_DIMS];
	int ndim = 0;
	int32_t devices[64];
	char *s = argc > 1 ? argv[1] : NULL;
	while (s && *s && ndim < DT_MAX_MESH_DIMS) {
		shape[ndim++] = strtoll(s, &s, 10);
		if (*s == 'x')
			s++;
	}
	int ndev = 0;
	for (char *p = argc > 2 ? argv[2] : NULL; p && *p && ndev < 64;) {
		devices[ndev++] = (int32_t)strtol(p, &p, 10);
		if (*p == ',')
			p++;
	}
	if (ndim == 0) {
		if (c.rank == 0)
			fputs("usage: test_backend_mpi SHAPE [DEVICES]\n",
			      stderr);
		MPI_Finalize();
		return 2;
	}
	struct dt_diag diag;
	dt_diag_init(&diag);
	diag.emit = capture;
	diag.ud = &c;
	int groups = run(&c, shape, ndim, ndev ? devices : NULL, &diag);
	int total = 0;
	MPI_Allreduce(&c.failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (c.rank == 0)
		printf("test_backend_mpi %s%s%s: %d groups, %s (%d failures)\n",
		       argv[1], ndev ? " devices " : "", ndev ? argv[2] : "",
		       groups, total ? "FAILED" : "ok", total);
	MPI_Finalize();
	return total ? 1 : 0;
}
