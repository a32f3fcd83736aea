/*
 * Errors are data in libclef: every fallible call fills a clef_error and
 * returns a non-zero code; nothing aborts.  The fields map one to one onto
 * the System One error bodies the server sends (docs/directives.md, "Errors").
 *
 * Each error carries a closed code beside the protocol's type string: the
 * code is what control flow tests (the engine resets a replica on
 * CLEF_E_DEVICE_FAULT), the type is what the wire shows.  Two setters:
 *   clef_error_set()   an error of the protocol, whose type and status the
 *                      protocol or docs/ fixes ("too_many_choices",
 *                      "max_tokens_exceeded", "images_unsupported"); the
 *                      code follows from them (clef_errc_classify)
 *   clef_error_fail()  a failure of the server (memory, the model files, a
 *                      device, a bug): status and type come from the code,
 *                      so every such failure speaks one vocabulary
 */
#ifndef CLEF_ERROR_H
#define CLEF_ERROR_H

#include <stdarg.h>

typedef enum {
    CLEF_E_NONE = 0,
    CLEF_E_BAD_REQUEST,      /* the request breaks the protocol or a limit */
    CLEF_E_TOO_LARGE,        /* it cannot fit: 413, max_tokens_exceeded */
    CLEF_E_UNSUPPORTED,      /* well formed, but not served by this model or
                                server (media, multipart, a backend) */
    CLEF_E_NO_MEMORY,        /* 500 "out_of_memory" */
    CLEF_E_MODEL,            /* 500 "model_invalid": the model's files or
                                configuration, or sizes a backend cannot run */
    CLEF_E_DEVICE_FAULT,     /* 503 "device_fault": the backend's device is
                                unusable until the backend is reopened */
    CLEF_E_UNAVAILABLE,      /* the engine cannot take or finish it now:
                                503, 504, 429 */
    CLEF_E_INTERNAL,         /* 500 "internal_error": a bug or an unexpected
                                failure of a library */
    CLEF_E_COUNT
} clef_errc;

typedef struct {
    clef_errc  code;     /* what control flow tests */
    int   status;        /* HTTP status the server answers with: 400, 413, 422, 500, ... */
    char  type[64];      /* machine-readable kind, e.g. "missing", "json_invalid",
                            "too_many_choices", "max_tokens_exceeded" */
    char  message[512];  /* human-readable text, exact wording of the protocol where one exists */
    char  loc[512];      /* for 422: JSON array text of the location, e.g.
                            ["body","questions","q1","criteria"]; "" when none */
} clef_error;

/* Sets every field, the code from status and type; loc may be NULL.
 * Returns -1 so callers can `return clef_error_set(...)`. */
int clef_error_set(clef_error *err, int status, const char *type, const char *loc,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A failure of the server: status and type are the code's (the table in
 * error.c), loc is empty.  Returns -1. */
int clef_error_fail(clef_error *err, clef_errc code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The code of an error of the protocol: by its type where the table in
 * error.c names it, else by its status (413: too large; other 4xx: bad
 * request; 503, 504, 429: unavailable; other 5xx: internal). */
clef_errc   clef_errc_classify(int status, const char *type);

/* "bad_request", "too_large", ... (logs and tests). */
const char *clef_errc_name(clef_errc code);

void clef_error_clear(clef_error *err);

#endif
