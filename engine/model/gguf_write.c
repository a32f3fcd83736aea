/*
 * The GGUF writer (gguf_write.h).
 */
#include "model/gguf_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/grow.h"
#include "base/mem.h"

#define CHUNK_BYTES  (4u << 20)     /* tensor data is produced this much at
                                       a time */

typedef struct {
    char               *name;
    uint32_t            type;
    const clef_dtype_traits  *q;
    int                 ndim;
    int64_t             ne[CLEF_GGUF_MAX_DIMS];
    int64_t             rows;
    int64_t             row_bytes;
    uint64_t            nbytes;
    uint64_t            offset;
    const void         *data;       /* raw bytes */
    const float        *src;        /* f32 values */
    clef_gguf_rows_fn   fn;
    void               *ctx;
    int                 fn_f32;
    int                 zero;       /* all bytes 0: a hole in the file */
} wtensor;

struct clef_gguf_writer {
    clef_buf    meta;               /* the encoded keys and values */
    uint64_t    n_kv;
    char      **keys;
    size_t      cap_keys;
    uint32_t    alignment;
    wtensor    *t;
    size_t      n_t;
    size_t      cap_t;
};

static const int  elem_size[CLEF_GGUF_TYPE_COUNT] = {
    1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8
};

clef_gguf_writer *
clef_gguf_writer_new(void)
{
    clef_gguf_writer  *w = calloc(1, sizeof(*w));

    if (w != NULL) {
        w->alignment = CLEF_GGUF_ALIGNMENT;
    }
    return w;
}

void
clef_gguf_writer_free(clef_gguf_writer *w)
{
    size_t  i;

    if (w == NULL) {
        return;
    }
    clef_buf_free(&w->meta);
    for (i = 0; i < w->n_kv; i++) {
        free(w->keys[i]);
    }
    clef_mem_free(w->keys);         /* grown by clef_grow() */
    for (i = 0; i < w->n_t; i++) {
        free(w->t[i].name);
    }
    clef_mem_free(w->t);
    free(w);
}

static int
oom(clef_error *err)
{
    return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory writing a"
                           " GGUF file");
}

static int
bad(clef_error *err, const char *what, const char *msg)
{
    return clef_error_fail(err, CLEF_E_INTERNAL, "GGUF writer: %s: %s", what,
                           msg);
}

static int
put_u32(clef_buf *b, uint32_t v)
{
    return clef_buf_append(b, &v, 4);
}

static int
put_u64(clef_buf *b, uint64_t v)
{
    return clef_buf_append(b, &v, 8);
}

static int
put_string(clef_buf *b, const char *s, uint64_t len)
{
    return put_u64(b, len) != 0 || clef_buf_append(b, s, (size_t) len) != 0
           ? -1 : 0;
}

/* Appends the key (checked unique) and its type; the value follows. */
static int
begin_kv(clef_gguf_writer *w, const char *key, clef_gguf_type type,
    clef_error *err)
{
    size_t  i;

    if (key == NULL || key[0] == '\0') {
        return bad(err, "a key", "empty");
    }
    for (i = 0; i < w->n_kv; i++) {
        if (strcmp(w->keys[i], key) == 0) {
            return bad(err, key, "given twice");
        }
    }
    if (clef_grow((void **) &w->keys, &w->cap_keys, w->n_kv + 1,
                  sizeof(*w->keys)) != 0
        || (w->keys[w->n_kv] = strdup(key)) == NULL)
    {
        return oom(err);
    }
    w->n_kv++;
    if (put_string(&w->meta, key, strlen(key)) != 0
        || put_u32(&w->meta, (uint32_t) type) != 0)
    {
        return oom(err);
    }
    return 0;
}

static int
is_number(clef_gguf_type t)
{
    return t < CLEF_GGUF_TYPE_COUNT && t != CLEF_GGUF_STRING
           && t != CLEF_GGUF_ARRAY;
}

static int
put_scalar(clef_gguf_writer *w, const char *key, clef_gguf_type type,
    const void *le, clef_error *err)
{
    if (!is_number(type)) {
        return bad(err, key, "not a number type");
    }
    if (begin_kv(w, key, type, err) != 0) {
        return -1;
    }
    return clef_buf_append(&w->meta, le, (size_t) elem_size[type]) != 0
           ? oom(err) : 0;
}

