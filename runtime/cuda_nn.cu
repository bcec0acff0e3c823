// SPDX-License-Identifier: MIT
/* cuda_nn.cu: the row kernels of the NCCL+CUDA backend: softmax and
 * log_softmax with their backward (a warp or a block per row, any row
 * stride), native_layer_norm with its backward (in double: its backward
 * cancels; dweight/dbias as split column sums), embedding (row gather) and
 * embedding_dense_backward (double atomics), nll_loss forward and
 * backward. Semantics follow cpu_nn.c and cpu_loss.c; see
 * cuda_internal.h. */
#include "cuda_internal.h"

#include <math.h>

static __device__ __forceinline__ double nanmax(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}

/* The sum (or NaN-propagating max) of v over a group of G threads (a
 * warp, or the DT_CU_THREADS-thread block), on every thread of the group.
 * Every thread of the block must call it. */
template <int G> static __device__ double group_reduce(double v, bool max)
{
	for (int d = 16; d > 0; d /= 2) {
		double o = __shfl_xor_sync(0xffffffffu, v, d);
		v = max ? nanmax(v, o) : v + o;
	}
	if (G == 32)
		return v;
	__shared__ double part[DT_CU_THREADS / 32];
	__syncthreads(); /* part may still be read by a previous call */
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = v;
	__syncthreads();
	v = part[0];
	for (int i = 1; i < DT_CU_THREADS / 32; i++)
		v = max ? nanmax(v, part[i]) : v + part[i];
	return v;
}

/* ---- softmax ---- */

/* exp in T (float, or double for float64 data); sums and the results'
 * arithmetic in double, so cancellations cost no precision. */
template <int G, typename T>
static __global__ void
softmax_kernel(const __grid_constant__ dt_cu_softmax_op p)
{
	int64_t row = blockIdx.x * (int64_t)(DT_CU_THREADS / G) + threadIdx.x / G;
	int lane = threadIdx.x % G;
	bool active = row < p.outer.numel;
	int64_t off[3];
	dt_cu_offsets(&p.outer, p.backward ? 3 : 2, active ? row : 0, off);
	const dt_cu_tensor &y = p.outer.t[0], &x = p.outer.t[1],
			   &o = p.outer.t[2];
	int64_t n = active ? p.len : 0;
	if (p.backward) {
		/* softmax: g' = y (g - sum(g y)); log: g - exp(y) sum(g) */
		double s = 0;
		for (int64_t j = lane; j < n; j += G) {
			double g = dt_cu_load(x.data, x.dtype,
					      off[1] + j * p.inner_stride[1]);
			s += p.log_form
				 ? g
				 : g * dt_cu_load(o.data, o.dtype,
						  off[2] +
						      j * p.inner_stride[2]);
		}
		s = group_reduce<G>(s, false);
		for (int64_t j = lane; j < n; j += G) {
			double g = dt_cu_load(x.data, x.dtype,
					      off[1] + j * p.inner_stride[1]);
			double v = dt_cu_load(o.data, o.dtype,
					      off[2] + j * p.inner_stride[2]);
			double r = p.log_form ? g - exp(v) * s : v * (g - s);
			dt_cu_store(y.data, y.dtype,
				    off[0] + j * p.inner_stride[0], r);
		}
		return;
	}
	double m = -INFINITY, s = 0;
	for (int64_t j = lane; j < n; j += G)
		m = nanmax(m, dt_cu_load(x.data, x.dtype,
					 off[1] + j * p.inner_stride[1]));
	m = group_reduce<G>(m, true);
	if (isinf(m))
		m = m > 0 ? m : 0;
	for (int64_t j = lane; j < n; j += G)
		s += exp((T)dt_cu_load(x.data, x.dtype,
				       off[1] + j * p.inner_stride[1]) -
			 (T)m);
	s = group_reduce<G>(s, false);
	double lse = m + log(s);
	for (int64_t j = lane; j < n; j += G) {
		double v =
		    dt_cu_load(x.data, x.dtype, off[1] + j * p.inner_stride[1]);
		double r = p.log_form ? v - lse : (double)exp((T)v - (T)m) / s;
		dt_cu_store(y.data, y.dtype, off[0] + j * p.inner_stride[0], r);
	}
}

template <typename T>
static void softmax_launch(const dt_cu_softmax_op *p, cudaStream_t s)
{
	int64_t rows = p->outer.numel;
	if (p->len <= 1024)
		softmax_kernel<32, T>
		    <<<(unsigned)((rows + 7) / 8), DT_CU_THREADS, 0, s>>>(*p);
	else
		softmax_kernel<DT_CU_THREADS, T>
		    <<<(unsigned)rows, DT_CU_THREADS, 0, s>>>(*p);
}

