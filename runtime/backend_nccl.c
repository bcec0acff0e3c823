// SPDX-License-Identifier: MIT
/* backend_nccl.c: the NCCL+CUDA backend: one GPU per rank, device memory
 * from the stream-ordered allocator, CUDA kernels and cuBLAS on a compute
 * stream (cuda_kernel.c; the CPU kernel as fallback), NCCL collectives on
 * a communication stream ordered by events, completed at their
 * wait_tensor. The world communicator is bootstrapped over MPI when the
 * caller initialised it (else the process is a world of one), and every
 * declared group gets its communicator from ncclCommSplit with
 * backend_mpi.c's rules. With a timeout, a watchdog thread watches the
 * collectives waited for (see watchdog below). */
#include "cuda_internal.h"
#include "dtopt_config.h"

#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if DTOPT_HAVE_MPI
#include <mpi.h>
#endif

/* This rank's communicator for one declared group (NULL when the rank is
 * not in the group's mesh). */
struct nccl_group {
	ncclComm_t comm;
	int64_t size;
};

/* An issued collective; its events and record are reused. */
struct dt_pending {
	struct dt_pending *next;
	cudaEvent_t ready, done; /* inputs written; collective finished */
	const struct dt_node *node;
	enum dt_collective_kind kind;
	int group;
	void *stage[2]; /* int16 reductions: int32 in, out */
	double deadline; /* watched: CLOCK_MONOTONIC seconds */
};

struct nccl_backend {
	struct dt_backend base; /* first: the interface's pointer is ours */
	const struct dt_module *m;
	struct dt_cuda_ctx cu;
	cudaStream_t comm_stream;
	ncclComm_t world;
	struct nccl_group *groups; /* by module group index */
	uint32_t ngroups;
	struct dt_pending *live, *spare; /* in flight; reusable */
	bool failed;			 /* a collective may be stuck */
	int device;
	/* The watchdog thread (started at the first wait with a timeout):
	 * collectives waited for that it has not seen complete, and those
	 * it has, for the main thread to reuse; under `lock`. The main
	 * thread holds `issue` while it calls NCCL, so the watchdog never
	 * aborts a communicator in use. */
	pthread_t watchdog;
	bool watching;
	atomic_bool stop;
	pthread_mutex_t lock, issue;
	struct dt_pending *watched, *finished;
#if DTOPT_HAVE_MPI
	MPI_Comm mpi; /* dup of MPI_COMM_WORLD, or NULL */
#endif
};

/* ------------------------------------------------------------------ */
/* Errors: `file:line: error: node 'x' (target): API failed: ERROR`. */

static int cuda_check(struct nccl_backend *b, const struct dt_node *n,
		      const char *api, cudaError_t e)
{
	return dt_cuda_check(&b->cu, b->m, n, api, e);
}

static int nccl_check(struct nccl_backend *b, const struct dt_node *n,
		      const char *api, ncclResult_t r, ncclComm_t comm)
{
	if (r == ncclSuccess)
		return DT_OK;
	char text[512];
	const char *last = comm ? ncclGetLastError(comm) : NULL;
	snprintf(text, sizeof(text), "%s%s%s%s", ncclGetErrorString(r),
		 last && *last ? " (" : "", last && *last ? last : "",
		 last && *last ? ")" : "");
	b->failed = true;
	return dt_cuda_fail(&b->cu, b->m, n, api, text);
}

#if DTOPT_HAVE_MPI
static int mpi_check(struct nccl_backend *b, const char *api, int err)
{
	if (err == MPI_SUCCESS)
		return DT_OK;
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error code %d", err);
	return dt_cuda_fail(&b->cu, b->m, NULL, api, text);
}
#endif

/* ------------------------------------------------------------------ */
/* Memory and compute. */

static void *nccl_alloc(struct dt_backend *base, size_t bytes)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	void *p = NULL;
	if (cudaMallocAsync(&p, bytes ? bytes : 1, b->cu.stream) != cudaSuccess)
		return NULL;
	return p;
}

