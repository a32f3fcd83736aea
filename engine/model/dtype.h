/*
 * How a tensor is stored: one row per storage type, with the traits every
 * reader of weights needs (what it is called, its block, its bytes, how its
 * values become fp32).  Storage only: how a backend multiplies is the
 * compute precision (base/precision.h), chosen apart, and where a backend
 * keeps a weight for its kernels is its own (the CPU's packed formats:
 * cpu/kernels/wpack.h, keyed by these types).
 *
 * GGUF's block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, and
 * read only Q2_K, Q3_K, the i-quants, TQ1_0, TQ2_0, MXFP4, NVFP4, Q1_0,
 * Q2_0) are
 * rows like the others: block size, bytes per block, GGUF's type id, and
 * the dequantizer and quantizer of model/quant.h, functions of the shape
 *
 *     void clef_<type>_to_f32(const void *blocks, float *dst, int64_t n);
 *
 * (n elements, a multiple of the block size: n / block blocks read).
 * Everything that reads weights through the table (clef_tensor_to_f32,
 * clef_tensor_rows_to_f32, the loaders' checks, the GGUF reader and
 * writer) takes every type of it.  Another type joins by its value here
 * and its row in dtype.c.
 */
#ifndef CLEF_DTYPE_H
#define CLEF_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    CLEF_DTYPE_F32 = 0,
    CLEF_DTYPE_F16,
    CLEF_DTYPE_BF16,
    CLEF_DTYPE_I32,
    CLEF_DTYPE_I64,
    CLEF_DTYPE_U8,
    CLEF_DTYPE_Q4_0,            /* GGUF's block types (quant.h) */
    CLEF_DTYPE_Q4_1,
    CLEF_DTYPE_Q5_0,
    CLEF_DTYPE_Q5_1,
    CLEF_DTYPE_Q8_0,
    CLEF_DTYPE_Q4_K,
    CLEF_DTYPE_Q5_K,
    CLEF_DTYPE_Q6_K,
    CLEF_DTYPE_Q2_K,            /* read only: no quantizer */
    CLEF_DTYPE_Q3_K,
    CLEF_DTYPE_IQ4_NL,
    CLEF_DTYPE_IQ4_XS,
    CLEF_DTYPE_IQ3_XXS,
    CLEF_DTYPE_IQ3_S,
    CLEF_DTYPE_IQ2_XXS,
    CLEF_DTYPE_IQ2_XS,
    CLEF_DTYPE_IQ2_S,
    CLEF_DTYPE_IQ1_S,
    CLEF_DTYPE_IQ1_M,
    CLEF_DTYPE_TQ1_0,
    CLEF_DTYPE_TQ2_0,
    CLEF_DTYPE_MXFP4,
    CLEF_DTYPE_NVFP4,
    CLEF_DTYPE_Q1_0,
    CLEF_DTYPE_Q2_0,
    CLEF_DTYPE_COUNT
} clef_dtype;

/* n elements (a multiple of the type's block) from src to fp32 in dst,
 * exactly as the format defines them. */
typedef void (*clef_dtype_to_f32_fn)(const void *src, float *dst, int64_t n);
/* n elements (a multiple of the block) from fp32 src into dst: the
 * quantizer of a block type (quant.h), a rounding conversion of a scalar
 * one. */
typedef void (*clef_dtype_from_f32_fn)(const float *src, void *dst,
    int64_t n);

typedef struct {
    const char            *name;          /* "BF16", "Q8_0" */
    int                    safetensors;   /* 1: a safetensors dtype of
                                             this name */
    int                    ggml;          /* GGUF's tensor type id, -1: none */
    int64_t                block;         /* elements per block; 1: scalar */
    size_t                 block_bytes;   /* bytes of one block */
    clef_dtype_to_f32_fn   to_f32;        /* NULL: not a float type (no
                                             weight is stored in it) */
    clef_dtype_from_f32_fn from_f32;      /* NULL likewise, and for a
                                             type read only */
} clef_dtype_traits;

/* The row of dt, NULL for a value outside the table. */
const clef_dtype_traits *clef_dtype_traits_of(clef_dtype dt);

/* "F32", "F16", "BF16", "I32", "I64", "U8" (the safetensors spelling),
 * a block type's GGUF name; "?" outside the table. */
const char *clef_dtype_name(clef_dtype dt);

/* A safetensors dtype name to its type; -1 when safetensors has none of
 * that name. */
int         clef_dtype_from_name(const char *name, clef_dtype *dt);

/* GGUF's tensor type id to its type; -1 when the table has none. */
int         clef_dtype_from_ggml(int ggml, clef_dtype *dt);

/* How much of a model is stored in one type (model.h's census). */
typedef struct {
    clef_dtype  dtype;
    int         tensors;    /* matrices with rows of this type */
    int64_t     values;
    int64_t     bytes;      /* as stored */
    int64_t     q8_bytes;   /* as the CPU's integer products keep them */
} clef_weight_type;

/* Bytes n values of a row of dt take at precision=q8 (the CPU's integer
 * products' panels; model_types.c): a float type's and NVFP4's as
 * stored. */
int64_t     clef_dtype_q8_bytes(clef_dtype dt, int64_t n);

/* How a model's matrices are stored, as its default precision sees it. */
typedef enum {
    CLEF_WEIGHTS_FLOAT = 0,         /* F32, F16, BF16 only */
    CLEF_WEIGHTS_BLOCKS,            /* block types q8 keeps at about
                                       their size (Q8_0, Q4_K, IQ4_XS, ...) */
    CLEF_WEIGHTS_BLOCKS_EXPANDED    /* block types q8 would hold at more
                                       than 1.2x the file's bytes (the
                                       IQ2/IQ3 grids, IQ1, TQ, Q1_0) */
} clef_weights_kind;

/* Bytes of one element of a scalar type; 0 for a block type (use
 * clef_dtype_bytes) and outside the table. */
size_t      clef_dtype_size(clef_dtype dt);

/* Bytes of n elements; -1 when n is not a whole number of blocks. */
int64_t     clef_dtype_bytes(clef_dtype dt, int64_t n);

/* 1 when values of dt convert to fp32 (a weight may be stored in it). */
int         clef_dtype_is_float(clef_dtype dt);

/* 1 for a block type (more than one element per block). */
int         clef_dtype_is_block(clef_dtype dt);

/* A type by its name as clef_dtype_name() spells it ("Q4_K", "bf16" in any
 * case too); -1 when the table has none. */
int         clef_dtype_from_any_name(const char *name, clef_dtype *dt);

float    clef_bf16_to_f32(uint16_t h);
uint16_t clef_f32_to_bf16(float f);     /* round to nearest even, NaN kept */
float    clef_f16_to_f32(uint16_t h);

#endif
