/*
 * Zone statistics (see stats.h).
 */
#include "serve/stats.h"

const int clef_stats_statuses[CLEF_STATUS_SLOTS] = {
    0, 200, 400, 401, 403, 404, 405, 408, 413, 415, 422, 429, 499, 500,
    502, 503, 504
};

const int clef_hist_batch_le[CLEF_HIST_BATCH - 1] = {
    1, 2, 4, 8, 16, 32, 64, 128
};

const double clef_hist_lat_le_ms[CLEF_HIST_LAT - 1] = {
    1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000
};


int
clef_stats_status_index(int status)
{
    int  i;

    for (i = 1; i < CLEF_STATUS_SLOTS; i++) {
        if (clef_stats_statuses[i] == status) {
            return i;
        }
    }
    return 0;
}


void
clef_stats_batch(clef_queue_stats *st, uint32_t records, uint64_t tokens,
    uint64_t ns)
{
    uint64_t  max;
    int       i;

    atomic_fetch_add(&st->batches, 1);
    atomic_fetch_add(&st->batch_records, records);
    atomic_fetch_add(&st->batch_tokens, tokens);
    atomic_fetch_add(&st->busy_ns, ns);
    atomic_store(&st->last_batch_tokens, tokens);
    atomic_store(&st->last_batch_ns, ns);

    max = atomic_load(&st->batch_records_max);
    while (records > max
           && !atomic_compare_exchange_weak(&st->batch_records_max, &max,
                                            records))
    { /* retry */ }

    for (i = 0; i < CLEF_HIST_BATCH - 1; i++) {
        if ((int) records <= clef_hist_batch_le[i]) {
            break;
        }
    }
    atomic_fetch_add(&st->batch_hist[i], 1);
}


void
clef_stats_response(clef_queue_stats *st, int status, int64_t latency_ns)
{
    double  ms = (double) latency_ns / 1e6;
    int     i;

    atomic_fetch_add(&st->responses[clef_stats_status_index(status)], 1);
    if (latency_ns < 0) {
        return;
    }
    for (i = 0; i < CLEF_HIST_LAT - 1; i++) {
        if (ms <= clef_hist_lat_le_ms[i]) {
            break;
        }
    }
    atomic_fetch_add(&st->lat_hist[i], 1);
    atomic_fetch_add(&st->lat_count, 1);
    atomic_fetch_add(&st->lat_sum_us, (uint64_t) (latency_ns / 1000));
}
