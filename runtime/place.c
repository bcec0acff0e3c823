// SPDX-License-Identifier: MIT
/* place.c: where the interpreter lets a producer write straight into the
 * buffer of the cat that reads it (design.md, Runtime; semantics §4.7).
 * bucket-collectives flattens each member and cats them into the flat
 * buffer of one collective; copying every member there costs a pass over
 * the bucket's bytes and a buffer per member. Instead the member's kernel
 * writes its result into its slice of the cat's buffer, and the cat
 * copies only the inputs that were not written in place. A producer P is
 * placed into cat C when
 *   - C's result is contiguous from offset 0 and every dim before C's cat
 *     dim has size 1 (each input is one contiguous run of C's buffer);
 *   - input k of C is P's result, through views (one result each) that
 *     keep it contiguous from offset 0 with P's element count (reshape,
 *     view, flatten of a dense value: the same bytes);
 *   - P is a kernel (writes a fresh buffer) or an input (placeholder or
 *     constant, materialized once: then into a buffer C keeps for the
 *     whole run, FSDP2's flat parameters), with one dense result of C's
 *     dtype, and P and every view on the way are read only by the next
 *     node on the way (no other use: P's value is not kept alive past C by
 *     anyone else, so the cat's buffer lives no longer than it did);
 *   - P is not placed already (an input listed twice is copied);
 *   - C has no dtopt.copy_inputs meta of value "true" (bucket-collectives'
 *     choice under a memory budget: a placed cat's buffer lives from its
 *     first placed producer on).
 * A placed cat is itself a producer: a cat of cats nests. Values are
 * immutable once written (kernels write only their fresh outputs), so a
 * slice written before the cat runs holds exactly what the cat would
 * have copied there: the results are bitwise those of the copy. */
#include "internal.h"

#include <string.h>

struct planner {
	const struct dt_module *m;
	const uint8_t *kind;
	struct dt_uses uses;
	uint32_t *host;
	int64_t *slot;
};

/* Result 0 of `id` is contiguous from offset 0 (size-1 dims' strides do
 * not matter); its element count to *numel. */
static bool dense(const struct dt_module *m, uint32_t id, int64_t *numel)
{
	const struct dt_node *n = dt_node_get(m, id);
	if (n->ntensors != 1)
		return false;
	struct dt_rt_tensor t;
	dt_rt_from_meta(&t, m, dt_node_tensor(m, n, 0));
	*numel = dt_rt_numel(&t);
	return t.offset == 0 && dt_rt_is_contiguous(&t);
}

/* The producer whose result input `x` of cat `c` is (through views), or
 * 0 when it cannot be placed. */
static uint32_t producer(struct planner *p, uint32_t c, uint32_t x)
{
	const struct dt_module *m = p->m;
	enum dt_dtype dtype = dt_node_tensor(m, dt_node_get(m, c), 0)->dtype;
	int64_t want, numel;
	if (!dense(m, x, &want) || dt_node_tensor(m, dt_node_get(m, x), 0)->dtype != dtype)
		return 0;
	while (p->kind[x] == DT_PLACE_VIEW) {
		const struct dt_arg *a = dt_node_arg(m, dt_node_get(m, x), 0);
		if (dt_uses_count(&p->uses, x) != 1 || !a || a->kind != DT_ARG_NODE)
			return 0;
		x = a->v.node;
		if (!dense(m, x, &numel) || numel != want)
			return 0;
	}
	if ((p->kind[x] != DT_PLACE_KERNEL && p->kind[x] != DT_PLACE_INPUT) ||
	    dt_uses_count(&p->uses, x) != 1 ||
	    p->host[x] || x == c ||
	    dt_node_tensor(m, dt_node_get(m, x), 0)->dtype != dtype)
		return 0;
	return x;
}

static int64_t numel_of(const struct dt_module *m, uint32_t id)
{
	struct dt_rt_tensor t;
	dt_rt_from_meta(&t, m, dt_node_tensor(m, dt_node_get(m, id), 0));
	return dt_rt_numel(&t);
}

/* Place the producers cat `c` can take. */
static void plan_cat(struct planner *p, uint32_t c)
{
	const struct dt_module *m = p->m;
	const struct dt_node *n = dt_node_get(m, c);
	const struct dt_arg *list = dt_node_arg(m, n, 0);
	const struct dt_arg *dim = n->nargs > 1 ? dt_node_arg(m, n, 1) : NULL;
	const struct dt_meta *copy_in = dt_node_meta(m, n, DT_META_COPY_INPUTS);
	int64_t numel;
	if (!list || list->kind != DT_ARG_NODES || !dense(m, c, &numel) ||
	    (copy_in && strcmp(dt_str_get(m, copy_in->value), "true") == 0))
		return;
	int rank;
	const int64_t *shape = dt_ints_get(m, dt_node_tensor(m, n, 0)->shape, &rank);
	int64_t d = dim && dim->kind == DT_ARG_INT ? dim->v.i : 0;
	d = d < 0 ? d + rank : d;
	for (int64_t k = 0; k < d && k < rank; k++)
		if (shape[k] != 1)
			return;
	int64_t at = 0;
	for (uint32_t k = 0; k < list->len; k++) {
		uint32_t x = m->refs.data[list->v.first + k];
		uint32_t src = producer(p, c, x);
		if (src) {
			p->host[src] = c;
			p->slot[src] = at;
		}
		at += numel_of(m, x);
	}
}

void dt_place_plan(const struct dt_module *m, const uint32_t *order,
		   uint32_t count, const uint8_t *kind, uint32_t *host,
		   int64_t *slot)
{
	struct planner p = {.m = m, .kind = kind, .host = host, .slot = slot};
	dt_uses_fill(&p.uses, m);
	/* last cat first: an outer cat claims its inner cats before they
	 * claim their producers (either order gives the same placement) */
	for (uint32_t i = count; i-- > 0;)
		if (kind[order[i]] == DT_PLACE_KERNEL &&
		    dt_node_get(m, order[i])->op == DT_OP_CAT)
			plan_cat(&p, order[i]);
	dt_uses_fini(&p.uses);
}
