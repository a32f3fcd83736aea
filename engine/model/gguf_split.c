/*
 * A split model read as one file (gguf.h, gguf_split.h): the first part's
 * reader finds the others by llama.cpp's names, checks each against the
 * first, and takes their tensors in.  The checks are llama.cpp's
 * (llama_model_loader) and the ones it leaves to luck: a part that is
 * missing, of another split, given twice under two names or cut short is
 * an error naming the part, never a model with a tensor missing.
 */
#include "model/gguf_split.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf_impl.h"

int
clef_gguf_split_path(char *buf, size_t size, const char *prefix, int no,
    int count)
{
    int  n = snprintf(buf, size, "%s-%05d-of-%05d.gguf", prefix, no + 1,
                      count);

    return n < 0 || (size_t) n >= size ? -1 : 0;
}

/* path without the name part no of count has (llama_split_prefix): -1
 * when its name is not that part's. */
static int
split_prefix(const char *path, int no, int count, char *prefix,
    size_t size)
{
    char    suffix[40];
    size_t  lp, ls;

    if (clef_gguf_split_path(suffix, sizeof(suffix), "", no, count) != 0) {
        return -1;
    }
    lp = strlen(path);
    ls = strlen(suffix);
    if (lp < ls || strcmp(path + lp - ls, suffix) != 0 || lp - ls >= size) {
        return -1;
    }
    memcpy(prefix, path, lp - ls);
    prefix[lp - ls] = '\0';
    return 0;
}

typedef struct {
    int64_t  no;
    int64_t  count;
    int64_t  tensors;
} split_keys;

/* g's split keys: 0 with them read; 1 when g is no part of a split (no
 * split.count, or a count of one: llama-gguf-split's output for a model
 * that fits one part is the model); -1 on a key of a wrong type or
 * value, or a part without split.no or split.tensors.count. */
static int
read_keys(const clef_gguf *g, split_keys *k, clef_error *err)
{
    int  rc;

    rc = clef_gguf_get_int(g, CLEF_GGUF_SPLIT_COUNT, 0, CLEF_GGUF_SPLIT_MAX,
                           &k->count, err);
    if (rc != 0 || k->count <= 1) {
        return rc < 0 ? -1 : 1;
    }
    rc = clef_gguf_get_int(g, CLEF_GGUF_SPLIT_NO, 0, k->count - 1, &k->no,
                           err);
    if (rc == 0) {
        rc = clef_gguf_get_int(g, CLEF_GGUF_SPLIT_TENSORS, 0, INT32_MAX,
                               &k->tensors, err);
    }
    if (rc == 1) {
        return clef_error_fail(err, CLEF_E_MODEL, "%s: has split.count %lld"
                               " but no %s: not a part llama-gguf-split"
                               " wrote", clef_gguf_path(g),
                               (long long) k->count,
                               clef_gguf_get(g, CLEF_GGUF_SPLIT_NO) == NULL
                               ? CLEF_GGUF_SPLIT_NO : CLEF_GGUF_SPLIT_TENSORS);
    }
    return rc;
}

/* Part i of the split whose first part is first: opened alone, its keys
 * those of the first but for its own number. */
static clef_gguf *
open_part(const clef_gguf *first, const split_keys *k, const char *prefix,
    int i, int flags, clef_error *err)
{
    clef_gguf   *p;
    split_keys   pk;
    char         path[4096], why[sizeof(err->message)];
    int          rc;

    if (clef_gguf_split_path(path, sizeof(path), prefix, i, (int) k->count)
        != 0)
    {
        clef_error_fail(err, CLEF_E_MODEL, "%s: the path of its part %d is"
                        " too long", clef_gguf_path(first), i + 1);
        return NULL;
    }
    p = clef_gguf_open(path, flags | CLEF_GGUF_ONE_PART, err);
    if (p == NULL) {
        /* the part's own error, said as one of the split's */
        snprintf(why, sizeof(why), "%s", err->message);
        clef_error_fail(err, err->code, "part %d of %lld of '%s': %s", i + 1,
                        (long long) k->count, clef_gguf_path(first), why);
        return NULL;
    }
    rc = read_keys(p, &pk, err);
    if (rc == 1) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: has no split.count above 1:"
                        " not part %d of %lld of '%s'", path, i + 1,
                        (long long) k->count, clef_gguf_path(first));
    } else if (rc == 0 && pk.count != k->count) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: is one of %lld parts"
                        " (split.count), the first part '%s' one of %lld:"
                        " parts of two splits", path, (long long) pk.count,
                        clef_gguf_path(first), (long long) k->count);
    } else if (rc == 0 && pk.no != i) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: is part %lld (split.no %lld)"
                        " under the name of part %d of %lld", path,
                        (long long) pk.no + 1, (long long) pk.no, i + 1,
                        (long long) k->count);
    } else if (rc == 0 && pk.tensors != k->tensors) {
        clef_error_fail(err, CLEF_E_MODEL, "%s: says its split holds %lld"
                        " tensors (split.tensors.count), the first part '%s'"
                        " %lld: parts of two splits", path,
                        (long long) pk.tensors, clef_gguf_path(first),
                        (long long) k->tensors);
    } else if (rc == 0) {
        return p;
    }
    clef_gguf_close(p);
    return NULL;
}

