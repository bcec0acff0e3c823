// SPDX-License-Identifier: MIT
/* interp.c: the interpreter. It walks the graph once to plan (bound args,
 * how each node runs, where each value is last read), materializes the
 * inputs once, then runs the graph warmup + iters times: views share their
 * input's buffer with the IR's geometry, kernels write fresh buffers,
 * collectives get contiguous inputs and complete at their wait, and every
 * buffer goes back after its last reader (to the pool, pool.c, when
 * large; the buffers, their accounting and cat placement's glue are in
 * interp_buffers.c). It keeps per-node times for the summary table and
 * the Chrome trace. */
#include "interp_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

double dt_rt_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct dt_rt_usage dt_rt_usage_now(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (struct dt_rt_usage){
	    (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
		(double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6,
	    (double)u.ru_minflt + (double)u.ru_majflt};
}

/* ---- planning ---- */

/* The node bound to parameter p (a single tensor), or 0. */
static uint32_t arg_node(const struct dt_interp *ip, uint32_t id, int p)
{
	const struct dt_arg *a = ip->args[id].arg[p];
	return a && a->kind == DT_ARG_NODE ? a->v.node : 0;
}

/* Whether result 0 of `id` has the same geometry as its input (size-1
 * dims' strides do not matter), so it can alias it. */
static bool same_geometry(const struct dt_rt_tensor *a, const struct dt_rt_tensor *b)
{
	if (a->rank != b->rank || a->dtype != b->dtype || a->offset != b->offset)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->shape[d] != b->shape[d] ||
		    (a->shape[d] > 1 && a->stride[d] != b->stride[d]))
			return false;
	return true;
}

/* reshape/_unsafe_view alias when PyTorch's view strides exist (and the
 * graph agrees); contiguous and redistribute when nothing changes. */
static enum dt_step copy_or_view(struct dt_interp *ip, uint32_t id)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	uint32_t in = arg_node(ip, id, 0);
	if (!in || dt_node_get(ip->m, in)->ntensors != 1)
		return DT_STEP_KERNEL;
	struct dt_rt_tensor x, y;
	dt_rt_from_meta(&x, ip->m, dt_node_tensor(ip->m, dt_node_get(ip->m, in), 0));
	dt_rt_from_meta(&y, ip->m, dt_node_tensor(ip->m, n, 0));
	if (n->op == DT_OP_RESHAPE || n->op == DT_OP_UNSAFE_VIEW) {
		struct dt_rt_tensor v = y;
		v.offset = x.offset;
		if (!dt_rt_view_strides(&x, y.shape, y.rank, v.stride))
			return DT_STEP_KERNEL;
		x = v;
	}
	return same_geometry(&x, &y) ? DT_STEP_VIEW : DT_STEP_KERNEL;
}

/* Every result's metadata is something a tensor can have here. */
static int check_meta(struct dt_interp *ip, const struct dt_node *n)
{
	for (uint32_t r = 0; r < n->ntensors; r++) {
		const struct dt_tensor *t = dt_node_tensor(ip->m, n, (int)r);
		int rank, nstride;
		const int64_t *shape = dt_ints_get(ip->m, t->shape, &rank);
		const int64_t *stride = dt_ints_get(ip->m, t->stride, &nstride);
		bool ok = rank <= DT_MAX_RANK && nstride == rank &&
			  t->dtype < DT_NDTYPES && t->offset >= 0;
		for (int d = 0; ok && d < rank; d++)
			ok = shape[d] >= 0 && stride[d] >= 0;
		if (!ok)
			return dt_rt_fail(ip->b, ip->m, n, "result %u has metadata the runtime cannot hold (rank above %d, negative sizes, strides or offset)",
					  r, DT_MAX_RANK);
	}
	return DT_OK;
}

