// SPDX-License-Identifier: MIT
/* test_rt_tensor.c: element conversion (bfloat16 and float16 rounding to
 * nearest even straight from double, integer truncation and wrap-around,
 * bool), run-time tensor geometry and PyTorch's view strides. */
#include "rt_test.h"
#include "internal.h"

#include <math.h>

static void test_bf16_rounding(void **state)
{
	(void)state;
	assert_int_equal(dt_bf16_from_double(1.0), 0x3f80);
	assert_int_equal(dt_bf16_from_double(-2.5), 0xc020);
	/* ties go to the even mantissa */
	assert_int_equal(dt_bf16_from_double(1.00390625), 0x3f80); /* 1 + 2^-8 */
	assert_int_equal(dt_bf16_from_double(1.01171875), 0x3f82); /* 1 + 3*2^-8 */
	/* just above a tie rounds up: rounding through float32 would see a
	 * tie and keep 0x3f80 */
	assert_int_equal(dt_bf16_from_double(1.0 + ldexp(1, -8) + ldexp(1, -30)), 0x3f81);
	assert_int_equal(dt_bf16_from_double(3.14159), 0x4049); /* 3.140625 */
	assert_int_equal(dt_bf16_from_double(0.1), 0x3dcd);
	assert_int_equal(dt_bf16_from_double(65504), 0x4780); /* 65536 */
	assert_int_equal(dt_bf16_from_double(1e-40), 0x0001); /* subnormal */
	assert_int_equal(dt_bf16_from_double(3.4e38), 0x7f80); /* overflow */
	assert_int_equal(dt_bf16_from_double(3.389e38), 0x7f7f);
	assert_int_equal(dt_bf16_from_double(INFINITY), 0x7f80);
	assert_int_equal(dt_bf16_from_double(-INFINITY), 0xff80);
	assert_int_equal(dt_bf16_from_double(NAN), 0x7fc0);
	assert_int_equal(dt_bf16_from_double(-0.0), 0x8000);
	assert_true(dt_bf16_to_double(0x3eab) == 0.333984375);
	assert_true(dt_bf16_to_double(0x4049) == 3.140625);
	assert_true(isnan(dt_bf16_to_double(0x7fc1)));
}

static void test_f16_rounding(void **state)
{
	(void)state;
	assert_int_equal(dt_f16_from_double(1.0), 0x3c00);
	assert_int_equal(dt_f16_from_double(-2.0), 0xc000);
	assert_int_equal(dt_f16_from_double(0.1), 0x2e66);
	assert_int_equal(dt_f16_from_double(1.0 + ldexp(1, -11)), 0x3c00);     /* tie, even */
	assert_int_equal(dt_f16_from_double(1.0 + 3 * ldexp(1, -11)), 0x3c02); /* tie, even */
	assert_int_equal(dt_f16_from_double(65504), 0x7bff);
	assert_int_equal(dt_f16_from_double(65519), 0x7bff);
	assert_int_equal(dt_f16_from_double(65520), 0x7c00); /* rounds to inf */
	assert_int_equal(dt_f16_from_double(ldexp(1, -24)), 0x0001); /* smallest subnormal */
	assert_int_equal(dt_f16_from_double(ldexp(1, -25)), 0x0000); /* tie to even 0 */
	assert_int_equal(dt_f16_from_double(3 * ldexp(1, -26)), 0x0001);
	assert_int_equal(dt_f16_from_double(ldexp(1023, -24)), 0x03ff); /* largest subnormal */
	assert_int_equal(dt_f16_from_double(ldexp(2047, -25)), 0x0400); /* rounds to normal */
	assert_int_equal(dt_f16_from_double(NAN) & 0x7e00, 0x7e00);
	assert_int_equal(dt_f16_from_double(-INFINITY), 0xfc00);
	assert_true(dt_f16_to_double(0x3555) == 0.333251953125);
	assert_true(dt_f16_to_double(0x0001) == ldexp(1, -24));
	assert_true(dt_f16_to_double(0x7bff) == 65504);
	assert_true(isinf(dt_f16_to_double(0x7c00)));
	/* every finite half round-trips */
	for (unsigned h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00)
			continue;
		assert_int_equal(dt_f16_from_double(dt_f16_to_double((uint16_t)h)), h);
	}
}

