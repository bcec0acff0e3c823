// SPDX-License-Identifier: MIT
/* cuda_internal.h: what the NCCL+CUDA backend's files share: the strided
 * walks and parameter blocks that the CUDA kernels (cuda_*.cu, CUDA C++)
 * take through extern "C" launchers, and, for the C side only, the
 * backend's CUDA context, the kernel dispatch and the error helpers.
 * Not installed; built only when CUDA and NCCL are found. */
#ifndef DTOPT_CUDA_INTERNAL_H
#define DTOPT_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Shared with the kernels (C and CUDA C++). */

#define DT_CU_MAX_RANK 8 /* = DT_MAX_RANK (checked in cuda_kernel.c) */
#define DT_CU_MAX_OPS 4

/* Dtype codes: the values of enum dt_dtype (checked in cuda_kernel.c). */
enum dt_cu_dtype {
	DT_CU_F32,
	DT_CU_F16,
	DT_CU_BF16,
	DT_CU_F64,
	DT_CU_I64,
	DT_CU_I32,
	DT_CU_I16,
	DT_CU_I8,
	DT_CU_U8,
	DT_CU_BOOL,
};

/* One operand of a walk: the element at walk index (i0, i1, ...) is at
 * data + (offset + sum i_d * stride[d]) elements of `dtype`. A broadcast
 * dim has stride 0; a Python number has data NULL. */
struct dt_cu_tensor {
	void *data;	/* element 0 of the buffer (device memory) */
	int64_t offset; /* in elements */
	int64_t stride[DT_CU_MAX_RANK];
	int32_t dtype; /* enum dt_cu_dtype */
};

/* The elements of `shape` in row-major order, with up to DT_CU_MAX_OPS
 * operands (t[0] is the result where there is one). Built by
 * dt_cuda_walk (size-1 dims dropped, neighbours merged), so the linear
 * walk index is the row-major element index of the original shape. */
struct dt_cu_walk {
	int32_t rank, n;
	int64_t numel;
	int64_t shape[DT_CU_MAX_RANK];
	struct dt_cu_tensor t[DT_CU_MAX_OPS];
};

/* Elementwise ops of dt_cu_elementwise (cpu_elementwise.c's table). */
enum dt_cu_ew_op {
	DT_CU_ADD,
	DT_CU_SUB,
	DT_CU_RSUB,
	DT_CU_MUL,
	DT_CU_DIV,
	DT_CU_POW,
	DT_CU_MAXIMUM,
	DT_CU_MINIMUM,
	DT_CU_ADDCMUL,
	DT_CU_ADDCDIV,
	DT_CU_EQ,
	DT_CU_NE,
	DT_CU_LT,
	DT_CU_LE,
	DT_CU_GT,
	DT_CU_GE,
	DT_CU_NOT,
	DT_CU_WHERE,
	DT_CU_MASKED_FILL,
	DT_CU_NEG,
	DT_CU_ABS,
	DT_CU_RELU,
	DT_CU_GELU,
	DT_CU_SILU,
	DT_CU_SIGMOID,
	DT_CU_TANH,
	DT_CU_EXP,
	DT_CU_LOG,
	DT_CU_SQRT,
	DT_CU_RSQRT,
	DT_CU_ERF,
	DT_CU_RECIPROCAL,
	DT_CU_SIN,
	DT_CU_COS,
	DT_CU_LOG1P,
	DT_CU_EXPM1,
	DT_CU_CLAMP,
	DT_CU_THRESHOLD_BW,
	DT_CU_GELU_BW,
	DT_CU_SILU_BW,
	DT_CU_SIGMOID_BW,
	DT_CU_TANH_BW,
	DT_CU_DROPOUT_BW,
	DT_CU_BAND,
	DT_CU_BOR,
	DT_CU_BXOR,
	DT_CU_BNOT, /* logical not when compute is bool */
	DT_CU_LAND,
	DT_CU_LOR,
	DT_CU_LXOR,
	DT_CU_FILL, /* y = the value operand */
	DT_CU_MSE,
	DT_CU_MSE_BW, /* alpha * (a - b) * c */
	DT_CU_SIGN,
	DT_CU_REM, /* Python's %: the divisor's sign */
};

/* A deferred kernel error: the kernel stores `code` into *status (first
 * error wins) and the host reports it at its next synchronization. */
