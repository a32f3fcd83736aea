/*
 * Where libclef's request-sized memory comes from.
 *
 * By default, the C heap.  A caller may route the allocations of the
 * calling thread to an allocator of its own for a while: an nginx worker
 * hands the request's pool in while it parses a body, renders a plan and
 * builds an answer, so that the request path makes no libc malloc call and
 * everything goes when the request's pool does.
 *
 * Every block carries a small header naming where it came from, so
 * clef_mem_free() and clef_mem_realloc() are right whatever allocator is
 * current when they run (a request freed by a pool cleanup, after the
 * worker switched back): a pool block is never given to free(), and
 * "freeing" it does nothing.
 */
#ifndef CLEF_MEM_H
#define CLEF_MEM_H

#include <stddef.h>

typedef struct {
    /* n bytes aligned to 16, or NULL; never freed one by one */
    void  *(*alloc)(void *ctx, size_t n);
    void   *ctx;
} clef_mem_pool;

/* Allocations of this thread come from pool until the next call; NULL:
 * the C heap again.  Returns the previous one. */
const clef_mem_pool *clef_mem_use(const clef_mem_pool *pool);

void *clef_mem_alloc(size_t n);
void *clef_mem_calloc(size_t n);
void *clef_mem_realloc(void *p, size_t n);
void  clef_mem_free(void *p);

#endif
