// SPDX-License-Identifier: MIT
/* test_cost_model.c: unit tests of the communication cost model (the worked
 * figures of semantics §5, inter-host dims, flattened groups), the bytes it
 * charges per collective kind, and the per-group table and report. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cost_model.h"
#include "frontend.h"

/* Route the library's allocations through cmocka so leaks fail a test. */
static void *cmocka_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		if (ptr)
			test_free(ptr);
		return NULL;
	}
	return test_realloc(ptr, size);
}

#define MIB (1024.0 * 1024.0)

/* cmocka 1.1's assert_float_equal compares in single precision. */
static bool close_to(double got, double want, double eps)
{
	if (got - want <= eps && want - got <= eps)
		return true;
	print_error("%.17g is not within %g of %.17g\n", got, eps, want);
	return false;
}
#define assert_close(got, want, eps) assert_true(close_to((got), (want), (eps)))

static struct dt_mesh make_mesh(const int64_t *shape, int ndim)
{
	struct dt_mesh m = {.ndim = (uint8_t)ndim, .size = 1};
	for (int i = 0; i < ndim; i++) {
		m.shape[i] = shape[i];
		m.size *= shape[i];
	}
	return m;
}

/* 4 MiB global f32 tensor on a 1-D mesh of 4: S(0)→R all-gathers the whole
 * 4 MiB, P→R all-reduces the 4 MiB partial. */
static void test_worked_figures(void **state)
{
	(void)state;
	struct dt_topology t;
	dt_topology_default(&t);
	struct dt_mesh mesh = make_mesh((int64_t[]){4}, 1);
	uint8_t dim0[] = {0};
	double ag =
	    dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_ALL_GATHER, 4 * MIB);
	double rs =
	    dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_REDUCE_SCATTER, 4 * MIB);
	double ar =
	    dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_ALL_REDUCE, 4 * MIB);
	assert_close(ag, 41.81, 0.005);
	assert_close(rs, 41.81, 0.005);
	assert_close(ar, 77.01, 0.005);
	/* The bytes term scales linearly: double the bytes, double the term. */
	double ag2 =
	    dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_ALL_GATHER, 8 * MIB);
	assert_close(ag2 - ag, ag - (6.6 + 3 * 0.6), 1e-9);
}

static void test_inter_host_switch(void **state)
{
	(void)state;
	struct dt_topology t;
	dt_topology_default(&t);
	struct dt_mesh_links l;
	/* (2,8), 8 per host: dim 1 fills a host, dim 0 spans two. */
	struct dt_mesh m28 = make_mesh((int64_t[]){2, 8}, 2);
	dt_mesh_links(&t, &m28, &l);
	assert_close(l.bandwidth[1], 87.7, 1e-12);
	assert_close(l.latency[1], 0.6, 1e-12);
	assert_close(l.bandwidth[0], 87.7 * 0.22, 1e-12);
	assert_close(l.latency[0], 2.7, 1e-12);
	/* (4,4), 8 per host: 4 devices fit, 16 do not. */
	struct dt_mesh m44 = make_mesh((int64_t[]){4, 4}, 2);
	dt_mesh_links(&t, &m44, &l);
	assert_close(l.bandwidth[1], 87.7, 1e-12);
	assert_close(l.bandwidth[0], 87.7 * 0.22, 1e-12);
	assert_close(l.latency[0], 2.7, 1e-12);
	/* 16 per host: everything intra-host. */
	t.devices_per_host = 16;
	dt_mesh_links(&t, &m44, &l);
	assert_close(l.bandwidth[0], 87.7, 1e-12);
	assert_close(l.latency[0], 0.6, 1e-12);
	dt_mesh_links(&t, &m28, &l);
	assert_close(l.bandwidth[0], 87.7, 1e-12);
	/* The walk goes from the last dim: (8,2) with 4 per host makes dim 0
	 * (cumulative 16) inter-host and dim 1 (2) intra-host. */
	t.devices_per_host = 4;
	struct dt_mesh m82 = make_mesh((int64_t[]){8, 2}, 2);
	dt_mesh_links(&t, &m82, &l);
	assert_close(l.bandwidth[1], 87.7, 1e-12);
	assert_close(l.bandwidth[0], 87.7 * 0.22, 1e-12);
	/* Costs follow the links: dim 0 of (2,8), n = 2, inter-host. */
	dt_topology_default(&t);
	double gib = 1.0 / 1024;
	double want = 6.6 + 2.7 + gib * 1 / 2 / (87.7 * 0.22) * 1e6;
	assert_close(
	    dt_comm_cost(&t, &m28, (uint8_t[]){0}, 1, DT_COMM_ALL_GATHER, MIB),
	    want, 1e-9);
}

