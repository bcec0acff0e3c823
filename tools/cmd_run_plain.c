// SPDX-License-Identifier: MIT
/* cmd_run_plain.c: `dtopt run GRAPH`, one graph run on every rank: its
 * outputs printed on rank 0 or written (-o DIR), --iters timing, the
 * --summary tables summed over ranks and the --trace file merged. */
#include "cmd_run.h"
#include "frontend.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void format_shape(const int64_t *shape, int rank, char *buf, size_t n)
{
	int len = snprintf(buf, n, "[");
	for (int d = 0; d < rank && len < (int)n; d++)
		len += snprintf(buf + len, n - (size_t)len, "%s%lld",
				d ? ", " : "", (long long)shape[d]);
	if (len < (int)n)
		snprintf(buf + len, n - (size_t)len, "]");
}


static void print_outputs(struct dt_runner *c, const struct dt_module *m,
			  const struct dt_run_result *r)
{
	uint32_t n;
	uint32_t *ids = dt_cli_outputs(m, &n);
	printf("%s: %u outputs on rank 0 of %d (seed %llu)\n", m->file,
	       r->noutputs, c->size, (unsigned long long)c->o.seed);
	printf("  %-3s %-24s %-9s %-18s %-14s %s\n", "#", "output", "dtype",
	       "shape", "sum", "first values");
	for (uint32_t i = 0; i < r->noutputs; i++) {
		const struct dt_rt_tensor *t = &r->outputs[i];
		char shape[160];
		format_shape(t->shape, t->rank, shape, sizeof(shape));
		double *v = dt_cli_values(t);
		double sum = 0;
		int64_t count = v ? dt_rt_numel(t) : 0;
		for (int64_t k = 0; k < count; k++)
			sum += v[k];
		printf("  %-3u %-24s %-9s %-18s %-14.9g", i,
		       dt_cli_output_name(m, ids, n, i),
		       v ? dt_dtype_name((enum dt_dtype)t->dtype) : "-", shape,
		       sum);
		for (int64_t k = 0; k < count && k < 4; k++)
			printf(" %.9g", v[k]);
		printf("%s\n", count > 4 ? " ..." : "");
		dt_free(v);
	}
	dt_free(ids);
}

/* Write `len` bytes to `path` through a temporary file renamed over it. */
static int write_atomic(struct dt_runner *c, const char *path, const void *data,
			size_t len)
{
	char *tmp;
	errno = 0;
	int fd = dt_temp_beside(path, 0644, &tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
	int err = !f ? (errno ? errno : EIO) : 0;
	if (fd >= 0 && !f)
		close(fd);
	if (f && fwrite(data, 1, len, f) != len)
		err = errno ? errno : EIO;
	if (f && fclose(f) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, path) != 0)
		err = errno;
	if (err) {
		dt_diag_report(&c->diag, DT_ERROR, path, 0, NULL,
			       "cannot write: %s", strerror(err));
		if (tmp)
			remove(tmp);
	}
	dt_free(tmp);
	return err ? DT_EXIT_INPUT : DT_EXIT_OK;
}

/* --out DIR: DIR/rank<R>.<i>.bin per output (raw little-endian elements
 * in row-major order) and DIR/index.json describing every rank's files. */
static int write_outputs(struct dt_runner *c, const struct dt_module *m,
			 const struct dt_run_result *r)
{
	const char *dir = c->o.out_dir;
	if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
		dt_diag_report(&c->diag, DT_ERROR, dir, 0, NULL,
			       "cannot create the output directory: %s",
			       strerror(errno));
		return dt_runner_agree(c, DT_EXIT_INPUT);
	}
	const uint16_t probe = 1;
	bool little = *(const uint8_t *)&probe == 1;
	uint32_t n;
	uint32_t *ids = dt_cli_outputs(m, &n);
	char *json = NULL;
	size_t json_len = 0;
	FILE *js = open_memstream(&json, &json_len);
	fprintf(js, "    {\"rank\": %d, \"outputs\": [", c->rank);
	int code = DT_EXIT_OK;
	for (uint32_t i = 0; i < r->noutputs && code == DT_EXIT_OK; i++) {
		const struct dt_rt_tensor *t = &r->outputs[i];
		char file[64], shape[160];
		snprintf(file, sizeof(file), "/rank%d.%u.bin", c->rank, i);
		format_shape(t->shape, t->rank, shape, sizeof(shape));
		int size = dt_dtype_size((enum dt_dtype)t->dtype);
		size_t bytes = (size_t)dt_rt_numel(t) * (size_t)size;
		fprintf(js, "%s\n      {\"index\": %u, \"name\": ",
			i ? "," : "", i);
		dt_json_string(js, dt_cli_output_name(m, ids, n, i));
		if (!t->buf) {
			fprintf(js, ", \"file\": null}");
			continue;
		}
		fprintf(js, ", \"dtype\": \"%s\", \"shape\": %s, "
			"\"file\": \"%s\", \"bytes\": %zu}",
			dt_dtype_name((enum dt_dtype)t->dtype), shape, file + 1,
			bytes);
		char *data = dt_malloc(bytes + 1);
		memcpy(data, (const char *)t->buf->data + t->offset * size,
		       bytes);
		for (size_t k = 0; !little && k < bytes; k += (size_t)size)
			for (int lo = 0, hi = size - 1; lo < hi; lo++, hi--) {
				char x = data[k + (size_t)lo];
				data[k + (size_t)lo] = data[k + (size_t)hi];
				data[k + (size_t)hi] = x;
			}
		char *path = dt_cli_concat3(dir, strlen(dir), file, "");
		code = write_atomic(c, path, data, bytes);
		dt_free(path);
		dt_free(data);
	}
	fprintf(js, "]}");
	fclose(js);
	char **all = dt_runner_gather_strings(c, json);
	free(json);
	if (c->rank == 0 && code == DT_EXIT_OK) {
		FILE *idx = open_memstream(&json, &json_len);
		fprintf(idx, "{\n  \"graph\": ");
		dt_json_string(idx, m->file);
		fprintf(idx, ",\n  \"world_size\": %d,\n  \"seed\": %llu,\n"
			"  \"ranks\": [\n", c->size,
			(unsigned long long)c->o.seed);
		for (int k = 0; k < c->size; k++)
			fprintf(idx, "%s%s", all[k],
				k + 1 < c->size ? ",\n" : "\n");
		fprintf(idx, "  ]\n}\n");
		fclose(idx);
		char *path = dt_cli_concat3(dir, strlen(dir), "/index.json", "");
		code = write_atomic(c, path, json, json_len);
		dt_free(path);
		free(json);
	}
	dt_runner_free_strings(c, all);
	dt_free(ids);
	return dt_runner_agree(c, code);
}

