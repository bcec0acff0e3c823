// SPDX-License-Identifier: MIT
/* cmd_explain_global.c: `dtopt explain --search=global GRAPH NODE`: the
 * strategy the whole-graph search gives NODE, its modelled cost (compute,
 * the moves of its inputs, its move to a pin, its memory, the buckets its
 * bucketed moves join: each one's latency and how many other nodes of the
 * plan share it) and, with the rest of the plan fixed, each strategy's
 * cost here against what it costs its users (with the latency of a bucket
 * it would join alone) and the plan's peak with it: why a locally cheaper
 * strategy lost, to time or, under --memory-budget, to memory. */
#include "cli.h"
#include "cost_model.h"
#include "frontend.h"
#include "passes.h"
#include "sharding.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static double us(int64_t ns)
{
	return (double)ns / 1000;
}

/* ns as text: "1.25 us", or "impossible" where no redistribution exists
 * (an infinite cost). */
static const char *text_us(int64_t ns, char buf[32])
{
	if (ns == DT_SOLVE_INFINITE)
		return "impossible";
	snprintf(buf, 32, "%.2f us", us(ns));
	return buf;
}

/* ns as a JSON number of µs, null where infinite. */
static void json_us(FILE *out, int64_t ns)
{
	if (ns == DT_SOLVE_INFINITE)
		fputs("null", out);
	else
		fprintf(out, "%.6g", us(ns));
}

static int64_t add(int64_t a, int64_t b)
{
	return a > DT_SOLVE_INFINITE - b ? DT_SOLVE_INFINITE : a + b;
}

/* Node k's strategy s as "[OUT] <- [IN], [IN]" (a publisher: "[PL]"),
 * printed, or as a JSON string when json. */
static void print_strategy(const struct dt_shard_problem *pr, uint32_t k,
			   int32_t s, bool json, FILE *out)
{
	const struct dt_shard_pnode *n = &pr->pnodes.data[k];
	const struct dt_placements *pl = dt_shard_problem_pl(pr, k, s);
	char text[1024], buf[128];
	size_t len = 0;
	for (uint32_t t = 0; t < n->width && len < sizeof text; t++) {
		dt_placements_print(&pl[t], buf, sizeof buf);
		len += (size_t)snprintf(text + len, sizeof text - len, "%s[%s]",
					t == 0 ? "" : t == n->nout ? " <- " : ", ",
					buf);
	}
	if (json)
		dt_json_string(out, text);
	else
		fputs(text, out);
}

/* Whether the move of edge j's source node at strategy s joins the
 * bucket the edge leads to. */
static bool joins(const struct dt_solve_problem *p, int32_t j, int32_t s)
{
	return p->edges[j].cost[2 * (size_t)s] == DT_SOLVE_INFINITE;
}

/* How many nodes other than k join the bucket of node b in plan. */
static int joined_by_others(const struct dt_shard_problem *pr,
			    const int32_t *plan, int32_t b, uint32_t k)
{
	const struct dt_solve_problem *p = &pr->solve;
	int n = 0;
	for (int32_t j = 0; j < p->nedges; j++)
		n += p->edges[j].to == b && (uint32_t)p->edges[j].from != k &&
		     joins(p, j, plan[p->edges[j].from]);
	return n;
}

/* Cost of node k's strategy s with every other node at its plan's: here
 * (node cost and the edges into it), and for its users (edges out; a
 * bucket its moves join alone: its latency). */
static void weigh(const struct dt_shard_problem *pr, const int32_t *plan,
		  uint32_t k, int32_t s, int64_t *here, int64_t *users)
{
	const struct dt_solve_problem *p = &pr->solve;
	*here = p->nodes[k].cost[s];
	*users = 0;
	for (int32_t j = 0; j < p->nedges; j++) {
		const struct dt_solve_edge *e = &p->edges[j];
		uint8_t kind = pr->pnodes.data[e->to].kind;
		if (kind == DT_PNODE_COPY || kind == DT_PNODE_RESULT)
			continue; /* memory only: follows the ends' choices */
		int32_t nt = p->nodes[e->to].nstrategies;
		if (kind == DT_PNODE_BUCKET) {
			if ((uint32_t)e->from == k && joins(p, j, s) &&
			    !joined_by_others(pr, plan, e->to, k))
				*users = add(*users, p->nodes[e->to].cost[1]);
			continue;
		}
		if ((uint32_t)e->to == k)
			*here = add(*here, e->cost[(size_t)plan[e->from] * (size_t)nt +
						   (size_t)s]);
		if ((uint32_t)e->from == k)
			*users = add(*users,
				     e->cost[(size_t)s * (size_t)nt + (size_t)plan[e->to]]);
	}
}

