// SPDX-License-Identifier: MIT
/* cost_model.h: the alpha-beta communication cost model of semantics §5
 * (DTensor's constants by default) and the per-group table of collectives
 * that `opt --report` and `diff` print. Used by fuse-collectives, and later
 * by lowering and propagation. */
#ifndef DTOPT_COST_MODEL_H
#define DTOPT_COST_MODEL_H

#include "ir.h"

enum dt_comm_kind {
	DT_COMM_ALL_GATHER,
	DT_COMM_REDUCE_SCATTER,
	DT_COMM_ALL_REDUCE,
	DT_COMM_ALL_TO_ALL,
	DT_NCOMM_KINDS
};
/* "all_gather", "reduce_scatter", "all_reduce", "all_to_all". */
const char *dt_comm_kind_name(enum dt_comm_kind kind);
/* The kind of a collective op (dt.all_permute: all_to_all, one peer each
 * way), or -1 for any other op. */
int dt_comm_kind_of_op(int op);

/* Per mesh dim link parameters: DTensor's MeshTopoInfo. Walking mesh dims
 * from last to first, a dim whose cumulative device count exceeds
 * devices_per_host is inter-host (bandwidth × factor, inter-host latency). */
struct dt_mesh_links {
	double bandwidth[DT_MAX_MESH_DIMS]; /* GB/s */
	double latency[DT_MAX_MESH_DIMS];   /* µs per hop */
};
void dt_mesh_links(const struct dt_topology *t, const struct dt_mesh *mesh,
		   struct dt_mesh_links *out);

/* Modelled time in µs of one collective over the group of the ordered mesh
 * dims `dims` (a flattened group uses its slowest dim's bandwidth and
 * latency and the product of the sizes). `bytes` is the size the model
 * charges: the gathered (output) size for all_gather, the input size for
 * reduce_scatter and all_reduce, the local input for all_to_all.
 *   all_gather, reduce_scatter: base + (n-1)·lat + GiB·(n-1)/n / bw
 *   all_reduce: 2(n-1) hops and twice the bytes term
 *   all_to_all: as all_gather plus the penalty
 * A group of size 1 costs the base latency (and the all_to_all penalty):
 * the collective still launches, as DTensor charges it. */
double dt_comm_cost(const struct dt_topology *t, const struct dt_mesh *mesh,
		    const uint8_t *dims, int ndims, enum dt_comm_kind kind,
		    double bytes);

/* The bytes each rank sends in one such collective as the model charges
 * them (the bandwidth term of dt_comm_cost): bytes·(n-1)/n, twice that
 * for all_reduce (a ring's reduce-scatter, then its all-gather), n the
 * product of the group's dims of size > 1; 0 for a group of one rank.
 * NCCL's bus bandwidth counts the same bytes. An all_reduce of B bytes
 * sends twice what an all_gather of B does, so this, not `bytes`, is what
 * two plans' traffic compares by. */
double dt_comm_sent(const struct dt_mesh *mesh, const uint8_t *dims,
		    int ndims, enum dt_comm_kind kind, double bytes);

/* Modelled time, µs, of an all_permute (dt.all_permute) over the whole
 * mesh: every rank sends `bytes` to one other rank, one hop on the
 * slowest link of the mesh: base latency + its hop latency + bytes over
 * its bandwidth. */
double dt_permute_cost(const struct dt_topology *t, const struct dt_mesh *mesh,
		       double bytes);

/* The roofline of one kernel on topology `t`'s device, µs: the larger of
 * `flops` over its device_tflops and `bytes` (read and written) over its
 * device_bandwidth. The one compute model: dt_compute_cost's and the
 * whole-graph search's (sharding/problem.c). */
double dt_roofline_us(const struct dt_topology *t, double flops, double bytes);

/* Modelled compute of local-view node `n`, µs, on topology `t`'s device:
 * a kernel launch (DT_KERNEL_LAUNCH_US) plus dt_roofline_us of its flops
 * and the bytes it reads and writes. Flops: 2·numel(result)·K for the
 * matmul family (K the last dim of its first matrix), else one per element
 * of its result. 0 for placeholders, getitems, views, collectives, waits
 * and the output (no kernel). What bucket-collectives weighs the overlap a
 * bucket loses against; the topology's device rates (--device-tflops,
 * --device-bandwidth) say which device runs the graph (an H100 by
 * default; a CPU rank under MPI is some 10^5 times slower, semantics
 * §4.7). */
#define DT_KERNEL_LAUNCH_US 2.0
double dt_compute_cost(const struct dt_topology *t, const struct dt_module *m,
		       const struct dt_node *n);

/* The bytes the model charges for collective node `n` (see dt_comm_cost),
 * from its input and output tensors; 0 when they are unknown. */
double dt_comm_bytes(const struct dt_module *m, const struct dt_node *n);

/* The collectives of a module, counted per (kind, mesh, ordered group dims):
 * what `opt --report` and `diff` print. Rows hold their own copies of the
 * names, so a table outlives the module it was taken from (the report takes
 * one before the passes run and one after). */
struct dt_comm_row {
	enum dt_comm_kind kind;
	char mesh[64];      /* mesh name */
	char dims[128];     /* ordered group dims, e.g. "tp dp" */
	char group[64];     /* the first group name seen with this layout */
	int64_t count;
	double bytes;       /* sum of dt_comm_bytes */
	double sent;        /* sum of dt_comm_sent (an all_permute: bytes) */
	double time_us;     /* sum of dt_comm_cost */
};
struct dt_comm_table {
	DT_VEC(struct dt_comm_row) rows; /* in order of first appearance */
};
/* Add the linked collectives of `m` to `t` (start from a zeroed table),
 * costed on `topo` (NULL = the module's). Collectives whose group is not
 * declared are left out (the verifier reports them). */
void dt_comm_table_fill(struct dt_comm_table *t, const struct dt_module *m,
			const struct dt_topology *topo);
void dt_comm_table_fini(struct dt_comm_table *t);

/* The most per-rank bytes the values of `m` hold at once (liveness.c:
 * inputs throughout, results to their last user, views sharing their
 * base, outputs to the end; a global-view value as its <sharding>'s
 * largest shard, replicated without one). *at: the node where the peak
 * is reached. */
double dt_memory_peak(const struct dt_module *m, uint32_t *at);

/* "512 B", "1.5 KiB", "64.0 MiB", … (binary units, one decimal). */
void dt_format_bytes(double bytes, char *buf, size_t size);

/* Print the before → after table: one line per row key present in either
 * table (counts, bytes, modelled µs before and after), then the totals.
 * JSON: one object {"rows": [...], "total": {...}}. */
void dt_comm_report_print(const struct dt_comm_table *before,
			  const struct dt_comm_table *after, FILE *out);
void dt_comm_report_print_json(const struct dt_comm_table *before,
			       const struct dt_comm_table *after, FILE *out);

#endif