/* Add the per-target lines "target\tcount\tseconds\tbytes" of `text`
 * into `stats` (targets by first appearance; they point into text). */
static void merge_stats(char *text, struct dt_run_stat **stats, uint32_t *n,
			uint32_t *cap)
{
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *f[4] = {line, NULL, NULL, NULL};
		for (int j = 1; j < 4 && f[j - 1]; j++)
			if ((f[j] = strchr(f[j - 1], '\t')) != NULL)
				*f[j]++ = 0;
		if (!f[3])
			continue;
		uint32_t j = 0;
		while (j < *n && strcmp((*stats)[j].target, f[0]) != 0)
			j++;
		if (j == *n) {
			if (*n == *cap) {
				*cap = *cap ? 2 * *cap : 16;
				*stats = dt_realloc(*stats,
						    *cap * sizeof(**stats));
			}
			(*stats)[(*n)++] = (struct dt_run_stat){.target = f[0]};
		}
		(*stats)[j].count += strtoull(f[1], NULL, 10);
		(*stats)[j].seconds += strtod(f[2], NULL);
		(*stats)[j].bytes += strtoull(f[3], NULL, 10);
	}
}

/* Per declared group: collectives and bytes of one iteration of this
 * rank, from the graph (each collective counted with its larger buffer,
 * as nccl-tests sizes it). comm[2g] counts, comm[2g+1] bytes. */
static void count_communication(const struct dt_module *m, double *comm)
{
	dt_foreach_node(m, id) {
		const struct dt_node *node = dt_node_get(m, id);
		if (!dt_op_has((enum dt_op)node->op, DT_OPF_COLLECTIVE))
			continue;
		const struct dt_arg *g = dt_node_arg(m, node, node->nargs - 1);
		const struct dt_arg *in = dt_node_arg(m, node, 0);
		int gi = g->kind == DT_ARG_STR ? dt_module_find_group(m, g->v.s)
					       : -1;
		if (gi < 0 || in->kind != DT_ARG_NODE)
			continue;
		const struct dt_tensor *ts[2] = {
			dt_node_tensor(m, dt_node_get(m, in->v.node), 0),
			dt_node_tensor(m, node, 0)};
		double bytes = 0;
		for (int k = 0; k < 2; k++) {
			int rank;
			const int64_t *shape =
				dt_ints_get(m, ts[k]->shape, &rank);
			double b = (double)dt_numel(shape, rank) *
				   dt_dtype_size((enum dt_dtype)ts[k]->dtype);
			bytes = b > bytes ? b : bytes;
		}
		comm[2 * gi] += 1;
		comm[2 * gi + 1] += bytes;
	}
}

/* --summary: the per-target table and the communication per group and
 * iteration, both summed over ranks, on rank 0. */
