/*
 * A GGUF file (v3, and v2 which differs only in not allowing big-endian
 * files), read-only: the header, every metadata key and value, every
 * tensor info, and the tensors' data mapped in place.
 *
 *   "GGUF", u32 version, u64 tensor count, u64 key count,
 *   keys:    string key, u32 value type, value
 *   tensors: string name, u32 dims, u64 ne[dims], u32 type, u64 offset
 *   padding to general.alignment (default 32), then the data section;
 *   a tensor's offset is from the data section's start, aligned.
 *
 * Strings are a u64 length and bytes.  Every count, length, size and
 * offset is checked against the file's length before it is used, in
 * arithmetic that cannot overflow: a truncated or corrupt file is an error
 * naming what is wrong and where, never a crash or an allocation larger
 * than the file.  Keys and tensor names must be unique.  A tensor of a type
 * ngx_clef does not compute with (quant.h) is refused naming the tensor and
 * the type; so is a row that is not a whole number of blocks.
 *
 * The metadata is copied out of the file (the header of a Clef GGUF is a
 * few MB: the tokenizer); the tensors are not.  With
 * CLEF_GGUF_HEADERS_ONLY the header is read with pread() and nothing is
 * mapped (data is NULL): what `nginx -t` checks.
 *
 * A model that llama-gguf-split cut into parts (PREFIX-00001-of-00003.gguf,
 * ...; gguf_split.h) opens from its first part as one file, as llama.cpp
 * loads it: the metadata is the first part's, the tensors those of every
 * part in order, each mapped from its own file.  Every part is read (with
 * headers only too) and checked: its split.no, the same split.count and
 * split.tensors.count, no tensor in two parts, and as many tensors in all
 * as split.tensors.count says.  A later part given alone is refused,
 * naming the first.
 */
#ifndef CLEF_GGUF_H
#define CLEF_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "model/dtype.h"
#include "model/quant.h"

#define CLEF_GGUF_MAX_DIMS   4      /* GGML's */
#define CLEF_GGUF_MAX_NAME   64     /* a tensor name is shorter (GGML's) */
#define CLEF_GGUF_ALIGNMENT  32     /* when general.alignment is absent */

typedef enum {
    CLEF_GGUF_UINT8   = 0,
    CLEF_GGUF_INT8    = 1,
    CLEF_GGUF_UINT16  = 2,
    CLEF_GGUF_INT16   = 3,
    CLEF_GGUF_UINT32  = 4,
    CLEF_GGUF_INT32   = 5,
    CLEF_GGUF_FLOAT32 = 6,
    CLEF_GGUF_BOOL    = 7,
    CLEF_GGUF_STRING  = 8,
    CLEF_GGUF_ARRAY   = 9,
    CLEF_GGUF_UINT64  = 10,
    CLEF_GGUF_INT64   = 11,
    CLEF_GGUF_FLOAT64 = 12,
    CLEF_GGUF_TYPE_COUNT
} clef_gguf_type;

typedef struct {
    const char  *s;             /* NUL-terminated copy (may hold NULs) */
    uint64_t     len;
} clef_gguf_str;

typedef struct clef_gguf_value clef_gguf_value;

/* One metadata value (a key's, or an element of an array of arrays). */
struct clef_gguf_value {
    const char      *key;       /* NULL inside an array */
    clef_gguf_type   type;
    union {
        uint64_t     u;         /* UINT8, UINT16, UINT32, UINT64, BOOL */
        int64_t      i;         /* INT8, INT16, INT32, INT64 */
        double       f;         /* FLOAT32 (widened exactly), FLOAT64 */
        clef_gguf_str  str;     /* STRING */
        struct {
            clef_gguf_type  elem;
            uint64_t        n;
            /* elem a number or BOOL: n packed little-endian values as the
             * file stores them; STRING: n clef_gguf_str; ARRAY: n
             * clef_gguf_value */
            const void     *data;
        } arr;
    } v;
};

