/*
 * Batches, and the backends' ops by name: "cpu" is linked in; "cuda" lives
 * in libclef_cuda.so, opened with dlopen the first time it is asked for,
 * so that a process that never asks never maps the CUDA libraries.  The
 * names and capabilities are registry.c's.
 */
#include "backend/backend.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dl.h"
#include "cpu/backend_cpu.h"

#define CUDA_LIBRARY  "libclef_cuda.so"
#define CUDA_SYMBOL   "clef_cuda_backend_ops"

void
clef_batch_init(clef_batch *b, const clef_record * const *records, int n_records,
    int32_t *cu_seqlens)
{
    clef_batch_init_parts(b, records, NULL, n_records, cu_seqlens);
}

void
clef_batch_init_parts(clef_batch *b, const clef_record * const *records,
    const clef_batch_part *parts, int n_records, int32_t *cu_seqlens)
{
    int64_t  n;
    int      r;

    b->n_records = n_records;
    b->records = records;
    b->cu_seqlens = cu_seqlens;
    b->positions = NULL;
    b->spans = NULL;
    b->n_spans = 0;
    b->n_items = 0;
    b->parts = parts;
    cu_seqlens[0] = 0;
    for (r = 0; r < n_records; r++) {
        n = parts != NULL ? parts[r].len : (int64_t) records[r]->ids.n;
        cu_seqlens[r + 1] = cu_seqlens[r] + (int32_t) n;
    }
}

/* Tokens [*off, *off + *len) of record r are in the batch (its part, or
 * the whole of it). */
static void
batch_window(const clef_batch *b, int r, int64_t *off, int64_t *len)
{
    *off = b->parts != NULL ? b->parts[r].offset : 0;
    *len = (int64_t) b->cu_seqlens[r + 1] - b->cu_seqlens[r];
}

