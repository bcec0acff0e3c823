// SPDX-License-Identifier: MIT
/* read_node.c: the reader's <node> and its children (<arg>, <kwarg>,
 * <item>, <tensor>, <sharding>, <meta>, <data>), collected while the node
 * is open and added to the module at </node>. */
#include "constant_data.h"
#include "internal.h"

#include <string.h>

/* Resolve a reference to an earlier node, named by the `len` bytes at
 * `name`. */
static uint32_t node_ref(struct dt_rd *r, const char *name, size_t len,
			 uint32_t line)
{
	dt_str s = dt_str_intern_n(r->m, name, len);
	uint32_t id = dt_module_find_node(r->m, s);
	if (!id || !(dt_node_get(r->m, id)->flags & DT_NODE_LINKED)) {
		dt_rd_error(
		    r, line,
		    "node '%s' uses '%s', which is not defined before it",
		    r->node.name.data, dt_str_get(r->m, s));
		return 0;
	}
	return id;
}

/* a->len = n, after reporting a list longer than an arg holds. */
static void list_len(struct dt_rd *r, uint32_t line, const char *what,
		     struct dt_arg *a, uint32_t n)
{
	if (n > DT_MAX_LIST)
		dt_rd_error(r, line,
			    "<%s> of node '%s' lists %u values (dtopt's limit "
			    "is %u)",
			    what, r->node.name.data, n, DT_MAX_LIST);
	a->len = n & DT_MAX_LIST;
}

/* nodes="a b c" into `a`. */
static void parse_nodes(struct dt_rd *r, const char *what, const char *s,
			struct dt_arg *a)
{
	a->kind = DT_ARG_NODES;
	DT_VEC(uint32_t) ids = {0};
	while (*s) {
		while (*s == ' ')
			s++;
		const char *st = s;
		while (*s && *s != ' ')
			s++;
		if (s > st)
			dt_vec_push(&ids,
				    node_ref(r, st, (size_t)(s - st), r->line));
	}
	list_len(r, r->line, what, a, ids.len);
	a->v.first = dt_module_add_refs(r->m, ids.data, ids.len);
	dt_vec_free(&ids);
}

/* floats="1.5 2" into `a`. */
static void parse_floats(struct dt_rd *r, const char *what, const char *v,
			 struct dt_arg *a)
{
	a->kind = DT_ARG_FLOATS;
	DT_VEC(double) fs = {0};
	char *dup = dt_strdup(v), *save = NULL;
	for (char *t = strtok_r(dup, " \t\n", &save); t;
	     t = strtok_r(NULL, " \t\n", &save)) {
		double f = 0;
		if (!dt_rd_parse_float(t, &f))
			dt_rd_error(r, r->line,
				    "<%s floats=...>: '%s' is not a number",
				    what, t);
		dt_vec_push(&fs, f);
	}
	list_len(r, r->line, what, a, fs.len);
	a->v.first = dt_module_add_floats(r->m, fs.data, fs.len);
	dt_free(dup);
	dt_vec_free(&fs);
}

/* Fill `a` from the value attribute of the <arg>, <kwarg> or <item> being
 * started (the element's attribute set leaves out the list values of an
 * <item>). Returns false when it has none (a list of items follows). */
