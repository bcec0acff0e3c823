// SPDX-License-Identifier: MIT
/* bench_interp.c: the interpreter's overhead per node: a chain of N cheap
 * elementwise ops on tiny tensors run by dt_interpret, against the same
 * kernels called directly in a loop. Prints both per node and the
 * difference. Usage: bench_interp [N] [ITERS]. */
#include "frontend.h"
#include "passes.h"
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

static char *chain_graph(int n)
{
	size_t cap = (size_t)n * 256 + 1024, at = 0;
	char *s = malloc(cap);
	at += (size_t)snprintf(s + at, cap - at,
			       "<dtopt-graph version=\"1\" name=\"chain\" view=\"local\">\n"
			       "<node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" shape=\"4\"/></node>\n");
	for (int i = 0; i < n; i++) {
		char input[32] = "x";
		if (i)
			snprintf(input, sizeof(input), "n%d", i - 1);
		at += (size_t)snprintf(s + at, cap - at,
				       "<node name=\"n%d\" op=\"call_function\" target=\"%s\">"
				       "<arg node=\"%s\"/><tensor dtype=\"float32\" shape=\"4\"/></node>\n",
				       i, i % 2 ? "aten.neg.default" : "aten.relu.default",
				       input);
	}
	snprintf(s + at, cap - at,
		 "<node name=\"output\" op=\"output\"><arg nodes=\"n%d\"/></node>\n"
		 "</dtopt-graph>\n", n - 1);
	return s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10000;
	if (n < 1)
		n = 1;
	int iters = argc > 2 ? atoi(argv[2]) : 20;
	struct dt_diag d;
	dt_diag_init(&d);
	char *text = chain_graph(n);
	struct dt_module *m;
	if (dt_read_memory(text, strlen(text), "chain.xml", NULL, &d, &m) != DT_OK)
		return 1;
	free(text);
	struct dt_pipeline p;
	struct dt_pipeline_options po = {0};
	if (dt_pipeline_parse(&p, "verify,shape-infer", &d) != DT_OK ||
	    dt_pipeline_run(m, &p, &po, &d) != DT_OK)
		return 1;
	struct dt_backend *b = dt_backend_cpu_create(&d);
	struct dt_run_options ro = {.iters = iters, .warmup = 2};
	struct dt_run_result res;
	if (dt_interpret(m, b, &ro, &res) != DT_OK)
		return 1;
	double interp = res.seconds_per_iter / n;
	dt_run_result_fini(&res);

	/* The same kernels, called directly on preallocated tensors. */
	struct dt_rt_tensor in, out;
	dt_rt_from_meta(&in, m, dt_node_tensor(m, dt_node_get(m, m->first), 0));
	out = in;
	in.buf = dt_buffer_create(b, dt_rt_storage_bytes(&in));
	out.buf = dt_buffer_create(b, dt_rt_storage_bytes(&out));
	memset(in.buf->data, 0, in.buf->bytes);
	struct dt_rt_tensor **values = calloc(m->nodes.len, sizeof(*values));
	for (uint32_t i = 0; i < m->nodes.len; i++)
		values[i] = &in;
	struct dt_bound_args *bound = calloc(m->nodes.len, sizeof(*bound));
	dt_foreach_node(m, id)
	{
		const struct dt_node *nd = dt_node_get(m, id);
		if (nd->kind == DT_NODE_CALL)
			dt_op_bind(m, nd, &bound[id], &d);
	}
	/* Like the interpreter: 2 warm-up passes, then the mean of `iters`. */
	double t0 = 0;
	for (int it = 0; it < iters + 2; it++) {
		if (it == 2)
			t0 = dt_rt_now();
		dt_foreach_node(m, id)
		{
			const struct dt_node *nd = dt_node_get(m, id);
			if (nd->kind != DT_NODE_CALL)
				continue;
			struct dt_kernel_call c = {m, nd, (enum dt_op)nd->op,
						   &bound[id], values, &out, 1, 0};
			if (dt_cpu_kernel(b, &c) != DT_OK)
				return 1;
		}
	}
	double direct = (dt_rt_now() - t0) / iters / n;
	printf("nodes %d: interpreter %.3f us/node, kernels alone %.3f us/node, "
	       "overhead %.3f us/node\n",
	       n, interp * 1e6, direct * 1e6, (interp - direct) * 1e6);
	free(values);
	free(bound);
	dt_buffer_release(b, in.buf);
	dt_buffer_release(b, out.buf);
	b->ops->destroy(b);
	dt_module_destroy(m);
	return 0;
}
