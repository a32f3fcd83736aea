/*
 * Errors are data in libclef: every fallible call fills a clef_error and
 * returns a non-zero code; nothing aborts.  The fields map one to one onto
 * the System One error bodies the server sends (see README "Errors").
 */
#ifndef CLEF_ERROR_H
#define CLEF_ERROR_H

#include <stdarg.h>

typedef struct {
    int   status;        /* HTTP status the server answers with: 400, 413, 422, 500, ... */
    char  type[64];      /* machine-readable kind, e.g. "missing", "json_invalid",
                            "too_many_choices", "max_tokens_exceeded" */
    char  message[512];  /* human-readable text, exact wording of the protocol where one exists */
    char  loc[512];      /* for 422: JSON array text of the location, e.g.
                            ["body","questions","q1","criteria"]; "" when none */
} clef_error;

/* Sets every field; loc may be NULL.  Returns -1 so callers can `return clef_error_set(...)`. */
int clef_error_set(clef_error *err, int status, const char *type, const char *loc,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

void clef_error_clear(clef_error *err);

#endif
