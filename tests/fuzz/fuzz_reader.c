// SPDX-License-Identifier: MIT
/* fuzz_reader.c: libFuzzer target for the XML reader and writer. Any input
 * the reader accepts must survive the rest of the tool: the verifier, the
 * default pipeline and the dumps must not crash, and the writer's output
 * must read back and write again to the same bytes (the writer is canonical
 * and the reader accepts everything it writes). The streaming file reader
 * must agree with the in-memory one. Build with -Dfuzz=true. */
#define _GNU_SOURCE /* open_memstream */
#include "frontend.h"
#include "passes.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void discard(void *ud, const struct dt_diag_entry *e)
{
	(void)ud;
	(void)e;
}

/* Dump targets may load graphs with unknown targets; so does the fuzzer,
 * which makes it cover every later stage for both kinds of graph. */
static const struct dt_read_options read_opt = {.allow_unknown_targets = true};

/* The module written as format v1; *len gets its length. Caller frees. */
static char *write_memory(const struct dt_module *m, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		abort();
	if (dt_write_stream(m, f) != DT_OK || fclose(f) != 0)
		abort();
	return buf;
}

/* Write m, read it back, write again: the reread must succeed and both
 * writes must be identical bytes. */
static void check_round_trip(const struct dt_module *m, struct dt_diag *d)
{
	size_t len1, len2;
	char *first = write_memory(m, &len1);
	struct dt_module *again;
	if (dt_read_memory(first, len1, "written.xml", &read_opt, d, &again) !=
	    DT_OK) {
		fprintf(stderr,
			"fuzz_reader: the reader rejects what the writer "
			"wrote:\n%.*s\n",
			(int)len1, first);
		abort();
	}
	char *second = write_memory(again, &len2);
	if (len1 != len2 || memcmp(first, second, len1) != 0) {
		fprintf(stderr,
			"fuzz_reader: writing is not canonical:\n"
			"----- first\n%.*s----- second\n%.*s",
			(int)len1, first, (int)len2, second);
		abort();
	}
	dt_module_destroy(again);
	free(first);
	free(second);
}

static void check_dumps(const struct dt_module *m)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	dt_print_text(m, f);
	dt_dump_dot(m, f);
	dt_dump_json(m, f);
	fclose(f);
	free(buf);
}

/* dt_read_file on the same bytes (through a memfd) must accept exactly
 * what dt_read_memory accepted, `m` (NULL when rejected), as the same
 * module. */
static void check_file_reader(const uint8_t *data, size_t size,
			      const struct dt_module *m, struct dt_diag *d)
{
	int fd = memfd_create("fuzz.xml", 0);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct dt_module *f;
	int rc = dt_read_file(path, &read_opt, d, &f);
	close(fd);
	if ((rc == DT_OK) != (m != NULL)) {
		fprintf(stderr,
			"fuzz_reader: dt_read_file %s what dt_read_memory %s\n",
			rc == DT_OK ? "accepts" : "rejects",
			m ? "accepts" : "rejects");
		abort();
	}
	if (!m)
		return;
	size_t len1, len2;
	char *a = write_memory(m, &len1), *b = write_memory(f, &len2);
	if (len1 != len2 || memcmp(a, b, len1) != 0) {
		fprintf(
		    stderr,
		    "fuzz_reader: dt_read_file and dt_read_memory differ\n");
		abort();
	}
	free(a);
	free(b);
	dt_module_destroy(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dt_diag d;
	dt_diag_init(&d);
	d.emit = discard;
	struct dt_module *m;
	int rc = dt_read_memory((const char *)data, size, "fuzz.xml", &read_opt,
				&d, &m);
	check_file_reader(data, size, rc == DT_OK ? m : NULL, &d);
	if (rc != DT_OK)
		return 0;
	check_round_trip(m, &d);
	check_dumps(m);
	dt_verify(m, &d);
	struct dt_pipeline p;
	if (dt_pipeline_parse(&p, "verify,shape-infer,dce", &d) != DT_OK)
		abort();
	struct dt_pipeline_options popt = {.verify_each = true};
	if (dt_pipeline_run(m, &p, &popt, &d) == DT_OK) {
		check_round_trip(m, &d);
		check_dumps(m);
	}
	dt_module_destroy(m);
	return 0;
}