static int plan_node(struct dt_interp *ip, uint32_t id)
{
	struct dt_node *n = dt_node_get(ip->m, id);
	if (check_meta(ip, n) != DT_OK)
		return DT_ERUNTIME;
	if (n->kind == DT_NODE_PLACEHOLDER || n->kind == DT_NODE_CONSTANT) {
		ip->step[id] = DT_STEP_INPUT;
		return DT_OK;
	}
	if (n->op == DT_OP_UNKNOWN)
		return dt_rt_fail(ip->b, ip->m, n, "unknown target '%s'",
				  dt_str_get(ip->m, n->target));
	if (dt_op_bind(ip->m, n, &ip->args[id], ip->b->diag) != DT_OK)
		return DT_ERUNTIME;
	if (n->kind == DT_NODE_OUTPUT) {
		ip->step[id] = DT_STEP_OUTPUT;
		return DT_OK;
	}
	if (n->ntensors == 0)
		return dt_rt_fail(ip->b, ip->m, n, "no tensor metadata (run shape-infer first)");
	enum dt_op op = (enum dt_op)n->op;
	if (op == DT_OP_GETITEM)
		ip->step[id] = DT_STEP_GETITEM;
	else if (dt_op_has(op, DT_OPF_VIEW))
		ip->step[id] = DT_STEP_VIEW;
	else if (dt_op_has(op, DT_OPF_COLLECTIVE))
		ip->step[id] = DT_STEP_COLLECTIVE;
	else if (dt_op_has(op, DT_OPF_WAIT))
		ip->step[id] = DT_STEP_WAIT;
	else if (op == DT_OP_RESHAPE || op == DT_OP_UNSAFE_VIEW ||
		 op == DT_OP_CONTIGUOUS || op == DT_OP_REDISTRIBUTE)
		ip->step[id] = (uint8_t)copy_or_view(ip, id);
	else
		ip->step[id] = DT_STEP_KERNEL;
	if (op == DT_OP_REDISTRIBUTE && ip->m->view != DT_VIEW_GLOBAL)
		return dt_rt_fail(ip->b, ip->m, n, "dtensor.redistribute in a local-view graph (lower it first)");
	return DT_OK;
}

struct last_use_ctx {
	uint32_t *last;
	uint32_t pos;
};

static void mark_use(void *ud, uint32_t input)
{
	struct last_use_ctx *c = ud;
	c->last[input] = c->pos;
}

/* free_first/free_list: the nodes whose values die after each position
 * (a value nobody reads dies right after its node; a collective's lives
 * until its wait). */
static void plan_frees(struct dt_interp *ip)
{
	uint32_t nn = ip->m->nodes.len;
	uint32_t *last = dt_calloc(nn, sizeof(uint32_t));
	struct last_use_ctx c = {last, 0};
	for (uint32_t p = 0; p < ip->count; p++) {
		last[ip->order[p]] = p;
		c.pos = p;
		dt_node_for_each_input(ip->m, dt_node_get(ip->m, ip->order[p]), mark_use, &c);
	}
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p], in = arg_node(ip, id, 0);
		ip->reads_last[id] = ip->step[id] == DT_STEP_COLLECTIVE && in &&
				     last[in] == p;
	}
	for (uint32_t p = 0; p < ip->count; p++) /* in flight until drained */
		if (ip->step[ip->order[p]] == DT_STEP_COLLECTIVE && last[ip->order[p]] == p)
			last[ip->order[p]] = ip->count - 1;
	ip->free_first = dt_calloc(ip->count + 1, sizeof(uint32_t));
	ip->free_list = dt_calloc(ip->count ? ip->count : 1, sizeof(uint32_t));
	for (uint32_t p = 0; p < ip->count; p++)
		ip->free_first[last[ip->order[p]] + 1]++;
	for (uint32_t p = 0; p < ip->count; p++)
		ip->free_first[p + 1] += ip->free_first[p];
	uint32_t *fill = dt_calloc(ip->count + 1, sizeof(uint32_t));
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t at = last[ip->order[p]];
		ip->free_list[ip->free_first[at] + fill[at]++] = ip->order[p];
	}
	dt_free(fill);
	dt_free(last);
}

