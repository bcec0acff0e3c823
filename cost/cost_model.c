// SPDX-License-Identifier: MIT
/* cost_model.c: the alpha-beta communication cost model of semantics §5,
 * after DTensor's torch/distributed/tensor/_collective_utils.py
 * (MeshTopoInfo, allgather_cost, allreduce_cost, reduce_scatter_cost), and
 * the per-group table of a module's collectives. */
#include "cost_model.h"

#include <string.h>

static const char *const comm_kind_names[DT_NCOMM_KINDS] = {
    [DT_COMM_ALL_GATHER] = "all_gather",
    [DT_COMM_REDUCE_SCATTER] = "reduce_scatter",
    [DT_COMM_ALL_REDUCE] = "all_reduce",
    [DT_COMM_ALL_TO_ALL] = "all_to_all",
};

const char *dt_comm_kind_name(enum dt_comm_kind kind)
{
	DT_REQUIRE(kind >= 0 && kind < DT_NCOMM_KINDS);
	return comm_kind_names[kind];
}

int dt_comm_kind_of_op(int op)
{
	switch (op) {
	case DT_OP_ALL_GATHER:
		return DT_COMM_ALL_GATHER;
	case DT_OP_REDUCE_SCATTER:
		return DT_COMM_REDUCE_SCATTER;
	case DT_OP_ALL_REDUCE:
		return DT_COMM_ALL_REDUCE;
	case DT_OP_ALL_TO_ALL:
	case DT_OP_ALL_PERMUTE: /* one peer each way: counted as one */
	case DT_OP_ALL_TO_ALL_V:
		return DT_COMM_ALL_TO_ALL;
	default:
		return -1;
	}
}

void dt_mesh_links(const struct dt_topology *t, const struct dt_mesh *mesh,
		   struct dt_mesh_links *out)
{
	int64_t devices = 1;
	for (int d = mesh->ndim - 1; d >= 0; d--) {
		devices *= mesh->shape[d];
		bool inter_host = devices > t->devices_per_host;
		out->bandwidth[d] =
		    inter_host ? t->bandwidth * t->inter_host_bandwidth_factor
			       : t->bandwidth;
		out->latency[d] =
		    inter_host ? t->inter_host_latency : t->latency;
	}
}

/* The hops of a ring collective over n ranks: n - 1, twice that for an
 * all_reduce (a reduce-scatter, then an all-gather). */
static double ring_hops(int64_t n, enum dt_comm_kind kind)
{
	double hops = (double)(n - 1);
	return kind == DT_COMM_ALL_REDUCE ? 2 * hops : hops;
}

double dt_comm_cost(const struct dt_topology *t, const struct dt_mesh *mesh,
		    const uint8_t *dims, int ndims, enum dt_comm_kind kind,
		    double bytes)
{
	struct dt_mesh_links links;
	dt_mesh_links(t, mesh, &links);
	/* A flattened group is as slow as its slowest dim; size-1 dims carry
	 * no traffic and do not count. A group of one rank still pays the
	 * launch (base latency), as in DTensor. */
	int64_t n = 1;
	double bandwidth = 1, latency = 0;
	for (int i = 0; i < ndims; i++) {
		int d = dims[i];
		if (mesh->shape[d] == 1)
			continue;
		if (n == 1 || links.bandwidth[d] < bandwidth)
			bandwidth = links.bandwidth[d];
		if (links.latency[d] > latency)
			latency = links.latency[d];
		n *= mesh->shape[d];
	}
	/* (dividing by 2^30 is exact: the same bits as scaling the bytes
	 * first) */
	double cost = t->base_latency + ring_hops(n, kind) * latency +
		      dt_comm_sent(mesh, dims, ndims, kind, bytes) /
			      (double)(1 << 30) / bandwidth * 1e6;
	if (kind == DT_COMM_ALL_TO_ALL)
		cost += t->all_to_all_penalty;
	return cost;
}

