// SPDX-License-Identifier: MIT
/* test_reader.c: the reader's own checks against format v1's RelaxNG
 * schema: every golden and bad-input graph gets the same verdict with and
 * without the schema pass (dt_read_options.schema), so taking the schema
 * off the load path lost no strictness; and details of the SAX reader
 * (exact lines past 65535, entities in values, item lists). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend.h"

/* The first diagnostic of a read, for the assertions. */
struct first {
	char text[512];
	unsigned count;
};

static void keep_first(void *ud, const struct dt_diag_entry *e)
{
	struct first *f = ud;
	if (!f->count++)
		snprintf(f->text, sizeof f->text, "%u: %s", e->line,
			 e->message);
}

/* Read `path` with or without the schema pass; DT_OK or the error code,
 * the first message in *f. */
static int read_graph(const char *path, bool schema, struct first *f)
{
	struct dt_read_options opt = {.allow_unknown_targets = true,
				      .schema = schema};
	struct dt_diag d;
	dt_diag_init(&d);
	memset(f, 0, sizeof *f);
	d.emit = keep_first;
	d.ud = f;
	struct dt_module *m = NULL;
	int rc = dt_read_file(path, &opt, &d, &m);
	if (m)
		dt_module_destroy(m);
	return rc;
}

struct tally {
	unsigned files, accepted, refused;
};

/* Compare both verdicts on every *.xml under `dir`. */
static void walk(const char *dir, struct tally *t)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		assert_int_equal(stat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			walk(path, t);
			continue;
		}
		size_t n = strlen(path);
		if (n < 4 || strcmp(path + n - 4, ".xml") != 0)
			continue;
		struct first plain, schema;
		bool ok = read_graph(path, false, &plain) == DT_OK;
		bool schema_ok = read_graph(path, true, &schema) == DT_OK;
		if (ok != schema_ok)
			fail_msg("%s: the reader %s it (%s), the schema pass "
				 "%s it (%s)",
				 path, ok ? "accepts" : "refuses", plain.text,
				 schema_ok ? "accepts" : "refuses",
				 schema.text);
		/* The reader's message comes first, the schema's never instead.
		 */
		if (!ok)
			assert_string_equal(plain.text, schema.text);
		t->files++;
		ok ? t->accepted++ : t->refused++;
	}
	closedir(d);
}

static void test_same_verdicts(void **state)
{
	(void)state;
	struct tally t = {0};
	walk(DT_TESTS_DIR "/bad", &t);
	walk(DT_TESTS_DIR "/golden", &t);
	/* both outcomes are well represented */
	print_message("%u files, %u accepted, %u refused\n", t.files,
		      t.accepted, t.refused);
	assert_true(t.files > 180);
	assert_true(t.accepted > 100);
	assert_true(t.refused > 60);
}

/* Read a document from memory; the first message in *f. */
static int read_text(const char *text, struct first *f)
{
	struct dt_diag d;
	dt_diag_init(&d);
	memset(f, 0, sizeof *f);
	d.emit = keep_first;
	d.ud = f;
	struct dt_module *m = NULL;
	int rc = dt_read_memory(text, strlen(text), "t.xml", NULL, &d, &m);
	if (m)
		dt_module_destroy(m);
	return rc;
}

static void test_lines_past_65535(void **state)
{
	(void)state;
	const char head[] = "<dtopt-graph version=\"1\">\n";
	size_t blank = 70000;
	char *doc = malloc(sizeof head + blank + 64);
	strcpy(doc, head);
	memset(doc + sizeof head - 1, '\n', blank);
	strcpy(doc + sizeof head - 1 + blank,
	       "<node name=\"a\"/>\n</dtopt-graph>\n");
	struct first f;
	assert_int_equal(read_text(doc, &f), DT_EINPUT);
	/* line 1 + 70000 newlines: the node is on line 70002 exactly */
	assert_string_equal(f.text, "70002: <node> needs a 'op' attribute");
	free(doc);
}

static void test_values(void **state)
{
	(void)state;
	const char doc[] =
	    "<dtopt-graph version=\"1\" name=\"a &amp; b &lt;&#10;c&quot;\">\n"
	    "<node name=\"x\" op=\"placeholder\"/>\n"
	    "<node name=\"o\" op=\"output\"><kwarg name=\"k\"><item "
	    "node=\"x\"/>"
	    "<item int=\"-7\"/></kwarg></node>\n"
	    "</dtopt-graph>\n";
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_module *m = NULL;
	assert_int_equal(
	    dt_read_memory(doc, strlen(doc), "t.xml", NULL, &d, &m), DT_OK);
	assert_string_equal(dt_str_get(m, m->name), "a & b <\nc\"");
	uint32_t o = dt_module_find_node(m, dt_str_intern(m, "o"));
	const struct dt_node *n = dt_node_get(m, o);
	assert_int_equal(n->nargs, 1);
	const struct dt_arg *a = dt_node_arg(m, n, 0);
	assert_string_equal(dt_str_get(m, a->name), "k");
	assert_int_equal(a->kind, DT_ARG_ITEMS);
	assert_int_equal(a->len, 2);
	assert_int_equal(m->args.data[a->v.first + 1].v.i, -7);
	dt_module_destroy(m);
}

