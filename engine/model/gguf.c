/*
 * The GGUF reader (gguf.h).  One pass over the header through a small
 * reader that knows how many bytes the file has left: every length and
 * count is compared with that before anything is allocated or read, so a
 * lie in the header costs an error message, never memory or a read past
 * the end.
 */
#include "model/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/arena.h"
#include "model/gguf_impl.h"

#define GGUF_MAGIC    "GGUF"
#define RD_BUF        (1u << 20)  /* the header is read in pieces this big */
#define MAX_DEPTH     8           /* arrays of arrays of ... */

/* Least bytes a key (u64 length, 1 byte, u32 type, 1-byte value) and a
 * tensor info (u64 length, 1 byte, u32 dims, one u64, u32 type, u64
 * offset) take: the counts in the header are checked against them. */
#define MIN_KV_BYTES      14
#define MIN_TENSOR_BYTES  33

typedef struct {
    int              fd;            /* -1: reading mem */
    const uint8_t   *mem;
    uint64_t         size;
    uint64_t         pos;
    uint8_t         *buf;
    uint64_t         buf_off;
    uint64_t         buf_len;
    const char      *path;
    clef_arena      *arena;
    clef_error      *err;
    char             where[160];    /* what is being read, for messages */
} rd;

static const int  scalar_size[CLEF_GGUF_TYPE_COUNT] = {
    1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8
};

static const char  *type_names[CLEF_GGUF_TYPE_COUNT] = {
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
    "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"
};

const char *
clef_gguf_type_name(clef_gguf_type t)
{
    return (unsigned) t < CLEF_GGUF_TYPE_COUNT ? type_names[t] : "?";
}

static int
fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
fail(rd *r, const char *fmt, ...)
{
    char     msg[400];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_fail(r->err, CLEF_E_MODEL, "%s: %s", r->path, msg);
}

static int
oom(rd *r)
{
    return clef_error_fail(r->err, CLEF_E_NO_MEMORY,
                           "%s: out of memory reading the GGUF header",
                           r->path);
}

static int
truncated(rd *r, uint64_t n)
{
    return fail(r, "truncated or corrupt GGUF: %s needs %llu bytes at offset"
                " %llu, the file has %llu", r->where, (unsigned long long) n,
                (unsigned long long) r->pos, (unsigned long long) r->size);
}

static int
read_full(int fd, void *buf, uint64_t n, uint64_t off)
{
    uint8_t  *p = buf;
    ssize_t   k;

    while (n > 0) {
        k = pread(fd, p, n, (off_t) off);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return -1;
        }
        p += k;
        n -= (uint64_t) k;
        off += (uint64_t) k;
    }
    return 0;
}

static int
rd_read(rd *r, void *dst, uint64_t n)
{
    uint8_t   *p = dst;
    uint64_t   k;

    if (n > r->size - r->pos) {
        return truncated(r, n);
    }
    if (r->fd < 0) {
        if (n > 0) {
            memcpy(p, r->mem + r->pos, n);
        }
        r->pos += n;
        return 0;
    }
    while (n > 0) {
        if (r->pos >= r->buf_off && r->pos < r->buf_off + r->buf_len) {
            k = r->buf_off + r->buf_len - r->pos;
            k = k < n ? k : n;
            memcpy(p, r->buf + (r->pos - r->buf_off), k);
        } else if (n >= RD_BUF) {
            k = n;
            if (read_full(r->fd, p, k, r->pos) != 0) {
                return fail(r, "cannot read %llu bytes at offset %llu: %s",
                            (unsigned long long) k,
                            (unsigned long long) r->pos, strerror(errno));
            }
        } else {
            r->buf_len = r->size - r->pos < RD_BUF ? r->size - r->pos : RD_BUF;
            r->buf_off = r->pos;
            if (read_full(r->fd, r->buf, r->buf_len, r->pos) != 0) {
                r->buf_len = 0;
                return fail(r, "cannot read the header at offset %llu: %s",
                            (unsigned long long) r->pos, strerror(errno));
            }
            continue;
        }
        p += k;
        n -= k;
        r->pos += k;
    }
    return 0;
}

static int
rd_u32(rd *r, uint32_t *v)
{
    return rd_read(r, v, 4);
}

static int
rd_u64(rd *r, uint64_t *v)
{
    return rd_read(r, v, 8);
}

