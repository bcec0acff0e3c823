// SPDX-License-Identifier: MIT
/* internal.h: private declarations shared by the frontend's files: the
 * embedded schema, and the reader's state, shared by reader.c (the entry
 * points and the input's checks), read_sax.c (the SAX plumbing),
 * read_graph.c (the document's header elements) and read_node.c (<node>
 * and its children). */
#ifndef DTOPT_FRONTEND_INTERNAL_H
#define DTOPT_FRONTEND_INTERNAL_H

#include "frontend.h"

#include <stddef.h>

/* The RelaxNG schema, embedded at build time from dtopt-graph.rng. */
extern const unsigned char dt_schema_rng[];
extern const size_t dt_schema_rng_len;

/* The elements of format v1 (docs/format.md). */
enum dt_rd_element {
	DT_RD_ROOT,
	DT_RD_TOPOLOGY,
	DT_RD_MESH,
	DT_RD_GROUP,
	DT_RD_NODE,
	DT_RD_ARG,
	DT_RD_KWARG,
	DT_RD_ITEM,
	DT_RD_TENSOR,
	DT_RD_SHARDING,
	DT_RD_META,
	DT_RD_DATA,
	DT_RD_NELEMENTS
};

/* Every attribute name of format v1; dt_rd_attr_names spells them. */
/* clang-format off */
#define DT_RD_ATTRS(X) \
	X(VERSION, "version") \
	X(NAME, "name") \
	X(VIEW, "view") \
	X(RANK, "rank") \
	X(DEVICES_PER_HOST, "devices-per-host") \
	X(BANDWIDTH, "bandwidth") \
	X(LATENCY, "latency") \
	X(INTER_HOST_BANDWIDTH_FACTOR, "inter-host-bandwidth-factor") \
	X(INTER_HOST_LATENCY, "inter-host-latency") \
	X(BASE_LATENCY, "base-latency") \
	X(ALL_TO_ALL_PENALTY, "all-to-all-penalty") \
	X(DEVICE_TFLOPS, "device-tflops") \
	X(DEVICE_BANDWIDTH, "device-bandwidth") \
	X(SHAPE, "shape") \
	X(DIMS, "dims") \
	X(DEVICES, "devices") \
	X(MESH, "mesh") \
	X(GENERATED, "generated") \
	X(OP, "op") \
	X(TARGET, "target") \
	X(NODE, "node") \
	X(NODES, "nodes") \
	X(INT, "int") \
	X(INTS, "ints") \
	X(FLOAT, "float") \
	X(FLOATS, "floats") \
	X(BOOL, "bool") \
	X(STR, "str") \
	X(DTYPE, "dtype") \
	X(NONE, "none") \
	X(STRIDE, "stride") \
	X(OFFSET, "offset") \
	X(PLACEMENTS, "placements") \
	X(ORDER, "order") \
	X(GLOBAL_SHAPE, "global-shape") \
	X(KEY, "key") \
	X(VALUE, "value") \
	X(BASE64, "base64") \
	X(FILE, "file") \
	X(BYTES, "bytes") \
	X(CRC32, "crc32")
/* clang-format on */
enum dt_rd_attr {
#define X(e, s) DT_RD_A_##e,
	DT_RD_ATTRS(X)
#undef X
	DT_RD_NATTRS
};
/* The value attributes of <arg>, <kwarg> and <item>, in enum order. */
#define DT_RD_A_FIRST_VALUE DT_RD_A_NODE
#define DT_RD_A_LAST_VALUE DT_RD_A_NONE

/* One node being read: its children are collected, then added at </node>. */
struct dt_rd_node {
	bool active;
	/* Its name, for messages. It is interned at </node>, after the
	 * children: a new name's first probe of the string table misses the
	 * cache, and the children's parse hides that load (prefetched at
	 * <node>). init.name is set then. */
	DT_VEC(char) name;
	struct dt_node_init init;
	DT_VEC(struct dt_arg) args; /* positional */
	DT_VEC(struct dt_arg) kwargs;
	DT_VEC(struct dt_arg) items; /* of the arg being read */
	DT_VEC(struct dt_tensor) tensors;
	DT_VEC(struct dt_meta) metas;
	struct dt_sharding sharding;
	bool has_sharding;
	/* A get_attr node's <data>: inline bytes decoded, or a side file. */
	DT_VEC(unsigned char) data;
	char *data_file; /* side file name (heap), NULL = inline */
	uint64_t data_bytes;
	uint32_t data_crc, data_line;
	bool has_data;
	struct dt_arg *list_arg; /* arg whose <item>s are being read */
	uint32_t list_line;	 /* its line */
	bool bad;		 /* an error was reported for it */
};

