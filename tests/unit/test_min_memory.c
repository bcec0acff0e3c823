// SPDX-License-Identifier: MIT
/* test_min_memory.c: unit tests of the min-memory redistribution plan
 * (--redistribute=min-memory, redistribute/min_memory.c): the worked case of
 * semantics §3.1 (peak 6 elements per device against DTensor's 72, two
 * all_to_alls and two all_permutes) and a sweep of 600 random S/R
 * redistributions over 1-D to 4-D meshes, even and uneven, where every plan
 * must chain from src to dst, every all_permute must send each rank's
 * block (checked element by element with dt_shard_indices, not the
 * planner's own block code) to a rank that holds the same block after it,
 * and the peak must stay within 2x max(src, dst) shard (or, for the few
 * uneven cases no all_permute serves, equal DTensor's). The sweep prints
 * the distributions of peak / max(src, dst) and of modelled time against
 * DTensor's plan. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "redistribute.h"

static void *cmocka_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		if (ptr)
			test_free(ptr);
		return NULL;
	}
	return test_realloc(ptr, size);
}

static struct dt_mesh make_mesh(struct dt_module *m, const int64_t *shape,
				int ndim)
{
	struct dt_mesh mesh = {.name = dt_str_intern(m, "world"),
			       .ndim = (uint8_t)ndim, .size = 1};
	for (int d = 0; d < ndim; d++) {
		char name[2] = {(char)('A' + d), 0};
		mesh.shape[d] = shape[d];
		mesh.size *= shape[d];
		mesh.dims[d] = dt_str_intern(m, name);
	}
	return mesh;
}

/* Same placements and, for S, same order position. */
static bool same_state(const struct dt_placements *a,
		       const struct dt_placements *b)
{
	if (a->ndim != b->ndim)
		return false;
	for (int m = 0; m < a->ndim; m++) {
		if (a->p[m].kind != b->p[m].kind)
			return false;
		if (a->p[m].kind == DT_PL_SHARD &&
		    (a->p[m].dim != b->p[m].dim ||
		     a->order_pos[m] != b->order_pos[m]))
			return false;
	}
	return true;
}

/* The global indices of every tensor dim that position p holds under pl,
 * concatenated, into out (capacity enough); returns the count. */
static int64_t held(const struct dt_redist_plan *plan,
		    const struct dt_placements *pl, int64_t p, int64_t *out)
{
	int64_t coord[DT_MAX_MESH_DIMS], n = 0;
	dt_mesh_coords(&plan->mesh, p, coord);
	for (int d = 0; d < plan->rank; d++) {
		int64_t k;
		dt_shard_indices(pl, plan->mesh.shape, coord, d, plan->shape[d],
				 out + n + 1, &k);
		out[n] = k; /* the length first, so dims cannot blur */
		n += k + 1;
	}
	return n;
}

/* Checks plan: chained src -> dst, permutes move equal blocks. */
static void check_plan(const struct dt_redist_plan *plan)
{
	const struct dt_placements *cur = &plan->src;
	int64_t cap = 0;
	for (int d = 0; d < plan->rank; d++)
		cap += plan->shape[d] + 1;
	int64_t *a = test_calloc((size_t)cap + 1, sizeof *a);
	int64_t *b = test_calloc((size_t)cap + 1, sizeof *b);
	int64_t *dest = test_calloc((size_t)plan->mesh.size, sizeof *dest);
	bool *hit = test_calloc((size_t)plan->mesh.size, sizeof *hit);
	for (uint32_t i = 0; i < plan->steps.len; i++) {
		const struct dt_redist_step *s = &plan->steps.data[i];
		assert_true(same_state(cur, &s->before));
		if (s->kind == DT_REDIST_PERMUTE) {
			memset(hit, 0, (size_t)plan->mesh.size * sizeof *hit);
			dt_redist_permute_map(plan, s, dest);
			for (int64_t p = 0; p < plan->mesh.size; p++) {
				int64_t q = dest[p];
				assert_true(q >= 0 && q < plan->mesh.size);
				assert_false(hit[q]);
				hit[q] = true;
				int64_t na = held(plan, &s->before, p, a);
				int64_t nb = held(plan, &s->after, q, b);
				assert_int_equal(na, nb);
				assert_memory_equal(a, b, (size_t)na * sizeof *a);
			}
		}
		cur = &s->after;
	}
	assert_true(same_state(cur, &plan->dst));
	test_free(a);
	test_free(b);
	test_free(dest);
	test_free(hit);
}

