#include "model/tensor.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char  *dtype_names[CLEF_DTYPE_COUNT] = {
    "F32", "F16", "BF16", "I32", "I64", "U8"
};

static const size_t  dtype_sizes[CLEF_DTYPE_COUNT] = { 4, 2, 2, 4, 8, 1 };

const char *
clef_dtype_name(clef_dtype dt)
{
    return (unsigned) dt < CLEF_DTYPE_COUNT ? dtype_names[dt] : "?";
}

int
clef_dtype_from_name(const char *name, clef_dtype *dt)
{
    int  i;

    for (i = 0; i < CLEF_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_names[i]) == 0) {
            *dt = (clef_dtype) i;
            return 0;
        }
    }
    return -1;
}

size_t
clef_dtype_size(clef_dtype dt)
{
    return (unsigned) dt < CLEF_DTYPE_COUNT ? dtype_sizes[dt] : 0;
}

float
clef_bf16_to_f32(uint16_t h)
{
    uint32_t  u = (uint32_t) h << 16;
    float     f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

uint16_t
clef_f32_to_bf16(float f)
{
    uint32_t  u;

    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t) ((u >> 16) | 0x40);      /* quiet NaN */
    }
    u += 0x7fffu + ((u >> 16) & 1);                 /* round to nearest even */
    return (uint16_t) (u >> 16);
}

float
clef_f16_to_f32(uint16_t h)
{
    uint32_t  sign = (uint32_t) (h & 0x8000) << 16;
    uint32_t  exp = (h >> 10) & 0x1f;
    uint32_t  man = h & 0x3ff;
    uint32_t  u;
    float     f;

    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {                                    /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while ((man & 0x400) == 0) {
                man <<= 1;
                exp--;
            }
            u = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    memcpy(&f, &u, sizeof(f));
    return f;
}

static void
convert(clef_dtype dt, const void *src, int64_t n, float *dst)
{
    const uint16_t  *h = src;
    int64_t          i;

    switch (dt) {
    case CLEF_DTYPE_F32:
        memcpy(dst, src, (size_t) n * sizeof(float));
        break;
    case CLEF_DTYPE_BF16:
        for (i = 0; i < n; i++) {
            dst[i] = clef_bf16_to_f32(h[i]);
        }
        break;
    case CLEF_DTYPE_F16:
        for (i = 0; i < n; i++) {
            dst[i] = clef_f16_to_f32(h[i]);
        }
        break;
    default:
        memset(dst, 0, (size_t) n * sizeof(float));
        break;
    }
}

void
clef_tensor_to_f32(const clef_tensor *t, float *dst)
{
    convert(t->dtype, t->data, t->numel, dst);
}

void
clef_tensor_rows_to_f32(const clef_tensor *t, int64_t row, int64_t n, float *dst)
{
    int64_t  cols = t->ndim >= 2 ? t->numel / t->shape[0] : 1;
    size_t   es = clef_dtype_size(t->dtype);

    convert(t->dtype, (const char *) t->data + (size_t) (row * cols) * es, n * cols, dst);
}

int
clef_tensor_has_shape(const clef_tensor *t, int ndim, const int64_t *shape)
{
    int  i;

    if (t->ndim != ndim) {
        return 0;
    }
    for (i = 0; i < ndim; i++) {
        if (t->shape[i] != shape[i]) {
            return 0;
        }
    }
    return 1;
}

void
clef_tensor_release(const clef_tensor *t)
{
    uintptr_t  page = (uintptr_t) sysconf(_SC_PAGESIZE);
    uintptr_t  begin, end;

    if (t == NULL || t->data == NULL || t->nbytes == 0) {
        return;
    }
    begin = ((uintptr_t) t->data + page - 1) & ~(page - 1);
    end = ((uintptr_t) t->data + t->nbytes) & ~(page - 1);
    if (end > begin) {
        /* advice only: a failure leaves the pages where they were */
        (void) madvise((void *) begin, end - begin, MADV_DONTNEED);
    }
}
