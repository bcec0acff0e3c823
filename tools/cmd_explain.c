// SPDX-License-Identifier: MIT
/* cmd_explain.c: the `explain` subcommand: why shard-prop gave a node of a
 * global-view graph its placements. By default the whole-graph search's
 * reasons (cmd_explain_global.c); with --search=greedy (or where shard-prop
 * falls back to it) it runs shard-prop up to the node and prints the
 * node's single-dim rows, the rows expanded with its inputs' sharding
 * kinds, the number of strategies, what the priority-queue and the
 * exhaustive searches weighed, the chosen strategy with the moves it costs
 * its inputs, and the runners-up, as text or JSON. */
#include "cli.h"
#include "frontend.h"
#include "passes.h"
#include "redistribute.h"
#include "sharding.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXPLAIN_CMD "explain"
#define MAX_TOP 64

static const char explain_help[] =
    "usage: dtopt explain GRAPH.xml NODE [options]\n"
    "\n"
    "Explain the placements shard-prop chooses for NODE of a global-view\n"
    "graph: by default the strategy the whole-graph search gives it and why;\n"
    "with --search=greedy its single-dim rules, their expansion to the mesh,\n"
    "the number of strategies, the chosen one and the runners-up with their\n"
    "modelled redistribution costs, and why.\n"
    "\n"
    "  -f, --format=FMT       text (default) or json\n"
    "  -o, --output=FILE      write to FILE (- for stdout, the default),\n"
    "                         atomically, and not on error\n"
    "      --search=global    the whole-graph search (the default): the\n"
    "                         strategy its plan gives the node, its compute,\n"
    "                         moves and memory, and why a locally cheaper one\n"
    "                         lost (the greedy search's explanation, with a\n"
    "                         warning, where shard-prop would fall back to it)\n"
    "      --search=greedy|exhaustive  the node-by-node search instead\n"
    "                         (greedy also 'pq'; both give the same strategy):\n"
    "                         the node's rules, strategies and runners-up\n"
    "      --create-groups    (global) price moves merged onto flattened\n"
    "                         groups the graph lacks, as opt --create-groups\n"
    "                         lowers them\n"
    "      --memory-budget=BYTES  (global) plan within BYTES per rank, as\n"
    "                         opt --memory-budget plans first, and give each\n"
    "                         strategy's plan peak: which ones the budget\n"
    "                         rules out (where opt plans again, its remark\n"
    "                         opt:replan names the limit to explain at)\n"
    "      --top N            runners-up to list (default 5, at most 64)\n"
    "  -h, --help             this text\n";

struct explain_args {
	const char *graph, *node;
	const char *output;
	bool json, create_groups;
	enum dt_shard_search mode;
	int top;
	int64_t memory_budget;
	struct dt_cli_topology topology;
};

/* The best `cap` strategies by dt_shard_choice_compare, and counts. */
struct ranking {
	struct dt_shard_choice best[MAX_TOP + 1];
	int n, cap;
	uint64_t finite;
	double min_cost;
	uint64_t ties; /* strategies at the least cost */
};

static void rank_choice(void *ud, const struct dt_shard_choice *c)
{
	struct ranking *r = ud;
	r->finite++;
	if (r->finite == 1 || c->cost < r->min_cost) {
		r->min_cost = c->cost;
		r->ties = 0;
	}
	if (c->cost == r->min_cost)
		r->ties++;
	int at = r->n;
	while (at > 0 && dt_shard_choice_compare(c, &r->best[at - 1]) < 0)
		at--;
	if (at >= r->cap)
		return;
	if (r->n < r->cap)
		r->n++;
	struct dt_shard_choice spare = r->best[r->n - 1];
	memmove(&r->best[at + 1], &r->best[at],
		(size_t)(r->n - 1 - at) * sizeof spare);
	r->best[at] = spare;
	dt_shard_choice_copy(&r->best[at], c);
}

