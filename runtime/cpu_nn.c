// SPDX-License-Identifier: MIT
/* cpu_nn.c: softmax and log-softmax with their backward, and
 * native_layer_norm with its backward, computed row by row in double (a
 * row is the softmax dim, or the normalized trailing dims). */
#include "internal.h"

#include <math.h>
#include <string.h>

/* Walks rows along the dims `mask` marks of several same-shaped tensors:
 * for row i, each tensor's inner view starts at off[k]. */
struct rows {
	struct dt_rt_tensor outer[4], inner[4];
	struct dt_cpu_iter it;
	int64_t count, len;
};

static void rows_init(struct rows *r, const struct dt_rt_tensor *const *t,
		      int n, const bool *mask)
{
	const struct dt_rt_tensor *op[4];
	for (int k = 0; k < n; k++) {
		dt_cpu_split_dims(t[k], mask, &r->outer[k], &r->inner[k]);
		op[k] = &r->outer[k];
	}
	dt_cpu_iter_init(&r->it, r->outer[0].shape, r->outer[0].rank, op, n);
	r->count = dt_rt_numel(&r->outer[0]);
	r->len = dt_rt_numel(&r->inner[0]);
}

/* Point every inner view at the current row. */
static void rows_at(struct rows *r)
{
	for (int k = 0; k < r->it.n; k++)
		r->inner[k].offset = r->it.off[k];
}

static int softmax_dim(struct dt_backend *b, const struct dt_kernel_call *c,
		       int p, int rank, bool *mask)
{
	int64_t dim = 0;
	dt_cpu_int(c, p, &dim);
	int64_t r = rank > 0 ? rank : 1;
	if (dim < -r || dim >= r)
		return dt_cpu_fail(b, c, "dim %lld out of range", (long long)dim);
	memset(mask, 0, DT_MAX_RANK * sizeof(bool));
	if (rank > 0)
		mask[dim < 0 ? dim + r : dim] = true;
	return DT_OK;
}

/* softmax(x) or log_softmax(x) of one row, in place. */
static void softmax_row(double *x, int64_t n, bool log_form)
{
	double m = -INFINITY, s = 0;
	for (int64_t i = 0; i < n; i++)
		m = x[i] > m || isnan(x[i]) ? x[i] : m;
	if (isinf(m))
		m = m > 0 ? m : 0;
	for (int64_t i = 0; i < n; i++)
		s += exp(x[i] - m);
	for (int64_t i = 0; i < n; i++)
		x[i] = log_form ? x[i] - m - log(s) : exp(x[i] - m) / s;
}

int dt_cpu_softmax(struct dt_backend *b, const struct dt_kernel_call *c)
{
	bool backward = c->op == DT_OP_SOFTMAX_BACKWARD ||
			c->op == DT_OP_LOG_SOFTMAX_BACKWARD;
	bool log_form = c->op == DT_OP_LOG_SOFTMAX ||
			c->op == DT_OP_LOG_SOFTMAX_BACKWARD;
	if (!backward && c->op != DT_OP_SOFTMAX && c->op != DT_OP_LOG_SOFTMAX)
		dt_die(__FILE__, __LINE__, "no softmax kernel for %s",
		       dt_op_get(c->op)->target);
	bool mask[DT_MAX_RANK];
	const struct dt_rt_tensor *t[3] = {&c->outputs[0], dt_kernel_input(c, 0),
					   backward ? dt_kernel_input(c, 1) : NULL};
	if (softmax_dim(b, c, backward ? 2 : 1, t[1]->rank, mask) != DT_OK)
		return DT_ERUNTIME;
	struct rows r;
	rows_init(&r, t, backward ? 3 : 2, mask);
	double *g = dt_cpu_scratch(b, c, r.len);
	double *y = g ? dt_cpu_scratch(b, c, r.len) : NULL;
	if (!y) {
		dt_cpu_release(b, g);
		return DT_ERUNTIME;
	}
	for (int64_t i = 0; i < r.count; i++, dt_cpu_iter_next(&r.it)) {
		rows_at(&r);
		dt_cpu_read(&r.inner[1], g);
		if (!backward) {
			softmax_row(g, r.len, log_form);
		} else {
			/* softmax: g' = y (g - sum(g y)); log: g - exp(y) sum(g) */
			dt_cpu_read(&r.inner[2], y);
			double s = 0;
			for (int64_t j = 0; j < r.len; j++)
				s += log_form ? g[j] : g[j] * y[j];
			for (int64_t j = 0; j < r.len; j++)
				g[j] = log_form ? g[j] - exp(y[j]) * s : y[j] * (g[j] - s);
		}
		dt_cpu_write(&r.inner[0], g);
	}
	dt_cpu_release(b, g);
	dt_cpu_release(b, y);
	return DT_OK;
}

