// SPDX-License-Identifier: MIT
/* internal.h: private declarations shared by the frontend's files. */
#ifndef DTOPT_FRONTEND_INTERNAL_H
#define DTOPT_FRONTEND_INTERNAL_H

#include <stddef.h>

/* Format v1 minor versions: a file says version="1" or "1.MINOR". The
 * reader accepts every minor up to this one and refuses a feature newer
 * than the file's version; the writer writes the lowest version that holds
 * every feature the graph uses (writer.c, format_minor). 1.1: constants. */
#define DT_FORMAT_MINOR 1

/* The RelaxNG schema, embedded at build time from dtopt-graph.rng. */
extern const unsigned char dt_schema_rng[];
extern const size_t dt_schema_rng_len;

#endif