/* A u64 length and that many bytes, copied with a NUL after them. */
static int
rd_str(rd *r, clef_gguf_str *s)
{
    uint64_t   len;
    char      *p;

    if (rd_u64(r, &len) != 0) {
        return -1;
    }
    if (len > r->size - r->pos) {
        return truncated(r, len);
    }
    p = clef_arena_alloc(r->arena, (size_t) len + 1);
    if (p == NULL) {
        return oom(r);
    }
    if (rd_read(r, p, len) != 0) {
        return -1;
    }
    p[len] = '\0';
    s->s = p;
    s->len = len;
    return 0;
}

/* A key or a tensor name: not empty, no NUL, shorter than max bytes. */
static int
rd_name(rd *r, const char *what, uint64_t max, const char **out)
{
    clef_gguf_str  s;

    if (rd_str(r, &s) != 0) {
        return -1;
    }
    if (s.len == 0 || memchr(s.s, '\0', s.len) != NULL || s.len >= max) {
        return fail(r, "%s at offset %llu is %s", what,
                    (unsigned long long) (r->pos - s.len),
                    s.len == 0 ? "empty" : s.len >= max ? "too long"
                                                        : "holding a NUL byte");
    }
    *out = s.s;
    return 0;
}

static void
decode_scalar(clef_gguf_type t, const uint8_t *b, clef_gguf_value *v)
{
    uint8_t   u8;
    uint16_t  u16;
    uint32_t  u32;
    uint64_t  u64;
    float     f32;

    switch (t) {
    case CLEF_GGUF_UINT8:
    case CLEF_GGUF_BOOL:
        v->v.u = b[0];
        break;
    case CLEF_GGUF_INT8:
        memcpy(&u8, b, 1);
        v->v.i = (int8_t) u8;
        break;
    case CLEF_GGUF_UINT16:
        memcpy(&u16, b, 2);
        v->v.u = u16;
        break;
    case CLEF_GGUF_INT16:
        memcpy(&u16, b, 2);
        v->v.i = (int16_t) u16;
        break;
    case CLEF_GGUF_UINT32:
        memcpy(&u32, b, 4);
        v->v.u = u32;
        break;
    case CLEF_GGUF_INT32:
        memcpy(&u32, b, 4);
        v->v.i = (int32_t) u32;
        break;
    case CLEF_GGUF_FLOAT32:
        memcpy(&f32, b, 4);
        v->v.f = f32;
        break;
    case CLEF_GGUF_UINT64:
        memcpy(&u64, b, 8);
        v->v.u = u64;
        break;
    case CLEF_GGUF_INT64:
        memcpy(&u64, b, 8);
        v->v.i = (int64_t) u64;
        break;
    case CLEF_GGUF_FLOAT64:
        memcpy(&v->v.f, b, 8);
        break;
    default:
        break;
    }
}

static int rd_value(rd *r, uint32_t type, clef_gguf_value *v, int depth);

static int
rd_array(rd *r, clef_gguf_value *v, int depth)
{
    uint32_t          elem;
    uint64_t          n, i, least;
    size_t            size;
    void             *data;
    clef_gguf_str    *strs;
    clef_gguf_value  *vals;

    if (rd_u32(r, &elem) != 0 || rd_u64(r, &n) != 0) {
        return -1;
    }
    if (elem >= CLEF_GGUF_TYPE_COUNT) {
        return fail(r, "%s: an array of unknown value type %u", r->where,
                    elem);
    }
    if (elem == CLEF_GGUF_ARRAY && depth >= MAX_DEPTH) {
        return fail(r, "%s: arrays nested deeper than %d", r->where,
                    MAX_DEPTH);
    }
    least = elem == CLEF_GGUF_STRING ? 8 : elem == CLEF_GGUF_ARRAY ? 12
            : (uint64_t) scalar_size[elem];
    if (n > (r->size - r->pos) / least) {
        return fail(r, "truncated or corrupt GGUF: %s is an array of %llu %s"
                    " at offset %llu, more than the file's %llu bytes hold",
                    r->where, (unsigned long long) n, type_names[elem],
                    (unsigned long long) r->pos,
                    (unsigned long long) r->size);
    }
    v->v.arr.elem = (clef_gguf_type) elem;
    v->v.arr.n = n;
    if (elem == CLEF_GGUF_STRING) {
        size = sizeof(clef_gguf_str);
    } else if (elem == CLEF_GGUF_ARRAY) {
        size = sizeof(clef_gguf_value);
    } else {
        size = (size_t) scalar_size[elem];
    }
    if (n > (SIZE_MAX - 1) / size) {
        return oom(r);
    }
    data = clef_arena_alloc(r->arena, (size_t) n * size + 1);
    if (data == NULL) {
        return oom(r);
    }
    v->v.arr.data = data;
    if (elem == CLEF_GGUF_STRING) {
        strs = data;
        for (i = 0; i < n; i++) {
            if (rd_str(r, &strs[i]) != 0) {
                return -1;
            }
        }
        return 0;
    }
    if (elem == CLEF_GGUF_ARRAY) {
        vals = data;
        for (i = 0; i < n; i++) {
            vals[i].key = NULL;
            if (rd_value(r, CLEF_GGUF_ARRAY, &vals[i], depth + 1) != 0) {
                return -1;
            }
        }
        return 0;
    }
    return rd_read(r, data, n * size);
}