int
clef_gguf_put_uint(clef_gguf_writer *w, const char *key, clef_gguf_type type,
    uint64_t v, clef_error *err)
{
    if (type != CLEF_GGUF_UINT8 && type != CLEF_GGUF_UINT16
        && type != CLEF_GGUF_UINT32 && type != CLEF_GGUF_UINT64
        && type != CLEF_GGUF_BOOL)
    {
        return bad(err, key, "not an unsigned type");
    }
    if (elem_size[type] < 8 && v >> (8 * elem_size[type]) != 0) {
        return bad(err, key, "the value does not fit its type");
    }
    if (strcmp(key, "general.alignment") == 0) {
        if (type != CLEF_GGUF_UINT32 || v == 0 || (v & (v - 1)) != 0
            || v > UINT32_MAX)
        {
            return bad(err, key, "must be a UINT32 power of two");
        }
        w->alignment = (uint32_t) v;
    }
    /* little-endian: the low bytes of v are the value */
    return put_scalar(w, key, type, &v, err);
}

int
clef_gguf_put_int(clef_gguf_writer *w, const char *key, clef_gguf_type type,
    int64_t v, clef_error *err)
{
    if (type != CLEF_GGUF_INT8 && type != CLEF_GGUF_INT16
        && type != CLEF_GGUF_INT32 && type != CLEF_GGUF_INT64)
    {
        return bad(err, key, "not a signed type");
    }
    if (elem_size[type] < 8
        && (v < -(INT64_C(1) << (8 * elem_size[type] - 1))
            || v >= INT64_C(1) << (8 * elem_size[type] - 1)))
    {
        return bad(err, key, "the value does not fit its type");
    }
    return put_scalar(w, key, type, &v, err);
}

int
clef_gguf_put_float(clef_gguf_writer *w, const char *key, clef_gguf_type type,
    double v, clef_error *err)
{
    float  f = (float) v;

    if (type == CLEF_GGUF_FLOAT32) {
        return put_scalar(w, key, type, &f, err);
    }
    if (type != CLEF_GGUF_FLOAT64) {
        return bad(err, key, "not a float type");
    }
    return put_scalar(w, key, type, &v, err);
}

int
clef_gguf_put_str(clef_gguf_writer *w, const char *key, const char *s,
    size_t len, clef_error *err)
{
    if (begin_kv(w, key, CLEF_GGUF_STRING, err) != 0) {
        return -1;
    }
    return put_string(&w->meta, s, len) != 0 ? oom(err) : 0;
}

int
clef_gguf_put_arr(clef_gguf_writer *w, const char *key, clef_gguf_type elem,
    const void *data, uint64_t n, clef_error *err)
{
    if (!is_number(elem)) {
        return bad(err, key, "an array of numbers must have a number type");
    }
    if (n > SIZE_MAX / 8) {
        return oom(err);
    }
    if (begin_kv(w, key, CLEF_GGUF_ARRAY, err) != 0) {
        return -1;
    }
    if (put_u32(&w->meta, (uint32_t) elem) != 0 || put_u64(&w->meta, n) != 0
        || clef_buf_append(&w->meta, data, (size_t) n * elem_size[elem]) != 0)
    {
        return oom(err);
    }
    return 0;
}

int
clef_gguf_put_arr_str(clef_gguf_writer *w, const char *key,
    const clef_gguf_str *s, uint64_t n, clef_error *err)
{
    uint64_t  i;

    if (begin_kv(w, key, CLEF_GGUF_ARRAY, err) != 0) {
        return -1;
    }
    if (put_u32(&w->meta, CLEF_GGUF_STRING) != 0 || put_u64(&w->meta, n) != 0) {
        return oom(err);
    }
    for (i = 0; i < n; i++) {
        if (put_string(&w->meta, s[i].s, s[i].len) != 0) {
            return oom(err);
        }
    }
    return 0;
}