struct dt_cu_status {
	int32_t *status; /* device-visible word, 0 = no error */
	int32_t code;	 /* this launch's code (> 0) */
};

/* y = f(x1, x2, x3) over walk t[0] = y, t[1..nin] = inputs. Inputs are
 * read as `compute` values: input k is first rounded to the compute dtype
 * when bit k of `cast` is set; the op runs in float (double when `wide`)
 * and y is stored to its dtype. */
struct dt_cu_ew {
	int32_t op, nin;
	int32_t compute; /* enum dt_cu_dtype the inputs are cast to */
	int32_t wide;	 /* compute in double */
	uint32_t cast;	 /* bit k: input k is rounded to `compute` */
	uint32_t number; /* bit k: input k is the number value[k] */
	double value[3];
	double alpha, lo, hi; /* alpha/value/scale; clamp bounds, threshold */
	int32_t has_lo, has_hi, tanh_approx;
	int32_t mode;	     /* div rounding: 0 none, 1 trunc, 2 floor */
	int32_t int_compute; /* integer division by zero, negative powers */
	struct dt_cu_status err;
};

/* Random ops (cpu_random.c's formula, bit for bit). */
enum dt_cu_random_kind {
	DT_CU_DROPOUT,
	DT_CU_BERNOULLI,
	DT_CU_BERNOULLI_P,
	DT_CU_RAND,
	DT_CU_RANDN,
};
struct dt_cu_random_op {
	int32_t kind, train;
	uint64_t seed, name; /* call seed, fnv1a of the node name */
	double p;
	struct dt_cu_status err; /* bernoulli: p outside [0, 1] */
};

/* Reductions: rows of the input (the reduced dims, row-major) reduce
 * into one element of each result. */
enum dt_cu_reduce_kind {
	DT_CU_RED_SUM,
	DT_CU_RED_MEAN,
	DT_CU_RED_MAX,
	DT_CU_RED_MIN,
	DT_CU_RED_ARGMAX,
	DT_CU_RED_ARGMIN,
	DT_CU_RED_LOGSUMEXP,
	DT_CU_RED_VAR,
};
struct dt_cu_reduce_op {
	int32_t kind, nout;
	int32_t cast;	   /* -1, or the dtype each element is rounded to */
	double correction; /* var */
	/* rows: t[0] = input, t[1] = result 0, t[2] = result 1 */
	struct dt_cu_walk outer;
	/* the reduced dims of the input (k elements) */
	int32_t inner_rank;
	int64_t k;
	int64_t inner_shape[DT_CU_MAX_RANK], inner_stride[DT_CU_MAX_RANK];
};

/* Row ops over contiguous or strided rows: softmax family. `outer`
 * walks the rows (t[0] = y, t[1] = x or grad, t[2] = output for the
 * backward); inner_stride[k] steps along the row of operand k. */
struct dt_cu_softmax_op {
	int32_t log_form, backward;
	int32_t wide; /* exp in double (float64 operands), else float */
	int64_t len;
	int64_t inner_stride[3];
	struct dt_cu_walk outer;
};

/* native_layer_norm and its backward on contiguous [rows, len] data,
 * computed in double. */
struct dt_cu_layer_norm_op {
	int64_t rows, len;
	double eps;
	const void *x, *w, *b, *g, *mean, *rstd; /* w, b may be NULL */
	int32_t x_dtype, w_dtype, b_dtype, g_dtype, stat_dtype;
	void *y, *out_mean, *out_rstd; /* forward results */
	int32_t y_dtype, mean_dtype, rstd_dtype;
	void *dx, *dw, *db; /* backward (NULL: skip) */
	int32_t dx_dtype, dw_dtype, db_dtype;
};

/* embedding / embedding_dense_backward on contiguous operands. */
struct dt_cu_embedding_op {
	int64_t n, rows, dim; /* indices, weight rows, row length */
	const void *index;
	int32_t index_dtype;
	const void *src; /* weight (forward) or grad (backward) */
	int32_t src_dtype;
	void *dst; /* out (forward) or double accumulators */
	int32_t dst_dtype;
	int64_t padding_idx;	 /* backward: skipped; -1 none */
	int32_t *counts;	 /* backward, scale_grad_by_freq: per row */
	struct dt_cu_status err; /* index out of range */
};

