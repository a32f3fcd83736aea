/*
 * Device memory of the CUDA backend, in one place: the allocations that
 * live as long as the backend (weights: the backbone's, the head's, each
 * tower's), recorded so that one call frees them, and the buffers a media
 * tower grows per batch (pinned staging, its device copy, a workspace).
 * Every per-batch buffer grows with slack and is never shrunk; every
 * carve inside one starts 256-byte aligned (cuda_align256), so that the
 * GEMMs' alignments, part of their algorithm's key (gemm.h), never change
 * with the batch.
 */
#ifndef CLEF_CUDA_DEVMEM_H
#define CLEF_CUDA_DEVMEM_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "base/error.h"

typedef struct {
    void   **p;
    int      n, cap;
    size_t   bytes;     /* asked for, in all: what the memory plan counts */
} cuda_allocs;

/* A device buffer of bytes (16 for 0) recorded in a; `what` names its
 * owner in the error ("the weights", "the vision tower"). */
int     cuda_dev_alloc(cuda_allocs *a, size_t bytes, const char *what,
    void **out, clef_error *err);
/* Frees every buffer recorded in a; a is empty after. */
void    cuda_allocs_free(cuda_allocs *a);

size_t  cuda_align256(size_t v);

/* A tower's per-batch buffers: its plan's bytes staged in pinned host
 * memory and copied to dmeta with one upload, and its workspace. */
typedef struct {
    unsigned char  *hstage, *dmeta;
    size_t          stage_cap, dmeta_cap;
    void           *ws;
    size_t          ws_cap;
} cuda_stage;

/* Staging and its device copy of at least bytes each; `name` ("vision")
 * names them in the error.  The caller has waited for the stream: the
 * previous upload may read the staging buffer until it ends. */
int     cuda_stage_grow(cuda_stage *s, size_t bytes, const char *name,
    clef_error *err);
/* A workspace of at least bytes, for n of unit ("patches", "rows") in the
 * error. */
int     cuda_stage_ws(cuda_stage *s, size_t bytes, const char *name,
    int64_t n, const char *unit, clef_error *err);
/* The staged bytes to the device copy on stream st. */
int     cuda_stage_upload(cuda_stage *s, size_t bytes, cudaStream_t st,
    const char *name, clef_error *err);
void    cuda_stage_free(cuda_stage *s);

#endif