extern "C" cudaError_t dt_cu_softmax(const struct dt_cu_softmax_op *p,
				     cudaStream_t s)
{
	if (p->outer.numel == 0 || p->len == 0)
		return cudaSuccess;
	if (p->wide)
		softmax_launch<double>(p, s);
	else
		softmax_launch<float>(p, s);
	return cudaGetLastError();
}

/* ---- layer norm ---- */

static __device__ __forceinline__ double opt_load(const void *p, int t,
						  int64_t j, double dflt)
{
	return p ? dt_cu_load(p, t, j) : dflt;
}

template <int G>
static __global__ void
layer_norm_kernel(const __grid_constant__ dt_cu_layer_norm_op p)
{
	int64_t row = blockIdx.x * (int64_t)(DT_CU_THREADS / G) + threadIdx.x / G;
	int lane = threadIdx.x % G;
	bool active = row < p.rows;
	int64_t n = active ? p.len : 0, base = active ? row * p.len : 0;
	double s = 0, ss = 0;
	for (int64_t j = lane; j < n; j += G)
		s += dt_cu_load(p.x, p.x_dtype, base + j);
	double mean = group_reduce<G>(s, false) / (double)p.len;
	for (int64_t j = lane; j < n; j += G) {
		double d = dt_cu_load(p.x, p.x_dtype, base + j) - mean;
		ss += d * d;
	}
	double rstd =
	    1 / sqrt(group_reduce<G>(ss, false) / (double)p.len + p.eps);
	for (int64_t j = lane; j < n; j += G) {
		double v = (dt_cu_load(p.x, p.x_dtype, base + j) - mean) * rstd;
		v = v * opt_load(p.w, p.w_dtype, j, 1) +
		    opt_load(p.b, p.b_dtype, j, 0);
		dt_cu_store(p.y, p.y_dtype, base + j, v);
	}
	if (active && lane == 0) {
		dt_cu_store(p.out_mean, p.mean_dtype, row, mean);
		dt_cu_store(p.out_rstd, p.rstd_dtype, row, rstd);
	}
}

extern "C" cudaError_t dt_cu_layer_norm(const struct dt_cu_layer_norm_op *p,
					cudaStream_t s)
{
	if (p->rows == 0)
		return cudaSuccess;
	if (p->len <= 1024)
		layer_norm_kernel<32>
		    <<<(unsigned)((p->rows + 7) / 8), DT_CU_THREADS, 0, s>>>(*p);
	else
		layer_norm_kernel<DT_CU_THREADS>
		    <<<(unsigned)p->rows, DT_CU_THREADS, 0, s>>>(*p);
	return cudaGetLastError();
}

/* dx = rstd/N (N g w - sum(g w) - xhat sum(g w xhat)), a row per group. */
template <int G>
static __global__ void
layer_norm_dx_kernel(const __grid_constant__ dt_cu_layer_norm_op p)
{
	int64_t row = blockIdx.x * (int64_t)(DT_CU_THREADS / G) + threadIdx.x / G;
	int lane = threadIdx.x % G;
	bool active = row < p.rows;
	int64_t n = active ? p.len : 0, base = active ? row * p.len : 0;
	double mean = active ? dt_cu_load(p.mean, p.stat_dtype, row) : 0;
	double rstd = active ? dt_cu_load(p.rstd, p.stat_dtype, row) : 0;
	double sgw = 0, sgwx = 0;
	for (int64_t j = lane; j < n; j += G) {
		double gw = dt_cu_load(p.g, p.g_dtype, base + j) *
			    opt_load(p.w, p.w_dtype, j, 1);
		sgw += gw;
		sgwx +=
		    gw * (dt_cu_load(p.x, p.x_dtype, base + j) - mean) * rstd;
	}
	sgw = group_reduce<G>(sgw, false);
	sgwx = group_reduce<G>(sgwx, false);
	double len = (double)p.len, scale = rstd / len;
	for (int64_t j = lane; j < n; j += G) {
		double gw = dt_cu_load(p.g, p.g_dtype, base + j) *
			    opt_load(p.w, p.w_dtype, j, 1);
		double xhat =
		    (dt_cu_load(p.x, p.x_dtype, base + j) - mean) * rstd;
		dt_cu_store(p.dx, p.dx_dtype, base + j,
			    scale * (len * gw - sgw - xhat * sgwx));
	}
}

/* Column sums of g * xhat and g over the rows of one split into
 * part[split][0 or 1][column]. */
