/*
 * GGUF files against a manifest of gguf-py's reading of them (the
 * reference scripts' manifest.json: per tensor its name, type, GGML dims,
 * and the FNV-1a 64 of its bytes and of gguf-py's dequantization):
 * test_gguf_clef.c's fixtures and test_gguf_types.c's.
 */
#ifndef CLEF_TEST_GGUF_MANIFEST_H
#define CLEF_TEST_GGUF_MANIFEST_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/gguf.h"

/* FNV-1a 64 of bytes (the reference scripts compute the same). */
static inline uint64_t
fnv(const void *p, size_t n)
{
    const uint8_t  *s = p;
    uint64_t        h = 0xcbf29ce484222325ull;
    size_t          i;

    for (i = 0; i < n; i++) {
        h = (h ^ s[i]) * 0x100000001b3ull;
    }
    return h;
}

/* A tensor (NULL: absent) of its manifest entry's type and dims. */
static inline int
manifest_shape_ok(const clef_gguf_tensor *t, json_t *e)
{
    int  j, ok;

    ok = t != NULL
         && strcmp(clef_dtype_name(t->dtype),
                   json_string_value(json_object_get(e, "type"))) == 0
         && (size_t) t->ndim == json_array_size(json_object_get(e, "ne"));
    for (j = 0; ok && j < t->ndim; j++) {
        ok = t->ne[j] == json_integer_value(json_array_get(
                             json_object_get(e, "ne"), (size_t) j));
    }
    return ok;
}

/* One tensor against its manifest entry: type, dims, bytes, and our
 * dequantization against gguf-py's. */
static inline int
manifest_tensor_ok(const clef_gguf *g, json_t *e)
{
    const clef_gguf_tensor  *t;
    float                   *f;
    char                     h[20];
    int                      ok;

    t = clef_gguf_tensor_find(g, json_string_value(json_object_get(e, "name")));
    ok = manifest_shape_ok(t, e);
    if (ok) {
        snprintf(h, sizeof(h), "%016llx",
                 (unsigned long long) fnv(t->data, t->nbytes));
        ok = strcmp(h, json_string_value(json_object_get(e, "raw_fnv"))) == 0;
    }
    if (ok) {
        f = malloc((size_t) t->numel * sizeof(float) + 4);
        clef_dtype_traits_of(t->dtype)->to_f32(t->data, f, t->numel);
        snprintf(h, sizeof(h), "%016llx", (unsigned long long)
                 fnv(f, (size_t) t->numel * sizeof(float)));
        ok = strcmp(h, json_string_value(json_object_get(e, "f32_fnv"))) == 0;
        free(f);
    }
    return ok;
}

/* Every tensor of the file at path against the entries ts, as one check
 * named by what; the types met. */
static inline void
manifest_check_file(const char *path, const char *what, json_t *ts)
{
    const clef_gguf_tensor  *t;
    clef_gguf               *g;
    clef_error               err;
    json_t                  *e;
    char                     types[200] = "";
    size_t                   i, bad = 0;

    g = clef_gguf_open(path, 0, &err);
    if (g == NULL) {
        CHECK(0, "%s opens: %s", what, err.message);
        return;
    }
    json_array_foreach(ts, i, e) {
        if (!manifest_tensor_ok(g, e)) {
            printf("#   %s: %s differs\n", what,
                   json_string_value(json_object_get(e, "name")));
            bad++;
            continue;
        }
        t = clef_gguf_tensor_find(g, json_string_value(json_object_get(e,
                                                                       "name")));
        if (strstr(types, clef_dtype_name(t->dtype)) == NULL
            && strlen(types) + 12 < sizeof(types))
        {
            strcat(types, " ");
            strcat(types, clef_dtype_name(t->dtype));
        }
    }
    CHECK(bad == 0 && clef_gguf_tensor_count(g) == json_array_size(ts),
          "%s: all %zu tensors' bytes and dequantized values as gguf-py's"
          " (types:%s)", what, json_array_size(ts), types);
    clef_gguf_close(g);
}

#endif
