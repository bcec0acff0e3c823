// SPDX-License-Identifier: MIT
/* support.h: what every part of dtopt builds on: status codes and
 * DT_REQUIRE, growable vectors, the arena, interning of strings and int64
 * lists, diagnostics, typed ids, the IR's size limits, and small numeric
 * helpers (strides, number printing, CRC-32). Defined in support.c.
 * Included by ir.h. */
#ifndef DTOPT_SUPPORT_H
#define DTOPT_SUPPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------------ */
/* Status codes. Functions that can fail on user input return DT_OK or a
 * negative code; the message has already gone to the diagnostics sink. */
enum dt_status {
	DT_OK = 0,
	DT_EINPUT = -1,       /* the input is wrong (exit 1) */
	DT_EUSAGE = -2,       /* the command line is wrong (exit 2) */
	DT_ERUNTIME = -3,     /* runtime or backend failure (exit 3) */
	DT_EIO = -4,          /* reading or writing a file failed (exit 1) */
};

/* Abort on a broken internal invariant (never on user input). */
_Noreturn void dt_die(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define DT_REQUIRE(cond)                                                   \
	do {                                                               \
		if (!(cond))                                               \
			dt_die(__FILE__, __LINE__, "requirement failed: %s", \
			       #cond);                                     \
	} while (0)

/* ------------------------------------------------------------------ */
/* Allocation. Every heap allocation of the library goes through one
 * pluggable function, so tests can count, fail or leak-check them. Running
 * out of memory is fatal (dt_die), as in most compilers. */
typedef void *(*dt_realloc_fn)(void *ud, void *ptr, size_t size);
/* Install `fn` (NULL restores libc). Not thread-safe; call before use. */
void dt_set_allocator(dt_realloc_fn fn, void *ud);
void *dt_realloc(void *ptr, size_t size); /* size 0 frees; never NULL otherwise */
void *dt_malloc(size_t size);
void *dt_calloc(size_t n, size_t size);
void dt_free(void *ptr);
char *dt_strdup(const char *s);
/* Open a new temporary file beside `path` (PATH.tmp.XXXXXX, permissions
 * `mode`), for writing `path` atomically: the caller renames *tmp over
 * `path` when everything is written and unlinks it otherwise, then
 * dt_frees *tmp. Returns the descriptor, or -1 with errno set (*tmp NULL). */
int dt_temp_beside(const char *path, unsigned mode, char **tmp);

/* Growable array of T on the heap: `DT_VEC(int) v = {0};`. */
#define DT_VEC(T)                                                          \
	struct {                                                           \
		T *data;                                                   \
		uint32_t len, cap;                                         \
	}
/* Make room for `n` more elements; returns the index of the first one.
 * Leaves data non-NULL even for n = 0, so copying a grown vector's zero
 * bytes (memcpy, memset) is defined. */
#define dt_vec_grow(v, n)                                                  \
	dt_vec_room_((v)->data, (void **)&(v)->data, &(v)->len, &(v)->cap, \
		     sizeof(*(v)->data), (n))
/* Append x; evaluates to its index. */
#define dt_vec_push(v, x)                                                  \
	(dt_vec_grow((v), 1), (v)->data[(v)->len - 1] = (x),                 \
	 dt_vec_last_((v)->len))
static inline uint32_t dt_vec_last_(uint32_t len) { return len - 1; }
#define dt_vec_free(v) (dt_free((v)->data), (v)->data = NULL, (v)->len = (v)->cap = 0)
uint32_t dt_vec_grow_(void **data, uint32_t *len, uint32_t *cap, size_t elem,
		      uint32_t n);
/* dt_vec_grow's common case, room already there, without a call (data:
 * the vector's data, *pdata read only by the call). */
static inline uint32_t dt_vec_room_(const void *data, void **pdata,
				    uint32_t *len, uint32_t *cap, size_t elem,
				    uint32_t n)
{
	uint32_t at = *len;
	if (data && n <= *cap - at) {
		*len = at + n;
		return at;
	}
	return dt_vec_grow_(pdata, len, cap, elem, n);
}

/* Bump allocator: many small allocations freed together. */
struct dt_arena {
	struct dt_arena_chunk *chunks;
	char *cur, *end;
	size_t bytes; /* total requested, for statistics */
};
void dt_arena_init(struct dt_arena *a);
void dt_arena_fini(struct dt_arena *a);   /* frees everything */
void dt_arena_reset(struct dt_arena *a);  /* keeps the first chunk */
void *dt_arena_alloc(struct dt_arena *a, size_t size); /* 16-aligned, zeroed */
char *dt_arena_strndup(struct dt_arena *a, const char *s, size_t n);

/* A fast 32-bit hash of n bytes, eight at a time (not for adversaries:
 * tables that use it keep their probe counts bounded by their load). */
uint32_t dt_hash_bytes(const void *p, size_t n);

/* Interning table: equal byte strings get equal dense ids (0 is the empty
 * string). Stored bytes are NUL-terminated, 8-aligned when their length is
 * a nonzero multiple of 8, and valid until the next dt_intern (the store
 * grows) or fini. */
struct dt_intern {
	DT_VEC(uint32_t) offsets;     /* id -> offset of its bytes */
	DT_VEC(char) bytes;           /* records: length, bytes, NUL */
	uint32_t *slots;              /* open addressing: hash tag | id+1 */
	uint32_t nslots;
};
void dt_intern_init(struct dt_intern *t);
void dt_intern_fini(struct dt_intern *t);
/* Make `to` (uninitialised or finished) a copy of `from`: the same ids. */
void dt_intern_copy(struct dt_intern *to, const struct dt_intern *from);
uint32_t dt_intern(struct dt_intern *t, const void *p, size_t n);
/* A hint that `p` will be interned soon: starts loading the table slot it
 * probes first, so an insert some work later finds it in the cache. */
void dt_intern_prefetch(const struct dt_intern *t, const void *p, size_t n);
/* Returns the bytes of `id` and stores their length in *n (if not NULL). */
const void *dt_intern_get(const struct dt_intern *t, uint32_t id, size_t *n);
uint32_t dt_intern_count(const struct dt_intern *t);

/* ------------------------------------------------------------------ */
/* Diagnostics. Library code reports user-facing problems here and never
 * prints or exits itself. Messages are GNU style:
 *   file:line: error: message [tag]                                  */
enum dt_severity { DT_NOTE, DT_REMARK, DT_WARNING, DT_ERROR };

struct dt_diag_entry {
	enum dt_severity severity;
	const char *file; /* may be NULL */
	uint32_t line;    /* 0 = none */
	const char *tag;  /* "pass:reason" for remarks, may be NULL */
	const char *message;
};

struct dt_diag {
	/* Receives each diagnostic; NULL prints to stderr in GNU style. */
	void (*emit)(void *ud, const struct dt_diag_entry *e);
	void *ud;
	unsigned nerrors, nwarnings, nremarks;
	unsigned max_errors; /* stop reporting (not counting) past this; 0 = 20 */
	bool remarks;        /* emit remarks at all */
};
void dt_diag_init(struct dt_diag *d);
/* A diag that drops every message (counting them): for trials and
 * checks whose failures the caller handles itself. */
void dt_diag_init_quiet(struct dt_diag *d);
void dt_diag_report(struct dt_diag *d, enum dt_severity sev, const char *file,
		    uint32_t line, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void dt_diag_vreport(struct dt_diag *d, enum dt_severity sev, const char *file,
		     uint32_t line, const char *tag, const char *fmt, va_list ap);
/* Format one entry the GNU way into `out` (no newline). */
void dt_diag_format(const struct dt_diag_entry *e, FILE *out);
/* Write a message into err[errlen] (for functions that return their error
 * as text) and return DT_EINPUT. */
int dt_fail_message(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------ */
/* Typed ids. One-field structs, so ids of different kinds cannot mix. */
typedef struct { uint32_t id; } dt_str;  /* interned string, 0 = "" */
typedef struct { uint32_t id; } dt_ints; /* interned int64 list, 0 = [] */

/* ------------------------------------------------------------------ */
/* Limits. */
#define DT_MAX_RANK 8       /* tensor rank limit */
#define DT_MAX_MESH_DIMS 8  /* mesh rank limit */
#define DT_MAX_MODES 16     /* layout modes limit */

/* ------------------------------------------------------------------ */
/* Numeric helpers. */

/* Shortest decimal text that reads back as the same double ("1e-05",
 * "inf", "-inf", "nan"). */
void dt_format_double(double v, char *buf, size_t n);

/* PyTorch's view stride rule (at::detail::computeStride): strides for
 * viewing a tensor of (in_shape, in_stride) as `shape`; false when a view
 * is impossible and a copy is needed. */
bool dt_view_strides(const int64_t *in_shape, const int64_t *in_stride,
		     int in_rank, const int64_t *shape, int rank,
		     int64_t *stride);

/* CRC-32 (IEEE 802.3, zlib's crc32) of n bytes: the checksum of constant
 * data in files and dumps. */
uint32_t dt_crc32(const void *p, size_t n);

/* Contiguous (row-major) strides for `shape`. */
void dt_contiguous_strides(const int64_t *shape, int rank, int64_t *stride);
int64_t dt_numel(const int64_t *shape, int rank);

#endif
