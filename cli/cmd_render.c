/*
 * clef render [--json]: one JSON text per stdin line, its rendering per
 * stdout line -- render(v) of the reference encoder (a top-level string
 * unquoted), or with --json json.dumps(v) (strings quoted too).  A line the
 * parser refuses gives
 *   {"error": {"status": 422, "type": "json_invalid", "message": "..."}}
 * and the next line goes on.  Byte offsets in messages count from the start
 * of the line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "commands.h"
#include "text/json.h"
#include "text/render.h"

static void
render_usage(FILE *f)
{
    fprintf(f,
        "usage: clef render [--json]\n"
        "\n"
        "Reads one JSON text per line on stdin and writes, per line, Python's\n"
        "  json.dumps(v, ensure_ascii=False, separators=(\",\", \":\"), sort_keys=True)\n"
        "with a top-level string written unquoted (the encoder's render()).\n"
        "A refused line gives {\"error\": {\"status\": ..., \"type\": ..., \"message\": ...}}.\n"
        "\n"
        "  --json   quote a top-level string too (plain json.dumps)\n"
        "  --help   this text\n");
}


static int
render_error(clef_buf *out, const clef_error *err)
{
    return clef_buf_printf(out, "{\"error\": {\"status\": %d, \"type\": ", err->status)
        || clef_render_string(out, err->type, strlen(err->type))
        || clef_buf_append(out, ", \"message\": ", 13)
        || clef_render_string(out, err->message, strlen(err->message))
        || clef_buf_append(out, "}}", 2);
}


int
clef_cmd_render(int argc, char **argv)
{
    int          i, quote = 0, rc = 0;
    char        *line = NULL;
    size_t       cap = 0;
    ssize_t      n;
    clef_arena   arena;
    clef_buf     out = { 0 };
    clef_error   err;
    clef_json   *v;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            quote = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            render_usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "clef render: unknown argument '%s'\n", argv[i]);
            render_usage(stderr);
            return 2;
        }
    }

    while ((n = getline(&line, &cap, stdin)) >= 0) {
        if (n > 0 && line[n - 1] == '\n') {
            n--;
        }

        clef_arena_init(&arena, 0);
        clef_error_clear(&err);
        out.len = 0;

        v = clef_json_parse(&arena, line, (size_t) n, &err);
        if (v != NULL) {
            rc = quote ? clef_render_json(&out, v) : clef_render(&out, v);
        } else {
            rc = render_error(&out, &err);
        }
        if (rc == 0) {
            rc = clef_buf_putc(&out, '\n');
        }
        clef_arena_free(&arena);

        if (rc != 0) {
            fprintf(stderr, "clef render: out of memory\n");
            break;
        }
        if (fwrite(out.data, 1, out.len, stdout) != out.len) {
            fprintf(stderr, "clef render: write error\n");
            rc = -1;
            break;
        }
    }

    free(line);
    clef_buf_free(&out);
    if (fflush(stdout) != 0) {
        rc = -1;
    }
    return rc == 0 ? 0 : 1;
}