static void test_worked_case(void **state)
{
	(void)state;
	struct dt_module *m = dt_module_create("test");
	int64_t shape[] = {2, 2, 3, 2};
	struct dt_mesh mesh = make_mesh(m, shape, 4);
	struct dt_redist_request req = {.mesh = &mesh, .dtype = DT_FLOAT32,
					.rank = 2, .shape = {12, 12}};
	char err[256];
	assert_true(dt_placements_parse(&req.src, "S(0) S(0) S(1) S(1)", NULL,
					&mesh, &m->strings, err, sizeof err));
	assert_true(dt_placements_parse(&req.dst, "S(1) S(1) S(0) S(0)", NULL,
					&mesh, &m->strings, err, sizeof err));
	struct dt_redist_plan dtensor, mm;
	assert_int_equal(dt_redist_plan_init(&dtensor, &req, err, sizeof err),
			 DT_OK);
	req.mode = DT_REDIST_MODE_MIN_MEMORY;
	assert_int_equal(dt_redist_plan_init(&mm, &req, err, sizeof err), DT_OK);
	assert_int_equal(mm.method, DT_REDIST_MIN_MEMORY);
	assert_true(dt_redist_plan_peak(&dtensor) == 72 * 4);
	assert_true(dt_redist_plan_peak(&mm) == 6 * 4);
	assert_int_equal(dt_redist_plan_count(&mm, DT_REDIST_ALL_TO_ALL), 2);
	assert_int_equal(dt_redist_plan_count(&mm, DT_REDIST_PERMUTE), 2);
	assert_int_equal(dt_redist_plan_count(&mm, DT_REDIST_ALL_GATHER), 0);
	check_plan(&mm);
	/* Modelled time within 1.2x DTensor's. */
	assert_true(dt_redist_plan_cost(&mm) <=
		    1.2 * dt_redist_plan_cost(&dtensor));
	dt_redist_plan_fini(&dtensor);
	dt_redist_plan_fini(&mm);
	dt_module_destroy(m);
}

