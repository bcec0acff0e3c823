// SPDX-License-Identifier: MIT
/* cmd_run_compare.c: `dtopt run --compare A B` (two local graphs on the
 * same inputs, every output compared on every rank) and `--check
 * --reference GLOBAL LOCAL` (each rank's output shards against the slices
 * of a single-process run of the global-view graph; `--check GLOBAL`
 * lowers GLOBAL on each rank to get LOCAL).
 *
 * Elements compare as doubles: equal values pass; otherwise they pass
 * when |a - b| <= tol + tol * max(|a|, |b|) with tol 1e-9 for float64,
 * 1e-5 float32, 1e-3 float16, 1e-2 bfloat16 and 0 for integers and bool.
 * An output is "bitwise" (same bytes), "equal" (same values), "close"
 * (within tolerance) or MISMATCH, combined over all ranks. */
#include "cmd_run.h"
#include "dtopt_config.h"
#include "frontend.h"
#include "passes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if DTOPT_HAVE_MPI
#include <mpi.h>
#endif

static double tolerance(enum dt_dtype t)
{
	switch (t) {
	case DT_FLOAT64: return 1e-9;
	case DT_FLOAT32: return 1e-5;
	case DT_FLOAT16: return 1e-3;
	case DT_BFLOAT16: return 1e-2;
	default: return 0;
	}
}

/* Statistics of one output: the first ST_NMAX combine over ranks by
 * maximum, the rest by sum. */
enum {
	ST_ABS,      /* largest |a - b| */
	ST_REL,      /* largest |a - b| / max(|a|, |b|) */
	ST_NMAX,
	ST_BAD = ST_NMAX, /* elements beyond tolerance */
	ST_UNEQUAL,  /* elements with different values */
	ST_NOTBITS,  /* ranks whose bytes differ */
	ST_SHAPE,    /* ranks whose dtype, shape or presence differ */
	ST_COUNT,    /* elements compared */
	ST_N
};

struct report {
	const char *what; /* "compare" or "check" */
	uint32_t n;
	double (*st)[ST_N];
	const char **names; /* output names (module strings) */
	char (*notes)[96];
	uint8_t *dtypes;
};

static void report_init(struct report *r, const char *what,
			const struct dt_module *m,
			const struct dt_run_result *res)
{
	uint32_t n = res->noutputs, nids;
	uint32_t *ids = dt_cli_outputs(m, &nids);
	r->what = what;
	r->n = n;
	r->st = dt_calloc(n + 1, sizeof(*r->st));
	r->names = dt_calloc(n + 1, sizeof(char *));
	r->notes = dt_calloc(n + 1, sizeof(*r->notes));
	r->dtypes = dt_calloc(n + 1, 1);
	for (uint32_t i = 0; i < n; i++) {
		r->names[i] = dt_cli_output_name(m, ids, nids, i);
		r->dtypes[i] = res->outputs[i].dtype;
	}
	dt_free(ids);
}

static void report_fini(struct report *r)
{
	dt_free(r->st);
	dt_free(r->names);
	dt_free(r->notes);
	dt_free(r->dtypes);
}

static void compare_element(double *st, enum dt_dtype t, double a, double b)
{
	st[ST_COUNT] += 1;
	if (a == b || (isnan(a) && isnan(b)))
		return;
	st[ST_UNEQUAL] += 1;
	double err = fabs(a - b), big = fmax(fabs(a), fabs(b));
	double rel = big > 0 ? err / big : 0, tol = tolerance(t);
	if (isnan(err))
		err = rel = INFINITY;
	st[ST_ABS] = fmax(st[ST_ABS], err);
	st[ST_REL] = fmax(st[ST_REL], rel);
	if (!(err <= tol + tol * big))
		st[ST_BAD] += 1;
}