static void nccl_release(struct dt_backend *base, void *p)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	(void)cudaFreeAsync(p, b->cu.stream); /* errors show at the next sync */
}

static int memcpy_sync(struct nccl_backend *b, void *dst, const void *src,
		       size_t bytes, enum cudaMemcpyKind kind)
{
	if (!bytes)
		return DT_OK;
	if (cuda_check(b, NULL, "cudaMemcpyAsync",
		       cudaMemcpyAsync(dst, src, bytes, kind, b->cu.stream)) !=
	    DT_OK)
		return DT_ERUNTIME;
	return dt_cuda_sync(&b->cu);
}

static int nccl_upload(struct dt_backend *base, void *dst, const void *src,
		       size_t bytes)
{
	return memcpy_sync((struct nccl_backend *)base, dst, src, bytes,
			   cudaMemcpyHostToDevice);
}

static int nccl_download(struct dt_backend *base, void *dst, const void *src,
			 size_t bytes)
{
	return memcpy_sync((struct nccl_backend *)base, dst, src, bytes,
			   cudaMemcpyDeviceToHost);
}

static int nccl_copy(struct dt_backend *base, struct dt_rt_tensor *dst,
		     const struct dt_rt_tensor *src)
{
	return dt_cuda_copy(&((struct nccl_backend *)base)->cu, NULL, dst, src);
}

static int nccl_kernel(struct dt_backend *base, const struct dt_kernel_call *c)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	int rc = dt_cuda_kernel(&b->cu, c);
	return rc == DT_CUDA_FALLBACK ? dt_cuda_fallback(&b->cu, c) : rc;
}

