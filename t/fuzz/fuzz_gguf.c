/*
 * The GGUF reader (engine/model/gguf.c) on arbitrary bytes: it never
 * crashes, leaks or reads outside the input, and either refuses with a
 * complete model error or gives a file whose every key and tensor can be
 * walked: each tensor's bytes inside the input, aligned, as many as its
 * type and shape make, and each of them dequantized (the dequantizers on
 * arbitrary blocks).
 */
#include <stdint.h>

#include "fuzz_common.h"
#include "model/gguf.h"
#include "model/quant.h"

/* Reads every element of every array (nested ones too). */
static void
walk(const clef_gguf_value *v, int depth)
{
    const clef_gguf_str  *s;
    uint64_t              i;
    int64_t               iv;
    double                fv;

    if (depth > 8) {
        fuzz_fail("arrays nested deeper than the reader allows");
    }
    if (v->type == CLEF_GGUF_STRING && v->v.str.s[v->v.str.len] != '\0') {
        fuzz_fail("a string without its NUL");
    }
    if (v->type != CLEF_GGUF_ARRAY) {
        return;
    }
    for (i = 0; i < v->v.arr.n; i++) {
        switch (v->v.arr.elem) {
        case CLEF_GGUF_STRING:
            s = clef_gguf_arr_str(v, i);
            if (s == NULL || s->s[s->len] != '\0') {
                fuzz_fail("a string element without its NUL");
            }
            break;
        case CLEF_GGUF_ARRAY:
            walk(clef_gguf_arr_arr(v, i), depth + 1);
            break;
        case CLEF_GGUF_FLOAT32:
        case CLEF_GGUF_FLOAT64:
            if (clef_gguf_arr_float(v, i, &fv) != 0) {
                fuzz_fail("a float element unreadable");
            }
            break;
        default:
            (void) clef_gguf_arr_int(v, i, &iv);
            break;
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const clef_gguf_tensor  *t;
    const clef_dtype_traits *q;
    clef_dtype               dt;
    clef_gguf               *g;
    clef_error               err;
    const uint8_t           *p;
    float                   *out;
    size_t                   i;

    g = clef_gguf_open_mem(data, size, "fuzz.gguf", &err);
    if (g == NULL) {
        if (err.code != CLEF_E_MODEL && err.code != CLEF_E_NO_MEMORY) {
            fuzz_fail("refused with code %s", clef_errc_name(err.code));
        }
        if (err.message[0] == '\0' || err.status != 500) {
            fuzz_fail("incomplete refusal");
        }
        return 0;
    }
    for (i = 0; i < clef_gguf_kv_count(g); i++) {
        const clef_gguf_value  *v = clef_gguf_kv_at(g, i);

        if (clef_gguf_get(g, v->key) != v) {
            fuzz_fail("key '%s' not found by its name", v->key);
        }
        walk(v, 0);
    }
    for (i = 0; i < clef_gguf_tensor_count(g); i++) {
        t = clef_gguf_tensor_at(g, i);
        q = clef_dtype_from_ggml((int) t->type, &dt) == 0
            ? clef_dtype_traits_of(dt) : NULL;
        p = t->data;
        if (clef_gguf_tensor_find(g, t->name) != t || q == NULL
            || dt != t->dtype || q->to_f32 == NULL
            || p < data || t->offset % clef_gguf_alignment(g) != 0
            || t->offset > size || t->nbytes > size - t->offset
            || p != data + t->offset
            || (uint64_t) clef_ggml_row_bytes(t->type, t->ne[0])
               * (uint64_t) (t->ne[0] ? t->numel / t->ne[0] : 0) != t->nbytes)
        {
            fuzz_fail("tensor '%s' accepted outside the file or misplaced",
                      t->name);
        }
        if (t->numel > 0 && t->numel <= (1 << 20)) {
            out = malloc((size_t) t->numel * sizeof(float));
            if (out != NULL) {
                q->to_f32(t->data, out, t->numel);
                free(out);
            }
        }
    }
    clef_gguf_close(g);
    return 0;
}
