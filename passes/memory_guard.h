// SPDX-License-Identifier: MIT
/* memory_guard.h: keeping the passes after lower-redistribute within
 * --memory-budget (semantics §4.7). Bucketing and overlap trade memory for
 * time; under a budget such a pass tries its rewrite on a copy of the
 * module (a trial) and keeps it only where the program's memory plan as
 * the interpreter runs it (dt_memory_plan: values and collective buffers,
 * the most any rank holds at once) stays within
 *
 *     bound = max(budget, the peak before the pass),
 *
 * so a plan that fits the budget keeps fitting, and one that does not (the
 * search could not fit it) gets no worse. */
#ifndef DT_MEMORY_GUARD_H
#define DT_MEMORY_GUARD_H

#include "passes.h"

struct dt_memory_guard {
	double before; /* the module's peak when the pass started, bytes */
	double bound;  /* what a trial may reach */
};

/* Whether ctx's pass must guard its rewrite: a budget was given, the
 * module is local view and its plan can be made. Then fills g. */
bool dt_memory_guard_init(struct dt_memory_guard *g, struct dt_pass_ctx *ctx);

/* A trial of a rewrite: *trial is ctx with a clone of its module and a
 * diag that drops every message (`quiet`, which must outlive the trial). */
void dt_memory_trial_begin(struct dt_pass_ctx *trial, struct dt_diag *quiet,
			   const struct dt_pass_ctx *ctx);
/* The peak of the trial's module (HUGE_VAL when no plan can be made);
 * destroys that module. */
double dt_memory_trial_end(struct dt_pass_ctx *trial);

#endif