static int
rd_value(rd *r, uint32_t type, clef_gguf_value *v, int depth)
{
    uint8_t  b[8];

    if (type >= CLEF_GGUF_TYPE_COUNT) {
        return fail(r, "%s has unknown value type %u", r->where, type);
    }
    v->type = (clef_gguf_type) type;
    if (type == CLEF_GGUF_STRING) {
        return rd_str(r, &v->v.str);
    }
    if (type == CLEF_GGUF_ARRAY) {
        return rd_array(r, v, depth);
    }
    if (rd_read(r, b, (uint64_t) scalar_size[type]) != 0) {
        return -1;
    }
    decode_scalar((clef_gguf_type) type, b, v);
    return 0;
}

/* ---- sorted look-up tables ------------------------------------------- */

static int
cmp_kv(const void *a, const void *b)
{
    return strcmp((*(const clef_gguf_value *const *) a)->key,
                  (*(const clef_gguf_value *const *) b)->key);
}

int
clef_gguf_cmp_tensor(const void *a, const void *b)
{
    return strcmp((*(const clef_gguf_tensor *const *) a)->name,
                  (*(const clef_gguf_tensor *const *) b)->name);
}

/* Sorts the look-up tables and refuses a key or a name given twice. */
static int
index_names(rd *r, clef_gguf *g)
{
    size_t  i;

    g->kv_sorted = malloc((g->n_kv + 1) * sizeof(*g->kv_sorted));
    g->t_sorted = malloc((g->n_t + 1) * sizeof(*g->t_sorted));
    if (g->kv_sorted == NULL || g->t_sorted == NULL) {
        return oom(r);
    }
    for (i = 0; i < g->n_kv; i++) {
        g->kv_sorted[i] = &g->kv[i];
    }
    for (i = 0; i < g->n_t; i++) {
        g->t_sorted[i] = &g->t[i];
    }
    qsort(g->kv_sorted, g->n_kv, sizeof(*g->kv_sorted), cmp_kv);
    qsort(g->t_sorted, g->n_t, sizeof(*g->t_sorted), clef_gguf_cmp_tensor);
    for (i = 1; i < g->n_kv; i++) {
        if (strcmp(g->kv_sorted[i - 1]->key, g->kv_sorted[i]->key) == 0) {
            return fail(r, "the key '%s' is given twice", g->kv_sorted[i]->key);
        }
    }
    for (i = 1; i < g->n_t; i++) {
        if (strcmp(g->t_sorted[i - 1]->name, g->t_sorted[i]->name) == 0) {
            return fail(r, "the tensor '%s' is given twice",
                        g->t_sorted[i]->name);
        }
    }
    return 0;
}

/* ---- the header ------------------------------------------------------ */

