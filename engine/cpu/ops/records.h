/*
 * Packed batches: records laid end to end, record r holding tokens
 * [cu_seqlens[r], cu_seqlens[r + 1]).  The per-token ops that split their
 * work by token ranges ask which record a range starts in.
 */
#ifndef CLEF_CPU_RECORDS_H
#define CLEF_CPU_RECORDS_H

#include <stdint.h>

/* The record holding token t: the last r with cu[r] <= t. */
static inline int
clef_cpu_record_of(const int32_t *cu, int n_records, int64_t t)
{
    int  lo = 0, hi = n_records - 1, mid;

    while (lo < hi) {
        mid = (lo + hi + 1) / 2;
        if (cu[mid] <= t) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}

#endif
