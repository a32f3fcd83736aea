/*
 * Device memory of the CUDA backend (see devmem.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_backend.h"
#include "devmem.h"

int
cuda_dev_alloc(cuda_allocs *a, size_t bytes, const char *what, void **out,
    clef_error *err)
{
    void        *p, **grown;
    cudaError_t  e;
    int          cap;

    if (a->n == a->cap) {
        cap = a->cap ? 2 * a->cap : 64;
        grown = realloc(a->p, (size_t) cap * sizeof(*grown));
        if (grown == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        }
        a->p = grown;
        a->cap = cap;
    }
    e = cudaMalloc(&p, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
            "cudaMalloc of %zu bytes for %s: %s", bytes, what,
            cudaGetErrorString(e));
    }
    a->p[a->n++] = p;
    a->bytes += bytes;
    *out = p;
    return 0;
}

void
cuda_allocs_free(cuda_allocs *a)
{
    int  i;

    for (i = 0; i < a->n; i++) {
        cudaFree(a->p[i]);
    }
    free(a->p);
    a->p = NULL;
    a->n = a->cap = 0;
    a->bytes = 0;
}

size_t
cuda_align256(size_t v)
{
    return (v + 255) / 256 * 256;
}

int
cuda_stage_grow(cuda_stage *s, size_t bytes, const char *name,
    clef_error *err)
{
    cudaError_t  e;
    size_t       cap = bytes + bytes / 4 + 4096;
    char         what[64];

    if (bytes > s->stage_cap) {
        if (s->hstage != NULL) {
            cudaFreeHost(s->hstage);
            s->hstage = NULL;
            s->stage_cap = 0;
        }
        e = cudaHostAlloc((void **) &s->hstage, cap, cudaHostAllocDefault);
        if (e != cudaSuccess) {
            s->hstage = NULL;
            snprintf(what, sizeof(what), "%s staging", name);
            return cuda_check(e, what, err);
        }
        s->stage_cap = cap;
    }
    if (bytes > s->dmeta_cap) {
        if (s->dmeta != NULL) {
            cudaFree(s->dmeta);
            s->dmeta = NULL;
            s->dmeta_cap = 0;
        }
        e = cudaMalloc((void **) &s->dmeta, cap);
        if (e != cudaSuccess) {
            s->dmeta = NULL;
            snprintf(what, sizeof(what), "%s metadata", name);
            return cuda_check(e, what, err);
        }
        s->dmeta_cap = cap;
    }
    return 0;
}

int
cuda_stage_ws(cuda_stage *s, size_t bytes, const char *name, int64_t n,
    const char *unit, clef_error *err)
{
    cudaError_t  e;

    if (s->ws != NULL && bytes <= s->ws_cap) {
        return 0;
    }
    if (s->ws != NULL) {
        cudaFree(s->ws);
        s->ws = NULL;
        s->ws_cap = 0;
    }
    bytes += bytes / 4 + 4096;
    e = cudaMalloc(&s->ws, bytes);
    if (e != cudaSuccess) {
        s->ws = NULL;
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
            "%s workspace of %zu bytes for %lld %s: %s", name, bytes,
            (long long) n, unit, cudaGetErrorString(e));
    }
    s->ws_cap = bytes;
    return 0;
}

int
cuda_stage_upload(cuda_stage *s, size_t bytes, cudaStream_t st,
    const char *name, clef_error *err)
{
    char  what[64];

    snprintf(what, sizeof(what), "%s metadata upload", name);
    return cuda_check(cudaMemcpyAsync(s->dmeta, s->hstage, bytes,
                                      cudaMemcpyHostToDevice, st),
                      what, err);
}

void
cuda_stage_free(cuda_stage *s)
{
    if (s->ws != NULL) {
        cudaFree(s->ws);
    }
    if (s->dmeta != NULL) {
        cudaFree(s->dmeta);
    }
    if (s->hstage != NULL) {
        cudaFreeHost(s->hstage);
    }
    s->hstage = s->dmeta = NULL;
    s->ws = NULL;
    s->stage_cap = s->dmeta_cap = s->ws_cap = 0;
}
