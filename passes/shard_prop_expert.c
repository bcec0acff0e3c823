// SPDX-License-Identifier: MIT
/* shard_prop_expert.c: `opt --search=global --expert-pins=FILE`, how an
 * expert's plan sits in the whole-graph problem (semantics §6.6): for
 * each node the expert pins (FILE: `NODE PLACEMENTS` a line, result 0's
 * placements, tests/models/experts.py's plans), whether a kept strategy
 * gives them, the cap pruned them all, or no strategy of the node's rules
 * gives them; and what the problem scores the best plan keeping every
 * kept one, against the plan found. It changes nothing in the plan.
 *
 *   mm_2 S(0) S(0) S(1)   ->  remark shard-prop:expert: 40 pinned, 38
 *   bmm S(0) _S(0,4)          kept, 1 pruned ('mm_2' S(0) S(0) S(1)), 1
 *                             given by no strategy ('bmm' ...); ...
 *
 * Time: reading FILE; one more solve of the problem, restricted. */
#include "passes.h"
#include "sharding.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int dt_shard_expert_read(struct dt_pass_ctx *ctx, const char *path,
			 struct dt_placements *hint)
{
	struct dt_module *m = ctx->m;
	FILE *f = fopen(path, "r");
	if (!f) {
		dt_diag_report(ctx->diag, DT_ERROR, path, 0, NULL,
			       "cannot read --expert-pins: %s", strerror(errno));
		return DT_EIO;
	}
	char line[1024], err[160];
	uint32_t at = 0;
	int rc = DT_OK;
	while (rc == DT_OK && fgets(line, sizeof line, f)) {
		at++;
		line[strcspn(line, "\r\n")] = 0;
		char *name = line + strspn(line, " \t");
		if (!*name || *name == '#')
			continue;
		char *text = name + strcspn(name, " \t");
		if (*text)
			*text++ = 0;
		uint32_t id = dt_module_find_node(m, dt_str_intern(m, name));
		if (id == 0) {
			dt_diag_report(ctx->diag, DT_ERROR, path, at, NULL,
				       "no node '%s' in %s", name, m->file);
			rc = DT_EINPUT;
		} else if (!m->meshes.len ||
			   !dt_placements_parse(&hint[id], text, NULL,
						&m->meshes.data[0], &m->strings,
						err, sizeof err)) {
			dt_diag_report(ctx->diag, DT_ERROR, path, at, NULL,
				       "node '%s': %s", name,
				       m->meshes.len ? err : "the graph has no mesh");
			rc = DT_EINPUT;
		}
	}
	fclose(f);
	return rc;
}

/* A remark at each hinted node the problem lost; how many in each
 * state (count[state]). */
static void name_lost(struct dt_pass_ctx *ctx, const struct dt_shard_problem *pr,
		      const struct dt_placements *hint, uint32_t *count)
{
	for (uint32_t k = 0; k < pr->hint.len; k++) {
		uint8_t st = pr->hint.data[k];
		count[st]++;
		if (st != DT_HINT_PRUNED && st != DT_HINT_ABSENT)
			continue;
		uint32_t id = pr->pnodes.data[k].node;
		const struct dt_node *n = dt_node_get(ctx->m, id);
		char pl[128];
		dt_placements_print(&hint[id], pl, sizeof pl);
		dt_diag_report(ctx->diag, DT_REMARK, ctx->m->file, n->line,
			       "shard-prop:expert",
			       "node '%s': the expert's %s is %s",
			       dt_str_get(ctx->m, n->name), pl,
			       st == DT_HINT_PRUNED
				   ? "pruned"
				   : "given by no strategy of its rules");
	}
}

/* The first edge of q (pr's problem, restricted) with no finite pair,
 * named into buf ("" when none). */
static void closed_edge(const struct dt_pass_ctx *ctx,
			const struct dt_shard_problem *pr,
			const struct dt_solve_problem *q, char *buf, size_t n)
{
	buf[0] = 0;
	for (int32_t k = 0; k < q->nedges; k++) {
		if (dt_solve_edge_open(q, k))
			continue;
		const struct dt_solve_edge *e = &q->edges[k];
		snprintf(buf, n, " ('%s' to '%s': no move)",
			 dt_str_get(ctx->m, dt_node_get(ctx->m,
				    pr->pnodes.data[e->from].node)->name),
			 dt_str_get(ctx->m, dt_node_get(ctx->m,
				    pr->pnodes.data[e->to].node)->name));
		return;
	}
}

void dt_shard_expert_report(struct dt_pass_ctx *ctx,
			    const struct dt_shard_problem *pr,
			    const struct dt_placements *hint, int64_t plan_cost)
{
	const struct dt_solve_problem *p = &pr->solve;
	if (!ctx->diag->remarks || p->nnodes == 0)
		return;
	/* The problem with every kept expert's strategy forced: the others
	 * cost ∞. */
	struct dt_solve_problem q = *p;
	q.nodes = dt_calloc((size_t)p->nnodes + 1, sizeof *q.nodes);
	memcpy(q.nodes, p->nodes, (size_t)p->nnodes * sizeof *q.nodes);
	for (uint32_t k = 0; k < pr->hint.len; k++) {
		if (pr->hint.data[k] != DT_HINT_KEPT)
			continue;
		struct dt_solve_node *n = &q.nodes[k];
		n->cost = dt_malloc((size_t)n->nstrategies * sizeof *n->cost);
		for (int32_t s = 0; s < n->nstrategies; s++)
			n->cost[s] = s == pr->hint_at.data[k]
					 ? p->nodes[k].cost[s]
					 : DT_SOLVE_INFINITE;
	}
	int32_t *x = dt_calloc((size_t)p->nnodes + 1, sizeof *x);
	struct dt_solve_result res = {.strategy = x};
	struct dt_solve_options so;
	dt_shard_global_options(ctx, &q, &so);
	if (dt_solve(&q, &so, &res) != DT_OK)
		res.cost = DT_SOLVE_INFINITE;
	char score[256] = "no plan within the limit";
	uint32_t count[4] = {0};
	name_lost(ctx, pr, hint, count);
	if (res.cost == DT_SOLVE_INFINITE)
		closed_edge(ctx, pr, &q, score + strlen(score),
			    sizeof score - strlen(score));
	else
		snprintf(score, sizeof score, "%.2f us (peak %" PRId64 ")",
			 (double)res.cost / 1000, res.peak_usage);
	dt_diag_report(ctx->diag, DT_REMARK, ctx->m->file, 0,
		       "shard-prop:expert",
		       "expert pins: %u kept, %u pruned, %u given by no "
		       "strategy; the best plan keeping the kept ones costs "
		       "%s, the plan %.2f us",
		       count[DT_HINT_KEPT], count[DT_HINT_PRUNED],
		       count[DT_HINT_ABSENT], score,
		       (double)plan_cost / 1000);
	for (uint32_t k = 0; k < pr->hint.len; k++)
		if (pr->hint.data[k] == DT_HINT_KEPT)
			dt_free(q.nodes[k].cost);
	dt_free(q.nodes);
	dt_free(x);
}
