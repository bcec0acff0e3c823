// SPDX-License-Identifier: MIT
/* views.h: what fuse-collectives and cancel-views agree a "view step" is,
 * and when a chain of them is the identity (semantics §4.1, §4.5). */
#ifndef DTOPT_VIEWS_H
#define DTOPT_VIEWS_H

#include "ir.h"

/* Whether `n` re-reads the storage of its input without copying: a call
 * with one tensor result whose op aliases its first input (permute,
 * transpose, t, view, unsqueeze, squeeze, alias, detach, expand, slice, …),
 * or a reshape / _unsafe_view that PyTorch's stride rule can serve as a
 * view. A reshape that must copy is not a step: a chain through it can end
 * with the start's metadata and still hold permuted values. The node's
 * tensor must be known (shape-infer). */
bool dt_is_view_step(const struct dt_module *m, const struct dt_node *n);

/* Whether single-result node `n` (a reshape, _unsafe_view, _reshape_alias
 * or as_strided) has the shape, strides and storage offset that view()
 * gives over its first input's metadata: then it reshapes values, and its
 * stated strides describe only that layout. */
bool dt_reshape_is_view(const struct dt_module *m, const struct dt_node *n);

/* The node a view step reads (its first argument). */
uint32_t dt_view_step_input(const struct dt_module *m, const struct dt_node *n);

/* Equal dtype, shape, stride and storage offset: two views of one storage
 * with equal metadata hold the same values. */
bool dt_tensor_same(const struct dt_tensor *a, const struct dt_tensor *b);

#endif
