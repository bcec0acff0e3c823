// SPDX-License-Identifier: MIT
/* test_prune.c: the whole-graph problem's strategy pruning
 * (sharding/problem_prune.c) on hand-made nodes: which strategies the cap
 * keeps (one per result placement first, by forward cost), the
 * node-by-node choices and the anchored and chained ones kept beyond the
 * cap, and the forward costs a consumer ranks by (a chain's from the
 * chained strategy it reads); and the per-rank bytes usages count
 * (dt_shard_local_bytes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "problem_internal.h"
#include "problem_prune.h"

/* R or S(d), on a 1-D mesh. */
static struct dt_placements pl(int d)
{
	struct dt_placements p = {.ndim = 1};
	if (d >= 0)
		p.p[0] = (struct dt_placement){.kind = DT_PL_SHARD,
					       .dim = (int16_t)d};
	return p;
}

/* A move costs 0 when nothing changes, else 1000 × (1 + code of the
 * target: R 0, S(d) d + 1). */
static int64_t move(void *ud, uint32_t i, const struct dt_placements *src,
		    const struct dt_placements *dst)
{
	(void)i;
	(*(int *)ud)++;
	if (dt_placements_equal(src, dst))
		return 0;
	return 1000 * (1 + (dst->p[0].kind == DT_PL_SHARD ? dst->p[0].dim + 1
							  : 0));
}

static void test_cap_and_forward(void **state)
{
	(void)state;
	struct dt_prune p = {.cap = 2};
	int calls = 0;
	uint8_t keep[8];
	/* Node 0: a source at R. */
	struct dt_placements r = pl(-1);
	int64_t zero[8] = {0}, use[8] = {5, 5, 5, 5, 5, 5, 5, 5};
	int64_t c0 = 0;
	assert_int_equal(dt_prune_node(&p, 0, 1, &c0, zero, use, &r, 1, NULL, 0,
				       move, &calls, keep),
			 1);
	/* Node 1: six strategies reading node 0 (results, then input):
	 *   s  cost  reads  result  forward
	 *   0  100   R      S(1)    100      (greedy: least moves, first)
	 *   1  10    S(0)   S(4)    2010
	 *   2  50    R      S(1)    50       (floor: least cost + moves)
	 *   3  60    R      S(1)    60       (same result as 2, dearer)
	 *   4  70    R      S(2)    70
	 *   5  5     S(3)   S(5)    5005
	 * Cap 2: the best of the two best results (2, 4), plus 0. */
	int64_t cost[6] = {100, 10, 50, 60, 70, 5};
	int res[6] = {1, 4, 1, 1, 2, 5}, in[6] = {-1, 0, -1, -1, -1, 3};
	struct dt_placements strat[12];
	for (int s = 0; s < 6; s++) {
		strat[2 * s] = pl(res[s]);
		strat[2 * s + 1] = pl(in[s]);
	}
	const struct dt_placements *src0[1] = {&r};
	struct dt_prune_input input = {.producer = 0, .nsrc = 1, .src = src0,
				       .dst = &strat[1], .stride = 2};
	assert_int_equal(dt_prune_node(&p, 1, 6, cost, zero, use, strat, 2, &input,
				       1, move, &calls, keep),
			 3);
	uint8_t want[6] = {1, 0, 1, 0, 1, 0};
	assert_memory_equal(keep, want, sizeof want);
	assert_int_equal(p.floor.data[1], 1);  /* s2, kept second */
	assert_int_equal(p.greedy.data[1], 0); /* s0 */
	const int64_t *f1 = &p.fwd.data[p.first.data[1]];
	assert_int_equal(f1[0], 100);
	assert_int_equal(f1[1], 50);
	assert_int_equal(f1[2], 70);
	/* Node 2 reads node 1's kept strategies (results S(1), S(1), S(2)
	 * at 100, 50, 70): t0 reads S(1), from s2 at 50 + 0; t1 reads S(2),
	 * from s4 at 70 + 0 (s2 + a move to S(2) would cost 50 + 4000). */
	int64_t cost2[2] = {1, 2};
	struct dt_placements strat2[4] = {pl(-1), pl(1), pl(-1), pl(2)};
	const struct dt_placements *src1[3] = {&strat[2 * 0], &strat[2 * 2],
					       &strat[2 * 4]};
	struct dt_prune_input input2 = {.producer = 1, .nsrc = 3,
					.src = src1, .dst = &strat2[1],
					.stride = 2};
	assert_int_equal(dt_prune_node(&p, 2, 2, cost2, zero, use, strat2, 2,
				       &input2, 1, move, &calls, keep),
			 2);
	const int64_t *f2 = &p.fwd.data[p.first.data[2]];
	assert_int_equal(f2[0], 51);
	assert_int_equal(f2[1], 72);
	assert_int_equal(p.floor.data[2], 0);
	assert_true(p.before == 9 && p.after == 6 && p.capped == 1);
	assert_true(p.widest == 1 && p.widest_n == 6);
	assert_true(calls > 0);
	dt_prune_fini(&p);
}

