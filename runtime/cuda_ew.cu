// SPDX-License-Identifier: MIT
/* cuda_ew.cu: the generic strided kernels of the NCCL+CUDA backend: one
 * elementwise kernel for every unary/binary/ternary op of ops.def
 * (selected by op code; broadcasting by stride 0; float math, double for
 * float64, integer and bool computations), the strided copy with dtype
 * conversion, fill, arange and the random ops (cpu_random.c's numbers).
 * Semantics follow cpu_elementwise.c; see cuda_internal.h. */
#include "cuda_internal.h"

#include <math.h>

/* ---- elementwise ---- */

/* T element of operand k: float loads skip double for float dtypes. */
template <typename T>
static __device__ __forceinline__ T load_as(const dt_cu_tensor &t, int64_t off);
template <>
__device__ __forceinline__ float load_as<float>(const dt_cu_tensor &t,
						int64_t off)
{
	return dt_cu_loadf(t.data, t.dtype, off);
}
template <>
__device__ __forceinline__ double load_as<double>(const dt_cu_tensor &t,
						  int64_t off)
{
	return dt_cu_load(t.data, t.dtype, off);
}

/* v as stored into dtype t and read back (tensor.c's dt_round_to). */
template <typename T> static __device__ __forceinline__ T round_to(int t, T v)
{
	switch (t) {
	case DT_CU_F32:
		return (T)(float)v;
	case DT_CU_F64:
		return v;
	case DT_CU_F16:
		return (T)__half2float(__double2half((double)v));
	case DT_CU_BF16:
		return (T)__bfloat162float(__double2bfloat16((double)v));
	default: {
		unsigned long long x[1] = {0};
		dt_cu_store(x, t, 0, (double)v);
		return (T)dt_cu_load(x, t, 0);
	}
	}
}

template <typename T>
static __device__ __forceinline__ void store_as(const dt_cu_tensor &t,
						int64_t off, T v);
template <>
__device__ __forceinline__ void store_as<float>(const dt_cu_tensor &t,
						int64_t off, float v)
{
	dt_cu_storef(t.data, t.dtype, off, v);
}
template <>
__device__ __forceinline__ void store_as<double>(const dt_cu_tensor &t,
						 int64_t off, double v)
{
	dt_cu_store(t.data, t.dtype, off, v);
}

/* c10's div_floor_floating (Python's // on floats). */
template <typename T> static __device__ T floor_div(T a, T b)
{
	if (b == 0)
		return a / b;
	T mod = fmod(a, b);
	T div = (a - mod) / b;
	if (mod != 0 && (b < 0) != (mod < 0))
		div -= 1;
	if (div == 0)
		return copysign((T)0, a / b);
	T fl = floor(div);
	return div - fl > (T)0.5 ? fl + 1 : fl;
}

#define SQRT_2_OVER_PI 0.79788456080286535588 /* sqrt(2 / pi) */
#define SQRT1_2 0.70710678118654752440	      /* 1 / sqrt(2) */
#define INV_SQRT_2PI 0.39894228040143267794   /* 1 / sqrt(2 pi) */
#define GELU_KAPPA 0.044715

template <typename T> static __device__ __forceinline__ T sigmoid(T v)
{
	return (T)1 / ((T)1 + exp(-v));
}

template <typename T> static __device__ T gelu(T v, bool tanh_approx)
{
	if (tanh_approx)
		return (T)0.5 * v *
		       ((T)1 + tanh((T)SQRT_2_OVER_PI *
				    (v + (T)GELU_KAPPA * v * v * v)));
	return (T)0.5 * v * ((T)1 + erf(v * (T)SQRT1_2));
}

