// SPDX-License-Identifier: MIT
/* backend_mpi.c: the MPI backend: CPU kernels on host memory, one
 * communicator per declared group, nonblocking MPI collectives completed at
 * their wait_tensor. */
#include "internal.h"
#include "runtime.h"

#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* This rank's communicator for one declared group: the instance containing
 * the rank, ranked in the group's dim order (semantics §1), or
 * MPI_COMM_NULL when the rank is not in the group's mesh. */
struct mpi_group {
	MPI_Comm comm;
	int64_t size; /* ranks in one instance */
};

struct mpi_backend {
	struct dt_backend base;
	const struct dt_module *m;
	MPI_Comm world;           /* dup of MPI_COMM_WORLD, errors return */
	struct mpi_group *groups; /* by module group index */
	uint32_t ngroups;
	struct dt_pending *live;  /* issued, not yet waited for */
};

/* An issued collective. The interpreter keeps its input and output tensors
 * alive until the wait. */
struct dt_pending {
	struct dt_pending *next;
	MPI_Request req;
	enum dt_collective_kind kind;
	enum dt_reduce_op reduce;
	int group;
	int64_t group_size;
	const struct dt_node *node;
	struct dt_rt_tensor *output;
	float *stage_in, *stage_out; /* float32 copies (16-bit reductions) */
	int *counts; /* all_to_all, all_permute: send counts, displs; recv
			counts, displs; all_to_all_v: the same and per
			peer its send and receive type */
	MPI_Datatype *types; /* all_to_all_v: 2n subarray types or
				MPI_DATATYPE_NULL */
	int ntypes;
};

/* ------------------------------------------------------------------ */
/* Errors. Every message names the node and its target, at its XML line. */

__attribute__((format(printf, 3, 4)))
static int fail(struct mpi_backend *b, const struct dt_node *n,
		const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	b->base.failed_node = n;
	if (n)
		dt_node_error(b->base.diag, b->m, n, "node '%s' (%s): %s",
			      dt_str_get(b->m, n->name),
			      dt_str_get(b->m, n->target), msg);
	else
		dt_diag_report(b->base.diag, DT_ERROR, b->m->file, 0, NULL,
			       "%s", msg);
	return DT_ERUNTIME;
}

/* DT_OK, or DT_ERUNTIME after reporting "CALL failed: <MPI's message>". */
static int mpi_check(struct mpi_backend *b, const struct dt_node *n,
		     const char *call, int err)
{
	if (err == MPI_SUCCESS)
		return DT_OK;
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error code %d", err);
	return fail(b, n, "%s failed: %s", call, text);
}
#define MPI_CALL(b, n, fn, ...) mpi_check((b), (n), #fn, fn(__VA_ARGS__))

/* ------------------------------------------------------------------ */
/* Types and reduce ops. */

static bool is_half(enum dt_dtype t)
{
	return t == DT_FLOAT16 || t == DT_BFLOAT16;
}

/* The MPI type that moves elements of `t`. MPI has no 16-bit float types:
 * they move as MPI_UINT16_T and are reduced through float32. bool is one
 * byte holding 0 or 1. */
static MPI_Datatype mpi_type(enum dt_dtype t)
{
	switch (t) {
	case DT_FLOAT32: return MPI_FLOAT;
	case DT_FLOAT64: return MPI_DOUBLE;
	case DT_INT64: return MPI_INT64_T;
	case DT_INT32: return MPI_INT32_T;
	case DT_INT16: return MPI_INT16_T;
	case DT_INT8: return MPI_INT8_T;
	case DT_FLOAT16:
	case DT_BFLOAT16: return MPI_UINT16_T;
	case DT_UINT8:
	case DT_BOOL: return MPI_UINT8_T;
	default: dt_die(__FILE__, __LINE__, "bad dtype %d", (int)t);
	}
}

/* The MPI op for `op` on `t`; avg is a sum divided at the wait. bool
 * follows PyTorch's NCCL mapping: sum and max are a logical or, product
 * and min a logical and, avg is refused. */
static bool mpi_op(enum dt_reduce_op op, enum dt_dtype t, MPI_Op *out)
{
	bool boolean = t == DT_BOOL;
	switch (op) {
	case DT_REDUCE_SUM: *out = boolean ? MPI_MAX : MPI_SUM; return true;
	case DT_REDUCE_AVG: *out = MPI_SUM; return !boolean;
	case DT_REDUCE_MAX: *out = MPI_MAX; return true;
	case DT_REDUCE_MIN: *out = MPI_MIN; return true;
	case DT_REDUCE_PRODUCT:
		*out = boolean ? MPI_MIN : MPI_PROD;
		return true;
	default: return false;
	}
}

