// SPDX-License-Identifier: MIT
/* opt_output.h: what `dtopt opt` writes besides the graph: the sink its
 * diagnostics go through (remarks as text or JSON on stderr, to a
 * --remarks-output file as JSON lines naming their node, errors as JSON
 * under --format=json) and the numbered per-pass dumps of --dump-dir. */
#ifndef DTOPT_OPT_OUTPUT_H
#define DTOPT_OPT_OUTPUT_H

#include "passes.h"

struct dt_opt_sink {
	bool remarks_stderr;  /* --remarks: remarks on stderr */
	bool json;            /* --remarks=json or --format=json */
	FILE *remarks_out;    /* --remarks-output=FILE, or NULL */
	/* The node each line of the input file declares (0: none), for
	 * remarks' "node": the input as loaded, so removed nodes count. */
	uint32_t *line_node;
	uint32_t nlines;
	const struct dt_module *m;
};
/* The dt_diag sink for `opt` (ud: a struct dt_opt_sink). */
void dt_opt_sink_emit(void *ud, const struct dt_diag_entry *e);
/* Index the nodes of the freshly loaded `m` by line. */
void dt_opt_sink_module(struct dt_opt_sink *s, const struct dt_module *m);
void dt_opt_sink_fini(struct dt_opt_sink *s);

/* --dump-dir=DIR: DIR/NN-NAME.txt, .dot and .json (text dump, graphviz,
 * JSON) of the input (00-input) and after every pass, or after the passes
 * `only` lists (dt_pass_listed), numbered in the order they ran. */
struct dt_dump_dir {
	const char *dir;
	const char *only; /* NULL: every pass */
	int next;         /* the number of the next dump */
	bool failed;      /* a file could not be written (reported) */
};
/* Create DIR when missing; DT_EXIT_OK or an exit code after reporting. */
int dt_dump_dir_open(struct dt_dump_dir *d, const char *cmd);
/* Write dump number d->next named `name`. */
void dt_dump_dir_write(struct dt_dump_dir *d, const struct dt_module *m,
		       const char *name);
/* dt_pipeline_options.after_pass for --dump-dir (ud: the dt_dump_dir). */
void dt_dump_dir_after_pass(void *ud, const struct dt_module *m,
			    const struct dt_pass *pass);

#endif
