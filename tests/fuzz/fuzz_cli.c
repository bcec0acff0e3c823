// SPDX-License-Identifier: MIT
/* fuzz_cli.c: libFuzzer target for the command line of `dtopt plan`: its
 * mesh ("2x2x2:A,B,C"), shape ("8,8,8"), placement, shard-order, group,
 * dtype, format and cost-model options, and the planner behind them. The
 * input is the argument vector, one argument per line. Any vector must end
 * in an exit code (0, 1 or 2), never a crash or a hang. The tool's sources
 * are linked with main renamed (-Dmain=dtopt_main); only `plan` runs: it
 * reads no file, and writes one only where a vector says `-o NAME` (into
 * the working directory: run_fuzz.sh runs it in a scratch folder). Run
 * with -close_fd_mask=3 (the command prints its plan and errors). Build
 * with -Dfuzz=true. */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int dtopt_main(int argc, char **argv);

#define MAX_ARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size + 1);
	memcpy(copy, data, size);
	copy[size] = 0;
	char *argv[MAX_ARGS + 3] = {"dtopt", "plan"};
	int argc = 2;
	argv[argc++] = copy;
	for (char *p = copy; *p && argc < MAX_ARGS + 2; p++)
		if (*p == '\n') {
			*p = 0;
			argv[argc++] = p + 1;
		}
	argv[argc] = NULL;
	/* getopt keeps a pointer into the last argument vector (the rest of
	 * "-hx" after -h), which a command's optind = 1 does not reset; one
	 * process runs one command, the fuzzer many: reinitialize it */
	char *none[] = {"dtopt", NULL};
	optind = 0;
	getopt(1, none, "");
	int code = dtopt_main(argc, argv);
	if (code < 0 || code > 2)
		abort(); /* plan knows exit codes 0 (ok), 1 (input), 2 (usage) */
	free(copy);
	return 0;
}
