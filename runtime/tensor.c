// SPDX-License-Identifier: MIT
/* tensor.c: run-time tensors (geometry, element addresses, storage size),
 * refcounted buffers, and element conversion between every dtype and
 * double, with float16/bfloat16 rounded to nearest even. */
#include "internal.h"

#include <math.h>
#include <string.h>

int64_t dt_rt_numel(const struct dt_rt_tensor *t)
{
	return dt_numel(t->shape, t->rank);
}

/* PyTorch's is_contiguous(): size-1 dims may have any stride. */
bool dt_rt_is_contiguous(const struct dt_rt_tensor *t)
{
	if (dt_rt_numel(t) == 0)
		return true;
	int64_t z = 1;
	for (int d = t->rank - 1; d >= 0; d--) {
		if (t->shape[d] == 1)
			continue;
		if (t->stride[d] != z)
			return false;
		z *= t->shape[d];
	}
	return true;
}

void *dt_rt_element(const struct dt_rt_tensor *t, const int64_t *idx)
{
	int64_t off = t->offset;
	for (int d = 0; d < t->rank; d++)
		off += idx[d] * t->stride[d];
	return dt_rt_at(t, off);
}

void dt_rt_from_meta(struct dt_rt_tensor *t, const struct dt_module *m,
		     const struct dt_tensor *meta)
{
	int rank, nstride;
	const int64_t *shape = dt_ints_get(m, meta->shape, &rank);
	const int64_t *stride = dt_ints_get(m, meta->stride, &nstride);
	DT_REQUIRE(rank <= DT_MAX_RANK && nstride == rank);
	memset(t, 0, sizeof(*t));
	t->dtype = meta->dtype;
	t->rank = (uint8_t)rank;
	memcpy(t->shape, shape, (size_t)rank * sizeof(int64_t));
	memcpy(t->stride, stride, (size_t)rank * sizeof(int64_t));
	t->offset = meta->offset;
}

size_t dt_rt_storage_bytes(const struct dt_rt_tensor *t)
{
	if (dt_rt_numel(t) == 0)
		return 0;
	int64_t last = t->offset;
	for (int d = 0; d < t->rank; d++)
		last += (t->shape[d] - 1) * t->stride[d];
	return (size_t)(last + 1) * (size_t)dt_dtype_size((enum dt_dtype)t->dtype);
}

struct dt_buffer *dt_buffer_create(struct dt_backend *b, size_t bytes)
{
	void *data = b->ops->alloc(b, bytes ? bytes : 1);
	if (!data)
		return NULL;
	struct dt_buffer *buf = dt_malloc(sizeof(*buf));
	buf->data = data;
	buf->bytes = bytes;
	buf->refs = 1;
	buf->in_flight = false;
	return buf;
}

void dt_buffer_release(struct dt_backend *b, struct dt_buffer *buf)
{
	if (!buf)
		return;
	DT_REQUIRE(buf->refs > 0);
	if (--buf->refs > 0)
		return;
	b->ops->release(b, buf->data);
	dt_free(buf);
}

int dt_rt_to_host(struct dt_backend *b, const struct dt_rt_tensor *v,
		  struct dt_rt_tensor *out)
{
	*out = *v;
	out->buf = NULL;
	out->offset = 0;
	dt_contiguous_strides(out->shape, out->rank, out->stride);
	size_t bytes = dt_rt_storage_bytes(out);
	struct dt_rt_tensor staged = *out;
	const struct dt_rt_tensor *src = v;
	if (!dt_rt_is_contiguous(v)) { /* gather on the backend first */
		if (!(staged.buf = dt_buffer_create(b, bytes)))
			return DT_ERUNTIME;
		if (b->ops->copy(b, &staged, v) != DT_OK) {
			dt_buffer_release(b, staged.buf);
			return DT_ERUNTIME;
		}
		src = &staged;
	}
	struct dt_buffer *host = dt_malloc(sizeof(*host));
	host->data = dt_malloc(bytes ? bytes : 1);
	host->bytes = bytes;
	host->refs = 1;
	int rc = bytes ? b->ops->download(b, host->data, dt_rt_at(src, src->offset), bytes)
		       : DT_OK;
	dt_buffer_release(b, staged.buf);
	out->buf = host;
	if (rc != DT_OK)
		dt_rt_host_free(out);
	return rc == DT_OK ? DT_OK : DT_ERUNTIME;
}

