/*
 * Token-budget batching: packing under max_batch_tokens in FIFO order, the
 * carried record, a record longer than the budget, max_records, records
 * the preparer refuses, and pruning of cancelled and expired records.
 * The preparer here reads the token count from the body ("{\"t\":N}").
 */
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "scheduler.h"

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
wake(void *ctx, const pid_t *pids, int n)
{
    test_ctx  *t = ctx;

    t->woken += n;
}


static void
push(clef_queue *q, long tokens, uint32_t *slot, uint32_t *seq,
    int64_t deadline)
{
    clef_submit  s;
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


static void
finish(clef_sched *s, clef_sched_batch *b)
{
    int  i;

    for (i = 0; i < b->n; i++) {
        clef_queue_complete(s->q, b->items[i].slot);
    }
    clef_sched_batch_clear(s, b);
}


static void
release_all(clef_queue *q, uint32_t *slot, uint32_t *seq, int n)
{
    int  i;

    for (i = 0; i < n; i++) {
        clef_queue_release(q, slot[i], seq[i]);
    }
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
    (void) check_shared;
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
    clef_sched_batch_init(&b, 8);

    /* fits: the first record always, then within the budget */
    CHECK(clef_sched_fits(&b, 1000, 100, 4), "an empty batch takes anything");

    /* 30+30+30 fit under 100; the fourth 30 waits as the carry */
    for (i = 0; i < 5; i++) {
        push(&q, 30, &slot[i], &seq[i], 0);
    }
    CHECK_INT(clef_sched_fill(&s, &b, &other), 3, "three records of 30 fit");
    CHECK_INT(b.tokens, 90, "90 tokens");
    CHECK(clef_sched_has_carry(&s), "the fourth is carried");
    CHECK(clef_sched_full(&s, &b), "the batch is full");
    CHECK_INT(clef_queue_depth(&q), 1, "the fifth is still queued");
    CHECK_INT(clef_sched_fill(&s, &b, &other), 0, "a full batch takes nothing");
    finish(&s, &b);

    CHECK_INT(clef_sched_fill(&s, &b, &other), 2, "carry + the fifth");
    CHECK_INT(b.items[0].slot, slot[3], "the carry comes first (FIFO)");
    CHECK_INT(b.items[1].slot, slot[4], "then the fifth");
    finish(&s, &b);
    release_all(&q, slot, seq, 5);

    /* a record longer than the budget runs alone */
    push(&q, 500, &slot[0], &seq[0], 0);
    push(&q, 10, &slot[1], &seq[1], 0);
    CHECK_INT(clef_sched_fill(&s, &b, &other), 1, "a 500-token record alone");
    CHECK_INT(b.tokens, 500, "over the budget");
    finish(&s, &b);
    CHECK_INT(clef_sched_fill(&s, &b, &other), 1, "the next one after it");
    finish(&s, &b);
    release_all(&q, slot, seq, 2);

    /* max_records caps the batch whatever the tokens */
    for (i = 0; i < 6; i++) {
        push(&q, 1, &slot[i], &seq[i], 0);
    }
    CHECK_INT(clef_sched_fill(&s, &b, &other), 4, "max_records = 4");
    finish(&s, &b);
    CHECK_INT(clef_sched_fill(&s, &b, &other), 2, "the other two");
    finish(&s, &b);
    release_all(&q, slot, seq, 6);

    /* refused records never enter a batch, and are answered */
    push(&q, -1, &slot[0], &seq[0], 0);
    push(&q, 5, &slot[1], &seq[1], 0);
    CHECK_INT(clef_sched_fill(&s, &b, &other), 1, "the refused one is skipped");
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
    CHECK_INT(clef_sched_fill(&s, &b, &other), 3, "a cancelled record is "
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

    /* a newer generation at the head stops a draining engine */
    {
        clef_submit  sub;
        uint32_t     a, sa;

        memset(&sub, 0, sizeof(sub));
        sub.body = "{\"t\":3}";
        sub.body_len = 7;
        sub.n_options = 1;
        sub.gen = 2;
        sub.owner_pid = getpid();
        clef_queue_submit(&q, &sub, &a, &sa);
        CHECK_INT(clef_sched_fill(&s, &b, &other), 0, "nothing for gen 1");
        CHECK_INT(other, 1, "the head is generation 2");
        s.gen = 2;
        CHECK_INT(clef_sched_fill(&s, &b, &other), 1, "gen 2 takes it");
        finish(&s, &b);
        clef_queue_release(&q, a, sa);
    }

    clef_queue_get_usage(&q, &u);
    CHECK_INT(u.slots_used, 0, "no slot left behind");
    CHECK_INT(u.data_used, 0, "no data left behind");

    clef_sched_batch_free(&b);
    munmap(mem, ZONE_SIZE);
    return check_done();
}
