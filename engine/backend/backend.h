/*
 * The contract every compute backend implements: load weights once, run a
 * packed batch of records, return option logits.  The names and
 * capabilities of the backends, which nginx's workers read too, are
 * registry.h; the ops exist only in the engine (clef_backend_find).
 *
 * A batch is several encoded records run as one packed sequence, without
 * padding: record r owns tokens [cu_seqlens[r], cu_seqlens[r+1]).  Nothing
 * crosses a record boundary (conv, delta-rule state, attention), and no
 * arithmetic may depend on a record's neighbours or position in the batch
 * or on the thread count: the logits of a record are bit for bit those of
 * running it alone (docs/design/precision.md, "Determinism").
 *
 * What later features add without changing this interface:
 *   - media (images, videos and audio): a batch may carry 3-axis
 *     M-RoPE positions per token, its records' media items and spans of
 *     tokens whose embeddings come from the encoder of an item's kind;
 *     text-only batches leave all of it NULL and pay nothing.  Each backend
 *     has one encoder per kind it runs (CPU: engine/cpu/backend_cpu.c's
 *     table, the image kind on engine/cpu/model/vision.c; CUDA:
 *     cuda/backend.c's table, cuda/vision.c) and refuses a batch holding a
 *     kind it has none for (400 <field>_unsupported, media/kinds.h).
 *   - tensor parallelism and replicas: the engine opens one backend per
 *     replica with the replica's devices and tensor-parallel size, and runs
 *     one executor thread per replica.
 *   - the watchdog: a backend calls opts->progress after every layer (or,
 *     where a whole forward takes milliseconds, after each forward), so a
 *     long forward is never mistaken for a hung one.
 *   - chunked prefill: a long record may run in parts, one batch after
 *     another, so that short records run between them (the engine's
 *     scheduler decides, serve/scheduler.h).  A backend that can (seq_open
 *     not NULL: the CPU one) keeps what a part leaves for the next in a
 *     clef_backend_seq of the record; the CUDA backend cannot yet and runs
 *     every record whole.  A batch whose parts is NULL holds whole records
 *     only and is run exactly as before.
 */
#ifndef CLEF_BACKEND_H
#define CLEF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend/registry.h"
#include "base/error.h"
#include "model/model.h"
#include "protocol/encode.h"

/*
 * Parts of a record.  A part is tokens [offset, offset + len) of its
 * record; the parts of a record run in order, one per batch, each starting
 * where the one before ended, at a multiple of CLEF_PART_ALIGN.  What a
 * part leaves for the next (the CPU: the delta-rule state, the conv's
 * last inputs, the attention layers' keys and values, the final-norm
 * rows and the media's encoder rows) is kept in the record's
 * clef_backend_seq, opened by the backend before the first part and
 * closed after the last (or when the record is dropped between parts).
 * Only the batch holding a record's last part yields its logits, and they
 * are to the bit those of the record run whole: CLEF_PART_ALIGN is the
 * blocking the arithmetic counts from a record's first token (the CPU's
 * 64-token delta-rule chunks and 64-query attention blocks; its 512-key
 * blocks are counted from the record's start over the kept keys, so they
 * do not constrain where a part starts).  After a failed forward a seq
 * holds nothing usable: the record is answered with the error and its seq
 * closed.  CLEF_PART_ALIGN is registry.h's (the configuration checks
 * chunk_tokens against it).
 */

typedef struct clef_backend_seq  clef_backend_seq;

typedef struct {
    clef_backend_seq            *seq;         /* NULL: the record whole */
    int64_t                      offset;      /* of the part in the record */
    int64_t                      len;
    int                          last;        /* the record's last part */
} clef_batch_part;

typedef struct {
    int                          n_records;
    const clef_record * const   *records;     /* spans are record-relative */
    const int32_t               *cu_seqlens;  /* [n_records + 1], cu_seqlens[0] = 0 */
    /* NULL for text: each record's tokens are at positions 0, 1, 2, ... on
     * every axis.  Else [3][T]: temporal, height, width (M-RoPE). */
    const int32_t               *positions;
    /* Tokens [start, start + len) of the packed batch take their
     * embeddings from row `row` onwards of media item `item`'s encoder
     * output instead of the embedding table (media/media.h); NULL when
     * n_spans is 0 */
    const clef_media_span       *spans;
    int                          n_spans;
    int                          n_items;     /* the records' media items */
    /* NULL: every record whole.  Else [n_records]: record r contributes
     * part parts[r] (cu_seqlens count the parts' tokens; positions and
     * spans are those of the parts' tokens, spans cut at a part's ends) */
    const clef_batch_part       *parts;
} clef_batch;