static char *tensor_data(const struct dt_rt_tensor *t)
{
	return (char *)t->buf->data + t->offset * dt_dtype_size(t->dtype);
}

/* An element count as MPI's int, or a reported error. */
static int to_count(struct mpi_backend *b, const struct dt_node *n,
		    int64_t v, int *out)
{
	if (v < 0 || v > INT_MAX)
		return fail(b, n, "%lld elements exceed what one MPI call can "
			    "move (INT_MAX)", (long long)v);
	*out = (int)v;
	return DT_OK;
}

/* ------------------------------------------------------------------ */
/* Starting collectives. */

static int start_all_gather(struct mpi_backend *b, MPI_Comm comm,
			    const struct dt_collective_call *c,
			    struct dt_pending *p)
{
	int64_t nin = dt_rt_numel(c->input);
	DT_REQUIRE(dt_rt_numel(c->output) == nin * c->group_size);
	int count = 0;
	int rc = to_count(b, c->node, nin, &count);
	if (rc != DT_OK)
		return rc;
	MPI_Datatype type = mpi_type(c->input->dtype);
	return MPI_CALL(b, c->node, MPI_Iallgather, tensor_data(c->input),
			count, type, tensor_data(c->output), count, type, comm,
			&p->req);
}

/* all_reduce and reduce_scatter. 16-bit floats are reduced in float32
 * staging buffers (converted back, rounded to nearest even, at the wait),
 * so their result is the float32 reduction rounded once. */
static int start_reduction(struct mpi_backend *b, MPI_Comm comm,
			   const struct dt_collective_call *c,
			   struct dt_pending *p)
{
	enum dt_dtype t = c->input->dtype;
	MPI_Op op;
	if (!mpi_op(c->reduce, t, &op))
		return fail(b, c->node, "reduce op '%s' is not defined on %s "
			    "tensors", dt_reduce_name(c->reduce),
			    dt_dtype_name(t));
	int64_t nin = dt_rt_numel(c->input), nout = dt_rt_numel(c->output);
	bool scatter = c->kind == DT_COLL_REDUCE_SCATTER;
	DT_REQUIRE(scatter ? nin == nout * c->group_size : nin == nout);
	int count = 0;
	int rc = to_count(b, c->node, scatter ? nout : nin, &count);
	if (rc != DT_OK)
		return rc;
	const void *send = tensor_data(c->input);
	void *recv = tensor_data(c->output);
	MPI_Datatype type = mpi_type(t);
	if (is_half(t)) {
		p->stage_in = malloc((size_t)nin * sizeof(float) + 1);
		p->stage_out = malloc((size_t)nout * sizeof(float) + 1);
		if (!p->stage_in || !p->stage_out)
			return fail(b, c->node, "out of memory for the float32 "
				    "staging buffers (%lld elements)",
				    (long long)nin);
		for (int64_t i = 0; i < nin; i++)
			p->stage_in[i] = (float)dt_load_element(
				t, (const char *)send + 2 * i);
		send = p->stage_in;
		recv = p->stage_out;
		type = MPI_FLOAT;
	}
	if (scatter) {
		DT_REQUIRE(send != recv);
		return MPI_CALL(b, c->node, MPI_Ireduce_scatter_block, send,
				recv, count, type, op, comm, &p->req);
	}
	return MPI_CALL(b, c->node, MPI_Iallreduce,
			send == recv ? MPI_IN_PLACE : send, recv, count, type,
			op, comm, &p->req);
}

/* Rows per peer from the split sizes, or equal splits of `rows`; stores
 * element counts and displacements. */