template <typename T>
static __device__ T gelu_backward(T g, T v, bool tanh_approx)
{
	if (tanh_approx) {
		T inner = (T)SQRT_2_OVER_PI * (v + (T)GELU_KAPPA * v * v * v);
		T t = tanh(inner);
		T dleft = (T)0.5 * ((T)1 + t);
		T dright = (T)0.5 * v * ((T)1 - t * t) * (T)SQRT_2_OVER_PI *
			   ((T)1 + (T)3 * (T)GELU_KAPPA * v * v);
		return g * (dleft + dright);
	}
	T cdf = (T)0.5 * ((T)1 + erf(v * (T)SQRT1_2));
	return g * (cdf + v * exp((T)-0.5 * v * v) * (T)INV_SQRT_2PI);
}

/* One op on (a, b, c) in T; errors go to p.err. */
template <typename T>
static __device__ T apply(const dt_cu_ew &p, T a, T b, T c)
{
	switch (p.op) {
	case DT_CU_ADD:
		return a + (T)p.alpha * b;
	case DT_CU_SUB:
		return a - (T)p.alpha * b;
	case DT_CU_RSUB:
		return b - (T)p.alpha * a;
	case DT_CU_MUL:
		return a * b;
	case DT_CU_DIV:
		if (p.int_compute && p.mode != 0 && b == 0) {
			dt_cu_raise(p.err);
			return 0;
		}
		if (p.mode == 1)
			return trunc(a / b);
		if (p.mode == 2)
			return p.int_compute ? floor(a / b) : floor_div(a, b);
		return a / b;
	case DT_CU_POW:
		if (p.int_compute && b < 0) {
			dt_cu_raise(p.err);
			return 0;
		}
		return pow(a, b);
	case DT_CU_MAXIMUM:
		return isnan(a) || isnan(b) ? (T)NAN : a > b ? a : b;
	case DT_CU_MINIMUM:
		return isnan(a) || isnan(b) ? (T)NAN : a < b ? a : b;
	case DT_CU_ADDCMUL:
		return a + (T)p.alpha * b * c;
	case DT_CU_ADDCDIV:
		return a + (T)p.alpha * (b / c);
	case DT_CU_EQ:
		return a == b;
	case DT_CU_NE:
		return a != b;
	case DT_CU_LT:
		return a < b;
	case DT_CU_LE:
		return a <= b;
	case DT_CU_GT:
		return a > b;
	case DT_CU_GE:
		return a >= b;
	case DT_CU_NOT:
		return a == 0;
	case DT_CU_WHERE:
		return a != 0 ? b : c;
	case DT_CU_MASKED_FILL:
		return b != 0 ? c : a;
	case DT_CU_NEG:
		return -a;
	case DT_CU_ABS:
		return fabs(a);
	case DT_CU_RELU:
		return isnan(a) || a > 0 ? a : 0;
	case DT_CU_GELU:
		return gelu(a, p.tanh_approx != 0);
	case DT_CU_SILU:
		return a * sigmoid(a);
	case DT_CU_SIGMOID:
		return sigmoid(a);
	case DT_CU_TANH:
		return tanh(a);
	case DT_CU_EXP:
		return exp(a);
	case DT_CU_LOG:
		return log(a);
	case DT_CU_SQRT:
		return sqrt(a);
	case DT_CU_RSQRT:
		return (T)1 / sqrt(a);
	case DT_CU_ERF:
		return erf(a);
	case DT_CU_RECIPROCAL:
		return (T)1 / a;
	case DT_CU_SIN:
		return sin(a);
	case DT_CU_COS:
		return cos(a);
	case DT_CU_LOG1P:
		return log1p(a);
	case DT_CU_EXPM1:
		return expm1(a);
	case DT_CU_CLAMP:
		if (isnan(a))
			return a;
		if (p.has_lo && a < (T)p.lo)
			a = (T)p.lo;
		if (p.has_hi && a > (T)p.hi)
			a = (T)p.hi;
		return a;
	case DT_CU_THRESHOLD_BW:
		return b <= (T)p.lo ? (T)0 : a;
	case DT_CU_GELU_BW:
		return gelu_backward(a, b, p.tanh_approx != 0);
	case DT_CU_SILU_BW:
		return a * sigmoid(b) * ((T)1 + b * ((T)1 - sigmoid(b)));
	case DT_CU_SIGMOID_BW:
		return a * ((T)1 - b) * b;
	case DT_CU_TANH_BW:
		return a * ((T)1 - b * b);
	case DT_CU_DROPOUT_BW:
		return a * b * (T)p.alpha;
	case DT_CU_BAND:
		return (T)((long long)a & (long long)b);
	case DT_CU_BOR:
		return (T)((long long)a | (long long)b);
	case DT_CU_BXOR:
		return (T)((long long)a ^ (long long)b);
	case DT_CU_BNOT:
		return p.compute == DT_CU_BOOL ? (T)(a == 0)
					       : (T) ~(long long)a;
	case DT_CU_LAND:
		return a != 0 && b != 0;
	case DT_CU_LOR:
		return a != 0 || b != 0;
	case DT_CU_LXOR:
		return (a != 0) != (b != 0);
	case DT_CU_FILL:
		return a;
	case DT_CU_MSE:
		return (a - b) * (a - b);
	case DT_CU_MSE_BW:
		return (T)p.alpha * (a - b) * c;
	case DT_CU_REM: {
		if (p.int_compute && b == 0) {
			dt_cu_raise(p.err);
			return 0;
		}
		T mod = fmod(a, b);
		if (mod != 0 && (b < 0) != (mod < 0))
			mod += b;
		return mod;
	}
	case DT_CU_SIGN:
		return (T)(0 < a) - (T)(a < 0);
	default:
		return (T)NAN;
	}
}

