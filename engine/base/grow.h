/*
 * Growth of a heap array by doubling, shared by the buffers of buf.h, the
 * JSON parser's scratch stacks and the tokenizer's NFC scratch.  Not part
 * of libclef's contract.
 */
#ifndef CLEF_GROW_H
#define CLEF_GROW_H

#include <stddef.h>

/* Makes room for need elements of elem bytes in *p (capacity *cap
 * elements, at least 64 once it grows); the content is kept.  Returns 0,
 * or -1 with *p and *cap unchanged when memory runs out or the size would
 * overflow. */
int clef_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
