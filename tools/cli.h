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
int dt_cmd_diff(int argc, char **argv);
int dt_cmd_plan(int argc, char **argv);
int dt_cmd_explain(int argc, char **argv);
int dt_cmd_solve(int argc, char **argv);

/* Cost-model overrides from the command line (`opt`, `diff`): each flag
 * replaces one field of the module's topology (its <topology> or the
 * defaults). Splice DT_CLI_TOPOLOGY_LONGOPTS into a getopt_long table, pass
 * every returned value in [DT_CLI_OPT_TOPOLOGY_FIRST, DT_CLI_OPT_TOPOLOGY_END)
 * to dt_cli_topology_parse, then apply the result to the loaded module's
 * topology with dt_cli_topology_apply. */
enum {
	DT_CLI_OPT_TOPOLOGY_FIRST = 0x1000,
	DT_CLI_OPT_DEVICES_PER_HOST = DT_CLI_OPT_TOPOLOGY_FIRST,
	DT_CLI_OPT_BANDWIDTH,
	DT_CLI_OPT_LATENCY,
	DT_CLI_OPT_INTER_HOST_BANDWIDTH_FACTOR,
	DT_CLI_OPT_INTER_HOST_LATENCY,
	DT_CLI_OPT_BASE_LATENCY,
	DT_CLI_OPT_ALL_TO_ALL_PENALTY,
	DT_CLI_OPT_DEVICE_TFLOPS,
	DT_CLI_OPT_DEVICE_BANDWIDTH,
	DT_CLI_OPT_TOPOLOGY_END
};
#define DT_CLI_TOPOLOGY_LONGOPTS                                           \
	{"devices-per-host", required_argument, NULL,                      \
	 DT_CLI_OPT_DEVICES_PER_HOST},                                     \
	{"bandwidth", required_argument, NULL, DT_CLI_OPT_BANDWIDTH},      \
	{"latency", required_argument, NULL, DT_CLI_OPT_LATENCY},          \
	{"inter-host-bandwidth-factor", required_argument, NULL,           \
	 DT_CLI_OPT_INTER_HOST_BANDWIDTH_FACTOR},                          \
	{"inter-host-latency", required_argument, NULL,                    \
	 DT_CLI_OPT_INTER_HOST_LATENCY},                                   \
	{"base-latency", required_argument, NULL, DT_CLI_OPT_BASE_LATENCY}, \
	{"all-to-all-penalty", required_argument, NULL,                    \
	 DT_CLI_OPT_ALL_TO_ALL_PENALTY},                                   \
	{"device-tflops", required_argument, NULL,                         \
	 DT_CLI_OPT_DEVICE_TFLOPS},                                        \
	{"device-bandwidth", required_argument, NULL,                      \
	 DT_CLI_OPT_DEVICE_BANDWIDTH}
/* The flags' lines for a command's --help text. */
extern const char dt_cli_topology_help[];

struct dt_cli_topology {
	uint32_t given;            /* bit (opt - DT_CLI_OPT_TOPOLOGY_FIRST) */
	struct dt_topology values; /* the given fields */
};
/* Record flag `opt` (a DT_CLI_OPT_* topology value) with its argument.
 * A value that is not positive and finite (devices-per-host: a positive
 * integer) is reported as a usage error of command `cmd`; returns
 * DT_EXIT_OK or DT_EXIT_USAGE. */
int dt_cli_topology_parse(struct dt_cli_topology *o, int opt,
			  const char *value, const char *cmd);
/* --memory-budget's value: a positive byte count into *budget, else a
 * usage error of command `cmd`; returns DT_EXIT_OK or DT_EXIT_USAGE. */
int dt_cli_memory_budget_parse(const char *value, const char *cmd,
				int64_t *budget);
/* Overwrite the fields of `t` that were given on the command line. */
void dt_cli_topology_apply(const struct dt_cli_topology *o,
			   struct dt_topology *t);

/* Flush stdout; when that (or an earlier write) failed, report `dtopt:
 * error: cannot write the output: REASON` once and return DT_EXIT_INPUT
 * (or `code` when it is already a failure). Else returns `code`. */
int dt_cli_flush_stdout(int code);
/* ---- Output every command shares (cli_output.c) ---- */

/* Set when the command line asks for --format=json (or -f json): usage
 * errors and diagnostics are then JSON objects on stderr, one a line. */
extern bool dt_cli_json;
/* Look for --format=json among a command's arguments (before dispatch, so
 * that errors in any argument come out as JSON). */
void dt_cli_scan_format(int argc, char **argv);
/* dt_diag_init, with dt_cli_json_emit as the sink when JSON is asked for. */
void dt_cli_diag_init(struct dt_diag *d);
/* A diagnostic as {"severity", "file", "line", "tag", "message"} (a remark
 * as dt_cli_remark_json) on stderr. */
void dt_cli_json_emit(void *ud, const struct dt_diag_entry *e);
/* A usage or I/O error of command `cmd` as {"severity": "error",
 * "command", "message"} on stderr. */
void dt_cli_json_error(const char *cmd, const char *message);
/* The kind of a remark from its tag: "passed" (PASS: a rewrite was made),
 * "missed" (PASS:REASON: a candidate was not rewritten, and why) or
 * "analysis" (shard-prop's placement decisions). */
const char *dt_cli_remark_kind(const char *tag);
/* One remark as a JSON line {"kind", "pass", "reason", "node", "file",
 * "line", "message"} (node NULL: null). */
void dt_cli_remark_json(FILE *out, const struct dt_diag_entry *e,
			const char *node);

/* -o FILE for commands that print: from dt_cli_output_begin on, stdout
 * goes to a temporary file beside FILE, renamed over FILE by
 * dt_cli_output_commit (which returns DT_EXIT_OK or, after reporting,
 * DT_EXIT_INPUT); main discards it when the command ends without commit.
 * FILE "-" or NULL is stdout itself. */
int dt_cli_output_begin(const char *cmd, const char *path);
int dt_cli_output_commit(void);
void dt_cli_output_discard(void);
/* "dtopt CMD: error: MSG" (JSON when asked for) on stderr; returns
 * DT_EXIT_INPUT. */
int dt_cli_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Report that `path` cannot be written (errno); returns DT_EXIT_INPUT. */
int dt_io_error(const char *cmd, const char *path);
/* What `explain --search=global` weighs and prints. */
struct dt_explain_global_options {
	const struct dt_topology *topology;
	bool create_groups; /* moves merged onto any flattened group */
	bool json;          /* one JSON object, else text */
	int top;            /* runners-up listed */
	int64_t budget;     /* the search's memory limit (bytes per rank, as
			       opt --memory-budget plans first); <= 0: none */
};

/* `explain --search=global`: verify and shape-infer `m`, solve its
 * whole-graph problem and print to stdout why call node `node` gets its
 * strategy. Where shard-prop would fall back to the node-by-node search
 * (a problem too large, no plan found) it prints nothing, warns why and
 * sets *explained to false: the caller explains the greedy search.
 * Returns a dt_status (errors to diag). */
int dt_explain_global(struct dt_module *m, uint32_t node,
		      const struct dt_explain_global_options *o,
		      struct dt_diag *diag, bool *explained);

/* Exit code for a library status. */
int dt_exit_code(int status);
/* Print "dtopt CMD: error: MSG (see 'dtopt CMD --help')" (JSON under
 * --format=json) to stderr and return DT_EXIT_USAGE (cli_output.c). */
int dt_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
