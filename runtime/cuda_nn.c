// SPDX-License-Identifier: MIT
/* cuda_nn.c: the NCCL+CUDA backend's matrix products on cuBLAS (mm, bmm,
 * addmm, baddbmm: cublasGemmEx / cublasGemmStridedBatchedEx with the
 * transposes the operands' strides allow, a contiguous copy otherwise)
 * and the host side of the row kernels of cuda_nn.cu (softmax family,
 * layer norm, embedding, nll_loss). Semantics follow cpu_matmul.c,
 * cpu_nn.c and cpu_loss.c. cuBLAS is loaded with dlopen at the first
 * product: its library constructors take about half a second, which every
 * dtopt command would pay if it were linked. */
#include "cuda_internal.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <limits.h>
#include <string.h>

/* ---- cuBLAS, loaded on first use ---- */

typedef cublasStatus_t (*gemm_fn)(cublasHandle_t, cublasOperation_t,
				  cublasOperation_t, int, int, int,
				  const void *, const void *, cudaDataType, int,
				  const void *, cudaDataType, int, const void *,
				  void *, cudaDataType, int,
				  cublasComputeType_t, cublasGemmAlgo_t);
typedef cublasStatus_t (*gemm_batched_fn)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void *, const void *, cudaDataType, int, long long, const void *,
    cudaDataType, int, long long, const void *, void *, cudaDataType, int,
    long long, int, cublasComputeType_t, cublasGemmAlgo_t);

struct dt_cuda_blas {
	cublasHandle_t handle;
	cublasStatus_t (*create)(cublasHandle_t *);
	cublasStatus_t (*destroy)(cublasHandle_t);
	cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
	const char *(*status_string)(cublasStatus_t);
	gemm_fn gemm;
	gemm_batched_fn gemm_batched;
};

/* Symbol `name` of lib into the function pointer at fp (ISO C has no
 * cast from an object pointer to a function pointer). */
static bool symbol(void *lib, const char *name, void *fp, size_t size)
{
	void *sym = dlsym(lib, name);
	if (sym)
		memcpy(fp, &sym, size);
	return sym != NULL;
}

static int blas_open(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	char name[32];
	snprintf(name, sizeof(name), "libcublas.so.%d", CUBLAS_VER_MAJOR);
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL); /* never unloaded */
	if (!lib)
		return dt_cuda_fail(ctx, c->m, c->node, "dlopen", dlerror());
	struct dt_cuda_blas *f = dt_calloc(1, sizeof(*f));
	/* the pointers' types against cublas_api.h (not evaluated) */
	(void)sizeof(f->create = cublasCreate_v2);
	(void)sizeof(f->destroy = cublasDestroy_v2);
	(void)sizeof(f->set_stream = cublasSetStream_v2);
	(void)sizeof(f->status_string = cublasGetStatusString);
	(void)sizeof(f->gemm = cublasGemmEx);
	(void)sizeof(f->gemm_batched = cublasGemmStridedBatchedEx);
	const struct {
		const char *name;
		void *fp;
		size_t size;
	} syms[] = {
	    {"cublasCreate_v2", &f->create, sizeof(f->create)},
	    {"cublasDestroy_v2", &f->destroy, sizeof(f->destroy)},
	    {"cublasSetStream_v2", &f->set_stream, sizeof(f->set_stream)},
	    {"cublasGetStatusString", &f->status_string,
	     sizeof(f->status_string)},
	    {"cublasGemmEx", &f->gemm, sizeof(f->gemm)},
	    {"cublasGemmStridedBatchedEx", &f->gemm_batched,
	     sizeof(f->gemm_batched)},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		if (!symbol(lib, syms[i].name, syms[i].fp, syms[i].size)) {
			dt_free(f);
			return dt_cuda_fail(ctx, c->m, c->node, "dlsym",
					    syms[i].name);
		}
	}
	cublasStatus_t s = f->create(&f->handle);
	if (s == CUBLAS_STATUS_SUCCESS)
		s = f->set_stream(f->handle, ctx->stream);
	if (s != CUBLAS_STATUS_SUCCESS) {
		if (f->handle)
			f->destroy(f->handle);
		int rc = dt_cuda_fail(ctx, c->m, c->node, "cublasCreate",
				      f->status_string(s));
		dt_free(f);
		return rc;
	}
	ctx->blas = f;
	return DT_OK;
}

