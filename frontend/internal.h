// SPDX-License-Identifier: MIT
/* internal.h: private declarations shared by the frontend's files. */
#ifndef DTOPT_FRONTEND_INTERNAL_H
#define DTOPT_FRONTEND_INTERNAL_H

#include <stddef.h>

/* The RelaxNG schema, embedded at build time from dtopt-graph.rng. */
extern const unsigned char dt_schema_rng[];
extern const size_t dt_schema_rng_len;

#endif
