// SPDX-License-Identifier: MIT
/* gen.c: the command line of `dtopt gen` (options, --nodes sizing, writing);
 * the graph builder and the model it generates are in gen_graph.c. */
#include "cli.h"
#include "frontend.h"
#include "gen.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define GEN_CMD "gen"
#define GEN_MAX_LAYERS 1000000
#define GEN_MAX_NODES 200000000LL
#define GEN_MAX_RANKS (1LL << 30)

/* ------------------------------------------------------------------ */
/* Command line. */

static void gen_usage(FILE *out)
{
	fputs("usage: dtopt gen [options]\n"
	      "Write a synthetic local-view transformer forward+backward graph.\n"
	      "\n"
	      "  --layers N            transformer blocks (default 2)\n"
	      "  --nodes N             pick the layer count to get about N nodes\n"
	      "                        (instead of --layers)\n"
	      "  --hidden H            hidden size (default 64; a multiple of\n"
	      "                        the mesh size)\n"
	      "  --seq S               tokens per rank (default 16)\n"
	      "  --mesh A,B[,C...]     mesh shape, 2 to 8 dims (default 2,2;\n"
	      "                        2x2 is read too)\n"
	      "  --dims a,b[,c...]     mesh dim names (default dp,tp,cp,ep,...)\n"
	      "  --dtype T             float32 (default), bfloat16, float16,\n"
	      "                        float64\n"
	      "  --direction D         order of every all_gather chain: dp-tp\n"
	      "                        (mesh order), tp-dp (reverse), both\n"
	      "                        (default: alternate per weight)\n"
	      "  --declare-groups G    all (default: single-dim groups and every\n"
	      "                        flattened group the chains fuse onto, in\n"
	      "                        both orders) or singles (one group per\n"
	      "                        mesh dim, so chains cannot fuse)\n"
	      "  --style S             fsdp (default: weights sharded on dim 0,\n"
	      "                        gathered per use, gradients reduce-\n"
	      "                        scattered) or dp (weights replicated,\n"
	      "                        gradients all-reduced, as DDP)\n"
	      "  --seed N              seed of the random choices (default 1)\n"
	      "  -o, --output=FILE     output file (default -, stdout)\n"
	      "  -h, --help            show this help\n",
	      out);
}

/* Parse a decimal integer in [lo, hi]. */
static bool parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool parse_mesh(const char *s, struct gen_options *o)
{
	int n = 0;
	while (*s) {
		char buf[32];
		size_t len = strcspn(s, "x,");
		if (n == DT_MAX_MESH_DIMS || len == 0 || len >= sizeof(buf))
			return false;
		memcpy(buf, s, len);
		buf[len] = '\0';
		if (!parse_int(buf, 1, 1 << 20, &o->mesh[n++]))
			return false;
		s += len;
		if ((*s == 'x' || *s == ',') && !*++s)
			return false;
	}
	o->ndim = n;
	return n >= 2;
}

/* Comma-separated identifiers; returns their count or -1. */
static int parse_dims(const char *s, struct gen_options *o)
{
	int n = 0;
	while (*s) {
		size_t len = strcspn(s, ",");
		if (n == DT_MAX_MESH_DIMS || len == 0 || len >= sizeof(o->dims[0]))
			return -1;
		for (size_t i = 0; i < len; i++) {
			char c = s[i];
			bool alpha = (c >= 'a' && c <= 'z') ||
				     (c >= 'A' && c <= 'Z') || c == '_';
			if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
				return -1;
		}
		memcpy(o->dims[n], s, len);
		o->dims[n][len] = '\0';
		for (int i = 0; i < n; i++)
			if (!strcmp(o->dims[i], o->dims[n]))
				return -1;
		n++;
		s += len;
		if (*s == ',' && !*++s)
			return -1;
	}
	return n;
}

