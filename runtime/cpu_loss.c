// SPDX-License-Identifier: MIT
/* cpu_loss.c: embedding and embedding_dense_backward (row gather and
 * scatter-add), nll_loss_forward and nll_loss_backward (reduction none,
 * mean, sum; class weights; ignore_index) and mse_loss's reductions, as
 * ATen's CPU kernels. */
#include "internal.h"

#include <string.h>

/* Indices of an index tensor; DT_ERUNTIME (after reporting) when one is
 * out of [0, n) and is not `allowed` (INT64_MIN: none is). */
static int read_indices(struct dt_backend *b, const struct dt_kernel_call *c,
			const struct dt_rt_tensor *t, int64_t n, int64_t allowed,
			int64_t *out)
{
	int64_t count = dt_rt_numel(t);
	double *v = dt_cpu_scratch(b, c, count);
	if (!v)
		return DT_ERUNTIME;
	dt_cpu_read(t, v);
	for (int64_t i = 0; i < count; i++) {
		out[i] = (int64_t)v[i];
		if ((out[i] < 0 || out[i] >= n) && out[i] != allowed) {
			dt_cpu_release(b, v);
			return dt_cpu_fail(b, c, "index %lld is out of bounds for size %lld",
					   (long long)out[i], (long long)n);
		}
	}
	dt_cpu_release(b, v);
	return DT_OK;
}

static int embedding(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *w = dt_kernel_input(c, 0), *idx = dt_kernel_input(c, 1);
	int64_t rows = w->shape[0], dim = w->shape[1], n = dt_rt_numel(idx);
	int64_t *ix = dt_cpu_alloc(b, c, (size_t)n * sizeof(int64_t));
	if (!ix || read_indices(b, c, idx, rows, INT64_MIN, ix) != DT_OK) {
		dt_cpu_release(b, ix);
		return DT_ERUNTIME;
	}
	double *wv = dt_cpu_scratch(b, c, rows * dim);
	double *out = wv ? dt_cpu_scratch(b, c, n * dim) : NULL;
	if (!out) {
		dt_cpu_release(b, ix);
		dt_cpu_release(b, wv);
		return DT_ERUNTIME;
	}
	dt_cpu_read(w, wv);
	for (int64_t i = 0; i < n; i++)
		memcpy(out + i * dim, wv + ix[i] * dim, (size_t)dim * sizeof(double));
	dt_cpu_write(&c->outputs[0], out);
	dt_cpu_release(b, ix);
	dt_cpu_release(b, wv);
	dt_cpu_release(b, out);
	return DT_OK;
}

/* grad_weight[idx[i]] += grad[i] (skipping padding_idx; divided by the
 * index's count with scale_grad_by_freq). */
static int embedding_backward(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *g = dt_kernel_input(c, 0), *idx = dt_kernel_input(c, 1);
	int64_t rows = 0, pad = -1;
	bool by_freq = false;
	dt_cpu_int(c, 2, &rows);
	dt_cpu_int(c, 3, &pad);
	dt_cpu_bool(c, 4, &by_freq);
	int64_t dim = g->shape[g->rank - 1], n = dt_rt_numel(idx);
	if (dt_rt_numel(g) != n * dim)
		return dt_cpu_fail(b, c, "grad_output does not have one row per index");
	int64_t *ix = dt_cpu_alloc(b, c, (size_t)n * sizeof(int64_t));
	if (!ix || read_indices(b, c, idx, rows, pad >= 0 ? pad : INT64_MIN, ix) != DT_OK) {
		dt_cpu_release(b, ix);
		return DT_ERUNTIME;
	}
	double *gv = dt_cpu_scratch(b, c, n * dim);
	double *out = gv ? dt_cpu_scratch(b, c, rows * dim) : NULL;
	double *count = out ? dt_cpu_scratch(b, c, rows) : NULL;
	if (!count) {
		dt_cpu_release(b, ix);
		dt_cpu_release(b, gv);
		dt_cpu_release(b, out);
		return DT_ERUNTIME;
	}
	memset(out, 0, (size_t)(rows * dim) * sizeof(double));
	memset(count, 0, (size_t)rows * sizeof(double));
	dt_cpu_read(g, gv);
	for (int64_t i = 0; i < n; i++)
		if (ix[i] != pad)
			count[ix[i]] += 1;
	for (int64_t i = 0; i < n; i++) {
		if (ix[i] == pad)
			continue;
		double scale = by_freq ? 1 / count[ix[i]] : 1;
		for (int64_t j = 0; j < dim; j++)
			out[ix[i] * dim + j] += gv[i * dim + j] * scale;
	}
	dt_cpu_write(&c->outputs[0], out);
	dt_cpu_release(b, ix);
	dt_cpu_release(b, gv);
	dt_cpu_release(b, out);
	dt_cpu_release(b, count);
	return DT_OK;
}