/* Everything explained about the node. */
struct explanation {
	struct dt_module *m;
	bool ready;        /* weighed: printable (even when shard-prop failed) */
	uint32_t node;
	const struct dt_mesh *mesh;
	struct dt_topology topology;
	struct dt_shard_watch watch;
	struct dt_rules rules;
	struct dt_shard_space space;
	struct dt_shard_choice chosen, oracle;
	double toward_pin; /* pin unmet: chosen's cost plus the move to it */
	bool agree;	   /* both searches chose the same strategy */
	struct dt_shard_stats pq, exhaustive;
	struct ranking ranking;
	uint64_t valid;
	enum dt_shard_search mode;
};

static void pl_text(const struct dt_placements *pl, char *buf, size_t n)
{
	dt_placements_print(pl, buf, n);
}

static void placement_text(const struct dt_placement *p, char *buf, size_t n)
{
	struct dt_placements one = {.ndim = 1};
	one.p[0] = *p;
	dt_placements_print(&one, buf, n);
}

static void tensor_text(const struct dt_rule_tensor *t, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "%s[",
				     dt_dtype_name((enum dt_dtype)t->dtype));
	for (int d = 0; d < t->rank && at < n; d++)
		at += (size_t)snprintf(buf + at, n - at, "%s%lld",
				       d ? ", " : "", (long long)t->shape[d]);
	if (at < n)
		snprintf(buf + at, n - at, "]");
}

static const char *input_name(const struct explanation *e, uint32_t i)
{
	return dt_str_get(e->m,
			  dt_node_get(e->m, e->watch.values.data[i])->name);
}

static const char *param_name(const struct explanation *e, uint32_t i)
{
	const struct dt_rule_tensor *t = dt_rules_input(&e->rules, i);
	return dt_op_get(e->rules.op)->params[t->param].name;
}

/* "OUT, OUT <- IN, IN" for expanded row `row` (ignored inputs "-"). */
static void row_text(const struct explanation *e, uint32_t row, char *buf,
		     size_t n)
{
	const struct dt_placement *p = dt_shard_space_row(&e->space, row);
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t k = 0; k < e->space.width && at < n; k++) {
		char one[32];
		if (k >= e->rules.nout &&
		    dt_rules_input(&e->rules, k - e->rules.nout)->ignored)
			snprintf(one, sizeof one, "-");
		else
			placement_text(&p[k], one, sizeof one);
		at += (size_t)snprintf(buf + at, n - at, "%s%s",
				       k == 0		    ? ""
				       : k == e->rules.nout ? " <- "
							    : ", ",
				       one);
	}
	if (e->rules.nin == 0 && at < n)
		snprintf(buf + at, n - at, " <-");
}

/* "OUT; OUT <- IN, IN" for a strategy's N-D placements. */
static void strategy_text(const struct explanation *e,
			  const struct dt_shard_choice *c, char *buf, size_t n)
{
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t k = 0; k < e->space.width && at < n; k++) {
		char one[128];
		pl_text(&c->placements.data[k], one, sizeof one);
		at += (size_t)snprintf(buf + at, n - at, "%s[%s]",
				       k == 0		    ? ""
				       : k == e->rules.nout ? " <- "
							    : ", ",
				       one);
	}
	if (e->rules.nin == 0 && at < n)
		snprintf(buf + at, n - at, " <-");
}

/* The plan moving input i from its current placements to `to`: steps as
 * "all_gather(tp) 41.81 us, chunk(dp)"; "stays" when nothing moves. */
