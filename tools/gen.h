// SPDX-License-Identifier: MIT
/* gen.h: the options and the graph builder of `dtopt gen` (gen_graph.c),
 * shared with its command line (gen.c). */
#ifndef DTOPT_GEN_H
#define DTOPT_GEN_H

#include "ir.h"

#define GEN_LN_EPS 1e-05

/* ------------------------------------------------------------------ */
/* Options. */

enum gen_direction {
	GEN_DIR_ASC,  /* "dp-tp": gather over mesh dims in mesh order */
	GEN_DIR_DESC, /* "tp-dp": gather in reverse mesh order (DTensor's) */
	GEN_DIR_BOTH, /* alternate per weight */
};

enum gen_declare {
	GEN_DECLARE_ALL,     /* single-dim groups and every fused group */
	GEN_DECLARE_SINGLES, /* single-dim groups only: fusions are missed */
};

enum gen_style {
	GEN_STYLE_FSDP, /* weights sharded on dim 0, gathered per use */
	GEN_STYLE_DP,   /* weights replicated, gradients all-reduced */
};

struct gen_options {
	int64_t layers;
	int64_t nodes;      /* target node count; 0 = use layers */
	int64_t hidden;
	int64_t seq;        /* tokens per rank */
	int ndim;
	int64_t mesh[DT_MAX_MESH_DIMS];
	char dims[DT_MAX_MESH_DIMS][32];
	enum dt_dtype dtype;
	enum gen_direction direction;
	enum gen_declare declare;
	enum gen_style style;
	uint64_t seed;
	const char *out;
};

/* Build the whole graph with `layers` layers (a deterministic function of
 * the options). The caller destroys it. */
struct dt_module *dt_gen_build(const struct gen_options *o, int64_t layers);

#endif
