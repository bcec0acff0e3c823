// SPDX-License-Identifier: MIT
/* runtime/interp_internal.h: what the interpreter's two files share:
 * runtime/interp.c (planning, the steps, the run loop, the memory plan)
 * and runtime/interp_buffers.c (buffers through the pool with their
 * accounting, the inputs, cat placement's buffers). Not installed. */
#ifndef DTOPT_RUNTIME_INTERP_INTERNAL_H
#define DTOPT_RUNTIME_INTERP_INTERNAL_H

#include "internal.h"

/* How a node runs (dt_interp.step). */
enum dt_step {
	DT_STEP_INPUT,      /* placeholder or constant: materialized once */
	DT_STEP_VIEW,       /* result(s) alias the input's buffer */
	DT_STEP_GETITEM,    /* one result of a multi-result node */
	DT_STEP_KERNEL,     /* fresh buffers, backend kernel */
	DT_STEP_CAT_SLAB,   /* a cat some producers wrote into (place.c):
			    copies the other inputs */
	DT_STEP_COLLECTIVE, /* contiguous input, started now */
	DT_STEP_WAIT,       /* completes the collective it reads */
	DT_STEP_OUTPUT,
};

struct dt_interp {
	struct dt_module *m;
	struct dt_backend *b;
	const struct dt_run_options *opt;
	uint32_t *order, count;          /* graph order */
	uint8_t *step;                   /* node id -> enum dt_step */
	struct dt_bound_args *args;      /* node id -> bound args */
	struct dt_rt_tensor *store;      /* every result of every node */
	struct dt_rt_tensor **values;    /* node id -> its results in store */
	struct dt_rt_tensor *inputs;     /* node id -> materialized input */
	uint32_t *free_first, *free_list; /* position -> nodes last read there */
	struct dt_pending **pending;     /* collective node -> in flight */
	struct dt_buffer **pinned;       /* collective node -> input kept alive */
	uint8_t *reads_last;             /* collective node -> nothing reads its
					    input after it */
	double *started;                 /* collective node -> its start time */
	uint32_t in_flight;              /* collectives started, not waited */
	double comm_count, comm_flight, comm_exposed; /* timed iterations */
	uint32_t *stat_of;               /* node id -> index in stats */
	DT_VEC(struct dt_run_stat) stats;
	DT_VEC(struct dt_trace_event) events;
	size_t live, peak, largest;      /* values (dt_run_result) */
	size_t buffers, buffer_peak;     /* collective buffers */
	size_t memory_peak;              /* both */
	uint32_t memory_node;            /* the node whose buffer set it */
	struct dt_pool pool;             /* freed buffers kept for reuse */
	uint32_t *host;                  /* node -> cat it writes into (place.c) */
	int64_t *slot;                   /* node -> its element offset there */
	struct dt_buffer **slab;         /* cat -> its buffer, before it runs */
	struct dt_buffer **kept;         /* cat -> its buffer for the whole run,
					    holding inputs placed there */
	int64_t *slab_at;                /* cat -> its element offset in it */
	double t0;
};

/* `bytes` more of values or of collective buffers (in_flight), at n. */
void dt_interp_account(struct dt_interp *ip, const struct dt_node *n,
		       size_t bytes, bool in_flight);
/* A buffer of `bytes` (one reference; accounted at n): a pooled one of
 * that size, else a fresh one after trimming the pool so that what the
 * run holds (values, collective buffers, pool) stays within the accounted
 * peak. NULL (reported at n) when none can be allocated. */
struct dt_buffer *dt_interp_buffer_new(struct dt_interp *ip,
				       const struct dt_node *n, size_t bytes,
				       bool in_flight);
/* Drop a reference to buf (NULL: nothing); its last goes to the pool, or
 * back to the backend when the pool does not keep it. */
void dt_interp_buffer_drop(struct dt_interp *ip, struct dt_buffer *buf);
/* Drop node id's results' references. */
void dt_interp_values_drop(struct dt_interp *ip, uint32_t id);

/* Producers that write into the cat reading them (place.c): fills host,
 * slot (and allocates slab, kept, slab_at); the cats involved become
 * DT_STEP_CAT_SLAB. After every node's step is planned. */
void dt_interp_plan_places(struct dt_interp *ip);
/* Input `id`, materialized in a buffer of its own (not accounted), moved
 * into its run of the buffer its host cat keeps for the run (allocated by
 * the first such input). */
int dt_interp_place_input(struct dt_interp *ip, uint32_t id);
/* Result 0 of `id` in its slice of its host cat's buffer (meta offset 0:
 * place.c places dense results only). */
int dt_interp_place_result(struct dt_interp *ip, uint32_t id);
/* DT_STEP_CAT_SLAB: a cat some inputs were written into: its buffer
 * (taken from slab[]), the other inputs copied into their runs. */
int dt_interp_run_cat_slab(struct dt_interp *ip, uint32_t id);
/* Every DT_STEP_INPUT node's value, materialized once (rank 0's for a
 * global-view graph) into inputs[], placed into its cat or accounted. */
int dt_interp_materialize(struct dt_interp *ip);

#endif
