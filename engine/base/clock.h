/*
 * The monotonic clock, in the two units the code base uses: nanoseconds
 * for the deadlines and timestamps shared between processes through the
 * queue (CLOCK_MONOTONIC is system-wide), seconds for the timings that the
 * backends report and that the benchmark commands print.
 */
#ifndef CLEF_CLOCK_H
#define CLEF_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t
clef_now_ns(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline double
clef_clock_seconds(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

#endif
