/*
 * Writing a model as llama-gguf-split's parts (gguf_split.h), with the
 * GGUF writer: the bytes of every tensor as the source stores them.
 */
#include "model/gguf_split.h"

#include <stdio.h>
#include <string.h>

#include "model/gguf_write.h"

static int
is_split_key(const char *key)
{
    return strcmp(key, CLEF_GGUF_SPLIT_NO) == 0
           || strcmp(key, CLEF_GGUF_SPLIT_COUNT) == 0
           || strcmp(key, CLEF_GGUF_SPLIT_TENSORS) == 0;
}

/* Part no of count: the metadata when it is the first, tensors [t0, t1). */
static int
write_part(const clef_gguf *g, const char *prefix, int no, int count,
    size_t t0, size_t t1, clef_error *err)
{
    const clef_gguf_value   *v;
    const clef_gguf_tensor  *t;
    clef_gguf_writer        *w = clef_gguf_writer_new();
    char                     path[4096];
    size_t                   i;
    int                      rc = w == NULL;

    if (rc != 0) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    for (i = 0; rc == 0 && no == 0 && i < clef_gguf_kv_count(g); i++) {
        v = clef_gguf_kv_at(g, i);
        if (!is_split_key(v->key)) {
            rc = clef_gguf_put_value(w, v->key, v, err);
        }
    }
    if (rc == 0) {
        /* llama-gguf-split's order, so that the parts are its bytes */
        rc = clef_gguf_put_uint(w, CLEF_GGUF_SPLIT_NO, CLEF_GGUF_UINT16,
                                (uint64_t) no, err)
             || clef_gguf_put_int(w, CLEF_GGUF_SPLIT_TENSORS, CLEF_GGUF_INT32,
                                  (int64_t) clef_gguf_tensor_count(g), err)
             || clef_gguf_put_uint(w, CLEF_GGUF_SPLIT_COUNT, CLEF_GGUF_UINT16,
                                   (uint64_t) count, err);
    }
    for (i = t0; rc == 0 && i < t1; i++) {
        t = clef_gguf_tensor_at(g, i);
        rc = clef_gguf_add_tensor(w, t->name, t->type, t->ndim, t->ne,
                                  t->data, err);
    }
    if (rc == 0) {
        if (clef_gguf_split_path(path, sizeof(path), prefix, no, count) != 0) {
            rc = clef_error_fail(err, CLEF_E_MODEL, "%s: too long a prefix",
                                 prefix);
        } else {
            rc = clef_gguf_writer_write(w, path, err);
        }
    }
    clef_gguf_writer_free(w);
    return rc != 0 ? -1 : 0;
}

int
clef_gguf_split_write(const clef_gguf *g, const char *prefix,
    size_t max_tensors, int no_tensor_first, int *count, clef_error *err)
{
    size_t  n = clef_gguf_tensor_count(g), t0, t1, parts;
    int     no;

    if (max_tensors == 0) {
        return clef_error_fail(err, CLEF_E_BAD_REQUEST, "a part must hold at"
                               " least one tensor");
    }
    if (n > 0 && clef_gguf_tensor_at(g, 0)->data == NULL) {
        return clef_error_fail(err, CLEF_E_BAD_REQUEST, "%s: opened with"
                               " headers only, its tensors unread",
                               clef_gguf_path(g));
    }
    parts = (n + max_tensors - 1) / max_tensors + (no_tensor_first != 0);
    if (parts == 0) {
        parts = 1;
    }
    if (parts > CLEF_GGUF_SPLIT_MAX) {
        return clef_error_fail(err, CLEF_E_BAD_REQUEST, "%zu tensors in parts"
                               " of %zu make more than %d parts", n,
                               max_tensors, CLEF_GGUF_SPLIT_MAX);
    }
    t0 = 0;
    for (no = 0; (size_t) no < parts; no++) {
        t1 = no == 0 && no_tensor_first ? 0
             : t0 + max_tensors < n ? t0 + max_tensors : n;
        if (write_part(g, prefix, no, (int) parts, t0, t1, err) != 0) {
            return -1;
        }
        t0 = t1;
    }
    if (count != NULL) {
        *count = (int) parts;
    }
    return 0;
}
