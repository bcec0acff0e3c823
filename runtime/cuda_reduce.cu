// SPDX-License-Identifier: MIT
/* cuda_reduce.cu: the generic reduction kernel of the NCCL+CUDA backend
 * (sum, mean, amax/amin, max/min with indices, argmax/argmin, logsumexp,
 * var/var_mean over any set of dims), accumulated in double. A row (the
 * reduced dims, row-major) goes to a warp or a block, to several blocks
 * whose partial states combine in a second kernel when rows are few and
 * long, or to one thread when rows are many and the row dims are the slow
 * ones (coalesced column sums). Semantics follow cpu_reduce.c: NaN
 * propagates through max/min and wins at its first position, indices are
 * those of the first extreme. */
#include "cuda_internal.h"

#include <math.h>

#define THREADS 256

/* A partial reduction of some of a row's elements:
 *   sum/mean: a = sum
 *   max/min/arg*: a = value, n = its index (-1: no element yet)
 *   logsumexp: a = running max m, b = sum of exp(x - shift(m))
 *   var: n = count, a = mean, b = sum of squared deviations (Welford) */
struct state {
	double a, b;
	long long n;
};

static __device__ __forceinline__ state empty_state(int kind)
{
	state s;
	s.a = kind == DT_CU_RED_LOGSUMEXP ? -INFINITY : 0;
	s.b = 0;
	s.n = kind == DT_CU_RED_VAR ? 0 : -1;
	return s;
}

/* logsumexp sums exp(x - shift); cpu_reduce.c uses 0 for an infinite max. */
static __device__ __forceinline__ double shift(double m)
{
	return isinf(m) ? 0 : m;
}

static __device__ __forceinline__ double nanmax(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}

/* Whether (v, i) beats the extreme (a, n) of a max (sign 1) or min. */
static __device__ __forceinline__ bool beats(double v, long long i, double a,
					     long long n, int sign)
{
	if (n < 0)
		return true;
	if (isnan(a) || isnan(v))
		return isnan(v) && (!isnan(a) || i < n);
	if (v != a)
		return sign > 0 ? v > a : v < a;
	return i < n;
}

static __device__ __forceinline__ int sign_of(int kind)
{
	return kind == DT_CU_RED_MAX || kind == DT_CU_RED_ARGMAX ? 1 : -1;
}

/* Add element x (index j of the row) to s. */
static __device__ __forceinline__ void accumulate(int kind, state &s, double x,
						  long long j)
{
	switch (kind) {
	case DT_CU_RED_SUM:
	case DT_CU_RED_MEAN:
		s.a += x;
		return;
	case DT_CU_RED_LOGSUMEXP: {
		double m = nanmax(s.a, x);
		s.b = (s.b != 0 ? s.b * exp(shift(s.a) - shift(m)) : 0) +
		      exp(x - shift(m));
		s.a = m;
		return;
	}
	case DT_CU_RED_VAR: {
		s.n++;
		double d = x - s.a;
		s.a += d / (double)s.n;
		s.b += d * (x - s.a);
		return;
	}
	default:
		if (beats(x, j, s.a, s.n, sign_of(kind))) {
			s.a = x;
			s.n = j;
		}
	}
}

static __device__ __forceinline__ state combine(int kind, state x, state y)
{
	switch (kind) {
	case DT_CU_RED_SUM:
	case DT_CU_RED_MEAN:
		x.a += y.a;
		return x;
	case DT_CU_RED_LOGSUMEXP: {
		double m = nanmax(x.a, y.a);
		x.b = (x.b != 0 ? x.b * exp(shift(x.a) - shift(m)) : 0) +
		      (y.b != 0 ? y.b * exp(shift(y.a) - shift(m)) : 0);
		x.a = m;
		return x;
	}
	case DT_CU_RED_VAR: {
		if (y.n == 0)
			return x;
		if (x.n == 0)
			return y;
		double n = (double)(x.n + y.n), d = y.a - x.a;
		x.b += y.b + d * d * (double)x.n * (double)y.n / n;
		x.a += d * (double)y.n / n;
		x.n += y.n;
		return x;
	}
	default:
		return y.n >= 0 && beats(y.a, y.n, x.a, x.n, sign_of(kind)) ? y
									    : x;
	}
}

