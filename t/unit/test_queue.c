/*
 * The shared-memory queue: slot life cycle, FIFO order, limits,
 * cancellation in every state, generations, orphans, the allocator, and
 * the cross-process paths (futex wake-up, wake sockets, a lock holder that
 * dies).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "serve/queue.h"

#define ZONE_SIZE  (2 * 1024 * 1024)
#define ZONE_ID    0x1234abcdULL


static void *
shared_zone(size_t size)
{
    void  *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;
}


static int
submit(clef_queue *q, const char *body, uint32_t n_options, uint32_t gen,
    pid_t owner, uint32_t max_queue, uint32_t *slot, uint32_t *seq)
{
    clef_submission  s;

    memset(&s, 0, sizeof(s));
    s.body = body;
    s.body_len = strlen(body);
    s.n_options = n_options;
    s.gen = gen;
    s.owner_pid = owner;
    s.max_queue = max_queue;
    return clef_queue_submit(q, &s, slot, seq);
}


static pid_t
dead_pid(void)
{
    pid_t  pid = fork();

    if (pid == 0) {
        _exit(0);
    }
    waitpid(pid, NULL, 0);
    return pid;
}


static void
test_life_cycle(clef_queue *q)
{
    uint32_t          slot[3], seq[3], got;
    const char       *bodies[3] = { "{\"a\":1}", "{\"b\":22}", "{\"c\":333}" };
    clef_queue_usage  u;
    clef_wake_note  wake[4];
    int               n_wake = 0, i;
    float            *lg;

    for (i = 0; i < 3; i++) {
        CHECK_INT(submit(q, bodies[i], 2, 1, getpid(), 0, &slot[i], &seq[i]),
                  CLEF_Q_OK, "submit %d", i);
    }
    CHECK_INT(clef_queue_depth(q), 3, "three queued");
    CHECK_INT(clef_queue_done(q, slot[0], seq[0]), 0, "not done yet");
    CHECK_INT(clef_queue_done(q, slot[0], seq[0] + 1), -1, "wrong seq");

    for (i = 0; i < 3; i++) {
        CHECK_INT(clef_queue_take(q, 1, &got, wake, &n_wake, 4), CLEF_TAKE_OK,
                  "take %d", i);
        CHECK_INT(got, slot[i], "FIFO order %d", i);
        CHECK_STR(clef_queue_body(q, got), bodies[i], "body %d intact", i);
        lg = clef_queue_logits_w(q, got);
        lg[0] = (float) i;
        lg[1] = -1.5f;
        clef_queue_slot_w(q, got)->n_tokens = 10 + i;
        CHECK_INT(clef_queue_complete(q, got).pid, getpid(), "complete wakes owner");
    }
    CHECK_INT(clef_queue_take(q, 1, &got, wake, &n_wake, 4), CLEF_TAKE_EMPTY,
              "queue empty");
    CHECK_INT(n_wake, 0, "nobody to wake");

    for (i = 0; i < 3; i++) {
        CHECK_INT(clef_queue_done(q, slot[i], seq[i]), 1, "done %d", i);
        CHECK(clef_queue_logits(q, slot[i])[0] == (float) i
              && clef_queue_logits(q, slot[i])[1] == -1.5f, "logits %d", i);
        CHECK_INT(clef_queue_slot(q, slot[i])->n_tokens, 10 + i, "tokens %d", i);
        clef_queue_release(q, slot[i], seq[i]);
    }
    clef_queue_get_usage(q, &u);
    CHECK_INT(u.slots_used, 0, "every slot free again");
    CHECK_INT(u.data_used, 0, "every data block free again");
}


static void
test_limits(clef_queue *q)
{
    uint32_t          slot[3], seq[3], got;
    clef_queue_usage  u;
    char             *big;
    int               i, n_wake = 0;

    CHECK_INT(submit(q, "{}", 1, 1, getpid(), 2, &slot[0], &seq[0]), CLEF_Q_OK,
              "first under max_queue");
    CHECK_INT(submit(q, "{}", 1, 1, getpid(), 2, &slot[1], &seq[1]), CLEF_Q_OK,
              "second under max_queue");
    CHECK_INT(submit(q, "{}", 1, 1, getpid(), 2, &slot[2], &seq[2]),
              CLEF_Q_FULL, "third refused: queue full");
    for (i = 0; i < 2; i++) {
        clef_queue_take(q, 1, &got, NULL, &n_wake, 0);
        clef_queue_complete(q, got);
        clef_queue_release(q, slot[i], seq[i]);
    }

    big = malloc(ZONE_SIZE);
    memset(big, 'x', ZONE_SIZE - 1);
    big[ZONE_SIZE - 1] = '\0';
    CHECK_INT(submit(q, big, 1, 1, getpid(), 0, &slot[0], &seq[0]),
              CLEF_Q_TOO_BIG, "a body larger than the zone can never fit");
    free(big);

    clef_queue_get_usage(q, &u);
    CHECK_INT(u.slots_used, 0, "limits leave nothing behind");
}


static void
test_cancel(clef_queue *q)
{
    uint32_t          a, sa, b, sb, c, sc, got;
    clef_queue_usage  u;
    uint64_t          before = atomic_load(&q->h->stats.cancelled);
    int               n_wake = 0;

    submit(q, "{\"queued\":1}", 1, 1, getpid(), 0, &a, &sa);
    submit(q, "{\"taken\":1}", 1, 1, getpid(), 0, &b, &sb);
    submit(q, "{\"done\":1}", 1, 1, getpid(), 0, &c, &sc);

    /* a: cancelled while queued; the engine frees it when it pops it */
    CHECK_INT(clef_queue_cancel(q, a, sa), 1, "cancel a queued record");
    CHECK_INT(clef_queue_take(q, 1, &got, NULL, &n_wake, 0), CLEF_TAKE_OK,
              "take skips the cancelled one");
    CHECK_INT(got, b, "and returns the next");

    /* b: cancelled while the engine holds it */
    CHECK_INT(clef_queue_cancel(q, b, sb), 1, "cancel a taken record");
    CHECK(clef_queue_is_cancelled(q, b), "the engine sees the flag");
    CHECK_INT(clef_queue_complete(q, b).pid, 0, "complete frees it, wakes nobody");

    /* c: finished before the client left */
    clef_queue_take(q, 1, &got, NULL, &n_wake, 0);
    clef_queue_complete(q, got);
    CHECK_INT(clef_queue_cancel(q, c, sc), 0, "a done record is not pending");
    CHECK_INT(clef_queue_cancel(q, c, sc), 0, "cancel twice is harmless");

    CHECK_INT(atomic_load(&q->h->stats.cancelled) - before, 2,
              "two records counted as cancelled");
    clef_queue_get_usage(q, &u);
    CHECK_INT(u.slots_used, 0, "cancelled records leave nothing behind");
    CHECK_INT(u.data_used, 0, "and no data");
}


