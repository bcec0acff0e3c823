// SPDX-License-Identifier: MIT
/* nccl_collective.c: the NCCL backend's collectives (backend_nccl.c
 * creates the backend): each issued on the communication stream after
 * the compute work queued before it, completed at its wait_tensor by a
 * stream-ordered wait; with a timeout, a watchdog thread watches the
 * collectives waited for (see watchdog below). */
#include "nccl_internal.h"

#include <time.h>
#include <unistd.h>

/* The NCCL type that moves or reduces `t`; int16 has none (moved as
 * bytes, reduced through int32). bool is one byte holding 0 or 1. */
static bool nccl_type(enum dt_dtype t, ncclDataType_t *out)
{
	switch (t) {
	case DT_FLOAT32:
		*out = ncclFloat32;
		return true;
	case DT_FLOAT16:
		*out = ncclFloat16;
		return true;
	case DT_BFLOAT16:
		*out = ncclBfloat16;
		return true;
	case DT_FLOAT64:
		*out = ncclFloat64;
		return true;
	case DT_INT64:
		*out = ncclInt64;
		return true;
	case DT_INT32:
		*out = ncclInt32;
		return true;
	case DT_INT8:
		*out = ncclInt8;
		return true;
	case DT_UINT8:
	case DT_BOOL:
		*out = ncclUint8;
		return true;
	default:
		return false;
	}
}

/* backend_mpi.c's mapping: bool sum and max are a logical or, product
 * and min a logical and, avg is refused. */
static bool nccl_op(enum dt_reduce_op op, enum dt_dtype t, ncclRedOp_t *out)
{
	static const ncclRedOp_t ops[DT_NREDUCE] = {[DT_REDUCE_SUM] = ncclSum,
						    [DT_REDUCE_AVG] = ncclAvg,
						    [DT_REDUCE_MAX] = ncclMax,
						    [DT_REDUCE_MIN] = ncclMin,
						    [DT_REDUCE_PRODUCT] =
							ncclProd};
	bool boolean = t == DT_BOOL;
	if ((unsigned)op >= DT_NREDUCE || (boolean && op == DT_REDUCE_AVG))
		return false;
	*out = !boolean			 ? ops[op]
	       : op == DT_REDUCE_SUM	 ? ncclMax
	       : op == DT_REDUCE_PRODUCT ? ncclMin
					 : ops[op];
	return true;
}

/* The communication stream waits for the work queued so far on the
 * compute stream (the collective's input). */
static int follow_compute(struct nccl_backend *b, struct dt_pending *p)
{
	int rc = dt_nccl_cuda_check(b, p->node, "cudaEventRecord",
				    cudaEventRecord(p->ready, b->cu.stream));
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(
		    b, p->node, "cudaStreamWaitEvent",
		    cudaStreamWaitEvent(b->comm_stream, p->ready, 0));
	return rc;
}

/* Element counts and displacements per peer from the split sizes (rows
 * of dim 0), or equal splits. */
static int fill_splits(struct nccl_backend *b,
		       const struct dt_collective_call *c,
		       const int64_t *splits, int64_t rows, int64_t row,
		       const char *what, int64_t *counts, int64_t *displs)
{
	int64_t n = c->group_size, total = 0;
	if (!splits && rows % n != 0)
		return dt_rt_fail(
		    &b->base, c->m, c->node,
		    "%s dim 0 (%lld rows) does not split evenly over %lld "
		    "ranks and no split sizes are given",
		    what, (long long)rows, (long long)n);
	for (int64_t i = 0; i < n; i++) {
		int64_t r = splits ? splits[i] : rows / n;
		displs[i] = total;
		counts[i] = r * row;
		total += r * row;
	}
	if (total != rows * row)
		return dt_rt_fail(
		    &b->base, c->m, c->node,
		    "%s split sizes sum to %lld rows but dim 0 has %lld", what,
		    (long long)(total / (row ? row : 1)), (long long)rows);
	return DT_OK;
}

