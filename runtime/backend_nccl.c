// SPDX-License-Identifier: MIT
/* backend_nccl.c: the NCCL+CUDA backend: one GPU per rank, device memory
 * from the stream-ordered allocator, CUDA kernels and cuBLAS on a compute
 * stream (cuda_kernel.c; the CPU kernel as fallback), NCCL collectives on
 * a communication stream ordered by events, completed at their
 * wait_tensor (nccl_collective.c). The world communicator is bootstrapped
 * over MPI when the caller initialised it (else the process is a world of
 * one), and every declared group gets its communicator from ncclCommSplit
 * with backend_mpi.c's rules. This file holds the backend's errors,
 * memory, kernels, synchronization, creation and destruction. */
#include "nccl_internal.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* Errors: `file:line: error: node 'x' (target): API failed: ERROR`. */

int dt_nccl_cuda_check(struct nccl_backend *b, const struct dt_node *n,
		       const char *api, cudaError_t e)
{
	return dt_cuda_check(&b->cu, b->m, n, api, e);
}

int dt_nccl_check(struct nccl_backend *b, const struct dt_node *n,
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
	if (dt_nccl_cuda_check(
		b, NULL, "cudaMemcpyAsync",
		cudaMemcpyAsync(dst, src, bytes, kind, b->cu.stream)) != DT_OK)
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

/* Both streams drained; deferred kernel errors and NCCL's asynchronous
 * errors reported. */
static int nccl_synchronize(struct dt_backend *base)
{
	struct nccl_backend *b = (struct nccl_backend *)base;
	int rc = dt_nccl_cuda_check(b, NULL, "cudaStreamSynchronize",
				    cudaStreamSynchronize(b->comm_stream));
	if (dt_cuda_sync(&b->cu) != DT_OK)
		rc = DT_ERUNTIME;
	pthread_mutex_lock(&b->issue);
	for (uint32_t i = 0; i < b->ngroups && rc == DT_OK; i++) {
		ncclResult_t async = ncclSuccess;
		if (!b->groups[i].comm)
			continue;
		rc = dt_nccl_check(
		    b, NULL, "ncclCommGetAsyncError",
		    ncclCommGetAsyncError(b->groups[i].comm, &async),
		    b->groups[i].comm);
		if (rc == DT_OK)
			rc = dt_nccl_check(b, NULL, "a collective", async,
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
	dt_nccl_reclaim(b);
	while (b->watched) {
		struct dt_pending *p = b->watched;
		b->watched = p->next;
		dt_nccl_pending_put(b, p);
	}
	for (uint32_t i = 0; i < b->ngroups; i++)
		comm_close(b->groups[i].comm, abort);
	comm_close(b->world, abort);
	if (b->cu.stream)
		cudaStreamSynchronize(b->cu.stream);
	while (b->live) {
		struct dt_pending *p = b->live;
		b->live = p->next;
		dt_nccl_pending_put(b, p);
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
    .collective = dt_nccl_collective,
    .wait = dt_nccl_wait,
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
	uint64_t fp = dt_topology_fingerprint(b->m), mine[2] = {fp, ~fp},
		 top[2];
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
	rc = dt_nccl_cuda_check(b, NULL, "cudaSetDevice", cudaSetDevice(dev));
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(
		    b, NULL, "cudaStreamCreateWithFlags",
		    cudaStreamCreateWithFlags(&b->cu.stream,
					      cudaStreamNonBlocking));
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(
		    b, NULL, "cudaStreamCreateWithFlags",
		    cudaStreamCreateWithFlags(&b->comm_stream,
					      cudaStreamNonBlocking));
	if (rc == DT_OK)
		rc =
		    dt_nccl_cuda_check(b, NULL, "cudaDeviceGetDefaultMemPool",
				       cudaDeviceGetDefaultMemPool(&pool, dev));
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(
		    b, NULL, "cudaMemPoolSetAttribute",
		    cudaMemPoolSetAttribute(
			pool, cudaMemPoolAttrReleaseThreshold, &keep));
	size_t free_bytes = 0, total = 0;
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(b, NULL, "cudaMemGetInfo",
					cudaMemGetInfo(&free_bytes, &total));
	/* ranks sharing this GPU (local ranks modulo the devices) split it */
	b->base.memory =
	    free_bytes / (size_t)((local_size - 1 - dev) / count + 1);
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(
		    b, NULL, "cudaMalloc",
		    cudaMalloc((void **)&b->cu.status, sizeof(int32_t)));
	if (rc == DT_OK)
		rc = dt_nccl_cuda_check(b, NULL, "cudaMemsetAsync",
					cudaMemsetAsync(b->cu.status, 0,
							sizeof(int32_t),
							b->cu.stream));
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
		rc = dt_nccl_check(b, NULL, "ncclGetUniqueId",
				   ncclGetUniqueId(&id), NULL);
	rc = agree(b, rc);
#if DTOPT_HAVE_MPI
	if (rc == DT_OK && b->mpi != MPI_COMM_NULL)
		rc = mpi_check(b, "MPI_Bcast",
			       MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, b->mpi));
#endif
	if (rc == DT_OK)
		rc = dt_nccl_check(b, NULL, "ncclCommInitRank",
				   ncclCommInitRank(&b->world,
						    b->base.world_size, id,
						    b->base.rank),
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
		rc = dt_nccl_check(
		    b, NULL, "ncclCommSplit",
		    ncclCommSplit(b->world,
				  member ? (int)instance : NCCL_SPLIT_NOCOLOR,
				  (int)pos, &comm, NULL),
		    b->world);
		if (rc != DT_OK || !member)
			continue;
		b->groups[i].comm = comm;
		int size = 0, rank = -1;
		rc = dt_nccl_check(b, NULL, "ncclCommCount",
				   ncclCommCount(comm, &size), comm);
		if (rc == DT_OK)
			rc = dt_nccl_check(b, NULL, "ncclCommUserRank",
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
