// SPDX-License-Identifier: MIT
/* internal.h: helpers shared by the runtime's files: 16-bit float
 * conversion, strided iteration, argument readers and the CPU kernel
 * families that dt_cpu_kernel dispatches to. Not installed. */
#ifndef DTOPT_RUNTIME_INTERNAL_H
#define DTOPT_RUNTIME_INTERNAL_H

#include "runtime.h"

#include <stdarg.h>

/* ------------------------------------------------------------------ */
/* Elements (tensor.c). */

/* IEEE binary16 and bfloat16 bits of `v`, rounded to nearest even
 * directly from double (no double rounding through float32). */
uint16_t dt_f16_from_double(double v);
double dt_f16_to_double(uint16_t h);
uint16_t dt_bf16_from_double(double v);
double dt_bf16_to_double(uint16_t h);
/* `v` as stored into dtype t and read back (float casts, 16-bit rounding,
 * integer truncation with wrap-around, bool 0/1). */
double dt_round_to(enum dt_dtype t, double v);

typedef double (*dt_load_fn)(const void *p);
typedef void (*dt_store_fn)(void *p, double v);
/* The element reader and writer of dtype t. */
dt_load_fn dt_loader(enum dt_dtype t);
dt_store_fn dt_storer(enum dt_dtype t);

/* at::detail::computeStride: the strides of viewing `in` as `shape`, or
 * false when a new dim would span two non-contiguous chunks of `in` (then
 * reshape copies). */
bool dt_rt_view_strides(const struct dt_rt_tensor *in, const int64_t *shape,
			int rank, int64_t *stride);

/* Address of the element at `off` elements from the buffer's start. */
static inline char *dt_rt_at(const struct dt_rt_tensor *t, int64_t off)
{
	return (char *)t->buf->data + off * dt_dtype_size((enum dt_dtype)t->dtype);
}

/* ------------------------------------------------------------------ */
/* The interpreter's buffer pool (pool.c): freed buffers of one size kept
 * for the next allocation of that size (no page faults on reuse). */
#define DT_POOL_MIN_BYTES (64u << 10)

struct dt_pool {
	DT_VEC(struct dt_buffer *) free; /* refs 0, owned by the pool */
	size_t bytes;                    /* held in free */
};
/* A pooled buffer of exactly `bytes` (one reference, not in flight), or
 * NULL when none is held. */
struct dt_buffer *dt_pool_take(struct dt_pool *p, size_t bytes);
/* Keep `buf` (its last reference) for reuse; false (nothing done) when it
 * is smaller than DT_POOL_MIN_BYTES: then the caller releases it. */
bool dt_pool_give(struct dt_pool *p, struct dt_buffer *buf);
/* Release the oldest buffers held to backend b until at most `keep`
 * bytes are (keep 0: all, before dt_vec_free(&p->free)). */
void dt_pool_trim(struct dt_pool *p, struct dt_backend *b, size_t keep);

/* ------------------------------------------------------------------ */
/* Producers written in place into the cat that reads them (place.c). */
enum {
	DT_PLACE_OTHER,
	DT_PLACE_KERNEL, /* writes fresh buffers (a kernel step) */
	DT_PLACE_VIEW,   /* result 0 aliases input 0's buffer (a view step) */
	DT_PLACE_INPUT,  /* a placeholder or constant, materialized once */
};
/* For the `count` nodes of `order` (graph order) of kind[] (DT_PLACE_*,
 * by node id): host[P] = the cat whose buffer producer P writes its
 * result into, at element slot[P] of it, for each P place.c's rules
 * allow; host[] and slot[] (node id -> entry) start zeroed. */
void dt_place_plan(const struct dt_module *m, const uint32_t *order,
		   uint32_t count, const uint8_t *kind, uint32_t *host,
		   int64_t *slot);

/* ------------------------------------------------------------------ */
/* Strided iteration (cpu_kernel.c): the elements of a shape in row-major
 * order, with each operand's element offset (its own offset included).
 * Operands are right-aligned against the shape; a missing or size-1 dim
 * broadcasts (stride 0). */
#define DT_CPU_MAX_OPS 4

struct dt_cpu_iter {
	int rank, n;
	int64_t shape[DT_MAX_RANK];
	int64_t stride[DT_CPU_MAX_OPS][DT_MAX_RANK];
	int64_t idx[DT_MAX_RANK];
	int64_t off[DT_CPU_MAX_OPS];
};
void dt_cpu_iter_init(struct dt_cpu_iter *it, const int64_t *shape, int rank,
		      const struct dt_rt_tensor *const *t, int n);
