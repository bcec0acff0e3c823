// SPDX-License-Identifier: MIT
/* runtime.h: the interpreter that runs a local-view graph on one rank, the
 * backend interface (MPI on CPUs, NCCL+CUDA on GPUs), run-time tensors, the
 * deterministic input generator and result comparison. */
#ifndef DTOPT_RUNTIME_H
#define DTOPT_RUNTIME_H

#include "ir.h"

/* ------------------------------------------------------------------ */
/* Run-time tensors: refcounted storage plus a strided view of it. */
struct dt_buffer {
	void *data;      /* host or device memory, per backend */
	size_t bytes;
	uint32_t refs;
	bool in_flight;  /* the interpreter's accounting: a collective's
			    staged input or receive buffer, not a value */
};

struct dt_rt_tensor {
	struct dt_buffer *buf; /* NULL for a value not (yet) computed */
	uint8_t dtype;         /* enum dt_dtype */
	uint8_t rank;
	int64_t shape[DT_MAX_RANK];
	int64_t stride[DT_MAX_RANK]; /* in elements */
	int64_t offset;              /* in elements */
};

int64_t dt_rt_numel(const struct dt_rt_tensor *t);
bool dt_rt_is_contiguous(const struct dt_rt_tensor *t);
/* Element address of the multi-index `idx`. */
void *dt_rt_element(const struct dt_rt_tensor *t, const int64_t *idx);
/* Describe `t` from IR metadata (no storage attached). */
void dt_rt_from_meta(struct dt_rt_tensor *t, const struct dt_module *m,
		     const struct dt_tensor *meta);
/* Bytes of storage the view needs from element 0 of its buffer: up to its
 * last reachable element (offset and strides included); 0 when empty. */
size_t dt_rt_storage_bytes(const struct dt_rt_tensor *t);

struct dt_backend;
/* A contiguous host copy of backend tensor v in *out (its buffer from
 * dt_malloc; free it with dt_rt_host_free). A non-contiguous v is first
 * gathered into a temporary backend buffer. Returns DT_OK, or
 * DT_ERUNTIME (not reported: the caller names the node) with out->buf
 * NULL. */
int dt_rt_to_host(struct dt_backend *b, const struct dt_rt_tensor *v,
		  struct dt_rt_tensor *out);
void dt_rt_host_free(struct dt_rt_tensor *t);
/* A fresh buffer of `bytes` (at least 1) of backend memory with one
 * reference, or NULL when the backend's allocation fails (nothing is
 * reported: the caller names the node). */
struct dt_buffer *dt_buffer_create(struct dt_backend *b, size_t bytes);
/* Drop one reference; the memory goes back to the backend with the last. */
void dt_buffer_release(struct dt_backend *b, struct dt_buffer *buf);

/* Element conversion: every dtype reads as double and writes from double
 * (bfloat16/float16 rounded to nearest even; bool as 0/1). */
double dt_load_element(enum dt_dtype t, const void *p);
void dt_store_element(enum dt_dtype t, void *p, double v);

/* ------------------------------------------------------------------ */
/* Backends. */
struct dt_backend;
struct dt_pending; /* an issued collective, completed by wait */

/* What a kernel gets: the node, its bound args, the values of all nodes
 * (indexed by node id), and its preallocated outputs (shape/stride/offset
 * from the IR). */
struct dt_kernel_call {
	const struct dt_module *m;
	const struct dt_node *node;
	enum dt_op op;
	const struct dt_bound_args *args;
	/* node id -> its results: values[id][i] is result i (computed nodes
	 * that the node reads only) */
	struct dt_rt_tensor *const *values;
	struct dt_rt_tensor *outputs;
	uint32_t noutputs;
	uint64_t seed; /* for the random ops (dropout, bernoulli, rand*) */
};
/* The tensor bound to parameter `param` of the call (NULL if absent, none
 * or a Python number). */
const struct dt_rt_tensor *dt_kernel_input(const struct dt_kernel_call *c,
					   int param);