/* Elements are `size` bytes, moved as NCCL elements of `unit` bytes. */
static int start_all_to_all(struct nccl_backend *b, ncclComm_t comm,
			    const struct dt_collective_call *c,
			    ncclDataType_t type, int size, int unit)
{
	const struct dt_rt_tensor *in = c->input, *out = c->output;
	DT_REQUIRE(in->rank >= 1 && out->rank == in->rank);
	int64_t row = 1;
	for (int i = 1; i < in->rank; i++)
		row *= in->shape[i];
	int64_t n = c->group_size;
	int64_t *v = dt_calloc(4 * (size_t)n, sizeof(int64_t));
	int64_t *sc = v, *sd = v + n, *rc_ = v + 2 * n, *rd = v + 3 * n;
	int rc = fill_splits(b, c, c->input_splits, in->shape[0], row, "input",
			     sc, sd);
	if (rc == DT_OK)
		rc = fill_splits(b, c, c->output_splits, out->shape[0], row,
				 "output", rc_, rd);
	char *send = dt_cuda_ptr(in), *recv = dt_cuda_ptr(out);
	if (rc == DT_OK)
		rc = dt_nccl_check(b, c->node, "ncclGroupStart",
				   ncclGroupStart(), NULL);
	if (rc == DT_OK) {
		for (int64_t p = 0; p < n; p++) {
			ncclResult_t r = ncclSend(
			    send + sd[p] * size, (size_t)(sc[p] * size / unit),
			    type, (int)p, comm, b->comm_stream);
			if (r == ncclSuccess)
				r = ncclRecv(recv + rd[p] * size,
					     (size_t)(rc_[p] * size / unit),
					     type, (int)p, comm,
					     b->comm_stream);
			if (r != ncclSuccess) {
				rc = dt_nccl_check(
				    b, c->node, "ncclSend/ncclRecv", r, comm);
				break;
			}
		}
		int end = dt_nccl_check(b, c->node, "ncclGroupEnd",
					ncclGroupEnd(), comm);
		rc = rc == DT_OK ? end : rc;
	}
	dt_free(v);
	return rc;
}

/* all_reduce and reduce_scatter; int16 is reduced through int32 staging
 * buffers converted on the communication stream. */
static int start_reduction(struct nccl_backend *b, ncclComm_t comm,
			   const struct dt_collective_call *c,
			   struct dt_pending *p)
{
	enum dt_dtype t = c->input->dtype;
	ncclRedOp_t op;
	ncclDataType_t type = ncclInt32;
	if (!nccl_op(c->reduce, t, &op))
		return dt_rt_fail(&b->base, c->m, c->node,
				  "reduce op '%s' is not defined on %s tensors",
				  dt_reduce_name(c->reduce), dt_dtype_name(t));
	bool scatter = c->kind == DT_COLL_REDUCE_SCATTER;
	int64_t nin = dt_rt_numel(c->input), nout = dt_rt_numel(c->output);
	DT_REQUIRE(scatter ? nin == nout * c->group_size : nin == nout);
	struct dt_rt_tensor in = *c->input, out = *c->output;
	struct dt_buffer hin = {0}, hout = {0};
	if (t == DT_INT16) { /* int16 -> int32 on the compute stream */
		const struct dt_rt_tensor *x = c->input, *y = c->output;
		if (dt_cuda_temp(&b->cu, NULL, x->shape, x->rank, DT_INT32, &in,
				 &hin) != DT_OK ||
		    dt_cuda_temp(&b->cu, NULL, y->shape, y->rank, DT_INT32,
				 &out, &hout) != DT_OK ||
		    dt_cuda_copy(&b->cu, NULL, &in, c->input) != DT_OK) {
			dt_cuda_release(&b->cu, &hin);
			dt_cuda_release(&b->cu, &hout);
			return dt_rt_fail(&b->base, c->m, c->node,
					  "cannot stage int16 through int32");
		}
		p->stage[0] = hin.data;
		p->stage[1] = hout.data;
	} else {
		DT_REQUIRE(nccl_type(t, &type));
	}
	int rc = follow_compute(b, p);
	if (rc == DT_OK && scatter)
		rc = dt_nccl_check(b, c->node, "ncclReduceScatter",
				   ncclReduceScatter(dt_cuda_ptr(&in),
						     dt_cuda_ptr(&out),
						     (size_t)nout, type, op,
						     comm, b->comm_stream),
				   comm);
	else if (rc == DT_OK)
		rc = dt_nccl_check(
		    b, c->node, "ncclAllReduce",
		    ncclAllReduce(dt_cuda_ptr(&in), dt_cuda_ptr(&out),
				  (size_t)nin, type, op, comm, b->comm_stream),
		    comm);
	if (rc == DT_OK && t == DT_INT16) {
		struct dt_cu_walk w;
		const struct dt_rt_tensor *ts[2] = {c->output, &out};
		dt_cuda_walk(&w, out.shape, out.rank, ts, 2);
		rc = dt_nccl_cuda_check(b, c->node, "dt_cu_copy",
					dt_cu_copy(&w, b->comm_stream));
	}
	return rc;
}

