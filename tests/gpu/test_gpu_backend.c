// SPDX-License-Identifier: MIT
/* test_gpu_backend.c: the NCCL+CUDA backend against the CPU backend on
 * one process (one GPU: NCCL refuses two ranks on one device). Every
 * graph given runs on both backends with the same seed, and every output
 * is compared: data movement (copies, joins, pads, factories, gathers,
 * collectives, placeholders) must be bitwise equal, computed values within
 * `dtopt run --compare`'s tolerance (1e-5 float32, 1e-2 bfloat16, 1e-3
 * float16, 1e-9 float64, exact for integers and bool). Prints one line per
 * graph (and each output that is not bitwise equal), the ops that ran on
 * the CPU fallback, and with --bench the interpreter's overhead per node
 * and large matrix products on the GPU.
 *
 * Usage: test_gpu_backend [--bench] [--seed S] GRAPH.xml...
 * Exit: 0 all equal, 1 a mismatch or failure, 77 (skip) without a GPU. */
#include "cuda_internal.h"
#include "dtopt_config.h"
#include "frontend.h"
#include "passes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if DTOPT_HAVE_MPI
#include <mpi.h>
#endif

static struct dt_module *load(const char *path, const char *text,
			      struct dt_diag *d)
{
	struct dt_read_options ropt = {0};
	struct dt_module *m = NULL;
	int rc = text ? dt_read_memory(text, strlen(text), path, &ropt, d, &m)
		      : dt_read_file(path, &ropt, d, &m);
	if (rc != DT_OK)
		return NULL;
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {0};
	if (dt_pipeline_parse(&p, "verify,shape-infer", d) != DT_OK ||
	    dt_pipeline_run(m, &p, &popt, d) != DT_OK) {
		dt_module_destroy(m);
		return NULL;
	}
	return m;
}

/* The ranks a local-view graph needs (1 + the largest mesh device). */
static int64_t ranks_needed(const struct dt_module *m)
{
	int64_t need = 1;
	for (uint32_t i = 0; m->view == DT_VIEW_LOCAL && i < m->meshes.len; i++)
		for (int64_t k = 0; k < m->meshes.data[i].size; k++)
			if (dt_mesh_device(&m->meshes.data[i], k) + 1 > need)
				need =
				    dt_mesh_device(&m->meshes.data[i], k) + 1;
	return need;
}

/* Whether output node `id` only moves data: its value comes, through
 * views, getitem and waits, from a copy, join, pad, factory, gather,
 * collective or placeholder. */
static bool moves_data(const struct dt_module *m, uint32_t id)
{
	for (;;) {
		const struct dt_node *n = dt_node_get(m, id);
		if (n->kind == DT_NODE_PLACEHOLDER)
			return true;
		enum dt_op op = (enum dt_op)n->op;
		if (op == DT_OP_GETITEM || dt_op_has(op, DT_OPF_VIEW) ||
		    dt_op_has(op, DT_OPF_WAIT)) {
			const struct dt_arg *a = dt_node_arg(m, n, 0);
			if (a->kind != DT_ARG_NODE)
				return false;
			id = a->v.node;
			continue;
		}
		switch (op) {
		case DT_OP_REDISTRIBUTE:
		case DT_OP_UNSAFE_VIEW:
		case DT_OP_RESHAPE:
		case DT_OP_CAT:
		case DT_OP_STACK:
		case DT_OP_CLONE:
		case DT_OP_CONTIGUOUS:
		case DT_OP_LIFT_FRESH_COPY:
		case DT_OP_CONSTANT_PAD_ND:
		case DT_OP_CONVERT_ELEMENT_TYPE:
		case DT_OP_TO_COPY:
		case DT_OP_SLICE_BACKWARD:
		case DT_OP_SELECT_BACKWARD:
		case DT_OP_EMBEDDING:
			return true;
		case DT_OP_RANDN_LIKE: /* log and cos of the GPU's libm */
			return false;
		default:
			return dt_op_has(op, DT_OPF_CREATION) ||
			       dt_op_has(op, DT_OPF_COLLECTIVE);
		}
	}
}