enum dt_collective_kind {
	DT_COLL_ALL_GATHER,
	DT_COLL_REDUCE_SCATTER,
	DT_COLL_ALL_REDUCE,
	DT_COLL_ALL_TO_ALL,
	DT_COLL_ALL_PERMUTE, /* dt.all_permute: one send, one receive */
	DT_COLL_ALL_TO_ALL_V, /* dt.all_to_all_v: boxes between any ranks */
};
/* "all_gather", "reduce_scatter", "all_reduce", "all_to_all",
 * "all_permute", "all_to_all_v". */
const char *dt_collective_name(enum dt_collective_kind k);

struct dt_collective_call {
	enum dt_collective_kind kind;
	enum dt_reduce_op reduce;   /* reduce_scatter, all_reduce */
	int group;                  /* index in module groups */
	int64_t group_size;
	const struct dt_rt_tensor *input;  /* contiguous */
	struct dt_rt_tensor *output;       /* contiguous, preallocated */
	const int64_t *output_splits, *input_splits; /* all_to_all, dim-0 rows */
	const int64_t *permutation; /* all_permute: group position i sends
				       its whole input to position
				       permutation[i] (group_size entries) */
	struct dt_spmd_args layout; /* all_to_all_v: mesh, src, dst, size
				       (dt_rt_transfer_boxes) */
	const struct dt_node *node;        /* for error messages */
	const struct dt_module *m;         /* node's module, for messages */
};

struct dt_backend_ops {
	const char *name;
	/* Memory of the backend's device; NULL on failure. */
	void *(*alloc)(struct dt_backend *b, size_t bytes);
	void (*release)(struct dt_backend *b, void *p);
	/* Copies between host memory and backend memory. */
	int (*upload)(struct dt_backend *b, void *dst, const void *src,
		      size_t bytes);
	int (*download)(struct dt_backend *b, void *dst, const void *src,
			size_t bytes);
	/* Make `dst` (any strides) a copy of `src` (any strides, same shape;
	 * dtype conversion allowed). */
	int (*copy)(struct dt_backend *b, struct dt_rt_tensor *dst,
		    const struct dt_rt_tensor *src);
	/* Run a compute node (not a view, collective or wait). */
	int (*kernel)(struct dt_backend *b, const struct dt_kernel_call *c);
	/* Start a collective; completes at wait. */
	int (*collective)(struct dt_backend *b,
			  const struct dt_collective_call *c,
			  struct dt_pending **out);
	int (*wait)(struct dt_backend *b, struct dt_pending *p);
	/* Wait for all queued work (for timing). */
	int (*synchronize)(struct dt_backend *b);
	/* Let collectives in flight advance while the host computes (MPI
	 * moves nonblocking collectives only inside MPI calls); NULL where
	 * they advance on their own. Called between nodes while any is in
	 * flight. */
	int (*progress)(struct dt_backend *b);
	void (*destroy)(struct dt_backend *b);
};

struct dt_backend {
	const struct dt_backend_ops *ops;
	int rank, world_size;         /* global */
	struct dt_diag *diag;
	/* The failing node of the last error, for messages and abort. */
	const struct dt_node *failed_node;
	/* Seconds a collective's wait may take before it fails, reporting
	 * the node (0: no limit). Set by the caller after creation. */
	double timeout;
	/* Seconds the MPI backend's wait for a collective yields the CPU
	 * before it sleeps between tests (dt_rt_poll): set at creation, 2 ms
	 * when more ranks than cores share the host, else DT_RT_SPIN; the
	 * caller may override it. */
	double spin;
	/* Bytes of tensors this rank can hold: its share of the host's (or
	 * GPU's) free memory at creation; 0 when unknown. */
	size_t memory;
};

/* The single-process CPU backend: host memory, CPU kernels; collectives
 * are valid only on groups of size 1 (the single-rank reference). */
struct dt_backend *dt_backend_cpu_create(struct dt_diag *d);
/* The MPI backend (MPI initialised by the caller): CPU kernels on host
 * memory, one communicator per declared group instance (MPI_Comm_split,
 * colour = instance, key = position in the group's dim order), nonblocking
 * collectives. First checks (one allreduce every rank reaches) that all
 * ranks declare the same meshes and groups, then that the world size is 1 +
 * the largest global rank any mesh names (its devices list, else its size).
 * Returns NULL after reporting. Built when DTOPT_HAVE_MPI. */
