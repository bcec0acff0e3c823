// SPDX-License-Identifier: MIT
/* interp_buffers.c: the interpreter's buffers: allocation through the
 * pool (pool.c) with the accounting of values and collective buffers
 * (peaks, dt_interpret_peak's memory plan), the inputs materialized once,
 * and the glue of cat placement (place.c): which producers write into the
 * cat reading them, the buffer ("slab") such a cat writes into, and the
 * cat's own step copying the inputs that were not placed. */
#include "interp_internal.h"

/* `bytes` more of values or of collective buffers (in_flight), at n. */
void dt_interp_account(struct dt_interp *ip, const struct dt_node *n,
		       size_t bytes, bool in_flight)
{
	*(in_flight ? &ip->buffers : &ip->live) += bytes;
	if (!in_flight && bytes > ip->largest)
		ip->largest = bytes;
	if (ip->live > ip->peak)
		ip->peak = ip->live;
	if (ip->buffers > ip->buffer_peak)
		ip->buffer_peak = ip->buffers;
	if (ip->live + ip->buffers > ip->memory_peak) {
		ip->memory_peak = ip->live + ip->buffers;
		ip->memory_node = (uint32_t)(n - ip->m->nodes.data);
	}
}

struct dt_buffer *dt_interp_buffer_new(struct dt_interp *ip,
				       const struct dt_node *n, size_t bytes,
				       bool in_flight)
{
	struct dt_buffer *buf = dt_pool_take(&ip->pool, bytes);
	if (!buf) {
		size_t held = ip->live + ip->buffers + bytes;
		dt_pool_trim(&ip->pool, ip->b,
			     ip->memory_peak > held ? ip->memory_peak - held : 0);
		buf = dt_buffer_create(ip->b, bytes);
	}
	if (!buf) {
		dt_rt_fail(ip->b, ip->m, n, "cannot allocate %zu bytes", bytes);
		return NULL;
	}
	buf->in_flight = in_flight;
	dt_interp_account(ip, n, bytes, in_flight);
	return buf;
}

void dt_interp_buffer_drop(struct dt_interp *ip, struct dt_buffer *buf)
{
	if (!buf)
		return;
	if (buf->refs == 1) {
		*(buf->in_flight ? &ip->buffers : &ip->live) -= buf->bytes;
		if (dt_pool_give(&ip->pool, buf))
			return;
	}
	dt_buffer_release(ip->b, buf);
}

void dt_interp_values_drop(struct dt_interp *ip, uint32_t id)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	for (uint32_t r = 0; r < n->ntensors; r++) {
		dt_interp_buffer_drop(ip, ip->values[id][r].buf);
		ip->values[id][r].buf = NULL;
	}
}

/* Producers that write into the cat reading them (place.c): the cats
 * involved become DT_STEP_CAT_SLAB. */
void dt_interp_plan_places(struct dt_interp *ip)
{
	uint32_t nn = ip->m->nodes.len;
	uint8_t *kind = dt_calloc(nn, 1);
	ip->host = dt_calloc(nn, sizeof(uint32_t));
	ip->slot = dt_calloc(nn, sizeof(int64_t));
	ip->slab = dt_calloc(nn, sizeof(*ip->slab));
	ip->kept = dt_calloc(nn, sizeof(*ip->kept));
	ip->slab_at = dt_calloc(nn, sizeof(int64_t));
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p];
		kind[id] = ip->step[id] == DT_STEP_KERNEL ? DT_PLACE_KERNEL
			   : ip->step[id] == DT_STEP_VIEW ? DT_PLACE_VIEW
			   : ip->step[id] == DT_STEP_INPUT ? DT_PLACE_INPUT
							: DT_PLACE_OTHER;
	}
	dt_place_plan(ip->m, ip->order, ip->count, kind, ip->host, ip->slot);
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p];
		/* an input goes into a cat kept for the run: not one that
		 * is itself a run of another cat (written every iteration) */
		if (kind[id] == DT_PLACE_INPUT && ip->host[id] && ip->host[ip->host[id]])
			ip->host[id] = 0;
	}
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p];
		if (ip->host[id])
			ip->step[ip->host[id]] = DT_STEP_CAT_SLAB;
	}
	dt_free(kind);
}

/* The buffer cat `c` (node n) writes into, allocated by its first placed
 * producer (or by itself): its own, or its slice of its host cat's.
 * ip->slab[c] holds a reference until c runs. */
static struct dt_buffer *slab_of(struct dt_interp *ip, uint32_t c)
{
	if (ip->slab[c])
		return ip->slab[c];
	if (ip->kept[c]) {
		ip->kept[c]->refs++;
		ip->slab_at[c] = 0;
		return ip->slab[c] = ip->kept[c];
	}
	const struct dt_node *n = dt_node_get(ip->m, c);
	uint32_t host = ip->host[c];
	struct dt_buffer *buf;
	if (host) {
		if (!(buf = slab_of(ip, host)))
			return NULL;
		buf->refs++;
		ip->slab_at[c] = ip->slab_at[host] + ip->slot[c];
	} else {
		struct dt_rt_tensor t;
		dt_rt_from_meta(&t, ip->m, dt_node_tensor(ip->m, n, 0));
		if (!(buf = dt_interp_buffer_new(ip, n, dt_rt_storage_bytes(&t), false)))
			return NULL;
		ip->slab_at[c] = 0;
	}
	return ip->slab[c] = buf;
}

