// SPDX-License-Identifier: MIT
/* mesh.h: device meshes, groups with their CuTe-style layout algebra
 * (layout.c), the machine topology, and placements (placement.c): how a
 * global tensor is laid out over a mesh (semantics §1, §2). Included by
 * ir.h. */
#ifndef DTOPT_MESH_H
#define DTOPT_MESH_H

#include "support.h"

/* ------------------------------------------------------------------ */
/* CuTe-style layouts: (sizes):(strides), coordinates enumerated
 * lexicographically (last mode fastest), value = sum c_i * stride_i. */
struct dt_layout {
	uint8_t rank;
	int64_t size[DT_MAX_MODES];
	int64_t stride[DT_MAX_MODES];
};
int64_t dt_layout_size(const struct dt_layout *l);
/* Value at lexicographic position `index` (0 <= index < size). */
int64_t dt_layout_eval(const struct dt_layout *l, int64_t index);
/* Merge adjacent modes s0:d0, s1:d1 with d0 == s1*d1; drop size-1 modes. */
struct dt_layout dt_layout_coalesce(const struct dt_layout *l);
/* Equal as functions (after coalescing). */
bool dt_layout_equal(const struct dt_layout *a, const struct dt_layout *b);
/* The layout of the offsets not reached by `l` inside a codomain of size
 * `total` (l must be injective with strides dividing; mesh sub-layouts
 * always are). Modes ordered by decreasing stride (slowest first, so its
 * lexicographic order is row-major, as group instances are numbered),
 * coalesced. */
struct dt_layout dt_layout_complement(const struct dt_layout *l, int64_t total);
/* Whether the images of a and b (both from 0) share a value besides 0. */
bool dt_layouts_overlap(const struct dt_layout *a, const struct dt_layout *b);

/* ------------------------------------------------------------------ */
/* Meshes and groups. */
struct dt_mesh {
	dt_str name;
	uint8_t ndim;
	int64_t shape[DT_MAX_MESH_DIMS];
	dt_str dims[DT_MAX_MESH_DIMS];
	int32_t *devices; /* row-major mesh order -> global rank; NULL = 0..N-1 */
	int64_t size;     /* product of shape */
	uint32_t line;
};

struct dt_group {
	dt_str name;
	uint16_t mesh;                    /* index in module meshes */
	uint8_t ndims;
	uint8_t dims[DT_MAX_MESH_DIMS];   /* mesh dim indices, slowest first */
	uint32_t line;
	bool generated;                   /* created by a pass (--create-groups) */
};

/* The row-major layout of the mesh, e.g. (2,4):(4,1). */
struct dt_layout dt_mesh_layout(const struct dt_mesh *mesh);
/* The layout of a group over ordered mesh dims: those modes of the mesh
 * layout in that order. dims "tp dp" on (2,4):(4,1) gives (4,2):(1,4). */
struct dt_layout dt_mesh_sub_layout(const struct dt_mesh *mesh,
				    const uint8_t *dims, int ndims);
/* Global rank at row-major mesh position `pos`. */
int32_t dt_mesh_device(const struct dt_mesh *mesh, int64_t pos);
/* Row-major mesh position of global rank `rank`, or -1 if not in mesh. */
int64_t dt_mesh_position(const struct dt_mesh *mesh, int32_t rank);
/* Coordinates of mesh position `pos`. */
void dt_mesh_coords(const struct dt_mesh *mesh, int64_t pos, int64_t *coord);
/* Mesh dim index named `name` (by name or decimal index), or -1. */
int dt_mesh_find_dim(const struct dt_mesh *mesh, const char *name,
		     const struct dt_intern *strings);

/* Number of group instances (product of the other dims' sizes). */
int64_t dt_group_instance_count(const struct dt_mesh *mesh,
				const uint8_t *dims, int ndims);
/* Global ranks of instance `instance` (instances enumerated in row-major
 * order of the other dims), in group order. `out` holds the group size. */
void dt_group_ranks(const struct dt_mesh *mesh, const uint8_t *dims,
		    int ndims, int64_t instance, int32_t *out);
/* The instance containing global rank `rank` and the rank's position in it.
 * Returns false when the rank is not in the mesh. */
bool dt_group_locate(const struct dt_mesh *mesh, const uint8_t *dims,
		     int ndims, int32_t rank, int64_t *instance, int64_t *pos);
