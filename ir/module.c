// SPDX-License-Identifier: MIT
/* module.c: creating modules and nodes, the graph order, lookups and the
 * on-demand use lists. */
#include "ir.h"

#include <string.h>

struct dt_module *dt_module_create(const char *file)
{
	struct dt_module *m = dt_calloc(1, sizeof(*m));
	dt_arena_init(&m->arena);
	m->file = dt_arena_strndup(&m->arena, file, strlen(file));
	m->rank = -1;
	dt_topology_default(&m->topology);
	dt_intern_init(&m->strings);
	dt_intern_init(&m->ints);
	dt_vec_push(&m->nodes, (struct dt_node){0}); /* id 0: null node */
	return m;
}

void dt_topology_default(struct dt_topology *t)
{
	*t = (struct dt_topology){
		.devices_per_host = 8,
		.bandwidth = 87.7,
		.latency = 0.6,
		.inter_host_bandwidth_factor = 0.22,
		.inter_host_latency = 2.7,
		.base_latency = 6.6,
		.all_to_all_penalty = 1.0,
		.device_tflops = 400,
		.device_bandwidth = 2000,
	};
}

void dt_module_destroy(struct dt_module *m)
{
	if (!m)
		return;
	dt_intern_fini(&m->strings);
	dt_intern_fini(&m->ints);
	dt_vec_free(&m->meshes);
	dt_vec_free(&m->groups);
	dt_vec_free(&m->nodes);
	dt_vec_free(&m->args);
	dt_vec_free(&m->refs);
	dt_vec_free(&m->floats);
	dt_vec_free(&m->tensors);
	dt_vec_free(&m->shardings);
	dt_vec_free(&m->metas);
	dt_vec_free(&m->constants);
	dt_vec_free(&m->node_by_name);
	dt_arena_fini(&m->arena);
	dt_free(m);
}

/* dst's elements := src's (dst empty). */
#define COPY_VEC(dst, src)                                                 \
	do {                                                               \
		dt_vec_grow(&(dst), (src).len);                            \
		if ((src).len)                                             \
			memcpy((dst).data, (src).data,                     \
			       (src).len * sizeof(*(src).data));           \
	} while (0)

struct dt_module *dt_module_clone(const struct dt_module *m)
{
	struct dt_module *c = dt_module_create(m->file);
	c->name = m->name;
	c->view = m->view;
	c->rank = m->rank;
	c->has_topology = m->has_topology;
	c->topology = m->topology;
	c->first = m->first;
	c->last = m->last;
	dt_intern_fini(&c->strings);
	dt_intern_fini(&c->ints);
	dt_intern_copy(&c->strings, &m->strings);
	dt_intern_copy(&c->ints, &m->ints);
	c->nodes.len = 0; /* the null node comes with m's */
	COPY_VEC(c->meshes, m->meshes);
	COPY_VEC(c->groups, m->groups);
	COPY_VEC(c->nodes, m->nodes);
	COPY_VEC(c->args, m->args);
	COPY_VEC(c->refs, m->refs);
	COPY_VEC(c->floats, m->floats);
	COPY_VEC(c->tensors, m->tensors);
	COPY_VEC(c->shardings, m->shardings);
	COPY_VEC(c->metas, m->metas);
	COPY_VEC(c->constants, m->constants);
	COPY_VEC(c->node_by_name, m->node_by_name);
	/* What m's arena holds: device lists and constant bytes. */
	for (uint32_t i = 0; i < c->meshes.len; i++) {
		struct dt_mesh *mesh = &c->meshes.data[i];
		if (!mesh->devices)
			continue;
		size_t bytes = (size_t)mesh->size * sizeof(*mesh->devices);
		mesh->devices = memcpy(dt_arena_alloc(&c->arena, bytes),
				       m->meshes.data[i].devices, bytes);
	}
	for (uint32_t i = 0; i < c->constants.len; i++) {
		struct dt_constant *k = &c->constants.data[i];
		k->bytes = memcpy(dt_arena_alloc(&c->arena, (size_t)k->size),
				  k->bytes, (size_t)k->size);
	}
	return c;
}

