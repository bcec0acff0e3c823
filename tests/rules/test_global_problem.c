// SPDX-License-Identifier: MIT
/* test_global_problem.c: the whole-graph problems opt's replan shares
 * (dt_shard_problem_cache, passes/shard_prop_global.c), on the golden
 * global_replan.xml (mlp_sgd on 2x2x2, whose memory budget binds; its
 * path is the first argument). shard-prop builds a clone's problem once:
 * a run on another clone under another usage limit takes it and plans as
 * a run without the cache does under that limit (not as the first run
 * did), a run under a limit solved before takes that plan without
 * solving, a run pricing graph inputs unbucketed builds its own and the
 * next such run takes that, and a second shard-prop in one pipeline (the
 * graph has redistributions then) builds again. Builds and solves show
 * as the pass's phases "whole-graph problem build" and "whole-graph
 * solve" in --time-passes' table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"
#include "passes.h"

static const char *graph_path;

/* The budget the golden's commands give and the limit its kept plan was
 * found within (global_replan.xml.run, global_replan.expected). */
#define BUDGET 21636
#define KEPT_LIMIT 18820

struct run {
	char *program; /* the graph after the pipeline, as written */
	int builds;    /* the problem builds its timing table shows */
	int solves;    /* the solves it shows */
};

static int count(const char *text, const char *what)
{
	int n = 0;
	for (const char *at = text; (at = strstr(at, what)); at += strlen(what))
		n++;
	return n;
}

static char *read_all(FILE *f)
{
	long n = ftell(f);
	char *text = calloc((size_t)n + 1, 1);
	rewind(f);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

/* Run `pipeline` on a clone of m with `search_budget` (0: the budget's)
 * and the cache (NULL: none). */
static struct run run_on(const struct dt_module *m, const char *pipeline,
			 struct dt_shard_problem_cache *cache,
			 int64_t search_budget, bool inputs_unbucketed)
{
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_pipeline p;
	assert_int_equal(dt_pipeline_parse(&p, pipeline, &d), DT_OK);
	FILE *times = tmpfile();
	assert_non_null(times);
	struct dt_pipeline_options o = {
	    .time_passes = true,
	    .time_out = times,
	    .pass = {.create_groups = true,
		     .memory_budget = BUDGET,
		     .search_budget = search_budget,
		     .search_inputs_unbucketed = inputs_unbucketed,
		     .problem_cache = cache}};
	struct dt_module *c = dt_module_clone(m);
	assert_int_equal(dt_pipeline_run(c, &p, &o, &d), DT_OK);
	FILE *out = tmpfile();
	assert_non_null(out);
	assert_int_equal(dt_write_stream(c, out), DT_OK);
	dt_module_destroy(c);
	struct run r = {.program = read_all(out)};
	char *table = read_all(times);
	r.builds = count(table, "whole-graph problem build");
	r.solves = count(table, "whole-graph solve");
	free(table);
	return r;
}

static void test_replans_share_the_problem(void **state)
{
	(void)state;
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_read_options ropt = {0};
	struct dt_module *m = NULL;
	assert_int_equal(dt_read_file(graph_path, &ropt, &d, &m), DT_OK);
	const char *prop = "verify,shape-infer,shard-prop";
	struct dt_shard_problem_cache *cache = dt_shard_problem_cache_create();

	struct run first = run_on(m, prop, cache, 0, false);
	assert_int_equal(first.builds, 1);
	assert_int_equal(first.solves, 1);
	struct run again = run_on(m, prop, cache, KEPT_LIMIT, false);
	assert_int_equal(again.builds, 0);
	assert_int_equal(again.solves, 1);
	struct run fresh = run_on(m, prop, NULL, KEPT_LIMIT, false);
	assert_int_equal(fresh.builds, 1);
	assert_string_equal(again.program, fresh.program);
	/* The limit mattered: the first run's plan is another. */
	assert_string_not_equal(again.program, first.program);
	struct run solved = run_on(m, prop, cache, KEPT_LIMIT, false);
	assert_int_equal(solved.builds + solved.solves, 0);
	assert_string_equal(solved.program, again.program);

	struct run unbucketed = run_on(m, prop, cache, KEPT_LIMIT, true);
	assert_int_equal(unbucketed.builds, 1);
	struct run unbucketed_again = run_on(m, prop, cache, KEPT_LIMIT, true);
	assert_int_equal(unbucketed_again.builds, 0);
	assert_string_equal(unbucketed.program, unbucketed_again.program);

	struct run twice = run_on(m, "verify,shape-infer,shard-prop,shard-prop",
				  cache, 0, false);
	assert_int_equal(twice.builds, 1);

	struct run *runs[] = {&first, &again, &fresh, &solved, &unbucketed,
			      &unbucketed_again, &twice};
	for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
		free(runs[k]->program);
	dt_shard_problem_cache_destroy(cache);
	dt_module_destroy(m);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s global_replan.xml\n", argv[0]);
		return 2;
	}
	graph_path = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replans_share_the_problem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
