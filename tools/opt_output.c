// SPDX-License-Identifier: MIT
/* opt_output.c: the diagnostics sink and the --dump-dir dumps of `dtopt
 * opt` (opt_output.h). */
#include "opt_output.h"

#include "cli.h"
#include "frontend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void dt_opt_sink_emit(void *ud, const struct dt_diag_entry *e)
{
	const struct dt_opt_sink *s = ud;
	if (e->severity != DT_REMARK) {
		if (dt_cli_json) {
			dt_cli_json_emit(NULL, e);
		} else {
			dt_diag_format(e, stderr);
			fputc('\n', stderr);
		}
		return;
	}
	const char *node = NULL;
	if (s->m && e->line < s->nlines && s->line_node[e->line])
		node = dt_node_name(s->m, s->line_node[e->line]);
	if (s->remarks_out)
		dt_cli_remark_json(s->remarks_out, e, node);
	if (!s->remarks_stderr)
		return;
	if (s->json) {
		dt_cli_remark_json(stderr, e, node);
	} else {
		dt_diag_format(e, stderr);
		fputc('\n', stderr);
	}
}

void dt_opt_sink_module(struct dt_opt_sink *s, const struct dt_module *m)
{
	dt_opt_sink_fini(s);
	s->m = m;
	if (!s->remarks_out && !(s->remarks_stderr && s->json))
		return; /* no node names needed */
	uint32_t max = 0;
	for (uint32_t id = 1; id < m->nodes.len; id++)
		if (m->nodes.data[id].line > max)
			max = m->nodes.data[id].line;
	s->nlines = max + 1;
	s->line_node = dt_calloc(s->nlines, sizeof *s->line_node);
	for (uint32_t id = 1; id < m->nodes.len; id++) {
		uint32_t line = m->nodes.data[id].line;
		if (line && !s->line_node[line])
			s->line_node[line] = id;
	}
}

void dt_opt_sink_fini(struct dt_opt_sink *s)
{
	dt_free(s->line_node);
	s->line_node = NULL;
	s->nlines = 0;
	s->m = NULL;
}

int dt_dump_dir_open(struct dt_dump_dir *d, const char *cmd)
{
	if (mkdir(d->dir, 0777) != 0 && errno != EEXIST)
		return dt_io_error(cmd, d->dir);
	struct stat st;
	if (stat(d->dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return dt_io_error(cmd, d->dir);
	}
	return DT_EXIT_OK;
}

void dt_dump_dir_write(struct dt_dump_dir *d, const struct dt_module *m,
		       const char *name)
{
	static const struct {
		const char *ext;
		void (*dump)(const struct dt_module *, FILE *);
	} forms[] = {
		{"txt", dt_print_text},
		{"dot", dt_dump_dot},
		{"json", dt_dump_json},
	};
	int n = d->next++;
	for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%02d-%s.%s", d->dir, n, name,
			 forms[i].ext);
		FILE *f = fopen(path, "w");
		if (f)
			forms[i].dump(m, f);
		if (!f || fclose(f) != 0) {
			if (!d->failed)
				dt_io_error("opt", path);
			d->failed = true;
		}
	}
}

void dt_dump_dir_after_pass(void *ud, const struct dt_module *m,
			    const struct dt_pass *pass)
{
	struct dt_dump_dir *d = ud;
	if (!d->only || dt_pass_listed(d->only, pass->name))
		dt_dump_dir_write(d, m, pass->name);
}
