/*
 * The GGUF reader and writer (engine/model/gguf.c, gguf_write.c):
 *   - a file with every value type, arrays of each, nested arrays and
 *     tensors of every type, written and read back identically (from
 *     memory, from the file, headers only);
 *   - every truncation of it refused, except inside the trailing padding;
 *   - one hand-made corruption per check of the reader, each refused with
 *     a message that names the problem;
 *   - the typed look-ups and the writer's refusals.
 *
 *   test_gguf --write FILE   writes the round-trip file and FILE.json, what
 *                            it holds (t/reference/check_gguf_write.py reads
 *                            both with gguf-py)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "gguf_manifest.h"
#include "slurp.h"
#include "base/buf.h"
#include "model/gguf.h"
#include "model/gguf_write.h"
#include "model/quant.h"

#define CHECK_ERR(g, err, what, ...)                                         \
    do {                                                                     \
        int ok_ = (g) == NULL && (err).code == CLEF_E_MODEL                  \
                  && strstr((err).message, (what)) != NULL;                  \
        CHECK(ok_, __VA_ARGS__);                                             \
        if (!ok_) printf("#   got '%s', want '%s'\n",                        \
                         (g) ? "(opened)" : (err).message, (what));          \
        clef_gguf_close(g);                                                  \
    } while (0)

static uint64_t
next_u64(uint64_t *s)
{
    uint64_t  z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- the round-trip file --------------------------------------------- */

typedef struct {
    float     *src[16];
    uint8_t   *raw;
    int        n_src;
    json_t    *man;             /* what the file holds */
} content;

static void
man_kv(content *c, const char *key, const char *type, json_t *value)
{
    json_array_append_new(json_object_get(c->man, "kv"),
                          json_pack("{s:s, s:s, s:o}", "key", key, "type", type,
                                    "value", value));
}

static json_t *
jint(long long v)
{
    char  s[32];

    snprintf(s, sizeof(s), "%lld", v);
    return json_string(s);
}

static json_t *
juint(unsigned long long v)
{
    char  s[32];

    snprintf(s, sizeof(s), "%llu", v);
    return json_string(s);
}

static json_t *
jfloat(double v)
{
    char  s[40];

    snprintf(s, sizeof(s), "%.17g", v);
    return json_string(s);
}

/* f32 rows for a rows-on-demand tensor: row r, column j -> a pattern */
static int
gen_rows(void *ctx, int64_t row, int64_t n, void *dst, clef_error *err)
{
    const int64_t  *cols = ctx;
    float          *f = dst;
    int64_t         i, j;

    for (i = 0; i < n; i++) {
        for (j = 0; j < *cols; j++) {
            f[i * *cols + j] = (float) ((row + i) * 7 - j) / 64.0f;
        }
    }
    return 0;
}

/* raw Q8_0 rows: scale 1/16, values from the row number */
static int
raw_rows(void *ctx, int64_t row, int64_t n, void *dst, clef_error *err)
{
    uint8_t   *b = dst;
    uint16_t   d = 0x2c00;      /* 1/16 in f16 */
    int64_t    i, k;

    for (i = 0; i < n * 2; i++, b += 34) {
        memcpy(b, &d, 2);
        for (k = 0; k < 32; k++) {
            b[2 + k] = (uint8_t) (int8_t) ((row * 2 + i + k) % 200 - 100);
        }
    }
    return 0;
}

static int64_t  gen_cols = 256;