struct dt_backend *dt_backend_mpi_create(const struct dt_module *m,
					 struct dt_diag *d);
/* One collective a rank issues, in graph order. */
struct dt_collective_item {
	uint64_t hash;        /* of kind, group, dtype and reduce: what every
				 rank must agree on */
	uint64_t counts;      /* of in and out: what the ranks of one group
				 instance must agree on (0 for all_to_all,
				 whose counts differ by rank) */
	int64_t in, out;      /* elements of the input and the result */
	int32_t kind;         /* enum dt_op */
	int32_t group;        /* module group index, -1 when undeclared */
	int32_t dtype;        /* of the input; -1 without metadata */
	int32_t reduce;       /* enum dt_reduce_op, -1 for data movement */
	uint32_t node, line;  /* this rank's node and its XML line */
	uint32_t index;       /* position in the rank's sequence */
};
/* The collectives graph m issues, in graph order: *out (a dt_malloc'd
 * array, never NULL; dt_free it) of *n items, and one hash of the items'
 * `hash` in order (equal sequences, equal hashes). */
void dt_collective_sequence(const struct dt_module *m,
			    struct dt_collective_item **out, uint32_t *n,
			    uint64_t *hash);
/* Collective over MPI_COMM_WORLD (MPI initialised by the caller): all
 * ranks must issue the same collective sequence (kind, group, dtype,
 * reduce op), and the ranks of each group instance the same element
 * counts on that group (all_to_all excepted). One hash is compared over
 * the world, one per group instance; when one differs, the first rank of
 * the world (or instance) and the lowest rank differing from it at the
 * first differing collective each report `file:line: error:` at their
 * node there (or at their output node when their sequence ends first),
 * naming both sides, and they return DT_EINPUT. DT_ERUNTIME after a report
 * when MPI fails or a peer does not take part within `timeout` seconds
 * (> 0; 0 waits forever). MPI errors return (never MPI's fatal handler).
 * Built when DTOPT_HAVE_MPI. */
int dt_collectives_agree(const struct dt_module *m, struct dt_diag *d,
			 double timeout);
/* Complete nonblocking MPI request `request` (an MPI_Request *): MPI_Test
 * through dt_rt_poll (yielding for `spin` seconds), false when timeout > 0
 * seconds ran out (the request is still pending; 0 waits forever). *err is
 * MPI's error code. Built when DTOPT_HAVE_MPI. */
bool dt_mpi_wait(void *request, double timeout, double spin, int *err);

/* The NCCL+CUDA backend: one GPU per rank (local rank, from
 * MPI_Comm_split_type, modulo the visible devices), device memory from
 * CUDA's stream-ordered allocator, compute on a CUDA stream (CUDA
 * kernels, cuBLAS; the few op/dtype cases without a CUDA kernel run the
 * CPU kernel on host copies), NCCL collectives on a second stream,
 * completed at their wait (stream-ordered: the host does not block).
 * When the caller initialised MPI, the world communicator is
 * bootstrapped over MPI_COMM_WORLD after the same agreement and
 * world-size checks as dt_backend_mpi_create; otherwise the process is a
 * world of one. Every declared group gets ncclCommSplit (colour =
 * instance, key = position in the group's dim order); a global-view
 * graph gets no communicators (it runs on one process as the reference,
 * like the CPU backend, whatever its meshes). Failures of CUDA,
 * NCCL or cuBLAS calls report `API failed: ERROR` at the node; errors a
 * kernel finds (an index out of range, an integer division by zero) are
 * reported at its node at the next host synchronization (a download or
 * synchronize). Returns
 * NULL after reporting (no GPU visible, world size mismatch, ...). Built
 * when DTOPT_HAVE_NCCL; the caller destroys it through its ops. */
struct dt_backend *dt_backend_nccl_create(const struct dt_module *m,
					  struct dt_diag *d);

/* CPU kernels shared by the host backends (runtime/cpu_*.c). Every op
 * that is not structural, a view or communication has one, with PyTorch's
 * semantics (broadcasting, type promotion, strided inputs and outputs;
 * floating point computed in double and rounded to the output dtype).
 * The random ops (native_dropout, bernoulli, rand_like, randn_like) draw
 * from splitmix64 of (call seed, node name, element index): deterministic,
 * not torch's generator. Failures are reported at the node through
 * b->diag and return DT_ERUNTIME. */
