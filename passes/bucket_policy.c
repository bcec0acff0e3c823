// SPDX-License-Identifier: MIT
/* bucket_policy.c: where bucket-collectives cuts a bucket (semantics
 * §4.7). A bucket's merged collective can start only when its last member
 * is ready, so one big bucket saves every launch but loses the overlap of
 * its early members with the compute that follows them (DDP's reason for
 * several buckets and a small first one). The cost model weighs the two:
 * on one communication stream per bucket key, run r of consecutive
 * members (graph order, the order their inputs become ready) starts at
 *   start_r = max(ready of its members, end_{r-1}),
 *   end_r = start_r + alpha + beta · its bytes
 * (the alpha-beta cost of one collective of the key on its group). A cut
 * is worth J = end of the last run (the communication left exposed after
 * the compute) + alpha per run (each launch the merge saves): merging
 * runs pays where the modelled latency saving beats the overlap lost.
 * When communication outruns compute every merge helps; when compute
 * dominates, runs merge as long as the last one ends at most about a
 * launch later.
 *
 * How: f[i], the earliest end of members [0, i) over every cut (exact, an
 * end being monotone in the previous end), O(count^2); then for deadlines
 * D = f[count] + m·alpha/4 (m = 0..16) the fewest runs that end by D,
 * greedily from the last member back (the largest run meeting the
 * deadline whose members before it can end, by f, before it starts); the
 * cut of least J wins, fewer runs on a tie. O(count^2) each. */
#include "bucket_internal.h"

#include <float.h>

/* Slack on modelled times (µs) so that rounding never splits a run. */
#define EPS 1e-6

/* The fewest runs ending by `deadline`, backward-greedy (see above):
 * first members into runs[], in reverse order; returns how many. */
static uint32_t cut_by(const double *ready, const double *bytes,
		      const double *f, uint32_t count, double alpha,
		      double beta, double deadline, uint32_t *runs)
{
	uint32_t nruns = 0, i = count;
	while (i > 0) {
		double latest = -DBL_MAX, sum = 0, start_by = deadline;
		uint32_t first = i - 1;
		for (uint32_t j = i; j-- > 0;) {
			latest = ready[j] > latest ? ready[j] : latest;
			sum += bytes[j];
			double by = deadline - (alpha + beta * sum);
			if (latest > by + EPS || f[j] > by + EPS)
				continue;
			first = j;
			start_by = by;
		}
		runs[nruns++] = first;
		deadline = start_by + EPS;
		i = first;
	}
	return nruns;
}

/* The modelled end of the last run of a cut given as cut_by writes it. */
static double end_of(const double *ready, const double *bytes,
		     uint32_t count, double alpha, double beta,
		     const uint32_t *runs, uint32_t nruns)
{
	double end = -DBL_MAX;
	for (uint32_t r = nruns; r-- > 0;) {
		uint32_t last = r ? runs[r - 1] : count;
		double latest = -DBL_MAX, sum = 0;
		for (uint32_t j = runs[r]; j < last; j++) {
			latest = ready[j] > latest ? ready[j] : latest;
			sum += bytes[j];
		}
		end = (end > latest ? end : latest) + alpha + beta * sum;
	}
	return end;
}

uint32_t dt_bucket_cut(const double *ready, const double *bytes, uint32_t count,
		       double alpha, double beta, uint32_t *run_first)
{
	double *f = dt_malloc((count + 1) * sizeof *f);
	uint32_t *runs = dt_malloc(count * sizeof *runs);
	f[0] = -DBL_MAX;
	for (uint32_t i = 1; i <= count; i++) {
		double best = DBL_MAX, latest = -DBL_MAX, sum = 0;
		for (uint32_t j = i; j-- > 0;) {
			latest = ready[j] > latest ? ready[j] : latest;
			sum += bytes[j];
			double start = f[j] > latest ? f[j] : latest;
			double end = start + alpha + beta * sum;
			best = end < best ? end : best;
		}
		f[i] = best;
	}
	double best_j = DBL_MAX;
	uint32_t best_n = 0;
	for (int m = 0; m <= 16; m++) {
		uint32_t n = cut_by(ready, bytes, f, count, alpha, beta,
				    f[count] + m * alpha / 4 + EPS, runs);
		double j = end_of(ready, bytes, count, alpha, beta, runs, n) +
			   alpha * n;
		if (j < best_j - EPS || (j <= best_j + EPS && n < best_n)) {
			best_j = j;
			best_n = n;
			for (uint32_t r = 0; r < n; r++) /* in graph order */
				run_first[r] = runs[n - 1 - r];
		}
	}
	dt_free(runs);
	dt_free(f);
	return best_n;
}