static int fill_splits(struct mpi_backend *b,
		       const struct dt_collective_call *c,
		       const int64_t *splits, int64_t rows, int64_t row,
		       const char *what, int *counts, int *displs)
{
	int64_t n = c->group_size, total = 0;
	if (!splits && rows % n != 0)
		return fail(b, c->node, "%s dim 0 (%lld rows) does not split "
			    "evenly over %lld ranks and no split sizes are "
			    "given", what, (long long)rows, (long long)n);
	for (int64_t i = 0; i < n; i++) {
		int64_t r = splits ? splits[i] : rows / n;
		int rc = to_count(b, c->node, total, &displs[i]);
		if (rc == DT_OK)
			rc = to_count(b, c->node, r * row, &counts[i]);
		if (rc != DT_OK)
			return rc;
		total += r * row;
	}
	if (total != rows * row)
		return fail(b, c->node, "%s split sizes sum to %lld rows but "
			    "dim 0 has %lld", what,
			    (long long)(total / (row ? row : 1)),
			    (long long)rows);
	return DT_OK;
}

static int start_all_to_all(struct mpi_backend *b, MPI_Comm comm,
			    const struct dt_collective_call *c,
			    struct dt_pending *p)
{
	const struct dt_rt_tensor *in = c->input, *out = c->output;
	DT_REQUIRE(in->rank >= 1 && out->rank == in->rank);
	int64_t row = 1; /* elements per dim-0 row */
	for (int i = 1; i < in->rank; i++)
		row *= in->shape[i];
	int n = (int)c->group_size;
	p->counts = dt_malloc(4 * (size_t)n * sizeof(int));
	int *scount = p->counts, *sdispl = scount + n;
	int *rcount = sdispl + n, *rdispl = rcount + n;
	int rc = fill_splits(b, c, c->input_splits, in->shape[0], row, "input",
			     scount, sdispl);
	if (rc == DT_OK)
		rc = fill_splits(b, c, c->output_splits, out->shape[0], row,
				 "output", rcount, rdispl);
	if (rc != DT_OK)
		return rc;
	MPI_Datatype type = mpi_type(in->dtype);
	return MPI_CALL(b, c->node, MPI_Ialltoallv, tensor_data(in), scount,
			sdispl, type, tensor_data(out), rcount, rdispl, type,
			comm, &p->req);
}

/* all_permute: this rank's whole input to position permutation[me], its
 * output from the position whose entry is me; one MPI_Ialltoallv with a
 * single nonzero count each way, so it is one request like the others. */
static int start_all_permute(struct mpi_backend *b, MPI_Comm comm,
			     const struct dt_collective_call *c,
			     struct dt_pending *p)
{
	int n = (int)c->group_size, me = 0;
	int rc = MPI_CALL(b, c->node, MPI_Comm_rank, comm, &me);
	if (rc != DT_OK)
		return rc;
	p->counts = dt_calloc(4 * (size_t)n, sizeof(int));
	int *scount = p->counts, *sdispl = scount + n;
	int *rcount = sdispl + n, *rdispl = rcount + n;
	rc = to_count(b, c->node, dt_rt_numel(c->input),
		      &scount[c->permutation[me]]);
	for (int i = 0; i < n && rc == DT_OK; i++)
		if (c->permutation[i] == me)
			rc = to_count(b, c->node, dt_rt_numel(c->output),
				      &rcount[i]);
	if (rc != DT_OK)
		return rc;
	MPI_Datatype type = mpi_type(c->input->dtype);
	return MPI_CALL(b, c->node, MPI_Ialltoallv, tensor_data(c->input),
			scount, sdispl, type, tensor_data(c->output), rcount,
			rdispl, type, comm, &p->req);
}

/* The subarray of box b (from: the sender's start, else the receiver's)
 * in shard t, or MPI_BYTE (count 0) when nothing moves. */
static int box_type(struct mpi_backend *b, const struct dt_node *n,
		    const struct dt_rt_tensor *t, const struct dt_rt_box *box,
		    bool from, MPI_Datatype *out, int *count)
{
	*out = MPI_BYTE;
	*count = 0;
	if (!box->any)
		return DT_OK;
	int sizes[DT_MAX_RANK], subs[DT_MAX_RANK], starts[DT_MAX_RANK];
	for (int d = 0; d < t->rank; d++) {
		int rc = to_count(b, n, t->shape[d], &sizes[d]);
		if (rc == DT_OK)
			rc = to_count(b, n, box->len[d], &subs[d]);
		if (rc == DT_OK)
			rc = to_count(b, n, from ? box->from[d] : box->to[d],
				      &starts[d]);
		if (rc != DT_OK)
			return rc;
	}
	MPI_Datatype type;
	int rc = MPI_CALL(b, n, MPI_Type_create_subarray, t->rank, sizes,
			  subs, starts, MPI_ORDER_C, mpi_type(t->dtype), &type);
	if (rc == DT_OK)
		rc = MPI_CALL(b, n, MPI_Type_commit, &type);
	if (rc == DT_OK) {
		*out = type;
		*count = 1;
	}
	return rc;
}