int dt_cpu_kernel(struct dt_backend *b, const struct dt_kernel_call *c);
/* *view becomes b (rank, diagnostics, limits) with host memory and the
 * CPU kernels: what a device backend hands dt_cpu_kernel when it runs a
 * node on the CPU, whose scratch must be host memory. */
void dt_backend_host_view(const struct dt_backend *b, struct dt_backend *view);
int dt_cpu_copy(struct dt_backend *b, struct dt_rt_tensor *dst,
		const struct dt_rt_tensor *src);
/* Whether dt_cpu_kernel has a kernel for `op` (for every op that is not
 * STRUCTURAL, VIEW, COLLECTIVE or WAIT; reshape, _unsafe_view, contiguous
 * and dtensor.redistribute have one for when they copy). */
bool dt_cpu_has_kernel(enum dt_op op);

/* ------------------------------------------------------------------ */
/* Inputs: every placeholder's global tensor is a pure function of (seed,
 * placeholder name, global element index); see runtime/inputs.c for the
 * formula. Values are multiples of 1/8 in [-1, 1], exact in bfloat16, so
 * data movement compares bitwise. Integer inputs take values in
 * [0, input_max) (the placeholder's meta "dtopt.input_max", default 2). */
double dt_input_value(uint64_t seed, const char *name, int64_t index,
		      enum dt_dtype dtype, int64_t input_max);
/* Materialize placeholder `n`'s value on global rank `rank` into *out: a
 * fresh buffer of backend `b` (one reference; dt_buffer_release it) with
 * the placeholder's IR geometry. With a <sharding> (or in a global-view
 * graph) the value is the rank's shard of the global tensor, Partial
 * mesh dims split so that their reduction gives the global value; without
 * one it is per rank (name "NAME@RANK"). Global-view graphs give every
 * rank the full global tensor. Reports at the node and returns
 * DT_ERUNTIME (rank outside the mesh, shape not matching the shard,
 * allocation failure). See runtime/inputs.c for the formula. */
int dt_materialize_input(const struct dt_module *m, const struct dt_node *n,
			 int rank, uint64_t seed, struct dt_backend *b,
			 struct dt_rt_tensor *out);
/* The value of constant node n: its data in a new backend buffer (the
 * tensor is contiguous; verify checked the byte count). */
int dt_materialize_constant(const struct dt_module *m, const struct dt_node *n,
			    struct dt_backend *b, struct dt_rt_tensor *out);
/* The integer input bound of placeholder `n`: its meta
 * "dtopt.input_max" (a positive integer), or 2. */
int64_t dt_input_max(const struct dt_module *m, const struct dt_node *n);

/* ------------------------------------------------------------------ */
/* Interpreter. */
struct dt_run_options {
	uint64_t seed;
	int iters, warmup;
	const char *trace_path; /* Chrome trace JSON, NULL = none */
	bool summary;
};

/* Per-target totals over the timed iterations. */
struct dt_run_stat {
	const char *target; /* op table string, valid forever */
	uint64_t count;     /* node executions */
	double seconds;
	uint64_t bytes;     /* bytes of the results produced */
};

/* What a process used: CPU seconds (user and system) and page faults. */
struct dt_rt_usage {
	double cpu_seconds, page_faults;
};

struct dt_run_result {
	/* Host copies of the graph's outputs, contiguous, in output order
	 * (a none output has buf NULL). */
	struct dt_rt_tensor *outputs;
	uint32_t noutputs;
	double seconds_per_iter;
	struct dt_rt_usage usage; /* per timed iteration */
	int iters;         /* timed iterations */
	/* Memory (semantics §3.1): the most bytes of values live at once
	 * (inputs, results; a collective's input read in place counts until
	 * the collective completes), the largest value, the most bytes of
	 * collective buffers live at once (staged inputs and receive buffers,
	 * from the start to the wait), and the most of both together: the
	 * backend memory the run needs (dt_interpret_peak). */
	size_t peak_bytes, largest_bytes, buffer_bytes, memory_bytes;
	/* Communication per timed iteration: collectives started, seconds
	 * from each start to the end of its wait (in flight), and seconds the
	 * host spent in starts, waits and the progress tests between nodes
	 * (exposed: not hidden by compute). */
	double comm_count, comm_flight_seconds, comm_exposed_seconds;
	struct dt_run_stat *stats; /* by first appearance of the target */
	uint32_t nstats;
};

