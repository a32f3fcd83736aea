/*
 * clef decide MODEL: one System One request per stdin line, one response
 * per stdout line, in order.  A request the parser or the encoder refuses
 * gives
 *   {"error": {"status": ..., "type": ..., "message": ..., "loc": [...]}}
 * and the next line goes on.
 *
 * With --batch N, up to N lines that are already waiting on stdin are packed
 * into one forward (never more than BATCH_TOKENS tokens); a line that has to
 * be waited for is never waited for while earlier answers are held back.
 * The backend keeps packed records apart, and the CPU backend computes a
 * record's bits independently of its neighbours and of the thread count
 * (engine/cpu/backend_cpu.h): --batch and -t change how fast the answers
 * come, never a byte of them (t/unit/test_decide_e2e.c checks it).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/buf.h"
#include "base/error.h"
#include "commands.h"
#include "model/model.h"
#include "model/model_media.h"
#include "protocol/answer.h"
#include "protocol/encode.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "text/render.h"

#define BATCH_MAX      64       /* --batch limit */
#define BATCH_TOKENS   16384

static void
decide_usage(FILE *f)
{
    fprintf(f,
        "usage: clef decide MODEL [--mmproj FILE] [-t THREADS] [--raw]\n"
        "                   [--backend cpu|cuda] [--device N] [--max-length N]\n"
        "                   [--truncate-state] [--batch N]\n"
        "                   [--precision fp32|bf16|q8] [--tp N]\n"
        "                   [--gpu-memory SIZE]\n"
        "\n"
        "MODEL is a Clef release directory or a Clef GGUF file.\n"
        "\n"
        "Reads one System One request (JSON) per line on stdin and writes one\n"
        "response per line: {\"model\":...,\"answers\":{...},\"usage\":{...}}, or\n"
        "{\"error\": {\"status\": ..., \"type\": ..., \"message\": ..., \"loc\": [...]}}\n"
        "for a request that is refused.\n"
        "\n"
        "  --mmproj FILE      a GGUF model's vision tower (llama.cpp's mmproj)\n"
        "  -t THREADS         CPU threads (default: one per core)\n"
        "  --raw              add per question \"raw\": options in encoder order,\n"
        "                     unrounded logits and probabilities\n"
        "  --backend NAME     cpu (default) or cuda\n"
        "  --device N         CUDA device ordinal (default 0)\n"
        "  --max-length N     token limit of a record (default %d; %d for\n"
        "                     Clef Omni, as its reference)\n"
        "  --truncate-state   cut a long state to fit, as the reference does,\n"
        "                     instead of refusing with max_tokens_exceeded\n"
        "  --batch N          pack up to N requests already waiting on stdin into\n"
        "                     one forward (default 1, at most %d)\n"
        "  --precision P      fp32 (exact: the CPU's default for a release or\n"
        "                     float weights), bf16 (bf16 activations into the\n"
        "                     linear layers) or q8 (int8 activations times\n"
        "                     quantized GGUF weights: the CPU's default for\n"
        "                     a block-quantized file)\n"
        "  --tp N             tensor-parallel ranks (default 1): N rank threads\n"
        "                     on the CPU, each holding 1/N of the backbone\n"
        "  --gpu-memory SIZE  cuda: the most the backend may use on its device\n"
        "                     (16g, 24000m, as nginx's gpu_memory=); the\n"
        "                     memory plan of --batch records of --max-length\n"
        "                     tokens must fit it, or the open is refused\n"
        "  --help             this text\n", CLEF_DEFAULT_MAX_LENGTH,
        CLEF_OMNI_MAX_LENGTH, BATCH_MAX);
}

/* ---- stdin lines, with a way to ask whether one is ready ---------------- */

typedef struct {
    char    *buf;
    size_t   len;      /* bytes in buf */
    size_t   pos;      /* start of the next line */
    size_t   cap;
    int      eof;
    int      error;
} line_reader;