static void
test_generations(clef_queue *q)
{
    uint32_t          old, so, mine, sm, newer, sn, got;
    clef_wake_note  wake[4];
    int               n_wake = 0;

    submit(q, "{\"gen\":1}", 1, 1, getpid(), 0, &old, &so);
    submit(q, "{\"gen\":2}", 1, 2, getpid(), 0, &mine, &sm);
    submit(q, "{\"gen\":3}", 1, 3, getpid(), 0, &newer, &sn);

    CHECK_INT(clef_queue_take(q, 2, &got, wake, &n_wake, 4), CLEF_TAKE_OK,
              "generation 2 takes its record");
    CHECK_INT(got, mine, "past the older one");
    CHECK_INT(clef_queue_done(q, old, so), 1, "the older record is answered");
    CHECK_INT(clef_queue_slot(q, old)->status, 503, "with 503");
    CHECK_STR(clef_queue_error(q, old)->type, "engine_unavailable",
              "engine_unavailable");
    CHECK_INT(n_wake, 1, "its owner is to be woken");
    CHECK_INT(clef_queue_take(q, 2, &got, wake, &n_wake, 4),
              CLEF_TAKE_OTHER_GEN, "a newer generation stops the drain");
    clef_queue_complete(q, mine);
    CHECK_INT(clef_queue_take(q, 3, &got, wake, &n_wake, 4), CLEF_TAKE_OK,
              "the newer engine takes it");
    clef_queue_complete(q, got);
    clef_queue_release(q, old, so);
    clef_queue_release(q, mine, sm);
    clef_queue_release(q, newer, sn);
}


