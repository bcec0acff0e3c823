// SPDX-License-Identifier: MIT
/* nccl_permute.c: dt.all_permute on NCCL (beside backend_nccl.c, which
 * issues it like its other collectives): one grouped ncclSend of the
 * rank's whole input to the position its shard goes to and one ncclRecv
 * of the output from the position whose shard comes here. */
#include "cuda_internal.h"

#include <nccl.h>

int dt_nccl_all_permute(struct ncclComm *comm, cudaStream_t stream,
			const struct dt_collective_call *c, int type,
			int size, int unit)
{
	int me = 0;
	ncclResult_t r = ncclCommUserRank(comm, &me);
	if (r != ncclSuccess)
		return (int)r;
	int64_t from = 0;
	while (from < c->group_size && c->permutation[from] != me)
		from++;
	DT_REQUIRE(from < c->group_size); /* checked: a permutation */
	size_t nin = (size_t)(dt_rt_numel(c->input) * size / unit);
	size_t nout = (size_t)(dt_rt_numel(c->output) * size / unit);
	r = ncclGroupStart();
	if (r != ncclSuccess)
		return (int)r;
	r = ncclSend(dt_cuda_ptr(c->input), nin, (ncclDataType_t)type,
		     (int)c->permutation[me], comm, stream);
	if (r == ncclSuccess)
		r = ncclRecv(dt_cuda_ptr(c->output), nout,
			     (ncclDataType_t)type, (int)from, comm, stream);
	ncclResult_t end = ncclGroupEnd();
	return (int)(r != ncclSuccess ? r : end);
}
