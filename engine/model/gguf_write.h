/*
 * Writing a GGUF file (v3, the layout gguf.h reads): any set of metadata
 * values and tensors of any type of quant.h.
 *
 * Metadata is encoded as it is added, in that order.  Tensors are laid out
 * in the order added, each at an offset that is a multiple of the
 * alignment (general.alignment when it was added as a UINT32, else 32),
 * and their data is produced only while the file is written, a slice of
 * rows at a time: a tensor of a real 27B checkpoint never needs to exist
 * whole in memory, in f32 or in any other form.
 *
 * A file is written beside its path and renamed into place once complete:
 * a reader never sees half of one.
 */
#ifndef CLEF_GGUF_WRITE_H
#define CLEF_GGUF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "model/gguf.h"

typedef struct clef_gguf_writer clef_gguf_writer;

clef_gguf_writer *clef_gguf_writer_new(void);
void              clef_gguf_writer_free(clef_gguf_writer *w);

/*
 * Metadata.  Each returns 0, or -1 with err filled: a key given twice, a
 * key that is empty or holds a NUL, an unknown type, no memory.
 */
int clef_gguf_put_uint(clef_gguf_writer *w, const char *key,
    clef_gguf_type type, uint64_t v, clef_error *err);     /* UINT*, BOOL */
int clef_gguf_put_int(clef_gguf_writer *w, const char *key,
    clef_gguf_type type, int64_t v, clef_error *err);      /* INT* */
int clef_gguf_put_float(clef_gguf_writer *w, const char *key,
    clef_gguf_type type, double v, clef_error *err);       /* FLOAT32/64 */
int clef_gguf_put_str(clef_gguf_writer *w, const char *key, const char *s,
    size_t len, clef_error *err);
/* An array of n numbers or BOOLs, packed little-endian as the file holds
 * them (n * the element's size bytes at data). */
int clef_gguf_put_arr(clef_gguf_writer *w, const char *key,
    clef_gguf_type elem, const void *data, uint64_t n, clef_error *err);
int clef_gguf_put_arr_str(clef_gguf_writer *w, const char *key,
    const clef_gguf_str *s, uint64_t n, clef_error *err);
/* Any value as gguf.h reads it (nested arrays included), under key. */
int clef_gguf_put_value(clef_gguf_writer *w, const char *key,
    const clef_gguf_value *v, clef_error *err);

/*
 * Tensors.  ne in GGML order (ne[0] values per row, contiguous), ndim 1-4;
 * ne[0] a multiple of the type's block.  The rows are ne[1] * ne[2] *
 * ne[3] rows of ne[0] values.
 */

/* Fills rows [row, row + n) of the tensor, in the tensor's type (raw) or
 * as f32 (to be quantized by the writer). */
typedef int (*clef_gguf_rows_fn)(void *ctx, int64_t row, int64_t n,
    void *dst, clef_error *err);

/* data: the tensor's bytes in its type, kept by the caller until written. */
int clef_gguf_add_tensor(clef_gguf_writer *w, const char *name, uint32_t type,
    int ndim, const int64_t *ne, const void *data, clef_error *err);
/* src: its values in f32, quantized to type as the file is written. */
int clef_gguf_add_tensor_f32(clef_gguf_writer *w, const char *name,
    uint32_t type, int ndim, const int64_t *ne, const float *src,
    clef_error *err);
/* Rows produced on demand: raw in the tensor's type, or f32 to quantize. */
int clef_gguf_add_tensor_rows(clef_gguf_writer *w, const char *name,
    uint32_t type, int ndim, const int64_t *ne, int f32, clef_gguf_rows_fn fn,
    void *ctx, clef_error *err);

/* Every byte 0 (every value 0 in any type), left as a hole in the file:
 * real shapes on a disk without room for their data. */
int clef_gguf_add_tensor_zero(clef_gguf_writer *w, const char *name,
    uint32_t type, int ndim, const int64_t *ne, clef_error *err);

int clef_gguf_writer_write(clef_gguf_writer *w, const char *path,
    clef_error *err);

#endif