void dt_module_swap(struct dt_module *a, struct dt_module *b)
{
	struct dt_module t = *a;
	*a = *b;
	*b = t;
}

dt_str dt_str_intern_n(struct dt_module *m, const char *s, size_t n)
{
	return (dt_str){dt_intern(&m->strings, s, n)};
}

dt_str dt_str_intern(struct dt_module *m, const char *s)
{
	return dt_str_intern_n(m, s, strlen(s));
}

const char *dt_str_get(const struct dt_module *m, dt_str s)
{
	return dt_intern_get(&m->strings, s.id, NULL);
}

const struct dt_meta *dt_node_meta(const struct dt_module *m,
				   const struct dt_node *n, const char *key)
{
	for (uint32_t i = 0; i < n->nmetas; i++) {
		const struct dt_meta *meta = &m->metas.data[n->metas + i];
		if (strcmp(dt_str_get(m, meta->key), key) == 0)
			return meta;
	}
	return NULL;
}

dt_ints dt_ints_intern(struct dt_module *m, const int64_t *v, size_t n)
{
	return (dt_ints){dt_intern(&m->ints, v, n * sizeof(int64_t))};
}

const int64_t *dt_ints_get(const struct dt_module *m, dt_ints l, int *n)
{
	size_t bytes;
	const void *p = dt_intern_get(&m->ints, l.id, &bytes);
	if (n)
		*n = (int)(bytes / sizeof(int64_t));
	return p;
}

uint32_t dt_module_add_args(struct dt_module *m, const struct dt_arg *a,
			    uint32_t n)
{
	uint32_t at = dt_vec_grow(&m->args, n);
	if (n)
		memcpy(m->args.data + at, a, n * sizeof(*a));
	return at;
}

uint32_t dt_module_add_refs(struct dt_module *m, const uint32_t *r, uint32_t n)
{
	uint32_t at = dt_vec_grow(&m->refs, n);
	if (n)
		memcpy(m->refs.data + at, r, n * sizeof(*r));
	return at;
}

uint32_t dt_module_add_floats(struct dt_module *m, const double *f, uint32_t n)
{
	uint32_t at = dt_vec_grow(&m->floats, n);
	if (n)
		memcpy(m->floats.data + at, f, n * sizeof(*f));
	return at;
}

uint32_t dt_module_new_constant(struct dt_module *m, uint64_t size,
				unsigned char **bytes)
{
	DT_REQUIRE(size <= SIZE_MAX - 16);
	*bytes = dt_arena_alloc(&m->arena, (size_t)size);
	struct dt_constant c = {*bytes, size};
	return dt_vec_push(&m->constants, c);
}

uint64_t dt_tensor_nbytes(const struct dt_module *m, const struct dt_tensor *t)
{
	int rank;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	return (uint64_t)dt_numel(shape, rank) *
	       (uint64_t)dt_dtype_size((enum dt_dtype)t->dtype);
}

void dt_node_set_tensors(struct dt_module *m, uint32_t node,
			 const struct dt_tensor *t, uint32_t n)
{
	struct dt_node *nd = dt_node_get(m, node);
	if (n <= nd->ntensors) {
		/* Reuse the slot: inference usually confirms what was read. */
		memcpy(m->tensors.data + nd->tensors, t, n * sizeof(*t));
	} else {
		uint32_t at = dt_vec_grow(&m->tensors, n);
		memcpy(m->tensors.data + at, t, n * sizeof(*t));
		nd = dt_node_get(m, node);
		nd->tensors = at;
	}
	nd->ntensors = (uint16_t)n;
}