/* The payload of v (after its type), arrays element by element. */
static int
put_payload(clef_buf *b, const clef_gguf_value *v)
{
    const clef_gguf_str    *s;
    const clef_gguf_value  *a;
    uint64_t                i, n;
    clef_gguf_type          e;

    switch (v->type) {
    case CLEF_GGUF_STRING:
        return put_string(b, v->v.str.s, v->v.str.len);
    case CLEF_GGUF_ARRAY:
        e = v->v.arr.elem;
        n = v->v.arr.n;
        if (put_u32(b, (uint32_t) e) != 0 || put_u64(b, n) != 0) {
            return -1;
        }
        if (e == CLEF_GGUF_STRING) {
            for (i = 0, s = v->v.arr.data; i < n; i++) {
                if (put_string(b, s[i].s, s[i].len) != 0) {
                    return -1;
                }
            }
            return 0;
        }
        if (e == CLEF_GGUF_ARRAY) {
            for (i = 0, a = v->v.arr.data; i < n; i++) {
                if (put_payload(b, &a[i]) != 0) {
                    return -1;
                }
            }
            return 0;
        }
        return clef_buf_append(b, v->v.arr.data, (size_t) n * elem_size[e]);
    case CLEF_GGUF_FLOAT32: {
        float  f = (float) v->v.f;

        return clef_buf_append(b, &f, 4);
    }
    case CLEF_GGUF_FLOAT64:
        return clef_buf_append(b, &v->v.f, 8);
    default:
        /* integers and BOOL: the low bytes of the 64-bit field */
        return clef_buf_append(b, &v->v.u, (size_t) elem_size[v->type]);
    }
}

int
clef_gguf_put_value(clef_gguf_writer *w, const char *key,
    const clef_gguf_value *v, clef_error *err)
{
    if ((unsigned) v->type >= CLEF_GGUF_TYPE_COUNT) {
        return bad(err, key, "unknown value type");
    }
    if (v->type == CLEF_GGUF_UINT32 && strcmp(key, "general.alignment") == 0) {
        return clef_gguf_put_uint(w, key, v->type, v->v.u, err);
    }
    if (begin_kv(w, key, v->type, err) != 0) {
        return -1;
    }
    return put_payload(&w->meta, v) != 0 ? oom(err) : 0;
}

/* ---- tensors --------------------------------------------------------- */

static int
add(clef_gguf_writer *w, const char *name, uint32_t type, int ndim,
    const int64_t *ne, wtensor **out, clef_error *err)
{
    wtensor     *t;
    int64_t      numel = 1;
    size_t       i;
    int          j;
    clef_dtype   dt;

    if (name == NULL || name[0] == '\0'
        || strlen(name) >= CLEF_GGUF_MAX_NAME)
    {
        return bad(err, name ? name : "a tensor", "a tensor name must have 1"
                   " to 63 bytes");
    }
    for (i = 0; i < w->n_t; i++) {
        if (strcmp(w->t[i].name, name) == 0) {
            return bad(err, name, "tensor given twice");
        }
    }
    if (clef_dtype_from_ggml((int) type, &dt) != 0
        || !clef_dtype_is_float(dt))
    {
        return bad(err, name, "not a type ngx_clef writes");
    }
    if (ndim < 1 || ndim > CLEF_GGUF_MAX_DIMS) {
        return bad(err, name, "1 to 4 dimensions");
    }
    if (clef_grow((void **) &w->t, &w->cap_t, w->n_t + 1, sizeof(*w->t)) != 0) {
        return oom(err);
    }
    t = &w->t[w->n_t];
    memset(t, 0, sizeof(*t));
    for (j = 0; j < CLEF_GGUF_MAX_DIMS; j++) {
        t->ne[j] = j < ndim ? ne[j] : 1;
        if (t->ne[j] < 0 || (t->ne[j] != 0 && numel > INT64_MAX / t->ne[j])) {
            return bad(err, name, "a dimension is negative or too large");
        }
        numel *= t->ne[j];
    }
    t->row_bytes = clef_ggml_row_bytes(type, t->ne[0]);
    if (t->row_bytes < 0) {
        return bad(err, name, "a row is not a whole number of blocks, or too"
                   " large");
    }
    t->rows = t->ne[0] == 0 ? 0 : numel / t->ne[0];
    if (t->rows != 0 && t->row_bytes > INT64_MAX / t->rows) {
        return bad(err, name, "too large");
    }
    t->nbytes = (uint64_t) (t->row_bytes * t->rows);
    t->name = strdup(name);
    if (t->name == NULL) {
        return oom(err);
    }
    t->type = type;
    t->q = clef_dtype_traits_of(dt);
    t->ndim = ndim;
    w->n_t++;
    *out = t;
    return 0;
}

