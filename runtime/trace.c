// SPDX-License-Identifier: MIT
/* trace.c: the run's reports: the Chrome trace of one rank, the merge of
 * every rank's trace into one file, and the per-target summary table. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *dt_rt_node_target(const struct dt_node *n)
{
	if (n->kind == DT_NODE_PLACEHOLDER)
		return "placeholder";
	if (n->kind == DT_NODE_OUTPUT)
		return "output";
	if (n->kind == DT_NODE_CONSTANT)
		return "get_attr";
	return dt_op_get((enum dt_op)n->op)->target;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

int dt_trace_rank_path(const char *path, int rank, int world_size, char *buf,
		       size_t n)
{
	size_t len = strlen(path);
	if (world_size <= 1)
		return snprintf(buf, n, "%s", path);
	if (len > 5 && strcmp(path + len - 5, ".json") == 0)
		return snprintf(buf, n, "%.*s.rank%d.json", (int)(len - 5), path, rank);
	return snprintf(buf, n, "%s.rank%d", path, rank);
}

/* Write `path` atomically: `fill` writes into a temporary file in the
 * same directory, renamed over `path` only when everything was written.
 * `fill` returns DT_OK, or DT_EIO after reporting its own failure. */
static int write_atomic(const char *path, struct dt_diag *d,
			int (*fill)(FILE *f, void *ud), void *ud)
{
	char *tmp;
	int fd = dt_temp_beside(path, 0644, &tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0 && !f)
		close(fd);
	int rc = f ? fill(f, ud) : DT_OK;
	bool written = f && !ferror(f);
	if (f && fclose(f) != 0)
		written = false;
	if (rc == DT_OK && (!written || rename(tmp, path) != 0)) {
		dt_diag_report(d, DT_ERROR, path, 0, NULL, "cannot write the trace: %s",
			       strerror(errno));
		rc = DT_EIO;
	}
	if (rc != DT_OK && fd >= 0)
		remove(tmp);
	dt_free(tmp);
	return rc;
}

struct trace {
	const struct dt_module *m;
	int rank;
	const struct dt_trace_event *events;
	uint32_t n;
};

/* One event per line between the header and the footer (merge relies on
 * it). */
static int fill_trace(FILE *f, void *ud)
{
	const struct trace *t = ud;
	int rank = t->rank;
	fprintf(f, "{\"traceEvents\":[\n");
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"rank %d\"}}",
		rank, rank);
	fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":\"collectives in flight\"}}",
		rank);
	for (uint32_t i = 0; i < t->n; i++) {
		const struct dt_trace_event *e = &t->events[i];
		const struct dt_node *n = dt_node_get(t->m, e->node);
		const char *target = dt_rt_node_target(n);
		fprintf(f, ",\n{\"name\":");
		json_string(f, dt_str_get(t->m, n->name));
		fprintf(f, ",\"cat\":");
		json_string(f, target);
		fprintf(f, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"target\":",
			e->start * 1e6, e->dur * 1e6, rank, e->track);
		json_string(f, target);
		fprintf(f, ",\"bytes\":%llu}}", (unsigned long long)e->bytes);
	}
	fprintf(f, "\n],\"displayTimeUnit\":\"ms\"}\n");
	return DT_OK;
}

int dt_trace_write(const char *path, const struct dt_module *m, int rank,
		   const struct dt_trace_event *events, uint32_t n,
		   struct dt_diag *d)
{
	struct trace t = {m, rank, events, n};
	return write_atomic(path, d, fill_trace, &t);
}

struct merge {
	const char *path;
	int world_size;
	struct dt_diag *d;
};

static int fill_merged(FILE *f, void *ud)
{
	const struct merge *mg = ud;
	char name[4096];
	char *line = NULL;
	size_t cap = 0;
	bool first = true;
	fprintf(f, "{\"traceEvents\":[\n");
	for (int r = 0; r < mg->world_size; r++) {
		dt_trace_rank_path(mg->path, r, mg->world_size, name, sizeof(name));
		FILE *in = fopen(name, "r");
		if (!in) {
			dt_diag_report(mg->d, DT_ERROR, name, 0, NULL,
				       "cannot read rank %d's trace: %s", r, strerror(errno));
			free(line);
			return DT_EIO;
		}
		ssize_t len;
		while ((len = getline(&line, &cap, in)) > 0) {
			while (len && (line[len - 1] == '\n' || line[len - 1] == ','))
				line[--len] = 0;
			if (line[0] != '{' || strncmp(line, "{\"traceEvents\"", 14) == 0)
				continue;
			fprintf(f, "%s%s", first ? "" : ",\n", line);
			first = false;
		}
		fclose(in);
	}
	free(line); /* getline's buffer comes from malloc */
	fprintf(f, "\n],\"displayTimeUnit\":\"ms\"}\n");
	return DT_OK;
}

int dt_trace_merge(const char *path, int world_size, struct dt_diag *d)
{
	struct merge mg = {path, world_size, d};
	if (world_size <= 1)
		return DT_OK;
	int rc = write_atomic(path, d, fill_merged, &mg);
	for (int r = 0; rc == DT_OK && r < world_size; r++) {
		char name[4096];
		dt_trace_rank_path(path, r, world_size, name, sizeof(name));
		remove(name);
	}
	return rc;
}

void dt_run_summary_print(const struct dt_run_result *r, FILE *out)
{
	double total = 0;
	int iters = r->iters > 0 ? r->iters : 1;
	for (uint32_t i = 0; i < r->nstats; i++)
		total += r->stats[i].seconds;
	fprintf(out, "%-48s %8s %11s %11s %7s %14s\n", "target", "count",
		"total ms", "ms/iter", "share", "bytes/iter");
	for (uint32_t i = 0; i < r->nstats; i++) {
		const struct dt_run_stat *s = &r->stats[i];
		fprintf(out, "%-48s %8llu %11.3f %11.3f %6.1f%% %14llu\n", s->target,
			(unsigned long long)s->count, s->seconds * 1e3,
			s->seconds * 1e3 / iters, total > 0 ? 100 * s->seconds / total : 0,
			(unsigned long long)(s->bytes / (uint64_t)iters));
	}
	fprintf(out, "%-48s %8s %11.3f %11.3f  (%d iteration%s)\n", "total", "",
		total * 1e3, total * 1e3 / iters, iters, iters == 1 ? "" : "s");
	fprintf(out, "memory: values %zu bytes at peak (largest tensor %zu "
		"bytes), collective buffers %zu bytes at peak, %zu bytes in "
		"all\n",
		r->peak_bytes, r->largest_bytes, r->buffer_bytes,
		r->memory_bytes);
}

