// SPDX-License-Identifier: MIT
/* cli_output.c: what every subcommand writes the same way: `-o FILE`
 * (written to a temporary file beside FILE and renamed over it once the
 * command has printed everything, never on error), errors as JSON objects
 * when `--format=json` is asked for, and remarks as JSON lines with their
 * kind (passed, missed, analysis) and node. */
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

/* `, "key": "value"` (or null), the value JSON-quoted; `first` omits the
 * comma. */
static void put_field(FILE *out, bool first, const char *key,
		      const char *value)
{
	fprintf(out, "%s\"%s\": ", first ? "" : ", ", key);
	if (value)
		dt_json_string(out, value);
	else
		fputs("null", out);
}

/* `, "file": ..., "line": ...` of a diagnostic. */
static void put_where(FILE *out, const struct dt_diag_entry *e)
{
	put_field(out, false, "file", e->file);
	if (e->line)
		fprintf(out, ", \"line\": %u", e->line);
	else
		fputs(", \"line\": null", out);
}

void dt_cli_json_emit(void *ud, const struct dt_diag_entry *e)
{
	(void)ud;
	if (e->severity == DT_REMARK) {
		dt_cli_remark_json(stderr, e, NULL);
		return;
	}
	fputc('{', stderr);
	put_field(stderr, true, "severity", severity_name[e->severity]);
	put_where(stderr, e);
	put_field(stderr, false, "tag", e->tag);
	put_field(stderr, false, "message", e->message);
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
	fputc('{', out);
	put_field(out, true, "kind", dt_cli_remark_kind(e->tag));
	put_field(out, false, "pass", e->tag ? pass : NULL);
	put_field(out, false, "reason", colon ? colon + 1 : NULL);
	put_field(out, false, "node", node);
	put_where(out, e);
	put_field(out, false, "message", e->message);
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

void dt_cli_json_error(const char *cmd, const char *message)
{
	fputc('{', stderr);
	put_field(stderr, true, "severity", "error");
	put_field(stderr, false, "command", cmd);
	put_field(stderr, false, "message", message);
	fputs("}\n", stderr);
}

/* "dtopt CMD: error: MSG", with a pointer to --help for usage errors, or
 * the JSON object. */
static void report(const char *cmd, bool usage, const char *fmt, va_list ap)
{
	char msg[4200];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (dt_cli_json)
		dt_cli_json_error(cmd, msg);
	else if (usage)
		fprintf(stderr, "dtopt %s: error: %s (see 'dtopt %s --help')\n",
			cmd, msg, cmd);
	else
		fprintf(stderr, "dtopt %s: error: %s\n", cmd, msg);
}

int dt_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(cmd, true, fmt, ap);
	va_end(ap);
	return DT_EXIT_USAGE;
}

int dt_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(cmd, false, fmt, ap);
	va_end(ap);
	return DT_EXIT_INPUT;
}

int dt_io_error(const char *cmd, const char *path)
{
	return dt_cli_error(cmd, "cannot write '%s': %s", path,
			    strerror(errno));
}