static void test_flattened_group(void **state)
{
	(void)state;
	struct dt_topology t;
	dt_topology_default(&t);
	struct dt_mesh m28 = make_mesh((int64_t[]){2, 8}, 2);
	/* n = 16, the slowest dim's (inter-host) bandwidth and latency. */
	double gib = 64.0 / 1024;
	double want = 6.6 + 15 * 2.7 + gib * 15 / 16 / (87.7 * 0.22) * 1e6;
	assert_close(dt_comm_cost(&t, &m28, (uint8_t[]){1, 0}, 2,
				  DT_COMM_ALL_GATHER, 64 * MIB),
		     want, 1e-9);
	assert_close(dt_comm_cost(&t, &m28, (uint8_t[]){0, 1}, 2,
				  DT_COMM_ALL_GATHER, 64 * MIB),
		     want, 1e-9);
	double want_ar = 6.6 + 30 * 2.7 + gib * 30 / 16 / (87.7 * 0.22) * 1e6;
	assert_close(dt_comm_cost(&t, &m28, (uint8_t[]){1, 0}, 2,
				  DT_COMM_ALL_REDUCE, 64 * MIB),
		     want_ar, 1e-9);
	/* A size-1 dim carries no traffic: on (1,4,2) with 4 per host, dim 0
	 * is inter-host but group (0, 2) runs at dim 2's intra-host speed. */
	t.devices_per_host = 4;
	struct dt_mesh m142 = make_mesh((int64_t[]){1, 4, 2}, 3);
	double intra = 6.6 + 0.6 + gib / 2 / 87.7 * 1e6;
	assert_close(dt_comm_cost(&t, &m142, (uint8_t[]){0, 2}, 2,
				  DT_COMM_ALL_GATHER, 64 * MIB),
		     intra, 1e-9);
}

/* A collective over one rank still launches: DTensor charges its base
 * latency (no hops, no bytes), and the all_to_all penalty. */
static void test_group_of_one_pays_the_launch(void **state)
{
	(void)state;
	struct dt_topology t;
	dt_topology_default(&t);
	struct dt_mesh m41 = make_mesh((int64_t[]){4, 1}, 2);
	for (int k = 0; k < DT_NCOMM_KINDS; k++)
		assert_close(dt_comm_cost(&t, &m41, (uint8_t[]){1}, 1,
					  (enum dt_comm_kind)k, 4 * MIB),
			     k == DT_COMM_ALL_TO_ALL ? 7.6 : 6.6, 1e-12);
}

static void test_all_to_all_penalty(void **state)
{
	(void)state;
	struct dt_topology t;
	dt_topology_default(&t);
	struct dt_mesh mesh = make_mesh((int64_t[]){4}, 1);
	uint8_t dim0[] = {0};
	double ag = dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_ALL_GATHER, MIB);
	double a2a = dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_ALL_TO_ALL, MIB);
	assert_close(a2a - ag, 1.0, 1e-9);
	t.all_to_all_penalty = 2.5;
	a2a = dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_ALL_TO_ALL, MIB);
	assert_close(a2a - ag, 2.5, 1e-9);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_int_equal(dt_comm_kind_of_op(DT_OP_ALL_GATHER),
			 DT_COMM_ALL_GATHER);
	assert_int_equal(dt_comm_kind_of_op(DT_OP_REDUCE_SCATTER),
			 DT_COMM_REDUCE_SCATTER);
	assert_int_equal(dt_comm_kind_of_op(DT_OP_ALL_REDUCE),
			 DT_COMM_ALL_REDUCE);
	assert_int_equal(dt_comm_kind_of_op(DT_OP_ALL_TO_ALL),
			 DT_COMM_ALL_TO_ALL);
	assert_int_equal(dt_comm_kind_of_op(DT_OP_WAIT), -1);
	assert_int_equal(dt_comm_kind_of_op(DT_OP_UNKNOWN), -1);
	assert_string_equal(dt_comm_kind_name(DT_COMM_REDUCE_SCATTER),
			    "reduce_scatter");
	assert_string_equal(dt_comm_kind_name(DT_COMM_ALL_TO_ALL),
			    "all_to_all");
}

