/*
 * Items through a decode lane's process (see decoder.h): the request, the
 * child's answer checked as untrusted input, and who is blamed when there
 * is none.
 */
#include "media/decoder.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/dl.h"
#include "media/audio_features.h"
#include "media/decoder_lane.h"
#include "media/decoder_wire.h"
#include "media/video_item.h"

#define STATUS_SECONDS  10.0     /* for the decode process's reports */
#define EXIT_SECONDS     2.0     /* a child that closed its socket, to
                                    be seen exiting by itself */
/* the most bytes of frames a video may come back as, whatever it says */
#define MAX_FRAMES_BYTES  (INT64_C(1) << 30)

typedef struct {
    int                      index;     /* the first item's */
    const char              *kind;      /* "video", "audio", "image" */
    const char              *noun;      /* "Video", "Audio clip", "Image" */
    char                     name[48];  /* its first item in messages:
                                           "Video 1", "Video 1's sound" */
    clef_decode_verdict     *verdict;   /* what a failure says of the file
                                           (decoder.h) */
    const uint8_t *const    *data;      /* its files, n of them */
    const size_t            *lens;
    int                      n;
    double                   deadline;
    const clef_decoder_run  *run;
    clef_decoder_lane       *lane;
    const char              *field;     /* "videos", "audio", "images" */
    char                     loc[64];
} job;

/* What a child may refuse a file with: its kind's 400s, each with what
 * it says of the file (decoder.h's verdicts), nothing else (a child that
 * says anything else answered against its code). */
typedef struct {
    const char           *type;
    clef_decode_verdict   verdict;
} refusal;

static const refusal  video_refusals[] = {
    { "video_invalid", CLEF_DECODE_UNDECODABLE },
    { "video_no_stream", CLEF_DECODE_NO_STREAM },
    { "video_codec_unsupported", CLEF_DECODE_OVER_LIMIT },
    { "video_too_many_pixels", CLEF_DECODE_OVER_LIMIT },
    { "video_too_long", CLEF_DECODE_OVER_LIMIT },
    { "video_too_many_frames", CLEF_DECODE_OVER_LIMIT },
    { "video_decode_budget", CLEF_DECODE_OVER_LIMIT },
    { "video_one_frame", CLEF_DECODE_OVER_LIMIT },
    { NULL, CLEF_DECODE_OK }
};
static const refusal  audio_refusals[] = {
    { "audio_invalid", CLEF_DECODE_UNDECODABLE },
    { "audio_no_stream", CLEF_DECODE_NO_STREAM },
    { "audio_codec_unsupported", CLEF_DECODE_OVER_LIMIT },
    { "audio_too_long", CLEF_DECODE_OVER_LIMIT },
    { "audio_too_short", CLEF_DECODE_OVER_LIMIT },
    { "audio_decode_budget", CLEF_DECODE_OVER_LIMIT },
    { NULL, CLEF_DECODE_OK }
};
static const refusal  image_refusals[] = {
    { "image_invalid", CLEF_DECODE_UNDECODABLE },
    { "image_type_mismatch", CLEF_DECODE_UNDECODABLE },
    { "image_too_many_pixels", CLEF_DECODE_OVER_LIMIT },
    { NULL, CLEF_DECODE_OK }
};


int
clef_decoder_path(char *path, size_t size)
{
    const char  *env = getenv("CLEF_DECODER");

    if (env != NULL && env[0] != '\0') {
        return snprintf(path, size, "%s", env) < (int) size ? 0 : -1;
    }
    return clef_path_beside((const void *) clef_decoder_path,
                            CLEF_DECODER_NAME, path, size);
}


void
clef_decoder_stop(void)
{
    clef_decoder_lane  *l = clef_decoder_lane_default();

    pthread_mutex_lock(&l->mu);
    clef_decoder_lane_down(l);
    pthread_mutex_unlock(&l->mu);
}


static int
job_cancelled(const job *j)
{
    return j->run != NULL && j->run->cancelled != NULL
           && j->run->cancelled(j->run->ctx);
}


/* Waits until fd is ready for events, the deadline, or the request is
 * gone; relays the lane's stderr meanwhile and calls progress about once
 * a second.  1 ready, 0 past the deadline or cancelled, -1 on an error. */
