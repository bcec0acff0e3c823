// SPDX-License-Identifier: MIT
/* shape.h: private helpers shared by ops.c and the shape_*.c files: reading
 * bound arguments, expanded tensor geometry, PyTorch's stride rules (dense,
 * contiguous, channels-last, empty_like), type promotion, broadcasting and
 * error reporting at the node being inferred. Not installed. */
#ifndef DTOPT_SHAPE_H
#define DTOPT_SHAPE_H

#include "ir.h"

/* Every shape function named in ops.def (defined in ops.c and shape_*.c). */
#define DT_OP(e, target, schema, flags, fn) int fn(struct dt_shape_ctx *c);
#include "ops.def"
#undef DT_OP

/* The default text of parameter `i` of `op` as written in the schema
 * (quotes removed), or NULL when the parameter has none. Valid forever. */
const char *dt_op_param_default(enum dt_op op, int i);

/* ------------------------------------------------------------------ */
/* Expanded tensor metadata: what the shape functions compute with. */
struct dt_tinfo {
	uint8_t dtype; /* enum dt_dtype */
	int rank;
	int64_t shape[DT_MAX_RANK];
	int64_t stride[DT_MAX_RANK];
	int64_t offset;
};

/* A tensor operand of an elementwise op, or a Python number (PyTorch's
 * "wrapped number": rank 0, and weaker than any tensor in promotion). */
struct dt_operand {
	struct dt_tinfo t;
	bool number;
};

/* A Scalar argument. */
struct dt_scalar {
	uint8_t kind; /* DT_ARG_INT, DT_ARG_FLOAT or DT_ARG_BOOL */
	int64_t i;
	double f;
	bool b;
};

/* Dims formatted as "[4, 8]" for messages; one buffer per printed list. */
struct dt_dimbuf {
	char s[16 * DT_MAX_RANK + 64];
};
const char *dt_dims_format(struct dt_dimbuf *b, const int64_t *v, int n);

/* ------------------------------------------------------------------ */
/* Errors at the node being inferred. dt_shape_fail prefixes
 * "node 'NAME': TARGET: ", dt_shape_fail_node only "node 'NAME': ". Both
 * return DT_EINPUT. */