/* nll_loss forward/backward: x or grad_input contiguous [n, classes]. */
struct dt_cu_nll_op {
	int64_t n, classes, reduction, ignore;
	int32_t per_row;
	const void *target;
	int32_t target_dtype;
	const void *weight;
	int32_t weight_dtype; /* NULL: ones */
	const void *x;
	int32_t x_dtype;		    /* forward input */
	struct dt_cu_tensor out, total;	    /* forward results (1-D) */
	struct dt_cu_tensor grad, total_in; /* backward inputs (1-D) */
	void *grad_input;
	int32_t gi_dtype; /* backward result */
	struct dt_cu_status err;
};

/* tril/triu, index_select, index_add, repeat_interleave, gather,
 * scatter_add and repeat on contiguous operands (cuda_index.cu). `src` is
 * viewed as [outer, size, inner] (tril/triu: [batch, rows, cols],
 * `diagonal` the k); index_select writes dst [outer, n, inner] from src;
 * index_add adds alpha * src [outer, n, inner] into the double
 * accumulators dst [outer, size, inner]; repeat_interleave reads n
 * repeats from `index` and writes `size` positions into dst. gather,
 * scatter_add, repeat and flip walk `shape` (rank dims: index's, or the
 * result's) and address self (`self_shape`) and scatter_add's src
 * (`src_shape`) by coordinates; scatter_add adds into double
 * accumulators of self's shape, scatter.src and scatter.value write into
 * dst holding self (the value in `alpha`); flip reverses the dims of
 * `flip_mask`. cumsum sums [outer, size, inner] along size in double. */
enum dt_cu_index_kind {
	DT_CU_TRIL,
	DT_CU_TRIU,
	DT_CU_INDEX_SELECT,
	DT_CU_INDEX_ADD,
	DT_CU_REPEAT_INTERLEAVE,
	DT_CU_GATHER,
	DT_CU_SCATTER_ADD,
	DT_CU_SCATTER_SRC,
	DT_CU_SCATTER_VALUE,
	DT_CU_REPEAT,
	DT_CU_FLIP,
	DT_CU_CUMSUM,
};
struct dt_cu_index_op {
	int32_t kind;
	int64_t outer, size, inner, n, diagonal;
	int32_t rank, self_rank, dim;
	uint32_t flip_mask; /* flip: bit d = dim d reversed */
	int64_t shape[DT_CU_MAX_RANK], self_shape[DT_CU_MAX_RANK],
	    src_shape[DT_CU_MAX_RANK];
	double alpha;
	const void *src, *index;
	int32_t src_dtype, index_dtype;
	void *dst;
	int32_t dst_dtype;
	struct dt_cu_status err; /* an index out of range, a bad repeat */
};

/* Launchers (cuda_ew.cu, cuda_reduce.cu, cuda_nn.cu): each enqueues on
 * `s` and returns the launch's error (cudaSuccess when queued). */
cudaError_t dt_cu_elementwise(const struct dt_cu_walk *w,
			      const struct dt_cu_ew *p, cudaStream_t s);
/* t[0] = t[1]: bytes when the dtypes agree, else converted via double. */
cudaError_t dt_cu_copy(const struct dt_cu_walk *w, cudaStream_t s);
/* Every element of t[0] = `bits` (its bytes as dt_store_element writes
 * them, in the low dtype-size bytes). */
cudaError_t dt_cu_fill(const struct dt_cu_walk *w, uint64_t bits,
		       cudaStream_t s);
/* t[0][i] = start + i * step (in double) for row-major index i. */
cudaError_t dt_cu_arange(const struct dt_cu_walk *w, double start, double step,
			 cudaStream_t s);
/* t[0] = result, t[1] = dropout mask (else unused), t[2] = input. */
cudaError_t dt_cu_random(const struct dt_cu_walk *w,
			 const struct dt_cu_random_op *p, cudaStream_t s);
/* `scratch` holds dt_cu_reduce_scratch(p) bytes of device memory. */
cudaError_t dt_cu_reduce(const struct dt_cu_reduce_op *p, void *scratch,
			 cudaStream_t s);
size_t dt_cu_reduce_scratch(const struct dt_cu_reduce_op *p);
cudaError_t dt_cu_softmax(const struct dt_cu_softmax_op *p, cudaStream_t s);
cudaError_t dt_cu_layer_norm(const struct dt_cu_layer_norm_op *p,
			     cudaStream_t s);