static uint32_t stat_index(struct dt_interp *ip, const char *target)
{
	for (uint32_t i = 0; i < ip->stats.len; i++)
		if (ip->stats.data[i].target == target)
			return i;
	struct dt_run_stat s = {target, 0, 0, 0};
	return dt_vec_push(&ip->stats, s);
}

static int plan(struct dt_interp *ip)
{
	struct dt_module *m = ip->m;
	uint32_t nn = m->nodes.len, total = 0;
	ip->count = dt_graph_count(m);
	ip->order = dt_calloc(ip->count ? ip->count : 1, sizeof(uint32_t));
	ip->step = dt_calloc(nn, 1);
	ip->args = dt_calloc(nn, sizeof(*ip->args));
	ip->values = dt_calloc(nn, sizeof(*ip->values));
	ip->inputs = dt_calloc(nn, sizeof(*ip->inputs));
	ip->pending = dt_calloc(nn, sizeof(*ip->pending));
	ip->pinned = dt_calloc(nn, sizeof(*ip->pinned));
	ip->reads_last = dt_calloc(nn, 1);
	ip->started = dt_calloc(nn, sizeof(*ip->started));
	ip->stat_of = dt_calloc(nn, sizeof(uint32_t));
	uint32_t p = 0;
	dt_foreach_node(m, id)
	{
		ip->order[p++] = id;
		total += dt_node_get(m, id)->ntensors;
	}
	ip->store = dt_calloc(total ? total : 1, sizeof(*ip->store));
	total = 0;
	for (p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p];
		const struct dt_node *n = dt_node_get(m, id);
		ip->values[id] = ip->store + total;
		total += n->ntensors;
		if (plan_node(ip, id) != DT_OK)
			return DT_ERUNTIME;
		ip->stat_of[id] = stat_index(ip, dt_rt_node_target(n));
	}
	plan_frees(ip);
	dt_interp_plan_places(ip);
	return DT_OK;
}

/* ---- steps ---- */

/* Result r of `id` described by its IR metadata on buffer `buf`. */
static int describe(struct dt_interp *ip, uint32_t id, uint32_t r,
		    struct dt_buffer *buf)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	struct dt_rt_tensor *t = &ip->values[id][r];
	dt_rt_from_meta(t, ip->m, dt_node_tensor(ip->m, n, (int)r));
	if (dt_rt_storage_bytes(t) > buf->bytes)
		return dt_rt_fail(ip->b, ip->m, n, "result %u reaches past its storage (%zu bytes needed, %zu held)",
				  r, dt_rt_storage_bytes(t), buf->bytes);
	t->buf = buf;
	buf->refs++;
	return DT_OK;
}

static int run_view(struct dt_interp *ip, uint32_t id)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	uint32_t in = arg_node(ip, id, 0);
	if (!in)
		return dt_rt_fail(ip->b, ip->m, n, "a view needs a tensor input");
	struct dt_buffer *buf = ip->values[in][0].buf;
	DT_REQUIRE(buf != NULL);
	/* a value written into a cat's buffer (place.c) sits past its IR
	 * offset: its views move with it */
	int64_t shift = ip->values[in][0].offset -
			dt_node_tensor(ip->m, dt_node_get(ip->m, in), 0)->offset;
	for (uint32_t r = 0; r < n->ntensors; r++) {
		if (describe(ip, id, r, buf) != DT_OK)
			return DT_ERUNTIME;
		ip->values[id][r].offset += shift;
	}
	return DT_OK;
}

static int run_getitem(struct dt_interp *ip, uint32_t id)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	const struct dt_arg *src = ip->args[id].arg[0], *idx = ip->args[id].arg[1];
	if (!src || src->kind != DT_ARG_NODE || !idx)
		return dt_rt_fail(ip->b, ip->m, n, "getitem needs a node and an index");
	int64_t count = dt_node_get(ip->m, src->v.node)->ntensors, i = idx->v.i;
	if (i < -count || i >= count)
		return dt_rt_fail(ip->b, ip->m, n, "index %lld out of range", (long long)i);
	struct dt_rt_tensor *v = &ip->values[src->v.node][i < 0 ? i + count : i];
	DT_REQUIRE(v->buf != NULL);
	ip->values[id][0] = *v;
	v->buf->refs++;
	return DT_OK;
}

