// SPDX-License-Identifier: MIT
/* cpu_matmul.c: mm, bmm, addmm and baddbmm. Operands are packed into
 * row-major double panels (any input strides), multiplied in double with
 * an i-k-j loop, and out = beta * self + alpha * (a @ b) is stored with
 * the output's strides; beta == 0 ignores self (NaN included), as
 * PyTorch does. */
#include "internal.h"

#include <string.h>

#define BLOCK_N 256 /* columns of b and c per block */
#define BLOCK_K 128 /* rows of b per block: 256 KiB of b stay in cache */

/* c[0..4, j] += a[0..4, p] * b[p, j] for j < nj: four rows of c share
 * every load of b. A full block has a constant trip count, which lets
 * the compiler vectorize it at -O2. */
static void axpy4(double *restrict c0, double *restrict c1, double *restrict c2,
		  double *restrict c3, const double *restrict bp, const double *a,
		  int64_t nj)
{
	if (nj == BLOCK_N) {
		for (int64_t j = 0; j < BLOCK_N; j++) {
			c0[j] += a[0] * bp[j];
			c1[j] += a[1] * bp[j];
			c2[j] += a[2] * bp[j];
			c3[j] += a[3] * bp[j];
		}
		return;
	}
	for (int64_t j = 0; j < nj; j++) {
		c0[j] += a[0] * bp[j];
		c1[j] += a[1] * bp[j];
		c2[j] += a[2] * bp[j];
		c3[j] += a[3] * bp[j];
	}
}

static void gemm_rows4(const double *a, const double *b, double *c, int64_t k,
		       int64_t n, int64_t p0, int64_t np, int64_t nj)
{
	for (int64_t p = p0; p < p0 + np; p++) {
		double ap[4] = {a[p], a[k + p], a[2 * k + p], a[3 * k + p]};
		axpy4(c, c + n, c + 2 * n, c + 3 * n, b + p * n, ap, nj);
	}
}

static void gemm_row(const double *restrict a, const double *restrict b,
		     double *restrict c, int64_t n, int64_t p0, int64_t np,
		     int64_t nj)
{
	for (int64_t p = p0; p < p0 + np; p++) {
		double ap = a[p];
		const double *restrict bp = b + p * n;
		for (int64_t j = 0; j < nj; j++)
			c[j] += ap * bp[j];
	}
}

/* c[m,n] = a[m,k] @ b[k,n], all row-major, blocked over n and k. */
static void gemm(const double *a, const double *b, double *c, int64_t m,
		 int64_t k, int64_t n)
{
	memset(c, 0, (size_t)(m * n) * sizeof(double));
	for (int64_t j0 = 0; j0 < n; j0 += BLOCK_N) {
		int64_t nj = n - j0 < BLOCK_N ? n - j0 : BLOCK_N;
		for (int64_t p0 = 0; p0 < k; p0 += BLOCK_K) {
			int64_t np = k - p0 < BLOCK_K ? k - p0 : BLOCK_K;
			int64_t i = 0;
			for (; i + 4 <= m; i += 4)
				gemm_rows4(a + i * k, b + j0, c + i * n + j0, k, n, p0, np, nj);
			for (; i < m; i++)
				gemm_row(a + i * k, b + j0, c + i * n + j0, n, p0, np, nj);
		}
	}
}

int dt_cpu_matmul(struct dt_backend *b, const struct dt_kernel_call *c)
{
	bool add = c->op == DT_OP_ADDMM || c->op == DT_OP_BADDBMM;
	if (!add && c->op != DT_OP_MM && c->op != DT_OP_BMM)
		dt_die(__FILE__, __LINE__, "no matmul kernel for %s",
		       dt_op_get(c->op)->target);
	const struct dt_rt_tensor *x = dt_kernel_input(c, add ? 1 : 0);
	const struct dt_rt_tensor *y = dt_kernel_input(c, add ? 2 : 1);
	struct dt_rt_tensor *out = &c->outputs[0];
	bool batched = x->rank == 3;
	int64_t nb = batched ? x->shape[0] : 1;
	int64_t m = x->shape[x->rank - 2], k = x->shape[x->rank - 1];
	int64_t n = y->shape[y->rank - 1];
	if (y->shape[y->rank - 2] != k || (batched && y->shape[0] != nb))
		return dt_cpu_fail(b, c, "operand shapes do not match");
	double beta = 1, alpha = 1;
	if (add) {
		dt_cpu_number(c, 3, &beta);
		dt_cpu_number(c, 4, &alpha);
	}
	int64_t total = nb * m * n;
	double *a = dt_cpu_scratch(b, c, nb * m * k);
	double *bm = a ? dt_cpu_scratch(b, c, nb * k * n) : NULL;
	double *r = bm ? dt_cpu_scratch(b, c, total) : NULL;
	double *s = r && add && beta != 0 ? dt_cpu_scratch(b, c, total) : NULL;
	if (!r || (add && beta != 0 && !s)) {
		dt_cpu_release(b, a);
		dt_cpu_release(b, bm);
		dt_cpu_release(b, r);
		return DT_ERUNTIME;
	}
	dt_cpu_read(x, a);
	dt_cpu_read(y, bm);
	for (int64_t i = 0; i < nb; i++)
		gemm(a + i * m * k, bm + i * k * n, r + i * m * n, m, k, n);
	if (alpha != 1)
		for (int64_t i = 0; i < total; i++)
			r[i] *= alpha;
	if (s) {
		dt_cpu_read_as(dt_kernel_input(c, 0), out->shape, out->rank, s);
		for (int64_t i = 0; i < total; i++)
			r[i] += beta * s[i];
		dt_cpu_release(b, s);
	}
	dt_cpu_write(out, r);
	dt_cpu_release(b, a);
	dt_cpu_release(b, bm);
	dt_cpu_release(b, r);
	return DT_OK;
}