double dt_comm_sent(const struct dt_mesh *mesh, const uint8_t *dims,
		    int ndims, enum dt_comm_kind kind, double bytes)
{
	int64_t n = 1;
	for (int i = 0; i < ndims; i++)
		n *= mesh->shape[dims[i]];
	return bytes * ring_hops(n, kind) / (double)n;
}

double dt_permute_cost(const struct dt_topology *t, const struct dt_mesh *mesh,
		       double bytes)
{
	struct dt_mesh_links links;
	dt_mesh_links(t, mesh, &links);
	double bandwidth = 0, latency = 0;
	for (int d = 0; d < mesh->ndim; d++) {
		if (mesh->shape[d] == 1)
			continue;
		if (bandwidth == 0 || links.bandwidth[d] < bandwidth)
			bandwidth = links.bandwidth[d];
		if (links.latency[d] > latency)
			latency = links.latency[d];
	}
	if (bandwidth == 0) /* one rank: the launch only */
		return t->base_latency;
	return t->base_latency + latency +
	       bytes / (double)(1 << 30) / bandwidth * 1e6;
}

static double tensor_bytes(const struct dt_module *m, const struct dt_tensor *t)
{
	int rank;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	return (double)dt_numel(shape, rank) *
	       dt_dtype_size((enum dt_dtype)t->dtype);
}

/* The first node argument's result 0, or NULL when unknown. */
static const struct dt_tensor *input_tensor(const struct dt_module *m,
					    const struct dt_node *n)
{
	if (n->nargs == 0 || dt_node_arg(m, n, 0)->kind != DT_ARG_NODE)
		return NULL;
	const struct dt_node *in = dt_node_get(m, dt_node_arg(m, n, 0)->v.node);
	return in->ntensors ? dt_node_tensor(m, in, 0) : NULL;
}

double dt_comm_bytes(const struct dt_module *m, const struct dt_node *n)
{
	int kind = dt_comm_kind_of_op(n->op);
	if (kind < 0)
		return 0;
	if (kind == DT_COMM_ALL_GATHER)
		return n->ntensors ? tensor_bytes(m, dt_node_tensor(m, n, 0))
				   : 0;
	const struct dt_tensor *in = input_tensor(m, n);
	return in ? tensor_bytes(m, in) : 0;
}

struct compute_inputs {
	const struct dt_module *m;
	double bytes;
	uint32_t last[2]; /* the last two tensor inputs, latest in [1] */
};

static void add_input(void *ud, uint32_t input)
{
	struct compute_inputs *c = ud;
	const struct dt_node *in = dt_node_get(c->m, input);
	if (!in->ntensors)
		return;
	c->bytes += tensor_bytes(c->m, dt_node_tensor(c->m, in, 0));
	c->last[0] = c->last[1];
	c->last[1] = input;
}

double dt_roofline_us(const struct dt_topology *t, double flops, double bytes)
{
	double t_flops = flops / (t->device_tflops * 1e6);
	double t_bytes = bytes / (t->device_bandwidth * 1e3);
	return t_flops > t_bytes ? t_flops : t_bytes;
}

double dt_compute_cost(const struct dt_topology *t, const struct dt_module *m,
		       const struct dt_node *n)
{
	if (n->kind != DT_NODE_CALL || n->op == DT_OP_UNKNOWN || !n->ntensors)
		return 0;
	enum dt_op op = (enum dt_op)n->op;
	if (dt_op_has(op, DT_OPF_VIEW) || dt_op_has(op, DT_OPF_STRUCTURAL) ||
	    dt_op_has(op, DT_OPF_COLLECTIVE) || dt_op_has(op, DT_OPF_WAIT))
		return 0;
	struct compute_inputs c = {.m = m};
	dt_node_for_each_input(m, n, add_input, &c);
	const struct dt_tensor *out = dt_node_tensor(m, n, 0);
	double out_bytes = tensor_bytes(m, out);
	double numel = out_bytes / dt_dtype_size((enum dt_dtype)out->dtype);
	double flops = numel;
	if (dt_op_has(op, DT_OPF_MATMUL) && c.last[0]) {
		int rank;
		const int64_t *a = dt_ints_get(
			m, dt_node_tensor(m, dt_node_get(m, c.last[0]), 0)->shape,
			&rank);
		flops = 2.0 * numel * (double)(rank ? a[rank - 1] : 1);
	}
	return DT_KERNEL_LAUNCH_US + dt_roofline_us(t, flops, c.bytes + out_bytes);
}