static int run_kernel(struct dt_interp *ip, uint32_t id)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	for (uint32_t r = 0; r < n->ntensors; r++) {
		struct dt_rt_tensor *t = &ip->values[id][r];
		dt_rt_from_meta(t, ip->m, dt_node_tensor(ip->m, n, (int)r));
		if (ip->host[id]) { /* one result (place.c) */
			if (dt_interp_place_result(ip, id) != DT_OK)
				return DT_ERUNTIME;
		} else if (!(t->buf = dt_interp_buffer_new(
				 ip, n, dt_rt_storage_bytes(t), false))) {
			return DT_ERUNTIME;
		}
	}
	struct dt_kernel_call c = {
		.m = ip->m, .node = n, .op = (enum dt_op)n->op, .args = &ip->args[id],
		.values = ip->values, .outputs = ip->values[id],
		.noutputs = n->ntensors, .seed = ip->opt->seed,
	};
	return ip->b->ops->kernel(ip->b, &c);
}

/* Whether collective `id` (call c, input x as it reads it: the input's
 * value, or the copy it staged of a non-contiguous one; x->buf also held
 * by its `pinned` reference; result y) all-reduces into x's buffer, as
 * DDP's buckets and PyTorch's reinplacing do: an all_reduce into its own
 * staged copy, or into the input's buffer where it is the input's last
 * reader and nothing else holds that buffer (no view of it, no cat's slab
 * or kept buffer, no graph input), so no value but its result can see
 * the buffer change. Its result then holds no buffer of its own: one
 * bucket less at a gradient bucket's peak. */
static bool reduces_in_place(const struct dt_interp *ip, uint32_t id,
			     const struct dt_collective_call *c,
			     const struct dt_rt_tensor *x,
			     const struct dt_rt_tensor *y)
{
	bool staged = x->buf->refs == 1, /* pinned's, created for it */
	    sole = x->buf->refs == 2 && ip->reads_last[id];
	return c->kind == DT_COLL_ALL_REDUCE && (staged || sole) &&
	       x->dtype == y->dtype &&
	       dt_rt_storage_bytes(y) <= x->buf->bytes;
}

static int run_collective(struct dt_interp *ip, uint32_t id)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	struct dt_collective_call c = {.node = n, .m = ip->m};
	const char *why = NULL;
	if (dt_rt_collective_args(ip->m, n, &ip->args[id], &c, &why) != DT_OK)
		return dt_rt_fail(ip->b, ip->m, n, "%s", why);
	/* the input, contiguous from offset 0 (staged when not) */
	uint32_t in = arg_node(ip, id, 0);
	if (!in)
		return dt_rt_fail(ip->b, ip->m, n, "a collective needs a tensor input");
	struct dt_rt_tensor *x = &ip->values[in][0], staged;
	if (!dt_rt_is_contiguous(x) || x->offset != 0) {
		staged = *x;
		staged.offset = 0;
		dt_contiguous_strides(staged.shape, staged.rank, staged.stride);
		if (!(staged.buf = dt_interp_buffer_new(
			  ip, n, dt_rt_storage_bytes(&staged), true)))
			return DT_ERUNTIME;
		ip->pinned[id] = staged.buf;
		if (ip->b->ops->copy(ip->b, &staged, x) != DT_OK)
			return dt_rt_fail(ip->b, ip->m, n, "cannot stage the input");
		x = &staged;
	} else {
		ip->pinned[id] = x->buf;
		x->buf->refs++;
	}
	struct dt_rt_tensor *y = &ip->values[id][0];
	dt_rt_from_meta(y, ip->m, dt_node_tensor(ip->m, n, 0));
	if (!dt_rt_is_contiguous(y) || y->offset != 0)
		return dt_rt_fail(ip->b, ip->m, n, "a collective's result must be contiguous");
	if (reduces_in_place(ip, id, &c, x, y)) {
		y->buf = x->buf;
		y->buf->refs++;
	} else if (!(y->buf = dt_interp_buffer_new(ip, n, dt_rt_storage_bytes(y),
						   true))) {
		return DT_ERUNTIME;
	}
	c.input = x;
	c.output = y;
	int rc = ip->b->ops->collective(ip->b, &c, &ip->pending[id]);
	ip->in_flight += ip->pending[id] != NULL;
	return rc;
}