/* x is 1 MiB (256×1024 f32); ag/ag3 gather it over tp to 4 MiB; rs
 * scatters ag's 4 MiB back; ar (group as a keyword) reduces x over dp;
 * a2a exchanges x over the flattened tp_dp; ag2 has no <tensor>. */
static const char collectives_xml[] =
    "<dtopt-graph version=\"1\" name=\"c\" view=\"local\">\n"
    "  <mesh name=\"world\" shape=\"2 4\" dims=\"dp tp\"/>\n"
    "  <group name=\"tp\" mesh=\"world\" dims=\"tp\"/>\n"
    "  <group name=\"dp\" mesh=\"world\" dims=\"dp\"/>\n"
    "  <group name=\"tp_dp\" mesh=\"world\" dims=\"tp dp\"/>\n"
    "  <node name=\"x\" op=\"placeholder\"><tensor dtype=\"float32\" "
    "shape=\"256 1024\"/></node>\n"
    "  <node name=\"ag\" op=\"call_function\" "
    "target=\"_c10d_functional.all_gather_into_tensor.default\">\n"
    "    <arg node=\"x\"/><arg int=\"4\"/><arg str=\"tp\"/><tensor "
    "dtype=\"float32\" shape=\"1024 1024\"/></node>\n"
    "  <node name=\"w\" op=\"call_function\" "
    "target=\"_c10d_functional.wait_tensor.default\"><arg "
    "node=\"ag\"/></node>\n"
    "  <node name=\"rs\" op=\"call_function\" "
    "target=\"_c10d_functional.reduce_scatter_tensor.default\">\n"
    "    <arg node=\"w\"/><arg str=\"sum\"/><arg int=\"4\"/><arg "
    "str=\"tp\"/></node>\n"
    "  <node name=\"w_rs\" op=\"call_function\" "
    "target=\"_c10d_functional.wait_tensor.default\"><arg "
    "node=\"rs\"/></node>\n"
    "  <node name=\"ar\" op=\"call_function\" "
    "target=\"_c10d_functional.all_reduce.default\">\n"
    "    <arg node=\"x\"/><arg str=\"sum\"/><kwarg name=\"group_name\" "
    "str=\"dp\"/></node>\n"
    "  <node name=\"w_ar\" op=\"call_function\" "
    "target=\"_c10d_functional.wait_tensor.default\"><arg "
    "node=\"ar\"/></node>\n"
    "  <node name=\"a2a\" op=\"call_function\" "
    "target=\"_c10d_functional.all_to_all_single.default\">\n"
    "    <arg node=\"x\"/><arg none=\"true\"/><arg none=\"true\"/><arg "
    "str=\"tp_dp\"/></node>\n"
    "  <node name=\"w_a2a\" op=\"call_function\" "
    "target=\"_c10d_functional.wait_tensor.default\"><arg "
    "node=\"a2a\"/></node>\n"
    "  <node name=\"ag2\" op=\"call_function\" "
    "target=\"_c10d_functional.all_gather_into_tensor.default\">\n"
    "    <arg node=\"x\"/><arg int=\"2\"/><arg str=\"dp\"/></node>\n"
    "  <node name=\"w_ag2\" op=\"call_function\" "
    "target=\"_c10d_functional.wait_tensor.default\"><arg "
    "node=\"ag2\"/></node>\n"
    "  <node name=\"ag3\" op=\"call_function\" "
    "target=\"_c10d_functional.all_gather_into_tensor.default\">\n"
    "    <arg node=\"x\"/><arg int=\"4\"/><arg str=\"tp\"/><tensor "
    "dtype=\"float32\" shape=\"1024 1024\"/></node>\n"
    "  <node name=\"w_ag3\" op=\"call_function\" "
    "target=\"_c10d_functional.wait_tensor.default\"><arg "
    "node=\"ag3\"/></node>\n"
    "  <node name=\"output\" op=\"output\"><arg nodes=\"w w_rs w_ar w_a2a "
    "w_ag2 w_ag3\"/></node>\n"
    "</dtopt-graph>\n";

static struct dt_module *read_collectives(void)
{
	struct dt_diag d;
	dt_diag_init(&d);
	struct dt_module *m = NULL;
	assert_int_equal(dt_read_memory(collectives_xml,
					strlen(collectives_xml),
					"collectives.xml", NULL, &d, &m),
			 DT_OK);
	return m;
}

