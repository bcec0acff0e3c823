// SPDX-License-Identifier: MIT
/* opt_fit_limit.c: the search for a usage limit whose program fits
 * --memory-budget (opt_fit_limit.h). */
#include "opt_fit_limit.h"

int64_t dt_opt_step_down_from(int64_t limit, int64_t estimate, int64_t peak,
			      int64_t budget)
{
	if (estimate <= 0)
		return limit;
	int64_t from = estimate + (peak < budget ? budget - peak : 0);
	return from < limit ? from : limit;
}

/* dt_opt_fit_limit from one start. */
static int64_t fit_below(int64_t from, int64_t excess,
			 enum limit_trial (*try)(void *ud, int64_t limit),
			 void *ud)
{
	int64_t over = from, none = 0, fits = -1;
	for (int i = 0; i < FIT_LIMIT_STEPS && fits < 0; i++) {
		int64_t limit = from - (excess << i);
		if (limit <= 0)
			break;
		enum limit_trial r = try(ud, limit);
		if (r == LIMIT_NONE) {
			none = limit;
			break;
		}
		if (r == LIMIT_FITS)
			fits = limit;
		else
			over = limit;
	}
	for (int k = 0;
	     k < FIT_LIMIT_BISECTIONS && fits < 0 && none > 0 && over - none > 1;
	     k++) {
		int64_t mid = none + (over - none) / 2;
		enum limit_trial r = try(ud, mid);
		if (r == LIMIT_FITS)
			fits = mid;
		else if (r == LIMIT_OVER)
			over = mid;
		else
			none = mid;
	}
	for (int k = 0; k < FIT_LIMIT_BISECTIONS && fits >= 0 && over - fits > 1;
	     k++) {
		int64_t mid = fits + (over - fits) / 2;
		if (try(ud, mid) == LIMIT_FITS)
			fits = mid;
		else
			over = mid;
	}
	return fits;
}

int64_t dt_opt_fit_limit(int64_t limit, int64_t from, int64_t excess,
			 enum limit_trial (*try)(void *ud, int64_t limit),
			 void *ud)
{
	int64_t fits = fit_below(from, excess, try, ud);
	if (fits < 0 && from < limit)
		fits = fit_below(limit, excess, try, ud);
	return fits;
}