/* ------------------------------------------------------------------ */
/* Collectives. */

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
	int rc = cuda_check(b, p->node, "cudaEventRecord",
			    cudaEventRecord(p->ready, b->cu.stream));
	if (rc == DT_OK)
		rc = cuda_check(
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
		rc = nccl_check(b, c->node, "ncclGroupStart", ncclGroupStart(),
				NULL);
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
				rc = nccl_check(b, c->node, "ncclSend/ncclRecv",
						r, comm);
				break;
			}
		}
		int end = nccl_check(b, c->node, "ncclGroupEnd", ncclGroupEnd(),
				     comm);
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
		rc = nccl_check(b, c->node, "ncclReduceScatter",
				ncclReduceScatter(dt_cuda_ptr(&in),
						  dt_cuda_ptr(&out),
						  (size_t)nout, type, op, comm,
						  b->comm_stream),
				comm);
	else if (rc == DT_OK)
		rc = nccl_check(b, c->node, "ncclAllReduce",
				ncclAllReduce(dt_cuda_ptr(&in),
					      dt_cuda_ptr(&out), (size_t)nin,
					      type, op, comm, b->comm_stream),
				comm);
	if (rc == DT_OK && t == DT_INT16) {
		struct dt_cu_walk w;
		const struct dt_rt_tensor *ts[2] = {c->output, &out};
		dt_cuda_walk(&w, out.shape, out.rank, ts, 2);
		rc = cuda_check(b, c->node, "dt_cu_copy",
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
		if (cuda_check(b, n, "cudaEventCreateWithFlags",
			       cudaEventCreateWithFlags(
				   &p->ready, cudaEventDisableTiming)) !=
			DT_OK ||
		    cuda_check(b, n, "cudaEventCreateWithFlags",
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
static void pending_put(struct nccl_backend *b, struct dt_pending *p)
{
	for (int k = 0; k < 2; k++)
		if (p->stage[k])
			(void)cudaFreeAsync(p->stage[k], b->comm_stream);
	p->next = b->spare;
	b->spare = p;
}

static int nccl_collective(struct dt_backend *base,
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
			rc = nccl_check(
			    b, c->node, "ncclAllGather",
			    ncclAllGather(dt_cuda_ptr(c->input),
					  dt_cuda_ptr(c->output),
					  (size_t)(nin * size / esize), type,
					  g->comm, b->comm_stream),
			    g->comm);
		} else if (rc == DT_OK && c->kind == DT_COLL_ALL_PERMUTE) {
			rc = nccl_check(b, c->node, "ncclSend/ncclRecv",
					(ncclResult_t)dt_nccl_all_permute(
					    g->comm, b->comm_stream, c,
					    (int)type, size, esize),
					g->comm);
		} else if (rc == DT_OK) {
			rc = start_all_to_all(b, g->comm, c, type, size, esize);
		}
	}
	if (rc == DT_OK)
		rc = cuda_check(b, c->node, "cudaEventRecord",
				cudaEventRecord(p->done, b->comm_stream));
	pthread_mutex_unlock(&b->issue);
	if (rc != DT_OK) {
		pending_put(b, p);
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
		cuda_check(b, p->node, "cudaEventQuery", e);
	else if (async != ncclSuccess && async != ncclInProgress)
		nccl_check(b, p->node, "a collective", async, comm);
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
static void reclaim(struct nccl_backend *b)
{
	pthread_mutex_lock(&b->lock);
	struct dt_pending *p = b->finished;
	b->finished = NULL;
	pthread_mutex_unlock(&b->lock);
	while (p) {
		struct dt_pending *next = p->next;
		pending_put(b, p);
		p = next;
	}
}

/* The wait is stream-ordered: the compute stream waits for the
 * collective's completion event and the host goes on. With a timeout the
 * collective is handed to the watchdog, which gives it back once done. */
static int nccl_wait(struct dt_backend *base, struct dt_pending *p)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	struct dt_pending **q = &b->live;
	while (*q && *q != p)
		q = &(*q)->next;
	DT_REQUIRE(*q == p);
	*q = p->next;
	int rc = cuda_check(b, p->node, "cudaStreamWaitEvent",
			    cudaStreamWaitEvent(b->cu.stream, p->done, 0));
	if (rc == DT_OK && b->base.timeout > 0 && !b->watching) {
		if (pthread_create(&b->watchdog, NULL, watchdog, b) != 0)
			rc = dt_rt_fail(base, b->m, p->node,
					"cannot start the watchdog thread");
		b->watching = rc == DT_OK;
	}
	if (rc != DT_OK || b->base.timeout <= 0) {
		pending_put(b, p);
		return rc;
	}
	reclaim(b);
	p->deadline = now_s() + b->base.timeout;
	pthread_mutex_lock(&b->lock);
	p->next = b->watched;
	b->watched = p;
	pthread_mutex_unlock(&b->lock);
	return DT_OK;
}

/* Both streams drained; deferred kernel errors and NCCL's asynchronous
 * errors reported. */
static int nccl_synchronize(struct dt_backend *base)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	int rc = cuda_check(b, NULL, "cudaStreamSynchronize",
			    cudaStreamSynchronize(b->comm_stream));
	if (dt_cuda_sync(&b->cu) != DT_OK)
		rc = DT_ERUNTIME;
	pthread_mutex_lock(&b->issue);
	for (uint32_t i = 0; i < b->ngroups && rc == DT_OK; i++) {
		ncclResult_t async = ncclSuccess;
		if (!b->groups[i].comm)
			continue;
		rc =
		    nccl_check(b, NULL, "ncclCommGetAsyncError",
			       ncclCommGetAsyncError(b->groups[i].comm, &async),
			       b->groups[i].comm);
		if (rc == DT_OK)
			rc = nccl_check(b, NULL, "a collective", async,
					b->groups[i].comm);
	}
	pthread_mutex_unlock(&b->issue);
	return rc;
}

static void comm_close(ncclComm_t comm, bool abort)
{
	if (!comm)
		return;
	if (abort || ncclCommFinalize(comm) != ncclSuccess)
		ncclCommAbort(comm);
	else
		ncclCommDestroy(comm);
}

/* After a failure collectives may wait for peers forever, so the
 * communicators are aborted instead of drained. */
static void nccl_destroy(struct dt_backend *base)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	bool abort = b->failed || b->live;
	if (!abort && b->cu.stream)
		cudaStreamSynchronize(b->comm_stream); /* watched still */
	if (b->watching) {
		atomic_store(&b->stop, true);
		pthread_join(b->watchdog, NULL);
	}
	reclaim(b);
	while (b->watched) {
		struct dt_pending *p = b->watched;
		b->watched = p->next;
		pending_put(b, p);
	}
	for (uint32_t i = 0; i < b->ngroups; i++)
		comm_close(b->groups[i].comm, abort);
	comm_close(b->world, abort);
	if (b->cu.stream)
		cudaStreamSynchronize(b->cu.stream);
	while (b->live) {
		struct dt_pending *p = b->live;
		b->live = p->next;
		pending_put(b, p);
	}
	while (b->spare) {
		struct dt_pending *p = b->spare;
		b->spare = p->next;
		cudaEventDestroy(p->ready);
		cudaEventDestroy(p->done);
		dt_free(p);
	}
	dt_cuda_blas_close(&b->cu);
	if (b->cu.status)
		cudaFree(b->cu.status);
	if (b->comm_stream)
		cudaStreamDestroy(b->comm_stream);
	if (b->cu.stream) {
		cudaStreamSynchronize(b->cu.stream);
		cudaStreamDestroy(b->cu.stream);
	}
#if DTOPT_HAVE_MPI
	if (b->mpi != MPI_COMM_NULL)
		MPI_Comm_free(&b->mpi);
#endif
	pthread_mutex_destroy(&b->lock);
	pthread_mutex_destroy(&b->issue);
	dt_free(b->groups);
	dt_free(b);
}

static const struct dt_backend_ops nccl_ops = {
    .name = "nccl",
    .alloc = nccl_alloc,
    .release = nccl_release,
    .upload = nccl_upload,
    .download = nccl_download,
    .copy = nccl_copy,
    .kernel = nccl_kernel,
    .collective = nccl_collective,
    .wait = nccl_wait,
    .synchronize = nccl_synchronize,
    .destroy = nccl_destroy,
};

void dt_backend_nccl_fallbacks(const struct dt_backend *base, uint64_t *per_op)
{
	const struct nccl_backend *b = (const struct nccl_backend *)base;
	DT_REQUIRE(base->ops == &nccl_ops);
	memcpy(per_op, b->cu.fallbacks, sizeof(b->cu.fallbacks));
}

/* ------------------------------------------------------------------ */
/* Creation. */


/* Every rank's verdict on a step: DT_OK only when all ranks succeeded
 * (collective over the MPI world; a world of one returns rc). */
static int agree(struct nccl_backend *b, int rc)
{
#if DTOPT_HAVE_MPI
	if (b->mpi != MPI_COMM_NULL) {
		int mine = rc != DT_OK, any = mine;
		if (mpi_check(b, "MPI_Allreduce",
			      MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX,
					    b->mpi)) != DT_OK)
			return DT_ERUNTIME;
		if (any && !mine)
			dt_diag_report(
			    b->base.diag, DT_ERROR, b->m->file, 0, NULL,
			    "another rank failed to set up the NCCL backend");
		return any ? DT_ERUNTIME : DT_OK;
	}
#endif
	return rc;
}

