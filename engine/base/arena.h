/*
 * A bump allocator: a parsed request, its JSON tree and its encoded record
 * live and die together, so they share one arena and are freed in one call.
 * Blocks are malloc'd on demand; nothing is ever freed individually.
 */
#ifndef CLEF_ARENA_H
#define CLEF_ARENA_H

#include <stddef.h>

typedef struct clef_arena_block clef_arena_block;

typedef struct {
    clef_arena_block  *head;
    size_t             block_size;   /* default size of a new block */
    size_t             used;         /* bytes handed out, for accounting */
} clef_arena;

void  clef_arena_init(clef_arena *a, size_t block_size);
/* 16-byte aligned; returns NULL only when malloc fails. */
void *clef_arena_alloc(clef_arena *a, size_t n);
void *clef_arena_calloc(clef_arena *a, size_t n);
/* Copies n bytes and appends a NUL (the NUL is not counted by callers). */
char *clef_arena_strndup(clef_arena *a, const char *s, size_t n);
void  clef_arena_free(clef_arena *a);

#endif