/* all_to_all_v: every box straight from the input shard into the output
 * shard (subarray types, one MPI_Ialltoallw: no staging), the output's
 * padding zeroed first. */
static int start_all_to_all_v(struct mpi_backend *b, MPI_Comm comm,
			      const struct dt_collective_call *c,
			      struct dt_pending *p)
{
	int n = (int)c->group_size, me = 0;
	int rc = MPI_CALL(b, c->node, MPI_Comm_rank, comm, &me);
	if (rc != DT_OK)
		return rc;
	DT_REQUIRE(c->input->rank == c->layout.rank &&
		   c->output->rank == c->layout.rank && c->layout.rank >= 1);
	struct dt_rt_box *box = dt_calloc(2 * (size_t)n, sizeof *box);
	dt_rt_transfer_boxes(c, me, true, box);
	dt_rt_transfer_boxes(c, me, false, box + n);
	p->counts = dt_calloc(4 * (size_t)n, sizeof(int));
	p->types = dt_calloc(2 * (size_t)n, sizeof(MPI_Datatype));
	for (int i = 0; i < 2 * n; i++)
		p->types[i] = MPI_DATATYPE_NULL;
	p->ntypes = 2 * n;
	int *scount = p->counts, *sdispl = scount + n;
	int *rcount = sdispl + n, *rdispl = rcount + n;
	for (int q = 0; q < n && rc == DT_OK; q++) {
		rc = box_type(b, c->node, c->input, &box[q], true,
			      &p->types[q], &scount[q]);
		if (rc == DT_OK)
			rc = box_type(b, c->node, c->output, &box[n + q], false,
				      &p->types[n + q], &rcount[q]);
	}
	dt_free(box);
	if (rc != DT_OK)
		return rc;
	memset(tensor_data(c->output), 0, (size_t)dt_rt_numel(c->output) *
		      dt_dtype_size(c->output->dtype));
	return MPI_CALL(b, c->node, MPI_Ialltoallw, tensor_data(c->input),
			scount, sdispl, p->types, tensor_data(c->output),
			rcount, rdispl, p->types + n, comm, &p->req);
}

static void pending_free(struct dt_pending *p)
{
	for (int i = 0; i < p->ntypes; i++)
		if (p->types[i] != MPI_DATATYPE_NULL && p->types[i] != MPI_BYTE)
			MPI_Type_free(&p->types[i]);
	dt_free(p->types);
	free(p->stage_in);
	free(p->stage_out);
	dt_free(p->counts);
	dt_free(p);
}

static int mpi_collective(struct dt_backend *base,
			  const struct dt_collective_call *c,
			  struct dt_pending **out)
{
	struct mpi_backend *b = (struct mpi_backend *)base;
	*out = NULL;
	DT_REQUIRE(c->group >= 0 && (uint32_t)c->group < b->ngroups);
	DT_REQUIRE(dt_rt_is_contiguous(c->input) &&
		   dt_rt_is_contiguous(c->output));
	DT_REQUIRE(c->input->dtype == c->output->dtype);
	const struct mpi_group *g = &b->groups[c->group];
	const struct dt_group *decl = &b->m->groups.data[c->group];
	const char *group = dt_str_get(b->m, decl->name);
	const char *mesh = dt_str_get(b->m, b->m->meshes.data[decl->mesh].name);
	if (g->comm == MPI_COMM_NULL)
		return fail(b, c->node, "rank %d is not in mesh '%s' of group "
			    "'%s'", b->base.rank, mesh, group);
	if (c->group_size != g->size)
		return fail(b, c->node, "group size %lld differs from group "
			    "'%s' (%lld ranks)", (long long)c->group_size,
			    group, (long long)g->size);
	struct dt_pending *p = dt_calloc(1, sizeof(*p));
	p->req = MPI_REQUEST_NULL;
	p->kind = c->kind;
	p->reduce = c->reduce;
	p->group = c->group;
	p->group_size = c->group_size;
	p->node = c->node;
	p->output = c->output;
	int rc;
	switch (c->kind) {
	case DT_COLL_ALL_GATHER: rc = start_all_gather(b, g->comm, c, p); break;
	case DT_COLL_REDUCE_SCATTER:
	case DT_COLL_ALL_REDUCE: rc = start_reduction(b, g->comm, c, p); break;
	case DT_COLL_ALL_TO_ALL: rc = start_all_to_all(b, g->comm, c, p); break;
	case DT_COLL_ALL_PERMUTE:
		rc = start_all_permute(b, g->comm, c, p);
		break;
	case DT_COLL_ALL_TO_ALL_V:
		rc = start_all_to_all_v(b, g->comm, c, p);
		break;
	default: dt_die(__FILE__, __LINE__, "bad collective %d", (int)c->kind);
	}
	if (rc != DT_OK) {
		pending_free(p); /* nothing was started */
		return rc;
	}
	p->next = b->live;
	b->live = p;
	*out = p;
	return DT_OK;
}