void dt_rt_host_free(struct dt_rt_tensor *t)
{
	if (!t->buf)
		return;
	dt_free(t->buf->data);
	dt_free(t->buf);
	t->buf = NULL;
}

int dt_rt_vfail(struct dt_backend *b, const struct dt_module *m,
		const struct dt_node *n, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	const char *target = n->kind == DT_NODE_PLACEHOLDER ? "placeholder"
			     : n->kind == DT_NODE_OUTPUT    ? "output"
			     : n->kind == DT_NODE_CONSTANT  ? "get_attr"
							    : dt_str_get(m, n->target);
	b->failed_node = n;
	dt_diag_report(b->diag, DT_ERROR, m->file, n->line, NULL,
		       "node '%s' (%s): %s", dt_str_get(m, n->name), target, msg);
	return DT_ERUNTIME;
}

int dt_rt_fail(struct dt_backend *b, const struct dt_module *m,
	       const struct dt_node *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = dt_rt_vfail(b, m, n, fmt, ap);
	va_end(ap);
	return r;
}

/* ---- 16-bit floats ---- */

/* v rounded to nearest even with `p` significand bits and `emin` the
 * frexp exponent of the smallest normal; +-inf past `max`. */
static double round_bits(double v, int p, int emin, double max)
{
	if (!isfinite(v) || v == 0)
		return v;
	int e;
	frexp(v, &e);
	if (e < emin)
		e = emin;
	double q = ldexp(1.0, e - p);
	double r = nearbyint(v / q) * q;
	return fabs(r) > max ? copysign(INFINITY, v) : r;
}

#define F16_MAX 65504.0
#define BF16_MAX 3.3895313892515355e38

uint16_t dt_f16_from_double(double v)
{
	uint16_t sign = signbit(v) ? 0x8000 : 0;
	if (isnan(v))
		return (uint16_t)(sign | 0x7e00);
	double r = fabs(round_bits(v, 11, -13, F16_MAX));
	if (isinf(r))
		return (uint16_t)(sign | 0x7c00);
	if (r < ldexp(1.0, -14)) /* subnormal or zero: units of 2^-24 */
		return (uint16_t)(sign | (uint16_t)ldexp(r, 24));
	int e;
	double m = frexp(r, &e); /* r = m * 2^e, m in [0.5, 1) */
	uint16_t mant = (uint16_t)((m * 2 - 1) * 1024);
	return (uint16_t)(sign | (uint16_t)((e + 14) << 10) | mant);
}

double dt_f16_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f, mant = h & 0x3ff;
	double v;
	if (e == 0)
		v = ldexp(mant, -24);
	else if (e == 31)
		v = mant ? NAN : INFINITY;
	else
		v = ldexp(1024 + mant, e - 25);
	return (h & 0x8000) ? -v : v;
}

uint16_t dt_bf16_from_double(double v)
{
	if (isnan(v))
		return signbit(v) ? 0xffc0 : 0x7fc0;
	float f = (float)round_bits(v, 8, -125, BF16_MAX); /* exact */
	uint32_t bits;
	memcpy(&bits, &f, sizeof(bits));
	return (uint16_t)(bits >> 16);
}