static bool parse_value(struct dt_rd *r, struct dt_arg *a)
{
	uint32_t line = r->line;
	const char *what = dt_rd_element_names[r->el];
	enum dt_rd_attr k = DT_RD_NATTRS;
	for (int i = DT_RD_A_FIRST_VALUE; i <= DT_RD_A_LAST_VALUE; i++) {
		if (!dt_rd_attr(r, (enum dt_rd_attr)i))
			continue;
		if (k != DT_RD_NATTRS) {
			dt_rd_error(r, line, "<%s> has more than one value",
				    what);
			return true;
		}
		k = (enum dt_rd_attr)i;
	}
	if (k == DT_RD_NATTRS)
		return false;
	const char *v = dt_rd_attr(r, k);
	char bad[64];
	switch (k) {
	case DT_RD_A_NODE:
		a->kind = DT_ARG_NODE;
		a->v.node = node_ref(r, v, strlen(v), line);
		break;
	case DT_RD_A_NODES:
		parse_nodes(r, what, v, a);
		break;
	case DT_RD_A_INT:
		a->kind = DT_ARG_INT;
		if (!dt_rd_parse_int(v, &a->v.i))
			dt_rd_error(r, line, "<%s int=\"%s\">: not an integer",
				    what, v);
		break;
	case DT_RD_A_INTS:
		a->kind = DT_ARG_INTS;
		if (!dt_rd_parse_int_list(r, v, bad, sizeof(bad)))
			dt_rd_error(r, line,
				    "<%s ints=...>: '%s' is not an integer",
				    what, bad);
		list_len(r, line, what, a, r->scratch.len);
		a->v.ints =
		    dt_ints_intern(r->m, r->scratch.data, r->scratch.len);
		break;
	case DT_RD_A_FLOAT:
		a->kind = DT_ARG_FLOAT;
		if (!dt_rd_parse_float(v, &a->v.f))
			dt_rd_error(r, line, "<%s float=\"%s\">: not a number",
				    what, v);
		break;
	case DT_RD_A_FLOATS:
		parse_floats(r, what, v, a);
		break;
	case DT_RD_A_BOOL:
		a->kind = DT_ARG_BOOL;
		if (!dt_rd_parse_bool(v, &a->v.b))
			dt_rd_error(r, line,
				    "<%s bool=\"%s\">: expected true or false",
				    what, v);
		break;
	case DT_RD_A_STR:
		a->kind = DT_ARG_STR;
		a->v.s = dt_str_intern(r->m, v);
		break;
	case DT_RD_A_DTYPE: {
		enum dt_dtype t = DT_FLOAT32;
		a->kind = DT_ARG_DTYPE;
		if (!dt_dtype_parse(v, strlen(v), &t))
			dt_rd_error(r, line, "<%s dtype=\"%s\">: unknown dtype",
				    what, v);
		a->v.dtype = (uint8_t)t;
		break;
	}
	default: {
		bool b;
		a->kind = DT_ARG_NONE;
		if (!dt_rd_parse_bool(v, &b) || !b)
			dt_rd_error(r, line,
				    "<%s none=\"%s\">: expected none=\"true\"",
				    what, v);
		break;
	}
	}
	return true;
}

/* ---- elements ---- */

void dt_rd_node_begin(struct dt_rd *r)
{
	struct dt_rd_node *p = &r->node;
	uint32_t line = r->line;
	p->active = true;
	p->bad = false;
	p->args.len = p->kwargs.len = p->items.len = 0;
	p->tensors.len = p->metas.len = 0;
	p->has_sharding = false;
	p->list_arg = NULL;
	p->data.len = 0;
	dt_free(p->data_file);
	p->data_file = NULL;
	p->has_data = false;
	memset(&p->init, 0, sizeof(p->init));
	p->init.line = line;
	r->seen_node = true;
	const char *name = dt_rd_required(r, DT_RD_A_NAME);
	const char *op = dt_rd_required(r, DT_RD_A_OP);
	size_t len = name ? strlen(name) : 0;
	p->name.len = 0;
	dt_vec_grow(&p->name, (uint32_t)len + 1);
	memcpy(p->name.data, name ? name : "", len + 1);
	if (!name || !op)
		return;
	if (!*name)
		dt_rd_error(r, line, "a node name is empty");
	dt_intern_prefetch(&r->m->strings, name, len);
	const char *target = dt_rd_attr(r, DT_RD_A_TARGET);
	if (strcmp(op, "call_function") == 0) {
		p->init.kind = DT_NODE_CALL;
		if (!target) {
			dt_rd_error(r, line,
				    "call_function node '%s' needs a target",
				    name);
			return;
		}
		p->init.target = dt_str_intern(r->m, target);
		if (!r->opt->allow_unknown_targets &&
		    dt_op_lookup(target) == DT_OP_UNKNOWN)
			dt_rd_error(r, line,
				    "node '%s': unknown target '%s' (not in "
				    "dtopt's op table; "
				    "only dump and diff load such graphs)",
				    name, target);
		return;
	}
	if (strcmp(op, "placeholder") == 0) {
		p->init.kind = DT_NODE_PLACEHOLDER;
	} else if (strcmp(op, "output") == 0) {
		p->init.kind = DT_NODE_OUTPUT;
	} else if (strcmp(op, "get_attr") == 0) {
		p->init.kind = DT_NODE_CONSTANT;
		if (!target)
			dt_rd_error(r, line,
				    "get_attr node '%s' needs a target "
				    "(the attribute it reads)",
				    name);
	} else {
		dt_rd_error(r, line,
			    "node '%s': op '%s' is not supported (expected "
			    "placeholder, "
			    "get_attr, call_function or output)",
			    name, op);
	}
	if (target &&
	    (p->init.kind == DT_NODE_CONSTANT || strcmp(target, name) != 0))
		p->init.target = dt_str_intern(r->m, target);
}

