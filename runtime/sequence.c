// SPDX-License-Identifier: MIT
/* sequence.c: the collectives a rank issues. What the interpreter passes
 * a backend for each collective node, and the start-up agreement on the
 * sequence: every rank of an MPI job must issue the same collectives
 * (kind, group, dtype, reduce op) in the same
 * order (the ranks of one group instance also the same element counts),
 * or the backends' collectives would match the wrong peers (libnbc
 * crashes, NCCL hangs). Ranks compare one hash of the sequence (and one
 * of the counts per group instance); only when it differs do they find and
 * report the first differing collective on the first rank and on the
 * lowest rank that differs from it there. */
#include "dtopt_config.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>
#if DTOPT_HAVE_MPI
#include <limits.h>
#include <mpi.h>
#endif

static const struct {
	enum dt_op op;
	enum dt_collective_kind kind;
	int8_t reduce, group, splits, perm; /* parameter indices, -1 none */
} collectives[] = {
	{DT_OP_ALL_GATHER, DT_COLL_ALL_GATHER, -1, 2, -1, -1},
	{DT_OP_REDUCE_SCATTER, DT_COLL_REDUCE_SCATTER, 1, 3, -1, -1},
	{DT_OP_ALL_REDUCE, DT_COLL_ALL_REDUCE, 1, 2, -1, -1},
	{DT_OP_ALL_TO_ALL, DT_COLL_ALL_TO_ALL, -1, 3, 1, -1},
	{DT_OP_ALL_PERMUTE, DT_COLL_ALL_PERMUTE, -1, 6, -1, 5},
	{DT_OP_ALL_TO_ALL_V, DT_COLL_ALL_TO_ALL_V, -1, 5, -1, -1},
};

/* The int list bound to parameter p (NULL when none). */
static const int64_t *split_sizes(const struct dt_module *m,
				  const struct dt_bound_args *a, int p)
{
	const struct dt_arg *v = a->arg[p];
	return v && v->kind == DT_ARG_INTS ? dt_ints_get(m, v->v.ints, NULL)
					   : NULL;
}

int dt_rt_collective_args(const struct dt_module *m, const struct dt_node *n,
			  const struct dt_bound_args *a,
			  struct dt_collective_call *c, const char **why)
{
	size_t k = 0, nk = sizeof(collectives) / sizeof(collectives[0]);
	while (k < nk && collectives[k].op != n->op)
		k++;
	DT_REQUIRE(k < nk);
	c->kind = collectives[k].kind;
	const struct dt_arg *g = a->arg[collectives[k].group];
	c->group = g && g->kind == DT_ARG_STR ? dt_module_find_group(m, g->v.s)
					      : -1;
	if (c->group < 0) {
		*why = "undeclared group";
		return DT_EINPUT;
	}
	const struct dt_group *grp = &m->groups.data[c->group];
	c->group_size = dt_group_size(&m->meshes.data[grp->mesh], grp->dims,
				      grp->ndims);
	if (collectives[k].reduce >= 0) {
		const struct dt_arg *r = a->arg[collectives[k].reduce];
		if (!r || r->kind != DT_ARG_STR ||
		    !dt_reduce_parse(dt_str_get(m, r->v.s), &c->reduce)) {
			*why = "bad reduce_op";
			return DT_EINPUT;
		}
	}
	if (collectives[k].splits >= 0) {
		c->output_splits = split_sizes(m, a, collectives[k].splits);
		c->input_splits = split_sizes(m, a, collectives[k].splits + 1);
	}
	if (collectives[k].perm >= 0) {
		const struct dt_arg *p = a->arg[collectives[k].perm];
		int len = 0;
		c->permutation = p && p->kind == DT_ARG_INTS
					 ? dt_ints_get(m, p->v.ints, &len)
					 : NULL;
		if (len != c->group_size) {
			*why = "perm does not list one position per group rank";
			return DT_EINPUT;
		}
	}
	char err[8];
	if (n->op == DT_OP_ALL_TO_ALL_V &&
	    !dt_spmd_args_read(m, DT_OP_ALL_TO_ALL_V, a, &c->layout, err,
			       sizeof err)) {
		*why = "bad all_to_all_v attributes (run dtopt verify)";
		return DT_EINPUT;
	}
	return DT_OK;
}

/* ------------------------------------------------------------------ */
/* The sequence. */

static uint64_t mix(uint64_t h, int64_t v)
{
	return dt_rt_mix64(h ^ (uint64_t)v);
}

/* The numel and dtype of result 0 of node id (0 and -1 without one). */
static int64_t tensor_of(const struct dt_module *m, uint32_t id, int32_t *dtype)
{
	const struct dt_node *n = dt_node_get(m, id);
	*dtype = -1;
	if (!id || n->ntensors == 0)
		return 0;
	const struct dt_tensor *t = dt_node_tensor(m, n, 0);
	int rank;
	const int64_t *shape = dt_ints_get(m, t->shape, &rank);
	*dtype = t->dtype;
	return dt_numel(shape, rank);
}

