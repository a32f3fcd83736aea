/*
 * The CPU communicator (engine/cpu/parallel/comm_cpu.h): rank threads all-reduce
 * through shared memory.
 *
 *   - 1, 2, 3, 5 and 8 ranks, many rounds of varying lengths (0 included),
 *     each rank arriving after a random delay: every rank's buffer holds
 *     exactly (bit for bit) the sum added in rank order 0, 1, ..., N-1;
 *   - bf16 buffers: the fp32 sum in rank order, rounded once;
 *   - progress: a rank that aborts instead of arriving releases the ranks
 *     already waiting and those arriving later, with an error; after a
 *     reset the same communicator sums again;
 *   - lengths that differ between ranks are refused by every rank alike;
 *   - all_gather: 1 to 8 ranks arriving in random order, every rank ends
 *     with every rank's slot, bit for bit, its own untouched; an aborting
 *     rank releases the others there too.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "base/splitmix64.h"
#include "check.h"
#include "cpu/parallel/comm_cpu.h"
#include "model/tensor.h"

#define MAX_RANKS  8
#define ROUNDS     300
#define MAX_N      3000

typedef struct {
    clef_comm  *comm;
    int         rank, size, rounds;
    int         abort_round;      /* this rank aborts instead, or -1 */
    int         failures;         /* rounds whose sum was not exact */
    int         errors;           /* all_reduce_sum returned -1 */
    int         bf16;
    int         gather;           /* all_gather instead of all_reduce_sum */
} rank_arg;

/* The value rank r brings at element i of round k: the same in every
 * thread, so each can compute the expected sum alone. */
static float
value(int k, int r, size_t i)
{
    uint64_t  s = (uint64_t) k * 1000003u + (uint64_t) r * 7919u + i;

    return (float) ((double) (clef_splitmix64(&s) >> 11) / 9007199254740992.0
                    * 2.0 - 1.0) * (float) (1 + r * 1000);
}

static size_t
length(int k)
{
    return k % 17 == 0 ? 0 : (size_t) (k * 7919 % MAX_N) + 1;
}

static void
jitter(unsigned *seed)
{
    struct timespec  ts = { 0, (long) (rand_r(seed) % 200) * 1000 };

    if (rand_r(seed) % 3 != 0) {
        nanosleep(&ts, NULL);
    }
}

static void *
rank_main(void *p)
{
    rank_arg   *a = p;
    float      *buf = malloc(sizeof(float) * MAX_N * MAX_RANKS);
    uint16_t   *h = malloc(sizeof(uint16_t) * MAX_N);
    clef_error  err;
    unsigned    seed = (unsigned) (a->rank * 31 + a->size);
    size_t      n, i;
    float       s;
    int         k, r, ok;

    for (k = 0; k < a->rounds; k++) {
        n = length(k);
        for (i = 0; i < n; i++) {
            buf[i] = value(k, a->rank, i);
            h[i] = clef_f32_to_bf16(buf[i]);
        }
        jitter(&seed);
        if (k == a->abort_round) {
            clef_comm_cpu_abort(a->comm);
            break;
        }
        if (a->gather) {
            for (i = 0; i < n * (size_t) a->size; i++) {
                buf[i] = i / n == (size_t) a->rank ? value(k, a->rank, i % n)
                                                    : -1.0f;
            }
            if (a->comm->ops->all_gather(a->comm, a->rank, buf, n,
                                         CLEF_COMM_F32, NULL, &err) != 0)
            {
                a->errors++;
                break;
            }
            for (i = 0, ok = 1; i < n * (size_t) a->size; i++) {
                s = value(k, (int) (i / n), i % n);
                ok &= memcmp(&buf[i], &s, sizeof(s)) == 0;
            }
            a->failures += !ok;
            continue;
        }
        if (a->comm->ops->all_reduce_sum(a->comm, a->rank,
                                         a->bf16 ? (void *) h : (void *) buf, n,
                                         a->bf16 ? CLEF_COMM_BF16 : CLEF_COMM_F32,
                                         NULL, &err)
            != 0)
        {
            a->errors++;
            break;
        }
        for (i = 0, ok = 1; i < n; i++) {
            if (a->bf16) {
                s = clef_bf16_to_f32(clef_f32_to_bf16(value(k, 0, i)));
                for (r = 1; r < a->size; r++) {
                    s += clef_bf16_to_f32(clef_f32_to_bf16(value(k, r, i)));
                }
                ok &= h[i] == clef_f32_to_bf16(s);
            } else {
                s = value(k, 0, i);
                for (r = 1; r < a->size; r++) {
                    s += value(k, r, i);
                }
                ok &= memcmp(&buf[i], &s, sizeof(s)) == 0;
            }
        }
        a->failures += !ok;
    }
    free(buf);
    free(h);
    return NULL;
}