/* Product of the group dims' sizes. */
int64_t dt_group_size(const struct dt_mesh *mesh, const uint8_t *dims,
		      int ndims);

/* The machine the cost model describes (semantics §5; DTensor's constants
 * by default). Set from an optional <topology> element, then from the
 * command line. Units: GB/s (bytes counted in GiB, as DTensor does) and µs. */
struct dt_topology {
	int64_t devices_per_host;      /* a mesh dim whose cumulative device
					  count (from the last dim) exceeds
					  this is inter-host; default 8 */
	double bandwidth;              /* intra-host GB/s per hop; 87.7 */
	double latency;                /* intra-host µs per hop; 0.6 */
	double inter_host_bandwidth_factor; /* bandwidth × this; 0.22 */
	double inter_host_latency;     /* µs per inter-host hop; 2.7 */
	double base_latency;           /* µs per collective; 6.6 */
	double all_to_all_penalty;     /* µs added to an all_to_all; 1.0 */
	double device_tflops;          /* a device's compute, TFLOP/s (the
					  whole-graph search's compute
					  costs); 400, an H100's dense bf16 */
	double device_bandwidth;       /* its memory bandwidth, GB/s; 2000 */
};
void dt_topology_default(struct dt_topology *t);
/* The range every real-valued topology parameter must lie in, so that the
 * modelled times stay finite: DT_TOPOLOGY_MIN to DT_TOPOLOGY_MAX. */
#define DT_TOPOLOGY_MIN 1e-9
#define DT_TOPOLOGY_MAX 1e9

/* ------------------------------------------------------------------ */
/* Placements. */
enum dt_placement_kind {
	DT_PL_REPLICATE,     /* R */
	DT_PL_SHARD,         /* S(d) */
	DT_PL_STRIDED_SHARD, /* _S(d,sf) */
	DT_PL_PARTIAL,       /* P(op) */
};

#define DT_REDUCE_OPS(X)                                                   \
	X(SUM, "sum") X(AVG, "avg") X(MAX, "max") X(MIN, "min")            \
	X(PRODUCT, "product")
enum dt_reduce_op {
#define X(e, n) DT_REDUCE_##e,
	DT_REDUCE_OPS(X)
#undef X
	DT_NREDUCE
};
const char *dt_reduce_name(enum dt_reduce_op op);
bool dt_reduce_parse(const char *name, enum dt_reduce_op *out);

struct dt_placement {
	uint8_t kind;          /* enum dt_placement_kind */
	uint8_t reduce;        /* enum dt_reduce_op, for P */
	int16_t dim;           /* tensor dim, for S and _S */
	int32_t split_factor;  /* for _S */
};

/* One placement per mesh dim plus the shard order. order_pos[m] is mesh dim
 * m's position in the order of the tensor dim it shards (0 = shards first,
 * outermost); by default mesh dims shard left to right. */
struct dt_placements {
	uint8_t ndim;
	struct dt_placement p[DT_MAX_MESH_DIMS];
	uint8_t order_pos[DT_MAX_MESH_DIMS];
};

/* Parse "S(0) R P(sum)" (and an optional order "0:tp,dp 1:..." whose mesh
 * dims are names of `mesh` or indices; order may be NULL). On error returns
 * false and writes a message into err. Checks syntax, the token count
 * against the mesh, and the order's consistency; not tensor ranks. */
bool dt_placements_parse(struct dt_placements *out, const char *text,
			 const char *order, const struct dt_mesh *mesh,
			 const struct dt_intern *strings, char *err,
			 size_t errlen);
/* Default shard order for the current placements (left to right). */
void dt_placements_default_order(struct dt_placements *pl);
bool dt_placements_has_default_order(const struct dt_placements *pl);
/* Print placements ("S(0) R") and the order ("" when default; mesh dims by
 * name when mesh/strings are given, else by index). Return written length
 * (snprintf semantics). */
int dt_placements_print(const struct dt_placements *pl, char *buf, size_t n);
int dt_placements_print_order(const struct dt_placements *pl,
			      const struct dt_mesh *mesh,
			      const struct dt_intern *strings, char *buf,
			      size_t n);
/* Validity for a tensor of rank `tensor_rank`: shard dims in range, split
 * factors >= 1, partial ops mixed only as {sum, avg}. */
bool dt_placements_validate(const struct dt_placements *pl, int tensor_rank,
			    char *err, size_t errlen);