/* ------------------------------------------------------------------ */
/* Completion. */

/* avg on non-16-bit types: divide the sum in the output's own type (integer
 * division truncates toward zero, as NCCL's integer avg). */
static void divide_output(struct dt_rt_tensor *t, int64_t n)
{
	int64_t count = dt_rt_numel(t);
	char *d = tensor_data(t);
#define DIVIDE(T, W)                                                       \
	for (int64_t i = 0; i < count; i++)                                \
		((T *)(void *)d)[i] = (T)((W)((T *)(void *)d)[i] / (W)n);  \
	break
	switch ((enum dt_dtype)t->dtype) {
	case DT_FLOAT32: DIVIDE(float, float);
	case DT_FLOAT64: DIVIDE(double, double);
	case DT_INT64: DIVIDE(int64_t, int64_t);
	case DT_INT32: DIVIDE(int32_t, int64_t);
	case DT_INT16: DIVIDE(int16_t, int64_t);
	case DT_INT8: DIVIDE(int8_t, int64_t);
	case DT_UINT8: DIVIDE(uint8_t, int64_t);
	default: dt_die(__FILE__, __LINE__, "avg on dtype %d", (int)t->dtype);
	}
#undef DIVIDE
}

static void unlink_pending(struct mpi_backend *b, struct dt_pending *p)
{
	for (struct dt_pending **q = &b->live; *q; q = &(*q)->next)
		if (*q == p) {
			*q = p->next;
			return;
		}
	dt_die(__FILE__, __LINE__, "wait on a collective that is not pending");
}

/* MPI_Wait under the watchdog: past b->base.timeout seconds the wait
 * fails, naming the rank, the node and the collective (the caller ends
 * the job: the request cannot be cancelled). */
static int wait_request(struct mpi_backend *b, struct dt_pending *p)
{
	int err = MPI_SUCCESS;
	if (!dt_mpi_wait(&p->req, b->base.timeout, b->base.spin, &err))
		return dt_rt_timeout_fail(&b->base, b->m, p->node, p->kind,
					  p->group);
	return mpi_check(b, p->node, "MPI_Wait", err);
}

