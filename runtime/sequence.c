// SPDX-License-Identifier: MIT
/* sequence.c: the collectives a rank issues. What the interpreter passes
 * a backend for each collective node, and the start-up agreement on the
 * sequence: every rank of an MPI job must issue the same collectives
 * (kind, group, dtype, element counts, reduce op, split sizes) in the same
 * order, or the backends' collectives would match the wrong peers (libnbc
 * crashes, NCCL hangs). Ranks compare one hash of the sequence; only when
 * it differs do they find and report the first differing collective on
 * rank 0 and on the lowest rank that differs from it there. */
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
	int8_t reduce, group, splits; /* parameter indices, -1 none */
} collectives[] = {
	{DT_OP_ALL_GATHER, DT_COLL_ALL_GATHER, -1, 2, -1},
	{DT_OP_REDUCE_SCATTER, DT_COLL_REDUCE_SCATTER, 1, 3, -1},
	{DT_OP_ALL_REDUCE, DT_COLL_ALL_REDUCE, 1, 2, -1},
	{DT_OP_ALL_TO_ALL, DT_COLL_ALL_TO_ALL, -1, 3, 1},
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

static void discard(void *ud, const struct dt_diag_entry *e)
{
	(void)ud, (void)e;
}

void dt_collective_sequence(const struct dt_module *m,
			    struct dt_collective_item **out, uint32_t *n,
			    uint64_t *hash)
{
	DT_VEC(struct dt_collective_item) seq = {0};
	uint64_t h = 0x6473656dull;
	struct dt_diag quiet; /* verify has bound every node already */
	dt_diag_init(&quiet);
	quiet.emit = discard;
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
			uint64_t s = 0;
			for (int k = 0; c.output_splits && k < c.group_size; k++)
				s = mix(s, c.output_splits[k]);
			for (int k = 0; c.input_splits && k < c.group_size; k++)
				s = mix(s, c.input_splits[k] + 1);
			it.splits = s;
		}
		it.kind = (int32_t)node->op;
		it.hash = mix(mix(mix(mix(mix(mix(mix(0, it.kind), it.group),
					      it.dtype), it.in), it.out),
				  it.reduce), (int64_t)it.splits);
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

/* Complete a nonblocking collective of the agreement (req, when not NULL)
 * within the timeout; DT_ERUNTIME after reporting when MPI failed (err) or
 * a peer does not come. */
static int finish(struct agree *g, int err, MPI_Request *req, const char *call)
{
	struct request_ctx t = {req, err};
	if (err == MPI_SUCCESS && req && !dt_rt_poll(test_request, &t, g->timeout)) {
		dt_diag_report(g->d, DT_ERROR, g->m->file, 0, NULL,
			       "rank %d waited %g s for the other ranks to "
			       "compare collective sequences: a peer rank "
			       "stopped or hangs (--timeout=%g)", g->rank,
			       g->timeout, g->timeout);
		return DT_ERUNTIME;
	}
	if (t.err == MPI_SUCCESS)
		return DT_OK;
	char text[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(t.err, text, &len) != MPI_SUCCESS)
		snprintf(text, sizeof(text), "MPI error code %d", t.err);
	dt_diag_report(g->d, DT_ERROR, g->m->file, 0, NULL,
		       "%s failed while comparing collective sequences: %s",
		       call, text);
	return DT_ERUNTIME;
}

static int allreduce(struct agree *g, void *buf, int count, MPI_Datatype type,
		     MPI_Op op)
{
	MPI_Request req = MPI_REQUEST_NULL;
	return finish(g, MPI_Iallreduce(MPI_IN_PLACE, buf, count, type, op,
					g->comm, &req),
		      &req, "MPI_Iallreduce");
}

static int bcast(struct agree *g, void *buf, int bytes, int root)
{
	MPI_Request req = MPI_REQUEST_NULL;
	return finish(g, MPI_Ibcast(buf, bytes, MPI_BYTE, root, g->comm, &req),
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
	snprintf(buf, n, "%s%s over group '%s' of %lld %s elements into %lld%s",
		 dt_op_get((enum dt_op)it->kind)->name, reduce, group,
		 (long long)it->in,
		 it->dtype >= 0 ? dt_dtype_name((enum dt_dtype)it->dtype) : "?",
		 (long long)it->out, it->splits ? " (split sizes given)" : "");
}

/* The node of the report on this rank: its collective #k, or its output
 * node when its sequence ends before k. */
static const struct dt_node *report_node(const struct dt_module *m,
					 const struct dt_collective_item *seq,
					 uint32_t n, uint32_t k)
{
	if (k < n)
		return dt_node_get(m, seq[k].node);
	const struct dt_node *last = NULL;
	dt_foreach_node(m, id) {
		if (dt_node_get(m, id)->kind == DT_NODE_OUTPUT)
			last = dt_node_get(m, id);
	}
	return last;
}

/* This rank's side of the first difference: its collective #k (mine)
 * against `peer`'s (theirs). */
static void report(struct agree *g, const struct dt_collective_item *seq,
		   uint32_t n, uint32_t k, int peer,
		   const struct dt_collective_item *theirs)
{
	char a[256], b[256];
	struct dt_collective_item none = {.kind = -1};
	describe(g->m, k < n ? &seq[k] : &none, a, sizeof(a));
	describe(g->m, theirs, b, sizeof(b));
	const struct dt_node *at = report_node(g->m, seq, n, k);
	char where[64] = "";
	if (theirs->kind >= 0 && theirs->line)
		snprintf(where, sizeof(where), " (at line %u of its graph)",
			 theirs->line);
	const char *fmt = "node '%s' (%s): the ranks' graphs issue different "
			  "collectives: collective #%u of rank %d is %s; rank "
			  "%d's is %s%s";
	if (at)
		dt_node_error(g->d, g->m, at, fmt, dt_str_get(g->m, at->name),
			      dt_rt_node_target(at), k + 1, g->rank, a, peer, b,
			      where);
	else
		dt_diag_report(g->d, DT_ERROR, g->m->file, 0, NULL, fmt, "",
			       "", k + 1, g->rank, a, peer, b, where);
}

static int compare(struct agree *g, const struct dt_collective_item *seq,
		   uint32_t n)
{
	/* rank 0's sequence to everyone */
	uint64_t n0 = n;
	int rc = bcast(g, &n0, sizeof(n0), 0);
	if (rc != DT_OK)
		return rc;
	if (n0 > INT_MAX / sizeof(*seq))
		n0 = INT_MAX / sizeof(*seq); /* compare the part that fits */
	struct dt_collective_item *zero = dt_calloc(n0 + 1, sizeof(*zero));
	if (g->rank == 0)
		memcpy(zero, seq, n0 * sizeof(*seq));
	rc = bcast(g, zero, (int)(n0 * sizeof(*seq)), 0);
	/* the first index where this rank differs from rank 0 */
	uint32_t k = 0;
	while (k < n && k < n0 && seq[k].hash == zero[k].hash)
		k++;
	int pair[2] = {k == n && k == n0 ? INT_MAX : (int)k, g->rank};
	if (rc == DT_OK)
		rc = allreduce(g, pair, 1, MPI_2INT, MPI_MINLOC);
	if (rc != DT_OK || pair[0] == INT_MAX) { /* a hash collision */
		dt_free(zero);
		return rc;
	}
	/* the differing rank's collective there, to rank 0 */
	k = (uint32_t)pair[0];
	int peer = pair[1];
	struct dt_collective_item theirs = {.kind = -1};
	if (g->rank == peer && k < n)
		theirs = seq[k];
	rc = bcast(g, &theirs, sizeof(theirs), peer);
	if (rc == DT_OK && g->rank == 0) {
		report(g, seq, n, k, peer, &theirs);
	} else if (rc == DT_OK && g->rank == peer) {
		struct dt_collective_item none = {.kind = -1};
		report(g, seq, n, k, 0, k < n0 ? &zero[k] : &none);
	}
	dt_free(zero);
	return rc == DT_OK ? DT_EINPUT : rc;
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
		rc = allreduce(&g, hh, 2, MPI_UINT64_T, MPI_MAX);
	if (rc == DT_OK && (hh[0] != h || ~hh[1] != h))
		rc = compare(&g, seq, n);
	if (g.comm != MPI_COMM_NULL)
		MPI_Comm_free(&g.comm);
	dt_free(seq);
	return rc;
}
#endif