void dt_cuda_blas_close(struct dt_cuda_ctx *ctx)
{
	if (!ctx->blas)
		return;
	ctx->blas->destroy(ctx->blas->handle);
	dt_free(ctx->blas);
	ctx->blas = NULL;
}

/* ---- matrix products ---- */

static int blas_check(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		      const char *api, cublasStatus_t s)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return DT_OK;
	return dt_cuda_fail(ctx, c->m, c->node, api,
			    ctx->blas->status_string(s));
}

/* How cuBLAS (column-major) reads a row-major [rows, cols] matrix with
 * strides (s0, s1): as its transpose with ld s0 (CUBLAS_OP_N gives back
 * the row-major matrix's transpose), or as itself with ld s1
 * (CUBLAS_OP_T). False when neither fits (then it is copied). */
static bool gemm_operand(const struct dt_rt_tensor *t, cublasOperation_t *op,
			 int64_t *ld)
{
	int r = t->rank;
	int64_t rows = t->shape[r - 2], cols = t->shape[r - 1];
	int64_t s0 = t->stride[r - 2], s1 = t->stride[r - 1];
	if ((s1 == 1 || cols == 1) && (s0 >= cols || rows == 1)) {
		*op = CUBLAS_OP_N;
		*ld = rows == 1 ? (cols > 1 ? cols : 1) : s0;
		return *ld >= 1 && *ld <= INT_MAX;
	}
	if ((s0 == 1 || rows == 1) && (s1 >= rows || cols == 1)) {
		*op = CUBLAS_OP_T;
		*ld = cols == 1 ? (rows > 1 ? rows : 1) : s1;
		return *ld >= 1 && *ld <= INT_MAX;
	}
	return false;
}

/* t broadcast to `shape` (right-aligned, stride 0 where it repeats). */
static struct dt_rt_tensor broadcast(const struct dt_rt_tensor *t,
				     const int64_t *shape, int rank)
{
	struct dt_rt_tensor v = *t;
	v.rank = (uint8_t)rank;
	int lead = rank - t->rank;
	for (int d = 0; d < rank; d++) {
		int i = d - lead;
		v.shape[d] = shape[d];
		v.stride[d] = i < 0 || t->shape[i] == 1 ? 0 : t->stride[i];
	}
	return v;
}

static bool blas_type(enum dt_dtype t, cudaDataType_t *type,
		      cublasComputeType_t *compute)
{
	switch (t) {
	case DT_FLOAT32:
		*type = CUDA_R_32F;
		*compute = CUBLAS_COMPUTE_32F;
		return true;
	case DT_FLOAT16:
		*type = CUDA_R_16F;
		*compute = CUBLAS_COMPUTE_32F;
		return true;
	case DT_BFLOAT16:
		*type = CUDA_R_16BF;
		*compute = CUBLAS_COMPUTE_32F;
		return true;
	case DT_FLOAT64:
		*type = CUDA_R_64F;
		*compute = CUBLAS_COMPUTE_64F;
		return true;
	default:
		return false;
	}
}

/* An operand in a layout cuBLAS reads, copied to a contiguous temporary
 * when its strides do not allow one. */
static int gemm_input(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		      const struct dt_rt_tensor *t, struct dt_rt_tensor *use,
		      struct dt_buffer *holder, cublasOperation_t *op,
		      int64_t *ld)
{
	holder->data = NULL;
	*use = *t;
	if (gemm_operand(t, op, ld))
		return DT_OK;
	if (dt_cuda_temp(ctx, c, t->shape, t->rank, (enum dt_dtype)t->dtype,
			 use, holder) != DT_OK ||
	    dt_cuda_copy(ctx, c, use, t) != DT_OK)
		return DT_ERUNTIME;
	DT_REQUIRE(gemm_operand(use, op, ld));
	return DT_OK;
}