/* MPI's world (when the caller initialised MPI): rank, size, and the
 * check that all ranks declare the same meshes and groups. */
static int join_world(struct nccl_backend *b, int *local, int *local_size)
{
	*local = 0;
	*local_size = 1;
#if DTOPT_HAVE_MPI
	int initialized = 0;
	MPI_Initialized(&initialized);
	if (!initialized)
		return DT_OK;
	int rc =
	    mpi_check(b, "MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &b->mpi));
	if (rc == DT_OK)
		rc = mpi_check(
		    b, "MPI_Comm_set_errhandler",
		    MPI_Comm_set_errhandler(b->mpi, MPI_ERRORS_RETURN));
	if (rc == DT_OK)
		rc = mpi_check(b, "MPI_Comm_rank",
			       MPI_Comm_rank(b->mpi, &b->base.rank));
	if (rc == DT_OK)
		rc = mpi_check(b, "MPI_Comm_size",
			       MPI_Comm_size(b->mpi, &b->base.world_size));
	MPI_Comm node = MPI_COMM_NULL;
	if (rc == DT_OK)
		rc = mpi_check(b, "MPI_Comm_split_type",
			       MPI_Comm_split_type(b->mpi, MPI_COMM_TYPE_SHARED,
						   b->base.rank, MPI_INFO_NULL,
						   &node));
	if (rc == DT_OK)
		rc = mpi_check(b, "MPI_Comm_rank", MPI_Comm_rank(node, local));
	if (rc == DT_OK)
		rc = mpi_check(b, "MPI_Comm_size",
			       MPI_Comm_size(node, local_size));
	if (node != MPI_COMM_NULL)
		MPI_Comm_free(&node);
	uint64_t fp = dt_topology_fingerprint(b->m), mine[2] = {fp, ~fp}, top[2];
	if (rc == DT_OK)
		rc = mpi_check(
		    b, "MPI_Allreduce",
		    MPI_Allreduce(mine, top, 2, MPI_UINT64_T, MPI_MAX, b->mpi));
	if (rc == DT_OK && (top[0] != fp || ~top[1] != fp))
		rc = dt_cuda_fail(
		    &b->cu, b->m, NULL, "checking the ranks' graphs",
		    "they declare different meshes or groups (per-rank graphs "
		    "must declare the same ones in the same order)");
	return rc;
#else
	(void)b;
	return DT_OK;
#endif
}

/* The world size must be 1 + the largest global rank any mesh names. */
static int check_world_size(struct nccl_backend *b)
{
	const struct dt_module *m = b->m;
	const struct dt_mesh *which;
	int64_t need = dt_required_world(m, &which);
	if (!which || need == b->base.world_size)
		return DT_OK;
	dt_diag_report(
	    b->base.diag, DT_ERROR, m->file, which->line, NULL,
	    "the graph's mesh '%s' needs %lld ranks (one GPU each), but %d %s",
	    dt_str_get(m, which->name), (long long)need, b->base.world_size,
	    b->base.world_size == 1 ? "process runs" : "processes run");
	return DT_ERUNTIME;
}

/* This rank's GPU (local rank modulo the visible devices), its streams,
 * deferred-error word and a caching memory pool. */
static int setup_device(struct nccl_backend *b, int local, int local_size)
{
	int count = 0, rc;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0)
		return dt_cuda_fail(&b->cu, b->m, NULL, "cudaGetDeviceCount",
				    e != cudaSuccess
					? cudaGetErrorString(e)
					: "no CUDA device is visible");
	int dev = local % count;
	b->device = dev;
	cudaMemPool_t pool;
	uint64_t keep = UINT64_MAX;
	rc = cuda_check(b, NULL, "cudaSetDevice", cudaSetDevice(dev));
	if (rc == DT_OK)
		rc = cuda_check(b, NULL, "cudaStreamCreateWithFlags",
				cudaStreamCreateWithFlags(
				    &b->cu.stream, cudaStreamNonBlocking));
	if (rc == DT_OK)
		rc = cuda_check(b, NULL, "cudaStreamCreateWithFlags",
				cudaStreamCreateWithFlags(
				    &b->comm_stream, cudaStreamNonBlocking));
	if (rc == DT_OK)
		rc = cuda_check(b, NULL, "cudaDeviceGetDefaultMemPool",
				cudaDeviceGetDefaultMemPool(&pool, dev));
	if (rc == DT_OK)
		rc = cuda_check(
		    b, NULL, "cudaMemPoolSetAttribute",
		    cudaMemPoolSetAttribute(
			pool, cudaMemPoolAttrReleaseThreshold, &keep));
	size_t free_bytes = 0, total = 0;
	if (rc == DT_OK)
		rc = cuda_check(b, NULL, "cudaMemGetInfo",
				cudaMemGetInfo(&free_bytes, &total));
	/* ranks sharing this GPU (local ranks modulo the devices) split it */
	b->base.memory = free_bytes / (size_t)((local_size - 1 - dev) / count + 1);
	if (rc == DT_OK)
		rc = cuda_check(
		    b, NULL, "cudaMalloc",
		    cudaMalloc((void **)&b->cu.status, sizeof(int32_t)));
	if (rc == DT_OK)
		rc = cuda_check(b, NULL, "cudaMemsetAsync",
				cudaMemsetAsync(b->cu.status, 0,
						sizeof(int32_t), b->cu.stream));
	return rc;
}

