/*
 * The media commands' files and JSON lines (see media_file.h).
 */
#include "media_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "text/render.h"


uint8_t *
clef_cli_slurp(const char *path, size_t *len)
{
    FILE     *fp = fopen(path, "rb");
    uint8_t  *p = NULL;
    long      n;

    if (fp == NULL) {
        return NULL;
    }
    if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0
        && fseek(fp, 0, SEEK_SET) == 0)
    {
        p = malloc((size_t) n + 1);
        if (p != NULL && fread(p, 1, (size_t) n, fp) != (size_t) n) {
            free(p);
            p = NULL;
        }
        *len = (size_t) n;
    }
    fclose(fp);
    return p;
}


void
clef_cli_print_string(const char *s)
{
    clef_buf  b = { NULL, 0, 0 };

    clef_render_string(&b, s, strlen(s));
    fwrite(b.data, 1, b.len, stdout);
    clef_buf_free(&b);
}


void
clef_cli_print_error(const char *path, const clef_error *err)
{
    fputs("{\"file\": ", stdout);
    clef_cli_print_string(path);
    printf(", \"error\": {\"status\": %d, \"type\": ", err->status);
    clef_cli_print_string(err->type);
    fputs(", \"message\": ", stdout);
    clef_cli_print_string(err->message);
    fputs("}}\n", stdout);
}