int dt_cuda_matmul(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	bool add = c->op == DT_OP_ADDMM || c->op == DT_OP_BADDBMM;
	const struct dt_rt_tensor *x = dt_kernel_input(c, add ? 1 : 0);
	const struct dt_rt_tensor *y = dt_kernel_input(c, add ? 2 : 1);
	struct dt_rt_tensor *out = &c->outputs[0];
	bool batched = x->rank == 3;
	int64_t nb = batched ? x->shape[0] : 1;
	int64_t m = x->shape[x->rank - 2], k = x->shape[x->rank - 1];
	int64_t n = y->shape[y->rank - 1];
	if (y->shape[y->rank - 2] != k || (batched && y->shape[0] != nb))
		return dt_cpu_fail(ctx->b, c, "operand shapes do not match");
	cudaDataType_t type;
	cublasComputeType_t compute;
	/* integer products, mixed dtypes, k = 0 and sizes past int: CPU */
	if (!blas_type((enum dt_dtype)out->dtype, &type, &compute) ||
	    x->dtype != out->dtype || y->dtype != out->dtype || k == 0 ||
	    m > INT_MAX || n > INT_MAX || k > INT_MAX || nb > INT_MAX)
		return DT_CUDA_FALLBACK;
	double beta = 1, alpha = 1;
	if (add) {
		dt_cpu_number(c, 3, &beta);
		dt_cpu_number(c, 4, &alpha);
	} else {
		beta = 0;
	}
	if (m * n * nb == 0)
		return DT_OK;
	if (!ctx->blas && blas_open(ctx, c) != DT_OK)
		return DT_ERUNTIME;
	/* C: the result when cuBLAS can write it, else a temporary */
	struct dt_buffer hc = {0}, ha = {0}, hb = {0};
	struct dt_rt_tensor cm = *out, am, bm;
	cublasOperation_t opc, opa, opb;
	int64_t ldc, lda, ldb;
	int rc = DT_OK;
	if (!gemm_operand(out, &opc, &ldc) || opc != CUBLAS_OP_N)
		rc = dt_cuda_temp(ctx, c, out->shape, out->rank,
				  (enum dt_dtype)out->dtype, &cm, &hc);
	if (rc == DT_OK)
		DT_REQUIRE(gemm_operand(&cm, &opc, &ldc) && opc == CUBLAS_OP_N);
	if (rc == DT_OK && beta != 0) {
		struct dt_rt_tensor self =
		    broadcast(dt_kernel_input(c, 0), out->shape, out->rank);
		rc = dt_cuda_copy(ctx, c, &cm, &self);
	}
	if (rc == DT_OK)
		rc = gemm_input(ctx, c, x, &am, &ha, &opa, &lda);
	if (rc == DT_OK)
		rc = gemm_input(ctx, c, y, &bm, &hb, &opb, &ldb);
	if (rc == DT_OK) {
		/* row-major C = A B is column-major C^T = B^T A^T */
		float af = (float)alpha, bf = (float)beta;
		const void *pa =
		    compute == CUBLAS_COMPUTE_64F ? (const void *)&alpha : &af;
		const void *pb =
		    compute == CUBLAS_COMPUTE_64F ? (const void *)&beta : &bf;
		cublasHandle_t h = ctx->blas->handle;
		if (!batched || nb == 1)
			rc =
			    blas_check(ctx, c, "cublasGemmEx",
				       ctx->blas->gemm(
					   h, opb, opa, (int)n, (int)m, (int)k,
					   pa, dt_cuda_ptr(&bm), type, (int)ldb,
					   dt_cuda_ptr(&am), type, (int)lda, pb,
					   dt_cuda_ptr(&cm), type, (int)ldc,
					   compute, CUBLAS_GEMM_DEFAULT));
		else
			rc = blas_check(
			    ctx, c, "cublasGemmStridedBatchedEx",
			    ctx->blas->gemm_batched(
				h, opb, opa, (int)n, (int)m, (int)k, pa,
				dt_cuda_ptr(&bm), type, (int)ldb, bm.stride[0],
				dt_cuda_ptr(&am), type, (int)lda, am.stride[0],
				pb, dt_cuda_ptr(&cm), type, (int)ldc,
				cm.stride[0], (int)nb, compute,
				CUBLAS_GEMM_DEFAULT));
	}
	if (rc == DT_OK && hc.data)
		rc = dt_cuda_copy(ctx, c, out, &cm);
	dt_cuda_release(ctx, &ha);
	dt_cuda_release(ctx, &hb);
	dt_cuda_release(ctx, &hc);
	return rc;
}