/* Step to the next element (after the last one the offsets are stale). */
static inline void dt_cpu_iter_next(struct dt_cpu_iter *it)
{
	for (int d = it->rank - 1; d >= 0; d--) {
		for (int k = 0; k < it->n; k++)
			it->off[k] += it->stride[k][d];
		if (++it->idx[d] < it->shape[d])
			return;
		for (int k = 0; k < it->n; k++)
			it->off[k] -= it->stride[k][d] * it->shape[d];
		it->idx[d] = 0;
	}
}

/* The walk of `shape` by operands t[0..n) broadcast against it (t[k]
 * NULL: a number, stride 0): size-1 dims dropped and neighbours that
 * every operand walks as one merged. Returns the kept dims' count, their
 * sizes in sz and operand k's strides in st[k]. Shared by the CPU's rows
 * and the CUDA backend's walks. */
int dt_cpu_merge_dims(const int64_t *shape, int rank,
		      const struct dt_rt_tensor *const *t, int n, int64_t *sz,
		      int64_t (*st)[DT_MAX_RANK]);
/* The same walk by rows: the dims are coalesced where every operand
 * allows, the last (merged) dim is a row of `len` elements that operand k
 * steps through by step[k]; `outer` walks the rows (its offsets are each
 * row's first element). Rows come in row-major order. */
struct dt_cpu_rows {
	struct dt_cpu_iter outer;
	int64_t len, count;
	int64_t step[DT_CPU_MAX_OPS];
};
void dt_cpu_rows_init(struct dt_cpu_rows *r, const int64_t *shape, int rank,
		      const struct dt_rt_tensor *const *t, int n);
/* n elements of t from element offset `off`, `step` apart, as doubles. */
void dt_cpu_load_row(const struct dt_rt_tensor *t, int64_t off, int64_t step,
		     int64_t n, double *dst);
void dt_cpu_store_row(struct dt_rt_tensor *t, int64_t off, int64_t step,
		      int64_t n, const double *src);

/* The broadcast shape of a and b (right-aligned; they must broadcast)
 * into shape; returns its rank. */
int dt_rt_broadcast(const struct dt_rt_tensor *a, const struct dt_rt_tensor *b,
		    int64_t *shape);
/* t's dims before `dim` (outer), at it (size) and after it (inner), as
 * element counts (1 where there are none). */
void dt_rt_around(const struct dt_rt_tensor *t, int64_t dim, int64_t *outer,
		  int64_t *size, int64_t *inner);
/* Every element of t in row-major order into dst (numel doubles). */
void dt_cpu_read(const struct dt_rt_tensor *t, double *dst);
/* The elements of t broadcast to `shape` (right-aligned), row-major. */
void dt_cpu_read_as(const struct dt_rt_tensor *t, const int64_t *shape,
		    int rank, double *dst);
/* Store src (numel doubles, row-major) into t's elements. */
void dt_cpu_write(struct dt_rt_tensor *t, const double *src);
/* Store v into every element of t. */
void dt_cpu_fill(struct dt_rt_tensor *t, double v);
/* Split t's dims into the ones `mask` marks (inner, the slow-to-fast order
 * kept) and the others (outer); both share t's buffer and offset. */
void dt_cpu_split_dims(const struct dt_rt_tensor *t, const bool *mask,
		       struct dt_rt_tensor *outer, struct dt_rt_tensor *inner);
/* Scratch of one kernel call c: `bytes` (may be 0), or n doubles, from the
 * backend's allocator, so running out is an error at c's node ("cannot
 * allocate N bytes of scratch", reported before NULL is returned), never an
 * abort. Scratch lives within the call and is not in the memory plan
 * (dt_interpret_peak): it is a few copies of the call's operands as
 * doubles. Give it back with dt_cpu_release (NULL is fine). */
void *dt_cpu_alloc(struct dt_backend *b, const struct dt_kernel_call *c,
		   size_t bytes);
double *dt_cpu_scratch(struct dt_backend *b, const struct dt_kernel_call *c,
		       int64_t n);
void dt_cpu_release(struct dt_backend *b, void *p);

/* ------------------------------------------------------------------ */
/* Arguments of a kernel call (cpu_kernel.c). Parameters are schema
 * indices; omitted parameters read the schema's default. The getters
 * return false when the value is absent, none or defaults to None. */
bool dt_cpu_int(const struct dt_kernel_call *c, int p, int64_t *v);
/* A float, int or bool (Scalar) argument as a double. */
bool dt_cpu_number(const struct dt_kernel_call *c, int p, double *v);
bool dt_cpu_bool(const struct dt_kernel_call *c, int p, bool *v);
/* Whether str parameter p (or its default) equals s. */
bool dt_cpu_str_is(const struct dt_kernel_call *c, int p, const char *s);
bool dt_cpu_dtype(const struct dt_kernel_call *c, int p, enum dt_dtype *v);
/* An int[] (or one int, or items; bools read as 0/1). Returns the count,
 * or -1 when absent; at most cap values are stored. */
