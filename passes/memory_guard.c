// SPDX-License-Identifier: MIT
/* memory_guard.c: trials of a rewrite against --memory-budget (contract in
 * memory_guard.h). A trial costs a clone of the module and one walk of
 * the interpreter's schedule per rank, allocating nothing
 * (dt_memory_plan): O(ranks * (nodes + uses)). */
#include "memory_guard.h"
#include "runtime.h"

#include <math.h>

/* The peak of m's memory plan, HUGE_VAL when it cannot be made. */
static double plan_peak(struct dt_module *m)
{
	size_t peak;
	return dt_memory_plan(m, NULL, &peak, NULL, NULL) == DT_OK
		       ? (double)peak
		       : HUGE_VAL;
}

bool dt_memory_guard_init(struct dt_memory_guard *g, struct dt_pass_ctx *ctx)
{
	if (ctx->options->memory_budget <= 0 || ctx->m->view != DT_VIEW_LOCAL)
		return false;
	g->before = plan_peak(ctx->m);
	g->bound = fmax((double)ctx->options->memory_budget, g->before);
	return g->before != HUGE_VAL;
}

void dt_memory_trial_begin(struct dt_pass_ctx *trial, struct dt_diag *quiet,
			   const struct dt_pass_ctx *ctx)
{
	dt_diag_init_quiet(quiet);
	*trial = *ctx;
	trial->m = dt_module_clone(ctx->m);
	trial->diag = quiet;
}

double dt_memory_trial_end(struct dt_pass_ctx *trial)
{
	double peak = plan_peak(trial->m);
	dt_module_destroy(trial->m);
	trial->m = NULL;
	return peak;
}