typedef struct {
    const char        *name;
    uint32_t           type;            /* clef_ggml_type */
    clef_dtype         dtype;           /* its row of dtype.h */
    int                ndim;
    int64_t            ne[CLEF_GGUF_MAX_DIMS];  /* GGML order: ne[0] is a
                                                   row, contiguous; 1 past
                                                   ndim */
    int64_t            numel;
    uint64_t           offset;          /* of the data, in its part's file */
    int                part;            /* the split part holding it: 0 the
                                           file opened */
    uint64_t           nbytes;
    const void        *data;            /* NULL with headers only */
} clef_gguf_tensor;

typedef struct clef_gguf clef_gguf;

enum {
    CLEF_GGUF_HEADERS_ONLY = 1,         /* read the header, map nothing */
    CLEF_GGUF_ONE_PART     = 2          /* a split model's part alone: its
                                           own tensors, the others unread */
};

clef_gguf *clef_gguf_open(const char *path, int flags, clef_error *err);
/* A GGUF image in memory (kept by the caller while the result lives);
 * what names it in messages.  The fuzzer's and the tests' entry. */
clef_gguf *clef_gguf_open_mem(const void *data, size_t size,
    const char *what, clef_error *err);
void       clef_gguf_close(clef_gguf *g);

const char *clef_gguf_path(const clef_gguf *g);
uint32_t    clef_gguf_version(const clef_gguf *g);
uint32_t    clef_gguf_alignment(const clef_gguf *g);
uint64_t    clef_gguf_data_offset(const clef_gguf *g);
uint64_t    clef_gguf_file_size(const clef_gguf *g);
/* Files read: 1, or a split model's split.count; the path of part i (0:
 * clef_gguf_path()), NULL past the last. */
size_t      clef_gguf_part_count(const clef_gguf *g);
const char *clef_gguf_part_path(const clef_gguf *g, size_t i);

/* ---- metadata -------------------------------------------------------- */

size_t                 clef_gguf_kv_count(const clef_gguf *g);
const clef_gguf_value *clef_gguf_kv_at(const clef_gguf *g, size_t i);
/* NULL when the key is absent. */
const clef_gguf_value *clef_gguf_get(const clef_gguf *g, const char *key);

const char *clef_gguf_type_name(clef_gguf_type t);   /* "UINT32", ... */

/* A value as a number: any integer type (and BOOL) as int64 (-1 for a
 * UINT64 above INT64_MAX), FLOAT32/FLOAT64 as double.  -1 for another
 * type. */
int clef_gguf_value_int(const clef_gguf_value *v, int64_t *out);
int clef_gguf_value_float(const clef_gguf_value *v, double *out);

/* Element i of an array (i < n, not checked again). */
int clef_gguf_arr_int(const clef_gguf_value *a, uint64_t i, int64_t *out);
int clef_gguf_arr_float(const clef_gguf_value *a, uint64_t i, double *out);
const clef_gguf_str   *clef_gguf_arr_str(const clef_gguf_value *a,
    uint64_t i);
const clef_gguf_value *clef_gguf_arr_arr(const clef_gguf_value *a,
    uint64_t i);

/*
 * Typed look-ups for configuration: 0 with *out set; 1 when the key is
 * absent (err untouched); -1 when it has another type or (ints) lies
 * outside [lo, hi], err saying which key and why (CLEF_E_MODEL).
 * get_int takes any integer type; get_float FLOAT32, FLOAT64 or an
 * integer; get_arr an array whose elements have type elem (for an integer
 * elem, any integer type).
 */
int clef_gguf_get_int(const clef_gguf *g, const char *key, int64_t lo,
    int64_t hi, int64_t *out, clef_error *err);
int clef_gguf_get_float(const clef_gguf *g, const char *key, double *out,
    clef_error *err);
int clef_gguf_get_bool(const clef_gguf *g, const char *key, int *out,
    clef_error *err);
int clef_gguf_get_str(const clef_gguf *g, const char *key,
    const clef_gguf_str **out, clef_error *err);
int clef_gguf_get_arr(const clef_gguf *g, const char *key,
    clef_gguf_type elem, const clef_gguf_value **out, clef_error *err);

/* ---- tensors --------------------------------------------------------- */

size_t                  clef_gguf_tensor_count(const clef_gguf *g);
const clef_gguf_tensor *clef_gguf_tensor_at(const clef_gguf *g, size_t i);
/* NULL when absent. */
const clef_gguf_tensor *clef_gguf_tensor_find(const clef_gguf *g,
    const char *name);

#endif