static struct dt_pending *pending_get(struct nccl_backend *b,
				      const struct dt_node *n)
{
	struct dt_pending *p = b->spare;
	if (p) {
		b->spare = p->next;
	} else {
		p = dt_calloc(1, sizeof(*p));
		if (dt_nccl_cuda_check(
			b, n, "cudaEventCreateWithFlags",
			cudaEventCreateWithFlags(
			    &p->ready, cudaEventDisableTiming)) != DT_OK ||
		    dt_nccl_cuda_check(b, n, "cudaEventCreateWithFlags",
				       cudaEventCreateWithFlags(
					   &p->done, cudaEventDisableTiming)) !=
			DT_OK) {
			if (p->ready)
				cudaEventDestroy(p->ready);
			dt_free(p);
			return NULL;
		}
	}
	p->node = n;
	p->stage[0] = p->stage[1] = NULL;
	return p;
}

/* Back to the spare list; staging buffers are freed after the
 * communication stream is done with them. */
void dt_nccl_pending_put(struct nccl_backend *b, struct dt_pending *p)
{
	for (int k = 0; k < 2; k++)
		if (p->stage[k])
			(void)cudaFreeAsync(p->stage[k], b->comm_stream);
	p->next = b->spare;
	b->spare = p;
}

int dt_nccl_collective(struct dt_backend *base,
		       const struct dt_collective_call *c,
		       struct dt_pending **out)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	*out = NULL;
	DT_REQUIRE(c->group >= 0 && (uint32_t)c->group < b->ngroups);
	DT_REQUIRE(dt_rt_is_contiguous(c->input) &&
		   dt_rt_is_contiguous(c->output));
	DT_REQUIRE(c->input->dtype == c->output->dtype);
	const struct nccl_group *g = &b->groups[c->group];
	const struct dt_group *decl = &b->m->groups.data[c->group];
	const char *group = dt_str_get(b->m, decl->name);
	if (!g->comm)
		return dt_rt_fail(
		    base, c->m, c->node,
		    "rank %d is not in mesh '%s' of group '%s'", base->rank,
		    dt_str_get(b->m, b->m->meshes.data[decl->mesh].name),
		    group);
	if (c->group_size != g->size)
		return dt_rt_fail(
		    base, c->m, c->node,
		    "group size %lld differs from group '%s' (%lld ranks)",
		    (long long)c->group_size, group, (long long)g->size);
	if (c->kind == DT_COLL_ALL_TO_ALL_V) /* semantics §3.1 */
		return dt_rt_fail(
		    base, c->m, c->node,
		    "dt.all_to_all_v runs on the MPI backend only (NCCL has no "
		    "strided sends; plan with --redistribute=dtensor to run "
		    "this redistribution on GPUs)");
	struct dt_pending *p = pending_get(b, c->node);
	if (!p)
		return DT_ERUNTIME;
	p->kind = c->kind;
	p->group = c->group;
	enum dt_dtype t = c->input->dtype;
	ncclDataType_t type = ncclInt8;
	int size = dt_dtype_size(t), esize = 1;
	if (nccl_type(t, &type))
		esize = size;
	int64_t nin = dt_rt_numel(c->input);
	int rc = DT_OK;
	pthread_mutex_lock(&b->issue);
	if (c->kind == DT_COLL_ALL_REDUCE ||
	    c->kind == DT_COLL_REDUCE_SCATTER) {
		rc = start_reduction(b, g->comm, c, p);
	} else {
		/* data movement: int16 moves as bytes */
		rc = follow_compute(b, p);
		if (rc == DT_OK && c->kind == DT_COLL_ALL_GATHER) {
			DT_REQUIRE(dt_rt_numel(c->output) ==
				   nin * c->group_size);
			rc = dt_nccl_check(
			    b, c->node, "ncclAllGather",
			    ncclAllGather(dt_cuda_ptr(c->input),
					  dt_cuda_ptr(c->output),
					  (size_t)(nin * size / esize), type,
					  g->comm, b->comm_stream),
			    g->comm);
		} else if (rc == DT_OK && c->kind == DT_COLL_ALL_PERMUTE) {
			rc = dt_nccl_check(b, c->node, "ncclSend/ncclRecv",
					   (ncclResult_t)dt_nccl_all_permute(
					       g->comm, b->comm_stream, c,
					       (int)type, size, esize),
					   g->comm);
		} else if (rc == DT_OK) {
			rc = start_all_to_all(b, g->comm, c, type, size, esize);
		}
	}
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(
		    b, c->node, "cudaEventRecord",
		    cudaEventRecord(p->done, b->comm_stream));
	pthread_mutex_unlock(&b->issue);
	if (rc != DT_OK) {
		dt_nccl_pending_put(b, p);
		return rc;
	}
	p->next = b->live;
	b->live = p;
	*out = p;
	return DT_OK;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* On the watchdog thread: p's collective failed (`e`, `async`) or is past
 * its deadline. Report it at p's node, abort every communicator (NCCL's
 * kernels stop waiting for peers), and end the process with exit code 3,
 * dtopt's runtime error, as the CLI's watchdog of MPI's blocking steps
 * does; mpirun then ends the job. Nothing is returned to the main thread,
 * which may be blocked in CUDA. When the main thread does not leave NCCL
 * within a second the communicators are left to the process exit. */
