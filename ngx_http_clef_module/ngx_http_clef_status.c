/*
 * clef_status: the shared zone's counters in the Prometheus text format
 * (version 0.0.4).  Everything comes from shared memory, so any worker
 * answers for all of them and for the engine process.
 */
#include "ngx_http_clef_module.h"


static ngx_str_t  ngx_http_clef_prom_type =
    ngx_string("text/plain; version=0.0.4; charset=utf-8");


static int
metric(clef_buf *b, const char *name, const char *type, const char *help,
    const char *labels, double value)
{
    return clef_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s%s %.17g\n",
                           name, help, name, type, name, labels, value);
}


static int
counter(clef_buf *b, const char *name, const char *help, uint64_t value)
{
    return clef_buf_printf(b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n",
                           name, help, name, name,
                           (unsigned long long) value);
}


#define LOAD(x)  atomic_load(&st->x)


/* The engine's decode processes (its media workers' lanes): how many,
 * how often they started, died and were restarted, and the last death. */
static int
decoders(clef_buf *b, clef_status *snap)
{
    clef_queue_stats  *st = &snap->stats;
    char               cause[2 * sizeof(snap->decoder_cause)];
    size_t             i, n = 0;

    if (metric(b, "clef_decoders", "gauge", "Decode processes of the "
               "engine (clef_engine decoders=N).", "", snap->n_decoders) != 0
        || counter(b, "clef_decoder_starts_total", "Decode processes "
                   "started, restarts included.", LOAD(decoder_starts)) != 0
        || counter(b, "clef_decoder_restarts_total", "Decode processes "
                   "started again after one died.", LOAD(decoder_restarts))
           != 0
        || counter(b, "clef_decoder_deaths_total", "Decode processes, or "
                   "their children, that died or were killed other than "
                   "for a bad file.", LOAD(decoder_deaths)) != 0)
    {
        return -1;
    }
    if (snap->decoder_death_ms == 0) {
        return 0;
    }
    /* a label value escapes backslash, quote and newline */
    for (i = 0; snap->decoder_cause[i] != '\0' && n + 2 < sizeof(cause);
         i++)
    {
        if (snap->decoder_cause[i] == '\\' || snap->decoder_cause[i] == '"') {
            cause[n++] = '\\';
        }
        cause[n++] = snap->decoder_cause[i] == '\n' ? ' '
                                                    : snap->decoder_cause[i];
    }
    cause[n] = '\0';
    return clef_buf_printf(b, "# HELP clef_decoder_last_death_timestamp_"
                           "seconds When a decode process last died, and "
                           "how (the cause label).\n# TYPE clef_decoder_"
                           "last_death_timestamp_seconds gauge\nclef_decoder_"
                           "last_death_timestamp_seconds{cause=\"%s\"} %.3f\n",
                           cause, (double) snap->decoder_death_ms / 1000);
}


/* One executor of the engine each: a replica (a device, or the CPU). */
static int
replicas(clef_buf *b, clef_status *snap)
{
    clef_queue_stats  *st = &snap->stats;
    uint32_t           r, n = snap->n_replicas;

    if (n > CLEF_STATS_REPLICAS) {
        n = CLEF_STATS_REPLICAS;
    }
    if (clef_buf_printf(b, "# HELP clef_replica_up 1 while the replica "
                        "serves (0: its device faulted and could not be "
                        "reopened).\n# TYPE clef_replica_up gauge\n") != 0)
    {
        return -1;
    }
    for (r = 0; r < n; r++) {
        if (clef_buf_printf(b, "clef_replica_up{replica=\"%u\"} %d\n", r,
                            (int) ((snap->replicas_up >> r) & 1)) != 0)
        {
            return -1;
        }
    }
    if (clef_buf_printf(b, "# HELP clef_replica_batches_total Batches a "
                        "replica ran.\n# TYPE clef_replica_batches_total "
                        "counter\n") != 0)
    {
        return -1;
    }
    for (r = 0; r < n; r++) {
        if (clef_buf_printf(b, "clef_replica_batches_total{replica=\"%u\"} "
                            "%llu\n", r, (unsigned long long)
                            LOAD(replica_batches[r])) != 0)
        {
            return -1;
        }
    }
    if (clef_buf_printf(b, "# HELP clef_replica_busy_seconds_total Time a "
                        "replica spent in forwards.\n# TYPE "
                        "clef_replica_busy_seconds_total counter\n") != 0)
    {
        return -1;
    }
    for (r = 0; r < n; r++) {
        if (clef_buf_printf(b, "clef_replica_busy_seconds_total{replica="
                            "\"%u\"} %.6f\n", r,
                            (double) LOAD(replica_busy_ns[r]) / 1e9) != 0)
        {
            return -1;
        }
    }
    if (clef_buf_printf(b, "# HELP clef_replica_faults_total Device faults "
                        "after which a replica was reopened.\n# TYPE "
                        "clef_replica_faults_total counter\n") != 0)
    {
        return -1;
    }
    for (r = 0; r < n; r++) {
        if (clef_buf_printf(b, "clef_replica_faults_total{replica=\"%u\"} "
                            "%llu\n", r, (unsigned long long)
                            LOAD(replica_faults[r])) != 0)
        {
            return -1;
        }
    }
    return 0;
}