uint32_t dt_module_add_node(struct dt_module *m, const struct dt_node_init *in)
{
	DT_REQUIRE(in->nargs <= UINT16_MAX && in->ntensors <= UINT16_MAX);
	struct dt_node n = {0};
	n.name = in->name;
	n.target = in->target;
	n.kind = (uint8_t)in->kind;
	n.line = in->line;
	switch (in->kind) {
	case DT_NODE_PLACEHOLDER:
		n.op = DT_OP_PLACEHOLDER;
		break;
	case DT_NODE_OUTPUT:
		n.op = DT_OP_OUTPUT;
		break;
	case DT_NODE_CONSTANT:
		n.op = DT_OP_GET_ATTR;
		DT_REQUIRE(in->constant < m->constants.len && !in->nargs);
		break;
	case DT_NODE_CALL:
		n.op = (uint16_t)dt_op_lookup(dt_str_get(m, in->target));
		break;
	}
	if (in->kind == DT_NODE_CONSTANT)
		n.constant = in->constant;
	else
		n.args = dt_module_add_args(m, in->args, in->nargs);
	n.nargs = (uint16_t)in->nargs;
	n.tensors = dt_vec_grow(&m->tensors, in->ntensors);
	if (in->ntensors)
		memcpy(m->tensors.data + n.tensors, in->tensors,
		       in->ntensors * sizeof(*in->tensors));
	n.ntensors = (uint16_t)in->ntensors;
	n.sharding = DT_NO_SHARDING;
	if (in->sharding)
		n.sharding = dt_vec_push(&m->shardings, *in->sharding);
	n.metas = dt_vec_grow(&m->metas, in->nmetas);
	if (in->nmetas)
		memcpy(m->metas.data + n.metas, in->metas,
		       in->nmetas * sizeof(*in->metas));
	n.nmetas = in->nmetas;
	uint32_t id = dt_vec_push(&m->nodes, n);
	if (m->node_by_name.len) {
		if (n.name.id >= m->node_by_name.len) {
			uint32_t old = m->node_by_name.len;
			dt_vec_grow(&m->node_by_name, n.name.id + 1 - old);
			memset(m->node_by_name.data + old, 0,
			       (m->node_by_name.len - old) * sizeof(uint32_t));
		}
		if (!m->node_by_name.data[n.name.id])
			m->node_by_name.data[n.name.id] = id;
	}
	return id;
}

/* ---- graph order ---- */

static void link_between(struct dt_module *m, uint32_t node, uint32_t prev,
			 uint32_t next)
{
	struct dt_node *n = dt_node_get(m, node);
	DT_REQUIRE(!(n->flags & DT_NODE_LINKED));
	n->prev = prev;
	n->next = next;
	n->flags |= DT_NODE_LINKED;
	if (prev)
		dt_node_get(m, prev)->next = node;
	else
		m->first = node;
	if (next)
		dt_node_get(m, next)->prev = node;
	else
		m->last = node;
}

void dt_graph_append(struct dt_module *m, uint32_t node)
{
	link_between(m, node, m->last, 0);
}

void dt_graph_insert_before(struct dt_module *m, uint32_t node,
			    uint32_t before)
{
	link_between(m, node, dt_node_get(m, before)->prev, before);
}

void dt_graph_remove(struct dt_module *m, uint32_t node)
{
	struct dt_node *n = dt_node_get(m, node);
	DT_REQUIRE(n->flags & DT_NODE_LINKED);
	if (n->prev)
		dt_node_get(m, n->prev)->next = n->next;
	else
		m->first = n->next;
	if (n->next)
		dt_node_get(m, n->next)->prev = n->prev;
	else
		m->last = n->prev;
	n->prev = n->next = 0;
	n->flags &= (uint8_t)~DT_NODE_LINKED;
}

uint32_t dt_graph_count(const struct dt_module *m)
{
	uint32_t count = 0;
	dt_foreach_node(m, id) count++;
	return count;
}

/* ---- lookups ---- */

