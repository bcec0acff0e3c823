// SPDX-License-Identifier: MIT
/* pool.c: the interpreter's buffer pool (design.md, Runtime). Every
 * iteration allocates the same sizes in the same order; a large buffer it
 * frees is kept and handed to the next allocation of exactly its size
 * instead of going back to the backend. That is what spares a device
 * backend a cudaMalloc and a cudaFree (which synchronizes the device) per
 * buffer per iteration, as PyTorch's caching allocator does; on the host
 * backends the page faults of memory glibc gave back are kept away for
 * every allocation, MPI's own included, by dt_host_heap_keep (world.c),
 * and the pool only saves the malloc calls. Only buffers of
 * DT_POOL_MIN_BYTES or more are kept (smaller ones stay with the
 * backend's allocator); the interpreter trims the pool so that what it
 * holds never exceeds its accounted peak. */
#include "internal.h"

#include <string.h>

struct dt_buffer *dt_pool_take(struct dt_pool *p, size_t bytes)
{
	for (uint32_t i = p->free.len; i-- > 0;) {
		struct dt_buffer *buf = p->free.data[i];
		if (buf->bytes != bytes)
			continue;
		memmove(p->free.data + i, p->free.data + i + 1,
			(p->free.len - i - 1) * sizeof *p->free.data);
		p->free.len--;
		p->bytes -= bytes;
		buf->refs = 1;
		buf->in_flight = false;
		return buf;
	}
	return NULL;
}

bool dt_pool_give(struct dt_pool *p, struct dt_buffer *buf)
{
	if (buf->refs != 1 || buf->bytes < DT_POOL_MIN_BYTES)
		return false;
	buf->refs = 0;
	p->bytes += buf->bytes;
	dt_vec_push(&p->free, buf);
	return true;
}

void dt_pool_trim(struct dt_pool *p, struct dt_backend *b, size_t keep)
{
	uint32_t n = 0;
	while (n < p->free.len && p->bytes > keep) {
		struct dt_buffer *buf = p->free.data[n++];
		p->bytes -= buf->bytes;
		buf->refs = 1;
		dt_buffer_release(b, buf);
	}
	if (n == 0)
		return;
	memmove(p->free.data, p->free.data + n,
		(p->free.len - n) * sizeof *p->free.data);
	p->free.len -= n;
}