int
clef_gguf_add_tensor(clef_gguf_writer *w, const char *name, uint32_t type,
    int ndim, const int64_t *ne, const void *data, clef_error *err)
{
    wtensor  *t;

    if (add(w, name, type, ndim, ne, &t, err) != 0) {
        return -1;
    }
    t->data = data;
    return 0;
}

/* A type read only (quant.h: llama-quantize's searches) has no quantizer:
 * its tensors are written from their blocks. */
static int
quantizable(uint32_t type, const char *name, clef_error *err)
{
    clef_dtype  dt;

    if (clef_dtype_from_ggml((int) type, &dt) == 0
        && clef_dtype_traits_of(dt)->from_f32 == NULL)
    {
        return bad(err, name, "ngx_clef has no quantizer for this type: give"
                   " its blocks");
    }
    return 0;
}

int
clef_gguf_add_tensor_f32(clef_gguf_writer *w, const char *name, uint32_t type,
    int ndim, const int64_t *ne, const float *src, clef_error *err)
{
    wtensor  *t;

    if (quantizable(type, name, err) != 0
        || add(w, name, type, ndim, ne, &t, err) != 0)
    {
        return -1;
    }
    t->src = src;
    return 0;
}

int
clef_gguf_add_tensor_rows(clef_gguf_writer *w, const char *name, uint32_t type,
    int ndim, const int64_t *ne, int f32, clef_gguf_rows_fn fn, void *ctx,
    clef_error *err)
{
    wtensor  *t;

    if ((f32 && quantizable(type, name, err) != 0)
        || add(w, name, type, ndim, ne, &t, err) != 0)
    {
        return -1;
    }
    t->fn = fn;
    t->ctx = ctx;
    t->fn_f32 = f32;
    return 0;
}

int
clef_gguf_add_tensor_zero(clef_gguf_writer *w, const char *name,
    uint32_t type, int ndim, const int64_t *ne, clef_error *err)
{
    wtensor  *t;

    if (add(w, name, type, ndim, ne, &t, err) != 0) {
        return -1;
    }
    t->zero = 1;
    return 0;
}

/* ---- the file -------------------------------------------------------- */

typedef struct {
    FILE        *f;
    const char  *path;
    clef_error  *err;
    int          failed;
} out;

static int
out_write(out *o, const void *p, size_t n)
{
    if (!o->failed && n > 0 && fwrite(p, 1, n, o->f) != n) {
        o->failed = 1;
        clef_error_fail(o->err, CLEF_E_INTERNAL, "cannot write '%s': %s",
                        o->path, strerror(errno));
    }
    return o->failed ? -1 : 0;
}

static int
out_pad(out *o, uint64_t pos, uint32_t alignment)
{
    static const uint8_t  zeros[64];
    uint64_t              n = (alignment - pos % alignment) % alignment;
    size_t                k;

    while (n > 0) {
        k = n < sizeof(zeros) ? (size_t) n : sizeof(zeros);
        if (out_write(o, zeros, k) != 0) {
            return -1;
        }
        n -= k;
    }
    return 0;
}

static uint64_t
align_up(uint64_t v, uint32_t a)
{
    return (v + a - 1) / a * a;
}

