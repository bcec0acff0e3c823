// SPDX-License-Identifier: MIT
/* solve.c: dt_solve (solver.h): reduce the problem exactly; solve what is
 * left by variable elimination when its tables are small (exact without a
 * limit, or when the plan fits it; a lower bound otherwise), or by branch
 * and bound when it has few nodes; otherwise run the Lagrangian search
 * (lagrange.c) on `threads` threads with seeds seed, seed+1, ... (the odd
 * ones starting priced cores by TRW-S, the even ones by belief
 * propagation: two searches that fail in different places) until the
 * timeout, max_rounds, stall_rounds or a plan whose cost meets the lower
 * bound, and expand the best plan back. */
#include "internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define EXACT_NODES 64       /* branch and bound first up to this many */
#define EXACT_VISITS 8000000 /* nodes with a choice, within this budget */
#define ELIM_WORK (1 << 28)  /* variable elimination within these entries */

static double clock_s(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

struct shared {
	const struct dt_solve_options *opt;
	const struct dt_solve_reduction *red;
	double start, deadline;  /* wall clock */
	double cpu_start;        /* the calling thread's CPU time at the start */
	pthread_mutex_t lock;
	dt_wide best_cost;       /* over all threads */
	bool found;
	int64_t lower_bound;     /* of r's cost, over all threads */
	bool proven;             /* best_cost meets lower_bound: stop */
};

struct worker {
	struct shared *sh;
	double cpu_deadline;     /* of this thread, with opt->cpu_budget */
	struct dt_lagrange lg;
	uint64_t seed;
	pthread_t thread;
};

/* Whether worker `ud` is out of time: wall-clock time, or with
 * opt->cpu_budget its own CPU time. */
static bool past_deadline(void *ud)
{
	const struct worker *wk = ud;
	if (__atomic_load_n(&wk->sh->proven, __ATOMIC_RELAXED))
		return true;
	if (wk->sh->opt->cpu_budget)
		return clock_s(CLOCK_THREAD_CPUTIME_ID) >= wk->cpu_deadline;
	return now_s() >= wk->sh->deadline;
}

static void *work(void *arg)
{
	struct worker *wk = arg;
	struct shared *sh = wk->sh;
	int64_t max_rounds = sh->opt->max_rounds, stall = sh->opt->stall_rounds;
	int64_t last_better = 0; /* round of the thread's last improvement */
	if (wk->cpu_deadline == 0)
		wk->cpu_deadline = clock_s(CLOCK_THREAD_CPUTIME_ID) + sh->opt->timeout_s;
	/* A proof stops every thread, except under max_rounds or
	 * stall_rounds (whose plan must not depend on which thread proved
	 * first): there each thread stops at its own proof. */
	bool own = max_rounds > 0 || stall > 0;
	while (max_rounds > 0 ? wk->lg.rounds < max_rounds : !past_deadline(wk)) {
		if (stall > 0 && wk->lg.rounds - last_better >= stall)
			break;
		bool better = dt_lagrange_round(&wk->lg, max_rounds <= 0 ? past_deadline : NULL, wk);
		last_better = better ? wk->lg.rounds : last_better;
		pthread_mutex_lock(&sh->lock);
		dt_wide total = sh->red->offset + wk->lg.best_cost;
		if (better && (!sh->found || total < sh->best_cost)) {
			sh->found = true;
			sh->best_cost = total;
			/* A plan within the limit at an infinite cost (a
			 * choice or edge it takes is infinite) is no
			 * progress to print. */
			if (sh->opt->verbose && total < DT_SOLVE_INFINITE)
				printf("# %.2f s: cost %" PRId64 " (thread %" PRIu64
				       ", %s, round %" PRId64 ")\n", now_s() - sh->start,
				       dt_wide_clamp(total), wk->seed - sh->opt->seed,
				       wk->lg.trws ? "TRW-S" : "BP", wk->lg.rounds);
		}
		if (wk->lg.lower_bound > sh->lower_bound)
			sh->lower_bound = wk->lg.lower_bound;
		if (!own && sh->found && sh->lower_bound != INT64_MIN &&
		    sh->best_cost <= sh->red->offset + (dt_wide)sh->lower_bound)
			__atomic_store_n(&sh->proven, true, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&sh->lock);
		if (wk->lg.found && wk->lg.lower_bound != INT64_MIN &&
		    wk->lg.best_cost <= wk->lg.lower_bound)
			break; /* this thread's own proof */
	}
	return NULL;
}

/* Search r on opt->threads threads; the best plan goes to x[] and its cost
 * in r to *cost. Returns whether a plan was found; sets *lower_bound and
 * adds the rounds run to *rounds. */
static bool search(struct shared *sh, int32_t *x, dt_wide *cost,
		   int64_t *lower_bound, int64_t *rounds)
{
	const struct dt_solve_problem *r = &sh->red->r;
	int nthreads = sh->opt->threads > 0 ? sh->opt->threads : 1;
	struct worker *wk = dt_calloc((size_t)nthreads, sizeof(*wk));
	for (int i = 0; i < nthreads; i++) {
		wk[i].sh = sh;
		wk[i].seed = sh->opt->seed + (uint64_t)i;
		dt_lagrange_init(&wk[i].lg, r, sh->red->orders, wk[i].seed);
		wk[i].lg.trws = i % 2 == 1;
		wk[i].lg.lower_bound = sh->lower_bound;
	}
	wk[0].cpu_deadline = sh->cpu_start + sh->opt->timeout_s;
	for (int i = 1; i < nthreads; i++)
		if (pthread_create(&wk[i].thread, NULL, work, &wk[i]) != 0)
			dt_die(__FILE__, __LINE__, "cannot start a search thread");
	work(&wk[0]);
	bool found = false;
	*lower_bound = INT64_MIN;
	for (int i = 0; i < nthreads; i++) {
		if (i > 0)
			pthread_join(wk[i].thread, NULL);
		if (wk[i].lg.found && (!found || wk[i].lg.best_cost < *cost)) {
			found = true;
			*cost = wk[i].lg.best_cost;
			memcpy(x, wk[i].lg.best, sizeof(int32_t) * (size_t)r->nnodes);
		}
		if (wk[i].lg.lower_bound > *lower_bound)
			*lower_bound = wk[i].lg.lower_bound;
		*rounds += wk[i].lg.rounds;
	}
	for (int i = 0; i < nthreads; i++)
		dt_lagrange_fini(&wk[i].lg);
	dt_free(wk);
	return found;
}

int dt_solve(const struct dt_solve_problem *p, const struct dt_solve_options *opt,
	     struct dt_solve_result *res)
{
	struct shared sh = {.opt = opt, .start = now_s(),
			    .cpu_start = clock_s(CLOCK_THREAD_CPUTIME_ID)};
	sh.deadline = sh.start + opt->timeout_s;
	struct dt_solve_reduction red;
	dt_solve_reduce(p, NULL, &red);
	sh.red = &red;
	const struct dt_solve_problem *r = &red.r;
	int64_t free_nodes = 0;
	for (int32_t v = 0; v < r->nnodes; v++)
		free_nodes += r->nodes[v].nstrategies > 1;
	if (opt->verbose)
		printf("# %d nodes, %d edges; reduced in %.2f s to %" PRId64
		       " nodes with a choice, %d edges (%" PRId64 " strategies "
		       "dropped, %" PRId64 " nodes eliminated, %" PRId64
		       " edges merged)\n", p->nnodes, p->nedges, now_s() - sh.start,
		       free_nodes, r->nedges, red.removed_strategies,
		       red.eliminated_nodes, red.merged_edges);
	int32_t *x = dt_calloc((size_t)r->nnodes + 1, sizeof(int32_t));
	int64_t lower = INT64_MIN;
	dt_wide cost = 0;
	int found = -1;
	if (dt_eliminate(r, ELIM_WORK, x, &cost)) {
		/* The optimum without the limit: a bound, and the answer when
		 * it fits. */
		lower = dt_wide_clamp(cost);
		int64_t peak;
		dt_solve_plan_cost(r, x, &peak);
		if (r->usage_limit < 0 || peak <= r->usage_limit) {
			found = 1;
			if (opt->verbose)
				printf("# solved exactly by variable elimination\n");
		}
	}
	if (found < 0 && free_nodes <= EXACT_NODES) {
		found = dt_exact_search(r, opt->exact_visits > 0
					       ? opt->exact_visits
					       : EXACT_VISITS,
					x, &cost);
		if (found >= 0) {
			lower = found ? dt_wide_clamp(cost) : INT64_MIN;
			if (opt->verbose)
				printf("# solved exactly by branch and bound\n");
		}
	}
	bool exact = found >= 0;
	res->rounds = 0;
	res->infinite = 0;
	if (!exact) {
		sh.lower_bound = lower;
		pthread_mutex_init(&sh.lock, NULL);
		found = search(&sh, x, &cost, &lower, &res->rounds);
		pthread_mutex_destroy(&sh.lock);
	}
	res->timed_out = !exact;
	res->lower_bound = lower == INT64_MIN ? INT64_MIN : dt_solve_add(red.offset, lower);
	int status = DT_OK;
	if (!found) {
		res->cost = DT_SOLVE_INFINITE;
		res->peak_usage = 0;
		status = DT_EINPUT;
	} else {
		dt_solve_reduction_expand(&red, x, res->strategy);
		res->cost = dt_solve_plan_cost(p, res->strategy, &res->peak_usage);
		DT_REQUIRE(res->cost == DT_SOLVE_INFINITE ||
			   dt_plan_cost(p, res->strategy) == red.offset + cost);
		res->infinite = res->cost == DT_SOLVE_INFINITE;
		if (res->infinite)
			status = DT_EINPUT;
	}
	if (res->lower_bound != INT64_MIN && res->lower_bound >= res->cost)
		res->timed_out = 0;
	res->seconds = now_s() - sh.start;
	dt_free(x);
	dt_solve_reduction_fini(&red);
	return status;
}