static double tolerance(enum dt_dtype t)
{
	switch (t) {
	case DT_FLOAT64:
		return 1e-9;
	case DT_FLOAT32:
		return 1e-5;
	case DT_FLOAT16:
		return 1e-3;
	case DT_BFLOAT16:
		return 1e-2;
	default:
		return 0;
	}
}

struct verdict {
	int bitwise, equal, close, bad;
	double max_abs, max_rel;
};

/* Compare output i of the two runs; prints it unless bitwise equal. */
static void compare(const char *name, bool movement,
		    const struct dt_rt_tensor *a, const struct dt_rt_tensor *b,
		    struct verdict *v)
{
	if (!a->buf || !b->buf || a->dtype != b->dtype || a->rank != b->rank ||
	    memcmp(a->shape, b->shape, (size_t)a->rank * sizeof(int64_t)) !=
		0) {
		printf("    %-24s MISMATCH: dtype, shape or presence differ\n",
		       name);
		v->bad++;
		return;
	}
	enum dt_dtype t = (enum dt_dtype)a->dtype;
	int64_t n = dt_rt_numel(a), size = dt_dtype_size(t), bad = 0,
		unequal = 0;
	const char *pa = dt_rt_at(a, a->offset), *pb = dt_rt_at(b, b->offset);
	if (memcmp(pa, pb, (size_t)(n * size)) == 0) {
		v->bitwise++;
		return;
	}
	double err_max = 0, rel_max = 0, tol = tolerance(t);
	for (int64_t i = 0; i < n; i++) {
		double x = dt_load_element(t, pa + i * size),
		       y = dt_load_element(t, pb + i * size);
		if (x == y || (isnan(x) && isnan(y)))
			continue;
		unequal++;
		double err = fabs(x - y), big = fmax(fabs(x), fabs(y));
		double rel = big > 0 ? err / big : 0;
		if (isnan(err))
			err = rel = INFINITY;
		err_max = fmax(err_max, err);
		rel_max = fmax(rel_max, rel);
		if (!(err <= tol + tol * big))
			bad++;
	}
	v->max_abs = fmax(v->max_abs, err_max);
	v->max_rel = fmax(v->max_rel, rel_max);
	const char *what = bad ? "MISMATCH" : unequal == 0 ? "equal" : "close";
	if (movement && unequal) {
		what = "MISMATCH (data movement must be bitwise)";
		bad = bad ? bad : unequal;
	}
	if (bad)
		v->bad++;
	else if (unequal)
		v->close++;
	else
		v->equal++;
	printf("    %-24s %-9s %s: max abs err %.3g, max rel err %.3g, %lld of "
	       "%lld beyond tolerance\n",
	       name, dt_dtype_name(t), what, err_max, rel_max, (long long)bad,
	       (long long)n);
}

/* The output nodes of m in output order (0 for none). */
static uint32_t *output_ids(const struct dt_module *m, uint32_t *count)
{
	*count = 0;
	uint32_t *ids = NULL;
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_OUTPUT || n->nargs == 0)
			continue;
		const struct dt_arg *a = dt_node_arg(m, n, 0);
		uint32_t k = a->kind == DT_ARG_NODE ? 1 : a->len;
		ids = dt_calloc(k + 1, sizeof(uint32_t));
		for (uint32_t i = 0; i < k; i++)
			ids[i] =
			    a->kind == DT_ARG_NODE ? a->v.node
			    : a->kind == DT_ARG_NODES
				? m->refs.data[a->v.first + i]
			    : m->args.data[a->v.first + i].kind == DT_ARG_NODE
				? m->args.data[a->v.first + i].v.node
				: 0;
		*count = k;
	}
	return ids;
}

/* Run `path` on both backends and compare; returns 0 when every output
 * agrees (or the graph needs more ranks than one GPU gives), else 1. */
