// SPDX-License-Identifier: MIT
/* bucket_internal.h: what bucket-collectives' membership
 * (bucket_collectives.c) hands to its rewrite (bucket_rewrite.c). Not
 * installed. */
#ifndef DTOPT_BUCKET_INTERNAL_H
#define DTOPT_BUCKET_INTERNAL_H

#include "passes.h"

#define DT_BUCKET_CAT_FANIN DT_MAX_RESULTS /* tensors one cat takes */

/* One collective of a bucket, with its only user, its wait. */
struct dt_bucket_member {
	uint32_t coll, wait, input;
	uint32_t moved;  /* all_gather: the cat moving the gathered shards
			    onto dim `dim` (DTensor's chunk + cat), or 0 */
	int dim;
	uint32_t bucket; /* index of its bucket */
	int64_t numel;   /* of the input */
	double bytes;    /* what the bucket limit counts */
	double copied;   /* bytes a merge copies for it (read + written):
			    into the flat buffer unless the runtime computes
			    it there (runtime/place.c), out of it to its
			    shape for all_gather */
};

/* A collective's group (index and size) and reduce op (sum for
 * all_gather), with the strings its node names them by. */
struct dt_bucket_args {
	int group;
	int64_t size;
	enum dt_reduce_op reduce;
	dt_str group_name, reduce_name;
};
/* Bind them from collective node `id`; false when its group is not
 * declared or its reduce op unknown (verify reports those). */
bool dt_bucket_read_args(const struct dt_module *m, uint32_t id,
			 struct dt_diag *d, struct dt_bucket_args *a);

/* Cut one bucket, members [0, count) in graph order (the modelled time,
 * µs, the input of each is ready, its bytes, and the µs of the copies a
 * merge makes for it), into runs of consecutive members that each become
 * one collective costing alpha + beta · bytes µs, plus its members'
 * copies when it has two or more (bucket_policy.c). Writes the first
 * member of each run to run_first (count entries at most), in order;
 * returns the number of runs. */
uint32_t dt_bucket_cut(const double *ready, const double *bytes,
		       const double *copy, uint32_t count, double alpha,
		       double beta, uint32_t *run_first);

/* Replace members[0 .. count) (two or more of one kind, group, dtype and
 * reduce op, in graph order, none reading another's result) by one
 * collective over a flat buffer, inserted before the last member's
 * collective; the members' collectives and waits (and a moved member's
 * chunk, getitems and cat) leave the graph. replaced[w] becomes the node
 * that stands for each member's wait (or moved cat) w. The nodes made for
 * the members' results (each a narrow of the merged result, then what
 * gives it its shape; nothing else reads the merged result) are the ids
 * parts[0] .. parts[1]. With copy_in, the cats of the flat buffer carry
 * dtopt.copy_inputs (the interpreter copies the members in there rather
 * than computing them into it). Returns the merged collective. */
uint32_t dt_bucket_rewrite(struct dt_pass_ctx *ctx,
			   const struct dt_bucket_member *members,
			   uint32_t count, bool copy_in, uint32_t *replaced,
			   uint32_t parts[2]);

/* After the rewrites: every use of a node id < nold with replaced[id] set
 * reads the replacement, the graph is reordered so that every node follows
 * its inputs (the written order kept otherwise, the output last), and the
 * nodes reading member results get their metadata again (a member of an
 * all_reduce or reduce_scatter is a run at an offset of the merged
 * buffer). */
void dt_bucket_finish(struct dt_pass_ctx *ctx, const uint32_t *replaced,
		      uint32_t nold);

/* Result 0 of node `id`. */
static inline const struct dt_tensor *dt_bucket_tensor(const struct dt_module *m,
						       uint32_t id)
{
	return dt_node_tensor(m, dt_node_get(m, id), 0);
}

/* The shape of result 0 of `id` into shape (if not NULL); returns its
 * rank. */
static inline int dt_bucket_shape(const struct dt_module *m, uint32_t id,
				  int64_t *shape)
{
	int rank;
	const int64_t *s = dt_ints_get(m, dt_bucket_tensor(m, id)->shape, &rank);
	for (int d = 0; shape && d < rank; d++)
		shape[d] = s[d];
	return rank;
}

/* Whether result 0 of `id` is contiguous from offset 0. */
static inline bool dt_bucket_is_dense(const struct dt_module *m, uint32_t id)
{
	int64_t shape[DT_MAX_RANK], stride[DT_MAX_RANK];
	int rank = dt_bucket_shape(m, id, shape), n;
	const struct dt_tensor *t = dt_bucket_tensor(m, id);
	const int64_t *st = dt_ints_get(m, t->stride, &n);
	dt_contiguous_strides(shape, rank, stride);
	for (int d = 0; d < rank; d++)
		if (shape[d] != 1 && st[d] != stride[d])
			return false;
	return t->offset == 0;
}

#endif