static void moves_text(const struct explanation *e, uint32_t i,
		       const struct dt_placements *to, char *buf, size_t n)
{
	const struct dt_placements *from = &e->watch.current.data[i];
	if (dt_placements_equal(from, to)) {
		snprintf(buf, n, "stays");
		return;
	}
	const struct dt_rule_tensor *t = dt_rules_input(&e->rules, i);
	struct dt_redist_request req = {.mesh = e->mesh,
					.topology = &e->topology,
					.dtype = (enum dt_dtype)t->dtype,
					.rank = t->rank,
					.src = *from,
					.dst = *to};
	memcpy(req.shape, t->shape, sizeof req.shape);
	struct dt_redist_plan plan;
	char err[256];
	if (dt_redist_plan_init(&plan, &req, err, sizeof err) != DT_OK) {
		snprintf(buf, n, "impossible: %s", err);
		return;
	}
	size_t at = 0;
	buf[0] = 0;
	for (uint32_t s = 0; s < plan.steps.len && at < n; s++) {
		const struct dt_redist_step *st = &plan.steps.data[s];
		const char *dim = dt_str_get(e->m, e->mesh->dims[st->dims[0]]);
		bool reduce = st->kind == DT_REDIST_ALL_REDUCE ||
			      st->kind == DT_REDIST_REDUCE_SCATTER ||
			      st->kind == DT_REDIST_PARTITION;
		char op[48];
		snprintf(op, sizeof op, "%s%s%s%s",
			 dt_redist_kind_name(st->kind), reduce ? "(" : "",
			 reduce ? dt_reduce_name(st->reduce) : "",
			 reduce ? ")" : "");
		if (dt_redist_kind_comm(st->kind) >= 0)
			at += (size_t)snprintf(
			    buf + at, n - at, "%s%s on %s %.2f us",
			    s ? ", " : "", op, dim, st->cost_us);
		else
			at += (size_t)snprintf(buf + at, n - at,
					       "%s%s on %s (local)",
					       s ? ", " : "", op, dim);
	}
	dt_redist_plan_fini(&plan);
}

/* Why the chosen strategy won, in a sentence. */
static void why_text(const struct explanation *e, char *buf, size_t n)
{
	const struct dt_shard_choice *c = &e->chosen;
	if (c->cost == 0 && c->changes == 0)
		snprintf(buf, n,
			 "the inputs already are as a strategy needs: nothing "
			 "moves");
	else
		snprintf(
		    buf, n,
		    "no strategy costs less than %.2f us of redistribution%s",
		    c->cost,
		    e->ranking.ties > 1
			? "; among the ties it moves the fewest input "
			  "placements, then has the smaller placements, "
			  "then the lower row numbers"
			: "");
}

/* ------------------------------------------------------------------ */
/* Text. */

static void print_moves(const struct explanation *e,
			const struct dt_shard_choice *c, const char *indent,
			FILE *out)
{
	for (uint32_t i = 0; i < e->rules.nin; i++) {
		if (dt_rules_input(&e->rules, i)->ignored)
			continue;
		char from[128], to[128], moves[1024];
		const struct dt_placements *want =
		    &c->placements.data[e->rules.nout + i];
		pl_text(&e->watch.current.data[i], from, sizeof from);
		pl_text(want, to, sizeof to);
		moves_text(e, i, want, moves, sizeof moves);
		if (strcmp(moves, "stays") == 0)
			fprintf(out, "%s%s %s: stays %s\n", indent,
				param_name(e, i), input_name(e, i), from);
		else
			fprintf(out, "%s%s %s: %s -> %s: %s\n", indent,
				param_name(e, i), input_name(e, i), from, to,
				moves);
	}
}

