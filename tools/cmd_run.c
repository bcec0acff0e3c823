// SPDX-License-Identifier: MIT
/* cmd_run.c: the `run` subcommand: runs a graph with the interpreter on
 * every rank of an MPI job (or alone on the CPU backend), prints or writes
 * its outputs, and proves graphs equal by running them (--compare, --check).
 *
 * Failure discipline under mpirun: before the interpreter runs, every step
 * ends in an agreement (an all-reduce of the exit code), so all ranks stop
 * together and rank 0 prints each distinct diagnostic once. A failure
 * inside a run may leave peers waiting in a collective, so the failing rank
 * prints its message and exits with the exit code without finalizing:
 * mpirun then ends the job (MPI_Abort would too, but two ranks calling it
 * at once can crash OpenMPI 4's mpirun in pmix_server_log). The CLI's own
 * MPI calls (agreements, gathers) keep MPI_COMM_WORLD's default handler:
 * an MPI failure there ends the job. A plain run is cmd_run_plain.c's,
 * --compare and --check are cmd_run_compare.c's. */
#include "cmd_run.h"
#include "dtopt_config.h"
#include "frontend.h"
#include "passes.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#if DTOPT_HAVE_MPI
#include <mpi.h>
#endif
#if DTOPT_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

/* --backend nccl (or its default): runs use the NCCL+CUDA backend. Set
 * once by parse_args for this process's one `run` command. */
static bool use_nccl;

/* --timeout's default: generous for a CPU interpreter on big tensors
 * (PyTorch's NCCL watchdog waits 10 minutes). */
#define DT_RUN_TIMEOUT 300

/* ------------------------------------------------------------------ */
/* Diagnostics and agreement. */

static void emit(void *ud, const struct dt_diag_entry *e)
{
	struct dt_runner *c = ud;
	if (c->held) {
		dt_diag_format(e, c->held);
		fputc('\n', c->held);
		return;
	}
	/* one write, so that ranks printing at once do not interleave */
	char *text = NULL;
	size_t len = 0;
	FILE *line = open_memstream(&text, &len);
	dt_diag_format(e, line);
	if (c->size > 1 && e->severity == DT_ERROR)
		fprintf(line, " (rank %d)", c->rank);
	fputc('\n', line);
	fclose(line);
	fwrite(text, 1, len, stderr);
	free(text);
}

static void hold_diagnostics(struct dt_runner *c, bool hold)
{
	if (c->held) {
		fclose(c->held);
		free(c->held_text);
		c->held = NULL;
		c->held_text = NULL;
	}
	if (hold && c->size > 1)
		c->held = open_memstream(&c->held_text, &c->held_len);
}

char **dt_runner_gather_strings(struct dt_runner *c, const char *s)
{
	char **all = c->rank == 0 ? dt_calloc((size_t)c->size, sizeof(char *))
				  : NULL;
	if (c->size == 1) {
		all[0] = dt_strdup(s);
		return all;
	}
#if DTOPT_HAVE_MPI
	int len = (int)strlen(s) + 1, *lens = NULL, *displs = NULL;
	char *text = NULL;
	if (c->rank == 0) {
		lens = dt_calloc((size_t)c->size, sizeof(int));
		displs = dt_calloc((size_t)c->size, sizeof(int));
	}
	MPI_Request req;
	MPI_Igather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD,
		    &req);
	dt_runner_wait(c, &req, "a gather");
	int64_t total = 0;
	for (int r = 0; c->rank == 0 && r < c->size; r++) {
		displs[r] = (int)total;
		total += lens[r];
	}
	if (c->rank == 0)
		text = dt_malloc((size_t)total);
	MPI_Igatherv(s, len, MPI_CHAR, text, lens, displs, MPI_CHAR, 0,
		     MPI_COMM_WORLD, &req);
	dt_runner_wait(c, &req, "a gather");
	for (int r = 0; c->rank == 0 && r < c->size; r++)
		all[r] = dt_strdup(text + displs[r]);
	dt_free(text);
	dt_free(lens);
	dt_free(displs);
#endif
	return all;
}