static int mpi_wait(struct dt_backend *base, struct dt_pending *p)
{
	struct mpi_backend *b = (struct mpi_backend *)base;
	unlink_pending(b, p);
	int rc = wait_request(b, p);
	if (rc == DT_OK && p->stage_out) {
		enum dt_dtype t = p->output->dtype;
		char *d = tensor_data(p->output);
		int64_t count = dt_rt_numel(p->output);
		float scale = p->reduce == DT_REDUCE_AVG ? (float)p->group_size
							 : 1;
		for (int64_t i = 0; i < count; i++)
			dt_store_element(t, d + 2 * i, p->stage_out[i] / scale);
	} else if (rc == DT_OK && p->reduce == DT_REDUCE_AVG &&
		   (p->kind == DT_COLL_ALL_REDUCE ||
		    p->kind == DT_COLL_REDUCE_SCATTER)) {
		divide_output(p->output, p->group_size);
	}
	pending_free(p);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Memory and compute: host memory, the shared CPU kernels. */

/* Tensor storage uses malloc, not dt_malloc: running out of memory for a
 * tensor is a reported runtime failure, not an abort. */
static void *mpi_alloc(struct dt_backend *b, size_t bytes)
{
	(void)b;
	return malloc(bytes ? bytes : 1);
}

static void mpi_release(struct dt_backend *b, void *p)
{
	(void)b;
	free(p);
}

static int mpi_memcpy(struct dt_backend *b, void *dst, const void *src,
		      size_t bytes)
{
	(void)b;
	if (bytes)
		memcpy(dst, src, bytes);
	return DT_OK;
}

/* OpenMPI moves a nonblocking collective only inside MPI calls (no
 * progress thread): one test of the oldest request in flight drives all of
 * them, so they advance between compute nodes instead of at the wait. A
 * request the test completes becomes MPI_REQUEST_NULL, which its wait
 * then returns at once. */
static int mpi_progress(struct dt_backend *base)
{
	struct mpi_backend *b = (struct mpi_backend *)base;
	for (struct dt_pending *p = b->live; p; p = p->next)
		if (p->req != MPI_REQUEST_NULL) {
			int done = 0;
			return MPI_CALL(b, p->node, MPI_Test, &p->req, &done,
					MPI_STATUS_IGNORE);
		}
	return DT_OK;
}

/* Host compute is synchronous; collectives complete at their wait. */
static int mpi_synchronize(struct dt_backend *b)
{
	(void)b;
	return DT_OK;
}

static void mpi_destroy(struct dt_backend *base)
{
	struct mpi_backend *b = (struct mpi_backend *)base;
	/* Collectives left pending by a failed run: MPI forbids freeing the
	 * request of a nonblocking collective, and waiting could hang when a
	 * peer failed, so unfinished ones (and their buffers) are left to the
	 * process exit that follows such a failure. */
	while (b->live) {
		struct dt_pending *p = b->live;
		b->live = p->next;
		int done = 0;
		int rc = MPI_Test(&p->req, &done, MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS && done)
			pending_free(p);
	}
	for (uint32_t i = 0; i < b->ngroups; i++)
		if (b->groups[i].comm != MPI_COMM_NULL)
			MPI_Comm_free(&b->groups[i].comm);
	if (b->world != MPI_COMM_NULL)
		MPI_Comm_free(&b->world);
	dt_free(b->groups);
	dt_free(b);
}

static const struct dt_backend_ops mpi_ops = {
	.name = "mpi",
	.alloc = mpi_alloc,
	.release = mpi_release,
	.upload = mpi_memcpy,
	.download = mpi_memcpy,
	.copy = dt_cpu_copy,
	.kernel = dt_cpu_kernel,
	.collective = mpi_collective,
	.wait = mpi_wait,
	.synchronize = mpi_synchronize,
	.progress = mpi_progress,
	.destroy = mpi_destroy,
};

/* ------------------------------------------------------------------ */
/* Creation. */

/* Collective over the world: the ranks' graphs must declare the same
 * meshes and groups, else their communicator splits would not match. */
static int check_agreement(struct mpi_backend *b)
{
	uint64_t fp = dt_topology_fingerprint(b->m);
	uint64_t mine[2] = {fp, ~fp}, top[2];
	int rc = MPI_CALL(b, NULL, MPI_Allreduce, mine, top, 2, MPI_UINT64_T,
			  MPI_MAX, b->world);
	if (rc == DT_OK && (top[0] != fp || ~top[1] != fp))
		rc = fail(b, NULL, "the ranks' graphs declare different meshes "
			  "or groups (per-rank graphs must declare the same "
			  "ones in the same order)");
	return rc;
}

/* Split the world once per declared group: colour = the group instance
 * containing this rank, key = its position in the group's dim order, so
 * MPI rank order inside each communicator is the group's layout order. */
static int create_groups(struct mpi_backend *b)
{
	const struct dt_module *m = b->m;
	for (uint32_t i = 0; i < b->ngroups; i++) {
		const struct dt_group *g = &m->groups.data[i];
		const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
		int64_t instance = 0, pos = 0;
		bool member = dt_group_locate(mesh, g->dims, g->ndims,
					      b->base.rank, &instance, &pos);
		b->groups[i].size = dt_group_size(mesh, g->dims, g->ndims);
		int rc = MPI_CALL(b, NULL, MPI_Comm_split, b->world,
				  member ? (int)instance : MPI_UNDEFINED,
				  (int)pos, &b->groups[i].comm);
		if (rc != DT_OK)
			return rc;
		if (!member)
			continue;
		MPI_Comm comm = b->groups[i].comm;
		int size = 0, rank = -1;
		rc = MPI_CALL(b, NULL, MPI_Comm_set_errhandler, comm,
			      MPI_ERRORS_RETURN);
		if (rc == DT_OK)
			rc = MPI_CALL(b, NULL, MPI_Comm_size, comm, &size);
		if (rc == DT_OK)
			rc = MPI_CALL(b, NULL, MPI_Comm_rank, comm, &rank);
		if (rc != DT_OK)
			return rc;
		DT_REQUIRE(size == b->groups[i].size && rank == pos);
	}
	return DT_OK;
}

/* A wait's yielding spin when more ranks share this host than it has
 * cores: long enough for a collective of a few 100 KiB, then the rank
 * sleeps between tests (dt_rt_poll). 4 ranks on 2 cores, quiet: 200 µs
 * made a 256 KiB bucket 1.2x slower than yielding throughout; 2 ms was as
 * fast or faster on 16 KiB to 4 MiB (tools/bench_bucket.py --spin,
 * semantics §4.7). */
#define OVERSUBSCRIBED_SPIN 2e-3

/* This rank's share of the host (ranks on one host split its memory) and
 * how its waits poll. */
static int share_host(struct mpi_backend *b)
{
	MPI_Comm host = MPI_COMM_NULL;
	int local = 1;
	int rc = MPI_CALL(b, NULL, MPI_Comm_split_type, b->world,
			  MPI_COMM_TYPE_SHARED, b->base.rank, MPI_INFO_NULL,
			  &host);
	if (rc == DT_OK)
		rc = MPI_CALL(b, NULL, MPI_Comm_size, host, &local);
	if (host != MPI_COMM_NULL)
		MPI_Comm_free(&host);
	b->base.memory = dt_host_memory() / (size_t)(local > 0 ? local : 1);
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	b->base.spin = cores > 0 && local > cores ? OVERSUBSCRIBED_SPIN : DT_RT_SPIN;
	dt_host_heap_keep();
	return rc;
}

struct dt_backend *dt_backend_mpi_create(const struct dt_module *m,
					 struct dt_diag *d)
{
	int initialized = 0;
	MPI_Initialized(&initialized);
	DT_REQUIRE(initialized);
	struct mpi_backend *b = dt_calloc(1, sizeof(*b));
	b->base.ops = &mpi_ops;
	b->base.diag = d;
	b->m = m;
	b->world = MPI_COMM_NULL;
	b->ngroups = m->groups.len;
	b->groups = dt_calloc(b->ngroups ? b->ngroups : 1, sizeof(*b->groups));
	for (uint32_t i = 0; i < b->ngroups; i++)
		b->groups[i].comm = MPI_COMM_NULL;
	int rc = MPI_CALL(b, NULL, MPI_Comm_rank, MPI_COMM_WORLD,
			  &b->base.rank);
	if (rc == DT_OK)
		rc = MPI_CALL(b, NULL, MPI_Comm_size, MPI_COMM_WORLD,
			      &b->base.world_size);
	if (rc == DT_OK)
		rc = MPI_CALL(b, NULL, MPI_Comm_dup, MPI_COMM_WORLD, &b->world);
	if (rc == DT_OK)
		rc = MPI_CALL(b, NULL, MPI_Comm_set_errhandler, b->world,
			      MPI_ERRORS_RETURN);
	/* Agreement first: it is collective, and every rank reaches it; the
	 * size check after it then fails on all ranks alike. */
	if (rc == DT_OK)
		rc = check_agreement(b);
	const struct dt_mesh *which;
	int64_t need = dt_required_world(m, &which);
	if (rc == DT_OK && which && need != b->base.world_size) {
		const char *name = dt_str_get(m, which->name);
		int size = b->base.world_size;
		if (need == which->size)
			dt_diag_report(d, DT_ERROR, m->file, which->line, NULL,
				       "the graph's mesh '%s' has %lld devices "
				       "but mpirun started %d ranks", name,
				       (long long)need, size);
		else
			dt_diag_report(d, DT_ERROR, m->file, which->line, NULL,
				       "the graph's mesh '%s' names global "
				       "rank %lld, so it needs %lld ranks, but "
				       "mpirun started %d", name,
				       (long long)need - 1, (long long)need,
				       size);
		rc = DT_ERUNTIME;
	}
	if (rc == DT_OK)
		rc = create_groups(b);
	if (rc == DT_OK)
		rc = share_host(b);
	if (rc != DT_OK) {
		mpi_destroy(&b->base);
		return NULL;
	}
	return &b->base;
}