/* The backward needs dt_cu_layer_norm_scratch(p) bytes of scratch. */
cudaError_t dt_cu_layer_norm_backward(const struct dt_cu_layer_norm_op *p,
				      void *scratch, cudaStream_t s);
size_t dt_cu_layer_norm_scratch(const struct dt_cu_layer_norm_op *p);
cudaError_t dt_cu_embedding(const struct dt_cu_embedding_op *p, cudaStream_t s);
/* Adds grad rows into double accumulators dst (zeroed by the caller);
 * counts (zeroed) first when scale_grad_by_freq. */
cudaError_t dt_cu_embedding_backward(const struct dt_cu_embedding_op *p,
				     cudaStream_t s);
cudaError_t dt_cu_nll_forward(const struct dt_cu_nll_op *p, cudaStream_t s);
/* grad_input zeroed by the caller. */
cudaError_t dt_cu_nll_backward(const struct dt_cu_nll_op *p, cudaStream_t s);
cudaError_t dt_cu_index(const struct dt_cu_index_op *p, cudaStream_t s);

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------ */
/* Device helpers of the .cu files: element loads and stores with
 * tensor.c's conversions (16-bit floats rounded to nearest even,
 * integers truncated with wrap-around, bool 0/1), walk offsets. */
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* Threads per block of the element-wise launches. */
#define DT_CU_THREADS 256

/* Blocks for n elements (at least 1, at most 65535): the kernels' grid-
 * stride loops cover the rest. */
