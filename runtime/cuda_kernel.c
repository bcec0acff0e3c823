// SPDX-License-Identifier: MIT
/* cuda_kernel.c: the NCCL+CUDA backend's kernel dispatch: one entry per
 * computing op of ir/ops.def (the families mirror cpu_kernel.c's; the
 * elementwise, random and creation ops are cuda_elementwise.c's), strided
 * walks, scratch and temporaries, deferred kernel errors, and the
 * CPU-kernel fallback for what no CUDA kernel covers. */
#include "cuda_internal.h"

#include <string.h>

_Static_assert(DT_CU_MAX_RANK == DT_MAX_RANK && DT_CU_MAX_OPS <= DT_CPU_MAX_OPS,
	       "walk rank and operands (dt_cpu_merge_dims)");
_Static_assert(DT_CU_F32 == (int)DT_FLOAT32 && DT_CU_F16 == (int)DT_FLOAT16 &&
		   DT_CU_BF16 == (int)DT_BFLOAT16 &&
		   DT_CU_F64 == (int)DT_FLOAT64 && DT_CU_I64 == (int)DT_INT64 &&
		   DT_CU_I32 == (int)DT_INT32 && DT_CU_I16 == (int)DT_INT16 &&
		   DT_CU_I8 == (int)DT_INT8 && DT_CU_U8 == (int)DT_UINT8 &&
		   DT_CU_BOOL == (int)DT_BOOL,
	       "dtype codes follow enum dt_dtype");

/* ---- errors ---- */

int dt_cuda_fail(struct dt_cuda_ctx *ctx, const struct dt_module *m,
		 const struct dt_node *n, const char *api, const char *error)
{
	if (n)
		return dt_rt_fail(ctx->b, m, n, "%s failed: %s", api, error);
	dt_diag_report(ctx->b->diag, DT_ERROR, m ? m->file : NULL, 0, NULL,
		       "%s failed: %s", api, error);
	return DT_ERUNTIME;
}

int dt_cuda_check(struct dt_cuda_ctx *ctx, const struct dt_module *m,
		  const struct dt_node *n, const char *api, cudaError_t e)
{
	if (e == cudaSuccess)
		return DT_OK;
	return dt_cuda_fail(ctx, m, n, api, cudaGetErrorString(e));
}

/* dt_cuda_check at call c's node (c may be NULL: the graph). */
static int check(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 const char *api, cudaError_t e)
{
	return dt_cuda_check(ctx, c ? c->m : ctx->m, c ? c->node : NULL, api,
			     e);
}

/* The status word is read only when a launch since the last
 * synchronization could have set it. */
int dt_cuda_sync(struct dt_cuda_ctx *ctx)
{
	int32_t code = 0;
	int rc = DT_OK;
	if (ctx->nchecks > 0)
		rc = dt_cuda_check(
		    ctx, ctx->m, NULL, "cudaMemcpyAsync",
		    cudaMemcpyAsync(&code, ctx->status, sizeof(code),
				    cudaMemcpyDeviceToHost, ctx->stream));
	int sync = dt_cuda_check(ctx, ctx->m, NULL, "cudaStreamSynchronize",
				 cudaStreamSynchronize(ctx->stream));
	rc = rc == DT_OK ? sync : rc;
	if (rc == DT_OK && code != 0) {
		rc = dt_cuda_check(
		    ctx, ctx->m, NULL, "cudaMemsetAsync",
		    cudaMemsetAsync(ctx->status, 0, sizeof(code), ctx->stream));
		if (code > 0 && code <= ctx->nchecks) {
			const struct dt_cuda_check *k = &ctx->checks[code - 1];
			rc = dt_rt_fail(ctx->b, k->m, k->node, "%s", k->what);
		}
	}
	ctx->nchecks = 0;
	return rc;
}

int dt_cuda_status(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		   struct dt_cu_status *out, const char *fmt, ...)
{
	if (ctx->nchecks == DT_CUDA_MAX_CHECKS && dt_cuda_sync(ctx) != DT_OK)
		return DT_ERUNTIME;
	struct dt_cuda_check *k = &ctx->checks[ctx->nchecks++];
	k->m = c->m;
	k->node = c->node;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->what, sizeof(k->what), fmt, ap);
	va_end(ap);
	out->status = ctx->status;
	out->code = ctx->nchecks;
	return DT_OK;
}

/* ---- walks, memory, copies ---- */