static int check_graph(const char *path, uint64_t seed, struct dt_diag *d)
{
	struct dt_module *m = load(path, NULL, d);
	if (!m) {
		printf("%s: FAIL (cannot load)\n", path);
		return 1;
	}
	int64_t need = ranks_needed(m);
	if (need > 1) {
		printf("%s: skipped (a local-view graph for %lld ranks; one "
		       "GPU runs one)\n",
		       path, (long long)need);
		dt_module_destroy(m);
		return 0;
	}
	struct dt_run_options ro = {.seed = seed, .iters = 1};
	struct dt_run_result cpu, gpu;
	struct dt_backend *cb = dt_backend_cpu_create(d);
	int rc = dt_interpret(m, cb, &ro, &cpu);
	cb->ops->destroy(cb);
	struct dt_backend *gb =
	    rc == DT_OK ? dt_backend_nccl_create(m, d) : NULL;
	uint64_t fallbacks[DT_NOPS] = {0};
	double t0 = dt_rt_now();
	int grc = gb ? dt_interpret(m, gb, &ro, &gpu) : DT_ERUNTIME;
	double seconds = dt_rt_now() - t0;
	if (gb) {
		dt_backend_nccl_fallbacks(gb, fallbacks);
		gb->ops->destroy(gb);
	}
	if (rc != DT_OK || grc != DT_OK) {
		printf("%s: FAIL (%s run failed)\n", path,
		       rc != DT_OK ? "CPU" : "GPU");
		if (rc == DT_OK)
			dt_run_result_fini(&cpu);
		dt_module_destroy(m);
		return 1;
	}
	uint32_t nids;
	uint32_t *ids = output_ids(m, &nids);
	struct verdict v = {0};
	for (uint32_t i = 0; i < cpu.noutputs && i < gpu.noutputs; i++) {
		const char *name =
		    i < nids && ids[i]
			? dt_str_get(m, dt_node_get(m, ids[i])->name)
			: "(none)";
		if (!cpu.outputs[i].buf && !gpu.outputs[i].buf)
			continue;
		compare(name, i < nids && ids[i] && moves_data(m, ids[i]),
			&cpu.outputs[i], &gpu.outputs[i], &v);
	}
	if (cpu.noutputs != gpu.noutputs)
		v.bad++;
	printf("%s: %s: %u outputs: %d bitwise, %d equal, %d close, %d "
	       "mismatched; "
	       "max abs err %.3g, max rel err %.3g (GPU run %.1f ms)\n",
	       path, v.bad ? "FAIL" : "ok", cpu.noutputs, v.bitwise, v.equal,
	       v.close, v.bad, v.max_abs, v.max_rel, seconds * 1e3);
	bool any = false;
	for (int op = 0; op < DT_NOPS; op++) {
		if (!fallbacks[op])
			continue;
		printf("%s %s x%llu", any ? "," : "    CPU fallback:",
		       dt_op_get((enum dt_op)op)->target,
		       (unsigned long long)fallbacks[op]);
		any = true;
	}
	if (any)
		printf("\n");
	dt_free(ids);
	dt_run_result_fini(&cpu);
	dt_run_result_fini(&gpu);
	dt_module_destroy(m);
	return v.bad ? 1 : 0;
}

/* ---- benchmarks ---- */

/* A chain of n tiny elementwise ops (relu, neg, ...) on float32[4]. */
static char *chain_graph(int n)
{
	size_t cap = (size_t)n * 200 + 1024, at = 0;
	char *s = dt_malloc(cap);
	at += (size_t)snprintf(
	    s + at, cap - at,
	    "<dtopt-graph version=\"1\" name=\"chain\" view=\"local\">\n"
	    "<node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" "
	    "shape=\"4\"/></node>\n");
	for (int i = 0; i < n; i++) {
		char input[32] = "x";
		if (i)
			snprintf(input, sizeof(input), "n%d", i - 1);
		at += (size_t)snprintf(
		    s + at, cap - at,
		    "<node name=\"n%d\" op=\"call_function\" target=\"%s\">"
		    "<arg node=\"%s\"/></node>\n",
		    i, i % 2 ? "aten.neg.default" : "aten.relu.default", input);
	}
	snprintf(s + at, cap - at,
		 "<node name=\"output\" op=\"output\"><arg "
		 "nodes=\"n%d\"/></node>\n</dtopt-graph>\n",
		 n - 1);
	return s;
}