static int
wait_fd(int fd, short events, const job *j)
{
    struct pollfd  p[2];
    double         left;
    int            rc, n;

    for ( ;; ) {
        left = j->deadline - clef_clock_seconds();
        if (left <= 0 || job_cancelled(j)) {
            return 0;
        }
        p[0].fd = fd;
        p[0].events = events;
        p[0].revents = 0;
        n = 1;
        if (j->lane->errfd >= 0) {
            p[1].fd = j->lane->errfd;
            p[1].events = POLLIN;
            p[1].revents = 0;
            n = 2;
        }
        rc = poll(p, (nfds_t) n, left > 1.0 ? 1000 : (int) (left * 1000) + 1);
        if (rc < 0 && errno != EINTR) {
            return -1;
        }
        if (n == 2 && p[1].revents != 0) {
            clef_decoder_lane_relay(j->lane);
        }
        if (rc > 0 && p[0].revents != 0) {
            return 1;
        }
        if (rc == 0 && j->run != NULL && j->run->progress != NULL) {
            j->run->progress(j->run->ctx);
        }
    }
}


static int
job_wait(int fd, short events, void *ctx)
{
    return wait_fd(fd, events, ctx);
}


/* clef_dec_read_all() against the job's deadline. */
static int
read_until(int fd, void *buf, size_t len, const job *j)
{
    clef_dec_io  io = { job_wait, (void *) j, 0 };

    return clef_dec_read_all(fd, buf, len, &io);
}


/* A report of the decode process about pid (0: any), within seconds. */
static int
read_status(const job *j, uint32_t what, pid_t pid, double seconds,
    clef_dec_status *st)
{
    job  w = *j;

    w.run = NULL;        /* a report is not the request's to cancel */
    w.deadline = clef_clock_seconds() + seconds;
    if (read_until(j->lane->ctl, st, sizeof(*st), &w) != 0
        || st->magic != CLEF_DEC_MAGIC || st->what != what
        || (pid > 0 && st->pid != pid))
    {
        return -1;
    }
    return 0;
}


/* The files down the item's socket, then its end: the child reads all of
 * them before it decodes. */
static int
send_files(int fd, const job *j)
{
    clef_dec_io  io = { job_wait, (void *) j, 0 };
    int          k;

    for (k = 0; k < j->n; k++) {
        if (clef_dec_write_all(fd, j->data[k], j->lens[k], &io) != 0) {
            return -1;
        }
    }
    return shutdown(fd, SHUT_WR);
}


/* Where item k of the job is in the request. */
static void
item_loc(const job *j, int k, char *loc, size_t size)
{
    snprintf(loc, size, "[\"body\",\"%s\",%d]", j->field, j->index + k);
}


/* The refusal's verdict when its kind's list has it, else OK (it may not
 * refuse with that: treated as the decoder failing on the file). */
static clef_decode_verdict
refusal_verdict(const char *kind, const char *type)
{
    const refusal  *t = strcmp(kind, "audio") == 0 ? audio_refusals
                        : strcmp(kind, "image") == 0 ? image_refusals
                        : video_refusals;

    for ( /* void */ ; t->type != NULL; t++) {
        if (strcmp(t->type, type) == 0) {
            return t->verdict;
        }
    }
    return CLEF_DECODE_OK;
}


/* A refusal the child sent, kept only in the shapes it may take (the
 * closed list above, at this item's place); a child out of memory ran out
 * of its address space, the file's budget. */
static int
child_error(clef_dec_result *r, const job *j, int k, clef_error *err)
{
    char                 type[40], msg[sizeof(r->err.message)], loc[64],
                         name[48];
    clef_decode_verdict  v;
    size_t               i;

    snprintf(name, sizeof(name), "%s", j->name);
    r->err.type[sizeof(r->err.type) - 1] = '\0';
    r->err.message[sizeof(r->err.message) - 1] = '\0';
    item_loc(j, k, loc, sizeof(loc));
    v = r->err.status == 400 ? refusal_verdict(j->kind, r->err.type)
                             : CLEF_DECODE_OK;
    if (v != CLEF_DECODE_OK) {
        *j->verdict = v;
        for (i = 0; r->err.message[i] != '\0'; i++) {
            msg[i] = r->err.message[i] >= 0x20 && r->err.message[i] < 0x7f
                     ? r->err.message[i] : '?';
        }
        msg[i] = '\0';
        return clef_error_set(err, 400, r->err.type, loc, "%s", msg);
    }
    /* images have no decode budget of their own: a file too big to
     * decode is an invalid one */
    snprintf(type, sizeof(type), "%s_%s", j->kind,
             r->err.code == CLEF_E_NO_MEMORY && strcmp(j->kind, "image") != 0
             ? "decode_budget" : "invalid");
    if (k > 0) {
        snprintf(name, sizeof(name), "%s %d", j->noun, j->index + k);
    }
    *j->verdict = r->err.code == CLEF_E_NO_MEMORY
                  && strcmp(j->kind, "image") != 0
                  ? CLEF_DECODE_OVER_LIMIT : CLEF_DECODE_UNDECODABLE;
    if (r->err.code == CLEF_E_NO_MEMORY) {
        return clef_error_set(err, 400, type, loc, "%s cannot be decoded "
            "within the decoder's memory budget (%llu MiB of address "
            "space).", name, (unsigned long long) (CLEF_DECODER_MAX_AS >> 20));
    }
    return clef_error_set(err, 400, type, loc, "%s cannot be decoded: the "
                          "decoder failed on it.", name);
}


