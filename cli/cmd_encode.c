/*
 * clef encode MODEL [--max-length N] [--truncate-state]
 *
 * One System One request per stdin line, one JSON line per request on
 * stdout:
 *   {"input_ids": [...], "questions": [{"id": "...", "type": "noul",
 *     "span": [s, e], "options": [{"id": "...", "span": [s, e]}, ...]}, ...]}
 * or
 *   {"error": {"status": 400, "type": "...", "message": "...", "loc": [...]}}
 * ("loc" only when the error has one).  A stable contract: the tests and
 * the fixture scripts read this output.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "model/container.h"
#include "model/model.h"
#include "protocol/encode.h"
#include "protocol/request.h"
#include "text/render.h"
#include "text/tokenizer.h"

static const char  usage_text[] =
    "usage: clef encode MODEL [--max-length N] [--truncate-state]\n"
    "\n"
    "Reads one System One request per line on stdin and writes, per line,\n"
    "its input_ids with every question's instructions span and every\n"
    "option's span, or {\"error\": {...}}.\n"
    "\n"
    "  MODEL              a directory holding tokenizer.json (a model or a\n"
    "                     tokenizer directory), the tokenizer.json itself, or\n"
    "                     a Clef GGUF file (its tokenizer.ggml.*)\n"
    "  --max-length N     token limit of a record (default 65536)\n"
    "  --truncate-state   cut the state to fit, as the reference does,\n"
    "                     instead of refusing with max_tokens_exceeded\n";


static int
put_record(clef_buf *out, const clef_request *req, const clef_record *rec)
{
    const clef_question  *q;
    const clef_span      *s;
    static const char    *names[] = { "noul", "choice", "score" };
    size_t                i;
    int                   qi, k, rc;

    rc = clef_buf_append(out, "{\"input_ids\": [", 15);
    for (i = 0; i < rec->ids.n; i++) {
        rc |= clef_buf_printf(out, i ? ", %d" : "%d", (int) rec->ids.v[i]);
    }
    rc |= clef_buf_append(out, "], \"questions\": [", 17);

    for (qi = 0; qi < rec->n_questions; qi++) {
        q = &req->questions[qi];
        rc |= clef_buf_append(out, qi ? ", {\"id\": " : "{\"id\": ", qi ? 9 : 7);
        rc |= clef_render_string(out, q->id.s, q->id.len);
        rc |= clef_buf_printf(out, ", \"type\": \"%s\", \"span\": [%d, %d], "
                              "\"options\": [", names[rec->question_types[qi]],
                              (int) rec->question_spans[qi].start,
                              (int) rec->question_spans[qi].end);
        for (k = 0; k < q->n_options; k++) {
            s = &rec->option_spans[rec->option_offset[qi] + k];
            rc |= clef_buf_append(out, k ? ", {\"id\": " : "{\"id\": ", k ? 9 : 7);
            rc |= clef_render_string(out, q->options[k].id.s, q->options[k].id.len);
            rc |= clef_buf_printf(out, ", \"span\": [%d, %d]}",
                                  (int) s->start, (int) s->end);
        }
        rc |= clef_buf_append(out, "]}", 2);
    }

    rc |= clef_buf_append(out, "]}\n", 3);
    return rc ? -1 : 0;
}


static int
put_error(clef_buf *out, const clef_error *err)
{
    int  rc;

    rc = clef_buf_printf(out, "{\"error\": {\"status\": %d, \"type\": ", err->status);
    rc |= clef_render_string(out, err->type, strlen(err->type));
    rc |= clef_buf_append(out, ", \"message\": ", 13);
    rc |= clef_render_string(out, err->message, strlen(err->message));
    if (err->loc[0] != '\0') {
        rc |= clef_buf_printf(out, ", \"loc\": %s", err->loc);
    }
    rc |= clef_buf_append(out, "}}\n", 3);
    return rc ? -1 : 0;
}


static int
parse_args(int argc, char **argv, const char **dir, clef_encode_opts *opts)
{
    char  *end;
    long   n;
    int    i;

    *dir = NULL;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (strcmp(argv[i], "--truncate-state") == 0) {
            opts->truncate = CLEF_TRUNCATE_STATE;
        } else if (strcmp(argv[i], "--max-length") == 0) {
            if (++i == argc) {
                fprintf(stderr, "clef encode: --max-length needs a value\n");
                return -1;
            }
            errno = 0;
            n = strtol(argv[i], &end, 10);
            if (errno != 0 || end == argv[i] || *end != '\0' || n < 1
                || n > INT32_MAX)
            {
                fprintf(stderr, "clef encode: bad --max-length '%s'\n", argv[i]);
                return -1;
            }
            opts->max_length = (int) n;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "clef encode: unknown option '%s'\n", argv[i]);
            return -1;
        } else if (*dir == NULL) {
            *dir = argv[i];
        } else {
            fprintf(stderr, "clef encode: unexpected argument '%s'\n", argv[i]);
            return -1;
        }
    }

    if (*dir == NULL) {
        fprintf(stderr, "clef encode: MODEL_DIR is missing\n");
        return -1;
    }
    return 0;
}


int
clef_cmd_encode(int argc, char **argv)
{
    clef_encode_opts   opts;
    const clef_tokenizer *tk;
    clef_tokenizer    *own = NULL;
    clef_model        *m = NULL;
    clef_request       req;
    clef_record        rec;
    clef_error         err;
    clef_buf           out = { 0 };
    const char        *dir;
    char              *line = NULL;
    size_t             cap = 0;
    ssize_t            len;
    int                rc;

    clef_encode_opts_default(&opts);
    rc = parse_args(argc, argv, &dir, &opts);
    if (rc != 0) {
        if (rc < 0) {
            fputs(usage_text, stderr);
            return 2;
        }
        return 0;
    }

    /* a GGUF holds its tokenizer in its header: read that alone */
    if (clef_container_find(dir) == &clef_container_gguf) {
        m = clef_model_open(dir, CLEF_MODEL_HEADERS_ONLY, &err);
        tk = m != NULL ? clef_model_tokenizer(m) : NULL;
    } else {
        tk = own = clef_tokenizer_load(dir, &err);
    }
    if (tk == NULL) {
        fprintf(stderr, "clef encode: %s: %s\n", dir, err.message);
        return 1;
    }

    rc = 0;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n') {
            len--;
        }
        out.len = 0;
        if (clef_request_parse(&req, line, (size_t) len, NULL, &err) != 0) {
            rc = put_error(&out, &err);
        } else {
            /* a tokenizer alone takes no media: refused as by a server
             * whose model takes none, never encoded without them */
            if (clef_request_check_media(&req, 0, &err) != 0
                || clef_encode(tk, &req, &opts, &rec, &err) != 0)
            {
                rc = put_error(&out, &err);
            } else {
                rc = put_record(&out, &req, &rec);
                clef_record_free(&rec);
            }
            clef_request_free(&req);
        }
        if (rc != 0 || fwrite(out.data, 1, out.len, stdout) != out.len) {
            fprintf(stderr, "clef encode: out of memory or write error\n");
            rc = 1;
            break;
        }
    }

    if (fflush(stdout) != 0) {
        rc = 1;
    }
    free(line);
    clef_buf_free(&out);
    clef_tokenizer_free(own);
    clef_model_close(m);
    return rc;
}
