// SPDX-License-Identifier: MIT
/* bucket_policy.c: where bucket-collectives cuts a bucket (semantics
 * §4.7). A bucket's merged collective can start only when its last member
 * is ready, so one big bucket saves every launch but loses the overlap of
 * its early members with the compute that follows them (DDP's reason for
 * several buckets and a small first one). The cost model weighs the two:
 * on one communication stream per bucket key, run r of consecutive
 * members (graph order, the order their inputs become ready) starts at
 *   start_r = max(ready of its members, end_{r-1}),
 *   end_r = start_r + alpha + beta · its bytes [+ its members' copies]
 * (the alpha-beta cost of one collective of the key on its group; a run
 * of two or more also pays the copies the merge makes: a member the
 * runtime cannot compute into the flat buffer copied in, an all_gather
 * member copied out to its shape: dt_bucket_member.copied). A cut
 * is worth J = end of the last run (the communication left exposed after
 * the compute) + alpha per run (each launch the merge saves): merging
 * runs pays where the modelled latency saving beats the overlap lost.
 * When communication outruns compute every merge helps; when compute
 * dominates, runs merge as long as the last one ends at most about a
 * launch later.
 *
 * How: exactly, by dynamic programming over prefixes and run counts:
 * F_k[i], the earliest end of members [0, i) cut into k runs, is the
 * least over j of max(ready of j..i-1, F_{k-1}[j]) + the run's time (an
 * end is monotone in the previous end, so the earliest prefix end is the
 * one to extend); the cut of least F_k[count] + k·alpha wins, fewer runs
 * on a tie. Rows stop once k·alpha alone, added to the earliest end over
 * any cut (f, one more O(count^2) pass), passes the best J: O(count^2)
 * per row, rows up to the best
 * cut's run count plus the launches its exposed tail is worth (few: a
 * member whose copy costs more than a launch is a large one, and a
 * bucket holds few of those). */
#include "bucket_internal.h"

#include <float.h>

/* Slack on modelled times (µs) so that rounding never splits a run. */
#define EPS 1e-6

/* µs of a run of `len` members holding `sum` bytes whose merge copies
 * cost `copies` µs (a run of one is the member's own collective). */
static double run_us(double alpha, double beta, double sum, double copies,
		     uint32_t len)
{
	return alpha + beta * sum + (len > 1 ? copies : 0);
}

/* The earliest end of members [0, count) over every cut. */
static double earliest_end(const double *ready, const double *bytes,
			   const double *copy, uint32_t count, double alpha,
			   double beta)
{
	double *f = dt_malloc((count + 1) * sizeof *f);
	f[0] = -DBL_MAX;
	for (uint32_t i = 1; i <= count; i++) {
		double best = DBL_MAX, latest = -DBL_MAX, sum = 0, copies = 0;
		for (uint32_t j = i; j-- > 0;) {
			latest = ready[j] > latest ? ready[j] : latest;
			sum += bytes[j];
			copies += copy[j];
			double start = f[j] > latest ? f[j] : latest;
			double end = start + run_us(alpha, beta, sum, copies, i - j);
			best = end < best ? end : best;
		}
		f[i] = best;
	}
	double end = f[count];
	dt_free(f);
	return end;
}

/* The runs (first members, in graph order) of the cut that choice[]
 * rows 1..k describe: choice[k·(count+1) + i] is the first member of the
 * last run of the best k-run cut of [0, i). */
static void trace_back(const uint32_t *choice, uint32_t count, uint32_t k,
		       uint32_t *run_first)
{
	for (uint32_t i = count; k > 0; k--) {
		i = choice[(size_t)k * (count + 1) + i];
		run_first[k - 1] = i;
	}
}

uint32_t dt_bucket_cut(const double *ready, const double *bytes,
		       const double *copy, uint32_t count, double alpha,
		       double beta, uint32_t *run_first)
{
	double *prev = dt_malloc(2 * (count + 1) * sizeof *prev);
	double *cur = prev + count + 1;
	uint32_t *choice = dt_malloc((count + 1) * sizeof *choice);
	for (uint32_t i = 0; i <= count; i++)
		prev[i] = i ? DBL_MAX : -DBL_MAX;
	double best_j = DBL_MAX;
	double earliest = earliest_end(ready, bytes, copy, count, alpha, beta);
	uint32_t best_k = 0;
	for (uint32_t k = 1; k <= count; k++) {
		choice = dt_realloc(choice, (size_t)(k + 1) * (count + 1) * sizeof *choice);
		uint32_t *row = choice + (size_t)k * (count + 1);
		cur[0] = DBL_MAX;
		for (uint32_t i = 1; i <= count; i++) {
			double best = DBL_MAX, latest = -DBL_MAX, sum = 0, copies = 0;
			row[i] = 0;
			for (uint32_t j = i; j-- > k - 1;) {
				latest = ready[j] > latest ? ready[j] : latest;
				sum += bytes[j];
				copies += copy[j];
				if (prev[j] == DBL_MAX)
					continue;
				double start = prev[j] > latest ? prev[j] : latest;
				double end = start + run_us(alpha, beta, sum, copies, i - j);
				if (end < best - EPS) {
					best = end;
					row[i] = j;
				}
			}
			cur[i] = best;
		}
		if (cur[count] + alpha * k < best_j - EPS) {
			best_j = cur[count] + alpha * k;
			best_k = k;
		}
		double *t = prev;
		prev = cur;
		cur = t;
		/* any cut of more runs: J >= the earliest end + its launches */
		if (earliest + alpha * (k + 1) >= best_j - EPS)
			break;
	}
	trace_back(choice, count, best_k, run_first);
	dt_free(choice);
	dt_free(prev < cur ? prev : cur);
	return best_k;
}