static inline unsigned dt_cu_blocks_for(int64_t n)
{
	int64_t b = (n + DT_CU_THREADS - 1) / DT_CU_THREADS;
	return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

/* Record the first error of a launch in e.status (when it has one). */
static __device__ __forceinline__ void dt_cu_raise(const dt_cu_status &e)
{
	if (e.status)
		atomicCAS(e.status, 0, e.code);
}

/* Element `off` of a buffer of dtype t, as double. */
static __device__ __forceinline__ double dt_cu_load(const void *p, int t,
						    int64_t off)
{
	switch (t) {
	case DT_CU_F32:
		return ((const float *)p)[off];
	case DT_CU_F16:
		return __half2float(((const __half *)p)[off]);
	case DT_CU_BF16:
		return __bfloat162float(((const __nv_bfloat16 *)p)[off]);
	case DT_CU_F64:
		return ((const double *)p)[off];
	case DT_CU_I64:
		return (double)((const long long *)p)[off];
	case DT_CU_I32:
		return ((const int *)p)[off];
	case DT_CU_I16:
		return ((const short *)p)[off];
	case DT_CU_I8:
		return ((const signed char *)p)[off];
	case DT_CU_U8:
		return ((const unsigned char *)p)[off];
	default:
		return ((const unsigned char *)p)[off] != 0;
	}
}

/* The same as float, directly for the float dtypes. */
static __device__ __forceinline__ float dt_cu_loadf(const void *p, int t,
						    int64_t off)
{
	switch (t) {
	case DT_CU_F32:
		return ((const float *)p)[off];
	case DT_CU_F16:
		return __half2float(((const __half *)p)[off]);
	case DT_CU_BF16:
		return __bfloat162float(((const __nv_bfloat16 *)p)[off]);
	default:
		return (float)dt_cu_load(p, t, off);
	}
}

/* double -> int64 as tensor.c's to_int (NaN, out of range: INT64_MIN). */
static __device__ __forceinline__ long long dt_cu_to_int(double v)
{
	if (!(v > -9.2233720368547758e18 && v < 9.2233720368547758e18))
		return (long long)0x8000000000000000ull;
	return (long long)v;
}

static __device__ __forceinline__ void dt_cu_store(void *p, int t, int64_t off,
						   double v)
{
	switch (t) {
	case DT_CU_F32:
		((float *)p)[off] = (float)v;
		return;
	case DT_CU_F16:
		((__half *)p)[off] = __double2half(v);
		return;
	case DT_CU_BF16:
		((__nv_bfloat16 *)p)[off] = __double2bfloat16(v);
		return;
	case DT_CU_F64:
		((double *)p)[off] = v;
		return;
	case DT_CU_I64:
		((long long *)p)[off] = dt_cu_to_int(v);
		return;
	case DT_CU_I32:
		((int *)p)[off] = (int)(unsigned long long)dt_cu_to_int(v);
		return;
	case DT_CU_I16:
		((short *)p)[off] = (short)(unsigned long long)dt_cu_to_int(v);
		return;
	case DT_CU_I8:
		((signed char *)p)[off] =
		    (signed char)(unsigned long long)dt_cu_to_int(v);
		return;
	case DT_CU_U8:
		((unsigned char *)p)[off] =
		    (unsigned char)(unsigned long long)dt_cu_to_int(v);
		return;
	default:
		((unsigned char *)p)[off] = v != 0;
		return;
	}
}

/* A float stored to a float dtype rounds once from float (the same
 * result as from the exact double); other dtypes go through double. */
static __device__ __forceinline__ void dt_cu_storef(void *p, int t, int64_t off,
						    float v)
{
	switch (t) {
	case DT_CU_F32:
		((float *)p)[off] = v;
		return;
	case DT_CU_F16:
		((__half *)p)[off] = __float2half_rn(v);
		return;
	case DT_CU_BF16:
		((__nv_bfloat16 *)p)[off] = __float2bfloat16_rn(v);
		return;
	default:
		dt_cu_store(p, t, off, (double)v);
		return;
	}
}

static __device__ __forceinline__ int dt_cu_size(int t)
{
	return t == DT_CU_F64 || t == DT_CU_I64			     ? 8
	       : t == DT_CU_F32 || t == DT_CU_I32		     ? 4
	       : t == DT_CU_F16 || t == DT_CU_BF16 || t == DT_CU_I16 ? 2
								     : 1;
}

/* Copy the bytes of one element of `size` bytes. */
static __device__ __forceinline__ void
dt_cu_move(void *d, int64_t doff, const void *s, int64_t soff, int size)
{
	switch (size) {
	case 8:
		((unsigned long long *)d)[doff] =
		    ((const unsigned long long *)s)[soff];
		return;
	case 4:
		((unsigned *)d)[doff] = ((const unsigned *)s)[soff];
		return;
	case 2:
		((unsigned short *)d)[doff] = ((const unsigned short *)s)[soff];
		return;
	default:
		((unsigned char *)d)[doff] = ((const unsigned char *)s)[soff];
		return;
	}
}

/* Element offsets of walk index i for the first n operands. */
static __device__ __forceinline__ void
dt_cu_offsets(const struct dt_cu_walk *w, int n, int64_t i, int64_t *off)
{
	for (int k = 0; k < n; k++)
		off[k] = w->t[k].offset;
	for (int d = w->rank - 1; d >= 0; d--) {
		int64_t size = w->shape[d], q = d ? i / size : 0;
		int64_t r = d ? i - q * size : i;
		for (int k = 0; k < n; k++)
			off[k] += r * w->t[k].stride[d];
		i = q;
	}
}
#endif

/* ------------------------------------------------------------------ */
/* The backend's C side (backend_nccl.c, cuda_kernel.c, cuda_nn.c). */
#ifndef __cplusplus
#include "internal.h"

#define DT_CUDA_FALLBACK 1 /* dispatch: no CUDA kernel, use the CPU one */
#define DT_CUDA_MAX_CHECKS 64

/* A kernel launch that may report a deferred error. */
struct dt_cuda_check {
	const struct dt_module *m;
	const struct dt_node *node;
	char what[160]; /* the message */
};

/* What the kernel dispatch needs of the backend. */
struct dt_cuda_ctx {
	struct dt_backend *b;	   /* for diagnostics */
	const struct dt_module *m; /* the backend's graph, for messages */
	cudaStream_t stream;	   /* compute: kernels, copies, memory */
	struct dt_cuda_blas *blas; /* cuBLAS on `stream`, loaded at first use */
	int32_t *status; /* device word: first deferred error, 0 none */
	struct dt_cuda_check checks[DT_CUDA_MAX_CHECKS];
	int nchecks;
	uint64_t fallbacks[DT_NOPS]; /* calls that ran the CPU kernel */
};

/* Report `API failed: ERROR` at node n (or at the graph when n is NULL)
 * through ctx->b; returns DT_ERUNTIME. */
int dt_cuda_fail(struct dt_cuda_ctx *ctx, const struct dt_module *m,
		 const struct dt_node *n, const char *api, const char *error);
/* DT_OK when e is cudaSuccess, else dt_cuda_fail with its string. */
int dt_cuda_check(struct dt_cuda_ctx *ctx, const struct dt_module *m,
		  const struct dt_node *n, const char *api, cudaError_t e);
/* Wait for the compute stream, then report the first deferred kernel
 * error (at its node) and forget the registered launches. */
int dt_cuda_sync(struct dt_cuda_ctx *ctx);
/* A status for one launch of call c that may fail with the message
 * (printf format); may synchronize first when the table is full (then
 * fails like dt_cuda_sync). */
int dt_cuda_status(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		   struct dt_cu_status *out, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A walk over `shape` (right-aligned broadcasting as in dt_cpu_iter) of
 * n tensors (NULL: a number, stride 0, no data). */
void dt_cuda_walk(struct dt_cu_walk *w, const int64_t *shape, int rank,
		  const struct dt_rt_tensor *const *t, int n);
/* Stream-ordered device scratch (NULL after reporting at the call). */
void *dt_cuda_scratch(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		      size_t bytes);
void dt_cuda_scratch_free(struct dt_cuda_ctx *ctx, void *p);
/* dst = src (same shape; any strides and dtypes) on the compute stream;
 * reports at the call's node (c may be NULL). */
int dt_cuda_copy(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 struct dt_rt_tensor *dst, const struct dt_rt_tensor *src);
/* Fill t with v. */
int dt_cuda_fill(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 struct dt_rt_tensor *t, double v);
/* A contiguous tensor of `shape` and `dtype` in fresh scratch memory
 * held by *holder (free with dt_cuda_release). */
int dt_cuda_temp(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 const int64_t *shape, int rank, enum dt_dtype dtype,
		 struct dt_rt_tensor *out, struct dt_buffer *holder);
/* A contiguous version of t (NULL stays NULL): t itself (holder->data
 * NULL), or a copy in scratch memory held by *holder. */
int dt_cuda_contiguous(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		       const struct dt_rt_tensor *t, struct dt_rt_tensor *out,
		       struct dt_buffer *holder);
/* Free what a holder holds (nothing when its data is NULL). */
void dt_cuda_release(struct dt_cuda_ctx *ctx, struct dt_buffer *holder);
/* Address of t's first element. */
void *dt_cuda_ptr(const struct dt_rt_tensor *t);

/* Issue all_permute call c on `comm` (an ncclComm_t) and `stream`:
 * elements of `size` bytes move as ncclDataType_t `type` of `unit` bytes
 * (nccl_permute.c). Returns the ncclResult_t. */
struct ncclComm;
int dt_nccl_all_permute(struct ncclComm *comm, cudaStream_t stream,
			const struct dt_collective_call *c, int type,
			int size, int unit);

/* Run compute node c on the GPU: DT_OK, DT_ERUNTIME after reporting, or
 * DT_CUDA_FALLBACK when no CUDA kernel covers the op or its dtypes. */
int dt_cuda_kernel(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
/* Run c with the CPU kernel: inputs downloaded, outputs uploaded. */
int dt_cuda_fallback(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);

/* Release what the first matrix product loaded (cuBLAS's handle; the
 * library stays loaded). */
void dt_cuda_blas_close(struct dt_cuda_ctx *ctx);

/* The elementwise ops of cuda_elementwise.c's table (what
 * dt_cuda_elementwise runs; not mse_loss, which reduces). */
bool dt_cuda_is_elementwise(uint32_t op);
/* Families in cuda_elementwise.c, cuda_ops.c and cuda_nn.c (same contract
 * as dt_cuda_kernel). */
int dt_cuda_elementwise(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_mse_loss(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_random(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_create(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_copy_op(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_join(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_pad(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_reduce(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_matmul(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_softmax(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_layer_norm(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_embedding(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
int dt_cuda_nll_loss(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
/* tril/triu, index_select, index_add, repeat_interleave (cuda_index.c). */
int dt_cuda_index(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c);
/* out (0-d) = the sum, or the mean, of every element of x (cuda_ops.c). */
int dt_cuda_reduce_all(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		       bool mean, const struct dt_rt_tensor *x,
		       struct dt_rt_tensor *out);

/* The CPU-kernel fallbacks a NCCL backend ran so far, per op (for tests
 * and reports); per_op holds DT_NOPS counters. b must come from
 * dt_backend_nccl_create. */
void dt_backend_nccl_fallbacks(const struct dt_backend *b, uint64_t *per_op);
#endif

#endif