static void print_text(const struct explanation *e, FILE *out)
{
	const struct dt_node *n = dt_node_get(e->m, e->node);
	char buf[2048];
	fprintf(out, "node '%s' (%s) at %s:%u\n", dt_str_get(e->m, n->name),
		dt_str_get(e->m, n->target), e->m->file, n->line);
	fprintf(out, "rule family: %s; mesh %s (", e->rules.family,
		dt_str_get(e->m, e->mesh->name));
	for (int d = 0; d < e->mesh->ndim; d++)
		fprintf(out, "%s%s=%lld", d ? ", " : "",
			dt_str_get(e->m, e->mesh->dims[d]),
			(long long)e->mesh->shape[d]);
	fprintf(out, "); search: %s\n",
		e->mode == DT_SEARCH_PQ ? "pq" : "exhaustive");
	if (e->watch.pinned) {
		pl_text(&e->watch.pin, buf, sizeof buf);
		fprintf(out, "pinned: output 0 must be %s\n", buf);
	}
	fprintf(out, "inputs, as shard-prop found them:\n");
	for (uint32_t i = 0; i < e->rules.nin; i++) {
		char shape[256], pl[128];
		tensor_text(dt_rules_input(&e->rules, i), shape, sizeof shape);
		pl_text(&e->watch.current.data[i], pl, sizeof pl);
		fprintf(out, "  %-12s %-12s %-24s %s%s\n", param_name(e, i),
			input_name(e, i), shape, pl,
			dt_rules_input(&e->rules, i)->ignored
			    ? " (not read: any placement)"
			    : "");
	}
	fprintf(out, "single-dim rules: %u rows, plus the all-replicate row\n",
		e->rules.nrows);
	for (uint32_t r = 0; r < e->rules.nrows; r++) {
		dt_rules_row_print(&e->rules, r, buf, sizeof buf);
		uint8_t f = e->rules.flags.data[r];
		fprintf(out, "  %3u  %s%s%s%s%s%s\n", r + 1, buf,
			f & DT_ROW_EVEN ? "  [even shards]" : "",
			f & DT_ROW_PLAIN ? "  [S only]" : "",
			f & DT_ROW_NONEMPTY ? "  [no empty shard]" : "",
			f & DT_ROW_NO_UNIT ? "  [no shard of one]" : "",
			f & DT_ROW_GLOBAL_COUNT ? "  [lowered to count globally]"
						: "");
	}
	fprintf(out, "expanded with the inputs' sharding kinds: %u rows\n",
		e->space.nrows);
	for (uint32_t r = 0; r < e->space.nrows; r++) {
		row_text(e, r, buf, sizeof buf);
		uint32_t origin = e->space.row_origin.data[r];
		if (origin == UINT32_MAX)
			fprintf(out, "  %3u  %s  (all-replicate)\n", r, buf);
		else
			fprintf(out, "  %3u  %s  (rule %u)\n", r, buf,
				origin + 1);
	}
	uint64_t product = dt_shard_space_product(&e->space);
	if (e->valid == UINT64_MAX)
		fprintf(out, "strategies: %u^%d, too many to enumerate\n",
			e->space.nrows, e->mesh->ndim);
	else
		fprintf(out,
			"strategies: %u^%d = %llu; %llu pass the filters, %llu "
			"have a finite cost\n",
			e->space.nrows, e->mesh->ndim,
			(unsigned long long)product,
			(unsigned long long)e->valid,
			(unsigned long long)e->ranking.finite);
	fprintf(out, "search: pq popped %llu state%s, costed %llu, %llu plan%s",
		(unsigned long long)e->pq.candidates,
		e->pq.candidates == 1 ? "" : "s",
		(unsigned long long)e->pq.costed,
		(unsigned long long)e->pq.plans, e->pq.plans == 1 ? "" : "s");
	if (e->valid != UINT64_MAX)
		fprintf(out,
			"; exhaustive costed %llu strategies, %llu plans; %s\n",
			(unsigned long long)e->exhaustive.candidates,
			(unsigned long long)e->exhaustive.plans,
			e->agree ? "both choose the same strategy"
				 : "THEY DISAGREE");
	else
		fprintf(out, "\n");
	if (!e->chosen.found) {
		fprintf(out,
			"chosen: none: no strategy passes the filters%s; the "
			"node runs replicated\n",
			e->watch.pinned ? " nor reaches the pin" : "");
		return;
	}
	const struct dt_shard_choice *c = &e->chosen;
	strategy_text(e, c, buf, sizeof buf);
	if (e->watch.pinned &&
	    !dt_placements_equal(&c->placements.data[0], &e->watch.pin)) {
		char pin[128];
		pl_text(&e->watch.pin, pin, sizeof pin);
		fprintf(out,
			"chosen (cost %.2f us, %.2f us with the move of its "
			"output to the pin "
			"%s, which no strategy gives): %s\n",
			c->cost, e->toward_pin, pin, buf);
	} else {
		fprintf(out, "chosen (cost %.2f us): %s\n", c->cost, buf);
	}
	fprintf(out, "  rows:");
	for (int d = 0; d < e->mesh->ndim; d++) {
		row_text(e, c->rows[d], buf, sizeof buf);
		fprintf(out, "%s %s #%u %s", d ? ";" : "",
			dt_str_get(e->m, e->mesh->dims[d]), c->rows[d], buf);
	}
	fprintf(out, "\n");
	print_moves(e, c, "  ", out);
	why_text(e, buf, sizeof buf);
	fprintf(out, "  why: %s\n", buf);
	if (e->ranking.ties > 1)
		fprintf(out, "  ties: %llu strategies cost %.2f us\n",
			(unsigned long long)e->ranking.ties,
			e->ranking.min_cost);
	if (e->ranking.n <= 1) {
		fprintf(out, "runners-up: none\n");
		return;
	}
	fprintf(out, "runners-up:\n");
	for (int k = 1; k < e->ranking.n; k++) {
		const struct dt_shard_choice *r = &e->ranking.best[k];
		strategy_text(e, r, buf, sizeof buf);
		fprintf(out, "  %d. cost %.2f us (+%.2f, %u move%s): %s\n",
			k + 1, r->cost, r->cost - c->cost, r->changes,
			r->changes == 1 ? "" : "s", buf);
		print_moves(e, r, "       ", out);
	}
}

