// SPDX-License-Identifier: MIT
/* pass_manager.c: the pass registry, pipeline parsing and the driver that
 * runs passes with their required properties, dumps and timing. */
#include "passes.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

static const struct dt_pass *const registry[] = {
	&dt_pass_verify,
	&dt_pass_shape_infer,
	&dt_pass_shard_prop,
	&dt_pass_lower_redistribute,
	&dt_pass_fuse_collectives,
	&dt_pass_bucket_collectives,
	&dt_pass_schedule_collectives,
	&dt_pass_cancel_views,
	&dt_pass_dce,
};
enum { NPASSES = sizeof(registry) / sizeof(registry[0]) };

double dt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const struct dt_pass *dt_pass_find(const char *name)
{
	for (int i = 0; i < NPASSES; i++)
		if (strcmp(registry[i]->name, name) == 0)
			return registry[i];
	return NULL;
}

bool dt_pass_rewrite_ok(const struct dt_pass_ctx *ctx, const char *pass,
			const char *fmt, ...)
{
	struct dt_bisect *b = ctx->options->bisect;
	if (!b)
		return true;
	bool ok = ++b->count <= b->limit;
	FILE *out = b->out ? b->out : stderr;
	fprintf(out, "BISECT: %srunning rewrite (%lld) %s: ", ok ? "" : "NOT ",
		(long long)b->count, pass);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	return ok;
}

bool dt_pass_listed(const char *list, const char *name)
{
	if (strcmp(list, "all") == 0)
		return true;
	size_t n = strlen(name);
	for (const char *s = list; *s;) {
		size_t len = strcspn(s, ",");
		if (len == n && strncmp(s, name, n) == 0)
			return true;
		s += len;
		if (*s == ',')
			s++;
	}
	return false;
}

bool dt_pass_list_unknown(const char *list, char *buf, size_t size)
{
	if (strcmp(list, "all") == 0)
		return false;
	for (const char *s = list;;) {
		size_t len = strcspn(s, ",");
		snprintf(buf, size, "%.*s", (int)len, s);
		if (!dt_pass_find(buf))
			return true;
		s += len;
		if (*s != ',')
			return false;
		s++;
	}
}

void dt_pass_list(FILE *out)
{
	for (int i = 0; i < NPASSES; i++)
		fprintf(out, "  %-20s %s\n", registry[i]->name, registry[i]->help);
}

int dt_pipeline_parse(struct dt_pipeline *p, const char *text,
		      struct dt_diag *d)
{
	p->npasses = 0;
	const char *s = text;
	while (*s) {
		const char *e = strchr(s, ',');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		char name[64];
		if (n == 0 || n >= sizeof(name)) {
			dt_diag_report(d, DT_ERROR, NULL, 0, NULL,
				       "bad pipeline '%s': empty or overlong pass name",
				       text);
			return DT_EUSAGE;
		}
		memcpy(name, s, n);
		name[n] = 0;
		const struct dt_pass *pass = dt_pass_find(name);
		if (!pass) {
			char known[512] = "";
			for (int i = 0; i < NPASSES; i++) {
				if (i)
					strncat(known, ", ", sizeof(known) - strlen(known) - 1);
				strncat(known, registry[i]->name,
					sizeof(known) - strlen(known) - 1);
			}
			dt_diag_report(d, DT_ERROR, NULL, 0, NULL,
				       "unknown pass '%s' in pipeline (passes: %s)",
				       name, known);
			return DT_EUSAGE;
		}
		if (p->npasses == DT_MAX_PIPELINE) {
			dt_diag_report(d, DT_ERROR, NULL, 0, NULL,
				       "pipeline longer than %d passes",
				       DT_MAX_PIPELINE);
			return DT_EUSAGE;
		}
		p->passes[p->npasses++] = pass;
		s += n;
		if (*s == ',')
			s++;
	}
	if (p->npasses == 0) {
		dt_diag_report(d, DT_ERROR, NULL, 0, NULL, "empty pipeline");
		return DT_EUSAGE;
	}
	return DT_OK;
}

const char *dt_default_pipeline(const struct dt_module *m)
{
	/* A global-view graph is propagated and lowered first. The views and
	 * dead nodes lowering leaves go before bucketing and scheduling,
	 * which weigh the program's memory as it will run (a member computed
	 * straight into a bucket's flat buffer once a view chain between them
	 * is gone, runtime/place.c); those the two passes leave go after. */
	return m->view == DT_VIEW_LOCAL
		       ? "verify,shape-infer,fuse-collectives,cancel-views,dce,"
			 "bucket-collectives,schedule-collectives,cancel-views,dce"
		       : "verify,shape-infer,shard-prop,lower-redistribute,"
			 "fuse-collectives,cancel-views,dce,bucket-collectives,"
			 "schedule-collectives,cancel-views,dce";
}

/* The pass of `reg` (the built-in registry when NULL) that establishes
 * `prop`, or NULL. */
static const struct dt_pass *establisher(const struct dt_pass_registry *reg,
					 uint32_t prop)
{
	const struct dt_pass *const *passes = reg ? reg->passes : registry;
	int n = reg ? reg->npasses : NPASSES;
	for (int i = 0; i < n; i++)
		if (passes[i]->establishes & prop)
			return passes[i];
	return NULL;
}

struct timing {
	const char *name;
	double seconds;
	bool phase; /* a phase of the pass whose row follows */
};

/* Timing rows, one per pass run (prerequisites included), each after the
 * rows of its phases. */
struct dt_pass_timings {
	struct timing rows[DT_MAX_PIPELINE * 8];
	int n;
};