static void
test_orphans(clef_queue *q)
{
    uint32_t          a, sa, b, sb, got;
    pid_t             gone = dead_pid();
    clef_queue_usage  u;
    uint64_t          before = atomic_load(&q->h->stats.orphaned);
    int               n_wake = 0;

    submit(q, "{\"orphan\":1}", 1, 1, gone, 0, &a, &sa);
    CHECK_INT(clef_queue_take(q, 1, &got, NULL, &n_wake, 0), CLEF_TAKE_EMPTY,
              "a record whose worker died is dropped");

    submit(q, "{\"orphan\":2}", 1, 1, getpid(), 0, &b, &sb);
    clef_queue_take(q, 1, &got, NULL, &n_wake, 0);
    clef_queue_slot_w(q, got)->owner_pid = gone;   /* its worker dies now */
    clef_queue_complete(q, got);
    CHECK_INT(clef_queue_reap_orphans(q), 1, "the reaper frees a done orphan");
    CHECK_INT(atomic_load(&q->h->stats.orphaned) - before, 2,
              "two orphans counted");
    clef_queue_get_usage(q, &u);
    CHECK_INT(u.slots_used, 0, "orphans leave nothing behind");
}


static void
test_fail_all(clef_queue *q)
{
    uint32_t  a, sa, b, sb, c, sc, got;
    clef_wake_note  wake[4];
    int       n_wake = 0, n;

    submit(q, "{\"taken\":1}", 1, 1, getpid(), 0, &a, &sa);
    submit(q, "{\"queued\":1}", 1, 1, getpid(), 0, &b, &sb);
    submit(q, "{\"other\":1}", 1, 2, getpid(), 0, &c, &sc);
    clef_queue_take(q, 1, &got, NULL, &n_wake, 0);

    n = clef_queue_fail_all(q, 1, 503, "engine_unavailable", "restarted",
                            wake, &n_wake, 4);
    CHECK_INT(n, 2, "the taken and the queued record fail");
    CHECK_INT(n_wake, 2, "each noted for its owner");
    CHECK(wake[0].slot == a && wake[0].seq == sa && wake[0].pid == getpid()
          && wake[1].slot == b && wake[1].seq == sb,
          "the notes name the records (slot, seq)");
    CHECK_INT(clef_queue_slot(q, a)->status, 503, "taken one: 503");
    CHECK_INT(clef_queue_slot(q, b)->status, 503, "queued one: 503");
    CHECK_STR(clef_queue_error(q, b)->message, "restarted", "with the message");
    CHECK_INT(clef_queue_done(q, c, sc), 0, "another generation's is kept");
    CHECK_INT(clef_queue_depth(q), 1, "and stays queued");
    clef_queue_take(q, 2, &got, NULL, &n_wake, 0);
    CHECK_INT(got, c, "it is still taken in order");
    clef_queue_complete(q, got);
    clef_queue_release(q, a, sa);
    clef_queue_release(q, b, sb);
    clef_queue_release(q, c, sc);
}