char *dt_runner_bcast_string(struct dt_runner *c, const char *s)
{
	if (c->size == 1)
		return dt_strdup(s);
	char *text = NULL;
#if DTOPT_HAVE_MPI
	/* a graph's text: within an int, as MPI counts it */
	int len = c->rank == 0 ? (int)strlen(s) + 1 : 0;
	MPI_Request req;
	MPI_Ibcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
	dt_runner_wait(c, &req, "a broadcast");
	text = c->rank == 0 ? dt_strdup(s) : dt_malloc((size_t)len);
	MPI_Ibcast(text, len, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
	dt_runner_wait(c, &req, "a broadcast");
#endif
	return text;
}

void dt_runner_free_strings(struct dt_runner *c, char **all)
{
	for (int r = 0; all && r < c->size; r++)
		dt_free(all[r]);
	dt_free(all);
}

/* Combine every rank's exit code (the worst wins, on every rank) and print
 * the diagnostics held since the last agreement: rank 0's, then each other
 * rank's that differ from them. */
int dt_runner_agree(struct dt_runner *c, int code)
{
	if (c->size == 1)
		return code;
	fflush(c->held);
	char **all = dt_runner_gather_strings(c, c->held_text ? c->held_text : "");
	if (all) {
		fputs(all[0], stderr);
		for (int r = 1; r < c->size; r++)
			if (*all[r] && strcmp(all[r], all[0]) != 0)
				fprintf(stderr, "dtopt run: rank %d said:\n%s",
					r, all[r]);
	}
	dt_runner_free_strings(c, all);
	hold_diagnostics(c, true);
	int worst = code;
#if DTOPT_HAVE_MPI
	MPI_Request req;
	MPI_Iallreduce(&code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
		       &req);
	dt_runner_wait(c, &req, "an agreement");
#endif
	return worst;
}

/* A failure inside a run on this rank: peers may wait for it in a
 * collective, so end the whole job. Returns `code` when alone. */
static int fail_run(struct dt_runner *c, int code)
{
#if DTOPT_HAVE_MPI
	if (c->size > 1) {
		fprintf(stderr, "dtopt run: rank %d of %d failed; ending the "
			"job (exit code %d)\n", c->rank, c->size, code);
		dt_runner_end_job(code);
	}
#endif
	return code;
}

/* Sum (or max) doubles over the ranks, in place, on every rank. */
void dt_runner_allreduce(struct dt_runner *c, double *v, int n, bool max)
{
#if DTOPT_HAVE_MPI
	if (c->size > 1) {
		MPI_Request req;
		MPI_Iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE,
			       max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD, &req);
		dt_runner_wait(c, &req, "an all-reduce");
	}
#else
	(void)c, (void)v, (void)n, (void)max;
#endif
}

/* ------------------------------------------------------------------ */
/* Graphs. */

char *dt_cli_concat3(const char *a, size_t na, const char *b, const char *c)
{
	size_t nb = strlen(b), nc = strlen(c);
	char *s = dt_malloc(na + nb + nc + 1);
	memcpy(s, a, na);
	memcpy(s + na, b, nb);
	memcpy(s + na + nb, c, nc + 1);
	return s;
}

/* Load `tmpl` ("{rank}" replaced by this rank, for per-rank graphs) and
 * complete its metadata with verify,shape-infer. */
static int load_graph(struct dt_runner *c, const char *tmpl,
		      struct dt_module **out)
{
	char rank[16];
	snprintf(rank, sizeof(rank), "%d", c->rank);
	const char *at = strstr(tmpl, "{rank}");
	char *path = at ? dt_cli_concat3(tmpl, (size_t)(at - tmpl), rank, at + 6)
			: dt_strdup(tmpl);
	struct dt_read_options ropt = {0};
	int rc = dt_read_file(path, &ropt, &c->diag, out);
	dt_free(path);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	struct dt_module *m = *out;
	if (m->rank >= 0 && m->rank != c->rank) {
		dt_diag_report(&c->diag, DT_ERROR, m->file, 1, NULL,
			       "this is the graph of rank %d, but it runs on "
			       "rank %d (name per-rank graphs with {rank} in "
			       "the path)", m->rank, c->rank);
		return DT_EXIT_INPUT;
	}
	struct dt_pipeline p;
	struct dt_pipeline_options popt = {0};
	DT_REQUIRE(dt_pipeline_parse(&p, "verify,shape-infer", &c->diag) ==
		   DT_OK);
	return dt_exit_code(dt_pipeline_run(m, &p, &popt, &c->diag));
}

/* Load every graph on every rank; all succeed or all stop. Only graph
 * `global_ok` (-1: none) may be global-view when several ranks run. */
