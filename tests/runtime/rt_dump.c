// SPDX-License-Identifier: MIT
/* rt_dump.c: test-only driver for check_torch.py: reads a graph, infers
 * shapes, runs it once on the CPU backend (a global-view graph as the
 * single-rank reference) and prints every placeholder's value and every
 * output as text:
 *   input NAME DTYPE RANK DIMS...      then one line of values
 *   output INDEX DTYPE RANK DIMS...    then one line of values
 * Values are row-major, %.17g. Exit 0 ok, 1 on any error. */
#include "frontend.h"
#include "passes.h"
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

/* Prints t (host memory: the CPU backend's memory is the host's). */
static void print_tensor(const char *kind, const char *name,
			 const struct dt_rt_tensor *t)
{
	printf("%s %s %s %d", kind, name, dt_dtype_name((enum dt_dtype)t->dtype), t->rank);
	for (int d = 0; d < t->rank; d++)
		printf(" %lld", (long long)t->shape[d]);
	printf("\n");
	int64_t idx[DT_MAX_RANK] = {0}, n = dt_rt_numel(t);
	for (int64_t i = 0; i < n; i++) {
		printf("%s%.17g", i ? " " : "",
		       dt_load_element((enum dt_dtype)t->dtype, dt_rt_element(t, idx)));
		for (int d = t->rank - 1; d >= 0 && ++idx[d] == t->shape[d]; d--)
			idx[d] = 0;
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rt_dump GRAPH.xml [SEED]\n");
		return 2;
	}
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	struct dt_diag diag;
	dt_diag_init(&diag);
	struct dt_read_options ropt = {0};
	struct dt_module *m;
	if (dt_read_file(argv[1], &ropt, &diag, &m) != DT_OK)
		return 1;
	struct dt_pipeline pipe;
	struct dt_pipeline_options popt = {0};
	if (dt_pipeline_parse(&pipe, "verify,shape-infer", &diag) != DT_OK ||
	    dt_pipeline_run(m, &pipe, &popt, &diag) != DT_OK) {
		dt_module_destroy(m);
		return 1;
	}
	struct dt_backend *b = dt_backend_cpu_create(&diag);
	int rc = 0;
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		if (n->kind != DT_NODE_PLACEHOLDER)
			continue;
		struct dt_rt_tensor t;
		if (dt_materialize_input(m, n, 0, seed, b, &t) != DT_OK) {
			rc = 1;
			break;
		}
		print_tensor("input", dt_str_get(m, n->name), &t);
		dt_buffer_release(b, t.buf);
	}
	struct dt_run_options opt = {.seed = seed, .iters = 1};
	struct dt_run_result res;
	if (rc == 0 && dt_interpret(m, b, &opt, &res) == DT_OK) {
		for (uint32_t i = 0; i < res.noutputs; i++) {
			char name[16];
			snprintf(name, sizeof(name), "%u", i);
			if (res.outputs[i].buf)
				print_tensor("output", name, &res.outputs[i]);
		}
		dt_run_result_fini(&res);
	} else {
		rc = 1;
	}
	b->ops->destroy(b);
	dt_module_destroy(m);
	return rc;
}