/* Store the results of a finished row at the row's result offsets. */
static __device__ void finish(const dt_cu_reduce_op &p, state s,
			      const int64_t *off)
{
	double r0 = 0, r1 = 0;
	switch (p.kind) {
	case DT_CU_RED_SUM:
		r0 = s.a;
		break;
	case DT_CU_RED_MEAN:
		r0 = s.a / (double)p.k;
		break;
	case DT_CU_RED_MAX:
	case DT_CU_RED_MIN:
		r0 = s.a;
		r1 = (double)s.n;
		break;
	case DT_CU_RED_ARGMAX:
	case DT_CU_RED_ARGMIN:
		r0 = (double)s.n;
		break;
	case DT_CU_RED_LOGSUMEXP:
		r0 = log(s.b) + shift(s.a);
		break;
	default: {
		double div = (double)p.k - p.correction;
		r0 = s.b / (div > 0 ? div : 0);
		r1 = s.a;
	}
	}
	dt_cu_store(p.outer.t[1].data, p.outer.t[1].dtype, off[1], r0);
	if (p.nout > 1)
		dt_cu_store(p.outer.t[2].data, p.outer.t[2].dtype, off[2], r1);
}

/* Element j of the row whose input offset is `base`. */
static __device__ __forceinline__ double element(const dt_cu_reduce_op &p,
						 int64_t base, int64_t j)
{
	int64_t off = base;
	for (int d = p.inner_rank - 1; d >= 0; d--) {
		int64_t size = p.inner_shape[d], q = d ? j / size : 0;
		off += (d ? j - q * size : j) * p.inner_stride[d];
		j = q;
	}
	const dt_cu_tensor &x = p.outer.t[0];
	double v = dt_cu_load(x.data, x.dtype, off);
	if (p.cast >= 0) {
		unsigned long long tmp[1] = {0};
		dt_cu_store(tmp, p.cast, 0, v);
		v = dt_cu_load(tmp, p.cast, 0);
	}
	return v;
}

static __device__ __forceinline__ state shuffle(state s, int delta)
{
	s.a = __shfl_down_sync(0xffffffffu, s.a, delta);
	s.b = __shfl_down_sync(0xffffffffu, s.b, delta);
	s.n = __shfl_down_sync(0xffffffffu, s.n, delta);
	return s;
}

static __device__ __forceinline__ state warp_reduce(int kind, state s)
{
	for (int d = 16; d > 0; d /= 2)
		s = combine(kind, s, shuffle(s, d));
	return s;
}

/* Groups of G threads (32: a warp, THREADS: the block) each reduce one
 * split of a row: elements [split * chunk, (split + 1) * chunk). With one
 * split the group stores the results, else its partial state. */
template <int G>
static __global__ void rows_kernel(const __grid_constant__ dt_cu_reduce_op p,
				   int64_t splits, int64_t chunk,
				   state *partial)
{
	__shared__ state warps[THREADS / 32];
	int64_t group = blockIdx.x * (int64_t)(THREADS / G) + threadIdx.x / G;
	int lane = threadIdx.x % G;
	int64_t rows = p.outer.numel;
	bool active = group < rows * splits;
	int64_t row = active ? group / splits : 0, split = group % splits;
	int64_t off[3];
	dt_cu_offsets(&p.outer, p.nout + 1, row, off);
	state s = empty_state(p.kind);
	int64_t end = min(p.k, (split + 1) * chunk);
	for (int64_t j = split * chunk + lane; active && j < end; j += G)
		accumulate(p.kind, s, element(p, off[0], j), j);
	s = warp_reduce(p.kind, s);
	if (G > 32) {
		if (threadIdx.x % 32 == 0)
			warps[threadIdx.x / 32] = s;
		__syncthreads();
		if (threadIdx.x >= 32)
			return;
		s = threadIdx.x < THREADS / 32 ? warps[threadIdx.x]
					       : empty_state(p.kind);
		s = warp_reduce(p.kind, s);
	}
	if (lane != 0 || !active)
		return;
	if (splits == 1)
		finish(p, s, off);
	else
		partial[group] = s;
}