int dt_runner_load(struct dt_runner *c, const char *const *paths, int n,
		    struct dt_module **m, int global_ok)
{
	int code = DT_EXIT_OK;
	for (int i = 0; i < n && code == DT_EXIT_OK; i++)
		code = load_graph(c, paths[i], &m[i]);
	for (int i = 0; i < n && code == DT_EXIT_OK; i++) {
		if (m[i]->view != DT_VIEW_GLOBAL || c->size == 1 ||
		    i == global_ok)
			continue;
		dt_diag_report(&c->diag, DT_ERROR, m[i]->file, 0, NULL,
			       "a global-view graph runs on one process (the "
			       "single-rank reference, --backend cpu); on %d "
			       "ranks lower it first (dtopt opt -p "
			       "lower-redistribute -o 'LOCAL.{rank}.xml'), or "
			       "check it with --check GLOBAL.xml", c->size);
		code = DT_EXIT_USAGE;
	}
	return dt_runner_agree(c, code);
}

uint32_t *dt_cli_outputs(const struct dt_module *m, uint32_t *n)
{
	DT_VEC(uint32_t) ids = {0};
	dt_foreach_node(m, id) {
		const struct dt_node *node = dt_node_get(m, id);
		if (node->kind != DT_NODE_OUTPUT || node->nargs == 0)
			continue;
		const struct dt_arg *a = dt_node_arg(m, node, 0);
		if (a->kind == DT_ARG_NODE)
			dt_vec_push(&ids, a->v.node);
		for (uint32_t k = 0; a->kind == DT_ARG_NODES && k < a->len; k++)
			dt_vec_push(&ids, m->refs.data[a->v.first + k]);
		for (uint32_t k = 0; a->kind == DT_ARG_ITEMS && k < a->len;
		     k++) {
			const struct dt_arg *it = &m->args.data[a->v.first + k];
			dt_vec_push(&ids,
				    it->kind == DT_ARG_NODE ? it->v.node : 0);
		}
	}
	*n = ids.len;
	dt_vec_push(&ids, 0); /* never NULL */
	return ids.data;
}

const char *dt_cli_output_name(const struct dt_module *m, const uint32_t *ids,
			       uint32_t n, uint32_t i)
{
	return i < n && ids[i] ? dt_str_get(m, dt_node_get(m, ids[i])->name)
			       : "(none)";
}

/* Every element of a contiguous host tensor as a double (NULL for none). */
double *dt_cli_values(const struct dt_rt_tensor *t)
{
	if (!t->buf)
		return NULL;
	int64_t n = dt_rt_numel(t);
	double *v = dt_malloc((size_t)(n ? n : 1) * sizeof(double));
	int size = dt_dtype_size((enum dt_dtype)t->dtype);
	const char *p = (const char *)t->buf->data + t->offset * size;
	for (int64_t i = 0; i < n; i++)
		v[i] = dt_load_element((enum dt_dtype)t->dtype, p + i * size);
	return v;
}

/* ------------------------------------------------------------------ */
/* Running. */

/* Release a backend's communicators under the watchdog. */
static void destroy(struct dt_runner *c, struct dt_backend *b)
{
	dt_runner_step(c, "releasing the communicators");
	b->ops->destroy(b);
	dt_runner_step(c, NULL);
}

/* Run `m` on a fresh backend: the NCCL one (--backend nccl or its
 * default), the MPI one, or the single-process CPU one (alone, or for the
 * global reference). Backend creation and reference runs fail alike on
 * every rank and end in an agreement; a failure inside an MPI or NCCL run
 * ends the job (fail_run). */