/* ---- softmax family ---- */

/* t without dim d (the row dim), for the walk over rows. */
static struct dt_rt_tensor without_dim(const struct dt_rt_tensor *t, int d)
{
	struct dt_rt_tensor r = *t;
	if (t->rank == 0)
		return r;
	for (int i = d; i + 1 < t->rank; i++) {
		r.shape[i] = t->shape[i + 1];
		r.stride[i] = t->stride[i + 1];
	}
	r.rank--;
	return r;
}

int dt_cuda_softmax(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	bool backward = c->op == DT_OP_SOFTMAX_BACKWARD ||
			c->op == DT_OP_LOG_SOFTMAX_BACKWARD;
	const struct dt_rt_tensor *t[3] = {
	    &c->outputs[0], dt_kernel_input(c, 0),
	    backward ? dt_kernel_input(c, 1) : NULL};
	int64_t dim = 0;
	dt_cpu_int(c, backward ? 2 : 1, &dim);
	int rank = t[1]->rank;
	int64_t r = rank > 0 ? rank : 1;
	if (dim < -r || dim >= r)
		return dt_cpu_fail(ctx->b, c, "dim %lld out of range",
				   (long long)dim);
	if (dim < 0)
		dim += r;
	struct dt_cu_softmax_op p;
	memset(&p, 0, sizeof(p));
	p.backward = backward;
	p.log_form =
	    c->op == DT_OP_LOG_SOFTMAX || c->op == DT_OP_LOG_SOFTMAX_BACKWARD;
	p.len = rank > 0 ? t[1]->shape[dim] : 1;
	struct dt_rt_tensor rows[3];
	const struct dt_rt_tensor *rp[3];
	int n = backward ? 3 : 2;
	for (int k = 0; k < n; k++) {
		p.inner_stride[k] = rank > 0 ? t[k]->stride[dim] : 0;
		p.wide |= t[k]->dtype == DT_FLOAT64;
		rows[k] = without_dim(t[k], (int)dim);
		rp[k] = &rows[k];
	}
	dt_cuda_walk(&p.outer, rows[1].shape, rows[1].rank, rp, n);
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_softmax",
			     dt_cu_softmax(&p, ctx->stream));
}

/* ---- layer norm ---- */

/* Rows and row length of a layer norm over the trailing dims that
 * parameter p names. */
static int norm_geometry(struct dt_cuda_ctx *ctx,
			 const struct dt_kernel_call *c,
			 const struct dt_rt_tensor *x, int p, int64_t *rows,
			 int64_t *len)
{
	int64_t ns[DT_MAX_RANK + 1];
	int nn = dt_cpu_ints(c, p, ns, DT_MAX_RANK + 1);
	if (nn < 1 || nn > x->rank)
		return dt_cpu_fail(ctx->b, c,
				   "normalized_shape does not fit the input");
	*len = 1;
	for (int i = 0; i < nn; i++) {
		if (ns[i] != x->shape[x->rank - nn + i])
			return dt_cpu_fail(ctx->b, c,
					   "normalized_shape does not match "
					   "the input's trailing dims");
		*len *= ns[i];
	}
	*rows = dt_numel(x->shape, x->rank - nn);
	return DT_OK;
}

/* Contiguous inputs and results of one call: inputs copied when
 * strided, results computed into temporaries copied back at the end. */