/* Interpreted chain vs the same kernels launched directly (both ended by
 * a synchronization): the interpreter's overhead per node on the GPU. */
static int bench_overhead(struct dt_diag *d, int n, int iters)
{
	char *text = chain_graph(n);
	struct dt_module *m = load("chain.xml", text, d);
	dt_free(text);
	struct dt_backend *b = m ? dt_backend_nccl_create(m, d) : NULL;
	if (!b)
		return 1;
	struct dt_run_options ro = {.iters = iters, .warmup = 2};
	struct dt_run_result res;
	if (dt_interpret(m, b, &ro, &res) != DT_OK)
		return 1;
	double interp = res.seconds_per_iter / n;
	dt_run_result_fini(&res);
	struct dt_rt_tensor in, out;
	dt_rt_from_meta(&in, m, dt_node_tensor(m, dt_node_get(m, m->first), 0));
	out = in;
	in.buf = dt_buffer_create(b, dt_rt_storage_bytes(&in));
	out.buf = dt_buffer_create(b, dt_rt_storage_bytes(&out));
	struct dt_rt_tensor **values = dt_calloc(m->nodes.len, sizeof(*values));
	struct dt_bound_args *bound = dt_calloc(m->nodes.len, sizeof(*bound));
	for (uint32_t i = 0; i < m->nodes.len; i++)
		values[i] = &in;
	dt_foreach_node(m, id)
	{
		const struct dt_node *nd = dt_node_get(m, id);
		if (nd->kind == DT_NODE_CALL)
			dt_op_bind(m, nd, &bound[id], d);
	}
	double t0 = 0;
	int rc = DT_OK;
	for (int it = 0; it < iters + 2 && rc == DT_OK; it++) {
		if (it == 2) {
			rc = b->ops->synchronize(b);
			t0 = dt_rt_now();
		}
		dt_foreach_node(m, id)
		{
			const struct dt_node *nd = dt_node_get(m, id);
			if (nd->kind != DT_NODE_CALL || rc != DT_OK)
				continue;
			struct dt_kernel_call c = {
			    m, nd, (enum dt_op)nd->op, &bound[id], values, &out,
			    1, 0};
			rc = b->ops->kernel(b, &c);
		}
	}
	if (rc == DT_OK)
		rc = b->ops->synchronize(b);
	double direct = (dt_rt_now() - t0) / iters / n;
	printf("bench: %d-node chain of tiny ops: interpreter %.3f us/node, "
	       "kernels launched "
	       "directly %.3f us/node, overhead %.3f us/node\n",
	       n, interp * 1e6, direct * 1e6, (interp - direct) * 1e6);
	dt_buffer_release(b, in.buf);
	dt_buffer_release(b, out.buf);
	dt_free(values);
	dt_free(bound);
	b->ops->destroy(b);
	dt_module_destroy(m);
	return rc == DT_OK ? 0 : 1;
}

/* The generic elementwise kernel's bandwidth: `adds` chained
 * add(prev, x) over [n, n] float32 (each reads two tensors and writes
 * one), then a sum; bytes moved over the time per iteration. */