/* Rows and row length of a layer norm over the last `nn` dims of x. */
static int norm_geometry(struct dt_backend *b, const struct dt_kernel_call *c,
			 const struct dt_rt_tensor *x, int p, int64_t *rows,
			 int64_t *len)
{
	int64_t ns[DT_MAX_RANK + 1];
	int nn = dt_cpu_ints(c, p, ns, DT_MAX_RANK + 1);
	if (nn < 1 || nn > x->rank)
		return dt_cpu_fail(b, c, "normalized_shape does not fit the input");
	*len = 1;
	for (int i = 0; i < nn; i++) {
		if (ns[i] != x->shape[x->rank - nn + i])
			return dt_cpu_fail(b, c, "normalized_shape does not match the input's trailing dims");
		*len *= ns[i];
	}
	*rows = dt_numel(x->shape, x->rank - nn);
	return DT_OK;
}

/* Parameter p (an optional tensor of `len` elements) or `dflt` everywhere,
 * in scratch (NULL after reporting when none is left). */
static double *optional_param(struct dt_backend *b, const struct dt_kernel_call *c,
			      int p, int64_t len, double dflt)
{
	double *v = dt_cpu_scratch(b, c, len);
	if (!v)
		return NULL;
	const struct dt_rt_tensor *t = dt_kernel_input(c, p);
	if (t)
		dt_cpu_read(t, v);
	else
		for (int64_t i = 0; i < len; i++)
			v[i] = dflt;
	return v;
}

static int layer_norm(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 0);
	int64_t rows, len;
	if (norm_geometry(b, c, x, 1, &rows, &len) != DT_OK)
		return DT_ERUNTIME;
	double eps = 1e-5;
	dt_cpu_number(c, 4, &eps);
	double *v = dt_cpu_scratch(b, c, rows * len);
	double *mean = v ? dt_cpu_scratch(b, c, rows) : NULL;
	double *rstd = mean ? dt_cpu_scratch(b, c, rows) : NULL;
	double *w = rstd ? optional_param(b, c, 2, len, 1) : NULL;
	double *bias = w ? optional_param(b, c, 3, len, 0) : NULL;
	if (!bias) {
		double *all[] = {v, mean, rstd, w};
		for (int i = 0; i < 4; i++)
			dt_cpu_release(b, all[i]);
		return DT_ERUNTIME;
	}
	dt_cpu_read(x, v);
	for (int64_t i = 0; i < rows; i++) {
		double *row = v + i * len, s = 0, ss = 0;
		for (int64_t j = 0; j < len; j++)
			s += row[j];
		mean[i] = s / (double)len;
		for (int64_t j = 0; j < len; j++)
			ss += (row[j] - mean[i]) * (row[j] - mean[i]);
		rstd[i] = 1 / sqrt(ss / (double)len + eps);
		for (int64_t j = 0; j < len; j++)
			row[j] = (row[j] - mean[i]) * rstd[i] * w[j] + bias[j];
	}
	dt_cpu_write(&c->outputs[0], v);
	dt_cpu_write(&c->outputs[1], mean);
	dt_cpu_write(&c->outputs[2], rstd);
	dt_cpu_release(b, v);
	dt_cpu_release(b, mean);
	dt_cpu_release(b, rstd);
	dt_cpu_release(b, w);
	dt_cpu_release(b, bias);
	return DT_OK;
}

