// SPDX-License-Identifier: MIT
/* sharding/search_internal.h: what the strategy search's files share
 * (sharding/space.c: expansion; sharding/search.c: costs, strategies,
 * exhaustive search; sharding/pq.c: the priority queue). Nothing else
 * uses it. */
#ifndef DTOPT_SHARDING_INTERNAL_H
#define DTOPT_SHARDING_INTERNAL_H

#include "sharding.h"

/* Whether a placement is S or _S. */
bool dt_shard_is_sharding(const struct dt_placement *p);
/* Equal placements on one mesh dim (kind, dim, split factor, op). */
bool dt_shard_same_placement(const struct dt_placement *a,
			     const struct dt_placement *b);
/* Whether input i takes part in the search (its placement matters). */
bool dt_shard_input_active(const struct dt_shard_space *s, uint32_t i);
/* Index of placement p among input i's candidates, or -1. */
int dt_shard_cand_index(const struct dt_shard_space *s, uint32_t i,
			const struct dt_placement *p);
/* A view's nested _S (semantics §6.1: plain S mesh dims first, then _S
 * of the pieces of their chunk) between its own form (`rows` false: the
 * factor counts the pieces of each S chunk, 1 written S) and the form its
 * strided rows write (`rows` true: the factor counts the pieces of the
 * whole dim, times the S shards; search.c's nest_strided divides it
 * back). A state's placements are in rows form, what they cost in their
 * own: [S(0), _S(0,2)] in rows form on a (2,2) mesh is S(0) S(0). */
void dt_shard_nested_form(const struct dt_mesh *mesh, struct dt_placements *pl,
			  bool rows);
/* The row_origin of the all-replicate row (filled from no rule row). */
#define DT_SHARD_NO_ORIGIN UINT32_MAX

/* A state: per input, a candidate index per mesh dim and then its
 * keep-the-start-order flag (s->state_bytes in all). */

/* Plan cost of input i in state bytes `st` (its mesh dims + 1), cached. */
double dt_shard_input_state_cost(struct dt_shard_space *s, uint32_t i,
				 const uint8_t *st);
/* Sum of the active inputs' costs, in input order (bit-equal for equal
 * states, whichever search adds them). */
double dt_shard_state_cost(struct dt_shard_space *s, const uint8_t *st);
/* Bytes of `st` that differ from the start state. */
uint32_t dt_shard_state_changes(const struct dt_shard_space *s, const uint8_t *st);
/* The search order: cost, changes, then the state's bytes. */
int dt_shard_compare_states(double ca, uint32_t na, const uint8_t *sa, double cb,
			    uint32_t nb, const uint8_t *sb, uint32_t bytes);

/* Build strategy `rows` (a row per mesh dim) into s->strategy; whether it
 * passes the filters. */
bool dt_shard_build_strategy(struct dt_shard_space *s, const uint32_t *rows);
/* Fill c from the strategy just built, its inputs' state and cost. */
void dt_shard_fill_choice(struct dt_shard_space *s, struct dt_shard_choice *c,
			  const uint32_t *rows, const uint8_t *st, double cost);

/* The priority-queue search (sharding/pq.c): sets out (found or not) and
 * adds to *stats. */
int dt_shard_search_pq(struct dt_shard_space *s, struct dt_shard_choice *out,
		       struct dt_shard_stats *stats);

#endif
