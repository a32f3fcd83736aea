/*
 * Token-budget batching: packing under max_batch_tokens in FIFO order, the
 * carried record, a record longer than the budget, max_records, records
 * the preparer refuses, and pruning of cancelled and expired records.
 * Chunked prefill: a long record's parts with short records between them
 * (scheduler.h's rules a-c), its weight in the ready FIFO, cancellation
 * between parts, the deadline before its first part only; and the
 * engine's policy on randomized mixes with and without it.
 * The preparer here reads the token count from the body ("{\"t\":N}").
 */
#include <sys/mman.h>
#include <unistd.h>

#include "base/splitmix64.h"
#include "check.h"
#include "serve/scheduler.h"

#define ZONE_SIZE  (1024 * 1024)

typedef struct {
    clef_queue  *q;
    int          prepared;
    int          dropped;
    int          woken;
} test_ctx;


static int
prepare(void *ctx, uint32_t slot, clef_sched_item *it)
{
    test_ctx    *t = ctx;
    const char  *body = clef_queue_body(t->q, slot);
    long         tokens = strtol(body + 5, NULL, 10);
    clef_error   err;

    if (tokens < 0) {
        /* the preparer answers refused records itself */
        clef_error_set(&err, 400, "max_tokens_exceeded", NULL, "too long");
        *clef_queue_error_w(t->q, slot) = err;
        clef_queue_slot_w(t->q, slot)->status = 400;
        clef_queue_complete(t->q, slot);
        return -1;
    }
    t->prepared++;
    it->tokens = tokens;
    it->prep = t;
    return 0;
}


static void
drop(void *ctx, clef_sched_item *it)
{
    test_ctx  *t = ctx;

    t->dropped++;
    it->prep = NULL;
}


static void
wake(void *ctx, const clef_wake_note *notes, int n)
{
    test_ctx  *t = ctx;

    t->woken += n;
}


static void
push(clef_queue *q, long tokens, uint32_t *slot, uint32_t *seq,
    int64_t deadline)
{
    clef_submission  s;
    char         body[64];

    snprintf(body, sizeof(body), "{\"t\":%ld}", tokens);
    memset(&s, 0, sizeof(s));
    s.body = body;
    s.body_len = strlen(body);
    s.n_options = 1;
    s.gen = 1;
    s.owner_pid = getpid();
    s.deadline_ns = deadline;
    clef_queue_submit(q, &s, slot, seq);
}


/*
 * What the two engine threads do, one after the other: prepare queued
 * records into the ready FIFO until it holds a full batch (or the queue is
 * empty), then take the next batch from it into b.  Returns the records in
 * b; *other_gen = 1 when the queue's head is a newer configuration's.
 */
static int
fill(clef_sched *s, clef_sched_batch *b, int *other_gen)
{
    clef_sched_item  it;
    int              rc;

    *other_gen = 0;
    while (!clef_sched_ready_full(s)) {
        rc = clef_sched_take(s, &it);
        if (rc == CLEF_SCHED_PREPARED) {
            clef_sched_ready_push(s, &it);
        } else if (rc != CLEF_SCHED_ANSWERED) {
            *other_gen = rc == CLEF_SCHED_OTHER_GEN;
            break;
        }
    }
    clef_sched_next_batch(s, b);
    return b->n;
}


/* b ran: its records answered, a record in parts with its last part */
static void
finish(clef_sched *s, clef_sched_batch *b)
{
    int  i;

    for (i = 0; i < b->n; i++) {
        if (b->items[i].last) {
            clef_queue_complete(s->q, b->items[i].slot);
        }
    }
    clef_sched_batch_end(s, b, 1);
}


/* 1 when a record that runs whole is ready. */
static int
whole_ready(const clef_sched *s)
{
    int  i;

    for (i = 0; i < s->ready_n; i++) {
        if (s->ready[(s->ready_head + i) % s->ready_cap].tokens
            <= s->chunk_tokens)
        {
            return 1;
        }
    }
    return 0;
}


