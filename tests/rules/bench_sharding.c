// SPDX-License-Identifier: MIT
/* bench_sharding.c: the strategy search and the shard-prop pass, timed.
 *
 *   bench_sharding search [SAMPLES]   per op and mesh (1-D to 4-D): the
 *       candidates the priority queue pops against the strategies the
 *       exhaustive search costs, cost evaluations, planner calls and time
 *       per search, for random input placements and for "near" ones (a
 *       strategy's inputs with one entry changed, what propagation mostly
 *       sees); every pair of searches must agree (exit 1 otherwise).
 *   bench_sharding graph [LAYERS [pq|exhaustive]]  shard-prop over a synthetic
 *       global-view transformer-like graph (forward ops, data and tensor
 *       parallel placements on a 2×4 mesh): nodes per second, pq and
 *       exhaustive. */
#include "frontend.h"
#include "passes.h"
#include "sharding.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static struct dt_module *load(const char *xml)
{
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_read_options ropt = {0};
	struct dt_module *m = NULL;
	if (dt_read_memory(xml, strlen(xml), "bench.xml", &ropt, &d, &m) != DT_OK)
		exit(2);
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {0};
	if (dt_pipeline_parse(&p, "verify,shape-infer", &d) != DT_OK ||
	    dt_pipeline_run(m, &p, &popt, &d) != DT_OK)
		exit(2);
	return m;
}

/* ------------------------------------------------------------------ */
/* search */

struct op_case {
	const char *label;
	const char *inputs[3]; /* shapes */
	const char *call;      /* node "op" over inputs a, b, c */
};

static const struct op_case ops[] = {
	{"mm", {"64 64", "64 64"}, "target=\"aten.mm.default\"><arg node=\"a\"/><arg node=\"b\"/>"},
	{"bmm", {"16 64 64", "16 64 64"}, "target=\"aten.bmm.default\"><arg node=\"a\"/><arg node=\"b\"/>"},
	{"addmm", {"64", "64 64", "64 64"}, "target=\"aten.addmm.default\"><arg node=\"a\"/><arg node=\"b\"/><arg node=\"c\"/>"},
	{"add", {"64 64", "64"}, "target=\"aten.add.Tensor\"><arg node=\"a\"/><arg node=\"b\"/>"},
	{"cat", {"64 64 64", "64 64 64"}, "target=\"aten.cat.default\"><arg nodes=\"a b\"/>"},
	{"sum.dim_IntList", {"64 64 64"}, "target=\"aten.sum.dim_IntList\"><arg node=\"a\"/><arg ints=\"1\"/>"},
	{"view", {"64 64 16"}, "target=\"aten.view.default\"><arg node=\"a\"/><arg ints=\"4096 16\"/>"},
	{"softmax", {"64 64 64"}, "target=\"aten._softmax.default\"><arg node=\"a\"/><arg int=\"2\"/><arg bool=\"false\"/>"},
	{"layer_norm", {"64 64 64", "64", "64"}, "target=\"aten.native_layer_norm.default\"><arg node=\"a\"/><arg ints=\"64\"/><arg node=\"b\"/><arg node=\"c\"/><arg float=\"1e-05\"/>"},
};

struct mesh_case {
	const char *shape, *dims;
	int ndim;
};

static const struct mesh_case meshes[] = {
	{"8", "a", 1}, {"4 2", "a b", 2}, {"2 2 2", "a b c", 3}, {"2 2 2 2", "a b c d", 4},
};

