// SPDX-License-Identifier: MIT
/* ops.h: the op table (generated from ops.def), argument binding against
 * each op's schema, and the shape/stride/dtype functions' interface.
 * Included by graph.h; do not include directly. */
#ifndef DTOPT_OPS_H
#define DTOPT_OPS_H

enum dt_op_flag {
	DT_OPF_VIEW = 1 << 0,        /* result aliases its first input */
	DT_OPF_COLLECTIVE = 1 << 1,  /* _c10d_functional collective */
	DT_OPF_WAIT = 1 << 2,        /* wait_tensor */
	DT_OPF_ELEMENTWISE = 1 << 3,
	DT_OPF_REDUCTION = 1 << 4,
	DT_OPF_CREATION = 1 << 5,    /* makes a tensor from no tensor input */
	DT_OPF_PURE = 1 << 6,        /* no effects: removable when unused */
	DT_OPF_MULTI = 1 << 7,       /* several results, read by getitem */
	DT_OPF_MATMUL = 1 << 8,
	DT_OPF_STRUCTURAL = 1 << 9,  /* placeholder, output, getitem */
	DT_OPF_INPLACE = 1 << 10,    /* writes its first input (self) and returns it */
};

struct dt_shape_ctx;
/* Computes out[]/nout for a node whose inputs' metadata are known. Returns
 * DT_OK, or DT_EINPUT after reporting through c->diag at the node. */
typedef int (*dt_shape_fn)(struct dt_shape_ctx *c);

enum dt_op {
	DT_OP_UNKNOWN,
#define DT_OP(e, target, schema, flags, shape) DT_OP_##e,
#include "ops.def"
#undef DT_OP
	DT_NOPS
};

/* Parameter kinds of a schema ("name:KIND[=default]"; '*' starts the
 * keyword-only parameters; a trailing '?' on KIND means None is allowed):
 *   T tensor   T[] tensor list   int   int[]   float   scalar (int, float
 *   or bool)   bool   str   dtype   any (device, layout, memory_format…) */
enum dt_param_kind {
	DT_PARAM_TENSOR,
	DT_PARAM_TENSORS,
	DT_PARAM_INT,
	DT_PARAM_INTS,
	DT_PARAM_FLOAT,
	DT_PARAM_SCALAR,
	DT_PARAM_BOOL,
	DT_PARAM_STR,
	DT_PARAM_DTYPE,
	DT_PARAM_ANY,
};

#define DT_MAX_PARAMS 16
#define DT_MAX_RESULTS 64 /* split/unbind may make many */

struct dt_op_param {
	const char *name;
	uint8_t kind;        /* enum dt_param_kind */
	bool optional;       /* accepts none */
	bool kwarg_only;
	bool has_default;    /* may be omitted */
};

struct dt_op_info {
	const char *name;    /* short name for dumps, e.g. "all_gather_into_tensor" */
	const char *target;  /* FX target string */
	const char *schema;
	uint32_t flags;
	dt_shape_fn shape;   /* result metadata (structural ops too) */
	uint8_t nparams;
	struct dt_op_param params[DT_MAX_PARAMS];
};

/* Table entry of `op` (params parsed from the schema). */
const struct dt_op_info *dt_op_get(enum dt_op op);
/* The op whose FX target is `target`, or DT_OP_UNKNOWN. */
enum dt_op dt_op_lookup(const char *target);
static inline bool dt_op_has(enum dt_op op, uint32_t flag)
{
	return (dt_op_get(op)->flags & flag) != 0;
}

/* The node's args matched to the op's parameters: arg[i] is the arg bound
 * to parameter i, or NULL when omitted (default) or passed as none. */
struct dt_bound_args {
	const struct dt_arg *arg[DT_MAX_PARAMS];
	uint8_t nparams;
};
/* Bind positional and keyword args of node `n` to its op's schema, checking
 * arity and kinds. Reports `file:line: error:` naming the node, target and
 * parameter; returns DT_OK or DT_EINPUT. Needs a known op. */