/* The world communicator (rank 0's id broadcast over MPI), then one
 * ncclCommSplit per declared group: colour = the group instance holding
 * this rank, key = its position in the group's dim order. */
static int create_comms(struct nccl_backend *b)
{
	ncclUniqueId id;
	int rc = DT_OK;
	if (b->ngroups == 0) /* the world communicator only serves splits */
		return DT_OK;
	memset(&id, 0, sizeof(id));
	if (b->base.rank == 0)
		rc = nccl_check(b, NULL, "ncclGetUniqueId",
				ncclGetUniqueId(&id), NULL);
	rc = agree(b, rc);
#if DTOPT_HAVE_MPI
	if (rc == DT_OK && b->mpi != MPI_COMM_NULL)
		rc = mpi_check(b, "MPI_Bcast",
			       MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, b->mpi));
#endif
	if (rc == DT_OK)
		rc = nccl_check(b, NULL, "ncclCommInitRank",
				ncclCommInitRank(&b->world, b->base.world_size,
						 id, b->base.rank),
				NULL);
	const struct dt_module *m = b->m;
	for (uint32_t i = 0; i < b->ngroups && rc == DT_OK; i++) {
		const struct dt_group *g = &m->groups.data[i];
		const struct dt_mesh *mesh = &m->meshes.data[g->mesh];
		int64_t instance = 0, pos = 0;
		bool member = dt_group_locate(mesh, g->dims, g->ndims,
					      b->base.rank, &instance, &pos);
		b->groups[i].size = dt_group_size(mesh, g->dims, g->ndims);
		ncclComm_t comm = NULL;
		rc = nccl_check(
		    b, NULL, "ncclCommSplit",
		    ncclCommSplit(b->world,
				  member ? (int)instance : NCCL_SPLIT_NOCOLOR,
				  (int)pos, &comm, NULL),
		    b->world);
		if (rc != DT_OK || !member)
			continue;
		b->groups[i].comm = comm;
		int size = 0, rank = -1;
		rc = nccl_check(b, NULL, "ncclCommCount",
				ncclCommCount(comm, &size), comm);
		if (rc == DT_OK)
			rc = nccl_check(b, NULL, "ncclCommUserRank",
					ncclCommUserRank(comm, &rank), comm);
		if (rc == DT_OK)
			DT_REQUIRE(size == b->groups[i].size && rank == pos);
	}
	return rc;
}

