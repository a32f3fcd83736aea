/*
 * A fixed pool of worker threads running parallel-for loops over index
 * ranges, on a crew (crew.h): the calling thread takes part as worker 0,
 * so a pool of N runs N - 1 pthreads, which block every signal.
 *
 * One loop runs at a time; clef_cpu_pool_for() returns when every index is
 * done.  The split of [0, n) into chunks may vary, so a task must give the
 * same result for an index whichever worker runs it.
 */
#ifndef CLEF_CPU_POOL_H
#define CLEF_CPU_POOL_H

#include <stdint.h>

#include "base/error.h"

typedef struct clef_cpu_pool clef_cpu_pool;

/* Runs indices [begin, end) on worker `worker` (0 .. size - 1). */
typedef void (*clef_cpu_task)(void *ctx, int64_t begin, int64_t end, int worker);

/* threads: 0 = one per CPU this process may run on. */
clef_cpu_pool *clef_cpu_pool_create(int threads, clef_error *err);
int            clef_cpu_pool_size(const clef_cpu_pool *p);

/* Splits [0, n) into chunks of at least `grain` indices (dynamically, so
 * uneven items balance); runs inline when one chunk covers everything. */
void           clef_cpu_pool_for(clef_cpu_pool *p, int64_t n, int64_t grain,
    clef_cpu_task fn, void *ctx);

void           clef_cpu_pool_destroy(clef_cpu_pool *p);

/* Number of CPUs in this process's affinity mask (at least 1). */
int            clef_cpu_count(void);

#endif