/* Whether every stride and the last element reached stay within 2^60
 * elements of storage. */
static bool layout_in_bounds(const int64_t *sizes, const int64_t *strides,
			     uint32_t rank, int64_t offset)
{
	const int64_t max = (int64_t)1 << 60;
	int64_t last = offset, term;
	for (uint32_t i = 0; i < rank; i++)
		if (strides[i] > max ||
		    __builtin_mul_overflow(sizes[i] ? sizes[i] - 1 : 0,
					   strides[i], &term) ||
		    __builtin_add_overflow(last, term, &last))
			return false;
	return last <= max;
}

/* The stride="..." of a tensor of rank `rank` into strides; false after
 * reporting. */
static bool tensor_strides(struct dt_rd *r, const char *node,
			   const char *stride, uint32_t rank, int64_t *strides)
{
	char bad[64];
	if (!dt_rd_parse_int_list(r, stride, bad, sizeof(bad))) {
		dt_rd_error(r, r->line,
			    "node '%s': stride token '%s' is not an integer",
			    node, bad);
		return false;
	}
	if (r->scratch.len != rank) {
		dt_rd_error(r, r->line,
			    "node '%s': shape has %u dims but stride has %u",
			    node, rank, r->scratch.len);
		return false;
	}
	for (uint32_t i = 0; i < rank; i++) {
		strides[i] = r->scratch.data[i];
		if (strides[i] < 0) {
			dt_rd_error(r, r->line,
				    "node '%s': negative stride %lld", node,
				    (long long)strides[i]);
			return false;
		}
	}
	return true;
}

void dt_rd_tensor(struct dt_rd *r)
{
	uint32_t line = r->line;
	const char *node = r->node.name.data;
	const char *dtype = dt_rd_required(r, DT_RD_A_DTYPE);
	const char *shape = dt_rd_required(r, DT_RD_A_SHAPE);
	if (!dtype || !shape)
		return;
	struct dt_tensor t = {0};
	enum dt_dtype dt;
	if (!dt_dtype_parse(dtype, strlen(dtype), &dt)) {
		dt_rd_error(r, line, "node '%s': unknown dtype '%s'", node,
			    dtype);
		return;
	}
	t.dtype = (uint8_t)dt;
	char bad[64];
	if (!dt_rd_parse_int_list(r, shape, bad, sizeof(bad))) {
		dt_rd_error(r, line,
			    "node '%s': shape token '%s' is not an integer",
			    node, bad);
		return;
	}
	uint32_t rank = r->scratch.len;
	if (rank > DT_MAX_RANK) {
		dt_rd_error(r, line,
			    "node '%s': rank %u exceeds dtopt's limit of %d",
			    node, rank, DT_MAX_RANK);
		return;
	}
	int64_t sizes[DT_MAX_RANK], strides[DT_MAX_RANK];
	for (uint32_t i = 0; i < rank; i++) {
		sizes[i] = r->scratch.data[i];
		if (sizes[i] < 0) {
			dt_rd_error(r, line,
				    "node '%s': negative size %lld in shape",
				    node, (long long)sizes[i]);
			return;
		}
	}
	if (!dt_rd_sizes_in_bounds(sizes, rank)) {
		dt_rd_error(r, line,
			    "node '%s': shape '%s' has more than 2^60 elements",
			    node, shape);
		return;
	}
	const char *stride = dt_rd_attr(r, DT_RD_A_STRIDE);
	if (!stride)
		dt_contiguous_strides(sizes, (int)rank, strides);
	else if (!tensor_strides(r, node, stride, rank, strides))
		return;
	const char *offset = dt_rd_attr(r, DT_RD_A_OFFSET);
	if (offset && (!dt_rd_parse_int(offset, &t.offset) || t.offset < 0)) {
		dt_rd_error(
		    r, line,
		    "node '%s': offset '%s' is not a non-negative integer",
		    node, offset);
		return;
	}
	if (!layout_in_bounds(sizes, strides, rank, t.offset)) {
		dt_rd_error(r, line,
			    "node '%s': strides and offset reach past 2^60 "
			    "elements of storage",
			    node);
		return;
	}
	t.shape = dt_ints_intern(r->m, sizes, rank);
	t.stride = dt_ints_intern(r->m, strides, rank);
	dt_vec_push(&r->node.tensors, t);
}

