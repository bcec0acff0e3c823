// SPDX-License-Identifier: MIT
/* layout.c: CuTe-style layout algebra and the mesh/group rank arithmetic
 * built on it (semantics.md §1). Pure functions; no state. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

int64_t dt_layout_size(const struct dt_layout *l)
{
	int64_t n = 1;
	for (int i = 0; i < l->rank; i++)
		n *= l->size[i];
	return n;
}

int64_t dt_layout_eval(const struct dt_layout *l, int64_t index)
{
	DT_REQUIRE(index >= 0 && index < dt_layout_size(l));
	int64_t v = 0;
	for (int i = l->rank - 1; i >= 0; i--) { /* last mode fastest */
		v += index % l->size[i] * l->stride[i];
		index /= l->size[i];
	}
	return v;
}

/* A layout whose every mode has size 1 coalesces to rank 0 (size 1, value
 * 0), so all constant layouts compare equal however they were written. */
struct dt_layout dt_layout_coalesce(const struct dt_layout *l)
{
	struct dt_layout r = {0};
	for (int i = 0; i < l->rank; i++) {
		int64_t s = l->size[i], d = l->stride[i];
		if (s == 1)
			continue;
		/* The previous (slower) mode s0:d0 and this one form one mode
		 * when d0 steps exactly over all of this mode. */
		if (r.rank > 0 && r.stride[r.rank - 1] == s * d) {
			r.size[r.rank - 1] *= s;
			r.stride[r.rank - 1] = d;
			continue;
		}
		r.size[r.rank] = s;
		r.stride[r.rank] = d;
		r.rank++;
	}
	return r;
}

bool dt_layout_equal(const struct dt_layout *a, const struct dt_layout *b)
{
	struct dt_layout ca = dt_layout_coalesce(a), cb = dt_layout_coalesce(b);
	if (ca.rank != cb.rank)
		return false;
	for (int i = 0; i < ca.rank; i++)
		if (ca.size[i] != cb.size[i] || ca.stride[i] != cb.stride[i])
			return false;
	return true;
}

/* CuTe's complement: walk l's modes by increasing stride; the gap below each
 * mode and the room above the last one become the complement's modes. They
 * are stored slowest first, so its lexicographic order is row-major over
 * the unreached part (the order group instances are numbered in). */
