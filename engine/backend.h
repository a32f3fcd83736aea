/*
 * The interface every compute backend implements (CPU now, CUDA later):
 * load weights once, run a packed batch of records, return option logits.
 *
 * A batch is several encoded records run as one packed sequence, without
 * padding: record r owns tokens [cu_seqlens[r], cu_seqlens[r+1]).  Nothing
 * crosses a record boundary (conv, delta-rule state, attention), so the
 * logits equal those of running each record alone.
 */
#ifndef CLEF_BACKEND_H
#define CLEF_BACKEND_H

#include <stdint.h>

#include "encode.h"
#include "error.h"
#include "model.h"

typedef struct {
    int                          n_records;
    const clef_record * const   *records;     /* spans are record-relative */
    const int32_t               *cu_seqlens;  /* [n_records + 1], cu_seqlens[0] = 0 */
} clef_batch;

/* Builds cu_seqlens for records (caller's array of n_records + 1). */
void    clef_batch_init(clef_batch *b, const clef_record * const *records,
    int n_records, int32_t *cu_seqlens);
int64_t clef_batch_tokens(const clef_batch *b);
int     clef_batch_options(const clef_batch *b);

typedef struct {
    int  threads;     /* CPU worker threads; 0 = one per core */
    int  device;      /* CUDA device ordinal */
} clef_backend_opts;

typedef struct clef_backend clef_backend;

typedef struct {
    const char  *name;
    int   (*open)(const clef_model *m, const clef_backend_opts *o,
                  clef_backend **out, clef_error *err);
    /* logits: one float per option of every record, in record order, then
     * question order, then encoder option order (clef_batch_options()). */
    int   (*forward)(clef_backend *b, const clef_batch *batch, float *logits,
                     clef_error *err);
    /* hidden: the backbone's final-norm output, [tokens][hidden_size] f32,
     * packed like the batch (for tests and --raw). */
    int   (*hidden)(clef_backend *b, const clef_batch *batch, float *hidden,
                    clef_error *err);
    void  (*close)(clef_backend *b);
} clef_backend_ops;

/* "cpu" is built in; "cuda" is looked up in libclef_cuda.so with dlopen, so
 * that processes that never ask for it never map the CUDA libraries.
 * NULL with err filled ("no CUDA device", "unknown backend") otherwise. */
const clef_backend_ops *clef_backend_find(const char *name, clef_error *err);

#endif
