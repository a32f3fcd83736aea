#include "cpu/parallel/comm_cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "model/tensor.h"

typedef struct {
    clef_comm         base;          /* first: the ops see a clef_comm */
    pthread_mutex_t   lock;
    pthread_cond_t    cond;
    int               arrived;       /* ranks in the current barrier */
    unsigned          gen;           /* barriers completed */
    int               aborted;

    /* the current all-reduce, as each rank brought it */
    void            **buf;           /* [size] */
    size_t           *n;             /* [size] */
    clef_comm_dtype  *dtype;         /* [size] */
    double           *seconds;       /* [size] */
} comm_cpu;

/* Waits until every rank has arrived; -1 when aborted before that. */
static int
barrier(comm_cpu *c)
{
    unsigned  gen;
    int       rc = 0;

    pthread_mutex_lock(&c->lock);
    if (c->aborted) {
        pthread_mutex_unlock(&c->lock);
        return -1;
    }
    gen = c->gen;
    if (++c->arrived == c->base.size) {
        c->arrived = 0;
        c->gen++;
        pthread_cond_broadcast(&c->cond);
    } else {
        while (c->gen == gen && !c->aborted) {
            pthread_cond_wait(&c->cond, &c->lock);
        }
        rc = c->gen == gen ? -1 : 0;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Elements [begin, end) of every buffer become their sum over the ranks,
 * added in rank order. */
static void
sum_f32(comm_cpu *c, size_t begin, size_t end)
{
    float   **b = (float **) c->buf;
    float     s;
    size_t    i;
    int       r, size = c->base.size;

    for (i = begin; i < end; i++) {
        s = b[0][i];
        for (r = 1; r < size; r++) {
            s += b[r][i];
        }
        for (r = 0; r < size; r++) {
            b[r][i] = s;
        }
    }
}

/* bf16 buffers are summed in fp32 and rounded once. */
static void
sum_bf16(comm_cpu *c, size_t begin, size_t end)
{
    uint16_t  **b = (uint16_t **) c->buf;
    uint16_t    h;
    float       s;
    size_t      i;
    int         r, size = c->base.size;

    for (i = begin; i < end; i++) {
        s = clef_bf16_to_f32(b[0][i]);
        for (r = 1; r < size; r++) {
            s += clef_bf16_to_f32(b[r][i]);
        }
        h = clef_f32_to_bf16(s);
        for (r = 0; r < size; r++) {
            b[r][i] = h;
        }
    }
}

/* The first half of a collective: rank hands in its buffer and waits for
 * every rank; all must bring the same count and type.  0, or -1 with err
 * filled ("<what>: …") and the time spent counted; a mismatch aborts the
 * communicator, so every rank gives up alike. */
static int
arrive(comm_cpu *c, const char *what, int rank, void *buf, size_t n,
    clef_comm_dtype dtype, double t0, clef_error *err)
{
    int  r, size = c->base.size;

    if (rank < 0 || rank >= size) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "%s: rank %d of %d",
                               what, rank, size);
    }
    c->buf[rank] = buf;
    c->n[rank] = n;
    c->dtype[rank] = dtype;
    if (barrier(c) != 0) {
        c->seconds[rank] += clef_clock_seconds() - t0;
        return clef_error_fail(err, CLEF_E_INTERNAL,
                               "%s: another rank failed", what);
    }
    for (r = 1; r < size; r++) {
        if (c->n[r] != c->n[0] || c->dtype[r] != c->dtype[0]) {
            clef_comm_cpu_abort(&c->base);
            c->seconds[rank] += clef_clock_seconds() - t0;
            return clef_error_fail(err, CLEF_E_INTERNAL,
                                   "%s: rank %d brought %zu elements, "
                                   "rank 0 %zu", what, r, c->n[r], c->n[0]);
        }
    }
    return 0;
}

/* The last step of a collective: rank waits until every rank is done with
 * the buffers handed in, and counts its time.  0, or -1 with err filled
 * ("<what>: another rank failed") when the communicator was aborted. */
static int
depart(comm_cpu *c, const char *what, int rank, double t0, clef_error *err)
{
    int  rc = barrier(c);

    c->seconds[rank] += clef_clock_seconds() - t0;
    if (rc != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
                               "%s: another rank failed", what);
    }
    return 0;
}