static void test_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *message;
	} cases[] = {
	    {"<dtopt-graph version=\"1\"><node name=\"x\" op=\"output\">"
	     "<kwarg name=\"k\"/></node></dtopt-graph>",
	     "1: <kwarg> of node 'x' has no value"},
	    {"<dtopt-graph version=\"1\"><node name=\"x\" op=\"output\">"
	     "<arg int=\"1\"><item int=\"2\"/></arg></node></dtopt-graph>",
	     "1: unexpected element <item>"},
	    {"<dtopt-graph version=\"1\"><mesh name=\"m\" shape=\"2\" "
	     "dims=\"a\">"
	     "<group/></mesh></dtopt-graph>",
	     "1: unexpected element <group>"},
	    {"<dtopt-graph version=\"1\"><node name=\"x\" op=\"output\">"
	     "<tensor dtype=\"float32\" shape=\"2\"><meta key=\"a\" "
	     "value=\"b\"/>"
	     "</tensor></node></dtopt-graph>",
	     "1: unexpected element <meta>"},
	    {"<dtopt-graph version=\"1\" xmlns:q=\"urn:q\"><q:node name=\"x\" "
	     "op=\"output\"/></dtopt-graph>",
	     "1: <q:node> is in namespace 'urn:q' (format v1 elements are in "
	     "none)"},
	    {"<dtopt-graph version=\"1\"><topology latency=\"1\" flops=\"2\"/>"
	     "</dtopt-graph>",
	     "1: <topology> has an unknown attribute 'flops'"},
	    {"<dtopt-graph version=\"1\">\n<node name=\"x\" op=\"output\">"
	     "<!-- c -->x<?pi?></node></dtopt-graph>",
	     "2: unexpected text content 'x'"},
	    /* text in three SAX chunks (around the entity): the line of its
	     * last non-blank character, the text from its first */
	    {"<dtopt-graph version=\"1\">\n<node name=\"x\" op=\"output\">\n"
	     "  a &amp; b\n\n</node></dtopt-graph>",
	     "3: unexpected text content 'a & b'"},
	    {"<dtopt-graph version=\"1\">\n"
	     "0123456789012345678901234567890123456789012345678901234567890123"
	     "456789\n</dtopt-graph>",
	     "2: unexpected text content "
	     "'0123456789012345678901234567890123456789'"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct first f;
		assert_int_equal(read_text(cases[i].doc, &f), DT_EINPUT);
		assert_string_equal(f.text, cases[i].message);
	}
}

/* The text dt_write_stream writes of m (caller frees). */
static char *written(const struct dt_module *m)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_int_equal(dt_write_stream(m, f), DT_OK);
	fclose(f);
	return text;
}

/* A clone writes what its original writes, and shares nothing with it:
 * renaming a node of the clone leaves the original as it was, and the
 * clone outlives the original (device list and constant bytes copied). */
static void test_clone(void **state)
{
	(void)state;
	const char doc[] =
	    "<dtopt-graph version=\"1.1\" name=\"c\" view=\"local\">\n"
	    "<mesh name=\"world\" shape=\"2 2\" dims=\"dp tp\" "
	    "devices=\"3 2 1 0\"/>\n"
	    "<group name=\"dp\" mesh=\"world\" dims=\"dp\"/>\n"
	    "<node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" "
	    "shape=\"2\"/></node>\n"
	    "<node name=\"w\" op=\"get_attr\" target=\"layer.w\"><tensor "
	    "dtype=\"float32\" shape=\"2\"/><data base64=\"AACAPwAAAEA=\"/>"
	    "</node>\n"
	    "<node name=\"y\" op=\"call_function\" target=\"aten.mul.Tensor\">"
	    "<arg node=\"x\"/><arg node=\"w\"/></node>\n"
	    "<node name=\"output\" op=\"output\"><arg nodes=\"y\"/></node>\n"
	    "</dtopt-graph>\n";
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_module *m = NULL;
	assert_int_equal(dt_read_memory(doc, strlen(doc), "t.xml", NULL, &d, &m),
			 DT_OK);
	struct dt_module *c = dt_module_clone(m);
	char *before = written(m), *copy = written(c);
	assert_string_equal(copy, before);
	free(copy);
	uint32_t y = dt_module_find_node(c, dt_str_intern(c, "y"));
	dt_node_get(c, y)->name = dt_str_intern(c, "renamed");
	char *after = written(m);
	assert_string_equal(after, before);
	free(after);
	dt_module_destroy(m);
	copy = written(c);
	assert_non_null(strstr(copy, "devices=\"3 2 1 0\""));
	assert_non_null(strstr(copy, "AACAPwAAAEA="));
	assert_non_null(strstr(copy, "name=\"renamed\""));
	free(copy);
	free(before);
	dt_module_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_verdicts),
	    cmocka_unit_test(test_lines_past_65535),
	    cmocka_unit_test(test_values),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_clone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
