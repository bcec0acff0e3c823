// SPDX-License-Identifier: MIT
/* ops_test.h: helpers shared by test_ops.c and test_shapes.c: building a
 * small module node by node, running dt_infer_node on it and checking the
 * inferred metadata and the captured diagnostics. */
#ifndef DTOPT_OPS_TEST_H
#define DTOPT_OPS_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "ir.h"

/* A list literal and its length: L(4, 8) -> (const int64_t[]){4, 8}, 2. */
#define L(...)                                                             \
	(const int64_t[]){__VA_ARGS__},                                    \
		(int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* A module under test plus the diagnostics it produced. */
struct tg {
	struct dt_module *m;
	struct dt_diag d;
	char last[1024]; /* the last message */
	unsigned count;
};

static inline void tg_emit(void *ud, const struct dt_diag_entry *e)
{
	struct tg *g = ud;
	snprintf(g->last, sizeof(g->last), "%s", e->message);
	g->count++;
}

static inline void tg_init(struct tg *g)
{
	memset(g, 0, sizeof(*g));
	g->m = dt_module_create("t.xml");
	dt_diag_init(&g->d);
	g->d.emit = tg_emit;
	g->d.ud = g;
}

static inline void tg_fini(struct tg *g)
{
	dt_module_destroy(g->m);
}

static inline struct dt_tensor tg_tensor(struct tg *g, enum dt_dtype dt,
					 const int64_t *shape, int rank,
					 const int64_t *stride, int nstride,
					 int64_t offset)
{
	struct dt_tensor t = {0};
	assert_int_equal(rank, nstride);
	t.dtype = (uint8_t)dt;
	t.shape = dt_ints_intern(g->m, shape, (size_t)rank);
	t.stride = dt_ints_intern(g->m, stride, (size_t)nstride);
	t.offset = offset;
	return t;
}

/* A placeholder with one tensor (shape and stride given with L()). */
static inline uint32_t tg_input(struct tg *g, const char *name, enum dt_dtype dt,
				const int64_t *shape, int rank,
				const int64_t *stride, int nstride, int64_t offset)
{
	struct dt_tensor t = tg_tensor(g, dt, shape, rank, stride, nstride, offset);
	struct dt_node_init in = {0};
	in.kind = DT_NODE_PLACEHOLDER;
	in.name = dt_str_intern(g->m, name);
	in.line = 1;
	in.tensors = &t;
	in.ntensors = 1;
	uint32_t id = dt_module_add_node(g->m, &in);
	dt_graph_append(g->m, id);
	return id;
}

/* A 0-d placeholder. */
static inline uint32_t tg_scalar(struct tg *g, const char *name, enum dt_dtype dt)
{
	struct dt_tensor t = {0};
	t.dtype = (uint8_t)dt;
	struct dt_node_init in = {0};
	in.kind = DT_NODE_PLACEHOLDER;
	in.name = dt_str_intern(g->m, name);
	in.tensors = &t;
	in.ntensors = 1;
	uint32_t id = dt_module_add_node(g->m, &in);
	dt_graph_append(g->m, id);
	return id;
}

/* A call node without tensors. */
static inline uint32_t tg_call(struct tg *g, const char *name, const char *target,
			       const struct dt_arg *args, uint32_t nargs)
{
	struct dt_node_init in = {0};
	in.kind = DT_NODE_CALL;
	in.name = dt_str_intern(g->m, name);
	in.target = dt_str_intern(g->m, target);
	in.line = 7;
	in.args = args;
	in.nargs = nargs;
	uint32_t id = dt_module_add_node(g->m, &in);
	dt_graph_append(g->m, id);
	return id;
}

/* Argument constructors. */
static inline struct dt_arg a_node(uint32_t n)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_NODE;
	a.v.node = n;
	return a;
}
static inline struct dt_arg a_int(int64_t i)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_INT;
	a.v.i = i;
	return a;
}
static inline struct dt_arg a_float(double f)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_FLOAT;
	a.v.f = f;
	return a;
}
static inline struct dt_arg a_bool(bool b)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_BOOL;
	a.v.b = b;
	return a;
}
static inline struct dt_arg a_none(void)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_NONE;
	return a;
}
static inline struct dt_arg a_dtype(enum dt_dtype t)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_DTYPE;
	a.v.dtype = (uint8_t)t;
	return a;
}
static inline struct dt_arg a_str(struct tg *g, const char *s)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_STR;
	a.v.s = dt_str_intern(g->m, s);
	return a;
}
static inline struct dt_arg a_ints(struct tg *g, const int64_t *v, int n)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_INTS;
	a.len = (uint32_t)n;
	a.v.ints = dt_ints_intern(g->m, v, (size_t)n);
	return a;
}
static inline struct dt_arg a_nodes(struct tg *g, const uint32_t *ids, uint32_t n)
{
	struct dt_arg a = {0};
	a.kind = DT_ARG_NODES;
	a.len = n;
	a.v.first = dt_module_add_refs(g->m, ids, n);
	return a;
}
/* The same value as a keyword argument. */
static inline struct dt_arg kw(struct tg *g, const char *name, struct dt_arg a)
{
	a.name = dt_str_intern(g->m, name);
	return a;
}

#define NARGS(arr) (uint32_t)(sizeof(arr) / sizeof((arr)[0]))

/* Infer node `id`; on success store the results on the node (as the
 * shape-infer pass does) so later nodes can use them. */
static inline int tg_infer(struct tg *g, uint32_t id, struct dt_shape_ctx *c)
{
	int rc = dt_infer_node(g->m, id, &g->d, c);
	if (rc == DT_OK)
		dt_node_set_tensors(g->m, id, c->out, c->nout);
	return rc;
}

/* Infer and require success (prints the diagnostic otherwise). */
static inline void tg_ok(struct tg *g, uint32_t id, struct dt_shape_ctx *c)
{
	int rc = tg_infer(g, id, c);
	if (rc != DT_OK)
		fprintf(stderr, "unexpected error: %s\n", g->last);
	assert_int_equal(rc, DT_OK);
}

/* Infer and require failure with a message containing `want`. */
static inline void tg_fails(struct tg *g, uint32_t id, const char *want)
{
	struct dt_shape_ctx c;
	unsigned before = g->count;
	assert_int_equal(tg_infer(g, id, &c), DT_EINPUT);
	assert_true(g->count > before);
	if (!strstr(g->last, want))
		fprintf(stderr, "message: %s\nwanted: %s\n", g->last, want);
	assert_non_null(strstr(g->last, want));
}

/* Check result `i` of an inference. */
static inline void check_tensor(struct tg *g, const struct dt_shape_ctx *c,
				uint32_t i, enum dt_dtype dt, const int64_t *shape,
				int rank, const int64_t *stride, int nstride,
				int64_t offset)
{
	assert_true(i < c->nout);
	const struct dt_tensor *t = &c->out[i];
	int r, ns;
	const int64_t *s = dt_ints_get(g->m, t->shape, &r);
	const int64_t *st = dt_ints_get(g->m, t->stride, &ns);
	assert_string_equal(dt_dtype_name((enum dt_dtype)t->dtype), dt_dtype_name(dt));
	assert_int_equal(r, rank);
	assert_int_equal(ns, nstride);
	for (int k = 0; k < rank; k++) {
		assert_int_equal(s[k], shape[k]);
		assert_int_equal(st[k], stride[k]);
	}
	assert_int_equal(t->offset, offset);
}

#endif