/* Close a list of n entries: "]" in JSON, "none" in text when empty. */
static void end_list(int n, bool json, FILE *out)
{
	if (json)
		fputc(']', out);
	else if (!n)
		fputs("none", out);
}

/* The edges into (or out of) node k at strategy s, named: "'x' 1.00 us,
 * ..." or "none"; as JSON, [{"value": "x", "published": false,
 * "cost_us": 1.0}, ...]. */
static void print_edges(const struct dt_shard_problem *pr,
			const struct dt_module *m, const int32_t *plan,
			uint32_t k, int32_t s, bool in, bool json, FILE *out)
{
	const struct dt_solve_problem *p = &pr->solve;
	int n = 0;
	if (json)
		fputc('[', out);
	for (int32_t j = 0; j < p->nedges; j++) {
		const struct dt_solve_edge *e = &p->edges[j];
		uint32_t other = in ? (uint32_t)e->to : (uint32_t)e->from;
		uint8_t kind = pr->pnodes.data[e->to].kind;
		if (other != k || dt_shard_pnode_follows(kind))
			continue;
		uint32_t end = in ? (uint32_t)e->from : (uint32_t)e->to;
		int32_t nt = p->nodes[e->to].nstrategies;
		int64_t c = in ? e->cost[(size_t)plan[end] * (size_t)nt + (size_t)s]
			       : e->cost[(size_t)s * (size_t)nt + (size_t)plan[end]];
		const char *name =
		    dt_str_get(m, dt_node_get(m, pr->pnodes.data[end].node)->name);
		bool published = pr->pnodes.data[end].kind == DT_PNODE_PUBLISH;
		fputs(n++ ? ", " : "", out);
		if (json) {
			fputs("{\"value\": ", out);
			dt_json_string(out, name);
			fprintf(out, ", \"published\": %s, \"cost_us\": ",
				published ? "true" : "false");
			json_us(out, c);
			fputc('}', out);
		} else {
			char buf[32];
			fprintf(out, "'%s'%s %s", name,
				published ? " (published)" : "",
				text_us(c, buf));
		}
	}
	end_list(n, json, out);
}

/* The buckets node k's moves join at strategy s, named: "all_gather on
 * dp (float32) 7.20 us, shared with 3 other nodes, ..." or "none"; as
 * JSON, [{"kind": "all_gather", "group": "dp", "dtype": "float32",
 * "reduce": null, "latency_us": 7.2, "shared_with": 3}, ...]. */
static void print_buckets(const struct dt_shard_problem *pr,
			  const struct dt_module *m, const int32_t *plan,
			  uint32_t k, int32_t s, bool json, FILE *out)
{
	const struct dt_solve_problem *p = &pr->solve;
	int n = 0;
	if (json)
		fputc('[', out);
	for (int32_t j = 0; j < p->nedges; j++) {
		const struct dt_solve_edge *e = &p->edges[j];
		if ((uint32_t)e->from != k ||
		    pr->pnodes.data[e->to].kind != DT_PNODE_BUCKET || !joins(p, j, s))
			continue;
		const struct dt_shard_bucket *b =
		    &pr->buckets.data[pr->pnodes.data[e->to].bucket];
		const struct dt_mesh *mesh = &m->meshes.data[b->mesh];
		char group[128] = "";
		size_t len = 0;
		for (int d = 0; d < b->key.ndims && len < sizeof group; d++)
			len += (size_t)snprintf(group + len, sizeof group - len,
						"%s%s", d ? " " : "",
						dt_str_get(m, mesh->dims[b->key.dims[d]]));
		const char *kind = dt_comm_kind_name((enum dt_comm_kind)b->key.kind);
		const char *dtype = dt_dtype_name((enum dt_dtype)b->key.dtype);
		const char *reduce =
		    b->key.kind == DT_COMM_ALL_GATHER
			? NULL
			: dt_reduce_name((enum dt_reduce_op)b->key.reduce);
		int others = joined_by_others(pr, plan, e->to, k);
		double latency = us(p->nodes[e->to].cost[1]);
		fputs(n++ ? ", " : "", out);
		if (json) {
			fputs("{\"kind\": ", out);
			dt_json_string(out, kind);
			fputs(", \"group\": ", out);
			dt_json_string(out, group);
			fputs(", \"dtype\": ", out);
			dt_json_string(out, dtype);
			fputs(", \"reduce\": ", out);
			if (reduce)
				dt_json_string(out, reduce);
			else
				fputs("null", out);
			fprintf(out, ", \"latency_us\": %.6g, \"shared_with\": %d}",
				latency, others);
		} else {
			fprintf(out, "%s on %s (%s%s%s) %.2f us, ", kind, group,
				dtype, reduce ? " " : "", reduce ? reduce : "",
				latency);
			if (others)
				fprintf(out, "shared with %d other node%s", others,
					others > 1 ? "s" : "");
			else
				fputs("paid here", out);
		}
	}
	end_list(n, json, out);
}