static void print_summary(struct dt_runner *c, const struct dt_module *m,
			  const struct dt_run_result *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *s = open_memstream(&text, &len);
	for (uint32_t i = 0; i < r->nstats; i++)
		fprintf(s, "%s\t%llu\t%.17g\t%llu\n", r->stats[i].target,
			(unsigned long long)r->stats[i].count,
			r->stats[i].seconds,
			(unsigned long long)r->stats[i].bytes);
	fclose(s);
	char **all = dt_runner_gather_strings(c, text);
	free(text);
	uint32_t ng = m->groups.len;
	double *comm = dt_calloc(2 * (size_t)ng + 1, sizeof(double));
	count_communication(m, comm);
	dt_runner_allreduce(c, comm, (int)(2 * ng), false);
	if (c->rank == 0) {
		struct dt_run_result sum = {
		    .iters = r->iters, .peak_bytes = r->peak_bytes,
		    .largest_bytes = r->largest_bytes,
		    .buffer_bytes = r->buffer_bytes,
		    .memory_bytes = r->memory_bytes};
		uint32_t cap = 0;
		for (int k = 0; k < c->size; k++)
			merge_stats(all[k], &sum.stats, &sum.nstats, &cap);
		printf("summary over %d rank%s (time and bytes summed over "
		       "ranks; peak bytes of rank 0):\n", c->size,
		       c->size > 1 ? "s" : "");
		dt_run_summary_print(&sum, stdout);
		printf("communication per group and iteration (summed over "
		       "ranks):\n  %-20s %12s %16s\n", "group", "collectives",
		       "bytes");
		for (uint32_t g = 0; g < ng; g++)
			if (comm[2 * g] > 0)
				printf("  %-20s %12.0f %16.0f\n",
				       dt_str_get(m, m->groups.data[g].name),
				       comm[2 * g], comm[2 * g + 1]);
		dt_free(sum.stats);
	}
	dt_free(comm);
	dt_runner_free_strings(c, all);
}

/* --summary and --trace: how much of the communication compute hid, per
 * iteration, the largest over ranks (the slowest rank sets the pace). */
static void print_communication(struct dt_runner *c,
				const struct dt_run_result *r)
{
	double v[3] = {r->comm_count, r->comm_flight_seconds,
		       r->comm_exposed_seconds};
	dt_runner_allreduce(c, v, 3, true);
	if (c->rank != 0 || v[0] == 0)
		return;
	double hidden = v[1] > v[2] ? v[1] - v[2] : 0;
	printf("communication: %.0f collectives per iteration, in flight %.3f ms, exposed %.3f ms (starts and waits), %.0f%% hidden by compute (max over ranks)\n",
	       v[0], v[1] * 1e3, v[2] * 1e3, v[1] > 0 ? 100 * hidden / v[1] : 0);
}

/* --summary: the timed iterations' CPU time and page faults, summed over
 * ranks (on a host with fewer cores than ranks, what polling costs shows
 * here; faults, what freshly allocated buffers cost). */
static void print_usage(struct dt_runner *c, const struct dt_run_result *r)
{
	double v[2] = {r->usage.cpu_seconds, r->usage.page_faults};
	dt_runner_allreduce(c, v, 2, false);
	if (c->rank == 0)
		printf("cpu: %.3f ms and %.0f page faults per iteration (summed over %d rank%s)\n",
		       v[0] * 1e3, v[1], c->size, c->size > 1 ? "s" : "");
}

int dt_runner_plain(struct dt_runner *c)
{
	struct dt_module *m[2] = {NULL, NULL};
	int code = dt_runner_load(c, c->o.paths, 1, m, -1);
	struct dt_run_options ro = {.seed = c->o.seed, .iters = c->o.iters,
				    .warmup = c->o.warmup,
				    .trace_path = c->o.trace,
				    .summary = c->o.summary};
	struct dt_run_result res = {0};
	if (code == DT_EXIT_OK)
		code = dt_runner_execute(c, m[0], false, &ro, &res);
	if (code == DT_EXIT_OK && c->rank == 0)
		print_outputs(c, m[0], &res);
	if (code == DT_EXIT_OK && c->o.timed) {
		double t = res.seconds_per_iter;
		dt_runner_allreduce(c, &t, 1, true);
		if (c->rank == 0)
			printf("time: %.9g s/iteration (max over %d rank%s; %d "
			       "iterations after %d warm-up)\n", t, c->size,
			       c->size > 1 ? "s" : "", c->o.iters, c->o.warmup);
	}
	if (code == DT_EXIT_OK && c->o.summary) {
		print_summary(c, m[0], &res);
		print_usage(c, &res);
	}
	if (code == DT_EXIT_OK && (c->o.summary || c->o.trace))
		print_communication(c, &res);
	if (code == DT_EXIT_OK && c->o.out_dir)
		code = write_outputs(c, m[0], &res);
	if (code == DT_EXIT_OK && c->o.trace) {
		int rc = DT_OK;
#if DTOPT_HAVE_MPI
		MPI_Request req;
		if (c->size > 1) {
			MPI_Ibarrier(MPI_COMM_WORLD, &req);
			dt_runner_wait(c, &req, "a barrier");
		}
#endif
		if (c->rank == 0)
			rc = dt_trace_merge(c->o.trace, c->size, &c->diag);
		code = dt_runner_agree(c, dt_exit_code(rc));
	}
	fflush(stdout);
	dt_run_result_fini(&res);
	dt_module_destroy(m[0]);
	return code;
}
