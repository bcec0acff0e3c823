// SPDX-License-Identifier: MIT
/* ir.h: dtopt's core IR: support (allocator, arena, vectors, interning,
 * diagnostics), the module/graph/node SSA representation, tensor metadata,
 * meshes, groups with their CuTe-style layout algebra, and placements. */
#ifndef DTOPT_IR_H
#define DTOPT_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ */
/* Status codes. Functions that can fail on user input return DT_OK or a
 * negative code; the message has already gone to the diagnostics sink. */
enum dt_status {
	DT_OK = 0,
	DT_EINPUT = -1,       /* the input is wrong (exit 1) */
	DT_EUSAGE = -2,       /* the command line is wrong (exit 2) */
	DT_ERUNTIME = -3,     /* runtime or backend failure (exit 3) */
	DT_EIO = -4,          /* reading or writing a file failed (exit 1) */
};

/* Abort on a broken internal invariant (never on user input). */
_Noreturn void dt_die(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define DT_REQUIRE(cond)                                                   \
	do {                                                               \
		if (!(cond))                                               \
			dt_die(__FILE__, __LINE__, "requirement failed: %s", \
			       #cond);                                     \
	} while (0)

/* ------------------------------------------------------------------ */
/* Allocation. Every heap allocation of the library goes through one
 * pluggable function, so tests can count, fail or leak-check them. Running
 * out of memory is fatal (dt_die), as in most compilers. */
typedef void *(*dt_realloc_fn)(void *ud, void *ptr, size_t size);
/* Install `fn` (NULL restores libc). Not thread-safe; call before use. */
void dt_set_allocator(dt_realloc_fn fn, void *ud);
void *dt_realloc(void *ptr, size_t size); /* size 0 frees; never NULL otherwise */
void *dt_malloc(size_t size);
void *dt_calloc(size_t n, size_t size);
void dt_free(void *ptr);
char *dt_strdup(const char *s);

/* Growable array of T on the heap: `DT_VEC(int) v = {0};`. */
#define DT_VEC(T)                                                          \
	struct {                                                           \
		T *data;                                                   \
		uint32_t len, cap;                                         \
	}
/* Make room for `n` more elements; returns the index of the first one.
 * Leaves data non-NULL even for n = 0, so copying a grown vector's zero
 * bytes (memcpy, memset) is defined. */
#define dt_vec_grow(v, n)                                                  \
	dt_vec_grow_((void **)&(v)->data, &(v)->len, &(v)->cap,            \
		     sizeof(*(v)->data), (n))
/* Append x; evaluates to its index. */
#define dt_vec_push(v, x)                                                  \
	(dt_vec_grow((v), 1), (v)->data[(v)->len - 1] = (x),                 \
	 dt_vec_last_((v)->len))
static inline uint32_t dt_vec_last_(uint32_t len) { return len - 1; }
#define dt_vec_free(v) (dt_free((v)->data), (v)->data = NULL, (v)->len = (v)->cap = 0)
uint32_t dt_vec_grow_(void **data, uint32_t *len, uint32_t *cap, size_t elem,
		      uint32_t n);

/* Bump allocator: many small allocations freed together. */
struct dt_arena {
	struct dt_arena_chunk *chunks;
	char *cur, *end;
	size_t bytes; /* total requested, for statistics */
};
void dt_arena_init(struct dt_arena *a);
void dt_arena_fini(struct dt_arena *a);   /* frees everything */
void dt_arena_reset(struct dt_arena *a);  /* keeps the first chunk */
void *dt_arena_alloc(struct dt_arena *a, size_t size); /* 16-aligned, zeroed */
char *dt_arena_strndup(struct dt_arena *a, const char *s, size_t n);

/* Interning table: equal byte strings get equal dense ids (0 is the empty
 * string). Stored bytes are NUL-terminated and stay valid until fini. */
struct dt_intern {
	DT_VEC(uint32_t) offsets;     /* id -> offset in bytes */
	DT_VEC(uint32_t) hashes;      /* id -> hash of its bytes */
	DT_VEC(char) bytes;           /* 4-byte length, payload, NUL */
	uint32_t *slots;              /* open addressing: id+1, 0 = empty */
	uint32_t nslots;
};
void dt_intern_init(struct dt_intern *t);
void dt_intern_fini(struct dt_intern *t);
uint32_t dt_intern(struct dt_intern *t, const void *p, size_t n);
/* Returns the bytes of `id` and stores their length in *n (if not NULL). */
const void *dt_intern_get(const struct dt_intern *t, uint32_t id, size_t *n);
uint32_t dt_intern_count(const struct dt_intern *t);

/* ------------------------------------------------------------------ */
/* Diagnostics. Library code reports user-facing problems here and never
 * prints or exits itself. Messages are GNU style:
 *   file:line: error: message [tag]                                  */
enum dt_severity { DT_NOTE, DT_REMARK, DT_WARNING, DT_ERROR };

struct dt_diag_entry {
	enum dt_severity severity;
	const char *file; /* may be NULL */
	uint32_t line;    /* 0 = none */
	const char *tag;  /* "pass:reason" for remarks, may be NULL */
	const char *message;
};

struct dt_diag {
	/* Receives each diagnostic; NULL prints to stderr in GNU style. */
	void (*emit)(void *ud, const struct dt_diag_entry *e);
	void *ud;
	unsigned nerrors, nwarnings, nremarks;
	unsigned max_errors; /* stop reporting (not counting) past this; 0 = 20 */
	bool remarks;        /* emit remarks at all */
};
void dt_diag_init(struct dt_diag *d);
void dt_diag_report(struct dt_diag *d, enum dt_severity sev, const char *file,
		    uint32_t line, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void dt_diag_vreport(struct dt_diag *d, enum dt_severity sev, const char *file,
		     uint32_t line, const char *tag, const char *fmt, va_list ap);
/* Format one entry the GNU way into `out` (no newline). */
void dt_diag_format(const struct dt_diag_entry *e, FILE *out);
/* Write a message into err[errlen] (for functions that return their error
 * as text) and return DT_EINPUT. */
int dt_fail_message(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------ */
/* Typed ids. One-field structs, so ids of different kinds cannot mix. */
typedef struct { uint32_t id; } dt_str;  /* interned string, 0 = "" */
typedef struct { uint32_t id; } dt_ints; /* interned int64 list, 0 = [] */

/* ------------------------------------------------------------------ */
/* Dtypes: DT_DTYPE(ENUM, "torch name", bytes, is_float) */
#define DT_DTYPES(X)                                                       \
	X(FLOAT32, "float32", 4, true)                                     \
	X(FLOAT16, "float16", 2, true)                                     \
	X(BFLOAT16, "bfloat16", 2, true)                                   \
	X(FLOAT64, "float64", 8, true)                                     \
	X(INT64, "int64", 8, false)                                        \
	X(INT32, "int32", 4, false)                                        \
	X(INT16, "int16", 2, false)                                        \
	X(INT8, "int8", 1, false)                                          \
	X(UINT8, "uint8", 1, false)                                        \
	X(BOOL, "bool", 1, false)

enum dt_dtype {
#define X(e, n, s, f) DT_##e,
	DT_DTYPES(X)
#undef X
	DT_NDTYPES
};
const char *dt_dtype_name(enum dt_dtype t);
int dt_dtype_size(enum dt_dtype t);
bool dt_dtype_is_float(enum dt_dtype t);
/* Returns true and sets *out when `name` is a dtype name. Accepts the
 * `torch.` prefix too. */
bool dt_dtype_parse(const char *name, size_t len, enum dt_dtype *out);

#define DT_MAX_RANK 8       /* tensor rank limit */
#define DT_MAX_MESH_DIMS 8  /* mesh rank limit */
#define DT_MAX_MODES 16     /* layout modes limit */

/* The metadata of one tensor value (FX meta["val"]). */
struct dt_tensor {
	uint8_t dtype;     /* enum dt_dtype */
	dt_ints shape;
	dt_ints stride;
	int64_t offset;    /* storage offset, in elements */
};

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
};
void dt_topology_default(struct dt_topology *t);

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
/* Local length of tensor dim `tdim` for the rank at `coord`. */
int64_t dt_shard_length(const struct dt_placements *pl,
			const int64_t *mesh_shape, const int64_t *coord,
			int tdim, int64_t len);
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

/* ------------------------------------------------------------------ */
/* The module: one graph with its meshes and groups. */
enum dt_view { DT_VIEW_LOCAL, DT_VIEW_GLOBAL };

enum dt_node_kind {
	DT_NODE_PLACEHOLDER,
	DT_NODE_CALL,
	DT_NODE_OUTPUT,
	DT_NODE_CONSTANT, /* FX get_attr: a tensor the graph closes over */
};

enum dt_arg_kind {
	DT_ARG_NODE,   /* v.node */
	DT_ARG_NODES,  /* refs[v.first .. +len] */
	DT_ARG_INT,    /* v.i */
	DT_ARG_INTS,   /* v.ints */
	DT_ARG_FLOAT,  /* v.f */
	DT_ARG_FLOATS, /* floats[v.first .. +len] */
	DT_ARG_BOOL,   /* v.b */
	DT_ARG_STR,    /* v.s */
	DT_ARG_DTYPE,  /* v.dtype */
	DT_ARG_NONE,
	DT_ARG_ITEMS,  /* args[v.first .. +len], each a scalar form */
};

struct dt_arg {
	dt_str name;   /* keyword name; 0 (empty) for a positional arg */
	uint8_t kind;  /* enum dt_arg_kind */
	uint32_t len;  /* element count of list kinds */
	union {
		int64_t i;
		double f;
		bool b;
		dt_str s;
		uint8_t dtype;
		uint32_t node;
		uint32_t first;
		dt_ints ints;
	} v;
};

struct dt_meta {
	dt_str key, value;
};

struct dt_sharding {
	uint16_t mesh;
	struct dt_placements placements;
	dt_ints global_shape; /* 0 when absent */
	bool has_global_shape;
};

#define DT_NO_SHARDING 0xffffffffu

struct dt_node {
	dt_str name;
	dt_str target;         /* as written; "" for placeholder/output */
	uint16_t op;           /* enum dt_op, DT_OP_UNKNOWN if not in table */
	uint8_t kind;          /* enum dt_node_kind */
	uint8_t flags;         /* DT_NODE_* */
	uint32_t prev, next;   /* graph order; 0 = none */
	uint32_t args;         /* first in module args; positional then keyword */
	uint16_t nargs;
	uint16_t ntensors;
	uint32_t tensors;      /* first in module tensors */
	uint32_t sharding;     /* index in module shardings or DT_NO_SHARDING */
	uint32_t metas;        /* first in module metas */
	uint32_t nmetas;
	uint32_t line;         /* source line, 0 if created by a pass */
	uint32_t constant;     /* DT_NODE_CONSTANT: index in module constants */
};
enum {
	DT_NODE_LINKED = 1 << 0, /* part of the graph order */
	DT_NODE_FUSED = 1 << 1,  /* created by a fusion (provenance in meta) */
};
/* The <meta> key a fusion writes on the nodes it creates: the names of the
 * nodes they replace, space separated. The reader sets DT_NODE_FUSED from
 * it. */
#define DT_META_FUSED_FROM "dtopt.fused_from"

/* The data of a constant: its tensor's elements in row-major order (the
 * tensor is contiguous), little-endian, dtype size bytes each; bfloat16 and
 * float16 as their bit patterns, bool as one byte 0 or 1. The bytes live in
 * the module arena. */
struct dt_constant {
	const unsigned char *bytes;
	uint64_t size;
};

struct dt_module {
	const char *file;       /* for diagnostics; owned by the arena */
	dt_str name;
	uint8_t view;           /* enum dt_view */
	int32_t rank;           /* rank="R" of a per-rank graph, or -1 */
	bool has_topology;      /* a <topology> element was given */
	struct dt_topology topology; /* defaults unless has_topology */
	struct dt_intern strings;
	struct dt_intern ints;  /* int64 lists */
	DT_VEC(struct dt_mesh) meshes;
	DT_VEC(struct dt_group) groups;
	DT_VEC(struct dt_node) nodes;   /* index 0 is the null node */
	uint32_t first, last;           /* graph order */
	DT_VEC(struct dt_arg) args;
	DT_VEC(uint32_t) refs;          /* node lists */
	DT_VEC(double) floats;
	DT_VEC(struct dt_tensor) tensors;
	DT_VEC(struct dt_sharding) shardings;
	DT_VEC(struct dt_meta) metas;
	DT_VEC(struct dt_constant) constants;
	DT_VEC(uint32_t) node_by_name;  /* dt_str id -> node, built on demand */
	struct dt_arena arena;
};

/* Create an empty module; `file` is copied. Destroy frees everything. */
struct dt_module *dt_module_create(const char *file);
void dt_module_destroy(struct dt_module *m);

dt_str dt_str_intern(struct dt_module *m, const char *s);
dt_str dt_str_intern_n(struct dt_module *m, const char *s, size_t n);
const char *dt_str_get(const struct dt_module *m, dt_str s);
dt_ints dt_ints_intern(struct dt_module *m, const int64_t *v, size_t n);
/* Returns the values of `l` and stores the count in *n. */
const int64_t *dt_ints_get(const struct dt_module *m, dt_ints l, int *n);

static inline struct dt_node *dt_node_get(const struct dt_module *m,
					  uint32_t id)
{
	return &m->nodes.data[id];
}
static inline const struct dt_arg *dt_node_arg(const struct dt_module *m,
					       const struct dt_node *n, int i)
{
	return &m->args.data[n->args + (uint32_t)i];
}
static inline const struct dt_tensor *
dt_node_tensor(const struct dt_module *m, const struct dt_node *n, int i)
{
	return &m->tensors.data[n->tensors + (uint32_t)i];
}
/* The data of a DT_NODE_CONSTANT node. */
static inline const struct dt_constant *
dt_node_constant(const struct dt_module *m, const struct dt_node *n)
{
	return &m->constants.data[n->constant];
}
static inline const struct dt_sharding *
dt_node_sharding(const struct dt_module *m, const struct dt_node *n)
{
	return n->sharding == DT_NO_SHARDING ? NULL
					     : &m->shardings.data[n->sharding];
}
#define dt_foreach_node(m, id)                                             \
	for (uint32_t id = (m)->first; id != 0; id = (m)->nodes.data[id].next)

/* Everything a new node consists of; arrays are copied. Item lists
 * (DT_ARG_ITEMS) must already be in the pool (dt_module_add_args). */
struct dt_node_init {
	enum dt_node_kind kind;
	dt_str name;
	dt_str target;
	uint32_t line;
	const struct dt_arg *args;
	uint32_t nargs;
	const struct dt_tensor *tensors;
	uint32_t ntensors;
	const struct dt_sharding *sharding; /* NULL = none */
	const struct dt_meta *metas;
	uint32_t nmetas;
	uint32_t constant; /* DT_NODE_CONSTANT: from dt_module_new_constant */
};
/* Create a node (not yet in the graph order); returns its id. The op is
 * looked up from the target. Invalidates node pointers. */
uint32_t dt_module_add_node(struct dt_module *m, const struct dt_node_init *in);
/* Append args to the pool (for item lists); returns the first index. */
uint32_t dt_module_add_args(struct dt_module *m, const struct dt_arg *a,
			    uint32_t n);
uint32_t dt_module_add_refs(struct dt_module *m, const uint32_t *r, uint32_t n);
uint32_t dt_module_add_floats(struct dt_module *m, const double *f, uint32_t n);
/* Room for the `size` data bytes of a new constant in the module arena
 * (zeroed; the caller fills *bytes); returns its index for
 * dt_node_init.constant. */
uint32_t dt_module_new_constant(struct dt_module *m, uint64_t size,
				unsigned char **bytes);
/* The byte count of a contiguous tensor's data (numel × dtype size). */
uint64_t dt_tensor_nbytes(const struct dt_module *m, const struct dt_tensor *t);
/* Replace a node's tensors (shape inference fills them). */
void dt_node_set_tensors(struct dt_module *m, uint32_t node,
			 const struct dt_tensor *t, uint32_t n);

/* Graph order. */
void dt_graph_append(struct dt_module *m, uint32_t node);
void dt_graph_insert_before(struct dt_module *m, uint32_t node,
			    uint32_t before);
void dt_graph_remove(struct dt_module *m, uint32_t node);
uint32_t dt_graph_count(const struct dt_module *m);

/* Node lookup by name (among all created nodes); 0 if none. */
uint32_t dt_module_find_node(struct dt_module *m, dt_str name);
/* Mesh or group index by name, or -1. */
int dt_module_find_mesh(const struct dt_module *m, dt_str name);
int dt_module_find_group(const struct dt_module *m, dt_str name);
/* A declared group on `mesh` whose layout equals the sub-layout of `dims`
 * (found by layout, never by name), or -1. */
int dt_module_find_group_by_layout(const struct dt_module *m, int mesh,
				   const uint8_t *dims, int ndims);

/* Call `fn` for every node referenced by the args of `n` (args, lists and
 * items), in order. */
void dt_node_for_each_input(const struct dt_module *m, const struct dt_node *n,
			    void (*fn)(void *ud, uint32_t input), void *ud);

/* Make every reference to node `from` in the args (lists and items
 * included) of every linked node, the output node too, refer to `to`
 * instead. Unlinked nodes are left alone; `from` stays in the graph (dce or
 * the caller removes it). O(args of linked nodes). */
void dt_module_replace_uses(struct dt_module *m, uint32_t from, uint32_t to);
/* Replace every node reference r in the args of `node` (lists and items
 * included) by fn(ud, r). A pass that replaces many values collects them
 * in a table and maps every node once at the end, which stays linear where
 * one dt_module_replace_uses per value would not (an output node can hold
 * most of the graph). */
void dt_node_map_inputs(struct dt_module *m, uint32_t node,
			uint32_t (*fn)(void *ud, uint32_t input), void *ud);

/* Users of every node, rebuilt on demand (an analysis, not kept in sync).
 * users(n) = list[first[n] .. first[n+1]); duplicates kept once per use. */
struct dt_uses {
	uint32_t *first; /* nodes.len + 1 entries */
	uint32_t *list;
};
void dt_uses_fill(struct dt_uses *u, const struct dt_module *m);
void dt_uses_fini(struct dt_uses *u);
static inline uint32_t dt_uses_count(const struct dt_uses *u, uint32_t n)
{
	return u->first[n + 1] - u->first[n];
}

/* Diagnostic helpers that point at a node's source line. */
void dt_node_error(struct dt_diag *d, const struct dt_module *m,
		   const struct dt_node *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------ */
/* The op table: see ir/ops.def. */
#include "ops.h"

/* ------------------------------------------------------------------ */
/* Verification and printing. */

/* Structural and metadata checks: node order and references, arg arity and
 * kinds for known targets, tensors well-formed, meshes/groups/shardings
 * consistent, collective group sizes. Reports every problem; returns
 * DT_OK or DT_EINPUT. */
int dt_verify(struct dt_module *m, struct dt_diag *d);

/* Text dump in the style of FX print_readable. */
void dt_print_text(const struct dt_module *m, FILE *out);
/* One value's type: "f32[4, 8]{8, 1}" (offset added when nonzero). */
int dt_tensor_print(const struct dt_module *m, const struct dt_tensor *t,
		    char *buf, size_t n);
/* Pieces of the text dump, for tools that print single nodes (diff): one
 * argument value without its keyword ("[a, b]", "'sum'", "torch.int64");
 * a node's right-hand side ("target(x, 3, mode='fast')", "placeholder",
 * "return [y]"); its sharding (" @ world[S(0) R] order(0:tp,dp) of [64, 8]",
 * nothing when it has none). */
void dt_print_arg(const struct dt_module *m, const struct dt_arg *a, FILE *out);
void dt_print_call(const struct dt_module *m, const struct dt_node *n,
		   FILE *out);
void dt_print_sharding(const struct dt_module *m, const struct dt_node *n,
		       FILE *out);

/* Shortest decimal text that reads back as the same double ("1e-05",
 * "inf", "-inf", "nan"). */
void dt_format_double(double v, char *buf, size_t n);

/* PyTorch's view stride rule (at::detail::computeStride): strides for
 * viewing a tensor of (in_shape, in_stride) as `shape`; false when a view
 * is impossible and a copy is needed. */
bool dt_view_strides(const int64_t *in_shape, const int64_t *in_stride,
		     int in_rank, const int64_t *shape, int rank,
		     int64_t *stride);

/* CRC-32 (IEEE 802.3, zlib's crc32) of n bytes: the checksum of constant
 * data in files and dumps. */
uint32_t dt_crc32(const void *p, size_t n);

/* Contiguous (row-major) strides for `shape`. */
void dt_contiguous_strides(const int64_t *shape, int rank, int64_t *stride);
int64_t dt_numel(const int64_t *shape, int rank);

#endif
