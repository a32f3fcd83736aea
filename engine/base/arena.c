#include "base/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

struct clef_arena_block {
    clef_arena_block  *next;
    size_t             size;
    size_t             off;
    /* data follows, 16-byte aligned */
    _Alignas(16) unsigned char  data[];
};

void
clef_arena_init(clef_arena *a, size_t block_size)
{
    a->head = NULL;
    a->block_size = block_size ? block_size : 16384;
    a->used = 0;
}

void *
clef_arena_alloc(clef_arena *a, size_t n)
{
    size_t             need, size;
    clef_arena_block  *b;
    void              *p;

    need = (n + 15) & ~(size_t) 15;
    if (need < n) {
        return NULL;
    }

    b = a->head;
    if (b == NULL || b->size - b->off < need) {
        size = need > a->block_size ? need : a->block_size;
        b = clef_mem_alloc(sizeof(clef_arena_block) + size);
        if (b == NULL) {
            return NULL;
        }
        b->size = size;
        b->off = 0;
        b->next = a->head;
        a->head = b;
    }

    p = b->data + b->off;
    b->off += need;
    a->used += need;
    return p;
}

void *
clef_arena_calloc(clef_arena *a, size_t n)
{
    void  *p = clef_arena_alloc(a, n);

    if (p != NULL) {
        memset(p, 0, n);
    }
    return p;
}

char *
clef_arena_strndup(clef_arena *a, const char *s, size_t n)
{
    char  *p = clef_arena_alloc(a, n + 1);

    if (p != NULL) {
        if (n) {
            memcpy(p, s, n);
        }
        p[n] = '\0';
    }
    return p;
}

void
clef_arena_free(clef_arena *a)
{
    clef_arena_block  *b, *next;

    for (b = a->head; b != NULL; b = next) {
        next = b->next;
        clef_mem_free(b);
    }
    a->head = NULL;
    a->used = 0;
}