enum {
	OPT_LAYERS = 256, OPT_NODES, OPT_HIDDEN, OPT_SEQ, OPT_MESH, OPT_DIMS,
	OPT_DTYPE, OPT_DIRECTION, OPT_SEED, OPT_DECLARE, OPT_STYLE,
};

/* Parse argv into *o; returns -1 to go on, else the exit code. */
static int gen_parse(int argc, char **argv, struct gen_options *o)
{
	static const struct option longopts[] = {
		{"layers", required_argument, NULL, OPT_LAYERS},
		{"nodes", required_argument, NULL, OPT_NODES},
		{"hidden", required_argument, NULL, OPT_HIDDEN},
		{"seq", required_argument, NULL, OPT_SEQ},
		{"mesh", required_argument, NULL, OPT_MESH},
		{"dims", required_argument, NULL, OPT_DIMS},
		{"dtype", required_argument, NULL, OPT_DTYPE},
		{"direction", required_argument, NULL, OPT_DIRECTION},
		{"seed", required_argument, NULL, OPT_SEED},
		{"declare-groups", required_argument, NULL, OPT_DECLARE},
		{"style", required_argument, NULL, OPT_STYLE},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *default_dims[DT_MAX_MESH_DIMS] = {
		"dp", "tp", "cp", "ep", "pp", "d5", "d6", "d7"};
	bool have_layers = false;
	int ndims = 0;
	int64_t seed;
	int c;

	opterr = 0;
	optind = 0; /* 0 makes GNU getopt start afresh: gen may run twice */
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LAYERS:
			if (!parse_int(optarg, 1, GEN_MAX_LAYERS, &o->layers))
				return dt_usage_error(GEN_CMD, "--layers wants 1 to %d, not '%s'",
						      GEN_MAX_LAYERS, optarg);
			have_layers = true;
			break;
		case OPT_NODES:
			if (!parse_int(optarg, 1, GEN_MAX_NODES, &o->nodes))
				return dt_usage_error(GEN_CMD, "--nodes wants 1 to %lld, not '%s'",
						      GEN_MAX_NODES, optarg);
			break;
		case OPT_HIDDEN:
			if (!parse_int(optarg, 1, 1 << 24, &o->hidden))
				return dt_usage_error(GEN_CMD, "bad --hidden '%s'", optarg);
			break;
		case OPT_SEQ:
			if (!parse_int(optarg, 1, 1 << 24, &o->seq))
				return dt_usage_error(GEN_CMD, "bad --seq '%s'", optarg);
			break;
		case OPT_MESH:
			if (!parse_mesh(optarg, o))
				return dt_usage_error(GEN_CMD,
					"bad --mesh '%s' (want 2 to %d sizes like 4x2)",
					optarg, DT_MAX_MESH_DIMS);
			break;
		case OPT_DIMS:
			ndims = parse_dims(optarg, o);
			if (ndims < 0)
				return dt_usage_error(GEN_CMD,
					"bad --dims '%s' (want distinct names like dp,tp)",
					optarg);
			break;
		case OPT_DTYPE: {
			enum dt_dtype t;
			if (!dt_dtype_parse(optarg, strlen(optarg), &t) ||
			    !dt_dtype_is_float(t))
				return dt_usage_error(GEN_CMD,
					"bad --dtype '%s' (want a floating dtype such as float32 or bfloat16)",
					optarg);
			o->dtype = t;
			break;
		}
		case OPT_DIRECTION:
			if (!strcmp(optarg, "dp-tp"))
				o->direction = GEN_DIR_ASC;
			else if (!strcmp(optarg, "tp-dp"))
				o->direction = GEN_DIR_DESC;
			else if (!strcmp(optarg, "both"))
				o->direction = GEN_DIR_BOTH;
			else
				return dt_usage_error(GEN_CMD,
					"bad --direction '%s' (want dp-tp, tp-dp or both)",
					optarg);
			break;
		case OPT_SEED:
			if (!parse_int(optarg, 0, INT64_MAX, &seed))
				return dt_usage_error(GEN_CMD, "bad --seed '%s'", optarg);
			o->seed = (uint64_t)seed;
			break;
		case OPT_DECLARE:
			if (!strcmp(optarg, "all"))
				o->declare = GEN_DECLARE_ALL;
			else if (!strcmp(optarg, "singles"))
				o->declare = GEN_DECLARE_SINGLES;
			else
				return dt_usage_error(GEN_CMD,
					"bad --declare-groups '%s' (want all or singles)",
					optarg);
			break;
		case OPT_STYLE:
			if (!strcmp(optarg, "fsdp"))
				o->style = GEN_STYLE_FSDP;
			else if (!strcmp(optarg, "dp"))
				o->style = GEN_STYLE_DP;
			else
				return dt_usage_error(GEN_CMD,
					"bad --style '%s' (want fsdp or dp)",
					optarg);
			break;
		case 'o':
			o->out = optarg;
			break;
		case 'h':
			gen_usage(stdout);
			return DT_EXIT_OK;
		case ':':
			return dt_usage_error(GEN_CMD, "option '%s' needs a value",
					      argv[optind - 1]);
		default:
			return dt_usage_error(GEN_CMD, "unknown option '%s'",
					      argv[optind - 1]);
		}
	}
	if (optind < argc)
		return dt_usage_error(GEN_CMD, "unexpected argument '%s'",
				      argv[optind]);
	if (have_layers && o->nodes)
		return dt_usage_error(GEN_CMD, "--layers and --nodes exclude each other");
	if (ndims == 0)
		for (int d = 0; d < o->ndim; d++)
			snprintf(o->dims[d], sizeof(o->dims[d]), "%s",
				 default_dims[d]);
	else if (ndims != o->ndim)
		return dt_usage_error(GEN_CMD, "--dims names %d dims but --mesh has %d",
				      ndims, o->ndim);
	int64_t size = 1;
	for (int d = 0; d < o->ndim; d++) {
		size *= o->mesh[d];
		if (size > GEN_MAX_RANKS)
			return dt_usage_error(GEN_CMD, "--mesh has more than %lld ranks",
					      GEN_MAX_RANKS);
	}
	if (o->hidden % size)
		return dt_usage_error(GEN_CMD,
			"--hidden %" PRId64 " must be a multiple of the mesh size %" PRId64,
			o->hidden, size);
	return -1;
}

