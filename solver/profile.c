// SPDX-License-Identifier: MIT
/* profile.c: usage per timeline segment as a lazy segment tree: range
 * addition and range maximum in O(log segments), for the searches' memory
 * checks. */
#include "internal.h"

#include <string.h>

void dt_profile_init(struct dt_profile *pr, int32_t nseg)
{
	pr->n = nseg;
	pr->size = 1;
	while (pr->size < nseg)
		pr->size *= 2;
	pr->max = dt_calloc(2 * (size_t)pr->size, sizeof(int64_t));
	pr->add = dt_calloc(2 * (size_t)pr->size, sizeof(int64_t));
	dt_profile_clear(pr);
}

void dt_profile_fini(struct dt_profile *pr)
{
	dt_free(pr->max);
	dt_free(pr->add);
	memset(pr, 0, sizeof(*pr));
}

/* Leaves past the last segment hold a very low usage, so they are never the
 * maximum. */
void dt_profile_clear(struct dt_profile *pr)
{
	memset(pr->max, 0, sizeof(int64_t) * 2 * (size_t)pr->size);
	memset(pr->add, 0, sizeof(int64_t) * 2 * (size_t)pr->size);
	for (int32_t k = pr->n; k < pr->size; k++)
		pr->max[pr->size + k] = INT64_MIN / 4;
	for (int32_t x = pr->size - 1; x >= 1; x--)
		pr->max[x] = pr->max[2 * x] > pr->max[2 * x + 1] ? pr->max[2 * x]
								   : pr->max[2 * x + 1];
}

/* Node x covers [l, r); max[x] includes add[x] but not its ancestors'. */
static void add_rec(struct dt_profile *pr, int32_t x, int32_t l, int32_t r,
		    int32_t lo, int32_t hi, int64_t delta)
{
	if (hi <= l || r <= lo)
		return;
	if (lo <= l && r <= hi) {
		pr->max[x] += delta;
		pr->add[x] += delta;
		return;
	}
	int32_t m = l + (r - l) / 2;
	add_rec(pr, 2 * x, l, m, lo, hi, delta);
	add_rec(pr, 2 * x + 1, m, r, lo, hi, delta);
	int64_t a = pr->max[2 * x], b = pr->max[2 * x + 1];
	pr->max[x] = (a > b ? a : b) + pr->add[x];
}

void dt_profile_add(struct dt_profile *pr, int32_t lo, int32_t hi, int64_t delta)
{
	if (lo < hi && delta != 0)
		add_rec(pr, 1, 0, pr->size, lo, hi, delta);
}

static int64_t max_rec(const struct dt_profile *pr, int32_t x, int32_t l,
		       int32_t r, int32_t lo, int32_t hi)
{
	if (hi <= l || r <= lo)
		return INT64_MIN;
	if (lo <= l && r <= hi)
		return pr->max[x];
	int32_t m = l + (r - l) / 2;
	int64_t a = max_rec(pr, 2 * x, l, m, lo, hi);
	int64_t b = max_rec(pr, 2 * x + 1, m, r, lo, hi);
	return (a > b ? a : b) + pr->add[x];
}

int64_t dt_profile_max(const struct dt_profile *pr, int32_t lo, int32_t hi)
{
	if (hi > pr->n)
		hi = pr->n;
	return lo < hi ? max_rec(pr, 1, 0, pr->size, lo, hi) : INT64_MIN;
}

int32_t dt_profile_argmax(const struct dt_profile *pr)
{
	int32_t x = 1;
	while (x < pr->size) {
		int64_t want = pr->max[x] - pr->add[x];
		x = pr->max[2 * x] == want ? 2 * x : 2 * x + 1;
	}
	return x - pr->size;
}

int64_t dt_profile_at(const struct dt_profile *pr, int32_t k)
{
	return dt_profile_max(pr, k, k + 1);
}
