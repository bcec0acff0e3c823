// SPDX-License-Identifier: MIT
/* backend_cpu.c: the single-process backend: host memory, the CPU
 * kernels, and collectives only over groups of one rank (an identity
 * copy), which makes it the single-rank reference of `dtopt run --check`. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* The pending "collective" of a one-rank group: already complete. */
struct dt_pending {
	uint64_t issued; /* collectives run so far */
};

struct cpu_backend {
	struct dt_backend base; /* first: the interface's pointer is ours */
	struct dt_pending done;
};

static void *cpu_alloc(struct dt_backend *b, size_t bytes)
{
	(void)b;
	return malloc(bytes);
}

static void cpu_release(struct dt_backend *b, void *p)
{
	(void)b;
	free(p);
}

static int cpu_move(struct dt_backend *b, void *dst, const void *src,
		    size_t bytes)
{
	(void)b;
	memcpy(dst, src, bytes);
	return DT_OK;
}

static int cpu_collective(struct dt_backend *b, const struct dt_collective_call *c,
			  struct dt_pending **out)
{
	struct cpu_backend *cb = (struct cpu_backend *)b;
	if (c->group_size != 1)
		return dt_rt_fail(b, c->m, c->node,
				  "the single-process CPU backend runs collectives only on groups of size 1, this one has %lld ranks (use the MPI backend)",
				  (long long)c->group_size);
	if (dt_rt_numel(c->output) != dt_rt_numel(c->input))
		return dt_rt_fail(b, c->m, c->node, "the output does not match the input");
	if (dt_cpu_copy(b, c->output, c->input) != DT_OK)
		return DT_ERUNTIME;
	cb->done.issued++;
	*out = &cb->done;
	return DT_OK;
}

static int cpu_wait(struct dt_backend *b, struct dt_pending *p)
{
	(void)b;
	(void)p;
	return DT_OK;
}

static int cpu_synchronize(struct dt_backend *b)
{
	(void)b;
	return DT_OK;
}

static void cpu_destroy(struct dt_backend *b)
{
	dt_free(b);
}

static const struct dt_backend_ops cpu_ops = {
	.name = "cpu",
	.alloc = cpu_alloc,
	.release = cpu_release,
	.upload = cpu_move,
	.download = cpu_move,
	.copy = dt_cpu_copy,
	.kernel = dt_cpu_kernel,
	.collective = cpu_collective,
	.wait = cpu_wait,
	.synchronize = cpu_synchronize,
	.destroy = cpu_destroy,
};

void dt_backend_host_view(const struct dt_backend *b, struct dt_backend *view)
{
	*view = *b;
	view->ops = &cpu_ops;
}

struct dt_backend *dt_backend_cpu_create(struct dt_diag *d)
{
	struct cpu_backend *cb = dt_calloc(1, sizeof(*cb));
	cb->base.ops = &cpu_ops;
	cb->base.rank = 0;
	cb->base.world_size = 1;
	cb->base.diag = d;
	cb->base.memory = dt_host_memory();
	dt_host_heap_keep();
	return &cb->base;
}
