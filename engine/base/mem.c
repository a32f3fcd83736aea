/*
 * Allocations with a header saying where they came from (see mem.h).
 */
#include "base/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MEM_HEAP  0x48454150u    /* "HEAP" */
#define MEM_POOL  0x504f4f4cu    /* "POOL" */

typedef struct {
    size_t    size;
    uint32_t  kind;
    uint32_t  pad;
} mem_hdr;

_Static_assert(sizeof(mem_hdr) == 16, "the header keeps 16-byte alignment");

static _Thread_local const clef_mem_pool  *mem_current;


const clef_mem_pool *
clef_mem_use(const clef_mem_pool *pool)
{
    const clef_mem_pool  *prev = mem_current;

    mem_current = pool;
    return prev;
}


void *
clef_mem_alloc(size_t n)
{
    mem_hdr  *h;

    if (n > SIZE_MAX - sizeof(mem_hdr)) {
        return NULL;
    }
    if (mem_current != NULL) {
        h = mem_current->alloc(mem_current->ctx, sizeof(mem_hdr) + n);
        if (h == NULL) {
            return NULL;
        }
        h->kind = MEM_POOL;
    } else {
        h = malloc(sizeof(mem_hdr) + n);
        if (h == NULL) {
            return NULL;
        }
        h->kind = MEM_HEAP;
    }
    h->size = n;
    return h + 1;
}


void *
clef_mem_calloc(size_t n)
{
    void  *p = clef_mem_alloc(n);

    if (p != NULL) {
        memset(p, 0, n);
    }
    return p;
}


void *
clef_mem_realloc(void *p, size_t n)
{
    mem_hdr  *h;
    void     *q;

    if (p == NULL) {
        return clef_mem_alloc(n);
    }
    h = (mem_hdr *) p - 1;
    if (h->kind == MEM_HEAP && mem_current == NULL) {
        if (n > SIZE_MAX - sizeof(mem_hdr)) {
            return NULL;
        }
        h = realloc(h, sizeof(mem_hdr) + n);
        if (h == NULL) {
            return NULL;
        }
        h->size = n;
        return h + 1;
    }
    /* across allocators, or from a pool: a new block and a copy */
    q = clef_mem_alloc(n);
    if (q == NULL) {
        return NULL;
    }
    memcpy(q, p, h->size < n ? h->size : n);
    clef_mem_free(p);
    return q;
}


void
clef_mem_free(void *p)
{
    mem_hdr  *h;

    if (p == NULL) {
        return;
    }
    h = (mem_hdr *) p - 1;
    if (h->kind == MEM_HEAP) {
        free(h);
    }
    /* MEM_POOL: the pool takes it back as a whole */
}
