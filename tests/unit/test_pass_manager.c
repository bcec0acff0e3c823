// SPDX-License-Identifier: MIT
/* test_pass_manager.c: the pass manager driven by fake passes (their own
 * registry, dt_pipeline_options.registry): prerequisites run first and in
 * order, what a pass preserves stays and what it drops is established
 * again, a prerequisite that drops another's property sends the manager
 * round again, a chain deeper than DT_MAX_PREREQ_DEPTH, a pass requiring
 * what only it establishes and a property nobody establishes are errors
 * (no pass runs without its prerequisites), and a failing pass stops the
 * pipeline. The log of each run is the names of the passes, in order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "passes.h"

enum { P1 = 1 << 4, P2 = 1 << 5, P3 = 1 << 6 };

static char run_log[512];

static void log_pass(const char *name)
{
	if (run_log[0])
		strncat(run_log, " ", sizeof run_log - strlen(run_log) - 1);
	strncat(run_log, name, sizeof run_log - strlen(run_log) - 1);
}

/* Passes whose run logs their name: one function per pass. */
#define LOGGING_FAKE(var, nm, req, est, pres)                              \
	static int run_##var(struct dt_pass_ctx *ctx)                      \
	{                                                                  \
		(void)ctx;                                                 \
		log_pass(nm);                                              \
		return DT_OK;                                              \
	}                                                                  \
	static const struct dt_pass var = {.name = nm, .help = "",         \
					   .requires = (req),              \
					   .establishes = (est),           \
					   .preserves = (pres),            \
					   .run = run_##var}

/* est1 establishes P1; est2 P2 and needs P1, keeping it; drop2 establishes
 * P2 and keeps nothing else; keep1 keeps P1; drop_all keeps nothing. */
LOGGING_FAKE(est1, "est1", 0, P1, ~0u);
LOGGING_FAKE(est2, "est2", P1, P2, P1);
LOGGING_FAKE(drop2, "drop2", 0, P2, 0);
LOGGING_FAKE(keep1, "keep1", 0, 0, P1);
LOGGING_FAKE(drop_all, "drop_all", 0, 0, 0);
LOGGING_FAKE(need1, "need1", P1, 0, ~0u);
LOGGING_FAKE(need12, "need12", P1 | P2, 0, ~0u);
LOGGING_FAKE(self, "self", P3, P3, ~0u);

static int run_fail(struct dt_pass_ctx *ctx)
{
	log_pass("fail");
	dt_diag_report(ctx->diag, DT_ERROR, NULL, 0, NULL, "fake failure");
	return DT_EINPUT;
}
static const struct dt_pass fail = {.name = "fail", .help = "",
				    .preserves = ~0u, .run = run_fail};

/* A chain: chain[i] requires bit i+1 and establishes bit i. */
enum { CHAIN = DT_MAX_PREREQ_DEPTH + 2 };
static int run_link(struct dt_pass_ctx *ctx)
{
	(void)ctx;
	log_pass("link");
	return DT_OK;
}
static struct dt_pass chain[CHAIN];
static const struct dt_pass *chain_passes[CHAIN];

static unsigned errors;
static char last_error[256];
static void catch(void *ud, const struct dt_diag_entry *e)
{
	(void)ud;
	if (e->severity == DT_ERROR) {
		errors++;
		snprintf(last_error, sizeof last_error, "%s", e->message);
	}
}

/* Run `n` passes of `pipe` with `reg` giving prerequisites. */
static int run(const struct dt_pass *const *pipe, int n,
	       const struct dt_pass *const *reg, int nreg)
{
	run_log[0] = 0;
	errors = 0;
	last_error[0] = 0;
	struct dt_module *m = dt_module_create("fake.xml");
	struct dt_diag d;
	dt_diag_init(&d);
	d.emit = catch;
	struct dt_pipeline p = {.npasses = n};
	for (int i = 0; i < n; i++)
		p.passes[i] = pipe[i];
	struct dt_pass_registry r = {reg, nreg};
	struct dt_pipeline_options opt = {.registry = &r};
	int rc = dt_pipeline_run(m, &p, &opt, &d);
	dt_module_destroy(m);
	return rc;
}

static const struct dt_pass *const registry[] = {&est1, &est2, &drop2,
						  &keep1, &drop_all, &self};
enum { NREG = sizeof registry / sizeof registry[0] };

static void test_prerequisites_in_order(void **state)
{
	(void)state;
	/* need12 needs P1 and P2: est1 first (est2 needs P1), then est2
	 * (the registry's first establisher of P2). */
	const struct dt_pass *pipe[] = {&need12};
	assert_int_equal(run(pipe, 1, registry, NREG), DT_OK);
	assert_string_equal(run_log, "est1 est2 need12");
	/* Met by the pipeline itself: nothing extra runs. */
	const struct dt_pass *pipe2[] = {&est1, &est2, &need12};
	assert_int_equal(run(pipe2, 3, registry, NREG), DT_OK);
	assert_string_equal(run_log, "est1 est2 need12");
}

static void test_preserved_property_stays(void **state)
{
	(void)state;
	const struct dt_pass *pipe[] = {&est1, &keep1, &need1};
	assert_int_equal(run(pipe, 3, registry, NREG), DT_OK);
	assert_string_equal(run_log, "est1 keep1 need1");
}

static void test_dropped_property_is_established_again(void **state)
{
	(void)state;
	const struct dt_pass *pipe[] = {&est1, &drop_all, &need1};
	assert_int_equal(run(pipe, 3, registry, NREG), DT_OK);
	assert_string_equal(run_log, "est1 drop_all est1 need1");
	/* What a pass establishes holds after it even when it keeps
	 * nothing else. */
	const struct dt_pass *pipe2[] = {&drop2, &est1, &need12};
	assert_int_equal(run(pipe2, 3, registry, NREG), DT_OK);
	assert_string_equal(run_log, "drop2 est1 need12");
}

static void test_prerequisite_dropping_another(void **state)
{
	(void)state;
	/* P2's establisher here is drop2, which drops P1 that est1 just
	 * set: est1 must run again before need12. */
	const struct dt_pass *const reg[] = {&est1, &drop2};
	const struct dt_pass *pipe[] = {&need12};
	assert_int_equal(run(pipe, 1, reg, 2), DT_OK);
	assert_string_equal(run_log, "est1 drop2 est1 need12");
}

static void test_chain_too_deep_is_an_error(void **state)
{
	(void)state;
	for (int i = 0; i < CHAIN; i++) {
		chain[i] = (struct dt_pass){
			.name = "link", .help = "",
			.requires = i + 1 < CHAIN ? 1u << (i + 1) : 0,
			.establishes = 1u << i, .preserves = ~0u,
			.run = run_link};
		chain_passes[i] = &chain[i];
	}
	/* Requiring bit 0 needs every link: CHAIN - 1 levels of nesting,
	 * more than DT_MAX_PREREQ_DEPTH. Nothing runs. */
	const struct dt_pass *pipe[] = {&chain[0]};
	assert_int_equal(run(pipe, 1, chain_passes, CHAIN), DT_EUSAGE);
	assert_string_equal(run_log, "");
	assert_int_equal(errors, 1);
	assert_non_null(strstr(last_error, "nest too deep"));
	/* A chain of exactly DT_MAX_PREREQ_DEPTH prerequisites is fine. */
	const struct dt_pass *pipe2[] = {&chain[CHAIN - DT_MAX_PREREQ_DEPTH - 1]};
	assert_int_equal(run(pipe2, 1, chain_passes, CHAIN), DT_OK);
	char want[512] = "";
	for (int i = 0; i <= DT_MAX_PREREQ_DEPTH; i++)
		strcat(want, i ? " link" : "link");
	assert_string_equal(run_log, want);
}

static void test_self_requirement_is_an_error(void **state)
{
	(void)state;
	const struct dt_pass *pipe[] = {&self};
	assert_int_equal(run(pipe, 1, registry, NREG), DT_EUSAGE);
	assert_string_equal(run_log, "");
	assert_int_equal(errors, 1);
}

static void test_unestablished_property_is_an_error(void **state)
{
	(void)state;
	const struct dt_pass *const reg[] = {&est1};
	const struct dt_pass *pipe[] = {&need12};
	assert_int_equal(run(pipe, 1, reg, 1), DT_EUSAGE);
	assert_string_equal(run_log, "est1");
	assert_non_null(strstr(last_error, "no pass establishes"));
}

static void test_failure_stops_the_pipeline(void **state)
{
	(void)state;
	const struct dt_pass *pipe[] = {&est1, &fail, &need1};
	assert_int_equal(run(pipe, 3, registry, NREG), DT_EINPUT);
	assert_string_equal(run_log, "est1 fail");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prerequisites_in_order),
		cmocka_unit_test(test_preserved_property_stays),
		cmocka_unit_test(test_dropped_property_is_established_again),
		cmocka_unit_test(test_prerequisite_dropping_another),
		cmocka_unit_test(test_chain_too_deep_is_an_error),
		cmocka_unit_test(test_self_requirement_is_an_error),
		cmocka_unit_test(test_unestablished_property_is_an_error),
		cmocka_unit_test(test_failure_stops_the_pipeline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