int dt_cpu_ints(const struct dt_kernel_call *c, int p, int64_t *v, int cap);
/* The tensors of a T[] parameter (a none item as NULL). Returns
 * the count (at most cap). */
int dt_cpu_tensors(const struct dt_kernel_call *c, int p,
		   const struct dt_rt_tensor **t, int cap);

/* A tensor operand, or a Python number wrapped as a 0-d tensor (stored as
 * float64; `dtype` is its promotion dtype: int64, bool or float32). */
struct dt_cpu_operand {
	struct dt_rt_tensor t;
	struct dt_buffer buf;
	double value;
	uint8_t dtype;
	bool number;
};
/* Parameter p as an operand; false when absent. The operand must not be
 * moved while in use (t.buf points into it). */
bool dt_cpu_operand(const struct dt_kernel_call *c, int p,
		    struct dt_cpu_operand *o);
/* at::result_type over operands (tensors with dims, then 0-d tensors,
 * then numbers; a float category beats an integral one). */
enum dt_dtype dt_cpu_result_type(const struct dt_cpu_operand *const *o, int n);

/* Report `file:line: error: node 'x' (target): MSG` at node n through
 * b->diag and record it as b->failed_node; returns DT_ERUNTIME. */
int dt_rt_fail(struct dt_backend *b, const struct dt_module *m,
	       const struct dt_node *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int dt_rt_vfail(struct dt_backend *b, const struct dt_module *m,
		const struct dt_node *n, const char *fmt, va_list ap);
/* dt_rt_fail at the call's node. */
int dt_cpu_fail(struct dt_backend *b, const struct dt_kernel_call *c,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* splitmix64 finaliser and FNV-1a (inputs.c; also the random ops). */
uint64_t dt_rt_mix64(uint64_t x);
uint64_t dt_rt_fnv1a(const char *s);

/* ------------------------------------------------------------------ */
/* Kernel families; each handles the ops dt_cpu_kernel's table maps to it
 * and dies on any other (a table bug). */
typedef int (*dt_cpu_kernel_fn)(struct dt_backend *b,
				const struct dt_kernel_call *c);
int dt_cpu_elementwise(struct dt_backend *b, const struct dt_kernel_call *c);
/* An elementwise op's constants, read from call c and cast to the compute
 * dtype as PyTorch does (cpu_elementwise.c; shared with the CUDA
 * backend). */
struct dt_ew_consts {
	double alpha, lo, hi; /* alpha/scale; clamp bounds, threshold */
	bool has_lo, has_hi;  /* clamp bounds given */
	bool tanh;            /* gelu's tanh approximation */
	int mode;             /* div rounding: 0 none, 1 trunc, 2 floor */
};
void dt_cpu_ew_consts(const struct dt_kernel_call *c, enum dt_dtype compute,
		      struct dt_ew_consts *k);
/* Operands params[0..n) (n <= 3) of elementwise call c into ops, and the
 * dtype they compute in: for a comparison the inputs' promoted type, else
 * the output's. DT_ERUNTIME after reporting a missing one. */
int dt_cpu_ew_operands(struct dt_backend *b, const struct dt_kernel_call *c,
		       const int8_t *params, int n, bool compare,
		       struct dt_cpu_operand *ops, enum dt_dtype *compute);
int dt_cpu_backward_ew(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_random(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_reduce(struct dt_backend *b, const struct dt_kernel_call *c);
/* Marks the reduced dims of x for reduction `def` of the call (every dim
 * without a dim list); DT_ERUNTIME after reporting a dim out of range.
 * Shared by the CPU and CUDA reductions. */
int dt_cpu_reduce_mask(struct dt_backend *b, const struct dt_kernel_call *c,
		       const struct dt_reduction *def,
		       const struct dt_rt_tensor *x, bool *mask);
int dt_cpu_matmul(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_softmax(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_layer_norm(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_embedding(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_nll_loss(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_mse_loss(struct dt_backend *b, const struct dt_kernel_call *c);
/* tril/triu, index_select, index_add, repeat_interleave, gather,
 * scatter_add, repeat, flip, cumsum (cpu_index.c) */
int dt_cpu_index(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_copy_op(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_join(struct dt_backend *b, const struct dt_kernel_call *c);
int dt_cpu_pad(struct dt_backend *b, const struct dt_kernel_call *c);
/* The copies a dt.* op of SPMD programs makes, at the running rank's mesh
 * coordinate (the graph's rank=, else the backend's): *npairs pairs
 * (source view, destination view), in an array the caller frees with
 * dt_free; the rest of the result is padding. DT_ERUNTIME after a report.
 * Shared with the CUDA backend. */
int dt_cpu_spmd_views(struct dt_backend *b, const struct dt_kernel_call *c,
		      struct dt_rt_tensor (**pairs)[2], int *npairs);
int dt_cpu_create(struct dt_backend *b, const struct dt_kernel_call *c);
/* What factory call c makes (cpu_create.c; shared with the CUDA backend):
 * false, with the fill *value (0 for empty* and zeros*: zero-filled, so
 * runs are deterministic); or, for arange, true with *start and *step of
 * start + i * step (truncated for integer results, as ATen computes
 * them). */
bool dt_cpu_factory(const struct dt_kernel_call *c, double *value,
		    double *start, double *step);

/* world.c: a hash of what communicator creation depends on (mesh shapes
 * and device lists, group meshes and ordered dims; not names), which all
 * ranks must agree on. */
uint64_t dt_topology_fingerprint(const struct dt_module *m);
/* The world size the module needs: one more than the largest global rank
 * any mesh names (its devices, else 0..size-1); *which is the mesh that
 * sets it (NULL and 0 without meshes). */
int64_t dt_required_world(const struct dt_module *m,
			  const struct dt_mesh **which);

/* trace.c: the op table's target string of n ("placeholder", "output",
 * "get_attr" for the other kinds; valid forever). */
const char *dt_rt_node_target(const struct dt_node *n);
/* One executed node of a rank's trace. */
struct dt_trace_event {
	uint32_t node;
	double start, dur; /* seconds since the run started */
	uint64_t bytes;    /* of the results produced */
	uint8_t track;     /* 0: the host's nodes; 1: a collective in flight,
			      from its start to the end of its wait */
};
/* Write rank `rank`'s Chrome trace of `events` to `path` atomically (one
 * event per line, which dt_trace_merge relies on). DT_OK, or DT_EIO
 * after reporting. */
int dt_trace_write(const char *path, const struct dt_module *m, int rank,
		   const struct dt_trace_event *events, uint32_t n,
		   struct dt_diag *d);

/* sequence.c: the kind, group (index and size), reduce op and split sizes
 * of collective node n from its bound args (input and output are left to
 * the caller). DT_OK, or DT_EINPUT with *why ("undeclared group", "bad
 * reduce_op"). */
int dt_rt_collective_args(const struct dt_module *m, const struct dt_node *n,
			  const struct dt_bound_args *a,
			  struct dt_collective_call *c, const char **why);

/* transfer.c: the boxes of all_to_all_v call c (semantics §3.1) between
 * group position `me` and every position q: box[q] is what me sends q
 * (sending) or receives from q: per tensor dim its start in the sender's
 * shard, in the receiver's, and its length; `any` false when nothing
 * moves. Every element of the receiver's dst shard comes from exactly one
 * sender: the rank holding it under src that agrees with the receiver on
 * the mesh dims src replicates. */
struct dt_rt_box {
	int64_t from[DT_MAX_RANK], to[DT_MAX_RANK], len[DT_MAX_RANK];
	bool any;
};
void dt_rt_transfer_boxes(const struct dt_collective_call *c, int64_t me,
			  bool sending, struct dt_rt_box *box);

/* world.c: the watchdog's report at collective node n (of `kind` over
 * module group `group`) whose wait outlived b->timeout; DT_ERUNTIME. */
int dt_rt_timeout_fail(struct dt_backend *b, const struct dt_module *m,
		       const struct dt_node *n, enum dt_collective_kind kind,
		       int group);
/* world.c: the memory this host can give (MemAvailable, capped by a
 * cgroup's limit less its use), 0 when unknown. */
size_t dt_host_memory(void);
/* world.c: keep host memory this process frees in its heap (glibc: no
 * trimming, no mmap), so the buffers every iteration
 * allocates again reuse pages instead of faulting fresh zeroed ones in
 * (semantics §4.7). For backends on host memory, at creation. */
void dt_host_heap_keep(void);

/* Views used by the copy kernels of both host and CUDA backends: the part
 * of t at [start, start + len) of dim d, every step-th; t with dim d
 * removed at `index`; a possibly negative dim wrapped into [0, rank)
 * (rank 0 counts as 1), false when out of range. */
struct dt_rt_tensor dt_rt_narrow(const struct dt_rt_tensor *t, int d,
				 int64_t start, int64_t len, int64_t step);
struct dt_rt_tensor dt_rt_select(const struct dt_rt_tensor *t, int d,
				 int64_t index);
bool dt_rt_wrap_dim(int64_t *dim, int rank);

#endif