/* Builds cu_seqlens for records (caller's array of n_records + 1). */
void    clef_batch_init(clef_batch *b, const clef_record * const *records,
    int n_records, int32_t *cu_seqlens);
/* The same for parts of records (parts[r] of records[r]; a whole record is
 * a part { NULL, 0, ids.n, 1 }). */
void    clef_batch_init_parts(clef_batch *b, const clef_record * const *records,
    const clef_batch_part *parts, int n_records, int32_t *cu_seqlens);

/*
 * The media of a batch from its records' items (encode.h), whatever their
 * kind: media item m is the m-th item counting the records' items in
 * record order; the spans are the records' spans, their starts in the
 * packed batch and their items in that numbering; positions are every
 * token's M-RoPE positions (record-relative; a text-only record counts 0,
 * 1, 2, ... on every axis).  A batch without media is left as it is, with
 * nothing allocated.  clef_batch_free_media() releases what this
 * allocated.  -1 (500) when out of memory.
 */
int     clef_batch_set_media(clef_batch *b, clef_error *err);
void    clef_batch_free_media(clef_batch *b);

/* Media item m (clef_batch_set_media's numbering); NULL past the last.
 * Each backend runs the items of a kind through its encoder for that kind
 * and refuses a batch holding a kind it has none for. */
const clef_media_item *clef_batch_item(const clef_batch *b, int m);
int64_t clef_batch_tokens(const clef_batch *b);
/* The logits a forward yields: the options of the records whose last part
 * (or whole self) is in the batch. */
int     clef_batch_options(const clef_batch *b);
/* 1 when record r of the batch yields logits (its last part is there). */
int     clef_batch_last(const clef_batch *b, int r);

typedef struct {
    int          threads;     /* CPU worker threads; 0 = one per core */
    int          device;      /* the replica's first (or only) device */
    int          tp;          /* tensor-parallel ranks; 0 or 1: none */
    int          n_devices;   /* devices of the replica (tp of them), 0:
                                 just `device` */
    const int   *devices;
    clef_precision precision;
    /* the CUDA backend's memory plan (device_plan.h): the bytes it may use
     * on each device (gpu_memory=; 0: what the device has free) and the
     * batch it plans for (clef_engine max_batch_tokens and the records a
     * batch holds; 0 tokens: no check at open) */
    int64_t      gpu_memory;
    int64_t      batch_tokens;
    int          batch_records;
    /* called after every layer of a forward (CPU) or after each forward
     * (CUDA), from the executor's thread; may be NULL */
    void       (*progress)(void *ctx);
    void        *progress_ctx;
} clef_backend_opts;

typedef struct clef_backend clef_backend;

typedef struct {
    const char  *name;
    int   (*open)(const clef_model *m, const clef_backend_opts *o,
                  clef_backend **out, clef_error *err);
    /* logits: one float per option of every record whose last part is in
     * the batch, in record order, then question order, then encoder option
     * order (clef_batch_options()).
     * An error of type "device_fault" says the backend is unusable until
     * closed and opened again (a poisoned CUDA context): the engine does
     * that for this replica alone. */
    int   (*forward)(clef_backend *b, const clef_batch *batch, float *logits,
                     clef_error *err);
    /* hidden: the backbone's final-norm output, [tokens][hidden_size] f32,
     * packed like the batch (a part's rows for a part; for tests and
     * --raw). */
    int   (*hidden)(clef_backend *b, const clef_batch *batch, float *hidden,
                    clef_error *err);
    void  (*close)(clef_backend *b);
    /* one line for logs and `clef bench`: what computes, on what (threads,
     * device, kernels, library versions) */
    const char *(*describe)(const clef_backend *b);
    /* chunked prefill (see clef_batch_part): the state of record rec run
     * in parts, on this backend; rec must outlive it.  NULL in a backend
     * that runs records whole (CUDA, for now). */
    int   (*seq_open)(clef_backend *b, const clef_record *rec,
                      clef_backend_seq **out, clef_error *err);
    void  (*seq_close)(clef_backend *b, clef_backend_seq *s);
} clef_backend_ops;

/* The ops of a backend by name; NULL with err filled ("unknown backend",
 * "the CUDA backend is not available: ...") otherwise. */
const clef_backend_ops *clef_backend_find(const char *name, clef_error *err);

/* 1 when the batch carries media positions or spans (text-only backends
 * refuse it with err filled). */
int     clef_batch_has_media(const clef_batch *b, const char *backend,
    clef_error *err);

#endif