int dt_cpu_embedding(struct dt_backend *b, const struct dt_kernel_call *c)
{
	if (c->op == DT_OP_EMBEDDING)
		return embedding(b, c);
	if (c->op == DT_OP_EMBEDDING_DENSE_BACKWARD)
		return embedding_backward(b, c);
	dt_die(__FILE__, __LINE__, "no embedding kernel for %s",
	       dt_op_get(c->op)->target);
}

enum { NLL_NONE, NLL_MEAN, NLL_SUM };

/* What forward and backward share: input x [n, classes] (n = 1 for a 1-D
 * input), targets, class weights. */
struct nll {
	int64_t n, classes, reduction, ignore;
	int64_t *target;
	double *weight;
};

static int nll_read(struct dt_backend *b, const struct dt_kernel_call *c,
		    int px, struct nll *s)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, px);
	const struct dt_rt_tensor *t = dt_kernel_input(c, px + 1);
	s->classes = x->shape[x->rank - 1];
	s->n = x->rank == 2 ? x->shape[0] : 1;
	s->reduction = NLL_MEAN;
	s->ignore = -100;
	dt_cpu_int(c, px + 3, &s->reduction);
	dt_cpu_int(c, px + 4, &s->ignore);
	if (s->reduction < NLL_NONE || s->reduction > NLL_SUM)
		return dt_cpu_fail(b, c, "unknown reduction %lld", (long long)s->reduction);
	if (dt_rt_numel(t) != s->n)
		return dt_cpu_fail(b, c, "target does not have one class per row");
	s->target = dt_cpu_alloc(b, c, (size_t)s->n * sizeof(int64_t));
	s->weight = s->target ? dt_cpu_scratch(b, c, s->classes) : NULL;
	if (!s->weight || read_indices(b, c, t, s->classes, s->ignore, s->target) != DT_OK) {
		dt_cpu_release(b, s->target);
		dt_cpu_release(b, s->weight);
		return DT_ERUNTIME;
	}
	const struct dt_rt_tensor *w = dt_kernel_input(c, px + 2);
	if (w)
		dt_cpu_read(w, s->weight);
	else
		for (int64_t k = 0; k < s->classes; k++)
			s->weight[k] = 1;
	return DT_OK;
}

/* (output, total_weight): per row -w[t] x[t] (0 when ignored); none on a
 * 2-D input keeps the rows and gives total_weight 0, otherwise the sum
 * (divided by the total weight for mean) and total_weight = sum w[t]. */
static int nll_forward(struct dt_backend *b, const struct dt_kernel_call *c)
{
	struct nll s;
	if (nll_read(b, c, 0, &s) != DT_OK)
		return DT_ERUNTIME;
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	double *xv = dt_cpu_scratch(b, c, s.n * s.classes);
	double *loss = xv ? dt_cpu_scratch(b, c, s.n) : NULL;
	if (!loss) {
		dt_cpu_release(b, xv);
		dt_cpu_release(b, s.target);
		dt_cpu_release(b, s.weight);
		return DT_ERUNTIME;
	}
	dt_cpu_read(x, xv);
	double total = 0, sum = 0;
	for (int64_t i = 0; i < s.n; i++) {
		int64_t t = s.target[i];
		double w = t == s.ignore ? 0 : s.weight[t];
		loss[i] = t == s.ignore ? 0 : -w * xv[i * s.classes + t];
		total += w;
		sum += loss[i];
	}
	bool per_row = s.reduction == NLL_NONE && x->rank == 2;
	if (per_row) {
		dt_cpu_write(&c->outputs[0], loss);
		total = 0;
	} else {
		double v = s.reduction == NLL_MEAN ? sum / total : sum;
		dt_cpu_fill(&c->outputs[0], v);
	}
	dt_cpu_fill(&c->outputs[1], total);
	dt_cpu_release(b, xv);
	dt_cpu_release(b, loss);
	dt_cpu_release(b, s.target);
	dt_cpu_release(b, s.weight);
	return DT_OK;
}