static int
reader_fill(line_reader *r)
{
    ssize_t  n;
    char    *nb;

    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->cap - r->len < 65536) {
        nb = realloc(r->buf, r->cap * 2 + 65536);
        if (nb == NULL) {
            r->error = ENOMEM;
            return -1;
        }
        r->buf = nb;
        r->cap = r->cap * 2 + 65536;
    }
    do {
        n = read(STDIN_FILENO, r->buf + r->len, r->cap - r->len);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        r->error = errno;
        return -1;
    }
    if (n == 0) {
        r->eof = 1;
    }
    r->len += (size_t) n;
    return 0;
}

/* 1 and the next line (without its newline), 0 when no line is ready and
 * wait is 0, -1 at the end of input or on a read error. */
static int
reader_next(line_reader *r, int wait, const char **line, size_t *len)
{
    char           *nl;
    struct pollfd   pfd;

    for ( ;; ) {
        nl = r->len > r->pos ? memchr(r->buf + r->pos, '\n', r->len - r->pos) : NULL;
        if (nl != NULL || (r->eof && r->len > r->pos)) {
            *line = r->buf + r->pos;
            *len = nl ? (size_t) (nl - *line) : r->len - r->pos;
            r->pos += *len + (nl ? 1 : 0);
            return 1;
        }
        if (r->eof || r->error) {
            return -1;
        }
        if (!wait) {
            pfd.fd = STDIN_FILENO;
            pfd.events = POLLIN;
            if (poll(&pfd, 1, 0) <= 0) {
                return 0;
            }
        }
        if (reader_fill(r) != 0) {
            return -1;
        }
    }
}

/* ---- one line's request -------------------------------------------------- */

typedef struct {
    clef_request  req;
    clef_record   rec;
    int           parsed;
    int           encoded;
    clef_error    err;
} item;

static void
item_free(item *it)
{
    if (it->encoded) {
        clef_record_free(&it->rec);
    }
    if (it->parsed) {
        clef_request_free(&it->req);
    }
    memset(it, 0, sizeof(*it));
}

static int
put_error(clef_buf *out, const clef_error *err)
{
    return clef_buf_printf(out, "{\"error\": {\"status\": %d, \"type\": ", err->status)
        || clef_render_string(out, err->type, strlen(err->type))
        || clef_buf_append(out, ", \"message\": ", 13)
        || clef_render_string(out, err->message, strlen(err->message))
        || clef_buf_append(out, ", \"loc\": ", 9)
        || (err->loc[0] ? clef_buf_append(out, err->loc, strlen(err->loc))
                        : clef_buf_append(out, "[]", 2))
        || clef_buf_append(out, "}}", 2);
}

typedef struct {
    const clef_model         *model;
    const clef_backend_ops   *ops;
    clef_backend             *backend;
    clef_encode_opts          enc;
    clef_answer_opts          answer;
    int                       batch;      /* records per forward */
} decider;

/* Answers items[0..n): one forward over those that encoded. */
static int
answer_batch(decider *d, item *items, int n, clef_buf *out)
{
    const clef_record  *recs[BATCH_MAX];
    int32_t             cu[BATCH_MAX + 1];
    int                 i, nr = 0, off = 0, rc = 0, failed = 0;
    float              *logits = NULL;
    clef_batch          batch;
    clef_error          ferr;

    for (i = 0; i < n; i++) {
        if (items[i].encoded) {
            recs[nr++] = &items[i].rec;
        }
    }
    if (nr > 0) {
        clef_batch_init(&batch, recs, nr, cu);
        logits = malloc((size_t) clef_batch_options(&batch) * sizeof(float));
        if (clef_batch_set_media(&batch, &ferr) != 0) {
            failed = 1;
        } else if (logits == NULL) {
            clef_error_fail(&ferr, CLEF_E_NO_MEMORY, "out of memory");
            failed = 1;
        } else if (d->ops->forward(d->backend, &batch, logits, &ferr) != 0) {
            failed = 1;
        }
    }

    for (i = 0; rc == 0 && i < n; i++) {
        out->len = 0;
        if (!items[i].encoded) {
            rc = put_error(out, &items[i].err);
        } else if (failed) {
            rc = put_error(out, &ferr);
        } else {
            rc = clef_answer_json(out, &items[i].req, &items[i].rec,
                                  logits + off, &d->answer);
            off += items[i].rec.n_options;
        }
        if (rc == 0) {
            rc = clef_buf_putc(out, '\n');
        }
        if (rc == 0 && fwrite(out->data, 1, out->len, stdout) != out->len) {
            rc = -1;
        }
    }
    if (nr > 0) {
        clef_batch_free_media(&batch);
    }
    free(logits);
    fflush(stdout);
    return rc;
}