/* Without a cap every strategy stays; with ties the earlier wins; the
 * least usage is kept. */
static void test_no_cap_and_ties(void **state)
{
	(void)state;
	struct dt_prune p = {.cap = 0};
	int calls = 0;
	uint8_t keep[4];
	int64_t cost[4] = {7, 7, 7, 7}, zero[4] = {0}, use[4] = {3, 3, 3, 3};
	struct dt_placements res[4] = {pl(0), pl(1), pl(2), pl(3)};
	assert_int_equal(dt_prune_node(&p, 0, 4, cost, zero, use, res, 1, NULL, 0,
				       move, &calls, keep),
			 4);
	p.cap = 1;
	assert_int_equal(dt_prune_node(&p, 1, 4, cost, zero, use, res, 1, NULL, 0,
				       move, &calls, keep),
			 1);
	assert_true(keep[0] && !keep[1] && !keep[2] && !keep[3]);
	/* The strategy of least usage stays too (a memory budget may need
	 * it). */
	use[2] = 1;
	assert_int_equal(dt_prune_node(&p, 2, 4, cost, zero, use, res, 1, NULL,
				       0, move, &calls, keep),
			 2);
	assert_true(keep[0] && !keep[1] && keep[2] && !keep[3]);
	dt_prune_fini(&p);
}

/* Beyond the cap a node keeps, for all-replicated and per anchor (the
 * graph's input pins), its strategy of least forward cost giving it. */
static void test_anchors(void **state)
{
	(void)state;
	struct dt_prune p = {.cap = 1};
	int calls = 0;
	uint8_t keep[5];
	int64_t cost[5] = {1, 2, 9, 8, 7}, zero[5] = {0};
	int64_t use[5] = {3, 3, 3, 3, 3};
	struct dt_placements res[5] = {pl(0), pl(1), pl(-1), pl(2), pl(2)};
	assert_int_equal(dt_prune_node(&p, 0, 5, cost, zero, use, res, 1, NULL,
				       0, move, &calls, keep),
			 2);
	assert_true(keep[0] && !keep[1] && keep[2] && !keep[3] && !keep[4]);
	struct dt_placements s2 = pl(2);
	dt_vec_push(&p.anchors, s2);
	assert_int_equal(dt_prune_node(&p, 1, 5, cost, zero, use, res, 1, NULL,
				       0, move, &calls, keep),
			 3);
	assert_true(keep[0] && !keep[1] && keep[2] && !keep[3] && keep[4]);
	dt_prune_fini(&p);
}

/* P(sum) on a 1-D mesh. */
static struct dt_placements partial(void)
{
	struct dt_placements p = {.ndim = 1};
	p.p[0] = (struct dt_placement){.kind = DT_PL_PARTIAL,
				       .reduce = DT_REDUCE_SUM};
	return p;
}