static void add_timing(struct dt_pass_timings *t, struct timing row)
{
	if (t->n < (int)(sizeof(t->rows) / sizeof(t->rows[0])))
		t->rows[t->n++] = row;
}

void dt_pass_phase_time(struct dt_pass_ctx *ctx, const char *phase,
			double seconds)
{
	if (ctx->timings)
		add_timing(ctx->timings, (struct timing){phase, seconds, true});
}

static int run_one(struct dt_module *m, const struct dt_pass *pass,
		   uint32_t *props, const struct dt_pipeline_options *opt,
		   struct dt_diag *d, struct dt_arena *scratch,
		   struct dt_pass_timings *t, int depth);

/* Run the passes that establish what `pass` requires and is missing,
 * until nothing is missing (a prerequisite that drops another's property
 * sends the loop round again); an error when a property has no pass, or
 * the prerequisites nest deeper than DT_MAX_PREREQ_DEPTH or keep undoing
 * each other. */
static int run_prerequisites(struct dt_module *m, const struct dt_pass *pass,
			     uint32_t *props,
			     const struct dt_pipeline_options *opt,
			     struct dt_diag *d, struct dt_arena *scratch,
			     struct dt_pass_timings *t, int depth)
{
	for (int round = 0; pass->requires & ~*props; round++) {
		uint32_t missing = pass->requires & ~*props;
		uint32_t bit = missing & -missing;
		const struct dt_pass *pre = establisher(opt->registry, bit);
		if (!pre) {
			dt_diag_report(d, DT_ERROR, NULL, 0, NULL,
				       "pass '%s' requires property %#x, which "
				       "no pass establishes",
				       pass->name, bit);
			return DT_EUSAGE;
		}
		if (depth >= DT_MAX_PREREQ_DEPTH || round >= 32) {
			dt_diag_report(d, DT_ERROR, NULL, 0, NULL,
				       "pass '%s': its prerequisites %s (last "
				       "tried: '%s')",
				       pass->name,
				       round >= 32 ? "keep undoing each other"
						   : "nest too deep",
				       pre->name);
			return DT_EUSAGE;
		}
		int rc = run_one(m, pre, props, opt, d, scratch, t, depth + 1);
		if (rc != DT_OK)
			return rc;
	}
	return DT_OK;
}

static int run_one(struct dt_module *m, const struct dt_pass *pass,
		   uint32_t *props, const struct dt_pipeline_options *opt,
		   struct dt_diag *d, struct dt_arena *scratch,
		   struct dt_pass_timings *t, int depth)
{
	int rc = run_prerequisites(m, pass, props, opt, d, scratch, t, depth);
	if (rc != DT_OK)
		return rc;
	struct dt_pass_ctx ctx = {m, d, scratch, &opt->pass, t};
	double start = dt_now();
	unsigned errors = d->nerrors;
	rc = pass->run(&ctx);
	if (rc == DT_OK && d->nerrors > errors)
		rc = DT_EINPUT;
	add_timing(t, (struct timing){pass->name, dt_now() - start, false});
	dt_arena_reset(scratch);
	if (rc != DT_OK)
		return rc;
	*props = (*props & pass->preserves) | pass->establishes;
	FILE *dump = opt->dump_out ? opt->dump_out : stderr;
	if (opt->dump_after && dt_pass_listed(opt->dump_after, pass->name)) {
		fprintf(dump, "// ----- dump after %s -----\n", pass->name);
		dt_print_text(m, dump);
	}
	if (opt->after_pass)
		opt->after_pass(opt->after_pass_ud, m, pass);
	if (opt->verify_each && pass != &dt_pass_verify) {
		rc = dt_verify(m, d);
		if (rc != DT_OK) {
			dt_diag_report(d, DT_NOTE, m->file, 0, NULL,
				       "the graph became invalid after pass '%s'",
				       pass->name);
			return rc;
		}
	}
	return DT_OK;
}

int dt_pipeline_run(struct dt_module *m, const struct dt_pipeline *p,
		    const struct dt_pipeline_options *opt, struct dt_diag *d)
{
	struct dt_arena scratch;
	dt_arena_init(&scratch);
	struct dt_pass_timings times;
	times.n = 0;
	uint32_t props = 0;
	int rc = DT_OK;
	for (int i = 0; i < p->npasses && rc == DT_OK; i++)
		rc = run_one(m, p->passes[i], &props, opt, d, &scratch, &times,
			     0);
	dt_arena_fini(&scratch);
	if (opt->time_passes) {
		FILE *out = opt->time_out ? opt->time_out : stderr;
		double total = 0;
		for (int i = 0; i < times.n; i++)
			total += times.rows[i].phase ? 0 : times.rows[i].seconds;
		fprintf(out, "===-- pass timing (%u nodes) --===\n",
			dt_graph_count(m));
		fprintf(out, "  %10s  %6s  %s\n", "seconds", "%", "pass");
		/* A pass, then its phases (recorded before it). */
		for (int i = 0, phases = 0; i < times.n; i++) {
			const struct timing *r = &times.rows[i];
			if (r->phase)
				continue;
			fprintf(out, "  %10.6f  %5.1f%%  %s\n", r->seconds,
				total > 0 ? 100 * r->seconds / total : 0, r->name);
			for (; phases < i; phases++)
				if (times.rows[phases].phase)
					fprintf(out, "  %10.6f  %5.1f%%    %s\n",
						times.rows[phases].seconds,
						total > 0 ? 100 * times.rows[phases].seconds / total : 0,
						times.rows[phases].name);
			phases = i + 1;
		}
		fprintf(out, "  %10.6f  100.0%%  total\n", total);
	}
	return rc;
}
