// SPDX-License-Identifier: MIT
/* test_layout.c: unit tests of the layout algebra and the mesh/group rank
 * arithmetic against the worked vectors of semantics.md §1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ir.h"

/* Route the library's allocations through cmocka so leaks fail a test. */
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

static struct dt_layout L2(int64_t s0, int64_t s1, int64_t d0, int64_t d1)
{
	return (struct dt_layout){2, {s0, s1}, {d0, d1}};
}

static struct dt_layout L1(int64_t s0, int64_t d0)
{
	return (struct dt_layout){1, {s0}, {d0}};
}

static void assert_layout(const struct dt_layout *l, int rank,
			  const int64_t *size, const int64_t *stride)
{
	assert_int_equal(l->rank, rank);
	for (int i = 0; i < rank; i++) {
		assert_int_equal(l->size[i], size[i]);
		assert_int_equal(l->stride[i], stride[i]);
	}
}

/* A mesh with named dims; names are interned in `strings`. */
static struct dt_mesh make_mesh(struct dt_intern *strings, const char *names,
				const int64_t *shape, int ndim)
{
	struct dt_mesh m = {.ndim = (uint8_t)ndim, .size = 1};
	m.name.id = dt_intern(strings, "world", 5);
	const char *p = names;
	for (int i = 0; i < ndim; i++) {
		size_t n = strcspn(p, " ");
		m.dims[i].id = dt_intern(strings, p, n);
		p += n + (p[n] == ' ');
		m.shape[i] = shape[i];
		m.size *= shape[i];
	}
	return m;
}

/* Asserts every instance of the group over `dims` against `want`
 * (instances one after another, group order within each). */
static void assert_group(const struct dt_mesh *m, const uint8_t *dims,
			 int ndims, const int32_t *want)
{
	int64_t n = dt_group_size(m, dims, ndims);
	int64_t count = dt_group_instance_count(m, dims, ndims);
	int32_t got[64];
	assert_int_equal(n * count, m->size);
	for (int64_t i = 0; i < count; i++) {
		dt_group_ranks(m, dims, ndims, i, got);
		for (int64_t j = 0; j < n; j++)
			assert_int_equal(got[j], want[i * n + j]);
	}
}

static void test_eval_last_mode_fastest(void **state)
{
	(void)state;
	struct dt_layout col = L2(4, 2, 1, 4);
	const int64_t want[] = {0, 4, 1, 5, 2, 6, 3, 7};
	assert_int_equal(dt_layout_size(&col), 8);
	for (int i = 0; i < 8; i++)
		assert_int_equal(dt_layout_eval(&col, i), want[i]);
	struct dt_layout three = {3, {2, 3, 4}, {12, 4, 1}};
	assert_int_equal(dt_layout_eval(&three, 17), 17);
	struct dt_layout scalar = {0};
	assert_int_equal(dt_layout_size(&scalar), 1);
	assert_int_equal(dt_layout_eval(&scalar, 0), 0);
}

static void test_coalesce(void **state)
{
	(void)state;
	struct dt_layout r;
	struct dt_layout rm = L2(2, 4, 4, 1);
	r = dt_layout_coalesce(&rm);
	assert_layout(&r, 1, (int64_t[]){8}, (int64_t[]){1});

	struct dt_layout gap = {3, {2, 1, 4}, {4, 7, 1}}; /* size-1 dropped */
	r = dt_layout_coalesce(&gap);
	assert_layout(&r, 1, (int64_t[]){8}, (int64_t[]){1});

	struct dt_layout col = L2(4, 2, 1, 4); /* column-major: no merge */
	r = dt_layout_coalesce(&col);
	assert_layout(&r, 2, (int64_t[]){4, 2}, (int64_t[]){1, 4});

	struct dt_layout part = {3, {2, 2, 3}, {12, 3, 1}};
	r = dt_layout_coalesce(&part);
	assert_layout(&r, 2, (int64_t[]){2, 6}, (int64_t[]){12, 1});

	struct dt_layout chain = {3, {3, 2, 2}, {4, 2, 1}};
	r = dt_layout_coalesce(&chain);
	assert_layout(&r, 1, (int64_t[]){12}, (int64_t[]){1});

	/* All size-1 modes: rank 0 (documented choice). */
	struct dt_layout ones = L2(1, 1, 3, 5);
	r = dt_layout_coalesce(&ones);
	assert_int_equal(r.rank, 0);
	assert_int_equal(dt_layout_size(&r), 1);
}