static int
read_preamble(rd *r, clef_gguf *g, uint64_t *n_t, uint64_t *n_kv)
{
    char      magic[4];
    uint32_t  version;

    snprintf(r->where, sizeof(r->where), "the GGUF header");
    if (rd_read(r, magic, 4) != 0) {
        return -1;
    }
    if (memcmp(magic, GGUF_MAGIC, 4) != 0) {
        return fail(r, "not a GGUF file (it starts with %02x %02x %02x %02x,"
                    " not \"GGUF\")", (uint8_t) magic[0], (uint8_t) magic[1],
                    (uint8_t) magic[2], (uint8_t) magic[3]);
    }
    if (rd_u32(r, &version) != 0) {
        return -1;
    }
    if (version == 0x03000000 || version == 0x02000000) {
        return fail(r, "a big-endian GGUF file: ngx_clef reads little-endian"
                    " ones (convert again without --bigendian)");
    }
    if (version != 2 && version != 3) {
        return fail(r, "GGUF version %u: ngx_clef reads versions 2 and 3"
                    " (convert again with a current llama.cpp)", version);
    }
    g->version = version;
    if (rd_u64(r, n_t) != 0 || rd_u64(r, n_kv) != 0) {
        return -1;
    }
    if (*n_kv > (r->size - r->pos) / MIN_KV_BYTES
        || *n_t > (r->size - r->pos) / MIN_TENSOR_BYTES
        || *n_kv > SIZE_MAX / sizeof(clef_gguf_value)
        || *n_t > SIZE_MAX / sizeof(clef_gguf_tensor))
    {
        return fail(r, "truncated or corrupt GGUF: the header announces %llu"
                    " tensors and %llu keys, more than the file's %llu bytes"
                    " hold", (unsigned long long) *n_t,
                    (unsigned long long) *n_kv, (unsigned long long) r->size);
    }
    return 0;
}

static int
read_kvs(rd *r, clef_gguf *g)
{
    uint32_t  type;
    size_t    i;

    for (i = 0; i < g->n_kv; i++) {
        snprintf(r->where, sizeof(r->where), "key %zu", i);
        if (rd_name(r, "a key", UINT64_MAX, &g->kv[i].key) != 0
            || rd_u32(r, &type) != 0)
        {
            return -1;
        }
        snprintf(r->where, sizeof(r->where), "key %zu ('%.100s')", i,
                 g->kv[i].key);
        if (rd_value(r, type, &g->kv[i], 0) != 0) {
            return -1;
        }
    }
    return 0;
}

/* The dims, type and data size of one tensor info. */
/* The types a tensor may have, the most bits per value first (GGML's id
 * order among equals): what a refusal names, into list. */
static const char *
types_read(char *list, size_t size)
{
    const clef_dtype_traits  *q[CLEF_DTYPE_COUNT], *t;
    clef_dtype                dt;
    size_t                    len = 0;
    int                       n = 0, id, i, j;

    for (id = 0; id < 64 && n < CLEF_DTYPE_COUNT; id++) {
        if (clef_dtype_from_ggml(id, &dt) == 0 && clef_dtype_is_float(dt)) {
            q[n++] = clef_dtype_traits_of(dt);
        }
    }
    /* insertion sort by bits per value, descending, stable */
    for (i = 1; i < n; i++) {
        t = q[i];
        for (j = i; j > 0 && q[j - 1]->block_bytes * (size_t) t->block
                             < t->block_bytes * (size_t) q[j - 1]->block; j--)
        {
            q[j] = q[j - 1];
        }
        q[j] = t;
    }
    list[0] = '\0';
    for (i = 0; i < n && len + strlen(q[i]->name) + 3 < size; i++) {
        len += (size_t) snprintf(list + len, size - len, "%s%s",
                                 len ? ", " : "", q[i]->name);
    }
    return list;
}

