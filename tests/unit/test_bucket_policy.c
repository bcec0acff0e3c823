// SPDX-License-Identifier: MIT
/* test_bucket_policy.c: bucket-collectives' cost-model cut
 * (dt_bucket_cut, passes/bucket_policy.c). Worked cases: members ready
 * together merge into one run; of members far apart the last stays alone
 * when its bytes cost more at the exposed tail than a launch, and joins
 * when they cost less; a late member stays out of the bucket of the
 * early ones; the copies a merge makes (members not computed into the
 * flat buffer) keep members ready together apart when they cost more
 * than the launches saved.
 * Then 3000 seeded random instances of up to 10 members (half of them
 * with copies) against every cut (brute force): the cut found has the
 * least J = end of the last run + alpha per run. */
#include <float.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "bucket_internal.h"

/* J of the cut whose runs start where bit i-1 of `cuts` is set (and at 0). */
static double cut_value(const double *ready, const double *bytes,
			const double *copy, int n, double alpha, double beta,
			unsigned cuts)
{
	double end = -DBL_MAX;
	int runs = 0, first = 0;
	for (int i = 0; i < n; i++) {
		if (i + 1 < n && !(cuts >> i & 1))
			continue;
		double latest = -DBL_MAX, sum = 0, copies = 0;
		for (int j = first; j <= i; j++) {
			latest = ready[j] > latest ? ready[j] : latest;
			sum += bytes[j];
			copies += copy[j];
		}
		end = (end > latest ? end : latest) + alpha + beta * sum +
		      (i > first ? copies : 0);
		runs++;
		first = i + 1;
	}
	return end + alpha * runs;
}

static unsigned cuts_of(const uint32_t *run_first, uint32_t nruns)
{
	unsigned cuts = 0;
	for (uint32_t r = 1; r < nruns; r++)
		cuts |= 1u << (run_first[r] - 1);
	return cuts;
}

static const double NO_COPY[10];

static void test_ready_together(void **state)
{
	(void)state;
	double ready[8] = {0}, bytes[8] = {64, 64, 64, 64, 64, 64, 64, 64};
	uint32_t runs[8];
	assert_int_equal(dt_bucket_cut(ready, bytes, NO_COPY, 8, 10, 0.01, runs), 1);
	assert_int_equal(runs[0], 0);
}

static void test_copies(void **state)
{
	(void)state;
	double ready[8] = {0}, bytes[8] = {64, 64, 64, 64, 64, 64, 64, 64};
	double copy[8] = {20, 20, 20, 20, 20, 20, 20, 20};
	uint32_t runs[8];
	/* 8 x 20 µs of copies cost more than the 7 launches (and their
	 * 10 µs each in J) a merge saves: every member alone */
	assert_int_equal(dt_bucket_cut(ready, bytes, copy, 8, 10, 0.01, runs), 8);
	/* at 5 µs each one run is cheaper again */
	for (int i = 0; i < 8; i++)
		copy[i] = 5;
	assert_int_equal(dt_bucket_cut(ready, bytes, copy, 8, 10, 0.01, runs), 1);
	/* computed in place (no copy), the first four merge; the copied
	 * ones stay alone */
	for (int i = 0; i < 8; i++)
		copy[i] = i < 4 ? 0 : 30;
	assert_int_equal(dt_bucket_cut(ready, bytes, copy, 8, 10, 0.01, runs), 5);
	assert_int_equal(runs[1], 4);
}

static void test_far_apart(void **state)
{
	(void)state;
	double ready[4] = {0, 1000, 2000, 3000}, bytes[4] = {50, 50, 50, 50};
	uint32_t runs[4];
	/* Each member's bytes cost 50 µs, a launch 10: the last member stays
	 * alone (its bytes at the exposed tail cost more than the launch
	 * saved); the others merge, finishing long before it is ready. */
	assert_int_equal(dt_bucket_cut(ready, bytes, NO_COPY, 4, 10, 1, runs), 2);
	assert_int_equal(runs[1], 3);
	/* At 1 µs each, one run at the end is cheaper. */
	assert_int_equal(dt_bucket_cut(ready, bytes, NO_COPY, 4, 10, 0.02, runs), 1);
}

static void test_late_member(void **state)
{
	(void)state;
	double ready[5] = {0, 0, 0, 0, 1000}, bytes[5] = {20, 20, 20, 20, 20};
	uint32_t runs[5];
	assert_int_equal(dt_bucket_cut(ready, bytes, NO_COPY, 5, 10, 1, runs), 2);
	assert_int_equal(runs[0], 0);
	assert_int_equal(runs[1], 4);
}

static void test_against_every_cut(void **state)
{
	(void)state;
	srand(12);
	for (int t = 0; t < 3000; t++) {
		int n = 1 + rand() % 10;
		double ready[10], bytes[10], copy[10], now = 0;
		double alpha = 1 + rand() % 20, beta = (rand() % 100) / 100.0;
		bool copies = t % 2;
		for (int i = 0; i < n; i++) {
			now += rand() % 3 == 0 ? rand() % 200 : rand() % 5;
			ready[i] = now;
			bytes[i] = 1 + rand() % 100;
			copy[i] = copies && rand() % 2 ? rand() % 30 : 0;
		}
		uint32_t runs[10];
		uint32_t k = dt_bucket_cut(ready, bytes, copy, (uint32_t)n, alpha,
					   beta, runs);
		assert_true(k >= 1 && k <= (uint32_t)n);
		assert_int_equal(runs[0], 0);
		for (uint32_t r = 1; r < k; r++)
			assert_true(runs[r] > runs[r - 1]);
		double best = DBL_MAX;
		for (unsigned c = 0; c < 1u << (n - 1); c++) {
			double v = cut_value(ready, bytes, copy, n, alpha, beta, c);
			best = v < best ? v : best;
		}
		double got = cut_value(ready, bytes, copy, n, alpha, beta,
				       cuts_of(runs, k));
		assert_true(got <= best + 1e-6);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ready_together),
	    cmocka_unit_test(test_copies),
	    cmocka_unit_test(test_far_apart),
	    cmocka_unit_test(test_late_member),
	    cmocka_unit_test(test_against_every_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