static clef_gguf_writer *
build(content *c, clef_error *err)
{
    static const uint8_t   u8[] = { 0, 7, 255 };
    static const int8_t    i8[] = { -128, 0, 127 };
    static const uint16_t  u16[] = { 0, 1, 65535 };
    static const int16_t   i16[] = { -32768, 5, 32767 };
    static const uint32_t  u32[] = { 0, 4294967295u, 42 };
    static const int32_t   i32[] = { INT32_MIN, -1, INT32_MAX };
    static const float     f32[] = { 0.1f, -0.0f, 3.4028235e38f };
    static const uint8_t   bools[] = { 1, 0, 1 };
    static const uint64_t  u64[] = { 0, UINT64_MAX, 1ull << 40 };
    static const int64_t   i64[] = { INT64_MIN, -2, INT64_MAX };
    static const double    f64[] = { -1e300, 0.5, 5e-324 };
    static const clef_gguf_str strs[] = {
        { "a", 1 }, { "", 0 }, { "\xc3\xa9", 2 }, { "<|im_end|>", 10 }
    };
    static const uint32_t  inner0[] = { 1, 2 }, inner1[] = { 3 };
    static const clef_gguf_str inner2[] = { { "x", 1 } };
    clef_gguf_value        nested, rows[3];
    clef_gguf_writer      *w = clef_gguf_writer_new();
    const clef_dtype_traits  *qt;
    clef_dtype             dt;
    size_t                 i;
    int64_t                ne[4], j, n;
    json_t                *arr;
    uint64_t               seed = 7;
    char                   name[64];
    int                    rc = 0, k;

    c->man = json_pack("{s:[], s:[]}", "kv", "tensors");
    rc |= clef_gguf_put_str(w, "general.architecture", "clef", 4, err);
    man_kv(c, "general.architecture", "STRING", json_string("clef"));
    rc |= clef_gguf_put_uint(w, "general.alignment", CLEF_GGUF_UINT32, 64, err);
    man_kv(c, "general.alignment", "UINT32", juint(64));
    rc |= clef_gguf_put_uint(w, "v.u8", CLEF_GGUF_UINT8, 255, err);
    man_kv(c, "v.u8", "UINT8", juint(255));
    rc |= clef_gguf_put_int(w, "v.i8", CLEF_GGUF_INT8, -128, err);
    man_kv(c, "v.i8", "INT8", jint(-128));
    rc |= clef_gguf_put_uint(w, "v.u16", CLEF_GGUF_UINT16, 65535, err);
    man_kv(c, "v.u16", "UINT16", juint(65535));
    rc |= clef_gguf_put_int(w, "v.i16", CLEF_GGUF_INT16, -32768, err);
    man_kv(c, "v.i16", "INT16", jint(-32768));
    rc |= clef_gguf_put_uint(w, "v.u32", CLEF_GGUF_UINT32, 4294967295u, err);
    man_kv(c, "v.u32", "UINT32", juint(4294967295u));
    rc |= clef_gguf_put_int(w, "v.i32", CLEF_GGUF_INT32, INT32_MIN, err);
    man_kv(c, "v.i32", "INT32", jint(INT32_MIN));
    rc |= clef_gguf_put_float(w, "v.f32", CLEF_GGUF_FLOAT32, 0.1f, err);
    man_kv(c, "v.f32", "FLOAT32", jfloat(0.1f));
    rc |= clef_gguf_put_uint(w, "v.bool", CLEF_GGUF_BOOL, 1, err);
    man_kv(c, "v.bool", "BOOL", juint(1));
    rc |= clef_gguf_put_uint(w, "v.u64", CLEF_GGUF_UINT64, UINT64_MAX, err);
    man_kv(c, "v.u64", "UINT64", juint(UINT64_MAX));
    rc |= clef_gguf_put_int(w, "v.i64", CLEF_GGUF_INT64, INT64_MIN, err);
    man_kv(c, "v.i64", "INT64", jint(INT64_MIN));
    rc |= clef_gguf_put_float(w, "v.f64", CLEF_GGUF_FLOAT64, -1e300, err);
    man_kv(c, "v.f64", "FLOAT64", jfloat(-1e300));
    rc |= clef_gguf_put_str(w, "v.str", "h\xc3\xa9llo\nw\xc3\xb6rld", 13, err);
    man_kv(c, "v.str", "STRING", json_string("h\xc3\xa9llo\nw\xc3\xb6rld"));
    rc |= clef_gguf_put_str(w, "v.empty", "", 0, err);
    man_kv(c, "v.empty", "STRING", json_string(""));

#define ARR(key, T, a, conv)                                                 \
    rc |= clef_gguf_put_arr(w, key, CLEF_GGUF_##T, a, 3, err);               \
    arr = json_array();                                                      \
    for (k = 0; k < 3; k++) json_array_append_new(arr, conv(a[k]));          \
    man_kv(c, key, "ARRAY:" #T, arr)

    ARR("a.u8", UINT8, u8, juint);
    ARR("a.i8", INT8, i8, jint);
    ARR("a.u16", UINT16, u16, juint);
    ARR("a.i16", INT16, i16, jint);
    ARR("a.u32", UINT32, u32, juint);
    ARR("a.i32", INT32, i32, jint);
    ARR("a.f32", FLOAT32, f32, jfloat);
    ARR("a.bool", BOOL, bools, juint);
    ARR("a.u64", UINT64, u64, juint);
    ARR("a.i64", INT64, i64, jint);
    ARR("a.f64", FLOAT64, f64, jfloat);
#undef ARR
    rc |= clef_gguf_put_arr_str(w, "a.str", strs, 4, err);
    arr = json_array();
    for (k = 0; k < 4; k++) {
        json_array_append_new(arr, json_stringn(strs[k].s, strs[k].len));
    }
    man_kv(c, "a.str", "ARRAY:STRING", arr);
    rc |= clef_gguf_put_arr(w, "a.empty", CLEF_GGUF_INT32, NULL, 0, err);
    man_kv(c, "a.empty", "ARRAY:INT32", json_array());

    memset(rows, 0, sizeof(rows));
    rows[0].type = rows[1].type = rows[2].type = CLEF_GGUF_ARRAY;
    rows[0].v.arr.elem = CLEF_GGUF_UINT32;
    rows[0].v.arr.n = 2;
    rows[0].v.arr.data = inner0;
    rows[1].v.arr.elem = CLEF_GGUF_UINT32;
    rows[1].v.arr.n = 1;
    rows[1].v.arr.data = inner1;
    rows[2].v.arr.elem = CLEF_GGUF_STRING;
    rows[2].v.arr.n = 1;
    rows[2].v.arr.data = inner2;
    memset(&nested, 0, sizeof(nested));
    nested.type = CLEF_GGUF_ARRAY;
    nested.v.arr.elem = CLEF_GGUF_ARRAY;
    nested.v.arr.n = 3;
    nested.v.arr.data = rows;
    rc |= clef_gguf_put_value(w, "a.nested", &nested, err);
    man_kv(c, "a.nested", "ARRAY:ARRAY",
           json_pack("[[o,o],[o],[s]]", juint(1), juint(2), juint(3), "x"));

    /* every type written, from f32 values: 2-D, rows of two blocks (or 3
     * values for the float types) */
    for (i = 0; i < 64; i++) {
        /* every type of the table GGUF has, in GGML's id order, but those
         * read only (no quantizer) */
        if (clef_dtype_from_ggml((int) i, &dt) != 0
            || !clef_dtype_is_float(dt)
            || clef_dtype_traits_of(dt)->from_f32 == NULL)
        {
            continue;
        }
        qt = clef_dtype_traits_of(dt);
        ne[0] = qt->block > 1 ? 2 * qt->block : 3;
        ne[1] = 3;
        n = ne[0] * ne[1];
        c->src[c->n_src] = malloc(n * sizeof(float));
        for (j = 0; j < n; j++) {
            c->src[c->n_src][j] = (float) ((int64_t) (next_u64(&seed) >> 40)
                                           - (1 << 23)) / (float) (1 << 24);
        }
        snprintf(name, sizeof(name), "t.%s", qt->name);
        rc |= clef_gguf_add_tensor_f32(w, name, (uint32_t) qt->ggml, 2, ne,
                                       c->src[c->n_src++], err);
    }
    /* other ranks, raw bytes, rows on demand */
    ne[0] = 5;
    c->src[c->n_src] = malloc(5 * sizeof(float));
    for (j = 0; j < 5; j++) {
        c->src[c->n_src][j] = (float) j - 2.5f;
    }
    rc |= clef_gguf_add_tensor_f32(w, "rank1.f32", CLEF_GGML_F32, 1, ne,
                                   c->src[c->n_src++], err);
    ne[0] = 4, ne[1] = 3, ne[2] = 2;
    c->src[c->n_src] = calloc(24, sizeof(float));
    rc |= clef_gguf_add_tensor_f32(w, "rank3.f16", CLEF_GGML_F16, 3, ne,
                                   c->src[c->n_src++], err);
    ne[0] = ne[1] = ne[2] = ne[3] = 2;
    c->raw = malloc(64);
    for (j = 0; j < 64; j++) {
        c->raw[j] = (uint8_t) (j * 37);
    }
    rc |= clef_gguf_add_tensor(w, "rank4.bf16", CLEF_GGML_BF16, 4, ne, c->raw,
                               err);
    ne[0] = gen_cols, ne[1] = 5;
    rc |= clef_gguf_add_tensor_rows(w, "rows.q6_k", CLEF_GGML_Q6_K, 2, ne, 1,
                                    gen_rows, &gen_cols, err);
    ne[0] = 64, ne[1] = 3;
    rc |= clef_gguf_add_tensor_rows(w, "rows.q8_0", CLEF_GGML_Q8_0, 2, ne, 0,
                                    raw_rows, NULL, err);
    if (rc != 0) {
        clef_gguf_writer_free(w);
        return NULL;
    }
    return w;
}

static void
content_free(content *c)
{
    int  i;

    for (i = 0; i < c->n_src; i++) {
        free(c->src[i]);
    }
    free(c->raw);
    json_decref(c->man);
}

/* The tensors of the manifest: type, ne, and the hashes of their bytes and
 * of our dequantization. */
static void
man_tensors(content *c, const clef_gguf *g)
{
    const clef_gguf_tensor  *t;
    json_t                  *ne;
    float                   *f;
    char                     h1[20], h2[20];
    size_t                   i;
    int                      j;

    for (i = 0; i < clef_gguf_tensor_count(g); i++) {
        t = clef_gguf_tensor_at(g, i);
        f = malloc((size_t) t->numel * sizeof(float) + 1);
        clef_dtype_traits_of(t->dtype)->to_f32(t->data, f, t->numel);
        snprintf(h1, sizeof(h1), "%016llx",
                 (unsigned long long) fnv(t->data, t->nbytes));
        snprintf(h2, sizeof(h2), "%016llx",
                 (unsigned long long) fnv(f, (size_t) t->numel * 4));
        ne = json_array();
        for (j = 0; j < t->ndim; j++) {
            json_array_append_new(ne, json_integer(t->ne[j]));
        }
        json_array_append_new(json_object_get(c->man, "tensors"),
                              json_pack("{s:s, s:s, s:o, s:s, s:s}", "name",
                                        t->name, "type", clef_dtype_name(t->dtype), "ne",
                                        ne, "raw_fnv", h1, "f32_fnv", h2));
        free(f);
    }
}

/* A file name of this process in /tmp, written into the caller's buffer:
 * a test holds two at once (the round trip and its cut copies). */
static const char *
scratch(char path[256], const char *what)
{
    snprintf(path, 256, "/tmp/clef-test-gguf-%ld-%s", (long) getpid(), what);
    return path;
}

/* Every key of the manifest read back with its type and value. */
static int
same_kv(const clef_gguf *g, json_t *e)
{
    const clef_gguf_value  *v = clef_gguf_get(g, json_string_value(
                                                 json_object_get(e, "key")));
    const char             *type = json_string_value(json_object_get(e, "type"));
    json_t                 *want = json_object_get(e, "value");
    char                    got[80];
    uint64_t                i;
    int64_t                 iv;
    double                  fv;

    if (v == NULL) {
        return 0;
    }
    if (strncmp(type, "ARRAY:", 6) == 0) {
        if (v->type != CLEF_GGUF_ARRAY
            || strcmp(clef_gguf_type_name(v->v.arr.elem), type + 6) != 0
            || v->v.arr.n != json_array_size(want))
        {
            return 0;
        }
        for (i = 0; i < v->v.arr.n; i++) {
            json_t  *w = json_array_get(want, i);

            switch (v->v.arr.elem) {
            case CLEF_GGUF_STRING:
                if (clef_gguf_arr_str(v, i)->len != json_string_length(w)
                    || memcmp(clef_gguf_arr_str(v, i)->s, json_string_value(w),
                              json_string_length(w)) != 0)
                {
                    return 0;
                }
                continue;
            case CLEF_GGUF_ARRAY:
                continue;       /* the nested array: checked on its own */
            case CLEF_GGUF_FLOAT32:
            case CLEF_GGUF_FLOAT64:
                clef_gguf_arr_float(v, i, &fv);
                snprintf(got, sizeof(got), "%.17g", fv);
                break;
            case CLEF_GGUF_UINT64: {
                uint64_t  u;

                memcpy(&u, (const uint8_t *) v->v.arr.data + 8 * i, 8);
                snprintf(got, sizeof(got), "%llu", (unsigned long long) u);
                break;
            }
            default:
                clef_gguf_arr_int(v, i, &iv);
                snprintf(got, sizeof(got), "%lld", (long long) iv);
            }
            if (strcmp(got, json_string_value(w)) != 0) {
                return 0;
            }
        }
        return 1;
    }
    if (strcmp(clef_gguf_type_name(v->type), type) != 0) {
        return 0;
    }
    switch (v->type) {
    case CLEF_GGUF_STRING:
        return v->v.str.len == json_string_length(want)
               && memcmp(v->v.str.s, json_string_value(want), v->v.str.len) == 0;
    case CLEF_GGUF_FLOAT32:
    case CLEF_GGUF_FLOAT64:
        snprintf(got, sizeof(got), "%.17g", v->v.f);
        break;
    case CLEF_GGUF_INT8:
    case CLEF_GGUF_INT16:
    case CLEF_GGUF_INT32:
    case CLEF_GGUF_INT64:
        snprintf(got, sizeof(got), "%lld", (long long) v->v.i);
        break;
    default:
        snprintf(got, sizeof(got), "%llu", (unsigned long long) v->v.u);
    }
    return strcmp(got, json_string_value(want)) == 0;
}

static void
test_round_trip(void)
{
    content                  c = { 0 };
    clef_gguf_writer        *w;
    clef_gguf               *g, *h;
    clef_error               err;
    const clef_gguf_tensor  *t, *u;
    const clef_gguf_value   *nested;
    char                     rt[256], cutp[256];
    const char              *path = scratch(rt, "rt.gguf");
    const clef_dtype_traits *q;
    char                    *bytes, name[64];
    uint8_t                 *want;
    json_t                  *e;
    size_t                   len = 0, i, bad;
    uint64_t                 end, cut;
    int                      refused, opened;

    w = build(&c, &err);
    CHECK(w != NULL, "the writer takes every value type and tensor type");
    if (w == NULL) {
        printf("#   %s\n", err.message);
        content_free(&c);
        return;
    }
    CHECK_INT(clef_gguf_writer_write(w, path, &err), 0, "the file is written");
    clef_gguf_writer_free(w);

    g = clef_gguf_open(path, 0, &err);
    CHECK(g != NULL, "it reads back");
    if (g == NULL) {
        printf("#   %s\n", err.message);
        content_free(&c);
        return;
    }
    CHECK(clef_gguf_version(g) == 3 && clef_gguf_alignment(g) == 64
          && clef_gguf_data_offset(g) % 64 == 0,
          "version 3, general.alignment 64, the data section aligned");
    bad = 0;
    json_array_foreach(json_object_get(c.man, "kv"), i, e) {
        if (!same_kv(g, e)) {
            printf("#   %s differs\n",
                   json_string_value(json_object_get(e, "key")));
            bad++;
        }
    }
    CHECK(bad == 0 && clef_gguf_kv_count(g)
                      == json_array_size(json_object_get(c.man, "kv")),
          "all %zu keys read back with their types and values",
          json_array_size(json_object_get(c.man, "kv")));
    nested = clef_gguf_get(g, "a.nested");
    CHECK(nested != NULL && nested->v.arr.n == 3
          && clef_gguf_arr_arr(nested, 0)->v.arr.n == 2
          && clef_gguf_arr_arr(nested, 1)->v.arr.elem == CLEF_GGUF_UINT32
          && clef_gguf_arr_str(clef_gguf_arr_arr(nested, 2), 0)->s[0] == 'x',
          "an array of arrays reads back");

    /* every f32-sourced tensor holds what its quantizer makes */
    bad = 0;
    for (i = 0; i < (size_t) c.n_src; i++) {
        t = clef_gguf_tensor_at(g, i);
        q = clef_dtype_traits_of(t->dtype);
        want = malloc(t->nbytes + 1);
        q->from_f32(c.src[i], want, t->numel);
        if (t->offset % 64 != 0 || memcmp(t->data, want, t->nbytes) != 0) {
            printf("#   %s differs\n", t->name);
            bad++;
        }
        free(want);
    }
    snprintf(name, sizeof(name), "t.%s", "Q4_K");
    t = clef_gguf_tensor_find(g, name);
    CHECK(bad == 0 && t != NULL && t->ne[0] == 512 && t->ne[1] == 3
          && t->ndim == 2 && t->nbytes == 3 * 288,
          "%d tensors of every type and rank hold their quantized values", c.n_src);
    t = clef_gguf_tensor_find(g, "rank4.bf16");
    CHECK(t != NULL && t->ndim == 4 && memcmp(t->data, c.raw, 32) == 0,
          "a raw 4-D tensor reads back");
    t = clef_gguf_tensor_find(g, "rows.q8_0");
    want = malloc(3 * 68);
    raw_rows(NULL, 0, 3, want, &err);
    CHECK(t != NULL && memcmp(t->data, want, 3 * 68) == 0,
          "raw rows on demand read back");
    free(want);

    /* headers only: the same infos, no data */
    h = clef_gguf_open(path, CLEF_GGUF_HEADERS_ONLY, &err);
    bad = h == NULL || clef_gguf_tensor_count(h) != clef_gguf_tensor_count(g);
    for (i = 0; !bad && i < clef_gguf_tensor_count(g); i++) {
        t = clef_gguf_tensor_at(g, i);
        u = clef_gguf_tensor_at(h, i);
        bad |= u->data != NULL || u->offset != t->offset
               || u->nbytes != t->nbytes || strcmp(u->name, t->name) != 0;
    }
    CHECK(!bad, "headers only: the same tensor infos, nothing mapped");
    clef_gguf_close(h);

    /* every cut of the file: refused until the last tensor's data is
     * whole, read after that (only padding is missing) */
    bytes = slurp(path, &len);
    for (i = 0, end = 0; i < clef_gguf_tensor_count(g); i++) {
        t = clef_gguf_tensor_at(g, i);
        end = t->offset + t->nbytes > end ? t->offset + t->nbytes : end;
    }
    refused = opened = 0;
    bad = 0;
    for (cut = 0; cut < len; cut++) {
        h = clef_gguf_open_mem(bytes, cut, "cut", &err);
        if (h == NULL) {
            refused += cut < end && err.code == CLEF_E_MODEL;
            bad += cut >= end;
        } else {
            opened += cut >= end;
            bad += cut < end;
        }
        clef_gguf_close(h);
    }
    CHECK(bad == 0 && refused == (int) end && opened == (int) (len - end),
          "each of the %llu cuts before the end of the data refused, the %llu"
          " in the trailing padding read", (unsigned long long) end,
          (unsigned long long) (len - end));
    h = clef_gguf_open_mem(bytes, len, "whole", &err);
    CHECK(h != NULL && clef_gguf_tensor_at(h, 0)->data
                       == (const void *) (bytes + clef_gguf_tensor_at(h, 0)->offset),
          "from memory: tensors point into the image");
    clef_gguf_close(h);

    /* truncated files through pread, full and headers only */
    for (cut = 0; cut < 3; cut++) {
        FILE  *f = fopen(scratch(cutp, "cut.gguf"), "wb");
        size_t at = cut == 0 ? 10 : cut == 1 ? clef_gguf_data_offset(g) - 5
                                             : (size_t) end - 1;

        fwrite(bytes, 1, at, f);
        fclose(f);
        h = clef_gguf_open(cutp, cut == 1 ? CLEF_GGUF_HEADERS_ONLY : 0, &err);
        CHECK_ERR(h, err, "truncated", "a file cut at %zu is refused: %s", at,
                  err.message);
    }
    unlink(cutp);
    free(bytes);
    clef_gguf_close(g);
    unlink(path);
    content_free(&c);
}

/* ---- corruptions ----------------------------------------------------- */

typedef struct {
    clef_buf  b;
} img;

static void
u32(img *m, uint32_t v)
{
    clef_buf_append(&m->b, &v, 4);
}

static void
u64(img *m, uint64_t v)
{
    clef_buf_append(&m->b, &v, 8);
}

static void
str(img *m, const char *s)
{
    u64(m, strlen(s));
    clef_buf_append(&m->b, s, strlen(s));
}

static void
hdr(img *m, uint32_t version, uint64_t n_t, uint64_t n_kv)
{
    m->b.len = 0;
    clef_buf_append(&m->b, "GGUF", 4);
    u32(m, version);
    u64(m, n_t);
    u64(m, n_kv);
}

/* a tensor info of one or two dims */
static void
tinfo(img *m, const char *name, uint32_t ndim, uint64_t ne0, uint64_t ne1,
    uint32_t type, uint64_t off)
{
    str(m, name);
    u32(m, ndim);
    u64(m, ne0);
    if (ndim > 1) {
        u64(m, ne1);
    }
    u32(m, type);
    u64(m, off);
}

/* pads to 32 and appends n data bytes */
static void
data(img *m, size_t n)
{
    while (m->b.len % 32 != 0) {
        clef_buf_putc(&m->b, 0);
    }
    while (n-- > 0) {
        clef_buf_putc(&m->b, 0x11);
    }
}

static clef_gguf *
open_img(img *m, clef_error *err)
{
    return clef_gguf_open_mem(m->b.data, m->b.len, "bad.gguf", err);
}

static void
test_corrupt(void)
{
    img         m = { { 0 } };
    clef_error  err;
    clef_gguf  *g;
    int         i;

    hdr(&m, 3, 1, 1);
    str(&m, "k");
    u32(&m, CLEF_GGUF_UINT32);
    u32(&m, 7);
    tinfo(&m, "w", 2, 32, 2, CLEF_GGML_Q8_0, 0);
    data(&m, 68);
    g = open_img(&m, &err);
    CHECK(g != NULL && clef_gguf_tensor_find(g, "w") != NULL,
          "a minimal hand-made file reads");
    clef_gguf_close(g);

    memcpy(m.b.data, "GGJT", 4);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "not a GGUF file", "a wrong magic");
    hdr(&m, 1, 0, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "GGUF version 1", "version 1");
    hdr(&m, 0x03000000, 0, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "big-endian", "a big-endian file");
    hdr(&m, 3, 0, 1u << 30);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "announces 0 tensors and 1073741824 keys",
              "more keys than the file can hold");
    hdr(&m, 3, 1ull << 40, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "announces", "more tensors than the file can hold");

    hdr(&m, 3, 0, 1);
    u64(&m, 1ull << 62);
    data(&m, 32);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "truncated or corrupt GGUF: key 0 needs",
              "a key longer than the file");
    hdr(&m, 3, 0, 1);
    str(&m, "");
    u32(&m, 0);
    data(&m, 32);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "is empty", "an empty key");
    hdr(&m, 3, 0, 1);
    u64(&m, 3);
    clef_buf_append(&m.b, "a\0b", 3);
    u32(&m, 0);
    clef_buf_putc(&m.b, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "NUL", "a key holding a NUL");
    hdr(&m, 3, 0, 1);
    str(&m, "k");
    u32(&m, 13);
    data(&m, 32);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "key 0 ('k') has unknown value type 13",
              "an unknown value type");
    hdr(&m, 3, 0, 1);
    str(&m, "k");
    u32(&m, CLEF_GGUF_ARRAY);
    u32(&m, 77);
    u64(&m, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "an array of unknown value type 77",
              "an array of an unknown type");
    hdr(&m, 3, 0, 1);
    str(&m, "k");
    u32(&m, CLEF_GGUF_ARRAY);
    u32(&m, CLEF_GGUF_UINT64);
    u64(&m, 1ull << 61);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "is an array of 2305843009213693952 UINT64",
              "an array longer than the file");
    hdr(&m, 3, 0, 1);
    str(&m, "k");
    u32(&m, CLEF_GGUF_ARRAY);
    for (i = 0; i < 10; i++) {
        u32(&m, CLEF_GGUF_ARRAY);
        u64(&m, 1);
    }
    u32(&m, CLEF_GGUF_UINT8);
    u64(&m, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "nested deeper than 8", "arrays nested too deep");
    hdr(&m, 3, 0, 2);
    str(&m, "k");
    u32(&m, CLEF_GGUF_UINT8);
    clef_buf_putc(&m.b, 1);
    str(&m, "k");
    u32(&m, CLEF_GGUF_INT8);
    clef_buf_putc(&m.b, 1);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "the key 'k' is given twice", "a key given twice");

    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 5, 1, 1, 0, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "tensor 'w' has 5 dimensions", "5 dimensions");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 0, 1, 1, 0, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "tensor 'w' has 0 dimensions", "0 dimensions");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 2, 1ull << 40, 1ull << 40, 0, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "too many elements", "dims whose product overflows");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 1, 3616796220569157635ull, 1, CLEF_GGML_F32, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "tensor 'w' is too large",
              "a row whose bytes overflow (found by the fuzzer)");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "blk.0.ffn_down.weight", 2, 256, 2, 9, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "tensor 'blk.0.ffn_down.weight' is of type Q8_1, which"
              " ngx_clef does not read (it reads F32, F16, BF16, Q8_0, Q6_K,"
              " Q5_1, Q5_0, Q5_K, Q4_1, Q4_0, Q4_K, IQ4_NL, NVFP4, IQ4_XS,"
              " MXFP4, Q3_K, IQ3_S, IQ3_XXS, Q2_K, IQ2_S, IQ2_XS, Q2_0,"
              " IQ2_XXS, TQ2_0, IQ1_M, TQ1_0, IQ1_S, Q1_0)", "an unsupported type named with"
              " its tensor, and the types read");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 2, 256, 2, 99, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "tensor 'w' has type 99, which GGML does not define",
              "an unknown type");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 2, 100, 2, CLEF_GGML_Q4_K, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "a row of 100 values is not a whole number of Q4_K"
              " blocks of 256", "a row that is not whole blocks");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 1, 4, 1, CLEF_GGML_F32, 16);
    data(&m, 64);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "its offset 16 is not a multiple of the alignment 32",
              "a misaligned offset");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 1, 16, 1, CLEF_GGML_F32, 0);
    data(&m, 63);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "tensor 'w' (64 bytes at offset 0 of the data section)"
              " ends past the end of the file", "a tensor past the end");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "w", 1, 16, 1, CLEF_GGML_F32, 1ull << 63);
    data(&m, 64);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "ends past the end", "an offset near 2^64");
    hdr(&m, 3, 2, 0);
    tinfo(&m, "w", 1, 8, 1, CLEF_GGML_F32, 0);
    tinfo(&m, "w", 1, 8, 1, CLEF_GGML_F32, 32);
    data(&m, 64);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "the tensor 'w' is given twice", "a tensor given twice");
    hdr(&m, 3, 1, 0);
    tinfo(&m, "a_name_of_sixty_four_bytes_is_one_too_many_for_ggml_0123456789ab",
          1, 8, 1, CLEF_GGML_F32, 0);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "is too long", "a tensor name of 64 bytes");
    hdr(&m, 3, 0, 1);
    str(&m, "general.alignment");
    u32(&m, CLEF_GGUF_UINT32);
    u32(&m, 48);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "general.alignment must be a UINT32 power of two (it is"
              " UINT32 48)", "an alignment that is not a power of two");
    hdr(&m, 3, 0, 1);
    str(&m, "general.alignment");
    u32(&m, CLEF_GGUF_UINT64);
    u64(&m, 64);
    g = open_img(&m, &err);
    CHECK_ERR(g, err, "general.alignment must be a UINT32", "a UINT64 alignment");

    g = clef_gguf_open("/nonexistent/x.gguf", 0, &err);
    CHECK_ERR(g, err, "cannot open '/nonexistent/x.gguf'", "a missing file");
    g = clef_gguf_open("/tmp", 0, &err);
    CHECK_ERR(g, err, "'/tmp' is not a regular file", "a directory");
    clef_buf_free(&m.b);
}