static void test_elements(void **state)
{
	(void)state;
	unsigned char buf[8];
	dt_store_element(DT_INT8, buf, 200);
	assert_true(dt_load_element(DT_INT8, buf) == -56);
	dt_store_element(DT_UINT8, buf, -1);
	assert_true(dt_load_element(DT_UINT8, buf) == 255);
	dt_store_element(DT_INT32, buf, 2.9);
	assert_true(dt_load_element(DT_INT32, buf) == 2);
	dt_store_element(DT_INT64, buf, -2.9);
	assert_true(dt_load_element(DT_INT64, buf) == -2);
	dt_store_element(DT_BOOL, buf, 0.5);
	assert_true(dt_load_element(DT_BOOL, buf) == 1);
	dt_store_element(DT_BOOL, buf, 0);
	assert_true(dt_load_element(DT_BOOL, buf) == 0);
	dt_store_element(DT_FLOAT32, buf, 0.1);
	assert_true(dt_load_element(DT_FLOAT32, buf) == (double)0.1f);
	dt_store_element(DT_BFLOAT16, buf, 1.01171875);
	assert_true(dt_load_element(DT_BFLOAT16, buf) == 1.015625);
	dt_store_element(DT_FLOAT16, buf, 0.1);
	assert_true(dt_load_element(DT_FLOAT16, buf) == 0.0999755859375);
	assert_true(dt_round_to(DT_INT16, 40000) == 40000 - 65536);
	assert_true(dt_round_to(DT_FLOAT64, 0.1) == 0.1);
}

static struct dt_rt_tensor make(enum dt_dtype dt, int rank, const int64_t *shape,
				const int64_t *stride, int64_t offset)
{
	struct dt_rt_tensor t;
	memset(&t, 0, sizeof(t));
	t.dtype = (uint8_t)dt;
	t.rank = (uint8_t)rank;
	for (int i = 0; i < rank; i++) {
		t.shape[i] = shape[i];
		t.stride[i] = stride[i];
	}
	t.offset = offset;
	return t;
}

static void test_geometry(void **state)
{
	(void)state;
	struct dt_rt_tensor t = make(DT_FLOAT32, 2, (int64_t[]){3, 4}, (int64_t[]){1, 3}, 2);
	assert_int_equal(dt_rt_numel(&t), 12);
	assert_false(dt_rt_is_contiguous(&t));
	/* last element at 2 + 2*1 + 3*3 = 13: 14 floats */
	assert_int_equal(dt_rt_storage_bytes(&t), 56);
	float data[14];
	struct dt_buffer buf = {data, sizeof(data), 1, false};
	t.buf = &buf;
	assert_ptr_equal(dt_rt_element(&t, (int64_t[]){2, 1}), &data[2 + 2 + 3]);

	struct dt_rt_tensor u = make(DT_INT64, 3, (int64_t[]){2, 1, 3}, (int64_t[]){3, 99, 1}, 0);
	assert_true(dt_rt_is_contiguous(&u)); /* size-1 dims' strides do not count */
	struct dt_rt_tensor e = make(DT_FLOAT32, 2, (int64_t[]){0, 4}, (int64_t[]){1, 7}, 5);
	assert_true(dt_rt_is_contiguous(&e));
	assert_int_equal(dt_rt_storage_bytes(&e), 0);
	struct dt_rt_tensor s = make(DT_FLOAT64, 0, NULL, NULL, 3);
	assert_int_equal(dt_rt_numel(&s), 1);
	assert_int_equal(dt_rt_storage_bytes(&s), 32);
}

static void test_from_meta(void **state)
{
	(void)state;
	struct dt_module *m = dt_module_create("t.xml");
	struct dt_tensor meta = {0};
	meta.dtype = DT_BFLOAT16;
	meta.shape = dt_ints_intern(m, (int64_t[]){2, 5}, 2);
	meta.stride = dt_ints_intern(m, (int64_t[]){1, 2}, 2);
	meta.offset = 3;
	struct dt_rt_tensor t;
	dt_rt_from_meta(&t, m, &meta);
	assert_null(t.buf);
	assert_int_equal(t.dtype, DT_BFLOAT16);
	assert_int_equal(t.rank, 2);
	assert_int_equal(t.shape[1], 5);
	assert_int_equal(t.stride[1], 2);
	assert_int_equal(t.offset, 3);
	dt_module_destroy(m);
}

static void test_view_strides(void **state)
{
	(void)state;
	int64_t st[DT_MAX_RANK];
	struct dt_rt_tensor c = make(DT_FLOAT32, 2, (int64_t[]){3, 4}, (int64_t[]){4, 1}, 0);
	assert_true(dt_rt_view_strides(&c, (int64_t[]){2, 6}, 2, st));
	assert_int_equal(st[0], 6);
	assert_int_equal(st[1], 1);
	struct dt_rt_tensor t = make(DT_FLOAT32, 2, (int64_t[]){3, 4}, (int64_t[]){1, 3}, 0);
	assert_false(dt_rt_view_strides(&t, (int64_t[]){12}, 1, st));
	/* splitting a transposed dim keeps it a view */
	assert_true(dt_rt_view_strides(&t, (int64_t[]){3, 2, 2}, 3, st));
	assert_int_equal(st[0], 1);
	assert_int_equal(st[1], 6);
	assert_int_equal(st[2], 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bf16_rounding),
		cmocka_unit_test(test_f16_rounding),
		cmocka_unit_test(test_elements),
		cmocka_unit_test_setup_teardown(test_geometry, rt_setup, rt_teardown),
		cmocka_unit_test_setup_teardown(test_from_meta, rt_setup, rt_teardown),
		cmocka_unit_test(test_view_strides),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