/* Beyond the cap a node keeps its chained strategies: those reading its
 * input where a chained strategy of the producer leaves it (or that
 * reduced to R), the least usage per result first; a chain ends where
 * the input would move otherwise. */
static void test_chains(void **state)
{
	(void)state;
	struct dt_prune p = {.cap = 1};
	int calls = 0;
	uint8_t keep[6];
	int64_t zero[6] = {0}, use[6] = {9, 9, 9, 9, 9, 9};
	/* Node 0, no inputs: S(0) (cheapest, kept) and P(sum); with cap 1
	 * only S(0) is kept, and chains start from it. */
	int64_t c0[2] = {1, 2};
	struct dt_placements r0[2] = {pl(0), partial()};
	assert_int_equal(dt_prune_node(&p, 0, 2, c0, zero, use, r0, 1, NULL, 0,
				       move, &calls, keep),
			 1);
	assert_true(keep[0] && !keep[1] && p.chained.data[0]);
	/* Node 1 reads node 0 (result, input):
	 *   s  cost  reads  result  usage
	 *   0  1     R      R       9      (cheapest: the cap keeps it)
	 *   1  50    S(0)   S(0)    4      chained
	 *   2  60    S(0)   S(2)    2      chained, least usage
	 *   3  40    S(0)   S(2)    2      chained, same result, cheaper
	 *   4  70    S(1)   S(1)    5      not chained: S(1) is a move
	 * The cap keeps 3 (least forward cost; least usage too), 0 (the
	 * greedy choice: no pin, every strategy ties), and the chains 1. */
	int64_t cost[5] = {1, 50, 60, 40, 70}, use1[5] = {9, 4, 2, 2, 5};
	int res[5] = {-1, 0, 2, 2, 1}, in[5] = {-1, 0, 0, 0, 1};
	struct dt_placements strat[10];
	for (int s = 0; s < 5; s++) {
		strat[2 * s] = pl(res[s]);
		strat[2 * s + 1] = pl(in[s]);
	}
	const struct dt_placements *src0[1] = {&r0[0]};
	struct dt_prune_input input = {.producer = 0, .nsrc = 1, .src = src0,
				       .dst = &strat[1], .stride = 2};
	assert_int_equal(dt_prune_node(&p, 1, 5, cost, zero, use1, strat, 2,
				       &input, 1, move, &calls, keep),
			 3);
	assert_true(keep[0] && keep[1] && !keep[2] && keep[3] && !keep[4]);
	/* Kept in order 0, 1, 3: 1 and 3 chained, 0 not (R is no chain of
	 * S(0) but its gather, which only a graph input may have). */
	const uint8_t *ch = &p.chained.data[p.first.data[1]];
	assert_true(!ch[0] && ch[1] && ch[2]);
	/* From a graph input a chain may gather it: R reads S(0) gathered. */
	input.source = true;
	assert_int_equal(dt_prune_node(&p, 2, 5, cost, zero, use1, strat, 2,
				       &input, 1, move, &calls, keep),
			 3);
	assert_true(keep[0] && keep[1] && !keep[2] && keep[3] && !keep[4]);
	ch = &p.chained.data[p.first.data[2]];
	assert_true(ch[0] && ch[1] && ch[2]);
	dt_prune_fini(&p);
}

/* As move, but no redistribution makes a partial (DTensor's). */
static int64_t move_to_partial(void *ud, uint32_t i,
			       const struct dt_placements *src,
			       const struct dt_placements *dst)
{
	if (dst->p[0].kind == DT_PL_PARTIAL && !dt_placements_equal(src, dst))
		return DT_SOLVE_INFINITE;
	return move(ud, i, src, dst);
}

/* A chain is weighed from the chained strategy it reads: a partial sum
 * kept by the producer (a weight gradient) but neither among its
 * DT_SHARD_PRUNE_SOURCES cheapest placements nor a node-by-node choice is
 * reached at its own forward cost, not at the ∞ of a move from the
 * others; so the consumer reading it as it is (t of a weight gradient,
 * an expert's) is a chain the cap keeps. */