static struct dt_module *op_graph(const struct op_case *oc, const struct mesh_case *mc)
{
	static const char *const names[] = {"a", "b", "c"};
	char xml[4096], place[64] = "";
	for (int d = 0; d < mc->ndim; d++)
		strcat(place, d ? " R" : "R");
	size_t at = (size_t)snprintf(xml, sizeof xml,
				     "<?xml version=\"1.0\"?><dtopt-graph version=\"1\" name=\"b\" view=\"global\">"
				     "<mesh name=\"m\" shape=\"%s\" dims=\"%s\"/>",
				     mc->shape, mc->dims);
	for (int i = 0; i < 3 && oc->inputs[i]; i++) {
		int64_t shape[DT_MAX_RANK], stride[DT_MAX_RANK];
		int rank = 0;
		for (const char *p = oc->inputs[i]; *p;) {
			char *end;
			shape[rank++] = strtoll(p, &end, 10);
			p = end;
		}
		dt_contiguous_strides(shape, rank, stride);
		char st[128] = "";
		for (int d = 0; d < rank; d++)
			snprintf(st + strlen(st), sizeof st - strlen(st), "%s%lld", d ? " " : "",
				 (long long)stride[d]);
		at += (size_t)snprintf(xml + at, sizeof xml - at,
				       "<node name=\"%s\" op=\"placeholder\"><tensor dtype=\"float32\" shape=\"%s\" "
				       "stride=\"%s\"/><sharding mesh=\"m\" placements=\"%s\"/></node>",
				       names[i], oc->inputs[i], st, place);
	}
	snprintf(xml + at, sizeof xml - at,
		 "<node name=\"op\" op=\"call_function\" %s</node>"
		 "<node name=\"output\" op=\"output\"><arg nodes=\"op\"/></node></dtopt-graph>",
		 oc->call);
	return load(xml);
}

/* A random placement of a tensor of rank `rank` over ndim mesh dims, from
 * {S(0), S(1), R, P(sum)} (S(1) only where the tensor has it). */
static void random_placements(int ndim, int rank, struct dt_placements *pl)
{
	memset(pl, 0, sizeof *pl);
	pl->ndim = (uint8_t)ndim;
	for (int m = 0; m < ndim; m++) {
		int k = (int)(next_random() % 4);
		if (k == 1 && rank < 2)
			k = 2;
		if (k <= 1)
			pl->p[m] = (struct dt_placement){.kind = DT_PL_SHARD, .dim = (int16_t)k};
		else if (k == 3)
			pl->p[m] = (struct dt_placement){.kind = DT_PL_PARTIAL, .reduce = DT_REDUCE_SUM};
	}
	dt_placements_default_order(pl);
}

struct sums {
	uint64_t searches, pq_pops, pq_costed, pq_plans, ex_strategies, ex_plans;
	double pq_seconds, ex_seconds;
	int disagreements;
};

/* One search each way from `cur`; accumulate. */
static void measure(struct dt_module *m, struct dt_rules *r, const struct dt_placements *cur,
		    struct sums *sum)
{
	struct dt_shard_request req = {.mesh = &m->meshes.data[0], .current = cur};
	struct dt_shard_space s = {0};
	struct dt_shard_choice pq = {0}, ex = {0};
	struct dt_shard_stats a = {0}, b = {0};
	double t0 = dt_now();
	dt_shard_space_init(&s, r, &req);
	dt_shard_search(&s, DT_SEARCH_PQ, &pq, &a);
	double t1 = dt_now();
	dt_shard_space_init(&s, r, &req);
	dt_shard_search(&s, DT_SEARCH_EXHAUSTIVE, &ex, &b);
	double t2 = dt_now();
	sum->searches++;
	sum->pq_pops += a.candidates;
	sum->pq_costed += a.costed;
	sum->pq_plans += a.plans;
	sum->ex_strategies += b.candidates;
	sum->ex_plans += b.plans;
	sum->pq_seconds += t1 - t0;
	sum->ex_seconds += t2 - t1;
	if (pq.found != ex.found || (pq.found && dt_shard_choice_compare(&pq, &ex) != 0))
		sum->disagreements++;
	dt_shard_choice_fini(&pq);
	dt_shard_choice_fini(&ex);
	dt_shard_space_fini(&s);
}

/* "Near" inputs: those of a random strategy with finite cost from random
 * placements, one (input, mesh dim) entry then made R. */