/* ---- typed look-ups and the writer's refusals ------------------------ */

static void
test_lookups(void)
{
    clef_gguf_writer       *w = clef_gguf_writer_new();
    clef_gguf              *g;
    clef_error              err;
    const clef_gguf_str    *s;
    const clef_gguf_value  *a;
    char                    lk[256];
    const char             *path = scratch(lk, "lk.gguf");
    int64_t                 i;
    double                  f;
    int                     b;
    static const int16_t    i16[] = { -1, 2 };

    clef_gguf_put_uint(w, "n", CLEF_GGUF_UINT32, 40, &err);
    clef_gguf_put_uint(w, "big", CLEF_GGUF_UINT64, UINT64_MAX, &err);
    clef_gguf_put_float(w, "f", CLEF_GGUF_FLOAT32, 0.25, &err);
    clef_gguf_put_uint(w, "b", CLEF_GGUF_BOOL, 1, &err);
    clef_gguf_put_str(w, "s", "clef", 4, &err);
    clef_gguf_put_arr(w, "a", CLEF_GGUF_INT16, i16, 2, &err);
    CHECK_INT(clef_gguf_writer_write(w, path, &err), 0, "a file of look-ups");
    clef_gguf_writer_free(w);
    g = clef_gguf_open(path, 0, &err);
    unlink(path);
    if (g == NULL) {
        CHECK(0, "it reads: %s", err.message);
        return;
    }
    CHECK(clef_gguf_get_int(g, "n", 0, 100, &i, &err) == 0 && i == 40,
          "an integer in range");
    CHECK(clef_gguf_get_int(g, "n", 0, 10, &i, &err) == -1
          && strstr(err.message, "n is 40, outside [0, 10]") != NULL,
          "an integer out of range: %s", err.message);
    CHECK(clef_gguf_get_int(g, "big", 0, INT64_MAX, &i, &err) == -1
          && strstr(err.message, "big is 18446744073709551615, outside") != NULL,
          "a UINT64 beyond int64: %s", err.message);
    CHECK(clef_gguf_get_int(g, "s", 0, 10, &i, &err) == -1
          && strstr(err.message, "s is STRING, not an integer") != NULL,
          "a string for an integer: %s", err.message);
    CHECK(clef_gguf_get_int(g, "b", 0, 10, &i, &err) == -1,
          "a BOOL is not an integer");
    CHECK_INT(clef_gguf_get_int(g, "missing", 0, 10, &i, &err), 1,
              "an absent key");
    CHECK(clef_gguf_get_float(g, "f", &f, &err) == 0 && f == 0.25,
          "a FLOAT32");
    CHECK(clef_gguf_get_float(g, "n", &f, &err) == 0 && f == 40,
          "an integer as a float");
    CHECK(clef_gguf_get_bool(g, "b", &b, &err) == 0 && b == 1, "a BOOL");
    CHECK(clef_gguf_get_bool(g, "n", &b, &err) == -1
          && strstr(err.message, "n is UINT32, not BOOL") != NULL,
          "an integer for a BOOL: %s", err.message);
    CHECK(clef_gguf_get_str(g, "s", &s, &err) == 0 && s->len == 4
          && strcmp(s->s, "clef") == 0, "a STRING");
    CHECK(clef_gguf_get_arr(g, "a", CLEF_GGUF_INT32, &a, &err) == 0
          && clef_gguf_arr_int(a, 0, &i) == 0 && i == -1,
          "an INT16 array where integers are wanted");
    CHECK(clef_gguf_get_arr(g, "a", CLEF_GGUF_STRING, &a, &err) == -1
          && strstr(err.message, "a is an ARRAY of INT16, not an ARRAY of"
                    " STRING") != NULL, "an array of the wrong type: %s",
          err.message);
    clef_gguf_close(g);

    w = clef_gguf_writer_new();
    CHECK(clef_gguf_put_uint(w, "k", CLEF_GGUF_UINT8, 256, &err) == -1,
          "the writer refuses a value its type cannot hold");
    CHECK(clef_gguf_put_int(w, "k", CLEF_GGUF_INT8, -129, &err) == -1,
          "... a signed one too");
    CHECK(clef_gguf_put_uint(w, "general.alignment", CLEF_GGUF_UINT32, 48,
                             &err) == -1, "... an alignment of 48");
    clef_gguf_put_uint(w, "k", CLEF_GGUF_UINT8, 1, &err);
    CHECK(clef_gguf_put_uint(w, "k", CLEF_GGUF_UINT8, 2, &err) == -1
          && strstr(err.message, "given twice") != NULL, "... a key twice");
    CHECK(clef_gguf_add_tensor(w, "t", CLEF_GGML_Q4_K, 1, (int64_t[]) { 100 },
                               NULL, &err) == -1,
          "... a row that is not whole blocks");
    CHECK(clef_gguf_add_tensor(w, "t", 9, 1, (int64_t[]) { 256 }, NULL,
                               &err) == -1, "... a type it does not read");
    CHECK(clef_gguf_add_tensor_f32(w, "t", CLEF_GGML_IQ4_XS, 1,
                                   (int64_t[]) { 256 }, NULL, &err) == -1
          && strstr(err.message, "t: ngx_clef has no quantizer for this"
                    " type: give its blocks") != NULL,
          "... f32 values to quantize to a type read only: %s", err.message);
    CHECK(clef_gguf_add_tensor(w, "t", CLEF_GGML_IQ4_XS, 1,
                               (int64_t[]) { 256 }, NULL, &err) == 0,
          "and takes that type's blocks");
    clef_gguf_writer_free(w);
}

int
main(int argc, char **argv)
{
    content            c = { 0 };
    clef_gguf_writer  *w;
    clef_gguf         *g;
    clef_error         err;
    char               path[4200];

    if (argc == 3 && strcmp(argv[1], "--write") == 0) {
        w = build(&c, &err);
        if (w == NULL || clef_gguf_writer_write(w, argv[2], &err) != 0
            || (g = clef_gguf_open(argv[2], 0, &err)) == NULL)
        {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        man_tensors(&c, g);
        snprintf(path, sizeof(path), "%s.json", argv[2]);
        json_dump_file(c.man, path, JSON_INDENT(1));
        clef_gguf_close(g);
        clef_gguf_writer_free(w);
        content_free(&c);
        return 0;
    }
    test_round_trip();
    test_corrupt();
    test_lookups();
    return check_done();
}