static void test_chain_from_partial(void **state)
{
	(void)state;
	struct dt_prune p = {.cap = 4};
	int calls = 0;
	uint8_t keep[4];
	int64_t zero[4] = {0}, use[4] = {9, 9, 9, 9};
	/* Node 0, no inputs, everything kept and chained: S(0) 1, R 2,
	 * S(1) 3, P(sum) 50. */
	int64_t c0[4] = {1, 2, 3, 50};
	struct dt_placements r0[4] = {pl(0), pl(-1), pl(1), partial()};
	assert_int_equal(dt_prune_node(&p, 0, 4, c0, zero, use, r0, 1, NULL, 0,
				       move_to_partial, &calls, keep),
			 4);
	/* Node 1 (a transpose, cost 1): R <- R, S(0) <- S(0), P <- P; with
	 * cap 1 the cap keeps S(0), the chains all three. */
	p.cap = 1;
	int64_t cost[3] = {1, 1, 1};
	struct dt_placements strat[6] = {pl(-1), pl(-1), pl(0), pl(0),
					 partial(), partial()};
	const struct dt_placements *src0[4] = {&r0[0], &r0[1], &r0[2], &r0[3]};
	struct dt_prune_input input = {.producer = 0, .nsrc = 4, .src = src0,
				       .dst = &strat[1], .stride = 2};
	assert_int_equal(dt_prune_node(&p, 1, 3, cost, zero, use, strat, 2,
				       &input, 1, move_to_partial, &calls, keep),
			 3);
	const int64_t *f = &p.fwd.data[p.first.data[1]];
	assert_int_equal(f[0], 3);  /* R <- R: node 0's R, 2 + 1 */
	assert_int_equal(f[1], 2);  /* S(0) <- S(0): 1 + 1 */
	assert_int_equal(f[2], 51); /* P <- P: 50 + 1 */
	assert_true(p.chained.data[p.first.data[1] + 2]);
	dt_prune_fini(&p);
}

/* A chain slices a replicated input (each rank keeps its chunk, no data
 * moves) only where another input is read sharded as it is on that mesh
 * dim: a batch-sharded bmm reading a replicated, expanded weight, not a
 * value cut finer for its own sake. */
static void test_chain_slices(void **state)
{
	(void)state;
	struct dt_prune p = {.cap = 1};
	int calls = 0;
	uint8_t keep[3];
	int64_t zero[3] = {0}, use[3] = {9, 9, 9};
	/* Nodes 0 (an activation at S(0)) and 1 (a weight at R), no
	 * inputs: chains start from them. */
	struct dt_placements s0 = pl(0), r = pl(-1);
	int64_t c0 = 1;
	assert_int_equal(dt_prune_node(&p, 0, 1, &c0, zero, use, &s0, 1, NULL,
				       0, move, &calls, keep),
			 1);
	assert_int_equal(dt_prune_node(&p, 1, 1, &c0, zero, use, &r, 1, NULL,
				       0, move, &calls, keep),
			 1);
	/* Node 2 reads both (result, input 0, input 1):
	 *   s  cost  result  reads
	 *   0  5000  S(0)    S(0), S(0)   the weight sliced where the
	 *                                 activation is S(0): a chain
	 *   1  1     R       R, R         the activation gathered: none
	 * The cap keeps 1 (least forward cost), the chain 0. */
	int64_t cost[2] = {5000, 1};
	struct dt_placements strat[6] = {pl(0), pl(0), pl(0),
					 pl(-1), pl(-1), pl(-1)};
	const struct dt_placements *src0[1] = {&s0}, *src1[1] = {&r};
	struct dt_prune_input in2[2] = {
	    {.producer = 0, .nsrc = 1, .src = src0, .dst = &strat[1],
	     .stride = 3},
	    {.producer = 1, .nsrc = 1, .src = src1, .dst = &strat[2],
	     .stride = 3}};
	assert_int_equal(dt_prune_node(&p, 2, 2, cost, zero, use, strat, 3,
				       in2, 2, move, &calls, keep),
			 2);
	assert_true(p.chained.data[p.first.data[2]]);
	/* Node 3 reads the weight alone:
	 *   0  1     S(0)    S(0)   sliced with no sharded operand: none
	 *   1  100   R       R      as it is: a chain
	 *   2  1     S(1)    S(1)   none (the least usage: kept for it)
	 * The cap and the chains keep 1, the least usage 2, not 0. */
	int64_t cost3[3] = {1, 100, 1}, use3[3] = {4, 9, 2};
	struct dt_placements strat3[6] = {pl(0), pl(0), pl(-1),
					  pl(-1), pl(1), pl(1)};
	struct dt_prune_input in3 = {.producer = 1, .nsrc = 1, .src = src1,
				     .dst = &strat3[1], .stride = 2};
	assert_int_equal(dt_prune_node(&p, 3, 3, cost3, zero, use3, strat3, 2,
				       &in3, 1, move, &calls, keep),
			 2);
	assert_true(!keep[0] && keep[1] && keep[2]);
	dt_prune_fini(&p);
}

