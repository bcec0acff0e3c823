// SPDX-License-Identifier: MIT
/* cli_output.c: what every subcommand writes the same way: `-o FILE`
 * (written to a temporary file beside FILE and renamed over it once the
 * command has printed everything, never on error), errors as JSON objects
 * when `--format=json` is asked for, and remarks as JSON lines with their
 * kind (passed, missed, analysis) and node. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include "cli.h"
#include "frontend.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool dt_cli_json;

void dt_cli_scan_format(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			return;
		if (strcmp(a, "--format=json") == 0 || strcmp(a, "-fjson") == 0 ||
		    ((strcmp(a, "--format") == 0 || strcmp(a, "-f") == 0) &&
		     i + 1 < argc && strcmp(argv[i + 1], "json") == 0))
			dt_cli_json = true;
	}
}

static const char *const severity_name[] = {"note", "remark", "warning",
					    "error"};

void dt_cli_json_error(const char *cmd, const char *message)
{
	fputs("{\"severity\": \"error\", \"command\": ", stderr);
	dt_json_string(stderr, cmd);
	fputs(", \"message\": ", stderr);
	dt_json_string(stderr, message);
	fputs("}\n", stderr);
}

void dt_cli_json_emit(void *ud, const struct dt_diag_entry *e)
{
	(void)ud;
	if (e->severity == DT_REMARK) {
		dt_cli_remark_json(stderr, e, NULL);
		return;
	}
	fprintf(stderr, "{\"severity\": \"%s\", \"file\": ",
		severity_name[e->severity]);
	if (e->file)
		dt_json_string(stderr, e->file);
	else
		fputs("null", stderr);
	if (e->line)
		fprintf(stderr, ", \"line\": %u", e->line);
	else
		fputs(", \"line\": null", stderr);
	fputs(", \"tag\": ", stderr);
	if (e->tag)
		dt_json_string(stderr, e->tag);
	else
		fputs("null", stderr);
	fputs(", \"message\": ", stderr);
	dt_json_string(stderr, e->message);
	fputs("}\n", stderr);
}

void dt_cli_diag_init(struct dt_diag *d)
{
	dt_diag_init(d);
	if (dt_cli_json)
		d->emit = dt_cli_json_emit;
}

const char *dt_cli_remark_kind(const char *tag)
{
	if (!tag)
		return "analysis";
	/* shard-prop decides placements: what it says is analysis. */
	if (strncmp(tag, "shard-prop", strlen("shard-prop")) == 0)
		return "analysis";
	return strchr(tag, ':') ? "missed" : "passed";
}

void dt_cli_remark_json(FILE *out, const struct dt_diag_entry *e,
			const char *node)
{
	const char *tag = e->tag ? e->tag : "";
	const char *colon = strchr(tag, ':');
	int pass_len = colon ? (int)(colon - tag) : (int)strlen(tag);
	char pass[128];
	snprintf(pass, sizeof pass, "%.*s", pass_len, tag);
	fprintf(out, "{\"kind\": \"%s\", \"pass\": ", dt_cli_remark_kind(e->tag));
	if (e->tag)
		dt_json_string(out, pass);
	else
		fputs("null", out);
	fputs(", \"reason\": ", out);
	if (colon)
		dt_json_string(out, colon + 1);
	else
		fputs("null", out);
	fputs(", \"node\": ", out);
	if (node)
		dt_json_string(out, node);
	else
		fputs("null", out);
	fputs(", \"file\": ", out);
	if (e->file)
		dt_json_string(out, e->file);
	else
		fputs("null", out);
	if (e->line)
		fprintf(out, ", \"line\": %u", e->line);
	else
		fputs(", \"line\": null", out);
	fputs(", \"message\": ", out);
	dt_json_string(out, e->message);
	fputs("}\n", out);
}

/* ---- -o FILE ---- */

static struct {
	const char *cmd;
	char *path; /* the target; NULL: stdout or nothing begun */
	char *tmp;  /* the temporary file stdout points at */
	int saved;  /* the original stdout */
} output = {.saved = -1};

int dt_cli_output_begin(const char *cmd, const char *path)
{
	if (!path || strcmp(path, "-") == 0)
		return DT_EXIT_OK;
	char *tmp;
	int fd = dt_temp_beside(path, 0644, &tmp);
	if (fd < 0)
		return dt_io_error(cmd, path);
	fflush(stdout);
	output.saved = dup(STDOUT_FILENO);
	if (output.saved < 0 || dup2(fd, STDOUT_FILENO) < 0) {
		close(fd);
		unlink(tmp);
		dt_free(tmp);
		return dt_io_error(cmd, path);
	}
	close(fd);
	output.cmd = cmd;
	output.path = strdup(path);
	output.tmp = tmp;
	return DT_EXIT_OK;
}

/* Point stdout back at the original. */
static bool restore(void)
{
	bool ok = fflush(stdout) == 0;
	ok &= dup2(output.saved, STDOUT_FILENO) >= 0;
	close(output.saved);
	output.saved = -1;
	return ok;
}

int dt_cli_output_commit(void)
{
	if (!output.path)
		return dt_cli_flush_stdout(DT_EXIT_OK);
	bool ok = restore() && rename(output.tmp, output.path) == 0;
	int rc = ok ? DT_EXIT_OK : dt_io_error(output.cmd, output.path);
	if (!ok)
		unlink(output.tmp);
	free(output.path);
	dt_free(output.tmp);
	output.path = output.tmp = NULL;
	return rc;
}

void dt_cli_output_discard(void)
{
	if (!output.path)
		return;
	restore();
	unlink(output.tmp);
	free(output.path);
	dt_free(output.tmp);
	output.path = output.tmp = NULL;
}

int dt_cli_error(const char *cmd, const char *fmt, ...)
{
	char msg[4200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (dt_cli_json)
		dt_cli_json_error(cmd, msg);
	else
		fprintf(stderr, "dtopt %s: error: %s\n", cmd, msg);
	return DT_EXIT_INPUT;
}

int dt_io_error(const char *cmd, const char *path)
{
	return dt_cli_error(cmd, "cannot write '%s': %s", path,
			    strerror(errno));
}
