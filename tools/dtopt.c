// SPDX-License-Identifier: MIT
/* dtopt.c: the dtopt executable: dispatches subcommands and owns the
 * process (exit codes, stdout/stderr). */
#include "cli.h"
#include "dtopt_config.h"

#include <errno.h>
#include <string.h>

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} commands[] = {
	{"opt", dt_cmd_opt, "run a pass pipeline over a graph"},
	{"dump", dt_cmd_dump, "print a graph as text, dot or json"},
	{"verify", dt_cmd_verify, "check a graph and report every problem"},
	{"diff", dt_cmd_diff, "compare two graphs: nodes, groups and collectives"},
	{"plan", dt_cmd_plan, "plan a redistribution: the steps DTensor takes, merged"},
	{"explain", dt_cmd_explain, "why shard-prop gives a node its placements"},
	{"gen", dt_cmd_gen, "generate a synthetic transformer-like graph"},
	{"run", dt_cmd_run, "run a graph with the interpreter (under mpirun)"},
	{"solve", dt_cmd_solve, "solve a sharding problem (IOPDDL contest JSON)"},
};
enum { NCOMMANDS = sizeof(commands) / sizeof(commands[0]) };

int dt_exit_code(int status)
{
	switch (status) {
	case DT_OK: return DT_EXIT_OK;
	case DT_EUSAGE: return DT_EXIT_USAGE;
	case DT_ERUNTIME: return DT_EXIT_RUNTIME;
	default: return DT_EXIT_INPUT;
	}
}

static void usage(FILE *out)
{
	fprintf(out, "usage: dtopt COMMAND [ARGS]\n\n"
		     "dtopt decides and rewrites how tensors are sharded and "
		     "communicated across a device mesh.\n\ncommands:\n");
	for (int i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'dtopt COMMAND --help' describes a command. Exit codes: "
		     "0 ok, 1 bad input, 2 usage, 3 runtime failure.\n");
}

int dt_cli_flush_stdout(int code)
{
	static bool reported;
	errno = 0;
	bool failed = fflush(stdout) != 0 || ferror(stdout);
	if (!failed || reported)
		return failed && code == DT_EXIT_OK ? DT_EXIT_INPUT : code;
	reported = true;
	fprintf(stderr, "dtopt: error: cannot write the output: %s\n",
		errno ? strerror(errno) : "write error");
	return code == DT_EXIT_OK ? DT_EXIT_INPUT : code;
}

static int dispatch(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return DT_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return DT_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("dtopt %s (mpi %s, cuda %s, nccl %s)\n", DTOPT_VERSION,
		       DTOPT_HAVE_MPI ? "yes" : "no",
		       DTOPT_HAVE_CUDA ? "yes" : "no",
		       DTOPT_HAVE_NCCL ? "yes" : "no");
		return DT_EXIT_OK;
	}
	for (int i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i].name) == 0) {
			dt_cli_scan_format(argc - 1, argv + 1);
			int rc = commands[i].run(argc - 1, argv + 1);
			dt_cli_output_discard(); /* -o not committed: no file */
			return rc;
		}
	}
	fprintf(stderr, "dtopt: error: unknown command '%s' (see 'dtopt --help')\n",
		argv[1]);
	return DT_EXIT_USAGE;
}

/* Every command's output must reach stdout in full (a full disk or a
 * closed pipe is an error, exit 1). */
int main(int argc, char **argv)
{
	int code = dispatch(argc, argv);
	return code == DT_EXIT_OK ? dt_cli_flush_stdout(code) : code;
}