static void test_equal(void **state)
{
	(void)state;
	struct dt_layout rm = L2(2, 4, 4, 1), flat = L1(8, 1);
	struct dt_layout padded = {3, {1, 8, 1}, {0, 1, 99}};
	struct dt_layout col = L2(4, 2, 1, 4), other = L2(2, 4, 1, 2);
	struct dt_layout one = L1(1, 5), none = {0};
	assert_true(dt_layout_equal(&rm, &flat));
	assert_true(dt_layout_equal(&padded, &flat));
	assert_false(dt_layout_equal(&col, &flat));
	assert_false(dt_layout_equal(&rm, &other));
	assert_true(dt_layout_equal(&one, &none));
}

static void test_complement(void **state)
{
	(void)state;
	struct dt_layout r, l;
	l = L1(2, 4); /* dp of (2,4):(4,1) */
	r = dt_layout_complement(&l, 8);
	assert_layout(&r, 1, (int64_t[]){4}, (int64_t[]){1});
	l = L1(4, 1); /* tp */
	r = dt_layout_complement(&l, 8);
	assert_layout(&r, 1, (int64_t[]){2}, (int64_t[]){4});
	l = L2(2, 2, 4, 1); /* A C of (2,2,2) */
	r = dt_layout_complement(&l, 8);
	assert_layout(&r, 1, (int64_t[]){2}, (int64_t[]){2});
	/* Middle dim of (2,3,4): two gaps, slowest first (row-major). */
	l = L1(3, 4);
	r = dt_layout_complement(&l, 24);
	assert_layout(&r, 2, (int64_t[]){2, 4}, (int64_t[]){12, 1});
	/* Mode order of l does not matter; a full layout leaves nothing. */
	l = L2(4, 2, 1, 4);
	r = dt_layout_complement(&l, 8);
	assert_int_equal(r.rank, 0);
	l = (struct dt_layout){0};
	r = dt_layout_complement(&l, 6);
	assert_layout(&r, 1, (int64_t[]){6}, (int64_t[]){1});
}

static void test_overlap(void **state)
{
	(void)state;
	struct dt_layout a = L1(2, 4), b = L1(2, 2), c = L1(2, 1);
	struct dt_layout ac = L2(2, 2, 4, 1), ab = L2(2, 2, 4, 2);
	struct dt_layout one = L1(1, 0);
	assert_false(dt_layouts_overlap(&ac, &b));
	assert_false(dt_layouts_overlap(&b, &ac));
	assert_true(dt_layouts_overlap(&ac, &ab)); /* share A: value 4 */
	assert_true(dt_layouts_overlap(&ab, &b));
	assert_false(dt_layouts_overlap(&a, &c));
	assert_false(dt_layouts_overlap(&one, &ab)); /* only 0 in common */
}

static void test_mesh_layouts(void **state)
{
	(void)state;
	struct dt_intern s;
	dt_intern_init(&s);
	struct dt_mesh m = make_mesh(&s, "dp tp", (int64_t[]){2, 4}, 2);
	struct dt_layout l = dt_mesh_layout(&m);
	assert_layout(&l, 2, (int64_t[]){2, 4}, (int64_t[]){4, 1});
	l = dt_mesh_sub_layout(&m, (uint8_t[]){1, 0}, 2);
	assert_layout(&l, 2, (int64_t[]){4, 2}, (int64_t[]){1, 4});
	l = dt_mesh_sub_layout(&m, (uint8_t[]){0, 1}, 2);
	struct dt_layout full = dt_mesh_layout(&m);
	assert_true(dt_layout_equal(&l, &full));

	int64_t c[3];
	struct dt_mesh m3 = make_mesh(&s, "a b c", (int64_t[]){2, 3, 4}, 3);
	dt_mesh_coords(&m3, 23, c);
	assert_int_equal(c[0], 1);
	assert_int_equal(c[1], 2);
	assert_int_equal(c[2], 3);
	dt_mesh_coords(&m3, 6, c);
	assert_int_equal(c[0], 0);
	assert_int_equal(c[1], 1);
	assert_int_equal(c[2], 2);
	dt_intern_fini(&s);
}