struct dt_rd {
	struct dt_module *m;
	struct dt_diag *diag;
	const struct dt_read_options *opt;
	void *ctxt; /* the libxml2 parser (xmlParserCtxtPtr) */
	bool failed;
	bool seen_node;
	int minor;		/* the file's minor format version */
	uint32_t topology_line; /* of the <topology>, 0 = none yet */
	/* The element being started: its kind, line and attributes. An
	 * attribute's value is valid while its stamp is the element's. */
	enum dt_rd_element el;
	uint32_t line;
	uint32_t stamp;
	uint32_t attr_stamp[DT_RD_NATTRS];
	const char *attr_value[DT_RD_NATTRS];
	DT_VEC(char) values; /* the NUL-terminated attribute values */
	struct dt_rd_node node;
	DT_VEC(int64_t) scratch;
};

extern const char *const dt_rd_element_names[DT_RD_NELEMENTS];
extern const char *const dt_rd_attr_names[DT_RD_NATTRS];

/* The value of attribute `a` of the element being started, or NULL. */
static inline const char *dt_rd_attr(const struct dt_rd *r, enum dt_rd_attr a)
{
	return r->attr_stamp[a] == r->stamp ? r->attr_value[a] : NULL;
}

/* Report `file:line: error:` and stop the parse (reader.c). */
void dt_rd_error(struct dt_rd *r, uint32_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* dt_rd_attr, reporting "<el> needs a 'name' attribute" when absent. */
const char *dt_rd_required(struct dt_rd *r, enum dt_rd_attr a);
/* libxml2's structured error handler (ud: the struct dt_rd): reports
 * its first error, a schema violation or malformed XML (reader.c). */
struct _xmlError;
void dt_rd_libxml_error(void *ud, struct _xmlError *e);
/* The message refusing a DOCTYPE (reader.c). */
extern const char dt_rd_doctype_refused[];

/* How libxml2 reads the input, for the parse and the schema pass: as
 * UTF-8 whatever its first bytes or its declaration say (read_sax.c). */
extern const char dt_rd_parse_encoding[];
extern const int dt_rd_parse_options;
/* Parse the document that read(in, ...) streams (close(in) at its end)
 * into r->m through the element handlers; DT_OK, DT_EINPUT after a
 * report, DT_EIO when no parser could be made (read_sax.c). */
int dt_rd_parse(struct dt_rd *r, int (*read)(void *in, char *buf, int len),
		int (*close)(void *in), void *in);

/* Value parsing (read_graph.c); false on a malformed value. */
bool dt_rd_parse_int(const char *s, int64_t *out);
bool dt_rd_parse_float(const char *s, double *out);
bool dt_rd_parse_bool(const char *s, bool *out);
/* A space-separated int list into r->scratch; false on a bad token (its
 * text is copied to bad). */
bool dt_rd_parse_int_list(struct dt_rd *r, const char *s, char *bad,
			  size_t badlen);
/* Whether the contiguous layout of `sizes` spans at most 2^60 elements. */
bool dt_rd_sizes_in_bounds(const int64_t *sizes, uint32_t rank);

/* Element handlers, called at the element's start with its attributes in
 * place (read_graph.c: the document's header). */
void dt_rd_root(struct dt_rd *r);
void dt_rd_topology(struct dt_rd *r);
void dt_rd_mesh(struct dt_rd *r);
void dt_rd_group(struct dt_rd *r);

/* read_node.c: a <node> and its children; dt_rd_node_end at </node>,
 * dt_rd_list_end at the </arg> or </kwarg> of an item list. */
void dt_rd_node_begin(struct dt_rd *r);
void dt_rd_node_end(struct dt_rd *r);
void dt_rd_arg(struct dt_rd *r, bool kw);
void dt_rd_item(struct dt_rd *r);
void dt_rd_list_end(struct dt_rd *r);
void dt_rd_tensor(struct dt_rd *r);
void dt_rd_sharding(struct dt_rd *r);
void dt_rd_meta(struct dt_rd *r);
void dt_rd_data(struct dt_rd *r);
/* Free the pending node's buffers. */
void dt_rd_node_fini(struct dt_rd_node *p);

#endif
