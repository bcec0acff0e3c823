// SPDX-License-Identifier: MIT
/* inputs.c: deterministic placeholder values. The global tensor of a
 * placeholder is a pure function of (seed, name, global element index), so
 * every rank builds its own shard without communication:
 *
 *   mix(x)  = splitmix64's finaliser of x + 0x9e3779b97f4a7c15
 *   fnv(s)  = 64-bit FNV-1a of the name's bytes
 *   h       = mix(mix(mix(seed) ^ fnv(name)) ^ index)
 *   float dtypes: (h mod 17 - 8) / 8    (multiples of 1/8 in [-1, 1],
 *                                         exact in bfloat16 and float16)
 *   integers:     h mod input_max       (meta "dtopt.input_max", default 2)
 *   bool:         h & 1
 *
 * `index` is the row-major index of the element in the GLOBAL shape. A
 * rank holds, per tensor dim, the global indices dt_shard_indices gives
 * its mesh coordinates (S, uneven S, _S and shard orders alike). Partial
 * mesh dims then split the value v, one mesh dim after another in mesh
 * order, with terms t_j = the formula's value for name "NAME#m<dim>.<j>"
 * (j < n, the mesh dim's size) at the same index:
 *   P(sum):  rank j < n-1 holds t_j, rank n-1 holds v - sum t_j
 *   P(avg):  the same with n*v in place of v
 *   P(max):  rank (index mod n) holds v, the others v - d, d = (|t_j| or
 *            1/8 for floats, 1 + t_j for integers) > 0
 *   P(min):  mirrored (v + d)
 *   P(product): rank (index mod n) holds v, the others 1
 * so reducing over those mesh dims gives v exactly for these small values.
 * A placeholder of a local-view graph without <sharding> is per rank: the
 * formula with name "NAME@RANK" over its local indices. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t dt_rt_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t dt_rt_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t input_hash(uint64_t seed, uint64_t name_hash, int64_t index)
{
	return dt_rt_mix64(dt_rt_mix64(dt_rt_mix64(seed) ^ name_hash) ^ (uint64_t)index);
}

static double value_of(uint64_t h, enum dt_dtype dtype, int64_t input_max)
{
	if (dt_dtype_is_float(dtype))
		return (double)((int)(h % 17) - 8) / 8;
	if (dtype == DT_BOOL)
		return (double)(h & 1);
	return input_max > 0 ? (double)(h % (uint64_t)input_max) : 0;
}

double dt_input_value(uint64_t seed, const char *name, int64_t index,
		      enum dt_dtype dtype, int64_t input_max)
{
	return value_of(input_hash(seed, dt_rt_fnv1a(name), index), dtype, input_max);
}

int64_t dt_input_max(const struct dt_module *m, const struct dt_node *n)
{
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *mt = &m->metas.data[n->metas + i];
		if (strcmp(dt_str_get(m, mt->key), "dtopt.input_max") != 0)
			continue;
		char *end;
		long long v = strtoll(dt_str_get(m, mt->value), &end, 10);
		if (*end == 0 && v > 0)
			return v;
	}
	return 2;
}

/* The value of partial term j at `index`: the formula for the name whose
 * FNV hash is names[j]. */
static double term(uint64_t seed, const uint64_t *names, int64_t j,
		   int64_t index, enum dt_dtype dtype, int64_t input_max)
{
	return value_of(input_hash(seed, names[j], index), dtype, input_max);
}

/* The part rank `c` of `n` holds of v so that reducing with `op` over
 * the mesh dim gives v back. */
static double partial_part(uint64_t seed, const uint64_t *names, enum dt_reduce_op op,
			   int64_t n, int64_t c, int64_t index, double v,
			   enum dt_dtype dtype, int64_t input_max)
{
	bool is_float = dt_dtype_is_float(dtype);
	double t = term(seed, names, c, index, dtype, input_max);
	double d = is_float ? (t != 0 ? (t < 0 ? -t : t) : 0.125) : 1 + t;
	switch (op) {
	case DT_REDUCE_SUM:
	case DT_REDUCE_AVG: {
		if (c < n - 1)
			return t;
		double rest = op == DT_REDUCE_AVG ? (double)n * v : v;
		for (int64_t j = 0; j < n - 1; j++)
			rest -= term(seed, names, j, index, dtype, input_max);
		return rest;
	}
	case DT_REDUCE_MAX:
		return c == index % n ? v : v - d;
	case DT_REDUCE_MIN:
		return c == index % n ? v : v + d;
	case DT_REDUCE_PRODUCT:
		return c == index % n ? v : 1;
	default:
		dt_die(__FILE__, __LINE__, "unknown reduce op %d", (int)op);
	}
}

/* Where each local element comes from: per tensor dim the global indices
 * the rank holds, the global shape's row-major strides, and the Partial
 * mesh dims to split over. */