static void
release_all(clef_queue *q, uint32_t *slot, uint32_t *seq, int n)
{
    int  i;

    for (i = 0; i < n; i++) {
        clef_queue_release(q, slot[i], seq[i]);
    }
}



/*
 * The engine's two threads (engine/engine.c), interleaved turn by turn:
 * the preparing thread takes one record into the ready FIFO unless it is
 * full; the executor, when idle, takes the next batch from the FIFO and
 * finishes it `lag` turns later.  Returns the turns it took until every
 * record was answered, or -1 when a turn moved nothing although work was
 * left (a wedge).  order[] receives the slots in the order they ran.
 */
static int
run_engine_policy(clef_sched *s, clef_queue *q, int lag, uint32_t *order,
    int *n_order, int64_t *max_tokens_multi, int *broken)
{
    clef_sched_batch  running;
    clef_sched_item   it;
    int               turn, busy = 0, progressed, i, rc, had_part = 0;
    int               pending, wready, has_part;

    clef_sched_batch_init(&running, 8);
    *n_order = 0;
    *max_tokens_multi = 0;
    *broken = 0;

    for (turn = 0; turn < 100000; turn++) {
        progressed = 0;
        if (!clef_sched_ready_full(s)) {
            rc = clef_sched_take(s, &it);
            if (rc == CLEF_SCHED_PREPARED) {
                clef_sched_ready_push(s, &it);
            }
            progressed = rc == CLEF_SCHED_PREPARED
                         || rc == CLEF_SCHED_ANSWERED;
        }
        if (busy > 0) {
            /* a running batch is progress: the engine waits for it */
            progressed = 1;
            if (--busy == 0) {
                for (i = 0; i < running.n; i++) {
                    if (running.items[i].last) {
                        order[(*n_order)++] = running.items[i].slot;
                    }
                }
                finish(s, &running);
            }
        }
        pending = clef_sched_has_part(&running);
        wready = whole_ready(s);
        if (busy == 0 && clef_sched_next_batch(s, &running) > 0) {
            if (running.n > 1 && running.tokens > *max_tokens_multi) {
                *max_tokens_multi = running.tokens;
            }
            has_part = running.items[0].parted;
            /* rule a: after a part, ready short records go without one;
             * rule b: after short records, the waiting part goes */
            *broken += pending && had_part && wready && has_part;
            *broken += pending && !had_part && !has_part;
            had_part = has_part;
            busy = lag;
            progressed = 1;
        }
        if (!progressed) {
            if (busy == 0 && s->ready_n == 0 && clef_queue_depth(q) == 0
                && !clef_sched_has_part(&running))
            {
                break;
            }
            turn = -1;
            break;
        }
    }
    clef_sched_batch_free(&running);
    return turn;
}


