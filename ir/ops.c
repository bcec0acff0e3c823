// SPDX-License-Identifier: MIT
/* ops.c: the op table built from ops.def (schemas parsed into parameters,
 * targets looked up by hash), argument binding against a schema,
 * and per-node shape inference, including the structural ops. */
#include "ir.h"
#include "shape.h"

#include <stdlib.h>
#include <string.h>

/* The static part of each entry, straight from ops.def. */
struct op_def {
	const char *target, *schema;
	uint32_t flags;
	dt_shape_fn shape;
};

static const struct op_def op_defs[DT_NOPS] = {
	[DT_OP_UNKNOWN] = {"", "", 0, NULL},
#define DT_OP(e, target, schema, flags, fn) [DT_OP_##e] = {target, schema, flags, fn},
#include "ops.def"
#undef DT_OP
};

/* Bytes for the derived names and the tokenized schemas: each fits in the
 * size of the string it comes from. */
enum {
	POOL_BYTES = 16
#define DT_OP(e, target, schema, flags, fn) + sizeof(target) + sizeof(schema)
#include "ops.def"
#undef DT_OP
};

/* Slots of the target hash table: a power of two, under half full. */
enum { OP_SLOTS = 2u << (32 - __builtin_clz(DT_NOPS)) };

/* The lazily built table: the one piece of mutable global state of the
 * library's op code. Built on first use; not thread-safe (build it before
 * starting threads, e.g. by calling dt_op_get(DT_OP_UNKNOWN)). */
static struct {
	bool built;
	struct dt_op_info info[DT_NOPS];
	const char *defaults[DT_NOPS][DT_MAX_PARAMS]; /* NULL: none or None */
	/* Open addressing on the target's hash: op, 0 = empty. */
	uint16_t by_target[OP_SLOTS];
	uint32_t hash[DT_NOPS];                       /* of each target */
	char pool[POOL_BYTES];
} table;

static const struct {
	const char *name;
	enum dt_param_kind kind;
} param_kinds[] = {
	{"T", DT_PARAM_TENSOR}, {"T[]", DT_PARAM_TENSORS},
	{"int", DT_PARAM_INT},  {"int[]", DT_PARAM_INTS},
	{"float", DT_PARAM_FLOAT}, {"scalar", DT_PARAM_SCALAR},
	{"bool", DT_PARAM_BOOL}, {"str", DT_PARAM_STR},
	{"dtype", DT_PARAM_DTYPE}, {"any", DT_PARAM_ANY},
};

/* "aten.add.Tensor" -> "add", "operator.getitem" -> "getitem". */
static const char *derive_name(const char *target, char **pool)
{
	const char *s = strchr(target, '.');
	s = s ? s + 1 : target;
	const char *e = strchr(s, '.');
	size_t n = e ? (size_t)(e - s) : strlen(s);
	char *out = *pool;
	memcpy(out, s, n);
	out[n] = 0;
	*pool += n + 1;
	return out;
}

/* Parse one schema into info->params; a malformed schema is a bug in
 * ops.def, so it dies naming the op. */
static void parse_schema(enum dt_op op, char **pool)
{
	struct dt_op_info *info = &table.info[op];
	const char *schema = op_defs[op].schema;
	size_t len = strlen(schema);
	char *tok = *pool;
	memcpy(tok, schema, len + 1);
	*pool += len + 1;
	bool kwonly = false;
	while (*tok) {
		char *end = strchr(tok, ' ');
		if (end)
			*end = 0;
		if (strcmp(tok, "*") == 0) {
			if (kwonly)
				dt_die(__FILE__, __LINE__, "%s: two '*'", info->target);
			kwonly = true;
		} else {
			if (info->nparams >= DT_MAX_PARAMS)
				dt_die(__FILE__, __LINE__, "%s: too many parameters",
				       info->target);
			struct dt_op_param *p = &info->params[info->nparams];
			char *kind = strchr(tok, ':');
			if (!kind || kind == tok)
				dt_die(__FILE__, __LINE__, "%s: bad parameter '%s'",
				       info->target, tok);
			*kind++ = 0;
			p->name = tok;
			char *def = strchr(kind, '=');
			if (def) {
				*def++ = 0;
				p->has_default = true;
				size_t dl = strlen(def);
				if (dl >= 2 && def[0] == '\'' && def[dl - 1] == '\'') {
					def[dl - 1] = 0;
					def++;
				}
				if (dl == 0)
					dt_die(__FILE__, __LINE__, "%s: empty default",
					       info->target);
				if (strcmp(def, "None") != 0)
					table.defaults[op][info->nparams] = def;
			}
			size_t kl = strlen(kind);
			if (kl && kind[kl - 1] == '?') {
				p->optional = true;
				kind[kl - 1] = 0;
			}
			size_t k = 0;
			while (k < sizeof(param_kinds) / sizeof(param_kinds[0]) &&
			       strcmp(param_kinds[k].name, kind) != 0)
				k++;
			if (k == sizeof(param_kinds) / sizeof(param_kinds[0]))
				dt_die(__FILE__, __LINE__, "%s: unknown kind '%s'",
				       info->target, kind);
			p->kind = (uint8_t)param_kinds[k].kind;
			p->kwarg_only = kwonly;
			for (int q = 0; q < info->nparams; q++)
				if (strcmp(info->params[q].name, p->name) == 0)
					dt_die(__FILE__, __LINE__,
					       "%s: parameter '%s' twice",
					       info->target, p->name);
			info->nparams++;
		}
		if (!end)
			break;
		tok = end + 1;
	}
}