void dt_rd_sharding(struct dt_rd *r)
{
	uint32_t line = r->line;
	struct dt_rd_node *p = &r->node;
	const char *node = p->name.data;
	if (p->has_sharding) {
		dt_rd_error(r, line, "node '%s' has more than one <sharding>",
			    node);
		return;
	}
	const char *mesh_name = dt_rd_required(r, DT_RD_A_MESH);
	const char *placements = dt_rd_required(r, DT_RD_A_PLACEMENTS);
	if (!mesh_name || !placements)
		return;
	int mesh = dt_module_find_mesh(r->m, dt_str_intern(r->m, mesh_name));
	if (mesh < 0) {
		dt_rd_error(r, line,
			    "node '%s': sharding names mesh '%s', which is not "
			    "declared",
			    node, mesh_name);
		return;
	}
	struct dt_sharding s = {.mesh = (uint16_t)mesh};
	char err[256];
	if (!dt_placements_parse(
		&s.placements, placements, dt_rd_attr(r, DT_RD_A_ORDER),
		&r->m->meshes.data[mesh], &r->m->strings, err, sizeof(err))) {
		dt_rd_error(r, line, "node '%s': %s", node, err);
		return;
	}
	const char *gs = dt_rd_attr(r, DT_RD_A_GLOBAL_SHAPE);
	if (gs) {
		char bad[64];
		if (!dt_rd_parse_int_list(r, gs, bad, sizeof(bad))) {
			dt_rd_error(r, line,
				    "node '%s': global-shape token '%s' is not "
				    "an integer",
				    node, bad);
			return;
		}
		for (uint32_t i = 0; i < r->scratch.len; i++)
			if (r->scratch.data[i] < 0) {
				dt_rd_error(
				    r, line,
				    "node '%s': negative global-shape size",
				    node);
				return;
			}
		if (!dt_rd_sizes_in_bounds(r->scratch.data, r->scratch.len)) {
			dt_rd_error(r, line,
				    "node '%s': global-shape '%s' has more "
				    "than 2^60 elements",
				    node, gs);
			return;
		}
		s.global_shape =
		    dt_ints_intern(r->m, r->scratch.data, r->scratch.len);
		s.has_global_shape = true;
	}
	p->sharding = s;
	p->has_sharding = true;
}

void dt_rd_meta(struct dt_rd *r)
{
	const char *key = dt_rd_required(r, DT_RD_A_KEY);
	const char *value = dt_rd_required(r, DT_RD_A_VALUE);
	if (!key || !value)
		return;
	struct dt_meta meta = {dt_str_intern(r->m, key),
			       dt_str_intern(r->m, value)};
	dt_vec_push(&r->node.metas, meta);
}

void dt_rd_arg(struct dt_rd *r, bool kw)
{
	struct dt_rd_node *p = &r->node;
	struct dt_arg a = {0};
	if (kw) {
		const char *name = dt_rd_required(r, DT_RD_A_NAME);
		a.name = dt_str_intern(r->m, name && *name ? name : "?");
	}
	bool has_value = parse_value(r, &a);
	uint32_t i = kw ? dt_vec_push(&p->kwargs, a) : dt_vec_push(&p->args, a);
	if (!has_value) {
		p->list_arg = kw ? &p->kwargs.data[i] : &p->args.data[i];
		p->list_arg->kind = DT_ARG_ITEMS;
		p->list_line = r->line;
		p->items.len = 0;
	}
}

void dt_rd_item(struct dt_rd *r)
{
	struct dt_arg a = {0};
	if (!parse_value(r, &a)) {
		dt_rd_error(r, r->line, "<item> has no value");
		a.kind = DT_ARG_NONE;
	}
	dt_vec_push(&r->node.items, a);
}

