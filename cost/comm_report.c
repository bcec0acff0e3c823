// SPDX-License-Identifier: MIT
/* comm_report.c: the before → after table of collectives that
 * `opt --report` and `diff` print, as text or JSON. */
#include "cost_model.h"

#include <string.h>

/* One report line: a row key with its before and after figures. */
struct report_line {
	const struct dt_comm_row *key; /* kind, mesh, dims, group name */
	struct dt_comm_row before, after;
};

static bool same_key(const struct dt_comm_row *a, const struct dt_comm_row *b)
{
	return a->kind == b->kind && strcmp(a->mesh, b->mesh) == 0 &&
	       strcmp(a->dims, b->dims) == 0;
}

static const struct dt_comm_row *find_row(const struct dt_comm_table *t,
					  const struct dt_comm_row *key)
{
	for (uint32_t i = 0; i < t->rows.len; i++)
		if (same_key(&t->rows.data[i], key))
			return &t->rows.data[i];
	return NULL;
}

/* The keys of `before` in order, then those only in `after`; the caller
 * frees the array. Stores the count in *n. */
static struct report_line *merge(const struct dt_comm_table *before,
				 const struct dt_comm_table *after, uint32_t *n)
{
	struct report_line *lines = dt_calloc(
	    (size_t)before->rows.len + after->rows.len + 1, sizeof *lines);
	*n = 0;
	for (uint32_t i = 0; i < before->rows.len; i++) {
		const struct dt_comm_row *b = &before->rows.data[i];
		const struct dt_comm_row *a = find_row(after, b);
		lines[*n] = (struct report_line){.key = b, .before = *b};
		if (a)
			lines[*n].after = *a;
		(*n)++;
	}
	for (uint32_t i = 0; i < after->rows.len; i++) {
		const struct dt_comm_row *a = &after->rows.data[i];
		if (!find_row(before, a))
			lines[(*n)++] =
			    (struct report_line){.key = a, .after = *a};
	}
	return lines;
}

static void add_to_total(struct report_line *total, const struct report_line *l)
{
	total->before.count += l->before.count;
	total->before.bytes += l->before.bytes;
	total->before.sent += l->before.sent;
	total->before.time_us += l->before.time_us;
	total->after.count += l->after.count;
	total->after.bytes += l->after.bytes;
	total->after.sent += l->after.sent;
	total->after.time_us += l->after.time_us;
}

void dt_format_bytes(double bytes, char *buf, size_t size)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	if (bytes < 1024) {
		snprintf(buf, size, "%.0f B", bytes);
		return;
	}
	int u = 0;
	bytes /= 1024;
	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(buf, size, "%.1f %s", bytes, units[u]);
}

enum { COL_KIND, COL_GROUP, COL_COUNT, COL_BYTES, COL_SENT, COL_TIME, NCOLS };
#define CELL_SIZE 320

/* The cells of one line of the text report. */
static void text_cells(const struct report_line *l, const char *kind,
		       const char *group, char cells[NCOLS][CELL_SIZE])
{
	char b0[32], b1[32];
	snprintf(cells[COL_KIND], CELL_SIZE, "%s", kind);
	snprintf(cells[COL_GROUP], CELL_SIZE, "%s", group);
	snprintf(cells[COL_COUNT], CELL_SIZE, "%lld -> %lld",
		 (long long)l->before.count, (long long)l->after.count);
	dt_format_bytes(l->before.bytes, b0, sizeof b0);
	dt_format_bytes(l->after.bytes, b1, sizeof b1);
	snprintf(cells[COL_BYTES], CELL_SIZE, "%s -> %s", b0, b1);
	dt_format_bytes(l->before.sent, b0, sizeof b0);
	dt_format_bytes(l->after.sent, b1, sizeof b1);
	snprintf(cells[COL_SENT], CELL_SIZE, "%s -> %s", b0, b1);
	snprintf(cells[COL_TIME], CELL_SIZE, "%.2f -> %.2f", l->before.time_us,
		 l->after.time_us);
}

static void print_cells(char cells[NCOLS][CELL_SIZE], const int *width,
			FILE *out)
{
	for (int c = 0; c + 1 < NCOLS; c++)
		fprintf(out, "  %-*s", width[c], cells[c]);
	fprintf(out, "  %s\n", cells[NCOLS - 1]);
}

void dt_comm_report_print(const struct dt_comm_table *before,
			  const struct dt_comm_table *after, FILE *out)
{
	uint32_t n;
	struct report_line *lines = merge(before, after, &n);
	struct report_line total = {0};
	/* Row n + 1 is the header, row n the total. */
	char(*cells)[NCOLS][CELL_SIZE] = dt_calloc(n + 2, sizeof *cells);
	for (uint32_t i = 0; i < n; i++) {
		const struct dt_comm_row *k = lines[i].key;
		char group[CELL_SIZE];
		snprintf(group, sizeof group, "%s (%s: %s)", k->group, k->mesh,
			 k->dims);
		text_cells(&lines[i], dt_comm_kind_name(k->kind), group,
			   cells[i]);
		add_to_total(&total, &lines[i]);
	}
	text_cells(&total, "total", "", cells[n]);
	static const char *const header[NCOLS] = {"kind", "group (mesh: dims)",
						  "count", "bytes",
						  "sent per rank",
						  "modelled time (µs)"};
	for (int c = 0; c < NCOLS; c++)
		snprintf(cells[n + 1][c], CELL_SIZE, "%s", header[c]);
	int width[NCOLS] = {0};
	for (uint32_t i = 0; i < n + 2; i++)
		for (int c = 0; c < NCOLS; c++)
			if ((int)strlen(cells[i][c]) > width[c])
				width[c] = (int)strlen(cells[i][c]);
	fprintf(out,
		"collectives before -> after (cost model of semantics §5):\n");
	print_cells(cells[n + 1], width, out);
	for (uint32_t i = 0; i <= n; i++)
		print_cells(cells[i], width, out);
	dt_free(cells);
	dt_free(lines);
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void json_figures(const struct report_line *l, FILE *out)
{
	char t0[32], t1[32];
	dt_format_double(l->before.time_us, t0, sizeof t0);
	dt_format_double(l->after.time_us, t1, sizeof t1);
	fprintf(out,
		"\"count_before\":%lld,\"count_after\":%lld,"
		"\"bytes_before\":%.0f,\"bytes_after\":%.0f,"
		"\"sent_before\":%.0f,\"sent_after\":%.0f,"
		"\"time_us_before\":%s,\"time_us_after\":%s}",
		(long long)l->before.count, (long long)l->after.count,
		l->before.bytes, l->after.bytes, l->before.sent,
		l->after.sent, t0, t1);
}

void dt_comm_report_print_json(const struct dt_comm_table *before,
			       const struct dt_comm_table *after, FILE *out)
{
	uint32_t n;
	struct report_line *lines = merge(before, after, &n);
	struct report_line total = {0};
	fputs("{\"rows\":[", out);
	for (uint32_t i = 0; i < n; i++) {
		const struct dt_comm_row *k = lines[i].key;
		fputs(i ? ",{\"kind\":" : "{\"kind\":", out);
		json_string(out, dt_comm_kind_name(k->kind));
		fputs(",\"mesh\":", out);
		json_string(out, k->mesh);
		fputs(",\"group\":", out);
		json_string(out, k->group);
		fputs(",\"dims\":", out);
		json_string(out, k->dims);
		fputc(',', out);
		json_figures(&lines[i], out);
		add_to_total(&total, &lines[i]);
	}
	fputs("],\"total\":{", out);
	json_figures(&total, out);
	fputs("}\n", out);
	dt_free(lines);
}