struct staging {
	struct dt_rt_tensor in[6], out[3];
	struct dt_buffer hin[6], hout[3];
	bool copy_back[3];
};

static int stage_in(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		    struct staging *s, int slot, const struct dt_rt_tensor *t)
{
	memset(&s->in[slot], 0, sizeof(s->in[slot]));
	return dt_cuda_contiguous(ctx, c, t, &s->in[slot], &s->hin[slot]);
}

static int stage_out(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		     struct staging *s, int k)
{
	struct dt_rt_tensor *t = &c->outputs[k];
	s->out[k] = *t;
	s->hout[k].data = NULL;
	s->copy_back[k] = !dt_rt_is_contiguous(t);
	if (!s->copy_back[k])
		return DT_OK;
	return dt_cuda_temp(ctx, c, t->shape, t->rank, (enum dt_dtype)t->dtype,
			    &s->out[k], &s->hout[k]);
}

/* Copy staged results back (when rc is DT_OK) and free everything. */
static int stage_finish(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
			struct staging *s, int rc)
{
	for (int k = 0; k < 3; k++) {
		if (rc == DT_OK && s->copy_back[k] && s->hout[k].data)
			rc = dt_cuda_copy(ctx, c, &c->outputs[k], &s->out[k]);
		dt_cuda_release(ctx, &s->hout[k]);
	}
	for (int k = 0; k < 6; k++)
		dt_cuda_release(ctx, &s->hin[k]);
	return rc;
}

static const void *ptr_or_null(const struct dt_rt_tensor *t)
{
	return t->buf ? dt_cuda_ptr(t) : NULL;
}

static int layer_norm(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		      struct staging *s, struct dt_cu_layer_norm_op *p)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	if (norm_geometry(ctx, c, x, 1, &p->rows, &p->len) != DT_OK)
		return DT_ERUNTIME;
	p->eps = 1e-5;
	dt_cpu_number(c, 4, &p->eps);
	int rc = DT_OK;
	for (int k = 0; k < 3 && rc == DT_OK; k++)
		rc = stage_in(ctx, c, s, k, k ? dt_kernel_input(c, k + 1) : x);
	for (int k = 0; k < 3 && rc == DT_OK; k++)
		rc = stage_out(ctx, c, s, k);
	if (rc != DT_OK)
		return rc;
	p->x = dt_cuda_ptr(&s->in[0]);
	p->x_dtype = x->dtype;
	p->w = ptr_or_null(&s->in[1]);
	p->w_dtype = s->in[1].dtype;
	p->b = ptr_or_null(&s->in[2]);
	p->b_dtype = s->in[2].dtype;
	p->y = dt_cuda_ptr(&s->out[0]);
	p->y_dtype = s->out[0].dtype;
	p->out_mean = dt_cuda_ptr(&s->out[1]);
	p->mean_dtype = s->out[1].dtype;
	p->out_rstd = dt_cuda_ptr(&s->out[2]);
	p->rstd_dtype = s->out[2].dtype;
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_layer_norm",
			     dt_cu_layer_norm(p, ctx->stream));
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean,
 * rstd, weight, bias, output_mask); masked-off results are zeros. */