struct source {
	int rank;
	int64_t *index[DT_MAX_RANK];
	int64_t gstride[DT_MAX_RANK];
	int npartial;
	uint8_t pop[DT_MAX_MESH_DIMS];
	int64_t psize[DT_MAX_MESH_DIMS], pcoord[DT_MAX_MESH_DIMS];
	uint64_t *names[DT_MAX_MESH_DIMS]; /* FNV of "NAME#m<dim>.<j>" */
	char name[512];
};

static void source_fini(struct source *s)
{
	for (int d = 0; d < s->rank; d++)
		free(s->index[d]);
	for (int k = 0; k < s->npartial; k++)
		dt_free(s->names[k]);
}

/* n + 1 indices (malloc: a huge dim is a reported failure, not an
 * abort), or NULL after reporting. */
static int64_t *new_indices(struct dt_backend *b, const struct dt_module *m,
			    const struct dt_node *n, int64_t count)
{
	int64_t *v = (uint64_t)count < SIZE_MAX / sizeof(int64_t) - 1
			     ? malloc((size_t)(count + 1) * sizeof(int64_t))
			     : NULL;
	if (!v)
		dt_rt_fail(b, m, n, "out of memory for the input's %lld "
			   "indices", (long long)count);
	return v;
}

/* Identity indices over `shape` (global view, or a per-rank value). */
static int source_identity(struct source *s, struct dt_backend *b,
			   const struct dt_module *m, const struct dt_node *n,
			   const struct dt_rt_tensor *t)
{
	dt_contiguous_strides(t->shape, t->rank, s->gstride);
	for (int d = 0; d < t->rank; d++) {
		if (!(s->index[d] = new_indices(b, m, n, t->shape[d])))
			return DT_ERUNTIME;
		for (int64_t i = 0; i < t->shape[d]; i++)
			s->index[d][i] = i;
	}
	return DT_OK;
}

/* The rank's shard of the global tensor of a local-view placeholder. */
static int source_sharded(struct source *s, struct dt_backend *b,
			  const struct dt_module *m, const struct dt_node *n,
			  const struct dt_sharding *sh, int rank,
			  const struct dt_rt_tensor *t)
{
	const struct dt_mesh *mesh = &m->meshes.data[sh->mesh];
	const struct dt_placements *pl = &sh->placements;
	int64_t pos = dt_mesh_position(mesh, rank), coord[DT_MAX_MESH_DIMS];
	if (pos < 0)
		return dt_rt_fail(b, m, n, "rank %d is not in mesh '%s'", rank,
				  dt_str_get(m, mesh->name));
	dt_mesh_coords(mesh, pos, coord);
	int64_t gshape[DT_MAX_RANK];
	int grank = t->rank;
	if (sh->has_global_shape) {
		const int64_t *g = dt_ints_get(m, sh->global_shape, &grank);
		if (grank != t->rank)
			return dt_rt_fail(b, m, n, "global-shape has %d dims, the tensor %d",
					  grank, t->rank);
		memcpy(gshape, g, (size_t)grank * sizeof(int64_t));
	} else { /* even shards: the local size times the shard count */
		for (int d = 0; d < t->rank; d++)
			gshape[d] = t->shape[d];
		for (int md = 0; md < pl->ndim; md++)
			if (pl->p[md].kind == DT_PL_SHARD || pl->p[md].kind == DT_PL_STRIDED_SHARD)
				if (pl->p[md].dim >= 0 && pl->p[md].dim < t->rank)
					gshape[pl->p[md].dim] *= mesh->shape[md];
	}
	dt_contiguous_strides(gshape, grank, s->gstride);
	int64_t padded[DT_MAX_RANK];
	dt_shard_shape(mesh, pl, -1, gshape, grank, padded);
	for (int d = 0; d < t->rank; d++) {
		int64_t got, size = gshape[d] > t->shape[d] ? gshape[d] : t->shape[d];
		if (!(s->index[d] = new_indices(b, m, n, size)))
			return DT_ERUNTIME;
		s->rank = d + 1;
		dt_shard_indices(pl, mesh->shape, coord, d, gshape[d], s->index[d], &got);
		/* An SPMD graph pads uneven shards to the largest (semantics
		 * §7): the padding (index -1) is zero. */
		bool pad = m->rank < 0 && got < t->shape[d] &&
			   t->shape[d] == padded[d];
		if (got != t->shape[d] && !pad)
			return dt_rt_fail(b, m, n, "dim %d holds %lld elements, but the shard of global size %lld on this rank has %lld",
					  d, (long long)t->shape[d], (long long)gshape[d],
					  (long long)got);
		for (int64_t i = got; i < t->shape[d]; i++)
			s->index[d][i] = -1;
	}
	for (int md = 0; md < pl->ndim; md++) {
		if (pl->p[md].kind != DT_PL_PARTIAL)
			continue;
		if (t->dtype == DT_BOOL)
			return dt_rt_fail(b, m, n, "a bool input cannot be Partial");
		int k = s->npartial++;
		s->pop[k] = pl->p[md].reduce;
		s->psize[k] = mesh->shape[md];
		s->pcoord[k] = coord[md];
		s->names[k] = dt_malloc((size_t)mesh->shape[md] * sizeof(uint64_t));
		for (int64_t j = 0; j < mesh->shape[md]; j++) {
			char name[600];
			snprintf(name, sizeof(name), "%s#m%d.%lld", s->name, md, (long long)j);
			s->names[k][j] = dt_rt_fnv1a(name);
		}
	}
	return DT_OK;
}

