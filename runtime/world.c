// SPDX-License-Identifier: MIT
/* world.c: what every multi-rank backend checks before creating its
 * communicators: that the ranks' graphs agree on meshes and groups, and
 * the world size the graph needs; the memory a host offers and the
 * bounded polling every wait for peers goes through. */
#include "internal.h"

#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static uint64_t fnv(uint64_t h, int64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (uint64_t)(v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A hash of what communicator creation depends on: mesh shapes and device
 * lists, group meshes and ordered dims (not names). */
uint64_t dt_topology_fingerprint(const struct dt_module *m)
{
	uint64_t h = fnv(0xcbf29ce484222325ull, m->meshes.len);
	for (uint32_t i = 0; i < m->meshes.len; i++) {
		const struct dt_mesh *mesh = &m->meshes.data[i];
		h = fnv(h, mesh->ndim);
		for (int k = 0; k < mesh->ndim; k++)
			h = fnv(h, mesh->shape[k]);
		for (int64_t k = 0; k < mesh->size; k++)
			h = fnv(h, dt_mesh_device(mesh, k));
	}
	h = fnv(h, m->groups.len);
	for (uint32_t i = 0; i < m->groups.len; i++) {
		const struct dt_group *g = &m->groups.data[i];
		h = fnv(h, g->mesh);
		for (int k = 0; k < g->ndims; k++)
			h = fnv(h, g->dims[k]);
		h = fnv(h, -1);
	}
	return h;
}

/* The world size the module needs: one more than the largest global rank
 * any mesh names (its `devices`, else 0..size-1), so with one mesh and no
 * device list exactly the mesh size. Several meshes (e.g. sub-meshes of a
 * pipeline stage) share the world; a rank outside a mesh simply has no
 * communicator for that mesh's groups. *which is the mesh that sets it;
 * 0 and NULL when there is no mesh. */
int64_t dt_required_world(const struct dt_module *m,
			  const struct dt_mesh **which)
{
	int64_t need = 0;
	*which = NULL;
	for (uint32_t i = 0; i < m->meshes.len; i++) {
		const struct dt_mesh *mesh = &m->meshes.data[i];
		for (int64_t k = 0; k < mesh->size; k++)
			if (dt_mesh_device(mesh, k) + 1 > need) {
				need = dt_mesh_device(mesh, k) + 1;
				*which = mesh;
			}
	}
	return need;
}

bool dt_rt_poll(bool (*test)(void *ud), void *ud, double timeout, double spin)
{
	double start = dt_rt_now();
	for (;;) {
		if (test(ud))
			return true;
		double waited = dt_rt_now() - start;
		if (timeout > 0 && waited >= timeout)
			return false;
		if (waited < spin) { /* back at once when peers are quick */
			sched_yield();
			continue;
		}
		struct timespec nap = {0, waited < DT_RT_SPIN ? 50000 : 1000000};
		nanosleep(&nap, NULL);
	}
}

/* The number after `key` in the text file `path` (in kB when kb), or
 * UINT64_MAX when the file or key is absent or says "max". */
static uint64_t read_number(const char *path, const char *key, bool kb)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return UINT64_MAX;
	char line[256];
	uint64_t v = UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(key);
		unsigned long long x;
		if (strncmp(line, key, n) == 0 &&
		    sscanf(line + n, " %llu", &x) == 1) {
			v = kb ? (uint64_t)x * 1024 : (uint64_t)x;
			break;
		}
	}
	fclose(f);
	return v;
}

size_t dt_host_memory(void)
{
	uint64_t avail = read_number("/proc/meminfo", "MemAvailable:", true);
	/* a container's limit (cgroup v2, else v1) less what it uses */
	uint64_t limit = read_number("/sys/fs/cgroup/memory.max", "", false);
	uint64_t used = read_number("/sys/fs/cgroup/memory.current", "", false);
	if (limit == UINT64_MAX) {
		limit = read_number(
		    "/sys/fs/cgroup/memory/memory.limit_in_bytes", "", false);
		used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes",
				   "", false);
	}
	if (limit != UINT64_MAX && used != UINT64_MAX) {
		uint64_t left = limit > used ? limit - used : 0;
		avail = left < avail ? left : avail;
	}
	if (avail == UINT64_MAX || avail > SIZE_MAX)
		return 0;
	return (size_t)avail;
}

/* glibc returns a free()d block at the heap's top to the kernel once more
 * than 128 KiB (after a large free, twice the largest freed block) lies
 * there, and serves blocks above a dynamic threshold (at most 32 MiB) by
 * mmap: an interpreter freeing and allocating the same buffers every
 * iteration then faults every page of them in again (a third of a rank's
 * CPU on a bucketed all_reduce of 2 MiB, a quarter on 16 MiB tensors whose
 * kernels' float64 scratch passes 32 MiB). No trimming and no mmap keep
 * them all in the heap, reused. */
void dt_host_heap_keep(void)
{
#ifdef __GLIBC__
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

const char *dt_collective_name(enum dt_collective_kind k)
{
	static const char *const names[] = {
		[DT_COLL_ALL_GATHER] = "all_gather",
		[DT_COLL_REDUCE_SCATTER] = "reduce_scatter",
		[DT_COLL_ALL_REDUCE] = "all_reduce",
		[DT_COLL_ALL_TO_ALL] = "all_to_all",
		[DT_COLL_ALL_PERMUTE] = "all_permute",
		[DT_COLL_ALL_TO_ALL_V] = "all_to_all_v",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

int dt_rt_timeout_fail(struct dt_backend *b, const struct dt_module *m,
		       const struct dt_node *n, enum dt_collective_kind kind,
		       int group)
{
	const struct dt_group *g = &m->groups.data[group];
	return dt_rt_fail(b, m, n, "rank %d waited %g s for its %s over group "
			  "'%s' to complete: a peer rank stopped, hangs or "
			  "issues other collectives (--timeout=%g; 0 waits "
			  "forever)", b->rank, b->timeout,
			  dt_collective_name(kind), dt_str_get(m, g->name),
			  b->timeout);
}
