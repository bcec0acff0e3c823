// SPDX-License-Identifier: MIT
/* fuzz_solver.c: libFuzzer target for the solver's JSON problem reader
 * (`dtopt solve`, solver/json.c), plain or gzip (the bytes go through a
 * file, as the reader takes a path). A problem the reader accepts passed
 * dt_solve_problem_check, so every plan with in-range strategies must be
 * costable: the all-zero plan and each node's last strategy are costed, and
 * a zero-cost problem must cost zero. Build with -Dfuzz=true. */
#include "solver.h"
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void discard(void *ud, const struct dt_diag_entry *e)
{
	(void)ud, (void)e;
}

static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_solver.%ld.json",
			 (long)getpid());
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
		abort();
	struct dt_diag diag;
	dt_diag_init(&diag);
	diag.emit = discard;
	struct dt_solve_problem p;
	if (dt_solve_problem_read(path, &p, &diag) == DT_OK) {
		int32_t *plan = calloc((size_t)p.nnodes + 1, sizeof(*plan));
		int64_t peak;
		dt_solve_plan_cost(&p, plan, &peak);
		if (peak < 0)
			abort();
		for (int32_t i = 0; i < p.nnodes; i++)
			plan[i] = p.nodes[i].nstrategies - 1;
		dt_solve_plan_cost(&p, plan, NULL);
		free(plan);
	}
	dt_solve_problem_fini(&p);
	return 0;
}