/* ------------------------------------------------------------------ */
/* JSON. */

static void json_pl(FILE *out, const struct dt_placements *pl)
{
	char buf[128];
	pl_text(pl, buf, sizeof buf);
	dt_json_string(out, buf);
}

static void json_choice(struct explanation *e, const struct dt_shard_choice *c,
			FILE *out)
{
	fprintf(
	    out,
	    "{\"cost_us\": %.6g, \"changes\": %u, \"index\": %llu, \"rows\": [",
	    c->cost, c->changes, (unsigned long long)c->index);
	for (int d = 0; d < e->mesh->ndim; d++)
		fprintf(out, "%s%u", d ? ", " : "", c->rows[d]);
	fputs("], \"outputs\": [", out);
	for (uint32_t k = 0; k < e->rules.nout; k++) {
		fputs(k ? ", " : "", out);
		json_pl(out, &c->placements.data[k]);
	}
	fputs("], \"inputs\": [", out);
	for (uint32_t i = 0; i < e->rules.nin; i++) {
		char moves[1024];
		const struct dt_placements *want =
		    &c->placements.data[e->rules.nout + i];
		moves_text(e, i, want, moves, sizeof moves);
		fputs(i ? ", " : "", out);
		fputs("{\"placements\": ", out);
		json_pl(out, want);
		fputs(", \"moves\": ", out);
		dt_json_string(out, moves);
		fprintf(out, ", \"cost_us\": %.6g}",
			dt_rules_input(&e->rules, i)->ignored
			    ? 0.0
			    : dt_shard_input_cost(&e->space, i, want));
	}
	fputs("]}", out);
}

static void json_stats(FILE *out, const char *name,
		       const struct dt_shard_stats *s)
{
	fprintf(
	    out,
	    "\"%s\": {\"candidates\": %llu, \"costed\": %llu, \"plans\": %llu}",
	    name, (unsigned long long)s->candidates,
	    (unsigned long long)s->costed, (unsigned long long)s->plans);
}