void dt_collective_sequence(const struct dt_module *m,
			    struct dt_collective_item **out, uint32_t *n,
			    uint64_t *hash)
{
	DT_VEC(struct dt_collective_item) seq = {0};
	uint64_t h = 0x6473656dull;
	struct dt_diag quiet; /* verify has bound every node already */
	dt_diag_init_quiet(&quiet);
	dt_foreach_node(m, id) {
		const struct dt_node *node = dt_node_get(m, id);
		if (node->kind != DT_NODE_CALL ||
		    !dt_op_has((enum dt_op)node->op, DT_OPF_COLLECTIVE))
			continue;
		struct dt_bound_args a;
		struct dt_collective_call c = {.group = -1};
		const char *why;
		struct dt_collective_item it = {.node = id, .line = node->line,
						.group = -1, .reduce = -1};
		if (dt_op_bind(m, node, &a, &quiet) == DT_OK &&
		    dt_rt_collective_args(m, node, &a, &c, &why) == DT_OK) {
			it.group = c.group;
			if (c.kind == DT_COLL_ALL_REDUCE ||
			    c.kind == DT_COLL_REDUCE_SCATTER)
				it.reduce = (int32_t)c.reduce;
			const struct dt_arg *in = a.arg[0];
			it.in = tensor_of(m, in && in->kind == DT_ARG_NODE ? in->v.node : 0,
					  &it.dtype);
			int32_t odt;
			it.out = tensor_of(m, id, &odt);
		}
		it.kind = (int32_t)node->op;
		it.index = seq.len;
		it.hash = mix(mix(mix(mix(0, it.kind), it.group), it.dtype),
			      it.reduce);
		/* all_to_all's and all_permute's counts and splits differ
		 * by rank */
		it.counts = it.kind == DT_OP_ALL_TO_ALL ||
					    it.kind == DT_OP_ALL_PERMUTE ||
					    it.kind == DT_OP_ALL_TO_ALL_V
				    ? 0
				    : mix(mix(1, it.in), it.out);
		h = mix(h, (int64_t)it.hash);
		dt_vec_push(&seq, it);
	}
	*n = seq.len;
	dt_vec_push(&seq, (struct dt_collective_item){0}); /* never NULL */
	*out = seq.data;
	*hash = mix(h, *n);
}

/* ------------------------------------------------------------------ */
/* The agreement over MPI. */
#if DTOPT_HAVE_MPI

struct agree {
	const struct dt_module *m;
	struct dt_diag *d;
	MPI_Comm comm; /* dup of MPI_COMM_WORLD, errors return */
	double timeout;
	int rank;
};

struct request_ctx {
	MPI_Request *req;
	int err;
};

static bool test_request(void *ud)
{
	struct request_ctx *t = ud;
	int done = 0;
	t->err = MPI_Test(t->req, &done, MPI_STATUS_IGNORE);
	return done || t->err != MPI_SUCCESS;
}

bool dt_mpi_wait(void *request, double timeout, double spin, int *err)
{
	struct request_ctx t = {request, MPI_SUCCESS};
	bool done = dt_rt_poll(test_request, &t, timeout, spin);
	*err = t.err;
	return done;
}

/* Complete a nonblocking collective of the agreement (req, when not NULL)
 * within the timeout; DT_ERUNTIME after reporting when MPI failed (err) or
 * a peer does not come. */
static int finish(struct agree *g, int err, MPI_Request *req, const char *call)
{
	if (err == MPI_SUCCESS && req && !dt_mpi_wait(req, g->timeout, DT_RT_SPIN, &err)) {
		dt_diag_report(g->d, DT_ERROR, g->m->file, 0, NULL,
			       "rank %d waited %g s for the other ranks to "
			       "compare collective sequences: a peer rank "
			       "stopped or hangs (--timeout=%g)", g->rank,
			       g->timeout, g->timeout);
		return DT_ERUNTIME;
	}
	if (err == MPI_SUCCESS)
		return DT_OK;
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error code %d", err);
	dt_diag_report(g->d, DT_ERROR, g->m->file, 0, NULL,
		       "%s failed while comparing collective sequences: %s",
		       call, text);
	return DT_ERUNTIME;
}

static int allreduce(struct agree *g, MPI_Comm comm, void *buf, int count,
		     MPI_Datatype type, MPI_Op op)
{
	MPI_Request req = MPI_REQUEST_NULL;
	return finish(g, MPI_Iallreduce(MPI_IN_PLACE, buf, count, type, op,
					comm, &req),
		      &req, "MPI_Iallreduce");
}