static int
tensor_layout(rd *r, clef_gguf_tensor *t)
{
    char         list[300];
    uint32_t     ndim;
    uint64_t     ne;
    int64_t      row, rows;
    const char  *tname;
    int          j, block, bytes;

    if (rd_u32(r, &ndim) != 0) {
        return -1;
    }
    if (ndim < 1 || ndim > CLEF_GGUF_MAX_DIMS) {
        return fail(r, "tensor '%s' has %u dimensions (GGUF allows 1 to %d)",
                    t->name, ndim, CLEF_GGUF_MAX_DIMS);
    }
    t->ndim = (int) ndim;
    t->numel = 1;
    for (j = 0; j < CLEF_GGUF_MAX_DIMS; j++) {
        ne = 1;
        if (j < t->ndim && rd_u64(r, &ne) != 0) {
            return -1;
        }
        if (ne > INT64_MAX || (ne != 0 && (uint64_t) t->numel > INT64_MAX / ne)) {
            return fail(r, "tensor '%s' has a dimension of %llu: too many"
                        " elements", t->name, (unsigned long long) ne);
        }
        t->ne[j] = (int64_t) ne;
        t->numel *= (int64_t) ne;
    }
    if (rd_u32(r, &t->type) != 0) {
        return -1;
    }
    if (clef_ggml_type_layout(t->type, &tname, &block, &bytes) != 0) {
        return fail(r, "tensor '%s' has type %u, which GGML does not define",
                    t->name, t->type);
    }
    if (clef_dtype_from_ggml((int) t->type, &t->dtype) != 0
        || !clef_dtype_is_float(t->dtype))
    {
        return fail(r, "tensor '%s' is of type %s, which ngx_clef does not"
                    " read (it reads %s)", t->name, tname,
                    types_read(list, sizeof(list)));
    }
    if (t->ne[0] % block != 0) {
        return fail(r, "tensor '%s': a row of %lld values is not a whole"
                    " number of %s blocks of %d", t->name,
                    (long long) t->ne[0], tname, block);
    }
    row = clef_ggml_row_bytes(t->type, t->ne[0]);
    if (row < 0) {
        return fail(r, "tensor '%s' is too large", t->name);
    }
    rows = t->ne[0] == 0 ? 0 : t->numel / t->ne[0];
    if (rows != 0 && row > INT64_MAX / rows) {
        return fail(r, "tensor '%s' is too large", t->name);
    }
    t->nbytes = (uint64_t) (row * rows);
    return 0;
}

static int
read_tensors(rd *r, clef_gguf *g)
{
    clef_gguf_tensor  *t;
    size_t             i;

    for (i = 0; i < g->n_t; i++) {
        t = &g->t[i];
        snprintf(r->where, sizeof(r->where), "tensor info %zu", i);
        if (rd_name(r, "a tensor name", CLEF_GGUF_MAX_NAME, &t->name) != 0) {
            return -1;
        }
        snprintf(r->where, sizeof(r->where), "tensor info %zu ('%s')", i,
                 t->name);
        if (tensor_layout(r, t) != 0 || rd_u64(r, &t->offset) != 0) {
            return -1;
        }
    }
    return 0;
}

/* general.alignment, the data section's start, and every tensor's bytes
 * inside the file. */
static int
place_tensors(rd *r, clef_gguf *g)
{
    const clef_gguf_value  *a;
    clef_gguf_tensor       *t;
    uint64_t                room;
    size_t                  i;

    g->alignment = CLEF_GGUF_ALIGNMENT;
    a = clef_gguf_get(g, "general.alignment");
    if (a != NULL) {
        if (a->type != CLEF_GGUF_UINT32 || a->v.u == 0
            || (a->v.u & (a->v.u - 1)) != 0)
        {
            return fail(r, "general.alignment must be a UINT32 power of two"
                        " (it is %s %llu)", type_names[a->type],
                        (unsigned long long) a->v.u);
        }
        g->alignment = (uint32_t) a->v.u;
    }
    if (r->pos > UINT64_MAX - g->alignment) {
        return fail(r, "the header is too large");
    }
    g->data_off = (r->pos + g->alignment - 1) / g->alignment * g->alignment;
    if (g->n_t > 0 && g->data_off > g->size) {
        return fail(r, "truncated GGUF: the data section would start at"
                    " offset %llu, past the end of the file (%llu bytes)",
                    (unsigned long long) g->data_off,
                    (unsigned long long) g->size);
    }
    for (i = 0; i < g->n_t; i++) {
        t = &g->t[i];
        if (t->offset % g->alignment != 0) {
            return fail(r, "tensor '%s': its offset %llu is not a multiple of"
                        " the alignment %u", t->name,
                        (unsigned long long) t->offset, g->alignment);
        }
        room = g->size - g->data_off;
        if (t->offset > room || t->nbytes > room - t->offset) {
            return fail(r, "truncated or corrupt GGUF: tensor '%s' (%llu"
                        " bytes at offset %llu of the data section) ends"
                        " past the end of the file (%llu bytes)", t->name,
                        (unsigned long long) t->nbytes,
                        (unsigned long long) t->offset,
                        (unsigned long long) g->size);
        }
        t->offset += g->data_off;
    }
    return 0;
}