static void print_json(struct explanation *e, FILE *out)
{
	const struct dt_node *n = dt_node_get(e->m, e->node);
	char buf[2048];
	fputs("{\"node\": ", out);
	dt_json_string(out, dt_str_get(e->m, n->name));
	fputs(", \"target\": ", out);
	dt_json_string(out, dt_str_get(e->m, n->target));
	fprintf(out, ", \"line\": %u, \"family\": ", n->line);
	dt_json_string(out, e->rules.family);
	fputs(", \"mesh\": ", out);
	dt_json_string(out, dt_str_get(e->m, e->mesh->name));
	fprintf(out, ", \"search\": \"%s\", \"pin\": ",
		e->mode == DT_SEARCH_PQ ? "pq" : "exhaustive");
	if (e->watch.pinned)
		json_pl(out, &e->watch.pin);
	else
		fputs("null", out);
	fputs(", \"inputs\": [", out);
	for (uint32_t i = 0; i < e->rules.nin; i++) {
		tensor_text(dt_rules_input(&e->rules, i), buf, sizeof buf);
		fputs(i ? ", " : "", out);
		fputs("{\"param\": ", out);
		dt_json_string(out, param_name(e, i));
		fputs(", \"value\": ", out);
		dt_json_string(out, input_name(e, i));
		fputs(", \"type\": ", out);
		dt_json_string(out, buf);
		fputs(", \"placements\": ", out);
		json_pl(out, &e->watch.current.data[i]);
		fprintf(out, ", \"ignored\": %s}",
			dt_rules_input(&e->rules, i)->ignored ? "true"
							      : "false");
	}
	fputs("], \"rules\": [", out);
	for (uint32_t r = 0; r < e->rules.nrows; r++) {
		dt_rules_row_print(&e->rules, r, buf, sizeof buf);
		fputs(r ? ", " : "", out);
		dt_json_string(out, buf);
	}
	fputs("], \"expanded\": [", out);
	for (uint32_t r = 0; r < e->space.nrows; r++) {
		row_text(e, r, buf, sizeof buf);
		fputs(r ? ", " : "", out);
		dt_json_string(out, buf);
	}
	fprintf(out, "], \"strategies\": {\"product\": %llu, ",
		(unsigned long long)dt_shard_space_product(&e->space));
	if (e->valid == UINT64_MAX)
		fputs("\"valid\": null, \"finite\": null}, ", out);
	else
		fprintf(out, "\"valid\": %llu, \"finite\": %llu}, ",
			(unsigned long long)e->valid,
			(unsigned long long)e->ranking.finite);
	json_stats(out, "pq", &e->pq);
	fputs(", ", out);
	json_stats(out, "exhaustive", &e->exhaustive);
	fputs(", \"chosen\": ", out);
	if (e->chosen.found)
		json_choice(e, &e->chosen, out);
	else
		fputs("null", out);
	fputs(", \"why\": ", out);
	if (e->chosen.found) {
		why_text(e, buf, sizeof buf);
		dt_json_string(out, buf);
	} else {
		fputs("\"no strategy passes the filters; the node runs "
		      "replicated\"",
		      out);
	}
	fputs(", \"runners_up\": [", out);
	for (int k = 1; k < e->ranking.n; k++) {
		fputs(k > 1 ? ", " : "", out);
		json_choice(e, &e->ranking.best[k], out);
	}
	fputs("]}\n", out);
}

/* ------------------------------------------------------------------ */

static int parse_args(int argc, char **argv, struct explain_args *a)
{
	static const struct option longopts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"output", required_argument, NULL, 'o'},
	    {"search", required_argument, NULL, 'S'},
	    {"top", required_argument, NULL, 't'},
	    {"create-groups", no_argument, NULL, 'G'},
	    {"memory-budget", required_argument, NULL, 'M'},
	    DT_CLI_TOPOLOGY_LONGOPTS,
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	a->top = 5;
	int c;
	char *end;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "f:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': a->output = optarg; break;
		case 'G': a->create_groups = true; break;
		case 'M':
			if (dt_cli_memory_budget_parse(optarg, EXPLAIN_CMD,
						       &a->memory_budget) !=
			    DT_EXIT_OK)
				return DT_EXIT_USAGE;
			break;
		case 'f':
			if (strcmp(optarg, "text") != 0 &&
			    strcmp(optarg, "json") != 0)
				return dt_usage_error(
				    EXPLAIN_CMD,
				    "unknown format '%s' (text or json)",
				    optarg);
			a->json = strcmp(optarg, "json") == 0;
			break;
		case 'S':
			if (strcmp(optarg, "pq") == 0 ||
			    strcmp(optarg, "greedy") == 0)
				a->mode = DT_SEARCH_PQ;
			else if (strcmp(optarg, "exhaustive") == 0)
				a->mode = DT_SEARCH_EXHAUSTIVE;
			else if (strcmp(optarg, "global") == 0)
				a->mode = DT_SEARCH_GLOBAL;
			else
				return dt_usage_error(
				    EXPLAIN_CMD,
				    "--search=%s: expected pq, greedy, "
				    "exhaustive or global",
				    optarg);
			break;
		case 't':
			a->top = (int)strtol(optarg, &end, 10);
			if (!*optarg || *end || a->top < 0 || a->top > MAX_TOP)
				return dt_usage_error(
				    EXPLAIN_CMD,
				    "--top needs 0 to %d, not '%s'", MAX_TOP,
				    optarg);
			break;
		case 'h':
			fputs(explain_help, stdout);
			fputs(dt_cli_topology_help, stdout);
			return -1;
		default:
			if (c >= DT_CLI_OPT_TOPOLOGY_FIRST &&
			    c < DT_CLI_OPT_TOPOLOGY_END) {
				if (dt_cli_topology_parse(
					&a->topology, c, optarg, EXPLAIN_CMD) !=
				    DT_EXIT_OK)
					return DT_EXIT_USAGE;
				break;
			}
			return dt_usage_error(
			    EXPLAIN_CMD, "unknown or incomplete option '%s'",
			    argv[optind - 1]);
		}
	}
	if (a->memory_budget > 0 && a->mode != DT_SEARCH_GLOBAL)
		return dt_usage_error(EXPLAIN_CMD,
				      "--memory-budget is the whole-graph "
				      "search's (--search=global)");
	if (argc - optind != 2)
		return dt_usage_error(
		    EXPLAIN_CMD,
		    "expected a graph and a node name, got %d argument%s",
		    argc - optind, argc - optind == 1 ? "" : "s");
	a->graph = argv[optind];
	a->node = argv[optind + 1];
	return DT_EXIT_OK;
}

