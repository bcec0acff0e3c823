// SPDX-License-Identifier: MIT
/* test_fit_limit.c: opt's search for a usage limit whose program fits
 * --memory-budget (dt_opt_fit_limit, tools/opt_fit_limit.c), on made-up
 * landscapes: below `none_below` the search plans nothing, within
 * [fits_from, fits_to] the program fits, elsewhere it does not. Worked
 * cases: the first step down fits and the bisection up finds the largest
 * fitting limit; steps that overshoot into limits that plan nothing
 * bisect back up to the fitting band; no fitting limit gives -1 after a
 * bounded number of trials; a limit the search answers is always one it
 * tried and saw fit. And the limit the search steps down from
 * (dt_opt_step_down_from). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "opt_fit_limit.h"

struct landscape {
	int64_t none_below, fits_from, fits_to;
	int tried;
	int64_t last_fit; /* the last limit tried that fit, -1: none */
};

static enum limit_trial plan_within(void *ud, int64_t limit)
{
	struct landscape *l = ud;
	l->tried++;
	if (limit < l->none_below)
		return LIMIT_NONE;
	if (limit < l->fits_from || limit > l->fits_to)
		return LIMIT_OVER;
	l->last_fit = limit;
	return LIMIT_FITS;
}

/* 1000 - 10 = 990 does not fit, 980 does; bisecting up: 985 fits, 987
 * and 986 do not. */
static void test_first_steps_then_up(void **state)
{
	(void)state;
	struct landscape l = {100, 100, 985, 0, -1};
	assert_int_equal(dt_opt_fit_limit(1000, 1000, 10, plan_within, &l), 985);
	assert_int_equal(l.tried, 2 + FIT_LIMIT_BISECTIONS);
}

/* 1000 - 300 = 700 does not fit, 400 plans nothing: between them 550 and
 * 625 plan nothing, 662 fits; up from there 681 and 690 fit, 695 does
 * not. Stepping on down (100, ...) would never reach the band. */
static void test_floor_bisects_back_up(void **state)
{
	(void)state;
	struct landscape l = {650, 650, 690, 0, -1};
	assert_int_equal(dt_opt_fit_limit(1000, 1000, 300, plan_within, &l), 690);
	assert_int_equal(l.last_fit, 690);
	assert_int_equal(l.tried, 2 + 2 * FIT_LIMIT_BISECTIONS);
}

/* Nothing fits: every limit at or above 500 holds too much, below it
 * nothing is planned. */
static void test_none_fits(void **state)
{
	(void)state;
	struct landscape l = {500, 0, -1, 0, -1};
	assert_int_equal(dt_opt_fit_limit(1000, 1000, 300, plan_within, &l), -1);
	assert_true(l.tried <= FIT_LIMIT_STEPS + FIT_LIMIT_BISECTIONS);
	/* the steps stop before a limit of 0 or less */
	struct landscape low = {0, 0, -1, 0, -1};
	assert_int_equal(dt_opt_fit_limit(1000, 1000, 300, plan_within, &low), -1);
	assert_int_equal(low.tried, 2); /* 700, 400; 1000 - 1200 stops */
}

/* Over seeded landscapes the answer is a limit tried and seen to fit,
 * below `from`, and -1 only where no step or bisection met the band. */
static void test_answer_was_seen_to_fit(void **state)
{
	(void)state;
	uint64_t x = 12345;
	for (int i = 0; i < 2000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		int64_t none_below = (int64_t)(x >> 33) % 900 + 1;
		int64_t fits_from = none_below + (int64_t)(x >> 20) % 50;
		int64_t fits_to = fits_from + (int64_t)(x >> 40) % 100;
		int64_t excess = (int64_t)(x >> 50) % 200 + 1;
		struct landscape l = {none_below, fits_from, fits_to, 0, -1};
		int64_t got = dt_opt_fit_limit(1000, 1000, excess, plan_within, &l);
		if (got >= 0) {
			assert_true(got >= fits_from && got <= fits_to);
			assert_true(got < 1000);
		}
		assert_true(l.tried <= FIT_LIMIT_STEPS + 2 * FIT_LIMIT_BISECTIONS);
	}
}

/* Nothing fits below the estimate (700): the steps start again from the
 * search's limit (1000) and find the band above the estimate. */
static void test_again_from_the_limit(void **state)
{
	(void)state;
	struct landscape l = {650, 800, 850, 0, -1};
	int64_t got = dt_opt_fit_limit(1000, 700, 100, plan_within, &l);
	assert_true(got >= 800 && got <= 850);
	assert_int_equal(got, l.last_fit);
	struct landscape once = {650, 800, 850, 0, -1};
	assert_int_equal(dt_opt_fit_limit(700, 700, 100, plan_within, &once),
			 -1);
}

/* Where to step down from: the limit where the estimate is unknown; the
 * estimate where the program is over the budget (the mixer on 4x1:
 * 64728); the estimate plus the bytes spared where it is under (mixer/3d:
 * 37568 + 38436 - 37648); never above the limit. */
static void test_step_down_from(void **state)
{
	(void)state;
	assert_int_equal(dt_opt_step_down_from(66064, 0, 66072, 66064), 66064);
	assert_int_equal(dt_opt_step_down_from(66064, 64728, 66072, 66064),
			 64728);
	assert_int_equal(dt_opt_step_down_from(38436, 37568, 37648, 38436),
			 38356);
	assert_int_equal(dt_opt_step_down_from(38000, 37568, 30000, 38436),
			 38000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_steps_then_up),
	    cmocka_unit_test(test_floor_bisects_back_up),
	    cmocka_unit_test(test_none_fits),
	    cmocka_unit_test(test_answer_was_seen_to_fit),
	    cmocka_unit_test(test_step_down_from),
	    cmocka_unit_test(test_again_from_the_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