static const struct dt_node *node_named(struct dt_module *m, const char *name)
{
	uint32_t id = dt_module_find_node(m, dt_str_intern(m, name));
	assert_true(id != 0);
	return dt_node_get(m, id);
}

static void test_comm_bytes(void **state)
{
	(void)state;
	struct dt_module *m = read_collectives();
	assert_true(dt_comm_bytes(m, node_named(m, "ag")) == 4 * MIB);
	/* reduce_scatter charges its input (the gathered 4 MiB, through the
	 * wait), not its 1 MiB output (unknown here). */
	assert_true(dt_comm_bytes(m, node_named(m, "rs")) == 0);
	assert_true(dt_comm_bytes(m, node_named(m, "ar")) == MIB);
	assert_true(dt_comm_bytes(m, node_named(m, "a2a")) == MIB);
	assert_true(dt_comm_bytes(m, node_named(m, "ag2")) == 0);
	assert_true(dt_comm_bytes(m, node_named(m, "w")) == 0);
	dt_module_destroy(m);
}

/* The wait w has no <tensor> in the file; once it has one (as after
 * shape-infer), reduce_scatter charges those 4 MiB. */
static void test_comm_bytes_after_fill(void **state)
{
	(void)state;
	struct dt_module *m = read_collectives();
	const struct dt_node *ag = node_named(m, "ag");
	struct dt_tensor gathered = *dt_node_tensor(m, ag, 0);
	uint32_t w = dt_module_find_node(m, dt_str_intern(m, "w"));
	dt_node_set_tensors(m, w, &gathered, 1);
	assert_true(dt_comm_bytes(m, node_named(m, "rs")) == 4 * MIB);
	dt_module_destroy(m);
}

/* What each rank sends: an all_gather or reduce_scatter of B bytes on n
 * ranks B·(n-1)/n, an all_reduce twice that (the ring's two halves: as
 * much as an all_gather of 2B); a group of one sends nothing. The
 * bandwidth term of dt_comm_cost is these bytes over the bandwidth. */
static void test_sent_per_rank(void **state)
{
	(void)state;
	struct dt_topology t;
	dt_topology_default(&t);
	struct dt_mesh mesh = make_mesh((int64_t[]){4, 1}, 2);
	uint8_t dim0[] = {0}, dim1[] = {1};
	assert_true(dt_comm_sent(&mesh, dim0, 1, DT_COMM_ALL_GATHER, 4 * MIB) ==
		    3 * MIB);
	assert_true(dt_comm_sent(&mesh, dim0, 1, DT_COMM_REDUCE_SCATTER,
				 4 * MIB) == 3 * MIB);
	assert_true(dt_comm_sent(&mesh, dim0, 1, DT_COMM_ALL_REDUCE, 4 * MIB) ==
		    6 * MIB);
	assert_true(dt_comm_sent(&mesh, dim0, 1, DT_COMM_ALL_REDUCE, 4 * MIB) ==
		    dt_comm_sent(&mesh, dim0, 1, DT_COMM_ALL_GATHER, 8 * MIB));
	assert_true(dt_comm_sent(&mesh, dim1, 1, DT_COMM_ALL_REDUCE, 4 * MIB) ==
		    0);
	double gib = 1024.0 * MIB, bw = t.bandwidth;
	assert_close(dt_comm_cost(&t, &mesh, dim0, 1, DT_COMM_ALL_REDUCE, 4 * MIB),
		     t.base_latency + 6 * t.latency + 6 * MIB / gib / bw * 1e6,
		     1e-9);
}