/* Run verify, shape-infer and shard-prop (watching the node), then weigh
 * the node's strategies again with both searches. */
static int explain(struct explanation *e, const struct explain_args *a,
		   struct dt_diag *diag)
{
	struct dt_module *m = e->m;
	struct dt_pipeline pipeline;
	struct dt_pipeline_options popt = {0};
	DT_REQUIRE(dt_pipeline_parse(&pipeline, "verify,shape-infer", diag) ==
		   DT_OK);
	int rc = dt_pipeline_run(m, &pipeline, &popt, diag);
	if (rc != DT_OK)
		return rc;
	e->topology = m->topology;
	dt_cli_topology_apply(&a->topology, &e->topology);
	struct dt_pass_options options = {.topology = &e->topology,
					  .shard_search = (uint8_t)a->mode};
	struct dt_arena scratch;
	dt_arena_init(&scratch);
	struct dt_pass_ctx ctx = {m, diag, &scratch, &options, NULL};
	e->watch.node = e->node;
	/* shard-prop may fail at or after the node (an exhaustive search
	 * over too many strategies): the node is explained, the exit code
	 * says it failed */
	int prop = dt_shard_prop(&ctx, &e->watch);
	dt_arena_fini(&scratch);
	if (prop != DT_OK && !e->watch.seen)
		return prop;
	char err[256];
	if (dt_rules_fill(&e->rules, m, e->node, err, sizeof err) != DT_OK) {
		dt_diag_report(diag, DT_ERROR, m->file,
			       dt_node_get(m, e->node)->line, NULL,
			       "node '%s': %s", a->node, err);
		return DT_EINPUT;
	}
	e->mesh = &m->meshes.data[e->watch.mesh];
	struct dt_shard_request req = {
	    .mesh = e->mesh,
	    .topology = &e->topology,
	    .current = e->watch.current.data,
	    .pin = e->watch.pinned ? &e->watch.pin : NULL,
	};
	dt_shard_space_init(&e->space, &e->rules, &req);
	dt_shard_search(&e->space, DT_SEARCH_PQ, &e->chosen, &e->pq);
	dt_shard_space_init(&e->space, &e->rules, &req); /* fresh plan counts */
	if (dt_shard_search(&e->space, DT_SEARCH_EXHAUSTIVE, &e->oracle,
			    &e->exhaustive) != DT_OK)
		e->valid = UINT64_MAX;
	e->ranking.cap = a->top + 1;
	if (e->valid != UINT64_MAX)
		e->valid =
		    dt_shard_enumerate(&e->space, rank_choice, &e->ranking);
	e->agree = e->oracle.found == e->chosen.found &&
		   (!e->chosen.found ||
		    dt_shard_choice_compare(&e->oracle, &e->chosen) == 0);
	if (e->mode == DT_SEARCH_EXHAUSTIVE && e->valid != UINT64_MAX)
		dt_shard_choice_copy(&e->chosen, &e->oracle);
	if (!e->chosen.found && e->watch.pinned) {
		/* What shard-prop does then: the strategy that reaches the pin
		 * cheapest, followed by a redistribution to it. */
		req.pin = NULL;
		dt_shard_space_init(&e->space, &e->rules, &req);
		e->toward_pin = dt_shard_search_toward(&e->space, &e->watch.pin,
						       e->mode, &e->chosen);
	}
	e->ready = true;
	return prop;
}