static void print_row(const struct report *r, uint32_t i)
{
	const double *s = r->st[i];
	const char *res = s[ST_SHAPE] > 0 || s[ST_BAD] > 0 ? "MISMATCH"
			  : s[ST_UNEQUAL] > 0		   ? "close"
			  : s[ST_NOTBITS] > 0		   ? "equal"
							   : "bitwise";
	const char *note = r->notes[i], *sep = *note ? "; " : "";
	printf("  %-3u %-24s %-9s %-9s %-12.3g %-12.3g %s", i, r->names[i],
	       dt_dtype_name((enum dt_dtype)r->dtypes[i]), res, s[ST_ABS],
	       s[ST_REL], note);
	if (s[ST_SHAPE] > 0)
		printf("%sshapes differ on %.0f rank(s)", sep, s[ST_SHAPE]);
	else if (s[ST_BAD] > 0)
		printf("%s%.0f of %.0f elements beyond tolerance", sep,
		       s[ST_BAD], s[ST_COUNT]);
	printf("\n");
}

/* Combine over ranks and print the table on rank 0. Returns 1 (on every
 * rank) when an output mismatches, else 0. */
static int finish_report(struct dt_runner *c, struct report *r)
{
	int bad = 0;
	for (uint32_t i = 0; i < r->n; i++) {
		double *s = r->st[i];
		dt_runner_allreduce(c, s, ST_NMAX, true);
		dt_runner_allreduce(c, s + ST_NMAX, ST_N - ST_NMAX, false);
		bad += s[ST_BAD] > 0 || s[ST_SHAPE] > 0;
	}
	if (c->rank == 0) {
		printf("  %-3s %-24s %-9s %-9s %-12s %-12s %s\n", "#",
		       "output", "dtype", "result", "max abs err",
		       "max rel err", "notes");
		for (uint32_t i = 0; i < r->n; i++)
			print_row(r, i);
		printf("%s: %s (%d of %u outputs differ; tolerance 1e-5 "
		       "float32, 1e-2 bfloat16, 1e-3 float16, 1e-9 float64, "
		       "exact otherwise)\n", r->what, bad ? "MISMATCH" : "ok",
		       bad, r->n);
	}
	fflush(stdout);
	return bad ? DT_EXIT_INPUT : DT_EXIT_OK;
}

/* Why placeholder `p` of `a` and its namesake `q` of `b` would not read
 * the same input, or NULL. With b_global, q's shape must be p's global
 * shape and p must have a <sharding>. */
static const char *placeholder_mismatch(const struct dt_module *a,
					const struct dt_node *p,
					const struct dt_module *b,
					const struct dt_node *q, bool b_global)
{
	const struct dt_tensor *ta = dt_node_tensor(a, p, 0);
	const struct dt_tensor *tb = dt_node_tensor(b, q, 0);
	const struct dt_sharding *sa = dt_node_sharding(a, p);
	const struct dt_sharding *sb = dt_node_sharding(b, q);
	if (b_global && !sa)
		return "has no <sharding>, so it is per-rank data, not a "
		       "shard of the reference's input,";
	if (ta->dtype != tb->dtype)
		return "has another dtype";
	int ra, rb;
	bool global = b_global && sa->has_global_shape;
	const int64_t *sha =
		dt_ints_get(a, global ? sa->global_shape : ta->shape, &ra);
	const int64_t *shb = dt_ints_get(b, tb->shape, &rb);
	if (ra != rb || memcmp(sha, shb, (size_t)ra * sizeof(int64_t)) != 0)
		return b_global ? "has another global shape"
				: "has another shape";
	if (b_global)
		return NULL;
	if (!sa != !sb ||
	    (sa && !dt_placements_equal(&sa->placements, &sb->placements)))
		return "has another sharding";
	return NULL;
}

/* Every placeholder of `a` has a namesake in `b` that reads the same
 * input (with only_names: just the name is checked). Reports each one
 * that does not. */
static bool same_placeholders(struct dt_runner *c, struct dt_module *a,
			      struct dt_module *b, bool b_global,
			      bool only_names)
{
	bool ok = true;
	dt_foreach_node(a, id) {
		const struct dt_node *p = dt_node_get(a, id);
		if (p->kind != DT_NODE_PLACEHOLDER)
			continue;
		const char *name = dt_str_get(a, p->name);
		uint32_t qid = dt_module_find_node(b, dt_str_intern(b, name));
		const struct dt_node *q = qid ? dt_node_get(b, qid) : NULL;
		const char *why = NULL;
		if (!q || q->kind != DT_NODE_PLACEHOLDER)
			why = "is missing";
		else if (!only_names)
			why = placeholder_mismatch(a, p, b, q, b_global);
		if (why) {
			dt_node_error(&c->diag, a, p, "placeholder '%s' %s in "
				      "%s (both graphs must read the same "
				      "inputs)", name, why, b->file);
			ok = false;
		}
	}
	return ok;
}