template <typename T>
/* The loops over operands have constant bounds (every slot of the walk,
 * the unused ones zero): indexed by a runtime count, off[] and x[] lived
 * in local memory, an L1/L2 round trip per element that held an add of
 * two 64M-element float32 tensors to 740 GB/s on an H200. */
static __global__ void ew_kernel(const __grid_constant__ dt_cu_walk w,
				 const __grid_constant__ dt_cu_ew p)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     i < w.numel; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t off[DT_CU_MAX_OPS];
		dt_cu_offsets(&w, DT_CU_MAX_OPS, i, off);
		T x[3] = {0, 0, 0};
#pragma unroll
		for (int k = 0; k < 3; k++) {
			if (k >= p.nin)
				break;
			x[k] = (p.number >> k) & 1
				   ? (T)p.value[k]
				   : load_as<T>(w.t[k + 1], off[k + 1]);
			if ((p.cast >> k) & 1)
				x[k] = round_to<T>(p.compute, x[k]);
		}
		store_as<T>(w.t[0], off[0], apply<T>(p, x[0], x[1], x[2]));
	}
}

extern "C" cudaError_t dt_cu_elementwise(const struct dt_cu_walk *w,
					 const struct dt_cu_ew *p,
					 cudaStream_t s)
{
	if (w->numel == 0)
		return cudaSuccess;
	if (p->wide)
		ew_kernel<double>
		    <<<dt_cu_blocks_for(w->numel), DT_CU_THREADS, 0, s>>>(*w, *p);
	else
		ew_kernel<float>
		    <<<dt_cu_blocks_for(w->numel), DT_CU_THREADS, 0, s>>>(*w, *p);
	return cudaGetLastError();
}

/* ---- copy, fill, arange ---- */

static __global__ void copy_kernel(const __grid_constant__ dt_cu_walk w)
{
	bool same = w.t[0].dtype == w.t[1].dtype;
	int size = dt_cu_size(w.t[0].dtype);
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     i < w.numel; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t off[2];
		dt_cu_offsets(&w, 2, i, off);
		if (same)
			dt_cu_move(w.t[0].data, off[0], w.t[1].data, off[1],
				   size);
		else
			dt_cu_store(
			    w.t[0].data, w.t[0].dtype, off[0],
			    dt_cu_load(w.t[1].data, w.t[1].dtype, off[1]));
	}
}

extern "C" cudaError_t dt_cu_copy(const struct dt_cu_walk *w, cudaStream_t s)
{
	if (w->numel == 0)
		return cudaSuccess;
	copy_kernel<<<dt_cu_blocks_for(w->numel), DT_CU_THREADS, 0, s>>>(*w);
	return cudaGetLastError();
}