/* Run graph `m` on backend `b` for rank b->rank. Needs SHAPES (every
 * call node has its metadata). A local-view graph runs on any world
 * size; a global-view graph only on one process (the single-rank
 * reference: full global inputs, dtensor.redistribute an identity).
 * Runs opt->warmup untimed then max(opt->iters, 1) timed iterations;
 * outputs come from the last. With opt->trace_path it writes a Chrome
 * trace (see dt_trace_rank_path). On failure reports
 * `file:line: error: node 'x' (target): ...` and returns DT_ERUNTIME
 * (DT_EIO when the trace cannot be written); *out is then empty. */
int dt_interpret(struct dt_module *m, struct dt_backend *b,
		 const struct dt_run_options *opt, struct dt_run_result *out);
void dt_run_result_fini(struct dt_run_result *r);
/* The memory plan of running `m` on backend `b` for rank b->rank: the most
 * backend memory one iteration holds at once (values and collective
 * buffers; the memory_bytes a run reports), found by walking the
 * schedule without allocating, computing or communicating. *at is the
 * node whose result reaches the peak (0 when nothing is allocated).
 * Reports and returns DT_ERUNTIME when the graph cannot run (as
 * dt_interpret would before running anything). */
int dt_interpret_peak(struct dt_module *m, struct dt_backend *b, size_t *peak,
		      uint32_t *at);
/* The memory plan of a local-view module over the ranks it runs on (its
 * rank="R" alone, or every rank of the world its meshes name): the most
 * bytes any one rank's run holds at once (dt_interpret_peak's figure, the
 * memory_bytes its run reports), that rank to *rank and the node reaching
 * the peak to *at (rank and at may be NULL). Needs SHAPES. Runs nothing
 * and talks to no backend, so passes can ask what a rewrite costs in
 * memory. Reports (to d; NULL: nowhere) and returns DT_ERUNTIME when a
 * rank's plan cannot be made. */
int dt_memory_plan(struct dt_module *m, struct dt_diag *d, size_t *peak,
		   int *rank, uint32_t *at);
/* Print the per-target table (count, total ms, ms per iteration, share,
 * bytes) of a run. */
void dt_run_summary_print(const struct dt_run_result *r, FILE *out);

/* The file a rank writes its trace to: `path` itself when world_size is
 * 1, else "BASE.rankR.json" for "BASE.json" (or "PATH.rankR" without a
 * .json suffix). Returns the length (snprintf semantics). Each file is a
 * complete Chrome trace: one track per rank (pid = rank), one "X" event
 * per executed node (name, cat = target, args: bytes, target). */
int dt_trace_rank_path(const char *path, int rank, int world_size, char *buf,
		       size_t n);
/* Merge the per-rank trace files of a run into `path` (written
 * atomically) and remove them. For the CLI's rank 0 after every rank
 * has written its file. Returns DT_OK or DT_EIO after reporting. */
int dt_trace_merge(const char *path, int world_size, struct dt_diag *d);

/* Monotonic seconds, for timing. */
double dt_rt_now(void);
/* This process's usage so far (every thread: compute, polling and MPI's
 * own), for what a run's timed iterations cost. */
struct dt_rt_usage dt_rt_usage_now(void);
/* Call test(ud) until it returns true or, when timeout > 0, that many
 * seconds pass (false). Between calls it yields the CPU for the first
 * `spin` seconds, then sleeps 50 µs until DT_RT_SPIN, then 1 ms: every
 * wait for peers (collectives, the CLI's agreements) goes through it, so
 * a stopped peer cannot hang a rank. A rank sharing its core with others
 * spins briefly (semantics §4.7): a yielding rank stays runnable and gets
 * the core back only after the others' time slices, a sleeping one is
 * woken on time and leaves the core to them meanwhile. */
#define DT_RT_SPIN 0.1
bool dt_rt_poll(bool (*test)(void *ud), void *ud, double timeout,
		 double spin);

#endif