/* The valid extent n[0..t->rank) of output `node` of m on process rank
 * `rank`: the rank's shard where an SPMD graph pads it (semantics §7),
 * else the whole tensor. */
static void valid_extent(const struct dt_module *m, uint32_t node, int rank,
			 const struct dt_rt_tensor *t, int64_t *n)
{
	memcpy(n, t->shape, (size_t)t->rank * sizeof *n);
	const struct dt_sharding *sh =
		node ? dt_node_sharding(m, dt_node_get(m, node)) : NULL;
	if (!sh || !sh->has_global_shape || m->rank >= 0)
		return;
	const struct dt_mesh *mesh = &m->meshes.data[sh->mesh];
	int64_t pos = dt_mesh_position(mesh, rank);
	int grank;
	const int64_t *g = dt_ints_get(m, sh->global_shape, &grank);
	if (pos >= 0 && grank == t->rank)
		dt_shard_shape(mesh, &sh->placements, pos, g, grank, n);
}

/* This rank's output a against b, into the statistics st, over the
 * leading n[0..a->rank) of each dim (the valid part of a padded one). */
static void compare_outputs(const struct dt_rt_tensor *a,
			    const struct dt_rt_tensor *b, const int64_t *n,
			    double *st)
{
	if (!a->buf && !b->buf)
		return; /* none in both */
	if (!a->buf || !b->buf || a->dtype != b->dtype || a->rank != b->rank ||
	    memcmp(a->shape, b->shape, a->rank * sizeof(int64_t)) != 0) {
		st[ST_SHAPE] += 1;
		return;
	}
	int64_t size = dt_dtype_size((enum dt_dtype)a->dtype);
	int64_t stride[DT_MAX_RANK], at[DT_MAX_RANK] = {0}, count = 1;
	dt_contiguous_strides(a->shape, a->rank, stride);
	for (int d = 0; d < a->rank; d++)
		count *= n[d];
	const char *pa = (const char *)a->buf->data + a->offset * size;
	const char *pb = (const char *)b->buf->data + b->offset * size;
	double *va = dt_cli_values(a), *vb = dt_cli_values(b);
	bool bits = true;
	for (int64_t k = 0; k < count; k++) {
		int64_t off = 0;
		for (int d = 0; d < a->rank; d++)
			off += at[d] * stride[d];
		bits = bits && memcmp(pa + off * size, pb + off * size,
				      (size_t)size) == 0;
		compare_element(st, (enum dt_dtype)a->dtype, va[off], vb[off]);
		for (int d = a->rank - 1; d >= 0 && ++at[d] == n[d]; d--)
			at[d] = 0;
	}
	st[ST_NOTBITS] += !bits;
	dt_free(va);
	dt_free(vb);
}

