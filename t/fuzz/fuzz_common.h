/*
 * Shared by the libFuzzer harnesses: the tokenizers loaded once, and the
 * checks every harness makes on what the engine hands back.  A broken
 * invariant calls fuzz_fail(), which aborts so that libFuzzer keeps the
 * input (this is the harness, not the engine: the engine never aborts).
 */
#ifndef CLEF_FUZZ_COMMON_H
#define CLEF_FUZZ_COMMON_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "text/json.h"
#include "text/render.h"
#include "text/tokenizer.h"

#define FUZZ_QWEN     0
#define FUZZ_TRAINED  1

static clef_tokenizer  *fuzz_tk[2];

static __attribute__((noreturn, format(printf, 1, 2))) void
fuzz_fail(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    fprintf(stderr, "fuzz invariant broken: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

static __attribute__((unused)) clef_tokenizer *
fuzz_load(const char *path)
{
    clef_tokenizer  *tk;
    clef_error       err;

    tk = clef_tokenizer_load(path, &err);
    if (tk == NULL) {
        fprintf(stderr, "fuzz: cannot load %s: %s\n", path, err.message);
        exit(1);
    }
    return tk;
}

/* The repository's copy of the Qwen3 tokenizer and the small trained one,
 * from the repository root. */
static __attribute__((unused)) void
fuzz_load_tokenizers(void)
{
    fuzz_tk[FUZZ_QWEN] = fuzz_load("t/fixtures/tokenizer/qwen3");
    fuzz_tk[FUZZ_TRAINED] = fuzz_load("t/fixtures/tokenizer/trained/tokenizer.json");
}

/* text must be a whole JSON document our own parser accepts. */
static __attribute__((unused)) void
fuzz_check_json(const char *what, const char *text, size_t len)
{
    clef_arena   a;
    clef_error   err;

    clef_arena_init(&a, 4096);
    if (clef_json_parse(&a, text, len, &err) == NULL) {
        fuzz_fail("%s is no JSON (%s): %.*s", what, err.message,
                  (int) (len > 2000 ? 2000 : len), text);
    }
    clef_arena_free(&a);
}

/* A refusal must be complete, and the error body the server builds from it
 * (type, message, loc) must be JSON. */
static __attribute__((unused)) void
fuzz_check_error(const clef_error *err)
{
    clef_buf  b = { 0 };

    if (err->status < 400 || err->status > 599) {
        fuzz_fail("error status %d", err->status);
    }
    if (memchr(err->type, '\0', sizeof(err->type)) == NULL || err->type[0] == '\0'
        || memchr(err->message, '\0', sizeof(err->message)) == NULL
        || err->message[0] == '\0'
        || memchr(err->loc, '\0', sizeof(err->loc)) == NULL)
    {
        fuzz_fail("error %d with an empty or unterminated field", err->status);
    }
    if (clef_buf_append(&b, "{\"type\":", 8)
        || clef_render_string(&b, err->type, strlen(err->type))
        || clef_buf_append(&b, ",\"message\":", 11)
        || clef_render_string(&b, err->message, strlen(err->message))
        || clef_buf_append(&b, ",\"loc\":", 7)
        || (err->loc[0] ? clef_buf_append(&b, err->loc, strlen(err->loc))
                        : clef_buf_append(&b, "[]", 2))
        || clef_buf_putc(&b, '}'))
    {
        fuzz_fail("out of memory");
    }
    fuzz_check_json("the error body", b.data, b.len);
    clef_buf_free(&b);
}

#endif
