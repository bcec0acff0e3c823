// SPDX-License-Identifier: MIT
/* graph.h: the SSA representation: dtypes and tensor metadata, the
 * module with its graph of nodes, arguments and values, shardings on
 * meshes (mesh.h), the op table (ops.h), the structural verifier and the
 * text printer (module.c, ops.c, verify.c, print.c). Included by ir.h. */
#ifndef DTOPT_GRAPH_H
#define DTOPT_GRAPH_H

#include "mesh.h"
#include "support.h"

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

/* An int64 aligned to 4 bytes (GCC and Clang lower a typedef's alignment),
 * so a dt_tensor is 20 bytes, not 24. Read and write it as a value; never
 * take its address as an int64_t *. */
typedef int64_t dt_int64_a4 __attribute__((aligned(4)));

/* The metadata of one tensor value (FX meta["val"]). */
struct dt_tensor {
	uint8_t dtype;      /* enum dt_dtype */
	dt_ints shape;
	dt_ints stride;
	dt_int64_a4 offset; /* storage offset, in elements */
};

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
_Static_assert(DT_ARG_ITEMS < 16, "dt_arg.kind has 4 bits");

/* The longest list an arg holds (len has 28 bits: an arg is 16 bytes). */
#define DT_MAX_LIST ((1u << 28) - 1)

struct dt_arg {
	dt_str name;       /* keyword name; 0 (empty) for a positional arg */
	unsigned kind : 4; /* enum dt_arg_kind */
	unsigned len : 28; /* element count of list kinds, <= DT_MAX_LIST */
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
	union {
		uint32_t args;     /* first in module args; positional then
				    * keyword */
		uint32_t constant; /* DT_NODE_CONSTANT (it has no args): index
				    * in module constants */
	};
	uint16_t nargs;
	uint16_t ntensors;
	uint32_t tensors;      /* first in module tensors */
	uint32_t sharding;     /* index in module shardings or DT_NO_SHARDING */
	uint32_t metas;        /* first in module metas */
	uint32_t nmetas;
	uint32_t line;         /* source line, 0 if created by a pass */
};
enum {
	DT_NODE_LINKED = 1 << 0, /* part of the graph order */
	DT_NODE_FUSED = 1 << 1,  /* created by a fusion (provenance in meta) */
};
/* The <meta> key a fusion writes on the nodes it creates: the names of the
 * nodes they replace, space separated. The reader sets DT_NODE_FUSED from
 * it. */
#define DT_META_FUSED_FROM "dtopt.fused_from"
/* The <meta> key bucket-collectives writes (value "true") on the cats of a
 * bucket whose members the interpreter copies in where the cat runs: no
 * producer writes its result straight into the cat's buffer
 * (runtime/place.c), which so lives from the cat on, not from the first
 * member on (semantics §4.7, Memory). */
#define DT_META_COPY_INPUTS "dtopt.copy_inputs"

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
/* A copy of `m` sharing nothing with it: the same node ids, graph order,
 * strings, meshes, groups and constant bytes, so a pass can try a rewrite
 * on the copy and keep it or not (dt_module_swap). */
struct dt_module *dt_module_clone(const struct dt_module *m);
/* Exchange the contents of a and b (each keeps its address). */
void dt_module_swap(struct dt_module *a, struct dt_module *b);

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
/* By id: the node's name, and its first result's metadata. */
static inline const char *dt_node_name(const struct dt_module *m, uint32_t id)
{
	return dt_str_get(m, m->nodes.data[id].name);
}
static inline const struct dt_tensor *dt_node_tensor0(const struct dt_module *m,
						      uint32_t id)
{
	return dt_node_tensor(m, &m->nodes.data[id], 0);
}
/* The node's <meta> entry of key `key`, NULL when it has none. */
const struct dt_meta *dt_node_meta(const struct dt_module *m,
				   const struct dt_node *n, const char *key);
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
/* A declared group on `mesh` over the same mesh dims as dims[0..n) in any
 * order (dims of size 1 ignored), or -1. */
int dt_module_find_group_any_order(const struct dt_module *m, int mesh,
				   const uint8_t *dims, int n);
/* The names of mesh dims dims[0..n) joined by `sep` ("dp tp"). */
void dt_mesh_dims_join(const struct dt_module *m, int mesh,
		       const uint8_t *dims, int n, const char *sep, char *buf,
		       size_t size);
/* A free name for a new group over dims[0..n): the dim names joined by
 * "_", then "_2", "_3", … while taken. */
void dt_module_new_group_name(const struct dt_module *m, int mesh,
			      const uint8_t *dims, int n, char *buf,
			      size_t size);
/* Declare a generated group over dims[0..n) of `mesh` (rank order as
 * given) under a new name; returns its index. */
int dt_module_declare_group(struct dt_module *m, int mesh, const uint8_t *dims,
			    int n);

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
/* "[4, 8]": n ints, truncated to fit buf[size]. */
void dt_int_list_print(const int64_t *v, int n, char *buf, size_t size);

#endif