static int bench_elementwise(struct dt_diag *d, int n, int adds, int iters)
{
	size_t cap = 4096 + (size_t)adds * 256, at = 0;
	char *text = dt_malloc(cap);
	at += (size_t)snprintf(
	    text + at, cap - at,
	    "<dtopt-graph version=\"1\" name=\"ew\" view=\"local\">\n"
	    "<node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" "
	    "shape=\"%d %d\"/></node>\n",
	    n, n);
	for (int i = 0; i < adds; i++) {
		char prev[32] = "x";
		if (i)
			snprintf(prev, sizeof(prev), "a%d", i - 1);
		at += (size_t)snprintf(
		    text + at, cap - at,
		    "<node name=\"a%d\" op=\"call_function\" "
		    "target=\"aten.add.Tensor\"><arg node=\"%s\"/>"
		    "<arg node=\"x\"/></node>\n",
		    i, prev);
	}
	snprintf(text + at, cap - at,
		 "<node name=\"s\" op=\"call_function\" "
		 "target=\"aten.sum.default\"><arg node=\"a%d\"/></node>\n"
		 "<node name=\"output\" op=\"output\"><arg "
		 "nodes=\"s\"/></node>\n</dtopt-graph>\n",
		 adds - 1);
	struct dt_module *m = load("ew.xml", text, d);
	dt_free(text);
	struct dt_backend *b = m ? dt_backend_nccl_create(m, d) : NULL;
	if (!b)
		return 1;
	struct dt_run_options ro = {.iters = iters, .warmup = 2};
	struct dt_run_result res;
	if (dt_interpret(m, b, &ro, &res) != DT_OK)
		return 1;
	double tensor = 4.0 * n * (double)n, s = res.seconds_per_iter;
	printf("bench: %d adds of [%d, %d] float32 + sum: %.3f ms per "
	       "iteration, %.0f GB/s\n",
	       adds, n, n, s * 1e3, (3.0 * adds + 1) * tensor / s / 1e9);
	dt_run_result_fini(&res);
	b->ops->destroy(b);
	dt_module_destroy(m);
	return 0;
}

/* out = sum(mm(a, b)) on [n, n] operands of `dtype`: seconds per mm. */
static int bench_mm(struct dt_diag *d, int n, const char *dtype, int iters)
{
	char text[2048];
	snprintf(
	    text, sizeof(text),
	    "<dtopt-graph version=\"1\" name=\"mm\" view=\"local\">\n"
	    "<node name=\"a\" op=\"placeholder\"><tensor dtype=\"%s\" "
	    "shape=\"%d %d\"/></node>\n"
	    "<node name=\"b\" op=\"placeholder\"><tensor dtype=\"%s\" "
	    "shape=\"%d %d\"/></node>\n"
	    "<node name=\"c\" op=\"call_function\" target=\"aten.mm.default\">"
	    "<arg node=\"a\"/><arg node=\"b\"/></node>\n"
	    "<node name=\"s\" op=\"call_function\" target=\"aten.sum.default\">"
	    "<arg node=\"c\"/></node>\n"
	    "<node name=\"output\" op=\"output\"><arg "
	    "nodes=\"s\"/></node>\n</dtopt-graph>\n",
	    dtype, n, n, dtype, n, n);
	struct dt_module *m = load("mm.xml", text, d);
	struct dt_backend *b = m ? dt_backend_nccl_create(m, d) : NULL;
	if (!b)
		return 1;
	struct dt_run_options ro = {.iters = iters, .warmup = 2};
	struct dt_run_result res;
	if (dt_interpret(m, b, &ro, &res) != DT_OK)
		return 1;
	double s = res.seconds_per_iter, flops = 2.0 * n * (double)n * n;
	printf("bench: mm %dx%dx%d %s (+ sum): %.3f ms per iteration, %.1f "
	       "TFLOP/s\n",
	       n, n, n, dtype, s * 1e3, flops / s / 1e12);
	dt_run_result_fini(&res);
	b->ops->destroy(b);
	dt_module_destroy(m);
	return 0;
}

int main(int argc, char **argv)
{
	int count = 0;
	if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
		printf("test_gpu_backend: no GPU visible: skipped\n");
		return 77;
	}
#if DTOPT_HAVE_MPI
	MPI_Init(NULL, NULL); /* a world of one: the MPI bootstrap path */
#endif
	struct dt_diag d;
	dt_diag_init(&d);
	bool bench = false;
	uint64_t seed = 0;
	int fails = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--bench") == 0)
			bench = true;
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else
			fails += check_graph(argv[i], seed, &d);
	}
	if (bench) {
		fails += bench_overhead(&d, 10000, 20);
		fails += bench_elementwise(&d, 8192, 8, 10);
		fails += bench_mm(&d, 8192, "float32", 5);
		fails += bench_mm(&d, 8192, "bfloat16", 20);
	}
	printf("test_gpu_backend: %s\n", fails ? "FAIL" : "ok");
#if DTOPT_HAVE_MPI
	MPI_Finalize();
#endif
	return fails ? 1 : 0;
}