void dt_cuda_walk(struct dt_cu_walk *w, const int64_t *shape, int rank,
		  const struct dt_rt_tensor *const *t, int n)
{
	DT_REQUIRE(n <= DT_CU_MAX_OPS && rank <= DT_MAX_RANK);
	int64_t sz[DT_MAX_RANK], st[DT_CU_MAX_OPS][DT_MAX_RANK];
	memset(w, 0, sizeof(*w));
	w->n = n;
	w->numel = dt_numel(shape, rank);
	int nd = dt_cpu_merge_dims(shape, rank, t, n, sz, st);
	w->rank = nd;
	memcpy(w->shape, sz, (size_t)nd * sizeof(int64_t));
	for (int k = 0; k < n; k++) {
		memcpy(w->t[k].stride, st[k], (size_t)nd * sizeof(int64_t));
		if (!t[k])
			continue;
		w->t[k].data = t[k]->buf->data;
		w->t[k].offset = t[k]->offset;
		w->t[k].dtype = t[k]->dtype;
	}
}

void *dt_cuda_ptr(const struct dt_rt_tensor *t)
{
	return dt_rt_at(t, t->offset);
}

void *dt_cuda_scratch(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		      size_t bytes)
{
	void *p = NULL;
	if (check(ctx, c, "cudaMallocAsync",
		  cudaMallocAsync(&p, bytes ? bytes : 1, ctx->stream)) != DT_OK)
		return NULL;
	return p;
}

/* A failure to free is left to the next synchronization to report. */
void dt_cuda_scratch_free(struct dt_cuda_ctx *ctx, void *p)
{
	if (p)
		(void)cudaFreeAsync(p, ctx->stream);
}

int dt_cuda_temp(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 const int64_t *shape, int rank, enum dt_dtype dtype,
		 struct dt_rt_tensor *out, struct dt_buffer *holder)
{
	int64_t dims[DT_MAX_RANK]; /* shape may point into *out */
	memcpy(dims, shape, (size_t)rank * sizeof(int64_t));
	memset(out, 0, sizeof(*out));
	out->dtype = (uint8_t)dtype;
	out->rank = (uint8_t)rank;
	memcpy(out->shape, dims, (size_t)rank * sizeof(int64_t));
	dt_contiguous_strides(out->shape, rank, out->stride);
	holder->bytes = dt_rt_storage_bytes(out);
	holder->refs = 1;
	holder->data = dt_cuda_scratch(ctx, c, holder->bytes);
	out->buf = holder;
	return holder->data ? DT_OK : DT_ERUNTIME;
}

void dt_cuda_release(struct dt_cuda_ctx *ctx, struct dt_buffer *holder)
{
	dt_cuda_scratch_free(ctx, holder->data);
	holder->data = NULL;
}

static bool same_shape(const struct dt_rt_tensor *a,
		       const struct dt_rt_tensor *b)
{
	return a->rank == b->rank &&
	       memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) ==
		   0;
}

int dt_cuda_copy(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 struct dt_rt_tensor *dst, const struct dt_rt_tensor *src)
{
	if (!same_shape(dst, src)) {
		if (c)
			return dt_rt_fail(
			    ctx->b, c->m, c->node,
			    "copy between tensors of different shapes");
		dt_diag_report(ctx->b->diag, DT_ERROR, NULL, 0, NULL,
			       "copy between tensors of different shapes");
		return DT_ERUNTIME;
	}
	int64_t n = dt_rt_numel(dst);
	if (n == 0)
		return DT_OK;
	if (dst->dtype == src->dtype && dt_rt_is_contiguous(dst) &&
	    dt_rt_is_contiguous(src))
		return check(ctx, c, "cudaMemcpyAsync",
			     cudaMemcpyAsync(
				 dt_cuda_ptr(dst), dt_cuda_ptr(src),
				 (size_t)n * (size_t)dt_dtype_size(dst->dtype),
				 cudaMemcpyDeviceToDevice, ctx->stream));
	struct dt_cu_walk w;
	const struct dt_rt_tensor *ts[2] = {dst, src};
	dt_cuda_walk(&w, dst->shape, dst->rank, ts, 2);
	return check(ctx, c, "dt_cu_copy", dt_cu_copy(&w, ctx->stream));
}

int dt_cuda_fill(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		 struct dt_rt_tensor *t, double v)
{
	uint64_t bits = 0;
	dt_store_element((enum dt_dtype)t->dtype, &bits, v);
	int64_t n = dt_rt_numel(t);
	if (n == 0)
		return DT_OK;
	if (bits == 0 && dt_rt_is_contiguous(t))
		return check(
		    ctx, c, "cudaMemsetAsync",
		    cudaMemsetAsync(dt_cuda_ptr(t), 0,
				    (size_t)n * (size_t)dt_dtype_size(t->dtype),
				    ctx->stream));
	struct dt_cu_walk w;
	const struct dt_rt_tensor *tt = t;
	dt_cuda_walk(&w, t->shape, t->rank, &tt, 1);
	return check(ctx, c, "dt_cu_fill", dt_cu_fill(&w, bits, ctx->stream));
}

