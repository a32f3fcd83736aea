#include "model/tensor.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void
convert(clef_dtype dt, const void *src, int64_t n, float *dst)
{
    const clef_dtype_traits  *tr = clef_dtype_traits_of(dt);

    if (tr == NULL || tr->to_f32 == NULL) {
        memset(dst, 0, (size_t) n * sizeof(float));
        return;
    }
    tr->to_f32(src, dst, n);
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
    int64_t  skip = clef_dtype_bytes(t->dtype, row * cols);

    convert(t->dtype, (const char *) t->data + (skip > 0 ? skip : 0), n * cols,
            dst);
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