void dt_rd_list_end(struct dt_rd *r)
{
	struct dt_rd_node *p = &r->node;
	if (!p->items.len) {
		dt_rd_error(r, p->list_line, "<%s> of node '%s' has no value",
			    p->list_arg->name.id ? "kwarg" : "arg",
			    p->name.data);
		p->list_arg->kind = DT_ARG_NONE;
	} else {
		list_len(r, p->list_line,
			 p->list_arg->name.id ? "kwarg" : "arg", p->list_arg,
			 p->items.len);
		p->list_arg->v.first =
		    dt_module_add_args(r->m, p->items.data, p->items.len);
	}
	p->list_arg = NULL;
}

/* The file="NAME.bin" bytes="N" crc32="HEX" of a <data>. */
static void data_side_file(struct dt_rd *r, const char *node, const char *file)
{
	struct dt_rd_node *p = &r->node;
	const char *bytes = dt_rd_attr(r, DT_RD_A_BYTES),
		   *crc = dt_rd_attr(r, DT_RD_A_CRC32);
	int64_t size = 0;
	uint32_t sum = 0;
	bool hex = crc && strlen(crc) == 8;
	for (int i = 0; hex && i < 8; i++) {
		char c = crc[i];
		int v = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		hex = v >= 0;
		sum = sum << 4 | (uint32_t)(v & 15);
	}
	if (!bytes || !dt_rd_parse_int(bytes, &size) || size < 0 || !hex) {
		dt_rd_error(r, r->line,
			    "node '%s': <data file=...> needs bytes=\"N\" "
			    "(a byte count) and crc32=\"HEX\" (8 hex digits)",
			    node);
		return;
	}
	char err[512];
	if (!dt_side_path_ok(file, err, sizeof err)) {
		dt_rd_error(r, r->line, "node '%s': %s", node, err);
		return;
	}
	p->data_file = dt_strdup(file);
	p->data_bytes = (uint64_t)size;
	p->data_crc = sum;
}

/* <data base64="..."/> or <data file="NAME.bin" bytes="N" crc32="HEX"/>
 * of a get_attr node; checked against its tensor at </node>. */
void dt_rd_data(struct dt_rd *r)
{
	struct dt_rd_node *p = &r->node;
	uint32_t line = r->line;
	const char *node = p->name.data;
	if (p->init.kind != DT_NODE_CONSTANT) {
		dt_rd_error(r, line,
			    "node '%s': only get_attr nodes have <data>", node);
		return;
	}
	if (p->has_data) {
		dt_rd_error(r, line,
			    "node '%s' has <data> twice (first at line %u)",
			    node, p->data_line);
		return;
	}
	p->has_data = true;
	p->data_line = line;
	const char *b64 = dt_rd_attr(r, DT_RD_A_BASE64),
		   *file = dt_rd_attr(r, DT_RD_A_FILE);
	if (!b64 == !file || (b64 && (dt_rd_attr(r, DT_RD_A_BYTES) ||
				      dt_rd_attr(r, DT_RD_A_CRC32)))) {
		dt_rd_error(r, line,
			    "node '%s': <data> has either base64=\"...\" "
			    "or file=\"NAME\" bytes=\"N\" crc32=\"HEX\"",
			    node);
		return;
	}
	if (file) {
		data_side_file(r, node, file);
		return;
	}
	size_t len = strlen(b64), bad = 0;
	int64_t n = dt_base64_size(b64, len, &bad);
	if (n < 0) {
		dt_rd_error(r, line,
			    "node '%s': <data base64=...> is not "
			    "canonical base64 (RFC 4648 alphabet, '=' "
			    "padding, zero pad bits): %s %zu",
			    node,
			    bad == len ? "its length is not a multiple of 4:"
				       : "wrong at offset",
			    bad);
		return;
	}
	dt_vec_grow(&p->data, (uint32_t)n);
	dt_base64_decode(b64, len, p->data.data);
}

/* The constant's data into the module, once its tensor is known; false
 * after reporting an error. */