int dt_op_bind(const struct dt_module *m, const struct dt_node *n,
	       struct dt_bound_args *out, struct dt_diag *d);

/* The attributes of the ops of SPMD programs (ops.def; semantics §7):
 * dt.local_shard(self, mesh, src, dst, size[, src_order, dst_order]) and
 * dt.pack_blocks / dt.unpack_blocks(self, mesh, coarse, fine, size, dim[,
 * coarse_order, fine_order]) and dt.pack_pieces / dt.unpack_pieces(self,
 * mesh, placements, size, dim, pieces[, order]) (src = dst = placements)
 * and dt.all_permute(self, mesh, src, dst, size, perm, group_name[,
 * src_order, dst_order]) and dt.all_to_all_v(self, mesh, src, dst, size,
 * group_name[, src_order, dst_order]). */
struct dt_spmd_args {
	int mesh;                       /* index in module meshes */
	struct dt_placements src, dst;  /* local_shard; coarse, fine: blocks */
	int rank;
	int64_t shape[DT_MAX_RANK];     /* global */
	int dim;                        /* blocks: the tensor dim, else -1 */
	int mesh_dim;                   /* blocks: the block level's mesh dim */
	int64_t pieces;                 /* pieces: their count, else 1 */
};
/* Read and check them from bound args b of a node of op `op` (mesh
 * declared, placements valid for the rank; all_permute: no Partial, the
 * group declared on mesh, perm a permutation of its positions that sends
 * every member's src block to a member holding it under dst, in every
 * group instance; all_to_all_v: S and R only, the group declared over
 * every dim of mesh; local_shard: dst refines src;
 * blocks: fine's shard sequence of dim is coarse's plus one S level;
 * pieces: at least one);
 * false with a message in err. */
bool dt_spmd_args_read(const struct dt_module *m, enum dt_op op,
		       const struct dt_bound_args *b, struct dt_spmd_args *a,
		       char *err, size_t errlen);
/* Whether op is one of them (they read the rank's mesh coordinate). */
static inline bool dt_op_is_spmd(enum dt_op op)
{
	return op == DT_OP_LOCAL_SHARD || op == DT_OP_PACK_BLOCKS ||
	       op == DT_OP_UNPACK_BLOCKS || op == DT_OP_PACK_PIECES ||
	       op == DT_OP_UNPACK_PIECES || op == DT_OP_ALL_PERMUTE ||
	       op == DT_OP_ALL_TO_ALL_V;
}

/* How a reduction op reads its arguments: what it computes, the dims
 * parameter (-1: none, every dim), the keepdim parameter (-1: none),
 * whether dim is one int (max.dim, argmax), and whether it returns indices
 * too (max.dim/min.dim: (values, indices)). The shape functions and every
 * backend's kernels read reductions through this one table. */
enum dt_reduce_kind {
	DT_RED_SUM, DT_RED_MEAN, DT_RED_MAX, DT_RED_MIN, DT_RED_ARGMAX,
	DT_RED_ARGMIN, DT_RED_LOGSUMEXP, DT_RED_VAR,
};
struct dt_reduction {
	uint8_t kind; /* enum dt_reduce_kind */
	int8_t pdims, pkeep;
	bool one_dim;
	bool with_indices;
};
/* Whether op is a reduction; fills *out. */
bool dt_reduction_of(enum dt_op op, struct dt_reduction *out);

struct dt_shape_ctx {
	struct dt_module *m;
	uint32_t node;                 /* id of the node being inferred */
	struct dt_bound_args args;
	struct dt_diag *diag;
	struct dt_tensor out[DT_MAX_RESULTS];
	uint32_t nout;
};

/* Infer the result metadata of node `id` from its inputs' metadata. On
 * success fills c->out/nout. Reports and returns DT_EINPUT on bad input.
 * Used by shape-infer and by passes that build new nodes. */
int dt_infer_node(struct dt_module *m, uint32_t id, struct dt_diag *d,
		  struct dt_shape_ctx *c);

#endif