/* Every chain reaching a node continues through it: for each chained
 * placement of an input, the best strategy reading it there as it is,
 * though another strategy gives the same result (one per result would
 * keep a way to make it that the chain reaching it cannot take). */
static void test_chain_continued(void **state)
{
	(void)state;
	struct dt_prune p = {.cap = 4};
	int calls = 0;
	uint8_t keep[3];
	int64_t zero[3] = {0}, use[3] = {9, 9, 9};
	/* Node 0, no inputs: S(0) and P(sum), both chained. */
	int64_t c0[2] = {1, 2};
	struct dt_placements r0[2] = {pl(0), partial()};
	assert_int_equal(dt_prune_node(&p, 0, 2, c0, zero, use, r0, 1, NULL, 0,
				       move_to_partial, &calls, keep),
			 2);
	/* Node 1, a sum over dim 0 (cap 1):
	 *   s  cost  result  reads
	 *   0  1     R       R       (the cap's, the floor)
	 *   1  5000  P(sum)  S(0)    (greedy: no move)
	 *   2  6000  P(sum)  P(sum)  continues node 0's partial */
	p.cap = 1;
	int64_t cost[3] = {1, 5000, 6000};
	struct dt_placements strat[6] = {pl(-1), pl(-1), partial(), pl(0),
					 partial(), partial()};
	const struct dt_placements *src0[2] = {&r0[0], &r0[1]};
	struct dt_prune_input input = {.producer = 0, .nsrc = 2, .src = src0,
				       .dst = &strat[1], .stride = 2};
	assert_int_equal(dt_prune_node(&p, 1, 3, cost, zero, use, strat, 2,
				       &input, 1, move_to_partial, &calls, keep),
			 3);
	const uint8_t *ch = &p.chained.data[p.first.data[1]];
	assert_true(ch[1] && ch[2]);
	dt_prune_fini(&p);
}

/* The largest shard of t under pl over every device of `mesh` (a 2x3x4
 * mesh), in bytes, walked with dt_shard_length. */
static double largest_shard(const struct dt_mesh *mesh,
			    const struct dt_rule_tensor *t,
			    const struct dt_placements *pl)
{
	double bytes = 4;
	for (int d = 0; d < t->rank; d++) {
		int64_t most = 0, c[3];
		for (c[0] = 0; c[0] < mesh->shape[0]; c[0]++)
			for (c[1] = 0; c[1] < mesh->shape[1]; c[1]++)
				for (c[2] = 0; c[2] < mesh->shape[2]; c[2]++) {
					int64_t l = dt_shard_length(pl, mesh->shape, c, d,
								    t->shape[d]);
					most = l > most ? l : most;
				}
		bytes *= (double)most;
	}
	return bytes;
}

