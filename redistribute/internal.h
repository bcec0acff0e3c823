// SPDX-License-Identifier: MIT
/* redistribute/internal.h: what the planner's files (redistribute/planner.c,
 * redistribute/search.c, redistribute/merge.c) share and nothing else
 * uses. */
#ifndef DTOPT_REDISTRIBUTE_INTERNAL_H
#define DTOPT_REDISTRIBUTE_INTERNAL_H

#include "redistribute.h"

/* Whether a placement is S or _S (of any tensor dim). */
bool dt_redist_is_shard(const struct dt_placement *p);
/* DTensor's placement equality on one mesh dim (orders aside). */
bool dt_redist_same_placement(const struct dt_placement *a,
			      const struct dt_placement *b);
/* Whether partial ops a and b may meet in one placement list. */
bool dt_redist_ops_conflict(int a, int b);

/* Fill step `s` (group -1, one mesh dim `m`) for the change of mesh dim m
 * from `before` to `after`, which differ in that dim only: kind, tensor
 * dims, reduce op, divisor, evenness, bytes and cost. The change must be
 * valid (not S->P, not P(x)->P(y)). */
void dt_redist_step_fill(const struct dt_redist_plan *plan,
			 struct dt_redist_step *s, int m,
			 const struct dt_placements *before,
			 const struct dt_placements *after);
/* Recompute s->even, s->bytes and s->cost_us from its kind, dims, group
 * size and `before` (DTensor's one-step bookkeeping: the local size is the
 * global size over the shard count of `before`; an all_gather charges its
 * gathered size). */
void dt_redist_step_price(const struct dt_redist_plan *plan,
			  struct dt_redist_step *s);

/* The search's state key of placements with their shard order (8 bits a
 * mesh dim: kind, tensor dim or reduce op, order position). */
uint64_t dt_redist_state_key(const struct dt_placements *pl);

/* The min-memory plan of plan->src -> plan->dst (redistribute/
 * min_memory.c); appends the steps. Returns false, appending nothing, when
 * the request is outside its reach (partial or _S placements, too many
 * states): the caller plans DTensor's way instead. */
bool dt_redist_min_memory(struct dt_redist_plan *plan);

/* Plan->src to plan->dst (both normalized: no _S) by DTensor's min-cost
 * search, continuing one of `cache`'s when it has one from src (NULL: a
 * search of its own); appends the steps to plan->steps. DT_OK, or
 * DT_EINPUT with a message when the search grows past its state limit. */
int dt_redist_search(struct dt_redist_plan *plan,
		     const struct dt_placements *src,
		     const struct dt_placements *dst,
		     struct dt_redist_searches *cache, char *err,
		     size_t errlen);

#endif
