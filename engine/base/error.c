#include "base/error.h"

#include <stdio.h>
#include <string.h>

/* The one vocabulary of the server's own failures (clef_error_fail), and
 * the name of every code. */
static const struct {
    const char  *name;
    int          status;
    const char  *type;
} clef_errc_table[CLEF_E_COUNT] = {
    [CLEF_E_NONE]         = { "none",         0,   "" },
    [CLEF_E_BAD_REQUEST]  = { "bad_request",  400, "bad_request" },
    [CLEF_E_TOO_LARGE]    = { "too_large",    413, "too_large" },
    [CLEF_E_UNSUPPORTED]  = { "unsupported",  500, "media_unsupported" },
    [CLEF_E_NO_MEMORY]    = { "no_memory",    500, "out_of_memory" },
    [CLEF_E_MODEL]        = { "model",        500, "model_invalid" },
    [CLEF_E_DEVICE_FAULT] = { "device_fault", 503, "device_fault" },
    [CLEF_E_UNAVAILABLE]  = { "unavailable",  503, "engine_unavailable" },
    [CLEF_E_INTERNAL]     = { "internal",     500, "internal_error" },
};

/* Types of the protocol and of the serving layer whose code their status
 * alone would not tell. */
static const struct {
    const char  *type;
    clef_errc    code;
} clef_errc_types[] = {
    { "max_tokens_exceeded",    CLEF_E_TOO_LARGE },
    { "not_a_decision_model",   CLEF_E_MODEL },
    { "tokenizer_invalid",      CLEF_E_MODEL },
    { "tokenizer_missing",      CLEF_E_MODEL },
    { "tokenizer_unsupported",  CLEF_E_MODEL },
    { "no_device",              CLEF_E_MODEL },
    { "out_of_memory",          CLEF_E_NO_MEMORY },
    { "device_fault",           CLEF_E_DEVICE_FAULT },
};

clef_errc
clef_errc_classify(int status, const char *type)
{
    size_t  i, n;

    if (type != NULL) {
        for (i = 0; i < sizeof(clef_errc_types) / sizeof(clef_errc_types[0]);
             i++)
        {
            if (strcmp(type, clef_errc_types[i].type) == 0) {
                return clef_errc_types[i].code;
            }
        }
        n = strlen(type);
        if (n > 12 && strcmp(type + n - 12, "_unsupported") == 0) {
            return CLEF_E_UNSUPPORTED;
        }
    }
    if (status == 413) {
        return CLEF_E_TOO_LARGE;
    }
    if (status == 415 || status == 501) {
        return CLEF_E_UNSUPPORTED;
    }
    if (status == 429 || status == 503 || status == 504) {
        return CLEF_E_UNAVAILABLE;
    }
    if (status >= 400 && status < 500) {
        return CLEF_E_BAD_REQUEST;
    }
    return status == 0 ? CLEF_E_NONE : CLEF_E_INTERNAL;
}

const char *
clef_errc_name(clef_errc code)
{
    return (unsigned) code < CLEF_E_COUNT ? clef_errc_table[code].name : "?";
}

static void
clef_error_vset(clef_error *err, clef_errc code, int status, const char *type,
    const char *loc, const char *fmt, va_list ap)
{
    err->code = code;
    err->status = status;
    snprintf(err->type, sizeof(err->type), "%s", type ? type : "");
    snprintf(err->loc, sizeof(err->loc), "%s", loc ? loc : "");
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
}

int
clef_error_set(clef_error *err, int status, const char *type, const char *loc,
    const char *fmt, ...)
{
    va_list  ap;

    if (err == NULL) {
        return -1;
    }
    va_start(ap, fmt);
    clef_error_vset(err, clef_errc_classify(status, type), status, type, loc,
                    fmt, ap);
    va_end(ap);
    return -1;
}

int
clef_error_fail(clef_error *err, clef_errc code, const char *fmt, ...)
{
    va_list  ap;

    if (err == NULL) {
        return -1;
    }
    if ((unsigned) code >= CLEF_E_COUNT || code == CLEF_E_NONE) {
        code = CLEF_E_INTERNAL;
    }
    va_start(ap, fmt);
    clef_error_vset(err, code, clef_errc_table[code].status,
                    clef_errc_table[code].type, NULL, fmt, ap);
    va_end(ap);
    return -1;
}

void
clef_error_clear(clef_error *err)
{
    if (err != NULL) {
        memset(err, 0, sizeof(*err));
    }
}