static bool near_inputs(struct dt_module *m, struct dt_rules *r, struct dt_placements *cur)
{
	struct dt_shard_request req = {.mesh = &m->meshes.data[0], .current = cur};
	struct dt_shard_space s = {0};
	dt_shard_space_init(&s, r, &req);
	int ndim = m->meshes.data[0].ndim;
	uint32_t rows[DT_MAX_MESH_DIMS];
	bool ok = false;
	for (int tries = 0; tries < 50 && !ok; tries++) {
		for (int d = 0; d < ndim; d++)
			rows[d] = (uint32_t)(next_random() % s.nrows);
		ok = true;
		for (uint32_t i = 0; i < r->nin; i++) {
			struct dt_placements pl = {.ndim = (uint8_t)ndim};
			for (int d = 0; d < ndim; d++)
				pl.p[d] = dt_shard_space_row(&s, rows[d])[r->nout + i];
			dt_placements_default_order(&pl);
			char err[128];
			ok &= dt_placements_validate(&pl, dt_rules_input(r, i)->rank, err, sizeof err);
			cur[i] = pl;
		}
	}
	if (ok) {
		uint32_t i = (uint32_t)(next_random() % r->nin);
		int d = (int)(next_random() % (uint64_t)ndim);
		cur[i].p[d] = (struct dt_placement){.kind = DT_PL_REPLICATE};
		dt_placements_default_order(&cur[i]);
	}
	dt_shard_space_fini(&s);
	return ok;
}

static int bench_search(int samples)
{
	int disagreements = 0;
	printf("strategy search, %d samples per op and mesh; candidates: pq = states popped, "
	       "exhaustive = strategies costed\n", samples);
	printf("%-16s %-8s %-6s %9s %9s %8s %10s %9s %10s %10s %8s\n", "op", "mesh", "inputs",
	       "pq pops", "pq costed", "pq plans", "exh strat", "exh plans", "pq us", "exh us",
	       "ratio");
	for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
		for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
			struct dt_module *m = op_graph(&ops[oi], &meshes[mi]);
			struct dt_rules r = {0};
			char err[128];
			if (dt_rules_fill(&r, m, dt_module_find_node(m, dt_str_intern(m, "op")), err,
					  sizeof err) != DT_OK)
				return 2;
			for (int near = 0; near <= 1; near++) {
				struct sums sum = {0};
				for (int k = 0; k < samples; k++) {
					struct dt_placements cur[3];
					for (uint32_t i = 0; i < r.nin; i++)
						random_placements(meshes[mi].ndim, dt_rules_input(&r, i)->rank,
								  &cur[i]);
					if (near && !near_inputs(m, &r, cur))
						continue;
					measure(m, &r, cur, &sum);
				}
				double n = (double)(sum.searches ? sum.searches : 1);
				printf("%-16s %-8s %-6s %9.1f %9.1f %8.1f %10.1f %9.1f %10.1f %10.1f %7.0fx\n",
				       ops[oi].label, meshes[mi].shape, near ? "near" : "random",
				       (double)sum.pq_pops / n, (double)sum.pq_costed / n,
				       (double)sum.pq_plans / n, (double)sum.ex_strategies / n,
				       (double)sum.ex_plans / n, sum.pq_seconds / n * 1e6,
				       sum.ex_seconds / n * 1e6,
				       (double)sum.ex_strategies / (double)(sum.pq_pops ? sum.pq_pops : 1));
				disagreements += sum.disagreements;
			}
			dt_rules_fini(&r);
			dt_module_destroy(m);
		}
	}
	printf("disagreements between pq and exhaustive: %d\n", disagreements);
	return disagreements ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* graph */

/* A global-view graph of `layers` blocks: x [B*S, H] @ S(0) R (data
 * parallel), weights tensor parallel; per block an attention-like part
 * (addmm q, view, permute, bmm, softmax, bmm, permute, view, mm) and an
 * MLP (addmm, gelu, mm, add residual, layer norm). */
