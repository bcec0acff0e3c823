// SPDX-License-Identifier: MIT
/* opt_fit_limit.h: how `opt` searches for a usage limit of the
 * whole-graph search whose program fits --memory-budget (its replan,
 * opt_replan.c, and every rank's joint fit, opt_ranks.c). */
#ifndef DTOPT_OPT_FIT_LIMIT_H
#define DTOPT_OPT_FIT_LIMIT_H

#include <stdint.h>

/* Steps of dt_opt_fit_limit down from its first limit. */
#define FIT_LIMIT_STEPS 8

/* Bisection steps of dt_opt_fit_limit: between the first limit whose
 * program fits and the least one above it whose program does not, or
 * towards one that fits between a limit that plans nothing and one whose
 * program does not fit. */
#define FIT_LIMIT_BISECTIONS 3

/* What planning within a usage limit gave: a program that fits
 * --memory-budget, one that does not, or none (the search found no plan
 * within the limit). */
enum limit_trial { LIMIT_FITS, LIMIT_OVER, LIMIT_NONE };

/* The usage limit to step down from for a plan other than one planned
 * within `limit`, estimated by the search at `estimate` bytes (0:
 * unknown), whose program holds `peak` as run under --memory-budget
 * `budget`: the lower of `limit` and estimate + (budget - peak, where
 * positive). A limit at or above the estimate keeps that plan within it,
 * and the search keeps it; a program with bytes to spare under the budget
 * needs its plan's estimate lowered only by what it needs beyond them, as
 * lowering adds to the estimate about what it added before. */
int64_t dt_opt_step_down_from(int64_t limit, int64_t estimate, int64_t peak,
			      int64_t budget);

/* The search for a usage limit whose program fits --memory-budget, below
 * `from` (a limit that keeps a plan whose program does not fit, at most
 * the search's `limit`): down by
 * excess·2^i (excess > 0, i = 0..FIT_LIMIT_STEPS-1) up to the first limit
 * whose program fits, stopping at one that plans nothing; from there,
 * bisecting towards a fitting limit between it and the last that did not
 * fit; then bisecting up towards the least limit above the one that fits
 * whose program does not (a limit cut by the whole excess is often more
 * than the estimate's error needs). Where none fits and `from` is below
 * `limit`, the same from `limit`: the search is a heuristic, and a limit
 * above a plan's estimate can still find another plan (odd_mlp_sgd_3d.xml
 * per rank under 8000 bytes: from the estimate, 7324, nothing fits; from
 * 8000, 7958 does). `try` plans one limit (ud its state). Returns the
 * largest limit found that fits, -1 where none does. */
int64_t dt_opt_fit_limit(int64_t limit, int64_t from, int64_t excess,
			 enum limit_trial (*try)(void *ud, int64_t limit),
			 void *ud);

#endif
