// SPDX-License-Identifier: MIT
/* nccl_internal.h: private to the NCCL backend (backend_nccl.c, which
 * creates and destroys it, and nccl_collective.c, which issues its
 * collectives and waits for them): the backend's state and the calls
 * between the two files. */
#ifndef DTOPT_RUNTIME_NCCL_INTERNAL_H
#define DTOPT_RUNTIME_NCCL_INTERNAL_H

#include "cuda_internal.h"
#include "dtopt_config.h"

#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
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

/* Errors, as `file:line: error: node 'x' (target): API failed: ERROR`
 * at node n (NULL: none); both return DT_OK on success, else the
 * reported error code. A failed NCCL call marks b failed (its
 * communicators are aborted, not drained, at destruction). comm (may be
 * NULL) gives NCCL's last error text (backend_nccl.c). */
int dt_nccl_cuda_check(struct nccl_backend *b, const struct dt_node *n,
		       const char *api, cudaError_t e);
int dt_nccl_check(struct nccl_backend *b, const struct dt_node *n,
		  const char *api, ncclResult_t r, ncclComm_t comm);

/* The backend's collective and wait hooks (struct dt_backend_ops;
 * nccl_collective.c). */
int dt_nccl_collective(struct dt_backend *base,
		       const struct dt_collective_call *c,
		       struct dt_pending **out);
int dt_nccl_wait(struct dt_backend *base, struct dt_pending *p);

/* p back to b's spare list; its staging buffers are freed on the
 * communication stream. */
void dt_nccl_pending_put(struct nccl_backend *b, struct dt_pending *p);

/* The collectives the watchdog saw complete go back to the spare list. */
void dt_nccl_reclaim(struct nccl_backend *b);

#endif