static void
test_allocator(clef_queue *q)
{
    enum { N = 120 };
    uint32_t          slot[N], seq[N], got;
    char              body[12000];
    clef_queue_usage  u;
    int               i, k, ok = 1, n_wake = 0, order[N];
    unsigned          rnd = 12345;

    for (i = 0; i < N; i++) {
        int len = 100 + (int) ((rnd = rnd * 1103515245 + 12345) % 11000);

        memset(body, 'a' + i % 26, (size_t) len);
        body[len] = '\0';
        if (submit(q, body, (uint32_t) (1 + i % 7), 1, getpid(), 0, &slot[i],
                   &seq[i]) != CLEF_Q_OK)
        {
            ok = 0;
        }
        order[i] = i;
    }
    CHECK(ok, "120 records of 100 B to 11 KB fit");
    for (i = 0; i < N; i++) {
        clef_queue_take(q, 1, &got, NULL, &n_wake, 0);
        clef_queue_complete(q, got);
    }
    /* release in a shuffled order: blocks must coalesce whatever the order */
    for (i = N - 1; i > 0; i--) {
        k = (int) ((rnd = rnd * 1103515245 + 12345) % (unsigned) (i + 1));
        int t = order[i];
        order[i] = order[k];
        order[k] = t;
    }
    for (i = 0; i < N; i++) {
        if (clef_queue_body(q, slot[order[i]])[0] != 'a' + order[i] % 26) {
            ok = 0;
        }
        clef_queue_release(q, slot[order[i]], seq[order[i]]);
    }
    CHECK(ok, "bodies were not overwritten");
    clef_queue_get_usage(q, &u);
    CHECK_INT(u.data_used, 0, "all blocks freed");

    /* after coalescing, one body of almost the whole area fits again */
    {
        size_t  len = (size_t) u.data_size - 4096;
        char   *huge = malloc(len + 1);

        memset(huge, 'z', len);
        huge[len] = '\0';
        CHECK_INT(submit(q, huge, 1, 1, getpid(), 0, &slot[0], &seq[0]),
                  CLEF_Q_OK, "the free blocks merged into one");
        clef_queue_take(q, 1, &got, NULL, &n_wake, 0);
        clef_queue_complete(q, got);
        clef_queue_release(q, slot[0], seq[0]);
        free(huge);
    }
}


/* An engine in another process: woken by the futex, answers through the
 * wake socket of its owner. */
static void
test_cross_process(clef_queue *q)
{
    uint32_t        slot, seq, got;
    struct pollfd   pfd;
    pid_t           child, me = getpid();
    int             fd, status, n_wake = 0;
    clef_wake_note  note;

    fd = clef_wake_listen(q->h->zone_id, me);
    CHECK(fd >= 0, "the worker binds its wake socket");

    child = fork();
    if (child == 0) {
        int             efd = clef_wake_sender();
        uint32_t        seen;
        clef_wake_note  done;

        for ( ;; ) {
            seen = clef_queue_futex(q);
            if (clef_queue_take(q, 1, &got, NULL, &n_wake, 0) == CLEF_TAKE_OK) {
                break;
            }
            clef_queue_engine_wait(q, seen, 5000);
        }
        clef_queue_logits_w(q, got)[0] = 4.25f;
        done = clef_queue_complete(q, got);
        clef_wake_send(efd, q->h->zone_id, &done, 1, &q->h->wake_lost);
        _exit(0);
    }

    usleep(50000);   /* let the child go to sleep on the futex */
    CHECK_INT(submit(q, "{\"x\":1}", 1, 1, me, 0, &slot, &seq), CLEF_Q_OK,
              "submit wakes the sleeping engine");
    pfd.fd = fd;
    pfd.events = POLLIN;
    CHECK_INT(poll(&pfd, 1, 5000), 1, "the worker's socket becomes readable");
    CHECK_INT(clef_wake_recv(fd, &note, 1), 1, "one wake-up datagram");
    CHECK(note.slot == slot && note.seq == seq, "naming the record");
    CHECK_INT(clef_queue_done(q, slot, seq), 1, "the record is done");
    CHECK(clef_queue_logits(q, slot)[0] == 4.25f, "with the engine's logits");
    clef_queue_release(q, slot, seq);
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "engine child exited");

    /* a worker that does not read: its socket fills, and what does not fit
     * is counted instead of blocking the sender */
    {
        int             efd = clef_wake_sender(), i;
        uint64_t        lost = atomic_load(&q->h->wake_lost);
        clef_wake_note  n = { me, 1, 2 };

        for (i = 0; i < 100000
                    && atomic_load(&q->h->wake_lost) == lost; i++)
        {
            clef_wake_send(efd, q->h->zone_id, &n, 1, &q->h->wake_lost);
        }
        CHECK(atomic_load(&q->h->wake_lost) > lost, "a full socket: the "
              "wake-up is counted as lost after %d sends, the sender never "
              "blocks", i);
        while (clef_wake_recv(fd, &note, 1) == 1) { /* drain */ }
        close(efd);
    }
    close(fd);
}