/* The slot of `target` (hash h) in by_target: its op's, or the empty one
 * where it would go. */
static uint32_t target_slot(const char *target, uint32_t h)
{
	uint32_t i = h & (OP_SLOTS - 1);
	for (uint16_t op; (op = table.by_target[i]); i = (i + 1) & (OP_SLOTS - 1))
		if (table.hash[op] == h && strcmp(table.info[op].target, target) == 0)
			break;
	return i;
}

static void table_build(void)
{
	char *pool = table.pool;
	for (int op = 0; op < DT_NOPS; op++) {
		struct dt_op_info *info = &table.info[op];
		info->target = op_defs[op].target;
		info->schema = op_defs[op].schema;
		info->flags = op_defs[op].flags;
		info->shape = op_defs[op].shape;
		info->name = op == DT_OP_UNKNOWN ? "unknown"
						 : derive_name(info->target, &pool);
		parse_schema((enum dt_op)op, &pool);
	}
	DT_REQUIRE(pool <= table.pool + sizeof(table.pool));
	for (int op = 1; op < DT_NOPS; op++) {
		table.hash[op] = dt_hash_bytes(table.info[op].target,
					       strlen(table.info[op].target));
		uint32_t i = target_slot(table.info[op].target, table.hash[op]);
		if (table.by_target[i])
			dt_die(__FILE__, __LINE__, "ops.def: target '%s' twice",
			       table.info[op].target);
		table.by_target[i] = (uint16_t)op;
	}
	table.built = true;
}

const struct dt_op_info *dt_op_get(enum dt_op op)
{
	DT_REQUIRE((unsigned)op < DT_NOPS);
	if (!table.built)
		table_build();
	return &table.info[op];
}

const char *dt_op_param_default(enum dt_op op, int i)
{
	DT_REQUIRE(i >= 0 && i < dt_op_get(op)->nparams);
	return table.defaults[op][i];
}

enum dt_op dt_op_lookup(const char *target)
{
	if (!target)
		return DT_OP_UNKNOWN;
	if (!table.built)
		table_build();
	return (enum dt_op)table.by_target[target_slot(
	    target, dt_hash_bytes(target, strlen(target)))];
}

/* ---- binding ---- */