static int bcast(struct agree *g, MPI_Comm comm, void *buf, int bytes, int root)
{
	MPI_Request req = MPI_REQUEST_NULL;
	return finish(g, MPI_Ibcast(buf, bytes, MPI_BYTE, root, comm, &req),
		      &req, "MPI_Ibcast");
}

/* "all_gather over group 'dp' of 512 float32 elements" */
static void describe(const struct dt_module *m, const struct dt_collective_item *it,
		     char *buf, size_t n)
{
	if (it->kind < 0) {
		snprintf(buf, n, "nothing (its sequence ends there)");
		return;
	}
	const char *group = it->group >= 0 && (uint32_t)it->group < m->groups.len
				    ? dt_str_get(m, m->groups.data[it->group].name)
				    : "?";
	char reduce[32] = "";
	if (it->reduce >= 0)
		snprintf(reduce, sizeof(reduce), " (%s)",
			 dt_reduce_name((enum dt_reduce_op)it->reduce));
	snprintf(buf, n, "%s%s over group '%s' of %lld %s elements into %lld",
		 dt_op_get((enum dt_op)it->kind)->name, reduce, group,
		 (long long)it->in,
		 it->dtype >= 0 ? dt_dtype_name((enum dt_dtype)it->dtype) : "?",
		 (long long)it->out);
}

/* The node of the report on this rank: its collective node `id`, or,
 * when its sequence ends first (0), its output node. */
static const struct dt_node *report_node(const struct dt_module *m, uint32_t id)
{
	if (id)
		return dt_node_get(m, id);
	const struct dt_node *last = NULL;
	dt_foreach_node(m, i) {
		if (dt_node_get(m, i)->kind == DT_NODE_OUTPUT)
			last = dt_node_get(m, i);
	}
	return last;
}

/* This rank's side of the first difference: its collective (mine, NULL
 * when its sequence ended) against world rank `peer`'s (theirs). */
static void report(struct agree *g, const struct dt_collective_item *seq,
		   uint32_t n, uint32_t k, int peer,
		   const struct dt_collective_item *theirs)
{
	char a[256], b[256];
	struct dt_collective_item none = {.kind = -1};
	const struct dt_collective_item *mine = k < n ? &seq[k] : &none;
	describe(g->m, mine, a, sizeof(a));
	describe(g->m, theirs, b, sizeof(b));
	const struct dt_node *at =
		report_node(g->m, k < n ? mine->node : 0);
	char where[64] = "";
	if (theirs->kind >= 0 && theirs->line)
		snprintf(where, sizeof(where), " (at line %u of its graph)",
			 theirs->line);
	/* numbered in the rank's whole sequence */
	uint32_t number = k < n ? mine->index + 1
			  : n ? seq[n - 1].index + 2 : 1;
	const char *fmt = "node '%s' (%s): the ranks' graphs issue different "
			  "collectives: collective #%u of rank %d is %s; rank "
			  "%d's is %s%s";
	if (at)
		dt_node_error(g->d, g->m, at, fmt, dt_str_get(g->m, at->name),
			      dt_rt_node_target(at), number, g->rank, a, peer,
			      b, where);
	else
		dt_diag_report(g->d, DT_ERROR, g->m->file, 0, NULL, fmt, "",
			       "", number, g->rank, a, peer, b, where);
}

/* The world rank of rank r of comm. */
static int world_rank(MPI_Comm comm, int r)
{
	MPI_Group world, group;
	int out = r;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Comm_group(comm, &group);
	MPI_Group_translate_ranks(group, 1, &r, world, &out);
	MPI_Group_free(&group);
	MPI_Group_free(&world);
	return out;
}

/* Compare seq (by its items' hash, or with counts their counts hash) with
 * that of rank 0 of comm; report the first difference on comm's rank 0
 * and on the lowest rank differing there. DT_EINPUT when one differs (on
 * every rank of comm), else DT_OK (a hash collision); DT_ERUNTIME after a
 * report when MPI fails. */
