// SPDX-License-Identifier: MIT
/* cuda_index.cu: kernels of the ops that address elements by index
 * (cpu_index.c's semantics): tril/triu, index_select, index_add and
 * scatter_add (into double accumulators), repeat_interleave (one thread:
 * the result's positions follow a running sum of the repeats), gather,
 * repeat and flip (one kernel) and cumsum (a thread per row, in double). See
 * cuda_internal.h. */
#include "cuda_internal.h"

/* Index i of p.index, or -1 when out of [0, size) (negative too). */
static __device__ __forceinline__ long long index_at(const dt_cu_index_op &p,
						     int64_t i)
{
	long long ix = p.index_dtype == DT_CU_I64
			   ? ((const long long *)p.index)[i]
			   : ((const int *)p.index)[i];
	return ix < 0 || ix >= p.size ? -1 : ix;
}

static __global__ void triangle_kernel(const __grid_constant__ dt_cu_index_op p)
{
	int size = dt_cu_size(p.dst_dtype);
	int64_t n = p.outer * p.size * p.inner;
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
	     e += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = e % p.inner, i = (e / p.inner) % p.size;
		bool keep = p.kind == DT_CU_TRIL ? j - i <= p.diagonal
						 : j - i >= p.diagonal;
		if (keep)
			dt_cu_move(p.dst, e, p.src, e, size);
		else
			dt_cu_store(p.dst, p.dst_dtype, e, 0.0);
	}
}

static __global__ void select_kernel(const __grid_constant__ dt_cu_index_op p)
{
	int size = dt_cu_size(p.dst_dtype);
	int64_t n = p.outer * p.n * p.inner;
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
	     e += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = e % p.inner, i = (e / p.inner) % p.n,
			o = e / (p.inner * p.n);
		long long ix = index_at(p, i);
		if (ix < 0) {
			dt_cu_raise(p.err);
			continue;
		}
		dt_cu_move(p.dst, e, p.src, (o * p.size + ix) * p.inner + j,
			   size);
	}
}

static __global__ void add_kernel(const __grid_constant__ dt_cu_index_op p)
{
	int64_t n = p.outer * p.n * p.inner;
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
	     e += (int64_t)gridDim.x * blockDim.x) {
		int64_t j = e % p.inner, i = (e / p.inner) % p.n,
			o = e / (p.inner * p.n);
		long long ix = index_at(p, i);
		if (ix < 0) {
			dt_cu_raise(p.err);
			continue;
		}
		atomicAdd((double *)p.dst + (o * p.size + ix) * p.inner + j,
			  p.alpha * dt_cu_load(p.src, p.src_dtype, e));
	}
}

static __global__ void repeat_kernel(const __grid_constant__ dt_cu_index_op p)
{
	int64_t at = 0;
	for (int64_t i = 0; i < p.n; i++) {
		long long r = p.index_dtype == DT_CU_I64
				  ? ((const long long *)p.index)[i]
				  : ((const int *)p.index)[i];
		if (r < 0 || r > p.size - at) {
			dt_cu_raise(p.err);
			return;
		}
		for (long long k = 0; k < r; k++)
			dt_cu_store(p.dst, p.dst_dtype, at++, (double)i);
	}
	if (at != p.size)
		dt_cu_raise(p.err);
}

/* Elements of p.shape. */
static __host__ __device__ int64_t numel(const dt_cu_index_op &p)
{
	int64_t n = 1;
	for (int d = 0; d < p.rank; d++)
		n *= p.shape[d];
	return n;
}

/* Coordinates of row-major element e of p.shape. */
static __device__ void unravel(const dt_cu_index_op &p, int64_t e, int64_t *at)
{
	for (int d = p.rank - 1; d >= 0; d--) {
		at[d] = e % p.shape[d];
		e /= p.shape[d];
	}
}

static __device__ int64_t ravel(const int64_t *at, const int64_t *shape,
				int rank)
{
	int64_t off = 0;
	for (int d = 0; d < rank; d++)
		off = off * shape[d] + at[d];
	return off;
}

/* gather and the scatters over the index's elements (scatter.src and
 * .value: which of several writes to one element wins is unspecified, as
 * in PyTorch). */