static void
test_progress(clef_sched *s, clef_queue *q)
{
    uint32_t  slot[48], seq[48], order[48];
    long      tokens[48];
    uint64_t  rng = 42;
    int64_t   max_multi;
    int       round, i, n, n_order, turns, lag, in_order, answered, want;
    int       broken, chunked, parts, last_short, last_long, sh, lo, k;

    /* the mix that wedged the engine: two records that do not fit one
     * batch together (8866 characters each, budget 16384) */
    s->max_batch_tokens = 16384;
    s->max_records = 8;
    push(q, 8900, &slot[0], &seq[0], 0);
    push(q, 8900, &slot[1], &seq[1], 0);
    turns = run_engine_policy(s, q, 1, order, &n_order, &max_multi, &broken);
    CHECK(turns > 0, "two records that do not fit one batch: no wedge");
    CHECK_INT(n_order, 2, "both ran");
    CHECK(order[0] == slot[0] && order[1] == slot[1], "in arrival order");
    CHECK_INT(max_multi, 0, "each in a batch of its own");
    release_all(q, slot, seq, 2);

    /* randomized mixes: tiny, medium, over-budget and refused records,
     * executors of several speeds; every record is answered, FIFO order
     * holds, and no batch of several records exceeds the budget.  Then
     * the same with chunked prefill (parts of 64): records longer than a
     * part run in parts, the short ones between them (rules a and b),
     * each kind in FIFO order among its own */
    s->max_batch_tokens = 100;
    s->max_records = 4;
    for (chunked = 0; chunked <= 1; chunked++) {
        clef_sched_set_chunk(s, chunked ? 64 : 0);
        for (round = 0; round < 200; round++) {
            n = 1 + (int) (clef_splitmix64(&rng) % 40);
            lag = 1 + (int) (clef_splitmix64(&rng) % 4);
            parts = 0;
            for (i = 0; i < n; i++) {
                switch (clef_splitmix64(&rng) % 8) {
                case 0:
                    tokens[i] = -1;                             /* refused */
                    break;
                case 1:
                    tokens[i] = 101 + (long) (clef_splitmix64(&rng) % 400);
                    break;
                case 2:
                case 3:
                    tokens[i] = 40 + (long) (clef_splitmix64(&rng) % 61);
                    break;
                default:
                    tokens[i] = 1 + (long) (clef_splitmix64(&rng) % 20);
                }
                parts += chunked && tokens[i] > 64 ? (int) (tokens[i] + 63) / 64
                                                   : 1;
                push(q, tokens[i], &slot[i], &seq[i], 0);
            }
            turns = run_engine_policy(s, q, lag, order, &n_order, &max_multi,
                                      &broken);
            want = 0;
            answered = 0;
            for (i = 0; i < n; i++) {
                want += tokens[i] >= 0;
                answered += clef_queue_done(q, slot[i], seq[i]) == 1;
            }
            /* in FIFO order: every record (chunked prefill off), or the
             * short ones among themselves and the long ones among
             * themselves */
            in_order = n_order == want;
            last_short = -1;
            last_long = -1;
            for (k = 0; in_order && k < n_order; k++) {
                for (i = 0; i < n && slot[i] != order[k]; i++) {
                    /* its index */
                }
                sh = !chunked || tokens[i] <= 64;
                lo = chunked && tokens[i] > 64;
                in_order = i < n && (!sh || i > last_short)
                           && (!lo || i > last_long)
                           && (chunked || i > last_long);
                last_short = sh ? i : last_short;
                last_long = lo ? i : last_long;
            }
            if (turns < 0 || answered != n || !in_order || max_multi > 100
                || broken != 0 || turns > 4 * parts * (lag + 1) + 4)
            {
                break;
            }
            release_all(q, slot, seq, n);
        }
        CHECK_INT(round, 200, "200 random mixes%s: no wedge, every record "
                  "answered in FIFO order within 4 turns per %s, batches "
                  "within the budget%s (stopped at round %d: turns %d, "
                  "answered %d of %d, in order %d, largest batch %lld, "
                  "rules broken %d)",
                  chunked ? " in parts of 64" : "",
                  chunked ? "part" : "record",
                  chunked ? ", short records between the parts of long "
                            "ones and parts between batches of short ones"
                          : "", round, turns, answered, n, in_order,
                  (long long) max_multi, broken);
        if (round < 200) {
            release_all(q, slot, seq, n);
        }
    }
    clef_sched_set_chunk(s, 0);
}


