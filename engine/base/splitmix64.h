/*
 * splitmix64 (Steele, Lea and Flood): reproducible pseudo-random numbers
 * that do not depend on the libc's rand(), for mkmodel's weights and the
 * synthetic inputs of the benchmarks and tests.
 */
#ifndef CLEF_SPLITMIX64_H
#define CLEF_SPLITMIX64_H

#include <stdint.h>

static inline uint64_t
clef_splitmix64(uint64_t *state)
{
    uint64_t  z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
