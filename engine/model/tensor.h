/*
 * A view of one stored tensor: dtype (dtype.h) and shape as its container
 * says, data pointing into the mmapped file (never copied by the loader).
 */
#ifndef CLEF_TENSOR_H
#define CLEF_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "model/dtype.h"

#define CLEF_TENSOR_MAX_DIMS  8

typedef struct {
    const char  *name;
    clef_dtype   dtype;
    int          ndim;
    int64_t      shape[CLEF_TENSOR_MAX_DIMS];
    int64_t      numel;
    const void  *data;
    size_t       nbytes;
} clef_tensor;

/* Converts all t->numel elements of a float tensor (any type whose row in
 * dtype.h converts) to f32; zeros for another type. */
void clef_tensor_to_f32(const clef_tensor *t, float *dst);
/* Converts rows [row, row + n) of a 2-D float tensor to f32 (a row of a
 * block type is a whole number of blocks). */
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