static __global__ void
layer_norm_dwb_kernel(const __grid_constant__ dt_cu_layer_norm_op p,
		      int64_t chunk, double *part)
{
	int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (j >= p.len)
		return;
	int64_t first = blockIdx.y * chunk;
	int64_t last = min(p.rows, first + chunk);
	double sw = 0, sb = 0;
	for (int64_t i = first; i < last; i++) {
		double g = dt_cu_load(p.g, p.g_dtype, i * p.len + j);
		double xhat = (dt_cu_load(p.x, p.x_dtype, i * p.len + j) -
			       dt_cu_load(p.mean, p.stat_dtype, i)) *
			      dt_cu_load(p.rstd, p.stat_dtype, i);
		sw += g * xhat;
		sb += g;
	}
	part[(2 * blockIdx.y) * p.len + j] = sw;
	part[(2 * blockIdx.y + 1) * p.len + j] = sb;
}

static __global__ void
layer_norm_dwb_finish(const __grid_constant__ dt_cu_layer_norm_op p,
		      int64_t splits, const double *part)
{
	int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (j >= p.len)
		return;
	double sw = 0, sb = 0;
	for (int64_t k = 0; k < splits; k++) {
		sw += part[(2 * k) * p.len + j];
		sb += part[(2 * k + 1) * p.len + j];
	}
	if (p.dw)
		dt_cu_store(p.dw, p.dw_dtype, j, sw);
	if (p.db)
		dt_cu_store(p.db, p.db_dtype, j, sb);
}

/* Row splits of the dweight/dbias sums: enough blocks to fill the GPU. */
static int64_t dwb_splits(const dt_cu_layer_norm_op *p)
{
	int64_t col_blocks = (p->len + DT_CU_THREADS - 1) / DT_CU_THREADS;
	int64_t want = (512 + col_blocks - 1) / col_blocks;
	int64_t most = (p->rows + 31) / 32;
	int64_t s = want < most ? want : most;
	return s < 1 ? 1 : s > 65535 ? 65535 : s;
}

extern "C" size_t dt_cu_layer_norm_scratch(const struct dt_cu_layer_norm_op *p)
{
	return (size_t)(2 * dwb_splits(p) * (p->len > 0 ? p->len : 1)) *
	       sizeof(double);
}

extern "C" cudaError_t
dt_cu_layer_norm_backward(const struct dt_cu_layer_norm_op *p, void *scratch,
			  cudaStream_t s)
{
	if (p->dx && p->rows > 0) {
		if (p->len <= 1024)
			layer_norm_dx_kernel<32>
			    <<<(unsigned)((p->rows + 7) / 8), DT_CU_THREADS, 0, s>>>(
				*p);
		else
			layer_norm_dx_kernel<DT_CU_THREADS>
			    <<<(unsigned)p->rows, DT_CU_THREADS, 0, s>>>(*p);
	}
	if ((p->dw || p->db) && p->len > 0) {
		int64_t splits = dwb_splits(p),
			chunk = (p->rows + splits - 1) / splits;
		dim3 grid((unsigned)((p->len + DT_CU_THREADS - 1) / DT_CU_THREADS),
			  (unsigned)splits);
		layer_norm_dwb_kernel<<<grid, DT_CU_THREADS, 0, s>>>(
		    *p, chunk, (double *)scratch);
		layer_norm_dwb_finish<<<grid.x, DT_CU_THREADS, 0, s>>>(
		    *p, splits, (const double *)scratch);
	}
	return cudaGetLastError();
}

/* ---- embedding ---- */

static __device__ __forceinline__ long long load_index(const void *p, int t,
						       int64_t i)
{
	if (t == DT_CU_I64)
		return ((const long long *)p)[i];
	if (t == DT_CU_I32)
		return ((const int *)p)[i];
	return dt_cu_to_int(dt_cu_load(p, t, i));
}

static __global__ void
embedding_kernel(const __grid_constant__ dt_cu_embedding_op p)
{
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     e < p.n * p.dim; e += (int64_t)gridDim.x * blockDim.x) {
		int64_t i = e / p.dim, j = e - i * p.dim;
		long long ix = load_index(p.index, p.index_dtype, i);
		if (ix < 0 || ix >= p.rows) {
			dt_cu_raise(p.err);
			dt_cu_store(p.dst, p.dst_dtype, e, 0);
		} else if (p.src_dtype == p.dst_dtype) {
			dt_cu_move(p.dst, e, p.src, ix * p.dim + j,
				   dt_cu_size(p.dst_dtype));
		} else {
			dt_cu_store(
			    p.dst, p.dst_dtype, e,
			    dt_cu_load(p.src, p.src_dtype, ix * p.dim + j));
		}
	}
}

extern "C" cudaError_t dt_cu_embedding(const struct dt_cu_embedding_op *p,
				       cudaStream_t s)
{
	if (p->n * p->dim == 0)
		return cudaSuccess;
	embedding_kernel<<<dt_cu_blocks_for(p->n * p->dim), DT_CU_THREADS, 0, s>>>(*p);
	return cudaGetLastError();
}