/* grad_input[i, t] = -w[t] * grad (grad[i] for none on 2-D, divided by
 * total_weight for mean); zero elsewhere and on ignored rows. */
static int nll_backward(struct dt_backend *b, const struct dt_kernel_call *c)
{
	struct nll s;
	if (nll_read(b, c, 1, &s) != DT_OK)
		return DT_ERUNTIME;
	const struct dt_rt_tensor *go = dt_kernel_input(c, 0);
	bool per_row = s.reduction == NLL_NONE && dt_kernel_input(c, 1)->rank == 2;
	int64_t ng = dt_rt_numel(go);
	if (ng != (per_row ? s.n : 1)) {
		dt_cpu_release(b, s.target);
		dt_cpu_release(b, s.weight);
		return dt_cpu_fail(b, c, "grad_output has %lld elements", (long long)ng);
	}
	double *gv = dt_cpu_scratch(b, c, ng), tw = 0;
	double *out = gv ? dt_cpu_scratch(b, c, s.n * s.classes) : NULL;
	if (!out) {
		dt_cpu_release(b, gv);
		dt_cpu_release(b, s.target);
		dt_cpu_release(b, s.weight);
		return DT_ERUNTIME;
	}
	dt_cpu_read(go, gv);
	dt_cpu_read(dt_kernel_input(c, 6), &tw);
	memset(out, 0, (size_t)(s.n * s.classes) * sizeof(double));
	for (int64_t i = 0; i < s.n; i++) {
		int64_t t = s.target[i];
		if (t == s.ignore)
			continue;
		double g = per_row ? gv[i] : gv[0];
		if (s.reduction == NLL_MEAN)
			g /= tw;
		out[i * s.classes + t] = -s.weight[t] * g;
	}
	dt_cpu_write(&c->outputs[0], out);
	dt_cpu_release(b, gv);
	dt_cpu_release(b, out);
	dt_cpu_release(b, s.target);
	dt_cpu_release(b, s.weight);
	return DT_OK;
}

int dt_cpu_nll_loss(struct dt_backend *b, const struct dt_kernel_call *c)
{
	if (c->op == DT_OP_NLL_LOSS_FORWARD)
		return nll_forward(b, c);
	if (c->op == DT_OP_NLL_LOSS_BACKWARD)
		return nll_backward(b, c);
	dt_die(__FILE__, __LINE__, "no nll_loss kernel for %s",
	       dt_op_get(c->op)->target);
}

/* mse_loss: reduction none is elementwise; mean and sum reduce the
 * squared differences (computed in the output's dtype) in double. */
int dt_cpu_mse_loss(struct dt_backend *b, const struct dt_kernel_call *c)
{
	int64_t reduction = 1;
	dt_cpu_int(c, 2, &reduction);
	if (reduction == 0)
		return dt_cpu_elementwise(b, c);
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0), *y = dt_kernel_input(c, 1);
	int64_t shape[DT_MAX_RANK];
	int rank = dt_rt_broadcast(x, y, shape);
	int64_t n = dt_numel(shape, rank);
	double *xv = dt_cpu_scratch(b, c, n), sum = 0;
	double *yv = xv ? dt_cpu_scratch(b, c, n) : NULL;
	if (!yv) {
		dt_cpu_release(b, xv);
		return DT_ERUNTIME;
	}
	dt_cpu_read_as(x, shape, rank, xv);
	dt_cpu_read_as(y, shape, rank, yv);
	enum dt_dtype t = (enum dt_dtype)c->outputs[0].dtype;
	for (int64_t i = 0; i < n; i++) {
		double d = dt_round_to(t, dt_round_to(t, xv[i]) - dt_round_to(t, yv[i]));
		sum += dt_round_to(t, d * d);
	}
	dt_cpu_fill(&c->outputs[0], reduction == 1 ? sum / (double)n : sum);
	dt_cpu_release(b, xv);
	dt_cpu_release(b, yv);
	return DT_OK;
}
