// SPDX-License-Identifier: MIT
/* diff.h: what the files of the `diff` subcommand share: the pair of
 * modules with their node matching (diff_match.c), the differences of a
 * matched pair and of the module-level items (diff_changes.c), printed by
 * cmd_diff.c. Private to those three files. */
#ifndef DTOPT_DIFF_H
#define DTOPT_DIFF_H

#include "ir.h"

#include <stdio.h>

enum dt_diff_match_how {
	DT_DIFF_MATCH_NONE,
	DT_DIFF_MATCH_NAME,
	DT_DIFF_MATCH_STRUCTURE, /* a rename, hence a difference */
};

struct dt_diff {
	struct dt_module *a, *b;
	uint32_t *a2b, *b2a; /* node id -> matched node of the other, 0 = none */
	uint8_t *how;        /* per B node: enum dt_diff_match_how */
};

/* A string printed through a FILE (open_memstream); freed with free(). */
struct dt_capture {
	char *s;
	size_t len;
	FILE *f;
};

static inline FILE *dt_capture_open(struct dt_capture *c)
{
	c->s = NULL;
	c->len = 0;
	c->f = open_memstream(&c->s, &c->len);
	if (!c->f)
		dt_die(__FILE__, __LINE__, "open_memstream failed");
	return c->f;
}

static inline char *dt_capture_close(struct dt_capture *c)
{
	fclose(c->f);
	return c->s;
}

/* ---- matching (diff_match.c; A's node ids seen through a2b) ---- */

/* Match the nodes of d->b to those of d->a (d->a2b, d->b2a, d->how
 * zeroed, sized to the modules' node arrays): by name first, then the
 * remaining call nodes of B, in graph order, by structure. apos[id] is
 * A node id's position in A's graph order. */
void dt_diff_match(struct dt_diff *d, const uint32_t *apos);
/* String x of A equals string y of B. */
bool dt_diff_str_equal(const struct dt_diff *d, dt_str x, dt_str y);
/* Int list x of A equals int list y of B. */
bool dt_diff_ints_equal(const struct dt_diff *d, dt_ints x, dt_ints y);
/* Argument x of A equals argument y of B: node references through a2b,
 * floats bitwise with any NaN equal to any NaN. */
bool dt_diff_arg_equal(const struct dt_diff *d, const struct dt_arg *x,
		       const struct dt_arg *y);
/* How many of n's arguments (in m) come before its first keyword. */
int dt_diff_positional_count(const struct dt_module *m,
			     const struct dt_node *n);
/* The keyword argument of `n` in `m` named like `name` of module `from`,
 * or NULL. */
const struct dt_arg *dt_diff_find_kwarg(const struct dt_module *m,
					const struct dt_node *n,
					const struct dt_module *from,
					dt_str name);
/* A node x and B node y have the same positional count and keyword names
 * (in any order). */
bool dt_diff_args_same_shape(const struct dt_diff *d, const struct dt_node *x,
			     const struct dt_node *y);

/* ---- what changed (diff_changes.c) ---- */

struct dt_diff_change {
	char *what; /* "arg 1", "kwarg group_name", "tensor", "meta recompute" */
	char *a, *b; /* the values in A and B; NULL = absent */
};
typedef DT_VEC(struct dt_diff_change) dt_diff_change_vec;

/* A difference outside the nodes: a mesh, a group or a graph attribute.
 * `a` NULL: added; `b` NULL: removed. */
struct dt_diff_item {
	const char *section; /* "graph", "mesh", "group" */
	char *name;
	char *a, *b;
	bool a_generated, b_generated;
};
typedef DT_VEC(struct dt_diff_item) dt_diff_item_vec;

/* The differences between B node `y_id` and its match in A, appended to
 * `out` (each string owned by the vector). */
void dt_diff_node_changes(const struct dt_diff *d, uint32_t y_id,
			  dt_diff_change_vec *out);
/* Free the strings of `v` and empty it (its array is kept). */
void dt_diff_changes_clear(dt_diff_change_vec *v);
/* The differences of the graph attributes, meshes and groups, appended to
 * `out`: removed ones first (A's order), then B's in order. */
void dt_diff_module_changes(const struct dt_diff *d, dt_diff_item_vec *out);
/* Free the strings of `v` and the vector itself. */
void dt_diff_items_fini(dt_diff_item_vec *v);
/* A heap string (free() it) printed like printf. */
char *dt_diff_printf(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
/* n's tensor types as "f32[4, 8]{8, 1}", parenthesized unless one. */
void dt_diff_print_types(const struct dt_module *m, const struct dt_node *n,
			 FILE *f);
/* n's first meta with key `key`, or NULL. */
const struct dt_meta *dt_diff_find_meta(const struct dt_module *m,
					const struct dt_node *n,
					const char *key);

#endif