/* Complete collective `coll` (if in flight) and let go of its input. */
static int complete(struct dt_interp *ip, uint32_t coll)
{
	int rc = DT_OK;
	if (ip->pending[coll]) {
		rc = ip->b->ops->wait(ip->b, ip->pending[coll]);
		ip->pending[coll] = NULL;
		ip->in_flight--;
	}
	dt_interp_buffer_drop(ip, ip->pinned[coll]);
	ip->pinned[coll] = NULL;
	return rc;
}

static int run_wait(struct dt_interp *ip, uint32_t id)
{
	uint32_t in = arg_node(ip, id, 0);
	const struct dt_node *n = dt_node_get(ip->m, id);
	if (!in)
		return dt_rt_fail(ip->b, ip->m, n, "wait_tensor needs a tensor input");
	if (ip->step[in] == DT_STEP_COLLECTIVE && complete(ip, in) != DT_OK)
		return DT_ERUNTIME;
	struct dt_buffer *buf = ip->values[in][0].buf;
	if (buf->in_flight) { /* received: a value from now on */
		buf->in_flight = false;
		ip->buffers -= buf->bytes;
		dt_interp_account(ip, n, buf->bytes, false);
	}
	return describe(ip, id, 0, buf);
}

static int run_output(struct dt_interp *ip, uint32_t id, struct dt_run_result *res)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	const struct dt_arg *a = ip->args[id].arg[0];
	uint32_t count = !a ? 0 : a->kind == DT_ARG_NODE ? 1
			  : a->kind == DT_ARG_NODES || a->kind == DT_ARG_ITEMS ? a->len
									      : 0;
	res->outputs = dt_calloc(count ? count : 1, sizeof(*res->outputs));
	res->noutputs = count;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t src = a->kind == DT_ARG_NODE    ? a->v.node
			       : a->kind == DT_ARG_NODES ? ip->m->refs.data[a->v.first + i]
			       : ip->m->args.data[a->v.first + i].kind == DT_ARG_NODE
				       ? ip->m->args.data[a->v.first + i].v.node
				       : 0;
		if (src && dt_rt_to_host(ip->b, &ip->values[src][0], &res->outputs[i]) != DT_OK)
			return dt_rt_fail(ip->b, ip->m, n, "cannot copy output %u to the host", i);
	}
	return DT_OK;
}

static int run_step(struct dt_interp *ip, uint32_t id, struct dt_run_result *res)
{
	switch ((enum dt_step)ip->step[id]) {
	case DT_STEP_INPUT:
		ip->values[id][0] = ip->inputs[id];
		ip->inputs[id].buf->refs++;
		return DT_OK;
	case DT_STEP_VIEW: return run_view(ip, id);
	case DT_STEP_GETITEM: return run_getitem(ip, id);
	case DT_STEP_KERNEL: return run_kernel(ip, id);
	case DT_STEP_CAT_SLAB: return dt_interp_run_cat_slab(ip, id);
	case DT_STEP_COLLECTIVE: return run_collective(ip, id);
	case DT_STEP_WAIT: return run_wait(ip, id);
	case DT_STEP_OUTPUT: return res ? run_output(ip, id, res) : DT_OK;
	}
	return DT_OK;
}