static char *graph_text(int layers, size_t *len)
{
	size_t cap = 4096 + (size_t)layers * 6000, at = 0;
	char *x = malloc(cap);
	const int B = 4, S = 64, H = 256, HEADS = 8, D = H / HEADS, F = 4 * H;
#define EMIT(...) (at += (size_t)snprintf(x + at, cap - at, __VA_ARGS__))
#define PH(name, shape, stride, pl)                                                     \
	EMIT("<node name=\"%s\" op=\"placeholder\"><tensor dtype=\"float32\" shape=\"%s\" " \
	     "stride=\"%s\"/><sharding mesh=\"m\" placements=\"%s\"/></node>\n",          \
	     name, shape, stride, pl)
#define CALL(name, target, args)                                                        \
	EMIT("<node name=\"%s\" op=\"call_function\" target=\"%s\">%s</node>\n", name,     \
	     target, args)
	EMIT("<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"g\" view=\"global\">\n"
	     "<mesh name=\"m\" shape=\"2 4\" dims=\"dp tp\"/>\n");
	char shape[64], stride[64], name[64], args[512], prev[64] = "x";
	snprintf(shape, sizeof shape, "%d %d", B * S, H);
	snprintf(stride, sizeof stride, "%d 1", H);
	PH("x", shape, stride, "S(0) R");
	for (int l = 0; l < layers; l++) {
		char w[8][64];
		snprintf(w[0], 64, "wq%d", l);
		snprintf(shape, sizeof shape, "%d %d", H, H);
		snprintf(stride, sizeof stride, "%d 1", H);
		PH(w[0], shape, stride, "R S(1)");
		snprintf(w[1], 64, "wo%d", l);
		PH(w[1], shape, stride, "R S(0)");
		snprintf(w[2], 64, "bq%d", l);
		snprintf(shape, sizeof shape, "%d", H);
		PH(w[2], shape, "1", "R S(0)");
		snprintf(w[3], 64, "w1%d", l);
		snprintf(shape, sizeof shape, "%d %d", H, F);
		snprintf(stride, sizeof stride, "%d 1", F);
		PH(w[3], shape, stride, "R S(1)");
		snprintf(w[4], 64, "b1%d", l);
		snprintf(shape, sizeof shape, "%d", F);
		PH(w[4], shape, "1", "R S(0)");
		snprintf(w[5], 64, "w2%d", l);
		snprintf(shape, sizeof shape, "%d %d", F, H);
		snprintf(stride, sizeof stride, "%d 1", H);
		PH(w[5], shape, stride, "R S(0)");
		snprintf(w[6], 64, "lnw%d", l);
		snprintf(shape, sizeof shape, "%d", H);
		PH(w[6], shape, "1", "R R");
		snprintf(w[7], 64, "lnb%d", l);
		PH(w[7], shape, "1", "R R");
		char q[64], v[64], p[64], a[64], s[64], o[64], h[64], g[64], f[64], r[64];
		snprintf(q, 64, "q%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/><arg node=\"%s\"/>", w[2], prev, w[0]);
		CALL(q, "aten.addmm.default", args);
		snprintf(v, 64, "qv%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg ints=\"%d %d %d %d\"/>", q, B, S, HEADS, D);
		CALL(v, "aten.view.default", args);
		snprintf(p, 64, "qp%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg ints=\"0 2 1 3\"/>", v);
		CALL(p, "aten.permute.default", args);
		snprintf(name, 64, "qc%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/>", p);
		CALL(name, "aten.contiguous.default", args);
		snprintf(a, 64, "qr%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg ints=\"%d %d %d\"/>", name, B * HEADS, S, D);
		CALL(a, "aten.view.default", args);
		snprintf(name, 64, "kt%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg int=\"1\"/><arg int=\"2\"/>", a);
		CALL(name, "aten.transpose.int", args);
		snprintf(s, 64, "sc%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/>", a, name);
		CALL(s, "aten.bmm.default", args);
		snprintf(name, 64, "sm%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg int=\"-1\"/><arg bool=\"false\"/>", s);
		CALL(name, "aten._softmax.default", args);
		snprintf(o, 64, "at%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/>", name, a);
		CALL(o, "aten.bmm.default", args);
		snprintf(name, 64, "ov%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg ints=\"%d %d %d %d\"/>", o, B, HEADS, S, D);
		CALL(name, "aten.view.default", args);
		snprintf(v, 64, "op%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg ints=\"0 2 1 3\"/>", name);
		CALL(v, "aten.permute.default", args);
		snprintf(p, 64, "oc%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/>", v);
		CALL(p, "aten.contiguous.default", args);
		snprintf(name, 64, "or%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg ints=\"%d %d\"/>", p, B * S, H);
		CALL(name, "aten.view.default", args);
		snprintf(h, 64, "proj%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/>", name, w[1]);
		CALL(h, "aten.mm.default", args);
		snprintf(r, 64, "res%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/>", prev, h);
		CALL(r, "aten.add.Tensor", args);
		snprintf(f, 64, "fc%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/><arg node=\"%s\"/>", w[4], r, w[3]);
		CALL(f, "aten.addmm.default", args);
		snprintf(g, 64, "gelu%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/>", f);
		CALL(g, "aten.gelu.default", args);
		snprintf(name, 64, "fcb%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/>", g, w[5]);
		CALL(name, "aten.mm.default", args);
		snprintf(a, 64, "resb%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg node=\"%s\"/>", r, name);
		CALL(a, "aten.add.Tensor", args);
		snprintf(s, 64, "ln%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg ints=\"%d\"/><arg node=\"%s\"/><arg node=\"%s\"/><arg float=\"1e-05\"/>",
			 a, H, w[6], w[7]);
		CALL(s, "aten.native_layer_norm.default", args);
		snprintf(prev, sizeof prev, "lnout%d", l);
		snprintf(args, sizeof args, "<arg node=\"%s\"/><arg int=\"0\"/>", s);
		CALL(prev, "operator.getitem", args);
	}
	EMIT("<node name=\"output\" op=\"output\"><arg nodes=\"%s\"/></node>\n</dtopt-graph>\n", prev);
#undef EMIT
#undef PH
#undef CALL
	*len = at;
	return x;
}

