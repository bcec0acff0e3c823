// SPDX-License-Identifier: MIT
/* cpu_random.c: the random ops (native_dropout, bernoulli, rand_like,
 * randn_like). Their numbers are a pure function of (call seed, node name,
 * row-major element index): uniform u = top 53 bits of
 * mix64(seed ^ mix64(fnv1a(name) ^ mix64(2*index + stream))) / 2^53, so a
 * run is reproducible; they are not torch's generator. */
#include "internal.h"

#include <math.h>

static double uniform(uint64_t seed, uint64_t name_hash, int64_t index,
		      int stream)
{
	uint64_t h = dt_rt_mix64(seed ^ dt_rt_mix64(
			name_hash ^ dt_rt_mix64((uint64_t)index * 2 + (uint64_t)stream)));
	return (double)(h >> 11) * 0x1.0p-53;
}

int dt_cpu_random(struct dt_backend *b, const struct dt_kernel_call *c)
{
	struct dt_rt_tensor *out = &c->outputs[0];
	int64_t n = dt_rt_numel(out);
	uint64_t name = dt_rt_fnv1a(dt_str_get(c->m, c->node->name));
	double *v = dt_cpu_scratch(b, c, n);
	if (!v)
		return DT_ERUNTIME;
	double *mask = NULL;
	double p = 0.5;
	bool train = true;
	const struct dt_rt_tensor *self = dt_kernel_input(c, 0);
	switch (c->op) {
	case DT_OP_NATIVE_DROPOUT:
		dt_cpu_number(c, 1, &p);
		dt_cpu_bool(c, 2, &train);
		if (train && (p < 0 || p > 1)) {
			dt_cpu_release(b, v);
			return dt_cpu_fail(b, c, "dropout probability has to be between 0 and 1, but got %g",
					   p);
		}
		mask = dt_cpu_scratch(b, c, n);
		if (!mask) {
			dt_cpu_release(b, v);
			return DT_ERUNTIME;
		}
		dt_cpu_read(self, v);
		for (int64_t i = 0; i < n; i++) {
			mask[i] = !train || uniform(c->seed, name, i, 0) < 1 - p;
			if (train)
				v[i] *= mask[i] * (p < 1 ? 1 / (1 - p) : 0);
		}
		dt_cpu_write(&c->outputs[1], mask);
		dt_cpu_release(b, mask);
		break;
	case DT_OP_BERNOULLI:
		dt_cpu_read(self, v);
		for (int64_t i = 0; i < n; i++) {
			if (!(v[i] >= 0 && v[i] <= 1)) {
				dt_cpu_release(b, v);
				return dt_cpu_fail(b, c, "bernoulli expects 0 <= p <= 1");
			}
			v[i] = uniform(c->seed, name, i, 0) < v[i];
		}
		break;
	case DT_OP_BERNOULLI_P:
		dt_cpu_number(c, 1, &p);
		if (!(p >= 0 && p <= 1)) {
			dt_cpu_release(b, v);
			return dt_cpu_fail(b, c, "bernoulli expects 0 <= p <= 1, but got p=%g", p);
		}
		for (int64_t i = 0; i < n; i++)
			v[i] = uniform(c->seed, name, i, 0) < p;
		break;
	case DT_OP_RAND_LIKE:
		for (int64_t i = 0; i < n; i++)
			v[i] = uniform(c->seed, name, i, 0);
		break;
	case DT_OP_RANDN_LIKE: /* Box-Muller */
		for (int64_t i = 0; i < n; i++) {
			double u1 = 1 - uniform(c->seed, name, i, 0);
			double u2 = uniform(c->seed, name, i, 1);
			v[i] = sqrt(-2 * log(u1)) * cos(6.28318530717958647693 * u2);
		}
		break;
	default:
		dt_die(__FILE__, __LINE__, "no random kernel for %s",
		       dt_op_get(c->op)->target);
	}
	dt_cpu_write(out, v);
	dt_cpu_release(b, v);
	return DT_OK;
}