/* native_layer_norm_backward(grad_out, input, normalized_shape, mean,
 * rstd, weight, bias, output_mask): with xhat = (x - mean) rstd and
 * gw = grad w, dx = rstd/N (N gw - sum(gw) - xhat sum(gw xhat)),
 * dweight = sum over rows of grad xhat, dbias = sum of grad. Results the
 * mask turns off (None in PyTorch) are zeros. */
static int layer_norm_backward(struct dt_backend *b, const struct dt_kernel_call *c)
{
	const struct dt_rt_tensor *x = dt_kernel_input(c, 1);
	int64_t rows, len;
	if (norm_geometry(b, c, x, 2, &rows, &len) != DT_OK)
		return DT_ERUNTIME;
	if (dt_rt_numel(dt_kernel_input(c, 3)) != rows ||
	    dt_rt_numel(dt_kernel_input(c, 4)) != rows)
		return dt_cpu_fail(b, c, "mean and rstd must have one element per row");
	int64_t flags[3] = {1, 1, 1};
	dt_cpu_ints(c, 7, flags, 3);
	double *g = dt_cpu_scratch(b, c, rows * len);
	double *xv = g ? dt_cpu_scratch(b, c, rows * len) : NULL;
	double *mean = xv ? dt_cpu_scratch(b, c, rows) : NULL;
	double *rstd = mean ? dt_cpu_scratch(b, c, rows) : NULL;
	double *w = rstd ? optional_param(b, c, 5, len, 1) : NULL;
	double *dw = w ? dt_cpu_scratch(b, c, len) : NULL;
	double *db = dw ? dt_cpu_scratch(b, c, len) : NULL;
	if (!db) {
		double *all[] = {g, xv, mean, rstd, w, dw};
		for (int i = 0; i < 6; i++)
			dt_cpu_release(b, all[i]);
		return DT_ERUNTIME;
	}
	dt_cpu_read(dt_kernel_input(c, 0), g);
	dt_cpu_read(x, xv);
	dt_cpu_read(dt_kernel_input(c, 3), mean);
	dt_cpu_read(dt_kernel_input(c, 4), rstd);
	memset(dw, 0, (size_t)len * sizeof(double));
	memset(db, 0, (size_t)len * sizeof(double));
	for (int64_t i = 0; i < rows; i++) {
		double *gi = g + i * len, *xi = xv + i * len;
		double sum_gw = 0, sum_gwx = 0;
		for (int64_t j = 0; j < len; j++) {
			xi[j] = (xi[j] - mean[i]) * rstd[i]; /* xhat */
			dw[j] += gi[j] * xi[j];
			db[j] += gi[j];
			sum_gw += gi[j] * w[j];
			sum_gwx += gi[j] * w[j] * xi[j];
		}
		for (int64_t j = 0; j < len; j++)
			gi[j] = rstd[i] / (double)len *
				((double)len * gi[j] * w[j] - sum_gw - xi[j] * sum_gwx);
	}
	double *res[3] = {g, dw, db};
	for (int k = 0; k < 3; k++) {
		if (flags[k])
			dt_cpu_write(&c->outputs[k], res[k]);
		else
			dt_cpu_fill(&c->outputs[k], 0);
	}
	dt_cpu_release(b, g);
	dt_cpu_release(b, xv);
	dt_cpu_release(b, mean);
	dt_cpu_release(b, rstd);
	dt_cpu_release(b, w);
	dt_cpu_release(b, dw);
	dt_cpu_release(b, db);
	return DT_OK;
}

int dt_cpu_layer_norm(struct dt_backend *b, const struct dt_kernel_call *c)
{
	if (c->op == DT_OP_NATIVE_LAYER_NORM)
		return layer_norm(b, c);
	if (c->op == DT_OP_NATIVE_LAYER_NORM_BACKWARD)
		return layer_norm_backward(b, c);
	dt_die(__FILE__, __LINE__, "no layer norm kernel for %s",
	       dt_op_get(c->op)->target);
}