static int bench_graph(int layers, int only)
{
	size_t len;
	char *xml = graph_text(layers, &len);
	for (int mode = DT_SEARCH_PQ; mode <= DT_SEARCH_EXHAUSTIVE; mode++) {
		if (only >= 0 && mode != only)
			continue;
		struct dt_module *m = load(xml);
		uint32_t before = dt_graph_count(m);
		struct dt_diag d;
		dt_diag_init(&d);
		struct dt_pass_options options = {.shard_search = (uint8_t)mode};
		struct dt_arena scratch;
		dt_arena_init(&scratch);
		struct dt_pass_ctx ctx = {m, &d, &scratch, &options, NULL};
		double t0 = dt_now();
		int rc = dt_shard_prop(&ctx, NULL);
		double t1 = dt_now();
		dt_arena_fini(&scratch);
		if (rc != DT_OK)
			return 1;
		printf("shard-prop --search=%s: %d layers, %u nodes (+%u redistributions) in %.3f s: "
		       "%.0f nodes/s\n",
		       mode == DT_SEARCH_PQ ? "pq" : "exhaustive", layers, before,
		       dt_graph_count(m) - before, t1 - t0, (double)before / (t1 - t0));
		dt_module_destroy(m);
	}
	free(xml);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "search") == 0)
		return bench_search(argc > 2 ? atoi(argv[2]) : 200);
	if (argc >= 2 && strcmp(argv[1], "graph") == 0)
		return bench_graph(argc > 2 ? atoi(argv[2]) : 2000,
				   argc > 3 ? (strcmp(argv[3], "pq") == 0 ? DT_SEARCH_PQ
									 : DT_SEARCH_EXHAUSTIVE)
					    : -1);
	fprintf(stderr, "usage: bench_sharding search [SAMPLES] | graph [LAYERS [pq|exhaustive]]\n");
	return 2;
}