static __global__ void
embedding_count_kernel(const __grid_constant__ dt_cu_embedding_op p)
{
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= p.n)
		return;
	long long ix = load_index(p.index, p.index_dtype, i);
	if (ix != p.padding_idx && ix >= 0 && ix < p.rows)
		atomicAdd(&p.counts[ix], 1);
}

static __global__ void
embedding_backward_kernel(const __grid_constant__ dt_cu_embedding_op p)
{
	for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     e < p.n * p.dim; e += (int64_t)gridDim.x * blockDim.x) {
		int64_t i = e / p.dim, j = e - i * p.dim;
		long long ix = load_index(p.index, p.index_dtype, i);
		if (ix == p.padding_idx)
			continue;
		if (ix < 0 || ix >= p.rows) {
			dt_cu_raise(p.err);
			continue;
		}
		double scale = p.counts ? 1.0 / p.counts[ix] : 1.0;
		atomicAdd((double *)p.dst + ix * p.dim + j,
			  dt_cu_load(p.src, p.src_dtype, e) * scale);
	}
}

extern "C" cudaError_t
dt_cu_embedding_backward(const struct dt_cu_embedding_op *p, cudaStream_t s)
{
	if (p->counts && p->n > 0)
		embedding_count_kernel<<<(unsigned)((p->n + DT_CU_THREADS - 1) /
						    DT_CU_THREADS),
					 DT_CU_THREADS, 0, s>>>(*p);
	if (p->n * p->dim > 0)
		embedding_backward_kernel<<<dt_cu_blocks_for(p->n * p->dim), DT_CU_THREADS,
					    0, s>>>(*p);
	return cudaGetLastError();
}

/* ---- nll_loss ---- */

enum { NLL_NONE, NLL_MEAN, NLL_SUM };

/* The class of row i, or -1 (ignored or out of range: reported). */
static __device__ long long nll_class(const dt_cu_nll_op &p, int64_t i)
{
	long long t = load_index(p.target, p.target_dtype, i);
	if (t == p.ignore)
		return -1;
	if (t < 0 || t >= p.classes) {
		dt_cu_raise(p.err);
		return -1;
	}
	return t;
}

/* One block: per-row losses, their sum and the total weight. */
static __global__ void
nll_forward_kernel(const __grid_constant__ dt_cu_nll_op p)
{
	double sum = 0, total = 0;
	for (int64_t i = threadIdx.x; i < p.n; i += DT_CU_THREADS) {
		long long t = nll_class(p, i);
		double w = t < 0 ? 0 : opt_load(p.weight, p.weight_dtype, t, 1);
		double loss =
		    t < 0 ? 0
			  : -w * dt_cu_load(p.x, p.x_dtype, i * p.classes + t);
		total += w;
		sum += loss;
		if (p.per_row)
			dt_cu_store(p.out.data, p.out.dtype,
				    p.out.offset + i * p.out.stride[0], loss);
	}
	sum = group_reduce<DT_CU_THREADS>(sum, false);
	total = group_reduce<DT_CU_THREADS>(total, false);
	if (threadIdx.x != 0)
		return;
	if (!p.per_row)
		dt_cu_store(p.out.data, p.out.dtype, p.out.offset,
			    p.reduction == NLL_MEAN ? sum / total : sum);
	dt_cu_store(p.total.data, p.total.dtype, p.total.offset,
		    p.per_row ? 0 : total);
}

extern "C" cudaError_t dt_cu_nll_forward(const struct dt_cu_nll_op *p,
					 cudaStream_t s)
{
	nll_forward_kernel<<<1, DT_CU_THREADS, 0, s>>>(*p);
	return cudaGetLastError();
}

static __global__ void
nll_backward_kernel(const __grid_constant__ dt_cu_nll_op p)
{
	int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	if (i >= p.n)
		return;
	long long t = nll_class(p, i);
	if (t < 0)
		return;
	double g =
	    dt_cu_load(p.grad.data, p.grad.dtype,
		       p.grad.offset + (p.per_row ? i * p.grad.stride[0] : 0));
	if (p.reduction == NLL_MEAN)
		g /= dt_cu_load(p.total_in.data, p.total_in.dtype,
				p.total_in.offset);
	dt_cu_store(p.grad_input, p.gi_dtype, i * p.classes + t,
		    -opt_load(p.weight, p.weight_dtype, t, 1) * g);
}

extern "C" cudaError_t dt_cu_nll_backward(const struct dt_cu_nll_op *p,
					  cudaStream_t s)
{
	if (p->n == 0)
		return cudaSuccess;
	nll_backward_kernel<<<(unsigned)((p->n + DT_CU_THREADS - 1) / DT_CU_THREADS),
			      DT_CU_THREADS, 0, s>>>(*p);
	return cudaGetLastError();
}
