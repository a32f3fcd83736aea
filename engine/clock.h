/*
 * Seconds on the monotonic clock, for the timings that the backends report
 * and that the benchmark commands print.
 */
#ifndef CLEF_CLOCK_H
#define CLEF_CLOCK_H

#include <time.h>

static inline double
clef_clock_seconds(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

#endif
