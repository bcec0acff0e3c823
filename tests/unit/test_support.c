// SPDX-License-Identifier: MIT
/* test_support.c: the allocator hook, vectors, arena, interning and
 * diagnostics formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ir.h"

/* Route the library's allocations through cmocka so leaks fail a test. */
static void *cmocka_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		test_free(ptr);
		return NULL;
	}
	return test_realloc(ptr, size);
}

static int setup(void **state)
{
	(void)state;
	dt_set_allocator(cmocka_realloc, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dt_set_allocator(NULL, NULL);
	return 0;
}

static void test_vec(void **state)
{
	(void)state;
	DT_VEC(int) v = {0};
	for (int i = 0; i < 1000; i++)
		assert_int_equal(dt_vec_push(&v, i * 3), (uint32_t)i);
	assert_int_equal(v.len, 1000);
	assert_int_equal(v.data[999], 2997);
	assert_true(v.cap >= 1000);
	dt_vec_free(&v);
	/* A grown vector has storage even when it grew by nothing (a search
	 * state of a node without inputs is 0 bytes, then memcpy'd). */
	assert_int_equal(dt_vec_grow(&v, 0), 0);
	assert_non_null(v.data);
	assert_int_equal(v.len, 0);
	dt_vec_free(&v);
}

static void test_arena(void **state)
{
	(void)state;
	struct dt_arena a;
	dt_arena_init(&a);
	char *first = dt_arena_alloc(&a, 3);
	char *second = dt_arena_alloc(&a, 5);
	assert_int_equal(((uintptr_t)first) % 16, 0);
	assert_int_equal(((uintptr_t)second) % 16, 0);
	assert_ptr_equal(second, first + 16);
	char *big = dt_arena_alloc(&a, 1 << 20); /* larger than a chunk */
	memset(big, 7, 1 << 20);
	assert_int_equal(big[0], 7);
	assert_string_equal(dt_arena_strndup(&a, "hello world", 5), "hello");
	dt_arena_reset(&a);
	/* After a reset the first chunk is reused from its start. */
	assert_ptr_equal(dt_arena_alloc(&a, 1), first);
	dt_arena_fini(&a);
}

static void test_intern(void **state)
{
	(void)state;
	struct dt_intern t;
	dt_intern_init(&t);
	assert_int_equal(dt_intern(&t, "", 0), 0);
	/* an empty list arrives as (NULL, 0): the same key, and no memcmp of
	 * NULL (UBSan; found by fuzz_reader) */
	assert_int_equal(dt_intern(&t, NULL, 0), 0);
	uint32_t a = dt_intern(&t, "alpha", 5);
	uint32_t b = dt_intern(&t, "beta", 4);
	assert_int_not_equal(a, b);
	assert_int_equal(dt_intern(&t, "alpha", 5), a);
	/* Prefixes and embedded NULs are different keys. */
	assert_int_not_equal(dt_intern(&t, "alph", 4), a);
	assert_int_not_equal(dt_intern(&t, "al\0pha", 6), a);
	/* Survive rehashing: 5000 keys keep their ids and bytes. */
	char buf[32];
	static uint32_t ids[5000];
	for (int i = 0; i < 5000; i++) {
		snprintf(buf, sizeof(buf), "k%d", i);
		ids[i] = dt_intern(&t, buf, strlen(buf));
		assert_int_equal(dt_intern(&t, buf, strlen(buf)), ids[i]);
	}
	for (int i = 0; i < 5000; i++) { /* after the last rehash too */
		snprintf(buf, sizeof(buf), "k%d", i);
		assert_int_equal(dt_intern(&t, buf, strlen(buf)), ids[i]);
	}
	/* Lengths of one, two and three varint bytes read back whole. */
	static char big[70000];
	memset(big, 'x', sizeof big);
	const size_t lens[] = {127, 128, 16383, 16384, 70000};
	uint32_t big_ids[5];
	for (int i = 0; i < 5; i++)
		big_ids[i] = dt_intern(&t, big, lens[i]);
	size_t n;
	for (int i = 0; i < 5; i++) {
		const char *q = dt_intern_get(&t, big_ids[i], &n);
		assert_int_equal(n, lens[i]);
		assert_int_equal(q[n], 0);
		assert_int_equal(dt_intern(&t, big, lens[i]), big_ids[i]);
	}
	assert_string_equal(dt_intern_get(&t, a, &n), "alpha");
	assert_int_equal(n, 5);
	int64_t ints[3] = {1, -2, 1LL << 40};
	uint32_t l = dt_intern(&t, ints, sizeof(ints));
	const int64_t *back = dt_intern_get(&t, l, &n);
	assert_int_equal(((uintptr_t)back) % 8, 0);
	assert_int_equal(n, sizeof(ints));
	assert_int_equal(back[2], 1LL << 40);
	dt_intern_fini(&t);
}

struct captured {
	char text[512];
	int count;
};

static void capture(void *ud, const struct dt_diag_entry *e)
{
	struct captured *c = ud;
	FILE *f = fmemopen(c->text, sizeof(c->text), "w");
	dt_diag_format(e, f);
	fclose(f);
	c->count++;
}

static void test_diag(void **state)
{
	(void)state;
	struct captured c = {{0}, 0};
	struct dt_diag d;
	dt_diag_init(&d);
	d.emit = capture;
	d.ud = &c;
	dt_diag_report(&d, DT_ERROR, "g.xml", 42, NULL, "node '%s' is bad", "x");
	assert_string_equal(c.text, "g.xml:42: error: node 'x' is bad");
	dt_diag_report(&d, DT_REMARK, "g.xml", 7, "fuse-collectives:no_group", "r");
	assert_int_equal(c.count, 1); /* remarks are off by default */
	d.remarks = true;
	dt_diag_report(&d, DT_REMARK, "g.xml", 7, "fuse-collectives:no_group", "r");
	assert_string_equal(c.text, "g.xml:7: remark: r [fuse-collectives:no_group]");
	assert_int_equal(d.nerrors, 1);
	assert_int_equal(d.nremarks, 2);
}

/* The temporary of an atomic write lies beside its target, named after it,
 * with the permissions asked for (not mkstemp's 0600). */
static void test_temp_beside(void **state)
{
	(void)state;
	char dir[] = "/tmp/dt_temp_beside.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64], *tmp;
	snprintf(path, sizeof path, "%s/out.xml", dir);
	int fd = dt_temp_beside(path, 0644, &tmp);
	assert_true(fd >= 0);
	assert_int_equal(strncmp(tmp, path, strlen(path)), 0);
	assert_int_equal(strncmp(tmp + strlen(path), ".tmp.", 5), 0);
	assert_int_equal(strlen(tmp), strlen(path) + strlen(".tmp.XXXXXX"));
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	close(fd);
	assert_int_equal(unlink(tmp), 0);
	dt_free(tmp);
	fd = dt_temp_beside(path, 0600, &tmp);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
	unlink(tmp);
	dt_free(tmp);
	rmdir(dir);
	/* no directory: -1, errno set, nothing to free */
	assert_int_equal(dt_temp_beside("/nonexistent-dir/x.xml", 0644, &tmp), -1);
	assert_int_equal(errno, ENOENT);
	assert_null(tmp);
}

static void test_format_double(void **state)
{
	(void)state;
	char buf[40];
	dt_format_double(1e-05, buf, sizeof(buf));
	assert_string_equal(buf, "1e-05");
	dt_format_double(0.1, buf, sizeof(buf));
	assert_string_equal(buf, "0.1");
	dt_format_double(2.8284271247461903, buf, sizeof(buf));
	assert_string_equal(buf, "2.8284271247461903");
	dt_format_double(-1.0 / 0.0, buf, sizeof(buf));
	assert_string_equal(buf, "-inf");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arena, setup, teardown),
		cmocka_unit_test_setup_teardown(test_intern, setup, teardown),
		cmocka_unit_test(test_diag),
		cmocka_unit_test_setup_teardown(test_temp_beside, setup, teardown),
		cmocka_unit_test(test_format_double),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