int
clef_batch_set_media(clef_batch *b, clef_error *err)
{
    const clef_record  *rec;
    clef_media_span    *spans, sp;
    int32_t            *pos;
    int64_t             T = clef_batch_tokens(b), t, n, off, len, s0, s1;
    int                 r, k, items = 0, m = 0, a;

    for (r = 0; r < b->n_records; r++) {
        items += b->records[r]->n_media;
        m += b->records[r]->n_spans;
    }
    if (items == 0) {
        return 0;
    }
    spans = calloc((size_t) m + 1, sizeof(*spans));
    pos = malloc(sizeof(int32_t) * 3 * (size_t) (T > 0 ? T : 1));
    if (spans == NULL || pos == NULL) {
        free(spans);
        free(pos);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    items = 0;
    m = 0;
    for (r = 0; r < b->n_records; r++) {
        rec = b->records[r];
        n = (int64_t) rec->ids.n;
        batch_window(b, r, &off, &len);
        for (a = 0; a < 3; a++) {
            for (t = 0; t < len; t++) {
                pos[a * T + b->cu_seqlens[r] + t] = rec->positions != NULL
                    ? rec->positions[a * n + off + t] : (int32_t) (off + t);
            }
        }
        /* a span is cut to the part: it may start in an earlier part or
         * end in a later one, its rows following its tokens */
        for (k = 0; k < rec->n_spans; k++) {
            sp = rec->spans[k];
            s0 = sp.start > off ? sp.start : off;
            s1 = (int64_t) sp.start + sp.len < off + len
                 ? (int64_t) sp.start + sp.len : off + len;
            if (s1 <= s0) {
                continue;
            }
            sp.row += (int32_t) (s0 - sp.start);
            sp.start = (int32_t) (b->cu_seqlens[r] + s0 - off);
            sp.len = (int32_t) (s1 - s0);
            sp.item += items;
            spans[m++] = sp;
        }
        items += rec->n_media;
    }
    b->positions = pos;
    b->spans = spans;
    b->n_spans = m;
    b->n_items = items;
    return 0;
}


void
clef_batch_free_media(clef_batch *b)
{
    free((void *) b->positions);
    free((void *) b->spans);
    b->positions = NULL;
    b->spans = NULL;
    b->n_spans = 0;
    b->n_items = 0;
}


const clef_media_item *
clef_batch_item(const clef_batch *b, int m)
{
    int  r;

    for (r = 0; r < b->n_records; r++) {
        if (m < b->records[r]->n_media) {
            return &b->records[r]->media[m];
        }
        m -= b->records[r]->n_media;
    }
    return NULL;
}


int
clef_batch_has_media(const clef_batch *b, const char *backend,
    clef_error *err)
{
    int  r;

    for (r = 0; r < b->n_records; r++) {
        if (b->records[r]->n_media > 0) {
            break;
        }
    }
    if (b->positions == NULL && b->n_spans == 0 && r == b->n_records) {
        return 0;
    }
    clef_error_set(err, 500, "media_unsupported", NULL,
                   "the %s backend does not run media records yet", backend);
    return 1;
}

int64_t
clef_batch_tokens(const clef_batch *b)
{
    return b->n_records > 0 ? b->cu_seqlens[b->n_records] : 0;
}

int
clef_batch_last(const clef_batch *b, int r)
{
    return b->parts == NULL || b->parts[r].last;
}

int
clef_batch_options(const clef_batch *b)
{
    int  r, n = 0;

    for (r = 0; r < b->n_records; r++) {
        if (clef_batch_last(b, r)) {
            n += b->records[r]->n_options;
        }
    }
    return n;
}

static pthread_mutex_t          cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static const clef_backend_ops  *cuda_ops;

/* libclef_cuda.so beside the object this code is linked into (build/clef,
 * libclef_engine.so), else by the dynamic linker's search; loaded once and
 * kept for the life of the process, since its ops table is handed out */
static const clef_backend_ops *
cuda_load(clef_error *err)
{
    char   why[512];
    void  *h, *sym;

    pthread_mutex_lock(&cuda_lock);
    if (cuda_ops != NULL) {
        pthread_mutex_unlock(&cuda_lock);
        return cuda_ops;
    }
    h = clef_dlopen_beside((void *) cuda_load, CUDA_LIBRARY, why, sizeof(why));
    if (h == NULL) {
        clef_error_set(err, 500, "backend_unavailable", NULL,
                       "the CUDA backend is not available: %s", why);
        pthread_mutex_unlock(&cuda_lock);
        return NULL;
    }
    sym = dlsym(h, CUDA_SYMBOL);
    if (sym == NULL) {
        clef_error_set(err, 500, "backend_unavailable", NULL,
                       "the CUDA backend is not available: %s", dlerror());
        dlclose(h);
        pthread_mutex_unlock(&cuda_lock);
        return NULL;
    }
    cuda_ops = sym;
    pthread_mutex_unlock(&cuda_lock);
    return cuda_ops;
}

static const clef_backend_ops *
cpu_load(clef_error *err)
{
    (void) err;
    return &clef_cpu_backend_ops;
}

/* the ops of each registry row (registry.c), loaded on first use, so that
 * a process that never asks for cuda never maps the CUDA libraries */
static const struct {
    const char               *name;
    const clef_backend_ops *(*load)(clef_error *err);
} loaders[] = {
    { "cpu", cpu_load },
    { "cuda", cuda_load },
};

const clef_backend_ops *
clef_backend_find(const char *name, clef_error *err)
{
    const clef_backend_entry  *e;
    size_t                     i;

    e = clef_backend_lookup(name != NULL ? name : "cpu",
                            name != NULL ? strlen(name) : 3);
    for (i = 0; e != NULL && i < sizeof(loaders) / sizeof(loaders[0]); i++) {
        if (strcmp(loaders[i].name, e->name) == 0) {
            return loaders[i].load(err);
        }
    }
    clef_error_set(err, 500, "backend_unknown", NULL,
                   "unknown backend '%s' (known: %s)", name,
                   clef_backend_names());
    return NULL;
}