/* Chunked prefill, step by step: parts of 64 under a budget of 100. */
static void
test_chunked(clef_sched *s, clef_queue *q, test_ctx *t)
{
    clef_sched_batch  b;
    uint32_t          slot[8], seq[8];
    int               other, i;

    s->max_batch_tokens = 100;
    s->max_records = 4;
    clef_sched_set_chunk(s, 64);
    clef_sched_batch_init(&b, 8);

    push(q, 300, &slot[0], &seq[0], 0);
    push(q, 10, &slot[1], &seq[1], 0);
    CHECK_INT(fill(s, &b, &other), 2, "a record of 300 tokens starts with "
              "a part, a short one joins it");
    CHECK(b.items[0].slot == slot[0] && b.items[0].parted
          && b.items[0].offset == 0 && b.items[0].len == 64
          && !b.items[0].last && b.tokens == 74,
          "its first part: tokens [0, 64), and the short one: 74 tokens");
    CHECK(b.items[1].slot == slot[1] && b.items[1].last
          && !b.items[1].parted, "the short one runs whole");
    finish(s, &b);
    CHECK(clef_sched_has_part(&b) && b.n == 0, "the long record stays with "
          "its executor for its next part");
    CHECK_INT(clef_queue_done(q, slot[0], seq[0]), 0, "it is not answered");

    /* rule a: short records ready go before the next part */
    push(q, 10, &slot[2], &seq[2], 0);
    push(q, 10, &slot[3], &seq[3], 0);
    CHECK_INT(fill(s, &b, &other), 2, "two short records ready: a batch "
              "of them");
    CHECK(!b.items[0].parted && !b.items[1].parted
          && b.items[0].slot == slot[2] && b.items[1].slot == slot[3],
          "without the part, in FIFO order");
    finish(s, &b);

    /* rule b: then the part, whatever is ready */
    push(q, 10, &slot[4], &seq[4], 0);
    CHECK_INT(fill(s, &b, &other), 2, "after short records the part goes");
    CHECK(b.items[0].parted && b.items[0].offset == 64
          && b.items[1].slot == slot[4],
          "tokens [64, 128), the short one beside it");
    finish(s, &b);
    for (i = 0; i < 3 && fill(s, &b, &other) == 1; i++) {
        CHECK(b.items[0].parted && b.items[0].offset == 128 + 64 * i
              && b.items[0].len == (i < 2 ? 64 : 44)
              && b.items[0].last == (i == 2),
              "part %d: [%lld, +%lld)%s", i + 3,
              (long long) b.items[0].offset, (long long) b.items[0].len,
              b.items[0].last ? ", its last" : "");
        finish(s, &b);
    }
    CHECK(i == 3 && !clef_sched_has_part(&b)
          && clef_queue_done(q, slot[0], seq[0]) == 1,
          "five parts, the record answered with the last");
    release_all(q, slot, seq, 5);

    /* a long record waiting behind another one: short records pass it */
    push(q, 200, &slot[0], &seq[0], 0);
    push(q, 200, &slot[1], &seq[1], 0);
    push(q, 10, &slot[2], &seq[2], 0);
    CHECK(fill(s, &b, &other) == 2 && b.items[0].slot == slot[0]
          && b.items[1].slot == slot[2],
          "the first long record's part, the short one passing the second");
    CHECK(!clef_sched_ready_full(s) && s->ready_n == 1
          && s->ready_tokens == 0,
          "the second waits, counting no tokens toward a full batch (%lld "
          "tokens ready)", (long long) s->ready_tokens);
    finish(s, &b);
    while (clef_sched_has_part(&b) && fill(s, &b, &other) > 0) {
        CHECK(b.items[0].slot == slot[0], "part at %lld: the first record's",
              (long long) b.items[0].offset);
        finish(s, &b);
    }
    CHECK(fill(s, &b, &other) == 1 && b.items[0].slot == slot[1],
          "then the second starts");

    /* cancelled between two parts: dropped, its state gone */
    finish(s, &b);
    clef_queue_cancel(q, slot[1], seq[1]);
    t->dropped = 0;
    CHECK_INT(fill(s, &b, &other), 1, "its next part is taken");
    CHECK_INT(clef_sched_prune(s, &b, clef_now_ns()), 0, "then pruned");
    CHECK(t->dropped == 1 && !clef_sched_has_part(&b),
          "the record dropped, the executor free of it");
    clef_sched_batch_end(s, &b, 1);
    release_all(q, slot, seq, 1);
    release_all(q, slot + 2, seq + 2, 1);

    /* the deadline applies until the first part starts */
    push(q, 200, &slot[0], &seq[0], clef_now_ns() + 60000000000LL);
    push(q, 200, &slot[1], &seq[1], 1);
    CHECK_INT(fill(s, &b, &other), 1, "a part of the first");
    CHECK_INT(clef_sched_prune(s, &b, clef_now_ns()), 1,
              "its first part before its deadline: it runs");
    finish(s, &b);
    CHECK_INT(fill(s, &b, &other), 1, "its second part");
    CHECK_INT(clef_sched_prune(s, &b, clef_now_ns() + 120000000000LL), 1,
              "past its deadline, started: it runs on");
    finish(s, &b);
    while (clef_sched_has_part(&b) && fill(s, &b, &other) > 0) {
        finish(s, &b);
    }
    CHECK_INT(clef_queue_done(q, slot[0], seq[0]), 1, "and is answered");
    CHECK(fill(s, &b, &other) == 1
          && clef_sched_prune(s, &b, clef_now_ns()) == 0
          && clef_queue_slot(q, slot[1])->status == 504
          && !clef_sched_has_part(&b),
          "the second, expired before its first part: 504, dropped");
    clef_sched_batch_end(s, &b, 1);
    release_all(q, slot, seq, 2);

    /* a failed batch ends the record in parts */
    push(q, 200, &slot[0], &seq[0], 0);
    CHECK_INT(fill(s, &b, &other), 1, "a first part");
    clef_queue_complete(q, slot[0]);
    clef_sched_batch_end(s, &b, 0);
    CHECK(!clef_sched_has_part(&b), "failed: the record answered and "
          "dropped");
    release_all(q, slot, seq, 1);

    clef_sched_batch_free(&b);
    clef_sched_set_chunk(s, 0);
}


