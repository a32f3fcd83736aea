/*
 * Batches and the backend registry: "cpu" is linked in; "cuda" lives in
 * libclef_cuda.so, opened with dlopen the first time it is asked for, so
 * that a process that never asks (an nginx worker, `nginx -t`) never maps
 * the CUDA libraries.  A new backend is one more registry row.
 */
#include "backend/backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/backend_cpu.h"

#define CUDA_LIBRARY  "libclef_cuda.so"
#define CUDA_SYMBOL   "clef_cuda_backend_ops"

void
clef_batch_init(clef_batch *b, const clef_record * const *records, int n_records,
    int32_t *cu_seqlens)
{
    int  r;

    b->n_records = n_records;
    b->records = records;
    b->cu_seqlens = cu_seqlens;
    b->positions = NULL;
    b->spans = NULL;
    b->n_spans = 0;
    b->n_items = 0;
    cu_seqlens[0] = 0;
    for (r = 0; r < n_records; r++) {
        cu_seqlens[r + 1] = cu_seqlens[r] + (int32_t) records[r]->ids.n;
    }
}

int
clef_batch_set_media(clef_batch *b, clef_error *err)
{
    const clef_record  *rec;
    clef_media_span    *spans;
    int32_t            *pos;
    int64_t             T = clef_batch_tokens(b), t, n;
    int                 r, k, items = 0, m = 0, a;

    for (r = 0; r < b->n_records; r++) {
        items += b->records[r]->n_media;
        m += b->records[r]->n_spans;
    }
    if (items == 0) {
        return 0;
    }
    spans = calloc((size_t) m + 1, sizeof(*spans));
    pos = malloc(sizeof(int32_t) * 3 * (size_t) T);
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
        for (a = 0; a < 3; a++) {
            for (t = 0; t < n; t++) {
                pos[a * T + b->cu_seqlens[r] + t] = rec->positions != NULL
                    ? rec->positions[a * n + t] : (int32_t) t;
            }
        }
        for (k = 0; k < rec->n_spans; k++, m++) {
            spans[m] = rec->spans[k];
            spans[m].start += b->cu_seqlens[r];
            spans[m].item += items;
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
clef_batch_options(const clef_batch *b)
{
    int  r, n = 0;

    for (r = 0; r < b->n_records; r++) {
        n += b->records[r]->n_options;
    }
    return n;
}

static pthread_mutex_t          cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static const clef_backend_ops  *cuda_ops;

/* First next to the object this code is linked into (build/clef, or the
 * nginx module's .so), then the dynamic linker's own search
 * (LD_LIBRARY_PATH, the system paths). */
static const clef_backend_ops *
cuda_find(clef_error *err)
{
    Dl_info      info;
    char         path[PATH_MAX], first[512] = "";
    const char  *slash;
    void        *h = NULL, *sym;

    pthread_mutex_lock(&cuda_lock);
    if (cuda_ops != NULL) {
        pthread_mutex_unlock(&cuda_lock);
        return cuda_ops;
    }

    if (dladdr((void *) clef_backend_find, &info) != 0 && info.dli_fname != NULL
        && (slash = strrchr(info.dli_fname, '/')) != NULL
        && (size_t) (slash - info.dli_fname) + sizeof(CUDA_LIBRARY) + 1 < sizeof(path))
    {
        snprintf(path, sizeof(path), "%.*s/%s", (int) (slash - info.dli_fname),
                 info.dli_fname, CUDA_LIBRARY);
        h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            snprintf(first, sizeof(first), "%s", dlerror());
        }
    }
    if (h == NULL) {
        h = dlopen(CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    }
    if (h == NULL) {
        /* the search by name failed too: say why the nearby file, if there
         * was one, did not load, as that is the more useful of the two */
        const char  *why = dlerror();

        clef_error_set(err, 500, "backend_unavailable", NULL,
                       "the CUDA backend is not available: %s",
                       strstr(first, "No such file") == NULL && first[0] != '\0'
                       ? first : why);
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
    /* the library stays loaded for the life of the process: its ops table
     * is handed out */
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

static const clef_backend_entry  registry[] = {
    { "cpu", "fp32 on the CPU cores, a thread pool",
      0, 1, cpu_load },
    { "cuda", "bf16 on NVIDIA GPUs (libclef_cuda.so, cuBLASLt)",
      1, 1, cuda_find },
    { NULL, NULL, 0, 0, NULL }
};

const clef_backend_entry *
clef_backend_registry(void)
{
    return registry;
}

const clef_backend_entry *
clef_backend_lookup(const char *name, size_t len)
{
    const clef_backend_entry  *e;

    for (e = registry; e->name != NULL; e++) {
        if (strlen(e->name) == len && memcmp(e->name, name, len) == 0) {
            return e;
        }
    }
    return NULL;
}

static pthread_once_t  names_once = PTHREAD_ONCE_INIT;
static char            names[128];

static void
names_make(void)
{
    const clef_backend_entry  *e;
    size_t                     n = 0;

    for (e = registry; e->name != NULL && n < sizeof(names); e++) {
        n += (size_t) snprintf(names + n, sizeof(names) - n, "%s%s",
                               n ? ", " : "", e->name);
    }
}

const char *
clef_backend_names(void)
{
    pthread_once(&names_once, names_make);
    return names;
}

const clef_backend_ops *
clef_backend_find(const char *name, clef_error *err)
{
    const clef_backend_entry  *e;

    e = clef_backend_lookup(name != NULL ? name : "cpu",
                            name != NULL ? strlen(name) : 3);
    if (e == NULL) {
        clef_error_set(err, 500, "backend_unknown", NULL,
                       "unknown backend '%s' (known: %s)", name,
                       clef_backend_names());
        return NULL;
    }
    return e->load(err);
}

const char *
clef_precision_name(clef_precision p)
{
    switch (p) {
    case CLEF_PRECISION_FP32:
        return "fp32";
    case CLEF_PRECISION_BF16:
        return "bf16";
    default:
        return "default";
    }
}

int
clef_precision_parse(const char *name, size_t len, clef_precision *p)
{
    if (len == 4 && memcmp(name, "fp32", 4) == 0) {
        *p = CLEF_PRECISION_FP32;
        return 0;
    }
    if (len == 4 && memcmp(name, "bf16", 4) == 0) {
        *p = CLEF_PRECISION_BF16;
        return 0;
    }
    return -1;
}