/* dt_shard_local_bytes is the largest shard over every device of a 2x3x4
 * mesh: every mesh dim R or S of either dim of tensors whose dims split
 * unevenly (7, 13, and 2 over 24 devices, which leaves most of them
 * empty) and evenly (16, 12), both shard orders of a dim split twice; and
 * strided shards over every length up to 48, where a longer piece can
 * leave a device less (9 in 2 pieces over 3: 4, where 9 / 3 is 3); and
 * dt_shard_origin_largest's claim. */
static void test_local_bytes(void **state)
{
	(void)state;
	struct dt_mesh mesh = {.ndim = 3, .shape = {2, 3, 4}, .size = 24};
	struct dt_rule_tensor t = {.dtype = DT_FLOAT32, .rank = 2};
	const int64_t lengths[][2] = {{7, 13}, {24, 5}, {2, 1}, {0, 9}, {16, 12}};
	for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
		t.shape[0] = lengths[li][0];
		t.shape[1] = lengths[li][1];
		for (int code = 0; code < 27; code++) {
			struct dt_placements pl = {.ndim = 3};
			for (int m = 0, c = code; m < 3; m++, c /= 3)
				if (c % 3)
					pl.p[m] = (struct dt_placement){
					    .kind = DT_PL_SHARD,
					    .dim = (int16_t)(c % 3 - 1)};
			dt_placements_default_order(&pl);
			assert_true(dt_shard_local_bytes(&mesh, &t, &pl) ==
				    largest_shard(&mesh, &t, &pl));
			if (pl.p[0].kind == DT_PL_SHARD && pl.p[2].kind == DT_PL_SHARD &&
			    pl.p[0].dim == pl.p[2].dim) {
				pl.order_pos[0] = 1; /* mesh dim 2 shards first */
				pl.order_pos[2] = 0;
				assert_true(dt_shard_local_bytes(&mesh, &t, &pl) ==
					    largest_shard(&mesh, &t, &pl));
			}
		}
	}
	const struct dt_placement S1 = {.kind = DT_PL_SHARD, .dim = 1},
				  S1_2 = {.kind = DT_PL_STRIDED_SHARD, .dim = 1,
					  .split_factor = 2},
				  S1_3 = {.kind = DT_PL_STRIDED_SHARD, .dim = 1,
					  .split_factor = 3};
	const struct dt_placements strided[] = {
	    {.ndim = 3, .p = {{0}, S1_2, {0}}},
	    {.ndim = 3, .p = {S1, S1_3, {0}}},
	    {.ndim = 3, .p = {S1_3, S1, S1_2}},
	};
	t.shape[0] = 3;
	for (size_t k = 0; k < sizeof strided / sizeof *strided; k++) {
		struct dt_placements pl = strided[k];
		dt_placements_default_order(&pl);
		for (t.shape[1] = 0; t.shape[1] <= 48; t.shape[1]++) {
			assert_true(dt_shard_local_bytes(&mesh, &t, &pl) ==
				    largest_shard(&mesh, &t, &pl));
			/* Where the origin is said to hold a largest shard,
			 * it does (7 as S then _S(3) over 2 and 3: 2 at the
			 * origin, 3 elsewhere). */
			static const int64_t origin[3] = {0};
			if (dt_shard_origin_largest(&pl, mesh.shape, 1, t.shape[1]))
				assert_true(4.0 * 3 * (double)dt_shard_length(&pl, mesh.shape,
						origin, 1, t.shape[1]) ==
					    largest_shard(&mesh, &t, &pl));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cap_and_forward),
	    cmocka_unit_test(test_no_cap_and_ties),
	    cmocka_unit_test(test_anchors),
	    cmocka_unit_test(test_chains),
	    cmocka_unit_test(test_chain_from_partial),
	    cmocka_unit_test(test_chain_slices),
	    cmocka_unit_test(test_chain_continued),
	    cmocka_unit_test(test_local_bytes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
