// SPDX-License-Identifier: MIT
/* cli.h: the subcommands of the dtopt executable. Each takes the arguments
 * after the subcommand name (argv[0] is the subcommand) and returns the
 * process exit code: 0 ok, 1 bad input, 2 usage, 3 runtime failure. */
#ifndef DTOPT_CLI_H
#define DTOPT_CLI_H

#include "ir.h"

enum dt_exit { DT_EXIT_OK = 0, DT_EXIT_INPUT = 1, DT_EXIT_USAGE = 2, DT_EXIT_RUNTIME = 3 };

int dt_cmd_opt(int argc, char **argv);
int dt_cmd_dump(int argc, char **argv);
int dt_cmd_verify(int argc, char **argv);
int dt_cmd_gen(int argc, char **argv);
int dt_cmd_run(int argc, char **argv);

/* Exit code for a library status. */
int dt_exit_code(int status);
/* Print "dtopt CMD: error: MSG" to stderr and return DT_EXIT_USAGE. */
int dt_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
