/*
 * A view of one stored tensor: dtype and shape as the safetensors header
 * says, data pointing into the mmapped file (never copied by the loader).
 */
#ifndef CLEF_TENSOR_H
#define CLEF_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#define CLEF_TENSOR_MAX_DIMS  8

typedef enum {
    CLEF_DTYPE_F32 = 0,
    CLEF_DTYPE_F16,
    CLEF_DTYPE_BF16,
    CLEF_DTYPE_I32,
    CLEF_DTYPE_I64,
    CLEF_DTYPE_U8,
    CLEF_DTYPE_COUNT
} clef_dtype;

typedef struct {
    const char  *name;
    clef_dtype   dtype;
    int          ndim;
    int64_t      shape[CLEF_TENSOR_MAX_DIMS];
    int64_t      numel;
    const void  *data;
    size_t       nbytes;
} clef_tensor;

/* "F32", "F16", "BF16", "I32", "I64", "U8" (the safetensors spelling). */
const char *clef_dtype_name(clef_dtype dt);
int         clef_dtype_from_name(const char *name, clef_dtype *dt);
size_t      clef_dtype_size(clef_dtype dt);

float    clef_bf16_to_f32(uint16_t h);
uint16_t clef_f32_to_bf16(float f);          /* round to nearest even, NaN kept */
float    clef_f16_to_f32(uint16_t h);

/* Converts all t->numel elements of a float tensor (F32/F16/BF16) to f32. */
void clef_tensor_to_f32(const clef_tensor *t, float *dst);
/* Converts rows [row, row + n) of a 2-D float tensor to f32. */
void clef_tensor_rows_to_f32(const clef_tensor *t, int64_t row, int64_t n, float *dst);

/* The caller has copied what it needs of t: its pages of the mapped file
 * leave this process's memory (the kernel keeps them in the page cache and
 * maps them again if t is read later), so converting a checkpoint costs
 * the copy and not the copy plus the file.  Only whole pages inside t's
 * bytes are released: a neighbour's data is never touched.  t->data must
 * lie in a mapping of a file, as every tensor of a clef_model does
 * (released anonymous memory would read back as zeros). */
void clef_tensor_release(const clef_tensor *t);

/* 1 when t has exactly the given shape. */
int clef_tensor_has_shape(const clef_tensor *t, int ndim, const int64_t *shape);

#endif