int dt_runner_compare(struct dt_runner *c)
{
	struct dt_module *m[2] = {NULL, NULL};
	int code = dt_runner_load(c, c->o.paths, 2, m, -1);
	if (code == DT_EXIT_OK) {
		bool same = same_placeholders(c, m[0], m[1], false, false) &&
			    same_placeholders(c, m[1], m[0], false, true);
		code = dt_runner_agree(c, same ? DT_EXIT_OK : DT_EXIT_INPUT);
	}
	struct dt_run_options ro = {.seed = c->o.seed, .iters = 1};
	struct dt_run_result ra = {0}, rb = {0};
	if (code == DT_EXIT_OK)
		code = dt_runner_execute(c, m[0], false, &ro, &ra);
	if (code == DT_EXIT_OK)
		code = dt_runner_execute(c, m[1], false, &ro, &rb);
	if (code == DT_EXIT_OK && ra.noutputs != rb.noutputs) {
		dt_diag_report(&c->diag, DT_ERROR, m[1]->file, 0, NULL,
			       "%u outputs, but %s has %u", rb.noutputs,
			       m[0]->file, ra.noutputs);
		code = dt_runner_agree(c, DT_EXIT_INPUT);
	}
	if (code == DT_EXIT_OK) {
		struct report rep;
		report_init(&rep, "compare", m[0], &ra);
		if (c->rank == 0)
			printf("%s vs %s on %d rank%s (seed %llu):\n",
			       m[0]->file, m[1]->file, c->size,
			       c->size > 1 ? "s" : "",
			       (unsigned long long)c->o.seed);
		uint32_t na, nb;
		uint32_t *ia = dt_cli_outputs(m[0], &na);
		uint32_t *ib = dt_cli_outputs(m[1], &nb);
		for (uint32_t i = 0; i < ra.noutputs; i++) {
			int64_t va[DT_MAX_RANK], vb[DT_MAX_RANK];
			valid_extent(m[0], i < na ? ia[i] : 0, c->rank,
				     &ra.outputs[i], va);
			valid_extent(m[1], i < nb ? ib[i] : 0, c->rank,
				     &rb.outputs[i], vb);
			if (ra.outputs[i].rank == rb.outputs[i].rank &&
			    memcmp(va, vb, (size_t)ra.outputs[i].rank *
						   sizeof *va) != 0)
				rep.st[i][ST_SHAPE] += 1;
			else
				compare_outputs(&ra.outputs[i], &rb.outputs[i],
						va, rep.st[i]);
		}
		dt_free(ia);
		dt_free(ib);
		code = finish_report(c, &rep);
		report_fini(&rep);
	}
	dt_run_result_fini(&ra);
	dt_run_result_fini(&rb);
	dt_module_destroy(m[0]);
	dt_module_destroy(m[1]);
	return code;
}

static bool has_partial(const struct dt_placements *pl)
{
	for (int k = 0; k < pl->ndim; k++)
		if (pl->p[k].kind == DT_PL_PARTIAL)
			return true;
	return false;
}

/* The true value of a Partial output: reduce the n local values v over
 * the output's Partial mesh dims, in float64 (collective over the world:
 * every rank calls it for the same outputs); avg divides the sum by the
 * product of its dims' sizes. */
static void reduce_partial(struct dt_runner *c, const struct dt_module *m,
			   const struct dt_sharding *sh, double *v, int64_t n)
{
	const struct dt_mesh *mesh = &m->meshes.data[sh->mesh];
	uint8_t dims[DT_MAX_MESH_DIMS];
	int nd = 0;
	double avg = 1;
	enum dt_reduce_op op = DT_REDUCE_SUM;
	for (int k = 0; k < mesh->ndim; k++) {
		const struct dt_placement *p = &sh->placements.p[k];
		if (p->kind != DT_PL_PARTIAL)
			continue;
		dims[nd++] = (uint8_t)k;
		if (p->reduce == DT_REDUCE_AVG)
			avg *= (double)mesh->shape[k];
		else if (p->reduce != DT_REDUCE_SUM)
			op = (enum dt_reduce_op)p->reduce;
	}
#if DTOPT_HAVE_MPI
	int64_t instance = 0, pos = 0;
	bool member = dt_group_locate(mesh, dims, nd, c->rank, &instance,
				      &pos);
	MPI_Comm comm = MPI_COMM_NULL;
	dt_runner_step(c, "splitting a Partial output's communicator");
	if (c->size > 1)
		MPI_Comm_split(MPI_COMM_WORLD,
			       member ? (int)instance : MPI_UNDEFINED,
			       (int)pos, &comm);
	dt_runner_step(c, NULL);
	if (comm != MPI_COMM_NULL) {
		DT_REQUIRE(n <= INT32_MAX);
		MPI_Op mop = op == DT_REDUCE_MAX	 ? MPI_MAX
			     : op == DT_REDUCE_MIN	 ? MPI_MIN
			     : op == DT_REDUCE_PRODUCT ? MPI_PROD
						       : MPI_SUM;
		MPI_Request req;
		MPI_Iallreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, mop, comm,
			       &req);
		dt_runner_wait(c, &req, "reducing a Partial output");
		MPI_Comm_free(&comm);
	}
#else
	(void)c, (void)dims, (void)nd, (void)op; /* alone: groups of size 1 */
