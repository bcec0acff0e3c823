// SPDX-License-Identifier: MIT
/* support.c: allocator hook, growable arrays, arena, interning, diagnostics
 * and dtype facts shared by every part of dtopt. */
#include "ir.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

_Noreturn void dt_die(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "dtopt: internal error at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---- allocation ---- */

static void *libc_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		free(ptr);
		return NULL;
	}
	return realloc(ptr, size);
}

static dt_realloc_fn alloc_fn = libc_realloc;
static void *alloc_ud;

void dt_set_allocator(dt_realloc_fn fn, void *ud)
{
	alloc_fn = fn ? fn : libc_realloc;
	alloc_ud = fn ? ud : NULL;
}

void *dt_realloc(void *ptr, size_t size)
{
	void *p = alloc_fn(alloc_ud, ptr, size);
	if (!p && size)
		dt_die(__FILE__, __LINE__, "out of memory (%zu bytes)", size);
	return p;
}

void *dt_malloc(size_t size) { return dt_realloc(NULL, size ? size : 1); }

void *dt_calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		dt_die(__FILE__, __LINE__, "allocation size overflow");
	void *p = dt_malloc(n * size);
	memset(p, 0, n * size);
	return p;
}

void dt_free(void *ptr)
{
	if (ptr)
		alloc_fn(alloc_ud, ptr, 0);
}

int dt_temp_beside(const char *path, unsigned mode, char **tmp)
{
	size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
	*tmp = dt_malloc(n);
	snprintf(*tmp, n, "%s.tmp.XXXXXX", path);
	int fd = mkstemp(*tmp);
	if (fd < 0) {
		int saved = errno;
		dt_free(*tmp);
		*tmp = NULL;
		errno = saved;
		return -1;
	}
	fchmod(fd, (mode_t)mode); /* mkstemp's 0600 is for the temporary only */
	return fd;
}

char *dt_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(dt_malloc(n), s, n);
}

uint32_t dt_vec_grow_(void **data, uint32_t *len, uint32_t *cap, size_t elem,
		      uint32_t n)
{
	uint32_t at = *len;
	if ((uint64_t)at + n > UINT32_MAX)
		dt_die(__FILE__, __LINE__, "array too large");
	if (at + n > *cap || !*data) {
		uint64_t c = *cap ? (uint64_t)*cap * 2 : 8;
		while (c < (uint64_t)at + n)
			c *= 2;
		if (c > UINT32_MAX)
			c = UINT32_MAX;
		*data = dt_realloc(*data, (size_t)c * elem);
		*cap = (uint32_t)c;
	}
	*len = at + n;
	return at;
}

/* ---- arena ---- */

struct dt_arena_chunk {
	struct dt_arena_chunk *next;
	size_t size;
	_Alignas(16) char data[];
};

enum { ARENA_CHUNK = 64 * 1024 };

void dt_arena_init(struct dt_arena *a) { memset(a, 0, sizeof(*a)); }

void dt_arena_fini(struct dt_arena *a)
{
	struct dt_arena_chunk *c = a->chunks;
	while (c) {
		struct dt_arena_chunk *next = c->next;
		dt_free(c);
		c = next;
	}
	memset(a, 0, sizeof(*a));
}

void dt_arena_reset(struct dt_arena *a)
{
	struct dt_arena_chunk *c = a->chunks;
	if (!c)
		return;
	struct dt_arena_chunk *rest = c->next;
	while (rest) {
		struct dt_arena_chunk *next = rest->next;
		dt_free(rest);
		rest = next;
	}
	c->next = NULL;
	a->cur = c->data;
	a->end = c->data + c->size;
	a->bytes = 0;
}

void *dt_arena_alloc(struct dt_arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	if ((size_t)(a->end - a->cur) < size) {
		size_t chunk = size > ARENA_CHUNK ? size : ARENA_CHUNK;
		struct dt_arena_chunk *c = dt_malloc(sizeof(*c) + chunk);
		c->size = chunk;
		/* The first chunk stays first so reset can keep it. */
		if (a->chunks) {
			c->next = a->chunks->next;
			a->chunks->next = c;
		} else {
			c->next = NULL;
			a->chunks = c;
		}
		a->cur = c->data;
		a->end = c->data + chunk;
	}
	void *p = a->cur;
	a->cur += size;
	a->bytes += size;
	memset(p, 0, size);
	return p;
}