static void test_find_dim(void **state)
{
	(void)state;
	struct dt_intern s;
	dt_intern_init(&s);
	struct dt_mesh m = make_mesh(&s, "dp tp", (int64_t[]){2, 4}, 2);
	assert_int_equal(dt_mesh_find_dim(&m, "dp", &s), 0);
	assert_int_equal(dt_mesh_find_dim(&m, "tp", &s), 1);
	assert_int_equal(dt_mesh_find_dim(&m, "1", &s), 1);
	assert_int_equal(dt_mesh_find_dim(&m, "2", &s), -1);
	assert_int_equal(dt_mesh_find_dim(&m, "t", &s), -1);
	assert_int_equal(dt_mesh_find_dim(&m, "", &s), -1);
	assert_int_equal(dt_mesh_find_dim(&m, "-1", &s), -1);
	assert_int_equal(dt_mesh_find_dim(&m, "tp", NULL), -1);
	assert_int_equal(dt_mesh_find_dim(&m, "0", NULL), 0);
	/* A name wins over an index. */
	struct dt_mesh odd = make_mesh(&s, "1 0", (int64_t[]){2, 2}, 2);
	assert_int_equal(dt_mesh_find_dim(&odd, "1", &s), 0);
	dt_intern_fini(&s);
}

static void test_group_worked_vectors(void **state)
{
	(void)state;
	struct dt_intern s;
	dt_intern_init(&s);
	struct dt_mesh m = make_mesh(&s, "dp tp", (int64_t[]){2, 4}, 2);
	assert_group(&m, (uint8_t[]){0}, 1, (int32_t[]){0, 4, 1, 5, 2, 6, 3, 7});
	assert_group(&m, (uint8_t[]){1}, 1, (int32_t[]){0, 1, 2, 3, 4, 5, 6, 7});
	assert_group(&m, (uint8_t[]){1, 0}, 2,
		     (int32_t[]){0, 4, 1, 5, 2, 6, 3, 7});

	struct dt_mesh abc = make_mesh(&s, "A B C", (int64_t[]){2, 2, 2}, 3);
	assert_group(&abc, (uint8_t[]){0, 2}, 2,
		     (int32_t[]){0, 1, 4, 5, 2, 3, 6, 7});
	assert_group(&abc, (uint8_t[]){0, 1}, 2,
		     (int32_t[]){0, 2, 4, 6, 1, 3, 5, 7});
	assert_group(&abc, (uint8_t[]){2, 0}, 2,
		     (int32_t[]){0, 4, 1, 5, 2, 6, 3, 7});
	dt_intern_fini(&s);
}