#endif
	for (int64_t k = 0; v && k < n; k++)
		v[k] /= avg;
}

/* Per tensor dim d, the global indices of the reference that the rank at
 * mesh coordinates `coord` holds (all of them without a sharding), n[d]
 * of them; false when they do not give the local shape (exactly, or as
 * the leading part of an SPMD graph's padded shape, semantics §7).
 * idx[d] is dt_malloc'ed. */
static bool shard_index_maps(const struct dt_module *m,
			     const struct dt_sharding *sh,
			     const struct dt_mesh *mesh, const int64_t *coord,
			     const struct dt_rt_tensor *loc,
			     const struct dt_rt_tensor *ref, int64_t **idx,
			     int64_t *n)
{
	bool fits = true;
	int64_t padded[DT_MAX_RANK];
	if (sh && m->rank < 0)
		dt_shard_shape(mesh, &sh->placements, -1, ref->shape, ref->rank,
			       padded);
	for (int d = 0; d < ref->rank; d++) {
		int64_t len = ref->shape[d];
		n[d] = len;
		idx[d] = dt_malloc((size_t)(len + 1) * sizeof(int64_t));
		if (sh)
			dt_shard_indices(&sh->placements, mesh->shape, coord,
					 d, len, idx[d], &n[d]);
		else
			for (int64_t k = 0; k < len; k++)
				idx[d][k] = k;
		fits = fits && (n[d] == loc->shape[d] ||
				(sh && m->rank < 0 && n[d] < loc->shape[d] &&
				 loc->shape[d] == padded[d]));
	}
	return fits;
}

/* Whether ref has loc's dtype and rank and the output's global shape. */
static bool reference_fits(const struct dt_module *m,
			   const struct dt_sharding *sh,
			   const struct dt_rt_tensor *loc,
			   const struct dt_rt_tensor *ref)
{
	if (loc->dtype != ref->dtype || loc->rank != ref->rank)
		return false;
	if (!sh || !sh->has_global_shape)
		return true;
	int rank;
	const int64_t *g = dt_ints_get(m, sh->global_shape, &rank);
	return rank == ref->rank &&
	       memcmp(g, ref->shape, (size_t)rank * sizeof(int64_t)) == 0;
}

/* Compare this rank's output `loc` (the value of node `node`, 0 for
 * none) with its shard of the reference output `ref`. */
static void compare_shard(struct dt_runner *c, const struct dt_module *m,
			  uint32_t node, const struct dt_rt_tensor *loc,
			  const struct dt_rt_tensor *ref, double *st)
{
	const struct dt_sharding *sh =
		node ? dt_node_sharding(m, dt_node_get(m, node)) : NULL;
	double *lv = dt_cli_values(loc);
	if (sh && has_partial(&sh->placements))
		reduce_partial(c, m, sh, lv, loc->buf ? dt_rt_numel(loc) : 0);
	const struct dt_mesh *mesh = sh ? &m->meshes.data[sh->mesh] : NULL;
	int64_t pos = mesh ? dt_mesh_position(mesh, c->rank) : 0;
	if (pos < 0 || (!loc->buf && !ref->buf)) {
		dt_free(lv); /* not in the output's mesh, or none in both */
		return;
	}
	if (!loc->buf || !ref->buf || !reference_fits(m, sh, loc, ref)) {
		st[ST_SHAPE] += 1;
		dt_free(lv);
		return;
	}
	int64_t coord[DT_MAX_MESH_DIMS] = {0}, *idx[DT_MAX_RANK];
	int64_t stride[DT_MAX_RANK], lstride[DT_MAX_RANK], at[DT_MAX_RANK] = {0};
	int64_t n[DT_MAX_RANK]; /* the valid (unpadded) extent of loc */
	if (mesh)
		dt_mesh_coords(mesh, pos, coord);
	dt_contiguous_strides(ref->shape, ref->rank, stride);
	dt_contiguous_strides(loc->shape, loc->rank, lstride);
	bool fits = shard_index_maps(m, sh, mesh, coord, loc, ref, idx, n);
	st[ST_SHAPE] += !fits;
	double *rv = dt_cli_values(ref);
	int64_t count = fits ? 1 : 0;
	for (int d = 0; d < ref->rank; d++)
		count *= n[d];
	for (int64_t k = 0; k < count; k++) {
		int64_t off = 0, loff = 0;
		for (int d = 0; d < ref->rank; d++) {
			off += idx[d][at[d]] * stride[d];
			loff += at[d] * lstride[d];
		}
		compare_element(st, (enum dt_dtype)loc->dtype, lv[loff], rv[off]);
		for (int d = ref->rank - 1; d >= 0 && ++at[d] == n[d]; d--)
			at[d] = 0;
	}
	for (int d = 0; d < ref->rank; d++)
		dt_free(idx[d]);
	dt_free(lv);
	dt_free(rv);
}