static __global__ void fill_kernel(const __grid_constant__ dt_cu_walk w,
				   unsigned long long bits)
{
	int size = dt_cu_size(w.t[0].dtype);
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     i < w.numel; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t off;
		dt_cu_offsets(&w, 1, i, &off);
		dt_cu_move(w.t[0].data, off, &bits, 0, size);
	}
}

extern "C" cudaError_t dt_cu_fill(const struct dt_cu_walk *w, uint64_t bits,
				  cudaStream_t s)
{
	if (w->numel == 0)
		return cudaSuccess;
	fill_kernel<<<dt_cu_blocks_for(w->numel), DT_CU_THREADS, 0, s>>>(*w, bits);
	return cudaGetLastError();
}

static __global__ void arange_kernel(const __grid_constant__ dt_cu_walk w,
				     double start, double step)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     i < w.numel; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t off;
		dt_cu_offsets(&w, 1, i, &off);
		dt_cu_store(w.t[0].data, w.t[0].dtype, off,
			    start + (double)i * step);
	}
}

extern "C" cudaError_t dt_cu_arange(const struct dt_cu_walk *w, double start,
				    double step, cudaStream_t s)
{
	if (w->numel == 0)
		return cudaSuccess;
	arange_kernel<<<dt_cu_blocks_for(w->numel), DT_CU_THREADS, 0, s>>>(*w, start, step);
	return cudaGetLastError();
}

/* ---- random ops ---- */

static __device__ __forceinline__ unsigned long long mix64(unsigned long long x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* cpu_random.c's uniform in [0, 1). */
static __device__ __forceinline__ double uniform(const dt_cu_random_op &p,
						 int64_t index, int stream)
{
	unsigned long long h =
	    mix64(p.seed ^ mix64(p.name ^ mix64((unsigned long long)index * 2 +
						(unsigned long long)stream)));
	return (double)(h >> 11) * 0x1.0p-53;
}

static __global__ void random_kernel(const __grid_constant__ dt_cu_walk w,
				     const __grid_constant__ dt_cu_random_op p)
{
	for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
	     i < w.numel; i += (int64_t)gridDim.x * blockDim.x) {
		int64_t off[3];
		dt_cu_offsets(&w, 3, i, off);
		double v = 0;
		switch (p.kind) {
		case DT_CU_DROPOUT: {
			v = dt_cu_load(w.t[2].data, w.t[2].dtype, off[2]);
			double mask = !p.train || uniform(p, i, 0) < 1 - p.p;
			if (p.train)
				v *= mask * (p.p < 1 ? 1 / (1 - p.p) : 0);
			dt_cu_store(w.t[1].data, w.t[1].dtype, off[1], mask);
			break;
		}
		case DT_CU_BERNOULLI:
			v = dt_cu_load(w.t[2].data, w.t[2].dtype, off[2]);
			if (!(v >= 0 && v <= 1))
				dt_cu_raise(p.err);
			v = uniform(p, i, 0) < v;
			break;
		case DT_CU_BERNOULLI_P:
			v = uniform(p, i, 0) < p.p;
			break;
		case DT_CU_RAND:
			v = uniform(p, i, 0);
			break;
		default: { /* Box-Muller */
			double u1 = 1 - uniform(p, i, 0), u2 = uniform(p, i, 1);
			v = sqrt(-2 * log(u1)) *
			    cos(6.28318530717958647693 * u2);
		}
		}
		dt_cu_store(w.t[0].data, w.t[0].dtype, off[0], v);
	}
}

extern "C" cudaError_t dt_cu_random(const struct dt_cu_walk *w,
				    const struct dt_cu_random_op *p,
				    cudaStream_t s)
{
	if (w->numel == 0)
		return cudaSuccess;
	random_kernel<<<dt_cu_blocks_for(w->numel), DT_CU_THREADS, 0, s>>>(*w, *p);
	return cudaGetLastError();
}