static int layer_norm_backward(struct dt_cuda_ctx *ctx,
			       const struct dt_kernel_call *c,
			       struct staging *s, struct dt_cu_layer_norm_op *p)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 1);
	if (norm_geometry(ctx, c, x, 2, &p->rows, &p->len) != DT_OK)
		return DT_ERUNTIME;
	const struct dt_rt_tensor *mean = dt_kernel_input(c, 3),
				  *rstd = dt_kernel_input(c, 4);
	if (dt_rt_numel(mean) != p->rows || dt_rt_numel(rstd) != p->rows)
		return dt_cpu_fail(
		    ctx->b, c, "mean and rstd must have one element per row");
	if (mean->dtype != rstd->dtype)
		return DT_CUDA_FALLBACK;
	int64_t flags[3] = {1, 1, 1};
	dt_cpu_ints(c, 7, flags, 3);
	const struct dt_rt_tensor *ins[5] = {dt_kernel_input(c, 0), x, mean,
					     rstd, dt_kernel_input(c, 5)};
	int rc = DT_OK;
	for (int k = 0; k < 5 && rc == DT_OK; k++)
		rc = stage_in(ctx, c, s, k, ins[k]);
	for (int k = 0; k < 3 && rc == DT_OK; k++)
		rc = flags[k] ? stage_out(ctx, c, s, k)
			      : dt_cuda_fill(ctx, c, &c->outputs[k], 0);
	if (rc != DT_OK)
		return rc;
	p->g = dt_cuda_ptr(&s->in[0]);
	p->g_dtype = s->in[0].dtype;
	p->x = dt_cuda_ptr(&s->in[1]);
	p->x_dtype = x->dtype;
	p->mean = dt_cuda_ptr(&s->in[2]);
	p->rstd = dt_cuda_ptr(&s->in[3]);
	p->stat_dtype = mean->dtype;
	p->w = ptr_or_null(&s->in[4]);
	p->w_dtype = s->in[4].dtype;
	void **res[3] = {&p->dx, &p->dw, &p->db};
	int32_t *types[3] = {&p->dx_dtype, &p->dw_dtype, &p->db_dtype};
	for (int k = 0; k < 3; k++) {
		*res[k] = flags[k] ? dt_cuda_ptr(&s->out[k]) : NULL;
		*types[k] = c->outputs[k].dtype;
	}
	void *scratch = dt_cuda_scratch(ctx, c, dt_cu_layer_norm_scratch(p));
	if (!scratch)
		return DT_ERUNTIME;
	rc = dt_cuda_check(ctx, c->m, c->node, "dt_cu_layer_norm_backward",
			   dt_cu_layer_norm_backward(p, scratch, ctx->stream));
	dt_cuda_scratch_free(ctx, scratch);
	return rc;
}

int dt_cuda_layer_norm(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct staging s;
	struct dt_cu_layer_norm_op p;
	memset(&s, 0, sizeof(s));
	memset(&p, 0, sizeof(p));
	int rc = c->op == DT_OP_NATIVE_LAYER_NORM
		     ? layer_norm(ctx, c, &s, &p)
		     : layer_norm_backward(ctx, c, &s, &p);
	if (rc == DT_CUDA_FALLBACK) {
		stage_finish(ctx, c, &s, DT_ERUNTIME);
		return rc;
	}
	return stage_finish(ctx, c, &s, rc);
}

/* ---- embedding ---- */

static int embedding(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		     struct staging *s, struct dt_cu_embedding_op *p)
{
	const struct dt_rt_tensor *w = dt_kernel_input(c, 0),
				  *idx = dt_kernel_input(c, 1);
	if (w->rank != 2)
		return dt_cpu_fail(ctx->b, c, "the weight must be 2-D");
	p->rows = w->shape[0];
	p->dim = w->shape[1];
	p->n = dt_rt_numel(idx);
	int rc = stage_in(ctx, c, s, 0, w);
	if (rc == DT_OK)
		rc = stage_in(ctx, c, s, 1, idx);
	if (rc == DT_OK)
		rc = stage_out(ctx, c, s, 0);
	if (rc == DT_OK)
		rc = dt_cuda_status(ctx, c, &p->err,
				    "an index is out of bounds for size %lld",
				    (long long)p->rows);
	if (rc != DT_OK)
		return rc;
	p->src = dt_cuda_ptr(&s->in[0]);
	p->src_dtype = w->dtype;
	p->index = dt_cuda_ptr(&s->in[1]);
	p->index_dtype = idx->dtype;
	p->dst = dt_cuda_ptr(&s->out[0]);
	p->dst_dtype = s->out[0].dtype;
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_embedding",
			     dt_cu_embedding(p, ctx->stream));
}

/* grad_weight[idx[i]] += grad[i] in double accumulators (skipping
 * padding_idx; divided by the index's count with scale_grad_by_freq),
 * then rounded once into the result. */
