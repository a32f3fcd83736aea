/*
 * What the engine can compute with, as the configuration sees it: the
 * backends' names and capabilities, and the precisions (base/precision.h).
 * Part of the client library (an nginx worker and `nginx -t` read it): no
 * backend code is linked by it.  The ops themselves are
 * clef_backend_find()'s, in the engine (backend.h).  A new backend is one
 * more row here and one loader in backend.c.
 */
#ifndef CLEF_REGISTRY_H
#define CLEF_REGISTRY_H

#include <stddef.h>

#include "base/precision.h"
#include "model/dtype.h"

#define CLEF_MAX_DEVICES  64      /* = CLEF_STATS_REPLICAS (stats.h) */

/* Chunked prefill: where a part of a record may start (a multiple of this
 * many tokens), which clef_engine chunk_tokens= is checked against;
 * backend.h's clef_batch_part says why it is 64. */
#define CLEF_PART_ALIGN   64

/* A precision's bit in a set of precisions (clef_backend_entry). */
#define CLEF_PRECISION_BIT(p)  (1u << (p))

typedef struct {
    const char  *name;
    const char  *what;          /* one line for messages and --help */
    int          uses_devices;  /* devices= means something */
    int          tensor_parallel;  /* tp= above 1 means something (the
                                      backend itself refuses at open a
                                      layout it cannot run) */
    clef_precision  precision;  /* what CLEF_PRECISION_DEFAULT means on it */
    clef_precision  precision_blocks;  /* and on a model whose matrices
                                          are block-quantized in types
                                          q8 keeps at about their size
                                          (CLEF_WEIGHTS_BLOCKS: a GGUF
                                          file's Q4_K_M, IQ4_XS, ...) */
    unsigned     precisions;    /* CLEF_PRECISION_BIT() of each it
                                   computes in (precision= names one) */
    unsigned     media;         /* the media kinds it has an encoder for
                                   (CLEF_MEDIA_BIT(), media/media.h): a
                                   kind outside it is refused by name
                                   before anything is decoded */
    unsigned     media_tp;      /* of those, the kinds it encodes when tp
                                   is above 1 (`nginx -t` takes the rest
                                   out of what the model accepts) */
} clef_backend_entry;

/* Every backend this build knows, in a NULL-named-terminated table. */
const clef_backend_entry *clef_backend_registry(void);

/* The entry named name[0..len), or NULL. */
const clef_backend_entry *clef_backend_lookup(const char *name, size_t len);

/* The media kinds (CLEF_MEDIA_BIT()) the backend named name[0..len)
 * encodes at tensor parallelism tp; 0 for a name that is no backend. */
unsigned clef_backend_media(const char *name, size_t len, int tp);

/* Why the backend named name[0..len) does not compute at precision p
 * ("precision=fp32 is for backend=cpu; the CUDA backend computes in
 * bf16"), written into why; NULL when it does (any backend does at
 * CLEF_PRECISION_DEFAULT) or is no backend. */
const char *clef_backend_precision_refusal(const char *name, size_t len,
    clef_precision p, char *why, size_t size);

/* The precision the backend named name[0..len) computes in when asked
 * for p: p itself, or for CLEF_PRECISION_DEFAULT the backend's own for
 * weights of that kind (model.h's clef_model_weights_kind);
 * CLEF_PRECISION_DEFAULT for a name that is no backend. */
clef_precision clef_backend_precision(const char *name, size_t len,
    clef_precision p, clef_weights_kind kind);

/* "cpu, cuda": the names, for messages. */
const char *clef_backend_names(void);

#endif