struct dt_layout dt_layout_complement(const struct dt_layout *l,
				      int64_t total)
{
	struct dt_layout c = dt_layout_coalesce(l);
	/* Insertion sort by stride; at most DT_MAX_MODES modes. */
	for (int i = 1; i < c.rank; i++)
		for (int j = i; j > 0 && c.stride[j - 1] > c.stride[j]; j--) {
			int64_t s = c.size[j], d = c.stride[j];
			c.size[j] = c.size[j - 1];
			c.stride[j] = c.stride[j - 1];
			c.size[j - 1] = s;
			c.stride[j - 1] = d;
		}
	int64_t gap_size[DT_MAX_MODES + 1], gap_stride[DT_MAX_MODES + 1];
	int64_t cur = 1;
	for (int i = 0; i < c.rank; i++) {
		DT_REQUIRE(c.stride[i] > 0 && c.stride[i] % cur == 0);
		gap_size[i] = c.stride[i] / cur;
		gap_stride[i] = cur;
		cur = c.size[i] * c.stride[i];
	}
	DT_REQUIRE(total % cur == 0);
	gap_size[c.rank] = total / cur;
	gap_stride[c.rank] = cur;

	struct dt_layout r = {0};
	for (int i = c.rank; i >= 0; i--) {
		if (gap_size[i] == 1)
			continue;
		DT_REQUIRE(r.rank < DT_MAX_MODES);
		r.size[r.rank] = gap_size[i];
		r.stride[r.rank] = gap_stride[i];
		r.rank++;
	}
	return dt_layout_coalesce(&r);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* O((|a| + |b|) log |a|) with one temporary array of a's image. */
bool dt_layouts_overlap(const struct dt_layout *a, const struct dt_layout *b)
{
	int64_t na = dt_layout_size(a), nb = dt_layout_size(b);
	int64_t *img = dt_malloc((size_t)na * sizeof *img);
	for (int64_t i = 0; i < na; i++)
		img[i] = dt_layout_eval(a, i);
	qsort(img, (size_t)na, sizeof *img, cmp_i64);
	bool hit = false;
	for (int64_t i = 0; i < nb && !hit; i++) {
		int64_t v = dt_layout_eval(b, i);
		hit = v != 0 &&
		      bsearch(&v, img, (size_t)na, sizeof *img, cmp_i64) != NULL;
	}
	dt_free(img);
	return hit;
}

/* ------------------------------------------------------------------ */
/* Meshes and groups. */

struct dt_layout dt_mesh_layout(const struct dt_mesh *mesh)
{
	struct dt_layout l = {.rank = mesh->ndim};
	int64_t stride = 1;
	for (int i = mesh->ndim - 1; i >= 0; i--) {
		l.size[i] = mesh->shape[i];
		l.stride[i] = stride;
		stride *= mesh->shape[i];
	}
	return l;
}

struct dt_layout dt_mesh_sub_layout(const struct dt_mesh *mesh,
				    const uint8_t *dims, int ndims)
{
	struct dt_layout full = dt_mesh_layout(mesh);
	struct dt_layout l = {.rank = (uint8_t)ndims};
	DT_REQUIRE(ndims >= 0 && ndims <= mesh->ndim);
	for (int k = 0; k < ndims; k++) {
		DT_REQUIRE(dims[k] < mesh->ndim);
		l.size[k] = full.size[dims[k]];
		l.stride[k] = full.stride[dims[k]];
	}
	return l;
}

int32_t dt_mesh_device(const struct dt_mesh *mesh, int64_t pos)
{
	DT_REQUIRE(pos >= 0 && pos < mesh->size);
	return mesh->devices ? mesh->devices[pos] : (int32_t)pos;
}

int64_t dt_mesh_position(const struct dt_mesh *mesh, int32_t rank)
{
	if (!mesh->devices)
		return rank >= 0 && rank < mesh->size ? rank : -1;
	for (int64_t i = 0; i < mesh->size; i++)
		if (mesh->devices[i] == rank)
			return i;
	return -1;
}

void dt_mesh_coords(const struct dt_mesh *mesh, int64_t pos, int64_t *coord)
{
	DT_REQUIRE(pos >= 0 && pos < mesh->size);
	for (int i = mesh->ndim - 1; i >= 0; i--) {
		coord[i] = pos % mesh->shape[i];
		pos /= mesh->shape[i];
	}
}

/* A name wins over an index, so a dim literally named "1" is found by
 * name. Without `strings` only indices are accepted. */
int dt_mesh_find_dim(const struct dt_mesh *mesh, const char *name,
		     const struct dt_intern *strings)
{
	size_t len = strlen(name);
	for (int i = 0; strings && i < mesh->ndim; i++) {
		size_t n;
		const char *s = dt_intern_get(strings, mesh->dims[i].id, &n);
		if (n == len && memcmp(s, name, n) == 0)
			return i;
	}
	if (len == 0 || len > 3)
		return -1;
	int v = 0;
	for (size_t k = 0; k < len; k++) {
		if (name[k] < '0' || name[k] > '9')
			return -1;
		v = v * 10 + (name[k] - '0');
	}
	return v < mesh->ndim ? v : -1;
}

int64_t dt_group_size(const struct dt_mesh *mesh, const uint8_t *dims,
		      int ndims)
{
	int64_t n = 1;
	for (int k = 0; k < ndims; k++) {
		DT_REQUIRE(dims[k] < mesh->ndim);
		n *= mesh->shape[dims[k]];
	}
	return n;
}

int64_t dt_group_instance_count(const struct dt_mesh *mesh,
				const uint8_t *dims, int ndims)
{
	return mesh->size / dt_group_size(mesh, dims, ndims);
}

/* Instance i starts at the complement's value at i; its members are that
 * offset plus the group layout's values, in group order. */
void dt_group_ranks(const struct dt_mesh *mesh, const uint8_t *dims,
		    int ndims, int64_t instance, int32_t *out)
{
	struct dt_layout g = dt_mesh_sub_layout(mesh, dims, ndims);
	struct dt_layout c = dt_layout_complement(&g, mesh->size);
	int64_t base = dt_layout_eval(&c, instance);
	int64_t n = dt_layout_size(&g);
	for (int64_t j = 0; j < n; j++)
		out[j] = dt_mesh_device(mesh, base + dt_layout_eval(&g, j));
}

/* Computed from coordinates rather than the complement, so that tests
 * checking it against dt_group_ranks cross-check the two derivations. */
bool dt_group_locate(const struct dt_mesh *mesh, const uint8_t *dims,
		     int ndims, int32_t rank, int64_t *instance, int64_t *pos)
{
	int64_t p = dt_mesh_position(mesh, rank);
	if (p < 0)
		return false;
	int64_t coord[DT_MAX_MESH_DIMS];
	bool in_group[DT_MAX_MESH_DIMS] = {false};
	dt_mesh_coords(mesh, p, coord);
	*pos = 0;
	for (int k = 0; k < ndims; k++) {
		in_group[dims[k]] = true;
		*pos = *pos * mesh->shape[dims[k]] + coord[dims[k]];
	}
	*instance = 0;
	for (int i = 0; i < mesh->ndim; i++)
		if (!in_group[i])
			*instance = *instance * mesh->shape[i] + coord[i];
	return true;
}