int dt_shape_fail(struct dt_shape_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int dt_shape_fail_node(struct dt_shape_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *dt_shape_target(const struct dt_shape_ctx *c);
/* The op of the node being inferred (ops sharing a shape function differ
 * by it). */
static inline enum dt_op dt_shape_op(const struct dt_shape_ctx *c)
{
	return (enum dt_op)dt_node_get(c->m, c->node)->op;
}
const char *dt_shape_param_name(const struct dt_shape_ctx *c, int p);
/* Index of the parameter called `name` in the node's schema, or -1. */
int dt_shape_param_index(const struct dt_shape_ctx *c, const char *name);

/* ------------------------------------------------------------------ */
/* Reading bound arguments. Parameters are schema indices. The getters
 * return false when the parameter was omitted without a default, passed
 * as none, or defaults to None; binding has already checked kinds. */

/* Metadata of result `idx` of node `node` into *t; reports and returns
 * DT_EINPUT when it is missing or malformed. */
int dt_tinfo_load(struct dt_shape_ctx *c, uint32_t node, int idx,
		  struct dt_tinfo *t);
/* Whether parameter p has a value (not omitted, not none). */
bool dt_shape_has(const struct dt_shape_ctx *c, int p);
/* The tensor bound to T parameter p (must be present: a required T or a
 * checked dt_shape_has). A number, or a node with several results, is an
 * error naming the parameter. */
int dt_shape_tensor(struct dt_shape_ctx *c, int p, struct dt_tinfo *t);
/* Like dt_shape_tensor, but a number (for T or scalar parameters) gives a
 * wrapped-number operand. */
int dt_shape_operand(struct dt_shape_ctx *c, int p, struct dt_operand *o);
/* The tensors of a T[] parameter (at most `cap`; none items are errors). */
int dt_shape_tensors(struct dt_shape_ctx *c, int p, struct dt_tinfo *t,
		     int cap, int *n);
bool dt_shape_int(const struct dt_shape_ctx *c, int p, int64_t *v);
/* An int[] (or a single int, or items). Sets *n = -1 when absent; a list
 * longer than `cap` is reported. */
int dt_shape_ints(struct dt_shape_ctx *c, int p, int64_t *v, int cap, int *n);
bool dt_shape_bool(const struct dt_shape_ctx *c, int p, bool *v);
bool dt_shape_scalar(const struct dt_shape_ctx *c, int p, struct dt_scalar *s);
bool dt_shape_dtype(const struct dt_shape_ctx *c, int p, enum dt_dtype *v);
/* A str argument, or NULL (schema defaults are not returned). */
const char *dt_shape_str(const struct dt_shape_ctx *c, int p);

/* memory_format arguments ("torch.contiguous_format", …). */
enum dt_memfmt { DT_MEMFMT_PRESERVE, DT_MEMFMT_CONTIGUOUS, DT_MEMFMT_CL };
/* Reads parameter p (absent gives `dflt`); an unknown format is reported. */
int dt_shape_memfmt(struct dt_shape_ctx *c, int p, enum dt_memfmt dflt,
		    enum dt_memfmt *out);

/* Appends a result (interning shape and stride). */
void dt_shape_emit(struct dt_shape_ctx *c, const struct dt_tinfo *t);
/* Reports when a multi-result op would produce more than DT_MAX_RESULTS. */
int dt_shape_check_results(struct dt_shape_ctx *c, int64_t n);

/* Every size is >= 0 and the contiguous span of `shape` is at most
 * DT_MAX_ELEMENTS, so stride and element-count arithmetic on it cannot
 * overflow (the reader bounds input tensors the same way). Reports. */
#define DT_MAX_ELEMENTS ((int64_t)1 << 60)
int dt_shape_check_sizes(struct dt_shape_ctx *c, const int64_t *shape, int rank);
/* dt_shape_check_sizes plus non-negative strides and the last element
 * reached (offset included) within DT_MAX_ELEMENTS. */
int dt_shape_check_layout(struct dt_shape_ctx *c, const struct dt_tinfo *t);

/* maybe_wrap_dim: wraps a negative dim for a tensor of rank `rank` (rank 0
 * behaves as rank 1), or reports PyTorch's "Dimension out of range". */
bool dt_shape_wrap_dim(struct dt_shape_ctx *c, int64_t *dim, int rank);
/* infer_size for view/reshape: resolves one -1 against `numel`. */
int dt_shape_infer_size(struct dt_shape_ctx *c, int64_t *shape, int rank,
			int64_t numel);
/* Broadcast two shapes (PyTorch's infer_size), or report
 * "cannot broadcast shapes [..] and [..] for TARGET". */
int dt_shape_broadcast(struct dt_shape_ctx *c, const int64_t *a, int ra,
		       const int64_t *b, int rb, int64_t *out, int *rout);

/* ------------------------------------------------------------------ */
/* Geometry (PyTorch's rules, c10/core/TensorImpl.cpp and friends). */
int64_t dt_tinfo_numel(const struct dt_tinfo *t);
/* is_contiguous(): size-1 dims' strides do not matter. */
bool dt_tinfo_is_contiguous(const struct dt_tinfo *t);
/* is_non_overlapping_and_dense(). */
bool dt_tinfo_is_dense(const struct dt_tinfo *t);
/* is_contiguous(memory_format=channels_last): rank 4 only. */
bool dt_tinfo_is_channels_last(const struct dt_tinfo *t);
/* suggest_memory_format(): channels-last for rank-4 channels-last-like
 * strides, else contiguous. */
enum dt_memfmt dt_tinfo_suggest_memfmt(const struct dt_tinfo *t);
/* Offset 0 and fresh strides of the format (channels-last needs rank 4;
 * PRESERVE means contiguous here). */
void dt_tinfo_set_strides(struct dt_tinfo *t, enum dt_memfmt f);
/* A fresh contiguous tensor of `dtype` and `shape` (rank entries). */
struct dt_tinfo dt_tinfo_contiguous(enum dt_dtype dtype, const int64_t *shape,
				    int rank);
/* infer_dense_strides(): dense strides with t's memory order. */
void dt_tinfo_dense_strides(const struct dt_tinfo *t, int64_t *stride);
/* empty_like(t) with preserve_format: dense -> same strides, else dense
 * strides in t's order; offset 0. `out` may be `t`. */
void dt_tinfo_like(struct dt_tinfo *out, const struct dt_tinfo *t);

/* ------------------------------------------------------------------ */
/* Dtypes. */
/* promoteTypes for dtopt's dtypes. */
enum dt_dtype dt_dtype_promote(enum dt_dtype a, enum dt_dtype b);
/* at::result_type over operands (tensors with dims beat 0-d tensors beat
 * numbers, except that a float category beats an integral one). */
enum dt_dtype dt_operands_result_type(const struct dt_operand *o, int n);
#define DT_DEFAULT_FLOAT DT_FLOAT32

#endif