/* Bytes a node produced (views and getitem move nothing). */
static uint64_t node_bytes(const struct dt_interp *ip, uint32_t id)
{
	uint8_t s = ip->step[id];
	if (s != DT_STEP_INPUT && s != DT_STEP_KERNEL && s != DT_STEP_COLLECTIVE)
		return 0;
	uint64_t bytes = 0;
	const struct dt_node *n = dt_node_get(ip->m, id);
	for (uint32_t r = 0; r < n->ntensors; r++)
		bytes += (uint64_t)dt_rt_numel(&ip->values[id][r]) *
			 (uint64_t)dt_dtype_size((enum dt_dtype)ip->values[id][r].dtype);
	return bytes;
}

/* Let go of everything an iteration still holds (after an error too). */
static int drain(struct dt_interp *ip)
{
	int rc = DT_OK;
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p];
		if (ip->step[id] == DT_STEP_COLLECTIVE && complete(ip, id) != DT_OK)
			rc = DT_ERUNTIME;
		dt_interp_values_drop(ip, id);
		dt_interp_buffer_drop(ip, ip->slab[id]);
		ip->slab[id] = NULL;
	}
	return rc;
}

/* One pass over the graph; `res` receives the outputs (last iteration). */
static int iterate(struct dt_interp *ip, bool timed, struct dt_run_result *res)
{
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p];
		double t = dt_rt_now();
		if (run_step(ip, id, res) != DT_OK) {
			drain(ip);
			return DT_ERUNTIME;
		}
		double now = dt_rt_now(), dur = now - t;
		uint8_t step = ip->step[id];
		if (timed && step == DT_STEP_COLLECTIVE) {
			ip->started[id] = t;
			ip->comm_count++;
			ip->comm_exposed += dur;
		} else if (timed && step == DT_STEP_WAIT) {
			uint32_t coll = arg_node(ip, id, 0);
			ip->comm_exposed += dur;
			if (ip->step[coll] == DT_STEP_COLLECTIVE) {
				ip->comm_flight += now - ip->started[coll];
				struct dt_trace_event e = {coll, ip->started[coll] - ip->t0,
							   now - ip->started[coll], 0, 1};
				if (ip->opt->trace_path)
					dt_vec_push(&ip->events, e);
			}
		} else if (ip->in_flight && ip->b->ops->progress) {
			/* Moving collectives on this thread is communication
			 * the step pays for: exposed too. */
			if (ip->b->ops->progress(ip->b) != DT_OK) {
				drain(ip);
				return DT_ERUNTIME;
			}
			if (timed)
				ip->comm_exposed += dt_rt_now() - now;
		}
		if (timed) {
			struct dt_run_stat *s = &ip->stats.data[ip->stat_of[id]];
			uint64_t bytes = node_bytes(ip, id);
			s->count++;
			s->seconds += dur;
			s->bytes += bytes;
			if (ip->opt->trace_path) {
				struct dt_trace_event e = {id, t - ip->t0, dur, bytes, 0};
				dt_vec_push(&ip->events, e);
			}
		}
		for (uint32_t i = ip->free_first[p]; i < ip->free_first[p + 1]; i++)
			dt_interp_values_drop(ip, ip->free_list[i]);
	}
	return drain(ip);
}

/* ---- the run ---- */

static void interp_fini(struct dt_interp *ip)
{
	for (uint32_t id = 0; id < ip->m->nodes.len && ip->inputs; id++)
		dt_interp_buffer_drop(ip, ip->inputs[id].buf);
	for (uint32_t id = 0; id < ip->m->nodes.len && ip->kept; id++)
		dt_interp_buffer_drop(ip, ip->kept[id]);
	void *owned[] = {ip->order, ip->step, ip->args, ip->store, ip->values,
			 ip->inputs, ip->free_first, ip->free_list, ip->pending,
			 ip->pinned, ip->reads_last, ip->stat_of, ip->started,
			 ip->host, ip->slot, ip->slab, ip->slab_at, ip->kept};
	for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++)
		dt_free(owned[i]);
	dt_vec_free(&ip->stats);
	dt_vec_free(&ip->events);
	dt_pool_trim(&ip->pool, ip->b, 0);
	dt_vec_free(&ip->pool.free);
}