bool dt_placements_equal(const struct dt_placements *a,
			 const struct dt_placements *b);

/* The global indices of tensor dim `tdim` (length `len`) that the rank at
 * mesh coordinates `coord` holds, in local order, as `*nout` indices
 * written to `out` (capacity len). torch.chunk semantics, nested in shard
 * order, _S as in semantics §2. */
void dt_shard_indices(const struct dt_placements *pl, const int64_t *mesh_shape,
		      const int64_t *coord, int tdim, int64_t len, int64_t *out,
		      int64_t *nout);
/* The run [start, start + length) of tensor dim `tdim` (length len) that
 * the rank at `coord` holds under S/R placements pl (no _S: nested
 * torch.chunk in shard order). */
void dt_shard_interval(const struct dt_placements *pl,
		       const int64_t *mesh_shape, const int64_t *coord,
		       int tdim, int64_t len, int64_t *start, int64_t *length);
/* Local length of tensor dim `tdim` for the rank at `coord`. */
int64_t dt_shard_length(const struct dt_placements *pl,
			const int64_t *mesh_shape, const int64_t *coord,
			int tdim, int64_t len);
/* The local lengths of tensor dim d (global length len) over every rank
 * of a mesh of shape `mesh_shape` under `pl`. */
struct dt_shard_lengths {
	int64_t min, max;
	bool unit; /* some rank holds exactly one */
};
void dt_shard_lengths(const struct dt_placements *pl, const int64_t *mesh_shape,
		      int d, int64_t len, struct dt_shard_lengths *out);
/* Whether the rank at coordinate 0 holds a largest shard of tensor dim
 * d (global length len) under pl: a chunk's length never grows with its
 * index, and chunk 0's never shrinks with the length chunked, so without
 * `_S` it does; a strided shard's pieces break the second (a longer piece
 * can leave less to each chunk: 9 in 2 pieces over 3 leaves 4 to rank 0
 * but 10 leaves 3), so with them only where len divides into every mesh
 * dim's chunks of every piece (all ranks alike). */
bool dt_shard_origin_largest(const struct dt_placements *pl,
			     const int64_t *mesh_shape, int d, int64_t len);
/* The largest local length of tensor dim d over every rank: where the
 * origin holds it, ceil(len / (a b ...)) over the mesh dims sharding d
 * (chunk 0 of chunk 0: ceil(ceil(l / a) / b) = ceil(l / (a b))), else
 * dt_shard_lengths' max. */
int64_t dt_shard_largest(const struct dt_placements *pl,
			 const int64_t *mesh_shape, int d, int64_t len);
/* Chunk i of n of a length-L range: start and length (torch.chunk). */
void dt_chunk(int64_t len, int64_t n, int64_t i, int64_t *start,
	      int64_t *length);
/* The local shape of global shape g (rank `rank`) under pl: the shard of
 * the rank at mesh position pos, or for pos < 0 the shape of an SPMD
 * program (semantics §7): per dim the largest shard over all ranks. */
void dt_shard_shape(const struct dt_mesh *mesh, const struct dt_placements *pl,
		    int64_t pos, const int64_t *g, int rank, int64_t *out);
/* Whether every rank's shard of g under pl has the same shape. */
bool dt_shard_even(const struct dt_mesh *mesh, const struct dt_placements *pl,
		   const int64_t *g, int rank);
/* Whether dst only refines src, so that every rank's dst shard is a
 * contiguous run of its src shard: per mesh dim equal placements or R ->
 * S(d), and per tensor dim src's shard sequence a prefix of dst's. */
bool dt_placements_refine(const struct dt_placements *src,
			  const struct dt_placements *dst, int tensor_rank);
/* The mesh dim m when tensor dim tdim's shard sequence under fine is its
 * sequence under coarse followed by m, sharded S (one more torch.chunk
 * level); else -1. Other tensor dims are not looked at. */
int dt_placements_block_dim(const struct dt_placements *coarse,
			    const struct dt_placements *fine, int tdim);
/* Where the rank at `coord` finds its dst shard of tensor dim tdim in its
 * src shard, local positions [start, start + length), when dst's shard
 * sequence of tdim extends src's (a refinement, or one block level). */
void dt_shard_box(const struct dt_placements *src,
		  const struct dt_placements *dst, const int64_t *mesh_shape,
		  const int64_t *coord, int tdim, int64_t len, int64_t *start,
		  int64_t *length);

#endif