struct ranked {
	int32_t s;
	int64_t here, users, total;
	int64_t peak;    /* the plan's, with s at the node */
	uint32_t peak_at; /* the graph node where it is first reached, 0 */
};

static int by_total(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->total != y->total)
		return x->total < y->total ? -1 : 1;
	return x->s - y->s;
}

/* Every strategy of node k weighed with the rest of the plan fixed (in
 * strategy order; dt_free it): its costs, and the plan's peak with it
 * (the nodes following k's choice settled); the locally cheapest in
 * *local. */
static struct ranked *rank_strategies(const struct dt_shard_problem *pr,
				      const struct dt_module *m,
				      const int32_t *plan, uint32_t k,
				      int32_t *local)
{
	const struct dt_solve_problem *p = &pr->solve;
	const struct dt_solve_node *sn = &p->nodes[k];
	struct ranked *r = dt_calloc((size_t)sn->nstrategies, sizeof *r);
	int32_t *x = dt_malloc(((size_t)p->nnodes + 1) * sizeof *x);
	*local = plan[k];
	for (int32_t t = 0; t < sn->nstrategies; t++) {
		r[t].s = t;
		weigh(pr, plan, k, t, &r[t].here, &r[t].users);
		r[t].total = add(r[t].here, r[t].users);
		memcpy(x, plan, (size_t)p->nnodes * sizeof *x);
		x[k] = t;
		dt_shard_problem_settle(pr, x);
		int64_t at;
		r[t].peak = dt_solve_plan_peak(p, x, &at);
		r[t].peak_at = dt_shard_problem_node_at(m, at);
		if (r[t].here < r[*local].here)
			*local = t;
	}
	dt_free(x);
	return r;
}

/* " at 'NODE'", where the plan's peak with r is first reached. */
static void print_peak_at(const struct dt_module *m, const struct ranked *r,
			  FILE *out)
{
	if (r->peak_at)
		fprintf(out, " at '%s'",
			dt_str_get(m, dt_node_get(m, r->peak_at)->name));
}

/* ", peak N bytes at 'NODE'", with " (over the budget)" where N passes
 * `budget`. */
static void print_peak(const struct dt_module *m, const struct ranked *r,
		       int64_t budget, FILE *out)
{
	fprintf(out, ", peak %" PRId64 " bytes", r->peak);
	print_peak_at(m, r, out);
	if (r->peak > budget)
		fputs(" (over the budget)", out);
}