/* ---- the memory plan: one iteration on a backend that holds nothing ---- */

/* A non-NULL address for every allocation: nothing is stored. */
static char measure_memory;

static void *measure_alloc(struct dt_backend *b, size_t bytes)
{
	(void)b, (void)bytes;
	return &measure_memory;
}

static void measure_release(struct dt_backend *b, void *p)
{
	(void)b, (void)p;
}

static int measure_move(struct dt_backend *b, void *dst, const void *src, size_t bytes)
{
	(void)b, (void)dst, (void)src, (void)bytes;
	return DT_OK;
}

static int measure_copy(struct dt_backend *b, struct dt_rt_tensor *dst,
			const struct dt_rt_tensor *src)
{
	(void)b, (void)dst, (void)src;
	return DT_OK;
}

static int measure_kernel(struct dt_backend *b, const struct dt_kernel_call *c)
{
	(void)b, (void)c;
	return DT_OK;
}

/* Nothing is in flight: the wait step finds no pending collective. */
static int measure_collective(struct dt_backend *b, const struct dt_collective_call *c,
			      struct dt_pending **out)
{
	(void)b, (void)c;
	*out = NULL;
	return DT_OK;
}

static int measure_wait(struct dt_backend *b, struct dt_pending *p)
{
	(void)b, (void)p;
	return DT_OK;
}

static const struct dt_backend_ops measure_ops = {
	.name = "measure",
	.alloc = measure_alloc,
	.release = measure_release,
	.upload = measure_move,
	.download = measure_move,
	.copy = measure_copy,
	.kernel = measure_kernel,
	.collective = measure_collective,
	.wait = measure_wait,
};

int dt_interpret_peak(struct dt_module *m, struct dt_backend *b, size_t *peak,
		      uint32_t *at)
{
	struct dt_interp ip;
	memset(&ip, 0, sizeof(ip));
	struct dt_run_options opt = {0};
	ip.m = m;
	ip.b = b;
	ip.opt = &opt;
	*peak = 0;
	*at = 0;
	int rc = plan(&ip);
	struct dt_backend measure = *b;
	measure.ops = &measure_ops;
	ip.b = &measure;
	for (uint32_t p = 0; rc == DT_OK && p < ip.count; p++) {
		uint32_t id = ip.order[p];
		if (ip.step[id] != DT_STEP_INPUT)
			continue;
		const struct dt_node *n = dt_node_get(m, id);
		struct dt_rt_tensor *t = &ip.inputs[id];
		dt_rt_from_meta(t, m, dt_node_tensor(m, n, 0));
		size_t bytes = dt_rt_storage_bytes(t);
		if (ip.host[id])
			rc = (t->buf = dt_buffer_create(ip.b, bytes))
				 ? dt_interp_place_input(&ip, id)
				 : DT_ERUNTIME;
		else if (!(t->buf = dt_interp_buffer_new(&ip, n, bytes, false)))
			rc = DT_ERUNTIME;
	}
	if (rc == DT_OK)
		rc = iterate(&ip, false, NULL);
	*peak = ip.memory_peak;
	*at = ip.memory_node;
	interp_fini(&ip);
	return rc;
}

int dt_memory_plan(struct dt_module *m, struct dt_diag *d, size_t *peak,
		   int *rank, uint32_t *at)
{
	struct dt_diag quiet;
	if (!d) {
		dt_diag_init_quiet(&quiet);
		d = &quiet;
	}
	int peak_rank;
	uint32_t peak_at;
	rank = rank ? rank : &peak_rank;
	at = at ? at : &peak_at;
	const struct dt_mesh *which;
	int world = (int)dt_required_world(m, &which);
	int first = m->rank >= 0 ? (int)m->rank : 0;
	int last = m->rank >= 0 ? (int)m->rank : (world > 0 ? world - 1 : 0);
	*peak = 0;
	*rank = first;
	*at = 0;
	for (int r = first; r <= last; r++) {
		struct dt_backend b = {.ops = &measure_ops, .rank = r,
				       .world_size = world > 0 ? world : 1,
				       .diag = d};
		size_t got;
		uint32_t node;
		int rc = dt_interpret_peak(m, &b, &got, &node);
		if (rc != DT_OK)
			return rc;
		if (got > *peak) {
			*peak = got;
			*rank = r;
			*at = node;
		}
	}
	return DT_OK;
}