/* How a child that did not answer ended. */
typedef struct {
    int     status;         /* waitpid()'s */
    double  cpu_seconds;    /* the child's user + system time */
    double  cpu_limit;      /* its RLIMIT_CPU soft limit */
    int     killed;         /* this side killed it (malformed answer) */
    int     timed_out;      /* ... because its wall-clock time was up */
} fate;


static int
child_fate(const fate *f, double budget, const job *j, clef_error *err)
{
    int   sig = WIFSIGNALED(f->status) ? WTERMSIG(f->status) : 0;
    char  invalid[40], over[40];

    snprintf(invalid, sizeof(invalid), "%s_invalid", j->kind);
    /* images have no budget type of their own (decoder.h) */
    snprintf(over, sizeof(over), "%s_%s", j->kind,
             strcmp(j->kind, "image") == 0 ? "invalid" : "decode_budget");
    *j->verdict = CLEF_DECODE_UNDECODABLE;
    if (f->timed_out) {
        *j->verdict = CLEF_DECODE_OVER_LIMIT;
        return clef_error_set(err, 400, over, j->loc,
            "%s took longer than %.0f s to decode; the limit is %.0f "
            "s.", j->name, budget + CLEF_DECODER_GRACE, budget);
    }
    if (f->killed) {
        return clef_error_set(err, 400, invalid, j->loc,
            "%s cannot be decoded: the decoder's answer was "
            "malformed.", j->name);
    }
    if (sig == SIGSYS) {
        return clef_error_set(err, 400, invalid, j->loc,
            "%s cannot be decoded: the decoder made a system call its "
            "sandbox forbids and was stopped.", j->name);
    }
    /* SIGXCPU at its soft CPU limit, SIGKILL at its hard one: either is
     * its own budget only when it really used that much CPU */
    if (sig == SIGXCPU
        || (sig == SIGKILL && f->cpu_seconds >= f->cpu_limit))
    {
        *j->verdict = CLEF_DECODE_OVER_LIMIT;
        return clef_error_set(err, 400, over, j->loc,
            "%s cannot be decoded: the decoder ran out of its CPU "
            "budget (%.0f s).", j->name, f->cpu_limit);
    }
    if (sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP
        || sig == SIGQUIT)
    {
        *j->verdict = CLEF_DECODE_SERVER;
        return clef_error_set(err, 503, "service_unavailable", j->loc,
            "%s was not decoded: the decode process was killed from "
            "outside the server (signal %d, %s: the kernel's OOM killer or "
            "an operator); retry.", j->name, sig, strsignal(sig));
    }
    if (sig != 0) {
        return clef_error_set(err, 400, invalid, j->loc,
            "%s cannot be decoded: the decoder crashed on it (signal "
            "%d, %s).", j->name, sig, strsignal(sig));
    }
    return clef_error_set(err, 400, invalid, j->loc,
        "%s cannot be decoded: the decoder ended (exit %d) without "
        "an answer.", j->name,
        WIFEXITED(f->status) ? WEXITSTATUS(f->status) : -1);
}