/* The pipeline --check GLOBAL lowers with, on each rank for that rank,
 * after shard-prop ran on rank 0 (propagate_once). */
#define DT_CHECK_LOWERING \
	"verify,shape-infer,lower-redistribute,fuse-collectives," \
	"bucket-collectives,schedule-collectives,cancel-views,dce"

/* shard-prop on rank 0 only, its graph sent to every rank, which reads it
 * into m[0] (rank 0 too, so every rank lowers the same text): the
 * whole-graph search runs once, not once per rank (each would take 2
 * threads on an oversubscribed host), and every rank lowers the same
 * plan. Returns the agreed exit code. */
static int propagate_once(struct dt_runner *c, struct dt_module **m)
{
	char *text = NULL;
	size_t len = 0;
	int code = DT_EXIT_OK;
	if (c->rank == 0) {
		struct dt_pipeline p;
		struct dt_pipeline_options popt = {.verify_each = true};
		DT_REQUIRE(dt_pipeline_parse(&p, "shard-prop", &c->diag) ==
			   DT_OK);
		code = dt_exit_code(dt_pipeline_run(*m, &p, &popt, &c->diag));
		FILE *f = open_memstream(&text, &len);
		if (code == DT_EXIT_OK)
			dt_write_stream(*m, f);
		fclose(f);
	}
	code = dt_runner_agree(c, code);
	if (code == DT_EXIT_OK) {
		char *all = dt_runner_bcast_string(c, text);
		/* messages from here name the propagated text's lines (what
		 * `dtopt opt -p shard-prop GLOBAL` writes), not GLOBAL's */
		size_t n = strlen((*m)->file) + sizeof " (after shard-prop)";
		char *file = dt_malloc(n);
		snprintf(file, n, "%s (after shard-prop)", (*m)->file);
		dt_module_destroy(*m);
		*m = NULL;
		struct dt_read_options ropt = {0};
		code = dt_exit_code(dt_read_memory(all, strlen(all), file,
						   &ropt, &c->diag, m));
		dt_free(file);
		dt_free(all);
		code = dt_runner_agree(c, code);
	}
	free(text);
	return code;
}

/* --check GLOBAL: load GLOBAL twice; m[1] stays the reference, m[0] is
 * lowered for this rank (per rank, so uneven shards work; no groups are
 * created), or with --spmd to the one program of every rank. Returns the
 * agreed exit code. */
static int load_lowered(struct dt_runner *c, struct dt_module **m)
{
	const char *path = c->o.paths[0];
	int code = dt_runner_load(c, &path, 1, &m[1], 0);
	if (code == DT_EXIT_OK)
		code = dt_runner_load(c, &path, 1, &m[0], 0);
	if (code != DT_EXIT_OK)
		return code;
	if (m[0]->view != DT_VIEW_GLOBAL) {
		dt_diag_report(&c->diag, DT_ERROR, m[0]->file, 0, NULL,
			       "--check GRAPH lowers a global-view graph; "
			       "check a local one against its global graph "
			       "with --check --reference GLOBAL.xml LOCAL.xml");
		return dt_runner_agree(c, DT_EXIT_INPUT);
	}
	code = propagate_once(c, &m[0]);
	if (code != DT_EXIT_OK)
		return code;
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {.verify_each = true};
	popt.pass.rank = c->o.spmd ? -1 : c->rank;
	DT_REQUIRE(dt_pipeline_parse(&p, DT_CHECK_LOWERING, &c->diag) == DT_OK);
	code = dt_exit_code(dt_pipeline_run(m[0], &p, &popt, &c->diag));
	return dt_runner_agree(c, code);
}