int dt_cuda_contiguous(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		       const struct dt_rt_tensor *t, struct dt_rt_tensor *out,
		       struct dt_buffer *holder)
{
	holder->data = NULL;
	if (!t || dt_rt_is_contiguous(t)) {
		if (t)
			*out = *t;
		return DT_OK;
	}
	if (dt_cuda_temp(ctx, c, t->shape, t->rank, (enum dt_dtype)t->dtype,
			 out, holder) != DT_OK)
		return DT_ERUNTIME;
	return dt_cuda_copy(ctx, c, out, t);
}

/* ---- the CPU fallback ---- */

/* The distinct nodes a call reads (ids NULL: only count the uses). */
struct inputs {
	uint32_t *ids;
	uint32_t n;
};

static void add_input(void *ud, uint32_t id)
{
	struct inputs *in = ud;
	for (uint32_t i = 0; in->ids && i < in->n; i++)
		if (in->ids[i] == id)
			return;
	if (in->ids)
		in->ids[in->n] = id;
	in->n++;
}

/* Bytes between host and device on the compute stream, synchronously. */
static int move(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c,
		void *dst, const void *src, size_t bytes,
		enum cudaMemcpyKind kind)
{
	if (!bytes)
		return DT_OK;
	if (check(ctx, c, "cudaMemcpyAsync",
		  cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream)) != DT_OK)
		return DT_ERUNTIME;
	return dt_cuda_sync(ctx);
}

int dt_cuda_fallback(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	const struct dt_module *m = c->m;
	struct inputs in = {NULL, 0};
	dt_node_for_each_input(m, c->node, add_input, &in);
	in.ids = dt_calloc(in.n ? in.n : 1, sizeof(uint32_t));
	in.n = 0;
	dt_node_for_each_input(m, c->node, add_input, &in);
	struct dt_rt_tensor **hv = dt_calloc(m->nodes.len, sizeof(*hv));
	struct dt_rt_tensor *hout = dt_calloc(c->noutputs, sizeof(*hout));
	struct dt_buffer *hbuf = dt_calloc(c->noutputs, sizeof(*hbuf));
	int rc = DT_OK;
	for (uint32_t i = 0; i < in.n && rc == DT_OK; i++) {
		uint32_t id = in.ids[i], nt = dt_node_get(m, id)->ntensors;
		hv[id] = dt_calloc(nt ? nt : 1, sizeof(**hv));
		for (uint32_t r = 0; r < nt && rc == DT_OK; r++)
			if (c->values[id] && c->values[id][r].buf &&
			    dt_rt_to_host(ctx->b, &c->values[id][r],
					  &hv[id][r]) != DT_OK)
				rc = dt_rt_fail(ctx->b, m, c->node,
						"cannot copy input %u to the "
						"host for the CPU kernel",
						id);
	}
	for (uint32_t k = 0; k < c->noutputs; k++) {
		hout[k] = c->outputs[k];
		hbuf[k].bytes = c->outputs[k].buf->bytes;
		hbuf[k].data = dt_calloc(hbuf[k].bytes ? hbuf[k].bytes : 1, 1);
		hbuf[k].refs = 1;
		hout[k].buf = &hbuf[k];
	}
	if (rc == DT_OK) {
		struct dt_kernel_call hc = *c;
		hc.values = (struct dt_rt_tensor *const *)hv;
		hc.outputs = hout;
		struct dt_backend host;
		dt_backend_host_view(ctx->b, &host);
		rc = dt_cpu_kernel(&host, &hc);
		ctx->b->failed_node = host.failed_node;
	}
	/* only each output's span: an output may be a run of a buffer that
	 * holds other values (the interpreter's cat placement, place.c) */
	for (uint32_t k = 0; k < c->noutputs && rc == DT_OK; k++) {
		size_t from = (size_t)c->outputs[k].offset *
			      dt_dtype_size((enum dt_dtype)c->outputs[k].dtype);
		size_t end = dt_rt_storage_bytes(&c->outputs[k]);
		if (end > from)
			rc = move(ctx, c, (char *)c->outputs[k].buf->data + from,
				  (char *)hbuf[k].data + from, end - from,
				  cudaMemcpyHostToDevice);
	}
	for (uint32_t i = 0; i < in.n; i++) {
		uint32_t id = in.ids[i], nt = dt_node_get(m, id)->ntensors;
		for (uint32_t r = 0; hv[id] && r < nt; r++)
			dt_rt_host_free(&hv[id][r]);
		dt_free(hv[id]);
	}
	for (uint32_t k = 0; k < c->noutputs; k++)
		dt_free(hbuf[k].data);
	dt_free(hbuf);
	dt_free(hout);
	dt_free(hv);
	dt_free(in.ids);
	if (rc == DT_OK)
		ctx->fallbacks[c->op]++;
	return rc;
}

/* ---- dispatch ---- */

