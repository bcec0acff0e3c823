// SPDX-License-Identifier: MIT
/* cmd_run_guard.c: `run`'s guards. Against a stopped or hung peer rank:
 * waits for nonblocking requests (the CLI's agreements and gathers) poll
 * under --timeout; MPI's blocking steps (MPI_Init, communicator creation
 * and release, MPI_Finalize) run under a deadline that a watchdog thread
 * enforces: past it the rank says which step it waited in and exits 3, and
 * mpirun ends the job (the interpreter's collective waits have their own
 * watchdog in the backends). Against running out of memory: the memory
 * plan, checked before anything is allocated. */
#include "cmd_run.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if DTOPT_HAVE_MPI
void dt_runner_wait(struct dt_runner *c, MPI_Request *req, const char *what)
{
	int err;
	if (dt_mpi_wait(req, c->o.timeout, DT_RT_SPIN, &err))
		return; /* MPI_COMM_WORLD's handler has ended the job on errors */
	fprintf(stderr, "dtopt run: error: rank %d of %d waited %g s for the "
		"other ranks in %s: a peer rank stopped or hangs; ending the "
		"job (--timeout=%g)\n", c->rank, c->size, c->o.timeout, what,
		c->o.timeout);
	dt_runner_end_job(DT_EXIT_RUNTIME);
}
#endif

_Noreturn void dt_runner_end_job(int code)
{
	fflush(NULL);
	_exit(code);
}

/* The armed step: its deadline in ms of CLOCK_MONOTONIC (0: none) and
 * its message, written before the deadline is published. */
static atomic_llong deadline_ms;
static char message[256];
static double timeout_s;

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *watch(void *ud)
{
	(void)ud;
	for (;;) {
		struct timespec tick = {0, 100 * 1000000};
		nanosleep(&tick, NULL);
		long long d = atomic_load(&deadline_ms);
		if (d && now_ms() > d) {
			/* only async-signal-safe calls: the main thread is
			 * inside MPI */
			ssize_t w = write(STDERR_FILENO, message, strlen(message));
			(void)w;
			_exit(DT_EXIT_RUNTIME);
		}
	}
	return NULL;
}

void dt_runner_watchdog_start(struct dt_runner *c)
{
	timeout_s = c->o.timeout;
	pthread_t t;
	if (timeout_s > 0 && pthread_create(&t, NULL, watch, NULL) == 0)
		pthread_detach(t);
}

void dt_runner_step(struct dt_runner *c, const char *step)
{
	if (!step) {
		atomic_store(&deadline_ms, 0);
		return;
	}
	if (timeout_s <= 0)
		return;
	atomic_store(&deadline_ms, 0);
	/* before MPI_Init only the launcher knows the rank */
	char rank[32];
	const char *env = getenv("OMPI_COMM_WORLD_RANK");
	snprintf(rank, sizeof(rank), "%d", c->rank);
	if (c->size == 1 && env)
		snprintf(rank, sizeof(rank), "%.16s", env);
	snprintf(message, sizeof(message),
		 "dtopt run: error: rank %s waited %g s in %s: a peer rank "
		 "stopped or hangs; ending the job (--timeout=%g)\n", rank,
		 timeout_s, step, timeout_s);
	atomic_store(&deadline_ms, now_ms() + (long long)(timeout_s * 1000));
}

/* "17179869184 bytes (16.0 GiB)" */
static void format_bytes(size_t v, char *buf, size_t n)
{
	const char *unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double x = (double)v;
	int u = -1;
	while (x >= 1024 && u < 5) {
		x /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, n, "%zu bytes", v);
	else
		snprintf(buf, n, "%zu bytes (%.1f %s)", v, x, unit[u]);
}

int dt_runner_check_memory(struct dt_runner *c, struct dt_module *m,
			   struct dt_backend *b, bool gpu)
{
	size_t peak;
	uint32_t at;
	int rc = dt_interpret_peak(m, b, &peak, &at);
	if (rc != DT_OK)
		return dt_exit_code(rc);
	size_t limit = c->o.memory_limit ? c->o.memory_limit : b->memory;
	if (!limit || peak <= limit)
		return DT_EXIT_OK;
	char need[64], have[64];
	format_bytes(peak, need, sizeof(need));
	format_bytes(limit, have, sizeof(have));
	const char *fmt = "%srank %d needs %s of %s memory at its peak "
			  "but %s %s (%s)";
	const struct dt_node *n = at ? dt_node_get(m, at) : NULL;
	const char *kind = gpu ? "GPU" : "host";
	const char *from = c->o.memory_limit ? "--memory-limit is"
					     : "its share of the free memory is";
	const char *hint = c->o.memory_limit ? "raise --memory-limit"
					     : "run on more ranks or with "
					       "smaller inputs";
	char node[256] = "";
	if (n)
		snprintf(node, sizeof(node), "node '%s' (%s): ",
			 dt_str_get(m, n->name), dt_str_get(m, n->target));
	dt_diag_report(&c->diag, DT_ERROR, m->file, n ? n->line : 0, NULL,
		       fmt, node, c->rank, need, kind, from, have, hint);
	return DT_EXIT_RUNTIME;
}
