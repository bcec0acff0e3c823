// SPDX-License-Identifier: MIT
/* cmd_run.h: what the files of the `run` subcommand share: the options,
 * the per-process runner (rank, world size, held diagnostics) and its
 * steps. Private to cmd_run*.c. */
#ifndef DTOPT_CMD_RUN_H
#define DTOPT_CMD_RUN_H

#include "cli.h"
#include "dtopt_config.h"
#include "runtime.h"

#if DTOPT_HAVE_MPI
#include <mpi.h>
#endif

struct dt_runner_opts {
	bool mpi;               /* --backend mpi (default when built with MPI) */
	uint64_t seed;
	int iters, warmup;
	bool timed;             /* --iters given */
	const char *trace, *out_dir, *reference;
	bool summary, compare, check;
	bool spmd;              /* --check GLOBAL --spmd: one program */
	double timeout;         /* --timeout: seconds any wait for peers may
				   take (0: no limit) */
	double spin;            /* --spin: seconds a wait yields; < 0: the
				   backend's choice */
	size_t memory_limit;    /* --memory-limit: bytes a rank may plan to
				   hold (0: the backend's memory) */
	const char *paths[2];   /* positional graphs */
	int npaths;
};

struct dt_runner {
	struct dt_runner_opts o;
	int rank, size;         /* 0 and 1 without MPI */
	struct dt_diag diag;    /* prints through the runner */
	FILE *held;             /* diagnostics held until the next agreement */
	char *held_text;
	size_t held_len;
};

/* Collective over the ranks: the worst exit code of all ranks (on every
 * rank), after rank 0 printed the diagnostics held since the last
 * agreement (its own, then any other rank's that differ). */
int dt_runner_agree(struct dt_runner *c, int code);
/* Sum (or, with max, the maximum of) n doubles over the ranks, in place,
 * on every rank. */
void dt_runner_allreduce(struct dt_runner *c, double *v, int n, bool max);
/* The memory plan (cmd_run_guard.c): DT_EXIT_RUNTIME after reporting at
 * the node of the peak when this rank's planned peak exceeds --memory-limit
 * (else the backend's memory; `gpu`: the backend is the NCCL one), else
 * DT_EXIT_OK. Not collective: agree on the result. */
int dt_runner_check_memory(struct dt_runner *c, struct dt_module *m,
			   struct dt_backend *b, bool gpu);
/* The watchdog of MPI's blocking steps (cmd_run_guard.c): start its
 * thread (with --timeout > 0), then arm it around each step: past
 * --timeout in `step` the rank prints that it waited there and exits 3
 * (mpirun then ends the job). A NULL step disarms it. */
void dt_runner_watchdog_start(struct dt_runner *c);
/* End an MPI job from this rank: flush, exit with `code` without
 * finalizing; mpirun sees a rank fail and ends the others. Not
 * MPI_Abort: two ranks calling it at once can crash OpenMPI 4's mpirun
 * (pmix_server_log), as the faults suite saw. */
_Noreturn void dt_runner_end_job(int code);
void dt_runner_step(struct dt_runner *c, const char *step);
#if DTOPT_HAVE_MPI
/* Complete nonblocking MPI request *req of `what` (for the message), or,
 * past --timeout, print that a peer rank stopped and end the job (exit
 * 3). */
void dt_runner_wait(struct dt_runner *c, MPI_Request *req, const char *what);
#endif
/* Load paths[0..n) on every rank ("{rank}" in a path is this rank) and
 * run verify,shape-infer; only graph `global_ok` (-1: none) may be
 * global-view on several ranks. Ends in an agreement; returns the exit
 * code. The caller destroys the modules (NULL where not loaded). */
int dt_runner_load(struct dt_runner *c, const char *const *paths, int n,
		   struct dt_module **m, int global_ok);
/* Run `m` on a fresh backend: the MPI one, or (reference, or --backend
 * cpu) the single-process CPU one. Returns the agreed exit code; a failure
 * inside an MPI run on several ranks ends the job (dt_runner_end_job). On
 * success the caller finalizes *res. */
int dt_runner_execute(struct dt_runner *c, struct dt_module *m, bool reference,
		      const struct dt_run_options *ro, struct dt_run_result *res);

/* A plain run of paths[0] (cmd_run_plain.c): prints or writes its
 * outputs and the reports asked for; returns the exit code, the same on
 * every rank. */
int dt_runner_plain(struct dt_runner *c);
/* --compare A B and --check --reference GLOBAL LOCAL (cmd_run_compare.c);
 * return the exit code, the same on every rank. */
int dt_runner_compare(struct dt_runner *c);
int dt_runner_check(struct dt_runner *c);

/* Rank 0 gets every rank's string (dt_runner_free_strings them); the
 * other ranks get NULL. Collective. */
char **dt_runner_gather_strings(struct dt_runner *c, const char *s);
void dt_runner_free_strings(struct dt_runner *c, char **all);
/* Every rank gets rank 0's string `s` (other ranks' `s` is ignored), on
 * the heap (dt_free it). Collective. */
char *dt_runner_bcast_string(struct dt_runner *c, const char *s);
/* The first na bytes of a, then b and c, on the heap (dt_free it). */
char *dt_cli_concat3(const char *a, size_t na, const char *b, const char *c);

/* The nodes the graph's output node returns, in order (0 for a none
 * entry), as a heap array (dt_free it) of *n entries. */
uint32_t *dt_cli_outputs(const struct dt_module *m, uint32_t *n);
/* The name of output i ("(none)" for a none entry). */
const char *dt_cli_output_name(const struct dt_module *m, const uint32_t *ids,
			       uint32_t n, uint32_t i);
/* Every element of a contiguous host tensor as a double, row-major
 * (dt_free it); NULL for a none output. */
double *dt_cli_values(const struct dt_rt_tensor *t);

#endif