/* Load LOCAL and GLOBAL (or, for --check GLOBAL, lower GLOBAL); GLOBAL
 * must be global-view and LOCAL's placeholders shards of its inputs.
 * Returns the agreed exit code. */
static int load_check(struct dt_runner *c, struct dt_module **m)
{
	const char *paths[2] = {c->o.paths[0], c->o.reference};
	int code = c->o.reference ? dt_runner_load(c, paths, 2, m, 1)
				  : load_lowered(c, m);
	if (code != DT_EXIT_OK)
		return code;
	if (m[1]->view != DT_VIEW_GLOBAL) {
		dt_diag_report(&c->diag, DT_ERROR, m[1]->file, 0, NULL,
			       "the reference of --check must be a "
			       "global-view graph");
		code = DT_EXIT_INPUT;
	} else if (!same_placeholders(c, m[0], m[1], true, false)) {
		code = DT_EXIT_INPUT;
	}
	return dt_runner_agree(c, code);
}

/* --check --reference GLOBAL LOCAL: every rank runs LOCAL (MPI) and the
 * global-view GLOBAL alone on the CPU backend with the full inputs, and
 * compares its output shards with the matching slices. --check GLOBAL:
 * the same with LOCAL = GLOBAL lowered for this rank. */
int dt_runner_check(struct dt_runner *c)
{
	struct dt_module *m[2] = {NULL, NULL};
	int code = load_check(c, m);
	struct dt_run_options ro = {.seed = c->o.seed, .iters = 1};
	struct dt_run_result rl = {0}, rg = {0};
	if (code == DT_EXIT_OK)
		code = dt_runner_execute(c, m[0], false, &ro, &rl);
	if (code == DT_EXIT_OK)
		code = dt_runner_execute(c, m[1], true, &ro, &rg);
	if (code == DT_EXIT_OK && rl.noutputs != rg.noutputs) {
		dt_diag_report(&c->diag, DT_ERROR, m[0]->file, 0, NULL,
			       "%u outputs, but the reference %s has %u",
			       rl.noutputs, m[1]->file, rg.noutputs);
		code = dt_runner_agree(c, DT_EXIT_INPUT);
	}
	if (code == DT_EXIT_OK) {
		struct report rep;
		report_init(&rep, "check", m[0], &rl);
		uint32_t n;
		uint32_t *ids = dt_cli_outputs(m[0], &n);
		if (c->rank == 0 && !c->o.reference)
			printf("%s lowered %s %d rank%s vs its "
			       "single-rank run (seed %llu):\n", m[1]->file,
			       c->o.spmd ? "to one program for"
					 : "for each of",
			       c->size, c->size > 1 ? "s" : "",
			       (unsigned long long)c->o.seed);
		else if (c->rank == 0)
			printf("%s on %d rank%s vs the reference %s "
			       "(seed %llu):\n", m[0]->file, c->size,
			       c->size > 1 ? "s" : "", m[1]->file,
			       (unsigned long long)c->o.seed);
		for (uint32_t i = 0; i < rl.noutputs; i++) {
			uint32_t id = i < n ? ids[i] : 0;
			const struct dt_node *node = dt_node_get(m[0], id);
			const struct dt_sharding *sh =
				id ? dt_node_sharding(m[0], node) : NULL;
			if (sh) {
				char pl[64];
				dt_placements_print(&sh->placements, pl,
						    sizeof(pl));
				snprintf(rep.notes[i], sizeof(rep.notes[i]),
					 "%s%s", pl,
					 has_partial(&sh->placements)
						 ? " (all-reduced first, in "
						   "float64)"
						 : "");
			}
			compare_shard(c, m[0], id, &rl.outputs[i],
				      &rg.outputs[i], rep.st[i]);
		}
		code = finish_report(c, &rep);
		report_fini(&rep);
		dt_free(ids);
	}
	dt_run_result_fini(&rl);
	dt_run_result_fini(&rg);
	dt_module_destroy(m[0]);
	dt_module_destroy(m[1]);
	return code;
}