static void
prepare(decider *d, item *it, const char *line, size_t len)
{
    clef_media_conf  mc;

    memset(it, 0, sizeof(*it));
    if (clef_request_parse(&it->req, line, len, NULL, &it->err) != 0) {
        return;
    }
    it->parsed = 1;
    /* media as a server with this model takes them (the worker's checks,
     * then the engine's decoding) */
    clef_model_media_conf(d->model, &mc);
    clef_media_conf_backend(&mc, d->ops->name);
    if (clef_request_check_media(&it->req, mc.accepts, &it->err) != 0
        || clef_encode_with_media(d->model, &it->req, &d->enc, &it->rec,
                                  &it->err) != 0)
    {
        return;
    }
    it->encoded = 1;
}

static int
blank(const char *s, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') {
            return 0;
        }
    }
    return 1;
}

static int
run(decider *d)
{
    line_reader  r = { 0 };
    item         items[BATCH_MAX];
    int          n = 0, got, rc = 0;
    int64_t      tokens = 0;
    const char  *line;
    size_t       len;
    clef_buf     out = { 0 };

    for ( ;; ) {
        /* wait for a line only when nothing is held back */
        got = reader_next(&r, n == 0, &line, &len);
        if (got == 1 && blank(line, len)) {
            continue;
        }
        if (got == 1) {
            prepare(d, &items[n], line, len);
            tokens += items[n].encoded ? (int64_t) items[n].rec.ids.n : 0;
            n++;
        }
        if (n > 0 && (got != 1 || n == d->batch || tokens >= BATCH_TOKENS)) {
            rc = answer_batch(d, items, n, &out);
            while (n > 0) {
                item_free(&items[--n]);
            }
            tokens = 0;
            if (rc != 0) {
                fprintf(stderr, "clef decide: cannot write the answer\n");
                break;
            }
        }
        if (got == -1) {
            break;
        }
    }
    if (r.error != 0 && rc == 0) {
        fprintf(stderr, "clef decide: reading stdin: %s\n", strerror(r.error));
        rc = -1;
    }
    free(r.buf);
    clef_buf_free(&out);
    return rc == 0 ? 0 : 1;
}

static int
int_arg(const char *s, int min, int *v)
{
    char  *end;
    long   x;

    errno = 0;
    x = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || x < min || x > INT_MAX) {
        return -1;
    }
    *v = (int) x;
    return 0;
}

/* A size as nginx writes it: bytes, or k, m, g (binary multiples). */
static int
size_arg(const char *s, int64_t *v)
{
    char       *end;
    long long   x;
    int         shift = 0;

    errno = 0;
    x = strtoll(s, &end, 10);
    if (*end == 'k' || *end == 'K') {
        shift = 10;
    } else if (*end == 'm' || *end == 'M') {
        shift = 20;
    } else if (*end == 'g' || *end == 'G') {
        shift = 30;
    }
    end += shift != 0;
    if (errno != 0 || end == s || *end != '\0' || x <= 0
        || x > (INT64_MAX >> shift))
    {
        return -1;
    }
    *v = (int64_t) x << shift;
    return 0;
}