/* One thread per row: combine its splits in order. */
static __global__ void splits_kernel(const __grid_constant__ dt_cu_reduce_op p,
				     int64_t splits, const state *partial)
{
	int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (row >= p.outer.numel)
		return;
	state s = partial[row * splits];
	for (int64_t i = 1; i < splits; i++)
		s = combine(p.kind, s, partial[row * splits + i]);
	int64_t off[3];
	dt_cu_offsets(&p.outer, p.nout + 1, row, off);
	finish(p, s, off);
}

/* One thread per row, elements in order: neighbouring threads read
 * neighbouring addresses when the rows' dim is the fast one. */
static __global__ void columns_kernel(const __grid_constant__ dt_cu_reduce_op p)
{
	int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (row >= p.outer.numel)
		return;
	int64_t off[3];
	dt_cu_offsets(&p.outer, p.nout + 1, row, off);
	state s = empty_state(p.kind);
	for (int64_t j = 0; j < p.k; j++)
		accumulate(p.kind, s, element(p, off[0], j), j);
	finish(p, s, off);
}

enum plan { PLAN_COLUMNS, PLAN_WARP, PLAN_BLOCK };

/* How to reduce: the strategy and the splits per row. */
static enum plan plan_of(const dt_cu_reduce_op *p, int64_t *splits)
{
	int64_t rows = p->outer.numel, k = p->k;
	*splits = 1;
	bool fast_rows =
	    p->outer.rank > 0 && p->outer.t[0].stride[p->outer.rank - 1] == 1;
	bool fast_inner =
	    p->inner_rank > 0 && p->inner_stride[p->inner_rank - 1] == 1;
	if (fast_rows && !fast_inner && rows >= 1024)
		return PLAN_COLUMNS;
	if (k <= 1024)
		return PLAN_WARP;
	/* few long rows: enough blocks to fill the GPU */
	if (rows < 512 && k >= 16384) {
		int64_t want = (1024 + rows - 1) / rows,
			most = (k + 8191) / 8192;
		*splits = want < most ? want : most;
	}
	return PLAN_BLOCK;
}

extern "C" size_t dt_cu_reduce_scratch(const struct dt_cu_reduce_op *p)
{
	int64_t splits;
	plan_of(p, &splits);
	return splits > 1 ? (size_t)(p->outer.numel * splits) * sizeof(state)
			  : 0;
}

extern "C" cudaError_t dt_cu_reduce(const struct dt_cu_reduce_op *p,
				    void *scratch, cudaStream_t s)
{
	int64_t rows = p->outer.numel, splits;
	if (rows == 0)
		return cudaSuccess;
	enum plan plan = plan_of(p, &splits);
	unsigned per_thread = (unsigned)((rows + THREADS - 1) / THREADS);
	if (plan == PLAN_COLUMNS) {
		columns_kernel<<<per_thread, THREADS, 0, s>>>(*p);
	} else if (plan == PLAN_WARP) {
		int64_t groups = THREADS / 32;
		rows_kernel<32><<<(unsigned)((rows + groups - 1) / groups),
				  THREADS, 0, s>>>(*p, 1, p->k, NULL);
	} else {
		int64_t chunk = (p->k + splits - 1) / splits;
		rows_kernel<THREADS>
		    <<<(unsigned)(rows * splits), THREADS, 0, s>>>(
			*p, splits, chunk, (state *)scratch);
		if (splits > 1)
			splits_kernel<<<per_thread, THREADS, 0, s>>>(
			    *p, splits, (const state *)scratch);
	}
	return cudaGetLastError();
}
