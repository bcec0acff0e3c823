// SPDX-License-Identifier: MIT
/* test_constant_data.c: the data of constant nodes: CRC-32, canonical
 * base64 both ways, side-file names and paths, side files written and read
 * back (frontend/constant_data.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "constant_data.h"

static void test_crc32(void **state)
{
	(void)state;
	assert_int_equal(dt_crc32("123456789", 9), 0xCBF43926u); /* check value */
	assert_int_equal(dt_crc32("", 0), 0);
	assert_int_equal(dt_crc32("a", 1), 0xE8B7BE43u);
}

/* Encode n bytes into a NUL-terminated string (caller frees). */
static char *encode(const void *p, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_true(dt_base64_write(f, p, n));
	fclose(f);
	return text;
}

static void test_base64_vectors(void **state)
{
	(void)state;
	/* RFC 4648 §10. */
	static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba",
				      "foobar"};
	static const char *coded[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==",
				      "Zm9vYmE=", "Zm9vYmFy"};
	for (int i = 0; i < 7; i++) {
		char *text = encode(plain[i], strlen(plain[i]));
		assert_string_equal(text, coded[i]);
		size_t bad = 99;
		int64_t n = dt_base64_size(text, strlen(text), &bad);
		assert_int_equal(n, (int64_t)strlen(plain[i]));
		char out[8] = {0};
		dt_base64_decode(text, strlen(text), (unsigned char *)out);
		assert_memory_equal(out, plain[i], (size_t)n);
		free(text);
	}
}

static void test_base64_round_trip(void **state)
{
	(void)state;
	unsigned char in[300], out[300];
	for (int i = 0; i < 300; i++)
		in[i] = (unsigned char)(i * 97 + 13);
	for (size_t n = 0; n <= sizeof in; n++) {
		char *text = encode(in, n);
		assert_int_equal(strlen(text), (n + 2) / 3 * 4);
		size_t bad;
		assert_int_equal(dt_base64_size(text, strlen(text), &bad),
				 (int64_t)n);
		memset(out, 0xAA, sizeof out);
		dt_base64_decode(text, strlen(text), out);
		assert_memory_equal(in, out, n);
		free(text);
	}
}

static void test_base64_refused(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		size_t bad;
	} cases[] = {
		{"Zg=", 3},       /* length not a multiple of 4 */
		{"Zh==", 1},      /* nonzero pad bits: not canonical */
		{"Zm9=", 2},      /* the same with one '=' */
		{"Z===", 1},      /* three '=' */
		{"Zm9v!A==", 4},  /* outside the alphabet */
		{"Zm 9", 2},      /* no blanks */
		{"Zg==Zm9v", 2},  /* padding inside */
		{"Zm9v\n", 5},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		size_t bad = 99;
		assert_int_equal(dt_base64_size(cases[i].text,
						strlen(cases[i].text), &bad),
				 -1);
		assert_int_equal(bad, cases[i].bad);
	}
}

static void test_side_paths(void **state)
{
	(void)state;
	char err[256];
	static const char *ok[] = {"a.bin", "sub/a.bin", "..a.bin", "a..b",
				   "x/y/z-0123abcd.bin"};
	static const char *bad[] = {"", "/etc/passwd", "../a.bin", "a/../b",
				    "a/./b", "./a", "a//b", "a/", "..", ".",
				    "a\\b", "sub/.."};
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
		assert_true(dt_side_path_ok(ok[i], err, sizeof err));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		err[0] = 0;
		assert_false(dt_side_path_ok(bad[i], err, sizeof err));
		assert_non_null(strstr(err, "side file"));
	}
	char name[128];
	dt_side_file_name("rope.freqs/x", 0xabcdu, name, sizeof name);
	assert_string_equal(name, "rope_freqs_x-0000abcd.bin");
	dt_side_file_name("", 1, name, sizeof name);
	assert_string_equal(name, "constant-00000001.bin");
	dt_path_dir("a/b/c.xml", name, sizeof name);
	assert_string_equal(name, "a/b");
	dt_path_dir("c.xml", name, sizeof name);
	assert_string_equal(name, ".");
	dt_path_dir("/c.xml", name, sizeof name);
	assert_string_equal(name, "/");
}

/* Open and load a side file as the reader does. */
static int side_read(const char *dir, const char *name, unsigned char *dst,
		     uint64_t size, uint32_t crc, char *err, size_t errlen)
{
	int fd = dt_side_file_open(dir, name, size, err, errlen);
	return fd < 0 ? -1 : dt_side_file_load(fd, name, dst, size, crc, err,
					       errlen);
}

static void test_side_files(void **state)
{
	(void)state;
	char dir[] = "/tmp/dtopt-constant-XXXXXX";
	assert_non_null(mkdtemp(dir));
	const unsigned char data[6] = {1, 2, 3, 4, 5, 6}, other[6] = {9};
	unsigned char back[6] = {0};
	char err[512];
	uint32_t crc = dt_crc32(data, 6);
	assert_int_equal(dt_side_file_write(dir, "c.bin", data, 6, err, sizeof err), 0);
	assert_int_equal(side_read(dir, "c.bin", back, 6, crc, err, sizeof err), 0);
	assert_memory_equal(back, data, 6);
	/* The same bytes again: kept. Other bytes: refused, file untouched. */
	assert_int_equal(dt_side_file_write(dir, "c.bin", data, 6, err, sizeof err), 0);
	assert_int_equal(dt_side_file_write(dir, "c.bin", other, 6, err, sizeof err), -1);
	assert_non_null(strstr(err, "exists with other contents"));
	assert_int_equal(side_read(dir, "c.bin", back, 6, crc, err, sizeof err), 0);
	/* Wrong size either way, wrong checksum, missing file. */
	assert_int_equal(side_read(dir, "c.bin", back, 5, crc, err, sizeof err), -1);
	assert_non_null(strstr(err, "has 6 bytes"));
	assert_int_equal(side_read(dir, "c.bin", back, 7, crc, err, sizeof err), -1);
	assert_non_null(strstr(err, "truncated"));
	assert_int_equal(side_read(dir, "c.bin", back, 6, crc ^ 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "CRC-32"));
	assert_int_equal(side_read(dir, "none.bin", back, 6, crc, err, sizeof err), -1);
	assert_non_null(strstr(err, "cannot open"));
	/* A FIFO under the name is refused, not waited on. */
	char path[128];
	snprintf(path, sizeof path, "%s/fifo.bin", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(side_read(dir, "fifo.bin", back, 6, crc, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a regular file"));
	unlink(path);
	snprintf(path, sizeof path, "%s/c.bin", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32),
		cmocka_unit_test(test_base64_vectors),
		cmocka_unit_test(test_base64_round_trip),
		cmocka_unit_test(test_base64_refused),
		cmocka_unit_test(test_side_paths),
		cmocka_unit_test(test_side_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