static __global__ void gather_kernel(const __grid_constant__ dt_cu_index_op p)
{
	int size = dt_cu_size(p.dst_dtype);
	int64_t n = numel(p);
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
	     e += (int64_t)gridDim.x * blockDim.x) {
		int64_t at[DT_CU_MAX_RANK];
		unravel(p, e, at);
		long long ix = ((const long long *)p.index)[e];
		int64_t limit = p.rank ? p.self_shape[p.dim] : 1;
		if (ix < 0 || ix >= limit) {
			dt_cu_raise(p.err);
			continue;
		}
		int64_t from = p.rank ? at[p.dim] : 0;
		if (p.rank)
			at[p.dim] = ix;
		int64_t xo = ravel(at, p.self_shape, p.rank);
		if (p.kind == DT_CU_GATHER) {
			dt_cu_move(p.dst, e, p.src, xo, size);
			continue;
		}
		if (p.kind == DT_CU_SCATTER_VALUE) {
			dt_cu_store(p.dst, p.dst_dtype, xo, p.alpha);
			continue;
		}
		if (p.rank)
			at[p.dim] = from;
		int64_t so = ravel(at, p.src_shape, p.rank);
		if (p.kind == DT_CU_SCATTER_SRC)
			dt_cu_move(p.dst, xo, p.src, so, size);
		else
			atomicAdd((double *)p.dst + xo,
				  dt_cu_load(p.src, p.src_dtype, so));
	}
}

/* repeat and flip: dst[at] = src[from], from[d] = at[d + lead] mod
 * self_shape[d] (repeat: self right-aligned and tiled; flip: the same
 * shape, so the identity), reversed on the dims of flip_mask. */
static __global__ void tile_kernel(const __grid_constant__ dt_cu_index_op p)
{
	int size = dt_cu_size(p.dst_dtype);
	int64_t n = numel(p);
	int lead = p.rank - p.self_rank;
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
	     e += (int64_t)gridDim.x * blockDim.x) {
		int64_t at[DT_CU_MAX_RANK];
		unravel(p, e, at);
		for (int d = 0; d < p.self_rank; d++) {
			at[d] = at[d + lead] % p.self_shape[d];
			if ((p.flip_mask >> d) & 1)
				at[d] = p.self_shape[d] - 1 - at[d];
		}
		dt_cu_move(p.dst, e, p.src,
			   ravel(at, p.self_shape, p.self_rank), size);
	}
}

/* cumsum: each element is first rounded to the result's dtype (stored and
 * read back), then added to a double running sum. */
static __global__ void cumsum_kernel(const __grid_constant__ dt_cu_index_op p)
{
	for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     r < p.outer * p.inner; r += (int64_t)gridDim.x * blockDim.x) {
		int64_t o = r / p.inner, j = r % p.inner;
		double acc = 0;
		for (int64_t i = 0; i < p.size; i++) {
			int64_t e = (o * p.size + i) * p.inner + j;
			dt_cu_store(p.dst, p.dst_dtype, e,
				    dt_cu_load(p.src, p.src_dtype, e));
			acc += dt_cu_load(p.dst, p.dst_dtype, e);
			dt_cu_store(p.dst, p.dst_dtype, e, acc);
		}
	}
}

extern "C" cudaError_t dt_cu_index(const struct dt_cu_index_op *p,
				   cudaStream_t s)
{
	bool tri = p->kind == DT_CU_TRIL || p->kind == DT_CU_TRIU;
	int64_t n = p->outer * (tri ? p->size : p->n) * p->inner;
	if (p->kind == DT_CU_CUMSUM)
		n = p->outer * p->inner;
	else if (p->kind >= DT_CU_GATHER)
		n = numel(*p);
	switch (p->kind) {
	case DT_CU_TRIL:
	case DT_CU_TRIU:
		if (n > 0)
			triangle_kernel<<<dt_cu_blocks_for(n), DT_CU_THREADS, 0, s>>>(*p);
		break;
	case DT_CU_INDEX_SELECT:
		if (n > 0)
			select_kernel<<<dt_cu_blocks_for(n), DT_CU_THREADS, 0, s>>>(*p);
		break;
	case DT_CU_INDEX_ADD:
		if (n > 0)
			add_kernel<<<dt_cu_blocks_for(n), DT_CU_THREADS, 0, s>>>(*p);
		break;
	case DT_CU_GATHER:
	case DT_CU_SCATTER_ADD:
	case DT_CU_SCATTER_SRC:
	case DT_CU_SCATTER_VALUE:
		if (n > 0)
			gather_kernel<<<dt_cu_blocks_for(n), DT_CU_THREADS, 0, s>>>(*p);
		break;
	case DT_CU_FLIP:
	case DT_CU_REPEAT:
		if (n > 0)
			tile_kernel<<<dt_cu_blocks_for(n), DT_CU_THREADS, 0, s>>>(*p);
		break;
	case DT_CU_CUMSUM:
		if (n > 0 && p->size > 0)
			cumsum_kernel<<<dt_cu_blocks_for(n), DT_CU_THREADS, 0, s>>>(*p);
		break;
	default:
		repeat_kernel<<<1, 1, 0, s>>>(*p);
		break;
	}
	return cudaGetLastError();
}