/* The decode process itself is gone or broken: the server's failure. */
static int
lane_failed(const job *j, const char *during, clef_error *err)
{
    clef_decoder_lane  *l = j->lane;
    double              t = clef_clock_seconds() + EXIT_SECONDS;

    /* dead already (its control socket ended): give the kernel a moment
     * to make it reapable, then say how it died */
    while (!clef_decoder_lane_reap(l, during)
           && clef_clock_seconds() < t)
    {
        usleep(10000);
    }
    if (l->pid > 0) {
        clef_decoder_lane_down(l);
    }
    return clef_error_set(err, 503, "service_unavailable", j->loc,
                          "%s was not decoded: the decode process "
                          "stopped %s; retry.", j->name, during);
}


/* What a child's answers are turned into: a video's media item, an
 * audio clip's samples, or a record's images (*decoded of them). */
typedef struct {
    clef_media_item  *item;
    float           **samples;
    int64_t          *n;
    clef_rgb_image   *images;
    int              *decoded;
} dec_out;


/* The child's samples are untrusted like its pixels: a NaN or an infinity
 * would make every feature NaN (the child refuses them; one that did not
 * answered against its code). */
static int
check_samples(const float *x, int64_t n, const job *j, clef_error *err)
{
    int64_t  i;

    for (i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            return clef_error_set(err, 400, "audio_invalid", j->loc,
                "%s cannot be decoded: the decoder answered a sample that "
                "is not a finite number.", j->name);
        }
    }
    return 0;
}


/* The payload's size an answer r may have, from what it says and what
 * the request allows; -1 when it says something impossible. */
static int64_t
payload_bytes(const clef_dec_request *rq, clef_dec_result *r)
{
    int64_t  max;

    switch (rq->kind) {
    case CLEF_MEDIA_AUDIO:
        max = (int64_t) (rq->audio.max_seconds * CLEF_AUDIO_RATE);
        return r->audio.samples > 0 && r->audio.samples <= max
               && r->rgb_len == (uint64_t) r->audio.samples * sizeof(float)
               ? (int64_t) r->rgb_len : -1;
    case CLEF_MEDIA_IMAGE:
        return r->width > 0 && r->height > 0
               && (int64_t) r->width * r->height <= rq->max_pixels
               && r->rgb_len == (uint64_t) r->width * r->height * 3
               ? (int64_t) r->rgb_len : -1;
    default:
        break;
    }
    r->info.codec[sizeof(r->info.codec) - 1] = '\0';
    if (r->info.n_frames <= 0 || r->info.n_frames > rq->limits.max_frames
        || r->info.width <= 0 || r->info.height <= 0
        || (int64_t) r->info.width * r->info.height > rq->limits.max_pixels)
    {
        return -1;
    }
    max = clef_video_frames_bytes(&r->info, &rq->video);
    return max > 0 && max <= MAX_FRAMES_BYTES && r->rgb_len == (uint64_t) max
           ? max : -1;
}


/* Reads one answer: 1 read (r, and *payload when ok), 0 it said nothing
 * complete, -1 what it said cannot be (a malformed answer). */
static int
read_answer(int fd, const clef_dec_request *rq, const job *j,
    clef_dec_result *r, uint8_t **payload)
{
    int64_t  want;

    *payload = NULL;
    if (read_until(fd, r, sizeof(*r), j) != 0) {
        return 0;
    }
    if (r->magic != CLEF_DEC_MAGIC || (r->ok != 0 && r->ok != 1)) {
        return -1;
    }
    if (r->ok == 0) {
        return 1;
    }
    /* nothing is allocated as the child says, only as the request allows */
    want = payload_bytes(rq, r);
    if (want <= 0) {
        return -1;
    }
    *payload = malloc((size_t) want);
    if (*payload != NULL && read_until(fd, *payload, (size_t) want, j) == 0) {
        return 1;
    }
    free(*payload);
    *payload = NULL;
    return 0;
}


/* The child's answers, one a file up to the first refusal, then the end
 * of its socket: *got of them; 1 when that is all it had to say. */
typedef struct {
    clef_dec_result   r[CLEF_DEC_MAX_FILES];
    uint8_t          *payload[CLEF_DEC_MAX_FILES];
    int               got;
} answers;


static int
read_answers(int fd, const clef_dec_request *rq, const job *j, answers *a)
{
    char  end;
    int   rc;

    a->got = 0;
    while (a->got < j->n) {
        rc = read_answer(fd, rq, j, &a->r[a->got], &a->payload[a->got]);
        if (rc != 1) {
            return rc;
        }
        if (a->r[a->got++].ok == 0) {
            break;
        }
    }
    /* and nothing more */
    return read_until(fd, &end, 1, j) != 0 ? 1 : -1;
}