uint32_t dt_module_find_node(struct dt_module *m, dt_str name)
{
	if (m->node_by_name.len == 0) {
		uint32_t n = dt_intern_count(&m->strings) + 1;
		dt_vec_grow(&m->node_by_name, n);
		memset(m->node_by_name.data, 0, n * sizeof(uint32_t));
		for (uint32_t id = 1; id < m->nodes.len; id++) {
			uint32_t s = m->nodes.data[id].name.id;
			if (!m->node_by_name.data[s])
				m->node_by_name.data[s] = id;
		}
	}
	return name.id < m->node_by_name.len ? m->node_by_name.data[name.id]
					     : 0;
}

int dt_module_find_mesh(const struct dt_module *m, dt_str name)
{
	for (uint32_t i = 0; i < m->meshes.len; i++)
		if (m->meshes.data[i].name.id == name.id)
			return (int)i;
	return -1;
}

int dt_module_find_group(const struct dt_module *m, dt_str name)
{
	for (uint32_t i = 0; i < m->groups.len; i++)
		if (m->groups.data[i].name.id == name.id)
			return (int)i;
	return -1;
}

int dt_module_find_group_by_layout(const struct dt_module *m, int mesh,
				   const uint8_t *dims, int ndims)
{
	const struct dt_mesh *me = &m->meshes.data[mesh];
	struct dt_layout want = dt_mesh_sub_layout(me, dims, ndims);
	for (uint32_t i = 0; i < m->groups.len; i++) {
		const struct dt_group *g = &m->groups.data[i];
		if (g->mesh != mesh)
			continue;
		struct dt_layout have = dt_mesh_sub_layout(me, g->dims, g->ndims);
		if (dt_layout_equal(&want, &have))
			return (int)i;
	}
	return -1;
}

/* The mesh dims of dims[0..n) that have more than one rank, as a set. */
static uint32_t dim_set(const struct dt_mesh *mesh, const uint8_t *dims,
			int n)
{
	uint32_t set = 0;
	for (int i = 0; i < n; i++)
		if (mesh->shape[dims[i]] > 1)
			set |= 1u << dims[i];
	return set;
}

int dt_module_find_group_any_order(const struct dt_module *m, int mesh,
				   const uint8_t *dims, int n)
{
	const struct dt_mesh *me = &m->meshes.data[mesh];
	uint32_t want = dim_set(me, dims, n);
	for (uint32_t i = 0; i < m->groups.len; i++) {
		const struct dt_group *g = &m->groups.data[i];
		if (g->mesh == mesh && dim_set(me, g->dims, g->ndims) == want)
			return (int)i;
	}
	return -1;
}

void dt_mesh_dims_join(const struct dt_module *m, int mesh,
		       const uint8_t *dims, int n, const char *sep, char *buf,
		       size_t size)
{
	const struct dt_mesh *me = &m->meshes.data[mesh];
	size_t at = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && at < size; i++)
		at += (size_t)snprintf(buf + at, size - at, "%s%s",
				       i ? sep : "",
				       dt_str_get(m, me->dims[dims[i]]));
}

static bool group_name_taken(const struct dt_module *m, const char *name)
{
	for (uint32_t i = 0; i < m->groups.len; i++)
		if (strcmp(dt_str_get(m, m->groups.data[i].name), name) == 0)
			return true;
	return false;
}

void dt_module_new_group_name(const struct dt_module *m, int mesh,
			      const uint8_t *dims, int n, char *buf,
			      size_t size)
{
	dt_mesh_dims_join(m, mesh, dims, n, "_", buf, size);
	size_t len = strlen(buf);
	for (int k = 2; group_name_taken(m, buf); k++)
		snprintf(buf + len, size - len, "_%d", k);
}

int dt_module_declare_group(struct dt_module *m, int mesh, const uint8_t *dims,
			    int n)
{
	char name[128];
	dt_module_new_group_name(m, mesh, dims, n, name, sizeof name);
	struct dt_group g = {
		.name = dt_str_intern(m, name),
		.mesh = (uint16_t)mesh,
		.ndims = (uint8_t)n,
		.generated = true,
	};
	memcpy(g.dims, dims, (size_t)n);
	return (int)dt_vec_push(&m->groups, g);
}