static void explanation_fini(struct explanation *e)
{
	dt_shard_watch_fini(&e->watch);
	dt_rules_fini(&e->rules);
	dt_shard_space_fini(&e->space);
	dt_shard_choice_fini(&e->chosen);
	dt_shard_choice_fini(&e->oracle);
	for (int k = 0; k <= MAX_TOP; k++)
		dt_shard_choice_fini(&e->ranking.best[k]);
}

int dt_cmd_explain(int argc, char **argv)
{
	struct explain_args a = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc < 0)
		return DT_EXIT_OK;
	if (rc != DT_EXIT_OK)
		return rc;
	rc = dt_cli_output_begin(EXPLAIN_CMD, a.output);
	if (rc != DT_EXIT_OK)
		return rc;
	struct dt_diag diag;
	dt_cli_diag_init(&diag);
	struct dt_read_options ropt = {0};
	struct explanation e = {.mode = a.mode};
	rc = dt_read_file(a.graph, &ropt, &diag, &e.m);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	if (e.m->view != DT_VIEW_GLOBAL) {
		dt_diag_report(&diag, DT_ERROR, e.m->file, 0, NULL,
			       "explain needs a global-view graph (this one is "
			       "local)");
		dt_module_destroy(e.m);
		return DT_EXIT_INPUT;
	}
	e.node = dt_module_find_node(e.m, dt_str_intern(e.m, a.node));
	const struct dt_node *n = e.node ? dt_node_get(e.m, e.node) : NULL;
	if (!n || !(n->flags & DT_NODE_LINKED)) {
		dt_module_destroy(e.m);
		return dt_usage_error(EXPLAIN_CMD, "the graph has no node '%s'",
				      a.node);
	}
	if (n->kind != DT_NODE_CALL || n->op == DT_OP_GETITEM ||
	    n->op == DT_OP_REDISTRIBUTE) {
		const char *what =
		    n->kind == DT_NODE_PLACEHOLDER
			? "a placeholder: its <sharding> gives its placements"
		    : n->kind == DT_NODE_CONSTANT
			? "a constant: its <sharding> gives its placements "
			  "(replicated without one)"
		    : n->kind == DT_NODE_OUTPUT
			? "the output node: it has no placements"
		    : n->op == DT_OP_GETITEM
			? "a getitem: it takes its result's placements"
			: "a redistribution: its <sharding> is its target";
		printf(
		    "node '%s' is %s; shard-prop weighs no strategy for it\n",
		    a.node, what);
		dt_module_destroy(e.m);
		return dt_cli_output_commit();
	}
	if (a.mode == DT_SEARCH_GLOBAL) {
		struct dt_topology topology = e.m->topology;
		dt_cli_topology_apply(&a.topology, &topology);
		struct dt_explain_global_options go = {
		    .topology = &topology,
		    .create_groups = a.create_groups,
		    .json = a.json,
		    .top = a.top,
		    .budget = a.memory_budget,
		};
		bool explained;
		rc = dt_explain_global(e.m, e.node, &go, &diag, &explained);
		if (rc != DT_OK || explained) {
			dt_module_destroy(e.m);
			return rc == DT_OK ? dt_cli_output_commit()
					   : dt_exit_code(rc);
		}
		/* What shard-prop does then (the warning said why). */
		a.mode = e.mode = DT_SEARCH_PQ;
	}
	rc = explain(&e, &a, &diag);
	if (e.ready) {
		if (a.json)
			print_json(&e, stdout);
		else
			print_text(&e, stdout);
	}
	explanation_fini(&e);
	dt_module_destroy(e.m);
	if (rc == DT_OK)
		return dt_cli_output_commit();
	return dt_exit_code(rc);
}