int dt_runner_execute(struct dt_runner *c, struct dt_module *m, bool reference,
		   const struct dt_run_options *ro, struct dt_run_result *res)
{
	memset(res, 0, sizeof(*res));
	bool gpu = use_nccl && !reference;
	/* a rank of a job (MPI or NCCL): peers may wait on it */
	bool mpi = (c->o.mpi || gpu) && !reference;
	struct dt_backend *b = NULL;
	dt_runner_step(c, "creating the communicators");
#if DTOPT_HAVE_NCCL
	if (gpu)
		b = dt_backend_nccl_create(m, &c->diag);
#endif
#if DTOPT_HAVE_MPI
	if (mpi && !gpu)
		b = dt_backend_mpi_create(m, &c->diag);
#endif
	dt_runner_step(c, NULL);
	if (!mpi)
		b = dt_backend_cpu_create(&c->diag);
	int code = dt_runner_agree(c, b ? DT_EXIT_OK : DT_EXIT_RUNTIME);
	if (code != DT_EXIT_OK) {
		if (b)
			destroy(c, b);
		return code;
	}
	b->timeout = c->o.timeout;
	if (c->o.spin >= 0)
		b->spin = c->o.spin;
#if DTOPT_HAVE_MPI
	if (mpi && c->size > 1) {
		dt_runner_step(c, "comparing collective sequences");
		int rc = dt_collectives_agree(m, &c->diag, c->o.timeout);
		dt_runner_step(c, NULL);
		code = dt_runner_agree(c, dt_exit_code(rc));
	}
#endif
	if (code == DT_EXIT_OK)
		code = dt_runner_agree(c, dt_runner_check_memory(c, m, b, gpu));
	if (code != DT_EXIT_OK) {
		destroy(c, b);
		return code;
	}
	if (mpi)
		hold_diagnostics(c, false);
	int rc = dt_interpret(m, b, ro, res);
	destroy(c, b);
	if (rc != DT_OK && mpi)
		return fail_run(c, dt_exit_code(rc));
	if (mpi)
		hold_diagnostics(c, true);
	return dt_runner_agree(c, dt_exit_code(rc));
}


/* ------------------------------------------------------------------ */
/* The command line. */

static const char run_help[] =
	"usage: mpirun -np N dtopt run GRAPH.xml [options]\n"
	"       mpirun -np N dtopt run --compare A.xml B.xml [--seed S]\n"
	"       mpirun -np N dtopt run --check GLOBAL.xml [--spmd]\n"
	"       mpirun -np N dtopt run --check --reference GLOBAL.xml LOCAL.xml\n\n"
	"Runs a local-view graph with the interpreter, one process per rank (N must\n"
	"equal the mesh's device count). Inputs are generated from (seed, placeholder\n"
	"name, global element index), so every rank gets its shard of the same\n"
	"global tensors. '{rank}' in a path is replaced by the rank (per-rank graphs).\n\n"
	"  --backend=nccl|mpi|cpu\n"
	"                      nccl: one GPU per rank, NCCL collectives (default when\n"
	"                      built with NCCL and a GPU is visible); mpi (the default\n"
	"                      otherwise, when built with MPI); or cpu: this one\n"
	"                      process alone, without MPI (groups of size 1 only; a\n"
	"                      global-view graph runs as the single-rank reference)\n"
	"  --seed=S            input seed (default 0)\n"
	"  --iters=K           time K iterations (after --warmup=W untimed ones) and\n"
	"                      print seconds per iteration, the max over ranks\n"
	"  --trace=T.json      one Chrome/Perfetto trace, a track per rank\n"
	"  --summary           per-target time and bytes, and communication per\n"
	"                      group, summed over ranks\n"
	"  -o, --output=DIR    write DIR/rank<R>.<i>.bin (raw little-endian output i\n"
	"                      of rank R) and DIR/index.json\n"
	"  --timeout=SECONDS   the watchdog: a rank that waits longer than this for\n"
	"                      one collective (or for the other ranks) reports the\n"
	"                      node and the collective and ends the job, exit 3\n"
	"                      (default 300; 0: wait forever)\n"
	"  --spin=SECONDS      how long a rank waiting for a collective yields the\n"
	"                      CPU between tests before it sleeps 50 us between\n"
	"                      them (default 0.002 where more ranks than cores\n"
	"                      share the host, else 0.1)\n"
	"  --memory-limit=BYTES\n"
	"                      refuse to run (exit 3) when a rank's planned peak\n"
	"                      memory exceeds BYTES (suffix K, M, G, T; default:\n"
	"                      its share of the host's or GPU's free memory)\n"
	"  --compare A B       run both graphs on the same inputs (their placeholders\n"
	"                      must match by name, dtype, shape and sharding) and\n"
	"                      compare every output on every rank\n"
	"  --check GLOBAL      lower the global-view GLOBAL on each rank for that rank\n"
	"                      (verify,shape-infer,shard-prop,lower-redistribute,\n"
	"                      fuse-collectives,cancel-views,dce,\n"
	"                      bucket-collectives,schedule-collectives,\n"
	"                      cancel-views,dce; shard-prop,\n"
	"                      opt's default whole-graph search, runs on rank 0\n"
	"                      and its graph goes to every rank, whose messages\n"
	"                      name 'GLOBAL (after shard-prop):LINE' of it; uneven\n"
	"                      shards work), run it, and\n"
	"                      compare as --check --reference GLOBAL does; with\n"
	"                      --spmd, lower one SPMD program for every rank\n"
	"                      instead (semantics §7: uneven shards padded)\n"
	"  --check --reference GLOBAL LOCAL\n"
	"                      run LOCAL on the ranks and the global-view GLOBAL alone\n"
	"                      on each rank; compare each output shard with its slice\n"
	"                      of the reference (from the output's <sharding>; Partial\n"
	"                      outputs are all-reduced over their Partial dims first)\n\n"
	"Comparisons print a table on rank 0: bitwise, equal (same values), close\n"
	"(|a-b| <= tol + tol*max(|a|,|b|), tol 1e-5 float32, 1e-2 bfloat16, 1e-3\n"
	"float16, 1e-9 float64, 0 for integers and bool) or MISMATCH.\n"
	"Exit codes (the same on every rank): 0 ok, 1 bad input or a mismatch,\n"
	"2 usage, 3 runtime failure (a failing rank ends the whole job).\n";