static int
cpu_all_reduce_sum(clef_comm *base, int rank, void *buf, size_t n,
    clef_comm_dtype dtype, void *stream, clef_error *err)
{
    comm_cpu  *c = (comm_cpu *) base;
    size_t     begin, end;
    double     t0 = clef_clock_seconds();
    int        size = base->size;

    if (arrive(c, "all-reduce", rank, buf, n, dtype, t0, err) != 0) {
        return -1;
    }
    begin = n * (size_t) rank / (size_t) size;
    end = n * (size_t) (rank + 1) / (size_t) size;
    if (dtype == CLEF_COMM_BF16) {
        sum_bf16(c, begin, end);
    } else {
        sum_f32(c, begin, end);
    }
    /* no rank may reuse its buffer before every slice is written */
    return depart(c, "all-reduce", rank, t0, err);
}

static size_t
dtype_size(clef_comm_dtype dtype)
{
    return dtype == CLEF_COMM_BF16 ? sizeof(uint16_t) : sizeof(float);
}

/* Each rank copies the other ranks' slots out of their buffers into its
 * own: a rank reads only slot r of rank r's buffer, which no rank writes,
 * and writes only its own buffer. */
static int
cpu_all_gather(clef_comm *base, int rank, void *buf, size_t n,
    clef_comm_dtype dtype, void *stream, clef_error *err)
{
    comm_cpu  *c = (comm_cpu *) base;
    size_t     bytes = n * dtype_size(dtype);
    double     t0 = clef_clock_seconds();
    int        r, size = base->size;

    if (arrive(c, "all-gather", rank, buf, n, dtype, t0, err) != 0) {
        return -1;
    }
    for (r = 0; r < size; r++) {
        if (r != rank) {
            memcpy((char *) buf + (size_t) r * bytes,
                   (const char *) c->buf[r] + (size_t) r * bytes, bytes);
        }
    }
    /* no rank may reuse its buffer before every rank has copied from it */
    return depart(c, "all-gather", rank, t0, err);
}

static void
cpu_destroy(clef_comm *base)
{
    comm_cpu  *c = (comm_cpu *) base;

    if (c == NULL) {
        return;
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->cond);
    free(c->buf);
    free(c->n);
    free(c->dtype);
    free(c->seconds);
    free(c);
}

static const clef_comm_ops  comm_cpu_ops = {
    "cpu",
    cpu_all_reduce_sum,
    NULL,
    NULL,
    cpu_destroy,
    cpu_all_gather,
};

clef_comm *
clef_comm_cpu_create(int size, clef_error *err)
{
    comm_cpu  *c;

    if (size < 1) {
        clef_error_fail(err, CLEF_E_INTERNAL, "a communicator of %d ranks",
                        size);
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        goto nomem;
    }
    c->base.ops = &comm_cpu_ops;
    c->base.size = size;
    c->buf = calloc((size_t) size, sizeof(*c->buf));
    c->n = calloc((size_t) size, sizeof(*c->n));
    c->dtype = calloc((size_t) size, sizeof(*c->dtype));
    c->seconds = calloc((size_t) size, sizeof(*c->seconds));
    if (c->buf == NULL || c->n == NULL || c->dtype == NULL || c->seconds == NULL) {
        free(c->buf);
        free(c->n);
        free(c->dtype);
        free(c->seconds);
        free(c);
        goto nomem;
    }
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->cond, NULL);
    return &c->base;

nomem:
    clef_error_fail(err, CLEF_E_NO_MEMORY,
                    "out of memory for a communicator");
    return NULL;
}

void
clef_comm_cpu_abort(clef_comm *base)
{
    comm_cpu  *c = (comm_cpu *) base;

    pthread_mutex_lock(&c->lock);
    c->aborted = 1;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

void
clef_comm_cpu_reset(clef_comm *base)
{
    comm_cpu  *c = (comm_cpu *) base;

    pthread_mutex_lock(&c->lock);
    c->aborted = 0;
    c->arrived = 0;
    c->gen++;
    pthread_mutex_unlock(&c->lock);
}

double
clef_comm_cpu_seconds(const clef_comm *base, int rank)
{
    const comm_cpu  *c = (const comm_cpu *) base;

    return rank >= 0 && rank < base->size ? c->seconds[rank] : 0;
}

void
clef_comm_cpu_reset_time(clef_comm *base)
{
    comm_cpu  *c = (comm_cpu *) base;
    int        r;

    for (r = 0; r < base->size; r++) {
        c->seconds[r] = 0;
    }
}