int dt_materialize_input(const struct dt_module *m, const struct dt_node *n,
			 int rank, uint64_t seed, struct dt_backend *b,
			 struct dt_rt_tensor *out)
{
	if (n->ntensors != 1)
		return dt_rt_fail(b, m, n, "a placeholder needs exactly one <tensor>");
	dt_rt_from_meta(out, m, dt_node_tensor(m, n, 0));
	enum dt_dtype dtype = (enum dt_dtype)out->dtype;
	int64_t input_max = dt_input_max(m, n);
	const struct dt_sharding *sh = dt_node_sharding(m, n);
	struct source s;
	memset(&s, 0, sizeof(s));
	int status = DT_OK;
	if (m->view == DT_VIEW_GLOBAL || !sh) {
		if (m->view == DT_VIEW_GLOBAL)
			snprintf(s.name, sizeof(s.name), "%s", dt_str_get(m, n->name));
		else
			snprintf(s.name, sizeof(s.name), "%s@%d", dt_str_get(m, n->name), rank);
		s.rank = out->rank;
		status = source_identity(&s, b, m, n, out);
	} else {
		snprintf(s.name, sizeof(s.name), "%s", dt_str_get(m, n->name));
		status = source_sharded(&s, b, m, n, sh, rank, out);
	}
	size_t bytes = dt_rt_storage_bytes(out);
	if (status == DT_OK && !(out->buf = dt_buffer_create(b, bytes)))
		status = dt_rt_fail(b, m, n, "cannot allocate %zu bytes", bytes);
	if (status != DT_OK) {
		source_fini(&s);
		return status;
	}
	unsigned char *host = calloc(bytes ? bytes : 1, 1);
	if (!host) {
		dt_buffer_release(b, out->buf);
		out->buf = NULL;
		source_fini(&s);
		return dt_rt_fail(b, m, n, "out of memory for %zu bytes of "
				  "input values", bytes);
	}
	uint64_t name_hash = dt_rt_fnv1a(s.name);
	int esize = dt_dtype_size(dtype);
	dt_store_fn store = dt_storer(dtype);
	int64_t idx[DT_MAX_RANK] = {0}, count = dt_rt_numel(out);
	for (int64_t i = 0; i < count; i++) {
		int64_t g = 0, off = out->offset;
		bool padding = false;
		for (int d = 0; d < out->rank; d++) {
			padding = padding || s.index[d][idx[d]] < 0;
			g += s.index[d][idx[d]] * s.gstride[d];
			off += idx[d] * out->stride[d];
		}
		double v = padding ? 0 : value_of(input_hash(seed, name_hash, g), dtype, input_max);
		for (int k = 0; k < s.npartial && !padding; k++)
			v = partial_part(seed, s.names[k], (enum dt_reduce_op)s.pop[k],
					 s.psize[k], s.pcoord[k], g, v, dtype, input_max);
		store(host + off * esize, v);
		for (int d = out->rank - 1; d >= 0 && ++idx[d] == out->shape[d]; d--)
			idx[d] = 0;
	}
	source_fini(&s);
	if (bytes && b->ops->upload(b, out->buf->data, host, bytes) != DT_OK)
		status = dt_rt_fail(b, m, n, "cannot upload the input to the backend");
	free(host);
	if (status != DT_OK) {
		dt_buffer_release(b, out->buf);
		out->buf = NULL;
	}
	return status;
}

int dt_materialize_constant(const struct dt_module *m, const struct dt_node *n,
			    struct dt_backend *b, struct dt_rt_tensor *out)
{
	dt_rt_from_meta(out, m, dt_node_tensor(m, n, 0));
	const struct dt_constant *c = dt_node_constant(m, n);
	size_t bytes = dt_rt_storage_bytes(out);
	if (bytes != c->size)
		return dt_rt_fail(b, m, n, "the constant has %llu data bytes, "
				  "its tensor needs %zu",
				  (unsigned long long)c->size, bytes);
	if (!(out->buf = dt_buffer_create(b, bytes)))
		return dt_rt_fail(b, m, n, "cannot allocate %zu bytes", bytes);
	if (bytes && b->ops->upload(b, out->buf->data, c->bytes, bytes) != DT_OK) {
		dt_buffer_release(b, out->buf);
		out->buf = NULL;
		return dt_rt_fail(b, m, n, "cannot upload the constant to the "
				  "backend");
	}
	return DT_OK;
}
