/*
 * clef tokenize TOKENIZER_DIR
 *   stdin: one {"text": "..."} per line; stdout: one {"ids": [...]} per line,
 *   or {"error": {...}} for a line that is not such an object.
 * clef tokenize TOKENIZER_DIR --bench FILE
 *   tokenizes FILE's text (one piece) again and again for at least 2 s on
 *   one thread and prints the throughput.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/clock.h"
#include "commands.h"
#include "text/tokenizer.h"

static const char  usage_text[] =
    "usage: clef tokenize TOKENIZER_DIR [--bench FILE]\n"
    "\n"
    "Reads JSON lines {\"text\": \"...\"} on stdin and writes one line per\n"
    "input line: {\"ids\": [...]}, the ids of Hugging Face tokenizers'\n"
    "encode(text, add_special_tokens=False), or {\"error\": {\"status\": 400,\n"
    "\"type\": ..., \"message\": ...}} when the line is not such an object.\n"
    "TOKENIZER_DIR is a directory holding tokenizer.json, or the file itself.\n"
    "\n"
    "  --bench FILE  tokenize FILE's text repeatedly for at least 2 s on one\n"
    "                thread and print bytes, ids, and MB/s (cold first pass,\n"
    "                then warm)\n"
    "  --help        this text\n";

static int
write_error(int status, const char *type, const char *message)
{
    json_t  *o;
    char    *s;

    o = json_pack("{s:{s:i,s:s,s:s}}", "error", "status", status, "type", type,
                  "message", message);
    s = o ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
    json_decref(o);
    if (s == NULL) {
        return -1;
    }
    fputs(s, stdout);
    fputc('\n', stdout);
    free(s);
    return 0;
}

static int
write_ids(const clef_ids *ids, clef_buf *line)
{
    size_t  i;

    line->len = 0;
    if (clef_buf_append(line, "{\"ids\":[", 8) != 0) {
        return -1;
    }
    for (i = 0; i < ids->n; i++) {
        if (clef_buf_printf(line, i ? ",%d" : "%d", ids->v[i]) != 0) {
            return -1;
        }
    }
    if (clef_buf_append(line, "]}\n", 3) != 0) {
        return -1;
    }
    return fwrite(line->data, 1, line->len, stdout) == line->len ? 0 : -1;
}

static int
tokenize_line(const clef_tokenizer *tk, const char *s, size_t n,
    clef_ids *ids, clef_buf *out)
{
    json_t        *o, *text;
    json_error_t   jerr;
    char           msg[300];
    int            rc;

    o = json_loadb(s, n, JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
    if (o == NULL) {
        snprintf(msg, sizeof(msg), "Invalid JSON: %s", jerr.text);
        return write_error(400, "json_invalid", msg);
    }
    if (!json_is_object(o)) {
        json_decref(o);
        return write_error(400, "dict_type", "Input should be a JSON object");
    }
    text = json_object_get(o, "text");
    if (text == NULL) {
        json_decref(o);
        return write_error(400, "missing", "Field required: text");
    }
    if (!json_is_string(text)) {
        json_decref(o);
        return write_error(400, "string_type", "text should be a string");
    }
    ids->n = 0;
    rc = clef_tokenizer_encode(tk, json_string_value(text), json_string_length(text),
                               ids);
    json_decref(o);
    if (rc != 0) {
        return write_error(500, "internal", "out of memory");
    }
    return write_ids(ids, out);
}

static int
run_lines(const clef_tokenizer *tk)
{
    char      *line = NULL;
    size_t     cap = 0;
    ssize_t    n;
    clef_ids   ids = { 0 };
    clef_buf   out = { 0 };
    int        rc = 0;

    while ((n = getline(&line, &cap, stdin)) >= 0) {
        if (n > 0 && line[n - 1] == '\n') {
            n--;
        }
        if (tokenize_line(tk, line, (size_t) n, &ids, &out) != 0) {
            rc = 1;
            break;
        }
    }
    if (fflush(stdout) != 0) {
        rc = 1;
    }
    free(line);
    clef_ids_free(&ids);
    clef_buf_free(&out);
    return rc;
}

static char *
read_file(const char *path, size_t *len)
{
    FILE    *f;
    char    *data = NULL, *p;
    size_t   cap = 0, n = 0, r;

    f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    for ( ;; ) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1 << 20;
            p = realloc(data, cap);
            if (p == NULL) {
                free(data);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            data = p;
        }
        r = fread(data + n, 1, cap - n, f);
        n += r;
        if (r == 0) {
            break;
        }
    }
    if (ferror(f)) {
        free(data);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len = n;
    return data;
}

static int
run_bench(const clef_tokenizer *tk, const char *path)
{
    char      *text;
    size_t     len = 0, passes = 0, first_ids;
    clef_ids   ids = { 0 };
    double     t0, t1, cold, start;

    text = read_file(path, &len);
    if (text == NULL) {
        fprintf(stderr, "clef tokenize: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    /* The first pass meets an empty word cache; later ones mostly hits. */
    t0 = clef_clock_seconds();
    if (clef_tokenizer_encode(tk, text, len, &ids) != 0) {
        fprintf(stderr, "clef tokenize: out of memory\n");
        free(text);
        return 1;
    }
    t1 = clef_clock_seconds();
    cold = t1 - t0;
    first_ids = ids.n;
    start = t1;
    do {
        ids.n = 0;
        if (clef_tokenizer_encode(tk, text, len, &ids) != 0) {
            fprintf(stderr, "clef tokenize: out of memory\n");
            free(text);
            clef_ids_free(&ids);
            return 1;
        }
        passes++;
        t1 = clef_clock_seconds();
    } while (t1 - start < 2.0);

    printf("bytes %zu\n", len);
    printf("ids %zu\n", first_ids);
    printf("cold_mb_s %.2f\n", (double) len / cold / 1e6);
    printf("warm_mb_s %.2f\n", (double) len * (double) passes / (t1 - start) / 1e6);
    printf("passes %zu\n", passes + 1);
    free(text);
    clef_ids_free(&ids);
    return 0;
}

int
clef_cmd_tokenize(int argc, char **argv)
{
    const char      *dir = NULL, *bench = NULL;
    clef_tokenizer  *tk;
    clef_error       err;
    int              i, rc;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--bench") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "clef tokenize: --bench needs a FILE\n%s", usage_text);
                return 2;
            }
            bench = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "clef tokenize: unknown option '%s'\n%s", argv[i],
                    usage_text);
            return 2;
        } else if (dir == NULL) {
            dir = argv[i];
        } else {
            fprintf(stderr, "clef tokenize: unexpected argument '%s'\n%s", argv[i],
                    usage_text);
            return 2;
        }
    }
    if (dir == NULL) {
        fprintf(stderr, "clef tokenize: missing TOKENIZER_DIR\n%s", usage_text);
        return 2;
    }

    clef_error_clear(&err);
    tk = clef_tokenizer_load(dir, &err);
    if (tk == NULL) {
        fprintf(stderr, "clef tokenize: %s\n", err.message);
        return 1;
    }
    rc = bench ? run_bench(tk, bench) : run_lines(tk);
    clef_tokenizer_free(tk);
    return rc;
}