static int embedding_backward(struct dt_cuda_ctx *ctx,
			      const struct dt_kernel_call *c, struct staging *s,
			      struct dt_cu_embedding_op *p)
{
	const struct dt_rt_tensor *g = dt_kernel_input(c, 0),
				  *idx = dt_kernel_input(c, 1);
	bool by_freq = false;
	p->padding_idx = -1;
	dt_cpu_int(c, 2, &p->rows);
	dt_cpu_int(c, 3, &p->padding_idx);
	dt_cpu_bool(c, 4, &by_freq);
	p->dim = g->rank > 0 ? g->shape[g->rank - 1] : 1;
	p->n = dt_rt_numel(idx);
	if (dt_rt_numel(g) != p->n * p->dim)
		return dt_cpu_fail(
		    ctx->b, c, "grad_output does not have one row per index");
	int64_t shape[2] = {p->rows, p->dim};
	struct dt_rt_tensor acc;
	struct dt_buffer hacc = {0};
	void *counts = NULL;
	int rc = stage_in(ctx, c, s, 0, g);
	if (rc == DT_OK)
		rc = stage_in(ctx, c, s, 1, idx);
	if (rc == DT_OK)
		rc = dt_cuda_temp(ctx, c, shape, 2, DT_FLOAT64, &acc, &hacc);
	if (rc == DT_OK)
		rc = dt_cuda_fill(ctx, c, &acc, 0);
	if (rc == DT_OK && by_freq &&
	    !(counts = dt_cuda_scratch(ctx, c, (size_t)p->rows * 4)))
		rc = DT_ERUNTIME;
	if (rc == DT_OK && counts)
		rc = dt_cuda_check(ctx, c->m, c->node, "cudaMemsetAsync",
				   cudaMemsetAsync(counts, 0,
						   (size_t)p->rows * 4,
						   ctx->stream));
	if (rc == DT_OK)
		rc = dt_cuda_status(ctx, c, &p->err,
				    "an index is out of bounds for size %lld",
				    (long long)p->rows);
	if (rc == DT_OK) {
		p->src = dt_cuda_ptr(&s->in[0]);
		p->src_dtype = g->dtype;
		p->index = dt_cuda_ptr(&s->in[1]);
		p->index_dtype = idx->dtype;
		p->dst = dt_cuda_ptr(&acc);
		p->dst_dtype = DT_FLOAT64;
		p->counts = counts;
		rc = dt_cuda_check(ctx, c->m, c->node,
				   "dt_cu_embedding_backward",
				   dt_cu_embedding_backward(p, ctx->stream));
	}
	if (rc == DT_OK) {
		struct dt_rt_tensor *out = &c->outputs[0];
		if (dt_rt_numel(out) != p->rows * p->dim)
			rc = dt_cpu_fail(
			    ctx->b, c,
			    "the result does not have num_weights rows");
		else
			rc = dt_cuda_copy(ctx, c, out, &acc);
	}
	dt_cuda_scratch_free(ctx, counts);
	dt_cuda_release(ctx, &hacc);
	return rc;
}

int dt_cuda_embedding(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct staging s;
	struct dt_cu_embedding_op p;
	memset(&s, 0, sizeof(s));
	memset(&p, 0, sizeof(p));
	int rc = c->op == DT_OP_EMBEDDING ? embedding(ctx, c, &s, &p)
					  : embedding_backward(ctx, c, &s, &p);
	return stage_finish(ctx, c, &s, rc);
}

/* ---- nll_loss ---- */

enum { NLL_NONE, NLL_MEAN, NLL_SUM };

/* A 1-D (or 0-d) tensor as a kernel operand. */
static struct dt_cu_tensor vector(const struct dt_rt_tensor *t)
{
	struct dt_cu_tensor v;
	memset(&v, 0, sizeof(v));
	v.data = t->buf->data;
	v.offset = t->offset;
	v.stride[0] = t->rank > 0 ? t->stride[0] : 0;
	v.dtype = t->dtype;
	return v;
}

/* What forward and backward share: input [n, classes] (n = 1 for a 1-D
 * input) at parameter px, then target, weight, reduction, ignore_index. */