static void print_explanation(const struct dt_shard_problem *pr,
			      const struct dt_module *m, const int32_t *plan,
			      uint32_t node,
			      const struct dt_explain_global_options *o,
			      FILE *out)
{
	uint32_t k = pr->of_node.data[node];
	const struct dt_solve_node *sn = &pr->solve.nodes[k];
	const struct dt_node *g = dt_node_get(m, node);
	int32_t s = plan[k], local;
	uint32_t first = pr->pnodes.data[k].first;
	fprintf(out, "node '%s' (%s) at %s:%u; whole-graph search over %d "
		     "nodes, %d strategies here\n",
		dt_str_get(m, g->name), dt_str_get(m, g->target), m->file,
		g->line, pr->solve.nnodes, sn->nstrategies);
	struct ranked *r = rank_strategies(pr, m, plan, k, &local);
	int64_t here = r[s].here, users = r[s].users;
	fputs("chosen: ", out);
	print_strategy(pr, k, s, false, out);
	fprintf(out, "\n  compute %.2f us, move to its pin %.2f us, memory %" PRId64
		     " bytes per rank\n  inputs: ",
		pr->compute_us.data[first + (uint32_t)s],
		pr->pin_us.data[first + (uint32_t)s], sn->usage[s]);
	print_edges(pr, m, plan, k, s, true, false, out);
	fputs("\n  users: ", out);
	print_edges(pr, m, plan, k, s, false, false, out);
	fputs("\n  buckets: ", out);
	print_buckets(pr, m, plan, k, s, false, out);
	fprintf(out, "\n  here %.2f us + for its users %.2f us = %.2f us\n",
		us(here), us(users), us(add(here, users)));
	if (o->budget > 0) {
		fprintf(out, "  the plan's peak: %" PRId64 " bytes per rank",
			r[s].peak);
		print_peak_at(m, &r[s], out);
		fprintf(out, ", within --memory-budget %" PRId64 "\n",
			o->budget);
	}
	if (local != s) {
		fputs("locally cheapest: ", out);
		print_strategy(pr, k, local, false, out);
		fprintf(out, "\n  here %.2f us (%.2f us less), but for its users "
			     "%.2f us (%.2f us more): ",
			us(r[local].here), us(here) - us(r[local].here),
			us(r[local].users), us(r[local].users) - us(users));
		print_edges(pr, m, plan, k, local, false, false, out);
		fputc('\n', out);
		if (o->budget > 0 && r[local].peak > o->budget) {
			fprintf(out, "  and with it the plan would hold %" PRId64
				     " bytes per rank at its peak",
				r[local].peak);
			print_peak_at(m, &r[local], out);
			fprintf(out, ", over --memory-budget %" PRId64 "\n",
				o->budget);
		}
	} else {
		fputs("locally cheapest: the chosen one\n", out);
	}
	qsort(r, (size_t)sn->nstrategies, sizeof *r, by_total);
	fputs("runners-up, the rest of the plan fixed:\n", out);
	int shown = 0;
	for (int32_t t = 0; t < sn->nstrategies && shown < o->top; t++) {
		if (r[t].s == s)
			continue;
		char here_buf[32], users_buf[32], total_buf[32];
		fprintf(out, "  %d. here %s + users %s = %s", ++shown + 1,
			text_us(r[t].here, here_buf),
			text_us(r[t].users, users_buf),
			text_us(r[t].total, total_buf));
		if (o->budget > 0)
			print_peak(m, &r[t], o->budget, out);
		fputs(": ", out);
		print_strategy(pr, k, r[t].s, false, out);
		fputc('\n', out);
	}
	dt_free(r);
}

/* Strategy t of node k as a JSON object: its placements, its cost here
 * and for its users; with detail, its compute, pin move, memory and the
 * moves of its inputs and users. */
static void json_strategy(const struct dt_shard_problem *pr,
			  const struct dt_module *m, const int32_t *plan,
			  uint32_t k, const struct ranked *r, bool detail,
			  FILE *out)
{
	uint32_t at = pr->pnodes.data[k].first + (uint32_t)r->s;
	fputs("{\"strategy\": ", out);
	print_strategy(pr, k, r->s, true, out);
	fputs(", \"here_us\": ", out);
	json_us(out, r->here);
	fputs(", \"users_us\": ", out);
	json_us(out, r->users);
	fputs(", \"total_us\": ", out);
	json_us(out, r->total);
	fprintf(out, ", \"peak_bytes\": %" PRId64 ", \"peak_at\": ", r->peak);
	if (r->peak_at)
		dt_json_string(out, dt_str_get(m, dt_node_get(m, r->peak_at)->name));
	else
		fputs("null", out);
	if (detail) {
		fprintf(out, ", \"compute_us\": %.6g, \"pin_us\": %.6g, "
			     "\"memory_bytes\": %" PRId64 ", \"inputs\": ",
			pr->compute_us.data[at], pr->pin_us.data[at],
			pr->solve.nodes[k].usage[r->s]);
		print_edges(pr, m, plan, k, r->s, true, true, out);
		fputs(", \"users\": ", out);
		print_edges(pr, m, plan, k, r->s, false, true, out);
		fputs(", \"buckets\": ", out);
		print_buckets(pr, m, plan, k, r->s, true, out);
	}
	fputc('}', out);
}