static int
parse(rd *r, clef_gguf *g)
{
    uint64_t  n_t, n_kv;

    if (read_preamble(r, g, &n_t, &n_kv) != 0) {
        return -1;
    }
    g->n_kv = (size_t) n_kv;
    g->n_t = (size_t) n_t;
    g->kv = calloc(g->n_kv + 1, sizeof(*g->kv));
    g->t = calloc(g->n_t + 1, sizeof(*g->t));
    if (g->kv == NULL || g->t == NULL) {
        return oom(r);
    }
    if (read_kvs(r, g) != 0 || read_tensors(r, g) != 0
        || index_names(r, g) != 0)
    {
        return -1;
    }
    return place_tensors(r, g);
}

static clef_gguf *
gguf_new(const char *path, clef_error *err)
{
    clef_gguf  *g = calloc(1, sizeof(*g));

    if (g == NULL || (g->path = strdup(path)) == NULL) {
        free(g);
        clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory", path);
        return NULL;
    }
    clef_arena_init(&g->arena, 1 << 16);
    return g;
}

clef_gguf *
clef_gguf_open(const char *path, int flags, clef_error *err)
{
    clef_gguf    *g;
    struct stat   st;
    rd            r;
    size_t        i;
    int           fd;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        clef_error_fail(err, CLEF_E_MODEL, "cannot open '%s': %s", path,
                        strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        clef_error_fail(err, CLEF_E_MODEL, "'%s' is not a regular file", path);
        close(fd);
        return NULL;
    }
    g = gguf_new(path, err);
    if (g == NULL) {
        close(fd);
        return NULL;
    }
    memset(&r, 0, sizeof(r));
    r.fd = fd;
    r.size = g->size = (uint64_t) st.st_size;
    r.path = g->path;
    r.arena = &g->arena;
    r.err = err;
    r.buf = malloc(RD_BUF);
    if (r.buf == NULL) {
        oom(&r);
        goto fail;
    }
    if (parse(&r, g) != 0) {
        goto fail;
    }
    if (!(flags & CLEF_GGUF_HEADERS_ONLY) && g->n_t > 0 && g->size > 0) {
        g->map = mmap(NULL, (size_t) g->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (g->map == MAP_FAILED) {
            g->map = NULL;
            fail(&r, "cannot map the file: %s", strerror(errno));
            goto fail;
        }
        g->map_len = (size_t) g->size;
        for (i = 0; i < g->n_t; i++) {
            g->t[i].data = (const uint8_t *) g->map + g->t[i].offset;
        }
    }
    free(r.buf);
    close(fd);
    if (!(flags & CLEF_GGUF_ONE_PART)
        && clef_gguf_split_join(g, flags, err) != 0)
    {
        clef_gguf_close(g);
        return NULL;
    }
    return g;

fail:
    free(r.buf);
    close(fd);
    clef_gguf_close(g);
    return NULL;
}

clef_gguf *
clef_gguf_open_mem(const void *data, size_t size, const char *what,
    clef_error *err)
{
    clef_gguf  *g;
    rd          r;
    size_t      i;

    g = gguf_new(what, err);
    if (g == NULL) {
        return NULL;
    }
    memset(&r, 0, sizeof(r));
    r.fd = -1;
    r.mem = data;
    r.size = g->size = size;
    r.path = g->path;
    r.arena = &g->arena;
    r.err = err;
    if (parse(&r, g) != 0) {
        clef_gguf_close(g);
        return NULL;
    }
    for (i = 0; i < g->n_t; i++) {
        g->t[i].data = (const uint8_t *) data + g->t[i].offset;
    }
    return g;
}

void
clef_gguf_close(clef_gguf *g)
{
    if (g == NULL) {
        return;
    }
    while (g->n_parts > 0) {
        clef_gguf_close(g->parts[--g->n_parts]);
    }
    free(g->parts);
    if (g->map != NULL) {
        munmap(g->map, g->map_len);
    }
    clef_arena_free(&g->arena);
    free(g->kv);
    free(g->kv_sorted);
    free(g->t);
    free(g->t_sorted);
    free(g->path);
    free(g);
}

const char *
clef_gguf_path(const clef_gguf *g)
{
    return g->path;
}

uint32_t
clef_gguf_version(const clef_gguf *g)
{
    return g->version;
}

uint32_t
clef_gguf_alignment(const clef_gguf *g)
{
    return g->alignment;
}

uint64_t
clef_gguf_data_offset(const clef_gguf *g)
{
    return g->data_off;
}

uint64_t
clef_gguf_file_size(const clef_gguf *g)
{
    return g->size;
}

/* ---- metadata -------------------------------------------------------- */

size_t
clef_gguf_kv_count(const clef_gguf *g)
{
    return g->n_kv;
}

const clef_gguf_value *
clef_gguf_kv_at(const clef_gguf *g, size_t i)
{
    return i < g->n_kv ? &g->kv[i] : NULL;
}

const clef_gguf_value *
clef_gguf_get(const clef_gguf *g, const char *key)
{
    clef_gguf_value          k;
    const clef_gguf_value   *kp = &k, *const *hit;

    if (g->kv_sorted == NULL) {
        return NULL;        /* still being parsed */
    }
    k.key = key;
    hit = bsearch(&kp, g->kv_sorted, g->n_kv, sizeof(*g->kv_sorted), cmp_kv);
    return hit != NULL ? *hit : NULL;
}

static int
is_int_type(clef_gguf_type t)
{
    return t <= CLEF_GGUF_INT32 || t == CLEF_GGUF_UINT64
           || t == CLEF_GGUF_INT64 || t == CLEF_GGUF_BOOL;
}

static int
is_signed(clef_gguf_type t)
{
    return t == CLEF_GGUF_INT8 || t == CLEF_GGUF_INT16
           || t == CLEF_GGUF_INT32 || t == CLEF_GGUF_INT64;
}

int
clef_gguf_value_int(const clef_gguf_value *v, int64_t *out)
{
    if (!is_int_type(v->type)) {
        return -1;
    }
    if (is_signed(v->type)) {
        *out = v->v.i;
        return 0;
    }
    if (v->v.u > INT64_MAX) {
        return -1;
    }
    *out = (int64_t) v->v.u;
    return 0;
}

int
clef_gguf_value_float(const clef_gguf_value *v, double *out)
{
    if (v->type != CLEF_GGUF_FLOAT32 && v->type != CLEF_GGUF_FLOAT64) {
        return -1;
    }
    *out = v->v.f;
    return 0;
}

/* Element i of an array of scalars, as a value of its own. */
static void
arr_elem(const clef_gguf_value *a, uint64_t i, clef_gguf_value *e)
{
    int  size = scalar_size[a->v.arr.elem];

    e->key = NULL;
    e->type = a->v.arr.elem;
    decode_scalar(a->v.arr.elem, (const uint8_t *) a->v.arr.data + i * size,
                  e);
}

int
clef_gguf_arr_int(const clef_gguf_value *a, uint64_t i, int64_t *out)
{
    clef_gguf_value  e;

    if (a->type != CLEF_GGUF_ARRAY || !is_int_type(a->v.arr.elem)) {
        return -1;
    }
    arr_elem(a, i, &e);
    return clef_gguf_value_int(&e, out);
}

int
clef_gguf_arr_float(const clef_gguf_value *a, uint64_t i, double *out)
{
    clef_gguf_value  e;

    if (a->type != CLEF_GGUF_ARRAY
        || (a->v.arr.elem != CLEF_GGUF_FLOAT32
            && a->v.arr.elem != CLEF_GGUF_FLOAT64))
    {
        return -1;
    }
    arr_elem(a, i, &e);
    return clef_gguf_value_float(&e, out);
}

const clef_gguf_str *
clef_gguf_arr_str(const clef_gguf_value *a, uint64_t i)
{
    if (a->type != CLEF_GGUF_ARRAY || a->v.arr.elem != CLEF_GGUF_STRING) {
        return NULL;
    }
    return (const clef_gguf_str *) a->v.arr.data + i;
}

const clef_gguf_value *
clef_gguf_arr_arr(const clef_gguf_value *a, uint64_t i)
{
    if (a->type != CLEF_GGUF_ARRAY || a->v.arr.elem != CLEF_GGUF_ARRAY) {
        return NULL;
    }
    return (const clef_gguf_value *) a->v.arr.data + i;
}

static int
wrong_type(const clef_gguf *g, const clef_gguf_value *v, const char *want,
    clef_error *err)
{
    if (v->type == CLEF_GGUF_ARRAY) {
        return clef_error_fail(err, CLEF_E_MODEL, "%s: %s is an ARRAY of %s,"
                               " not %s", g->path, v->key,
                               type_names[v->v.arr.elem], want);
    }
    return clef_error_fail(err, CLEF_E_MODEL, "%s: %s is %s, not %s", g->path,
                           v->key, type_names[v->type], want);
}

int
clef_gguf_get_int(const clef_gguf *g, const char *key, int64_t lo,
    int64_t hi, int64_t *out, clef_error *err)
{
    const clef_gguf_value  *v = clef_gguf_get(g, key);
    int64_t                 i;

    if (v == NULL) {
        return 1;
    }
    if (v->type == CLEF_GGUF_BOOL || clef_gguf_value_int(v, &i) != 0) {
        if (v->type == CLEF_GGUF_UINT64 && v->v.u > INT64_MAX) {
            return clef_error_fail(err, CLEF_E_MODEL, "%s: %s is %llu, outside"
                                   " [%lld, %lld]", g->path, key,
                                   (unsigned long long) v->v.u, (long long) lo,
                                   (long long) hi);
        }
        return wrong_type(g, v, "an integer", err);
    }
    if (i < lo || i > hi) {
        return clef_error_fail(err, CLEF_E_MODEL, "%s: %s is %lld, outside"
                               " [%lld, %lld]", g->path, key, (long long) i,
                               (long long) lo, (long long) hi);
    }
    *out = i;
    return 0;
}

int
clef_gguf_get_float(const clef_gguf *g, const char *key, double *out,
    clef_error *err)
{
    const clef_gguf_value  *v = clef_gguf_get(g, key);
    int64_t                 i;

    if (v == NULL) {
        return 1;
    }
    if (clef_gguf_value_float(v, out) == 0) {
        return 0;
    }
    if (v->type != CLEF_GGUF_BOOL && clef_gguf_value_int(v, &i) == 0) {
        *out = (double) i;
        return 0;
    }
    return wrong_type(g, v, "a number", err);
}

int
clef_gguf_get_bool(const clef_gguf *g, const char *key, int *out,
    clef_error *err)
{
    const clef_gguf_value  *v = clef_gguf_get(g, key);

    if (v == NULL) {
        return 1;
    }
    if (v->type != CLEF_GGUF_BOOL) {
        return wrong_type(g, v, "BOOL", err);
    }
    *out = v->v.u != 0;
    return 0;
}

int
clef_gguf_get_str(const clef_gguf *g, const char *key,
    const clef_gguf_str **out, clef_error *err)
{
    const clef_gguf_value  *v = clef_gguf_get(g, key);

    if (v == NULL) {
        return 1;
    }
    if (v->type != CLEF_GGUF_STRING) {
        return wrong_type(g, v, "STRING", err);
    }
    *out = &v->v.str;
    return 0;
}

int
clef_gguf_get_arr(const clef_gguf *g, const char *key, clef_gguf_type elem,
    const clef_gguf_value **out, clef_error *err)
{
    const clef_gguf_value  *v = clef_gguf_get(g, key);
    char                    want[40];
    int                     ok;

    if (v == NULL) {
        return 1;
    }
    ok = v->type == CLEF_GGUF_ARRAY
         && (v->v.arr.elem == elem
             || (is_int_type(elem) && elem != CLEF_GGUF_BOOL
                 && is_int_type(v->v.arr.elem)
                 && v->v.arr.elem != CLEF_GGUF_BOOL));
    if (!ok) {
        snprintf(want, sizeof(want), "an ARRAY of %s", clef_gguf_type_name(elem));
        return wrong_type(g, v, want, err);
    }
    *out = v;
    return 0;
}

/* ---- tensors --------------------------------------------------------- */

size_t
clef_gguf_tensor_count(const clef_gguf *g)
{
    return g->n_t;
}

const clef_gguf_tensor *
clef_gguf_tensor_at(const clef_gguf *g, size_t i)
{
    return i < g->n_t ? &g->t[i] : NULL;
}

const clef_gguf_tensor *
clef_gguf_tensor_find(const clef_gguf *g, const char *name)
{
    clef_gguf_tensor          k;
    const clef_gguf_tensor   *kp = &k, *const *hit;

    if (g->t_sorted == NULL) {
        return NULL;
    }
    k.name = name;
    hit = bsearch(&kp, g->t_sorted, g->n_t, sizeof(*g->t_sorted),
                  clef_gguf_cmp_tensor);
    return hit != NULL ? *hit : NULL;
}