/* Whether the launcher says this process is not rank 0 (so usage errors,
 * which every rank hits alike, are printed once). */
static bool launched_as_other_rank(void)
{
	const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(vars[i]);
		if (v)
			return strcmp(v, "0") != 0;
	}
	return false;
}

#define USAGE(...)                                                         \
	(launched_as_other_rank() ? DT_EXIT_USAGE                          \
				  : dt_usage_error("run", __VA_ARGS__))

static bool parse_int(const char *s, long long lo, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	*out = v;
	return *s && !*end && errno == 0 && v >= lo && v <= INT32_MAX;
}

/* A byte count with an optional K, M, G or T suffix (powers of 1024). */
static bool parse_bytes(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	const char *units = "KMGT";
	const char *u = *end ? strchr(units, *end) : NULL;
	int shift = u ? 10 * (int)(u - units + 1) : 0;
	if (u)
		end++;
	if (*s < '0' || *s > '9' || *end || errno || v == 0 ||
	    v > (SIZE_MAX >> shift))
		return false;
	*out = (size_t)v << shift;
	return true;
}

/* Whether the NCCL backend is built and this process sees a GPU. */
static bool gpu_visible(void)
{
#if DTOPT_HAVE_NCCL
	int count = 0;
	return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
	return false;
#endif
}

