// SPDX-License-Identifier: MIT
/* rt_test.h: helpers of the runtime tests: graphs from XML strings with
 * shape inference, captured diagnostics, a CPU backend that counts its
 * allocations, and library allocations routed through cmocka. */
#ifndef DTOPT_RT_TEST_H
#define DTOPT_RT_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "frontend.h"
#include "passes.h"
#include "runtime.h"

/* A graph document around `body` (meshes, groups and nodes). */
#define RT_GRAPH(view, body)                                               \
	"<?xml version=\"1.0\"?>\n<dtopt-graph version=\"1\" name=\"t\" " \
	"view=\"" view "\">\n" body "</dtopt-graph>\n"

/* Diagnostics of a test: the count and the last one, formatted
 * "file:line: error: message". */
struct rt_diag {
	struct dt_diag d;
	char last[2048];
	unsigned count;
};

static inline void rt_diag_emit(void *ud, const struct dt_diag_entry *e)
{
	struct rt_diag *r = ud;
	snprintf(r->last, sizeof(r->last), "%s:%u: %s: %s", e->file ? e->file : "",
		 e->line, e->severity == DT_ERROR ? "error" : "note", e->message);
	r->count++;
}

static inline void rt_diag_init(struct rt_diag *r)
{
	memset(r, 0, sizeof(*r));
	dt_diag_init(&r->d);
	r->d.emit = rt_diag_emit;
	r->d.ud = r;
}

/* Parse `xml` (named "t.xml") and run verify + shape-infer; fails the
 * test with the diagnostic when either fails. */
static inline struct dt_module *rt_load(struct rt_diag *r, const char *xml)
{
	struct dt_read_options ropt = {0};
	struct dt_module *m = NULL;
	if (dt_read_memory(xml, strlen(xml), "t.xml", &ropt, &r->d, &m) != DT_OK)
		fail_msg("read: %s", r->last);
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {0};
	assert_int_equal(dt_pipeline_parse(&p, "verify,shape-infer", &r->d), DT_OK);
	if (dt_pipeline_run(m, &p, &popt, &r->d) != DT_OK)
		fail_msg("shape-infer: %s", r->last);
	return m;
}

/* The CPU backend with counted allocations (live must be 0 at the end);
 * each block carries its size in a 16-byte header for the byte counts. */
struct rt_counting {
	struct dt_backend_ops ops;
	const struct dt_backend_ops *inner;
	long live, total;
	size_t bytes, max_bytes; /* held now, at most */
	long fail_at; /* this allocation (1-based) fails; 0 = none */
};

static inline struct rt_counting *rt_counting_of(struct dt_backend *b)
{
	return (struct rt_counting *)(void *)((char *)b->ops -
					      offsetof(struct rt_counting, ops));
}

static inline void *rt_counting_alloc(struct dt_backend *b, size_t bytes)
{
	struct rt_counting *c = rt_counting_of(b);
	if (++c->total == c->fail_at)
		return NULL;
	size_t *p = c->inner->alloc(b, bytes + 16);
	if (!p)
		return NULL;
	c->live++;
	*p = bytes;
	c->bytes += bytes;
	if (c->bytes > c->max_bytes)
		c->max_bytes = c->bytes;
	return (char *)p + 16;
}

static inline void rt_counting_release(struct dt_backend *b, void *p)
{
	struct rt_counting *c = rt_counting_of(b);
	size_t *h = (size_t *)(void *)((char *)p - 16);
	c->live--;
	c->bytes -= *h;
	c->inner->release(b, h);
}

static inline void rt_counting_destroy(struct dt_backend *b)
{
	struct rt_counting *c = rt_counting_of(b);
	assert_int_equal(c->live, 0);
	b->ops = c->inner;
	test_free(c);
	b->ops->destroy(b);
}

/* A CPU backend whose buffers are counted; destroying it asserts that
 * every buffer came back. */
static inline struct dt_backend *rt_backend(struct rt_diag *r)
{
	struct dt_backend *b = dt_backend_cpu_create(&r->d);
	struct rt_counting *c = test_calloc(1, sizeof(*c));
	c->inner = b->ops;
	c->ops = *b->ops;
	c->ops.alloc = rt_counting_alloc;
	c->ops.release = rt_counting_release;
	c->ops.destroy = rt_counting_destroy;
	b->ops = &c->ops;
	return b;
}

static inline void *rt_cmocka_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		test_free(ptr);
		return NULL;
	}
	return test_realloc(ptr, size);
}

/* Library allocations through cmocka, so a leak fails the test. */
static inline int rt_setup(void **state)
{
	(void)state;
	dt_set_allocator(rt_cmocka_realloc, NULL);
	return 0;
}

static inline int rt_teardown(void **state)
{
	(void)state;
	dt_set_allocator(NULL, NULL);
	return 0;
}

/* Element i (row-major) of a host tensor, as double. */
static inline double rt_at(const struct dt_rt_tensor *t, int64_t i)
{
	int64_t idx[DT_MAX_RANK];
	for (int d = t->rank - 1; d >= 0; d--) {
		idx[d] = i % t->shape[d];
		i /= t->shape[d];
	}
	return dt_load_element((enum dt_dtype)t->dtype, dt_rt_element(t, idx));
}

/* The node called `name`. */
static inline const struct dt_node *rt_node(struct dt_module *m, const char *name)
{
	uint32_t id = dt_module_find_node(m, dt_str_intern(m, name));
	assert_true(id != 0);
	return dt_node_get(m, id);
}

#endif
