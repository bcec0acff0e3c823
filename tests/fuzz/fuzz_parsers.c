// SPDX-License-Identifier: MIT
/* fuzz_parsers.c: libFuzzer target for the small text formats the tools
 * read besides XML: placements with a shard order ("S(0) _S(1,2) P(sum)",
 * "0:tp,dp"), pass pipelines ("verify,shape-infer"), dtype and reduce-op
 * names. The first byte picks the parser (and the mesh), the rest is the
 * text, newline-separated fields. Placements the parser accepts must print
 * and parse back to the same placements and order (the printer is the
 * parser's inverse); a dtype or reduce op's canonical name must parse back
 * to it. Build with -Dfuzz=true. */
#include "frontend.h"
#include "passes.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void discard(void *ud, const struct dt_diag_entry *e)
{
	(void)ud, (void)e;
}

/* Meshes of 1 to 8 dims, named and sized as the tools' meshes are. */
static const char meshes_xml[] =
	"<dtopt-graph version=\"1\" name=\"meshes\" view=\"global\">"
	"<mesh name=\"m1\" shape=\"4\" dims=\"dp\"/>"
	"<mesh name=\"m2\" shape=\"2 2\" dims=\"dp tp\"/>"
	"<mesh name=\"m3\" shape=\"2 3 2\" dims=\"a b c\"/>"
	"<mesh name=\"m8\" shape=\"2 1 2 1 2 1 2 3\" dims=\"a b c d e f g h\"/>"
	"<node name=\"output\" op=\"output\"/>"
	"</dtopt-graph>";

static struct dt_module *meshes;

/* The fields of the text: up to `n`, split at newlines, NUL-terminated in
 * a heap copy (*copy; free it). */
static int fields(const uint8_t *data, size_t size, char **copy, char **f, int n)
{
	*copy = malloc(size + 1);
	memcpy(*copy, data, size);
	(*copy)[size] = 0;
	int k = 0;
	f[k++] = *copy;
	for (char *p = *copy; *p && k < n; p++)
		if (*p == '\n') {
			*p = 0;
			f[k++] = p + 1;
		}
	return k;
}

static void check_placements(const struct dt_mesh *mesh, const char *text,
			     const char *order)
{
	struct dt_placements a, b;
	char err[256], printed[512], ordered[512];
	if (!dt_placements_parse(&a, text, order, mesh, &meshes->strings, err,
				 sizeof(err)))
		return;
	int n = dt_placements_print(&a, printed, sizeof(printed));
	int o = dt_placements_print_order(&a, mesh, &meshes->strings, ordered,
					  sizeof(ordered));
	if (n < 0 || (size_t)n >= sizeof(printed) || o < 0 ||
	    (size_t)o >= sizeof(ordered))
		abort();
	if (!dt_placements_parse(&b, printed, *ordered ? ordered : NULL, mesh,
				 &meshes->strings, err, sizeof(err))) {
		fprintf(stderr, "fuzz_parsers: '%s' order '%s' does not parse "
			"back: %s\n", printed, ordered, err);
		abort();
	}
	if (a.ndim != b.ndim ||
	    memcmp(a.p, b.p, a.ndim * sizeof(a.p[0])) != 0 ||
	    memcmp(a.order_pos, b.order_pos, a.ndim) != 0) {
		fprintf(stderr, "fuzz_parsers: '%s' / '%s' reparses as other "
			"placements\n", printed, ordered);
		abort();
	}
	dt_placements_validate(&a, 4, err, sizeof(err));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!meshes) {
		struct dt_diag d;
		dt_diag_init(&d);
		if (dt_read_memory(meshes_xml, sizeof(meshes_xml) - 1, "meshes",
				   NULL, &d, &meshes) != DT_OK)
			abort();
	}
	if (size < 1)
		return 0;
	uint8_t pick = data[0];
	char *copy, *f[2] = {"", NULL};
	int n = fields(data + 1, size - 1, &copy, f, 2);
	switch (pick % 4) {
	case 0: { /* placements [\n order] on one of the meshes */
		const struct dt_mesh *mesh =
			&meshes->meshes.data[(pick / 4) % meshes->meshes.len];
		check_placements(mesh, f[0], n > 1 ? f[1] : NULL);
		break;
	}
	case 1: { /* a pass pipeline */
		struct dt_diag d;
		dt_diag_init(&d);
		d.emit = discard;
		struct dt_pipeline p;
		dt_pipeline_parse(&p, f[0], &d);
		break;
	}
	case 2: { /* a dtype name (aliases such as torch.float32 too): its
		   * canonical name parses as the same dtype */
		enum dt_dtype t, u;
		if (dt_dtype_parse(f[0], strlen(f[0]), &t) &&
		    (!dt_dtype_parse(dt_dtype_name(t), strlen(dt_dtype_name(t)), &u) ||
		     u != t))
			abort();
		break;
	}
	default: { /* a reduce op, the same way */
		enum dt_reduce_op op, back;
		if (dt_reduce_parse(f[0], &op) &&
		    (!dt_reduce_parse(dt_reduce_name(op), &back) || back != op))
			abort();
		break;
	}
	}
	free(copy);
	return 0;
}