typedef struct {
    clef_comm  *c;
    int         rank;
    size_t      n;
    int         rc;
    float      *buf;
} mismatch_arg;

static void *
mismatch_main(void *p)
{
    mismatch_arg  *m = p;
    clef_error     err;

    m->rc = m->c->ops->all_reduce_sum(m->c, m->rank, m->buf, m->n,
                                      CLEF_COMM_F32, NULL, &err);
    return NULL;
}

/* size ranks for rounds rounds; rank abort_rank aborts at abort_round. */
static void
run(clef_comm *c, int size, int rounds, int bf16, int gather, int abort_rank,
    int abort_round, int *failures, int *errors)
{
    pthread_t  th[MAX_RANKS];
    rank_arg   a[MAX_RANKS];
    int        r;

    *failures = *errors = 0;
    for (r = 0; r < size; r++) {
        a[r] = (rank_arg) { c, r, size, rounds, r == abort_rank ? abort_round : -1,
                            0, 0, bf16, gather };
        pthread_create(&th[r], NULL, rank_main, &a[r]);
    }
    for (r = 0; r < size; r++) {
        pthread_join(th[r], NULL);
        *failures += a[r].failures;
        *errors += a[r].errors;
    }
}

int
main(void)
{
    static const int  sizes[] = { 1, 2, 3, 5, 8 };
    clef_comm        *c;
    clef_error        err;
    size_t            i;
    float             x[4] = { 1, 2, 3, 4 };
    int               failures, errors, size;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size = sizes[i];
        c = clef_comm_cpu_create(size, &err);
        CHECK(c != NULL && c->size == size, "a communicator of %d ranks", size);
        run(c, size, ROUNDS, 0, 0, -1, -1, &failures, &errors);
        CHECK(failures == 0 && errors == 0, "%d ranks, %d rounds, random "
              "arrival: every rank holds the f32 sum in rank order, bit for bit "
              "(%d inexact, %d errors)", size, ROUNDS, failures, errors);
        run(c, size, ROUNDS / 3, 1, 0, -1, -1, &failures, &errors);
        CHECK(failures == 0 && errors == 0, "%d ranks: bf16 sums as fp32 in rank "
              "order, rounded once (%d inexact, %d errors)", size, failures, errors);
        run(c, size, ROUNDS / 3, 0, 1, -1, -1, &failures, &errors);
        CHECK(failures == 0 && errors == 0, "%d ranks, random arrival: "
              "all_gather gives every rank every slot, bit for bit (%d wrong, "
              "%d errors)", size, failures, errors);
        CHECK(clef_comm_cpu_seconds(c, 0) > 0, "%d ranks: rank 0's time inside "
              "the all-reduce is counted", size);
        c->ops->destroy(c);
    }

    /* a rank that fails releases the others, wherever they are */
    c = clef_comm_cpu_create(4, &err);
    run(c, 4, ROUNDS, 0, 0, 2, 37, &failures, &errors);
    CHECK(failures == 0 && errors == 3, "rank 2 aborts in round 37: the 3 other "
          "ranks return an error instead of waiting (%d errors, %d inexact "
          "before)", errors, failures);
    errors = c->ops->all_reduce_sum(c, 0, x, 4, CLEF_COMM_F32, NULL, &err);
    CHECK(errors == -1 && strstr(err.message, "another rank failed") != NULL,
          "a rank arriving after the abort returns at once: %s", err.message);
    clef_comm_cpu_reset(c);
    run(c, 4, 50, 0, 0, -1, -1, &failures, &errors);
    CHECK(failures == 0 && errors == 0, "after a reset the communicator sums "
          "exactly again");
    run(c, 4, 50, 0, 0, 0, 0, &failures, &errors);
    CHECK(errors == 3, "rank 0 aborting before the first round releases 3 ranks");
    clef_comm_cpu_reset(c);
    run(c, 4, ROUNDS / 3, 0, 1, 1, 29, &failures, &errors);
    CHECK(failures == 0 && errors == 3, "rank 1 aborts in round 29 of "
          "all_gather: the 3 other ranks return an error (%d errors, %d wrong "
          "before)", errors, failures);
    clef_comm_cpu_reset(c);
    c->ops->destroy(c);

    /* ranks that disagree on the length */
    c = clef_comm_cpu_create(2, &err);
    {
        pthread_t     th;
        mismatch_arg  m = { c, 1, 5, 0, NULL };
        float         y[5] = { 1, 1, 1, 1, 1 };

        m.buf = y;
        pthread_create(&th, NULL, mismatch_main, &m);
        errors = c->ops->all_reduce_sum(c, 0, x, 4, CLEF_COMM_F32, NULL, &err);
        pthread_join(th, NULL);
        CHECK(errors == -1 && m.rc == -1, "4 elements on rank 0, 5 on rank 1: "
              "both ranks refuse (%s)", err.message);
    }
    c->ops->destroy(c);
    return check_done();
}