static void ignore_diag(void *ud, const struct dt_diag_entry *e)
{
	(void)ud;
	(void)e;
}

/* The declared group collective `n` names, or -1 (the verifier reports
 * unbound arguments and undeclared groups). */
static int comm_group(const struct dt_module *m, const struct dt_node *n)
{
	struct dt_diag quiet;
	dt_diag_init(&quiet);
	quiet.emit = ignore_diag;
	struct dt_bound_args b;
	if (dt_op_bind(m, n, &b, &quiet) != DT_OK)
		return -1;
	const struct dt_op_info *info = dt_op_get((enum dt_op)n->op);
	for (int i = 0; i < info->nparams; i++)
		if (strcmp(info->params[i].name, "group_name") == 0 && b.arg[i])
			return dt_module_find_group(m, b.arg[i]->v.s);
	return -1;
}

static void copy_name(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src);
}

/* The row of (kind, mesh, dims), appended when new. */
static struct dt_comm_row *table_row(struct dt_comm_table *t,
				     enum dt_comm_kind kind, const char *mesh,
				     const char *dims, const char *group)
{
	for (uint32_t i = 0; i < t->rows.len; i++) {
		struct dt_comm_row *r = &t->rows.data[i];
		if (r->kind == kind && strcmp(r->mesh, mesh) == 0 &&
		    strcmp(r->dims, dims) == 0)
			return r;
	}
	uint32_t i = dt_vec_grow(&t->rows, 1);
	struct dt_comm_row *r = &t->rows.data[i];
	*r = (struct dt_comm_row){.kind = kind};
	copy_name(r->mesh, sizeof r->mesh, mesh);
	copy_name(r->dims, sizeof r->dims, dims);
	copy_name(r->group, sizeof r->group, group);
	return r;
}

void dt_comm_table_fill(struct dt_comm_table *t, const struct dt_module *m,
			const struct dt_topology *topo)
{
	if (!topo)
		topo = &m->topology;
	dt_foreach_node(m, id)
	{
		const struct dt_node *n = dt_node_get(m, id);
		int kind = dt_comm_kind_of_op(n->op);
		if (kind < 0)
			continue;
		int g = comm_group(m, n);
		if (g < 0)
			continue;
		const struct dt_group *grp = &m->groups.data[g];
		const struct dt_mesh *mesh = &m->meshes.data[grp->mesh];
		char dims[sizeof t->rows.data[0].dims] = "";
		size_t used = 0;
		for (int i = 0; i < grp->ndims && used < sizeof dims; i++)
			used += (size_t)snprintf(
			    dims + used, sizeof dims - used, "%s%s",
			    i ? " " : "",
			    dt_str_get(m, mesh->dims[grp->dims[i]]));
		struct dt_comm_row *r = table_row(
		    t, (enum dt_comm_kind)kind, dt_str_get(m, mesh->name), dims,
		    dt_str_get(m, grp->name));
		double bytes = dt_comm_bytes(m, n);
		r->count++;
		r->bytes += bytes;
		r->sent += n->op == DT_OP_ALL_PERMUTE
			? bytes
			: dt_comm_sent(mesh, grp->dims, grp->ndims,
				       (enum dt_comm_kind)kind, bytes);
		r->time_us += n->op == DT_OP_ALL_PERMUTE
			? dt_permute_cost(topo, mesh, bytes)
			: dt_comm_cost(topo, mesh, grp->dims, grp->ndims,
				       (enum dt_comm_kind)kind, bytes);
	}
}

void dt_comm_table_fini(struct dt_comm_table *t)
{
	dt_vec_free(&t->rows);
}