int dt_cuda_kernel(struct dt_cuda_ctx *ctx, const struct dt_kernel_call *c)
{
	if (dt_cuda_is_elementwise(c->op))
		return dt_cuda_elementwise(ctx, c);
	switch (c->op) {
	case DT_OP_REDISTRIBUTE:
	case DT_OP_UNSAFE_VIEW:
	case DT_OP_RESHAPE:
	case DT_OP_CLONE:
	case DT_OP_CONTIGUOUS:
	case DT_OP_LIFT_FRESH_COPY:
	case DT_OP_CONVERT_ELEMENT_TYPE:
	case DT_OP_TO_COPY:
		return dt_cuda_copy_op(ctx, c);
	case DT_OP_CAT:
	case DT_OP_STACK:
		return dt_cuda_join(ctx, c);
	case DT_OP_CONSTANT_PAD_ND:
	case DT_OP_SLICE_BACKWARD:
	case DT_OP_SELECT_BACKWARD:
	case DT_OP_LOCAL_SHARD:
	case DT_OP_PACK_BLOCKS:
	case DT_OP_UNPACK_BLOCKS:
	case DT_OP_PACK_PIECES:
	case DT_OP_UNPACK_PIECES:
		return dt_cuda_pad(ctx, c);
	case DT_OP_NATIVE_DROPOUT:
	case DT_OP_BERNOULLI:
	case DT_OP_BERNOULLI_P:
	case DT_OP_RAND_LIKE:
	case DT_OP_RANDN_LIKE:
		return dt_cuda_random(ctx, c);
	case DT_OP_SUM:
	case DT_OP_SUM_DIM:
	case DT_OP_MEAN:
	case DT_OP_MEAN_DIM:
	case DT_OP_AMAX:
	case DT_OP_AMIN:
	case DT_OP_MAX:
	case DT_OP_MIN:
	case DT_OP_MAX_DIM:
	case DT_OP_MIN_DIM:
	case DT_OP_ARGMAX:
	case DT_OP_ARGMIN:
	case DT_OP_LOGSUMEXP:
	case DT_OP_VAR_CORRECTION:
	case DT_OP_VAR_MEAN_CORRECTION:
	case DT_OP_VAR_MEAN_DIM:
		return dt_cuda_reduce(ctx, c);
	case DT_OP_MM:
	case DT_OP_BMM:
	case DT_OP_ADDMM:
	case DT_OP_BADDBMM:
		return dt_cuda_matmul(ctx, c);
	case DT_OP_SOFTMAX:
	case DT_OP_LOG_SOFTMAX:
	case DT_OP_SOFTMAX_BACKWARD:
	case DT_OP_LOG_SOFTMAX_BACKWARD:
		return dt_cuda_softmax(ctx, c);
	case DT_OP_NATIVE_LAYER_NORM:
	case DT_OP_NATIVE_LAYER_NORM_BACKWARD:
		return dt_cuda_layer_norm(ctx, c);
	case DT_OP_EMBEDDING:
	case DT_OP_EMBEDDING_DENSE_BACKWARD:
		return dt_cuda_embedding(ctx, c);
	case DT_OP_NLL_LOSS_FORWARD:
	case DT_OP_NLL_LOSS_BACKWARD:
		return dt_cuda_nll_loss(ctx, c);
	case DT_OP_MSE_LOSS:
		return dt_cuda_mse_loss(ctx, c);
	case DT_OP_TRIL:
	case DT_OP_TRIU:
	case DT_OP_INDEX_SELECT:
	case DT_OP_INDEX_ADD:
	case DT_OP_REPEAT_INTERLEAVE:
	case DT_OP_GATHER:
	case DT_OP_SCATTER_ADD:
	case DT_OP_SCATTER_SRC:
	case DT_OP_SCATTER_VALUE:
	case DT_OP_REPEAT:
	case DT_OP_FLIP:
	case DT_OP_CUMSUM:
		return dt_cuda_index(ctx, c);
	case DT_OP_EMPTY_LIKE:
	case DT_OP_ZEROS_LIKE:
	case DT_OP_ONES_LIKE:
	case DT_OP_FULL_LIKE:
	case DT_OP_FULL:
	case DT_OP_ZEROS:
	case DT_OP_ONES:
	case DT_OP_EMPTY:
	case DT_OP_EMPTY_STRIDED:
	case DT_OP_NEW_EMPTY:
	case DT_OP_NEW_ZEROS:
	case DT_OP_NEW_ONES:
	case DT_OP_NEW_FULL:
	case DT_OP_SCALAR_TENSOR:
	case DT_OP_ARANGE:
	case DT_OP_ARANGE_START:
	case DT_OP_ARANGE_START_STEP:
		return dt_cuda_create(ctx, c);
	default:
		return DT_CUDA_FALLBACK;
	}
}

