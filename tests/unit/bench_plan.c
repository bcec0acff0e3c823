// SPDX-License-Identifier: MIT
/* bench_plan.c: planning time per redistribution (redistribute/redistribute.h)
 * on 1-D to 4-D meshes: DTensor's greedy plan plus merging, and the
 * min-cost (Dijkstra) plan for non-default shard orders. Prints one line
 * per case: mesh, request, steps, states expanded, µs per plan.
 *
 *     bench_plan [ITERATIONS]   (default 2000; min-cost cases run a tenth) */
#include "passes.h"
#include "redistribute.h"

#include <stdlib.h>
#include <string.h>

struct bench_case {
	int ndim;
	int64_t mesh[4];
	const char *src, *dst, *src_order, *dst_order;
	int rank;
	int64_t shape[3];
};

static const struct bench_case cases[] = {
	{1, {8}, "S(0)", "R", NULL, NULL, 2, {64, 64}},
	{1, {8}, "P(sum)", "S(1)", NULL, NULL, 2, {64, 64}},
	{2, {4, 2}, "S(0) S(1)", "S(1) S(0)", NULL, NULL, 2, {64, 64}},
	{2, {4, 2}, "P(sum) P(sum)", "S(0) S(0)", NULL, NULL, 2, {64, 64}},
	{2, {4, 2}, "S(0) S(0)", "R R", "0:B,A", NULL, 2, {64, 64}},
	{2, {4, 2}, "S(0) S(0)", "S(1) S(0)", "0:B,A", NULL, 2, {64, 64}},
	{3, {2, 2, 2}, "S(0) S(0) S(0)", "S(1) S(1) S(1)", NULL, NULL, 3,
	 {64, 64, 64}},
	{3, {2, 2, 2}, "P(sum) P(sum) S(0)", "S(0) S(0) S(0)", NULL, NULL, 3,
	 {64, 64, 64}},
	{3, {2, 2, 2}, "S(0) S(0) S(0)", "S(1) S(1) S(1)", "0:C,B,A", NULL, 3,
	 {64, 64, 64}},
	{3, {2, 2, 2}, "P(sum) S(0) S(0)", "S(1) S(1) S(1)", "0:C,B",
	 "1:C,B,A", 3, {64, 64, 64}},
	{4, {2, 2, 2, 2}, "S(0) S(0) S(0) S(0)", "S(1) S(1) S(1) S(1)", NULL,
	 NULL, 3, {64, 64, 64}},
	{4, {2, 2, 2, 2}, "P(sum) P(sum) P(sum) P(sum)", "R R R R", NULL,
	 NULL, 3, {64, 64, 64}},
	{4, {2, 2, 2, 2}, "S(0) S(0) S(0) S(0)", "R R R R", "0:D,C,B,A",
	 NULL, 3, {64, 64, 64}},
	{4, {2, 2, 2, 2}, "S(0) S(0) S(1) S(1)", "S(1) S(1) S(0) S(0)",
	 "0:B,A 1:D,C", NULL, 3, {64, 64, 64}},
	{4, {2, 2, 2, 2}, "S(0) S(1) S(2) S(0)", "S(2) S(2) S(1) S(1)",
	 "0:D,A", "1:D,C 2:B,A", 3, {64, 64, 64}},
};

static struct dt_module *make_module(const struct bench_case *c)
{
	struct dt_module *m = dt_module_create("bench");
	struct dt_mesh mesh = {.name = dt_str_intern(m, "world"),
			       .ndim = (uint8_t)c->ndim, .size = 1};
	struct dt_group all = {.name = dt_str_intern(m, "all"),
			       .ndims = (uint8_t)c->ndim};
	for (int d = 0; d < c->ndim; d++) {
		char name[2] = {(char)('A' + d), 0};
		mesh.shape[d] = c->mesh[d];
		mesh.size *= c->mesh[d];
		mesh.dims[d] = dt_str_intern(m, name);
		all.dims[d] = (uint8_t)d;
	}
	dt_vec_push(&m->meshes, mesh);
	dt_vec_push(&m->groups, all);
	return m;
}

int main(int argc, char **argv)
{
	long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	if (iterations < 1)
		iterations = 1;
	printf("%-10s %-7s %-62s %5s %7s %10s\n", "mesh", "plan", "request",
	       "steps", "states", "us/plan");
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct bench_case *c = &cases[i];
		struct dt_module *m = make_module(c);
		struct dt_redist_request req = {.mesh = &m->meshes.data[0],
						.dtype = DT_FLOAT32,
						.rank = c->rank};
		memcpy(req.shape, c->shape, sizeof c->shape);
		char err[256];
		if (!dt_placements_parse(&req.src, c->src, c->src_order,
					 req.mesh, &m->strings, err, sizeof err) ||
		    !dt_placements_parse(&req.dst, c->dst, c->dst_order,
					 req.mesh, &m->strings, err, sizeof err)) {
			fprintf(stderr, "bench_plan: case %zu: %s\n", i, err);
			return 1;
		}
		struct dt_redist_merge_options opt = {.module = m};
		struct dt_redist_plan plan;
		bool min_cost = c->src_order || c->dst_order;
		long n = min_cost ? (iterations + 9) / 10 : iterations;
		uint32_t steps = 0, states = 0;
		double start = dt_now();
		for (long k = 0; k < n; k++) {
			if (dt_redist_plan_init(&plan, &req, err, sizeof err) !=
			    DT_OK) {
				fprintf(stderr, "bench_plan: case %zu: %s\n", i,
					err);
				return 1;
			}
			dt_redist_plan_merge(&plan, &opt);
			steps = plan.steps.len;
			states = plan.states;
			dt_redist_plan_fini(&plan);
		}
		double us = (dt_now() - start) * 1e6 / (double)n;
		char mesh[32], request[128];
		size_t at = 0;
		for (int d = 0; d < c->ndim; d++)
			at += (size_t)snprintf(mesh + at, sizeof mesh - at, "%s%lld",
					       d ? "x" : "", (long long)c->mesh[d]);
		snprintf(request, sizeof request, "%s%s%s -> %s%s%s", c->src,
			 c->src_order ? " @" : "", c->src_order ? c->src_order : "",
			 c->dst, c->dst_order ? " @" : "",
			 c->dst_order ? c->dst_order : "");
		printf("%-10s %-7s %-62s %5u %7u %10.2f\n", mesh,
		       min_cost ? "min" : "greedy", request, steps, states, us);
		dt_module_destroy(m);
	}
	return 0;
}