static int compare(struct agree *g, MPI_Comm comm,
		   const struct dt_collective_item *seq, uint32_t n, bool counts)
{
	int me = 0;
	MPI_Comm_rank(comm, &me);
	uint64_t n0 = n;
	int rc = bcast(g, comm, &n0, sizeof(n0), 0);
	if (rc != DT_OK)
		return rc;
	if (n0 > INT_MAX / sizeof(*seq))
		n0 = INT_MAX / sizeof(*seq); /* compare the part that fits */
	struct dt_collective_item *zero = dt_calloc(n0 + 1, sizeof(*zero));
	if (me == 0)
		memcpy(zero, seq, n0 * sizeof(*seq));
	rc = bcast(g, comm, zero, (int)(n0 * sizeof(*seq)), 0);
	uint32_t k = 0;
	while (k < n && k < n0 &&
	       (counts ? seq[k].counts == zero[k].counts
		       : seq[k].hash == zero[k].hash))
		k++;
	int pair[2] = {k == n && k == n0 ? INT_MAX : (int)k, me};
	if (rc == DT_OK)
		rc = allreduce(g, comm, pair, 1, MPI_2INT, MPI_MINLOC);
	if (rc != DT_OK || pair[0] == INT_MAX) {
		dt_free(zero);
		return rc;
	}
	k = (uint32_t)pair[0];
	struct dt_collective_item theirs = {.kind = -1};
	if (me == pair[1] && k < n)
		theirs = seq[k];
	rc = bcast(g, comm, &theirs, sizeof(theirs), pair[1]);
	if (rc == DT_OK && me == 0) {
		report(g, seq, n, k, world_rank(comm, pair[1]), &theirs);
	} else if (rc == DT_OK && me == pair[1]) {
		struct dt_collective_item none = {.kind = -1};
		report(g, seq, n, k, world_rank(comm, 0),
		       k < n0 ? &zero[k] : &none);
	}
	dt_free(zero);
	return rc == DT_OK ? DT_EINPUT : rc;
}

/* Within each instance of each group, the collectives on the group must
 * move the same element counts (all_to_all excepted: its splits differ by
 * rank). Instances of a group may differ (uneven shards). */
static int compare_counts(struct agree *g, const struct dt_collective_item *seq,
			  uint32_t n)
{
	int rc = DT_OK;
	struct dt_collective_item *mine = dt_calloc(n + 1, sizeof(*mine));
	/* every rank takes part in every group's split and comparison (a
	 * rank that stopped at a difference would leave the others waiting):
	 * the worst status wins */
	for (uint32_t gi = 0; gi < g->m->groups.len; gi++) {
		const struct dt_group *grp = &g->m->groups.data[gi];
		const struct dt_mesh *mesh = &g->m->meshes.data[grp->mesh];
		int64_t instance = 0, pos = 0;
		bool member = dt_group_locate(mesh, grp->dims, grp->ndims,
					      g->rank, &instance, &pos);
		uint32_t k = 0;
		uint64_t h = 7;
		for (uint32_t i = 0; i < n; i++)
			if (seq[i].group == (int32_t)gi &&
			    seq[i].kind != DT_OP_ALL_TO_ALL &&
			    seq[i].kind != DT_OP_ALL_PERMUTE &&
			    seq[i].kind != DT_OP_ALL_TO_ALL_V) {
				mine[k++] = seq[i];
				h = mix(h, (int64_t)seq[i].counts);
			}
		MPI_Comm comm = MPI_COMM_NULL;
		int err = MPI_Comm_split(g->comm,
					 member ? (int)instance : MPI_UNDEFINED,
					 (int)pos, &comm);
		int st = finish(g, err, NULL, "MPI_Comm_split");
		if (st != DT_OK) { /* MPI itself failed: the job ends */
			rc = st;
			break;
		}
		if (comm == MPI_COMM_NULL)
			continue;
		uint64_t hh[2] = {h, ~h};
		st = allreduce(g, comm, hh, 2, MPI_UINT64_T, MPI_MAX);
		if (st == DT_OK && (hh[0] != h || ~hh[1] != h))
			st = compare(g, comm, mine, k, true);
		MPI_Comm_free(&comm);
		if (st != DT_OK)
			rc = st;
		if (st == DT_ERUNTIME)
			break;
	}
	dt_free(mine);
	return rc;
}

int dt_collectives_agree(const struct dt_module *m, struct dt_diag *d,
			 double timeout)
{
	struct agree g = {m, d, MPI_COMM_NULL, timeout, 0};
	struct dt_collective_item *seq;
	uint32_t n;
	uint64_t h;
	dt_collective_sequence(m, &seq, &n, &h);
	int err = MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
	if (err == MPI_SUCCESS)
		err = MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
	if (err == MPI_SUCCESS)
		err = MPI_Comm_rank(g.comm, &g.rank);
	int rc = finish(&g, err, NULL, "MPI_Comm_dup");
	/* one hash (and its complement: max of both = all equal) */
	uint64_t hh[2] = {h, ~h};
	if (rc == DT_OK)
		rc = allreduce(&g, g.comm, hh, 2, MPI_UINT64_T, MPI_MAX);
	if (rc == DT_OK && (hh[0] != h || ~hh[1] != h))
		rc = compare(&g, g.comm, seq, n, false);
	if (rc == DT_OK)
		rc = compare_counts(&g, seq, n);
	if (g.comm != MPI_COMM_NULL)
		MPI_Comm_free(&g.comm);
	dt_free(seq);
	return rc;
}
#endif
