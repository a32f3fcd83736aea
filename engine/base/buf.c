#include "base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/mem.h"

int
clef_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t  n;
    void   *q;

    if (need <= *cap) {
        return 0;
    }
    n = *cap ? *cap : 64;
    while (n < need) {
        if (n > ((size_t) -1) / 2 / elem) {
            return -1;
        }
        n *= 2;
    }
    q = clef_mem_realloc(*p, n * elem);
    if (q == NULL) {
        return -1;
    }
    *p = q;
    *cap = n;
    return 0;
}

int
clef_buf_reserve(clef_buf *b, size_t extra)
{
    if (b->len + extra + 1 < b->len) {
        return -1;
    }
    return clef_grow((void **) &b->data, &b->cap, b->len + extra + 1, 1);
}

int
clef_buf_append(clef_buf *b, const void *p, size_t n)
{
    if (clef_buf_reserve(b, n) != 0) {
        return -1;
    }
    if (n) {
        memcpy(b->data + b->len, p, n);
    }
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int
clef_buf_putc(clef_buf *b, char c)
{
    return clef_buf_append(b, &c, 1);
}

int
clef_buf_printf(clef_buf *b, const char *fmt, ...)
{
    va_list  ap;
    int      n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || clef_buf_reserve(b, (size_t) n) != 0) {
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t) n;
    return 0;
}

void
clef_buf_free(clef_buf *b)
{
    clef_mem_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int
clef_ids_reserve(clef_ids *ids, size_t extra)
{
    return clef_grow((void **) &ids->v, &ids->cap, ids->n + extra,
                     sizeof(int32_t));
}

int
clef_ids_push(clef_ids *ids, int32_t id)
{
    if (clef_ids_reserve(ids, 1) != 0) {
        return -1;
    }
    ids->v[ids->n++] = id;
    return 0;
}

int
clef_ids_append(clef_ids *ids, const int32_t *v, size_t n)
{
    if (clef_ids_reserve(ids, n) != 0) {
        return -1;
    }
    if (n) {
        memcpy(ids->v + ids->n, v, n * sizeof(int32_t));
    }
    ids->n += n;
    return 0;
}

void
clef_ids_free(clef_ids *ids)
{
    clef_mem_free(ids->v);
    ids->v = NULL;
    ids->n = ids->cap = 0;
}