struct dt_backend *dt_backend_nccl_create(const struct dt_module *m,
					  struct dt_diag *d)
{
	struct nccl_backend *b = dt_calloc(1, sizeof(*b));
	b->base.ops = &nccl_ops;
	b->base.diag = d;
	b->base.world_size = 1;
	b->m = m;
	b->cu.b = &b->base;
	b->cu.m = m;
	b->ngroups = m->groups.len;
	b->groups = dt_calloc(b->ngroups ? b->ngroups : 1, sizeof(*b->groups));
	pthread_mutex_init(&b->lock, NULL);
	pthread_mutex_init(&b->issue, NULL);
	atomic_init(&b->stop, false);
#if DTOPT_HAVE_MPI
	b->mpi = MPI_COMM_NULL;
#endif
	/* every step ends in an agreement, so all ranks stop together and
	 * none waits in NCCL's initialisation for a failed peer */
	int local = 0, local_size = 1;
	bool global = m->view == DT_VIEW_GLOBAL; /* the one-process reference */
	int rc = join_world(b, &local, &local_size);
	if (rc == DT_OK && !global)
		rc = check_world_size(b);
	if (rc == DT_OK)
		rc = agree(b, setup_device(b, local, local_size));
	if (rc == DT_OK && !global)
		rc = create_comms(b);
	if (rc != DT_OK) {
		b->failed = true;
		nccl_destroy(&b->base);
		return NULL;
	}
	return &b->base;
}