/* The zone's use and the engine's state, processes and generations
 * (gen: this worker's). */
static int
engine_metrics(clef_buf *b, clef_status *snap, uint32_t gen)
{
    clef_queue_usage  *u = &snap->usage;
    uint32_t           i, state = snap->state;
    const char        *p;
    int                ok = 1;

    ok &= metric(b, "clef_queue_depth", "gauge",
                 "Records waiting for the engine.", "", u->queued) == 0;
    ok &= metric(b, "clef_slots_in_use", "gauge",
                 "Record slots held (queued, running or being answered).", "",
                 u->slots_used) == 0;
    ok &= metric(b, "clef_slots", "gauge", "Record slots in the zone.", "",
                 u->nslots) == 0;
    ok &= metric(b, "clef_zone_data_bytes_used", "gauge",
                 "Bytes of the zone's data area in use.", "",
                 (double) u->data_used) == 0;
    ok &= metric(b, "clef_zone_data_bytes", "gauge",
                 "Size of the zone's data area.", "",
                 (double) u->data_size) == 0;

    ok &= clef_buf_printf(b, "# HELP clef_engine_state The engine's state "
                          "(1 for the current one).\n"
                          "# TYPE clef_engine_state gauge\n") == 0;
    for (i = CLEF_ENGINE_NONE; i <= CLEF_ENGINE_STALLED; i++) {
        ok &= clef_buf_printf(b, "clef_engine_state{state=\"%s\"} %d\n",
                              clef_engine_state_name(i), i == state) == 0;
    }
    /* why it is in that state: "cannot load the model: ...", "engine N
     * stalled; restarting", "ready: PATH" */
    ok &= clef_buf_printf(b, "# HELP clef_engine_message What the engine "
                          "or its keeper last said about its state.\n"
                          "# TYPE clef_engine_message gauge\n"
                          "clef_engine_message{message=\"") == 0;
    for (p = snap->message; *p; p++) {
        ok &= (*p == '"' || *p == '\\'
               ? clef_buf_putc(b, '\\') == 0 && clef_buf_putc(b, *p) == 0
               : clef_buf_putc(b, *p == '\n' ? ' ' : *p) == 0);
    }
    ok &= clef_buf_append(b, "\"} 1\n", 5) == 0;
    ok &= metric(b, "clef_engine_pid", "gauge",
                 "Process id of the engine.", "",
                 snap->engine_pid) == 0;
    ok &= metric(b, "clef_keeper_pid", "gauge",
                 "Process id of the engine's keeper.", "",
                 snap->keeper_pid) == 0;
    ok &= metric(b, "clef_engine_generation", "gauge",
                 "Model configuration generation the engine serves.", "",
                 snap->gen) == 0;
    ok &= metric(b, "clef_worker_generation", "gauge",
                 "Model configuration generation of this worker.", "",
                 gen) == 0;
    ok &= metric(b, "clef_engine_epoch", "gauge",
                 "Engine starts on this zone (ownership epoch).", "",
                 snap->epoch) == 0;

    return ok ? 0 : -1;
}