/* Partial placements are left to DTensor's plan. */
static void test_partial_falls_back(void **state)
{
	(void)state;
	struct dt_module *m = dt_module_create("test");
	int64_t shape[] = {2, 2};
	struct dt_mesh mesh = make_mesh(m, shape, 2);
	struct dt_redist_request req = {.mesh = &mesh, .dtype = DT_FLOAT32,
					.rank = 1, .shape = {8},
					.mode = DT_REDIST_MODE_MIN_MEMORY};
	char err[256];
	assert_true(dt_placements_parse(&req.src, "P(sum) S(0)", NULL, &mesh,
					&m->strings, err, sizeof err));
	assert_true(dt_placements_parse(&req.dst, "R R", NULL, &mesh,
					&m->strings, err, sizeof err));
	struct dt_redist_plan plan;
	assert_int_equal(dt_redist_plan_init(&plan, &req, err, sizeof err),
			 DT_OK);
	assert_int_equal(plan.method, DT_REDIST_GREEDY);
	dt_redist_plan_fini(&plan);
	dt_module_destroy(m);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

/* Random S/R placements with a random shard order. */
static void random_placements(struct dt_placements *pl, int ndim, int rank)
{
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	for (int m = 0; m < ndim; m++) {
		uint32_t r = rnd((uint32_t)rank + 1);
		pl->p[m] = r == 0 ? (struct dt_placement){.kind = DT_PL_REPLICATE}
				  : (struct dt_placement){.kind = DT_PL_SHARD,
							  .dim = (int16_t)(r - 1)};
	}
	dt_placements_default_order(pl);
	if (rnd(2)) /* reverse each tensor dim's order */
		for (int d = 0; d < rank; d++) {
			int k = 0;
			for (int m = 0; m < ndim; m++)
				k += pl->p[m].kind == DT_PL_SHARD &&
				     pl->p[m].dim == d;
			for (int m = 0; m < ndim; m++)
				if (pl->p[m].kind == DT_PL_SHARD &&
				    pl->p[m].dim == d)
					pl->order_pos[m] =
						(uint8_t)(k - 1 - pl->order_pos[m]);
		}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_distribution(const char *what, double *v, int n)
{
	if (n == 0)
		return;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	print_message("%s (%d cases): min %.3f p50 %.3f p90 %.3f p99 %.3f "
		      "max %.3f\n",
		      what, n, v[0], v[n / 2], v[n * 9 / 10], v[n * 99 / 100],
		      v[n - 1]);
}

enum { CASES = 600 };

static void test_random_sweep(void **state)
{
	(void)state;
	struct dt_module *m = dt_module_create("test");
	static double peak_ratio[CASES], time_ratio[CASES], dt_peak[CASES];
	int ntime = 0, permutes = 0, uneven = 0, transfers = 0;
	for (int c = 0; c < CASES; c++) {
		int ndim = 1 + c % 4;
		int64_t shape[DT_MAX_MESH_DIMS];
		for (int d = 0; d < ndim; d++)
			shape[d] = 1 + rnd(ndim <= 2 ? 4 : 3);
		struct dt_mesh mesh = make_mesh(m, shape, ndim);
		struct dt_redist_request req = {.mesh = &mesh,
						.dtype = DT_FLOAT32,
						.rank = 1 + (int)rnd(3)};
		for (int d = 0; d < req.rank; d++)
			req.shape[d] = 1 + rnd(13);
		random_placements(&req.src, ndim, req.rank);
		random_placements(&req.dst, ndim, req.rank);
		char err[256];
		struct dt_redist_plan dtensor, mm;
		assert_int_equal(dt_redist_plan_init(&dtensor, &req, err,
						     sizeof err),
				 DT_OK);
		req.mode = DT_REDIST_MODE_MIN_MEMORY;
		assert_int_equal(dt_redist_plan_init(&mm, &req, err, sizeof err),
				 DT_OK);
		assert_int_equal(mm.method, DT_REDIST_MIN_MEMORY);
		check_plan(&mm);
		double low = dt_redist_local_bytes(&mm, &mm.src);
		double b = dt_redist_local_bytes(&mm, &mm.dst);
		low = b > low ? b : low;
		double peak = dt_redist_plan_peak(&mm);
		assert_true(peak <= dt_redist_plan_peak(&dtensor));
		/* The memory bound (semantics §3.1): within 2x, through an
		 * all_to_all_v where no other plan fits. */
		assert_true(peak <= 2 * low);
		transfers += dt_redist_plan_count(&mm, DT_REDIST_TRANSFER);
		peak_ratio[c] = peak / low;
		dt_peak[c] = dt_redist_plan_peak(&dtensor) / low;
		/* The time bound (semantics §3.1): where DTensor's plan fits
		 * in 2x, at most 1.2x its modelled time. */
		if (dt_redist_plan_peak(&dtensor) <= 2 * low &&
		    dt_redist_plan_cost(&dtensor) > 0) {
			time_ratio[ntime] = dt_redist_plan_cost(&mm) /
					    dt_redist_plan_cost(&dtensor);
			assert_true(time_ratio[ntime++] <= 1.2 + 1e-9);
		}
		permutes += dt_redist_plan_count(&mm, DT_REDIST_PERMUTE);
		uneven += !dt_shard_even(&mesh, &req.src, req.shape, req.rank) ||
			  !dt_shard_even(&mesh, &req.dst, req.shape, req.rank);
		dt_redist_plan_fini(&dtensor);
		dt_redist_plan_fini(&mm);
	}
	print_message("%d random redistributions (%d uneven), %d all_permute "
		      "steps, %d all_to_all_v\n",
		      CASES, uneven, permutes, transfers);
	print_distribution("min-memory peak / max(src, dst)", peak_ratio,
			   CASES);
	print_distribution("dtensor peak / max(src, dst)", dt_peak, CASES);
	print_distribution("min-memory time / dtensor time where dtensor's "
			   "peak <= 2x",
			   time_ratio, ntime);
	assert_true(uneven > CASES / 4);
	assert_true(transfers > 0 && transfers <= CASES / 50);
	dt_module_destroy(m);
}

int main(void)
{
	dt_set_allocator(cmocka_realloc, NULL);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_worked_case),
	    cmocka_unit_test(test_partial_falls_back),
	    cmocka_unit_test(test_random_sweep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