static void
answers_free(answers *a)
{
    int  k;

    for (k = 0; k < a->got; k++) {
        free(a->payload[k]);
        a->payload[k] = NULL;
    }
}


/* The answers as what they make (the child exited 0 after them); a's
 * payloads are taken or freed. */
static int
take_answers(const clef_dec_request *rq, answers *a, const job *j,
    const dec_out *out, clef_error *err)
{
    clef_dec_result  *r = &a->r[0];
    int               k, rc;

    if (rq->kind == CLEF_MEDIA_IMAGE) {
        for (k = 0; k < a->got && a->r[k].ok; k++) {
            out->images[k].width = a->r[k].width;
            out->images[k].height = a->r[k].height;
            out->images[k].rgb = a->payload[k];
            a->payload[k] = NULL;
        }
        *out->decoded = k;
        rc = k < a->got ? child_error(&a->r[k], j, k, err) : 0;
        answers_free(a);
        return rc;
    }
    if (r->ok == 0) {
        return child_error(r, j, 0, err);
    }
    if (rq->kind == CLEF_MEDIA_AUDIO) {
        rc = check_samples((const float *) a->payload[0], r->audio.samples,
                           j, err);
        if (rc == 0) {
            *out->samples = (float *) a->payload[0];
            *out->n = r->audio.samples;
            a->payload[0] = NULL;
        }
        answers_free(a);
        return rc;
    }
    /* clef_video_item() takes the frames, kept or not */
    rc = clef_video_item(&r->info, &rq->video, a->payload[0],
                         (size_t) r->rgb_len, j->index, out->item, err);
    a->payload[0] = NULL;
    return rc;
}


/* The job through a fresh child; the lane's lock is held and its process
 * runs. */
static int
decode_job(const clef_dec_request *rq, job *j, const dec_out *out,
    clef_error *err)
{
    clef_decoder_lane  *l = j->lane;
    clef_dec_status     st;
    answers             a;
    fate                f;
    int                 sp[2], answered = 0;
    pid_t               pid;

    memset(&f, 0, sizeof(f));
    a.got = 0;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "socketpair: %s",
                               strerror(errno));
    }
    if (clef_dec_send_fd(l->ctl, rq, sizeof(*rq), sp[1]) != 0) {
        close(sp[0]);
        close(sp[1]);
        return lane_failed(j, "before it took the item", err);
    }
    close(sp[1]);
    if (read_status(j, CLEF_DEC_FORKED, 0, STATUS_SECONDS, &st) != 0) {
        close(sp[0]);
        return lane_failed(j, "before it started the item's child", err);
    }
    pid = st.pid;
    if (pid <= 0) {
        close(sp[0]);
        return clef_error_set(err, 503, "service_unavailable", j->loc,
                              "%s was not decoded: the decode process "
                              "cannot fork (%s); retry.", j->name,
                              strerror(st.wait_status));
    }

    if (send_files(sp[0], j) == 0) {
        answered = read_answers(sp[0], rq, j, &a);
    }
    if (answered < 0) {
        /* what it said cannot be: ours to end, its file's to answer for */
        answered = 0;
        f.killed = 1;
        kill(pid, SIGKILL);
    } else if (!answered && (job_cancelled(j)
                             || clef_clock_seconds() >= j->deadline))
    {
        /* its time is up, or nobody waits for it any more */
        f.timed_out = !job_cancelled(j);
        f.killed = 1;
        kill(pid, SIGKILL);
    }
    close(sp[0]);
    /* a child that ended its answer early may have been killed from
     * outside: let it be seen exiting by itself before it is blamed */
    if (read_status(j, CLEF_DEC_EXITED, pid,
                    answered || f.killed ? STATUS_SECONDS : EXIT_SECONDS,
                    &st) != 0)
    {
        if (answered || f.killed) {
            answers_free(&a);
            return lane_failed(j, "while a child decoded", err);
        }
        /* still running after what it sent: malformed, ours to end */
        f.killed = 1;
        kill(pid, SIGKILL);
        if (read_status(j, CLEF_DEC_EXITED, pid, STATUS_SECONDS, &st) != 0) {
            answers_free(&a);
            return lane_failed(j, "while a child decoded", err);
        }
    }
    if (job_cancelled(j)) {
        answers_free(&a);
        return clef_error_set(err, 499, "cancelled", j->loc, "The request "
                              "went away while %s %d was decoded.", j->kind,
                              j->index);
    }
    f.status = st.wait_status;
    f.cpu_seconds = (double) st.cpu_ms / 1000;
    f.cpu_limit = 2 * (rq->kind == CLEF_MEDIA_AUDIO
                       ? rq->audio.max_decode_seconds
                       : rq->limits.max_decode_seconds);
    /* answers count only from a child that then exited by itself */
    if (answered && WIFEXITED(f.status) && WEXITSTATUS(f.status) == 0) {
        return take_answers(rq, &a, j, out, err);
    }
    if (answered && a.got == 1 && a.r[0].ok == 0
        && a.r[0].err.code == CLEF_E_INTERNAL
        && strncmp(a.r[0].err.message, "decoder sandbox: ", 17) == 0)
    {
        /* the server's own failure (a kernel without what the sandbox
         * needs): no file is to blame, and no retry will help */
        a.r[0].err.message[sizeof(a.r[0].err.message) - 1] = '\0';
        return clef_error_fail(err, CLEF_E_INTERNAL, "%s cannot be "
                               "decoded here: the %s", j->name,
                               a.r[0].err.message);
    }
    answers_free(&a);
    if (answered) {
        /* it answered, then did not exit cleanly: the answers are void */
        f.killed = 0;
    }
    return child_fate(&f, f.cpu_limit / 2, j, err);
}