/* The explanation as one JSON object: node, target, line, nodes,
 * strategies, budget_bytes (null without one), chosen, locally_cheapest
 * (null when the chosen one), runners_up (the next o->top by total); each
 * strategy with the plan's peak_bytes. */
static void print_explanation_json(const struct dt_shard_problem *pr,
				   const struct dt_module *m,
				   const int32_t *plan, uint32_t node,
				   const struct dt_explain_global_options *o,
				   FILE *out)
{
	uint32_t k = pr->of_node.data[node];
	const struct dt_solve_node *sn = &pr->solve.nodes[k];
	const struct dt_node *g = dt_node_get(m, node);
	int32_t s = plan[k], local;
	struct ranked *r = rank_strategies(pr, m, plan, k, &local);
	fputs("{\"node\": ", out);
	dt_json_string(out, dt_str_get(m, g->name));
	fputs(", \"target\": ", out);
	dt_json_string(out, dt_str_get(m, g->target));
	fprintf(out, ", \"line\": %u, \"search\": \"global\", \"nodes\": %d, "
		     "\"strategies\": %d, \"budget_bytes\": ",
		g->line, pr->solve.nnodes, sn->nstrategies);
	if (o->budget > 0)
		fprintf(out, "%" PRId64, o->budget);
	else
		fputs("null", out);
	fputs(", \"chosen\": ", out);
	json_strategy(pr, m, plan, k, &r[s], true, out);
	fputs(", \"locally_cheapest\": ", out);
	if (local != s)
		json_strategy(pr, m, plan, k, &r[local], true, out);
	else
		fputs("null", out);
	qsort(r, (size_t)sn->nstrategies, sizeof *r, by_total);
	fputs(", \"runners_up\": [", out);
	int shown = 0;
	for (int32_t t = 0; t < sn->nstrategies && shown < o->top; t++) {
		if (r[t].s == s)
			continue;
		fputs(shown++ ? ", " : "", out);
		json_strategy(pr, m, plan, k, &r[t], false, out);
	}
	fputs("]}\n", out);
	dt_free(r);
}

int dt_explain_global(struct dt_module *m, uint32_t node,
		      const struct dt_explain_global_options *o,
		      struct dt_diag *diag, bool *explained)
{
	*explained = false;
	struct dt_pipeline pipeline;
	struct dt_pipeline_options popt = {0};
	DT_REQUIRE(dt_pipeline_parse(&pipeline, "verify,shape-infer", diag) ==
		   DT_OK);
	int rc = dt_pipeline_run(m, &pipeline, &popt, diag);
	if (rc != DT_OK)
		return rc;
	struct dt_shard_problem pr = {0};
	struct dt_shard_problem_options po = {
	    .topology = o->topology,
	    .budget = o->budget > 0 ? o->budget : -1,
	    .create_groups = o->create_groups};
	struct dt_pass_options options = {.topology = o->topology,
					  .create_groups = o->create_groups,
					  .memory_budget = o->budget};
	struct dt_arena scratch;
	dt_arena_init(&scratch);
	struct dt_pass_ctx ctx = {m, diag, &scratch, &options, NULL};
	rc = dt_shard_global_build(&ctx, &pr, &po);
	int32_t *plan = dt_calloc((size_t)pr.solve.nnodes + 1, sizeof *plan);
	bool solved = false;
	if (rc == DT_OK &&
	    dt_shard_global_built(&ctx, &pr, DT_WARNING,
				  "; explaining the node-by-node search "
				  "(--search=greedy)"))
		rc = dt_shard_global_solve(&ctx, &pr, NULL, plan, &solved);
	dt_arena_fini(&scratch);
	*explained = rc == DT_OK && solved; /* else the warning says why */
	if (*explained && o->json)
		print_explanation_json(&pr, m, plan, node, o, stdout);
	else if (*explained)
		print_explanation(&pr, m, plan, node, o, stdout);
	dt_free(plan);
	dt_shard_problem_fini(&pr);
	return rc;
}