static _Noreturn void expire(struct nccl_backend *b, struct dt_pending *p,
			     cudaError_t e, ncclResult_t async)
{
	ncclComm_t comm = b->groups[p->group].comm;
	if (e != cudaSuccess && e != cudaErrorNotReady)
		dt_nccl_cuda_check(b, p->node, "cudaEventQuery", e);
	else if (async != ncclSuccess && async != ncclInProgress)
		dt_nccl_check(b, p->node, "a collective", async, comm);
	else
		dt_rt_timeout_fail(&b->base, b->m, p->node, p->kind, p->group);
	fflush(stderr);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	if (pthread_mutex_timedlock(&b->issue, &until) == 0) {
		for (uint32_t i = 0; i < b->ngroups; i++)
			if (b->groups[i].comm)
				ncclCommAbort(b->groups[i].comm);
		if (b->world)
			ncclCommAbort(b->world);
	}
	_exit(3);
}

/* The watchdog (b->base.timeout > 0), as PyTorch's ProcessGroupNCCL
 * watchdog: every 100 ms it queries each watched collective's completion
 * event and its communicator's asynchronous error; a completed one goes
 * to `finished`, a failed or overdue one ends the process (expire). The
 * deadline counts from the host's wait, so it includes GPU work queued
 * before the collective. */
static void *watchdog(void *ud)
{
	struct nccl_backend *b = ud;
	cudaSetDevice(b->device);
	while (!atomic_load(&b->stop)) {
		struct timespec tick = {0, 100 * 1000000};
		nanosleep(&tick, NULL);
		pthread_mutex_lock(&b->lock);
		for (struct dt_pending **q = &b->watched; *q;) {
			struct dt_pending *p = *q;
			cudaError_t e = cudaEventQuery(p->done);
			if (e == cudaSuccess) {
				*q = p->next;
				p->next = b->finished;
				b->finished = p;
				continue;
			}
			ncclResult_t async = ncclSuccess;
			if (e != cudaErrorNotReady ||
			    ncclCommGetAsyncError(b->groups[p->group].comm,
						  &async) != ncclSuccess ||
			    (async != ncclSuccess && async != ncclInProgress) ||
			    now_s() > p->deadline)
				expire(b, p, e, async);
			q = &p->next;
		}
		pthread_mutex_unlock(&b->lock);
	}
	return NULL;
}

/* Collectives the watchdog saw complete go back to the spare list. */
void dt_nccl_reclaim(struct nccl_backend *b)
{
	pthread_mutex_lock(&b->lock);
	struct dt_pending *p = b->finished;
	b->finished = NULL;
	pthread_mutex_unlock(&b->lock);
	while (p) {
		struct dt_pending *next = p->next;
		dt_nccl_pending_put(b, p);
		p = next;
	}
}

/* The wait is stream-ordered: the compute stream waits for the
 * collective's completion event and the host goes on. With a timeout the
 * collective is handed to the watchdog, which gives it back once done. */
int dt_nccl_wait(struct dt_backend *base, struct dt_pending *p)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	struct dt_pending **q = &b->live;
	while (*q && *q != p)
		q = &(*q)->next;
	DT_REQUIRE(*q == p);
	*q = p->next;
	int rc =
	    dt_nccl_cuda_check(b, p->node, "cudaStreamWaitEvent",
			       cudaStreamWaitEvent(b->cu.stream, p->done, 0));
	if (rc == DT_OK && b->base.timeout > 0 && !b->watching) {
		if (pthread_create(&b->watchdog, NULL, watchdog, b) != 0)
			rc = dt_rt_fail(base, b->m, p->node,
					"cannot start the watchdog thread");
		b->watching = rc == DT_OK;
	}
	if (rc != DT_OK || b->base.timeout <= 0) {
		dt_nccl_pending_put(b, p);
		return rc;
	}
	dt_nccl_reclaim(b);
	p->deadline = now_s() + b->base.timeout;
	pthread_mutex_lock(&b->lock);
	p->next = b->watched;
	b->watched = p;
	pthread_mutex_unlock(&b->lock);
	return DT_OK;
}