char *dt_arena_strndup(struct dt_arena *a, const char *s, size_t n)
{
	char *p = dt_arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

/* ---- interning ---- */

uint32_t dt_hash_bytes(const void *p, size_t n)
{
	/* each word multiplied in, its high bits folded down (FxHash-like),
	 * then splitmix64's finalizer */
	const uint64_t k = 0x9e3779b97f4a7c15u;
	const unsigned char *s = p;
	uint64_t h = n * k;
	for (; n >= 8; s += 8, n -= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		h = (h ^ w) * k;
		h ^= h >> 32;
	}
	if (n) {
		uint64_t w = 0;
		for (size_t i = 0; i < n; i++)
			w |= (uint64_t)s[i] << (8 * i);
		h = (h ^ w) * k;
	}
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9u;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
	return (uint32_t)(h ^ (h >> 31));
}

/* A record is its length as a varint written backwards (7 bits a byte,
 * low bits nearest the bytes, the high bit set on all but the farthest),
 * then its bytes, then a NUL: offsets[id] is where the bytes start, so
 * dt_intern_get reads a string without arithmetic. Bytes whose length is a
 * nonzero multiple of 8 start 8-aligned (int64 lists are read in place);
 * padding goes before the length. A 10-byte name takes 12 bytes. */
static uint32_t intern_len_at(const struct dt_intern *t, uint32_t id)
{
	const unsigned char *q =
	    (const unsigned char *)t->bytes.data + t->offsets.data[id];
	uint32_t n = 0;
	for (unsigned shift = 0;; shift += 7) {
		unsigned char b = *--q;
		n |= (uint32_t)(b & 127) << shift;
		if (!(b & 128))
			return n;
	}
}

/* A slot holds id + 1 in the bits of the index mask and the hash's bits
 * above them (which the index does not use) as a tag: ids stay below half
 * the slot count, so they fit, and a probe rejects almost every other
 * string without reading its record. 0 is an empty slot. */
static uint32_t intern_find(const struct dt_intern *t, uint32_t h,
			    const void *p, size_t n, uint32_t *slot)
{
	uint32_t mask = t->nslots - 1, i = h & mask;
	for (uint32_t v; (v = t->slots[i]); i = (i + 1) & mask) {
		if ((v & ~mask) != (h & ~mask))
			continue;
		uint32_t other = (v & mask) - 1;
		if (intern_len_at(t, other) == n &&
		    (n == 0 ||
		     memcmp(p, t->bytes.data + t->offsets.data[other], n) == 0))
			return other;
	}
	*slot = i;
	return UINT32_MAX;
}

static void intern_rehash(struct dt_intern *t, uint32_t nslots)
{
	dt_free(t->slots);
	t->slots = dt_calloc(nslots, sizeof(uint32_t));
	t->nslots = nslots;
	for (uint32_t id = 0; id < t->offsets.len; id++) {
		uint32_t n = intern_len_at(t, id), i;
		const char *bytes = t->bytes.data + t->offsets.data[id];
		uint32_t h = dt_hash_bytes(bytes, n);
		intern_find(t, h, NULL, UINT32_MAX, &i); /* no record matches */
		t->slots[i] = (h & ~(nslots - 1)) | (id + 1);
	}
}

void dt_intern_init(struct dt_intern *t)
{
	memset(t, 0, sizeof(*t));
	dt_intern(t, "", 0); /* id 0 */
}

void dt_intern_fini(struct dt_intern *t)
{
	dt_vec_free(&t->offsets);
	dt_vec_free(&t->bytes);
	dt_free(t->slots);
	memset(t, 0, sizeof(*t));
}

void dt_intern_copy(struct dt_intern *to, const struct dt_intern *from)
{
	memset(to, 0, sizeof(*to));
	dt_vec_grow(&to->offsets, from->offsets.len);
	memcpy(to->offsets.data, from->offsets.data,
	       from->offsets.len * sizeof(*from->offsets.data));
	dt_vec_grow(&to->bytes, from->bytes.len);
	memcpy(to->bytes.data, from->bytes.data, from->bytes.len);
	to->nslots = from->nslots;
	to->slots = dt_malloc((size_t)from->nslots * sizeof(*to->slots));
	memcpy(to->slots, from->slots, (size_t)from->nslots * sizeof(*to->slots));
}

void dt_intern_prefetch(const struct dt_intern *t, const void *p, size_t n)
{
	if (t->nslots)
		__builtin_prefetch(
		    &t->slots[dt_hash_bytes(p, n) & (t->nslots - 1)], 1);
}

uint32_t dt_intern(struct dt_intern *t, const void *p, size_t n)
{
	if (n > UINT32_MAX / 2)
		dt_die(__FILE__, __LINE__, "interned string too long");
	if ((t->offsets.len + 1) * 2 > t->nslots)
		intern_rehash(t, t->nslots ? t->nslots * 2 : 64);
	uint32_t h = dt_hash_bytes(p, n), i;
	uint32_t found = intern_find(t, h, p, n, &i);
	if (found != UINT32_MAX)
		return found;
	uint32_t id = t->offsets.len, len = (uint32_t)n, head = 1;
	while (head < 5 && len >> (7 * head))
		head++;
	uint32_t at = t->bytes.len + head;
	if (n && n % 8 == 0)
		at = (at + 7) & ~7u;
	dt_vec_grow(&t->bytes, at - t->bytes.len + len + 1);
	unsigned char *q = (unsigned char *)t->bytes.data + at;
	for (uint32_t k = 0; k < head; k++)
		*--q = (unsigned char)((len >> (7 * k) & 127) |
				       (k + 1 < head ? 128 : 0));
	if (n)
		memcpy(t->bytes.data + at, p, n);
	t->bytes.data[at + n] = 0;
	dt_vec_push(&t->offsets, at);
	t->slots[i] = (h & ~(t->nslots - 1)) | (id + 1);
	return id;
}

const void *dt_intern_get(const struct dt_intern *t, uint32_t id, size_t *n)
{
	DT_REQUIRE(id < t->offsets.len);
	if (n)
		*n = intern_len_at(t, id);
	return t->bytes.data + t->offsets.data[id];
}

uint32_t dt_intern_count(const struct dt_intern *t) { return t->offsets.len; }

/* ---- diagnostics ---- */

static const char *severity_name[] = {"note", "remark", "warning", "error"};

void dt_diag_init(struct dt_diag *d)
{
	memset(d, 0, sizeof(*d));
	d->max_errors = 20;
}

static void drop(void *ud, const struct dt_diag_entry *e)
{
	(void)ud, (void)e;
}

void dt_diag_init_quiet(struct dt_diag *d)
{
	dt_diag_init(d);
	d->emit = drop;
}

void dt_diag_format(const struct dt_diag_entry *e, FILE *out)
{
	if (e->file && e->line)
		fprintf(out, "%s:%u: ", e->file, e->line);
	else if (e->file)
		fprintf(out, "%s: ", e->file);
	fprintf(out, "%s: %s", severity_name[e->severity], e->message);
	if (e->tag)
		fprintf(out, " [%s]", e->tag);
}

void dt_diag_vreport(struct dt_diag *d, enum dt_severity sev, const char *file,
		     uint32_t line, const char *tag, const char *fmt, va_list ap)
{
	switch (sev) {
	case DT_ERROR:
		if (d->nerrors++ >= (d->max_errors ? d->max_errors : 20))
			return;
		break;
	case DT_WARNING:
		d->nwarnings++;
		break;
	case DT_REMARK:
		d->nremarks++;
		if (!d->remarks)
			return;
		break;
	case DT_NOTE:
		break;
	}
	char msg[2048];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	struct dt_diag_entry e = {sev, file, line, tag, msg};
	if (d->emit) {
		d->emit(d->ud, &e);
	} else {
		dt_diag_format(&e, stderr);
		fputc('\n', stderr);
	}
}

void dt_diag_report(struct dt_diag *d, enum dt_severity sev, const char *file,
		    uint32_t line, const char *tag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	dt_diag_vreport(d, sev, file, line, tag, fmt, ap);
	va_end(ap);
}

/* ---- dtypes ---- */

static const struct {
	const char *name;
	int size;
	bool is_float;
} dtype_info[] = {
#define X(e, n, s, f) {n, s, f},
	DT_DTYPES(X)
#undef X
};

const char *dt_dtype_name(enum dt_dtype t) { return dtype_info[t].name; }
int dt_dtype_size(enum dt_dtype t) { return dtype_info[t].size; }
bool dt_dtype_is_float(enum dt_dtype t) { return dtype_info[t].is_float; }

bool dt_dtype_parse(const char *name, size_t len, enum dt_dtype *out)
{
	if (len > 6 && memcmp(name, "torch.", 6) == 0) {
		name += 6;
		len -= 6;
	}
	for (int i = 0; i < DT_NDTYPES; i++) {
		if (strlen(dtype_info[i].name) == len &&
		    memcmp(dtype_info[i].name, name, len) == 0) {
			*out = (enum dt_dtype)i;
			return true;
		}
	}
	return false;
}

void dt_contiguous_strides(const int64_t *shape, int rank, int64_t *stride)
{
	int64_t s = 1;
	for (int i = rank - 1; i >= 0; i--) {
		stride[i] = s;
		s *= shape[i] > 1 ? shape[i] : 1;
	}
}

int64_t dt_numel(const int64_t *shape, int rank)
{
	int64_t n = 1;
	for (int i = 0; i < rank; i++)
		n *= shape[i];
	return n;
}

/* Shortest decimal that reads back as the same double. */
void dt_format_double(double v, char *buf, size_t n)
{
	if (isnan(v)) {
		snprintf(buf, n, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, n, v < 0 ? "-inf" : "inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* Integers as integers where that is no longer: 100, not 1e+02. */
	char plain[32];
	if (v == trunc(v) && fabs(v) < 1e16 &&
	    (size_t)snprintf(plain, sizeof(plain), "%.0f", v) <= strlen(buf))
		snprintf(buf, n, "%s", plain);
}


/* at::detail::computeStride: strides for viewing a tensor of
 * (in_shape, in_stride) as `shape`, or false when some new dim would span
 * two non-contiguous chunks of it. */
bool dt_view_strides(const int64_t *in_shape, const int64_t *in_stride,
		     int in_rank, const int64_t *shape, int rank,
		     int64_t *stride)
{
	if (in_rank == 0) {
		for (int i = 0; i < rank; i++)
			stride[i] = 1;
		return true;
	}
	int64_t numel = dt_numel(in_shape, in_rank);
	if (numel == 0) {
		bool same = rank == in_rank &&
			    memcmp(shape, in_shape, (size_t)rank * sizeof(int64_t)) == 0;
		if (same) {
			memcpy(stride, in_stride, (size_t)rank * sizeof(int64_t));
			return true;
		}
		for (int d = rank - 1; d >= 0; d--)
			stride[d] = d == rank - 1 ? 1
				    : (shape[d + 1] > 1 ? shape[d + 1] : 1) * stride[d + 1];
		return true;
	}
	int view_d = rank - 1;
	int64_t chunk_base = in_stride[in_rank - 1];
	int64_t tensor_numel = 1, view_numel = 1;
	for (int td = in_rank - 1; td >= 0; td--) {
		tensor_numel *= in_shape[td];
		if (td == 0 || (in_shape[td - 1] != 1 &&
				in_stride[td - 1] != tensor_numel * chunk_base)) {
			while (view_d >= 0 &&
			       (view_numel < tensor_numel || shape[view_d] == 1)) {
				stride[view_d] = view_numel * chunk_base;
				view_numel *= shape[view_d];
				view_d--;
			}
			if (view_numel != tensor_numel)
				return false;
			if (td > 0) {
				chunk_base = in_stride[td - 1];
				tensor_numel = 1;
				view_numel = 1;
			}
		}
	}
	return view_d == -1;
}

int dt_fail_message(char *err, size_t errlen, const char *fmt, ...)
{
	if (errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return DT_EINPUT;
}

uint32_t dt_crc32(const void *p, size_t n)
{
	static uint32_t table[256];
	if (!table[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	const unsigned char *s = p;
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++)
		c = table[(c ^ s[i]) & 0xFF] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}