static const char *arg_kind_name(enum dt_arg_kind k)
{
	static const char *const names[] = {
		[DT_ARG_NODE] = "tensor", [DT_ARG_NODES] = "tensor list",
		[DT_ARG_INT] = "int",     [DT_ARG_INTS] = "int list",
		[DT_ARG_FLOAT] = "float", [DT_ARG_FLOATS] = "float list",
		[DT_ARG_BOOL] = "bool",   [DT_ARG_STR] = "str",
		[DT_ARG_DTYPE] = "dtype", [DT_ARG_NONE] = "none",
		[DT_ARG_ITEMS] = "mixed list",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static const char *param_kind_name(enum dt_param_kind k)
{
	static const char *const names[] = {
		[DT_PARAM_TENSOR] = "tensor", [DT_PARAM_TENSORS] = "tensor list",
		[DT_PARAM_INT] = "int",       [DT_PARAM_INTS] = "int[]",
		[DT_PARAM_FLOAT] = "float",   [DT_PARAM_SCALAR] = "scalar",
		[DT_PARAM_BOOL] = "bool",     [DT_PARAM_STR] = "str",
		[DT_PARAM_DTYPE] = "dtype",   [DT_PARAM_ANY] = "any",
	};
	return names[k];
}

static bool items_all(const struct dt_module *m, const struct dt_arg *a,
		      enum dt_arg_kind k1, enum dt_arg_kind k2)
{
	for (uint32_t i = 0; i < a->len; i++) {
		uint8_t k = m->args.data[a->v.first + i].kind;
		if (k != k1 && k != k2)
			return false;
	}
	return true;
}

static bool is_number(const struct dt_arg *a)
{
	return a->kind == DT_ARG_INT || a->kind == DT_ARG_FLOAT ||
	       a->kind == DT_ARG_BOOL;
}

/* Whether arg `a` may bind to parameter `p`. `numbers` lets a tensor
 * parameter take a Python number (elementwise ops). */
static bool arg_fits(const struct dt_module *m, const struct dt_op_param *p,
		     const struct dt_arg *a, bool numbers)
{
	if (a->kind == DT_ARG_NONE)
		return p->optional || p->kind == DT_PARAM_ANY;
	switch ((enum dt_param_kind)p->kind) {
	case DT_PARAM_TENSOR:
		return a->kind == DT_ARG_NODE || (numbers && is_number(a));
	case DT_PARAM_TENSORS:
		return a->kind == DT_ARG_NODES ||
		       (a->kind == DT_ARG_INTS && a->len == 0) ||
		       (a->kind == DT_ARG_ITEMS &&
			items_all(m, a, DT_ARG_NODE, DT_ARG_NONE));
	case DT_PARAM_INT:
		return a->kind == DT_ARG_INT;
	case DT_PARAM_INTS:
		return a->kind == DT_ARG_INTS || a->kind == DT_ARG_INT ||
		       (a->kind == DT_ARG_ITEMS &&
			items_all(m, a, DT_ARG_INT, DT_ARG_INT));
	case DT_PARAM_FLOAT:
		return a->kind == DT_ARG_FLOAT || a->kind == DT_ARG_INT;
	case DT_PARAM_SCALAR:
		return is_number(a);
	case DT_PARAM_BOOL:
		return a->kind == DT_ARG_BOOL;
	case DT_PARAM_STR:
		return a->kind == DT_ARG_STR;
	case DT_PARAM_DTYPE:
		return a->kind == DT_ARG_DTYPE;
	case DT_PARAM_ANY:
		return true;
	}
	return false;
}

/* Argument kinds accepted per parameter kind: T <- node (and a number for
 * ELEMENTWISE ops); T[] <- nodes, items of nodes/none; int <- int;
 * int[] <- ints, int, items of ints; float <- float, int; scalar <- int,
 * float, bool; bool, str, dtype <- themselves; any <- anything; '?' also
 * accepts none. */
int dt_op_bind(const struct dt_module *m, const struct dt_node *n,
	       struct dt_bound_args *out, struct dt_diag *d)
{
	DT_REQUIRE(n->op != DT_OP_UNKNOWN);
	const struct dt_op_info *op = dt_op_get((enum dt_op)n->op);
	const char *name = dt_str_get(m, n->name);
	bool numbers = (op->flags & DT_OPF_ELEMENTWISE) != 0;
	bool seen[DT_MAX_PARAMS] = {false};
	int npos = 0, nrequired = 0, status = DT_OK;

	memset(out, 0, sizeof(*out));
	out->nparams = op->nparams;
	while (npos < op->nparams && !op->params[npos].kwarg_only) {
		if (!op->params[npos].has_default)
			nrequired = npos + 1;
		npos++;
	}
	int given = 0;
	while (given < n->nargs && dt_node_arg(m, n, given)->name.id == 0)
		given++;
	if (given > npos) {
		if (nrequired == npos)
			dt_node_error(d, m, n,
				      "node '%s': %s expects %d positional argument%s, got %d",
				      name, op->target, npos, npos == 1 ? "" : "s",
				      given);
		else
			dt_node_error(d, m, n,
				      "node '%s': %s expects at most %d positional arguments, got %d",
				      name, op->target, npos, given);
		return DT_EINPUT;
	}
	for (int i = 0; i < n->nargs; i++) {
		const struct dt_arg *a = dt_node_arg(m, n, i);
		int p = i;
		if (i >= given) {
			if (a->name.id == 0) {
				dt_node_error(d, m, n,
					      "node '%s': positional argument %d of %s follows a keyword argument",
					      name, i, op->target);
				status = DT_EINPUT;
				continue;
			}
			const char *kw = dt_str_get(m, a->name);
			for (p = 0; p < op->nparams; p++)
				if (strcmp(op->params[p].name, kw) == 0)
					break;
			if (p == op->nparams) {
				dt_node_error(d, m, n,
					      "node '%s': unknown keyword argument '%s' for %s",
					      name, kw, op->target);
				status = DT_EINPUT;
				continue;
			}
			if (seen[p]) {
				dt_node_error(d, m, n,
					      "node '%s': argument '%s' of %s given more than once",
					      name, kw, op->target);
				status = DT_EINPUT;
				continue;
			}
		}
		const struct dt_op_param *prm = &op->params[p];
		seen[p] = true;
		if (!arg_fits(m, prm, a, numbers)) {
			dt_node_error(d, m, n,
				      "node '%s': argument '%s' of %s expects %s, got %s",
				      name, prm->name, op->target,
				      param_kind_name((enum dt_param_kind)prm->kind),
				      arg_kind_name((enum dt_arg_kind)a->kind));
			status = DT_EINPUT;
			continue;
		}
		out->arg[p] = a->kind == DT_ARG_NONE ? NULL : a;
	}
	for (int p = 0; p < op->nparams; p++) {
		if (!seen[p] && !op->params[p].has_default) {
			dt_node_error(d, m, n, "node '%s': missing argument '%s' of %s",
				      name, op->params[p].name, op->target);
			status = DT_EINPUT;
		}
	}
	return status;
}

/* ---- inference ---- */

struct input_check {
	struct dt_shape_ctx *c;
	int status;
};

static void check_input(void *ud, uint32_t input)
{
	struct input_check *ic = ud;
	const struct dt_module *m = ic->c->m;
	if (input == 0 || input >= m->nodes.len) {
		dt_shape_fail_node(ic->c, "argument refers to node #%u, which does not exist",
				   input);
		ic->status = DT_EINPUT;
	} else if (dt_node_get(m, input)->ntensors == 0) {
		dt_shape_fail_node(ic->c, "input '%s' has no tensor metadata",
				   dt_str_get(m, dt_node_get(m, input)->name));
		ic->status = DT_EINPUT;
	}
}

int dt_infer_node(struct dt_module *m, uint32_t id, struct dt_diag *d,
		  struct dt_shape_ctx *c)
{
	DT_REQUIRE(id > 0 && id < m->nodes.len);
	memset(c, 0, sizeof(*c));
	c->m = m;
	c->node = id;
	c->diag = d;
	const struct dt_node *n = dt_node_get(m, id);
	if (n->kind == DT_NODE_PLACEHOLDER || n->kind == DT_NODE_CONSTANT)
		return dt_shape_placeholder(c);
	if (n->kind == DT_NODE_OUTPUT)
		return dt_shape_output(c);
	if (n->op == DT_OP_UNKNOWN)
		return dt_shape_fail_node(c, "unknown target '%s' (not in dtopt's op table)",
					  dt_str_get(m, n->target));
	if (n->op == DT_OP_PLACEHOLDER || n->op == DT_OP_OUTPUT ||
	    n->op == DT_OP_GET_ATTR)
		return dt_shape_fail_node(c, "'%s' is a node kind, not a call target",
					  dt_str_get(m, n->target));
	struct input_check ic = {c, DT_OK};
	dt_node_for_each_input(m, n, check_input, &ic);
	if (ic.status != DT_OK)
		return ic.status;
	if (dt_op_bind(m, n, &c->args, d) != DT_OK)
		return DT_EINPUT;
	const struct dt_op_info *op = dt_op_get((enum dt_op)n->op);
	DT_REQUIRE(op->shape != NULL);
	return op->shape(c);
}

/* ---- structural ops ---- */

/* A placeholder (or a constant) keeps the metadata it was given. */
int dt_shape_placeholder(struct dt_shape_ctx *c)
{
	const struct dt_node *n = dt_node_get(c->m, c->node);
	if (n->ntensors == 0) {
		dt_node_error(c->diag, c->m, n, "placeholder '%s' has no <tensor>",
			      dt_str_get(c->m, n->name));
		return DT_EINPUT;
	}
	if (n->ntensors > DT_MAX_RESULTS)
		return dt_shape_check_results(c, n->ntensors);
	for (uint32_t i = 0; i < n->ntensors; i++)
		c->out[i] = *dt_node_tensor(c->m, n, (int)i);
	c->nout = n->ntensors;
	return DT_OK;
}

/* The output node has no value of its own. */
int dt_shape_output(struct dt_shape_ctx *c)
{
	c->nout = 0;
	return DT_OK;
}

/* operator.getitem(tuple, i): result i of a MULTI node (negative i counts
 * from the end, as in Python). */
int dt_shape_getitem(struct dt_shape_ctx *c)
{
	const struct dt_arg *a = c->args.arg[0];
	if (!a || a->kind != DT_ARG_NODE)
		return dt_shape_fail(c, "argument 'self' must be a node");
	int64_t idx;
	dt_shape_int(c, 1, &idx);
	const struct dt_node *src = dt_node_get(c->m, a->v.node);
	if (!dt_op_has((enum dt_op)src->op, DT_OPF_MULTI))
		return dt_shape_fail(c, "'%s' is a single tensor, not a tuple (tensor indexing is not supported)",
				     dt_str_get(c->m, src->name));
	int64_t count = src->ntensors;
	if (idx < -count || idx >= count)
		return dt_shape_fail(c, "index %lld out of range for '%s' (%lld result%s)",
				     (long long)idx, dt_str_get(c->m, src->name),
				     (long long)count, count == 1 ? "" : "s");
	if (idx < 0)
		idx += count;
	c->out[0] = *dt_node_tensor(c->m, src, (int)idx);
	c->nout = 1;
	return DT_OK;
}