/* Engine starts, stalls and loads; what became of records. */
static int
record_counters(clef_buf *b, clef_status *snap)
{
    clef_queue_stats  *st = &snap->stats;
    int                ok = 1;

    ok &= counter(b, "clef_engine_starts_total", "Engine processes started.",
                  LOAD(engine_starts)) == 0;
    ok &= counter(b, "clef_engine_restarts_total",
                  "Engine restarts after a crash.", LOAD(engine_restarts)) == 0;
    ok &= counter(b, "clef_engine_stalls_total",
                  "Engines the watchdog killed for making no progress.",
                  LOAD(engine_stalls)) == 0;
    ok &= metric(b, "clef_engine_stalled_seconds", "gauge",
                 "How long records have waited without the engine making "
                 "any progress (0 while it progresses or has no work).", "",
                 (double) snap->stalled_ms / 1000) == 0;
    ok &= counter(b, "clef_engine_progress_total",
                  "Progress steps of the engine (records and batches moved, "
                  "layers run); the watchdog reads it.",
                  snap->progress) == 0;
    ok &= counter(b, "clef_weight_loads_total",
                  "Times the model weights were loaded.", LOAD(weight_loads))
          == 0;
    ok &= counter(b, "clef_records_submitted_total",
                  "Records queued for the engine.", LOAD(submitted)) == 0;
    ok &= counter(b, "clef_records_cancelled_total",
                  "Records cancelled: client gone or deadline passed.",
                  LOAD(cancelled)) == 0;
    ok &= counter(b, "clef_records_orphaned_total",
                  "Records dropped because their worker died.",
                  LOAD(orphaned)) == 0;
    ok &= counter(b, "clef_records_failed_total",
                  "Records failed by an engine crash, stop or failed load.",
                  LOAD(failed)) == 0;
    ok &= counter(b, "clef_queue_rejected_total",
                  "Requests refused with 429 (queue or zone full).",
                  LOAD(rejected_full)) == 0;
    ok &= counter(b, "clef_encode_errors_total",
                  "Records the encoder refused (400).", LOAD(encode_errors))
          == 0;
    ok &= counter(b, "clef_lock_recoveries_total",
                  "Queue locks recovered from a dead holder.",
                  LOAD(lock_recoveries)) == 0;
    ok &= decoders(b, snap) == 0;

    return ok ? 0 : -1;
}


/* Batches: their sizes, the replicas that ran them, and their speed. */
static int
batch_metrics(clef_buf *b, clef_status *snap)
{
    clef_queue_stats  *st = &snap->stats;
    uint64_t           cum, busy, tokens, last_ns;
    int                ok = 1, k;
    char               lbl[64];

    ok &= counter(b, "clef_batches_total", "Batches run.", LOAD(batches))
          == 0;
    ok &= replicas(b, snap) == 0;
    ok &= counter(b, "clef_batch_tokens_total", "Tokens run in batches.",
                  LOAD(batch_tokens)) == 0;
    ok &= metric(b, "clef_batch_records_max", "gauge",
                 "Most records in one batch.", "",
                 (double) LOAD(batch_records_max)) == 0;

    ok &= clef_buf_printf(b, "# HELP clef_batch_records Records per batch.\n"
                          "# TYPE clef_batch_records histogram\n") == 0;
    cum = 0;
    for (k = 0; k < CLEF_HIST_BATCH; k++) {
        cum += LOAD(batch_hist[k]);
        if (k < CLEF_HIST_BATCH - 1) {
            snprintf(lbl, sizeof(lbl), "%d", clef_hist_batch_le[k]);
        } else {
            snprintf(lbl, sizeof(lbl), "+Inf");
        }
        ok &= clef_buf_printf(b, "clef_batch_records_bucket{le=\"%s\"} %llu\n",
                              lbl, (unsigned long long) cum) == 0;
    }
    ok &= clef_buf_printf(b, "clef_batch_records_sum %llu\n"
                          "clef_batch_records_count %llu\n",
                          (unsigned long long) LOAD(batch_records),
                          (unsigned long long) LOAD(batches)) == 0;

    busy = LOAD(busy_ns);
    tokens = LOAD(batch_tokens);
    last_ns = LOAD(last_batch_ns);
    ok &= metric(b, "clef_engine_busy_seconds_total", "counter",
                 "Time the engine spent running batches.", "",
                 (double) busy / 1e9) == 0;
    ok &= metric(b, "clef_tokens_per_second", "gauge",
                 "Tokens per second of engine time, since the zone was made.",
                 "", busy ? (double) tokens * 1e9 / (double) busy : 0) == 0;
    ok &= metric(b, "clef_last_batch_tokens_per_second", "gauge",
                 "Tokens per second of the last batch.", "",
                 last_ns ? (double) LOAD(last_batch_tokens) * 1e9
                           / (double) last_ns : 0) == 0;
    ok &= metric(b, "clef_queue_wait_seconds_total", "counter",
                 "Time answered records waited in the queue.", "",
                 (double) LOAD(queue_wait_us) / 1e6) == 0;
    ok &= metric(b, "clef_engine_seconds_total", "counter",
                 "Time answered records spent in the engine.", "",
                 (double) LOAD(engine_us) / 1e6) == 0;

    return ok ? 0 : -1;
}