/* Fills *o; returns -1 to go on, or the exit code. */
static int parse_args(struct dt_runner_opts *o, int argc, char **argv)
{
	static const struct option longopts[] = {
		{"backend", required_argument, NULL, 'B'},
		{"seed", required_argument, NULL, 's'},
		{"iters", required_argument, NULL, 'i'},
		{"warmup", required_argument, NULL, 'w'},
		{"trace", required_argument, NULL, 't'},
		{"summary", no_argument, NULL, 'S'},
		{"out", required_argument, NULL, 'o'},
		{"output", required_argument, NULL, 'o'},
		{"compare", no_argument, NULL, 'C'},
		{"check", no_argument, NULL, 'K'},
		{"reference", required_argument, NULL, 'R'},
		{"spmd", no_argument, NULL, 'P'},
		{"timeout", required_argument, NULL, 'T'},
		{"memory-limit", required_argument, NULL, 'M'},
		{"spin", required_argument, NULL, 'Y'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	memset(o, 0, sizeof(*o));
	o->mpi = DTOPT_HAVE_MPI;
	use_nccl = false;
	bool chosen = false; /* --backend given */
	o->iters = 1;
	o->timeout = DT_RUN_TIMEOUT;
	o->spin = -1;
	long long v;
	char *end;
	int ch;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'B':
			chosen = true;
			use_nccl = strcmp(optarg, "nccl") == 0;
			if (use_nccl && !DTOPT_HAVE_NCCL)
				return USAGE("dtopt was built without NCCL");
			o->mpi = use_nccl ? DTOPT_HAVE_MPI : strcmp(optarg, "mpi") == 0;
			if (!use_nccl && !o->mpi && strcmp(optarg, "cpu") != 0)
				return USAGE("unknown backend '%s' (nccl, mpi, cpu)",
					     optarg);
			if (!use_nccl && o->mpi && !DTOPT_HAVE_MPI)
				return USAGE("dtopt was built without MPI");
			break;
		case 's':
			errno = 0;
			o->seed = strtoull(optarg, &end, 0);
			if (!*optarg || *end || errno || *optarg == '-')
				return USAGE("--seed needs an integer >= 0");
			break;
		case 'i':
			if (!parse_int(optarg, 1, &v))
				return USAGE("--iters needs an integer >= 1");
			o->iters = (int)v;
			o->timed = true;
			break;
		case 'w':
			if (!parse_int(optarg, 0, &v))
				return USAGE("--warmup needs an integer >= 0");
			o->warmup = (int)v;
			break;
		case 't': o->trace = optarg; break;
		case 'S': o->summary = true; break;
		case 'o': o->out_dir = optarg; break;
		case 'C': o->compare = true; break;
		case 'K': o->check = true; break;
		case 'R': o->reference = optarg; break;
		case 'P': o->spmd = true; break;
		case 'T':
			errno = 0;
			o->timeout = strtod(optarg, &end);
			if (!*optarg || *end || errno || !(o->timeout >= 0) ||
			    o->timeout > 1e9)
				return USAGE("--timeout needs seconds >= 0 (0: "
					     "no limit)");
			break;
		case 'Y':
			errno = 0;
			o->spin = strtod(optarg, &end);
			if (!*optarg || *end || errno || !(o->spin >= 0) ||
			    o->spin > 1e9)
				return USAGE("--spin needs seconds >= 0");
			break;
		case 'M':
			if (!parse_bytes(optarg, &o->memory_limit))
				return USAGE("--memory-limit needs a byte count "
					     "> 0 (suffixes K, M, G, T: powers "
					     "of 1024)");
			break;
		case 'h':
			fputs(run_help, stdout);
			return DT_EXIT_OK;
		default:
			return USAGE("unknown or incomplete option '%s'",
				     argv[optind - 1]);
		}
	}
	if (!chosen && gpu_visible())
		use_nccl = true; /* o->mpi stays: MPI still joins the ranks */
	for (int i = optind; i < argc; i++) {
		if (o->npaths == 2)
			return USAGE("too many graphs");
		o->paths[o->npaths++] = argv[i];
	}
	bool run_only = o->timed || o->warmup || o->trace || o->summary ||
			o->out_dir;
	if (o->compare && o->check)
		return USAGE("--compare and --check do not go together");
	if ((o->compare || o->check) && run_only)
		return USAGE("--iters, --warmup, --trace, --summary and --out "
			     "are for a plain run");
	if (o->reference && !o->check)
		return USAGE("--reference goes with --check");
	if (o->spmd && (!o->check || o->reference))
		return USAGE("--spmd goes with --check GLOBAL");
	if (o->compare && o->npaths != 2)
		return USAGE("--compare needs two graphs");
	if (o->check && o->npaths != 1)
		return USAGE(o->reference ? "--check --reference GLOBAL takes "
					    "one local graph"
					  : "--check takes one global-view graph");
	if (!o->compare && o->npaths != 1)
		return USAGE("expected one graph");
	return -1;
}

int dt_cmd_run(int argc, char **argv)
{
	struct dt_runner c = {.size = 1};
	int code = parse_args(&c.o, argc, argv);
	if (code >= 0)
		return code;
	dt_diag_init(&c.diag);
	c.diag.emit = emit;
	c.diag.ud = &c;
#if DTOPT_HAVE_MPI
	if (c.o.mpi) {
		dt_runner_watchdog_start(&c);
		dt_runner_step(&c, "MPI_Init");
		int err = MPI_Init(NULL, NULL);
		dt_runner_step(&c, NULL);
		if (err != MPI_SUCCESS) {
			fprintf(stderr, "dtopt run: error: MPI_Init failed\n");
			return DT_EXIT_RUNTIME;
		}
		MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
		MPI_Comm_size(MPI_COMM_WORLD, &c.size);
	}
#endif
	hold_diagnostics(&c, true);
	code = c.o.compare ? dt_runner_compare(&c)
	       : c.o.check ? dt_runner_check(&c)
			   : dt_runner_plain(&c);
	hold_diagnostics(&c, false);
#if DTOPT_HAVE_MPI
	if (c.o.mpi) {
		dt_runner_step(&c, "MPI_Finalize");
		MPI_Finalize();
		dt_runner_step(&c, NULL);
	}
#endif
	return code;
}
