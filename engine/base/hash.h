/*
 * A fast unkeyed hash of bytes, shared by the tokenizer's maps (its vocab,
 * added tokens and word cache) and the JSON parser's duplicate-key set.
 * Not part of libclef's contract.
 *
 * Unkeyed: anyone can compute it, so a table fed untrusted keys must bound
 * its probes (json.c falls back to sorting); the tokenizer's keys come from
 * its own files.
 */
#ifndef CLEF_HASH_H
#define CLEF_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t
clef_hash(const void *p, size_t n)
{
    const uint8_t  *s = p;
    uint64_t        h, v;

    /* A multiply-xorshift over 8-byte words: keys are short and the maps
     * are probed on every word, so speed matters more than strength. */
    h = 0x9e3779b97f4a7c15ULL ^ ((uint64_t) n * 0xff51afd7ed558ccdULL);
    while (n >= 8) {
        memcpy(&v, s, 8);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    if (n > 0) {
        v = 0;
        memcpy(&v, s, n);
        h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

#endif