static void test_comm_table(void **state)
{
	(void)state;
	struct dt_module *m = read_collectives();
	struct dt_comm_table t = {0};
	dt_comm_table_fill(&t, m, NULL);
	assert_int_equal(t.rows.len, 5);
	const struct dt_comm_row *r = t.rows.data;
	struct dt_topology topo;
	dt_topology_default(&topo);
	const struct dt_mesh *mesh = &m->meshes.data[0];
	/* ag and ag3 share a row: 2 × 4 MiB over tp. */
	assert_int_equal(r[0].kind, DT_COMM_ALL_GATHER);
	assert_string_equal(r[0].mesh, "world");
	assert_string_equal(r[0].dims, "tp");
	assert_string_equal(r[0].group, "tp");
	assert_int_equal(r[0].count, 2);
	assert_true(r[0].bytes == 8 * MIB);
	assert_true(r[0].sent == 2 * dt_comm_sent(mesh, (uint8_t[]){1}, 1,
						  DT_COMM_ALL_GATHER, 4 * MIB));
	assert_true(r[0].sent > 0 && r[0].sent < r[0].bytes);
	assert_close(r[0].time_us,
		     2 * dt_comm_cost(&topo, mesh, (uint8_t[]){1}, 1,
				      DT_COMM_ALL_GATHER, 4 * MIB),
		     1e-9);
	assert_int_equal(r[1].kind, DT_COMM_REDUCE_SCATTER);
	assert_int_equal(r[1].count, 1);
	assert_int_equal(r[2].kind, DT_COMM_ALL_REDUCE);
	assert_string_equal(r[2].dims, "dp");
	assert_true(r[2].bytes == MIB);
	assert_int_equal(r[3].kind, DT_COMM_ALL_TO_ALL);
	assert_string_equal(r[3].dims, "tp dp");
	assert_string_equal(r[3].group, "tp_dp");
	/* A collective with unknown bytes still counts, at its latency. */
	assert_int_equal(r[4].kind, DT_COMM_ALL_GATHER);
	assert_string_equal(r[4].dims, "dp");
	assert_int_equal(r[4].count, 1);
	assert_close(r[4].time_us, 6.6 + 0.6, 1e-9);
	/* The module's topology is the default when none is passed. */
	m->topology.base_latency = 100;
	struct dt_comm_table slow = {0};
	dt_comm_table_fill(&slow, m, NULL);
	assert_close(slow.rows.data[4].time_us, 100 + 0.6, 1e-9);
	dt_comm_table_fini(&slow);
	dt_comm_table_fini(&t);
	dt_module_destroy(m);
}

/* Print a report into a string (the caller frees it). */
static char *report(const struct dt_comm_table *before,
		    const struct dt_comm_table *after, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	if (json)
		dt_comm_report_print_json(before, after, f);
	else
		dt_comm_report_print(before, after, f);
	fclose(f);
	return buf;
}

static void test_report(void **state)
{
	(void)state;
	struct dt_module *m = read_collectives();
	struct dt_comm_table full = {0}, empty = {0};
	dt_comm_table_fill(&full, m, NULL);
	char *text = report(&full, &empty, false);
	assert_non_null(strstr(text, "all_gather"));
	assert_non_null(strstr(text, "tp (world: tp)"));
	assert_non_null(strstr(text, "2 -> 0"));
	assert_non_null(strstr(text, "8.0 MiB -> 0 B"));
	assert_non_null(strstr(text, "tp_dp (world: tp dp)"));
	const char *total = strstr(text, "\n  total");
	assert_non_null(total);
	assert_non_null(strstr(total, "6 -> 0"));
	assert_non_null(strstr(total, "10.0 MiB -> 0 B"));
	free(text);
	/* Rows only in the after table are listed too. */
	char *json = report(&empty, &full, true);
	assert_non_null(strstr(json, "{\"rows\":[{\"kind\":\"all_gather\","
				     "\"mesh\":\"world\",\"group\":\"tp\","
				     "\"dims\":\"tp\",\"count_before\":0,"
				     "\"count_after\":2,\"bytes_before\":0,"
				     "\"bytes_after\":8388608,\"sent_before\":0,"
				     "\"sent_after\":"));
	assert_non_null(strstr(json, "\"total\":{\"count_before\":0,"
				     "\"count_after\":6,\"bytes_before\":0,"
				     "\"bytes_after\":10485760,"));
	assert_int_equal(json[strlen(json) - 2], '}');
	free(json);
	dt_comm_table_fini(&full);
	dt_module_destroy(m);
}

int main(void)
{
	dt_set_allocator(cmocka_realloc, NULL);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_worked_figures),
	    cmocka_unit_test(test_inter_host_switch),
	    cmocka_unit_test(test_flattened_group),
	    cmocka_unit_test(test_group_of_one_pays_the_launch),
	    cmocka_unit_test(test_all_to_all_penalty),
	    cmocka_unit_test(test_kind_names),
	    cmocka_unit_test(test_sent_per_rank),
	    cmocka_unit_test(test_comm_bytes),
	    cmocka_unit_test(test_comm_bytes_after_fill),
	    cmocka_unit_test(test_comm_table),
	    cmocka_unit_test(test_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