double dt_bf16_to_double(uint16_t h)
{
	uint32_t bits = (uint32_t)h << 16;
	float f;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* ---- loaders and storers ---- */

/* double -> int64 as a C cast on x86 would give (NaN and out of range:
 * INT64_MIN); narrower integers wrap around. */
static int64_t to_int(double v)
{
	if (!(v > -9.2233720368547758e18 && v < 9.2233720368547758e18))
		return INT64_MIN;
	return (int64_t)v;
}

#define LOADER(name, T)                                                    \
	static double load_##name(const void *p)                           \
	{                                                                  \
		T x;                                                       \
		memcpy(&x, p, sizeof(x));                                  \
		return (double)x;                                          \
	}
LOADER(f32, float)
LOADER(f64, double)
LOADER(i64, int64_t)
LOADER(i32, int32_t)
LOADER(i16, int16_t)
LOADER(i8, int8_t)
LOADER(u8, uint8_t)
#undef LOADER

static double load_f16(const void *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return dt_f16_to_double(h);
}

static double load_bf16(const void *p)
{
	uint16_t h;
	memcpy(&h, p, 2);
	return dt_bf16_to_double(h);
}

static double load_bool(const void *p)
{
	return *(const uint8_t *)p != 0;
}

static void store_f32(void *p, double v)
{
	float x = (float)v;
	memcpy(p, &x, sizeof(x));
}

static void store_f64(void *p, double v)
{
	memcpy(p, &v, sizeof(v));
}

static void store_f16(void *p, double v)
{
	uint16_t h = dt_f16_from_double(v);
	memcpy(p, &h, 2);
}

static void store_bf16(void *p, double v)
{
	uint16_t h = dt_bf16_from_double(v);
	memcpy(p, &h, 2);
}

#define STORER(name, T)                                                    \
	static void store_##name(void *p, double v)                        \
	{                                                                  \
		T x = (T)(uint64_t)to_int(v);                              \
		memcpy(p, &x, sizeof(x));                                  \
	}
STORER(i32, int32_t)
STORER(i16, int16_t)
STORER(i8, int8_t)
STORER(u8, uint8_t)
#undef STORER

static void store_i64(void *p, double v)
{
	int64_t x = to_int(v);
	memcpy(p, &x, sizeof(x));
}

static void store_bool(void *p, double v)
{
	*(uint8_t *)p = v != 0;
}

static const struct {
	dt_load_fn load;
	dt_store_fn store;
} element_fns[DT_NDTYPES] = {
	[DT_FLOAT32] = {load_f32, store_f32},   [DT_FLOAT16] = {load_f16, store_f16},
	[DT_BFLOAT16] = {load_bf16, store_bf16}, [DT_FLOAT64] = {load_f64, store_f64},
	[DT_INT64] = {load_i64, store_i64},     [DT_INT32] = {load_i32, store_i32},
	[DT_INT16] = {load_i16, store_i16},     [DT_INT8] = {load_i8, store_i8},
	[DT_UINT8] = {load_u8, store_u8},       [DT_BOOL] = {load_bool, store_bool},
};

dt_load_fn dt_loader(enum dt_dtype t)
{
	DT_REQUIRE((unsigned)t < DT_NDTYPES);
	return element_fns[t].load;
}

dt_store_fn dt_storer(enum dt_dtype t)
{
	DT_REQUIRE((unsigned)t < DT_NDTYPES);
	return element_fns[t].store;
}

double dt_load_element(enum dt_dtype t, const void *p)
{
	return dt_loader(t)(p);
}

void dt_store_element(enum dt_dtype t, void *p, double v)
{
	dt_storer(t)(p, v);
}

double dt_round_to(enum dt_dtype t, double v)
{
	if (t == DT_FLOAT64)
		return v;
	unsigned char tmp[8];
	element_fns[t].store(tmp, v);
	return element_fns[t].load(tmp);
}

/* ---- views ---- */

bool dt_rt_view_strides(const struct dt_rt_tensor *in, const int64_t *shape,
			int rank, int64_t *stride)
{
	return dt_view_strides(in->shape, in->stride, in->rank, shape, rank,
			       stride);
}

struct dt_rt_tensor dt_rt_narrow(const struct dt_rt_tensor *t, int d,
				 int64_t start, int64_t len, int64_t step)
{
	struct dt_rt_tensor r = *t;
	r.offset += start * t->stride[d];
	r.shape[d] = len;
	r.stride[d] *= step;
	return r;
}

struct dt_rt_tensor dt_rt_select(const struct dt_rt_tensor *t, int d,
				 int64_t index)
{
	struct dt_rt_tensor r = *t;
	r.offset += index * t->stride[d];
	for (int i = d; i + 1 < t->rank; i++) {
		r.shape[i] = t->shape[i + 1];
		r.stride[i] = t->stride[i + 1];
	}
	r.rank--;
	return r;
}

bool dt_rt_wrap_dim(int64_t *dim, int rank)
{
	int64_t r = rank > 0 ? rank : 1;
	if (*dim < -r || *dim >= r)
		return false;
	if (*dim < 0)
		*dim += r;
	return true;
}