static bool finish_constant(struct dt_rd *r)
{
	struct dt_rd_node *p = &r->node;
	const char *node = p->name.data;
	if (!p->has_data || p->tensors.len != 1 || p->args.len ||
	    p->kwargs.len) {
		dt_rd_error(r, p->init.line,
			    "get_attr node '%s' needs one <tensor> "
			    "and one <data>, and takes no <arg>",
			    node);
		return false;
	}
	uint64_t want = dt_tensor_nbytes(r->m, &p->tensors.data[0]);
	uint64_t have = p->data_file ? p->data_bytes : p->data.len;
	if (have != want) {
		char type[128];
		dt_tensor_print(r->m, &p->tensors.data[0], type, sizeof type);
		dt_rd_error(r, p->data_line,
			    "node '%s': <data> holds %llu bytes "
			    "but its tensor %s needs %llu",
			    node, (unsigned long long)have, type,
			    (unsigned long long)want);
		return false;
	}
	char dir[4096], err[4400];
	dt_path_dir(r->m->file, dir, sizeof dir);
	int fd = p->data_file ? dt_side_file_open(dir, p->data_file, want, err,
						  sizeof err)
			      : 0;
	if (fd < 0) {
		dt_rd_error(r, p->data_line, "node '%s': %s", node, err);
		return false;
	}
	unsigned char *bytes;
	p->init.constant = dt_module_new_constant(r->m, want, &bytes);
	if (!p->data_file) {
		if (want)
			memcpy(bytes, p->data.data, want);
	} else if (dt_side_file_load(fd, p->data_file, bytes, want, p->data_crc,
				     err, sizeof err) != 0) {
		dt_rd_error(r, p->data_line, "node '%s': %s", node, err);
		return false;
	}
	for (uint64_t i = 0; p->tensors.data[0].dtype == DT_BOOL && i < want;
	     i++)
		if (bytes[i] > 1) {
			dt_rd_error(r, p->data_line,
				    "node '%s': bool element %llu "
				    "is the byte %u (bool data is 0 or 1)",
				    node, (unsigned long long)i, bytes[i]);
			return false;
		}
	return true;
}

void dt_rd_node_end(struct dt_rd *r)
{
	struct dt_rd_node *p = &r->node;
	p->active = false;
	if (p->bad)
		return;
	p->init.name = dt_str_intern_n(r->m, p->name.data, p->name.len - 1);
	uint32_t other = dt_module_find_node(r->m, p->init.name);
	if (other) {
		dt_rd_error(r, p->init.line,
			    "node '%s' is defined twice (first at line %u)",
			    p->name.data, dt_node_get(r->m, other)->line);
		return;
	}
	/* Positional args first, then keyword args: one contiguous slice. */
	uint32_t nargs = p->args.len;
	dt_vec_grow(&p->args, p->kwargs.len);
	if (p->kwargs.len)
		memcpy(p->args.data + nargs, p->kwargs.data,
		       p->kwargs.len * sizeof(struct dt_arg));
	p->init.args = p->args.data;
	p->init.nargs = p->args.len;
	if (p->init.nargs > UINT16_MAX || p->tensors.len > UINT16_MAX) {
		dt_rd_error(r, p->init.line,
			    "node '%s' has too many arguments or results",
			    p->name.data);
		return;
	}
	p->init.tensors = p->tensors.data;
	p->init.ntensors = p->tensors.len;
	p->init.metas = p->metas.data;
	p->init.nmetas = p->metas.len;
	p->init.sharding = p->has_sharding ? &p->sharding : NULL;
	if (p->init.kind == DT_NODE_CONSTANT && !finish_constant(r))
		return;
	uint32_t id = dt_module_add_node(r->m, &p->init);
	char what[200];
	/* a file of the newest minor version may use every feature */
	int minor = r->minor < DT_FORMAT_MINOR
			? dt_format_node_minor(r->m, dt_node_get(r->m, id),
					       what, sizeof what)
			: 0;
	if (minor > r->minor) {
		char have[16] = "1";
		if (r->minor)
			snprintf(have, sizeof have, "1.%d", r->minor);
		dt_rd_error(r, p->init.line,
			    "node '%s' uses %s, a format 1.%d feature, but the "
			    "file says version=\"%s\" (write version=\"1.%d\")",
			    p->name.data, what, minor, have,
			    minor);
	}
	for (uint32_t i = 0; i < p->metas.len; i++)
		if (strcmp(dt_str_get(r->m, p->metas.data[i].key),
			   DT_META_FUSED_FROM) == 0)
			dt_node_get(r->m, id)->flags |= DT_NODE_FUSED;
	dt_graph_append(r->m, id);
}

void dt_rd_node_fini(struct dt_rd_node *p)
{
	dt_vec_free(&p->name);
	dt_vec_free(&p->args);
	dt_vec_free(&p->kwargs);
	dt_vec_free(&p->items);
	dt_vec_free(&p->tensors);
	dt_vec_free(&p->metas);
	dt_vec_free(&p->data);
	dt_free(p->data_file);
}
