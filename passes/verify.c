// SPDX-License-Identifier: MIT
/* verify.c: the `verify` pass, a wrapper of dt_verify (ir/verify.c).
 * Requires: nothing. Establishes: VERIFIED. Changes nothing. O(nodes). */
#include "passes.h"

static int run_verify(struct dt_pass_ctx *ctx)
{
	return dt_verify(ctx->m, ctx->diag);
}

const struct dt_pass dt_pass_verify = {
	.name = "verify",
	.help = "structural and metadata checks",
	.establishes = DT_PROP_VERIFIED,
	.preserves = ~0u,
	.run = run_verify,
};