int
clef_cmd_decide(int argc, char **argv)
{
    int                        i, rc;
    const char                *dir = NULL, *backend = "cpu", *mmproj = NULL;
    clef_backend_opts          bo = { .threads = 0 };
    const clef_backend_entry  *be;
    clef_model                *m;
    clef_error                 err;
    decider                    d;

    memset(&d, 0, sizeof(d));
    clef_encode_opts_default(&d.enc);
    d.enc.max_length = 0;              /* the model's default, below */
    d.batch = 1;

    for (i = 1; i < argc; i++) {
        const char  *a = argv[i];
        int          has = i + 1 < argc;

        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            decide_usage(stdout);
            return 0;
        } else if (strcmp(a, "--raw") == 0) {
            d.answer.raw = 1;
        } else if (strcmp(a, "--truncate-state") == 0) {
            d.enc.truncate = CLEF_TRUNCATE_STATE;
        } else if (strcmp(a, "-t") == 0 && has) {
            if (int_arg(argv[++i], 0, &bo.threads) != 0) {
                goto bad_value;
            }
        } else if (strcmp(a, "--tp") == 0 && has) {
            if (int_arg(argv[++i], 1, &bo.tp) != 0) {
                goto bad_value;
            }
        } else if (strcmp(a, "--gpu-memory") == 0 && has) {
            if (size_arg(argv[++i], &bo.gpu_memory) != 0) {
                goto bad_value;
            }
        } else if (strcmp(a, "--device") == 0 && has) {
            if (int_arg(argv[++i], 0, &bo.device) != 0) {
                goto bad_value;
            }
        } else if (strcmp(a, "--max-length") == 0 && has) {
            if (int_arg(argv[++i], 1, &d.enc.max_length) != 0) {
                goto bad_value;
            }
        } else if (strcmp(a, "--batch") == 0 && has) {
            if (int_arg(argv[++i], 1, &d.batch) != 0 || d.batch > BATCH_MAX) {
                goto bad_value;
            }
        } else if (strcmp(a, "--backend") == 0 && has) {
            backend = argv[++i];
        } else if (strcmp(a, "--mmproj") == 0 && has) {
            mmproj = argv[++i];
        } else if (strcmp(a, "--precision") == 0 && has) {
            i++;
            if (clef_precision_parse(argv[i], strlen(argv[i]), &bo.precision)
                != 0)
            {
                goto bad_value;
            }
        } else if (a[0] == '-' || dir != NULL) {
            fprintf(stderr, "clef decide: unexpected argument '%s'\n", a);
            decide_usage(stderr);
            return 2;
        } else {
            dir = a;
        }
        continue;

    bad_value:
        fprintf(stderr, "clef decide: bad value '%s' for %s\n", argv[i], a);
        decide_usage(stderr);
        return 2;
    }
    if (dir == NULL) {
        fprintf(stderr, "clef decide: MODEL is required\n");
        decide_usage(stderr);
        return 2;
    }

    be = clef_backend_lookup(backend, strlen(backend));
    if (bo.gpu_memory > 0 && be != NULL && !be->uses_devices) {
        fprintf(stderr, "clef decide: --gpu-memory applies to a backend with "
                "devices (cuda), not to --backend %s\n", backend);
        return 2;
    }
    d.ops = clef_backend_find(backend, &err);
    if (d.ops == NULL) {
        fprintf(stderr, "clef decide: backend %s: %s\n", backend, err.message);
        return 1;
    }
    m = clef_model_open_files(dir, mmproj, 0, &err);
    if (m == NULL) {
        fprintf(stderr, "clef decide: %s\n", err.message);
        return 1;
    }
    d.model = m;
    if (d.enc.max_length == 0) {
        d.enc.max_length = clef_model_default_max_length(m) > 0
                           ? clef_model_default_max_length(m)
                           : CLEF_DEFAULT_MAX_LENGTH;
    }
    /* the memory plan's batch: what --batch packs at most */
    if (bo.gpu_memory > 0) {
        bo.batch_tokens = (int64_t) d.batch * d.enc.max_length;
        bo.batch_records = d.batch;
    }
    if (d.ops->open(m, &bo, &d.backend, &err) != 0) {
        fprintf(stderr, "clef decide: backend %s: %s\n", backend, err.message);
        clef_model_close(m);
        return 1;
    }

    rc = run(&d);

    d.ops->close(d.backend);
    clef_model_close(m);
    return rc;
}