/* The responses of clef_systemone locations: latency and status. */
static int
response_metrics(clef_buf *b, clef_status *snap)
{
    clef_queue_stats  *st = &snap->stats;
    uint64_t           cum;
    int                ok = 1, k;
    char               lbl[64];

    ok &= clef_buf_printf(b, "# HELP clef_request_duration_seconds Time from "
                          "request to response in clef_systemone locations.\n"
                          "# TYPE clef_request_duration_seconds histogram\n")
          == 0;
    cum = 0;
    for (k = 0; k < CLEF_HIST_LAT; k++) {
        cum += LOAD(lat_hist[k]);
        if (k < CLEF_HIST_LAT - 1) {
            snprintf(lbl, sizeof(lbl), "%g", clef_hist_lat_le_ms[k] / 1000);
        } else {
            snprintf(lbl, sizeof(lbl), "+Inf");
        }
        ok &= clef_buf_printf(b, "clef_request_duration_seconds_bucket"
                              "{le=\"%s\"} %llu\n", lbl,
                              (unsigned long long) cum) == 0;
    }
    ok &= clef_buf_printf(b, "clef_request_duration_seconds_sum %.6f\n"
                          "clef_request_duration_seconds_count %llu\n",
                          (double) LOAD(lat_sum_us) / 1e6,
                          (unsigned long long) LOAD(lat_count)) == 0;

    ok &= clef_buf_printf(b, "# HELP clef_responses_total Responses of "
                          "clef_systemone locations by status.\n"
                          "# TYPE clef_responses_total counter\n") == 0;
    for (k = 1; k < CLEF_STATUS_SLOTS; k++) {
        ok &= clef_buf_printf(b, "clef_responses_total{status=\"%d\"} %llu\n",
                              clef_stats_statuses[k],
                              (unsigned long long) LOAD(responses[k])) == 0;
    }
    ok &= clef_buf_printf(b, "clef_responses_total{status=\"other\"} %llu\n",
                          (unsigned long long) LOAD(responses[0])) == 0;

    return ok ? 0 : -1;
}


ngx_int_t
ngx_http_clef_status_handler(ngx_http_request_t *r)
{
    ngx_http_clef_main_conf_t  *mcf;
    clef_status                 snap;
    clef_buf                    b = { NULL, 0, 0 };
    ngx_int_t                   rc;
    int                         ok;

    rc = ngx_http_clef_get_only(r);
    if (rc != NGX_DECLINED) {
        return rc;
    }
    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);
    if (!mcf->queue_ready) {
        return ngx_http_clef_send_typed(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                        "engine_unavailable",
                                        "no clef_model is configured");
    }
    clef_status_read(&mcf->queue, &snap);

    ok = engine_metrics(&b, &snap, mcf->gen) == 0
         && record_counters(&b, &snap) == 0
         && batch_metrics(&b, &snap) == 0
         && response_metrics(&b, &snap) == 0;

    return ngx_http_clef_send_buf(r, NGX_HTTP_OK, &ngx_http_clef_prom_type,
                                  &b, ok);
}