/* One tensor's data, CHUNK_BYTES at a time. */
static int
write_data(out *o, const wtensor *t, uint8_t *raw, float *vals,
    int64_t chunk_rows)
{
    int64_t  row, n;

    if (t->zero) {
        /* skipped: the file system reads the hole back as zeros */
        if (fseeko(o->f, (off_t) t->nbytes, SEEK_CUR) != 0) {
            o->failed = 1;
            return clef_error_fail(o->err, CLEF_E_INTERNAL, "cannot seek in"
                                   " '%s': %s", o->path, strerror(errno));
        }
        return 0;
    }
    for (row = 0; row < t->rows; row += n) {
        n = t->rows - row < chunk_rows ? t->rows - row : chunk_rows;
        if (t->data != NULL) {
            if (out_write(o, (const uint8_t *) t->data + row * t->row_bytes,
                          (size_t) (n * t->row_bytes)) != 0)
            {
                return -1;
            }
            continue;
        }
        if (t->src != NULL) {
            t->q->from_f32(t->src + row * t->ne[0], raw, n * t->ne[0]);
        } else if (t->fn_f32) {
            if (t->fn(t->ctx, row, n, vals, o->err) != 0) {
                return -1;
            }
            t->q->from_f32(vals, raw, n * t->ne[0]);
        } else if (t->fn(t->ctx, row, n, raw, o->err) != 0) {
            return -1;
        }
        if (out_write(o, raw, (size_t) (n * t->row_bytes)) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
write_all(clef_gguf_writer *w, out *o)
{
    clef_buf   hdr = { 0 };
    uint64_t   off = 0, pos;
    int64_t    most = 1, chunk_rows;
    uint8_t   *raw = NULL;
    float     *vals = NULL;
    size_t     i;
    int        j, rc = -1;

    for (i = 0; i < w->n_t; i++) {
        w->t[i].offset = off;
        off = align_up(off + w->t[i].nbytes, w->alignment);
    }
    if (clef_buf_append(&hdr, "GGUF", 4) != 0 || put_u32(&hdr, 3) != 0
        || put_u64(&hdr, w->n_t) != 0 || put_u64(&hdr, w->n_kv) != 0
        || clef_buf_append(&hdr, w->meta.data, w->meta.len) != 0)
    {
        oom(o->err);
        goto done;
    }
    for (i = 0; i < w->n_t; i++) {
        const wtensor  *t = &w->t[i];

        if (put_string(&hdr, t->name, strlen(t->name)) != 0
            || put_u32(&hdr, (uint32_t) t->ndim) != 0)
        {
            oom(o->err);
            goto done;
        }
        for (j = 0; j < t->ndim; j++) {
            if (put_u64(&hdr, (uint64_t) t->ne[j]) != 0) {
                oom(o->err);
                goto done;
            }
        }
        if (put_u32(&hdr, t->type) != 0 || put_u64(&hdr, t->offset) != 0) {
            oom(o->err);
            goto done;
        }
    }
    if (out_write(o, hdr.data, hdr.len) != 0
        || out_pad(o, hdr.len, w->alignment) != 0)
    {
        goto done;
    }

    /* one buffer for a chunk of rows, raw and f32, for the widest row */
    for (i = 0; i < w->n_t; i++) {
        most = w->t[i].ne[0] > most ? w->t[i].ne[0] : most;
    }
    chunk_rows = (int64_t) (CHUNK_BYTES / sizeof(float)) / most;
    chunk_rows = chunk_rows > 0 ? chunk_rows : 1;
    raw = malloc((size_t) (chunk_rows * most) * sizeof(float));
    vals = malloc((size_t) (chunk_rows * most) * sizeof(float));
    if (raw == NULL || vals == NULL) {
        oom(o->err);
        goto done;
    }
    for (i = 0, pos = 0; i < w->n_t; i++) {
        if (write_data(o, &w->t[i], raw, vals, chunk_rows) != 0) {
            goto done;
        }
        pos += w->t[i].nbytes;
        if (out_pad(o, pos, w->alignment) != 0) {
            goto done;
        }
        pos = align_up(pos, w->alignment);
    }
    /* a hole at the end is made by the file's length */
    if (fflush(o->f) != 0
        || ftruncate(fileno(o->f), (off_t) (align_up(hdr.len, w->alignment)
                                            + pos)) != 0)
    {
        o->failed = 1;
        clef_error_fail(o->err, CLEF_E_INTERNAL, "cannot write '%s': %s",
                        o->path, strerror(errno));
        goto done;
    }
    rc = 0;

done:
    clef_buf_free(&hdr);
    free(raw);
    free(vals);
    return rc;
}

int
clef_gguf_writer_write(clef_gguf_writer *w, const char *path, clef_error *err)
{
    char  tmp[4200];
    out   o;
    int   rc;

    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long) getpid());
    o.f = fopen(tmp, "wb");
    o.path = tmp;
    o.err = err;
    o.failed = 0;
    if (o.f == NULL) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "cannot create '%s': %s",
                               tmp, strerror(errno));
    }
    rc = write_all(w, &o);
    if (fclose(o.f) != 0 && rc == 0) {
        rc = clef_error_fail(err, CLEF_E_INTERNAL, "cannot write '%s': %s",
                             tmp, strerror(errno));
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = clef_error_fail(err, CLEF_E_INTERNAL, "cannot rename '%s' to"
                             " '%s': %s", tmp, path, strerror(errno));
    }
    if (rc != 0) {
        unlink(tmp);
    }
    return rc;
}