/* "dp cp" and "cp dp" on dp x tp x cp = (2,3,2): non-contiguous dims. */
static void test_group_noncontiguous(void **state)
{
	(void)state;
	struct dt_intern s;
	dt_intern_init(&s);
	struct dt_mesh m = make_mesh(&s, "dp tp cp", (int64_t[]){2, 3, 2}, 3);
	uint8_t dp_cp[] = {0, 2}, cp_dp[] = {2, 0};
	struct dt_layout l = dt_mesh_sub_layout(&m, dp_cp, 2);
	assert_layout(&l, 2, (int64_t[]){2, 2}, (int64_t[]){6, 1});
	assert_int_equal(dt_group_instance_count(&m, dp_cp, 2), 3);
	assert_group(&m, dp_cp, 2,
		     (int32_t[]){0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11});
	assert_group(&m, cp_dp, 2,
		     (int32_t[]){0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
	dt_intern_fini(&s);
}

static void test_custom_devices(void **state)
{
	(void)state;
	struct dt_intern s;
	dt_intern_init(&s);
	int32_t devices[] = {3, 1, 0, 2};
	struct dt_mesh m = make_mesh(&s, "x y", (int64_t[]){2, 2}, 2);
	m.devices = devices;
	assert_int_equal(dt_mesh_device(&m, 2), 0);
	assert_int_equal(dt_mesh_position(&m, 2), 3);
	assert_int_equal(dt_mesh_position(&m, 5), -1);
	assert_group(&m, (uint8_t[]){1}, 1, (int32_t[]){3, 1, 0, 2});
	assert_group(&m, (uint8_t[]){0}, 1, (int32_t[]){3, 0, 1, 2});
	int64_t inst, pos;
	assert_true(dt_group_locate(&m, (uint8_t[]){0}, 1, 2, &inst, &pos));
	assert_int_equal(inst, 1);
	assert_int_equal(pos, 1);
	assert_false(dt_group_locate(&m, (uint8_t[]){0}, 1, 7, &inst, &pos));

	struct dt_mesh plain = make_mesh(&s, "x", (int64_t[]){4}, 1);
	assert_int_equal(dt_mesh_position(&plain, 4), -1);
	assert_int_equal(dt_mesh_position(&plain, -1), -1);
	dt_intern_fini(&s);
}

/* Every rank on every ordered dim subset of several meshes: locate must
 * point at the slot of dt_group_ranks that holds the rank, and the
 * instances must partition the mesh. */
static void check_locate_all(const struct dt_mesh *m, const uint8_t *dims,
			     int ndims)
{
	int64_t n = dt_group_size(m, dims, ndims);
	int64_t count = dt_group_instance_count(m, dims, ndims);
	int32_t ranks[64];
	int seen[64] = {0};
	for (int64_t p = 0; p < m->size; p++) {
		int32_t r = dt_mesh_device(m, p);
		int64_t inst, pos;
		assert_true(dt_group_locate(m, dims, ndims, r, &inst, &pos));
		assert_in_range(inst, 0, count - 1);
		assert_in_range(pos, 0, n - 1);
		dt_group_ranks(m, dims, ndims, inst, ranks);
		assert_int_equal(ranks[pos], r);
		seen[p]++;
	}
	for (int64_t i = 0; i < count; i++) {
		dt_group_ranks(m, dims, ndims, i, ranks);
		for (int64_t j = 0; j < n; j++)
			seen[dt_mesh_position(m, ranks[j])] += 10;
	}
	for (int64_t p = 0; p < m->size; p++)
		assert_int_equal(seen[p], 11);
}

/* Enumerates every ordered subset of the mesh dims (orders included). */
static void locate_subsets(const struct dt_mesh *m, uint8_t *dims, int k,
			   unsigned used)
{
	if (k > 0)
		check_locate_all(m, dims, k);
	for (int d = 0; d < m->ndim; d++)
		if (!(used & (1u << d))) {
			dims[k] = (uint8_t)d;
			locate_subsets(m, dims, k + 1, used | (1u << d));
		}
}

static void test_group_locate(void **state)
{
	(void)state;
	struct dt_intern s;
	dt_intern_init(&s);
	int32_t devices[24];
	for (int i = 0; i < 24; i++)
		devices[i] = (int32_t)((i * 7 + 5) % 24); /* a permutation */
	struct dt_mesh meshes[] = {
		make_mesh(&s, "dp tp", (int64_t[]){2, 4}, 2),
		make_mesh(&s, "A B C", (int64_t[]){2, 2, 2}, 3),
		make_mesh(&s, "dp tp cp", (int64_t[]){2, 3, 4}, 3),
		make_mesh(&s, "pp dp one tp", (int64_t[]){3, 2, 1, 2}, 4),
		make_mesh(&s, "a b c", (int64_t[]){2, 3, 4}, 3),
	};
	meshes[4].devices = devices;
	for (size_t i = 0; i < sizeof meshes / sizeof meshes[0]; i++) {
		uint8_t dims[DT_MAX_MESH_DIMS];
		locate_subsets(&meshes[i], dims, 0, 0);
	}
	/* One spot value: rank 13 on (2,3,4) group "cp dp" is at coords
	 * (1,0,1): instance tp=0, position cp*2+dp = 3. */
	int64_t inst, pos;
	assert_true(dt_group_locate(&meshes[2], (uint8_t[]){2, 0}, 2, 13, &inst,
				    &pos));
	assert_int_equal(inst, 0);
	assert_int_equal(pos, 3);
	dt_intern_fini(&s);
}

int main(void)
{
	dt_set_allocator(cmocka_realloc, NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eval_last_mode_fastest),
		cmocka_unit_test(test_coalesce),
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_complement),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_mesh_layouts),
		cmocka_unit_test(test_find_dim),
		cmocka_unit_test(test_group_worked_vectors),
		cmocka_unit_test(test_group_noncontiguous),
		cmocka_unit_test(test_custom_devices),
		cmocka_unit_test(test_group_locate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