static int nll_read(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		    int px, struct staging *s, struct dt_cu_nll_op *p)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, px),
				  *t = dt_kernel_input(c, px + 1);
	p->classes = x->shape[x->rank - 1];
	p->n = x->rank == 2 ? x->shape[0] : 1;
	p->reduction = NLL_MEAN;
	p->ignore = -100;
	dt_cpu_int(c, px + 3, &p->reduction);
	dt_cpu_int(c, px + 4, &p->ignore);
	if (p->reduction < NLL_NONE || p->reduction > NLL_SUM)
		return dt_cpu_fail(ctx->b, c, "unknown reduction %lld",
				   (long long)p->reduction);
	if (dt_rt_numel(t) != p->n)
		return dt_cpu_fail(ctx->b, c,
				   "target does not have one class per row");
	p->per_row = p->reduction == NLL_NONE && x->rank == 2;
	int rc = stage_in(ctx, c, s, 0, t);
	if (rc == DT_OK)
		rc = stage_in(ctx, c, s, 1, dt_kernel_input(c, px + 2));
	if (rc == DT_OK)
		rc =
		    dt_cuda_status(ctx, c, &p->err,
				   "a target is out of bounds for %lld classes",
				   (long long)p->classes);
	if (rc != DT_OK)
		return rc;
	p->target = dt_cuda_ptr(&s->in[0]);
	p->target_dtype = t->dtype;
	p->weight = ptr_or_null(&s->in[1]);
	p->weight_dtype = s->in[1].dtype;
	return DT_OK;
}

/* (output, total_weight) as cpu_loss.c's nll_forward. */
static int nll_forward(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		       struct staging *s, struct dt_cu_nll_op *p)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	int rc = nll_read(ctx, c, 0, s, p);
	if (rc == DT_OK)
		rc = stage_in(ctx, c, s, 2, x);
	if (rc != DT_OK)
		return rc;
	p->x = dt_cuda_ptr(&s->in[2]);
	p->x_dtype = x->dtype;
	p->out = vector(&c->outputs[0]);
	p->total = vector(&c->outputs[1]);
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_nll_forward",
			     dt_cu_nll_forward(p, ctx->stream));
}

/* grad_input[i, t] = -w[t] * grad (divided by total_weight for mean),
 * zero elsewhere. */
static int nll_backward(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
			struct staging *s, struct dt_cu_nll_op *p)
{
	int rc = nll_read(ctx, c, 1, s, p);
	if (rc != DT_OK)
		return rc;
	const struct dt_rt_tensor *go = dt_kernel_input(c, 0),
				  *tw = dt_kernel_input(c, 6);
	int64_t ng = dt_rt_numel(go);
	if (ng != (p->per_row ? p->n : 1))
		return dt_cpu_fail(ctx->b, c, "grad_output has %lld elements",
				   (long long)ng);
	if (dt_rt_numel(tw) != 1)
		return dt_cpu_fail(ctx->b, c,
				   "total_weight must have one element");
	rc = stage_out(ctx, c, s, 0);
	if (rc == DT_OK)
		rc = dt_cuda_fill(ctx, c, &s->out[0], 0);
	if (rc != DT_OK)
		return rc;
	p->grad = vector(go);
	p->total_in = vector(tw);
	p->grad_input = dt_cuda_ptr(&s->out[0]);
	p->gi_dtype = s->out[0].dtype;
	return dt_cuda_check(ctx, c->m, c->node, "dt_cu_nll_backward",
			     dt_cu_nll_backward(p, ctx->stream));
}

int dt_cuda_nll_loss(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	struct staging s;
	struct dt_cu_nll_op p;
	memset(&s, 0, sizeof(s));
	memset(&p, 0, sizeof(p));
	int rc = c->op == DT_OP_NLL_LOSS_FORWARD ? nll_forward(ctx, c, &s, &p)
						 : nll_backward(ctx, c, &s, &p);
	return stage_finish(ctx, c, &s, rc);
}