/* Input `id`, materialized in a buffer of its own (not accounted), moved
 * into its run of the buffer its host cat keeps for the run (allocated by
 * the first such input). */
int dt_interp_place_input(struct dt_interp *ip, uint32_t id)
{
	uint32_t c = ip->host[id];
	const struct dt_node *cn = dt_node_get(ip->m, c);
	if (!ip->kept[c]) {
		struct dt_rt_tensor t;
		dt_rt_from_meta(&t, ip->m, dt_node_tensor(ip->m, cn, 0));
		if (!(ip->kept[c] = dt_interp_buffer_new(ip, cn, dt_rt_storage_bytes(&t),
							  false)))
			return DT_ERUNTIME;
	}
	struct dt_rt_tensor run = ip->inputs[id];
	run.buf = ip->kept[c];
	run.offset = ip->slot[id];
	if (ip->b->ops->copy(ip->b, &run, &ip->inputs[id]) != DT_OK)
		return dt_rt_fail(ip->b, ip->m, dt_node_get(ip->m, id),
				  "cannot copy the input into its cat's buffer");
	dt_buffer_release(ip->b, ip->inputs[id].buf);
	run.buf->refs++;
	ip->inputs[id] = run;
	return DT_OK;
}

/* Result 0 of `id` in its slice of its host cat's buffer (meta offset 0:
 * place.c places dense results only). */
int dt_interp_place_result(struct dt_interp *ip, uint32_t id)
{
	struct dt_rt_tensor *t = &ip->values[id][0];
	dt_rt_from_meta(t, ip->m, dt_node_tensor(ip->m, dt_node_get(ip->m, id), 0));
	uint32_t host = ip->host[id];
	if (!(t->buf = slab_of(ip, host)))
		return DT_ERUNTIME;
	t->buf->refs++;
	t->offset = ip->slab_at[host] + ip->slot[id];
	return DT_OK;
}

/* A cat some inputs were written into: its buffer (taken from slab[]),
 * the other inputs copied into their runs. */
int dt_interp_run_cat_slab(struct dt_interp *ip, uint32_t id)
{
	const struct dt_node *n = dt_node_get(ip->m, id);
	struct dt_rt_tensor *y = &ip->values[id][0];
	if (ip->host[id]) {
		if (dt_interp_place_result(ip, id) != DT_OK)
			return DT_ERUNTIME;
	} else {
		dt_rt_from_meta(y, ip->m, dt_node_tensor(ip->m, n, 0));
		if (!(y->buf = slab_of(ip, id)))
			return DT_ERUNTIME;
		y->buf->refs++;
	}
	dt_interp_buffer_drop(ip, ip->slab[id]);
	ip->slab[id] = NULL;
	const struct dt_arg *list = ip->args[id].arg[0];
	int64_t at = y->offset;
	for (uint32_t k = 0; k < list->len; k++) {
		const struct dt_rt_tensor *x = &ip->values[ip->m->refs.data[list->v.first + k]][0];
		int64_t len = dt_rt_numel(x);
		if (x->buf != y->buf || x->offset != at) {
			struct dt_rt_tensor run = *x;
			run.buf = y->buf;
			run.offset = at;
			run.dtype = y->dtype;
			dt_contiguous_strides(run.shape, run.rank, run.stride);
			if (ip->b->ops->copy(ip->b, &run, x) != DT_OK)
				return dt_rt_fail(ip->b, ip->m, n, "cannot copy input %u into its run", k);
		}
		at += len;
	}
	return DT_OK;
}

int dt_interp_materialize(struct dt_interp *ip)
{
	for (uint32_t p = 0; p < ip->count; p++) {
		uint32_t id = ip->order[p];
		if (ip->step[id] != DT_STEP_INPUT)
			continue;
		int rank = ip->m->view == DT_VIEW_GLOBAL ? 0 : ip->b->rank;
		const struct dt_node *n = dt_node_get(ip->m, id);
		if (n->kind == DT_NODE_CONSTANT
			    ? dt_materialize_constant(ip->m, n, ip->b, &ip->inputs[id]) != DT_OK
			    : dt_materialize_input(ip->m, n, rank, ip->opt->seed,
						   ip->b, &ip->inputs[id]) != DT_OK)
			return DT_ERUNTIME;
		if (ip->host[id]) {
			if (dt_interp_place_input(ip, id) != DT_OK)
				return DT_ERUNTIME;
		} else {
			dt_interp_account(ip, n, ip->inputs[id].buf->bytes, false);
		}
	}
	return DT_OK;
}