int
main(void)
{
    clef_queue        q;
    clef_error        err;
    clef_sched        s;
    clef_sched_batch  b;
    clef_queue_usage  u;
    test_ctx          t;
    uint32_t          slot[16], seq[16];
    int               other, i;
    void             *mem;

    (void) check_fixtures;
    mem = mmap(NULL, ZONE_SIZE, PROT_READ | PROT_WRITE,
               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    clef_queue_init(&q, mem, ZONE_SIZE, 0, 7, &err);

    memset(&t, 0, sizeof(t));
    t.q = &q;
    memset(&s, 0, sizeof(s));
    s.q = &q;
    s.gen = 1;
    s.max_batch_tokens = 100;
    s.max_records = 4;
    s.prepare = prepare;
    s.drop = drop;
    s.wake = wake;
    s.ctx = &t;
    clef_sched_init(&s, 8);
    clef_sched_batch_init(&b, 8);

    /* fits: the first record always, then within the budget */
    CHECK(clef_sched_fits(&b, 1000, 100, 4), "an empty batch takes anything");

    /* 30+30+30 fit under 100; the fourth 30 waits, prepared */
    for (i = 0; i < 5; i++) {
        push(&q, 30, &slot[i], &seq[i], 0);
    }
    CHECK_INT(fill(&s, &b, &other), 3, "three records of 30 fit");
    CHECK_INT(b.tokens, 90, "90 tokens");
    CHECK_INT(s.ready_n, 1, "the fourth waits in the ready FIFO");
    CHECK(!clef_sched_ready_full(&s), "30 tokens ready: room for more");
    CHECK_INT(clef_queue_depth(&q), 1, "the fifth is still queued");
    CHECK_INT(fill(&s, &b, &other), 3, "a full batch takes nothing more");
    CHECK_INT(s.ready_n, 2, "the fifth is prepared meanwhile");
    finish(&s, &b);

    CHECK_INT(fill(&s, &b, &other), 2, "the fourth and the fifth");
    CHECK_INT(b.items[0].slot, slot[3], "in arrival order");
    CHECK_INT(b.items[1].slot, slot[4], "then the fifth");
    finish(&s, &b);
    release_all(&q, slot, seq, 5);

    /* a record longer than the budget runs alone */
    push(&q, 500, &slot[0], &seq[0], 0);
    push(&q, 10, &slot[1], &seq[1], 0);
    CHECK_INT(fill(&s, &b, &other), 1, "a 500-token record alone");
    CHECK_INT(b.tokens, 500, "over the budget");
    finish(&s, &b);
    CHECK_INT(fill(&s, &b, &other), 1, "the next one after it");
    finish(&s, &b);
    release_all(&q, slot, seq, 2);

    /* max_records caps the batch whatever the tokens */
    for (i = 0; i < 6; i++) {
        push(&q, 1, &slot[i], &seq[i], 0);
    }
    CHECK_INT(fill(&s, &b, &other), 4, "max_records = 4");
    finish(&s, &b);
    CHECK_INT(fill(&s, &b, &other), 2, "the other two");
    finish(&s, &b);
    release_all(&q, slot, seq, 6);

    /* refused records never enter a batch, and are answered */
    push(&q, -1, &slot[0], &seq[0], 0);
    push(&q, 5, &slot[1], &seq[1], 0);
    CHECK_INT(fill(&s, &b, &other), 1, "the refused one is skipped");
    CHECK_INT(clef_queue_done(&q, slot[0], seq[0]), 1, "and answered");
    CHECK_INT(clef_queue_slot(&q, slot[0])->status, 400, "with its status");
    finish(&s, &b);
    release_all(&q, slot, seq, 2);

    /* cancelled before the take: skipped; after: pruned */
    push(&q, 5, &slot[0], &seq[0], 0);
    push(&q, 5, &slot[1], &seq[1], 0);
    push(&q, 5, &slot[2], &seq[2], clef_now_ns() + 60000000000LL);
    push(&q, 5, &slot[3], &seq[3], 1);      /* deadline long past */
    clef_queue_cancel(&q, slot[0], seq[0]);
    CHECK_INT(fill(&s, &b, &other), 3, "a cancelled record is "
              "never taken");
    clef_queue_cancel(&q, slot[1], seq[1]);
    t.dropped = 0;
    t.woken = 0;
    CHECK_INT(clef_sched_prune(&s, &b, clef_now_ns()), 1, "prune keeps one");
    CHECK_INT(b.items[0].slot, slot[2], "the live one");
    CHECK_INT(b.tokens, 5, "tokens recounted");
    CHECK_INT(t.dropped, 2, "two prepared records dropped");
    CHECK_INT(clef_queue_slot(&q, slot[3])->status, 504, "expired: 504");
    CHECK_INT(t.woken, 1, "its owner woken");
    finish(&s, &b);
    release_all(&q, slot + 2, seq + 2, 2);

    /* a ready record that did not fit starts the next batch */
    push(&q, 60, &slot[0], &seq[0], 0);
    push(&q, 60, &slot[1], &seq[1], 0);
    CHECK_INT(fill(&s, &b, &other), 1, "60 + 60 > 100: one fits");
    CHECK_INT(s.ready_n, 1, "the other waits, prepared");
    CHECK(!clef_sched_ready_full(&s), "60 of 100 tokens ready: room for more");
    finish(&s, &b);
    CHECK_INT(clef_sched_next_batch(&s, &b), 1, "it starts the next batch");
    CHECK_INT(b.items[0].slot, slot[1], "it is that record");
    finish(&s, &b);
    CHECK(!clef_sched_ready_full(&s), "an empty FIFO is never full");
    release_all(&q, slot, seq, 2);

    test_progress(&s, &q);
    test_chunked(&s, &q, &t);
    s.max_batch_tokens = 100;
    s.max_records = 4;

    /* a newer generation at the head stops a draining engine */
    {
        clef_submission  sub;
        uint32_t     a, sa;

        memset(&sub, 0, sizeof(sub));
        sub.body = "{\"t\":3}";
        sub.body_len = 7;
        sub.n_options = 1;
        sub.gen = 2;
        sub.owner_pid = getpid();
        clef_queue_submit(&q, &sub, &a, &sa);
        CHECK_INT(fill(&s, &b, &other), 0, "nothing for gen 1");
        CHECK_INT(other, 1, "the head is generation 2");
        s.gen = 2;
        CHECK_INT(fill(&s, &b, &other), 1, "gen 2 takes it");
        finish(&s, &b);
        clef_queue_release(&q, a, sa);
    }

    clef_queue_get_usage(&q, &u);
    CHECK_INT(u.slots_used, 0, "no slot left behind");
    CHECK_INT(u.data_used, 0, "no data left behind");

    clef_sched_batch_free(&b);
    clef_sched_free(&s);
    munmap(mem, ZONE_SIZE);
    return check_done();
}
