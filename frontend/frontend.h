// SPDX-License-Identifier: MIT
/* frontend.h: reading and writing graph XML format v1 (libxml2), and the
 * dot and JSON dumps. */
#ifndef DTOPT_FRONTEND_H
#define DTOPT_FRONTEND_H

#include "ir.h"

struct dt_read_options {
	/* Accept targets missing from the op table (for dump and diff). The
	 * passes that need an op's semantics then reject the node. */
	bool allow_unknown_targets;
	/* Also validate against the bundled RelaxNG schema, in a second pass
	 * over the document (off by default: the reader itself refuses
	 * everything the schema does; the option checks that claim). */
	bool schema;
	uint64_t max_bytes; /* 0 = DT_READ_MAX_BYTES */
};
#define DT_READ_MAX_BYTES (8ull << 30)
#define DT_READ_MAX_DEPTH 8 /* the format nests at most 4 deep */

/* Read a graph from `path` ("-" = standard input). On success stores a new
 * module in *out (the caller destroys it) and returns DT_OK; otherwise
 * reports `file:line: error:` diagnostics and returns DT_EINPUT or DT_EIO
 * with *out NULL. Never loads DTDs, external entities or network resources. */
int dt_read_file(const char *path, const struct dt_read_options *opt,
		 struct dt_diag *d, struct dt_module **out);
/* Same, from memory; `name` is used in diagnostics. */
int dt_read_memory(const char *buf, size_t len, const char *name,
		   const struct dt_read_options *opt, struct dt_diag *d,
		   struct dt_module **out);

/* Format versions (docs/format.md): files say version="1" or "1.N" for
 * N <= DT_FORMAT_MINOR, the newest minor this dtopt reads and writes. The
 * writer writes the lowest version the graph needs, so graphs without
 * newer features stay readable by older readers; the reader refuses a
 * newer feature in a file of an older version. */
#define DT_FORMAT_MINOR 1
/* The minor version node n needs: 1 for constants (get_attr), for the ops
 * of SPMD programs (dt.*, semantics §7) and for an unevenly sharded value of an SPMD local-view
 * graph (padded, §7); else 0. When nonzero and `what` is given, names the
 * feature there. */
int dt_format_node_minor(const struct dt_module *m, const struct dt_node *n,
			 char *what, size_t size);
/* The minor version the module needs: the largest of its nodes'. */
int dt_format_minor(const struct dt_module *m);

/* Write the module as format v1 to `path` ("-" = standard output),
 * atomically: a temporary file in the same directory renamed over `path`
 * only after everything was written. Constant data over 4 KiB goes to
 * content-named side files beside it, each written atomically first and
 * never overwriting a different file. On failure reports and returns
 * DT_EIO; an existing `path` is left untouched. */
int dt_write_file(const struct dt_module *m, const char *path,
		  struct dt_diag *d);
/* Write to an open stream, all constant data inline; returns DT_OK or
 * DT_EIO (stream error). */
int dt_write_stream(const struct dt_module *m, FILE *out);

/* Graphviz dot: one box per node, edges for data flow, collectives coloured
 * by group, fused nodes highlighted. */
void dt_dump_dot(const struct dt_module *m, FILE *out);
/* JSON: the module as one JSON object (meshes, groups, nodes with args,
 * tensors, sharding, meta, line). */
void dt_dump_json(const struct dt_module *m, FILE *out);
/* Write `s` as a JSON string literal (with quotes). */
void dt_json_string(FILE *out, const char *s);

#endif