/* The parts' tensors after g's own, in part order; every name once. */
static int
take_tensors(clef_gguf *g, const split_keys *k, clef_error *err)
{
    clef_gguf_tensor   *t;
    const clef_gguf    *p;
    size_t              n, i, j;

    n = g->n_t;
    for (i = 0; i < g->n_parts; i++) {
        n += g->parts[i]->n_t;
    }
    if (n != (uint64_t) k->tensors) {
        return clef_error_fail(err, CLEF_E_MODEL, "%s: its %lld parts hold"
                               " %zu tensors, split.tensors.count says %lld:"
                               " a part is not the one written with the"
                               " others", g->path, (long long) k->count, n,
                               (long long) k->tensors);
    }
    t = realloc(g->t, (n + 1) * sizeof(*t));
    if (t != NULL) {
        g->t = t;
    }
    free(g->t_sorted);
    g->t_sorted = malloc((n + 1) * sizeof(*g->t_sorted));
    if (t == NULL || g->t_sorted == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory",
                               g->path);
    }
    for (i = 0; i < g->n_parts; i++) {
        p = g->parts[i];
        for (j = 0; j < p->n_t; j++) {
            g->t[g->n_t] = p->t[j];
            g->t[g->n_t++].part = (int) i + 1;
        }
    }
    for (i = 0; i < n; i++) {
        g->t_sorted[i] = &g->t[i];
    }
    qsort(g->t_sorted, n, sizeof(*g->t_sorted), clef_gguf_cmp_tensor);
    for (i = 1; i < n; i++) {
        if (strcmp(g->t_sorted[i - 1]->name, g->t_sorted[i]->name) == 0) {
            return clef_error_fail(err, CLEF_E_MODEL, "%s: the tensor '%s' is"
                                   " in part %d and in part %d",
                                   g->path, g->t_sorted[i]->name,
                                   g->t_sorted[i - 1]->part + 1,
                                   g->t_sorted[i]->part + 1);
        }
    }
    return 0;
}

int
clef_gguf_split_join(clef_gguf *g, int flags, clef_error *err)
{
    split_keys  k;
    char        prefix[4096], first[4096];
    int         rc, i;

    rc = read_keys(g, &k, err);
    if (rc != 0) {
        return rc < 0 ? -1 : 0;
    }
    if (k.no != 0) {
        if (split_prefix(g->path, (int) k.no, (int) k.count, prefix,
                         sizeof(prefix)) == 0
            && clef_gguf_split_path(first, sizeof(first), prefix, 0,
                                    (int) k.count) == 0)
        {
            return clef_error_fail(err, CLEF_E_MODEL, "%s: is part %lld of"
                                   " %lld of a GGUF split by"
                                   " llama-gguf-split: give its first part,"
                                   " '%s'", g->path, (long long) k.no + 1,
                                   (long long) k.count, first);
        }
        return clef_error_fail(err, CLEF_E_MODEL, "%s: is part %lld of %lld"
                               " of a GGUF split by llama-gguf-split: give"
                               " its first part (split.no 0)", g->path,
                               (long long) k.no + 1, (long long) k.count);
    }
    if (split_prefix(g->path, 0, (int) k.count, prefix, sizeof(prefix)) != 0) {
        return clef_error_fail(err, CLEF_E_MODEL, "%s: is the first of %lld"
                               " parts of a GGUF split by llama-gguf-split,"
                               " but not named as one (PREFIX-00001-of-%05lld"
                               ".gguf): the other parts are found by that"
                               " name", g->path, (long long) k.count,
                               (long long) k.count);
    }
    g->parts = calloc((size_t) k.count - 1, sizeof(*g->parts));
    if (g->parts == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "%s: out of memory",
                               g->path);
    }
    for (i = 1; i < k.count; i++) {
        g->parts[i - 1] = open_part(g, &k, prefix, i, flags, err);
        if (g->parts[i - 1] == NULL) {
            return -1;
        }
        g->n_parts++;
    }
    return take_tensors(g, &k, err);
}

size_t
clef_gguf_part_count(const clef_gguf *g)
{
    return g->n_parts + 1;
}

const char *
clef_gguf_part_path(const clef_gguf *g, size_t i)
{
    return i == 0 ? g->path : i <= g->n_parts ? g->parts[i - 1]->path : NULL;
}
