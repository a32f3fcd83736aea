/*
 * A view of one stored tensor: dtype (dtype.h) and shape as its container
 * says, data pointing into the mmapped file (never copied by the loader).
 *
 * A tensor's rows are at data, one after another, unless the container
 * says otherwise: a GGUF file holds some of the release's tensors split
 * in parts (the joint head's q, k and v) or with their rows or columns in
 * another order (the delta rule's value heads), so that a view may list
 * runs of rows stored apart (each with its own type) and spans of columns
 * stored elsewhere in the row.  Nothing is copied to undo that: every
 * reader goes through clef_tensor_row() / clef_tensor_row_to_f32(), which
 * follow both.
 */
#ifndef CLEF_TENSOR_H
#define CLEF_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "model/dtype.h"

#define CLEF_TENSOR_MAX_DIMS  8

/* Rows [row, row + n) of a tensor, stored as n rows at data, stride bytes
 * apart, of type dtype. */
typedef struct {
    int64_t      row, n;
    clef_dtype   dtype;
    const void  *data;
    size_t       stride;
} clef_tensor_run;

/* Columns [col, col + n) of every row of a tensor are its stored row's
 * columns [from, from + n). */
typedef struct {
    int64_t      col, n, from;
} clef_tensor_span;

typedef struct {
    const char  *name;
    clef_dtype   dtype;         /* with runs: the first run's */
    int          ndim;
    int64_t      shape[CLEF_TENSOR_MAX_DIMS];
    int64_t      numel;
    const void  *data;          /* with runs: the first run's */
    size_t       nbytes;        /* with runs: 0 */
    int                       n_runs;   /* 0: the rows are at data */
    const clef_tensor_run    *runs;     /* by row, covering every row */
    int                       n_spans;  /* 0: the columns in order */
    const clef_tensor_span   *spans;    /* by column, covering a row */
} clef_tensor;

/* Columns of a row (elements after the first dimension; 1 for a vector). */
int64_t clef_tensor_cols(const clef_tensor *t);

/* Stored row r of t: its bytes and type. */
const void *clef_tensor_row(const clef_tensor *t, int64_t r, clef_dtype *dt);

/* The types t's rows are stored in (at most max): their number. */
int clef_tensor_types(const clef_tensor *t, clef_dtype *out, int max);

/* 1 when t's rows are at data in order, columns in order. */
int clef_tensor_is_plain(const clef_tensor *t);

/* Columns [c0, c0 + n) of row r of a float tensor in fp32, exactly as its
 * type defines them, whichever blocks of the stored row they fall in. */
void clef_tensor_row_to_f32(const clef_tensor *t, int64_t r, int64_t c0,
    int64_t n, float *dst);

/* Columns [from, from + n) of one stored row of type dt in fp32 (the
 * blocks they touch are converted whole). */
void clef_dtype_cols_to_f32(clef_dtype dt, const void *row, int64_t from,
    int64_t n, float *dst);

/* Converts all t->numel elements of a float tensor (any type whose row in
 * dtype.h converts) to f32; zeros for another type. */
void clef_tensor_to_f32(const clef_tensor *t, float *dst);
/* Converts rows [row, row + n) of a 2-D float tensor to f32 (a row of a
 * block type is a whole number of blocks). */
void clef_tensor_rows_to_f32(const clef_tensor *t, int64_t row, int64_t n, float *dst);

/* The caller has copied what it needs of t (a plain tensor): its pages of the mapped file
 * leave this process's memory (the kernel keeps them in the page cache and
 * maps them again if t is read later), so converting a checkpoint costs
 * the copy and not the copy plus the file.  Only whole pages inside t's
 * bytes are released (a view's: each run's, from its first row to the end
 * of its last, or with its columns reordered its stored rows): a
 * neighbour's data is never touched.  t->data must
 * lie in a mapping of a file, as every tensor of a clef_model does
 * (released anonymous memory would read back as zeros). */
void clef_tensor_release(const clef_tensor *t);

/* 1 when t has exactly the given shape. */
int clef_tensor_has_shape(const clef_tensor *t, int ndim, const int64_t *shape);

#endif