/* A process killed while holding the lock must not wedge the others. */
static void
test_dead_lock_holder(clef_queue *q)
{
    uint32_t  slot, seq, got;
    pid_t     child;
    uint64_t  before = atomic_load(&q->h->stats.lock_recoveries);
    int       n_wake = 0;

    child = fork();
    if (child == 0) {
        pthread_mutex_lock(&q->h->lock);
        _exit(0);
    }
    waitpid(child, NULL, 0);
    CHECK_INT(submit(q, "{}", 1, 1, getpid(), 0, &slot, &seq), CLEF_Q_OK,
              "submit after the holder died");
    CHECK_INT(atomic_load(&q->h->stats.lock_recoveries) - before, 1,
              "the recovery is counted");
    clef_queue_take(q, 1, &got, NULL, &n_wake, 0);
    clef_queue_complete(q, got);
    clef_queue_release(q, slot, seq);
}


static void
test_stats(clef_queue *q)
{
    clef_stats_batch(&q->h->stats, 1, 10, 1000);
    clef_stats_batch(&q->h->stats, 5, 50, 1000);
    clef_stats_batch(&q->h->stats, 3, 30, 1000);
    CHECK_INT(atomic_load(&q->h->stats.batches), 3, "three batches");
    CHECK_INT(atomic_load(&q->h->stats.batch_records_max), 5, "max records");
    CHECK_INT(atomic_load(&q->h->stats.batch_hist[0]), 1, "one batch of 1");
    CHECK_INT(atomic_load(&q->h->stats.batch_hist[2]), 1, "one batch of 3-4");
    CHECK_INT(atomic_load(&q->h->stats.batch_hist[3]), 1, "one batch of 5-8");
    clef_stats_response(&q->h->stats, 200, 3000000);
    clef_stats_response(&q->h->stats, 429, -1);
    clef_stats_response(&q->h->stats, 299, -1);
    CHECK_INT(atomic_load(&q->h->stats.responses[clef_stats_status_index(200)]),
              1, "one 200");
    CHECK_INT(atomic_load(&q->h->stats.responses[clef_stats_status_index(429)]),
              1, "one 429");
    CHECK_INT(atomic_load(&q->h->stats.responses[0]), 1, "one other");
    CHECK_INT(atomic_load(&q->h->stats.lat_hist[2]), 1, "3 ms in le=5");
    CHECK_INT(atomic_load(&q->h->stats.lat_count), 1, "latency counted once");
}


int
main(void)
{
    clef_queue   q, q2;
    clef_error   err;
    void        *mem = shared_zone(ZONE_SIZE);

    (void) check_fixtures;
    CHECK(mem != NULL, "shared mapping");
    CHECK_INT(clef_queue_attach(&q2, mem), -1, "no queue in fresh memory");
    CHECK_INT(clef_queue_init(&q, mem, ZONE_SIZE, 0, ZONE_ID, &err), 0,
              "init");
    CHECK_INT(q.h->nslots, clef_queue_default_slots(ZONE_SIZE), "default slots");
    CHECK_INT(clef_queue_attach(&q2, mem), 0, "attach to it");
    CHECK(q2.slots == q.slots && q2.data == q.data, "same layout");
    CHECK_INT(clef_queue_init(&q2, mem, 4096, 64, ZONE_ID, &err), -1,
              "a zone too small is refused");
    clef_queue_init(&q, mem, ZONE_SIZE, 0, ZONE_ID, &err);

    test_life_cycle(&q);
    test_limits(&q);
    test_cancel(&q);
    test_generations(&q);
    test_orphans(&q);
    test_fail_all(&q);
    test_allocator(&q);
    test_cross_process(&q);
    test_dead_lock_holder(&q);
    test_stats(&q);

    CHECK_STR(clef_engine_state_name(CLEF_ENGINE_RESTARTING), "restarting",
              "state names");
    munmap(mem, ZONE_SIZE);
    return check_done();
}