void dt_node_for_each_input(const struct dt_module *m, const struct dt_node *n,
			    void (*fn)(void *ud, uint32_t input), void *ud)
{
	for (uint32_t i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, (int)i);
		switch (a->kind) {
		case DT_ARG_NODE:
			fn(ud, a->v.node);
			break;
		case DT_ARG_NODES:
			for (uint32_t k = 0; k < a->len; k++)
				fn(ud, m->refs.data[a->v.first + k]);
			break;
		case DT_ARG_ITEMS:
			for (uint32_t k = 0; k < a->len; k++) {
				const struct dt_arg *it =
					&m->args.data[a->v.first + k];
				if (it->kind == DT_ARG_NODE)
					fn(ud, it->v.node);
			}
			break;
		default:
			break;
		}
	}
}

void dt_node_map_inputs(struct dt_module *m, uint32_t node,
			uint32_t (*fn)(void *ud, uint32_t input), void *ud)
{
	const struct dt_node *n = dt_node_get(m, node);
	for (uint32_t i = 0; i < n->nargs; i++) {
		struct dt_arg *a = &m->args.data[n->args + i];
		if (a->kind == DT_ARG_NODE) {
			a->v.node = fn(ud, a->v.node);
		} else if (a->kind == DT_ARG_NODES) {
			for (uint32_t k = 0; k < a->len; k++)
				m->refs.data[a->v.first + k] =
					fn(ud, m->refs.data[a->v.first + k]);
		} else if (a->kind == DT_ARG_ITEMS) {
			for (uint32_t k = 0; k < a->len; k++) {
				struct dt_arg *it = &m->args.data[a->v.first + k];
				if (it->kind == DT_ARG_NODE)
					it->v.node = fn(ud, it->v.node);
			}
		}
	}
}

struct replacement {
	uint32_t from, to;
};

static uint32_t replace_one(void *ud, uint32_t input)
{
	const struct replacement *r = ud;
	return input == r->from ? r->to : input;
}

void dt_module_replace_uses(struct dt_module *m, uint32_t from, uint32_t to)
{
	struct replacement r = {from, to};
	dt_foreach_node(m, id)
		dt_node_map_inputs(m, id, replace_one, &r);
}

/* ---- uses ---- */

struct uses_fill {
	struct dt_uses *u;
	uint32_t user;
	bool counting;
};

static void uses_visit(void *ud, uint32_t input)
{
	struct uses_fill *f = ud;
	if (f->counting)
		f->u->first[input + 1]++;
	else
		f->u->list[f->u->first[input]++] = f->user;
}

void dt_uses_fill(struct dt_uses *u, const struct dt_module *m)
{
	uint32_t n = m->nodes.len;
	u->first = dt_calloc(n + 1, sizeof(uint32_t));
	struct uses_fill f = {u, 0, true};
	dt_foreach_node(m, id) dt_node_for_each_input(m, dt_node_get(m, id),
						       uses_visit, &f);
	for (uint32_t i = 0; i < n; i++)
		u->first[i + 1] += u->first[i];
	u->list = dt_malloc((u->first[n] + 1) * sizeof(uint32_t));
	f.counting = false;
	dt_foreach_node(m, id)
	{
		f.user = id;
		dt_node_for_each_input(m, dt_node_get(m, id), uses_visit, &f);
	}
	/* Filling advanced first[i] to first[i+1]; shift back. */
	for (uint32_t i = n; i > 0; i--)
		u->first[i] = u->first[i - 1];
	u->first[0] = 0;
}

void dt_uses_fini(struct dt_uses *u)
{
	dt_free(u->first);
	dt_free(u->list);
	u->first = u->list = NULL;
}

void dt_node_error(struct dt_diag *d, const struct dt_module *m,
		   const struct dt_node *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	dt_diag_vreport(d, DT_ERROR, m->file, n->line, NULL, fmt, ap);
	va_end(ap);
}