/* The job through a child of the lane's decode process, which is started
 * when none runs. */
static int
run_job(const clef_decoder_run *run, clef_dec_request *rq, job *j,
    double budget, const dec_out *out, clef_error *err)
{
    clef_decoder_lane  *l;
    size_t              len = 0;
    int                 k, rc;

    for (k = 0; k < j->n; k++) {
        len += j->lens[k];
        rq->lens[k] = j->lens[k];
    }
    /* a failure no step names otherwise is the server's */
    *j->verdict = CLEF_DECODE_SERVER;
    if (len > CLEF_DEC_MAX_FILE) {
        *j->verdict = CLEF_DECODE_OVER_LIMIT;
        return clef_error_set(err, 413, rq->kind == CLEF_MEDIA_AUDIO
                              ? "audio_too_large" : "video_too_large",
                              j->loc, "%s is %zu bytes; the decoder "
                              "takes at most %u.", j->name, len,
                              CLEF_DEC_MAX_FILE);
    }
    l = run != NULL && run->lane != NULL ? run->lane
                                         : clef_decoder_lane_default();
    if (l == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    j->run = run;
    j->lane = l;
    rq->magic = CLEF_DEC_MAGIC;
    rq->index = j->index;
    rq->n_files = (uint32_t) j->n;
    rq->len = len;

    pthread_mutex_lock(&l->mu);
    if (l->pid <= 0 && clef_decoder_lane_up(l, err) != 0) {
        pthread_mutex_unlock(&l->mu);
        return -1;
    }
    snprintf(l->item, sizeof(l->item), "%s %d%s%s%s", j->kind, j->index,
             j->n > 1 ? " and on" : "",
             run != NULL && run->what != NULL ? " of " : "",
             run != NULL && run->what != NULL ? run->what : "");
    j->deadline = clef_clock_seconds() + budget + CLEF_DECODER_GRACE;
    rc = decode_job(rq, j, out, err);
    clef_decoder_lane_relay_end(l);
    l->item[0] = '\0';
    pthread_mutex_unlock(&l->mu);
    if (rc == 0) {
        *j->verdict = CLEF_DECODE_OK;
    } else if (*j->verdict == CLEF_DECODE_SERVER && err->status >= 400
               && err->status < 500 && err->status != 499)
    {
        /* the engine's own checks of what came back (samples, frames) */
        *j->verdict = CLEF_DECODE_UNDECODABLE;
    }
    return rc;
}


static void
job_init(job *j, int index, const char *kind, const char *noun,
    const char *field, const uint8_t *const *data, const size_t *lens,
    int n, clef_decode_verdict *verdict)
{
    memset(j, 0, sizeof(*j));
    j->index = index;
    j->kind = kind;
    j->noun = noun;
    j->data = data;
    j->lens = lens;
    j->n = n;
    j->verdict = verdict;
    j->field = field;
    snprintf(j->name, sizeof(j->name), "%s %d", noun, index);
    item_loc(j, 0, j->loc, sizeof(j->loc));
}


int
clef_decoder_video_run(const clef_decoder_run *run, const uint8_t *data,
    size_t len, int index, const clef_video_limits *lim,
    const clef_video_config *vc, clef_media_item *out, clef_error *err)
{
    clef_dec_request     rq;
    clef_decode_verdict  v;
    dec_out              o = { out, NULL, NULL, NULL, NULL };
    job                  j;

    memset(out, 0, sizeof(*out));
    job_init(&j, index, "video", "Video", "videos", &data, &len, 1, &v);
    memset(&rq, 0, sizeof(rq));
    rq.kind = CLEF_MEDIA_VIDEO;
    rq.limits = *lim;
    rq.video = *vc;
    clef_audio_limits_default(&rq.audio);
    return run_job(run, &rq, &j, lim->max_decode_seconds, &o, err);
}


int
clef_decoder_audio_run(const clef_decoder_run *run, const uint8_t *data,
    size_t len, int index, const clef_audio_limits *lim, float **samples,
    int64_t *n, clef_decode_verdict *verdict, clef_error *err)
{
    clef_dec_request     rq;
    clef_decode_verdict  v;
    dec_out              o = { NULL, samples, n, NULL, NULL };
    job                  j;
    int                  rc;

    *samples = NULL;
    *n = 0;
    job_init(&j, index, "audio", "Audio clip", lim->track ? "videos"
                                                           : "audio",
             &data, &len, 1, &v);
    if (lim->track) {
        /* a video's sound is named after its video */
        snprintf(j.name, sizeof(j.name), "Video %d's sound", index);
    }
    memset(&rq, 0, sizeof(rq));
    rq.kind = CLEF_MEDIA_AUDIO;
    clef_video_limits_default(&rq.limits);
    clef_video_config_default(&rq.video);
    rq.audio = *lim;
    rc = run_job(run, &rq, &j, lim->max_decode_seconds, &o, err);
    if (verdict != NULL) {
        *verdict = v;
    }
    return rc;
}


int
clef_decoder_images_run(const clef_decoder_run *run,
    const clef_media_input *in, int n, int index, int64_t max_pixels,
    int exif, clef_rgb_image *out, int *decoded, clef_error *err)
{
    clef_dec_request     rq;
    clef_decode_verdict  v;
    const uint8_t       *data[CLEF_DEC_MAX_FILES];
    size_t               lens[CLEF_DEC_MAX_FILES];
    dec_out              o = { NULL, NULL, NULL, out, decoded };
    job                  j;
    int                  k;

    *decoded = 0;
    if (n < 1 || n > CLEF_DEC_MAX_FILES) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "%d images in one "
                               "request to the decoder; it takes 1 to %d",
                               n, CLEF_DEC_MAX_FILES);
    }
    memset(&rq, 0, sizeof(rq));
    for (k = 0; k < n; k++) {
        data[k] = in[k].data;
        lens[k] = in[k].len;
        rq.formats[k] = (uint32_t) in[k].format;
        memset(&out[k], 0, sizeof(out[k]));
    }
    job_init(&j, index, "image", "Image", "images", data, lens, n, &v);
    rq.kind = CLEF_MEDIA_IMAGE;
    rq.max_pixels = max_pixels;
    rq.exif = exif != 0;
    clef_video_limits_default(&rq.limits);
    clef_video_config_default(&rq.video);
    clef_audio_limits_default(&rq.audio);
    /* each image has its decode time (image_decode.h), and a CPU
     * budget of twice that */
    rq.limits.max_decode_seconds = CLEF_IMAGE_DECODE_SECONDS * n;
    return run_job(run, &rq, &j, rq.limits.max_decode_seconds, &o, err);
}


int
clef_decoder_video(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc,
    void (*progress)(void *ctx), void *ctx, clef_media_item *out,
    clef_error *err)
{
    clef_decoder_run  run = { NULL, progress, NULL, ctx, NULL };

    return clef_decoder_video_run(&run, data, len, index, lim, vc, out, err);
}


int
clef_decoder_audio(const uint8_t *data, size_t len, int index,
    const clef_audio_limits *lim, void (*progress)(void *ctx), void *ctx,
    float **samples, int64_t *n, clef_error *err)
{
    clef_decoder_run  run = { NULL, progress, NULL, ctx, NULL };

    return clef_decoder_audio_run(&run, data, len, index, lim, samples, n,
                                  NULL, err);
}