/* Layers giving about o->nodes nodes, measured on 1- and 2-layer builds
 * (every layer has the same node count). */
static int64_t layers_for_nodes(const struct gen_options *o)
{
	struct dt_module *m1 = dt_gen_build(o, 1), *m2 = dt_gen_build(o, 2);
	int64_t one = dt_graph_count(m1), per = dt_graph_count(m2) - one;
	dt_module_destroy(m1);
	dt_module_destroy(m2);
	int64_t layers = (o->nodes - (one - per) + per / 2) / per;
	return layers < 1 ? 1 : layers > GEN_MAX_LAYERS ? GEN_MAX_LAYERS : layers;
}

int dt_cmd_gen(int argc, char **argv)
{
	struct gen_options o = {
		.layers = 2, .hidden = 64, .seq = 16, .ndim = 2,
		.mesh = {2, 2}, .dtype = DT_FLOAT32, .direction = GEN_DIR_BOTH,
		.declare = GEN_DECLARE_ALL, .seed = 1, .out = "-",
	};
	int rc = gen_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	int64_t layers = o.nodes ? layers_for_nodes(&o) : o.layers;
	struct dt_module *m = dt_gen_build(&o, layers);
	struct dt_diag diag;
	dt_diag_init(&diag);
	rc = dt_write_file(m, o.out, &diag);
	dt_module_destroy(m);
	return rc == DT_OK ? DT_EXIT_OK : dt_exit_code(rc);
}