int dt_interpret(struct dt_module *m, struct dt_backend *b,
		 const struct dt_run_options *opt, struct dt_run_result *out)
{
	struct dt_interp ip;
	memset(&ip, 0, sizeof(ip));
	memset(out, 0, sizeof(*out));
	ip.m = m;
	ip.b = b;
	ip.opt = opt;
	ip.t0 = dt_rt_now();
	if (m->view == DT_VIEW_GLOBAL && b->world_size != 1) {
		dt_diag_report(b->diag, DT_ERROR, m->file, 0, NULL,
			       "a global-view graph runs only on one process (got %d); lower it to local view first",
			       b->world_size);
		return DT_ERUNTIME;
	}
	if (m->rank >= 0 && m->rank != b->rank) {
		dt_diag_report(b->diag, DT_ERROR, m->file, 0, NULL,
			       "the graph is rank %d's (rank=\"%d\"), this is rank %d",
			       (int)m->rank, (int)m->rank, b->rank);
		return DT_ERUNTIME;
	}
	int rc = plan(&ip);
	if (rc == DT_OK)
		rc = dt_interp_materialize(&ip);
	int iters = opt->iters > 0 ? opt->iters : 1, warmup = opt->warmup > 0 ? opt->warmup : 0;
	for (int i = 0; rc == DT_OK && i < warmup; i++)
		rc = iterate(&ip, false, NULL);
	if (rc == DT_OK && b->ops->synchronize(b) != DT_OK)
		rc = DT_ERUNTIME;
	double start = dt_rt_now();
	struct dt_rt_usage used = dt_rt_usage_now();
	for (int i = 0; rc == DT_OK && i < iters; i++)
		rc = iterate(&ip, true, i == iters - 1 ? out : NULL);
	if (rc == DT_OK && b->ops->synchronize(b) != DT_OK)
		rc = DT_ERUNTIME;
	out->seconds_per_iter = rc == DT_OK ? (dt_rt_now() - start) / iters : 0;
	if (rc == DT_OK) {
		struct dt_rt_usage now = dt_rt_usage_now();
		out->usage.cpu_seconds = (now.cpu_seconds - used.cpu_seconds) / iters;
		out->usage.page_faults = (now.page_faults - used.page_faults) / iters;
	}
	out->iters = iters;
	out->peak_bytes = ip.peak;
	out->largest_bytes = ip.largest;
	out->buffer_bytes = ip.buffer_peak;
	out->memory_bytes = ip.memory_peak;
	out->comm_count = ip.comm_count / iters;
	out->comm_flight_seconds = ip.comm_flight / iters;
	out->comm_exposed_seconds = ip.comm_exposed / iters;
	if (rc == DT_OK && opt->trace_path) {
		char path[4096];
		dt_trace_rank_path(opt->trace_path, b->rank, b->world_size, path, sizeof(path));
		rc = dt_trace_write(path, m, b->rank, ip.events.data, ip.events.len, b->diag);
	}
	if (rc == DT_OK) {
		out->nstats = ip.stats.len;
		out->stats = ip.stats.data;
		ip.stats.data = NULL;
		ip.stats.len = ip.stats.cap = 0;
	}
	interp_fini(&ip);
	if (rc != DT_OK)
		dt_run_result_fini(out);
	return rc;
}

void dt_run_result_fini(struct dt_run_result *r)
{
	for (uint32_t i = 0; i < r->noutputs; i++)
		dt_rt_host_free(&r->outputs[i]);
	dt_free(r->outputs);
	dt_free(r->stats);
	memset(r, 0, sizeof(*r));
}
